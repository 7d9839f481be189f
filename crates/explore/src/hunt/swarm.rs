//! `--search swarm`: swarm testing as FoundationDB and TigerBeetle practise it. Each run
//! switches a random subset of the cell's fault kinds on and draws how hard each hits — how
//! many faults of the kind (one to [`MOST_PER_KIND`]) and a scale for their magnitudes
//! (durations, restart delays, clock steps, drift, loss and duplication rates: from a quarter
//! to twice the generator's draw) — all from the run's seed. A failure that needs one kind to
//! strike often and the others to stay away (a crash storm with no partitions to mask it) is
//! likelier in some runs than in a plan that always mixes every kind at its average rate.
//!
//! The pool is the cell's kinds: `mixed` and `swarm` stand for the nine base kinds, `none`
//! for no fault; a cell of one kind (`crash-restart`) varies that kind's count and scale only.
//! Run `i` keeps the random search's seed `first_seed + i` (the same latencies and workload
//! draws) under its own explicit plan, so a find is an ordinary scenario: it replays, shrinks
//! and renders like any other.

use locksim_core::fault::MAX_FAULT_NS;
use locksim_core::{Fault, FaultKind, FaultPlan, Network, Scenario, TimedFault, Workload};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::faultgen;
use crate::setup::Setup;

/// Most faults of one kind in a swarm run (the generator draws one to three).
pub const MOST_PER_KIND: usize = 6;
/// The salt of a swarm run's own stream (its choices never touch the run's other draws).
const SALT: u64 = 0x7377_6172_6d5f_6b69;

/// The base kinds the cell's kinds stand for, in [`FaultKind::BASE`]'s order (plus
/// `leader-change` when asked for): `mixed` and `swarm` for all nine, `duplicate` left out
/// under tcp, `none` for nothing.
pub fn pool(kinds: &[FaultKind], w: &Workload) -> Vec<FaultKind> {
    let mut out: Vec<FaultKind> = Vec::new();
    let mut push = |k: FaultKind| {
        if !(out.contains(&k) || k == FaultKind::Duplicate && w.network == Network::Tcp) {
            out.push(k);
        }
    };
    for &k in kinds {
        match k {
            FaultKind::None => {}
            FaultKind::Mixed | FaultKind::Swarm => FaultKind::BASE.iter().for_each(|&b| push(b)),
            other => push(other),
        }
    }
    out
}

/// What a swarm run drew: the kinds switched on, each with its count of faults and its
/// magnitude scale in percent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draw {
    /// (kind, faults, scale %) for each kind switched on, in the pool's order.
    pub on: Vec<(FaultKind, usize, u64)>,
}

/// The choices of the swarm run of `seed` over `pool` (empty pool: nothing on).
pub fn draw(seed: u64, pool: &[FaultKind]) -> Draw {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ SALT);
    if pool.is_empty() {
        return Draw { on: Vec::new() };
    }
    let mut picked: Vec<FaultKind> = pool.iter().copied().filter(|_| rng.gen_bool(0.5)).collect();
    if picked.is_empty() {
        picked.push(pool[rng.gen_range(0..pool.len())]);
    }
    let on = picked
        .into_iter()
        .map(|k| {
            let count = rng.gen_range(1..=MOST_PER_KIND);
            // Log-uniform from ¼ to 2×.
            let scale = (100.0 * 2f64.powf(rng.gen_range(-2.0..1.0))).round() as u64;
            (k, count, scale)
        })
        .collect();
    Draw { on }
}

/// `f` with every magnitude scaled by `pct` percent (rates kept within 1–100 %, durations
/// within a day, at least 1 ns).
fn scaled(f: &Fault, pct: u64) -> Fault {
    let mut out = f.clone();
    for (name, v) in f.magnitudes() {
        let nv = (v as u128 * pct as u128 / 100) as u64;
        let nv = match name {
            "rate_pct" => nv.clamp(1, 100),
            "ppm" => nv.clamp(1, 500_000),
            _ => nv.clamp(1, MAX_FAULT_NS),
        };
        out = out.with_magnitude(name, nv);
    }
    out
}

/// The swarm run of `seed`: the seed's latencies and workload under a plan of the kinds
/// [`draw`] switched on, each drawn by the fault generator from seeds of the run's own stream
/// and scaled, plus the setup's explicit plan.
pub fn scenario(setup: &Setup, kinds: &[FaultKind], seed: u64) -> Scenario {
    let pool = pool(kinds, &setup.workload);
    let d = draw(seed, &pool);
    let mut base = setup.scenario(seed, &[]);
    base.fault_kinds = kinds.to_vec();
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ SALT ^ 0xd0);
    let mut faults: Vec<TimedFault> = Vec::new();
    for &(k, count, pct) in &d.on {
        let mut drawn: Vec<TimedFault> = Vec::new();
        // The generator draws one to three faults a seed; a few donor seeds give `count`.
        for _ in 0..4 * MOST_PER_KIND {
            if drawn.len() >= count {
                break;
            }
            drawn.extend(
                faultgen::generate_shaped(
                    rng.gen(),
                    &[k],
                    &setup.cluster,
                    &setup.workload,
                    &setup.shape,
                )
                .faults,
            );
        }
        drawn.truncate(count);
        for tf in drawn {
            let f = TimedFault {
                fault: scaled(&tf.fault, pct),
                ..tf.clone()
            };
            let ok = FaultPlan::new(vec![f.clone()])
                .validate(&base.cluster)
                .is_ok();
            faults.push(if ok { f } else { tf });
        }
    }
    faults.extend(setup.plan.faults.iter().cloned());
    base.faults = FaultPlan::new(faults);
    base
}
