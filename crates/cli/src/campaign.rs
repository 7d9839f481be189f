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
use locksim_core::{FaultKind, Property};
use locksim_explore::campaign::fingerprint;
use locksim_explore::campaign_file::CampaignFile;
use locksim_explore::campaign_json::{to_json, Campaigns, Cells, FileResult};
use locksim_explore::campaign_run::{self, Job};
use locksim_explore::merge::Merged;
use locksim_explore::record_file::Writer;
use locksim_explore::{report, sweep_text};
use locksim_explore::{CampaignSpec, CellSummary, Shard};

use crate::args::{jobs_of, Check, FailOn, MemoryArgs};
use crate::exit::Exit;
use crate::progress::Progress;
use crate::{out, plural};
use locksim_explore::table::{legend, shows_liveness, table_body};

mod seeds;

use seeds::SeedFlags;

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

fn jobs(a: &CampaignArgs) -> Result<usize, String> {
    jobs_of(a.jobs)
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
/// shown as `shown` says; returns the seeds run now.
fn run(job: &mut Job, shard: Shard, out: Option<&Writer>, shown: Shown) -> Result<u64, String> {
    let total = campaign_run::seeds_to_run(job, shard);
    let progress = match shown {
        Shown::Quiet => Progress::hidden("seeds", total),
        Shown::Matrix => Progress::new("seeds", total),
        Shown::File { index, of } => {
            Progress::for_file(&format!("[{index}/{of}] {}", job.label), "seeds", total)
        }
    };
    let ran = campaign_run::run_job(job, shard, out, &|n| progress.set(n));
    progress.finish();
    ran
}

/// How a campaign's progress shows: as the matrix's, as one file of several, or not at all.
#[derive(Clone, Copy)]
enum Shown {
    Quiet,
    Matrix,
    /// File `index` (from 1) of `of`.
    File {
        index: usize,
        of: usize,
    },
}

pub fn main(a: CampaignArgs) -> Result<ExitCode, String> {
    let flags = SeedFlags::parse(a.seeds.as_deref(), a.first_seed.as_deref())?;
    let jobs = jobs(&a)?;
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
    let algos = matrix_algorithms(&a)?;
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
    let shown = if a.quiet { Shown::Quiet } else { Shown::Matrix };
    let ran = run(&mut job, shard, out_file.as_ref(), shown)?;
    let cells = job.summary.cells();
    if let Some(path) = &a.report {
        matrix_report(&a, path, &spec, &algos, &cells)?;
    }
    if a.json {
        out(&format!(
            "{}\n",
            to_json(&Cells {
                cells: &cells,
                missing: &[]
            })
        ));
    } else if a.markdown {
        out(&matrix_markdown(&a, &spec, &algos, &cells));
    } else {
        let liveness = shows_liveness(&cells, a.check == Some(Check::Liveness));
        out(&table_body(&cells, liveness));
        if !a.quiet {
            out(&legend(liveness));
        }
        eprint!(
            "{}",
            matrix_tail(&a, &cells, started, (ran, resumed), (jobs, shard))
        );
    }
    Ok(run_gate(&cells, &fail_on, Exit::CLEAN))
}

/// The matrix's algorithms: `--all-algorithms`, `--algo`, or the default matrix's.
fn matrix_algorithms(a: &CampaignArgs) -> Result<Vec<String>, String> {
    let algos: Vec<String> = if a.all_algorithms {
        locksim_algos::algorithms()
            .iter()
            .map(|a| a.0.to_string())
            .collect()
    } else if a.algo.is_empty() {
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
    Ok(algos)
}

/// `--report` of the matrix.
fn matrix_report(
    a: &CampaignArgs,
    path: &Path,
    spec: &CampaignSpec,
    algos: &[String],
    cells: &[CellSummary],
) -> Result<(), String> {
    let (first_seed, seeds) = (spec.first_seed, spec.seeds);
    let sets: String = a.set.iter().map(|s| format!(" --set {s}")).collect();
    let notes = vec![
        format!(
            "{} × {}, seeds {}‥{} of each cell{sets}.",
            plural(spec.setups.len() as u64, "algorithm"),
            plural(spec.kinds.len() as u64, "fault kind"),
            first_seed,
            first_seed + seeds - 1
        ),
        format!(
            "Made by: {} campaign --algo {} --faults {} --seeds {seeds} --first-seed {first_seed}{sets}",
            crate::program(),
            algos.join(","),
            spec.kinds.iter().map(|k| k.name()).collect::<Vec<_>>().join(",")
        ),
    ];
    let section = report::Section {
        heading: None,
        notes: vec![],
        starts: report::starts_of(spec, cells),
        cells: cells.to_vec(),
    };
    write_report(path, &[section], spec.jobs, notes, a.force)
}

/// `--markdown`: the matrix as the README's table.
fn matrix_markdown(
    a: &CampaignArgs,
    spec: &CampaignSpec,
    algos: &[String],
    cells: &[CellSummary],
) -> String {
    let seeds = spec.seeds;
    let sets: String = a.set.iter().map(|s| format!(" --set {s}")).collect();
    let which = if a.all_algorithms {
        " --all-algorithms".to_string()
    } else {
        format!(" --algo {}", algos.join(","))
    };
    let command = format!(
        "{} campaign{which} --faults {} --seeds {seeds}{sets} --markdown",
        crate::program(),
        spec.kinds
            .iter()
            .map(|k| k.name())
            .collect::<Vec<_>>()
            .join(",")
    );
    let describe = |name: &str| {
        locksim_algos::algorithms()
            .iter()
            .find(|a| a.0 == name)
            .map_or(String::new(), |a| a.1.replace('|', "/"))
    };
    locksim_explore::markdown::table(cells, describe, &command)
}

/// The matrix's last lines on stderr: the seeds run (`ran` now, `resumed` recorded before)
/// and how fast, and how to look at a failing seed.
fn matrix_tail(
    a: &CampaignArgs,
    cells: &[CellSummary],
    started: Instant,
    (ran, resumed): (u64, u64),
    (jobs, shard): (usize, Shard),
) -> String {
    let secs = started.elapsed().as_secs_f64();
    let mut tail = format!(
        "\n{} in {secs:.1}s on {} ({:.0} seeds/s){}{}.\n",
        plural(ran, "seed"),
        plural(jobs as u64, "thread"),
        ran as f64 / secs.max(1e-9),
        if resumed > 0 {
            format!(", and {} recorded before", plural(resumed, "seed"))
        } else {
            String::new()
        },
        if shard == Shard::ALL {
            String::new()
        } else {
            format!(", shard {}/{}", shard.index, shard.count)
        }
    );
    if let Some(c) = cells.iter().find(|c| c.first_failing_seed.is_some()) {
        let sets: String = a.set.iter().map(|s| format!(" --set {s}")).collect();
        tail += &format!(
            "See a failing seed's timeline (--html draws it as a page), or shrink it to a trace, e.g.:\n  {3} run --algo {0} --faults {1} --seed {2}{sets} --html seed{2}.html\n  {3} shrink --algo {0} --faults {1} --seed {2}{sets}\n",
            c.algorithm,
            c.faults,
            c.first_failing_seed.unwrap_or(0),
            crate::program(),
        );
    }
    tail
}

/// The exit code of a campaign or merge whose campaign files' expectations gave `code`
/// ([`Exit::CLEAN`] or [`Exit::VIOLATION`]): with `--fail-on`, also the gate's finding on
/// `cells` (its reasons on stderr); the stronger wins.
fn gate(cells: &[CellSummary], fail_on: &[Property], code: Exit) -> Exit {
    if fail_on.is_empty() {
        return code;
    }
    let (own, why) = locksim_explore::gate::judge(cells, fail_on);
    for w in &why {
        eprintln!("{}", locksim_core::text::one_line(w));
    }
    code.worst(Exit::of_gate(own))
}

/// [`gate`] for a campaign run (not a merge): a run that judged no seed (a shard without
/// seeds) proves nothing, with or without --fail-on: exit 3, said on stderr.
fn run_gate(cells: &[CellSummary], fail_on: &[Property], code: Exit) -> ExitCode {
    let code = gate(cells, fail_on, code);
    // With --fail-on, gate has said so already.
    if fail_on.is_empty() && cells.iter().all(|c| c.seeds == 0) {
        eprintln!("no seed was judged (a shard without seeds): this run proves nothing");
        return code.worst(Exit::UNDECIDED).into();
    }
    code.into()
}

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
    let pages = report::write(path, sections, jobs, notes, force, crate::program(), &shown)?;
    eprintln!(
        "report: {} ({} and their timelines in {})",
        path.display(),
        plural(pages as u64, "shrunk trace"),
        report::files_dir(path).display()
    );
    Ok(())
}

fn files(
    a: &CampaignArgs,
    flags: SeedFlags,
    jobs: usize,
    shard: Shard,
    started: Instant,
) -> Result<ExitCode, String> {
    let (files, own) = collect_files(a, flags)?;
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
    let mut every_cell = Vec::new();
    let (mut json, mut failed, mut total) = (Vec::new(), 0, 0u64);
    let mut any_liveness = false;
    let mut sections = Vec::new();
    let count = files.len();
    for (i, (f, mut job)) in files.iter().zip(campaign_jobs).enumerate() {
        let shown = if a.quiet {
            Shown::Quiet
        } else {
            Shown::File {
                index: i + 1,
                of: count,
            }
        };
        run(&mut job, shard, out_file.as_ref(), shown)?;
        let cells = job.summary.cells();
        every_cell.extend(cells.iter().cloned());
        total += cells.iter().map(|c| c.seeds).sum::<u64>();
        let (problems, verdict) = file_verdict(f, &cells, shard, own[i]);
        failed += usize::from(!problems.is_empty());
        let heading = format!("== {} ({}): {verdict}\n", f.name, f.path.display());
        if a.report.is_some() {
            sections.push(report::Section {
                heading: Some(format!("{} ({}): {verdict}", f.name, f.path.display())),
                notes: vec![],
                starts: report::starts_of(job.spec, &cells),
                cells: cells.clone(),
            });
        }
        let liveness = shows_liveness(
            &cells,
            f.asks_liveness() || a.check == Some(Check::Liveness),
        );
        any_liveness |= liveness;
        if text {
            out(&format!("{heading}{}\n", table_body(&cells, liveness)));
        }
        json.push(FileResult {
            name: f.name.clone(),
            file: f.path.display().to_string(),
            ok: problems.is_empty(),
            problems,
            cells,
            // One shard's `ok` says nothing: the verdict says so.
            verdict: (shard != Shard::ALL).then(|| "not judged: one shard, judged at merge".into()),
            missing: Vec::new(),
        });
    }
    if let Some(path) = &a.report {
        files_report(a, path, flags, (files.len(), failed), &sections, jobs)?;
    }
    if a.json {
        out(&format!("{}\n", to_json(&Campaigns { campaigns: &json })));
    } else {
        if !a.quiet {
            out(legend(any_liveness).trim_start_matches('\n'));
        }
        eprintln!(
            "{}, {} in {:.1}s; {}",
            plural(files.len() as u64, "campaign file"),
            plural(total, "seed"),
            started.elapsed().as_secs_f64(),
            campaign_run::expectations(failed, shard),
        );
    }
    Ok(run_gate(
        &every_cell,
        &fail_on,
        if failed > 0 {
            Exit::VIOLATION
        } else {
            Exit::CLEAN
        },
    ))
}

/// A campaign file's problems and verdict (`PASS`, `FAIL: …`) on `cells`, run with its own
/// seeds `own` or others; one shard sees only part of the seeds, so its expectations are
/// judged after `merge`.
fn file_verdict(
    f: &CampaignFile,
    cells: &[CellSummary],
    shard: Shard,
    own: (u64, u64),
) -> (Vec<String>, String) {
    if shard != Shard::ALL {
        return (vec![], "(shard: judged after merge)".to_string());
    }
    let problems = f.judge(cells);
    let verdict = if problems.is_empty() {
        "PASS".to_string()
    } else {
        format!("FAIL: {}{}", problems.join("; "), seeds::overridden(f, own))
    };
    (problems, verdict)
}

/// A campaign's `(first_seed, seeds)`.
type SeedRange = (u64, u64);

/// The campaign files `a` names, their seeds overridden by `flags`, and each one's own
/// `(first_seed, seeds)` (for a verdict under `--seeds`/`--first-seed`).
fn collect_files(
    a: &CampaignArgs,
    flags: SeedFlags,
) -> Result<(Vec<CampaignFile>, Vec<SeedRange>), String> {
    if a.all_algorithms || a.markdown {
        return Err("--all-algorithms and --markdown make the matrix; campaign files say their own algorithm".into());
    }
    if !a.algo.is_empty() || a.faults.is_some() || !a.set.is_empty() || a.plan.is_some() {
        return Err(
            "--algo, --faults, --set and --plan describe the matrix; campaign files carry their own"
                .into(),
        );
    }
    let mut files = CampaignFile::collect(&a.paths)?;
    if files.is_empty() {
        let names: Vec<String> = a.paths.iter().map(|p| p.display().to_string()).collect();
        return Err(format!("no *.toml campaign files in {}", names.join(", ")));
    }
    let own: Vec<(u64, u64)> = files.iter().map(|f| (f.first_seed, f.seeds)).collect();
    for f in &mut files {
        flags.apply(f)?;
    }
    Ok((files, own))
}

/// `--report` of campaign files: `count` of them, `failed` failing their expectations.
fn files_report(
    a: &CampaignArgs,
    path: &Path,
    flags: SeedFlags,
    (count, failed): (usize, usize),
    sections: &[report::Section],
    jobs: usize,
) -> Result<(), String> {
    let names: Vec<String> = a.paths.iter().map(|p| p.display().to_string()).collect();
    let mut notes = vec![format!(
        "{}, {failed} failed their expectation.",
        plural(count as u64, "campaign file")
    )];
    if flags.given() {
        notes.push(format!("{}.", flags.note()));
    }
    notes.push(format!(
        "Made by: {} campaign {}{}",
        crate::program(),
        names.join(" "),
        flags.flags()
    ));
    write_report(path, sections, jobs, notes, a.force)
}

pub fn merge(a: MergeArgs) -> Result<ExitCode, String> {
    let fail_on = a.fail_on.properties()?;
    if let Some(r) = &a.report {
        report::check_target(r, a.force)?;
    }
    let (order, by_campaign) = locksim_explore::merge::read(&a.files, a.report.is_some())?;
    let mut json = Vec::new();
    let mut sweeps: Vec<(String, sweep_text::MergedSweep)> = Vec::new();
    let mut text = String::new();
    // The legend goes once after the tables, as `campaign` prints it: `None` without tables,
    // else whether one of them showed L1–L3.
    let mut legend_liveness: Option<bool> = None;
    let (mut failed, mut unjudged) = (0, 0);
    let mut sections = Vec::new();
    for campaign in &order {
        let m = &by_campaign[campaign];
        let label = if campaign.is_empty() {
            "the matrix".to_string()
        } else {
            campaign.clone()
        };
        let lacking = locksim_explore::merge::lacking(m, &label)?;
        if let Some(note) = m.duplicates_note(&label) {
            eprintln!("{note}");
        }
        if !m.points.is_empty() {
            let merged =
                locksim_explore::merge::sweep(campaign, m, &lacking, a.partial, &mut |n| {
                    eprintln!("{n}")
                })?;
            if !merged.ok {
                failed += 1;
            }
            text += &merged.text;
            sweeps.push((campaign.clone(), merged));
            continue;
        }
        let mc =
            locksim_explore::merge::judge(campaign, m, lacking, a.partial, !fail_on.is_empty())?;
        for n in &mc.notes {
            eprintln!("{n}");
        }
        failed += usize::from(mc.failed);
        unjudged += usize::from(mc.unjudged);
        if let Some(h) = &mc.heading {
            text += &format!("== {h}\n");
        }
        let liveness = shows_liveness(&mc.cells, mc.asks_liveness);
        legend_liveness = Some(legend_liveness.unwrap_or(false) || liveness);
        text += &table_body(&mc.cells, liveness);
        if !campaign.is_empty() {
            text += "\n";
        }
        if a.report.is_some() {
            sections.push(report::Section {
                heading: mc.heading.clone(),
                notes: vec![],
                starts: merged_starts(campaign, m, &mc.cells),
                cells: mc.cells.clone(),
            });
        }
        json.push(mc);
    }
    let json_cells: Vec<CellSummary> = json.iter().flat_map(|j| j.cells.iter().cloned()).collect();
    if !fail_on.is_empty() && !sweeps.is_empty() {
        // Judging nothing would be a silent pass.
        return Err(
            "--fail-on judges campaign records; these are a sweep's (a frontier file's boundaries judge a sweep: `locksim sweep FILE`)"
                .into(),
        );
    }
    if let Some(path) = &a.report {
        merge_report(&a, path, &sections)?;
    }
    if a.csv {
        if let Some(mc) = json.first() {
            let c = &mc.campaign;
            return Err(format!(
                "merge --csv prints sweep records (one row per point, algorithm and fault kind, as `sweep --csv`); {} holds campaign records: use the table or --json for them",
                if c.is_empty() { "the command-line matrix" } else { c.as_str() }
            ));
        }
        out(&sweeps.iter().map(|s| s.1.csv.as_str()).collect::<String>());
    } else if a.json {
        out(&format!(
            "{}\n",
            locksim_explore::merge::json(json, &sweeps)
        ));
    } else {
        if let Some(liveness) = legend_liveness {
            let l = legend(liveness);
            // After a file's table and its blank line, no second blank line.
            text += if text.ends_with("\n\n") {
                l.trim_start_matches('\n')
            } else {
                &l
            };
        }
        out(&text);
    }
    let code = match (failed, unjudged) {
        (0, 0) => Exit::CLEAN,
        (0, _) => Exit::UNDECIDED,
        _ => Exit::VIOLATION,
    };
    Ok(gate(&json_cells, &fail_on, code).into())
}

/// `merge --report`.
fn merge_report(a: &MergeArgs, path: &Path, sections: &[report::Section]) -> Result<(), String> {
    let files: Vec<String> = a.files.iter().map(|p| p.display().to_string()).collect();
    let notes = vec![
        format!(
            "Merged from {}{}.",
            plural(a.files.len() as u64, "shard file"),
            if a.partial {
                " (--partial: shards or seeds may be missing)"
            } else {
                ""
            }
        ),
        format!(
            "Made by: {} merge --report {} {}",
            crate::program(),
            path.display(),
            files.join(" ")
        ),
    ];
    let jobs = a
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    write_report(path, sections, jobs, notes, a.force)
}

/// Where `merge --report` gets each violated cell's first failing seed: the scenario its
/// record carries (`campaign --out` stores it), else the campaign file, if it is still where
/// it ran and its settings fingerprint matches the records'.
fn merged_starts(campaign: &str, m: &Merged, cells: &[CellSummary]) -> Vec<Option<report::Start>> {
    let file = (!campaign.is_empty())
        .then(|| CampaignFile::read(Path::new(campaign)).and_then(|f| f.spec(1)));
    // The summary's cells come in cell-index order, as `m.cells` holds them.
    m.cells
        .iter()
        .zip(cells)
        .map(|((&cell, (_, _, settings)), c)| {
            let seed = c.first_failing_seed?;
            if let Some((s, scenario)) = m.carried.get(&cell).filter(|x| x.0 == seed) {
                debug_assert_eq!(*s, seed);
                return Some(
                    locksim_explore::Setup::from_scenario(scenario)
                        .map(|setup| (scenario.clone(), setup.algo))
                        .map_err(|e| format!("seed {seed}: {e}")),
                );
            }
            let from_file = match &file {
                Some(Ok(spec)) => {
                    let setup = &spec.setups[(cell / spec.kinds.len().max(1)).min(spec.setups.len() - 1)];
                    if fingerprint(setup) == *settings {
                        Ok((setup.scenario(seed, &[c.faults]), setup.algo.clone()))
                    } else {
                        Err(format!("{campaign} changed since its shards ran (its settings fingerprint differs)"))
                    }
                }
                Some(Err(e)) => Err(e.clone()),
                None => Err("the command-line matrix's settings are not in its records".into()),
            };
            Some(from_file.map_err(|e| {
                format!("the shards' records do not carry seed {seed}'s scenario, and {e}: run `locksim shrink` on it with the campaign's settings")
            }))
        })
        .collect()
}
