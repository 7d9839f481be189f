//! A Redis data node of `redis-failover`: the primary (lock commands, replication stream,
//! `WAIT`) or a replica (applies the stream, answers `READONLY` to lock commands).

use std::collections::BTreeMap;

use futures_channel::mpsc;
use futures_util::StreamExt;
use locksim_core::history::EventKind;
use locksim_core::{Nanos, NodeId};
use locksim_sim::{Incoming, NodeCtx};
use rand::Rng;

use super::RedisFailover;
use crate::knobs::ReleaseMode;

/// One lock key's value on a data node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The owner value of the `SET`.
    pub owner: u64,
    /// Expiry as a reading of the primary's wall clock, ns (Redis keeps absolute expiry
    /// times and replicates them as such).
    pub expires: i64,
    /// The fencing token of the grant, when tokens are issued.
    pub token: Option<u64>,
    /// The client the key was set for (for the history's `freed` record of `release =
    /// "delete"`; replicated with the key as a stand-in for the owner value's meaning).
    pub client: NodeId,
}

/// A node's data set: the lock keys, the fencing counter, the replication offset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Data {
    pub locks: BTreeMap<u32, Entry>,
    pub next_token: u64,
    pub offset: u64,
}

/// Lock commands from clients.
#[derive(Debug, Clone)]
pub enum Cmd {
    /// `SET key owner NX PX ttl` (then `WAIT wait` when `wait > 0`).
    Acquire {
        key: u32,
        owner: u64,
        ttl: Nanos,
        wait: u32,
    },
    /// Compare-and-`PEXPIRE` (then `WAIT wait`).
    Extend {
        key: u32,
        owner: u64,
        ttl: Nanos,
        wait: u32,
    },
    /// Compare-and-delete.
    Release { key: u32, owner: u64 },
}

/// A data node's answer to a [`Cmd`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Set (with its token); `acked` replicas had the write when `WAIT` returned.
    Granted { token: Option<u64>, acked: u32 },
    /// Someone else holds the key.
    Held,
    /// Renewed or released; `acked` as for `Granted`.
    Done { acked: u32 },
    /// Not this owner's key (expired or never set).
    NotOwner,
    /// This node is a replica (Redis' `READONLY You can't write against a read only replica`).
    ReadOnly,
}

/// Messages between the monitor and the data nodes, and between primary and replicas.
#[derive(Debug, Clone)]
pub enum Ctl {
    /// Monitor → node: are you there? Answered with [`Ctl::Pong`].
    Ping,
    /// Node → monitor: its role, the primary it follows (itself when it is the primary; the
    /// `master_host` of `INFO replication`) and its replication offset.
    Pong {
        primary: bool,
        follows: NodeId,
        offset: u64,
    },
    /// Monitor → replica: become the primary in configuration `epoch`.
    Promote { epoch: u64 },
    /// Monitor → node: in configuration `epoch` the primary is `primary` (`REPLICAOF`).
    Follow { epoch: u64, primary: NodeId },
    /// Primary → replica: the data set as of its offset, from incarnation `run` (Redis' run
    /// id; a new one means a full resync).
    Sync { run: u32, data: Data },
    /// Replica → primary: it has the stream of incarnation `run` up to `offset`.
    Ack { run: u32, offset: u64 },
}

const CONFIG: &str = "config";
const DATA: &str = "data";

fn encode_data(d: &Data) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + d.locks.len() * 32);
    out.extend_from_slice(&d.next_token.to_le_bytes());
    out.extend_from_slice(&d.offset.to_le_bytes());
    for (k, e) in &d.locks {
        out.extend_from_slice(&k.to_le_bytes());
        out.extend_from_slice(&e.owner.to_le_bytes());
        out.extend_from_slice(&e.expires.to_le_bytes());
        out.extend_from_slice(&e.token.map_or(0, |t| t + 1).to_le_bytes());
        out.extend_from_slice(&e.client.to_le_bytes());
    }
    out
}

fn decode_data(b: &[u8]) -> Data {
    let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    let mut d = Data {
        next_token: u64_at(0),
        offset: u64_at(8),
        locks: BTreeMap::new(),
    };
    let mut i = 16;
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
    while i + 32 <= b.len() {
        let k = u32_at(i);
        let t = u64_at(i + 20);
        d.locks.insert(
            k,
            Entry {
                owner: u64_at(i + 4),
                expires: u64_at(i + 12) as i64,
                token: t.checked_sub(1),
                client: u32_at(i + 28),
            },
        );
        i += 32;
    }
    d
}

struct Waiting {
    msg: Incoming,
    offset: u64,
    need: u32,
    reply: Reply,
}

enum Input {
    Net(Incoming),
    /// Ship the data set as of a write to one replica (after its replication delay), if the
    /// node is still the primary of that configuration epoch.
    Ship(NodeId, Data, u64),
    /// Re-send each replica the stream as shipped so far.
    Heartbeat,
    /// A `WAIT` ran out of time.
    WaitTimeout(u64),
}

struct Node {
    ctx: NodeCtx,
    cfg: RedisFailover,
    /// Configuration epoch and the primary it names.
    epoch: u64,
    primary: NodeId,
    data: Data,
    /// Replica side: the (primary, run) whose stream `data` follows.
    following: Option<(NodeId, u32)>,
    /// Primary side: each replica's acknowledged offset in this incarnation's stream.
    acked: BTreeMap<NodeId, u64>,
    /// Primary side: per replica, the stream as shipped so far (the data set as of the last
    /// offset sent); the heartbeat re-sends it, never anything newer, so the lag holds.
    shipped: BTreeMap<NodeId, Data>,
    /// Primary side: per replica, the monotonic reading at which the last write scheduled for
    /// it is shipped (a later write never overtakes it).
    due: BTreeMap<NodeId, u64>,
    waiting: BTreeMap<u64, Waiting>,
    next_wait: u64,
    tx: mpsc::UnboundedSender<Input>,
}

/// Runs one data node until it crashes.
pub async fn serve(ctx: NodeCtx, cfg: RedisFailover) {
    let (epoch, primary) = match ctx.disk().read(CONFIG) {
        Some(b) if b.len() == 12 => (
            u64::from_le_bytes(b[..8].try_into().expect("8 bytes")),
            u32::from_le_bytes(b[8..].try_into().expect("4 bytes")),
        ),
        _ => (0, 0),
    };
    let data = match ctx.disk().read(DATA) {
        Some(b) if cfg.fsync => decode_data(b),
        _ => Data {
            next_token: 1,
            ..Data::default()
        },
    };
    let (tx, mut rx) = mpsc::unbounded();
    let mut n = Node {
        ctx: ctx.clone(),
        cfg,
        epoch,
        primary,
        data,
        following: None,
        acked: BTreeMap::new(),
        shipped: BTreeMap::new(),
        due: BTreeMap::new(),
        waiting: BTreeMap::new(),
        next_wait: 0,
        tx: tx.clone(),
    };
    n.reset_stream();
    n.announce();
    crate::inputs::every(&ctx, 100_000_000, tx.clone(), || Input::Heartbeat);
    crate::inputs::messages(&ctx, tx, Input::Net);
    while let Some(input) = rx.next().await {
        match input {
            Input::Net(m) => n.on_message(m).await,
            Input::Ship(to, data, epoch) => {
                let newer = n.shipped.get(&to).is_none_or(|s| data.offset > s.offset);
                if n.is_primary() && epoch == n.epoch && newer {
                    n.shipped.insert(to, data.clone());
                    let run = n.ctx.incarnation();
                    n.ctx.send(to, Ctl::Sync { run, data }).await;
                }
            }
            Input::Heartbeat => {
                if n.is_primary() {
                    for to in n.replicas() {
                        // What was shipped (a replica that lost stream bytes, or restarted,
                        // gets it again: a partial resync from the backlog), never newer.
                        let Some(data) = n.shipped.get(&to).cloned() else {
                            continue;
                        };
                        let sync = Ctl::Sync {
                            run: n.ctx.incarnation(),
                            data,
                        };
                        n.ctx.send(to, sync).await;
                    }
                }
            }
            Input::WaitTimeout(id) => {
                if let Some(w) = n.waiting.remove(&id) {
                    let reply = n.with_acked(w.reply, w.offset);
                    n.ctx.reply(&w.msg, reply).await;
                }
            }
        }
    }
}

impl Node {
    fn is_primary(&self) -> bool {
        self.primary == self.ctx.id()
    }

    fn replicas(&self) -> Vec<NodeId> {
        let me = self.ctx.id();
        self.cfg.data_nodes().filter(|&n| n != me).collect()
    }

    /// Tells the nemesis whether this node leads (for `isolate_leader` faults).
    fn announce(&self) {
        self.ctx
            .set_leader(self.is_primary().then_some(self.epoch + 1));
    }

    fn save_config(&self) {
        let mut b = self.epoch.to_le_bytes().to_vec();
        b.extend_from_slice(&self.primary.to_le_bytes());
        let mut d = self.ctx.disk();
        d.write(CONFIG, b);
        d.fsync();
    }

    fn save_data(&self) {
        if self.cfg.fsync {
            let mut d = self.ctx.disk();
            d.write(DATA, encode_data(&self.data));
            d.fsync();
        }
    }

    /// Replicas whose acknowledged offset reaches `offset`.
    fn acked_at(&self, offset: u64) -> u32 {
        self.acked.values().filter(|&&o| o >= offset).count() as u32
    }

    fn with_acked(&self, reply: Reply, offset: u64) -> Reply {
        let acked = self.acked_at(offset);
        match reply {
            Reply::Granted { token, .. } => Reply::Granted { token, acked },
            Reply::Done { .. } => Reply::Done { acked },
            other => other,
        }
    }

    /// A write went into the data set: persist it and ship it to each replica after its
    /// replication delay, in order (a write is shipped no earlier than the one before it).
    fn wrote(&mut self) {
        self.data.offset += 1;
        self.save_data();
        let (lo, hi) = self.cfg.repl_delay;
        let now = self.ctx.mono_now();
        for to in self.replicas() {
            let delay = self.ctx.rng().gen_range(lo..=hi);
            let due = self.due.entry(to).or_default();
            *due = (*due).max(now + delay);
            let (tx, c, data, due, epoch) = (
                self.tx.clone(),
                self.ctx.clone(),
                self.data.clone(),
                *due,
                self.epoch,
            );
            madsim::task::spawn_local(async move {
                c.sleep_until_mono(due).await;
                let _ = tx.unbounded_send(Input::Ship(to, data, epoch));
            });
        }
    }

    /// Starts the primary side's stream anew (at the start, a promotion, a demotion): a
    /// primary's replicas begin from a full sync of its data set as it is now (Redis' full
    /// resynchronization: the snapshot at the moment the stream starts); a replica has none.
    fn reset_stream(&mut self) {
        self.acked.clear();
        self.due.clear();
        self.shipped = if self.is_primary() {
            self.replicas()
                .into_iter()
                .map(|r| (r, self.data.clone()))
                .collect()
        } else {
            BTreeMap::new()
        };
    }

    async fn on_message(&mut self, m: Incoming) {
        if let Some(cmd) = m.body.downcast_ref::<Cmd>().cloned() {
            return self.on_command(m, cmd).await;
        }
        let Some(ctl) = m.body.downcast_ref::<Ctl>().cloned() else {
            return;
        };
        match ctl {
            Ctl::Ping => {
                let pong = Ctl::Pong {
                    primary: self.is_primary(),
                    follows: self.primary,
                    offset: self.data.offset,
                };
                self.ctx.reply(&m, pong).await;
            }
            Ctl::Promote { epoch } => {
                if epoch > self.epoch {
                    self.epoch = epoch;
                    self.primary = self.ctx.id();
                    self.following = None;
                    self.reset_stream();
                    self.save_config();
                    self.announce();
                }
                let pong = Ctl::Pong {
                    primary: self.is_primary(),
                    follows: self.primary,
                    offset: self.data.offset,
                };
                self.ctx.reply(&m, pong).await;
            }
            Ctl::Follow { epoch, primary } => {
                if epoch > self.epoch {
                    let was_primary = self.is_primary();
                    self.epoch = epoch;
                    self.primary = primary;
                    self.following = None;
                    self.save_config();
                    self.announce();
                    if was_primary {
                        self.reset_stream();
                        // Pending WAITs return what they have (nothing new will ack).
                        let waiting = std::mem::take(&mut self.waiting);
                        for w in waiting.into_values() {
                            let reply = self.with_acked(w.reply, w.offset);
                            self.ctx.reply(&w.msg, reply).await;
                        }
                    }
                }
            }
            Ctl::Sync { run, data } => {
                if self.is_primary() || m.from != self.primary {
                    return;
                }
                let stream = (m.from, run);
                // A new primary or a restarted one (new run id): full resync. Otherwise the
                // stream only moves forward.
                if self.following != Some(stream) || data.offset > self.data.offset {
                    self.following = Some(stream);
                    self.data = data;
                    self.save_data();
                    self.ctx.replicated(self.data.offset);
                }
                let ack = Ctl::Ack {
                    run,
                    offset: self.data.offset,
                };
                self.ctx.send(m.from, ack).await;
            }
            Ctl::Ack { run, offset } => {
                if !self.is_primary() || run != self.ctx.incarnation() {
                    return;
                }
                let a = self.acked.entry(m.from).or_default();
                *a = (*a).max(offset);
                let done: Vec<u64> = self
                    .waiting
                    .iter()
                    .filter(|(_, w)| self.acked_at(w.offset) >= w.need)
                    .map(|(&id, _)| id)
                    .collect();
                for id in done {
                    let w = self.waiting.remove(&id).expect("listed");
                    let reply = self.with_acked(w.reply, w.offset);
                    self.ctx.reply(&w.msg, reply).await;
                }
            }
            Ctl::Pong { .. } => {}
        }
    }

    async fn on_command(&mut self, m: Incoming, cmd: Cmd) {
        if !self.is_primary() {
            return self.ctx.reply(&m, Reply::ReadOnly).await;
        }
        let t = self.ctx.wall_now();
        let live = |d: &Data, key: u32| d.locks.get(&key).filter(|e| t < e.expires).copied();
        let (reply, wait) = match cmd {
            Cmd::Acquire {
                key,
                owner,
                ttl,
                wait,
            } => match live(&self.data, key) {
                Some(_) => (Reply::Held, 0),
                None => {
                    let token = self.cfg.fencing.then(|| {
                        self.data.next_token += 1;
                        self.data.next_token - 1
                    });
                    self.data.locks.insert(
                        key,
                        Entry {
                            owner,
                            expires: t.saturating_add(ttl as i64),
                            token,
                            client: m.from,
                        },
                    );
                    self.wrote();
                    self.ctx.record(EventKind::Grant {
                        key,
                        client: m.from,
                        token,
                    });
                    (Reply::Granted { token, acked: 0 }, wait)
                }
            },
            Cmd::Extend {
                key,
                owner,
                ttl,
                wait,
            } => match live(&self.data, key) {
                Some(e) if e.owner == owner => {
                    self.data.locks.insert(
                        key,
                        Entry {
                            expires: t.saturating_add(ttl as i64),
                            ..e
                        },
                    );
                    self.wrote();
                    (Reply::Done { acked: 0 }, wait)
                }
                _ => (Reply::NotOwner, 0),
            },
            Cmd::Release { key, owner } => match live(&self.data, key) {
                // Compare-and-delete, or with `release = "delete"` a plain `DEL key` that
                // deletes whoever's lock it finds (recorded for S4).
                Some(e) if e.owner == owner || self.cfg.release == ReleaseMode::Delete => {
                    self.data.locks.remove(&key);
                    self.wrote();
                    if self.cfg.release == ReleaseMode::Delete {
                        self.ctx.record(EventKind::Freed {
                            key,
                            client: m.from,
                            freed: e.owner,
                            released: owner,
                            holder: Some(e.client),
                        });
                    }
                    (Reply::Done { acked: 0 }, 0)
                }
                _ => (Reply::NotOwner, 0),
            },
        };
        let offset = self.data.offset;
        if wait == 0 || self.acked_at(offset) >= wait {
            let reply = self.with_acked(reply, offset);
            return self.ctx.reply(&m, reply).await;
        }
        // WAIT: answer when `wait` replicas acknowledged this offset, or at the timeout.
        let id = self.next_wait;
        self.next_wait += 1;
        self.waiting.insert(
            id,
            Waiting {
                msg: m,
                offset,
                need: wait,
                reply,
            },
        );
        let (tx, c, d) = (self.tx.clone(), self.ctx.clone(), self.cfg.wait_timeout);
        madsim::task::spawn_local(async move {
            c.sleep(d).await;
            let _ = tx.unbounded_send(Input::WaitTimeout(id));
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_survives_the_disk_format() {
        let mut d = Data {
            next_token: 7,
            offset: 42,
            locks: BTreeMap::new(),
        };
        d.locks.insert(
            0,
            Entry {
                owner: 9,
                expires: 1_500,
                token: Some(0),
                client: 4,
            },
        );
        d.locks.insert(
            3,
            Entry {
                owner: u64::MAX,
                expires: -5,
                token: None,
                client: u32::MAX,
            },
        );
        assert_eq!(decode_data(&encode_data(&d)), d);
    }
}
