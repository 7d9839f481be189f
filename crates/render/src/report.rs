//! A campaign's matrix as one self-contained page: algorithms down, fault kinds across, each
//! cell coloured by what it found and, when violated, linking to the rendered shrunk trace;
//! one section per campaign file when several ran.

use crate::text;

/// One cell of the matrix.
#[derive(Debug, Clone, Default)]
pub struct ReportCell {
    /// Algorithm (row).
    pub algorithm: String,
    /// Fault kind (column).
    pub faults: String,
    /// Seeds run.
    pub seeds: u64,
    /// Seeds violating each property, e.g. `("S4", 3)`, in report order (properties no seed
    /// violates may be left out).
    pub violations: Vec<(String, u64)>,
    /// Seeds on which some property was left undecided (never shown as safe).
    pub undecided: u64,
    /// Successful acquires over all seeds.
    pub grants: u64,
    /// Seeds whose simulation failed.
    pub errors: u64,
    /// The cell's plans held faults and not one took effect in any seed (e.g. leader-change
    /// where no server leads): it ran fault-free, so it is shown `n/a`, never `safe`.
    pub no_fault: bool,
    /// The cell adds an explicit plan to its fault kind (`KIND+plan`) and no fault drawn for
    /// the kind took effect in any seed: what it shows is the plan's, so the kind is shown
    /// `n/a` (as the text table's `KIND n/a (only the plan took effect)`), never `safe`.
    pub kind_untested: bool,
    /// Smallest failing seed.
    pub first_failing_seed: Option<u64>,
    /// Relative link to the rendered shrunk trace (HTML), if one was made.
    pub page: Option<String>,
    /// Relative link to the shrunk trace (JSON), if one was made.
    pub trace: Option<String>,
    /// Why no trace was made, when the cell is violated but has none.
    pub note: Option<String>,
    /// Metrics as `[label, value]` pairs, shown in the details table.
    pub metrics: Vec<(String, String)>,
    /// The first failing seed's acquire latency over time, as an inline SVG element (see
    /// [`crate::latency_plot`]), when the cell is violated.
    pub plot: Option<String>,
}

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d2330}\
h1{font-size:20px;margin:0 0 4px}p.sub{color:#555;margin:0 0 16px}\
table{border-collapse:collapse;margin:12px 0 24px}th,td{border:1px solid #d5d9e0;padding:6px 10px;text-align:center}\
th{background:#f2f4f7}h2{font-size:16px;margin:28px 0 6px}h3{font-size:14px;margin:14px 0 4px}td.safe{background:#e6f4ea;color:#1e6b34}td.bad{background:#fde8e6;color:#8a1c12}\
td.err{background:#fff4d6}figure.latency{margin:8px 0}figcaption{font-size:13px;color:#444}td.left,th.left{text-align:left}a{color:#1a56c4}small{color:#666}";

fn attr(s: &str) -> String {
    html_escape::encode_double_quoted_attribute(s).into_owned()
}

fn cell_html(c: &ReportCell) -> String {
    let bad = c.violations.iter().any(|(_, n)| *n > 0);
    let proves_nothing = c.grants == 0 || c.no_fault || c.kind_untested;
    let class = if c.errors > 0 || (!bad && (c.undecided > 0 || proves_nothing)) {
        "err"
    } else if bad {
        "bad"
    } else {
        "safe"
    };
    let mut inner = if bad {
        let parts: Vec<String> = c
            .violations
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| format!("{}&nbsp;{n}", text(k)))
            .collect();
        parts.join(" ")
    } else if c.undecided > 0 {
        "undecided".to_string()
    } else if c.no_fault {
        "n/a".to_string()
    } else if c.kind_untested {
        format!("{} n/a", text(&c.faults))
    } else if c.grants == 0 {
        "no grants".to_string()
    } else {
        "safe".to_string()
    };
    inner += &format!(
        "<br><small>{}, {}</small>",
        locksim_core::text::plural(c.seeds, "seed"),
        locksim_core::text::plural(c.grants, "grant")
    );
    if c.undecided > 0 {
        inner += &format!(
            "<br><small>{} undecided (a check ran out of budget)</small>",
            locksim_core::text::plural(c.undecided, "seed")
        );
    }
    if c.no_fault {
        inner += "<br><small>no fault took effect in any seed: it ran fault-free</small>";
    } else if c.kind_untested {
        inner += &format!(
            "<br><small>no {} fault took effect in any seed: only the plan did</small>",
            text(&c.faults)
        );
    }
    if c.errors > 0 {
        inner += &format!(
            "<br><small>{} failed to run</small>",
            locksim_core::text::plural(c.errors, "seed")
        );
    }
    if let Some(p) = &c.page {
        inner += &format!(
            "<br><a href=\"{}\">timeline of seed {}</a>",
            attr(p),
            c.first_failing_seed.unwrap_or(0)
        );
    }
    if let Some(p) = &c.trace {
        inner += &format!(" <small><a href=\"{}\">trace</a></small>", attr(p));
    }
    if let Some(n) = &c.note {
        inner += &format!("<br><small>{}</small>", text(n));
    }
    format!("<td class=\"{class}\">{inner}</td>")
}

/// One campaign's part of a report: a matrix and its metrics.
#[derive(Debug, Clone, Default)]
pub struct ReportSection {
    /// A heading (a campaign file's name and verdict), or none for a single matrix.
    pub heading: Option<String>,
    /// Lines under the heading.
    pub notes: Vec<String>,
    /// The cells, in algorithm-major order.
    pub cells: Vec<ReportCell>,
}

fn matrix(cells: &[ReportCell]) -> String {
    let mut algos: Vec<&str> = Vec::new();
    let mut kinds: Vec<&str> = Vec::new();
    for c in cells {
        if !algos.contains(&c.algorithm.as_str()) {
            algos.push(&c.algorithm);
        }
        if !kinds.contains(&c.faults.as_str()) {
            kinds.push(&c.faults);
        }
    }
    let mut h = "<table><tr><th class=\"left\">algorithm \\ faults</th>".to_string();
    for k in &kinds {
        h += &format!("<th>{}</th>", text(k));
    }
    h += "</tr>\n";
    for a in &algos {
        h += &format!("<tr><th class=\"left\">{}</th>", text(a));
        for k in &kinds {
            match cells.iter().find(|c| c.algorithm == *a && c.faults == *k) {
                Some(c) => h += &cell_html(c),
                None => h += "<td></td>",
            }
        }
        h += "</tr>\n";
    }
    h += "</table>\n";
    h
}

fn metrics_table(cells: &[ReportCell]) -> String {
    let labels: Vec<&str> = cells
        .first()
        .map(|c| c.metrics.iter().map(|m| m.0.as_str()).collect())
        .unwrap_or_default();
    if labels.is_empty() {
        return String::new();
    }
    let mut h =
        "<table><tr><th class=\"left\">algorithm</th><th class=\"left\">faults</th>".to_string();
    for l in &labels {
        h += &format!("<th>{}</th>", text(l));
    }
    h += "</tr>\n";
    for c in cells {
        h += &format!(
            "<tr><td class=\"left\">{}</td><td class=\"left\">{}</td>",
            text(&c.algorithm),
            text(&c.faults)
        );
        for (_, v) in &c.metrics {
            h += &format!("<td>{}</td>", text(v));
        }
        h += "</tr>\n";
    }
    h += "</table>\n";
    h
}

/// The report page: `title`, lines of `notes`, then each section's matrix and its lock
/// metrics. Self-contained (no script, no external resource).
pub fn campaign_report(title: &str, notes: &[String], sections: &[ReportSection]) -> String {
    let mut h = crate::page_head(title, STYLE, notes);
    h += "<p>Each number counts seeds (runs) that violate the property: S1 = a double grant (two clients held the lock at the same true time); S2 = a stale write (the resource accepted an older grant's write after a newer one's); S3 = the lock service's answers fit no correct lease lock. Each violated cell links to the timeline of its first failing seed, shrunk to a minimal scenario that fails the same way. A cell is n/a when no fault of its kind took effect in any seed (leader-change where no server leads): it ran fault-free and proves nothing about the faults; a cell with no grants proves nothing either. The none column is the control group (no faults meant).</p>\n";
    for s in sections {
        if let Some(heading) = &s.heading {
            h += &format!("<h2>{}</h2>\n", text(heading));
        }
        for n in &s.notes {
            h += &format!("<p class=\"sub\">{}</p>\n", text(n));
        }
        h += &matrix(&s.cells);
        let m = metrics_table(&s.cells);
        if !m.is_empty() {
            h += "<h3>Lock metrics per cell</h3>\n";
            h += &m;
        }
        let plots: Vec<&ReportCell> = s.cells.iter().filter(|c| c.plot.is_some()).collect();
        if !plots.is_empty() {
            h += "<h3>Acquire latency over time in each violated cell's first failing seed (before shrinking)</h3>\n<p class=\"sub\">Each acquire attempt is a point at the time it was invoked, at the height of its latency: green ok, red fail, orange info (unknown); fault windows are shaded.</p>\n";
            for c in plots {
                h += &format!(
                    "<figure class=\"latency\"><figcaption>{} × {}, seed {}</figcaption>{}</figure>\n",
                    text(&c.algorithm),
                    text(&c.faults),
                    c.first_failing_seed.unwrap_or(0),
                    c.plot.as_deref().unwrap_or_default()
                );
            }
        }
    }
    h += "</body></html>\n";
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(grants: u64, no_fault: bool) -> ReportCell {
        ReportCell {
            algorithm: "redlock".into(),
            faults: "leader-change".into(),
            seeds: 10,
            violations: vec![("S1".into(), 0)],
            grants,
            no_fault,
            ..ReportCell::default()
        }
    }

    /// Issue #24, item 5: a cell whose faults never took effect, or without grants, read
    /// `safe` in green. It is n/a (or "no grants"), never safe.
    #[test]
    fn cells_that_prove_nothing_are_never_safe() {
        let safe = cell_html(&cell(40, false));
        assert!(safe.starts_with("<td class=\"safe\">safe<br>"), "{safe}");
        let na = cell_html(&cell(40, true));
        assert!(na.starts_with("<td class=\"err\">n/a<br>"), "{na}");
        assert!(na.contains("no fault took effect"), "{na}");
        let empty = cell_html(&cell(0, false));
        assert!(
            empty.starts_with("<td class=\"err\">no grants<br>"),
            "{empty}"
        );
    }

    /// Issue #24: a `KIND+plan` cell whose drawn kind never acted (only the plan did) read
    /// `safe` in green on the page, though the text table says `KIND n/a (only the plan took
    /// effect)`. It is n/a for the kind, never safe.
    #[test]
    fn a_kind_plus_plan_cell_whose_kind_never_acted_is_na() {
        let mut c = cell(40, false);
        c.kind_untested = true;
        let html = cell_html(&c);
        assert!(
            html.starts_with("<td class=\"err\">leader-change n/a<br>"),
            "{html}"
        );
        assert!(
            html.contains("no leader-change fault took effect in any seed: only the plan did"),
            "{html}"
        );
        // A violation found there is still shown, with the note.
        c.violations = vec![("S1".into(), 2)];
        let html = cell_html(&c);
        assert!(
            html.starts_with("<td class=\"bad\">S1&nbsp;2<br>"),
            "{html}"
        );
        assert!(html.contains("only the plan did"), "{html}");
    }
}
