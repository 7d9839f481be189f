//! Client defaults as the real libraries ship them (issue #25 item 3): a request timeout of
//! `none` waits for the network (Consul's Go API client, libpq), client-go's durations scale
//! with the TTL unless given, and every algorithm still refuses a bad timeout in one line.

mod common;

use common::{node, pairs, scenario, setup};
use locksim_core::fault::CutMode;
use locksim_core::history::{EventKind, OpF, Phase};
use locksim_core::time::MS;
use locksim_core::{Fault, FaultKind, History};
use locksim_explore::{check_scenario, Setup};

/// `central` with one client whose first acquire goes into a black hole c1 | n1 of 1.5 s.
fn black_holed_acquire(timeout: &str) -> History {
    let st = setup(
        "central",
        &["clients=1", "duration=4s", &format!("timeout={timeout}")],
    );
    let s0 = scenario(&st, vec![]);
    let (c1, n1) = (node(&s0, "c1"), node(&s0, "n1"));
    let s = scenario(
        &st,
        vec![(
            "0s",
            Fault::Partition {
                a: vec![c1],
                b: vec![n1],
                duration: common::ns("1.5s"),
                mode: CutMode::Drop,
            },
        )],
    );
    check_scenario(&s, st.algo.clone())
        .history
        .expect("the run completes")
}

/// (true time, phase) of every acquire answer of node 1 (c1).
fn acquire_answers(h: &History) -> Vec<(u64, Phase)> {
    h.events
        .iter()
        .filter(|e| e.node == 1)
        .filter_map(|e| match &e.kind {
            EventKind::Op {
                f: OpF::Acquire,
                phase,
                ..
            } if *phase != Phase::Invoke => Some((e.time, *phase)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_request_without_timeout_waits_for_the_heal_and_one_with_a_timeout_gives_up() {
    let heal = 1500 * MS;
    // No timeout: nothing is answered while the cut lasts; the kernel's SYN retry after the
    // heal connects and the first acquire is granted.
    let waits = acquire_answers(&black_holed_acquire("none"));
    let (first_at, first) = *waits.first().expect("c1 acquired nothing");
    assert!(first_at >= heal, "answered at {first_at} inside the cut");
    assert_eq!(first, Phase::Ok, "{waits:?}");
    // A 100 ms timeout: the acquire gives up inside the cut.
    let gives_up = acquire_answers(&black_holed_acquire("100ms"));
    let (at, phase) = *gives_up.first().expect("an answer");
    assert!(at < heal && phase != Phase::Ok, "{gives_up:?}");
}

fn workload_of(algo: &str, settings: &[&str]) -> locksim_core::Workload {
    Setup::registered(algo, &pairs(settings))
        .unwrap_or_else(|e| panic!("{algo}: {e}"))
        .workload
}

#[test]
fn k8s_lease_takes_client_gos_durations_scaled_to_the_ttl() {
    // Kubernetes' components: LeaseDuration 15 s, RetryPeriod 2 s, RenewDeadline 10 s.
    let w = workload_of("k8s-lease", &["ttl=15s"]);
    assert_eq!(w.renew_every, Some(2_000 * MS));
    assert_eq!(w.renew_deadline, Some(10_000 * MS));
    // A setting the user gives wins, `off` included.
    let w = workload_of("k8s-lease", &["renew_every=off", "renew_deadline=500ms"]);
    assert_eq!(w.renew_every, None);
    assert_eq!(w.renew_deadline, Some(500 * MS));
    // A client with a ttl of its own scales its own durations (a breaker's find).
    let w = workload_of("k8s-lease", &["c1.ttl=150ms"]);
    assert_eq!(w.client(1).renew_every, Some(20 * MS));
    assert_eq!(w.client(1).renew_deadline, Some(100 * MS));
    assert_eq!(w.client(2).renew_every, Some(1_000 * MS * 2 / 15));
    // Other algorithms keep the workload's defaults.
    for algo in ["central", "raft-lease", "zookeeper", "redis-failover"] {
        let w = workload_of(algo, &["ttl=15s"]);
        assert_eq!((w.renew_every, w.renew_deadline), (None, None), "{algo}");
        assert_eq!(w.retry_delay_max, 200 * MS, "{algo}");
    }
}

/// client-go's acquire loop waits RetryPeriod plus up to 1.2 RetryPeriod after every attempt
/// that did not get the lease, and nothing more: k8s-lease's workload adds no retry wait of
/// its own unless told to, so a candidate's attempts come RetryPeriod to 2.2 RetryPeriod apart.
#[test]
fn k8s_lease_candidates_poll_on_client_gos_jittered_retry_period_alone() {
    assert_eq!(workload_of("k8s-lease", &[]).retry_delay_max, 0);
    assert_eq!(
        workload_of("k8s-lease", &["retry_delay=1s"]).retry_delay_max,
        1_000 * MS
    );
    assert_eq!(
        workload_of("k8s-lease", &["retry_cap=50ms"]).retry_delay_max,
        50 * MS
    );
    // ttl 1.5 s: RetryPeriod 200 ms. Two candidates on one key, no faults.
    let st = Setup::registered("k8s-lease", &pairs(&["ttl=1500ms", "clients=2"])).unwrap();
    let h = locksim_explore::check_scenario(&st.scenario(3, &[FaultKind::None]), st.algo.clone())
        .history
        .expect("the run completes");
    let period = 200 * MS;
    let mut gaps = Vec::new();
    let mut refusals = Vec::new();
    let mut invoked: std::collections::BTreeMap<locksim_core::NodeId, u64> = Default::default();
    let mut last_refused: std::collections::BTreeMap<locksim_core::NodeId, u64> =
        Default::default();
    for e in &h.events {
        if let EventKind::Op {
            f: OpF::Acquire,
            phase,
            ..
        } = &e.kind
        {
            match phase {
                Phase::Invoke => {
                    if let Some(t) = last_refused.remove(&e.node) {
                        gaps.push(e.time - t);
                    }
                    invoked.insert(e.node, e.time);
                }
                Phase::Fail => {
                    last_refused.insert(e.node, e.time);
                    if let Some(t) = invoked.remove(&e.node) {
                        refusals.push(e.time - t);
                    }
                }
                _ => {
                    last_refused.remove(&e.node);
                }
            }
        }
    }
    assert!(gaps.len() > 5, "{} refused acquires", gaps.len());
    // The wait is inside the attempt (before its `fail`), so the next invoke follows at once.
    assert!(gaps.iter().all(|&g| g < period / 10), "{gaps:?}");
    // And that wait is RetryPeriod to 2.2 RetryPeriod (plus the request's few milliseconds).
    assert!(
        refusals
            .iter()
            .all(|&r| r >= period && r <= period * 22 / 10 + 50 * MS),
        "{refusals:?}"
    );
}

#[test]
fn timeouts_say_none_where_the_library_has_none() {
    for algo in ["consul-session", "pg-advisory", "db-lease"] {
        let knob = locksim_algos::knobs(algo)
            .expect("registered")
            .iter()
            .find(|k| k.key == "timeout")
            .expect("a timeout knob");
        assert_eq!(knob.default, "none", "{algo}");
        assert!(
            Setup::registered(algo, &[]).is_ok(),
            "{algo} does not build with its own default"
        );
    }
    // Each explicit value still works, and a bad one is one line naming the key.
    for algo in [
        "consul-session",
        "pg-advisory",
        "db-lease",
        "central",
        "k8s-lease",
    ] {
        let ok = vec![("timeout".to_string(), "250ms".to_string())];
        assert!(Setup::registered(algo, &ok).is_ok(), "{algo}");
        let bad = vec![("timeout".to_string(), "soon".to_string())];
        let err = Setup::registered(algo, &bad).err().expect("refused");
        assert!(
            err.contains("`timeout`") && err.contains("or none") && !err.contains('\n'),
            "{algo}: {err}"
        );
    }
}

#[test]
fn k8s_lease_refuses_durations_client_go_refuses() {
    for (settings, says) in [
        (
            &["ttl=2s", "renew_deadline=2s"][..],
            "must be shorter than the lease",
        ),
        (
            &["ttl=3s", "renew_deadline=100ms"][..],
            "must be longer than 1.2 × `renew_every`",
        ),
        (
            &["c2.renew_deadline=5s"][..],
            "`c2.renew_deadline` (5.000s)",
        ),
    ] {
        let err = Setup::registered("k8s-lease", &pairs(settings))
            .err()
            .unwrap_or_else(|| panic!("{settings:?} accepted"));
        assert!(
            err.contains(says) && !err.contains('\n'),
            "{settings:?}: {err}"
        );
    }
}

#[test]
fn an_error_about_an_alias_names_the_key_the_user_wrote() {
    let err = Setup::registered("zookeeper", &pairs(&["session_timeout=abc"]))
        .err()
        .expect("refused");
    assert!(err.starts_with("`session_timeout`:"), "{err}");
}
