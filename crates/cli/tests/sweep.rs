//! `locksim sweep` as a user meets it: the JSON a sweep prints, sharding and `merge`, the
//! report page and its files, frontier files that fail when a boundary moves, bad input.

use std::process::Output;

mod common;
use common::{locksim, text};

const SWEEP: &[&str] = &[
    "sweep",
    "--algo",
    "redlock,central-fencing",
    "--faults",
    "pause",
    "--vary",
    "pause_max=100ms..3s:3",
    "--set",
    "ttl=1s",
    "--seeds",
    "12",
    "--jobs",
    "2",
];

fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", text(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("one JSON object")
}

#[test]
fn a_sweep_reports_each_point_with_intervals_and_merges_from_shards() {
    let whole = json(&locksim(&[SWEEP, &["--json"]].concat()));
    let points = whole["points"].as_array().unwrap();
    assert_eq!(points.len(), 3 * 2, "3 points × 2 algorithms");
    assert_eq!(points[0]["point"]["pause_max"], "100ms");
    assert_eq!(points[0]["algorithm"], "redlock");
    assert_eq!(points[5]["point"]["pause_max"], "3s");
    for p in points {
        assert_eq!(p["seeds"], 12);
        let (lo, hi, rate) = (
            p["s1_low"].as_f64().unwrap(),
            p["s1_high"].as_f64().unwrap(),
            p["s1_rate"].as_f64().unwrap(),
        );
        assert!(lo <= rate && rate <= hi && hi > 0.0, "{p}");
        assert!(p["grants"].as_u64().unwrap() > 0);
    }
    // The longest pauses break the lease of both; fencing keeps the data of one.
    let at3: Vec<&serde_json::Value> = points
        .iter()
        .filter(|p| p["point"]["pause_max"] == "3s")
        .collect();
    assert!(
        at3.iter().all(|p| p["s1_violations"].as_u64().unwrap() > 0),
        "{at3:?}"
    );
    assert!(at3
        .iter()
        .any(|p| p["algorithm"] == "central-fencing" && p["s2_violations"] == 0));

    let dir = std::env::temp_dir().join(format!("locksim-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let parts: Vec<String> = (0..2)
        .map(|i| dir.join(format!("part{i}.jsonl")).display().to_string())
        .collect();
    for (i, p) in parts.iter().enumerate() {
        let shard = format!("{i}/2");
        let o = locksim(&[SWEEP, &["--shard", &shard, "--out", p.as_str(), "--json"]].concat());
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    // An existing --out is never replaced without --force.
    let again = locksim(&[SWEEP, &["--out", parts[0].as_str()]].concat());
    assert_eq!(again.status.code(), Some(2));
    assert!(text(&again.stderr).contains("--force"));
    let merged = json(&locksim(&["merge", "--json", &parts[0], &parts[1]]));
    // The object `sweep --json` prints, its axes included.
    assert_eq!(merged["axes"], whole["axes"]);
    let mp = merged["points"].as_array().unwrap();
    assert_eq!(mp.len(), points.len());
    for (a, b) in mp.iter().zip(points) {
        for k in [
            "point",
            "algorithm",
            "seeds",
            "s1_violations",
            "s2_violations",
            "grants",
            "s1_high",
        ] {
            assert_eq!(a[k], b[k], "{k}");
        }
    }
    // One shard alone is refused by merge, naming what is missing.
    let one = locksim(&["merge", &parts[0]]);
    assert_eq!(one.status.code(), Some(2));
    assert!(
        text(&one.stderr).contains("missing"),
        "{}",
        text(&one.stderr)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_report_links_each_failing_point_to_its_shrunk_trace() {
    let dir = std::env::temp_dir().join(format!("locksim-sweep-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("f.html");
    let p = page.display().to_string();
    let o = locksim(&[SWEEP, &["--report", p.as_str(), "--csv"]].concat());
    assert!(o.status.success(), "{}", text(&o.stderr));
    let csv = text(&o.stdout);
    assert_eq!(csv.lines().count(), 1 + 6, "{csv}");
    assert!(csv.starts_with("sweep,pause_max,algorithm,faults,seeds,grants,s1_violations"));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<svg"), "no plot");
    let links = html.matches("data-kind=\"trace\" href=\"f-files/").count();
    let failing = csv
        .lines()
        .skip(1)
        .filter(|l| {
            !l.split(',')
                .nth(
                    csv.lines()
                        .next()
                        .unwrap()
                        .split(',')
                        .position(|h| h == "first_failing_seed")
                        .unwrap(),
                )
                .unwrap()
                .is_empty()
        })
        .count();
    assert!(failing > 0);
    assert_eq!(links, failing, "every failing point links its trace");
    for l in html.split("href=\"").skip(1) {
        let target = &l[..l.find('"').unwrap()];
        assert!(dir.join(target).exists(), "{target} is missing");
    }
    // A file that is not a locksim page is never replaced without --force.
    let other = dir.join("notes.html");
    std::fs::write(&other, "mine").unwrap();
    let o = locksim(&[SWEEP, &["--report", other.to_str().unwrap()]].concat());
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&other).unwrap(), "mine");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_frontier_file_fails_when_its_boundary_moves() {
    let dir = std::env::temp_dir().join(format!("locksim-frontier-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = |expect: &str| {
        format!(
            "why = \"a test\"\nalgorithms = [\"central-fencing\"]\nfaults = [\"pause\"]\nseeds = 12\nvary = [\"pause_max=100ms,3s\"]\n[settings]\nttl = \"1s\"\n{expect}"
        )
    };
    let good = dir.join("good.toml");
    std::fs::write(
        &good,
        file("[[expect]]\nalgorithm = \"central-fencing\"\nproperty = \"S1\"\nzero_below = \"200ms\"\nnonzero_from = \"3s\"\n[[expect]]\nalgorithm = \"central-fencing\"\nproperty = \"S2\"\nzero = true\n"),
    )
    .unwrap();
    let o = locksim(&["sweep", good.to_str().unwrap()]);
    assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));
    assert!(text(&o.stdout).contains("PASS"));
    // Claim S1 is zero everywhere: the 3 s point contradicts it.
    let moved = dir.join("moved.toml");
    std::fs::write(
        &moved,
        file("[[expect]]\nalgorithm = \"central-fencing\"\nproperty = \"S1\"\nzero = true\n"),
    )
    .unwrap();
    let o = locksim(&["sweep", moved.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let out = text(&o.stdout);
    assert!(
        out.contains("FAIL") && out.contains("pause_max=3s"),
        "{out}"
    );
    // Bad input names the file and the field.
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        file("[[expect]]\nalgorithm = \"central-fencing\"\nproperty = \"S7\"\nzero = true\n"),
    )
    .unwrap();
    let o = locksim(&["sweep", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("bad.toml: expect #1: `property`"),
        "{}",
        text(&o.stderr)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_sweeps_are_one_line_errors() {
    for (args, says) in [
        (&["sweep", "--algo", "redlock"][..], "--vary"),
        (
            &["sweep", "--algo", "redlock", "--vary", "pause_max=3s..1s:4"][..],
            "not above",
        ),
        (
            &["sweep", "--algo", "redlock", "--vary", "bogus=1..3"][..],
            "bogus",
        ),
        (&["sweep", "--vary", "ttl=1s..2s:2"][..], "--algo"),
        (
            &[
                "sweep",
                "--algo",
                "redlock",
                "--vary",
                "ttl=1s..2s:2",
                "--vary",
                "ttl=1s,3s",
            ][..],
            "twice",
        ),
    ] {
        let o = locksim(args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// A `--vary` list of words (retry policies) beside an axis of client counts: every pair is a
/// point, the JSON and CSV carry the herd metrics, the page draws a line per policy, and
/// `merge` of shards rebuilds the same axes, the word list included.
#[test]
fn a_list_of_words_is_a_series_per_value_with_the_herd_metrics() {
    let dir = std::env::temp_dir().join(format!("locksim-sweep-words-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let args: &[&str] = &[
        "sweep",
        "--algo",
        "central",
        "--faults",
        "none",
        "--vary",
        "clients=4,8",
        "--vary",
        "retry=fixed,exponential-full",
        "--seeds",
        "3",
        "--jobs",
        "2",
    ];
    let whole = json(&locksim(&[args, &["--json"]].concat()));
    let points = whole["points"].as_array().unwrap();
    assert_eq!(points.len(), 4);
    assert_eq!(points[1]["point"]["clients"], "4");
    assert_eq!(points[1]["point"]["retry"], "exponential-full");
    assert_eq!(whole["axes"][1]["unit"], "word");
    for p in points {
        for k in [
            "acquire_peak_mean_per_s",
            "acquire_late_peak_mean_per_s",
            "retries_per_grant",
            "wait_p99_ns",
        ] {
            assert!(p[k].as_f64().is_some_and(|v| v >= 0.0), "{k}: {p}");
        }
    }
    let csv = locksim(&[args, &["--csv"]].concat());
    let csv = text(&csv.stdout);
    let head = csv.lines().next().unwrap();
    assert!(
        head.starts_with("sweep,clients,retry,algorithm")
            && head.contains("acquire_late_peak_mean_per_s"),
        "{head}"
    );
    let page = dir.join("herd.html");
    let p = page.display().to_string();
    let o = locksim(&[args, &["--report", p.as_str()]].concat());
    assert!(o.status.success(), "{}", text(&o.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("central × none · retry=fixed"));
    assert!(html.contains("central × none · retry=exponential-full"));
    assert!(html.contains("data-property=\"attempts\""));
    assert!(html.contains("data-property=\"wait\""));
    let parts: Vec<String> = (0..2)
        .map(|i| dir.join(format!("part{i}.jsonl")).display().to_string())
        .collect();
    for (i, part) in parts.iter().enumerate() {
        let shard = format!("{i}/2");
        let o = locksim(&[args, &["--shard", &shard, "--out", part.as_str()]].concat());
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    let merged = json(&locksim(&["merge", "--json", &parts[0], &parts[1]]));
    assert_eq!(merged["axes"], whole["axes"]);
    // A list of words alone has nothing to plot along.
    let alone = locksim(&[
        "sweep",
        "--algo",
        "central",
        "--vary",
        "retry=fixed,uniform",
    ]);
    assert_eq!(alone.status.code(), Some(2));
    assert!(
        text(&alone.stderr).contains("a list of words is a set of series"),
        "{}",
        text(&alone.stderr)
    );
    std::fs::remove_dir_all(&dir).ok();
}
