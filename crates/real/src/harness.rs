//! One real run: start the servers, the resource and the clients as processes on their own
//! loopback addresses, apply the plan in real time, stop everything, merge the history.
//!
//! Every process is killed and reaped, the nftables table deleted and the temporary folder
//! removed whatever happens: on success, on an error, on a panic (guards' `Drop`), on Ctrl-C
//! or SIGTERM (a flag the run loop polls, then the same guards) and — for the processes — on
//! a `SIGKILL` of the harness (`PR_SET_PDEATHSIG`).

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use locksim_core::fault::Fault;
use locksim_core::history::{Event, EventKind};
use locksim_core::time::{MS, SEC};
use locksim_core::{Nanos, NodeId, Role, Scenario};

use crate::addr::{free_port, ip};
use crate::backend::{ServerHost, ServerSide};
use crate::conn::Conn;
use crate::node::{host_mono, true_now, NodeSpec};
use crate::procs::{spawn, Procs};
use crate::resp::{read_reply, request, Reply};
use crate::support::Backend;
use crate::{nft, RealError, RealOptions, RealRun};

/// Set by SIGINT / SIGTERM (a second one ends the process at once).
fn stop_flag() -> &'static Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            let _ = signal_hook::flag::register_conditional_shutdown(sig, 130, flag.clone());
            let _ = signal_hook::flag::register(sig, flag.clone());
        }
        flag
    })
}

/// Installs the Ctrl-C / SIGTERM handler (idempotent). From then on the first signal only
/// sets a flag that real runs poll ([`interrupted`]); a second one exits with code 130.
pub fn install_signal_handler() {
    stop_flag();
}

/// `true` once SIGINT or SIGTERM arrived.
pub fn interrupted() -> bool {
    stop_flag().load(Ordering::SeqCst)
}

/// Serialises real runs on this host (they share the 127.0.0.N addresses): an exclusive
/// `flock` held until dropped.
struct HostLock {
    _file: std::fs::File,
}

impl HostLock {
    fn take() -> Result<HostLock, RealError> {
        // One fixed path, whatever TMPDIR says: every run on the host must see the same lock.
        let path = Path::new("/tmp/locksim-real.lock");
        // Another user's lock file can still be locked: flock needs only a read descriptor.
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .or_else(|_| std::fs::File::open(path))
            .map_err(|e| RealError::Setup(format!("{}: {e}", path.display())))?;
        use std::os::fd::AsRawFd;
        let mut said = false;
        loop {
            // SAFETY: flock on an open descriptor we own.
            if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return Ok(HostLock { _file: f });
            }
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(RealError::Setup(format!(
                    "cannot lock {}: {e}",
                    path.display()
                )));
            }
            if interrupted() {
                return Err(RealError::Interrupted);
            }
            if !said {
                eprintln!("waiting for another real run on this host to finish (they share the 127.0.0.N addresses)");
                said = true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// What the plan does at one moment.
#[derive(Debug, Clone, Copy)]
enum Action {
    Inject(usize),
    End(usize),
    Restart(NodeId),
}

struct Run<'a> {
    s: &'a Scenario,
    backend: Backend,
    /// The service's servers ([`crate::services::server_side`]).
    service: &'a dyn ServerSide,
    opts: &'a RealOptions,
    dir: PathBuf,
    t0: u64,
    servers: Vec<SocketAddrV4>,
    /// Each server's extra ports on its own address ([`ServerSide::extra_ports`]: etcd's
    /// peer port, ZooKeeper's quorum and election ports), by node.
    ports: Vec<Vec<u16>>,
    /// The servers run as their own user ids ([`crate::backend::member_uid`]), for the
    /// table's source NAT.
    member_uids: bool,
    resource: SocketAddrV4,
    procs: Procs,
    table: nft::Table,
    net: BTreeMap<usize, Vec<String>>,
    paused: BTreeMap<NodeId, u32>,
    /// The node each `isolate_leader` of the plan (by index) was applied to.
    resolved: BTreeMap<usize, NodeId>,
    down: BTreeMap<NodeId, bool>,
    incarnation: BTreeMap<NodeId, u32>,
    events: Vec<Event>,
    clocks: BTreeMap<NodeId, locksim_core::clock::Clock>,
    /// The clock files of servers whose clocks the plan faults.
    clock_files: BTreeMap<NodeId, crate::clockfile::ClockFile>,
    /// The clients' lock library behind an adapter, resolved for this run's folder.
    adapter: Option<crate::adapter::AdapterSpec>,
    /// With an adapter and network faults: the clients whose adapter's connections have been
    /// seen leaving from the client's own address.
    bound: BTreeMap<NodeId, bool>,
    /// True time of the last look at the adapters' connections (one every 100 ms).
    bound_checked: Nanos,
}

pub use crate::backend::server_version;

/// `; its log ends: LINE` with the last line of lock server `name`'s log in the run folder
/// `dir` (quoted now: the folder goes with the run), or nothing; `files`: the log files a
/// server of the service writes ([`ServerSide::log_files`]), looked at in this order.
fn log_tail_of(dir: &Path, name: &str, files: &[&str]) -> String {
    files
        .iter()
        .filter_map(|f| std::fs::read_to_string(dir.join(name).join(f)).ok())
        .find_map(|t| {
            t.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(|l| format!("; its log ends: {}", l.trim()))
        })
        .unwrap_or_default()
}

/// nft's "Operation not permitted", said as what it means here.
fn root_hint(e: String) -> String {
    if e.contains("Operation not permitted") {
        format!("network faults in real mode need root for nftables ({e})")
    } else {
        e
    }
}

impl Run<'_> {
    fn name(&self, n: NodeId) -> String {
        self.s.cluster.name(n)
    }

    fn record(&mut self, node: NodeId, kind: EventKind) {
        let t = true_now(self.t0);
        self.record_at(node, t, kind);
    }

    fn record_at(&mut self, node: NodeId, t: Nanos, kind: EventKind) {
        let (wall, mono) = match self.clocks.get(&node) {
            Some(c) => (c.wall(t), c.mono(t)),
            None => (t as i64, t),
        };
        self.events.push(Event {
            id: 0,
            time: t,
            node,
            wall,
            mono,
            kind,
        });
    }

    fn node_cmd(&mut self, n: NodeId) -> Result<Command, RealError> {
        let inc = *self.incarnation.entry(n).or_default();
        let name = self.name(n);
        let spec = NodeSpec {
            node: n,
            incarnation: inc,
            t0: self.t0,
            scenario: self.s.clone(),
            backend: self.backend,
            servers: self.servers.clone(),
            resource: self.resource,
            me: ip(n),
            log: self.dir.join(format!("{name}.{inc}.log")),
            adapter: self.adapter.clone(),
            clock_file: self.clock_files.get(&n).map(|f| f.path.clone()),
        };
        let path = self.dir.join(format!("{name}.{inc}.json"));
        std::fs::write(&path, serde_json::to_vec(&spec).expect("specs serialize"))
            .map_err(|e| RealError::Setup(format!("{}: {e}", path.display())))?;
        let mut c = Command::new(&self.opts.exe);
        c.args(&self.opts.node_args).arg(&path);
        c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(
            std::fs::File::create(self.dir.join(format!("{name}.{inc}.err")))
                .map(Stdio::from)
                .unwrap_or_else(|_| Stdio::null()),
        );
        Ok(c)
    }

    fn start(&mut self, n: NodeId) -> Result<(), RealError> {
        let cmd = match self.s.cluster.role(n) {
            Role::Server => self.service.command(self, n)?,
            _ => self.node_cmd(n)?,
        };
        let p = spawn(&self.name(n), cmd).map_err(RealError::Setup)?;
        self.procs.by_node.insert(n, p);
        self.down.insert(n, false);
        Ok(())
    }

    fn apply_net(&mut self) -> Result<(), RealError> {
        let rules: Vec<String> = self.net.values().flatten().cloned().collect();
        self.table
            .set(&rules)
            .map_err(|e| RealError::Failed(root_hint(e)))
    }

    fn act(&mut self, a: Action) -> Result<(), RealError> {
        match a {
            Action::Inject(i) => {
                let mut fault = self.s.faults.faults[i].fault.clone();
                // The leader is known only now (as in the simulator): isolate that member, and
                // record the isolation of that node.
                if let Fault::IsolateLeader { duration, mode } = fault {
                    match self.service.leader(self) {
                        Some(node) => {
                            self.resolved.insert(i, node);
                            fault = Fault::Isolate {
                                node,
                                duration,
                                mode,
                            }
                        }
                        None => {
                            self.record(0, EventKind::Fault { fault });
                            let what = "no leader to isolate".to_string();
                            self.record(0, EventKind::FaultEnd { what });
                            return Ok(());
                        }
                    }
                }
                match &fault {
                    Fault::Heal => {
                        self.net.clear();
                        self.apply_net()?;
                    }
                    Fault::Partition { .. }
                    | Fault::PartitionOneway { .. }
                    | Fault::Isolate { .. }
                    | Fault::Loss { .. }
                    | Fault::DropReplies { .. } => {
                        self.net.insert(i, nft::rules(&fault, &self.s.cluster));
                        self.apply_net()?;
                    }
                    Fault::Pause { node, .. } => {
                        *self.paused.entry(*node).or_default() += 1;
                        if let Some(p) = self.procs.by_node.get(node) {
                            p.signal(libc::SIGSTOP);
                        }
                    }
                    Fault::Crash { node, .. } => {
                        if let Some(mut p) = self.procs.by_node.remove(node) {
                            p.kill();
                        }
                        self.down.insert(*node, true);
                        self.paused.remove(node);
                    }
                    // A server's clock: through its shim file. Client clocks are virtual: the
                    // client applies the plan's clock faults itself at their time.
                    Fault::ClockStep { node, delta } => {
                        if let Some(f) = self.clock_files.get(node) {
                            f.step(*delta);
                        }
                    }
                    Fault::ClockDrift { node, ppm } => {
                        if let Some(f) = self.clock_files.get(node) {
                            f.drift(*ppm);
                        }
                    }
                    _ => {}
                }
                // Recorded once the fault is in force (nft has returned, the signal is sent,
                // the clock file rewritten), not when it was due: what the history says
                // happened after it did happen after it.
                self.record(fault.node().unwrap_or(0), EventKind::Fault { fault });
            }
            Action::End(i) => {
                let fault = self.s.faults.faults[i].fault.clone();
                // An isolate_leader ends where it was applied.
                let at = self.resolved.get(&i).copied().or(fault.node()).unwrap_or(0);
                match fault {
                    Fault::Pause { node, .. } => {
                        let n = self.paused.entry(node).or_default();
                        *n = n.saturating_sub(1);
                        if *n == 0 && self.down.get(&node) != Some(&true) {
                            // Recorded before the fault stops being in force (the start is
                            // recorded after it is): the history's interval of a fault lies
                            // inside the real one. A resumed server's backends can answer
                            // within the time it takes to signal every process it forked.
                            let what = format!("{} resumed", self.name(node));
                            self.record(node, EventKind::FaultEnd { what });
                            if let Some(p) = self.procs.by_node.get(&node) {
                                p.signal(libc::SIGCONT);
                            }
                        }
                    }
                    _ => {
                        if self.net.remove(&i).is_some() {
                            self.record(
                                at,
                                EventKind::FaultEnd {
                                    what: "links healed".into(),
                                },
                            );
                            self.apply_net()?;
                        }
                    }
                }
            }
            Action::Restart(n) => {
                if self.down.get(&n) == Some(&true) {
                    *self.incarnation.entry(n).or_default() += 1;
                    let what = format!("{} restarted", self.name(n));
                    self.record(n, EventKind::FaultEnd { what });
                    self.start(n)?;
                }
            }
        }
        Ok(())
    }

    fn schedule(&self) -> Vec<(Nanos, Action)> {
        let mut v = Vec::new();
        for (i, tf) in self.s.faults.faults.iter().enumerate() {
            v.push((tf.at, Action::Inject(i)));
            match tf.fault {
                Fault::Partition { duration, .. }
                | Fault::PartitionOneway { duration, .. }
                | Fault::Isolate { duration, .. }
                | Fault::IsolateLeader { duration, .. }
                | Fault::Loss { duration, .. }
                | Fault::DropReplies { duration, .. }
                | Fault::Pause { duration, .. } => {
                    v.push((tf.at.saturating_add(duration), Action::End(i)))
                }
                Fault::Crash {
                    node,
                    restart_after: Some(d),
                } => v.push((tf.at.saturating_add(d), Action::Restart(node))),
                _ => {}
            }
        }
        // Stable: at one instant, injections and ends keep the plan's order.
        v.sort_by_key(|a| a.0);
        v
    }

    /// A server or the resource that died without a crash fault, or a client that exited
    /// with an error, fails the run.
    fn check_alive(&mut self) -> Result<(), RealError> {
        for (n, p) in self.procs.by_node.iter_mut() {
            let client = self.s.cluster.role(*n) == Role::Client;
            if let Some(status) = p.exited().filter(|st| !client || !st.success()) {
                let what = if client {
                    " (its locksim client process; an adapter's own error is in its cN.I.err line below)"
                } else {
                    ""
                };
                return Err(RealError::Failed(format!(
                    "{} exited unexpectedly ({status}){what}{}",
                    p.name,
                    log_tail_of(
                        &self.dir,
                        &self.s.cluster.name(*n),
                        self.service.log_files()
                    )
                )));
            }
        }
        Ok(())
    }

    /// With an adapter and network faults: each client's adapter connects to the lock
    /// servers from its node's own address, or the plan's cuts would miss it (the shim did
    /// not bind it: a program that does not call libc's `connect`). Checked until each
    /// client's first connection is seen; a connection from elsewhere fails the run.
    fn check_bound(&mut self) -> Result<(), RealError> {
        if self.adapter.is_none() || !crate::support::has_network_faults(self.s) {
            return Ok(());
        }
        let now = true_now(self.t0);
        if now < self.bound_checked + 100 * MS {
            return Ok(());
        }
        self.bound_checked = now;
        let clients: Vec<NodeId> = self.s.cluster.client_ids().collect();
        for n in clients {
            if self.bound.get(&n).copied().unwrap_or(false) {
                continue;
            }
            let Some(p) = self.procs.by_node.get(&n) else {
                continue;
            };
            let pids = crate::procs::descendants(p.pid() as u32);
            for (local, remote) in crate::procs::tcp_connections(&pids) {
                if !self.servers.contains(&remote) {
                    continue;
                }
                if *local.ip() != ip(n) {
                    return Err(RealError::Failed(format!(
                        "the adapter of {} connects to {remote} from {}, not from its node's address {}: the LD_PRELOAD shim did not bind it (a program that does not call the C library's connect must bind to hello's `bind` itself), so the plan's network faults would not cut it",
                        self.name(n),
                        local.ip(),
                        ip(n)
                    )));
                }
                self.bound.insert(n, true);
            }
        }
        Ok(())
    }

    fn main_loop(&mut self) -> Result<(), RealError> {
        let end = self.s.end();
        let mut plan = self.schedule().into_iter().peekable();
        loop {
            if interrupted() {
                return Err(RealError::Interrupted);
            }
            self.check_alive()?;
            self.check_bound()?;
            let now = true_now(self.t0);
            while let Some(&(at, a)) = plan.peek() {
                if at > now {
                    break;
                }
                plan.next();
                self.act(a)?;
            }
            if now >= end {
                return Ok(());
            }
            let next = plan.peek().map_or(end, |a| a.0).min(end);
            let wait = next.saturating_sub(now).clamp(MS / 10, 10 * MS);
            std::thread::sleep(Duration::from_nanos(wait));
        }
    }

    fn logs(&self) -> Result<Vec<Event>, RealError> {
        let mut events = self.events.clone();
        let mut files: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .map_err(|e| RealError::Failed(format!("{}: {e}", self.dir.display())))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "log"))
            .collect();
        files.sort();
        for f in files {
            events.extend(crate::merge::read_log(&f).map_err(RealError::Failed)?);
        }
        Ok(events)
    }
}

/// The pid in a run folder's name (`locksim-real-<pid>-XXXXXX`).
fn dir_pid(name: &str) -> Option<u32> {
    name.strip_prefix("locksim-real-")?
        .split_once('-')?
        .0
        .parse()
        .ok()
}

/// Removes the run folders that harnesses killed by `SIGKILL` left behind (their pid is gone;
/// the processes went with them, by `PR_SET_PDEATHSIG`).
fn sweep_stale_dirs() {
    let Ok(rd) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(pid) = dir_pid(&name) {
            if !Path::new(&format!("/proc/{pid}")).exists() && e.path().is_dir() {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}

/// `; the run's logs are kept in DIR` after a failed run: its small files (node logs, stderr,
/// specs, adapter sources) copied to a folder the next run's sweep leaves alone.
fn keep_notes(dir: &Path) -> String {
    match keep_logs(dir, "locksim-failed-") {
        Some(kept) => format!(
            "; the run's logs (and any adapter's stderr, cN.I.adapter.err) are kept in {}",
            kept.display()
        ),
        None => String::new(),
    }
}

/// Copies the run folder's small files (under 16 MiB) to a new kept folder `PREFIX*` in the
/// temporary directory, and each server's logs (`*.log` in a node's folder, e.g.
/// `n4/redis.log` of a Sentinel, `n2/pgbouncer.log`, `n1/zookeeper.log`) into a folder of the
/// same name; `None` when nothing could be copied.
fn keep_logs(dir: &Path, prefix: &str) -> Option<PathBuf> {
    let kept = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .map(tempfile::TempDir::keep)
        .ok()?;
    let small = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.len() < 16 << 20)
    };
    let mut n = 0;
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    entries.sort();
    for p in entries {
        let Some(name) = p.file_name() else { continue };
        if p.is_dir() {
            for log in server_logs(&p) {
                let to = kept.join(name);
                let copied = std::fs::create_dir_all(&to).is_ok()
                    && log
                        .file_name()
                        .is_some_and(|f| std::fs::copy(&log, to.join(f)).is_ok());
                n += usize::from(copied);
            }
        } else if small(&p) && std::fs::copy(&p, kept.join(name)).is_ok() {
            n += 1;
        }
    }
    if n == 0 {
        let _ = std::fs::remove_dir(&kept);
        return None;
    }
    Some(kept)
}

/// The log files (`*.log`, under 16 MiB) in a server's folder and in the folders inside it
/// (PostgreSQL writes `data/postgres.log`), sorted.
fn server_logs(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![(dir.to_path_buf(), 0)];
    while let Some((d, depth)) = dirs.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let Ok(m) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            if m.is_dir() && depth < 2 {
                dirs.push((p, depth + 1));
            } else if m.is_file() && m.len() < 16 << 20 && p.extension().is_some_and(|x| x == "log")
            {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The server logs a kept folder holds (`n1/redis.log`, …), relative to it, sorted: what
/// `--keep-logs` lists.
pub fn kept_server_logs(kept: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(kept)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .flat_map(|d| server_logs(&d))
                .filter_map(|p| p.strip_prefix(kept).ok().map(Path::to_path_buf))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// `redis-py 5.2.1 (adapter redis-py)`: what the first client's adapter said it imported.
fn adapter_said(dir: &Path, a: &crate::adapter::AdapterSpec) -> String {
    let said = std::fs::read_dir(dir)
        .ok()
        .and_then(|rd| {
            let mut files: Vec<PathBuf> = rd
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.to_string_lossy().ends_with(".adapter.json"))
                .collect();
            files.sort();
            files.into_iter().next()
        })
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .map(|v| {
            let f = |k: &str| v[k].as_str().unwrap_or("").to_string();
            format!("{} {}", f("library"), f("version"))
                .trim()
                .to_string()
        })
        .filter(|t| !t.is_empty());
    match said {
        Some(lib) => format!("{lib} (adapter {})", a.name),
        None => format!("adapter {}", a.name),
    }
}

fn first_error_lines(dir: &Path) -> String {
    let mut out = String::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        let mut files: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "err"))
            // An adapter's stderr is quoted by its client's error line.
            .filter(|p| !p.to_string_lossy().ends_with(".adapter.err"))
            .collect();
        files.sort();
        for f in files {
            if let Ok(t) = std::fs::read_to_string(&f) {
                if let Some(l) = t.lines().find(|l| !l.trim().is_empty()) {
                    out += &format!(
                        " {}: {l};",
                        f.file_name().unwrap_or_default().to_string_lossy()
                    );
                }
            }
        }
    }
    out
}

/// Runs `scenario` for real (see the crate docs).
///
/// # Errors
/// [`RealError`]: unsupported input (exit 2), missing tools, a failed or interrupted run.
pub fn run(scenario: &Scenario, opts: &RealOptions) -> Result<RealRun, RealError> {
    let backend = check_input(scenario, opts)?;
    let service = crate::services::server_side(backend, opts)?;
    let version = service.version(opts).map_err(RealError::Setup)?;
    let network_faults = crate::support::has_network_faults(scenario);
    if network_faults {
        Command::new("nft")
            .arg("--version")
            .output()
            .map_err(|e| {
                RealError::Setup(format!(
                    "cannot run nft ({e}): network faults in real mode need nftables (apt-get install nftables) and root"
                ))
            })?;
    }
    install_signal_handler();
    let _host = HostLock::take()?;
    sweep_stale_dirs();
    // Always: a table that a killed harness left would cut this run's links too.
    nft::sweep_stale();
    let dir = tempfile::Builder::new()
        .prefix(&format!("locksim-real-{}-", std::process::id()))
        .tempdir()
        .map_err(|e| RealError::Setup(format!("cannot make a temporary folder: {e}")))?;
    let mut run = Run::new(
        scenario,
        opts,
        backend,
        &*service,
        dir.path(),
        network_faults,
    )?;
    run.prepare_clocks()?;
    let stop_watch = Arc::new(AtomicBool::new(false));
    let result = run.drive(&stop_watch);
    stop_watch.store(true, Ordering::Relaxed);
    run.procs.kill_all();
    run.table = nft::Table::new(); // drops (deletes) the run's table now
    if let Err(e) = result {
        return Err(match e {
            RealError::Failed(m) => RealError::Failed(format!(
                "{m}{}{}",
                first_error_lines(&run.dir).trim_end_matches(';'),
                keep_notes(&run.dir)
            )),
            e => e,
        });
    }
    let events = run.logs()?;
    let history = crate::merge::history(scenario, events);
    let clients = run
        .adapter
        .as_ref()
        .map(|a| format!(", clients: {}", adapter_said(&run.dir, a)))
        .unwrap_or_default();
    let logs = if opts.keep_logs {
        keep_logs(&run.dir, "locksim-logs-")
    } else {
        None
    };
    Ok(RealRun {
        history,
        service: format!("{} on {version}{clients}", scenario.algorithm),
        logs,
    })
}

/// The backend of `scenario`, once its knobs, plan, adapter and cluster are ones real mode
/// runs.
///
/// # Errors
/// [`RealError::Unsupported`], naming the first thing refused.
fn check_input(scenario: &Scenario, opts: &RealOptions) -> Result<Backend, RealError> {
    let backend = crate::support::backend(scenario).map_err(RealError::Unsupported)?;
    crate::support::check_plan(
        scenario,
        &backend,
        opts.clockshim.is_some(),
        &crate::support::fault_at,
    )
    .map_err(RealError::Unsupported)?;
    if let Some(choice) = &opts.adapter {
        crate::adapter::check_scenario(scenario, choice, opts.clockshim.is_some())
            .map_err(RealError::Unsupported)?;
    }
    if backend.servers != scenario.cluster.servers {
        return Err(RealError::Unsupported(format!(
            "the cluster has {} servers where {} needs {}",
            scenario.cluster.servers, scenario.algorithm, backend.servers
        )));
    }
    Ok(backend)
}

/// `NODE.clock` in the run's folder `dir`: the clock file of `node`'s shifted clock.
fn clock_file(
    dir: &Path,
    s: &Scenario,
    node: NodeId,
) -> Result<crate::clockfile::ClockFile, RealError> {
    let path = dir.join(format!("{}.clock", s.cluster.name(node)));
    crate::clockfile::ClockFile::create(&path).map_err(RealError::Setup)
}

/// The run's addresses, each a free port on its node's own address: the servers' client
/// ports, the resource's, and each server's `extra` ports ([`ServerSide::extra_ports`]:
/// etcd members' peer ports, ZooKeeper members' quorum and election ports; none for the
/// other services), by node.
type Ports = (Vec<SocketAddrV4>, SocketAddrV4, Vec<Vec<u16>>);

/// Picks the run's [`Ports`], `extra` more for each server, each different from the server's
/// client port and from one another.
///
/// # Errors
/// [`RealError::Setup`] when an address cannot be bound.
fn pick_ports(scenario: &Scenario, extra: usize) -> Result<Ports, RealError> {
    let c = &scenario.cluster;
    let port = |n: NodeId| {
        free_port(ip(n)).map_err(|e| RealError::Setup(format!("cannot bind {}: {e}", ip(n))))
    };
    let servers = c.server_ids().map(port).collect::<Result<Vec<_>, _>>()?;
    let resource = port(c.resource_id())?;
    let mut ports = Vec::new();
    for n in c.server_ids() {
        // More free ports on the server's address, not its client port.
        let mut taken = vec![servers[n as usize].port()];
        let mut pick = || -> Result<u16, RealError> {
            let mut p = port(n)?.port();
            while taken.contains(&p) {
                p = port(n)?.port();
            }
            taken.push(p);
            Ok(p)
        };
        ports.push((0..extra).map(|_| pick()).collect::<Result<Vec<_>, _>>()?);
    }
    Ok((servers, resource, ports))
}

/// The run's nftables table: with network faults made now (without root this fails before
/// anything starts), with the source NAT its service's own connections need; else an empty
/// one that touches nothing.
///
/// # Errors
/// [`RealError::Setup`] when nft refuses the table (with a hint about root).
fn nft_table(
    scenario: &Scenario,
    service: &dyn ServerSide,
    network_faults: bool,
) -> Result<nft::Table, RealError> {
    if !network_faults {
        return Ok(nft::Table::new());
    }
    let snat = service.snat(&scenario.cluster);
    nft::Table::with_snat(snat).map_err(|e| RealError::Setup(root_hint(e)))
}

impl<'a> Run<'a> {
    /// The run's state before anything starts: its ports, its nftables table, the clients'
    /// clocks.
    ///
    /// # Errors
    /// [`RealError::Setup`]: a port that cannot be bound, a table nft refuses.
    fn new(
        scenario: &'a Scenario,
        opts: &'a RealOptions,
        backend: Backend,
        service: &'a dyn ServerSide,
        dir: &Path,
        network_faults: bool,
    ) -> Result<Run<'a>, RealError> {
        let c = &scenario.cluster;
        let (servers, resource, ports) = pick_ports(scenario, service.extra_ports())?;
        let table = nft_table(scenario, service, network_faults)?;
        Ok(Run {
            s: scenario,
            backend,
            service,
            opts,
            dir: dir.to_path_buf(),
            t0: 0,
            servers,
            ports,
            resource,
            procs: Procs::default(),
            table,
            member_uids: service.member_uids() && network_faults,
            net: BTreeMap::new(),
            paused: BTreeMap::new(),
            resolved: BTreeMap::new(),
            down: BTreeMap::new(),
            incarnation: BTreeMap::new(),
            events: Vec::new(),
            clocks: (0..c.nodes())
                .filter(|&n| c.role(n) != Role::Resource)
                .map(|n| (n, crate::vclock::of(scenario, n)))
                .collect(),
            clock_files: BTreeMap::new(),
            adapter: None,
            bound: BTreeMap::new(),
            bound_checked: 0,
        })
    }

    /// Resolves the adapter for this run's folder and makes the clock files of the servers
    /// (and adapters) whose clocks the plan shifts, each adapter's set to its client's
    /// wall-clock offset; probes that the adapter's runtime reads them.
    ///
    /// # Errors
    /// [`RealError::Setup`]: an adapter that cannot be resolved, a clock file that cannot be
    /// made, a runtime that ignores the clock shim.
    fn prepare_clocks(&mut self) -> Result<(), RealError> {
        let (scenario, opts) = (self.s, self.opts);
        let c = &scenario.cluster;
        if let Some(choice) = &opts.adapter {
            let spec = crate::adapter::resolve(
                choice,
                &self.dir,
                &opts.adapter_libs,
                opts.clockshim.as_deref(),
            )
            .map_err(RealError::Setup)?;
            self.adapter = Some(spec);
        }
        for tf in &scenario.faults.faults {
            if let Fault::ClockStep { node, .. } | Fault::ClockDrift { node, .. } = tf.fault {
                // A server's clock, or an adapter's (check_scenario allows only its steps).
                let shifted = c.role(node) == Role::Server || self.adapter.is_some();
                if shifted && !self.clock_files.contains_key(&node) {
                    self.add_clock_file(node)?;
                }
            }
        }
        if let Some(spec) = &self.adapter {
            // A client's wall-clock offset (its settings) is where its adapter's clock starts.
            for node in c.client_ids() {
                let offset = scenario.workload.client(node - c.servers + 1).clock_offset;
                if offset != 0 && !self.clock_files.contains_key(&node) {
                    let f = clock_file(&self.dir, scenario, node)?;
                    self.clock_files.insert(node, f);
                }
                if let Some(f) = self.clock_files.get(&node) {
                    f.step(offset);
                }
            }
            if c.client_ids().any(|n| self.clock_files.contains_key(&n)) {
                crate::adapter::probe_clock(spec, &self.dir.join("probe.clock"))
                    .map_err(RealError::Setup)?;
            }
        }
        Ok(())
    }

    /// Makes `NODE.clock` in the run's folder, the clock file of `node`'s shifted clock.
    fn add_clock_file(&mut self, node: NodeId) -> Result<(), RealError> {
        let f = clock_file(&self.dir, self.s, node)?;
        self.clock_files.insert(node, f);
        Ok(())
    }

    /// Starts the service, then the resource and the clients; applies the plan until the
    /// run's end; gathers what the service recorded. `stop_watch` ends Sentinel's watcher.
    fn drive(&mut self, stop_watch: &Arc<AtomicBool>) -> Result<(), RealError> {
        self.start_service()?;
        self.run_nodes(stop_watch)?;
        self.wind_down()
    }

    /// Starts the service's servers and waits until they answer (the lock table made, for
    /// PostgreSQL; the clock shim proven, for Redis): [`ServerSide::prepare`],
    /// [`ServerSide::command`] of each, [`ServerSide::wait_ready`].
    fn start_service(&mut self) -> Result<(), RealError> {
        let service = self.service;
        service.prepare(self)?;
        for n in self.s.cluster.server_ids() {
            self.start(n)?;
        }
        service.wait_ready(self)
    }

    /// Fixes true time 0, starts the resource and the clients and runs the plan to the end;
    /// records the leaders the service saw ([`ServerSide::watch_leaders`]: Sentinel's
    /// promotions) as `leader` events.
    fn run_nodes(&mut self, stop_watch: &Arc<AtomicBool>) -> Result<(), RealError> {
        let s = self.s;
        let c = &s.cluster;
        // True time 0 a little ahead, so every client process is up and waiting for it.
        // An adapter's interpreter starts and imports its library first (about 0.2 s for
        // CPython with redis-py, 0.5 s for Node.js).
        let startup = if self.adapter.is_some() {
            1_500 * MS
        } else {
            0
        };
        self.t0 = host_mono() + 200 * MS + 20 * MS * c.clients as u64 + startup;
        // Sentinel's own word on each promotion, recorded as the promoted node beginning to
        // lead: a run whose plan cuts the primary off and has none did not exercise failover.
        let watch = self.service.watch_leaders(self, stop_watch.clone());
        self.start(c.resource_id())?;
        self.wait_up(c.resource_id(), self.resource, false)?;
        for n in c.client_ids() {
            self.start(n)?;
        }
        let ran = self.main_loop();
        stop_watch.store(true, Ordering::Relaxed);
        if let Some(w) = watch {
            for (term, (at, addr)) in w.join().unwrap_or_default().into_iter().enumerate() {
                if let Some(n) = self.servers.iter().position(|&a| a == addr) {
                    let kind = EventKind::Leader {
                        term: term as u64 + 1,
                    };
                    self.record_at(n as NodeId, at, kind);
                }
            }
        }
        ran
    }

    /// The end: resumes what is paused, lets the clients finish their last line (an
    /// adapter's client long enough to find its adapter hung), fails the run on an adapter's
    /// client that broke off, and reads the service's own records ([`ServerSide::events`]:
    /// PostgreSQL's).
    fn wind_down(&mut self) -> Result<(), RealError> {
        let s = self.s;
        let c = &s.cluster;
        for p in self.procs.by_node.values() {
            p.signal(libc::SIGCONT);
        }
        // An adapter's client may still be waiting for an answer: long enough for it to
        // find its adapter hung (its timeout and HANG_GRACE), then its exit is read below.
        let grace = true_now(self.t0)
            + match self.adapter {
                Some(_) if self.backend.timeout != crate::support::NO_TIMEOUT => {
                    self.backend.timeout.min(60 * SEC)
                        + crate::adapter::HANG_GRACE.as_nanos() as Nanos
                        + SEC
                }
                _ => SEC,
            };
        while true_now(self.t0) < grace
            && self
                .procs
                .by_node
                .iter_mut()
                .any(|(n, p)| c.role(*n) == Role::Client && p.exited().is_none())
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        if interrupted() {
            return Err(RealError::Interrupted);
        }
        if self.adapter.is_some() {
            // A client that stopped because its adapter broke the protocol at the end.
            for n in c.client_ids() {
                if let Some(p) = self.procs.by_node.get_mut(&n) {
                    if let Some(st) = p.exited().filter(|st| !st.success()) {
                        return Err(RealError::Failed(format!(
                            "{}'s locksim client process exited unexpectedly ({st}); what it said is in its {}.I.err line below",
                            c.name(n),
                            c.name(n)
                        )));
                    }
                }
            }
        }
        if self.service.records_events() {
            // The clients are gone (their statements committed or not); the server stays.
            let clients: Vec<NodeId> = c.client_ids().collect();
            for n in clients {
                if let Some(mut p) = self.procs.by_node.remove(&n) {
                    p.kill();
                }
            }
            let service = self.service;
            let recorded = service.events(self)?;
            self.events.extend(recorded);
        }
        Ok(())
    }
}

/// What the service's servers get from the run ([`ServerSide`]'s methods take it).
impl ServerHost for Run<'_> {
    fn scenario(&self) -> &Scenario {
        self.s
    }

    fn backend(&self) -> Backend {
        self.backend
    }

    fn opts(&self) -> &RealOptions {
        self.opts
    }

    fn dir(&self) -> &Path {
        &self.dir
    }

    fn servers(&self) -> &[SocketAddrV4] {
        &self.servers
    }

    fn ports(&self, n: NodeId) -> &[u16] {
        &self.ports[n as usize]
    }

    fn member_uids(&self) -> bool {
        self.member_uids
    }

    fn clock_file(&self, n: NodeId) -> Option<&crate::clockfile::ClockFile> {
        self.clock_files.get(&n)
    }

    fn t0(&self) -> u64 {
        self.t0
    }

    fn clock(&self, n: NodeId) -> Option<&locksim_core::clock::Clock> {
        self.clocks.get(&n)
    }

    fn interrupted(&self) -> bool {
        interrupted()
    }

    fn log_tail(&self, n: NodeId) -> String {
        log_tail_of(&self.dir, &self.name(n), self.service.log_files())
    }

    /// A server (or the resource) that has exited while the run starts up: the run fails now,
    /// quoting its log.
    fn exited_early(&mut self, n: NodeId) -> Result<(), RealError> {
        if let Some(status) = self.procs.by_node.get_mut(&n).and_then(|p| p.exited()) {
            return Err(RealError::Failed(format!(
                "{} exited as it started ({status}){}",
                self.name(n),
                self.log_tail(n)
            )));
        }
        Ok(())
    }

    /// Waits until `addr` answers (a PING for Redis, a connect for the resource).
    fn wait_up(&mut self, n: NodeId, addr: SocketAddrV4, ping: bool) -> Result<(), RealError> {
        let mut conn = Conn::new(Ipv4Addr::LOCALHOST, addr);
        for _ in 0..500 {
            if interrupted() {
                return Err(RealError::Interrupted);
            }
            self.exited_early(n)?;
            let ok = if ping {
                conn.call(&request(&[b"PING"]), Duration::from_millis(200), |r| {
                    read_reply(r)
                })
                .is_ok_and(|r| r == Reply::Status("PONG".into()))
            } else {
                std::net::TcpStream::connect_timeout(&addr.into(), Duration::from_millis(200))
                    .is_ok()
            };
            if ok {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Err(RealError::Failed(format!(
            "{} did not come up on {addr} within 5 s{}",
            self.name(n),
            self.log_tail(n)
        )))
    }

    fn restart_if_down(&mut self, n: NodeId) -> Result<(), RealError> {
        if self.down.get(&n) == Some(&true) {
            *self.incarnation.entry(n).or_default() += 1;
            self.start(n)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn run_folders_name_their_harness() {
        assert_eq!(super::dir_pid("locksim-real-812-Ab3dEf"), Some(812));
        assert_eq!(super::dir_pid("locksim-real-test-812"), None);
        assert_eq!(super::dir_pid("locksim-real.lock"), None);
    }
}
