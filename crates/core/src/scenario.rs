//! Scenarios: everything needed to re-run one simulation.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::fault::{FaultKind, FaultPlan};
use crate::history::LocalClock;
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
    /// Parses a name given by [`Cluster::name`] back into a node id: exactly as it is
    /// written there (`c1`, `n12`, `res`, or `resource`), so `c01`, `c+1` and `n0` name no
    /// node (one spelling per node, the one the timeline prints).
    pub fn parse_name(&self, name: &str) -> Option<NodeId> {
        let idx = |s: &str| {
            s.parse::<u32>()
                .ok()
                .filter(|&i| i >= 1 && i.to_string() == s)
        };
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

/// What the clients do (docs/design.md §5). Every duration is in nanoseconds of the client's own
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
    /// After a failed acquire, wait a random delay in `[0, retry_delay_max]` nanoseconds
    /// (the `uniform` [`RetryPolicy`]); the longest wait, `cap`, of the other policies.
    pub retry_delay_max: Nanos,
    /// How a client waits between failed acquires ([`RetryPolicy`]; default `uniform`).
    #[serde(default, skip_serializing_if = "RetryPolicy::is_default")]
    pub retry: RetryPolicy,
    /// The first wait of the exponential policies, `base`, ns (default 10 ms).
    #[serde(
        default = "default_retry_base",
        skip_serializing_if = "is_default_retry_base"
    )]
    pub retry_base: Nanos,
    /// Failed acquires in a row after which a client gives the round up and starts a new one
    /// (after its think time, perhaps on another key); 0: it never gives up.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub retry_attempts: u32,
    /// Per-call timeout of client RPCs (to the resource; algorithms use their own knobs).
    pub rpc_timeout: Nanos,
    /// Check the grant's remaining validity before each write (a careful client). When the
    /// remaining validity is shorter than the planned work, the client gives the lock up.
    pub check_validity: bool,
    /// Renew (extend) the lease every this many nanoseconds of the client's monotonic clock,
    /// from a renewal task beside the work (Redisson's watchdog, client-go's renew loop);
    /// `None` disables renewal. The validity each successful renewal returns becomes the
    /// grant's new deadline.
    pub renew_every: Option<Nanos>,
    /// The holder stops acting (and its hold ends) when no renewal has succeeded for this many
    /// nanoseconds of its monotonic clock, counted from the send time of the last successful
    /// renewal (or of the acquire): client-go's `RenewDeadline`. `None`: no such deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renew_deadline: Option<Nanos>,
    /// What the renewal task does after a renewal failed without an answer.
    #[serde(default, skip_serializing_if = "RenewRetry::is_default")]
    pub renew_retry: RenewRetry,
    /// How long a holder keeps acting (its critical section goes on, writes included) after
    /// it learns its lock is lost or its deadline passed, ns of its monotonic clock: slow
    /// shutdown hooks, in-flight work. 0: it stops at once.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub step_down: Nanos,
    /// How long a holder keeps acting after it has invoked its own release, ns of its
    /// monotonic clock: work that goes on draining while the lock is already given back
    /// (client-go's `ReleaseOnCancel` releases the Lease when the elector's context is
    /// cancelled while the leader's controllers may still run: kubernetes/kubernetes#71490,
    /// kubernetes-sigs/controller-runtime#1126). Its writes go on under the released grant
    /// (work, then a write, while the next write would still start inside this window), and
    /// S1/S2 judge them as late acts. 0 (the default): it stops acting before it releases.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub work_after_release: Nanos,
    /// Per-client settings that differ from the ones above, by client name (`c1`, `c2`, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub per_client: BTreeMap<String, ClientProfile>,
    /// The declared clock-uncertainty bound `ε` of the lock service, ns of true time, used by
    /// S3: leases may end up to `ε` early or late. `None` means `ttl·0.01 + 2 ms`, the drift
    /// allowance of the Redlock reference clients.
    #[serde(default)]
    pub uncertainty: Option<Nanos>,
    /// The network model every message of the run travels through (see [`Network`]). New
    /// workloads ([`Workload::default`]) use [`Network::Tcp`]; a serialized workload without
    /// the field (every trace and record written before the field existed) means
    /// [`Network::Datagram`], the only model those runs knew, so they replay unchanged. It is
    /// always written.
    #[serde(default = "Network::legacy")]
    pub network: Network,
    /// Linux's `tcp_rto_min`: the floor of the retransmission timeout, ns of true time
    /// (default 200 ms, the kernel's `TCP_RTO_MIN`). Only read under [`Network::Tcp`].
    #[serde(default = "default_rto_min")]
    pub tcp_rto_min: Nanos,
    /// Linux's `net.ipv4.tcp_retries2`: how many times an unacknowledged segment is
    /// retransmitted before the connection is given up (default 15, about 924.6 s with a
    /// 200 ms RTO). Only read under [`Network::Tcp`].
    #[serde(default = "default_retries2")]
    pub tcp_retries2: u32,
    /// Linux's `net.ipv4.tcp_orphan_retries`: how many times an orphaned connection (its
    /// socket closed by the application, e.g. after a request timeout, or by the death of
    /// its process) retransmits a segment before its kernel gives it up (default 8, about
    /// 102 s with a 200 ms RTO; 0 means 8, as Linux reads its own default of 0). Only read
    /// under [`Network::Tcp`].
    #[serde(default = "default_orphan_retries")]
    pub tcp_orphan_retries: u32,
    /// What a `crash` fault kills under [`Network::Tcp`]: the process (the default) or the
    /// whole host. Under [`Network::Datagram`] a crashed node simply answers nothing.
    #[serde(default)]
    pub crash: CrashKind,
}

/// Linux's default `tcp_rto_min` (`TCP_RTO_MIN`, 200 ms), ns.
pub const TCP_RTO_MIN_DEFAULT: Nanos = 200 * MS;
/// Linux's default `net.ipv4.tcp_retries2` (15).
pub const TCP_RETRIES2_DEFAULT: u32 = 15;
/// The retries Linux's default `net.ipv4.tcp_orphan_retries` (0) stands for: 8
/// (`tcp_orphan_retries()` in `net/ipv4/tcp_timer.c`; ip-sysctl.rst).
pub const TCP_ORPHAN_RETRIES_DEFAULT: u32 = 8;
/// Linux's `TCP_RTO_MAX` (120 s), ns: the longest retransmission timeout, and so the
/// largest `tcp_rto_min`.
pub const TCP_RTO_MAX: Nanos = 120 * SEC;

/// The default `retry_base`: 10 ms.
pub const RETRY_BASE_DEFAULT: Nanos = 10 * MS;

fn default_retry_base() -> Nanos {
    RETRY_BASE_DEFAULT
}

fn is_default_retry_base(v: &Nanos) -> bool {
    *v == RETRY_BASE_DEFAULT
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

fn default_rto_min() -> Nanos {
    TCP_RTO_MIN_DEFAULT
}
fn default_retries2() -> u32 {
    TCP_RETRIES2_DEFAULT
}
fn default_orphan_retries() -> u32 {
    TCP_ORPHAN_RETRIES_DEFAULT
}

/// The network model of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Network {
    /// Connections as Linux TCP keeps them (`locksim_sim::tcp`): a handshake that needs both
    /// directions, ordered and de-duplicated delivery, retransmission of what a fault
    /// swallowed (so it can land after the heal), connection death after `tcp_retries2`.
    #[default]
    Tcp,
    /// Independent messages: what a fault stops is gone, nothing is retransmitted, a
    /// `duplicate` fault can deliver a message twice (the model of every run before
    /// `network` existed).
    Datagram,
}

impl Network {
    /// The model a serialized workload without a `network` field ran with.
    pub fn legacy() -> Network {
        Network::Datagram
    }
    /// The setting's name, as written in files and `--set`.
    pub fn name(self) -> &'static str {
        match self {
            Network::Tcp => "tcp",
            Network::Datagram => "datagram",
        }
    }
}

/// What a `crash` fault kills when the network model is [`Network::Tcp`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CrashKind {
    /// The process dies (SIGKILL) and its host stays up, as real mode's `crash` does: the
    /// kernel closes its connections at once (peers waiting on it get a reset) and refuses
    /// new ones until it restarts.
    #[default]
    Process,
    /// The host goes down: nothing answers, its peers retransmit into silence until it is
    /// back, and then get resets for the connections it forgot.
    Host,
}

impl CrashKind {
    /// The setting's name, as written in files and `--set`.
    pub fn name(self) -> &'static str {
        match self {
            CrashKind::Process => "process",
            CrashKind::Host => "host",
        }
    }
}

fn is_zero(n: &Nanos) -> bool {
    *n == 0
}

/// What a renewal task does after a renewal failed without a definite answer (a timeout, no
/// leader); a definite "the lock is gone" always ends the hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RenewRetry {
    /// Retry every `renew_every / 3` until the lease would end (what careful clients do).
    #[default]
    UntilExpiry,
    /// Stop renewing at the first failure (a real, common client bug): the holder keeps
    /// working on a lease nobody renews.
    GiveUp,
}

impl RenewRetry {
    fn is_default(&self) -> bool {
        *self == RenewRetry::UntilExpiry
    }
    /// The setting's name, as written in files and `--set`.
    pub fn name(self) -> &'static str {
        match self {
            RenewRetry::UntilExpiry => "until-expiry",
            RenewRetry::GiveUp => "give-up",
        }
    }
}

/// How a client waits after a failed acquire before it asks again. The exponential policies
/// are those of Marc Brooker's "Exponential Backoff And Jitter" (AWS Architecture Blog, 2015),
/// with `base` the workload's `retry_base`, `cap` its `retry_delay_max` and `attempt` the
/// number of failed acquires in a row before this one (0 for the first).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RetryPolicy {
    /// Always `cap`, no randomness: waiters that failed together retry together (the herd).
    Fixed,
    /// Uniform in `[0, cap]`: jitter without backoff (locksim's default; node-redlock's
    /// `retryDelay ± retryJitter` and the Redis docs' "random delay" are of this kind).
    #[default]
    Uniform,
    /// `min(cap, base · 2^attempt)`: backoff without jitter.
    Exponential,
    /// Full jitter: uniform in `[0, min(cap, base · 2^attempt)]`.
    ExponentialFull,
    /// Equal jitter: half of `min(cap, base · 2^attempt)` plus uniform in the other half.
    ExponentialEqual,
    /// Decorrelated jitter: `min(cap, uniform in [base, 3 · previous])`, the previous wait
    /// starting at `base`.
    ExponentialDecorrelated,
}

impl RetryPolicy {
    /// Every policy, in the order `locksim list` gives them.
    pub const ALL: [RetryPolicy; 6] = [
        RetryPolicy::Fixed,
        RetryPolicy::Uniform,
        RetryPolicy::Exponential,
        RetryPolicy::ExponentialFull,
        RetryPolicy::ExponentialEqual,
        RetryPolicy::ExponentialDecorrelated,
    ];
    fn is_default(&self) -> bool {
        *self == RetryPolicy::Uniform
    }
    /// The setting's name, as written in files and `--set`.
    pub fn name(self) -> &'static str {
        match self {
            RetryPolicy::Fixed => "fixed",
            RetryPolicy::Uniform => "uniform",
            RetryPolicy::Exponential => "exponential",
            RetryPolicy::ExponentialFull => "exponential-full",
            RetryPolicy::ExponentialEqual => "exponential-equal",
            RetryPolicy::ExponentialDecorrelated => "exponential-decorrelated",
        }
    }
    /// The policy named `name`.
    ///
    /// # Errors
    /// When `name` is none of [`RetryPolicy::ALL`]'s names; the message lists them.
    pub fn parse(name: &str) -> Result<RetryPolicy, String> {
        RetryPolicy::ALL
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = RetryPolicy::ALL.iter().map(|p| p.name()).collect();
                format!(
                    "`{name}` is not a retry policy (choose {})",
                    names.join(", ")
                )
            })
    }
    /// Whether the policy grows its waits from `retry_base`.
    pub fn exponential(self) -> bool {
        !matches!(self, RetryPolicy::Fixed | RetryPolicy::Uniform)
    }
}

/// One client's settings where they differ from the workload's (`[client.c2]` in a campaign
/// file, `--set c2.ttl=10s` on the command line). Every field is optional; durations are ns
/// of the client's own monotonic clock.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientProfile {
    /// Lease length this client asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<Nanos>,
    /// Renewal period; `Some(0)` turns renewal off for this client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renew_every: Option<Nanos>,
    /// Renew deadline; `Some(0)` turns it off for this client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renew_deadline: Option<Nanos>,
    /// Renewal retry policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renew_retry: Option<RenewRetry>,
    /// Step-down time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_down: Option<Nanos>,
    /// How long it keeps acting after its own release ([`Workload::work_after_release`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_after_release: Option<Nanos>,
    /// Retry policy after a failed acquire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryPolicy>,
    /// Initial offset of the client's wall clock from true time, ns (negative: behind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_offset: Option<i64>,
    /// Drift of the client's clocks from the start, ppm (both wall and monotonic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_drift_ppm: Option<i64>,
    /// The clock the client's lock library measures validity with, overriding the
    /// algorithm's `client_clock` knob.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_clock: Option<LocalClock>,
    /// Least local work before each write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_min: Option<Nanos>,
    /// Most local work before each write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_max: Option<Nanos>,
    /// Resource writes under each grant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes_per_hold: Option<u32>,
    /// True time after which this client starts no new round, ns (it stays up: a job that
    /// took the lock and moved on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<Nanos>,
}

/// The settings one client runs with: the workload's, with its [`ClientProfile`] applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientParams {
    /// Lease length asked for, ns.
    pub ttl: Nanos,
    /// Renewal period, ns; `None`: no renewal.
    pub renew_every: Option<Nanos>,
    /// Renew deadline, ns; `None`: none.
    pub renew_deadline: Option<Nanos>,
    /// Renewal retry policy.
    pub renew_retry: RenewRetry,
    /// Step-down time, ns.
    pub step_down: Nanos,
    /// How long it keeps acting after its own release, ns.
    pub work_after_release: Nanos,
    /// Retry policy after a failed acquire.
    pub retry: RetryPolicy,
    /// Initial wall-clock offset, ns.
    pub clock_offset: i64,
    /// Initial drift, ppm.
    pub clock_drift_ppm: i64,
    /// Override of the algorithm's client clock.
    pub client_clock: Option<LocalClock>,
    /// Least work before a write, ns.
    pub work_min: Nanos,
    /// Most work before a write, ns.
    pub work_max: Nanos,
    /// Writes under each grant.
    pub writes_per_hold: u32,
    /// True time after which the client starts no new round, ns.
    pub duration: Nanos,
}

impl Workload {
    /// The declared clock-uncertainty bound in ns (see `uncertainty`); by default that of the
    /// longest TTL any client asks for.
    pub fn uncertainty(&self) -> Nanos {
        self.uncertainty.unwrap_or(self.max_ttl() / 100 + 2 * MS)
    }

    /// The settings of client `index` (1 for `c1`).
    pub fn client(&self, index: u32) -> ClientParams {
        let p = self.per_client.get(&format!("c{index}"));
        let off = |v: Option<Nanos>| v.filter(|&d| d > 0);
        ClientParams {
            ttl: p.and_then(|p| p.ttl).unwrap_or(self.ttl),
            renew_every: match p.and_then(|p| p.renew_every) {
                Some(v) => off(Some(v)),
                None => self.renew_every,
            },
            renew_deadline: match p.and_then(|p| p.renew_deadline) {
                Some(v) => off(Some(v)),
                None => self.renew_deadline,
            },
            renew_retry: p.and_then(|p| p.renew_retry).unwrap_or(self.renew_retry),
            step_down: p.and_then(|p| p.step_down).unwrap_or(self.step_down),
            work_after_release: p
                .and_then(|p| p.work_after_release)
                .unwrap_or(self.work_after_release),
            retry: p.and_then(|p| p.retry).unwrap_or(self.retry),
            clock_offset: p.and_then(|p| p.clock_offset).unwrap_or(0),
            clock_drift_ppm: p.and_then(|p| p.clock_drift_ppm).unwrap_or(0),
            client_clock: p.and_then(|p| p.client_clock),
            work_min: p.and_then(|p| p.work_min).unwrap_or(self.work_min),
            work_max: p.and_then(|p| p.work_max).unwrap_or(self.work_max),
            writes_per_hold: p
                .and_then(|p| p.writes_per_hold)
                .unwrap_or(self.writes_per_hold),
            duration: p
                .and_then(|p| p.duration)
                .unwrap_or(self.duration)
                .min(self.duration),
        }
    }

    /// The shortest TTL any client asks for, ns.
    pub fn min_ttl(&self) -> Nanos {
        self.per_client
            .values()
            .filter_map(|p| p.ttl)
            .fold(self.ttl, Nanos::min)
    }

    /// The longest TTL any client asks for, ns.
    pub fn max_ttl(&self) -> Nanos {
        self.per_client
            .values()
            .filter_map(|p| p.ttl)
            .fold(self.ttl, Nanos::max)
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
            retry: RetryPolicy::Uniform,
            retry_base: RETRY_BASE_DEFAULT,
            retry_attempts: 0,
            rpc_timeout: 100 * MS,
            check_validity: true,
            renew_every: None,
            renew_deadline: None,
            renew_retry: RenewRetry::UntilExpiry,
            step_down: 0,
            work_after_release: 0,
            per_client: BTreeMap::new(),
            uncertainty: None,
            network: Network::Tcp,
            tcp_rto_min: TCP_RTO_MIN_DEFAULT,
            tcp_retries2: TCP_RETRIES2_DEFAULT,
            tcp_orphan_retries: TCP_ORPHAN_RETRIES_DEFAULT,
            crash: CrashKind::Process,
        }
    }
}

/// Why a `duplicate` fault is refused under [`Network::Tcp`].
pub const DUPLICATE_UNDER_TCP: &str = "`duplicate` cannot happen inside a TCP connection (it \
     delivers each segment once); set network = \"datagram\" to use it";

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
            ("retry_base", self.retry_base),
            ("rpc_timeout", self.rpc_timeout),
            ("renew_every", self.renew_every.unwrap_or(0)),
            ("renew_deadline", self.renew_deadline.unwrap_or(0)),
            ("step_down", self.step_down),
            ("work_after_release", self.work_after_release),
            ("uncertainty", self.uncertainty.unwrap_or(0)),
            ("tcp_rto_min", self.tcp_rto_min),
        ];
        for (name, v) in bounded {
            if v > MAX_DURATION_NS {
                return Err(format!("workload `{name}` is longer than a day"));
            }
        }
        let exponential = self.retry.exponential()
            || self
                .per_client
                .values()
                .any(|p| p.retry.is_some_and(RetryPolicy::exponential));
        if exponential && self.retry_base == 0 {
            return Err(
                "workload `retry_base` must be more than zero for an exponential retry policy"
                    .into(),
            );
        }
        if self.work_min > self.work_max {
            return Err("workload `work_min` is above `work_max`".into());
        }
        if self.tcp_rto_min == 0 {
            return Err("workload `tcp_rto_min` must be more than zero".into());
        }
        if self.tcp_rto_min > TCP_RTO_MAX {
            return Err(
                "workload `tcp_rto_min` is above 120s, Linux's largest retransmission timeout"
                    .into(),
            );
        }
        if self.tcp_retries2 > 255 {
            return Err("workload `tcp_retries2` is above 255".into());
        }
        if self.tcp_orphan_retries > 255 {
            return Err("workload `tcp_orphan_retries` is above 255".into());
        }
        if self.keys == 0 {
            return Err("workload `keys` must be at least 1".into());
        }
        if self.renew_every == Some(0) {
            return Err("workload `renew_every` must be more than zero (or absent)".into());
        }
        if self.renew_deadline == Some(0) {
            return Err("workload `renew_deadline` must be more than zero (or absent)".into());
        }
        for (name, p) in &self.per_client {
            p.validate().map_err(|e| format!("client {name}: {e}"))?;
        }
        Ok(())
    }

    /// Checks that every per-client profile names a client of a cluster with `clients`
    /// clients, and that each client's resolved settings make sense.
    ///
    /// # Errors
    /// A message naming the client and the field.
    pub fn validate_clients(&self, clients: u32) -> Result<(), String> {
        for name in self.per_client.keys() {
            let index = name
                .strip_prefix('c')
                .and_then(|i| i.parse::<u32>().ok())
                .filter(|&i| i >= 1 && format!("c{i}") == *name);
            match index {
                None => {
                    return Err(format!(
                        "client {name:?}: not a client name (c1, c2, …)"
                    ))
                }
                Some(i) if i > clients => {
                    return Err(format!(
                        "client {name}: there is no such client (the cluster has {clients}: c1..c{clients})"
                    ))
                }
                Some(i) => {
                    let c = self.client(i);
                    if c.work_min > c.work_max {
                        return Err(format!(
                            "client {name}: `work_min` is above `work_max`"
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

impl ClientProfile {
    /// Checks the profile's values (bounds, not names).
    ///
    /// # Errors
    /// A message naming the field.
    pub fn validate(&self) -> Result<(), String> {
        let bounded = [
            ("ttl", self.ttl),
            ("renew_every", self.renew_every),
            ("renew_deadline", self.renew_deadline),
            ("step_down", self.step_down),
            ("work_after_release", self.work_after_release),
            ("work_min", self.work_min),
            ("work_max", self.work_max),
            ("duration", self.duration),
        ];
        for (name, v) in bounded {
            if v.is_some_and(|v| v > MAX_DURATION_NS) {
                return Err(format!("`{name}` is longer than a day"));
            }
        }
        if self.ttl == Some(0) {
            return Err("`ttl` must be more than zero".into());
        }
        if self
            .clock_offset
            .is_some_and(|o| o.unsigned_abs() > crate::fault::MAX_CLOCK_STEP_NS)
        {
            return Err("`clock_offset` is beyond ±3 years".into());
        }
        if let Some(ppm) = self.clock_drift_ppm {
            if ppm <= -1_000_000 || ppm > 1_000_000 {
                return Err(format!(
                    "`clock_drift_ppm`: {ppm} is outside -999999..=1000000"
                ));
            }
        }
        if self.writes_per_hold.is_some_and(|w| w > 1_000) {
            return Err("`writes_per_hold` is above 1000".into());
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
        self.workload.validate_clients(c.clients)?;
        self.faults.validate(c)?;
        if self.workload.network == Network::Tcp {
            if let Some(i) = self
                .faults
                .faults
                .iter()
                .position(|f| matches!(f.fault, crate::fault::Fault::Duplicate { .. }))
            {
                return Err(format!("faults[{i}]: {DUPLICATE_UNDER_TCP}"));
            }
        }
        let end = self.end();
        if let Some((i, f)) = self
            .faults
            .faults
            .iter()
            .enumerate()
            .find(|(_, f)| f.at >= end)
        {
            return Err(format!(
                "faults[{i}]: `at` {} is at or after the run's end ({}: the workload's duration \
                 plus the longest TTL and one second)",
                crate::time::fmt_nanos(f.at as i128),
                crate::time::fmt_nanos(end as i128)
            ));
        }
        Ok(())
    }

    /// True time at which the run ends, ns: the workload's duration plus a tail of the
    /// longest TTL and one second, so that rounds in flight finish and late writes land.
    pub fn end(&self) -> Nanos {
        self.workload
            .duration
            .saturating_add(self.workload.max_ttl())
            .saturating_add(SEC)
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
