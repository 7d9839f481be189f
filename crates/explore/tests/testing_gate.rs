//! `testing::Campaign` judges through the `--fail-on` gate (issue #48, item 1): a test and
//! `locksim campaign --fail-on P,…` give the same verdict on the same cells, `P,…` being the
//! properties the test forbids.

use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};

use locksim_core::{FaultKind, Property, Workload};
use locksim_explore::gate::{judge, Gate};
use locksim_explore::testing::{Campaign, Knobs};
use locksim_explore::{parse_setting, run_campaign, CampaignSpec, CellSummary, Setup};

/// The seeds a campaign of `range` runs here (`LOCKSIM_SEED`/`LOCKSIM_SEEDS` replace them, as
/// for the campaign itself).
fn seeds(range: Range<u64>) -> Range<u64> {
    Knobs::read(&|k| std::env::var(k).ok())
        .expect("well-formed LOCKSIM_* variables")
        .seeds_for(&range)
}

/// The cells `Campaign::registered(algo, settings).seeds(range).faults(kinds)` runs.
fn cells(
    algo: &str,
    settings: &[&str],
    kinds: &[FaultKind],
    range: Range<u64>,
) -> Vec<CellSummary> {
    cells_of(setup(algo, settings), kinds, range)
}

/// A registered algorithm with `key=value` settings, as `Campaign::registered` builds it.
fn setup(algo: &str, settings: &[&str]) -> Setup {
    let pairs: Vec<(String, String)> = settings.iter().map(|s| parse_setting(s).unwrap()).collect();
    Setup::registered(algo, &pairs).unwrap()
}

/// The cells a campaign of `setup` runs with `.seeds(range).faults(kinds)`.
fn cells_of(setup: Setup, kinds: &[FaultKind], range: Range<u64>) -> Vec<CellSummary> {
    let seeds = seeds(range);
    run_campaign(
        &CampaignSpec {
            setups: vec![setup],
            kinds: kinds.to_vec(),
            first_seed: seeds.start,
            seeds: seeds.end - seeds.start,
            jobs: 2,
        },
        &|_, _| {},
    )
}

/// Every property some cell checks, in report order: what a campaign with nothing expected or
/// allowed forbids.
fn checked(cells: &[CellSummary]) -> Vec<Property> {
    Property::ALL
        .into_iter()
        .filter(|p| cells.iter().any(|c| c.checked.contains(p)))
        .collect()
}

/// Where the campaigns here write their shrunk traces (one folder per test process).
fn traces() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("locksim-testing-gate-{}", std::process::id()))
}

/// Runs `campaign.check()`: `None` when it passed, else its panic message.
fn failure(campaign: Campaign) -> Option<String> {
    std::env::set_var("LOCKSIM_TRACES", traces());
    catch_unwind(AssertUnwindSafe(|| campaign.check()))
        .err()
        .map(|e| {
            e.downcast_ref::<String>()
                .cloned()
                .unwrap_or_else(|| "(a panic without a message)".into())
        })
}

/// Judges `cells` with the gate over `forbidden` and runs `campaign` (which must run the same
/// cells and forbid exactly `forbidden`); panics unless both say the same: the test passes
/// exactly when the gate is clean, and its failure carries every line of the gate's and says
/// which finding it is. Returns the gate's finding.
fn agree(campaign: Campaign, cells: &[CellSummary], forbidden: &[Property]) -> Gate {
    let (gate, lines) = judge(cells, forbidden);
    match (gate, failure(campaign)) {
        (Gate::Clean, None) => assert!(lines.is_empty(), "{lines:?}"),
        (Gate::Clean, Some(msg)) => panic!("the gate is clean, the test failed: {msg}"),
        (g, None) => panic!("the gate says {g:?} ({lines:?}), the test passed"),
        (g, Some(msg)) => {
            assert!(!lines.is_empty(), "{g:?} without a line");
            for line in &lines {
                assert!(msg.contains(line.as_str()), "{line:?} missing from:\n{msg}");
            }
            let says = match g {
                Gate::Violation => " violates ",
                _ => "this campaign proves nothing, as `locksim campaign --fail-on ",
            };
            assert!(msg.contains(says), "{g:?}, and the test said:\n{msg}");
        }
    }
    gate
}

#[test]
fn a_campaign_in_which_no_fault_takes_effect_proves_nothing() {
    // `central` has no leader: every `leader-change` finds none, so no fault takes effect. The
    // run grants and is safe; before the gate, `expect_safe` passed it.
    let range = 0..10;
    let faultless = cells("central", &[], &[FaultKind::LeaderChange], range.clone());
    let c = &faultless[0];
    assert!(c.no_fault_took_effect(), "{c:?}");
    assert!(c.grants > 0 && c.errors == 0, "{c:?}");
    let msg = failure(
        Campaign::registered("central", &[])
            .seeds(range.clone())
            .faults(&[FaultKind::LeaderChange]),
    )
    .expect("a campaign whose faults never took effect must fail");
    let names: Vec<String> = checked(&faultless).iter().map(|p| p.to_string()).collect();
    let line = format!(
        "--fail-on {}: central × leader-change: no fault took effect in any seed: proves nothing",
        names.join(",")
    );
    assert!(msg.contains(&line), "{line:?} missing from:\n{msg}");
    assert!(
        msg.contains("fix:") && msg.contains("FaultKind::None"),
        "no way out named:\n{msg}"
    );
    assert!(
        msg.contains("test:     a_campaign_in_which_no_fault_takes_effect_proves_nothing"),
        "{msg}"
    );

    // The control group: `none` means no fault, so none taking effect proves no less.
    let control = cells("central", &[], &[FaultKind::None], range.clone());
    assert!(!control[0].no_fault_took_effect() && control[0].grants > 0);
    assert_eq!(judge(&control, &checked(&control)).0, Gate::Clean);
    Campaign::registered("central", &[])
        .seeds(range)
        .faults(&[FaultKind::None])
        .expect_safe();
}

#[test]
fn the_test_and_the_gate_give_the_same_verdict_on_the_same_cells() {
    let mut found = Vec::new();

    // A forbidden violation: central double-grants under pauses.
    let pause = cells("central", &[], &[FaultKind::Pause], 0..40);
    let forbidden = checked(&pause);
    found.push(agree(
        Campaign::registered("central", &[])
            .seeds(0..40)
            .faults(&[FaultKind::Pause]),
        &pause,
        &forbidden,
    ));
    // The same cells with what they violate allowed: the gate judges only the rest.
    let violated: Vec<Property> = Property::ALL
        .into_iter()
        .filter(|&p| pause[0].violated(p) > 0)
        .collect();
    assert!(
        !violated.is_empty(),
        "central under pauses violates something"
    );
    let rest: Vec<Property> = forbidden
        .iter()
        .copied()
        .filter(|p| !violated.contains(p))
        .collect();
    found.push(agree(
        Campaign::registered("central", &[])
            .seeds(0..40)
            .faults(&[FaultKind::Pause])
            .allow(&violated),
        &pause,
        &rest,
    ));

    // Nothing violated, with and without faults.
    let fencing = cells(
        "central-fencing",
        &[],
        &[FaultKind::None, FaultKind::Partition],
        0..20,
    );
    found.push(agree(
        Campaign::registered("central-fencing", &[])
            .seeds(0..20)
            .faults(&[FaultKind::None, FaultKind::Partition]),
        &fencing,
        &checked(&fencing),
    ));

    // A forbidden property the algorithm is not judged on: pg-advisory's session lock never
    // expires, so it makes no L1 claim; forbidding L1 proves nothing.
    let pg = cells("pg-advisory", &[], &[FaultKind::None], 0..10);
    assert!(!checked(&pg).contains(&Property::L1), "{:?}", checked(&pg));
    let mut with_l1 = checked(&pg);
    with_l1.push(Property::L1);
    with_l1.sort();
    found.push(agree(
        Campaign::registered("pg-advisory", &[])
            .seeds(0..10)
            .faults(&[FaultKind::None])
            .forbid(&[Property::L1]),
        &pg,
        &with_l1,
    ));

    // Holders that never write: S2 (stale writes) is never exercised, so forbidding it proves
    // nothing; allowed, it asks for no write, and the rest is judged as before.
    let no_writes = Workload {
        writes_per_hold: 0,
        ..setup("central-fencing", &[]).workload
    };
    let mut quiet = setup("central-fencing", &[]);
    quiet.workload = no_writes.clone();
    let quiet = cells_of(quiet, &[FaultKind::Partition], 0..20);
    let campaign = || {
        Campaign::registered("central-fencing", &[])
            .workload(no_writes.clone())
            .seeds(0..20)
            .faults(&[FaultKind::Partition])
    };
    let all = checked(&quiet);
    assert!(all.contains(&Property::S2), "{all:?}");
    let (_, why) = judge(&quiet, &all);
    assert!(
        why.iter()
            .any(|w| w.ends_with("S2: no write reached the resource in any seed: proves nothing")),
        "{why:?}"
    );
    found.push(agree(campaign(), &quiet, &all));
    let but_s2: Vec<Property> = all.iter().copied().filter(|&p| p != Property::S2).collect();
    found.push(agree(campaign().allow(&[Property::S2]), &quiet, &but_s2));

    // The cases cover every finding (so that agreeing is not agreeing on one answer).
    found.sort();
    found.dedup();
    assert_eq!(
        found,
        [Gate::Clean, Gate::ProvesNothing, Gate::Violation],
        "the cases did not reach every finding"
    );
    // Only this test's violation wrote a trace (the other test's campaigns violate nothing).
    std::fs::remove_dir_all(traces()).ok();
}
