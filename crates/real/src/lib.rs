//! # locksim-real
//!
//! Sim-to-real: the scenario that runs in the simulator runs against real servers on this
//! host, with real faults, and yields the same [`locksim_core::History`] for the same
//! checkers.
//!
//! - the lock service is real `redis-server` processes (`central`, `central-fencing`: one;
//!   `redlock`: five masters), each with a temporary data directory and its persistence set
//!   from the scenario's `fsync`; for `raft-lease`, `etcd` members (3.4, three by default;
//!   with the crate's `etcd` feature); for `db-lease`, one PostgreSQL server ([`postgres`])
//!   ([`support`] says what runs and refuses the rest);
//! - the clients are separate OS processes (the `locksim` binary in a hidden mode, see
//!   [`client`]) running the simulator's workload and client algorithms over RESP
//!   ([`redis`]) or etcd's lock recipe over its v3 gRPC API (`etcd`), or a real lock library
//!   behind an adapter process ([`adapter`]); the protected resource is a small server of
//!   ours ([`resource`]);
//! - every node has its own loopback address ([`addr`]); `partition`, `isolate` and `loss`
//!   are nftables rules on those addresses ([`nft`]) (`isolate_leader`: of the etcd member
//!   leading then); `pause` is `SIGSTOP`/`SIGCONT`, `crash`
//!   is `SIGKILL` and a restart on the same data directory; client clock faults are virtual
//!   ([`vclock`]); a Redis server's wall clock is shifted by our `LD_PRELOAD` shim
//!   (`crates/clockshim`, driven through [`clockfile`]);
//! - true time is the host's `CLOCK_MONOTONIC` from the run's start ([`node`]); the logs of
//!   all processes merge into one history ([`merge`]).
//!
//! The seam between the harness and the services: every service's lock client implements
//! [`backend::Lock`], and its servers [`backend::ServerSide`] (their command, readiness,
//! ports, version, leader, own records and log files); [`services`] is the one place that maps
//! a [`support::Service`] to its client and its servers; each service's module (`redis`,
//! `sentinel`, `etcd`, `postgres`, `advisory`, `zookeeper`, or an `adapter`) depends on
//! [`backend`] and never on the dispatcher. The harness ([`harness`]) keeps what every service
//! shares: processes, nftables faults, clocks and the run's loop.
//!
//! No madsim: this crate depends on `locksim-core` only (docs/design.md §2), and with `etcd` on the
//! `etcd-client` crate (tokio, tonic). A real run cannot be
//! replayed, only re-run: the traces it writes say so.

pub mod adapter;
pub mod addr;
pub mod advisory;
pub mod backend;
pub mod client;
pub mod clockfile;
pub mod conn;
#[cfg(feature = "etcd")]
pub mod etcd;
pub mod harness;
pub mod merge;
pub mod nft;
pub mod node;
pub mod postgres;
pub mod procs;
pub mod redis;
pub mod resource;
pub mod resp;
pub mod sentinel;
pub mod services;
pub mod support;
pub mod vclock;
pub mod zkwire;
pub mod zookeeper;

use std::path::PathBuf;

pub use harness::{install_signal_handler, interrupted, run};

/// How to start the processes of a real run.
#[derive(Debug, Clone)]
pub struct RealOptions {
    /// The executable that runs client and resource nodes (the `locksim` binary).
    pub exe: PathBuf,
    /// Arguments before the node spec file (`["real-node"]` for `locksim real-node SPEC`).
    pub node_args: Vec<String>,
    /// The Redis server to start (`redis-server` from `PATH` by default).
    pub redis: String,
    /// The etcd server to start for `raft-lease` (`etcd` from `PATH` by default).
    pub etcd: String,
    /// The PostgreSQL server for `db-lease` (`initdb` beside it); `None`: found by
    /// [`postgres::find`].
    pub postgres: Option<String>,
    /// The PgBouncer executable for `pg-advisory` (`pgbouncer` from `PATH` by default).
    pub pgbouncer: String,
    /// ZooKeeper's Java classpath for `zookeeper` (Debian's, [`zookeeper::CLASSPATH`], by
    /// default), run by `java` from `PATH`.
    pub zookeeper: String,
    /// The clock shim (`liblocksim_clockshim.so`) for clock faults on lock servers, and for
    /// an adapter's source address; `None`: such faults, and network faults with an adapter,
    /// are refused.
    pub clockshim: Option<PathBuf>,
    /// A lock library as the clients (the file's `[real]` table, docs/adapters.md); `None`:
    /// locksim's own clients.
    pub adapter: Option<adapter::Choice>,
    /// Where the shipped adapters' libraries are installed (`scripts/install-adapters.sh
    /// DIR`; see [`adapter::default_libs`]).
    pub adapter_libs: PathBuf,
    /// Copy the run folder's small files (node logs, adapters' stderr `cN.I.adapter.err`,
    /// specs) to a kept `locksim-logs-*` folder under the temporary directory after a run
    /// that succeeded too (after a failed run they are always kept).
    pub keep_logs: bool,
}

/// A finished real run.
#[derive(Debug, Clone)]
pub struct RealRun {
    /// The merged history.
    pub history: locksim_core::History,
    /// What ran, for notes: `redlock on Redis server v=7.0.15 …`.
    pub service: String,
    /// Where the run's logs were kept ([`RealOptions::keep_logs`]); `None`: not asked, or
    /// nothing to keep.
    pub logs: Option<PathBuf>,
}

impl RealOptions {
    /// Refuses what real mode cannot run of `s` with these options, before anything starts:
    /// its algorithm and knobs ([`support::backend`]), its plan's faults
    /// ([`support::check_plan`], each named by `name`), and an adapter's limits.
    ///
    /// # Errors
    /// One line saying what cannot run and why.
    pub fn refuse(
        &self,
        s: &locksim_core::Scenario,
        name: &dyn Fn(&locksim_core::fault::TimedFault) -> String,
    ) -> Result<(), String> {
        let shim = self.clockshim.is_some();
        let b = support::backend(s)?;
        support::check_plan(s, &b, shim, name)?;
        match &self.adapter {
            Some(c) => adapter::check_scenario(s, c, shim),
            None => Ok(()),
        }
    }
}

impl RealRun {
    /// A `redis-failover` run of `s` whose plan cuts the primary off for longer than
    /// `down_after` and in which Sentinel promoted nobody (no `leads` event): it did not
    /// exercise the failover it is about.
    pub fn missed_failover(&self, s: &locksim_core::Scenario) -> bool {
        let promoted = self
            .history
            .events
            .iter()
            .any(|e| matches!(e.kind, locksim_core::history::EventKind::Leader { .. }));
        support::backend(s).is_ok_and(|b| support::expects_failover(s, &b)) && !promoted
    }

    /// The run's record for `--trace`: a trace of `s` judged `v`, marked as real (by
    /// [`Self::service`]), its events embedded.
    pub fn trace(
        &self,
        s: &locksim_core::Scenario,
        v: &locksim_core::Verdict,
    ) -> locksim_core::Trace {
        let h = &self.history;
        let mut t =
            locksim_core::Trace::new(s.clone(), h.digest(), v.clone(), Some(h.events.clone()));
        t.real = Some(self.service.clone());
        t
    }

    /// Where the run's logs are kept, for stderr: the folder and each server log in it, or
    /// (`keep_logs` asked and nothing kept) a warning; nothing otherwise.
    pub fn logs_note(&self, keep_logs: bool) -> Vec<String> {
        let Some(d) = &self.logs else {
            return if keep_logs {
                vec!["warning: --keep-logs: the run's logs could not be copied".into()]
            } else {
                vec![]
            };
        };
        let mut lines = vec![format!("the run's logs are kept in {}", d.display())];
        let servers = harness::kept_server_logs(d);
        if servers.is_empty() {
            lines.push("  (no server wrote a log)".into());
        }
        for f in servers {
            lines.push(format!("  server log: {}", d.join(f).display()));
        }
        lines
    }
}

/// Why a real run did not give a history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RealError {
    /// The scenario asks for something real mode cannot do (bad input: exit 2).
    Unsupported(String),
    /// A tool is missing or the host refused a resource (exit 2).
    Setup(String),
    /// Ctrl-C or SIGTERM: everything was stopped and removed.
    Interrupted,
    /// The run failed (a server died, nft refused a rule, ...).
    Failed(String),
}

impl std::fmt::Display for RealError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RealError::Unsupported(m) => write!(f, "real mode: {m}"),
            RealError::Setup(m) => write!(f, "real mode: {m}"),
            RealError::Interrupted => {
                write!(
                    f,
                    "interrupted: every process stopped, temporary files removed"
                )
            }
            RealError::Failed(m) => write!(f, "the real run failed: {m}"),
        }
    }
}

/// The node-mode entry point: reads the spec file and runs a client or the resource.
///
/// # Errors
/// A bad spec file, or a node that cannot start.
pub fn node_main(spec: &std::path::Path) -> Result<(), String> {
    let spec = node::read_spec(spec)?;
    match spec.scenario.cluster.role(spec.node) {
        locksim_core::Role::Client => client::main(spec),
        locksim_core::Role::Resource => resource::main(spec),
        locksim_core::Role::Server => Err(
            "lock servers are redis-server, etcd, PostgreSQL or ZooKeeper processes, not nodes of ours".into(),
        ),
    }
}
