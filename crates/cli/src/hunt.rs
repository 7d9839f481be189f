//! `locksim hunt`: search fault plans for the first run that violates a property, guided by
//! what each run did to the lock, or seed by seed; shrink the find into a trace.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, ValueEnum};
use locksim_core::text::plural;
use locksim_core::{Property, Trace};
use locksim_explore::hunt::{hunt, Hunt, HuntOutcome as Outcome, Origin, Search};
use locksim_explore::shrink::{shrink, trace_file_name};

use crate::exit::Exit;
use crate::progress::Progress;
use crate::scenario_args::{choose, Chosen};

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
    check_memory(&a, &first, jobs)?;
    check_target(&a, &chosen, property, &first)?;
    let search = match a.search {
        SearchArg::Guided => Search::Guided,
        SearchArg::Random => Search::Random,
        SearchArg::Swarm => Search::Swarm,
    };
    check_swarm(&chosen, search)?;
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
        "hunting {what} in {} ({}), {} search from seed {}, at most {}",
        chosen.setup.algorithm,
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
    let idle = out.runs_without_grants + out.errors;
    if a.json {
        println!("{}", json(&a, search, &out, written.as_ref()));
    } else {
        print_text(&a, (search, &what, secs), &out, written.as_ref());
    }
    let (faultless, writeless) = warn(&out, &chosen.kinds, property);
    Ok(match (&out.found, idle, faultless || writeless) {
        (Some(_), _, _) => Exit::VIOLATION,
        (None, 0, false) => Exit::CLEAN,
        (None, _, _) => Exit::UNDECIDED,
    }
    .into())
}

/// Refuses a hunt that could only come back empty (a property not judged for the
/// algorithm), or whose `--out-dir` cannot be made: said now, not after the whole hunt.
fn check_target(
    a: &HuntArgs,
    chosen: &Chosen,
    property: Option<Property>,
    first: &locksim_core::Scenario,
) -> Result<(), String> {
    if let Some(p) = property {
        let judged =
            locksim_explore::outcome::check_options_for(first, &*chosen.setup.algo).properties();
        if !judged.contains(&p) {
            let names: Vec<String> = judged.iter().map(|p| p.to_string()).collect();
            return Err(format!(
            "--property {p}: {p} is not judged for {} (it judges {}): a hunt for it could only come back empty",
            chosen.setup.algorithm,
            names.join(", ")
        ));
        }
    }
    // Say so now, not after the whole hunt: the nearest existing folder on the way must be one,
    // and the folder must be made and take a file.
    let dir = &a.out_dir;
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
            "--out-dir {}: cannot create it ({e}): the find's trace would have nowhere to go",
            dir.display()
        )
    })?;
    let probe = dir.join(format!(".locksim-hunt-probe-{}", std::process::id()));
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
            "--out-dir {}: cannot write a file in it ({e}): the find's trace would have nowhere to go",
            dir.display()
        )),
    }
}

/// Refuses a run over `--max-memory` by the estimate, for the runs at once (`jobs` threads,
/// at most a batch). Unlike the shared message, the two sizes are never printed alike: when
/// they round to the same figure both are given in bytes too.
fn check_memory(a: &HuntArgs, first: &locksim_core::Scenario, jobs: usize) -> Result<(), String> {
    use locksim_explore::budget::{estimate, fmt_bytes};
    let limit = a.memory.limit()?;
    let at_once = (jobs.max(1) as u64)
        .min(locksim_explore::hunt::BATCH as u64)
        .min(a.budget);
    let need = estimate(first).and_then(|e| e.checked_mul(at_once));
    if need.is_some_and(|n| n <= limit) {
        return Ok(());
    }
    let (need, limit) = match need {
        None => ("more than 16 EiB".to_string(), fmt_bytes(limit)),
        Some(n) => exact_sizes(n, limit),
    };
    Err(format!(
        "{} with {} and {} for {} of simulated time needs about {need}{} by the estimate, more than --max-memory {limit}: make the run shorter or smaller{}",
        first.algorithm,
        plural(first.cluster.servers as u64, "server"),
        plural(first.cluster.clients as u64, "client"),
        locksim_core::time::fmt_nanos(first.workload.duration as i128),
        if at_once > 1 { format!(" for {at_once} runs at once") } else { String::new() },
        if at_once > 1 { ", use fewer --jobs, or raise --max-memory" } else { ", or raise --max-memory" }
    ))
}

/// `need` and `limit` (bytes) as people read them, with the bytes added when the two would
/// read alike (`17 MiB` and `17 MiB`, when 17,000,000 bytes is the limit).
fn exact_sizes(need: u64, limit: u64) -> (String, String) {
    let (n, l) = (
        locksim_explore::budget::fmt_bytes(need),
        locksim_explore::budget::fmt_bytes(limit),
    );
    if n == l {
        (
            format!("{n} ({need} bytes)"),
            format!("{l} ({limit} bytes)"),
        )
    } else {
        (n, l)
    }
}

/// Refuses `--search swarm` when the cell's kinds leave nothing to draw from (`--faults
/// none`): every swarm run would be the random search's, said as if it were something else.
fn check_swarm(chosen: &Chosen, search: Search) -> Result<(), String> {
    let pool = locksim_explore::hunt::swarm::pool(&chosen.kinds, &chosen.setup.workload);
    if search == Search::Swarm && pool.is_empty() {
        let kinds: Vec<String> = chosen.kinds.iter().map(|k| k.to_string()).collect();
        return Err(format!(
            "--search swarm: the fault kinds ({}) leave none to draw plans from, so every swarm run would be the random search's: give kinds with --faults (e.g. mixed), or use --search random",
            kinds.join(",")
        ));
    }
    Ok(())
}

/// Where the find's trace went.
struct Written {
    /// Its file.
    path: PathBuf,
    /// Its seed (the shrinker may change it).
    seed: u64,
    /// An identical trace was already there (kept, not rewritten).
    reused: bool,
    /// The file of the find's own name, which held a different trace of the same digest (a
    /// hunt's under other `--faults` or settings): the trace went beside it, to `path`.
    clash: Option<PathBuf>,
}

/// Most `-2`, `-3`, … names tried beside a trace of the same name.
const MAX_TWINS: u32 = 1000;

/// Writes the find of `out` to `--out-dir` as a trace (shrunk unless `--no-shrink`), never
/// losing it: an identical trace already there is kept; one of the same name and other
/// contents (its digest prefix is the same, e.g. written by a hunt with other `--faults`) is
/// kept too, and the find goes beside it as `NAME-2.json` (or `-3`, …).
///
/// # Errors
/// The shrinker's, or an I/O error writing the file.
fn write_find(a: &HuntArgs, out: &Outcome) -> Result<Option<Written>, String> {
    let Some(f) = &out.found else {
        return Ok(None);
    };
    let trace = if a.no_shrink {
        Trace::new(
            f.scenario.clone(),
            f.history.digest(),
            f.verdict.clone(),
            Some(f.history.events.clone()),
        )
    } else {
        let sp = Progress::spinner();
        let shrunk = shrink(&f.scenario, f.property, &|line| sp.note(line));
        sp.finish();
        shrunk?.trace(true)
    };
    let name = trace_file_name(&trace, f.property);
    let own = a.out_dir.join(&name);
    let text = trace.to_json();
    let stem = name.strip_suffix(".json").unwrap_or(&name);
    for n in 1..=MAX_TWINS {
        let path = if n == 1 {
            own.clone()
        } else {
            a.out_dir.join(format!("{stem}-{n}.json"))
        };
        let clash = (n > 1).then(|| own.clone());
        match std::fs::read(&path) {
            Ok(existing) if existing == text.as_bytes() => {
                return Ok(Some(Written {
                    path,
                    seed: trace.scenario.seed,
                    reused: true,
                    clash,
                }))
            }
            // A different trace (or something else) holds the name: the next one.
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => continue,
        }
        // `write_new` refuses to replace a file a concurrent writer made meanwhile.
        trace.write_new(&path)?;
        return Ok(Some(Written {
            path,
            seed: trace.scenario.seed,
            reused: false,
            clash,
        }));
    }
    Err(format!(
        "{} and {MAX_TWINS} names beside it ({stem}-2.json, …) hold other traces: the find's trace was not written",
        own.display()
    ))
}

/// `--json`'s object: the find (if any), where its trace went, and what the search saw.
fn json(
    a: &HuntArgs,
    search: Search,
    out: &Outcome,
    written: Option<&Written>,
) -> serde_json::Value {
    serde_json::json!({
        "found": out.found.is_some(),
        "runs": out.runs,
        "budget": a.budget,
        "search": search.name(),
        "first_seed": a.first_seed,
        "property": out.found.as_ref().map(|f| f.property.to_string()).or(a.property.clone()),
        "seed": out.found.as_ref().map(|f| f.scenario.seed),
        "origin": out.found.as_ref().map(|f| match &f.origin {
            Origin::Fresh => serde_json::json!({"kind": "fresh"}),
            Origin::Swarm => serde_json::json!({"kind": "swarm"}),
            Origin::Mutant { parent, mutations } => serde_json::json!({
                "kind": "mutant",
                "parent": parent,
                "mutations": mutations.iter().map(|m| m.name()).collect::<Vec<_>>(),
            }),
        }),
        "trace": written.map(|w| w.path.display().to_string()),
        "trace_seed": written.map(|w| w.seed),
        "trace_reused": written.is_some_and(|w| w.reused),
        "trace_clash": written.and_then(|w| w.clash.as_ref()).map(|p| p.display().to_string()),
        "corpus": out.corpus,
        "features": out.features,
        "runs_without_grants": out.runs_without_grants,
        "runs_with_faults": out.runs_with_faults,
        "runs_with_writes": out.runs_with_writes,
        "errors": out.errors,
        "path_digest": format!("{:016x}", out.path_digest),
        "run_secs": out.time.runs,
        "search_secs": out.time.search,
    })
}

/// The text report: the find and its trace, or that there was none; the corpus.
fn print_text(
    a: &HuntArgs,
    (search, what, secs): (Search, &str, f64),
    out: &Outcome,
    written: Option<&Written>,
) {
    let origin = |o: &Origin| match o {
        Origin::Fresh => "a fresh seed".to_string(),
        Origin::Swarm => "a swarm run".to_string(),
        Origin::Mutant { parent, mutations } => format!(
            "a mutant of run {parent} ({})",
            mutations
                .iter()
                .map(|m| m.name())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
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
            if let Some(w) = written {
                let how = if a.no_shrink { "trace" } else { "shrunk trace" };
                let kept = if w.reused {
                    "; an identical trace was already there: kept"
                } else {
                    ""
                };
                println!("{how}: {} (seed {}{kept})", w.path.display(), w.seed);
                if let Some(c) = &w.clash {
                    println!(
                        "note: {} holds a different trace of the same digest (another hunt's, e.g. with other --faults): kept, and this find's trace is the one beside it",
                        c.display()
                    );
                }
                println!(
                    "replay it with: {} replay {}",
                    crate::program(),
                    locksim_explore::testing::shell_quote(&w.path.to_string_lossy())
                );
            }
        }
        // "no S1 in 20 runs", "no violation in 50 runs" (not "no any violation").
        None => println!(
            "no {} in {} ({:.1}s; {} search from seed {})",
            what.strip_prefix("any ").unwrap_or(what),
            plural(out.runs, "run"),
            secs,
            search.name(),
            a.first_seed
        ),
    }
    let per_run = |secs: f64| 1000.0 * secs / out.time.ran.max(1) as f64;
    println!(
        "overhead: {:.2} ms a run in the search, {:.2} ms a run in the runs ({:.1}% of the time)",
        per_run(out.time.search),
        per_run(out.time.runs),
        100.0 * out.time.share()
    );
    if search == Search::Guided && out.corpus > 0 {
        println!(
            "corpus: {} kept, {} distinct lock states and event pairs seen",
            plural(out.corpus as u64, "run"),
            out.features
        );
    }
}

/// Warns (stderr) about runs that explored nothing; returns whether no fault took effect
/// in any run (`--faults none` included), and whether (for S2) no write reached the resource.
fn warn(
    out: &Outcome,
    kinds: &[locksim_core::FaultKind],
    property: Option<Property>,
) -> (bool, bool) {
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
    // `--faults none` included: a hunt in which no fault ever took effect proves nothing
    // about faults, whatever the kinds asked for.
    let faultless = out.runs_with_faults == 0 && out.runs > out.errors;
    let none_asked = kinds.iter().all(|k| *k == locksim_core::FaultKind::None);
    if faultless && none_asked {
        eprintln!(
            "warning: no fault took effect in any of the {} (--faults none draws none): the search ran fault-free and proves nothing about faults",
            plural(out.runs, "run")
        );
    } else if faultless {
        eprintln!(
        "warning: no fault took effect in any of the {} (e.g. leader-change where no server leads): the search ran fault-free",
        plural(out.runs, "run")
    );
    }
    let writeless =
        property == Some(Property::S2) && out.runs_with_writes == 0 && out.runs > out.errors;
    if writeless {
        eprintln!(
        "warning: S2: no write reached the resource in any of the {}: stale writes were never possible",
        plural(out.runs, "run")
    );
    }
    (faultless, writeless)
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
