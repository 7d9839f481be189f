//! Determinism at scale (issue #49): every built-in algorithm, under the default network
//! (`tcp`) and `mixed` faults, run twice per seed, gives byte-identical histories (every
//! event serialized, not only the digest). `cargo test` runs a slice, 8 seeds an algorithm;
//! `scripts/determinism-check N` runs N (1,000 for the standing check).
//!
//! Seeds come from `LOCKSIM_DETERMINISM_SEEDS` (how many, default 8) and
//! `LOCKSIM_DETERMINISM_FIRST` (the first, default 0).

use locksim_core::FaultKind;
use locksim_explore::{check_scenario, Setup};

fn env(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v}: not a whole number")),
        Err(_) => default,
    }
}

#[test]
fn every_algorithm_gives_byte_identical_histories_seed_by_seed() {
    let seeds = env("LOCKSIM_DETERMINISM_SEEDS", 8);
    let first = env("LOCKSIM_DETERMINISM_FIRST", 0);
    let mut pairs = 0u64;
    let mut events = 0usize;
    for (algo, _) in locksim_algos::algorithms() {
        let st = Setup::registered(algo, &[]).expect("a built-in algorithm");
        assert_eq!(
            st.workload.network,
            locksim_core::Network::Tcp,
            "{algo}: the default network is tcp"
        );
        for seed in first..first + seeds {
            let s = st.scenario(seed, &[FaultKind::Mixed]);
            let bytes = || {
                let out = check_scenario(&s, st.algo.clone());
                let h = out
                    .history
                    .unwrap_or_else(|| panic!("{algo} seed {seed}: {:?}", out.error));
                (
                    serde_json::to_vec(&h).expect("a history serializes"),
                    h.events.len(),
                )
            };
            let (a, n) = bytes();
            let (b, _) = bytes();
            assert!(
                a == b,
                "{algo} seed {seed}: two runs of one scenario gave different histories \
                 ({} and {} bytes)",
                a.len(),
                b.len()
            );
            pairs += 1;
            events += n;
        }
    }
    eprintln!("{pairs} seed pairs byte-identical ({events} events each side)");
    assert!(events as u64 > pairs * 20, "the runs did next to nothing");
}
