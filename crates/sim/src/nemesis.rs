//! The nemesis: injects a [`FaultPlan`] into a running world at the planned true times, or
//! when the events its triggered faults wait for are recorded.
//!
//! Network faults become rules of [`crate::links`]; pauses, crashes and restarts use madsim's
//! node control (`pause`/`resume`, `kill`/`restart`); clock faults change the node's
//! [`crate::clock::Clock`]. Every injection is recorded as a `fault` event, and the end of a
//! lasting fault as a `fault_end` event, so the timeline shows cause beside effect.

use std::sync::Arc;

use futures_channel::mpsc::UnboundedSender;
use futures_util::StreamExt;
use locksim_core::fault::{CutMode, PauseTask};
use locksim_core::history::EventKind;
use locksim_core::trigger::{Count, Trigger};
use locksim_core::{Fault, FaultPlan, Nanos, Network, NodeId, TimedFault};
use madsim::runtime::Handle;

use crate::links::{Effect, Rule};
use crate::world::{Task, World};

/// Madsim's ids for the nodes of the cluster, indexed by locksim node id.
pub type NodeMap = Arc<Vec<madsim::task::NodeId>>;

#[derive(Default, Clone, Copy)]
struct NodeState {
    /// True time until which the node stays paused (overlapping pauses extend it).
    paused_until: Nanos,
    /// Bumped by each crash; a restart only fires if no later crash superseded it.
    crash_epoch: u64,
    down: bool,
}

/// Starts `plan` (call from the supervisor before it first yields, so that no event is recorded
/// before the triggers are armed): a supervisor task injects the timed faults at their times.
/// Faults aimed at events (`after`) are armed at once and fire from [`World::record`] when their
/// event is recorded: at once when their delay is 0 (network rules are then in force before
/// the recording node sends anything more), else from a supervisor task at the event's time
/// plus the delay; a firing at or after `end` (the run's end, ns) does not happen, as
/// [`locksim_core::trigger::Trigger::resolve`] says.
pub fn start(world: Arc<World>, plan: FaultPlan, nodes: NodeMap, end: Nanos) {
    world.set_end(end);
    let state = Arc::new(std::sync::Mutex::new(vec![
        NodeState::default();
        world.cluster.nodes() as usize
    ]));
    let (timed, triggered): (Vec<TimedFault>, Vec<TimedFault>) =
        plan.faults.into_iter().partition(|tf| tf.after.is_none());
    if !triggered.is_empty() {
        arm(&world, triggered, &nodes, &state, end);
    }
    madsim::task::spawn_local(run_timed(world, timed, nodes, state));
}

/// Injects the timed faults, in order, at their times (returns after the last).
async fn run_timed(world: Arc<World>, timed: Vec<TimedFault>, nodes: NodeMap, state: States) {
    for tf in timed {
        // A task left waiting past the run's end would keep the world and madsim's timers
        // alive after it (see `later`).
        if world.after_end(tf.at) {
            return;
        }
        // madsim sleeps at least 1 ms: faults planned for the same instant must not drift apart.
        if world.now() < tf.at {
            madsim::time::sleep_until(world.instant(tf.at)).await;
        }
        inject(&world, &nodes, &state, tf.fault, &Spawn::Local);
    }
}

/// Work a trigger hands to the supervisor: a fault to inject at a true time, or the end of a
/// lasting fault injected from a node's task.
enum Job {
    Inject(Nanos, Fault),
    Later(Nanos, Box<dyn FnOnce(&World) + Send>),
}

/// Where the timers of a lasting fault run: on the supervisor directly (the timed plan), or
/// sent to it (a fault fired inside a node's task, which a crash or pause would stop).
enum Spawn {
    Local,
    Via(UnboundedSender<Job>),
}

/// One armed trigger: its fault and how many matching events it has seen.
struct Armed {
    trigger: Trigger,
    fault: Fault,
    seen: Count,
}

fn arm(world: &Arc<World>, faults: Vec<TimedFault>, nodes: &NodeMap, state: &States, end: Nanos) {
    let (tx, mut rx) = futures_channel::mpsc::unbounded::<Job>();
    let armed: Vec<Armed> = faults
        .into_iter()
        .filter_map(|tf| {
            tf.after.map(|trigger| Armed {
                trigger,
                fault: tf.fault,
                seen: Count::default(),
            })
        })
        .collect();
    if armed.iter().any(|a| a.trigger.event.is_service()) {
        world.record_service_events();
    }
    let armed = std::sync::Mutex::new(armed);
    let weak = Arc::downgrade(world);
    let (n, st) = (nodes.clone(), state.clone());
    world.observe(Box::new(move |node, o| {
        let fired: Vec<(Nanos, Fault)> = {
            let mut armed = armed.lock().expect("single-threaded");
            armed
                .iter_mut()
                .filter(|a| a.seen.n < a.trigger.nth)
                .filter_map(|a| {
                    (a.trigger.count(&mut a.seen, node, o) && a.seen.n == a.trigger.nth)
                        .then(|| (a.trigger.delay, a.fault.clone()))
                })
                .collect()
        };
        let Some(w) = weak.upgrade() else { return };
        for (delay, fault) in fired {
            let at = w.now().saturating_add(delay);
            if at >= end {
                continue;
            }
            if delay == 0 {
                inject(&w, &n, &st, fault, &Spawn::Via(tx.clone()));
            } else {
                let _ = tx.unbounded_send(Job::Inject(at, fault));
            }
        }
    }));
    let (weak, nodes, state) = (Arc::downgrade(world), nodes.clone(), state.clone());
    madsim::task::spawn_local(async move {
        while let Some(job) = rx.next().await {
            let Some(w) = weak.upgrade() else { return };
            let (nodes, state) = (nodes.clone(), state.clone());
            madsim::task::spawn_local(async move {
                let at = match &job {
                    Job::Inject(at, _) | Job::Later(at, _) => *at,
                };
                if w.after_end(at) {
                    return; // see `later`
                }
                madsim::time::sleep_until(w.instant(at)).await;
                match job {
                    Job::Inject(_, fault) => inject(&w, &nodes, &state, fault, &Spawn::Local),
                    Job::Later(_, f) => f(&w),
                }
            });
        }
    });
}

fn all_but(world: &World, node: NodeId) -> Vec<NodeId> {
    (0..world.cluster.nodes()).filter(|&n| n != node).collect()
}

fn later(world: &Arc<World>, spawn: &Spawn, after: Nanos, f: impl FnOnce(&World) + Send + 'static) {
    let at = world.now().saturating_add(after);
    match spawn {
        Spawn::Local => {
            let world = world.clone();
            madsim::task::spawn_local(async move {
                // The end of a fault that outlasts the run never comes: waiting for it, the
                // task would hold the world, and its timer madsim's whole timer heap, after the
                // run (a cycle through the timer's waker; about 66 KiB a seed for a pause
                // past the end, issue #49). It is still spawned and polled once, so the
                // schedule before the end does not change.
                if world.after_end(at) {
                    return;
                }
                madsim::time::sleep_until(world.instant(at)).await;
                f(&world);
            });
        }
        Spawn::Via(tx) => {
            let _ = tx.unbounded_send(Job::Later(at, Box::new(f)));
        }
    }
}

type States = Arc<std::sync::Mutex<Vec<NodeState>>>;

fn inject(world: &Arc<World>, nodes: &NodeMap, state: &States, fault: Fault, spawn: &Spawn) {
    let now = world.now();
    // The leader is known only now: record and inject the isolation of that node.
    let fault = match fault {
        Fault::IsolateLeader { duration, mode } => match world.leader() {
            Some(node) => Fault::Isolate {
                node,
                duration,
                mode,
            },
            None => {
                world.record(0, EventKind::Fault { fault });
                world.record(
                    0,
                    EventKind::FaultEnd {
                        what: "no leader to isolate".into(),
                    },
                );
                return;
            }
        },
        f => f,
    };
    let h = Handle::current();
    let at_node = fault.node().unwrap_or(0);
    world.record(
        at_node,
        EventKind::Fault {
            fault: fault.clone(),
        },
    );
    let rule = |from: &Vec<NodeId>, to: &Vec<NodeId>, effect: Effect, d: Nanos| Rule {
        from: from.clone(),
        to: to.clone(),
        effect,
        until: now.saturating_add(d),
    };
    let window_end = |world: &Arc<World>, d: Nanos, what: String| {
        later(world, spawn, d, move |w| {
            w.record(at_node, EventKind::FaultEnd { what });
        });
    };
    let block = |mode: CutMode| Effect::Block {
        reset: mode == CutMode::Reset,
    };
    match fault {
        Fault::Partition {
            a,
            b,
            duration,
            mode,
        } => {
            let mut l = world.links();
            l.add(rule(&a, &b, block(mode), duration));
            l.add(rule(&b, &a, block(mode), duration));
            drop(l);
            window_end(world, duration, "partition healed".into());
        }
        Fault::PartitionOneway {
            from,
            to,
            duration,
            mode,
        } => {
            world.links().add(rule(&from, &to, block(mode), duration));
            window_end(world, duration, "one-way partition healed".into());
        }
        Fault::Isolate {
            node,
            duration,
            mode,
        } => {
            let others = all_but(world, node);
            let mut l = world.links();
            l.add(rule(&vec![node], &others, block(mode), duration));
            l.add(rule(&others, &vec![node], block(mode), duration));
            drop(l);
            window_end(
                world,
                duration,
                format!("{} rejoined", world.cluster.name(node)),
            );
        }
        Fault::Heal => world.links().heal(),
        Fault::IsolateLeader { .. } => unreachable!("resolved above"),
        Fault::Loss {
            from,
            to,
            rate_pct,
            duration,
        } => {
            world
                .links()
                .add(rule(&from, &to, Effect::Loss { pct: rate_pct }, duration));
            window_end(world, duration, "loss window closed".into());
        }
        Fault::Delay {
            from,
            to,
            min,
            max,
            duration,
        } => {
            world
                .links()
                .add(rule(&from, &to, Effect::Delay { min, max }, duration));
            window_end(world, duration, "delay window closed".into());
        }
        Fault::Duplicate {
            from,
            to,
            rate_pct,
            duration,
        } => {
            world.links().add(rule(
                &from,
                &to,
                Effect::Duplicate { pct: rate_pct },
                duration,
            ));
            window_end(world, duration, "duplication window closed".into());
        }
        Fault::DropReplies {
            clients,
            servers,
            duration,
        } => {
            world
                .links()
                .add(rule(&servers, &clients, Effect::DropReplies, duration));
            window_end(world, duration, "replies flow again".into());
        }
        Fault::Pause {
            node,
            duration,
            task: task @ (PauseTask::Renewal | PauseTask::Work),
        } => {
            let (t, what) = match task {
                PauseTask::Renewal => (Task::Renewal, "renewal task"),
                _ => (Task::Work, "work"),
            };
            world.stall(node, t, now.saturating_add(duration));
            later(world, spawn, duration, move |w| {
                if w.now() >= w.stalled_until(node, t) {
                    w.record(
                        node,
                        EventKind::FaultEnd {
                            what: format!("{}'s {what} resumed", w.cluster.name(node)),
                        },
                    );
                }
            });
        }
        Fault::Pause { node, duration, .. } => {
            let until = now.saturating_add(duration);
            {
                let mut s = state.lock().expect("single-threaded");
                let st = &mut s[node as usize];
                st.paused_until = st.paused_until.max(until);
            }
            h.pause(nodes[node as usize]);
            let (nodes, state) = (nodes.clone(), state.clone());
            later(world, spawn, duration, move |w| {
                let s = state.lock().expect("single-threaded")[node as usize];
                if w.now() >= s.paused_until {
                    Handle::current().resume(nodes[node as usize]);
                    w.record(
                        node,
                        EventKind::FaultEnd {
                            what: format!("{} resumed", w.cluster.name(node)),
                        },
                    );
                }
            });
        }
        Fault::Crash {
            node,
            restart_after,
        } => {
            let epoch = {
                let mut s = state.lock().expect("single-threaded");
                let st = &mut s[node as usize];
                st.crash_epoch += 1;
                st.down = true;
                st.crash_epoch
            };
            h.kill(nodes[node as usize]);
            if world.workload.network == Network::Tcp {
                let mut links = world.links();
                world.tcp().crash(world, &mut links, node);
            }
            world.disk(node).crash();
            world.set_leader(node, None);
            if let Some(after) = restart_after {
                let (nodes, state) = (nodes.clone(), state.clone());
                later(world, spawn, after, move |w| {
                    let mut s = state.lock().expect("single-threaded");
                    let st = &mut s[node as usize];
                    if st.down && st.crash_epoch == epoch {
                        st.down = false;
                        drop(s);
                        w.bump_incarnation(node);
                        w.tcp().restart(node);
                        Handle::current().restart(nodes[node as usize]);
                        w.record(
                            node,
                            EventKind::FaultEnd {
                                what: format!("{} restarted", w.cluster.name(node)),
                            },
                        );
                    }
                });
            }
        }
        Fault::ClockStep { node, delta } => world.clock(node).step(now, delta),
        Fault::ClockDrift { node, ppm } => world.clock(node).set_drift(now, ppm),
    }
}
