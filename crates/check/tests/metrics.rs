//! Lock metrics on a hand-built history whose numbers can be checked by reading it.

use locksim_check::metrics::{Aggregate, Metrics};
use locksim_core::history::{Deadline, EventKind, LocalClock, OpF, Phase};
use locksim_core::{Event, History};

const MS: u64 = 1_000_000;

struct B {
    events: Vec<Event>,
}

impl B {
    fn push(&mut self, ms: u64, node: u32, kind: EventKind) {
        let id = self.events.len() as u64;
        self.events.push(Event {
            id,
            time: ms * MS,
            node,
            wall: (ms * MS) as i64,
            mono: ms * MS,
            kind,
        });
    }
    #[allow(clippy::too_many_arguments)]
    fn op(
        &mut self,
        ms: u64,
        node: u32,
        op: u64,
        f: OpF,
        phase: Phase,
        handle: Option<u64>,
        deadline_ms: Option<u64>,
    ) {
        let deadline = deadline_ms.map(|d| Deadline {
            clock: LocalClock::Mono,
            local: (d * MS) as i64,
            at: d * MS,
        });
        self.push(
            ms,
            node,
            EventKind::Op {
                op,
                phase,
                f,
                key: 0,
                handle,
                token: None,
                deadline,
                error: None,
                value: None,
            },
        );
    }
}

/// Client 1: fails once at 0–10 ms, retries at 50 ms, granted at 70 ms with a lease until
/// 500 ms, writes at 100 ms and — after a pause — at 800 ms, releases at 810 ms.
/// Client 2: granted at once (200–230 ms) until 1200 ms, releases at 900 ms.
/// One acquire of client 2 at 950 ms never completes.
fn history() -> History {
    use OpF::*;
    use Phase::*;
    let mut b = B { events: vec![] };
    b.op(0, 1, 1, Acquire, Invoke, None, None);
    b.op(10, 1, 1, Acquire, Fail, None, None);
    b.op(50, 1, 2, Acquire, Invoke, None, None);
    b.op(70, 1, 2, Acquire, Ok, Some(1), Some(500));
    b.op(100, 1, 3, Write, Invoke, Some(1), None);
    b.op(200, 2, 4, Acquire, Invoke, None, None);
    b.op(230, 2, 4, Acquire, Ok, Some(2), Some(1200));
    b.op(800, 1, 5, Write, Invoke, Some(1), None);
    b.op(810, 1, 6, Release, Invoke, Some(1), None);
    b.op(900, 2, 7, Release, Invoke, Some(2), None);
    b.op(950, 2, 8, Acquire, Invoke, None, None);
    History {
        events: b.events,
        end: 2000 * MS,
        messages_sent: 40,
        messages_dropped: 3,
        ..History::default()
    }
}

#[test]
fn metrics_of_a_small_history() {
    let m = Metrics::of(&history());
    let c = &m.counts;
    assert_eq!(c.acquires, 4);
    assert_eq!(c.acquires_ok, 2);
    assert_eq!(c.acquires_failed, 1);
    assert_eq!(c.acquires_unknown, 1, "the acquire that never completed");
    assert_eq!(c.retries, 1);
    // Latency: 50→70 and 200→230; wait: 0→70 (with the failed try) and 200→230.
    assert_eq!(m.acquire_latency, vec![20 * MS, 30 * MS]);
    assert_eq!(m.wait, vec![30 * MS, 70 * MS]);
    // Holds: c1 from 70 until its late write at 800; c2 from 230 until its release at 900.
    assert_eq!(m.hold, vec![670 * MS, 730 * MS]);
    // c1 wrote at 800 ms, after its lease ended at 500 ms: expired while it still acted.
    assert_eq!(c.expired_while_held, 1);
    assert_eq!((c.messages_sent, c.messages_dropped), (40, 3));
    // Waiting: c1's round 0→70 (nobody held the lock), c2's 200→230 (c1 held it) and c2's
    // unanswered attempt from 950 ms to the end at 2000 ms (nobody held it).
    assert_eq!(c.waiting_ns, (70 + 30 + 1050) * MS);
    assert_eq!(c.waiting_free_ns, (70 + 1050) * MS);
    assert!(
        c.starved(),
        "most of the waiting was while nobody held the lock"
    );
    // Two grants and no service-side grant record: S2 falls back to the clients' order.
    assert_eq!(c.runs_without_grant_records, 1);
}

/// A service that records its grants (`EventKind::Grant`) is not counted as one without; a
/// run without grants is not either (nothing to order).
#[test]
fn grant_records_are_counted_per_run() {
    let mut h = history();
    let at = h.events[3].clone();
    h.events.insert(
        3,
        Event {
            kind: EventKind::Grant {
                key: 0,
                client: 1,
                token: None,
            },
            node: 0,
            ..at
        },
    );
    assert_eq!(Metrics::of(&h).counts.runs_without_grant_records, 0);
    let none = History {
        events: history().events[..3].to_vec(),
        ..history()
    };
    assert_eq!(Metrics::of(&none).counts.acquires_ok, 0);
    assert_eq!(Metrics::of(&none).counts.runs_without_grant_records, 0);
}

/// Issue #24, item 4: few grants for many attempts is not starvation when one holder held
/// the lock all along; waiters kept waiting while nobody holds it are.
#[test]
fn starvation_is_waiting_while_nobody_holds_the_lock() {
    use OpF::*;
    use Phase::*;
    // c1 holds from 10 ms to 9 s; c2 is refused 449 times meanwhile, then granted at 9.05 s.
    let mut b = B { events: vec![] };
    b.op(0, 1, 1, Acquire, Invoke, None, None);
    b.op(10, 1, 1, Acquire, Ok, Some(1), Some(60_000));
    let mut op = 2;
    for t in (20..9000).step_by(20) {
        b.op(t, 2, op, Acquire, Invoke, None, None);
        b.op(t + 5, 2, op, Acquire, Fail, None, None);
        op += 1;
    }
    b.op(9000, 1, op, Release, Invoke, Some(1), None);
    b.op(9020, 2, op + 1, Acquire, Invoke, None, None);
    b.op(9050, 2, op + 1, Acquire, Ok, Some(2), Some(60_000));
    b.op(9500, 2, op + 2, Release, Invoke, Some(2), None);
    let long_hold = History {
        events: b.events,
        end: 10_000 * MS,
        ..History::default()
    };
    let c = Metrics::of(&long_hold).counts;
    assert_eq!((c.acquires, c.acquires_ok), (451, 2));
    assert!(
        c.acquires_ok * 100 < c.acquires,
        "under 1% of attempts succeeded"
    );
    // c1's own acquire (0→10 ms, the lock free) and c2's round from 20 ms to its grant.
    assert_eq!(c.waiting_ns, (10 + 9030) * MS);
    assert_eq!(
        c.waiting_free_ns,
        (10 + 50) * MS,
        "c1's own acquire, and between the release and c2's grant"
    );
    assert!(!c.starved());
    // c2 alone, refused every 100 ms for 9 s with nobody holding the lock, one late grant.
    let mut b = B { events: vec![] };
    let mut op = 1;
    for t in (0..9000).step_by(100) {
        b.op(t, 2, op, Acquire, Invoke, None, None);
        b.op(t + 5, 2, op, Acquire, Fail, None, None);
        op += 1;
    }
    b.op(9000, 2, op, Acquire, Invoke, None, None);
    b.op(9010, 2, op, Acquire, Ok, Some(1), Some(60_000));
    let refused = History {
        events: b.events,
        end: 10_000 * MS,
        ..History::default()
    };
    let c = Metrics::of(&refused).counts;
    assert_eq!(c.waiting_free_ns, 9010 * MS);
    assert!(c.starved());
    // Counters recorded before the waiting times existed read as 0 and fall back to the
    // share of attempts that succeeded.
    let mut old = serde_json::to_value(&c).unwrap();
    let o = old.as_object_mut().unwrap();
    o.remove("waiting_ns");
    o.remove("waiting_free_ns");
    let back: locksim_check::metrics::Counts = serde_json::from_value(old).unwrap();
    assert_eq!(back.waiting_ns, 0);
    assert_eq!(back.starved(), back.acquires_ok * 100 < back.acquires);
}

#[test]
fn aggregates_add_up_and_keep_percentiles() {
    let m = Metrics::of(&history());
    let mut a = Aggregate::default();
    a.merge(&m.aggregate());
    a.merge(&m.aggregate());
    assert_eq!(a.runs, 2);
    assert_eq!(a.counts.acquires, 8);
    assert_eq!(a.counts.retries, 2);
    assert_eq!(a.counts.expired_while_held, 2);
    assert_eq!(a.acquire_latency_ns.count(), 4);
    let p99 = a.wait_ns.quantile(0.99).unwrap() as f64;
    assert!((p99 - 70e6).abs() <= 70e6 / 64.0, "{p99}");
    let p50 = a.acquire_latency_ns.quantile(0.5).unwrap() as f64;
    assert!((p50 - 20e6).abs() <= 20e6 / 64.0, "{p50}");
    // Serialized and read back (as `merge` of campaign shards does), nothing changes.
    let json = serde_json::to_string(&a).unwrap();
    let back: Aggregate = serde_json::from_str(&json).unwrap();
    assert_eq!(back, a);
}
