//! Virtual client clocks. A client's clocks in a real run are derived from true time (the
//! host's `CLOCK_MONOTONIC` since the run's start) exactly as the simulator's node clocks are
//! (DESIGN §3): `mono(t) = ∫ rate`, `wall(t) = offset + mono(t) + Σ steps so far`, with the
//! initial offset and drift of the client's settings and the `clock_step` / `clock_drift`
//! faults of the plan. The plan is known before the run, so the whole clock is built up front:
//! the client reads it, and the harness maps each validity deadline back to true time with it.

use locksim_core::fault::Fault;
use locksim_core::history::LocalClock;
use locksim_core::{Nanos, NodeId, Scenario};

/// One linear piece of the monotonic clock: from true time `t0`, `mono = m0 + (t − t0)·rate`.
#[derive(Debug, Clone, Copy)]
struct Piece {
    t0: Nanos,
    m0: u64,
    ppm: i64,
}

impl Piece {
    fn mono_at(&self, t: Nanos) -> u64 {
        let dt = t.saturating_sub(self.t0) as i128;
        self.m0 + (dt * (1_000_000 + self.ppm as i128) / 1_000_000) as u64
    }
    /// The first true time (≥ t0) at which this piece reads at least `m`.
    fn true_at(&self, m: u64) -> Nanos {
        if m <= self.m0 {
            return self.t0;
        }
        let rate = 1_000_000 + self.ppm as i128;
        self.t0 + (((m - self.m0) as i128 * 1_000_000 + rate - 1) / rate) as u64
    }
}

/// The clocks of one client over the whole run.
#[derive(Debug, Clone)]
pub struct VClock {
    pieces: Vec<Piece>,
    offset: i64,
    /// Wall-clock steps as (true time, sum of steps from then on), in order.
    steps: Vec<(Nanos, i64)>,
}

impl VClock {
    /// The clock of node `node` of `scenario`: a client's settings' offset and drift (none for
    /// servers), then the plan's clock faults on it in time order.
    pub fn of(scenario: &Scenario, node: NodeId) -> VClock {
        let (offset, ppm) = if scenario.cluster.role(node) == locksim_core::Role::Client {
            let p = scenario
                .workload
                .client(node - scenario.cluster.servers + 1);
            (p.clock_offset, p.clock_drift_ppm)
        } else {
            (0, 0)
        };
        let mut c = VClock {
            pieces: vec![Piece { t0: 0, m0: 0, ppm }],
            offset,
            steps: vec![(0, 0)],
        };
        for tf in &scenario.faults.faults {
            match tf.fault {
                Fault::ClockStep { node: n, delta } if n == node => {
                    let sum = c.steps.last().map_or(0, |s| s.1).saturating_add(delta);
                    c.steps.push((tf.at, sum));
                }
                Fault::ClockDrift { node: n, ppm } if n == node => {
                    let last = *c.pieces.last().expect("a clock has a piece");
                    c.pieces.push(Piece {
                        t0: tf.at,
                        m0: last.mono_at(tf.at),
                        ppm,
                    });
                }
                _ => {}
            }
        }
        c
    }

    fn piece_at(&self, t: Nanos) -> &Piece {
        let i = self.pieces.partition_point(|p| p.t0 <= t);
        &self.pieces[i.saturating_sub(1)]
    }

    /// Monotonic reading at true time `t`, ns.
    pub fn mono(&self, t: Nanos) -> u64 {
        self.piece_at(t).mono_at(t)
    }

    /// Wall reading at true time `t`, ns (steps so far applied; may be negative).
    pub fn wall(&self, t: Nanos) -> i64 {
        let i = self.steps.partition_point(|s| s.0 <= t).saturating_sub(1);
        self.offset + self.steps[i].1 + self.mono(t) as i64
    }

    /// The reading of `clock` at `t`.
    pub fn now(&self, clock: LocalClock, t: Nanos) -> i64 {
        match clock {
            LocalClock::Wall => self.wall(t),
            LocalClock::Mono => self.mono(t) as i64,
        }
    }

    /// The true time at which the monotonic clock reaches `m`.
    pub fn true_time_of_mono(&self, m: u64) -> Nanos {
        let i = self.pieces.partition_point(|p| p.m0 <= m).saturating_sub(1);
        let p = &self.pieces[i];
        match self.pieces.get(i + 1) {
            Some(next) => p.true_at(m).min(next.t0),
            None => p.true_at(m),
        }
    }

    /// The first true time at or after `from` at which `clock` reads at least `local`: how a
    /// validity deadline computed in local time becomes the end of a hold in true time.
    pub fn reach(&self, clock: LocalClock, local: i64, from: Nanos) -> Nanos {
        if clock == LocalClock::Mono {
            return self.true_time_of_mono(local.max(0) as u64).max(from);
        }
        let first = self
            .steps
            .partition_point(|s| s.0 <= from)
            .saturating_sub(1);
        for (i, &(t0, sum)) in self.steps.iter().enumerate().skip(first) {
            let start = t0.max(from);
            let need = local - self.offset - sum;
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use locksim_core::fault::{FaultPlan, TimedFault};
    use locksim_core::scenario::ClientProfile;
    use locksim_core::time::SEC;
    use locksim_core::{Cluster, Workload};

    fn scenario(faults: Vec<TimedFault>, offset: i64, ppm: i64) -> Scenario {
        let mut w = Workload::default();
        w.per_client.insert(
            "c1".into(),
            ClientProfile {
                clock_offset: Some(offset),
                clock_drift_ppm: Some(ppm),
                ..ClientProfile::default()
            },
        );
        Scenario {
            seed: 0,
            algorithm: "central".into(),
            config: Default::default(),
            cluster: Cluster {
                servers: 1,
                clients: 2,
            },
            workload: w,
            fault_kinds: vec![],
            faults: FaultPlan::new(faults),
        }
    }

    #[test]
    fn offset_drift_and_steps_follow_the_simulators_model() {
        let s = scenario(
            vec![
                TimedFault {
                    at: SEC,
                    fault: Fault::ClockStep {
                        node: 1,
                        delta: -2 * SEC as i64,
                    },
                },
                TimedFault {
                    at: 2 * SEC,
                    fault: Fault::ClockDrift {
                        node: 1,
                        ppm: -500_000,
                    },
                },
                // Another client's fault leaves c1 alone.
                TimedFault {
                    at: SEC,
                    fault: Fault::ClockStep {
                        node: 2,
                        delta: 9 * SEC as i64,
                    },
                },
            ],
            100,
            0,
        );
        let c = VClock::of(&s, 1);
        assert_eq!(c.wall(SEC / 2), 100 + SEC as i64 / 2);
        assert_eq!(c.wall(SEC), 100 - SEC as i64);
        assert_eq!(c.mono(SEC), SEC);
        // Half speed from 2 s: mono(4 s) = 2 s + 1 s.
        assert_eq!(c.mono(4 * SEC), 3 * SEC);
        assert_eq!(c.reach(LocalClock::Mono, 3 * SEC as i64, 0), 4 * SEC);
        // Before the backward step the wall clock reaches 0.9 s at 0.9 s − 100 ns; asked from
        // 1 s on it must climb back over the 2 s step first.
        assert_eq!(c.reach(LocalClock::Wall, 900_000_000, 0), 900_000_000 - 100);
        let t = c.reach(LocalClock::Wall, 900_000_000, SEC);
        assert!(t > 2 * SEC && c.wall(t) >= 900_000_000 && c.wall(t - 1) < 900_000_000);
        let other = VClock::of(&s, 2);
        assert_eq!(other.wall(2 * SEC), 11 * SEC as i64);
    }

    #[test]
    fn a_fast_clock_reaches_its_readings_early() {
        let c = VClock::of(&scenario(vec![], 0, 250_000), 1);
        assert_eq!(c.mono(4 * SEC), 5 * SEC);
        assert_eq!(c.reach(LocalClock::Wall, 5 * SEC as i64, 0), 4 * SEC);
    }
}
