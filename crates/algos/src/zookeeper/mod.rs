//! `zookeeper`: a ZooKeeper-style ensemble and Curator's `InterProcessMutex` on it.
//!
//! The service, with its public sources (ZooKeeper Programmer's Guide and Internals,
//! zookeeper.apache.org; Curator's recipe pages, curator.apache.org):
//! - **Zab-like broadcast**: every write goes to the leader (`n1`), which gives it the next
//!   zxid, sends it to the followers and commits it when a majority (itself included) has
//!   logged it; every server applies commits in zxid order. The leader is fixed: leader
//!   election is not modelled (a crashed leader stops writes until it restarts with its
//!   committed state from disk; a restarted follower serves nobody until it has the leader's
//!   snapshot).
//! - **Reads** (children listings, watches) are answered by the server the client is
//!   connected to from its own state; a follower applies each commit `follower_lag` after it
//!   arrives ("ZooKeeper does not guarantee that at every instance in time, two different
//!   clients will have identical views", Programmer's Guide, Consistency Guarantees).
//!   One follower may lag on its own (`n3.follower_lag`: `--set n3.follower_lag=2s`, or
//!   `"n3.follower_lag" = "2s"` in a file's `[settings]`).
//!   `sync_before_read` issues `sync` first: the server answers once it has applied
//!   everything the leader had committed.
//! - **Sessions** with a timeout (each client's TTL; `session_timeout` is the same setting
//!   under the name ZooKeeper's Administrator's Guide and Curator's `sessionTimeoutMs` give
//!   it, <https://zookeeper.apache.org/doc/current/zookeeperAdmin.html>); any request touches the session; a
//!   follower passes touches to the leader every `tick`; the leader alone expires sessions
//!   and closes them through the broadcast, which deletes their ephemeral nodes.
//! - **The lock** is Curator's `InterProcessMutex`: create an `EPHEMERAL_SEQUENTIAL` node
//!   under the lock's path in protected mode, list the children, the lowest holds, the others
//!   watch their predecessor. Curator hands the caller no token, so by default the resource
//!   gets none; `fencing = true`, the remedy, hands it the node's sequence number (its czxid
//!   order).
//! - **`protected`**: after a create whose reply was lost, Curator looks for its node by the
//!   GUID in its name before creating again. `guid` is the historical behaviour: a node of an
//!   earlier session the client has given up on (Curator starts a new session after the
//!   connection was LOST for a session timeout) is taken as its own, and dies with that
//!   session while the client believes it holds the lock (CURATOR-498, "Protected Mode
//!   creation can mistake closing session's node"). `guid+session`, the fix of Curator
//!   4.2.0, puts the session id into the protected name and ignores nodes of other sessions.
//! - **`reconnect`**: a client whose request got no answer reconnects to the `same` server or
//!   to `any` other.
//! - **Timeouts as the ZooKeeper client ships them** (apache/zookeeper `ClientCnxn`,
//!   `ZKClientConfig`): no request timeout (`zookeeper.request.timeout` defaults to 0), but a
//!   connection that read nothing for `readTimeout = sessionTimeout * 2 / 3` is lost, so a
//!   request waits up to 2/3 of the session timeout (`timeout`'s default); the client pings
//!   every third of the session timeout (`readTimeout / 2`). Curator asks for 60 s sessions
//!   (`CuratorFrameworkFactory.DEFAULT_SESSION_TIMEOUT_MS`), which the server clamps to 20
//!   ticks (40 s with `zoo_sample.cfg`'s `tickTime = 2000`); locksim's runs keep the
//!   workload's `ttl` as the session timeout and scale the rest with it.

mod client;
pub mod server;

use std::collections::BTreeMap;
use std::rc::Rc;

use locksim_core::{Nanos, Workload};
use locksim_sim::{async_trait, LocalClock, LockAlgorithm, LockClient, NodeCtx};

use crate::knobs::{Knob, Knobs};

/// Knobs of `zookeeper`.
pub const KNOBS: &[Knob] = &[
    Knob {
        key: "servers",
        default: "3",
        help: "ensemble size: the leader n1 and followers (1 to 9)",
    },
    Knob {
        key: "protected",
        default: "guid",
        help: "how a create retry finds its own node: guid (before Curator 4.2.0, CURATOR-498) | guid+session (the fix)",
    },
    Knob {
        key: "reconnect",
        default: "same",
        help: "after a request without an answer the client reconnects to: same (server) | any (other)",
    },
    Knob {
        key: "sync_before_read",
        default: "false",
        help: "issue sync before each children listing",
    },
    Knob {
        key: "follower_lag",
        default: "0ms..20ms",
        help: "delay before a follower applies a commit, drawn uniformly per commit: MIN..MAX (or one duration)",
    },
    Knob {
        key: "nN.follower_lag",
        default: "follower_lag",
        help: "one follower's own lag (n2..nN; n1 leads and applies at once), as --set n3.follower_lag=2s or, in a file's [settings], \"n3.follower_lag\" = \"2s\": MIN..MAX or one duration. A client connected to a lagging follower reads an old tree unless it syncs first (the ZooKeeper Programmer's Guide, Consistency Guarantees: \"if a client wants the most up-to-date data, it should call sync()\")",
    },
    Knob {
        key: "tick",
        default: "50ms",
        help: "how often followers pass session touches to the leader and the leader checks expiry and re-sends proposals",
    },
    Knob {
        key: "fencing",
        default: "false",
        help: "hand the lock node's sequence number to the resource as a fencing token, a remedy; false (the default): no token, as Curator's InterProcessMutex ships it (acquire() returns a boolean; the lock node's path is never handed to the protected resource)",
    },
    Knob {
        key: "timeout",
        default: "2/3 of the session timeout",
        help: "how long a request waits for an answer before the client calls the connection lost: by default the ZooKeeper client's read timeout, 2/3 of the negotiated session timeout (ClientCnxn: readTimeout = sessionTimeout * 2 / 3; zookeeper.request.timeout is 0, none); a duration sets it",
    },
    Knob {
        key: "lock_wait",
        default: "3s",
        help: "how long an acquire may take (Curator's acquire(time)); then the client deletes its node",
    },
    Knob {
        key: "client_clock",
        default: "mono",
        help: "clock the client measures its validity with: mono | wall",
    },
    crate::knobs::DRIFT_FACTOR,
    Knob {
        key: "session_timeout",
        default: "the ttl",
        help: "the session timeout (ZooKeeper's sessionTimeout, Curator's sessionTimeoutMs): ttl under the name ZooKeeper and Curator users know; give one of the two",
    },
];

/// How a retried create finds its node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protected {
    /// By GUID alone (CURATOR-498).
    Guid,
    /// By GUID and the current session id.
    GuidSession,
}

/// Where a client reconnects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reconnect {
    Same,
    Any,
}

/// The `zookeeper` algorithm.
#[derive(Debug, Clone)]
pub struct Zookeeper {
    pub(crate) servers: u32,
    pub(crate) protected: Protected,
    pub(crate) reconnect: Reconnect,
    pub(crate) sync_before_read: bool,
    pub(crate) follower_lag: (Nanos, Nanos),
    /// Followers with a lag of their own (`nN.follower_lag`), by node id (n2 is 1).
    pub(crate) server_lag: BTreeMap<u32, (Nanos, Nanos)>,
    pub(crate) tick: Nanos,
    pub(crate) fencing: bool,
    /// How long a client request waits for an answer, ns; `None`: the ZooKeeper client's
    /// read timeout, 2/3 of the client's session timeout (`ClientCnxn`).
    pub(crate) timeout: Option<Nanos>,
    pub(crate) lock_wait: Nanos,
    /// The session timeout a client asks for before its first acquire (the workload's TTL).
    pub(crate) session_timeout: Nanos,
    pub(crate) drift_ppm: u64,
    pub(crate) client_clock: LocalClock,
}

impl Zookeeper {
    /// Builds `zookeeper` from its knobs; sessions time out after each client's TTL.
    ///
    /// # Errors
    /// A message naming a bad or unknown knob.
    pub fn from_config(
        config: &BTreeMap<String, String>,
        workload: &Workload,
    ) -> Result<Self, String> {
        let name = "zookeeper";
        // `nN.follower_lag`: one follower's lag; the rest are the ensemble's knobs.
        let (per_server, config): (BTreeMap<_, _>, BTreeMap<_, _>) = config
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .partition(|(k, _)| server_key(k).is_some());
        let config = &config;
        if config.contains_key("nN.follower_lag") {
            return Err(format!(
                "{name}: `nN.follower_lag`: name the follower, e.g. n3.follower_lag"
            ));
        }
        let k = Knobs::new(name, config, KNOBS)?;
        let servers = k.int("servers", 1..=9)?;
        let mut server_lag = BTreeMap::new();
        for (key, v) in &per_server {
            let (n, field) = server_key(key).expect("partitioned");
            if field != "follower_lag" {
                return Err(format!(
                    "{name}: `{key}`: `{field}` is not a per-server setting (valid: follower_lag)"
                ));
            }
            if n == 1 || n > servers {
                return Err(format!(
                    "{name}: `{key}`: n{n} is not a follower (followers: {}; n1 leads and applies every commit at once)",
                    if servers < 2 {
                        "none, with servers = 1".to_string()
                    } else {
                        format!("n2..n{servers}")
                    }
                ));
            }
            server_lag.insert(n - 1, crate::redisfailover::parse_range(name, key, v)?);
        }
        if config.contains_key("session_timeout") {
            // The workload's ttl under ZooKeeper's name: the caller resolves it
            // (`workload_aliases`); here it would be ignored.
            return Err(format!(
                "{name}: `session_timeout` is the workload's ttl: give it as a workload setting (--set, [settings]) or as ttl"
            ));
        }
        let drift_ppm = k.fraction_ppm("drift_factor")?;
        crate::knobs::check_ttl(name, workload.min_ttl(), drift_ppm)?;
        let lag = config
            .get("follower_lag")
            .map_or(KNOBS[4].default, String::as_str);
        Ok(Zookeeper {
            servers,
            protected: match k.choice("protected", &["guid", "guid+session"])? {
                "guid" => Protected::Guid,
                _ => Protected::GuidSession,
            },
            reconnect: match k.choice("reconnect", &["same", "any"])? {
                "same" => Reconnect::Same,
                _ => Reconnect::Any,
            },
            sync_before_read: k.flag("sync_before_read")?,
            follower_lag: crate::redisfailover::parse_range(name, "follower_lag", lag)?,
            server_lag,
            tick: k.duration("tick")?,
            fencing: k.flag("fencing")?,
            timeout: config
                .contains_key("timeout")
                .then(|| k.duration("timeout"))
                .transpose()?,
            lock_wait: k.duration("lock_wait")?,
            session_timeout: workload.ttl,
            drift_ppm,
            client_clock: crate::knobs::local_clock(&k, "client_clock")?,
        })
    }

    /// The lag of server `id` (n1 is 0): its own `nN.follower_lag`, else `follower_lag`.
    pub(crate) fn lag_of(&self, id: u32) -> (Nanos, Nanos) {
        self.server_lag
            .get(&id)
            .copied()
            .unwrap_or(self.follower_lag)
    }

    /// How long a client request waits for an answer before the connection counts as lost,
    /// ns: the `timeout` setting, else the ZooKeeper client's read timeout, 2/3 of the
    /// client's session timeout `session` (`ClientCnxn`: `readTimeout = sessionTimeout * 2 /
    /// 3`).
    pub(crate) fn request_timeout(&self, session: Nanos) -> Nanos {
        self.timeout.unwrap_or(session * 2 / 3)
    }

    /// How long a server waits for a peer's answer (a follower asking the leader), ns: the
    /// `timeout` setting, else two ticks.
    pub(crate) fn peer_timeout(&self) -> Nanos {
        self.timeout.unwrap_or(2 * self.tick)
    }
}

/// A per-server key `nN.FIELD`, as `(N, FIELD)`.
fn server_key(key: &str) -> Option<(u32, &str)> {
    let (node, field) = key.split_once('.')?;
    let n: u32 = node.strip_prefix('n')?.parse().ok()?;
    (node == format!("n{n}")).then_some((n, field))
}

#[async_trait(?Send)]
impl LockAlgorithm for Zookeeper {
    fn name(&self) -> &str {
        "zookeeper"
    }
    fn servers(&self) -> u32 {
        self.servers
    }
    async fn serve(&self, ctx: NodeCtx) {
        server::serve(ctx, self.clone()).await;
    }
    /// A lock node is ephemeral: it lives while its holder's session does, and every request
    /// and ping renews the session; the holder's delete is judged by the node's existence.
    fn lock_is_session(&self) -> bool {
        true
    }
    fn liveness(&self) -> locksim_sim::LivenessHints {
        // A waiter learns of a freed lock through its watch (or its next poll), then lists
        // the children: a sync, a listing, and the leader's expiry tick.
        locksim_sim::LivenessHints {
            lock_delay: 0,
            attempt: Some(3 * self.request_timeout(self.session_timeout) + self.tick),
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
mod tests {
    use super::server::{Applied, Tree, Txn};
    use super::*;

    fn build(pairs: &[(&str, &str)]) -> Result<Zookeeper, String> {
        let config: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Zookeeper::from_config(&config, &Workload::default())
    }

    #[test]
    fn defaults_and_bad_knobs() {
        let z = build(&[]).unwrap();
        assert_eq!(z.servers, 3);
        assert_eq!(z.protected, Protected::Guid);
        assert_eq!(z.reconnect, Reconnect::Same);
        assert!(!z.sync_before_read && !z.fencing);
        assert_eq!(z.follower_lag, (0, 20_000_000));
        assert_eq!(z.session_timeout, Workload::default().ttl);
        let z = build(&[("protected", "guid+session"), ("reconnect", "any")]).unwrap();
        assert_eq!(
            (z.protected, z.reconnect),
            (Protected::GuidSession, Reconnect::Any)
        );
        let e = build(&[("protected", "session")]).unwrap_err();
        assert!(e.contains("protected=session"), "{e}");
        let z = build(&[("n3.follower_lag", "2s")]).unwrap();
        assert_eq!(z.lag_of(2), (2_000_000_000, 2_000_000_000));
        assert_eq!(z.lag_of(1), z.follower_lag, "n2 keeps the ensemble's lag");
        for (key, v, want) in [
            ("n1.follower_lag", "2s", "zookeeper: `n1.follower_lag`: n1 is not a follower (followers: n2..n3; n1 leads and applies every commit at once)"),
            ("n4.follower_lag", "2s", "zookeeper: `n4.follower_lag`: n4 is not a follower (followers: n2..n3; n1 leads and applies every commit at once)"),
            ("n3.tick", "2s", "zookeeper: `n3.tick`: `tick` is not a per-server setting (valid: follower_lag)"),
            ("n3.follower_lag", "2", "zookeeper: `n3.follower_lag=2`: "),
            ("n3.follower_lag", "3s..1s", "zookeeper: `n3.follower_lag=3s..1s`: MIN is above MAX"),
            ("nN.follower_lag", "2s", "zookeeper: `nN.follower_lag`: name the follower, e.g. n3.follower_lag"),
        ] {
            let e = build(&[(key, v)]).unwrap_err();
            assert!(e.starts_with(want), "{key}={v}: {e}");
        }
        let e = build(&[("follower_lag", "9ms..1ms")]).unwrap_err();
        assert!(
            e.contains("follower_lag") && e.contains("MIN is above MAX"),
            "{e}"
        );
    }

    #[test]
    fn sequence_numbers_grow_and_closing_a_session_deletes_its_nodes() {
        let mut t = Tree::default();
        assert_eq!(
            t.apply(1, &Txn::CreateSession { timeout: 5 }),
            Applied::Session(1)
        );
        assert_eq!(
            t.apply(2, &Txn::CreateSession { timeout: 5 }),
            Applied::Session(2)
        );
        let create = |session| Txn::Create {
            key: 0,
            guid: 7,
            session,
            client: 3,
        };
        assert_eq!(t.apply(3, &create(1)), Applied::Created(1));
        assert_eq!(t.apply(4, &create(2)), Applied::Created(2));
        assert_eq!(
            t.apply(5, &Txn::CloseSession { session: 1 }),
            Applied::Closed
        );
        let left: Vec<u64> = t.locks[&0].keys().copied().collect();
        assert_eq!(left, vec![2]);
        // A closed session creates nothing; sequence numbers are never reused.
        assert_eq!(t.apply(6, &create(1)), Applied::NoSession);
        assert_eq!(t.apply(7, &create(2)), Applied::Created(3));
        assert_eq!(
            t.apply(8, &Txn::Delete { key: 0, seq: 3 }),
            Applied::Deleted(true)
        );
        assert_eq!(
            t.apply(9, &Txn::Delete { key: 0, seq: 3 }),
            Applied::Deleted(false)
        );
    }
}
