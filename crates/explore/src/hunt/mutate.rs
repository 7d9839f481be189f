//! Mutations of a fault plan, the way lock failures need faults to move: toward a phase
//! boundary (shift), longer or shorter (stretch), a second fault near the first (add), aimed at
//! another node of the same role (retarget), fewer (drop), or the same plan under other
//! latencies and scheduling (re-seed). Each mutant is an ordinary scenario: a seed and an
//! explicit plan.

use locksim_core::scenario::Role;
use locksim_core::time::MS;
use locksim_core::{FaultKind, FaultPlan, Scenario, TimedFault};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

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
        }
    }
}

/// Largest shift of a fault, ns.
const SHIFT_MAX: i64 = 400 * MS as i64;
/// Largest distance of an added fault from the one it joins, ns.
const NEAR: u64 = 300 * MS;

/// One mutant of `parent`: one or two mutations, drawn from `rng`. Only the faults drawn from
/// the seed change: the setup's explicit plan (`[[fault]]`, `--plan`) stays in every mutant
/// as it is, and faults aimed at events (`after`) are only stretched or dropped. A mutation
/// that finds nothing to act on (no fault to shift, a donor plan with no fault) re-seeds
/// instead, so each mutation changes the scenario (two may cancel out: the hunt skips a
/// candidate it has run).
pub fn mutate(
    parent: &Scenario,
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
            0..=29 => Mutation::Shift,
            30..=49 => Mutation::Stretch,
            50..=69 => Mutation::Add,
            70..=79 => Mutation::Retarget,
            80..=87 => Mutation::Drop,
            _ => Mutation::Reseed,
        };
        let untriggered = timed(&free);
        let acted = match wanted {
            Mutation::Shift => shift(&mut free, &untriggered, end, rng),
            Mutation::Stretch => stretch(&mut free, rng),
            Mutation::Add => add(&mut free, setup, kinds, end, rng),
            Mutation::Retarget => retarget(&mut free, &untriggered, &s, rng),
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
