//! S1 and S2 on hand-built histories: each case is small enough to verify by reading.

use locksim_check::{check_all, derive_holds, CheckOptions, HoldEnd};

/// S1 and S2 only (these hand-built histories have no TTL to judge S3 by).
const NO_S3: CheckOptions = CheckOptions {
    cluster: None,
    lease: None,
    budget: locksim_check::linear::Budget {
        timeout: None,
        max_steps: None,
        max_configs: None,
        max_memory: None,
        threads: 0,
    },
    liveness: None,
};
use locksim_core::history::{Deadline, EventKind, LocalClock, OpF, Phase};
use locksim_core::{Event, Fault, History, Property};

/// Builds histories event by event; times are in milliseconds.
#[derive(Default)]
struct H {
    events: Vec<Event>,
    next_op: u64,
}

impl H {
    fn push(&mut self, ms: u64, node: u32, kind: EventKind) -> u64 {
        let id = self.events.len() as u64;
        let time = ms * 1_000_000;
        self.events.push(Event {
            id,
            time,
            node,
            wall: time as i64,
            mono: time,
            kind,
        });
        id
    }
    fn op(&mut self, ms: u64, node: u32, f: OpF, phase: Phase, handle: Option<u64>) -> u64 {
        self.op_full(ms, node, f, phase, handle, None, None)
    }
    #[allow(clippy::too_many_arguments)]
    fn op_full(
        &mut self,
        ms: u64,
        node: u32,
        f: OpF,
        phase: Phase,
        handle: Option<u64>,
        token: Option<u64>,
        deadline_ms: Option<u64>,
    ) -> u64 {
        self.next_op += 1;
        let deadline = deadline_ms.map(|d| Deadline {
            clock: LocalClock::Mono,
            local: (d * 1_000_000) as i64,
            at: d * 1_000_000,
        });
        self.push(
            ms,
            node,
            EventKind::Op {
                op: self.next_op,
                phase,
                f,
                key: 0,
                handle,
                token,
                deadline,
                error: None,
                value: None,
            },
        )
    }
    /// A grant to `node` from `from` ms (acquire ok) with optional deadline, released at `rel`.
    fn grant(
        &mut self,
        node: u32,
        handle: u64,
        from: u64,
        deadline: Option<u64>,
        rel: Option<u64>,
    ) {
        self.op_full(
            from,
            node,
            OpF::Acquire,
            Phase::Ok,
            Some(handle),
            None,
            deadline,
        );
        if let Some(r) = rel {
            self.op(r, node, OpF::Release, Phase::Invoke, Some(handle));
        }
    }
    /// An acquire by `node` invoked at `inv` ms, answered `ok` at `ok` ms with `handle`.
    fn acquire(&mut self, node: u32, handle: u64, inv: u64, ok: u64, token: Option<u64>) {
        self.next_op += 1;
        for (ms, phase, h, t) in [
            (inv, Phase::Invoke, None, None),
            (ok, Phase::Ok, Some(handle), token),
        ] {
            let op = self.next_op;
            self.push(
                ms,
                node,
                EventKind::Op {
                    op,
                    phase,
                    f: OpF::Acquire,
                    key: 0,
                    handle: h,
                    token: t,
                    deadline: None,
                    error: None,
                    value: None,
                },
            );
        }
    }
    /// The service's record (on `server`) that it granted the lock to `client` at `ms`.
    fn service_grant(&mut self, ms: u64, server: u32, client: u32, token: Option<u64>) {
        self.push(
            ms,
            server,
            EventKind::Grant {
                key: 0,
                client,
                token,
            },
        );
    }
    fn accepted(&mut self, ms: u64, handle: u64, token: Option<u64>) -> u64 {
        self.push(
            ms,
            9,
            EventKind::WriteAccepted {
                key: 0,
                handle,
                token,
            },
        )
    }
    fn done(mut self, end_ms: u64) -> History {
        self.events.sort_by_key(|e| e.time);
        for (i, e) in self.events.iter_mut().enumerate() {
            e.id = i as u64;
        }
        History {
            events: self.events,
            end: end_ms * 1_000_000,
            ..Default::default()
        }
    }
}

#[test]
fn sequential_grants_are_safe() {
    let mut h = H::default();
    h.grant(1, 1, 0, Some(1000), Some(400));
    h.grant(2, 2, 400, Some(1400), Some(800));
    let v = check_all(&h.done(2000), &NO_S3);
    assert!(v.is_safe(), "{v:?}");
}

#[test]
fn overlapping_grants_violate_s1_with_the_window() {
    let mut h = H::default();
    h.grant(1, 1, 0, None, Some(500));
    h.grant(2, 2, 300, None, Some(900));
    let v = check_all(&h.done(2000), &NO_S3);
    assert_eq!(v.kinds(), vec![Property::S1]);
    assert_eq!(v.violations[0].window, Some((300_000_000, 500_000_000)));
}

#[test]
fn the_deadline_ends_a_hold_but_a_late_write_extends_it() {
    // c1's validity ends at 1000 ms; it never releases. c2 acquires at 1100 ms: safe...
    let mut h = H::default();
    h.grant(1, 1, 0, Some(1000), None);
    h.grant(2, 2, 1100, Some(2100), Some(1500));
    let holds = derive_holds(&h.done(3000));
    assert!(matches!(holds[0].ended_by, HoldEnd::Deadline(_)));
    assert_eq!(holds[0].end, 1_000_000_000);

    // ...unless c1, paused past its deadline, writes at 1200 ms: then it held until then.
    let mut h = H::default();
    h.grant(1, 1, 0, Some(1000), None);
    h.op(1200, 1, OpF::Write, Phase::Invoke, Some(1));
    h.grant(2, 2, 1100, Some(2100), Some(1500));
    let hist = h.done(3000);
    let holds = derive_holds(&hist);
    assert!(matches!(holds[0].ended_by, HoldEnd::LateWrite(_)));
    let v = check_all(&hist, &NO_S3);
    assert_eq!(v.kinds(), vec![Property::S1]);
    assert_eq!(v.violations[0].window, Some((1_100_000_000, 1_200_000_000)));
}

#[test]
fn a_renewal_before_the_deadline_extends_it_one_after_does_not() {
    let mut h = H::default();
    h.grant(1, 1, 0, Some(1000), None);
    h.op_full(900, 1, OpF::Extend, Phase::Ok, Some(1), None, Some(1900));
    let holds = derive_holds(&h.done(3000));
    assert_eq!(holds[0].end, 1_900_000_000);

    let mut h = H::default();
    h.grant(1, 1, 0, Some(1000), None);
    h.op_full(1100, 1, OpF::Extend, Phase::Ok, Some(1), None, Some(2100));
    let holds = derive_holds(&h.done(3000));
    assert_eq!(holds[0].end, 1_000_000_000);
}

#[test]
fn a_crash_ends_the_hold_of_a_client() {
    let mut h = H::default();
    h.grant(1, 1, 0, None, None);
    h.push(
        300,
        1,
        EventKind::Fault {
            fault: Fault::Crash {
                node: 1,
                restart_after: None,
            },
        },
    );
    h.grant(2, 2, 400, None, Some(600));
    assert!(check_all(&h.done(1000), &NO_S3).is_safe());
}

#[test]
fn distinct_handles_of_one_client_count_as_two_holders() {
    let mut h = H::default();
    h.grant(1, 1, 0, None, Some(500));
    h.grant(1, 2, 200, None, Some(600));
    assert!(check_all(&h.done(1000), &NO_S3).violates(Property::S1));
}

#[test]
fn a_stale_write_after_a_newer_grant_violates_s2() {
    let mut h = H::default();
    h.grant(1, 1, 0, Some(1000), None);
    h.grant(2, 2, 1100, Some(2100), Some(1500));
    h.accepted(1200, 2, None);
    h.accepted(1300, 1, None); // c1's delayed write lands after c2's
    let hist = h.done(3000);
    let v = check_all(&hist, &NO_S3);
    assert_eq!(v.kinds(), vec![Property::S2]);
    let witness = &hist.events[v.violations[0].events[0] as usize];
    assert_eq!(
        witness.kind,
        EventKind::WriteAccepted {
            key: 0,
            handle: 1,
            token: None
        }
    );
}

#[test]
fn an_old_write_before_the_newer_grant_wrote_is_fine() {
    let mut h = H::default();
    h.grant(1, 1, 0, Some(1000), None);
    h.grant(2, 2, 1100, Some(2100), Some(1500));
    h.accepted(1050, 1, None);
    h.accepted(1200, 2, None);
    assert!(check_all(&h.done(3000), &NO_S3).is_safe());
}

#[test]
fn decreasing_accepted_tokens_violate_s2() {
    // Same grant order, but the resource accepted token 7 after token 9.
    let mut h = H::default();
    h.op_full(0, 1, OpF::Acquire, Phase::Ok, Some(1), Some(9), None);
    h.op(100, 1, OpF::Release, Phase::Invoke, Some(1));
    h.op_full(200, 2, OpF::Acquire, Phase::Ok, Some(2), Some(7), None);
    h.accepted(50, 1, Some(9));
    h.accepted(250, 2, Some(7));
    let v = check_all(&h.done(1000), &NO_S3);
    assert_eq!(v.kinds(), vec![Property::S2]);
    assert!(
        v.violations[0].summary.contains("token 7"),
        "{}",
        v.violations[0].summary
    );
}

#[test]
fn rejected_writes_are_not_violations() {
    let mut h = H::default();
    h.grant(1, 1, 0, Some(1000), None);
    h.grant(2, 2, 1100, Some(2100), Some(1500));
    h.accepted(1200, 2, None);
    h.push(
        1300,
        9,
        EventKind::WriteRejected {
            key: 0,
            handle: 1,
            token: 1,
            highest: 2,
        },
    );
    assert!(check_all(&h.done(3000), &NO_S3).is_safe());
}

#[test]
fn a_hold_given_up_at_once_overlaps_nothing() {
    // c2's grant arrived already expired: it gave up at the same instant (a zero-length hold).
    let mut h = H::default();
    h.grant(1, 1, 0, None, Some(500));
    h.op_full(300, 2, OpF::Acquire, Phase::Ok, Some(2), None, Some(300));
    let v = check_all(&h.done(1000), &NO_S3);
    assert!(v.is_safe(), "{v:?}");
}

/// Seed 14194 of central-fencing under clock-jump, reduced: the server grants token 3 to c2,
/// then (its clock stepped, the lease expired at once) token 4 to c3; c3's reply arrives
/// first. The resource accepts 3, then 4: correct fencing, and no S2 by the service's order.
#[test]
fn replies_that_overtake_each_other_do_not_make_a_fenced_write_stale() {
    let mut h = H::default();
    h.acquire(2, 4, 0, 16, Some(3));
    h.acquire(3, 3, 1, 15, Some(4));
    h.service_grant(10, 0, 2, Some(3));
    h.service_grant(12, 0, 3, Some(4));
    h.accepted(60, 4, Some(3));
    h.accepted(90, 3, Some(4));
    let hist = h.done(1000);
    let holds = derive_holds(&hist);
    let granted: Vec<(u64, u64)> = holds.iter().map(|x| (x.handle, x.granted)).collect();
    assert_eq!(granted, vec![(3, 12_000_000), (4, 10_000_000)]);
    let v = check_all(&hist, &NO_S3);
    assert!(!v.violates(Property::S2), "{v:?}");
    // Without the service's records (an algorithm that records none) the checker can only
    // fall back to the order the clients heard `ok`, which inverts these two grants.
    let mut bare = hist.clone();
    bare.events
        .retain(|e| !matches!(e.kind, EventKind::Grant { .. }));
    for (i, e) in bare.events.iter_mut().enumerate() {
        e.id = i as u64;
    }
    assert!(check_all(&bare, &NO_S3).violates(Property::S2));
}

/// central-fencing with `fsync=never`: c1 is granted token 5, the server crashes and restarts
/// with its counter at 1 and grants token 1 to c2, which writes first; c1's write with the
/// higher token is accepted after it. The service decided c1's grant first: S2.
#[test]
fn tokens_that_restart_low_after_a_crash_still_violate_s2() {
    let mut h = H::default();
    h.acquire(1, 1, 0, 110, Some(5));
    h.service_grant(100, 0, 1, Some(5));
    h.push(
        150,
        0,
        EventKind::Fault {
            fault: Fault::Crash {
                node: 0,
                restart_after: Some(0),
            },
        },
    );
    h.acquire(2, 2, 200, 310, Some(1));
    h.service_grant(300, 0, 2, Some(1));
    h.accepted(320, 2, Some(1));
    h.accepted(400, 1, Some(5));
    let hist = h.done(1000);
    let v = check_all(&hist, &NO_S3);
    let s2: Vec<_> = v
        .violations
        .iter()
        .filter(|x| x.kind == Property::S2)
        .collect();
    assert_eq!(s2.len(), 1, "{v:?}");
    assert!(
        s2[0].summary.contains("granted at 100ms") && s2[0].summary.contains("made at 300ms"),
        "{}",
        s2[0].summary
    );
    // The witnesses end with both grant records.
    let kinds: Vec<&EventKind> = s2[0].events[4..]
        .iter()
        .map(|&id| &hist.events[id as usize].kind)
        .collect();
    assert!(
        kinds.iter().all(|k| matches!(k, EventKind::Grant { .. })) && kinds.len() == 2,
        "{kinds:?}"
    );
}

/// Redlock: five masters each record their own grant; the grant is decided when the third
/// (the majority) has granted. A grant record from before the acquire (an earlier attempt's)
/// or with another token is not this acquire's.
#[test]
fn a_majority_grant_is_decided_at_the_majority_record() {
    let mut h = H::default();
    h.service_grant(5, 0, 6, None); // before the acquire: an earlier attempt's
    h.acquire(6, 1, 10, 100, None);
    for (ms, master) in [(20, 0), (30, 1), (40, 1), (50, 2), (60, 3)] {
        h.service_grant(ms, master, 6, None);
    }
    h.acquire(7, 2, 10, 90, Some(8));
    h.service_grant(20, 0, 7, Some(7)); // another grant's token
    h.service_grant(45, 0, 7, Some(8));
    let hist = h.done(1000);
    let cluster = locksim_core::Cluster {
        servers: 5,
        clients: 2,
    };
    let granted = |holds: &[locksim_check::Hold], handle: u64| {
        let x = holds.iter().find(|x| x.handle == handle).expect("a hold");
        (x.granted / 1_000_000, x.granted_by.is_some())
    };
    let holds = locksim_check::derive_holds_in(&hist, Some(&cluster));
    // Handle 1: masters 0, 1, 2 at 20, 30, 50 ms (master 1's second record does not count);
    // handle 2: the record with its own token, alone, at 45 ms.
    assert_eq!(granted(&holds, 1), (50, true));
    assert_eq!(granted(&holds, 2), (45, true));
    // Without the cluster, the servers are the nodes that recorded grants (masters 0..=3 here:
    // a majority of 3).
    assert_eq!(granted(&derive_holds(&hist), 1), (50, true));
}
