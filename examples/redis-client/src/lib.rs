//! A small Redis lock client of the kind applications write for themselves, on redis-rs:
//! acquire with `SET key owner NX PX ttl`, unlock with the compare-and-delete script of the
//! Redis docs' distributed-lock pattern
//! (<https://redis.io/docs/latest/develop/use/patterns/distributed-locks/>), and a job that does
//! its work under the lock and writes the result to a shared counter.
//!
//! It has the classic flaw on purpose: the job never checks, before it writes, that its lease is
//! still valid. A holder that stalls longer than the TTL (a GC pause, a stopped VM) writes
//! after the lock has passed to someone else. Nothing in this file knows about locksim; the
//! test in `tests/` runs it in locksim's simulation and finds the flaw.
//!
//! `src/renewing.rs` is a second client, one that renews its lease while a long job runs and
//! checks it before every write, with a subtler planted bug: how it counts a renewed lease.
//! `src/unlock_retry.rs` retries an unlock whose reply did not come, by `DEL` (the bug) or by
//! the compare-and-delete script. `src/wall_clock.rs` checks its lease before writing, with the
//! wall clock (the bug, once the client's clock is stepped back) or the monotonic one.

use std::time::Duration;

mod renewing;
mod unlock_retry;
mod wall_clock;
mod with_rslock;
mod with_sentinel;
pub use renewing::{renewing_job, Deadline, EXTEND_SCRIPT};
pub use unlock_retry::{retrying_job, Unlock};
pub use wall_clock::{checked_job, LeaseClock};
pub use with_rslock::{report_job_redlock, report_job_rslock};
pub use with_sentinel::report_job_sentinel;

use redis::aio::MultiplexedConnection;
use redis::{AsyncCommands, RedisResult, Script};

/// Compare-and-delete: deletes the key only while it still holds our owner value.
pub const UNLOCK_SCRIPT: &str = r#"if redis.call("get",KEYS[1]) == ARGV[1] then
    return redis.call("del",KEYS[1])
else
    return 0
end"#;

/// A lock on one Redis key.
pub struct RedisLock {
    conn: MultiplexedConnection,
    key: String,
    ttl: Duration,
    unlock: Script,
}

/// Proof of holding the lock: the owner value we set.
#[derive(Debug)]
pub struct Guard {
    owner: String,
}

impl RedisLock {
    /// A lock on `key` whose grants expire after `ttl` unless released.
    pub fn new(conn: MultiplexedConnection, key: &str, ttl: Duration) -> RedisLock {
        RedisLock {
            conn,
            key: key.to_string(),
            ttl,
            unlock: Script::new(UNLOCK_SCRIPT),
        }
    }

    /// One attempt: `SET key owner NX PX ttl`. `Ok(None)` when someone else holds it.
    pub async fn try_lock(&mut self, owner: &str) -> RedisResult<Option<Guard>> {
        let set: Option<String> = redis::cmd("SET")
            .arg(&self.key)
            .arg(owner)
            .arg("NX")
            .arg("PX")
            .arg(self.ttl.as_millis() as u64)
            .query_async(&mut self.conn)
            .await?;
        Ok(set.map(|_| Guard {
            owner: owner.to_string(),
        }))
    }

    /// Tries every `retry` until the lock is ours.
    pub async fn lock(&mut self, owner: &str, retry: Duration) -> RedisResult<Guard> {
        loop {
            if let Some(g) = self.try_lock(owner).await? {
                return Ok(g);
            }
            tokio::time::sleep(retry).await;
        }
    }

    /// Releases the lock if it is still ours; `Ok(false)` when it had expired or passed on.
    pub async fn unlock(&mut self, guard: Guard) -> RedisResult<bool> {
        let deleted: i64 = self
            .unlock
            .key(&self.key)
            .arg(&guard.owner)
            .invoke_async(&mut self.conn)
            .await?;
        Ok(deleted == 1)
    }

    /// The connection, for the work done under the lock.
    pub fn conn(&mut self) -> &mut MultiplexedConnection {
        &mut self.conn
    }
}

/// The job: connect to the Redis at `url`, then forever take `lock:report`, read the report
/// counter, work for `work`, write the counter back incremented, unlock. `me` names this worker
/// (owner values are `me` and a round number).
pub async fn report_job(url: &str, me: &str, work: Duration) -> RedisResult<()> {
    let conn = redis::Client::open(url)?
        .get_multiplexed_async_connection()
        .await?;
    let mut lock = RedisLock::new(conn, "lock:report", Duration::from_secs(1));
    for round in 0u64.. {
        let guard = lock
            .lock(&format!("{me}:{round}"), Duration::from_millis(25))
            .await?;
        let count: Option<u64> = lock.conn().get("resource:report-count").await?;
        tokio::time::sleep(work).await;
        // The flaw: no check that the lease is still ours before this write.
        let _: () = lock
            .conn()
            .set("resource:report-count", count.unwrap_or(0) + 1)
            .await?;
        lock.unlock(guard).await?;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}
