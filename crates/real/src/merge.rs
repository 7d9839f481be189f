//! The history of a real run: the events every node process logged, and the harness' own
//! fault events, merged in true-time order (the host's `CLOCK_MONOTONIC` is one clock for all
//! processes), numbered, and each validity deadline mapped to the true time at which the
//! client's virtual clock reaches it.

use std::path::Path;

use locksim_core::history::{Event, EventKind};
use locksim_core::{History, Role, Scenario};

use crate::vclock::VClock;

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

/// Merges `events` (any order) into the history of `scenario`.
pub fn history(scenario: &Scenario, mut events: Vec<Event>) -> History {
    // Stable: events of one process at the same nanosecond keep their log order.
    events.sort_by_key(|e| e.time);
    let clocks: Vec<Option<VClock>> = (0..scenario.cluster.nodes())
        .map(|n| (scenario.cluster.role(n) == Role::Client).then(|| VClock::of(scenario, n)))
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
