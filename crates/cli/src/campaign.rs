//! `locksim campaign`: the algorithm × fault-kind matrix over a seed range.

use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use locksim_core::fault::parse_kinds;
use locksim_core::FaultKind;
use locksim_explore::{run_campaign, setups_for, CampaignSpec, CellSummary};

use crate::{out, plural};

#[derive(Args)]
pub struct CampaignArgs {
    /// Algorithms to run, comma-separated [default: central,central-fencing,redlock].
    #[arg(long, value_name = "NAME[,NAME]", value_delimiter = ',')]
    algo: Vec<String>,
    /// Fault kinds, comma-separated
    /// [default: none,partition,pause,clock-jump,clock-drift,crash-restart,mixed].
    #[arg(long, value_name = "KIND[,KIND]")]
    faults: Option<String>,
    /// Seeds per cell.
    #[arg(long, value_name = "N", default_value_t = 300)]
    seeds: u64,
    /// First seed of the range (seeds are first-seed .. first-seed + seeds).
    #[arg(long, value_name = "N", default_value_t = 0)]
    first_seed: u64,
    /// Worker threads [default: every core].
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// A workload or algorithm setting, e.g. `ttl=2s` (repeatable; the last value of a key
    /// wins). An algorithm setting goes to the algorithms that have it. See `locksim list`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Print one JSON object {"cells":[...]} instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn main(a: CampaignArgs) -> Result<ExitCode, String> {
    let algos: Vec<String> = if a.algo.is_empty() {
        vec!["central".into(), "central-fencing".into(), "redlock".into()]
    } else {
        a.algo
            .iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    };
    if algos.is_empty() {
        return Err(format!(
            "empty algorithm list (valid: {})",
            locksim_algos::names()
        ));
    }
    let kinds = match &a.faults {
        Some(f) => parse_kinds(f)?,
        None => FaultKind::DEFAULT_MATRIX.to_vec(),
    };
    if a.seeds == 0 || a.seeds > 1_000_000_000 {
        return Err("--seeds must be from 1 to 1000000000".into());
    }
    if a.first_seed.checked_add(a.seeds).is_none() {
        return Err("--first-seed + --seeds does not fit in 64 bits".into());
    }
    let jobs = match a.jobs {
        Some(j) if j == 0 || j > 1024 => return Err("--jobs must be from 1 to 1024".into()),
        Some(j) => j,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let spec = CampaignSpec {
        setups: setups_for(&algos, &a.set)?,
        kinds,
        first_seed: a.first_seed,
        seeds: a.seeds,
        jobs,
    };
    let total = spec.setups.len() as u64 * spec.kinds.len() as u64 * spec.seeds;
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} seeds, {elapsed} elapsed, eta {eta}")
            .expect("valid template"),
    );
    let started = Instant::now();
    let cells = run_campaign(&spec, &|done, _| bar.set_position(done));
    bar.finish_and_clear();
    let secs = started.elapsed().as_secs_f64();
    if a.json {
        out(&format!("{}\n", serde_json::json!({ "cells": cells })));
    } else {
        out(&table(&cells));
        let mut tail = format!(
            "\n{} in {secs:.1}s on {} ({:.0} seeds/s).\n",
            plural(total, "seed"),
            plural(jobs as u64, "thread"),
            total as f64 / secs.max(1e-9)
        );
        if let Some(c) = cells.iter().find(|c| c.first_failing_seed.is_some()) {
            let sets: String = a.set.iter().map(|s| format!(" --set {s}")).collect();
            tail += &format!(
                "See a failing seed's timeline, e.g.:\n  locksim run --algo {} --faults {} --seed {}{sets}\n",
                c.algorithm,
                c.faults,
                c.first_failing_seed.unwrap_or(0)
            );
        }
        eprint!("{tail}");
    }
    Ok(ExitCode::SUCCESS)
}

fn table(cells: &[CellSummary]) -> String {
    let mut t = format!(
        "{:<16} {:<14} {:>6} {:>6} {:>6} {:>6} {:>8}  first failing seed\n",
        "algorithm", "faults", "seeds", "S1", "S2", "S3", "grants"
    );
    let mark = |n: u64| {
        if n == 0 {
            "-".to_string()
        } else {
            n.to_string()
        }
    };
    for c in cells {
        let mut first = c
            .first_failing_seed
            .map_or("-".to_string(), |s| s.to_string());
        if c.errors > 0 {
            first += &format!(
                "  ({} failed to run, first seed {})",
                plural(c.errors, "seed"),
                c.first_error_seed.unwrap_or(0)
            );
        }
        if c.s3_inconclusive > 0 {
            first += &format!("  (S3 undecided on {})", plural(c.s3_inconclusive, "seed"));
        }
        t += &format!(
            "{:<16} {:<14} {:>6} {:>6} {:>6} {:>6} {:>8}  {}\n",
            c.algorithm,
            c.faults.name(),
            c.seeds,
            mark(c.s1_violations),
            mark(c.s2_violations),
            mark(c.s3_violations),
            c.grants,
            first
        );
    }
    t += "\nEach column counts seeds (runs) that violate the property:\n";
    t += "S1 = a double grant: two clients held the lock at the same true time\n";
    t += "S2 = a stale write: the resource accepted an older grant's write after a newer one's\n";
    t +=
        "S3 = linearizability: the lock service's answers fit no correct lease lock (the service\n";
    t += "     itself misbehaved), or the resource's writes fit no register (a write took effect twice)\n";
    t += "grants = successful acquires over all seeds (a cell with none would prove nothing)\n";
    t
}
