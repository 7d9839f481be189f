//! # locksim-core
//!
//! The vocabulary every other locksim crate speaks, with no dependency on the simulator:
//!
//! - [`time`]: true time and local clock readings, all in nanoseconds;
//! - [`scenario`]: everything needed to re-run one simulation (seed, cluster, algorithm
//!   configuration, workload, fault plan);
//! - [`draw`]: the seed's random streams and a client's workload draws, one derivation for
//!   the simulator and real mode;
//! - [`fault`]: the nemesis' fault kinds and the explicit, timed [`FaultPlan`];
//! - [`scenario_file`]: `[[fault]]` plans and `[client.cN]` settings as people write them in
//!   campaign files (node names, durations with units);
//! - [`trigger`]: faults aimed at recorded events (`after = { node, event, nth, delay }`);
//! - [`history`]: the recorded events (Jepsen's invoke/ok/fail/info vocabulary plus grants,
//!   resource writes, faults) and their stable digest;
//! - [`verdict`]: violations of the safety properties, with the event ids that witness them;
//! - [`trace`]: the versioned JSON file that replays a run;
//! - [`file`]: writing a file whole or not at all (temporary file, rename or link, clean-up);
//! - [`text`]: plurals and one-line echoes of values in messages.
//!
//! Data flows one way: scenario → simulation → history → checkers → verdict.

pub mod clock;
pub mod draw;
pub mod fault;
pub mod file;
pub mod history;
pub mod scenario;
pub mod scenario_file;
pub mod text;
pub mod time;
pub mod trace;
pub mod trigger;
pub mod verdict;

pub use fault::{Fault, FaultKind, FaultPlan, NodeSet, TimedFault};
pub use history::{Event, EventKind, History, LocalClock, Message, OpF, Phase};
pub use scenario::{
    ClientParams, ClientProfile, Cluster, CrashKind, Network, NodeId, RenewRetry, RetryPolicy,
    Role, Scenario, Workload,
};
pub use time::Nanos;
pub use trace::{Trace, TraceError};
pub use verdict::{Property, Verdict, Violation};
