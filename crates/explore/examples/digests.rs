//! Prints one line per run of the default campaign matrix: algorithm, fault kind, seed, the
//! run's event digest ([`locksim_core::History::digest`]), a digest of its message log (every
//! message's endpoints, send and delivery times and fate, plus the sent/dropped counts) and
//! its verdict. Two builds that print the same lines ran the same simulations: the check a
//! speed-up must pass.
//!
//! ```text
//! cargo run --release -p locksim-explore --example digests -- tcp 25 > after.txt
//! cmp before.txt after.txt
//! ```
//!
//! Arguments: the network model (`tcp` or `datagram`), the number of seeds per cell (seeds
//! 0..N of central, central-fencing, redlock and raft-lease × every kind of
//! [`FaultKind::DEFAULT_MATRIX`]) and optionally `all`: every built-in algorithm instead of
//! those four.

use locksim_core::FaultKind;
use locksim_explore::{check_scenario, Setup};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(network), Some(Ok(seeds))) = (args.get(1), args.get(2).map(|s| s.parse::<u64>()))
    else {
        eprintln!("usage: digests NETWORK SEEDS (e.g. digests tcp 25)");
        std::process::exit(2);
    };
    let algos: Vec<&str> = if args.get(3).map(String::as_str) == Some("all") {
        locksim_explore::algos::algorithms()
            .into_iter()
            .map(|(name, _)| name)
            .collect()
    } else {
        vec!["central", "central-fencing", "redlock", "raft-lease"]
    };
    for algo in algos {
        let st = match Setup::registered(algo, &[("network".into(), network.clone())]) {
            Ok(st) => st,
            Err(e) => {
                eprintln!("network {network}: {e}");
                std::process::exit(2);
            }
        };
        for &kind in FaultKind::DEFAULT_MATRIX.iter() {
            for seed in 0..seeds {
                let out = check_scenario(&st.scenario(seed, &[kind]), st.algo.clone());
                let Some(h) = out.history else {
                    eprintln!("{algo} {kind:?} seed {seed} failed to run: {:?}", out.error);
                    std::process::exit(1);
                };
                let mut x = xxhash_rust::xxh3::Xxh3::new();
                for m in &h.messages {
                    x.update(format!("{m:?}\n").as_bytes());
                }
                x.update(format!("{} {}", h.messages_sent, h.messages_dropped).as_bytes());
                println!(
                    "{algo} {kind:?} {seed} {} {:032x} {:?}",
                    h.digest(),
                    x.digest128(),
                    out.verdict
                );
            }
        }
    }
}
