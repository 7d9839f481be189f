//! A Redis-like lock server: `SET key owner NX PX ttl` to acquire, compare-and-delete to
//! release, compare-and-`PEXPIRE` to extend; expiry judged lazily on access by the server's own
//! clock, as Redis does. Used as the single server of `central` and as each master of
//! `redlock`. Optionally issues a fencing token (a per-server counter) with each grant.

use std::collections::BTreeMap;

use locksim_core::history::EventKind;
use locksim_core::{Nanos, NodeId};

use crate::knobs::ReleaseMode;
use locksim_sim::{LocalClock, NodeCtx};

/// When lock state reaches the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fsync {
    /// Never: state lives in memory and a crash loses it (Redis without AOF).
    Never,
    /// After every change (Redis `appendfsync always`).
    Always,
}

/// Server configuration.
#[derive(Debug, Clone, Copy)]
pub struct ServerConfig {
    /// Clock that judges expiry: the wall clock (Redis' key expiry; steps move expiry) or the
    /// monotonic clock (immune to steps, not to drift).
    pub clock: LocalClock,
    /// Persistence.
    pub fsync: Fsync,
    /// Issue a strictly increasing fencing token with each grant.
    pub fencing: bool,
    /// After a restart, refuse every request for this long (ns of local monotonic time):
    /// Redlock's "delayed restart". 0 disables.
    pub restart_delay: Nanos,
    /// Compare-and-delete (the default) or a plain `DEL` ([`crate::knobs::RELEASE`]).
    pub release: ReleaseMode,
}

impl ServerConfig {
    /// Reads the `clock`, `fsync` and `release` knobs.
    ///
    /// # Errors
    /// A message naming a bad value.
    pub fn from_knobs(
        k: &crate::knobs::Knobs,
        fencing: bool,
        restart_delay: Nanos,
    ) -> Result<Self, String> {
        Ok(ServerConfig {
            clock: crate::knobs::local_clock(k, "clock")?,
            fsync: match k.choice("fsync", &["never", "always"])? {
                "never" => Fsync::Never,
                _ => Fsync::Always,
            },
            fencing,
            restart_delay,
            release: crate::knobs::release_mode(k)?,
        })
    }
}

/// A request to a lock server.
#[derive(Debug, Clone)]
pub enum Req {
    /// Set `key` to `owner` with a lease of `ttl` ns if it is free (or expired).
    Acquire { key: u32, owner: u64, ttl: Nanos },
    /// `SETNX key owner`: set `key` to `owner` with no expiry if it is free (or expired); the
    /// client then sets the lease with [`Req::Extend`] (`EXPIRE`), a second round trip
    /// ([`crate::knobs::AcquireMode::SetNxExpire`]).
    SetNx { key: u32, owner: u64 },
    /// Delete `key` if its owner is `owner` (with `release = "delete"`: whoever owns it;
    /// `owner` then only names, for the history, the grant the release meant).
    Release { key: u32, owner: u64 },
    /// Reset `key`'s lease to `ttl` ns if its owner is `owner`.
    Extend { key: u32, owner: u64, ttl: Nanos },
}

/// A lock server's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resp {
    /// Acquired (with a fencing token when the server issues them).
    Granted { token: Option<u64> },
    /// Someone else holds the key.
    Held,
    /// Released or extended.
    Done,
    /// The key is not held by this owner (expired, or never acquired).
    NotOwner,
    /// The server is in its delayed-restart window and refuses everything.
    Unavailable,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    owner: u64,
    /// Expiry as a reading of the judging clock, ns.
    expires: i64,
    /// The client it was granted to (for the history's `freed` record).
    client: NodeId,
}

const FILE: &str = "locks";

fn encode(locks: &BTreeMap<u32, Entry>, next_token: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + locks.len() * 24);
    out.extend_from_slice(&next_token.to_le_bytes());
    for (k, e) in locks {
        out.extend_from_slice(&k.to_le_bytes());
        out.extend_from_slice(&e.owner.to_le_bytes());
        out.extend_from_slice(&e.expires.to_le_bytes());
        out.extend_from_slice(&e.client.to_le_bytes());
    }
    out
}

fn decode(b: &[u8]) -> (BTreeMap<u32, Entry>, u64) {
    let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    let next_token = u64_at(0);
    let mut locks = BTreeMap::new();
    let mut i = 8;
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
    while i + 24 <= b.len() {
        let k = u32_at(i);
        let owner = u64_at(i + 4);
        let expires = u64_at(i + 12) as i64;
        let client = u32_at(i + 20);
        locks.insert(
            k,
            Entry {
                owner,
                expires,
                client,
            },
        );
        i += 24;
    }
    (locks, next_token)
}

/// Runs one lock server until the node crashes.
pub async fn serve(ctx: NodeCtx, cfg: ServerConfig) {
    let (mut locks, mut next_token) = match ctx.disk().read(FILE) {
        Some(b) => decode(b),
        None => (BTreeMap::new(), 1),
    };
    let refuse_until = if ctx.incarnation() > 0 && cfg.restart_delay > 0 {
        ctx.mono_now() + cfg.restart_delay
    } else {
        0
    };
    loop {
        let msg = ctx.recv().await;
        let Some(req) = msg.body.downcast_ref::<Req>() else {
            continue;
        };
        if ctx.mono_now() < refuse_until {
            ctx.reply(&msg, Resp::Unavailable).await;
            continue;
        }
        let t = ctx.now(cfg.clock);
        let live = |locks: &BTreeMap<u32, Entry>, key: &u32| {
            locks.get(key).filter(|e| t < e.expires).copied()
        };
        let mut changed = false;
        let acquire = match *req {
            Req::Acquire { key, owner, ttl } => Some((key, owner, t.saturating_add(ttl as i64))),
            // A key set without a TTL never expires.
            Req::SetNx { key, owner } => Some((key, owner, i64::MAX)),
            _ => None,
        };
        let resp = match *req {
            Req::Acquire { .. } | Req::SetNx { .. } => {
                let (key, owner, expires) = acquire.expect("an acquire");
                match live(&locks, &key) {
                    Some(_) => Resp::Held,
                    None => {
                        locks.insert(
                            key,
                            Entry {
                                owner,
                                expires,
                                client: msg.from,
                            },
                        );
                        let token = cfg.fencing.then(|| {
                            next_token += 1;
                            next_token - 1
                        });
                        changed = true;
                        ctx.record(EventKind::Grant {
                            key,
                            client: msg.from,
                            token,
                        });
                        Resp::Granted { token }
                    }
                }
            }
            Req::Release { key, owner } => match live(&locks, &key) {
                Some(e) if e.owner == owner => {
                    locks.remove(&key);
                    changed = true;
                    if cfg.release == ReleaseMode::Delete {
                        record_delete(&ctx, key, msg.from, owner, e);
                    }
                    Resp::Done
                }
                // `DEL key` on a live key of another owner: it frees that owner's lock.
                Some(e) if cfg.release == ReleaseMode::Delete => {
                    locks.remove(&key);
                    changed = true;
                    record_delete(&ctx, key, msg.from, owner, e);
                    Resp::Done
                }
                // `DEL` of a missing or expired key deletes nothing (Redis answers 0).
                _ => Resp::NotOwner,
            },
            Req::Extend { key, owner, ttl } => match live(&locks, &key) {
                Some(e) if e.owner == owner => {
                    locks.insert(
                        key,
                        Entry {
                            expires: t.saturating_add(ttl as i64),
                            ..e
                        },
                    );
                    changed = true;
                    Resp::Done
                }
                _ => Resp::NotOwner,
            },
        };
        if changed && cfg.fsync == Fsync::Always {
            let mut d = ctx.disk();
            d.write(FILE, encode(&locks, next_token));
            d.fsync();
        }
        ctx.reply(&msg, resp).await;
    }
}

/// Records a `DEL`'s deletion of `e` for S4: the owner value `e` stored, the one the release
/// carried, and the client the lock was granted to.
fn record_delete(ctx: &NodeCtx, key: u32, from: NodeId, released: u64, e: Entry) {
    ctx.record(EventKind::Freed {
        key,
        client: from,
        freed: e.owner,
        released,
        holder: Some(e.client),
    });
}

/// The outcome of a request that got no answer: `fail` when it surely did not arrive (the
/// connection was refused; not sent at all is [`locksim_sim::Outcome::NotSent`]), `info` when
/// it may have taken effect (a timeout, a reset): [`locksim_sim::Outcome::from_call`].
pub fn call_failed<T>(e: locksim_sim::CallError) -> locksim_sim::Outcome<T> {
    locksim_sim::Outcome::from_call(e)
}

/// The validity deadline of a lease of `ttl` ns asked for at `start` (a reading of the client's
/// clock, ns): `start + ttl − drift_allowance(ttl)`, Redlock's formula.
pub fn valid_until(start: i64, ttl: Nanos, drift_ppm: u64) -> i64 {
    start + ttl as i64 - drift_allowance(ttl, drift_ppm) as i64
}

/// Redlock's clock-drift allowance for a lease of `ttl` ns: `ttl·factor + 2 ms`, the formula
/// of the Redis documentation's reference implementations (factor 0.01).
pub fn drift_allowance(ttl: Nanos, factor_ppm: u64) -> Nanos {
    (ttl as u128 * factor_ppm as u128 / 1_000_000) as Nanos + 2_000_000
}
