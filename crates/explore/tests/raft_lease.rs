//! `raft-lease` against the cases of `shared/cases/CASES.md` it can express: K6's Raft side (a
//! minority never grants), the lease's inherent pause problem, and the two bug toggles K2 and K3
//! (found and shrunk with the toggle on, absent with it off).

mod common;

use common::{node, ns, scenario, setup};
use locksim_core::history::{EventKind, OpF, Phase};
use locksim_core::{Fault, FaultKind, Property};
use locksim_explore::check_scenario;
use locksim_explore::shrink::shrink;
use locksim_explore::testing::Campaign;

#[test]
fn a_minority_partition_never_grants() {
    // Five replicas; {n1, n2} and client c1 are cut off from the majority from 3 s to 8 s. The
    // leader may be on either side when the partition starts.
    let st = setup("raft-lease", &["servers=5", "clients=2", "duration=10s"]);
    let p = st.scenario(1, &[]);
    let (n1, n2, c1) = (node(&p, "n1"), node(&p, "n2"), node(&p, "c1"));
    let rest: Vec<u32> = (0..p.cluster.nodes())
        .filter(|n| ![n1, n2, c1].contains(n))
        .collect();
    for seed in 0..20 {
        let mut s = scenario(
            &st,
            vec![(
                "3s",
                Fault::Partition {
                    a: vec![n1, n2, c1],
                    b: rest.clone(),
                    duration: ns("5s"),
                    mode: locksim_core::fault::CutMode::Drop,
                },
            )],
        );
        s.seed = seed;
        let out = check_scenario(&s, st.algo.clone());
        let h = out.history.expect("ran");
        assert!(out.verdict.is_safe(), "seed {seed}: {:#?}", out.verdict);
        // A grant already committed when the partition starts may still be applied a moment
        // later; after 100 ms the minority must be silent.
        let (from, to) = (ns("3.1s"), ns("8s"));
        let during = |e: &&locksim_core::Event| e.time >= from && e.time < to;
        let minority_grants = h
            .events
            .iter()
            .filter(during)
            .filter(|e| {
                let by_minority =
                    matches!(e.kind, EventKind::Grant { .. }) && (e.node == n1 || e.node == n2);
                let c1_acquired = e.node == c1
                    && matches!(
                        e.kind,
                        EventKind::Op {
                            f: OpF::Acquire,
                            phase: Phase::Ok,
                            ..
                        }
                    );
                by_minority || c1_acquired
            })
            .count();
        assert_eq!(minority_grants, 0, "seed {seed}: the minority granted");
        let majority_grants = h
            .events
            .iter()
            .filter(during)
            .filter(|e| matches!(e.kind, EventKind::Grant { .. }))
            .count();
        assert!(
            majority_grants > 0,
            "seed {seed}: the majority side never granted"
        );
    }
}

#[test]
fn safe_under_network_faults_crashes_and_leader_changes() {
    Campaign::registered("raft-lease", &[])
        .seeds(0..60)
        .faults(&[
            FaultKind::Partition,
            FaultKind::CrashRestart,
            FaultKind::LeaderChange,
            FaultKind::DropReplies,
        ])
        .expect_safe();
}

#[test]
fn a_pause_past_the_ttl_double_grants_but_the_revision_fences_the_write() {
    let st = setup("raft-lease", &[]);
    let (mut s1, mut s2) = (0, 0);
    for seed in 0..60 {
        let v = check_scenario(&st.scenario(seed, &[FaultKind::Pause]), st.algo.clone()).verdict;
        s1 += v.violates(Property::S1) as u32;
        s2 += v.violates(Property::S2) as u32;
    }
    assert!(s1 > 0, "no pause double-granted in 60 seeds");
    assert_eq!(s2, 0, "a stale write got past the revision check");
}

/// The first seed in 0..300 whose run violates `p` under `kinds`, with `settings`.
fn first_failing(settings: &[&str], kinds: &[FaultKind], p: Property) -> Option<u64> {
    let st = setup("raft-lease", settings);
    (0..400).find(|&seed| {
        check_scenario(&st.scenario(seed, kinds), st.algo.clone())
            .verdict
            .violates(p)
    })
}

#[test]
fn k2_grant_on_expired_lease_is_found_and_shrunk_and_absent_when_fixed() {
    let kinds = [FaultKind::Partition];
    let seed = first_failing(&["grant_on_expired_lease=true"], &kinds, Property::S3)
        .expect("K2 found in 400 seeds");
    let st = setup("raft-lease", &["grant_on_expired_lease=true"]);
    let start = st.scenario(seed, &kinds);
    let shrunk = shrink(&start, Property::S3, &|_| {}).unwrap();
    assert!(shrunk.verdict.violates(Property::S3));
    assert!(shrunk.scenario.faults.len() <= start.faults.len());
    // The same seeds with the bug off: nothing.
    let fixed = setup("raft-lease", &[]);
    for seed in 0..=seed {
        let v = check_scenario(&fixed.scenario(seed, &kinds), fixed.algo.clone()).verdict;
        assert!(v.is_safe(), "fixed K2, seed {seed}: {v:#?}");
    }
}

#[test]
fn k3_unlock_by_name_is_found_and_shrunk_and_absent_when_fixed() {
    // Pinned to datagram: under tcp no seed of 0..300 under delays shows the interleaving
    // K3 needs; README "Network model" says what is known of why).
    let kinds = [FaultKind::Delay];
    let seed = first_failing(
        &["unlock_by_name=true", "network=datagram"],
        &kinds,
        Property::S4,
    )
    .expect("K3 found in 400 seeds (seed 350)");
    let st = setup("raft-lease", &["unlock_by_name=true", "network=datagram"]);
    let start = st.scenario(seed, &kinds);
    let shrunk = shrink(&start, Property::S4, &|_| {}).unwrap();
    assert!(shrunk.verdict.violates(Property::S4));
    let fixed = setup("raft-lease", &[]);
    for seed in 0..=seed {
        let v = check_scenario(&fixed.scenario(seed, &kinds), fixed.algo.clone()).verdict;
        assert!(
            !v.violates(Property::S4) && !v.violates(Property::S1),
            "fixed K3, seed {seed}: {v:#?}"
        );
    }
}

/// A holder that renews (`renew_every`) may release after the validity its acquire gave it:
/// the renewals moved it. raft-lease used to refuse such a release ("the grant's validity
/// had passed"), leaving the key to die with the lease (issue #11).
#[test]
fn a_renewed_grant_is_released_after_its_first_validity() {
    let st = setup(
        "raft-lease",
        &[
            "ttl=1s",
            "renew_every=300ms",
            "writes=8",
            "work_min=200ms",
            "work_max=250ms",
            "clients=2",
        ],
    );
    let mut late_releases = 0;
    for seed in 0..10 {
        let s = st.scenario(seed, &[FaultKind::None]);
        let out = check_scenario(&s, st.algo.clone());
        let h = out.history.expect("ran");
        assert!(out.verdict.is_safe(), "seed {seed}: {:#?}", out.verdict);
        // Each grant's first deadline, by handle, and the releases after it.
        let mut first_deadline = std::collections::BTreeMap::new();
        let mut invoked = std::collections::BTreeMap::new();
        for e in &h.events {
            let EventKind::Op {
                f,
                phase,
                handle: Some(handle),
                deadline,
                op,
                error,
                ..
            } = &e.kind
            else {
                continue;
            };
            match (f, phase) {
                (OpF::Acquire, Phase::Ok) => {
                    first_deadline.insert(*handle, deadline.expect("a deadline").at);
                }
                (OpF::Release, Phase::Invoke) => {
                    invoked.insert(*op, (e.time, *handle));
                }
                (OpF::Release, done) => {
                    let (at, handle) = invoked[op];
                    if at > first_deadline[&handle] {
                        assert_eq!(
                            *done,
                            Phase::Ok,
                            "seed {seed}: the release of renewed handle {handle} at {at} ns: {error:?}"
                        );
                        late_releases += 1;
                    }
                }
                _ => {}
            }
        }
    }
    assert!(
        late_releases > 0,
        "no release came after a grant's first validity"
    );
}

/// When two of the three servers are cut off together (overlapping isolations), the cluster
/// has no leader until TCP retries the peers' traffic, which after a cut of length `d` can come
/// up to `d` + an RTO after the heal, and a new leader is elected and renews the lease for a
/// full TTL. L3 counted its allowance from the heal and called the lock orphaned in seed 438
/// of `partition` and seeds 393 and 1432 of `leader-change` (refusals 1.70–1.74 s after the
/// heal, against an allowance of 1.69 s); it now waits for the service's recovery (the
/// election hint and TCP's backoff), and those seeds are clean.
#[test]
fn no_orphaned_lock_while_the_cluster_recovers_from_losing_its_quorum() {
    let st = setup("raft-lease", &[]);
    for (kind, seed) in [
        (FaultKind::Partition, 438),
        (FaultKind::LeaderChange, 393),
        (FaultKind::LeaderChange, 1432),
    ] {
        let out = check_scenario(&st.scenario(seed, &[kind]), st.algo.clone());
        assert!(out.history.is_some(), "{kind:?} seed {seed} ran");
        assert!(
            out.verdict.violations.is_empty(),
            "{kind:?} seed {seed}: {:?}",
            out.verdict.violations
        );
    }
}
