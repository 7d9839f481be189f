//! `locksim run`: one seed, its verdict and its timeline.

use std::process::ExitCode;

use clap::Args;
use locksim_explore::check_scenario;

use crate::exit::Exit;
use crate::out;
use crate::scenario_args::choose;
use locksim_explore::timeline;

#[derive(Args)]
pub struct RunArgs {
    /// A campaign file (sims/*.toml) to run one seed of, with its settings, client tables and
    /// explicit plan (instead of --algo and --set).
    #[arg(value_name = "FILE.toml")]
    file: Option<std::path::PathBuf>,
    /// Algorithm to run (see `locksim list`).
    #[arg(long, value_name = "NAME")]
    algo: Option<String>,
    /// Seed of the run: fixes message latencies, scheduling, the workload and the fault plan.
    #[arg(long, value_name = "N")]
    seed: u64,
    /// Fault kinds to draw the plan from, comma-separated (none, partition, pause, clock-jump,
    /// clock-drift, crash-restart, loss, delay, duplicate, drop-replies, leader-change, mixed,
    /// swarm) [default: mixed; for a file, its own kind].
    #[arg(long, value_name = "KIND[,KIND]")]
    faults: Option<String>,
    /// Add the explicit faults of this file (`[[fault]]` entries: see sims/README.md) to the
    /// run's plan; with `--faults none` the run has exactly these faults.
    #[arg(long, value_name = "FILE.toml")]
    plan: Option<std::path::PathBuf>,
    /// A workload or algorithm setting, e.g. `ttl=2s`, `clients=5`, `clock=mono` (repeatable,
    /// each key once: a key given twice is an error; see `locksim list`).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Print every event, not only faults, losses, rejections and the violations' witnesses.
    #[arg(long)]
    events: bool,
    /// Print one JSON object instead of text: `scenario`, `nodes`, `digest`, `events`,
    /// `messages_sent`, `messages_dropped`, `grants` (successful acquires), `faults_planned`,
    /// `faults_applied` (the plan's faults that took effect), `faults_never_fired` (one line per
    /// triggered fault whose event never came), `ops_pending_at_end` (operations still
    /// waiting for an answer when the run ended: `node`, `f`, `invoked_ns`), `exit` (the exit
    /// code) and `verdict`; with --events, the `history` too.
    #[arg(long)]
    json: bool,
    /// Also draw the run as a self-contained HTML page (as `locksim render` draws a trace).
    #[arg(long, value_name = "FILE")]
    html: Option<std::path::PathBuf>,
    #[command(flatten)]
    memory: crate::args::MemoryArgs,
}

use crate::exit::run_code;

pub fn main(a: RunArgs) -> Result<ExitCode, String> {
    let chosen = choose(
        a.file.as_deref(),
        a.algo.as_deref(),
        a.faults.as_deref(),
        &a.set,
        a.plan.as_ref(),
    )?;
    let setup = &chosen.setup;
    let scenario = chosen.scenario(a.seed);
    a.memory.check(&scenario)?;
    let result = check_scenario(&scenario, setup.algo.clone());
    if let Some(e) = &result.error {
        // Not bad input: the seed failed to run (an algorithm panicked), which the exit-code
        // table counts with the violations (1), as a campaign's `--fail-on` does.
        let line = format!(
            "seed {} failed to run (the simulation panicked): {}",
            a.seed,
            locksim_core::text::one_line(e)
        );
        if a.json {
            out(&format!(
                "{}\n",
                serde_json::json!({"scenario": scenario, "error": e, "exit": 1})
            ));
        }
        eprintln!("{line}");
        return Ok(ExitCode::from(Exit::VIOLATION));
    }
    let history = result.history.as_ref().expect("no error means a history");
    let grants = locksim_explore::outcome::grants(history);
    if grants > 0 && locksim_explore::outcome::grant_records(history) == 0 {
        eprintln!(
            "{}",
            locksim_explore::outcome::no_grant_records_note(&setup.algorithm)
        );
    }
    if let Some(path) = &a.html {
        let command = (crate::program(), chosen.command.as_str());
        let v = &result.verdict;
        let page = locksim_explore::page::run_page(&scenario, history, v, &*setup.algo, command);
        locksim_explore::page::write_page(path, &page, false)?;
        eprintln!("wrote {}", path.display());
    }
    let code = run_code(&result.verdict, grants);
    if a.json {
        let v =
            locksim_explore::outcome::run_json(&scenario, history, &result.verdict, code, a.events);
        out(&format!("{v}\n"));
    } else {
        let v = &result.verdict;
        out(&timeline::render(&scenario, history, v, a.events, true));
    }
    Ok(ExitCode::from(code))
}

#[cfg(test)]
mod tests {
    use locksim_core::{Property, Verdict, Violation};

    use crate::exit::verdict_code;

    /// Issue #12: a run whose S3 check ran out of budget printed `SAFE` beside "undecided: S3"
    /// and exited 0. It is UNDECIDED, exit 3; a violation still wins (exit 1).
    #[test]
    fn an_undecided_property_is_never_safe() {
        let setup = locksim_explore::Setup::registered("central", &[]).unwrap();
        let scenario = setup.scenario(1, &[locksim_core::FaultKind::None]);
        let out = locksim_explore::check_scenario(&scenario, setup.algo.clone());
        let history = out.history.expect("runs");
        let mut v = Verdict::default();
        let safe = locksim_explore::timeline::render(&scenario, &history, &v, false, true);
        assert!(safe.contains("verdict: SAFE"), "{safe}");
        assert_eq!(verdict_code(&v), 0);
        v.inconclusive
            .push("S3, k0: step budget of 5000000 exhausted".into());
        let text = locksim_explore::timeline::render(&scenario, &history, &v, false, true);
        assert!(text.contains("verdict: UNDECIDED S3"), "{text}");
        assert!(!text.contains("SAFE"), "{text}");
        assert_eq!(verdict_code(&v), 3);
        v.violations.push(Violation {
            kind: Property::S1,
            key: 0,
            summary: "double grant".into(),
            events: vec![],
            window: None,
        });
        assert!(
            locksim_explore::timeline::render(&scenario, &history, &v, false, true)
                .contains("VIOLATED S1")
        );
        assert_eq!(verdict_code(&v), 1);
    }
}
