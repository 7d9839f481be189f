//! Turns what the simulated server saw into a locksim [`History`], with no hook in the
//! client's code: every event is recorded at the server, in true time.
//!
//! - A lock key is any key a `SET … NX` created; keys are numbered (`k0`, `k1`, …) in the order
//!   of their first grant.
//! - A grant (`SET … NX` that created the key) is an acquire by the calling client node: an
//!   `invoke`, the service's `grant` and an `ok` with a validity deadline of the grant's TTL,
//!   all at the moment the server decided. The client's hold in the checkers then runs from
//!   the grant until its release, its deadline, its crash or its last resource write,
//!   whichever the checkers' rule picks (locksim-check's `holds`).
//! - A release is a delete of the lock key by the client that holds it (a compare-and-delete
//!   script whose compare held, or a plain `DEL`); a compare-and-delete that found another
//!   value ends the caller's belief in its latest grant (`release` invoke, then `fail`), once.
//! - A delete of a lock key another client holds (a `DEL`, or a compare-and-delete with that
//!   holder's value) is a `freed` event naming the holder: S4.
//! - An extension (`PEXPIRE`/`EXPIRE`, a compare-and-pexpire, or a `SET` of the same value with
//!   `PX`/`EX`, by the holder) is an `extend` `ok` with the new deadline.
//! - A write to a key under the resource prefix is a resource write under the latest grant
//!   made on the same connection while that grant is not released (a write given up on and
//!   delivered late), else under the writer's latest grant on any connection (a pool's
//!   connection, a Redlock server outside the current majority); its `write` op and
//!   `write_accepted`: so a client that writes after its lease ran out shows up as S1 (its hold
//!   stretches to the write) and S2 (a stale write).

use std::collections::BTreeMap;

use locksim_core::history::{Deadline, Event, EventKind, LocalClock, OpF, Phase};
use locksim_core::trigger::{occurrence, Count, Trigger};
use locksim_core::{Fault, History, Nanos, NodeId};

use crate::store::Effect;

/// One server's copy of a lock key: who set it, its value, its deadline at that server.
#[derive(Debug, Clone)]
struct Copy {
    client: NodeId,
    value: Vec<u8>,
    until: Option<Nanos>,
    conn: u64,
}

/// A grant: a majority of the servers holding one client's value.
#[derive(Debug, Clone)]
struct Live {
    handle: u64,
    client: NodeId,
    value: Vec<u8>,
    /// The grant's deadline, ns: when fewer than a majority of the servers would still hold
    /// the value (with one server, the key's deadline there).
    until: Option<Nanos>,
    released: bool,
}

/// The recorder of one run.
#[derive(Debug)]
pub struct Recorder {
    /// The number of lock servers, nodes `0..servers`.
    servers: u32,
    /// How many of them holding one value make a grant: a majority (Redlock), or 1 (a primary
    /// and its replicas, [`Recorder::with_quorum`]).
    quorum: usize,
    resource: NodeId,
    resource_prefix: Vec<u8>,
    events: Vec<Event>,
    lock_keys: BTreeMap<Vec<u8>, u32>,
    /// Per (lock key, server): the key's copy there.
    copies: BTreeMap<(u32, u32), Copy>,
    /// Per lock key: the latest grant.
    live: BTreeMap<u32, Live>,
    /// Per client: its latest grant (handle, key).
    latest: BTreeMap<NodeId, (u64, u32)>,
    /// Per connection: the latest grant made on it (handle, key). A request the client gave up
    /// on (a timeout) and that arrives late belongs to the grant of its own connection, not to
    /// one the client got since on a new connection.
    on_conn: BTreeMap<u64, (u64, u32)>,
    /// Handles whose release (or failed release) is recorded: a later failed compare-and-delete
    /// naming no live grant of the caller (Redlock clients send one after every failed
    /// acquire) adds nothing.
    ended: std::collections::BTreeSet<u64>,
    next_op: u64,
    next_handle: u64,
    writes: u64,
    /// Faults waiting for an event, their counts, and where to send one (and its delay) when
    /// its event comes.
    triggers: Vec<(Trigger, Fault, Count, bool)>,
    fire: Option<tokio::sync::mpsc::UnboundedSender<(Fault, Nanos)>>,
}

impl Recorder {
    /// A recorder for `servers` lock servers at nodes `0..servers` (1 or more; a majority of
    /// them holding a client's value is a grant), resource writes recorded on node
    /// `resource`, keys starting with `resource_prefix` being the protected resource.
    pub fn new(servers: u32, resource: NodeId, resource_prefix: &[u8]) -> Recorder {
        Recorder {
            servers: servers.max(1),
            quorum: servers.max(1) as usize / 2 + 1,
            resource,
            resource_prefix: resource_prefix.to_vec(),
            events: Vec::new(),
            lock_keys: BTreeMap::new(),
            copies: BTreeMap::new(),
            live: BTreeMap::new(),
            latest: BTreeMap::new(),
            on_conn: BTreeMap::new(),
            ended: Default::default(),
            next_op: 1,
            next_handle: 1,
            writes: 0,
            triggers: Vec::new(),
            fire: None,
        }
    }

    /// Watches the recorded events for `triggers`; when one's event comes, sends its fault and
    /// delay (ns) on `fire`, once.
    pub fn watch(
        &mut self,
        triggers: Vec<(Trigger, Fault)>,
        fire: tokio::sync::mpsc::UnboundedSender<(Fault, Nanos)>,
    ) {
        self.triggers = triggers
            .into_iter()
            .map(|(t, f)| (t, f, Count::default(), false))
            .collect();
        self.fire = Some(fire);
    }

    fn push(&mut self, time: Nanos, node: NodeId, kind: EventKind) -> u64 {
        if let Some(o) = (!self.triggers.is_empty())
            .then(|| occurrence(&kind))
            .flatten()
        {
            for (trigger, fault, count, fired) in &mut self.triggers {
                if !*fired && trigger.count(count, node, &o) && count.n == trigger.nth {
                    *fired = true;
                    if let Some(fire) = &self.fire {
                        let _ = fire.send((fault.clone(), trigger.delay));
                    }
                }
            }
        }
        let id = self.events.len() as u64;
        // One clock for every node (madsim's): wall and monotonic readings are true time.
        self.events.push(Event {
            id,
            time,
            node,
            wall: time as i64,
            mono: time,
            kind,
        });
        id
    }

    fn op(
        time: Nanos,
        node: NodeId,
        op: u64,
        phase: Phase,
        f: OpF,
        key: u32,
        handle: Option<u64>,
    ) -> Event {
        Event {
            id: 0,
            time,
            node,
            wall: time as i64,
            mono: time,
            kind: EventKind::Op {
                op,
                phase,
                f,
                key,
                handle,
                token: None,
                deadline: None,
                error: None,
                value: None,
            },
        }
    }

    fn push_event(&mut self, e: Event) {
        self.push(e.time, e.node, e.kind);
    }

    fn new_op(&mut self) -> u64 {
        self.next_op += 1;
        self.next_op - 1
    }

    fn deadline(at: Option<Nanos>) -> Option<Deadline> {
        at.map(|at| Deadline {
            clock: LocalClock::Mono,
            local: at as i64,
            at,
        })
    }

    /// Records what one command from `client`, on its connection `conn` (an id unique in the
    /// run) to server `server` (node `0..servers`), did at true time `now`.
    pub fn effects(
        &mut self,
        now: Nanos,
        server: u32,
        client: NodeId,
        conn: u64,
        effects: &[Effect],
    ) {
        for e in effects {
            self.effect(now, server, client, conn, e);
        }
    }

    /// The grant a request from `client` on `conn` acts under: the latest made on that
    /// connection, else the client's latest.
    fn own(&self, client: NodeId, conn: u64) -> Option<(u64, u32)> {
        self.on_conn
            .get(&conn)
            .or_else(|| self.latest.get(&client))
            .copied()
    }

    /// The grant a resource write from `client` on `conn` is made under: the latest grant made
    /// on that connection while it is not released (a write given up on and delivered late
    /// belongs to it), else the client's latest (a pool's connection, or a Redlock server
    /// outside the current majority, carries writes for whichever grant is current).
    fn writes_under(&self, client: NodeId, conn: u64) -> Option<(u64, u32)> {
        match self.on_conn.get(&conn) {
            Some(g) if !self.ended.contains(&g.0) => Some(*g),
            _ => self.latest.get(&client).copied(),
        }
    }

    fn live_grant(&self, key: &[u8], now: Nanos) -> Option<(u32, &Live)> {
        let k = *self.lock_keys.get(key)?;
        let l = self.live.get(&k)?;
        (!l.released && l.until.is_none_or(|t| t > now)).then_some((k, l))
    }

    /// How many copies of one value make a grant.
    fn quorum(&self) -> usize {
        self.quorum
    }

    /// Server `server` extended keys by itself (an etcd member renewing every lease at
    /// restart): each `Expiry` among `effects` counts as an extension of the grant whose copy
    /// there holds the value, by that copy's client.
    pub fn renewed(&mut self, now: Nanos, server: u32, effects: &[Effect]) {
        for e in effects {
            let Effect::Expiry { key, value, .. } = e else {
                continue;
            };
            let holder = self
                .lock_keys
                .get(key.as_slice())
                .and_then(|k| self.copies.get(&(*k, server)))
                .filter(|c| &c.value == value)
                .map(|c| (c.client, c.conn));
            if let Some((client, conn)) = holder {
                self.effect(now, server, client, conn, e);
            }
        }
    }

    /// The same recorder with a grant made by `quorum` servers' copies (1: each primary's
    /// `SET NX` under Sentinel, the replicas' copies arriving by replication, not recorded).
    pub fn with_quorum(mut self, quorum: usize) -> Recorder {
        self.quorum = quorum.max(1);
        self
    }

    /// Server `node` became the primary in `term` (Sentinel's configuration epoch + 1).
    pub fn leader(&mut self, now: Nanos, node: NodeId, term: u64) {
        self.push(now, node, EventKind::Leader { term });
    }

    /// The servers whose copy of key `k` holds `client`'s `value` at `now`, and the deadline of
    /// a grant on them: the moment fewer than a majority would still hold it (the
    /// majority-th latest of their deadlines; `None`, no deadline, when that many have none).
    fn holding(
        &self,
        k: u32,
        client: NodeId,
        value: &[u8],
        now: Nanos,
    ) -> (Vec<u32>, Option<Nanos>) {
        let mut servers = Vec::new();
        let mut untils: Vec<Option<Nanos>> = Vec::new();
        for ((_, s), c) in self.copies.range((k, 0)..=(k, u32::MAX)) {
            if c.client == client && c.value == value && c.until.is_none_or(|t| t > now) {
                servers.push(*s);
                untils.push(c.until);
            }
        }
        // Latest first, no deadline being the latest of all.
        untils.sort_by(|a, b| match (a, b) {
            (None, None) => std::cmp::Ordering::Equal,
            (None, Some(_)) => std::cmp::Ordering::Less,
            (Some(_), None) => std::cmp::Ordering::Greater,
            (Some(x), Some(y)) => y.cmp(x),
        });
        let until = untils.get(self.quorum() - 1).copied().flatten();
        (servers, until)
    }

    fn effect(&mut self, now: Nanos, server: u32, client: NodeId, conn: u64, e: &Effect) {
        match e {
            Effect::Acquired {
                key,
                value,
                expires,
            } => {
                let n = self.lock_keys.len() as u32;
                let k = *self.lock_keys.entry(key.clone()).or_insert(n);
                self.copies.insert(
                    (k, server),
                    Copy {
                        client,
                        value: value.clone(),
                        until: *expires,
                        conn,
                    },
                );
                if matches!(self.live_grant(key, now), Some((_, l)) if l.client == client && &l.value == value)
                {
                    // One more server for a grant already made.
                    return;
                }
                let (holding, until) = self.holding(k, client, value, now);
                if holding.len() < self.quorum() {
                    return;
                }
                let (op, handle) = (self.new_op(), self.next_handle);
                self.next_handle += 1;
                let inv = Self::op(now, client, op, Phase::Invoke, OpF::Acquire, k, None);
                self.push_event(inv);
                // Each server of the majority records its grant, as Redlock's masters do in
                // locksim's model (the checkers take a majority of them as the decision).
                for s in &holding {
                    self.push(
                        now,
                        *s,
                        EventKind::Grant {
                            key: k,
                            client,
                            token: None,
                        },
                    );
                }
                let mut ok = Self::op(now, client, op, Phase::Ok, OpF::Acquire, k, Some(handle));
                if let EventKind::Op { deadline, .. } = &mut ok.kind {
                    *deadline = Self::deadline(until);
                }
                self.push_event(ok);
                self.live.insert(
                    k,
                    Live {
                        handle,
                        client,
                        value: value.clone(),
                        until,
                        released: false,
                    },
                );
                self.latest.insert(client, (handle, k));
                let conns: Vec<u64> = holding
                    .iter()
                    .filter_map(|s| self.copies.get(&(k, *s)).map(|c| c.conn))
                    .collect();
                for c in conns {
                    self.on_conn.insert(c, (handle, k));
                }
            }
            Effect::Deleted { key, value, .. } => {
                let Some(&k) = self.lock_keys.get(key.as_slice()) else {
                    return;
                };
                let copy = self.copies.remove(&(k, server));
                let Some((k, live)) = self.live_grant(key, now) else {
                    return;
                };
                let live = live.clone();
                if &live.value != value || copy.is_some_and(|c| c.client != live.client) {
                    // A copy that is not the grant's (an attempt that got no majority).
                    return;
                }
                if live.client == client {
                    // The holder's first delete: it is releasing (the rest follow).
                    self.ended.insert(live.handle);
                    let op = self.new_op();
                    for phase in [Phase::Invoke, Phase::Ok] {
                        let e =
                            Self::op(now, client, op, phase, OpF::Release, k, Some(live.handle));
                        self.push_event(e);
                    }
                } else {
                    if self.holding(k, live.client, &live.value, now).0.len() >= self.quorum() {
                        // Another client deleted one copy, and a majority still holds.
                        return;
                    }
                    // Someone else's lock: the caller's own grant on this key, if it had one,
                    // is the one it meant to release.
                    let own = match self.own(client, conn) {
                        Some((h, kk)) if kk == k => h,
                        _ => 0,
                    };
                    self.push(
                        now,
                        server,
                        EventKind::Freed {
                            key: k,
                            client,
                            freed: live.handle,
                            released: own,
                            holder: Some(live.client),
                        },
                    );
                }
                if let Some(l) = self.live.get_mut(&k) {
                    l.released = true;
                }
            }
            Effect::CompareFailed {
                key,
                kind: crate::scripts::ScriptKind::CompareAndDelete,
            } => {
                let Some(&k) = self.lock_keys.get(key.as_slice()) else {
                    return;
                };
                let Some((h, kk)) = self.own(client, conn) else {
                    return;
                };
                if kk != k || self.ended.contains(&h) {
                    return;
                }
                if let Some((_, l)) = self.live_grant(key, now).filter(|_| self.quorum > 1) {
                    if l.handle == h && !self.holding(k, client, &l.value.clone(), now).0.is_empty()
                    {
                        // Another server still holds the grant's value: the release goes on.
                        return;
                    }
                }
                self.ended.insert(h);
                let op = self.new_op();
                let inv = Self::op(now, client, op, Phase::Invoke, OpF::Release, k, Some(h));
                self.push_event(inv);
                let mut fail = Self::op(now, client, op, Phase::Fail, OpF::Release, k, Some(h));
                if let EventKind::Op { error, .. } = &mut fail.kind {
                    *error = Some("the lock key holds another value (or none)".into());
                }
                self.push_event(fail);
            }
            Effect::CompareFailed { .. } => {}
            Effect::Expiry { key, value, until } => {
                let Some(&k) = self.lock_keys.get(key.as_slice()) else {
                    return;
                };
                if let Some(c) = self.copies.get_mut(&(k, server)) {
                    if c.client == client && &c.value == value {
                        c.until = Some(*until);
                    }
                }
                let Some((k, live)) = self.live_grant(key, now) else {
                    return;
                };
                if live.client != client || &live.value != value {
                    return;
                }
                let (handle, before) = (live.handle, live.until);
                let (_, after) = self.holding(k, client, value, now);
                if after == before {
                    return;
                }
                let op = self.new_op();
                let inv = Self::op(now, client, op, Phase::Invoke, OpF::Extend, k, Some(handle));
                self.push_event(inv);
                let mut ok = Self::op(now, client, op, Phase::Ok, OpF::Extend, k, Some(handle));
                if let EventKind::Op { deadline, .. } = &mut ok.kind {
                    *deadline = Self::deadline(after);
                }
                self.push_event(ok);
                if let Some(l) = self.live.get_mut(&k) {
                    l.until = after;
                }
            }
            Effect::Wrote {
                key,
                value,
                expires: Some(until),
            } if self.lock_keys.contains_key(key.as_slice()) => {
                // `SET key owner XX PX ttl` by the holder, with its own value: an extension.
                self.effect(
                    now,
                    server,
                    client,
                    conn,
                    &Effect::Expiry {
                        key: key.clone(),
                        value: value.clone(),
                        until: *until,
                    },
                );
            }
            Effect::Wrote { key, .. } => {
                if !key.starts_with(&self.resource_prefix) {
                    return;
                }
                let Some((handle, k)) = self.writes_under(client, conn) else {
                    // A write by a client that never held a lock: no hold to judge it by.
                    return;
                };
                self.writes += 1;
                let op = self.new_op();
                let mut inv = Self::op(now, client, op, Phase::Invoke, OpF::Write, k, Some(handle));
                if let EventKind::Op { value, .. } = &mut inv.kind {
                    *value = Some(self.writes);
                }
                self.push_event(inv);
                self.push(
                    now,
                    self.resource,
                    EventKind::WriteAccepted {
                        key: k,
                        handle,
                        token: None,
                    },
                );
                let ok = Self::op(now, client, op, Phase::Ok, OpF::Write, k, Some(handle));
                self.push_event(ok);
            }
        }
    }

    /// Records an injected fault on `node` (a crash ends the node's holds in the checkers).
    pub fn fault(&mut self, now: Nanos, node: NodeId, fault: Fault) {
        self.push(now, node, EventKind::Fault { fault });
    }

    /// Records the end of a fault with a duration.
    pub fn fault_end(&mut self, now: Nanos, node: NodeId, what: String) {
        self.push(now, node, EventKind::FaultEnd { what });
    }

    /// Server `server` lost its memory (a crash without persistence): its copies are gone.
    /// A grant stays what its holder believes until its deadline; with one server nothing
    /// holds it any more.
    pub fn server_lost_keys(&mut self, server: u32) {
        self.copies.retain(|(_, s), _| *s != server);
        if self.servers == 1 {
            self.live.clear();
        }
    }

    /// The history, ended at true time `end`.
    pub fn finish(&mut self, end: Nanos) -> History {
        History {
            events: std::mem::take(&mut self.events),
            end,
            messages_sent: 0,
            messages_dropped: 0,
            messages: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripts::Scripts;
    use crate::store::{Session, Store};

    /// Runs `cmd` from client `c` on connection `conn` at `ms` and records it.
    fn step(st: &mut Store, rec: &mut Recorder, ms: u64, c: NodeId, conn: u64, cmd: &[&str]) {
        let args: Vec<Vec<u8>> = cmd.iter().map(|s| s.as_bytes().to_vec()).collect();
        let mut s = Session { proto: 2, id: 1 };
        let now = ms * 1_000_000;
        let (_, effects) = st.exec(now, &mut s, &Scripts::default(), &args);
        rec.effects(now, 0, c, conn, &effects);
    }

    fn ops(h: &History, f: OpF, phase: Phase) -> Vec<(Nanos, NodeId, Option<Nanos>)> {
        h.events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Op {
                    f: ff,
                    phase: p,
                    deadline,
                    ..
                } if *ff == f && *p == phase => Some((e.time, e.node, deadline.map(|d| d.at))),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn grants_extensions_releases_and_writes() {
        let (mut st, mut rec) = (Store::default(), Recorder::new(1, 3, b"res:"));
        step(
            &mut st,
            &mut rec,
            0,
            1,
            1,
            &["SET", "L", "a", "NX", "PX", "100"],
        );
        // The holder re-SETs its own value with a new TTL: an extension.
        step(
            &mut st,
            &mut rec,
            50,
            1,
            1,
            &["SET", "L", "a", "XX", "PX", "100"],
        );
        step(&mut st, &mut rec, 60, 1, 1, &["SET", "res:x", "1"]);
        step(
            &mut st,
            &mut rec,
            70,
            1,
            1,
            &["EVAL", crate::scripts::UNLOCK, "1", "L", "a"],
        );
        // A second unlock finds nothing: the grant's end is recorded once only.
        step(
            &mut st,
            &mut rec,
            80,
            1,
            1,
            &["EVAL", crate::scripts::UNLOCK, "1", "L", "a"],
        );
        let h = rec.finish(1_000_000_000);
        assert_eq!(
            ops(&h, OpF::Acquire, Phase::Ok),
            vec![(0, 1, Some(100_000_000))]
        );
        assert_eq!(
            ops(&h, OpF::Extend, Phase::Ok),
            vec![(50_000_000, 1, Some(150_000_000))]
        );
        assert_eq!(ops(&h, OpF::Write, Phase::Ok).len(), 1);
        assert_eq!(ops(&h, OpF::Release, Phase::Ok).len(), 1);
        assert!(ops(&h, OpF::Release, Phase::Fail).is_empty());
    }

    #[test]
    fn deleting_another_clients_lock_is_freed_and_judged_s4() {
        let (mut st, mut rec) = (Store::default(), Recorder::new(1, 3, b"res:"));
        step(
            &mut st,
            &mut rec,
            0,
            1,
            1,
            &["SET", "L", "a", "NX", "PX", "100"],
        );
        step(
            &mut st,
            &mut rec,
            150,
            2,
            2,
            &["SET", "L", "b", "NX", "PX", "100"],
        );
        // c1's late unlock by plain DEL deletes c2's lock.
        step(&mut st, &mut rec, 160, 1, 1, &["DEL", "L"]);
        let h = rec.finish(1_000_000_000);
        let v = locksim_check::check_all(&h, &Default::default());
        assert!(
            v.violations
                .iter()
                .any(|x| x.kind == locksim_core::Property::S4),
            "{v:?}"
        );
    }

    #[test]
    fn a_late_write_belongs_to_its_own_connections_grant() {
        let (mut st, mut rec) = (Store::default(), Recorder::new(1, 3, b"res:"));
        step(
            &mut st,
            &mut rec,
            0,
            1,
            1,
            &["SET", "L", "a", "NX", "PX", "100"],
        );
        step(
            &mut st,
            &mut rec,
            200,
            1,
            2,
            &["SET", "L", "b", "NX", "PX", "100"],
        );
        // A write from connection 1, delivered late, is under the first grant (handle 1).
        step(&mut st, &mut rec, 210, 1, 1, &["SET", "res:x", "1"]);
        let h = rec.finish(1_000_000_000);
        let handles: Vec<u64> = h
            .events
            .iter()
            .filter_map(|e| match e.kind {
                EventKind::WriteAccepted { handle, .. } => Some(handle),
                _ => None,
            })
            .collect();
        assert_eq!(handles, vec![1]);
    }

    /// Runs `cmd` from client `c` on server `srv` (its own store) and records it.
    fn on(stores: &mut [Store], rec: &mut Recorder, ms: u64, srv: u32, c: NodeId, cmd: &[&str]) {
        let args: Vec<Vec<u8>> = cmd.iter().map(|s| s.as_bytes().to_vec()).collect();
        let mut s = Session { proto: 2, id: 1 };
        let now = ms * 1_000_000;
        let (_, effects) = stores[srv as usize].exec(now, &mut s, &Scripts::default(), &args);
        // One connection per (client, server), numbered apart.
        rec.effects(now, srv, c, u64::from(c) * 100 + u64::from(srv), &effects);
    }

    fn grants(h: &History) -> Vec<(Nanos, NodeId)> {
        h.events
            .iter()
            .filter_map(|e| match e.kind {
                EventKind::Grant { .. } => Some((e.time, e.node)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn with_three_servers_a_majority_is_the_grant_and_its_deadline() {
        let mut st = vec![Store::default(), Store::default(), Store::default()];
        let mut rec = Recorder::new(3, 5, b"res:");
        let set = ["SET", "L", "a", "NX", "PX", "100"];
        on(&mut st, &mut rec, 0, 0, 3, &set);
        assert!(ops(&rec.finish(0), OpF::Acquire, Phase::Ok).is_empty());
        let mut rec = Recorder::new(3, 5, b"res:");
        let mut st2 = vec![Store::default(), Store::default(), Store::default()];
        on(&mut st2, &mut rec, 0, 0, 3, &set);
        on(&mut st2, &mut rec, 10, 1, 3, &set);
        // The third copy adds nothing: the grant was made at the second.
        on(&mut st2, &mut rec, 20, 2, 3, &set);
        // The grant lasts while a majority holds: until the second-latest deadline (110 ms).
        // An extension on one server moves nothing; on a second it does.
        on(&mut st2, &mut rec, 50, 0, 3, &["PEXPIRE", "L", "100"]);
        on(&mut st2, &mut rec, 60, 1, 3, &["PEXPIRE", "L", "100"]);
        let h = rec.finish(1_000_000_000);
        assert_eq!(
            ops(&h, OpF::Acquire, Phase::Ok),
            vec![(10_000_000, 3, Some(100_000_000))]
        );
        assert_eq!(grants(&h), vec![(10_000_000, 0), (10_000_000, 1)]);
        assert_eq!(
            ops(&h, OpF::Extend, Phase::Ok),
            vec![
                (50_000_000, 3, Some(120_000_000)),
                (60_000_000, 3, Some(150_000_000))
            ]
        );
        let _ = st;
    }

    #[test]
    fn a_restarted_server_lets_a_second_majority_form_s1() {
        let mut st = vec![Store::default(), Store::default(), Store::default()];
        let mut rec = Recorder::new(3, 5, b"res:");
        // c1 (node 3) gets n1 and n2; n3 was out of its reach.
        on(
            &mut st,
            &mut rec,
            0,
            0,
            3,
            &["SET", "L", "a", "NX", "PX", "1000"],
        );
        on(
            &mut st,
            &mut rec,
            1,
            1,
            3,
            &["SET", "L", "a", "NX", "PX", "1000"],
        );
        // n1 restarts empty; c2 (node 4) gets n1 and n3 while c1's grant runs.
        st[0] = Store::default();
        rec.server_lost_keys(0);
        for srv in [0, 1, 2] {
            on(
                &mut st,
                &mut rec,
                100,
                srv,
                4,
                &["SET", "L", "b", "NX", "PX", "1000"],
            );
        }
        let h = rec.finish(2_000_000_000);
        assert_eq!(ops(&h, OpF::Acquire, Phase::Ok).len(), 2);
        let cluster = locksim_core::Cluster {
            servers: 3,
            clients: 2,
        };
        let v = locksim_check::check_all(
            &h,
            &locksim_check::CheckOptions {
                cluster: Some(&cluster),
                ..Default::default()
            },
        );
        assert!(
            v.violations
                .iter()
                .any(|x| x.kind == locksim_core::Property::S1),
            "{v:?}"
        );
    }

    #[test]
    fn another_clients_delete_frees_the_lock_only_when_the_majority_is_gone() {
        let mut st = vec![Store::default(), Store::default(), Store::default()];
        let mut rec = Recorder::new(3, 5, b"res:");
        for srv in [0, 1, 2] {
            on(
                &mut st,
                &mut rec,
                0,
                srv,
                3,
                &["SET", "L", "a", "NX", "PX", "1000"],
            );
        }
        on(&mut st, &mut rec, 10, 0, 4, &["DEL", "L"]);
        let freed = |h: &History| {
            h.events
                .iter()
                .filter(|e| matches!(e.kind, EventKind::Freed { .. }))
                .count()
        };
        on(&mut st, &mut rec, 20, 1, 4, &["DEL", "L"]);
        let h = rec.finish(2_000_000_000);
        assert_eq!(freed(&h), 1);
    }

    #[test]
    fn a_write_on_a_connection_whose_grant_was_released_is_under_the_latest_grant() {
        let (mut st, mut rec) = (Store::default(), Recorder::new(1, 3, b"res:"));
        // A pool: grant r1 and its release on connection 1, grant r2 on connection 2, then a
        // write on connection 1 while r2 is held.
        step(
            &mut st,
            &mut rec,
            0,
            1,
            1,
            &["SET", "L", "r1", "NX", "PX", "1000"],
        );
        step(
            &mut st,
            &mut rec,
            10,
            1,
            1,
            &["EVAL", crate::scripts::UNLOCK, "1", "L", "r1"],
        );
        step(
            &mut st,
            &mut rec,
            20,
            1,
            2,
            &["SET", "L", "r2", "NX", "PX", "1000"],
        );
        step(&mut st, &mut rec, 30, 1, 1, &["SET", "res:x", "1"]);
        step(
            &mut st,
            &mut rec,
            40,
            1,
            2,
            &["EVAL", crate::scripts::UNLOCK, "1", "L", "r2"],
        );
        let h = rec.finish(1_000_000_000);
        let handles: Vec<u64> = h
            .events
            .iter()
            .filter_map(|e| match e.kind {
                EventKind::WriteAccepted { handle, .. } => Some(handle),
                _ => None,
            })
            .collect();
        assert_eq!(handles, vec![2]);
        assert!(locksim_check::check_all(&h, &Default::default()).is_safe());
    }
}
