//! `locksim shrink` and `locksim replay`: minimal, replayable traces.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use locksim_core::{Property, Trace};
use locksim_explore::check_scenario;
use locksim_explore::replay::{replay, verdict_kinds};
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
    /// Where to write the shrunk trace, as <algorithm>-<kind>-<digest prefix>.json.
    #[arg(long, value_name = "DIR", default_value = "traces")]
    out_dir: PathBuf,
    /// Leave the events out of the trace (replay then shows no first differing event).
    #[arg(long)]
    no_events: bool,
    /// Print one JSON object (the trace's path, the shrunk scenario's size, its faults and
    /// verdict) on stdout instead of text; progress still goes to stderr.
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
    let property = shrink_property(&a, &scenario)?;
    if a.out_dir.exists() && !a.out_dir.is_dir() {
        // Say so now, not after the whole shrink.
        return Err(format!(
            "--out-dir {}: exists and is not a directory",
            a.out_dir.display()
        ));
    }
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
    let path = a.out_dir.join(trace_file_name(&trace, property));
    trace.write_new(&path)?;
    let secs = started.elapsed().as_secs_f64();
    if a.json {
        out(&format!(
            "{}\n",
            shrunk_json(&shrunk, &trace, &path, property, secs)
        ));
        return Ok(ExitCode::from(Exit::CLEAN));
    }
    let mut t = format!(
        "{}: {}, {}, {} in {secs:.1}s; verdict {}\n",
        path.display(),
        plural(shrunk.scenario.faults.len() as u64, "fault"),
        plural(shrunk.scenario.cluster.clients, "client"),
        plural(shrunk.runs, "run"),
        verdict_kinds(&shrunk.verdict)
    );
    if shrunk.scenario.seed != scenario.seed {
        t += &format!(
            "  (now seed {}: removing faults or clients changes who wins each race, so the shrinker also tries neighbouring seeds)\n",
            shrunk.scenario.seed
        );
    }
    for f in &shrunk.scenario.faults.faults {
        t += &format!(
            "  {}: {}\n",
            f.describe_when(&shrunk.scenario.cluster),
            f.fault.describe(&shrunk.scenario.cluster)
        );
    }
    t += &format!(
        "replay it with: {} replay {}\n",
        crate::program(),
        locksim_explore::testing::shell_quote(&path.to_string_lossy())
    );
    out(&t);
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
            let trace = Trace::read(t).map_err(|e| e.to_string())?;
            if let Some(what) = &trace.real {
                return Err(format!(
                "{}: it records a real run ({what}): there is no seed to shrink; shrink the scenario in the simulator with `locksim shrink FILE.toml --seed N`",
                t.display()
            ));
            }
            trace.scenario
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

/// The property to keep: `--kind`, or the first the run violates.
fn shrink_property(a: &ShrinkArgs, scenario: &locksim_core::Scenario) -> Result<Property, String> {
    let property = match &a.kind {
        Some(k) => k.parse::<Property>()?,
        None => {
            let setup = locksim_explore::Setup::from_scenario(scenario)?;
            let out = check_scenario(scenario, setup.algo);
            if let Some(e) = &out.error {
                // Not "violates nothing": it never ran (H6 item 7).
                return Err(format!(
                "seed {} failed to run (the simulation panicked: {e}): there is no history to shrink",
                scenario.seed
            ));
            }
            let first = out.verdict.kinds().first().copied();
            first.ok_or("the run violates nothing: nothing to shrink")?
        }
    };
    Ok(property)
}

/// `shrink --json`'s object: the trace written to `path`, its faults, and the shrink's cost.
fn shrunk_json(
    shrunk: &locksim_explore::shrink::Shrunk,
    trace: &Trace,
    path: &std::path::Path,
    property: Property,
    secs: f64,
) -> serde_json::Value {
    let faults: Vec<serde_json::Value> = shrunk
        .scenario
        .faults
        .faults
        .iter()
        .map(|f| {
            let mut v = serde_json::json!({
                "at_ns": f.at,
                "fault": f.fault.describe(&shrunk.scenario.cluster),
            });
            // A fault aimed at an event stays so: its `at_ns` (0) is no fixed time.
            if let Some(t) = &f.after {
                v["after"] = serde_json::to_value(t).expect("serializable");
                v["when"] = f.describe_when(&shrunk.scenario.cluster).into();
            }
            v
        })
        .collect();
    serde_json::json!({
    "trace": path.display().to_string(),
    "property": property,
    "seed": shrunk.scenario.seed,
    "clients": shrunk.scenario.cluster.clients,
    "faults": faults,
    "runs": shrunk.runs,
    "seconds": (secs * 10.0).round() / 10.0,
    "digest": trace.digest,
    "verdict": verdict_kinds(&shrunk.verdict),
    })
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
        if !r.ok() {
            mismatch = true;
        }
        if a.json {
            let v = serde_json::json!({
                "file": file.display().to_string(),
                "ok": r.ok(),
                "digest": r.digest,
                "recorded_digest": trace.digest,
                "digest_matches": r.digest_matches,
                "verdict_matches": r.verdict_matches,
                "verdict": r.outcome.verdict,
                "recorded": verdict_kinds(&trace.verdict),
                "first_difference": r.first_difference,
                "ms": (ms * 1000.0).round() / 1000.0,
            });
            out(&format!("{v}\n"));
        } else if r.ok() {
            out(&format!(
                "ok    {}: digest {}, verdict {} ({ms:.0} ms)\n",
                file.display(),
                &r.digest[..8],
                verdict_kinds(&r.outcome.verdict)
            ));
        } else {
            let mut t = format!("FAIL  {}:", file.display());
            if !r.digest_matches {
                t += &format!(
                    " digest {} where the trace recorded {};",
                    &r.digest[..8],
                    &trace.digest[..8.min(trace.digest.len())]
                );
            }
            if !r.verdict_matches {
                t += &format!(
                    " verdict {} where the trace recorded {};",
                    verdict_kinds(&r.outcome.verdict),
                    verdict_kinds(&trace.verdict)
                );
            }
            t += "\n";
            if let Some(d) = &r.first_difference {
                t += &format!("  first difference: {d}\n");
            }
            out(&t);
        }
    }
    Ok(if unreadable {
        ExitCode::from(Exit::BAD_INPUT)
    } else if mismatch {
        ExitCode::from(Exit::VIOLATION)
    } else {
        ExitCode::from(Exit::CLEAN)
    })
}
