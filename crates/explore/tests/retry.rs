//! Retry policies (issue #30): the `retry` setting and its keys, a round given up after
//! `retry_attempts` failures, and determinism under every policy.

mod common;

use common::{pairs, setup};
use locksim_core::history::{EventKind, OpF, Phase};
use locksim_core::{FaultKind, History, RetryPolicy};
use locksim_explore::{check_scenario, Setup};

fn history(settings: &[&str], seed: u64) -> History {
    let st = setup("central", settings);
    check_scenario(&st.scenario(seed, &[FaultKind::None]), st.algo.clone())
        .history
        .expect("the run completes")
}

#[test]
fn bad_retry_settings_are_one_line_each() {
    let err = Setup::registered("central", &pairs(&["retry=backoff"]))
        .err()
        .expect("refused");
    assert!(
        err.contains("`backoff` is not a retry policy (choose fixed, uniform, exponential,"),
        "{err}"
    );
    let err = Setup::registered("central", &pairs(&["retry_delay=1s", "retry_cap=2s"]))
        .err()
        .expect("refused");
    assert!(err.contains("the same setting"), "{err}");
    let err = Setup::registered(
        "central",
        &pairs(&["retry=exponential-full", "retry_base=0s"]),
    )
    .err()
    .expect("refused");
    assert!(err.contains("`retry_base` must be more than zero"), "{err}");
    // A per-client policy is read, and a bad one names the client.
    let st = Setup::registered("central", &pairs(&["c2.retry=fixed"])).expect("c2.retry");
    assert_eq!(st.workload.client(2).retry, RetryPolicy::Fixed);
    assert_eq!(st.workload.client(1).retry, RetryPolicy::Uniform);
    let err = Setup::registered("central", &pairs(&["c2.retry=sometimes"]))
        .err()
        .expect("refused");
    assert!(err.starts_with("client c2: `retry`:"), "{err}");
}

/// For each client, the keys of its acquires right after a failed one: (same key, other key).
fn after_failures(h: &History) -> (usize, usize) {
    let mut last_failed: std::collections::BTreeMap<u32, Option<u32>> = Default::default();
    let (mut same, mut other) = (0, 0);
    for e in &h.events {
        let EventKind::Op {
            f: OpF::Acquire,
            phase,
            key,
            ..
        } = &e.kind
        else {
            continue;
        };
        let slot = last_failed.entry(e.node).or_default();
        match phase {
            Phase::Invoke => {
                if let Some(k) = slot.take() {
                    if k == *key {
                        same += 1;
                    } else {
                        other += 1;
                    }
                }
            }
            Phase::Ok => *slot = None,
            _ => *slot = Some(*key),
        }
    }
    (same, other)
}

#[test]
fn a_round_is_given_up_after_retry_attempts_failures() {
    let base = ["clients=6", "keys=4", "duration=5s"];
    // Without a limit a waiter asks for the same lock again, every time.
    let (same, other) = after_failures(&history(&base, 1));
    assert!(same > 0, "no acquire failed");
    assert_eq!(other, 0);
    // With one attempt each failure ends the round: the next one draws its key anew, and
    // with four keys some draws land elsewhere.
    let mut limited = base.to_vec();
    limited.push("retry_attempts=1");
    let (_, other) = after_failures(&history(&limited, 1));
    assert!(other > 0, "no new round after a failure");
}

#[test]
fn every_policy_is_deterministic_and_changes_nothing_else_by_default() {
    for p in RetryPolicy::ALL {
        let s = format!("retry={}", p.name());
        let settings = ["clients=8", "duration=3s", s.as_str()];
        let a = history(&settings, 5).digest();
        let b = history(&settings, 5).digest();
        assert_eq!(a, b, "{}", p.name());
    }
    // `uniform` is the default: naming it changes no draw.
    assert_eq!(
        history(&["clients=8", "duration=3s"], 5).digest(),
        history(&["clients=8", "duration=3s", "retry=uniform"], 5).digest()
    );
    // A policy without jitter makes other runs than the default's.
    assert_ne!(
        history(&["clients=8", "duration=3s"], 5).digest(),
        history(&["clients=8", "duration=3s", "retry=fixed"], 5).digest()
    );
}

/// The herd (sims/frontier/retry-herd.toml): 50 clients that start together on one key. In
/// the runs' second half, `fixed` still sends nearly all of them in one 100 ms, where
/// exponential backoff with full jitter has spread them: its busiest 100 ms there is at most
/// half of fixed's. And without jitter the first to answer wins every round.
#[test]
fn without_jitter_the_herd_lasts_and_one_client_wins() {
    use locksim_explore::{run_each, CampaignSpec, Shard, Summary};
    let cell = |policy: &str| {
        let st = setup(
            "central",
            &[
                "clients=50",
                "retry_delay=1s",
                "retry_base=100ms",
                &format!("retry={policy}"),
            ],
        );
        let spec = CampaignSpec {
            setups: vec![st],
            kinds: vec![FaultKind::None],
            first_seed: 0,
            seeds: 4,
            jobs: 2,
        };
        let summary = std::sync::Mutex::new(Summary::default());
        run_each(
            &spec,
            Shard::ALL,
            &|_, _| false,
            &|r| summary.lock().unwrap().add(&r),
            &|_, _| {},
        )
        .expect("the runs complete");
        let cells = summary.into_inner().unwrap().indexed_cells();
        cells[0].1.counts.clone()
    };
    let (fixed, full) = (cell("fixed"), cell("exponential-full"));
    let late = |c: &locksim_check::metrics::Counts| c.acquire_late_peak_mean_per_s().unwrap();
    assert!(
        late(&fixed) >= 2.0 * late(&full),
        "fixed {} against full jitter {} attempts/s in the busiest 100 ms of the second half",
        late(&fixed),
        late(&full)
    );
    // At least 40 of the 50 in one 100 ms.
    assert!(late(&fixed) >= 400.0, "{}", late(&fixed));
    assert!(fixed.fairness().unwrap() < 0.1, "{:?}", fixed.fairness());
    assert!(full.fairness().unwrap() > 0.2, "{:?}", full.fairness());
}
