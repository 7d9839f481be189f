//! # locksim-resp-sim
//!
//! Your own Redis lock client, written against the real `redis` crate (redis-rs), run inside
//! locksim's deterministic simulation: a simulated Redis server speaking RESP2/RESP3 over
//! madsim's TCP, locksim's node faults (isolate, partition, pause, crash) on the server and the
//! clients, and the grants, releases, extensions and resource writes recorded *at the server*
//! into a locksim [`History`](locksim_core::History), judged by locksim's checkers
//! (S1 double grant, S2 stale write, S4 release of another's lock). docs/own-client.md says how
//! to use it and what it does not cover yet.
//!
//! ```no_run
//! # async fn my_lock_loop(_c: redis::aio::MultiplexedConnection) {}
//! use locksim_resp_sim::{run, Scenario};
//! let outcome = run(&Scenario::new(1).clients(2).duration_ms(3_000), |client| async move {
//!     let conn = client.redis().await.expect("connects");
//!     my_lock_loop(conn).await;
//! });
//! assert!(outcome.verdict().is_safe());
//! ```
//!
//! Modules: [`file`] (scenario files: one test function names one), [`resp`] (the wire format), [`store`] (the commands and key expiry), [`scripts`]
//! (the unlock/extend scripts, recognised by SHA1 or shape), [`record`] (server-side events to
//! a history), [`sim`] (the run: nodes, faults, outcome), [`shrink`] (a failing run made
//! small), [`trace`] (a run as a locksim trace, and its replay).

#[cfg(feature = "etcd")]
pub mod etcd;
pub mod file;
pub mod record;
pub mod replication;
pub mod resp;
pub mod scripts;
pub mod sentinel;
mod server;
pub mod shrink;
pub mod sim;
pub mod store;
pub mod trace;

pub use file::{check, check_file, traces_dir, Expect, FileReport, ScenarioFile};
pub use locksim_core::trigger::{Trigger, TriggerEvent};
pub use locksim_core::TimedFault;
pub use locksim_core::{Fault, History, Property, Verdict};
pub use scripts::ScriptKind;
pub use shrink::{shrink, Shrunk};
pub use sim::{run, Client, Outcome, Scenario, Service};
pub use trace::{replay_trace, trace_of, write_trace};
