//! locksim's own runs: the JSON object `locksim run --json --events` prints, with the
//! `scenario` (for the lease length and the declared clock uncertainty) and the `history`.

use std::path::Path;

use locksim_core::{History, Scenario};
use serde::Deserialize;

use super::{read_text, ReadError};

#[derive(Deserialize)]
struct Run {
    scenario: Scenario,
    history: Option<History>,
}

/// Parses a run.
///
/// # Errors
/// A [`ReadError`] with the line and the JSON problem, or naming the missing `history` (the
/// run was printed without `--events`).
pub fn parse_run(path: &Path, text: &str) -> Result<(Scenario, History), ReadError> {
    let run: Run = serde_json::from_str(text).map_err(|e| ReadError {
        file: path.to_path_buf(),
        line: Some(e.line()),
        problem: format!("column {}: {e}", e.column()),
    })?;
    let history = run.history.ok_or_else(|| ReadError {
        file: path.to_path_buf(),
        line: None,
        problem: "no `history` field: print the run with `locksim run --json --events`".into(),
    })?;
    // Events read through `#[serde(flatten)]` do not refuse unknown fields: compare each with
    // what it reads as, as traces are checked (a misspelt field at any depth is an error).
    let raw: serde_json::Value = serde_json::from_str(text).map_err(|e| ReadError {
        file: path.to_path_buf(),
        line: Some(e.line()),
        problem: format!("column {}: {e}", e.column()),
    })?;
    if let Some(events) = raw["history"]["events"].as_array() {
        if let Some((i, problem)) =
            locksim_core::trace::unknown_event_field(events, &history.events)
        {
            return Err(ReadError {
                file: path.to_path_buf(),
                line: None,
                problem: format!("`history.events[{i}]`: {problem}"),
            });
        }
    }
    Ok((run.scenario, history))
}

/// Reads and parses a run file.
///
/// # Errors
/// When the file cannot be read or is not a run with a history.
pub fn read_run(path: &Path) -> Result<(Scenario, History), ReadError> {
    parse_run(path, &read_text(path)?)
}
