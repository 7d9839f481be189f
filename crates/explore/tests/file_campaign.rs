//! A campaign file as a test (`testing::FileCampaign`, issue #32): the file's expectation
//! judged as `locksim campaign FILE` judges it, and a failure that prints the commands of the
//! binary that runs, shrinks and draws the seed. One test: it sets LOCKSIM_TRACES.

use locksim_explore::testing::FileCampaign;

const CENTRAL_PAUSE: &str = r#"
name = "a paused holder of a central lease"
algorithm = "central"
faults = ["pause"]
seeds = 10
expect = ["S1"]
"#;

fn message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>().cloned().unwrap_or_default()
}

#[test]
fn a_file_passes_or_fails_with_commands_that_rerun_it() {
    // Its expectation holds: some seed of 0..10 double-grants (seed 1 does).
    FileCampaign::parse("central-pause.toml", CENTRAL_PAUSE).check();
    // A file in the repository, read from disk.
    let sims = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../sims/central-fencing-pause.toml"
    );
    FileCampaign::read(sims).jobs(2).check();

    let dir = std::env::temp_dir().join(format!("locksim-file-campaign-{}", std::process::id()));
    std::env::set_var("LOCKSIM_TRACES", &dir);
    let forbidding = CENTRAL_PAUSE.replace(r#"expect = ["S1"]"#, r#"expect = "safe""#);
    let msg = message(
        std::panic::catch_unwind(|| FileCampaign::parse("central-pause.toml", &forbidding).check())
            .expect_err("a double grant under a file that expects safety fails"),
    );
    assert!(
        msg.contains("failed its expectation at seed 1 under pause"),
        "{msg}"
    );
    assert!(msg.contains("S1 was violated in"), "{msg}");
    assert!(
        msg.contains("LOCKSIM_SEED=1") && msg.contains("--exact"),
        "{msg}"
    );
    // The text was written beside the traces, so that the commands have a file to read.
    let copy = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "toml"))
        .expect("the file's copy");
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), forbidding);
    let copy = copy.to_string_lossy().into_owned();
    assert!(
        msg.contains(&format!(
            "run:      locksim run {copy} --faults pause --seed 1 --html"
        )),
        "{msg}"
    );
    assert!(
        msg.contains(&format!(
            "shrink:   locksim shrink {copy} --faults pause --seed 1 --kind S1 --out-dir {}",
            dir.display()
        )),
        "{msg}"
    );
    assert!(msg.contains("trace:    ") && msg.contains("-s1-"), "{msg}");
    assert!(msg.contains("render:   locksim render "), "{msg}");

    // With the user's own binary named, the commands run it through cargo.
    let msg = message(
        std::panic::catch_unwind(|| {
            FileCampaign::parse("central-pause.toml", &forbidding)
                .binary("my-locksim")
                .check()
        })
        .expect_err("fails again"),
    );
    assert!(
        msg.contains("cargo run -q --bin my-locksim -- run "),
        "{msg}"
    );
    assert!(
        msg.contains("cargo run -q --bin my-locksim -- shrink "),
        "{msg}"
    );

    // An expectation that never comes true is a failure too, and names the file's first seed.
    let never = CENTRAL_PAUSE
        .replace(r#"faults = ["pause"]"#, r#"faults = ["none"]"#)
        .replace("seeds = 10", "seeds = 3");
    let msg = message(
        std::panic::catch_unwind(|| FileCampaign::parse("central-none.toml", &never).check())
            .expect_err("no double grant without faults"),
    );
    assert!(msg.contains("expected S1 to be violated"), "{msg}");
    assert!(msg.contains("at seed 0 under none"), "{msg}");
    // A forbidden property that nothing judged is no pass (pg-advisory has no lease for L1
    // to judge: a breaker's find).
    let unjudged = r#"
        algorithm = "pg-advisory"
        faults = ["crash-restart"]
        seeds = 5
        expect = ["S3"]
        forbid = ["L1"]
    "#;
    let msg = message(
        std::panic::catch_unwind(|| FileCampaign::parse("pg.toml", unjudged).check())
            .expect_err("L1 is not judged for pg-advisory"),
    );
    assert!(msg.contains("L1 is not judged for pg-advisory"), "{msg}");

    std::env::remove_var("LOCKSIM_TRACES");
    std::fs::remove_dir_all(&dir).ok();

    // A malformed file names the file and the field.
    let bad = CENTRAL_PAUSE.replace("seeds = 10", "seeds = \"ten\"");
    let msg = message(
        std::panic::catch_unwind(|| FileCampaign::parse("bad.toml", &bad)).expect_err("refused"),
    );
    assert!(msg.contains("bad.toml") && msg.contains("seeds"), "{msg}");

    // A registered algorithm's setting named as a workload setting would never reach it.
    const WRITES: &[locksim_explore::algos::Knob] = &[locksim_explore::algos::Knob {
        key: "writes",
        default: "1",
        help: "shadowed by the workload's",
    }];
    fn central(
        c: &std::collections::BTreeMap<String, String>,
        w: &locksim_explore::core::Workload,
    ) -> Result<std::sync::Arc<dyn locksim_explore::sim::LockAlgorithm>, String> {
        locksim_explore::algos::build("central", c, w)
    }
    locksim_explore::algos::register(vec![locksim_explore::algos::Registration {
        name: "shadowed",
        what: "a setting the workload takes",
        knobs: WRITES,
        build: central,
    }])
    .unwrap();
    let e = locksim_explore::Setup::registered("shadowed", &[])
        .err()
        .expect("refused");
    assert!(
        e.contains("setting `writes` is a workload or fault setting"),
        "{e}"
    );
}
