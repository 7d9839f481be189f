//! What the harness hands each node process it starts (a client or the resource): one JSON
//! file, and the event log the process appends to (one JSON event per line, written with one
//! `write` each, so a `SIGKILL` leaves only whole lines).

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;
use std::sync::Mutex;

use locksim_core::history::{Event, EventKind};
use locksim_core::{Nanos, NodeId, Scenario};
use serde::{Deserialize, Serialize};

use crate::support::Backend;

/// A node process's instructions.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NodeSpec {
    /// The node (a client, or the resource).
    pub node: NodeId,
    /// How many times this node was restarted before (0 for the first start).
    pub incarnation: u32,
    /// The host's `CLOCK_MONOTONIC` reading, ns, that is true time 0 of the run.
    pub t0: u64,
    /// The scenario (workload, per-client settings, plan: clients read their clock faults).
    pub scenario: Scenario,
    /// The lock service and client knobs.
    pub backend: Backend,
    /// The lock servers' addresses, `n1` first.
    pub servers: Vec<SocketAddrV4>,
    /// The resource's address.
    pub resource: SocketAddrV4,
    /// This node's own address.
    pub me: Ipv4Addr,
    /// Where to append its events.
    pub log: PathBuf,
    /// A client's lock library behind an adapter, if the scenario has one.
    #[serde(default)]
    pub adapter: Option<crate::adapter::AdapterSpec>,
    /// A client adapter's clock file (`cN.clock`), when the plan shifts the client's wall
    /// clock: the adapter reads its wall clock through the shim from it.
    #[serde(default)]
    pub clock_file: Option<PathBuf>,
}

/// The host's `CLOCK_MONOTONIC`, ns (shared by every process on the host).
pub fn host_mono() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid pointer to a timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// True time of the run: ns since `t0` (0 before it).
pub fn true_now(t0: u64) -> Nanos {
    host_mono().saturating_sub(t0)
}

/// Sleeps until true time `t` (host reading `t0 + t`; before `t0` true time reads 0, so the
/// host clock, not [`true_now`], says when `t = 0` has come).
pub fn sleep_until(t0: u64, t: Nanos) {
    let target = t0.saturating_add(t);
    loop {
        let now = host_mono();
        if now >= target {
            return;
        }
        std::thread::sleep(std::time::Duration::from_nanos(target - now));
    }
}

/// Appends events to a node's log.
pub struct Log {
    file: Mutex<std::fs::File>,
}

impl Log {
    /// Opens (creates) the log at `path` for appending.
    ///
    /// # Errors
    /// When it cannot be opened.
    pub fn open(path: &std::path::Path) -> std::io::Result<Log> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(Log {
            file: Mutex::new(file),
        })
    }

    /// Records `kind` at true time `time` on `node` with its clock readings (the id is given
    /// when the harness merges the logs).
    pub fn record(&self, time: Nanos, node: NodeId, wall: i64, mono: u64, kind: EventKind) {
        let e = Event {
            id: 0,
            time,
            node,
            wall,
            mono,
            kind,
        };
        let mut line = serde_json::to_vec(&e).expect("events serialize");
        line.push(b'\n');
        let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        // A log that cannot be written loses the run's evidence: stop loudly.
        if let Err(err) = f.write_all(&line) {
            eprintln!("error: cannot write the event log: {err}");
            std::process::exit(70);
        }
    }
}

/// Reads a node spec file.
///
/// # Errors
/// One line naming the file.
pub fn read_spec(path: &std::path::Path) -> Result<NodeSpec, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleeping_until_true_time_zero_waits_for_the_runs_start() {
        // A run whose start is 50 ms ahead: true time reads 0 until then, and a client that
        // sleeps "until 0" must not start early.
        let t0 = host_mono() + 50_000_000;
        assert_eq!(true_now(t0), 0);
        sleep_until(t0, 0);
        assert!(host_mono() >= t0);
        sleep_until(t0, 10_000_000);
        assert!(true_now(t0) >= 10_000_000);
    }
}
