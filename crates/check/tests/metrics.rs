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
