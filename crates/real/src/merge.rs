//! The history of a real run: the events every node process logged, and the harness' own
//! fault events, merged in true-time order (the host's `CLOCK_MONOTONIC` is one clock for all
//! processes), numbered, and each validity deadline mapped to the true time at which the
//! client's virtual clock reaches it.

use std::path::Path;

use std::collections::BTreeMap;

use locksim_core::fault::Fault;
use locksim_core::history::{Event, EventKind};
use locksim_core::{History, Role, Scenario};

/// Reads one node log; a torn last line (a process killed mid-write) is dropped.
///
/// # Errors
/// When the file cannot be read, or a line other than the last is not an event.
pub fn read_log(path: &Path) -> Result<Vec<Event>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        match serde_json::from_str::<Event>(line) {
            Ok(e) => out.push(e),
            Err(_) if i + 1 == lines.len() && !text.ends_with('\n') => {}
            Err(e) => return Err(format!("{}:{}: {e}", path.display(), i + 1)),
        }
    }
    Ok(out)
}

/// Dates the service's grant records by its own order where it issued one.
///
/// A client records a lock server's grant when the answer reaches it: the latest moment the
/// service can have decided. A client stopped between the server's answer and its reading it
/// (a `SIGSTOP` pause) records the grant late, after grants the service decided later; S2,
/// which orders grants by the service's decision, would then read them in the wrong order. A
/// service that issues fencing tokens in its decision order (Redis's `INCR` counter, etcd's
/// revisions) decided a grant no later than any grant of the same key with a higher token, so
/// each record is moved back to the earliest record of a higher token of its key, if that is
/// earlier. The inference holds within one life of the lock servers: a server crash can
/// restart a counter, so records are only compared between server crashes. The moved record
/// stays inside its acquire's window: the acquire was sent before its grant was decided, so
/// before any later grant was.
fn date_grants_by_token(scenario: &Scenario, events: &mut [Event]) {
    let crashes: Vec<u64> = {
        let mut v: Vec<u64> = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Fault {
                    fault: Fault::Crash { node, .. },
                } if scenario.cluster.role(*node) == Role::Server => Some(e.time),
                _ => None,
            })
            .collect();
        v.sort_unstable();
        v
    };
    let life = |t: u64| crashes.partition_point(|&c| c <= t);
    // (key, life) -> (token, event index)
    let mut by_key: BTreeMap<(u32, usize), Vec<(u64, usize)>> = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        if let EventKind::Grant {
            key,
            token: Some(t),
            ..
        } = e.kind
        {
            by_key.entry((key, life(e.time))).or_default().push((t, i));
        }
    }
    for mut records in by_key.into_values() {
        records.sort_unstable_by(|a, b| b.cmp(a));
        let mut earliest = u64::MAX;
        let mut i = 0;
        while i < records.len() {
            // Records of one token (Redlock-style services record one per server) share the
            // bound of the higher tokens only.
            let token = records[i].0;
            let mut j = i;
            let mut own = u64::MAX;
            while j < records.len() && records[j].0 == token {
                let e = &mut events[records[j].1];
                if e.time > earliest {
                    e.time = earliest;
                    e.wall = earliest as i64;
                    e.mono = earliest;
                }
                own = own.min(e.time);
                j += 1;
            }
            earliest = earliest.min(own);
            i = j;
        }
    }
}

/// Merges `events` (any order) into the history of `scenario`.
pub fn history(scenario: &Scenario, mut events: Vec<Event>) -> History {
    date_grants_by_token(scenario, &mut events);
    // Stable: events of one process at the same nanosecond keep their log order.
    events.sort_by_key(|e| e.time);
    let clocks: Vec<Option<locksim_core::clock::Clock>> = (0..scenario.cluster.nodes())
        .map(|n| (scenario.cluster.role(n) == Role::Client).then(|| crate::vclock::of(scenario, n)))
        .collect();
    for (i, e) in events.iter_mut().enumerate() {
        e.id = i as u64;
        if let EventKind::Op {
            deadline: Some(d), ..
        } = &mut e.kind
        {
            if let Some(Some(c)) = clocks.get(e.node as usize) {
                d.at = c.reach(d.clock, d.local, e.time);
            }
        }
    }
    History {
        events,
        end: scenario.end(),
        messages_sent: 0,
        messages_dropped: 0,
        messages: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use locksim_core::history::{Deadline, LocalClock, OpF, Phase};
    use locksim_core::time::SEC;
    use locksim_core::{Cluster, FaultPlan, Workload};

    #[test]
    fn logs_merge_in_time_order_with_deadlines_in_true_time() {
        let s = Scenario {
            seed: 0,
            algorithm: "central".into(),
            config: Default::default(),
            cluster: Cluster {
                servers: 1,
                clients: 1,
            },
            workload: Workload::default(),
            fault_kinds: vec![],
            faults: FaultPlan::default(),
        };
        let ev = |time, kind| Event {
            id: 99,
            time,
            node: 1,
            wall: time as i64,
            mono: time,
            kind,
        };
        let ok = EventKind::Op {
            op: 1,
            phase: Phase::Ok,
            f: OpF::Acquire,
            key: 0,
            handle: Some(7),
            token: None,
            deadline: Some(Deadline {
                clock: LocalClock::Wall,
                local: 3 * SEC as i64,
                at: 0,
            }),
            error: None,
            value: None,
        };
        let lost = EventKind::Lost {
            key: 0,
            handle: 7,
            reason: "x".into(),
        };
        let h = history(&s, vec![ev(2 * SEC, lost), ev(SEC, ok)]);
        assert_eq!(h.events[0].id, 0);
        assert_eq!(h.events[1].id, 1);
        let EventKind::Op {
            deadline: Some(d), ..
        } = &h.events[0].kind
        else {
            panic!("the acquire comes first: {:?}", h.events)
        };
        assert_eq!(d.at, 3 * SEC);
        assert_eq!(h.end, s.end());
    }

    #[test]
    fn a_grant_heard_late_is_dated_before_the_later_tokens_grant() {
        let s = Scenario {
            seed: 0,
            algorithm: "central-fencing".into(),
            config: Default::default(),
            cluster: Cluster {
                servers: 1,
                clients: 2,
            },
            workload: Workload::default(),
            fault_kinds: vec![],
            faults: FaultPlan::default(),
        };
        let grant = |time: u64, client, token| Event {
            id: 0,
            time,
            node: 0,
            wall: time as i64,
            mono: time,
            kind: EventKind::Grant {
                key: 0,
                client,
                token: Some(token),
            },
        };
        let crash = |time: u64| Event {
            id: 0,
            time,
            node: 0,
            wall: time as i64,
            mono: time,
            kind: EventKind::Fault {
                fault: Fault::Crash {
                    node: 0,
                    restart_after: None,
                },
            },
        };
        // c1's token 5 was heard at 3 s, after c2's token 6 at 1.6 s: dated 1.6 s.
        let h = history(&s, vec![grant(3 * SEC, 1, 5), grant(1_600_000_000, 2, 6)]);
        let times: Vec<(u64, u64)> = h
            .events
            .iter()
            .map(|e| match e.kind {
                EventKind::Grant { token, .. } => (token.unwrap(), e.time),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(times, vec![(5, 1_600_000_000), (6, 1_600_000_000)]);
        // In order already: untouched.
        let h = history(&s, vec![grant(SEC, 1, 5), grant(2 * SEC, 2, 6)]);
        assert_eq!((h.events[0].time, h.events[1].time), (SEC, 2 * SEC));
        // A server crash between them may restart the counter: no inference across it.
        let h = history(
            &s,
            vec![grant(3 * SEC, 1, 5), crash(2 * SEC), grant(SEC, 2, 6)],
        );
        let five = h
            .events
            .iter()
            .find(|e| matches!(e.kind, EventKind::Grant { token: Some(5), .. }))
            .unwrap();
        assert_eq!(five.time, 3 * SEC);
    }

    #[test]
    fn a_torn_last_line_is_dropped_and_other_junk_refused() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("c1.log");
        let good = r#"{"id":0,"time":5,"node":1,"wall":5,"mono":5,"type":"fault_end","what":"x"}"#;
        std::fs::write(&p, format!("{good}\n{{\"id\":0,\"ti")).unwrap();
        assert_eq!(read_log(&p).unwrap().len(), 1);
        std::fs::write(&p, format!("junk\n{good}\n")).unwrap();
        assert!(read_log(&p).unwrap_err().contains("c1.log:1"));
    }
}
