//! Hold intervals (DESIGN §6).
//!
//! A hold starts at the acquire `ok`. It ends at the *later* of
//! (a) the earliest of: the release invoke, the client's validity deadline in true time
//!     (extended by renewals that succeeded before it passed), the moment the client learned or
//!     decided the lock was lost, the client's crash, the end of the run; and
//! (b) the invoke of the last resource write performed under the grant.
//!
//! So a client that checks validity, is paused past its deadline, then writes, holds until that
//! write: the GC-pause double grant shows up as an overlap.

use std::collections::BTreeMap;

use locksim_core::history::{Event, EventKind, OpF, Phase};
use locksim_core::{Fault, History, Nanos, NodeId};

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
    key: u32,
    token: Option<u64>,
    extends: Vec<&'a Event>,
    release: Option<&'a Event>,
    lost: Option<&'a Event>,
    last_write: Option<&'a Event>,
}

/// Derives every hold of the history, sorted by (key, start, handle).
pub fn derive_holds(history: &History) -> Vec<Hold> {
    let mut by_handle: BTreeMap<u64, Acc> = BTreeMap::new();
    let mut crashes: BTreeMap<NodeId, Vec<&Event>> = BTreeMap::new();
    for e in &history.events {
        match &e.kind {
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
        holds.push(Hold {
            handle,
            key: acc.key,
            client: ok.node,
            token: acc.token,
            acquired: ok.id,
            start: ok.time,
            end: end.0,
            ended_by: end.1,
            deadline: lease_end,
        });
    }
    holds.sort_by_key(|h| (h.key, h.start, h.handle));
    holds
}
