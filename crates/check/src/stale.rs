//! S2, resource safety (docs/design.md §7): the resource never accepts a write from a holder after it
//! accepted a write from a later grant of the same key; with fencing tokens, the accepted tokens
//! of a key never decrease.
//!
//! "Later" is the **service's** order: the true time at which the service decided each grant
//! ([`Hold::granted`]: its `grant` record; for Redlock, the moment a majority of masters had
//! granted), never the moment the client heard `ok`. Replies overtake each other (two grants
//! answered in the same millisecond, a reply delayed past the next grant's), so the `ok` order
//! would call a correctly fenced write stale. Histories without grant records (custom
//! algorithms that record none, histories recorded elsewhere) fall back to the `ok` order.
//!
//! Tokens that restart low after a crash are still caught: the old holder's grant was decided
//! before the crash, so its write accepted after the new (low-token) holder's is stale by the
//! service's order even though its token is higher.

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
            if hold.granted < n.hold.granted && n.hold.handle != hold.handle {
                // Witnesses: the stale write, both acquire `ok`s, the newer write, then the
                // service's grant records (when recorded).
                let mut events = vec![e.id, hold.acquired, n.hold.acquired, n.write.id];
                events.extend(hold.granted_by);
                events.extend(n.hold.granted_by);
                stale_by = Some((
                    format!(
                        "after accepting {}'s write at {} under a later grant, made at {}",
                        names.of(n.hold.client),
                        fmt_nanos(n.write.time as i128),
                        fmt_nanos(n.hold.granted as i128)
                    ),
                    events,
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
                        "stale write on k{key}: {} accepted {}'s write at {} (granted at {}) {why}",
                        names.of(e.node),
                        names.of(hold.client),
                        fmt_nanos(e.time as i128),
                        fmt_nanos(hold.granted as i128),
                    ),
                    events,
                    window: None,
                });
            }
        }
        match newest.get(key) {
            Some(n) if n.hold.granted >= hold.granted => {}
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
