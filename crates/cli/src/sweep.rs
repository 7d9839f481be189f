//! `locksim sweep`: one or two `--vary` axes over any knob, each point run as campaign cells
//! (one per algorithm and fault kind); a table, `--json`, `--csv` and a `--report` page with
//! plots. Frontier files (`sims/frontier/*.toml`) are sweeps with stated boundaries.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Instant;

use clap::Args;
use locksim_core::fault::parse_kinds;
use locksim_core::time::fmt_nanos;
use locksim_core::{FaultKind, Property};
use locksim_explore::frontier::FrontierFile;
use locksim_explore::sweep::{results, Axis, PointResult, SweepDef, Unit};
use locksim_explore::{run_each, CampaignSpec, SeedRecord, Shard, Summary};
use locksim_render::sweep::{sweep_report, SweepAxis, SweepPoint, SweepRate, SweepSection};

use crate::progress::Progress;
use crate::{out, plural, MemoryArgs};

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
    check: Option<crate::campaign::Check>,
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

/// Writes the first figure of `s` to `path` (whole, through a rename).
fn write_svg(path: &Path, s: &SweepSection, plot: Option<&str>, force: bool) -> Result<(), String> {
    if path.exists() && !force {
        return Err(format!(
            "{} exists; not replacing it (give --force to replace it)",
            path.display()
        ));
    }
    let figures = locksim_render::sweep::figures(s);
    let chosen = match plot {
        None => figures.first(),
        Some(name) => figures.iter().find(|f| f.0.eq_ignore_ascii_case(name)),
    };
    let Some((_, svg)) = chosen else {
        return Err(match plot {
            Some(name) if !figures.is_empty() => format!(
                "--plot {name}: this sweep has no such plot (it has {})",
                figures
                    .iter()
                    .map(|f| f.0.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            _ => "nothing to plot".into(),
        });
    };
    crate::campaign::create_parent(path)?;
    locksim_core::file::write_whole(path, svg.as_bytes(), locksim_core::file::Place::Replace)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// One sweep of this invocation and what became of it.
struct Ran {
    def: SweepDef,
    spec: CampaignSpec,
    results: Vec<PointResult>,
}

fn properties(results: &[PointResult], liveness: bool) -> Vec<Property> {
    Property::ALL
        .into_iter()
        .filter(|p| liveness || !p.is_liveness())
        .filter(|p| results.iter().any(|r| r.cell.checked.contains(p)))
        .collect()
}

fn per_point(def: &SweepDef) -> usize {
    def.algorithms.len() * def.kinds.len()
}

/// Runs one sweep (this shard of it), streaming records to `out`.
fn run_sweep(
    label: &str,
    def: SweepDef,
    jobs: usize,
    shard: Shard,
    memory: &MemoryArgs,
    out: Option<&OutFile>,
) -> Result<Ran, String> {
    let (spec, labels) = def.spec(jobs)?;
    crate::campaign::check_memory(&spec, jobs, memory)?;
    let total = (spec.setups.len() * spec.kinds.len()) as u64 * shard.seeds_of(spec.seeds);
    let progress = Progress::new("seeds", total);
    let summary = Mutex::new(Summary::default());
    let pp = per_point(&def);
    run_each(
        &spec,
        shard,
        &|_, _| false,
        &|mut r| {
            r.campaign = label.to_string();
            r.point = labels[r.cell / pp].clone();
            if let Some(o) = out {
                o.write(&r)?;
            }
            summary.lock().expect("no panics while held").add(&r)
        },
        &|n, _| progress.set(n),
    )?;
    progress.finish();
    let cells = summary
        .into_inner()
        .expect("workers finished")
        .indexed_cells();
    let results = results(&cells, &labels, def.algorithms.len(), def.kinds.len());
    Ok(Ran { def, spec, results })
}

/// `--out`: a new file (an existing non-empty one only with `--force`), one line per record.
pub(crate) struct OutFile {
    path: PathBuf,
    file: Mutex<std::fs::File>,
}

impl OutFile {
    /// Held under a file lock until the sweep ends: a second locksim on this --out is refused.
    fn create(path: &Path, force: bool) -> Result<OutFile, String> {
        use locksim_explore::record_file::{open, Error, Open};
        crate::campaign::create_parent(path)?;
        let how = if force { Open::Replace } else { Open::New };
        let file = match open(path, how) {
            Err(Error::Exists) => {
                return Err(format!(
                    "--out {} exists: give --force to replace it",
                    path.display()
                ))
            }
            other => other.map_err(|e| e.to_string())?,
        };
        Ok(OutFile {
            path: path.to_path_buf(),
            file: Mutex::new(file),
        })
    }

    fn write(&self, r: &SeedRecord) -> Result<(), String> {
        let mut line = serde_json::to_string(r).expect("records serialize");
        line.push('\n');
        let mut f = self.file.lock().expect("no panics while held");
        f.write_all(line.as_bytes())
            .and_then(|_| f.flush())
            .map_err(|e| format!("cannot write {}: {e}", self.path.display()))
    }
}

fn axis_value(r: &PointResult, key: &str) -> String {
    r.values
        .iter()
        .find(|(k, _)| k == key)
        .map_or(String::new(), |v| v.1.clone())
}

/// The sweep as text: one row per point, algorithm and fault kind.
pub(crate) fn table(
    results: &[PointResult],
    keys: &[String],
    seeds: u64,
    liveness: bool,
) -> String {
    let props = properties(results, liveness);
    let mut t = String::new();
    // Every column as wide as its widest cell (at least the usual width), so that a long
    // knob name, value, algorithm or fault label does not shift the columns after it.
    let kw: Vec<usize> = keys
        .iter()
        .map(|k| {
            results
                .iter()
                .map(|r| axis_value(r, k).chars().count())
                .chain([k.chars().count(), 14])
                .max()
                .unwrap_or(14)
        })
        .collect();
    let widest = |f: &dyn Fn(&PointResult) -> usize, least: usize| {
        results.iter().map(f).max().unwrap_or(0).max(least)
    };
    let aw = widest(&|r| r.cell.algorithm.chars().count(), 16);
    let fw = widest(&|r| r.cell.faults_label().chars().count(), 12);
    for (k, w) in keys.iter().zip(&kw) {
        t += &format!("{k:>w$} ");
    }
    t += &format!("{:<aw$} {:<fw$} {:>6}", "algorithm", "faults", "seeds");
    for p in &props {
        t += &format!(" {:>19}", format!("{p} (95% interval)"));
    }
    t += &format!(
        " {:>8} {:>17} {:>17} {:>15}  first failing seed\n",
        "grants", "acquire p50/p99", "wait p50/p99", "peak acq/s"
    );
    let pct = |v: f64| {
        if v == 0.0 {
            "0".to_string()
        } else {
            format!("{:.1}%", v * 100.0)
        }
    };
    let d = |v: Option<u64>| v.map_or("-".to_string(), |n| fmt_nanos(n as i128));
    for r in results {
        let c = &r.cell;
        for (k, w) in keys.iter().zip(&kw) {
            t += &format!("{:>w$} ", axis_value(r, k));
        }
        t += &format!(
            "{:<aw$} {:<fw$} {:>6}",
            c.algorithm,
            c.faults_label(),
            c.seeds
        );
        let na = r.proves_nothing();
        for &p in &props {
            let cell = match r.rate(p) {
                None => "n/a".to_string(),
                // No grants or no fault took effect: a zero there is no rate.
                Some(x) if x.violations == 0 && na => "n/a".to_string(),
                Some(x) if x.violations == 0 => format!("- (0–{})", pct(x.high)),
                Some(x) => format!("{} {}–{}", x.violations, pct(x.low), pct(x.high)),
            };
            t += &format!(" {cell:>19}");
        }
        let mut last = c
            .first_violating(&props)
            .map_or("-".to_string(), |s| s.to_string());
        for w in r.warnings(seeds) {
            last += &format!("  {w}");
        }
        if let Some(w) = crate::campaign::starved(c) {
            last += &format!("  {w}");
        }
        t += &format!(
            " {:>8} {:>17} {:>17} {:>15}  {last}\n",
            c.grants,
            format!(
                "{}/{}",
                d(c.acquire_latency_p50_ns),
                d(c.acquire_latency_p99_ns)
            ),
            format!("{}/{}", d(c.wait_p50_ns), d(c.wait_p99_ns)),
            match (
                c.counts.acquire_late_peak_mean_per_s(),
                c.counts.acquire_peak_mean_per_s(),
            ) {
                (Some(late), Some(all)) => format!("{late:.0} ({all:.0})"),
                _ => "-".to_string(),
            }
        );
    }
    t += "\nEach property's column: seeds violating it, and the 95% Wilson interval of its rate\n";
    t += "(out of the seeds on which it was judged); `- (0–x%)`: none, and the rate is below x%\n";
    t += "with 95% confidence. S1 = double grant, S2 = stale write accepted, S3 = the service's\n";
    t += "answers fit no lease lock, S4 = a release freed another grant's lock. `n/a`: not judged,\n";
    t +=
        "or the point proves nothing (no grants, or no fault took effect: the last column says).\n";
    t += "wait: a round's first attempt to its grant. peak acq/s: acquire attempts in a seed's\n";
    t += "busiest 100 ms of its second half (of the whole run), per second, the mean over the\n";
    t += "seeds: the herd a retry policy without jitter keeps after the start-up burst.\n";
    t
}

/// Loud warnings (stderr) about the points that prove nothing.
fn warn(results: &[PointResult], seeds: u64) {
    let bad: Vec<String> = results
        .iter()
        .filter_map(|r| {
            let w = r.warnings(seeds);
            (!w.is_empty()).then(|| {
                format!(
                    "{} × {} at {}: {}",
                    r.cell.algorithm,
                    r.cell.faults_label(),
                    SweepDef::label(&r.values),
                    w.join("; ")
                )
            })
        })
        .collect();
    if !bad.is_empty() {
        eprintln!(
            "WARNING: {} prove nothing or less than they seem:",
            plural(bad.len() as u64, "point")
        );
        for b in bad {
            eprintln!("  {b}");
        }
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// CSV: one row per point, algorithm and fault kind; every property with its interval.
/// `sweep` is the first column: the frontier file, or empty for the command line's sweep.
pub(crate) fn csv(results: &[PointResult], keys: &[String], seeds: u64, sweep: &str) -> String {
    let props = properties(results, true);
    let mut head: Vec<String> = vec!["sweep".into()];
    head.extend(keys.iter().cloned());
    head.extend(["algorithm", "faults", "seeds", "grants"].map(String::from));
    for p in &props {
        let p = p.to_string().to_ascii_lowercase();
        for s in ["violations", "judged", "rate", "low", "high"] {
            head.push(format!("{p}_{s}"));
        }
    }
    head.extend(
        [
            "undecided_seeds",
            "errors",
            "acquire_latency_p50_ns",
            "acquire_latency_p99_ns",
            "wait_p50_ns",
            "wait_p99_ns",
            "acquire_rate_per_s",
            "acquire_peak_mean_per_s",
            "acquire_late_peak_mean_per_s",
            "retries_per_grant",
            "grant_fairness",
            "first_failing_seed",
            "warnings",
        ]
        .map(String::from),
    );
    let mut t = head.join(",") + "\n";
    for r in results {
        let c = &r.cell;
        let mut row: Vec<String> = vec![sweep.to_string()];
        row.extend(keys.iter().map(|k| axis_value(r, k)));
        row.extend([
            c.algorithm.clone(),
            c.faults_label(),
            c.seeds.to_string(),
            c.grants.to_string(),
        ]);
        for &p in &props {
            match r.rate(p) {
                Some(x) => row.extend([
                    x.violations.to_string(),
                    x.judged.to_string(),
                    format!("{:.6}", x.rate),
                    format!("{:.6}", x.low),
                    format!("{:.6}", x.high),
                ]),
                None => row.extend(std::iter::repeat_n(String::new(), 5)),
            }
        }
        let opt = |v: Option<u64>| v.map_or(String::new(), |n| n.to_string());
        let real = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.3}"));
        row.extend([
            c.undecided_seeds.to_string(),
            c.errors.to_string(),
            opt(c.acquire_latency_p50_ns),
            opt(c.acquire_latency_p99_ns),
            opt(c.wait_p50_ns),
            opt(c.wait_p99_ns),
            real(c.counts.acquire_rate()),
            real(c.counts.acquire_peak_mean_per_s()),
            real(c.counts.acquire_late_peak_mean_per_s()),
            real(c.counts.retries_per_grant()),
            real(c.counts.fairness()),
            opt(c.first_failing_seed),
            r.warnings(seeds).join("; "),
        ]);
        t += &row
            .iter()
            .map(|f| csv_field(f))
            .collect::<Vec<_>>()
            .join(",");
        t += "\n";
    }
    t
}

/// One result as JSON: the cell's fields (as `campaign --json` prints them), its point, and
/// per checked property `p_rate`, `p_low`, `p_high`, `p_judged`, and `warnings`.
pub(crate) fn point_json(r: &PointResult, seeds: u64) -> serde_json::Value {
    let mut v = serde_json::to_value(&r.cell).expect("cells serialize");
    if let serde_json::Value::Object(m) = &mut v {
        let point: serde_json::Map<String, serde_json::Value> = r
            .values
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect();
        m.insert("point".into(), point.into());
        for x in &r.rates {
            let p = x.property.to_string().to_ascii_lowercase();
            m.insert(format!("{p}_judged"), x.judged.into());
            m.insert(format!("{p}_rate"), x.rate.into());
            m.insert(format!("{p}_low"), x.low.into());
            m.insert(format!("{p}_high"), x.high.into());
        }
        m.insert("warnings".into(), r.warnings(seeds).into());
        m.insert("proves_nothing".into(), r.proves_nothing().into());
    }
    v
}

fn axes_json(axes: &[Axis]) -> serde_json::Value {
    serde_json::to_value(axes).expect("axes serialize")
}

/// The page's view of a sweep's results; `made` gives each result's shrunk trace.
fn section(
    heading: Option<String>,
    notes: Vec<String>,
    axes: &[Axis],
    results: &[PointResult],
    seeds: u64,
    liveness: bool,
    made: &[crate::report::Made],
) -> SweepSection {
    // A list of words is no plotted axis: each of its values is a series of its own.
    let series_key = axes.iter().find(|a| a.is_words()).map(|a| a.key.clone());
    let axes: Vec<&Axis> = axes.iter().filter(|a| !a.is_words()).collect();
    SweepSection {
        heading,
        notes,
        axes: axes
            .iter()
            .map(|a| SweepAxis {
                key: a.key.clone(),
                values: a.values.clone(),
                numbers: a.numbers.clone(),
                duration: a.unit == Unit::Duration,
                log: a.log,
            })
            .collect(),
        properties: properties(results, liveness)
            .iter()
            .map(|p| p.to_string())
            .collect(),
        points: results
            .iter()
            .enumerate()
            .map(|(i, r)| SweepPoint {
                series: match &series_key {
                    Some(k) => format!(
                        "{} × {} · {k}={}",
                        r.cell.algorithm,
                        r.cell.faults_label(),
                        axis_value(r, k)
                    ),
                    None => format!("{} × {}", r.cell.algorithm, r.cell.faults_label()),
                },
                at: axes
                    .iter()
                    .map(|a| {
                        let v = axis_value(r, &a.key);
                        a.values.iter().position(|x| *x == v).unwrap_or(0)
                    })
                    .collect(),
                label: SweepDef::label(&r.values),
                seeds: r.cell.seeds,
                grants: r.cell.grants,
                rates: r
                    .rates
                    .iter()
                    .map(|x| SweepRate {
                        property: x.property.to_string(),
                        violations: x.violations,
                        judged: x.judged,
                        rate: x.rate,
                        low: x.low,
                        high: x.high,
                    })
                    .collect(),
                latency_p50_ns: r.cell.acquire_latency_p50_ns,
                latency_p99_ns: r.cell.acquire_latency_p99_ns,
                wait_p50_ns: r.cell.wait_p50_ns,
                wait_p99_ns: r.cell.wait_p99_ns,
                peak_per_s: r.cell.counts.acquire_peak_mean_per_s(),
                late_peak_per_s: r.cell.counts.acquire_late_peak_mean_per_s(),
                rate_per_s: r.cell.counts.acquire_rate(),
                warnings: r.warnings(seeds),
                first_failing_seed: r.cell.first_failing_seed,
                page: made.get(i).and_then(|m| m.page.clone()),
                trace: made.get(i).and_then(|m| m.trace.clone()),
                note: made.get(i).and_then(|m| m.note.clone()),
            })
            .collect(),
    }
}

/// Shrinks the first failing seed of every failing result, on `jobs` threads.
fn shrink_all(ran: &Ran, dir: &Path, jobs: usize) -> Vec<crate::report::Made> {
    let failing: Vec<usize> = (0..ran.results.len())
        .filter(|&i| ran.results[i].cell.first_failing_seed.is_some())
        .collect();
    let made: Mutex<Vec<(usize, crate::report::Made)>> = Mutex::new(Vec::new());
    if !failing.is_empty() {
        eprintln!(
            "shrinking the first failing seed of {} for the report",
            plural(failing.len() as u64, "point")
        );
        let progress = Progress::new("points shrunk", failing.len() as u64);
        let next = std::sync::atomic::AtomicUsize::new(0);
        let done = std::sync::atomic::AtomicUsize::new(0);
        let kinds = ran.spec.kinds.len();
        let cells: Vec<usize> = {
            // The cell index of each result: results are in cell order, one per cell run.
            let pp = per_point(&ran.def);
            ran.results
                .iter()
                .map(|r| {
                    let a = ran
                        .def
                        .algorithms
                        .iter()
                        .position(|x| *x == r.cell.algorithm)
                        .unwrap_or(0);
                    let k = ran
                        .spec
                        .kinds
                        .iter()
                        .position(|x| *x == r.cell.faults)
                        .unwrap_or(0);
                    r.point * pp + a * kinds + k
                })
                .collect()
        };
        std::thread::scope(|scope| {
            for _ in 0..jobs.max(1).min(failing.len()) {
                scope.spawn(|| loop {
                    let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&i) = failing.get(n) else { return };
                    let r = &ran.results[i];
                    let setup = &ran.spec.setups[cells[i] / kinds];
                    let what = format!("the sweep at {}", SweepDef::label(&r.values));
                    let m = crate::report::make_with(setup, &r.cell, dir, &what);
                    made.lock().expect("no panics while held").push((i, m));
                    progress
                        .set(done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) as u64 + 1);
                });
            }
        });
        progress.finish();
    }
    let mut made = made.into_inner().expect("workers finished");
    made.sort_by_key(|m| m.0);
    let mut all: Vec<crate::report::Made> = (0..ran.results.len())
        .map(|_| crate::report::Made::default())
        .collect();
    for (i, m) in made {
        all[i] = m;
    }
    all
}

fn command_line(a: &SweepArgs, def: &SweepDef) -> String {
    let mut c = format!(
        "{} sweep --algo {} --faults {}",
        crate::program(),
        def.algorithms.join(","),
        def.kinds
            .iter()
            .map(|k| k.name())
            .collect::<Vec<_>>()
            .join(",")
    );
    for v in &a.vary {
        c += &format!(" --vary {v}");
    }
    for s in &a.set {
        c += &format!(" --set {s}");
    }
    c += &format!(" --seeds {}", def.seeds);
    if def.first_seed > 0 {
        c += &format!(" --first-seed {}", def.first_seed);
    }
    c
}

pub fn main(a: SweepArgs) -> Result<ExitCode, String> {
    let started = Instant::now();
    let jobs = crate::campaign::jobs_of(a.jobs)?;
    let shard = Shard::resolve(a.shard.as_deref(), a.shards, &|k| std::env::var(k).ok())?
        .unwrap_or(Shard::ALL);
    if a.report.is_some() && shard != Shard::ALL {
        return Err("--report needs the whole sweep, not one shard".into());
    }
    if let Some(r) = &a.report {
        crate::report::check_target_with_out(r, a.out.as_deref(), a.force)?;
    }
    if let Some(p) = a.svg.as_ref().filter(|p| p.exists() && !a.force) {
        return Err(format!(
            "{} exists; not replacing it (give --force to replace it)",
            p.display()
        ));
    }
    if let Some(name) = &a.plot {
        if !locksim_render::sweep::PLOTS
            .iter()
            .any(|k| k.eq_ignore_ascii_case(name))
            && name.to_ascii_uppercase().parse::<Property>().is_err()
        {
            return Err(format!(
                "--plot {name}: not a plot (a property such as S1, or latency, grants, attempts, wait)"
            ));
        }
    }
    if a.svg.is_some() && !a.paths.is_empty() {
        return Err("--svg draws the command line's sweep, not frontier files".into());
    }
    let liveness = a.check.is_some();
    let out_file = match &a.out {
        Some(p) => Some(OutFile::create(p, a.force)?),
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
    if a.vary.is_empty() {
        return Err(
            "say what to vary: --vary KEY=RANGE, e.g. --vary pause_max=100ms..3s:10 (or give frontier files)"
                .into(),
        );
    }
    let algorithms: Vec<String> = a
        .algo
        .iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    if algorithms.is_empty() {
        return Err(format!(
            "say which algorithms: --algo NAME[,NAME] (valid: {})",
            locksim_algos::names()
        ));
    }
    let seeds = a.seeds.unwrap_or(100);
    if seeds == 0 || seeds > 1_000_000 {
        return Err("--seeds must be from 1 to 1000000 (split bigger sweeps with --shard)".into());
    }
    let first_seed = a.first_seed.unwrap_or(0);
    if first_seed.checked_add(seeds).is_none() {
        return Err("--first-seed + --seeds does not fit in 64 bits".into());
    }
    let def = SweepDef {
        algorithms,
        settings: a.set.clone(),
        axes: a
            .vary
            .iter()
            .map(|v| Axis::parse(v))
            .collect::<Result<_, _>>()?,
        kinds: match &a.faults {
            Some(f) => parse_kinds(f)?,
            None => vec![FaultKind::Pause],
        },
        first_seed,
        seeds,
    };
    let made_by = command_line(&a, &def);
    let ran = run_sweep("sweep", def, jobs, shard, &a.memory, out_file.as_ref())?;
    let keys: Vec<String> = ran.def.axes.iter().map(|x| x.key.clone()).collect();
    let seeds_here = shard.seeds_of(seeds);
    if let Some(path) = &a.svg {
        let s = section(
            None,
            vec![],
            &ran.def.axes,
            &ran.results,
            seeds_here,
            liveness,
            &[],
        );
        write_svg(path, &s, a.plot.as_deref(), a.force)?;
        eprintln!("plot: {}", path.display());
    }
    if let Some(path) = &a.report {
        let dir = crate::report::files_dir(path);
        let made = shrink_all(&ran, &dir, jobs);
        let s = section(
            None,
            vec![],
            &ran.def.axes,
            &ran.results,
            seeds_here,
            liveness,
            &made,
        );
        let notes = vec![
            format!(
                "{} points × {} × {}, seeds {}‥{} of each.",
                ran.def.points().len(),
                plural(ran.def.algorithms.len() as u64, "algorithm"),
                plural(ran.def.kinds.len() as u64, "fault kind"),
                first_seed,
                first_seed + seeds - 1
            ),
            format!("Made by: {made_by} --report {}", path.display()),
        ];
        let html = sweep_report("locksim sweep", &notes, &[s]);
        crate::render::write_page(path, &html, a.force)?;
        eprintln!("report: {} (traces in {})", path.display(), dir.display());
    }
    if a.json {
        let points: Vec<serde_json::Value> = ran
            .results
            .iter()
            .map(|r| point_json(r, seeds_here))
            .collect();
        out(&format!(
            "{}\n",
            serde_json::json!({"axes": axes_json(&ran.def.axes), "points": points})
        ));
    } else if a.csv {
        out(&csv(&ran.results, &keys, seeds_here, ""));
    } else {
        out(&table(&ran.results, &keys, seeds_here, liveness));
    }
    warn(&ran.results, seeds_here);
    let n = ran.spec.setups.len() as u64 * ran.spec.kinds.len() as u64 * seeds_here;
    eprintln!(
        "{} in {:.1}s on {}",
        plural(n, "seed"),
        started.elapsed().as_secs_f64(),
        plural(jobs as u64, "thread")
    );
    Ok(ExitCode::SUCCESS)
}

/// Runs frontier files and judges them; exit 1 when a boundary moved.
fn files(
    a: &SweepArgs,
    jobs: usize,
    shard: Shard,
    out_file: Option<&OutFile>,
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
        total += ran.spec.setups.len() as u64 * ran.spec.kinds.len() as u64 * seeds_here;
        let keys: Vec<String> = f.sweep.axes.iter().map(|x| x.key.clone()).collect();
        let (verdict, problems) = if shard == Shard::ALL {
            let p = f.judge(&ran.results);
            if p.is_empty() {
                ("PASS".to_string(), p)
            } else {
                failed += 1;
                ("FAIL".to_string(), p)
            }
        } else {
            (
                "not judged (one shard: judge after locksim merge)".to_string(),
                vec![],
            )
        };
        if !a.json && !a.csv {
            let mut t = format!("== {} ({}): {verdict}\n", f.name, label);
            for p in &problems {
                t += &format!("  FAIL: {p}\n");
            }
            t += &table(&ran.results, &keys, seeds_here, a.check.is_some());
            out(&t);
        } else if a.csv {
            out(&csv(&ran.results, &keys, seeds_here, &label));
        }
        warn(&ran.results, seeds_here);
        if a.report.is_some() {
            let dir = crate::report::files_dir(a.report.as_deref().expect("checked"));
            let made = shrink_all(&ran, &dir, jobs);
            let mut notes = vec![format!("Why: {}", f.why)];
            notes.extend(problems.iter().map(|p| format!("FAIL: {p}")));
            sections.push(section(
                Some(format!("{} ({label}): {verdict}", f.name)),
                notes,
                &f.sweep.axes,
                &ran.results,
                seeds_here,
                a.check.is_some(),
                &made,
            ));
        }
        json.push(serde_json::json!({
            "file": label,
            "name": f.name,
            "ok": problems.is_empty(),
            "verdict": verdict,
            "problems": problems,
            "axes": axes_json(&f.sweep.axes),
            "points": ran.results.iter().map(|r| point_json(r, seeds_here)).collect::<Vec<_>>(),
        }));
    }
    if let Some(path) = &a.report {
        let html = sweep_report(
            "locksim sweep: frontier files",
            &[format!(
                "Made by: {} sweep {} --report {}",
                crate::program(),
                a.paths
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" "),
                path.display()
            )],
            &sections,
        );
        crate::render::write_page(path, &html, a.force)?;
    }
    if a.json {
        out(&format!("{}\n", serde_json::json!({ "frontiers": json })));
    }
    eprintln!(
        "{}, {} in {:.1}s; {}",
        plural(files.len() as u64, "frontier file"),
        plural(total, "seed"),
        started.elapsed().as_secs_f64(),
        crate::campaign::expectations(failed, shard)
    );
    Ok(if failed > 0 {
        ExitCode::from(crate::exit::VIOLATION)
    } else {
        ExitCode::SUCCESS
    })
}

/// What `locksim merge` makes of one sweep's records.
pub(crate) struct MergedSweep {
    /// The table (headed by a frontier file's verdict), as `sweep` prints it.
    pub text: String,
    /// The CSV `sweep --csv` prints.
    pub csv: String,
    /// The axes (rebuilt from the records' point labels, or a frontier file's own) and the
    /// points: `{"axes", "points"}`, as `sweep --json` prints them.
    pub axes_points: serde_json::Value,
    /// For a frontier file, its entry of `sweep --json`'s `"frontiers"`: `{file, name, ok,
    /// verdict, problems, axes, points}`.
    pub frontier: Option<serde_json::Value>,
    /// `false` when a frontier file's boundary moved.
    pub ok: bool,
}

/// The axes of a sweep whose cells' points are `by_point` (labels `k=v k2=v2`, point-major):
/// each key's distinct values in grid order.
///
/// # Errors
/// A value that is no axis value.
fn axes_of(by_point: &[String]) -> Result<Vec<Axis>, String> {
    let mut keys: Vec<(String, Vec<String>)> = Vec::new();
    for l in by_point {
        for (k, v) in l.split(' ').filter_map(|kv| kv.split_once('=')) {
            let at = match keys.iter().position(|x| x.0 == k) {
                Some(i) => i,
                None => {
                    keys.push((k.to_string(), Vec::new()));
                    keys.len() - 1
                }
            };
            if !keys[at].1.iter().any(|x| x == v) {
                keys[at].1.push(v.to_string());
            }
        }
    }
    keys.into_iter()
        .map(|(k, values)| Axis::from_values(&k, values))
        .collect()
}

/// `locksim merge` of a sweep's records (they name their point): the table, CSV and JSON one
/// unsharded run prints, and for a frontier file its verdict. `cells` are the merged cells by
/// index; `labels` each cell's point; `missing` what a partial merge lacks.
pub(crate) fn merged(
    campaign: &str,
    cells: &[(usize, locksim_explore::CellSummary)],
    labels: &std::collections::BTreeMap<usize, String>,
    seeds: u64,
    missing: &[String],
) -> Result<MergedSweep, String> {
    let judge = missing.is_empty();
    // Algorithms × kinds per point: the distinct (algorithm, faults) pairs.
    let mut pairs: Vec<(String, FaultKind)> = Vec::new();
    for (_, c) in cells {
        if !pairs.contains(&(c.algorithm.clone(), c.faults)) {
            pairs.push((c.algorithm.clone(), c.faults));
        }
    }
    let pp = pairs.len().max(1);
    // The points the records name, numbered from 0 in cell order: a record's cell index
    // (which may claim any size) never sizes anything here.
    let mut point_no: std::collections::BTreeMap<usize, usize> = Default::default();
    let mut by_point: Vec<String> = Vec::new();
    for (cell, l) in labels {
        point_no.entry(cell / pp).or_insert_with(|| {
            by_point.push(l.clone());
            by_point.len() - 1
        });
    }
    let cells: Vec<(usize, locksim_explore::CellSummary)> = cells
        .iter()
        .map(|(cell, c)| {
            // Every sweep record names its point; a cell without one reads as unlabelled.
            let p = point_no
                .get(&(cell / pp))
                .copied()
                .unwrap_or(by_point.len());
            (p * pp + cell % pp, c.clone())
        })
        .collect();
    let results = results(&cells, &by_point, pp, 1);
    let file = (campaign != "sweep").then(|| FrontierFile::read(Path::new(campaign)));
    let rebuilt = axes_of(&by_point).map_err(|e| format!("cannot merge {campaign}: {e}"))?;
    // A frontier file still where it ran says its axes (a log scale included), if they are the
    // records' axes.
    let axes = match &file {
        Some(Ok(f))
            if f.sweep.axes.len() == rebuilt.len()
                && f.sweep.axes.iter().zip(&rebuilt).all(|(a, b)| {
                    a.key == b.key && b.values.iter().all(|v| a.values.contains(v))
                }) =>
        {
            f.sweep.axes.clone()
        }
        _ => rebuilt,
    };
    let keys: Vec<String> = axes.iter().map(|a| a.key.clone()).collect();
    let mut text = String::new();
    let mut ok = true;
    let points_json: Vec<serde_json::Value> =
        results.iter().map(|r| point_json(r, seeds)).collect();
    let mut frontier = None;
    if let Some(file) = &file {
        let (name, verdict, problems) = match file {
            Ok(f) if judge => {
                let p = f.judge(&results);
                ok = p.is_empty();
                let v = if ok { "PASS" } else { "FAIL" };
                (f.name.clone(), v.to_string(), p)
            }
            Ok(f) => (
                f.name.clone(),
                format!("not judged (partial: {})", missing.join("; ")),
                vec![],
            ),
            Err(e) => (String::new(), format!("not judged: {e}"), vec![]),
        };
        text += &if name.is_empty() {
            format!("== {campaign} ({verdict})\n")
        } else {
            format!("== {name} ({campaign}): {verdict}\n")
        };
        for x in &problems {
            text += &format!("  FAIL: {x}\n");
        }
        frontier = Some(serde_json::json!({
            "file": campaign,
            "name": name,
            "ok": ok,
            "verdict": verdict,
            "problems": problems,
            "axes": axes_json(&axes),
            "points": points_json,
        }));
    }
    text += &table(&results, &keys, seeds, false);
    let mut axes_points = serde_json::json!({"axes": axes_json(&axes), "points": points_json});
    if !missing.is_empty() {
        axes_points["missing"] = missing.into();
    }
    let csv_label = if campaign == "sweep" { "" } else { campaign };
    Ok(MergedSweep {
        text,
        csv: csv(&results, &keys, seeds, csv_label),
        axes_points,
        frontier,
        ok,
    })
}
