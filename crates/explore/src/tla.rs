//! Trace validation against the TLA+ specifications in `tla/` (Cirstea, Kuppe, Loillier, Merz,
//! "Validating traces of distributed programs against TLA+ specifications", 2024).
//!
//! [`export`] turns a locksim trace into a TLA+ module and a TLC configuration: the run's
//! observable events (acquire/release/write operations, grants on servers, the resource's
//! accepts and rejects, renewals, give-ups, pauses, clock steps, crashes and restarts) become a constant
//! sequence `TraceLog` of records
//!
//! ```text
//! [id |-> 12, k |-> "Grant", n |-> "n1", c |-> "c1", t |-> 63826, v |-> -1, tok |-> 1]
//! ```
//!
//! (`id`: the event's id in the trace; `k`: the kind; `n`: the node it happened on; `c`: the
//! client concerned; `t`: true time in microseconds; `v`: a deadline on the client's clock in
//! µs, a clock step in µs, or a count, else -1; `tok`: a fencing token, or 0), and the module
//! extends `CentralTrace` or `RedlockTrace`, whose `TraceNext` must explain each record by a
//! step of the specification. TLC then reports `TraceNotAccepted` violated (exit code 12) when
//! the whole trace is a behaviour of the specification, and finishes without a violation
//! (exit 0) when it is not.
//!
//! Network faults are not exported: their effects (lost requests and replies) are steps of the
//! specification that the trace does not show. What the specifications do not model is refused
//! with a message naming the field: lease renewal in Redlock, a renewal with an unknown outcome,
//! renew deadlines, step-down times, per-client settings, pauses of one task, several keys,
//! clock drift, pauses of servers, delayed restart.
//!
//! A renewing client's records carry deadlines like any other's: the acquire `ok`'s, then each
//! successful renewal's (`extend` ok: `sent + TTL − drift` on the client's clock), which
//! `CentralTrace` checks against the one the specification computes.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use locksim_core::fault::PauseTask;
use locksim_core::history::Deadline;
use locksim_core::{
    Cluster, Event, EventKind, Fault, LocalClock, OpF, Phase, Role, Scenario, TimedFault, Trace,
    Workload,
};

/// The specification a trace is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spec {
    /// `tla/CentralTrace.tla` (algorithms `central` and `central-fencing`).
    Central,
    /// `tla/RedlockTrace.tla` (algorithm `redlock`).
    Redlock,
}

impl Spec {
    /// The TLA+ module the exported module extends.
    pub fn module(self) -> &'static str {
        match self {
            Spec::Central => "CentralTrace",
            Spec::Redlock => "RedlockTrace",
        }
    }
}

/// An exported trace: the text of `<module>.tla` and `<module>.cfg`.
#[derive(Debug, Clone)]
pub struct Export {
    /// The TLA+ module (its name is the one given to [`export`]).
    pub module: String,
    /// The TLC configuration: constants, `TraceInit`/`TraceNext`, the invariant.
    pub cfg: String,
    /// The specification it is checked against.
    pub spec: Spec,
    /// Events in the trace.
    pub events: usize,
    /// Records in `TraceLog` (the steps TLC must explain).
    pub steps: usize,
}

/// Why a trace cannot be exported: the field of the trace and the problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportError {
    /// The field, e.g. `events[12].handle` or `scenario.workload.keys`.
    pub field: String,
    /// What is wrong with it.
    pub problem: String,
}

impl std::fmt::Display for ExportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`: {}", self.field, self.problem)
    }
}

fn err(field: impl Into<String>, problem: impl Into<String>) -> ExportError {
    ExportError {
        field: field.into(),
        problem: problem.into(),
    }
}

/// Times in the exported module are microseconds; TLC's integers have 32 bits.
const MAX_US: u64 = i32::MAX as u64 / 2;

fn us(ns: u64) -> u64 {
    ns / 1_000
}

fn us_signed(ns: i64) -> i64 {
    ns.div_euclid(1_000)
}

/// Is `name` usable as a TLA+ module name (letters, digits, `_`, not only digits)?
pub fn valid_module_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.chars().any(|c| c.is_ascii_alphabetic())
}

/// A module name made from a trace file name: `k5-redlock-s1-b51f2c63.json` gives
/// `Trace_k5_redlock_s1_b51f2c63`.
pub fn module_name_for(trace_file: &Path) -> String {
    let stem = trace_file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let clean: String = stem
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("Trace_{clean}")
}

/// One record of `TraceLog` (see the module's documentation for the fields).
struct Rec {
    id: u64,
    k: &'static str,
    n: String,
    c: String,
    t: u64,
    v: i64,
    tok: u64,
}

/// Exports `trace` (whose events must be embedded: replay the scenario first otherwise) as
/// module `module_name`; `source` names the trace file in the module's header.
///
/// # Errors
/// A field of the trace that is malformed, or that the specifications do not model.
pub fn export(trace: &Trace, source: &str, module_name: &str) -> Result<Export, ExportError> {
    let sc = &trace.scenario;
    let spec = spec_of(&sc.algorithm)?;
    let events = trace.events.as_ref().ok_or_else(|| {
        err(
            "events",
            "the trace has no events (re-run its scenario to get them)",
        )
    })?;
    check_workload(&sc.workload, spec)?;
    let settings = Settings::read(sc, spec)?;
    let lossy = lossy_pairs(&sc.cluster, &sc.faults.faults);
    let (recs, last_t) = Records::of(sc, events)?;
    let out = Output {
        sc,
        spec,
        events: events.len(),
        recs: &recs,
        last_t,
        lossy: &lossy,
        settings: &settings,
    };
    Ok(Export {
        module: out.module(source, module_name),
        cfg: out.cfg(source),
        spec,
        events: events.len(),
        steps: recs.len(),
    })
}

/// The specification of `algorithm`.
///
/// # Errors
/// `scenario.algorithm`: an algorithm without one.
fn spec_of(algorithm: &str) -> Result<Spec, ExportError> {
    match algorithm {
        "central" | "central-fencing" => Ok(Spec::Central),
        "redlock" => Ok(Spec::Redlock),
        other => Err(err(
            "scenario.algorithm",
            format!("no TLA+ specification for `{other}` (there are: central, central-fencing, redlock)"),
        )),
    }
}

/// Refuses the workload settings the specification `spec` does not model.
///
/// # Errors
/// The first such `scenario.workload.*` field: several keys, renewal in Redlock, a renew
/// deadline, a step-down time, per-client settings, a client that does not check validity.
fn check_workload(w: &Workload, spec: Spec) -> Result<(), ExportError> {
    if w.keys != 1 {
        return Err(err(
            "scenario.workload.keys",
            format!("{} keys: the specifications model one key", w.keys),
        ));
    }
    if w.renew_every.is_some() && spec == Spec::Redlock {
        return Err(err(
            "scenario.workload.renew_every",
            "lease renewal (a watchdog) is not in the Redlock specification yet",
        ));
    }
    // Of the holder's renewal behaviours, the specifications model renewal itself; these not.
    if w.renew_deadline.is_some() {
        return Err(err(
            "scenario.workload.renew_deadline",
            "a renew deadline is not in the specifications yet",
        ));
    }
    if w.step_down != 0 {
        return Err(err(
            "scenario.workload.step_down",
            "a step-down time (acting on after learning the lock is lost) is not in the specifications yet",
        ));
    }
    if let Some(c) = w.per_client.keys().next() {
        return Err(err(
            format!("scenario.workload.per_client.{c}"),
            "per-client settings are not in the specifications (every client has the workload's)",
        ));
    }
    if !w.check_validity {
        return Err(err(
            "scenario.workload.check_validity",
            "the specifications model the careful client that checks its validity before each write",
        ));
    }
    Ok(())
}

/// The algorithm's settings that the configuration states, read as the algorithm reads them.
struct Settings {
    /// The servers read their wall clocks (`clock = "wall"`).
    server_wall: bool,
    /// The clients read their wall clocks (`client_clock = "wall"`).
    client_wall: bool,
    /// `fsync = "always"`.
    fsync: bool,
    /// `drift_factor`, in parts per million.
    drift_ppm: u64,
}

impl Settings {
    /// Reads `sc.config` with the knobs of `spec`'s algorithm.
    ///
    /// # Errors
    /// A `scenario.config.*` setting that is malformed, or Redlock's `delayed_restart` (not
    /// modelled).
    fn read(sc: &Scenario, spec: Spec) -> Result<Settings, ExportError> {
        let knobs: &[locksim_algos::Knob] = match spec {
            Spec::Central => locksim_algos::central::KNOBS,
            Spec::Redlock => locksim_algos::redlock::KNOBS,
        };
        let k = locksim_algos::knobs::Knobs::new(&sc.algorithm, &sc.config, knobs)
            .map_err(|e| err("scenario.config", e))?;
        let server_wall = locksim_algos::knobs::local_clock(&k, "clock")
            .map_err(|e| err("scenario.config.clock", e))?
            == LocalClock::Wall;
        let client_wall = locksim_algos::knobs::local_clock(&k, "client_clock")
            .map_err(|e| err("scenario.config.client_clock", e))?
            == LocalClock::Wall;
        let fsync = k
            .choice("fsync", &["never", "always"])
            .map_err(|e| err("scenario.config.fsync", e))?
            == "always";
        let drift_ppm = k
            .fraction_ppm("drift_factor")
            .map_err(|e| err("scenario.config.drift_factor", e))?;
        if spec == Spec::Redlock
            && k.flag("delayed_restart")
                .map_err(|e| err("scenario.config.delayed_restart", e))?
        {
            return Err(err(
                "scenario.config.delayed_restart",
                "delayed restart is not in the Redlock specification yet",
            ));
        }
        Ok(Settings {
            server_wall,
            client_wall,
            fsync,
            drift_ppm,
        })
    }
}

/// The (client, server) name pairs whose messages a network fault of the plan may have lost,
/// in order. Nodes outside `cluster` are left out.
fn lossy_pairs(cluster: &Cluster, faults: &[TimedFault]) -> BTreeSet<(String, String)> {
    let mut lossy: BTreeSet<(String, String)> = BTreeSet::new();
    let mut cut = |xs: &[u32], ys: &[u32]| {
        for &x in xs {
            for &y in ys {
                for (c, s) in [(x, y), (y, x)] {
                    if c < cluster.nodes()
                        && s < cluster.nodes()
                        && cluster.role(c) == Role::Client
                        && cluster.role(s) == Role::Server
                    {
                        lossy.insert((cluster.name(c), cluster.name(s)));
                    }
                }
            }
        }
    };
    let all: Vec<u32> = (0..cluster.nodes()).collect();
    for f in faults {
        match &f.fault {
            Fault::Partition { a, b, .. } => cut(a, b),
            Fault::PartitionOneway { from, to, .. }
            | Fault::Loss { from, to, .. }
            | Fault::Delay { from, to, .. } => cut(from, to),
            Fault::DropReplies {
                clients, servers, ..
            } => cut(clients, servers),
            Fault::Isolate { node, .. } => cut(&[*node], &all),
            _ => {}
        }
    }
    lossy
}

/// Where in the trace a record comes from: the event's index, id, true time (µs) and the name
/// of the node it happened on.
struct At {
    i: usize,
    id: u64,
    t: u64,
    node: String,
}

impl At {
    /// `events[i].f`.
    fn field(&self, f: &str) -> String {
        format!("events[{}].{f}", self.i)
    }
}

/// The translation of a trace's events into records, one event at a time.
struct Records<'a> {
    sc: &'a Scenario,
    cluster: &'a Cluster,
    recs: Vec<Rec>,
    /// The client each handle was given to (by its acquire `ok`).
    holder: BTreeMap<u64, String>,
}

impl<'a> Records<'a> {
    /// The records of `events`, and the true time of the last event (µs).
    ///
    /// # Errors
    /// The first event that is malformed (an id out of order, a time going back or beyond
    /// [`MAX_US`], a node not in the cluster or of the wrong role) or that the specifications
    /// do not model, naming its field (`events[12].handle`).
    fn of(sc: &'a Scenario, events: &[Event]) -> Result<(Vec<Rec>, u64), ExportError> {
        let mut r = Records {
            sc,
            cluster: &sc.cluster,
            recs: Vec::new(),
            holder: BTreeMap::new(),
        };
        let mut last_t = 0u64;
        for (i, e) in events.iter().enumerate() {
            let at = r.check(i, e, last_t)?;
            last_t = at.t;
            r.event(&at, e)?;
        }
        Ok((r.recs, last_t))
    }

    /// Checks the `i`-th event's id, time (after `last_t`, µs) and fit to the scenario.
    fn check(&self, i: usize, e: &Event, last_t: u64) -> Result<At, ExportError> {
        let field = |f: &str| format!("events[{i}].{f}");
        if e.id != i as u64 {
            return Err(err(field("id"), format!("is {}, expected {i}", e.id)));
        }
        let t = us(e.time);
        if t < last_t {
            return Err(err(
                field("time"),
                "goes back in time (events must be in true-time order)",
            ));
        }
        if t > MAX_US {
            return Err(err(
                field("time"),
                "beyond 17 minutes: too large for TLC's integers in microseconds",
            ));
        }
        let node = self.name(&field("node"), e.node)?;
        // An event that does not fit the scenario (a client outside the cluster, a fault that
        // names a node it does not have) is refused, never exported or skipped.
        if let Some(p) = locksim_render::event_problem(self.sc, e) {
            // "`client`: …" names the event's field.
            return Err(
                match p.strip_prefix('`').and_then(|r| r.split_once("`: ")) {
                    Some((f, problem)) => err(field(f), problem),
                    None => err(format!("events[{i}]"), p),
                },
            );
        }
        Ok(At {
            i,
            id: e.id,
            t,
            node,
        })
    }

    /// The name of `node`; `field` names it in the error when it is not in the cluster.
    fn name(&self, field: &str, node: u32) -> Result<String, ExportError> {
        let cluster = self.cluster;
        if node >= cluster.nodes() {
            return Err(err(
                field,
                format!(
                    "node {node} is not in the cluster ({} nodes)",
                    cluster.nodes()
                ),
            ));
        }
        Ok(cluster.name(node))
    }

    /// The name of `node`, which must be a client.
    fn client(&self, field: &str, node: u32) -> Result<String, ExportError> {
        let n = self.name(field, node)?;
        if self.cluster.role(node) != Role::Client {
            return Err(err(field, format!("{n} is not a client")));
        }
        Ok(n)
    }

    fn push(&mut self, at: &At, k: &'static str, n: String, c: String, v: i64, tok: u64) {
        self.recs.push(Rec {
            id: at.id,
            k,
            n,
            c,
            t: at.t,
            v,
            tok,
        })
    }

    /// The client a write's `handle` was given to.
    fn holder_of(&self, at: &At, handle: u64) -> Result<String, ExportError> {
        self.holder.get(&handle).cloned().ok_or_else(|| {
            err(
                at.field("handle"),
                format!("no acquire ok before it gave handle {handle}"),
            )
        })
    }

    /// Adds the record of one (checked) event, if it is a step: none for network faults and
    /// the ends of their windows, nor for clock steps of the resource.
    fn event(&mut self, at: &At, e: &Event) -> Result<(), ExportError> {
        let node = e.node;
        match &e.kind {
            EventKind::Op {
                phase,
                f,
                handle,
                token,
                deadline,
                error,
                ..
            } => {
                let c = self.client(&at.field("node"), node)?;
                if (*f, *phase) == (OpF::Acquire, Phase::Ok) {
                    let h = handle.ok_or_else(|| {
                        err(at.field("handle"), "an acquire ok without a handle")
                    })?;
                    self.holder.insert(h, c.clone());
                }
                let (k, v, tok) =
                    op_record(at, (*f, *phase), *token, deadline.as_ref(), error.as_deref())?;
                self.push(at, k, c.clone(), c, v, tok);
            }
            EventKind::Grant {
                client: cl, token, ..
            } => {
                if self.cluster.role(node) != Role::Server {
                    let n = &at.node;
                    return Err(err(at.field("node"), format!("{n} is not a lock server")));
                }
                let c = self.client(&at.field("client"), *cl)?;
                self.push(at, "Grant", at.node.clone(), c, -1, token.unwrap_or(0));
            }
            EventKind::Freed { .. } => {
                return Err(err(
                    at.field("type"),
                    "`freed` records come from raft-lease, whose trace specification does not exist yet",
                ))
            }
            EventKind::WriteAccepted { handle, token, .. } => {
                let c = self.holder_of(at, *handle)?;
                self.push(at, "Accept", at.node.clone(), c, -1, token.unwrap_or(0));
            }
            EventKind::WriteRejected { handle, token, .. } => {
                let c = self.holder_of(at, *handle)?;
                self.push(at, "Reject", at.node.clone(), c, -1, *token);
            }
            // The markers of a replicated service (recorded for triggers): central and
            // Redlock have no leader and no replication, so the trace is not of them.
            EventKind::Leader { .. } => {
                return Err(err(
                    at.field("type"),
                    format!("a `leader` record: {} has no leader, and the specifications none (a trace of another algorithm, or edited?)", self.sc.algorithm),
                ))
            }
            EventKind::Replicated { .. } => {
                return Err(err(
                    at.field("type"),
                    format!("a `replicated` record: {} replicates nothing, and the specifications nothing (a trace of another algorithm, or edited?)", self.sc.algorithm),
                ))
            }
            EventKind::Touched { .. } => {
                return Err(err(
                    at.field("type"),
                    format!("a `touched` record: {} has no sessions, and the specifications none (a trace of another algorithm, or edited?)", self.sc.algorithm),
                ))
            }
            EventKind::Lost { .. } => {
                let c = self.client(&at.field("node"), node)?;
                self.push(at, "Lost", c.clone(), c, -1, 0);
            }
            EventKind::Fault { fault } => self.fault(at, fault)?,
            EventKind::FaultEnd { what } => self.fault_end(at, what)?,
        }
        Ok(())
    }

    /// Adds the record of a fault's start, if it is a step of the specifications.
    fn fault(&mut self, at: &At, fault: &Fault) -> Result<(), ExportError> {
        match fault {
            Fault::Pause { node: p, task, .. } => {
                let c = self.client(&at.field("fault.node"), *p).map_err(|_| {
                    err(
                        at.field("fault.node"),
                        "only pauses of clients are in the specifications",
                    )
                })?;
                if *task != PauseTask::Process {
                    return Err(err(
                        at.field("fault.task"),
                        "a pause of one task of a client is not in the specifications (they pause whole processes)",
                    ));
                }
                self.push(at, "Pause", c.clone(), c, -1, 0);
            }
            Fault::Crash { node: s, .. } => {
                let n = self.name(&at.field("fault.node"), *s)?;
                if self.cluster.role(*s) != Role::Server {
                    return Err(err(
                        at.field("fault.node"),
                        "only crashes of lock servers are in the specifications",
                    ));
                }
                self.push(at, "Crash", n.clone(), n, -1, 0);
            }
            Fault::ClockStep { node: s, delta } => {
                let n = self.name(&at.field("fault.node"), *s)?;
                if self.cluster.role(*s) == Role::Resource {
                    return Ok(()); // the resource reads no clock
                }
                self.push(at, "Step", n.clone(), n, us_signed(*delta), 0);
            }
            Fault::ClockDrift { .. } => {
                return Err(err(
                    at.field("fault"),
                    "clock drift is not in the specifications (their clocks only step)",
                ))
            }
            // Network faults are not steps of the specifications: the requests and
            // replies they lose or delay are (silent) steps. `isolate_leader` is recorded
            // as such only when no server leads (it did nothing).
            Fault::Partition { .. }
            | Fault::PartitionOneway { .. }
            | Fault::Isolate { .. }
            | Fault::IsolateLeader { .. }
            | Fault::Heal
            | Fault::Loss { .. }
            | Fault::Delay { .. }
            | Fault::DropReplies { .. } => {}
            Fault::Duplicate { .. } => {
                return Err(err(
                    at.field("fault"),
                    "message duplication is not in the specifications (a request delivered twice is a step they do not have)",
                ))
            }
        }
        Ok(())
    }

    /// Adds the record of a fault's end (`what`, e.g. `c1 resumed`), if it is a step.
    fn fault_end(&mut self, at: &At, what: &str) -> Result<(), ExportError> {
        // The ends of network fault windows are not steps (their faults are not);
        // each other end is one, or is refused: none is dropped unread.
        const WINDOW_ENDS: [&str; 7] = [
            "partition healed",
            "one-way partition healed",
            "loss window closed",
            "delay window closed",
            "duplication window closed",
            "replies flow again",
            "no leader to isolate",
        ];
        if WINDOW_ENDS.contains(&what) {
            return Ok(());
        }
        let (who, how) = what.split_once(' ').unwrap_or((what, ""));
        match (self.cluster.parse_name(who), how) {
            (Some(id), "resumed") => {
                let c = self.client(&at.field("what"), id)?;
                self.push(at, "Resume", c.clone(), c, -1, 0);
            }
            (Some(id), "restarted") => {
                let n = self.name(&at.field("what"), id)?;
                self.push(at, "Restart", n.clone(), n, -1, 0);
            }
            (Some(_), "rejoined") => {} // the end of an isolation
            _ => {
                return Err(err(
                    at.field("what"),
                    format!("`{what}`: not the end of a fault the specifications have (a pause of one task of a client, or not a fault end locksim records)"),
                ))
            }
        }
        Ok(())
    }
}

/// A client's operation event as a record: its kind, `v` (a deadline on the client's clock in
/// µs for acquire and renewal oks, the masters that granted for a Redlock acquire fail, else
/// -1) and `tok` (the grant's fencing token, 0 for none and for acquire fails).
///
/// # Errors
/// An acquire or renewal ok without its deadline; a write or renewal with an unknown outcome
/// (not modelled).
fn op_record(
    at: &At,
    (f, phase): (OpF, Phase),
    token: Option<u64>,
    deadline: Option<&Deadline>,
    error: Option<&str>,
) -> Result<(&'static str, i64, u64), ExportError> {
    let tok = token.unwrap_or(0);
    let kind = match (f, phase) {
        (OpF::Acquire, Phase::Invoke) => "AcqInv",
        (OpF::Acquire, Phase::Ok) => {
            // Renewing or not, the grant's validity deadline on the client's clock.
            let d = deadline
                .ok_or_else(|| err(at.field("deadline"), "an acquire ok without a deadline"))?;
            return Ok(("AcqOk", us_signed(d.local), tok));
        }
        (OpF::Acquire, Phase::Fail) => {
            // Redlock's message says how many masters granted: "2 of 5 masters, …".
            let seen = error
                .and_then(|m| m.split_once(" of "))
                .and_then(|(n, _)| n.parse::<i64>().ok())
                .unwrap_or(-1);
            return Ok(("AcqFail", seen, 0));
        }
        (OpF::Acquire, Phase::Info) => "AcqInfo",
        (OpF::Release, Phase::Invoke) => "RelInv",
        (OpF::Release, Phase::Ok) => "RelOk",
        (OpF::Release, Phase::Fail) => "RelFail",
        (OpF::Release, Phase::Info) => "RelInfo",
        (OpF::Write, Phase::Invoke) => "WriteInv",
        (OpF::Write, Phase::Ok) => "WriteOk",
        (OpF::Write, Phase::Fail) => "WriteFail",
        (OpF::Write, Phase::Info) => {
            return Err(err(
                at.field("phase"),
                "a write with an unknown outcome: not in the specifications yet",
            ))
        }
        (OpF::Extend, Phase::Invoke) => "ExtInv",
        (OpF::Extend, Phase::Ok) => {
            // The renewal's validity, measured from its send: the grant's new deadline.
            let d = deadline.ok_or_else(|| {
                err(
                    at.field("deadline"),
                    "a renewal ok without the deadline it gives the grant",
                )
            })?;
            return Ok(("ExtOk", us_signed(d.local), tok));
        }
        (OpF::Extend, Phase::Fail) => "ExtFail",
        (OpF::Extend, Phase::Info) => {
            return Err(err(
                at.field("phase"),
                "a renewal with an unknown outcome (the client retries it): not in the specifications yet",
            ))
        }
    };
    Ok((kind, -1, tok))
}

/// What the module and the configuration are written from.
struct Output<'a> {
    sc: &'a Scenario,
    spec: Spec,
    /// Events in the trace.
    events: usize,
    recs: &'a [Rec],
    /// True time of the last event, µs.
    last_t: u64,
    lossy: &'a BTreeSet<(String, String)>,
    settings: &'a Settings,
}

impl Output<'_> {
    /// The text of `<module_name>.tla`.
    fn module(&self, source: &str, module_name: &str) -> String {
        let (sc, spec, recs) = (self.sc, self.spec, self.recs);
        let cluster = &sc.cluster;
        let mut m = String::new();
        let rule = "-".repeat(20);
        let _ = writeln!(m, "{rule} MODULE {module_name} {rule}");
        let _ = writeln!(
            m,
            "(* Generated by `locksim export-tla` from {}:\n   {} seed {}, {} events as {} steps for {}.\n   Check: java -DTLA-Library=<locksim>/tla -cp tla2tools.jar tlc2.TLC -deadlock -workers 1 -config {module_name}.cfg {module_name}.tla\n   TLC exit 12 (TraceNotAccepted violated) = the trace is a behaviour of the spec; exit 0 = it is not. *)",
            source.replace("*)", "* )"),
            sc.algorithm,
            sc.seed,
            self.events,
            recs.len(),
            spec.module()
        );
        let _ = writeln!(m, "EXTENDS {}\n", spec.module());
        if spec == Spec::Redlock {
            let masters: Vec<String> = cluster
                .server_ids()
                .map(|s| format!("\"{}\"", cluster.name(s)))
                .collect();
            let _ = writeln!(m, "TraceMasters == <<{}>>\n", masters.join(", "));
            let pairs: Vec<String> = self
                .lossy
                .iter()
                .map(|(c, s)| format!("<<\"{c}\", \"{s}\">>"))
                .collect();
            let _ = writeln!(
                m,
                "\\* Client-master pairs a network fault of the run cut: their messages may be lost.\nTraceLossy == {{{}}}\n",
                pairs.join(", ")
            );
        }
        let _ = writeln!(m, "TraceLog == <<");
        for (i, r) in recs.iter().enumerate() {
            let sep = if i + 1 == recs.len() { "" } else { "," };
            let _ = writeln!(
                m,
                "  [id |-> {}, k |-> \"{}\", n |-> \"{}\", c |-> \"{}\", t |-> {}, v |-> {}, tok |-> {}]{sep}",
                r.id, r.k, r.n, r.c, r.t, r.v, r.tok
            );
        }
        let _ = writeln!(m, ">>\n{}", "=".repeat(60));
        m
    }

    /// The text of the TLC configuration: the constants (times in µs), `TraceInit`,
    /// `TraceNext` and the invariant `TraceNotAccepted`.
    fn cfg(&self, source: &str) -> String {
        let (sc, spec, st) = (self.sc, self.spec, self.settings);
        let cluster = &sc.cluster;
        let w = &sc.workload;
        let set = |ids: std::ops::Range<u32>| {
            let v: Vec<String> = ids.map(|i| format!("\"{}\"", cluster.name(i))).collect();
            format!("{{{}}}", v.join(", "))
        };
        let ttl = us(w.ttl);
        let drift = us(locksim_algos::lockserver::drift_allowance(
            w.ttl,
            st.drift_ppm,
        ));
        let max_time = self.last_t + 1;
        let b = |x: bool| if x { "TRUE" } else { "FALSE" };
        let mut c = String::new();
        let _ = writeln!(
            c,
            "\\* Generated by `locksim export-tla` from {source}: validate the trace against {}.",
            spec.module()
        );
        let _ = writeln!(c, "INIT TraceInit\nNEXT TraceNext\nCONSTANTS");
        let mut consts: Vec<(String, String)> = vec![
            ("Trace <-".into(), "TraceLog".into()),
            ("Clients =".into(), set(cluster.client_ids())),
            ("Servers =".into(), set(cluster.server_ids())),
            ("TTL =".into(), ttl.to_string()),
            ("Drift =".into(), drift.to_string()),
            ("WorkMin =".into(), us(w.work_min).to_string()),
            ("WorkMax =".into(), us(w.work_max).to_string()),
            ("MaxDelay =".into(), max_time.to_string()),
            ("ClientWall =".into(), b(st.client_wall).into()),
            ("ServerWall =".into(), b(st.server_wall).into()),
            ("Pauses =".into(), "TRUE".into()),
            ("Steps =".into(), "TRUE".into()),
            ("StepSizes =".into(), "{}".into()),
            ("Crashes =".into(), "TRUE".into()),
            ("Fsync =".into(), b(st.fsync).into()),
            (
                "Fencing =".into(),
                b(sc.algorithm == "central-fencing").into(),
            ),
            ("MaxFaults =".into(), "1000000".into()),
            ("MaxTime =".into(), max_time.to_string()),
            ("OwnerIds =".into(), "1000000".into()),
        ];
        if spec == Spec::Central {
            consts.push(("Renew =".into(), b(w.renew_every.is_some()).into()));
        }
        if spec == Spec::Redlock {
            consts.push(("MasterOrder <-".into(), "TraceMasters".into()));
            // Messages are lost only between the pairs a network fault cut (or to a crashed
            // master).
            consts.push(("LossyPairs <-".into(), "TraceLossy".into()));
        }
        for (k, v) in consts {
            let _ = writeln!(c, "    {k} {v}");
        }
        let _ = writeln!(c, "INVARIANT TraceNotAccepted");
        c
    }
}
