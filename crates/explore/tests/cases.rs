//! The real-world failures of `shared/cases/CASES.md` that the foundation's algorithms can
//! express, each as a hand-written scenario with the stated verdict.

mod common;

use common::{node, ns, scenario, setup, verdict};
use locksim_core::{Fault, Property};

/// K1: a central lock with a 30 s TTL renewed by a watchdog every 10 s. The holder stalls at
/// t=5 for 35 s; its lease expires, the other client acquires, and the holder wakes and writes.
fn k1(algo: &str) -> locksim_core::Verdict {
    let st = setup(
        algo,
        &[
            "clients=2",
            "ttl=30s",
            "renew_every=10s",
            "duration=60s",
            "writes=1",
            "work_min=8s",
            "work_max=8s",
            "think_max=0",
            "retry_delay=500ms",
        ],
    );
    let probe = st.scenario(1, &[]);
    let (a, b) = (node(&probe, "c1"), node(&probe, "c2"));
    let s = scenario(
        &st,
        vec![
            // B starts late, so that A is the first holder.
            (
                "0s",
                Fault::Pause {
                    node: b,
                    duration: ns("1s"),
                },
            ),
            // A's process stalls in its critical section: no renewal runs.
            (
                "5s",
                Fault::Pause {
                    node: a,
                    duration: ns("35s"),
                },
            ),
        ],
    );
    verdict(&s, &st).0
}

#[test]
fn k1_watchdog_stall_without_fencing_violates_s1_and_s2() {
    let v = k1("central");
    // The service behaved (S3 holds): the stalled client acted on an expired lease.
    assert_eq!(v.kinds(), vec![Property::S1, Property::S2], "{v:#?}");
    let s1 = v
        .violations
        .iter()
        .find(|x| x.kind == Property::S1)
        .unwrap();
    let (from, to) = s1.window.unwrap();
    // B acquired once A's lease expired (about t=30); A, stalled, still held; the overlap
    // lasts until B released after its 8 s of work (A itself acted until it woke at t=40).
    assert!(
        from >= ns("29s") && from <= ns("32s"),
        "overlap starts at {from}"
    );
    assert!(to >= ns("37s"), "overlap ends at {to}");
}

#[test]
fn k1_watchdog_stall_with_fencing_keeps_s2() {
    let v = k1("central-fencing");
    assert_eq!(v.kinds(), vec![Property::S1], "{v:#?}");
}

/// The Redlock cases' common shape: five masters, TTL 10 s; A cannot reach n4 and n5, so it
/// holds n1–n3 only; B starts after `b_starts`; then `fault` strikes n3 at t=2.
fn redlock_a_holds_three(
    extra: &[&str],
    think_max: &str,
    b_starts: &str,
    fault: impl Fn(u32) -> Fault,
) -> (locksim_core::Verdict, Vec<usize>) {
    let think = format!("think_max={think_max}");
    let mut settings = vec![
        "clients=2",
        "ttl=10s",
        "duration=12s",
        "writes=2",
        "work_min=4s",
        "work_max=4s",
        &think,
        "retry_delay=100ms",
    ];
    settings.extend_from_slice(extra);
    let st = setup("redlock", &settings);
    let p = st.scenario(1, &[]);
    let (a, b) = (node(&p, "c1"), node(&p, "c2"));
    let s = scenario(
        &st,
        vec![
            (
                "0s",
                Fault::Partition {
                    a: vec![a],
                    b: vec![node(&p, "n4"), node(&p, "n5")],
                    duration: ns("30s"),
                },
            ),
            (
                "0s",
                Fault::Pause {
                    node: b,
                    duration: ns(b_starts),
                },
            ),
            ("2s", fault(node(&p, "n3"))),
        ],
    );
    verdict(&s, &st)
}

/// K4: five in-memory Redlock masters. A holds n1–n3 (it cannot reach n4, n5); n3 crashes and
/// restarts at once, empty; B acquires n3, n4, n5: a second majority.
fn k4(extra: &[&str]) -> (locksim_core::Verdict, Vec<usize>) {
    redlock_a_holds_three(extra, "0", "1s", |n3| Fault::Crash {
        node: n3,
        restart_after: Some(0),
    })
}

#[test]
fn k4_master_restarting_empty_violates_s1_and_s2() {
    let (v, _) = k4(&[]);
    // The service itself granted twice, so S3 is violated as well.
    assert_eq!(
        v.kinds(),
        vec![Property::S1, Property::S2, Property::S3],
        "{v:#?}"
    );
}

#[test]
fn k4_delayed_restart_is_safe() {
    let (v, grants) = k4(&["delayed_restart=true"]);
    assert!(v.is_safe(), "{v:#?}");
    assert!(
        grants[1] >= 1,
        "B must get the lock once A is done: {grants:?}"
    );
}

#[test]
fn k4_fsync_always_is_safe() {
    let (v, grants) = k4(&["fsync=always"]);
    assert!(v.is_safe(), "{v:#?}");
    assert!(
        grants[1] >= 1,
        "B must get the lock once A is done: {grants:?}"
    );
}

/// K5: A holds n1–n3; at t=2 n3's wall clock steps forward by one TTL, so A's key expires there;
/// at t=3 B acquires n3, n4, n5. After its round A thinks for a while, so that B can take the
/// lock in a safe run.
fn k5(extra: &[&str]) -> (locksim_core::Verdict, Vec<usize>) {
    redlock_a_holds_three(extra, "1s", "3s", |n3| Fault::ClockStep {
        node: n3,
        delta: ns("10s") as i64,
    })
}

#[test]
fn k5_master_clock_jump_violates_s1_and_s2() {
    let (v, _) = k5(&[]);
    // A second majority while the first lease is live in true time: S3 too.
    assert_eq!(
        v.kinds(),
        vec![Property::S1, Property::S2, Property::S3],
        "{v:#?}"
    );
    let s1 = v
        .violations
        .iter()
        .find(|x| x.kind == Property::S1)
        .unwrap();
    assert!(
        s1.window.unwrap().0 >= ns("3s"),
        "B acquires only after its pause"
    );
}

#[test]
fn k5_monotonic_master_clocks_are_safe() {
    let (v, grants) = k5(&["clock=mono"]);
    assert!(v.is_safe(), "{v:#?}");
    assert!(
        grants[1] >= 1,
        "B must get the lock once A is done: {grants:?}"
    );
}

#[test]
fn k5_pause_variant_violates_s1_and_s2() {
    // Kleppmann's example: A pauses longer than its validity after acquiring, B acquires,
    // A resumes and writes.
    let st = setup(
        "redlock",
        &[
            "clients=2",
            "ttl=10s",
            "duration=20s",
            "writes=2",
            "work_min=4s",
            "work_max=4s",
            "think_max=0",
            "retry_delay=100ms",
        ],
    );
    let p = st.scenario(1, &[]);
    let s = scenario(
        &st,
        vec![
            (
                "0s",
                Fault::Pause {
                    node: node(&p, "c2"),
                    duration: ns("1s"),
                },
            ),
            (
                "1s",
                Fault::Pause {
                    node: node(&p, "c1"),
                    duration: ns("15s"),
                },
            ),
        ],
    );
    let (v, _) = verdict(&s, &st);
    assert_eq!(v.kinds(), vec![Property::S1, Property::S2], "{v:#?}");
}
