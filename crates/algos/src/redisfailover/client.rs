//! The client library of `redis-failover`: finds the primary through the monitor, keeps using
//! it until a request fails or a replica answers `READONLY`, and runs the single-instance lock
//! against it (with `WAIT` when configured).

use std::cell::Cell;
use std::rc::Rc;

use locksim_core::{Nanos, NodeId};
use locksim_sim::{async_trait, Grant, LockClient, NodeCtx, Outcome, Validity};
use rand::Rng;

use super::monitor::{PrimaryIs, WhoIsPrimary};
use super::node::{Cmd, Reply};
use super::RedisFailover;
use crate::lockserver::{call_failed, valid_until};

pub(crate) struct Client {
    ctx: NodeCtx,
    cfg: RedisFailover,
    /// The primary as last told by the monitor; `None`: ask before the next request.
    primary: Cell<Option<NodeId>>,
    /// [`NodeCtx::connection_ends`] towards the cached primary when it was cached: a
    /// connection to it that ended since (its process was killed, say) sends the next request
    /// through a new one, and a Sentinel client asks Sentinel before it connects (redis-py's
    /// `SentinelManagedConnection.connect` looks the primary up on every connect), rather
    /// than reaching whatever process listens at the old primary's address now.
    ends_seen: Cell<u64>,
}

impl Client {
    pub(crate) fn new(ctx: NodeCtx, cfg: RedisFailover) -> Self {
        Client {
            ctx,
            cfg,
            primary: Cell::new(None),
            ends_seen: Cell::new(0),
        }
    }

    /// The primary to talk to: the cached one while its connection lasts, else the monitor's
    /// answer, else (monitor unreachable) the first primary.
    async fn primary(&self) -> NodeId {
        if let Some(p) = self.primary.get() {
            if self.ctx.connection_ends(p) == self.ends_seen.get() {
                return p;
            }
        }
        let asked = self
            .ctx
            .call::<WhoIsPrimary, PrimaryIs>(self.cfg.monitor(), WhoIsPrimary, self.cfg.timeout)
            .await;
        match asked {
            Ok(PrimaryIs { node, .. }) => {
                self.primary.set(Some(node));
                self.ends_seen.set(self.ctx.connection_ends(node));
                node
            }
            Err(_) => 0,
        }
    }

    async fn command(&self, cmd: Cmd) -> Result<Reply, locksim_sim::CallError> {
        let p = self.primary().await;
        let r = self
            .ctx
            .call::<Cmd, Reply>(p, cmd, self.cfg.request_timeout())
            .await;
        if matches!(r, Err(_) | Ok(Reply::ReadOnly)) {
            self.primary.set(None);
        }
        r
    }

    fn deadline(&self, start: i64, ttl: Nanos) -> Validity {
        Validity {
            clock: self.cfg.client_clock,
            until: valid_until(start, ttl, self.cfg.drift_ppm),
        }
    }

    fn short(&self, acked: u32) -> Option<String> {
        (acked < self.cfg.wait_replicas).then(|| {
            format!(
                "WAIT {}: only {acked} replicas acknowledged",
                self.cfg.wait_replicas
            )
        })
    }
}

fn other<T>(r: Reply) -> Outcome<T> {
    match r {
        Reply::ReadOnly => Outcome::Fail("READONLY: asked a replica".into()),
        Reply::Held => Outcome::Fail("held by another client".into()),
        Reply::NotOwner => Outcome::Fail("not the owner (lease expired)".into()),
        r => Outcome::Fail(format!("server answered {r:?}")),
    }
}

#[async_trait(?Send)]
impl LockClient for Client {
    async fn acquire(&self, key: u32, ttl: Nanos) -> Outcome<Grant> {
        let owner: u64 = self.ctx.rng().gen();
        let start = self.ctx.now(self.cfg.client_clock);
        let cmd = Cmd::Acquire {
            key,
            owner,
            ttl,
            wait: self.cfg.wait_replicas,
        };
        match self.command(cmd).await {
            Ok(Reply::Granted { token, acked }) => match self.short(acked) {
                Some(why) => Outcome::Fail(why),
                None => Outcome::Ok(Grant {
                    key,
                    token,
                    valid_until: Some(self.deadline(start, ttl)),
                    private: Rc::new(owner),
                }),
            },
            Ok(r) => other(r),
            Err(e) => call_failed(e),
        }
    }

    async fn release(&self, grant: &Grant) -> Outcome<()> {
        let owner = *grant.private.downcast_ref::<u64>().expect("redis grant");
        let cmd = Cmd::Release {
            key: grant.key,
            owner,
        };
        match self.command(cmd).await {
            Ok(Reply::Done { .. }) => Outcome::Ok(()),
            Ok(r) => other(r),
            Err(e) => call_failed(e),
        }
    }

    async fn extend(&self, grant: &Grant, ttl: Nanos) -> Outcome<Option<Validity>> {
        let owner = *grant.private.downcast_ref::<u64>().expect("redis grant");
        let start = self.ctx.now(self.cfg.client_clock);
        let cmd = Cmd::Extend {
            key: grant.key,
            owner,
            ttl,
            wait: self.cfg.wait_replicas,
        };
        match self.command(cmd).await {
            Ok(Reply::Done { acked }) => match self.short(acked) {
                Some(why) => Outcome::Fail(why),
                None => Outcome::Ok(Some(self.deadline(start, ttl))),
            },
            Ok(r) => other(r),
            Err(e) => call_failed(e),
        }
    }
}
