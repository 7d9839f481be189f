//! What a holder does (issue #11): renewals move its deadline, a renew deadline stops it, a
//! step-down keeps it acting a while, a give-up renewer stops renewing, task pauses stall one
//! task, a reset cut refuses at once, a crashed client holds nothing.

mod common;

use common::{node, ns, scenario, setup};
use locksim_core::fault::{CutMode, PauseTask};
use locksim_core::history::{EventKind, LostCause, OpF, Phase};
use locksim_core::{Event, Fault, History, NodeId};
use locksim_explore::check_scenario;

fn run(s: &locksim_core::Scenario, st: &locksim_explore::Setup) -> History {
    let out = check_scenario(s, st.algo.clone());
    out.history.expect("the simulation runs")
}

/// The client's operations of function `f` in phase `p`, as (time, event).
fn ops(h: &History, node: NodeId, f: OpF, p: Phase) -> Vec<&Event> {
    h.events
        .iter()
        .filter(|e| {
            e.node == node
                && matches!(&e.kind, EventKind::Op { f: ef, phase, .. } if *ef == f && *phase == p)
        })
        .collect()
}

fn lost(h: &History, node: NodeId) -> Vec<(&Event, LostCause)> {
    h.events
        .iter()
        .filter(|e| e.node == node)
        .filter_map(|e| match &e.kind {
            EventKind::Lost { reason, .. } => Some((e, LostCause::of(reason))),
            _ => None,
        })
        .collect()
}

fn deadline_of(e: &Event) -> Option<u64> {
    match &e.kind {
        EventKind::Op { deadline, .. } => deadline.map(|d| d.at),
        _ => None,
    }
}

/// One client, one long hold: the acquire and every renewal carry a deadline, each renewal's
/// later than the last, and the hold ends at its release, not at the acquire's deadline.
#[test]
fn each_renewal_moves_the_deadline() {
    let st = setup(
        "central",
        &[
            "clients=1",
            "ttl=1s",
            "renew_every=300ms",
            "writes=10",
            "work_min=200ms",
            "work_max=200ms",
        ],
    );
    let s = scenario(&st, vec![]);
    let h = run(&s, &st);
    let c1 = node(&s, "c1");
    let acquired = ops(&h, c1, OpF::Acquire, Phase::Ok);
    let renewed = ops(&h, c1, OpF::Extend, Phase::Ok);
    assert!(renewed.len() >= 5, "{} renewals", renewed.len());
    let first = deadline_of(acquired[0]).expect("the acquire's deadline");
    let mut last = first;
    for r in renewed.iter().take_while(|r| r.time < 2_000_000_000) {
        let d = deadline_of(r).expect("a renewal's deadline");
        assert!(
            d > last,
            "a renewal at {} did not move the deadline",
            r.time
        );
        last = d;
    }
    let holds = locksim_check::derive_holds(&h);
    assert!(
        matches!(holds[0].ended_by, locksim_check::HoldEnd::Release(_)),
        "{:?}",
        holds[0]
    );
    assert!(holds[0].end > first, "the hold outlived its first deadline");
}

/// c1 (the only client) holds from the start and is cut off from the server at 1 s for good.
fn cut_off(extra: &[&str]) -> (History, NodeId) {
    let mut settings = vec![
        "clients=1",
        "ttl=3s",
        "renew_every=500ms",
        "writes=60",
        "work_min=100ms",
        "work_max=100ms",
        "check_validity=false",
        "duration=8s",
    ];
    settings.extend_from_slice(extra);
    let st = setup("central", &settings);
    let probe = st.scenario(1, &[]);
    let (c1, n1) = (node(&probe, "c1"), node(&probe, "n1"));
    let s = scenario(
        &st,
        vec![(
            "1s",
            Fault::Partition {
                a: vec![c1],
                b: vec![n1],
                duration: ns("20s"),
                mode: CutMode::Drop,
            },
        )],
    );
    (run(&s, &st), c1)
}

#[test]
fn a_renew_deadline_stops_the_holder_and_a_step_down_keeps_it_acting_a_while() {
    let writes_after = |h: &History, c: NodeId, t: u64| {
        ops(h, c, OpF::Write, Phase::Invoke)
            .iter()
            .filter(|w| w.time > t)
            .map(|w| w.time)
            .max()
    };
    // Without a renew deadline it writes on (it trusts its grant).
    let (h, c1) = cut_off(&[]);
    assert!(lost(&h, c1).is_empty(), "{:?}", lost(&h, c1));
    assert!(writes_after(&h, c1, ns("4s")).is_some());
    // With one of 1.5 s it stops 1.5 s after the send of its last good renewal (≤ 1 s).
    let (h, c1) = cut_off(&["renew_deadline=1500ms"]);
    let l = lost(&h, c1);
    assert_eq!(l.len(), 1, "{l:?}");
    assert_eq!(l[0].1, LostCause::RenewDeadline);
    let stop = l[0].0.time;
    assert!(
        stop <= ns("2.5s") && stop >= ns("1.5s"),
        "stopped at {stop}"
    );
    assert_eq!(
        writes_after(&h, c1, stop),
        None,
        "wrote after its renew deadline"
    );
    // With a step-down of 1 s on top, it keeps writing for that second, and no longer.
    let (h, c1) = cut_off(&["renew_deadline=1500ms", "step_down=1s"]);
    let stop = lost(&h, c1)[0].0.time;
    let last = writes_after(&h, c1, stop).expect("writes while stepping down");
    assert!(
        last > stop + ns("800ms") && last <= stop + ns("1s"),
        "{stop} .. {last}"
    );
}

#[test]
fn a_give_up_renewer_stops_at_its_first_failure() {
    let retries = |extra: &str| {
        let (h, c1) = cut_off(&[extra]);
        ops(&h, c1, OpF::Extend, Phase::Invoke)
            .iter()
            .filter(|e| e.time > ns("1s"))
            .count()
    };
    // until-expiry: a renewal every 500/3 ms until the 3 s lease would end; give-up: one.
    assert!(retries("renew_retry=until-expiry") >= 8);
    assert_eq!(retries("renew_retry=give-up"), 1);
}

#[test]
fn a_renewal_stall_stops_renewals_and_nothing_else() {
    let st = setup(
        "central",
        &[
            "clients=1",
            "ttl=5s",
            "renew_every=200ms",
            "writes=100",
            "work_min=50ms",
            "work_max=50ms",
        ],
    );
    let probe = st.scenario(1, &[]);
    let c1 = node(&probe, "c1");
    let s = scenario(
        &st,
        vec![(
            "1s",
            Fault::Pause {
                node: c1,
                duration: ns("2s"),
                task: PauseTask::Renewal,
            },
        )],
    );
    let h = run(&s, &st);
    let inside = |f: OpF| {
        ops(&h, c1, f, Phase::Invoke)
            .iter()
            .filter(|e| e.time > ns("1.01s") && e.time < ns("3s"))
            .count()
    };
    assert_eq!(
        inside(OpF::Extend),
        0,
        "renewed while its renewal task was stalled"
    );
    assert!(inside(OpF::Write) > 20, "the work stopped too");
    assert!(ops(&h, c1, OpF::Extend, Phase::Invoke)
        .iter()
        .any(|e| e.time > ns("3s")));
}

#[test]
fn a_reset_cut_refuses_at_once_and_a_drop_cut_times_out() {
    // Under tcp a black hole from the start stops the handshake: the request never left, so
    // the acquire fails (not connected) when it times out, rather than being unknown.
    for (network, at_once, black_hole) in [
        ("datagram", ns("2ms"), Phase::Info),
        ("tcp", ns("10ms"), Phase::Fail),
    ] {
        reset_and_drop(network, at_once, black_hole);
    }
}

/// "At once" is 1 ms under datagram (the simulator's shortest wait) and one packet latency
/// (1 to 10 ms) under tcp, where the RST answers the SYN.
fn reset_and_drop(network: &str, at_once: u64, black_hole: Phase) {
    let attempt = |mode: CutMode| {
        let net = format!("network={network}");
        let st = setup("central", &["clients=1", "duration=3s", &net]);
        let probe = st.scenario(1, &[]);
        let (c1, n1) = (node(&probe, "c1"), node(&probe, "n1"));
        let s = scenario(
            &st,
            vec![(
                "0s",
                Fault::Partition {
                    a: vec![c1],
                    b: vec![n1],
                    duration: ns("10s"),
                    mode,
                },
            )],
        );
        let h = run(&s, &st);
        let invoked = ops(&h, c1, OpF::Acquire, Phase::Invoke)[0].time;
        let done = h
            .events
            .iter()
            .find(|e| {
                e.node == c1
                    && matches!(&e.kind, EventKind::Op { f: OpF::Acquire, phase, .. } if *phase != Phase::Invoke)
            })
            .expect("the acquire completes");
        let phase = match &done.kind {
            EventKind::Op { phase, .. } => *phase,
            _ => unreachable!(),
        };
        (phase, done.time - invoked)
    };
    let (phase, took) = attempt(CutMode::Reset);
    assert_eq!(
        phase,
        Phase::Fail,
        "a refused connection: the request surely did not arrive"
    );
    assert!(took <= at_once, "{network}: took {took} ns");
    let (phase, took) = attempt(CutMode::Drop);
    assert_eq!(phase, black_hole, "{network}: a black hole");
    assert!(took >= ns("100ms"), "took {took} ns");
}

#[test]
fn a_crashed_client_holds_nothing_and_the_lock_comes_back() {
    let st = setup(
        "central",
        &["clients=2", "writes=20", "work_min=100ms", "work_max=100ms"],
    );
    let probe = st.scenario(1, &[]);
    let c1 = node(&probe, "c1");
    let s = scenario(
        &st,
        vec![(
            "500ms",
            Fault::Crash {
                node: c1,
                restart_after: None,
            },
        )],
    );
    let h = run(&s, &st);
    assert!(
        h.events.iter().all(|e| e.node != c1
            || e.time <= ns("501ms")
            || matches!(e.kind, EventKind::Fault { .. })),
        "a crashed client acted"
    );
    // (The nemesis strikes at 500 ms plus the runtime's few nanoseconds of scheduling.)
    for hold in locksim_check::derive_holds(&h)
        .iter()
        .filter(|x| x.client == c1)
    {
        assert!(hold.end <= ns("501ms"), "{hold:?}");
    }
    let c2 = node(&s, "c2");
    assert!(
        !ops(&h, c2, OpF::Acquire, Phase::Ok).is_empty(),
        "c2 never got the lock"
    );
}

/// Issue #24, item 1: a renew deadline counts from the grant, not from the send of an acquire
/// that waited in the lock's queue. Two clients of a blocking lock (raft-lease `lock_wait`,
/// zookeeper, consul-session) with a 2 s renew deadline, no fault: the waiter waits longer than
/// the deadline, then renews every 300 ms — it must keep its grant, not give it up on arrival.
#[test]
fn a_renew_deadline_counts_from_the_grant_of_a_blocking_acquire() {
    for algo in ["raft-lease", "zookeeper", "consul-session"] {
        let st = setup(
            algo,
            &[
                "clients=2",
                "ttl=3s",
                "lock_wait=30s",
                "renew_every=300ms",
                "renew_deadline=2s",
                "duration=30s",
                "writes=20",
                "work_min=100ms",
                "work_max=300ms",
            ],
        );
        let mut waited_past_the_deadline = 0;
        for seed in 0..3 {
            let s = st.scenario(seed, &[]);
            let out = check_scenario(&s, st.algo.clone());
            let h = out.history.expect("the simulation runs");
            // The case is exercised: some acquire waited longer than the renew deadline.
            let invokes: std::collections::BTreeMap<u64, u64> = h
                .events
                .iter()
                .filter_map(|e| match &e.kind {
                    EventKind::Op {
                        op,
                        f: OpF::Acquire,
                        phase: Phase::Invoke,
                        ..
                    } => Some((*op, e.time)),
                    _ => None,
                })
                .collect();
            waited_past_the_deadline += h
                .events
                .iter()
                .filter(|e| match &e.kind {
                    EventKind::Op {
                        op,
                        f: OpF::Acquire,
                        phase: Phase::Ok,
                        ..
                    } => e.time - invokes[op] > ns("2s"),
                    _ => false,
                })
                .count();
            let gave_up: Vec<_> = h
                .events
                .iter()
                .filter(|e| {
                    matches!(&e.kind, EventKind::Lost { reason, .. }
                        if LostCause::of(reason) == LostCause::RenewDeadline)
                })
                .collect();
            assert!(
                gave_up.is_empty(),
                "{algo} seed {seed}: a holder that renews fine hit its renew deadline: {gave_up:?}"
            );
            assert!(
                !out.verdict.violates(locksim_core::Property::L2),
                "{algo} seed {seed}: {:?}",
                out.verdict.violations
            );
        }
        assert!(
            waited_past_the_deadline > 0,
            "{algo}: no acquire waited longer than the renew deadline"
        );
    }
}
