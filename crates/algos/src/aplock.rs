//! `ap-lock`: a replicated lock that favours availability over consistency, as several data
//! grids' locks did before they moved to a consensus subsystem (Hazelcast's `ILock` before its
//! CP Subsystem, per Hazelcast's documentation). Every member keeps its own lock table, answers
//! from it, and copies each change to the other members in the background, last writer wins.
//! Clients ask the first member and fail over to the next one when it does not answer (so
//! without faults every request goes through one member and the lock is safe). Each grant carries a fencing token from the member's
//! counter, which replication pushes up on the others.
//!
//! This is case K6 of `shared/cases/CASES.md`: split the members and each side grants the same
//! lock (S1), and since each side counts its own tokens, fencing does not save the resource (S2).
//! Even without faults two members can grant one key within the replication delay.

use std::collections::BTreeMap;
use std::rc::Rc;

use locksim_core::history::EventKind;
use locksim_core::{Nanos, Workload};
use locksim_sim::{
    async_trait, Grant, LocalClock, LockAlgorithm, LockClient, NodeCtx, Outcome, Validity,
};
use rand::Rng;

use crate::knobs::{Knob, Knobs};
use crate::lockserver::valid_until;

/// Knobs of `ap-lock`.
pub const KNOBS: &[Knob] = &[
    Knob {
        key: "members",
        default: "5",
        help: "number of members, each with its own copy of the lock table (1 to 15)",
    },
    Knob {
        key: "timeout",
        default: "100ms",
        help: "client's per-request timeout before it fails over to the next member",
    },
    Knob {
        key: "client_clock",
        default: "mono",
        help: "clock the client measures validity with: mono | wall",
    },
    crate::knobs::DRIFT_FACTOR,
];

/// Messages to a member.
#[derive(Debug, Clone)]
pub enum Req {
    /// Take `key` for `owner` with a lease of `ttl` ns if it is free here.
    Acquire { key: u32, owner: u64, ttl: Nanos },
    /// Free `key` if `owner` holds it here.
    Release { key: u32, owner: u64 },
    /// Renew `key` for `ttl` ns if `owner` holds it here.
    Extend { key: u32, owner: u64, ttl: Nanos },
    /// Another member's change: `key` is now held by `owner` for `ttl` more ns (or free, with
    /// `None`), and its token counter reached `token`.
    Replicate {
        key: u32,
        held: Option<(u64, Nanos)>,
        token: u64,
    },
}

/// A member's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resp {
    /// Granted with this token.
    Granted { token: u64 },
    /// Held by someone else here.
    Held,
    /// Released or extended.
    Done,
    /// Not held by this owner here.
    NotOwner,
}

/// The `ap-lock` algorithm.
#[derive(Debug, Clone)]
pub struct ApLock {
    members: u32,
    timeout: Nanos,
    drift_ppm: u64,
    client_clock: LocalClock,
}

impl ApLock {
    /// Builds `ap-lock` from its knobs.
    ///
    /// # Errors
    /// A message naming a bad or unknown knob.
    pub fn from_config(
        config: &BTreeMap<String, String>,
        workload: &Workload,
    ) -> Result<Self, String> {
        let k = Knobs::new("ap-lock", config, KNOBS)?;
        let drift_ppm = k.fraction_ppm("drift_factor")?;
        crate::knobs::check_ttl("ap-lock", workload.min_ttl(), drift_ppm)?;
        Ok(ApLock {
            members: k.int("members", 1..=15)?,
            timeout: k.duration("timeout")?,
            drift_ppm,
            client_clock: crate::knobs::local_clock(&k, "client_clock")?,
        })
    }
}

async fn serve(ctx: NodeCtx, members: u32) {
    // key → (owner, expiry on this member's monotonic clock)
    let mut table: BTreeMap<u32, (u64, i64)> = BTreeMap::new();
    let mut next_token: u64 = 1;
    loop {
        let msg = ctx.recv().await;
        let Some(req) = msg.body.downcast_ref::<Req>().cloned() else {
            continue;
        };
        let now = ctx.mono_now() as i64;
        let live =
            |t: &BTreeMap<u32, (u64, i64)>, key: u32| t.get(&key).filter(|e| now < e.1).copied();
        let mut change: Option<(u32, Option<(u64, Nanos)>)> = None;
        let resp = match req {
            Req::Replicate { key, held, token } => {
                match held {
                    Some((owner, ttl)) => table.insert(key, (owner, now + ttl as i64)),
                    None => table.remove(&key),
                };
                next_token = next_token.max(token);
                continue;
            }
            Req::Acquire { key, owner, ttl } => match live(&table, key) {
                Some(_) => Resp::Held,
                None => {
                    table.insert(key, (owner, now + ttl as i64));
                    let token = next_token;
                    next_token += 1;
                    change = Some((key, Some((owner, ttl))));
                    ctx.record(EventKind::Grant {
                        key,
                        client: msg.from,
                        token: Some(token),
                    });
                    Resp::Granted { token }
                }
            },
            Req::Release { key, owner } => match live(&table, key) {
                Some((o, _)) if o == owner => {
                    table.remove(&key);
                    change = Some((key, None));
                    Resp::Done
                }
                _ => Resp::NotOwner,
            },
            Req::Extend { key, owner, ttl } => match live(&table, key) {
                Some((o, _)) if o == owner => {
                    table.insert(key, (owner, now + ttl as i64));
                    change = Some((key, Some((owner, ttl))));
                    Resp::Done
                }
                _ => Resp::NotOwner,
            },
        };
        ctx.reply(&msg, resp).await;
        if let Some((key, held)) = change {
            for m in (0..members).filter(|&m| m != ctx.id()) {
                let r = Req::Replicate {
                    key,
                    held,
                    token: next_token,
                };
                ctx.send(m, r).await;
            }
        }
    }
}

struct Client {
    ctx: NodeCtx,
    cfg: ApLock,
}

impl Client {
    /// `start + TTL − drift` on the client's clock.
    fn deadline(&self, start: i64, ttl: Nanos) -> Validity {
        Validity {
            clock: self.cfg.client_clock,
            until: valid_until(start, ttl, self.cfg.drift_ppm),
        }
    }

    /// Asks the first member, then the others in turn, until one answers.
    async fn ask(&self, req: Req) -> Option<Resp> {
        for to in 0..self.cfg.members {
            if let Ok(r) = self
                .ctx
                .call::<Req, Resp>(to, req.clone(), self.cfg.timeout)
                .await
            {
                return Some(r);
            }
        }
        None
    }
}

#[async_trait(?Send)]
impl LockClient for Client {
    async fn acquire(&self, key: u32, ttl: Nanos) -> Outcome<Grant> {
        let owner: u64 = self.ctx.rng().gen();
        let start = self.ctx.now(self.cfg.client_clock);
        match self.ask(Req::Acquire { key, owner, ttl }).await {
            Some(Resp::Granted { token }) => Outcome::Ok(Grant {
                key,
                token: Some(token),
                valid_until: Some(self.deadline(start, ttl)),
                private: Rc::new(owner),
            }),
            Some(Resp::Held) => Outcome::Fail("held by another client".into()),
            Some(other) => Outcome::Fail(format!("member answered {other:?}")),
            None => Outcome::Unknown("no member answered".into()),
        }
    }

    async fn release(&self, grant: &Grant) -> Outcome<()> {
        let owner = *grant
            .private
            .downcast_ref::<u64>()
            .expect("an ap-lock grant");
        match self
            .ask(Req::Release {
                key: grant.key,
                owner,
            })
            .await
        {
            Some(Resp::Done) => Outcome::Ok(()),
            Some(_) => Outcome::Fail("not the owner here".into()),
            None => Outcome::Unknown("no member answered".into()),
        }
    }

    async fn extend(&self, grant: &Grant, ttl: Nanos) -> Outcome<Option<Validity>> {
        let owner = *grant
            .private
            .downcast_ref::<u64>()
            .expect("an ap-lock grant");
        let start = self.ctx.now(self.cfg.client_clock);
        match self
            .ask(Req::Extend {
                key: grant.key,
                owner,
                ttl,
            })
            .await
        {
            Some(Resp::Done) => Outcome::Ok(Some(self.deadline(start, ttl))),
            Some(_) => Outcome::Fail("not the owner here".into()),
            None => Outcome::Unknown("no member answered".into()),
        }
    }
}

#[async_trait(?Send)]
impl LockAlgorithm for ApLock {
    fn name(&self) -> &str {
        "ap-lock"
    }
    fn servers(&self) -> u32 {
        self.members
    }
    async fn serve(&self, ctx: NodeCtx) {
        serve(ctx, self.members).await;
    }
    fn liveness(&self) -> locksim_sim::LivenessHints {
        // Members are asked in turn until one answers.
        locksim_sim::LivenessHints {
            lock_delay: 0,
            attempt: Some(self.timeout * self.members as u64),
            election: 0,
        }
    }
    fn client(&self, ctx: NodeCtx) -> Rc<dyn LockClient> {
        let mut cfg = self.clone();
        cfg.client_clock = ctx.client_clock(cfg.client_clock);
        Rc::new(Client { ctx, cfg })
    }
}
