//! Lock metrics of a history: what operators of a lock service watch.
//!
//! Everything is derived from the history (and, for messages, the simulator's counters that
//! the history carries); durations are true-time nanoseconds.
//!
//! - **acquire latency**: from an acquire's `invoke` to its `ok` (successful attempts only);
//! - **wait time**: from the first acquire attempt of a round to the `ok` that ends it — a
//!   round is a client's run of attempts with no grant in between, so retries count in it;
//! - **hold time**: the length of each hold interval ([`crate::holds`]);
//! - **expired while held**: grants whose lease (the client's own validity deadline, moved by
//!   renewals) passed while the client still believed it held: it wrote, renewed or released
//!   under the grant after the deadline without having noticed the loss before it;
//! - **failed acquires** (`fail`: definitely not granted) and **unknown acquires** (`info`:
//!   timeouts), **retries** (attempts after a failed or unknown one in the same round), and
//!   **messages** sent and dropped by the network's fault rules;
//! - **waiting** and **waiting while free**: per key, the true time in which some client was
//!   waiting for the lock (a round, from its first attempt to the grant that ends it, or to its
//!   last attempt's answer), and the part of it in which nobody held the key (no hold
//!   interval: the lock was free, or expiring at the service after its holder stopped). A
//!   waiter kept waiting while the lock is held for long is not starved; one refused while
//!   nobody holds it is ([`Counts::starved`]).
//!
//! [`Metrics`] keeps a run's samples exactly; [`Aggregate`] folds many runs (a campaign cell,
//! shards merged later) into counters and log-bucketed [`Histogram`]s, whose percentiles are
//! within 1.6% of the exact value.

use std::collections::BTreeMap;

use locksim_core::history::{EventKind, OpF, Phase};
use locksim_core::{Fault, History, Nanos, NodeId};
use serde::{Deserialize, Serialize};

use crate::holds::derive_holds;

/// Counters of lock operations and messages, for one run or many added up.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Acquire attempts (invokes).
    pub acquires: u64,
    /// Attempts that completed `ok`: grants.
    pub acquires_ok: u64,
    /// Attempts that completed `fail` (definitely not granted).
    pub acquires_failed: u64,
    /// Attempts that completed `info` (unknown outcome, e.g. a timeout) or never completed.
    pub acquires_unknown: u64,
    /// Attempts made after a failed or unknown attempt of the same round.
    pub retries: u64,
    /// Grants whose lease passed while the holder still acted on it (see the module docs).
    pub expired_while_held: u64,
    /// Messages the network was asked to send.
    pub messages_sent: u64,
    /// Messages dropped by fault rules.
    pub messages_dropped: u64,
    /// True time in which some client was waiting for a key, summed over keys, ns (see the
    /// module docs). Absent from records written before it existed: 0.
    #[serde(default)]
    pub waiting_ns: u64,
    /// The part of `waiting_ns` in which nobody held the key, ns.
    #[serde(default)]
    pub waiting_free_ns: u64,
    /// Writes the resource accepted (S2 judges only what reached it).
    #[serde(default)]
    pub writes_accepted: u64,
    /// Runs that counted `writes_accepted` (records written before it existed did not: a
    /// sum over runs says "no write was accepted" only when every run counted).
    #[serde(default)]
    pub writes_counted: u64,
    /// The most acquire attempts the service saw in any 100 ms of true time, over the runs
    /// (the herd a retry policy without jitter makes); [`Counts::add`] keeps the largest.
    /// Absent from records written before it existed: 0.
    #[serde(default)]
    pub acquire_peak_100ms: u64,
    /// Each run's busiest 100 ms (as `acquire_peak_100ms` counts it), summed over the runs:
    /// over `peak_runs`, the mean per run ([`Counts::acquire_peak_mean_per_s`]), which does not
    /// grow with the number of seeds as the largest does. Absent from older records: 0.
    #[serde(default)]
    pub acquire_peak_100ms_sum: u64,
    /// Each run's busiest 100 ms in the second half of its true time, summed over the runs:
    /// the steady state, after the burst of every client's first attempts at the start (which
    /// every retry policy shares); a policy without jitter keeps its herd there, one with
    /// jitter has spread it. Over `peak_runs`, [`Counts::acquire_late_peak_mean_per_s`].
    /// Absent from older records: 0.
    #[serde(default)]
    pub acquire_late_peak_100ms_sum: u64,
    /// Runs counted in `acquire_peak_100ms_sum` and `acquire_late_peak_100ms_sum`.
    #[serde(default)]
    pub peak_runs: u64,
    /// True time the runs lasted (to their end), summed, ns: acquires per second is
    /// `acquires` over it.
    #[serde(default)]
    pub run_ns: u64,
    /// Jain's fairness index of each run's grants per client (the clients that asked), in
    /// parts per million, summed over the runs that had grants; with `fairness_runs`, the
    /// mean per run ([`Counts::fairness`]).
    #[serde(default)]
    pub fairness_ppm_sum: u64,
    /// Runs counted in `fairness_ppm_sum`.
    #[serde(default)]
    pub fairness_runs: u64,
    /// Runs with grants (acquire `ok`) in which the service recorded no `grant` event: S2 and
    /// S4 then order grants by the clients' `ok` rather than by the service's decision, and
    /// can raise false alarms (an algorithm of one's own that does not record
    /// `EventKind::Grant`). Absent from records written before it existed: 0.
    #[serde(default)]
    pub runs_without_grant_records: u64,
}

impl Counts {
    /// Adds `other` to these counters.
    pub fn add(&mut self, other: &Counts) {
        self.acquires += other.acquires;
        self.acquires_ok += other.acquires_ok;
        self.acquires_failed += other.acquires_failed;
        self.acquires_unknown += other.acquires_unknown;
        self.retries += other.retries;
        self.expired_while_held += other.expired_while_held;
        self.messages_sent += other.messages_sent;
        self.messages_dropped += other.messages_dropped;
        self.waiting_ns += other.waiting_ns;
        self.waiting_free_ns += other.waiting_free_ns;
        self.writes_accepted += other.writes_accepted;
        self.writes_counted += other.writes_counted;
        self.acquire_peak_100ms = self.acquire_peak_100ms.max(other.acquire_peak_100ms);
        self.acquire_peak_100ms_sum += other.acquire_peak_100ms_sum;
        self.acquire_late_peak_100ms_sum += other.acquire_late_peak_100ms_sum;
        self.peak_runs += other.peak_runs;
        self.run_ns += other.run_ns;
        self.fairness_ppm_sum += other.fairness_ppm_sum;
        self.fairness_runs += other.fairness_runs;
        self.runs_without_grant_records += other.runs_without_grant_records;
    }

    /// Acquire attempts per second of true time, over the runs (`None` without a run).
    pub fn acquire_rate(&self) -> Option<f64> {
        (self.run_ns > 0).then(|| self.acquires as f64 * 1e9 / self.run_ns as f64)
    }

    /// The busiest 100 ms's acquire attempts, per second (`None` without a run).
    pub fn acquire_peak_per_s(&self) -> Option<u64> {
        (self.run_ns > 0).then_some(self.acquire_peak_100ms * 10)
    }

    /// The mean over the runs of each run's busiest 100 ms of acquire attempts, per second
    /// (`None` without a run that counted it).
    pub fn acquire_peak_mean_per_s(&self) -> Option<f64> {
        (self.peak_runs > 0)
            .then(|| self.acquire_peak_100ms_sum as f64 * 10.0 / self.peak_runs as f64)
    }

    /// The mean over the runs of each run's busiest 100 ms in its second half, per second
    /// (`None` without a run that counted it).
    pub fn acquire_late_peak_mean_per_s(&self) -> Option<f64> {
        (self.peak_runs > 0)
            .then(|| self.acquire_late_peak_100ms_sum as f64 * 10.0 / self.peak_runs as f64)
    }

    /// Attempts after a failed or unknown attempt of the same round, per grant (`None`
    /// without a grant).
    pub fn retries_per_grant(&self) -> Option<f64> {
        (self.acquires_ok > 0).then(|| self.retries as f64 / self.acquires_ok as f64)
    }

    /// The mean over the runs of Jain's fairness index of a run's grants per client,
    /// `(Σx)² / (n·Σx²)` over the `n` clients that asked: 1 when every client got as many
    /// grants, `1/n` when one got them all (R. Jain, D. Chiu, W. Hawe, "A Quantitative Measure
    /// of Fairness and Discrimination", DEC-TR-301, 1984). `None` without a run with grants.
    pub fn fairness(&self) -> Option<f64> {
        (self.fairness_runs > 0)
            .then(|| self.fairness_ppm_sum as f64 / self.fairness_runs as f64 / 1e6)
    }

    /// Whether these counters, summed over `runs` runs that had grants, show that no write
    /// ever reached the resource: S2 (stale writes) then proves nothing (a zero is not a pass).
    /// `false` when some run did not count its writes (an older record).
    pub fn no_write_accepted(&self, runs: u64) -> bool {
        runs > 0 && self.acquires_ok > 0 && self.writes_counted >= runs && self.writes_accepted == 0
    }

    /// Whether these counters show starvation: clients asked for the lock and it was seldom
    /// given to anyone while they waited — more than half of the time they spent waiting,
    /// nobody held the lock (it was free, or expiring after its holder stopped). A run or
    /// cell with attempts and no waiting recorded (counters from before `waiting_ns` existed)
    /// falls back to fewer than 1% of the acquire attempts succeeding. Few grants because one
    /// holder holds for long is not starvation: the waiters waited while the lock was held.
    pub fn starved(&self) -> bool {
        if self.acquires == 0 {
            return false;
        }
        if self.waiting_ns == 0 {
            return self.acquires_ok * 100 < self.acquires;
        }
        self.waiting_free_ns * 2 > self.waiting_ns
    }

    /// Whether [`Counts::add`] of `other` keeps every counter within `u64`.
    pub fn fits(&self, other: &Counts) -> bool {
        [
            (self.acquires, other.acquires),
            (self.acquires_ok, other.acquires_ok),
            (self.acquires_failed, other.acquires_failed),
            (self.acquires_unknown, other.acquires_unknown),
            (self.retries, other.retries),
            (self.expired_while_held, other.expired_while_held),
            (self.messages_sent, other.messages_sent),
            (self.messages_dropped, other.messages_dropped),
            (self.writes_accepted, other.writes_accepted),
            (self.writes_counted, other.writes_counted),
            (self.run_ns, other.run_ns),
            (self.fairness_ppm_sum, other.fairness_ppm_sum),
            (self.fairness_runs, other.fairness_runs),
            (self.acquire_peak_100ms_sum, other.acquire_peak_100ms_sum),
            (
                self.acquire_late_peak_100ms_sum,
                other.acquire_late_peak_100ms_sum,
            ),
            (self.peak_runs, other.peak_runs),
            (
                self.runs_without_grant_records,
                other.runs_without_grant_records,
            ),
        ]
        .iter()
        .all(|(a, b)| a.checked_add(*b).is_some())
    }
}

/// The most of the (ascending) `times` within any window of `window` ns: a sliding window
/// over the sorted times, each window starting at one of them.
fn peak_in_window(times: &[Nanos], window: Nanos) -> u64 {
    let mut start = 0;
    let mut best = 0;
    for (end, &t) in times.iter().enumerate() {
        while t.saturating_sub(times[start]) >= window {
            start += 1;
        }
        best = best.max(end + 1 - start);
    }
    best as u64
}

/// One run's metrics, with every sample (sorted ascending, ns).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metrics {
    /// The run's counters.
    pub counts: Counts,
    /// Acquire latency of each grant, ns, sorted.
    pub acquire_latency: Vec<Nanos>,
    /// Wait time of each round that ended with a grant, ns, sorted.
    pub wait: Vec<Nanos>,
    /// Length of each hold interval, ns, sorted.
    pub hold: Vec<Nanos>,
}

/// The nearest-rank `q`-quantile (`0 < q <= 1`) of sorted samples, `None` when there are none.
pub fn quantile(sorted: &[Nanos], q: f64) -> Option<Nanos> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

impl Metrics {
    /// Computes the metrics of `history`.
    pub fn of(history: &History) -> Metrics {
        let mut m = Metrics::default();
        let c = &mut m.counts;
        c.messages_sent = history.messages_sent;
        c.messages_dropped = history.messages_dropped;
        c.writes_counted = 1;
        c.writes_accepted = history
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::WriteAccepted { .. }))
            .count() as u64;
        // Per client: start of the current round, and whether its last attempt failed.
        let mut round: BTreeMap<NodeId, (Nanos, bool)> = BTreeMap::new();
        // Acquire invokes by operation id, until they complete.
        let mut open: BTreeMap<u64, Nanos> = BTreeMap::new();
        // Per grant: (last write/extend/release invoke, lost time).
        let mut acted: BTreeMap<u64, (Nanos, Option<Nanos>)> = BTreeMap::new();
        let (mut latency, mut wait) = (Vec::new(), Vec::new());
        // Acquire invoke times, in history order (true time never goes back).
        let mut invokes: Vec<Nanos> = Vec::new();
        // Grants per client that asked, for the fairness index.
        let mut grants_of: BTreeMap<NodeId, u64> = BTreeMap::new();
        let mut grant_recorded = false;
        for e in &history.events {
            match &e.kind {
                EventKind::Grant { .. } => grant_recorded = true,
                EventKind::Op {
                    op,
                    phase,
                    f: OpF::Acquire,
                    ..
                } => match phase {
                    Phase::Invoke => {
                        c.acquires += 1;
                        invokes.push(e.time);
                        grants_of.entry(e.node).or_default();
                        open.insert(*op, e.time);
                        let r = round.entry(e.node).or_insert((e.time, false));
                        if r.1 {
                            c.retries += 1;
                        } else {
                            *r = (e.time, false);
                        }
                    }
                    Phase::Ok => {
                        c.acquires_ok += 1;
                        *grants_of.entry(e.node).or_default() += 1;
                        if let Some(start) = open.remove(op) {
                            latency.push(e.time.saturating_sub(start));
                        }
                        if let Some((start, _)) = round.remove(&e.node) {
                            wait.push(e.time.saturating_sub(start));
                        }
                    }
                    Phase::Fail | Phase::Info => {
                        if *phase == Phase::Fail {
                            c.acquires_failed += 1;
                        } else {
                            c.acquires_unknown += 1;
                        }
                        open.remove(op);
                        if let Some(r) = round.get_mut(&e.node) {
                            r.1 = true;
                        }
                    }
                },
                EventKind::Op {
                    phase: Phase::Invoke,
                    f: OpF::Write | OpF::Extend | OpF::Release,
                    handle: Some(h),
                    ..
                } => {
                    let a = acted.entry(*h).or_insert((e.time, None));
                    a.0 = a.0.max(e.time);
                }
                EventKind::Lost { handle, .. } => {
                    let a = acted.entry(*handle).or_insert((0, None));
                    a.1.get_or_insert(e.time);
                }
                EventKind::Fault {
                    fault: Fault::Crash { node, .. },
                } => {
                    // A crashed client starts afresh; its open round is over.
                    round.remove(node);
                }
                _ => {}
            }
        }
        c.runs_without_grant_records = u64::from(c.acquires_ok > 0 && !grant_recorded);
        c.acquire_peak_100ms = peak_in_window(&invokes, 100_000_000);
        c.acquire_peak_100ms_sum = c.acquire_peak_100ms;
        let late = invokes.partition_point(|&t| t < history.end / 2);
        c.acquire_late_peak_100ms_sum = peak_in_window(&invokes[late..], 100_000_000);
        c.peak_runs = 1;
        c.run_ns = history.end;
        let (n, sum, squares) = grants_of.values().fold((0.0, 0.0, 0.0), |(n, s, q), &x| {
            let x = x as f64;
            (n + 1.0, s + x, q + x * x)
        });
        if sum > 0.0 {
            c.fairness_ppm_sum = (sum * sum / (n * squares) * 1e6).round() as u64;
            c.fairness_runs = 1;
        }
        // Attempts still open at the end never completed: their outcome is unknown.
        c.acquires_unknown += open.len() as u64;
        let holds = derive_holds(history);
        (c.waiting_ns, c.waiting_free_ns) = waiting(history, &holds);
        let mut hold = Vec::new();
        for h in holds {
            hold.push(h.end.saturating_sub(h.start));
            let Some(deadline) = h.deadline else { continue };
            if let Some(&(last, lost)) = acted.get(&h.handle) {
                if last > deadline && lost.is_none_or(|l| l > deadline) {
                    c.expired_while_held += 1;
                }
            }
        }
        for v in [&mut latency, &mut wait, &mut hold] {
            v.sort_unstable();
        }
        m.acquire_latency = latency;
        m.wait = wait;
        m.hold = hold;
        m
    }

    /// The run's counters and histograms, to add up with other runs.
    pub fn aggregate(&self) -> Aggregate {
        let hist = |v: &[Nanos]| {
            let mut h = Histogram::default();
            v.iter().for_each(|&x| h.record(x));
            h
        };
        Aggregate {
            runs: 1,
            counts: self.counts.clone(),
            acquire_latency_ns: hist(&self.acquire_latency),
            wait_ns: hist(&self.wait),
            hold_ns: hist(&self.hold),
        }
    }
}

/// Per key, the union of the clients' waiting windows (a round: from its first acquire attempt
/// to the `ok` that ends it, or to the answer of its last attempt, or the end of the run while
/// one is pending) and the part of it outside every hold interval: `(waiting, free)`, ns,
/// summed over keys.
fn waiting(history: &History, holds: &[crate::Hold]) -> (u64, u64) {
    // Per client: (key, round start, end so far).
    let mut open: BTreeMap<NodeId, (u32, Nanos, Nanos)> = BTreeMap::new();
    let mut windows: BTreeMap<u32, Vec<(Nanos, Nanos)>> = BTreeMap::new();
    for e in &history.events {
        match &e.kind {
            EventKind::Op {
                phase,
                f: OpF::Acquire,
                key,
                ..
            } => match phase {
                Phase::Invoke => {
                    let r = open.entry(e.node).or_insert((*key, e.time, e.time));
                    r.2 = history.end.max(e.time);
                }
                Phase::Ok => {
                    if let Some((k, start, _)) = open.remove(&e.node) {
                        windows.entry(k).or_default().push((start, e.time));
                    }
                }
                Phase::Fail | Phase::Info => {
                    if let Some(r) = open.get_mut(&e.node) {
                        r.2 = e.time;
                    }
                }
            },
            EventKind::Fault {
                fault: Fault::Crash { node, .. },
            } => {
                if let Some((k, start, end)) = open.remove(node) {
                    windows.entry(k).or_default().push((start, end.min(e.time)));
                }
            }
            _ => {}
        }
    }
    for (k, start, end) in open.into_values() {
        windows.entry(k).or_default().push((start, end));
    }
    let (mut waiting, mut free) = (0, 0);
    for (key, w) in windows {
        let w = union(w);
        let held = union(
            holds
                .iter()
                .filter(|h| h.key == key)
                .map(|h| (h.start, h.end))
                .collect(),
        );
        // Both lists are sorted and disjoint: one sweep.
        let mut i = 0;
        for &(s, e) in &w {
            waiting += e - s;
            while i < held.len() && held[i].1 <= s {
                i += 1;
            }
            let mut covered = 0;
            let mut j = i;
            while j < held.len() && held[j].0 < e {
                covered += held[j].1.min(e) - held[j].0.max(s);
                j += 1;
            }
            free += (e - s) - covered;
        }
    }
    (waiting, free)
}

/// The union of intervals `[start, end)`, sorted and disjoint.
fn union(mut v: Vec<(Nanos, Nanos)>) -> Vec<(Nanos, Nanos)> {
    v.retain(|&(s, e)| e > s);
    v.sort_unstable();
    let mut out: Vec<(Nanos, Nanos)> = Vec::with_capacity(v.len());
    for (s, e) in v {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// A histogram of durations in logarithmic buckets: values below 64 ns exactly, then 32
/// buckets per power of two, so a bucket's midpoint is within 1/64 (1.6%) of any value in it.
/// Serialized as `{"bucket": count}`, sparse. Merging adds counts, so the percentiles of a
/// campaign do not depend on how its seeds were split into shards.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Histogram {
    buckets: BTreeMap<u32, u64>,
}

const SUB_BITS: u32 = 5;

fn bucket_of(v: u64) -> u32 {
    if v < 64 {
        return v as u32;
    }
    let e = 63 - v.leading_zeros(); // >= 6
    let m = ((v >> (e - SUB_BITS)) & ((1 << SUB_BITS) - 1)) as u32;
    64 + (e - 6) * (1 << SUB_BITS) + m
}

/// The value a bucket stands for: its midpoint.
fn value_of(b: u32) -> u64 {
    if b < 64 {
        return b as u64;
    }
    let e = (b - 64) / (1 << SUB_BITS) + 6;
    let m = ((b - 64) % (1 << SUB_BITS)) as u64;
    let width = 1u64 << (e - SUB_BITS);
    let low = (1u64 << e) + m * width;
    low + width / 2
}

impl Histogram {
    /// Adds one sample, ns.
    pub fn record(&mut self, v: Nanos) {
        *self.buckets.entry(bucket_of(v)).or_insert(0) += 1;
    }
    /// Adds every sample of `other`.
    pub fn merge(&mut self, other: &Histogram) {
        for (&b, &n) in &other.buckets {
            *self.buckets.entry(b).or_insert(0) += n;
        }
    }
    /// Whether [`Histogram::merge`] of `other` keeps every bucket and the number of samples
    /// within `u64` (a histogram read from a file may claim any counts).
    pub fn fits(&self, other: &Histogram) -> bool {
        let total = |h: &Histogram| {
            h.buckets
                .values()
                .try_fold(0u64, |sum, &n| sum.checked_add(n))
        };
        let buckets_fit = other.buckets.iter().all(|(b, &n)| {
            self.buckets
                .get(b)
                .is_none_or(|&have| have.checked_add(n).is_some())
        });
        match (total(self), total(other)) {
            (Some(a), Some(b)) => buckets_fit && a.checked_add(b).is_some(),
            _ => false,
        }
    }
    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.buckets.values().sum()
    }
    /// The nearest-rank `q`-quantile (`0 < q <= 1`), ns, to within 1.6%; `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<Nanos> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
        let mut seen = 0;
        for (&b, &c) in &self.buckets {
            seen += c;
            if seen >= rank {
                return Some(value_of(b));
            }
        }
        None
    }
}

/// Metrics of many runs added up: counters and histograms (durations in ns).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Aggregate {
    /// Runs added.
    pub runs: u64,
    /// The counters, added up.
    #[serde(flatten)]
    pub counts: Counts,
    /// Acquire latency, ns.
    pub acquire_latency_ns: Histogram,
    /// Wait time per round, ns.
    pub wait_ns: Histogram,
    /// Hold time per grant, ns.
    pub hold_ns: Histogram,
}

impl Aggregate {
    /// Adds `other` to this.
    pub fn merge(&mut self, other: &Aggregate) {
        self.runs += other.runs;
        self.counts.add(&other.counts);
        self.acquire_latency_ns.merge(&other.acquire_latency_ns);
        self.wait_ns.merge(&other.wait_ns);
        self.hold_ns.merge(&other.hold_ns);
    }

    /// Whether [`Aggregate::merge`] of `other` keeps every total within `u64` (records read
    /// from files may claim any counts; a sum that wrapped would be a wrong summary, not a
    /// big one).
    ///
    /// # Errors
    /// `"the number of runs"`, `"a counter"` or `"a histogram"`: the total that would overflow.
    pub fn check_merge(&self, other: &Aggregate) -> Result<(), &'static str> {
        if self.runs.checked_add(other.runs).is_none() {
            return Err("the number of runs");
        }
        if !self.counts.fits(&other.counts) {
            return Err("a counter");
        }
        if !(self.acquire_latency_ns.fits(&other.acquire_latency_ns)
            && self.wait_ns.fits(&other.wait_ns)
            && self.hold_ns.fits(&other.hold_ns))
        {
            return Err("a histogram");
        }
        Ok(())
    }

    /// [`Aggregate::merge`] after [`Aggregate::check_merge`]: on an error nothing is added.
    ///
    /// # Errors
    /// As [`Aggregate::check_merge`].
    pub fn try_merge(&mut self, other: &Aggregate) -> Result<(), &'static str> {
        self.check_merge(other)?;
        self.merge(other);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_merge_that_would_wrap_is_refused_and_adds_nothing() {
        let mut big = Aggregate::default();
        big.counts.messages_sent = u64::MAX - 1;
        let mut one = Aggregate::default();
        one.counts.messages_sent = 2;
        let before = big.clone();
        assert_eq!(big.try_merge(&one), Err("a counter"));
        assert_eq!(big, before, "nothing added");
        one.counts.messages_sent = 1;
        assert_eq!(big.try_merge(&one), Ok(()));
        assert_eq!(big.counts.messages_sent, u64::MAX);
        // Buckets that each fit but whose samples together do not.
        let h: Histogram =
            serde_json::from_str(&format!("{{\"1\":{},\"2\":2}}", u64::MAX - 1)).unwrap();
        let mut a = Aggregate::default();
        let b = Aggregate {
            hold_ns: h,
            ..Default::default()
        };
        assert_eq!(a.try_merge(&b), Err("a histogram"));
        let runs = Aggregate {
            runs: u64::MAX,
            ..Default::default()
        };
        a.runs = 1;
        assert_eq!(a.try_merge(&runs), Err("the number of runs"));
    }

    #[test]
    fn buckets_are_within_two_percent_and_ordered() {
        let mut last = 0;
        for v in 0..200_000u64 {
            let b = bucket_of(v);
            assert!(b >= last, "buckets grow with values: {v}");
            last = b;
        }
        for v in (0..200_000u64).chain((1..60).map(|e| (1u64 << e) + 12345)) {
            let b = bucket_of(v);
            let m = value_of(b) as f64;
            assert!(
                (m - v as f64).abs() <= (v as f64) / 64.0 + 0.5,
                "{v} -> bucket {b} -> {m}"
            );
        }
    }

    #[test]
    fn histogram_quantiles_follow_exact_ones() {
        let samples: Vec<u64> = (1..=1000).map(|i| i * 1_000_000).collect();
        let mut h = Histogram::default();
        samples.iter().for_each(|&s| h.record(s));
        for q in [0.5, 0.99, 1.0] {
            let exact = quantile(&samples, q).unwrap() as f64;
            let approx = h.quantile(q).unwrap() as f64;
            assert!(
                (approx - exact).abs() <= exact / 64.0,
                "q{q}: {approx} vs {exact}"
            );
        }
        assert_eq!(quantile(&samples, 0.5), Some(500_000_000));
        assert_eq!(Histogram::default().quantile(0.5), None);
    }
}
