//! Campaigns: an algorithm × fault-kind matrix, each cell run over a seed range, every seed on
//! its own fresh thread, spread over a pool of worker threads. Each seed gives a
//! [`SeedRecord`], handed on as it finishes ([`run_each`]: streamed to `--out`, folded into a
//! [`Summary`]); a summary depends neither on which thread finished first nor on how the seeds
//! were split into shards (`--shard I/N` on several machines, then `locksim merge`), and holds
//! only per-cell aggregates, so memory is flat in the number of seeds.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use locksim_check::metrics::{Aggregate, Counts, Metrics};
use locksim_core::text::one_line;
use locksim_core::{FaultKind, Property};
use serde::{Deserialize, Serialize};

use crate::outcome::{check_options_for, check_scenario, faults_applied, grants};
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
        let bad = || {
            format!(
                "`{}` is not a shard: write I/N with 0 <= I < N, e.g. 0/4",
                one_line(text)
            )
        };
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
    /// When they are set but malformed, or the index is set without the count.
    pub fn from_env() -> Result<Option<Shard>, String> {
        Shard::resolve(None, None, &|k| std::env::var(k).ok())
    }

    /// This run's shard from `--shard I/N`, `--shards N` and the environment (`env` reads a
    /// variable): `--shard` wins; `--shards N` takes the index from `JOB_COMPLETION_INDEX`
    /// (Kubernetes sets only that one unless the job spec exports `JOB_COMPLETIONS`); without
    /// either flag, `JOB_COMPLETION_INDEX`/`JOB_COMPLETIONS` decide; with nothing set, the
    /// whole campaign (`Ok(None)`).
    ///
    /// # Errors
    /// A malformed value; `JOB_COMPLETION_INDEX` without a count (neither `--shards` nor
    /// `JOB_COMPLETIONS`); `--shards` without an index; `--shards` and `JOB_COMPLETIONS`
    /// that disagree.
    pub fn resolve(
        shard: Option<&str>,
        shards: Option<u64>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<Shard>, String> {
        if let Some(s) = shard {
            return Shard::parse(s).map(Some);
        }
        let index = env("JOB_COMPLETION_INDEX");
        let completions = env("JOB_COMPLETIONS");
        let count = match (shards, &completions) {
            (Some(0), _) => return Err("--shards must be at least 1".into()),
            (Some(n), Some(c)) if c.trim() != n.to_string() => {
                return Err(format!(
                    "--shards {n} disagrees with JOB_COMPLETIONS={}",
                    one_line(c)
                ))
            }
            (Some(n), _) => Some(n.to_string()),
            (None, c) => c.clone(),
        };
        match (index, count) {
            (Some(i), Some(n)) => Shard::parse(&format!("{i}/{n}"))
                .map(Some)
                .map_err(|e| format!("JOB_COMPLETION_INDEX/shard count: {e}")),
            (Some(_), None) => Err(
                "JOB_COMPLETION_INDEX is set but the number of shards is not known: give \
                 --shards N (the job's completions), export JOB_COMPLETIONS, or give --shard I/N"
                    .into(),
            ),
            (None, Some(_)) if shards.is_some() => Err(
                "--shards N takes this machine's index from JOB_COMPLETION_INDEX, which is not \
                 set: give --shard I/N instead"
                    .into(),
            ),
            (None, _) => Ok(None),
        }
    }

    /// Seed offsets of a range of `seeds` seeds that fall in this shard.
    pub fn seeds_of(&self, seeds: u64) -> u64 {
        if self.index >= seeds {
            0
        } else {
            (seeds - self.index - 1) / self.count + 1
        }
    }
}

/// The outcome of one seed of one cell: one line of `--out results.jsonl`.
///
/// ```json
/// {"cell":0,"cells":2,"algorithm":"central","faults":"pause","first_seed":0,"seeds":300,
///  "seed":5,"checked":["S1","S2","S3","S4"],"violated":["S1","S2"],"grants":14,
///  "faults_applied":2,"settings":"…16 hex…","shard":"0/1","metrics":{…}}
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedRecord {
    /// The campaign file it belongs to (empty for the command-line matrix).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub campaign: String,
    /// A sweep's point (`pause_max=100ms ttl=1s`; empty for campaigns): the knob values this
    /// cell ran with beyond the sweep's own settings.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub point: String,
    /// The cell's index in the campaign (algorithm-major order).
    pub cell: usize,
    /// Cells in the campaign, so that `merge` knows every cell it must see.
    pub cells: usize,
    /// Algorithm name.
    pub algorithm: String,
    /// Fault kind.
    pub faults: FaultKind,
    /// Explicit faults added to every seed's plan (a campaign file's `[[fault]]` entries).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub plan: usize,
    /// The campaign's first seed.
    pub first_seed: u64,
    /// The campaign's seeds per cell: a cell covers `first_seed .. first_seed + seeds`.
    pub seeds: u64,
    /// The seed.
    pub seed: u64,
    /// The properties the checkers judged on this run, in report order (empty when the
    /// simulation failed).
    pub checked: Vec<Property>,
    /// The properties the run violates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub violated: Vec<Property>,
    /// The properties a check could not decide (its budget ran out): never counted as clean.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undecided: Vec<Property>,
    /// The simulation failed (with why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Successful acquires.
    pub grants: u64,
    /// Faults of the run's plan that took effect ([`crate::outcome::faults_applied`]: an
    /// `isolate_leader` that found no leader does not count). Absent in records written
    /// before it was counted, and when the simulation failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults_applied: Option<u64>,
    /// Of those, the faults drawn for the fault kind (not from the explicit plan), written
    /// when the run had an explicit plan ([`crate::applied::kind_faults_applied`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind_applied: Option<u64>,
    /// Faults of the explicit plan aimed by a trigger that never fired in this run
    /// ([`locksim_core::trigger::never_fired`]); absent when none (and in older records).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub never_fired: u64,
    /// A fingerprint of the cell's settings (algorithm knobs, cluster, workload): `merge` and
    /// `--resume` refuse to add up records of one cell made with different settings.
    pub settings: String,
    /// The shard that ran it, `I/N`.
    pub shard: String,
    /// The run's lock metrics (counters and duration histograms, ns), absent when the
    /// simulation failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Aggregate>,
    /// The run's whole scenario, carried by a violating record that was the smallest failing
    /// seed of its cell when it was written (`campaign --out` sets it), so that `merge
    /// --report` can shrink each cell's first failing seed without the campaign's settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<locksim_core::Scenario>,
}

impl SeedRecord {
    /// `true` when the run violates `p`.
    pub fn violates(&self, p: Property) -> bool {
        self.violated.contains(&p)
    }

    /// A 64-bit hash (xxh3) of what the record says about its seed: every field but the
    /// `scenario` it may carry (only a shard's first failing seed of a cell carries one).
    /// Runs are deterministic, so two records of one seed of one campaign that differ here
    /// come from different code or settings, or one was edited: `merge` refuses them.
    pub fn digest(&self) -> u64 {
        let bare = SeedRecord {
            scenario: None,
            ..self.clone()
        };
        let text = serde_json::to_string(&bare).expect("records serialize");
        xxhash_rust::xxh3::xxh3_64(text.as_bytes())
    }
}

/// The result of one cell, folded from its seed records in any order (see [`Summary`]).
///
/// As JSON (`locksim campaign --json`) it is flat: `algorithm`, `faults`, `seeds`, `checked`,
/// then for each checked property `p` (lower case) `p_violations` and `p_undecided` (seeds),
/// `undecided_seeds`, `first_failing_seed`, `first_violation` (`{"S1": seed, …}`),
/// `first_undecided_seed`, `errors`, `first_error_seed`, `first_error`, `grants`,
/// `faults_applied` and `faulted_seeds` (`null` when some record predates their count), the counters
/// of [`Counts`] and the `…_p50_ns`/`…_p99_ns` percentiles (`null` without samples).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellSummary {
    /// Algorithm name.
    pub algorithm: String,
    /// Fault kind.
    pub faults: FaultKind,
    /// Explicit faults added to every seed's plan.
    pub plan: usize,
    /// Seeds run.
    pub seeds: u64,
    /// The properties judged (on any seed of the cell), in report order.
    pub checked: Vec<Property>,
    /// Seeds whose history violates each property; properties no seed violates are absent.
    pub violations: BTreeMap<Property, u64>,
    /// Seeds on which each property was left undecided (a check ran out of budget).
    pub undecided: BTreeMap<Property, u64>,
    /// Seeds on which any property was left undecided.
    pub undecided_seeds: u64,
    /// Smallest seed with any violation.
    pub first_failing_seed: Option<u64>,
    /// Smallest seed violating each property.
    pub first_violation: BTreeMap<Property, u64>,
    /// Smallest seed with an undecided property.
    pub first_undecided_seed: Option<u64>,
    /// Seeds whose simulation failed (an algorithm panicked); never counted as safe.
    pub errors: u64,
    /// Smallest seed whose simulation failed.
    pub first_error_seed: Option<u64>,
    /// Why that seed failed.
    pub first_error: Option<String>,
    /// Client-visible lock grants over all seeds (a liveness indicator).
    pub grants: u64,
    /// Seeds that ran (no error) and granted nothing: a safe verdict there proves nothing, so
    /// they are counted apart from the safe ones.
    pub no_grant_seeds: u64,
    /// Smallest of those seeds.
    pub first_no_grant_seed: Option<u64>,
    /// Faults that took effect over all seeds (see [`crate::outcome::faults_applied`]).
    pub faults_applied: u64,
    /// Seeds in which at least one fault took effect.
    pub faulted_seeds: u64,
    /// For a cell with a fault kind and an explicit plan: the faults drawn for the kind that
    /// took effect over all seeds (the plan's own not counted); `None` when some record does
    /// not say. Equal to `faults_applied` without a plan.
    pub kind_applied: Option<u64>,
    /// Seeds (that ran) whose records do not say how many faults took effect (written before
    /// the count existed): while any, the two counts above are lower bounds and the cell is
    /// never shown `n/a` for them.
    pub faults_unrecorded: u64,
    /// Seeds in which a fault of the explicit plan aimed by a trigger never fired (its event
    /// never came): the plan was not what those seeds tested.
    pub never_fired_seeds: u64,
    /// Lock operations and messages over all seeds: `acquires`, `acquires_ok`,
    /// `acquires_failed`, `acquires_unknown`, `retries`, `expired_while_held` (grants whose
    /// lease, by the client's own deadline, passed while the holder still wrote, renewed or
    /// released under it), `messages_sent`, `messages_dropped`, `acquire_peak_100ms`,
    /// `acquire_peak_100ms_sum`, `acquire_late_peak_100ms_sum`, `peak_runs`, `run_ns`, `fairness_ppm_sum`, `fairness_runs`;
    /// the JSON adds `acquire_rate_per_s`, `acquire_peak_per_s` (the busiest 100 ms of any
    /// seed), `acquire_peak_mean_per_s` (of each seed, the mean), `acquire_late_peak_mean_per_s`
    /// (the same in the second half of each seed: the steady state), `retries_per_grant` and
    /// `grant_fairness` (the mean per run of Jain's index).
    pub counts: Counts,
    /// Median acquire latency (invoke to `ok`), ns, within 1.6%; `None` without grants.
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
    pub metrics: Aggregate,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl CellSummary {
    /// An empty cell of `algorithm` under `faults` (with the campaign's `plan` number): no
    /// seeds, no violations, no grants.
    pub fn new(algorithm: &str, faults: FaultKind, plan: usize) -> CellSummary {
        CellSummary {
            algorithm: algorithm.to_string(),
            faults,
            plan,
            seeds: 0,
            checked: Vec::new(),
            violations: BTreeMap::new(),
            undecided: BTreeMap::new(),
            undecided_seeds: 0,
            first_failing_seed: None,
            first_violation: BTreeMap::new(),
            first_undecided_seed: None,
            errors: 0,
            first_error_seed: None,
            first_error: None,
            grants: 0,
            no_grant_seeds: 0,
            first_no_grant_seed: None,
            faults_applied: 0,
            faulted_seeds: 0,
            kind_applied: Some(0),
            faults_unrecorded: 0,
            never_fired_seeds: 0,
            counts: Counts::default(),
            acquire_latency_p50_ns: None,
            acquire_latency_p99_ns: None,
            wait_p50_ns: None,
            wait_p99_ns: None,
            hold_p50_ns: None,
            hold_p99_ns: None,
            metrics: Aggregate::default(),
        }
    }

    /// Seeds that violate `p`.
    pub fn violated(&self, p: Property) -> u64 {
        self.violations.get(&p).copied().unwrap_or(0)
    }

    /// Seeds on which `p` was left undecided.
    pub fn undecided_on(&self, p: Property) -> u64 {
        self.undecided.get(&p).copied().unwrap_or(0)
    }

    /// The cell's fault column: the kind, `plan` for an explicit plan alone, `KIND+plan` for
    /// both.
    pub fn faults_label(&self) -> String {
        match (self.faults, self.plan) {
            (k, 0) => k.name().to_string(),
            (FaultKind::None, _) => "plan".to_string(),
            (k, _) => format!("{}+plan", k.name()),
        }
    }

    /// `true` when the cell's plans hold faults: a fault kind other than `none`, or an
    /// explicit plan. A `none` cell without a plan is the control group.
    pub fn faults_meant(&self) -> bool {
        self.faults != FaultKind::None || self.plan > 0
    }

    /// `true` when faults were meant ([`CellSummary::faults_meant`]) and not one took effect
    /// in any seed that ran (e.g. `leader-change` against an algorithm without a leader): the
    /// cell tested the fault-free case only, so it is `n/a`, never `safe` nor survived.
    pub fn no_fault_took_effect(&self) -> bool {
        self.faults_meant()
            && self.seeds > self.errors
            && self.faults_unrecorded == 0
            && self.faults_applied == 0
    }

    /// `true` for a cell with a fault kind other than `none` and an explicit plan in which no
    /// fault drawn for the kind took effect (or some record does not say): whatever it
    /// survived, it was the plan, not the kind (`leader-change+plan` against an algorithm
    /// without a leader).
    pub fn kind_untested(&self) -> bool {
        self.faults != FaultKind::None
            && self.plan > 0
            && self.seeds > self.errors
            && self.kind_applied.is_none_or(|n| n == 0)
    }

    /// Seeds that ran and in which no fault took effect, for a cell whose plans hold
    /// faults (0 for the control group, and while some records do not say).
    pub fn unfaulted_seeds(&self) -> u64 {
        if !self.faults_meant() || self.faults_unrecorded > 0 {
            return 0;
        }
        (self.seeds - self.errors).saturating_sub(self.faulted_seeds)
    }

    /// Smallest seed violating one of `properties`.
    pub fn first_violating(&self, properties: &[Property]) -> Option<u64> {
        properties
            .iter()
            .filter_map(|p| self.first_violation.get(p).copied())
            .min()
    }
}

impl Serialize for CellSummary {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("algorithm", &self.algorithm)?;
        m.serialize_entry("faults", &self.faults)?;
        if self.plan > 0 {
            m.serialize_entry("plan", &self.plan)?;
        }
        m.serialize_entry("seeds", &self.seeds)?;
        m.serialize_entry("checked", &self.checked)?;
        for &p in &self.checked {
            let name = p.to_string().to_ascii_lowercase();
            m.serialize_entry(&format!("{name}_violations"), &self.violated(p))?;
            m.serialize_entry(&format!("{name}_undecided"), &self.undecided_on(p))?;
        }
        m.serialize_entry("undecided_seeds", &self.undecided_seeds)?;
        m.serialize_entry("first_failing_seed", &self.first_failing_seed)?;
        m.serialize_entry("first_violation", &self.first_violation)?;
        m.serialize_entry("first_undecided_seed", &self.first_undecided_seed)?;
        m.serialize_entry("errors", &self.errors)?;
        m.serialize_entry("first_error_seed", &self.first_error_seed)?;
        m.serialize_entry("first_error", &self.first_error)?;
        m.serialize_entry("grants", &self.grants)?;
        m.serialize_entry("no_grant_seeds", &self.no_grant_seeds)?;
        m.serialize_entry("first_no_grant_seed", &self.first_no_grant_seed)?;
        let known = |n: u64| (self.faults_unrecorded == 0).then_some(n);
        m.serialize_entry("faults_applied", &known(self.faults_applied))?;
        m.serialize_entry("faulted_seeds", &known(self.faulted_seeds))?;
        if self.plan > 0 {
            m.serialize_entry("kind_faults_applied", &self.kind_applied)?;
            m.serialize_entry("trigger_never_fired_seeds", &self.never_fired_seeds)?;
        }
        // The counters flat beside the rest (as `#[serde(flatten)]` would put them).
        if let Ok(serde_json::Value::Object(counts)) = serde_json::to_value(&self.counts) {
            for (k, v) in counts {
                m.serialize_entry(&k, &v)?;
            }
        }
        // What the herd a retry policy makes shows in: attempts per second on average and in
        // the busiest 100 ms, and how evenly the grants went round (Jain's index).
        m.serialize_entry("acquire_rate_per_s", &self.counts.acquire_rate())?;
        m.serialize_entry("acquire_peak_per_s", &self.counts.acquire_peak_per_s())?;
        m.serialize_entry(
            "acquire_peak_mean_per_s",
            &self.counts.acquire_peak_mean_per_s(),
        )?;
        m.serialize_entry(
            "acquire_late_peak_mean_per_s",
            &self.counts.acquire_late_peak_mean_per_s(),
        )?;
        m.serialize_entry("retries_per_grant", &self.counts.retries_per_grant())?;
        m.serialize_entry("grant_fairness", &self.counts.fairness())?;
        for (k, v) in [
            ("acquire_latency_p50_ns", self.acquire_latency_p50_ns),
            ("acquire_latency_p99_ns", self.acquire_latency_p99_ns),
            ("wait_p50_ns", self.wait_p50_ns),
            ("wait_p99_ns", self.wait_p99_ns),
            ("hold_p50_ns", self.hold_p50_ns),
            ("hold_p99_ns", self.hold_p99_ns),
        ] {
            m.serialize_entry(k, &v)?;
        }
        m.end()
    }
}

/// Per-cell aggregates folded from seed records one at a time, in any order: the same records
/// give the same summaries however they were ordered, sharded or merged. Memory is flat in the
/// number of seeds (counters, histograms and the smallest failing seeds only).
#[derive(Debug, Clone, Default)]
pub struct Summary {
    cells: BTreeMap<usize, CellSummary>,
}

impl Summary {
    /// Adds one seed's record to its cell.
    ///
    /// # Errors
    /// When a total of the cell (seeds, grants, a counter or histogram of its metrics) would
    /// not fit in 64 bits: records read from files may claim any numbers, and a total that
    /// wrapped would be a wrong summary. Nothing is added then.
    pub fn add(&mut self, r: &SeedRecord) -> Result<(), String> {
        let overflow = |what: &str| {
            format!(
                "cell {} ({} × {}): {what} add up past 2^64 at seed {}: a record claims more than any run makes",
                r.cell, r.algorithm, r.faults, r.seed
            )
        };
        let cell = self.cells.get(&r.cell);
        if let Some(c) = cell {
            if c.seeds.checked_add(1).is_none() {
                return Err(overflow("its seeds"));
            }
            if c.grants.checked_add(r.grants).is_none() {
                return Err(overflow("its grants"));
            }
        }
        if let Some(m) = &r.metrics {
            let empty = Aggregate::default();
            cell.map_or(&empty, |c| &c.metrics)
                .check_merge(m)
                .map_err(|what| overflow(&format!("its lock metrics ({what})")))?;
        }
        let c = self
            .cells
            .entry(r.cell)
            .or_insert_with(|| CellSummary::new(&r.algorithm, r.faults, r.plan));
        c.seeds += 1;
        c.grants += r.grants;
        for p in &r.checked {
            if !c.checked.contains(p) {
                c.checked.push(*p);
                c.checked.sort();
            }
        }
        let min = |f: Option<u64>| Some(f.map_or(r.seed, |f| f.min(r.seed)));
        // Per-property counts are at most the cell's seeds, which fit.
        for &p in &r.violated {
            *c.violations.entry(p).or_default() += 1;
            let first = c.first_violation.entry(p).or_insert(r.seed);
            *first = (*first).min(r.seed);
        }
        for &p in &r.undecided {
            *c.undecided.entry(p).or_default() += 1;
        }
        if !r.violated.is_empty() {
            c.first_failing_seed = min(c.first_failing_seed);
        }
        if !r.undecided.is_empty() {
            c.undecided_seeds += 1;
            c.first_undecided_seed = min(c.first_undecided_seed);
        }
        match (r.faults_applied, &r.error) {
            (_, Some(_)) => {}
            (Some(n), None) => {
                c.faults_applied += n;
                c.faulted_seeds += u64::from(n > 0);
                let kind = if r.plan == 0 { Some(n) } else { r.kind_applied };
                c.kind_applied = c.kind_applied.zip(kind).map(|(a, b)| a + b);
            }
            (None, None) => c.faults_unrecorded += 1,
        }
        c.never_fired_seeds += u64::from(r.never_fired > 0);
        if r.grants == 0 && r.error.is_none() {
            c.no_grant_seeds += 1;
            c.first_no_grant_seed = min(c.first_no_grant_seed);
        }
        if let Some(e) = &r.error {
            c.errors += 1;
            if c.first_error_seed.is_none_or(|f| r.seed < f) {
                c.first_error_seed = Some(r.seed);
                c.first_error = Some(e.clone());
            }
        }
        if let Some(m) = &r.metrics {
            c.metrics.merge(m);
        }
        Ok(())
    }

    /// The summaries, by cell index, with their percentiles.
    pub fn cells(&self) -> Vec<CellSummary> {
        self.indexed_cells().into_iter().map(|c| c.1).collect()
    }

    /// The summaries with their cell indexes (a partial merge may lack some cells).
    pub fn indexed_cells(&self) -> Vec<(usize, CellSummary)> {
        let mut cells: Vec<(usize, CellSummary)> =
            self.cells.iter().map(|(i, c)| (*i, c.clone())).collect();
        for (_, c) in &mut cells {
            let m = &c.metrics;
            c.counts = m.counts.clone();
            c.acquire_latency_p50_ns = m.acquire_latency_ns.quantile(0.5);
            c.acquire_latency_p99_ns = m.acquire_latency_ns.quantile(0.99);
            c.wait_p50_ns = m.wait_ns.quantile(0.5);
            c.wait_p99_ns = m.wait_ns.quantile(0.99);
            c.hold_p50_ns = m.hold_ns.quantile(0.5);
            c.hold_p99_ns = m.hold_ns.quantile(0.99);
        }
        cells
    }
}

/// The record of one seed of cell `cell` (setup `a`, fault kind `kind`): runs the scenario and
/// checks it.
fn run_one(spec: &CampaignSpec, cell: usize, kind: FaultKind, a: usize, seed: u64) -> SeedRecord {
    let setup = &spec.setups[a];
    let scenario = setup.scenario(seed, &[kind]);
    let out = check_scenario(&scenario, setup.algo.clone());
    let v = &out.verdict;
    let checked = if out.error.is_some() {
        Vec::new()
    } else {
        check_options_for(&scenario, &*setup.algo).properties()
    };
    SeedRecord {
        campaign: String::new(),
        point: String::new(),
        cell,
        cells: spec.setups.len() * spec.kinds.len(),
        algorithm: setup.algorithm.clone(),
        faults: kind,
        plan: setup.plan.len(),
        first_seed: spec.first_seed,
        seeds: spec.seeds,
        seed,
        checked,
        violated: v.kinds(),
        undecided: v.undecided(),
        error: out.error.clone(),
        grants: out.history.as_ref().map_or(0, grants),
        faults_applied: out.history.as_ref().map(faults_applied),
        kind_applied: out
            .history
            .as_ref()
            .filter(|_| !setup.plan.faults.is_empty())
            .map(|h| crate::applied::kind_faults_applied(h, &scenario.faults, &setup.plan)),
        never_fired: out.history.as_ref().map_or(0, |h| {
            locksim_core::trigger::never_fired(&scenario.faults, h, &scenario.cluster).len() as u64
        }),
        settings: fingerprint(setup),
        shard: String::new(),
        metrics: out.history.as_ref().map(|h| Metrics::of(h).aggregate()),
        scenario: None,
    }
}

/// Runs this shard of the campaign on `spec.jobs` worker threads, each seed on a fresh thread,
/// and hands every record to `each` as its seed finishes (from the workers, in completion
/// order). Seeds for which `skip(cell, seed)` is `true` are not run (`--resume`).
/// `progress(done, total)` is called after each seed, `total` counting the seeds to run.
/// Nothing is kept per seed: memory is flat in the number of seeds.
///
/// # Errors
/// The first error `each` returns (e.g. a full disk while streaming records to a file): the
/// workers then stop taking seeds, and the seeds in flight finish without being reported.
pub fn run_each(
    spec: &CampaignSpec,
    shard: Shard,
    skip: &(dyn Fn(usize, u64) -> bool + Sync),
    each: &(dyn Fn(SeedRecord) -> Result<(), String> + Sync),
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<(), String> {
    let cells: Vec<(usize, FaultKind)> = (0..spec.setups.len())
        .flat_map(|a| spec.kinds.iter().map(move |&k| (a, k)))
        .collect();
    let per_cell = shard.seeds_of(spec.seeds);
    let jobs = cells.len() as u64 * per_cell;
    // Job i is seed offset `index + (i % per_cell) * count` of cell `i / per_cell`: the
    // list of jobs is never built, so memory does not grow with the seed range.
    let job = |i: u64| -> (usize, u64) {
        let cell = (i / per_cell) as usize;
        let seed = spec.first_seed + shard.index + (i % per_cell) * shard.count;
        (cell, seed)
    };
    let total = (0..jobs)
        .filter(|&i| {
            let (c, s) = job(i);
            !skip(c, s)
        })
        .count() as u64;
    let shard_name = format!("{}/{}", shard.index, shard.count);
    let (next, done) = (AtomicU64::new(0), AtomicU64::new(0));
    let failed: Mutex<Option<String>> = Mutex::new(None);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        for _ in 0..spec.jobs.max(1) {
            s.spawn(|| loop {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= jobs {
                    return;
                }
                let (cell, seed) = job(i);
                if skip(cell, seed) {
                    continue;
                }
                let (a, kind) = cells[cell];
                let mut record = run_one(spec, cell, kind, a, seed);
                record.shard = shard_name.clone();
                if let Err(e) = each(record) {
                    stop.store(true, Ordering::Relaxed);
                    failed
                        .lock()
                        .expect("no worker panics while holding it")
                        .get_or_insert(e);
                    return;
                }
                progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
            });
        }
    });
    match failed.into_inner().expect("workers finished") {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Runs this shard of the campaign and returns every record, sorted by cell, then seed
/// (`progress(done, total)` after each seed). Keeps every record in memory; campaigns that
/// only need the summary use [`run_campaign`] or [`run_each`].
pub fn run_seeds(
    spec: &CampaignSpec,
    shard: Shard,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Vec<SeedRecord> {
    let records = Mutex::new(Vec::new());
    run_each(
        spec,
        shard,
        &|_, _| false,
        &|r| {
            records.lock().expect("no panics while held").push(r);
            Ok(())
        },
        progress,
    )
    .expect("collecting never fails");
    let mut records = records.into_inner().expect("workers finished");
    records.sort_by_key(|r| (r.cell, r.seed));
    records
}

/// Folds one campaign's seed records (from one run or merged shards) into per-cell summaries,
/// by cell index.
pub fn summarize(records: &[SeedRecord]) -> Vec<CellSummary> {
    let mut s = Summary::default();
    for r in records {
        s.add(r)
            .expect("a campaign's own records have totals within 64 bits");
    }
    s.cells()
}

/// Runs the whole campaign and summarizes it, keeping only the per-cell aggregates (memory
/// flat in the number of seeds).
pub fn run_campaign(spec: &CampaignSpec, progress: &(dyn Fn(u64, u64) + Sync)) -> Vec<CellSummary> {
    let summary = Mutex::new(Summary::default());
    run_each(
        spec,
        Shard::ALL,
        &|_, _| false,
        &|r| summary.lock().expect("no panics while held").add(&r),
        progress,
    )
    .expect("summarizing never fails");
    summary.into_inner().expect("workers finished").cells()
}

/// A short stable hash of what a setup runs (algorithm, knobs, cluster, workload, and the
/// explicit plan and fault shapes when they are not the defaults).
pub fn fingerprint(setup: &Setup) -> String {
    let text = if !setup.shape.is_default() {
        serde_json::to_string(&(
            &setup.algorithm,
            &setup.config,
            &setup.cluster,
            &setup.workload,
            &setup.plan,
            &setup.shape,
        ))
    } else if setup.plan.is_empty() {
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

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod no_grant_tests {
    use super::*;

    fn record(seed: u64, grants: u64, error: bool) -> SeedRecord {
        let mut r: SeedRecord = serde_json::from_str(
            r#"{"cell":0,"cells":1,"algorithm":"consul-session","faults":"pause","first_seed":0,
                "seeds":4,"seed":0,"checked":["S1"],"grants":0,"faults_applied":1,
                "settings":"0000000000000000","shard":"0/1"}"#,
        )
        .expect("a record");
        r.seed = seed;
        r.grants = grants;
        if error {
            r.error = Some("panicked".into());
        }
        r
    }

    /// Issue #46, item 5: a seed that ran and granted nothing is counted apart (it proves
    /// nothing); a seed that failed to run is an error, not such a seed.
    #[test]
    fn seeds_that_granted_nothing_are_counted_apart() {
        let mut s = Summary::default();
        for r in [
            record(3, 0, false),
            record(1, 5, false),
            record(2, 0, false),
            record(0, 0, true),
        ] {
            s.add(&r).unwrap();
        }
        let c = &s.cells()[0];
        assert_eq!((c.seeds, c.grants), (4, 5));
        assert_eq!((c.no_grant_seeds, c.first_no_grant_seed), (2, Some(2)));
        let j = serde_json::to_value(c).unwrap();
        assert_eq!(j["no_grant_seeds"], 2);
        assert_eq!(j["first_no_grant_seed"], 2);
    }
}
