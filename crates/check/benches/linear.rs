//! Speed of the linearizability checker, on the histories Porcupine's figures were measured on
//! (`../shared/data/histories`: Jepsen's etcd logs and Porcupine's kv histories) and on a lock
//! history of 2,000 operations from 5 clients.
//!
//! Reference (Porcupine, Go, same kind of 2-core machine, from the data's README): all 102 etcd
//! histories 0.56 s (the slowest about 200 ms); kv c01 0.25/0.10 ms, c10 0.9/0.65 ms,
//! c50-ok 230 ms, c50-bad 36 ms (ok/bad). Our folder holds 72 of the etcd histories.
//!
//! Run: `cargo bench -p locksim-check --bench linear`. When the data folder is missing the
//! file groups are skipped with a note; the lock group always runs.

use std::path::PathBuf;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use locksim_check::formats::{edn, jepsen};
use locksim_check::linear::models::kv::Kv;
use locksim_check::linear::models::lock::{LeaseLock, LockInput, LockOutput};
use locksim_check::linear::models::register::Register;
use locksim_check::linear::{check, Budget, Operation, Verdict};
use rand::Rng;
use rand_chacha::rand_core::SeedableRng;

fn data() -> Option<PathBuf> {
    let dir = std::env::var_os("LOCKSIM_HISTORIES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/histories")
        });
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "NOTE: {} is missing: skipping the etcd and kv benchmarks",
            dir.display()
        );
        None
    }
}

fn budget() -> Budget {
    Budget {
        threads: 2,
        ..Budget::default()
    }
}

fn etcd(c: &mut Criterion) {
    let Some(dir) = data() else { return };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("etcd"))
        .expect("etcd folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    files.sort();
    let histories: Vec<_> = files
        .iter()
        .map(|f| jepsen::read_etcd_log(f).expect("readable"))
        .collect();
    let mut g = c.benchmark_group("etcd");
    g.sample_size(10).measurement_time(Duration::from_secs(5));
    g.bench_function(format!("all-{}", histories.len()), |b| {
        b.iter(|| {
            for h in &histories {
                let (v, _) = check(&Register, h, &budget());
                assert!(!matches!(v, Verdict::Unknown(_)));
            }
        })
    });
    // The slowest single file.
    let slowest = histories
        .iter()
        .enumerate()
        .max_by_key(|(_, h)| {
            let t = std::time::Instant::now();
            check(&Register, h, &budget());
            t.elapsed()
        })
        .map(|(i, _)| i)
        .expect("some files");
    let name = files[slowest]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    g.bench_function(format!("slowest-{name}"), |b| {
        b.iter(|| check(&Register, &histories[slowest], &budget()))
    });
    g.finish();
}

fn kv(c: &mut Criterion) {
    let Some(dir) = data() else { return };
    let mut g = c.benchmark_group("kv");
    g.sample_size(10).measurement_time(Duration::from_secs(3));
    for name in [
        "c01-ok", "c01-bad", "c10-ok", "c10-bad", "c50-ok", "c50-bad",
    ] {
        let ops = edn::read_kv(&dir.join("kv").join(format!("{name}.txt"))).expect("readable");
        g.bench_with_input(BenchmarkId::from_parameter(name), &ops, |b, ops| {
            b.iter(|| check(&Kv, ops, &budget()))
        });
    }
    g.finish();
}

/// A lock history: `n` operations from 5 clients taking turns, with the next holder's acquire
/// invoked while the previous holder is still releasing, some lease expiries instead of
/// releases, and some releases whose outcome is unknown. Times in ns; TTL 1 s.
pub fn lock_history(n: usize, seed: u64) -> Vec<Operation<LockInput, LockOutput>> {
    const MS: u64 = 1_000_000;
    let ttl = 1_000 * MS;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut ops = Vec::with_capacity(n);
    let mut t = 0u64;
    let mut handle = 0u64;
    while ops.len() < n {
        handle += 1;
        let client = rng.gen_range(0..5u64);
        // The acquire is invoked before the previous release completed and returns after it.
        let call = t.saturating_sub(rng.gen_range(0..5 * MS));
        let ok = t + rng.gen_range(1..10) * MS;
        ops.push(Operation {
            process: client,
            input: LockInput::Acquire {
                key: 0,
                ttl,
                handle,
            },
            output: LockOutput::Ok,
            call,
            ret: Some(ok),
            id: ops.len() as u64,
        });
        let hold = rng.gen_range(10..300) * MS;
        if rng.gen_bool(0.1) {
            // No release: the lease runs out; the next grant comes after TTL.
            t = ok + ttl + rng.gen_range(1..20) * MS;
            continue;
        }
        let rel_call = ok + hold;
        let unknown = rng.gen_bool(0.05);
        let rel_ret = rel_call + rng.gen_range(1..10) * MS;
        ops.push(Operation {
            process: client,
            input: LockInput::Release { key: 0, handle },
            output: if unknown {
                LockOutput::Unknown
            } else {
                LockOutput::Ok
            },
            call: rel_call,
            ret: if unknown { None } else { Some(rel_ret) },
            id: ops.len() as u64,
        });
        t = if unknown {
            rel_call + ttl + 20 * MS
        } else {
            rel_ret
        };
    }
    ops.truncate(n);
    ops
}

fn lock(c: &mut Criterion) {
    let ops = lock_history(2_000, 7);
    let model = LeaseLock::new(12_000_000);
    assert_eq!(check(&model, &ops, &budget()).0, Verdict::Linearizable);
    let mut g = c.benchmark_group("lock");
    g.sample_size(20);
    g.bench_function("2000-ops-5-clients", |b| {
        b.iter(|| check(&model, &ops, &budget()))
    });
    g.finish();
}

criterion_group!(benches, etcd, kv, lock);
criterion_main!(benches);
