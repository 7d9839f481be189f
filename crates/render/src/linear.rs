//! Pictures of why a history is not linearizable: for each failing history (or S3 key), each
//! client's operations as bars on a time axis (failed and unknown ones drawn apart), the
//! longest linearizable prefix in order with the model's state after each step, and the
//! operations that could not be placed with the model's reasons — the reasons as text on the
//! page, so they show without clicking; the arrow keys, the step buttons or a click on a bar
//! or a step walk through the linearization.
//!
//! [`linear_page`] is the page of `locksim check --html`; the run page of [`crate::render_html`]
//! embeds the same drawing in its S3 section. Self-contained (inline CSS, script and data),
//! byte-identical for the same input.

use locksim_check::linear::explain::Explanation;
use serde::Serialize;

use crate::{fill, script_json, text};

const TEMPLATE: &str = include_str!("linear.html");
/// The drawing's style (also embedded in the run page).
pub(crate) const STYLE: &str = include_str!("linear.css");
/// The drawing's script (also embedded in the run page).
pub(crate) const SCRIPT: &str = include_str!("linear.js");

/// One checked history as the page shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Checked {
    /// The file.
    pub file: String,
    /// `linearizable`, `not_linearizable` or `unknown`.
    pub verdict: &'static str,
    /// Operations in the history.
    pub ops: usize,
    /// Why the verdict is unknown.
    pub reason: Option<String>,
    /// Why it is not linearizable.
    pub explanation: Option<Explanation>,
}

/// The static HTML of one explanation: the reasons (visible without the script), then the
/// places the script draws into.
pub(crate) fn section_html(i: usize, heading: &str, x: &Explanation) -> String {
    let id_of = |id: u64| {
        if x.unit == "line" {
            format!("line {id}")
        } else {
            format!("event #{id}")
        }
    };
    let mut s = format!(
        "<section class=\"lin\" data-item=\"{i}\"><h2>{}</h2>",
        text(heading)
    );
    let n = x.prefix_len();
    let listed = if x.prefix_skipped == 0 {
        "listed below".to_string()
    } else {
        format!("the last {} listed below", x.prefix.len())
    };
    s += &format!(
        "<div class=\"why\"><b>Why it is not linearizable:</b> after the longest linearizable \
         prefix ({n} step{}, {listed}), none of these operations can take effect next:<ul>",
        if n == 1 { "" } else { "s" }
    );
    for st in &x.stuck {
        s += &format!(
            "<li data-stuck=\"{}\"><span class=\"opid\">{}</span> {}</li>",
            st.id,
            text(&id_of(st.id)),
            text(&st.reason)
        );
    }
    s += "</ul></div>";
    s += "<div class=\"lin-controls\"><button class=\"prev\" title=\"previous step (←)\">◀</button> \
          <button class=\"next\" title=\"next step (→)\">▶</button> \
          <span class=\"stepinfo\"></span></div>";
    s += "<div class=\"lin-chart\"></div>";
    if x.ops_skipped > 0 {
        s += &format!(
            "<p class=\"note\">The drawing shows {} of the part's {} operations: those around \
             the stuck ones and those the steps below name.</p>",
            x.ops.len(),
            x.ops.len() + x.ops_skipped
        );
    }
    let start = if x.prefix_skipped == 0 {
        "initial state".to_string()
    } else {
        format!(
            "state after the first {} steps (not listed)",
            x.prefix_skipped
        )
    };
    s += &format!(
        "<ol class=\"steps\" start=\"0\"><li class=\"step\" data-step=\"0\">{}: {}</li>",
        text(&start),
        text(&x.initial)
    );
    // Each step's operation by id, once (a search per step was quadratic in the prefix).
    let texts: std::collections::BTreeMap<u64, &str> = x
        .ops
        .iter()
        .rev()
        .map(|o| (o.id, o.text.as_str()))
        .collect();
    for (k, p) in x.prefix.iter().enumerate() {
        let what = texts.get(&p.id).copied().unwrap_or_default();
        s += &format!(
            "<li class=\"step\" data-step=\"{}\"><span class=\"opid\">{}</span> {} → <i>{}</i></li>",
            k + 1,
            text(&id_of(p.id)),
            text(what),
            text(&p.state)
        );
    }
    s += "</ol></section>";
    s
}

/// The page of `locksim check --html`: one section per failing history, a line per other.
pub fn linear_page(title: &str, items: &[Checked]) -> String {
    let mut body = String::new();
    let mut data: Vec<&Explanation> = Vec::new();
    for c in items {
        match &c.explanation {
            Some(x) => {
                body += &section_html(
                    data.len(),
                    &format!(
                        "{} — not linearizable ({}, {} operations)",
                        c.file, x.title, c.ops
                    ),
                    x,
                );
                data.push(x);
            }
            None => {
                body += &format!(
                    "<p class=\"verdict-line\"><b>{}</b>: {} ({} operations){}</p>",
                    text(&c.file),
                    text(&c.verdict.replace('_', " ")),
                    c.ops,
                    c.reason
                        .as_ref()
                        .map_or(String::new(), |r| format!(": {}", text(r)))
                );
            }
        }
    }
    let failing = data.len();
    fill(
        TEMPLATE,
        &[
            ("TITLE", text(title)),
            (
                "SUBTITLE",
                text(&format!(
                    "{} histor{} checked, {failing} not linearizable",
                    items.len(),
                    if items.len() == 1 { "y" } else { "ies" }
                )),
            ),
            ("BODY", body),
            ("STYLE", STYLE.to_string()),
            ("SCRIPT", html_escape::encode_script(SCRIPT).into_owned()),
            ("DATA", script_json(&data)),
        ],
    )
}
