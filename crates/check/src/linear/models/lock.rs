//! A lease lock in true time (DESIGN §7, S3): an acquire succeeds only if the lock is free or
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
//! Failed operations did not happen and are left out; an acquire whose outcome is unknown never
//! gave anyone a hold and is left out too (taking effect unseen is the same as never taking
//! effect for the other clients); a release or renewal whose outcome is unknown takes effect
//! when it can, or never.

use std::collections::BTreeMap;

use crate::linear::{Model, Operation};

/// Lock operations (per key; the key is only used to partition).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockInput {
    /// Acquire `key` with a lease of `ttl` ns; on `ok` the grant is lock handle `handle`.
    Acquire { key: u32, ttl: u64, handle: u64 },
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

/// State: the holder (handle and lease length) and the zone of `(a, p)`:
/// `zone[i][j]` bounds `x_i − x_j ≤ zone[i][j]`, in canonical (closed) form.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LockState {
    holder: Option<(u64, u64)>,
    zone: [[i64; 3]; 3],
}

/// The lease-lock model.
#[derive(Debug, Clone, Copy)]
pub struct LeaseLock {
    /// `ε`: the clock-uncertainty bound, ns of true time.
    pub uncertainty: u64,
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
    fn project(d: &[[i64; 4]; 4], holder: Option<(u64, u64)>, a_is_t: bool) -> LockState {
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
            (LockInput::Acquire { ttl, handle, .. }, LockOutput::Ok) => {
                if let Some((_, held_ttl)) = s.holder {
                    // t ≥ a + ttl_held − ε, i.e. a − t ≤ ε − ttl_held
                    d[A][T] = d[A][T].min(self.uncertainty as i64 - held_ttl as i64);
                }
                close(&mut d).then(|| Self::project(&d, Some((handle, ttl)), true))
            }
            (LockInput::Acquire { .. }, LockOutput::Unknown) => {
                close(&mut d).then(|| Self::project(&d, s.holder, false))
            }
            (LockInput::Release { handle, .. } | LockInput::Extend { handle, .. }, out) => {
                let held = s.holder.filter(|h| h.0 == handle);
                let mut took = d;
                let effective = match held {
                    Some((_, held_ttl)) => {
                        self.alive(&mut took, held_ttl);
                        close(&mut took)
                    }
                    None => false,
                };
                if effective {
                    return Some(match op.input {
                        LockInput::Release { .. } => Self::project(&took, None, false),
                        LockInput::Extend { ttl, .. } => {
                            Self::project(&took, Some((handle, ttl)), true)
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
        format!("process {} {what} -> {out}", op.process)
    }
}
