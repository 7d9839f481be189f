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
    /// Why the trace could not be re-run (an algorithm this binary does not have, a scenario
    /// it cannot build, a failed simulation), when it was asked to be: the page then shows the
    /// events and the verdict the trace records under a warning banner, and `render` exits 2,
    /// as `replay` does for that trace.
    pub rerun_error: Option<String>,
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
    let mut rerun_error = None;
    // Whether S3 judged the service as a compare-and-swap record (k8s-lease), for the page's
    // explanation: from the algorithm given, else the one the trace names.
    let (record, session) = crate::outcome::held_spec(&trace.scenario, algo.as_deref());
    // A real run's trace is never re-run (there is no seed): drawn from its events by design,
    // not flagged as a trace that failed to re-run.
    let no_rerun = no_rerun || trace.real.is_some() || trace.is_own_client();
    let rerun = if no_rerun {
        notes.push(match &trace.real {
            Some(what) => format!(
                "A real run ({what}): drawn from the events it records (a real run is re-run with `locksim real`, never replayed)."
            ),
            None if trace.is_own_client() => "A run of your own lock client: drawn from the events it records (it replays from your crate, with locksim_resp_sim::replay_trace).".into(),
            None => {
                "Drawn from the events the trace embeds, without re-running it (no messages)."
                    .into()
            }
        });
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
                    "WARNING: not re-run, so not checked against this locksim ({e}): this page shows the events and the verdict the trace records (no messages)."
                ));
                rerun_error = Some(e);
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
        rerun_error,
    })
}

/// The mark every page locksim writes carries (see the page template).
const GENERATOR: &str = "<meta name=\"generator\" content=\"locksim render\">";

/// `path` may take a page: it does not exist, holds a page locksim wrote (report or
/// timeline), or `force`; and it can be written: it is not a folder, and its folder exists and
/// takes a new file, or can be made (see [`check_writable_place`]). Called before the work
/// that makes the page, so a page that cannot be written is refused at once.
///
/// # Errors
/// When `path` holds another file and not `force`, or cannot be written (naming why).
pub fn check_page_target(path: &Path, force: bool) -> Result<(), String> {
    check_writable_place(path)?;
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

/// A file can be written at `path` (nothing is left behind by the check): `path` is not a
/// folder, and the nearest of its folders that exists is a folder (not a file) that takes a
/// new file (a read-only file system, or a folder without write permission, does not), so that
/// the folders still missing can be made.
///
/// # Errors
/// One line naming the path or the folder in the way, and why.
pub fn check_writable_place(path: &Path) -> Result<(), String> {
    if path.is_dir() {
        return Err(format!("{} is a folder: give a file name", path.display()));
    }
    let parent = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    // The nearest ancestor that exists must be a folder: `a.txt/page.html` cannot be made.
    let mut dir = parent;
    loop {
        match std::fs::metadata(dir) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => {
                return Err(format!(
                    "cannot write {}: {} is a file, not a folder",
                    path.display(),
                    dir.display()
                ))
            }
            Err(_) => match dir.parent().filter(|d| !d.as_os_str().is_empty()) {
                Some(up) => dir = up,
                None => {
                    dir = Path::new(".");
                    break;
                }
            },
        }
    }
    // Try it: permissions alone do not say (a read-only mount, ACLs, root).
    let probe = dir.join(format!(".locksim-write-test-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(f) => {
            drop(f);
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        // Left by another check of this process (a page and its files folder at once): a
        // file was made there.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(format!(
            "cannot write {}: {} does not take a new file ({e})",
            path.display(),
            dir.display()
        )),
    }
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

/// `locksim run --html`'s page of `scenario`'s run `history` judged `verdict`, run by
/// `algo`: titled with the algorithm, seed and fault kinds, its note the command
/// (`program run COMMAND --seed N`, `command` as [`crate::choose::Chosen::command`]).
pub fn run_page(
    scenario: &locksim_core::Scenario,
    history: &History,
    verdict: &locksim_core::Verdict,
    algo: &dyn LockAlgorithm,
    (program, command): (&str, &str),
) -> String {
    let kinds: Vec<&str> = scenario.fault_kinds.iter().map(|k| k.name()).collect();
    render_html(&Run {
        scenario,
        history,
        verdict,
        title: format!(
            "{} seed {} ({})",
            scenario.algorithm,
            scenario.seed,
            kinds.join(",")
        ),
        notes: vec![format!("{program} run {command} --seed {}", scenario.seed)],
        record: algo.lock_is_record(),
        session: algo.lock_is_session(),
    })
}

/// Where `locksim render` writes the page of the trace at `trace`: `out`, or the trace's
/// name with `.html` in the current folder.
///
/// # Errors
/// The page would replace the trace itself.
pub fn page_path(trace: &Path, out: Option<&Path>) -> Result<std::path::PathBuf, String> {
    let path = out.map(Path::to_path_buf).unwrap_or_else(|| {
        let stem = trace
            .file_stem()
            .map_or("trace".into(), |s| s.to_string_lossy().into_owned());
        std::path::PathBuf::from(format!("{stem}.html"))
    });
    if path == trace {
        return Err(format!(
            "{}: the page would replace the trace itself; give another -o",
            path.display()
        ));
    }
    Ok(path)
}

impl Drawn {
    /// `render --json`'s object for the page of `trace` (read from `from`) written to `to`:
    /// `trace`, `out`, `bytes`, `events`, `messages`, `rerun`, `matches_trace`, `verdict`,
    /// `notes`, `rerun_error`.
    pub fn json(&self, trace: &Trace, from: &Path, to: &Path) -> serde_json::Value {
        serde_json::json!({
            "trace": from.display().to_string(),
            "out": to.display().to_string(),
            "bytes": self.html.len(),
            "events": self.events,
            "messages": self.messages,
            "rerun": self.rerun,
            "matches_trace": !self.mismatch,
            "verdict": verdict_kinds(&trace.verdict),
            "notes": self.notes,
            "rerun_error": self.rerun_error,
        })
    }

    /// `render`'s line for the page of `trace` written to `to`: `PAGE: N events, M messages,
    /// verdict …, (K KiB)`, with a newline.
    pub fn text(&self, trace: &Trace, to: &Path) -> String {
        format!(
            "{}: {} events, {} messages, verdict {} ({} KiB)\n",
            to.display(),
            self.events,
            self.messages,
            verdict_kinds(&trace.verdict),
            self.html.len().div_ceil(1024)
        )
    }
}
