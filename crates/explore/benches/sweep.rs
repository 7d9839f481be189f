//! What the issue's showcase sweep costs: `locksim sweep --algo redlock,central-fencing
//! --faults pause --vary pause_max=100ms..3s:10 --set ttl=1s --seeds 300`.
//!
//! `sweep/pause-frontier-slice` runs that sweep's whole grid (10 points × 2 algorithms) on 2
//! worker threads, as the command does on a 2-core machine, but only [`SEEDS`] seeds of each
//! point per iteration, through [`run_campaign`] (every seed simulated and checked). Throughput
//! is seeds/s; the full sweep is 6,000 seeds, so its time is 6,000 over that figure (the
//! report's shrinking of each point's first failure comes on top: `time` the command for it).
//!
//! ```text
//! cargo bench -p locksim-explore --bench sweep
//! ```

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use locksim_core::FaultKind;
use locksim_explore::run_campaign;
use locksim_explore::sweep::{Axis, SweepDef};

/// Seeds per point and algorithm in one iteration.
const SEEDS: u64 = 4;

fn bench(c: &mut Criterion) {
    let def = SweepDef {
        algorithms: vec!["redlock".into(), "central-fencing".into()],
        settings: vec!["ttl=1s".into()],
        axes: vec![Axis::parse("pause_max=100ms..3s:10").expect("a valid axis")],
        kinds: vec![FaultKind::Pause],
        first_seed: 0,
        seeds: SEEDS,
    };
    let (spec, _) = def.spec(2).expect("the sweep builds");
    let seeds = spec.setups.len() as u64 * SEEDS;
    let mut g = c.benchmark_group("sweep");
    g.sample_size(10);
    g.throughput(Throughput::Elements(seeds));
    g.bench_function("pause-frontier-slice", |b| {
        b.iter(|| {
            let cells = run_campaign(&spec, &|_, _| {});
            assert_eq!(cells.iter().map(|c| c.seeds).sum::<u64>(), seeds);
            cells
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
