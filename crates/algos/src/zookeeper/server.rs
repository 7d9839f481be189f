//! One ZooKeeper server of `zookeeper`: the leader (n1) orders every write (a zxid each),
//! broadcasts it to the followers and commits it once a majority (itself included) has
//! logged it; every server applies committed transactions in zxid order (a follower after
//! `follower_lag`) and answers reads from its own applied state. The leader alone times
//! sessions out and closes them through the broadcast, which deletes their ephemeral nodes.

use std::collections::BTreeMap;

use futures_channel::mpsc;
use futures_util::StreamExt;
use locksim_core::history::EventKind;
use locksim_core::{Nanos, NodeId};
use locksim_sim::{Incoming, NodeCtx};
use rand::Rng;
use serde::{Deserialize, Serialize};

use super::Zookeeper;

/// A transaction in the broadcast.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Txn {
    /// Open session `zxid` of this transaction, with a timeout of `timeout` ns (each client
    /// negotiates its own).
    CreateSession { timeout: Nanos },
    /// Create an ephemeral sequential node under lock `key`, owned by `session`, whose name
    /// carries `guid` (Curator's protected-mode prefix) and, in `guid+session` mode, the
    /// session id. `client` is the node that asked (the history names grants by client).
    Create {
        key: u32,
        guid: u64,
        session: u64,
        client: NodeId,
    },
    /// Delete node `seq` of lock `key`.
    Delete { key: u32, seq: u64 },
    /// Close `session`: its ephemeral nodes go.
    CloseSession { session: u64 },
}

/// A lock node as a server sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Znode {
    pub guid: u64,
    /// The session that owns it (`ephemeralOwner`).
    pub owner: u64,
    /// The client whose create made it (for the history's [`EventKind::Touched`]).
    #[serde(default)]
    pub client: NodeId,
}

/// The replicated tree: sessions and each lock's children by sequence number.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tree {
    pub zxid: u64,
    /// Open sessions and their timeouts, ns.
    pub sessions: BTreeMap<u64, Nanos>,
    pub locks: BTreeMap<u32, BTreeMap<u64, Znode>>,
    /// Next sequence number per lock (the parent's `cversion`).
    pub next_seq: BTreeMap<u32, u64>,
}

/// What applying a transaction answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    Session(u64),
    Created(u64),
    Deleted(bool),
    NoSession,
    Closed,
}

impl Tree {
    /// Applies the committed transaction `zxid`.
    pub fn apply(&mut self, zxid: u64, txn: &Txn) -> Applied {
        self.zxid = zxid;
        match *txn {
            Txn::CreateSession { timeout } => {
                self.sessions.insert(zxid, timeout);
                Applied::Session(zxid)
            }
            Txn::Create {
                key,
                guid,
                session,
                client,
            } => {
                if !self.sessions.contains_key(&session) {
                    return Applied::NoSession;
                }
                let n = self.next_seq.entry(key).or_insert(1);
                let seq = *n;
                *n += 1;
                self.locks.entry(key).or_default().insert(
                    seq,
                    Znode {
                        guid,
                        owner: session,
                        client,
                    },
                );
                Applied::Created(seq)
            }
            Txn::Delete { key, seq } => Applied::Deleted(
                self.locks
                    .get_mut(&key)
                    .is_some_and(|c| c.remove(&seq).is_some()),
            ),
            Txn::CloseSession { session } => {
                self.sessions.remove(&session);
                for children in self.locks.values_mut() {
                    children.retain(|_, z| z.owner != session);
                }
                Applied::Closed
            }
        }
    }
}

/// Client requests to the server it is connected to.
#[derive(Debug, Clone)]
pub enum Req {
    /// A write, forwarded to the leader; `session` is touched.
    Write { session: u64, txn: Txn },
    /// List lock `key`'s children; `mine` is the caller's own node, if it has one (a server
    /// that shows it lowest records the grant).
    Children {
        session: u64,
        key: u32,
        mine: Option<u64>,
    },
    /// Answer once node `seq` of `key` is gone here (a one-shot delete watch).
    WatchGone { session: u64, key: u32, seq: u64 },
    /// `sync`: answer once this server has applied everything the leader had committed.
    Sync { session: u64 },
    /// Heartbeat.
    Ping { session: u64 },
    /// Re-establishing a connection: the server asks the leader whether `session` is still
    /// open (ZooKeeper revalidates a session with the leader on every reconnect), which
    /// touches it there.
    Revalidate { session: u64 },
}

/// Answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resp {
    Applied(Applied),
    Children(Vec<(u64, Znode)>),
    Gone,
    Synced,
    Pong,
    /// The session is unknown here (expired or never created).
    SessionExpired,
}

/// Messages among the servers.
#[derive(Debug, Clone)]
enum Peer {
    /// Follower → leader: a client's write, answered by the follower when it applies it.
    Forward {
        origin: (NodeId, u64),
        txn: Txn,
    },
    /// Leader (of incarnation `epoch`) → follower: logged proposal `zxid`.
    Propose {
        epoch: u32,
        zxid: u64,
        txn: Txn,
        origin: Option<(NodeId, u64)>,
    },
    /// Follower → leader.
    Ack {
        zxid: u64,
    },
    /// Leader → follower: everything up to `zxid` is committed.
    Commit {
        epoch: u32,
        zxid: u64,
    },
    /// Leader → follower, every tick: the leader's `PING` (carrying its commit point, as a
    /// `Commit`); the follower answers it with a [`Peer::Touch`].
    Ping {
        epoch: u32,
        zxid: u64,
    },
    /// Follower → leader, only in reply to the leader's [`Peer::Ping`]: sessions its clients
    /// touched since its last reply; and its applied zxid, to be sent a snapshot when it fell
    /// behind. A ZooKeeper follower sends its session touches nowhere else (apache/zookeeper
    /// `Learner.ping`: the reply to the leader's `PING` carries the `touchTable`), so a
    /// paused leader finds none of them queued when it resumes and expires, at its first
    /// look, every session whose deadline passed meanwhile (`SessionTrackerImpl.run`), before
    /// its next ping's replies come back.
    Touch {
        sessions: Vec<u64>,
        applied: u64,
        fresh: bool,
    },
    /// Leader → follower: the whole committed tree (after a restart or lost messages).
    Snapshot {
        tree: Tree,
    },
    /// Follower → leader: the leader's last committed zxid (for `sync`).
    LastZxid,
    LastIs(u64),
    /// Follower → leader: is `session` open? (Touches it.)
    Revalidate {
        session: u64,
    },
    Valid(bool),
}

enum Input {
    Net(Incoming),
    Tick,
    /// A follower's lag has passed for commits up to `zxid`.
    Apply(u64),
    /// A `sync`'s leader zxid arrived.
    SyncAt(Incoming, u64),
    /// The leader's answer to a revalidation.
    Revalidated(Incoming, bool),
}

struct Server {
    ctx: NodeCtx,
    cfg: Zookeeper,
    tree: Tree,
    /// Logged proposals not yet applied: zxid → (txn, origin).
    log: BTreeMap<u64, (Txn, Option<(NodeId, u64)>)>,
    /// Commits known but not yet applied here (a follower waits `follower_lag`).
    committed: u64,
    /// Leader: acks per proposal; the highest zxid assigned.
    acks: BTreeMap<u64, std::collections::BTreeSet<NodeId>>,
    last_zxid: u64,
    /// Leader: session → expiry as a reading of its monotonic clock.
    expiry: BTreeMap<u64, u64>,
    closing: std::collections::BTreeSet<u64>,
    /// Follower: sessions touched since the last tick.
    touched: std::collections::BTreeSet<u64>,
    /// Follower: the leader incarnation whose proposals it logs; whether it has synced
    /// with the leader since it started (a restarted follower serves nobody until then).
    epoch: u32,
    serving: bool,
    /// Leader: after it was last out of touch with its quorum, the last zxid it had proposed
    /// by then (kept afterwards: once committed it no longer holds anything back). Until that
    /// is committed it serves no client, and a `sync` waits for it: a Zab
    /// leader re-establishing its epoch first brings a quorum up to its whole history,
    /// proposals the quorum never acknowledged included, and serves only then (ZooKeeper's
    /// Zab, phase 2 "synchronization"; Junqueira, Reed and Serafini, DSN 2011). Without it a
    /// create proposed while the leader was cut off commits *after* its client, reconnected,
    /// looked for it by its GUID and made a second node.
    resync: Option<u64>,
    /// Leader: each follower's applied zxid at its last two touches.
    reported: BTreeMap<NodeId, u64>,
    /// Leader: when it last heard each follower; follower: when it last heard the leader
    /// (monotonic clock readings).
    heard: BTreeMap<NodeId, u64>,
    /// Requests answered when their transaction is applied here: (origin) → message.
    waiting: BTreeMap<(NodeId, u64), Incoming>,
    next_req: u64,
    watches: Vec<(u32, u64, Incoming)>,
    syncs: Vec<(u64, Incoming)>,
    tx: mpsc::UnboundedSender<Input>,
}

const LEADER: NodeId = 0;

/// Where a write came from: the server it arrived at and that server's request number.
type Origin = Option<(NodeId, u64)>;
const STATE: &str = "zk/tree";

/// Runs one server until it crashes. The leader's committed tree is on disk after every
/// commit (ZooKeeper fsyncs its transaction log); a follower asks for a snapshot after a
/// restart.
pub async fn serve(ctx: NodeCtx, cfg: Zookeeper) {
    let tree = if ctx.id() == LEADER {
        ctx.disk()
            .read(STATE)
            .and_then(|b| serde_json::from_slice::<Tree>(b).ok())
            .unwrap_or_default()
    } else {
        Tree::default()
    };
    let (tx, mut rx) = mpsc::unbounded();
    let servers = cfg.servers;
    let mut s = Server {
        ctx: ctx.clone(),
        cfg,
        last_zxid: tree.zxid,
        committed: tree.zxid,
        tree,
        log: BTreeMap::new(),
        acks: BTreeMap::new(),
        expiry: BTreeMap::new(),
        closing: Default::default(),
        touched: Default::default(),
        epoch: 0,
        serving: ctx.id() == LEADER || ctx.incarnation() == 0,
        resync: None,
        reported: BTreeMap::new(),
        // A first start is an ensemble that has formed at time 0 (its leader elected, its
        // followers synced), as a real one is before its clients come: every server is in
        // touch with the others. Without this each server dropped client requests until the
        // first tick's messages arrived, and a client's first request waited a read timeout
        // (2/3 of the session timeout) for nothing; real ZooKeeper, formed before the run,
        // answers at once (`sims/real/zookeeper-pause.toml`, seeds 1 and 3).
        heard: if ctx.incarnation() == 0 {
            let peers: Vec<NodeId> = if ctx.id() == LEADER {
                (1..servers).collect()
            } else {
                vec![LEADER]
            };
            peers.into_iter().map(|n| (n, ctx.mono_now())).collect()
        } else {
            BTreeMap::new()
        },
        waiting: BTreeMap::new(),
        next_req: 0,
        watches: Vec::new(),
        syncs: Vec::new(),
        tx: tx.clone(),
    };
    if ctx.id() == LEADER {
        ctx.set_leader(Some(1));
    }
    crate::inputs::every(&ctx, s.cfg.tick, tx.clone(), || Input::Tick);
    crate::inputs::messages(&ctx, tx, Input::Net);
    while let Some(input) = rx.next().await {
        match input {
            Input::Net(m) => s.on_message(m).await,
            Input::Tick => s.on_tick().await,
            Input::Apply(z) => s.apply_up_to(z).await,
            Input::SyncAt(m, z) => s.syncs.push((z, m)),
            Input::Revalidated(m, ok) => {
                let r = if ok { Resp::Pong } else { Resp::SessionExpired };
                s.ctx.reply(&m, r).await;
            }
        }
        s.answer_syncs().await;
    }
}

/// The leader's committed state on disk (its transaction log and snapshots, in effect).
fn save(ctx: &NodeCtx, tree: &Tree) {
    let json = serde_json::to_vec(tree).expect("the tree serializes");
    let mut d = ctx.disk();
    d.write(STATE, json);
    d.fsync();
}

impl Server {
    fn leader(&self) -> bool {
        self.ctx.id() == LEADER
    }

    /// The leader's incarnation, which stamps its proposals.
    fn my_epoch(&self) -> u32 {
        self.ctx.incarnation() + 1
    }

    fn followers(&self) -> impl Iterator<Item = NodeId> {
        1..self.cfg.servers
    }

    fn majority(&self) -> usize {
        self.cfg.servers as usize / 2 + 1
    }

    /// Leader: `true` (and touched) when `session` is open and not being closed.
    fn revalidate(&mut self, session: u64) -> bool {
        let open = self.tree.sessions.contains_key(&session) && !self.closing.contains(&session);
        if open {
            self.touch(session);
        }
        open
    }

    /// Leader: proposals made before it lost its quorum are not all committed yet (see
    /// `resync`).
    fn resyncing(&self) -> bool {
        self.resync.is_some_and(|z| self.committed < z)
    }

    /// ZooKeeper's `syncLimit`: five ticks without hearing the other side.
    fn sync_limit(&self) -> u64 {
        5 * self.cfg.tick
    }

    /// Leader: a majority (itself included) heard from within the sync limit. Follower: the
    /// leader heard from within it. Without it a ZooKeeper server stops serving (the leader
    /// gives up leadership, a follower goes looking for a leader).
    fn in_quorum(&self) -> bool {
        let now = self.ctx.mono_now();
        let recent = |n: &NodeId| {
            self.heard
                .get(n)
                .is_some_and(|&t| now.saturating_sub(t) <= self.sync_limit())
        };
        if self.leader() {
            1 + self.followers().filter(recent).count() >= self.majority()
        } else {
            recent(&LEADER)
        }
    }

    fn touch(&mut self, session: u64) {
        self.touch_creating(session, None);
    }

    /// [`Server::touch`] by a request that creates a lock node under `creating.0` for client
    /// `creating.1`.
    fn touch_creating(&mut self, session: u64, creating: Option<(u32, NodeId)>) {
        if self.leader() {
            if let Some(&timeout) = self.tree.sessions.get(&session) {
                let until = self.ctx.mono_now() + timeout;
                let e = self.expiry.entry(session).or_insert(0);
                if until > *e {
                    *e = until;
                    self.record_touched(session, creating);
                }
            }
        } else {
            self.touched.insert(session);
        }
    }

    /// Leader, when it moved `session`'s expiry later: records [`EventKind::Touched`] for each
    /// lock node the session owns (and for the one it is creating, `creating`), so that S3's
    /// session spec counts the holder's lease from here. Sessions that own no lock node, and
    /// sessions being closed, are not recorded (the history stays small).
    fn record_touched(&self, session: u64, creating: Option<(u32, NodeId)>) {
        if self.closing.contains(&session) {
            return;
        }
        let owned: Vec<(u32, NodeId, Option<u64>)> = self
            .tree
            .locks
            .iter()
            .flat_map(|(&key, children)| {
                children
                    .iter()
                    .filter(|(_, z)| z.owner == session)
                    .map(move |(&seq, z)| (key, z.client, Some(seq)))
            })
            .chain(creating.map(|(key, client)| (key, client, None)))
            .collect();
        for (key, client, seq) in owned {
            self.ctx.record(EventKind::Touched {
                key,
                client,
                session,
                seq,
            });
        }
    }

    async fn on_tick(&mut self) {
        if self.leader() && !self.in_quorum() {
            // No quorum: no leadership, no session expiry. Regaining it is like a new leader
            // being elected: every session gets a full timeout again.
            self.expiry.clear();
            self.resync = Some(self.last_zxid);
        }
        if self.leader() {
            // Expire sessions (a new leader incarnation gives each a full timeout).
            let now = self.ctx.mono_now();
            let quorum = self.in_quorum();
            let rearmed: Vec<u64> = self
                .tree
                .sessions
                .iter()
                .filter(|(sid, _)| !self.expiry.contains_key(sid))
                .map(|(&sid, _)| sid)
                .collect();
            for sid in rearmed {
                self.expiry.insert(sid, now + self.tree.sessions[&sid]);
                self.record_touched(sid, None);
            }
            let due: Vec<u64> = self
                .expiry
                .iter()
                .filter(|(s, &e)| quorum && now >= e && !self.closing.contains(s))
                .map(|(&s, _)| s)
                .collect();
            for session in due {
                self.closing.insert(session);
                self.propose(Txn::CloseSession { session }, None).await;
            }
            // Re-send what a follower may have missed.
            let unacked: Vec<(u64, Txn, Origin)> = self
                .log
                .iter()
                .filter(|(z, _)| **z > self.committed)
                .map(|(&z, (t, o))| (z, t.clone(), *o))
                .collect();
            for f in self.followers() {
                for (zxid, txn, origin) in &unacked {
                    let p = Peer::Propose {
                        epoch: self.my_epoch(),
                        zxid: *zxid,
                        txn: txn.clone(),
                        origin: *origin,
                    };
                    self.ctx.send(f, p).await;
                }
                let ping = Peer::Ping {
                    epoch: self.my_epoch(),
                    zxid: self.committed,
                };
                self.ctx.send(f, ping).await;
            }
        }
        // A follower's tick sends nothing: its touches travel in its replies to the leader's
        // pings (`on_peer`, `Peer::Ping`). It used to send them on its own tick, so a paused
        // leader found them queued when it resumed and, when it read them before its expiry
        // check (a per-seed draw), kept sessions alive that real ZooKeeper expires.
    }

    /// Follower: the reply to the leader's ping, with the sessions touched since the last one.
    async fn reply_to_ping(&mut self) {
        let sessions: Vec<u64> = std::mem::take(&mut self.touched).into_iter().collect();
        let touch = Peer::Touch {
            sessions,
            applied: self.tree.zxid,
            fresh: !self.serving,
        };
        self.ctx.send(LEADER, touch).await;
    }

    async fn propose(&mut self, txn: Txn, origin: Option<(NodeId, u64)>) {
        self.last_zxid += 1;
        let zxid = self.last_zxid;
        self.log.insert(zxid, (txn.clone(), origin));
        self.acks.entry(zxid).or_default().insert(LEADER);
        for f in self.followers() {
            let p = Peer::Propose {
                epoch: self.my_epoch(),
                zxid,
                txn: txn.clone(),
                origin,
            };
            self.ctx.send(f, p).await;
        }
        self.maybe_commit().await;
    }

    async fn maybe_commit(&mut self) {
        let mut advanced = false;
        while self
            .acks
            .get(&(self.committed + 1))
            .is_some_and(|a| a.len() >= self.majority())
        {
            self.committed += 1;
            self.acks.remove(&self.committed);
            advanced = true;
        }
        if advanced {
            self.apply_up_to(self.committed).await;
            for f in self.followers() {
                let c = Peer::Commit {
                    epoch: self.my_epoch(),
                    zxid: self.committed,
                };
                self.ctx.send(f, c).await;
            }
        }
    }

    /// Applies logged transactions up to `zxid` (those committed and present).
    async fn apply_up_to(&mut self, zxid: u64) {
        let upto = zxid.min(self.committed);
        while self.tree.zxid < upto {
            let next = self.tree.zxid + 1;
            let Some((txn, origin)) = self.log.remove(&next) else {
                return;
            };
            let applied = self.tree.apply(next, &txn);
            if self.leader() {
                save(&self.ctx, &self.tree);
                match (&txn, &applied) {
                    (Txn::CreateSession { .. }, Applied::Session(s)) => self.touch(*s),
                    (Txn::CloseSession { session }, _) => {
                        self.expiry.remove(session);
                        self.closing.remove(session);
                    }
                    _ => {}
                }
            }
            if let Some(o) = origin {
                if o.0 == self.ctx.id() {
                    if let Some(m) = self.waiting.remove(&o) {
                        self.ctx.reply(&m, Resp::Applied(applied)).await;
                    }
                }
            }
            self.answer_watches().await;
        }
    }

    async fn answer_watches(&mut self) {
        let tree = &self.tree;
        let (gone, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut self.watches)
            .into_iter()
            .partition(|(k, seq, _)| !tree.locks.get(k).is_some_and(|c| c.contains_key(seq)));
        self.watches = keep;
        for (_, _, m) in gone {
            self.ctx.reply(&m, Resp::Gone).await;
        }
    }

    async fn answer_syncs(&mut self) {
        let applied = self.tree.zxid;
        let (done, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut self.syncs)
            .into_iter()
            .partition(|(z, _)| *z <= applied);
        self.syncs = keep;
        for (_, m) in done {
            self.ctx.reply(&m, Resp::Synced).await;
        }
    }

    /// A follower hears from leader incarnation `epoch`: `false` for an older one; a newer
    /// one drops the proposals the old one never committed.
    fn new_epoch(&mut self, epoch: u32) -> bool {
        if epoch < self.epoch {
            return false;
        }
        if epoch > self.epoch {
            self.epoch = epoch;
            let applied = self.tree.zxid;
            self.log.retain(|&z, _| z <= applied);
            self.committed = applied;
        }
        true
    }

    /// A follower received commits up to `zxid`: apply them after its lag.
    fn commit_later(&mut self, zxid: u64) {
        if zxid <= self.committed {
            return;
        }
        self.committed = zxid;
        let (lo, hi) = self.cfg.lag_of(self.ctx.id());
        let lag: Nanos = self.ctx.rng().gen_range(lo..=hi);
        let (c, tx) = (self.ctx.clone(), self.tx.clone());
        madsim::task::spawn_local(async move {
            if lag > 0 {
                c.sleep(lag).await;
            }
            let _ = tx.unbounded_send(Input::Apply(zxid));
        });
    }

    async fn on_message(&mut self, m: Incoming) {
        if let Some(p) = m.body.downcast_ref::<Peer>().cloned() {
            return self.on_peer(m.from, p, &m).await;
        }
        let Some(req) = m.body.downcast_ref::<Req>().cloned() else {
            return;
        };
        if !self.serving || !self.in_quorum() || self.resyncing() {
            // Restarted and not yet synced with the leader, out of touch with the quorum, or
            // a leader still committing what it proposed before it lost the quorum: clients
            // see a dead server and reconnect.
            return;
        }
        match req {
            Req::Write { session, txn } => {
                if !matches!(txn, Txn::CreateSession { .. }) {
                    if !self.tree.sessions.contains_key(&session) {
                        return self.ctx.reply(&m, Resp::SessionExpired).await;
                    }
                    let creating = match txn {
                        Txn::Create { key, client, .. } => Some((key, client)),
                        _ => None,
                    };
                    self.touch_creating(session, creating);
                }
                self.next_req += 1;
                let origin = (self.ctx.id(), self.next_req);
                self.waiting.insert(origin, m);
                if self.leader() {
                    self.propose(txn, Some(origin)).await;
                } else {
                    self.ctx.send(LEADER, Peer::Forward { origin, txn }).await;
                }
            }
            Req::Children { session, key, mine } => {
                if !self.tree.sessions.contains_key(&session) {
                    return self.ctx.reply(&m, Resp::SessionExpired).await;
                }
                self.touch(session);
                let children: Vec<(u64, Znode)> = self
                    .tree
                    .locks
                    .get(&key)
                    .map(|c| c.iter().map(|(&s, &z)| (s, z)).collect())
                    .unwrap_or_default();
                if let (Some(me), Some(&(lowest, _))) = (mine, children.first()) {
                    if me == lowest {
                        self.ctx.record(EventKind::Grant {
                            key,
                            client: m.from,
                            token: Some(me),
                        });
                    }
                }
                self.ctx.reply(&m, Resp::Children(children)).await;
            }
            Req::WatchGone { session, key, seq } => {
                if !self.tree.sessions.contains_key(&session) {
                    return self.ctx.reply(&m, Resp::SessionExpired).await;
                }
                self.touch(session);
                // A client that asks again has given up on its earlier watch.
                self.watches
                    .retain(|w| !(w.0 == key && w.1 == seq && w.2.from == m.from));
                self.watches.push((key, seq, m));
                self.answer_watches().await;
            }
            Req::Sync { session } => {
                self.touch(session);
                if self.leader() {
                    self.syncs.push((self.committed, m));
                } else {
                    let (c, tx, t) = (self.ctx.clone(), self.tx.clone(), self.cfg.peer_timeout());
                    madsim::task::spawn_local(async move {
                        if let Ok(Peer::LastIs(z)) =
                            c.call::<Peer, Peer>(LEADER, Peer::LastZxid, t).await
                        {
                            let _ = tx.unbounded_send(Input::SyncAt(m, z));
                        }
                    });
                }
            }
            Req::Revalidate { session } => {
                if self.leader() {
                    let ok = self.revalidate(session);
                    let r = if ok { Resp::Pong } else { Resp::SessionExpired };
                    self.ctx.reply(&m, r).await;
                } else {
                    let (c, tx, t) = (self.ctx.clone(), self.tx.clone(), self.cfg.peer_timeout());
                    madsim::task::spawn_local(async move {
                        let q = Peer::Revalidate { session };
                        if let Ok(Peer::Valid(ok)) = c.call::<Peer, Peer>(LEADER, q, t).await {
                            let _ = tx.unbounded_send(Input::Revalidated(m, ok));
                        }
                    });
                }
            }
            Req::Ping { session } => {
                if self.tree.sessions.contains_key(&session) {
                    self.touch(session);
                    self.ctx.reply(&m, Resp::Pong).await;
                } else {
                    self.ctx.reply(&m, Resp::SessionExpired).await;
                }
            }
        }
    }

    async fn on_peer(&mut self, from: NodeId, p: Peer, m: &Incoming) {
        let now = self.ctx.mono_now();
        self.heard.insert(from, now);
        match p {
            Peer::Forward { origin, txn } if self.leader() => {
                if let Txn::Create {
                    session,
                    key,
                    client,
                    ..
                } = txn
                {
                    self.touch_creating(session, Some((key, client)));
                }
                self.propose(txn, Some(origin)).await;
            }
            Peer::Propose {
                epoch,
                zxid,
                txn,
                origin,
            } if !self.leader() => {
                if !self.new_epoch(epoch) {
                    return;
                }
                if zxid > self.tree.zxid {
                    self.log.insert(zxid, (txn, origin));
                }
                self.ctx.send(LEADER, Peer::Ack { zxid }).await;
            }
            Peer::Ack { zxid } if self.leader() && zxid > self.committed => {
                self.acks.entry(zxid).or_default().insert(from);
                self.maybe_commit().await;
            }
            Peer::Commit { epoch, zxid } if !self.leader() && self.new_epoch(epoch) => {
                self.commit_later(zxid);
            }
            Peer::Ping { epoch, zxid } if !self.leader() && self.new_epoch(epoch) => {
                self.commit_later(zxid);
                self.reply_to_ping().await;
            }
            Peer::Touch {
                sessions,
                applied,
                fresh,
            } if self.leader() => {
                for s in sessions {
                    self.touch(s);
                }
                // Just started, or stuck behind (a proposal it never got was committed
                // without it): send the committed tree.
                let before = self.reported.insert(from, applied);
                if fresh || (before == Some(applied) && applied < self.tree.zxid) {
                    let snap = Peer::Snapshot {
                        tree: self.tree.clone(),
                    };
                    self.ctx.send(from, snap).await;
                }
            }
            Peer::Snapshot { tree } if !self.leader() => {
                self.serving = true;
                if tree.zxid > self.tree.zxid {
                    self.log.retain(|&z, _| z > tree.zxid);
                    self.committed = self.committed.max(tree.zxid);
                    self.tree = tree;
                    self.answer_watches().await;
                }
            }
            Peer::Revalidate { session } if self.leader() => {
                let ok = self.revalidate(session);
                self.ctx.reply(m, Peer::Valid(ok)).await;
            }
            Peer::LastZxid if self.leader() => {
                let last = self.committed.max(self.resync.unwrap_or(0));
                self.ctx.reply(m, Peer::LastIs(last)).await;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use locksim_core::fault::PauseTask;
    use locksim_core::history::{EventKind, OpF, Phase};
    use locksim_core::time::{MS, SEC};
    use locksim_core::{Cluster, Fault, FaultPlan, Scenario, TimedFault, Workload};

    /// The leader (n1) is paused for 2.2 s at 1.7 s: longer than the 2 s session timeout,
    /// shorter than the sync limit (5 ticks of 500 ms), so the followers keep following it and
    /// keep answering their clients' pings. The last leader ping before the pause went out at
    /// 1.5 s; its replies were in by 1.52 s. Real ZooKeeper's leader gets no follower touches
    /// during the pause (they ride on the replies to its pings) and, resumed, its session
    /// tracker closes every session whose deadline passed, those of clients connected to a
    /// follower included, though the follower answered their pings all along.
    fn scenario(seed: u64) -> Scenario {
        let workload = Workload {
            ttl: 2 * SEC,
            duration: 6 * SEC,
            renew_every: Some(600 * MS),
            writes_per_hold: 40,
            work_min: 200 * MS,
            work_max: 200 * MS,
            ..Workload::default()
        };
        let pause = TimedFault {
            at: 1_700 * MS,
            fault: Fault::Pause {
                node: 0,
                duration: 2_200 * MS,
                task: PauseTask::Process,
            },
            after: None,
        };
        Scenario {
            seed,
            algorithm: "zookeeper".into(),
            config: BTreeMap::from([("tick".to_string(), "500ms".to_string())]),
            cluster: Cluster {
                servers: 3,
                clients: 1,
            },
            workload,
            fault_kinds: Vec::new(),
            faults: FaultPlan::new(vec![pause]),
        }
    }

    #[test]
    fn a_resumed_leader_expires_the_sessions_its_followers_kept_alive() {
        let (mut on_follower, mut kept) = (0, Vec::new());
        for seed in 1..=16 {
            let s = scenario(seed);
            let algo = crate::build(&s.algorithm, &s.config, &s.workload).expect("valid knobs");
            let h = locksim_sim::run(&s, algo);
            // The server the client is connected to records its grant.
            let granted_by = h.events.iter().find_map(|e| match e.kind {
                EventKind::Grant { .. } => Some(e.node),
                _ => None,
            });
            if granted_by.is_none_or(|n| n == 0) {
                // Connected to the leader itself: its pings wait in the leader's socket and
                // race its expiry check on resume, in the model as in ZooKeeper.
                continue;
            }
            on_follower += 1;
            let expired = h.events.iter().any(|e| {
                e.time > 3_900 * MS
                    && matches!(
                        &e.kind,
                        EventKind::Op { f: OpF::Extend, phase: Phase::Fail, error: Some(r), .. }
                            if r.contains("session expired")
                    )
            });
            if !expired {
                kept.push(seed);
            }
        }
        assert!(on_follower >= 4, "only {on_follower} seeds on a follower");
        assert!(
            kept.is_empty(),
            "seeds {kept:?}: the resumed leader kept alive a session of a follower's client \
             whose deadline passed during the pause (it read follower touches queued while it \
             was paused)"
        );
    }
}
