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
fn a_connection_given_up_by_tcp_retries2_delivers_nothing_late() {
    // RTO 200 ms, 1 retry: given up about 0.6 s after the write, before the heal at 2 s.
    let (s2, g) = s2_seeds("central", &["tcp_retries2=1"]);
    assert!(g > 0);
    assert_eq!(s2, 0);
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
