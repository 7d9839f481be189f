//! Nothing silently wrong at the edges (issue #46, item 6): a second writer on a record file,
//! a merge whose campaign file is gone, a trace `render` cannot re-run, an event `export-tla`
//! cannot express and a `--report` that cannot be written are each refused or flagged with a
//! non-zero exit, never passed over with exit 0.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{corpus, locksim, refused, s, scratch, stderr, stdout};

/// The lines of a record file, each parsed (a torn or interleaved line fails the test).
fn records(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.ends_with('\n'), "the last record is whole");
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("{}:{}: not a record ({e}): {l}", path.display(), i + 1))
        })
        .collect()
}

/// While a campaign writes `--out FILE`, a second one on the same FILE (plain, `--force` or
/// `--resume`) is refused at once with exit 2 and one line naming the file; the first
/// finishes with every seed recorded once, in whole lines.
#[test]
fn a_second_writer_on_the_same_out_file_is_refused() {
    let d = scratch("edges", "second-writer");
    let out = d.join("runs.jsonl");
    const SEEDS: u64 = 800;
    let seeds = SEEDS.to_string();
    let first_args = [
        "campaign",
        "--algo",
        "central",
        "--faults",
        "pause",
        "--seeds",
        &seeds,
        "--jobs",
        "1",
        "--quiet",
        "--out",
        s(&out),
    ];
    let mut first = Command::new(env!("CARGO_BIN_EXE_locksim"))
        .args(first_args)
        .env_remove("JOB_COMPLETION_INDEX")
        .env_remove("JOB_COMPLETIONS")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("locksim starts");
    // A first record written: the first campaign holds the file (it locks it before any seed).
    let started = Instant::now();
    while std::fs::read_to_string(&out).map_or(true, |t| !t.contains('\n')) {
        assert!(
            first.try_wait().unwrap().is_none(),
            "the first campaign ended before writing a record"
        );
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no record yet"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    for extra in [&[][..], &["--force"][..], &["--resume"][..]] {
        let mut args = first_args.to_vec();
        args.extend_from_slice(extra);
        let o = locksim(&args);
        refused(&o, &[s(&out), "another process"]);
    }
    assert!(
        first.try_wait().unwrap().is_none(),
        "the first campaign was still running while the others were refused"
    );
    let done = first.wait_with_output().unwrap();
    assert_eq!(done.status.code(), Some(0), "{}", stderr(&done));
    let recs = records(&out);
    let mut seen: Vec<u64> = recs.iter().map(|r| r["seed"].as_u64().unwrap()).collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..SEEDS).collect::<Vec<_>>(), "each seed once");
}

/// `merge` of shards whose campaign file is no longer where it ran cannot judge its
/// expectation: exit 2 with the reason (not 0 with "not judged"); `--partial` shows the table
/// as not judged and exits 3.
#[test]
fn merge_whose_campaign_file_cannot_be_read_exits_non_zero() {
    let d = scratch("edges", "merge-unread");
    let file = d.join("edge.toml");
    std::fs::write(
        &file,
        "name = \"edge\"\nalgorithm = \"central\"\nfaults = [\"pause\"]\nseeds = 20\nexpect = [\"S1\"]\n",
    )
    .unwrap();
    let shards: Vec<String> = (0..2)
        .map(|i| {
            let out = d.join(format!("part{i}.jsonl"));
            let o = locksim(&[
                "campaign",
                s(&file),
                "--shard",
                &format!("{i}/2"),
                "--quiet",
                "--out",
                s(&out),
            ]);
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            s(&out).to_string()
        })
        .collect();
    // Where the campaign file is, the merge judges it.
    let mut args = vec!["merge"];
    args.extend(shards.iter().map(String::as_str));
    let o = locksim(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains(": PASS"), "{}", stdout(&o));

    std::fs::remove_file(&file).unwrap();
    let o = locksim(&args);
    refused(&o, &[s(&file), "cannot be read", "--partial"]);

    args.push("--partial");
    let o = locksim(&args);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stdout(&o).contains("not judged"), "{}", stdout(&o));
}

/// `render` of a trace it cannot re-run (an algorithm this binary does not have) exits 2 as
/// `replay` does, with one line saying so; the page it still draws shows the recorded events
/// and verdict under a warning banner. Asked not to re-run (`--no-rerun`), it exits 0.
#[test]
fn render_of_a_trace_it_cannot_rerun_exits_as_replay_does() {
    let d = scratch("edges", "render-unknown");
    let mut t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(corpus("central-s2-5f7972d4.json")).unwrap())
            .unwrap();
    t["scenario"]["algorithm"] = "no-such-lock".into();
    let trace = d.join("unknown.json");
    std::fs::write(&trace, t.to_string()).unwrap();

    let replayed = locksim(&["replay", s(&trace)]);
    assert_eq!(replayed.status.code(), Some(2), "{}", stderr(&replayed));

    let page = d.join("unknown.html");
    let o = locksim(&["render", s(&trace), "-o", s(&page)]);
    assert_eq!(o.status.code(), replayed.status.code(), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("cannot re-run") && err.contains("no-such-lock"),
        "{err}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("class=\"note warning\""), "no banner");
    assert!(html.contains("WARNING: not re-run"), "no banner text");
    assert!(html.contains("S2"), "the recorded verdict is drawn");

    let o = locksim(&["render", s(&trace), "-o", s(&page), "--no-rerun"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// Sets the fields `kind` of event `i` of the corpus trace `name` (a new `type` replaces the
/// event but for its id, times and node),
/// writes it to `dir`, and exports it.
fn export_with(dir: &Path, name: &str, i: usize, kind: serde_json::Value) -> std::process::Output {
    let mut t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(corpus(name)).unwrap()).unwrap();
    let e = &mut t["events"][i];
    // A new type: only the fields every event has are kept.
    if kind.get("type").is_some() {
        let common: serde_json::Map<String, serde_json::Value> =
            ["id", "time", "node", "wall", "mono"]
                .iter()
                .filter_map(|k| e.get(*k).map(|v| (k.to_string(), v.clone())))
                .collect();
        *e = common.into();
    }
    for (k, v) in kind.as_object().unwrap() {
        e[k] = v.clone();
    }
    let trace = dir.join(format!("edited{i}.json"));
    std::fs::write(&trace, t.to_string()).unwrap();
    locksim(&[
        "export-tla",
        s(&trace),
        "-o",
        s(&dir.join(format!("Edited{i}.tla"))),
    ])
}

/// `export-tla` checks the events it exports: an event the specifications cannot express (a
/// leader marker, a duplication fault, an unknown fault end) is an error naming the event,
/// not left out of the module.
#[test]
fn export_tla_refuses_events_it_cannot_express() {
    let d = scratch("edges", "export-tla");
    let name = "central-s2-5f7972d4.json";
    // Unedited, it exports.
    let o = locksim(&["export-tla", &corpus(name), "-o", s(&d.join("Plain.tla"))]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(corpus(name)).unwrap()).unwrap();
    let events = t["events"].as_array().unwrap();
    let grant = events.iter().position(|e| e["type"] == "grant").unwrap();
    let end = events
        .iter()
        .position(|e| e["type"] == "fault_end")
        .expect("the pause's end");

    let o = export_with(
        &d,
        name,
        grant,
        serde_json::json!({"type": "leader", "term": 1}),
    );
    refused(&o, &[&format!("events[{grant}].type"), "leader"]);

    let o = export_with(
        &d,
        name,
        grant,
        serde_json::json!({"type": "fault", "fault": {"type": "duplicate", "from": [1], "to": [0], "rate_pct": 50, "duration": 1000000}}),
    );
    refused(&o, &[&format!("events[{grant}].fault"), "duplication"]);

    let o = export_with(&d, name, end, serde_json::json!({"what": "c2 froze"}));
    refused(&o, &[&format!("events[{end}].what"), "c2 froze"]);
}

/// `--report FILE` is checked before the campaign runs: a FILE under a file (not a folder),
/// a FILE whose `-files` folder is taken by a file, and an existing file locksim did not
/// write are refused at once (exit 2, one line, nothing run or printed).
#[test]
fn report_target_is_checked_before_the_campaign_runs() {
    let d = scratch("edges", "report-target");
    let plain = d.join("plain.txt");
    std::fs::write(&plain, "mine\n").unwrap();
    let taken = d.join("taken.html");
    std::fs::write(d.join("taken-files"), "not a folder\n").unwrap();
    let matrix = [
        "campaign", "--algo", "central", "--faults", "pause", "--seeds", "3000",
    ];
    let under_a_file = plain.join("report.html");
    let cases: [(&Path, &str); 3] = [
        (&under_a_file, "is a file, not a folder"),
        (&taken, "taken-files"),
        (&plain, "not a page locksim wrote"),
    ];
    for (report, needle) in cases {
        let mut args = matrix.to_vec();
        args.extend(["--report", s(report)]);
        let started = Instant::now();
        let o = locksim(&args);
        refused(&o, &[needle]);
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{needle}: refused only after {:?}",
            started.elapsed()
        );
    }
    // Campaign files and a merge check it the same way.
    let o = locksim(&[
        "campaign",
        &format!(
            "{}/../../sims/central-safe.toml",
            env!("CARGO_MANIFEST_DIR")
        ),
        "--report",
        s(&under_a_file),
    ]);
    refused(&o, &["is a file, not a folder"]);
    assert_eq!(std::fs::read_to_string(&plain).unwrap(), "mine\n");
    assert!(!d.join("taken.html").exists(), "nothing written");
}

/// A shard that got no seeds judged nothing: exit 3 (proves nothing), with or without
/// `--fail-on`, and it says so; a shard with seeds exits as its campaign does.
#[test]
fn a_shard_without_seeds_proves_nothing() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../../sims/central-safe.toml");
    let empty = locksim(&["campaign", file, "--seeds", "1", "--shard", "1/2", "-q"]);
    assert_eq!(empty.status.code(), Some(3), "{}", stderr(&empty));
    assert!(
        stderr(&empty).contains("proves nothing"),
        "{}",
        stderr(&empty)
    );
    let one = locksim(&["campaign", file, "--seeds", "1", "--shard", "0/2", "-q"]);
    assert_eq!(one.status.code(), Some(0), "{}", stderr(&one));
}

/// `--report` on the run's own `--out` file is refused before any seed runs (it used to be
/// found out after the whole run and its shrinking).
#[test]
fn a_report_on_the_out_file_is_refused_before_the_run() {
    let d = scratch("edges", "report-is-out");
    let out = d.join("same.html");
    let dotted = d.join(".").join("same.html");
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../sims/central-unsafe.toml"
    );
    let o = locksim(&[
        "campaign",
        file,
        "--seeds",
        "3",
        "-q",
        "--out",
        s(&out),
        "--report",
        s(&dotted),
    ]);
    refused(&o, &["is also the --out file"]);
    assert!(!out.exists(), "nothing was written");
}
