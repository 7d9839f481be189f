//! `locksim campaign` (the algorithm × fault-kind matrix, or campaign files from `sims/`) and
//! `locksim merge` (shards' results into one summary).
//!
//! Records stream to `--out` as seeds finish (one flushed JSON line each), and the summary keeps
//! only per-cell aggregates, so a campaign's memory does not grow with its seeds and an
//! interrupted campaign loses at most the seeds in flight (`--resume` runs the rest).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use locksim_core::fault::parse_kinds;
use locksim_core::FaultKind;
use locksim_explore::campaign_json::{to_json, Campaigns, Cells};
use locksim_explore::campaign_run::{self, Job};
use locksim_explore::campaign_words::{self as words, Ran};
use locksim_explore::record_file::Writer;
use locksim_explore::report;
use locksim_explore::seed_flags::SeedFlags;
use locksim_explore::table::{legend, shows_liveness, table_body};
use locksim_explore::Shard;

use crate::args::{jobs_of, Check, FailOn, MemoryArgs};
use crate::exit::{campaign_exit, gated, Exit};
use crate::progress::Progress;
use crate::{out, plural, program};

#[derive(Args)]
pub struct CampaignArgs {
    /// Campaign files (TOML) or folders of them, e.g. `sims/`; without any, the matrix below.
    #[arg(value_name = "FILE|DIR")]
    paths: Vec<PathBuf>,
    /// Algorithms to run, comma-separated, each once [default:
    /// central,central-fencing,redlock,raft-lease].
    #[arg(long, value_name = "NAME[,NAME]", value_delimiter = ',')]
    algo: Vec<String>,
    /// Run every registered algorithm (`locksim list`), not only the default matrix's.
    #[arg(long, conflicts_with = "algo")]
    all_algorithms: bool,
    /// Print the matrix as a Markdown table (one row per algorithm, one column per fault kind,
    /// and the fault kinds each survives without an S1–S4 violation), as the README's "which
    /// lock should I use" table is made.
    #[arg(long, conflicts_with = "json")]
    markdown: bool,
    /// Fault kinds, comma-separated
    /// [default: none,partition,pause,clock-jump,clock-drift,crash-restart,leader-change,mixed].
    #[arg(long, value_name = "KIND[,KIND]")]
    faults: Option<String>,
    /// Seeds per cell [default: 300]. With campaign files, overrides each file's own `seeds`
    /// (the output says so; expectations are still judged).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    seeds: Option<String>,
    /// First seed of the range (seeds are first-seed .. first-seed + seeds) [default: 0].
    /// With campaign files, overrides each file's own `first_seed`.
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    first_seed: Option<String>,
    /// Worker threads [default: every core].
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// A workload or algorithm setting, e.g. `ttl=2s` (repeatable, each key once: a key given
    /// twice is an error). An algorithm setting goes to the algorithms that have it. See `locksim list`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Run only shard I of N (the seeds whose offset is I modulo N, in every cell). Without it,
    /// a Kubernetes Indexed Job's JOB_COMPLETION_INDEX (with --shards N or JOB_COMPLETIONS)
    /// chooses the shard.
    #[arg(long, value_name = "I/N", conflicts_with = "shards")]
    shard: Option<String>,
    /// Split the campaign into N shards and run the one JOB_COMPLETION_INDEX names (the index
    /// a Kubernetes Indexed Job gives each pod; N is the job's `completions`).
    #[arg(long, value_name = "N")]
    shards: Option<u64>,
    /// Write one JSON line per seed to this file as each seed finishes, for `locksim merge`
    /// and `--resume`. An existing file is never replaced without --force.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Continue the campaign recorded in --out FILE: seeds already there are not run again
    /// (their records count in the summary), the others are appended. The file's records must
    /// come from the same campaign (algorithms, settings, fault kinds, seeds, shard).
    #[arg(long, requires = "out", conflicts_with = "force")]
    resume: bool,
    /// Replace an existing --out FILE (or --report page that locksim did not write).
    #[arg(long)]
    force: bool,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// Leave out the legend (what the columns mean) after the tables, and the progress lines.
    #[arg(long, short = 'q')]
    quiet: bool,
    /// Also show these properties' columns: `liveness` (L1–L3; shown anyway when a seed
    /// violates one or leaves one undecided, and for campaign files that name an L property).
    /// They are always checked and always in --json.
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
    #[command(flatten)]
    fail_on: FailOn,
    #[command(flatten)]
    memory: MemoryArgs,
}

#[derive(Args)]
pub struct MergeArgs {
    /// Per-seed results written by `locksim campaign --out` or `locksim sweep --out` on each
    /// shard.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Summarize what the files hold even when seeds or shards are missing (by default that is
    /// an error): say which are missing and judge no campaign file (exit 3 when a campaign
    /// file's expectation or --fail-on is left unjudged so, else 0).
    #[arg(long)]
    partial: bool,
    /// Print one JSON object instead of a table: for a sweep's records the object `sweep
    /// --json` prints (`{"axes", "points"}`; frontier files: `{"frontiers": [...]}`; the axes
    /// are a frontier file's own, or rebuilt from the records' points, where a two-point axis
    /// reads as linear), for a campaign's the object `campaign --json` prints.
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// Print a sweep's records as `sweep --csv` does (one row per point, algorithm and fault
    /// kind; the same columns). Campaign records have no CSV form: for them it is an error.
    #[arg(long, conflicts_with = "report")]
    csv: bool,
    /// Also write the merged matrix (one per campaign file) as an HTML page to FILE, as
    /// `campaign --report` does: each violated cell's first failing seed shrunk here (from the
    /// scenario its shard's record carries, or the campaign file) and linked with its trace
    /// and timeline in FILE-files/.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Worker threads for shrinking the report's seeds [default: every core].
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Replace a --report page that locksim did not write.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    fail_on: FailOn,
}

/// Opens `--out` (see [`campaign_run::open_out`]), printing its notes.
fn open_out(a: &CampaignArgs, jobs: &mut [Job], shard: Shard) -> Result<Option<Writer>, String> {
    let Some(path) = &a.out else {
        return Ok(None);
    };
    let (w, notes) = campaign_run::open_out(path, &a.paths, a.resume, a.force, jobs, shard)?;
    for n in notes {
        eprintln!("{n}");
    }
    Ok(Some(w))
}

/// Runs the seeds of `job` not yet recorded (see [`campaign_run::run_job`]), its progress
/// hidden (`quiet`), or shown as the matrix's, or as file `i` of `n` (`file`); returns the
/// seeds run now.
fn run(
    job: &mut Job,
    (shard, out): (Shard, Option<&Writer>),
    quiet: bool,
    file: Option<(usize, usize)>,
) -> Result<u64, String> {
    let total = campaign_run::seeds_to_run(job, shard);
    let progress = match file {
        _ if quiet => Progress::hidden("seeds", total),
        None => Progress::new("seeds", total),
        Some((i, n)) => Progress::for_file(&format!("[{i}/{n}] {}", job.label), "seeds", total),
    };
    let ran = campaign_run::run_job(job, shard, out, &|n| progress.set(n));
    progress.finish();
    ran
}

pub fn main(a: CampaignArgs) -> Result<ExitCode, String> {
    let flags = SeedFlags::parse(a.seeds.as_deref(), a.first_seed.as_deref())?;
    let jobs = jobs_of(a.jobs)?;
    let fail_on = a.fail_on.properties()?;
    let shard = Shard::resolve(a.shard.as_deref(), a.shards, &|k| std::env::var(k).ok())?
        .unwrap_or(Shard::ALL);
    let started = Instant::now();
    if a.report.is_some() && shard != Shard::ALL {
        return Err("--report needs the whole campaign, not one shard".into());
    }
    if !a.paths.is_empty() {
        return files(&a, flags, jobs, shard, started);
    }
    let (seeds, first_seed) = (flags.seeds.unwrap_or(300), flags.first_seed.unwrap_or(0));
    let algos = campaign_run::matrix_algorithms(a.all_algorithms, &a.algo)?;
    let kinds = match &a.faults {
        Some(f) => parse_kinds(f)?,
        None => FaultKind::DEFAULT_MATRIX.to_vec(),
    };
    let spec = campaign_run::matrix_spec(
        &algos,
        &a.set,
        kinds,
        a.plan.as_deref(),
        (first_seed, seeds),
        jobs,
    )?;
    a.memory.check_campaign(&spec, jobs)?;
    if let Some(r) = &a.report {
        report::check_target_with_out(r, a.out.as_deref(), a.force)?;
    }
    let mut job = [Job::new(String::new(), &spec)];
    let out_file = open_out(&a, &mut job, shard)?;
    let [mut job] = job;
    let resumed = job.done.len() as u64;
    let ran = run(&mut job, (shard, out_file.as_ref()), a.quiet, None)?;
    let cells = job.summary.cells();
    if let Some(path) = &a.report {
        let section = report::Section {
            heading: None,
            notes: vec![],
            starts: report::starts_of(&spec, &cells),
            cells: cells.to_vec(),
        };
        let notes = words::matrix_notes(&spec, &algos, &a.set, program());
        write_report(path, &[section], spec.jobs, notes, a.force)?;
    }
    if a.json {
        let missing = &[];
        out(&format!(
            "{}\n",
            to_json(&Cells {
                cells: &cells,
                missing
            })
        ));
    } else if a.markdown {
        let all = a.all_algorithms;
        out(&words::matrix_markdown(
            &spec,
            &algos,
            &a.set,
            all,
            program(),
            &cells,
        ));
    } else {
        let liveness = shows_liveness(&cells, a.check == Some(Check::Liveness));
        out(&table_body(&cells, liveness));
        if !a.quiet {
            out(&legend(liveness));
        }
        let secs = started.elapsed().as_secs_f64();
        let r = Ran {
            ran,
            resumed,
            secs,
            jobs,
            shard,
        };
        eprint!("{}", words::matrix_tail(&cells, &a.set, r, program()));
    }
    Ok(said(campaign_exit(&cells, &fail_on, Exit::CLEAN)))
}

/// Prints the gate's reasons (see [`locksim_explore::exit::gated`]) and returns the code.
fn said((code, why): (Exit, Vec<String>)) -> ExitCode {
    for w in &why {
        eprintln!("{w}");
    }
    code.into()
}

/// Writes `--report` (see [`report::write`]) with its shrinking's progress, and says where.
fn write_report(
    path: &Path,
    sections: &[report::Section],
    jobs: usize,
    notes: Vec<String>,
    force: bool,
) -> Result<(), String> {
    let shown = crate::progress::shrinking(
        |n| format!("shrinking the first failing seed of {n} violated cells for the report"),
        "cells shrunk",
    );
    let pages = report::write(path, sections, jobs, notes, force, program(), &shown)?;
    eprintln!(
        "report: {} ({} and their timelines in {})",
        path.display(),
        plural(pages as u64, "shrunk trace"),
        report::files_dir(path).display()
    );
    Ok(())
}

/// `campaign FILE|DIR…`: each campaign file run in turn, its table printed as it finishes.
fn files(
    a: &CampaignArgs,
    flags: SeedFlags,
    jobs: usize,
    shard: Shard,
    started: Instant,
) -> Result<ExitCode, String> {
    if a.all_algorithms || a.markdown {
        return Err("--all-algorithms and --markdown make the matrix; campaign files say their own algorithm".into());
    }
    if !a.algo.is_empty() || a.faults.is_some() || !a.set.is_empty() || a.plan.is_some() {
        return Err(
            "--algo, --faults, --set and --plan describe the matrix; campaign files carry their own"
                .into(),
        );
    }
    let (files, own) = campaign_run::collect_files(&a.paths, flags)?;
    let mut specs = Vec::new();
    for f in &files {
        let spec = f.spec(jobs)?;
        a.memory
            .check_campaign(&spec, jobs)
            .map_err(|e| format!("{}: {e}", f.path.display()))?;
        specs.push(spec);
    }
    if let Some(r) = &a.report {
        report::check_target_with_out(r, a.out.as_deref(), a.force)?;
    }
    let mut campaign_jobs: Vec<Job> = files
        .iter()
        .zip(&specs)
        .map(|(f, spec)| Job::new(f.path.display().to_string(), spec))
        .collect();
    let out_file = open_out(a, &mut campaign_jobs, shard)?;
    let fail_on = a.fail_on.properties()?;
    // Text goes out as each file finishes; the legend once, after the last.
    let text = !a.json;
    if flags.given() {
        let note = flags.note();
        if text {
            out(&format!("{note}\n\n"));
        } else {
            eprintln!("{note}");
        }
    }
    let mut all = campaign_run::FilesRun::default();
    let count = files.len();
    for (i, (f, mut job)) in files.iter().zip(campaign_jobs).enumerate() {
        run(
            &mut job,
            (shard, out_file.as_ref()),
            a.quiet,
            Some((i + 1, count)),
        )?;
        let (liveness, report) = (a.check == Some(Check::Liveness), a.report.is_some());
        let cells = job.summary.cells();
        let done = campaign_run::file_done(f, job.spec, cells, (shard, own[i]), liveness, report);
        let table = all.add(done);
        if text {
            out(&table);
        }
    }
    let failed = all.failed;
    if let Some(path) = &a.report {
        let notes = words::files_notes(&a.paths, flags, (count, failed), program());
        write_report(path, &all.sections, jobs, notes, a.force)?;
    }
    if a.json {
        out(&format!(
            "{}\n",
            to_json(&Campaigns {
                campaigns: &all.results
            })
        ));
    } else {
        if !a.quiet {
            out(legend(all.liveness).trim_start_matches('\n'));
        }
        eprintln!(
            "{}, {} in {:.1}s; {}",
            plural(count as u64, "campaign file"),
            plural(all.seeds, "seed"),
            started.elapsed().as_secs_f64(),
            campaign_run::expectations(failed, shard),
        );
    }
    let code = if failed > 0 {
        Exit::VIOLATION
    } else {
        Exit::CLEAN
    };
    Ok(said(campaign_exit(&all.cells, &fail_on, code)))
}

pub fn merge(a: MergeArgs) -> Result<ExitCode, String> {
    let fail_on = a.fail_on.properties()?;
    if let Some(r) = &a.report {
        report::check_target(r, a.force)?;
    }
    let m = locksim_explore::merge::merge_files(
        &a.files,
        a.partial,
        !fail_on.is_empty(),
        a.report.is_some(),
        &mut |n| eprintln!("{n}"),
    )?;
    if !fail_on.is_empty() && !m.sweeps.is_empty() {
        // Judging nothing would be a silent pass.
        return Err(
            "--fail-on judges campaign records; these are a sweep's (a frontier file's boundaries judge a sweep: `locksim sweep FILE`)"
                .into(),
        );
    }
    if let Some(path) = &a.report {
        let notes = words::merge_notes(&a.files, a.partial, path, program());
        let jobs = a
            .jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        write_report(path, &m.sections, jobs, notes, a.force)?;
    }
    let cells = m.cells();
    if a.csv {
        out(&m.csv()?);
    } else if a.json {
        let json = locksim_explore::merge::json(m.campaigns, &m.sweeps);
        out(&format!("{json}\n"));
    } else {
        out(&m.text_with_legend());
    }
    let code = match (m.failed, m.unjudged) {
        (0, 0) => Exit::CLEAN,
        (0, _) => Exit::UNDECIDED,
        _ => Exit::VIOLATION,
    };
    Ok(said(gated(&cells, &fail_on, code)))
}
