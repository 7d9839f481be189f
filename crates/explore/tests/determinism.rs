//! Same scenario ⇒ same event digest; different seeds ⇒ different runs.

mod common;

use locksim_core::FaultKind;
use locksim_explore::check_scenario;

#[test]
fn same_seed_same_digest_different_seed_different_digest() {
    for algo in ["central", "central-fencing", "redlock"] {
        let st = common::setup(algo, &[]);
        let digest = |seed| {
            let out = check_scenario(&st.scenario(seed, &[FaultKind::Mixed]), st.algo.clone());
            let h = out.history.expect("simulation ran");
            assert!(
                h.events.len() > 100,
                "{algo} seed {seed}: only {} events",
                h.events.len()
            );
            (h.digest(), out.verdict)
        };
        let (a1, v1) = digest(5);
        let (a2, v2) = digest(5);
        assert_eq!(a1, a2, "{algo}: seed 5 ran twice with different digests");
        assert_eq!(v1, v2);
        let (b, _) = digest(6);
        assert_ne!(a1, b, "{algo}: seeds 5 and 6 gave the same run");
    }
}

#[test]
fn a_run_on_a_reused_thread_matches_a_fresh_one() {
    // run_isolated gives each run its own thread; check that running several scenarios one
    // after another on one thread (as a user's own test might) still gives the same digest.
    let st = common::setup("redlock", &[]);
    let s = st.scenario(11, &[FaultKind::Pause]);
    let fresh = locksim_sim::run_isolated(&s, st.algo.clone())
        .unwrap()
        .digest();
    let reused = std::thread::spawn(move || {
        let _warm = locksim_sim::run(&st.scenario(3, &[FaultKind::Mixed]), st.algo.clone());
        locksim_sim::run(&s, st.algo.clone()).digest()
    })
    .join()
    .unwrap();
    assert_eq!(fresh, reused);
}
