//! `pg-advisory`: PostgreSQL session advisory locks behind a PgBouncer-style connection pooler.
//!
//! - **The server** (`n1`) keeps advisory locks per *backend* (server connection), as
//!   PostgreSQL's documentation says ("Advisory Locks", explicit-locking.html): a session-level
//!   lock taken by `pg_try_advisory_lock(key)` is held until `pg_advisory_unlock(key)` on the
//!   same session or until the session ends; it is **reentrant** (a session that holds it gets
//!   it again, and must unlock as many times); `pg_advisory_unlock` on a session that does not
//!   hold it returns `false` with a warning. `pg_try_advisory_xact_lock(key)` takes a
//!   transaction-level lock, released at the end of the transaction. Locks live in memory: a
//!   server crash ends every session.
//! - **The pooler** (`n2`, PgBouncer, <https://www.pgbouncer.org/features.html>) owns
//!   `pool_size` backends. With `pool_mode = session` a client keeps one backend from its first
//!   statement until it disconnects (here: until the same client reconnects after a restart),
//!   and the backend is reset (`DISCARD ALL`, which unlocks everything) before reuse. With
//!   `pool_mode = transaction` each statement outside a transaction runs on whichever backend
//!   is idle (the most recently used first, PgBouncer's default LIFO), and a transaction keeps
//!   its backend until `COMMIT`. PgBouncer's feature matrix lists session-level advisory locks
//!   as not working in transaction mode: a lock taken on one backend stays with that backend,
//!   another client's statement on it gets the lock again (reentrancy), an unlock that lands
//!   elsewhere returns `false`, and the backend goes back to the pool still holding the lock,
//!   until `server_lifetime` closes it.
//! - **The client** calls `pg_try_advisory_lock` (or, with `xact = true`, `BEGIN;
//!   pg_try_advisory_xact_lock`, the documented alternative: the lock lives exactly as long as
//!   the transaction, which pins the backend) and releases with `pg_advisory_unlock` (or
//!   `COMMIT`). `check_unlock_result = false` ignores the unlock's `false`, as most callers do.
//!
//! Two remedies against a session the pooler (or the server) ended under its holder — a pooler
//! restart closes its server connections and PostgreSQL releases their session locks, while the
//! holder, which sends nothing while it holds, goes on acting:
//!
//! - **`fencing = true`**: the lock statement also bumps a counter row in the same statement
//!   (`UPDATE lock_tokens SET token = token + 1 WHERE key = $1 AND pg_try_advisory_lock($1)
//!   RETURNING token`; under `xact = true`, inside the same transaction), and the grant carries
//!   the returned value as its fencing token: the resource rejects a write whose token is below
//!   one it has seen. `lock_tokens` is an ordinary table: each bump is committed (written and
//!   fsynced) before the answer, so it survives a server crash, which ends every session and
//!   every advisory lock but does not reset a token. This closes the gap: a write of the old
//!   holder that lands after the new holder's is refused.
//! - **`check_held = true`**: before each write (after its local work) the holder asks
//!   `SELECT granted FROM pg_locks WHERE locktype = 'advisory' AND objid = $key AND pid =
//!   pg_backend_pid()` on whichever backend the pooler gives the statement, and gives the lock
//!   up (a `lost` event, `held check: ...`, no write) when the answer is no or none comes
//!   (error, timeout). Check-then-act: it narrows the window but cannot close it — the session
//!   can end between the answer and the write, and a write already on its way is not recalled;
//!   another client granted meanwhile overlaps the holder (S1) until the holder's next check.
//!   Under `pool_mode = transaction` the query runs on whichever backend is idle: it says no on
//!   one that does not hold the lock and yes on the one that does, whoever took it there, so it
//!   cannot tell the holders apart (`sims/pg-advisory-transaction-pooling.toml` with
//!   `check_held = true` still shows S1 and S2 in 99 of 100 seeds).
//!
//! **No statement timeout** (`timeout = none`, the defaults: libpq's `connect_timeout` 0 waits
//! indefinitely and it has no per-query timeout; PostgreSQL's `statement_timeout`, `lock_timeout`
//! and `idle_in_transaction_session_timeout` are 0, off, in `runtime-config-client`; PgBouncer's
//! `query_timeout` is 0 and `server_lifetime` 3600 s in its `config.md`): a statement whose
//! packets a cut swallows waits until TCP retransmits it after the heal or gives up.
//!
//! The lock does not expire: the client tracks no validity, and S3 judges the service against
//! the non-expiring lock spec (a holder keeps the lock until it releases or its session may
//! have ended). The workload's `ttl` means nothing to the service; the liveness properties use
//! it as their bound.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use locksim_core::history::EventKind;
use locksim_core::{Nanos, NodeId, Workload};
use locksim_sim::{async_trait, Grant, LockAlgorithm, LockClient, NodeCtx, Outcome, Validity};

use crate::knobs::{Knob, Knobs};
use crate::lockserver::call_failed;

/// Knobs of `pg-advisory`.
pub const KNOBS: &[Knob] = &[
    Knob {
        key: "pool_mode",
        default: "session",
        help: "PgBouncer pool mode: session (a client keeps its backend) | transaction (each statement on any idle backend)",
    },
    Knob {
        key: "pool_size",
        default: "4",
        help: "server connections (backends) the pooler keeps (1 to 64)",
    },
    Knob {
        key: "server_lifetime",
        default: "3600s",
        help: "the pooler closes a backend this old when it returns to the pool (its session's locks go with it)",
    },
    Knob {
        key: "check_unlock_result",
        default: "false",
        help: "treat pg_advisory_unlock returning false as a failed release (most callers ignore it)",
    },
    Knob {
        key: "xact",
        default: "false",
        help: "use transaction-level locks: BEGIN; pg_try_advisory_xact_lock ... COMMIT",
    },
    Knob {
        key: "fencing",
        default: "false",
        help: "the lock statement also bumps a lock_tokens row (durable), handed out as the fencing token",
    },
    Knob {
        key: "check_held",
        default: "false",
        help: "before each write ask pg_locks whether this backend still holds the lock; give up if not",
    },
    Knob {
        key: "timeout",
        default: "none",
        help: "per-statement timeout of the client and of the pooler's server query, or none: libpq has none (connect_timeout 0 waits indefinitely), PostgreSQL's statement_timeout and PgBouncer's query_timeout default to 0 (off), so a statement into a black hole waits until TCP gives up or the cut heals",
    },
];

/// A statement a client sends through the pooler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sql {
    /// `SELECT pg_try_advisory_lock(key)`.
    TryLock(u32),
    /// `SELECT pg_advisory_unlock(key)`.
    Unlock(u32),
    /// `BEGIN; SELECT pg_try_advisory_xact_lock(key)`: opens a transaction.
    XactTryLock(u32),
    /// `COMMIT`: ends the transaction (and its transaction-level locks).
    Commit,
    /// `SELECT granted FROM pg_locks WHERE locktype = 'advisory' AND objid = key AND pid =
    /// pg_backend_pid()`: true when the backend it runs on holds `key` (`check_held`).
    Held(u32),
}

/// A client's statement, with its process incarnation (a new one is a new connection).
#[derive(Debug, Clone, Copy)]
pub struct FromClient {
    /// The client's incarnation.
    pub conn: u32,
    /// The statement.
    pub sql: Sql,
}

/// What the pooler sends the server.
#[derive(Debug, Clone, Copy)]
pub enum ToServer {
    /// Run `sql` on backend `backend` for client `client`.
    Run {
        backend: u64,
        client: NodeId,
        sql: Sql,
    },
    /// End backend `backend`'s session (`DISCARD ALL`, or the connection closing).
    End { backend: u64 },
    /// End every backend whose id is below `below` (the pooler restarted: its connections
    /// closed).
    EndBelow { below: u64 },
}

/// Why the pooler answered with an error instead of a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PoolError {
    /// The statement did not reach the server (no backend free, connection closed).
    NotRun(String),
    /// The server did not answer: the statement may have run.
    Lost(String),
}

/// What a statement returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    /// The boolean the function returned (`COMMIT`: true; `Held`: a row with `granted`).
    pub ok: bool,
    /// Under `fencing = true`, the `lock_tokens` value a granted lock statement set.
    pub token: Option<u64>,
}

/// The statement's result, or an error.
pub type SqlResult = Result<Answer, PoolError>;

/// One advisory lock's holder on the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Held {
    backend: u64,
    session: u32,
    xact: u32,
}

/// The server's advisory-lock table, apart from the network (unit-testable).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LockTable {
    locks: BTreeMap<u32, Held>,
}

impl LockTable {
    /// Runs `sql` on `backend`; `Some(key)` in the answer when it granted `key`.
    pub fn run(&mut self, backend: u64, sql: Sql) -> (bool, Option<u32>) {
        match sql {
            Sql::TryLock(k) | Sql::XactTryLock(k) => {
                let xact = matches!(sql, Sql::XactTryLock(_));
                let h = self.locks.entry(k).or_insert(Held {
                    backend,
                    session: 0,
                    xact: 0,
                });
                if h.backend != backend {
                    return (false, None);
                }
                if xact {
                    h.xact += 1;
                } else {
                    h.session += 1;
                }
                (true, Some(k))
            }
            Sql::Unlock(k) => match self.locks.get_mut(&k) {
                Some(h) if h.backend == backend && h.session > 0 => {
                    h.session -= 1;
                    if h.session + h.xact == 0 {
                        self.locks.remove(&k);
                    }
                    (true, None)
                }
                // "WARNING: you don't own a lock of type ExclusiveLock"
                _ => (false, None),
            },
            Sql::Commit => {
                self.locks.retain(|_, h| {
                    if h.backend == backend {
                        h.xact = 0;
                    }
                    h.session + h.xact > 0
                });
                (true, None)
            }
            Sql::Held(k) => (
                self.locks.get(&k).is_some_and(|h| h.backend == backend),
                None,
            ),
        }
    }

    /// Ends `backend`'s session: every lock it held is released.
    pub fn end(&mut self, backend: u64) {
        self.locks.retain(|_, h| h.backend != backend);
    }

    /// The backend holding `key` and its session and transaction counts.
    pub fn holder(&self, key: u32) -> Option<(u64, u32, u32)> {
        self.locks.get(&key).map(|h| (h.backend, h.session, h.xact))
    }
}

/// Pool mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolMode {
    /// A client keeps one backend for its whole connection.
    Session,
    /// A statement (or a transaction) borrows any idle backend.
    Transaction,
}

#[derive(Debug, Clone, Copy)]
struct Backend {
    id: u64,
    /// Monotonic reading of the pooler when it was opened.
    born: u64,
    /// The client connection it is assigned to (session mode, or an open transaction).
    owner: Option<(NodeId, u32)>,
    /// A statement is running on it.
    busy: bool,
}

/// The pooler's state.
struct Pool {
    backends: Vec<Backend>,
    next_id: u64,
    /// Idle backends, most recently used last.
    idle_order: Vec<u64>,
}

/// The `pg-advisory` algorithm.
#[derive(Debug, Clone)]
pub struct PgAdvisory {
    mode: PoolMode,
    pool_size: u32,
    server_lifetime: Nanos,
    check_unlock_result: bool,
    xact: bool,
    fencing: bool,
    check_held: bool,
    timeout: Nanos,
}

impl PgAdvisory {
    /// Builds `pg-advisory` from its knobs.
    ///
    /// # Errors
    /// A message naming a bad or unknown knob.
    pub fn from_config(config: &BTreeMap<String, String>, _w: &Workload) -> Result<Self, String> {
        let k = Knobs::new("pg-advisory", config, KNOBS)?;
        Ok(PgAdvisory {
            mode: match k.choice("pool_mode", &["session", "transaction"])? {
                "session" => PoolMode::Session,
                _ => PoolMode::Transaction,
            },
            pool_size: k.int("pool_size", 1..=64)?,
            server_lifetime: k.duration("server_lifetime")?,
            check_unlock_result: k.flag("check_unlock_result")?,
            xact: k.flag("xact")?,
            fencing: k.flag("fencing")?,
            check_held: k.flag("check_held")?,
            timeout: k.timeout("timeout")?,
        })
    }

    async fn serve_db(&self, ctx: NodeCtx) {
        // Advisory locks live in memory; the lock_tokens table is on disk.
        let mut table = LockTable::default();
        let mut tokens = ctx
            .disk()
            .read(TOKENS)
            .map(decode_tokens)
            .unwrap_or_default();
        loop {
            let msg = ctx.recv().await;
            let Some(req) = msg.body.downcast_ref::<ToServer>() else {
                continue;
            };
            match *req {
                ToServer::Run {
                    backend,
                    client,
                    sql,
                } => {
                    let (ok, granted) = table.run(backend, sql);
                    let mut token = None;
                    if let Some(key) = granted {
                        if self.fencing {
                            // The same statement's UPDATE ... RETURNING, committed durably.
                            let t = tokens.entry(key).or_insert(0);
                            *t += 1;
                            token = Some(*t);
                            let mut d = ctx.disk();
                            d.write(TOKENS, encode_tokens(&tokens));
                            d.fsync();
                        }
                        ctx.record(EventKind::Grant { key, client, token });
                    }
                    ctx.reply(&msg, SqlResult::Ok(Answer { ok, token })).await;
                }
                ToServer::End { backend } => table.end(backend),
                ToServer::EndBelow { below } => table.locks.retain(|_, h| h.backend >= below),
            }
        }
    }

    /// Picks the backend for `conn`'s statement `sql`, or says why there is none.
    fn pick(
        &self,
        pool: &mut Pool,
        conn: (NodeId, u32),
        sql: Sql,
        now: u64,
    ) -> Result<u64, String> {
        if let Some(b) = pool.backends.iter_mut().find(|b| b.owner == Some(conn)) {
            if b.busy {
                return Err("a statement of this connection is still running".into());
            }
            b.busy = true;
            return Ok(b.id);
        }
        // Open missing backends (after a restart, or after server_lifetime closed some).
        while pool.backends.len() < self.pool_size as usize {
            let id = pool.next_id;
            pool.next_id += 1;
            pool.backends.push(Backend {
                id,
                born: now,
                owner: None,
                busy: false,
            });
            pool.idle_order.insert(0, id);
        }
        let pos = pool.idle_order.iter().rposition(|id| {
            pool.backends
                .iter()
                .any(|b| b.id == *id && b.owner.is_none() && !b.busy)
        });
        let Some(pos) = pos else {
            return Err("no server connection available (pool_size reached)".into());
        };
        let id = pool.idle_order.remove(pos);
        let b = pool
            .backends
            .iter_mut()
            .find(|b| b.id == id)
            .expect("listed");
        b.busy = true;
        if self.mode == PoolMode::Session || matches!(sql, Sql::XactTryLock(_)) {
            b.owner = Some(conn);
        }
        Ok(id)
    }

    /// After a statement on `id`: in transaction mode a finished transaction (or a statement
    /// outside one) frees the backend; an old one is closed. Returns a backend to end, if any.
    fn done(&self, pool: &mut Pool, id: u64, sql: Sql, ok: bool, now: u64) -> Option<u64> {
        let b = pool.backends.iter_mut().find(|b| b.id == id)?;
        b.busy = false;
        let in_xact = matches!(sql, Sql::XactTryLock(_)) && ok;
        // A `Held` query inside an open transaction leaves it open (and one outside any
        // transaction found no owner to clear).
        if self.mode == PoolMode::Transaction && !in_xact && !matches!(sql, Sql::Held(_)) {
            b.owner = None;
        }
        if b.owner.is_some() {
            return None;
        }
        if now.saturating_sub(b.born) >= self.server_lifetime {
            pool.backends.retain(|b| b.id != id);
            return Some(id);
        }
        pool.idle_order.push(id);
        None
    }

    async fn serve_pooler(&self, ctx: NodeCtx) {
        let pool = Rc::new(RefCell::new(Pool {
            backends: Vec::new(),
            // Backend ids are unique across pooler restarts: the incarnation is in the high bits.
            next_id: (ctx.incarnation() as u64) << 32,
            idle_order: Vec::new(),
        }));
        // Connections of the clients' latest incarnations, for session mode.
        let conns: Rc<RefCell<BTreeMap<NodeId, u32>>> = Rc::default();
        loop {
            let msg = ctx.recv().await;
            let Some(&FromClient { conn, sql }) = msg.body.downcast_ref::<FromClient>() else {
                continue;
            };
            let (me, pool, conns) = (self.clone(), pool.clone(), conns.clone());
            let ctx = ctx.clone();
            madsim::task::spawn_local(async move {
                let client = msg.from;
                // A newer connection of the same client: the old one is gone (its host
                // restarted); its session's backend is reset and returned.
                let (closed, stale) = {
                    let mut c = conns.borrow_mut();
                    let last = c.entry(client).or_insert(conn);
                    let old = (conn > *last).then_some(*last);
                    let closed = conn < *last;
                    *last = (*last).max(conn);
                    (closed, old)
                };
                if closed {
                    ctx.reply(
                        &msg,
                        SqlResult::Err(PoolError::NotRun("connection closed".into())),
                    )
                    .await;
                    return;
                }
                if let Some(old) = stale {
                    let now = ctx.mono_now();
                    let ended: Vec<u64> = {
                        let mut p = pool.borrow_mut();
                        let ids: Vec<u64> = p
                            .backends
                            .iter()
                            .filter(|b| b.owner == Some((client, old)))
                            .map(|b| b.id)
                            .collect();
                        for b in p.backends.iter_mut().filter(|b| ids.contains(&b.id)) {
                            b.owner = None;
                        }
                        ids.iter()
                            .filter_map(|&id| me.done(&mut p, id, Sql::Commit, true, now))
                            .chain(ids.iter().copied())
                            .collect()
                    };
                    for backend in ended {
                        ctx.send(0, ToServer::End { backend }).await;
                    }
                }
                let picked = me.pick(&mut pool.borrow_mut(), (client, conn), sql, ctx.mono_now());
                let backend = match picked {
                    Ok(b) => b,
                    Err(e) => {
                        ctx.reply(&msg, SqlResult::Err(PoolError::NotRun(e))).await;
                        return;
                    }
                };
                let run = ToServer::Run {
                    backend,
                    client,
                    sql,
                };
                let r = ctx.call::<ToServer, SqlResult>(0, run, me.timeout).await;
                let ok = matches!(r, Ok(Ok(Answer { ok: true, .. })));
                let closed = me.done(&mut pool.borrow_mut(), backend, sql, ok, ctx.mono_now());
                if let Some(backend) = closed {
                    ctx.send(0, ToServer::End { backend }).await;
                }
                match r {
                    Ok(res) => ctx.reply(&msg, res).await,
                    // PgBouncer closes the client connection when the server's is lost; the
                    // client's own timeout tells it nothing more.
                    Err(e) => {
                        let e = PoolError::Lost(format!("server: {e}"));
                        ctx.reply(&msg, SqlResult::Err(e)).await
                    }
                }
            });
        }
    }
}

/// The disk file of the `lock_tokens` table (`fencing = true`).
const TOKENS: &str = "lock_tokens";

fn encode_tokens(t: &BTreeMap<u32, u64>) -> Vec<u8> {
    let mut out = Vec::with_capacity(t.len() * 12);
    for (k, v) in t {
        out.extend_from_slice(&k.to_le_bytes());
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

fn decode_tokens(b: &[u8]) -> BTreeMap<u32, u64> {
    b.chunks_exact(12)
        .map(|c| {
            let k = u32::from_le_bytes(c[..4].try_into().expect("4 bytes"));
            let v = u64::from_le_bytes(c[4..].try_into().expect("8 bytes"));
            (k, v)
        })
        .collect()
}

struct Client {
    ctx: NodeCtx,
    cfg: PgAdvisory,
}

impl Client {
    async fn sql(&self, sql: Sql) -> Result<SqlResult, locksim_sim::CallError> {
        let req = FromClient {
            conn: self.ctx.incarnation(),
            sql,
        };
        self.ctx
            .call::<FromClient, SqlResult>(1, req, self.cfg.timeout)
            .await
    }
}

/// `fail` when the statement surely did not run, `info` when it may have.
fn pool_error<T>(e: PoolError) -> Outcome<T> {
    match e {
        PoolError::NotRun(e) => Outcome::Fail(format!("pooler: {e}")),
        PoolError::Lost(e) => Outcome::Unknown(format!("pooler: {e}")),
    }
}

#[async_trait(?Send)]
impl LockClient for Client {
    async fn acquire(&self, key: u32, _ttl: Nanos) -> Outcome<Grant> {
        let stmt = if self.cfg.xact {
            Sql::XactTryLock(key)
        } else {
            Sql::TryLock(key)
        };
        match self.sql(stmt).await {
            Ok(Ok(Answer { ok: true, token })) => Outcome::Ok(Grant {
                key,
                token,
                valid_until: None,
                private: Rc::new(()),
            }),
            Ok(Ok(Answer { ok: false, .. })) => {
                if self.cfg.xact {
                    // End the transaction that found the lock taken.
                    let _ = self.sql(Sql::Commit).await;
                }
                Outcome::Fail("pg_try_advisory_lock returned false".into())
            }
            Ok(Err(e)) => pool_error(e),
            Err(e) => call_failed(e),
        }
    }

    async fn release(&self, grant: &Grant) -> Outcome<()> {
        let stmt = if self.cfg.xact {
            Sql::Commit
        } else {
            Sql::Unlock(grant.key)
        };
        match self.sql(stmt).await {
            Ok(Ok(Answer { ok: true, .. })) => Outcome::Ok(()),
            Ok(Ok(Answer { ok: false, .. })) if self.cfg.check_unlock_result => Outcome::Fail(
                "pg_advisory_unlock returned false: this backend does not hold the lock".into(),
            ),
            // The warning is ignored: the caller believes the lock is released.
            Ok(Ok(Answer { ok: false, .. })) => Outcome::Ok(()),
            Ok(Err(e)) => pool_error(e),
            Err(e) => call_failed(e),
        }
    }

    async fn extend(&self, _grant: &Grant, _ttl: Nanos) -> Outcome<Option<Validity>> {
        // Nothing expires: a held advisory lock needs no renewal.
        Outcome::Ok(None)
    }

    async fn check_held(&self, grant: &Grant) -> Option<Result<(), String>> {
        if !self.cfg.check_held {
            return None;
        }
        Some(match self.sql(Sql::Held(grant.key)).await {
            Ok(Ok(Answer { ok: true, .. })) => Ok(()),
            Ok(Ok(Answer { ok: false, .. })) => {
                Err("pg_locks: this backend does not hold the advisory lock".into())
            }
            Ok(Err(PoolError::NotRun(e) | PoolError::Lost(e))) => Err(format!("pooler: {e}")),
            Err(e) => Err(e.to_string()),
        })
    }
}

#[async_trait(?Send)]
impl LockAlgorithm for PgAdvisory {
    fn name(&self) -> &str {
        "pg-advisory"
    }
    fn servers(&self) -> u32 {
        2
    }
    async fn serve(&self, ctx: NodeCtx) {
        if ctx.id() == 0 {
            self.serve_db(ctx).await;
        } else {
            if ctx.incarnation() > 0 {
                // A restarted pooler's server connections closed with it.
                let below = (ctx.incarnation() as u64) << 32;
                ctx.send(0, ToServer::EndBelow { below }).await;
            }
            self.serve_pooler(ctx).await;
        }
    }
    fn lock_expires(&self) -> bool {
        false
    }
    fn liveness(&self) -> locksim_sim::LivenessHints {
        locksim_sim::LivenessHints {
            lock_delay: 0,
            // Through the pooler to the server: two hops, one client timeout.
            attempt: Some(locksim_sim::finite(self.timeout)),
            election: 0,
        }
    }
    fn client(&self, ctx: NodeCtx) -> Rc<dyn LockClient> {
        Rc::new(Client {
            ctx,
            cfg: self.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_locks_are_reentrant_per_backend() {
        let mut t = LockTable::default();
        assert_eq!(t.run(1, Sql::TryLock(0)), (true, Some(0)));
        assert_eq!(t.run(2, Sql::TryLock(0)), (false, None), "another backend");
        assert_eq!(t.run(1, Sql::TryLock(0)), (true, Some(0)), "reentrant");
        assert_eq!(t.holder(0), Some((1, 2, 0)));
        assert!(!t.run(2, Sql::Unlock(0)).0, "not this backend's lock");
        assert!(t.run(1, Sql::Unlock(0)).0);
        assert!(t.holder(0).is_some(), "held once more");
        assert!(t.run(1, Sql::Unlock(0)).0);
        assert_eq!(t.holder(0), None);
    }

    #[test]
    fn xact_locks_end_with_the_transaction_and_sessions_end_everything() {
        let mut t = LockTable::default();
        assert!(t.run(3, Sql::XactTryLock(5)).0);
        assert!(!t.run(4, Sql::XactTryLock(5)).0);
        assert!(t.run(3, Sql::Commit).0);
        assert_eq!(t.holder(5), None);
        t.run(4, Sql::TryLock(5));
        t.run(4, Sql::TryLock(6));
        t.end(4);
        assert_eq!((t.holder(5), t.holder(6)), (None, None));
    }

    fn pg(mode: &str) -> PgAdvisory {
        let cfg = BTreeMap::from([("pool_mode".to_string(), mode.to_string())]);
        PgAdvisory::from_config(&cfg, &Workload::default()).unwrap()
    }

    fn pool() -> Pool {
        Pool {
            backends: Vec::new(),
            next_id: 0,
            idle_order: Vec::new(),
        }
    }

    #[test]
    fn transaction_mode_hands_the_same_idle_backend_to_every_client() {
        let p = pg("transaction");
        let mut pool = pool();
        let b1 = p.pick(&mut pool, (5, 0), Sql::TryLock(0), 0).unwrap();
        p.done(&mut pool, b1, Sql::TryLock(0), true, 0);
        let b2 = p.pick(&mut pool, (6, 0), Sql::TryLock(0), 0).unwrap();
        assert_eq!(b1, b2, "LIFO: the backend just used, with c5's lock on it");
    }

    #[test]
    fn session_mode_keeps_one_backend_per_connection() {
        let p = pg("session");
        let mut pool = pool();
        let b1 = p.pick(&mut pool, (5, 0), Sql::TryLock(0), 0).unwrap();
        p.done(&mut pool, b1, Sql::TryLock(0), true, 0);
        let b2 = p.pick(&mut pool, (6, 0), Sql::TryLock(0), 0).unwrap();
        assert_ne!(b1, b2);
        p.done(&mut pool, b2, Sql::TryLock(0), true, 0);
        assert_eq!(p.pick(&mut pool, (5, 0), Sql::Unlock(0), 0).unwrap(), b1);
    }

    #[test]
    fn an_old_backend_is_closed_when_it_returns_to_the_pool() {
        let mut p = pg("transaction");
        p.server_lifetime = 10;
        let mut pool = pool();
        let b = p.pick(&mut pool, (5, 0), Sql::TryLock(0), 0).unwrap();
        assert_eq!(p.done(&mut pool, b, Sql::TryLock(0), true, 10), Some(b));
        assert_ne!(p.pick(&mut pool, (5, 0), Sql::TryLock(0), 11).unwrap(), b);
    }

    #[test]
    fn pg_locks_says_granted_only_on_the_backend_that_holds_the_lock() {
        let mut t = LockTable::default();
        assert_eq!(t.run(1, Sql::Held(0)), (false, None), "nobody holds it");
        t.run(1, Sql::TryLock(0));
        assert!(t.run(1, Sql::Held(0)).0);
        assert!(!t.run(2, Sql::Held(0)).0, "another backend's lock");
        t.end(1);
        assert!(!t.run(1, Sql::Held(0)).0, "the session ended");
        t.run(3, Sql::XactTryLock(0));
        assert!(
            t.run(3, Sql::Held(0)).0,
            "a transaction-level lock counts too"
        );
    }

    #[test]
    fn a_held_check_inside_a_transaction_keeps_its_backend() {
        let p = pg("transaction");
        let mut pool = pool();
        let b = p.pick(&mut pool, (5, 0), Sql::XactTryLock(0), 0).unwrap();
        p.done(&mut pool, b, Sql::XactTryLock(0), true, 0);
        assert_eq!(p.pick(&mut pool, (5, 0), Sql::Held(0), 0).unwrap(), b);
        p.done(&mut pool, b, Sql::Held(0), true, 0);
        assert_ne!(
            p.pick(&mut pool, (6, 0), Sql::TryLock(0), 0).unwrap(),
            b,
            "still c5's transaction"
        );
        assert_eq!(p.pick(&mut pool, (5, 0), Sql::Commit, 0).unwrap(), b);
    }

    #[test]
    fn the_token_table_survives_encoding() {
        let t = BTreeMap::from([(0, 7), (3, u64::MAX)]);
        assert_eq!(decode_tokens(&encode_tokens(&t)), t);
    }

    #[test]
    fn bad_knobs_are_named() {
        let cfg = |k: &str, v: &str| BTreeMap::from([(k.to_string(), v.to_string())]);
        let w = Workload::default();
        let e = PgAdvisory::from_config(&cfg("pool_mode", "statement"), &w).unwrap_err();
        assert!(
            e.contains("pool_mode") && e.contains("session or transaction"),
            "{e}"
        );
        let e = PgAdvisory::from_config(&cfg("pool_size", "0"), &w).unwrap_err();
        assert!(e.contains("pool_size"), "{e}");
        for knob in ["fencing", "check_held"] {
            let e = PgAdvisory::from_config(&cfg(knob, "maybe"), &w).unwrap_err();
            assert!(e.contains(knob), "{e}");
        }
    }
}
