//! The `locksim` command as a user meets it: exit codes, one-line errors, JSON output.

use std::process::Command;

mod common;
use common::{locksim, stderr};

/// Bad input: exit code 2 and exactly one line on stderr that contains every `needles`.
fn rejects(args: &[&str], needles: &[&str]) {
    let o = locksim(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: not one line: {err}"
    );
    assert!(err.starts_with("error: "), "{args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: `{n}` missing from: {err}");
    }
    assert!(o.stdout.is_empty(), "{args:?}: printed to stdout on error");
}

#[test]
fn bad_input_gets_one_line_naming_the_problem_and_the_choices() {
    rejects(
        &["run", "--algo", "paxos", "--seed", "1"],
        &[
            "unknown algorithm `paxos`",
            "central, central-fencing, redlock",
        ],
    );
    rejects(
        &["campaign", "--algo", "central,chubby"],
        &["`chubby`", "redlock"],
    );
    rejects(
        &[
            "run",
            "--algo",
            "redlock",
            "--seed",
            "1",
            "--faults",
            "pause,meteor",
        ],
        &["unknown fault kind `meteor`", "clock-jump"],
    );
    rejects(
        &["campaign", "--faults", ","],
        &["empty fault list", "partition"],
    );
    rejects(
        &[
            "run",
            "--algo",
            "redlock",
            "--seed",
            "1",
            "--set",
            "masters=0",
        ],
        &["masters=0", "1 to 15"],
    );
    rejects(
        &[
            "run",
            "--algo",
            "redlock",
            "--seed",
            "1",
            "--set",
            "clock=sundial",
        ],
        &["clock=sundial", "wall or mono"],
    );
    rejects(
        &[
            "run", "--algo", "central", "--seed", "1", "--set", "ttl=soon",
        ],
        &["ttl", "duration"],
    );
    rejects(
        &["run", "--algo", "central", "--seed", "1", "--set", "ttl"],
        &["`ttl`", "key=value"],
    );
    rejects(
        &[
            "run", "--algo", "central", "--seed", "1", "--set", "quorum=3",
        ],
        &["`quorum`", "clients", "clock"],
    );
    rejects(&["campaign", "--seeds", "0"], &["--seeds"]);
    rejects(
        &["campaign", "--seeds", "878416384462359601"],
        &["--seeds", "1 to"],
    );
    rejects(&["campaign", "--jobs", "0"], &["--jobs"]);
    rejects(
        &[
            "run", "--algo", "central", "--seed", "1", "--set", "ttl=500",
        ],
        &["needs a unit", "500ms"],
    );
    rejects(
        &[
            "run",
            "--algo",
            "central",
            "--seed",
            "1",
            "--set",
            "ttl=9223372036s",
        ],
        &["longer than a day"],
    );
    rejects(
        &["run", "--algo", "central", "--seed", "1", "--set", "ttl=0"],
        &["more than zero"],
    );
    rejects(
        &[
            "run", "--algo", "redlock", "--seed", "1", "--set", "ttl=2ms",
        ],
        &["drift allowance"],
    );
    rejects(
        &[
            "run",
            "--algo",
            "redlock",
            "--seed",
            "1",
            "--set",
            "drift_factor=18446744073710",
        ],
        &["from 0 to 1"],
    );
    rejects(
        &[
            "run",
            "--algo",
            "central",
            "--seed",
            "1",
            "--set",
            "duration=2h",
        ],
        &["an hour"],
    );
    rejects(
        &["check", "--model", "etcd", "/nonexistent/history.log"],
        &["/nonexistent/history.log", "cannot read"],
    );
}

#[test]
fn a_safe_run_exits_0_and_a_violating_one_exits_1() {
    let o = locksim(&[
        "run", "--algo", "central", "--seed", "1", "--faults", "none",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("verdict: SAFE"), "{out}");
    // Seed 1 of central under pauses is the campaign's first failing seed.
    let o = locksim(&[
        "run", "--algo", "central", "--seed", "1", "--faults", "pause",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("verdict: VIOLATED S1"), "{out}");
    assert!(out.contains("FAULT pause"), "{out}");
}

#[test]
fn run_json_is_one_parseable_object_and_deterministic() {
    let args = [
        "run", "--algo", "redlock", "--seed", "3", "--faults", "mixed", "--json",
    ];
    let a = locksim(&args);
    let b = locksim(&args);
    assert_eq!(a.stdout, b.stdout, "same seed, different output");
    let v: serde_json::Value = serde_json::from_slice(&a.stdout).expect("one JSON object");
    assert_eq!(v["scenario"]["seed"], 3);
    assert_eq!(v["digest"].as_str().map(str::len), Some(32));
    assert!(v["verdict"]["violations"].is_array());
}

#[test]
fn campaign_json_has_the_documented_cells() {
    let o = locksim(&[
        "campaign",
        "--algo",
        "central,redlock",
        "--faults",
        "none,pause",
        "--seeds",
        "4",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    let cells = v["cells"].as_array().expect("cells");
    assert_eq!(cells.len(), 4);
    for c in cells {
        for field in [
            "algorithm",
            "faults",
            "seeds",
            "s1_violations",
            "s2_violations",
            "first_failing_seed",
        ] {
            assert!(c.get(field).is_some(), "missing {field} in {c}");
        }
        assert_eq!(c["seeds"], 4);
    }
    assert_eq!(cells[0]["algorithm"], "central");
    assert_eq!(cells[0]["faults"], "none");
    assert_eq!(cells[0]["first_failing_seed"], serde_json::Value::Null);
}

#[test]
fn campaign_settings_reach_the_algorithms_that_have_them() {
    // `delayed_restart` is a Redlock setting; the central lock must not reject it.
    let o = locksim(&[
        "campaign",
        "--algo",
        "central,redlock",
        "--faults",
        "none",
        "--seeds",
        "2",
        "--set",
        "delayed_restart=true",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn a_closed_pipe_is_not_a_crash() {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_locksim"))
        .args(["run", "--algo", "redlock", "--seed", "1", "--events"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
    drop(child.stdout.take());
    let status = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(!err.contains("panicked"), "{err}");
    assert_ne!(status.code(), Some(101), "{err}");
}

#[test]
fn help_teaches() {
    let o = locksim(&["campaign", "--help"]);
    let out = String::from_utf8_lossy(&o.stdout);
    for needle in ["--seeds", "--faults", "--json", "clock-jump", "--set"] {
        assert!(out.contains(needle), "campaign --help lacks {needle}");
    }
    let o = locksim(&["list"]);
    let out = String::from_utf8_lossy(&o.stdout);
    for needle in ["redlock", "delayed_restart", "renew_every", "crash-restart"] {
        assert!(out.contains(needle), "list lacks {needle}");
    }
}

#[test]
fn list_names_the_replicated_services_and_their_knobs() {
    let o = locksim(&["list"]);
    let out = String::from_utf8_lossy(&o.stdout);
    for needle in [
        "redis-failover",
        "wait_replicas",
        "consul-session",
        "lock_delay",
        "zookeeper",
        "guid+session",
    ] {
        assert!(out.contains(needle), "list lacks {needle}");
    }
}

fn histories() -> Option<std::path::PathBuf> {
    let d =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/histories");
    if d.is_dir() {
        Some(d)
    } else {
        eprintln!("NOTE: {} is missing; skipping", d.display());
        None
    }
}

#[test]
fn check_prints_one_json_line_per_file_and_exits_by_the_rules() {
    let Some(d) = histories() else { return };
    let ok = d.join("etcd/etcd_007.log");
    let bad = d.join("etcd/etcd_001.log");
    let o = locksim(&[
        "check",
        "--model",
        "etcd",
        "--json",
        ok.to_str().unwrap(),
        bad.to_str().unwrap(),
    ]);
    // One file not linearizable: a violation, exit 1 (issue #24, item 8).
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["verdict"], "linearizable");
    assert_eq!(lines[1]["verdict"], "not_linearizable");
    for l in &lines {
        assert!(
            l["ops"].as_u64().unwrap() > 50 && l["ms"].is_number() && l["file"].is_string(),
            "{l}"
        );
    }
    // A budget too short for etcd_007: unknown, undecided, exit 3.
    let o = locksim(&[
        "check",
        "--model",
        "etcd",
        "--timeout",
        "0.000001",
        ok.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("unknown"));
}

#[test]
fn check_of_a_locksim_run_reads_its_lock_operations() {
    let dir = std::env::temp_dir().join(format!("locksim-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("run.json");
    // central under clock jumps, seed 0: the server grants early (S3) in this run.
    let o = locksim(&[
        "run",
        "--algo",
        "central",
        "--seed",
        "0",
        "--faults",
        "clock-jump",
        "--json",
        "--events",
    ]);
    std::fs::write(&file, &o.stdout).unwrap();
    let run: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let s3 = run["verdict"]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .any(|v| v["kind"] == "S3");
    let o = locksim(&["check", "--model", "lock", file.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(if s3 { 1 } else { 0 }),
        "{out}{}",
        stderr(&o)
    );
    assert_eq!(out.contains("not linearizable"), s3, "{out}");
    // Without --events the history is missing: a clear error, exit 2.
    let o = locksim(&["run", "--algo", "central", "--seed", "0", "--json"]);
    std::fs::write(&file, &o.stdout).unwrap();
    let o = locksim(&["check", "--model", "lock", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--events"), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn replay_passes_the_corpus_and_flags_tampered_traces() {
    let corpus = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../traces");
    let one = std::fs::read_dir(&corpus)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .expect("a trace in traces/");
    let o = locksim(&["replay", one.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        stderr(&o)
    );
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("ok "));

    let dir = std::env::temp_dir().join(format!("locksim-replay-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(&one).unwrap();
    // A digest that does not match: exit 1, both digests and the first differing event shown.
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["digest"] = serde_json::json!("00000000000000000000000000000000");
    v["events"][3]["time"] = serde_json::json!(1);
    let tampered = dir.join("tampered.json");
    std::fs::write(&tampered, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let o = locksim(&["replay", tampered.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("FAIL") && out.contains("digest") && out.contains("event #3"),
        "{out}"
    );
    // A truncated trace: exit 2, the file and a position.
    let cut = dir.join("cut.json");
    std::fs::write(&cut, &text[..text.len() / 3]).unwrap();
    let o = locksim(&["replay", cut.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("cut.json:") && err.contains("truncated"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn shrink_writes_a_trace_that_replays() {
    let dir = std::env::temp_dir().join(format!("locksim-shrink-cli-{}", std::process::id()));
    let o = locksim(&[
        "shrink",
        "--algo",
        "central",
        "--seed",
        "1",
        "--faults",
        "pause",
        "--out-dir",
        dir.to_str().unwrap(),
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    let written: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(written.len(), 1, "{written:?}");
    assert!(written[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with("central-s1-"));
    let o = locksim(&["replay", written[0].to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    // Nothing to shrink in a safe run.
    let o = locksim(&[
        "shrink",
        "--algo",
        "central",
        "--seed",
        "1",
        "--faults",
        "none",
        "--out-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nothing to shrink"), "{}", stderr(&o));
    // An --out-dir that is a file is refused before any shrinking.
    let file = written[0].to_str().unwrap();
    let o = locksim(&[
        "shrink",
        "--algo",
        "central",
        "--seed",
        "1",
        "--faults",
        "pause",
        "--out-dir",
        file,
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("is not a directory") && !stderr(&o).contains("shrinking"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn campaign_files_fail_loudly_when_an_expectation_fails() {
    let dir = std::env::temp_dir().join(format!("locksim-sims-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("a.toml"),
        "algorithm = \"central\"\nfaults = [\"none\"]\nseeds = 4\nexpect = \"safe\"\n",
    )
    .unwrap();
    std::fs::write(dir.join("b.toml"), "name = \"wrong on purpose\"\nalgorithm = \"central\"\nfaults = [\"none\"]\nseeds = 4\nexpect = [\"S1\"]\n").unwrap();
    let o = locksim(&["campaign", dir.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("a.toml): PASS"), "{out}");
    assert!(
        out.contains("wrong on purpose") && out.contains("FAIL: expected S1"),
        "{out}"
    );
    std::fs::write(dir.join("b.toml"), "algorithm = \"central\"\nseeds = 4\n").unwrap();
    let o = locksim(&["campaign", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("b.toml") && stderr(&o).contains("missing field"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn merge_judges_sharded_campaign_files_and_refuses_mixed_runs() {
    let dir = std::env::temp_dir().join(format!("locksim-merge-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("fail.toml");
    std::fs::write(
        &file,
        "algorithm = \"central\"\nfaults = [\"pause\"]\nseeds = 20\nexpect = \"safe\"\n",
    )
    .unwrap();
    let part = |i: u32| dir.join(format!("p{i}.jsonl"));
    for i in 0..2 {
        let o = locksim(&[
            "campaign",
            file.to_str().unwrap(),
            "--shard",
            &format!("{i}/2"),
            "--out",
            part(i).to_str().unwrap(),
        ]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "a shard is judged after the merge: {}",
            stderr(&o)
        );
    }
    let o = locksim(&[
        "merge",
        part(0).to_str().unwrap(),
        part(1).to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("FAIL"));
    // A run with other settings in the same cell cannot be added in.
    let other = dir.join("other.jsonl");
    locksim(&[
        "campaign",
        "--algo",
        "redlock",
        "--faults",
        "none",
        "--seeds",
        "3",
        "--out",
        other.to_str().unwrap(),
    ]);
    let more = dir.join("more.jsonl");
    locksim(&[
        "campaign",
        "--algo",
        "redlock",
        "--faults",
        "none",
        "--seeds",
        "3",
        "--set",
        "ttl=2s",
        "--out",
        more.to_str().unwrap(),
    ]);
    let o = locksim(&["merge", other.to_str().unwrap(), more.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("different runs"), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn export_tla_writes_a_module_and_a_config_and_refuses_bad_traces() {
    let dir = std::env::temp_dir().join(format!("locksim-export-tla-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../traces/central-s3-7c028ac9.json"
    );
    let out = dir.join("Central3.tla");
    let o = locksim(&["export-tla", trace, "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let module = std::fs::read_to_string(&out).unwrap();
    assert!(module.contains("MODULE Central3") && module.contains("EXTENDS CentralTrace"));
    let cfg = std::fs::read_to_string(dir.join("Central3.cfg")).unwrap();
    assert!(cfg.contains("INVARIANT TraceNotAccepted"));

    // A module name must be an identifier; a malformed trace names the file; nothing is written.
    rejects(
        &[
            "export-tla",
            trace,
            "-o",
            dir.join("a-b.tla").to_str().unwrap(),
        ],
        &["a-b", "letters, digits and _"],
    );
    let bad = dir.join("bad.json");
    std::fs::write(
        &bad,
        "{\"format\": \"locksim-trace\", \"version\": 1, \"scenario\": 3}",
    )
    .unwrap();
    let bad_out = dir.join("Bad.tla");
    rejects(
        &[
            "export-tla",
            bad.to_str().unwrap(),
            "-o",
            bad_out.to_str().unwrap(),
        ],
        &["bad.json"],
    );
    assert!(!bad_out.exists());
    // Renewal is not in the Redlock spec yet: refused, naming the file and the field.
    let k5 = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../traces/k5-redlock-s1-b51f2c63.json"
    );
    let renewing = dir.join("k5-renewing.json");
    let text = std::fs::read_to_string(k5).unwrap();
    assert!(text.contains("\"renew_every\": null"));
    std::fs::write(
        &renewing,
        text.replace("\"renew_every\": null", "\"renew_every\": 1000000000"),
    )
    .unwrap();
    rejects(
        &[
            "export-tla",
            renewing.to_str().unwrap(),
            "-o",
            bad_out.to_str().unwrap(),
        ],
        &[
            "k5-renewing.json",
            "renew_every",
            "not in the Redlock specification",
        ],
    );
    let help = locksim(&["export-tla", "--help"]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("TraceNotAccepted"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn list_shows_the_lease_record_locks_and_their_settings() {
    let o = locksim(&["list"]);
    let out = String::from_utf8_lossy(&o.stdout);
    for needle in [
        "db-lease",
        "time_source",
        "k8s-lease",
        "expiry_duration",
        "pg-advisory",
        "pool_mode",
    ] {
        assert!(out.contains(needle), "list lacks {needle}");
    }
}

#[test]
fn all_algorithms_markdown_has_a_row_per_registered_algorithm() {
    let o = locksim(&[
        "campaign",
        "--all-algorithms",
        "--faults",
        "none,pause",
        "--seeds",
        "3",
        "--markdown",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("| `")).collect();
    assert_eq!(rows.len(), locksim_algos::ALGORITHMS.len(), "{out}");
    for (name, _) in locksim_algos::ALGORITHMS {
        assert!(
            rows.iter().any(|r| r.starts_with(&format!("| `{name}` |"))),
            "no row for {name}:\n{out}"
        );
    }
    assert!(out.contains("| `none` | `pause` |"), "{out}");
    assert!(
        out.contains("locksim campaign --all-algorithms --faults none,pause --seeds 3 --markdown")
    );
    let o = locksim(&["campaign", "--all-algorithms", "--algo", "central"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "--all-algorithms conflicts with --algo"
    );
}

#[test]
fn replay_of_a_custom_algorithms_trace_says_how_to_replay_it_from_the_users_crate() {
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/custom-lock/traces/tiny-lease-careless-s1-444963c9.json"
    );
    rejects(
        &["replay", trace],
        &[
            "`tiny-lease-careless` is not one of locksim's algorithms",
            "locksim_explore::testing::replay(",
            "LOCKSIM_REPLAY=",
        ],
    );
}

#[test]
fn merge_report_shrinks_the_first_failing_seed_from_the_scenario_a_shard_carries() {
    let dir = std::env::temp_dir().join(format!("locksim-merge-report-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let p = |f: &str| dir.join(f).to_string_lossy().into_owned();
    let matrix = ["--algo", "central", "--faults", "pause", "--seeds", "20"];
    for i in 0..2 {
        let shard = format!("{i}/2");
        let out = p(&format!("s{i}.jsonl"));
        let o = locksim(
            &[
                &["campaign"][..],
                &matrix,
                &["--shard", &shard, "--out", &out],
            ]
            .concat(),
        );
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let whole = locksim(&[&["campaign"][..], &matrix].concat());
    let merged = locksim(&[
        "merge",
        &p("s0.jsonl"),
        &p("s1.jsonl"),
        "--report",
        &p("r.html"),
    ]);
    assert!(merged.status.success(), "{}", stderr(&merged));
    assert_eq!(merged.stdout, whole.stdout, "merged summary != unsharded");
    // The matrix's settings are in no file: the trace came from the record's scenario.
    let traces: Vec<String> = std::fs::read_dir(dir.join("r-files"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    assert_eq!(traces.len(), 1, "{traces:?}");
    let report = std::fs::read_to_string(dir.join("r.html")).unwrap();
    assert!(
        report.contains(&format!("r-files/{}", traces[0])),
        "the report links the trace"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn merge_refuses_empty_files_misplaced_seeds_and_a_report_of_sweep_records() {
    let dir = std::env::temp_dir().join(format!("locksim-merge-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = |name: &str| dir.join(name).to_str().unwrap().to_string();
    std::fs::write(p("empty.jsonl"), "").unwrap();
    rejects(
        &["merge", &p("empty.jsonl")],
        &["empty.jsonl", "no records"],
    );
    rejects(
        &["merge", "--partial", &p("empty.jsonl")],
        &["empty.jsonl", "no records"],
    );
    let o = locksim(&[
        "campaign",
        "--algo",
        "central",
        "--faults",
        "pause",
        "--seeds",
        "6",
        "--shard",
        "0/2",
        "--out",
        &p("s0.jsonl"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(p("s0.jsonl")).unwrap();
    // Records come as seeds finish, in any order. Shard 0/2 of seeds 0..6 runs 0, 2, 4: seed 3
    // is another shard's, seed 99 nobody's.
    let first = text
        .lines()
        .find(|l| l.contains("\"seed\":0,"))
        .expect("seed 0's record");
    for (seed, needle) in [(3, "not one of shard 0/2's seeds"), (99, "outside")] {
        let name = format!("bad{seed}.jsonl");
        std::fs::write(
            p(&name),
            format!(
                "{text}{}\n",
                first.replace("\"seed\":0,", &format!("\"seed\":{seed},"))
            ),
        )
        .unwrap();
        rejects(
            &["merge", "--partial", &p(&name)],
            &[&format!("{name}:4"), needle],
        );
    }
    let o = locksim(&[
        "sweep",
        "--algo",
        "central",
        "--vary",
        "ttl=1s,2s",
        "--seeds",
        "2",
        "--shard",
        "0/1",
        "--out",
        &p("w.jsonl"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    rejects(
        &["merge", &p("w.jsonl"), "--report", &p("w.html")],
        &["w.jsonl:1", "merge --report draws campaign pages only"],
    );
    assert!(!dir.join("w.html").exists(), "no page written on refusal");
    rejects(
        &[
            "sweep",
            "../../sims/frontier/redlock-pause.toml",
            "--seeds",
            "5",
        ],
        &["frontier files carry their own"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn hunt_finds_shrinks_and_reports_as_json() {
    let dir = std::env::temp_dir().join(format!("locksim-hunt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.to_string_lossy().to_string();
    let args = [
        "hunt",
        "--algo",
        "redlock",
        "--faults",
        "crash-restart",
        "--property",
        "S1",
        "--budget",
        "200",
        "--json",
        "--out-dir",
        &d,
    ];
    let o = locksim(&args);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert_eq!(v["found"], true);
    assert_eq!(v["property"], "S1");
    let trace = v["trace"].as_str().expect("a trace path");
    let r = locksim(&["replay", trace]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    // No violation within the budget, faults that took effect: exit 0, `found` false. (With
    // `--faults none` it is exit 3: no fault took effect; see tests/hunt.rs.)
    let o = locksim(&[
        "hunt",
        "--algo",
        "central-fencing",
        "--faults",
        "partition",
        "--budget",
        "16",
        "--json",
        "--no-shrink",
        "--out-dir",
        &d,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert_eq!(
        (v["found"].as_bool(), v["runs"].as_u64()),
        (Some(false), Some(16))
    );
    rejects(
        &["hunt", "--algo", "central", "--budget", "0"],
        &["--budget"],
    );
    rejects(
        &["hunt", "--algo", "central", "--property", "S9"],
        &["S9", "S1"],
    );
    rejects(
        &[
            "hunt",
            "--algo",
            "central",
            "--first-seed",
            "18446744073709551610",
            "--budget",
            "20",
        ],
        &["64 bits"],
    );
    let file = dir.join("a-file");
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(&file, "x").expect("temp file");
    let under = file.join("sub").to_string_lossy().to_string();
    rejects(
        &[
            "hunt",
            "--algo",
            "central",
            "--budget",
            "2",
            "--out-dir",
            &under,
        ],
        &["is not a directory"],
    );
    // A property the algorithm never judges is refused before any run, not "not found".
    rejects(
        &[
            "hunt",
            "--algo",
            "pg-advisory",
            "--property",
            "L1",
            "--budget",
            "5",
        ],
        &["L1 is not judged for pg-advisory"],
    );
    // Faults that never take effect: nothing found proves nothing (exit 3).
    let o = locksim(&[
        "hunt",
        "--algo",
        "redlock",
        "--faults",
        "leader-change",
        "--budget",
        "8",
        "--no-shrink",
        "--out-dir",
        &d,
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no fault took effect"),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
