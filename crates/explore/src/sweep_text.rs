//! A sweep's results as `locksim sweep` and `locksim merge` print them: the table, the CSV,
//! the JSON points, the page's [`SweepSection`], and what `merge` makes of a sweep's
//! records ([`merged`]). Rates are fractions (0..1) with 95% Wilson intervals; times are
//! nanoseconds of true (simulated) time.

use std::path::Path;

use locksim_core::text::plural;
use locksim_core::time::fmt_nanos;
use locksim_core::{FaultKind, Property};
use locksim_render::sweep::{SweepAxis, SweepPoint, SweepRate, SweepSection};

use crate::frontier::FrontierFile;
use crate::sweep::{results, Axis, PointResult, SweepDef, Unit};

pub fn properties(results: &[PointResult], liveness: bool) -> Vec<Property> {
    Property::ALL
        .into_iter()
        .filter(|p| liveness || !p.is_liveness())
        .filter(|p| results.iter().any(|r| r.cell.checked.contains(p)))
        .collect()
}

fn axis_value(r: &PointResult, key: &str) -> String {
    r.values
        .iter()
        .find(|(k, _)| k == key)
        .map_or(String::new(), |v| v.1.clone())
}

/// The sweep as text: one row per point, algorithm and fault kind.
pub fn table(results: &[PointResult], keys: &[String], seeds: u64, liveness: bool) -> String {
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
        if let Some(w) = crate::table::starved(c) {
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

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// CSV: one row per point, algorithm and fault kind; every property with its interval.
/// `sweep` is the first column: the frontier file, or empty for the command line's sweep.
pub fn csv(results: &[PointResult], keys: &[String], seeds: u64, sweep: &str) -> String {
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
pub fn point_json(r: &PointResult, seeds: u64) -> serde_json::Value {
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

pub fn axes_json(axes: &[Axis]) -> serde_json::Value {
    serde_json::to_value(axes).expect("axes serialize")
}

/// The page's view of a sweep's results; `made` gives each result's shrunk trace.
pub fn section(
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

/// What `locksim merge` makes of one sweep's records.
pub struct MergedSweep {
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
pub fn merged(
    campaign: &str,
    cells: &[(usize, crate::CellSummary)],
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
    let cells: Vec<(usize, crate::CellSummary)> = cells
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

/// The loud warning (for stderr) about the points that prove nothing: a heading line and one
/// indented line per point; empty when every point proves something.
pub fn warnings(results: &[PointResult], seeds: u64) -> Vec<String> {
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
    if bad.is_empty() {
        return bad;
    }
    let mut lines = vec![format!(
        "WARNING: {} prove nothing or less than they seem:",
        plural(bad.len() as u64, "point")
    )];
    lines.extend(bad.into_iter().map(|b| format!("  {b}")));
    lines
}
