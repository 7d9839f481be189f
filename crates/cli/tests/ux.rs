//! The CLI as a fresh user met it: output files in folders that do not exist yet, `merge` of a
//! sweep's shards printing what `sweep` prints, files given to the wrong command, settings
//! given twice, a shard's summary, and tables whose columns line up.

use std::process::Output;

mod common;
use common::{locksim, s, scratch, stdout, text};

/// Exit 2 with one line on stderr holding every needle.
fn refused(o: &Output, needles: &[&str]) -> String {
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    for n in needles {
        assert!(err.contains(n), "`{n}` not in: {err}");
    }
    err
}

const SWEEP: &[&str] = &[
    "sweep",
    "--algo",
    "redlock,central",
    "--faults",
    "pause",
    "--vary",
    "pause_max=100ms..3s:3",
    "--set",
    "ttl=1s",
    "--seeds",
    "6",
    "--jobs",
    "2",
];

#[test]
fn out_files_get_their_folders_and_are_never_replaced_without_force() {
    let dir = scratch("ux", "out");
    let rec = dir.join("runs/new/a.jsonl");
    let campaign = [
        "campaign", "--algo", "central", "--faults", "none", "--seeds", "3", "--jobs", "1", "--out",
    ];
    let o = locksim(&[&campaign[..], &[s(&rec)]].concat());
    assert!(o.status.success(), "{}", text(&o.stderr));
    let written = std::fs::read_to_string(&rec).unwrap();
    assert_eq!(written.lines().count(), 3, "{written}");
    // The folder existing now, the file is still not replaced without --force.
    let o = locksim(&[&campaign[..], &[s(&rec)]].concat());
    refused(&o, &["exists", "--force"]);
    assert_eq!(std::fs::read_to_string(&rec).unwrap(), written);

    let rec = dir.join("sweeps/deep/b.jsonl");
    let svg = dir.join("plots/p.svg");
    let o = locksim(&[SWEEP, &["--out", s(&rec), "--svg", s(&svg)]].concat());
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        std::fs::read_to_string(&rec).unwrap().lines().count(),
        3 * 2 * 6
    );
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
    let o = locksim(&[SWEEP, &["--out", s(&rec)]].concat());
    refused(&o, &["exists", "--force"]);

    // export-tla -o into a new folder (its --help shows `-o /tmp/tv/CentralS2.tla`).
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../traces/central-s3-7c028ac9.json"
    );
    let module = dir.join("tv/Central3.tla");
    let o = locksim(&["export-tla", trace, "-o", s(&module)]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(std::fs::read_to_string(&module)
        .unwrap()
        .contains("MODULE Central3"));
    assert!(dir.join("tv/Central3.cfg").exists());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn merge_of_sweep_shards_prints_the_json_and_csv_the_sweep_prints() {
    let dir = scratch("ux", "merge-sweep");
    let whole = locksim(&[SWEEP, &["--json"]].concat());
    assert!(whole.status.success(), "{}", text(&whole.stderr));
    let whole: serde_json::Value = serde_json::from_slice(&whole.stdout).unwrap();
    let csv = locksim(&[SWEEP, &["--csv"]].concat());
    assert!(csv.status.success());
    let parts: Vec<String> = (0..2)
        .map(|i| {
            let p = dir.join(format!("part{i}.jsonl"));
            let shard = format!("{i}/2");
            let o = locksim(&[SWEEP, &["--shard", &shard, "--out", s(&p)]].concat());
            assert!(o.status.success(), "{}", text(&o.stderr));
            s(&p).to_string()
        })
        .collect();
    let merged = locksim(&["merge", "--json", &parts[0], &parts[1]]);
    assert!(merged.status.success(), "{}", text(&merged.stderr));
    let merged: serde_json::Value = serde_json::from_slice(&merged.stdout).unwrap();
    assert_eq!(merged["axes"], whole["axes"], "the axes, log scale and all");
    assert_eq!(merged["axes"][0]["key"], "pause_max");
    assert_eq!(merged["axes"][0]["log"], true);
    assert_eq!(merged["points"], whole["points"]);
    let merged_csv = locksim(&["merge", "--csv", &parts[0], &parts[1]]);
    assert!(merged_csv.status.success(), "{}", text(&merged_csv.stderr));
    assert_eq!(text(&merged_csv.stdout), text(&csv.stdout));
    assert!(text(&csv.stdout).starts_with("sweep,pause_max,algorithm,faults,seeds"));

    // A missing seed, or a cell whose records disagree, is named by its point.
    let lines: Vec<String> = std::fs::read_to_string(&parts[0])
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    let at_3s = lines
        .iter()
        .position(|l| l.contains("\"point\":\"pause_max=3s\""))
        .unwrap();
    let cut = dir.join("cut.jsonl");
    let mut kept = lines.clone();
    kept.remove(at_3s);
    std::fs::write(&cut, kept.join("\n") + "\n").unwrap();
    refused(
        &locksim(&["merge", s(&cut), &parts[1]]),
        &["at pause_max=3s", "1 seed of 6 missing"],
    );
    let bent = dir.join("bent.jsonl");
    let mut other = lines.clone();
    let tail = other.len() - 1;
    other[tail] = other[tail].replacen("\"settings\":\"", "\"settings\":\"x", 1);
    std::fs::write(&bent, other.join("\n") + "\n").unwrap();
    let point = lines[tail]
        .split("\"point\":\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_string();
    refused(
        &locksim(&["merge", s(&bent), &parts[1]]),
        &[&format!("(sweep point {point})"), "different runs"],
    );

    // Campaign records have no CSV form: a clear error, and --help says so.
    let c = dir.join("c.jsonl");
    let o = locksim(&[
        "campaign",
        "--algo",
        "central",
        "--faults",
        "none",
        "--seeds",
        "2",
        "--out",
        s(&c),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    refused(
        &locksim(&["merge", "--csv", s(&c)]),
        &["--csv", "campaign records"],
    );
    let help = text(&locksim(&["merge", "--help"]).stdout);
    assert!(
        help.contains("--csv") && help.contains("Campaign records have no CSV"),
        "{help}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn merge_of_frontier_shards_prints_the_frontiers_the_sweep_prints() {
    let dir = scratch("ux", "merge-frontier");
    let file = dir.join("f.toml");
    std::fs::write(
        &file,
        "why = \"a test\"\nalgorithms = [\"central-fencing\"]\nfaults = [\"pause\"]\nseeds = 6\nvary = [\"pause_max=100ms,3s\"]\n[settings]\nttl = \"1s\"\n[[expect]]\nalgorithm = \"central-fencing\"\nproperty = \"S2\"\nzero = true\n",
    )
    .unwrap();
    let whole = locksim(&["sweep", s(&file), "--json"]);
    assert!(whole.status.success(), "{}", text(&whole.stderr));
    let whole: serde_json::Value = serde_json::from_slice(&whole.stdout).unwrap();
    let mut parts = Vec::new();
    for i in 0..2 {
        let p = dir.join(format!("p{i}.jsonl"));
        let shard = format!("{i}/2");
        let o = locksim(&["sweep", s(&file), "--shard", &shard, "--out", s(&p)]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        // One shard does not judge the file, and says so rather than "0 failed".
        let err = text(&o.stderr);
        assert!(
            err.contains("judged at merge") && !err.contains("0 failed"),
            "{err}"
        );
        parts.push(s(&p).to_string());
    }
    let merged = locksim(&["merge", "--json", &parts[0], &parts[1]]);
    assert!(merged.status.success(), "{}", text(&merged.stderr));
    let merged: serde_json::Value = serde_json::from_slice(&merged.stdout).unwrap();
    let (a, b) = (&merged["frontiers"][0], &whole["frontiers"][0]);
    for k in [
        "file", "name", "ok", "verdict", "problems", "axes", "points",
    ] {
        assert_eq!(a[k], b[k], "{k}");
    }
    assert_eq!(a["verdict"], "PASS");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn files_that_are_not_records_say_what_records_are() {
    let dir = scratch("ux", "not-records");
    let notes = dir.join("notes.txt");
    std::fs::write(&notes, "hello\n").unwrap();
    let err = refused(
        &locksim(&["merge", s(&notes)]),
        &["notes.txt:1: not a locksim record (expected", "--out"],
    );
    assert!(err.contains("expected value"), "serde's detail: {err}");
    // A JSON object of another kind (a run's --json) is not a record either.
    let json = dir.join("summary.jsonl");
    std::fs::write(&json, "{\"digest\":\"ab\",\"verdict\":{}}\n").unwrap();
    refused(
        &locksim(&["merge", s(&json)]),
        &[
            "summary.jsonl:1: not a locksim record",
            "unknown field `digest`",
        ],
    );
    // A scenario file gets told what to do with it.
    refused(
        &locksim(&["merge", "../../sims/central-safe.toml"]),
        &[
            "central-safe.toml:1: not a locksim record",
            "locksim campaign FILE",
        ],
    );
    // --resume reads records too.
    refused(
        &locksim(&[
            "campaign",
            "--algo",
            "central",
            "--faults",
            "none",
            "--seeds",
            "2",
            "--resume",
            "--out",
            s(&notes),
        ]),
        &["notes.txt:1: not a locksim record"],
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "hello\n");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_file_given_to_the_other_command_gets_a_hint() {
    let frontier = "../../sims/frontier/redlock-pause.toml";
    let campaign = "../../sims/central-safe.toml";
    refused(
        &locksim(&["campaign", frontier]),
        &[
            "redlock-pause.toml",
            "this is a frontier file",
            "locksim sweep",
        ],
    );
    refused(
        &locksim(&["run", frontier, "--seed", "0"]),
        &["this is a frontier file", "locksim sweep"],
    );
    refused(
        &locksim(&["sweep", campaign]),
        &[
            "central-safe.toml",
            "this is a campaign file",
            "locksim campaign",
        ],
    );
}

#[test]
fn vary_ranges_from_zero_and_point_counts() {
    // A bare 0 is zero in any unit: `0..1s:3` is three durations.
    let o = locksim(&[
        "sweep",
        "--algo",
        "central",
        "--faults",
        "pause",
        "--vary",
        "pause_max=0..1s:3",
        "--seeds",
        "2",
        "--json",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["axes"][0]["values"],
        serde_json::json!(["0s", "500ms", "1s"])
    );
    assert_eq!(v["axes"][0]["unit"], "duration");
    let err = refused(
        &locksim(&["sweep", "--algo", "central", "--vary", "x=0..1s:0"]),
        &["0 points", "at least 2"],
    );
    assert!(!err.contains("mix"), "{err}");
    refused(
        &locksim(&["sweep", "--algo", "central", "--vary", "pause_max=1s..2s:1"]),
        &["1 point (", "at least 2"],
    );
    refused(
        &locksim(&["sweep", "--algo", "central", "--vary", "pause_max=5..2s:3"]),
        &["mix durations and integers", "unit"],
    );
}

#[test]
fn a_knob_or_an_algorithm_given_twice_is_an_error() {
    refused(
        &locksim(&[
            "sweep",
            "--algo",
            "central",
            "--vary",
            "ttl=1s..2s:2",
            "--set",
            "ttl=3s",
        ]),
        &["`ttl` is both varied", "ttl=3s"],
    );
    refused(
        &locksim(&[
            "run", "--algo", "central", "--seed", "1", "--set", "ttl=1s", "--set", "ttl=2s",
        ]),
        &["`ttl` is set twice", "ttl=1s", "ttl=2s"],
    );
    refused(
        &locksim(&[
            "campaign",
            "--algo",
            "redlock",
            "--seeds",
            "1",
            "--set",
            "clients=2",
            "--set",
            "clients=4",
        ]),
        &["`clients` is set twice"],
    );
    refused(
        &locksim(&["campaign", "--algo", "central,central", "--seeds", "1"]),
        &["algorithm `central` is named twice"],
    );
    let err = refused(
        &locksim(&[
            "sweep",
            "--algo",
            "redlock,redlock",
            "--vary",
            "ttl=1s..2s:2",
            "--seeds",
            "1",
        ]),
        &["algorithm `redlock` is named twice"],
    );
    assert!(!err.contains(" at "), "not blamed on a point: {err}");
}

#[test]
fn a_sharded_campaign_says_its_expectations_are_judged_at_merge() {
    let dir = scratch("ux", "shard-summary");
    std::fs::write(
        dir.join("a.toml"),
        "algorithm = \"central\"\nfaults = [\"none\"]\nseeds = 4\nexpect = \"safe\"\n",
    )
    .unwrap();
    let o = locksim(&["campaign", s(&dir), "--shard", "0/2"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("judged at merge"), "{err}");
    assert!(!err.contains("failed their expectation"), "{err}");
    let o = locksim(&["campaign", s(&dir), "--shard", "1/2", "--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let verdict = v["campaigns"][0]["verdict"].as_str().unwrap_or_default();
    assert!(verdict.contains("judged at merge"), "{v}");
    let whole = locksim(&["campaign", s(&dir)]);
    assert!(text(&whole.stderr).contains("0 failed their expectation"));
    std::fs::remove_dir_all(&dir).ok();
}

/// The column of every line of `block` (a header and its rows) where the text below the
/// header's `name` ends: right-aligned columns end at the same place on every line.
fn assert_aligned(block: &[&str], name: &str) {
    // The headers are ASCII: a byte index is a character index.
    let at = block[0]
        .find(name)
        .unwrap_or_else(|| panic!("{name} in {block:?}"))
        + name.len();
    for l in &block[1..] {
        let c: Vec<char> = l.chars().collect();
        assert!(
            c.len() >= at && c[at - 1] != ' ' && c.get(at).is_none_or(|&x| x == ' '),
            "`{name}` column shifted:\n{}\n{l}",
            block[0]
        );
    }
}

#[test]
fn tables_line_up_with_long_labels_and_say_one_server() {
    let dir = scratch("ux", "tables");
    let plan = dir.join("plan.toml");
    std::fs::write(
        &plan,
        "[[fault]]\nat = \"2s\"\ntype = \"pause\"\nnode = \"c1\"\nduration = \"1s\"\n",
    )
    .unwrap();
    let o = locksim(&[
        "campaign",
        "--algo",
        "central,central-fencing",
        "--faults",
        "crash-restart",
        "--plan",
        s(&plan),
        "--seeds",
        "2",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("crash-restart+plan"), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    let main = &lines[..3];
    assert_aligned(main, "seeds");
    assert_aligned(main, "grants");
    let m = lines
        .iter()
        .position(|l| l.starts_with("lock metrics"))
        .unwrap();
    assert_aligned(&lines[m..m + 3], "acquire p50/p99");
    assert_aligned(&lines[m..m + 3], "msgs (dropped)");

    // A knob longer than the sweep table's usual column.
    let o = locksim(&[
        "sweep",
        "--algo",
        "central",
        "--faults",
        "pause",
        "--vary",
        "c1.clock_drift_ppm=0..200000:3",
        "--seeds",
        "2",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let lines: Vec<&str> = out.lines().take(4).collect();
    assert!(lines[0].contains("c1.clock_drift_ppm"), "{out}");
    assert_aligned(&lines, "c1.clock_drift_ppm");
    assert_aligned(&lines, "seeds");

    // One server is one server.
    refused(
        &locksim(&[
            "run",
            "--algo",
            "central",
            "--seed",
            "1",
            "--max-memory",
            "1KiB",
        ]),
        &["central with 1 server and 3 clients"],
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_run_header_names_the_network_model_and_the_crash_kind() {
    for (set, want) in [
        (None, "network: tcp (crash = process)"),
        (Some("crash=host"), "network: tcp (crash = host)"),
        (Some("network=datagram"), "network: datagram"),
    ] {
        let mut args = vec![
            "run", "--algo", "central", "--faults", "none", "--seed", "1",
        ];
        if let Some(kv) = set {
            args.extend(["--set", kv]);
        }
        let o = locksim(&args);
        let first = stdout(&o).lines().next().unwrap_or_default().to_string();
        assert!(first.ends_with(want), "{first}");
    }
}

/// The knobs of #25 item 2: a bad value, or both names of zookeeper's session timeout, is one
/// line naming the key, exit 2.
#[test]
fn bad_deployment_knobs_are_one_line_naming_the_key() {
    let run = |algo: &str, set: &[&str]| {
        let mut args = vec!["run", "--seed", "1", "--algo", algo];
        for kv in set {
            args.extend(["--set", kv]);
        }
        locksim(&args)
    };
    refused(
        &run("central", &["release=del"]),
        &["`release=del`", "owner or delete"],
    );
    refused(&run("redis-failover", &["release=yes"]), &["`release=yes`"]);
    refused(&run("k8s-lease", &["fencing=maybe"]), &["`fencing=maybe`"]);
    refused(
        &run("zookeeper", &["session_timeout=2s", "ttl=1s"]),
        &["`session_timeout` and `ttl` are the same setting"],
    );
}

/// A client without a request timeout whose server's host is down for the rest of the run
/// waits for good: the run says so (a breaker's find: it ended SAFE without a word), in text
/// and JSON; with a timeout nothing is left waiting.
#[test]
fn a_run_says_which_operations_were_still_waiting_at_its_end() {
    let dir = scratch("ux", "pending");
    let plan = dir.join("crash.toml");
    std::fs::write(
        &plan,
        "[[fault]]\nat = \"1s\"\ntype = \"crash\"\nnode = \"n1\"\nrestart_after = \"30s\"\n",
    )
    .unwrap();
    let run = |timeout: &str, json: bool| {
        let t = format!("timeout={timeout}");
        let mut args = vec![
            "run",
            "--algo",
            "central",
            "--faults",
            "none",
            "--seed",
            "1",
            "--plan",
            s(&plan),
            "--set",
            &t,
            "--set",
            "crash=host",
        ];
        if json {
            args.push("--json");
        }
        stdout(&locksim(&args))
    };
    let text = run("none", false);
    assert!(
        text.contains("operations were still waiting for an answer when the run ended")
            && text.contains("(the first: c1's acquire invoked at 1.063s)"),
        "{text}"
    );
    let v: serde_json::Value = serde_json::from_str(&run("none", true)).unwrap();
    assert_eq!(
        v["ops_pending_at_end"].as_array().map(Vec::len),
        Some(3),
        "{v}"
    );
    assert!(!run("100ms", false).contains("still waiting"));
    let v: serde_json::Value = serde_json::from_str(&run("100ms", true)).unwrap();
    assert_eq!(
        v["ops_pending_at_end"].as_array().map(Vec::len),
        Some(0),
        "{v}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// consul-session: a waiter at the head of the queue during a lock-delay was never told it
/// holds the lock, so its giving up (its session revoked) must not start a new delay. Before
/// the fix each waiter that gave up after `lock_wait` re-armed the 15 s delay and nobody was
/// granted again (seed 1: 2 grants in 32 s; a new user's find).
#[test]
fn a_waiter_giving_up_in_a_lock_delay_does_not_start_another() {
    let dir = scratch("ux", "lockdelay");
    let f = dir.join("consul.toml");
    std::fs::write(
        &f,
        "name = \"consul holder cut off after its grant\"\nalgorithm = \"consul-session\"\nseeds = 1\nfirst_seed = 1\nexpect = \"safe\"\n\n[settings]\nclients = 3\nduration = \"30s\"\n\n[[fault]]\nafter = { node = \"c1\", event = \"acquire ok\", delay = \"100ms\" }\ntype = \"partition\"\na = \"c1\"\nb = \"servers\"\nduration = \"5s\"\n",
    )
    .unwrap();
    let o = locksim(&["run", s(&f), "--seed", "1", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let grants = v["grants"].as_u64().unwrap();
    // c1's session expires while it is cut off (about 2 s): one 15 s lock-delay, then the
    // waiters are served again.
    assert!(grants >= 10, "{grants} grants in 32 s");
    std::fs::remove_dir_all(&dir).ok();
}

/// zookeeper's `session_timeout` works in a `[client.cN]` table as `--set c2.session_timeout`
/// does (a breaker's find: files refused it), and both names in one table are refused.
#[test]
fn a_client_table_takes_zookeepers_session_timeout() {
    let dir = scratch("ux", "session-timeout");
    let file = |name: &str, table: &str| {
        let f = dir.join(name);
        std::fs::write(
            &f,
            format!("name = \"x\"\nalgorithm = \"zookeeper\"\nseeds = 1\nfaults = [\"none\"]\nexpect = \"safe\"\n\n[client.c2]\n{table}"),
        )
        .unwrap();
        f
    };
    let ok = file("ok.toml", "session_timeout = \"2s\"\n");
    let o = locksim(&["run", s(&ok), "--seed", "0", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        v["scenario"]["workload"]["per_client"]["c2"]["ttl"], 2_000_000_000u64,
        "{v}"
    );
    let both = file("both.toml", "session_timeout = \"2s\"\nttl = \"3s\"\n");
    let o = locksim(&["run", s(&both), "--seed", "0"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("line 8: client.c2: `session_timeout` and `ttl` are the same setting"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
