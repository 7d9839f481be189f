//! Linearizability checking: Wing & Gong's search (Wing & Gong, "Testing and verifying
//! concurrent objects", 1993) with Lowe's refinements — memoizing each visited configuration
//! (the set of linearized operations, as a bitset, together with the model state) so no
//! configuration is explored twice (Lowe, "Testing for linearizability", 2017) — the approach of
//! the Porcupine checker. Histories are first split into independent parts by the model
//! (P-compositionality: Horn & Kroening, "Faster linearizability checking via
//! P-compositionality", 2015), and the parts are checked separately, in parallel.
//!
//! A model is data: implement [`Model`] (an initial state, a step function, optionally a
//! partition function) and the search core never changes.
//!
//! Operations whose outcome is unknown (Jepsen's `info`: a timeout) have no return time
//! (`ret = None`): they may take effect at any point after their invocation, or never. The
//! search places them like any other operation; "never" is the same as "after everything else",
//! which the search can always choose because a model's step accepts any effect of an unknown
//! outcome.

use std::fmt;
use std::hash::Hash;
use std::time::{Duration, Instant};

pub mod lock_history;
pub mod models;
pub(crate) mod pairs;
pub mod resource_history;
mod search;

/// One operation of a history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation<I, O> {
    /// The process (client) that performed it.
    pub process: u64,
    /// What was asked.
    pub input: I,
    /// What was observed (models give unknown outcomes their own variant).
    pub output: O,
    /// Invocation time (any strictly ordered clock: true time, line number, event id).
    pub call: u64,
    /// Completion time, `None` when the operation never completed (`info`, or still pending).
    pub ret: Option<u64>,
    /// An id a person can find in the input (event id, line number).
    pub id: u64,
}

/// A sequential specification.
pub trait Model: Sync {
    /// A state of the object. Cheap to clone and hash: it is stored in the memo table.
    type State: Clone + Eq + Hash + Send;
    /// Operation inputs.
    type Input: Send + Sync + fmt::Debug;
    /// Operation outputs (including an "unknown" variant where the history has them).
    type Output: Send + Sync + fmt::Debug;

    /// The state before any operation.
    fn init(&self) -> Self::State;

    /// Applies `op` to `state`: the state after it, or `None` when `op` (with its observed
    /// output) cannot happen in `state`.
    fn step(
        &self,
        state: &Self::State,
        op: &Operation<Self::Input, Self::Output>,
    ) -> Option<Self::State>;

    /// Splits the history into independent parts (indices into `ops`), e.g. one per key.
    /// The default keeps it whole.
    fn partition(&self, ops: &[Operation<Self::Input, Self::Output>]) -> Vec<Vec<usize>> {
        vec![(0..ops.len()).collect()]
    }

    /// One line describing an operation, for reports.
    fn describe(&self, op: &Operation<Self::Input, Self::Output>) -> String {
        format!("{:?} -> {:?}", op.input, op.output)
    }
}

/// Limits of one check. When one is reached the verdict is [`Verdict::Unknown`].
#[derive(Debug, Clone, Default)]
pub struct Budget {
    /// Wall-clock limit for the whole check (not deterministic: use `max_steps` in simulation).
    pub timeout: Option<Duration>,
    /// Limit on search steps over all parts (deterministic).
    pub max_steps: Option<u64>,
    /// Limit on memoized configurations over all parts (a memory bound).
    pub max_configs: Option<usize>,
    /// Worker threads for independent parts (0 or 1: the calling thread only).
    pub threads: usize,
}

/// The outcome of a check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Some order of the operations respects real time and the model.
    Linearizable,
    /// No such order exists.
    NotLinearizable(Counterexample),
    /// The budget ran out first.
    Unknown(String),
}

impl Verdict {
    /// `linearizable`, `not_linearizable` or `unknown`.
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Linearizable => "linearizable",
            Verdict::NotLinearizable(_) => "not_linearizable",
            Verdict::Unknown(_) => "unknown",
        }
    }
}

/// Why a history is not linearizable: within the failing part, the longest linearizable prefix
/// the search found, and the operations none of which could be placed next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counterexample {
    /// Index of the failing part (as returned by [`Model::partition`]).
    pub part: usize,
    /// Ids of the operations of the longest linearizable prefix, in linearization order.
    pub prefix: Vec<u64>,
    /// Ids of the operations that could not be placed after that prefix: every operation
    /// invoked before the earliest pending completion.
    pub stuck: Vec<u64>,
    /// Descriptions of the stuck operations.
    pub stuck_described: Vec<String>,
}

/// Search statistics.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Independent parts checked.
    pub parts: usize,
    /// Search steps over all parts.
    pub steps: u64,
    /// Memoized configurations over all parts.
    pub configs: usize,
}

/// The result of one part.
pub(crate) enum PartResult {
    Ok,
    Bad {
        prefix: Vec<usize>,
        stuck: Vec<usize>,
    },
    OutOfBudget(String),
}

/// Histories shorter than this are checked on the calling thread whatever `Budget::threads`.
pub const PARALLEL_MIN_OPS: usize = 1_000;

/// Checks a whole history against `model`: splits it with [`Model::partition`] and searches
/// each part, in parallel when `budget.threads > 1`; stops at the first failing part.
pub fn check<M: Model>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
    budget: &Budget,
) -> (Verdict, Stats) {
    let parts = model.partition(ops);
    let started = Instant::now();
    let shared = search::Shared::new(budget, started);
    // Threads pay only for big histories: starting one costs about as much as checking a few
    // hundred operations.
    let threads = if ops.len() < PARALLEL_MIN_OPS {
        1
    } else {
        budget.threads.max(1).min(parts.len().max(1))
    };
    let results: Vec<(usize, PartResult, u64, usize)> = if threads <= 1 {
        let mut out = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            let (r, steps, configs) = search::run_part(model, ops, p, &shared);
            let stop = !matches!(r, PartResult::Ok);
            out.push((i, r, steps, configs));
            if stop {
                break;
            }
        }
        out
    } else {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let out = std::sync::Mutex::new(Vec::new());
        // Largest parts first, so that one big part does not start last.
        let mut order: Vec<usize> = (0..parts.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(parts[i].len()));
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if k >= order.len() || shared.stopped() {
                        return;
                    }
                    let i = order[k];
                    let (r, steps, configs) = search::run_part(model, ops, &parts[i], &shared);
                    if !matches!(r, PartResult::Ok) {
                        shared.stop();
                    }
                    out.lock()
                        .expect("no panics while held")
                        .push((i, r, steps, configs));
                });
            }
        });
        let mut v = out.into_inner().expect("workers done");
        v.sort_by_key(|r| r.0);
        v
    };
    let mut stats = Stats {
        parts: parts.len(),
        ..Stats::default()
    };
    let mut verdict = Verdict::Linearizable;
    for (i, r, steps, configs) in results {
        stats.steps += steps;
        stats.configs += configs;
        match r {
            PartResult::Ok => {}
            PartResult::Bad { prefix, stuck } => {
                if !matches!(verdict, Verdict::NotLinearizable(_)) {
                    verdict = Verdict::NotLinearizable(Counterexample {
                        part: i,
                        prefix: prefix.iter().map(|&o| ops[o].id).collect(),
                        stuck: stuck.iter().map(|&o| ops[o].id).collect(),
                        stuck_described: stuck.iter().map(|&o| model.describe(&ops[o])).collect(),
                    });
                }
            }
            PartResult::OutOfBudget(why) => {
                if matches!(verdict, Verdict::Linearizable) {
                    verdict = Verdict::Unknown(why);
                }
            }
        }
    }
    (verdict, stats)
}
