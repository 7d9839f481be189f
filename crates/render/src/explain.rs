//! Plain words for a violation, built from its witness: who held what when, what ended each
//! hold, and which faults acted on the nodes involved.

use locksim_check::holds::{Hold, HoldEnd};
use locksim_core::history::{EventKind, OpF};
use locksim_core::time::fmt_nanos;
use locksim_core::{Fault, History, Nanos, NodeId, Property, Scenario, Violation};

fn t(ns: Nanos) -> String {
    fmt_nanos(ns as i128)
}

/// The faults that acted on one of `nodes` (or on the whole network) between `from` and `to`,
/// described with their times, at most five.
fn faults_in_play(s: &Scenario, h: &History, nodes: &[NodeId], from: Nanos, to: Nanos) -> String {
    let mut out: Vec<String> = Vec::new();
    for e in &h.events {
        let EventKind::Fault { fault } = &e.kind else {
            continue;
        };
        let lasts = match fault {
            Fault::Pause { duration, .. }
            | Fault::Partition { duration, .. }
            | Fault::PartitionOneway { duration, .. }
            | Fault::Isolate { duration, .. }
            | Fault::Loss { duration, .. }
            | Fault::Delay { duration, .. }
            | Fault::Duplicate { duration, .. }
            | Fault::DropReplies { duration, .. } => *duration,
            Fault::Crash { restart_after, .. } => restart_after.unwrap_or(h.end),
            // Clock changes matter from when they happen to the end.
            Fault::ClockStep { .. } | Fault::ClockDrift { .. } => h.end,
            Fault::Heal | Fault::IsolateLeader { .. } => 0,
        };
        if e.time > to || e.time.saturating_add(lasts) < from {
            continue;
        }
        let touches = match fault.node() {
            Some(n) => nodes.contains(&n),
            None => true,
        };
        if touches && out.len() < 5 {
            out.push(format!("at {}: {}", t(e.time), fault.describe(&s.cluster)));
        }
    }
    if out.is_empty() {
        String::new()
    } else {
        format!(" Faults acting then: {}.", out.join("; "))
    }
}

fn hold_by_ok(holds: &[Hold], ok: u64) -> Option<&Hold> {
    holds.iter().find(|x| x.acquired == ok)
}

fn token(x: Option<u64>) -> String {
    x.map_or(String::new(), |x| format!(" with fencing token {x}"))
}

fn s1(s: &Scenario, h: &History, holds: &[Hold], v: &Violation) -> Option<String> {
    let c = &s.cluster;
    let a = hold_by_ok(holds, *v.events.first()?)?;
    let b = hold_by_ok(holds, *v.events.get(1)?)?;
    let (an, bn) = (c.name(a.client), c.name(b.client));
    let mut text = format!(
        "{an} acquired k{} at {}{}",
        a.key,
        t(a.start),
        token(a.token)
    );
    match a.deadline {
        Some(d) => text += &format!("; by its own clock its lease ended at {}.", t(d)),
        None => text += " and kept no deadline of its own (it trusted the lock until it released).",
    }
    text += &match a.ended_by {
        HoldEnd::LateWrite(w) => {
            let late = a.deadline.map_or(String::new(), |d| {
                format!(", {} after its lease had ended", t(a.end.saturating_sub(d)))
            });
            let paused = h.events.iter().find_map(|e| match &e.kind {
                EventKind::Fault {
                    fault: Fault::Pause { node, duration, task: locksim_core::fault::PauseTask::Process },
                } if *node == a.client && e.time >= a.start && e.time <= a.end => Some(format!(
                    " It {} paused for {} at {} (a stop-the-world pause such as GC) and woke up believing it still held the lock.",
                    // Only a client that checks its lease is known to have checked it (a user's
                    // own client records no such check).
                    if s.workload.check_validity { "had checked its lease before the work, then was" } else { "was" },
                    t(*duration),
                    t(e.time)
                )),
                _ => None,
            });
            format!(
                " Yet it still wrote to the resource at {}{late} (event #{w}).{}",
                t(a.end),
                paused.unwrap_or_default()
            )
        }
        HoldEnd::Deadline(_) => format!(" It held until {}, when that lease ran out.", t(a.end)),
        HoldEnd::Release(_) => format!(" It held until it released the lock at {}.", t(a.end)),
        HoldEnd::Lost(_) => format!(" It held until it gave the lock up at {}.", t(a.end)),
        HoldEnd::Crash(_) => format!(" It held until it crashed at {}.", t(a.end)),
        HoldEnd::RunEnd => " It held until the run ended.".to_string(),
    };
    text += &format!(
        " Meanwhile {bn} acquired k{} at {}{}",
        b.key,
        t(b.start),
        token(b.token)
    );
    text += &match a.deadline {
        Some(d) if b.start < d => format!(
            ", {} before {an}'s lease ended: the lock service granted the lock while {an}'s lease was still valid.",
            t(d - b.start)
        ),
        Some(_) => format!(
            ", after {an}'s lease had ended — correct of the lock service; the fault is {an} acting late."
        ),
        None => ".".to_string(),
    };
    if let Some((from, to)) = v.window {
        text += &format!(
            " So both held k{} from {} to {} ({}): a double grant.",
            a.key,
            t(from),
            t(to),
            t(to.saturating_sub(from))
        );
    }
    let mut nodes = vec![a.client, b.client];
    nodes.extend(c.server_ids());
    text += &faults_in_play(s, h, &nodes, a.start, a.end.max(b.start));
    Some(text)
}

fn s2(s: &Scenario, h: &History, holds: &[Hold], v: &Violation) -> Option<String> {
    let c = &s.cluster;
    let stale = h.events.get(*v.events.first()? as usize)?;
    let a = hold_by_ok(holds, *v.events.get(1)?)?;
    let an = c.name(a.client);
    let mut text = format!(
        "The resource accepted {an}'s write to k{} at {}, made under the grant {an} acquired at {}{}.",
        a.key,
        t(stale.time),
        t(a.start),
        token(a.token)
    );
    // [stale, its grant, later grant, later write] or [stale, its grant, higher-token write].
    if v.events.len() >= 4 {
        let b = hold_by_ok(holds, v.events[2])?;
        let bw = h.events.get(v.events[3] as usize)?;
        let later = if b.granted_by.is_some() {
            format!(
                "a grant the lock service made later, at {}{}",
                t(b.granted),
                token(b.token)
            )
        } else {
            format!(
                "a later grant (acquired at {}{})",
                t(b.start),
                token(b.token)
            )
        };
        text += &format!(
            " It had already accepted {}'s write at {} under {later}, so {an}'s stale data overwrote newer data.",
            c.name(b.client),
            t(bw.time),
        );
        text += &if a.token.is_none() {
            " Without fencing tokens the resource cannot tell an old holder from a new one."
                .to_string()
        } else if a.token >= b.token {
            " Fencing did not help: the later grant's token was not higher — the token counter went back (e.g. a server restarted without the counter on disk).".to_string()
        } else {
            " The resource did not reject the lower token.".to_string()
        };
    } else if let Some(w) = v.events.get(2).and_then(|&id| h.events.get(id as usize)) {
        text += &format!(
            " Its token was lower than the one the resource had accepted at {}: accepted fencing tokens went down.",
            t(w.time)
        );
    }
    let written = h.events.iter().rev().find(|e| {
        e.time <= stale.time
            && matches!(&e.kind, EventKind::Op { f: OpF::Write, handle: Some(x), .. } if *x == a.handle)
    });
    if let (Some(w), Some(d)) = (written, a.deadline) {
        if w.time > d {
            text += &format!(
                " {an} sent that write at {}, {} after its own lease had ended.",
                t(w.time),
                t(w.time - d)
            );
        }
    }
    let mut nodes = vec![a.client];
    nodes.extend(c.server_ids());
    text += &faults_in_play(s, h, &nodes, a.start, stale.time);
    Some(text)
}

/// A short paragraph explaining violation `v` of the run, from its witness events, the holds
/// and the faults. Falls back to the checker's summary when the witness cannot be read.
pub fn explain(
    s: &Scenario,
    h: &History,
    holds: &[Hold],
    v: &Violation,
    record: bool,
    session: bool,
) -> String {
    let text = match v.kind {
        Property::S1 => s1(s, h, holds, v),
        Property::S2 => s2(s, h, holds, v),
        _ => None,
    };
    match text {
        Some(t) => t,
        None if v.kind == Property::S3 => {
            let from = v
                .events
                .iter()
                .filter_map(|&id| h.events.get(id as usize))
                .map(|e| e.time)
                .min()
                .unwrap_or(0);
            // The spec S3 used: a compare-and-swap record (k8s-lease's API server judges no
            // time: the recorded holder may release, renew or take the record back at any
            // time) or a lease the service ends itself.
            let spec = if record {
                format!(
                    "fit no correct compare-and-swap lease record with lease {} and clock uncertainty {} (the recorded holder may release, renew or take the record back at any time; another client may take it only once the lease has ended): the service itself misbehaved (e.g. let another client take the record before the holder's lease had ended)",
                    t(s.workload.ttl),
                    t(s.workload.uncertainty()),
                )
            } else if session {
                format!(
                    "fit no correct session lock with session timeout {} and clock uncertainty {} (the holder may release or renew at any time while it holds, its session renewed by pings; another client may take the lock only once the holder released it or a session timeout after the grant at the earliest): the service itself misbehaved (e.g. granted the lock while the holder's node still existed)",
                    t(s.workload.ttl),
                    t(s.workload.uncertainty()),
                )
            } else {
                format!(
                    "fit no correct lease lock with TTL {} and clock uncertainty {}: the service itself misbehaved (e.g. granted the lock before the holder's lease had ended)",
                    t(s.workload.ttl),
                    t(s.workload.uncertainty()),
                )
            };
            format!(
                "{}. The answers the clients got from the lock service {spec}.{}",
                v.summary.trim_end_matches('.'),
                faults_in_play(
                    s,
                    h,
                    &s.cluster.server_ids().collect::<Vec<_>>(),
                    from,
                    h.end
                )
            )
        }
        None if v.kind == Property::S4 => format!(
            "{}. A release should free only the grant it names; this one freed a later grant's \
             lock, so as far as the service knew the lock was free while that grant's holder \
             believed it held it, and any waiter could be let in (a retried unlock that \
             deletes by key name: case K3).",
            v.summary.trim_end_matches('.')
        ),
        None => v.summary.clone(),
    }
}
