//! Fault seeds in your own `cargo test`:
//!
//! ```no_run
//! use std::sync::Arc;
//! use locksim_core::FaultKind;
//! use locksim_explore::testing::Campaign;
//!
//! #[test]
//! fn my_lock_survives_pauses_and_partitions() {
//!     Campaign::registered("central-fencing", &["ttl=2s"])
//!         .seeds(0..500)
//!         .faults(&[FaultKind::Partition, FaultKind::Loss])
//!         .expect_safe();
//! }
//! ```
//!
//! On a violation, [`Campaign::expect_safe`] shrinks the first failing seed, writes its trace
//! (to `$LOCKSIM_TRACES`, or `traces/` under the current folder) and panics with the seed, the
//! trace's path and the commands that replay it. `LOCKSIM_SEED=N cargo test …` runs that one
//! seed only.

use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use locksim_core::{FaultKind, Property, Workload};
use locksim_sim::LockAlgorithm;

use crate::campaign::{run_seeds, CampaignSpec, Shard};
use crate::setup::{parse_setting, Setup};
use crate::shrink::{shrink_with, trace_file_name};

/// A campaign in a test.
pub struct Campaign {
    setup: Setup,
    registered: bool,
    seeds: Range<u64>,
    kinds: Vec<FaultKind>,
    jobs: usize,
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

    /// Runs the campaign and panics on the first violation of S1, S2 or S3 (or a seed that
    /// failed to run), after shrinking it and writing its trace.
    ///
    /// # Panics
    /// On a violation, as described; on a malformed `LOCKSIM_SEED`.
    pub fn expect_safe(self) {
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
        let records = run_seeds(&spec, Shard::ALL, &|_, _| {});
        if let Some(r) = records.iter().find(|r| r.error.is_some()) {
            panic!(
                "locksim: {} seed {} under {} failed to run: {}\nrun it alone with LOCKSIM_SEED={}",
                self.setup.algorithm,
                r.seed,
                r.faults,
                r.error.as_deref().unwrap_or(""),
                r.seed
            );
        }
        let Some(r) = records
            .iter()
            .filter(|r| r.s1 || r.s2 || r.s3)
            .min_by_key(|r| (r.seed, r.cell))
        else {
            let grants: u64 = records.iter().map(|r| r.grants).sum();
            assert!(
                grants > 0,
                "locksim: {} never granted the lock in {} seeds: nothing was tested",
                self.setup.algorithm,
                records.len()
            );
            return;
        };
        let property = if r.s1 {
            Property::S1
        } else if r.s2 {
            Property::S2
        } else {
            Property::S3
        };
        let scenario = self.setup.scenario(r.seed, &[r.faults]);
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
                format!("\n  shrunk to {n} faults: {}{replay}", path.display())
            }
            Err(e) => format!("\n  (shrinking failed: {e})"),
        };
        panic!(
            "locksim: {} violates {property} under {} with seed {} (of {}..{}){trace_line}\n  rerun:    LOCKSIM_SEED={} cargo test <this test>",
            self.setup.algorithm, r.faults, r.seed, seeds.start, seeds.end, r.seed
        );
    }
}
