//! A campaign's memory is flat in its number of seeds (issue #12): it keeps per-cell
//! aggregates and the first failing seeds, never a record per seed. Alone in its test binary,
//! so that no other test's allocations move the process's peak.

mod common;

use common::peak_rss_kib;
use locksim_core::FaultKind;
use locksim_explore::{run_campaign, CampaignSpec, Setup};

fn campaign(seeds: u64) -> u64 {
    let spec = CampaignSpec {
        setups: vec![Setup::registered("central", &[("duration".into(), "100ms".into())]).unwrap()],
        kinds: vec![FaultKind::None],
        first_seed: 0,
        seeds,
        jobs: 2,
    };
    let cells = run_campaign(&spec, &|_, _| {});
    assert_eq!(cells[0].seeds, seeds);
    assert!(cells[0].grants >= seeds / 2, "the runs did something");
    cells[0].grants
}

#[test]
fn peak_memory_after_20000_seeds_is_within_10_percent_of_after_2000() {
    campaign(2_000);
    let after_2k = peak_rss_kib();
    campaign(20_000);
    let after_20k = peak_rss_kib();
    eprintln!("peak RSS: {after_2k} KiB after 2,000 seeds, {after_20k} KiB after 20,000 more");
    assert!(
        after_20k * 10 <= after_2k * 11,
        "peak RSS grew from {after_2k} KiB (2,000 seeds) to {after_20k} KiB (20,000 seeds)"
    );
}
