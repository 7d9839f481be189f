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
//! - the types of the faults in force at that moment (a bit per fault type),
//!
//! once alone and once paired with the previous event's kind (a new pair of events in timeline
//! order). A run that shows a tuple no earlier run showed did something new for a lock: a
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
        let tg = tag(&e.kind);
        let state = [tg, bucket(believers, 2), bucket(expired, 2), mask];
        features.push(mix(&state));
        features.push(mix(&[prev, tg, bucket(believers, 2), 1 << 40]));
        prev = tg;
    }
    features.sort_unstable();
    features.dedup();
    fb.features = features;
    fb.hold_gap = hold_gap(&locksim_check::holds::derive_holds(history));
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
