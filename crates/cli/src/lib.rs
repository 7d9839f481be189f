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

mod campaign;
mod check;
mod hunt;
mod markdown;
mod progress;
mod real;
mod render;
mod report;
mod run;
mod scenario_args;
mod sweep;
mod timeline;
mod tla;
mod traces;

use std::process::ExitCode;
use std::sync::OnceLock;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
pub use locksim_algos::Registration;

const ABOUT: &str = "Deterministic simulation of distributed lock algorithms under faults.";

const LONG_ABOUT: &str = "\
Deterministic simulation of distributed lock algorithms under faults.

locksim runs a lock algorithm (a single server, Redlock, ...) inside a simulated cluster where \
clients take the lock, do some work and write to a protected resource, while a nemesis \
partitions the network, pauses processes, steps and skews clocks and crashes servers. \
Every run is fixed by its seed: the same seed gives the same run, event for event.

Four safety properties are checked on every run:
  S1  mutual exclusion: no two clients hold the same lock at the same true time
  S2  resource safety: the resource never accepts a write from a grant after a write from
      a grant the lock service made later (what fencing tokens are for)
  S3  linearizability: the lock operations the clients saw are those of a correct lease
      lock, up to the declared clock uncertainty (S1 without S3 means the service behaved
      and a client acted late; S3 means the service itself granted too early), and the
      resource's writes are those of a register (each write swaps in a value)
  S4  own-incarnation release: a release (a retried one included) never frees a lock that
      a later grant holds
and three liveness properties:
  L1  after a holder crashes or stops for good, a waiting client gets the lock within
      ttl + lock delay + slack
  L2  a healthy holder that renews keeps its lock through outages shorter than
      ttl - renew_every (less the retry slack)
  L3  no lock stays taken longer than ttl + slack while no live client believes it holds it
(campaign tables show L1-L3 whenever a seed violates one, when a campaign file names one,
or with --check liveness).

Scenarios can be written as TOML: campaign files with seeded fault kinds and/or explicit
[[fault]] plans and per-client [client.cN] settings (sims/README.md); `locksim run FILE.toml
--seed N` runs one seed of a file, `--plan FILE.toml` adds a plan to any run.

A run's verdict is SAFE, VIOLATED (with witnesses), UNDECIDED (a check ran out of its budget)
or NOTHING EXERCISED (no client was granted the lock); only SAFE is a pass.

Exit codes, the same for every command:
  0  judged and clean: safe, linearizable, every expectation met, a replay identical, the
     page or file written
  1  a violation or a failed expectation: a property violated, a history not linearizable
     (check), a campaign file's expect/forbid unmet, a frontier boundary moved, a replay or
     re-drawn trace that differs, a --fail-on property violated or a seed that failed to run
     (run included)
  2  bad input: a file, flag or setting that cannot be used (one line names it); shrink of a
     run that violates nothing or failed to run; merge of records without faults_applied
  3  undecided or nothing exercised: a check out of its budget (UNDECIDED, check's unknown),
     a history of 0 operations (check), a run in which no client got the lock, a --fail-on
     cell without grants, whose faults never took effect (n/a), or that does not judge a
     listed property, a shard without seeds, a merge --partial that leaves an expectation
     unjudged
The matrix (campaign without files) and sweep without frontier files are exploratory: they
exit 0 whatever they find, unless --fail-on S1,S2,... (campaign, merge) names the properties
that fail them, for CI. One shard of campaign files exits 0 (judged at merge). real adds 4 (the
real run failed) and 130 (interrupted).";

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
  locksim shrink --algo redlock --seed 5 --faults pause    a minimal trace in traces/
  locksim hunt --algo redlock --faults crash-restart --property S1 --budget 500
                                                    the first violating run, shrunk
  locksim replay traces/*.json
  locksim render traces/k5-redlock-s1-f4f49b23.json -o k5.html    open k5.html in a browser
  locksim campaign --report report.html             the matrix as a page, violations linked
  locksim sweep --algo redlock --faults pause --vary pause_max=100ms..3s:10 --report f.html
                                                    violation rates over a grid, plotted
  locksim check --model lock run.json              a history (run --json --events > run.json) against a lease lock
  locksim export-tla traces/k5-redlock-s1-f4f49b23.json    a TLA+ behaviour for TLC (trace validation)
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
  locksim render traces/k5-redlock-s1-f4f49b23.json -o k5.html
  locksim render trace.json --no-rerun -o trace.html   only the embedded events";

#[derive(Parser)]
#[command(name = "locksim", version, about = ABOUT, long_about = LONG_ABOUT, after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args)]
struct ListArgs {
    /// Print one JSON object: `{"algorithms":[{"name","what","settings":[{"key","help",
    /// "default"}]}],"workload":[{"key","help"}],"fault_shape":[{"key","help"}],
    /// "client":[{"key","help"}],"faults":[…],
    /// "fault_types":[{"type","fields":[…],"help"}],"properties":[…],
    /// "clients":[{"name","library","package","version","language","algorithm":[…]}]}`.
    #[arg(long)]
    json: bool,
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
    List(ListArgs),
    /// Run a scenario file against real servers on loopback (Redis, Sentinel, etcd, PostgreSQL, PgBouncer, ZooKeeper), with real faults.
    #[command(after_help = real::REAL_HELP)]
    Real(real::RealArgs),
    #[command(name = "real-node", hide = true)]
    RealNode(real::NodeArgs),
}

static PROGRAM: OnceLock<String> = OnceLock::new();

/// The name this program was started as (the file name of its path; `locksim` when unknown),
/// for the commands that messages tell the user to run.
pub(crate) fn program() -> &'static str {
    PROGRAM.get().map_or("locksim", String::as_str)
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
    let _ = PROGRAM.set(name);
    if !algorithms.is_empty() {
        if let Err(e) = locksim_algos::register(algorithms) {
            error_line(&e);
            return ExitCode::from(2);
        }
    }
    let matches = Cli::command().bin_name(program()).get_matches();
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
        Command::List(a) => {
            list(a.json);
            Ok(ExitCode::SUCCESS)
        }
    };
    match result {
        Ok(code) => code,
        Err(msg) => {
            error_line(&msg);
            ExitCode::from(2)
        }
    }
}

fn list(json: bool) {
    if json {
        let algorithms: Vec<serde_json::Value> = locksim_algos::algorithms()
            .iter()
            .map(|(name, what)| {
                let settings: Vec<serde_json::Value> = locksim_algos::knobs(name)
                    .unwrap_or(&[])
                    .iter()
                    .map(
                        |k| serde_json::json!({"key": k.key, "help": k.help, "default": k.default}),
                    )
                    .collect();
                let client_defaults: Vec<serde_json::Value> = locksim_algos::client_defaults(name)
                    .iter()
                    .map(|d| {
                        serde_json::json!({
                            "key": d.key,
                            "fraction_of_ttl": [d.num, d.den],
                            "source": d.source,
                        })
                    })
                    .collect();
                serde_json::json!({
                    "name": name,
                    "what": what,
                    "settings": settings,
                    "client_defaults": client_defaults,
                })
            })
            .collect();
        let workload: Vec<serde_json::Value> = locksim_explore::setup::WORKLOAD_KNOBS
            .iter()
            .map(|(k, help)| serde_json::json!({"key": k, "help": help}))
            .collect();
        let fault_shape: Vec<serde_json::Value> = locksim_explore::faultgen::FAULT_KNOBS
            .iter()
            .map(|(k, help)| serde_json::json!({"key": k, "help": help}))
            .collect();
        let faults: Vec<String> = locksim_core::FaultKind::ALL
            .iter()
            .map(|k| k.to_string())
            .collect();
        let properties: Vec<String> = locksim_core::Property::ALL
            .iter()
            .map(|p| p.to_string())
            .collect();
        let clients: Vec<serde_json::Value> = locksim_core::scenario_file::CLIENT_FIELDS
            .iter()
            .map(|(k, help)| serde_json::json!({"key": k, "help": help}))
            .collect();
        let fault_types: Vec<serde_json::Value> = locksim_core::scenario_file::FAULT_TYPES
            .iter()
            .map(|(t, fields, help)| {
                let fields: Vec<&str> = fields.split(", ").filter(|f| !f.is_empty()).collect();
                serde_json::json!({"type": t, "fields": fields, "help": help})
            })
            .collect();
        out(&format!(
            "{}\n",
            serde_json::json!({
                "algorithms": algorithms,
                "workload": workload,
                "fault_shape": fault_shape,
                "client": clients,
                "faults": faults,
                "fault_types": fault_types,
                "trigger": {
                    "fields": locksim_core::scenario_file::TRIGGER_FIELDS.split(", ").collect::<Vec<_>>(),
                    "events": locksim_core::trigger::TRIGGER_EVENTS,
                },
                "properties": properties,
                "clients": locksim_real::adapter::SHIPPED
                    .iter()
                    .map(|a| serde_json::json!({
                        "name": a.name,
                        "library": a.library,
                        "package": a.package,
                        "version": a.version,
                        "language": a.language,
                        "algorithm": a.algorithms,
                    }))
                    .collect::<Vec<_>>(),
            })
        ));
        return;
    }
    // Names padded to the widest of their list, so that a long one does not shift its help.
    let w = |names: &mut dyn Iterator<Item = &str>| names.map(str::len).max().unwrap_or(0).max(16);
    let mut t = String::from("Algorithms (--algo NAME) and their settings (--set key=value):\n");
    let aw = w(&mut locksim_algos::algorithms().iter().map(|a| a.0));
    let kw = w(&mut locksim_algos::algorithms()
        .iter()
        .flat_map(|a| locksim_algos::knobs(a.0).unwrap_or(&[]))
        .map(|k| k.key));
    for (name, what) in locksim_algos::algorithms() {
        t += &format!("  {name:<aw$} {what}\n");
        for k in locksim_algos::knobs(name).unwrap_or(&[]) {
            t += &format!("      {:<kw$} {} (default {})\n", k.key, k.help, k.default);
        }
        for d in locksim_algos::client_defaults(name) {
            let value = if d.num == 0 {
                "0".to_string()
            } else {
                format!("ttl × {}/{}", d.num, d.den)
            };
            t += &format!(
                "      {:<kw$} workload default for {name}: {value}, {}\n",
                d.key, d.source
            );
        }
    }
    t +=
        "\nWorkload settings (--set key=value, any algorithm; durations need a unit: 500ms, 2s):\n";
    for (k, help) in locksim_explore::setup::WORKLOAD_KNOBS {
        t += &format!("  {k:<16} {help}\n");
    }
    t += "\nFault-shape settings (--set key=value, or --vary in a sweep; unset, they scale with the TTL):\n";
    for (k, help) in locksim_explore::faultgen::FAULT_KNOBS {
        t += &format!("  {k:<16} {help}\n");
    }
    t += "\nPer-client settings (--set cN.key=value, or a [client.cN] table in a campaign file):\n";
    for (k, help) in locksim_core::scenario_file::CLIENT_FIELDS {
        t += &format!("  {k:<16} {help}\n");
    }
    t += "\nFault kinds (--faults KIND[,KIND]), drawn from each seed:\n";
    for k in locksim_core::FaultKind::ALL {
        t += &format!("  {k}\n");
    }
    t += "\nFault types of explicit plans ([[fault]] entries in campaign files and --plan files;\n";
    t += "every entry has `at` (or `after`) and `type`; nodes by name: n1.., c1.., res, or servers/clients/all;\n";
    t += "`mode = \"reset\"` makes a cut refuse connections instead of dropping messages):\n";
    let tw = w(&mut locksim_core::scenario_file::FAULT_TYPES.iter().map(|f| f.0));
    for (name, fields, help) in locksim_core::scenario_file::FAULT_TYPES {
        t += &format!("  {name:<tw$} {help}\n");
        if !fields.is_empty() {
            t += &format!("      fields: {fields}\n");
        }
    }
    t += &format!(
        "\nTriggers: `after = {{ {} }}` in place of `at` aims a fault at an event (simulator only):\n",
        locksim_core::scenario_file::TRIGGER_FIELDS
    );
    t += "  node    the node (or group) whose event it waits for\n";
    t += "  event   one of: ";
    t += locksim_core::trigger::TRIGGER_EVENTS;
    t += "\n  nth     which matching event fires it (default 1, the first)\n";
    t += "  delay   true time after that event (default 0: at once, before the node sends more)\n";
    t += "  client  for `grants`: only grants to this client count\n";
    t += "  A trigger whose event never comes is reported as never fired and applies nothing.\n";
    t += "\nLock libraries for `locksim real` (a [real] table: client = \"NAME\", or client_command =\n";
    t += "[\"prog\", \"arg\"] for your own; protocol in docs/adapters.md; libraries installed by\n";
    t += "scripts/install-adapters.sh target/adapters):\n";
    let nw = w(&mut locksim_real::adapter::SHIPPED.iter().map(|a| a.name));
    for a in locksim_real::adapter::SHIPPED {
        t += &format!(
            "  {:<nw$} {} {}=={} ({}), on the servers of {}\n",
            a.name,
            a.library,
            a.package,
            a.version,
            a.language,
            a.algorithms.join(" or ")
        );
    }
    out(&t);
}

/// Writes to stdout, ignoring a closed pipe (`locksim run … | head` is not an error).
pub(crate) fn out(text: &str) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(text.as_bytes()).and_then(|_| o.flush());
}

pub(crate) use locksim_core::text::plural;

/// `--max-memory`, shared by every command that runs simulations.
#[derive(clap::Args, Clone)]
pub(crate) struct MemoryArgs {
    /// Refuse to run a scenario whose estimated peak memory (for all the runs at once) is
    /// above this size, e.g. 4GiB or 512MiB; the estimate grows with clients, servers and
    /// simulated time.
    #[arg(long, value_name = "SIZE", default_value = "4GiB")]
    max_memory: String,
}

impl MemoryArgs {
    /// The limit, bytes.
    pub(crate) fn limit(&self) -> Result<u64, String> {
        locksim_explore::budget::parse_size(&self.max_memory)
            .map_err(|e| format!("--max-memory: {e}"))
    }
    /// Refuses one run of `s` over the limit.
    pub(crate) fn check(&self, s: &locksim_core::Scenario) -> Result<(), String> {
        locksim_explore::budget::check(s, 1, self.limit()?)
    }
}

/// Prints an error for people: `error: ` and the message on one line (a value the message
/// echoes, a file name or a setting, may hold a newline; it is shown escaped, as `\n`).
pub(crate) fn error_line(msg: &str) {
    eprintln!("error: {}", locksim_core::text::one_line(msg));
}
