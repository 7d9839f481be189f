//! Mutations of a fault plan, the way lock failures need faults to move: toward a phase
//! boundary (shift), longer or shorter (stretch), a second fault near the first (add), aimed at
//! another node of the same role (retarget), fewer (drop), or the same plan under other
//! latencies and scheduling (re-seed); and aimed at the lock's own moments in the parent's run
//! (issue #51):
//!
//! - **aim**: a timed fault becomes a triggered one (`after = { node, event, nth, delay }`) at
//!   the nearest grant, renewal, write invoke, release or giving-up of the node it hits (or of
//!   the client holding the lock at its time), or a server's grant; a fault on a server of a
//!   replicated service may instead wait for a `leader elected`;
//! - **tune**: a fault's duration (pause, partition, restart delay, clock step, …) or a
//!   triggered fault's delay set just under or just over the TTL, the renew period or the
//!   renew deadline;
//! - **holder**: a fault on one node moved to the client that holds the lock at its time, or
//!   to the server that granted last (the leader of the moment).
//!
//! Each mutant is an ordinary scenario: a seed and an explicit plan, triggers included.

use locksim_core::scenario::Role;
use locksim_core::time::MS;
use locksim_core::trigger::{Trigger, TriggerEvent};
use locksim_core::{FaultKind, FaultPlan, Nanos, Scenario, TimedFault};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::feedback::{granter_at, holder_at, Moment};
use crate::setup::Setup;

/// The mutation applied, for the search path's description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutation {
    /// A fault moved in time.
    Shift,
    /// A fault's duration (or other magnitude) scaled.
    Stretch,
    /// A fault drawn afresh, placed near an existing one.
    Add,
    /// A single-node fault aimed at another node of the same role.
    Retarget,
    /// A fault removed.
    Drop,
    /// The same plan under another seed.
    Reseed,
    /// A timed fault made a triggered one, at a lock moment of the parent's run.
    Aim,
    /// A duration or a trigger's delay set just under or over the TTL or renew period.
    Tune,
    /// A single-node fault moved to the holder or the granting server of its moment.
    Holder,
}

impl Mutation {
    /// The word used in progress lines and `--json`.
    pub fn name(self) -> &'static str {
        match self {
            Mutation::Shift => "shift",
            Mutation::Stretch => "stretch",
            Mutation::Add => "add",
            Mutation::Retarget => "retarget",
            Mutation::Drop => "drop",
            Mutation::Reseed => "reseed",
            Mutation::Aim => "aim",
            Mutation::Tune => "tune",
            Mutation::Holder => "holder",
        }
    }
}

/// Largest shift of a fault, ns.
const SHIFT_MAX: i64 = 400 * MS as i64;
/// Largest distance of an added fault from the one it joins, ns.
const NEAR: u64 = 300 * MS;

/// One mutant of `parent`: one or two mutations, drawn from `rng`; `moments` are the lock's
/// moments in the parent's run ([`super::feedback::moments`]). Only the faults drawn from
/// the seed change: the setup's explicit plan (`[[fault]]`, `--plan`) stays in every mutant
/// as it is, and faults aimed at events (`after`) are only stretched, tuned or dropped. A mutation
/// that finds nothing to act on (no fault to shift, a donor plan with no fault) re-seeds
/// instead, so each mutation changes the scenario (two may cancel out: the hunt skips a
/// candidate it has run).
pub fn mutate(
    parent: &Scenario,
    moments: &[Moment],
    setup: &Setup,
    kinds: &[FaultKind],
    rng: &mut ChaCha8Rng,
) -> (Scenario, Vec<Mutation>) {
    let mut s = parent.clone();
    // The drawn faults: the parent's plan less one copy of each explicit fault.
    let mut free = parent.faults.faults.clone();
    for f in &setup.plan.faults {
        if let Some(i) = free.iter().position(|g| g == f) {
            free.remove(i);
        }
    }
    let mut done = Vec::new();
    let count = if rng.gen_bool(0.3) { 2 } else { 1 };
    let end = s.workload.duration.max(1);
    let timed = |f: &[TimedFault]| -> Vec<usize> {
        (0..f.len()).filter(|&i| f[i].after.is_none()).collect()
    };
    for _ in 0..count {
        let wanted = match rng.gen_range(0..100) {
            0..=14 => Mutation::Shift,
            15..=24 => Mutation::Stretch,
            25..=39 => Mutation::Add,
            40..=44 => Mutation::Retarget,
            45..=51 => Mutation::Drop,
            52..=57 => Mutation::Reseed,
            58..=79 => Mutation::Aim,
            80..=91 => Mutation::Tune,
            _ => Mutation::Holder,
        };
        let untriggered = timed(&free);
        let acted = match wanted {
            Mutation::Shift => shift(&mut free, &untriggered, end, rng),
            Mutation::Stretch => stretch(&mut free, rng),
            Mutation::Add => add(&mut free, setup, kinds, end, rng),
            Mutation::Retarget => retarget(&mut free, &untriggered, &s, rng),
            Mutation::Aim => aim(&mut free, &untriggered, moments, &s, rng),
            Mutation::Tune => tune(&mut free, &s, rng),
            Mutation::Holder => holder(&mut free, &untriggered, moments, &s, rng),
            Mutation::Drop if !free.is_empty() => {
                free.remove(rng.gen_range(0..free.len()));
                true
            }
            _ => false,
        };
        let m = if acted {
            wanted
        } else {
            s.seed = rng.gen();
            Mutation::Reseed
        };
        done.push(m);
    }
    let mut all = free;
    all.extend(setup.plan.faults.iter().cloned());
    s.faults = FaultPlan::new(all);
    (s, done)
}

fn shift(free: &mut [TimedFault], timed: &[usize], end: u64, rng: &mut ChaCha8Rng) -> bool {
    if timed.is_empty() {
        return false;
    }
    let i = timed[rng.gen_range(0..timed.len())];
    let d = rng.gen_range(-SHIFT_MAX..=SHIFT_MAX);
    let at = (free[i].at as i64 + d).clamp(0, end as i64 - 1) as u64;
    let moved = at != free[i].at;
    free[i].at = at;
    moved
}

fn stretch(free: &mut [TimedFault], rng: &mut ChaCha8Rng) -> bool {
    let with: Vec<usize> = (0..free.len())
        .filter(|&i| !free[i].fault.magnitudes().is_empty())
        .collect();
    if with.is_empty() {
        return false;
    }
    let i = with[rng.gen_range(0..with.len())];
    let mags = free[i].fault.magnitudes();
    let (name, v) = mags[rng.gen_range(0..mags.len())];
    let factor: f64 = rng.gen_range(0.5..2.0);
    let nv = ((v.max(1) as f64) * factor) as u64;
    let nv = if name == "rate_pct" {
        nv.clamp(1, 100)
    } else {
        nv.max(1)
    };
    let before = free[i].fault.clone();
    free[i].fault = before.with_magnitude(name, nv);
    free[i].fault != before
}

/// A fault of the setup's kinds, drawn from a fresh seed's plan, near a drawn fault (or where
/// the donor had it).
fn add(
    free: &mut Vec<TimedFault>,
    setup: &Setup,
    kinds: &[FaultKind],
    end: u64,
    rng: &mut ChaCha8Rng,
) -> bool {
    let donor = setup.scenario(rng.gen(), kinds);
    let offered: Vec<&TimedFault> = donor
        .faults
        .faults
        .iter()
        .filter(|f| f.after.is_none() && !setup.plan.faults.contains(f))
        .collect();
    if offered.is_empty() {
        return false;
    }
    let f = offered[rng.gen_range(0..offered.len())].clone();
    let anchors: Vec<u64> = free
        .iter()
        .filter(|f| f.after.is_none())
        .map(|f| f.at)
        .collect();
    let at = if anchors.is_empty() {
        f.at
    } else {
        let near = anchors[rng.gen_range(0..anchors.len())];
        let d = rng.gen_range(0..=2 * NEAR) as i64 - NEAR as i64;
        (near as i64 + d).clamp(0, end as i64 - 1) as u64
    };
    free.push(TimedFault::at(at, f.fault));
    true
}

/// A single-node fault aimed at another node of its role (never the resource).
fn retarget(free: &mut [TimedFault], timed: &[usize], s: &Scenario, rng: &mut ChaCha8Rng) -> bool {
    let movable: Vec<(usize, u32, Vec<u32>)> = timed
        .iter()
        .filter_map(|&i| {
            let node = free[i].fault.node()?;
            let role = s.cluster.role(node);
            let same: Vec<u32> = (0..s.cluster.nodes())
                .filter(|&n| n != node && s.cluster.role(n) == role)
                .collect();
            (role != Role::Resource && !same.is_empty()).then_some((i, node, same))
        })
        .collect();
    if movable.is_empty() {
        return false;
    }
    let (i, node, same) = &movable[rng.gen_range(0..movable.len())];
    let to = same[rng.gen_range(0..same.len())];
    match free[*i]
        .fault
        .map_nodes(|n| Some(if n == *node { to } else { n }))
    {
        Some(f) => {
            free[*i].fault = f;
            true
        }
        None => false,
    }
}

/// The lock's moments a fault may be aimed at, of one node.
fn of_node(moments: &[Moment], node: u32) -> Vec<&Moment> {
    moments.iter().filter(|m| m.node == node).collect()
}

/// A timed fault made a triggered one: at the parent run's moment of one kind (grant, renewal,
/// write, release, giving up; a server's grant), nearest its time, of the node it hits or of
/// the holder of that time; a fault on a server of a service of several may wait for the
/// first or second `leader elected` instead. The delay: none, up to 50 ms, or the fault's
/// distance from the moment in the parent (it strikes where it did, now tied to the moment).
fn aim(
    free: &mut [TimedFault],
    timed: &[usize],
    moments: &[Moment],
    s: &Scenario,
    rng: &mut ChaCha8Rng,
) -> bool {
    if timed.is_empty() {
        return false;
    }
    let i = timed[rng.gen_range(0..timed.len())];
    let t = free[i].at;
    let hit = free[i].fault.node();
    let servers: Vec<u32> = s.cluster.server_ids().collect();
    if hit.is_some_and(|n| s.cluster.role(n) == Role::Server)
        && servers.len() > 1
        && rng.gen_bool(0.2)
    {
        free[i].after = Some(Trigger {
            nodes: servers,
            event: TriggerEvent::LeaderElected,
            nth: rng.gen_range(1..=2),
            delay: rng.gen_range(0..=50 * MS),
            client: None,
        });
        free[i].at = 0;
        return true;
    }
    let who = match hit {
        Some(n) if rng.gen_bool(0.6) => Some(n),
        _ => holder_at(moments, t).or(hit),
    };
    let mut near = who.map(|n| of_node(moments, n)).unwrap_or_default();
    if near.is_empty() {
        near = moments.iter().collect();
    }
    if near.is_empty() {
        return false;
    }
    // One kind of moment, then its nearest to the fault's time.
    let mut events: Vec<TriggerEvent> = Vec::new();
    for m in &near {
        if !events.contains(&m.event) {
            events.push(m.event);
        }
    }
    let ev = events[rng.gen_range(0..events.len())];
    let m = near
        .iter()
        .filter(|m| m.event == ev)
        .min_by_key(|m| m.time.abs_diff(t))
        .expect("a moment of the kind");
    let delay = match rng.gen_range(0..3) {
        0 => 0,
        1 => rng.gen_range(0..=50 * MS),
        _ => t.saturating_sub(m.time),
    };
    free[i].after = Some(m.trigger(delay));
    free[i].at = 0;
    true
}

/// The periods a lock's faults matter against: the TTL, the renew period and deadline.
fn periods(s: &Scenario) -> Vec<Nanos> {
    let w = &s.workload;
    let mut p = vec![w.ttl];
    p.extend(w.renew_every);
    p.extend(w.renew_deadline);
    p.retain(|&d| d > 0);
    p
}

/// `base` just under (1-10 % less) or just over (1-25 % more).
fn around(base: Nanos, rng: &mut ChaCha8Rng) -> Nanos {
    let f = if rng.gen_bool(0.5) {
        1.0 - rng.gen_range(0.01..0.10)
    } else {
        1.0 + rng.gen_range(0.01..0.25)
    };
    ((base as f64 * f) as Nanos).clamp(1, locksim_core::fault::MAX_FAULT_NS)
}

/// A fault's duration (restart delay, clock step) or a triggered fault's delay set just under
/// or over one of the lock's periods.
fn tune(free: &mut [TimedFault], s: &Scenario, rng: &mut ChaCha8Rng) -> bool {
    const LENGTHS: [&str; 3] = ["duration", "restart_after", "delta"];
    let periods = periods(s);
    let with: Vec<usize> = (0..free.len())
        .filter(|&i| {
            free[i].after.is_some()
                || free[i]
                    .fault
                    .magnitudes()
                    .iter()
                    .any(|(n, _)| LENGTHS.contains(n))
        })
        .collect();
    if with.is_empty() || periods.is_empty() {
        return false;
    }
    let i = with[rng.gen_range(0..with.len())];
    let v = around(periods[rng.gen_range(0..periods.len())], rng);
    let before = free[i].clone();
    let lengths: Vec<&str> = free[i]
        .fault
        .magnitudes()
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| LENGTHS.contains(n))
        .collect();
    match free[i].after.as_mut() {
        Some(t) if lengths.is_empty() || rng.gen_bool(0.5) => t.delay = v,
        _ => {
            let name = lengths[rng.gen_range(0..lengths.len())];
            free[i].fault = free[i].fault.with_magnitude(name, v);
        }
    }
    free[i] != before
}

/// A single-node fault moved to the client holding the lock at its time (a client's fault) or
/// to the server that granted last (a server's fault).
fn holder(
    free: &mut [TimedFault],
    timed: &[usize],
    moments: &[Moment],
    s: &Scenario,
    rng: &mut ChaCha8Rng,
) -> bool {
    let movable: Vec<(usize, u32, u32)> = timed
        .iter()
        .filter_map(|&i| {
            let node = free[i].fault.node()?;
            let t = free[i].at;
            let to = match s.cluster.role(node) {
                Role::Client => holder_at(moments, t)?,
                Role::Server => granter_at(moments, t)?,
                Role::Resource => return None,
            };
            (to != node).then_some((i, node, to))
        })
        .collect();
    if movable.is_empty() {
        return false;
    }
    let (i, node, to) = movable[rng.gen_range(0..movable.len())];
    match free[i]
        .fault
        .map_nodes(|n| Some(if n == node { to } else { n }))
    {
        Some(f) => {
            free[i].fault = f;
            true
        }
        None => false,
    }
}
