//! `locksim campaign` over several campaign files as a person reads it (issue #47 item 5,
//! issue #50 item 6): each file's result as it finishes, the legend once (`--quiet`: none),
//! and `--seeds`/`--first-seed` overriding every file's own seeds, saying so.

use std::collections::BTreeSet;
use std::path::Path;

mod common;
use common::{locksim, refused, s, scratch, stderr, stdout};

/// A small campaign file of the repository's `sims/`.
fn sim(name: &str) -> String {
    format!("{}/../../sims/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Two small files that run in well under a second with `--seeds 3`.
fn two() -> [String; 2] {
    [sim("central-safe.toml"), sim("k5-redlock-pause.toml")]
}

const LEGEND: &str = "Each column counts seeds (runs) that violate the property";

#[test]
fn two_files_print_each_result_and_the_legend_once_at_the_end() {
    let [a, b] = two();
    let o = locksim(&["campaign", &a, &b, "--seeds", "3"]);
    let out = stdout(&o);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert_eq!(out.matches(LEGEND).count(), 1, "{out}");
    let headings: Vec<&str> = out.lines().filter(|l| l.starts_with("== ")).collect();
    assert_eq!(headings.len(), 2, "{out}");
    assert!(headings[0].contains("sims/central-safe.toml)"), "{out}");
    assert!(headings[1].contains("sims/k5-redlock-pause.toml)"), "{out}");
    for h in &headings {
        assert!(h.contains("): PASS") || h.contains("): FAIL"), "{h}");
    }
    // The legend comes after the last file's table, not between the files.
    let legend_at = out.find(LEGEND).unwrap();
    assert!(out.find(headings[1]).unwrap() < legend_at, "{out}");
    // One blank line between the last table and the legend, not two.
    assert!(!out.contains(&format!("\n\n\n{LEGEND}")), "{out}");
    // Progress goes to stderr and names no file on stdout; the summary line is last there.
    assert!(
        stderr(&o).trim_end().ends_with("failed their expectation"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn quiet_drops_the_legend_and_keeps_the_results() {
    let [a, b] = two();
    let o = locksim(&["campaign", &a, &b, "--seeds", "3", "--quiet"]);
    let out = stdout(&o);
    assert!(!out.contains(LEGEND), "{out}");
    assert_eq!(out.lines().filter(|l| l.starts_with("== ")).count(), 2);
    assert_eq!(stderr(&o).trim_end().lines().count(), 1, "{}", stderr(&o));
    // The matrix too.
    let o = locksim(&[
        "campaign", "--algo", "central", "--faults", "none", "--seeds", "2", "-q",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stdout(&o).contains(LEGEND) && stdout(&o).contains("central"));
    let o = locksim(&[
        "campaign", "--algo", "central", "--faults", "none", "--seeds", "2",
    ]);
    assert_eq!(stdout(&o).matches(LEGEND).count(), 1, "{}", stdout(&o));
}

/// The seeds the `--out` records of a campaign hold.
fn recorded_seeds(out: &Path) -> BTreeSet<u64> {
    std::fs::read_to_string(out)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["seed"].as_u64().unwrap()
        })
        .collect()
}

#[test]
fn seeds_and_first_seed_override_each_files_own_and_say_so_once() {
    let d = scratch("campaign_output", "override");
    let [a, b] = two();
    let records = d.join("r.jsonl");
    let o = locksim(&[
        "campaign",
        &a,
        &b,
        "--seeds",
        "3",
        "--first-seed",
        "7",
        "--out",
        s(&records),
    ]);
    let out = stdout(&o);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let note = "seeds: 3 from 7 (overriding each file's own)";
    assert_eq!(out.matches(note).count(), 1, "{out}");
    assert!(out.starts_with(note), "said before the results: {out}");
    assert_eq!(recorded_seeds(&records), BTreeSet::from([7, 8, 9]));
    // Every cell ran 3 seeds (the files say 300).
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("central ") || l.starts_with("redlock "))
        .filter(|l| !l.contains("ms/"))
        .collect();
    assert!(!rows.is_empty(), "{out}");
    for r in rows {
        assert_eq!(r.split_whitespace().nth(2), Some("3"), "{r}");
    }
    // Only --first-seed: each file's own count (4 here), from 1000; with --json the note
    // goes to stderr and stdout stays one JSON object.
    let f = d.join("four.toml");
    std::fs::write(
        &f,
        "algorithm = \"central\"\nfaults = [\"none\"]\nseeds = 4\nexpect = \"safe\"\n",
    )
    .unwrap();
    let o = locksim(&[
        "campaign",
        s(&f),
        "--first-seed",
        "1000",
        "--json",
        "--out",
        s(&records),
        "--force",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("stdout stays JSON");
    assert_eq!(v["campaigns"][0]["cells"][0]["seeds"], 4);
    assert_eq!(
        recorded_seeds(&records),
        BTreeSet::from([1000, 1001, 1002, 1003])
    );
    assert!(
        stderr(&o).contains("seeds: each file's own count from 1000"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn an_expectation_is_still_judged_under_overridden_seeds() {
    let d = scratch("campaign_output", "expect");
    let f = d.join("never.toml");
    std::fs::write(
        &f,
        "name = \"expects the impossible\"\nalgorithm = \"central\"\nfaults = [\"none\"]\nseeds = 40\nexpect = [\"S1\"]\n",
    )
    .unwrap();
    let o = locksim(&["campaign", s(&f), "--seeds", "2", "--first-seed", "5"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    let heading = out.lines().find(|l| l.starts_with("== ")).unwrap();
    assert!(heading.contains("FAIL: expected S1"), "{heading}");
    assert!(
        heading.contains("under overridden seeds 5‥6; the file's own are 0‥39"),
        "{heading}"
    );
    // The JSON keeps its shape: the verdict is in `ok` and `problems`.
    let o = locksim(&["campaign", s(&f), "--seeds", "2", "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["campaigns"][0]["ok"], false);
    assert_eq!(v["campaigns"][0]["cells"][0]["seeds"], 2);
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn bad_seed_values_are_one_line_errors_with_exit_2() {
    let a = sim("central-safe.toml");
    for (flag, value, needle) in [
        ("--seeds", "0", "--seeds must be from 1"),
        ("--seeds", "abc", "--seeds `abc` is not a whole number"),
        ("--seeds", "-3", "--seeds `-3`"),
        ("--seeds", "2000000", "--seeds must be from 1"),
        ("--first-seed", "x", "--first-seed `x`"),
        ("--first-seed", "18446744073709551615", "past 2^64"),
    ] {
        refused(&locksim(&["campaign", &a, flag, value]), &[needle]);
    }
    // The matrix reads the flags the same way.
    refused(
        &locksim(&["campaign", "--seeds", "many"]),
        &["--seeds `many`"],
    );
}

#[test]
fn merged_shards_of_campaign_files_read_as_the_unsharded_run() {
    let d = scratch("campaign_output", "merge");
    for (name, algo) in [("a.toml", "central"), ("b.toml", "central-fencing")] {
        std::fs::write(
            d.join(name),
            format!("algorithm = \"{algo}\"\nfaults = [\"none\"]\nseeds = 4\nexpect = \"safe\"\n"),
        )
        .unwrap();
    }
    let whole = locksim(&["campaign", s(&d)]);
    assert_eq!(whole.status.code(), Some(0), "{}", stderr(&whole));
    assert_eq!(stdout(&whole).matches(LEGEND).count(), 1);
    let mut parts = Vec::new();
    for i in 0..2 {
        let p = d.join(format!("p{i}.jsonl"));
        let o = locksim(&[
            "campaign",
            s(&d.join("a.toml")),
            s(&d.join("b.toml")),
            "--shard",
            &format!("{i}/2"),
            "--out",
            s(&p),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        parts.push(p);
    }
    let merged = locksim(&["merge", s(&parts[0]), s(&parts[1])]);
    assert_eq!(merged.status.code(), Some(0), "{}", stderr(&merged));
    assert_eq!(stdout(&merged), stdout(&whole));
    std::fs::remove_dir_all(&d).ok();
}
