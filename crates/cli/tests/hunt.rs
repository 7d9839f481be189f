//! `locksim hunt` at its edges: the follow-ups of issue #51 that testers of `hunt` found, a
//! test each.

use std::path::{Path, PathBuf};

mod common;
use common::{locksim, stderr, stdout};

/// A fresh temporary folder for one test.
fn temp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("locksim-hunt-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Bad input: exit 2, one line on stderr (nothing ran, so no progress either) containing
/// every `needles`, nothing on stdout.
fn rejects(args: &[&str], needles: &[&str]) {
    let o = locksim(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(err.starts_with("error: "), "{args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: `{n}` missing from: {err}");
    }
    assert!(o.stdout.is_empty(), "{args:?}: printed to stdout on error");
}

/// `hunt --json` of redlock under crash-restart for S1, unshrunk, into `dir`: its JSON object.
fn hunt_redlock(dir: &Path) -> serde_json::Value {
    let d = dir.to_string_lossy();
    let o = locksim(&[
        "hunt",
        "--algo",
        "redlock",
        "--faults",
        "crash-restart",
        "--property",
        "S1",
        "--budget",
        "200",
        "--no-shrink",
        "--json",
        "--out-dir",
        &d,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("one JSON object")
}

#[test]
fn hunt_never_loses_a_find_to_a_trace_of_the_same_name() {
    let dir = temp("clash");
    let first = hunt_redlock(&dir);
    let own = PathBuf::from(first["trace"].as_str().expect("a trace"));
    assert_eq!(first["trace_reused"], false);
    assert!(first["trace_clash"].is_null());
    // The same hunt again: the identical trace is kept, and said to be.
    let again = hunt_redlock(&dir);
    assert_eq!(again["trace"], first["trace"]);
    assert_eq!(again["trace_reused"], true);
    // A hunt with other --faults wrote a trace of the same digest under that name: its
    // fault_kinds differ. The find goes beside it, and the other trace stays as it was.
    let mut other: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&own).unwrap()).unwrap();
    other["scenario"]["fault_kinds"] = serde_json::json!(["crash-restart", "pause"]);
    let other_text = serde_json::to_string_pretty(&other).unwrap() + "\n";
    std::fs::write(&own, &other_text).unwrap();
    let beside = hunt_redlock(&dir);
    let path = beside["trace"].as_str().expect("a trace, not a lost find");
    assert_eq!(
        path,
        own.with_file_name(format!(
            "{}-2.json",
            own.file_stem().unwrap().to_string_lossy()
        ))
        .to_string_lossy()
    );
    assert_eq!(beside["trace_reused"], false);
    assert_eq!(beside["trace_clash"], first["trace"]);
    assert_eq!(std::fs::read_to_string(&own).unwrap(), other_text);
    let r = locksim(&["replay", path]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    // The text report names both files.
    let d = dir.to_string_lossy();
    let o = locksim(&[
        "hunt",
        "--algo",
        "redlock",
        "--faults",
        "crash-restart",
        "--property",
        "S1",
        "--budget",
        "200",
        "--no-shrink",
        "--out-dir",
        &d,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains(&format!("trace: {path} ")), "{out}");
    assert!(
        out.contains("an identical trace was already there"),
        "{out}"
    );
    assert!(
        out.contains(&format!("note: {} holds a different trace", own.display())),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hunt_refuses_an_out_dir_it_cannot_make_before_any_run() {
    let dir = temp("outdir");
    std::fs::create_dir_all(&dir).unwrap();
    // A name longer than any file system takes: create_dir_all fails, even for root.
    let bad = dir.join("x".repeat(300));
    let b = bad.to_string_lossy();
    // A budget that would take minutes: refused at once, with one line (no progress).
    rejects(
        &[
            "hunt",
            "--algo",
            "central",
            "--budget",
            "1000000",
            "--out-dir",
            &b,
        ],
        &["--out-dir", &b, "cannot create it"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hunt_can_run_the_last_seed_u64_max() {
    let dir = temp("lastseed");
    let d = dir.to_string_lossy();
    let max = u64::MAX.to_string();
    let o = locksim(&[
        "hunt",
        "--algo",
        "central-fencing",
        "--faults",
        "partition",
        "--first-seed",
        &max,
        "--budget",
        "1",
        "--json",
        "--no-shrink",
        "--out-dir",
        &d,
    ]);
    assert_ne!(o.status.code(), Some(2), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert_eq!(v["runs"], 1);
    assert_eq!(v["first_seed"].as_u64(), Some(u64::MAX));
    // Two runs from u64::MAX - 1 end at u64::MAX; three would pass it.
    let o = locksim(&[
        "hunt",
        "--algo",
        "central-fencing",
        "--faults",
        "partition",
        "--first-seed",
        &(u64::MAX - 1).to_string(),
        "--budget",
        "2",
        "--json",
        "--no-shrink",
        "--out-dir",
        &d,
    ]);
    assert_ne!(o.status.code(), Some(2), "{}", stderr(&o));
    rejects(
        &[
            "hunt",
            "--algo",
            "central",
            "--first-seed",
            &(u64::MAX - 1).to_string(),
            "--budget",
            "3",
        ],
        &["64 bits", "at most 2 runs"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hunt_memory_refusal_never_prints_two_equal_sizes() {
    // central's run is estimated a little over 16 MiB; 17,000,000 bytes (16.2 MiB) is below
    // it, and both round up to 17 MiB.
    let o = locksim(&[
        "hunt",
        "--algo",
        "central",
        "--budget",
        "3",
        "--jobs",
        "1",
        "--max-memory",
        "17000000",
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let between = |from: &str, to: &str| -> String {
        let rest = &err[err.find(from).expect(from) + from.len()..];
        rest[..rest.find(to).expect(to)].to_string()
    };
    let need = between("needs about ", " by the estimate");
    let limit = between("more than --max-memory ", ":");
    assert_ne!(need, limit, "{err}");
    assert!(limit.contains("17000000 bytes"), "{err}");
}

#[test]
fn hunt_without_faults_proves_nothing() {
    // (--out-dir is made before the search: a temporary one, not tests' cwd's traces/.)
    let dir = temp("none");
    let d = dir.to_string_lossy();
    let o = locksim(&[
        "hunt",
        "--algo",
        "central",
        "--faults",
        "none",
        "--budget",
        "5",
        "--json",
        "--no-shrink",
        "--out-dir",
        &d,
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("warning: no fault took effect in any of the 5 runs (--faults none"),
        "{}",
        stderr(&o)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert_eq!(
        (v["found"].as_bool(), v["runs_with_faults"].as_u64()),
        (Some(false), Some(0))
    );
    // A swarm search with no kinds to draw from would be the random search, said otherwise.
    rejects(
        &[
            "hunt",
            "--algo",
            "central",
            "--faults",
            "none",
            "--search",
            "swarm",
            "--budget",
            "5",
            "--out-dir",
            &d,
        ],
        &["--search swarm", "none", "--search random"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}
