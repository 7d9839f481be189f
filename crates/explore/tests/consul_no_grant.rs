//! Issue #46 item 5: the `consul-session` seeds of the default campaign that grant nothing.
//!
//! In each of them the first lock request is answered by no one: the leader that replicated
//! it crashes or is deposed before the answer, the next leader commits it (Raft commits a
//! previous term's entries under its own), so the first session holds the lock in the
//! replicated state while its client got an error. That session then ends (its client gives
//! it up; its TTL runs out on the leader) and Consul's state store puts every key the session
//! held under the session's lock-delay (hashicorp/consul `agent/consul/state/session.go`,
//! `deleteSessionTxn`: "Apply the lock delay if present", for a destroy and a TTL
//! invalidation alike). The default delay, 15 s, outlasts the 12 s run, so nobody is granted
//! again; the acquires left pending are waiters polling behind the delay, as `api.Lock`
//! retries every `DefaultLockRetryTime` (5 s) while a lock-delay is in effect, not requests
//! a server holds unanswered. With a delay that ends inside the run, the same seeds grant.

mod common;

use common::setup;
use locksim_core::history::EventKind;
use locksim_core::FaultKind;
use locksim_explore::check_scenario;

/// The cells and seeds of `locksim campaign --algo consul-session --faults
/// crash-restart,leader-change,partition,mixed --seeds 1500` that granted nothing.
const NO_GRANT: &[(FaultKind, u64)] = &[
    (FaultKind::CrashRestart, 191),
    (FaultKind::CrashRestart, 482),
    (FaultKind::Partition, 1027),
];

/// Grant records of one seed, with `lock_delay` set when given.
fn grants(kind: FaultKind, seed: u64, lock_delay: Option<&str>) -> (usize, locksim_core::Scenario) {
    let knob = lock_delay.map(|d| format!("lock_delay={d}"));
    let settings: Vec<&str> = knob.iter().map(String::as_str).collect();
    let st = setup("consul-session", &settings);
    let s = st.scenario(seed, &[kind]);
    let out = check_scenario(&s, st.algo.clone());
    assert!(out.error.is_none(), "{kind:?} seed {seed}: {:?}", out.error);
    let h = out.history.expect("ran");
    let n = h
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Grant { .. }))
        .count();
    (n, s)
}

#[test]
fn consul_session_seeds_without_grants_are_the_lock_delay_of_an_unanswered_first_grant() {
    for &(kind, seed) in NO_GRANT {
        let (n, plan) = grants(kind, seed, None);
        assert_eq!(
            n, 0,
            "{kind:?} seed {seed} grants now: drop it from NO_GRANT"
        );
        // The same run with a lock-delay that ends inside it: the same faults, and grants.
        for delay in ["0s", "2s", "5s"] {
            let (n, other) = grants(kind, seed, Some(delay));
            assert_eq!(other.faults, plan.faults, "lock_delay moved the fault plan");
            assert!(n > 0, "{kind:?} seed {seed} lock_delay={delay}: no grant");
        }
    }
}
