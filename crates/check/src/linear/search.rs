//! The search core: one part of a history, Wing & Gong's backtracking over a linked list of
//! call and return entries (Wing & Gong 1993), with Lowe's memo table of visited
//! configurations (Lowe, "Testing for linearizability", 2017), made resumable so that a
//! scheduler can give each part slices of work (see [`super::check`]).
//!
//! Three reductions, each exact (the verdict never changes, only the work):
//!
//! - **Read-only operations go first.** An operation the model declares read-only
//!   ([`Model::is_read_only`]: it never changes the state) that can be linearized now can be
//!   moved to the front of any successful continuation: it changes nothing, and nothing that
//!   must precede it is still open (its call comes before every open return). So once the
//!   search from "linearize it now" fails, the configuration it was linearized in fails too,
//!   and the search backtracks past both instead of trying the other candidates. This is the
//!   partial-order reduction of commuting observers (as in Lowe's just-in-time linearization,
//!   which linearizes an operation only when something forces it).
//! - **Twins in order.** Two operations with unknown outcomes and the same effect in every
//!   state ([`Model::same_effect`]) are interchangeable: neither has a return to respect, and
//!   the earlier-called one is available whenever the later one is. The search linearizes a
//!   twin only after its earlier twin, so `k` identical timed-out writes cost `k + 1`
//!   configurations, not `2^k`.
//! - **Unknown operations nobody can observe are left out** before the search
//!   ([`Model::unobserved`]; an unknown read-only operation always is): placing it "never" is
//!   always allowed, and the model vouches that placing it anywhere else helps nobody.
//!
//! Memo keys are the set of linearized operations (a bitset, hashed incrementally with Zobrist
//! keys: the XOR of a random key per member) XOR a hash of the model state; the table stores
//! 16-byte entries (hash, index) into arenas of bitset words and states, so a configuration
//! costs no allocation of its own. Local operations are numbered in call order and a bitset is
//! stored from the first operation not yet linearized to the last one linearized (the
//! *window*): every operation before the window is linearized, so the key stays a few words
//! long however long the history, which is what keeps memory bounded on long histories.

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
    bytes: AtomicUsize,
    stop: AtomicBool,
}

impl<'a> Shared<'a> {
    pub(crate) fn new(budget: &'a Budget, started: Instant) -> Self {
        Shared {
            budget,
            started,
            steps: AtomicU64::new(0),
            configs: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
        }
    }
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
    /// Adds a batch of work (steps, new configurations, change of memo bytes); returns why to
    /// stop, if the budget ran out.
    fn charge(&self, steps: u64, configs: usize, bytes: isize) -> Option<String> {
        let s = self.steps.fetch_add(steps, Ordering::Relaxed) + steps;
        let c = self.configs.fetch_add(configs, Ordering::Relaxed) + configs;
        let b = if bytes >= 0 {
            self.bytes.fetch_add(bytes as usize, Ordering::Relaxed) + bytes as usize
        } else {
            self.bytes
                .fetch_sub(bytes.unsigned_abs(), Ordering::Relaxed)
                .saturating_sub(bytes.unsigned_abs())
        };
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
        if let Some(max) = self.budget.max_memory {
            if b > max {
                return Some(format!(
                    "memory budget of {} MiB exhausted ({c} configurations)",
                    max >> 20
                ));
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

fn zobrist_key(i: usize) -> u64 {
    // SplitMix64 of the index: fixed, well-mixed keys, no RNG state.
    let mut z = (i as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The set of linearized operations: a bitset, its Zobrist hash, and its window
/// `[first, end)`: every operation below `first` is in the set, none from `end` on.
struct Linearized {
    words: Vec<u64>,
    zobrist: u64,
    first: usize,
    end: usize,
}

impl Linearized {
    fn new(n: usize) -> Self {
        Linearized {
            words: vec![0; n.div_ceil(64) + 1],
            zobrist: 0,
            first: 0,
            end: 0,
        }
    }
    fn has(&self, i: usize) -> bool {
        self.words[i / 64] >> (i % 64) & 1 == 1
    }
    fn insert(&mut self, i: usize) {
        self.words[i / 64] |= 1 << (i % 64);
        self.zobrist ^= zobrist_key(i);
        if i + 1 > self.end {
            self.end = i + 1;
        }
        if i == self.first {
            // Next zero bit.
            let mut w = self.first / 64;
            let mut bits = !self.words[w] & (!0u64 << (self.first % 64));
            while bits == 0 {
                w += 1;
                bits = !self.words[w];
            }
            self.first = w * 64 + bits.trailing_zeros() as usize;
        }
    }
    fn remove(&mut self, i: usize) {
        self.words[i / 64] &= !(1 << (i % 64));
        self.zobrist ^= zobrist_key(i);
        if i < self.first {
            self.first = i;
        }
        if i + 1 == self.end {
            // Previous one bit, or 0.
            let mut w = i / 64;
            let mut bits = self.words[w] & ((1u64 << (i % 64)) - 1);
            loop {
                if bits != 0 {
                    self.end = w * 64 + 64 - bits.leading_zeros() as usize;
                    break;
                }
                if w == 0 {
                    self.end = 0;
                    break;
                }
                w -= 1;
                bits = self.words[w];
            }
        }
    }
    /// The words of the window (from the word holding `first`), and that word's index.
    fn window(&self) -> (usize, &[u64]) {
        let lo = self.first / 64;
        let hi = self.end.div_ceil(64).max(lo);
        (lo, &self.words[lo..hi])
    }
}

/// The memo table: 16-byte entries into arenas of windows and states.
struct Memo<S> {
    table: HashTable<(u64, u32)>,
    /// Per configuration: window start word, offset into `words`, length.
    meta: Vec<(u32, u32, u32)>,
    words: Vec<u64>,
    states: Vec<S>,
    /// Hash matches that were other configurations (counted, for the statistics).
    collisions: u64,
    /// Heap bytes the states hold ([`Model::heap_bytes`]).
    heap: usize,
}

fn state_hash<S: Hash>(s: &S) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    s.hash(&mut h);
    h.finish()
}

impl<S: Eq> Memo<S> {
    fn new() -> Self {
        Memo {
            table: HashTable::new(),
            meta: Vec::new(),
            words: Vec::new(),
            states: Vec::new(),
            collisions: 0,
            heap: 0,
        }
    }
    fn len(&self) -> usize {
        self.states.len()
    }
    /// Bytes held (by capacity: what the allocator gave; the table twice, for the moment it
    /// grows and both the old and the new are held).
    fn bytes(&self) -> usize {
        self.heap
            + self.table.capacity() * 2 * 17
            + self.meta.capacity() * 12
            + self.words.capacity() * 8
            + self.states.capacity() * std::mem::size_of::<S>()
    }
    /// Inserts the configuration unless present; `true` when it was new.
    fn insert(&mut self, lin: &Linearized, state: &S, h: u64, heap: usize) -> bool
    where
        S: Clone,
    {
        let (lo, win) = lin.window();
        let (meta, words, states) = (&self.meta, &self.words, &self.states);
        let mut collisions = 0;
        let found = self
            .table
            .find(h, |&(eh, i)| {
                if eh != h {
                    return false;
                }
                let (elo, off, len) = meta[i as usize];
                let same = elo as usize == lo
                    && len as usize == win.len()
                    && words[off as usize..off as usize + len as usize] == *win
                    && states[i as usize] == *state;
                collisions += u64::from(!same);
                same
            })
            .is_some();
        self.collisions += collisions;
        if found {
            return false;
        }
        let i = self.states.len() as u32;
        self.meta
            .push((lo as u32, self.words.len() as u32, win.len() as u32));
        self.words.extend_from_slice(win);
        self.states.push(state.clone());
        self.heap += heap;
        self.table.insert_unique(h, (h, i), |e| e.0);
        true
    }
}

/// Entry `2k` is op `k`'s call, `2k + 1` its return.
fn is_call(entry: usize) -> bool {
    entry & 1 == 0
}

const HEAD: usize = usize::MAX - 1;
const NIL: usize = usize::MAX;

/// The doubly linked list of entries: entry `2k` is the call of local op `k`, `2k + 1` its
/// return. `next`/`prev` link the entries still in the list.
struct Entries {
    next: Vec<usize>,
    prev: Vec<usize>,
    head_next: usize,
}

impl Entries {
    fn new(order: &[usize], n: usize) -> Self {
        let mut e = Entries {
            next: vec![NIL; 2 * n],
            prev: vec![NIL; 2 * n],
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

/// Which candidates of a configuration the search is trying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// The operation whose return comes first.
    Forced,
    /// Candidates with a return, in call order.
    Known,
    /// Candidates without one.
    Unknown,
    /// Not tried: dropped as inert ([`Model::inert`]).
    Dropped,
}

/// The operations not yet linearized, in return order: a doubly linked list over op indices.
struct Rets {
    next: Vec<usize>,
    prev: Vec<usize>,
    head: usize,
}

impl Rets {
    fn new(order: impl Iterator<Item = usize>, n: usize) -> Self {
        let mut r = Rets {
            next: vec![NIL; n],
            prev: vec![NIL; n],
            head: NIL,
        };
        let mut last = NIL;
        for k in order {
            if last == NIL {
                r.head = k;
            } else {
                r.next[last] = k;
            }
            r.prev[k] = last;
            last = k;
        }
        r
    }
    fn first(&self) -> usize {
        self.head
    }
    fn lift(&mut self, k: usize) {
        let (p, n) = (self.prev[k], self.next[k]);
        if p == NIL {
            self.head = n;
        } else {
            self.next[p] = n;
        }
        if n != NIL {
            self.prev[n] = p;
        }
    }
    fn unlift(&mut self, k: usize) {
        let (p, n) = (self.prev[k], self.next[k]);
        if p == NIL {
            self.head = k;
        } else {
            self.next[p] = k;
        }
        if n != NIL {
            self.prev[n] = k;
        }
    }
}

/// Steps between two charges of the shared budget.
const BATCH: u64 = 4096;

/// A resumable search over one part.
pub(crate) struct PartSearch<'a, M: Model> {
    model: &'a M,
    /// Local operations, in call order.
    ops: Vec<&'a Operation<M::Input, M::Output>>,
    /// Index into the checked history of each local operation.
    global: Vec<usize>,
    /// Entries in time order.
    order: Vec<usize>,
    list: Entries,
    read_only: Vec<bool>,
    /// The nearest earlier twin of each unknown operation ([`Model::same_effect`]), or NIL.
    twin: Vec<usize>,
    state: M::State,
    lin: Linearized,
    memo: Memo<M::State>,
    /// Linearized operations, each with the state before it and the stage it was tried in.
    stack: Vec<(usize, M::State, Stage)>,
    /// The longest linearized prefix seen (with whether each was dropped as inert); `agree`
    /// is the length `best` and `stack` share.
    best: Vec<(usize, bool)>,
    agree: usize,
    entry: usize,
    /// Operations not yet linearized, by return time.
    rets: Rets,
    /// Try the operation whose return is first before the others (just-in-time order).
    jit: bool,
    stage: Stage,
    /// Whether any operation has an unknown outcome.
    has_unknown: bool,
    /// Local operations that may undo a [`Model::hopeless`] verdict, in call order.
    resets: Vec<usize>,
    /// Set when a candidate showed that the configuration fails.
    dead: bool,
    /// Search steps so far.
    pub(crate) steps: u64,
    /// Memo bytes and configurations already charged to the shared budget.
    charged_bytes: usize,
    charged_configs: usize,
    charged_steps: u64,
    final_configs: usize,
    done: Option<PartResult>,
}

impl<'a, M: Model> PartSearch<'a, M> {
    /// Prepares the search of `part` (indices into `ops`).
    /// With `jit`, the search tries the just-in-time order (see [`PartSearch::search`]).
    pub(crate) fn new(
        model: &'a M,
        ops: &'a [Operation<M::Input, M::Output>],
        part: &[usize],
        jit: bool,
    ) -> Self {
        let mut global: Vec<usize> = part.to_vec();
        global.sort_by_key(|&i| (ops[i].call, i));
        let all: Vec<&Operation<M::Input, M::Output>> = global.iter().map(|&i| &ops[i]).collect();
        // Unknown operations nobody can observe never need a place.
        let mut drop = model.unobserved(&all);
        drop.resize(all.len(), false);
        for (k, op) in all.iter().enumerate() {
            if op.ret.is_none() && model.is_read_only(op) {
                drop[k] = true;
            }
        }
        let keep: Vec<usize> = (0..all.len()).filter(|&k| !drop[k]).collect();
        let global: Vec<usize> = keep.iter().map(|&k| global[k]).collect();
        let ops: Vec<&Operation<M::Input, M::Output>> = keep.iter().map(|&k| all[k]).collect();
        let n = ops.len();
        let read_only: Vec<bool> = ops.iter().map(|o| model.is_read_only(o)).collect();
        // Twins: look back over the last few unknown operations for one with the same effect.
        let mut twin = vec![NIL; n];
        let mut unknown: Vec<usize> = Vec::new();
        for k in 0..n {
            if ops[k].ret.is_some() {
                continue;
            }
            if let Some(&j) = unknown
                .iter()
                .rev()
                .take(64)
                .find(|&&j| model.same_effect(ops[j], ops[k]))
            {
                twin[k] = j;
            }
            unknown.push(k);
        }
        // Entries sorted by time; an unknown completion is after everything; at equal times a
        // call comes before a return (the operations then overlap, the lenient reading).
        let mut order: Vec<usize> = (0..2 * n).collect();
        let key = |e: usize| {
            let op = ops[e / 2];
            if is_call(e) {
                (op.call, 0u8, e / 2)
            } else {
                (op.ret.unwrap_or(u64::MAX), 1, e / 2)
            }
        };
        order.sort_unstable_by_key(|&e| key(e));
        let list = Entries::new(&order, n);
        let has_unknown = ops.iter().any(|o| o.ret.is_none());
        let resets: Vec<usize> = (0..n).filter(|&k| model.resets(ops[k])).collect();
        let rets = Rets::new(order.iter().filter(|&&e| !is_call(e)).map(|&e| e / 2), n);
        let entry = list.head_next;
        PartSearch {
            model,
            ops,
            global,
            order,
            list,
            read_only,
            twin,
            state: model.init(),
            lin: Linearized::new(n),
            memo: Memo::new(),
            stack: Vec::with_capacity(n),
            best: Vec::new(),
            agree: 0,
            entry,
            rets,
            jit,
            stage: if jit { Stage::Forced } else { Stage::Known },
            has_unknown,
            resets,
            dead: false,
            steps: 0,
            charged_bytes: 0,
            charged_configs: 0,
            charged_steps: 0,
            final_configs: 0,
            done: None,
        }
    }

    /// Memoized configurations (of the finished search, once decided).
    pub(crate) fn configs(&self) -> usize {
        if self.done.is_some() {
            self.final_configs
        } else {
            self.memo.len()
        }
    }

    /// The length of the longest linearized prefix seen so far, out of [`PartSearch::len`]
    /// operations: a search that cannot get far is a part likely to fail.
    pub(crate) fn best_len(&self) -> usize {
        self.best.len()
    }

    /// The part's operations.
    pub(crate) fn len(&self) -> usize {
        self.ops.len()
    }

    /// Hash matches that were other configurations.
    pub(crate) fn collisions(&self) -> u64 {
        self.memo.collisions
    }

    fn first_stage(&self) -> Stage {
        if self.jit {
            Stage::Forced
        } else {
            Stage::Known
        }
    }

    /// Charges the work since the last charge; returns why to stop, if the budget ran out.
    fn charge(&mut self, shared: &Shared) -> Option<String> {
        let bytes = self.memo.bytes();
        let delta = bytes as isize - self.charged_bytes as isize;
        let configs = self.memo.len().saturating_sub(self.charged_configs);
        let steps = self.steps - self.charged_steps;
        self.charged_bytes = bytes;
        self.charged_configs = self.memo.len();
        self.charged_steps = self.steps;
        shared.charge(steps, configs, delta)
    }

    /// Frees the memo table and returns its bytes to the shared budget.
    fn release(&mut self, shared: &Shared) {
        let collisions = self.memo.collisions;
        self.memo = Memo::new();
        self.memo.collisions = collisions;
        self.stack = Vec::new();
        self.charge(shared);
    }

    /// Runs until the part is decided or `limit` steps in all were taken. Returns the result
    /// once decided (and keeps returning it); a decided part's tables are freed.
    pub(crate) fn run(&mut self, limit: u64, shared: &Shared) -> Option<&PartResult> {
        if self.done.is_none() {
            let r = match self.search(limit, shared) {
                Some(r) => Some(r),
                None => self.charge(shared).map(PartResult::OutOfBudget),
            };
            if let Some(r) = r {
                self.final_configs = self.memo.len();
                self.release(shared);
                self.done = Some(r);
            }
        }
        self.done.as_ref()
    }

    /// `true` when read-only op `k`, which cannot take effect now, never can: the model says
    /// no state reached without a reset can take it ([`Model::hopeless`]) and no reset that
    /// is not linearized yet was called before `k` returned (a later one must follow `k`).
    fn hopeless(&self, k: usize) -> bool {
        if !self.model.hopeless(&self.state, self.ops[k]) {
            return false;
        }
        let ret = self.ops[k].ret.expect("called for completed operations");
        // Every operation before the window's first is linearized.
        let from = self.resets.partition_point(|&r| r < self.lin.first);
        !self.resets[from..]
            .iter()
            .take_while(|&&r| self.ops[r].call <= ret)
            .any(|&r| !self.lin.has(r))
    }

    /// Tries to linearize local op `k` next; `true` when that made a new configuration (and
    /// the search moved into it). Sets `dead` when `k` shows the configuration fails.
    fn try_op(&mut self, k: usize, stage: Stage) -> bool {
        let t = self.twin[k];
        if t != NIL && !self.lin.has(t) {
            // Its earlier twin is open: that one goes first.
            return false;
        }
        let Some(next) = self.model.step(&self.state, self.ops[k]) else {
            if self.read_only[k] && self.ops[k].ret.is_some() && self.hopeless(k) {
                self.dead = true;
            }
            return false;
        };
        self.lin.insert(k);
        let h = self.lin.zobrist ^ state_hash(&next).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        if !self
            .memo
            .insert(&self.lin, &next, h, self.model.heap_bytes(&next))
        {
            self.lin.remove(k);
            return false;
        }
        let prev = std::mem::replace(&mut self.state, next);
        self.stack.push((k, prev, stage));
        self.list.lift(k);
        self.rets.lift(k);
        if self.stack.len() > self.best.len() {
            self.best.truncate(self.agree);
            self.best.extend(
                self.stack[self.agree..]
                    .iter()
                    .map(|s| (s.0, s.2 == Stage::Dropped)),
            );
            self.agree = self.stack.len();
        }
        self.stage = self.first_stage();
        self.entry = self.list.head_next;
        true
    }

    /// `true` when every operation that returned at or before `k`'s call is linearized, so the
    /// state already reflects all that must precede `k` (the model's [`Model::inert`] judges
    /// from it). Entries at equal times put calls first, so an operation that returned at
    /// the very instant `k` was called may still be open: a release invoked at the instant
    /// its own acquire returned must not be judged before that acquire is placed.
    fn settled_before(&self, k: usize) -> bool {
        let first = self.rets.first();
        first == NIL || self.ops[first].ret.is_none_or(|r| r > self.ops[k].call)
    }

    /// The search. In each configuration the candidates are tried in stages: with the
    /// just-in-time order ([`PartSearch::new`]'s `jit`), first the operation whose return
    /// comes first (it must go before that return: as late as possible); then the candidates
    /// with a return, in call order; and those without one (unknown outcomes) only after all
    /// of those failed: an unknown operation is never forced, so it is linearized only when
    /// nothing else can go (Lowe's just-in-time linearization linearizes an operation only
    /// when something needs it). Eagerly placing timed-out writes is what made histories with
    /// many of them slow: etcd_007's 17 took 123,000 configurations, now 133.
    fn search(&mut self, limit: u64, shared: &Shared) -> Option<PartResult> {
        while self.list.head_next != NIL {
            if self.steps >= limit {
                return None;
            }
            self.steps += 1;
            if self.steps.is_multiple_of(BATCH) {
                if let Some(why) = self.charge(shared) {
                    return Some(PartResult::OutOfBudget(why));
                }
            }
            match self.stage {
                Stage::Forced => {
                    let k = self.rets.first();
                    if !(self.ops[k].ret.is_some() && self.try_op(k, Stage::Forced)) {
                        self.stage = Stage::Known;
                        self.entry = self.list.head_next;
                    }
                    if self.dead {
                        self.dead = false;
                        if let Some(r) = self.backtrack() {
                            return Some(r);
                        }
                    }
                    continue;
                }
                Stage::Known | Stage::Unknown | Stage::Dropped => {}
            }
            let entry = self.entry;
            if is_call(entry) {
                let k = entry / 2;
                if self.ops[k].ret.is_none()
                    && self.settled_before(k)
                    && self.model.inert(&self.state, self.ops[k])
                {
                    // Never to take effect: drop it (its configuration is this one).
                    self.lin.insert(k);
                    self.stack.push((k, self.state.clone(), Stage::Dropped));
                    self.list.lift(k);
                    self.rets.lift(k);
                    self.entry = self.list.next_of(entry);
                    continue;
                }
                let eligible = match self.stage {
                    Stage::Known => {
                        self.ops[k].ret.is_some() && !(self.jit && k == self.rets.first())
                    }
                    _ => self.ops[k].ret.is_none(),
                };
                if !(eligible && self.try_op(k, self.stage)) {
                    self.entry = self.list.next_of(entry);
                }
                if self.dead {
                    self.dead = false;
                    if let Some(r) = self.backtrack() {
                        return Some(r);
                    }
                }
            } else if self.stage == Stage::Known && self.has_unknown {
                self.stage = Stage::Unknown;
                self.entry = self.list.head_next;
            } else if let Some(r) = self.backtrack() {
                return Some(r);
            }
        }
        Some(PartResult::Ok)
    }

    /// Every candidate failed: backtrack; past a read-only operation, backtrack once more (it
    /// could have gone first, so its configuration fails too). `Some` when nothing is left to
    /// backtrack to: the part is not linearizable.
    fn backtrack(&mut self) -> Option<PartResult> {
        loop {
            let Some((k, prev, stage)) = self.stack.pop() else {
                let stuck = self.stuck_after();
                let prefix = self
                    .best
                    .iter()
                    .filter(|b| !b.1)
                    .map(|&(k, _)| self.global[k])
                    .collect();
                return Some(PartResult::Bad { prefix, stuck });
            };
            if self.stack.len() < self.agree {
                self.agree = self.stack.len();
            }
            self.state = prev;
            self.lin.remove(k);
            self.list.unlift(k);
            self.rets.unlift(k);
            if !self.read_only[k] && stage != Stage::Dropped {
                (self.stage, self.entry) = match stage {
                    Stage::Forced => (Stage::Known, self.list.head_next),
                    s => (s, self.list.next_of(2 * k)),
                };
                return None;
            }
        }
    }

    /// The operations that could be placed next after the longest prefix: those not in it
    /// whose call comes before the earliest return among the operations not in it.
    fn stuck_after(&self) -> Vec<usize> {
        let n = self.ops.len();
        let mut done = vec![false; n];
        for &(k, _) in &self.best {
            done[k] = true;
        }
        let mut stuck = Vec::new();
        for &e in &self.order {
            let k = e / 2;
            if done[k] {
                continue;
            }
            if !is_call(e) {
                break;
            }
            stuck.push(self.global[k]);
        }
        stuck
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_tracks_the_first_gap_and_the_last_member() {
        let mut l = Linearized::new(200);
        for i in [0, 1, 2, 130, 5] {
            l.insert(i);
        }
        assert_eq!((l.first, l.end), (3, 131));
        l.remove(130);
        assert_eq!((l.first, l.end), (3, 6));
        l.remove(0);
        assert_eq!((l.first, l.end), (0, 6));
        for i in 0..70 {
            if !l.has(i) {
                l.insert(i);
            }
        }
        assert_eq!((l.first, l.end), (70, 70));
        assert_eq!(
            l.window().0,
            1,
            "the window starts at the word of the first gap"
        );
        for i in (0..70).rev() {
            l.remove(i);
        }
        assert_eq!((l.first, l.end, l.zobrist), (0, 0, 0));
    }
}
