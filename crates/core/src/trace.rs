//! Traces (docs/design.md §8): one JSON file that re-runs a scenario and says what it must show.
//!
//! ```json
//! {"format":"locksim-trace","version":1,"locksim":"0.1.0",
//!  "scenario":{…},"digest":"…32 hex…","verdict":{"violations":[{"kind":"S1",…}]},
//!  "events":[…]}
//! ```
//!
//! `events` is optional. Reading checks `format` and `version` first, so a trace from a newer
//! locksim gets "version 2 is newer than this locksim reads (1)", not a field error; every other
//! problem names the file and the line and column.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::history::Event;
use crate::scenario::Scenario;
use crate::verdict::Verdict;

/// The `format` field of every trace.
pub const FORMAT: &str = "locksim-trace";
/// The trace version this locksim writes and reads.
pub const VERSION: u32 = 1;
/// The `scenario.algorithm` of a trace of a user's own Redis lock client run by
/// `locksim-resp-sim` (docs/own-client.md). The client's code lives in the user's crate, so the
/// trace replays there (`locksim_resp_sim::replay_trace`), not with `locksim replay`;
/// `locksim render` draws the events it embeds.
pub const OWN_CLIENT: &str = "own-redis-client";
/// The `scenario.algorithm` of a trace of a user's own etcd lock client
/// (docs/own-etcd-client.md); it replays and draws as [`OWN_CLIENT`]'s do.
pub const OWN_ETCD_CLIENT: &str = "own-etcd-client";

/// A replayable run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trace {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`VERSION`] when written by this locksim.
    pub version: u32,
    /// The locksim version that wrote it.
    pub locksim: String,
    /// Everything needed to re-run it.
    pub scenario: Scenario,
    /// The digest of the run's canonical event log.
    pub digest: String,
    /// What the checkers said.
    pub verdict: Verdict,
    /// The events themselves, when embedded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<Event>>,
    /// Set for the record of a real run (`locksim real --trace`): what ran, e.g. `redlock on
    /// Redis server v=7.0.15`. Such a record cannot be replayed (real servers and real time
    /// are not deterministic), only re-run; its events are embedded and drawn as recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub real: Option<String>,
}

impl Trace {
    /// `true` for a trace of a user's own client ([`OWN_CLIENT`], [`OWN_ETCD_CLIENT`]).
    pub fn is_own_client(&self) -> bool {
        self.scenario.algorithm == OWN_CLIENT || self.scenario.algorithm == OWN_ETCD_CLIENT
    }
}

/// A trace file that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceError {
    /// The file.
    pub file: PathBuf,
    /// Line and column, when the problem has a position.
    pub position: Option<(usize, usize)>,
    /// What is wrong.
    pub problem: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Some((l, c)) => write!(f, "{}:{l}:{c}: {}", self.file.display(), self.problem),
            None => write!(f, "{}: {}", self.file.display(), self.problem),
        }
    }
}

impl std::error::Error for TraceError {}

/// The first event whose JSON has a field its type does not have: `(index, problem)`.
///
/// An event's fields are read through `#[serde(flatten)]` (its kind's fields sit beside `id`,
/// `time`, …), which cannot refuse unknown fields, so a hand-edited event (a misspelt field, a
/// field of another type) would be read without it. Each event is written back and every
/// field of the original that did not come back (other than an explicit `null` for an absent
/// optional field) is unknown, at any depth: a field inside an event's `deadline` or `fault`
/// is named by its path (`deadline.lcoal`).
pub fn unknown_event_field(raw: &[serde_json::Value], events: &[Event]) -> Option<(usize, String)> {
    for (i, (r, e)) in raw.iter().zip(events).enumerate() {
        let Ok(known) = serde_json::to_value(e) else {
            continue;
        };
        if let Some(path) = unknown_field(r, &known) {
            let kind = known.get("type").and_then(|t| t.as_str()).unwrap_or("?");
            return Some((
                i,
                format!(
                    "unknown field `{}` for a `{kind}` event (id {})",
                    crate::text::one_line(&path),
                    e.id
                ),
            ));
        }
    }
    None
}

/// The path (`a.b`, `a[2].b`) of the first field of `raw` that `known` (the same value read
/// and written back) lacks, other than an explicit `null`; objects and arrays are compared
/// member by member.
fn unknown_field(raw: &serde_json::Value, known: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    match (raw, known) {
        (Value::Object(r), Value::Object(k)) => r.iter().find_map(|(name, v)| match k.get(name) {
            None if v.is_null() => None,
            None => Some(name.clone()),
            Some(kv) => unknown_field(v, kv).map(|inner| {
                if inner.starts_with('[') {
                    format!("{name}{inner}")
                } else {
                    format!("{name}.{inner}")
                }
            }),
        }),
        (Value::Array(r), Value::Array(k)) => {
            r.iter().zip(k).enumerate().find_map(|(i, (rv, kv))| {
                unknown_field(rv, kv).map(|inner| {
                    if inner.starts_with('[') {
                        format!("[{i}]{inner}")
                    } else {
                        format!("[{i}].{inner}")
                    }
                })
            })
        }
        _ => None,
    }
}

impl Trace {
    /// A trace of `scenario` with this locksim's format, version and crate version.
    pub fn new(
        scenario: Scenario,
        digest: String,
        verdict: Verdict,
        events: Option<Vec<Event>>,
    ) -> Trace {
        Trace {
            format: FORMAT.into(),
            version: VERSION,
            locksim: env!("CARGO_PKG_VERSION").into(),
            scenario,
            digest,
            verdict,
            events,
            real: None,
        }
    }

    /// Parses a trace; `file` names it in errors.
    ///
    /// # Errors
    /// Not JSON (with line and column), not a locksim trace, a newer version, an unknown or
    /// missing field (with line and column), or a scenario that fails validation.
    pub fn parse(file: &Path, text: &str) -> Result<Trace, TraceError> {
        let err = |position, problem: String| TraceError {
            file: file.to_path_buf(),
            position,
            problem,
        };
        let json = |e: serde_json::Error| {
            let what = match e.classify() {
                serde_json::error::Category::Eof => "the file ends early (truncated?)".to_string(),
                _ => e.to_string(),
            };
            // serde_json appends " at line L column C"; the position is shown up front instead.
            let what = what.split(" at line ").next().unwrap_or(&what).to_string();
            err(Some((e.line(), e.column())), what)
        };
        let value: serde_json::Value = serde_json::from_str(text).map_err(json)?;
        match value.get("format").and_then(|f| f.as_str()) {
            Some(FORMAT) => {}
            Some(other) => return Err(err(None, format!("`format` is {other:?}, not {FORMAT:?}"))),
            None => return Err(err(None, format!("no `format` field: not a {FORMAT} file"))),
        }
        match value.get("version").and_then(|v| v.as_u64()) {
            Some(v) if v == VERSION as u64 => {}
            Some(v) if v > VERSION as u64 => {
                return Err(err(
                    None,
                    format!(
                        "version {v} is newer than this locksim reads ({VERSION}): upgrade locksim"
                    ),
                ))
            }
            Some(v) => {
                return Err(err(
                    None,
                    format!("version {v} is not supported (this locksim reads {VERSION})"),
                ))
            }
            None => return Err(err(None, "no numeric `version` field".into())),
        }
        let trace: Trace = serde_json::from_str(text).map_err(json)?;
        if let (Some(raw), Some(events)) = (
            value.get("events").and_then(|e| e.as_array()),
            &trace.events,
        ) {
            if let Some((i, problem)) = unknown_event_field(raw, events) {
                return Err(err(None, format!("`events[{i}]`: {problem}")));
            }
        }
        trace
            .scenario
            .validate()
            .map_err(|e| err(None, format!("`scenario`: {e}")))?;
        Ok(trace)
    }

    /// Reads a trace file.
    ///
    /// # Errors
    /// When the file cannot be read, or as [`Trace::parse`].
    pub fn read(file: &Path) -> Result<Trace, TraceError> {
        let text = std::fs::read_to_string(file).map_err(|e| TraceError {
            file: file.to_path_buf(),
            position: None,
            problem: format!("cannot read: {e}"),
        })?;
        Trace::parse(file, &text)
    }

    /// Pretty JSON, ending with a newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("traces always serialize");
        s.push('\n');
        s
    }

    /// Writes the trace to `path` through a temporary file in the same folder and a hard link,
    /// so a crash never leaves half a trace. An existing file with other contents is never
    /// replaced, even by a concurrent writer.
    ///
    /// # Errors
    /// When `path` holds a different trace, or on an I/O error.
    pub fn write_new(&self, path: &Path) -> Result<(), String> {
        let text = self.to_json();
        if let Ok(existing) = std::fs::read_to_string(path) {
            if existing == text {
                return Ok(());
            }
            return Err(format!(
                "{} already holds a different trace; not overwriting it",
                path.display()
            ));
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        // A hard link never replaces an existing file, so two writers racing for one name
        // cannot clobber each other (a rename would); the temporary file is removed on every
        // path, errors included.
        match crate::file::write_whole(path, text.as_bytes(), crate::file::Place::NewOnly) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                match std::fs::read_to_string(path) {
                    Ok(existing) if existing == text => Ok(()),
                    _ => Err(format!(
                        "{} already holds a different trace; not overwriting it",
                        path.display()
                    )),
                }
            }
            Err(e) => Err(format!("cannot write {}: {e}", path.display())),
        }
    }

    /// Writes the trace to `dir` as `name` (`NAME.json`), never losing it and never replacing a
    /// file: an identical trace already there is kept ([`Written::reused`]); a different one (a
    /// trace of the same digest prefix under other fault kinds or settings, or anything else of
    /// that name) is kept too, and the trace goes beside it as `NAME-2.json` (or `-3`, …),
    /// naming the file it did not replace ([`Written::clash`]). `what` names the trace in the
    /// error ("the shrunk trace").
    ///
    /// # Errors
    /// An I/O error writing the file, or [`MAX_TWINS`] names all holding other traces.
    pub fn write_beside(&self, dir: &Path, name: &str, what: &str) -> Result<Written, String> {
        let own = dir.join(name);
        let text = self.to_json();
        let stem = name.strip_suffix(".json").unwrap_or(name);
        let taken = |path: &Path| match std::fs::read(path) {
            Ok(existing) => Some(existing == text.as_bytes()),
            // A dangling symbolic link reads as missing, yet holds the name.
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    && std::fs::symlink_metadata(path).is_err() =>
            {
                None
            }
            // Something of that name that cannot be read as a file (a folder): not ours.
            Err(_) => Some(false),
        };
        for n in 1..=MAX_TWINS {
            let path = if n == 1 {
                own.clone()
            } else {
                dir.join(format!("{stem}-{n}.json"))
            };
            let clash = (n > 1).then(|| own.clone());
            let reused = match taken(&path) {
                Some(true) => true,
                Some(false) => continue,
                // `write_new` refuses to replace a file a concurrent writer made meanwhile:
                // then the name is taken after all (by this very trace, or another).
                None => match self.write_new(&path) {
                    Ok(()) => false,
                    Err(e) => match taken(&path) {
                        Some(false) => continue,
                        _ => return Err(e),
                    },
                },
            };
            return Ok(Written {
                path,
                reused,
                clash,
            });
        }
        Err(format!(
            "{} and {MAX_TWINS} names beside it ({stem}-2.json, …) hold other traces: {what} was not written",
            own.display()
        ))
    }
}

/// Most `-2`, `-3`, … names [`Trace::write_beside`] tries beside a trace of the same name.
pub const MAX_TWINS: u32 = 1000;

/// Where [`Trace::write_beside`] put a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// Its file.
    pub path: PathBuf,
    /// An identical trace was already there (kept, not rewritten).
    pub reused: bool,
    /// The file of the trace's own name, which holds a different trace: the trace went beside
    /// it, to `path`.
    pub clash: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_beside_keeps_an_identical_trace_and_goes_beside_a_different_one() {
        let text = include_str!("../../../traces/central-s3-7c028ac9.json");
        let trace = Trace::parse(Path::new("t.json"), text).unwrap();
        let d = std::env::temp_dir().join(format!("locksim-beside-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let w = trace.write_beside(&d, "t.json", "the trace").unwrap();
        assert_eq!(
            (w.path.clone(), w.reused, w.clash),
            (d.join("t.json"), false, None)
        );
        let w = trace.write_beside(&d, "t.json", "the trace").unwrap();
        assert_eq!((w.path, w.reused, w.clash), (d.join("t.json"), true, None));
        // Another trace of that name is kept, this one written beside it; then kept there.
        std::fs::write(d.join("t.json"), "another").unwrap();
        for reused in [false, true] {
            let w = trace.write_beside(&d, "t.json", "the trace").unwrap();
            assert_eq!(w.path, d.join("t-2.json"));
            assert_eq!((w.reused, w.clash), (reused, Some(d.join("t.json"))));
        }
        assert_eq!(
            std::fs::read_to_string(d.join("t.json")).unwrap(),
            "another"
        );
        // A folder in the way is passed over too.
        std::fs::create_dir(d.join("u.json")).unwrap();
        let w = trace.write_beside(&d, "u.json", "the trace").unwrap();
        assert_eq!(w.path, d.join("u-2.json"));
        std::fs::remove_dir_all(&d).ok();
    }
}
