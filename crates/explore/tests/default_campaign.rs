//! The findings the default campaign must reproduce (issue #2), measured on the default seed
//! range of `locksim campaign` (seeds 0..300, default settings). Nothing here is tuned per cell:
//! if a finding disappears, the model changed, and the change must be understood.

use locksim_core::FaultKind;
use locksim_explore::{run_campaign, CampaignSpec, CellSummary, Setup};

fn cells(algo: &str, kinds: &[FaultKind]) -> Vec<CellSummary> {
    let spec = CampaignSpec {
        setups: vec![Setup::registered(algo, &[]).unwrap()],
        kinds: kinds.to_vec(),
        first_seed: 0,
        seeds: 300,
        jobs: std::thread::available_parallelism().map_or(2, |n| n.get()),
    };
    let cells = run_campaign(&spec, &|_, _| {});
    for c in &cells {
        assert_eq!(
            c.errors, 0,
            "{algo}/{}: a simulation failed (seed {:?})",
            c.faults, c.first_error_seed
        );
        assert_eq!(c.seeds, 300);
        assert!(
            c.grants > 1000,
            "{algo}/{}: only {} grants: the workload barely ran",
            c.faults,
            c.grants
        );
    }
    cells
}

#[test]
fn every_algorithm_is_clean_without_faults() {
    for algo in ["central", "central-fencing", "redlock"] {
        let c = &cells(algo, &[FaultKind::None])[0];
        assert_eq!(
            (c.s1_violations, c.s2_violations),
            (0, 0),
            "{algo} under no faults: {c:?}"
        );
    }
}

#[test]
fn central_violates_s1_and_s2_under_pauses() {
    let c = &cells("central", &[FaultKind::Pause])[0];
    assert!(c.s1_violations > 0 && c.s2_violations > 0, "{c:?}");
}

#[test]
fn central_fencing_violates_s1_under_pauses_while_s2_holds() {
    let c = &cells("central-fencing", &[FaultKind::Pause])[0];
    assert!(c.s1_violations > 0, "{c:?}");
    assert_eq!(c.s2_violations, 0, "{c:?}");
}

#[test]
fn redlock_violates_s1_under_pauses_and_clock_jumps() {
    let cs = cells("redlock", &[FaultKind::Pause, FaultKind::ClockJump]);
    for c in &cs {
        assert!(c.s1_violations > 0, "{c:?}");
    }
}

#[test]
fn duplicated_writes_show_up_as_a_non_linearizable_resource() {
    // A duplicated write request is applied twice by the resource; the register check (S3)
    // must see it, while S1 and S2 have nothing to say about it.
    let c = &cells("central", &[FaultKind::Duplicate])[0];
    assert!(c.s3_violations > 0, "{c:?}");
    assert_eq!(c.s1_violations, 0, "{c:?}");
}
