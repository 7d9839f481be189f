//! A lease lock in true time (docs/design.md §7, S3): an acquire succeeds only if the lock is free or
//! the holder's lease has expired in true time, up to the declared clock-uncertainty bound `ε`;
//! a release or renewal succeeds only for the current holder's incarnation (its lock handle)
//! while its lease has not surely expired. With a lease of `ttl` granted at `a`, another acquire
//! may take effect at `t ≥ a + ttl − ε`, and the holder may release or renew at `t < a + ttl + ε`.
//!
//! `ε` is a tolerance, not a wait: a service whose clocks disagree with true time by at most `ε`
//! passes. (Reading it as "expired by at least `ε`" would flag a server with perfect clocks that
//! grants at the very moment a lease ends whenever the network is fast, since the checker can
//! only place the first grant somewhere inside its client's call.)
//!
//! Because the spec speaks of time, each operation's linearization point is a time `t` inside
//! its interval `[call, ret]`, and points never decrease along the linearization. The state
//! keeps the feasible values of the two points that matter — `a`, where the current lease was
//! granted or last renewed, and `p`, the last linearization point — as a difference-bound
//! matrix (a DBM, the zone abstraction of timed automata), so the search decides exactly
//! whether *some* choice of points works rather than guessing one.
//!
//! With [`LeaseLock::record`], the spec of a compare-and-swap record that judges no time (a
//! Kubernetes Lease on the API server, where expiry is each candidate's own judgement from
//! when it saw the record change): the current holder's release or renewal takes effect at
//! any time (the server's update checks the record's version, never a clock), and the holder's
//! own process may take the lock again at once (client-go's `holderIdentity == me`); another
//! process's acquire still needs the lease to have ended, as above.
//!
//! With [`LeaseLock::session`], the spec of a session lock (a ZooKeeper ephemeral node, which
//! lives while its holder's session does: until `ttl`, the session timeout, after the last
//! touch of the session its leader saw): the holder's release or renewal takes effect at any
//! time while it holds, as under the record spec, but its own process gets no shortcut: a new
//! acquire waits like anyone's. The lease point `a` is the session's last touch, not the
//! grant: an acquire that carries `since` (the true time of the last touch its service saw at
//! or before the grant) takes effect at `t ≥ since` and sets `a = since`, so its lease may end
//! before `t + ttl`, even before `t` (a grant on a session that is already over keeps no one
//! out); each later touch comes as a renewal `ok` at a known true time (`call = ret`), which
//! sets `a` to that time and can take effect only while its handle holds. An acquire without
//! `since` sets `a = t`, as under the plain spec. (`since` is ignored by the other specs.)
//!
//! Failed operations did not happen and are left out; an acquire whose outcome is unknown never
//! gave anyone a hold and is left out too (taking effect unseen is the same as never taking
//! effect for the other clients); a release or renewal whose outcome is unknown takes effect
//! when it can, or never.

use std::collections::BTreeMap;
use std::sync::Arc;

use locksim_core::time::fmt_nanos;

use crate::linear::{Model, Operation};

/// The lease length of the non-expiring lock spec, ns (about 36 years: beyond any run, and
/// small enough that the model's sums cannot overflow). A grant of this length never lapses.
pub const FOREVER: u64 = 1 << 60;

/// Lock operations (per key; the key is only used to partition).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockInput {
    /// Acquire `key` with a lease of `ttl` ns; on `ok` the grant is lock handle `handle`.
    /// Under the session spec, `since` is the true time of the last touch of the holder's
    /// session the service saw at or before the grant: the lease counts from there (see the
    /// module docs).
    Acquire {
        key: u32,
        ttl: u64,
        handle: u64,
        since: Option<u64>,
    },
    /// Release the grant `handle`.
    Release { key: u32, handle: u64 },
    /// Renew the grant `handle` for `ttl` ns.
    Extend { key: u32, ttl: u64, handle: u64 },
}

impl LockInput {
    fn key(&self) -> u32 {
        match *self {
            LockInput::Acquire { key, .. }
            | LockInput::Release { key, .. }
            | LockInput::Extend { key, .. } => key,
        }
    }
}

/// What was observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockOutput {
    /// It succeeded.
    Ok,
    /// Unknown (timeout): it may have taken effect.
    Unknown,
}

const INF: i64 = i64::MAX / 4;
/// Variables of the zone: 0 (the constant zero), `a` (lease point), `p` (last point), and
/// during a step `t` (the new point).
const Z: usize = 0;
const A: usize = 1;
const P: usize = 2;
const T: usize = 3;

/// State: the holder (handle, lease length and process) and the zone of `(a, p)`:
/// `zone[i][j]` bounds `x_i − x_j ≤ zone[i][j]`, in canonical (closed) form.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LockState {
    holder: Option<(u64, u64, u64)>,
    zone: [[i64; 3]; 3],
}

/// The lease-lock model.
#[derive(Debug, Clone, Default)]
pub struct LeaseLock {
    /// `ε`: the clock-uncertainty bound, ns of true time.
    pub uncertainty: u64,
    /// The compare-and-swap record spec (see the module docs): the holder's release and
    /// renewal take effect whatever the time, and its process may take the lock again at once.
    pub record: bool,
    /// The session-lock spec (see the module docs): the holder's release and renewal take
    /// effect whatever the time, and an acquire's `since` (its session's last touch) is its
    /// lease point.
    pub session: bool,
    /// What reports may say beyond the operations (names, failed releases).
    pub context: Arc<LockContext>,
}

/// Facts of the history the model's reasons mention but its steps ignore.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LockContext {
    /// A name for each process (node id), e.g. `c2`; otherwise `process N`.
    pub names: BTreeMap<u64, String>,
    /// Releases that failed (left out of the check: they did not happen), by handle: the
    /// true times at which each was invoked.
    pub failed_releases: BTreeMap<u64, Vec<u64>>,
}

impl LeaseLock {
    /// The model with clock-uncertainty bound `uncertainty` ns and no context.
    pub fn new(uncertainty: u64) -> Self {
        LeaseLock {
            uncertainty,
            record: false,
            session: false,
            context: Arc::default(),
        }
    }

    fn who(&self, process: u64) -> String {
        self.context
            .names
            .get(&process)
            .cloned()
            .unwrap_or_else(|| format!("process {process}"))
    }

    /// "and its release at 0.5s failed", when the holder's release failed.
    fn failed_release(&self, handle: u64) -> String {
        match self.context.failed_releases.get(&handle) {
            Some(t) if !t.is_empty() => {
                let at: Vec<String> = t.iter().map(|&x| at(x)).collect();
                format!(" and its release (invoked at {}) failed", at.join(", "))
            }
            _ => String::new(),
        }
    }

    /// Earliest and latest feasible lease start `a`, and earliest last point `p`.
    fn bounds(s: &LockState) -> (i64, i64, i64) {
        (-s.zone[Z][A], s.zone[A][Z], -s.zone[Z][P])
    }
}

fn at(ns: u64) -> String {
    fmt_nanos(ns as i128)
}

fn at_i(ns: i64) -> String {
    fmt_nanos(ns.max(0) as i128)
}

fn close(d: &mut [[i64; 4]; 4]) -> bool {
    for k in 0..4 {
        for i in 0..4 {
            if d[i][k] >= INF {
                continue;
            }
            for j in 0..4 {
                if d[k][j] < INF && d[i][k] + d[k][j] < d[i][j] {
                    d[i][j] = d[i][k] + d[k][j];
                }
            }
        }
    }
    (0..4).all(|i| d[i][i] >= 0)
}

impl LeaseLock {
    /// The zone extended with the new point `t ∈ [call, ret]`, `t ≥ p`.
    fn with_point(&self, s: &LockState, op: &Operation<LockInput, LockOutput>) -> [[i64; 4]; 4] {
        let mut d = [[INF; 4]; 4];
        for (i, row) in s.zone.iter().enumerate() {
            d[i][..3].copy_from_slice(row);
        }
        d[T][T] = 0;
        d[T][Z] = op.ret.map_or(INF, |r| r as i64);
        d[Z][T] = -(op.call as i64);
        d[P][T] = 0; // p − t ≤ 0
        d
    }

    /// Adds "the lease of `ttl` granted at `a` has not surely expired at `t`":
    /// `t − a < ttl + ε`, i.e. `t − a ≤ ttl + ε − 1`.
    fn alive(&self, d: &mut [[i64; 4]; 4], ttl: u64) {
        d[T][A] = d[T][A].min((ttl + self.uncertainty) as i64 - 1);
    }

    /// Projects the closed 4-variable zone to the new `(a', p' = t)`; `a'` is `t` when the
    /// lease was (re)granted, `a` when it is kept, free when there is no holder.
    fn project(d: &[[i64; 4]; 4], holder: Option<(u64, u64, u64)>, a_is_t: bool) -> LockState {
        let a_src = if a_is_t { T } else { A };
        let map = [Z, a_src, T];
        let mut zone = [[0i64; 3]; 3];
        for i in 0..3 {
            for j in 0..3 {
                zone[i][j] = d[map[i]][map[j]];
            }
        }
        if holder.is_none() {
            // No lease: `a` is unconstrained.
            for k in [Z, P] {
                zone[A][k] = INF;
                zone[k][A] = INF;
            }
        }
        LockState { holder, zone }
    }
}

impl Model for LeaseLock {
    type State = LockState;
    type Input = LockInput;
    type Output = LockOutput;

    fn init(&self) -> LockState {
        let mut zone = [[INF; 3]; 3];
        for (i, row) in zone.iter_mut().enumerate() {
            row[i] = 0;
        }
        // Points are at or after time 0.
        zone[Z][P] = 0;
        LockState { holder: None, zone }
    }

    fn step(&self, s: &LockState, op: &Operation<LockInput, LockOutput>) -> Option<LockState> {
        let mut d = self.with_point(s, op);
        match (op.input, op.output) {
            (
                LockInput::Acquire {
                    ttl, handle, since, ..
                },
                LockOutput::Ok,
            ) => {
                if let Some((_, held_ttl, by)) = s.holder {
                    // The record's holder taking it again waits for nothing.
                    if !(self.record && by == op.process) {
                        // t ≥ a + ttl_held − ε, i.e. a − t ≤ ε − ttl_held
                        d[A][T] = d[A][T].min(self.uncertainty as i64 - held_ttl as i64);
                    }
                }
                let holder = Some((handle, ttl, op.process));
                match since.filter(|_| self.session) {
                    // The session's lease counts from its last touch: t ≥ since, a' = since.
                    Some(since) => {
                        let since = since as i64;
                        d[Z][T] = d[Z][T].min(-since);
                        if !close(&mut d) {
                            return None;
                        }
                        // The old `a` has given all it implies to t and p: replace it by the
                        // constant `since`.
                        for k in [Z, P, T] {
                            d[A][k] = INF;
                            d[k][A] = INF;
                        }
                        d[A][Z] = since;
                        d[Z][A] = -since;
                        close(&mut d).then(|| Self::project(&d, holder, false))
                    }
                    None => close(&mut d).then(|| Self::project(&d, holder, true)),
                }
            }
            (LockInput::Acquire { .. }, LockOutput::Unknown) => {
                close(&mut d).then(|| Self::project(&d, s.holder, false))
            }
            (LockInput::Release { handle, .. } | LockInput::Extend { handle, .. }, out) => {
                let held = s.holder.filter(|h| h.0 == handle);
                let mut took = d;
                let effective = match held {
                    Some((_, held_ttl, _)) => {
                        if !(self.record || self.session) {
                            self.alive(&mut took, held_ttl);
                        }
                        close(&mut took)
                    }
                    None => false,
                };
                if effective {
                    return Some(match op.input {
                        LockInput::Release { .. } => Self::project(&took, None, false),
                        LockInput::Extend { ttl, .. } => {
                            Self::project(&took, Some((handle, ttl, op.process)), true)
                        }
                        LockInput::Acquire { .. } => unreachable!(),
                    });
                }
                // It could not have succeeded here: fine only if its outcome is unknown.
                (out == LockOutput::Unknown && close(&mut d))
                    .then(|| Self::project(&d, s.holder, false))
            }
        }
    }

    fn describe_state(&self, s: &LockState) -> String {
        let (a_lo, a_hi, p_lo) = Self::bounds(s);
        match s.holder {
            None => format!("free (last step at {} or later)", at_i(p_lo)),
            Some((h, ttl, _)) => {
                let start = if a_hi >= INF / 2 {
                    format!("{} or later", at_i(a_lo))
                } else if a_lo == a_hi {
                    at_i(a_lo)
                } else {
                    format!("between {} and {}", at_i(a_lo), at_i(a_hi))
                };
                if ttl >= FOREVER {
                    return format!("held by handle {h} (no expiry), granted {start}");
                }
                let from = if self.session {
                    "from its session's last touch"
                } else {
                    "granted"
                };
                format!(
                    "held by handle {h}, lease of {} {from} {start}",
                    fmt_nanos(ttl as i128)
                )
            }
        }
    }

    fn why_not(&self, s: &LockState, op: &Operation<LockInput, LockOutput>) -> String {
        let (a_lo, a_hi, p_lo) = Self::bounds(s);
        let eps = self.uncertainty as i64;
        let who = self.who(op.process);
        let answered = match op.ret {
            Some(r) => format!("answered ok at {}", at(r)),
            None => "never answered".to_string(),
        };
        let ret = op.ret.map_or(INF, |r| r as i64);
        match op.input {
            LockInput::Acquire { key, handle, .. } => {
                let head = format!("acquire of k{key} by {who} (handle {handle}) {answered}");
                match s.holder {
                    Some((h, ttl, _)) if ttl >= FOREVER => format!(
                        "{head}, but handle {h} still held the lock (granted at {} at the \
                         earliest; it does not expire){}",
                        at_i(a_lo),
                        self.failed_release(h)
                    ),
                    Some((h, ttl, _)) if a_lo + ttl as i64 - eps > ret => format!(
                        "{head}, but handle {h} still held the lock: its lease, {} at {} at \
                         the earliest, lasts until {} (until {} allowing the ±{} clock \
                         uncertainty){}",
                        if self.session {
                            "counted from its session's last touch"
                        } else {
                            "granted"
                        },
                        at_i(a_lo),
                        at_i(a_lo + ttl as i64),
                        at_i(a_lo + ttl as i64 - eps),
                        fmt_nanos(eps as i128),
                        self.failed_release(h)
                    ),
                    _ if p_lo > ret => format!(
                        "{head}, but the operation before it in this order took effect at {} or \
                         later",
                        at_i(p_lo)
                    ),
                    _ => format!("{head}, which no lease-lock state here allows"),
                }
            }
            LockInput::Release { key, handle } | LockInput::Extend { key, handle, .. } => {
                let what = if matches!(op.input, LockInput::Release { .. }) {
                    "release"
                } else {
                    "renewal"
                };
                let head = format!(
                    "{what} of k{key} handle {handle} by {who} (invoked at {}) {answered}",
                    at(op.call)
                );
                match s.holder {
                    None => format!("{head}, but nobody held the lock then"),
                    Some((h, _, _)) if h != handle => {
                        format!("{head}, but handle {h} held the lock then, not handle {handle}")
                    }
                    Some((_, ttl, _))
                        if !self.record
                            && (op.call as i64).max(p_lo) >= a_hi + ttl as i64 + eps =>
                    {
                        format!(
                            "{head}, but its lease, granted at {} at the latest, had surely ended \
                             by {} (its end {} plus the ±{} clock uncertainty)",
                            at_i(a_hi),
                            at_i(a_hi + ttl as i64 + eps),
                            at_i(a_hi + ttl as i64),
                            fmt_nanos(eps as i128)
                        )
                    }
                    _ if p_lo > ret => format!(
                        "{head}, but the operation before it in this order took effect at {} or \
                         later",
                        at_i(p_lo)
                    ),
                    _ => format!("{head}, which no lease-lock state here allows"),
                }
            }
        }
    }

    /// A timed-out release or renewal of a handle that does not hold the lock: a handle is
    /// granted once, by its acquire's answer, which came before the release was invoked (so
    /// it is linearized whenever the release can be), so that handle never holds again.
    fn inert(&self, s: &LockState, op: &Operation<LockInput, LockOutput>) -> bool {
        match op.input {
            LockInput::Release { handle, .. } | LockInput::Extend { handle, .. } => {
                op.output == LockOutput::Unknown && s.holder.is_none_or(|(h, _, _)| h != handle)
            }
            LockInput::Acquire { .. } => false,
        }
    }

    fn same_effect(
        &self,
        a: &Operation<LockInput, LockOutput>,
        b: &Operation<LockInput, LockOutput>,
    ) -> bool {
        a.input == b.input && a.output == b.output
    }

    fn partition(&self, ops: &[Operation<LockInput, LockOutput>]) -> Vec<Vec<usize>> {
        let mut by_key: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for (i, op) in ops.iter().enumerate() {
            by_key.entry(op.input.key()).or_default().push(i);
        }
        by_key.into_values().collect()
    }

    fn describe(&self, op: &Operation<LockInput, LockOutput>) -> String {
        let what = match op.input {
            LockInput::Acquire { key, handle, .. } => format!("acquire k{key} (handle {handle})"),
            LockInput::Release { key, handle } => format!("release k{key} handle {handle}"),
            LockInput::Extend { key, handle, .. } => format!("extend k{key} handle {handle}"),
        };
        let out = match op.output {
            LockOutput::Ok => "ok",
            LockOutput::Unknown => "unknown",
        };
        format!("{} {what} -> {out}", self.who(op.process))
    }
}
