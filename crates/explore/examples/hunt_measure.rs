//! Runs to the first violation, random search against guided, side by side (issue #28): one
//! line per first seed, the two searches' runs and their ratio.
//!
//! ```text
//! cargo run --release -p locksim-explore --example hunt_measure -- \
//!     sims/k3-raft-lease-unlock-by-name.toml delay S4 1500 0 1000 2000
//! cargo run --release -p locksim-explore --example hunt_measure -- \
//!     redlock crash-restart S1 1500 0 1000 2000 --set ttl=2s
//! ```
//!
//! Arguments: a campaign file or an algorithm name, the fault kinds, the property, the budget
//! of runs per search, then first seeds; `--set KEY=VALUE` for an algorithm's settings. A
//! search that used up its budget prints `>BUDGET` (its true figure is larger).

use locksim_core::fault::parse_kinds;
use locksim_explore::campaign_file::CampaignFile;
use locksim_explore::hunt::{hunt, Hunt, Search};
use locksim_explore::setups_for;

fn usage() -> ! {
    eprintln!("usage: hunt_measure FILE.toml|ALGO KINDS PROPERTY BUDGET FIRST_SEED... [--set K=V]");
    std::process::exit(2);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 5 {
        usage();
    }
    let (target, kinds, property) = (&args[0], &args[1], &args[2]);
    let budget: u64 = args[3].parse().unwrap_or_else(|_| usage());
    let (mut firsts, mut sets) = (Vec::new(), Vec::new());
    let mut rest = args[4..].iter();
    while let Some(a) = rest.next() {
        if a == "--set" {
            sets.push(rest.next().cloned().unwrap_or_else(|| usage()));
        } else {
            firsts.push(a.parse::<u64>().unwrap_or_else(|_| usage()));
        }
    }
    let setup = if target.ends_with(".toml") {
        CampaignFile::read(std::path::Path::new(target))
            .and_then(|f| f.spec(1))
            .map(|mut s| s.setups.remove(0))
    } else {
        setups_for(std::slice::from_ref(target), &sets).map(|mut s| s.remove(0))
    }
    .unwrap_or_else(|e| {
        eprintln!("{target}: {e}");
        std::process::exit(2)
    });
    let kinds = parse_kinds(kinds).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let property = Some(property.parse().unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    }));
    for first_seed in firsts {
        let runs = [Search::Random, Search::Guided].map(|search| {
            let h = Hunt {
                setup: setup.clone(),
                kinds: kinds.clone(),
                property,
                budget,
                search,
                first_seed,
                jobs: 2,
            };
            let out = hunt(&h, &|_, _, _| {});
            (out.runs, out.found.is_some())
        });
        let show = |(r, found): (u64, bool)| {
            if found {
                r.to_string()
            } else {
                format!(">{r}")
            }
        };
        println!(
            "{target} {} {} first_seed {first_seed}: random {} guided {} ratio {:.2}",
            args[1],
            args[2],
            show(runs[0]),
            show(runs[1]),
            runs[0].0 as f64 / runs[1].0 as f64
        );
    }
}
