//! `locksim hunt`: a search over fault plans that stops at the first run violating a property.
//!
//! Three searches, measured by the same code so that they can be compared run for run:
//!
//! - [`Search::Random`] runs seeds `first_seed`, `first_seed + 1`, … as a campaign does;
//! - [`Search::Swarm`] runs the same seeds, each under a plan of its own: a random subset of
//!   the cell's fault kinds at random intensities, drawn from the seed (see [`swarm`]);
//! - [`Search::Guided`] runs the random search's seeds in order and, after the first
//!   [`WARMUP`], one run in [`EXTRA`] of something else: a mutant of a corpus of runs that
//!   did something new for the lock (see [`feedback`]: abstract lock states and event pairs no
//!   earlier run showed, or a nearer miss), most of them aimed at the lock's own moments (see
//!   [`mutate`]), or a swarm run, by which has come nearer a violation more often
//!   ([`Share`]). It reaches the random search's find within 6/5 of its runs, whatever the
//!   extras are worth.
//!
//! Candidates are made in batches of [`BATCH`] from the state the previous batches left, run
//! on `jobs` threads, and judged in the order they were made, so the search path — and the
//! find — depend on `first_seed` alone, never on `jobs` or timing. Every candidate is an
//! ordinary scenario (a seed and an explicit plan): a find replays, shrinks and renders like a
//! campaign's.

pub mod chart;
pub mod feedback;
pub mod mutate;
pub mod report;
pub mod swarm;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use locksim_core::{FaultKind, History, Nanos, Property, Scenario, Verdict};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::outcome::check_scenario;
use crate::setup::Setup;
use feedback::Feedback;
use mutate::Mutation;

/// Candidates made and run together (fixed, so that the search path does not depend on the
/// number of threads).
pub const BATCH: usize = 8;
/// Fresh seeds the guided search runs before it mutates anything.
pub const WARMUP: u64 = 16;
/// Mutants drawn for one candidate before a fresh seed takes its place.
const MUTANT_TRIES: usize = 8;

/// A scenario as JSON: what the search path's digest reads, and what recognises a candidate
/// already run (by its xxh3).
fn json(s: &Scenario) -> String {
    serde_json::to_string(s).expect("scenarios serialize")
}

/// How candidates are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Search {
    /// Seeds in order, as a campaign runs them.
    Random,
    /// The random search's seeds with, one run in [`EXTRA`], a mutant aimed at the lock's
    /// moments or a swarm run.
    Guided,
    /// Seeds in order, each under a plan of a random subset of the kinds at random
    /// intensities (see [`swarm`]).
    Swarm,
}

impl Search {
    /// `random` or `guided`.
    pub fn name(self) -> &'static str {
        match self {
            Search::Random => "random",
            Search::Guided => "guided",
            Search::Swarm => "swarm",
        }
    }
}

/// What to hunt for, and where.
pub struct Hunt {
    /// The algorithm, its settings and explicit plan.
    pub setup: Setup,
    /// Fault kinds the fresh seeds' plans are drawn from (and added faults, for the guided
    /// search).
    pub kinds: Vec<FaultKind>,
    /// The property to violate; `None`: any S1–S4 (or L1–L3 where the run judges them).
    pub property: Option<Property>,
    /// Most runs to spend.
    pub budget: u64,
    /// The search.
    pub search: Search,
    /// The first fresh seed, and the seed of the guided search's own choices (fresh seeds are
    /// `first_seed ..`, at most `budget` of them; past `u64::MAX` they wrap).
    pub first_seed: u64,
    /// Worker threads.
    pub jobs: usize,
}

/// Where a candidate came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A fresh seed, its plan drawn from the kinds.
    Fresh,
    /// A swarm run (see [`swarm`]): the swarm search's next seed, or the guided search's
    /// extra, the next seed of its own order from `first_seed`.
    Swarm,
    /// A mutant of the corpus entry made at run `parent` (1-based), by these mutations.
    Mutant {
        /// The run (1-based) of the scenario mutated.
        parent: u64,
        /// What was done to it.
        mutations: Vec<Mutation>,
    },
}

/// The first violating run.
pub struct Find {
    /// Its scenario (seed and explicit plan).
    pub scenario: Scenario,
    /// The property it violates (the hunted one, or the first it violates).
    pub property: Property,
    /// Its verdict.
    pub verdict: Verdict,
    /// Its history.
    pub history: History,
    /// Its run number, from 1: the runs the search spent up to and including it.
    pub run: u64,
    /// How it was made.
    pub origin: Origin,
}

/// How a hunt ended.
pub struct HuntOutcome {
    /// Runs spent (the find's run number, or the whole budget).
    pub runs: u64,
    /// The first violating run, if any.
    pub found: Option<Find>,
    /// Runs kept in the guided search's corpus.
    pub corpus: usize,
    /// Distinct features seen (guided search).
    pub features: usize,
    /// Runs that granted nothing: a search over them explored no lock.
    pub runs_without_grants: u64,
    /// Runs in which some fault took effect (see [`crate::applied`]): with none, the search
    /// ran fault-free.
    pub runs_with_faults: u64,
    /// Runs in which the resource accepted a write: with none, S2 was never exercised.
    pub runs_with_writes: u64,
    /// Runs that failed to run (an algorithm panicked), with the first error.
    pub errors: u64,
    /// The first such error, with its run and seed.
    pub first_error: Option<String>,
    /// A digest of the search path (every candidate's scenario, in order): the same
    /// `first_seed` gives the same digest.
    pub path_digest: u64,
    /// Where the time went (wall clock, for the overhead report only: nothing the search
    /// decides reads it).
    pub time: Overhead,
}

/// Wall-clock seconds the hunt spent, summed over its threads: in the runs themselves, and
/// in the search around them (making candidates, mutating, reading each run's feedback,
/// keeping the corpus).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Overhead {
    /// Seconds inside the runs (simulating and checking).
    pub runs: f64,
    /// Seconds in the search.
    pub search: f64,
    /// Runs made (a find's last batch runs whole: up to [`BATCH`] - 1 more than the find's
    /// run number), for figures per run.
    pub ran: u64,
}

impl Overhead {
    /// The search's share of the time, from 0 to 1.
    pub fn share(&self) -> f64 {
        let all = self.runs + self.search;
        if all > 0.0 {
            self.search / all
        } else {
            0.0
        }
    }
}

struct Entry {
    scenario: Scenario,
    /// The lock's moments in its run, for the aimed mutations.
    moments: Vec<feedback::Moment>,
    run: u64,
    closeness: Option<Nanos>,
    picked: u64,
}

struct Candidate {
    scenario: Scenario,
    origin: Origin,
}

struct Ran {
    /// Seconds in the run, and in reading its feedback.
    secs: (f64, f64),
    verdict: Verdict,
    history: Option<History>,
    error: Option<String>,
    feedback: Feedback,
}

/// The property a verdict violates for this hunt.
fn hit(verdict: &Verdict, property: Option<Property>) -> Option<Property> {
    match property {
        Some(p) => verdict.violates(p).then_some(p),
        None => verdict.kinds().first().copied(),
    }
}

/// Runs the hunt. `progress(runs, corpus, features)` is called after each batch.
pub fn hunt(h: &Hunt, progress: &(dyn Fn(u64, usize, usize) + Sync)) -> HuntOutcome {
    let mut rng = ChaCha8Rng::seed_from_u64(h.first_seed ^ 0x6875_6e74_6775_6964);
    let mut next_fresh = h.first_seed;
    let mut next_swarm = h.first_seed;
    let mut corpus: Vec<Entry> = Vec::new();
    let mut seen: BTreeSet<u64> = BTreeSet::new();
    let mut runs = 0u64;
    let mut no_grants = 0u64;
    let mut with_faults = 0u64;
    let mut with_writes = 0u64;
    let mut errors = 0u64;
    let mut first_error = None;
    let mut path = xxhash_rust::xxh3::Xxh3::new();
    let mut found = None;
    // Digests of every candidate so far.
    let mut tried: BTreeSet<u64> = BTreeSet::new();
    let mut share = Share::default();
    let started = Instant::now();
    let mut time = Overhead::default();
    let mut batch_wall = 0.0;
    while runs < h.budget && found.is_none() {
        let n = (h.budget - runs).min(BATCH as u64) as usize;
        let mut batch: Vec<Candidate> = Vec::with_capacity(n);
        for i in 0..n {
            let index = runs + i as u64;
            // After the warm-up, every sixth run of the guided search is an extra: a mutant
            // or a swarm run, by which has paid more; the others are the random search's seeds.
            let source = match h.search {
                Search::Random => Source::Fresh,
                Search::Swarm => Source::Swarm,
                Search::Guided if index < WARMUP || (index - WARMUP) % EXTRA != EXTRA - 1 => {
                    Source::Fresh
                }
                Search::Guided if corpus.is_empty() || !share.take() => Source::Swarm,
                Search::Guided => Source::Mutant,
            };
            let mutant = (source == Source::Mutant)
                .then(|| {
                    let p = pick(&mut corpus, &mut rng);
                    let parent = &corpus[p];
                    // A deterministic simulation run twice finds nothing new: a mutant that
                    // repeats an earlier candidate (or is invalid) is drawn again, then given up
                    // for a fresh seed.
                    (0..MUTANT_TRIES).find_map(|_| {
                        let (s, mutations) = mutate::mutate(
                            &parent.scenario,
                            &parent.moments,
                            &h.setup,
                            &h.kinds,
                            &mut rng,
                        );
                        if s.faults.validate(&s.cluster).is_err() {
                            return None;
                        }
                        let text = json(&s);
                        let c = Candidate {
                            scenario: s,
                            origin: Origin::Mutant {
                                parent: parent.run,
                                mutations,
                            },
                        };
                        (!tried.contains(&xxhash_rust::xxh3::xxh3_64(text.as_bytes())))
                            .then_some((c, text))
                    })
                })
                .flatten();
            let (c, text) = mutant.unwrap_or_else(|| {
                let (s, origin) = match (h.search, source) {
                    (Search::Swarm, _) => {
                        let s = swarm::scenario(&h.setup, &h.kinds, next_fresh);
                        next_fresh = next_fresh.wrapping_add(1);
                        (s, Origin::Swarm)
                    }
                    (Search::Guided, Source::Swarm) => {
                        let s = swarm::scenario(&h.setup, &h.kinds, next_swarm);
                        next_swarm = next_swarm.wrapping_add(1);
                        (s, Origin::Swarm)
                    }
                    _ => (h.setup.scenario(next_fresh, &h.kinds), Origin::Fresh),
                };
                if origin == Origin::Fresh {
                    next_fresh = next_fresh.wrapping_add(1);
                }
                let text = json(&s);
                (
                    Candidate {
                        scenario: s,
                        origin,
                    },
                    text,
                )
            });
            tried.insert(xxhash_rust::xxh3::xxh3_64(text.as_bytes()));
            path.update(text.as_bytes());
            batch.push(c);
        }
        let batch_started = Instant::now();
        let results = run_batch(&batch, h);
        batch_wall += batch_started.elapsed().as_secs_f64();
        time.ran += results.len() as u64;
        for r in &results {
            time.runs += r.secs.0;
            time.search += r.secs.1;
        }
        for (i, (c, r)) in batch.into_iter().zip(results).enumerate() {
            let run = runs + i as u64 + 1;
            if let Some(e) = &r.error {
                errors += 1;
                first_error
                    .get_or_insert_with(|| format!("run {run} (seed {}): {e}", c.scenario.seed));
            }
            if let Some(hist) = &r.history {
                if crate::outcome::grants(hist) == 0 {
                    no_grants += 1;
                }
                if crate::applied::faults_applied(hist) > 0 {
                    with_faults += 1;
                }
                if crate::outcome::writes_accepted(hist) > 0 {
                    with_writes += 1;
                }
            }
            if let (Some(p), Some(history)) = (hit(&r.verdict, h.property), r.history) {
                runs = run;
                found = Some(Find {
                    scenario: c.scenario,
                    property: p,
                    verdict: r.verdict,
                    history,
                    run,
                    origin: c.origin,
                });
                break;
            }
            if h.search == Search::Guided {
                let new = r
                    .feedback
                    .features
                    .iter()
                    .filter(|f| seen.insert(**f))
                    .count();
                let closeness = r.feedback.closeness();
                let nearer = closeness.is_some_and(|c| {
                    corpus
                        .iter()
                        .filter_map(|e| e.closeness)
                        .min()
                        .is_none_or(|best| c < best)
                });
                match c.origin {
                    Origin::Mutant { .. } => share.record(true, nearer),
                    Origin::Swarm => share.record(false, nearer),
                    Origin::Fresh => {}
                }
                if new > 0 || nearer {
                    corpus.push(Entry {
                        scenario: c.scenario,
                        moments: r.feedback.moments,
                        run,
                        closeness,
                        picked: 0,
                    });
                }
            }
        }
        if found.is_none() {
            runs += n as u64;
        }
        progress(runs, corpus.len(), seen.len());
    }
    // The main thread's own work: all of its time but the batches'.
    time.search += (started.elapsed().as_secs_f64() - batch_wall).max(0.0);
    HuntOutcome {
        runs,
        found,
        corpus: corpus.len(),
        features: seen.len(),
        runs_without_grants: no_grants,
        runs_with_faults: with_faults,
        runs_with_writes: with_writes,
        errors,
        first_error,
        path_digest: path.digest(),
        time,
    }
}

/// Where a candidate comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Fresh,
    Swarm,
    Mutant,
}

/// One run in this many of the guided search, after the warm-up, is an extra (a mutant or a
/// swarm run); the others are the random search's seeds in order, so it reaches the random
/// search's find within 6/5 of its runs.
pub const EXTRA: u64 = 6;

/// Which of the guided search's extras are mutants and which swarm runs: half each while
/// they pay alike, from a quarter to three quarters mutants by what each has paid so far. A
/// run *pays* when it comes nearer a violation than every run kept before it (a shorter hold
/// gap or stale-write gap: [`feedback::Feedback::closeness`]); new features do not count,
/// since a mutant shows new states far more easily than it comes nearer. The mutants' share is
/// `m / (m + s)` with `m` and `s` each source's paying rate (Laplace-smoothed), clamped;
/// extras are handed out by a running credit, so the choice is a function of the search's own
/// history and stays deterministic.
#[derive(Debug, Clone, Default)]
struct Share {
    /// Mutant runs and those that paid.
    mutants: (u64, u64),
    /// Swarm runs and those that paid.
    swarm: (u64, u64),
    /// Credit toward the next mutant.
    credit: f64,
}

impl Share {
    /// The least share of mutants among the extras.
    const LEAST: f64 = 1.0 / 4.0;
    /// The most.
    const MOST: f64 = 3.0 / 4.0;

    fn now(&self) -> f64 {
        let rate = |(runs, paid): (u64, u64)| (paid as f64 + 1.0) / (runs as f64 + 2.0);
        let (m, s) = (rate(self.mutants), rate(self.swarm));
        (m / (m + s)).clamp(Self::LEAST, Self::MOST)
    }

    /// Whether the next extra is a mutant.
    fn take(&mut self) -> bool {
        self.credit += self.now();
        if self.credit >= 1.0 {
            self.credit -= 1.0;
            true
        } else {
            false
        }
    }

    fn record(&mut self, mutant: bool, paid: bool) {
        let s = if mutant {
            &mut self.mutants
        } else {
            &mut self.swarm
        };
        s.0 += 1;
        s.1 += paid as u64;
    }
}

/// A corpus entry to mutate: half the time one of the nearest misses, otherwise the entry
/// picked least often so far (newer entries first among equals), so every new state gets
/// explored.
fn pick(corpus: &mut [Entry], rng: &mut ChaCha8Rng) -> usize {
    let i = if rng.gen_bool(0.5) {
        let mut near: Vec<usize> = (0..corpus.len())
            .filter(|&i| corpus[i].closeness.is_some())
            .collect();
        near.sort_by_key(|&i| (corpus[i].closeness, std::cmp::Reverse(i)));
        near.truncate(4);
        if near.is_empty() {
            rng.gen_range(0..corpus.len())
        } else {
            near[rng.gen_range(0..near.len())]
        }
    } else {
        (0..corpus.len())
            .min_by_key(|&i| (corpus[i].picked, std::cmp::Reverse(i)))
            .expect("the corpus is not empty")
    };
    corpus[i].picked += 1;
    i
}

/// Runs a batch on `h.jobs` threads; results in the batch's order.
fn run_batch(batch: &[Candidate], h: &Hunt) -> Vec<Ran> {
    let slots: Vec<Mutex<Option<Ran>>> = batch.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..h.jobs.clamp(1, batch.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(c) = batch.get(i) else { return };
                let started = Instant::now();
                let out = check_scenario(&c.scenario, h.setup.algo.clone());
                let ran = started.elapsed().as_secs_f64();
                let fb = match (&out.history, h.search) {
                    (Some(hist), Search::Guided) => feedback::feedback(hist),
                    _ => Feedback::default(),
                };
                let read = started.elapsed().as_secs_f64() - ran;
                *slots[i].lock().expect("no worker panics holding it") = Some(Ran {
                    secs: (ran, read),
                    verdict: out.verdict,
                    history: out.history,
                    error: out.error,
                    feedback: fb,
                });
            });
        }
    });
    slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .expect("no worker panics holding it")
                .expect("every slot is filled")
        })
        .collect()
}
