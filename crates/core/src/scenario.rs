//! Scenarios: everything needed to re-run one simulation.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::fault::{FaultKind, FaultPlan};
use crate::time::{Nanos, MS, SEC};

/// A node of the simulated cluster, as an index: lock servers first (`0..servers`), then
/// clients, then the protected resource (always the last node).
pub type NodeId = u32;

/// What a node does in the simulated world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A lock-service node (a Redis master, the central server, a Raft replica, ...).
    Server,
    /// A process that takes the lock and writes to the resource.
    Client,
    /// The protected resource (a storage service that accepts writes, optionally fenced).
    Resource,
}

/// The shape of the simulated cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    /// Number of lock-service nodes (1 for `central`, 5 masters for `redlock` by default).
    pub servers: u32,
    /// Number of client processes.
    pub clients: u32,
}

impl Cluster {
    /// Total number of nodes: servers, clients and the resource. Saturates at `u32::MAX` for
    /// sizes no valid cluster has (see [`Cluster::checked_nodes`]; `Scenario::validate`
    /// refuses them), so a huge count never wraps to a small one.
    pub fn nodes(&self) -> u32 {
        self.checked_nodes().unwrap_or(u32::MAX)
    }
    /// Total number of nodes, or `None` when it does not fit in a `u32`.
    pub fn checked_nodes(&self) -> Option<u32> {
        self.servers.checked_add(self.clients)?.checked_add(1)
    }
    /// The lock-service nodes.
    pub fn server_ids(&self) -> std::ops::Range<NodeId> {
        0..self.servers
    }
    /// The client nodes.
    pub fn client_ids(&self) -> std::ops::Range<NodeId> {
        self.servers..self.servers.saturating_add(self.clients)
    }
    /// The protected resource node.
    pub fn resource_id(&self) -> NodeId {
        self.servers.saturating_add(self.clients)
    }
    /// The role of node `id`.
    ///
    /// # Panics
    /// When `id` is not a node of this cluster.
    pub fn role(&self, id: NodeId) -> Role {
        if id < self.servers {
            Role::Server
        } else if id < self.servers.saturating_add(self.clients) {
            Role::Client
        } else if id == self.resource_id() {
            Role::Resource
        } else {
            panic!("node {id} is not in a cluster of {} nodes", self.nodes())
        }
    }
    /// A short human name: `n1..nS` for servers, `c1..cC` for clients, `res` for the resource.
    pub fn name(&self, id: NodeId) -> String {
        match self.role(id) {
            Role::Server => format!("n{}", id + 1),
            Role::Client => format!("c{}", id - self.servers + 1),
            Role::Resource => "res".to_string(),
        }
    }
    /// Parses a name given by [`Cluster::name`] back into a node id.
    pub fn parse_name(&self, name: &str) -> Option<NodeId> {
        let idx = |s: &str| s.parse::<u32>().ok().filter(|&i| i >= 1);
        if name == "res" || name == "resource" {
            Some(self.resource_id())
        } else if let Some(i) = name.strip_prefix('n').and_then(idx) {
            (i <= self.servers).then_some(i - 1)
        } else if let Some(i) = name.strip_prefix('c').and_then(idx) {
            (i <= self.clients).then_some(self.servers + i - 1)
        } else {
            None
        }
    }
}

/// What the clients do (DESIGN §5). Every duration is in nanoseconds of the client's own
/// monotonic clock unless said otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// Number of distinct lock keys the clients contend on (each client picks one per round).
    pub keys: u32,
    /// Lease length asked for at acquire, in nanoseconds.
    pub ttl: Nanos,
    /// Length of the run in true time, in nanoseconds; clients stop starting rounds after it.
    pub duration: Nanos,
    /// Resource writes performed under each grant.
    pub writes_per_hold: u32,
    /// Local work before each write, drawn uniformly from `[work_min, work_max]` nanoseconds.
    /// It is an `.await` that sits between the validity check and the write.
    pub work_min: Nanos,
    /// See `work_min`.
    pub work_max: Nanos,
    /// Pause before the first round and after each release, drawn uniformly from
    /// `[0, think_max]` nanoseconds (failed attempts wait `retry_delay_max` instead).
    pub think_max: Nanos,
    /// After a failed acquire, wait a random delay in `[0, retry_delay_max]` nanoseconds.
    pub retry_delay_max: Nanos,
    /// Per-call timeout of client RPCs (to the resource; algorithms use their own knobs).
    pub rpc_timeout: Nanos,
    /// Check the grant's remaining validity before each write (a careful client). When the
    /// remaining validity is shorter than the planned work, the client gives the lock up.
    pub check_validity: bool,
    /// Renew (extend) the lease every this many nanoseconds from a watchdog task, as Redisson
    /// does; `None` disables renewal. A renewing client trusts its grant until it releases.
    pub renew_every: Option<Nanos>,
    /// The declared clock-uncertainty bound `ε` of the lock service, ns of true time, used by
    /// S3: leases may end up to `ε` early or late. `None` means `ttl·0.01 + 2 ms`, the drift
    /// allowance of the Redlock reference clients.
    #[serde(default)]
    pub uncertainty: Option<Nanos>,
}

impl Workload {
    /// The declared clock-uncertainty bound in ns (see `uncertainty`).
    pub fn uncertainty(&self) -> Nanos {
        self.uncertainty.unwrap_or(self.ttl / 100 + 2 * MS)
    }
}

impl Default for Workload {
    fn default() -> Self {
        Workload {
            keys: 1,
            ttl: SEC,
            duration: 10 * SEC,
            writes_per_hold: 2,
            work_min: 10 * MS,
            work_max: 500 * MS,
            think_max: 100 * MS,
            retry_delay_max: 200 * MS,
            rpc_timeout: 100 * MS,
            check_validity: true,
            renew_every: None,
            uncertainty: None,
        }
    }
}

/// The longest simulated run a scenario may ask for: one hour, ns.
pub const MAX_RUN_NS: Nanos = 3_600 * SEC;
/// The longest TTL, work, think, retry or timeout duration: one day, ns.
pub const MAX_DURATION_NS: Nanos = 86_400 * SEC;
/// The most nodes a cluster may have.
pub const MAX_NODES: u32 = 1_000;

impl Workload {
    /// Checks the workload's values.
    ///
    /// # Errors
    /// A message naming the bad field.
    pub fn validate(&self) -> Result<(), String> {
        let positive = [
            ("ttl", self.ttl),
            ("duration", self.duration),
            ("rpc_timeout", self.rpc_timeout),
        ];
        for (name, v) in positive {
            if v == 0 {
                return Err(format!("workload `{name}` must be more than zero"));
            }
        }
        if self.duration > MAX_RUN_NS {
            return Err("workload `duration` is longer than an hour of simulated time".into());
        }
        let bounded = [
            ("ttl", self.ttl),
            ("work_min", self.work_min),
            ("work_max", self.work_max),
            ("think_max", self.think_max),
            ("retry_delay_max", self.retry_delay_max),
            ("rpc_timeout", self.rpc_timeout),
            ("renew_every", self.renew_every.unwrap_or(0)),
            ("uncertainty", self.uncertainty.unwrap_or(0)),
        ];
        for (name, v) in bounded {
            if v > MAX_DURATION_NS {
                return Err(format!("workload `{name}` is longer than a day"));
            }
        }
        if self.work_min > self.work_max {
            return Err("workload `work_min` is above `work_max`".into());
        }
        if self.keys == 0 {
            return Err("workload `keys` must be at least 1".into());
        }
        if self.renew_every == Some(0) {
            return Err("workload `renew_every` must be more than zero (or absent)".into());
        }
        Ok(())
    }
}

impl Scenario {
    /// Checks the cluster, the workload and the fault plan.
    ///
    /// # Errors
    /// A message naming the bad field.
    pub fn validate(&self) -> Result<(), String> {
        let c = &self.cluster;
        if c.servers == 0 || c.clients == 0 {
            return Err("cluster: a run needs at least one server and one client".into());
        }
        match c.checked_nodes() {
            Some(n) if n <= MAX_NODES => {}
            _ => {
                return Err(format!(
                    "cluster: {} servers and {} clients is more than {MAX_NODES} nodes",
                    c.servers, c.clients
                ))
            }
        }
        self.workload.validate()?;
        self.faults.validate(c)
    }
}

/// One simulation, fully specified: running it twice gives the same history, byte for byte.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Seeds madsim's runtime (message latencies, scheduling) and every random choice of the
    /// workload and the algorithms (through per-node ChaCha streams).
    pub seed: u64,
    /// Registered algorithm name, e.g. `central`, `central-fencing`, `redlock`.
    pub algorithm: String,
    /// Algorithm knobs as `key = value` strings (validated by the algorithm).
    #[serde(default)]
    pub config: BTreeMap<String, String>,
    /// Cluster shape.
    pub cluster: Cluster,
    /// Client behaviour.
    pub workload: Workload,
    /// Fault kinds the plan was drawn from (informational; the plan is what runs).
    #[serde(default)]
    pub fault_kinds: Vec<FaultKind>,
    /// The explicit, timed fault plan.
    pub faults: FaultPlan,
}
