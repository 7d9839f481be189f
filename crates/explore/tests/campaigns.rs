//! Campaign files, the `cargo test` API, and sharding.

use std::path::Path;

use locksim_core::{FaultKind, Property};
use locksim_explore::campaign_file::CampaignFile;
use locksim_explore::testing::Campaign;
use locksim_explore::{run_seeds, summarize, CampaignSpec, Setup, Shard};

#[test]
fn malformed_campaign_files_name_the_file_and_the_problem() {
    let p = Path::new("sims/x.toml");
    let ok = "algorithm = \"redlock\"\nfaults = [\"pause\"]\nseeds = 10\nexpect = [\"S1\"]\n";
    assert!(CampaignFile::parse(p, ok).is_ok());
    let cases = [
        (ok.replace("seeds = 10", "sedes = 10"), "sedes"),
        (ok.replace("seeds = 10", "seeds = \"ten\""), "line 3"),
        (ok.replace("[\"pause\"]", "[\"meteor\"]"), "meteor"),
        (ok.replace("[\"S1\"]", "\"maybe\""), "expect"),
        (ok.replace("[\"S1\"]", "[\"S9\"]"), "S9"),
        (ok.replace("redlock", "paxos"), "paxos"),
        (format!("{ok}[settings]\nmasters = 0\n"), "masters"),
        (format!("{ok}forbid = [\"S1\"]\n"), "also expected"),
        ("algorithm = \"redlock\"\n".to_string(), "missing field"),
        // A missing field says what to write, not a misleading "line 1".
        (ok.replace("expect = [\"S1\"]\n", ""), "expect = \"safe\""),
        (ok.replace("seeds = 10\n", ""), "seeds = 10"),
    ];
    for (text, needle) in cases {
        let e = CampaignFile::parse(p, &text).unwrap_err();
        assert!(e.starts_with("sims/x.toml: "), "{e}");
        assert!(e.contains(needle), "`{needle}` not in: {e}");
        if e.contains("missing field") {
            assert!(!e.contains("line 1"), "{e}");
        }
    }
}

#[test]
fn an_unmet_expectation_is_reported() {
    let f = CampaignFile::parse(
        Path::new("t.toml"),
        "algorithm = \"central\"\nfaults = [\"none\"]\nseeds = 5\nexpect = [\"S1\"]\n",
    )
    .unwrap();
    let cells = summarize(&run_seeds(&f.spec(2).unwrap(), Shard::ALL, &|_, _| {}));
    let problems = f.judge(&cells);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("expected S1"), "{problems:?}");
}

#[test]
fn shards_merge_into_the_unsharded_summary() {
    let spec = CampaignSpec {
        setups: vec![
            Setup::registered("central", &[]).unwrap(),
            Setup::registered("redlock", &[]).unwrap(),
        ],
        kinds: vec![FaultKind::Pause, FaultKind::Swarm],
        first_seed: 3,
        seeds: 17,
        jobs: 2,
    };
    let whole = summarize(&run_seeds(&spec, Shard::ALL, &|_, _| {}));
    let mut parts = Vec::new();
    for index in 0..3 {
        parts.extend(run_seeds(&spec, Shard { index, count: 3 }, &|_, _| {}));
    }
    parts.sort_by_key(|r| std::cmp::Reverse((r.cell, r.seed))); // any order
    assert_eq!(summarize(&parts), whole);
    assert!(
        Shard::parse("3/3").is_err() && Shard::parse("x").is_err() && Shard::parse("0/0").is_err()
    );
}

#[test]
fn the_test_api_passes_safe_campaigns_and_explains_failures() {
    Campaign::registered("central-fencing", &[])
        .seeds(0..20)
        .faults(&[FaultKind::None, FaultKind::Partition])
        .expect_safe();

    let dir = std::env::temp_dir().join(format!("locksim-testing-api-{}", std::process::id()));
    std::env::set_var("LOCKSIM_TRACES", &dir);
    let failure = std::panic::catch_unwind(|| {
        Campaign::registered("central", &[])
            .seeds(0..40)
            .faults(&[FaultKind::Pause])
            .expect_safe();
    })
    .expect_err("central under pauses must fail");
    std::env::remove_var("LOCKSIM_TRACES");
    let msg = failure
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(msg.contains("violates S1 under pause with seed 1"), "{msg}");
    // The real test name, and commands that re-run this seed and draw the trace.
    assert!(
        msg.contains("test:     the_test_api_passes_safe_campaigns_and_explains_failures"),
        "{msg}"
    );
    assert!(
        msg.contains("LOCKSIM_SEED=1")
            && msg.contains("-- the_test_api_passes_safe_campaigns_and_explains_failures --exact")
            && msg.contains("LOCKSIM_REPLAY=")
            && msg.contains("locksim render"),
        "{msg}"
    );
    let traces: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(traces.len(), 1);

    // Issue #12: S4 counts. The K3 bug (a retried unlock by key name) frees the next grant's
    // lock in seed 510 under delays, and nothing else is violated there: expect_safe passed it.
    std::env::set_var("LOCKSIM_TRACES", &dir);
    let k3 = || {
        // Pinned to datagram: seed 510 is the datagram run that shows it.
        Campaign::registered("raft-lease", &["unlock_by_name=true", "network=datagram"])
            .seeds(510..511)
            .faults(&[FaultKind::Delay])
    };
    let failure = std::panic::catch_unwind(|| k3().expect_safe())
        .expect_err("an S4 violation must fail expect_safe");
    std::env::remove_var("LOCKSIM_TRACES");
    let msg = failure
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(
        msg.contains("violates S4 under delay with seed 510"),
        "{msg}"
    );
    let traces: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(traces.iter().any(|t| t.contains("-s4-")), "{traces:?}");
    // Expected, it passes; allowed, too; forbidden by name, it fails.
    k3().expect(&[Property::S4]).check();
    k3().allow(&[Property::S4]).expect_safe();
    let forbidden =
        std::panic::catch_unwind(|| k3().forbid(&[Property::S4]).allow(&[Property::S4]).check())
            .expect_err("a property both forbidden and allowed is a test's mistake");
    let forbidden = forbidden
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(forbidden.contains("both forbidden"), "{forbidden}");
    // An expectation the run cannot meet: neither S1 nor L1 happens in this seed.
    let unmet = std::panic::catch_unwind(|| {
        k3().expect(&[Property::S1, Property::L1])
            .allow(&[Property::S4])
            .check()
    })
    .expect_err("unmet expectations fail");
    let unmet = unmet.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        unmet.contains("expected S1 to be violated")
            && unmet.contains("expected L1 to be violated"),
        "{unmet}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A cell's summary is the same whatever order its records arrive in, and keeps no record:
/// the first failing seed of each property and the first error's message survive the fold.
#[test]
fn summaries_keep_per_property_first_seeds_whatever_the_order() {
    let spec = CampaignSpec {
        setups: vec![Setup::registered("central", &[]).unwrap()],
        kinds: vec![FaultKind::Pause, FaultKind::ClockJump],
        first_seed: 0,
        seeds: 30,
        jobs: 2,
    };
    let records = run_seeds(&spec, Shard::ALL, &|_, _| {});
    let forward = summarize(&records);
    let mut reversed = records.clone();
    reversed.reverse();
    assert_eq!(summarize(&reversed), forward);
    for (cell, c) in forward.iter().enumerate() {
        assert_eq!(c.checked, Property::ALL.to_vec());
        for p in Property::SAFETY {
            let first = records
                .iter()
                .filter(|r| r.cell == cell && r.violates(p))
                .map(|r| r.seed)
                .min();
            assert_eq!(
                c.first_violation.get(&p).copied(),
                first,
                "{p} in cell {cell}"
            );
            let n = records
                .iter()
                .filter(|r| r.cell == cell && r.violates(p))
                .count() as u64;
            assert_eq!(c.violated(p), n);
        }
    }
    assert!(forward.iter().any(|c| c.violated(Property::S1) > 0));
    // The streaming run gives the same summary as the collected records.
    assert_eq!(locksim_explore::run_campaign(&spec, &|_, _| {}), forward);
}

#[test]
fn shards_come_from_flags_or_the_kubernetes_environment() {
    let env = |vars: &'static [(&'static str, &'static str)]| {
        move |k: &str| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    };
    let none = env(&[]);
    assert_eq!(Shard::resolve(None, None, &none).unwrap(), None);
    assert_eq!(
        Shard::resolve(Some("1/4"), None, &none).unwrap(),
        Some(Shard { index: 1, count: 4 })
    );
    // Kubernetes sets only JOB_COMPLETION_INDEX: --shards gives the count.
    let k8s = env(&[("JOB_COMPLETION_INDEX", "2")]);
    assert_eq!(
        Shard::resolve(None, Some(3), &k8s).unwrap(),
        Some(Shard { index: 2, count: 3 })
    );
    let e = Shard::resolve(None, None, &k8s).unwrap_err();
    assert!(
        e.contains("--shards N") && e.contains("JOB_COMPLETIONS"),
        "{e}"
    );
    let both = env(&[("JOB_COMPLETION_INDEX", "2"), ("JOB_COMPLETIONS", "5")]);
    assert_eq!(
        Shard::resolve(None, None, &both).unwrap(),
        Some(Shard { index: 2, count: 5 })
    );
    assert!(Shard::resolve(None, Some(4), &both)
        .unwrap_err()
        .contains("disagrees"));
    assert!(Shard::resolve(None, Some(3), &none)
        .unwrap_err()
        .contains("JOB_COMPLETION_INDEX"));
    assert!(
        Shard::resolve(None, Some(2), &env(&[("JOB_COMPLETION_INDEX", "2")]))
            .unwrap_err()
            .contains("not a shard")
    );
    assert_eq!(Shard { index: 1, count: 3 }.seeds_of(10), 3);
    assert_eq!(Shard { index: 0, count: 3 }.seeds_of(10), 4);
    assert_eq!(Shard { index: 5, count: 8 }.seeds_of(3), 0);
}

/// `[real]` names a shipped adapter or the user's command for `locksim real`; anything else
/// in it is one line naming the file.
#[test]
fn a_real_table_names_a_shipped_adapter_or_a_command_and_nothing_else() {
    use locksim_explore::campaign_file::RealClient;
    let base = "algorithm = \"central\"\nfaults = [\"none\"]\nseeds = 1\nexpect = \"safe\"\n";
    let read = |extra: &str| CampaignFile::parse(Path::new("f.toml"), &format!("{base}{extra}"));
    assert_eq!(read("").unwrap().real_client, None);
    assert_eq!(
        read("[real]\nclient = \"redis-py\"\n").unwrap().real_client,
        Some(RealClient::Adapter("redis-py".into()))
    );
    assert_eq!(
        read("[real]\nclient_command = [\"python3\", \"a.py\"]\n")
            .unwrap()
            .real_client,
        Some(RealClient::Command(vec!["python3".into(), "a.py".into()]))
    );
    for (extra, says) in [
        (
            "[real]\nclient = \"a\"\nclient_command = [\"b\"]\n",
            "not both",
        ),
        ("[real]\nclient_command = []\n", "empty"),
        ("[real]\n", "an empty table"),
        ("[real]\nclinet = \"redis-py\"\n", "clinet"),
    ] {
        let e = read(extra).unwrap_err();
        assert!(
            e.starts_with("f.toml: ") && e.contains(says),
            "{extra}: {e}"
        );
    }
}
