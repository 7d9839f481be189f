//! The nemesis' vocabulary: faults, timed fault plans and the kinds a campaign draws from.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::scenario::{Cluster, NodeId};
use crate::time::{fmt_nanos, Nanos};
use crate::trigger::Trigger;

/// A set of nodes, as sorted node ids.
pub type NodeSet = Vec<NodeId>;

/// The longest duration a fault may have (and the latest a restart may come): one day, ns.
pub const MAX_FAULT_NS: Nanos = 86_400 * 1_000_000_000;
/// The largest clock step, either way: about three years, ns.
pub const MAX_CLOCK_STEP_NS: u64 = 100_000_000 * 1_000_000_000;

/// What a [`Fault::Pause`] stops.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PauseTask {
    /// The whole process (stop-the-world GC, VM migration): every task of the node stops.
    #[default]
    Process,
    /// Only a client's lease-renewal task (a starved watchdog thread); its work goes on.
    Renewal,
    /// Only a client's work (its critical section, writes and release); renewal goes on.
    Work,
}

impl PauseTask {
    /// `true` for [`PauseTask::Process`], the default (left out of traces).
    pub fn is_process(&self) -> bool {
        *self == PauseTask::Process
    }
}

/// How a network cut treats the messages it stops.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CutMode {
    /// A black hole: messages vanish and senders wait for their timeouts.
    #[default]
    Drop,
    /// Connection refused / reset: the sender of a request learns at once that it was not
    /// delivered (as a TCP reset), and a caller whose reply is cut learns at once that the
    /// connection broke (the request may have taken effect).
    Reset,
}

impl CutMode {
    /// `true` for [`CutMode::Drop`], the default (left out of traces).
    pub fn is_drop(&self) -> bool {
        *self == CutMode::Drop
    }
}

/// One fault. Faults that last carry their `duration` (true-time nanoseconds) and end by
/// themselves, so that a shrinker can shorten them; [`Fault::Heal`] ends every network fault
/// at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Fault {
    /// Symmetric partition: no message crosses between `a` and `b` (a black hole, or resets
    /// with `mode = reset`).
    Partition {
        a: NodeSet,
        b: NodeSet,
        duration: Nanos,
        #[serde(default, skip_serializing_if = "CutMode::is_drop")]
        mode: CutMode,
    },
    /// One-way partition: messages from `from` to `to` are stopped; the reverse flows.
    PartitionOneway {
        from: NodeSet,
        to: NodeSet,
        duration: Nanos,
        #[serde(default, skip_serializing_if = "CutMode::is_drop")]
        mode: CutMode,
    },
    /// Cut `node` off from every other node.
    Isolate {
        node: NodeId,
        duration: Nanos,
        #[serde(default, skip_serializing_if = "CutMode::is_drop")]
        mode: CutMode,
    },
    /// Cut off whichever lock server is the leader when the fault fires (the one claiming
    /// leadership in the highest term): forces a leader change in replicated algorithms. The
    /// recorded `fault` event names the node as an [`Fault::Isolate`]; with no leader, nothing
    /// happens.
    IsolateLeader {
        duration: Nanos,
        #[serde(default, skip_serializing_if = "CutMode::is_drop")]
        mode: CutMode,
    },
    /// End every partition, loss, delay, duplication and reply-drop window now.
    Heal,
    /// Drop each message from `from` to `to` with probability `rate_pct`/100.
    Loss {
        from: NodeSet,
        to: NodeSet,
        rate_pct: u32,
        duration: Nanos,
    },
    /// Add a uniformly drawn extra latency in `[min, max]` ns to messages from `from` to `to`.
    Delay {
        from: NodeSet,
        to: NodeSet,
        min: Nanos,
        max: Nanos,
        duration: Nanos,
    },
    /// Deliver each message from `from` to `to` twice with probability `rate_pct`/100.
    Duplicate {
        from: NodeSet,
        to: NodeSet,
        rate_pct: u32,
        duration: Nanos,
    },
    /// Requests from `clients` to `servers` arrive and take effect; the replies are lost.
    DropReplies {
        clients: NodeSet,
        servers: NodeSet,
        duration: Nanos,
    },
    /// Stop-the-world pause (GC, VM migration): the node's tasks stop; true time, other nodes
    /// and the node's clocks go on; its timers fire late. With `task = renewal` (or `work`)
    /// only that task of a client stops, at its next step.
    Pause {
        node: NodeId,
        duration: Nanos,
        #[serde(default, skip_serializing_if = "PauseTask::is_process")]
        task: PauseTask,
    },
    /// Kill the node (memory lost, un-fsynced disk writes lost) and, unless `restart_after` is
    /// `None`, restart it that many nanoseconds later. A crashed client holds nothing
    /// afterwards; restarted, it starts its workload afresh.
    Crash {
        node: NodeId,
        restart_after: Option<Nanos>,
    },
    /// Step the node's wall clock by `delta` nanoseconds (NTP step; negative = backwards).
    /// The monotonic clock does not step.
    ClockStep { node: NodeId, delta: i64 },
    /// Set the node's clock rate to `1 + ppm/1e6` (both wall and monotonic clocks).
    ClockDrift { node: NodeId, ppm: i64 },
}

impl Fault {
    /// The node the fault acts on, when it acts on one node.
    pub fn node(&self) -> Option<NodeId> {
        match self {
            Fault::Isolate { node, .. }
            | Fault::Pause { node, .. }
            | Fault::Crash { node, .. }
            | Fault::ClockStep { node, .. }
            | Fault::ClockDrift { node, .. } => Some(*node),
            _ => None,
        }
    }

    /// The same fault with every node id passed through `map`; nodes mapped to `None` leave
    /// their sets, and a fault left with no node to act on (or an empty set) becomes `None`.
    /// The shrinker uses it to remove a client.
    pub fn map_nodes(&self, map: impl Fn(NodeId) -> Option<NodeId>) -> Option<Fault> {
        let set = |s: &NodeSet| -> Option<NodeSet> {
            let v: NodeSet = s.iter().filter_map(|&n| map(n)).collect();
            (!v.is_empty()).then_some(v)
        };
        Some(match self {
            Fault::Partition {
                a,
                b,
                duration,
                mode,
            } => Fault::Partition {
                a: set(a)?,
                b: set(b)?,
                duration: *duration,
                mode: *mode,
            },
            Fault::PartitionOneway {
                from,
                to,
                duration,
                mode,
            } => Fault::PartitionOneway {
                from: set(from)?,
                to: set(to)?,
                duration: *duration,
                mode: *mode,
            },
            Fault::Isolate {
                node,
                duration,
                mode,
            } => Fault::Isolate {
                node: map(*node)?,
                duration: *duration,
                mode: *mode,
            },
            Fault::IsolateLeader { duration, mode } => Fault::IsolateLeader {
                duration: *duration,
                mode: *mode,
            },
            Fault::Heal => Fault::Heal,
            Fault::Loss {
                from,
                to,
                rate_pct,
                duration,
            } => Fault::Loss {
                from: set(from)?,
                to: set(to)?,
                rate_pct: *rate_pct,
                duration: *duration,
            },
            Fault::Delay {
                from,
                to,
                min,
                max,
                duration,
            } => Fault::Delay {
                from: set(from)?,
                to: set(to)?,
                min: *min,
                max: *max,
                duration: *duration,
            },
            Fault::Duplicate {
                from,
                to,
                rate_pct,
                duration,
            } => Fault::Duplicate {
                from: set(from)?,
                to: set(to)?,
                rate_pct: *rate_pct,
                duration: *duration,
            },
            Fault::DropReplies {
                clients,
                servers,
                duration,
            } => Fault::DropReplies {
                clients: set(clients)?,
                servers: set(servers)?,
                duration: *duration,
            },
            Fault::Pause {
                node,
                duration,
                task,
            } => Fault::Pause {
                node: map(*node)?,
                duration: *duration,
                task: *task,
            },
            Fault::Crash {
                node,
                restart_after,
            } => Fault::Crash {
                node: map(*node)?,
                restart_after: *restart_after,
            },
            Fault::ClockStep { node, delta } => Fault::ClockStep {
                node: map(*node)?,
                delta: *delta,
            },
            Fault::ClockDrift { node, ppm } => Fault::ClockDrift {
                node: map(*node)?,
                ppm: *ppm,
            },
        })
    }

    /// The fault's magnitudes a shrinker may make smaller, by name: durations and delays in ns,
    /// clock steps and drift as absolute values, loss and duplication rates in percent.
    pub fn magnitudes(&self) -> Vec<(&'static str, u64)> {
        match self {
            Fault::Partition { duration, .. }
            | Fault::PartitionOneway { duration, .. }
            | Fault::Isolate { duration, .. }
            | Fault::IsolateLeader { duration, .. }
            | Fault::DropReplies { duration, .. }
            | Fault::Pause { duration, .. } => vec![("duration", *duration)],
            Fault::Loss {
                rate_pct, duration, ..
            }
            | Fault::Duplicate {
                rate_pct, duration, ..
            } => {
                vec![("duration", *duration), ("rate_pct", *rate_pct as u64)]
            }
            Fault::Delay { max, duration, .. } => vec![("duration", *duration), ("max", *max)],
            Fault::Crash {
                restart_after: Some(r),
                ..
            } => vec![("restart_after", *r)],
            Fault::ClockStep { delta, .. } => vec![("delta", delta.unsigned_abs())],
            Fault::ClockDrift { ppm, .. } => vec![("ppm", ppm.unsigned_abs())],
            Fault::Crash {
                restart_after: None,
                ..
            }
            | Fault::Heal => vec![],
        }
    }

    /// The same fault with magnitude `name` (see [`Fault::magnitudes`]) set to `v`, keeping
    /// signs; unknown names leave it unchanged.
    pub fn with_magnitude(&self, name: &str, v: u64) -> Fault {
        let mut f = self.clone();
        let signed = |old: i64| {
            if old < 0 {
                -(v.min(i64::MAX as u64) as i64)
            } else {
                v.min(i64::MAX as u64) as i64
            }
        };
        match (&mut f, name) {
            (
                Fault::Partition { duration, .. }
                | Fault::PartitionOneway { duration, .. }
                | Fault::Isolate { duration, .. }
                | Fault::IsolateLeader { duration, .. }
                | Fault::DropReplies { duration, .. }
                | Fault::Pause { duration, .. }
                | Fault::Loss { duration, .. }
                | Fault::Duplicate { duration, .. }
                | Fault::Delay { duration, .. },
                "duration",
            ) => *duration = v,
            (Fault::Loss { rate_pct, .. } | Fault::Duplicate { rate_pct, .. }, "rate_pct") => {
                *rate_pct = v.min(100) as u32
            }
            (Fault::Delay { min, max, .. }, "max") => {
                *max = v;
                *min = (*min).min(v);
            }
            (
                Fault::Crash {
                    restart_after: Some(r),
                    ..
                },
                "restart_after",
            ) => *r = v,
            (Fault::ClockStep { delta, .. }, "delta") => *delta = signed(*delta),
            (Fault::ClockDrift { ppm, .. }, "ppm") => *ppm = signed(*ppm),
            _ => {}
        }
        f
    }

    /// A one-line description with node names, e.g. `pause c1 for 2.500s`.
    pub fn describe(&self, cluster: &Cluster) -> String {
        let set = |s: &NodeSet| {
            let names: Vec<String> = s.iter().map(|&n| cluster.name(n)).collect();
            format!("{{{}}}", names.join(","))
        };
        let d = |n: &Nanos| fmt_nanos(*n as i128);
        let resets = |m: &CutMode| match m {
            CutMode::Drop => "",
            CutMode::Reset => " (connections reset)",
        };
        match self {
            Fault::Partition {
                a,
                b,
                duration,
                mode,
            } => {
                format!(
                    "partition {} | {} for {}{}",
                    set(a),
                    set(b),
                    d(duration),
                    resets(mode)
                )
            }
            Fault::PartitionOneway {
                from,
                to,
                duration,
                mode,
            } => {
                format!(
                    "one-way partition {} -/-> {} for {}{}",
                    set(from),
                    set(to),
                    d(duration),
                    resets(mode)
                )
            }
            Fault::Isolate {
                node,
                duration,
                mode,
            } => {
                format!(
                    "isolate {} for {}{}",
                    cluster.name(*node),
                    d(duration),
                    resets(mode)
                )
            }
            Fault::IsolateLeader { duration, mode } => {
                format!("isolate the leader for {}{}", d(duration), resets(mode))
            }
            Fault::Heal => "heal the network".to_string(),
            Fault::Loss {
                from,
                to,
                rate_pct,
                duration,
            } => format!(
                "lose {rate_pct}% of {} -> {} for {}",
                set(from),
                set(to),
                d(duration)
            ),
            Fault::Delay {
                from,
                to,
                min,
                max,
                duration,
            } => format!(
                "delay {} -> {} by {}..{} for {}",
                set(from),
                set(to),
                d(min),
                d(max),
                d(duration)
            ),
            Fault::Duplicate {
                from,
                to,
                rate_pct,
                duration,
            } => format!(
                "duplicate {rate_pct}% of {} -> {} for {}",
                set(from),
                set(to),
                d(duration)
            ),
            Fault::DropReplies {
                clients,
                servers,
                duration,
            } => format!(
                "drop replies {} -> {} for {}",
                set(servers),
                set(clients),
                d(duration)
            ),
            Fault::Pause {
                node,
                duration,
                task,
            } => match task {
                PauseTask::Process => {
                    format!("pause {} for {}", cluster.name(*node), d(duration))
                }
                PauseTask::Renewal => format!(
                    "stall {}'s renewal task for {}",
                    cluster.name(*node),
                    d(duration)
                ),
                PauseTask::Work => {
                    format!("stall {}'s work for {}", cluster.name(*node), d(duration))
                }
            },
            Fault::Crash {
                node,
                restart_after: Some(r),
            } => {
                format!("crash {}, restart after {}", cluster.name(*node), d(r))
            }
            Fault::Crash {
                node,
                restart_after: None,
            } => format!("crash {}", cluster.name(*node)),
            Fault::ClockStep { node, delta } => format!(
                "step {}'s wall clock by {}{}",
                cluster.name(*node),
                if *delta >= 0 { "+" } else { "" },
                fmt_nanos(*delta as i128)
            ),
            Fault::ClockDrift { node, ppm } => {
                format!("drift {}'s clocks at {:+} ppm", cluster.name(*node), ppm)
            }
        }
    }

    /// Checks node ids and values against the cluster, and magnitudes against
    /// [`MAX_FAULT_NS`] and [`MAX_CLOCK_STEP_NS`].
    ///
    /// # Errors
    /// A message naming the bad field.
    pub fn validate(&self, cluster: &Cluster) -> Result<(), String> {
        self.validate_nodes(cluster)?;
        let long = |d: Nanos, field: &str| {
            if d > MAX_FAULT_NS {
                Err(format!(
                    "`{field}`: {} is longer than a day",
                    fmt_nanos(d as i128)
                ))
            } else {
                Ok(())
            }
        };
        match self {
            Fault::Partition { duration, .. }
            | Fault::PartitionOneway { duration, .. }
            | Fault::Isolate { duration, .. }
            | Fault::IsolateLeader { duration, .. }
            | Fault::Loss { duration, .. }
            | Fault::Duplicate { duration, .. }
            | Fault::DropReplies { duration, .. }
            | Fault::Pause { duration, .. } => long(*duration, "duration"),
            Fault::Delay { max, duration, .. } => {
                long(*max, "max")?;
                long(*duration, "duration")
            }
            Fault::Crash {
                restart_after: Some(r),
                ..
            } => long(*r, "restart_after"),
            Fault::ClockStep { delta, .. } if delta.unsigned_abs() > MAX_CLOCK_STEP_NS => {
                Err(format!(
                    "`delta`: a step of {} is beyond ±{}",
                    fmt_nanos(*delta as i128),
                    fmt_nanos(MAX_CLOCK_STEP_NS as i128)
                ))
            }
            Fault::ClockDrift { ppm, .. } if *ppm > 1_000_000 => Err(format!(
                "`ppm`: {ppm} is above 1000000 (a clock at twice the speed)"
            )),
            _ => Ok(()),
        }
    }

    fn validate_nodes(&self, cluster: &Cluster) -> Result<(), String> {
        let n = cluster.nodes();
        let check = |id: NodeId, field: &str| {
            if id < n {
                Ok(())
            } else {
                Err(format!(
                    "`{field}`: node {id} is not in a cluster of {n} nodes"
                ))
            }
        };
        let check_set = |s: &NodeSet, field: &str| -> Result<(), String> {
            if s.is_empty() {
                return Err(format!("`{field}`: empty node set"));
            }
            s.iter().try_for_each(|&id| check(id, field))
        };
        let pct = |p: u32| {
            if p <= 100 {
                Ok(())
            } else {
                Err(format!("`rate_pct`: {p} is above 100"))
            }
        };
        match self {
            Fault::Partition { a, b, .. } => {
                check_set(a, "a")?;
                check_set(b, "b")
            }
            Fault::PartitionOneway { from, to, .. } => {
                check_set(from, "from")?;
                check_set(to, "to")
            }
            Fault::Pause {
                node,
                task: PauseTask::Renewal | PauseTask::Work,
                ..
            } => {
                check(*node, "node")?;
                if cluster.role(*node) == crate::scenario::Role::Client {
                    Ok(())
                } else {
                    Err(format!(
                        "`task`: only a client has renewal and work tasks; {} is not a client",
                        cluster.name(*node)
                    ))
                }
            }
            Fault::Isolate { node, .. } | Fault::Pause { node, .. } | Fault::Crash { node, .. } => {
                check(*node, "node")
            }
            Fault::ClockStep { node, .. } => check(*node, "node"),
            Fault::ClockDrift { node, ppm } => {
                check(*node, "node")?;
                if *ppm <= -1_000_000 {
                    Err(format!(
                        "`ppm`: {ppm} would stop or reverse the clock (must be > -1000000)"
                    ))
                } else {
                    Ok(())
                }
            }
            Fault::Heal => Ok(()),
            Fault::Loss {
                from, to, rate_pct, ..
            }
            | Fault::Duplicate {
                from, to, rate_pct, ..
            } => {
                check_set(from, "from")?;
                check_set(to, "to")?;
                pct(*rate_pct)
            }
            Fault::Delay {
                from, to, min, max, ..
            } => {
                check_set(from, "from")?;
                check_set(to, "to")?;
                if min > max {
                    Err("`min` is above `max`".to_string())
                } else {
                    Ok(())
                }
            }
            Fault::DropReplies {
                clients, servers, ..
            } => {
                check_set(clients, "clients")?;
                check_set(servers, "servers")
            }
            Fault::IsolateLeader { .. } => Ok(()),
        }
    }
}

/// A fault and when the nemesis injects it: at true time `at` (ns since the run started), or,
/// with a trigger `after`, when that event happens (plus its delay; `at` is then 0).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimedFault {
    /// True time of injection, in nanoseconds since the start of the run (0 when `after` is
    /// set).
    pub at: Nanos,
    /// What happens.
    pub fault: Fault,
    /// The event it is aimed at instead of a time (left out of traces when absent, so older
    /// traces read and write the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Trigger>,
}

impl TimedFault {
    /// `fault` at true time `at`.
    pub fn at(at: Nanos, fault: Fault) -> TimedFault {
        TimedFault {
            at,
            fault,
            after: None,
        }
    }

    /// `fault` when `trigger` fires.
    pub fn after(trigger: Trigger, fault: Fault) -> TimedFault {
        TimedFault {
            at: 0,
            fault,
            after: Some(trigger),
        }
    }

    /// When it strikes, for output: `at 2.000s` or `at c1's 1st acquire ok`.
    pub fn describe_when(&self, cluster: &Cluster) -> String {
        match &self.after {
            Some(t) => t.describe(cluster),
            None => format!("at {}", fmt_nanos(self.at as i128)),
        }
    }
}

/// An explicit, time-ordered list of faults (docs/design.md §4). Removing or shortening one fault
/// leaves the others as they were, which is what the shrinker relies on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FaultPlan {
    /// The faults, sorted by `at` (ties keep their order; triggered faults have `at` 0).
    pub faults: Vec<TimedFault>,
}

impl FaultPlan {
    /// Builds a plan, sorting the faults by time (stable).
    pub fn new(mut faults: Vec<TimedFault>) -> Self {
        faults.sort_by_key(|f| f.at);
        FaultPlan { faults }
    }
    /// `true` when the plan injects nothing.
    pub fn is_empty(&self) -> bool {
        self.faults.is_empty()
    }
    /// Number of faults.
    pub fn len(&self) -> usize {
        self.faults.len()
    }
    /// `true` when some fault is aimed at an event ([`TimedFault::after`]).
    pub fn has_triggers(&self) -> bool {
        self.faults.iter().any(|f| f.after.is_some())
    }
    /// Checks every fault against the cluster.
    ///
    /// # Errors
    /// A message naming the fault's index and the bad field.
    pub fn validate(&self, cluster: &Cluster) -> Result<(), String> {
        for (i, f) in self.faults.iter().enumerate() {
            if f.at > MAX_FAULT_NS {
                return Err(format!("faults[{i}]: `at` is more than a day into the run"));
            }
            if let Some(t) = &f.after {
                if f.at != 0 {
                    return Err(format!(
                        "faults[{i}]: both `at` and `after`: a fault strikes at a time or after an event"
                    ));
                }
                t.validate(cluster)
                    .map_err(|e| format!("faults[{i}]: {e}"))?;
            }
            f.fault
                .validate(cluster)
                .map_err(|e| format!("faults[{i}]: {e}"))?;
        }
        Ok(())
    }
}

/// Families of faults a campaign draws plans from (docs/design.md §4). `Mixed` draws from all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// No faults: the control group. Every correct algorithm must be clean here.
    None,
    /// Symmetric, one-way, isolate and client-to-service partitions.
    Partition,
    /// Process pauses (GC stop-the-world) of clients and servers.
    Pause,
    /// Forward and backward steps of wall clocks.
    ClockJump,
    /// Clock rate changes, from a few ppm to several percent.
    ClockDrift,
    /// Lock-server crashes followed by restarts.
    CrashRestart,
    /// Message loss windows.
    Loss,
    /// Message delay windows.
    Delay,
    /// Message duplication windows.
    Duplicate,
    /// Lost replies: requests take effect, replies vanish.
    DropReplies,
    /// Several kinds at once.
    Mixed,
    /// Swarm testing (as FoundationDB and TigerBeetle practise it): each seed draws which fault
    /// kinds are on and how hard they hit, so one campaign covers many fault mixes.
    Swarm,
    /// Isolating the current leader of a replicated lock service (forces a leader change);
    /// does nothing to algorithms without a leader. (Declared last: each kind draws from the
    /// random stream numbered by its position, and older kinds keep theirs.)
    LeaderChange,
}

impl FaultKind {
    /// Every kind, in the order the CLI lists them.
    pub const ALL: [FaultKind; 13] = [
        FaultKind::None,
        FaultKind::Partition,
        FaultKind::Pause,
        FaultKind::ClockJump,
        FaultKind::ClockDrift,
        FaultKind::CrashRestart,
        FaultKind::Loss,
        FaultKind::Delay,
        FaultKind::Duplicate,
        FaultKind::DropReplies,
        FaultKind::LeaderChange,
        FaultKind::Mixed,
        FaultKind::Swarm,
    ];
    /// The kinds that draw faults themselves (`mixed` and `swarm` combine them).
    pub const BASE: [FaultKind; 9] = [
        FaultKind::Partition,
        FaultKind::Pause,
        FaultKind::ClockJump,
        FaultKind::ClockDrift,
        FaultKind::CrashRestart,
        FaultKind::Loss,
        FaultKind::Delay,
        FaultKind::Duplicate,
        FaultKind::DropReplies,
    ];
    /// The default campaign matrix's fault kinds.
    pub const DEFAULT_MATRIX: [FaultKind; 8] = [
        FaultKind::None,
        FaultKind::Partition,
        FaultKind::Pause,
        FaultKind::ClockJump,
        FaultKind::ClockDrift,
        FaultKind::CrashRestart,
        FaultKind::LeaderChange,
        FaultKind::Mixed,
    ];
    /// The kebab-case name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::None => "none",
            FaultKind::Partition => "partition",
            FaultKind::Pause => "pause",
            FaultKind::ClockJump => "clock-jump",
            FaultKind::ClockDrift => "clock-drift",
            FaultKind::CrashRestart => "crash-restart",
            FaultKind::Loss => "loss",
            FaultKind::Delay => "delay",
            FaultKind::Duplicate => "duplicate",
            FaultKind::DropReplies => "drop-replies",
            FaultKind::LeaderChange => "leader-change",
            FaultKind::Mixed => "mixed",
            FaultKind::Swarm => "swarm",
        }
    }
    /// Names of every kind, comma-separated (for error messages).
    pub fn all_names() -> String {
        FaultKind::ALL.map(|k| k.name()).join(", ")
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for FaultKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        FaultKind::ALL
            .into_iter()
            .find(|k| k.name() == s.trim())
            .ok_or_else(|| {
                format!(
                    "unknown fault kind `{s}` (valid: {})",
                    FaultKind::all_names()
                )
            })
    }
}

/// Parses a comma-separated list of fault kinds, e.g. `pause,clock-jump`.
///
/// # Errors
/// Names the first unknown kind and lists the valid ones.
pub fn parse_kinds(list: &str) -> Result<Vec<FaultKind>, String> {
    let mut out: Vec<FaultKind> = Vec::new();
    for part in list.split(',').filter(|p| !p.trim().is_empty()) {
        let k: FaultKind = part.parse()?;
        if !out.contains(&k) {
            out.push(k);
        }
    }
    if out.is_empty() {
        return Err(format!(
            "empty fault list (valid: {})",
            FaultKind::all_names()
        ));
    }
    Ok(out)
}
