//! The report job ([`crate::report_job`]) on a Redis primary found through Sentinel, with
//! redis-rs's own `sentinel` module: what a deployment of a primary, replicas and sentinels
//! gives its clients. A broken connection makes the job ask the sentinels again.

use std::time::Duration;

use redis::sentinel::{SentinelClient, SentinelServerType};
use redis::{AsyncCommands, RedisResult, Script};

/// Forever: ask the sentinels at `sentinels` for `mymaster`'s primary, take `lock:report` there
/// (TTL 5 s), read the counter, work for `work`, write it back incremented, unlock. Ends at the
/// first Redis error (its caller starts it again).
pub async fn report_job_sentinel(
    sentinels: &[String],
    me: &str,
    work: Duration,
) -> RedisResult<()> {
    let mut client = SentinelClient::build(
        sentinels.to_vec(),
        "mymaster",
        None,
        SentinelServerType::Master,
    )?;
    let mut conn = client.get_async_connection().await?;
    let unlock = Script::new(crate::UNLOCK_SCRIPT);
    for round in 0u64.. {
        let owner = format!("{me}:{round}");
        let set: Option<String> = redis::cmd("SET")
            .arg("lock:report")
            .arg(&owner)
            .arg("NX")
            .arg("PX")
            .arg(5_000)
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
        let _: i64 = unlock
            .key("lock:report")
            .arg(&owner)
            .invoke_async(&mut conn)
            .await?;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}
