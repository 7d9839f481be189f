//! A campaign's cells as text, as `locksim campaign` and `locksim merge` print them: the
//! matrix (one row per algorithm and fault kind, a column per property), the lock metrics
//! under it, and the legend printed once after the tables. Times are true (simulated) time.

use locksim_core::text::plural;
use locksim_core::time::fmt_nanos;
use locksim_core::Property;

use crate::CellSummary;

/// Whether a table of `cells` shows the L1–L3 columns: when asked (`--check liveness`, a
/// campaign file that names an L property), and whenever some seed violates one or leaves one
/// undecided (issue #24, item 7: a violated property is never hidden behind a footnote).
pub fn shows_liveness(cells: &[CellSummary], asked: bool) -> bool {
    asked
        || cells.iter().any(|c| {
            Property::LIVENESS
                .iter()
                .any(|&p| c.violated(p) > 0 || c.undecided_on(p) > 0)
        })
}

/// The matrix as text, without the [`legend`] (printed once after all tables): S1–S4, and L1–L3 when `liveness` (see
/// [`shows_liveness`]), as columns, then the lock metrics. A cell whose plans held faults of
/// which none took effect shows `n/a` for the properties no seed violated (it tested the
/// fault-free case only).
pub fn table_body(cells: &[CellSummary], liveness: bool) -> String {
    let cols: Vec<Property> = Property::ALL
        .into_iter()
        .filter(|p| liveness || !p.is_liveness())
        .collect();
    let (aw, width) = widths(cells);
    let mut t = format!("{:<aw$} {:<width$} {:>6}", "algorithm", "faults", "seeds");
    for p in &cols {
        t += &format!(" {:>6}", p.to_string());
    }
    t += &format!(" {:>8}  first failing seed\n", "grants");
    let mark = |c: &CellSummary, p: Property| {
        if (!c.checked.contains(&p) && c.seeds > c.errors)
            || (c.violated(p) == 0 && c.no_fault_took_effect())
        {
            "n/a".to_string()
        } else if c.violated(p) == 0 {
            "-".to_string()
        } else {
            c.violated(p).to_string()
        }
    };
    for c in cells {
        let shown = c.first_violating(&cols);
        let mut first = shown.map_or("-".to_string(), |s| s.to_string());
        if c.errors > 0 {
            first += &format!(
                "  ({} failed to run, first seed {})",
                plural(c.errors, "seed"),
                c.first_error_seed.unwrap_or(0)
            );
        }
        if c.undecided_seeds > 0 {
            let which: Vec<String> = c.undecided.keys().map(|p| p.to_string()).collect();
            first += &format!(
                "  (UNDECIDED: {} on {}, first seed {})",
                which.join(", "),
                plural(c.undecided_seeds, "seed"),
                c.first_undecided_seed.unwrap_or(0)
            );
        }
        if let Some(w) = starved(c) {
            first += &format!("  {w}");
        }
        if c.no_grant_seeds > 0 && c.grants > 0 {
            first += &format!(
                "  (NO GRANT in {} of {} seeds, first seed {}: those prove nothing and are not counted safe)",
                c.no_grant_seeds,
                c.seeds - c.errors,
                c.first_no_grant_seed.unwrap_or(0)
            );
        }
        if c.never_fired_seeds > 0 {
            first += &format!(
                "  (a trigger of the plan never fired in {} of {} seeds)",
                c.never_fired_seeds,
                c.seeds - c.errors
            );
        }
        if c.counts.no_write_accepted(c.seeds - c.errors) {
            first += "  (NO WRITES: no write reached the resource in any seed: S2 proves nothing)";
        }
        if c.counts.runs_without_grant_records > 0 {
            first += &format!(
                "  (NO GRANT RECORDS in {} of {} seeds: the service recorded no `grant` event, so S2 and S4 order grants by the clients' `ok`, which can raise false alarms)",
                c.counts.runs_without_grant_records,
                c.seeds - c.errors
            );
        }
        if c.no_fault_took_effect() {
            first += "  (n/a: no fault took effect in any seed)";
        } else if c.kind_untested() {
            first += &format!(
                "  (no {} fault took effect in any seed: only the plan did)",
                c.faults.name()
            );
        } else if c.unfaulted_seeds() > 0 {
            first += &format!(
                "  (faults took effect in {} of {} seeds)",
                c.faulted_seeds,
                c.seeds - c.errors
            );
        }
        t += &format!(
            "{:<aw$} {:<width$} {:>6}",
            c.algorithm,
            c.faults_label(),
            c.seeds
        );
        for &p in &cols {
            t += &format!(" {:>6}", mark(c, p));
        }
        t += &format!(" {:>8}  {}\n", c.grants, first);
    }
    t += &metrics_table(cells);
    t
}

/// The `starved` warning of a cell whose waiters were mostly kept waiting while nobody held
/// the lock ([`locksim_check::metrics::Counts::starved`]): few grants because one holder held
/// for long is not starvation.
pub fn starved(c: &CellSummary) -> Option<String> {
    let n = &c.counts;
    n.starved().then(|| {
        let tries = format!("{} of {} acquire attempts succeeded", c.grants, n.acquires);
        if n.waiting_ns == 0 {
            return format!("starved: {tries}");
        }
        format!(
            "starved: {}% of the clients' waiting was while nobody held the lock; {tries}",
            n.waiting_free_ns * 100 / n.waiting_ns
        )
    })
}

/// The widths of the algorithm and faults columns: the widest name and label (at least 16
/// and 14), so that a long fault label (`crash-restart+plan`) does not shift the columns.
pub fn widths(cells: &[CellSummary]) -> (usize, usize) {
    let widest = |f: &dyn Fn(&CellSummary) -> usize, least: usize| {
        cells.iter().map(f).max().unwrap_or(0).max(least)
    };
    (
        widest(&|c| c.algorithm.chars().count(), 16),
        widest(&|c| c.faults_label().chars().count(), 14),
    )
}

fn metrics_table(cells: &[CellSummary]) -> String {
    let (aw, fw) = widths(cells);
    let aw = aw.max("lock metrics".len());
    let mut t = format!(
        "\n{:<aw$} {:<fw$} {:>17} {:>17} {:>17} {:>15} {:>7} {:>7} {:>16} {:>13} {:>5}\n",
        "lock metrics",
        "faults",
        "acquire p50/p99",
        "wait p50/p99",
        "hold p50/p99",
        "failed/unknown",
        "retries",
        "expired",
        "msgs (dropped)",
        "acq/s (peak)",
        "fair"
    );
    for c in cells {
        let m = metric_pairs(c);
        let v = |i: usize| m[i].1.replace(" / ", "/");
        t += &format!(
            "{:<aw$} {:<fw$} {:>17} {:>17} {:>17} {:>15} {:>7} {:>7} {:>16} {:>13} {:>5}\n",
            c.algorithm,
            c.faults_label(),
            v(0),
            v(1),
            v(2),
            format!("{}/{}", c.counts.acquires_failed, c.counts.acquires_unknown),
            c.counts.retries,
            c.counts.expired_while_held,
            v(6),
            v(7),
            v(8)
        );
    }
    t
}

fn d(ns: Option<u64>) -> String {
    ns.map_or("-".into(), |n| fmt_nanos(n as i128))
}

/// Attempts per second as a table shows them: one decimal under 10 (a quiet cell's 0.4/s is
/// not 0), whole numbers above.
fn rate(r: f64) -> String {
    if r < 10.0 {
        format!("{r:.1}")
    } else {
        format!("{r:.0}")
    }
}

/// The metrics of a cell as `[label, value]` pairs.
pub fn metric_pairs(c: &CellSummary) -> Vec<(String, String)> {
    vec![
        (
            "acquire p50 / p99".into(),
            format!(
                "{} / {}",
                d(c.acquire_latency_p50_ns),
                d(c.acquire_latency_p99_ns)
            ),
        ),
        (
            "wait p50 / p99".into(),
            format!("{} / {}", d(c.wait_p50_ns), d(c.wait_p99_ns)),
        ),
        (
            "hold p50 / p99".into(),
            format!("{} / {}", d(c.hold_p50_ns), d(c.hold_p99_ns)),
        ),
        (
            "acquires (failed, unknown)".into(),
            format!(
                "{} ({}, {})",
                c.counts.acquires, c.counts.acquires_failed, c.counts.acquires_unknown
            ),
        ),
        ("retries".into(), c.counts.retries.to_string()),
        (
            "leases expired while held".into(),
            c.counts.expired_while_held.to_string(),
        ),
        (
            "messages (dropped)".into(),
            format!("{} ({})", c.counts.messages_sent, c.counts.messages_dropped),
        ),
        (
            "acquire attempts per second (busiest 100 ms)".into(),
            match (c.counts.acquire_rate(), c.counts.acquire_peak_per_s()) {
                (Some(r), Some(peak)) => format!("{} ({peak})", rate(r)),
                _ => "-".into(),
            },
        ),
        (
            "grant fairness (Jain's index)".into(),
            c.counts
                .fairness()
                .map_or("-".into(), |f| format!("{f:.2}")),
        ),
    ]
}

/// The legend of the tables above it; with the L1–L3 lines when a table showed those columns.
/// Starts with a blank line.
pub fn legend(liveness: bool) -> String {
    let mut t = String::new();
    t += "\nEach column counts seeds (runs) that violate the property:\n";
    t += "S1 = a double grant: two clients held the lock at the same true time\n";
    t += "S2 = a stale write: the resource accepted a write from a grant after accepting one from a\n";
    t += "     grant the lock service made later\n";
    t +=
        "S3 = linearizability: the lock service's answers fit no correct lease lock (the service\n";
    t += "     itself misbehaved), or the resource's writes fit no register (a write took effect twice)\n";
    t +=
        "S4 = a release freed another grant's lock (a retried unlock deleting the next holder's)\n";
    if liveness {
        t += "L1 = a holder stopped (crashed, or stopped acting for good) and no waiting client got the\n";
        t += "     lock within ttl + lock delay + slack\n";
        t += "L2 = a healthy holder that renews lost its lock through an outage shorter than\n";
        t += "     ttl - renew_every (less the retry slack)\n";
        t += "L3 = a lock stayed taken longer than ttl + slack while no live client believed it held it\n";
    }
    t += "UNDECIDED = a check ran out of its budget on those seeds: they count as neither safe nor violated\n";
    t += "n/a = not judged: the property is not checked for this algorithm (L1 for a lock that never\n";
    t += "     expires), or the cell's faults never took effect (e.g. leader-change where no server\n";
    t += "     leads): it ran fault-free, so it is no evidence of surviving them. `none` is the control\n";
    t += "     group: no faults are meant, and its cells are judged as they are\n";
    t += "grants = successful acquires over all seeds (a cell with none would prove nothing;\n";
    t += "     `starved`: for more than half of the time clients waited for the lock, nobody held it)\n";
    t += "lock metrics (true time, over all seeds of the cell; percentiles within 1.6%): acquire =\n";
    t += "     latency of a granted acquire; wait = from a round's first attempt to its grant; hold =\n";
    t += "     length of a hold; failed/unknown = acquires answered fail / with no definite answer\n";
    t += "     (a timeout, a reset, or none by the end); expired = leases\n";
    t +=
        "     that ran out while the holder still acted on them; msgs = messages sent (dropped);\n";
    t += "     acq/s = acquire attempts per second of the whole run (the busiest 100 ms, per\n";
    t +=
        "     second); fair = Jain's index of a run's grants per client, the mean over the seeds\n";
    t += "     (1: even; 1/clients: one client got them all)\n";
    t
}
