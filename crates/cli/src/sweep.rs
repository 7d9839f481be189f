//! `locksim sweep`: one or two `--vary` axes over any knob, each point run as campaign cells
//! (one per algorithm and fault kind); a table, `--json`, `--csv` and a `--report` page with
//! plots. Frontier files (`sims/frontier/*.toml`) are sweeps with stated boundaries.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use locksim_explore::frontier::FrontierFile;
use locksim_explore::record_file::Writer;
use locksim_explore::sweep::{PointResult, SweepDef};
use locksim_explore::sweep_run::{self, Ran};
use locksim_explore::{report, sweep_text, Shard};
use locksim_render::sweep::sweep_report;

use crate::args::MemoryArgs;
use crate::exit::Exit;
use crate::progress::Progress;
use crate::{out, plural};

pub const SWEEP_AFTER_HELP: &str = "\
Axes (--vary KEY=RANGE, once or twice; KEY is any --set knob whose value is a number or a
duration: a workload setting, an algorithm setting, a per-client setting cN.key, or a
fault-shape knob):
  pause_max=100ms..3s:10    10 points (at least 2), log-spaced (LO > 0); 0..1s:11 and
                            0..50000:11 are evenly spaced (a bare 0 takes the other end's unit)
  ttl=500ms..2s+250ms       evenly spaced by a step
  clients=2..8              every integer
  ttl=1s,2s,5s              a list
Series (--vary KEY=A,B,C once more, a list with words, e.g. retry=fixed,uniform or
protected=guid,guid+session): each value is a line of its own in the plots, beside the
algorithms, not an axis.
Fault-shape knobs: pause_min, pause_max, step_max, drift_ppm (or drift_min_ppm and
drift_max_ppm), partition_max; unset, they scale with the TTL (see `locksim list`).

Per point, algorithm and fault kind: the seeds run, the seeds violating each property with
a 95% Wilson score interval, grants, acquire latency p50/p99, wait for the lock p50/p99, the
busiest 100 ms of acquire attempts (of each seed's second half, and of the whole run: the
herd a retry policy makes), the first failing seed; --csv and --json add the mean request
rate, retries per grant and Jain's fairness index of grants per client. A point
with no grants, undecided checks or seeds that failed to run says so in capitals: its zero
proves nothing.

Frontier files (sims/frontier/*.toml, given as paths) are sweeps with expectations about
where a property starts being violated; the command exits 1 naming each boundary that moved.

Examples:
  locksim sweep --algo redlock,central-fencing --faults pause --vary pause_max=100ms..3s:10 \\
      --set ttl=1s --seeds 300 --report f.html
  locksim sweep --algo redlock --faults clock-drift --vary drift_ppm=0..200000:11 --csv
  locksim sweep --algo redlock --faults pause --vary pause_max=100ms..3s:8 --vary ttl=500ms..4s:6
  locksim sweep --algo central --faults none --vary clients=5,10,20,50 \\
      --vary retry=fixed,uniform,exponential-full --set retry_delay=1s --report herd.html
  locksim sweep sims/frontier/                        the frontier files; exit 1 if a boundary moved
  locksim sweep ... --shard 0/4 --out part0.jsonl     then: locksim merge [--json|--csv] part*.jsonl";

#[derive(Args)]
pub struct SweepArgs {
    /// Frontier files (TOML) or folders of them, e.g. `sims/frontier/`; without any, the sweep
    /// the flags describe.
    #[arg(value_name = "FILE|DIR")]
    paths: Vec<PathBuf>,
    /// Algorithms, comma-separated, each once (one line each in the plots).
    #[arg(long, value_name = "NAME[,NAME]", value_delimiter = ',')]
    algo: Vec<String>,
    /// Fault kinds, comma-separated [default: pause].
    #[arg(long, value_name = "KIND[,KIND]")]
    faults: Option<String>,
    /// An axis: KEY=LO..HI:N (log-spaced when LO > 0), KEY=LO..HI+STEP, KEY=LO..HI
    /// (integers) or KEY=A,B,C. Once or twice.
    #[arg(long, value_name = "KEY=RANGE")]
    vary: Vec<String>,
    /// A setting every point gets, e.g. `ttl=1s` (repeatable, each key once), as for
    /// `campaign`; a knob that is also a --vary axis is an error.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Seeds per point, algorithm and fault kind [default: 100].
    #[arg(long, value_name = "N")]
    seeds: Option<u64>,
    /// First seed [default: 0].
    #[arg(long, value_name = "N")]
    first_seed: Option<u64>,
    /// Worker threads [default: every core].
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Run only shard I of N of every point (as for `campaign`; then `locksim merge`).
    #[arg(long, value_name = "I/N", conflicts_with = "shards")]
    shard: Option<String>,
    /// Split into N shards; JOB_COMPLETION_INDEX names this one (a Kubernetes Indexed Job).
    #[arg(long, value_name = "N")]
    shards: Option<u64>,
    /// Write one JSON line per seed to this file as each finishes (for `locksim merge`). An
    /// existing file is never replaced without --force.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Replace an existing --out file, or a --report page locksim did not write.
    #[arg(long)]
    force: bool,
    /// Print one JSON object instead of the table.
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// Print CSV (one row per point, algorithm and fault kind) instead of the table.
    #[arg(long)]
    csv: bool,
    /// Also plot L1–L3 (always checked, always in --json and --csv).
    #[arg(long, value_name = "liveness")]
    check: Option<crate::args::Check>,
    /// Write the plots and the table as one self-contained HTML page; the shrunk first failing
    /// seed of every point goes, with its timeline, into FILE-files/ beside it.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Also write the first plot alone as an SVG file (the first property's rates; with two
    /// axes, its heat map for the first algorithm), e.g. for a README. An existing file is
    /// never replaced without --force.
    #[arg(long, value_name = "FILE.svg")]
    svg: Option<PathBuf>,
    /// Which plot --svg writes instead of the first: a property (`S1`, …), `latency`,
    /// `grants`, `attempts` (acquire attempts per second in the busiest 100 ms) or `wait`.
    #[arg(long, value_name = "NAME", requires = "svg")]
    plot: Option<String>,
    #[command(flatten)]
    memory: MemoryArgs,
}

/// Runs one sweep (this shard of it), its progress shown, streaming records to `out`.
fn run_sweep(
    label: &str,
    def: SweepDef,
    jobs: usize,
    shard: Shard,
    memory: &MemoryArgs,
    out: Option<&Writer>,
) -> Result<Ran, String> {
    let (spec, labels) = def.spec(jobs)?;
    memory.check_campaign(&spec, jobs)?;
    let progress = Progress::new("seeds", sweep_run::seeds_to_run(&spec, shard));
    let ran = sweep_run::run(label, def, (spec, labels), shard, out, &|n| progress.set(n))?;
    progress.finish();
    Ok(ran)
}

/// Refuses flags that do not go together, or targets that would be replaced, before any
/// seed runs.
fn check_flags(a: &SweepArgs, shard: Shard) -> Result<(), String> {
    if a.report.is_some() && shard != Shard::ALL {
        return Err("--report needs the whole sweep, not one shard".into());
    }
    if let Some(r) = &a.report {
        report::check_target_with_out(r, a.out.as_deref(), a.force)?;
    }
    if let Some(p) = a.svg.as_ref().filter(|p| p.exists() && !a.force) {
        return Err(format!(
            "{} exists; not replacing it (give --force to replace it)",
            p.display()
        ));
    }
    if let Some(name) = &a.plot {
        sweep_run::check_plot(name)?;
    }
    if a.svg.is_some() && !a.paths.is_empty() {
        return Err("--svg draws the command line's sweep, not frontier files".into());
    }
    Ok(())
}

pub fn main(a: SweepArgs) -> Result<ExitCode, String> {
    let started = Instant::now();
    let jobs = crate::args::jobs_of(a.jobs)?;
    let shard = Shard::resolve(a.shard.as_deref(), a.shards, &|k| std::env::var(k).ok())?
        .unwrap_or(Shard::ALL);
    check_flags(&a, shard)?;
    let liveness = a.check.is_some();
    let out_file = match &a.out {
        Some(p) => Some(sweep_run::create_out(p, a.force)?),
        None => None,
    };
    if !a.paths.is_empty() {
        if !a.vary.is_empty() || !a.algo.is_empty() || a.faults.is_some() || !a.set.is_empty() {
            return Err(
                "frontier files say what to sweep: give either files or --algo/--vary/--set/--faults"
                    .into(),
            );
        }
        if a.seeds.is_some() || a.first_seed.is_some() {
            return Err(
                "--seeds and --first-seed describe a command-line sweep; frontier files carry their own `seeds`"
                    .into(),
            );
        }
        return files(&a, jobs, shard, out_file.as_ref(), started);
    }
    let def = sweep_run::from_flags(&sweep_run::Flags {
        algo: &a.algo,
        vary: &a.vary,
        set: &a.set,
        faults: a.faults.as_deref(),
        seeds: a.seeds,
        first_seed: a.first_seed,
    })?;
    let seeds = def.seeds;
    let made_by = sweep_run::command_line(crate::program(), &def, &a.vary, &a.set);
    let ran = run_sweep("sweep", def, jobs, shard, &a.memory, out_file.as_ref())?;
    let keys: Vec<String> = ran.def.axes.iter().map(|x| x.key.clone()).collect();
    let seeds_here = shard.seeds_of(seeds);
    if let Some(path) = &a.svg {
        let axes = &ran.def.axes;
        let s = sweep_text::section(None, vec![], axes, &ran.results, seeds_here, liveness, &[]);
        sweep_run::write_svg(path, &s, a.plot.as_deref(), a.force)?;
        eprintln!("plot: {}", path.display());
    }
    if let Some(path) = &a.report {
        report_page(&a, path, &ran, (seeds_here, liveness), &made_by, jobs)?;
    }
    if a.json {
        out(&format!("{}\n", sweep_run::json(&ran, seeds_here)));
    } else if a.csv {
        out(&sweep_text::csv(&ran.results, &keys, seeds_here, ""));
    } else {
        out(&sweep_text::table(
            &ran.results,
            &keys,
            seeds_here,
            liveness,
        ));
    }
    warn(&ran.results, seeds_here);
    eprintln!(
        "{} in {:.1}s on {}",
        plural(sweep_run::seeds_run(&ran, seeds_here), "seed"),
        started.elapsed().as_secs_f64(),
        plural(jobs as u64, "thread")
    );
    Ok(ExitCode::from(Exit::CLEAN))
}

/// `--report` of the command line's sweep: the plots and the table, each failing point's
/// first failing seed shrunk beside it.
fn report_page(
    a: &SweepArgs,
    path: &Path,
    ran: &Ran,
    (seeds_here, liveness): (u64, bool),
    made_by: &str,
    jobs: usize,
) -> Result<(), String> {
    let dir = report::files_dir(path);
    let made = shrink(ran, &dir, jobs);
    let axes = &ran.def.axes;
    let s = sweep_text::section(
        None,
        vec![],
        axes,
        &ran.results,
        seeds_here,
        liveness,
        &made,
    );
    let notes = sweep_run::report_notes(ran, made_by, path);
    let html = sweep_report("locksim sweep", &notes, &[s]);
    locksim_explore::page::write_page(path, &html, a.force)?;
    eprintln!("report: {} (traces in {})", path.display(), dir.display());
    Ok(())
}

/// Runs frontier files and judges them; exit 1 when a boundary moved.
fn files(
    a: &SweepArgs,
    jobs: usize,
    shard: Shard,
    out_file: Option<&Writer>,
    started: Instant,
) -> Result<ExitCode, String> {
    let files = FrontierFile::collect(&a.paths)?;
    if files.is_empty() {
        return Err("no frontier files (*.toml) in the given paths".into());
    }
    let mut failed = 0;
    let mut sections = Vec::new();
    let mut json = Vec::new();
    let mut total = 0;
    for f in &files {
        let label = f.path.display().to_string();
        eprintln!("== {}", f.name);
        let ran = run_sweep(&label, f.sweep.clone(), jobs, shard, &a.memory, out_file)?;
        let seeds_here = shard.seeds_of(f.sweep.seeds);
        total += sweep_run::seeds_run(&ran, seeds_here);
        let done = sweep_run::frontier_done(f, &ran, shard, seeds_here, a.check.is_some());
        failed += usize::from(done.failed);
        if !a.json && !a.csv {
            out(&done.text);
        } else if a.csv {
            let keys: Vec<String> = f.sweep.axes.iter().map(|x| x.key.clone()).collect();
            out(&sweep_text::csv(&ran.results, &keys, seeds_here, &label));
        }
        warn(&ran.results, seeds_here);
        if let Some(path) = &a.report {
            let made = shrink(&ran, &report::files_dir(path), jobs);
            let mut notes = vec![format!("Why: {}", f.why)];
            notes.extend(done.problems.iter().map(|p| format!("FAIL: {p}")));
            sections.push(sweep_text::section(
                Some(format!("{} ({label}): {}", f.name, done.verdict)),
                notes,
                &f.sweep.axes,
                &ran.results,
                seeds_here,
                a.check.is_some(),
                &made,
            ));
        }
        json.push(done.json);
    }
    if let Some(path) = &a.report {
        let paths: Vec<String> = a.paths.iter().map(|p| p.display().to_string()).collect();
        let made_by = format!(
            "Made by: {} sweep {} --report {}",
            crate::program(),
            paths.join(" "),
            path.display()
        );
        let html = sweep_report("locksim sweep: frontier files", &[made_by], &sections);
        locksim_explore::page::write_page(path, &html, a.force)?;
    }
    if a.json {
        out(&format!("{}\n", serde_json::json!({ "frontiers": json })));
    }
    eprintln!(
        "{}, {} in {:.1}s; {}",
        plural(files.len() as u64, "frontier file"),
        plural(total, "seed"),
        started.elapsed().as_secs_f64(),
        locksim_explore::campaign_run::expectations(failed, shard)
    );
    Ok(ExitCode::from(if failed > 0 {
        Exit::VIOLATION
    } else {
        Exit::CLEAN
    }))
}

/// Prints the warnings about the points that prove nothing (stderr).
fn warn(results: &[PointResult], seeds: u64) {
    for line in sweep_text::warnings(results, seeds) {
        eprintln!("{line}");
    }
}

/// Shrinks the first failing seed of every failing point of `ran` for the report.
fn shrink(ran: &Ran, dir: &Path, jobs: usize) -> Vec<report::Made> {
    let shown = crate::progress::shrinking(
        |n| {
            format!(
                "shrinking the first failing seed of {} for the report",
                plural(n, "point")
            )
        },
        "points shrunk",
    );
    let (def, spec, results) = (&ran.def, &ran.spec, &ran.results);
    report::shrink_points(def, spec, results, dir, jobs, crate::program(), &shown)
}
