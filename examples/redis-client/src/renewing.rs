//! A lock that renews itself while a long job runs, as watchdog locks do (Redisson's
//! `lockWatchdogTimeout`, rslock's `extend`): a background task extends the lease every third
//! of its TTL with the compare-and-pexpire script, and the job checks, before each write, that
//! the lease is still valid by its own clock.
//!
//! Where that validity comes from is the planted bug. [`Deadline::FromReply`] counts a renewed
//! lease from the moment the renewal's reply is read: if the process stalls between the server
//! extending the key and the client reading the reply (a GC pause, a stopped VM), the client
//! believes its lease runs a whole TTL past the stall, while at the server it ran out during
//! it. [`Deadline::FromRequest`] counts it from the moment the request was sent, which the
//! server cannot have extended before: the correct rule (the one Redlock's validity time uses
//! for the acquire, <https://redis.io/docs/latest/develop/use/patterns/distributed-locks/>).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncCommands, RedisResult, Script};
use tokio::time::Instant;

/// Compare-and-pexpire: sets the key's TTL to `ARGV[2]` ms only while it holds our owner value.
pub const EXTEND_SCRIPT: &str = r#"if redis.call("get",KEYS[1]) == ARGV[1] then
    return redis.call("pexpire",KEYS[1],ARGV[2])
else
    return 0
end"#;

/// Which moment a renewed lease is counted from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deadline {
    /// From reading the renewal's reply: the bug.
    FromReply,
    /// From sending the renewal: correct.
    FromRequest,
}

/// The job on a renewing lock: forever take `lock:report` (TTL `ttl`), then for `steps` steps
/// work `step` and, while the lease is valid by its own clock, add one to the report counter;
/// a step that finds the lease gone ends the round. A watchdog renews the lease every `ttl / 3`.
pub async fn renewing_job(
    url: &str,
    me: &str,
    rule: Deadline,
    ttl: Duration,
    steps: u32,
    step: Duration,
) -> RedisResult<()> {
    // Answers may take up to 3 s, Redisson's default `timeout` (redis-rs's own is 500 ms).
    let config =
        redis::AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(3)));
    let mut conn = redis::Client::open(url)?
        .get_multiplexed_async_connection_with_config(&config)
        .await?;
    for round in 0u64.. {
        let owner = format!("{me}:{round}");
        let sent = Instant::now();
        let set: Option<String> = redis::cmd("SET")
            .arg("lock:report")
            .arg(&owner)
            .arg("NX")
            .arg("PX")
            .arg(ttl.as_millis() as u64)
            .query_async(&mut conn)
            .await?;
        if set.is_none() {
            tokio::time::sleep(Duration::from_millis(25)).await;
            continue;
        }
        let valid_until = Arc::new(Mutex::new(sent + ttl));
        let watchdog = tokio::spawn(renew(
            conn.clone(),
            owner.clone(),
            ttl,
            rule,
            valid_until.clone(),
        ));
        for _ in 0..steps {
            tokio::time::sleep(step).await;
            if Instant::now() >= *valid_until.lock().unwrap() {
                break;
            }
            let n: Option<u64> = conn.get("resource:report-count").await?;
            let _: () = conn
                .set("resource:report-count", n.unwrap_or(0) + 1)
                .await?;
        }
        watchdog.abort();
        let _: i64 = Script::new(crate::UNLOCK_SCRIPT)
            .key("lock:report")
            .arg(&owner)
            .invoke_async(&mut conn)
            .await?;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

/// The watchdog: every `ttl / 3`, extend `owner`'s lease to `ttl` and move `valid_until` by
/// `rule`; stops when the key is no longer ours or Redis fails.
async fn renew(
    mut conn: MultiplexedConnection,
    owner: String,
    ttl: Duration,
    rule: Deadline,
    valid_until: Arc<Mutex<Instant>>,
) {
    let extend = Script::new(EXTEND_SCRIPT);
    loop {
        tokio::time::sleep(ttl / 3).await;
        let sent = Instant::now();
        let renewed: RedisResult<i64> = extend
            .key("lock:report")
            .arg(&owner)
            .arg(ttl.as_millis() as u64)
            .invoke_async(&mut conn)
            .await;
        if renewed != Ok(1) {
            return;
        }
        let from = match rule {
            Deadline::FromReply => Instant::now(),
            Deadline::FromRequest => sent,
        };
        *valid_until.lock().unwrap() = from + ttl;
    }
}
