//! `locksim campaign` (the algorithm × fault-kind matrix, or campaign files from `sims/`) and
//! `locksim merge` (shards' results into one summary).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use locksim_core::fault::parse_kinds;
use locksim_core::FaultKind;
use locksim_explore::campaign_file::{read_plan, CampaignFile};
use locksim_explore::{
    run_seeds, setups_for, summarize, CampaignSpec, CellSummary, SeedRecord, Shard,
};

use crate::progress::Progress;
use crate::report::metric_pairs;
use crate::{out, plural};

#[derive(Args)]
pub struct CampaignArgs {
    /// Campaign files (TOML) or folders of them, e.g. `sims/`; without any, the matrix below.
    #[arg(value_name = "FILE|DIR")]
    paths: Vec<PathBuf>,
    /// Algorithms to run, comma-separated [default: central,central-fencing,redlock,raft-lease].
    #[arg(long, value_name = "NAME[,NAME]", value_delimiter = ',')]
    algo: Vec<String>,
    /// Fault kinds, comma-separated
    /// [default: none,partition,pause,clock-jump,clock-drift,crash-restart,leader-change,mixed].
    #[arg(long, value_name = "KIND[,KIND]")]
    faults: Option<String>,
    /// Seeds per cell [default: 300].
    #[arg(long, value_name = "N")]
    seeds: Option<u64>,
    /// First seed of the range (seeds are first-seed .. first-seed + seeds) [default: 0].
    #[arg(long, value_name = "N")]
    first_seed: Option<u64>,
    /// Worker threads [default: every core].
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// A workload or algorithm setting, e.g. `ttl=2s` (repeatable; the last value of a key
    /// wins). An algorithm setting goes to the algorithms that have it. See `locksim list`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Run only shard I of N (the seeds whose offset is I modulo N, in every cell); defaults to
    /// JOB_COMPLETION_INDEX/JOB_COMPLETIONS of a Kubernetes Indexed Job when they are set.
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
    /// Also write one JSON line per seed to this file, for `locksim merge`.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// Also show these properties' columns: `liveness` (L1–L3; campaign files that name an
    /// L property show them anyway). They are always checked and always in --json.
    #[arg(long, value_name = "liveness")]
    check: Option<Check>,
    /// Add the explicit faults of this file (`[[fault]]` entries, as in campaign files) to
    /// every seed's plan; with `--faults none`, every seed runs exactly this plan.
    #[arg(long, value_name = "FILE.toml")]
    plan: Option<PathBuf>,
    /// Also write the matrix (one per campaign file) as an HTML page to FILE, each violated
    /// cell linked to the timeline of its first failing seed, shrunk; the traces and their
    /// pages go to the folder FILE-files/ beside it (e.g. report.html and report-files/). A
    /// trace already there with other contents is never replaced.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
}

/// Properties whose columns `--check` shows.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Check {
    /// L1–L3.
    Liveness,
}

/// The note under a table whose L1–L3 columns are hidden although some seed violates one.
fn hidden_liveness(cells: &[CellSummary]) -> String {
    let n: u64 = cells
        .iter()
        .map(|c| c.l1_violations + c.l2_violations + c.l3_violations)
        .sum();
    if n == 0 {
        String::new()
    } else {
        format!(
            "note: liveness (L1–L3) violations in {} — add --check liveness to see them\n",
            plural(n, "seed")
        )
    }
}

#[derive(Args)]
pub struct MergeArgs {
    /// Per-seed results written by `locksim campaign --out` on each shard.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

/// The most seeds per cell one invocation runs; bigger campaigns are sharded.
const MAX_SEEDS: u64 = 1_000_000;

fn jobs(a: &CampaignArgs) -> Result<usize, String> {
    match a.jobs {
        Some(j) if j == 0 || j > 1024 => Err("--jobs must be from 1 to 1024".into()),
        Some(j) => Ok(j),
        None => Ok(std::thread::available_parallelism().map_or(1, |n| n.get())),
    }
}

fn run(spec: &CampaignSpec, shard: Shard, campaign: &str) -> Vec<SeedRecord> {
    let per_shard = spec.seeds.div_ceil(shard.count).max(1);
    let progress = Progress::new(
        "seeds",
        spec.setups.len() as u64 * spec.kinds.len() as u64 * per_shard,
    );
    let mut records = run_seeds(spec, shard, &|done, _| progress.set(done));
    progress.finish();
    for r in &mut records {
        r.campaign = campaign.to_string();
    }
    records
}

/// Creates the `--out` file before any seed runs, so a bad path fails at once.
fn open_out(path: &Option<PathBuf>) -> Result<Option<std::fs::File>, String> {
    path.as_ref()
        .map(|p| std::fs::File::create(p).map_err(|e| format!("cannot write {}: {e}", p.display())))
        .transpose()
}

fn write_records(
    path: &std::path::Path,
    mut f: std::fs::File,
    records: &[SeedRecord],
) -> Result<(), String> {
    for r in records {
        let line = serde_json::to_string(r).expect("records serialize");
        writeln!(f, "{line}").map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

pub fn main(a: CampaignArgs) -> Result<ExitCode, String> {
    let (seeds, first_seed) = (a.seeds.unwrap_or(300), a.first_seed.unwrap_or(0));
    if seeds == 0 || seeds > MAX_SEEDS {
        return Err(format!(
            "--seeds must be from 1 to {MAX_SEEDS} (split bigger campaigns with --shard)"
        ));
    }
    if first_seed.checked_add(seeds).is_none() {
        return Err("--first-seed + --seeds does not fit in 64 bits".into());
    }
    let jobs = jobs(&a)?;
    let shard = match &a.shard {
        Some(s) => Shard::parse(s)?,
        None => Shard::from_env()?.unwrap_or(Shard::ALL),
    };
    let started = Instant::now();
    if a.report.is_some() && shard != Shard::ALL {
        return Err("--report needs the whole campaign, not one shard".into());
    }
    if !a.paths.is_empty() {
        return files(&a, jobs, shard, started);
    }
    let algos: Vec<String> = if a.algo.is_empty() {
        locksim_algos::DEFAULT_MATRIX
            .iter()
            .map(|a| a.to_string())
            .collect()
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
    let mut setups = setups_for(&algos, &a.set)?;
    if let Some(plan) = &a.plan {
        setups = setups
            .into_iter()
            .map(|s| read_plan(plan, &s).map(|p| s.with_plan(p)))
            .collect::<Result<Vec<_>, _>>()?;
    }
    let spec = CampaignSpec {
        setups,
        kinds,
        first_seed,
        seeds,
        jobs,
    };
    let out_file = open_out(&a.out)?;
    let records = run(&spec, shard, "");
    if let (Some(path), Some(f)) = (&a.out, out_file) {
        write_records(path, f, &records)?;
    }
    let cells = summarize(&records);
    if let Some(path) = &a.report {
        let sets: String = a.set.iter().map(|s| format!(" --set {s}")).collect();
        let notes = vec![
            format!(
                "{} × {} fault kinds, seeds {}‥{} of each cell{sets}.",
                plural(spec.setups.len() as u64, "algorithm"),
                spec.kinds.len(),
                first_seed,
                first_seed + seeds - 1
            ),
            format!(
                "Made by: locksim campaign --algo {} --faults {} --seeds {seeds} --first-seed {first_seed}{sets}",
                algos.join(","),
                spec.kinds.iter().map(|k| k.name()).collect::<Vec<_>>().join(",")
            ),
        ];
        let section = crate::report::Section {
            heading: None,
            notes: vec![],
            spec: &spec,
            cells: cells.clone(),
        };
        write_report(path, &[section], jobs, notes)?;
    }
    if a.json {
        out(&format!("{}\n", serde_json::json!({ "cells": cells })));
    } else {
        let liveness = a.check == Some(Check::Liveness);
        out(&table(&cells, liveness));
        if !liveness {
            out(&hidden_liveness(&cells));
        }
        let total = records.len() as u64;
        let secs = started.elapsed().as_secs_f64();
        let mut tail = format!(
            "\n{} in {secs:.1}s on {} ({:.0} seeds/s){}.\n",
            plural(total, "seed"),
            plural(jobs as u64, "thread"),
            total as f64 / secs.max(1e-9),
            if shard == Shard::ALL {
                String::new()
            } else {
                format!(", shard {}/{}", shard.index, shard.count)
            }
        );
        if let Some(c) = cells.iter().find(|c| c.first_failing_seed.is_some()) {
            let sets: String = a.set.iter().map(|s| format!(" --set {s}")).collect();
            tail += &format!(
                "See a failing seed's timeline (--html draws it as a page), or shrink it to a trace, e.g.:\n  locksim run --algo {0} --faults {1} --seed {2}{sets} --html seed{2}.html\n  locksim shrink --algo {0} --faults {1} --seed {2}{sets}\n",
                c.algorithm,
                c.faults,
                c.first_failing_seed.unwrap_or(0)
            );
        }
        eprint!("{tail}");
    }
    Ok(ExitCode::SUCCESS)
}

fn write_report(
    path: &std::path::Path,
    sections: &[crate::report::Section],
    jobs: usize,
    notes: Vec<String>,
) -> Result<(), String> {
    let pages = crate::report::write(path, sections, jobs, notes)?;
    eprintln!(
        "report: {} ({} shrunk traces and their timelines in {})",
        path.display(),
        pages,
        crate::report::files_dir(path).display()
    );
    Ok(())
}

fn files(
    a: &CampaignArgs,
    jobs: usize,
    shard: Shard,
    started: Instant,
) -> Result<ExitCode, String> {
    if !a.algo.is_empty() || a.faults.is_some() || !a.set.is_empty() || a.plan.is_some() {
        return Err(
            "--algo, --faults, --set and --plan describe the matrix; campaign files carry their own"
                .into(),
        );
    }
    if a.seeds.is_some() || a.first_seed.is_some() {
        return Err(
            "--seeds and --first-seed describe the matrix; campaign files carry their own".into(),
        );
    }
    let files = CampaignFile::collect(&a.paths)?;
    if files.is_empty() {
        let names: Vec<String> = a.paths.iter().map(|p| p.display().to_string()).collect();
        return Err(format!("no *.toml campaign files in {}", names.join(", ")));
    }
    let out_file = open_out(&a.out)?;
    let (mut all, mut report, mut json, mut failed) = (Vec::new(), String::new(), Vec::new(), 0);
    let mut specs = Vec::new();
    for f in &files {
        specs.push(f.spec(jobs)?);
    }
    let mut sections = Vec::new();
    for (f, spec) in files.iter().zip(&specs) {
        let records = run(spec, shard, &f.path.display().to_string());
        let cells = summarize(&records);
        // A shard sees only part of the seeds: expectations are judged after `merge`.
        let problems = if shard == Shard::ALL {
            f.judge(&cells)
        } else {
            vec![]
        };
        let verdict = if shard != Shard::ALL {
            "(shard: judged after merge)".to_string()
        } else if problems.is_empty() {
            "PASS".to_string()
        } else {
            failed += 1;
            format!("FAIL: {}", problems.join("; "))
        };
        report += &format!("== {} ({}): {verdict}\n", f.name, f.path.display());
        if a.report.is_some() {
            sections.push(crate::report::Section {
                heading: Some(format!("{} ({}): {verdict}", f.name, f.path.display())),
                notes: vec![],
                spec,
                cells: cells.clone(),
            });
        }
        let liveness = f.asks_liveness() || a.check == Some(Check::Liveness);
        report += &table(&cells, liveness);
        if !liveness {
            report += &hidden_liveness(&cells);
        }
        report += "\n";
        json.push(serde_json::json!({
            "name": f.name, "file": f.path.display().to_string(), "cells": cells,
            "ok": problems.is_empty(), "problems": problems,
        }));
        all.extend(records);
    }
    if let (Some(path), Some(f)) = (&a.out, out_file) {
        write_records(path, f, &all)?;
    }
    if let Some(path) = &a.report {
        let names: Vec<String> = a.paths.iter().map(|p| p.display().to_string()).collect();
        let notes = vec![
            format!(
                "{} campaign files, {failed} failed their expectation.",
                files.len()
            ),
            format!("Made by: locksim campaign {}", names.join(" ")),
        ];
        write_report(path, &sections, jobs, notes)?;
    }
    if a.json {
        out(&format!("{}\n", serde_json::json!({ "campaigns": json })));
    } else {
        out(&report);
        eprintln!(
            "{} campaign files, {} in {:.1}s; {} failed their expectation",
            files.len(),
            plural(all.len() as u64, "seed"),
            started.elapsed().as_secs_f64(),
            failed
        );
    }
    Ok(if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

pub fn merge(a: MergeArgs) -> Result<ExitCode, String> {
    let mut by_campaign: BTreeMap<String, Vec<SeedRecord>> = BTreeMap::new();
    for path in &a.files {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let r: SeedRecord = serde_json::from_str(line).map_err(|e| {
                format!(
                    "{}:{}: {}",
                    path.display(),
                    i + 1,
                    e.to_string().split(" at line ").next().unwrap_or("")
                )
            })?;
            by_campaign.entry(r.campaign.clone()).or_default().push(r);
        }
    }
    let mut json = Vec::new();
    let mut text = String::new();
    let mut failed = 0;
    for (campaign, mut records) in by_campaign {
        let label = if campaign.is_empty() {
            "the matrix".to_string()
        } else {
            campaign.clone()
        };
        // One cell, one configuration: never add up runs of different campaigns or settings.
        let mut cells: BTreeMap<usize, (&str, FaultKind, &str)> = BTreeMap::new();
        for r in &records {
            let this = (r.algorithm.as_str(), r.faults, r.settings.as_str());
            if let Some(first) = cells.insert(r.cell, this) {
                if first != this {
                    return Err(format!(
                        "cannot merge {label}: cell {} holds results of different runs ({} {} settings {} and {} {} settings {})",
                        r.cell, first.0, first.1, first.2, this.0, this.1, this.2
                    ));
                }
            }
        }
        let shards: std::collections::BTreeSet<&str> =
            records.iter().map(|r| r.shard.as_str()).collect();
        let counts: std::collections::BTreeSet<&str> =
            shards.iter().filter_map(|s| s.split('/').nth(1)).collect();
        if counts.len() > 1 {
            return Err(format!(
                "cannot merge {label}: its shards were cut differently ({})",
                shards.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
        if let Some(n) = counts.iter().next().and_then(|n| n.parse::<u64>().ok()) {
            let missing: Vec<String> = (0..n)
                .map(|i| format!("{i}/{n}"))
                .filter(|s| !shards.contains(s.as_str()))
                .collect();
            if !missing.is_empty() {
                eprintln!(
                    "warning: {label}: shard {} missing: the summary covers only part of the seeds",
                    missing.join(", ")
                );
            }
        }
        records.sort_by_key(|r| (r.cell, r.seed));
        let before = records.len();
        records.dedup_by_key(|r| (r.cell, r.seed));
        if records.len() != before {
            eprintln!(
                "note: {label}: {} seeds appeared in more than one file; counted once",
                before - records.len()
            );
        }
        let cells = summarize(&records);
        let mut verdict = String::new();
        if !campaign.is_empty() {
            // Judge the campaign file's expectation, if the file is still where it was run.
            match CampaignFile::read(std::path::Path::new(&campaign)) {
                Ok(f) => {
                    let problems = f.judge(&cells);
                    if problems.is_empty() {
                        verdict = ": PASS".into();
                    } else {
                        failed += 1;
                        verdict = format!(": FAIL: {}", problems.join("; "));
                    }
                }
                Err(e) => verdict = format!(" (not judged: {e})"),
            }
            text += &format!("== {campaign}{verdict}\n");
        }
        let asks = !campaign.is_empty()
            && CampaignFile::read(std::path::Path::new(&campaign)).is_ok_and(|f| f.asks_liveness());
        text += &table(&cells, asks);
        if !asks {
            text += &hidden_liveness(&cells);
        }
        json.push((campaign, cells, verdict));
    }
    if a.json {
        let v = match json.as_slice() {
            [(c, cells, _)] if c.is_empty() => serde_json::json!({ "cells": cells }),
            _ => {
                let list: Vec<_> = json
                    .iter()
                    .map(|(c, cells, v)| serde_json::json!({"file": c, "cells": cells, "verdict": v.trim_start_matches(": ")}))
                    .collect();
                serde_json::json!({ "campaigns": list })
            }
        };
        out(&format!("{v}\n"));
    } else {
        out(&text);
    }
    Ok(if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The matrix as text; with `liveness`, the L1–L3 columns too.
fn table(cells: &[CellSummary], liveness: bool) -> String {
    let width = cells
        .iter()
        .map(|c| c.faults_label().len())
        .max()
        .unwrap_or(0)
        .max(14);
    let mut t = format!(
        "{:<16} {:<width$} {:>6} {:>6} {:>6} {:>6} {:>6}",
        "algorithm", "faults", "seeds", "S1", "S2", "S3", "S4"
    );
    if liveness {
        t += &format!(" {:>6} {:>6} {:>6}", "L1", "L2", "L3");
    }
    t += &format!(" {:>8}  first failing seed\n", "grants");
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
        if liveness {
            if let Some(s) = c.first_liveness_failing_seed {
                first += &format!("  (liveness: {s})");
            }
        }
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
        if let Some(w) = starved(c) {
            first += &format!("  {w}");
        }
        t += &format!(
            "{:<16} {:<width$} {:>6} {:>6} {:>6} {:>6} {:>6}",
            c.algorithm,
            c.faults_label(),
            c.seeds,
            mark(c.s1_violations),
            mark(c.s2_violations),
            mark(c.s3_violations),
            mark(c.s4_violations),
        );
        if liveness {
            t += &format!(
                " {:>6} {:>6} {:>6}",
                mark(c.l1_violations),
                mark(c.l2_violations),
                mark(c.l3_violations)
            );
        }
        t += &format!(" {:>8}  {}\n", c.grants, first);
    }
    t += &metrics_table(cells);
    t += "\nEach column counts seeds (runs) that violate the property:\n";
    t += "S1 = a double grant: two clients held the lock at the same true time\n";
    t += "S2 = a stale write: the resource accepted an older grant's write after a newer one's\n";
    t +=
        "S3 = linearizability: the lock service's answers fit no correct lease lock (the service\n";
    t += "     itself misbehaved), or the resource's writes fit no register (a write took effect twice)\n";
    t +=
        "S4 = a release freed another grant's lock (a retried unlock deleting the next holder's)\n";
    if liveness {
        t += "L1 = a holder stopped (crashed, or paused for good) and no waiting client got the lock\n";
        t += "     within ttl + lock delay + slack\n";
        t += "L2 = a healthy holder that renews lost its lock through an outage shorter than\n";
        t += "     ttl - renew_every (less the retry slack)\n";
        t += "L3 = a lock stayed taken longer than ttl + slack while no live client believed it held it\n";
    }
    t += "grants = successful acquires over all seeds (a cell with none would prove nothing;\n";
    t += "     `starved`: fewer than 1% of the acquire attempts succeeded)\n";
    t += "lock metrics (true time, over all seeds of the cell; percentiles within 1.6%): acquire =\n";
    t += "     latency of a granted acquire; wait = from a round's first attempt to its grant; hold =\n";
    t += "     length of a hold; failed/unknown = acquires answered fail / timed out; expired = leases\n";
    t += "     that ran out while the holder still acted on them; msgs = messages sent (dropped)\n";
    t
}

/// The `starved` warning of a cell whose grants are fewer than 1% of its acquire attempts.
pub(crate) fn starved(c: &CellSummary) -> Option<String> {
    let tries = c.counts.acquires;
    (tries > 0 && c.grants * 100 < tries).then(|| {
        format!(
            "starved: {} of {} acquire attempts succeeded",
            c.grants, tries
        )
    })
}

fn metrics_table(cells: &[CellSummary]) -> String {
    let mut t = format!(
        "\n{:<16} {:<14} {:>17} {:>17} {:>17} {:>15} {:>7} {:>7} {:>16}\n",
        "lock metrics",
        "faults",
        "acquire p50/p99",
        "wait p50/p99",
        "hold p50/p99",
        "failed/unknown",
        "retries",
        "expired",
        "msgs (dropped)"
    );
    for c in cells {
        let m = metric_pairs(c);
        let v = |i: usize| m[i].1.replace(" / ", "/");
        t += &format!(
            "{:<16} {:<14} {:>17} {:>17} {:>17} {:>15} {:>7} {:>7} {:>16}\n",
            c.algorithm,
            c.faults_label(),
            v(0),
            v(1),
            v(2),
            format!("{}/{}", c.counts.acquires_failed, c.counts.acquires_unknown),
            c.counts.retries,
            c.counts.expired_while_held,
            v(6)
        );
    }
    t
}
