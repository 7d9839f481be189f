//! S1, mutual exclusion in true time (docs/design.md §7): for one key, no two hold intervals of
//! different holders (clients, or distinct lock handles of one client) overlap.

use locksim_core::time::fmt_nanos;
use locksim_core::{Property, Verdict, Violation};

use crate::holds::{Hold, HoldEnd};
use crate::{Names, MAX_LISTED_PER_KEY};

fn ended(h: &Hold) -> &'static str {
    match h.ended_by {
        HoldEnd::Release(_) => "released",
        HoldEnd::Deadline(_) => "validity ran out",
        HoldEnd::Lost(_) => "gave up",
        HoldEnd::Crash(_) => "crashed",
        HoldEnd::RunEnd => "run ended",
        HoldEnd::LateWrite(_) => "last wrote",
    }
}

/// Adds one S1 violation per overlapping pair of holds to `verdict` (at most
/// [`MAX_LISTED_PER_KEY`] listed per key, the rest counted in `omitted`). `holds` must be sorted
/// by (key, start), as [`crate::derive_holds`] returns them.
pub fn check(holds: &[Hold], names: Names, verdict: &mut Verdict) {
    let mut active: Vec<&Hold> = Vec::new();
    let mut listed = 0usize;
    let mut key = None;
    for b in holds {
        if key != Some(b.key) {
            key = Some(b.key);
            active.clear();
            listed = 0;
        }
        active.retain(|a| a.end > b.start);
        for a in &active {
            // Half-open intervals: an overlap needs a positive length (a zero-length hold,
            // given up at once, overlaps nothing).
            if a.handle == b.handle || a.end.min(b.end) <= b.start {
                continue;
            }
            if listed >= MAX_LISTED_PER_KEY {
                verdict.omitted += 1;
                continue;
            }
            listed += 1;
            let (from, to) = (b.start, a.end.min(b.end));
            let mut events = vec![a.acquired, b.acquired];
            events.extend(a.ended_by.event());
            events.extend(b.ended_by.event());
            verdict.violations.push(Violation {
                kind: Property::S1,
                key: b.key,
                summary: format!(
                    "double grant on k{}: {} held from {} until {} ({}), {} acquired at {}; \
                     both held for {}",
                    b.key,
                    names.of(a.client),
                    fmt_nanos(a.start as i128),
                    fmt_nanos(a.end as i128),
                    ended(a),
                    names.of(b.client),
                    fmt_nanos(b.start as i128),
                    fmt_nanos((to - from) as i128),
                ),
                events,
                window: Some((from, to)),
            });
        }
        active.push(b);
    }
}
