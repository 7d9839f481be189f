//! The replicated state machine of `raft-lease`: leases, lock keys owned by leases, and a
//! global revision, as etcd keeps them (etcd docs, "Lease" and "Revision"; the `v3lock` and
//! `concurrency.Mutex` recipes). Every replica applies the same committed commands in the same
//! order and reaches the same state; lease *expiry* is not part of it (the leader's clock
//! decides it and proposes a [`Cmd::Revoke`]).
//!
//! A lock on key `k` is a queue of waiter keys `(k, lease)`, each with the revision at which it
//! was created; the waiter with the lowest creation revision holds the lock, and that revision
//! is its fencing token.

use std::collections::{BTreeMap, BTreeSet};

use locksim_core::Nanos;
use serde::{Deserialize, Serialize};

/// A command in the replicated log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Cmd {
    /// Create a lease of `ttl` ns (the lease id is the revision of this command).
    Grant { ttl: Nanos },
    /// Queue `lease`'s waiter key on lock `key` (no-op if it is already queued).
    Lock { key: u32, lease: u64 },
    /// Delete `lease`'s waiter key on lock `key` if it was created at revision `rev`
    /// (with `by_name`, whatever its revision: the K3 bug).
    Unlock {
        key: u32,
        lease: u64,
        rev: u64,
        by_name: bool,
    },
    /// Delete `lease` and every key it owns (its TTL ran out on the leader's clock).
    Revoke { lease: u64 },
}

/// What applying a command did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    /// A lease was created.
    Granted { lease: u64 },
    /// The waiter key exists with creation revision `rev`; `owner` when it heads the queue.
    Locked { rev: u64, owner: bool },
    /// The lease named by a lock request does not exist (expired or never granted).
    NoLease,
    /// `freed` is the creation revision of the deleted key (`None`: nothing was deleted).
    Unlocked { freed: Option<u64> },
    /// The lease's keys that were deleted, as (lock key, revision).
    Revoked { freed: Vec<(u32, u64)> },
}

/// How a queued waiter stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitStatus {
    /// No key with a lower revision is left: the waiter holds the lock.
    Acquired,
    /// Keys with lower revisions are still queued.
    Waiting,
    /// The waiter's own key is gone (its lease expired): it will never hold the lock.
    Gone,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Lease {
    ttl: Nanos,
    keys: BTreeSet<u32>,
}

/// Leases and lock queues.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LockState {
    revision: u64,
    leases: BTreeMap<u64, Lease>,
    /// Per lock key: creation revision → lease.
    queues: BTreeMap<u32, BTreeMap<u64, u64>>,
    /// (lock key, lease) → creation revision.
    by_name: BTreeMap<(u32, u64), u64>,
}

impl LockState {
    /// Applies one committed command.
    pub fn apply(&mut self, cmd: &Cmd) -> Applied {
        match *cmd {
            Cmd::Grant { ttl } => {
                self.revision += 1;
                let lease = self.revision;
                self.leases.insert(
                    lease,
                    Lease {
                        ttl,
                        keys: BTreeSet::new(),
                    },
                );
                Applied::Granted { lease }
            }
            Cmd::Lock { key, lease } => {
                let Some(l) = self.leases.get_mut(&lease) else {
                    return Applied::NoLease;
                };
                let rev = match self.by_name.get(&(key, lease)) {
                    Some(&rev) => rev,
                    None => {
                        self.revision += 1;
                        let rev = self.revision;
                        l.keys.insert(key);
                        self.by_name.insert((key, lease), rev);
                        self.queues.entry(key).or_default().insert(rev, lease);
                        rev
                    }
                };
                Applied::Locked {
                    rev,
                    owner: self.owner(key).map(|o| o.0) == Some(rev),
                }
            }
            Cmd::Unlock {
                key,
                lease,
                rev,
                by_name,
            } => match self.by_name.get(&(key, lease)) {
                Some(&have) if by_name || have == rev => {
                    self.remove_key(key, lease);
                    self.revision += 1;
                    Applied::Unlocked { freed: Some(have) }
                }
                _ => Applied::Unlocked { freed: None },
            },
            Cmd::Revoke { lease } => {
                let Some(l) = self.leases.remove(&lease) else {
                    return Applied::Revoked { freed: vec![] };
                };
                let mut freed = Vec::new();
                for key in l.keys {
                    if let Some(rev) = self.by_name.get(&(key, lease)).copied() {
                        self.remove_key(key, lease);
                        freed.push((key, rev));
                    }
                }
                self.revision += 1;
                Applied::Revoked { freed }
            }
        }
    }

    fn remove_key(&mut self, key: u32, lease: u64) {
        if let Some(rev) = self.by_name.remove(&(key, lease)) {
            if let Some(q) = self.queues.get_mut(&key) {
                q.remove(&rev);
                if q.is_empty() {
                    self.queues.remove(&key);
                }
            }
            if let Some(l) = self.leases.get_mut(&lease) {
                l.keys.remove(&key);
            }
        }
    }

    /// The lock keys `lease` has queued (none for an unknown lease).
    pub fn leases_keys(&self, lease: u64) -> impl Iterator<Item = u32> + '_ {
        self.leases
            .get(&lease)
            .into_iter()
            .flat_map(|l| l.keys.iter().copied())
    }

    /// The holder of lock `key`: (creation revision, lease) of the head of its queue.
    pub fn owner(&self, key: u32) -> Option<(u64, u64)> {
        self.queues
            .get(&key)
            .and_then(|q| q.iter().next())
            .map(|(&r, &l)| (r, l))
    }

    /// How the waiter `(key, lease)` created at `rev` stands. With `recheck_own_key = false`
    /// the waiter is told it holds the lock as soon as no lower revision is queued, even when
    /// its own key is gone: the K2 bug.
    pub fn wait_status(&self, key: u32, lease: u64, rev: u64, recheck_own_key: bool) -> WaitStatus {
        let own = self.by_name.get(&(key, lease)) == Some(&rev);
        if recheck_own_key && !own {
            return WaitStatus::Gone;
        }
        let lower = self
            .queues
            .get(&key)
            .is_some_and(|q| q.range(..rev).next().is_some());
        if lower {
            WaitStatus::Waiting
        } else {
            WaitStatus::Acquired
        }
    }

    /// The TTL of `lease` in ns, if it exists.
    pub fn lease_ttl(&self, lease: u64) -> Option<Nanos> {
        self.leases.get(&lease).map(|l| l.ttl)
    }

    /// Every lease and its TTL, in id order.
    pub fn leases(&self) -> impl Iterator<Item = (u64, Nanos)> + '_ {
        self.leases.iter().map(|(&id, l)| (id, l.ttl))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(s: &mut LockState) -> u64 {
        match s.apply(&Cmd::Grant { ttl: 5 }) {
            Applied::Granted { lease } => lease,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn waiters_queue_by_revision_and_revoke_frees() {
        let mut s = LockState::default();
        let (a, b, c) = (lease(&mut s), lease(&mut s), lease(&mut s));
        assert_eq!(
            s.apply(&Cmd::Lock { key: 0, lease: a }),
            Applied::Locked {
                rev: 4,
                owner: true
            }
        );
        assert_eq!(
            s.apply(&Cmd::Lock { key: 0, lease: b }),
            Applied::Locked {
                rev: 5,
                owner: false
            }
        );
        // Idempotent: the same session asks again and gets its existing key.
        assert_eq!(
            s.apply(&Cmd::Lock { key: 0, lease: b }),
            Applied::Locked {
                rev: 5,
                owner: false
            }
        );
        assert_eq!(s.wait_status(0, b, 5, true), WaitStatus::Waiting);
        // B's lease expires while it waits; C queues behind.
        assert_eq!(
            s.apply(&Cmd::Revoke { lease: b }),
            Applied::Revoked {
                freed: vec![(0, 5)]
            }
        );
        assert_eq!(
            s.apply(&Cmd::Lock { key: 0, lease: c }),
            Applied::Locked {
                rev: 7,
                owner: false
            }
        );
        // A releases: C holds. B is told so only under the K2 bug.
        assert_eq!(
            s.apply(&Cmd::Unlock {
                key: 0,
                lease: a,
                rev: 4,
                by_name: false
            }),
            Applied::Unlocked { freed: Some(4) }
        );
        assert_eq!(s.owner(0), Some((7, c)));
        assert_eq!(s.wait_status(0, c, 7, true), WaitStatus::Acquired);
        assert_eq!(s.wait_status(0, b, 5, true), WaitStatus::Gone);
        assert_eq!(s.wait_status(0, b, 5, false), WaitStatus::Acquired);
        assert_eq!(s.apply(&Cmd::Lock { key: 0, lease: b }), Applied::NoLease);
    }

    #[test]
    fn unlock_by_name_frees_the_next_incarnation() {
        let mut s = LockState::default();
        let a = lease(&mut s);
        let Applied::Locked { rev: first, .. } = s.apply(&Cmd::Lock { key: 1, lease: a }) else {
            panic!()
        };
        let unlock = |rev, by_name| Cmd::Unlock {
            key: 1,
            lease: a,
            rev,
            by_name,
        };
        assert_eq!(
            s.apply(&unlock(first, false)),
            Applied::Unlocked { freed: Some(first) }
        );
        let Applied::Locked {
            rev: second,
            owner: true,
        } = s.apply(&Cmd::Lock { key: 1, lease: a })
        else {
            panic!()
        };
        assert!(second > first);
        // A retried unlock of the first incarnation: safe when it names the revision...
        assert_eq!(
            s.apply(&unlock(first, false)),
            Applied::Unlocked { freed: None }
        );
        assert_eq!(s.owner(1), Some((second, a)));
        // ...and frees the second incarnation when it deletes by name.
        assert_eq!(
            s.apply(&unlock(first, true)),
            Applied::Unlocked {
                freed: Some(second)
            }
        );
        assert_eq!(s.owner(1), None);
    }
}
