//! `locksim`: run lock algorithms under a seeded simulator that injects real faults, and see
//! which ones grant the same lock twice.
//!
//! The command line is a library too, so that a crate with lock algorithms of its own builds
//! its own `locksim` with them beside the built-in ones, every subcommand and file format
//! included:
//!
//! ```no_run
//! # use std::process::ExitCode;
//! # use locksim_algos::Registration;
//! # const MINE: &[Registration] = &[];
//! fn main() -> ExitCode {
//!     locksim_cli::main_with(MINE.to_vec())
//! }
//! ```

mod args;
mod campaign;
mod check;
mod exit;
mod hunt;
mod list;
mod output;
mod progress;
mod real;
mod render;
mod run;
mod scenario_args;
mod sweep;
mod tla;
mod traces;

use crate::exit::Exit;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
pub use locksim_algos::Registration;

const ABOUT: &str = "Deterministic simulation of distributed lock algorithms under faults.";

/// `--help`'s text before the properties.
const LONG_ABOUT_HEAD: &str = "\
Deterministic simulation of distributed lock algorithms under faults.

locksim runs a lock algorithm (a single server, Redlock, ...) inside a simulated cluster where \
clients take the lock, do some work and write to a protected resource, while a nemesis \
partitions the network, pauses processes, steps and skews clocks and crashes servers. \
Every run is fixed by its seed: the same seed gives the same run, event for event.
";

/// `--help`'s text between the properties and the exit codes.
const LONG_ABOUT_MIDDLE: &str = "\
(campaign tables show L1-L3 whenever a seed violates one, when a campaign file names one,
or with --check liveness).

Scenarios can be written as TOML: campaign files with seeded fault kinds and/or explicit
[[fault]] plans and per-client [client.cN] settings (sims/README.md); `locksim run FILE.toml
--seed N` runs one seed of a file, `--plan FILE.toml` adds a plan to any run.

A run's verdict is SAFE, VIOLATED (with witnesses), UNDECIDED (a check ran out of its budget)
or NOTHING EXERCISED (no client was granted the lock); only SAFE is a pass.

";

/// `--help`'s text after the exit codes.
const LONG_ABOUT_TAIL: &str = "\
The matrix (campaign without files) and sweep without frontier files are exploratory: they
exit 0 whatever they find, unless --fail-on S1,S2,... (campaign, merge) names the properties
that fail them, for CI. One shard of campaign files exits 0 (judged at merge).";

const AFTER_HELP: &str = "\
Examples:
  locksim campaign                                  the default matrix, a few hundred seeds per cell
  locksim campaign --algo redlock --faults pause --seeds 1000
  locksim campaign sims/                            the campaign files; exit 1 if an expectation fails
  locksim campaign --algo raft-lease --fail-on safety   for CI: exit 1 on any S1-S4, 3 if a cell proves nothing
  locksim run sims/slow-step-down.toml --seed 0     one seed of a campaign file (its plan, its clients)
  locksim run --algo central --seed 1 --faults none --plan plan.toml --set c2.ttl=5s
  locksim campaign --shard 0/4 --out part0.jsonl    one of four machines; then: locksim merge part*.jsonl
  locksim run --algo redlock --seed 42 --faults pause
  locksim run --algo central --seed 7 --faults clock-jump --set clock=mono --set ttl=2s
  locksim shrink --algo redlock --seed 6 --faults pause    a minimal trace in traces/
  locksim hunt --algo redlock --faults crash-restart --property S1 --budget 500
                                                    the first violating run, shrunk
  locksim replay traces/*.json
  locksim render traces/k5-redlock-s1-b51f2c63.json -o k5.html    open k5.html in a browser
  locksim campaign --report report.html             the matrix as a page, violations linked
  locksim sweep --algo redlock --faults pause --vary pause_max=100ms..3s:10 --report f.html
                                                    violation rates over a grid, plotted
  locksim check --model lock run.json              a history (run --json --events > run.json) against a lease lock
  locksim export-tla traces/k5-redlock-s1-b51f2c63.json    a TLA+ behaviour for TLC (trace validation)
  locksim list                                      algorithms, their settings, fault kinds";

const RENDER_HELP: &str = "\
The page needs no network: its script, style and data are inside it. It re-runs the trace's
scenario (runs are deterministic) to get the events and the messages, and says so on the page;
when that is impossible or the re-run differs, it draws the events the trace embeds.

Reading the diagram: true time runs left to right (wheel: zoom, drag: pan, double-click: the
whole run). Each client's lane shows its holds of the lock — from the acquire's ok until it
released, gave up, its lease ran out, or its last write if that came later — hatched in red
where it acted after its own lease had ended. Lock servers show their grants and the TTL
from each grant; the resource shows accepted writes (a dot in the writer's colour) and
rejected ones (a red cross). Faults are shaded on the lanes they act on; a purple line is a
node's wall-clock offset from true time. A violation is outlined in red and explained above.

Exit code: 0 when the page was written, 1 when it was written but the re-run did not
reproduce a trace that embeds no events, 2 on bad input (the error names the file and field).

Examples:
  locksim render traces/k5-redlock-s1-b51f2c63.json -o k5.html
  locksim render trace.json --no-rerun -o trace.html   only the embedded events";

#[derive(Parser)]
#[command(name = "locksim", version, about = ABOUT, after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one seed and print the verdict and a timeline of what happened.
    Run(run::RunArgs),
    /// Run an algorithm × fault-kind matrix, or campaign files from sims/, over many seeds.
    Campaign(campaign::CampaignArgs),
    /// Merge the per-seed results of campaign (or sweep) shards into the summary one run
    /// would print.
    Merge(campaign::MergeArgs),
    /// Sweep one or two knobs over a grid (e.g. pause_max=100ms..3s:10): per point, each
    /// property's violation rate with a 95% interval, grants and latency; plots with --report.
    #[command(after_help = sweep::SWEEP_AFTER_HELP)]
    Sweep(sweep::SweepArgs),
    /// Shrink a failing run to a minimal trace in traces/ that fails the same way.
    Shrink(traces::ShrinkArgs),
    /// Search fault plans for the first run that violates a property (guided by what each
    /// run did to the lock, or seed by seed), and shrink the find into a trace.
    #[command(after_help = hunt::HUNT_AFTER_HELP)]
    Hunt(hunt::HuntArgs),
    /// Replay traces: re-run each and compare its event digest and verdict.
    Replay(traces::ReplayArgs),
    /// Draw a trace as one self-contained HTML page: a space-time diagram with a lane per
    /// node (holds, grants, writes, faults, clock offsets, messages), the violation
    /// highlighted and explained.
    #[command(after_help = RENDER_HELP)]
    Render(render::RenderArgs),
    /// Check histories for linearizability: Jepsen etcd logs, EDN kv histories, locksim runs.
    Check(check::CheckArgs),
    /// Write a trace as a TLA+ behaviour that TLC validates against the algorithm's spec.
    #[command(name = "export-tla", long_about = tla::EXPORT_LONG_ABOUT, after_help = tla::EXPORT_AFTER_HELP_TEXT)]
    ExportTla(tla::ExportArgs),
    /// List the algorithms with their settings, the workload settings and the fault kinds.
    List(list::ListArgs),
    /// Run a scenario file against real servers on loopback (Redis, Sentinel, etcd, PostgreSQL, PgBouncer, ZooKeeper), with real faults.
    #[command(after_help = real::REAL_HELP)]
    Real(real::RealArgs),
    #[command(name = "real-node", hide = true)]
    RealNode(real::NodeArgs),
}

/// Runs the `locksim` command line with `algorithms` known by name beside the built-in ones
/// (see [`locksim_algos::register`]): `--algo NAME`, files' `algorithm = "NAME"`, traces,
/// `list`, sweeps, shrinking and pages all work for them. Call it once, from `main`; the
/// messages that suggest a command name the program as it was started (`my-locksim replay …`).
/// Returns the exit code (see `--help`); a registration that [`locksim_algos::register`]
/// refuses is exit code 2 with its reason.
pub fn main_with(algorithms: Vec<Registration>) -> ExitCode {
    let name = std::env::args_os()
        .next()
        .and_then(|a| {
            std::path::Path::new(&a)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "locksim".into());
    output::set_program(name);
    if !algorithms.is_empty() {
        if let Err(e) = locksim_algos::register(algorithms) {
            error_line(&e);
            return ExitCode::from(Exit::BAD_INPUT);
        }
    }
    let matches = Cli::command()
        .bin_name(program())
        .long_about(locksim_explore::reference::long_help(
            LONG_ABOUT_HEAD,
            LONG_ABOUT_MIDDLE,
            LONG_ABOUT_TAIL,
        ))
        .get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let result = match cli.command {
        Command::Run(a) => run::main(a),
        Command::Campaign(a) => campaign::main(a),
        Command::Merge(a) => campaign::merge(a),
        Command::Sweep(a) => sweep::main(a),
        Command::Check(a) => check::main(a),
        Command::Shrink(a) => traces::shrink_main(a),
        Command::Hunt(a) => hunt::main(a),
        Command::Replay(a) => traces::replay_main(a),
        Command::Render(a) => render::main(a),
        Command::ExportTla(a) => tla::export_main(a),
        Command::Real(a) => real::main(a),
        Command::RealNode(a) => real::node_main(a),
        Command::List(a) => list::main(a),
    };
    match result {
        Ok(code) => code,
        Err(msg) => {
            error_line(&msg);
            ExitCode::from(Exit::BAD_INPUT)
        }
    }
}

pub(crate) use locksim_core::text::plural;
pub(crate) use output::{error_line, out, program};
