//! `consul-session`: Consul's lock recipe (sessions, `PUT /v1/kv/<key>?acquire=<session>`,
//! lock-delay) on a Raft-replicated catalogue. The servers run `raft-lease`'s server core
//! ([`crate::raftlease::server`]: raft-rs, leases revoked by the leader's clock through the
//! log, a lock queue per key) with Consul's lock-delay switched on; the client is
//! `raft-lease`'s library with Consul's renewal period and renewal-error policy. What each
//! knob reproduces, from Consul's documentation ("Sessions", developer.hashicorp.com/consul/docs/
//! dynamic-app-config/sessions; the `api.Lock` options, pkg.go.dev/github.com/hashicorp/consul/api#LockOptions):
//!
//! - a **session** has a `ttl` and `behavior = release`: when it is invalidated (its TTL ran
//!   out on the leader, or it was destroyed) the locks it holds are released. (Consul may
//!   wait up to twice the TTL before invalidating; here the leader revokes at the TTL, the
//!   lease contract S3 judges.) Consul requires TTLs of 10 s to 24 h; locksim does not
//!   enforce that, so the default campaign's 1 s TTL runs too.
//! - **`lock_delay`** (default 15 s, the session's `LockDelay`): after an invalidation the
//!   lock it held cannot be acquired for that long; a clean release (`?release=`) sets no
//!   delay. Each server sets it when it applies the invalidation. L1 allows for it
//!   ([`LockAlgorithm::liveness`]). As in Consul's state store (`deleteSessionTxn` in
//!   `agent/consul/state/session.go` applies the session's delay to every key it held,
//!   whether the session was destroyed or ran out), the delay also follows a session that
//!   holds a lock its client was never told of: a lock request committed by the next leader
//!   after the leader that took it crashed or lost its leadership before answering. The
//!   client got an error, gives the session up, and the lock is out of reach for 15 s, longer
//!   than the default campaign's 10 s workload; that is why a few default-campaign seeds grant
//!   nothing (`crates/explore/tests/consul_no_grant.rs`). Their pending acquires are waiters
//!   behind the delay, as `api.Lock` retries every `DefaultLockRetryTime` (5 s) in a
//!   lock-delay, not requests a server holds unanswered.
//! - the client **renews its session every `ttl/2`** between holds (`Session.RenewPeriodic`);
//!   while it holds a lock it renews through the workload's renewals (`renew_every`, which
//!   sims files set to `ttl/2`), so that every renewal is in the history S3 checks.
//! - **`monitor_retries`** (default 0, `LockOptions.MonitorRetries`): how many times a
//!   renewal that got no answer (a timeout, no leader) is retried before the holder is told
//!   its lock is lost. With 0 the first error during a leader election ends the hold.
//! - **fencing** (default on): the key's index at the acquire (`LockIndex`/`ModifyIndex`, the
//!   sequencer Consul's leader-election guide recommends) is the fencing token; `fencing =
//!   false` hands the resource none, as `api.Lock` ships (`Lock()` returns a lost-lock
//!   channel, not the index). The default stays on, unlike k8s-lease's and zookeeper's, for a
//!   checker reason: without a token S2 orders a queued acquire by the first grant record of
//!   that acquire, and this model records a grant to a waiter that is then superseded, so a
//!   tokenless run raises false stale-write alarms (`sims/consul-session-lock-delay-covers-
//!   pauses.toml` seed 278, `--set fencing=false`: S2 from a grant record 11 s before the
//!   waiter's own `ok`). Until the record is fixed, fencing off is the knob, not the default.
//! - **no request timeout** (`timeout = none`, as the Go API client ships: `api.DefaultConfig`
//!   builds an `http.Client` without `Timeout` on go-cleanhttp's pooled transport, whose only
//!   limits are the 30 s dial and the TLS handshake): a renewal or lock request into a black
//!   hole waits until TCP gives up or the cut heals, so the holder is not told. Give a
//!   `timeout` for a client built with a context deadline.
//! - **acquire** waits in the key's queue up to `lock_wait` (`LockOptions.LockWaitTime`,
//!   15 s), as `api.Lock` blocks and retries (the queue makes waiters first-come, first-served,
//!   where Consul's are served by whoever retries first).

use std::collections::BTreeMap;
use std::rc::Rc;

use locksim_core::Workload;
use locksim_sim::{async_trait, LockAlgorithm, LockClient, NodeCtx};

use crate::knobs::{Knob, Knobs};
use crate::raftlease::{server, RaftLease};

/// Knobs of `consul-session`.
pub const KNOBS: &[Knob] = &[
    Knob {
        key: "servers",
        default: "3",
        help: "number of Consul servers (Raft voters, 1 to 9)",
    },
    Knob {
        key: "lock_delay",
        default: "15s",
        help: "after a session is invalidated, its locks cannot be acquired for this long (0s: none); not after a clean release",
    },
    Knob {
        key: "monitor_retries",
        default: "0",
        help: "renewal errors retried before the holder is told its lock is lost (api.Lock MonitorRetries, 0 to 100)",
    },
    Knob {
        key: "fencing",
        default: "true",
        help: "hand the key's lock index to the resource as the fencing token (false: no token, as Consul's api.Lock ships it: Lock() returns a lost-lock channel, not the index; S2 then orders a client's grants by the service's first grant record in its acquire, which a re-acquire that settles a release in doubt can make too early)",
    },
    Knob {
        key: "lock_wait",
        default: "15s",
        help: "how long an acquire waits for the lock (api.Lock LockWaitTime)",
    },
    Knob {
        key: "tick",
        default: "20ms",
        help: "Raft tick on each server's monotonic clock",
    },
    Knob {
        key: "election_ticks",
        default: "10",
        help: "Raft election timeout in ticks (2 to 1000)",
    },
    Knob {
        key: "timeout",
        default: "none",
        help: "client's per-request timeout, or none: Consul's Go API client sets none (api.DefaultConfig's http.Client has no Timeout and go-cleanhttp's pooled transport no response timeout; a request ends with an answer or its TCP connection), so a renewal or monitor read into a black hole waits",
    },
    Knob {
        key: "client_clock",
        default: "mono",
        help: "clock the client measures its session's validity with: mono | wall",
    },
    crate::knobs::DRIFT_FACTOR,
];

/// The `consul-session` algorithm: a configured `raft-lease` core.
#[derive(Debug, Clone)]
pub struct ConsulSession {
    core: RaftLease,
}

impl ConsulSession {
    /// Builds `consul-session` from its knobs, for clients asking for sessions of
    /// `workload.ttl`.
    ///
    /// # Errors
    /// A message naming a bad or unknown knob, or a TTL shorter than 1.5 election timeouts.
    pub fn from_config(
        config: &BTreeMap<String, String>,
        workload: &Workload,
    ) -> Result<Self, String> {
        let name = "consul-session";
        let k = Knobs::new(name, config, KNOBS)?;
        // The core's own checks (TTL against the election timeout, tick, drift) apply; its
        // bug toggles stay off.
        let mut core_config: BTreeMap<String, String> = BTreeMap::new();
        for key in [
            "servers",
            "tick",
            "election_ticks",
            "timeout",
            "client_clock",
            "drift_factor",
            "lock_wait",
        ] {
            if let Some(v) = config.get(key) {
                core_config.insert(key.into(), v.clone());
            }
        }
        core_config
            .entry("lock_wait".into())
            .or_insert_with(|| "15s".into());
        core_config
            .entry("timeout".into())
            .or_insert_with(|| "none".into());
        let mut core = RaftLease::from_config(&core_config, workload)
            .map_err(|e| e.replacen("raft-lease", name, 1))?;
        core.name = name;
        core.keepalive_div = 2;
        core.monitor_retries = Some(k.int("monitor_retries", 0..=100)?);
        core.fencing = k.flag("fencing")?;
        let delay = config.get("lock_delay").map_or("15s", String::as_str);
        core.server.answer_lost = true;
        core.server.lock_delay = match locksim_core::time::parse_duration(delay) {
            Ok(d) if d >= 0 => d as u64,
            Ok(_) => return Err(format!("{name}: `lock_delay={delay}` is negative")),
            Err(e) => return Err(format!("{name}: `lock_delay`: {e}")),
        };
        Ok(ConsulSession { core })
    }
}

#[async_trait(?Send)]
impl LockAlgorithm for ConsulSession {
    fn name(&self) -> &str {
        self.core.name
    }
    fn servers(&self) -> u32 {
        self.core.servers
    }
    async fn serve(&self, ctx: NodeCtx) {
        server::serve(ctx, self.core.server).await;
    }
    fn liveness(&self) -> locksim_sim::LivenessHints {
        self.core.liveness()
    }
    fn client(&self, ctx: NodeCtx) -> Rc<dyn LockClient> {
        self.core.client(ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(pairs: &[(&str, &str)]) -> Result<ConsulSession, String> {
        let config: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ConsulSession::from_config(&config, &Workload::default())
    }

    #[test]
    fn defaults_are_consuls() {
        let c = build(&[]).unwrap();
        assert_eq!(c.name(), "consul-session");
        assert_eq!(c.servers(), 3);
        assert_eq!(c.core.server.lock_delay, 15_000_000_000);
        assert_eq!(c.core.lock_wait, 15_000_000_000);
        assert_eq!(c.core.keepalive_div, 2);
        assert_eq!(c.core.monitor_retries, Some(0));
        assert!(c.core.fencing);
        assert!(!c.core.server.grant_on_expired_lease && !c.core.server.unlock_by_name);
    }

    #[test]
    fn l1_is_told_the_lock_delay() {
        assert_eq!(build(&[]).unwrap().liveness().lock_delay, 15_000_000_000);
        let c = build(&[("lock_delay", "0s")]).unwrap();
        assert_eq!(c.liveness().lock_delay, 0);
        let c = build(&[("lock_delay", "2s"), ("monitor_retries", "3")]).unwrap();
        assert_eq!(c.liveness().lock_delay, 2_000_000_000);
        assert_eq!(c.core.monitor_retries, Some(3));
    }

    #[test]
    fn errors_name_consul_session_and_the_knob() {
        let e = build(&[("unlock_by_name", "true")]).unwrap_err();
        assert!(e.contains("not a setting of consul-session"), "{e}");
        let e = build(&[("monitor_retries", "-1")]).unwrap_err();
        assert!(e.contains("monitor_retries=-1"), "{e}");
        let e = build(&[("lock_delay", "-1s")]).unwrap_err();
        assert!(e.contains("lock_delay=-1s"), "{e}");
        let e = build(&[("election_ticks", "100")]).unwrap_err();
        assert!(e.starts_with("consul-session:"), "{e}");
    }
}
