//! Issue #24, item 5: a fault that never took effect is not a fault survived.

use locksim_core::FaultKind;
use locksim_explore::outcome::faults_applied;
use locksim_explore::{check_scenario, run_seeds, summarize, CampaignSpec, Setup, Shard};

fn cells(algo: &str, kinds: Vec<FaultKind>, seeds: u64) -> Vec<locksim_explore::CellSummary> {
    let spec = CampaignSpec {
        setups: vec![Setup::registered(algo, &[]).unwrap()],
        kinds,
        first_seed: 0,
        seeds,
        jobs: 2,
    };
    summarize(&run_seeds(&spec, Shard::ALL, &|_, _| {}))
}

/// `redlock` has no leader: every `isolate_leader` it is given finds nobody to cut off
/// (`fault ends: no leader to isolate`), so its leader-change cell tested nothing.
#[test]
fn leader_change_without_a_leader_applies_no_fault() {
    let setup = Setup::registered("redlock", &[]).unwrap();
    let scenario = setup.scenario(3, &[FaultKind::LeaderChange]);
    assert!(!scenario.faults.is_empty(), "the plan holds faults");
    let out = check_scenario(&scenario, setup.algo.clone());
    assert_eq!(faults_applied(out.history.as_ref().unwrap()), 0);

    let c = &cells(
        "redlock",
        vec![FaultKind::LeaderChange, FaultKind::Pause],
        6,
    )[..];
    assert_eq!(c[0].faults_applied, 0, "{:?}", c[0].faults_applied);
    assert!(c[0].no_fault_took_effect());
    assert!(
        c[0].grants > 0,
        "the lock was used: only the faults are missing"
    );
    let json = serde_json::to_value(&c[0]).unwrap();
    assert_eq!(json["faults_applied"], 0);
    assert_eq!(json["faulted_seeds"], 0);
    // Pauses always find their node.
    assert!(c[1].faults_applied >= 6, "{}", c[1].faults_applied);
    assert_eq!(c[1].faulted_seeds, 6);
    assert!(!c[1].no_fault_took_effect());
}

/// `raft-lease` has a leader to isolate (recorded as an `isolate` of that node); the control
/// group (`none`) applies nothing and is not `n/a`.
#[test]
fn leader_change_with_a_leader_applies_and_none_is_the_control_group() {
    let c = cells(
        "raft-lease",
        vec![FaultKind::LeaderChange, FaultKind::None],
        4,
    );
    assert!(c[0].faults_applied > 0);
    assert!(!c[0].no_fault_took_effect());
    assert_eq!(c[1].faults_applied, 0);
    assert!(!c[1].faults_meant());
    assert!(
        !c[1].no_fault_took_effect(),
        "the control group is judged as usual"
    );
    assert_eq!(c[1].unfaulted_seeds(), 0);
}

/// A campaign file that expects `safe` of `redlock` under `leader-change` passed, though no
/// seed isolated anything. It fails, saying why.
#[test]
fn a_campaign_file_whose_faults_never_took_effect_fails_its_expectation() {
    use locksim_explore::campaign_file::CampaignFile;
    let f = CampaignFile::parse(
        std::path::Path::new("t.toml"),
        "algorithm = \"redlock\"\nfaults = [\"leader-change\"]\nseeds = 4\nexpect = \"safe\"\n",
    )
    .unwrap();
    let cells = summarize(&run_seeds(&f.spec(2).unwrap(), Shard::ALL, &|_, _| {}));
    let problems = f.judge(&cells);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("no fault took effect"), "{problems:?}");
    let f = CampaignFile::parse(
        std::path::Path::new("t.toml"),
        "algorithm = \"raft-lease\"\nfaults = [\"leader-change\"]\nseeds = 4\nexpect = \"safe\"\n",
    )
    .unwrap();
    let cells = summarize(&run_seeds(&f.spec(2).unwrap(), Shard::ALL, &|_, _| {}));
    assert_eq!(f.judge(&cells), Vec::<String>::new());
}
