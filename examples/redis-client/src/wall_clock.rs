//! A job that checks its lease before it writes, and the clock it checks it with. The lease is
//! counted from just before the `SET … NX PX` was sent, so the client never believes in it
//! longer than the server keeps the key — as long as the client's clock measures elapsed time.
//! [`LeaseClock::Wall`] reads `SystemTime` (the wall clock, which NTP or an operator can step
//! backwards): the planted bug. [`LeaseClock::Monotonic`] reads `Instant`, which never steps.

use std::time::{Duration, Instant, SystemTime};

use redis::{AsyncCommands, RedisResult};

use crate::RedisLock;

/// Which clock the job's lease check reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseClock {
    /// `SystemTime::now()`: a step backwards makes an expired lease look valid. The bug.
    Wall,
    /// `Instant::now()`: elapsed time, whatever the wall clock does.
    Monotonic,
}

/// A moment read on the chosen clock.
enum Stamp {
    Wall(SystemTime),
    Mono(Instant),
}

impl LeaseClock {
    fn now(self) -> Stamp {
        match self {
            LeaseClock::Wall => Stamp::Wall(SystemTime::now()),
            LeaseClock::Monotonic => Stamp::Mono(Instant::now()),
        }
    }
}

impl Stamp {
    /// Time since this stamp on its clock (zero when the clock went back past it).
    fn elapsed(&self) -> Duration {
        match self {
            Stamp::Wall(t) => t.elapsed().unwrap_or(Duration::ZERO),
            Stamp::Mono(t) => t.elapsed(),
        }
    }
}

/// The report job ([`crate::report_job`]) with a lease check: the lease (1 s) runs from just
/// before the lock request; after `work`, the counter is written only if less than the TTL
/// minus 100 ms of margin has passed on `clock`, else the round is given up.
pub async fn checked_job(
    url: &str,
    me: &str,
    clock: LeaseClock,
    work: Duration,
) -> RedisResult<()> {
    let conn = redis::Client::open(url)?
        .get_multiplexed_async_connection()
        .await?;
    let ttl = Duration::from_secs(1);
    let mut lock = RedisLock::new(conn, "lock:report", ttl);
    for round in 0u64.. {
        let owner = format!("{me}:{round}");
        let asked = clock.now();
        let Some(guard) = lock.try_lock(&owner).await? else {
            tokio::time::sleep(Duration::from_millis(25)).await;
            continue;
        };
        let count: Option<u64> = lock.conn().get("resource:report-count").await?;
        tokio::time::sleep(work).await;
        if asked.elapsed() < ttl - Duration::from_millis(100) {
            let _: () = lock
                .conn()
                .set("resource:report-count", count.unwrap_or(0) + 1)
                .await?;
        }
        lock.unlock(guard).await?;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}
