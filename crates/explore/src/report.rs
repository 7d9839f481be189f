//! The report page of `locksim campaign --report FILE` (and `merge --report`, `sweep
//! --report`): the matrix (or each campaign file's) as a page; each violated cell's first
//! failing seed shrunk, its trace and its rendered timeline written beside the report, in
//! [`files_dir`].

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use locksim_core::text::plural;
use locksim_core::Scenario;
use locksim_render::report::{campaign_report, ReportCell, ReportSection};
use locksim_render::{render_html, Run};
use locksim_sim::LockAlgorithm;

use crate::page::{check_page_target, write_page};
use crate::shrink::{shrink_with, trace_file_name};
use crate::sweep::{PointResult, SweepDef};
use crate::table::metric_pairs;
use crate::{check_scenario, CampaignSpec, CellSummary, Setup};

/// The folder beside `report` that holds its traces and pages: `report.html` →
/// `report-files/`.
pub fn files_dir(report: &Path) -> PathBuf {
    let stem = report
        .file_stem()
        .map_or("report".into(), |s| s.to_string_lossy().into_owned());
    report.with_file_name(format!("{stem}-files"))
}

/// `--report FILE` can be written, checked before the campaign runs (not after its work):
/// FILE may take a page ([`locksim_explore::page::check_page_target`]: not another file
/// without `force`, in a folder that exists or can be made and takes a file), and its
/// [`files_dir`] is a folder or can be made there.
///
/// # Errors
/// One line naming the file or folder in the way.
pub fn check_target(report: &Path, force: bool) -> Result<(), String> {
    check_target_with_out(report, None, force)
}

/// [`check_target`], and `--report` is not the run's own `--out` record file (both would be
/// written to one path: refused before the run, not found out after it).
///
/// # Errors
/// One line naming the file or folder in the way.
pub fn check_target_with_out(report: &Path, out: Option<&Path>, force: bool) -> Result<(), String> {
    if let Some(out) = out {
        // The same file even when written differently (`x.html`, `./x.html`, `dir/../x.html`).
        let key = |p: &Path| {
            let dir = p
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            std::fs::canonicalize(dir)
                .ok()
                .map(|d| d.join(p.file_name().unwrap_or_default()))
        };
        let same = |a: &Path, b: &Path| a == b || key(a).is_some_and(|k| Some(k) == key(b));
        if same(report, out) {
            return Err(format!(
                "--report {} is also the --out file: give the report and the records different names",
                report.display()
            ));
        }
    }
    check_page_target(report, force)?;
    let dir = files_dir(report);
    if dir.exists() && !dir.is_dir() {
        return Err(format!(
            "--report {}: {} is a file, where the report's traces and pages go (move it, or give another --report)",
            report.display(),
            dir.display()
        ));
    }
    Ok(())
}

/// What became of one violated cell.
#[derive(Default)]
pub struct Made {
    /// The unshrunk first failing seed's latency-over-time plot (inline SVG).
    pub plot: Option<String>,
    pub page: Option<String>,
    pub trace: Option<String>,
    pub note: Option<String>,
}

/// Where a violated cell's first failing seed comes from: its scenario and the algorithm that
/// runs it, or why neither is known.
pub type Start = Result<(Scenario, Arc<dyn LockAlgorithm>), String>;

/// The starts of a campaign's violated cells (`None` for the others): each first failing
/// seed's scenario, rebuilt from the spec that ran it.
pub fn starts_of(spec: &CampaignSpec, cells: &[CellSummary]) -> Vec<Option<Start>> {
    cells
        .iter()
        .map(|c| {
            c.first_failing_seed.map(|seed| {
                spec.setups
                    .iter()
                    .find(|s| s.algorithm == c.algorithm)
                    .map(|s| (s.scenario(seed, &[c.faults]), s.algo.clone()))
                    .ok_or_else(|| "no setup for this algorithm".to_string())
            })
        })
        .collect()
}

/// As [`make`], for the cell `c` run with `setup` (`what`: "the campaign", "the sweep at …").
pub fn make_with(setup: &Setup, c: &CellSummary, dir: &Path, what: &str, program: &str) -> Made {
    let start = c
        .first_failing_seed
        .map(|seed| Ok((setup.scenario(seed, &[c.faults]), setup.algo.clone())));
    make(c, start.as_ref(), dir, what, program)
}

/// Shrinks the first failing seed of the cell (from `start`), writes its trace (never
/// replacing a different one, nor losing this one: [`locksim_core::Trace::write_beside`]) and
/// its page into `dir`; links are relative to the report's
/// folder. `what` names where the seed ran, and `program` the command to replay the trace
/// with, for the page's notes.
fn make(c: &CellSummary, start: Option<&Start>, dir: &Path, what: &str, program: &str) -> Made {
    let Some(seed) = c.first_failing_seed else {
        return Made::default();
    };
    let (scenario, algo) = match start {
        Some(Ok((s, a))) => (s.clone(), a.clone()),
        Some(Err(e)) => {
            return Made {
                note: Some(e.clone()),
                ..Made::default()
            }
        }
        None => {
            return Made {
                note: Some(format!("seed {seed}'s scenario is not known")),
                ..Made::default()
            }
        }
    };
    let record = algo.lock_is_record();
    let session = algo.lock_is_session();
    let first = check_scenario(&scenario, algo.clone());
    let plot = first.history.as_ref().map(|h| {
        locksim_render::latency_plot(&Run {
            scenario: &scenario,
            history: h,
            verdict: &first.verdict,
            title: String::new(),
            notes: vec![],
            record,
            session,
        })
    });
    let Some(&property) = first.verdict.kinds().first() else {
        return Made {
            note: Some(format!("seed {seed} no longer fails")),
            ..Made::default()
        };
    };
    let shrunk = match shrink_with(&scenario, algo, property, &|_| {}) {
        Ok(s) => s,
        Err(e) => {
            return Made {
                note: Some(format!("could not shrink seed {seed}: {e}")),
                ..Made::default()
            }
        }
    };
    let trace = shrunk.trace(true);
    let name = trace_file_name(&trace, property);
    let folder = dir
        .file_name()
        .map_or(String::new(), |f| f.to_string_lossy().into_owned());
    let mut made = Made {
        plot,
        ..Made::default()
    };
    // Never lost: a different trace of that name (another campaign's, under other settings)
    // is kept, and this one written beside it as NAME-2.json.
    let (trace_path, name) = match trace.write_beside(dir, &name, "the shrunk trace") {
        Ok(w) => {
            let file = w
                .path
                .file_name()
                .map_or(name.clone(), |f| f.to_string_lossy().into());
            made.trace = Some(format!("{folder}/{file}"));
            made.note = w.clash.map(|_| {
                format!("{folder}/{name} holds a different trace of the same digest: kept, and this seed's trace is {folder}/{file} beside it")
            });
            (w.path, file)
        }
        Err(e) => {
            made.note = Some(e);
            (dir.join(&name), name)
        }
    };
    let page_name = format!("{}.html", name.trim_end_matches(".json"));
    let html = render_html(&Run {
        scenario: &shrunk.scenario,
        history: &shrunk.history,
        verdict: &shrunk.verdict,
        title: name.clone(),
        notes: vec![
            format!(
                "{} × {}: seed {seed} of {what}, shrunk to {} and {} in {}, keeping {property}.",
                c.algorithm,
                c.faults,
                plural(shrunk.scenario.faults.len() as u64, "fault"),
                plural(shrunk.scenario.cluster.clients, "client"),
                plural(shrunk.runs, "run")
            ),
            format!(
                "Replay it with: {} replay {}",
                program,
                trace_path.display()
            ),
        ],
        record,
        session,
    });
    match write_page(&dir.join(&page_name), &html, false) {
        Ok(()) => made.page = Some(format!("{folder}/{page_name}")),
        Err(e) => made.note = Some(made.note.map_or(e.clone(), |n| format!("{n}; {e}"))),
    }
    made
}

/// One campaign's part of the report: its heading and notes, what it ran, its cells.
pub struct Section {
    /// A heading (a campaign file and its verdict), or none for the command-line matrix.
    pub heading: Option<String>,
    /// Lines under the heading.
    pub notes: Vec<String>,
    /// Per cell, where its first failing seed comes from (`None` for a cell without one).
    pub starts: Vec<Option<Start>>,
    /// Its cells.
    pub cells: Vec<CellSummary>,
}

/// How far a report's shrinking got, for a progress display: `Start` once with the number
/// of seeds to shrink (never when there are none), `Done` with the number shrunk after each,
/// `Finished` at the end.
#[derive(Debug, Clone, Copy)]
pub enum Shrinking {
    /// About to shrink this many seeds.
    Start(u64),
    /// This many are shrunk.
    Done(u64),
    /// All are.
    Finished,
}

/// Writes the report of finished campaigns to `path`, and the shrunk traces and their pages
/// into [`files_dir`]; shrinks on `jobs` threads, telling `shown` how far it got (`program`
/// names the command in the pages' "Replay it with" lines). Returns the number of pages made.
///
/// # Errors
/// When the report cannot be written (or `path` holds a file locksim did not write).
pub fn write(
    path: &Path,
    sections: &[Section],
    jobs: usize,
    notes: Vec<String>,
    force: bool,
    program: &str,
    shown: &(dyn Fn(Shrinking) + Sync),
) -> Result<usize, String> {
    let dir = files_dir(path);
    let violated: Vec<(usize, usize)> = sections
        .iter()
        .enumerate()
        .flat_map(|(s, sec)| {
            (0..sec.cells.len())
                .filter(|&i| sec.cells[i].first_failing_seed.is_some())
                .map(move |i| (s, i))
        })
        .collect();
    let made: Mutex<Vec<((usize, usize), Made)>> = Mutex::new(Vec::new());
    if !violated.is_empty() {
        shown(Shrinking::Start(violated.len() as u64));
        let (next, done) = (AtomicUsize::new(0), AtomicUsize::new(0));
        std::thread::scope(|scope| {
            for _ in 0..jobs.max(1).min(violated.len()) {
                scope.spawn(|| loop {
                    let Some(&(s, i)) = violated.get(next.fetch_add(1, Ordering::Relaxed)) else {
                        return;
                    };
                    let sec = &sections[s];
                    let m = make(
                        &sec.cells[i],
                        sec.starts.get(i).and_then(Option::as_ref),
                        &dir,
                        "the campaign",
                        program,
                    );
                    made.lock()
                        .expect("no panic while holding it")
                        .push(((s, i), m));
                    shown(Shrinking::Done(
                        done.fetch_add(1, Ordering::Relaxed) as u64 + 1,
                    ));
                });
            }
        });
        shown(Shrinking::Finished);
    }
    let made = made.into_inner().expect("workers finished");
    let pages = made.iter().filter(|m| m.1.page.is_some()).count();
    let report: Vec<ReportSection> = sections
        .iter()
        .enumerate()
        .map(|(s, sec)| ReportSection {
            heading: sec.heading.clone(),
            notes: sec.notes.clone(),
            cells: sec
                .cells
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let m = made.iter().find(|m| m.0 == (s, i)).map(|m| &m.1);
                    ReportCell {
                        algorithm: c.algorithm.clone(),
                        faults: c.faults.name().to_string(),
                        seeds: c.seeds,
                        violations: c
                            .checked
                            .iter()
                            .map(|&p| (p.to_string(), c.violated(p)))
                            .collect(),
                        undecided: c.undecided_seeds,
                        grants: c.grants,
                        errors: c.errors,
                        no_fault: c.no_fault_took_effect(),
                        kind_untested: c.kind_untested(),
                        first_failing_seed: c.first_failing_seed,
                        page: m.and_then(|m| m.page.clone()),
                        trace: m.and_then(|m| m.trace.clone()),
                        note: m.and_then(|m| m.note.clone()),
                        metrics: metric_pairs(c),
                        plot: m.and_then(|m| m.plot.clone()),
                    }
                })
                .collect(),
        })
        .collect();
    let html = campaign_report("locksim campaign report", &notes, &report);
    write_page(path, &html, force)?;
    Ok(pages)
}

/// Shrinks the first failing seed of every failing point of the sweep `def` (run as `spec`,
/// giving `results`) into `dir`, on `jobs` threads, telling `shown` how far it got; one
/// [`Made`] per result, in order (empty for a result without a failing seed).
pub fn shrink_points(
    def: &SweepDef,
    spec: &CampaignSpec,
    results: &[PointResult],
    dir: &Path,
    jobs: usize,
    program: &str,
    shown: &(dyn Fn(Shrinking) + Sync),
) -> Vec<Made> {
    let failing: Vec<usize> = (0..results.len())
        .filter(|&i| results[i].cell.first_failing_seed.is_some())
        .collect();
    let made: Mutex<Vec<(usize, Made)>> = Mutex::new(Vec::new());
    if !failing.is_empty() {
        shown(Shrinking::Start(failing.len() as u64));
        let next = std::sync::atomic::AtomicUsize::new(0);
        let done = std::sync::atomic::AtomicUsize::new(0);
        let kinds = spec.kinds.len();
        let cells: Vec<usize> = {
            // The cell index of each result: results are in cell order, one per cell run.
            let pp = def.algorithms.len() * def.kinds.len();
            results
                .iter()
                .map(|r| {
                    let a = def
                        .algorithms
                        .iter()
                        .position(|x| *x == r.cell.algorithm)
                        .unwrap_or(0);
                    let k = spec
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
                    let r = &results[i];
                    let setup = &spec.setups[cells[i] / kinds];
                    let what = format!("the sweep at {}", SweepDef::label(&r.values));
                    let m = make_with(setup, &r.cell, dir, &what, program);
                    made.lock().expect("no panics while held").push((i, m));
                    shown(Shrinking::Done(
                        done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) as u64 + 1,
                    ));
                });
            }
        });
        shown(Shrinking::Finished);
    }
    let mut made = made.into_inner().expect("workers finished");
    made.sort_by_key(|m| m.0);
    let mut all: Vec<Made> = (0..results.len()).map(|_| Made::default()).collect();
    for (i, m) in made {
        all[i] = m;
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use locksim_core::FaultKind;

    #[test]
    fn a_different_trace_of_the_same_name_is_kept_and_the_cells_written_beside_it() {
        let algos = ["central".to_string()];
        let spec =
            crate::campaign_run::matrix_spec(&algos, &[], vec![FaultKind::Pause], None, (0, 20), 1)
                .unwrap();
        let cells = crate::campaign::run_campaign(&spec, &|_, _| {});
        let c = cells
            .iter()
            .find(|c| c.first_failing_seed.is_some())
            .unwrap();
        let d = std::env::temp_dir().join(format!("locksim-report-beside-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let first = make_with(&spec.setups[0], c, &d, "the campaign", "locksim");
        let name = first.trace.clone().unwrap();
        let own = d.join(name.rsplit('/').next().unwrap());
        assert_eq!(first.note, None);
        std::fs::write(&own, "another trace").unwrap();
        let again = make_with(&spec.setups[0], c, &d, "the campaign", "locksim");
        let beside = again.trace.unwrap();
        assert!(beside.ends_with("-2.json"), "{beside}");
        assert!(again.note.unwrap().contains("holds a different trace"));
        assert!(again.page.unwrap().ends_with("-2.html"));
        assert_eq!(std::fs::read_to_string(&own).unwrap(), "another trace");
        std::fs::remove_dir_all(&d).ok();
    }
}
