//! The search core: one part of a history, Wing & Gong's backtracking over a linked list of
//! call and return entries, with Lowe's memo table of visited configurations.

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use hashbrown::HashTable;

use super::{Budget, Model, Operation, PartResult};

/// Budget state shared by the workers of one check.
pub(crate) struct Shared<'a> {
    budget: &'a Budget,
    started: Instant,
    steps: AtomicU64,
    configs: AtomicUsize,
    stop: AtomicBool,
}

impl<'a> Shared<'a> {
    pub(crate) fn new(budget: &'a Budget, started: Instant) -> Self {
        Shared {
            budget,
            started,
            steps: AtomicU64::new(0),
            configs: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
        }
    }
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
    /// Adds a batch of work; returns why to stop, if the budget ran out.
    fn charge(&self, steps: u64, configs: usize) -> Option<String> {
        let s = self.steps.fetch_add(steps, Ordering::Relaxed) + steps;
        let c = self.configs.fetch_add(configs, Ordering::Relaxed) + configs;
        if let Some(max) = self.budget.max_steps {
            if s > max {
                return Some(format!("step budget of {max} exhausted"));
            }
        }
        if let Some(max) = self.budget.max_configs {
            if c > max {
                return Some(format!("memory budget of {max} configurations exhausted"));
            }
        }
        if let Some(t) = self.budget.timeout {
            if self.started.elapsed() > t {
                return Some(format!("time budget of {:.1}s exhausted", t.as_secs_f64()));
            }
        }
        if self.stopped() {
            return Some("stopped: another part failed".to_string());
        }
        None
    }
}

/// A fixed-width bitset of linearized operations, hashed incrementally (Zobrist hashing: the
/// XOR of a random key per member), so a configuration's hash costs O(1) per step.
struct Linearized {
    words: Vec<u64>,
    zobrist: u64,
}

fn zobrist_key(i: usize) -> u64 {
    // SplitMix64 of the index: fixed, well-mixed keys, no RNG state.
    let mut z = (i as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Linearized {
    fn new(n: usize) -> Self {
        Linearized {
            words: vec![0; n.div_ceil(64)],
            zobrist: 0,
        }
    }
    fn flip(&mut self, i: usize) {
        self.words[i / 64] ^= 1 << (i % 64);
        self.zobrist ^= zobrist_key(i);
    }
}

struct Config<S> {
    hash: u64,
    words: Box<[u64]>,
    state: S,
}

fn state_hash<S: Hash>(s: &S) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    s.hash(&mut h);
    h.finish()
}

/// Entry `2k` is op `k`'s call, `2k + 1` its return.
fn is_call(entry: usize) -> bool {
    entry & 1 == 0
}

const HEAD: usize = usize::MAX - 1;
const NIL: usize = usize::MAX;

/// The doubly linked list of entries: entry `2k` is the call of local op `k`, `2k + 1` its
/// return. `order` is the sorted order; `next`/`prev` link the entries still in the list.
struct Entries {
    next: Vec<usize>,
    prev: Vec<usize>,
    head_next: usize,
}

impl Entries {
    fn new(order: &[usize]) -> Self {
        let n = order.len();
        let mut e = Entries {
            next: vec![NIL; n],
            prev: vec![NIL; n],
            head_next: NIL,
        };
        let mut last = HEAD;
        for &x in order {
            e.set_next(last, x);
            e.prev[x] = last;
            last = x;
        }
        e.set_next(last, NIL);
        e
    }
    fn next_of(&self, x: usize) -> usize {
        if x == HEAD {
            self.head_next
        } else {
            self.next[x]
        }
    }
    fn set_next(&mut self, x: usize, to: usize) {
        if x == HEAD {
            self.head_next = to
        } else {
            self.next[x] = to
        }
    }
    fn remove(&mut self, x: usize) {
        let (p, n) = (self.prev[x], self.next[x]);
        self.set_next(p, n);
        if n != NIL {
            self.prev[n] = p;
        }
    }
    fn reinsert(&mut self, x: usize) {
        let (p, n) = (self.prev[x], self.next[x]);
        self.set_next(p, x);
        if n != NIL {
            self.prev[n] = x;
        }
    }
    /// Removes op `k` (its call and its return) from the list.
    fn lift(&mut self, k: usize) {
        self.remove(2 * k);
        self.remove(2 * k + 1);
    }
    /// Puts op `k` back, in the reverse order of [`Entries::lift`].
    fn unlift(&mut self, k: usize) {
        self.reinsert(2 * k + 1);
        self.reinsert(2 * k);
    }
}

/// Checks one part (`part`: indices into `ops`). Returns the result, steps and configurations.
pub(crate) fn run_part<M: Model>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
    part: &[usize],
    shared: &Shared,
) -> (PartResult, u64, usize) {
    let local: Vec<&Operation<M::Input, M::Output>> = part.iter().map(|&i| &ops[i]).collect();
    let (r, steps, configs) = check_partition(model, &local, shared);
    let r = match r {
        PartResult::Bad { prefix, stuck } => PartResult::Bad {
            prefix: prefix.into_iter().map(|k| part[k]).collect(),
            stuck: stuck.into_iter().map(|k| part[k]).collect(),
        },
        other => other,
    };
    (r, steps, configs)
}

/// The search over one part's operations (local indices in the result).
pub(crate) fn check_partition<M: Model>(
    model: &M,
    ops: &[&Operation<M::Input, M::Output>],
    shared: &Shared,
) -> (PartResult, u64, usize) {
    let n = ops.len();
    // Entries sorted by time; an unknown completion is after everything; at equal times a
    // call comes before a return (the operations then overlap, the lenient reading).
    let mut order: Vec<usize> = (0..2 * n).collect();
    let key = |e: usize| {
        let op = ops[e / 2];
        if is_call(e) {
            (op.call, 0u8, op.call)
        } else {
            match op.ret {
                Some(r) => (r, 1, op.call),
                None => (u64::MAX, 1, op.call),
            }
        }
    };
    order.sort_by_key(|&e| key(e));
    let mut list = Entries::new(&order);

    let mut state = model.init();
    let mut lin = Linearized::new(n);
    let mut cache: HashTable<Config<M::State>> = HashTable::new();
    let mut stack: Vec<(usize, M::State)> = Vec::with_capacity(n);
    // The longest linearized prefix seen, kept in step with `stack` lazily: `agree` is the
    // length of the prefix `best` and `stack` share.
    let mut best: Vec<usize> = Vec::new();
    let mut agree = 0usize;
    let (mut steps, mut batch_steps, mut batch_configs) = (0u64, 0u64, 0usize);

    let mut entry = list.head_next;
    while list.head_next != NIL {
        steps += 1;
        batch_steps += 1;
        if batch_steps == 4096 {
            if let Some(why) = shared.charge(batch_steps, batch_configs) {
                return (PartResult::OutOfBudget(why), steps, cache.len());
            }
            batch_steps = 0;
            batch_configs = 0;
        }
        if is_call(entry) {
            let k = entry / 2;
            if let Some(next_state) = model.step(&state, ops[k]) {
                lin.flip(k);
                let h = lin.zobrist ^ state_hash(&next_state).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                let words = &lin.words;
                let seen = cache
                    .find(h, |c| {
                        c.hash == h && *c.words == **words && c.state == next_state
                    })
                    .is_some();
                if !seen {
                    cache.insert_unique(
                        h,
                        Config {
                            hash: h,
                            words: words.clone().into_boxed_slice(),
                            state: next_state.clone(),
                        },
                        |c| c.hash,
                    );
                    batch_configs += 1;
                    stack.push((k, std::mem::replace(&mut state, next_state)));
                    list.lift(k);
                    if stack.len() > best.len() {
                        best.truncate(agree);
                        best.extend(stack[agree..].iter().map(|s| s.0));
                        agree = stack.len();
                    }
                    entry = list.head_next;
                    continue;
                }
                lin.flip(k);
            }
            entry = list.next_of(entry);
        } else {
            // A return: its operation had to be linearized before this point. Backtrack.
            let Some((k, prev)) = stack.pop() else {
                let stuck = stuck_after(&best, n, &order);
                shared.charge(batch_steps, batch_configs);
                return (
                    PartResult::Bad {
                        prefix: best,
                        stuck,
                    },
                    steps,
                    cache.len(),
                );
            };
            if stack.len() < agree {
                agree = stack.len();
            }
            state = prev;
            lin.flip(k);
            list.unlift(k);
            entry = list.next_of(2 * k);
        }
    }
    shared.charge(batch_steps, batch_configs);
    (PartResult::Ok, steps, cache.len())
}

/// The operations that could be placed next after `prefix`: those not in it whose call comes
/// before the earliest return among the operations not in it.
fn stuck_after(prefix: &[usize], n: usize, order: &[usize]) -> Vec<usize> {
    let mut done = vec![false; n];
    for &k in prefix {
        done[k] = true;
    }
    let mut stuck = Vec::new();
    for &e in order {
        let k = e / 2;
        if done[k] {
            continue;
        }
        if !is_call(e) {
            break;
        }
        stuck.push(k);
    }
    stuck
}
