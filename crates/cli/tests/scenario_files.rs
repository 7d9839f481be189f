//! Scenarios written as TOML (issue #11): explicit `[[fault]]` plans, `[client.cN]` settings,
//! `run`/`shrink FILE.toml --seed N`, `--plan`, and the errors a person meets writing them.

use std::path::{Path, PathBuf};

mod common;
use common::{locksim, stderr, stdout};

/// A fresh folder for one test's files.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("locksim-scen-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

const PLAN_ONLY: &str = r#"
name = "a fixed plan"
algorithm = "central"
seeds = 20
expect = ["S1"]

[settings]
clients = 2

[[fault]]
at = "500ms"
type = "pause"
node = "c1"
duration = "1500ms"

[[fault]]
at = "3s"
type = "partition"
a = "c2"
b = ["n1"]
duration = "400ms"
mode = "reset"
"#;

/// Bad input: exit 2, one line on stderr naming the file and every needle, nothing on
/// stdout, and no file written into `dir` beyond `before`.
fn rejects(dir: &Path, args: &[&str], needles: &[&str]) {
    let before: Vec<_> = std::fs::read_dir(dir).unwrap().collect();
    let o = locksim(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: not one line: {err}"
    );
    for n in needles {
        assert!(err.contains(n), "{args:?}: `{n}` missing from: {err}");
    }
    assert!(o.stdout.is_empty(), "{args:?}: printed to stdout on error");
    let after: Vec<_> = std::fs::read_dir(dir).unwrap().collect();
    assert_eq!(before.len(), after.len(), "{args:?}: wrote a file");
}

#[test]
fn a_plan_only_file_runs_the_same_plan_in_every_seed() {
    let dir = scratch("plan");
    let file = write(&dir, "plan.toml", PLAN_ONLY);
    let out_dir = dir.join("traces");
    let mut plans = Vec::new();
    for seed in [0u64, 7, 19] {
        let o = locksim(&["run", &file, "--seed", &seed.to_string(), "--json"]);
        assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        plans.push(v["scenario"]["faults"].clone());
        assert_eq!(v["scenario"]["seed"], seed);
    }
    // Seeds vary latencies and work times, never the plan: exactly the file's two faults.
    assert_eq!(plans[0], plans[1]);
    assert_eq!(plans[0], plans[2]);
    let faults = plans[0].as_array().unwrap();
    assert_eq!(faults.len(), 2, "{faults:?}");
    assert_eq!(faults[0]["at"], 500_000_000u64);
    assert_eq!(faults[0]["fault"]["type"], "pause");
    assert_eq!(faults[0]["fault"]["duration"], 1_500_000_000u64);
    assert_eq!(faults[1]["fault"]["type"], "partition");
    assert_eq!(faults[1]["fault"]["mode"], "reset");
    // The campaign over the file: one cell labelled `plan`, 20 seeds, and a shrunk trace of a
    // failing seed lists no fault the file did not have.
    let o = locksim(&["campaign", &file, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let cell = &v["campaigns"][0]["cells"][0];
    assert_eq!(cell["faults"], "none");
    assert_eq!(cell["plan"], 2);
    assert_eq!(cell["seeds"], 20);
    let seed = cell["first_violation"]["S1"]
        .as_u64()
        .expect("a seed violates S1");
    let o = locksim(&[
        "shrink",
        &file,
        "--seed",
        &seed.to_string(),
        "--out-dir",
        out_dir.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let trace = std::fs::read_dir(&out_dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(trace).unwrap()).unwrap();
    for f in t["scenario"]["faults"].as_array().unwrap() {
        let kind = f["fault"]["type"].as_str().unwrap();
        assert!(["pause", "partition"].contains(&kind), "{f}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_same_file_and_seed_give_the_same_digest() {
    let dir = scratch("digest");
    let file = write(&dir, "plan.toml", PLAN_ONLY);
    let digest = |seed: &str| {
        let o = locksim(&["run", &file, "--seed", seed, "--json"]);
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        v["digest"].as_str().unwrap().to_string()
    };
    assert_eq!(digest("3"), digest("3"));
    assert_ne!(digest("3"), digest("4"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_scenario_file_with_a_mistake_is_one_line_naming_file_fault_and_field() {
    let dir = scratch("bad");
    let bad = |name: &str, from: &str, to: &str| {
        assert!(PLAN_ONLY.contains(from), "{from}");
        write(&dir, name, &PLAN_ONLY.replacen(from, to, 1))
    };
    let cases = [
        (
            bad("node.toml", "node = \"c1\"", "node = \"c9\""),
            vec![
                "node.toml",
                "fault #1 (pause, line",
                "`node`",
                "\"c9\" is not a node",
            ],
        ),
        (
            bad(
                "field.toml",
                "duration = \"1500ms\"",
                "duraton = \"1500ms\"",
            ),
            vec!["field.toml", "fault #1", "unknown field `duraton`"],
        ),
        (
            bad("late.toml", "at = \"3s\"", "at = \"15s\""),
            vec![
                "late.toml",
                "fault #2 (partition",
                "`at`",
                "after the run's end",
            ],
        ),
        (
            bad(
                "negative.toml",
                "duration = \"400ms\"",
                "duration = \"-400ms\"",
            ),
            vec!["negative.toml", "fault #2", "`duration`", "negative"],
        ),
        (
            bad("unit.toml", "at = \"500ms\"", "at = 500"),
            vec!["unit.toml", "fault #1", "`at`", "needs a unit"],
        ),
        (
            bad(
                "client.toml",
                "[[fault]]",
                "[client.c3]\nttl = \"2s\"\n\n[[fault]]",
            ),
            vec!["client.toml", "client c3", "no such client"],
        ),
        (
            bad(
                "clientfield.toml",
                "[[fault]]",
                "[client.c1]\ntll = \"2s\"\n\n[[fault]]",
            ),
            vec![
                "clientfield.toml",
                "client.c1",
                "`tll` is not a per-client setting",
            ],
        ),
        (
            bad(
                "task.toml",
                "node = \"c1\"",
                "node = \"n1\"\ntask = \"renewal\"",
            ),
            vec!["task.toml", "fault #1", "`task`", "only a client"],
        ),
    ];
    for (file, needles) in &cases {
        rejects(&dir, &["run", file, "--seed", "1"], needles);
        rejects(&dir, &["campaign", file], needles);
    }
    // --set for a client the cluster does not have, and a per-client key that does not exist.
    rejects(
        &dir,
        &[
            "run",
            "--algo",
            "central",
            "--seed",
            "1",
            "--set",
            "c4.ttl=2s",
        ],
        &["client c4", "no such client"],
    );
    rejects(
        &dir,
        &[
            "run", "--algo", "central", "--seed", "1", "--set", "c1.tl=2s",
        ],
        &["client c1", "`tl` is not a per-client setting"],
    );
    // A plan file holds faults only.
    let plan = write(
        &dir,
        "plan-only.toml",
        "seeds = 3\n[[fault]]\nat = \"1s\"\ntype = \"heal\"\n",
    );
    rejects(
        &dir,
        &["run", "--algo", "central", "--seed", "1", "--plan", &plan],
        &["plan-only.toml", "unknown field `seeds`"],
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn per_client_settings_and_plans_reach_the_run() {
    let dir = scratch("client");
    let plan = write(
        &dir,
        "p.toml",
        "[[fault]]\nat = \"2s\"\ntype = \"crash\"\nnode = \"c2\"\n",
    );
    let o = locksim(&[
        "run",
        "--algo",
        "central",
        "--seed",
        "2",
        "--faults",
        "none",
        "--set",
        "c1.ttl=3s",
        "--set",
        "c1.clock_drift_ppm=-1000",
        "--plan",
        &plan,
        "--json",
    ]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let s = &v["scenario"];
    assert_eq!(s["workload"]["per_client"]["c1"]["ttl"], 3_000_000_000u64);
    assert_eq!(s["workload"]["per_client"]["c1"]["clock_drift_ppm"], -1000);
    assert_eq!(s["faults"].as_array().unwrap().len(), 1);
    assert_eq!(s["faults"][0]["fault"]["type"], "crash");
    assert_eq!(
        s["faults"][0]["fault"]["node"], 2,
        "c2 is node 2, after the server and c1"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// The examples of `sims/README.md` are real: its campaign file runs, and its catalogue of
/// every fault type is a plan that `--plan` takes.
#[test]
fn the_sims_readme_examples_run() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../sims/README.md"))
            .unwrap();
    let blocks: Vec<&str> = readme
        .split("```toml\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .collect();
    assert!(blocks.len() >= 2, "{} toml blocks", blocks.len());
    let dir = scratch("readme");
    let file = write(&dir, "example.toml", blocks[0]);
    let o = locksim(&["run", &file, "--seed", "0", "--json"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let plan = write(&dir, "faults.toml", blocks[1]);
    let o = locksim(&[
        "run",
        "--algo",
        "raft-lease",
        "--seed",
        "0",
        "--faults",
        "none",
        "--plan",
        &plan,
        // The catalogue has a `duplicate` entry, which only the datagram model has.
        "--set",
        "network=datagram",
        "--json",
    ]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let types: std::collections::BTreeSet<String> = v["scenario"]["faults"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["fault"]["type"].as_str().unwrap().to_string())
        .collect();
    for (t, _, _) in locksim_core::scenario_file::FAULT_TYPES {
        assert!(types.contains(*t), "the README shows no `{t}` fault");
    }
    std::fs::remove_dir_all(&dir).ok();
}
