//! `pg-advisory` on real PostgreSQL behind a real PgBouncer: session advisory locks
//! (`pg_try_advisory_lock`, "Advisory Locks" in PostgreSQL's documentation, explicit locking)
//! taken through the pooler (<https://www.pgbouncer.org/config.html>), as the simulator's model
//! (`crates/algos/src/pgadvisory.rs`) has them:
//!
//! - **the pooler** (`n2`) is PgBouncer with the scenario's `pool_mode` (`session` or
//!   `transaction`), `pool_size` as `default_pool_size`, `server_lifetime`, and PgBouncer's
//!   defaults otherwise (LIFO reuse, `server_reset_query = DISCARD ALL`, no `query_timeout`);
//!   clients connect to it, it connects to the server (`n1`);
//! - **acquire** is `SELECT pg_try_advisory_lock(key)`, with `fencing = true` in the same
//!   statement a bump of a `lock_tokens` row whose value is the grant's token;
//! - **release** is `SELECT pg_advisory_unlock(key)`: its `false` (the statement ran on a
//!   backend that does not hold the lock) is a failed release only with `check_unlock_result`;
//! - **held check** (`check_held = true`): `pg_locks` for this backend before each write.
//!
//! The server's grant records are rows the lock statement itself inserts into
//! `locksim_events` (as for `db-lease`, [`crate::postgres`]); a reentrant grant on a backend
//! that already holds the lock (another client's, through the pooler) is recorded as the
//! grant it is. Transaction-level locks (`xact = true`) are refused for now: their statement's
//! record would roll back with a transaction that never commits.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;
use std::process::{Command, Stdio};

use locksim_core::history::{Event, LocalClock};
use locksim_core::{Cluster, Nanos, NodeId};

use crate::backend::{server_version, Grant, Host, Outcome, ServerHost, ServerSide};
use crate::postgres::{first, wait_postgres, PgConn, PgServers};
use crate::support::Backend;
use crate::{RealError, RealOptions};

/// The pooler's configuration file for a server at `server`, listening on `listen`.
pub fn pgbouncer_ini(
    dir: &Path,
    listen: SocketAddrV4,
    server: SocketAddrV4,
    b: &Backend,
) -> String {
    let mode = if b.pg.transaction {
        "transaction"
    } else {
        "session"
    };
    format!(
        "[databases]\n\
         postgres = host={sip} port={sport} dbname=postgres user=locksim\n\
         [pgbouncer]\n\
         listen_addr = {lip}\n\
         listen_port = {lport}\n\
         unix_socket_dir =\n\
         auth_type = trust\n\
         auth_file = {dir}/userlist.txt\n\
         pool_mode = {mode}\n\
         default_pool_size = {size}\n\
         min_pool_size = 0\n\
         reserve_pool_size = 0\n\
         max_client_conn = 200\n\
         server_lifetime = {life}\n\
         server_login_retry = 0\n\
         logfile = {dir}/pgbouncer.log\n\
         pidfile = {dir}/pgbouncer.pid\n",
        sip = server.ip(),
        sport = server.port(),
        lip = listen.ip(),
        lport = listen.port(),
        dir = dir.display(),
        size = b.pg.pool_size,
        life = (b.pg.server_lifetime / 1_000_000_000).max(1),
    )
}

/// Writes the pooler's files into `dir` and returns its command (in the foreground).
///
/// # Errors
/// The file that could not be written.
pub fn pgbouncer_cmd(
    exe: &str,
    dir: &Path,
    listen: SocketAddrV4,
    server: SocketAddrV4,
    b: &Backend,
    user: Option<(u32, u32)>,
) -> Result<Command, String> {
    let ini = dir.join("pgbouncer.ini");
    std::fs::write(&ini, pgbouncer_ini(dir, listen, server, b))
        .and_then(|_| std::fs::write(dir.join("userlist.txt"), "\"locksim\" \"\"\n"))
        .map_err(|e| format!("{}: {e}", ini.display()))?;
    if let Some((uid, gid)) = user {
        for f in ["pgbouncer.ini", "userlist.txt"] {
            std::os::unix::fs::chown(dir.join(f), Some(uid), Some(gid))
                .map_err(|e| format!("{}: {e}", dir.join(f).display()))?;
        }
    }
    let mut c = Command::new(exe);
    c.arg(&ini);
    if let Some((uid, gid)) = user {
        use std::os::unix::process::CommandExt;
        c.uid(uid).gid(gid);
    }
    c.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    Ok(c)
}

/// The lock statement: tries the advisory lock and, when granted, bumps the key's token
/// (with `fencing`) and records the grant, all in one statement (one transaction, so one
/// backend in either pool mode). Returns one row: the function's boolean and the token.
pub fn lock_sql(key: u32, me: NodeId, fencing: bool) -> String {
    format!(
        "WITH g AS (SELECT pg_try_advisory_lock({key}) AS ok), \
         t AS (INSERT INTO lock_tokens (key, token) SELECT {key}, 1 FROM g WHERE g.ok AND {fencing} \
               ON CONFLICT (key) DO UPDATE SET token = lock_tokens.token + 1 RETURNING token), \
         e AS (INSERT INTO locksim_events (at, kind, name, client, version) \
               SELECT {clock}, 'grant', {key}, {me}, COALESCE((SELECT token FROM t), 0) FROM g WHERE g.ok) \
         SELECT g.ok, (SELECT token FROM t) FROM g",
        clock = crate::postgres::DB_CLOCK
    )
}

/// The held check: 1 when the backend the statement runs on holds `key`.
pub fn held_sql(key: u32) -> String {
    format!(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = {key} \
         AND objsubid = 1 AND pid = pg_backend_pid() AND granted"
    )
}

/// The advisory-lock client of one client process, connected to the pooler.
pub struct AdvisoryLock {
    conn: PgConn,
    backend: Backend,
    node: NodeId,
}

impl AdvisoryLock {
    /// The client of node `node`, whose connection to the pooler `pooler` leaves from `me`.
    ///
    /// # Errors
    /// When its runtime cannot start.
    pub fn new(
        backend: Backend,
        node: NodeId,
        me: Ipv4Addr,
        pooler: SocketAddrV4,
    ) -> Result<Self, String> {
        Ok(AdvisoryLock {
            conn: PgConn::new(backend.timeout, me, pooler)?,
            backend,
            node,
        })
    }

    /// `pg_try_advisory_lock(key)`. The lock does not expire: the deadline is none.
    pub fn acquire(&mut self, key: u32) -> Outcome<Grant> {
        match self
            .conn
            .exec(&lock_sql(key, self.node, self.backend.pg.fencing))
        {
            Ok(rows) if first(&rows) == Some("t") => {
                let token = rows[0]
                    .get(1)
                    .cloned()
                    .flatten()
                    .and_then(|t| t.parse::<u64>().ok());
                Outcome::Ok(Grant {
                    owner: self.node as u64,
                    token: if self.backend.pg.fencing { token } else { None },
                    deadline: (LocalClock::Mono, crate::backend::NO_DEADLINE),
                    etcd: None,
                    row: None,
                    zk: None,
                })
            }
            Ok(_) => Outcome::Fail("pg_try_advisory_lock returned false".into()),
            Err(e) => e.outcome(),
        }
    }

    /// `pg_advisory_unlock(key)`.
    pub fn release(&mut self, key: u32) -> Outcome<()> {
        match self.conn.exec(&format!("SELECT pg_advisory_unlock({key})")) {
            Ok(rows) if first(&rows) == Some("t") => Outcome::Ok(()),
            Ok(_) if self.backend.pg.check_unlock_result => Outcome::Fail(
                "pg_advisory_unlock returned false: this backend does not hold the lock".into(),
            ),
            // The warning is ignored: the caller believes the lock is released.
            Ok(_) => Outcome::Ok(()),
            Err(e) => e.outcome(),
        }
    }

    /// `check_held`: whether the backend this statement runs on holds `key`.
    pub fn check_held(&mut self, key: u32) -> Option<Result<(), String>> {
        if !self.backend.pg.check_held {
            return None;
        }
        Some(match self.conn.exec(&held_sql(key)) {
            Ok(rows) if first(&rows) == Some("1") => Ok(()),
            Ok(_) => Err("pg_locks: this backend does not hold the advisory lock".into()),
            Err(e) => Err(e.text()),
        })
    }
}

/// The schema the lock statement needs beside `db-lease`'s: the fencing counters.
pub const SCHEMA: &str =
    "CREATE TABLE lock_tokens (key integer PRIMARY KEY, token bigint NOT NULL)";

impl crate::backend::Lock for AdvisoryLock {
    fn acquire(&mut self, _host: &dyn Host, key: u32, _owner: u64, _ttl: Nanos) -> Outcome<Grant> {
        AdvisoryLock::acquire(self, key)
    }
    fn release(&mut self, _host: &dyn Host, key: u32, _grant: &Grant) -> Outcome<()> {
        AdvisoryLock::release(self, key)
    }
    fn check_held(&mut self, _host: &dyn Host, key: u32) -> Option<Result<(), String>> {
        AdvisoryLock::check_held(self, key)
    }
}

/// The servers of `pg-advisory`: PostgreSQL (`n1`, as `db-lease`'s) and PgBouncer in front of
/// it (`n2`), both as the server's user.
#[derive(Debug, Clone)]
pub struct AdvisoryServers(pub PgServers);

impl ServerSide for AdvisoryServers {
    /// PostgreSQL's version `behind` PgBouncer's.
    fn version(&self, opts: &RealOptions) -> Result<String, String> {
        crate::postgres::version(&self.0.bin).and_then(|v| {
            server_version(
                &opts.pgbouncer,
                "pg-advisory in real mode needs PgBouncer (Debian: apt-get install pgbouncer)",
            )
            .map(|p| format!("{v} behind {p}"))
        })
    }

    /// PgBouncer dials the server from 127.0.0.1 (it has no source-address setting): its
    /// connections get n2's address. It and the server run as one user, but the server
    /// opens no connections, so only the pooler's are rewritten.
    fn snat(&self, _cluster: &Cluster) -> Vec<(u32, Ipv4Addr)> {
        match self.0.user {
            Some((uid, _)) => vec![(uid, crate::addr::ip(1))],
            None => Vec::new(),
        }
    }

    fn log_files(&self) -> &'static [&'static str] {
        &["postgres.log", "pgbouncer.log"]
    }

    fn prepare(&self, h: &dyn ServerHost) -> Result<(), RealError> {
        self.0.prepare(h)
    }

    /// PgBouncer (`n2`) in front of the server `n1`; the server as `db-lease`'s.
    fn command(&self, h: &dyn ServerHost, n: NodeId) -> Result<Command, RealError> {
        if n != 1 {
            return self.0.command(h, n);
        }
        let dir = h.dir().join(h.name(n));
        pgbouncer_cmd(
            &h.opts().pgbouncer,
            &dir,
            h.servers()[n as usize],
            h.servers()[0],
            &h.backend(),
            self.0.user,
        )
        .map_err(RealError::Setup)
    }

    /// The server with its tables and [`SCHEMA`], then the pooler.
    fn wait_ready(&self, h: &mut dyn ServerHost) -> Result<(), RealError> {
        PgServers::ready_with_schema(h, Some(SCHEMA))?;
        wait_postgres(h, 1)
    }

    fn records_events(&self) -> bool {
        true
    }

    fn events(&self, h: &mut dyn ServerHost) -> Result<Vec<Event>, RealError> {
        self.0.events(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_statement_bumps_the_token_only_when_granted_and_fencing() {
        let s = lock_sql(4, 9, true);
        assert!(s.contains("pg_try_advisory_lock(4)"), "{s}");
        assert!(s.contains("WHERE g.ok AND true"), "{s}");
        assert!(s.contains("'grant', 4, 9,"), "{s}");
        assert!(lock_sql(4, 9, false).contains("WHERE g.ok AND false"));
        assert!(held_sql(4).contains("objid = 4"));
    }
}
