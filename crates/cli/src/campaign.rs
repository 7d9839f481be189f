//! `locksim campaign`: the algorithm × fault-kind matrix over a seed range.

use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use locksim_core::fault::parse_kinds;
use locksim_core::FaultKind;
use locksim_explore::{run_campaign, CampaignSpec, CellSummary};

#[derive(Args)]
pub struct CampaignArgs {
    /// Algorithms to run, comma-separated [default: central,central-fencing,redlock].
    #[arg(long, value_name = "NAME[,NAME]", value_delimiter = ',')]
    algo: Vec<String>,
    /// Fault kinds, comma-separated [default: none,partition,pause,clock-jump,clock-drift,
    /// crash-restart,mixed].
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
    /// A workload or algorithm setting applied to every algorithm, e.g. `ttl=2s`
    /// (repeatable; see `locksim list`).
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
    if a.seeds == 0 {
        return Err("--seeds must be at least 1".into());
    }
    let jobs = a
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let spec = CampaignSpec {
        setups: crate::setups(&algos, &a.set)?,
        kinds,
        first_seed: a.first_seed,
        seeds: a.seeds,
        jobs,
    };
    let total = spec.setups.len() as u64 * spec.kinds.len() as u64 * spec.seeds;
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} seeds  {per_sec}  eta {eta}")
            .expect("valid template"),
    );
    let started = Instant::now();
    let cells = run_campaign(&spec, &|done, _| bar.set_position(done));
    bar.finish_and_clear();
    let secs = started.elapsed().as_secs_f64();
    if a.json {
        println!("{}", serde_json::json!({ "cells": cells }));
    } else {
        print_table(&cells);
        eprintln!(
            "\n{total} seeds in {secs:.1}s on {jobs} threads ({:.0} seeds/s). Replay a cell's first failing seed with\n  locksim run --algo ALGO --faults KIND --seed SEED{}",
            total as f64 / secs.max(1e-9),
            a.set.iter().map(|s| format!(" --set {s}")).collect::<String>()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn print_table(cells: &[CellSummary]) {
    println!(
        "{:<16} {:<14} {:>6} {:>8} {:>8} {:>8}  first failing seed",
        "algorithm", "faults", "seeds", "S1", "S2", "grants"
    );
    for c in cells {
        let mark = |n: u64| {
            if n == 0 {
                "-".to_string()
            } else {
                n.to_string()
            }
        };
        let mut first = c
            .first_failing_seed
            .map_or("-".to_string(), |s| s.to_string());
        if c.errors > 0 {
            first += &format!(
                "  ({} seeds failed to run, first {})",
                c.errors,
                c.first_error_seed.unwrap_or(0)
            );
        }
        println!(
            "{:<16} {:<14} {:>6} {:>8} {:>8} {:>8}  {}",
            c.algorithm,
            c.faults.name(),
            c.seeds,
            mark(c.s1_violations),
            mark(c.s2_violations),
            c.grants,
            first
        );
    }
    println!("\nS1 = seeds with a double grant (two holders at once, in true time)");
    println!(
        "S2 = seeds where the resource accepted a stale write (an older grant after a newer one)"
    );
}
