//! The scenarios of `shared/cases/CASES.md` that the shipped algorithms can express.

#![allow(dead_code)]

use locksim_core::{Fault, Scenario};
use locksim_explore::Setup;

use super::{node, ns, scenario, setup};

/// K1: a central lock with a 30 s TTL renewed by a watchdog every 10 s. The holder stalls at
/// t=5 for 35 s; its lease expires, the other client acquires, and the holder wakes and writes.
pub fn k1(algo: &str) -> (Setup, Scenario) {
    let st = setup(
        algo,
        &[
            "clients=2",
            "ttl=30s",
            "renew_every=10s",
            "duration=60s",
            "writes=1",
            "work_min=8s",
            "work_max=8s",
            "think_max=0",
            "retry_delay=500ms",
        ],
    );
    let probe = st.scenario(1, &[]);
    let (a, b) = (node(&probe, "c1"), node(&probe, "c2"));
    let s = scenario(
        &st,
        vec![
            // B starts late, so that A is the first holder.
            (
                "0s",
                Fault::Pause {
                    node: b,
                    duration: ns("1s"),
                    task: locksim_core::fault::PauseTask::Process,
                },
            ),
            // A's process stalls in its critical section: no renewal runs.
            (
                "5s",
                Fault::Pause {
                    node: a,
                    duration: ns("35s"),
                    task: locksim_core::fault::PauseTask::Process,
                },
            ),
        ],
    );
    (st, s)
}

/// The Redlock cases' common shape: five masters, TTL 10 s; A cannot reach n4 and n5, so it
/// holds n1–n3 only; B starts after `b_starts`; then `fault` strikes n3 at t=2.
fn redlock_a_holds_three(
    extra: &[&str],
    think_max: &str,
    b_starts: &str,
    fault: impl Fn(u32) -> Fault,
) -> (Setup, Scenario) {
    let think = format!("think_max={think_max}");
    let mut settings = vec![
        "clients=2",
        "ttl=10s",
        "duration=12s",
        "writes=2",
        "work_min=4s",
        "work_max=4s",
        &think,
        "retry_delay=100ms",
    ];
    settings.extend_from_slice(extra);
    let st = setup("redlock", &settings);
    let p = st.scenario(1, &[]);
    let (a, b) = (node(&p, "c1"), node(&p, "c2"));
    let s = scenario(
        &st,
        vec![
            (
                "0s",
                Fault::Partition {
                    a: vec![a],
                    b: vec![node(&p, "n4"), node(&p, "n5")],
                    duration: ns("30s"),
                    mode: locksim_core::fault::CutMode::Drop,
                },
            ),
            (
                "0s",
                Fault::Pause {
                    node: b,
                    duration: ns(b_starts),
                    task: locksim_core::fault::PauseTask::Process,
                },
            ),
            ("2s", fault(node(&p, "n3"))),
        ],
    );
    (st, s)
}

/// K4: five in-memory Redlock masters. A holds n1–n3 (it cannot reach n4, n5); n3 crashes and
/// restarts at once, empty; B acquires n3, n4, n5: a second majority.
pub fn k4(extra: &[&str]) -> (Setup, Scenario) {
    redlock_a_holds_three(extra, "0", "1s", |n3| Fault::Crash {
        node: n3,
        restart_after: Some(0),
    })
}

/// K5: A holds n1–n3; at t=2 n3's wall clock steps forward by one TTL, so A's key expires there;
/// at t=3 B acquires n3, n4, n5. After its round A thinks for a while, so that B can take the
/// lock in a safe run.
pub fn k5(extra: &[&str]) -> (Setup, Scenario) {
    redlock_a_holds_three(extra, "1s", "3s", |n3| Fault::ClockStep {
        node: n3,
        delta: ns("10s") as i64,
    })
}

/// K5's pause variant (Kleppmann's example): A pauses longer than its validity after acquiring,
/// B acquires, A resumes and writes.
pub fn k5_pause() -> (Setup, Scenario) {
    let st = setup(
        "redlock",
        &[
            "clients=2",
            "ttl=10s",
            "duration=20s",
            "writes=2",
            "work_min=4s",
            "work_max=4s",
            "think_max=0",
            "retry_delay=100ms",
        ],
    );
    let p = st.scenario(1, &[]);
    let s = scenario(
        &st,
        vec![
            (
                "0s",
                Fault::Pause {
                    node: node(&p, "c2"),
                    duration: ns("1s"),
                    task: locksim_core::fault::PauseTask::Process,
                },
            ),
            (
                "1s",
                Fault::Pause {
                    node: node(&p, "c1"),
                    duration: ns("15s"),
                    task: locksim_core::fault::PauseTask::Process,
                },
            ),
        ],
    );
    (st, s)
}
