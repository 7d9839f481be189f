//! The same job on [rslock](https://crates.io/crates/rslock), a Redlock crate from crates.io,
//! with one Redis server (a quorum of one) or several (Redlock proper: a majority of them). rslock measures how long an acquire took and
//! refuses a lock whose remaining validity is gone; what the job does after it got the lock is
//! up to the job, and this one, like `report_job`, never checks that the lock is still valid
//! before it writes.

use std::time::Duration;

use redis::AsyncCommands;
use rslock::{LockError, LockManager};

/// [`crate::report_job`] on rslock: take `lock:report` (TTL 1 s) through rslock, read the
/// counter, work for `work`, write it back incremented, unlock; forever. Ends at the first Redis
/// error; a lock rslock could not get is tried again after 25 ms.
pub async fn report_job_rslock(url: &str, work: Duration) -> redis::RedisResult<()> {
    report_job_redlock(&[url.to_string()], work).await
}

/// [`report_job_rslock`] with rslock locking on every server of `urls` (Redlock); the counter
/// lives on the first.
pub async fn report_job_redlock(urls: &[String], work: Duration) -> redis::RedisResult<()> {
    let locks = LockManager::new(urls.to_vec());
    let mut conn = redis::Client::open(urls[0].as_str())?
        .get_multiplexed_async_connection()
        .await?;
    loop {
        let lock = match locks.lock(b"lock:report", Duration::from_secs(1)).await {
            Ok(lock) => lock,
            Err(LockError::Redis(e)) => return Err(e),
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(25)).await;
                continue;
            }
        };
        let count: Option<u64> = conn.get("resource:report-count").await?;
        tokio::time::sleep(work).await;
        // The flaw, as in report_job: no look at `lock.validity_time` before this write.
        let _: () = conn
            .set("resource:report-count", count.unwrap_or(0) + 1)
            .await?;
        locks.unlock(&lock).await;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
