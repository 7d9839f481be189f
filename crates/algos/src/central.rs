//! `central` and `central-fencing`: one lock server with SET-if-absent-with-TTL semantics (a
//! single Redis), an owner value per acquire, release only by the owner (or, with
//! `release = "delete"`, a plain `DEL key` that deletes whoever's lock it finds: the bug the
//! Redis docs' compare-and-delete script exists to prevent), the TTL judged by the server's own
//! clock. The acquire is the atomic `SET key owner NX PX ttl`, or with `acquire = "setnx-expire"`
//! the two-step `SETNX` then `EXPIRE` of older lock code, whose key has no expiry until the
//! second command lands ([`crate::knobs::ACQUIRE`]). `central-fencing` also issues a strictly increasing fencing token with
//! each grant, which the resource checks (Kleppmann, "How to do distributed locking", 2016).
//!
//! The client computes a validity deadline as Redlock does, `start + TTL − drift`, with
//! `drift = TTL·drift_factor + 2 ms`, measured on its monotonic clock from before the request.

use std::rc::Rc;

use locksim_core::Nanos;
use locksim_sim::{
    async_trait, Grant, LocalClock, LockAlgorithm, LockClient, NodeCtx, Outcome, Validity,
};
use rand::Rng;

use crate::knobs::{AcquireMode, Knob, Knobs};
use crate::lockserver::{self, valid_until, Req, Resp, ServerConfig};

/// Knobs of `central` and `central-fencing`.
pub const KNOBS: &[Knob] = &[
    Knob {
        key: "clock",
        default: "wall",
        help: "clock that judges TTL expiry on the server: wall | mono",
    },
    Knob {
        key: "fsync",
        default: "never",
        help: "persist lock state (and the token counter): never | always",
    },
    Knob {
        key: "timeout",
        default: "100ms",
        help: "client's per-request timeout (a duration, or none); the Redis lock docs ask for one small against the lease (5-50 ms for a 10 s auto-release); redis-py sets none before 8.0 and 5 s since",
    },
    crate::knobs::RELEASE,
    crate::knobs::ACQUIRE,
    crate::knobs::CLIENT_CLOCK,
    crate::knobs::DRIFT_FACTOR,
];

/// The central lock.
#[derive(Debug, Clone)]
pub struct Central {
    name: &'static str,
    server: ServerConfig,
    timeout: Nanos,
    drift_ppm: u64,
    client_clock: LocalClock,
    acquire: AcquireMode,
}

impl Central {
    /// Builds `central` (`fencing = false`) or `central-fencing` from its knobs, for clients
    /// asking for leases of `workload.ttl`.
    ///
    /// # Errors
    /// A message naming a bad or unknown knob.
    pub fn from_config(
        fencing: bool,
        config: &std::collections::BTreeMap<String, String>,
        workload: &locksim_core::Workload,
    ) -> Result<Self, String> {
        let name = if fencing {
            "central-fencing"
        } else {
            "central"
        };
        let k = Knobs::new(name, config, KNOBS)?;
        let drift_ppm = k.fraction_ppm("drift_factor")?;
        crate::knobs::check_ttl(name, workload.min_ttl(), drift_ppm)?;
        Ok(Central {
            name,
            server: ServerConfig::from_knobs(&k, fencing, 0)?,
            timeout: k.timeout("timeout")?,
            drift_ppm,
            client_clock: crate::knobs::local_clock(&k, "client_clock")?,
            acquire: crate::knobs::acquire_mode(&k)?,
        })
    }
}

struct Client {
    ctx: NodeCtx,
    cfg: Central,
}

impl Client {
    /// `start + TTL − drift` on the client's clock.
    fn deadline(&self, start: i64, ttl: Nanos) -> Validity {
        Validity {
            clock: self.cfg.client_clock,
            until: valid_until(start, ttl, self.cfg.drift_ppm),
        }
    }
}

#[async_trait(?Send)]
impl LockClient for Client {
    async fn acquire(&self, key: u32, ttl: Nanos) -> Outcome<Grant> {
        let owner: u64 = self.ctx.rng().gen();
        let start = self.ctx.now(self.cfg.client_clock);
        let req = match self.cfg.acquire {
            AcquireMode::Atomic => Req::Acquire { key, owner, ttl },
            AcquireMode::SetNxExpire => Req::SetNx { key, owner },
        };
        let mut answer = self.ctx.call::<Req, Resp>(0, req, self.cfg.timeout).await;
        if let (AcquireMode::SetNxExpire, Ok(Resp::Granted { token })) = (self.cfg.acquire, &answer)
        {
            // The second command, `EXPIRE key ttl`: until it lands the key has no expiry.
            let token = *token;
            let expire = Req::Extend { key, owner, ttl };
            answer = match self
                .ctx
                .call::<Req, Resp>(0, expire, self.cfg.timeout)
                .await
            {
                Ok(Resp::Done) => Ok(Resp::Granted { token }),
                Ok(Resp::NotOwner) => {
                    return Outcome::Fail("EXPIRE found the key gone".into());
                }
                other => other,
            };
        }
        match answer {
            Ok(Resp::Granted { token }) => Outcome::Ok(Grant {
                key,
                token,
                valid_until: Some(self.deadline(start, ttl)),
                private: Rc::new(owner),
            }),
            Ok(Resp::Held) => Outcome::Fail("held by another client".into()),
            Ok(other) => Outcome::Fail(format!("server answered {other:?}")),
            Err(e) => crate::lockserver::call_failed(e),
        }
    }

    async fn release(&self, grant: &Grant) -> Outcome<()> {
        let owner = *grant.private.downcast_ref::<u64>().expect("central grant");
        let req = Req::Release {
            key: grant.key,
            owner,
        };
        match self.ctx.call::<Req, Resp>(0, req, self.cfg.timeout).await {
            Ok(Resp::Done) => Outcome::Ok(()),
            Ok(Resp::NotOwner) => Outcome::Fail("not the owner (lease expired)".into()),
            Ok(other) => Outcome::Fail(format!("server answered {other:?}")),
            Err(e) => crate::lockserver::call_failed(e),
        }
    }

    async fn extend(&self, grant: &Grant, ttl: Nanos) -> Outcome<Option<Validity>> {
        let owner = *grant.private.downcast_ref::<u64>().expect("central grant");
        let start = self.ctx.now(self.cfg.client_clock);
        let req = Req::Extend {
            key: grant.key,
            owner,
            ttl,
        };
        match self.ctx.call::<Req, Resp>(0, req, self.cfg.timeout).await {
            Ok(Resp::Done) => Outcome::Ok(Some(self.deadline(start, ttl))),
            Ok(Resp::NotOwner) => Outcome::Fail("not the owner (lease expired)".into()),
            Ok(other) => Outcome::Fail(format!("server answered {other:?}")),
            Err(e) => crate::lockserver::call_failed(e),
        }
    }
}

#[async_trait(?Send)]
impl LockAlgorithm for Central {
    fn name(&self) -> &str {
        self.name
    }
    fn servers(&self) -> u32 {
        1
    }
    async fn serve(&self, ctx: NodeCtx) {
        lockserver::serve(ctx, self.server).await;
    }
    fn liveness(&self) -> locksim_sim::LivenessHints {
        locksim_sim::LivenessHints {
            lock_delay: 0,
            // The two-step acquire is two requests, each with its timeout.
            attempt: Some(match self.acquire {
                AcquireMode::Atomic => locksim_sim::finite(self.timeout),
                AcquireMode::SetNxExpire => locksim_sim::finite(self.timeout).saturating_mul(2),
            }),
            election: 0,
        }
    }
    fn client(&self, ctx: NodeCtx) -> Rc<dyn LockClient> {
        let mut cfg = self.clone();
        cfg.client_clock = ctx.client_clock(cfg.client_clock);
        Rc::new(Client { ctx, cfg })
    }
}
