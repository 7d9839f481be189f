//! `locksim check`'s engine: one recorded history checked for linearizability against a
//! model, with the reason when it is not (the longest linearizable prefix, the operations that
//! could not go next and the model's words for each), as text, JSON or a page's item.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use locksim_check::formats::{edn, jepsen, locksim as run_file, ReadError};
use locksim_check::linear::explain::{Explanation, Limits};
use locksim_check::linear::lock_history::lock_context;
use locksim_check::linear::models::lock::LockInput;
use locksim_check::linear::models::{kv::Kv, lock::LeaseLock, register::Register};
use locksim_check::linear::{check, Budget, Model as LinearModel, Operation, Stats, Verdict};
use locksim_check::Names;
use locksim_render::linear::Checked as PageItem;

/// The sequential specification a history is checked against, and so its file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// A read/write/compare-and-set register (Jepsen's etcd logs).
    Etcd,
    /// A key-value store with get/put/append, checked per key (EDN lines).
    Kv,
    /// A lease lock in true time (a `locksim run --json --events` file).
    Lock,
    /// A lock that never expires (a `locksim run --json --events` file).
    Mutex,
}

/// The default time budget of one file, seconds.
pub const DEFAULT_TIMEOUT: f64 = 60.0;
/// The default memory budget of the search tables, MiB: with the history itself and the
/// program, the process stays under 1 GiB.
pub const DEFAULT_MAX_MEMORY_MIB: u64 = 640;

/// One file's outcome.
pub struct Checked {
    /// Operations in the history.
    pub ops: usize,
    pub verdict: Verdict,
    pub stats: Stats,
    /// Wall-clock time of the search, milliseconds.
    pub ms: f64,
    /// Where an operation id points, for people (`line 12`, `event #40`).
    pub id_word: &'static str,
    /// The failing part explained.
    pub explanation: Option<Explanation>,
    /// For the lock models: the acquires the history answered `ok` (a lock history with
    /// operations and no grant proves nothing about mutual exclusion).
    pub grants: Option<u64>,
}

fn run<M: LinearModel>(
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

/// Reads the history at `path` in `model`'s format and checks it within `budget`.
/// Errors: the file cannot be read or parsed (the error names the file and line).
pub fn check_file(model: Model, path: &Path, budget: &Budget) -> Result<Checked, ReadError> {
    let process = |p: u64| format!("process {p}");
    Ok(match model {
        Model::Etcd => run(
            &Register,
            &jepsen::read_etcd_log(path)?,
            budget,
            "line",
            |_, _| "the register".into(),
            process,
        ),
        Model::Kv => run(
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
        Model::Lock | Model::Mutex => check_lock(model, path, budget)?,
    })
}

/// [`check_file`] of a `locksim run --json --events` file against a lease lock
/// ([`Model::Lock`]) or one that never expires ([`Model::Mutex`]).
fn check_lock(model: Model, path: &Path, budget: &Budget) -> Result<Checked, ReadError> {
    let (scenario, history) = run_file::read_run(path)?;
    let mut spec = locksim_check::LeaseSpec::for_scenario(&scenario);
    spec.non_expiring = matches!(model, Model::Mutex);
    // Judged by the spec campaigns and `run` use: a compare-and-swap record
    // (k8s-lease's API server, `LockAlgorithm::lock_is_record`) promises no time.
    (spec.record, spec.session) = crate::outcome::held_spec(&scenario, None);
    let ops = spec.operations(&history);
    let names = Names(Some(&scenario.cluster));
    let lock = LeaseLock {
        uncertainty: scenario.workload.uncertainty(),
        record: spec.record,
        session: spec.session,
        context: std::sync::Arc::new(lock_context(&history, |n| names.of(n))),
    };
    let grants = crate::outcome::grants(&history);
    let mut checked = run(
        &lock,
        &ops,
        budget,
        "event #",
        |ops, part| {
            part.first()
                .map_or("a key".into(), |&i| match ops[i].input {
                    LockInput::Acquire { key, .. }
                    | LockInput::Release { key, .. }
                    | LockInput::Extend { key, .. } => format!("k{key}"),
                })
        },
        |p| names.of(p as u32),
    );
    checked.grants = Some(grants);
    Ok(checked)
}

/// The budget of one file: `timeout` seconds (positive), `max_memory` MiB of search tables
/// (1 to 2^40), `threads` workers (at least 1; `None`: every core). Errors name the flag
/// (`--timeout`, `--max-memory`, `--threads`) and the valid range.
pub fn budget(timeout: f64, max_memory: u64, threads: Option<usize>) -> Result<Budget, String> {
    let timeout_d = Duration::try_from_secs_f64(timeout)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            format!(
                "--timeout {}: give a positive number of seconds, below {:.1e}",
                timeout,
                Duration::MAX.as_secs_f64()
            )
        })?;
    if max_memory == 0 || max_memory > (1 << 40) {
        return Err(format!(
            "--max-memory {}: give a number of MiB between 1 and {}",
            max_memory,
            1u64 << 40
        ));
    }
    let threads = match threads {
        Some(0) => return Err("--threads 0: give at least one thread".into()),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    Ok(Budget {
        timeout: Some(timeout_d),
        max_memory: Some((max_memory as usize).saturating_mul(1 << 20)),
        threads,
        ..Budget::default()
    })
}

/// The text of one file's outcome: `NAME: VERDICT (N operations, T ms)`, then the reason
/// (unknown) or the explanation (not linearizable); ends with a newline.
pub fn text(name: &str, c: &Checked) -> String {
    let id = |i: u64| {
        if c.id_word.ends_with('#') {
            format!("{}{i}", c.id_word)
        } else {
            format!("{} {i}", c.id_word)
        }
    };
    let head = format!(
        "{name}: {} ({} operations, {:.1} ms)",
        c.verdict.name().replace('_', " "),
        c.ops,
        c.ms
    );
    match (&c.verdict, &c.explanation) {
        (Verdict::Unknown(why), _) => format!("{head}: {why}\n"),
        (Verdict::NotLinearizable(_), Some(x)) => format!("{head}\n{}", x.text(id)),
        _ => format!("{head}\n"),
    }
}

/// Why a linearizable verdict proves nothing, if it does not: 0 operations, or a lock
/// history in which no acquire was granted ("a zero is not a pass"). One line, no newline.
pub fn proves_nothing(name: &str, c: &Checked) -> Option<String> {
    if !matches!(c.verdict, Verdict::Linearizable) {
        None
    } else if c.ops == 0 {
        Some(format!(
            "{name}: 0 operations: linearizable proves nothing (exit 3)"
        ))
    } else if c.grants == Some(0) {
        Some(format!(
            "{name}: {} operations and no grant (no acquire answered ok): linearizable \
             proves nothing about the lock (exit 3)",
            c.ops
        ))
    } else {
        None
    }
}

/// One file's item on the `--html` page.
pub fn page_item(name: String, c: Checked) -> PageItem {
    PageItem {
        file: name,
        verdict: c.verdict.name(),
        ops: c.ops,
        reason: match &c.verdict {
            Verdict::Unknown(why) => Some(why.clone()),
            _ => None,
        },
        explanation: c.explanation,
    }
}

/// The page's title: the one file's name, or `N histories`.
pub fn page_title(files: &[PathBuf]) -> String {
    match files {
        [one] => one
            .file_name()
            .map_or("history".into(), |n| n.to_string_lossy().into_owned()),
        many => format!("{} histories", many.len()),
    }
}

/// Refuses a page target `h` before the work, not after it: one of the histories `files`,
/// or (without `force`) a file locksim did not write; `write_page` checks again when writing.
pub fn check_html_target(files: &[PathBuf], h: &Path, force: bool) -> Result<(), String> {
    if files.iter().any(|f| f == h) {
        return Err(format!(
            "--html {}: that is one of the histories; give another file",
            h.display()
        ));
    }
    if let Ok(existing) = std::fs::read(h) {
        let head = String::from_utf8_lossy(&existing[..existing.len().min(4096)]);
        if !force && !head.contains("<meta name=\"generator\" content=\"locksim render\">") {
            return Err(format!(
                "{} exists and is not a page locksim wrote; not replacing it (give --force \
                 to replace it)",
                h.display()
            ));
        }
    }
    Ok(())
}

/// `--json`'s object for one history: `file`, `verdict`, `ops`, `ms` (3 decimals), `parts`,
/// `configs`, `grants` (lock models); a failing one adds `prefix_length`, `prefix`, `stuck`,
/// `reasons` and `explanation`, an unknown one `reason`.
pub fn json(name: &str, c: &Checked) -> serde_json::Value {
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
