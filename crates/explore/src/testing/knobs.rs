//! The environment variables a test campaign reads (as madsim's `MADSIM_TEST_SEED`, `_NUM`,
//! `_JOBS` and `_CHECK_DETERMINISM` do for `#[madsim::test]`).

use std::ops::Range;
use std::path::PathBuf;

/// What the environment asks of a test campaign.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Knobs {
    /// `LOCKSIM_SEED=N`: run seed `N` alone (a failure's rerun command sets it).
    pub seed: Option<u64>,
    /// `LOCKSIM_SEEDS=COUNT` (the test's first seed and COUNT seeds from it) or
    /// `LOCKSIM_SEEDS=A..B` (seeds A to B−1): replaces the test's range, e.g. for a nightly run
    /// with many more seeds.
    pub seeds: Option<SeedsKnob>,
    /// `LOCKSIM_JOBS=N`: worker threads (default: the test's, else every core).
    pub jobs: Option<usize>,
    /// `LOCKSIM_CHECK_DETERMINISM=1`: run each seed twice more and compare the event digests.
    pub check_determinism: bool,
    /// `LOCKSIM_TRACES=DIR`: where shrunk traces go (default `traces/` under the current
    /// folder, which `cargo test` makes the package's folder).
    pub traces: Option<PathBuf>,
    /// `LOCKSIM_REPLAY=TRACE.json`: instead of the campaign, replay this trace with the test's
    /// algorithm and compare its digest and verdict.
    pub replay: Option<PathBuf>,
    /// `LOCKSIM_RENDER=PAGE.html` (with `LOCKSIM_REPLAY`): also draw the replayed run there.
    pub render: Option<PathBuf>,
}

/// `LOCKSIM_SEEDS`: a count or a range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SeedsKnob {
    /// This many seeds from the test's first seed.
    Count(u64),
    /// Exactly these seeds.
    Range(Range<u64>),
}

impl Knobs {
    /// Reads the knobs through `env` (`std::env::var(..).ok()` in a test).
    ///
    /// # Errors
    /// A malformed value, in one line naming the variable, its value and what it must be.
    pub fn read(env: &dyn Fn(&str) -> Option<String>) -> Result<Knobs, String> {
        let get = |k: &str| {
            env(k)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let num = |k: &str, v: &str| -> Result<u64, String> {
            v.parse::<u64>()
                .ok()
                .filter(|&n| n < u64::MAX)
                .ok_or_else(|| format!("{k}={v} is not a number from 0 to 2^64-2"))
        };
        let mut k = Knobs::default();
        if let Some(v) = get("LOCKSIM_SEED") {
            k.seed = Some(num("LOCKSIM_SEED", &v)?);
        }
        if let Some(v) = get("LOCKSIM_SEEDS") {
            let bad = || format!("LOCKSIM_SEEDS={v} must be a count (500) or a range (1000..2000)");
            k.seeds = Some(match v.split_once("..") {
                Some((a, b)) => {
                    let (a, b) = (
                        num("LOCKSIM_SEEDS", a).map_err(|_| bad())?,
                        num("LOCKSIM_SEEDS", b).map_err(|_| bad())?,
                    );
                    if a >= b {
                        return Err(format!("LOCKSIM_SEEDS={v} is an empty range"));
                    }
                    SeedsKnob::Range(a..b)
                }
                None => match num("LOCKSIM_SEEDS", &v).map_err(|_| bad())? {
                    0 => return Err(format!("LOCKSIM_SEEDS={v}: at least one seed")),
                    n => SeedsKnob::Count(n),
                },
            });
        }
        if let Some(v) = get("LOCKSIM_JOBS") {
            k.jobs = Some(
                v.parse::<usize>()
                    .ok()
                    .filter(|&n| (1..=1024).contains(&n))
                    .ok_or_else(|| {
                        format!("LOCKSIM_JOBS={v} must be a thread count from 1 to 1024")
                    })?,
            );
        }
        if let Some(v) = get("LOCKSIM_CHECK_DETERMINISM") {
            k.check_determinism = match v.as_str() {
                "1" | "true" | "yes" => true,
                "0" | "false" | "no" => false,
                _ => return Err(format!("LOCKSIM_CHECK_DETERMINISM={v} must be 1 or 0")),
            };
        }
        k.traces = get("LOCKSIM_TRACES").map(PathBuf::from);
        k.replay = get("LOCKSIM_REPLAY").map(PathBuf::from);
        k.render = get("LOCKSIM_RENDER").map(PathBuf::from);
        if k.render.is_some() && k.replay.is_none() {
            return Err(
                "LOCKSIM_RENDER needs LOCKSIM_REPLAY=TRACE.json: the trace whose run to draw"
                    .into(),
            );
        }
        Ok(k)
    }

    /// Worker threads: `LOCKSIM_JOBS`, else the test's own (`own`), else every core.
    pub fn jobs_or(&self, own: Option<usize>) -> usize {
        self.jobs
            .or(own)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    /// Where shrunk traces go: `LOCKSIM_TRACES`, else `traces/` under the current folder.
    pub fn traces_dir(&self) -> PathBuf {
        self.traces
            .clone()
            .unwrap_or_else(|| PathBuf::from("traces"))
    }

    /// The variables of a command that re-runs `seed` as this run did: `LOCKSIM_SEED`, and
    /// `LOCKSIM_TRACES` when it was given.
    pub fn rerun_vars(&self, seed: u64) -> Vec<(&'static str, String)> {
        let mut vars = vec![("LOCKSIM_SEED", seed.to_string())];
        if let Some(t) = &self.traces {
            vars.push(("LOCKSIM_TRACES", t.to_string_lossy().into_owned()));
        }
        vars
    }

    /// The seeds to run, given the test's own range: `LOCKSIM_SEED` wins, then
    /// `LOCKSIM_SEEDS`, then the test's.
    pub fn seeds_for(&self, test: &Range<u64>) -> Range<u64> {
        if let Some(n) = self.seed {
            return n..n + 1;
        }
        match &self.seeds {
            Some(SeedsKnob::Count(n)) => test.start..test.start.saturating_add(*n),
            Some(SeedsKnob::Range(r)) => r.clone(),
            None => test.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pairs: &[(&str, &str)]) -> Result<Knobs, String> {
        Knobs::read(&|k| pairs.iter().find(|p| p.0 == k).map(|p| p.1.to_string()))
    }

    #[test]
    fn seeds_come_from_the_seed_then_the_range_then_the_test() {
        let test = 0..100;
        assert_eq!(read(&[]).unwrap().seeds_for(&test), 0..100);
        assert_eq!(
            read(&[("LOCKSIM_SEEDS", "5000")])
                .unwrap()
                .seeds_for(&(10..20)),
            10..5010
        );
        assert_eq!(
            read(&[("LOCKSIM_SEEDS", "7..9")]).unwrap().seeds_for(&test),
            7..9
        );
        let both = read(&[("LOCKSIM_SEEDS", "7..9"), ("LOCKSIM_SEED", "42")]).unwrap();
        assert_eq!(both.seeds_for(&test), 42..43);
    }

    #[test]
    fn bad_values_name_the_variable() {
        for (k, v) in [
            ("LOCKSIM_SEED", "x"),
            ("LOCKSIM_SEEDS", "0"),
            ("LOCKSIM_SEEDS", "9..3"),
            ("LOCKSIM_SEEDS", "1..x"),
            ("LOCKSIM_JOBS", "0"),
            ("LOCKSIM_CHECK_DETERMINISM", "maybe"),
        ] {
            let e = read(&[(k, v)]).unwrap_err();
            assert!(e.starts_with(&format!("{k}={v}")), "{e}");
        }
        assert!(read(&[("LOCKSIM_RENDER", "a.html")])
            .unwrap_err()
            .contains("LOCKSIM_REPLAY"));
        let k = read(&[("LOCKSIM_JOBS", "3"), ("LOCKSIM_CHECK_DETERMINISM", "1")]).unwrap();
        assert_eq!((k.jobs, k.check_determinism), (Some(3), true));
    }
}
