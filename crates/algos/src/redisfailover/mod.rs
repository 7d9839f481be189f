//! `redis-failover`: one Redis primary, `replicas` asynchronous replicas and a Sentinel-like
//! monitor that promotes a replica when the primary stays unreachable. The lock is the
//! single-instance Redis lock (`SET key owner NX PX ttl` on the primary, compare-and-delete to
//! release, compare-and-`PEXPIRE` to renew) that most deployments run against a replicated
//! Redis.
//!
//! What it reproduces, with sources:
//! - **Asynchronous replication** (redis.io, "Redis replication": "Redis uses by default
//!   asynchronous replication"): the primary answers the client first and ships each write to
//!   every replica `repl_delay` later, in order (a write never overtakes the one before it, so
//!   a lag of 2 s holds for every write); a write the primary had not shipped when it died is
//!   gone. Each shipment is the primary's state at replication offset `o` (the same as
//!   applying its commands in order up to `o`), and replicas acknowledge the offsets they
//!   have (`REPLCONF ACK`). Every 100 ms the primary re-sends each replica what it has shipped
//!   to it so far, never anything newer, as a replica's reconnection and partial resync from
//!   the backlog recover lost stream bytes; a replica shipped nothing yet in the primary's
//!   incarnation (the start, a restarted primary, a new primary) gets a full sync of the
//!   data set as it is.
//! - **Failover** (redis.io, "High availability with Redis Sentinel"; redis `src/sentinel.c`):
//!   the monitor pings every data node every 100 ms and, once the primary has been
//!   unreachable for `down_after` (`down-after-milliseconds`), promotes a replica (`promote`:
//!   Sentinel picks the one with the largest replication offset; `any` picks a reachable one
//!   at random). It sees the promotion at that replica's next `INFO`, one second after the
//!   failover began (the INFO period during a failover), and only then bumps the configuration epoch, tells clients the new primary and
//!   sends `REPLICAOF` to the replicas it can reach. A node it considers down is sent nothing:
//!   a returning old primary (paused, cut off or restarted) stays a primary and keeps granting
//!   until the monitor converts it, at an `INFO` more than 8 s after it first reported the
//!   wrong role (about 10 s after it returns, as measured on Redis 7.0 Sentinel); then it
//!   full-syncs, losing the writes it took meanwhile (the Sentinel documentation's "Example 2"
//!   of lost writes). The rules, with their sources, are in `monitor.rs`.
//! - **Restart empty** (redis.io, "Redis replication", "Safety of replication when master has
//!   persistence turned off"): without persistence (`fsync = never`, no AOF) a primary that
//!   restarts before the failover comes back empty, still primary, and its replicas full-sync
//!   the empty data set. `fsync = always` is `appendfsync always`. The nodes' role and epoch
//!   are always on disk (Sentinel rewrites the configuration files).
//! - **`WAIT`** (redis.io, command `WAIT numreplicas timeout`): with `wait_replicas = n` the
//!   client follows each `SET` and renewal with `WAIT n` and treats a shortfall as a failed
//!   acquire; the Redis "Distributed Locks" page names asynchronous replication as the reason a
//!   failover-based lock is unsafe, and `WAIT` makes every acknowledged grant survive the
//!   promotion of any replica that acknowledged it.
//! - **Clients** ask the monitor which node is the primary (Sentinel's
//!   `SENTINEL get-master-addr-by-name`) and keep using the answer until a request fails or a
//!   replica answers `READONLY`: they may talk to a stale primary until told.
//! - **Fencing** (`fencing = true`): a token counter kept on the primary in the same data set
//!   (an `INCR` beside the `SET`), replicated the same way, so its survival across a failover
//!   is exactly as good as the key's.
//! - **Client defaults**: the request timeout is 100 ms, Redisson's ratio at the default 1 s
//!   `ttl` (its 3000 ms command timeout against its 30 s watchdog lease); there is no
//!   renewal by default, as redis-py's `Lock` has none. Redisson's watchdog renews every
//!   third of its lease (`renew_every = ttl/3` in a file), but silently: a renewal that fails
//!   is retried and the holder is never told (redisson `renewal/RenewalTask`), where
//!   locksim's renewals tell the holder, so that setting is kinder than Redisson.
//!
//! One monitor node stands for the Sentinel quorum (the `sentinels` of the issue are not
//! modelled: one Sentinel with quorum 1). Node layout: `n1` is the first primary,
//! `n2..n(replicas+1)` the replicas, the last server the monitor.

mod client;
mod monitor;
mod node;

use std::collections::BTreeMap;
use std::rc::Rc;

use locksim_core::{Nanos, NodeId, Workload};
use locksim_sim::{async_trait, LocalClock, LockAlgorithm, LockClient, NodeCtx};

use crate::knobs::{Knob, Knobs};

/// Knobs of `redis-failover`.
pub const KNOBS: &[Knob] = &[
    Knob {
        key: "replicas",
        default: "2",
        help: "asynchronous replicas of the primary (1 to 6)",
    },
    Knob {
        key: "repl_delay",
        default: "1ms..50ms",
        help: "replication lag: the primary ships each write to each replica this long after applying it, in order (no write overtakes an earlier one), drawn uniformly per write and replica: MIN..MAX (or one duration)",
    },
    Knob {
        key: "down_after",
        default: "5s",
        help: "the monitor promotes a replica after the primary has not answered its pings for this long (Sentinel's down-after-milliseconds); a returning old primary is converted about 10 s after it returns (sentinel.c: an INFO more than 8 s after its wrong role was first reported)",
    },
    Knob {
        key: "promote",
        default: "most-up-to-date",
        help: "which reachable replica the monitor promotes: most-up-to-date (largest replication offset, as Sentinel) | any",
    },
    Knob {
        key: "wait_replicas",
        default: "0",
        help: "0: plain SET; n: the client sends WAIT n after each SET and renewal and treats a shortfall as a failure",
    },
    Knob {
        key: "wait_timeout",
        default: "100ms",
        help: "WAIT's timeout on the primary",
    },
    Knob {
        key: "fencing",
        default: "false",
        help: "issue a fencing token from a counter in the primary's data set, replicated like the key",
    },
    Knob {
        key: "fsync",
        default: "never",
        help: "persist the data set on every change: never (no AOF, Redis' default) | always (appendfsync always)",
    },
    Knob {
        key: "timeout",
        default: "100ms",
        help: "client's per-request timeout (WAIT's timeout is added to it); 100ms is Redisson's ratio at the default 1s ttl (its 3000 ms command timeout against a 30 s watchdog lease: ttl/10); redis-py 6.x-7.x sets none, 8.x 5 s",
    },
    crate::knobs::RELEASE,
    crate::knobs::CLIENT_CLOCK,
    crate::knobs::DRIFT_FACTOR,
];

/// Which replica the monitor promotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Promote {
    /// The reachable replica with the largest replication offset (Sentinel's choice).
    MostUpToDate,
    /// A reachable replica chosen at random from the monitor's seeded stream.
    Any,
}

/// The `redis-failover` algorithm.
#[derive(Debug, Clone)]
pub struct RedisFailover {
    pub(crate) replicas: u32,
    /// Replication delay bounds, ns.
    pub(crate) repl_delay: (Nanos, Nanos),
    pub(crate) down_after: Nanos,
    pub(crate) promote: Promote,
    pub(crate) wait_replicas: u32,
    pub(crate) wait_timeout: Nanos,
    pub(crate) fencing: bool,
    pub(crate) release: crate::knobs::ReleaseMode,
    pub(crate) fsync: bool,
    pub(crate) timeout: Nanos,
    pub(crate) drift_ppm: u64,
    pub(crate) client_clock: LocalClock,
}

/// Parses `MIN..MAX` (or one duration) into ns bounds.
pub(crate) fn parse_range(name: &str, key: &str, v: &str) -> Result<(Nanos, Nanos), String> {
    let one = |s: &str| match locksim_core::time::parse_duration(s) {
        Ok(d) if d >= 0 => Ok(d as Nanos),
        Ok(_) => Err(format!("{name}: `{key}={v}`: durations are never negative")),
        Err(e) => Err(format!("{name}: `{key}={v}`: {e}")),
    };
    let (lo, hi) = match v.split_once("..") {
        Some((a, b)) => (one(a)?, one(b)?),
        None => {
            let d = one(v)?;
            (d, d)
        }
    };
    if lo > hi {
        return Err(format!("{name}: `{key}={v}`: MIN is above MAX"));
    }
    Ok((lo, hi))
}

impl RedisFailover {
    /// Builds `redis-failover` from its knobs, for clients asking for leases of
    /// `workload.ttl`.
    ///
    /// # Errors
    /// A message naming a bad or unknown knob, or a `wait_replicas` above `replicas`.
    pub fn from_config(
        config: &BTreeMap<String, String>,
        workload: &Workload,
    ) -> Result<Self, String> {
        let name = "redis-failover";
        let k = Knobs::new(name, config, KNOBS)?;
        let drift_ppm = k.fraction_ppm("drift_factor")?;
        crate::knobs::check_ttl(name, workload.min_ttl(), drift_ppm)?;
        let replicas = k.int("replicas", 1..=6)?;
        let wait_replicas = k.int("wait_replicas", 0..=6)?;
        if wait_replicas > replicas {
            return Err(format!(
                "{name}: `wait_replicas={wait_replicas}` is more than the {replicas} replicas: every WAIT would fall short"
            ));
        }
        let raw = config
            .get("repl_delay")
            .map(String::as_str)
            .unwrap_or(KNOBS[1].default);
        Ok(RedisFailover {
            replicas,
            repl_delay: parse_range(name, "repl_delay", raw)?,
            down_after: k.duration("down_after")?,
            promote: match k.choice("promote", &["most-up-to-date", "any"])? {
                "any" => Promote::Any,
                _ => Promote::MostUpToDate,
            },
            wait_replicas,
            wait_timeout: k.duration("wait_timeout")?,
            fencing: k.flag("fencing")?,
            release: crate::knobs::release_mode(&k)?,
            fsync: k.choice("fsync", &["never", "always"])? == "always",
            timeout: k.duration("timeout")?,
            drift_ppm,
            client_clock: crate::knobs::local_clock(&k, "client_clock")?,
        })
    }

    /// The monitor's node id (the last server).
    pub(crate) fn monitor(&self) -> NodeId {
        self.replicas + 1
    }

    /// The data nodes: the first primary and its replicas.
    pub(crate) fn data_nodes(&self) -> std::ops::Range<NodeId> {
        0..self.replicas + 1
    }

    /// One request's timeout: the client's, plus WAIT's when the client waits.
    pub(crate) fn request_timeout(&self) -> Nanos {
        self.timeout
            + if self.wait_replicas > 0 {
                self.wait_timeout
            } else {
                0
            }
    }
}

#[async_trait(?Send)]
impl LockAlgorithm for RedisFailover {
    fn name(&self) -> &str {
        "redis-failover"
    }
    fn servers(&self) -> u32 {
        self.replicas + 2
    }
    async fn serve(&self, ctx: NodeCtx) {
        if ctx.id() == self.monitor() {
            monitor::serve(ctx, self.clone()).await;
        } else {
            node::serve(ctx, self.clone()).await;
        }
    }
    fn liveness(&self) -> locksim_sim::LivenessHints {
        // An attempt may first ask the monitor for the primary, then send the request.
        locksim_sim::LivenessHints {
            lock_delay: 0,
            attempt: Some(self.timeout + self.request_timeout()),
            election: 0,
        }
    }
    fn client(&self, ctx: NodeCtx) -> Rc<dyn LockClient> {
        let mut cfg = self.clone();
        cfg.client_clock = ctx.client_clock(cfg.client_clock);
        Rc::new(client::Client::new(ctx, cfg))
    }
}

#[cfg(test)]
mod tests;
