//! This crate's own `locksim` (`src/bin/tiny-locksim.rs`): its algorithms are known by name to
//! every subcommand, its scenario files pass, its kept trace replays, and its messages name it.

use std::path::Path;
use std::process::Command;

/// Runs the binary with `args` in the crate's folder; returns (exit code, stdout + stderr).
fn tiny(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tiny-locksim"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("tiny-locksim runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn list_shows_the_crates_algorithms_beside_the_built_in_ones() {
    let (code, out) = tiny(&["list", "--json"]);
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let names: Vec<&str> = v["algorithms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    for n in ["central", "raft-lease", "tiny-lease", "tiny-lease-careless"] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
}

#[test]
fn run_judges_a_seed_and_names_bad_settings() {
    let (code, out) = tiny(&[
        "run",
        "--algo",
        "tiny-lease-careless",
        "--faults",
        "none",
        "--seed",
        "0",
        "--set",
        "writes=3",
    ]);
    assert_eq!(
        code, 1,
        "careless clients double-grant without faults:\n{out}"
    );
    assert!(out.contains("VIOLATED S1"), "{out}");
    let (code, out) = tiny(&[
        "run",
        "--algo",
        "tiny-lease",
        "--seed",
        "0",
        "--set",
        "timeout=soon",
    ]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("tiny-lease: `timeout`"), "{out}");
}

#[test]
fn the_crates_scenario_files_meet_their_expectations() {
    let (code, out) = tiny(&["campaign", "sims/"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("0 failed their expectation"), "{out}");
}

#[test]
fn the_kept_trace_replays_by_name_and_shrink_names_this_binary() {
    let kept: Vec<String> = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("traces"))
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .filter(|p| p.ends_with(".json"))
        .collect();
    assert!(!kept.is_empty(), "a kept trace");
    let mut args = vec!["replay"];
    args.extend(kept.iter().map(String::as_str));
    let (code, out) = tiny(&args);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("ok "), "{out}");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("tiny-shrink");
    let _ = std::fs::remove_dir_all(&dir);
    let (code, out) = tiny(&[
        "shrink",
        "--algo",
        "tiny-lease-careless",
        "--faults",
        "none",
        "--seed",
        "0",
        "--set",
        "writes=3",
        "--out-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("replay it with: tiny-locksim replay"), "{out}");
}
