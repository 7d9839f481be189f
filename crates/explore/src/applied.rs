//! Which recorded faults took effect: a fault counts only if it could change something.
//!
//! Read from a history's `fault` events alone (their true times and contents), so a trace
//! gives the same count as the run that made it. The rule, fault by fault:
//!
//! - a network window (partition, one-way partition, loss, delay, duplication, dropped
//!   replies, isolate) counts when it lasts longer than 0 ns, joins at least one pair of
//!   *distinct* nodes (a partition of a group from itself joins none), and has an effect:
//!   a loss or duplication rate above 0 %, a delay whose maximum is above 0 ns;
//! - `isolate_leader` is recorded as such only when no server led (the nemesis records an
//!   `isolate` of the leader otherwise): it never counts;
//! - `heal` counts when a window that counted is still in force at its time;
//! - a pause counts when it lasts longer than 0 ns, its node is up, and it ends later than
//!   every earlier pause of the same node and task still in force (a pause nested inside
//!   another one changes nothing; one that outlasts it extends the stop and counts);
//! - a crash counts when its node is up (a crash of a node already down only moves its
//!   restart, and nothing the checkers see);
//! - a clock step counts when its delta is not 0; a drift when its rate differs from the
//!   node's rate then (0 ppm until a recorded drift changes it).
//!
//! Issue #24, items 5 and H6-1: a cell whose plans held faults and in which none counted is
//! `n/a`, never `safe`.

use std::collections::BTreeMap;

use locksim_core::fault::PauseTask;
use locksim_core::fault::TimedFault;
use locksim_core::history::EventKind;
use locksim_core::{Fault, FaultPlan, History, Nanos, NodeId};

/// The faults of `history` that took effect, by the rule of this module.
pub fn faults_applied(history: &History) -> u64 {
    applied_flags(history).into_iter().filter(|a| *a).count() as u64
}

/// For each `fault` event of `history`, in order: whether it took effect.
pub fn applied_flags(history: &History) -> Vec<bool> {
    let mut state = State::default();
    history
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Fault { fault } => Some(state.applies(e.time, fault)),
            _ => None,
        })
        .collect()
}

/// The faults of `history` that took effect and were drawn for the run's fault kind, not
/// taken from the `explicit` plan (`[[fault]]`, `--plan`) that `plan` (the run's whole plan,
/// as the nemesis injected it in order, one `fault` event per entry) holds besides them.
/// A `leader-change+plan` cell whose isolations found no leader applied only its plan: the
/// kind itself was not survived (H6 item 6).
///
/// Faults aimed at events (`after`) come only from explicit plans: their `fault` events (at
/// or just after the times their triggers resolve to) are set aside before the timed entries are paired
/// with the rest, and a trigger that never fired has no event.
pub fn kind_faults_applied(history: &History, plan: &FaultPlan, explicit: &FaultPlan) -> u64 {
    let mut left: Vec<&TimedFault> = explicit.faults.iter().collect();
    let mut fired: Vec<(Nanos, &Fault)> = plan
        .faults
        .iter()
        .filter_map(|tf| Some((tf.after.as_ref()?.resolve(history)?, &tf.fault)))
        .collect();
    let flags: Vec<bool> = history
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Fault { fault } => Some((e.time, fault)),
            _ => None,
        })
        .zip(applied_flags(history))
        .filter(|((t, fault), _)| {
            // An `isolate_leader` is recorded as the isolation of the leader it found.
            let same = |f: &Fault| {
                f == *fault
                    || matches!(
                        (f, fault),
                        (Fault::IsolateLeader { .. }, Fault::Isolate { .. })
                    )
            };
            // A delayed firing is recorded at or a few scheduler ns after its planned time.
            match fired.iter().position(|(ft, f)| ft <= t && same(f)) {
                Some(i) => {
                    fired.remove(i);
                    false
                }
                None => true,
            }
        })
        .map(|(_, applied)| applied)
        .collect();
    plan.faults
        .iter()
        .filter(|tf| tf.after.is_none())
        .zip(flags)
        .filter(|(tf, applied)| match left.iter().position(|e| *e == *tf) {
            Some(i) => {
                left.remove(i);
                false
            }
            None => *applied,
        })
        .count() as u64
}

/// What earlier faults left in force, as far as the rule needs it.
#[derive(Default)]
struct State {
    /// End times of the network windows that counted (cleared by a `heal`).
    windows: Vec<Nanos>,
    /// The end of the latest pause of each node and task.
    paused_until: BTreeMap<(NodeId, u8), Nanos>,
    /// The true time each crashed node restarts (`Nanos::MAX` for never).
    down_until: BTreeMap<NodeId, Nanos>,
    /// Each node's clock rate, ppm.
    drift: BTreeMap<NodeId, i64>,
}

/// `true` when some node of `a` and a different node of `b` exist.
fn joins(a: &[NodeId], b: &[NodeId]) -> bool {
    a.iter().any(|x| b.iter().any(|y| x != y))
}

fn task_key(task: PauseTask) -> u8 {
    match task {
        PauseTask::Process => 0,
        PauseTask::Renewal => 1,
        PauseTask::Work => 2,
    }
}

impl State {
    fn is_down(&self, node: NodeId, at: Nanos) -> bool {
        self.down_until.get(&node).is_some_and(|&u| at < u)
    }

    /// Records a window of `duration` from `at` when `effective`, and says whether it counts.
    fn window(&mut self, at: Nanos, duration: Nanos, effective: bool) -> bool {
        let counts = effective && duration > 0;
        if counts {
            self.windows.push(at.saturating_add(duration));
        }
        counts
    }

    /// `true` when `fault`, recorded at true time `at`, takes effect; updates the state.
    fn applies(&mut self, at: Nanos, fault: &Fault) -> bool {
        match fault {
            Fault::IsolateLeader { .. } => false,
            Fault::Partition { a, b, duration, .. } => self.window(at, *duration, joins(a, b)),
            Fault::PartitionOneway {
                from, to, duration, ..
            } => self.window(at, *duration, joins(from, to)),
            Fault::Loss {
                from,
                to,
                rate_pct,
                duration,
            }
            | Fault::Duplicate {
                from,
                to,
                rate_pct,
                duration,
            } => self.window(at, *duration, *rate_pct > 0 && joins(from, to)),
            Fault::Delay {
                from,
                to,
                max,
                duration,
                ..
            } => self.window(at, *duration, *max > 0 && joins(from, to)),
            Fault::DropReplies {
                clients,
                servers,
                duration,
            } => self.window(at, *duration, joins(servers, clients)),
            Fault::Isolate { duration, .. } => self.window(at, *duration, true),
            Fault::Heal => {
                let in_force = self.windows.iter().any(|&u| at < u);
                self.windows.clear();
                in_force
            }
            Fault::Pause {
                node,
                duration,
                task,
            } => {
                let until = at.saturating_add(*duration);
                let key = (*node, task_key(*task));
                let before = self.paused_until.get(&key).copied().unwrap_or(0);
                let counts = *duration > 0 && !self.is_down(*node, at) && until > before.max(at);
                if counts {
                    self.paused_until.insert(key, until);
                }
                counts
            }
            Fault::Crash {
                node,
                restart_after,
            } => {
                let was_down = self.is_down(*node, at);
                let until = restart_after.map_or(Nanos::MAX, |r| at.saturating_add(r));
                self.down_until.insert(*node, until);
                !was_down
            }
            Fault::ClockStep { delta, .. } => *delta != 0,
            Fault::ClockDrift { node, ppm } => {
                let before = self.drift.insert(*node, *ppm).unwrap_or(0);
                before != *ppm
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use locksim_core::history::Event;

    fn history(faults: &[(Nanos, Fault)]) -> History {
        History {
            events: faults
                .iter()
                .enumerate()
                .map(|(i, (t, f))| Event {
                    id: i as u64,
                    time: *t,
                    node: 0,
                    wall: *t as i64,
                    mono: *t,
                    kind: EventKind::Fault { fault: f.clone() },
                })
                .collect(),
            ..History::default()
        }
    }

    const S: Nanos = 1_000_000_000;

    fn pause(node: NodeId, d: Nanos) -> Fault {
        Fault::Pause {
            node,
            duration: d,
            task: PauseTask::Process,
        }
    }

    #[test]
    fn zero_size_faults_never_count() {
        let none = [
            Fault::Partition {
                a: vec![0],
                b: vec![0],
                duration: 3 * S,
                mode: Default::default(),
            },
            Fault::Partition {
                a: vec![0, 1],
                b: vec![1, 2],
                duration: 0,
                mode: Default::default(),
            },
            Fault::Loss {
                from: vec![3],
                to: vec![0],
                rate_pct: 0,
                duration: S,
            },
            Fault::Duplicate {
                from: vec![3],
                to: vec![0],
                rate_pct: 0,
                duration: S,
            },
            Fault::Delay {
                from: vec![3],
                to: vec![0],
                min: 0,
                max: 0,
                duration: S,
            },
            Fault::Isolate {
                node: 0,
                duration: 0,
                mode: Default::default(),
            },
            pause(0, 0),
            Fault::ClockStep { node: 0, delta: 0 },
            Fault::ClockDrift { node: 0, ppm: 0 },
            Fault::Heal,
        ];
        for f in none {
            assert_eq!(faults_applied(&history(&[(2 * S, f.clone())])), 0, "{f:?}");
        }
        let some = [
            Fault::Partition {
                a: vec![0, 1],
                b: vec![0, 1],
                duration: S,
                mode: Default::default(),
            },
            Fault::Delay {
                from: vec![3],
                to: vec![0],
                min: 0,
                max: 1,
                duration: S,
            },
            pause(0, 1),
            Fault::ClockStep { node: 0, delta: -1 },
            Fault::ClockDrift { node: 0, ppm: 1 },
            Fault::Crash {
                node: 0,
                restart_after: None,
            },
        ];
        for f in some {
            assert_eq!(faults_applied(&history(&[(2 * S, f.clone())])), 1, "{f:?}");
        }
    }

    #[test]
    fn faults_that_find_their_work_done_do_not_count() {
        let isolate = Fault::Isolate {
            node: 1,
            duration: 3 * S,
            mode: Default::default(),
        };
        let crash = Fault::Crash {
            node: 4,
            restart_after: Some(5 * S),
        };
        let h = history(&[
            (S, isolate.clone()),
            (2 * S, Fault::Heal),     // heals the isolation: counts
            (3 * S, Fault::Heal),     // nothing left to heal
            (S, pause(2, 4 * S)),     // 1 s..5 s
            (2 * S, pause(2, S)),     // inside it
            (3 * S, pause(2, 3 * S)), // to 6 s: extends it
            (S, crash.clone()),       // down until 6 s
            (2 * S, crash.clone()),   // already down
            (2 * S, pause(4, S)),     // a pause of a down node
            (7 * S, crash),           // up again: counts
            (7 * S, Fault::ClockDrift { node: 0, ppm: 50 }),
            (8 * S, Fault::ClockDrift { node: 0, ppm: 50 }), // the same rate
            (9 * S, Fault::ClockDrift { node: 0, ppm: 0 }),  // back: counts
        ]);
        assert_eq!(faults_applied(&h), 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1);
        // A heal after every window ended heals nothing.
        let late = history(&[(S, isolate), (5 * S, Fault::Heal)]);
        assert_eq!(faults_applied(&late), 1);
    }
}
