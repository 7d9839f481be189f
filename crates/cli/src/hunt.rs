//! `locksim hunt`: search fault plans for the first run that violates a property, guided by
//! what each run did to the lock, or seed by seed; shrink the find into a trace.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, ValueEnum};
use locksim_core::text::plural;
use locksim_core::Property;
use locksim_explore::hunt::{hunt, Hunt, Origin, Search};
use locksim_explore::shrink::{shrink, trace_file_name};

use crate::progress::Progress;
use crate::scenario_args::choose;

pub const HUNT_AFTER_HELP: &str = "\
The guided search keeps a corpus of runs that did something new for the lock: an abstract
state no earlier run visited (the event's kind, how many clients believe they hold its key,
how many of those are past their lease's deadline, which fault types are in force), a new
pair of events in timeline order, or a nearer miss (the shortest gap between one client's
hold ending and another's grant; between an accepted write and the next grant to another
client). Three runs in four are mutants of corpus runs' fault plans (a fault shifted, stretched,
added near another, aimed at another node of its role, dropped, or the plan under another
seed); one in four, and the first 16, are the fresh seeds `--search random` runs in order.
Candidates are made 8 at a time and judged in order, so `--first-seed` alone fixes the search
path and the find, whatever --jobs.

A find is an ordinary scenario (a seed and an explicit plan): it is shrunk as `locksim shrink`
does and written to --out-dir, and replays, renders and shrinks like any trace.

Exit code: 1 when a run violated the property (found), 0 when the budget ran out without one,
2 on bad input, 3 when the budget ran out and some runs granted nothing or failed to run.

Examples:
  locksim hunt sims/k3-raft-lease-unlock-by-name.toml --faults delay --property S4 --budget 2000
  locksim hunt --algo redlock --faults crash-restart --property S1 --search random --budget 500
  locksim hunt --algo central --faults pause --budget 100 --json --no-shrink";

#[derive(Clone, Copy, ValueEnum)]
enum SearchArg {
    /// Mutants of runs that reached something new, with fresh seeds between.
    Guided,
    /// Seeds in order from --first-seed, as a campaign runs them.
    Random,
}

#[derive(Args)]
pub struct HuntArgs {
    /// A campaign file (sims/*.toml) whose algorithm, settings and plan to hunt in.
    #[arg(value_name = "FILE.toml")]
    file: Option<PathBuf>,
    /// Algorithm to hunt in (see `locksim list`).
    #[arg(long, value_name = "NAME")]
    algo: Option<String>,
    /// Fault kinds fresh seeds draw their plans from [default: mixed; for a file, its own kind].
    #[arg(long, value_name = "KIND[,KIND]")]
    faults: Option<String>,
    /// Add the explicit faults of this file (`[[fault]]` entries) to every run's plan.
    #[arg(long, value_name = "FILE.toml")]
    plan: Option<PathBuf>,
    /// A workload or algorithm setting (as for `run`).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// The property to violate: S1–S4 or L1–L3 [default: any the run judges].
    #[arg(long, value_name = "P")]
    property: Option<String>,
    /// Most runs to spend.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    budget: u64,
    /// The search.
    #[arg(long, value_enum, default_value = "guided")]
    search: SearchArg,
    /// The first fresh seed, and the seed of the guided search's choices.
    #[arg(long, value_name = "S", default_value_t = 0)]
    first_seed: u64,
    /// Worker threads [default: every core]; the result does not depend on it.
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Where to write the shrunk trace of a find.
    #[arg(long, value_name = "DIR", default_value = "traces")]
    out_dir: PathBuf,
    /// Report the find without shrinking it or writing a trace.
    #[arg(long)]
    no_shrink: bool,
    /// Print one JSON object on stdout: `{"found", "runs", "budget", "search", "first_seed",
    /// "property", "seed", "origin", "trace", "corpus", "features", "runs_without_grants",
    /// "errors", "path_digest"}`; progress still goes to stderr.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    memory: crate::MemoryArgs,
}

pub fn main(a: HuntArgs) -> Result<ExitCode, String> {
    if a.budget == 0 {
        return Err("--budget 0: give at least one run".into());
    }
    let property = a
        .property
        .as_deref()
        .map(|p| p.parse::<Property>())
        .transpose()?;
    let chosen = choose(
        a.file.as_deref(),
        a.algo.as_deref(),
        a.faults.as_deref(),
        &a.set,
        a.plan.as_ref(),
    )?;
    a.memory.check(&chosen.scenario(a.first_seed))?;
    if !a.no_shrink && a.out_dir.exists() && !a.out_dir.is_dir() {
        return Err(format!(
            "--out-dir {}: exists and is not a directory",
            a.out_dir.display()
        ));
    }
    let search = match a.search {
        SearchArg::Guided => Search::Guided,
        SearchArg::Random => Search::Random,
    };
    let h = Hunt {
        setup: chosen.setup.clone(),
        kinds: chosen.kinds.clone(),
        property,
        budget: a.budget,
        search,
        first_seed: a.first_seed,
        jobs: crate::campaign::jobs_of(a.jobs)?,
    };
    let what = property.map_or("any violation".to_string(), |p| p.to_string());
    eprintln!(
        "hunting {what} in {} ({}), {} search from seed {}, at most {}",
        chosen.setup.algorithm,
        chosen.command,
        search.name(),
        a.first_seed,
        plural(a.budget, "run")
    );
    let started = Instant::now();
    let progress = Progress::new("runs", a.budget);
    let out = hunt(&h, &|runs, _, _| progress.set(runs));
    progress.finish();
    let secs = started.elapsed().as_secs_f64();
    let mut trace_path = None;
    if let Some(f) = &out.found {
        if !a.no_shrink {
            let sp = Progress::spinner();
            let shrunk = shrink(&f.scenario, f.property, &|line| sp.note(line));
            sp.finish();
            let shrunk = shrunk?;
            let trace = shrunk.trace(true);
            let path = a.out_dir.join(trace_file_name(&trace, f.property));
            trace.write_new(&path)?;
            trace_path = Some(path);
        }
    }
    let origin = |o: &Origin| match o {
        Origin::Fresh => "a fresh seed".to_string(),
        Origin::Mutant { parent, mutations } => format!(
            "a mutant of run {parent} ({})",
            mutations
                .iter()
                .map(|m| m.name())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let idle = out.runs_without_grants + out.errors;
    if a.json {
        let v = serde_json::json!({
            "found": out.found.is_some(),
            "runs": out.runs,
            "budget": a.budget,
            "search": search.name(),
            "first_seed": a.first_seed,
            "property": out.found.as_ref().map(|f| f.property.to_string()).or(a.property.clone()),
            "seed": out.found.as_ref().map(|f| f.scenario.seed),
            "origin": out.found.as_ref().map(|f| origin(&f.origin)),
            "trace": trace_path.as_ref().map(|p| p.display().to_string()),
            "corpus": out.corpus,
            "features": out.features,
            "runs_without_grants": out.runs_without_grants,
            "errors": out.errors,
            "path_digest": format!("{:016x}", out.path_digest),
        });
        println!("{v}");
    } else {
        match &out.found {
            Some(f) => {
                println!(
                    "found {} at run {} of {} ({:.1}s): seed {}, {}, {}",
                    f.property,
                    f.run,
                    a.budget,
                    secs,
                    f.scenario.seed,
                    plural(f.scenario.faults.len() as u64, "fault"),
                    origin(&f.origin)
                );
                if let Some(p) = &trace_path {
                    println!("shrunk trace: {}", p.display());
                    println!(
                        "replay it with: {} replay {}",
                        crate::program(),
                        locksim_explore::testing::shell_quote(&p.to_string_lossy())
                    );
                }
            }
            None => println!(
                "no {what} in {} ({:.1}s; {} search from seed {})",
                plural(out.runs, "run"),
                secs,
                search.name(),
                a.first_seed
            ),
        }
        if search == Search::Guided {
            println!(
                "corpus: {} kept, {} distinct lock states and event pairs seen",
                plural(out.corpus as u64, "run"),
                out.features
            );
        }
    }
    if out.runs_without_grants > 0 {
        eprintln!(
            "warning: {} of {} granted nothing: they explored no lock",
            plural(out.runs_without_grants, "run"),
            out.runs
        );
    }
    if let Some(e) = &out.first_error {
        eprintln!(
            "warning: {} failed to run; the first: {e}",
            plural(out.errors, "run")
        );
    }
    Ok(ExitCode::from(match (&out.found, idle) {
        (Some(_), _) => 1,
        (None, 0) => 0,
        (None, _) => 3,
    }))
}
