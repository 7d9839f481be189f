//! A human-readable account of one run: the text timeline of `locksim run` and `locksim real`.

use std::collections::BTreeSet;
use std::fmt::Write;

use locksim_core::history::{EventKind, OpF, Phase};
use locksim_core::time::fmt_nanos;
use locksim_core::{Event, History, Scenario, Verdict};

use locksim_core::text::plural;

fn interesting(e: &Event) -> bool {
    matches!(
        e.kind,
        EventKind::Fault { .. }
            | EventKind::FaultEnd { .. }
            | EventKind::Lost { .. }
            | EventKind::WriteRejected { .. }
    )
}

/// The scenario, a timeline and the verdict, as text.
/// `liveness`: whether L1–L3 were checked (a safe verdict says so, or says they were not).
pub fn render(s: &Scenario, h: &History, v: &Verdict, all: bool, liveness: bool) -> String {
    let mut t = String::new();
    header(&mut t, s, h);
    events(&mut t, s, h, v, all);
    totals(&mut t, h);
    notes(&mut t, s, h);
    verdict(&mut t, h, v, liveness);
    t
}

/// The run's first lines: algorithm, seed, cluster, workload, faults, network and settings.
fn header(t: &mut String, s: &Scenario, h: &History) {
    let c = &s.cluster;
    let _ = writeln!(
        t,
        "{} seed {} — {}, {}, ttl {}, {} of workload (the run ends at {}), faults: {}, network: {}",
        s.algorithm,
        s.seed,
        plural(c.servers, "server"),
        plural(c.clients, "client"),
        fmt_nanos(s.workload.ttl as i128),
        fmt_nanos(s.workload.duration as i128),
        fmt_nanos(h.end as i128),
        {
            // Seeded kinds draw faults; a file's [[fault]] entries are explicit. "none" with
            // a plan is a plan-only file: say "plan", as the campaign table does.
            let kinds: Vec<&str> = s
                .fault_kinds
                .iter()
                .map(|k| k.name())
                .filter(|k| *k != "none")
                .collect();
            let n = plural(s.faults.len() as u64, "fault");
            match (kinds.is_empty(), s.faults.is_empty()) {
                (true, true) => "none".to_string(),
                (true, false) => format!("plan ({n})"),
                (false, _) => format!("{} ({n} in its plan, drawn and explicit)", kinds.join(",")),
            }
        },
        // Which network the run had: the same file reads differently under each.
        match s.workload.network {
            locksim_core::Network::Tcp => format!("tcp (crash = {})", s.workload.crash.name()),
            locksim_core::Network::Datagram => "datagram".to_string(),
        }
    );
    if !s.config.is_empty() {
        let cfg: Vec<String> = s.config.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(t, "settings: {}", cfg.join(" "));
    }
}

/// The timeline: every event with `all`, else faults, losses, rejections and the witnesses.
fn events(t: &mut String, s: &Scenario, h: &History, v: &Verdict, all: bool) {
    let c = &s.cluster;
    let witnesses: BTreeSet<u64> = v
        .violations
        .iter()
        .flat_map(|x| x.events.iter().copied())
        .collect();
    let _ = writeln!(
        t,
        "\ntimeline: true time, node, the node's wall-clock offset from true time (when not 0), event{}",
        if all { "" } else { " [#id: witnesses of a violation]" }
    );
    let mut shown = 0;
    for e in &h.events {
        let is_witness = witnesses.contains(&e.id);
        if !(all || interesting(e) || is_witness) {
            continue;
        }
        shown += 1;
        let skew = e.wall as i128 - e.time as i128;
        let _ = writeln!(
            t,
            "  {:>9}  {:<4} {:>9}  {}{}",
            fmt_nanos(e.time as i128),
            c.name(e.node),
            if skew == 0 {
                String::new()
            } else {
                format!("{:+}", fmt_nanos(skew)).replace("+-", "-")
            },
            locksim_render::describe::event(c, e),
            if is_witness || all {
                format!("  [#{}]", e.id)
            } else {
                String::new()
            }
        );
    }
    if shown == 0 {
        *t += "  (no faults, losses or rejections; --events shows every event)\n";
    }
}

/// The operation counts (Jepsen's ok/fail/info) and the digest.
fn totals(t: &mut String, h: &History) {
    let count = |f: OpF, p: Phase| {
        h.events
            .iter()
            .filter(
                |e| matches!(e.kind, EventKind::Op { f: ff, phase: pp, .. } if ff == f && pp == p),
            )
            .count()
    };
    let _ = writeln!(
        t,
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
    *t += "(Jepsen's terms: ok = it happened, fail = it did not, info = unknown, e.g. a timeout; \
          a handle is one grant of the lock)\n";
    let _ = writeln!(t, "digest: {}", h.digest());
}

/// Notes on what the run did not exercise: operations stuck at the end, triggers that never
/// fired, a plan none of whose faults took effect.
fn notes(t: &mut String, s: &Scenario, h: &History) {
    let c = &s.cluster;
    let end = h.end;
    // Waiting for more than a second at the end: a client stuck on a request (no timeout
    // into a host that never came back), not one whose answer was simply due.
    let stuck: Vec<_> = crate::outcome::pending_at_end(h)
        .into_iter()
        .filter(|p| end.saturating_sub(p.invoked_ns) > 1_000_000_000)
        .collect();
    if let Some(first) = stuck.first() {
        let _ = writeln!(
            t,
            "note: {} still waiting for an answer when the run ended, for more than a second \
             (the first: {}'s {} invoked at {}): a request without a timeout waits until it \
             is answered or TCP gives up, and a queued lock request waits for the lock (behind \
             a holder, a lock-delay or a lock_wait)",
            match stuck.len() {
                1 => "1 operation was".to_string(),
                n => format!("{n} operations were"),
            },
            c.name(first.node),
            format!("{:?}", first.f).to_lowercase(),
            fmt_nanos(first.invoked_ns as i128)
        );
    }
    for line in locksim_core::trigger::never_fired(&s.faults, h, &s.cluster) {
        let _ = writeln!(t, "note: {line} (it applied nothing)");
    }
    let applied = crate::outcome::faults_applied(h);
    if !s.faults.is_empty() && applied == 0 {
        // Issue #24, item 5: e.g. `isolate the leader` with no leader to isolate.
        let _ = writeln!(
            t,
            "note: none of the plan's {} took effect (nothing to act on, e.g. no leader to \
             isolate): this run tested the fault-free case",
            plural(s.faults.len() as u64, "fault")
        );
    }
}

/// The verdict line and the violations' summaries.
fn verdict(t: &mut String, h: &History, v: &Verdict, liveness: bool) {
    if v.is_safe() && !v.inconclusive.is_empty() {
        let undecided: Vec<String> = v.undecided().iter().map(|p| p.to_string()).collect();
        let _ = writeln!(
            t,
            "\nverdict: UNDECIDED {} (no property is violated, but a check ran out of its budget: \
             the run is not shown safe)",
            undecided.join(", ")
        );
    } else if v.is_safe() && crate::outcome::grants(h) == 0 {
        // A zero is not a pass (issue #24, item 6): nothing held the lock, so nothing could
        // break it.
        *t += "\nverdict: NOTHING EXERCISED (no client was granted the lock, so S1-S4 and L1-L3 \
              hold only because nothing happened: the run proves nothing; exit 3)\n";
    } else if v.is_safe() && crate::outcome::writes_accepted(h) == 0 {
        // Grants, but no write reached the resource: S2 held only because nothing was written.
        *t += "\nverdict: SAFE, S2 UNTESTED (S1 mutual exclusion, S3 linearizability and S4 \
              own-incarnation release hold; no write reached the resource, so S2, resource \
              safety, was never exercised; ";
        *t += if liveness {
            "the liveness properties L1-L3 hold)\n"
        } else {
            "liveness, L1-L3, was not checked: --liveness checks it)\n"
        };
    } else if v.is_safe() {
        *t +=
            "\nverdict: SAFE (S1 mutual exclusion, S2 resource safety, S3 linearizability and S4 \
              own-incarnation release hold; ";
        *t += if liveness {
            "so do the liveness properties L1-L3)\n"
        } else {
            "liveness, L1-L3, was not checked: --liveness checks it)\n"
        };
    } else {
        let kinds: Vec<String> = v.kinds().iter().map(|k| k.to_string()).collect();
        let _ = writeln!(t, "\nverdict: VIOLATED {}", kinds.join(", "));
        for x in &v.violations {
            let mut ids = x.events.clone();
            ids.sort_unstable();
            ids.dedup();
            let ids: Vec<String> = ids.iter().map(|i| format!("#{i}")).collect();
            let _ = writeln!(t, "  {}: {}  ({})", x.kind, x.summary, ids.join(" "));
        }
        if v.omitted > 0 {
            let _ = writeln!(t, "  … and {} more", v.omitted);
        }
    }
    for note in &v.inconclusive {
        let _ = writeln!(t, "  undecided: {note}");
    }
}
