//! The simulated etcd member under the real etcd-client crate, where it once differed from
//! etcd in ways a checker would take for a client's bug (or miss one): a `Lock` without a
//! lease, keep-alives sent while their answers are held, and lock recipes the recorder must
//! see as grants.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use etcd_client::{Compare, CompareOp, LockOptions, PutOptions, Txn, TxnOp};
use locksim_core::history::{EventKind, OpF, Phase};
use locksim_core::{Fault, Property};
use locksim_resp_sim::{run, Client, Scenario};

/// What the clients saw, for the test to check after the run.
type Log = Arc<Mutex<Vec<(String, u128, String)>>>;

fn note(log: &Log, c: &Client, start: madsim::time::Instant, what: String) {
    let at = start.elapsed().as_millis();
    log.lock().unwrap().push((c.name.clone(), at, what));
}

/// etcd's Lock service without a lease grants the caller a lease of its own (60 s, not kept
/// alive): two callers get two keys, and the second waits for the first's unlock. (A shared
/// `job/0` key once let both in at once: a double grant no real etcd makes.)
#[test]
fn lock_without_a_lease_waits_its_turn() {
    let log: Log = Default::default();
    let l = log.clone();
    let s = Scenario::new(1).etcd().clients(2).duration_ms(3_000);
    let outcome = run(&s, move |c: Client| {
        let log = l.clone();
        async move {
            let start = madsim::time::Instant::now();
            let mut etcd = c.etcd().await.expect("connects");
            let first = c.name == "c1";
            madsim::time::sleep(Duration::from_millis(if first { 10 } else { 100 })).await;
            let held = etcd.lock("job", None).await.expect("lock");
            let key = String::from_utf8_lossy(held.key()).to_string();
            note(&log, &c, start, format!("locked {key}"));
            etcd.put("resource:x", c.name.as_str(), None)
                .await
                .expect("write");
            if first {
                madsim::time::sleep(Duration::from_millis(1_000)).await;
                etcd.unlock(held.key()).await.expect("unlock");
            }
            madsim::time::sleep(Duration::from_secs(100)).await;
        }
    });
    let v = outcome.verdict();
    assert!(v.is_safe(), "{v:?}");
    let log = log.lock().unwrap().clone();
    assert_eq!(log.len(), 2, "{log:?}");
    let (c1, c2) = (&log[0], &log[1]);
    assert_eq!((c1.0.as_str(), c2.0.as_str()), ("c1", "c2"), "{log:?}");
    assert_ne!(c1.2, c2.2, "one key for both callers: {log:?}");
    assert!(c2.1 >= 1_000, "c2 got the lock while c1 held it: {log:?}");
    assert_eq!(outcome.count(OpF::Acquire, Phase::Ok), 2);
}

/// A keep-alive that reaches the member renews the lease even when its answer is held by a
/// `drop_replies` window: keep-alives sent through a 4 s window keep a 2 s lease (and its
/// lock) alive. (The member once stopped reading the keep-alive stream while an answer was
/// held, so the lease ran out while the client was renewing it.)
#[test]
fn keep_alives_renew_while_their_answers_are_held() {
    let log: Log = Default::default();
    let l = log.clone();
    let s = Scenario::new(2).etcd().clients(1).duration_ms(8_000).fault(
        1_000,
        Fault::DropReplies {
            clients: vec![1],
            servers: vec![0],
            duration: 4_000_000_000,
        },
    );
    let outcome = run(&s, move |c: Client| {
        let log = l.clone();
        async move {
            let start = madsim::time::Instant::now();
            let mut etcd = c.etcd().await.expect("connects");
            let lease = etcd.lease_grant(2, None).await.expect("grant").id();
            etcd.lock("job", Some(LockOptions::new().with_lease(lease)))
                .await
                .expect("lock");
            let (mut keeper, mut answers) = etcd.lease_keep_alive(lease).await.expect("stream");
            madsim::task::spawn(async move { while let Ok(Some(_)) = answers.message().await {} });
            while start.elapsed() < Duration::from_millis(5_500) {
                keeper.keep_alive().await.expect("send");
                madsim::time::sleep(Duration::from_millis(500)).await;
            }
            let ttl = etcd.lease_time_to_live(lease, None).await.expect("ttl");
            note(&log, &c, start, format!("{}", ttl.ttl()));
            madsim::time::sleep(Duration::from_secs(100)).await;
        }
    });
    let log = log.lock().unwrap().clone();
    let ttl: i64 = log[0].2.parse().unwrap();
    assert!(ttl >= 1, "the lease ended while kept alive: {log:?}");
    // Each renewal the member applied is an extension of the grant.
    assert!(outcome.count(OpF::Extend, Phase::Ok) >= 8);
    assert!(outcome.verdict().is_safe());
}

/// A txn lock on `mod_revision == 0` (0 only for a missing key, like `create_revision`) with a
/// lease, no keep-alive, and a holder that works past its lease: the recorder must see its
/// grants, so the overlap is S1. (Only `create_revision`/`version == 0` were grants once: with
/// no grant recorded the run was judged safe.)
#[test]
fn a_mod_revision_lock_is_judged() {
    let mut found = None;
    for seed in 1..=10 {
        let s = Scenario::new(seed).etcd().clients(2).duration_ms(6_000);
        let outcome = run(&s, |c: Client| async move {
            let mut etcd = c.etcd().await.expect("connects");
            for round in 0u64.. {
                let lease = etcd.lease_grant(2, None).await.expect("grant").id();
                let me = format!("{}-{round}", c.name);
                let txn = Txn::new()
                    .when([Compare::mod_revision("lock/job", CompareOp::Equal, 0)])
                    .and_then([TxnOp::put(
                        "lock/job",
                        me.as_str(),
                        Some(PutOptions::new().with_lease(lease)),
                    )]);
                if !etcd.txn(txn).await.expect("txn").succeeded() {
                    madsim::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
                // The bug: 3 s of work under a 2 s lease.
                madsim::time::sleep(Duration::from_millis(3_000)).await;
                etcd.put("resource:x", me.as_str(), None)
                    .await
                    .expect("write");
                let _ = etcd.delete("lock/job", None).await;
            }
        });
        assert!(outcome.count(OpF::Acquire, Phase::Ok) >= 2);
        if outcome.verdict().violates(Property::S1) {
            found = Some(seed);
            break;
        }
    }
    assert!(found.is_some(), "no seed of 10 showed S1");
}

/// A lease that locks again, and is revoked while its key waits, deletes a key the Lock service
/// once granted: that is not the current holder's key going. c2 locks and unlocks, c1 locks
/// (2 s lease kept alive), c2 waits on the same lease and revokes it; then c1 is paused past
/// its lease and c2 gets the lock. c1 never writes again: safe. (The revoke once read as the
/// holder's copy gone, so c1's next keep-alive gave its grant no deadline, and c1 "held" to
/// the end of the run: a false S1.)
#[test]
fn revoking_a_waiting_relock_leaves_the_holder_alone() {
    let s = Scenario::new(9).etcd().clients(2).duration_ms(8_000).fault(
        1_000,
        Fault::Pause {
            node: 1,
            duration: 4_000_000_000,
            task: Default::default(),
        },
    );
    let outcome = run(&s, |c: Client| async move {
        let mut etcd = c.etcd().await.expect("connects");
        let ms = |n| madsim::time::sleep(Duration::from_millis(n));
        let lock = |lease| Some(LockOptions::new().with_lease(lease));
        if c.name == "c1" {
            let lease = etcd.lease_grant(2, None).await.expect("grant").id();
            let (mut keeper, mut answers) = etcd.lease_keep_alive(lease).await.expect("stream");
            madsim::task::spawn(async move { while let Ok(Some(_)) = answers.message().await {} });
            madsim::task::spawn(async move {
                while keeper.keep_alive().await.is_ok() {
                    madsim::time::sleep(Duration::from_millis(300)).await;
                }
            });
            ms(200).await;
            etcd.lock("job", lock(lease)).await.expect("lock");
            etcd.put("resource:x", "c1", None).await.expect("write");
        } else {
            let lease = etcd.lease_grant(10, None).await.expect("grant").id();
            let held = etcd.lock("job", lock(lease)).await.expect("lock");
            etcd.put("resource:x", "c2", None).await.expect("write");
            ms(100).await;
            etcd.unlock(held.key()).await.expect("unlock");
            ms(200).await;
            let mut waiter = etcd.clone();
            let wait = madsim::task::spawn(async move { waiter.lock("job", lock(lease)).await });
            ms(200).await;
            etcd.lease_revoke(lease).await.expect("revoke");
            assert!(wait.await.expect("joins").is_err(), "a revoked waiter");
            let lease = etcd.lease_grant(10, None).await.expect("grant").id();
            etcd.lock("job", lock(lease)).await.expect("lock");
            etcd.put("resource:x", "c2", None).await.expect("write");
        }
        madsim::time::sleep(Duration::from_secs(100)).await;
    });
    let v = outcome.verdict();
    assert!(v.is_safe(), "{v:?}");
    assert_eq!(outcome.count(OpF::Acquire, Phase::Ok), 3);
    // c1's grant kept a deadline through its keep-alives.
    let no_deadline = outcome.history.events.iter().any(|e| {
        matches!(
            e.kind,
            EventKind::Op {
                f: OpF::Extend,
                phase: Phase::Ok,
                deadline: None,
                ..
            }
        )
    });
    assert!(!no_deadline);
}

/// A txn lock with a 6 s lease, whose holder writes only while less than 4 s of it have passed
/// on its own clock, then lets the lease run out. A step of the member's wall clock must not
/// end the lease: etcd times leases by Go's monotonic clock. (Timed on the wall clock, a +10 s
/// step ended every lease at once and the next grant overlapped a holder still writing: a
/// double grant no real etcd makes.)
async fn careful(client: Client) {
    let mut etcd = client.etcd().await.expect("connects");
    loop {
        let lease = etcd.lease_grant(6, None).await.expect("grant").id();
        let take = Txn::new()
            .when([Compare::create_revision("lock/job", CompareOp::Equal, 0)])
            .and_then([TxnOp::put(
                "lock/job",
                client.name.as_str(),
                Some(PutOptions::new().with_lease(lease)),
            )]);
        let asked = madsim::time::Instant::now();
        if !etcd.txn(take).await.expect("txn").succeeded() {
            let _ = etcd.lease_revoke(lease).await;
            madsim::time::sleep(Duration::from_millis(50)).await;
            continue;
        }
        while asked.elapsed() < Duration::from_secs(4) {
            etcd.put("resource:x", client.name.as_str(), None)
                .await
                .expect("write");
            madsim::time::sleep(Duration::from_millis(200)).await;
        }
        // Let the lease run out rather than release: the next holder waits for its end.
        madsim::time::sleep(Duration::from_secs(3)).await;
    }
}

#[test]
fn a_step_of_the_members_wall_clock_leaves_leases_alone() {
    let s = Scenario::new(7)
        .etcd()
        .clients(2)
        .duration_ms(14_000)
        .fault(
            1_000,
            Fault::ClockStep {
                node: 0,
                delta: 10_000_000_000,
            },
        );
    let outcome = run(&s, careful);
    let v = outcome.verdict();
    assert!(
        !v.violates(Property::S1) && !v.violates(Property::S2),
        "{v:?}"
    );
    assert!(outcome.count(OpF::Acquire, Phase::Ok) >= 2);
    assert!(outcome.count(OpF::Write, Phase::Ok) >= 20);
}
