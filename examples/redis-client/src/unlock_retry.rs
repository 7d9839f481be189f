//! A job whose unlock is retried when Redis does not answer in time: the right thing to do
//! with an idempotent unlock, and the planted bug with one that is not. A request that timed
//! out may have taken effect (its reply, not the request, was lost): a plain `DEL` retried
//! after its first try already released the lock deletes whatever lock is there by then,
//! another client's (the shape of etcd-io/etcd#22082, a stale `Mutex.Unlock` retry deleting a
//! newer lock). The compare-and-delete script deletes only the caller's own value, so retrying
//! it is harmless.

use std::time::Duration;

use redis::{AsyncCommands, RedisResult, Script};

/// How the job unlocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unlock {
    /// `DEL key`: deletes whatever holds the key. The bug, once retried.
    Del,
    /// The compare-and-delete script: deletes the key only while it holds our value.
    CompareAndDelete,
}

/// The report job ([`crate::report_job`]) with `unlock`, tried up to three times while Redis
/// gives no answer (redis-rs's own response timeout, 500 ms, ends each try).
pub async fn retrying_job(url: &str, me: &str, unlock: Unlock, work: Duration) -> RedisResult<()> {
    let mut conn = redis::Client::open(url)?
        .get_multiplexed_async_connection()
        .await?;
    let compare_and_delete = Script::new(crate::UNLOCK_SCRIPT);
    for round in 0u64.. {
        let owner = format!("{me}:{round}");
        let set: Option<String> = redis::cmd("SET")
            .arg("lock:report")
            .arg(&owner)
            .arg("NX")
            .arg("PX")
            .arg(1_000)
            .query_async(&mut conn)
            .await?;
        if set.is_none() {
            tokio::time::sleep(Duration::from_millis(25)).await;
            continue;
        }
        let count: Option<u64> = conn.get("resource:report-count").await?;
        tokio::time::sleep(work).await;
        let _: () = conn
            .set("resource:report-count", count.unwrap_or(0) + 1)
            .await?;
        for _try in 0..3 {
            let answered: RedisResult<i64> = match unlock {
                Unlock::Del => conn.del("lock:report").await,
                Unlock::CompareAndDelete => {
                    compare_and_delete
                        .key("lock:report")
                        .arg(&owner)
                        .invoke_async(&mut conn)
                        .await
                }
            };
            if answered.is_ok() {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}
