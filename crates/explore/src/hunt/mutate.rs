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

/// One mutant of `parent`: one or two mutations, drawn from `rng`. Faults aimed at events
/// (`after`) keep their trigger and are only stretched or dropped.
pub fn mutate(
    parent: &Scenario,
    setup: &Setup,
    kinds: &[FaultKind],
    rng: &mut ChaCha8Rng,
) -> (Scenario, Vec<Mutation>) {
    let mut s = parent.clone();
    let mut done = Vec::new();
    let count = if rng.gen_bool(0.3) { 2 } else { 1 };
    let end = s.workload.duration.max(1);
    for _ in 0..count {
        let mut faults = s.faults.faults.clone();
        let m = match rng.gen_range(0..100) {
            _ if faults.is_empty() => Mutation::Add,
            0..=29 => Mutation::Shift,
            30..=49 => Mutation::Stretch,
            50..=69 => Mutation::Add,
            70..=79 => Mutation::Retarget,
            80..=87 => Mutation::Drop,
            _ => Mutation::Reseed,
        };
        match m {
            Mutation::Shift => {
                let i = rng.gen_range(0..faults.len());
                if faults[i].after.is_none() {
                    let d = rng.gen_range(-SHIFT_MAX..=SHIFT_MAX);
                    let at = (faults[i].at as i64 + d).clamp(0, end as i64 - 1);
                    faults[i].at = at as u64;
                }
            }
            Mutation::Stretch => {
                let i = rng.gen_range(0..faults.len());
                let mags = faults[i].fault.magnitudes();
                if !mags.is_empty() {
                    let (name, v) = mags[rng.gen_range(0..mags.len())];
                    let factor: f64 = rng.gen_range(0.5..2.0);
                    let nv = ((v.max(1) as f64) * factor) as u64;
                    let nv = if name == "rate_pct" {
                        nv.clamp(1, 100)
                    } else {
                        nv.max(1)
                    };
                    faults[i].fault = faults[i].fault.with_magnitude(name, nv);
                }
            }
            Mutation::Add => {
                // A fault of the setup's kinds, drawn from a fresh seed's plan.
                let donor = setup.scenario(rng.gen(), kinds);
                if let Some(f) = donor
                    .faults
                    .faults
                    .iter()
                    .filter(|f| f.after.is_none())
                    .nth(rng.gen_range(0..donor.faults.len().max(1)))
                    .cloned()
                {
                    let at = match faults.iter().filter(|f| f.after.is_none()).count() {
                        0 => f.at,
                        n => {
                            let near = faults
                                .iter()
                                .filter(|f| f.after.is_none())
                                .nth(rng.gen_range(0..n))
                                .map_or(0, |f| f.at);
                            let d = rng.gen_range(0..=2 * NEAR) as i64 - NEAR as i64;
                            (near as i64 + d).clamp(0, end as i64 - 1) as u64
                        }
                    };
                    faults.push(TimedFault::at(at, f.fault));
                }
            }
            Mutation::Retarget => {
                let i = rng.gen_range(0..faults.len());
                if let Some(node) = faults[i].fault.node() {
                    let role = s.cluster.role(node);
                    let same: Vec<u32> = (0..s.cluster.nodes())
                        .filter(|&n| n != node && s.cluster.role(n) == role)
                        .collect();
                    if role != Role::Resource && !same.is_empty() {
                        let to = same[rng.gen_range(0..same.len())];
                        if let Some(f) = faults[i]
                            .fault
                            .map_nodes(|n| Some(if n == node { to } else { n }))
                        {
                            faults[i].fault = f;
                        }
                    }
                }
            }
            Mutation::Drop => {
                if faults.len() > 1 {
                    faults.remove(rng.gen_range(0..faults.len()));
                }
            }
            Mutation::Reseed => s.seed = rng.gen(),
        }
        s.faults = FaultPlan::new(faults);
        done.push(m);
    }
    (s, done)
}
