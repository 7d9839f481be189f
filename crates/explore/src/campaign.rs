//! Campaigns: an algorithm × fault-kind matrix, each cell run over a seed range, every seed on
//! its own fresh thread, spread over a pool of worker threads. Results are gathered per cell
//! and seed, so the summary does not depend on which thread finished first.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use locksim_core::{FaultKind, Property};
use serde::Serialize;

use crate::outcome::check_scenario;
use crate::setup::Setup;

/// What to run.
pub struct CampaignSpec {
    /// The algorithms (rows).
    pub setups: Vec<Setup>,
    /// The fault kinds (columns); each cell draws its plans from one kind.
    pub kinds: Vec<FaultKind>,
    /// First seed.
    pub first_seed: u64,
    /// Seeds per cell.
    pub seeds: u64,
    /// Worker threads (at least 1).
    pub jobs: usize,
}

/// The result of one cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CellSummary {
    /// Algorithm name.
    pub algorithm: String,
    /// Fault kind.
    pub faults: FaultKind,
    /// Seeds run.
    pub seeds: u64,
    /// Seeds whose history violates S1 (mutual exclusion).
    pub s1_violations: u64,
    /// Seeds whose history violates S2 (stale write accepted).
    pub s2_violations: u64,
    /// Seeds whose lock operations are not linearizable against the lease lock (S3).
    pub s3_violations: u64,
    /// Seeds where S3 ran out of its step budget before deciding.
    pub s3_inconclusive: u64,
    /// Smallest seed with any violation.
    pub first_failing_seed: Option<u64>,
    /// Seeds whose simulation failed (an algorithm panicked); never counted as safe.
    pub errors: u64,
    /// Smallest seed whose simulation failed.
    pub first_error_seed: Option<u64>,
    /// Client-visible lock grants over all seeds (a liveness indicator).
    pub grants: u64,
}

/// Runs the campaign; `progress(done, total)` is called after each seed (from worker threads).
pub fn run_campaign(spec: &CampaignSpec, progress: &(dyn Fn(u64, u64) + Sync)) -> Vec<CellSummary> {
    let cells: Vec<(usize, FaultKind)> = (0..spec.setups.len())
        .flat_map(|a| spec.kinds.iter().map(move |&k| (a, k)))
        .collect();
    let total = cells.len() as u64 * spec.seeds;
    let summaries: Mutex<Vec<CellSummary>> = Mutex::new(
        cells
            .iter()
            .map(|&(a, k)| CellSummary {
                algorithm: spec.setups[a].algorithm.clone(),
                faults: k,
                seeds: 0,
                s1_violations: 0,
                s2_violations: 0,
                s3_violations: 0,
                s3_inconclusive: 0,
                first_failing_seed: None,
                errors: 0,
                first_error_seed: None,
                grants: 0,
            })
            .collect(),
    );
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..spec.jobs.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed) as u64;
                if i >= total {
                    return;
                }
                let (cell, offset) = ((i / spec.seeds) as usize, i % spec.seeds);
                let (a, kind) = cells[cell];
                let seed = spec.first_seed + offset;
                let setup = &spec.setups[a];
                let out = check_scenario(&setup.scenario(seed, &[kind]), setup.algo.clone());
                let grants = out.history.as_ref().map_or(0, count_grants);
                {
                    let mut sums = summaries.lock().expect("no worker panics while holding it");
                    let c = &mut sums[cell];
                    c.seeds += 1;
                    c.grants += grants;
                    if let Some(_e) = &out.error {
                        c.errors += 1;
                        c.first_error_seed = Some(c.first_error_seed.map_or(seed, |f| f.min(seed)));
                    }
                    let v = &out.verdict;
                    c.s1_violations += v.violates(Property::S1) as u64;
                    c.s2_violations += v.violates(Property::S2) as u64;
                    c.s3_violations += v.violates(Property::S3) as u64;
                    c.s3_inconclusive += !v.inconclusive.is_empty() as u64;
                    if !v.is_safe() {
                        c.first_failing_seed =
                            Some(c.first_failing_seed.map_or(seed, |f| f.min(seed)));
                    }
                }
                let d = done.fetch_add(1, Ordering::Relaxed) as u64 + 1;
                progress(d, total);
            });
        }
    });
    summaries.into_inner().expect("workers finished")
}

fn count_grants(h: &locksim_core::History) -> u64 {
    use locksim_core::history::{EventKind, OpF, Phase};
    h.events
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
        .count() as u64
}
