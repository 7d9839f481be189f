//! `locksim hunt`: search fault plans for the first run that violates a property, guided by
//! what each run did to the lock, or seed by seed; shrink the find into a trace.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, ValueEnum};
use locksim_core::text::plural;
use locksim_core::Property;
use locksim_explore::hunt::report::{self, Asked, FindTrace};
use locksim_explore::hunt::{hunt, Hunt, HuntOutcome as Outcome, Search};
use locksim_explore::shrink::{shrink, trace_file_name};

use crate::exit::Exit;
use crate::progress::Progress;
use crate::scenario_args::choose;

pub const HUNT_AFTER_HELP: &str = "\
`--search swarm` is swarm testing (FoundationDB, TigerBeetle): run i keeps the random
search's seed (--first-seed + i, its latencies and workload) under a plan of its own, drawn
from that seed: each of the cell's fault kinds (`mixed` stands for the nine base kinds) is on
with probability 1/2 (at least one), with 1 to 6 faults of it and their magnitudes scaled by
1/4 to 2. A cell of one kind varies that kind's count and scale only; `--faults none` leaves
nothing to draw and is refused.

`--search guided` runs the random search's seeds in order and, after the first 16 runs, one
run in six of something else: a swarm run, or a mutant of a corpus of runs that did
something new for the lock: an abstract state no earlier run visited (the event's kind; how
many clients believe they hold its key, how many of those are past their lease's deadline,
how many are renewing; which fault types are in force; at a fault's edge, how many have a
write in flight), a new pair of events in timeline order, or a nearer miss (the shortest gap
between one client's hold ending and another's grant; between an accepted write and the next
grant to another client). A mutant aims a fault at the lock's own moments in its parent's
run: a timed fault made a triggered one at the nearest grant, renewal, write, release or
leader election of the node it hits or of the holder; a duration or delay just under or over
the TTL, renew period or renew deadline; a fault moved to the holder or the granting server
of its moment; or a fault shifted, stretched, added, dropped, or the plan under another seed.
Mutants get a quarter to three quarters of the extras, by which of the two comes nearer a
violation more often. Five runs in six being the random search's, the guided search never
needs more than 6/5 of its runs; docs/hunt.md measures how much sooner it finds (so far:
little, except where swarm runs find sooner). Candidates are made 8 at a time and judged in
order, so `--first-seed` alone fixes the search path and the find, whatever --jobs. `hunt`
reports its overhead: time in the search (making candidates, reading feedback) against time
in the runs, per run.

A find is an ordinary scenario (a seed and an explicit plan; a mutant's plan is its own, so
its seed alone does not rerun it): it is shrunk as `locksim shrink` does (the shrinker may
change the seed too) and written to --out-dir, and replays, renders and shrinks like any
trace. A property the algorithm does not judge (L1 of a lock that never expires) is refused
before any run, and so is an --out-dir that cannot be made or written. A find is never lost:
an identical trace already in --out-dir is kept; a different one of the same name (a hunt's
with other --faults) is kept too, and the find written beside it as NAME-2.json (said so).

Exit code: 1 when a run violated the property (found), 0 when the budget ran out without one,
2 on bad input, 3 when the budget ran out and some runs granted nothing or failed to run, no
fault took effect in any run (--faults none included), or (for S2) no write reached the
resource.

Examples:
  locksim hunt --algo redlock --faults crash-restart --property S1 --budget 500
  locksim hunt sims/k3-raft-lease-unlock-by-name.toml --faults delay --property S4 \
      --search guided --first-seed 1000 --budget 2000
  locksim hunt --algo zookeeper --faults crash-restart --property S1 --search swarm
  locksim hunt --algo central --faults pause --budget 100 --json --no-shrink";

#[derive(Clone, Copy, ValueEnum)]
enum SearchArg {
    /// The random search's seeds, one run in six a swarm run or a mutant aimed at the lock's
    /// moments of a run that reached something new.
    Guided,
    /// Seeds in order from --first-seed, as a campaign runs them.
    Random,
    /// The same seeds, each under a random subset of the fault kinds at random intensities.
    Swarm,
}

#[derive(Args)]
pub struct HuntArgs {
    /// A campaign file (sims/*.toml) whose algorithm, settings and plan to hunt in.
    #[arg(value_name = "FILE.toml")]
    file: Option<PathBuf>,
    /// Algorithm to hunt in (see `locksim list`).
    #[arg(long, value_name = "NAME")]
    algo: Option<String>,
    /// Fault kinds fresh seeds draw their plans from [default: mixed; for a file with one
    /// kind, that kind; a file with several needs one chosen].
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
    /// The search: `random` (seeds in order), `swarm` (the same seeds, each with a random
    /// subset of the fault kinds at random intensities) or `guided` (random's seeds, one run
    /// in six a swarm run or a mutant aimed at the lock's moments; see below).
    #[arg(long, value_enum, default_value = "random")]
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
    /// Write the find's trace as it ran, without shrinking it.
    #[arg(long)]
    no_shrink: bool,
    /// Print one JSON object on stdout: `{"found", "runs", "budget", "search", "first_seed",
    /// "property", "seed" (the find's), "origin" ({"kind": "fresh"}, {"kind": "swarm"} or {"kind": "mutant",
    /// "parent": RUN, "mutations": [...]}), "trace", "trace_seed" (the trace's, after
    /// shrinking), "trace_reused" (an identical trace was already there), "trace_clash" (the
    /// file of the trace's own name, holding a different trace, when it went beside it), "corpus",
    /// "features", "runs_without_grants", "runs_with_faults",
    /// "runs_with_writes", "errors",
    /// "path_digest", "run_secs", "search_secs" (wall-clock seconds, summed over threads,
    /// inside the runs and in the search around them)}`; progress still goes to stderr.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    memory: crate::args::MemoryArgs,
}

pub fn main(a: HuntArgs) -> Result<ExitCode, String> {
    if a.budget == 0 {
        return Err("--budget 0: give at least one run".into());
    }
    // The seeds run are first_seed ..= first_seed + budget - 1: u64::MAX is the last one.
    if a.first_seed.checked_add(a.budget - 1).is_none() {
        return Err(format!(
            "--first-seed {} with --budget {}: the last seed, first + budget - 1, does not fit in 64 bits (at most {} runs from this seed)",
            a.first_seed,
            a.budget,
            u64::MAX - a.first_seed + 1
        ));
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
    let first = chosen.scenario(a.first_seed);
    let jobs = crate::args::jobs_of(a.jobs)?;
    report::check_memory(&first, jobs, a.budget, a.memory.limit()?)?;
    let algorithm = &chosen.setup.algorithm;
    report::check_property(&first, &*chosen.setup.algo, algorithm, property)?;
    // Said now, not after the whole hunt.
    locksim_explore::out_dir::ready(&a.out_dir, "the find's trace")?;
    let search = match a.search {
        SearchArg::Guided => Search::Guided,
        SearchArg::Random => Search::Random,
        SearchArg::Swarm => Search::Swarm,
    };
    report::check_swarm(&chosen.kinds, &chosen.setup.workload, search)?;
    let h = Hunt {
        setup: chosen.setup.clone(),
        kinds: chosen.kinds.clone(),
        property,
        budget: a.budget,
        search,
        first_seed: a.first_seed,
        jobs,
    };
    let what = property.map_or("any violation".to_string(), |p| p.to_string());
    eprintln!(
        "hunting {what} in {algorithm} ({}), {} search from seed {}, at most {}",
        chosen.command,
        search.name(),
        a.first_seed,
        plural(a.budget, "run")
    );
    let started = Instant::now();
    let progress = Progress::new("runs", a.budget);
    let out = quiet_seed_panics(|| hunt(&h, &|runs, _, _| progress.set(runs)));
    progress.finish();
    let secs = started.elapsed().as_secs_f64();
    let written = write_find(&a, &out)?;
    let asked = Asked {
        budget: a.budget,
        search,
        first_seed: a.first_seed,
        property: a.property.as_deref(),
        no_shrink: a.no_shrink,
    };
    if a.json {
        println!("{}", report::json(&asked, &out, written.as_ref()));
    } else {
        let text = report::text(
            &asked,
            (&what, secs),
            &out,
            written.as_ref(),
            crate::program(),
        );
        print!("{text}");
    }
    let warned = report::warnings(&out, &chosen.kinds, property);
    for line in &warned.lines {
        eprintln!("warning: {line}");
    }
    Ok(match (&out.found, out.runs_without_grants + out.errors) {
        (Some(_), _) => Exit::VIOLATION,
        (None, 0) if !(warned.faultless || warned.writeless) => Exit::CLEAN,
        (None, _) => Exit::UNDECIDED,
    }
    .into())
}

/// Writes the find of `out` to `--out-dir` as a trace (shrunk unless `--no-shrink`), never
/// losing it ([`locksim_core::Trace::write_beside`]).
///
/// # Errors
/// The shrinker's, or an I/O error writing the file.
fn write_find(a: &HuntArgs, out: &Outcome) -> Result<Option<FindTrace>, String> {
    let Some(f) = &out.found else {
        return Ok(None);
    };
    let trace = if a.no_shrink {
        f.trace()
    } else {
        let sp = Progress::spinner();
        let shrunk = shrink(&f.scenario, f.property, &|line| sp.note(line));
        sp.finish();
        shrunk?.trace(true)
    };
    let name = trace_file_name(&trace, f.property);
    let written = trace.write_beside(&a.out_dir, &name, "the find's trace")?;
    Ok(Some(FindTrace {
        written,
        seed: trace.scenario.seed,
    }))
}

/// Runs `f` with the panics of simulation threads (`locksim-seed-…`) kept quiet: a seed that
/// fails to run is counted and its first error reported once, not printed per run.
fn quiet_seed_panics<T>(f: impl FnOnce() -> T) -> T {
    let previous = std::sync::Arc::new(std::panic::take_hook());
    let inner = previous.clone();
    std::panic::set_hook(Box::new(move |info| {
        let seed_thread = std::thread::current()
            .name()
            .is_some_and(|n| n.starts_with("locksim-seed-"));
        if !seed_thread {
            inner(info);
        }
    }));
    let out = f();
    let _ = std::panic::take_hook();
    if let Ok(hook) = std::sync::Arc::try_unwrap(previous) {
        std::panic::set_hook(hook);
    }
    out
}
