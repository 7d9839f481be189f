//! A lock *library* as the clients of a real run: an adapter process per client node that
//! drives the library and answers over JSON lines (the protocol: `docs/adapters.md`).
//!
//! The harness resolves the scenario's choice ([`Choice`]: a shipped adapter by name, or the
//! user's command) into an [`AdapterSpec`] for each client process; the client process
//! ([`crate::client`]) starts the adapter as its child, in its process group (so `SIGSTOP` and
//! `SIGKILL` of the node reach both), with the `LD_PRELOAD` shim that binds its TCP sockets to
//! the node's address, and drives it through [`AdapterLock`] exactly as it drives its own lock
//! clients: the same workload, the same writes to the resource, the same events.
//!
//! An adapter that dies, hangs, prints something other than an answer, answers out of turn or
//! reports an `error` stops its client process with exit status [`EXIT_ADAPTER`] and one
//! line naming the adapter, the request and its stderr file: the run then fails without a
//! verdict (`locksim real` exit 4), never a silent SAFE.

use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use locksim_core::history::LocalClock;
use locksim_core::{Nanos, Scenario};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::backend::{Grant, Host, Outcome};
use crate::support::{Backend, NO_TIMEOUT};

/// The protocol version this locksim speaks (`hello`'s `protocol`).
pub const PROTOCOL: u32 = 1;

/// The exit status of a client process whose adapter broke the protocol.
pub const EXIT_ADAPTER: i32 = 4;

/// How long an adapter may take to answer `hello` (its interpreter starts and imports the
/// library meanwhile).
pub const HELLO_LIMIT: Duration = Duration::from_secs(10);

/// How long past its request timeout an adapter may take to answer before it is hung.
pub const HANG_GRACE: Duration = Duration::from_secs(10);

/// An adapter that ships with locksim (`adapters/NAME/` in the repository).
#[derive(Debug, Clone, Copy)]
pub struct Shipped {
    /// Its name in scenario files (`[real] client = "NAME"`).
    pub name: &'static str,
    /// The library and the lock it uses, for people.
    pub library: &'static str,
    /// The registry package and its pinned version (`adapters/requirements.txt`,
    /// `adapters/node/package.json`).
    pub package: &'static str,
    /// The pinned version of `package`.
    pub version: &'static str,
    /// `python`, `javascript` or `rust` (a binary built by `scripts/install-adapters.sh` into
    /// `DIR/rust/bin/NAME`; its `source` is written beside the run's logs, for the record).
    pub language: &'static str,
    /// The algorithms whose servers it needs: a file must name one of them.
    pub algorithms: &'static [&'static str],
    /// Its file name in `adapters/NAME/`.
    pub file: &'static str,
    /// Its source (written into the run folder and run from there).
    pub source: &'static str,
    /// The library takes only whole seconds of lease (python-redis-lock's `expire`): other
    /// TTLs are refused before the run.
    pub whole_seconds: bool,
}

/// Every shipped adapter.
pub const SHIPPED: &[Shipped] = &[
    Shipped {
        name: "redis-py",
        library: "redis-py's Lock (redis.lock.Lock: SET NX PX, Lua compare-and-delete)",
        package: "redis",
        version: "5.2.1",
        language: "python",
        algorithms: &["central"],
        file: "adapter.py",
        source: include_str!("../adapters/redis-py/adapter.py"),
        whole_seconds: false,
    },
    Shipped {
        name: "python-redis-lock",
        library: "python-redis-lock (redis_lock.Lock: SET NX EX, Lua compare-and-delete)",
        package: "python-redis-lock",
        version: "4.0.1",
        language: "python",
        algorithms: &["central"],
        file: "adapter.py",
        source: include_str!("../adapters/python-redis-lock/adapter.py"),
        whole_seconds: true,
    },
    Shipped {
        name: "pottery",
        library: "pottery's Redlock (five masters, majority, validity = TTL - elapsed - drift)",
        package: "pottery",
        version: "3.0.1",
        language: "python",
        algorithms: &["redlock"],
        file: "adapter.py",
        source: include_str!("../adapters/pottery/adapter.py"),
        whole_seconds: false,
    },
    Shipped {
        name: "node-redlock",
        library:
            "node-redlock over ioredis (five masters, majority, validity = TTL - elapsed - drift)",
        package: "redlock",
        version: "5.0.0-beta.2",
        language: "javascript",
        algorithms: &["redlock"],
        file: "adapter.js",
        source: include_str!("../adapters/node-redlock/adapter.js"),
        whole_seconds: false,
    },
    Shipped {
        name: "kazoo",
        library:
            "kazoo's Lock recipe (ephemeral-sequential znodes; token = the znode's sequence number)",
        package: "kazoo",
        version: "2.11.0",
        language: "python",
        algorithms: &["zookeeper"],
        file: "adapter.py",
        source: include_str!("../adapters/kazoo/adapter.py"),
        whole_seconds: false,
    },
    Shipped {
        name: "redlock-rs",
        library:
            "the redlock crate's RedLock (five masters asked in turn, majority, validity = TTL - elapsed - drift)",
        package: "redlock",
        version: "2.0.0",
        language: "rust",
        algorithms: &["redlock"],
        file: "main.rs",
        source: include_str!("../adapters/redlock-rs-main.rs"),
        whole_seconds: false,
    },
];

/// The shipped adapter called `name`.
pub fn shipped(name: &str) -> Option<&'static Shipped> {
    SHIPPED.iter().find(|s| s.name == name)
}

/// What a scenario file's `[real]` table asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// `client = "NAME"`: a shipped adapter.
    Shipped(String),
    /// `client_command = [...]`: the user's own, run in `cwd` (the file's folder).
    Command {
        /// Program and arguments.
        argv: Vec<String>,
        /// Its working directory.
        cwd: PathBuf,
    },
}

impl Choice {
    /// For messages: `redis-py`, or the command line as the file gives it
    /// (`python3 ../my_adapter.py`).
    pub fn name(&self) -> String {
        match self {
            Choice::Shipped(n) => n.clone(),
            Choice::Command { argv, .. } => argv.join(" "),
        }
    }

    /// Refuses a choice real mode cannot run for `algorithm` (an unknown name, an adapter of
    /// another algorithm's servers, an empty command).
    ///
    /// # Errors
    /// One line naming the adapter and what is wrong.
    pub fn check(&self, algorithm: &str) -> Result<(), String> {
        match self {
            Choice::Shipped(n) => {
                let Some(s) = shipped(n) else {
                    let names: Vec<&str> = SHIPPED.iter().map(|s| s.name).collect();
                    return Err(format!(
                        "[real] client = {n:?}: no such adapter (shipped: {}; or give your own as client_command = [\"prog\", \"arg\"])",
                        names.join(", ")
                    ));
                };
                if !s.algorithms.contains(&algorithm) {
                    return Err(format!(
                        "[real] client = {n:?} drives {} and needs the servers of algorithm = {}, not {algorithm:?}",
                        s.library,
                        s.algorithms
                            .iter()
                            .map(|a| format!("{a:?}"))
                            .collect::<Vec<_>>()
                            .join(" or ")
                    ));
                }
                Ok(())
            }
            Choice::Command { argv, .. } if argv.is_empty() || argv[0].is_empty() => {
                Err("[real] client_command is empty: give [\"program\", \"arg\", ...]".into())
            }
            Choice::Command { .. } => Ok(()),
        }
    }
}

/// Refuses what real mode cannot run with `choice` as the clients of `scenario`: a choice
/// [`Choice::check`] refuses, network faults without the shim that gives the adapters their
/// nodes' addresses (`shim`: it was found), and clock faults or clock settings on clients (the
/// library reads the host's clocks, which are not shifted for client processes yet).
///
/// # Errors
/// One line saying what and why.
pub fn check_scenario(scenario: &Scenario, choice: &Choice, shim: bool) -> Result<(), String> {
    use locksim_core::{Fault, Role};
    choice.check(&scenario.algorithm)?;
    if scenario
        .config
        .get("release")
        .is_some_and(|r| r == "delete")
    {
        return Err(format!(
            "adapter {}: `release = \"delete\"` is a release the library does not make (it \
             releases its own way); the built-in client (no [real] client) makes it",
            choice.name()
        ));
    }
    if !shim && crate::support::has_network_faults(scenario) {
        return Err(format!(
            "adapter {}: network faults need liblocksim_clockshim.so (`cargo build -p locksim-clockshim`, beside this binary, or LOCKSIM_CLOCKSHIM=PATH), which gives the adapters' connections their nodes' addresses",
            choice.name()
        ));
    }
    if let Choice::Shipped(n) = choice {
        if shipped(n).is_some_and(|s| s.whole_seconds) {
            let w = &scenario.workload;
            let ttls = std::iter::once(w.ttl).chain(w.per_client.values().filter_map(|p| p.ttl));
            for ttl in ttls {
                if ttl == 0 || ttl % 1_000_000_000 != 0 {
                    return Err(format!(
                        "adapter {n}: ttl {}: the library's lease is whole seconds (python-redis-lock's expire is int(expire), sent as EX); give ttl = \"Ns\"",
                        locksim_core::time::fmt_nanos(ttl as i128)
                    ));
                }
            }
        }
    }
    // A client's wall clock is shifted through the shim's clock file, which the library's
    // runtime reads (proven before the run by [`probe_clock`]); its monotonic clock is the
    // host's. So wall-clock steps and offsets can run; a drift, which the model applies to
    // both clocks, cannot, nor can any clock fault on a command whose runtime is unknown.
    let c = &scenario.cluster;
    let mut stepped = Vec::new();
    for tf in &scenario.faults.faults {
        match tf.fault {
            Fault::ClockDrift { node, .. } if c.role(node) == Role::Client => {
                return Err(format!(
                    "adapter {}: clock_drift on client {}: the clock shim shifts a library's wall clock only, while the model drifts its monotonic clock too; step it (clock_step) instead",
                    choice.name(),
                    c.name(node)
                ));
            }
            Fault::ClockStep { node, .. } if c.role(node) == Role::Client => {
                stepped.push(format!("clock_step on client {}", c.name(node)));
            }
            _ => {}
        }
    }
    for (name, p) in &scenario.workload.per_client {
        if p.clock_drift_ppm.is_some_and(|d| d != 0) {
            return Err(format!(
                "adapter {}: [client.{name}] clock_drift: the clock shim shifts a library's wall clock only, while the model drifts its monotonic clock too",
                choice.name()
            ));
        }
        if p.clock_offset.is_some_and(|o| o != 0) {
            stepped.push(format!("[client.{name}] clock_offset"));
        }
    }
    if let Some(what) = stepped.first() {
        if matches!(choice, Choice::Command { .. }) {
            return Err(format!(
                "adapter {}: {what}: client clocks are shifted only for the shipped adapters, whose runtimes (python3, node) locksim proves to read the clock shim's wall clock; your own command's runtime is not probed: drop the clock fault, or run it with a shipped adapter (docs/adapters.md says how one is added)",
                choice.name()
            ));
        }
        if let Some(s) = shipped(&choice.name()).filter(|s| s.language == "rust") {
            return Err(format!(
                "adapter {}: {what}: {} reads only the monotonic clock (std::time::Instant), which the shim does not shift, so a wall-clock fault on its client would change nothing",
                s.name, s.package
            ));
        }
        if !shim {
            return Err(format!(
                "adapter {}: {what} needs liblocksim_clockshim.so (`cargo build -p locksim-clockshim`, beside this binary, or LOCKSIM_CLOCKSHIM=PATH), which shifts the library's wall clock",
                choice.name()
            ));
        }
    }
    Ok(())
}

/// How a client process starts its adapter (made by the harness, carried in the node spec).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdapterSpec {
    /// For messages: the shipped adapter's name or the command line.
    pub name: String,
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Working directory.
    pub cwd: PathBuf,
    /// Environment added to the client's (`PYTHONPATH`, `NODE_PATH`).
    pub env: Vec<(String, String)>,
    /// The shim preloaded for the node's source address (`None`: connections leave from
    /// wherever the kernel picks, so no network fault may be planned).
    pub preload: Option<PathBuf>,
}

/// Makes the spec of `choice` for a run whose folder is `dir`: a shipped adapter's source is
/// written there and run by `python3` or `node` with its libraries from `libs`
/// (`libs/python`, `libs/node/node_modules`, as `scripts/install-adapters.sh` puts them).
///
/// # Errors
/// The source cannot be written, or a shipped adapter's libraries are not installed.
pub fn resolve(
    choice: &Choice,
    dir: &Path,
    libs: &Path,
    preload: Option<&Path>,
) -> Result<AdapterSpec, String> {
    let preload = preload.map(Path::to_path_buf);
    match choice {
        Choice::Command { argv, cwd } => Ok(AdapterSpec {
            name: choice.name(),
            argv: argv.clone(),
            cwd: cwd.clone(),
            env: Vec::new(),
            preload,
        }),
        Choice::Shipped(n) => {
            let s = shipped(n).ok_or_else(|| format!("no shipped adapter {n:?}"))?;
            // What must be installed (the binary, or the interpreter's library folder), and
            // how the adapter runs; the source is written to the run folder either way.
            let path = dir.join(format!("adapter-{}-{}", s.name, s.file));
            let (needs, argv, env) = match s.language {
                "rust" => {
                    let bin = libs.join("rust").join("bin").join(s.name);
                    (bin.clone(), vec![bin.display().to_string()], None)
                }
                lang => {
                    let (interpreter, var, lib) = match lang {
                        "javascript" => ("node", "NODE_PATH", libs.join("node/node_modules")),
                        _ => ("python3", "PYTHONPATH", libs.join("python")),
                    };
                    let argv = vec![interpreter.into(), path.display().to_string()];
                    (
                        lib.clone(),
                        argv,
                        Some((var.to_string(), lib.display().to_string())),
                    )
                }
            };
            if !needs.exists() {
                return Err(format!(
                    "adapter {n}: its library ({} {}) is not installed in {}: run scripts/install-adapters.sh {} (or give --adapter-libs DIR)",
                    s.package,
                    s.version,
                    needs.display(),
                    libs.display()
                ));
            }
            std::fs::write(&path, s.source).map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(AdapterSpec {
                name: s.name.to_string(),
                argv,
                cwd: dir.to_path_buf(),
                env: env.into_iter().collect(),
                preload,
            })
        }
    }
}

/// Proves that the runtime of the shipped adapter `spec` reads its wall clock through the
/// clock shim before a run shifts a client's clock: runs the interpreter (`python3`, `node`)
/// with the shim preloaded and a clock file at `path` stepped by
/// [`crate::clockfile::PROBE`], and checks the wall clock it prints. A runtime that read the
/// kernel's clock some other way would leave the plan's client clock faults without effect.
///
/// # Errors
/// One line naming the adapter, when the interpreter cannot run or its clock is not shifted.
pub fn probe_clock(spec: &AdapterSpec, path: &Path) -> Result<(), String> {
    use crate::clockfile::{host_realtime, judge_probe, ClockFile, PROBE};
    let Some(shim) = &spec.preload else {
        return Err(format!(
            "adapter {}: client clocks need the clock shim",
            spec.name
        ));
    };
    let code = match spec.argv[0].as_str() {
        "python3" => ["-c", "import time; print(time.time_ns())"],
        "node" => ["-e", "console.log(String(BigInt(Date.now()) * 1000000n))"],
        other => {
            return Err(format!(
                "adapter {}: {other:?} is not a runtime locksim can probe for its clock",
                spec.name
            ))
        }
    };
    let file = ClockFile::create(path)?;
    file.step(PROBE);
    let before = host_realtime();
    let out = Command::new(&spec.argv[0])
        .args(code)
        .env("LD_PRELOAD", shim)
        .env(crate::clockfile::ENV, &file.path)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| format!("adapter {}: cannot run {}: {e}", spec.name, spec.argv[0]))?;
    let after = host_realtime();
    let said = String::from_utf8_lossy(&out.stdout);
    let wall: i64 = said.trim().parse().map_err(|_| {
        format!(
            "adapter {}: {} printed {:?} for its wall clock",
            spec.name,
            spec.argv[0],
            said.trim()
        )
    })?;
    judge_probe(wall, before, after, PROBE).map_err(|e| {
        format!(
            "adapter {}: the clock shim is not in force in {} ({e}): its client clock faults would do nothing",
            spec.name, spec.argv[0]
        )
    })
}

/// Where the shipped adapters' libraries are by default: `LOCKSIM_ADAPTER_LIBS`, else
/// `adapters/` in the build folder of `exe` (`target/adapters` for `target/debug/locksim`).
pub fn default_libs(exe: &Path) -> PathBuf {
    if let Some(p) = std::env::var_os("LOCKSIM_ADAPTER_LIBS") {
        return PathBuf::from(p);
    }
    exe.parent()
        .and_then(Path::parent)
        .map_or_else(|| PathBuf::from("adapters"), |t| t.join("adapters"))
}

/// A line from the adapter's stdout, or its end.
enum Line {
    Text(String),
    End(Option<String>),
}

/// One answer, in Jepsen's terms.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// `"ok": true`, with the answer's other fields.
    Ok(serde_json::Map<String, Value>),
    /// `"fail": WHY`.
    Fail(String),
    /// `"info": WHY`.
    Info(String),
}

/// Reads `line` as the answer to request `id`.
///
/// # Errors
/// Not a JSON object, no or another `id`, an `error`, or none of `ok`, `fail`, `info`.
pub fn parse_answer(line: &str, id: u64) -> Result<Answer, String> {
    let shown = || {
        let mut s: String = line.chars().take(200).collect();
        if s.len() < line.len() {
            s.push('…');
        }
        s
    };
    let v: Value = serde_json::from_str(line)
        .map_err(|e| format!("printed a line that is not JSON ({e}): {:?}", shown()))?;
    let Value::Object(mut m) = v else {
        return Err(format!("printed JSON that is not an object: {}", shown()));
    };
    match m.get("id").and_then(Value::as_u64) {
        Some(got) if got == id => {}
        Some(got) => {
            return Err(format!(
                "answered out of turn: id {got} where request {id} was waiting: {}",
                shown()
            ))
        }
        None => return Err(format!("answered without an integer id: {}", shown())),
    }
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if let Some(e) = m.get("error") {
        return Err(format!("reported an error: {}", text(e)));
    }
    let kinds = ["ok", "fail", "info"]
        .iter()
        .filter(|k| m.contains_key(**k))
        .count();
    if kinds != 1 {
        return Err(format!(
            "answered with {} of ok / fail / info (exactly one, or error): {}",
            if kinds == 0 { "none" } else { "more than one" },
            shown()
        ));
    }
    if let Some(w) = m.remove("fail") {
        return Ok(Answer::Fail(text(&w)));
    }
    if let Some(w) = m.remove("info") {
        return Ok(Answer::Info(text(&w)));
    }
    match m.remove("ok") {
        Some(Value::Bool(true)) => Ok(Answer::Ok(m)),
        other => Err(format!(
            "answered \"ok\": {} (only true means done; a refusal is \"fail\")",
            other.map_or_else(String::new, |v| v.to_string())
        )),
    }
}

/// The lock client of a client process whose lock is a library behind an adapter.
pub struct AdapterLock {
    name: String,
    node: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Line>,
    next: u64,
    err: PathBuf,
    /// The request timeout, `None` for `timeout = none` (then no hang is detected: the library
    /// may wait as long as TCP does).
    timeout: Option<Duration>,
    servers: usize,
    /// `(library, version)` from `hello`.
    pub library: (String, String),
}

/// Sets `PR_SET_PDEATHSIG` in the child: the adapter dies with its client process.
fn die_with_parent(cmd: &mut Command) {
    // SAFETY: prctl is async-signal-safe; called between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

impl AdapterLock {
    /// Starts the adapter of `spec` for client `node` (named `node_name`, bound to `me`),
    /// its stderr into `err`, its wall clock from the clock file `clock` (the harness shifts
    /// it at the plan's clock faults on the node), and says `hello`.
    ///
    /// # Errors
    /// It cannot be started, or its `hello` answer is missing or wrong (one line, naming
    /// the adapter and its stderr file).
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        spec: &AdapterSpec,
        node_name: &str,
        scenario: &Scenario,
        backend: &Backend,
        me: Ipv4Addr,
        servers: &[SocketAddrV4],
        ttl: Nanos,
        err: PathBuf,
        clock: Option<&Path>,
    ) -> Result<AdapterLock, String> {
        let mut cmd = Command::new(&spec.argv[0]);
        cmd.args(&spec.argv[1..])
            .current_dir(&spec.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(
                std::fs::File::create(&err)
                    .map(Stdio::from)
                    .map_err(|e| format!("{}: {e}", err.display()))?,
            );
        for (k, v) in &spec.env {
            cmd.env(k, v);
        }
        if let Some(p) = &spec.preload {
            let pre = match std::env::var("LD_PRELOAD") {
                Ok(old) if !old.is_empty() => format!("{} {old}", p.display()),
                _ => p.display().to_string(),
            };
            cmd.env("LD_PRELOAD", pre)
                .env(locksim_bind_env(), me.to_string());
            if let Some(f) = clock {
                cmd.env(crate::clockfile::ENV, f);
            }
        }
        die_with_parent(&mut cmd);
        let mut child = cmd.spawn().map_err(|e| {
            format!(
                "adapter {} of {node_name}: cannot start {:?} in {}: {e}",
                spec.name,
                spec.argv[0],
                spec.cwd.display()
            )
        })?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let mut l = String::new();
                match r.read_line(&mut l) {
                    Ok(0) => {
                        let _ = tx.send(Line::End(None));
                        return;
                    }
                    Ok(_) => {
                        if tx.send(Line::Text(l)).is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(Line::End(Some(e.to_string())));
                        return;
                    }
                }
            }
        });
        let timeout = (backend.timeout != NO_TIMEOUT && backend.timeout > 0)
            .then(|| Duration::from_nanos(backend.timeout));
        let mut a = AdapterLock {
            name: spec.name.clone(),
            node: node_name.to_string(),
            child,
            stdin,
            lines,
            next: 0,
            err,
            timeout,
            servers: servers.len(),
            library: (String::new(), String::new()),
        };
        let servers: Vec<Value> = servers
            .iter()
            .map(|s| json!({"host": s.ip().to_string(), "port": s.port()}))
            .collect();
        let hello = json!({
            "op": "hello",
            "protocol": PROTOCOL,
            "client": node_name,
            "algorithm": scenario.algorithm,
            "servers": servers,
            "bind": me.to_string(),
            "timeout_ms": timeout.map(|t| t.as_millis() as u64),
            "ttl_ms": ttl / 1_000_000,
            "seed": scenario.seed,
            "settings": scenario.config,
        });
        match a.call(hello, Some(HELLO_LIMIT))? {
            Answer::Ok(m) => {
                let field = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                a.library = (field("library"), field("version"));
                Ok(a)
            }
            Answer::Fail(w) | Answer::Info(w) => {
                Err(a.broke("hello", &format!("refused hello: {w}")))
            }
        }
    }

    /// One line naming the adapter, what broke and its stderr (the file and its last lines).
    fn broke(&mut self, what: &str, why: &str) -> String {
        let tail = std::fs::read_to_string(&self.err)
            .ok()
            .map(|t| {
                let lines: Vec<&str> = t.lines().filter(|l| !l.trim().is_empty()).collect();
                lines[lines.len().saturating_sub(3)..].join(" | ")
            })
            .filter(|t| !t.is_empty())
            .map_or_else(|| " is empty".to_string(), |t| format!(" ends: {t}"));
        let file = self
            .err
            .file_name()
            .map_or_else(String::new, |f| f.to_string_lossy().into_owned());
        format!(
            "adapter `{}` of {} {why}, at request {what}; its stderr ({file}){tail}",
            self.name, self.node
        )
    }

    /// Sends `req` (its `id` added) and waits for the answer: up to `limit` of time this
    /// process was running (a `SIGSTOP` of the node stops the count), or forever.
    fn call(&mut self, mut req: Value, limit: Option<Duration>) -> Result<Answer, String> {
        let id = self.next;
        self.next += 1;
        req["id"] = json!(id);
        let what = format!("{id} ({})", req["op"].as_str().unwrap_or("?"));
        let mut line = req.to_string();
        line.push('\n');
        let sent = self
            .stdin
            .as_mut()
            .map(|s| s.write_all(line.as_bytes()).and_then(|_| s.flush()));
        if let Some(Err(e)) = sent {
            let status = self.exit_status();
            return Err(self.broke(&what, &format!("cannot be written to ({e}){status}")));
        }
        let mut waited = Duration::ZERO;
        let tick = Duration::from_millis(100);
        loop {
            let before = Instant::now();
            match self.lines.recv_timeout(tick) {
                Ok(Line::Text(l)) => {
                    let l = l.trim_end_matches(['\n', '\r']);
                    return parse_answer(l, id).map_err(|why| self.broke(&what, &why));
                }
                Ok(Line::End(e)) => {
                    let status = self.exit_status();
                    let why = match e {
                        Some(e) => format!("closed its stdout ({e}){status}"),
                        None => format!("closed its stdout without an answer{status}"),
                    };
                    return Err(self.broke(&what, &why));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(self.broke(&what, "lost its stdout reader"))
                }
                Err(RecvTimeoutError::Timeout) => {
                    // A wait much longer than the tick is this process being stopped: count
                    // only a tick of it.
                    waited += before.elapsed().min(tick * 2);
                    if let Some(limit) = limit {
                        if waited > limit {
                            return Err(self.broke(
                                &what,
                                &format!(
                                    "did not answer within {} s: it hangs",
                                    limit.as_secs_f64()
                                ),
                            ));
                        }
                    }
                }
            }
        }
    }

    /// `: it exited (STATUS)` once it has exited (waiting up to a second), or nothing.
    fn exit_status(&mut self) -> String {
        for _ in 0..100 {
            if let Ok(Some(st)) = self.child.try_wait() {
                return format!(": it exited ({st})");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        String::new()
    }

    /// The limit of a lock request: the timeout plus [`HANG_GRACE`], or none.
    fn limit(&self) -> Option<Duration> {
        self.timeout.map(|t| t + HANG_GRACE)
    }

    /// Stops the client process: the adapter broke the protocol (see the module docs).
    fn fatal(&mut self, msg: String) -> ! {
        eprintln!("error: {msg}");
        let _ = self.child.kill();
        std::process::exit(EXIT_ADAPTER);
    }

    /// One acquire attempt of `key` for `ttl` ns. The deadline is the library's
    /// `validity_ms` from the answer, else `ttl` after the request was sent, on the client's
    /// monotonic clock; a one-server service's grant is recorded at the `ok`.
    pub fn acquire(&mut self, host: &dyn Host, key: u32, ttl: Nanos) -> Outcome<Grant> {
        let asked = host.now(LocalClock::Mono);
        let req = json!({"op": "acquire", "key": key, "ttl_ms": ttl / 1_000_000});
        let limit = self.limit();
        match self.call(req, limit) {
            Ok(Answer::Ok(m)) => {
                let token = match m.get("token") {
                    None | Some(Value::Null) => None,
                    Some(v) => match v.as_u64() {
                        Some(t) => Some(t),
                        None => {
                            let msg = self.broke(
                                "acquire",
                                &format!("gave a token that is not a non-negative integer: {v}"),
                            );
                            self.fatal(msg)
                        }
                    },
                };
                let until = match m.get("validity_ms").and_then(Value::as_f64) {
                    Some(v) => host
                        .now(LocalClock::Mono)
                        .saturating_add((v * 1e6).clamp(i64::MIN as f64, i64::MAX as f64) as i64),
                    None => asked.saturating_add(ttl as i64),
                };
                if self.servers == 1 {
                    host.granted(host.true_time(), 0, key, token);
                }
                Outcome::Ok(Grant {
                    owner: 0,
                    token,
                    deadline: (LocalClock::Mono, until),
                    etcd: None,
                    row: None,
                    zk: None,
                })
            }
            Ok(Answer::Fail(w)) => Outcome::Fail(w),
            Ok(Answer::Info(w)) => Outcome::Unknown(w),
            Err(msg) => self.fatal(msg),
        }
    }

    /// Releases `key`.
    pub fn release(&mut self, key: u32) -> Outcome<()> {
        let limit = self.limit();
        match self.call(json!({"op": "release", "key": key}), limit) {
            Ok(Answer::Ok(_)) => Outcome::Ok(()),
            Ok(Answer::Fail(w)) => Outcome::Fail(w),
            Ok(Answer::Info(w)) => Outcome::Unknown(w),
            Err(msg) => self.fatal(msg),
        }
    }
}

impl Drop for AdapterLock {
    /// Closes its stdin (the protocol's end) and gives it half a second to exit.
    fn drop(&mut self) {
        self.stdin.take();
        for _ in 0..50 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The variable the shim reads the source address from (`locksim-clockshim`'s `bind::ENV`).
fn locksim_bind_env() -> &'static str {
    "LOCKSIM_BIND_ADDR"
}

impl crate::backend::Lock for AdapterLock {
    fn acquire(&mut self, host: &dyn Host, key: u32, _owner: u64, ttl: Nanos) -> Outcome<Grant> {
        AdapterLock::acquire(self, host, key, ttl)
    }
    fn release(&mut self, _host: &dyn Host, key: u32, _grant: &Grant) -> Outcome<()> {
        AdapterLock::release(self, key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_read_back_and_every_malformed_one_is_an_error() {
        assert_eq!(
            parse_answer(r#"{"id":3,"fail":"held"}"#, 3),
            Ok(Answer::Fail("held".into()))
        );
        assert_eq!(
            parse_answer(r#"{"id":3,"info":"TimeoutError: timed out"}"#, 3),
            Ok(Answer::Info("TimeoutError: timed out".into()))
        );
        let Ok(Answer::Ok(m)) = parse_answer(r#"{"id":3,"ok":true,"token":7}"#, 3) else {
            panic!("an ok answer")
        };
        assert_eq!(m["token"], 7);
        for (line, says) in [
            ("not json", "not JSON"),
            ("[1,2]", "not an object"),
            (r#"{"id":4,"ok":true}"#, "out of turn: id 4 where request 3"),
            (r#"{"ok":true}"#, "without an integer id"),
            (r#"{"id":3}"#, "none of ok / fail / info"),
            (r#"{"id":3,"ok":true,"fail":"x"}"#, "more than one"),
            (r#"{"id":3,"ok":false}"#, "only true means done"),
            (
                r#"{"id":3,"error":"unknown op"}"#,
                "reported an error: unknown op",
            ),
        ] {
            let e = parse_answer(line, 3).unwrap_err();
            assert!(e.contains(says), "{line}: {e}");
        }
    }

    #[test]
    fn choices_name_their_adapter_and_its_servers() {
        assert!(Choice::Shipped("redis-py".into()).check("central").is_ok());
        let e = Choice::Shipped("redis-py".into())
            .check("redlock")
            .unwrap_err();
        assert!(e.contains("algorithm = \"central\""), "{e}");
        let e = Choice::Shipped("nope".into()).check("central").unwrap_err();
        assert!(
            e.contains("no such adapter") && e.contains("redis-py"),
            "{e}"
        );
        let e = Choice::Command {
            argv: vec![],
            cwd: ".".into(),
        }
        .check("central")
        .unwrap_err();
        assert!(e.contains("empty"), "{e}");
    }

    #[test]
    fn a_plain_delete_release_is_refused_for_a_library_that_releases_its_own_way() {
        let mut s = Scenario {
            seed: 0,
            algorithm: "central".into(),
            config: Default::default(),
            cluster: locksim_core::Cluster {
                servers: 1,
                clients: 2,
            },
            workload: locksim_core::Workload::default(),
            fault_kinds: vec![],
            faults: locksim_core::fault::FaultPlan::new(vec![]),
        };
        let redis_py = Choice::Shipped("redis-py".into());
        assert_eq!(check_scenario(&s, &redis_py, false), Ok(()));
        s.config.insert("timeout".into(), "none".into());
        assert_eq!(check_scenario(&s, &redis_py, false), Ok(()));
        s.config.insert("release".into(), "delete".into());
        let e = check_scenario(&s, &redis_py, false).unwrap_err();
        assert!(
            e.starts_with("adapter redis-py: `release = \"delete\"`") && e.contains("built-in"),
            "{e}"
        );
    }

    #[test]
    fn shipped_versions_are_the_pinned_ones() {
        let pins = include_str!("../adapters/requirements.txt");
        let node = include_str!("../adapters/node/package.json");
        let rust = include_str!("../adapters/redlock-rs/Cargo.toml");
        let rust_lock = include_str!("../adapters/redlock-rs/Cargo.lock");
        for s in SHIPPED {
            let pinned = match s.language {
                "rust" => {
                    rust.contains(&format!("{} = \"={}\"", s.package, s.version))
                        && rust_lock.contains(&format!(
                            "name = \"{}\"\nversion = \"{}\"",
                            s.package, s.version
                        ))
                        && s.source
                            .contains(&format!("\"version\": \"{}\"", s.version))
                }
                "python" => pins
                    .lines()
                    .map(|l| l.split(['#', ';']).next().unwrap_or("").trim())
                    .any(|l| l == format!("{}=={}", s.package, s.version)),
                _ => node.contains(&format!("\"{}\": \"{}\"", s.package, s.version)),
            };
            assert!(pinned, "{} {} is not pinned", s.package, s.version);
            assert!(
                s.source.contains(s.package) || s.source.contains(s.name),
                "{}",
                s.name
            );
        }
    }
}
