//! The lease-record locks of issue #14 (`db-lease`, `k8s-lease`, `pg-advisory`): each is
//! deterministic, grants, is clean without faults, and shows the failure its real system
//! documents (the full demonstrations, with their remedies, are the `sims/` pairs).

mod common;

use locksim_core::{FaultKind, Property};
use locksim_explore::check_scenario;
use locksim_explore::testing::Campaign;

const ALGOS: [&str; 3] = ["db-lease", "k8s-lease", "pg-advisory"];

#[test]
fn same_seed_same_digest_different_seed_different_digest() {
    for algo in ALGOS {
        let st = common::setup(algo, &[]);
        let digest = |seed| {
            let out = check_scenario(&st.scenario(seed, &[FaultKind::Mixed]), st.algo.clone());
            let h = out.history.expect("simulation ran");
            assert!(
                h.events.len() > 100,
                "{algo} seed {seed}: {} events",
                h.events.len()
            );
            (h.digest(), out.verdict)
        };
        let (a1, v1) = digest(5);
        let (a2, v2) = digest(5);
        assert_eq!(a1, a2, "{algo}: seed 5 ran twice with different digests");
        assert_eq!(v1, v2);
        assert_ne!(a1, digest(6).0, "{algo}: seeds 5 and 6 gave the same run");
    }
}

#[test]
fn no_faults_no_violations_and_grants() {
    for algo in ALGOS {
        Campaign::registered(algo, &[])
            .seeds(0..200)
            .faults(&[FaultKind::None])
            .expect_safe();
    }
}

#[test]
fn a_client_clock_ahead_breaks_client_time_and_not_db_time() {
    let skew = [
        "clients=3",
        "ttl=5s",
        "duration=20s",
        "c3.clock_offset=20s",
        "c3.duration=6s",
    ];
    let with = |ts: &'static str| {
        let mut s = skew.to_vec();
        s.push(ts);
        s
    };
    Campaign::registered("db-lease", &with("time_source=client"))
        .seeds(0..20)
        .faults(&[FaultKind::None])
        .expect(&[Property::S1, Property::L3])
        .allow(&[Property::S2, Property::S3])
        .check();
    Campaign::registered("db-lease", &with("time_source=db"))
        .seeds(0..20)
        .faults(&[FaultKind::None])
        .expect_safe();
}

#[test]
fn transaction_pooling_double_grants_session_locks_and_xact_locks_do_not() {
    let tx = ["clients=4", "pool_mode=transaction"];
    Campaign::registered("pg-advisory", &tx)
        .seeds(0..20)
        .faults(&[FaultKind::None])
        .expect(&[Property::S1, Property::S3])
        .allow(&[Property::S2, Property::L3])
        .check();
    Campaign::registered("pg-advisory", &[tx[0], tx[1], "xact=true"])
        .seeds(0..20)
        .faults(&[FaultKind::None])
        .expect_safe();
}
