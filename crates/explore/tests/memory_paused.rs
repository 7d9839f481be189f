//! A run that ends while a fault is still under way frees what it allocated (issue #49): the
//! task that would end the fault (here a pause's resume) slept past the run's end and held the
//! run's World and, through its timer's waker, madsim's whole timer heap (measured: about 66 KiB
//! a seed for `central` with a client paused past the end of a 12 s run, and the 1.1 KiB a seed
//! that a `tcp` campaign of `pause` faults grew by). Alone in its test binary, so that no other
//! test's allocations move the process's peak.

mod common;

use common::peak_rss_kib;
use locksim_core::fault::PauseTask;
use locksim_core::{Fault, FaultPlan, TimedFault};
use locksim_explore::{check_scenario, outcome::grants as grants_in, Setup};

/// Seeds `first..first + n` of `central` (a short run under `tcp`) with client c1 paused from
/// 100 ms until long after the run's end; returns the grants.
fn paused_past_the_end(first: u64, n: u64) -> u64 {
    let st = Setup::registered("central", &[("duration".into(), "300ms".into())]).unwrap();
    let c1 = st.cluster.servers;
    let mut grants = 0;
    for seed in first..first + n {
        let mut s = st.scenario(seed, &[]);
        s.faults = FaultPlan::new(vec![TimedFault::at(
            100_000_000,
            Fault::Pause {
                node: c1,
                duration: 3_600_000_000_000,
                task: PauseTask::Process,
            },
        )]);
        let out = check_scenario(&s, st.algo.clone());
        grants += out.history.as_ref().map_or(0, grants_in);
    }
    grants
}

#[test]
fn runs_that_end_with_a_node_paused_do_not_grow_memory() {
    assert!(paused_past_the_end(0, 200) > 0, "the runs granted nothing");
    let after_200 = peak_rss_kib();
    paused_past_the_end(200, 2_000);
    let after_2200 = peak_rss_kib();
    eprintln!("peak RSS: {after_200} KiB after 200 runs, {after_2200} KiB after 2,000 more");
    // Leaking, 2,000 runs grew it by about 22 MiB (7.4 MiB after 200, 28.9 after 2,200).
    assert!(
        after_2200 <= after_200 + 4 * 1024,
        "peak RSS grew from {after_200} KiB (200 runs) to {after_2200} KiB (2,200 runs)"
    );
}
