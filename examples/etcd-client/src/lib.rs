//! Two etcd locks of the kind applications write for themselves, on the etcd-client crate, each
//! guarding a job that reads a shared counter, works, and writes it back:
//!
//! - [`txn_job`]: the lock as a transaction on `create_revision == 0` (the key does not exist
//!   yet), the key attached to a lease; released by deleting the key, and the delete retried
//!   while etcd does not answer. With [`Unlock::Delete`] that retry is the planted bug: a delete
//!   that timed out may have taken effect (the reply, not the request, was lost), and the
//!   retry then deletes whichever lock is there by then — another client's. This is the shape
//!   of etcd-io/etcd#22082, a stale `Mutex.Unlock` retry deleting a newer lock.
//!   [`Unlock::CompareAndDelete`] deletes the key only while it holds our own value.
//! - [`lock_api_job`]: etcd's own Lock API (`Client::lock` with a lease kept alive by a task),
//!   with the classic flaw that no lock service can fix alone: the job never checks, before it
//!   writes, that its lease is still alive. A holder that stalls past the lease's TTL (a GC
//!   pause, a stopped VM) writes after the lock has passed to someone else. [`Write::Fenced`]
//!   makes the write a txn that puts only while the lock's key exists, which etcd checks at the
//!   moment of the write.
//!
//! Nothing in this file knows about locksim: the tests in `tests/` run these jobs in locksim's
//! simulation and find both flaws.

use std::time::Duration;

use etcd_client::{Client, Compare, CompareOp, Error, LockOptions, PutOptions, Txn, TxnOp};

/// The lock's key.
pub const LOCK_KEY: &str = "lock/report";
/// The shared counter the job updates under the lock.
pub const COUNTER_KEY: &str = "resource:report-count";

/// How [`txn_job`] releases its lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unlock {
    /// `Delete(key)`: deletes whatever holds the key. The bug, once retried.
    Delete,
    /// A txn: delete the key only if its value is still ours.
    CompareAndDelete,
}

/// Reads the counter (0 when absent).
async fn read_counter(etcd: &mut Client) -> Result<u64, Error> {
    let got = etcd.get(COUNTER_KEY, None).await?;
    Ok(got
        .kvs()
        .first()
        .and_then(|kv| kv.value_str().ok()?.parse().ok())
        .unwrap_or(0))
}

/// The report job with a txn lock: take the lock (a 10 s lease, retried every 25 ms), add one
/// to the counter after `work`, release it with `unlock`, tried up to three times, each try
/// given up after `patience` without an answer, then revoke the lease.
pub async fn txn_job(
    etcd: &mut Client,
    me: &str,
    unlock: Unlock,
    work: Duration,
    patience: Duration,
) -> Result<(), Error> {
    for round in 0u64.. {
        let owner = format!("{me}:{round}");
        let lease = etcd.lease_grant(10, None).await?.id();
        let take = Txn::new()
            .when([Compare::create_revision(LOCK_KEY, CompareOp::Equal, 0)])
            .and_then([TxnOp::put(
                LOCK_KEY,
                owner.as_str(),
                Some(PutOptions::new().with_lease(lease)),
            )]);
        if !etcd.txn(take).await?.succeeded() {
            etcd.lease_revoke(lease).await?;
            tokio::time::sleep(Duration::from_millis(25)).await;
            continue;
        }
        let count = read_counter(etcd).await?;
        tokio::time::sleep(work).await;
        etcd.put(COUNTER_KEY, (count + 1).to_string(), None).await?;
        for _try in 0..3 {
            let answered = match unlock {
                Unlock::Delete => tokio::time::timeout(patience, etcd.delete(LOCK_KEY, None))
                    .await
                    .map(|r| r.map(drop)),
                Unlock::CompareAndDelete => {
                    let release = Txn::new()
                        .when([Compare::value(LOCK_KEY, CompareOp::Equal, owner.as_str())])
                        .and_then([TxnOp::delete(LOCK_KEY, None)]);
                    tokio::time::timeout(patience, etcd.txn(release))
                        .await
                        .map(|r| r.map(drop))
                }
            };
            if let Ok(Ok(())) = answered {
                break;
            }
        }
        // The lease ends with the job: gone already if it ran out ("lease not found").
        let _ = tokio::time::timeout(patience, etcd.lease_revoke(lease)).await;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

/// How [`lock_api_job`] writes the counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// A plain put: whoever holds the lock by then. The flaw.
    Plain,
    /// A txn that puts only while the lock's key still exists: the lease that holds it is
    /// alive, so the lock is still ours (etcd's own advice, its Mutex's `IsOwner` compare, as a
    /// fence on the write).
    Fenced,
}

/// The report job on etcd's Lock API: a lease of `ttl_s` seconds kept alive every third of it
/// by a task of its own, `lock`, add one to the counter after `work` with `write`, `unlock`,
/// revoke.
pub async fn lock_api_job(
    etcd: &mut Client,
    ttl_s: i64,
    work: Duration,
    write: Write,
) -> Result<(), Error> {
    loop {
        let lease = etcd.lease_grant(ttl_s, None).await?.id();
        let (mut keeper, mut answers) = etcd.lease_keep_alive(lease).await?;
        let renew = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(ttl_s as u64 * 1_000 / 3)).await;
                if keeper.keep_alive().await.is_err() {
                    return;
                }
                match answers.message().await {
                    Ok(Some(a)) if a.ttl() > 0 => {}
                    _ => return,
                }
            }
        });
        let held = etcd
            .lock("report", Some(LockOptions::new().with_lease(lease)))
            .await?;
        let count = read_counter(etcd).await?;
        tokio::time::sleep(work).await;
        match write {
            Write::Plain => {
                etcd.put(COUNTER_KEY, (count + 1).to_string(), None).await?;
            }
            Write::Fenced => {
                let fenced = Txn::new()
                    .when([Compare::version(held.key(), CompareOp::Greater, 0)])
                    .and_then([TxnOp::put(COUNTER_KEY, (count + 1).to_string(), None)]);
                etcd.txn(fenced).await?;
            }
        }
        etcd.unlock(held.key()).await?;
        renew.abort();
        let _ = etcd.lease_revoke(lease).await;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
