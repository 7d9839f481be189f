//! The non-expiring lock spec (S3 for session locks such as PostgreSQL's advisory locks): a
//! grant lasts until its release, or until its holder crashed; the lease spec lets it lapse.

use locksim_check::linear::Budget;
use locksim_check::{lease::check_s3, LeaseSpec, Names};
use locksim_core::history::{EventKind, OpF, Phase};
use locksim_core::{Event, Fault, History, Property, Verdict};

const MS: u64 = 1_000_000;

fn ev(events: &mut Vec<Event>, ms: u64, node: u32, kind: EventKind) {
    let time = ms * MS;
    let id = events.len() as u64;
    events.push(Event {
        id,
        time,
        node,
        wall: time as i64,
        mono: time,
        kind,
    });
}

fn op(op: u64, phase: Phase, f: OpF, handle: Option<u64>) -> EventKind {
    EventKind::Op {
        op,
        phase,
        f,
        key: 0,
        handle,
        token: None,
        deadline: None,
        error: None,
        value: None,
    }
}

/// c1 (node 1) acquires at 0–10 ms and never releases; optionally crashes at 2 s; c2 (node 2)
/// acquires at 3 s.
fn history(crash: bool) -> History {
    let mut e = Vec::new();
    ev(&mut e, 0, 1, op(1, Phase::Invoke, OpF::Acquire, None));
    ev(&mut e, 10, 1, op(1, Phase::Ok, OpF::Acquire, Some(1)));
    if crash {
        let fault = Fault::Crash {
            node: 1,
            restart_after: None,
        };
        ev(&mut e, 2000, 0, EventKind::Fault { fault });
    }
    ev(&mut e, 3000, 2, op(2, Phase::Invoke, OpF::Acquire, None));
    ev(&mut e, 3010, 2, op(2, Phase::Ok, OpF::Acquire, Some(2)));
    History {
        events: e,
        end: 4000 * MS,
        ..History::default()
    }
}

fn s3(h: &History, spec: &LeaseSpec) -> bool {
    let mut v = Verdict::default();
    check_s3(h, spec, &Budget::default(), Names(None), &mut v);
    v.violates(Property::S3)
}

#[test]
fn a_second_grant_while_the_first_was_never_released_breaks_only_the_non_expiring_spec() {
    let lease = LeaseSpec {
        ttl: 1000 * MS,
        uncertainty: 2 * MS,
        ..LeaseSpec::default()
    };
    assert!(
        !s3(&history(false), &lease),
        "a 1 s lease lapsed before 3 s"
    );
    let spec = LeaseSpec {
        uncertainty: 2 * MS,
        ..LeaseSpec::non_expiring()
    };
    assert!(s3(&history(false), &spec), "nothing freed c1's lock");
}

#[test]
fn a_crash_of_the_holder_may_end_its_session_and_free_the_lock() {
    let spec = LeaseSpec::non_expiring();
    assert!(!s3(&history(true), &spec));
}
