//! Faults aimed at events (issue #25, item 1): a trigger fires at the true time its event is
//! recorded (plus its delay), the same in every run of a seed, is reported when it never
//! fires, and replays from a trace.

mod common;

use std::path::Path;

use common::{ns, setup};
use locksim_core::history::{EventKind, OpF, Phase};
use locksim_core::trigger::{never_fired, Trigger, TriggerEvent};
use locksim_core::{Fault, FaultPlan, History, Scenario, TimedFault, Trace};
use locksim_explore::{check_scenario, Setup};

/// zookeeper, 3 servers and the default clients, with `fault` aimed by `trigger`.
fn aimed(trigger: Trigger, fault: Fault) -> (Setup, Scenario) {
    let st = setup("zookeeper", &[]);
    let s = aimed_in(&st, 3, trigger, fault);
    (st, s)
}

/// Seed `seed` of `st` with only `fault`, aimed by `trigger`.
fn aimed_in(st: &Setup, seed: u64, trigger: Trigger, fault: Fault) -> Scenario {
    let mut s = st.scenario(seed, &[]);
    s.faults = FaultPlan::new(vec![TimedFault::after(trigger, fault)]);
    s.faults.validate(&s.cluster).unwrap();
    s
}

/// The first `event` recorded on any of `nodes`, with no delay.
fn first(nodes: Vec<u32>, event: TriggerEvent) -> Trigger {
    Trigger {
        nodes,
        event,
        nth: 1,
        delay: 0,
        client: None,
    }
}

/// A pause of the whole process `node` for `d`.
fn pause(node: u32, d: &str) -> Fault {
    Fault::Pause {
        node,
        duration: ns(d),
        task: locksim_core::fault::PauseTask::Process,
    }
}

fn grants_to_c1(delay: u64) -> Trigger {
    Trigger {
        nodes: vec![0, 1, 2],
        event: TriggerEvent::Grants,
        nth: 1,
        delay,
        client: Some(3),
    }
}

fn drop_c1_replies() -> Fault {
    Fault::DropReplies {
        clients: vec![3],
        servers: vec![0, 1, 2],
        duration: ns("1s"),
    }
}

fn run(st: &Setup, s: &Scenario) -> History {
    let out = check_scenario(s, st.algo.clone());
    assert!(out.error.is_none(), "{:?}", out.error);
    out.history.unwrap()
}

fn faults(h: &History) -> Vec<&locksim_core::Event> {
    h.events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Fault { .. }))
        .collect()
}

/// With no delay the fault is recorded right after the grant it waits for (the next event of
/// the history, at the same true time), so its window is in force before the server replies;
/// the same seed twice gives the same history.
#[test]
fn a_trigger_fires_at_its_event_the_same_in_every_run() {
    let (st, s) = aimed(grants_to_c1(0), drop_c1_replies());
    let h = run(&st, &s);
    let f = faults(&h);
    assert_eq!(f.len(), 1, "one firing");
    let grant = &h.events[f[0].id as usize - 1];
    assert!(
        matches!(grant.kind, EventKind::Grant { client: 3, .. }),
        "the event before the fault is c1's grant: {grant:?}"
    );
    let first_grant = h
        .events
        .iter()
        .find(|e| matches!(e.kind, EventKind::Grant { client: 3, .. }))
        .unwrap();
    assert_eq!(
        first_grant.id, grant.id,
        "the first grant to c1, not a later one"
    );
    assert_eq!(f[0].time, grant.time);
    assert_eq!(
        s.faults.faults[0].after.as_ref().unwrap().resolve(&h),
        Some(f[0].time)
    );
    assert_eq!(locksim_explore::outcome::faults_applied(&h), 1);
    assert!(never_fired(&s.faults, &h, &s.cluster).is_empty());
    let again = run(&st, &s);
    assert_eq!(h.digest(), again.digest(), "same seed, same firing");
}

/// A delay puts the fault that much true time after its event (as a timed fault's `at`, up to
/// the scheduler's nanoseconds).
#[test]
fn a_delay_comes_after_the_event() {
    let (st, s) = aimed(grants_to_c1(ns("250ms")), drop_c1_replies());
    let h = run(&st, &s);
    let grant = h
        .events
        .iter()
        .find(|e| matches!(e.kind, EventKind::Grant { client: 3, .. }))
        .unwrap();
    let f = faults(&h);
    assert_eq!(f.len(), 1);
    // madsim's scheduler advances true time by a few ns per step, as for timed faults.
    let planned = grant.time + ns("250ms");
    assert!(
        (planned..planned + ns("1ms")).contains(&f[0].time),
        "fired at {} for {planned}",
        f[0].time
    );
    assert_eq!(
        s.faults.faults[0].after.as_ref().unwrap().resolve(&h),
        Some(planned)
    );
}

/// A trigger whose event never comes injects nothing, counts as not applied and says why.
#[test]
fn a_trigger_that_never_fires_is_reported() {
    let trigger = Trigger {
        nodes: vec![3],
        event: TriggerEvent::Op(OpF::Acquire, Phase::Ok),
        nth: 10_000,
        delay: 0,
        client: None,
    };
    let (st, s) = aimed(trigger, drop_c1_replies());
    let h = run(&st, &s);
    assert!(faults(&h).is_empty(), "nothing fired");
    assert_eq!(locksim_explore::outcome::faults_applied(&h), 0);
    let lines = never_fired(&s.faults, &h, &s.cluster);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("fault #1 (drop replies {n1,n2,n3} -> {c1} for 1.000s, at c1's 10000th acquire ok) never fired: c1 had no 10000th acquire ok (only "),
        "{}",
        lines[0]
    );
}

/// A trace of a run with a trigger stores the trigger in its plan and the firing time in its
/// fault event; parsed back from JSON it replays to the same digest and verdict.
#[test]
fn a_trace_with_a_trigger_replays() {
    let (st, s) = aimed(grants_to_c1(ns("10ms")), drop_c1_replies());
    let out = check_scenario(&s, st.algo.clone());
    let h = out.history.clone().unwrap();
    let trace = Trace::new(
        s.clone(),
        h.digest(),
        out.verdict.clone(),
        Some(h.events.clone()),
    );
    let json = trace.to_json();
    assert!(
        json.contains("\"after\"") && json.contains("\"grants\""),
        "{json}"
    );
    let back = Trace::parse(Path::new("t.json"), &json).unwrap();
    assert_eq!(
        back.scenario.faults, s.faults,
        "the trigger survives the trace"
    );
    let r = locksim_explore::replay::replay(&back).unwrap();
    assert!(r.ok(), "{:?}", r.first_difference);
}

/// Old plans (no trigger) read and write as before: no `after` key.
#[test]
fn timed_faults_serialize_without_after() {
    let tf = TimedFault::at(5, Fault::Heal);
    let json = serde_json::to_string(&tf).unwrap();
    assert_eq!(json, r#"{"at":5,"fault":{"type":"heal"}}"#);
    let back: TimedFault = serde_json::from_str(&json).unwrap();
    assert_eq!(back, tf);
}

/// A cell's own faults are told apart from the explicit plan's when the plan holds a trigger:
/// its firing (wherever it falls among the drawn faults) is not counted as the kind's, and a
/// trigger that never fires shifts nothing.
#[test]
fn kind_faults_applied_sets_triggered_firings_aside() {
    use locksim_core::FaultKind;
    use locksim_explore::applied::{applied_flags, kind_faults_applied};
    let st = setup("zookeeper", &[]);
    for (trigger, fires) in [
        (grants_to_c1(0), true),
        (
            Trigger {
                nth: 10_000,
                ..grants_to_c1(0)
            },
            false,
        ),
    ] {
        let mut s = st.scenario(5, &[FaultKind::Pause]);
        let drawn = s.faults.clone();
        assert!(!drawn.is_empty(), "the pause kind draws faults");
        let explicit = FaultPlan::new(vec![TimedFault::after(trigger, drop_c1_replies())]);
        let mut all = drawn.faults.clone();
        all.extend(explicit.faults.clone());
        s.faults = FaultPlan::new(all);
        let h = run(&st, &s);
        let events = faults(&h).len();
        assert_eq!(events, drawn.len() + usize::from(fires));
        // The drawn plan alone, run without the trigger's fault, counts the same.
        let mut alone = s.clone();
        alone.faults = drawn.clone();
        let h_alone = run(&st, &alone);
        let drawn_applied = applied_flags(&h_alone).into_iter().filter(|a| *a).count() as u64;
        let kind = kind_faults_applied(&h, &s.faults, &explicit);
        if fires {
            // The lost replies change the run; the count is still of drawn faults only.
            assert!(kind <= drawn.len() as u64, "{kind}");
            let all_applied = applied_flags(&h).into_iter().filter(|a| *a).count() as u64;
            assert_eq!(
                kind + 1,
                all_applied,
                "the firing is the one fault set aside"
            );
        } else {
            assert_eq!(kind, drawn_applied, "nothing fired: the drawn faults alone");
        }
    }
}

/// The resource's events aim faults too: a pause of c1 at the first accepted write is recorded
/// right after it.
#[test]
fn a_resource_event_fires_a_trigger() {
    let (st, s) = aimed(
        first(vec![6], TriggerEvent::AcceptsWrite),
        pause(3, "100ms"),
    );
    assert_eq!(s.cluster.name(6), "res");
    let h = run(&st, &s);
    let f = faults(&h);
    assert_eq!(f.len(), 1);
    let before = &h.events[f[0].id as usize - 1];
    assert!(
        matches!(before.kind, EventKind::WriteAccepted { .. }),
        "{before:?}"
    );
    let first = h
        .events
        .iter()
        .find(|e| matches!(e.kind, EventKind::WriteAccepted { .. }))
        .unwrap();
    assert_eq!(first.id, before.id);
}

/// The service's own events (`leader elected`, `replicates`) are recorded only when a trigger
/// waits for one; such a trigger fires at the event, and a run without one has none of them
/// (so every other run's event log is what it was before these events existed).
#[test]
fn leader_elected_fires_at_the_raft_leaders_new_term_and_is_recorded_only_when_awaited() {
    let st = setup("raft-lease", &[]);
    let plain = st.scenario(3, &[]);
    let h = run(&st, &plain);
    assert!(
        !h.events.iter().any(|e| matches!(
            e.kind,
            EventKind::Leader { .. } | EventKind::Replicated { .. }
        )),
        "no service events without a trigger waiting for one"
    );
    let trigger = first(vec![0, 1, 2], TriggerEvent::LeaderElected);
    let s = aimed_in(&st, 3, trigger.clone(), pause(3, "100ms"));
    let h = run(&st, &s);
    let leader = h
        .events
        .iter()
        .find(|e| matches!(e.kind, EventKind::Leader { .. }))
        .expect("the first leader's term is recorded");
    assert!(leader.node < 3, "a server leads: {leader:?}");
    let f = faults(&h);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].id, leader.id + 1, "the pause right after the election");
    assert_eq!(trigger.resolve(&h), Some(leader.time));
    assert!(
        h.events
            .iter()
            .any(|e| matches!(e.kind, EventKind::Replicated { .. })),
        "a service trigger records `replicates` too (followers append the leader's entries)"
    );
}

/// redis-failover's replication stream keeps its lag: with `repl_delay = 300ms` a replica
/// first takes a write (`replicates`, offset 1 or more) at least 300 ms after the primary's
/// first grant (before, the primary re-sent its whole state every 100 ms and the lag did not
/// hold above that).
#[test]
fn redis_failovers_replication_lag_holds() {
    let st = setup("redis-failover", &["repl_delay=300ms"]);
    let s = aimed_in(
        &st,
        5,
        first(vec![1], TriggerEvent::Replicates),
        pause(5, "10ms"),
    );
    let h = run(&st, &s);
    let grant = h
        .events
        .iter()
        .find(|e| matches!(e.kind, EventKind::Grant { .. }))
        .expect("a grant");
    let first_write = h
        .events
        .iter()
        .find(|e| e.node == 1 && matches!(e.kind, EventKind::Replicated { offset } if offset >= 1))
        .expect("n2 takes the grant's write");
    assert!(
        first_write.time >= grant.time + ns("300ms"),
        "grant at {}, replicated at {}",
        grant.time,
        first_write.time
    );
}
