//! The `zookeeper` client: a session on one server at a time, and Curator's
//! `InterProcessMutex` recipe on top (protected-mode create of an ephemeral sequential node,
//! list the children, the lowest holds, the others watch their predecessor).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use locksim_core::{Nanos, NodeId};
use locksim_sim::{Grant, LockClient, NodeCtx, Outcome, Validity};
use rand::Rng;

use super::server::{Applied, Req, Resp, Txn};
use super::{Protected, Reconnect, Zookeeper};
use crate::lockserver::valid_until;

struct Inner {
    ctx: NodeCtx,
    cfg: Zookeeper,
    /// The server this client is connected to.
    server: Cell<NodeId>,
    /// The current session, if any.
    session: Cell<Option<u64>>,
    /// Last time (client clock) a server answered anything: Curator declares the
    /// connection LOST, and starts a new session, after a session timeout without one.
    heard: Cell<i64>,
    /// A lock is held: heartbeats pause (a holder renews through `extend`, which the
    /// history records, so the lease contract S3 checks stays exact).
    holding: Cell<bool>,
    /// A request got no answer since the last revalidation.
    stale: Cell<bool>,
    /// The session timeout this client negotiates: the lease length it asks for, ns.
    timeout: Cell<Nanos>,
    pinger: RefCell<Option<madsim::task::JoinHandle<()>>>,
}

/// One client process's library.
pub(super) struct Client {
    inner: Rc<Inner>,
}

impl Client {
    pub(super) fn new(ctx: NodeCtx, cfg: Zookeeper) -> Client {
        let first = ctx.rng().gen_range(0..cfg.servers);
        let heard = ctx.now(cfg.client_clock);
        let cfg_ttl = cfg.session_timeout;
        Client {
            inner: Rc::new(Inner {
                ctx,
                cfg,
                server: Cell::new(first),
                session: Cell::new(None),
                heard: Cell::new(heard),
                holding: Cell::new(false),
                stale: Cell::new(false),
                timeout: Cell::new(cfg_ttl),
                pinger: RefCell::new(None),
            }),
        }
    }
}

/// Why a request got no usable answer.
enum Lost {
    /// No answer (connection loss): it may have taken effect.
    Connection,
    /// The session is gone.
    Expired,
}

impl Inner {
    fn now(&self) -> i64 {
        self.ctx.now(self.cfg.client_clock)
    }

    /// How long a request waits for an answer ([`Zookeeper::request_timeout`] of this
    /// client's session timeout).
    fn request_timeout(&self) -> Nanos {
        self.cfg.request_timeout(self.timeout.get())
    }

    /// One request to the connected server; on connection loss the client reconnects (to the
    /// same server or another, per `reconnect`). After a connection loss, or half a session
    /// timeout without an answer, the session is first revalidated with the leader (what a
    /// ZooKeeper client's reconnect does).
    async fn call(&self, req: Req, timeout: Nanos) -> Result<Resp, Lost> {
        let session = match req {
            Req::Write { session, .. }
            | Req::Children { session, .. }
            | Req::WatchGone { session, .. }
            | Req::Sync { session }
            | Req::Ping { session }
            | Req::Revalidate { session } => session,
        };
        let quiet = self.now() - self.heard.get() > (self.timeout.get() / 2) as i64;
        let create = matches!(
            req,
            Req::Write {
                txn: Txn::CreateSession { .. },
                ..
            }
        );
        if (self.stale.get() || quiet) && !create && !matches!(req, Req::Revalidate { .. }) {
            match self
                .once(Req::Revalidate { session }, self.request_timeout())
                .await
            {
                Ok(_) => self.stale.set(false),
                Err(e) => return Err(e),
            }
        }
        self.once(req, timeout).await
    }

    async fn once(&self, req: Req, timeout: Nanos) -> Result<Resp, Lost> {
        match self
            .ctx
            .call::<Req, Resp>(self.server.get(), req, timeout)
            .await
        {
            Ok(Resp::SessionExpired) => {
                self.heard.set(self.now());
                self.session.set(None);
                Err(Lost::Expired)
            }
            Ok(r) => {
                self.heard.set(self.now());
                Ok(r)
            }
            Err(_) => {
                self.stale.set(true);
                if self.cfg.reconnect == Reconnect::Any && self.cfg.servers > 1 {
                    let now = self.server.get();
                    let step = self.ctx.rng().gen_range(1..self.cfg.servers);
                    self.server.set((now + step) % self.cfg.servers);
                }
                if self.now() - self.heard.get() >= self.timeout.get() as i64 {
                    // Curator: the connection is LOST; the old session is given up (the
                    // servers expire it on their own) and a new one will be made.
                    self.session.set(None);
                }
                Err(Lost::Connection)
            }
        }
    }

    /// The session, or a new one (with its heartbeat task).
    async fn session(self: &Rc<Self>) -> Result<u64, Lost> {
        if let Some(s) = self.session.get() {
            return Ok(s);
        }
        let r = self
            .call(
                Req::Write {
                    session: 0,
                    txn: Txn::CreateSession {
                        timeout: self.timeout.get(),
                    },
                },
                self.request_timeout(),
            )
            .await?;
        let Resp::Applied(Applied::Session(s)) = r else {
            return Err(Lost::Connection);
        };
        self.session.set(Some(s));
        if let Some(h) = self.pinger.borrow_mut().take() {
            h.abort();
        }
        let me = self.clone();
        let h = madsim::task::spawn_local(async move { me.heartbeat(s).await });
        *self.pinger.borrow_mut() = Some(h);
        Ok(s)
    }

    /// Pings every third of the session timeout while no lock is held.
    async fn heartbeat(self: Rc<Self>, s: u64) {
        loop {
            self.ctx.sleep((self.timeout.get() / 3).max(1)).await;
            if self.session.get() != Some(s) {
                return;
            }
            if !self.holding.get() {
                let _ = self
                    .call(Req::Ping { session: s }, self.request_timeout())
                    .await;
            }
        }
    }

    /// Lists lock `key`'s children (after a `sync` when configured).
    async fn children(
        &self,
        session: u64,
        key: u32,
        mine: Option<u64>,
    ) -> Result<Vec<(u64, super::server::Znode)>, Lost> {
        if self.cfg.sync_before_read {
            self.call(Req::Sync { session }, self.request_timeout())
                .await?;
        }
        match self
            .call(Req::Children { session, key, mine }, self.request_timeout())
            .await?
        {
            Resp::Children(c) => Ok(c),
            _ => Err(Lost::Connection),
        }
    }

    /// Curator's protected create: create the node; after a connection loss, look for a node
    /// with this attempt's GUID (and, in `guid+session` mode, owned by the current session)
    /// before creating again.
    async fn create(
        self: &Rc<Self>,
        key: u32,
        guid: u64,
        give_up: u64,
    ) -> Result<(u64, u64), Outcome<Grant>> {
        let mut lost_once = false;
        loop {
            if self.ctx.mono_now() >= give_up {
                if lost_once {
                    // A create that got no answer may have made a node nobody will hold.
                    let me = self.clone();
                    madsim::task::spawn_local(async move { me.delete_protected(key, guid).await });
                }
                return Err(Outcome::Unknown("lock node create: retries used up".into()));
            }
            let session = match self.session().await {
                Ok(s) => s,
                Err(_) => {
                    self.ctx
                        .sleep(self.cfg.timeout.unwrap_or(locksim_sim::HEALTHY_ANSWER))
                        .await;
                    continue;
                }
            };
            if lost_once {
                match self.children(session, key, None).await {
                    Ok(c) => {
                        let found = c.iter().find(|(_, z)| {
                            z.guid == guid
                                && (self.cfg.protected == Protected::Guid || z.owner == session)
                        });
                        if let Some(&(seq, _)) = found {
                            return Ok((session, seq));
                        }
                    }
                    Err(_) => continue,
                }
            }
            let w = Req::Write {
                session,
                txn: Txn::Create {
                    key,
                    guid,
                    session,
                    client: self.ctx.id(),
                },
            };
            match self.call(w, self.request_timeout()).await {
                Ok(Resp::Applied(Applied::Created(seq))) => return Ok((session, seq)),
                Ok(_) | Err(Lost::Expired) => {}
                Err(Lost::Connection) => lost_once = true,
            }
        }
    }

    /// Curator's `FindAndDeleteProtectedNodeInBackground` (CURATOR-45, CURATOR-79): after a
    /// protected create failed with a connection loss, the node it may have made is looked up
    /// by its GUID and deleted in the background, retried until it is done or the session is
    /// gone (its ephemeral nodes go with it). Without this the node would sit in the queue
    /// for as long as the session lives, held by nobody.
    async fn delete_protected(self: Rc<Self>, key: u32, guid: u64) {
        loop {
            let Some(session) = self.session.get() else {
                return;
            };
            if let Ok(c) = self.children(session, key, None).await {
                let Some(&(seq, _)) = c.iter().find(|(_, z)| z.guid == guid) else {
                    return;
                };
                if self.delete(session, key, seq).await.is_some() {
                    return;
                }
            }
            self.ctx
                .sleep(self.cfg.timeout.unwrap_or(locksim_sim::HEALTHY_ANSWER))
                .await;
        }
    }

    async fn acquire(self: &Rc<Self>, key: u32, ttl: Nanos) -> Outcome<Grant> {
        self.timeout.set(ttl);
        let give_up = self.ctx.mono_now().saturating_add(self.cfg.lock_wait);
        let guid: u64 = self.ctx.rng().gen();
        let (session, seq) = match self.create(key, guid, give_up).await {
            Ok(x) => x,
            Err(o) => return o,
        };
        loop {
            if self.ctx.mono_now() >= give_up {
                // Curator deletes its node when the wait times out.
                if self.delete(session, key, seq).await.is_none() {
                    self.abandon(session);
                }
                return Outcome::Unknown(format!("gave up waiting behind node {seq}"));
            }
            let sent = self.now();
            let children = match self.children(session, key, Some(seq)).await {
                Ok(c) => c,
                Err(Lost::Expired) => return Outcome::Fail("session expired while waiting".into()),
                Err(Lost::Connection) => continue,
            };
            let Some(pos) = children.iter().position(|(s, _)| *s == seq) else {
                return Outcome::Fail("own lock node is gone (session expired)".into());
            };
            if pos == 0 {
                self.holding.set(true);
                return Outcome::Ok(Grant {
                    key,
                    token: self.cfg.fencing.then_some(seq),
                    valid_until: Some(Validity {
                        clock: self.cfg.client_clock,
                        until: valid_until(sent, ttl, self.cfg.drift_ppm),
                    }),
                    private: Rc::new((session, seq)),
                });
            }
            let pred = children[pos - 1].0;
            // Watch the predecessor; ask again after a quarter TTL at most, so the grant's
            // validity counts from a recent request.
            let poll = (ttl / 4).max(1);
            let _ = self
                .call(
                    Req::WatchGone {
                        session,
                        key,
                        seq: pred,
                    },
                    poll,
                )
                .await;
        }
    }

    /// Gives up `session` after a delete that got no answer: no more heartbeats, so the
    /// leader expires it and its nodes go (rather than a node outliving its hold).
    fn abandon(&self, session: u64) {
        if self.session.get() == Some(session) {
            self.session.set(None);
            if let Some(h) = self.pinger.borrow_mut().take() {
                h.abort();
            }
        }
    }

    async fn delete(&self, session: u64, key: u32, seq: u64) -> Option<bool> {
        let w = Req::Write {
            session,
            txn: Txn::Delete { key, seq },
        };
        match self.call(w, self.request_timeout()).await {
            Ok(Resp::Applied(Applied::Deleted(d))) => Some(d),
            _ => None,
        }
    }

    async fn release(&self, grant: &Grant) -> Outcome<()> {
        self.holding.set(false);
        let &(session, seq) = grant
            .private
            .downcast_ref::<(u64, u64)>()
            .expect("a zookeeper grant");
        if grant.valid_until.is_some_and(|v| self.now() >= v.until) {
            // The lease may have ended: do not touch the lock; give the session up so that
            // the node dies with it rather than outliving the hold.
            self.abandon(session);
            return Outcome::Fail("the grant's validity had passed; not releasing".into());
        }
        match self.delete(session, grant.key, seq).await {
            Some(true) => Outcome::Ok(()),
            Some(false) => Outcome::Unknown("lock node already gone".into()),
            None => {
                self.abandon(session);
                Outcome::Unknown("delete got no answer".into())
            }
        }
    }

    async fn extend(&self, grant: &Grant, ttl: Nanos) -> Outcome<Option<Validity>> {
        let &(session, _) = grant
            .private
            .downcast_ref::<(u64, u64)>()
            .expect("a zookeeper grant");
        let start = self.now();
        match self
            .call(Req::Ping { session }, self.request_timeout())
            .await
        {
            Ok(Resp::Pong) => Outcome::Ok(Some(Validity {
                clock: self.cfg.client_clock,
                until: valid_until(start, ttl, self.cfg.drift_ppm),
            })),
            Ok(other) => Outcome::Fail(format!("ping: {other:?}")),
            Err(Lost::Expired) => Outcome::Fail("session expired".into()),
            Err(Lost::Connection) => Outcome::Unknown("ping got no answer".into()),
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
