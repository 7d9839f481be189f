//! Faults aimed at events in scenario files (issue #25, item 1): bad triggers are one line and
//! exit 2, a trigger that never fires says so, and the shrinker keeps a trigger a trigger.

use std::path::{Path, PathBuf};

mod common;
use common::{locksim, stderr, stdout};

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("locksim-trig-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

fn file(after: &str) -> String {
    format!(
        r#"
algorithm = "zookeeper"
seeds = 2
expect = ["S1"]

[[fault]]
{after}
type = "drop_replies"
clients = "c1"
servers = "servers"
duration = "1.8s"
"#
    )
}

#[test]
fn a_bad_trigger_is_one_line_and_exit_2() {
    let dir = scratch("bad");
    let cases = [
        (
            r#"after = { node = "c1", event = "leader chosen" }"#,
            "`after.event`: \"leader chosen\" is not an event a trigger supports",
        ),
        (
            r#"after = { node = "c1", event = "acquire ok", nth = 0 }"#,
            "`after.nth`: 0 is not a count from 1",
        ),
        (
            "at = \"1s\"\nafter = { node = \"c1\", event = \"acquire ok\" }",
            "both `at` and `after`",
        ),
    ];
    for (i, (after, needle)) in cases.iter().enumerate() {
        let f = write(&dir, &format!("bad{i}.toml"), &file(after));
        let o = locksim(&["run", &f, "--seed", "1"]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{after}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{after}: {err}");
        assert!(err.contains(needle), "{after}: {err}");
        assert!(
            err.contains("fault #1 (drop_replies, line"),
            "{after}: {err}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_trigger_that_never_fires_is_reported_and_applies_nothing() {
    let dir = scratch("never");
    let f = write(
        &dir,
        "never.toml",
        &file(r#"after = { node = "c1", event = "acquire ok", nth = 5000 }"#),
    );
    let o = locksim(&["run", &f, "--seed", "1", "--json"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["faults_applied"], 0);
    let never = v["faults_never_fired"].as_array().unwrap();
    assert_eq!(never.len(), 1, "{v}");
    assert!(
        never[0]
            .as_str()
            .unwrap()
            .contains("never fired: c1 had no 5000th acquire ok"),
        "{never:?}"
    );
    let o = locksim(&["run", &f, "--seed", "1"]);
    assert!(
        stdout(&o).contains("note: fault #1 (drop replies"),
        "{}",
        stdout(&o)
    );
    // A campaign says so too (a breaker's find: it passed without a word), table and JSON.
    let o = locksim(&["campaign", &f]);
    assert!(
        stdout(&o).contains("a trigger of the plan never fired in"),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
    let o = locksim(&["campaign", &f, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let cell = &v["campaigns"][0]["cells"][0];
    assert_eq!(cell["trigger_never_fired_seeds"], cell["seeds"], "{v}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The shrunk plan of the sims/ trigger file keeps its trigger (never a fixed time), and the
/// trace it writes replays.
#[test]
fn the_shrinker_keeps_a_trigger() {
    let dir = scratch("shrink");
    let sims = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../sims/trigger-zookeeper-lost-create-reply.toml"
    );
    let out = dir.display().to_string();
    // Seed 5: the first of the file's seeds with the S1 (7 before the model's ensemble
    // started formed).
    let o = locksim(&["shrink", sims, "--seed", "5", "--out-dir", &out, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let faults = v["faults"].as_array().unwrap();
    assert!(!faults.is_empty(), "{v}");
    for f in faults {
        assert_eq!(f["after"]["event"], "acquire invoke", "{v}");
    }
    let trace = v["trace"].as_str().unwrap();
    let o = locksim(&["replay", trace]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    std::fs::remove_dir_all(&dir).ok();
}
