//! S2, resource safety (DESIGN §7): the resource never accepts a write from a holder after it
//! accepted a write from a later grant of the same key; with fencing tokens, the accepted tokens
//! of a key never decrease. "Later grant" means a hold that started later in true time.

use std::collections::BTreeMap;

use locksim_core::history::EventKind;
use locksim_core::time::fmt_nanos;
use locksim_core::{Event, History, Property, Verdict, Violation};

use crate::holds::Hold;
use crate::{Names, MAX_LISTED_PER_KEY};

struct Newest<'a> {
    hold: &'a Hold,
    write: &'a Event,
}

/// Adds one S2 violation per stale accepted write to `verdict` (at most [`MAX_LISTED_PER_KEY`]
/// listed per key, the rest counted in `omitted`).
pub fn check(history: &History, holds: &[Hold], names: Names, verdict: &mut Verdict) {
    let by_handle: BTreeMap<u64, &Hold> = holds.iter().map(|h| (h.handle, h)).collect();
    let mut newest: BTreeMap<u32, Newest> = BTreeMap::new();
    let mut max_token: BTreeMap<u32, (u64, &Event)> = BTreeMap::new();
    let mut listed: BTreeMap<u32, usize> = BTreeMap::new();
    for e in &history.events {
        let EventKind::WriteAccepted { key, handle, token } = &e.kind else {
            continue;
        };
        let Some(hold) = by_handle.get(handle) else {
            continue;
        };
        let mut stale_by: Option<(String, Vec<u64>)> = None;
        if let Some(n) = newest.get(key) {
            if hold.start < n.hold.start && n.hold.handle != hold.handle {
                stale_by = Some((
                    format!(
                        "after accepting {}'s write at {} under the later grant acquired at {}",
                        names.of(n.hold.client),
                        fmt_nanos(n.write.time as i128),
                        fmt_nanos(n.hold.start as i128)
                    ),
                    vec![e.id, hold.acquired, n.hold.acquired, n.write.id],
                ));
            }
        }
        if let (Some(t), Some(&(mt, mw))) = (token, max_token.get(key)) {
            if *t < mt && stale_by.is_none() {
                stale_by = Some((
                    format!(
                        "with token {t} after accepting token {mt} at {}",
                        fmt_nanos(mw.time as i128)
                    ),
                    vec![e.id, hold.acquired, mw.id],
                ));
            }
        }
        if let Some((why, events)) = stale_by {
            let n = listed.entry(*key).or_default();
            if *n >= MAX_LISTED_PER_KEY {
                verdict.omitted += 1;
            } else {
                *n += 1;
                verdict.violations.push(Violation {
                    kind: Property::S2,
                    key: *key,
                    summary: format!(
                        "stale write on k{key}: {} accepted {}'s write at {} (grant acquired at {}) {why}",
                        names.of(e.node),
                        names.of(hold.client),
                        fmt_nanos(e.time as i128),
                        fmt_nanos(hold.start as i128),
                    ),
                    events,
                    window: None,
                });
            }
        }
        match newest.get(key) {
            Some(n) if n.hold.start >= hold.start => {}
            _ => {
                newest.insert(*key, Newest { hold, write: e });
            }
        }
        if let Some(t) = token {
            match max_token.get(key) {
                Some(&(mt, _)) if mt >= *t => {}
                _ => {
                    max_token.insert(*key, (*t, e));
                }
            }
        }
    }
}
