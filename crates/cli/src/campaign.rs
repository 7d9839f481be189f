//! `locksim campaign` (the algorithm × fault-kind matrix, or campaign files from `sims/`) and
//! `locksim merge` (shards' results into one summary).
//!
//! Records stream to `--out` as seeds finish (one flushed JSON line each), and the summary keeps
//! only per-cell aggregates, so a campaign's memory does not grow with its seeds and an
//! interrupted campaign loses at most the seeds in flight (`--resume` runs the rest).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Seek, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Instant;

use clap::Args;
use locksim_core::fault::parse_kinds;
use locksim_core::{FaultKind, Property};
use locksim_explore::campaign::fingerprint;
use locksim_explore::campaign_file::{read_plan, CampaignFile};
use locksim_explore::{
    run_each, setups_for, CampaignSpec, CellSummary, SeedRecord, Shard, Summary,
};

use crate::progress::Progress;
use crate::report::metric_pairs;
use crate::{out, plural, MemoryArgs};

mod legend;
mod seeds;

use legend::legend;
use seeds::{SeedFlags, MAX_SEEDS};

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

/// Properties whose columns `--check` shows.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Check {
    /// L1–L3.
    Liveness,
}

/// Whether a table of `cells` shows the L1–L3 columns: when asked (`--check liveness`, a
/// campaign file that names an L property), and whenever some seed violates one or leaves one
/// undecided (issue #24, item 7: a violated property is never hidden behind a footnote).
fn shows_liveness(cells: &[CellSummary], asked: bool) -> bool {
    asked
        || cells.iter().any(|c| {
            Property::LIVENESS
                .iter()
                .any(|&p| c.violated(p) > 0 || c.undecided_on(p) > 0)
        })
}

/// `--fail-on`: the properties whose violation fails a campaign or a merge (exit 1), and
/// whose cells must have been exercised (grants, faults that took effect, decided checks)
/// for a clean exit 0 (else exit 3).
#[derive(Args, Clone, Default)]
pub struct FailOn {
    /// Exit 1 when a seed violates one of these properties, comma-separated (S1..S4, L1..L3,
    /// `safety` for S1–S4, `liveness` for L1–L3; each at most once, no empty item), or a seed
    /// failed to run; else exit 3 when a cell proves nothing for them (no grants, no fault
    /// took effect, one of them undecided or not judged for its algorithm) or no seed was
    /// judged; else 0. For CI; without it the matrix is exploratory and exits 0 whatever
    /// it finds (a campaign file's own expectations still give exit 1). On one shard it
    /// judges that shard's seeds; on merge, every merged cell.
    #[arg(long, value_name = "P[,P]")]
    fail_on: Option<String>,
}

impl FailOn {
    /// The properties, validated, in report order (empty without the flag).
    ///
    /// # Errors
    /// An empty list or a name that is no property, naming it.
    pub(crate) fn properties(&self) -> Result<Vec<Property>, String> {
        let Some(text) = &self.fail_on else {
            return Ok(Vec::new());
        };
        let mut list: Vec<Property> = Vec::new();
        for word in text.split(',').map(str::trim) {
            let add: Vec<Property> = match word.to_ascii_lowercase().as_str() {
                "" => {
                    return Err(format!(
                        "--fail-on: an empty item in {text:?}; give properties such as S1,S2"
                    ))
                }
                "safety" => Property::SAFETY.to_vec(),
                "liveness" => Property::LIVENESS.to_vec(),
                _ => vec![word.parse::<Property>().map_err(|e| {
                    format!("--fail-on: {e} (give properties such as S1,S2, or safety, liveness)")
                })?],
            };
            if let Some(p) = add.iter().find(|p| list.contains(p)) {
                return Err(format!("--fail-on: {p} is given twice in {text:?}"));
            }
            list.extend(add);
        }
        if list.is_empty() {
            return Err("--fail-on: an empty list; give properties such as S1,S2 or safety".into());
        }
        list.sort();
        list.dedup();
        Ok(list)
    }
}

/// The exit code `--fail-on properties` gives `cells` (see [`FailOn`]): 1 with the
/// violations, 3 with what proves nothing, else 0; and one line per reason, for stderr.
pub(crate) fn fail_on_code(cells: &[CellSummary], properties: &[Property]) -> (u8, Vec<String>) {
    let names: Vec<String> = properties.iter().map(|p| p.to_string()).collect();
    let (mut violated, mut empty) = (Vec::new(), Vec::new());
    for c in cells {
        let at = format!("{} × {}", c.algorithm, c.faults_label());
        for &p in properties {
            if c.violated(p) > 0 {
                violated.push(format!(
                    "{p} violated in {at} ({}, first seed {})",
                    plural(c.violated(p), "seed"),
                    c.first_violation.get(&p).copied().unwrap_or(0)
                ));
            }
        }
        if c.errors > 0 {
            violated.push(format!("{at}: {} failed to run", plural(c.errors, "seed")));
        }
        let undecided: Vec<String> = properties
            .iter()
            .filter(|p| c.undecided_on(**p) > 0)
            .map(|p| p.to_string())
            .collect();
        if !undecided.is_empty() {
            empty.push(format!("{at}: {} undecided", undecided.join(", ")));
        }
        if c.grants == 0 && c.seeds > c.errors {
            empty.push(format!("{at}: no client was ever granted the lock"));
        }
        if properties.contains(&Property::S2)
            && c.violated(Property::S2) == 0
            && c.counts.no_write_accepted(c.seeds - c.errors)
        {
            empty.push(format!(
                "{at}: S2: no write reached the resource in any seed"
            ));
        }
        if c.no_fault_took_effect() {
            empty.push(format!("{at}: no fault took effect in any seed"));
        } else if c.kind_untested() {
            empty.push(format!(
                "{at}: no {} fault took effect in any seed (only the plan did)",
                c.faults.name()
            ));
        }
        if c.seeds > c.errors {
            for &p in properties.iter().filter(|p| !c.checked.contains(p)) {
                empty.push(format!("{at}: {p} is not judged for {}", c.algorithm));
            }
        }
    }
    if cells.iter().all(|c| c.seeds == 0) {
        empty.push("no seed was judged (a shard without seeds, or no records)".into());
    }
    let head = format!("--fail-on {}: ", names.join(","));
    if !violated.is_empty() {
        (
            1,
            violated.into_iter().map(|v| format!("{head}{v}")).collect(),
        )
    } else if !empty.is_empty() {
        (
            3,
            empty
                .into_iter()
                .map(|v| format!("{head}{v}: proves nothing"))
                .collect(),
        )
    } else {
        (0, Vec::new())
    }
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

/// `--jobs`, or every core.
pub(crate) fn jobs_of(jobs: Option<usize>) -> Result<usize, String> {
    match jobs {
        Some(j) if j == 0 || j > 1024 => Err("--jobs must be from 1 to 1024".into()),
        Some(j) => Ok(j),
        None => Ok(std::thread::available_parallelism().map_or(1, |n| n.get())),
    }
}

/// One campaign of this invocation: the matrix (label "") or a campaign file (its path).
struct Job<'a> {
    label: String,
    spec: &'a CampaignSpec,
    /// Seeds already recorded in the `--out` file being resumed, by (cell, seed).
    done: BTreeSet<(usize, u64)>,
    /// Their records, folded.
    summary: Summary,
}

/// What a record of a campaign must say to belong to it (for `--resume`).
fn belongs(r: &SeedRecord, job: &Job, shard: Shard) -> Result<(), String> {
    let spec = job.spec;
    let cells = spec.setups.len() * spec.kinds.len();
    let differs = |what: &str, recorded: String, now: String| {
        Err(format!("{what} differs ({recorded} there, {now} now)"))
    };
    if r.cells != cells || r.cell >= cells {
        return differs(
            "the matrix",
            plural(r.cells as u64, "cell"),
            plural(cells as u64, "cell"),
        );
    }
    let setup = &spec.setups[r.cell / spec.kinds.len()];
    let kind = spec.kinds[r.cell % spec.kinds.len()];
    if (r.algorithm.as_str(), r.faults) != (setup.algorithm.as_str(), kind) {
        return differs(
            &format!("cell {}", r.cell),
            format!("{} × {}", r.algorithm, r.faults),
            format!("{} × {kind}", setup.algorithm),
        );
    }
    if r.settings != fingerprint(setup) {
        return differs(
            &format!("the settings of {} (fingerprint)", r.algorithm),
            r.settings.clone(),
            fingerprint(setup),
        );
    }
    if (r.first_seed, r.seeds) != (spec.first_seed, spec.seeds) {
        return differs(
            "the seed range",
            format!("{} from {}", plural(r.seeds, "seed"), r.first_seed),
            format!("{} from {}", plural(spec.seeds, "seed"), spec.first_seed),
        );
    }
    let shard_now = format!("{}/{}", shard.index, shard.count);
    if r.shard != shard_now {
        return differs("the shard", r.shard.clone(), shard_now);
    }
    if r.seed < spec.first_seed || r.seed - spec.first_seed >= spec.seeds {
        return Err(format!("seed {} is outside the range", r.seed));
    }
    Ok(())
}

/// The `--out` file: records are appended one line at a time, each written whole.
struct Out {
    path: PathBuf,
    file: Mutex<std::fs::File>,
}

impl Out {
    fn write(&self, r: &SeedRecord) -> Result<(), String> {
        let mut line = serde_json::to_string(r).expect("records serialize");
        line.push('\n');
        let mut f = self.file.lock().expect("no panics while held");
        f.write_all(line.as_bytes())
            .and_then(|_| f.flush())
            .map_err(|e| format!("cannot write {}: {e}", self.path.display()))
    }
}

/// Opens `--out` before any seed runs: a new file (an existing non-empty one only with
/// `--force`), or with `--resume` the existing one, whose records are checked against the
/// campaigns about to run and folded into their jobs. An unfinished last line (an interrupted
/// write) is cut off and its seed runs again.
fn open_out(a: &CampaignArgs, jobs: &mut [Job], shard: Shard) -> Result<Option<Out>, String> {
    let Some(path) = &a.out else {
        return Ok(None);
    };
    let shown = path.display();
    // `--force` replaces a record file, never one of the campaign's own inputs.
    let same = |p: &PathBuf| match (p.canonicalize(), path.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => p == path,
    };
    if a.paths.iter().any(same) {
        return Err(format!(
            "--out {shown} is one of the campaign files to run: give another --out"
        ));
    }
    create_parent(path)?;
    // Held under a file lock for the whole run: a second locksim on this --out is refused.
    use locksim_explore::record_file::{self, Open};
    let how = match (a.resume, a.force) {
        (true, _) => Open::Resume,
        (_, true) => Open::Replace,
        _ => Open::New,
    };
    let mut file = match record_file::open(path, how) {
        Err(record_file::Error::Exists) => return Err(format!(
            "--out {shown} exists: give --resume to continue the campaign it records, or --force to replace it"
        )),
        other => other.map_err(|e| e.to_string())?,
    };
    if !a.resume {
        return Ok(Some(Out {
            path: path.clone(),
            file: Mutex::new(file),
        }));
    }
    let mut reader = std::io::BufReader::new(&file);
    let (mut good, mut line_no, mut buf) = (0u64, 0usize, Vec::new());
    let (mut unfinished, mut needs_newline) = (false, false);
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| format!("cannot read {shown}: {e}"))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let complete = buf.ends_with(b"\n");
        let text = String::from_utf8_lossy(&buf);
        if text.trim().is_empty() {
            good += n as u64;
            continue;
        }
        let r: SeedRecord = match serde_json::from_str(text.trim_end()) {
            Ok(r) => r,
            Err(_) if !complete && text.trim_start().starts_with('{') => {
                unfinished = true;
                break;
            }
            Err(e) => return Err(not_a_record(path, line_no, &e)),
        };
        let job = jobs.iter_mut().find(|j| j.label == r.campaign).ok_or_else(|| {
            format!(
                "{shown}:{line_no}: a record of {}, which this run does not run: --resume continues only the same campaign (give another --out, or --force to start over)",
                if r.campaign.is_empty() { "the command-line matrix".to_string() } else { r.campaign.clone() }
            )
        })?;
        check_faults_recorded(&r).map_err(|e| format!("{shown}:{line_no}: {e}"))?;
        belongs(&r, job, shard).map_err(|e| {
            format!(
                "{shown}:{line_no}: recorded by another campaign: {e}; --resume continues only the same campaign (give another --out, or --force to start over)"
            )
        })?;
        if job.done.insert((r.cell, r.seed)) {
            job.summary
                .add(&r)
                .map_err(|e| format!("{shown}:{line_no}: {e}"))?;
        }
        good += n as u64;
        // A whole record without its newline (the last line): end it before appending.
        needs_newline = !complete;
    }
    drop(reader);
    if needs_newline {
        file.write_all(b"\n")
            .map_err(|e| format!("cannot write {shown}: {e}"))?;
    }
    if unfinished {
        file.set_len(good)
            .and_then(|_| file.seek(std::io::SeekFrom::End(0)).map(|_| ()))
            .map_err(|e| format!("cannot write {shown}: {e}"))?;
        eprintln!(
            "note: {shown}: dropped an unfinished last line (the run was interrupted while writing it); its seed runs again"
        );
    }
    let resumed: usize = jobs.iter().map(|j| j.done.len()).sum();
    if resumed > 0 {
        eprintln!(
            "resuming {shown}: {} already recorded",
            plural(resumed as u64, "seed")
        );
    }
    Ok(Some(Out {
        path: path.clone(),
        file: Mutex::new(file),
    }))
}

/// Creates the folders `path` needs (as `--report` and `--svg` do), so `--out runs/a.jsonl`
/// works in a fresh clone.
///
/// # Errors
/// The folder cannot be made (naming it).
pub(crate) fn create_parent(path: &Path) -> Result<(), String> {
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) if !dir.is_dir() => std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display())),
        _ => Ok(()),
    }
}

/// The error for line `line` of `path` that is not a record: what a record file is, then
/// serde's detail (and for a TOML file, what to do with it instead).
pub(crate) fn not_a_record(path: &Path, line: usize, e: &serde_json::Error) -> String {
    let hint = if path.extension().is_some_and(|x| x == "toml") {
        "; a .toml file is a scenario: run it with `locksim campaign FILE` (or `locksim sweep FILE` for a frontier file)"
    } else {
        ""
    };
    format!(
        "{}:{line}: not a locksim record (expected one JSON object per line, as `locksim campaign --out` or `locksim sweep --out` writes them): {}{hint}",
        path.display(),
        json_problem(e)
    )
}

/// serde_json's message without its " at line L column C" tail (the caller names the line).
pub(crate) fn json_problem(e: &serde_json::Error) -> String {
    let s = e.to_string();
    s.split(" at line ").next().unwrap_or(&s).to_string()
}

/// Runs the seeds of `job` not yet recorded, streaming each record to `out` and folding it
/// into the job's summary; returns the seeds run now.
fn run(job: &mut Job, shard: Shard, out: Option<&Out>, shown: Shown) -> Result<u64, String> {
    let spec = job.spec;
    let total = (spec.setups.len() * spec.kinds.len()) as u64 * shard.seeds_of(spec.seeds);
    let total = total.saturating_sub(job.done.len() as u64);
    let progress = match shown {
        Shown::Quiet => Progress::hidden("seeds", total),
        Shown::Matrix => Progress::new("seeds", total),
        Shown::File { index, of } => {
            Progress::for_file(&format!("[{index}/{of}] {}", job.label), "seeds", total)
        }
    };
    let summary = Mutex::new(std::mem::take(&mut job.summary));
    let ran = std::sync::atomic::AtomicU64::new(0);
    let done = &job.done;
    // Per cell, the smallest failing seed written so far: its record carries its scenario
    // (for `merge --report`), so each shard's first failing seed of each cell has one.
    let first_failing: Mutex<BTreeMap<usize, u64>> = Mutex::new(BTreeMap::new());
    let result = run_each(
        spec,
        shard,
        &|cell, seed| done.contains(&(cell, seed)),
        &|mut r| {
            r.campaign = job.label.clone();
            if let Some(o) = out {
                if !r.violated.is_empty() {
                    let mut first = first_failing.lock().expect("no panics while held");
                    if first.get(&r.cell).is_none_or(|&s| r.seed < s) {
                        first.insert(r.cell, r.seed);
                        let setup = &spec.setups[r.cell / spec.kinds.len()];
                        r.scenario = Some(setup.scenario(r.seed, &[r.faults]));
                    }
                }
                o.write(&r)?;
            }
            summary.lock().expect("no panics while held").add(&r)?;
            ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(())
        },
        &|n, _| progress.set(n),
    );
    progress.finish();
    job.summary = summary.into_inner().expect("workers finished");
    result.map(|()| ran.into_inner())
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

/// Refuses a campaign whose runs would not fit in the memory budget.
pub(crate) fn check_memory(
    spec: &CampaignSpec,
    jobs: usize,
    memory: &MemoryArgs,
) -> Result<(), String> {
    let limit = memory.limit()?;
    for setup in &spec.setups {
        for &kind in &spec.kinds {
            locksim_explore::budget::check(
                &setup.scenario(spec.first_seed, &[kind]),
                jobs.min(spec.seeds.try_into().unwrap_or(usize::MAX)) as u64,
                limit,
            )?;
        }
    }
    Ok(())
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
    if first_seed.checked_add(seeds).is_none() {
        return Err("--first-seed + --seeds does not fit in 64 bits".into());
    }
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
    for s in &setups {
        s.check_network(&kinds)?;
    }
    let spec = CampaignSpec {
        setups,
        kinds,
        first_seed,
        seeds,
        jobs,
    };
    check_memory(&spec, jobs, &a.memory)?;
    if let Some(r) = &a.report {
        crate::report::check_target_with_out(r, a.out.as_deref(), a.force)?;
    }
    let mut job = [Job {
        label: String::new(),
        spec: &spec,
        done: BTreeSet::new(),
        summary: Summary::default(),
    }];
    let out_file = open_out(&a, &mut job, shard)?;
    let [mut job] = job;
    let resumed = job.done.len() as u64;
    let shown = if a.quiet { Shown::Quiet } else { Shown::Matrix };
    let ran = run(&mut job, shard, out_file.as_ref(), shown)?;
    let cells = job.summary.cells();
    if let Some(path) = &a.report {
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
        let section = crate::report::Section {
            heading: None,
            notes: vec![],
            starts: crate::report::starts_of(&spec, &cells),
            cells: cells.clone(),
        };
        write_report(path, &[section], jobs, notes, a.force)?;
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
        out(&crate::markdown::table(&cells, describe, &command));
    } else {
        let liveness = shows_liveness(&cells, a.check == Some(Check::Liveness));
        out(&table_body(&cells, liveness));
        if !a.quiet {
            out(&legend(liveness));
        }
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
        eprint!("{tail}");
    }
    Ok(ExitCode::from(run_gate(&cells, &fail_on, 0)))
}

/// The exit code of a campaign or merge whose campaign files' expectations gave `code` (0 or
/// 1): with `--fail-on`, also [`fail_on_code`] of `cells` (its reasons on stderr); the
/// highest-priority code wins: 1, then 3, then 0.
fn gate(cells: &[CellSummary], fail_on: &[Property], code: u8) -> u8 {
    if fail_on.is_empty() {
        return code;
    }
    let (own, why) = fail_on_code(cells, fail_on);
    for w in &why {
        eprintln!("{}", locksim_core::text::one_line(w));
    }
    worst(code, own)
}

/// [`gate`] for a campaign run (not a merge): a run that judged no seed (a shard without
/// seeds) proves nothing, with or without --fail-on: exit 3, said on stderr.
fn run_gate(cells: &[CellSummary], fail_on: &[Property], code: u8) -> u8 {
    let code = gate(cells, fail_on, code);
    // With --fail-on, gate has said so already.
    if fail_on.is_empty() && cells.iter().all(|c| c.seeds == 0) {
        eprintln!("no seed was judged (a shard without seeds): this run proves nothing");
        return worst(code, crate::exit::UNDECIDED);
    }
    code
}

/// The stronger of two exit codes: 1 (a violation) over 3 (proves nothing) over 0.
fn worst(a: u8, b: u8) -> u8 {
    let rank = |c: u8| match c {
        1 => 3,
        3 => 2,
        0 => 0,
        _ => 4,
    };
    if rank(a) >= rank(b) {
        a
    } else {
        b
    }
}

fn write_report(
    path: &Path,
    sections: &[crate::report::Section],
    jobs: usize,
    notes: Vec<String>,
    force: bool,
) -> Result<(), String> {
    let pages = crate::report::write(path, sections, jobs, notes, force)?;
    eprintln!(
        "report: {} ({} and their timelines in {})",
        path.display(),
        plural(pages as u64, "shrunk trace"),
        crate::report::files_dir(path).display()
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
    // Each file's own (first_seed, seeds), for a verdict under `--seeds`/`--first-seed`.
    let own: Vec<(u64, u64)> = files.iter().map(|f| (f.first_seed, f.seeds)).collect();
    for f in &mut files {
        flags.apply(f)?;
    }
    let mut specs = Vec::new();
    for f in &files {
        let spec = f.spec(jobs)?;
        check_memory(&spec, jobs, &a.memory).map_err(|e| format!("{}: {e}", f.path.display()))?;
        specs.push(spec);
    }
    if let Some(r) = &a.report {
        crate::report::check_target_with_out(r, a.out.as_deref(), a.force)?;
    }
    let mut campaign_jobs: Vec<Job> = files
        .iter()
        .zip(&specs)
        .map(|(f, spec)| Job {
            label: f.path.display().to_string(),
            spec,
            done: BTreeSet::new(),
            summary: Summary::default(),
        })
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
            format!(
                "FAIL: {}{}",
                problems.join("; "),
                seeds::overridden(f, own[i])
            )
        };
        let heading = format!("== {} ({}): {verdict}\n", f.name, f.path.display());
        if a.report.is_some() {
            sections.push(crate::report::Section {
                heading: Some(format!("{} ({}): {verdict}", f.name, f.path.display())),
                notes: vec![],
                starts: crate::report::starts_of(job.spec, &cells),
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
        let names: Vec<String> = a.paths.iter().map(|p| p.display().to_string()).collect();
        let mut notes = vec![format!(
            "{}, {failed} failed their expectation.",
            plural(files.len() as u64, "campaign file")
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
        write_report(path, &sections, jobs, notes, a.force)?;
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
            expectations(failed, shard),
        );
    }
    Ok(ExitCode::from(run_gate(
        &every_cell,
        &fail_on,
        if failed > 0 { 1 } else { 0 },
    )))
}

/// The summary's last words on the files' expectations: how many failed, or, for one shard
/// (which sees only part of the seeds), that they are judged at merge.
pub(crate) fn expectations(failed: usize, shard: Shard) -> String {
    if shard == Shard::ALL {
        format!("{failed} failed their expectation")
    } else {
        format!(
            "expectations judged at merge (this is shard {}/{}: `locksim merge` its --out file with the other shards')",
            shard.index, shard.count
        )
    }
}

/// What one campaign's records in the merged files cover.
#[derive(Default)]
struct Merged {
    summary: Summary,
    /// (cell, seed) seen, to count each once, with the record's [`SeedRecord::digest`] and
    /// where it was read (file index, line): a second record of the seed must say the same.
    seen: BTreeMap<(usize, u64), (u64, usize, usize)>,
    duplicates: u64,
    /// Per cell: (algorithm, faults, settings) of its first record.
    cells: BTreeMap<usize, (String, FaultKind, String)>,
    /// The campaign's shapes as its records state them: (cells, first_seed, seeds); more
    /// than one means records of different seed ranges (mixed `--first-seed` or `--seeds`).
    shapes: BTreeSet<(usize, u64, u64)>,
    /// Shards named by the records, `I/N`.
    shards: BTreeSet<String>,
    /// Whether the records are a sweep's (they name a point) or a campaign's; set by the first.
    sweep: Option<bool>,
    /// A sweep's records name their point: by cell.
    points: BTreeMap<usize, String>,
    /// Per cell, the smallest failing seed whose record carries its scenario.
    carried: BTreeMap<usize, (u64, locksim_core::Scenario)>,
}

/// Refuses a record of a seed that ran but does not say how many of its faults took effect
/// (written by a build before they were counted): folded in, its cell could read `safe`
/// though no fault acted. Such records are refused by `merge` and `--resume` (exit 2) rather
/// than judged as unknown.
fn check_faults_recorded(r: &SeedRecord) -> Result<(), String> {
    if r.faults_applied.is_none() && r.error.is_none() {
        return Err(format!(
            "seed {} of cell {} ({} under {}) has no `faults_applied`: written by an older build, \
             which did not count the faults that took effect; run that shard again with this build",
            r.seed,
            r.cell,
            r.algorithm,
            r.faults.name()
        ));
    }
    Ok(())
}

/// Whether record `r`'s seed belongs where it says: within its campaign's seeds, and in the
/// shard it names (shard `I/N` runs the seed offsets `I, I+N, I+2N, …` of every cell).
fn check_seed_place(r: &SeedRecord) -> Result<(), String> {
    check_faults_recorded(r)?;
    if r.seeds == 0 || r.seeds > MAX_SEEDS {
        return Err(format!(
            "its campaign claims {} per cell (a campaign or sweep runs 1 to {MAX_SEEDS})",
            plural(r.seeds, "seed")
        ));
    }
    let Some(end) = r.first_seed.checked_add(r.seeds) else {
        return Err(format!(
            "its campaign's seeds ({} from {}) run past 2^64: no campaign wraps its seed range",
            plural(r.seeds, "seed"),
            r.first_seed
        ));
    };
    if r.seed < r.first_seed || r.seed >= end {
        return Err(format!(
            "seed {} is outside its campaign's seeds {}..{end}",
            r.seed, r.first_seed
        ));
    }
    let shard =
        locksim_explore::campaign::Shard::parse(&r.shard).map_err(|e| format!("its shard: {e}"))?;
    if (r.seed - r.first_seed) % shard.count != shard.index {
        return Err(format!(
            "seed {} is not one of shard {}'s seeds (offsets {} mod {})",
            r.seed, r.shard, shard.index, shard.count
        ));
    }
    if r.cell >= r.cells {
        return Err(format!(
            "cell {} is outside its campaign's {} cells",
            r.cell, r.cells
        ));
    }
    Ok(())
}

/// The sweep point of `cell` (`pause_max=311ms`), when the records are a sweep's: its own
/// records' label, or for a cell with none, a neighbour's of the same point (cells are
/// point-major, `per point` = algorithms × kinds, the distinct pairs the records name).
fn point_of(m: &Merged, cell: usize) -> Option<String> {
    if m.points.is_empty() {
        return None;
    }
    if let Some(p) = m.points.get(&cell) {
        return Some(p.clone());
    }
    let pairs: BTreeSet<(&str, FaultKind)> =
        m.cells.values().map(|c| (c.0.as_str(), c.1)).collect();
    let pp = pairs.len().max(1);
    m.points
        .iter()
        .find(|(c, _)| *c / pp == cell / pp)
        .map(|(_, p)| p.clone())
}

/// The first `n` values of `lo..hi` that `present` (ascending, within the range) lacks:
/// walks at most `present.len() + n` values, whatever the range's size.
fn first_absent(lo: u64, hi: u64, present: impl Iterator<Item = u64>, n: usize) -> Vec<u64> {
    let mut out = Vec::new();
    let mut next = lo;
    for p in present {
        while next < p && out.len() < n {
            out.push(next);
            next += 1;
        }
        if out.len() >= n {
            return out;
        }
        next = p + 1;
    }
    while next < hi && out.len() < n {
        out.push(next);
        next += 1;
    }
    out
}

/// How many record-less cells [`missing`] names one by one before it counts the rest.
const NAMED_EMPTY_CELLS: usize = 5;

/// Seeds a campaign's merged records lack: per cell label, how many, and the first few. Its
/// work and its lines are bounded by the records, not by the sizes they claim: a cell with
/// records gets a line, the first few cells without any get one each, and the rest one line.
fn missing(m: &Merged) -> Vec<String> {
    if m.shapes.len() > 1 {
        let ranges: Vec<String> = m
            .shapes
            .iter()
            .map(|(_, first, seeds)| format!("{} from {first}", plural(*seeds, "seed")))
            .collect();
        return vec![format!(
            "its records come from different seed ranges ({}: mixed --first-seed or --seeds)",
            ranges.join(", ")
        )];
    }
    let Some(&(cells, first, seeds)) = m.shapes.first() else {
        return vec![];
    };
    // `check_seed_place` saw that the range fits.
    let end = first + seeds;
    let line = |cell: usize, absent: u64, shown: &[u64]| {
        let mut name = m
            .cells
            .get(&cell)
            .map_or_else(|| format!("cell {cell}"), |c| format!("{} × {}", c.0, c.1));
        if let Some(p) = point_of(m, cell) {
            name += &format!(" at {p}");
        }
        let shown: Vec<String> = shown.iter().map(|s| s.to_string()).collect();
        format!(
            "{name}: {} of {} missing (seed {}{})",
            plural(absent, "seed"),
            seeds,
            shown.join(", "),
            if absent > shown.len() as u64 {
                ", …"
            } else {
                ""
            }
        )
    };
    // Cells without a record: the first few, by a walk past the cells that have records.
    let empty: Vec<u64> = first_absent(
        0,
        cells as u64,
        m.cells.keys().map(|&c| c as u64),
        NAMED_EMPTY_CELLS,
    );
    let all_seeds: Vec<u64> = (first..end).take(5).collect();
    let mut out: Vec<(usize, String)> = empty
        .iter()
        .map(|&c| (c as usize, line(c as usize, seeds, &all_seeds)))
        .collect();
    for &cell in m.cells.keys() {
        let present = m.seen.range((cell, first)..(cell, end)).map(|(k, _)| k.1);
        let absent = seeds - m.seen.range((cell, first)..(cell, end)).count() as u64;
        if absent > 0 {
            out.push((
                cell,
                line(cell, absent, &first_absent(first, end, present, 5)),
            ));
        }
    }
    out.sort_by_key(|x| x.0);
    let mut out: Vec<String> = out.into_iter().map(|x| x.1).collect();
    let unnamed = (cells - m.cells.len()).saturating_sub(empty.len());
    if unnamed > 0 {
        out.push(format!(
            "and {unnamed} more {} without any record",
            if unnamed == 1 { "cell" } else { "cells" }
        ));
    }
    out
}

/// The shards of `I/N` that hold seeds (those with `I` below both `N` and `seeds`) and that
/// no record names: how many, and the first five, without walking the others.
fn absent_shards(present: &BTreeSet<String>, count: u64, seeds: u64) -> Option<String> {
    let indexes: BTreeSet<u64> = present
        .iter()
        .filter_map(|s| Shard::parse(s).ok())
        .map(|s| s.index)
        .collect();
    let holding = count.min(seeds);
    let n = holding - indexes.iter().filter(|&&i| i < holding).count() as u64;
    if n == 0 {
        return None;
    }
    let shown: Vec<String> = first_absent(0, holding, indexes.iter().copied(), 5)
        .iter()
        .map(|i| format!("{i}/{count}"))
        .collect();
    Some(if n == 1 {
        format!("shard {} missing", shown[0])
    } else if n > 5 {
        format!(
            "shards {}, … missing ({n} of the {holding} that hold seeds)",
            shown.join(", ")
        )
    } else {
        format!("shards {} missing", shown.join(", "))
    })
}

pub fn merge(a: MergeArgs) -> Result<ExitCode, String> {
    let fail_on = a.fail_on.properties()?;
    if let Some(r) = &a.report {
        crate::report::check_target(r, a.force)?;
    }
    let mut by_campaign: BTreeMap<String, Merged> = BTreeMap::new();
    // Campaigns in the order their first records come, as `campaign` ran them (it runs its
    // files one after the other, each file's records before the next's).
    let mut order: Vec<String> = Vec::new();
    for (file_index, path) in a.files.iter().enumerate() {
        let file = std::fs::File::open(path)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        let mut reader = std::io::BufReader::new(file);
        let (mut line, mut i, mut records) = (String::new(), 0usize, 0usize);
        loop {
            line.clear();
            let n = reader
                .read_line(&mut line)
                .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
            if n == 0 {
                break;
            }
            i += 1;
            if line.trim().is_empty() {
                continue;
            }
            let r: SeedRecord = serde_json::from_str(line.trim_end()).map_err(|e| {
                if !line.ends_with('\n') && line.trim_start().starts_with('{') {
                    format!("{}:{i}: the file ends in the middle of a record (an interrupted campaign: run it again with --resume)", path.display())
                } else {
                    not_a_record(path, i, &e)
                }
            })?;
            records += 1;
            // A sweep's record names its point, so that an error says which one.
            let at_point = if r.point.is_empty() {
                String::new()
            } else {
                format!(" (sweep point {})", r.point)
            };
            check_seed_place(&r)
                .map_err(|why| format!("{}:{i}: {why}{at_point}", path.display()))?;
            if a.report.is_some() && !r.point.is_empty() {
                return Err(format!(
                    "{}:{i}: a sweep's record: merge --report draws campaign pages only (merge the \
                     sweep's shards without --report for its table, --json or frontier verdicts; \
                     `locksim sweep --report` draws a sweep's page)",
                    path.display()
                ));
            }
            let label = if r.campaign.is_empty() {
                "the matrix".to_string()
            } else {
                r.campaign.clone()
            };
            if !by_campaign.contains_key(&r.campaign) {
                order.push(r.campaign.clone());
            }
            let m = by_campaign.entry(r.campaign.clone()).or_default();
            // A sweep's records (they name a point) and a campaign's under one name (both
            // from the command line, say) would be counted as one or the other: refuse.
            let sweep = !r.point.is_empty();
            if *m.sweep.get_or_insert(sweep) != sweep {
                return Err(format!(
                    "{}:{i}: a {} record among {} records of {label}: merge one kind at a time",
                    path.display(),
                    if sweep { "sweep's" } else { "campaign's" },
                    if sweep { "campaign" } else { "sweep" }
                ));
            }
            m.shapes.insert((r.cells, r.first_seed, r.seeds));
            // One cell, one configuration: never add up runs of different settings.
            let this = (r.algorithm.clone(), r.faults, r.settings.clone());
            if let Some(first) = m.cells.get(&r.cell) {
                if *first != this {
                    return Err(format!(
                        "cannot merge {label}: cell {}{at_point} holds results of different runs ({} {} settings {} and {} {} settings {})",
                        r.cell, first.0, first.1, first.2, this.0, this.1, this.2
                    ));
                }
            } else {
                m.cells.insert(r.cell, this);
            }
            m.shards.insert(r.shard.clone());
            if !r.point.is_empty() {
                m.points.insert(r.cell, r.point.clone());
            }
            if let Some(sc) = &r.scenario {
                if m.carried.get(&r.cell).is_none_or(|c| r.seed < c.0) {
                    m.carried.insert(r.cell, (r.seed, sc.clone()));
                }
            }
            let digest = r.digest();
            match m.seen.get(&(r.cell, r.seed)) {
                None => {
                    m.summary
                        .add(&r)
                        .map_err(|e| format!("{}:{i}: cannot merge {label}: {e}", path.display()))?;
                    m.seen.insert((r.cell, r.seed), (digest, file_index, i));
                }
                // Records of different seed ranges are refused as such below.
                Some(&(d, _, _)) if d == digest || m.shapes.len() > 1 => m.duplicates += 1,
                Some(&(_, f, l)) => {
                    return Err(format!(
                        "cannot merge {label}: {}:{l} and {}:{i} disagree about seed {} of {} × {}{at_point} (a seed's run is deterministic: one of them comes from other code or settings, or was edited)",
                        a.files[f].display(),
                        path.display(),
                        r.seed,
                        r.algorithm,
                        r.faults
                    ))
                }
            }
        }
        if records == 0 {
            return Err(format!(
                "{}: no records (a file that `locksim campaign --out` or `locksim sweep --out` writes has one JSON line per seed)",
                path.display()
            ));
        }
    }
    let mut json = Vec::new();
    let mut sweeps: Vec<(String, crate::sweep::MergedSweep)> = Vec::new();
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
        let counts: BTreeSet<&str> = m
            .shards
            .iter()
            .filter_map(|s| s.split('/').nth(1))
            .collect();
        if counts.len() > 1 {
            return Err(format!(
                "cannot merge {label}: its shards were cut differently ({})",
                m.shards.iter().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        let mut lacking = missing(m);
        if m.duplicates > 0 && m.shapes.len() == 1 {
            eprintln!(
                "note: {label}: {} appeared in more than one file; counted once",
                plural(m.duplicates, "seed")
            );
        }
        if let (Some(n), Some(&(_, _, seeds))) = (
            counts.iter().next().and_then(|n| n.parse::<u64>().ok()),
            m.shapes.first(),
        ) {
            if let Some(absent) = absent_shards(&m.shards, n, seeds) {
                lacking.insert(0, absent);
            }
        }
        if !m.points.is_empty() {
            if !lacking.is_empty() && !a.partial {
                return Err(format!(
                    "cannot merge {label}: {} (give every shard's file, or --partial to summarize what is there)",
                    lacking.join("; ")
                ));
            }
            if !lacking.is_empty() {
                eprintln!("note: {label} is partial: {}", lacking.join("; "));
            }
            let seeds = m.shapes.first().map_or(0, |s| s.2);
            let merged = crate::sweep::merged(
                campaign,
                &m.summary.indexed_cells(),
                &m.points,
                seeds,
                &lacking,
            )?;
            if !merged.ok {
                failed += 1;
            }
            text += &merged.text;
            sweeps.push((campaign.clone(), merged));
            continue;
        }
        let cells = m.summary.cells();
        let mut verdict = String::new();
        // The problems of a campaign file judged here (as `campaign` judges it).
        let mut judged: Option<Vec<String>> = None;
        if !lacking.is_empty() {
            if !a.partial {
                return Err(format!(
                    "cannot merge {label}: {} (give every shard's file, or --partial to summarize what is there)",
                    lacking.join("; ")
                ));
            }
            eprintln!("note: {label} is partial: {}", lacking.join("; "));
            verdict = format!(" (partial, not judged: {})", lacking.join("; "));
            // A campaign file's expectation, or --fail-on, left unjudged: exit 3.
            if !campaign.is_empty() || !fail_on.is_empty() {
                unjudged += 1;
            }
        } else if !campaign.is_empty() {
            // Judge the campaign file's expectation, if the file is still where it was run.
            match CampaignFile::read(Path::new(campaign)) {
                Ok(f) => {
                    let problems = f.judge(&cells);
                    if problems.is_empty() {
                        verdict = ": PASS".into();
                    } else {
                        failed += 1;
                        verdict = format!(": FAIL: {}", problems.join("; "));
                    }
                    judged = Some(problems);
                }
                // Unjudged is no pass: refused (exit 2), or with --partial shown as such (exit 3).
                Err(e) if !a.partial => return Err(format!(
                    "cannot judge {label}: its campaign file cannot be read ({e}); merge where it was run, or give --partial to summarize the records without judging them"
                )),
                Err(e) => {
                    eprintln!("note: {label} is not judged: its campaign file cannot be read ({e})");
                    verdict = format!(" (not judged: {e})");
                    unjudged += 1;
                }
            }
        }
        // A campaign file still where it ran is headed as `campaign` heads it (its name and
        // path), so that the merged summary is byte for byte the unsharded run's.
        let file = (!campaign.is_empty())
            .then(|| CampaignFile::read(Path::new(campaign)).ok())
            .flatten();
        let heading = match &file {
            Some(f) => format!("{} ({campaign})", f.name),
            None => label.clone(),
        };
        if !campaign.is_empty() || !lacking.is_empty() {
            text += &format!("== {heading}{verdict}\n");
        }
        let asks = file.as_ref().is_some_and(|f| f.asks_liveness());
        let liveness = shows_liveness(&cells, asks);
        legend_liveness = Some(legend_liveness.unwrap_or(false) || liveness);
        text += &table_body(&cells, liveness);
        if !campaign.is_empty() {
            text += "\n";
        }
        if a.report.is_some() {
            sections.push(crate::report::Section {
                heading: (!campaign.is_empty() || !lacking.is_empty())
                    .then(|| format!("{heading}{verdict}")),
                notes: vec![],
                starts: merged_starts(campaign, m, &cells),
                cells: cells.clone(),
            });
        }
        let name = file.as_ref().map_or_else(String::new, |f| f.name.clone());
        json.push((campaign.clone(), cells, verdict, lacking, name, judged));
    }
    let json_cells: Vec<CellSummary> = json.iter().flat_map(|j| j.1.iter().cloned()).collect();
    if !fail_on.is_empty() && !sweeps.is_empty() {
        // Judging nothing would be a silent pass.
        return Err(
            "--fail-on judges campaign records; these are a sweep's (a frontier file's boundaries judge a sweep: `locksim sweep FILE`)"
                .into(),
        );
    }
    if let Some(path) = &a.report {
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
        write_report(path, &sections, jobs, notes, a.force)?;
    }
    if a.csv {
        if let Some((c, ..)) = json.first() {
            return Err(format!(
                "merge --csv prints sweep records (one row per point, algorithm and fault kind, as `sweep --csv`); {} holds campaign records: use the table or --json for them",
                if c.is_empty() { "the command-line matrix" } else { c.as_str() }
            ));
        }
        out(&sweeps.iter().map(|s| s.1.csv.as_str()).collect::<String>());
    } else if a.json
        && !sweeps.is_empty()
        && json.is_empty()
        && sweeps.iter().all(|s| s.1.frontier.is_some())
    {
        // Frontier files only: `sweep FILES --json`'s shape.
        let list: Vec<&serde_json::Value> = sweeps
            .iter()
            .filter_map(|s| s.1.frontier.as_ref())
            .collect();
        out(&format!("{}\n", serde_json::json!({ "frontiers": list })));
    } else if let ([one], true, true) = (sweeps.as_slice(), json.is_empty(), a.json) {
        // The command line's sweep: `sweep --json`'s shape.
        out(&format!("{}\n", one.1.axes_points));
    } else if a.json && !sweeps.is_empty() {
        let sweeps: Vec<serde_json::Value> = sweeps
            .iter()
            .map(|(name, s)| {
                let mut v = s.axes_points.clone();
                v["sweep"] = name.as_str().into();
                v["verdict"] = s.frontier.as_ref().map_or(
                    serde_json::Value::Null,
                    |f| serde_json::json!({"ok": f["ok"], "problems": f["problems"]}),
                );
                v
            })
            .collect();
        let mut v = serde_json::json!({ "sweeps": sweeps });
        if !json.is_empty() {
            let list: Vec<serde_json::Value> = json
                .iter()
                .map(|(c, cells, v, lacking, ..)| {
                    serde_json::json!({"file": c, "cells": cells, "verdict": v, "missing": lacking})
                })
                .collect();
            v["campaigns"] = list.into();
        }
        out(&format!("{v}\n"));
    } else if a.json {
        let v = match json.as_slice() {
            [(c, cells, _, lacking, ..)] if c.is_empty() => to_json(&Cells {
                cells,
                missing: lacking,
            }),
            _ => {
                // A file judged here reads as `campaign --json` of the same file prints it
                // (name, ok, problems; no verdict); one not judged says why in `verdict`.
                let list: Vec<FileResult> = json
                    .into_iter()
                    .map(|(c, cells, v, lacking, name, judged)| match judged {
                        Some(problems) => FileResult {
                            name,
                            file: c,
                            cells,
                            ok: problems.is_empty(),
                            problems,
                            verdict: None,
                            missing: lacking,
                        },
                        None => FileResult {
                            name,
                            ok: !v.starts_with(": FAIL"),
                            problems: Vec::new(),
                            file: c,
                            cells,
                            verdict: Some(
                                v.trim_start_matches(": ")
                                    .trim_start_matches(" (")
                                    .trim_end_matches(')')
                                    .to_string(),
                            ),
                            missing: lacking,
                        },
                    })
                    .collect();
                to_json(&Campaigns { campaigns: &list })
            }
        };
        out(&format!("{v}\n"));
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
        (0, 0) => 0,
        (0, _) => 3,
        _ => 1,
    };
    Ok(ExitCode::from(gate(&json_cells, &fail_on, code)))
}

/// Where `merge --report` gets each violated cell's first failing seed: the scenario its
/// record carries (`campaign --out` stores it), else the campaign file, if it is still where
/// it ran and its settings fingerprint matches the records'.
fn merged_starts(
    campaign: &str,
    m: &Merged,
    cells: &[CellSummary],
) -> Vec<Option<crate::report::Start>> {
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

/// `{"cells": [...]}` (and `"missing"` for a partial merge), cells in their field order.
#[derive(serde::Serialize)]
struct Cells<'a> {
    cells: &'a [CellSummary],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    missing: &'a [String],
}

/// One campaign file's result in `{"campaigns": [...]}`.
#[derive(serde::Serialize)]
struct FileResult {
    #[serde(skip_serializing_if = "String::is_empty")]
    name: String,
    file: String,
    cells: Vec<CellSummary>,
    ok: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    problems: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    verdict: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    missing: Vec<String>,
}

#[derive(serde::Serialize)]
struct Campaigns<'a> {
    campaigns: &'a [FileResult],
}

fn to_json(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).expect("summaries serialize")
}

/// The matrix as text, without the [`legend`] (printed once after all tables): S1–S4, and L1–L3 when `liveness` (see
/// [`shows_liveness`]), as columns, then the lock metrics. A cell whose plans held faults of
/// which none took effect shows `n/a` for the properties no seed violated (it tested the
/// fault-free case only).
fn table_body(cells: &[CellSummary], liveness: bool) -> String {
    let cols: Vec<Property> = Property::ALL
        .into_iter()
        .filter(|p| liveness || !p.is_liveness())
        .collect();
    let (aw, width) = widths(cells);
    let mut t = format!("{:<aw$} {:<width$} {:>6}", "algorithm", "faults", "seeds");
    for p in &cols {
        t += &format!(" {:>6}", p.to_string());
    }
    t += &format!(" {:>8}  first failing seed\n", "grants");
    let mark = |c: &CellSummary, p: Property| {
        if (!c.checked.contains(&p) && c.seeds > c.errors)
            || (c.violated(p) == 0 && c.no_fault_took_effect())
        {
            "n/a".to_string()
        } else if c.violated(p) == 0 {
            "-".to_string()
        } else {
            c.violated(p).to_string()
        }
    };
    for c in cells {
        let shown = c.first_violating(&cols);
        let mut first = shown.map_or("-".to_string(), |s| s.to_string());
        if c.errors > 0 {
            first += &format!(
                "  ({} failed to run, first seed {})",
                plural(c.errors, "seed"),
                c.first_error_seed.unwrap_or(0)
            );
        }
        if c.undecided_seeds > 0 {
            let which: Vec<String> = c.undecided.keys().map(|p| p.to_string()).collect();
            first += &format!(
                "  (UNDECIDED: {} on {}, first seed {})",
                which.join(", "),
                plural(c.undecided_seeds, "seed"),
                c.first_undecided_seed.unwrap_or(0)
            );
        }
        if let Some(w) = starved(c) {
            first += &format!("  {w}");
        }
        if c.no_grant_seeds > 0 && c.grants > 0 {
            first += &format!(
                "  (NO GRANT in {} of {} seeds, first seed {}: those prove nothing and are not counted safe)",
                c.no_grant_seeds,
                c.seeds - c.errors,
                c.first_no_grant_seed.unwrap_or(0)
            );
        }
        if c.never_fired_seeds > 0 {
            first += &format!(
                "  (a trigger of the plan never fired in {} of {} seeds)",
                c.never_fired_seeds,
                c.seeds - c.errors
            );
        }
        if c.counts.no_write_accepted(c.seeds - c.errors) {
            first += "  (NO WRITES: no write reached the resource in any seed: S2 proves nothing)";
        }
        if c.counts.runs_without_grant_records > 0 {
            first += &format!(
                "  (NO GRANT RECORDS in {} of {} seeds: the service recorded no `grant` event, so S2 and S4 order grants by the clients' `ok`, which can raise false alarms)",
                c.counts.runs_without_grant_records,
                c.seeds - c.errors
            );
        }
        if c.no_fault_took_effect() {
            first += "  (n/a: no fault took effect in any seed)";
        } else if c.kind_untested() {
            first += &format!(
                "  (no {} fault took effect in any seed: only the plan did)",
                c.faults.name()
            );
        } else if c.unfaulted_seeds() > 0 {
            first += &format!(
                "  (faults took effect in {} of {} seeds)",
                c.faulted_seeds,
                c.seeds - c.errors
            );
        }
        t += &format!(
            "{:<aw$} {:<width$} {:>6}",
            c.algorithm,
            c.faults_label(),
            c.seeds
        );
        for &p in &cols {
            t += &format!(" {:>6}", mark(c, p));
        }
        t += &format!(" {:>8}  {}\n", c.grants, first);
    }
    t += &metrics_table(cells);
    t
}

/// The `starved` warning of a cell whose waiters were mostly kept waiting while nobody held
/// the lock ([`locksim_check::metrics::Counts::starved`]): few grants because one holder held
/// for long is not starvation.
pub(crate) fn starved(c: &CellSummary) -> Option<String> {
    let n = &c.counts;
    n.starved().then(|| {
        let tries = format!("{} of {} acquire attempts succeeded", c.grants, n.acquires);
        if n.waiting_ns == 0 {
            return format!("starved: {tries}");
        }
        format!(
            "starved: {}% of the clients' waiting was while nobody held the lock; {tries}",
            n.waiting_free_ns * 100 / n.waiting_ns
        )
    })
}

/// The widths of the algorithm and faults columns: the widest name and label (at least 16
/// and 14), so that a long fault label (`crash-restart+plan`) does not shift the columns.
pub(crate) fn widths(cells: &[CellSummary]) -> (usize, usize) {
    let widest = |f: &dyn Fn(&CellSummary) -> usize, least: usize| {
        cells.iter().map(f).max().unwrap_or(0).max(least)
    };
    (
        widest(&|c| c.algorithm.chars().count(), 16),
        widest(&|c| c.faults_label().chars().count(), 14),
    )
}

fn metrics_table(cells: &[CellSummary]) -> String {
    let (aw, fw) = widths(cells);
    let aw = aw.max("lock metrics".len());
    let mut t = format!(
        "\n{:<aw$} {:<fw$} {:>17} {:>17} {:>17} {:>15} {:>7} {:>7} {:>16} {:>13} {:>5}\n",
        "lock metrics",
        "faults",
        "acquire p50/p99",
        "wait p50/p99",
        "hold p50/p99",
        "failed/unknown",
        "retries",
        "expired",
        "msgs (dropped)",
        "acq/s (peak)",
        "fair"
    );
    for c in cells {
        let m = metric_pairs(c);
        let v = |i: usize| m[i].1.replace(" / ", "/");
        t += &format!(
            "{:<aw$} {:<fw$} {:>17} {:>17} {:>17} {:>15} {:>7} {:>7} {:>16} {:>13} {:>5}\n",
            c.algorithm,
            c.faults_label(),
            v(0),
            v(1),
            v(2),
            format!("{}/{}", c.counts.acquires_failed, c.counts.acquires_unknown),
            c.counts.retries,
            c.counts.expired_while_held,
            v(6),
            v(7),
            v(8)
        );
    }
    t
}
