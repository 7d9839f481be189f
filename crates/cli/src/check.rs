//! `locksim check`: linearizability of recorded histories, one verdict per file.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use locksim_check::formats::{edn, jepsen, locksim as run_file, ReadError};
use locksim_check::linear::lock_history::lock_operations;
use locksim_check::linear::models::{kv::Kv, lock::LeaseLock, register::Register};
use locksim_check::linear::{check, Budget, Model, Operation, Stats, Verdict};

use crate::out;

#[derive(Clone, Copy, ValueEnum)]
enum ModelName {
    /// A read/write/compare-and-set register (Jepsen's etcd logs).
    Etcd,
    /// A key-value store with get/put/append, checked per key (EDN lines).
    Kv,
    /// A lease lock in true time (a `locksim run --json --events` file).
    Lock,
}

#[derive(Args)]
pub struct CheckArgs {
    /// The sequential specification and input format.
    #[arg(long, value_enum)]
    model: ModelName,
    /// History files.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Print one JSON object per file:
    /// {"file","verdict":"linearizable"|"not_linearizable"|"unknown","ops","ms",...}.
    #[arg(long)]
    json: bool,
    /// Give up on a file after this many seconds (its verdict is then `unknown`).
    #[arg(long, value_name = "SECONDS")]
    timeout: Option<f64>,
}

/// One file's outcome.
struct Checked {
    ops: usize,
    verdict: Verdict,
    stats: Stats,
    ms: f64,
    /// Where an operation id points, for people (`line 12`, `event #40`).
    id_word: &'static str,
}

fn run<M: Model>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
    budget: &Budget,
    id_word: &'static str,
) -> Checked {
    let t = Instant::now();
    let (verdict, stats) = check(model, ops, budget);
    Checked {
        ops: ops.len(),
        verdict,
        stats,
        ms: t.elapsed().as_secs_f64() * 1e3,
        id_word,
    }
}

fn check_file(model: ModelName, path: &Path, budget: &Budget) -> Result<Checked, ReadError> {
    Ok(match model {
        ModelName::Etcd => run(&Register, &jepsen::read_etcd_log(path)?, budget, "line"),
        ModelName::Kv => run(&Kv, &edn::read_kv(path)?, budget, "line"),
        ModelName::Lock => {
            let (scenario, history) = run_file::read_run(path)?;
            let ops = lock_operations(&history, scenario.workload.ttl);
            let lock = LeaseLock {
                uncertainty: scenario.workload.uncertainty(),
            };
            run(&lock, &ops, budget, "event #")
        }
    })
}

pub fn main(a: CheckArgs) -> Result<ExitCode, String> {
    let timeout = match a.timeout {
        Some(s) if !(s > 0.0 && s.is_finite()) => {
            return Err(format!("--timeout {s}: give a positive number of seconds"))
        }
        Some(s) => Some(Duration::from_secs_f64(s)),
        None => None,
    };
    let budget = Budget {
        timeout,
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        ..Budget::default()
    };
    let (mut unknown, mut bad_input) = (false, false);
    for file in &a.files {
        let name = file.display().to_string();
        let c = match check_file(a.model, file, &budget) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("error: {e}");
                bad_input = true;
                continue;
            }
        };
        let id = |i: &u64| {
            if c.id_word.ends_with('#') {
                format!("{}{i}", c.id_word)
            } else {
                format!("{} {i}", c.id_word)
            }
        };
        if a.json {
            let mut v = serde_json::json!({
                "file": name,
                "verdict": c.verdict.name(),
                "ops": c.ops,
                "ms": (c.ms * 1000.0).round() / 1000.0,
                "parts": c.stats.parts,
                "configs": c.stats.configs,
            });
            match &c.verdict {
                Verdict::NotLinearizable(x) => {
                    v["prefix"] = serde_json::json!(x.prefix);
                    v["stuck"] = serde_json::json!(x.stuck);
                }
                Verdict::Unknown(why) => v["reason"] = serde_json::json!(why),
                Verdict::Linearizable => {}
            }
            out(&format!("{v}\n"));
        } else {
            let head = format!(
                "{name}: {} ({} operations, {:.1} ms)",
                c.verdict.name().replace('_', " "),
                c.ops,
                c.ms
            );
            match &c.verdict {
                Verdict::Linearizable => out(&format!("{head}\n")),
                Verdict::Unknown(why) => out(&format!("{head}: {why}\n")),
                Verdict::NotLinearizable(x) => {
                    let mut t = format!(
                        "{head}\n  the longest linearizable prefix has {} operations{}\n  none of these can take effect next:\n",
                        x.prefix.len(),
                        x.prefix.last().map_or(String::new(), |l| format!(", ending with the one at {}", id(l)))
                    );
                    for (i, d) in x.stuck.iter().zip(&x.stuck_described) {
                        t += &format!("    {}: {d}\n", id(i));
                    }
                    out(&t);
                }
            }
        }
        unknown |= matches!(c.verdict, Verdict::Unknown(_));
    }
    Ok(if bad_input {
        ExitCode::from(2)
    } else if unknown {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
