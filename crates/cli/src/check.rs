//! `locksim check`: linearizability of recorded histories, one verdict per file, with the
//! reason when a history is not linearizable (the longest linearizable prefix, the operations
//! that could not go next and the model's words for each), as text, JSON or a page.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use locksim_check::formats::{edn, jepsen, locksim as run_file, ReadError};
use locksim_check::linear::explain::{Explanation, Limits};
use locksim_check::linear::lock_history::lock_context;
use locksim_check::linear::models::{kv::Kv, lock::LeaseLock, register::Register};
use locksim_check::linear::{check, Budget, Model, Operation, Stats, Verdict};
use locksim_check::Names;
use locksim_render::linear::{linear_page, Checked as PageItem};

use crate::out;
use locksim_explore::page::write_page;

#[derive(Clone, Copy, ValueEnum)]
enum ModelName {
    /// A read/write/compare-and-set register (Jepsen's etcd logs).
    Etcd,
    /// A key-value store with get/put/append, checked per key (EDN lines).
    Kv,
    /// A lease lock in true time (a `locksim run --json --events` file).
    Lock,
    /// A lock that never expires (held until released, or until its holder crashed): a
    /// session lock such as PostgreSQL's advisory locks (a `locksim run --json --events` file).
    Mutex,
}

/// The default time budget of one file, seconds.
pub const DEFAULT_TIMEOUT: f64 = 60.0;
/// The default memory budget of the search tables, MiB: with the history itself and the
/// program, the process stays under 1 GiB.
pub const DEFAULT_MAX_MEMORY_MIB: u64 = 640;

#[derive(Args)]
pub struct CheckArgs {
    /// The sequential specification and input format.
    #[arg(long, value_enum)]
    model: ModelName,
    /// History files.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Print one JSON object per file:
    /// {"file","verdict":"linearizable"|"not_linearizable"|"unknown","ops","ms",...}; a
    /// failing file adds "prefix_length", "prefix" (the ids of its last 200 steps at most)
    /// and "stuck" (operation ids) and "explanation" (the failing part's operations — about
    /// 1,000 around the stuck ones at most, "ops_skipped" counts the others —, the prefix's
    /// steps shown with the state after each, "prefix_skipped" the steps before them, and
    /// the stuck operations with the model's reasons); an unknown one "reason". The output
    /// stays small however long the history.
    #[arg(long)]
    json: bool,
    /// Give up on a file after this many seconds (its verdict is then `unknown`).
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_TIMEOUT)]
    timeout: f64,
    /// Give up on a file when the search's tables would hold more than this many MiB (its
    /// verdict is then `unknown`).
    #[arg(long, value_name = "MIB", default_value_t = DEFAULT_MAX_MEMORY_MIB)]
    max_memory: u64,
    /// Worker threads for a history's independent parts [default: the machine's cores].
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// Also write a page that draws why each failing history is not linearizable: each
    /// client's operations on a time axis, the longest linearizable prefix step by step with
    /// the model's state, and the operations that could not be placed, with the reasons.
    #[arg(long, value_name = "OUT.html")]
    html: Option<PathBuf>,
    /// With --html: replace OUT even when it is not a page locksim wrote.
    #[arg(long)]
    force: bool,
}

/// One file's outcome.
struct Checked {
    ops: usize,
    verdict: Verdict,
    stats: Stats,
    ms: f64,
    /// Where an operation id points, for people (`line 12`, `event #40`).
    id_word: &'static str,
    /// The failing part explained.
    explanation: Option<Explanation>,
    /// For the lock models: the acquires the history answered `ok` (a lock history with
    /// operations and no grant proves nothing about mutual exclusion: exit 3).
    grants: Option<u64>,
}

fn run<M: Model>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
    budget: &Budget,
    id_word: &'static str,
    title: impl Fn(&[Operation<M::Input, M::Output>], &[usize]) -> String,
    process: impl Fn(u64) -> String,
) -> Checked {
    let t = Instant::now();
    let (verdict, stats) = check(model, ops, budget);
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let explanation = match &verdict {
        Verdict::NotLinearizable(c) => Some(Explanation::bounded(
            model,
            ops,
            c,
            title(ops, &c.part_ops),
            if id_word == "line" { "line" } else { "ns" },
            process,
            |o| model.outcome(o),
            Limits::REPORT,
        )),
        _ => None,
    };
    Checked {
        ops: ops.len(),
        verdict,
        stats,
        ms,
        id_word,
        explanation,
        grants: None,
    }
}

fn check_file(model: ModelName, path: &Path, budget: &Budget) -> Result<Checked, ReadError> {
    let process = |p: u64| format!("process {p}");
    Ok(match model {
        ModelName::Etcd => run(
            &Register,
            &jepsen::read_etcd_log(path)?,
            budget,
            "line",
            |_, _| "the register".into(),
            process,
        ),
        ModelName::Kv => run(
            &Kv,
            &edn::read_kv(path)?,
            budget,
            "line",
            |ops, part| {
                part.first()
                    .map_or("a key".into(), |&i| format!("key {:?}", ops[i].input.key()))
            },
            process,
        ),
        ModelName::Lock | ModelName::Mutex => {
            let (scenario, history) = run_file::read_run(path)?;
            let mut spec = locksim_check::LeaseSpec::for_scenario(&scenario);
            spec.non_expiring = matches!(model, ModelName::Mutex);
            // Judged by the spec campaigns and `run` use: a compare-and-swap record
            // (k8s-lease's API server, `LockAlgorithm::lock_is_record`) promises no time.
            (spec.record, spec.session) = locksim_explore::outcome::held_spec(&scenario, None);
            let ops = spec.operations(&history);
            let names = Names(Some(&scenario.cluster));
            let lock = LeaseLock {
                uncertainty: scenario.workload.uncertainty(),
                record: spec.record,
                session: spec.session,
                context: std::sync::Arc::new(lock_context(&history, |n| names.of(n))),
            };
            let grants = locksim_explore::outcome::grants(&history);
            let mut checked = run(
                &lock,
                &ops,
                budget,
                "event #",
                |ops, part| {
                    part.first()
                        .map_or("a key".into(), |&i| match ops[i].input {
                            locksim_check::linear::models::lock::LockInput::Acquire {
                                key, ..
                            }
                            | locksim_check::linear::models::lock::LockInput::Release {
                                key, ..
                            }
                            | locksim_check::linear::models::lock::LockInput::Extend {
                                key, ..
                            } => format!("k{key}"),
                        })
                },
                |p| names.of(p as u32),
            );
            checked.grants = Some(grants);
            checked
        }
    })
}

/// The budget of one file from the flags.
fn budget(a: &CheckArgs) -> Result<Budget, String> {
    let timeout = Duration::try_from_secs_f64(a.timeout)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            format!(
                "--timeout {}: give a positive number of seconds, below {:.1e}",
                a.timeout,
                Duration::MAX.as_secs_f64()
            )
        })?;
    if a.max_memory == 0 || a.max_memory > (1 << 40) {
        return Err(format!(
            "--max-memory {}: give a number of MiB between 1 and {}",
            a.max_memory,
            1u64 << 40
        ));
    }
    let threads = match a.threads {
        Some(0) => return Err("--threads 0: give at least one thread".into()),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    Ok(Budget {
        timeout: Some(timeout),
        max_memory: Some((a.max_memory as usize).saturating_mul(1 << 20)),
        threads,
        ..Budget::default()
    })
}

pub fn main(a: CheckArgs) -> Result<ExitCode, String> {
    let budget = budget(&a)?;
    if let Some(h) = &a.html {
        check_html_target(&a, h)?;
    }
    let (mut unknown, mut bad_input, mut failing) = (false, false, false);
    let mut page: Vec<PageItem> = Vec::new();
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
        let id = |i: u64| {
            if c.id_word.ends_with('#') {
                format!("{}{i}", c.id_word)
            } else {
                format!("{} {i}", c.id_word)
            }
        };
        if a.json {
            out(&format!("{}\n", json(&name, &c)));
        } else {
            let head = format!(
                "{name}: {} ({} operations, {:.1} ms)",
                c.verdict.name().replace('_', " "),
                c.ops,
                c.ms
            );
            match (&c.verdict, &c.explanation) {
                (Verdict::Unknown(why), _) => out(&format!("{head}: {why}\n")),
                (Verdict::NotLinearizable(_), Some(x)) => {
                    out(&format!("{head}\n{}", x.text(id)));
                }
                _ => out(&format!("{head}\n")),
            }
        }
        unknown |= matches!(c.verdict, Verdict::Unknown(_));
        failing |= matches!(c.verdict, Verdict::NotLinearizable(_));
        // 0 operations are trivially linearizable and prove nothing (exit 3); so is a lock
        // history in which no acquire was granted ("a zero is not a pass").
        if c.ops == 0 && matches!(c.verdict, Verdict::Linearizable) {
            eprintln!("{name}: 0 operations: linearizable proves nothing (exit 3)");
            unknown = true;
        } else if c.grants == Some(0) && matches!(c.verdict, Verdict::Linearizable) {
            eprintln!(
                "{name}: {} operations and no grant (no acquire answered ok): linearizable \
                 proves nothing about the lock (exit 3)",
                c.ops
            );
            unknown = true;
        }
        page.push(PageItem {
            file: name,
            verdict: c.verdict.name(),
            ops: c.ops,
            reason: match &c.verdict {
                Verdict::Unknown(why) => Some(why.clone()),
                _ => None,
            },
            explanation: c.explanation,
        });
    }
    if let Some(h) = &a.html {
        let title = match a.files.as_slice() {
            [one] => one
                .file_name()
                .map_or("history".into(), |n| n.to_string_lossy().into_owned()),
            many => format!("{} histories", many.len()),
        };
        write_page(h, &linear_page(&title, &page), a.force)?;
        if !a.json {
            eprintln!("wrote {}", h.display());
        }
    }
    Ok(ExitCode::from(exit_code(bad_input, failing, unknown)))
}

/// Refuses `--html FILE` before the work, not after it: one of the histories, or a file
/// locksim did not write (without `--force`); `write_page` checks again when writing.
fn check_html_target(a: &CheckArgs, h: &std::path::Path) -> Result<(), String> {
    if a.files.iter().any(|f| f == h) {
        return Err(format!(
            "--html {}: that is one of the histories; give another file",
            h.display()
        ));
    }
    if let Ok(existing) = std::fs::read(h) {
        let head = String::from_utf8_lossy(&existing[..existing.len().min(4096)]);
        if !a.force && !head.contains("<meta name=\"generator\" content=\"locksim render\">") {
            return Err(format!(
                "{} exists and is not a page locksim wrote; not replacing it (give --force \
                 to replace it)",
                h.display()
            ));
        }
    }
    Ok(())
}

/// `--json`'s object for one history.
fn json(name: &str, c: &Checked) -> serde_json::Value {
    let mut v = serde_json::json!({
        "file": name,
        "verdict": c.verdict.name(),
        "ops": c.ops,
        "ms": (c.ms * 1000.0).round() / 1000.0,
        "parts": c.stats.parts,
        "configs": c.stats.configs,
    });
    if let Some(g) = c.grants {
        v["grants"] = serde_json::json!(g);
    }
    match &c.verdict {
        Verdict::NotLinearizable(x) => {
            // The prefix's last steps only (the explanation's), and its length.
            v["prefix_length"] = serde_json::json!(x.prefix.len());
            v["prefix"] = serde_json::json!(c.explanation.as_ref().map(|e| e
                .prefix
                .iter()
                .map(|p| p.id)
                .collect::<Vec<u64>>()));
            v["stuck"] = serde_json::json!(x.stuck);
            v["reasons"] = serde_json::json!(x.reasons);
            v["explanation"] = serde_json::json!(c.explanation);
        }
        Verdict::Unknown(why) => v["reason"] = serde_json::json!(why),
        Verdict::Linearizable => {}
    }
    v
}

/// The exit-code table every command keeps (issue #24, item 8): a history that is not
/// linearizable is a violation (1, as Jepsen's checker fails an invalid result), one whose
/// search gave up is undecided (3), an unreadable file is bad input (2); 2 wins over 1, 1
/// over 3.
fn exit_code(bad_input: bool, failing: bool, unknown: bool) -> u8 {
    if bad_input {
        crate::exit::BAD_INPUT
    } else if failing {
        crate::exit::VIOLATION
    } else if unknown {
        crate::exit::UNDECIDED
    } else {
        crate::exit::CLEAN
    }
}

#[cfg(test)]
mod tests {
    /// Issue #24, item 8: "not linearizable" exited 0 and "unknown" 1.
    #[test]
    fn not_linearizable_is_a_violation_and_unknown_is_undecided() {
        use super::exit_code;
        assert_eq!(exit_code(false, false, false), 0);
        assert_eq!(exit_code(false, true, false), 1);
        assert_eq!(exit_code(false, false, true), 3);
        assert_eq!(exit_code(false, true, true), 1);
        assert_eq!(exit_code(true, true, true), 2);
    }
}
