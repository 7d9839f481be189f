//! S4, own-incarnation release (docs/design.md §7): a release, including a retried or duplicated one,
//! never frees a lock that a later grant holds.
//!
//! The evidence is service-side: an algorithm whose fencing tokens identify grants records a
//! `freed` event each time a release deletes a lock, with the token the release named and the
//! token of the lock it deleted. A release that deletes a lock with a different token freed
//! someone else's grant if that lock had been granted (deleting a key still waiting in a queue
//! frees no lock) (case K3 in `shared/cases/CASES.md`: an unlock by key name, retried
//! after its reply was lost, deletes the lock that the same session acquired again). Replicated
//! services may record one deletion more than once (on two leaders); each (key, freed token) is
//! judged once. Services without tokens name the holder of the lock they freed instead
//! (`central`, `redlock`, `redis-failover` with `release = "delete"`: owner values; `db-lease`,
//! whose ShedLock unlock matches by host name: row versions); a release whose stored value
//! differs from the one the release carried freed that holder's grant.
//! Algorithms that record no `freed` events are not judged (with the owner-checked release of
//! those lock servers, a release cannot delete another owner's key).

use std::collections::BTreeSet;

use locksim_core::history::{EventKind, OpF, Phase};
use locksim_core::time::fmt_nanos;
use locksim_core::{History, Property, Verdict, Violation};

use crate::{Names, MAX_LISTED_PER_KEY};

/// Adds one S4 violation per lock freed by a release that named another grant.
pub fn check(history: &History, names: Names, verdict: &mut Verdict) {
    let mut seen: BTreeSet<(u32, u64)> = BTreeSet::new();
    let mut listed: std::collections::BTreeMap<u32, usize> = Default::default();
    for e in &history.events {
        let EventKind::Freed {
            key,
            client,
            freed,
            released,
            holder,
        } = e.kind
        else {
            continue;
        };
        if freed == released || seen.contains(&(key, freed)) {
            continue;
        }
        if let Some(holder) = holder {
            // A service without tokens names the holder of the lock it freed: the lock was
            // live (granted) when freed, so it is freed whatever the client saw.
            seen.insert((key, freed));
            let n = listed.entry(key).or_default();
            if *n >= MAX_LISTED_PER_KEY {
                verdict.omitted += 1;
                continue;
            }
            *n += 1;
            // The holder's last grant on this server (a Redlock master), else on any (a
            // replicated service's former primary).
            let granted = |g: &&locksim_core::history::Event| matches!(g.kind, EventKind::Grant { key: k, client: c, .. } if k == key && c == holder);
            let before = &history.events[..e.id as usize];
            let grant = before
                .iter()
                .rev()
                .find(|g| g.node == e.node && granted(g))
                .or_else(|| before.iter().rev().find(granted));
            let when = grant.map_or(String::new(), |g| {
                format!(" at {}", fmt_nanos(g.time as i128))
            });
            let mut events = vec![e.id];
            events.extend(grant.map(|g| g.id));
            verdict.violations.push(Violation {
                kind: Property::S4,
                key,
                summary: format!(
                    "key {key}: {}'s release freed the lock granted to {}{when}, another grant than the one it released (matched by key or host, not by grant), at {}",
                    names.of(client),
                    names.of(holder),
                    fmt_nanos(e.time as i128)
                ),
                events,
                window: None,
            });
            continue;
        }
        // The grant whose lock was freed: the service's record of it, and the client's `ok`.
        let service = history.events[..e.id as usize].iter().find(|g| {
            matches!(g.kind, EventKind::Grant { key: k, token: Some(t), .. } if k == key && t == freed)
        });
        let acquired = history.events.iter().find(|a| {
            matches!(a.kind, EventKind::Op { f: OpF::Acquire, phase: Phase::Ok, key: k, token: Some(t), .. }
                if k == key && t == freed)
        });
        // Only a lock that was granted (by the service, or as the client saw it) counts.
        if service.is_none() && acquired.is_none_or(|a| a.id >= e.id) {
            continue;
        }
        seen.insert((key, freed));
        let n = listed.entry(key).or_default();
        if *n >= MAX_LISTED_PER_KEY {
            verdict.omitted += 1;
            continue;
        }
        *n += 1;
        // When the grant happened: the service's record if there is one (the client may see
        // its `ok` only after the lock was already freed again), else the client's `ok`.
        let holder = match (service, acquired) {
            (Some(g), _) => {
                let EventKind::Grant { client: to, .. } = g.kind else {
                    unreachable!("matched a grant")
                };
                format!(
                    "the lock of the grant with token {freed} (granted to {} at {})",
                    names.of(to),
                    fmt_nanos(g.time as i128)
                )
            }
            (None, Some(a)) => format!(
                "the lock of the grant with token {freed} ({} acquired at {})",
                names.of(a.node),
                fmt_nanos(a.time as i128)
            ),
            (None, None) => unreachable!("a lock that was never granted was skipped above"),
        };
        let mut events = vec![e.id];
        events.extend(acquired.map(|a| a.id));
        verdict.violations.push(Violation {
            kind: Property::S4,
            key,
            summary: format!(
                "key {key}: {}'s release of its grant with token {released} freed {holder} at {}",
                names.of(client),
                fmt_nanos(e.time as i128)
            ),
            events,
            window: None,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use locksim_core::history::Event;

    fn ev(id: u64, time: u64, node: u32, kind: EventKind) -> Event {
        Event {
            id,
            time,
            node,
            wall: time as i64,
            mono: time,
            kind,
        }
    }

    fn freed(freed: u64, released: u64) -> EventKind {
        EventKind::Freed {
            key: 0,
            client: 3,
            freed,
            released,
            holder: None,
        }
    }

    #[test]
    fn a_release_of_another_grant_is_a_violation_once() {
        let acquire = EventKind::Op {
            op: 1,
            phase: Phase::Ok,
            f: OpF::Acquire,
            key: 0,
            handle: Some(2),
            token: Some(102),
            deadline: None,
            error: None,
            value: None,
        };
        let h = History {
            events: vec![
                ev(0, 10, 3, acquire),
                ev(1, 20, 0, freed(100, 100)),
                ev(2, 30, 0, freed(102, 100)),
                ev(3, 30, 1, freed(102, 100)),
            ],
            end: 40,
            ..Default::default()
        };
        let mut v = Verdict::default();
        check(&h, Names(None), &mut v);
        assert_eq!(v.violations.len(), 1, "{v:?}");
        assert_eq!(v.violations[0].kind, Property::S4);
        assert_eq!(v.violations[0].events, vec![2, 0]);
        let summary = &v.violations[0].summary;
        assert!(
            summary.contains(
                "token 100 freed the lock of the grant with token 102 (node 3 acquired at"
            ),
            "{summary}"
        );
    }

    #[test]
    fn a_delete_of_another_holders_key_is_a_violation() {
        let grant = |client| EventKind::Grant {
            key: 0,
            client,
            token: None,
        };
        let deleted = |freed, released| EventKind::Freed {
            key: 0,
            client: 3,
            freed,
            released,
            holder: Some(4),
        };
        let h = History {
            events: vec![
                ev(0, 10, 0, grant(3)),
                ev(1, 20, 0, grant(4)),
                // c3's own delete of its own key is fine; deleting c4's key (owner 9) is not.
                ev(2, 25, 0, deleted(5, 5)),
                ev(3, 30, 0, deleted(9, 5)),
            ],
            end: 40,
            ..Default::default()
        };
        let mut v = Verdict::default();
        check(&h, Names(None), &mut v);
        assert_eq!(v.violations.len(), 1, "{v:?}");
        assert_eq!(v.violations[0].kind, Property::S4);
        assert_eq!(v.violations[0].events, vec![3, 1]);
        let summary = &v.violations[0].summary;
        assert!(
            summary.contains("node 3's release freed the lock granted to node 4 at"),
            "{summary}"
        );
    }

    #[test]
    fn own_releases_and_deleted_waiters_are_fine() {
        let h = History {
            // The last deletes a key that was only queued, never granted: no lock is freed.
            events: vec![
                ev(0, 20, 0, freed(7, 7)),
                ev(1, 30, 0, freed(9, 9)),
                ev(2, 35, 0, freed(11, 9)),
            ],
            end: 40,
            ..Default::default()
        };
        let mut v = Verdict::default();
        check(&h, Names(None), &mut v);
        assert!(v.is_safe());
    }
}
