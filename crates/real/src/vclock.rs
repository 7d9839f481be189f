//! Virtual client clocks. A client's clocks in a real run are derived from true time (the
//! host's `CLOCK_MONOTONIC` since the run's start) with the simulator's own clock model (`locksim_core::clock`)
//! (docs/design.md §3): `mono(t) = ∫ rate`, `wall(t) = offset + mono(t) + Σ steps so far`, with the
//! initial offset and drift of the client's settings and the `clock_step` / `clock_drift`
//! faults of the plan. The plan is known before the run, so the whole clock is built up front:
//! the client reads it, and the harness maps each validity deadline back to true time with it.

use locksim_core::clock::Clock;
use locksim_core::fault::Fault;
use locksim_core::{NodeId, Role, Scenario};

/// The clock of node `node` of `scenario` over the whole run: a client's settings' offset and
/// drift (none for servers), then the plan's clock faults on it in time order (a plan is
/// sorted by time, and its drifts were checked to keep the clock running).
pub fn of(scenario: &Scenario, node: NodeId) -> Clock {
    let (offset, ppm) = if scenario.cluster.role(node) == Role::Client {
        let p = scenario
            .workload
            .client(node - scenario.cluster.servers + 1);
        (p.clock_offset, p.clock_drift_ppm)
    } else {
        (0, 0)
    };
    let mut c = Clock::new(offset, ppm);
    for tf in &scenario.faults.faults {
        match tf.fault {
            Fault::ClockStep { node: n, delta } if n == node => c.step(tf.at, delta),
            Fault::ClockDrift { node: n, ppm } if n == node => c.set_drift(tf.at, ppm),
            _ => {}
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use locksim_core::fault::{FaultPlan, TimedFault};
    use locksim_core::history::LocalClock;
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
                    after: None,
                },
                TimedFault {
                    at: 2 * SEC,
                    fault: Fault::ClockDrift {
                        node: 1,
                        ppm: -500_000,
                    },
                    after: None,
                },
                // Another client's fault leaves c1 alone.
                TimedFault {
                    at: SEC,
                    fault: Fault::ClockStep {
                        node: 2,
                        delta: 9 * SEC as i64,
                    },
                    after: None,
                },
            ],
            100,
            0,
        );
        let c = of(&s, 1);
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
        let other = of(&s, 2);
        assert_eq!(other.wall(2 * SEC), 11 * SEC as i64);
    }

    #[test]
    fn a_fast_clock_reaches_its_readings_early() {
        let c = of(&scenario(vec![], 0, 250_000), 1);
        assert_eq!(c.mono(4 * SEC), 5 * SEC);
        assert_eq!(c.reach(LocalClock::Wall, 5 * SEC as i64, 0), 4 * SEC);
    }
}
