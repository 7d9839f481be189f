//! Runs one scenario on a fresh madsim runtime and returns its history.

use std::sync::Arc;

use locksim_core::history::EventKind;
use locksim_core::{History, Network, Role, Scenario};
use madsim::runtime::{Handle, Runtime};

use crate::ctx::{node_addr, NodeCtx};
use crate::nemesis;
use crate::protocol::LockAlgorithm;
use crate::resource;
use crate::workload::client_main;
use crate::world::World;

/// True time the harness keeps running after the workload's duration, so that rounds in
/// flight finish and late writes land: the longest TTL plus one second
/// ([`Scenario::end`] is the duration plus this tail).
pub fn tail(scenario: &Scenario) -> u64 {
    scenario.end() - scenario.workload.duration
}

/// Runs `scenario` with `algo` and returns the recorded history.
///
/// Deterministic: the same scenario gives the same history, event for event — provided the
/// calling OS thread has not run another madsim runtime before (std's hash-map seeds and
/// madsim's thread-locals persist per thread), so run each scenario on a fresh thread, as
/// [`run_isolated`] does.
///
/// # Panics
/// When the algorithm panics, the scenario is invalid ([`Scenario::validate`]), or
/// `algo.servers()` differs from `scenario.cluster.servers`.
pub fn run(scenario: &Scenario, algo: Arc<dyn LockAlgorithm>) -> History {
    if let Err(e) = scenario.validate() {
        panic!("invalid scenario: {e}");
    }
    assert_eq!(
        algo.servers(),
        scenario.cluster.servers,
        "the algorithm needs {} servers, the scenario has {}",
        algo.servers(),
        scenario.cluster.servers
    );
    let rt = Runtime::with_seed_and_config(scenario.seed, madsim::Config::default());
    let scenario = scenario.clone();
    rt.block_on(async move {
        let world = World::new(
            scenario.cluster.clone(),
            scenario.workload.clone(),
            scenario.seed,
        );
        let h = Handle::current();
        let mut ids = Vec::new();
        for id in 0..scenario.cluster.nodes() {
            let (world, algo) = (world.clone(), algo.clone());
            let node = h
                .create_node()
                .name(scenario.cluster.name(id))
                .ip(node_addr(id).ip())
                .init(move || {
                    let (world, algo) = (world.clone(), algo.clone());
                    async move {
                        let ctx = NodeCtx::start(world, id).await;
                        match ctx.role() {
                            Role::Server => algo.serve(ctx).await,
                            Role::Client => client_main(ctx, algo).await,
                            Role::Resource => resource::serve(ctx).await,
                        }
                    }
                })
                .build();
            ids.push(node.id());
        }
        let nodes = Arc::new(ids);
        nemesis::start(
            world.clone(),
            scenario.faults.clone(),
            nodes.clone(),
            scenario.end(),
        );
        let end = scenario.end();
        let until_end = Box::pin(madsim::time::sleep_until(world.instant(end)));
        // The call deadlines' service and the tcp kernel run inside the supervisor's own
        // future, so they end (and are dropped) with the run instead of outliving it as
        // pending tasks.
        let deadlines = Box::pin(crate::deadline::service(Arc::downgrade(&world)));
        let until_end = futures_util::future::select(until_end, deadlines);
        if scenario.workload.network == Network::Tcp {
            let kernel = Box::pin(crate::tcp::kernel(Arc::downgrade(&world)));
            futures_util::future::select(until_end, kernel).await;
        } else {
            until_end.await;
        }
        let history = finish(&world, end);
        // Stop every node before the runtime goes away: their tasks hold the world and their
        // endpoints, and left running they would keep a whole run's state alive.
        for id in nodes.iter() {
            h.kill(*id);
        }
        world.tcp().shutdown();
        world.deadlines().shutdown();
        world.release_clock();
        history
    })
}

fn finish(world: &World, end: u64) -> History {
    let mut events = world.take_events();
    for e in &mut events {
        if let EventKind::Op {
            deadline: Some(d), ..
        } = &mut e.kind
        {
            d.at = world.clock(e.node).reach(d.clock, d.local, e.time);
        }
    }
    let mut links = world.links();
    if world.workload.network == Network::Tcp {
        links.settle();
    }
    History {
        events,
        end,
        messages_sent: links.sent,
        messages_dropped: links.dropped,
        messages: std::mem::take(&mut links.log),
    }
}

/// [`run`] on a fresh OS thread, so that nothing a previous run left in thread-local state can
/// change this one. A panic inside the simulation comes back as `Err` with its message.
pub fn run_isolated(scenario: &Scenario, algo: Arc<dyn LockAlgorithm>) -> Result<History, String> {
    scenario
        .validate()
        .map_err(|e| format!("invalid scenario: {e}"))?;
    let scenario = scenario.clone();
    std::thread::Builder::new()
        .name(format!("locksim-seed-{}", scenario.seed))
        .stack_size(8 << 20)
        .spawn(move || run(&scenario, algo))
        .map_err(|e| format!("cannot start a simulation thread: {e}"))?
        .join()
        .map_err(|p| {
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "the simulation panicked".to_string())
        })
}
