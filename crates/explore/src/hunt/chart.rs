//! Runs to the first violation per target, per search, as a self-contained SVG (the
//! measurement of docs/hunt.md, drawn by `hunt_measure --summarize`): one band per target, one
//! line per search, a dot per first seed on a log axis of runs, a hollow dot at the budget for
//! a search that found nothing within it, and a bar at each search's median.

use std::fmt::Write;

/// One search's runs to the first violation on one target, a figure per first seed
/// (`None`: nothing within `budget`).
#[derive(Debug, Clone)]
pub struct Series {
    /// `random`, `swarm`, `guided`.
    pub search: String,
    /// Runs to the first violation, per first seed.
    pub runs: Vec<Option<u64>>,
}

/// One target of the measurement.
#[derive(Debug, Clone)]
pub struct Target {
    /// What it is: `redlock crash-restart S1`.
    pub name: String,
    /// The budget of each search.
    pub budget: u64,
    /// Its searches, drawn in this order.
    pub series: Vec<Series>,
}

/// The median of `v` with a search that found nothing counted at its budget (the lower of the
/// two middle values for an even count, so that a median is always one of the figures).
pub fn median(v: &[Option<u64>], budget: u64) -> u64 {
    let mut x: Vec<u64> = v.iter().map(|r| r.unwrap_or(budget)).collect();
    x.sort_unstable();
    if x.is_empty() {
        0
    } else {
        x[(x.len() - 1) / 2]
    }
}

const COLORS: [&str; 4] = ["#888888", "#d9822b", "#2b6cb0", "#2f855a"];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The chart.
pub fn svg(title: &str, targets: &[Target]) -> String {
    let (left, right, top, row, gap) = (250.0, 30.0, 50.0, 14.0, 16.0);
    let width = 900.0;
    let most = targets.iter().map(|t| t.budget).max().unwrap_or(10).max(10);
    let decades = (most as f64).log10().ceil().max(1.0);
    let x = |runs: f64| left + (width - left - right) * runs.max(1.0).log10() / decades;
    let band = |t: &Target| t.series.len() as f64 * row + gap;
    let height = top + targets.iter().map(band).sum::<f64>() + 40.0;
    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(
        o,
        r#"<rect width="100%" height="100%" fill="white"/><text x="10" y="18" font-size="13" font-weight="bold">{}</text>"#,
        esc(title)
    );
    // The axis: a line per decade.
    for d in 0..=decades as u32 {
        let v = 10f64.powi(d as i32);
        let xv = x(v);
        let _ = writeln!(
            o,
            r##"<line x1="{xv:.1}" y1="{:.1}" x2="{xv:.1}" y2="{:.1}" stroke="#dddddd"/><text x="{xv:.1}" y="{:.1}" text-anchor="middle" fill="#555">{}</text>"##,
            top - 8.0,
            height - 30.0,
            height - 16.0,
            v as u64
        );
    }
    let _ = writeln!(
        o,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#555">runs to the first violation (log scale; hollow: none within the budget)</text>"##,
        left + (width - left - right) / 2.0,
        height - 3.0
    );
    // The legend.
    let names: Vec<&str> = targets
        .first()
        .map(|t| t.series.iter().map(|s| s.search.as_str()).collect())
        .unwrap_or_default();
    for (i, n) in names.iter().enumerate() {
        let lx = left + 110.0 * i as f64;
        let _ = writeln!(
            o,
            r#"<circle cx="{lx:.1}" cy="32" r="4" fill="{}"/><text x="{:.1}" y="36">{}</text>"#,
            COLORS[i % COLORS.len()],
            lx + 8.0,
            esc(n)
        );
    }
    let mut y = top;
    for t in targets {
        let _ = writeln!(
            o,
            r#"<text x="10" y="{:.1}">{}</text>"#,
            y + row * t.series.len() as f64 / 2.0 + 4.0,
            esc(&t.name)
        );
        for (i, s) in t.series.iter().enumerate() {
            let c = COLORS[i % COLORS.len()];
            let cy = y + row * (i as f64 + 0.5);
            for r in &s.runs {
                match r {
                    Some(r) => {
                        let _ = writeln!(
                            o,
                            r#"<circle cx="{:.1}" cy="{cy:.1}" r="3.5" fill="{c}" fill-opacity="0.6"/>"#,
                            x(*r as f64)
                        );
                    }
                    None => {
                        let _ = writeln!(
                            o,
                            r#"<circle cx="{:.1}" cy="{cy:.1}" r="3.5" fill="none" stroke="{c}"/>"#,
                            x(t.budget as f64)
                        );
                    }
                }
            }
            let m = x(median(&s.runs, t.budget) as f64);
            let _ = writeln!(
                o,
                r#"<line x1="{m:.1}" y1="{:.1}" x2="{m:.1}" y2="{:.1}" stroke="{c}" stroke-width="2.5"/>"#,
                cy - 6.0,
                cy + 6.0
            );
        }
        y += band(t);
        let _ = writeln!(
            o,
            r##"<line x1="10" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#eeeeee"/>"##,
            y - gap / 2.0,
            width - right,
            y - gap / 2.0
        );
    }
    o.push_str("</svg>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_count_misses_at_the_budget_and_the_chart_has_a_dot_per_figure() {
        assert_eq!(median(&[Some(5), None, Some(1)], 100), 5);
        assert_eq!(median(&[Some(5), Some(7), Some(1), Some(9)], 100), 5);
        assert_eq!(median(&[None, None], 100), 100);
        let t = Target {
            name: "redlock <crash> S1".into(),
            budget: 1000,
            series: vec![
                Series {
                    search: "random".into(),
                    runs: vec![Some(3), None],
                },
                Series {
                    search: "guided".into(),
                    runs: vec![Some(30), Some(300)],
                },
            ],
        };
        let s = svg("runs", &[t]);
        assert_eq!(
            s.matches("<circle").count(),
            4 + 2,
            "four figures, two legend dots"
        );
        assert_eq!(s.matches(r#"fill="none""#).count(), 1, "one miss");
        assert!(s.contains("redlock &lt;crash&gt; S1"));
        assert!(s.starts_with("<svg") && s.ends_with("</svg>\n"));
    }
}
