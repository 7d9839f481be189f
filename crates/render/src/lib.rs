//! # locksim-render
//!
//! Pictures of runs, the last step of the one-way flow
//! scenario → simulation → history → checkers → verdict → trace → **picture**:
//!
//! - [`render_html`]: one self-contained HTML page (inline CSS and JavaScript, the data as JSON
//!   in a `<script type="application/json">` element; nothing fetched from a network) with a
//!   space-time diagram drawn on a canvas — a lane per node, true time across, zoom and pan —
//!   showing each client's holds, the servers' grants, the resource's writes, the faults where
//!   they act, each node's clock offset, the messages on demand, and the violations
//!   highlighted and explained in plain words ([`explain`]);
//! - [`describe`]: one line of words per event, shared by the page's witnesses and the CLI's
//!   text timeline;
//! - [`report::campaign_report`]: a campaign's matrix as a page linking to rendered traces;
//! - [`sweep::sweep_report`]: a sweep's rates, intervals and latencies as inline SVG plots.
//!
//! Output is a pure function of its input: the same run renders to the same bytes.

mod data;
pub mod describe;
pub mod explain;
mod latency;
pub mod linear;
pub mod report;
pub mod sweep;

use locksim_core::{History, Scenario, Verdict};

pub use data::{event_problem, page_data};

/// What one page shows.
pub struct Run<'a> {
    /// The scenario that ran.
    pub scenario: &'a Scenario,
    /// Its history (with the simulator's message log when it has one).
    pub history: &'a History,
    /// The checkers' verdict.
    pub verdict: &'a Verdict,
    /// The page's title, e.g. the trace's file name.
    pub title: String,
    /// Lines shown under the title, e.g. where the events came from.
    pub notes: Vec<String>,
    /// The lock service is a compare-and-swap record that judges no time (k8s-lease:
    /// `LockAlgorithm::lock_is_record`), so S3 was judged by the record spec and is explained
    /// as such; `false` for a service that ends leases itself.
    pub record: bool,
    /// The lock service is a session lock (zookeeper: `LockAlgorithm::lock_is_session`), so
    /// S3 was judged by the session spec and is explained as such.
    pub session: bool,
}

const TEMPLATE: &str = include_str!("page.html");
const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");

/// The run's acquire latency over time (each attempt a point coloured by outcome, fault
/// windows shaded) as an inline SVG element, as the run page shows it; empty without
/// attempts. Campaign reports show it for each violated cell's first failing seed.
pub fn latency_plot(run: &Run) -> String {
    inline_svg(&latency::latency_svg(&page_data(run)))
}

/// An SVG document as an element of an HTML page: without its `xmlns` attribute (HTML needs
/// none, and a page names no URL at all).
pub(crate) fn inline_svg(svg: &str) -> String {
    svg.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1)
}

/// Text for an HTML element's content, escaped.
pub(crate) fn text(s: &str) -> String {
    html_escape::encode_text(s).into_owned()
}

/// JSON safe inside a `<script type="application/json">` element: serialized by serde_json,
/// then every `<`, `>` and `&` (which JSON allows only inside strings) written as a `\u00XX`
/// escape, so no `</script>` or `<!--` can appear in the element's text; `JSON.parse` reads
/// the escapes back as the original characters.
pub fn script_json<T: serde::Serialize>(value: &T) -> String {
    let json = serde_json::to_string(value).expect("page data always serializes");
    let mut out = String::with_capacity(json.len() + 64);
    for ch in json.chars() {
        match ch {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            c => out.push(c),
        }
    }
    out
}

/// The page of one run: self-contained HTML, byte-identical for the same input.
pub fn render_html(run: &Run) -> String {
    let mut data = page_data(run);
    data.linear = s3_explanations(run);
    let verdict = data::verdict_word(run.verdict, run.history);
    let summary = if run.verdict.is_safe() && verdict != "safe" {
        // Nothing exercised or undecided: not the green "safe" line (H6 item 8).
        format!(
            "<p class=\"note\">No property is violated, but this run proves nothing: {}.</p>",
            text(&verdict)
        )
    } else if run.verdict.is_safe() {
        "<p class=\"safe\">No property is violated in this run.</p>".to_string()
    } else {
        let mut s = String::new();
        for (i, v) in data.violations.iter().enumerate() {
            s += &format!(
                "<div class=\"violation\"><button class=\"focus\" data-violation=\"{i}\">show</button> <b>{}</b> {}</div>",
                text(&format!("{} on k{}:", v.kind, v.key)),
                text(&v.text)
            );
        }
        if run.verdict.omitted > 0 {
            s += &format!(
                "<p class=\"note\">{} more violations found, not listed.</p>",
                run.verdict.omitted
            );
        }
        s
    };
    let notes: String = run
        .notes
        .iter()
        .map(|n| {
            // A warning (the page does not show a checked re-run) is a banner, not a note.
            let class = if n.starts_with("WARNING:") {
                "note warning"
            } else {
                "note"
            };
            format!("<p class=\"{class}\">{}</p>", text(n))
        })
        .collect();
    let (linear, script) = if data.linear.is_empty() {
        (String::new(), SCRIPT.to_string())
    } else {
        (
            s3_section(&data.linear),
            format!("{SCRIPT}\n{}\n{RUN_PAGE_LINEAR}", linear::SCRIPT),
        )
    };
    fill(
        TEMPLATE,
        &[
            ("LINEAR", linear),
            ("TITLE", text(&run.title)),
            ("SUBTITLE", text(&data.subtitle)),
            ("NOTES", notes),
            ("VERDICT", summary),
            ("STYLE", STYLE.to_string()),
            ("SCRIPT", html_escape::encode_script(&script).into_owned()),
            ("LATENCY", inline_svg(&latency::latency_svg(&data))),
            ("DATA", script_json(&data)),
        ],
    )
}

/// Why the run's lock operations are not linearizable, per failing key, when S3 is
/// violated ([`locksim_check::lease::s3_explanations`], with the campaign's step budget).
fn s3_explanations(run: &Run) -> Vec<locksim_check::linear::explain::Explanation> {
    use locksim_check::linear::Budget;
    use locksim_check::{lease, LeaseSpec, Names, S3_MAX_STEPS};
    if !run.verdict.violates(locksim_core::Property::S3) {
        return Vec::new();
    }
    // The spec S3 judged by (as `locksim_explore::outcome::check_options_for` sets it).
    let spec = LeaseSpec {
        record: run.record,
        session: run.session,
        ..LeaseSpec::for_scenario(run.scenario)
    };
    lease::s3_explanations(
        run.history,
        &spec,
        &Budget {
            max_steps: Some(S3_MAX_STEPS),
            ..Budget::default()
        },
        Names(Some(&run.scenario.cluster)),
    )
}

/// The S3 section of the run page: for each failing key, the explainer of [`linear`]
/// (reasons as text, the key's operations on a time axis, the prefix step by step); the
/// run page's script draws it from the page data's `linear`.
fn s3_section(items: &[locksim_check::linear::explain::Explanation]) -> String {
    let mut html = format!("<style>{}</style><div id=\"s3\">", linear::STYLE);
    for (i, x) in items.iter().enumerate() {
        html += &linear::section_html(
            i,
            &format!(
                "S3 on {}: why the lock operations are not linearizable (← → step through)",
                x.title
            ),
            x,
        );
    }
    html + "</div>"
}

/// Draws the S3 section of the run page after the diagram's script ran; a failure marks the
/// page like one of the diagram's.
const RUN_PAGE_LINEAR: &str = r#"(function () {
  "use strict";
  var root = document.documentElement;
  try {
    window.locksimLinear.render(JSON.parse(document.getElementById("locksim-data").textContent).linear);
    if (/selftest/.test(window.location.hash) && root.getAttribute("data-selftest") === "ok") {
      try { window.locksimLinear.selftest(); } catch (e) {
        root.setAttribute("data-selftest", "fail: S3 section: " + (e && e.message ? e.message : String(e)));
      }
    }
  } catch (e) {
    root.setAttribute("data-render", "error");
    throw e;
  }
})();"#;

/// Replaces each `{{NAME}}` of `template` with its value, in one pass (a value that contains
/// `{{…}}` stays as it is).
pub(crate) fn fill(template: &str, values: &[(&str, String)]) -> String {
    let mut out =
        String::with_capacity(template.len() + values.iter().map(|v| v.1.len()).sum::<usize>());
    let mut rest = template;
    while let Some(i) = rest.find("{{") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        match after.find("}}").and_then(|j| {
            let name = &after[..j];
            values.iter().find(|v| v.0 == name).map(|v| (j, &v.1))
        }) {
            Some((j, value)) => {
                out.push_str(value);
                rest = &after[j + 2..];
            }
            None => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The start of a self-contained report page: doctype, `title` (escaped) as title and
/// heading, the page's `style`, then each of `notes` as a subtitle line.
fn page_head(title: &str, style: &str, notes: &[String]) -> String {
    let mut h = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<meta name=\"generator\" content=\"locksim render\">\n<title>{}</title><style>{style}</style></head><body>\n<h1>{}</h1>\n",
        text(title),
        text(title)
    );
    for n in notes {
        h += &format!("<p class=\"sub\">{}</p>\n", text(n));
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_json_cannot_close_the_script_element() {
        let v = serde_json::json!({"s": "</script><script>alert(1)</script><!-- & >"});
        let j = script_json(&v);
        assert!(
            !j.contains('<') && !j.contains('>') && !j.contains('&'),
            "{j}"
        );
        let back: serde_json::Value = serde_json::from_str(&j).unwrap();
        assert_eq!(back, v, "the escapes read back as the original text");
    }

    #[test]
    fn fill_replaces_each_marker_once_and_leaves_values_alone() {
        let out = fill(
            "<h1>{{A}}</h1>{{B}}{{UNKNOWN}}",
            &[("A", "{{B}}".into()), ("B", "b".into())],
        );
        assert_eq!(out, "<h1>{{B}}</h1>b{{UNKNOWN}}");
    }

    /// Issue #24: k8s-lease's S3 is judged by the compare-and-swap record spec (the recorded
    /// holder may release or renew at any time), but the page explained it as a lease the
    /// service ends itself. The explanation now names the spec S3 used.
    #[test]
    fn an_s3_of_a_lease_record_is_explained_by_the_record_spec() {
        use locksim_core::{Property, Violation};
        use locksim_explore::Setup;
        let setup = Setup::registered("k8s-lease", &[]).unwrap();
        let scenario = setup.scenario(0, &[locksim_core::FaultKind::None]);
        let v = Violation {
            kind: Property::S3,
            key: 0,
            summary: "lock operations (lease record, 1.000s ± 12ms) on k0 are not linearizable"
                .into(),
            events: vec![],
            window: None,
        };
        let h = History::default();
        let record = explain::explain(&scenario, &h, &[], &v, true, false);
        assert!(
            record.contains("compare-and-swap lease record with lease 1.000s"),
            "{record}"
        );
        assert!(
            record.contains("may release, renew or take the record back"),
            "{record}"
        );
        assert!(!record.contains("correct lease lock with TTL"), "{record}");
        let lease = explain::explain(&scenario, &h, &[], &v, false, false);
        assert!(
            lease.contains("correct lease lock with TTL 1.000s"),
            "{lease}"
        );
    }

    /// H6 item 8: a clean run without grants showed the green "No property is violated in
    /// this run." under its "nothing exercised" header.
    #[test]
    fn a_run_without_grants_is_not_shown_green() {
        use locksim_explore::{check_scenario, Setup};
        let setup = Setup::registered("central", &[]).unwrap();
        let scenario = setup.scenario(1, &[locksim_core::FaultKind::None]);
        let out = check_scenario(&scenario, setup.algo.clone());
        let mut history = out.history.unwrap();
        let run = |h: &History| {
            render_html(&Run {
                scenario: &scenario,
                history: h,
                verdict: &out.verdict,
                title: "t".into(),
                notes: vec![],
                record: false,
                session: false,
            })
        };
        assert!(out.verdict.is_safe());
        assert!(run(&history).contains("<p class=\"safe\">No property is violated"));
        // The same run with its grants taken out.
        history.events.retain(|e| {
            !matches!(
                e.kind,
                locksim_core::history::EventKind::Op {
                    f: locksim_core::history::OpF::Acquire,
                    phase: locksim_core::history::Phase::Ok,
                    ..
                }
            )
        });
        let page = run(&history);
        assert!(!page.contains("class=\"safe\""), "no green verdict");
        assert!(page.contains("proves nothing"));
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(text("<b>&"), "&lt;b&gt;&amp;");
    }
}
