//! One `raft-lease` service node: a raft-rs [`RawNode`] driven by the simulation (ticks from the
//! node's monotonic clock, messages over the simulated network, log and hard state on the
//! simulated disk), applying [`Cmd`]s to a [`LockState`] and answering clients as an etcd
//! server does:
//!
//! - grants, lock and unlock requests are proposed to the log and answered once applied;
//! - lease keep-alives and lock waits are answered only after a ReadIndex round has confirmed
//!   that this node still leads (etcd's `ensureLeadership` before a lease renewal), so a
//!   deposed leader cut off from the others can neither renew a lease nor hand out a lock;
//! - lease expiry is decided by the leader's clock (by default its monotonic clock, as Go's
//!   `time.Now` is); an expired lease is revoked through the log, which deletes its keys;
//! - a new leader gives every lease a full TTL again (etcd's lessor `Promote`).
//!
//! raft-rs draws randomized election timeouts from `rand::thread_rng`; this driver overrides
//! the draw from the node's seeded stream after every change of term or role, so a run is
//! determined by its seed.

use std::collections::{BTreeMap, BTreeSet};

use futures_channel::mpsc;
use futures_util::StreamExt;
use locksim_core::history::EventKind;
use locksim_core::{Nanos, NodeId};
use locksim_sim::{Incoming, LocalClock, NodeCtx};
use protobuf::Message as _;
use raft::prelude::{ConfState, Entry, EntryType, HardState, Message};
use raft::storage::MemStorage;
use raft::{Config, RawNode, ReadOnlyOption, StateRole};
use rand::Rng;
use serde::{Deserialize, Serialize};

use super::state::{Applied, Cmd, LockState, WaitStatus};
use super::{Req, Resp};

/// How one service node behaves.
#[derive(Debug, Clone, Copy)]
pub struct ServerConfig {
    /// Raft tick interval, ns of the node's monotonic clock.
    pub tick: Nanos,
    /// Election timeout in ticks (the randomized timeout is drawn from `[e, 2e)`); heartbeats
    /// go out every tick.
    pub election_ticks: usize,
    /// fsync the log and hard state before acknowledging (etcd always does).
    pub fsync: bool,
    /// The clock that times leases on the leader.
    pub clock: LocalClock,
    /// K2 bug: tell a waiter it holds the lock without checking that its own key still exists.
    pub grant_on_expired_lease: bool,
    /// K3 bug: an unlock deletes the session's key by name, whatever its revision.
    pub unlock_by_name: bool,
    /// Consul's lock-delay, ns of `clock`: after a revocation deletes the key that held lock
    /// `k`, nobody is told they hold `k` for this long (a clean unlock sets no delay). Each
    /// node sets it when it applies the revocation, on its own clock, as Consul's state store
    /// does; 0 (etcd, `raft-lease`) disables it.
    pub lock_delay: Nanos,
    /// Consul: a leader that loses its leadership fails the writes it was committing, so
    /// their callers get an error they cannot read as applied or not (hashicorp/raft's
    /// `ErrLeadershipLost`, "leadership lost while committing log", answered by Consul's HTTP
    /// API as a 500). `false` (etcd, `raft-lease`): such a request gets no answer from this
    /// node, and the client's own timeout ends its wait.
    pub answer_lost: bool,
}

/// A Raft message between service nodes.
#[derive(Clone)]
pub struct Peer(pub Message);

/// What goes into a log entry.
#[derive(Debug, Serialize, Deserialize)]
struct Proposal {
    /// Unique per proposing node incarnation; 0 for proposals nobody waits on.
    id: u64,
    /// The client that asked (the node itself for revocations).
    client: NodeId,
    cmd: Cmd,
}

enum Input {
    Tick,
    Net(Incoming),
}

enum ReadFor {
    KeepAlive { lease: u64 },
    Wait { key: u32, lease: u64, rev: u64 },
}

struct PendingRead {
    /// The commit index at which leadership was confirmed, once it is.
    index: Option<u64>,
    what: ReadFor,
    msg: Incoming,
}

const HARDSTATE: &str = "raft/hardstate";
const LOG: &str = "raft/log/";

fn raft_id(node: NodeId) -> u64 {
    node as u64 + 1
}

fn log_file(index: u64) -> String {
    format!("{LOG}{index:020}")
}

struct Server {
    ctx: NodeCtx,
    cfg: ServerConfig,
    node: RawNode<MemStorage>,
    state: LockState,
    applied: u64,
    /// (term, role) at the last look, to redraw the election timeout when either changes.
    seen: (u64, StateRole),
    next_id: u64,
    proposals: BTreeMap<u64, Incoming>,
    reads: BTreeMap<u64, PendingRead>,
    parked: Vec<(u32, u64, u64, Incoming)>,
    /// Leader only: lease → expiry as a reading of `cfg.clock`.
    expiry: BTreeMap<u64, i64>,
    revoking: BTreeSet<u64>,
    /// Lock key → end of its lock-delay, as a reading of `cfg.clock`.
    delayed: BTreeMap<u32, i64>,
    /// Highest log index written to disk.
    last_on_disk: u64,
}

/// Runs one service node until it crashes; called again with a fresh context on restart,
/// when it recovers its log and hard state from what reached the disk.
pub async fn serve(ctx: NodeCtx, cfg: ServerConfig) {
    let servers = ctx.cluster().servers;
    let voters: Vec<u64> = (0..servers).map(raft_id).collect();
    let store = MemStorage::new_with_conf_state(ConfState::from((voters, vec![])));
    let last_on_disk;
    {
        let disk = ctx.disk();
        let mut entries = Vec::new();
        for f in disk.list(LOG) {
            let bytes = disk.read(&f).expect("listed");
            entries.push(Entry::parse_from_bytes(bytes).expect("entries we wrote"));
        }
        last_on_disk = entries.last().map_or(0, |e| e.index);
        let mut w = store.wl();
        w.append(&entries).expect("a contiguous log from index 1");
        if let Some(b) = disk.read(HARDSTATE) {
            let mut hs = HardState::parse_from_bytes(b).expect("a hard state we wrote");
            hs.commit = hs.commit.min(last_on_disk);
            w.set_hardstate(hs);
        }
    }
    let config = Config {
        id: raft_id(ctx.id()),
        election_tick: cfg.election_ticks,
        heartbeat_tick: 1,
        check_quorum: true,
        pre_vote: true,
        read_only_option: ReadOnlyOption::Safe,
        max_size_per_msg: 1 << 20,
        max_inflight_msgs: 256,
        ..Default::default()
    };
    let logger = slog::Logger::root(slog::Discard, slog::o!());
    let node = RawNode::new(&config, store, &logger).expect("a valid raft configuration");
    let mut s = Server {
        ctx: ctx.clone(),
        cfg,
        node,
        state: LockState::default(),
        applied: 0,
        seen: (u64::MAX, StateRole::Follower),
        next_id: 1,
        proposals: BTreeMap::new(),
        reads: BTreeMap::new(),
        parked: Vec::new(),
        expiry: BTreeMap::new(),
        revoking: BTreeSet::new(),
        delayed: BTreeMap::new(),
        last_on_disk,
    };
    s.roles_changed();

    let (tx, mut rx) = mpsc::unbounded();
    crate::inputs::every(&ctx, cfg.tick, tx.clone(), || Input::Tick);
    crate::inputs::messages(&ctx, tx, Input::Net);
    while let Some(input) = rx.next().await {
        match input {
            Input::Tick => {
                s.node.tick();
                s.roles_changed();
                s.expire_leases();
                s.end_lock_delays();
            }
            Input::Net(m) => s.on_message(m).await,
        }
        s.roles_changed();
        s.on_ready().await;
        s.roles_changed();
    }
}

impl Server {
    fn leader(&self) -> bool {
        self.node.raft.state == StateRole::Leader
    }

    fn now(&self) -> i64 {
        self.ctx.now(self.cfg.clock)
    }

    /// Redraws the election timeout from the seeded stream after a change of term or role,
    /// and keeps leader-only state in step with leadership.
    fn roles_changed(&mut self) {
        let now = (self.node.raft.term, self.node.raft.state);
        if now == self.seen {
            return;
        }
        let was_leader = self.seen.1 == StateRole::Leader;
        self.seen = now;
        let e = self.cfg.election_ticks;
        let t = self.ctx.rng().gen_range(e..2 * e);
        self.node.raft.set_randomized_election_timeout(t);
        if self.leader() {
            self.ctx.set_leader(Some(now.0));
            // A new leader gives every lease a full TTL again (lazily, in `expire_leases`).
            self.expiry.clear();
            self.revoking.clear();
        } else {
            self.ctx.set_leader(None);
            if was_leader {
                // Requests waiting on this node's leadership will never be answered here
                // with their result; Consul fails them (answer_lost), etcd stays silent.
                let lost = std::mem::take(&mut self.proposals);
                if self.cfg.answer_lost {
                    let ctx = self.ctx.clone();
                    madsim::task::spawn_local(async move {
                        for m in lost.into_values() {
                            ctx.reply(&m, Resp::LeadershipLost).await;
                        }
                    });
                }
                self.expiry.clear();
                self.revoking.clear();
                let hint = self.hint();
                let reads = std::mem::take(&mut self.reads);
                let parked = std::mem::take(&mut self.parked);
                let msgs: Vec<Incoming> = reads
                    .into_values()
                    .map(|r| r.msg)
                    .chain(parked.into_iter().map(|p| p.3))
                    .collect();
                let ctx = self.ctx.clone();
                madsim::task::spawn_local(async move {
                    for m in msgs {
                        ctx.reply(&m, Resp::NotLeader { hint }).await;
                    }
                });
            }
        }
    }

    fn hint(&self) -> Option<NodeId> {
        let l = self.node.raft.leader_id;
        (l != 0 && l != raft_id(self.ctx.id())).then(|| (l - 1) as NodeId)
    }

    fn fresh_id(&mut self) -> u64 {
        self.next_id += 1;
        ((self.ctx.id() as u64) << 48) | ((self.ctx.incarnation() as u64) << 32) | self.next_id
    }

    async fn on_message(&mut self, m: Incoming) {
        if let Some(Peer(msg)) = m.body.downcast_ref::<Peer>() {
            // Messages from another term or a stale peer are raft's business; errors mean the
            // message was not for this node's group and can be dropped.
            let _ = self.node.step(msg.clone());
            return;
        }
        let Some(req) = m.body.downcast_ref::<Req>().cloned() else {
            return;
        };
        if !self.leader() {
            let hint = self.hint();
            self.ctx.reply(&m, Resp::NotLeader { hint }).await;
            return;
        }
        let cmd = match req {
            Req::Grant { ttl } => Cmd::Grant { ttl },
            Req::Lock { key, lease } => Cmd::Lock { key, lease },
            Req::Unlock { key, lease, rev } => Cmd::Unlock {
                key,
                lease,
                rev,
                by_name: self.cfg.unlock_by_name,
            },
            Req::Revoke { lease } => Cmd::Revoke { lease },
            Req::KeepAlive { lease } => return self.read(ReadFor::KeepAlive { lease }, m),
            Req::Wait { key, lease, rev } => {
                return self.read(ReadFor::Wait { key, lease, rev }, m)
            }
        };
        let id = self.fresh_id();
        let p = Proposal {
            id,
            client: m.from,
            cmd,
        };
        let data = serde_json::to_vec(&p).expect("commands serialize");
        if self.node.propose(vec![], data).is_ok() {
            self.proposals.insert(id, m);
        } else {
            let hint = self.hint();
            self.ctx.reply(&m, Resp::NotLeader { hint }).await;
        }
    }

    /// Starts a ReadIndex round; the answer waits until leadership is confirmed and the state
    /// machine has caught up with the commit index of that moment.
    fn read(&mut self, what: ReadFor, msg: Incoming) {
        if let ReadFor::Wait { key, lease, rev } = what {
            // A client that asks again has given up on its earlier request.
            self.parked.retain(|p| (p.0, p.1, p.2) != (key, lease, rev));
        }
        let id = self.fresh_id();
        self.reads.insert(
            id,
            PendingRead {
                index: None,
                what,
                msg,
            },
        );
        self.node.read_index(id.to_le_bytes().to_vec());
    }

    /// The leader revokes every lease whose TTL ran out on its clock.
    fn expire_leases(&mut self) {
        if !self.leader() {
            return;
        }
        let now = self.now();
        for (lease, ttl) in self.state.leases() {
            self.expiry
                .entry(lease)
                .or_insert(now.saturating_add(ttl as i64));
        }
        let due: Vec<u64> = self
            .expiry
            .iter()
            .filter(|(l, &e)| now >= e && !self.revoking.contains(l))
            .map(|(&l, _)| l)
            .collect();
        for lease in due {
            let p = Proposal {
                id: 0,
                client: self.ctx.id(),
                cmd: Cmd::Revoke { lease },
            };
            let data = serde_json::to_vec(&p).expect("commands serialize");
            if self.node.propose(vec![], data).is_ok() {
                self.revoking.insert(lease);
            }
        }
    }

    /// `true` while lock `key` is in its lock-delay.
    fn in_lock_delay(&self, key: u32) -> bool {
        self.delayed
            .get(&key)
            .is_some_and(|&until| self.now() < until)
    }

    /// Forgets lock-delays that ended and, on the leader, looks again at the waiters parked
    /// behind them.
    fn end_lock_delays(&mut self) {
        let now = self.now();
        let ended: Vec<u32> = self
            .delayed
            .iter()
            .filter(|(_, &until)| now >= until)
            .map(|(&k, _)| k)
            .collect();
        if ended.is_empty() {
            return;
        }
        for k in &ended {
            self.delayed.remove(k);
        }
        if self.leader() {
            let (wake, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut self.parked)
                .into_iter()
                .partition(|p| ended.contains(&p.0));
            self.parked = keep;
            for (key, lease, rev, msg) in wake {
                self.read(ReadFor::Wait { key, lease, rev }, msg);
            }
        }
    }

    /// A grant renews the holder's lease for a full TTL from now, so a lock lasts at least one
    /// TTL from the moment it is granted (the lease-lock contract).
    fn renew_on_grant(&mut self, lease: u64) {
        if let Some(ttl) = self.state.lease_ttl(lease) {
            if !self.revoking.contains(&lease) {
                let until = self.now().saturating_add(ttl as i64);
                let e = self.expiry.entry(lease).or_insert(until);
                *e = (*e).max(until);
            }
        }
    }

    async fn send_all(&self, msgs: Vec<Message>) {
        for m in msgs {
            let to = (m.to - 1) as NodeId;
            self.ctx.send(to, Peer(m)).await;
        }
    }

    fn persist(&mut self, entries: &[Entry], hs: Option<&HardState>) {
        if entries.is_empty() && hs.is_none() {
            return;
        }
        let store = self.node.raft.raft_log.store.clone();
        let mut disk = self.ctx.disk();
        if let Some(first) = entries.first() {
            store
                .wl()
                .append(entries)
                .expect("raft appends after its own log");
            let last = entries.last().expect("non-empty").index;
            for i in (last + 1)..=self.last_on_disk {
                disk.remove(&log_file(i));
            }
            for e in entries {
                disk.write(&log_file(e.index), e.write_to_bytes().expect("encodes"));
            }
            debug_assert!(first.index <= self.last_on_disk + 1);
            self.last_on_disk = last;
            if !self.leader() {
                self.ctx.replicated(last);
            }
        }
        if let Some(hs) = hs {
            store.wl().set_hardstate(hs.clone());
            disk.write(HARDSTATE, hs.write_to_bytes().expect("encodes"));
        }
        if self.cfg.fsync {
            disk.fsync();
        }
    }

    fn persist_commit(&mut self, commit: u64) {
        let mut hs = self.node.raft.raft_log.store.rl().hard_state().clone();
        hs.commit = commit;
        self.persist(&[], Some(&hs));
    }

    async fn on_ready(&mut self) {
        if !self.node.has_ready() {
            return;
        }
        let mut ready = self.node.ready();
        self.send_all(ready.take_messages()).await;
        let committed = ready.take_committed_entries();
        self.apply(committed).await;
        let entries = ready.take_entries();
        self.persist(&entries, ready.hs());
        for rs in ready.take_read_states() {
            let id = u64::from_le_bytes(rs.request_ctx[..8].try_into().unwrap_or([0; 8]));
            if let Some(r) = self.reads.get_mut(&id) {
                r.index = Some(rs.index);
            }
        }
        self.send_all(ready.take_persisted_messages()).await;
        let mut light = self.node.advance(ready);
        if let Some(commit) = light.commit_index() {
            self.persist_commit(commit);
        }
        self.send_all(light.take_messages()).await;
        let committed = light.take_committed_entries();
        self.apply(committed).await;
        self.node.advance_apply();
        self.serve_reads().await;
    }

    async fn apply(&mut self, entries: Vec<Entry>) {
        for e in entries {
            self.applied = e.index;
            if e.data.is_empty() || e.get_entry_type() != EntryType::EntryNormal {
                continue;
            }
            let Ok(p) = serde_json::from_slice::<Proposal>(&e.data) else {
                continue;
            };
            // The locks a revoked lease holds get their lock-delay (Consul), not its waiters;
            // nor does the head of a queue still in a lock-delay, which was never told it
            // holds (its answer waits for the delay's end): were its end to start a new
            // delay, each waiter that gives up would re-arm it and nobody would ever be
            // granted again.
            let held: Vec<u32> = match p.cmd {
                Cmd::Revoke { lease } if self.cfg.lock_delay > 0 => self
                    .state
                    .leases_keys(lease)
                    .filter(|&k| self.state.owner(k).is_some_and(|o| o.1 == lease))
                    .filter(|&k| !self.in_lock_delay(k))
                    .collect(),
                _ => Vec::new(),
            };
            let result = self.state.apply(&p.cmd);
            for k in held {
                let until = self.now().saturating_add(self.cfg.lock_delay as i64);
                self.delayed.insert(k, until);
            }
            let leader = self.leader();
            let mut touched: Vec<u32> = Vec::new();
            match (&p.cmd, &result) {
                (Cmd::Grant { ttl }, Applied::Granted { lease }) if leader => {
                    let until = self.now().saturating_add(*ttl as i64);
                    self.expiry.insert(*lease, until);
                }
                (Cmd::Unlock { key, rev, .. }, Applied::Unlocked { freed: Some(freed) }) => {
                    touched.push(*key);
                    if leader {
                        self.ctx.record(EventKind::Freed {
                            key: *key,
                            client: p.client,
                            freed: *freed,
                            released: *rev,
                            holder: None,
                        });
                    }
                }
                (Cmd::Revoke { lease }, Applied::Revoked { freed }) => {
                    touched.extend(freed.iter().map(|f| f.0));
                    self.expiry.remove(lease);
                    self.revoking.remove(lease);
                }
                _ => {}
            }
            if let Some(m) = self.proposals.remove(&p.id) {
                let resp = match result {
                    Applied::Granted { lease } => Resp::Granted { lease },
                    Applied::Locked { rev, owner } => {
                        // In a lock-delay the head of the queue is not told it holds the lock
                        // yet: it waits, and is answered when the delay ends.
                        let owner = owner
                            && !matches!(p.cmd, Cmd::Lock { key, .. } if self.in_lock_delay(key));
                        if let (true, &Cmd::Lock { key, lease }) = (owner, &p.cmd) {
                            self.renew_on_grant(lease);
                            self.ctx.record(EventKind::Grant {
                                key,
                                client: m.from,
                                token: Some(rev),
                            });
                        }
                        Resp::Locked { rev, owner }
                    }
                    Applied::NoLease => Resp::LeaseNotFound,
                    Applied::Unlocked { freed } => Resp::Unlocked {
                        found: freed.is_some(),
                    },
                    Applied::Revoked { .. } => Resp::Revoked,
                };
                self.ctx.reply(&m, resp).await;
            }
            if leader && !touched.is_empty() {
                // Waiters behind a deleted key may hold the lock now: confirm leadership again
                // before telling them.
                let (wake, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut self.parked)
                    .into_iter()
                    .partition(|p| touched.contains(&p.0));
                self.parked = keep;
                for (key, lease, rev, msg) in wake {
                    self.read(ReadFor::Wait { key, lease, rev }, msg);
                }
            }
        }
    }

    /// Answers keep-alives and waits whose leadership check has completed.
    async fn serve_reads(&mut self) {
        let ready: Vec<u64> = self
            .reads
            .iter()
            .filter(|(_, r)| r.index.is_some_and(|i| i <= self.applied))
            .map(|(&id, _)| id)
            .collect();
        for id in ready {
            let r = self.reads.remove(&id).expect("listed");
            let now = self.now();
            let live = |s: &Self, lease: u64| {
                s.state.lease_ttl(lease).is_some()
                    && !s.revoking.contains(&lease)
                    && s.expiry.get(&lease).is_none_or(|&e| now < e)
            };
            match r.what {
                ReadFor::KeepAlive { lease } => {
                    let resp = if live(self, lease) {
                        let ttl = self.state.lease_ttl(lease).expect("live") as i64;
                        let e = self.expiry.entry(lease).or_insert(now);
                        *e = (*e).max(now.saturating_add(ttl));
                        Resp::Alive
                    } else {
                        Resp::LeaseNotFound
                    };
                    self.ctx.reply(&r.msg, resp).await;
                }
                ReadFor::Wait { key, lease, rev } => {
                    let recheck = !self.cfg.grant_on_expired_lease;
                    let status = if recheck && !live(self, lease) {
                        WaitStatus::Gone
                    } else if self.in_lock_delay(key) {
                        WaitStatus::Waiting
                    } else {
                        self.state.wait_status(key, lease, rev, recheck)
                    };
                    match status {
                        WaitStatus::Acquired => {
                            self.renew_on_grant(lease);
                            self.ctx.record(EventKind::Grant {
                                key,
                                client: r.msg.from,
                                token: Some(rev),
                            });
                            self.ctx.reply(&r.msg, Resp::Acquired { rev }).await;
                        }
                        WaitStatus::Gone => self.ctx.reply(&r.msg, Resp::Gone).await,
                        WaitStatus::Waiting => self.parked.push((key, lease, rev, r.msg)),
                    }
                }
            }
        }
    }
}
