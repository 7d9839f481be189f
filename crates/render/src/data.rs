//! The page's data: what the script draws, as compact JSON rows (arrays, not objects, so a
//! 100,000-event run stays a few megabytes). Every time is true time in nanoseconds.

use std::collections::BTreeMap;

use locksim_check::holds::{derive_holds_in, Hold, HoldEnd};
use locksim_check::metrics::{quantile, Metrics};
use locksim_core::history::{EventKind, History, Message, OpF, Phase};
use locksim_core::time::fmt_nanos;
use locksim_core::{Cluster, Event, Fault, Nanos, NodeId, Role, Violation};
use serde::Serialize;

use crate::describe;
use crate::explain::explain;
use crate::Run;

/// One lane of the diagram: a node.
#[derive(Debug, Serialize)]
pub struct Lane {
    /// Node id.
    pub node: NodeId,
    /// Its name (`c1`, `n2`, `res`).
    pub name: String,
    /// `client`, `server` or `resource`.
    pub role: &'static str,
}

/// A violation as the page shows it.
#[derive(Debug, Serialize)]
pub struct ViolationRow {
    /// `S1`, `S2`, `S3`.
    pub kind: String,
    /// Lock key.
    pub key: u32,
    /// The checker's one-line summary.
    pub summary: String,
    /// The plain-words explanation.
    pub text: String,
    /// The overlap window (S1), ns.
    pub window: Option<(Nanos, Nanos)>,
    /// The time range to zoom to, ns.
    pub focus: (Nanos, Nanos),
    /// The witnessing events: `[id, node, time, description]`.
    pub witnesses: Vec<(u64, NodeId, Nanos, String)>,
    /// The stale accepted write (S2): its event id.
    pub stale: Option<u64>,
}

/// A point event: `[node, time, kind, label, event id, client|null]`.
pub type MarkRow = (NodeId, Nanos, &'static str, String, u64, Option<NodeId>);
/// A fault: `[kind, start, end, nodes, other side, label]`.
pub type FaultRow = (&'static str, Nanos, Nanos, Vec<NodeId>, Vec<NodeId>, String);
/// A hold: `[client, key, start, end, handle, token|null, ended_by, deadline|null, ok id]`.
pub type HoldRow = (
    NodeId,
    u32,
    Nanos,
    Nanos,
    u64,
    Option<u64>,
    &'static str,
    Option<Nanos>,
    u64,
);

/// Everything the page's script draws.
#[derive(Debug, Serialize)]
pub struct PageData {
    /// One line about the scenario.
    pub subtitle: String,
    /// True time at which the run ended, ns.
    pub end: Nanos,
    /// The lease TTL clients ask for, ns.
    pub ttl: Nanos,
    /// Number of events in the history.
    pub events: usize,
    /// Lanes, top to bottom: clients, servers, the resource.
    pub lanes: Vec<Lane>,
    /// Holds: `[client, key, start, end, handle, token|null, ended_by, deadline|null,
    /// acquire ok event id]`.
    pub holds: Vec<HoldRow>,
    /// Acquire attempts: `[client, key, invoke, completion, outcome]` with outcome
    /// `ok`/`fail`/`info` (`info` also for attempts that never completed).
    pub attempts: Vec<(NodeId, u32, Nanos, Nanos, &'static str)>,
    /// Point events: `[node, time, kind, label, event id, client|null]`, kind one of `write`,
    /// `release`, `extend`, `lost`, `grant`, `accepted`, `rejected`; the client is the one
    /// granted (grants) or writing (accepted and rejected writes).
    pub marks: Vec<MarkRow>,
    /// Faults: `[kind, start, end, nodes, other side, label]` (the other side is the second
    /// node set of partitions and link faults; both sides are shaded).
    pub faults: Vec<FaultRow>,
    /// Clock offsets (wall clock minus true time) of nodes whose clock ever left true time:
    /// `[node, [[time, offset ns], …]]`, sampled at the node's events.
    pub clocks: Vec<(NodeId, Vec<(Nanos, i64)>)>,
    /// Messages: `[from, to, sent, delivered|null, flags]`, flags 1 = reply, 2 = dropped.
    pub msgs: Vec<(NodeId, NodeId, Nanos, Option<Nanos>, u8)>,
    /// The violations.
    pub violations: Vec<ViolationRow>,
    /// The run's lock metrics as `[label, value]` lines.
    pub metrics: Vec<(String, String)>,
    /// Why the lock operations are not linearizable (S3), per failing key: drawn by the S3
    /// section ([`crate::linear`]). Absent when S3 holds.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub linear: Vec<locksim_check::linear::explain::Explanation>,
}

fn ended(e: HoldEnd) -> &'static str {
    match e {
        HoldEnd::Release(_) => "released",
        HoldEnd::Deadline(_) => "its lease ran out",
        HoldEnd::Lost(_) => "gave up",
        HoldEnd::Crash(_) => "crashed",
        HoldEnd::RunEnd => "run ended",
        HoldEnd::LateWrite(_) => "last wrote (after its lease)",
    }
}

fn role(r: Role) -> &'static str {
    match r {
        Role::Client => "client",
        Role::Server => "server",
        Role::Resource => "resource",
    }
}

fn fault_row(
    e: &Event,
    heals: &[Nanos],
    drifts: &BTreeMap<NodeId, Vec<Nanos>>,
    end: Nanos,
    run: &Run,
) -> FaultRow {
    let EventKind::Fault { fault } = &e.kind else {
        unreachable!("called on fault events")
    };
    let t = e.time;
    // Network faults end at their duration or at the next heal, whichever comes first.
    let net = |d: Nanos| {
        let healed = heals.iter().copied().find(|&h| h > t).unwrap_or(end);
        t.saturating_add(d).min(healed).min(end)
    };
    let label = fault.describe(&run.scenario.cluster);
    match fault {
        Fault::Partition { a, b, duration, .. } => {
            ("partition", t, net(*duration), a.clone(), b.clone(), label)
        }
        Fault::PartitionOneway {
            from, to, duration, ..
        } => (
            "partition",
            t,
            net(*duration),
            from.clone(),
            to.clone(),
            label,
        ),
        Fault::Isolate { node, duration, .. } => {
            ("partition", t, net(*duration), vec![*node], vec![], label)
        }
        Fault::Heal => ("heal", t, t, vec![], vec![], label),
        // Recorded only when no server led: nothing was isolated.
        Fault::IsolateLeader { .. } => ("heal", t, t, vec![], vec![], label),
        Fault::Loss {
            from, to, duration, ..
        } => ("loss", t, net(*duration), from.clone(), to.clone(), label),
        Fault::Delay {
            from, to, duration, ..
        } => ("delay", t, net(*duration), from.clone(), to.clone(), label),
        Fault::Duplicate {
            from, to, duration, ..
        } => (
            "duplicate",
            t,
            net(*duration),
            from.clone(),
            to.clone(),
            label,
        ),
        Fault::DropReplies {
            clients,
            servers,
            duration,
        } => (
            "drop_replies",
            t,
            net(*duration),
            servers.clone(),
            clients.clone(),
            label,
        ),
        Fault::Pause { node, duration, .. } => (
            "pause",
            t,
            t.saturating_add(*duration).min(end),
            vec![*node],
            vec![],
            label,
        ),
        Fault::Crash {
            node,
            restart_after,
        } => (
            "crash",
            t,
            restart_after.map_or(end, |r| t.saturating_add(r).min(end)),
            vec![*node],
            vec![],
            label,
        ),
        Fault::ClockStep { node, .. } => ("clock_step", t, t, vec![*node], vec![], label),
        Fault::ClockDrift { node, ppm } => {
            let next = drifts
                .get(node)
                .and_then(|v| v.iter().copied().find(|&d| d > t))
                .unwrap_or(end);
            let kind = if *ppm == 0 {
                "drift_end"
            } else {
                "clock_drift"
            };
            (kind, t, next, vec![*node], vec![], label)
        }
    }
}

/// Keeps the samples where the offset moved by more than a small part of its range, plus the
/// first and the last: a step stays a step, a drift stays a slope.
fn thin(samples: Vec<(Nanos, i64)>) -> Vec<(Nanos, i64)> {
    let (lo, hi) = samples
        .iter()
        .fold((i64::MAX, i64::MIN), |(l, h), s| (l.min(s.1), h.max(s.1)));
    let step = ((hi.saturating_sub(lo)) / 400).max(10_000);
    let mut out: Vec<(Nanos, i64)> = Vec::new();
    for (i, s) in samples.iter().enumerate() {
        let keep = match out.last() {
            None => true,
            Some(l) => (s.1 - l.1).abs() >= step || i + 1 == samples.len(),
        };
        if keep {
            // Keep the sample before a jump too, so a step is drawn as a step.
            if let (Some(l), true) = (out.last(), i > 0) {
                let prev = samples[i - 1];
                if prev.0 != l.0 && (s.1 - prev.1).abs() >= step {
                    out.push(prev);
                }
            }
            out.push(*s);
        }
    }
    out
}

fn dur(ns: Option<Nanos>) -> String {
    ns.map_or("-".to_string(), |n| fmt_nanos(n as i128))
}

fn metrics(run: &Run) -> Vec<(String, String)> {
    let full = Metrics::of(run.history);
    let m = &full.counts;
    let pq = |v: &[Nanos]| {
        format!(
            "{} / {} (of {})",
            dur(quantile(v, 0.5)),
            dur(quantile(v, 0.99)),
            v.len()
        )
    };
    vec![
        (
            "acquire attempts".into(),
            format!(
                "{} ({} granted, {} failed, {} unknown; {} retries)",
                m.acquires, m.acquires_ok, m.acquires_failed, m.acquires_unknown, m.retries
            ),
        ),
        (
            "acquire latency p50 / p99".into(),
            pq(&full.acquire_latency),
        ),
        ("wait for the lock p50 / p99".into(), pq(&full.wait)),
        ("hold time p50 / p99".into(), pq(&full.hold)),
        (
            "leases expired while the holder still acted".into(),
            m.expired_while_held.to_string(),
        ),
        (
            "messages sent / dropped".into(),
            format!("{} / {}", m.messages_sent, m.messages_dropped),
        ),
    ]
}

/// The first problem of an event that does not fit the scenario's cluster (a node that is not
/// in it, or a fault that fails [`Fault::validate`]), if any: such events are not drawn.
pub fn event_problem(s: &locksim_core::Scenario, e: &Event) -> Option<String> {
    let n = s.cluster.nodes();
    if e.node >= n {
        return Some(format!(
            "`node`: node {} is not in a cluster of {n} nodes",
            e.node
        ));
    }
    match &e.kind {
        EventKind::Grant { client, .. } | EventKind::Freed { client, .. } if *client >= n => Some(
            format!("`client`: node {client} is not in a cluster of {n} nodes"),
        ),
        EventKind::Fault { fault } => fault
            .validate(&s.cluster)
            .err()
            .map(|e| format!("`fault`: {e}")),
        _ => None,
    }
}

/// Builds the page's data from a run. Events that do not fit the scenario's cluster (see
/// [`event_problem`]) are left out.
pub fn page_data(run: &Run) -> PageData {
    let s = run.scenario;
    let clean = fitting_history(run);
    let h = clean.as_ref().unwrap_or(run.history);
    let run = &Run {
        scenario: s,
        history: h,
        verdict: run.verdict,
        title: String::new(),
        notes: Vec::new(),
        record: run.record,
        session: run.session,
    };
    let c = &s.cluster;
    let end = h.end.max(h.events.last().map_or(0, |e| e.time));
    let holds_v = derive_holds_in(h, Some(c));
    let scan = Scan::of(h, c, &holds_v, end);
    let faults = h
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Fault { .. }))
        .map(|e| fault_row(e, &scan.heals, &scan.drifts, end, run))
        .collect();
    let clocks = scan
        .offsets
        .into_iter()
        .filter(|(_, v)| v.iter().any(|s| s.1 != 0))
        .map(|(n, v)| (n, thin(v)))
        .collect();
    PageData {
        subtitle: subtitle(run),
        end,
        ttl: s.workload.ttl,
        events: h.events.len(),
        lanes: lanes(c),
        holds: holds_v.iter().map(hold_row).collect(),
        attempts: scan.attempts,
        marks: scan.marks,
        faults,
        clocks,
        msgs: h.messages.iter().map(msg_row).collect(),
        violations: run
            .verdict
            .violations
            .iter()
            .map(|x| violation_row(run, &holds_v, end, x))
            .collect(),
        metrics: metrics(run),
        linear: Vec::new(),
    }
}

/// The run's history without the events that do not fit its scenario ([`event_problem`]), or
/// `None` when every event fits (the history is drawn as it is).
fn fitting_history(run: &Run) -> Option<History> {
    let s = run.scenario;
    if !run
        .history
        .events
        .iter()
        .any(|e| event_problem(s, e).is_some())
    {
        return None;
    }
    Some(History {
        events: run
            .history
            .events
            .iter()
            .filter(|e| event_problem(s, e).is_none())
            .cloned()
            .collect(),
        ..run.history.clone()
    })
}

/// The lanes, top to bottom: the clients, the servers, the resource.
fn lanes(c: &Cluster) -> Vec<Lane> {
    c.client_ids()
        .chain(c.server_ids())
        .chain(std::iter::once(c.resource_id()))
        .map(|n| Lane {
            node: n,
            name: c.name(n),
            role: role(c.role(n)),
        })
        .collect()
}

fn hold_row(x: &Hold) -> HoldRow {
    (
        x.client,
        x.key,
        x.start,
        x.end,
        x.handle,
        x.token,
        ended(x.ended_by),
        x.deadline,
        x.acquired,
    )
}

/// A message as `[from, to, sent, delivered|null, flags]` (flags 1 = reply, 2 = dropped).
fn msg_row(m: &Message) -> (NodeId, NodeId, Nanos, Option<Nanos>, u8) {
    (
        m.from,
        m.to,
        m.sent,
        m.delivered,
        m.reply as u8 | (m.dropped as u8) << 1,
    )
}

/// What one pass over the events gathers.
struct Scan {
    /// Acquire attempts, in invoke order (then client).
    attempts: Vec<(NodeId, u32, Nanos, Nanos, &'static str)>,
    /// Point events, in event order.
    marks: Vec<MarkRow>,
    /// Times of `heal` faults, ns.
    heals: Vec<Nanos>,
    /// Times of clock drift changes, per node, ns.
    drifts: BTreeMap<NodeId, Vec<Nanos>>,
    /// Clock offsets (wall minus true time, ns) at each node's events.
    offsets: BTreeMap<NodeId, Vec<(Nanos, i64)>>,
}

impl Scan {
    /// Scans `h`'s events; `end` (ns) ends the attempts that never completed.
    fn of(h: &History, c: &Cluster, holds: &[Hold], end: Nanos) -> Scan {
        let handle_client: BTreeMap<u64, NodeId> =
            holds.iter().map(|x| (x.handle, x.client)).collect();
        let mut attempts = Vec::new();
        let mut open: BTreeMap<u64, (NodeId, u32, Nanos)> = BTreeMap::new();
        let mut marks = Vec::new();
        let mut heals = Vec::new();
        let mut drifts: BTreeMap<NodeId, Vec<Nanos>> = BTreeMap::new();
        let mut offsets: BTreeMap<NodeId, Vec<(Nanos, i64)>> = BTreeMap::new();
        for e in &h.events {
            offsets
                .entry(e.node)
                .or_default()
                .push((e.time, e.wall.saturating_sub(e.time as i64)));
            match &e.kind {
                EventKind::Op {
                    op,
                    phase,
                    f: OpF::Acquire,
                    key,
                    ..
                } => match phase {
                    Phase::Invoke => {
                        open.insert(*op, (e.node, *key, e.time));
                    }
                    p => {
                        if let Some((n, k, t)) = open.remove(op) {
                            let o = match p {
                                Phase::Ok => "ok",
                                Phase::Fail => "fail",
                                _ => "info",
                            };
                            attempts.push((n, k, t, e.time, o));
                        }
                    }
                },
                EventKind::Fault { fault } => match fault {
                    Fault::Heal => heals.push(e.time),
                    Fault::ClockDrift { node, .. } => drifts.entry(*node).or_default().push(e.time),
                    _ => {}
                },
                _ => {}
            }
            if let Some((kind, label, client)) = mark(e, c, &handle_client) {
                marks.push((e.node, e.time, kind, label, e.id, client));
            }
        }
        for (_, (n, k, t)) in open {
            attempts.push((n, k, t, end, "info"));
        }
        attempts.sort_by_key(|a| (a.2, a.0));
        Scan {
            attempts,
            marks,
            heals,
            drifts,
            offsets,
        }
    }
}

/// ` h<handle> t<token>`, each part when known.
fn handle_token(handle: &Option<u64>, token: &Option<u64>) -> String {
    let mut l = String::new();
    if let Some(x) = handle {
        l += &format!(" h{x}");
    }
    if let Some(t) = token {
        l += &format!(" t{t}");
    }
    l
}

/// The point mark of an event, if it has one: `(kind, label, client)` (see
/// [`PageData::marks`]); `handle_client` gives the client of each handle.
fn mark(
    e: &Event,
    c: &Cluster,
    handle_client: &BTreeMap<u64, NodeId>,
) -> Option<(&'static str, String, Option<NodeId>)> {
    let writer = |handle: &u64| {
        handle_client
            .get(handle)
            .map_or("?".to_string(), |&n| c.name(n))
    };
    Some(match &e.kind {
        EventKind::Op {
            phase,
            f,
            key,
            handle,
            token,
            ..
        } => {
            let (kind, what) = match (f, phase) {
                (OpF::Write, Phase::Invoke) => ("write", "write"),
                (OpF::Release, Phase::Invoke) => ("release", "release"),
                (OpF::Extend, Phase::Ok) => ("extend", "renewed"),
                _ => return None,
            };
            let label = format!("{what} k{key}{}", handle_token(handle, token));
            (kind, label, None)
        }
        EventKind::Lost {
            key,
            handle,
            reason,
        } => ("lost", format!("gives up k{key} h{handle}: {reason}"), None),
        EventKind::Grant { key, client, token } => (
            "grant",
            format!(
                "grants k{key} to {}{}",
                c.name(*client),
                token.map_or(String::new(), |t| format!(" (token {t})"))
            ),
            Some(*client),
        ),
        EventKind::Freed {
            key,
            client,
            holder,
            freed,
            released,
        } => (
            if freed == released {
                "freed"
            } else {
                "freed_other"
            },
            freed_label(c, *key, *client, *holder, *freed, *released),
            Some(*client),
        ),
        EventKind::WriteAccepted { key, handle, token } => (
            "accepted",
            format!(
                "accepts {}'s write to k{key}{}",
                writer(handle),
                handle_token(&Some(*handle), token)
            ),
            handle_client.get(handle).copied(),
        ),
        EventKind::WriteRejected {
            key,
            handle,
            token,
            highest,
        } => (
            "rejected",
            format!(
                "rejects {}'s write to k{key} h{handle}: token {token} < {highest}",
                writer(handle)
            ),
            handle_client.get(handle).copied(),
        ),
        EventKind::Fault { .. }
        | EventKind::FaultEnd { .. }
        | EventKind::Leader { .. }
        | EventKind::Replicated { .. }
        | EventKind::Touched { .. } => return None,
    })
}

/// The label of a `freed` event: `client`'s release (naming token `released`) freed `key`'s
/// grant with token `freed`, held by `holder` when the server knows it.
fn freed_label(
    c: &Cluster,
    key: u32,
    client: NodeId,
    holder: Option<NodeId>,
    freed: u64,
    released: u64,
) -> String {
    match holder {
        Some(_) if freed == released => format!("frees k{key} for {}", c.name(client)),
        Some(h) => format!(
            "frees k{key}, granted to {}, for {}'s release of another grant (S4)",
            c.name(h),
            c.name(client)
        ),
        None if freed == released => {
            format!("frees k{key} token {freed} for {}", c.name(client))
        }
        None => format!(
            "frees k{key} token {freed} for {}, whose release named token {released} (S4)",
            c.name(client)
        ),
    }
}

/// A violation as the page shows it: its witnesses, its explanation, and the time range to
/// zoom to (the witnesses and the window, padded by an eighth or at least 20 ms, within
/// `0..=end`, ns).
fn violation_row(run: &Run, holds: &[Hold], end: Nanos, x: &Violation) -> ViolationRow {
    let (s, h) = (run.scenario, run.history);
    let witnesses: Vec<(u64, NodeId, Nanos, String)> = x
        .events
        .iter()
        .filter_map(|&id| h.events.get(id as usize))
        .map(|e| (e.id, e.node, e.time, describe::event_line(&s.cluster, e)))
        .collect();
    let (lo, hi) = witnesses
        .iter()
        .fold((end, 0), |(l, hi), w| (l.min(w.2), hi.max(w.2)));
    let (lo, hi) = match x.window {
        Some((a, b)) => (lo.min(a), hi.max(b)),
        None => (lo.min(hi), hi),
    };
    let pad = (hi.saturating_sub(lo) / 8).max(20_000_000);
    let stale = (x.kind == locksim_core::Property::S2)
        .then(|| x.events.first().copied())
        .flatten();
    ViolationRow {
        kind: x.kind.to_string(),
        key: x.key,
        summary: x.summary.clone(),
        text: explain(s, h, holds, x, run.record, run.session),
        window: x.window,
        focus: (lo.saturating_sub(pad), (hi + pad).min(end)),
        witnesses,
        stale,
    }
}

/// One line about the scenario and the run: algorithm, seed, cluster, TTL, workload duration,
/// faults, events and verdict.
fn subtitle(run: &Run) -> String {
    let (s, h) = (run.scenario, run.history);
    let c = &s.cluster;
    let faults_line = if s.faults.is_empty() {
        "no faults".to_string()
    } else {
        locksim_core::text::plural(s.faults.len() as u64, "fault")
    };
    format!(
        "{} seed {} — {}, {}, TTL {}, {} of workload, {}; {} events; verdict: {}",
        s.algorithm,
        s.seed,
        locksim_core::text::plural(c.servers as u64, "server"),
        locksim_core::text::plural(c.clients as u64, "client"),
        fmt_nanos(s.workload.ttl as i128),
        fmt_nanos(s.workload.duration as i128),
        faults_line,
        h.events.len(),
        verdict_word(run.verdict, h)
    )
}

/// The run's verdict as the page's subtitle says it: `safe` only for a decided clean run in
/// which someone held the lock; else `UNDECIDED …`, `nothing exercised …` or `VIOLATED …`.
pub(crate) fn verdict_word(v: &locksim_core::Verdict, h: &locksim_core::History) -> String {
    let grants = h
        .events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::Op {
                    f: OpF::Acquire,
                    phase: Phase::Ok,
                    ..
                }
            )
        })
        .count();
    // As the text timeline says it (issue #24, item 6): a clean run is only "safe" when it
    // was decided and someone held the lock.
    if v.is_safe() && !v.inconclusive.is_empty() {
        "UNDECIDED (a check ran out of its budget)".to_string()
    } else if v.is_safe() && grants == 0 {
        "nothing exercised (no client was granted the lock: proves nothing)".to_string()
    } else if v.is_safe() {
        "safe".to_string()
    } else {
        let k: Vec<String> = v.kinds().iter().map(|k| k.to_string()).collect();
        format!("VIOLATED {}", k.join(", "))
    }
}
