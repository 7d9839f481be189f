//! A sweep's results as one self-contained page: for one axis, the violation rate of each
//! property against the axis with its 95 % Wilson band, one line per algorithm (and fault
//! kind); for two axes, a heat map per property and series with the 1 % contour; beside them
//! the price of safety (acquire latency p50/p99, grants per seed) and the herd a retry policy
//! makes (acquire attempts per second in the busiest 100 ms, wait for the lock). Below, a table of every
//! point linking to the shrunk trace of its first failing seed. The plots are inline SVG drawn
//! with `plotters` (its SVG backend); a small script marks the page rendered and, opened with
//! `#selftest`, checks the hover read-out of the table.

use plotters::prelude::*;

use crate::text;

/// One axis of the sweep.
#[derive(Debug, Clone, Default)]
pub struct SweepAxis {
    /// The knob (`pause_max`).
    pub key: String,
    /// Its values as given to `--set` (`100ms`).
    pub values: Vec<String>,
    /// The same as numbers (ns for durations).
    pub numbers: Vec<f64>,
    /// `true` for durations (shown in ms/s), `false` for integers.
    pub duration: bool,
    /// `true` when the points are log-spaced (the plots use a log axis).
    pub log: bool,
}

/// One property's rate at one point.
#[derive(Debug, Clone, Default)]
pub struct SweepRate {
    /// `S1`, …
    pub property: String,
    /// Seeds violating it.
    pub violations: u64,
    /// Seeds on which it was judged.
    pub judged: u64,
    /// `violations / judged`.
    pub rate: f64,
    /// 95 % Wilson interval, low end.
    pub low: f64,
    /// High end.
    pub high: f64,
}

/// One point of one series.
#[derive(Debug, Clone, Default)]
pub struct SweepPoint {
    /// The series: `redlock × pause`.
    pub series: String,
    /// Index of the point's value on each axis.
    pub at: Vec<usize>,
    /// `pause_max=100ms`.
    pub label: String,
    /// Seeds run.
    pub seeds: u64,
    /// Successful acquires over all seeds.
    pub grants: u64,
    /// Per checked property.
    pub rates: Vec<SweepRate>,
    /// Median acquire latency, ns.
    pub latency_p50_ns: Option<u64>,
    /// 99th percentile, ns.
    pub latency_p99_ns: Option<u64>,
    /// Median wait for the lock (a round's first attempt to its grant, retries included), ns.
    pub wait_p50_ns: Option<u64>,
    /// 99th percentile, ns.
    pub wait_p99_ns: Option<u64>,
    /// Acquire attempts the service saw in a seed's busiest 100 ms, per second, the mean over
    /// the seeds.
    pub peak_per_s: Option<f64>,
    /// The same in the second half of each seed (the steady state, after the start-up burst
    /// every retry policy shares): the herd a retry policy without jitter keeps.
    pub late_peak_per_s: Option<f64>,
    /// Acquire attempts per second over the whole runs.
    pub rate_per_s: Option<f64>,
    /// What makes the point prove nothing (no grants, undecided checks, failed seeds).
    pub warnings: Vec<String>,
    /// Smallest failing seed.
    pub first_failing_seed: Option<u64>,
    /// Relative link to the shrunk trace's page.
    pub page: Option<String>,
    /// Relative link to the shrunk trace.
    pub trace: Option<String>,
    /// Why no trace was made.
    pub note: Option<String>,
}

/// One sweep's part of the page (a frontier file, or the command line's sweep).
#[derive(Debug, Clone, Default)]
pub struct SweepSection {
    /// A heading (a frontier file and its verdict), or none.
    pub heading: Option<String>,
    /// Lines under the heading (why the boundary sits there; problems).
    pub notes: Vec<String>,
    /// One or two axes.
    pub axes: Vec<SweepAxis>,
    /// Properties to plot, in order.
    pub properties: Vec<String>,
    /// Every point of every series.
    pub points: Vec<SweepPoint>,
}

const COLOURS: [RGBColor; 6] = [
    RGBColor(0xc0, 0x39, 0x2b),
    RGBColor(0x1f, 0x6f, 0xb5),
    RGBColor(0x2e, 0x8b, 0x57),
    RGBColor(0x8e, 0x44, 0xad),
    RGBColor(0xd3, 0x7b, 0x00),
    RGBColor(0x44, 0x44, 0x44),
];

fn show(axis: &SweepAxis, n: f64) -> String {
    let trim = |t: String| {
        if t.contains('.') {
            t.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            t
        }
    };
    if !axis.duration {
        return format!("{}", n.round() as i64);
    }
    let ms = n / 1e6;
    if ms.abs() >= 1000.0 {
        trim(format!("{:.2}", ms / 1000.0)) + "s"
    } else if ms.abs() >= 10.0 {
        format!("{}ms", ms.round())
    } else {
        trim(format!("{ms:.2}")) + "ms"
    }
}

fn x_of(axis: &SweepAxis, n: f64) -> f64 {
    if axis.log {
        n.max(f64::MIN_POSITIVE).log10()
    } else {
        n
    }
}

fn series_names(points: &[SweepPoint]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for p in points {
        if !names.contains(&p.series) {
            names.push(p.series.clone());
        }
    }
    names
}

fn x_range(axis: &SweepAxis) -> (f64, f64) {
    let xs: Vec<f64> = axis.numbers.iter().map(|&n| x_of(axis, n)).collect();
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let pad = ((hi - lo) * 0.03).max(1e-9);
    (lo - pad, hi + pad)
}

/// A point's `(y, low, high)` in a line chart, or `None` to leave it out.
type Value<'a> = dyn Fn(&SweepPoint) -> Option<(f64, f64, f64)> + 'a;

/// A line chart over the first axis: `value(point)` gives `(y, low, high)` (a band when low
/// and high differ), one line per series. Points whose warnings are not empty are crossed.
fn line_chart(
    s: &SweepSection,
    title: &str,
    y_label: &str,
    y_max: f64,
    y_fmt: &dyn Fn(f64) -> String,
    value: &Value<'_>,
    legend: SeriesLabelPosition,
) -> String {
    let axis = &s.axes[0];
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (560, 330)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let (lo, hi) = x_range(axis);
        let chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 17))
            .margin(12)
            .x_label_area_size(42)
            .y_label_area_size(58)
            .build_cartesian_2d(lo..hi, 0f64..y_max);
        let Ok(mut chart) = chart else {
            return String::new();
        };
        let fmt_x = |v: &f64| {
            if axis.log {
                show(axis, 10f64.powf(*v))
            } else {
                show(axis, *v)
            }
        };
        let _ = chart
            .configure_mesh()
            .x_desc(axis.key.as_str())
            .y_desc(y_label)
            .x_labels(7)
            .y_labels(6)
            .x_label_formatter(&fmt_x)
            .y_label_formatter(&|v: &f64| y_fmt(*v))
            .light_line_style(RGBColor(0xee, 0xee, 0xee))
            .draw();
        for (i, name) in series_names(&s.points).iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            let mut pts: Vec<(f64, f64, f64, f64, bool)> = s
                .points
                .iter()
                .filter(|p| &p.series == name)
                .filter_map(|p| {
                    let x = x_of(axis, *axis.numbers.get(p.at[0])?);
                    value(p).map(|(y, l, h)| (x, y, l, h, !p.warnings.is_empty()))
                })
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            if pts.iter().any(|p| p.2 != p.3) {
                let mut band: Vec<(f64, f64)> = pts.iter().map(|p| (p.0, p.3)).collect();
                band.extend(pts.iter().rev().map(|p| (p.0, p.2)));
                let _ = chart.draw_series(std::iter::once(Polygon::new(
                    band,
                    colour.mix(0.16).filled(),
                )));
            }
            if let Ok(a) = chart.draw_series(LineSeries::new(
                pts.iter().map(|p| (p.0, p.1)),
                colour.stroke_width(2),
            )) {
                a.label(name.as_str()).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(2))
                });
            }
            let _ = chart.draw_series(
                pts.iter()
                    .filter(|p| !p.4)
                    .map(|p| Circle::new((p.0, p.1), 3, colour.filled())),
            );
            let _ = chart.draw_series(
                pts.iter()
                    .filter(|p| p.4)
                    .map(|p| Cross::new((p.0, p.1), 6, BLACK.stroke_width(2))),
            );
        }
        let _ = chart
            .configure_series_labels()
            .position(legend)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(0xbb, 0xbb, 0xbb))
            .draw();
        let _ = root.present();
    }
    svg
}

fn rate_of<'a>(p: &'a SweepPoint, property: &str) -> Option<&'a SweepRate> {
    p.rates.iter().find(|r| r.property == property)
}

fn percent(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v < 0.1 {
        format!("{:.1}%", v * 100.0)
    } else {
        format!("{:.0}%", v * 100.0)
    }
}

/// A heat map of `property` for one series over two axes, with the 1 % contour.
fn heat_map(s: &SweepSection, series: &str, property: &str) -> String {
    let (ax, ay) = (&s.axes[0], &s.axes[1]);
    let (nx, ny) = (ax.values.len(), ay.values.len());
    let mut grid = vec![vec![None; ny]; nx];
    for p in s.points.iter().filter(|p| p.series == series) {
        if let (Some(&i), Some(&j)) = (p.at.first(), p.at.get(1)) {
            if i < nx && j < ny {
                grid[i][j] = rate_of(p, property).map(|r| (r.rate, !p.warnings.is_empty()));
            }
        }
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (560, 380)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let chart = ChartBuilder::on(&root)
            .caption(format!("{property}: {series}"), ("sans-serif", 17))
            .margin(12)
            .x_label_area_size(42)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..nx as f64, 0f64..ny as f64);
        let Ok(mut chart) = chart else {
            return String::new();
        };
        let fx = |v: &f64| {
            let i = v.floor() as usize;
            if (v - v.floor() - 0.5).abs() < 1e-6 && i < nx {
                show(ax, ax.numbers[i])
            } else {
                String::new()
            }
        };
        let fy = |v: &f64| {
            let j = v.floor() as usize;
            if (v - v.floor() - 0.5).abs() < 1e-6 && j < ny {
                show(ay, ay.numbers[j])
            } else {
                String::new()
            }
        };
        let _ = chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(ax.key.as_str())
            .y_desc(ay.key.as_str())
            .x_labels(nx * 2 + 1)
            .y_labels(ny * 2 + 1)
            .x_label_formatter(&fx)
            .y_label_formatter(&fy)
            .draw();
        for (i, col) in grid.iter().enumerate() {
            for (j, cell) in col.iter().enumerate() {
                let (x, y) = (i as f64, j as f64);
                let fill = match cell {
                    None => RGBColor(0xdd, 0xdd, 0xdd),
                    Some((r, _)) => {
                        let t = (r.sqrt()).clamp(0.0, 1.0);
                        RGBColor(255, (255.0 - 200.0 * t) as u8, (255.0 - 220.0 * t) as u8)
                    }
                };
                let _ = chart.draw_series(std::iter::once(Rectangle::new(
                    [(x, y), (x + 1.0, y + 1.0)],
                    fill.filled(),
                )));
                let label = match cell {
                    None => "-".to_string(),
                    Some((_, true)) => "!".to_string(),
                    Some((r, false)) => percent(*r),
                };
                let _ = chart.draw_series(std::iter::once(Text::new(
                    label,
                    (x + 0.35, y + 0.6),
                    ("sans-serif", 12),
                )));
            }
        }
        // The 1 % contour: a thick edge between neighbours on either side of 1 %.
        let above = |i: usize, j: usize| grid[i][j].is_some_and(|c| c.0 >= 0.01);
        let mut edges = Vec::new();
        for i in 0..nx {
            for j in 0..ny {
                if i + 1 < nx && above(i, j) != above(i + 1, j) {
                    let x = (i + 1) as f64;
                    edges.push(vec![(x, j as f64), (x, (j + 1) as f64)]);
                }
                if j + 1 < ny && above(i, j) != above(i, j + 1) {
                    let y = (j + 1) as f64;
                    edges.push(vec![(i as f64, y), ((i + 1) as f64, y)]);
                }
            }
        }
        let _ = chart.draw_series(
            edges
                .into_iter()
                .map(|e| PathElement::new(e, BLACK.stroke_width(3))),
        );
        let _ = root.present();
    }
    svg
}

fn ms(ns: f64) -> String {
    let ms = ns / 1e6;
    if ms >= 1000.0 {
        format!("{:.1}s", ms / 1000.0)
    } else {
        format!("{}ms", ms.round())
    }
}

fn plots(s: &SweepSection) -> String {
    let mut h = String::new();
    for (name, svg) in figures(s) {
        h += &format!(
            "<figure class=\"plot\" data-property=\"{name}\">{}</figure>\n",
            crate::inline_svg(&svg)
        );
    }
    h
}

/// The names of the one-axis plots beside the properties' rates, as [`figures`] gives them.
pub const PLOTS: [&str; 4] = ["latency", "grants", "attempts", "wait"];

/// The section's plots as standalone SVG documents, `(what, svg)`: for one axis each
/// property's rate, then `latency`, `grants`, `attempts` (the request rate: the busiest
/// 100 ms and the whole run) and `wait` (when the points have them); for two axes each property's heat map per
/// series. The first is what `locksim sweep --svg` writes.
pub fn figures(s: &SweepSection) -> Vec<(String, String)> {
    let mut h = Vec::new();
    if s.axes.len() == 1 {
        for p in &s.properties {
            let top = s
                .points
                .iter()
                .filter_map(|q| rate_of(q, p).map(|r| r.high))
                .fold(0.0f64, f64::max);
            let y_max = (top * 1.1).clamp(0.05, 1.0);
            let svg = line_chart(
                s,
                &format!("{p}: seeds violating it (95% Wilson band)"),
                "rate",
                y_max,
                &|v| percent(v),
                &|q| rate_of(q, p).map(|r| (r.rate, r.low, r.high)),
                SeriesLabelPosition::UpperLeft,
            );
            h.push((p.clone(), svg));
        }
        let top = s
            .points
            .iter()
            .filter_map(|q| q.latency_p99_ns)
            .max()
            .unwrap_or(0) as f64;
        if top > 0.0 {
            let svg = line_chart(
                s,
                "acquire latency: p50 (line) to p99 (band top)",
                "latency",
                top * 1.1,
                &ms,
                &|q| {
                    let (a, b) = (q.latency_p50_ns? as f64, q.latency_p99_ns? as f64);
                    Some((a, a, b))
                },
                SeriesLabelPosition::UpperRight,
            );
            h.push((PLOTS[0].to_string(), svg));
        }
        let top = s
            .points
            .iter()
            .map(|q| q.grants as f64 / q.seeds.max(1) as f64)
            .fold(0.0f64, f64::max);
        let svg = line_chart(
            s,
            "grants per seed (the lock's throughput)",
            "grants / seed",
            (top * 1.1).max(1.0),
            &|v| format!("{v:.0}"),
            &|q| {
                let g = q.grants as f64 / q.seeds.max(1) as f64;
                Some((g, g, g))
            },
            SeriesLabelPosition::LowerLeft,
        );
        h.push((PLOTS[1].to_string(), svg));
        let top = s
            .points
            .iter()
            .filter_map(|q| q.peak_per_s)
            .fold(0.0f64, f64::max);
        if top > 0.0 {
            let svg = line_chart(
                s,
                "acquire attempts / s, busiest 100 ms: second half (line), whole run (band top)",
                "attempts / s",
                top * 1.1,
                &|v| format!("{v:.0}"),
                &|q| {
                    let late = q.late_peak_per_s?;
                    Some((late, late, q.peak_per_s.unwrap_or(late).max(late)))
                },
                SeriesLabelPosition::UpperLeft,
            );
            h.push((PLOTS[2].to_string(), svg));
        }
        let top = s
            .points
            .iter()
            .filter_map(|q| q.wait_p99_ns)
            .max()
            .unwrap_or(0) as f64;
        if top > 0.0 {
            let svg = line_chart(
                s,
                "wait for the lock (retries included): p50 (line) to p99 (band top)",
                "wait",
                top * 1.1,
                &ms,
                &|q| {
                    let (a, b) = (q.wait_p50_ns? as f64, q.wait_p99_ns? as f64);
                    Some((a, a, b))
                },
                SeriesLabelPosition::UpperLeft,
            );
            h.push((PLOTS[3].to_string(), svg));
        }
    } else if s.axes.len() == 2 {
        for p in &s.properties {
            for series in series_names(&s.points) {
                h.push((p.clone(), heat_map(s, &series, p)));
            }
        }
    }
    h
}

fn attr(s: &str) -> String {
    html_escape::encode_double_quoted_attribute(s).into_owned()
}

fn table(s: &SweepSection) -> String {
    let mut h = "<table class=\"points\"><tr><th class=\"left\">series</th>".to_string();
    for a in &s.axes {
        h += &format!("<th>{}</th>", text(&a.key));
    }
    h += "<th>seeds</th>";
    for p in &s.properties {
        h += &format!("<th>{p} (95% interval)</th>");
    }
    h += "<th>grants</th><th>acquire p50 / p99</th><th>wait p50 / p99</th><th>attempts/s: mean, busiest 100 ms (2nd half, whole)</th><th class=\"left\">first failing seed, shrunk</th></tr>\n";
    for p in &s.points {
        let bad = p.rates.iter().any(|r| r.violations > 0);
        let class = if !p.warnings.is_empty() {
            "err"
        } else if bad {
            "bad"
        } else {
            "safe"
        };
        h += &format!(
            "<tr class=\"{class}\" data-label=\"{}\"><td class=\"left\">{}</td>",
            attr(&format!("{} {}", p.series, p.label)),
            text(&p.series)
        );
        for (k, a) in s.axes.iter().enumerate() {
            let v = p.at.get(k).and_then(|&i| a.values.get(i)).cloned();
            h += &format!("<td>{}</td>", text(&v.unwrap_or_default()));
        }
        h += &format!("<td>{}</td>", p.seeds);
        for prop in &s.properties {
            match rate_of(p, prop) {
                Some(r) if r.violations > 0 => {
                    h += &format!(
                        "<td>{}/{} = {} <small>({}–{})</small></td>",
                        r.violations,
                        r.judged,
                        percent(r.rate),
                        percent(r.low),
                        percent(r.high)
                    )
                }
                Some(r) => {
                    h += &format!(
                        "<td>0/{} <small>(0–{})</small></td>",
                        r.judged,
                        percent(r.high)
                    )
                }
                None => h += "<td>n/a</td>",
            }
        }
        let lat = |v: Option<u64>| v.map_or("-".to_string(), |n| ms(n as f64));
        let per_s = |v: Option<f64>| v.map_or("-".to_string(), |r| format!("{r:.0}"));
        h += &format!(
            "<td>{}</td><td>{} / {}</td><td>{} / {}</td><td>{}, {} ({})</td><td class=\"left\">",
            p.grants,
            lat(p.latency_p50_ns),
            lat(p.latency_p99_ns),
            lat(p.wait_p50_ns),
            lat(p.wait_p99_ns),
            per_s(p.rate_per_s),
            per_s(p.late_peak_per_s),
            per_s(p.peak_per_s)
        );
        for w in &p.warnings {
            h += &format!("<strong class=\"warn\">{}</strong><br>", text(w));
        }
        if let Some(seed) = p.first_failing_seed {
            match &p.page {
                Some(page) => {
                    h += &format!(
                        "<a data-kind=\"page\" href=\"{}\">timeline of seed {seed}</a>",
                        attr(page)
                    )
                }
                None => h += &format!("seed {seed}"),
            }
            if let Some(t) = &p.trace {
                h += &format!(
                    " <small><a data-kind=\"trace\" href=\"{}\">trace</a></small>",
                    attr(t)
                );
            }
        } else if p.warnings.is_empty() {
            h += "-";
        }
        if let Some(n) = &p.note {
            h += &format!("<br><small>{}</small>", text(n));
        }
        h += "</td></tr>\n";
    }
    h += "</table>\n";
    h
}

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d2330}\
h1{font-size:20px;margin:0 0 4px}p.sub{color:#555;margin:0 0 12px}h2{font-size:16px;margin:28px 0 6px}\
p.why{max-width:60em;background:#f6f7f9;border-left:3px solid #9aa3b2;padding:6px 10px}\
.plots{display:flex;flex-wrap:wrap;gap:8px}figure.plot{margin:0;border:1px solid #e3e6ea}\
table{border-collapse:collapse;margin:12px 0 24px}th,td{border:1px solid #d5d9e0;padding:4px 8px;text-align:center}\
th{background:#f2f4f7}td.left,th.left{text-align:left}tr.bad td{background:#fdf1ef}tr.err td{background:#fff4d6}\
tr.hover td{outline:2px solid #1a56c4}strong.warn{color:#8a1c12}a{color:#1a56c4}small{color:#666}\
#readout{position:sticky;top:0;background:#fff;padding:4px 0;min-height:1.4em;color:#333}";

const SCRIPT: &str = r#"(function () {
  var root = document.documentElement;
  try {
    var readout = document.getElementById('readout');
    var rows = document.querySelectorAll('table.points tr[data-label]');
    function show(row) {
      for (var i = 0; i < rows.length; i++) rows[i].classList.remove('hover');
      row.classList.add('hover');
      readout.textContent = row.getAttribute('data-label');
    }
    for (var i = 0; i < rows.length; i++) {
      rows[i].addEventListener('mouseover', function (e) { show(e.currentTarget); });
    }
    var figures = document.querySelectorAll('figure.plot');
    var drawn = 0;
    for (var f = 0; f < figures.length; f++) {
      var svg = figures[f].querySelector('svg');
      if (svg && svg.querySelectorAll('polyline, path, rect, circle').length > 0 && svg.getBBox().width > 0) drawn++;
    }
    if (figures.length === 0 || drawn !== figures.length) throw new Error('a plot is empty');
    root.setAttribute('data-render', 'ok');
    if (location.hash.indexOf('selftest') >= 0) {
      var ok = rows.length > 0;
      for (var r = 0; r < rows.length && ok; r++) {
        rows[r].dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
        ok = readout.textContent === rows[r].getAttribute('data-label') && rows[r].classList.contains('hover');
      }
      var links = document.querySelectorAll('table.points a[data-kind]');
      for (var l = 0; l < links.length && ok; l++) ok = !!links[l].getAttribute('href');
      root.setAttribute('data-selftest', ok ? 'ok' : 'failed');
    }
  } catch (e) {
    root.setAttribute('data-render', 'error');
    throw e;
  }
})();"#;

/// The page: `title`, `notes`, then each section's plots and table. Self-contained (inline
/// SVG, style and script; nothing fetched); the same input gives the same bytes.
pub fn sweep_report(title: &str, notes: &[String], sections: &[SweepSection]) -> String {
    let mut h = crate::page_head(title, STYLE, notes);
    h += "<p>Each rate counts the seeds (runs) that violate the property, out of the seeds on which it was judged, with a 95% Wilson score interval (the band). S1 = a double grant; S2 = a stale write accepted; S3 = the lock service's answers fit no correct lease lock; S4 = a release freed another grant's lock. A cross marks a point that proves nothing or less than it seems (no grants, undecided checks, seeds that failed to run); the table says why. Each point links to the timeline of its first failing seed, shrunk.</p>\n<div id=\"readout\"></div>\n";
    for s in sections {
        if let Some(heading) = &s.heading {
            h += &format!("<h2>{}</h2>\n", text(heading));
        }
        for n in &s.notes {
            h += &format!("<p class=\"why\">{}</p>\n", text(n));
        }
        h += &format!("<div class=\"plots\">{}</div>\n", plots(s));
        h += &table(s);
    }
    h += &format!("<script>{SCRIPT}</script>\n</body></html>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(axes: usize) -> SweepSection {
        let axis = |key: &str| SweepAxis {
            key: key.into(),
            values: vec!["100ms".into(), "1s".into(), "3s".into()],
            numbers: vec![1e8, 1e9, 3e9],
            duration: true,
            log: true,
        };
        let mut points = Vec::new();
        for series in ["redlock × pause", "central-fencing × pause"] {
            for i in 0..3 {
                for j in 0..(if axes == 2 { 3 } else { 1 }) {
                    let k = (i * j + i) as u64;
                    points.push(SweepPoint {
                        series: series.into(),
                        at: if axes == 2 { vec![i, j] } else { vec![i] },
                        label: format!("pause_max={i}"),
                        seeds: 100,
                        grants: if i == 0 { 0 } else { 900 },
                        rates: vec![SweepRate {
                            property: "S1".into(),
                            violations: k,
                            judged: 100,
                            rate: k as f64 / 100.0,
                            low: 0.0,
                            high: (k as f64 + 3.0) / 100.0,
                        }],
                        latency_p50_ns: Some(70_000_000),
                        latency_p99_ns: Some(120_000_000),
                        wait_p50_ns: Some(90_000_000),
                        wait_p99_ns: Some(900_000_000),
                        peak_per_s: Some(500.0),
                        late_peak_per_s: Some(200.0 + 10.0 * k as f64),
                        rate_per_s: Some(80.0),
                        warnings: if i == 0 {
                            vec!["NO GRANTS".into()]
                        } else {
                            vec![]
                        },
                        first_failing_seed: (k > 0).then_some(3),
                        page: (k > 0).then(|| "f-files/x.html".into()),
                        trace: (k > 0).then(|| "f-files/x.json".into()),
                        note: None,
                    });
                }
            }
        }
        SweepSection {
            heading: Some("a sweep".into()),
            notes: vec!["why <it> is so".into()],
            axes: (0..axes).map(|i| axis(["pause_max", "ttl"][i])).collect(),
            properties: vec!["S1".into()],
            points,
        }
    }

    #[test]
    fn one_axis_draws_rates_latency_grants_attempts_and_wait_as_inline_svg() {
        let h = sweep_report("t", &[], &[section(1)]);
        assert_eq!(h.matches("<figure class=\"plot\"").count(), 5);
        assert_eq!(h.matches("<svg").count(), 5);
        assert!(h.contains("data-property=\"attempts\""));
        assert!(h.contains("data-property=\"wait\""));
        // Points without the herd metrics (older records) draw neither plot.
        let mut old = section(1);
        for p in &mut old.points {
            (p.peak_per_s, p.late_peak_per_s, p.wait_p99_ns) = (None, None, None);
        }
        let names: Vec<String> = figures(&old).into_iter().map(|f| f.0).collect();
        assert_eq!(names, ["S1", "latency", "grants"]);
        assert!(h.contains("redlock × pause"));
        assert!(h.contains("NO GRANTS"));
        assert!(h.contains("href=\"f-files/x.html\""));
        assert!(h.contains("why &lt;it&gt; is so"));
        assert!(
            !h.contains("http://") && !h.contains("https://"),
            "the page names a URL"
        );
        // The standalone plots keep their namespace (an .svg file needs it).
        assert!(figures(&section(1))[0]
            .1
            .contains("xmlns=\"http://www.w3.org/2000/svg\""));
        assert_eq!(
            h,
            sweep_report("t", &[], &[section(1)]),
            "not deterministic"
        );
    }

    #[test]
    fn two_axes_draw_a_heat_map_per_series_with_the_contour() {
        let h = sweep_report("t", &[], &[section(2)]);
        assert_eq!(h.matches("<svg").count(), 2);
        assert!(h.contains("S1: redlock × pause"));
        // 3×3 cells per map, each a rect, plus the background.
        assert!(h.matches("<rect").count() >= 18);
        assert!(h.contains("stroke-width=\"3\""), "no contour drawn");
    }
}
