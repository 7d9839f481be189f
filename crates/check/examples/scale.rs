//! A generated history checked at scale, for `/usr/bin/time -v` (peak memory) and wall time:
//! `cargo run --release -p locksim-check --example scale -- kv 1000000 [THREADS]` (1,000 keys,
//! 50 clients, 3% unknown outcomes) or `-- lock 100000 [THREADS]` (one key, 5 clients).
//! Prints the generation and check times, the verdict and the search's statistics.

use std::time::Instant;

use locksim_check::linear::models::{kv::Kv, lock::LeaseLock};
use locksim_check::linear::synth::{kv_history, lock_history};
use locksim_check::linear::{check, Budget};

fn main() {
    let mut args = std::env::args().skip(1);
    let kind = args.next().unwrap_or_else(|| "kv".into());
    let n: usize = args.next().map_or(1_000_000, |s| s.parse().expect("N"));
    let threads: usize = args.next().map_or(1, |s| s.parse().expect("THREADS"));
    let budget = Budget {
        threads,
        max_memory: Some(640 << 20),
        ..Budget::default()
    };
    let t = Instant::now();
    let (verdict, stats, made) = match kind.as_str() {
        "kv" => {
            let ops = kv_history(n, 1_000, 50, 0.03, 7);
            let made = t.elapsed();
            let t = Instant::now();
            let (v, s) = check(&Kv, &ops, &budget);
            println!("check {:.3} s", t.elapsed().as_secs_f64());
            (v, s, made)
        }
        "lock" => {
            let ops = lock_history(n, 7);
            let made = t.elapsed();
            let t = Instant::now();
            let (v, s) = check(&LeaseLock::new(12_000_000), &ops, &budget);
            println!("check {:.3} s", t.elapsed().as_secs_f64());
            (v, s, made)
        }
        other => panic!("unknown kind {other}: kv or lock"),
    };
    println!(
        "{kind} {n} ops, {threads} thread(s): generated in {:.3} s; {}; {stats:?}",
        made.as_secs_f64(),
        verdict.name()
    );
}
