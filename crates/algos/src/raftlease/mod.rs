//! `raft-lease`: a lease lock on a Raft-replicated log, as etcd (and, in spirit, Chubby and
//! Hazelcast's CP subsystem) build it, on the `raft` crate (raft-rs, TiKV's port of etcd's Raft).
//!
//! - A client session owns a **lease** (`Grant` through the log) with a TTL and keeps it alive
//!   (every TTL/3, like etcd's `concurrency.Session`). The lease is what ties a lock to a live
//!   client: when it expires on the leader's clock the leader revokes it through the log, which
//!   deletes the keys it owns.
//! - A **lock** on key `k` is a queue of keys `(k, lease)`, each created at a global revision;
//!   waiters are served in creation order (etcd's `v3lock`/`concurrency.Mutex`), and the
//!   holder's creation revision is its **fencing token**, checked by the resource.
//! - **Release** deletes the session's key only if its revision still matches the grant's.
//! - Keep-alives and lock waits are answered only after a ReadIndex round confirms the node
//!   still leads; a new leader gives every lease a full TTL again.
//! - The client measures its validity from the send time of its last acknowledged keep-alive,
//!   `start + TTL − drift` with `drift = TTL·drift_factor + 2 ms`, as Redlock's formula does
//!   (etcd's client closes a session whose keep-alive deadline passed).
//!
//! Three knobs turn on real bugs: `grant_on_expired_lease` (case K2: a waiter whose lease
//! expired while it waited is told it holds the lock), `unlock_by_name` (case K3: a retried
//! unlock deletes the key by name and frees the session's next lock) and `unlock_retry = none`
//! (an unlock that got no answer is neither retried nor followed by closing the session, so a
//! lost unlock leaves the key alive under a session that is still kept alive: etcd's
//! `concurrency.Mutex.Unlock` documents that the lock stays held until the session ends when
//! the delete fails — an orphaned lock, L3).

mod client;
pub mod server;
pub mod state;

use std::collections::BTreeMap;
use std::rc::Rc;

use locksim_core::{Nanos, NodeId, Workload};
use locksim_sim::{async_trait, LocalClock, LockAlgorithm, LockClient, NodeCtx};

use crate::knobs::{Knob, Knobs};

/// Knobs of `raft-lease`.
pub const KNOBS: &[Knob] = &[
    Knob {
        key: "servers",
        default: "3",
        help: "number of Raft replicas (1 to 9)",
    },
    Knob {
        key: "tick",
        default: "20ms",
        help: "Raft tick on each server's monotonic clock (heartbeats go out every tick)",
    },
    Knob {
        key: "election_ticks",
        default: "10",
        help: "election timeout in ticks; each node draws its timeout from [e, 2e) (2 to 1000)",
    },
    Knob {
        key: "fsync",
        default: "always",
        help: "fsync the Raft log and hard state before acknowledging: always | never (a crash then loses the log; raft-rs, like etcd, panics on a follower that lost entries it acknowledged, and the seed is reported as failed to run)",
    },
    Knob {
        key: "clock",
        default: "mono",
        help: "clock that times leases on the leader: mono (Go's monotonic time, as etcd) | wall",
    },
    Knob {
        key: "timeout",
        default: "100ms",
        help: "client's per-request timeout, or none (wait for an answer or the connection's end); 100ms is locksim's careful client: etcd's clientv3 sets none (each request runs under the caller's context)",
    },
    Knob {
        key: "lock_wait",
        default: "3s",
        help: "how long an acquire waits in the lock's queue before giving up",
    },
    Knob {
        key: "client_clock",
        default: "mono",
        help: "clock the client measures its lease validity with: mono | wall",
    },
    crate::knobs::DRIFT_FACTOR,
    Knob {
        key: "grant_on_expired_lease",
        default: "false",
        help:
            "BUG (case K2): tell a waiter it holds the lock without checking its own key survived",
    },
    Knob {
        key: "unlock_by_name",
        default: "false",
        help:
            "BUG (case K3): unlock deletes the session's key by name, not only the granted revision",
    },
    Knob {
        key: "fencing",
        default: "true",
        help: "hand the lock key's creation revision to the resource as the fencing token (etcd's concurrency.Mutex Header().Revision); false: the resource checks none",
    },
    Knob {
        key: "unlock_retry",
        default: "background",
        help: "after an unlock without an answer: background (retry with backoff, then give the session up so the key dies with its lease) | none (BUG: give up at once and keep the session alive, as an application that ignores a failed etcd Mutex.Unlock and keeps its Session: the key outlives the hold, an orphaned lock)",
    },
];

/// A client request to a service node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Req {
    /// Create a lease of `ttl` ns.
    Grant { ttl: Nanos },
    /// Renew `lease` for its TTL.
    KeepAlive { lease: u64 },
    /// Queue for lock `key` under `lease`.
    Lock { key: u32, lease: u64 },
    /// Wait until the key created at `rev` heads lock `key`'s queue (or is gone).
    Wait { key: u32, lease: u64, rev: u64 },
    /// Release lock `key` held with the key created at `rev`.
    Unlock { key: u32, lease: u64, rev: u64 },
    /// End `lease` now.
    Revoke { lease: u64 },
}

/// A service node's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resp {
    /// This node does not lead; try `hint` (the leader it knows of), if any.
    NotLeader { hint: Option<NodeId> },
    /// A lease was created.
    Granted { lease: u64 },
    /// The lease was renewed.
    Alive,
    /// The lease does not exist (expired or revoked).
    LeaseNotFound,
    /// Queued at revision `rev`; `owner` when it already holds the lock.
    Locked { rev: u64, owner: bool },
    /// The waiter at `rev` holds the lock.
    Acquired { rev: u64 },
    /// The waiter's key is gone (its lease expired while it waited).
    Gone,
    /// Unlocked (`found`: a key was deleted).
    Unlocked { found: bool },
    /// The lease was revoked.
    Revoked,
    /// The leader lost its leadership while committing the request: it may or may not take
    /// effect (Consul's "leadership lost while committing log"; see
    /// [`server::ServerConfig::answer_lost`]).
    LeadershipLost,
}

/// The `raft-lease` algorithm (and the core of `consul-session`, which builds it with its own
/// name, keep-alive period, lock-delay and renewal-error policy).
#[derive(Debug, Clone)]
pub struct RaftLease {
    pub(crate) name: &'static str,
    pub(crate) servers: u32,
    pub(crate) server: server::ServerConfig,
    pub(crate) timeout: Nanos,
    pub(crate) lock_wait: Nanos,
    pub(crate) drift_ppm: u64,
    pub(crate) client_clock: LocalClock,
    /// Retry an unlock without an answer in the background (else: the orphan bug).
    pub(crate) unlock_retry: bool,
    /// The session is kept alive every TTL / this between holds (etcd: 3, Consul: 2).
    pub(crate) keepalive_div: u64,
    /// A renewal without an answer: `None` reports it unknown (etcd; the holder's renewal
    /// policy decides); `Some(n)` retries it `n` times, then reports the lock lost (Consul's
    /// `api.Lock` with `MonitorRetries = n`).
    pub(crate) monitor_retries: Option<u32>,
    /// Hand the lock key's creation revision to the resource as the fencing token.
    pub(crate) fencing: bool,
}

impl RaftLease {
    /// Builds `raft-lease` from its knobs, for clients asking for leases of `workload.ttl`.
    ///
    /// # Errors
    /// A message naming a bad or unknown knob, or a TTL no client could use.
    pub fn from_config(
        config: &BTreeMap<String, String>,
        workload: &Workload,
    ) -> Result<Self, String> {
        let name = "raft-lease";
        let k = Knobs::new(name, config, KNOBS)?;
        let drift_ppm = k.fraction_ppm("drift_factor")?;
        crate::knobs::check_ttl(name, workload.min_ttl(), drift_ppm)?;
        let tick = k.duration("tick")?;
        if tick < 1_000_000 {
            return Err(format!(
                "{name}: `tick={}` is below 1ms, the simulator's shortest sleep",
                locksim_core::time::fmt_nanos(tick as i128)
            ));
        }
        let election_ticks = k.int("election_ticks", 2..=1000)? as usize;
        // etcd refuses leases shorter than 1.5 election timeouts: a lease must outlive the
        // election that follows its leader's failure.
        let min_ttl = tick.saturating_mul(election_ticks as u64) * 3 / 2;
        if workload.min_ttl() < min_ttl {
            return Err(format!(
                "{name}: ttl {} is shorter than 1.5 election timeouts ({} = 1.5 × {election_ticks} ticks of {}); leases would expire during every election (etcd refuses such TTLs too)",
                locksim_core::time::fmt_nanos(workload.min_ttl() as i128),
                locksim_core::time::fmt_nanos(min_ttl as i128),
                locksim_core::time::fmt_nanos(tick as i128)
            ));
        }
        Ok(RaftLease {
            name,
            keepalive_div: 3,
            monitor_retries: None,
            fencing: k.flag("fencing")?,
            servers: k.int("servers", 1..=9)?,
            server: server::ServerConfig {
                tick,
                election_ticks,
                fsync: k.choice("fsync", &["always", "never"])? == "always",
                clock: crate::knobs::local_clock(&k, "clock")?,
                grant_on_expired_lease: k.flag("grant_on_expired_lease")?,
                unlock_by_name: k.flag("unlock_by_name")?,
                lock_delay: 0,
                answer_lost: false,
            },
            timeout: k.timeout("timeout")?,
            lock_wait: k.duration("lock_wait")?,
            unlock_retry: k.choice("unlock_retry", &["background", "none"])? == "background",
            drift_ppm,
            client_clock: crate::knobs::local_clock(&k, "client_clock")?,
        })
    }
}

#[async_trait(?Send)]
impl LockAlgorithm for RaftLease {
    fn name(&self) -> &str {
        self.name
    }
    fn servers(&self) -> u32 {
        self.servers
    }
    async fn serve(&self, ctx: NodeCtx) {
        server::serve(ctx, self.server).await;
    }
    fn liveness(&self) -> locksim_sim::LivenessHints {
        // A request may go to a follower first and be redirected; a waiter is answered after
        // the leader revokes the expired lease through the log and confirms it still leads.
        locksim_sim::LivenessHints {
            lock_delay: self.server.lock_delay,
            attempt: Some(2 * locksim_sim::finite(self.timeout) + 2 * self.server.tick),
            // Two rounds of the longest election timeout (`[e, 2e)` ticks).
            election: 2 * 2 * self.server.election_ticks as u64 * self.server.tick,
        }
    }
    fn client(&self, ctx: NodeCtx) -> Rc<dyn LockClient> {
        let mut cfg = self.clone();
        cfg.client_clock = ctx.client_clock(cfg.client_clock);
        Rc::new(client::Client::new(ctx, cfg))
    }
}
