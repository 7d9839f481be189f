//! Linearizability checking: Wing & Gong's search (Wing & Gong, "Testing and verifying
//! concurrent objects", 1993) with Lowe's refinements — memoizing each visited configuration
//! (the set of linearized operations, as a bitset, together with the model state) so no
//! configuration is explored twice (Lowe, "Testing for linearizability", 2017) — the approach of
//! the Porcupine checker. Histories are first split into independent parts by the model
//! (P-compositionality: Horn & Kroening, "Faster linearizability checking via
//! P-compositionality", 2015), and the parts are checked separately, in parallel.
//!
//! A model is data: implement [`Model`] (an initial state, a step function, optionally a
//! partition function, descriptions and hints for the search) and the search core never
//! changes. The search's reductions ([`search`]) rely only on the hints a model gives.
//!
//! Operations whose outcome is unknown (Jepsen's `info`: a timeout) have no return time
//! (`ret = None`): they may take effect at any point after their invocation, or never. The
//! search places them like any other operation; "never" is the same as "after everything else",
//! which the search can always choose because a model's step accepts any effect of an unknown
//! outcome.
//!
//! Parts are searched in rounds, smallest first, each round giving every undecided part a
//! slice of steps twice as long as the round before (in the spirit of Lowe's running of
//! algorithms in competition): a cheap failing part answers after a few rounds however hard
//! the other parts are, on any number of threads. Which part's counterexample is reported is
//! decided by the rounds, not by the threads: the same history gives the same verdict and the
//! same counterexample on one thread or many.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::hash::Hash;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

pub mod explain;
pub mod lock_history;
pub mod models;
pub(crate) mod pairs;
pub mod resource_history;
mod search;
pub mod synth;

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
///
/// Only [`Model::init`] and [`Model::step`] are required. The other methods have defaults
/// that are always correct: descriptions for reports, and hints that let the search skip work
/// ([`Model::is_read_only`], [`Model::same_effect`], [`Model::unobserved`]); a hint must be
/// true of the model, or the verdict may be wrong.
pub trait Model: Sync {
    /// A state of the object. Cheap to clone and hash: it is stored in the memo table.
    type State: Clone + Eq + Hash + Send + fmt::Debug;
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

    /// A state in words, for reports (shown after each step of a linearization).
    fn describe_state(&self, state: &Self::State) -> String {
        format!("{state:?}")
    }

    /// Why `op` cannot take effect in `state` (called when [`Model::step`] returned `None`),
    /// in the model's words: what the operation observed and what the state allows. Models
    /// whose operations carry times should say them.
    fn why_not(&self, state: &Self::State, op: &Operation<Self::Input, Self::Output>) -> String {
        format!(
            "{} cannot take effect when the state is {}",
            self.describe(op),
            self.describe_state(state)
        )
    }

    /// Hint for the memory budget: heap bytes a state holds beyond its own size (count a
    /// shared part as if it were not shared: the budget should err on the safe side).
    /// Default: 0.
    fn heap_bytes(&self, state: &Self::State) -> usize {
        let _ = state;
        0
    }

    /// Hint: `true` when `op` never changes the state (`step` gives `None` or an equal state
    /// in every state), e.g. a read. The search then linearizes it as early as it can and
    /// never tries it later. Default: `false`.
    fn is_read_only(&self, op: &Operation<Self::Input, Self::Output>) -> bool {
        let _ = op;
        false
    }

    /// Hint: `true` when `a` and `b`, both with unknown outcomes (`ret = None`), have the same
    /// effect in every state (e.g. two timed-out writes of one value). Default: `false`.
    fn same_effect(
        &self,
        a: &Operation<Self::Input, Self::Output>,
        b: &Operation<Self::Input, Self::Output>,
    ) -> bool {
        let _ = (a, b);
        false
    }

    /// How a report classifies `op`: `ok`, `fail` (it completed and did nothing, e.g. a
    /// compare-and-set that answered false) or `info` (unknown outcome). Default: `info`
    /// without a return, else `ok`.
    fn outcome(&self, op: &Operation<Self::Input, Self::Output>) -> &'static str {
        if op.ret.is_none() {
            "info"
        } else {
            "ok"
        }
    }

    /// Hint: `true` when `op`, a read-only operation that cannot take effect in `state`,
    /// cannot take effect in any state reached from `state` unless an operation for which
    /// [`Model::resets`] is true comes first: e.g. a get whose value does not start with the
    /// current value, when only appends follow (they only extend it). The search then drops
    /// the configuration at once when no such operation can come before `op`'s return.
    /// Default: `false`.
    fn hopeless(&self, state: &Self::State, op: &Operation<Self::Input, Self::Output>) -> bool {
        let _ = (state, op);
        false
    }

    /// Hint: `true` when `op`, whose outcome is unknown, can change nothing observable from
    /// `state` on, in `state` or any state reached from it (e.g. a timed-out release of a lock
    /// handle that no longer holds the lock: handles are granted once). The search then drops
    /// it (as if it never took effect), so it no longer costs a candidate at every step.
    /// Default: `false`.
    fn inert(&self, state: &Self::State, op: &Operation<Self::Input, Self::Output>) -> bool {
        let _ = (state, op);
        false
    }

    /// Hint: whether `op` may undo [`Model::hopeless`] (e.g. a put). Default: `true`.
    fn resets(&self, op: &Operation<Self::Input, Self::Output>) -> bool {
        let _ = op;
        true
    }

    /// Hint: of one part's operations (in call order), those with unknown outcomes that no
    /// operation of the part can observe, so that leaving them out (as if they never took
    /// effect) loses no linearization. Returns one flag per operation (a shorter vector means
    /// `false` for the rest). Default: none.
    fn unobserved(&self, ops: &[&Operation<Self::Input, Self::Output>]) -> Vec<bool> {
        let _ = ops;
        Vec::new()
    }
}

/// Limits of one check. When one is reached the verdict is [`Verdict::Unknown`].
#[derive(Debug, Clone, Default)]
pub struct Budget {
    /// Wall-clock limit for the whole check (not deterministic: use `max_steps` in simulation).
    pub timeout: Option<Duration>,
    /// Limit on search steps over all parts (deterministic).
    pub max_steps: Option<u64>,
    /// Limit on memoized configurations over all parts (counted as they are made).
    pub max_configs: Option<usize>,
    /// Limit on the bytes the memo tables hold at once (a memory bound; the tables of decided
    /// parts are freed).
    pub max_memory: Option<usize>,
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
/// the search found, and the operations none of which could be placed next, each with the
/// model's reason.
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
    /// The model's state before any operation, in words.
    pub initial: String,
    /// The model's state after each operation of the prefix, in words.
    pub states: Vec<String>,
    /// For each stuck operation, why it cannot take effect after the prefix
    /// ([`Model::why_not`]).
    pub reasons: Vec<String>,
    /// Indices (into the checked operations) of the failing part's operations, for pictures.
    pub part_ops: Vec<usize>,
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
    /// Memo lookups whose hash matched another configuration (each cost an equality check).
    pub collisions: u64,
    /// Rounds of the scheduler (each doubles the parts' step slices).
    pub rounds: u32,
}

/// The result of one part.
#[derive(Debug, Clone)]
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

/// The first round's step slice of a part of `n` operations; each round doubles it. A part
/// whose search is nearly linear finishes in the first round, so few tables stay open.
fn first_slice(n: usize) -> u64 {
    1024 + 16 * n as u64
}

/// How far the searches of a part got: the longest linearized prefix either racer found, in
/// thousandths of the part's operations.
fn progress<M: Model>(r: &Racers<M>) -> u64 {
    let best = std::iter::once(&r.eager)
        .chain(r.jit.as_ref())
        .map(|x| x.best_len())
        .max()
        .unwrap_or(0);
    (best as u64 * 1000) / r.eager.len().max(1) as u64
}

/// Checks a whole history against `model`: splits it with [`Model::partition`] and searches
/// the parts in rounds — each round doubling every undecided part's slice of steps; the first
/// round smallest first, the later ones least progress first (a part whose search stays near
/// its start is likely to fail: [`Key`]) — on `budget.threads` threads (a part's slices run
/// one after the other, different parts in parallel, without waiting for each other). The
/// verdict is that of the failing part with the least [`Key`], once every slice before it has
/// run: the same on any number of threads, and on one thread the first failure found ends
/// the search.
pub fn check<M: Model>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
    budget: &Budget,
) -> (Verdict, Stats) {
    let parts = model.partition(ops);
    let shared = search::Shared::new(budget, Instant::now());
    // Threads pay only for big histories: starting one costs about as much as checking a few
    // hundred operations.
    let threads = if ops.len() < PARALLEL_MIN_OPS {
        1
    } else {
        budget.threads.max(1).min(parts.len().max(1))
    };
    // Smallest parts first: `order[pos]` is a part index.
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by_key(|&i| (parts[i].len(), i));
    let sched = Mutex::new(Schedule {
        queue: (0..order.len())
            .map(|pos| Reverse((0u32, 0, pos)))
            .collect(),
        running: 0,
        bad: None,
        unknown: None,
        done: (0, 0, 0),
        rounds: 0,
    });
    let wake = Condvar::new();
    let searches: Vec<Mutex<Option<Racers<M>>>> = parts.iter().map(|_| Mutex::new(None)).collect();
    let worker = || loop {
        let key @ (round, _, pos) = {
            let mut s = sched.lock().expect("no panics while held");
            loop {
                let cut = s.bad.as_ref().map(|b| b.0);
                match s.queue.peek() {
                    Some(&Reverse(key)) if s.unknown.is_none() && cut.is_none_or(|c| key < c) => {
                        s.queue.pop();
                        s.running += 1;
                        break key;
                    }
                    _ if s.running == 0 || s.unknown.is_some() => {
                        // Nothing left that could change the verdict.
                        s.queue.clear();
                        wake.notify_all();
                        return;
                    }
                    _ => s = wake.wait(s).expect("no panics while held"),
                }
            }
        };
        let i = order[pos];
        let mut slot = searches[i].lock().expect("no panics while held");
        let racers = slot.get_or_insert_with(|| Racers {
            eager: search::PartSearch::new(model, ops, &parts[i], false),
            jit: Some(search::PartSearch::new(model, ops, &parts[i], true)),
        });
        let limit = first_slice(parts[i].len()).saturating_mul(1 << round.min(40));
        let mut result = racers.eager.run(limit, &shared).cloned();
        let mut counts = (0, 0, 0);
        if let Some(jit) = racers.jit.as_mut() {
            if result.is_none() {
                result = jit.run(limit, &shared).cloned();
            }
            if result.is_some() || round + 1 >= JIT_ROUNDS {
                counts = (jit.steps, jit.configs(), jit.collisions());
                racers.jit = None;
            }
        }
        let rank = progress(racers);
        if result.is_some() {
            // Decided: free the part's searches.
            let e = &racers.eager;
            counts = (
                counts.0 + e.steps,
                counts.1 + e.configs(),
                counts.2 + e.collisions(),
            );
            *slot = None;
        }
        drop(slot);
        let mut s = sched.lock().expect("no panics while held");
        s.running -= 1;
        s.done.0 += counts.0;
        s.done.1 += counts.1;
        s.done.2 += counts.2;
        s.rounds = s.rounds.max(round + 1);
        match result {
            None => s.queue.push(Reverse((round + 1, rank, pos))),
            Some(r) => {
                match r {
                    PartResult::Ok => {}
                    PartResult::Bad { prefix, stuck } => {
                        if s.bad.as_ref().is_none_or(|b| key < b.0) {
                            s.bad = Some((key, prefix, stuck));
                        }
                    }
                    PartResult::OutOfBudget(why) => {
                        shared.stop();
                        // A part stopped because another ran out says less than that one.
                        if s.unknown
                            .as_deref()
                            .is_none_or(|u| u.starts_with("stopped"))
                        {
                            s.unknown = Some(why);
                        }
                    }
                }
            }
        }
        wake.notify_all();
    };
    if threads <= 1 {
        worker();
    } else {
        std::thread::scope(|sc| {
            for _ in 1..threads {
                sc.spawn(worker);
            }
            worker();
        });
    }
    let s = sched.into_inner().expect("no panics while held");
    let mut stats = Stats {
        parts: parts.len(),
        steps: s.done.0,
        configs: s.done.1,
        collisions: s.done.2,
        rounds: s.rounds,
    };
    for slot in searches {
        if let Some(r) = slot.into_inner().expect("no panics while held") {
            for x in std::iter::once(&r.eager).chain(r.jit.as_ref()) {
                stats.steps += x.steps;
                stats.configs += x.configs();
                stats.collisions += x.collisions();
            }
        }
    }
    let verdict = match (s.bad, s.unknown) {
        // A failing part decides, even when the budget ran out elsewhere.
        (Some(((_, _, pos), prefix, stuck)), _) => Verdict::NotLinearizable(counterexample(
            model,
            ops,
            &parts[order[pos]],
            order[pos],
            prefix,
            stuck,
        )),
        (None, Some(why)) => Verdict::Unknown(why),
        (None, None) => Verdict::Linearizable,
    };
    (verdict, stats)
}

/// The two searches of one part, run in competition (Lowe 2017): the call order and the
/// just-in-time order ([`search`]); the first to decide gives the part's result. Neither is
/// better on every history (just-in-time takes etcd_007 from 4,290 configurations to 133 and
/// kv c50-ok from 176,000 to 225,000), so the just-in-time search gets only the first
/// [`JIT_ROUNDS`] rounds: enough for the histories it is good at, cheap for the others.
struct Racers<'a, M: Model> {
    eager: search::PartSearch<'a, M>,
    jit: Option<search::PartSearch<'a, M>>,
}

/// Rounds in which the just-in-time search races the call-order one.
const JIT_ROUNDS: u32 = 2;

/// A slice's place in the search order: `(round, rank, position)`. In round 0 the rank is 0
/// (parts go smallest first, by position); from round 1 on it is the part's progress after
/// its previous slice, in thousandths of its operations (see [`progress`]), so that parts
/// whose search cannot get far (likely to fail) go first and a failure found early cuts the
/// rest of the round, on one thread too. Each part's rank comes from its own searches only,
/// so the order does not depend on the number of threads.
type Key = (u32, u64, usize);

/// The scheduler's shared state: slices waiting, by [`Key`], the best failure so far
/// `(key, prefix, stuck)`, and the counts of decided parts.
struct Schedule {
    queue: BinaryHeap<Reverse<Key>>,
    running: usize,
    bad: Option<(Key, Vec<usize>, Vec<usize>)>,
    unknown: Option<String>,
    done: (u64, usize, u64),
    rounds: u32,
}

/// The counterexample of a failing part, with the model's states along the prefix and its
/// reasons for each stuck operation.
fn counterexample<M: Model>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
    part: &[usize],
    index: usize,
    prefix: Vec<usize>,
    stuck: Vec<usize>,
) -> Counterexample {
    let mut state = model.init();
    let initial = model.describe_state(&state);
    let mut states = Vec::with_capacity(prefix.len());
    for &o in &prefix {
        state = model
            .step(&state, &ops[o])
            .expect("the search linearized this prefix");
        states.push(model.describe_state(&state));
    }
    let reasons = stuck
        .iter()
        .map(|&o| match model.step(&state, &ops[o]) {
            None => model.why_not(&state, &ops[o]),
            Some(next) => format!(
                "{} could take effect here (leaving {}), but then the operations that must \
                 follow it cannot all be placed",
                model.describe(&ops[o]),
                model.describe_state(&next)
            ),
        })
        .collect();
    let mut part_ops = part.to_vec();
    part_ops.sort_by_key(|&i| (ops[i].call, i));
    Counterexample {
        part: index,
        prefix: prefix.iter().map(|&o| ops[o].id).collect(),
        stuck: stuck.iter().map(|&o| ops[o].id).collect(),
        stuck_described: stuck.iter().map(|&o| model.describe(&ops[o])).collect(),
        initial,
        states,
        reasons,
        part_ops,
    }
}
