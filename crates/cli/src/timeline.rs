//! A human-readable account of one run.

use std::collections::BTreeSet;

use locksim_core::history::{EventKind, OpF, Phase};
use locksim_core::time::fmt_nanos;
use locksim_core::{Event, History, Scenario, Verdict};

fn describe(s: &Scenario, e: &Event) -> String {
    let c = &s.cluster;
    match &e.kind {
        EventKind::Op {
            phase,
            f,
            key,
            handle,
            token,
            deadline,
            error,
            ..
        } => {
            let mut t = format!("{:?} {:?} k{key}", f, phase).to_lowercase();
            if let Some(h) = handle {
                t += &format!(" handle {h}");
            }
            if let Some(tok) = token {
                t += &format!(" token {tok}");
            }
            if let Some(d) = deadline {
                t += &format!(" (valid until {})", fmt_nanos(d.at as i128));
            }
            if let Some(err) = error {
                t += &format!(": {err}");
            }
            t
        }
        EventKind::Lost {
            key,
            handle,
            reason,
        } => format!("gives up k{key} handle {handle}: {reason}"),
        EventKind::Grant { key, client, token } => match token {
            Some(t) => format!("grants k{key} to {} with token {t}", c.name(*client)),
            None => format!("grants k{key} to {}", c.name(*client)),
        },
        EventKind::WriteAccepted { key, handle, token } => match token {
            Some(t) => format!("accepts a write to k{key} from handle {handle} (token {t})"),
            None => format!("accepts a write to k{key} from handle {handle}"),
        },
        EventKind::WriteRejected {
            key,
            handle,
            token,
            highest,
        } => format!(
            "REJECTS a write to k{key} from handle {handle}: token {token} < highest {highest}"
        ),
        EventKind::Fault { fault } => format!("FAULT {}", fault.describe(c)),
        EventKind::FaultEnd { what } => format!("fault ends: {what}"),
    }
}

fn interesting(e: &Event) -> bool {
    matches!(
        e.kind,
        EventKind::Fault { .. }
            | EventKind::FaultEnd { .. }
            | EventKind::Lost { .. }
            | EventKind::WriteRejected { .. }
    )
}

/// Prints the scenario, a timeline and the verdict.
pub fn print(s: &Scenario, h: &History, v: &Verdict, all: bool) {
    let c = &s.cluster;
    println!(
        "{} seed {} — {} servers, {} clients, ttl {}, {} simulated, faults: {}",
        s.algorithm,
        s.seed,
        c.servers,
        c.clients,
        fmt_nanos(s.workload.ttl as i128),
        fmt_nanos(s.workload.duration as i128),
        s.fault_kinds
            .iter()
            .map(|k| k.name())
            .collect::<Vec<_>>()
            .join(",")
    );
    if !s.config.is_empty() {
        let cfg: Vec<String> = s.config.iter().map(|(k, v)| format!("{k}={v}")).collect();
        println!("settings: {}", cfg.join(" "));
    }
    let witnesses: BTreeSet<u64> = v
        .violations
        .iter()
        .flat_map(|x| x.events.iter().copied())
        .collect();
    println!("\ntimeline (true time, node, local wall-clock offset from true time):");
    let mut shown = 0;
    for e in &h.events {
        let is_witness = witnesses.contains(&e.id);
        if !(all || interesting(e) || is_witness) {
            continue;
        }
        shown += 1;
        let skew = e.wall as i128 - e.time as i128;
        println!(
            "  {:>9}  {:<4} {:>9}  {}{}",
            fmt_nanos(e.time as i128),
            c.name(e.node),
            if skew == 0 {
                String::new()
            } else {
                format!("{:+}", fmt_nanos(skew)).replace("+-", "-")
            },
            describe(s, e),
            if is_witness && !all {
                format!("  [#{}]", e.id)
            } else {
                String::new()
            }
        );
    }
    if shown == 0 {
        println!("  (no faults, losses or rejections; --events shows every event)");
    }
    let count = |f: OpF, p: Phase| {
        h.events
            .iter()
            .filter(
                |e| matches!(e.kind, EventKind::Op { f: ff, phase: pp, .. } if ff == f && pp == p),
            )
            .count()
    };
    println!(
        "\nacquires: {} ok, {} fail, {} info; writes: {} ok, {} fail, {} info; {} events, {} messages ({} dropped)",
        count(OpF::Acquire, Phase::Ok),
        count(OpF::Acquire, Phase::Fail),
        count(OpF::Acquire, Phase::Info),
        count(OpF::Write, Phase::Ok),
        count(OpF::Write, Phase::Fail),
        count(OpF::Write, Phase::Info),
        h.events.len(),
        h.messages_sent,
        h.messages_dropped
    );
    println!("digest: {}", h.digest());
    if v.is_safe() {
        println!("\nverdict: SAFE (S1 mutual exclusion and S2 resource safety hold)");
    } else {
        let kinds: Vec<String> = v.kinds().iter().map(|k| k.to_string()).collect();
        println!("\nverdict: VIOLATED {}", kinds.join(", "));
        for x in &v.violations {
            println!("  {}: {}  (events {:?})", x.kind, x.summary, x.events);
        }
        if v.omitted > 0 {
            println!("  … and {} more", v.omitted);
        }
    }
}
