//! The campaigns of one `locksim campaign` invocation as they run: each a [`Job`] (the
//! matrix, or one campaign file), its records streamed to a record file ([`open_out`],
//! `--out`/`--resume`) and folded into its [`Summary`] as seeds finish.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use locksim_core::text::plural;
use locksim_core::FaultKind;

use crate::campaign::fingerprint;
use crate::campaign_file::{read_plan, CampaignFile};
use crate::campaign_json::FileResult;
use crate::record_file::{self, check_faults_recorded, create_parent, Open, Writer};
use crate::report;
use crate::seed_flags::SeedFlags;
use crate::table::{shows_liveness, table_body};
use crate::{run_each, setups_for, CampaignSpec, CellSummary, SeedRecord, Shard, Summary};

/// One campaign of this invocation: the matrix (label "") or a campaign file (its path).
pub struct Job<'a> {
    /// The records' `campaign`: "" for the command-line matrix, else the file's path.
    pub label: String,
    /// What it runs.
    pub spec: &'a CampaignSpec,
    /// Seeds already recorded in the `--out` file being resumed, by (cell, seed).
    pub done: BTreeSet<(usize, u64)>,
    /// Their records, folded.
    pub summary: Summary,
}

impl<'a> Job<'a> {
    /// A job with nothing recorded yet.
    pub fn new(label: String, spec: &'a CampaignSpec) -> Job<'a> {
        Job {
            label,
            spec,
            done: BTreeSet::new(),
            summary: Summary::default(),
        }
    }
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

/// Opens the record file `path` (`--out`) before any seed runs: a new file (an existing
/// non-empty one only when `force`), or when `resume` the existing one, whose records are
/// checked against `jobs` (the campaigns about to run, in `shard`) and folded into them. An
/// unfinished last line (an interrupted write) is cut off and its seed runs again. `inputs`
/// are the campaign files: `path` may not be one of them. Returns the writer, held under the
/// file's lock for the whole run, and the notes for stderr (`note: …`, `resuming …`).
///
/// # Errors
/// One line naming the file: it exists (without `resume` or `force`), it is an input, it
/// is held by another process, or one of its records is not one of these campaigns'.
pub fn open_out(
    path: &Path,
    inputs: &[PathBuf],
    resume: bool,
    force: bool,
    jobs: &mut [Job],
    shard: Shard,
) -> Result<(Writer, Vec<String>), String> {
    let shown = path.display();
    // `--force` replaces a record file, never one of the campaign's own inputs.
    let same = |p: &PathBuf| match (p.canonicalize(), path.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => p == path,
    };
    if inputs.iter().any(same) {
        return Err(format!(
            "--out {shown} is one of the campaign files to run: give another --out"
        ));
    }
    create_parent(path)?;
    // Held under a file lock for the whole run: a second locksim on this --out is refused.
    let how = match (resume, force) {
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
    let mut notes = Vec::new();
    if !resume {
        return Ok((Writer::new(path, file), notes));
    }
    let unfinished = record_file::resume(&mut file, path, &mut |r, line_no| {
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
        Ok(())
    })?;
    if unfinished {
        notes.push(format!(
            "note: {shown}: dropped an unfinished last line (the run was interrupted while writing it); its seed runs again"
        ));
    }
    let resumed: usize = jobs.iter().map(|j| j.done.len()).sum();
    if resumed > 0 {
        notes.push(format!(
            "resuming {shown}: {} already recorded",
            plural(resumed as u64, "seed")
        ));
    }
    Ok((Writer::new(path, file), notes))
}

/// The seeds `job` runs in `shard`, less those already recorded.
pub fn seeds_to_run(job: &Job, shard: Shard) -> u64 {
    let spec = job.spec;
    let total = (spec.setups.len() * spec.kinds.len()) as u64 * shard.seeds_of(spec.seeds);
    total.saturating_sub(job.done.len() as u64)
}

/// Runs the seeds of `job` (this `shard` of it) not yet recorded, streaming each record to
/// `out` (the first failing seed of each cell with its scenario, for `merge --report`) and
/// folding it into the job's summary; `progress` gets the seeds finished so far. Returns the
/// seeds run now.
///
/// # Errors
/// A record that cannot be written or folded, or a seed's error that stops the campaign.
pub fn run_job(
    job: &mut Job,
    shard: Shard,
    out: Option<&Writer>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<u64, String> {
    let spec = job.spec;
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
        &|n, _| progress(n),
    );
    job.summary = summary.into_inner().expect("workers finished");
    result.map(|()| ran.into_inner())
}

/// The command-line matrix: `algorithms` × `kinds` with `settings` (`KEY=VALUE`, each to
/// the algorithms that have it), every seed's plan joined by the `[[fault]]` entries of
/// `plan` if given, seeds `first_seed .. first_seed + seeds` on `jobs` threads.
///
/// # Errors
/// A seed range past 2^64, a bad setting or plan, or a fault kind the network cannot take.
pub fn matrix_spec(
    algorithms: &[String],
    settings: &[String],
    kinds: Vec<FaultKind>,
    plan: Option<&Path>,
    (first_seed, seeds): (u64, u64),
    jobs: usize,
) -> Result<CampaignSpec, String> {
    if first_seed.checked_add(seeds).is_none() {
        return Err("--first-seed + --seeds does not fit in 64 bits".into());
    }
    let mut setups = setups_for(algorithms, settings)?;
    if let Some(plan) = plan {
        setups = setups
            .into_iter()
            .map(|s| read_plan(plan, &s).map(|p| s.with_plan(p)))
            .collect::<Result<Vec<_>, _>>()?;
    }
    for s in &setups {
        s.check_network(&kinds)?;
    }
    Ok(CampaignSpec {
        setups,
        kinds,
        first_seed,
        seeds,
        jobs,
    })
}

/// Refuses a campaign whose runs (`jobs` at once) would not fit in `limit` bytes of memory
/// (see [`crate::budget`]).
///
/// # Errors
/// The first cell over the limit, with its estimate.
pub fn check_memory(spec: &CampaignSpec, jobs: usize, limit: u64) -> Result<(), String> {
    for setup in &spec.setups {
        for &kind in &spec.kinds {
            crate::budget::check(
                &setup.scenario(spec.first_seed, &[kind]),
                jobs.min(spec.seeds.try_into().unwrap_or(usize::MAX)) as u64,
                limit,
            )?;
        }
    }
    Ok(())
}

/// The summary's last words on the files' expectations: how many failed, or, for one shard
/// (which sees only part of the seeds), that they are judged at merge.
pub fn expectations(failed: usize, shard: Shard) -> String {
    if shard == Shard::ALL {
        format!("{failed} failed their expectation")
    } else {
        format!(
            "expectations judged at merge (this is shard {}/{}: `locksim merge` its --out file with the other shards')",
            shard.index, shard.count
        )
    }
}

/// The matrix's algorithms: every registered one (`all`), the names in `algo` (trimmed,
/// empty ones dropped), or the default matrix's when `algo` is empty.
///
/// # Errors
/// The list comes out empty.
pub fn matrix_algorithms(all: bool, algo: &[String]) -> Result<Vec<String>, String> {
    let algos: Vec<String> = if all {
        locksim_algos::algorithms()
            .iter()
            .map(|a| a.0.to_string())
            .collect()
    } else if algo.is_empty() {
        locksim_algos::DEFAULT_MATRIX
            .iter()
            .map(|a| a.to_string())
            .collect()
    } else {
        algo.iter()
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

/// A campaign's `(first_seed, seeds)`.
pub type SeedRange = (u64, u64);

/// The campaign files under `paths`, their seeds overridden by `flags`, and each one's own
/// `(first_seed, seeds)` (for a verdict under `--seeds`/`--first-seed`).
///
/// # Errors
/// A file cannot be read, there is none, or the overridden seeds run past 2^64.
pub fn collect_files(
    paths: &[PathBuf],
    flags: SeedFlags,
) -> Result<(Vec<CampaignFile>, Vec<SeedRange>), String> {
    let mut files = CampaignFile::collect(paths)?;
    if files.is_empty() {
        let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        return Err(format!("no *.toml campaign files in {}", names.join(", ")));
    }
    let own: Vec<SeedRange> = files.iter().map(|f| (f.first_seed, f.seeds)).collect();
    for f in &mut files {
        flags.apply(f)?;
    }
    Ok((files, own))
}

/// One campaign file run: what `campaign` prints and keeps of it.
pub struct FileDone {
    /// Its expectations failed.
    pub failed: bool,
    /// Its table under its heading (`== name (path): VERDICT`), ending with a blank line.
    pub text: String,
    /// The table shows L1–L3.
    pub liveness: bool,
    /// Its part of `--report`, when asked for.
    pub section: Option<report::Section>,
    /// Its `--json` object.
    pub result: FileResult,
}

/// Judges campaign file `f` on `cells` (run with `spec`, the file's own seeds `own` or
/// others; one shard sees only part of the seeds, so its expectations are judged after
/// `merge`). `liveness`: `--check liveness` was given; `report`: build its report section.
pub fn file_done(
    f: &CampaignFile,
    spec: &CampaignSpec,
    cells: Vec<CellSummary>,
    (shard, own): (Shard, SeedRange),
    liveness: bool,
    report: bool,
) -> FileDone {
    let (problems, verdict) = if shard != Shard::ALL {
        (vec![], "(shard: judged after merge)".to_string())
    } else {
        let problems = f.judge(&cells);
        let verdict = if problems.is_empty() {
            "PASS".to_string()
        } else {
            format!(
                "FAIL: {}{}",
                problems.join("; "),
                crate::seed_flags::overridden(f, own)
            )
        };
        (problems, verdict)
    };
    let heading = format!("{} ({}): {verdict}", f.name, f.path.display());
    let section = report.then(|| report::Section {
        heading: Some(heading.clone()),
        notes: vec![],
        starts: report::starts_of(spec, &cells),
        cells: cells.clone(),
    });
    let liveness = shows_liveness(&cells, f.asks_liveness() || liveness);
    FileDone {
        failed: !problems.is_empty(),
        text: format!("== {heading}\n{}\n", table_body(&cells, liveness)),
        liveness,
        section,
        result: FileResult {
            name: f.name.clone(),
            file: f.path.display().to_string(),
            ok: problems.is_empty(),
            problems,
            cells,
            // One shard's `ok` says nothing: the verdict says so.
            verdict: (shard != Shard::ALL).then(|| "not judged: one shard, judged at merge".into()),
            missing: Vec::new(),
        },
    }
}

/// What the campaign files of one invocation came to so far ([`FilesRun::add`] each as it
/// finishes).
#[derive(Default)]
pub struct FilesRun {
    /// Every file's cells, in order (what `--fail-on` judges).
    pub cells: Vec<CellSummary>,
    /// Each file's `--json` object.
    pub results: Vec<FileResult>,
    /// Each file's `--report` section, when asked for.
    pub sections: Vec<report::Section>,
    /// Files whose expectations failed.
    pub failed: usize,
    /// Seeds judged.
    pub seeds: u64,
    /// Some file's table shows L1–L3 (the legend says so).
    pub liveness: bool,
}

impl FilesRun {
    /// Adds one file's outcome; returns its text (see [`FileDone::text`]).
    pub fn add(&mut self, done: FileDone) -> String {
        self.cells.extend(done.result.cells.iter().cloned());
        self.seeds += done.result.cells.iter().map(|c| c.seeds).sum::<u64>();
        self.failed += usize::from(done.failed);
        self.sections.extend(done.section);
        self.liveness |= done.liveness;
        self.results.push(done.result);
        done.text
    }
}
