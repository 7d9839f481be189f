//! The `raft-lease` client library: one session lease per client (kept alive in the
//! background), lock by queueing a key under it and waiting for the keys ahead to go, unlock
//! by deleting the key of the granted revision. Requests go to the leader the client last
//! heard of and follow `NotLeader` hints; a timeout moves on to the next server.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use locksim_core::{Nanos, NodeId};
use locksim_sim::{Grant, LockClient, NodeCtx, Outcome, Validity};

use super::{RaftLease, Req, Resp};
use crate::lockserver::valid_until;

enum RpcError {
    /// No server would take the request: it definitely did not happen.
    NoLeader,
    /// No answer in time: it may have happened.
    Timeout,
}

struct Session {
    lease: u64,
    /// Validity deadline as a reading of the client's clock: the send time of the last
    /// acknowledged grant or keep-alive, plus TTL − drift.
    deadline: Cell<i64>,
    dead: Cell<bool>,
    /// A lock of this session is held: keep-alives pause (a holder renews only through
    /// `extend`, which the history records, so the lease-lock contract S3 checks stays exact).
    holding: Cell<bool>,
    keepalive: RefCell<Option<madsim::task::JoinHandle<()>>>,
}

impl Session {
    /// Moves the validity deadline to `until` if that is later.
    fn extend_to(&self, until: i64) {
        self.deadline.set(self.deadline.get().max(until));
    }

    fn end(&self) {
        self.dead.set(true);
        if let Some(h) = self.keepalive.borrow_mut().take() {
            h.abort();
        }
    }
}

struct Inner {
    ctx: NodeCtx,
    cfg: RaftLease,
    leader: Cell<NodeId>,
    session: RefCell<Option<Rc<Session>>>,
    /// Keys `(lock key, lease, revision)` whose release is in doubt and still being retried.
    /// A lock request that finds such a key must not take it as a new grant: the retried
    /// release may delete it at any moment.
    in_doubt: RefCell<std::collections::BTreeSet<(u32, u64, u64)>>,
}

/// One client process's library.
pub(super) struct Client {
    inner: Rc<Inner>,
}

impl Client {
    pub(super) fn new(ctx: NodeCtx, cfg: RaftLease) -> Client {
        Client {
            inner: Rc::new(Inner {
                ctx,
                cfg,
                leader: Cell::new(0),
                session: RefCell::new(None),
                in_doubt: RefCell::new(Default::default()),
            }),
        }
    }
}

impl Inner {
    fn now(&self) -> i64 {
        self.ctx.now(self.cfg.client_clock)
    }

    fn valid_until(&self, start: i64, ttl: Nanos) -> i64 {
        valid_until(start, ttl, self.cfg.drift_ppm)
    }

    /// One keep-alive of `lease`: the answer, and the validity deadline an `Alive` gives
    /// (counted from the send time).
    async fn renew(&self, lease: u64, ttl: Nanos) -> (Result<Resp, RpcError>, i64) {
        let start = self.now();
        let answer = self.rpc(Req::KeepAlive { lease }, self.cfg.timeout).await;
        (answer, self.valid_until(start, ttl))
    }

    async fn rpc(&self, req: Req, timeout: Nanos) -> Result<Resp, RpcError> {
        let servers = self.cfg.servers;
        for _ in 0..2 * servers {
            let to = self.leader.get();
            match self.ctx.call::<Req, Resp>(to, req.clone(), timeout).await {
                Ok(Resp::NotLeader { hint }) => match hint {
                    Some(h) if h != to => self.leader.set(h),
                    _ => {
                        self.leader.set((to + 1) % servers);
                        // Perhaps an election is on: give it a moment.
                        let pause =
                            (self.cfg.server.tick * 2).min(locksim_sim::finite(self.cfg.timeout));
                        self.ctx.sleep(pause).await;
                    }
                },
                // Indeterminate, as a timeout is: the write may still commit.
                Ok(Resp::LeadershipLost) => {
                    self.leader.set((to + 1) % servers);
                    return Err(RpcError::Timeout);
                }
                Ok(r) => return Ok(r),
                // Refused: that server surely did not see it; try the next one, as etcd's
                // client moves to another endpoint.
                Err(e) if !e.maybe_delivered() => self.leader.set((to + 1) % servers),
                Err(_) => {
                    self.leader.set((to + 1) % servers);
                    return Err(RpcError::Timeout);
                }
            }
        }
        Err(RpcError::NoLeader)
    }

    /// The live session, or a new one.
    async fn session(self: &Rc<Self>, ttl: Nanos) -> Result<Rc<Session>, Outcome<Grant>> {
        let current = self.session.borrow().clone();
        if let Some(s) = current {
            let left = s.deadline.get().saturating_sub(self.now());
            if !s.dead.get() && left >= (ttl / 2) as i64 {
                return Ok(s);
            }
            if !s.dead.get() && left > 0 {
                // Little time left (keep-alives pause while a lock is held): renew before
                // queueing, or the lease may run out while this client waits.
                if let (Ok(Resp::Alive), until) = self.renew(s.lease, ttl).await {
                    s.extend_to(until);
                    return Ok(s);
                }
            }
            s.end();
        }
        let start = self.now();
        let lease = match self.rpc(Req::Grant { ttl }, self.cfg.timeout).await {
            Ok(Resp::Granted { lease }) => lease,
            Ok(other) => return Err(Outcome::Fail(format!("lease grant: {other:?}"))),
            Err(RpcError::NoLeader) => return Err(Outcome::Fail("no leader".into())),
            // A lease granted without our knowing expires by itself and holds no lock.
            Err(RpcError::Timeout) => return Err(Outcome::Fail("lease grant timed out".into())),
        };
        let s = Rc::new(Session {
            lease,
            deadline: Cell::new(self.valid_until(start, ttl)),
            dead: Cell::new(false),
            holding: Cell::new(false),
            keepalive: RefCell::new(None),
        });
        let (me, ss) = (self.clone(), s.clone());
        let task = madsim::task::spawn_local(async move { me.keep_alive(ss, ttl).await });
        *s.keepalive.borrow_mut() = Some(task);
        *self.session.borrow_mut() = Some(s.clone());
        Ok(s)
    }

    /// Renews the session every TTL/`keepalive_div` until the lease is gone or its deadline passed.
    async fn keep_alive(self: Rc<Self>, s: Rc<Session>, ttl: Nanos) {
        loop {
            self.ctx.sleep((ttl / self.cfg.keepalive_div).max(1)).await;
            if s.holding.get() {
                continue;
            }
            match self.renew(s.lease, ttl).await {
                (Ok(Resp::Alive), until) => s.extend_to(until),
                (Ok(Resp::LeaseNotFound), _) => {
                    s.dead.set(true);
                    return;
                }
                _ => {}
            }
            if self.now() >= s.deadline.get() {
                s.dead.set(true);
                return;
            }
        }
    }

    /// Gives up a session whose keys may be in an unknown state: stop renewing it and ask for
    /// its revocation; either way its keys go when the lease expires.
    fn abandon(self: &Rc<Self>, s: &Rc<Session>) {
        s.end();
        let me = self.clone();
        let lease = s.lease;
        madsim::task::spawn_local(async move {
            let _ = me.rpc(Req::Revoke { lease }, me.cfg.timeout).await;
        });
    }

    /// The grant of the key created at `rev`, answered to a request sent at `sent` (client
    /// clock): the server renews the lease when it grants the lock, so the grant is valid
    /// until `sent + TTL − drift`.
    fn grant(&self, key: u32, s: &Session, rev: u64, sent: i64, ttl: Nanos) -> Grant {
        let until = self.valid_until(sent, ttl);
        s.extend_to(until);
        s.holding.set(true);
        Grant {
            key,
            token: self.cfg.fencing.then_some(rev),
            valid_until: Some(Validity {
                clock: self.cfg.client_clock,
                until,
            }),
            private: Rc::new((s.lease, rev)),
        }
    }

    async fn acquire(self: &Rc<Self>, key: u32, ttl: Nanos) -> Outcome<Grant> {
        let s = match self.session(ttl).await {
            Ok(s) => s,
            Err(o) => return o,
        };
        let lease = s.lease;
        let mut settled = false;
        let rev = loop {
            // Read before asking: a background retry may settle a release meanwhile, after the
            // server had already answered with that key.
            let doubtful: Vec<u64> = self
                .in_doubt
                .borrow()
                .iter()
                .filter(|d| (d.0, d.1) == (key, lease))
                .map(|d| d.2)
                .collect();
            let sent = self.now();
            let (rev, owner) = match self.rpc(Req::Lock { key, lease }, self.cfg.timeout).await {
                Ok(Resp::Locked { rev, owner }) => (rev, owner),
                other => break Err(other),
            };
            if !settled && doubtful.contains(&rev) {
                // Our own earlier key, whose release is still in doubt: finish that release
                // first, then queue a fresh key.
                settled = true;
                match self.unlock(key, lease, rev).await {
                    Ok(_) => {
                        self.in_doubt.borrow_mut().remove(&(key, lease, rev));
                        continue;
                    }
                    Err(_) => {
                        self.abandon(&s);
                        return Outcome::Fail("an earlier release of this lock is in doubt".into());
                    }
                }
            }
            if owner {
                return Outcome::Ok(self.grant(key, &s, rev, sent, ttl));
            }
            break Ok(rev);
        };
        let rev = match rev {
            Ok(rev) => rev,
            Err(Ok(Resp::Locked { .. })) => unreachable!("handled in the loop"),
            Err(Ok(Resp::LeaseNotFound)) => {
                s.end();
                return Outcome::Fail("session lease expired".into());
            }
            Err(Ok(other)) => return Outcome::Fail(format!("lock: {other:?}")),
            Err(Err(RpcError::NoLeader)) => return Outcome::Fail("no leader".into()),
            Err(Err(RpcError::Timeout)) => {
                self.abandon(&s);
                return Outcome::Unknown("lock request timed out".into());
            }
        };
        let give_up = self.ctx.mono_now().saturating_add(self.cfg.lock_wait);
        loop {
            if self.ctx.mono_now() >= give_up {
                self.abandon(&s);
                return Outcome::Unknown(format!("gave up waiting behind revision {rev}"));
            }
            let wait = Req::Wait { key, lease, rev };
            let sent = self.now();
            // The grant's validity counts from when the answered request was sent, so a waiter
            // asks again every quarter TTL rather than hanging on one long request.
            let poll = (ttl / 4).min(self.cfg.lock_wait / 4).max(1);
            match self.rpc(wait, poll).await {
                Ok(Resp::Acquired { rev }) => {
                    return Outcome::Ok(self.grant(key, &s, rev, sent, ttl))
                }
                Ok(Resp::Gone) => {
                    s.end();
                    return Outcome::Fail("session lease expired while waiting".into());
                }
                Ok(other) => {
                    self.abandon(&s);
                    return Outcome::Unknown(format!("wait: {other:?}"));
                }
                Err(_) => {}
            }
        }
    }

    async fn unlock(&self, key: u32, lease: u64, rev: u64) -> Result<bool, RpcError> {
        match self
            .rpc(Req::Unlock { key, lease, rev }, self.cfg.timeout)
            .await?
        {
            Resp::Unlocked { found } => Ok(found),
            _ => Ok(false),
        }
    }

    async fn release(self: &Rc<Self>, grant: &Grant) -> Outcome<()> {
        let &(lease, rev) = grant
            .private
            .downcast_ref::<(u64, u64)>()
            .expect("a raft-lease grant");
        let session = self.session.borrow().clone().filter(|s| s.lease == lease);
        if let Some(s) = &session {
            s.holding.set(false);
        }
        // The grant's validity as renewed by `extend` (which moves the session's deadline),
        // not only as it was at the acquire.
        let valid_until = grant.valid_until.map(|v| {
            session
                .as_ref()
                .map_or(v.until, |s| s.deadline.get().max(v.until))
        });
        if valid_until.is_some_and(|until| self.now() >= until) {
            // The lease may be gone and the key another holder's by now: do not touch it. The
            // session ends, so the key goes when the lease expires on the leader.
            if let Some(s) = &session {
                s.end();
            }
            return Outcome::Fail("the grant's validity had passed; not releasing".into());
        }
        let why = match self.unlock(grant.key, lease, rev).await {
            Ok(true) => return Outcome::Ok(()),
            // The key is gone: the lease expired, or a duplicate of this very request (or an
            // earlier attempt) deleted it. Either way the lock is free, but "did not happen"
            // would be a lie in the second case.
            Ok(false) => return Outcome::Unknown("key already gone (expired or released)".into()),
            Err(RpcError::NoLeader) => "no leader",
            Err(RpcError::Timeout) => "unlock timed out",
        };
        if !self.cfg.unlock_retry {
            // The bug: nothing more is done, and the session (kept alive again now that no
            // lock is held) keeps the key alive.
            return Outcome::Unknown(why.into());
        }
        // The client keeps its handle and retries in the background with backoff, as lock
        // clients do; if that never gets an answer the session is given up so the key dies with the lease.
        let (me, key) = (self.clone(), grant.key);
        self.in_doubt.borrow_mut().insert((key, lease, rev));
        madsim::task::spawn_local(async move {
            // Exponential backoff, as client libraries' retry policies do.
            for attempt in 0..5 {
                me.ctx
                    .sleep(locksim_sim::finite(me.cfg.timeout) << attempt)
                    .await;
                if !me.in_doubt.borrow().contains(&(key, lease, rev)) {
                    return;
                }
                if me.unlock(key, lease, rev).await.is_ok() {
                    me.in_doubt.borrow_mut().remove(&(key, lease, rev));
                    return;
                }
            }
            let current = me.session.borrow().clone();
            if let Some(s) = current.filter(|s| s.lease == lease) {
                me.abandon(&s);
            }
        });
        Outcome::Unknown(why.into())
    }

    async fn extend(&self, grant: &Grant, ttl: Nanos) -> Outcome<Option<Validity>> {
        let &(lease, _) = grant
            .private
            .downcast_ref::<(u64, u64)>()
            .expect("a raft-lease grant");
        let (mut answer, mut until) = self.renew(lease, ttl).await;
        if let Some(retries) = self.cfg.monitor_retries {
            // Consul's api.Lock: an error is retried `retries` times, then the lock is lost.
            for _ in 0..retries {
                if answer.is_ok() {
                    break;
                }
                (answer, until) = self.renew(lease, ttl).await;
            }
            if answer.is_err() {
                return Outcome::Fail(format!(
                    "renewal failed {} times (monitor_retries = {retries}): lock lost",
                    retries + 1
                ));
            }
        }
        match answer {
            Ok(Resp::Alive) => {
                if let Some(s) = self.session.borrow().as_ref().filter(|s| s.lease == lease) {
                    s.extend_to(until);
                }
                Outcome::Ok(Some(Validity {
                    clock: self.cfg.client_clock,
                    until,
                }))
            }
            Ok(Resp::LeaseNotFound) => Outcome::Fail("lease expired".into()),
            Ok(other) => Outcome::Fail(format!("keep-alive: {other:?}")),
            Err(RpcError::NoLeader) => Outcome::Unknown("no leader".into()),
            Err(RpcError::Timeout) => Outcome::Unknown("keep-alive timed out".into()),
        }
    }
}

#[locksim_sim::async_trait(?Send)]
impl LockClient for Client {
    async fn acquire(&self, key: u32, ttl: Nanos) -> Outcome<Grant> {
        self.inner.acquire(key, ttl).await
    }
    async fn release(&self, grant: &Grant) -> Outcome<()> {
        self.inner.release(grant).await
    }
    async fn extend(&self, grant: &Grant, ttl: Nanos) -> Outcome<Option<Validity>> {
        self.inner.extend(grant, ttl).await
    }
}
