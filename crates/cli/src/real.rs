//! `locksim real`: a scenario file against real redis-server (with Sentinel), etcd, PostgreSQL or PgBouncer processes on loopback, with real
//! faults, judged by the same checkers; `--compare` sets K real runs beside K simulated seeds.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use locksim_core::{History, Property, Scenario, Trace, Verdict};
use locksim_explore::compare::{compare as compare_rates, Comparison, Tally, ALPHA};
use locksim_real::{RealError, RealOptions};

use crate::run::verdict_code;
use crate::scenario_args::{choose, Chosen};
use crate::{out, plural};

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

fn options(
    a: &RealArgs,
    file: &locksim_explore::campaign_file::CampaignFile,
) -> Result<RealOptions, String> {
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
    let mut opts = locksim_explore::outcome::check_options_for(s, &*chosen.setup.algo);
    if !liveness {
        opts.liveness = None;
    }
    locksim_check::check_all(h, &opts)
}

/// A real run, with the error mapped to an exit code and a message.
fn real_run(s: &Scenario, o: &RealOptions) -> Result<locksim_real::RealRun, (u8, String)> {
    locksim_real::run(s, o).map_err(|e| {
        let code = match e {
            RealError::Unsupported(_) | RealError::Setup(_) => crate::exit::BAD_INPUT,
            RealError::Interrupted => crate::exit::INTERRUPTED,
            RealError::Failed(_) => crate::exit::REAL_FAILED,
        };
        (code, e.to_string())
    })
}

/// Sentinel's promotions in a real run (`leads` events).
fn failovers(h: &History) -> usize {
    h.events
        .iter()
        .filter(|e| matches!(e.kind, locksim_core::history::EventKind::Leader { .. }))
        .count()
}

/// A `redis-failover` run whose plan cuts the primary off for longer than `down_after` and in
/// which Sentinel promoted nobody: it did not exercise the failover it is about.
fn missed_failover(s: &Scenario, h: &History) -> bool {
    locksim_real::support::backend(s).is_ok_and(|b| locksim_real::support::expects_failover(s, &b))
        && failovers(h) == 0
}

fn grants(h: &History) -> usize {
    h.events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                locksim_core::EventKind::Op {
                    f: locksim_core::OpF::Acquire,
                    phase: locksim_core::Phase::Ok,
                    ..
                }
            )
        })
        .count()
}

/// `S1, S2` or `safe`.
fn props_text(p: &[Property]) -> String {
    if p.is_empty() {
        "safe".into()
    } else {
        p.iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn violated(v: &Verdict) -> Vec<Property> {
    let mut p: Vec<Property> = v.violations.iter().map(|x| x.kind).collect();
    p.sort_by_key(|p| p.to_string());
    p.dedup();
    p
}

pub fn main(a: RealArgs) -> Result<ExitCode, String> {
    let chosen = choose(Some(&a.file), None, a.faults.as_deref(), &[], None)?;
    let file = locksim_explore::campaign_file::CampaignFile::read(&a.file)?;
    let seed = a.seed.unwrap_or(file.first_seed);
    let scenario = chosen.scenario(seed);
    let opts = options(&a, &file)?;
    if a.compare && a.trace.is_some() {
        return Err(
            "--trace records one real run; with --compare, run `locksim real FILE --seed N --trace F` for the run to keep"
                .into(),
        );
    }
    // Refuse what real mode cannot run before anything starts (one line, exit 2): with
    // --compare, every seed's plan (seeded fault kinds draw a different one per seed).
    let seeds = if a.compare { a.runs.clamp(1, 1000) } else { 1 };
    for k in 0..seeds {
        let s = chosen.scenario(seed + k);
        let s = if a.compare { real_side(s) } else { s };
        let run = if a.compare {
            format!(" (run {}, seed {})", k + 1, seed + k)
        } else {
            String::new()
        };
        locksim_real::support::backend(&s)
            .and_then(|b| {
                // The file's own names for its faults (number and line); a drawn one by its
                // time.
                let name = |tf: &locksim_core::fault::TimedFault| {
                    file.plan
                        .faults
                        .iter()
                        .position(|f| f == tf)
                        .and_then(|i| file.fault_names.get(i).cloned())
                        .unwrap_or_else(|| locksim_real::support::fault_at(tf))
                };
                locksim_real::support::check_plan(&s, &b, opts.clockshim.is_some(), &name)?;
                match &opts.adapter {
                    Some(c) => {
                        locksim_real::adapter::check_scenario(&s, c, opts.clockshim.is_some())
                    }
                    None => Ok(()),
                }
            })
            .map_err(|e| format!("{}{run}: real mode: {e}", a.file.display()))?;
    }
    if let Some(t) = &a.trace {
        if t.exists() && !a.force {
            return Err(format!(
                "{}: exists; give --force to replace it",
                t.display()
            ));
        }
        // Said now, not after a run whose record would then be lost.
        let parent = t.parent().filter(|p| !p.as_os_str().is_empty());
        if let Some(dir) = parent.filter(|p| !p.is_dir()) {
            return Err(format!(
                "{}: the folder {} does not exist (the record is written after the run)",
                t.display(),
                dir.display()
            ));
        }
    }
    if a.compare {
        return compare(&a, &chosen, seed, &opts);
    }
    let run = match real_run(&scenario, &opts) {
        Ok(r) => r,
        Err((code, msg)) => {
            crate::error_line(&format!("{}: {msg}", a.file.display()));
            return Ok(ExitCode::from(code));
        }
    };
    let v = verdict(&chosen, &scenario, &run.history, a.liveness);
    if let Some(path) = &a.trace {
        let mut t = Trace::new(
            scenario.clone(),
            run.history.digest(),
            v.clone(),
            Some(run.history.events.clone()),
        );
        t.real = Some(run.service.clone());
        locksim_core::file::write_whole(
            path,
            t.to_json().as_bytes(),
            locksim_core::file::Place::Replace,
        )
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        eprintln!(
            "wrote {} (a real run's record: `locksim render` draws it)",
            path.display()
        );
    }
    if a.json {
        let mut j = serde_json::json!({
            "real": true,
            "service": run.service,
            "scenario": scenario,
            "events": run.history.events.len(),
            "grants": grants(&run.history),
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
        out(&crate::timeline::render(
            &scenario,
            &run.history,
            &v,
            a.events,
            a.liveness,
        ));
    }
    if let Some(d) = &run.logs {
        eprintln!("the run's logs are kept in {}", d.display());
        let servers = locksim_real::harness::kept_server_logs(d);
        if servers.is_empty() {
            eprintln!("  (no server wrote a log)");
        }
        for f in servers {
            eprintln!("  server log: {}", d.join(f).display());
        }
    } else if a.keep_logs {
        eprintln!("warning: --keep-logs: the run's logs could not be copied");
    }
    if grants(&run.history) == 0 {
        // A zero is not a pass: said last, where it is seen, and exit 3 (proves nothing).
        crate::error_line(&format!(
            "{}: WARNING: no client was granted the lock in this real run: its verdict proves nothing (exit 3)",
            a.file.display()
        ));
        if v.is_safe() {
            return Ok(ExitCode::from(crate::exit::UNDECIDED));
        }
    }
    if missed_failover(&scenario, &run.history) {
        crate::error_line(&format!(
            "{}: WARNING: Sentinel promoted no replica in this real run, though the plan cut the primary off for longer than down_after: it did not exercise failover, and its verdict proves nothing about it (exit 3)",
            a.file.display()
        ));
        if v.is_safe() {
            return Ok(ExitCode::from(crate::exit::UNDECIDED));
        }
    }
    Ok(ExitCode::from(verdict_code(&v)))
}

/// `12%` for a rate in [0, 1].
fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// One row of the comparison table: the sides' counts with their 95 % intervals, Fisher's p,
/// and what the row means.
fn compare_row(name: &str, c: &Comparison) -> String {
    let side = |t: &Tally, ci: (f64, f64)| {
        format!(
            "{:>3}/{:<3} {:>4} [{}, {}]",
            t.hits,
            t.runs,
            pct(t.rate()),
            pct(ci.0),
            pct(ci.1)
        )
    };
    let mut what = Vec::new();
    if c.differs {
        what.push("differs");
    }
    if c.sim_optimistic {
        what.push("SIM_OPTIMISTIC");
    }
    let p = if c.p < 0.001 {
        "<0.001".to_string()
    } else {
        format!("{:.3}", c.p)
    };
    format!(
        "{:<8} {:<24} {:<24} {:>6}  {}\n",
        name,
        side(&c.real, c.real_ci),
        side(&c.sim, c.sim_ci),
        p,
        if what.is_empty() {
            "-".to_string()
        } else {
            what.join(", ")
        }
    )
}

fn comparison_json(name: &str, c: &Comparison) -> serde_json::Value {
    serde_json::json!({
        "property": name,
        "real": c.real.hits, "real_runs": c.real.runs, "real_rate": c.real.rate(),
        "real_ci": [c.real_ci.0, c.real_ci.1],
        "sim": c.sim.hits, "sim_runs": c.sim.runs, "sim_rate": c.sim.rate(),
        "sim_ci": [c.sim_ci.0, c.sim_ci.1],
        "p": c.p, "differs": c.differs, "sim_optimistic": c.sim_optimistic,
        "agree": !c.differs && !c.sim_optimistic,
    })
}

/// One side's tallies: per property, and runs with at least one grant.
struct SideTally {
    props: Vec<Tally>,
    granted: Tally,
    grants: usize,
    undecided: usize,
}

impl SideTally {
    fn new(n: usize) -> SideTally {
        SideTally {
            props: vec![Tally::default(); n],
            granted: Tally::default(),
            grants: 0,
            undecided: 0,
        }
    }

    /// Counts one run's verdict; returns its violated properties and grant count.
    fn add(&mut self, props: &[Property], v: &Verdict, h: &History) -> (Vec<Property>, usize) {
        let got = violated(v);
        let undecided = v.undecided();
        for (k, p) in props.iter().enumerate() {
            self.props[k].add(got.contains(p), undecided.contains(p));
        }
        let granted = grants(h);
        self.granted.add(granted > 0, false);
        self.grants += granted;
        self.undecided += v.inconclusive.len();
        (got, granted)
    }

    fn empty(&self) -> u64 {
        self.granted.runs - self.granted.hits
    }
}

/// The real side of a comparison: it always runs over the host's TCP, so a file's
/// `network = "datagram"` names only the simulated side's model (to see what that model
/// hides; real mode alone refuses it).
fn real_side(mut s: Scenario) -> Scenario {
    s.workload.network = locksim_core::Network::Tcp;
    s
}

fn compare(
    a: &RealArgs,
    chosen: &Chosen,
    first: u64,
    opts: &RealOptions,
) -> Result<ExitCode, String> {
    if a.runs == 0 || a.runs > 1000 {
        return Err("--runs: give 1 to 1000".into());
    }
    let mut props = vec![Property::S1, Property::S2, Property::S3, Property::S4];
    if a.liveness {
        props.extend(Property::LIVENESS);
    }
    let mut real = SideTally::new(props.len());
    let mut sim = SideTally::new(props.len());
    // Each run's and seed's own result, for --json (stderr has the real ones as they end).
    let mut each: Vec<serde_json::Value> = Vec::new();
    let mut missed = 0u64;
    // What ran on the real side (servers, and an adapter's library and version), as run 1 said.
    let mut service = String::new();
    let one = |side: &str, seed: u64, got: &[Property], granted: usize| {
        serde_json::json!({"side": side, "seed": seed, "grants": granted,
            "violated": got.iter().map(|p| p.to_string()).collect::<Vec<_>>()})
    };
    for i in 0..a.runs {
        let s = chosen.scenario(first + i);
        let run = match real_run(&real_side(s.clone()), opts) {
            Ok(r) => r,
            Err((code, msg)) => {
                crate::error_line(&format!("{}: run {}: {msg}", a.file.display(), i + 1));
                return Ok(ExitCode::from(code));
            }
        };
        if service.is_empty() {
            service = run.service.clone();
        }
        let v = verdict(chosen, &s, &run.history, a.liveness);
        let (got, granted) = real.add(&props, &v, &run.history);
        let mut this = one("real", first + i, &got, granted);
        if let Some(d) = &run.logs {
            eprintln!("run {}: logs kept in {}", i + 1, d.display());
            this["logs"] = serde_json::json!(d);
        }
        each.push(this);
        let none = if granted == 0 {
            " (NO GRANT: proves nothing)"
        } else if missed_failover(&s, &run.history) {
            missed += 1;
            " (NO FAILOVER: Sentinel promoted nobody; proves nothing about failover)"
        } else {
            ""
        };
        eprintln!(
            "real run {} of {} (seed {}): {}{none}",
            i + 1,
            a.runs,
            first + i,
            props_text(&got)
        );
        if locksim_real::interrupted() {
            return Ok(ExitCode::from(crate::exit::INTERRUPTED));
        }
    }
    for i in 0..a.runs {
        if locksim_real::interrupted() {
            return Ok(ExitCode::from(crate::exit::INTERRUPTED));
        }
        let s = chosen.scenario(first + i);
        let o = locksim_explore::check_scenario(&s, chosen.setup.algo.clone());
        if let Some(e) = o.error {
            return Err(format!("the simulation of seed {} failed: {e}", first + i));
        }
        let h = o.history.expect("a history");
        let v = verdict(chosen, &s, &h, a.liveness);
        let (got, granted) = sim.add(&props, &v, &h);
        each.push(one("sim", first + i, &got, granted));
    }
    let rows: Vec<(String, Comparison)> = props
        .iter()
        .enumerate()
        .map(|(k, p)| {
            (
                p.to_string(),
                compare_rates(real.props[k], sim.props[k], true),
            )
        })
        .collect();
    let granted = compare_rates(real.granted, sim.granted, false);
    let optimistic: Vec<&str> = rows
        .iter()
        .filter(|r| r.1.sim_optimistic)
        .map(|r| r.0.as_str())
        .collect();
    let grants_row = ("grants".to_string(), granted);
    let differs: Vec<&str> = rows
        .iter()
        .chain([&grants_row])
        .filter(|r| r.1.differs)
        .map(|r| r.0.as_str())
        .collect();
    let (real_empty, sim_empty) = (real.empty(), sim.empty());
    let undecided = real.undecided + sim.undecided;
    if a.json {
        let mut rows_json: Vec<serde_json::Value> =
            rows.iter().map(|(n, c)| comparison_json(n, c)).collect();
        rows_json.push(comparison_json("grants", &granted));
        out(&format!(
            "{}\n",
            serde_json::json!({"file": a.file.display().to_string(), "runs": a.runs,
                "real_service": service,
                "first_seed": first, "properties": rows_json, "real_grants": real.grants,
                "sim_grants": sim.grants, "real_runs_without_grants": real_empty,
                "sim_seeds_without_grants": sim_empty, "undecided": undecided,
                "real_runs_without_failover": missed,
                "alpha": ALPHA, "differs": differs, "sim_optimistic": optimistic,
                "agree": differs.is_empty() && optimistic.is_empty(), "each": each})
        ));
    } else {
        let mut t = format!(
            "{}: {} and {} (from seed {first}; seed N draws the same workload on both sides)\n",
            a.file.display(),
            plural(a.runs, "real run"),
            plural(a.runs, "simulated seed")
        );
        t += &format!(
            "{:<8} {:<24} {:<24} {:>6}  {}\n",
            "property", "real      rate [95% CI]", "simulated rate [95% CI]", "p", "verdict"
        );
        for (n, c) in &rows {
            t += &compare_row(n, c);
        }
        t += &compare_row("grants", &granted);
        t += &format!(
            "grants: {} real, {} simulated (the grants row counts runs with at least one)\n",
            real.grants, sim.grants
        );
        t += "rates: violating runs / runs judged, 95% Wilson score intervals; p: Fisher's exact test, two-sided; differs: p < 0.05\n";
        if !optimistic.is_empty() {
            t += &format!(
                "SIM_OPTIMISTIC: {}: real runs violate it and no simulated seed does (the simulator calls safe what is not: a simulator bug)\n",
                optimistic.join(", ")
            );
        }
        if real_empty > 0 || sim_empty > 0 {
            t += &format!(
                "WARNING: no client was granted the lock in {} and {}: those prove nothing\n",
                plural(real_empty, "real run"),
                plural(sim_empty, "simulated seed")
            );
        }
        if missed > 0 {
            t += &format!(
                "WARNING: Sentinel promoted no replica in {} though the plan cut the primary off for longer than down_after: those did not exercise failover\n",
                plural(missed, "real run")
            );
        }
        if undecided > 0 {
            t += &format!("UNDECIDED: {undecided} checks ran out of budget\n");
        }
        out(&t);
    }
    Ok(ExitCode::from(
        if !optimistic.is_empty() || !differs.is_empty() {
            crate::exit::VIOLATION
        } else if real_empty > 0 || sim_empty > 0 || undecided > 0 || missed > 0 {
            crate::exit::UNDECIDED
        } else {
            crate::exit::CLEAN
        },
    ))
}
