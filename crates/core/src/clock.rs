//! Per-node clocks (docs/design.md §3), after TigerBeetle's `testing/time.zig`: each node's clocks are
//! a deterministic function of true time `t`,
//!
//! ```text
//! mono(t) = ∫ rate          (piecewise linear; rate = 1 + ppm/1e6, changed by drift faults)
//! wall(t) = offset + mono(t) + Σ steps so far
//! ```
//!
//! The monotonic clock drifts but never steps; the wall clock also steps (NTP). The model keeps
//! its whole history of rate changes, so a local monotonic reading can be mapped back to the
//! true time at which it was (or will be) reached — that is how a client's validity deadline,
//! computed in local time, becomes a true-time end of its hold.

use crate::history::LocalClock;
use crate::Nanos;

/// One linear piece of the monotonic clock: from true time `t0`, `mono = m0 + (t - t0)·rate`.
#[derive(Debug, Clone, Copy)]
struct Piece {
    t0: Nanos,
    m0: u64,
    ppm: i64,
}

impl Piece {
    fn mono_at(&self, t: Nanos) -> u64 {
        let dt = (t - self.t0) as i128;
        self.m0 + (dt * (1_000_000 + self.ppm as i128) / 1_000_000) as u64
    }
    /// The first true time (≥ t0) at which the clock reads at least `m`.
    fn true_at(&self, m: u64) -> Nanos {
        if m <= self.m0 {
            return self.t0;
        }
        let dm = (m - self.m0) as i128;
        let rate = 1_000_000 + self.ppm as i128;
        // ceil(dm * 1e6 / rate)
        self.t0 + ((dm * 1_000_000 + rate - 1) / rate) as u64
    }
}

/// The clocks of one node.
#[derive(Debug, Clone)]
pub struct Clock {
    pieces: Vec<Piece>,
    /// Initial wall-clock offset from true time, ns.
    offset: i64,
    /// Wall-clock steps as (true time, sum of steps from then on), in order.
    steps: Vec<(Nanos, i64)>,
}

impl Clock {
    /// A clock that starts at true time 0 with the given wall offset (ns) and drift (ppm).
    pub fn new(offset: i64, ppm: i64) -> Self {
        Clock {
            pieces: vec![Piece { t0: 0, m0: 0, ppm }],
            offset,
            steps: vec![(0, 0)],
        }
    }

    fn piece_at(&self, t: Nanos) -> &Piece {
        let i = self.pieces.partition_point(|p| p.t0 <= t);
        &self.pieces[i.saturating_sub(1)]
    }

    /// Monotonic reading at true time `t`, ns.
    pub fn mono(&self, t: Nanos) -> u64 {
        self.piece_at(t).mono_at(t)
    }

    /// Wall reading at true time `t` (steps applied so far), ns; may be negative after a
    /// backward step.
    pub fn wall(&self, t: Nanos) -> i64 {
        let i = self.steps.partition_point(|s| s.0 <= t).saturating_sub(1);
        self.offset + self.steps[i].1 + self.mono(t) as i64
    }

    /// The first true time at or after `from` at which the wall clock reads at least `w`,
    /// under the steps and rate changes known so far.
    pub fn true_time_of_wall(&self, from: Nanos, w: i64) -> Nanos {
        let first = self
            .steps
            .partition_point(|s| s.0 <= from)
            .saturating_sub(1);
        for (i, &(t0, sum)) in self.steps.iter().enumerate().skip(first) {
            let start = t0.max(from);
            let need = w - self.offset - sum;
            let t = if need <= 0 {
                start
            } else {
                self.true_time_of_mono(need as u64).max(start)
            };
            match self.steps.get(i + 1) {
                Some(&(next, _)) if t >= next => continue,
                _ => return t,
            }
        }
        unreachable!("the last step interval is unbounded")
    }

    /// Current drift, ppm.
    pub fn ppm(&self) -> i64 {
        self.pieces.last().map_or(0, |p| p.ppm)
    }

    /// Steps the wall clock by `delta` ns at true time `now`.
    ///
    /// # Panics
    /// When `now` is before the previous step.
    pub fn step(&mut self, now: Nanos, delta: i64) {
        let &(last_t, sum) = self.steps.last().expect("a clock has a step list");
        assert!(now >= last_t, "clock steps must come in true-time order");
        if now == last_t {
            self.steps.pop();
        }
        self.steps.push((now, sum.saturating_add(delta)));
    }

    /// Changes the rate to `1 + ppm/1e6` from true time `now` on.
    ///
    /// # Panics
    /// When `ppm <= -1_000_000` (the clock would stop or run backwards) or `now` is before the
    /// last change.
    pub fn set_drift(&mut self, now: Nanos, ppm: i64) {
        assert!(ppm > -1_000_000, "drift {ppm} ppm would stop the clock");
        let last = *self.pieces.last().expect("a clock has a piece");
        assert!(now >= last.t0, "clock changes must come in true-time order");
        let m0 = last.mono_at(now);
        if now == last.t0 {
            self.pieces.pop();
        }
        self.pieces.push(Piece { t0: now, m0, ppm });
    }

    /// The true time at which the monotonic clock reaches `m`, under the rate changes known so
    /// far (later changes are assumed not to happen).
    pub fn true_time_of_mono(&self, m: u64) -> Nanos {
        let i = self.pieces.partition_point(|p| p.m0 <= m);
        let i = i.saturating_sub(1);
        // The clock is strictly increasing, so the piece in which `m` falls is the last one
        // that starts at or below `m`.
        let p = &self.pieces[i];
        match self.pieces.get(i + 1) {
            Some(next) => p.true_at(m).min(next.t0),
            None => p.true_at(m),
        }
    }

    /// The reading of `clock` at true time `t`, ns.
    pub fn read(&self, clock: LocalClock, t: Nanos) -> i64 {
        match clock {
            LocalClock::Wall => self.wall(t),
            LocalClock::Mono => self.mono(t) as i64,
        }
    }

    /// The first true time at or after `from` at which `clock` reads at least `local`: how a
    /// validity deadline computed in local time becomes the end of a hold in true time.
    pub fn reach(&self, clock: LocalClock, local: i64, from: Nanos) -> Nanos {
        match clock {
            LocalClock::Mono => self.true_time_of_mono(local.max(0) as u64).max(from),
            LocalClock::Wall => self.true_time_of_wall(from, local),
        }
    }

    /// True duration that a local duration `d` (ns) takes at the current rate.
    pub fn true_duration(&self, d: Nanos) -> Nanos {
        let rate = 1_000_000 + self.ppm() as i128;
        ((d as i128 * 1_000_000 + rate - 1) / rate) as Nanos
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SEC;

    #[test]
    fn perfect_clock_tracks_true_time() {
        let c = Clock::new(0, 0);
        assert_eq!(c.mono(5 * SEC), 5 * SEC);
        assert_eq!(c.wall(5 * SEC), 5 * SEC as i64);
        assert_eq!(c.true_time_of_mono(3 * SEC), 3 * SEC);
    }

    #[test]
    fn drift_and_inverse() {
        let mut c = Clock::new(0, 0);
        c.set_drift(SEC, 10_000); // +1% from t = 1 s
        assert_eq!(c.mono(SEC), SEC);
        assert_eq!(c.mono(2 * SEC), 2 * SEC + 10_000_000);
        // Inverse is exact at piece boundaries and inside pieces.
        assert_eq!(c.true_time_of_mono(SEC), SEC);
        assert_eq!(c.true_time_of_mono(2 * SEC + 10_000_000), 2 * SEC);
        c.set_drift(3 * SEC, -500_000); // half speed from t = 3 s
        let m3 = c.mono(3 * SEC);
        assert_eq!(c.mono(5 * SEC), m3 + SEC);
        assert_eq!(c.true_time_of_mono(m3 + SEC), 5 * SEC);
        for t in [0, SEC / 3, SEC, 2 * SEC + 7, 3 * SEC, 4 * SEC + 11] {
            let m = c.mono(t);
            let back = c.true_time_of_mono(m);
            assert!(back <= t && c.mono(back) >= m, "t={t} m={m} back={back}");
        }
    }

    #[test]
    fn steps_move_wall_only() {
        let mut c = Clock::new(100, 0);
        c.step(SEC, -(2 * SEC as i64));
        assert_eq!(c.wall(SEC / 2), 100 + SEC as i64 / 2);
        assert_eq!(c.wall(SEC), 100 + SEC as i64 - 2 * SEC as i64);
        assert_eq!(c.mono(SEC), SEC);
        // Before the backward step the wall clock reaches 0.9 s at t = 0.9 s - 100 ns.
        assert_eq!(c.true_time_of_wall(0, 900_000_000), 900_000_000 - 100);
        // Asked from t = 1 s on, it must climb back over 2 s: at t = 2.9 s - 100 ns.
        assert_eq!(c.true_time_of_wall(SEC, 900_000_000), 2_900_000_000 - 100);
        c.step(3 * SEC, 5 * SEC as i64);
        // A forward step jumps over the target: reached right at the step.
        assert_eq!(c.true_time_of_wall(SEC, 4 * SEC as i64), 3 * SEC);
    }
}
