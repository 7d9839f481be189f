//! A trace as a page: re-run its scenario with the algorithm that wrote it (a registered one,
//! or your own) and draw the run as one self-contained HTML file ([`locksim_render`]).

use std::path::Path;
use std::sync::Arc;

use locksim_core::time::SEC;
use locksim_core::{History, Trace};
use locksim_render::{render_html, Run};
use locksim_sim::LockAlgorithm;

use crate::replay::{replay, replay_with, verdict_kinds, Replay};

/// What a page was drawn from.
#[derive(Debug, Default)]
pub struct Drawn {
    /// The HTML.
    pub html: String,
    /// Events drawn.
    pub events: usize,
    /// Messages drawn.
    pub messages: usize,
    /// `true` when the run was re-run and matched the trace.
    pub rerun: bool,
    /// `true` when the re-run differs from the trace (its digest, embedded events or
    /// verdict): `render` then exits 1 and says `matches_trace: false`, as `replay` does.
    /// The picture shows the embedded events when there are any, else the re-run.
    pub mismatch: bool,
    /// Lines for the user (also shown on the page).
    pub notes: Vec<String>,
}

/// The history a trace's embedded events describe. The run's end is not stored in traces: it
/// is the harness's (workload duration + TTL + 1 s, `locksim_sim::run::tail`), or the last
/// event if later.
fn embedded_history(trace: &Trace, file: &Path) -> Result<Option<History>, String> {
    let Some(events) = trace.events.clone() else {
        return Ok(None);
    };
    if let Some((i, p)) = events
        .iter()
        .enumerate()
        .find_map(|(i, e)| locksim_render::event_problem(&trace.scenario, e).map(|p| (i, p)))
    {
        return Err(format!("{}: `events[{i}]`: {p}", file.display()));
    }
    let w = &trace.scenario.workload;
    let end = (w.duration + w.ttl + SEC).max(events.last().map_or(0, |e| e.time));
    Ok(Some(History {
        events,
        end,
        ..History::default()
    }))
}

/// Draws `trace` (read from `file`): re-runs its scenario (deterministic) to get the events
/// and the messages, unless `no_rerun`, with `algo` (your own algorithm: it must be the one
/// the trace's scenario names) or, when `None`, the registered algorithm the scenario names;
/// falls back to the embedded events when the re-run is impossible or differs.
///
/// # Errors
/// When the trace embeds no events and cannot be re-run.
pub fn draw(
    trace: &Trace,
    file: &Path,
    algo: Option<Arc<dyn LockAlgorithm>>,
    no_rerun: bool,
) -> Result<Drawn, String> {
    let name = file.file_name().map_or_else(
        || file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let mut notes = Vec::new();
    let mut mismatch = false;
    // Whether S3 judged the service as a compare-and-swap record (k8s-lease), for the page's
    // explanation: from the algorithm given, else the one the trace names.
    let (record, session) = crate::outcome::held_spec(&trace.scenario, algo.as_deref());
    let rerun = if no_rerun {
        notes.push(
            "Drawn from the events the trace embeds, without re-running it (no messages).".into(),
        );
        None
    } else {
        let replayed: Result<Replay, String> = match algo {
            Some(a) => replay_with(trace, a),
            None => replay(trace),
        };
        match replayed {
            Ok(r) if r.ok() => {
                notes.push(format!(
                    "Re-run from the trace's scenario: same event digest ({}) and verdict as recorded.",
                    &r.digest[..8]
                ));
                Some(r)
            }
            Ok(r) => {
                // Say what differs: equal digests are not shown as a difference (the embedded
                // events may be what was edited).
                let mut parts = Vec::new();
                if r.digest != trace.digest {
                    parts.push(format!(
                        "digest {} where it recorded {}",
                        &r.digest[..8],
                        &trace.digest[..8.min(trace.digest.len())]
                    ));
                } else if let Some(d) = &r.first_difference {
                    parts.push(format!("the embedded events differ at {d}"));
                } else if !r.digest_matches {
                    parts.push("the embedded events differ".to_string());
                }
                if !r.verdict_matches {
                    parts.push(format!(
                        "verdict {} where it recorded {}",
                        verdict_kinds(&r.outcome.verdict),
                        verdict_kinds(&trace.verdict)
                    ));
                }
                let why = format!("The re-run differs from the trace ({})", parts.join("; "));
                mismatch = true;
                if trace.events.is_some() {
                    notes.push(format!(
                        "{why}: drawn from the events the trace embeds (no messages)."
                    ));
                    None
                } else {
                    notes.push(format!(
                        "WARNING: {why}, and the trace embeds no events: this picture shows the re-run, not the recorded run."
                    ));
                    Some(r)
                }
            }
            Err(e) if trace.events.is_some() => {
                notes.push(format!(
                    "Cannot re-run it ({e}): drawn from the events the trace embeds (no messages)."
                ));
                None
            }
            Err(e) => {
                return Err(format!(
                    "{}: the trace embeds no events and cannot be re-run to get them: {e}",
                    file.display()
                ))
            }
        }
    };
    let (history, verdict) = match &rerun {
        Some(r) => (
            r.outcome.history.clone().expect("a replay without error has a history"),
            r.outcome.verdict.clone(),
        ),
        None => match embedded_history(trace, file)? {
            Some(h) => (h, trace.verdict.clone()),
            None => {
                return Err(format!(
                    "{}: the trace embeds no events; drop --no-rerun to re-run its scenario and draw that",
                    file.display()
                ))
            }
        },
    };
    let html = render_html(&Run {
        scenario: &trace.scenario,
        history: &history,
        verdict: &verdict,
        title: name,
        notes: notes.clone(),
        record,
        session,
    });
    Ok(Drawn {
        html,
        events: history.events.len(),
        messages: history.messages.len(),
        rerun: rerun.is_some() && !mismatch,
        mismatch,
        notes,
    })
}

/// The mark every page locksim writes carries (see the page template).
const GENERATOR: &str = "<meta name=\"generator\" content=\"locksim render\">";

/// `path` may take a page: it does not exist, holds a page locksim wrote (report or
/// timeline), or `force`.
///
/// # Errors
/// When `path` holds another file and not `force`.
pub fn check_page_target(path: &Path, force: bool) -> Result<(), String> {
    if let Ok(existing) = std::fs::read(path) {
        let ours =
            String::from_utf8_lossy(&existing[..existing.len().min(4096)]).contains(GENERATOR);
        if !ours && !force {
            return Err(format!(
                "{} exists and is not a page locksim wrote; not replacing it (give --force to replace it)",
                path.display()
            ));
        }
    }
    Ok(())
}

/// Writes an HTML page to `path` whole or not at all (a temporary file in the same folder and
/// a rename; the temporary file is removed on every error), so a reader never sees half a
/// page. An existing file that is not a locksim page (report or timeline) is kept unless
/// `force`.
///
/// # Errors
/// When `path` holds another file (and not `force`), or on an I/O error.
pub fn write_page(path: &Path, html: &str, force: bool) -> Result<(), String> {
    check_page_target(path, force)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    locksim_core::file::write_whole(path, html.as_bytes(), locksim_core::file::Place::Replace)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Re-runs the trace in `trace_file` with `algo` (your own algorithm, or a registered one
/// built as the trace's scenario says) and writes its page to `out` (through a temporary file
/// and a rename; a file there that is not a locksim page is kept, an error). Returns what was
/// drawn; [`Drawn::rerun`] is `true` when the re-run reproduced the trace's digest and verdict.
///
/// # Errors
/// An unreadable trace (naming the file, line and column), a trace of another algorithm, a
/// trace that neither re-runs nor embeds events, or an I/O error writing `out`.
pub fn render(
    trace_file: &Path,
    algo: Arc<dyn LockAlgorithm>,
    out: &Path,
) -> Result<Drawn, String> {
    let trace = Trace::read(trace_file).map_err(|e| e.to_string())?;
    check_page_target(out, false)?;
    let drawn = draw(&trace, trace_file, Some(algo), false)?;
    write_page(out, &drawn.html, false)?;
    Ok(drawn)
}
