//! `redlock`: the Redis documentation's distributed lock over N independent masters
//! ("Distributed Locks with Redis", redis.io): the client
//!
//! 1. reads its clock, picks a random owner value;
//! 2. tries `SET key owner NX PX ttl` on each master in turn, each with a short timeout;
//! 3. holds the lock when a majority (N/2 + 1) said yes and the validity time
//!    `TTL − elapsed − drift` is positive, with `drift = TTL·0.01 + 2 ms` as the reference
//!    clients use; otherwise it unlocks every master and retries after a random delay;
//! 4. releases by compare-and-delete on every master (`release = "delete"`: a plain `DEL`,
//!    which also makes step 3's clean-up of a failed acquire delete the winner's keys).
//!
//! Knobs: masters' persistence (`fsync`), the masters' expiry clock, and "delayed restart"
//! (a restarted master refuses every request for one maximum TTL), which the Redis document
//! proposes as the fix for masters that restart empty.

use std::collections::BTreeMap;
use std::rc::Rc;

use locksim_core::{Nanos, Workload};
use locksim_sim::{
    async_trait, Grant, LocalClock, LockAlgorithm, LockClient, NodeCtx, Outcome, Validity,
};
use rand::Rng;

use crate::knobs::{Knob, Knobs};
use crate::lockserver::{self, drift_allowance, Req, Resp, ServerConfig};

/// Knobs of `redlock`.
pub const KNOBS: &[Knob] = &[
    Knob {
        key: "masters",
        default: "5",
        help: "number of independent masters (1 to 15)",
    },
    Knob {
        key: "clock",
        default: "wall",
        help: "clock that judges TTL expiry on the masters: wall | mono",
    },
    Knob {
        key: "fsync",
        default: "never",
        help: "masters persist lock state: never | always",
    },
    Knob {
        key: "delayed_restart",
        default: "false",
        help: "a restarted master refuses requests for one TTL",
    },
    Knob {
        key: "timeout",
        default: "50ms",
        help: "per-master request timeout: the Redis docs' algorithm, step 2, a timeout small against the lease (5-50 ms for a 10 s auto-release); redlock-py and node-redlock set none of their own (redis-py's or ioredis' client: none by default)",
    },
    crate::knobs::RELEASE,
    crate::knobs::CLIENT_CLOCK,
    crate::knobs::DRIFT_FACTOR,
];

/// The Redlock algorithm.
#[derive(Debug, Clone)]
pub struct Redlock {
    masters: u32,
    server: ServerConfig,
    timeout: Nanos,
    drift_ppm: u64,
    client_clock: LocalClock,
}

impl Redlock {
    /// Builds Redlock from its knobs; `workload.ttl` is the "maximum TTL" of delayed restart.
    ///
    /// # Errors
    /// A message naming a bad or unknown knob.
    pub fn from_config(
        config: &BTreeMap<String, String>,
        workload: &Workload,
    ) -> Result<Self, String> {
        let k = Knobs::new("redlock", config, KNOBS)?;
        let restart_delay = if k.flag("delayed_restart")? {
            workload.max_ttl()
        } else {
            0
        };
        let drift_ppm = k.fraction_ppm("drift_factor")?;
        crate::knobs::check_ttl("redlock", workload.min_ttl(), drift_ppm)?;
        Ok(Redlock {
            masters: k.int("masters", 1..=15)?,
            server: ServerConfig::from_knobs(&k, false, restart_delay)?,
            timeout: k.duration("timeout")?,
            drift_ppm,
            client_clock: crate::knobs::local_clock(&k, "client_clock")?,
        })
    }

    fn quorum(&self) -> u32 {
        self.masters / 2 + 1
    }
}

struct Client {
    ctx: NodeCtx,
    cfg: Redlock,
}

impl Client {
    /// Sends `req(master)` to every master in turn; returns (yes answers, timeouts).
    async fn each_master(&self, req: impl Fn() -> Req, yes: impl Fn(&Resp) -> bool) -> (u32, u32) {
        let (mut ok, mut unknown) = (0, 0);
        for m in 0..self.cfg.masters {
            match self.ctx.call::<Req, Resp>(m, req(), self.cfg.timeout).await {
                Ok(r) if yes(&r) => ok += 1,
                Ok(_) => {}
                Err(e) if e.maybe_delivered() => unknown += 1,
                // Refused: that master surely did not see the request.
                Err(_) => {}
            }
        }
        (ok, unknown)
    }

    /// Validity time `TTL − elapsed − drift` (ns, may be negative) and the deadline
    /// `now + validity` on the client's clock. With a wall clock, a backward step during the
    /// acquisition makes `elapsed` negative and the validity longer than the TTL.
    fn validity(&self, start: i64, ttl: Nanos) -> (i128, Validity) {
        let now = self.ctx.now(self.cfg.client_clock);
        let elapsed = now as i128 - start as i128;
        let drift = drift_allowance(ttl, self.cfg.drift_ppm);
        let validity = ttl as i128 - elapsed - drift as i128;
        let until = (now as i128 + validity).clamp(i64::MIN as i128, i64::MAX as i128) as i64;
        (
            validity,
            Validity {
                clock: self.cfg.client_clock,
                until,
            },
        )
    }

    fn now(&self) -> i64 {
        self.ctx.now(self.cfg.client_clock)
    }
}

#[async_trait(?Send)]
impl LockClient for Client {
    async fn acquire(&self, key: u32, ttl: Nanos) -> Outcome<Grant> {
        let owner: u64 = self.ctx.rng().gen();
        let start = self.now();
        let (ok, _) = self
            .each_master(
                || Req::Acquire { key, owner, ttl },
                |r| matches!(r, Resp::Granted { .. }),
            )
            .await;
        let (validity, deadline) = self.validity(start, ttl);
        if ok >= self.cfg.quorum() && validity > 0 {
            return Outcome::Ok(Grant {
                key,
                token: None,
                valid_until: Some(deadline),
                private: Rc::new(owner),
            });
        }
        // Failed: unlock every master, including those that may have said yes unseen.
        self.each_master(|| Req::Release { key, owner }, |r| *r == Resp::Done)
            .await;
        Outcome::Fail(format!(
            "{ok} of {} masters, validity {}",
            self.cfg.masters,
            locksim_core::time::fmt_nanos(validity)
        ))
    }

    async fn release(&self, grant: &Grant) -> Outcome<()> {
        let (key, owner) = (
            grant.key,
            *grant.private.downcast_ref::<u64>().expect("redlock grant"),
        );
        let (ok, unknown) = self
            .each_master(|| Req::Release { key, owner }, |r| *r == Resp::Done)
            .await;
        if ok > 0 {
            Outcome::Ok(())
        } else if unknown == 0 {
            Outcome::Fail("no master held the lock any more".into())
        } else {
            Outcome::Unknown(format!("{unknown} masters did not answer"))
        }
    }

    async fn extend(&self, grant: &Grant, ttl: Nanos) -> Outcome<Option<Validity>> {
        let (key, owner) = (
            grant.key,
            *grant.private.downcast_ref::<u64>().expect("redlock grant"),
        );
        let start = self.now();
        let (ok, unknown) = self
            .each_master(|| Req::Extend { key, owner, ttl }, |r| *r == Resp::Done)
            .await;
        let (validity, deadline) = self.validity(start, ttl);
        if ok >= self.cfg.quorum() && validity > 0 {
            Outcome::Ok(Some(deadline))
        } else if ok + unknown >= self.cfg.quorum() {
            Outcome::Unknown(format!(
                "{ok} of {} masters extended, {unknown} unknown",
                self.cfg.masters
            ))
        } else {
            Outcome::Fail(format!("{ok} of {} masters extended", self.cfg.masters))
        }
    }
}

#[async_trait(?Send)]
impl LockAlgorithm for Redlock {
    fn name(&self) -> &str {
        "redlock"
    }
    fn servers(&self) -> u32 {
        self.masters
    }
    async fn serve(&self, ctx: NodeCtx) {
        lockserver::serve(ctx, self.server).await;
    }
    fn liveness(&self) -> locksim_sim::LivenessHints {
        // Masters are asked in turn, each with its own timeout.
        locksim_sim::LivenessHints {
            lock_delay: 0,
            attempt: Some(self.timeout * self.masters as u64),
            election: 0,
        }
    }
    fn client(&self, ctx: NodeCtx) -> Rc<dyn LockClient> {
        let mut cfg = self.clone();
        cfg.client_clock = ctx.client_clock(cfg.client_clock);
        Rc::new(Client { ctx, cfg })
    }
}
