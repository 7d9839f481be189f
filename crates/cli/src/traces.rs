//! `locksim shrink` and `locksim replay`: minimal, replayable traces.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use locksim_core::Trace;
use locksim_explore::replay::{self, replay};
use locksim_explore::shrink::{shrink, trace_file_name};

use crate::exit::Exit;
use crate::progress::Progress;
use crate::scenario_args::choose;
use crate::{out, plural};

#[derive(Args)]
pub struct ShrinkArgs {
    /// A trace to shrink (TRACE.json), or a campaign file (FILE.toml) whose run of --seed to
    /// shrink; or give --algo and --seed to start from a fresh run.
    #[arg(value_name = "TRACE|FILE.toml")]
    trace: Option<PathBuf>,
    /// Algorithm of the run to shrink.
    #[arg(long, value_name = "NAME", requires = "seed")]
    algo: Option<String>,
    /// Seed of the run to shrink.
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Fault kinds of the run to shrink [default: mixed; for a file, its own kind].
    #[arg(long, value_name = "KIND[,KIND]")]
    faults: Option<String>,
    /// Add the explicit faults of this file (`[[fault]]` entries) to the run's plan.
    #[arg(long, value_name = "FILE.toml")]
    plan: Option<PathBuf>,
    /// Settings of the run to shrink (as for `run`).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// The violation to keep: S1, S2, S3 or S4 [default: the first the run violates].
    #[arg(long, value_name = "S1|S2|S3|S4")]
    kind: Option<String>,
    /// Where to write the shrunk trace, as <algorithm>-<kind>-<digest prefix>.json. A file of
    /// that name is never replaced: one holding the very same trace is kept (and said to be); one
    /// holding another trace of the same digest (e.g. a shrink of the run under other --faults)
    /// is kept too, and this trace written beside it as NAME-2.json (-3, ...), with a note.
    #[arg(long, value_name = "DIR", default_value = "traces")]
    out_dir: PathBuf,
    /// Leave the events out of the trace (replay then shows no first differing event).
    #[arg(long)]
    no_events: bool,
    /// Print one JSON object (the trace's path, the shrunk scenario's size, its faults and
    /// verdict, "trace_reused": an identical trace was already there, "trace_clash": the file of
    /// the trace's own name, holding a different trace, when it went beside it, else null) on
    /// stdout instead of text; progress still goes to stderr.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    memory: crate::args::MemoryArgs,
}

#[derive(Args)]
pub struct ReplayArgs {
    /// Trace files to replay.
    #[arg(required = true, value_name = "TRACE")]
    traces: Vec<PathBuf>,
    /// Print one JSON object per trace on stdout instead of text: `{"file", "ok", "digest",
    /// "recorded_digest", "digest_matches", "verdict_matches", "verdict" (the re-run's, in full),
    /// "recorded" (the trace's violated properties), "first_difference", "ms"}`. Unreadable
    /// traces are still reported on stderr.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    memory: crate::args::MemoryArgs,
}

pub fn shrink_main(a: ShrinkArgs) -> Result<ExitCode, String> {
    let scenario = shrink_scenario(&a)?;
    a.memory.check(&scenario)?;
    let property = locksim_explore::shrink::property_to_keep(&scenario, a.kind.as_deref())?;
    // Say so now, not after the whole shrink.
    ready_out_dir(&a.out_dir, "the shrunk trace")?;
    let started = Instant::now();
    eprintln!(
        "shrinking {} seed {} ({}, {}), keeping {property}",
        scenario.algorithm,
        scenario.seed,
        plural(scenario.faults.len() as u64, "fault"),
        plural(scenario.cluster.clients, "client")
    );
    let progress = Progress::spinner();
    let shrunk = shrink(&scenario, property, &|line| progress.note(line));
    progress.finish();
    let shrunk = shrunk?;
    let trace = shrunk.trace(!a.no_events);
    let written = write_beside(&trace, &a.out_dir, &trace_file_name(&trace, property))?;
    let path = &written.path;
    let secs = started.elapsed().as_secs_f64();
    if a.json {
        let mut j = locksim_explore::shrink::json(&shrunk, &trace, path, property, secs);
        j["trace_reused"] = written.reused.into();
        j["trace_clash"] = written
            .clash
            .as_ref()
            .map(|c| c.display().to_string())
            .into();
        out(&format!("{j}\n"));
    } else {
        let seed = scenario.seed;
        let text = locksim_explore::shrink::text(&shrunk, path, seed, secs, crate::program());
        // The notes go before the last line, `replay it with: …`.
        let at = text
            .rfind("\nreplay it with: ")
            .map_or(text.len(), |i| i + 1);
        let mut notes = String::new();
        if written.reused {
            notes += &format!(
                "note: {} already held this very trace: kept, not rewritten\n",
                path.display()
            );
        }
        if let Some(c) = &written.clash {
            notes += &format!(
                "note: {} holds a different trace of the same digest (another shrink's, e.g. of the run under other --faults): kept, not replaced, and this shrink's trace is {}\n",
                c.display(),
                path.display()
            );
        }
        out(&format!("{}{notes}{}", &text[..at], &text[at..]));
    }
    Ok(ExitCode::from(Exit::CLEAN))
}

/// Refuses an `--out-dir` that cannot take `what` (a trace), before the work that makes it:
/// the nearest existing folder on the way must be one, and the folder must be made and take a
/// file (a probe, removed at once), as `hunt` checks its own.
///
/// # Errors
/// One line naming the folder and the OS error.
pub(crate) fn ready_out_dir(dir: &Path, what: &str) -> Result<(), String> {
    if let Some(existing) = dir.ancestors().find(|p| p.exists()) {
        if !existing.is_dir() {
            return Err(format!(
                "--out-dir {}: {} exists and is not a directory",
                dir.display(),
                existing.display()
            ));
        }
    }
    std::fs::create_dir_all(dir).map_err(|e| {
        format!(
            "--out-dir {}: cannot create it ({e}): {what} would have nowhere to go",
            dir.display()
        )
    })?;
    let probe = dir.join(format!(".locksim-probe-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(format!(
            "--out-dir {}: cannot write a file in it ({e}): {what} would have nowhere to go",
            dir.display()
        )),
    }
}

/// Where a trace went ([`write_beside`]).
pub(crate) struct Written {
    /// Its file.
    pub path: PathBuf,
    /// An identical trace was already there (kept, not rewritten).
    pub reused: bool,
    /// The file of the trace's own name, which holds a different trace (of the same digest
    /// prefix: a shrink of the same run under other `--faults`, or with other settings): the
    /// trace went beside it, to `path`.
    pub clash: Option<PathBuf>,
}

/// Most `-2`, `-3`, … names tried beside a trace of the same name.
const MAX_TWINS: u32 = 1000;

/// Writes `trace` to `dir` as `name` (`NAME.json`), never losing it and never replacing a
/// file: an identical trace already there is kept; a different one (or anything else of that
/// name) is kept too, and the trace goes beside it as `NAME-2.json` (or `-3`, …), as `hunt`
/// does with its finds.
///
/// # Errors
/// An I/O error writing the file, or a thousand names beside it all taken.
pub(crate) fn write_beside(trace: &Trace, dir: &Path, name: &str) -> Result<Written, String> {
    let own = dir.join(name);
    let text = trace.to_json();
    let stem = name.strip_suffix(".json").unwrap_or(name);
    for n in 1..=MAX_TWINS {
        let path = if n == 1 {
            own.clone()
        } else {
            dir.join(format!("{stem}-{n}.json"))
        };
        let clash = (n > 1).then(|| own.clone());
        let taken = |path: &Path| match std::fs::read(path) {
            Ok(existing) => Some(existing == text.as_bytes()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            // Something of that name that cannot be read as a file (a folder): not ours.
            Err(_) => Some(false),
        };
        match taken(&path) {
            Some(true) => {
                return Ok(Written {
                    path,
                    reused: true,
                    clash,
                })
            }
            Some(false) => continue,
            None => {}
        }
        // `write_new` refuses to replace a file a concurrent writer made meanwhile: then the
        // name is taken after all (by this very trace, or another).
        match trace.write_new(&path) {
            Ok(()) => {
                return Ok(Written {
                    path,
                    reused: false,
                    clash,
                })
            }
            Err(e) => match taken(&path) {
                Some(false) => continue,
                _ => return Err(e),
            },
        }
    }
    Err(format!(
        "{} and {MAX_TWINS} names beside it ({stem}-2.json, …) hold other traces: the shrunk trace was not written",
        own.display()
    ))
}

/// The scenario to shrink: a trace's, or a seed of a campaign file or of `--algo`.
fn shrink_scenario(a: &ShrinkArgs) -> Result<locksim_core::Scenario, String> {
    let campaign_file = a
        .trace
        .as_ref()
        .filter(|t| t.extension().is_some_and(|x| x == "toml"));
    let scenario = match (&a.trace, a.seed) {
        (Some(t), _) if campaign_file.is_none() => {
            if a.algo.is_some() || a.seed.is_some() || a.faults.is_some() || a.plan.is_some() {
                return Err(
                "a trace carries its own scenario: --algo, --seed, --faults and --plan are for fresh runs"
                    .into(),
            );
            }
            if !a.set.is_empty() {
                return Err(
                    "a trace carries its own settings: --set applies to --algo/--seed runs".into(),
                );
            }
            locksim_explore::shrink::scenario_of_trace(t)?
        }
        (_, Some(seed)) => choose(
            campaign_file.map(|p| p.as_path()),
            a.algo.as_deref(),
            a.faults.as_deref(),
            &a.set,
            a.plan.as_ref(),
        )?
        .scenario(seed),
        _ => return Err("give a TRACE, or FILE.toml and --seed, or --algo and --seed".into()),
    };
    Ok(scenario)
}

pub fn replay_main(a: ReplayArgs) -> Result<ExitCode, String> {
    let (mut mismatch, mut unreadable) = (false, false);
    for file in &a.traces {
        let trace = match Trace::read(file) {
            Ok(t) => t,
            Err(e) => {
                crate::error_line(&e.to_string());
                unreadable = true;
                continue;
            }
        };
        if let Err(e) = a.memory.check(&trace.scenario) {
            crate::error_line(&format!("{}: {e}", file.display()));
            unreadable = true;
            continue;
        }
        let started = Instant::now();
        let r = match replay(&trace) {
            Ok(r) => r,
            Err(e) => {
                crate::error_line(&format!("{}: {e}", file.display()));
                unreadable = true;
                continue;
            }
        };
        let ms = started.elapsed().as_secs_f64() * 1e3;
        mismatch |= !r.ok();
        if a.json {
            out(&format!("{}\n", replay::json(file, &trace, &r, ms)));
        } else {
            out(&replay::text(file, &trace, &r, ms));
        }
    }
    Ok(ExitCode::from(if unreadable {
        Exit::BAD_INPUT
    } else if mismatch {
        Exit::VIOLATION
    } else {
        Exit::CLEAN
    }))
}
