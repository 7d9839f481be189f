//! The real-world failures of `shared/cases/CASES.md` that the foundation's algorithms can
//! express, each as a hand-written scenario with the stated verdict.

mod common;

use common::{cases, ns, verdict};
use locksim_core::Property;

fn k1(algo: &str) -> locksim_core::Verdict {
    let (st, s) = cases::k1(algo);
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

fn k4(extra: &[&str]) -> (locksim_core::Verdict, Vec<usize>) {
    let (st, s) = cases::k4(extra);
    verdict(&s, &st)
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

fn k5(extra: &[&str]) -> (locksim_core::Verdict, Vec<usize>) {
    let (st, s) = cases::k5(extra);
    verdict(&s, &st)
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
    let (st, s) = cases::k5_pause();
    let (v, _) = verdict(&s, &st);
    assert_eq!(v.kinds(), vec![Property::S1, Property::S2], "{v:#?}");
}

#[test]
fn k6_an_available_lock_grants_on_both_sides_of_a_partition() {
    use common::{node, scenario, setup};
    use locksim_core::Fault;
    // Five members split {n1,n2} | {n3,n4,n5}; A is on the minority side, B on the majority
    // side; the resource is reachable from both.
    let st = setup(
        "ap-lock",
        &[
            "clients=2",
            "duration=6s",
            "writes=2",
            "work_min=300ms",
            "work_max=300ms",
        ],
    );
    let p = st.scenario(1, &[]);
    let n = |name| node(&p, name);
    let s = scenario(
        &st,
        vec![(
            "0s",
            Fault::Partition {
                a: vec![n("n1"), n("n2"), n("c1")],
                b: vec![n("n3"), n("n4"), n("n5"), n("c2")],
                duration: ns("6s"),
                mode: locksim_core::fault::CutMode::Drop,
            },
        )],
    );
    let (v, grants) = verdict(&s, &st);
    assert!(
        grants[0] > 0 && grants[1] > 0,
        "both sides grant: {grants:?}"
    );
    assert!(v.violates(Property::S1), "{v:#?}");
    // Without the partition, every request goes through n1: safe.
    let calm = scenario(&st, vec![]);
    let (v, _) = verdict(&calm, &st);
    assert!(v.is_safe(), "{v:#?}");
}
