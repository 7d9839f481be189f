//! Hold intervals (docs/design.md §6).
//!
//! A hold starts at the acquire `ok`. It ends at the *later* of
//! (a) the earliest of: the release invoke, the client's validity deadline in true time
//!     (extended by renewals that succeeded before it passed), the moment the client learned or
//!     decided the lock was lost, the client's crash, the end of the run; and
//! (b) the invoke of the last resource write performed under the grant.
//!
//! So a client that checks validity, is paused past its deadline, then writes, holds until that
//! write: the GC-pause double grant shows up as an overlap.
//!
//! Each hold is also linked to the service's record of its grant (docs/design.md §7, S2's order): the
//! `grant` events the lock servers recorded when they decided. See [`Hold::granted`].

use std::collections::BTreeMap;

use locksim_core::history::{Event, EventKind, OpF, Phase};
use locksim_core::{Cluster, Fault, History, Nanos, NodeId};

/// What ended a hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldEnd {
    /// The client invoked release (event id).
    Release(u64),
    /// The validity deadline passed (id of the acquire or extend `ok` that set it).
    Deadline(u64),
    /// The client learned or decided it lost the lock (event id).
    Lost(u64),
    /// The client crashed (fault event id).
    Crash(u64),
    /// The run ended with the grant still held.
    RunEnd,
    /// A resource write invoked after the other ends (event id): the client acted late.
    LateWrite(u64),
}

impl HoldEnd {
    /// The event id behind this end, if any.
    pub fn event(&self) -> Option<u64> {
        match *self {
            HoldEnd::Release(e)
            | HoldEnd::Deadline(e)
            | HoldEnd::Lost(e)
            | HoldEnd::Crash(e)
            | HoldEnd::LateWrite(e) => Some(e),
            HoldEnd::RunEnd => None,
        }
    }
}

/// One client's hold of one grant, in true time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    /// The lock handle of the grant.
    pub handle: u64,
    /// The lock key.
    pub key: u32,
    /// The client node.
    pub client: NodeId,
    /// Fencing token, if the algorithm gave one.
    pub token: Option<u64>,
    /// Id of the acquire `ok` event.
    pub acquired: u64,
    /// True time the hold started (the acquire `ok`), ns.
    pub start: Nanos,
    /// True time the service decided this grant, ns: the service-side `grant` record linked to
    /// this acquire (for a majority protocol, the moment the majority was reached), or `start`
    /// when the history holds no such record (see [`derive_holds_in`]). S2 orders grants by it.
    pub granted: Nanos,
    /// Id of the `grant` event that decided the grant (the one `granted` is read from);
    /// `None` when `granted` fell back to the acquire `ok`.
    pub granted_by: Option<u64>,
    /// True time the hold ended, ns (exclusive).
    pub end: Nanos,
    /// Why it ended when it did.
    pub ended_by: HoldEnd,
    /// The lease's end as the client computed it, in true time, ns (its validity deadline,
    /// moved by renewals that succeeded before it passed); `None` when the client had no
    /// deadline (a renewing client, or an algorithm without one).
    pub deadline: Option<Nanos>,
}

#[derive(Default)]
struct Acc<'a> {
    ok: Option<&'a Event>,
    /// True time of the acquire's invoke (the start of the window its grant records lie in).
    invoked: Option<Nanos>,
    key: u32,
    token: Option<u64>,
    extends: Vec<&'a Event>,
    release: Option<&'a Event>,
    lost: Option<&'a Event>,
    last_write: Option<&'a Event>,
}

/// One service-side `grant` record: (true time, recording node, token, event id).
type GrantRecord = (Nanos, NodeId, Option<u64>, u64);

/// Derives every hold of the history, sorted by (key, start, handle), with the service's
/// grant records linked for a service of as many nodes as recorded grants (use
/// [`derive_holds_in`] when the cluster is known).
pub fn derive_holds(history: &History) -> Vec<Hold> {
    derive_holds_in(history, None)
}

/// The number of service-side `grant` records that make one grant: a majority of the lock
/// servers (`servers / 2 + 1`), for Redlock-style services where each master records its own
/// grant. Without a cluster, the servers are the nodes that recorded any grant.
fn grant_quorum(history: &History, cluster: Option<&Cluster>) -> usize {
    let servers = match cluster {
        Some(c) => c.servers as usize,
        None => history
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Grant { .. }))
            .map(|e| e.node)
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
    };
    servers / 2 + 1
}

/// When the service decided the grant of an acquire invoked at `invoked` and answered `ok` at
/// `ok`, from the service's `grant` records of (client, key), sorted by time: `(time, id)`.
///
/// A record belongs to this acquire when it lies in the acquire's window (invoke ..= ok: a
/// client runs one operation at a time, so the windows of its acquires never overlap) and,
/// when both carry a fencing token, the tokens are equal. Delayed duplicates of an earlier
/// request of the same client can still add records inside the window: with tokens they are
/// told apart by the token; without, the first record of each node counts, which is the
/// earliest the service could have decided.
///
/// The decision is the `quorum`-th of those records from distinct nodes (a Redlock majority);
/// a service whose decision is recorded by fewer nodes (a Raft leader records its grant alone,
/// a single server, one member of an AP lock) decided at its last record. With no record at
/// all (a custom algorithm that records none, or a history from elsewhere), `None`: the
/// caller falls back to the acquire `ok`, the order the clients heard.
fn decided(
    records: &[GrantRecord],
    invoked: Nanos,
    ok: Nanos,
    token: Option<u64>,
    quorum: usize,
) -> Option<(Nanos, u64)> {
    let from = records.partition_point(|r| r.0 < invoked);
    let mut nodes: Vec<NodeId> = Vec::new();
    let mut last = None;
    for &(time, node, t, id) in records[from..].iter().take_while(|r| r.0 <= ok) {
        if matches!((token, t), (Some(a), Some(b)) if a != b) || nodes.contains(&node) {
            continue;
        }
        nodes.push(node);
        last = Some((time, id));
        if nodes.len() >= quorum {
            break;
        }
    }
    last
}

/// Derives every hold of the history, sorted by (key, start, handle); `cluster` gives the
/// number of lock servers whose majority makes a grant (see [`Hold::granted`]).
pub fn derive_holds_in(history: &History, cluster: Option<&Cluster>) -> Vec<Hold> {
    let quorum = grant_quorum(history, cluster);
    let mut by_handle: BTreeMap<u64, Acc> = BTreeMap::new();
    let mut crashes: BTreeMap<NodeId, Vec<&Event>> = BTreeMap::new();
    let mut invokes: BTreeMap<u64, Nanos> = BTreeMap::new();
    let mut grants: BTreeMap<(NodeId, u32), Vec<GrantRecord>> = BTreeMap::new();
    for e in &history.events {
        match &e.kind {
            EventKind::Op {
                op,
                phase: Phase::Invoke,
                f: OpF::Acquire,
                ..
            } => {
                invokes.insert(*op, e.time);
            }
            EventKind::Grant { key, client, token } => {
                grants
                    .entry((*client, *key))
                    .or_default()
                    .push((e.time, e.node, *token, e.id));
            }
            EventKind::Op {
                phase,
                f,
                key,
                handle: Some(h),
                token,
                ..
            } => {
                let acc = by_handle.entry(*h).or_default();
                match (f, phase) {
                    (OpF::Acquire, Phase::Ok) => {
                        acc.ok = Some(e);
                        let EventKind::Op { op, .. } = e.kind else {
                            unreachable!("matched an op")
                        };
                        acc.invoked = invokes.get(&op).copied();
                        acc.key = *key;
                        acc.token = *token;
                    }
                    (OpF::Extend, Phase::Ok) => acc.extends.push(e),
                    (OpF::Release, Phase::Invoke) => {
                        acc.release.get_or_insert(e);
                    }
                    (OpF::Write, Phase::Invoke) => acc.last_write = Some(e),
                    _ => {}
                }
            }
            EventKind::Lost { handle, .. } => {
                by_handle.entry(*handle).or_default().lost.get_or_insert(e);
            }
            EventKind::Fault {
                fault: Fault::Crash { node, .. },
            } => {
                crashes.entry(*node).or_default().push(e);
            }
            _ => {}
        }
    }
    for records in grants.values_mut() {
        records.sort();
    }
    let mut holds = Vec::with_capacity(by_handle.len());
    for (handle, acc) in by_handle {
        let Some(ok) = acc.ok else { continue };
        let deadline_of = |e: &Event| match &e.kind {
            EventKind::Op { deadline, .. } => deadline.map(|d| d.at),
            _ => None,
        };
        // (a): earliest of the ways the client stops believing it holds.
        let mut end: (Nanos, HoldEnd) = (history.end.max(ok.time), HoldEnd::RunEnd);
        let mut lease_end = None;
        let mut consider = |t: Nanos, why: HoldEnd| {
            if t < end.0 {
                end = (t, why);
            }
        };
        if let Some(mut d) = deadline_of(ok) {
            let mut set_by = ok.id;
            let mut unbounded = false;
            for ext in &acc.extends {
                if ext.time <= d {
                    match deadline_of(ext) {
                        Some(nd) if nd > d => {
                            d = nd;
                            set_by = ext.id;
                        }
                        Some(_) => {}
                        None => unbounded = true,
                    }
                }
            }
            if !unbounded {
                lease_end = Some(d.max(ok.time));
                consider(d.max(ok.time), HoldEnd::Deadline(set_by));
            }
        }
        if let Some(r) = acc.release {
            consider(r.time, HoldEnd::Release(r.id));
        }
        if let Some(l) = acc.lost {
            consider(l.time, HoldEnd::Lost(l.id));
        }
        if let Some(c) = crashes
            .get(&ok.node)
            .and_then(|v| v.iter().find(|c| c.time >= ok.time))
        {
            consider(c.time, HoldEnd::Crash(c.id));
        }
        // (b): a write invoked later still counts as holding.
        if let Some(w) = acc.last_write {
            if w.time > end.0 {
                end = (w.time, HoldEnd::LateWrite(w.id));
            }
        }
        // Without the acquire's invoke (a history recorded elsewhere) the window is unknown:
        // no record is linked and the hold falls back to its `ok`.
        let service = acc.invoked.and_then(|invoked| {
            let records = grants.get(&(ok.node, acc.key))?;
            decided(records, invoked, ok.time, acc.token, quorum)
        });
        holds.push(Hold {
            handle,
            key: acc.key,
            client: ok.node,
            token: acc.token,
            acquired: ok.id,
            start: ok.time,
            granted: service.map_or(ok.time, |s| s.0),
            granted_by: service.map(|s| s.1),
            end: end.0,
            ended_by: end.1,
            deadline: lease_end,
        });
    }
    holds.sort_by_key(|h| (h.key, h.start, h.handle));
    holds
}
