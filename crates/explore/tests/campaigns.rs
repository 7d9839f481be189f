//! Campaign files, the `cargo test` API, and sharding.

use std::path::Path;

use locksim_core::FaultKind;
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
    ];
    for (text, needle) in cases {
        let e = CampaignFile::parse(p, &text).unwrap_err();
        assert!(e.starts_with("sims/x.toml: "), "{e}");
        assert!(e.contains(needle), "`{needle}` not in: {e}");
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
    assert!(msg.contains("violates S1 under pause with seed 5"), "{msg}");
    assert!(
        msg.contains("LOCKSIM_SEED=5") && msg.contains("locksim replay"),
        "{msg}"
    );
    let traces: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(traces.len(), 1);
    std::fs::remove_dir_all(&dir).ok();
}
