//! Issue #24 items 9–12, as a user meets them: `merge` that cannot be fooled or blown up by its
//! records, inputs parsed strictly (durations, node names, nested trace fields), `check` whose
//! output stays bounded, and the kv search that stops at the first failing key.

use std::path::Path;

mod common;
use common::{corpus, locksim, refused, s, scratch, stderr, stdout};

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

#[test]
fn an_unknown_field_inside_an_event_is_refused_like_a_top_level_one() {
    let d = scratch("inputs", "nested");
    let text = std::fs::read_to_string(corpus("central-s3-7c028ac9.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let events = v["events"].as_array().unwrap();
    let i = events
        .iter()
        .position(|e| e.get("deadline").is_some())
        .expect("an event with a deadline");
    let mut edited = v.clone();
    edited["events"][i]["deadline"]["lcoal"] = serde_json::json!(5);
    let file = d.join("nested.json");
    write(&file, &serde_json::to_string_pretty(&edited).unwrap());
    let at = format!("events[{i}]");
    for cmd in ["replay", "render"] {
        let page = d.join("nested.html");
        let mut args = vec![cmd, s(&file)];
        if cmd == "render" {
            args.extend(["-o", s(&page)]);
        }
        refused(
            &locksim(&args),
            &["nested.json", &at, "unknown field `deadline.lcoal`"],
        );
    }
    // A field inside a fault event's fault, too (serde refuses that one itself).
    let j = events
        .iter()
        .position(|e| e["type"] == "fault")
        .expect("a fault event");
    let mut edited = v.clone();
    edited["events"][j]["fault"]["duraton"] = serde_json::json!(5);
    write(&file, &serde_json::to_string_pretty(&edited).unwrap());
    refused(
        &locksim(&["replay", s(&file)]),
        &["nested.json", "unknown field `duraton`"],
    );
    // An explicit null inside a nested object is not unknown; the untouched trace replays.
    write(&file, &text);
    assert_eq!(locksim(&["replay", s(&file)]).status.code(), Some(0));
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn a_duration_beyond_64_bit_nanoseconds_is_an_error() {
    for v in [
        "ttl=94522879700260684295381835h",
        "ttl=94522879700260684295381835.9h",
        "ttl=9223372036854775808ns",
    ] {
        let o = locksim(&["run", "--algo", "central", "--seed", "1", "--set", v]);
        refused(&o, &["`ttl`", "is too large"]);
    }
}

/// `campaign ARGS --out FILE` (exit 0), and the file's records as JSON values.
fn records(d: &Path, name: &str, args: &[&str]) -> (String, Vec<serde_json::Value>) {
    let out = d.join(name);
    let mut all = vec!["campaign"];
    all.extend(args);
    all.extend(["--out", s(&out)]);
    let o = locksim(&all);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    let v = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (s(&out).to_string(), v)
}

fn write_records(path: &Path, records: &[serde_json::Value]) {
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    write(path, &text);
}

const SMALL: &[&str] = &["--algo", "central", "--faults", "none", "--seeds", "4"];

#[test]
fn merge_refuses_two_files_that_disagree_about_a_seed_in_either_order() {
    let d = scratch("inputs", "disagree");
    let (a, recs) = records(&d, "a.jsonl", SMALL);
    let mut edited = recs.clone();
    edited[2]["grants"] = serde_json::json!(edited[2]["grants"].as_u64().unwrap() + 7);
    let b = d.join("b.jsonl");
    write_records(&b, &edited);
    for (x, y) in [(a.as_str(), s(&b)), (s(&b), a.as_str())] {
        let o = locksim(&["merge", x, y]);
        refused(&o, &["disagree about seed", "a.jsonl:", "b.jsonl:"]);
    }
    // The same records twice are one run's, counted once.
    let copy = d.join("copy.jsonl");
    std::fs::copy(&a, &copy).unwrap();
    let o = locksim(&["merge", "--json", &a, s(&copy)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("counted once"), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["cells"][0]["seeds"], 4);
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn merge_refuses_a_wrapped_seed_range_and_totals_past_64_bits() {
    let d = scratch("inputs", "wrap");
    let (_, recs) = records(
        &d,
        "a.jsonl",
        &["--algo", "central", "--faults", "none", "--seeds", "2"],
    );
    // A range that runs past 2^64: seeds u64::MAX-1 and u64::MAX… and 0.
    let mut wrapped = recs.clone();
    for (i, r) in wrapped.iter_mut().enumerate() {
        r["first_seed"] = serde_json::json!(u64::MAX - 1);
        r["seeds"] = serde_json::json!(3);
        r["seed"] = serde_json::json!(u64::MAX - 1 + i as u64);
    }
    let f = d.join("wrapped.jsonl");
    write_records(&f, &wrapped);
    refused(
        &locksim(&["merge", s(&f)]),
        &["wrapped.jsonl:1", "past 2^64"],
    );
    refused(
        &locksim(&["merge", "--partial", s(&f)]),
        &["wrapped.jsonl:1", "past 2^64"],
    );
    // Grants that add up past 2^64 (they wrapped to a small number).
    let mut big = recs.clone();
    for r in &mut big {
        r["grants"] = serde_json::json!(1u64 << 63);
    }
    write_records(&f, &big);
    refused(
        &locksim(&["merge", s(&f)]),
        &["wrapped.jsonl:2", "grants add up past 2^64"],
    );
    // So do the lock metrics' counters.
    let mut big = recs.clone();
    for r in &mut big {
        r["metrics"]["messages_sent"] = serde_json::json!(u64::MAX / 2 + 1);
    }
    write_records(&f, &big);
    refused(
        &locksim(&["merge", s(&f)]),
        &["wrapped.jsonl:2", "lock metrics"],
    );
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn merge_work_is_bounded_by_the_records_not_the_sizes_they_claim() {
    let d = scratch("inputs", "claims");
    // A trillion shards of three seeds: only shards 0..2 hold seeds.
    let (f, _) = records(
        &d,
        "s.jsonl",
        &[
            "--algo",
            "central",
            "--faults",
            "none",
            "--seeds",
            "3",
            "--shard",
            "0/1000000000000",
        ],
    );
    let o = locksim(&["merge", "--partial", &f]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("shards 1/1000000000000, 2/1000000000000 missing"),
        "{err}"
    );
    assert!(err.len() < 2_000, "{err}");
    // A record that claims a billion cells.
    let (_, recs) = records(&d, "c.jsonl", SMALL);
    let mut claims = recs.clone();
    for r in &mut claims {
        r["cells"] = serde_json::json!(1_000_000_000u64);
    }
    let c = d.join("claims.jsonl");
    write_records(&c, &claims);
    let o = locksim(&["merge", "--partial", s(&c)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("cell 1: 4 seeds of 4 missing"), "{err}");
    assert!(
        err.contains("and 999999994 more cells without any record"),
        "{err}"
    );
    assert!(err.len() < 2_000, "{err}");
    refused(
        &locksim(&["merge", s(&c)]),
        &["--partial", "999999994 more cells"],
    );
    // A claimed seed range beyond what any campaign runs.
    let mut claims = recs.clone();
    for r in &mut claims {
        r["seeds"] = serde_json::json!(u64::MAX / 2);
    }
    write_records(&c, &claims);
    refused(
        &locksim(&["merge", "--partial", s(&c)]),
        &["claims.jsonl:1", "1 to 1000000"],
    );
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn merge_json_of_campaign_file_shards_is_campaign_json_byte_for_byte() {
    let d = scratch("inputs", "json");
    // Given in an order that is not the files' sorted order, one failing its expectation.
    let z = d.join("z.toml");
    let a = d.join("a.toml");
    write(
        &z,
        "name = \"zed\"\nalgorithm = \"central\"\nfaults = [\"none\"]\nseeds = 6\nexpect = \"safe\"\n",
    );
    write(
        &a,
        "name = \"ay\"\nalgorithm = \"central\"\nfaults = [\"none\"]\nseeds = 5\nexpect = [\"S1\"]\n",
    );
    let whole = locksim(&["campaign", s(&z), s(&a), "--json"]);
    assert_eq!(whole.status.code(), Some(1), "{}", stderr(&whole));
    let mut parts = Vec::new();
    for i in 0..2 {
        let shard = format!("{i}/2");
        let p = d.join(format!("p{i}.jsonl"));
        let o = locksim(&["campaign", s(&z), s(&a), "--shard", &shard, "--out", s(&p)]);
        assert!(o.status.success(), "{}", stderr(&o));
        parts.push(s(&p).to_string());
    }
    for order in [[&parts[0], &parts[1]], [&parts[1], &parts[0]]] {
        let merged = locksim(&["merge", "--json", order[0], order[1]]);
        assert_eq!(merged.status.code(), Some(1), "{}", stderr(&merged));
        assert_eq!(stdout(&merged), stdout(&whole));
    }
    // And the table, too.
    let table = locksim(&["campaign", s(&z), s(&a)]);
    let merged = locksim(&["merge", &parts[0], &parts[1]]);
    assert_eq!(stdout(&merged), stdout(&table));
    std::fs::remove_dir_all(&d).ok();
}

/// A Jepsen etcd log of `n` operations on one register, one at a time (writes and reads that
/// fit), ending with a read of a value never written: its longest linearizable prefix has
/// `n - 1` operations (scripts/big-history.py writes the same for measurements).
fn failing_etcd_log(n: usize) -> String {
    let mut t = String::new();
    let mut value = 0;
    for i in 0..n - 1 {
        let p = i % 5;
        if i % 2 == 0 {
            value = i;
            t += &format!("INFO  jepsen.util - {p}\t:invoke\t:write\t{value}\n");
            t += &format!("INFO  jepsen.util - {p}\t:ok\t:write\t{value}\n");
        } else {
            t += &format!("INFO  jepsen.util - {p}\t:invoke\t:read\tnil\n");
            t += &format!("INFO  jepsen.util - {p}\t:ok\t:read\t{value}\n");
        }
    }
    t += "INFO  jepsen.util - 0\t:invoke\t:read\tnil\n";
    t += &format!("INFO  jepsen.util - 0\t:ok\t:read\t{}\n", value + 1);
    t
}

#[test]
fn check_bounds_the_counterexample_of_a_long_failing_history() {
    let d = scratch("inputs", "bounded");
    let n = 20_000;
    let log = d.join("long.log");
    write(&log, &failing_etcd_log(n));
    let o = locksim(&["check", "--model", "etcd", "--json", s(&log)]);
    let out = stdout(&o);
    assert!(out.len() < 400_000, "{} bytes of JSON", out.len());
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["verdict"], "not_linearizable", "{v}");
    assert_eq!(v["ops"], n);
    assert_eq!(v["prefix_length"], n - 1);
    assert_eq!(v["prefix"].as_array().unwrap().len(), 200);
    let x = &v["explanation"];
    assert_eq!(x["prefix"].as_array().unwrap().len(), 200);
    assert_eq!(x["prefix_skipped"], n - 1 - 200);
    let ops = x["ops"].as_array().unwrap().len();
    assert!((1_000..=1_201).contains(&ops), "{ops} operations shown");
    assert_eq!(x["ops_skipped"].as_u64().unwrap() as usize, n - ops);
    // The state before the first step shown is the one after the skipped steps: the last
    // write before them.
    let first_shown = x["prefix"][0]["id"].as_u64().unwrap();
    assert!(x["initial"].as_str().unwrap().parse::<u64>().is_ok(), "{x}");
    // The last step and the stuck read are among the operations drawn.
    let ids: Vec<u64> = x["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_u64().unwrap())
        .collect();
    assert!(ids.contains(&first_shown));
    let stuck = x["stuck"][0]["id"].as_u64().unwrap();
    assert!(ids.contains(&stuck));
    // The text says the whole prefix's length.
    let o = locksim(&["check", "--model", "etcd", s(&log)]);
    assert!(
        stdout(&o).contains(&format!("prefix has {} operations", n - 1)),
        "{}",
        stdout(&o)
    );
    // And so does the page, which lists the last steps only.
    let page = d.join("long.html");
    let o = locksim(&["check", "--model", "etcd", "--html", s(&page), s(&log)]);
    assert!(o.status.code().is_some(), "{}", stderr(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.len() < 1_000_000, "{} bytes of page", html.len());
    assert!(html.contains(&format!(
        "prefix ({} steps, the last 200 listed below)",
        n - 1
    )));
    assert!(html.contains(&format!("state after the first {} steps", n - 1 - 200)));
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn check_of_a_run_refuses_an_unknown_field_inside_an_event() {
    let d = scratch("inputs", "run-fields");
    let o = locksim(&[
        "run", "--algo", "central", "--seed", "1", "--faults", "none", "--json", "--events",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let file = d.join("run.json");
    write(&file, &v.to_string());
    // As printed, it is read.
    let o = locksim(&["check", "--model", "lock", s(&file)]);
    assert!(stdout(&o).contains("linearizable"), "{}", stderr(&o));
    let events = v["history"]["events"].as_array().unwrap();
    let i = events
        .iter()
        .position(|e| e.get("deadline").is_some())
        .expect("an event with a deadline");
    v["history"]["events"][i]["deadline"]["lcoal"] = serde_json::json!(1);
    write(&file, &v.to_string());
    let o = locksim(&["check", "--model", "lock", s(&file)]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("history.events[{i}]")) && err.contains("`deadline.lcoal`"),
        "{err}"
    );
    // And a top-level one.
    v["history"]["events"][i]["deadline"]
        .as_object_mut()
        .unwrap()
        .remove("lcoal");
    v["history"]["events"][i]["tokn"] = serde_json::json!(1);
    write(&file, &v.to_string());
    let o = locksim(&["check", "--model", "lock", s(&file)]);
    assert!(
        stderr(&o).contains("unknown field `tokn`"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn settings_and_client_errors_name_their_line_as_fault_errors_do() {
    let d = scratch("inputs", "key-lines");
    let head = "name = \"x\"\nalgorithm = \"central\"\nfaults = [\"none\"]\nseeds = 2\nexpect = \"safe\"\n";
    let cases = [
        // (the file's tables after the head, what the error must say)
        ("[settings]\nclients = 3\nttl = \"abc\"\n", "line 9: "),
        ("[settings]\nclients = 3\n\nbogus = 1\n", "line 10: "),
        ("[settings]\nttl = [1]\n", "line 8: "),
        (
            "[client.c2]\nwork_min = \"1s\"\nttl = \"zz\"\n",
            "line 9: client.c2: `ttl`",
        ),
        (
            "[client.c2]\nwork_min = \"2s\"\nwork_max = \"1s\"\n",
            "line 8: client c2",
        ),
        ("\n[client.c9]\nttl = \"1s\"\n", "line 8: client c9"),
    ];
    for (i, (tables, want)) in cases.iter().enumerate() {
        let file = d.join(format!("f{i}.toml"));
        write(&file, &format!("{head}\n{tables}"));
        refused(
            &locksim(&["campaign", s(&file)]),
            &[&format!("f{i}.toml"), want],
        );
    }
    // A frontier file's [settings] too.
    let file = d.join("frontier.toml");
    write(
        &file,
        "why = \"x\"\nalgorithms = [\"central\"]\nfaults = [\"pause\"]\nseeds = 2\nvary = [\"pause_max=100ms..1s:2\"]\n\n[settings]\nclients = 2\nttl = \"abc\"\n\n[[expect]]\nalgorithm = \"central\"\nproperty = \"S1\"\nzero_below = \"100ms\"\nnonzero_from = \"1s\"\n",
    );
    refused(
        &locksim(&["sweep", s(&file)]),
        &["frontier.toml", "line 9: "],
    );
    std::fs::remove_dir_all(&d).ok();
}

/// `--out FILE --force` replaces a record file, never the campaign file being run (a breaker
/// replaced its scenario with JSON records this way); the file is left as it was.
#[test]
fn campaign_out_never_replaces_its_own_input() {
    let d = scratch("inputs", "out-self");
    let f = d.join("self.toml");
    let body = "algorithm = \"central\"\nfaults = [\"none\"]\nseeds = 2\nexpect = \"safe\"\n";
    std::fs::write(&f, body).unwrap();
    let o = locksim(&["campaign", s(&f), "--out", s(&f), "--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("is one of the campaign files to run"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_to_string(&f).unwrap(), body);
}
