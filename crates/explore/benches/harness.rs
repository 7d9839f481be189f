//! What locksim costs on top of bare madsim.
//!
//! # What is measured
//!
//! * `harness/redlock-mixed` — the whole pipeline ([`check_scenario`]: a fresh OS thread, a
//!   fresh madsim runtime, the simulation with its clocks, fault rules and recorder, then every
//!   checker over the history) for the standard scenario: `redlock` with 5 masters, 3 clients,
//!   10 s of simulated workload, fault kind `mixed`. One iteration runs the [`SEEDS`] fixed
//!   seeds, so no single lucky seed decides the figure. Throughput: seeds/s.
//!   The scenario runs on the default network model (`tcp`).
//! * `harness-messages/redlock-mixed` — the very same work, reported as simulated messages/s
//!   (the total `messages_sent` of those seeds, counted once before measuring).
//!   `harness-messages/redlock-mixed-datagram` is the same scenario under `network =
//!   "datagram"` (whose messages travel over madsim's own network, as bare madsim's do), with
//!   its own `bare-madsim/same-messages-datagram` matched to its message count: issue #31's
//!   pair.
//! * `harness/redlock-50-clients-mixed` — the standard redlock scenario with 50 clients
//!   (59 nodes), the same seeds: the many-client cell. Throughput: seeds/s.
//! * `harness/raft-lease-mixed` — the same pipeline for the standard `raft-lease` scenario:
//!   3 Raft replicas, 3 clients, 10 s of simulated workload, fault kind `mixed`, the same
//!   seeds. Throughput: seeds/s. (Raft's heartbeats every 20 ms tick make it send several
//!   times the messages of Redlock.)
//! * `harness/redis-failover-mixed` (and each name of [`REPLICATED`]) — the same pipeline for
//!   a replicated lock service at its defaults, 3 clients, 10 s, fault kind `mixed`, the same
//!   seeds. Throughput: seeds/s. (`cargo bench -p locksim-explore --bench harness -- NAME`
//!   measures one.)
//! * `network/ALGO-matrix-tcp` and `network/ALGO-matrix-datagram` (for `central`, `redlock`
//!   and `raft-lease`) — the pipeline over the default campaign matrix's cells (every kind of
//!   [`FaultKind::DEFAULT_MATRIX`], [`MATRIX_SEEDS`] seeds each) under each network model, so
//!   the two figures give what the tcp model costs per seed (issue #23 asks at most 1.5×).
//!   Throughput: seeds/s. (`cargo bench -p locksim-explore --bench harness -- network --quick`.)
//! * `bare-madsim/same-messages` (and `…-datagram`) — madsim alone moving the same messages
//!   (as many as the matching `harness-messages` run sent per seed): per seed a fresh OS
//!   thread and a fresh runtime, 9 nodes (5 masters, 3 clients and the resource, as in the
//!   scenario), and the clients doing request/response pairs with the servers over
//!   [`madsim::net::Endpoint`] until as many messages as the harness's average seed sent have
//!   moved. Throughput: messages/s.
//!
//! # Why the comparison is fair
//!
//! Both sides move the same number of messages among the same number of nodes with madsim's
//! default network latency (under `tcp` the harness draws each packet's latency from the same
//! uniform 1–10 ms, from its own seeded stream), and both pay one OS thread (same stack size as
//! `locksim_sim::run_isolated`) and one runtime per seed. So the ratio of the two messages/s
//! figures (`bare-madsim` over `harness-messages`) is what locksim's algorithm code, fault
//! injection, history recording and checking cost on top of the message passing madsim has to
//! do anyway. A one-shot calibration line on stderr gives the message counts and a first
//! rough timing of both sides.
//!
//! # How to run
//!
//! ```text
//! cargo bench -p locksim-explore --bench harness
//! ```
//!
//! Sample sizes are small (10 samples in about 8 s per benchmark) so that the measuring takes
//! well under a minute on two cores, after the build. Criterion prints throughput as
//! `elem/s`: seeds/s for `harness`, messages/s for the other two.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use futures_util::future::join_all;
use locksim_core::FaultKind;
use locksim_explore::{check_scenario, Setup};
use madsim::net::Endpoint;
use madsim::runtime::Runtime;

/// The replicated lock services measured like `raft-lease` (`harness/NAME-mixed`).
const REPLICATED: &[&str] = &["redis-failover", "consul-session", "zookeeper"];
/// Seeds per fault kind of one `network/…` iteration.
const MATRIX_SEEDS: std::ops::Range<u64> = 0..4;
/// The seeds one iteration runs.
const SEEDS: std::ops::Range<u64> = 0..16;
/// Lock servers of the standard redlock scenario (its 5 masters) plus the resource.
const SERVERS: u8 = 6;
/// Clients of the standard scenario.
const CLIENTS: u8 = 3;
/// Tag of requests; each reply carries the fresh tag its request asked for, as in locksim.
const TAG_REQUEST: u64 = 1;
const PORT: u16 = 7000;
/// Stack size of a simulation thread, the same as `locksim_sim::run_isolated` uses.
const STACK: usize = 8 << 20;

fn standard_setup() -> Setup {
    Setup::registered("redlock", &[]).expect("redlock is a registered algorithm")
}

/// Runs every seed of [`SEEDS`] through the whole pipeline; returns the messages they sent.
fn run_harness(setup: &Setup) -> u64 {
    SEEDS
        .map(|seed| {
            let scenario = setup.scenario(seed, &[FaultKind::Mixed]);
            let out = check_scenario(&scenario, setup.algo.clone());
            let history = out
                .history
                .unwrap_or_else(|| panic!("seed {seed}: the simulation failed: {:?}", out.error));
            history.messages_sent
        })
        .sum()
}

fn addr(node: u8) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, node + 1)), PORT)
}

/// A server: answers every request with a small reply under the tag the request names.
async fn serve(ep: Endpoint) {
    loop {
        let Ok((payload, from)) = ep.recv_from_raw(TAG_REQUEST).await else {
            return;
        };
        let (reply_tag, value) = *payload
            .downcast::<(u64, u64)>()
            .expect("requests are (reply tag, value)");
        // Sending only fails when the socket is gone.
        let _ = ep.send_to_raw(from, reply_tag, Box::new(value + 1)).await;
    }
}

/// A client: `calls` request/response pairs, round robin over the servers, one at a time.
async fn call_servers(ep: Endpoint, calls: u64) {
    for call in 0..calls {
        let server = addr((call % u64::from(SERVERS)) as u8);
        let reply_tag = (1 << 20) + call;
        ep.send_to_raw(server, TAG_REQUEST, Box::new((reply_tag, call)))
            .await
            .expect("the client's socket is open");
        let (reply, _) = ep
            .recv_from_raw(reply_tag)
            .await
            .expect("the client's socket is open");
        assert_eq!(*reply.downcast::<u64>().expect("replies are u64"), call + 1);
    }
}

/// Bare madsim on a fresh thread: 9 nodes, `pairs` request/response pairs split among the
/// clients. Returns once every reply has arrived.
fn run_bare(seed: u64, pairs: u64) {
    std::thread::Builder::new()
        .stack_size(STACK)
        .spawn(move || {
            let rt = Runtime::with_seed_and_config(seed, madsim::Config::default());
            for s in 0..SERVERS {
                rt.create_node()
                    .ip(addr(s).ip())
                    .init(move || async move {
                        let ep = Endpoint::bind(addr(s)).await.expect("a free address");
                        serve(ep).await;
                    })
                    .build();
            }
            let clients: Vec<_> = (0..CLIENTS)
                .map(|c| {
                    let me = SERVERS + c;
                    // The first clients take the remainder, so that exactly `pairs` calls run.
                    let calls = pairs / u64::from(CLIENTS)
                        + u64::from(u64::from(c) < pairs % u64::from(CLIENTS));
                    let node = rt.create_node().ip(addr(me).ip()).build();
                    node.spawn(async move {
                        let ep = Endpoint::bind(addr(me)).await.expect("a free address");
                        call_servers(ep, calls).await;
                    })
                })
                .collect();
            rt.block_on(async move {
                for done in join_all(clients).await {
                    done.expect("a client finished");
                }
            });
        })
        .expect("a simulation thread")
        .join()
        .expect("the bare simulation did not panic");
}

/// Runs every seed of [`SEEDS`] on bare madsim, `pairs` pairs each.
fn run_bare_seeds(pairs: u64) {
    for seed in SEEDS {
        run_bare(seed, pairs);
    }
}

fn configure(group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8));
}

/// Runs [`MATRIX_SEEDS`] of every kind of the default matrix; returns the number of runs.
fn run_matrix(setup: &Setup) -> u64 {
    let mut runs = 0;
    for &kind in FaultKind::DEFAULT_MATRIX.iter() {
        for seed in MATRIX_SEEDS {
            let out = check_scenario(&setup.scenario(seed, &[kind]), setup.algo.clone());
            assert!(out.error.is_none(), "seed {seed} failed: {:?}", out.error);
            runs += 1;
        }
    }
    runs
}

fn network_benches(c: &mut Criterion) {
    for algo in ["central", "redlock", "raft-lease"] {
        for network in ["tcp", "datagram"] {
            let st = Setup::registered(algo, &[("network".into(), network.into())])
                .expect("a registered algorithm");
            let runs =
                (FaultKind::DEFAULT_MATRIX.len() as u64) * (MATRIX_SEEDS.end - MATRIX_SEEDS.start);
            let mut group = c.benchmark_group("network");
            configure(&mut group);
            group.throughput(Throughput::Elements(runs));
            group.bench_function(format!("{algo}-matrix-{network}"), |b| {
                b.iter(|| run_matrix(&st))
            });
            group.finish();
        }
    }
}

/// Calibration of one network model: the harness's messages over [`SEEDS`] and the
/// request/response pairs per seed that bare madsim moves to match them.
struct Calibrated {
    harness_messages: u64,
    pairs: u64,
    bare_messages: u64,
}

/// Runs the seeds once on each side, for the message count and a rough cost of each.
fn calibrate(setup: &Setup, network: &str) -> Calibrated {
    let seeds = SEEDS.end - SEEDS.start;
    let t = Instant::now();
    let harness_messages = run_harness(setup);
    let harness_time = t.elapsed();
    let avg = harness_messages as f64 / seeds as f64;
    // Bare madsim moves messages in request/response pairs: the average count, rounded to pairs.
    let pairs = (avg / 2.0).round() as u64;
    let bare_messages = 2 * pairs * seeds;
    let t = Instant::now();
    run_bare_seeds(pairs);
    let bare_time = t.elapsed();
    eprintln!(
        "calibration ({network}): {seeds} seeds of redlock/mixed sent {harness_messages} \
         messages ({avg:.1} per seed) in {harness_time:.2?}; bare madsim moved \
         {bare_messages} messages ({} per seed) in {bare_time:.2?}",
        2 * pairs
    );
    Calibrated {
        harness_messages,
        pairs,
        bare_messages,
    }
}

/// `harness-messages/redlock-mixed{suffix}` and `bare-madsim/same-messages{suffix}`, one
/// after the other, so that their ratio is measured under the same load.
fn messages_pair(c: &mut Criterion, setup: &Setup, cal: &Calibrated, suffix: &str) {
    let mut group = c.benchmark_group("harness-messages");
    configure(&mut group);
    group.throughput(Throughput::Elements(cal.harness_messages));
    group.bench_function(format!("redlock-mixed{suffix}"), |b| {
        b.iter(|| run_harness(setup))
    });
    group.finish();

    let pairs = cal.pairs;
    let mut group = c.benchmark_group("bare-madsim");
    configure(&mut group);
    group.throughput(Throughput::Elements(cal.bare_messages));
    group.bench_function(format!("same-messages{suffix}"), |b| {
        b.iter(|| run_bare_seeds(pairs))
    });
    group.finish();
}

fn benches(c: &mut Criterion) {
    let setup = standard_setup();
    let seeds = SEEDS.end - SEEDS.start;
    let cal = calibrate(&setup, "tcp");
    let datagram = Setup::registered("redlock", &[("network".into(), "datagram".into())])
        .expect("redlock is a registered algorithm");
    let cal_datagram = calibrate(&datagram, "datagram");

    let mut group = c.benchmark_group("harness");
    configure(&mut group);
    group.throughput(Throughput::Elements(seeds));
    group.bench_function("redlock-mixed", |b| b.iter(|| run_harness(&setup)));
    group.finish();

    let raft = Setup::registered("raft-lease", &[]).expect("raft-lease is a registered algorithm");
    let mut group = c.benchmark_group("harness");
    configure(&mut group);
    group.throughput(Throughput::Elements(seeds));
    group.bench_function("raft-lease-mixed", |b| b.iter(|| run_harness(&raft)));
    group.finish();

    // The replicated lock services of issue #13, each at its defaults.
    for name in REPLICATED {
        let st = Setup::registered(name, &[]).expect("a registered algorithm");
        let mut group = c.benchmark_group("harness");
        configure(&mut group);
        group.throughput(Throughput::Elements(seeds));
        group.bench_function(format!("{name}-mixed"), |b| b.iter(|| run_harness(&st)));
        group.finish();
    }

    // Many clients: the standard redlock scenario with 50 clients (59 nodes).
    let many = Setup::registered("redlock", &[("clients".into(), "50".into())])
        .expect("redlock takes up to 64 clients");
    let mut group = c.benchmark_group("harness");
    configure(&mut group);
    group.throughput(Throughput::Elements(seeds));
    group.bench_function("redlock-50-clients-mixed", |b| {
        b.iter(|| run_harness(&many))
    });
    group.finish();

    messages_pair(c, &setup, &cal, "");
    messages_pair(c, &datagram, &cal_datagram, "-datagram");
}

criterion_group!(harness, benches, network_benches);
criterion_main!(harness);
