//! `locksim shrink` and `locksim replay`: minimal, replayable traces.

use std::path::PathBuf;
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
    locksim_explore::out_dir::ready(&a.out_dir, "the shrunk trace")?;
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
    let name = trace_file_name(&trace, property);
    let written = trace.write_beside(&a.out_dir, &name, "the shrunk trace")?;
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
