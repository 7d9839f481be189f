//! # locksim-sim
//!
//! The simulated world, on [madsim](https://github.com/madsim-rs/madsim): lock-server nodes,
//! client nodes and one protected-resource node, each with its own IP, its own clocks and its
//! own disk; a message layer with per-call timeouts whose links the nemesis can cut, slow,
//! make lossy or duplicating; and a recorder that writes every operation, grant, resource write
//! and fault into a [`locksim_core::History`].
//!
//! One module per concern, as madsim and TigerBeetle's `testing/` lay them out:
//! [`clock`] (per-node clocks), [`links`] (network faults), [`tcp`] (the connection-level network model), [`disk`] (fsync and crashes),
//! [`nemesis`] (fault injection), [`ctx`] (what a node may touch), [`deadline`] (call timeouts), [`protocol`] (the plug-in
//! trait), [`resource`] (the fenced resource), [`workload`] (clients), [`holder`] (what a holder does: work, renewal, renew deadline, step-down), [`world`] (shared state
//! and the recorder), [`run`] (one scenario, start to end).

/// Per-node clocks: the model lives in `locksim-core` (real mode's virtual clocks use it too).
pub use locksim_core::clock;
pub mod ctx;
pub mod deadline;
pub mod disk;
pub mod holder;
pub mod links;
pub mod nemesis;
pub mod protocol;
pub mod resource;
pub mod run;
pub mod tcp;
pub mod workload;
pub mod world;

pub use async_trait::async_trait;
pub use ctx::{finite, CallError, Incoming, NodeCtx, HEALTHY_ANSWER, NO_TIMEOUT};
pub use locksim_core::LocalClock;
pub use protocol::{Grant, LivenessHints, LockAlgorithm, LockClient, Outcome, Validity};
pub use run::{run, run_isolated};
