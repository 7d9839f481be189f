//! One run: a madsim world with one simulated Redis server node (or several independent ones,
//! for Redlock), the user's client nodes and the timed faults, and the history the servers
//! recorded.
//!
//! Nodes are numbered as locksim numbers them ([`Cluster`]): with S servers, `n1`…`nS` (nodes
//! 0…S-1) are the servers at 10.0.0.1:6379, 10.0.0.2:6379, …; `c1`…`cN` (nodes S…S+N-1) the
//! clients at 10.0.1.1…; `res` (node S+N) the protected resource, which here is the servers'
//! keys under the resource prefix (its writes are recorded on `res`).

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use locksim_check::{check_all, CheckOptions};
use locksim_core::clock::Clock;
use locksim_core::trigger::Trigger;
use locksim_core::{Cluster, Fault, History, Nanos, NodeId, TimedFault, Verdict};
use madsim::net::NetSim;
use madsim::runtime::{Handle, Runtime};

use crate::record::Recorder;
use crate::replication::Role;
use crate::scripts::{ScriptKind, Scripts};
use crate::sentinel::Watch;

/// The server's port.
pub const PORT: u16 = 6379;

const MS: Nanos = 1_000_000;

/// What a run is: the seed, the clients, the length, the faults, the resource and the scripts
/// the server recognises.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// madsim's seed: network latencies, task order, everything random in the run.
    pub seed: u64,
    /// Number of Redis servers, 1 to 15 (default 1). They are independent, as Redlock's
    /// masters are: a grant is a majority of them holding one client's value.
    pub servers: u32,
    /// Number of client nodes (each runs the user's client function).
    pub clients: u32,
    /// How long the run lasts, ns of true time; then every node stops.
    pub duration: Nanos,
    /// The faults, in any order, each at a true time or after an event the server recorded
    /// (a trigger, as in locksim's scenario files: `after = { node = "n1", event = "grants",
    /// client = "c1" }`). Supported: `isolate`, `partition` (node sets, both ways), `pause`
    /// (the whole process) and `crash` (with or without a restart), of a server or a
    /// client, `drop_replies` (from servers to clients), and `clock_step` / `clock_drift` of a
    /// server (its key expiry runs on its wall clock, as Redis's does). Other kinds, and clock
    /// faults of a client, are refused by [`Scenario::validate`].
    pub faults: Vec<TimedFault>,
    /// Keys starting with this are the protected resource (default `resource:`).
    pub resource_prefix: String,
    /// The scripts the server recognises.
    pub scripts: Scripts,
    /// With Sentinel: `down-after-milliseconds`, ns (Redis ships 30 s). `n1` starts as the
    /// primary, the other servers as its replicas, a sentinel beside each
    /// ([`crate::sentinel`]); a grant is then one primary's `SET NX`. `None` (the default):
    /// independent servers, a majority of which makes a grant (Redlock).
    pub sentinel: Option<Nanos>,
    /// What the servers are: Redis (the default) or an etcd member (feature `etcd`).
    pub service: Service,
}

/// The lock service the server nodes run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Service {
    /// A simulated Redis, RESP on port 6379 ([`crate::store`]).
    #[default]
    Redis,
    /// A simulated etcd member, gRPC on port 2379 (`crate::etcd`, feature `etcd`): keys and
    /// leases survive a crash, as etcd's WAL keeps them.
    Etcd,
}

impl Service {
    /// The port clients connect to.
    pub fn port(self) -> u16 {
        match self {
            Service::Redis => PORT,
            Service::Etcd => 2379,
        }
    }

    /// Its name in scenario files (`service = "etcd"`).
    pub fn name(self) -> &'static str {
        match self {
            Service::Redis => "redis",
            Service::Etcd => "etcd",
        }
    }
}

impl Scenario {
    /// Two clients, 10 s, no faults, resource prefix `resource:`.
    pub fn new(seed: u64) -> Scenario {
        Scenario {
            seed,
            servers: 1,
            clients: 2,
            duration: 10_000 * MS,
            faults: Vec::new(),
            resource_prefix: "resource:".into(),
            scripts: Scripts::default(),
            sentinel: None,
            service: Service::Redis,
        }
    }

    /// Runs an etcd member instead of Redis (feature `etcd`; one member).
    pub fn etcd(mut self) -> Scenario {
        self.service = Service::Etcd;
        self
    }

    /// Sets the number of clients.
    pub fn clients(mut self, n: u32) -> Scenario {
        self.clients = n;
        self
    }

    /// Sets the number of independent Redis servers (Redlock's N).
    pub fn servers(mut self, n: u32) -> Scenario {
        self.servers = n;
        self
    }

    /// Runs the servers as a primary and replicas under Sentinel, with `down-after-milliseconds`
    /// of `down_after_ms` (Redis ships 30 000).
    pub fn sentinel(mut self, down_after_ms: u64) -> Scenario {
        self.sentinel = Some(down_after_ms * MS);
        self
    }

    /// Sets the run's length in ms.
    pub fn duration_ms(mut self, ms: u64) -> Scenario {
        self.duration = ms * MS;
        self
    }

    /// Adds `fault` at `at_ms` ms.
    pub fn fault(mut self, at_ms: u64, fault: Fault) -> Scenario {
        self.faults.push(TimedFault {
            at: at_ms * MS,
            fault,
            after: None,
        });
        self
    }

    /// Adds `fault`, striking after the event `after` names (e.g. the server's first grant to
    /// `c1`: `Trigger { nodes: vec![0], event: TriggerEvent::Grants, nth: 1, delay: 0,
    /// client: Some(1) }`).
    pub fn fault_after(mut self, after: Trigger, fault: Fault) -> Scenario {
        self.faults.push(TimedFault {
            at: 0,
            fault,
            after: Some(after),
        });
        self
    }

    /// Sets the resource key prefix.
    pub fn resource_prefix(mut self, prefix: &str) -> Scenario {
        self.resource_prefix = prefix.into();
        self
    }

    /// Makes the server recognise the script `text` as doing `kind`.
    pub fn script(mut self, text: &str, kind: ScriptKind) -> Scenario {
        self.scripts.register(text, kind);
        self
    }

    /// The node layout: the servers, the clients, the resource.
    pub fn cluster(&self) -> Cluster {
        Cluster {
            servers: self.servers,
            clients: self.clients,
        }
    }

    /// The client node `i` (1-based: `c1` is `client(1)`, node `servers`).
    pub fn client(&self, i: u32) -> NodeId {
        self.servers + i - 1
    }

    /// The first server's node (`n1`, node 0).
    pub fn server(&self) -> NodeId {
        0
    }

    /// Refuses what this run cannot do: no clients, more than 250, no servers or more than
    /// 15, a fault of a kind not supported here, or one naming a node that is not a server or
    /// a client.
    pub fn validate(&self) -> Result<(), String> {
        if self.clients == 0 || self.clients > 250 {
            return Err(format!("clients must be 1 to 250, not {}", self.clients));
        }
        if self.servers == 0 || self.servers > 15 {
            return Err(format!("servers must be 1 to 15, not {}", self.servers));
        }
        if let Some(d) = self.sentinel {
            if d == 0 || d > 3_600_000_000_000 {
                return Err(format!(
                    "Sentinel's down_after must be more than 0 and at most an hour, not {d} ns"
                ));
            }
        }
        if self.service == Service::Etcd {
            if !cfg!(feature = "etcd") {
                return Err("service = \"etcd\" needs locksim-resp-sim's feature `etcd`".into());
            }
            if self.servers != 1 || self.sentinel.is_some() {
                return Err(
                    "etcd runs as one member here: servers must be 1, and Sentinel is Redis's"
                        .into(),
                );
            }
        }
        if self.sentinel.is_some() && self.servers < 2 {
            return Err(
                "Sentinel needs a replica to fail over to: servers must be 2 or more".into(),
            );
        }
        for (i, t) in self.faults.iter().enumerate() {
            self.validate_fault(t)
                .map_err(|e| format!("fault #{} ({}): {e}", i + 1, fault_type(&t.fault)))?;
        }
        Ok(())
    }
}

impl Scenario {
    /// A node's name (`n1`, `c2`, `res`), or `node N` for an id beyond the cluster.
    fn node_name(&self, n: NodeId) -> String {
        let c = self.cluster();
        if n <= c.resource_id() {
            c.name(n)
        } else {
            format!("node {n}")
        }
    }

    /// Refuses a fault these runs cannot apply, naming the node or field at fault.
    fn validate_fault(&self, t: &TimedFault) -> Result<(), String> {
        if let Some(after) = &t.after {
            after.validate(&self.cluster())?;
            check_trigger(after, self.sentinel.is_some())?;
        }
        let nodes = self.servers + self.clients;
        let any = |n: NodeId, field: &str| {
            if n < nodes {
                Ok(())
            } else {
                Err(format!(
                    "`{field}`: {} is neither a server (n1…n{}) nor a client (c1…c{})",
                    self.node_name(n),
                    self.servers,
                    self.clients
                ))
            }
        };
        match &t.fault {
            Fault::Isolate { node, .. }
            | Fault::Pause {
                node,
                task: locksim_core::fault::PauseTask::Process,
                ..
            }
            | Fault::Crash { node, .. } => any(*node, "node"),
            Fault::Partition { a, b, .. } => {
                for n in a {
                    any(*n, "a")?;
                }
                for n in b {
                    any(*n, "b")?;
                }
                Ok(())
            }
            Fault::DropReplies {
                clients, servers, ..
            } => {
                if let Some(n) = clients.iter().find(|n| **n < self.servers || **n >= nodes) {
                    return Err(format!("`clients`: {} is no client", self.node_name(*n)));
                }
                if let Some(n) = servers.iter().find(|n| **n >= self.servers) {
                    return Err(format!("`servers`: {} is no server", self.node_name(*n)));
                }
                Ok(())
            }
            Fault::ClockStep { node, .. } | Fault::ClockDrift { node, .. } => {
                any(*node, "node")?;
                if *node >= self.servers && !cfg!(feature = "client-clocks") {
                    return Err(format!(
                        "`node`: {}: a client's clocks move only with locksim-resp-sim's \
                         feature `client-clocks` and madsim patched for per-node clocks \
                         (crates/resp-sim/madsim-clocks/patch-madsim): published madsim has one \
                         clock for the whole simulation (its open request #24)",
                        self.node_name(*node)
                    ));
                }
                match &t.fault {
                    Fault::ClockDrift { ppm, .. } if *ppm <= -1_000_000 => Err(format!(
                        "`ppm`: {ppm} would stop or reverse the clock (must be > -1000000)"
                    )),
                    _ => Ok(()),
                }
            }
            _ => Err(
                "runs of your own client support isolate, partition, pause (of the whole \
                 process), crash, drop_replies and server clock_step/clock_drift faults so far"
                    .into(),
            ),
        }
    }
}

/// A fault's `type`, as scenario files write it.
fn fault_type(f: &Fault) -> &'static str {
    match f {
        Fault::Isolate { .. } => "isolate",
        Fault::Partition { .. } => "partition",
        Fault::PartitionOneway { .. } => "partition_oneway",
        Fault::Pause { .. } => "pause",
        Fault::Crash { .. } => "crash",
        Fault::DropReplies { .. } => "drop_replies",
        Fault::ClockStep { .. } => "clock_step",
        Fault::ClockDrift { .. } => "clock_drift",
        Fault::Loss { .. } => "loss",
        Fault::Delay { .. } => "delay",
        Fault::Duplicate { .. } => "duplicate",
        Fault::IsolateLeader { .. } => "isolate_leader",
        Fault::Heal => "heal",
    }
}

/// Refuses a trigger waiting for an event these runs never record.
fn check_trigger(after: &Trigger, sentinel: bool) -> Result<(), String> {
    use locksim_core::history::{OpF, Phase};
    use locksim_core::trigger::TriggerEvent as E;
    let recorded = match after.event {
        E::Grants | E::AcceptsWrite => true,
        E::LeaderElected => sentinel,
        E::Op(OpF::Acquire, Phase::Invoke | Phase::Ok)
        | E::Op(OpF::Release, Phase::Invoke | Phase::Ok | Phase::Fail)
        | E::Op(OpF::Extend, Phase::Invoke | Phase::Ok)
        | E::Op(OpF::Write, Phase::Invoke | Phase::Ok) => true,
        _ => false,
    };
    if recorded {
        Ok(())
    } else {
        Err(format!(
            "`after`: these runs never record `{}` (the servers record: grants, acquire \
             invoke|ok, release invoke|ok|fail, extend invoke|ok, write invoke|ok, accepts \
             write{})",
            after.event.name(),
            if sentinel {
                ", leader elected"
            } else {
                "; and leader elected with sentinel = true"
            }
        ))
    }
}

/// One client node, as the user's function gets it.
#[derive(Debug, Clone)]
pub struct Client {
    /// Its node id (with one server, 1 for `c1`; with S servers, S for `c1`).
    pub node: NodeId,
    /// Its name (`c1`, `c2`, …).
    pub name: String,
    /// How many times it was restarted before this start (0 at first).
    pub incarnation: u32,
    /// The (first) simulated Redis server's address.
    pub server: SocketAddr,
    /// Every server's address, `n1` first (one, unless the scenario has more).
    pub servers: Vec<SocketAddr>,
}

impl Client {
    /// The server's URL, `redis://10.0.0.1:6379/`, for clients that connect themselves
    /// (`redis::Client::open(url)`): with redis-rs built on madsim-tokio (see
    /// `redis-on-madsim/patch-redis` and docs/own-client.md), they connect over madsim's TCP.
    pub fn url(&self) -> String {
        format!("redis://{}/", self.server)
    }

    /// Every sentinel's URL (`redis://10.0.0.1:26379/`, …; runs with Sentinel), `n1`'s first:
    /// what a client that finds the primary through Sentinel is given, with the service name
    /// [`crate::sentinel::SERVICE`] (`mymaster`).
    pub fn sentinel_urls(&self) -> Vec<String> {
        self.servers
            .iter()
            .map(|a| format!("redis://{}:{}/", a.ip(), crate::sentinel::PORT))
            .collect()
    }

    /// Every server's URL, `n1` first: what a Redlock client is given.
    pub fn urls(&self) -> Vec<String> {
        self.servers
            .iter()
            .map(|a| format!("redis://{a}/"))
            .collect()
    }
}

#[cfg(feature = "redis")]
impl Client {
    /// A redis-rs multiplexed connection to the simulated server over madsim's TCP, in RESP2
    /// (what redis-rs speaks by default): the real `redis` crate's
    /// `MultiplexedConnection::new_with_config`, its driver spawned on this node. redis-rs's
    /// own response and connection timeouts are off (they would use tokio's timer, which does
    /// not run in the simulation): time out with `tokio::time::timeout` from madsim-tokio.
    pub async fn redis(&self) -> redis::RedisResult<redis::aio::MultiplexedConnection> {
        self.redis_with(redis::RedisConnectionInfo::default()).await
    }

    /// [`Client::redis`] to another address: another server, or a sentinel
    /// ([`Client::sentinel_urls`]'s addresses).
    pub async fn redis_to(
        &self,
        addr: SocketAddr,
    ) -> redis::RedisResult<redis::aio::MultiplexedConnection> {
        let stream = madsim::net::TcpStream::connect(addr).await?;
        let config = redis::AsyncConnectionConfig::new()
            .set_response_timeout(None)
            .set_connection_timeout(None);
        let (conn, driver) = redis::aio::MultiplexedConnection::new_with_config(
            &redis::RedisConnectionInfo::default(),
            stream,
            config,
        )
        .await?;
        madsim::task::spawn(driver);
        Ok(conn)
    }

    /// [`Client::redis`] with your own connection settings (e.g. RESP3 through
    /// `RedisConnectionInfo::set_protocol`).
    pub async fn redis_with(
        &self,
        info: redis::RedisConnectionInfo,
    ) -> redis::RedisResult<redis::aio::MultiplexedConnection> {
        let stream = madsim::net::TcpStream::connect(self.server).await?;
        let config = redis::AsyncConnectionConfig::new()
            .set_response_timeout(None)
            .set_connection_timeout(None);
        let (conn, driver) =
            redis::aio::MultiplexedConnection::new_with_config(&info, stream, config).await?;
        madsim::task::spawn(driver);
        Ok(conn)
    }
}

#[cfg(feature = "etcd")]
impl Client {
    /// The etcd endpoint, `http://10.0.0.1:2379` (runs with `service = "etcd"`).
    pub fn etcd_url(&self) -> String {
        format!("http://{}", self.server)
    }

    /// An `etcd_client::Client` connected to the simulated etcd member: the real etcd-client
    /// crate (0.21), its gRPC calls carried over HTTP/2 on madsim's TCP
    /// ([`crate::etcd::Channel`]) through its `raw-channel` constructor. One HTTP/2 connection,
    /// opened on the first call and again after it breaks; no call here times out by itself
    /// (time out with `tokio::time::timeout` from madsim-tokio).
    pub async fn etcd(&self) -> Result<etcd_client::Client, etcd_client::Error> {
        let channel = tower::util::BoxCloneSyncService::new(crate::etcd::Channel::new(self.server));
        etcd_client::Client::from_channel(etcd_client::Channel::Custom(channel), None).await
    }
}

/// What the server node and the fault supervisor share.
pub(crate) struct Shared {
    start: madsim::time::Instant,
    pub(crate) scripts: Scripts,
    recorder: Mutex<Recorder>,
    servers: u32,
    clients: u32,
    /// The last connection id given out (ids are unique in the run, across server restarts).
    connections: std::sync::atomic::AtomicU64,
    /// `drop_replies` windows.
    held: Mutex<Vec<HeldReplies>>,
    /// Each server's clocks (stepped and drifted by clock faults).
    clocks: Mutex<Vec<Clock>>,
    /// Sentinel's `down-after-milliseconds`, ns, in runs with Sentinel.
    sentinel: Option<Nanos>,
    /// Each server's role (its configuration: it survives a restart).
    roles: Mutex<Vec<Role>>,
    /// Each server's replication offset.
    offsets: Mutex<Vec<u64>>,
    /// Each server's replication streams to its replicas.
    feeds: Mutex<Vec<Vec<tokio::sync::mpsc::UnboundedSender<Vec<u8>>>>>,
    /// Each sentinel's view.
    watches: Mutex<Vec<Watch>>,
    /// Each etcd member's state (runs with `Service::Etcd`): kept across its restarts.
    #[cfg(feature = "etcd")]
    etcd: Vec<Arc<crate::etcd::State>>,
    /// What the servers run.
    service: Service,
    /// How many faults of each kind hold each node (or link) now.
    holds: Mutex<std::collections::BTreeMap<(Hold, NodeId, NodeId), u32>>,
}

/// What a fault holds a node (or a link, both ways) in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Hold {
    Pause,
    Isolate,
    Link,
    Down,
}

/// A `drop_replies` window: replies from `.1` (servers) to `.0` (clients) leave at `.2` (its
/// end, true time ns).
type HeldReplies = (Vec<NodeId>, Vec<NodeId>, Nanos);

impl Shared {
    /// Server `node` crashed: a Redis without persistence lost its keys; an etcd member keeps
    /// them, and what its dead process was doing cleans nothing up.
    fn crashed(&self, node: NodeId) {
        match self.service {
            #[cfg(feature = "etcd")]
            Service::Etcd => {
                let state = &self.etcd[node as usize];
                state
                    .incarnation
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                // Leases already past their deadline are gone before the crash (the
                // member's sweep would have revoked them); the rest are renewed at restart.
                let local = self.server_mono(node, self.now());
                let _ = state.store.lock().expect("one thread").expire(local);
            }
            _ => {
                self.record(|r| r.server_lost_keys(node));
                self.set_offset(node, 0);
            }
        }
    }

    /// Member `i`'s etcd state.
    #[cfg(feature = "etcd")]
    pub(crate) fn etcd(&self, i: u32) -> Arc<crate::etcd::State> {
        self.etcd[i as usize].clone()
    }

    /// True time since the run started, ns.
    pub(crate) fn now(&self) -> Nanos {
        madsim::time::Instant::now()
            .duration_since(self.start)
            .as_nanos() as Nanos
    }

    /// The node that owns the peer address `peer` (a client's, or a server's: a replica or a
    /// sentinel).
    pub(crate) fn node_of(&self, peer: SocketAddr) -> NodeId {
        match peer.ip() {
            IpAddr::V4(ip) if ip.octets()[..3] == [10, 0, 0] => {
                let n = ip.octets()[3] as u32;
                assert!(n >= 1 && n <= self.servers, "no server at {ip}");
                n - 1
            }
            IpAddr::V4(ip) if ip.octets()[..3] == [10, 0, 1] => {
                let n = ip.octets()[3] as u32;
                assert!(n >= 1 && n <= self.clients, "no client at {ip}");
                self.servers + n - 1
            }
            ip => panic!("a connection from {ip}, which is no client"),
        }
    }

    /// A fresh connection id, from 1.
    pub(crate) fn new_connection(&self) -> u64 {
        self.connections
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1
    }

    /// When a reply that server `server` makes now to client node `client` may leave: the end
    /// of the latest `drop_replies` window covering the pair, `None` when none does.
    pub(crate) fn reply_held_until(&self, server: NodeId, client: NodeId) -> Option<Nanos> {
        let now = self.now();
        self.held
            .lock()
            .expect("one thread")
            .iter()
            .filter(|(c, s, end)| *end > now && c.contains(&client) && s.contains(&server))
            .map(|(_, _, end)| *end)
            .max()
    }

    /// Server `server`'s wall clock at true time `now`, ns (0 rather than negative): the time
    /// its keys expire by, as Redis's expire by `mstime()`.
    /// Server `server`'s monotonic clock at true time `now`, ns: what etcd's lessor times
    /// leases by (Go's monotonic clock), so a step of the wall clock leaves leases alone and a
    /// drift stretches or shrinks them.
    #[cfg(feature = "etcd")]
    pub(crate) fn server_mono(&self, server: u32, now: Nanos) -> Nanos {
        self.clocks.lock().expect("one thread")[server as usize].mono(now)
    }

    pub(crate) fn server_time(&self, server: u32, now: Nanos) -> Nanos {
        self.clocks.lock().expect("one thread")[server as usize]
            .wall(now)
            .max(0) as Nanos
    }

    /// The servers' indices (their node ids).
    pub(crate) fn servers(&self) -> std::ops::Range<u32> {
        0..self.servers
    }

    /// Server `i`'s address.
    pub(crate) fn server_addr(&self, i: u32) -> SocketAddr {
        SocketAddr::new(server_ip(i), PORT)
    }

    /// Sentinel `i`'s address (beside server `i`).
    pub(crate) fn sentinel_addr(&self, i: u32) -> SocketAddr {
        SocketAddr::new(server_ip(i), crate::sentinel::PORT)
    }

    /// Sentinel's `down-after-milliseconds`, ns.
    pub(crate) fn down_after(&self) -> Nanos {
        self.sentinel.unwrap_or(30_000 * MS)
    }

    /// How many sentinels must agree that the primary is down: a majority.
    pub(crate) fn sentinel_quorum(&self) -> usize {
        self.servers as usize / 2 + 1
    }

    /// Whether the run has Sentinel.
    pub(crate) fn has_sentinel(&self) -> bool {
        self.sentinel.is_some()
    }

    /// Server `i`'s role.
    pub(crate) fn role(&self, i: u32) -> Role {
        self.roles.lock().expect("one thread")[i as usize]
    }

    /// Makes server `i` a `role`; a server that stops being a primary stops feeding replicas.
    pub(crate) fn set_role(&self, i: u32, role: Role) {
        self.roles.lock().expect("one thread")[i as usize] = role;
        if role != Role::Primary {
            self.feeds.lock().expect("one thread")[i as usize].clear();
        }
    }

    /// Server `i`'s replication offset.
    pub(crate) fn offset(&self, i: u32) -> u64 {
        self.offsets.lock().expect("one thread")[i as usize]
    }

    /// Sets server `i`'s replication offset.
    pub(crate) fn set_offset(&self, i: u32, o: u64) {
        self.offsets.lock().expect("one thread")[i as usize] = o;
    }

    /// Adds a replication stream to server `i`'s replicas.
    pub(crate) fn add_feed(&self, i: u32, tx: tokio::sync::mpsc::UnboundedSender<Vec<u8>>) {
        self.feeds.lock().expect("one thread")[i as usize].push(tx);
    }

    /// Sends a write's stream entries to every replica of server `i` (dropping dead streams).
    pub(crate) fn feed(&self, i: u32, bytes: &[u8]) {
        self.feeds.lock().expect("one thread")[i as usize]
            .retain(|tx| tx.send(bytes.to_vec()).is_ok());
    }

    /// One more fault holds `a` (and `b`: a link, either way round) in `hold`; `true` when it
    /// is the first, which applies it.
    fn enter(&self, hold: Hold, a: NodeId, b: NodeId) -> bool {
        let mut h = self.holds.lock().expect("one thread");
        let n = h.entry((hold, a.min(b), a.max(b))).or_default();
        *n += 1;
        *n == 1
    }

    /// One fault stops holding `a` (and `b`) in `hold`; `true` when it was the last, which
    /// lifts it.
    fn leave(&self, hold: Hold, a: NodeId, b: NodeId) -> bool {
        let mut h = self.holds.lock().expect("one thread");
        let n = h.entry((hold, a.min(b), a.max(b))).or_default();
        *n = n.saturating_sub(1);
        *n == 0
    }

    /// Reads or changes sentinel `i`'s view.
    pub(crate) fn watch<T>(&self, i: u32, f: impl FnOnce(&mut Watch) -> T) -> T {
        f(&mut self.watches.lock().expect("one thread")[i as usize])
    }

    /// The true-time instant `t` ns after the run's start.
    pub(crate) fn instant(&self, t: Nanos) -> madsim::time::Instant {
        self.start + Duration::from_nanos(t)
    }

    pub(crate) fn record<T>(&self, f: impl FnOnce(&mut Recorder) -> T) -> T {
        f(&mut self.recorder.lock().expect("one thread"))
    }
}

/// Server `i` (from 0) is at 10.0.0.(i+1).
fn server_ip(i: u32) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 0, 0, i as u8 + 1))
}

/// Client `c` (from 1: `c1`) is at 10.0.1.c.
fn client_ip(c: u32) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 0, 1, c as u8))
}

/// A finished run.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// What the server recorded, and the faults.
    pub history: History,
    /// The node layout, for names in verdicts.
    pub cluster: Cluster,
}

impl Outcome {
    /// How many `f` operations of the history reached `phase` (e.g. grants: `OpF::Acquire`,
    /// `Phase::Ok`).
    pub fn count(
        &self,
        f: locksim_core::history::OpF,
        phase: locksim_core::history::Phase,
    ) -> usize {
        self.history
            .events
            .iter()
            .filter(|e| {
                matches!(e.kind, locksim_core::history::EventKind::Op { f: ff, phase: p, .. } if ff == f && p == phase)
            })
            .count()
    }

    /// locksim's safety verdict on the history: S1 (no double grant), S2 (no stale resource
    /// write) and S4 (no release of another's lock).
    pub fn verdict(&self) -> Verdict {
        check_all(
            &self.history,
            &CheckOptions {
                cluster: Some(&self.cluster),
                ..Default::default()
            },
        )
    }

    /// The history's digest ([`History::digest`]): equal digests, equal runs.
    pub fn digest(&self) -> String {
        self.history.digest()
    }
}

/// Runs `scenario` with `client` as every client node's program and returns what the server
/// recorded. The function is called afresh on each (re)start of a client node; the run ends
/// after `scenario.duration` whatever the clients do.
///
/// Deterministic: the same scenario and client code give the same history. Each run gets a
/// fresh OS thread (madsim's and std's per-thread state must not carry over between runs).
///
/// # Panics
/// When the scenario is invalid ([`Scenario::validate`]), or the simulation panics (a panic in
/// the client's code included), with its message.
pub fn run<F, Fut>(scenario: &Scenario, client: F) -> Outcome
where
    F: Fn(Client) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + 'static,
{
    if let Err(e) = scenario.validate() {
        panic!("invalid scenario: {e}");
    }
    let scenario = scenario.clone();
    let thread = std::thread::Builder::new()
        .name(format!("locksim-resp-seed-{}", scenario.seed))
        .stack_size(8 << 20)
        .spawn(move || run_here(&scenario, Arc::new(client)))
        .expect("a thread for the simulation");
    match thread.join() {
        Ok(o) => o,
        Err(p) => std::panic::resume_unwind(p),
    }
}

fn run_here<F, Fut>(scenario: &Scenario, client: Arc<F>) -> Outcome
where
    F: Fn(Client) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let rt = Runtime::with_seed_and_config(scenario.seed, madsim::Config::default());
    let scenario = scenario.clone();
    rt.block_on(async move {
        let cluster = scenario.cluster();
        let shared = Arc::new(Shared {
            start: madsim::time::Instant::now(),
            scripts: scenario.scripts.clone(),
            recorder: Mutex::new(
                Recorder::new(
                    scenario.servers,
                    cluster.resource_id(),
                    scenario.resource_prefix.as_bytes(),
                )
                .with_quorum(if scenario.sentinel.is_some() {
                    1
                } else {
                    scenario.servers as usize / 2 + 1
                }),
            ),
            servers: scenario.servers,
            clients: scenario.clients,
            connections: Default::default(),
            held: Default::default(),
            clocks: Mutex::new(vec![Clock::new(0, 0); scenario.servers as usize]),
            holds: Default::default(),
            #[cfg(feature = "etcd")]
            etcd: (0..scenario.servers).map(|_| Default::default()).collect(),
            service: scenario.service,
            sentinel: scenario.sentinel,
            roles: Mutex::new(
                (0..scenario.servers)
                    .map(|i| {
                        if i == 0 || scenario.sentinel.is_none() {
                            Role::Primary
                        } else {
                            Role::Replica(0)
                        }
                    })
                    .collect(),
            ),
            offsets: Mutex::new(vec![0; scenario.servers as usize]),
            feeds: Mutex::new(vec![Vec::new(); scenario.servers as usize]),
            watches: Mutex::new(
                (0..scenario.servers)
                    .map(|_| Watch {
                        epoch: 0,
                        primary: 0,
                        voted: 0,
                        last_ok: 0,
                        sdown: false,
                    })
                    .collect(),
            ),
        });
        let servers: Vec<SocketAddr> = (0..scenario.servers)
            .map(|i| SocketAddr::new(server_ip(i), scenario.service.port()))
            .collect();
        let h = Handle::current();
        let mut ids = Vec::new();
        for (i, addr) in servers.iter().copied().enumerate() {
            let shared = shared.clone();
            let node = h
                .create_node()
                .name(cluster.name(i as NodeId))
                .ip(addr.ip())
                .init(move || start_server(addr, i as u32, shared.clone()))
                .build();
            ids.push(node.id());
        }
        let starts: Arc<Vec<std::sync::atomic::AtomicU32>> =
            Arc::new((0..=scenario.clients).map(|_| Default::default()).collect());
        for c in 1..=scenario.clients {
            let (client, starts, servers) = (client.clone(), starts.clone(), servers.clone());
            let node_id = scenario.client(c);
            let node = h
                .create_node()
                .name(cluster.name(node_id))
                .ip(client_ip(c))
                .init(move || {
                    let incarnation =
                        starts[c as usize].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    client(Client {
                        node: node_id,
                        name: format!("c{c}"),
                        incarnation,
                        server: servers[0],
                        servers: servers.clone(),
                    })
                })
                .build();
            ids.push(node.id());
        }
        let ids = Arc::new(ids);
        let (fire, mut fired) = tokio::sync::mpsc::unbounded_channel::<(Fault, Nanos)>();
        let mut triggers = Vec::new();
        for t in scenario.faults.clone() {
            match t.after {
                Some(after) => triggers.push((after, t.fault)),
                None => {
                    let (shared, ids) = (shared.clone(), ids.clone());
                    madsim::task::spawn(async move {
                        madsim::time::sleep_until(shared.start + Duration::from_nanos(t.at)).await;
                        inject(&shared, &ids, t.fault).await;
                    });
                }
            }
        }
        if !triggers.is_empty() {
            shared.record(|r| r.watch(triggers, fire));
            let (shared, ids) = (shared.clone(), ids.clone());
            madsim::task::spawn(async move {
                while let Some((fault, delay)) = fired.recv().await {
                    let (shared, ids) = (shared.clone(), ids.clone());
                    madsim::task::spawn(async move {
                        // madsim's sleep waits at least 1 ms: a trigger without a delay strikes
                        // at its event's instant.
                        if delay > 0 {
                            madsim::time::sleep(Duration::from_nanos(delay)).await;
                        }
                        inject(&shared, &ids, fault).await;
                    });
                }
            });
        }
        madsim::time::sleep_until(shared.start + Duration::from_nanos(scenario.duration)).await;
        for id in ids.iter() {
            h.kill(*id);
        }
        let history = shared.record(|r| r.finish(scenario.duration));
        Outcome { history, cluster }
    })
}

/// Steps (`delta` ns, the wall clock only) or drifts (`ppm`, both clocks and every timer) a
/// client node's clocks as its own code reads them: `SystemTime::now`, `Instant::now` and
/// `tokio::time` (madsim-tokio) in the user's process. Needs madsim patched for per-node
/// clocks (crates/resp-sim/madsim-clocks); `Scenario::validate` refuses these faults without
/// the feature.
#[cfg(feature = "client-clocks")]
fn client_clock(node: madsim::task::NodeId, delta: Option<i64>, ppm: Option<i64>) {
    if let Some(delta) = delta {
        madsim::time::step_node_clock(node, delta);
    }
    if let Some(ppm) = ppm {
        madsim::time::set_node_drift(node, ppm);
    }
}

#[cfg(not(feature = "client-clocks"))]
fn client_clock(_: madsim::task::NodeId, _: Option<i64>, _: Option<i64>) {
    unreachable!("validated: client clock faults need the feature client-clocks")
}

/// Starts server node `i`'s service.
async fn start_server(addr: SocketAddr, i: u32, shared: Arc<Shared>) {
    match shared.service {
        #[cfg(feature = "etcd")]
        Service::Etcd => crate::etcd::start(addr, i, shared).await,
        _ => crate::server::start(addr, i, shared).await,
    }
}

/// Applies `fault` now, records it, and undoes it after its duration.
async fn inject(shared: &Shared, ids: &[madsim::task::NodeId], fault: Fault) {
    let h = Handle::current();
    let net = NetSim::current();
    let now = shared.now();
    let node = fault.node().unwrap_or(0);
    shared.record(|r| r.fault(now, node, fault.clone()));
    // Faults of one kind on one node (or link) may overlap: each is counted, and the node is
    // resumed, healed or restarted when the last of them ends.
    let (duration, what) = match &fault {
        Fault::Pause { node, duration, .. } => {
            if shared.enter(Hold::Pause, *node, *node) {
                h.pause(ids[*node as usize]);
            }
            (Some(*duration), "pause")
        }
        Fault::Isolate { node, duration, .. } => {
            if shared.enter(Hold::Isolate, *node, *node) {
                net.clog_node(ids[*node as usize]);
            }
            (Some(*duration), "isolate")
        }
        Fault::Partition { a, b, duration, .. } => {
            for (x, y) in pairs(a, b) {
                if shared.enter(Hold::Link, x, y) {
                    net.clog_link(ids[x as usize], ids[y as usize]);
                    net.clog_link(ids[y as usize], ids[x as usize]);
                }
            }
            (Some(*duration), "partition")
        }
        Fault::DropReplies {
            clients,
            servers,
            duration,
        } => {
            shared.held.lock().expect("one thread").push((
                clients.clone(),
                servers.clone(),
                now + duration,
            ));
            (Some(*duration), "drop_replies")
        }
        Fault::ClockStep { node, delta } => {
            if *node < shared.servers {
                shared.clocks.lock().expect("one thread")[*node as usize].step(now, *delta);
            } else {
                client_clock(ids[*node as usize], Some(*delta), None);
            }
            return;
        }
        Fault::ClockDrift { node, ppm } => {
            if *node < shared.servers {
                shared.clocks.lock().expect("one thread")[*node as usize].set_drift(now, *ppm);
            } else {
                client_clock(ids[*node as usize], None, Some(*ppm));
            }
            return;
        }
        Fault::Crash {
            node,
            restart_after,
        } => {
            if shared.enter(Hold::Down, *node, *node) {
                // Before the kill: dropping the dead process's tasks must find it dead.
                if *node < shared.servers {
                    shared.crashed(*node);
                }
                h.kill(ids[*node as usize]);
            }
            (*restart_after, "crash")
        }
        _ => unreachable!("validated"),
    };
    let Some(d) = duration else { return };
    madsim::time::sleep(Duration::from_nanos(d)).await;
    match &fault {
        Fault::Pause { node, .. } => {
            if shared.leave(Hold::Pause, *node, *node) {
                h.resume(ids[*node as usize]);
            }
        }
        Fault::Isolate { node, .. } => {
            if shared.leave(Hold::Isolate, *node, *node) {
                net.unclog_node(ids[*node as usize]);
            }
        }
        Fault::Partition { a, b, .. } => {
            for (x, y) in pairs(a, b) {
                if shared.leave(Hold::Link, x, y) {
                    net.unclog_link(ids[x as usize], ids[y as usize]);
                    net.unclog_link(ids[y as usize], ids[x as usize]);
                }
            }
        }
        Fault::Crash { node, .. } => {
            if shared.leave(Hold::Down, *node, *node) {
                h.restart(ids[*node as usize]);
            }
        }
        // The window's end is its own: replies held in it leave then.
        Fault::DropReplies { .. } => {}
        _ => unreachable!("validated"),
    }
    let now = shared.now();
    shared.record(|r| r.fault_end(now, node, format!("{what} ended")));
}

fn pairs<'a>(a: &'a [NodeId], b: &'a [NodeId]) -> impl Iterator<Item = (NodeId, NodeId)> + 'a {
    a.iter().flat_map(move |x| b.iter().map(move |y| (*x, *y)))
}
