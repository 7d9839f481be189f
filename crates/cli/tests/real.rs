//! `locksim real` against real servers on loopback. Each test that needs a real service
//! prints why it skips when the binary is missing; CI installs redis-server and nftables and
//! sets `LOCKSIM_REAL_REQUIRED`, which turns a skip into a failure. The tests run one at a
//! time (real runs share the 127.0.0.N addresses).
//!
//! The seven `shipped_*_agree_with_the_simulator` tests run every file of `sims/real/` on real
//! servers (about eleven minutes, nearly all of it waiting on them) and are `#[ignore]`d, so
//! that `cargo test --workspace` stays minutes long: `cargo test -p locksim-cli --test real --
//! --include-ignored` runs them, and CI does (in the background, beside its CPU-bound steps).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

mod common;
use common::{locksim, text};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn have(tool: &str, why: &str) -> bool {
    let ok = Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok && std::env::var_os("LOCKSIM_REAL_REQUIRED").is_some() {
        panic!("`{tool}` is missing but LOCKSIM_REAL_REQUIRED is set (CI installs it)");
    }
    if !ok {
        eprintln!("SKIPPED: `{tool}` is not installed ({why}); `apt-get install redis-server etcd-server nftables` runs it");
    }
    ok
}

fn sims() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../sims/real")
}

/// A scratch file in this test process's folder; the folders of earlier test processes that
/// have exited are removed first (they cannot remove their own: the tests share it).
fn temp(name: &str, body: &str) -> PathBuf {
    for e in std::fs::read_dir(std::env::temp_dir())
        .into_iter()
        .flatten()
        .flatten()
    {
        let n = e.file_name().to_string_lossy().into_owned();
        if let Some(pid) = n
            .strip_prefix("locksim-real-test-")
            .and_then(|p| p.parse::<u32>().ok())
        {
            if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let d = std::env::temp_dir().join(format!("locksim-real-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

const BASE: &str =
    "seeds = 1\nexpect = \"safe\"\n[settings]\nclients = 2\nttl = \"1s\"\nduration = \"1s\"\n";

/// Bad input is one line and exit 2, before anything starts (no server needed).
#[test]
fn what_real_mode_cannot_run_is_one_line_and_exit_2() {
    let cases = [
        ("ap.toml", "algorithm = \"ap-lock\"\nfaults = [\"none\"]\n", "", "ap-lock"),
        (
            "raft-step.toml",
            "algorithm = \"raft-lease\"\n",
            "[[fault]]\nat = \"0s\"\ntype = \"clock_step\"\nnode = \"n1\"\ndelta = \"20s\"\n",
            // Built with etcd: an etcd member's clock cannot be faulted; without: the feature.
            if cfg!(feature = "etcd") {
                "etcd member"
            } else {
                "--features etcd"
            },
        ),
        (
            "delay.toml",
            "algorithm = \"redlock\"\n",
            "[[fault]]\nat = \"0s\"\ntype = \"delay\"\nfrom = \"c1\"\nto = \"servers\"\nmin = \"1ms\"\nmax = \"2ms\"\nduration = \"1s\"\n",
            "fault #1 (delay, line 8)",
        ),
        (
            "step.toml",
            "algorithm = \"redlock\"\n",
            "[[fault]]\nat = \"0s\"\ntype = \"clock_step\"\nnode = \"n1\"\ndelta = \"20s\"\n",
            "clock shim",
        ),
        (
            "db-step.toml",
            "algorithm = \"db-lease\"\n",
            "[[fault]]\nat = \"0s\"\ntype = \"clock_step\"\nnode = \"n1\"\ndelta = \"20s\"\n",
            "PostgreSQL server",
        ),
        (
            "repl.toml",
            "algorithm = \"redis-failover\"\nfaults = [\"none\"]\n",
            "repl_delay = \"2s\"\n",
            "`repl_delay = 2s` cannot run for real",
        ),
        (
            "xact.toml",
            "algorithm = \"pg-advisory\"\nfaults = [\"none\"]\n",
            "xact = true\n",
            "`xact = true` cannot run for real",
        ),
        (
            "db-knob.toml",
            "algorithm = \"db-lease\"\nfaults = [\"none\"]\n",
            "time_source = \"sundial\"\n",
            "time_source",
        ),
        (
            "adapter-name.toml",
            "algorithm = \"central\"\nfaults = [\"none\"]\n",
            "[real]\nclient = \"nope\"\n",
            "no such adapter (shipped: redis-py",
        ),
        (
            "adapter-algo.toml",
            "algorithm = \"redlock\"\nfaults = [\"none\"]\n",
            "[real]\nclient = \"redis-py\"\n",
            "needs the servers of algorithm = \"central\"",
        ),
        (
            "adapter-clock.toml",
            "algorithm = \"central\"\n",
            "[real]\nclient = \"redis-py\"\n[[fault]]\nat = \"0s\"\ntype = \"clock_drift\"\nnode = \"c1\"\nppm = 500\n",
            "clock_drift on client c1: the clock shim shifts a library's wall clock only",
        ),
        (
            "adapter-own-clock.toml",
            "algorithm = \"central\"\n",
            "[real]\nclient_command = [\"python3\", \"mine.py\"]\n[[fault]]\nat = \"0s\"\ntype = \"clock_step\"\nnode = \"c1\"\ndelta = \"1s\"\n",
            "client clocks are shifted only for the shipped adapters",
        ),
        (
            "adapter-clock-shim.toml",
            "algorithm = \"central\"\n",
            "[real]\nclient = \"redis-py\"\n[[fault]]\nat = \"0s\"\ntype = \"clock_step\"\nnode = \"c1\"\ndelta = \"1s\"\n",
            "clock_step on client c1 needs liblocksim_clockshim.so",
        ),
        (
            "adapter-net.toml",
            "algorithm = \"central\"\n",
            "[real]\nclient = \"redis-py\"\n[[fault]]\nat = \"0s\"\ntype = \"partition\"\na = \"c1\"\nb = \"n1\"\nduration = \"1s\"\n",
            "network faults need liblocksim_clockshim.so",
        ),
    ];
    let f = temp(
        "cmp.toml",
        &format!("algorithm = \"central\"\nfaults = [\"none\"]\n{BASE}"),
    );
    let o = locksim(&[
        "real",
        "--compare",
        f.to_str().unwrap(),
        "--trace",
        "/tmp/x.json",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("--trace records one real run"));
    for (name, head, faults, needle) in cases {
        let f = temp(name, &format!("{head}{BASE}{faults}"));
        // Without the clock shim a server's clock cannot be faulted.
        let o = Command::new(env!("CARGO_BIN_EXE_locksim"))
            .args(["real", f.to_str().unwrap()])
            .env("LOCKSIM_CLOCKSHIM", "/nonexistent/liblocksim_clockshim.so")
            .output()
            .unwrap();
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
        assert!(err.contains(needle), "{name}: {err}");
    }
}

/// The shipped scenarios: real runs and simulated seeds violate the same properties.
#[test]
#[ignore = "runs real servers for minutes: `cargo test -p locksim-cli --test real -- --include-ignored`"]
fn shipped_redis_scenarios_agree_with_the_simulator() {
    let _g = serial();
    if !have("redis-server", "real Redis scenarios") || !have("nft", "nftables network faults") {
        return;
    }
    // (file, violated on both sides, violated on neither)
    let cases = [
        ("redlock-pause.toml", &["S1", "S2"][..], &["S4"][..]),
        ("central-fencing-pause.toml", &["S1"][..], &["S2", "S4"][..]),
        ("central-crash.toml", &["S1", "S2"][..], &["S4"][..]),
        (
            "central-fencing-delayed-write.toml",
            &[][..],
            &["S1", "S2", "S4"][..],
        ),
        (
            "central-oneway-handshake.toml",
            &[][..],
            &["S1", "S2", "S3", "S4"][..],
        ),
        // Kleppmann's delayed packet: both TCPs retransmit the black-holed write after the heal.
        ("central-delayed-write.toml", &["S2"][..], &["S1", "S4"][..]),
        // The same from a killed client: its kernel's orphan socket sends the write.
        (
            "central-crashed-client-write.toml",
            &["S2"][..],
            &["S1", "S4"][..],
        ),
        // A client without a timeout acts on a grant whose answer came after the lease.
        (
            "central-timeout-none.toml",
            &["S1", "S2"][..],
            &["S3", "S4"][..],
        ),
        // A plain DEL from a holder paused past its TTL deletes the next holder's key.
        (
            "central-release-delete.toml",
            &["S1", "S2", "S4"][..],
            &[][..],
        ),
    ];
    let shim = Path::new(env!("CARGO_BIN_EXE_locksim")).with_file_name("liblocksim_clockshim.so");
    // S2 there needs c1's third write to land after c2's first, a margin of tens of ms (real S2
    // in 4 of 5 runs): two runs need not show it, and `agree` still fails on a sim-optimistic S2.
    let clock_step = ("redlock-clock-step.toml", &["S1"][..], &["S4"][..]);
    let cases: Vec<_> = if shim.is_file() {
        cases.into_iter().chain([clock_step]).collect()
    } else if std::env::var_os("LOCKSIM_REAL_REQUIRED").is_some() {
        panic!(
            "{} is missing (cargo build -p locksim-clockshim)",
            shim.display()
        );
    } else {
        eprintln!(
            "SKIPPED: redlock-clock-step.toml needs {} (cargo build -p locksim-clockshim)",
            shim.display()
        );
        cases.to_vec()
    };
    for (file, both, neither) in cases {
        agree(file, both, neither);
    }
}

/// `locksim real --compare FILE --runs 2`: every property in `both` is violated on both sides,
/// every one in `neither` on neither, and the real side had grants.
fn agree(file: &str, both: &[&str], neither: &[&str]) {
    let f = sims().join(file);
    let o = locksim(&[
        "real",
        "--compare",
        f.to_str().unwrap(),
        "--runs",
        "2",
        "--json",
    ]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{file}: {out}{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_str(&out).expect(&out);
    assert_eq!(v["agree"], true, "{file}: {v}");
    assert_eq!(v["sim_optimistic"], serde_json::json!([]), "{file}: {v}");
    assert!(v["real_grants"].as_u64().unwrap() > 0, "{file}: {v}");
    // `each` has one entry per run and seed, and its counts are the rows' counts.
    let each = v["each"].as_array().expect("each");
    assert_eq!(each.len(), 4, "{file}: {v}");
    let count = |side: &str, p: &str| {
        each.iter()
            .filter(|e| e["side"] == side)
            .filter(|e| e["violated"].as_array().unwrap().iter().any(|x| x == p))
            .count() as u64
    };
    for row in v["properties"].as_array().unwrap() {
        let p = row["property"].as_str().unwrap();
        let (real, sim) = (row["real"].as_u64().unwrap(), row["sim"].as_u64().unwrap());
        if p != "grants" {
            assert_eq!(
                (count("real", p), count("sim", p)),
                (real, sim),
                "{file}: {p}: {v}"
            );
        }
        if both.contains(&p) {
            assert!(
                real > 0 && sim > 0,
                "{file}: {p} should be violated on both sides: {v}"
            );
        }
        if neither.contains(&p) {
            assert!(
                real == 0 && sim == 0,
                "{file}: {p} should hold on both sides: {v}"
            );
        }
    }
}

/// A knob real mode refuses says why in `locksim list --json` (`real` on the knob), and the
/// refusal of a file that sets it (exit 2, before any server starts) gives the same reason.
#[test]
fn list_says_why_real_mode_refuses_a_knob_as_the_refusal_does() {
    let o = locksim(&["list", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&text(&o.stdout)).expect("list --json");
    let knob = |algo: &str, key: &str| {
        v["algorithms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == algo)
            .and_then(|a| {
                a["settings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|s| s["key"] == key)
                    .cloned()
            })
            .unwrap_or_else(|| panic!("{algo} has no knob {key}"))
    };
    let note = knob("pg-advisory", "xact")["real"]
        .as_str()
        .expect("xact's real note")
        .to_string();
    assert!(note.starts_with("refused when true: "), "{note}");
    // What real mode now runs carries no note.
    for key in ["timeout", "release"] {
        assert_eq!(knob("central", key).get("real"), None, "central {key}");
    }
    let dir = std::env::temp_dir().join(format!("locksim-refused-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("pg-advisory-xact.toml");
    std::fs::write(
        &f,
        "algorithm = \"pg-advisory\"\nseeds = 1\nexpect = \"safe\"\nfaults = [\"none\"]\n[settings]\nxact = true\n",
    )
    .unwrap();
    let o = locksim(&["real", f.to_str().unwrap()]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let why = note.trim_start_matches("refused when true: ");
    assert!(
        err.contains("`xact = true` cannot run for real: ") && err.contains(why),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `sims/real/FILE` once with `--trace`, asserts exit `code` (0 safe, 1 violated), and
/// returns the record's events.
fn real_trace(file: &str, code: i32) -> Vec<serde_json::Value> {
    let tag = file.trim_end_matches(".toml");
    let trace = std::env::temp_dir().join(format!(
        "locksim-real-test-{tag}-{}.json",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&trace);
    let f = sims().join(file);
    let o = locksim(&[
        "real",
        f.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(code),
        "{file}: {}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let _ = std::fs::remove_file(&trace);
    t["events"]
        .as_array()
        .expect("a real record embeds its events")
        .clone()
}

/// PostgreSQL's server as `locksim real` finds it: Debian's `/usr/lib/postgresql/N/bin` (not on
/// `PATH`), else `postgres` on `PATH`.
fn have_postgres() -> bool {
    let debian = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| e.path().join("bin/postgres").is_file() && e.path().join("bin/initdb").is_file());
    debian || have("postgres", "db-lease on real PostgreSQL")
}

/// `db-lease` (ShedLock's row) on a real PostgreSQL server: the skewed client clock's double
/// grants on both sides at seed 0 (same draws: c3 takes the held row), none with the database's
/// clock, and none across a database crash and restart (the committed row survives; the
/// service's records are read back from the restarted server).
#[test]
#[ignore = "runs real servers for minutes: `cargo test -p locksim-cli --test real -- --include-ignored`"]
fn shipped_postgres_scenarios_agree_with_the_simulator() {
    let _g = serial();
    if !have_postgres() {
        return;
    }
    agree("db-lease-client-clock-ahead.toml", &["S1", "S3"], &["S4"]);
    agree("db-lease-db-time.toml", &[], &["S1", "S2", "S3", "S4"]);
    agree("db-lease-db-crash.toml", &[], &["S1", "S2", "S3", "S4"]);
    // A paused database grants nothing until it resumes. Its backends each call setsid(), so
    // a pause that stopped only the postmaster's process group left them serving.
    let events = real_trace("db-lease-db-pause.toml", 0);
    let time_of = |ty: &str| {
        events
            .iter()
            .find(|e| e["type"] == ty)
            .and_then(|e| e["time"].as_u64())
            .unwrap_or_else(|| panic!("no {ty} event: {events:?}"))
    };
    let (from, to) = (time_of("fault"), time_of("fault_end"));
    let grants: Vec<u64> = events
        .iter()
        .filter(|e| e["type"] == "grant")
        .map(|e| e["time"].as_u64().unwrap())
        .collect();
    assert!(
        grants.iter().any(|&g| g < from) && grants.iter().any(|&g| g >= to),
        "{grants:?}"
    );
    assert!(
        grants.iter().all(|&g| g < from || g >= to),
        "grants while the database was paused ({from}..{to} ns): {grants:?}"
    );
}

/// `pg-advisory` through a real PgBouncer: transaction pooling grants session locks twice (by
/// reentrancy on a shared backend); a pooler restart ends the holder's session under it, and
/// a fencing token from a `lock_tokens` row refuses its late writes.
#[test]
#[ignore = "runs real servers for minutes: `cargo test -p locksim-cli --test real -- --include-ignored`"]
fn shipped_pgbouncer_scenarios_agree_with_the_simulator() {
    let _g = serial();
    if !have_postgres() || !have("pgbouncer", "pg-advisory behind PgBouncer") {
        return;
    }
    agree(
        "pg-advisory-transaction-pooling.toml",
        &["S1", "S2", "S3"],
        &["S4"],
    );
    agree(
        "pg-advisory-pooler-restart.toml",
        &["S1", "S2", "S3"],
        &["S4"],
    );
    agree(
        "pg-advisory-pooler-restart-fencing.toml",
        &["S1", "S3"],
        &["S2", "S4"],
    );
}

/// Ctrl-C during a PostgreSQL run: exit 130, no server (nor any of its backends), client or
/// resource left, no folder (its data directory belongs to the server's user).
#[test]
fn interrupting_a_postgres_run_leaves_no_server_behind() {
    let _g = serial();
    if !have_postgres() {
        return;
    }
    let before = real_dirs();
    // The server, the resource and three clients.
    let (status, kids, dirs) = interrupt(2, &before, "db-lease-db-time.toml", 5);
    assert_eq!(status.code(), Some(130), "{status}");
    // Five processes, and the server's own (its checkpointer, writer, a backend per client).
    assert!(
        kids.len() > 5,
        "the server had no child processes: {kids:?}"
    );
    assert_eq!(settle(&kids), Vec::<u32>::new(), "processes left");
    for d in dirs {
        assert!(!d.exists(), "{} left", d.display());
    }
}

/// ZooKeeper's server as `locksim real` runs it: Debian's jar, with `java` on `PATH`.
fn have_zookeeper() -> bool {
    let jar = std::path::Path::new("/usr/share/java/zookeeper.jar").is_file();
    if !jar && std::env::var_os("LOCKSIM_REAL_REQUIRED").is_some() {
        panic!("ZooKeeper (/usr/share/java/zookeeper.jar) is missing but LOCKSIM_REAL_REQUIRED is set (CI installs it)");
    }
    if !jar {
        eprintln!("SKIPPED: ZooKeeper is not installed (`apt-get install zookeeper` runs it)");
        return false;
    }
    have("java", "ZooKeeper's JVM")
}

/// `zookeeper` on a real three-member ensemble with the Curator-style recipe: a holder paused
/// past its session timeout overlaps the next holder on both sides, its stale write is fenced
/// by its node's sequence number (and lands without fencing), and the real leader's isolation
/// breaks nothing.
#[test]
#[ignore = "runs real servers for minutes: `cargo test -p locksim-cli --test real -- --include-ignored`"]
fn shipped_zookeeper_scenarios_agree_with_the_simulator() {
    let _g = serial();
    if !have_zookeeper() || !have("nft", "nftables network faults") {
        return;
    }
    agree("zookeeper-pause.toml", &["S1"], &["S2", "S4"]);
    agree("zookeeper-pause-unfenced.toml", &["S1", "S2"], &["S4"]);
    agree(
        "zookeeper-leader-isolation.toml",
        &[],
        &["S1", "S2", "S3", "S4"],
    );
}

/// Ctrl-C during a ZooKeeper run: exit 130, no member JVM, client or resource left, no folder.
#[test]
fn interrupting_a_zookeeper_run_leaves_no_member_behind() {
    let _g = serial();
    if !have_zookeeper() {
        return;
    }
    let before = real_dirs();
    // Three members, the resource and two clients.
    let (status, kids, dirs) = interrupt(2, &before, "zookeeper-pause.toml", 6);
    assert_eq!(status.code(), Some(130), "{status}");
    assert!(
        kids.len() >= 6,
        "fewer processes than the run has: {kids:?}"
    );
    assert_eq!(settle(&kids), Vec::<u32>::new(), "processes left");
    for d in dirs {
        assert!(!d.exists(), "{} left", d.display());
    }
}

/// `redis-failover` on real Redis replicas and a real Sentinel: the cut-off primary's holder
/// overlaps the holder the promoted replica grants, and `WAIT 1` prevents it.
#[test]
#[ignore = "runs real servers for minutes: `cargo test -p locksim-cli --test real -- --include-ignored`"]
fn shipped_sentinel_scenarios_agree_with_the_simulator() {
    let _g = serial();
    if !have("redis-server", "Redis with Sentinel") || !have("nft", "nftables network faults") {
        return;
    }
    // Both sides double-grant. A real run in which Sentinel promoted nobody would exit 3
    // (`agree` asks for 0): 2 of 10 had none while Sentinel started with the run's 1 s
    // down-after (it aborted a failover in its first second and then waited 6 min).
    agree("redis-failover-split-brain.toml", &["S1"], &["S4"]);
    agree(
        "redis-failover-split-brain-wait.toml",
        &[],
        &["S1", "S2", "S3", "S4"],
    );
    // A primary paused past down_after resumes a primary (Sentinel sends a down master
    // nothing, and converts it only ~10 s after it returns): its holder goes on there while
    // the promoted replica grants the others. The model demoted it on resume (a false SAFE).
    agree(
        "redis-failover-paused-primary.toml",
        &["S1", "S2", "S3"],
        &["S4"],
    );
    agree(
        "redis-failover-paused-primary-wait.toml",
        &[],
        &["S1", "S2", "S3", "S4"],
    );
    // A killed primary back empty while Sentinel fails over: clients sent there before the
    // promotion is announced are granted beside the promoted replica. Back after it: the
    // holder's ended connection makes it ask Sentinel again, and nobody is sent to the empty
    // old primary (the model went there: S1-S3 in every seed).
    agree(
        "redis-failover-killed-primary-back-during-failover.toml",
        &["S1", "S2", "S3"],
        &["S4"],
    );
    agree(
        "redis-failover-killed-primary-back-late.toml",
        &[],
        &["S1", "S2", "S3", "S4"],
    );
    // Sentinel's own +switch-master is in the record: a replica (n2 or n3) leads from after
    // the cut on.
    let events = real_trace("redis-failover-split-brain.toml", 1);
    let cut = events
        .iter()
        .find(|e| e["type"] == "fault")
        .and_then(|e| e["time"].as_u64())
        .expect("the cut");
    let leads: Vec<(u64, u64)> = events
        .iter()
        .filter(|e| e["type"] == "leader")
        .map(|e| (e["node"].as_u64().unwrap(), e["time"].as_u64().unwrap()))
        .collect();
    assert!(
        leads.iter().any(|&(n, t)| (n == 1 || n == 2) && t > cut),
        "no promotion of a replica after the cut at {cut} ns: {leads:?}"
    );
}

/// `--keep-logs` keeps and lists every server's log: the three Redis nodes' and Sentinel's.
#[test]
fn keep_logs_lists_every_servers_log() {
    let _g = serial();
    if !have("redis-server", "Redis with Sentinel") || !have("nft", "nftables network faults") {
        return;
    }
    let f = sims().join("redis-failover-split-brain-wait.toml");
    let o = locksim(&["real", f.to_str().unwrap(), "--keep-logs"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let logs: Vec<&str> = err
        .lines()
        .filter_map(|l| l.trim().strip_prefix("server log: "))
        .collect();
    for n in ["n1", "n2", "n3", "n4"] {
        let want = format!("/{n}/redis.log");
        let log = logs.iter().find(|l| l.ends_with(&want));
        let log = log.unwrap_or_else(|| panic!("no {want} in {logs:?}: {err}"));
        let body = std::fs::read_to_string(log).unwrap_or_default();
        assert!(!body.is_empty(), "{log} is empty");
    }
    // Sentinel's log (n4) is the one that says what it did to the primary.
    let sentinel = logs.iter().find(|l| l.ends_with("/n4/redis.log")).unwrap();
    let body = std::fs::read_to_string(sentinel).unwrap();
    assert!(body.contains("+monitor"), "{body}");
    let kept = std::path::Path::new(sentinel)
        .parent()
        .unwrap()
        .parent()
        .unwrap();
    let _ = std::fs::remove_dir_all(kept);
}

/// The etcd scenarios (`raft-lease`), in a locksim built with `--features etcd`.
#[test]
#[ignore = "runs real servers for minutes: `cargo test -p locksim-cli --test real -- --include-ignored`"]
fn shipped_etcd_scenarios_agree_with_the_simulator() {
    if !cfg!(feature = "etcd") {
        eprintln!(
            "SKIPPED: this locksim was built without --features etcd (raft-lease on real etcd); \
             `cargo test -p locksim-cli --features etcd --test real` runs it (CI does)"
        );
        return;
    }
    let _g = serial();
    if !have("etcd", "real etcd scenarios") || !have("nft", "nftables network faults") {
        return;
    }
    agree("raft-lease-pause.toml", &["S1"], &["S2", "S4"]);
    agree(
        "raft-lease-leader-isolation.toml",
        &[],
        &["S1", "S2", "S3", "S4"],
    );
    // The isolation is real: the members elect another leader, which records the grants made
    // from then on (grants are recorded on the leader the answering member names; after the
    // heal the old leader, whose log fell behind, cannot win an election back). Before
    // members' own connections carried their address, no rule matched their Raft traffic and
    // the isolated leader went on leading.
    let events = real_trace("raft-lease-leader-isolation.toml", 0);
    let iso = events
        .iter()
        .find(|e| e["type"] == "fault" && e["fault"]["type"] == "isolate")
        .expect("the leader was found and isolated");
    let (cut, from) = (
        iso["fault"]["node"].as_u64().unwrap(),
        iso["time"].as_u64().unwrap(),
    );
    // From one second after the cut (etcd's election timeout here is 200 ms) to the end.
    let during: Vec<u64> = events
        .iter()
        .filter(|e| e["type"] == "grant")
        .filter(|e| e["time"].as_u64().unwrap() >= from + 1_000_000_000)
        .map(|e| e["node"].as_u64().unwrap())
        .collect();
    assert!(
        !during.is_empty(),
        "no grant after the leader was cut off: {events:?}"
    );
    assert!(
        during.iter().all(|&n| n != cut),
        "the isolated member n{} still recorded grants: {during:?}",
        cut + 1
    );
}

/// A real run in which nobody was granted the lock proves nothing: exit 3, said on stderr.
#[test]
fn a_real_run_without_grants_exits_3() {
    let _g = serial();
    if !have("redis-server", "real Redis") || !have("nft", "nftables network faults") {
        return;
    }
    let body = format!(
        "algorithm = \"central\"\n{BASE}\
         [[fault]]\nat = \"0s\"\ntype = \"isolate\"\nnode = \"n1\"\nduration = \"2s\"\nmode = \"reset\"\n"
    );
    let f = temp("nogrant.toml", &body);
    let o = locksim(&["real", f.to_str().unwrap()]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{}{err}", text(&o.stdout));
    assert!(err.contains("no client was granted the lock"), "{err}");
}

fn nft_tables() -> String {
    text(
        &Command::new("nft")
            .args(["list", "tables"])
            .output()
            .map(|o| o.stdout)
            .unwrap_or_default(),
    )
}

/// Partitions, resets and loss are nftables rules that exist only during the run.
#[test]
fn network_faults_are_applied_and_removed() {
    let _g = serial();
    if !have("redis-server", "real Redis") || !have("nft", "nftables network faults") {
        return;
    }
    let body = format!(
        "algorithm = \"redlock\"\n{BASE}\
         [[fault]]\nat = \"200ms\"\ntype = \"isolate\"\nnode = \"n1\"\nduration = \"1s\"\nmode = \"reset\"\n\
         [[fault]]\nat = \"300ms\"\ntype = \"partition\"\na = \"c1\"\nb = [\"n2\", \"n3\"]\nduration = \"500ms\"\n\
         [[fault]]\nat = \"300ms\"\ntype = \"loss\"\nfrom = \"c2\"\nto = \"servers\"\nrate_pct = 30\nduration = \"500ms\"\n"
    );
    let f = temp("net.toml", &body);
    let trace = f.with_extension("json");
    let _ = std::fs::remove_file(&trace);
    let o = locksim(&[
        "real",
        f.to_str().unwrap(),
        "--json",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    let out = text(&o.stdout);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{out}{}",
        text(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(&out).expect(&out);
    assert_eq!(v["real"], true);
    assert!(v["grants"].as_u64().unwrap() > 0, "nobody was granted: {v}");
    assert!(
        !nft_tables().contains("locksim_"),
        "a table is left: {}",
        nft_tables()
    );
    // The record is marked real: replay refuses it, render draws its events.
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    assert!(t["real"].as_str().unwrap().contains("Redis server"), "{t}");
    let faults = t["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "fault")
        .count();
    assert_eq!(faults, 3, "{t}");
    let r = locksim(&["replay", trace.to_str().unwrap()]);
    assert_eq!(r.status.code(), Some(2));
    assert!(text(&r.stderr).contains("real run"), "{}", text(&r.stderr));
    let page = trace.with_extension("html");
    let _ = std::fs::remove_file(&page);
    let r = locksim(&[
        "render",
        trace.to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(0), "{}", text(&r.stderr));
    assert!(std::fs::metadata(&page).unwrap().len() > 1000);
}

/// The processes whose parent is `pid`.
fn children(pid: u32) -> Vec<u32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) {
            // pid (comm) state ppid …: comm may hold spaces, so split after the last ')'.
            let rest = stat.rsplit_once(')').map_or("", |r| r.1);
            if rest.split_whitespace().nth(1) == Some(&pid.to_string()) {
                v.push(p);
            }
        }
    }
    v
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit_once(')')
            .is_some_and(|r| r.1.trim_start().starts_with('Z'))
    })
}

fn real_dirs() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("locksim-real-")
                && p.is_dir()
        })
        .filter(|p| !p.to_string_lossy().contains("-test-"))
        .collect();
    v.sort();
    v
}

/// Starts a real run, waits until its servers and clients are up, sends `sig`; returns the
/// harness's exit status and the processes it had started.
fn interrupt(
    sig: i32,
    dirs_before: &[PathBuf],
    file: &str,
    processes: usize,
) -> (std::process::ExitStatus, Vec<u32>, Vec<PathBuf>) {
    let f = sims().join(file);
    let mut child = Command::new(env!("CARGO_BIN_EXE_locksim"))
        .args(["real", f.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let mut kids = Vec::new();
    while kids.len() < processes && started.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
        kids = children(child.id());
    }
    assert!(
        kids.len() >= processes,
        "the run never started its processes: {kids:?}"
    );
    std::thread::sleep(Duration::from_millis(300));
    // And their children (a PostgreSQL server's backends), as they are at the signal.
    let grandchildren: Vec<u32> = kids.iter().flat_map(|&k| children(k)).collect();
    kids.extend(grandchildren);
    let new_dirs: Vec<PathBuf> = real_dirs()
        .into_iter()
        .filter(|d| !dirs_before.contains(d))
        .collect();
    assert!(!new_dirs.is_empty(), "no temporary folder seen");
    // SAFETY: signalling our own child.
    unsafe { libc_kill(child.id() as i32, sig) };
    let status = child.wait().unwrap();
    (status, kids, new_dirs)
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

fn settle(pids: &[u32]) -> Vec<u32> {
    let t = Instant::now();
    loop {
        let left: Vec<u32> = pids.iter().copied().filter(|&p| alive(p)).collect();
        if left.is_empty() || t.elapsed() > Duration::from_secs(5) {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Ctrl-C (and SIGTERM) mid-run: exit 130, no server or client left, no temporary folder.
/// A SIGKILL of the harness still takes every process it started with it.
#[test]
fn interrupting_the_harness_leaves_no_process_and_no_folder() {
    let _g = serial();
    if !have("redis-server", "real Redis") {
        return;
    }
    for sig in [2, 15] {
        let before = real_dirs();
        // Five masters, the resource and two clients.
        let (status, kids, dirs) = interrupt(sig, &before, "redlock-pause.toml", 8);
        assert_eq!(status.code(), Some(130), "signal {sig}: {status}");
        assert_eq!(
            settle(&kids),
            Vec::<u32>::new(),
            "signal {sig}: processes left"
        );
        for d in dirs {
            assert!(
                !Path::new(&d).exists(),
                "signal {sig}: {} left",
                d.display()
            );
        }
    }
    let before = real_dirs();
    let (_, kids, dirs) = interrupt(9, &before, "redlock-pause.toml", 8);
    assert_eq!(settle(&kids), Vec::<u32>::new(), "SIGKILL: processes left");
    // A killed harness cannot remove its folder: the next run sweeps it away.
    assert!(dirs.iter().all(|d| d.exists()), "{dirs:?}");
    let f = sims().join("central-fencing-pause.toml");
    let o = locksim(&["real", f.to_str().unwrap(), "--json"]);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        text(&o.stderr)
    );
    for d in dirs {
        assert!(!d.exists(), "{} was not swept", d.display());
    }
}

/// Ctrl-C during an etcd run: exit 130, no etcd member, client or resource left, no folder.
#[test]
fn interrupting_an_etcd_run_leaves_no_member_behind() {
    if !cfg!(feature = "etcd") {
        eprintln!("SKIPPED: built without --features etcd (CI runs it with the feature)");
        return;
    }
    let _g = serial();
    if !have("etcd", "real etcd") {
        return;
    }
    let before = real_dirs();
    // Three members, the resource and two clients.
    let (status, kids, dirs) = interrupt(2, &before, "raft-lease-pause.toml", 6);
    assert_eq!(status.code(), Some(130), "{status}");
    assert_eq!(settle(&kids), Vec::<u32>::new(), "processes left");
    for d in dirs {
        assert!(!d.exists(), "{} left", d.display());
    }
}

/// The keys of client node `node`'s acquires, in order, from a `--json --events` history.
fn acquire_keys(v: &serde_json::Value, node: u64) -> Vec<u64> {
    v["history"]["events"]
        .as_array()
        .expect("--events gives the history")
        .iter()
        .filter(|e| e["node"] == node && e["type"] == "op")
        .filter(|e| e["f"] == "acquire" && e["phase"] == "invoke")
        .map(|e| e["key"].as_u64().unwrap())
        .collect()
}

/// Seed N of a real run draws the workload of simulated seed N: one client (every acquire is
/// granted, so each round draws a new key), five keys; the keys it asks for, round by round,
/// are the same on both sides (before, the real client had its own derivation and drew its
/// owner values from the workload stream: the sequences agreed on nothing).
#[test]
fn seed_n_draws_the_same_workload_as_simulated_seed_n() {
    let _g = serial();
    if !have("redis-server", "real Redis") {
        return;
    }
    let body = "algorithm = \"central\"\nfaults = [\"none\"]\nseeds = 1\nexpect = \"safe\"\n\
                [settings]\nclients = 1\nkeys = 5\nttl = \"1s\"\nduration = \"1500ms\"\n\
                writes = 1\nwork_min = \"5ms\"\nwork_max = \"20ms\"\nthink_max = \"40ms\"\n";
    let f = temp("draws.toml", body);
    for seed in ["3", "11"] {
        let sim = locksim(&[
            "run",
            f.to_str().unwrap(),
            "--seed",
            seed,
            "--json",
            "--events",
        ]);
        assert_eq!(sim.status.code(), Some(0), "{}", text(&sim.stderr));
        let real = locksim(&[
            "real",
            f.to_str().unwrap(),
            "--seed",
            seed,
            "--json",
            "--events",
        ]);
        assert_eq!(real.status.code(), Some(0), "{}", text(&real.stderr));
        let parse = |o: &std::process::Output| -> serde_json::Value {
            serde_json::from_str(&text(&o.stdout)).expect("JSON")
        };
        // c1 is node 1 (one server, n1 = node 0).
        let (s, r) = (
            acquire_keys(&parse(&sim), 1),
            acquire_keys(&parse(&real), 1),
        );
        let n = s.len().min(r.len());
        assert!(
            n >= 8,
            "seed {seed}: too few rounds to compare: {s:?} / {r:?}"
        );
        assert_eq!(s[..n], r[..n], "seed {seed}: simulated / real keys");
        assert!(
            s[..n].iter().any(|&k| k != s[0]),
            "seed {seed}: one key only"
        );
    }
}

/// A fault's interval in the history lies inside the time its rule is in force: with an `nft`
/// that takes 400 ms to return, a partition due at 300 ms is recorded at 700 ms or later
/// (once its rule is in), and its heal (due at 600 ms, reached after the injection's nft) is
/// recorded before the second nft call starts removing the rule, not 400 ms later.
#[test]
fn a_network_fault_is_recorded_after_nft_returns() {
    let _g = serial();
    if !have("redis-server", "real Redis") || !have("nft", "nftables network faults") {
        return;
    }
    let real_nft = String::from_utf8(
        Command::new("sh")
            .args(["-c", "command -v nft"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let dir =
        std::env::temp_dir().join(format!("locksim-real-test-slownft-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let wrapper = dir.join("nft");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n[ \"$1\" = -f ] && sleep 0.4\nexec {} \"$@\"\n",
            real_nft.trim()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let body = format!(
        "algorithm = \"central\"\n{BASE}\
         [[fault]]\nat = \"300ms\"\ntype = \"partition\"\na = \"c1\"\nb = \"res\"\nduration = \"300ms\"\n"
    );
    let f = temp("slownft.toml", &body);
    let trace = f.with_extension("json");
    let _ = std::fs::remove_file(&trace);
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new(env!("CARGO_BIN_EXE_locksim"))
        .args([
            "real",
            f.to_str().unwrap(),
            "--trace",
            trace.to_str().unwrap(),
        ])
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let time = |ty: &str| {
        t["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["type"] == ty)
            .unwrap_or_else(|| panic!("no {ty} event: {t}"))["time"]
            .as_u64()
            .unwrap()
    };
    let (cut, healed) = (time("fault"), time("fault_end"));
    assert!(cut >= 700_000_000, "the partition was recorded at {cut} ns");
    assert!(
        healed >= cut && healed < cut + 300_000_000,
        "healed at {healed} ns, cut at {cut} ns"
    );
    let _ = std::fs::remove_file(&trace);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A clock shim that does not load (here: a file that is no library, which the loader skips
/// with a warning) stops the run with one line and exit 2, before the clients start; before,
/// the server's clock never moved and the run said SAFE.
#[test]
fn a_clock_shim_that_does_not_load_stops_the_run() {
    let _g = serial();
    if !have("redis-server", "real Redis") {
        return;
    }
    let body = format!(
        "algorithm = \"central\"\n{BASE}\
         [[fault]]\nat = \"200ms\"\ntype = \"clock_step\"\nnode = \"n1\"\ndelta = \"2s\"\n"
    );
    let f = temp("badshim.toml", &body);
    let not_a_library = temp("liblocksim_clockshim.so", "not an ELF file\n");
    let o = Command::new(env!("CARGO_BIN_EXE_locksim"))
        .args(["real", f.to_str().unwrap()])
        .env("LOCKSIM_CLOCKSHIM", &not_a_library)
        .output()
        .unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}{err}", text(&o.stdout));
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("clock shim") && err.contains("not in force"),
        "{err}"
    );
    // The real shim passes the same probe and the run goes on.
    let shim = Path::new(env!("CARGO_BIN_EXE_locksim")).with_file_name("liblocksim_clockshim.so");
    if shim.is_file() {
        let o = Command::new(env!("CARGO_BIN_EXE_locksim"))
            .args(["real", f.to_str().unwrap()])
            .env("LOCKSIM_CLOCKSHIM", &shim)
            .output()
            .unwrap();
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{}",
            text(&o.stderr)
        );
    }
}

/// The delayed write (Kleppmann's delayed packet) with the simulator on `network = "datagram"`:
/// real TCP retransmits the black-holed write after the heal and real Redis shows S2 in every
/// run, while the datagram network drops it: `--compare` reports S2 as sim-optimistic, on its
/// own line and in its own field, and exits 1. (With the default TCP model the two sides agree:
/// `shipped_redis_scenarios_agree_with_the_simulator`.)
#[test]
fn a_property_only_real_runs_violate_is_sim_optimistic_and_exits_1() {
    let _g = serial();
    if !have("redis-server", "real Redis") || !have("nft", "nftables network faults") {
        return;
    }
    let shipped = std::fs::read_to_string(sims().join("central-delayed-write.toml")).unwrap();
    assert!(shipped.contains("\n[settings]\n"), "{shipped}");
    let dir = std::env::temp_dir().join(format!("locksim-sim-optimistic-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("central-delayed-write-datagram.toml");
    std::fs::write(
        &f,
        shipped.replace("\n[settings]\n", "\n[settings]\nnetwork = \"datagram\"\n"),
    )
    .unwrap();
    let o = locksim(&[
        "real",
        "--compare",
        f.to_str().unwrap(),
        "--runs",
        "3",
        "--json",
    ]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_str(&out).expect(&out);
    assert_eq!(v["sim_optimistic"], serde_json::json!(["S2"]), "{v}");
    assert_eq!(v["agree"], false, "{v}");
    let s2 = v["properties"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["property"] == "S2")
        .unwrap();
    assert_eq!(
        (s2["real"].as_u64(), s2["real_runs"].as_u64()),
        (Some(3), Some(3)),
        "{v}"
    );
    assert_eq!(s2["sim"].as_u64(), Some(0), "{v}");
    // 3 of 3 against 0 of 3: Fisher's p = 0.1, not below 0.05: sim-optimistic, not "differs".
    assert!((s2["p"].as_f64().unwrap() - 0.1).abs() < 1e-9, "{v}");
    assert_eq!(s2["differs"], false, "{v}");
    let ci = s2["real_ci"].as_array().unwrap();
    assert!(
        ci[0].as_f64().unwrap() > 0.3 && ci[1].as_f64().unwrap() == 1.0,
        "{v}"
    );
    // The text says it on a line of its own.
    let o = locksim(&["real", "--compare", f.to_str().unwrap(), "--runs", "1"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let t = text(&o.stdout);
    assert!(
        t.lines().any(|l| l.starts_with("SIM_OPTIMISTIC: S2:")),
        "{t}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Where `locksim real` finds the shipped adapters' libraries in these tests: the build
/// folder's `adapters/` (`scripts/install-adapters.sh target/adapters`, as `.ci/run` does).
fn have_adapter_libs() -> bool {
    let libs = Path::new(env!("CARGO_BIN_EXE_locksim"))
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("adapters");
    let ok = libs.join("python").is_dir()
        && libs.join("node").is_dir()
        && libs.join("rust/bin/redlock-rs").is_file();
    if !ok && std::env::var_os("LOCKSIM_REAL_REQUIRED").is_some() {
        panic!(
            "{} has no adapter libraries but LOCKSIM_REAL_REQUIRED is set (CI runs scripts/install-adapters.sh target/adapters)",
            libs.display()
        );
    }
    if !ok {
        eprintln!(
            "SKIPPED: no adapter libraries in {} (scripts/install-adapters.sh target/adapters)",
            libs.display()
        );
    }
    ok
}

/// Real lock libraries behind the shipped adapters: the same properties violated as by the
/// built-in model of their algorithm in the simulator.
#[test]
#[ignore = "runs real servers for minutes: `cargo test -p locksim-cli --test real -- --include-ignored`"]
fn shipped_adapters_agree_with_the_simulator() {
    let _g = serial();
    if !have("redis-server", "real Redis scenarios") || !have_adapter_libs() {
        return;
    }
    agree("redis-py-pause.toml", &["S1", "S2"], &["S4"]);
    agree("python-redis-lock-pause.toml", &["S1", "S2"], &["S4"]);
    agree("pottery-pause.toml", &["S1", "S2"], &["S4"]);
    agree("redlock-rs-pause.toml", &["S1", "S2"], &["S4"]);
    if have("node", "the Node.js adapters") {
        agree("node-redlock-pause.toml", &["S1", "S2"], &["S4"]);
    }
    // kazoo's token is its znode's sequence number: the resource fences the paused holder.
    if have_zookeeper() {
        agree("kazoo-pause.toml", &["S1"], &["S2", "S4"]);
    }
}

/// An adapter that dies, prints garbage, answers out of turn, hangs or reports an error
/// stops the run without a verdict (exit 4), naming the adapter and its stderr, which is kept.
#[test]
fn a_broken_adapter_stops_the_run_without_a_verdict() {
    let _g = serial();
    if !have("redis-server", "real Redis scenarios") || !have("python3", "adapters") {
        return;
    }
    let broken = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/adapters/broken.py");
    for (mode, says) in [
        (
            "crash",
            "closed its stdout without an answer: it exited (exit status: 3)",
        ),
        ("garbage", "printed a line that is not JSON"),
        ("out-of-turn", "answered out of turn"),
        ("error", "reported an error: boom"),
        ("hang", "did not answer within 10.1 s: it hangs"),
    ] {
        let f = temp(
            &format!("broken-{mode}.toml"),
            &format!(
                "algorithm = \"central\"\nfaults = [\"none\"]\n{BASE}timeout = \"100ms\"\n[real]\nclient_command = [\"python3\", {:?}, {mode:?}]\n",
                broken.display().to_string()
            ),
        );
        let o = locksim(&["real", f.to_str().unwrap()]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(4), "{mode}: {}{err}", text(&o.stdout));
        assert!(err.contains(says), "{mode}: {err}");
        assert!(
            // Named as the file gives it, path and all.
            err.contains(&format!(
                "adapter `python3 {} {mode}` of c1",
                broken.display()
            )),
            "{mode}: {err}"
        );
        // Its stderr is named, quoted and kept.
        assert!(
            err.contains(&format!("broken adapter: {mode}")),
            "{mode}: {err}"
        );
        let kept = err
            .split("are kept in ")
            .nth(1)
            .map(|r| PathBuf::from(r.trim()))
            .unwrap_or_else(|| panic!("{mode}: no kept folder: {err}"));
        let stderr = std::fs::read_dir(&kept)
            .unwrap()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().ends_with(".adapter.err"))
            .map(|e| std::fs::read_to_string(e.path()).unwrap())
            .unwrap_or_default();
        assert!(stderr.contains(mode), "{mode}: {}", kept.display());
        let _ = std::fs::remove_dir_all(&kept);
        // Nothing of the run is left running.
        assert!(
            !text(
                &Command::new("pgrep")
                    .args(["-f", "broken.py"])
                    .output()
                    .unwrap()
                    .stdout
            )
            .contains(char::is_numeric),
            "{mode}: an adapter is left running"
        );
    }
}

/// With network faults, an adapter connection that does not leave from its node's address
/// (here one the adapter bound to 127.0.0.1 itself) stops the run: the cuts would miss it.
#[test]
fn an_adapter_connection_from_another_address_stops_the_run() {
    let _g = serial();
    if !have("redis-server", "real Redis scenarios") || !have("nft", "nftables network faults") {
        return;
    }
    let broken = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/adapters/broken.py");
    let f = temp(
        "wrong-address.toml",
        &format!(
            "algorithm = \"central\"\n{BASE}timeout = \"100ms\"\n[real]\nclient_command = [\"python3\", {:?}, \"wrong-address\"]\n[[fault]]\nat = \"500ms\"\ntype = \"partition\"\na = \"c1\"\nb = \"n1\"\nduration = \"300ms\"\n",
            broken.display().to_string()
        ),
    );
    let o = locksim(&["real", f.to_str().unwrap()]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(4), "{}{err}", text(&o.stdout));
    assert!(
        err.contains("from 127.0.0.1, not from its node's address"),
        "{err}"
    );
}

/// A shipped adapter whose library takes whole seconds of lease is refused any other TTL
/// before anything starts (exit 2), naming the library's limit.
#[test]
fn a_ttl_the_library_cannot_take_is_refused_before_the_run() {
    let f = temp(
        "prl-ttl.toml",
        "algorithm = \"central\"\nfaults = [\"none\"]\nseeds = 1\nexpect = \"safe\"\n[settings]\nclients = 2\nttl = \"1500ms\"\nduration = \"1s\"\n[real]\nclient = \"python-redis-lock\"\n",
    );
    let o = locksim(&["real", f.to_str().unwrap()]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("ttl 1.500s") && err.contains("whole seconds"),
        "{err}"
    );
}

/// A clock step on a shipped adapter's node runs: its runtime is first proven to read the
/// shim's wall clock (a stand-in library that is not the shim fails that proof, exit 2).
#[test]
fn a_client_clock_step_reaches_a_shipped_adapter_or_the_run_is_refused() {
    let _g = serial();
    if !have("redis-server", "real Redis scenarios") || !have_adapter_libs() {
        return;
    }
    let f = temp(
        "adapter-clock-step.toml",
        &format!(
            "algorithm = \"central\"\n{BASE}[client.c1]\nclock_offset = \"-1h\"\n[real]\nclient = \"redis-py\"\n[[fault]]\nat = \"300ms\"\ntype = \"clock_step\"\nnode = \"c1\"\ndelta = \"2s\"\n"
        ),
    );
    let o = locksim(&["real", f.to_str().unwrap(), "--json"]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_str(&out).expect(&out);
    assert!(v["grants"].as_u64().unwrap() > 0, "{v}");
    // The C library's maths library has no clock_gettime of its own: nothing shifts.
    let not_shim = [
        "/lib/x86_64-linux-gnu/libm.so.6",
        "/usr/lib/x86_64-linux-gnu/libm.so.6",
    ]
    .into_iter()
    .find(|p| Path::new(p).is_file());
    if let Some(lib) = not_shim {
        let o = Command::new(env!("CARGO_BIN_EXE_locksim"))
            .args(["real", f.to_str().unwrap()])
            .env("LOCKSIM_CLOCKSHIM", lib)
            .output()
            .unwrap();
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains("the clock shim is not in force in python3"),
            "{err}"
        );
    }
}
