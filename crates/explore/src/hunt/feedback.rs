//! What a run tells the guided search: the abstract lock states it visited and how close it
//! came to a violation.
//!
//! A run's *features* are hashes of small tuples read off its history, event by event:
//!
//! - the event's kind (acquire/release/extend/write × invoke/ok/fail/info, a service grant, a
//!   freed lock, an accepted or rejected write, a lease given up, a fault of each type, a
//!   fault's end, a leader, a replication step),
//! - how many clients believe they hold the event's key at that moment (0, 1, 2 or more), how
//!   many of those believe it past their lease's validity deadline in true time (0, 1, 2+),
//! - how many of them are renewing at that moment (an `extend` invoked and not yet answered:
//!   0, 1, 2+),
//! - the types of the faults in force at that moment (a bit per fault type),
//!
//! once alone and once paired with the previous event's kind (a new pair of events in timeline
//! order). And the lock's states at a fault's edges (issue #51): at each fault that strikes or
//! ends, how many clients believe they hold (0, 1, 2+), how many of those past their deadline,
//! how many are renewing and how many have a write in flight (invoked, not yet answered), with
//! the fault's type and edge; and each write answered after a fault edge crossed it, by its
//! answer. A run that shows a tuple no earlier run showed did something new for a lock: a
//! grant under a pause, a write while two clients believe they hold, a release answered `info`
//! during a partition.
//!
//! Its *near misses* are two margins in true time, the smaller the closer:
//!
//! - **hold gap**: the shortest time between one client's hold of a key ending and another
//!   client's later hold of that key starting, with holds as S1 derives them
//!   ([`locksim_check::holds::derive_holds`]: to the release, the lease's deadline, giving the
//!   lease up or the crash, whichever comes first, or a later write): 0 when two overlap,
//!   which is S1;
//! - **stale-write gap**: the shortest time between a write the resource accepted from one
//!   grant and the service's next grant of that key to another client: a write that lands just
//!   after that grant (in a run whose timing moved a little) is a stale write, S2.
//!
//! This is the feedback Mallory (Meng et al., CCS 2023) and coverage-guided fuzzers use,
//! specialised to locks: states of the lock as its clients and its service see them, rather
//! than lines of code.

use std::collections::BTreeMap;

use locksim_core::history::{EventKind, OpF, Phase};
use locksim_core::trigger::{occurrence, Count, Trigger, TriggerEvent};
use locksim_core::{Fault, History, Nanos, NodeId};

/// What one run visited and how close it came.
#[derive(Debug, Clone, Default)]
pub struct Feedback {
    /// Hashes of the abstract states and event pairs the run visited (sorted, no repeats).
    pub features: Vec<u64>,
    /// Shortest gap, ns, between a client's hold ending and another client's later hold of
    /// the same key starting, holds as S1 derives them; 0 when two overlap (`None`: no such
    /// pair).
    pub hold_gap: Option<Nanos>,
    /// Shortest gap, ns, between an accepted write and the service's next grant of the same
    /// key to another client (`None`: no such pair).
    pub stale_write_gap: Option<Nanos>,
    /// The lock's own moments in the run, in timeline order, for the aimed mutations
    /// ([`super::mutate`]): what a trigger could wait for to strike there again.
    pub moments: Vec<Moment>,
}

/// One of the lock's own moments: a client's grant (`acquire ok`), renewal, write or release
/// (`invoke`), its giving the lock up, or a server's grant; with the trigger that fires at it
/// in a rerun of the same scenario (its node's `nth` such event).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moment {
    /// True time, ns.
    pub time: Nanos,
    /// The node that recorded it.
    pub node: NodeId,
    /// The event, as a trigger names it.
    pub event: TriggerEvent,
    /// Which such event of this node it was, from 1.
    pub nth: u32,
    /// For a server's grant: the client granted.
    pub client: Option<NodeId>,
}

impl Moment {
    /// The trigger that fires `delay` after this moment.
    pub fn trigger(&self, delay: Nanos) -> Trigger {
        Trigger {
            nodes: vec![self.node],
            event: self.event,
            nth: self.nth,
            delay,
            client: None,
        }
    }
}

/// The events a moment is made of.
pub const MOMENTS: [TriggerEvent; 6] = [
    TriggerEvent::Op(OpF::Acquire, Phase::Ok),
    TriggerEvent::Op(OpF::Extend, Phase::Invoke),
    TriggerEvent::Op(OpF::Write, Phase::Invoke),
    TriggerEvent::Op(OpF::Release, Phase::Invoke),
    TriggerEvent::GivesUp,
    TriggerEvent::Grants,
];

/// The lock's moments of `history` ([`Moment`]), counted as triggers count them.
pub fn moments(history: &History) -> Vec<Moment> {
    let mut counts: BTreeMap<(NodeId, usize), Count> = BTreeMap::new();
    let mut out = Vec::new();
    for e in &history.events {
        let Some(o) = occurrence(&e.kind) else {
            continue;
        };
        let Some(i) = MOMENTS.iter().position(|m| *m == o.event) else {
            continue;
        };
        let t = Moment {
            time: e.time,
            node: e.node,
            event: o.event,
            nth: 0,
            client: o.client,
        };
        let count = counts.entry((e.node, i)).or_default();
        if t.trigger(0).count(count, e.node, &o) {
            out.push(Moment { nth: count.n, ..t });
        }
    }
    out
}

/// The client that believes it holds at `t` in `moments` (the latest granted whose hold is
/// still open: no release invoked, not given up), if any.
pub fn holder_at(moments: &[Moment], t: Nanos) -> Option<NodeId> {
    let mut open: Vec<NodeId> = Vec::new();
    for m in moments.iter().take_while(|m| m.time <= t) {
        match m.event {
            TriggerEvent::Op(OpF::Acquire, Phase::Ok) => {
                open.retain(|&c| c != m.node);
                open.push(m.node);
            }
            TriggerEvent::Op(OpF::Release, Phase::Invoke) | TriggerEvent::GivesUp => {
                open.retain(|&c| c != m.node)
            }
            _ => {}
        }
    }
    open.last().copied()
}

/// The server that granted last at or before `t`: the leader of the moment, for a service
/// with one.
pub fn granter_at(moments: &[Moment], t: Nanos) -> Option<NodeId> {
    moments
        .iter()
        .take_while(|m| m.time <= t)
        .filter(|m| m.event == TriggerEvent::Grants)
        .last()
        .map(|m| m.node)
}

impl Feedback {
    /// The closer of the two margins (smaller is closer), for ranking runs.
    pub fn closeness(&self) -> Option<Nanos> {
        match (self.hold_gap, self.stale_write_gap) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// A small number for each kind of event (the feature alphabet).
fn tag(kind: &EventKind) -> u64 {
    match kind {
        EventKind::Op { f, phase, .. } => {
            let f = match f {
                OpF::Acquire => 0,
                OpF::Release => 1,
                OpF::Extend => 2,
                OpF::Write => 3,
            };
            let p = match phase {
                Phase::Invoke => 0,
                Phase::Ok => 1,
                Phase::Fail => 2,
                Phase::Info => 3,
            };
            1 + f * 4 + p
        }
        EventKind::Lost { .. } => 20,
        EventKind::Grant { .. } => 21,
        EventKind::Freed { .. } => 22,
        EventKind::WriteAccepted { .. } => 23,
        EventKind::WriteRejected { .. } => 24,
        EventKind::Fault { fault } => 30 + fault_type(fault),
        EventKind::FaultEnd { .. } => 25,
        EventKind::Leader { .. } => 26,
        EventKind::Replicated { .. } => 27,
        EventKind::Touched { .. } => 28,
    }
}

/// A bit position per fault type.
fn fault_type(f: &Fault) -> u64 {
    match f {
        Fault::Partition { .. } => 0,
        Fault::PartitionOneway { .. } => 1,
        Fault::Isolate { .. } => 2,
        Fault::IsolateLeader { .. } => 3,
        Fault::Heal => 4,
        Fault::Loss { .. } => 5,
        Fault::Delay { .. } => 6,
        Fault::Duplicate { .. } => 7,
        Fault::DropReplies { .. } => 8,
        Fault::Pause { .. } => 9,
        Fault::Crash { .. } => 10,
        Fault::ClockStep { .. } => 11,
        Fault::ClockDrift { .. } => 12,
    }
}

/// How long a fault stays in force, ns (`None`: until the run ends or for ever).
fn lasts(f: &Fault) -> Option<Nanos> {
    match f {
        Fault::Crash { restart_after, .. } => *restart_after,
        Fault::ClockStep { .. } | Fault::Heal => Some(0),
        Fault::ClockDrift { .. } => None,
        other => other
            .magnitudes()
            .iter()
            .find(|(n, _)| *n == "duration")
            .map(|&(_, d)| d),
    }
}

/// The feature of a write answered `phase` after a fault's edge crossed it on its way.
pub fn crossed_write(phase: Phase) -> u64 {
    mix(&[61, phase as u64, 1 << 41])
}

fn bucket(n: usize, top: usize) -> u64 {
    n.min(top) as u64
}

fn mix(parts: &[u64]) -> u64 {
    let mut bytes = Vec::with_capacity(parts.len() * 8);
    for p in parts {
        bytes.extend_from_slice(&p.to_le_bytes());
    }
    xxhash_rust::xxh3::xxh3_64(&bytes)
}

/// One believed hold (from the acquire `ok` to the release invoke, giving the lease up or
/// the crash): the client, and the true time its validity deadline passes.
#[derive(Clone, Copy)]
struct Hold {
    client: NodeId,
    until: Option<Nanos>,
}

/// Reads the feedback of one run off its history.
pub fn feedback(history: &History) -> Feedback {
    // key → handle → hold
    let mut holds: BTreeMap<u32, BTreeMap<u64, Hold>> = BTreeMap::new();
    // key → (client, time) of the last accepted write
    let mut last_write: BTreeMap<u32, (NodeId, Nanos)> = BTreeMap::new();
    // handle → client, to find the client of a write
    let mut owner: BTreeMap<u64, NodeId> = BTreeMap::new();
    // fault end times by type, for the mask of faults in force
    let mut in_force: Vec<(u64, Option<Nanos>)> = Vec::new();
    let mut features: Vec<u64> = Vec::with_capacity(history.events.len() * 2);
    let mut fb = Feedback::default();
    let mut prev = 0u64;
    // key → clients with an `extend` on its way
    let mut renewing: BTreeMap<u32, Vec<NodeId>> = BTreeMap::new();
    // client → whether a fault edge crossed its write on its way
    let mut writing: BTreeMap<NodeId, bool> = BTreeMap::new();
    let closer = |slot: &mut Option<Nanos>, v: Nanos| {
        *slot = Some(slot.map_or(v, |s: Nanos| s.min(v)));
    };
    for e in &history.events {
        let t = e.time;
        in_force.retain(|&(_, end)| end.is_none_or(|end| end > t));
        let key = match &e.kind {
            EventKind::Op { key, .. }
            | EventKind::Lost { key, .. }
            | EventKind::Grant { key, .. }
            | EventKind::Freed { key, .. }
            | EventKind::WriteAccepted { key, .. }
            | EventKind::WriteRejected { key, .. } => Some(*key),
            _ => None,
        };
        let end_hold = |holds: &mut BTreeMap<u32, BTreeMap<u64, Hold>>, k: u32, h: u64| {
            if let Some(m) = holds.get_mut(&k) {
                m.remove(&h);
            }
        };
        if let EventKind::Op { f, phase, key, .. } = &e.kind {
            match (f, phase) {
                (OpF::Extend, Phase::Invoke) => renewing.entry(*key).or_default().push(e.node),
                (OpF::Extend, _) => {
                    if let Some(v) = renewing.get_mut(key) {
                        v.retain(|&c| c != e.node);
                    }
                }
                (OpF::Write, Phase::Invoke) => {
                    writing.insert(e.node, false);
                }
                (OpF::Write, p) if writing.remove(&e.node) == Some(true) => {
                    features.push(crossed_write(*p));
                }
                (OpF::Write, _) => {}
                _ => {}
            }
        }
        if let EventKind::Fault { .. } | EventKind::FaultEnd { .. } = &e.kind {
            let edge = match &e.kind {
                EventKind::Fault { fault } => 1 + fault_type(fault),
                _ => 0,
            };
            let believers: usize = holds.values().map(|m| m.len()).sum();
            let expired = holds
                .values()
                .flat_map(|m| m.values())
                .filter(|h| h.until.is_some_and(|u| u < t))
                .count();
            let renew: usize = renewing.values().map(|v| v.len()).sum();
            features.push(mix(&[
                60,
                edge,
                bucket(believers, 2),
                bucket(expired, 2),
                bucket(renew, 2),
                bucket(writing.len(), 2),
                1 << 41,
            ]));
            writing.values_mut().for_each(|crossed| *crossed = true);
        }
        match &e.kind {
            EventKind::Op {
                f: OpF::Acquire,
                phase: Phase::Ok,
                key,
                handle: Some(h),
                deadline,
                ..
            } => {
                holds.entry(*key).or_default().insert(
                    *h,
                    Hold {
                        client: e.node,
                        until: deadline.map(|d| d.at),
                    },
                );
                owner.insert(*h, e.node);
            }
            EventKind::Op {
                f: OpF::Extend,
                phase: Phase::Ok,
                key,
                handle: Some(h),
                deadline: Some(d),
                ..
            } => {
                if let Some(hold) = holds.get_mut(key).and_then(|m| m.get_mut(h)) {
                    hold.until = Some(d.at);
                }
            }
            EventKind::Op {
                f: OpF::Release,
                phase: Phase::Invoke,
                key,
                handle: Some(h),
                ..
            }
            | EventKind::Lost { key, handle: h, .. } => end_hold(&mut holds, *key, *h),
            EventKind::Grant { key, client, .. } => {
                if let Some(&(c, at)) = last_write.get(key) {
                    if c != *client {
                        closer(&mut fb.stale_write_gap, t.saturating_sub(at));
                    }
                }
            }
            EventKind::WriteAccepted { key, handle, .. } => {
                if let Some(&c) = owner.get(handle) {
                    last_write.insert(*key, (c, t));
                }
            }
            EventKind::Fault { fault } => {
                if let Fault::Crash { node, .. } = fault {
                    let gone: Vec<(u32, u64)> = holds
                        .iter()
                        .flat_map(|(k, m)| {
                            m.iter()
                                .filter(|(_, o)| o.client == *node)
                                .map(move |(h, _)| (*k, *h))
                        })
                        .collect();
                    for (k, h) in gone {
                        end_hold(&mut holds, k, h);
                    }
                }
                in_force.push((fault_type(fault), lasts(fault).map(|d| t.saturating_add(d))));
            }
            _ => {}
        }
        let mask = in_force.iter().fold(0u64, |m, &(ty, _)| m | (1 << ty));
        let (believers, expired) = key
            .and_then(|k| holds.get(&k))
            .map(|m| {
                let expired = m
                    .values()
                    .filter(|h| h.until.is_some_and(|u| u < t))
                    .count();
                (m.len(), expired)
            })
            .unwrap_or((0, 0));
        let renew = key.and_then(|k| renewing.get(&k)).map_or(0, |v| v.len());
        let tg = tag(&e.kind);
        let state = [
            tg,
            bucket(believers, 2),
            bucket(expired, 2),
            bucket(renew, 2),
            mask,
        ];
        features.push(mix(&state));
        features.push(mix(&[prev, tg, bucket(believers, 2), 1 << 40]));
        prev = tg;
    }
    features.sort_unstable();
    features.dedup();
    fb.features = features;
    fb.hold_gap = hold_gap(&locksim_check::holds::derive_holds(history));
    fb.moments = moments(history);
    fb
}

/// The shortest gap, ns, from the end of one client's hold to the start of another client's
/// later hold of the same key; 0 when two overlap. `holds` sorted by (key, start), as
/// [`locksim_check::holds::derive_holds`] gives them.
fn hold_gap(holds: &[locksim_check::holds::Hold]) -> Option<Nanos> {
    let mut best: Option<Nanos> = None;
    for (i, later) in holds.iter().enumerate() {
        for earlier in holds[..i].iter().rev().take_while(|h| h.key == later.key) {
            if earlier.client != later.client {
                let gap = later.start.saturating_sub(earlier.end);
                best = Some(best.map_or(gap, |b| b.min(gap)));
            }
        }
    }
    best
}
