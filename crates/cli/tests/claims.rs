//! Issue #24, items 5–8: claims that test nothing are not passes (faults that never took
//! effect, runs without grants, liveness hidden behind a footnote), and one exit-code table
//! for every command (0 judged and clean, 1 a violation or failed expectation, 2 bad input,
//! 3 undecided or nothing exercised).

use std::path::Path;
use std::process::Output;

mod common;
use common::{locksim, s, scratch, stderr, stdout};

fn code(o: &Output) -> Option<i32> {
    o.status.code()
}

/// A plan that cuts every client off from every server for the whole run.
fn cut_everyone(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("cut.toml");
    std::fs::write(
        &p,
        "[[fault]]\nat = \"0s\"\ntype = \"partition\"\na = \"clients\"\nb = \"servers\"\nduration = \"1000s\"\n",
    )
    .unwrap();
    p
}

/// Item 5: `redlock` has no leader, so `leader-change` isolates nobody. The run says so; the
/// campaign cell is `n/a`, its JSON says `faults_applied: 0`, and the markdown table no longer
/// lists `leader-change` under "survives".
#[test]
fn faults_that_never_took_effect_are_not_survived() {
    let o = locksim(&[
        "run",
        "--algo",
        "redlock",
        "--seed",
        "3",
        "--faults",
        "leader-change",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v["faults_planned"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["faults_applied"], 0, "{v}");
    let o = locksim(&[
        "run",
        "--algo",
        "redlock",
        "--seed",
        "3",
        "--faults",
        "leader-change",
    ]);
    assert!(
        stdout(&o).contains("took effect") && stdout(&o).contains("fault-free case"),
        "{}",
        stdout(&o)
    );

    let args = [
        "campaign",
        "--algo",
        "redlock,raft-lease",
        "--faults",
        "none,leader-change",
        "--seeds",
        "4",
    ];
    let o = locksim(&args);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let t = stdout(&o);
    let row = |algo: &str, kind: &str| {
        t.lines()
            .find(|l| l.starts_with(algo) && l.split_whitespace().nth(1) == Some(kind))
            .unwrap_or_else(|| panic!("no {algo} {kind} row in {t}"))
            .to_string()
    };
    let redlock = row("redlock", "leader-change");
    assert!(
        redlock.split_whitespace().filter(|w| *w == "n/a").count() >= 4,
        "{redlock}"
    );
    assert!(redlock.contains("no fault took effect"), "{redlock}");
    // The control group and a leader that exists are judged as before.
    assert!(!row("redlock", "none").contains("n/a"), "{t}");
    assert!(!row("raft-lease", "leader-change").contains("n/a"), "{t}");

    let o = locksim(&[&args[..], &["--json"]].concat());
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells[0]["faults"], "none");
    assert_eq!(cells[0]["faults_applied"], 0);
    assert_eq!(cells[1]["faults_applied"], 0, "{}", cells[1]);
    assert!(
        cells[3]["faults_applied"].as_u64().unwrap() > 0,
        "{}",
        cells[3]
    );

    let o = locksim(&[&args[..], &["--markdown"]].concat());
    let md = stdout(&o);
    let line = md.lines().find(|l| l.starts_with("| `redlock`")).unwrap();
    assert!(line.contains("| safe | n/a |"), "{line}");
    assert!(
        line.ends_with("| nothing |"),
        "leader-change is not survived: {line}"
    );
    let line = md
        .lines()
        .find(|l| l.starts_with("| `raft-lease`"))
        .unwrap();
    // `none` is the control group: shown, judged, never listed as a fault survived.
    assert!(line.ends_with("| leader-change |"), "{line}");
}

/// Item 6: a run in which nobody got the lock said `verdict: SAFE … so do the liveness
/// properties` and exited 0. It proves nothing: exit 3, and `--json` carries the grants.
#[test]
fn a_run_without_grants_proves_nothing() {
    let d = scratch("claims", "nogrants");
    let plan = cut_everyone(&d);
    let run = [
        "run",
        "--algo",
        "central",
        "--seed",
        "1",
        "--faults",
        "none",
        "--plan",
        s(&plan),
    ];
    let o = locksim(&run);
    let t = stdout(&o);
    assert_eq!(code(&o), Some(3), "{t}{}", stderr(&o));
    assert!(!t.contains("verdict: SAFE"), "{t}");
    assert!(
        t.contains("NOTHING EXERCISED") && t.contains("proves nothing"),
        "{t}"
    );
    let o = locksim(&[&run[..], &["--json"]].concat());
    assert_eq!(code(&o), Some(3));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["grants"], 0, "{v}");
    assert_eq!(v["exit"], 3, "{v}");
    // The same run without the cut: grants, SAFE, exit 0.
    let o = locksim(&run[..7]);
    assert_eq!(code(&o), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("verdict: SAFE"));
    let o = locksim(&[&run[..7], &["--json"]].concat());
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v["grants"].as_u64().unwrap() > 0, "{v}");
    // A campaign gated on it says why and exits 3.
    let o = locksim(&[
        "campaign",
        "--algo",
        "central",
        "--faults",
        "none",
        "--plan",
        s(&plan),
        "--seeds",
        "3",
        "--fail-on",
        "safety",
    ]);
    assert_eq!(code(&o), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no client was ever granted"),
        "{}",
        stderr(&o)
    );
    // A plan-only campaign file says what it ran (its cell is named `none`).
    let file = d.join("plan-only.toml");
    let text = std::fs::read_to_string(&plan).unwrap();
    std::fs::write(
        &file,
        format!("algorithm = \"central\"\nseeds = 2\nexpect = \"safe\"\n{text}"),
    )
    .unwrap();
    let o = locksim(&["campaign", s(&file)]);
    assert_ne!(code(&o), Some(0), "{}", stdout(&o));
    let all = format!("{}{}", stdout(&o), stderr(&o));
    assert!(
        all.contains("no client was ever granted the lock under the file's [[fault]] plan"),
        "{all}"
    );
    std::fs::remove_dir_all(&d).ok();
}

/// Item 7: liveness violations were hidden (an all-`-` row and a footnote) unless
/// `--check liveness` was given. Their columns show whenever one is violated.
#[test]
fn violated_liveness_is_shown_without_asking() {
    let o = locksim(&[
        "campaign",
        "--algo",
        "pg-advisory",
        "--faults",
        "partition",
        "--seeds",
        "60",
    ]);
    let t = stdout(&o);
    let head = t.lines().next().unwrap();
    assert!(head.contains(" L3 "), "{t}");
    let row = t.lines().nth(1).unwrap();
    let l3: u64 = row.split_whitespace().nth(9).unwrap().parse().unwrap();
    assert!(l3 > 0, "{row}");
    assert!(!stderr(&o).contains("--check liveness") && !t.contains("--check liveness"));
    // Nothing violated, nothing asked: the columns stay out of the way.
    let o = locksim(&[
        "campaign", "--algo", "central", "--faults", "none", "--seeds", "3",
    ]);
    assert!(!stdout(&o).lines().next().unwrap().contains("L1"));
}

/// Item 8: `campaign --fail-on` for CI: 1 on a listed violation, 0 when clean and exercised,
/// 2 on a bad list; without it the matrix is exploratory (0 with violations).
#[test]
fn campaign_and_merge_fail_on_listed_properties() {
    let base = [
        "campaign", "--algo", "central", "--faults", "pause", "--seeds", "12",
    ];
    let o = locksim(&base);
    assert_eq!(code(&o), Some(0), "exploratory: {}", stderr(&o));
    assert!(stdout(&o).lines().nth(1).unwrap().split_whitespace().nth(3) != Some("-"));
    let o = locksim(&[&base[..], &["--fail-on", "S1,S2"]].concat());
    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("S1 violated in central × pause"),
        "{}",
        stderr(&o)
    );
    let o = locksim(&[&base[..], &["--fail-on", "S4"]].concat());
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    for bad in ["S9", ",", "safe"] {
        let o = locksim(&[&base[..], &["--fail-on", bad]].concat());
        assert_eq!(code(&o), Some(2), "{bad}: {}", stderr(&o));
        assert!(stderr(&o).contains("--fail-on"), "{}", stderr(&o));
        assert_eq!(stderr(&o).trim_end().lines().count(), 1, "{}", stderr(&o));
        assert!(o.stdout.is_empty(), "refused before running");
    }
    // A cell whose faults never took effect proves nothing: 3.
    let o = locksim(&[
        "campaign",
        "--algo",
        "redlock",
        "--faults",
        "leader-change",
        "--seeds",
        "3",
        "--fail-on",
        "safety",
    ]);
    assert_eq!(code(&o), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no fault took effect"),
        "{}",
        stderr(&o)
    );

    // merge: the same gate over the shards; --partial of a campaign file leaves its
    // expectation unjudged (3).
    let d = scratch("claims", "merge");
    for i in 0..2 {
        let o = locksim(
            &[
                &base[..],
                &[
                    "--shard",
                    &format!("{i}/2"),
                    "--out",
                    s(&d.join(format!("p{i}.jsonl"))),
                ],
            ]
            .concat(),
        );
        assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    }
    let (p0, p1) = (d.join("p0.jsonl"), d.join("p1.jsonl"));
    let o = locksim(&["merge", s(&p0), s(&p1)]);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let o = locksim(&["merge", s(&p0), s(&p1), "--fail-on", "S1"]);
    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
    let o = locksim(&["merge", s(&p0), s(&p1), "--fail-on", "S4"]);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let o = locksim(&["merge", s(&p0), "--partial", "--fail-on", "S4"]);
    assert_eq!(code(&o), Some(3), "{}", stderr(&o));
    let o = locksim(&["merge", s(&p0), s(&p1), "--fail-on", "X"]);
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    // A sweep's records: --fail-on would judge nothing, so it is refused.
    let sw = d.join("sweep.jsonl");
    let o = locksim(&[
        "sweep",
        "--algo",
        "central",
        "--faults",
        "pause",
        "--vary",
        "ttl=1s,2s",
        "--seeds",
        "2",
        "--out",
        s(&sw),
    ]);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let o = locksim(&["merge", s(&sw), "--fail-on", "S1"]);
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--fail-on"), "{}", stderr(&o));

    let file = d.join("c.toml");
    std::fs::write(
        &file,
        "algorithm = \"central\"\nfaults = [\"pause\"]\nseeds = 6\nexpect = [\"S1\"]\n",
    )
    .unwrap();
    let o = locksim(&[
        "campaign",
        s(&file),
        "--shard",
        "0/2",
        "--out",
        s(&d.join("f0.jsonl")),
    ]);
    assert_eq!(
        code(&o),
        Some(0),
        "one shard is judged at merge: {}",
        stderr(&o)
    );
    let o = locksim(&["merge", s(&d.join("f0.jsonl")), "--partial"]);
    assert_eq!(code(&o), Some(3), "{}{}", stdout(&o), stderr(&o));
    std::fs::remove_dir_all(&d).ok();
}

/// Item 8: `check` exited 0 on "not linearizable" (Jepsen exits non-zero on an invalid
/// result) and 1 on "unknown". Now 1 and 3; 0 for a linearizable history, 2 for bad input.
#[test]
fn check_exits_by_the_table() {
    let d = scratch("claims", "check");
    let bad = d.join("bad.edn");
    std::fs::write(
        &bad,
        "{:process 0, :type :invoke, :f :put, :key \"a\", :value \"1\"}\n\
         {:process 0, :type :ok, :f :put, :key \"a\", :value \"1\"}\n\
         {:process 1, :type :invoke, :f :get, :key \"a\", :value nil}\n\
         {:process 1, :type :ok, :f :get, :key \"a\", :value \"2\"}\n",
    )
    .unwrap();
    let good = d.join("good.edn");
    std::fs::write(
        &good,
        std::fs::read_to_string(&bad)
            .unwrap()
            .replace("\"2\"}", "\"1\"}"),
    )
    .unwrap();
    let junk = d.join("junk.edn");
    std::fs::write(&junk, "garbage\n").unwrap();
    let o = locksim(&["check", "--model", "kv", s(&bad)]);
    assert_eq!(code(&o), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("not linearizable"));
    let o = locksim(&["check", "--model", "kv", "--json", s(&good), s(&bad)]);
    assert_eq!(code(&o), Some(1), "{}", stdout(&o));
    let o = locksim(&["check", "--model", "kv", s(&good)]);
    assert_eq!(code(&o), Some(0), "{}", stdout(&o));
    let o = locksim(&["check", "--model", "kv", s(&bad), s(&junk)]);
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    std::fs::remove_dir_all(&d).ok();
}

/// Item 8: the table is in `--help`, with `--fail-on`; the other commands keep it (0 clean,
/// 1 a difference or violation, 2 bad input).
#[test]
fn every_command_keeps_the_exit_code_table() {
    let o = locksim(&["--help"]);
    let help = stdout(&o);
    for needle in [
        "Exit codes, the same for every command",
        "3  undecided or nothing exercised",
        "--fail-on",
    ] {
        assert!(help.contains(needle), "`{needle}` not in --help: {help}");
    }
    let o = locksim(&["campaign", "--help"]);
    assert!(stdout(&o).contains("--fail-on"), "{}", stdout(&o));
    let o = locksim(&["merge", "--help"]);
    assert!(stdout(&o).contains("--fail-on"), "{}", stdout(&o));
    assert_eq!(code(&locksim(&["list"])), Some(0));
    let trace = format!(
        "{}/../../traces/central-s2-5f7972d4.json",
        env!("CARGO_MANIFEST_DIR")
    );
    assert_eq!(code(&locksim(&["replay", &trace])), Some(0));
    let d = scratch("claims", "codes");
    let tampered = d.join("t.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    v["scenario"]["seed"] = (v["scenario"]["seed"].as_u64().unwrap() + 1).into();
    std::fs::write(&tampered, v.to_string()).unwrap();
    assert_eq!(code(&locksim(&["replay", s(&tampered)])), Some(1));
    assert_eq!(
        code(&locksim(&["replay", s(&d.join("missing.json"))])),
        Some(2)
    );
    assert_eq!(
        code(&locksim(&["export-tla", s(&d.join("missing.json"))])),
        Some(2)
    );
    assert_eq!(
        code(&locksim(&["render", s(&d.join("missing.json"))])),
        Some(2)
    );
    // shrink of a run that violates nothing: refused, 2.
    let o = locksim(&[
        "shrink", "--algo", "central", "--seed", "1", "--faults", "none",
    ]);
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    // A violated run: 1.
    let o = locksim(&[
        "run", "--algo", "central", "--seed", "1", "--faults", "pause",
    ]);
    assert_eq!(code(&o), Some(1), "{}", stdout(&o));
    std::fs::remove_dir_all(&d).ok();
}

/// Item 6, on the page: `run --html` of a run without grants said "verdict: safe".
#[test]
fn the_page_of_a_run_without_grants_is_not_safe() {
    let d = scratch("claims", "page");
    let plan = cut_everyone(&d);
    let page = d.join("p.html");
    let o = locksim(&[
        "run",
        "--algo",
        "central",
        "--seed",
        "1",
        "--faults",
        "none",
        "--plan",
        s(&plan),
        "--html",
        s(&page),
    ]);
    assert_eq!(code(&o), Some(3), "{}", stderr(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("verdict: nothing exercised"), "no verdict");
    assert!(!html.contains("verdict: safe"));
    std::fs::remove_dir_all(&d).ok();
}

// ---- H6: what a breaker found in the items 5–8 work ----

/// H6 item 1: faults of zero size changed nothing but were counted as applied, so the cell
/// read `safe`. A pause of 0 s is drawn and recorded, and takes effect nowhere: `n/a`.
#[test]
fn zero_size_drawn_faults_are_not_applied() {
    let o = locksim(&[
        "campaign",
        "--algo",
        "central",
        "--faults",
        "pause",
        "--seeds",
        "3",
        "--set",
        "pause_min=0s",
        "--set",
        "pause_max=0s",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["cells"][0]["faults_applied"], 0, "{v}");
}

/// H6 item 2: records written before `faults_applied` existed made an `n/a` cell read
/// `safe` in merge; they are refused (exit 2), naming the file, line and field.
#[test]
fn merge_refuses_records_without_faults_applied() {
    let d = scratch("claims", "old-records");
    let f = d.join("s.jsonl");
    let o = locksim(&[
        "campaign",
        "--algo",
        "redlock",
        "--faults",
        "leader-change",
        "--seeds",
        "2",
        "--out",
        s(&f),
    ]);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let old: String = std::fs::read_to_string(&f)
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v.as_object_mut().unwrap().remove("faults_applied");
            format!("{v}\n")
        })
        .collect();
    std::fs::write(&f, old).unwrap();
    let o = locksim(&["merge", s(&f)]);
    assert_eq!(code(&o), Some(2), "{}", stdout(&o));
    assert!(stderr(&o).contains("faults_applied"), "{}", stderr(&o));
    assert!(stderr(&o).contains("s.jsonl:1"), "{}", stderr(&o));
    let o = locksim(&[
        "campaign",
        "--algo",
        "redlock",
        "--faults",
        "leader-change",
        "--seeds",
        "2",
        "--out",
        s(&f),
        "--resume",
    ]);
    assert_eq!(code(&o), Some(2), "{}", stdout(&o));
    assert!(stderr(&o).contains("faults_applied"), "{}", stderr(&o));
}

/// H6 item 3: `--fail-on` exited 0 having judged nothing: a shard without seeds, or a
/// property the algorithm does not check (pg-advisory's lock never expires: no L1).
#[test]
fn fail_on_what_was_not_judged_proves_nothing() {
    let o = locksim(&[
        "campaign",
        "--algo",
        "central",
        "--faults",
        "none",
        "--seeds",
        "1",
        "--shard",
        "1/2",
        "--fail-on",
        "S1",
    ]);
    assert_eq!(code(&o), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("no seed was judged"), "{}", stderr(&o));
    let o = locksim(&[
        "campaign",
        "--algo",
        "pg-advisory",
        "--faults",
        "none",
        "--seeds",
        "2",
        "--fail-on",
        "L1",
    ]);
    assert_eq!(code(&o), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("L1 is not judged for pg-advisory"),
        "{}",
        stderr(&o)
    );
}

/// H6 item 4: `check` called an empty history linearizable and exited 0.
#[test]
fn check_of_no_operations_proves_nothing() {
    let d = scratch("claims", "check-empty");
    let f = d.join("empty.edn");
    std::fs::write(&f, "").unwrap();
    let o = locksim(&["check", "--model", "kv", s(&f)]);
    assert_eq!(code(&o), Some(3), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("0 operations"), "{}", stderr(&o));
}

/// H6 item 5: `render` exited 0 and said `matches_trace: true` when the re-run differed from
/// the trace; and the note showed two identical digests when an embedded event was removed.
#[test]
fn render_of_a_trace_the_rerun_does_not_match_exits_1() {
    let d = scratch("claims", "render-mismatch");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces/central-s3-7c028ac9.json"),
    )
    .unwrap();
    let t: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut edited = t.clone();
    edited["digest"] = "0123456789abcdef0123456789abcdef".into();
    let mut cut = t.clone();
    cut["events"].as_array_mut().unwrap().pop();
    for (name, trace) in [("digest", edited), ("cut", cut)] {
        let f = d.join(format!("{name}.json"));
        std::fs::write(&f, trace.to_string()).unwrap();
        let out = d.join(format!("{name}.html"));
        let o = locksim(&["render", s(&f), "-o", s(&out), "--force", "--json"]);
        assert_eq!(code(&o), Some(1), "{name}: {}{}", stdout(&o), stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(v["matches_trace"], false, "{v}");
        let notes = v["notes"].to_string();
        let digest = &t["digest"].as_str().unwrap()[..8];
        assert!(
            !notes.contains(&format!("digest {digest} where it recorded {digest}")),
            "{notes}"
        );
    }
}

/// H6 item 7: a seed whose simulation panicked exited 2 (bad input); the table counts a seed
/// that failed to run with the violations (1).
#[test]
fn run_of_a_seed_that_fails_to_run_exits_1() {
    let o = locksim(&[
        "run",
        "--algo",
        "raft-lease",
        "--faults",
        "crash-restart",
        "--set",
        "fsync=never",
        "--seed",
        "0",
    ]);
    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("failed to run"), "{}", stderr(&o));
    let o = locksim(&[
        "shrink",
        "--algo",
        "raft-lease",
        "--faults",
        "crash-restart",
        "--set",
        "fsync=never",
        "--seed",
        "0",
    ]);
    assert!(!stderr(&o).contains("violates nothing"), "{}", stderr(&o));
    assert!(stderr(&o).contains("failed to run"), "{}", stderr(&o));
}

/// H6 item 8: `--fail-on` took duplicates and empty items (`--algo central,central` is
/// refused).
#[test]
fn fail_on_refuses_duplicates_and_empty_items() {
    for bad in ["S1,S1", "S1,,S2", "safety,S2", "S1,"] {
        let o = locksim(&[
            "campaign",
            "--algo",
            "central",
            "--faults",
            "none",
            "--seeds",
            "1",
            "--fail-on",
            bad,
        ]);
        assert_eq!(code(&o), Some(2), "{bad}: {}", stderr(&o));
        assert!(stderr(&o).contains("--fail-on"), "{}", stderr(&o));
    }
}

/// H6 item 6: `redlock` under `leader-change` plus a plan isolating n1: the plan acted, the
/// drawn isolations found no leader, and `leader-change` was listed as survived.
#[test]
fn a_kind_beside_a_plan_must_act_itself() {
    let d = scratch("claims", "kind-plan");
    let plan = d.join("iso.toml");
    std::fs::write(
        &plan,
        "[[fault]]\nat = \"2s\"\ntype = \"isolate\"\nnode = \"n1\"\nduration = \"1s\"\n",
    )
    .unwrap();
    let args = [
        "campaign",
        "--algo",
        "redlock",
        "--faults",
        "leader-change",
        "--seeds",
        "3",
        "--plan",
        s(&plan),
    ];
    let o = locksim(&[&args[..], &["--markdown"]].concat());
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let md = stdout(&o);
    let line = md.lines().find(|l| l.starts_with("| `redlock`")).unwrap();
    assert!(line.ends_with("| nothing |"), "{line}");
    assert!(line.contains("leader-change n/a"), "{line}");
    let o = locksim(&[&args[..], &["--json"]].concat());
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v["cells"][0]["faults_applied"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["cells"][0]["kind_faults_applied"], 0, "{v}");
    let o = locksim(&[&args[..], &["--fail-on", "safety"]].concat());
    assert_eq!(code(&o), Some(3), "{}", stderr(&o));
    let o = locksim(&args);
    assert!(
        stdout(&o).contains("no leader-change fault took effect in any seed: only the plan did"),
        "{}",
        stdout(&o)
    );
}

/// Issue #24: `check --model lock` of a history with operations and no grant exited 0, though
/// no acquire was answered `ok` (here one acquire refused and a release of unknown outcome of a
/// handle the history never granted: one operation, trivially linearizable). A zero is not a
/// pass: exit 3, said on stderr, and `--json` carries the grants.
#[test]
fn check_of_a_lock_history_without_grants_proves_nothing() {
    let d = scratch("claims", "check-nogrants");
    let o = locksim(&[
        "run", "--algo", "central", "--seed", "1", "--json", "--events",
    ]);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let granted = d.join("granted.json");
    std::fs::write(&granted, &o.stdout).unwrap();
    let mut run: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let op = |id: u64, ms: u64, node: u32, op: u64, f: &str, phase: &str| {
        let mut e = serde_json::json!({"f": f, "id": id, "key": 0, "node": node, "op": op,
            "phase": phase, "type": "op", "time": ms * 1_000_000, "mono": ms * 1_000_000,
            "wall": ms * 1_000_000});
        if f == "release" {
            e["handle"] = serde_json::json!(7);
        }
        if phase != "invoke" {
            e["error"] = serde_json::json!("held");
        }
        e
    };
    run["history"]["events"] = serde_json::json!([
        op(0, 1, 2, 1, "acquire", "invoke"),
        op(1, 2, 2, 1, "acquire", "fail"),
        op(2, 3, 3, 2, "release", "invoke"),
        op(3, 4, 3, 2, "release", "info"),
    ]);
    let none = d.join("nogrants.json");
    std::fs::write(&none, run.to_string()).unwrap();
    let o = locksim(&["check", "--model", "lock", s(&none)]);
    assert_eq!(code(&o), Some(3), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("linearizable (1 operations"),
        "{}",
        stdout(&o)
    );
    assert!(
        stderr(&o).contains("no grant") && stderr(&o).contains("proves nothing"),
        "{}",
        stderr(&o)
    );
    let o = locksim(&["check", "--model", "lock", "--json", s(&none)]);
    assert_eq!(code(&o), Some(3));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["grants"], 0, "{v}");
    // The run it came from has grants: judged and clean, exit 0.
    let o = locksim(&["check", "--model", "lock", "--json", s(&granted)]);
    assert_eq!(code(&o), Some(0), "{}{}", stdout(&o), stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v["grants"].as_u64().unwrap() > 0, "{v}");
}

/// Issue #24: k8s-lease is judged as a compare-and-swap record (`lock_is_record`) by `run` and
/// campaigns, but `check --model lock` used the plain lease spec, so the same history was
/// clean in `run` and "not linearizable" in `check` (seed 0 with `release_on_cancel` and
/// renewals: a release that lost the race with its own renewal, then the holder taking its
/// record back). `check` now uses the record spec for k8s-lease, and still the lease spec for
/// the others.
#[test]
fn check_judges_k8s_lease_by_the_record_spec_as_run_does() {
    let d = scratch("claims", "check-record");
    let o = locksim(&[
        "run",
        "--algo",
        "k8s-lease",
        "--seed",
        // A seed whose holder takes its record back at once (a lease forbids that).
        "5",
        "--faults",
        "none",
        "--set",
        "release_on_cancel=true",
        "--set",
        "renew_every=300ms",
        "--json",
        "--events",
    ]);
    let run: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let s3 = run["verdict"]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .any(|v| v["kind"] == "S3");
    assert!(!s3, "run judges seed 5 clean: {}", run["verdict"]);
    let f = d.join("k8s.json");
    std::fs::write(&f, &o.stdout).unwrap();
    let o = locksim(&["check", "--model", "lock", s(&f)]);
    assert_eq!(code(&o), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains(": linearizable"), "{}", stdout(&o));
    // The same history relabelled as a lease the server ends itself (central) is judged by
    // the lease spec, which it breaks.
    let mut lease = run.clone();
    lease["scenario"]["algorithm"] = serde_json::json!("central");
    lease["scenario"]["config"] = serde_json::json!({});
    let g = d.join("as-central.json");
    std::fs::write(&g, lease.to_string()).unwrap();
    let o = locksim(&["check", "--model", "lock", s(&g)]);
    assert_eq!(code(&o), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("not linearizable"), "{}", stdout(&o));
}

/// A breaker's find: with grants but no write reaching the resource (`writes = 0`, or writes
/// that all time out), S2 held only because nothing was written, and run said SAFE and
/// campaign PASS. The run now says S2 was never exercised (`--json`: `writes_accepted`), the
/// campaign cell says NO WRITES, and `--fail-on S2` exits 3 for it.
#[test]
fn grants_without_accepted_writes_leave_s2_untested() {
    let run = [
        "run",
        "--algo",
        "central",
        "--seed",
        "0",
        "--faults",
        "partition",
        "--set",
        "writes=0",
    ];
    let o = locksim(&run);
    let t = stdout(&o);
    assert!(t.contains("verdict: SAFE, S2 UNTESTED"), "{t}");
    assert!(t.contains("no write reached the resource"), "{t}");
    let o = locksim(&[&run[..], &["--json"]].concat());
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["writes_accepted"], 0, "{v}");
    assert!(v["grants"].as_u64().unwrap() > 0, "{v}");
    // The same seed with writes: S2 is exercised.
    let o = locksim(&run[..7]);
    assert!(!stdout(&o).contains("S2 UNTESTED"), "{}", stdout(&o));
    let campaign = [
        "campaign",
        "--algo",
        "central",
        "--faults",
        "partition",
        "--seeds",
        "10",
        "--set",
        "writes=0",
        "--fail-on",
        "S1,S2",
    ];
    let o = locksim(&campaign);
    assert_eq!(code(&o), Some(3), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("NO WRITES"), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("S2: no write reached the resource in any seed: proves nothing"),
        "{}",
        stderr(&o)
    );
    // With writes, the gate judges S2 as usual (the partition's late writes, seed 6: exit 1).
    let o = locksim(&[&campaign[..7], &["--fail-on", "S2"]].concat());
    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
    assert!(!stdout(&o).contains("NO WRITES"), "{}", stdout(&o));
}
