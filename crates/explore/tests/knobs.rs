//! The deployment knobs of issue #25 item 2: `release = "delete"` (a plain `DEL key`, no owner
//! check) makes S4 visible on the Redis-like lock servers, and the owner-checked default does
//! not; a bad value is one error naming the key.

mod common;

use common::setup;
use locksim_core::{FaultKind, Property};
use locksim_explore::check_scenario;

/// The seeds of `0..n` whose verdict violates `p`, for `algo` with `settings` under `kinds`.
fn violating(algo: &str, settings: &[&str], kinds: &[FaultKind], n: u64, p: Property) -> Vec<u64> {
    let st = setup(algo, settings);
    (0..n)
        .filter(|&seed| {
            let out = check_scenario(&st.scenario(seed, kinds), st.algo.clone());
            assert!(out.error.is_none(), "{algo} seed {seed}: {:?}", out.error);
            out.verdict.violates(p)
        })
        .collect()
}

#[test]
fn a_delete_release_frees_the_next_holders_lock_and_the_owner_check_does_not() {
    for (algo, kinds, n) in [
        ("central", &[FaultKind::Delay][..], 40),
        ("redlock", &[FaultKind::None][..], 3),
        ("redis-failover", &[FaultKind::Delay][..], 20),
    ] {
        let bad = violating(algo, &["release=delete"], kinds, n, Property::S4);
        assert!(
            !bad.is_empty(),
            "{algo}: no S4 in {n} seeds with release=delete"
        );
        let fixed = violating(algo, &["release=owner"], kinds, n, Property::S4);
        assert!(
            fixed.is_empty(),
            "{algo}: S4 with the owner check, seeds {fixed:?}"
        );
    }
}

#[test]
fn the_s4_of_a_delete_names_both_clients() {
    let st = setup("redlock", &["release=delete"]);
    let out = check_scenario(&st.scenario(0, &[FaultKind::None]), st.algo.clone());
    let s4 = out
        .verdict
        .violations
        .iter()
        .find(|v| v.kind == Property::S4)
        .expect("S4 on seed 0");
    assert!(
        s4.summary
            .contains("'s release freed the lock granted to c"),
        "{}",
        s4.summary
    );
}

#[test]
fn a_bad_release_value_names_the_key() {
    for algo in ["central", "central-fencing", "redlock", "redis-failover"] {
        let s = vec![("release".to_string(), "del".to_string())];
        let err = locksim_explore::Setup::registered(algo, &s)
            .err()
            .unwrap_or_else(|| panic!("{algo} accepted release=del"));
        assert!(
            err.contains("`release=del` is not valid (choose owner or delete)"),
            "{algo}: {err}"
        );
    }
}

#[test]
fn an_unfenced_resource_accepts_the_write_a_partition_held_back() {
    for algo in ["k8s-lease", "raft-lease"] {
        let kinds = [FaultKind::Partition];
        let bad = violating(algo, &["fencing=false"], &kinds, 30, Property::S2);
        assert!(
            !bad.is_empty(),
            "{algo}: no S2 in 30 seeds with fencing=false"
        );
        let fenced = violating(algo, &["fencing=true"], &kinds, 30, Property::S2);
        assert!(
            fenced.is_empty(),
            "{algo}: S2 with fencing, seeds {fenced:?}"
        );
    }
}

#[test]
fn a_bad_fencing_value_names_the_key() {
    for algo in ["k8s-lease", "raft-lease"] {
        let s = vec![("fencing".to_string(), "maybe".to_string())];
        let err = locksim_explore::Setup::registered(algo, &s)
            .err()
            .unwrap_or_else(|| panic!("{algo} accepted fencing=maybe"));
        assert!(
            err.contains("`fencing=maybe` must be true or false"),
            "{algo}: {err}"
        );
    }
}

#[test]
fn zookeepers_session_timeout_is_its_ttl_and_not_both() {
    let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
    let st =
        locksim_explore::Setup::registered("zookeeper", &[pair("session_timeout", "4s")]).unwrap();
    assert_eq!(st.workload.ttl, 4_000_000_000);
    // Per client too: `c2.session_timeout` is `c2.ttl` (and giving both is refused).
    let per = locksim_explore::Setup::registered("zookeeper", &[pair("c2.session_timeout", "3s")])
        .unwrap();
    assert_eq!(per.workload.client(2).ttl, 3_000_000_000);
    assert_eq!(per.workload.client(1).ttl, per.workload.ttl);
    let both_c2 = locksim_explore::Setup::registered(
        "zookeeper",
        &[pair("c2.session_timeout", "3s"), pair("c2.ttl", "2s")],
    )
    .err()
    .expect("both given for c2");
    assert!(
        both_c2.contains("`c2.session_timeout` and `c2.ttl` are the same setting"),
        "{both_c2}"
    );
    let both = locksim_explore::Setup::registered(
        "zookeeper",
        &[pair("session_timeout", "4s"), pair("ttl", "2s")],
    )
    .err()
    .expect("both given");
    assert!(
        both.contains("`session_timeout` and `ttl` are the same setting"),
        "{both}"
    );
    // Only zookeeper knows the name.
    let other = locksim_explore::Setup::registered("central", &[pair("session_timeout", "4s")])
        .err()
        .expect("central has no session_timeout");
    assert!(
        other.contains("`session_timeout` is not a setting of central"),
        "{other}"
    );
}

/// ShedLock's unlock matches the row by host name (`locked_by = :me`), so an unlock a partition
/// held back and TCP delivered after the heal ends the same host's next grant: S4, now judged
/// for `db-lease` (before, no release recorded what it freed and S4 passed silently).
#[test]
fn a_retransmitted_host_named_unlock_ends_the_same_hosts_next_grant() {
    // A client with a statement timeout (pgjdbc's socketTimeout): its unlock times out, its
    // next acquire goes ahead, and the unlock lands after it. (Without one, the default, the
    // client waits for the unlock's answer and takes no new grant meanwhile.)
    let st = setup("db-lease", &["timeout=100ms"]);
    let kinds = [FaultKind::Partition];
    let out = (0..20)
        .map(|seed| check_scenario(&st.scenario(seed, &kinds), st.algo.clone()))
        .find(|o| o.verdict.violates(Property::S4))
        .expect("an S4 in 20 partition seeds");
    let s4 = out
        .verdict
        .violations
        .iter()
        .find(|v| v.kind == Property::S4)
        .unwrap();
    // The same host released and held: c2's release freed the lock granted to c2.
    let who = s4.summary.split("'s release").next().unwrap();
    let who = who.rsplit(' ').next().unwrap();
    assert!(
        s4.summary
            .contains(&format!("freed the lock granted to {who} at")),
        "{}",
        s4.summary
    );
}
