//! The tcp network model (issue #23): a write black-holed into a partition is retransmitted and
//! lands after the heal (S2 without fencing, none with it), a one-way cut stops the handshake
//! (writes fail unsent), tcp_retries2 gives a connection up, crashes of a process and of a host
//! differ, `duplicate` is refused, old workloads mean datagram, and runs are deterministic.

mod common;

use common::{node, scenario, setup};
use locksim_core::fault::CutMode;
use locksim_core::history::{EventKind, OpF, Phase};
use locksim_core::{Fault, FaultKind, History, Network, Property, Scenario, Workload};
use locksim_explore::{check_scenario, Setup};

const DELAYED: &[&str] = &[
    "clients=2",
    "ttl=1s",
    "duration=3s",
    "writes=3",
    "work_min=300ms",
    "work_max=300ms",
    "c1.duration=1s",
];

/// The delayed-write case of sims/tcp-delayed-write-*.toml: c2 starts late, a black hole
/// c1 | res from 500 ms to 2 s swallows c1's second write.
fn delayed(algo: &str, extra: &[&str], seed: u64) -> (Scenario, Setup) {
    let mut settings = DELAYED.to_vec();
    settings.extend_from_slice(extra);
    let st = setup(algo, &settings);
    let mut s = scenario(&st, vec![]);
    let (c1, c2, res) = (node(&s, "c1"), node(&s, "c2"), node(&s, "res"));
    s = scenario(
        &st,
        vec![
            (
                "0s",
                Fault::Pause {
                    node: c2,
                    duration: common::ns("300ms"),
                    task: Default::default(),
                },
            ),
            (
                "500ms",
                Fault::Partition {
                    a: vec![c1],
                    b: vec![res],
                    duration: common::ns("1.5s"),
                    mode: CutMode::Drop,
                },
            ),
        ],
    );
    s.seed = seed;
    (s, st)
}

fn s2_seeds(algo: &str, extra: &[&str]) -> (usize, usize) {
    let mut s2 = 0;
    let mut grants = 0;
    for seed in 1..=10 {
        let (s, st) = delayed(algo, extra, seed);
        let (v, g) = common::verdict(&s, &st);
        grants += g.iter().sum::<usize>();
        s2 += v.violates(Property::S2) as usize;
    }
    (s2, grants)
}

#[test]
fn a_black_holed_write_lands_after_the_heal_under_tcp_only() {
    let (tcp, g) = s2_seeds("central", &[]);
    assert!(g > 0, "no grants at all");
    assert!(tcp >= 5, "central over tcp: S2 in {tcp} of 10 seeds");
    let (dg, g) = s2_seeds("central", &["network=datagram"]);
    assert!(g > 0);
    assert_eq!(dg, 0, "datagram drops the write: no stale write can land");
    let (fenced, g) = s2_seeds("central-fencing", &[]);
    assert!(g > 0);
    assert_eq!(fenced, 0, "the fencing token refuses the late write");
}

#[test]
fn a_connection_given_up_delivers_nothing_late() {
    // The timed-out write's socket is closed (an orphan): RTO about 200 ms, 1 orphan retry:
    // given up about 0.6 s after the write, before the heal at 2 s.
    let (s2, g) = s2_seeds("central", &["tcp_orphan_retries=1"]);
    assert!(g > 0);
    assert_eq!(s2, 0);
    // tcp_retries2 is for connections their application still holds: not this one.
    let (s2, _) = s2_seeds("central", &["tcp_retries2=1"]);
    assert!(s2 >= 5, "{s2}");
    // With a 2 s floor the first retry is due at 2.6 s, after the heal: it lands.
    let (s2, _) = s2_seeds("central", &["tcp_rto_min=2s"]);
    assert!(s2 >= 5, "{s2}");
}

fn ops(h: &History, node: u32, f: OpF, p: Phase) -> Vec<Option<String>> {
    h.events
        .iter()
        .filter(|e| e.node == node)
        .filter_map(|e| match &e.kind {
            EventKind::Op {
                f: ef,
                phase,
                error,
                ..
            } if *ef == f && *phase == p => Some(error.clone()),
            _ => None,
        })
        .collect()
}

fn oneway(network: &str) -> History {
    let st = setup(
        "central",
        &[
            "clients=2",
            "ttl=1s",
            "duration=3s",
            "writes=3",
            &format!("network={network}"),
        ],
    );
    let s0 = scenario(&st, vec![]);
    let (c1, res) = (node(&s0, "c1"), node(&s0, "res"));
    let s = scenario(
        &st,
        vec![(
            "0s",
            Fault::PartitionOneway {
                from: vec![res],
                to: vec![c1],
                duration: common::ns("4s"),
                mode: CutMode::Drop,
            },
        )],
    );
    check_scenario(&s, st.algo.clone())
        .history
        .expect("the run completes")
}

#[test]
fn a_one_way_cut_stops_the_handshake_so_writes_fail_unsent() {
    let h = oneway("tcp");
    let c1 = 1; // n1, c1, c2, res
    let failed = ops(&h, c1, OpF::Write, Phase::Fail);
    assert!(!failed.is_empty(), "c1 wrote nothing");
    assert!(
        failed
            .iter()
            .all(|e| e.as_deref() == Some("not connected (request not sent)")),
        "{failed:?}"
    );
    assert!(ops(&h, c1, OpF::Write, Phase::Ok).is_empty());
    assert!(ops(&h, c1, OpF::Write, Phase::Info).is_empty());
    // Datagram: the requests arrive, only the answers are lost.
    let h = oneway("datagram");
    assert!(!ops(&h, c1, OpF::Write, Phase::Info).is_empty());
    assert!(ops(&h, c1, OpF::Write, Phase::Fail).is_empty());
}

/// A server crash that never restarts: under `crash=process` the clients waiting on it learn
/// at once (reset) and their next calls are refused; under `crash=host` they only time out.
fn crash_errors(kind: &str) -> Vec<String> {
    let st = setup(
        "central",
        &["clients=2", "duration=3s", &format!("crash={kind}")],
    );
    let s = scenario(
        &st,
        vec![(
            "1s",
            Fault::Crash {
                node: 0,
                restart_after: None,
            },
        )],
    );
    let h = check_scenario(&s, st.algo.clone()).history.unwrap();
    h.events
        .iter()
        .filter(|e| e.time > common::ns("1s"))
        .filter_map(|e| match &e.kind {
            EventKind::Op {
                f: OpF::Acquire,
                phase: Phase::Fail | Phase::Info,
                error: Some(m),
                ..
            } => Some(m.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_crashed_process_refuses_and_a_crashed_host_is_silent() {
    let p = crash_errors("process");
    assert!(p.iter().any(|m| m.contains("refused")), "{p:?}");
    assert!(!p.iter().any(|m| m.contains("timeout")), "{p:?}");
    let h = crash_errors("host");
    assert!(!h.is_empty());
    assert!(!h.iter().any(|m| m.contains("refused")), "{h:?}");
}

#[test]
fn duplicate_is_refused_under_tcp_and_left_out_of_drawn_plans() {
    let st = setup("central", &[]);
    let e = st.check_network(&[FaultKind::Duplicate]).unwrap_err();
    assert!(e.contains("network = \"datagram\""), "{e}");
    assert!(st.check_network(&[FaultKind::Mixed]).is_ok());
    let dg = setup("central", &["network=datagram"]);
    assert!(dg.check_network(&[FaultKind::Duplicate]).is_ok());
    // An explicit duplicate fault makes the scenario invalid under tcp.
    let mut s = st.scenario(1, &[]);
    s.faults.faults.push(locksim_core::TimedFault {
        at: 0,
        fault: Fault::Duplicate {
            from: vec![1],
            to: vec![0],
            rate_pct: 50,
            duration: 1,
        },
        after: None,
    });
    assert!(s.validate().unwrap_err().contains("TCP connection"));
    // Mixed and swarm plans under tcp hold no duplicate window, and the other faults keep
    // the times they have under datagram.
    let mut kept = 0;
    for seed in 0..200 {
        let t = st
            .scenario(seed, &[FaultKind::Mixed, FaultKind::Swarm])
            .faults;
        let d = dg
            .scenario(seed, &[FaultKind::Mixed, FaultKind::Swarm])
            .faults;
        assert!(t
            .faults
            .iter()
            .all(|f| !matches!(f.fault, Fault::Duplicate { .. })));
        let d: Vec<_> = d
            .faults
            .into_iter()
            .filter(|f| !matches!(f.fault, Fault::Duplicate { .. }))
            .collect();
        assert_eq!(t.faults, d, "seed {seed}");
        kept += d.len();
    }
    assert!(kept > 0);
}

#[test]
fn old_workloads_mean_datagram_and_new_ones_tcp() {
    let w = Workload::default();
    assert_eq!(w.network, Network::Tcp);
    let mut json = serde_json::to_value(&w).unwrap();
    assert_eq!(json["network"], "tcp", "the field is always written");
    json.as_object_mut().unwrap().remove("network");
    let old: Workload = serde_json::from_value(json).unwrap();
    assert_eq!(old.network, Network::Datagram);
    let st = setup("central", &[]);
    assert_eq!(st.workload.network, Network::Tcp);
}

#[test]
fn tcp_runs_are_deterministic() {
    for algo in ["central", "redlock", "raft-lease"] {
        let st = setup(algo, &["duration=4s"]);
        for seed in 0..8 {
            let s = st.scenario(seed, &[FaultKind::Mixed]);
            let a = check_scenario(&s, st.algo.clone()).history.unwrap();
            let b = check_scenario(&s, st.algo.clone()).history.unwrap();
            assert_eq!(a.digest(), b.digest(), "{algo} seed {seed}");
            assert_eq!(a.messages, b.messages, "{algo} seed {seed}");
        }
    }
}

/// Runs `algo` with `settings` and exactly the faults `plan` (true time, fault, with node
/// names resolved by `plan`) at `seed`: the verdict and the history.
fn run(
    algo: &str,
    settings: &[&str],
    plan: impl Fn(&Scenario) -> Vec<(&'static str, Fault)>,
    seed: u64,
) -> (locksim_core::Verdict, History) {
    let st = setup(algo, settings);
    let s0 = scenario(&st, vec![]);
    let mut s = scenario(&st, plan(&s0));
    s.seed = seed;
    let out = check_scenario(&s, st.algo.clone());
    assert!(out.error.is_none(), "simulation failed: {:?}", out.error);
    (out.verdict, out.history.expect("the run completes"))
}

fn grants(h: &History) -> usize {
    h.events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::Op {
                    f: OpF::Acquire,
                    phase: Phase::Ok,
                    ..
                }
            )
        })
        .count()
}

/// /tmp/fresh-net/crashed-client-write.toml (#23 follow-up item 1): c1's write at ~200 ms is
/// black-holed by c1 | res (150 ms to 900 ms) and c1 is killed at 300 ms for good.
fn crashed_client_write(crash: &str, seed: u64) -> (locksim_core::Verdict, History) {
    run(
        "central",
        &[
            "clients=2",
            "ttl=600ms",
            "duration=2500ms",
            "writes=3",
            "work_min=100ms",
            "work_max=100ms",
            "think_max=0s",
            "retry_delay=50ms",
            "rpc_timeout=300ms",
            &format!("crash={crash}"),
        ],
        |s| {
            let (c1, c2, res) = (node(s, "c1"), node(s, "c2"), node(s, "res"));
            vec![
                (
                    "0s",
                    Fault::Pause {
                        node: c2,
                        duration: common::ns("300ms"),
                        task: Default::default(),
                    },
                ),
                (
                    "150ms",
                    Fault::Partition {
                        a: vec![c1],
                        b: vec![res],
                        duration: common::ns("750ms"),
                        mode: CutMode::Drop,
                    },
                ),
                (
                    "300ms",
                    Fault::Crash {
                        node: c1,
                        restart_after: None,
                    },
                ),
            ]
        },
        seed,
    )
}

#[test]
fn a_killed_process_s_kernel_still_delivers_its_unacknowledged_write() {
    // Linux closes a SIGKILLed process's sockets as close() does: the orphan retransmits
    // the write after the heal (real Redis: S2 in 3 of 3). A crashed host sends nothing.
    let (mut process, mut host, mut g) = (0, 0, 0);
    for seed in 1..=10 {
        let (v, h) = crashed_client_write("process", seed);
        g += grants(&h);
        process += v.violates(Property::S2) as usize;
        let (v, h) = crashed_client_write("host", seed);
        g += grants(&h);
        host += v.violates(Property::S2) as usize;
    }
    assert!(g > 0, "no grants at all");
    assert!(process >= 8, "crash=process: S2 in {process} of 10 seeds");
    assert_eq!(host, 0, "crash=host: what was in flight dies with the host");
}

/// Seed 1 of the same story: the partition swallowed c1's ACK of the resource's reply to its
/// first write, so the resource retransmits that reply after c1 was killed. The orphan had
/// received it: Linux acknowledges the copy (only new data after close() makes it reset the
/// connection, TCPAbortOnData), and the orphan's own unacknowledged write still lands at
/// 1.72 s, after c2's writes. The model reset the connection on the copy and dropped the
/// write: no S2, where real Redis shows it in 10 of 10 runs.
#[test]
fn a_killed_process_s_orphan_acknowledges_a_retransmitted_copy_and_keeps_sending() {
    let (v, h) = crashed_client_write("process", 1);
    assert!(v.violates(Property::S2), "{:?}", v.violations);
    let late = h.events.iter().any(|e| {
        e.time > common::ns("1500ms")
            && matches!(
                e.kind,
                locksim_core::history::EventKind::WriteAccepted { handle: 1, .. }
            )
    });
    assert!(late, "c1's write (handle 1) is accepted after the heal");
}

/// The errors of `node`'s operations, with their times.
fn op_errors(h: &History, node: u32) -> Vec<(u64, String)> {
    h.events
        .iter()
        .filter(|e| e.node == node)
        .filter_map(|e| match &e.kind {
            EventKind::Op { error: Some(m), .. } => Some((e.time, m.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn a_crashed_server_s_fin_and_rst_obey_the_partition() {
    // /tmp/fresh-net/crash-partitioned.toml: c1 is cut from n1 from 150 ms to 5.15 s, n1
    // crashes at 400 ms (restarted at 1.4 s). Its kernel's FIN (or RST) is a segment the
    // cut drops: c1 hears nothing from n1 before the heal.
    for seed in 1..=3 {
        let (_, h) = run(
            "central",
            &[
                "timeout=5s",
                "clients=1",
                "ttl=10s",
                "duration=3s",
                "writes=1",
                "work_min=100ms",
                "work_max=100ms",
            ],
            |s| {
                let (c1, n1) = (node(s, "c1"), node(s, "n1"));
                vec![
                    (
                        "150ms",
                        Fault::Partition {
                            a: vec![c1],
                            b: vec![n1],
                            duration: common::ns("5s"),
                            mode: CutMode::Drop,
                        },
                    ),
                    (
                        "400ms",
                        Fault::Crash {
                            node: n1,
                            restart_after: Some(common::ns("1s")),
                        },
                    ),
                ]
            },
            seed,
        );
        let c1 = 1;
        let errors = op_errors(&h, c1);
        assert!(
            !errors
                .iter()
                .any(|(_, m)| m.contains("reset") || m.contains("closed")),
            "seed {seed}: {errors:?}"
        );
        assert!(grants(&h) > 0, "seed {seed}: c1 never got the lock");
    }
}

#[test]
fn a_crashed_server_s_kernel_sends_fin_so_waiting_calls_read_eof() {
    // A server process killed while a call waits on it: its kernel sends FIN (it had read
    // the request), so the call ends "connection closed by peer", not at once and not
    // "reset"; the next calls are refused until it restarts.
    let mut closed = 0;
    for seed in 1..=10 {
        let (_, h) = run(
            "central",
            &["clients=3", "duration=3s", "crash=process"],
            |_| {
                vec![(
                    "1s",
                    Fault::Crash {
                        node: 0,
                        restart_after: None,
                    },
                )]
            },
            seed,
        );
        let errors: Vec<String> = (1..=3)
            .flat_map(|c| op_errors(&h, c))
            .filter(|(t, _)| *t > common::ns("1s"))
            .map(|(_, m)| m)
            .collect();
        closed += errors
            .iter()
            .filter(|m| m.contains("closed by peer"))
            .count();
        assert!(
            !errors.iter().any(|m| m.contains("reset")),
            "seed {seed}: {errors:?}"
        );
    }
    assert!(closed > 0, "no call was waiting on the server when it died");
}

/// /tmp/fresh-net/orphan-real.toml (item 2): c1's write is black-holed by a 60 s cut from
/// 500 ms; c1 times it out and closes its socket, so the connection is an orphan.
fn orphaned_write(extra: &[&str], seed: u64) -> (locksim_core::Verdict, History) {
    let mut settings = vec![
        "clients=2",
        "ttl=1s",
        "duration=110s",
        "writes=3",
        "work_min=300ms",
        "work_max=300ms",
        "c1.duration=1s",
    ];
    settings.extend_from_slice(extra);
    run(
        "central",
        &settings,
        |s| {
            let (c1, c2, res) = (node(s, "c1"), node(s, "c2"), node(s, "res"));
            vec![
                (
                    "0s",
                    Fault::Pause {
                        node: c2,
                        duration: common::ns("300ms"),
                        task: Default::default(),
                    },
                ),
                (
                    "500ms",
                    Fault::Partition {
                        a: vec![c1],
                        b: vec![res],
                        duration: common::ns("60s"),
                        mode: CutMode::Drop,
                    },
                ),
            ]
        },
        seed,
    )
}

#[test]
fn an_orphaned_connection_gives_up_after_tcp_orphan_retries() {
    // Linux: 8 orphan retries, given up about 102 s after the send, before the heal at
    // 60.5 s is answered by the 9th retransmission (real Redis: safe). tcp_retries2 (15)
    // would retransmit at about 103 s, after the heal: the stale write would land.
    let (mut s2_default, mut s2_15, mut g) = (0, 0, 0);
    for seed in 1..=3 {
        let (v, h) = orphaned_write(&[], seed);
        g += grants(&h);
        s2_default += v.violates(Property::S2) as usize;
        let (v, _) = orphaned_write(&["tcp_orphan_retries=15"], seed);
        s2_15 += v.violates(Property::S2) as usize;
    }
    assert!(g > 0);
    assert_eq!(s2_default, 0, "the orphan outlived tcp_orphan_retries");
    assert!(
        s2_15 >= 2,
        "with 15 orphan retries the write lands: {s2_15} of 3"
    );
}

#[test]
fn a_connection_given_up_by_tcp_retries2_says_timed_out() {
    // The call waits 5 s; its connection gives up after 1 retransmission (about 0.6 s):
    // Linux reports ETIMEDOUT, not a reset.
    let (_, h) = run(
        "central",
        &["clients=1", "duration=3s", "timeout=5s", "tcp_retries2=1"],
        |s| {
            let (c1, n1) = (node(s, "c1"), node(s, "n1"));
            vec![(
                "500ms",
                Fault::Partition {
                    a: vec![c1],
                    b: vec![n1],
                    duration: common::ns("5s"),
                    mode: CutMode::Drop,
                },
            )]
        },
        1,
    );
    let errors = op_errors(&h, 1);
    assert!(
        errors.iter().any(|(_, m)| m == "connection timed out"),
        "{errors:?}"
    );
    assert!(
        !errors.iter().any(|(_, m)| m.contains("reset")),
        "{errors:?}"
    );
}

#[test]
fn tcp_settings_that_would_panic_the_model_are_refused_by_name() {
    let bad = |kv: (&str, &str)| {
        Setup::registered("central", &[(kv.0.to_string(), kv.1.to_string())])
            .err()
            .unwrap_or_else(|| panic!("{kv:?} accepted"))
    };
    let e = bad(("tcp_rto_min", "121s"));
    assert!(e.contains("tcp_rto_min") && e.contains("120s"), "{e}");
    assert!(Setup::registered("central", &[("tcp_rto_min".into(), "120s".into())]).is_ok());
    let e = bad(("tcp_orphan_retries", "256"));
    assert!(e.contains("tcp_orphan_retries"), "{e}");
    let w = Workload {
        tcp_rto_min: common::ns("1000s"),
        ..Workload::default()
    };
    assert!(w.validate().unwrap_err().contains("tcp_rto_min"));
}

#[test]
fn a_killed_server_s_kernel_still_delivers_its_unacknowledged_reply() {
    // n1 grants c1's first acquire but the reply is swallowed (drop_replies until 600 ms);
    // n1 is killed at 300 ms for good. Its orphaned socket retransmits the reply after the
    // window: c1's acquire (timeout 3 s) ends ok after n1 died, not reset at the crash.
    let mut late = 0;
    for seed in 1..=5 {
        let (_, h) = run(
            "central",
            &["clients=1", "duration=2s", "timeout=3s"],
            |s| {
                let (c1, n1) = (node(s, "c1"), node(s, "n1"));
                vec![
                    (
                        "0s",
                        Fault::DropReplies {
                            clients: vec![c1],
                            servers: vec![n1],
                            duration: common::ns("600ms"),
                        },
                    ),
                    (
                        "300ms",
                        Fault::Crash {
                            node: n1,
                            restart_after: None,
                        },
                    ),
                ]
            },
            seed,
        );
        let c1 = 1;
        late += h
            .events
            .iter()
            .filter(|e| e.node == c1 && e.time > common::ns("600ms"))
            .filter(|e| {
                matches!(
                    e.kind,
                    EventKind::Op {
                        f: OpF::Acquire,
                        phase: Phase::Ok,
                        ..
                    }
                )
            })
            .count();
    }
    assert!(
        late >= 4,
        "acquires answered by the dead server's kernel: {late} of 5"
    );
}
