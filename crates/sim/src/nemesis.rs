//! The nemesis: injects a [`FaultPlan`] into a running world at the planned true times.
//!
//! Network faults become rules of [`crate::links`]; pauses, crashes and restarts use madsim's
//! node control (`pause`/`resume`, `kill`/`restart`); clock faults change the node's
//! [`crate::clock::Clock`]. Every injection is recorded as a `fault` event, and the end of a
//! lasting fault as a `fault_end` event, so the timeline shows cause beside effect.

use std::sync::Arc;

use locksim_core::fault::{CutMode, PauseTask};
use locksim_core::history::EventKind;
use locksim_core::{Fault, FaultPlan, Nanos, Network, NodeId};
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

/// Runs `plan` to its end (call from the supervisor; returns after the last injection).
pub async fn run_plan(world: Arc<World>, plan: FaultPlan, nodes: NodeMap) {
    let state = Arc::new(std::sync::Mutex::new(vec![
        NodeState::default();
        world.cluster.nodes() as usize
    ]));
    for tf in plan.faults {
        // madsim sleeps at least 1 ms: faults planned for the same instant must not drift apart.
        if world.now() < tf.at {
            madsim::time::sleep_until(world.instant(tf.at)).await;
        }
        inject(&world, &nodes, &state, tf.fault);
    }
}

fn all_but(world: &World, node: NodeId) -> Vec<NodeId> {
    (0..world.cluster.nodes()).filter(|&n| n != node).collect()
}

fn later(world: &Arc<World>, after: Nanos, f: impl FnOnce(&World) + 'static) {
    let world = world.clone();
    let at = world.now().saturating_add(after);
    madsim::task::spawn_local(async move {
        madsim::time::sleep_until(world.instant(at)).await;
        f(&world);
    });
}

type States = Arc<std::sync::Mutex<Vec<NodeState>>>;

fn inject(world: &Arc<World>, nodes: &NodeMap, state: &States, fault: Fault) {
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
        later(world, d, move |w| {
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
            later(world, duration, move |w| {
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
            later(world, duration, move |w| {
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
                world.tcp().crash(now, node);
            }
            world.disk(node).crash();
            world.set_leader(node, None);
            if let Some(after) = restart_after {
                let (nodes, state) = (nodes.clone(), state.clone());
                later(world, after, move |w| {
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
