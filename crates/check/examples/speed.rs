//! Side-by-side speed of the linearizability checker on the shared histories: the total check
//! time of every etcd history (parsing excluded) and of Porcupine's kv c50-ok, with one thread
//! and with two. Uses only `check`, `Budget { threads }` and the readers, so the same file
//! builds against older versions of the crate for a comparison in one sitting.
//!
//! Run: `cargo run --release -p locksim-check --example speed -- [ROUNDS] [WHAT] [THREADS]`
//! with WHAT one of `all` (default), `etcd`, `c50-ok` and THREADS `1`, `2` or `both`
//! (default); prints the best and the median of ROUNDS (default 15) rounds, in ms.
//! `ROUNDS = 1` suits `valgrind --tool=callgrind --toggle-collect='*linear::check*'`, which
//! counts the instructions of the checks alone (parsing excluded).

use std::path::PathBuf;
use std::time::Instant;

use locksim_check::formats::{edn, jepsen};
use locksim_check::linear::models::{kv::Kv, register::Register};
use locksim_check::linear::{check, Budget, Verdict};

fn main() {
    let mut args = std::env::args().skip(1);
    let rounds: usize = args.next().map_or(15, |s| s.parse().expect("ROUNDS"));
    let what = args.next().unwrap_or_else(|| "all".into());
    let which = args.next().unwrap_or_else(|| "both".into());
    let dir = std::env::var_os("LOCKSIM_HISTORIES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/histories")
        });
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("etcd"))
        .expect("the etcd folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    files.sort();
    let etcd: Vec<_> = files
        .iter()
        .map(|f| jepsen::read_etcd_log(f).expect("readable"))
        .collect();
    let c50 = edn::read_kv(&dir.join("kv/c50-ok.txt")).expect("readable");
    for threads in [1, 2] {
        if which != "both" && which != threads.to_string() {
            continue;
        }
        let budget = Budget {
            threads,
            ..Budget::default()
        };
        if what == "all" || what == "etcd" {
            let times = measure(rounds, || {
                for h in &etcd {
                    let v = check(&Register, h, &budget).0;
                    assert!(!matches!(v, Verdict::Unknown(_)));
                }
            });
            report(&format!("etcd-{} threads={threads}", etcd.len()), times);
        }
        if what == "all" || what == "c50-ok" {
            let times = measure(rounds, || {
                assert_eq!(check(&Kv, &c50, &budget).0, Verdict::Linearizable);
            });
            report(&format!("kv-c50-ok threads={threads}"), times);
        }
    }
}

fn measure(rounds: usize, mut f: impl FnMut()) -> Vec<f64> {
    let mut v: Vec<f64> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

fn report(name: &str, t: Vec<f64>) {
    println!(
        "{name:<24} best {:>9.3} ms  median {:>9.3} ms  ({} rounds)",
        t[0],
        t[t.len() / 2],
        t.len()
    );
}
