//! Fault seeds in your own `cargo test`:
//!
//! ```no_run
//! use std::sync::Arc;
//! use locksim_core::{FaultKind, Property};
//! use locksim_explore::testing::Campaign;
//!
//! #[test]
//! fn my_lock_survives_pauses_and_partitions() {
//!     Campaign::registered("central-fencing", &["ttl=2s"])
//!         .seeds(0..500)
//!         .faults(&[FaultKind::Partition, FaultKind::Loss])
//!         .expect_safe();
//! }
//!
//! #[test]
//! fn a_paused_holder_double_grants_but_fencing_keeps_the_data() {
//!     Campaign::registered("central-fencing", &[])
//!         .faults(&[FaultKind::Pause])
//!         .expect(&[Property::S1])       // some seed must violate S1
//!         .forbid(&[Property::S2])       // none may violate S2
//!         .allow(&[Property::S3])        // S3 may go either way
//!         .check();                      // and S4, unlisted, is forbidden
//! }
//! ```
//!
//! Every property the run checks counts ([`locksim_check::CheckOptions::properties`]: S1–S4,
//! and the liveness properties when their checkers judge the run): a property that is neither
//! expected nor allowed is forbidden. A forbidden property that a check left undecided (its
//! budget ran out) fails too: it cannot count as clean. On a forbidden violation
//! [`Campaign::check`] shrinks the first failing seed, writes its trace (to
//! `$LOCKSIM_TRACES`, or `traces/` under the current folder) and panics with the seed, the
//! trace's path and the commands that replay it. `LOCKSIM_SEED=N cargo test …` runs that one
//! seed only.

use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use locksim_core::{FaultKind, Property, Workload};
use locksim_sim::LockAlgorithm;

use locksim_core::text::plural;

use crate::campaign::{run_campaign, CampaignSpec};
use crate::setup::{parse_setting, Setup};
use crate::shrink::{shrink_with, trace_file_name};

/// A campaign in a test.
pub struct Campaign {
    setup: Setup,
    registered: bool,
    seeds: Range<u64>,
    kinds: Vec<FaultKind>,
    jobs: usize,
    expect: Vec<Property>,
    forbid: Vec<Property>,
    allow: Vec<Property>,
}

impl Campaign {
    /// Your own algorithm, with 3 clients and the default workload.
    pub fn new(algo: Arc<dyn LockAlgorithm>) -> Campaign {
        Campaign::of(
            Setup::custom(algo, Default::default(), 3, Workload::default()),
            false,
        )
    }

    /// A registered algorithm with `key=value` settings.
    ///
    /// # Panics
    /// On an unknown algorithm or a bad setting (a test's configuration error).
    pub fn registered(name: &str, settings: &[&str]) -> Campaign {
        let pairs: Vec<(String, String)> = settings
            .iter()
            .map(|s| parse_setting(s).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        Campaign::of(
            Setup::registered(name, &pairs).unwrap_or_else(|e| panic!("{e}")),
            true,
        )
    }

    fn of(setup: Setup, registered: bool) -> Campaign {
        Campaign {
            setup,
            registered,
            seeds: 0..100,
            kinds: vec![FaultKind::Mixed],
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
            expect: Vec::new(),
            forbid: Vec::new(),
            allow: Vec::new(),
        }
    }

    /// Number of client processes (default 3).
    pub fn clients(mut self, n: u32) -> Self {
        self.setup.cluster.clients = n;
        self
    }

    /// The workload (default [`Workload::default`]).
    pub fn workload(mut self, w: Workload) -> Self {
        self.setup.workload = w;
        self
    }

    /// The seeds to run (default `0..100`); `LOCKSIM_SEED=N` overrides it with `N..N+1`.
    pub fn seeds(mut self, seeds: Range<u64>) -> Self {
        self.seeds = seeds;
        self
    }

    /// Fault kinds, each a cell of its own (default `mixed`).
    pub fn faults(mut self, kinds: &[FaultKind]) -> Self {
        self.kinds = kinds.to_vec();
        self
    }

    /// Worker threads (default: every core).
    pub fn jobs(mut self, n: usize) -> Self {
        self.jobs = n.max(1);
        self
    }

    /// Properties some seed must violate (each of them; added to earlier calls).
    pub fn expect(mut self, properties: &[Property]) -> Self {
        self.expect.extend_from_slice(properties);
        self
    }

    /// Properties no seed may violate (everything neither expected nor allowed is forbidden
    /// anyway; naming them documents the test and is checked against `expect`).
    pub fn forbid(mut self, properties: &[Property]) -> Self {
        self.forbid.extend_from_slice(properties);
        self
    }

    /// Properties seeds may or may not violate.
    pub fn allow(mut self, properties: &[Property]) -> Self {
        self.allow.extend_from_slice(properties);
        self
    }

    /// Runs the campaign and panics unless no property outside [`Campaign::allow`] and
    /// [`Campaign::expect`] is violated (S1–S4 and any other property the run checks): the
    /// same as [`Campaign::check`], named for the common case.
    ///
    /// # Panics
    /// As [`Campaign::check`].
    pub fn expect_safe(self) {
        self.check();
    }

    /// Runs the campaign and judges it: every expected property is violated by some seed,
    /// no other property the run checks is violated (unless allowed) or left undecided (unless
    /// allowed or expected), no seed fails to run, and some client is granted the lock. On a
    /// forbidden violation it shrinks the first failing seed and writes its trace first.
    ///
    /// # Panics
    /// When the judgment fails, as described; on a property both expected (or allowed) and
    /// forbidden, an expected property the run does not check, or a malformed `LOCKSIM_SEED`.
    pub fn check(self) {
        for p in &self.forbid {
            assert!(
                !self.expect.contains(p) && !self.allow.contains(p),
                "locksim: {p} is both forbidden and expected or allowed"
            );
        }
        let seeds = match std::env::var("LOCKSIM_SEED") {
            Ok(v) => {
                let n: u64 = v
                    .trim()
                    .parse()
                    .ok()
                    .filter(|&n| n < u64::MAX)
                    .unwrap_or_else(|| panic!("LOCKSIM_SEED={v} is not a seed"));
                n..n + 1
            }
            Err(_) => self.seeds.clone(),
        };
        assert!(
            !seeds.is_empty(),
            "locksim: the seed range {seeds:?} is empty"
        );
        assert!(!self.kinds.is_empty(), "locksim: no fault kinds to run");
        assert!(
            self.setup.cluster.clients > 0,
            "locksim: a campaign needs at least one client"
        );
        let spec = CampaignSpec {
            setups: vec![self.setup.clone()],
            kinds: self.kinds.clone(),
            first_seed: seeds.start,
            seeds: seeds.end.saturating_sub(seeds.start),
            jobs: self.jobs,
        };
        let cells = run_campaign(&spec, &|_, _| {});
        let algo = &self.setup.algorithm;
        if let Some(c) = cells
            .iter()
            .filter(|c| c.errors > 0)
            .min_by_key(|c| c.first_error_seed)
        {
            let seed = c.first_error_seed.unwrap_or(0);
            panic!(
                "locksim: {algo} seed {seed} under {} failed to run: {}\nrun it alone with LOCKSIM_SEED={seed}",
                c.faults,
                c.first_error.as_deref().unwrap_or("")
            );
        }
        let grants: u64 = cells.iter().map(|c| c.grants).sum();
        assert!(
            grants > 0,
            "locksim: {algo} never granted the lock in {} seeds: nothing was tested",
            cells.iter().map(|c| c.seeds).sum::<u64>()
        );
        let checked: Vec<Property> = Property::ALL
            .into_iter()
            .filter(|p| cells.iter().any(|c| c.checked.contains(p)))
            .collect();
        let range = format!("{}..{}", seeds.start, seeds.end);
        let mut problems = Vec::new();
        for &p in &self.expect {
            if !checked.contains(&p) {
                problems.push(format!("{p} is expected, but this run does not check it"));
            } else if cells.iter().all(|c| c.violated(p) == 0) {
                problems.push(format!(
                    "expected {p} to be violated by some seed of {range}; it never was"
                ));
            }
        }
        let forbidden: Vec<Property> = checked
            .iter()
            .copied()
            .filter(|p| !self.allow.contains(p) && !self.expect.contains(p))
            .collect();
        for &p in &forbidden {
            let undecided: u64 = cells.iter().map(|c| c.undecided_on(p)).sum();
            if undecided > 0 {
                problems.push(format!(
                    "{p} was left undecided on {} (a check ran out of budget), so {range} is not a clean result",
                    plural(undecided, "seed")
                ));
            }
        }
        // The first forbidden violation: smallest seed, then property, then cell.
        let first = cells
            .iter()
            .flat_map(|c| {
                forbidden
                    .iter()
                    .filter_map(move |p| c.first_violation.get(p).map(|&s| (s, *p, c.faults)))
            })
            .min();
        let Some((seed, property, kind)) = first else {
            assert!(
                problems.is_empty(),
                "locksim: {algo}: {}",
                problems.join("; ")
            );
            return;
        };
        for &p in &forbidden {
            let n: u64 = cells.iter().map(|c| c.violated(p)).sum();
            if n > 0 {
                problems.push(format!("{p} violated by {}", plural(n, "seed")));
            }
        }
        let scenario = self.setup.scenario(seed, &[kind]);
        let dir = std::env::var_os("LOCKSIM_TRACES")
            .map_or_else(|| PathBuf::from("traces"), PathBuf::from);
        let written =
            shrink_with(&scenario, self.setup.algo.clone(), property, &|_| {}).and_then(|s| {
                let trace = s.trace(true);
                let path = dir.join(trace_file_name(&trace, property));
                let path = std::path::absolute(&path).unwrap_or(path);
                match trace.write_new(&path) {
                    Ok(()) => Ok((path, s.scenario.faults.len())),
                    Err(e) => Err(format!("the shrunk trace could not be written: {e}")),
                }
            });
        let trace_line = match &written {
            Ok((path, n)) => {
                let replay = if self.registered {
                    format!("\n  replay:   locksim replay {}", path.display())
                } else {
                    String::new()
                };
                format!(
                    "\n  shrunk to {}: {}{replay}",
                    plural(*n as u64, "fault"),
                    path.display()
                )
            }
            Err(e) => format!("\n  (shrinking failed: {e})"),
        };
        panic!(
            "locksim: {algo} violates {property} under {kind} with seed {seed} (of {range}); in all: {}{trace_line}\n  rerun:    LOCKSIM_SEED={seed} cargo test <this test>",
            problems.join("; ")
        );
    }
}
