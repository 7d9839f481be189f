//! `locksim real`: a scenario file against real redis-server (with Sentinel), etcd, PostgreSQL or PgBouncer processes on loopback, with real
//! faults, judged by the same checkers; `--compare` sets K real runs beside K simulated seeds.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use locksim_core::{History, Scenario, Verdict};
use locksim_explore::campaign_file::CampaignFile;
use locksim_explore::real_compare::{self as cmp, Finding, RealSide};
use locksim_real::{RealError, RealOptions, RealRun};

use crate::exit::verdict_code;
use crate::scenario_args::{choose, Chosen};
use crate::{error_line, exit, out};

pub const REAL_HELP: &str = "\
Starts the lock service as real processes, each on its own loopback address 127.0.0.N with a
temporary data directory: redis-server for central, central-fencing (one) and redlock (five
masters), persistence from the `fsync` setting; a 3-member etcd (3.4) cluster for raft-lease,
whose client speaks etcd's v3 API (needs a locksim built with --features etcd; its build needs
protoc); one PostgreSQL server for db-lease (ShedLock's row; Debian's postgresql package, or
--postgres PATH), and for pg-advisory the same behind a PgBouncer (pool_mode session or
transaction), both started as the postgres user when this runs as root; for redis-failover,
redis-server primary and replicas with one real Sentinel (quorum 1), whose promotion is its
own (each announced on its +switch-master channel, shown as the new primary's `leads`); for
zookeeper, a 3-member ZooKeeper (3.8) ensemble run by `java` (Debian's zookeeper package, or
--zookeeper CLASSPATH) and Curator's lock recipe over our own client of ZooKeeper's protocol
(protected ephemeral-sequential nodes, the sequence number as fencing token). The resource is a small server of ours and every client its own process (this
binary, in a hidden mode). The file's explicit [[fault]] plan runs in real time: partition /
isolate / isolate_leader / loss are nftables rules on those addresses (needs root; drop_replies
drops the data segments from the servers to the clients and lets handshakes and bare ACKs
through, so requests arrive and take effect and no answer comes back), pause is
SIGSTOP/SIGCONT, crash is SIGKILL and a restart on the same data directory, client clock
faults are virtualised in the clients, and a Redis server's wall clock is shifted by our
LD_PRELOAD shim (liblocksim_clockshim.so beside this binary, from `cargo build -p
locksim-clockshim`, or LOCKSIM_CLOCKSHIM=PATH). True time is the host's CLOCK_MONOTONIC. The
processes' events merge into one history for the same S1-S4 checks.

A file's [real] table puts a real lock library in place of locksim's clients: client =
\"redis-py\" (a shipped adapter; `locksim list` shows them, scripts/install-adapters.sh
target/adapters installs their pinned libraries, or give --adapter-libs DIR), or
client_command = [\"python3\", \"mine.py\"] for your own, run from the file's folder. Each client
process starts its adapter and talks to it in JSON lines (docs/adapters.md): the workload,
the writes with the library's token, the timing and the checks stay locksim's, so the
library is judged as the built-in model of `algorithm` is, which --compare's simulated side
runs. The adapter is paused and killed with its node, and LD_PRELOAD of that shim binds
its connections to the node's address (the run stops if one leaves from elsewhere). An
adapter that exits, hangs, prints garbage, answers out of turn or reports an error stops the
run without a verdict (exit 4), its stderr kept in a folder the error names.

Refused with exit 2: algorithms without a real backend, delay and duplicate (no netem),
task pauses, renewal, clock faults on Redis servers when the shim is not found, clock faults
on the PostgreSQL server, its pooler, the Sentinel or a ZooKeeper member (not yet), and on etcd members always (Go ignores LD_PRELOAD; etcd times leases monotonically), and
raft-lease settings etcd cannot take (TTLs that are not whole seconds, fsync = never, the
simulator's bug knobs), and network settings the host's TCP does not have (crash = host,
tcp_rto_min / tcp_retries2 / tcp_orphan_retries other than Linux's defaults, network =
datagram; with --compare, network = datagram is allowed and names the simulated side's model).
Every process is stopped and every temporary file removed at the end, on failure and on
Ctrl-C (exit 130). A real run cannot be replayed; --trace keeps a record `locksim render`
draws from its embedded events.

With --compare, seed N of the real side draws the same workload (think times, keys, work
lengths, retry delays) as simulated seed N. Per property (S1-S4, L1-L3 with --liveness, and
runs with a grant) it prints both rates, violating runs / runs judged, with 95% Wilson score
intervals, and Fisher's exact test (two-sided p): `differs` when p < 0.05. A property that
some real run violates and no simulated seed does is SIM_OPTIMISTIC, on a line of its own:
the simulator called safe what is not, a simulator bug by definition.

Exit codes: 0 safe (with --compare: the sides agree), 1 violated (with --compare: a property
is sim_optimistic or the sides differ), 2 bad input or missing tools (or not root, for
network faults, or a clock shim that is not in force), 3 undecided, no client was granted
the lock, or (redis-failover) Sentinel promoted no replica though the plan cut the primary off
for longer than down_after (the run proves nothing), 4 the real run failed, 130 interrupted.

Examples:
  locksim real sims/real/redlock-pause.toml
  locksim real sims/real/redlock-pause.toml --trace real.json && locksim render real.json
  locksim real --compare sims/real/central-fencing-pause.toml --runs 3
  locksim real sims/real/raft-lease-leader-isolation.toml      (built with --features etcd)
  locksim real --compare sims/real/db-lease-client-clock-ahead.toml --runs 10 --liveness
  locksim real --compare sims/real/zookeeper-pause.toml --runs 10
  locksim real --compare sims/real/redis-py-pause.toml          (redis-py's Lock, an adapter)";

#[derive(Args)]
pub struct RealArgs {
    /// A scenario file (a campaign file: algorithm, settings, [client.cN], [[fault]] plan).
    #[arg(value_name = "SCENARIO.toml")]
    file: PathBuf,
    /// Seed of the clients' random choices (think and work times, owners) and of seeded fault
    /// kinds [default: the file's first_seed]; with --compare, the first of the K seeds.
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// For a file with several fault kinds: the one to run.
    #[arg(long, value_name = "KIND")]
    faults: Option<String>,
    /// Run K times for real and K seeds in the simulator and count, per property, how many
    /// runs violated it on each side.
    #[arg(long)]
    compare: bool,
    /// How many runs per side with --compare.
    #[arg(long, value_name = "K", default_value_t = 3)]
    runs: u64,
    /// Also check liveness (L1-L3).
    #[arg(long)]
    liveness: bool,
    /// Write the run's record (a trace marked as real, events embedded) to this file.
    #[arg(long, value_name = "FILE.json")]
    trace: Option<PathBuf>,
    /// Replace an existing --trace file.
    #[arg(long)]
    force: bool,
    /// Print every event, not only faults, losses, rejections and the witnesses.
    #[arg(long)]
    events: bool,
    /// One JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// The redis-server executable.
    #[arg(long, value_name = "PATH", default_value = "redis-server")]
    redis: String,
    /// The etcd executable (raft-lease).
    #[arg(long, value_name = "PATH", default_value = "etcd")]
    etcd: String,
    /// The PostgreSQL server executable, with initdb beside it (db-lease, pg-advisory) [default: the newest
    /// /usr/lib/postgresql/N/bin/postgres, else postgres on PATH].
    #[arg(long, value_name = "PATH")]
    postgres: Option<String>,
    /// The PgBouncer executable (pg-advisory's pooler).
    #[arg(long, value_name = "PATH", default_value = "pgbouncer")]
    pgbouncer: String,
    /// ZooKeeper's Java classpath (zookeeper), run with `java` from PATH [default: Debian's,
    /// /usr/share/java/zookeeper.jar and slf4j-simple.jar].
    #[arg(long, value_name = "CLASSPATH")]
    zookeeper: Option<String>,
    /// Where the shipped adapters' libraries are installed (`scripts/install-adapters.sh DIR`)
    /// [default: LOCKSIM_ADAPTER_LIBS, else adapters/ in this binary's build folder, e.g.
    /// target/adapters].
    #[arg(long, value_name = "DIR")]
    adapter_libs: Option<PathBuf>,
    /// Keep the run's logs (servers' logs, each adapter's stderr as cN.I.adapter.err) in a
    /// locksim-logs-* folder under the temporary directory, and print its path, even when the
    /// run succeeds (after a failed run they are always kept).
    #[arg(long)]
    keep_logs: bool,
}

/// `locksim real-node SPEC.json`: a client or the resource of a real run (hidden).
#[derive(Args)]
pub struct NodeArgs {
    spec: PathBuf,
}

pub fn node_main(a: NodeArgs) -> Result<ExitCode, String> {
    locksim_real::node_main(&a.spec)?;
    Ok(ExitCode::SUCCESS)
}

fn options(a: &RealArgs, file: &CampaignFile) -> Result<RealOptions, String> {
    use locksim_explore::campaign_file::RealClient;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let adapter = match &file.real_client {
        None => None,
        Some(RealClient::Adapter(n)) => Some(locksim_real::adapter::Choice::Shipped(n.clone())),
        Some(RealClient::Command(argv)) => {
            // Run from the file's folder, so that `["python3", "mine.py"]` finds mine.py there.
            let dir = a
                .file
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(std::path::Path::new("."));
            let cwd = dir
                .canonicalize()
                .map_err(|e| format!("{}: {e}", dir.display()))?;
            Some(locksim_real::adapter::Choice::Command {
                argv: argv.clone(),
                cwd,
            })
        }
    };
    Ok(RealOptions {
        adapter,
        adapter_libs: a
            .adapter_libs
            .clone()
            .unwrap_or_else(|| locksim_real::adapter::default_libs(&exe)),
        clockshim: locksim_real::clockfile::find_shim(&exe),
        keep_logs: a.keep_logs,
        exe,
        node_args: vec!["real-node".into()],
        redis: a.redis.clone(),
        etcd: a.etcd.clone(),
        postgres: a.postgres.clone(),
        pgbouncer: a.pgbouncer.clone(),
        zookeeper: a
            .zookeeper
            .clone()
            .unwrap_or_else(|| locksim_real::zookeeper::CLASSPATH.into()),
    })
}

fn verdict(chosen: &Chosen, s: &Scenario, h: &History, liveness: bool) -> Verdict {
    cmp::verdict(s, &*chosen.setup.algo, h, liveness)
}

/// A real run, with the error mapped to an exit code and a message.
fn real_run(s: &Scenario, o: &RealOptions) -> Result<RealRun, (u8, String)> {
    locksim_real::run(s, o).map_err(|e| {
        let code = match e {
            RealError::Unsupported(_) | RealError::Setup(_) => exit::BAD_INPUT,
            RealError::Interrupted => exit::INTERRUPTED,
            RealError::Failed(_) => exit::REAL_FAILED,
        };
        (code, e.to_string())
    })
}

pub fn main(a: RealArgs) -> Result<ExitCode, String> {
    let chosen = choose(Some(&a.file), None, a.faults.as_deref(), &[], None)?;
    let file = CampaignFile::read(&a.file)?;
    let seed = a.seed.unwrap_or(file.first_seed);
    let opts = options(&a, &file)?;
    if a.compare && a.trace.is_some() {
        return Err(
            "--trace records one real run; with --compare, run `locksim real FILE --seed N --trace F` for the run to keep"
                .into(),
        );
    }
    refuse_unrunnable(&a, &chosen, &file, seed, &opts)?;
    if let Some(t) = &a.trace {
        check_trace_target(t, a.force)?;
    }
    if a.compare {
        return compare(&a, &chosen, seed, &opts);
    }
    single(&a, &chosen, seed, &opts)
}

/// Refuses what real mode cannot run before anything starts (one line, exit 2): with
/// --compare, every seed's plan (seeded fault kinds draw a different one per seed).
fn refuse_unrunnable(
    a: &RealArgs,
    chosen: &Chosen,
    file: &CampaignFile,
    seed: u64,
    opts: &RealOptions,
) -> Result<(), String> {
    let seeds = if a.compare { a.runs.clamp(1, 1000) } else { 1 };
    // The file's own names for its faults (number and line); a drawn one by its time.
    let name = |tf: &locksim_core::fault::TimedFault| {
        file.plan
            .faults
            .iter()
            .position(|f| f == tf)
            .and_then(|i| file.fault_names.get(i).cloned())
            .unwrap_or_else(|| locksim_real::support::fault_at(tf))
    };
    for k in 0..seeds {
        let s = chosen.scenario(seed + k);
        let s = if a.compare { real_side(s) } else { s };
        let run = if a.compare {
            format!(" (run {}, seed {})", k + 1, seed + k)
        } else {
            String::new()
        };
        opts.refuse(&s, &name)
            .map_err(|e| format!("{}{run}: real mode: {e}", a.file.display()))?;
    }
    Ok(())
}

/// Refuses a `--trace` target that exists (without `force`) or whose folder does not: said
/// now, not after a run whose record would then be lost.
fn check_trace_target(t: &std::path::Path, force: bool) -> Result<(), String> {
    if t.exists() && !force {
        return Err(format!(
            "{}: exists; give --force to replace it",
            t.display()
        ));
    }
    let parent = t.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(dir) = parent.filter(|p| !p.is_dir()) {
        return Err(format!(
            "{}: the folder {} does not exist (the record is written after the run)",
            t.display(),
            dir.display()
        ));
    }
    Ok(())
}

/// One real run of seed `seed`: its record (`--trace`), its verdict and timeline (or
/// `--json`), where its logs are kept, and the exit code.
fn single(
    a: &RealArgs,
    chosen: &Chosen,
    seed: u64,
    opts: &RealOptions,
) -> Result<ExitCode, String> {
    let scenario = chosen.scenario(seed);
    let run = match real_run(&scenario, opts) {
        Ok(r) => r,
        Err((code, msg)) => {
            error_line(&format!("{}: {msg}", a.file.display()));
            return Ok(ExitCode::from(code));
        }
    };
    let v = verdict(chosen, &scenario, &run.history, a.liveness);
    if let Some(path) = &a.trace {
        write_trace(path, &scenario, &run, &v)?;
    }
    print_run(a, &scenario, &run, &v);
    for line in run.logs_note(a.keep_logs) {
        eprintln!("{line}");
    }
    Ok(ExitCode::from(single_code(a, &scenario, &run, &v)))
}

/// `--trace`: the run's record (see [`RealRun::trace`]).
fn write_trace(
    path: &std::path::Path,
    s: &Scenario,
    run: &RealRun,
    v: &Verdict,
) -> Result<(), String> {
    let bytes = run.trace(s, v).to_json();
    locksim_core::file::write_whole(path, bytes.as_bytes(), locksim_core::file::Place::Replace)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    eprintln!(
        "wrote {} (a real run's record: `locksim render` draws it)",
        path.display()
    );
    Ok(())
}

/// The run on stdout: one JSON object, or the text timeline.
fn print_run(a: &RealArgs, scenario: &Scenario, run: &RealRun, v: &Verdict) {
    if a.json {
        let mut j = serde_json::json!({
            "real": true,
            "service": run.service,
            "scenario": scenario,
            "events": run.history.events.len(),
            "grants": locksim_explore::outcome::grants(&run.history),
            "verdict": v,
            "logs": run.logs,
        });
        if a.events {
            j["history"] = serde_json::to_value(&run.history).expect("serializable");
        }
        out(&format!("{j}\n"));
    } else {
        out(&format!(
            "real run: {} (true time = host CLOCK_MONOTONIC; not replayable)\n",
            run.service
        ));
        let (h, events, liveness) = (&run.history, a.events, a.liveness);
        out(&locksim_explore::timeline::render(
            scenario, h, v, events, liveness,
        ));
    }
}

/// The exit code of one real run with verdict `v`: a safe run that granted nothing, or that
/// did not exercise the failover its plan is about, proves nothing (3, said last on stderr,
/// where it is seen).
fn single_code(a: &RealArgs, scenario: &Scenario, run: &RealRun, v: &Verdict) -> u8 {
    if locksim_explore::outcome::grants(&run.history) == 0 {
        error_line(&format!(
            "{}: WARNING: no client was granted the lock in this real run: its verdict proves nothing (exit 3)",
            a.file.display()
        ));
        if v.is_safe() {
            return exit::UNDECIDED;
        }
    }
    if run.missed_failover(scenario) {
        error_line(&format!(
            "{}: WARNING: Sentinel promoted no replica in this real run, though the plan cut the primary off for longer than down_after: it did not exercise failover, and its verdict proves nothing about it (exit 3)",
            a.file.display()
        ));
        if v.is_safe() {
            return exit::UNDECIDED;
        }
    }
    verdict_code(v)
}

/// The real side of a comparison: it always runs over the host's TCP, so a file's
/// `network = "datagram"` names only the simulated side's model (to see what that model
/// hides; real mode alone refuses it).
fn real_side(mut s: Scenario) -> Scenario {
    s.workload.network = locksim_core::Network::Tcp;
    s
}

/// `--compare`: `--runs` real runs from seed `first`, then as many simulated seeds, and the
/// table (or `--json`) of the two sides.
fn compare(
    a: &RealArgs,
    chosen: &Chosen,
    first: u64,
    opts: &RealOptions,
) -> Result<ExitCode, String> {
    if a.runs == 0 || a.runs > 1000 {
        return Err("--runs: give 1 to 1000".into());
    }
    let props = cmp::properties(a.liveness);
    // Each run's and seed's own result, for --json (stderr has the real ones as they end).
    let mut each: Vec<serde_json::Value> = Vec::new();
    let real = match real_runs(a, chosen, first, opts, &props, &mut each) {
        Ok(r) => r,
        Err(code) => return Ok(ExitCode::from(code)),
    };
    let seeds = (first, a.runs);
    let stop = &locksim_real::interrupted;
    let sim = cmp::sim_side(chosen, seeds, (&props, a.liveness), &mut each, stop)?;
    let Some(sim) = sim else {
        return Ok(ExitCode::from(exit::INTERRUPTED));
    };
    let judged = cmp::judge(&props, &real.tally, &sim, real.missed);
    let file = a.file.display().to_string();
    if a.json {
        let j = judged.json(&file, a.runs, first, &real.service, each);
        out(&format!("{j}\n"));
    } else {
        out(&judged.text(&file, a.runs, first));
    }
    Ok(ExitCode::from(match judged.finding() {
        Finding::Differ => exit::VIOLATION,
        Finding::Undecided => exit::UNDECIDED,
        Finding::Agree => exit::CLEAN,
    }))
}

/// `--runs` real runs from seed `first`, each said on stderr as it ends and added to `each`.
/// Errors: the exit code of a run that failed (said on stderr) or of an interruption.
fn real_runs(
    a: &RealArgs,
    chosen: &Chosen,
    first: u64,
    opts: &RealOptions,
    props: &[locksim_core::Property],
    each: &mut Vec<serde_json::Value>,
) -> Result<RealSide, u8> {
    let mut side = RealSide::new(props.len());
    for i in 0..a.runs {
        let s = chosen.scenario(first + i);
        let run = real_run(&real_side(s.clone()), opts).map_err(|(code, msg)| {
            error_line(&format!("{}: run {}: {msg}", a.file.display(), i + 1));
            code
        })?;
        let v = verdict(chosen, &s, &run.history, a.liveness);
        let done = cmp::RealRunDone {
            index: (i, a.runs),
            seed: first + i,
            service: &run.service,
            verdict: &v,
            history: &run.history,
            missed_failover: run.missed_failover(&s),
            logs: run.logs.as_deref(),
        };
        for line in side.add(props, done, each) {
            eprintln!("{line}");
        }
        if locksim_real::interrupted() {
            return Err(exit::INTERRUPTED);
        }
    }
    Ok(side)
}
