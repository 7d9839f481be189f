//! The real etcd-client crate, unchanged, against the simulated etcd member: KV, leases with
//! keep-alive, txn compares, the Lock service, and the history the checkers judge.

use std::time::Duration;

use etcd_client::{Compare, CompareOp, LockOptions, PutOptions, Txn, TxnOp};
use locksim_core::history::{OpF, Phase};
use locksim_core::{Fault, Property};
use locksim_resp_sim::{run, Client, Scenario};

/// etcd-client's Lock API with a lease per round: lock, write, unlock, revoke.
async fn lock_api(client: Client, work_ms: u64) {
    let mut etcd = client.etcd().await.expect("connects");
    loop {
        let lease = etcd.lease_grant(5, None).await.expect("grant").id();
        let held = etcd
            .lock("job", Some(LockOptions::new().with_lease(lease)))
            .await
            .expect("lock");
        madsim::time::sleep(Duration::from_millis(work_ms)).await;
        etcd.put("resource:counter", client.name.as_str(), None)
            .await
            .expect("write");
        etcd.unlock(held.key()).await.expect("unlock");
        etcd.lease_revoke(lease).await.expect("revoke");
        madsim::time::sleep(Duration::from_millis(10)).await;
    }
}

#[test]
fn the_lock_api_grants_in_turn_and_is_safe_without_faults() {
    let outcome = run(
        &Scenario::new(3).etcd().clients(3).duration_ms(3_000),
        |c| lock_api(c, 50),
    );
    let v = outcome.verdict();
    assert!(v.is_safe(), "{v:?}");
    let grants = outcome.count(OpF::Acquire, Phase::Ok);
    assert!(grants >= 10, "{grants} grants");
    assert!(outcome.count(OpF::Release, Phase::Ok) >= grants - 1);
    assert!(outcome.count(OpF::Write, Phase::Ok) >= grants - 1);
}

/// A txn lock on `create_revision == 0` with a lease; the lease kept alive while working; an
/// unlock that deletes the key whatever its value (the flaw under a lost reply).
async fn txn_lock(client: Client, ttl_s: i64, work_ms: u64) {
    let mut etcd = client.etcd().await.expect("connects");
    for round in 0u64.. {
        let lease = etcd.lease_grant(ttl_s, None).await.expect("grant").id();
        let me = format!("{}-{round}", client.name);
        let txn = Txn::new()
            .when([Compare::create_revision("lock/job", CompareOp::Equal, 0)])
            .and_then([TxnOp::put(
                "lock/job",
                me.as_str(),
                Some(PutOptions::new().with_lease(lease)),
            )]);
        if !etcd.txn(txn).await.expect("txn").succeeded() {
            let _ = etcd.lease_revoke(lease).await;
            madsim::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        madsim::time::sleep(Duration::from_millis(work_ms)).await;
        etcd.put("resource:counter", me.as_str(), None)
            .await
            .expect("write");
        etcd.delete("lock/job", None).await.expect("unlock");
        // A lease that ran out is gone: etcd answers "requested lease not found".
        let _ = etcd.lease_revoke(lease).await;
    }
}

#[test]
fn a_txn_lock_is_safe_without_faults_and_a_paused_holder_breaks_it() {
    let outcome = run(
        &Scenario::new(5).etcd().clients(2).duration_ms(3_000),
        |c| txn_lock(c, 2, 100),
    );
    let v = outcome.verdict();
    assert!(v.is_safe(), "{v:?}");
    assert!(outcome.count(OpF::Acquire, Phase::Ok) >= 5);
    // A holder paused past its 2 s lease writes after another client got the lock.
    let mut found = None;
    for seed in 1..=10 {
        let s = Scenario::new(seed)
            .etcd()
            .clients(2)
            .duration_ms(8_000)
            .fault(
                500,
                Fault::Pause {
                    node: 1,
                    duration: 4_000_000_000,
                    task: Default::default(),
                },
            );
        let v = run(&s, |c| txn_lock(c, 2, 300)).verdict();
        if v.violates(Property::S1) {
            found = Some(seed);
            break;
        }
    }
    assert!(found.is_some(), "no seed of 10 showed S1");
}

#[test]
fn runs_are_deterministic() {
    let s = Scenario::new(11).etcd().clients(3).duration_ms(2_000);
    let a = run(&s, |c| lock_api(c, 30)).digest();
    let b = run(&s, |c| lock_api(c, 30)).digest();
    assert_eq!(a, b);
}
