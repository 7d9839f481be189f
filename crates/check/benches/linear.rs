//! Speed of the linearizability checker, on the histories Porcupine's figures were measured on
//! (`../shared/data/histories`: Jepsen's etcd logs and Porcupine's kv histories), with one
//! thread and with two; kv c50-bad on one thread (a hard part must not keep a cheap failing
//! one from answering); and generated histories (never stored): lock histories of 2,000 and
//! 100,000 operations and a kv history of 1,000,000 operations (1,000 keys, 50 clients, 3%
//! unknown outcomes), which also run with a 640 MiB memory budget to show they stay within it.
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
use locksim_check::linear::models::lock::LeaseLock;
use locksim_check::linear::models::register::Register;
use locksim_check::linear::synth::{kv_history, lock_history};
use locksim_check::linear::{check, Budget, Verdict};

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

fn budget(threads: usize) -> Budget {
    Budget {
        threads,
        max_memory: Some(640 << 20),
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
    g.sample_size(20).measurement_time(Duration::from_secs(3));
    for threads in [1, 2] {
        g.bench_function(format!("all-{}/threads-{threads}", histories.len()), |b| {
            b.iter(|| {
                for h in &histories {
                    let (v, _) = check(&Register, h, &budget(threads));
                    assert!(!matches!(v, Verdict::Unknown(_)));
                }
            })
        });
    }
    // The slowest single file.
    let slowest = histories
        .iter()
        .enumerate()
        .max_by_key(|(_, h)| {
            let t = std::time::Instant::now();
            check(&Register, h, &budget(1));
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
        b.iter(|| check(&Register, &histories[slowest], &budget(1)))
    });
    g.finish();
}

fn kv(c: &mut Criterion) {
    let Some(dir) = data() else { return };
    let mut g = c.benchmark_group("kv");
    g.sample_size(10).measurement_time(Duration::from_secs(3));
    let read =
        |name: &str| edn::read_kv(&dir.join("kv").join(format!("{name}.txt"))).expect("readable");
    for name in [
        "c01-ok", "c01-bad", "c10-ok", "c10-bad", "c50-ok", "c50-bad",
    ] {
        let ops = read(name);
        g.bench_with_input(BenchmarkId::new(name, "threads-2"), &ops, |b, ops| {
            b.iter(|| check(&Kv, ops, &budget(2)))
        });
    }
    // One thread: c50-ok, and c50-bad, whose first part is hard (it used to run out of
    // memory before the cheap failing part got a turn).
    for name in ["c50-ok", "c50-bad"] {
        let ops = read(name);
        let want = name.ends_with("ok");
        assert_eq!(
            matches!(check(&Kv, &ops, &budget(1)).0, Verdict::Linearizable),
            want
        );
        g.bench_with_input(BenchmarkId::new(name, "threads-1"), &ops, |b, ops| {
            b.iter(|| check(&Kv, ops, &budget(1)))
        });
    }
    g.finish();
}

fn lock(c: &mut Criterion) {
    let model = LeaseLock::new(12_000_000);
    let mut g = c.benchmark_group("lock");
    g.sample_size(10);
    for n in [2_000, 100_000] {
        let ops = lock_history(n, 7);
        assert_eq!(check(&model, &ops, &budget(1)).0, Verdict::Linearizable);
        g.bench_with_input(BenchmarkId::new("ops-5-clients", n), &ops, |b, ops| {
            b.iter(|| check(&model, ops, &budget(1)))
        });
    }
    g.finish();
}

fn scale(c: &mut Criterion) {
    // Generated at bench time, not stored: 10^6 operations, 1,000 keys, 50 clients.
    let ops = kv_history(1_000_000, 1_000, 50, 0.03, 7);
    assert_eq!(check(&Kv, &ops, &budget(2)).0, Verdict::Linearizable);
    let mut g = c.benchmark_group("scale");
    g.sample_size(10).measurement_time(Duration::from_secs(15));
    for threads in [1, 2] {
        g.bench_with_input(
            BenchmarkId::new("kv-1000000-ops", format!("threads-{threads}")),
            &ops,
            |b, ops| b.iter(|| check(&Kv, ops, &budget(threads))),
        );
    }
    g.finish();
}

criterion_group!(benches, etcd, kv, lock, scale);
criterion_main!(benches);
