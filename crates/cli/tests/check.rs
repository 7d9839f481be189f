//! `locksim check`: budgets and their validation, the explanation of a non-linearizable
//! history as text, JSON and a page, and the page's refusal to replace other files. Uses the
//! shared histories (`../shared/data/histories`); skips with a note when they are missing.

use std::path::PathBuf;

mod common;
use common::{locksim, text};

fn histories() -> Option<PathBuf> {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/histories");
    if d.is_dir() {
        Some(d)
    } else {
        eprintln!("NOTE: {} is missing; skipping", d.display());
        None
    }
}

fn temp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("locksim-check-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn bad_budgets_are_refused_with_one_line_and_exit_2() {
    let Some(d) = histories() else { return };
    let f = d.join("etcd/etcd_001.log");
    let f = f.to_str().unwrap();
    for (flag, value, needle) in [
        ("--timeout", "1e20", "--timeout"),
        ("--timeout", "nan", "--timeout"),
        ("--timeout", "-3", "--timeout"),
        ("--timeout", "0", "--timeout"),
        ("--max-memory", "0", "--max-memory"),
        ("--threads", "0", "--threads"),
    ] {
        let arg = format!("{flag}={value}");
        let o = locksim(&["check", "--model", "etcd", &arg, f]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flag} {value}: {err}");
        assert_eq!(err.lines().count(), 1, "{flag} {value}: {err}");
        assert!(err.contains(needle) && !err.contains("panicked"), "{err}");
    }
}

#[test]
fn a_failing_history_is_explained_in_text_and_json() {
    let Some(d) = histories() else { return };
    let f = d.join("etcd/etcd_001.log");
    let o = locksim(&["check", "--model", "etcd", f.to_str().unwrap()]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("not linearizable"), "{out}");
    assert!(out.contains("longest linearizable prefix has"), "{out}");
    assert!(out.contains("none of these can take effect next"), "{out}");
    // The model's words: what was read and what the register held.
    assert!(
        out.contains("returned") && out.contains("but the register holds"),
        "{out}"
    );
    let o = locksim(&["check", "--model", "etcd", "--json", f.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["verdict"], "not_linearizable");
    let x = &v["explanation"];
    let prefix = x["prefix"].as_array().unwrap();
    let stuck = x["stuck"].as_array().unwrap();
    assert_eq!(prefix.len(), v["prefix"].as_array().unwrap().len());
    assert!(!stuck.is_empty());
    assert_eq!(stuck.len(), v["reasons"].as_array().unwrap().len());
    for s in stuck {
        assert!(s["reason"].as_str().unwrap().contains("but"), "{s}");
    }
    // Every prefix step says the state after it; every operation is drawn with an outcome.
    assert!(prefix.iter().all(|p| p["state"].is_string()));
    let ops = x["ops"].as_array().unwrap();
    assert!(
        ops.iter().any(|o| o["outcome"] == "info"),
        "etcd_001 has timeouts"
    );
    assert!(ops.iter().any(|o| o["outcome"] == "fail"), "and failed CAS");
}

#[test]
fn c50_bad_answers_on_one_thread() {
    // On one thread a hard part first used to run until memory ran out; now a cheap failing
    // part answers within a small deterministic step budget on a single thread.
    let Some(d) = histories() else { return };
    let f = d.join("kv/c50-bad.txt");
    let o = locksim(&[
        "check",
        "--model",
        "kv",
        "--threads",
        "1",
        "--max-memory",
        "64",
        "--json",
        f.to_str().unwrap(),
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["verdict"], "not_linearizable", "{v}");
    assert!(v["configs"].as_u64().unwrap() < 1_000_000, "{v}");
}

#[test]
fn a_tight_memory_budget_gives_unknown_with_the_reason() {
    let Some(d) = histories() else { return };
    let f = d.join("kv/c50-ok.txt");
    let o = locksim(&[
        "check",
        "--model",
        "kv",
        "--max-memory",
        "1",
        f.to_str().unwrap(),
    ]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(3), "{out}");
    assert!(
        out.contains("unknown") && out.contains("memory budget"),
        "{out}"
    );
}

#[test]
fn html_draws_the_reasons_and_keeps_other_files() {
    let Some(d) = histories() else { return };
    let dir = temp("html");
    let page = dir.join("why.html");
    let f = d.join("kv/c10-bad.txt");
    let f = f.to_str().unwrap();
    let o = locksim(&[
        "check",
        "--model",
        "kv",
        "--html",
        page.to_str().unwrap(),
        f,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    // The reason is in the page's text, not only in its script's data.
    let body = &html[..html.find("<script").unwrap()];
    assert!(body.contains("Why it is not linearizable"), "{body}");
    assert!(body.contains("but the key holds"), "{body}");
    // Self-contained: nothing to fetch.
    assert!(!html.contains(" src=") && !html.contains("<link"), "{html}");
    // A page locksim wrote is replaced; another file is not, unless --force.
    let o = locksim(&[
        "check",
        "--model",
        "kv",
        "--html",
        page.to_str().unwrap(),
        f,
    ]);
    assert_eq!(o.status.code(), Some(1));
    let other = dir.join("notes.html");
    std::fs::write(&other, "my notes").unwrap();
    let o = locksim(&[
        "check",
        "--model",
        "kv",
        "--html",
        other.to_str().unwrap(),
        f,
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--force"), "{}", text(&o.stderr));
    assert!(o.stdout.is_empty(), "refused before checking");
    assert_eq!(std::fs::read_to_string(&other).unwrap(), "my notes");
    let o = locksim(&[
        "check",
        "--model",
        "kv",
        "--force",
        "--html",
        other.to_str().unwrap(),
        f,
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(std::fs::read_to_string(&other)
        .unwrap()
        .contains("locksim render"));
    std::fs::remove_dir_all(&dir).ok();
}
