//! Campaigns: an algorithm × fault-kind matrix, each cell run over a seed range, every seed on
//! its own fresh thread, spread over a pool of worker threads. Each seed gives a
//! [`SeedRecord`]; [`summarize`] folds records into per-cell summaries, in cell order, so the
//! summary depends neither on which thread finished first nor on how the seeds were split into
//! shards (`--shard I/N` on several machines, then `locksim merge`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use locksim_check::metrics::{Aggregate, Counts, Metrics};
use locksim_core::{FaultKind, Property};
use serde::{Deserialize, Serialize};

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

/// This machine's part of a campaign: the seeds whose offset in the range is `index` modulo
/// `count` (`0 <= index < count`), in every cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This shard, from 0.
    pub index: u64,
    /// Number of shards.
    pub count: u64,
}

impl Shard {
    /// The whole campaign.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Parses `I/N`.
    ///
    /// # Errors
    /// When the text is not `I/N` with `0 <= I < N`.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let bad = || format!("`{text}` is not a shard: write I/N with 0 <= I < N, e.g. 0/4");
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let (index, count): (u64, u64) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// The shard a Kubernetes Indexed Job gives this pod (`JOB_COMPLETION_INDEX` of
    /// `JOB_COMPLETIONS`), if those variables are set.
    ///
    /// # Errors
    /// When they are set but malformed.
    pub fn from_env() -> Result<Option<Shard>, String> {
        match (
            std::env::var("JOB_COMPLETION_INDEX"),
            std::env::var("JOB_COMPLETIONS"),
        ) {
            (Ok(i), Ok(n)) => Shard::parse(&format!("{i}/{n}"))
                .map(Some)
                .map_err(|e| format!("JOB_COMPLETION_INDEX/JOB_COMPLETIONS: {e}")),
            (Ok(_), Err(_)) => Err(
                "JOB_COMPLETION_INDEX is set but JOB_COMPLETIONS is not: set it to the job's \
                 completions, or give --shard I/N"
                    .into(),
            ),
            _ => Ok(None),
        }
    }
}

/// The outcome of one seed of one cell: one line of `--out results.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedRecord {
    /// The campaign file it belongs to (empty for the command-line matrix).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub campaign: String,
    /// The cell's index in the campaign (algorithm-major order).
    pub cell: usize,
    /// Algorithm name.
    pub algorithm: String,
    /// Fault kind.
    pub faults: FaultKind,
    /// Explicit faults added to every seed's plan (a campaign file's `[[fault]]` entries).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub plan: usize,
    /// The seed.
    pub seed: u64,
    /// S1 violated.
    pub s1: bool,
    /// S2 violated.
    pub s2: bool,
    /// S3 violated.
    pub s3: bool,
    /// S3 ran out of budget.
    pub s3_inconclusive: bool,
    /// S4 violated (a release freed another grant's lock).
    #[serde(default)]
    pub s4: bool,
    /// L1 violated (a stopped holder's lock did not reach a waiter in time).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub l1: bool,
    /// L2 violated (a healthy renewing holder lost its lock in a short outage).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub l2: bool,
    /// L3 violated (a lock stayed taken with nobody believing they held it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub l3: bool,
    /// The simulation failed (with why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Successful acquires.
    pub grants: u64,
    /// A fingerprint of the cell's settings (algorithm knobs, cluster, workload): `merge`
    /// refuses to add up records of one cell made with different settings.
    #[serde(default)]
    pub settings: String,
    /// The shard that ran it, `I/N`.
    #[serde(default)]
    pub shard: String,
    /// The run's lock metrics (counters and duration histograms, ns), absent when the
    /// simulation failed or the record was written by an older locksim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Aggregate>,
}

/// The result of one cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CellSummary {
    /// Algorithm name.
    pub algorithm: String,
    /// Fault kind.
    pub faults: FaultKind,
    /// Explicit faults added to every seed's plan.
    #[serde(skip_serializing_if = "is_zero")]
    pub plan: usize,
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
    /// Seeds where a release freed another grant's lock (S4).
    pub s4_violations: u64,
    /// Seeds where a stopped holder's lock did not reach a waiter in time (L1).
    pub l1_violations: u64,
    /// Seeds where a healthy renewing holder lost its lock in a short outage (L2).
    pub l2_violations: u64,
    /// Seeds where a lock was orphaned (L3).
    pub l3_violations: u64,
    /// Smallest seed with a liveness violation (L1–L3).
    pub first_liveness_failing_seed: Option<u64>,
    /// Smallest seed with any violation.
    pub first_failing_seed: Option<u64>,
    /// Seeds whose simulation failed (an algorithm panicked); never counted as safe.
    pub errors: u64,
    /// Smallest seed whose simulation failed.
    pub first_error_seed: Option<u64>,
    /// Client-visible lock grants over all seeds (a liveness indicator).
    pub grants: u64,
    /// Lock operations and messages over all seeds: `acquires`, `acquires_ok`,
    /// `acquires_failed`, `acquires_unknown`, `retries`, `expired_while_held` (grants whose
    /// lease, by the client's own deadline, passed while the holder still wrote, renewed or
    /// released under it), `messages_sent`, `messages_dropped`.
    #[serde(flatten)]
    pub counts: Counts,
    /// Median acquire latency (invoke to `ok`), ns, within 1.6%; `null` without grants.
    pub acquire_latency_p50_ns: Option<u64>,
    /// 99th-percentile acquire latency, ns, within 1.6%.
    pub acquire_latency_p99_ns: Option<u64>,
    /// Median wait for the lock (first attempt of a round to its grant, retries included), ns.
    pub wait_p50_ns: Option<u64>,
    /// 99th-percentile wait, ns.
    pub wait_p99_ns: Option<u64>,
    /// Median hold time (hold interval length), ns.
    pub hold_p50_ns: Option<u64>,
    /// 99th-percentile hold time, ns.
    pub hold_p99_ns: Option<u64>,
    /// The metrics added up (histograms included), for reports.
    #[serde(skip)]
    pub metrics: Aggregate,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl CellSummary {
    /// The cell's fault column: the kind, `plan` for an explicit plan alone, `KIND+plan` for
    /// both.
    pub fn faults_label(&self) -> String {
        match (self.faults, self.plan) {
            (k, 0) => k.name().to_string(),
            (FaultKind::None, _) => "plan".to_string(),
            (k, _) => format!("{}+plan", k.name()),
        }
    }
}

/// Runs this shard of the campaign; `progress(done, total)` is called after each seed (from
/// worker threads). Records come back sorted by cell, then seed.
pub fn run_seeds(
    spec: &CampaignSpec,
    shard: Shard,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Vec<SeedRecord> {
    let cells: Vec<(usize, FaultKind)> = (0..spec.setups.len())
        .flat_map(|a| spec.kinds.iter().map(move |&k| (a, k)))
        .collect();
    let offsets: Vec<u64> = (0..spec.seeds)
        .filter(|o| o % shard.count == shard.index)
        .collect();
    let jobs: Vec<(usize, u64)> = (0..cells.len())
        .flat_map(|c| offsets.iter().map(move |&o| (c, o)))
        .collect();
    let total = jobs.len() as u64;
    let fingerprints: Vec<String> = spec.setups.iter().map(fingerprint).collect();
    let records: Mutex<Vec<SeedRecord>> = Mutex::new(Vec::with_capacity(jobs.len()));
    let (next, done) = (AtomicUsize::new(0), AtomicUsize::new(0));
    std::thread::scope(|s| {
        for _ in 0..spec.jobs.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(cell, offset)) = jobs.get(i) else {
                    return;
                };
                let (a, kind) = cells[cell];
                let seed = spec.first_seed + offset;
                let setup = &spec.setups[a];
                let out = check_scenario(&setup.scenario(seed, &[kind]), setup.algo.clone());
                let v = &out.verdict;
                let record = SeedRecord {
                    campaign: String::new(),
                    cell,
                    algorithm: setup.algorithm.clone(),
                    faults: kind,
                    plan: setup.plan.len(),
                    seed,
                    s1: v.violates(Property::S1),
                    s2: v.violates(Property::S2),
                    s3: v.violates(Property::S3),
                    s3_inconclusive: !v.inconclusive.is_empty(),
                    s4: v.violates(Property::S4),
                    l1: v.violates(Property::L1),
                    l2: v.violates(Property::L2),
                    l3: v.violates(Property::L3),
                    error: out.error.clone(),
                    grants: out.history.as_ref().map_or(0, count_grants),
                    settings: fingerprints[a].clone(),
                    shard: format!("{}/{}", shard.index, shard.count),
                    metrics: out.history.as_ref().map(|h| Metrics::of(h).aggregate()),
                };
                records
                    .lock()
                    .expect("no worker panics while holding it")
                    .push(record);
                progress(done.fetch_add(1, Ordering::Relaxed) as u64 + 1, total);
            });
        }
    });
    let mut records = records.into_inner().expect("workers finished");
    records.sort_by_key(|r| (r.cell, r.seed));
    records
}

/// Folds one campaign's seed records (from one run or merged shards) into per-cell summaries,
/// by cell index.
pub fn summarize(records: &[SeedRecord]) -> Vec<CellSummary> {
    let mut cells: std::collections::BTreeMap<usize, CellSummary> = Default::default();
    for r in records {
        let c = cells.entry(r.cell).or_insert_with(|| CellSummary {
            algorithm: r.algorithm.clone(),
            faults: r.faults,
            plan: r.plan,
            seeds: 0,
            s1_violations: 0,
            s2_violations: 0,
            s3_violations: 0,
            s3_inconclusive: 0,
            s4_violations: 0,
            l1_violations: 0,
            l2_violations: 0,
            l3_violations: 0,
            first_liveness_failing_seed: None,
            first_failing_seed: None,
            errors: 0,
            first_error_seed: None,
            grants: 0,
            counts: Counts::default(),
            acquire_latency_p50_ns: None,
            acquire_latency_p99_ns: None,
            wait_p50_ns: None,
            wait_p99_ns: None,
            hold_p50_ns: None,
            hold_p99_ns: None,
            metrics: Aggregate::default(),
        });
        c.seeds += 1;
        c.grants += r.grants;
        c.s1_violations += r.s1 as u64;
        c.s2_violations += r.s2 as u64;
        c.s3_violations += r.s3 as u64;
        c.s3_inconclusive += r.s3_inconclusive as u64;
        c.s4_violations += r.s4 as u64;
        c.l1_violations += r.l1 as u64;
        c.l2_violations += r.l2 as u64;
        c.l3_violations += r.l3 as u64;
        let min = |f: Option<u64>| Some(f.map_or(r.seed, |f| f.min(r.seed)));
        if r.s1 || r.s2 || r.s3 || r.s4 {
            c.first_failing_seed = min(c.first_failing_seed);
        }
        if r.l1 || r.l2 || r.l3 {
            c.first_liveness_failing_seed = min(c.first_liveness_failing_seed);
        }
        if r.error.is_some() {
            c.errors += 1;
            c.first_error_seed = min(c.first_error_seed);
        }
        if let Some(m) = &r.metrics {
            c.metrics.merge(m);
        }
    }
    for c in cells.values_mut() {
        let m = &c.metrics;
        c.counts = m.counts.clone();
        c.acquire_latency_p50_ns = m.acquire_latency_ns.quantile(0.5);
        c.acquire_latency_p99_ns = m.acquire_latency_ns.quantile(0.99);
        c.wait_p50_ns = m.wait_ns.quantile(0.5);
        c.wait_p99_ns = m.wait_ns.quantile(0.99);
        c.hold_p50_ns = m.hold_ns.quantile(0.5);
        c.hold_p99_ns = m.hold_ns.quantile(0.99);
    }
    cells.into_values().collect()
}

/// Runs the whole campaign and summarizes it.
pub fn run_campaign(spec: &CampaignSpec, progress: &(dyn Fn(u64, u64) + Sync)) -> Vec<CellSummary> {
    summarize(&run_seeds(spec, Shard::ALL, progress))
}

/// A short stable hash of what a setup runs (algorithm, knobs, cluster, workload, and the
/// explicit plan when there is one).
pub fn fingerprint(setup: &Setup) -> String {
    let text = if setup.plan.is_empty() {
        serde_json::to_string(&(
            &setup.algorithm,
            &setup.config,
            &setup.cluster,
            &setup.workload,
        ))
    } else {
        serde_json::to_string(&(
            &setup.algorithm,
            &setup.config,
            &setup.cluster,
            &setup.workload,
            &setup.plan,
        ))
    }
    .expect("serializable");
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(text.as_bytes()))
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
