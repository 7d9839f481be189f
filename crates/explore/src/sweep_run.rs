//! `locksim sweep` as it runs: the sweep the flags describe ([`from_flags`]), one sweep (or
//! one frontier file's) run as campaign cells with its records streamed to a record file
//! ([`run`]), a frontier file judged ([`frontier_done`]), and the words around the results
//! (the command line that makes a sweep again, a page's notes, `--svg`'s plot). The
//! printing and the progress display are the caller's.

use std::path::Path;
use std::sync::Mutex;

use locksim_core::fault::parse_kinds;
use locksim_core::text::plural;
use locksim_core::{FaultKind, Property};
use locksim_render::sweep::SweepSection;

use crate::frontier::FrontierFile;
use crate::record_file::Writer;
use crate::sweep::{results, Axis, PointResult, SweepDef};
use crate::{run_each, sweep_text, CampaignSpec, Shard, Summary};

/// One sweep of this invocation and what became of it.
pub struct Ran {
    pub def: SweepDef,
    pub spec: CampaignSpec,
    /// One per point, algorithm and fault kind.
    pub results: Vec<PointResult>,
}

/// The flags of a command-line sweep, as given.
pub struct Flags<'a> {
    /// `--algo`: algorithm names (trimmed; empty ones dropped).
    pub algo: &'a [String],
    /// `--vary`: one or two axes (`KEY=RANGE`).
    pub vary: &'a [String],
    /// `--set`: settings every point gets.
    pub set: &'a [String],
    /// `--faults`: fault kinds, comma-separated [default: pause].
    pub faults: Option<&'a str>,
    /// `--seeds` [default: 100] and `--first-seed` [default: 0].
    pub seeds: Option<u64>,
    pub first_seed: Option<u64>,
}

/// The sweep the flags describe.
///
/// # Errors
/// No axis, no algorithm, seeds out of 1..=1,000,000 or past 2^64, a bad axis or fault kind.
pub fn from_flags(f: &Flags) -> Result<SweepDef, String> {
    if f.vary.is_empty() {
        return Err(
            "say what to vary: --vary KEY=RANGE, e.g. --vary pause_max=100ms..3s:10 (or give frontier files)"
                .into(),
        );
    }
    let algorithms: Vec<String> = f
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
    let seeds = f.seeds.unwrap_or(100);
    if seeds == 0 || seeds > 1_000_000 {
        return Err("--seeds must be from 1 to 1000000 (split bigger sweeps with --shard)".into());
    }
    let first_seed = f.first_seed.unwrap_or(0);
    if first_seed.checked_add(seeds).is_none() {
        return Err("--first-seed + --seeds does not fit in 64 bits".into());
    }
    Ok(SweepDef {
        algorithms,
        settings: f.set.to_vec(),
        axes: f
            .vary
            .iter()
            .map(|v| Axis::parse(v))
            .collect::<Result<_, _>>()?,
        kinds: match f.faults {
            Some(k) => parse_kinds(k)?,
            None => vec![FaultKind::Pause],
        },
        first_seed,
        seeds,
    })
}

/// The command line that runs `def` again (`program sweep --algo … --seeds N`), with the
/// `--vary` and `--set` flags as given.
pub fn command_line(program: &str, def: &SweepDef, vary: &[String], set: &[String]) -> String {
    let mut c = format!(
        "{program} sweep --algo {} --faults {}",
        def.algorithms.join(","),
        def.kinds
            .iter()
            .map(|k| k.name())
            .collect::<Vec<_>>()
            .join(",")
    );
    for v in vary {
        c += &format!(" --vary {v}");
    }
    for s in set {
        c += &format!(" --set {s}");
    }
    c += &format!(" --seeds {}", def.seeds);
    if def.first_seed > 0 {
        c += &format!(" --first-seed {}", def.first_seed);
    }
    c
}

/// Refuses a `--plot` name that is no plot (a property such as `S1`, or `latency`,
/// `grants`, `attempts`, `wait`).
pub fn check_plot(name: &str) -> Result<(), String> {
    if !locksim_render::sweep::PLOTS
        .iter()
        .any(|k| k.eq_ignore_ascii_case(name))
        && name.to_ascii_uppercase().parse::<Property>().is_err()
    {
        return Err(format!(
            "--plot {name}: not a plot (a property such as S1, or latency, grants, attempts, wait)"
        ));
    }
    Ok(())
}

/// Seeds the sweep of `spec` runs on `shard`, for a progress display.
pub fn seeds_to_run(spec: &CampaignSpec, shard: Shard) -> u64 {
    (spec.setups.len() * spec.kinds.len()) as u64 * shard.seeds_of(spec.seeds)
}

/// Runs `def` (its `spec` and point `labels` from [`SweepDef::spec`]) on `shard`, each
/// record marked with `label` and its point and streamed to `out`; `progress` gets the seeds
/// done.
///
/// # Errors
/// A record cannot be written, or a seed's run fails to set up.
pub fn run(
    label: &str,
    def: SweepDef,
    (spec, labels): (CampaignSpec, Vec<String>),
    shard: Shard,
    out: Option<&Writer>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Ran, String> {
    let summary = Mutex::new(Summary::default());
    let pp = def.algorithms.len() * def.kinds.len();
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
        &|n, _| progress(n),
    )?;
    let cells = summary
        .into_inner()
        .expect("workers finished")
        .indexed_cells();
    let results = results(&cells, &labels, def.algorithms.len(), def.kinds.len());
    Ok(Ran { def, spec, results })
}

/// `--out` of a sweep: a new file (an existing non-empty one only with `force`), one line
/// per record, held under a file lock until the sweep ends.
///
/// # Errors
/// The file exists (without `force`), or cannot be created or locked.
pub fn create_out(path: &Path, force: bool) -> Result<Writer, String> {
    use crate::record_file::{open, Error, Open};
    crate::record_file::create_parent(path)?;
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
    Ok(Writer::new(path, file))
}

/// Seeds `ran` ran on a shard that runs `seeds_here` of each cell.
pub fn seeds_run(ran: &Ran, seeds_here: u64) -> u64 {
    ran.spec.setups.len() as u64 * ran.spec.kinds.len() as u64 * seeds_here
}

/// `--json` of the command line's sweep: `{"axes", "points"}`.
pub fn json(ran: &Ran, seeds_here: u64) -> serde_json::Value {
    let points: Vec<serde_json::Value> = ran
        .results
        .iter()
        .map(|r| sweep_text::point_json(r, seeds_here))
        .collect();
    serde_json::json!({"axes": sweep_text::axes_json(&ran.def.axes), "points": points})
}

/// The notes of the command line's `--report` to `path`: what ran, and `made_by` (see
/// [`command_line`]).
pub fn report_notes(ran: &Ran, made_by: &str, path: &Path) -> Vec<String> {
    let (first_seed, seeds) = (ran.def.first_seed, ran.def.seeds);
    vec![
        format!(
            "{} points × {} × {}, seeds {}‥{} of each.",
            ran.def.points().len(),
            plural(ran.def.algorithms.len() as u64, "algorithm"),
            plural(ran.def.kinds.len() as u64, "fault kind"),
            first_seed,
            first_seed + seeds - 1
        ),
        format!("Made by: {made_by} --report {}", path.display()),
    ]
}

/// Writes the figure of `s` that `plot` names (the first without one) to `path` (whole,
/// through a rename) as SVG.
///
/// # Errors
/// `path` exists (without `force`), the sweep has no such plot (the error names those it
/// has), or the file cannot be written.
pub fn write_svg(
    path: &Path,
    s: &SweepSection,
    plot: Option<&str>,
    force: bool,
) -> Result<(), String> {
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
    crate::record_file::create_parent(path)?;
    locksim_core::file::write_whole(path, svg.as_bytes(), locksim_core::file::Place::Replace)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// A frontier file run and judged: what `sweep FILE` prints and keeps of it.
pub struct FrontierDone {
    /// A boundary moved.
    pub failed: bool,
    /// `PASS`, `FAIL`, or why it was not judged (one shard).
    pub verdict: String,
    /// The boundaries that moved.
    pub problems: Vec<String>,
    /// Its heading, the problems and its table, for the text output.
    pub text: String,
    /// Its `--json` object.
    pub json: serde_json::Value,
}

/// Judges frontier file `f` on `ran` (run on `shard`, `seeds_here` seeds of each cell; one
/// shard's results are judged after `locksim merge`); `liveness`: the table shows L1–L3.
pub fn frontier_done(
    f: &FrontierFile,
    ran: &Ran,
    shard: Shard,
    seeds_here: u64,
    liveness: bool,
) -> FrontierDone {
    let label = f.path.display().to_string();
    let keys: Vec<String> = f.sweep.axes.iter().map(|x| x.key.clone()).collect();
    let (verdict, problems) = if shard == Shard::ALL {
        let p = f.judge(&ran.results);
        let v = if p.is_empty() { "PASS" } else { "FAIL" };
        (v.to_string(), p)
    } else {
        (
            "not judged (one shard: judge after locksim merge)".to_string(),
            vec![],
        )
    };
    let mut text = format!("== {} ({}): {verdict}\n", f.name, label);
    for p in &problems {
        text += &format!("  FAIL: {p}\n");
    }
    text += &sweep_text::table(&ran.results, &keys, seeds_here, liveness);
    let json = serde_json::json!({
        "file": label,
        "name": f.name,
        "ok": problems.is_empty(),
        "verdict": verdict,
        "problems": problems,
        "axes": sweep_text::axes_json(&f.sweep.axes),
        "points": ran.results.iter().map(|r| sweep_text::point_json(r, seeds_here)).collect::<Vec<_>>(),
    });
    FrontierDone {
        failed: !problems.is_empty(),
        verdict,
        problems,
        text,
        json,
    }
}
