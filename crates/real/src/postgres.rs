//! `db-lease` on a real PostgreSQL server: the lock is a row of a `shedlock` table, taken and
//! released as ShedLock (<https://github.com/lukas-krecan/ShedLock>, README "JdbcTemplate")
//! does, by the simulator's model's rules (`crates/algos/src/dblease.rs`):
//!
//! - **acquire**: insert the row, or take it when `lock_until <= :now`, for `lock_at_most`
//!   (the workload's `ttl`): one upsert, `INSERT … ON CONFLICT (name) DO UPDATE … WHERE
//!   shedlock.lock_until <= :now`, with the effect of ShedLock's insert-then-update; a row
//!   returned is a grant, its `version` column (bumped by each acquire) the fencing token with
//!   `fencing = true`;
//! - **release**: `UPDATE … SET lock_until = GREATEST(:now, locked_at + lock_at_least) WHERE
//!   name = :name AND locked_by = :me` (by host name, as ShedLock unlocks);
//! - **held check** (`check_held = true`): `SELECT … WHERE locked_by = :me AND lock_until >
//!   :now` before each write;
//! - **whose clock**: with `time_source = client` `:now` is the client's virtual wall clock in
//!   ns, written into the statement; with `time_source = db` it is the database's
//!   `current_timestamp` in ns since the epoch (`usingDbTime()`).
//!
//! The service's own records (a `grant` when an acquire takes the row, a `freed` when a release
//! ends a live row, with the row's version and holder, for S3 and S4) are rows the *same
//! statement* inserts into a `locksim_events` table (a data-modifying `WITH`), dated by the
//! database's `clock_timestamp()`: they exist exactly when the lock statement committed,
//! whether or not its client was still there to read the answer (a statement retransmitted by
//! TCP after its client gave up commits and is recorded like any other). The harness reads
//! them after the run ([`service_events`]; [`PgServers`] starts the server and reads them).
//!
//! The client speaks PostgreSQL's protocol through `tokio-postgres`, over a socket bound to the
//! node's own loopback address (so nftables cuts it), one simple-query round trip per
//! statement, with the model's outcome rules: a connection that cannot be opened sent nothing
//! (`fail`); an error the server returns rolled the statement back (`fail`); a timeout or a
//! broken connection after the statement left may have taken effect (`info`), and the
//! connection is dropped. `timeout = none` (the model's default, as pgjdbc and PostgreSQL
//! have no statement timeout) waits as long as TCP does.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use locksim_core::history::{Event, EventKind, LocalClock};
use locksim_core::{Nanos, NodeId};
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

use crate::backend::{Grant, Host, Outcome, ServerHost, ServerSide};
use crate::support::{Backend, NO_TIMEOUT};
use crate::{RealError, RealOptions};

/// The database role and database the harness creates and every client uses.
const USER: &str = "locksim";
const DBNAME: &str = "postgres";

/// The tables of a run: the lock rows, and the service's records.
const SCHEMA: &str = "CREATE TABLE shedlock (name integer PRIMARY KEY, lock_until bigint NOT NULL, \
     locked_at bigint NOT NULL, locked_by integer NOT NULL, version bigint NOT NULL); \
     CREATE TABLE locksim_events (seq bigserial PRIMARY KEY, at bigint NOT NULL, kind text NOT NULL, \
     name integer NOT NULL, client integer NOT NULL, version bigint NOT NULL, released bigint, \
     holder integer)";

/// The database's wall clock at the statement's start, ns since the epoch (`usingDbTime()`).
const DB_NOW: &str = "(extract(epoch from current_timestamp) * 1000000000)::bigint";

/// The database's wall clock now, ns since the epoch: the date of a service record.
pub(crate) const DB_CLOCK: &str = "(extract(epoch from clock_timestamp()) * 1000000000)::bigint";

/// Where PostgreSQL's programs are: `postgres` and `initdb` side by side.
#[derive(Debug, Clone)]
pub struct PgBin {
    /// The server.
    pub postgres: PathBuf,
    /// The cluster initialiser.
    pub initdb: PathBuf,
}

/// Finds PostgreSQL: `explicit` (the `postgres` executable, `initdb` beside it), else the
/// newest Debian installation (`/usr/lib/postgresql/N/bin`), else `postgres` on `PATH`
/// (resolved through symbolic links, so Debian's `/usr/local/bin/postgres` finds its `initdb`).
///
/// # Errors
/// When no `postgres` with an `initdb` beside it is found: the message says how to install it.
pub fn find(explicit: Option<&str>) -> Result<PgBin, String> {
    let hint = "db-lease in real mode needs PostgreSQL's server (Debian: apt-get install \
                postgresql; or --postgres PATH/TO/postgres)";
    let beside = |postgres: PathBuf| -> Option<PgBin> {
        let real = std::fs::canonicalize(&postgres).ok()?;
        let initdb = real.parent()?.join("initdb");
        initdb.is_file().then_some(PgBin {
            postgres: real,
            initdb,
        })
    };
    if let Some(p) = explicit {
        return beside(PathBuf::from(p)).ok_or_else(|| {
            format!("--postgres {p}: no postgres executable with an initdb beside it; {hint}")
        });
    }
    let mut debian: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_string_lossy().parse::<u32>().ok()?;
            Some((v, e.path().join("bin").join("postgres")))
        })
        .collect();
    debian.sort();
    if let Some(bin) = debian.into_iter().rev().find_map(|(_, p)| beside(p)) {
        return Ok(bin);
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .find_map(|d| beside(d.join("postgres")))
        .ok_or_else(|| hint.to_string())
}

/// `postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)`.
///
/// # Errors
/// When it cannot be run.
pub fn version(bin: &PgBin) -> Result<String, String> {
    let out = Command::new(&bin.postgres)
        .arg("--version")
        .output()
        .map_err(|e| format!("cannot run {} ({e})", bin.postgres.display()))?;
    let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !v.starts_with("postgres (PostgreSQL)") {
        return Err(format!(
            "{} is not PostgreSQL's server: its --version says {v:?}, not \"postgres \
             (PostgreSQL) ...\"",
            bin.postgres.display()
        ));
    }
    Ok(v)
}

/// The user PostgreSQL runs as: itself refuses root, so a harness running as root (for
/// nftables) starts it as the `postgres` user (Debian's package makes it) or, without one, as
/// `nobody`; `None`: as the harness's own user.
pub fn server_user() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    for name in [c"postgres", c"nobody"] {
        // SAFETY: a NUL-terminated name; the result is read at once, before any other call.
        let pw = unsafe { libc::getpwnam(name.as_ptr()) };
        if !pw.is_null() {
            // SAFETY: non-null, from getpwnam.
            let pw = unsafe { &*pw };
            return Some((pw.pw_uid, pw.pw_gid));
        }
    }
    Some((65534, 65534))
}

/// Lets `user` own `data` (created) and pass through `run_dir`.
///
/// # Errors
/// The path and the system's error.
pub fn prepare_dir(run_dir: &Path, data: &Path, user: Option<(u32, u32)>) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(data).map_err(|e| format!("{}: {e}", data.display()))?;
    if let Some((uid, gid)) = user {
        std::os::unix::fs::chown(data, Some(uid), Some(gid))
            .and_then(|_| std::fs::set_permissions(run_dir, std::fs::Permissions::from_mode(0o711)))
            .map_err(|e| format!("{}: {e}", data.display()))?;
    }
    Ok(())
}

fn as_user(c: &mut Command, user: Option<(u32, u32)>) {
    if let Some((uid, gid)) = user {
        use std::os::unix::process::CommandExt;
        c.uid(uid).gid(gid);
    }
}

/// Makes a new database cluster in `data/pgdata`: superuser `locksim`, trust authentication
/// (the server listens on one loopback address only), no fsync of the initialisation itself.
///
/// # Errors
/// initdb's own last words.
pub fn initdb(bin: &PgBin, data: &Path, user: Option<(u32, u32)>) -> Result<(), String> {
    let mut c = Command::new(&bin.initdb);
    c.arg("-D")
        .arg(data.join("pgdata"))
        .args(["-U", USER, "--auth=trust", "--no-sync", "--encoding=UTF8"])
        .stdin(Stdio::null());
    as_user(&mut c, user);
    let out = c
        .output()
        .map_err(|e| format!("cannot run {} ({e})", bin.initdb.display()))?;
    if out.status.success() {
        // Trust on the loopback network only: every node of a run has its own 127.0.0.N
        // (initdb's own file trusts 127.0.0.1 alone).
        let hba = data.join("pgdata").join("pg_hba.conf");
        return std::fs::write(&hba, "host all all 127.0.0.0/8 trust\n")
            .map_err(|e| format!("{}: {e}", hba.display()));
    }
    let err = String::from_utf8_lossy(&out.stderr);
    Err(format!(
        "initdb failed ({}): {}",
        out.status,
        err.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
    ))
}

/// The server of `data/pgdata` on `addr` only (no Unix socket), logging to
/// `data/postgres.log`, taking `connections` connections (`max_connections`: the run's
/// clients, a pooler's backends and the harness's own, so that no client meets PostgreSQL's
/// "too many clients", which the simulator's database never says). Every commit is fsynced
/// (`fsync = on`, `synchronous_commit = on`, PostgreSQL's defaults, said here so that nothing
/// else can change them): a crash loses no committed row, as the model's database loses none.
pub fn server_cmd(
    bin: &PgBin,
    data: &Path,
    addr: SocketAddrV4,
    user: Option<(u32, u32)>,
    connections: u32,
) -> Command {
    let mut c = Command::new(&bin.postgres);
    c.arg("-D")
        .arg(data.join("pgdata"))
        .arg("-c")
        .arg(format!("listen_addresses={}", addr.ip()))
        .arg("-p")
        .arg(addr.port().to_string())
        .args(["-c", "unix_socket_directories="])
        .args(["-c", "fsync=on", "-c", "synchronous_commit=on"])
        .arg("-c")
        .arg(format!("max_connections={connections}"))
        .args(["-c", "shared_buffers=16MB"])
        .args(["-c", "log_min_messages=warning"]);
    as_user(&mut c, user);
    c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(
        std::fs::File::create(data.join("postgres.log"))
            .map(Stdio::from)
            .unwrap_or_else(|_| Stdio::null()),
    );
    c
}

/// A client error in words: the server's own message when it sent one (`db error` alone
/// says nothing).
fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(d) => format!("{}: {}", d.severity(), d.message()),
        None => e.to_string(),
    }
}

/// A current-thread runtime for one client or one harness query.
fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the PostgreSQL client's runtime: {e}"))
}

/// A connection from `me` to `to`, its protocol driven by a task of the current runtime.
async fn connect(
    me: Ipv4Addr,
    to: SocketAddrV4,
) -> Result<(Client, tokio::task::JoinHandle<()>), String> {
    let sock = tokio::net::TcpSocket::new_v4().map_err(|e| e.to_string())?;
    sock.bind(SocketAddr::V4(SocketAddrV4::new(me, 0)))
        .map_err(|e| e.to_string())?;
    let stream = sock
        .connect(SocketAddr::V4(to))
        .await
        .map_err(|e| e.to_string())?;
    let _ = stream.set_nodelay(true);
    let mut cfg = tokio_postgres::Config::new();
    cfg.user(USER).dbname(DBNAME);
    let (client, conn) = cfg
        .connect_raw(stream, NoTls)
        .await
        .map_err(|e| describe(&e))?;
    let task = tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok((client, task))
}

/// The columns of each row the statements returned.
fn rows(msgs: &[SimpleQueryMessage]) -> Vec<Vec<Option<String>>> {
    msgs.iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => {
                Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect())
            }
            _ => None,
        })
        .collect()
}

/// Runs `sql` once on a fresh connection from the host (`127.0.0.1`) within `timeout`.
fn harness_query(
    to: SocketAddrV4,
    sql: &str,
    timeout: Duration,
) -> Result<Vec<Vec<Option<String>>>, String> {
    let rt = runtime()?;
    rt.block_on(async {
        let work = async {
            let (client, task) = connect(Ipv4Addr::LOCALHOST, to).await?;
            let msgs = client.simple_query(sql).await.map_err(|e| describe(&e));
            drop(client);
            let _ = task.await;
            let rows = msgs?
                .iter()
                .filter_map(|m| match m {
                    SimpleQueryMessage::Row(r) => {
                        Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect())
                    }
                    _ => None,
                })
                .collect();
            Ok(rows)
        };
        tokio::time::timeout(timeout, work)
            .await
            .unwrap_or_else(|_| Err(format!("no answer within {timeout:?}")))
    })
}

/// `true` once the server at `to` accepts a connection and answers a query.
pub fn ready(to: SocketAddrV4) -> bool {
    harness_query(to, "SELECT 1", Duration::from_millis(500)).is_ok()
}

/// Creates the run's tables, then runs `also` (`pg-advisory`'s fencing counters:
/// [`crate::advisory::SCHEMA`]) in the same query.
///
/// # Errors
/// The server's error.
pub fn create_schema(to: SocketAddrV4, also: Option<&str>) -> Result<(), String> {
    let sql = if let Some(also) = also {
        format!("{SCHEMA}; {also}")
    } else {
        SCHEMA.to_string()
    };
    harness_query(to, &sql, Duration::from_secs(10)).map(|_| ())
}

/// A service record read back from the database: when (the database's wall clock, ns since
/// the epoch) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceEvent {
    /// `clock_timestamp()` when the statement ran, ns since the epoch.
    pub at: i64,
    /// The grant or release record.
    pub kind: EventKind,
}

/// The service's records of a run, in the order the database wrote them.
///
/// # Errors
/// The server's error, or a row that does not parse.
pub fn service_events(to: SocketAddrV4, fencing: bool) -> Result<Vec<ServiceEvent>, String> {
    let rows = harness_query(
        to,
        "SELECT at, kind, name, client, version, released, holder FROM locksim_events ORDER BY seq",
        Duration::from_secs(10),
    )?;
    rows.iter()
        .map(|r| {
            let num = |i: usize| -> Result<i64, String> {
                r.get(i)
                    .cloned()
                    .flatten()
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(|| format!("locksim_events: column {i} of {r:?} is not a number"))
            };
            let (at, name, client, version) =
                (num(0)?, num(2)? as u32, num(3)? as NodeId, num(4)? as u64);
            let kind = match r.get(1).cloned().flatten().as_deref() {
                Some("grant") => EventKind::Grant {
                    key: name,
                    client,
                    token: fencing.then_some(version),
                },
                Some("freed") => EventKind::Freed {
                    key: name,
                    client,
                    freed: version,
                    released: num(5)? as u64,
                    holder: Some(num(6)? as NodeId),
                },
                other => return Err(format!("locksim_events: unknown kind {other:?}")),
            };
            Ok(ServiceEvent { at, kind })
        })
        .collect()
}

/// The statements of the lock, as SQL text (integers only are spliced in: no quoting).
pub mod sql {
    use locksim_core::{Nanos, NodeId};

    /// `:now`: the client's clock reading (ns) when it supplies one, else the database's.
    pub fn now(client_now: Option<i64>) -> String {
        client_now.map_or_else(|| super::DB_NOW.to_string(), |n| format!("{n}::bigint"))
    }

    /// Takes lock `name` for client `me` for `at_most` ns when it is free by `:now`; returns
    /// one row (the new version) when it did, and records the grant.
    pub fn lock(name: u32, me: NodeId, now: &str, at_most: Nanos) -> String {
        format!(
            "WITH t AS (SELECT {now} AS now), \
             g AS (INSERT INTO shedlock AS s (name, lock_until, locked_at, locked_by, version) \
                   SELECT {name}, t.now + {at_most}, t.now, {me}, 1 FROM t \
                   ON CONFLICT (name) DO UPDATE SET lock_until = EXCLUDED.lock_until, \
                   locked_at = EXCLUDED.locked_at, locked_by = EXCLUDED.locked_by, \
                   version = s.version + 1 WHERE s.lock_until <= EXCLUDED.locked_at \
                   RETURNING s.version), \
             e AS (INSERT INTO locksim_events (at, kind, name, client, version) \
                   SELECT {clock}, 'grant', {name}, {me}, version FROM g) \
             SELECT version FROM g",
            clock = super::DB_CLOCK
        )
    }

    /// Releases lock `name` locked by `me`, keeping it until `locked_at + at_least`; returns
    /// the number of rows updated, and records which grant a release of a live row ended
    /// (`grant`: the version the releasing client's acquire set, only for the record).
    pub fn unlock(name: u32, me: NodeId, now: &str, at_least: Nanos, grant: u64) -> String {
        format!(
            "WITH t AS (SELECT {now} AS now), \
             o AS (SELECT version, lock_until, locked_by FROM shedlock WHERE name = {name} FOR UPDATE), \
             u AS (UPDATE shedlock s SET lock_until = GREATEST(t.now, s.locked_at + {at_least}) \
                   FROM t WHERE s.name = {name} AND s.locked_by = {me} RETURNING s.name), \
             e AS (INSERT INTO locksim_events (at, kind, name, client, version, released, holder) \
                   SELECT {clock}, 'freed', {name}, {me}, o.version, {grant}, o.locked_by \
                   FROM o, t, u WHERE o.lock_until > t.now) \
             SELECT count(*) FROM u",
            clock = super::DB_CLOCK
        )
    }

    /// 1 when lock `name` is still locked by `me` at `:now`, else 0.
    pub fn held(name: u32, me: NodeId, now: &str) -> String {
        format!(
            "WITH t AS (SELECT {now} AS now) SELECT count(*) FROM shedlock, t \
             WHERE name = {name} AND locked_by = {me} AND lock_until > t.now"
        )
    }
}

/// Why a statement has no answer (the model's rules, see the module docs).
pub(crate) enum StmtError {
    /// Surely not executed: no connection, or the server refused it.
    Fail(String),
    /// May have been executed.
    Unknown(String),
}

impl StmtError {
    pub(crate) fn outcome<T>(self) -> Outcome<T> {
        match self {
            StmtError::Fail(e) => Outcome::Fail(e),
            StmtError::Unknown(e) => Outcome::Unknown(e),
        }
    }
    pub(crate) fn text(self) -> String {
        match self {
            StmtError::Fail(e) | StmtError::Unknown(e) => e,
        }
    }
}

/// A connection idle this long is validated before use (ns): HikariCP's
/// `aliveBypassWindowMs` default, 500 ms (ShedLock runs on Spring's `DataSource`, Hikari by
/// default), whose check is pgjdbc's `isValid()`: an empty query, one round trip.
const VALIDATE_AFTER: u64 = 500_000_000;

/// One client's connection to a PostgreSQL server (or a pooler in front of one), opened on
/// first use and after a failure, with the model's outcome rules (module docs).
pub struct PgConn {
    rt: tokio::runtime::Runtime,
    /// Per-statement timeout, ns, or [`NO_TIMEOUT`].
    timeout: Nanos,
    me: Ipv4Addr,
    server: SocketAddrV4,
    conn: Option<(Client, tokio::task::JoinHandle<()>)>,
    /// When the connection last answered (host monotonic ns).
    last_used: u64,
}

impl PgConn {
    /// A connection from `me` to `server`, statements bounded by `timeout` ns.
    ///
    /// # Errors
    /// When its runtime cannot start.
    pub fn new(timeout: Nanos, me: Ipv4Addr, server: SocketAddrV4) -> Result<Self, String> {
        Ok(PgConn {
            rt: runtime()?,
            timeout,
            me,
            server,
            conn: None,
            last_used: 0,
        })
    }

    fn drop_conn(&mut self) {
        if let Some((_, task)) = self.conn.take() {
            // Aborting the task closes the socket; data the kernel holds is still sent.
            task.abort();
        }
    }

    /// Drops a connection that idled past [`VALIDATE_AFTER`] and fails its validation (a
    /// server or pooler restarted meanwhile ended it), as a connection pool does before
    /// handing it out; the statement then opens a new one. The validation changes nothing on
    /// the server.
    fn validate(&mut self) {
        let idle = crate::node::host_mono().saturating_sub(self.last_used);
        let Some((client, _)) = self.conn.as_ref().filter(|_| idle >= VALIDATE_AFTER) else {
            return;
        };
        let limit = Duration::from_nanos(self.timeout.min(VALIDATE_AFTER * 10));
        let alive = self.rt.block_on(async {
            tokio::time::timeout(limit, client.simple_query(""))
                .await
                .is_ok_and(|r| r.is_ok())
        });
        if !alive {
            self.drop_conn();
        }
    }

    /// One simple-query round trip (`sql` may hold several statements); the columns of each
    /// row returned.
    pub(crate) fn exec(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, StmtError> {
        self.validate();
        let limit = (self.timeout != NO_TIMEOUT).then(|| Duration::from_nanos(self.timeout));
        let (me, to) = (self.me, self.server);
        let mut conn = self.conn.take();
        let r = self.rt.block_on(async {
            let work = async {
                if conn.is_none() {
                    conn = Some(
                        connect(me, to)
                            .await
                            .map_err(|e| StmtError::Fail(format!("not sent: {e}")))?,
                    );
                }
                let client = &conn.as_ref().expect("connected").0;
                match client.simple_query(sql).await {
                    Ok(msgs) => Ok(rows(&msgs)),
                    Err(e) if e.as_db_error().is_some() => Err(StmtError::Fail(describe(&e))),
                    Err(e) => Err(StmtError::Unknown(format!("no answer: {}", describe(&e)))),
                }
            };
            match limit {
                None => work.await,
                Some(d) => tokio::time::timeout(d, work).await.unwrap_or_else(|_| {
                    Err(StmtError::Unknown(format!(
                        "no answer within the timeout ({d:?})"
                    )))
                }),
            }
        });
        self.conn = conn;
        if r.is_ok() {
            self.last_used = crate::node::host_mono();
        }
        // A statement whose answer did not come (or that found no connection) leaves the
        // connection unusable: a late answer must never be read as the next one's.
        if matches!(r, Err(StmtError::Unknown(_)))
            || (r.is_err() && self.conn.as_ref().is_some_and(|c| c.0.is_closed()))
        {
            self.drop_conn();
        }
        r
    }
}

/// The first column of the first row, if any.
pub(crate) fn first(rows: &[Vec<Option<String>>]) -> Option<&str> {
    rows.first()?.first()?.as_deref()
}

/// The ShedLock-style client of one client process.
pub struct PgLock {
    conn: PgConn,
    backend: Backend,
    node: NodeId,
}

impl PgLock {
    /// The client of node `node`, whose connection to `server` leaves from `me`.
    ///
    /// # Errors
    /// When its runtime cannot start.
    pub fn new(
        backend: Backend,
        node: NodeId,
        me: Ipv4Addr,
        server: SocketAddrV4,
    ) -> Result<Self, String> {
        Ok(PgLock {
            conn: PgConn::new(backend.timeout, me, server)?,
            backend,
            node,
        })
    }

    fn exec(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, StmtError> {
        self.conn.exec(sql)
    }

    fn now(&self, host: &dyn Host) -> String {
        sql::now((!self.backend.db.db_time).then(|| host.now(LocalClock::Wall)))
    }

    /// Takes `key` for `ttl` ns (ShedLock's `lockAtMostFor`).
    pub fn acquire(&mut self, host: &dyn Host, key: u32, ttl: Nanos) -> Outcome<Grant> {
        let clock = self.backend.client_clock;
        let start = host.now(clock);
        let stmt = sql::lock(key, self.node, &self.now(host), ttl);
        match self.exec(&stmt) {
            Ok(rows) => match first(&rows).and_then(|v| v.parse::<u64>().ok()) {
                Some(version) => {
                    let until = start
                        .saturating_add(ttl as i64)
                        .saturating_sub(self.backend.drift(ttl));
                    Outcome::Ok(Grant {
                        owner: self.node as u64,
                        token: self.backend.db.fencing.then_some(version),
                        deadline: (clock, until),
                        etcd: None,
                        row: Some(version),
                        zk: None,
                    })
                }
                None => Outcome::Fail("0 rows updated: lock_until is in the future".into()),
            },
            Err(e) => e.outcome(),
        }
    }

    /// Releases `grant` of `key`.
    pub fn release(&mut self, host: &dyn Host, key: u32, grant: &Grant) -> Outcome<()> {
        let stmt = sql::unlock(
            key,
            self.node,
            &self.now(host),
            self.backend.db.lock_at_least,
            grant.row.unwrap_or(0),
        );
        match self.exec(&stmt) {
            Ok(rows) if first(&rows) == Some("1") => Outcome::Ok(()),
            Ok(_) => Outcome::Fail("0 rows updated: locked by another client".into()),
            Err(e) => e.outcome(),
        }
    }

    /// `check_held`: whether the row is still this client's by `:now`.
    pub fn check_held(&mut self, host: &dyn Host, key: u32) -> Option<Result<(), String>> {
        if !self.backend.db.check_held {
            return None;
        }
        let stmt = sql::held(key, self.node, &self.now(host));
        Some(match self.exec(&stmt) {
            Ok(rows) if first(&rows) == Some("1") => Ok(()),
            Ok(_) => Err("the row is locked by another host or its lock_until has passed".into()),
            Err(e) => Err(e.text()),
        })
    }
}

impl crate::backend::Lock for PgLock {
    fn acquire(&mut self, host: &dyn Host, key: u32, _owner: u64, ttl: Nanos) -> Outcome<Grant> {
        PgLock::acquire(self, host, key, ttl)
    }
    fn release(&mut self, host: &dyn Host, key: u32, grant: &Grant) -> Outcome<()> {
        PgLock::release(self, host, key, grant)
    }
    fn check_held(&mut self, host: &dyn Host, key: u32) -> Option<Result<(), String>> {
        PgLock::check_held(self, host, key)
    }
}

/// The server of `db-lease` (and `pg-advisory`'s `n1`): one PostgreSQL server, as `user`.
#[derive(Debug, Clone)]
pub struct PgServers {
    /// PostgreSQL's programs.
    pub bin: PgBin,
    /// The user the server runs as ([`server_user`]).
    pub user: Option<(u32, u32)>,
}

impl PgServers {
    /// Finds PostgreSQL ([`find`], `opts.postgres` if given) and the user it will run as.
    ///
    /// # Errors
    /// [`find`]'s: where it looked and how to install it.
    pub fn new(opts: &RealOptions) -> Result<PgServers, String> {
        let bin = find(opts.postgres.as_deref())?;
        Ok(PgServers {
            bin,
            user: server_user(),
        })
    }

    /// Waits until the server `n1` answers, then creates the run's tables and `also`
    /// ([`create_schema`]).
    ///
    /// # Errors
    /// [`wait_postgres`]'s, and [`RealError::Failed`] when the tables cannot be made.
    pub fn ready_with_schema(h: &mut dyn ServerHost, also: Option<&str>) -> Result<(), RealError> {
        wait_postgres(h, 0)?;
        create_schema(h.servers()[0], also)
            .map_err(|e| RealError::Failed(format!("{}: creating the lock table: {e}", h.name(0))))
    }
}

impl ServerSide for PgServers {
    fn version(&self, _opts: &RealOptions) -> Result<String, String> {
        version(&self.bin)
    }

    fn log_files(&self) -> &'static [&'static str] {
        &["postgres.log"]
    }

    /// A new database cluster for the server `n1`, once per run (a restart reuses it), and
    /// the other servers' folders (the pooler's).
    fn prepare(&self, h: &dyn ServerHost) -> Result<(), RealError> {
        for n in h.scenario().cluster.server_ids() {
            let data = h.dir().join(h.name(n));
            prepare_dir(h.dir(), &data, self.user).map_err(RealError::Setup)?;
            if n == 0 {
                initdb(&self.bin, &data, self.user).map_err(RealError::Setup)?;
            }
        }
        Ok(())
    }

    /// A PostgreSQL server on its own data directory (made by [`ServerSide::prepare`]).
    fn command(&self, h: &dyn ServerHost, n: NodeId) -> Result<Command, RealError> {
        let data = h.dir().join(h.name(n));
        Ok(server_cmd(
            &self.bin,
            &data,
            h.servers()[n as usize],
            self.user,
            h.scenario().cluster.clients + h.backend().pg.pool_size + 20,
        ))
    }

    fn wait_ready(&self, h: &mut dyn ServerHost) -> Result<(), RealError> {
        PgServers::ready_with_schema(h, None)
    }

    fn records_events(&self) -> bool {
        true
    }

    /// The database's own grant and release records, dated in true time (its
    /// `clock_timestamp()` is the host's `CLOCK_REALTIME`). A server the plan left crashed is
    /// started again to read them: its committed rows survived.
    fn events(&self, h: &mut dyn ServerHost) -> Result<Vec<Event>, RealError> {
        let n = 0;
        h.restart_if_down(n)?;
        wait_postgres(h, n)?;
        let read = service_events(h.servers()[n as usize], h.backend().fencing())
            .map_err(|e| RealError::Failed(format!("reading the database's records: {e}")))?;
        let offset = crate::clockfile::host_realtime() - crate::node::host_mono() as i64;
        let clock = h.clock(n).cloned();
        let t0 = h.t0();
        Ok(read
            .into_iter()
            .map(|e| {
                let t = (e.at - offset - t0 as i64).max(0) as Nanos;
                let (wall, mono) = clock
                    .as_ref()
                    .map_or((t as i64, t), |c| (c.wall(t), c.mono(t)));
                Event {
                    id: 0,
                    time: t,
                    node: n,
                    wall,
                    mono,
                    kind: e.kind,
                }
            })
            .collect())
    }
}

/// Waits until PostgreSQL server `n` (or the pooler) answers a query, 10 s at most.
///
/// # Errors
/// [`RealError::Failed`] when it exits or does not answer in time (quoting its log),
/// [`RealError::Interrupted`].
pub fn wait_postgres(h: &mut dyn ServerHost, n: NodeId) -> Result<(), RealError> {
    for _ in 0..200 {
        if h.interrupted() {
            return Err(RealError::Interrupted);
        }
        h.exited_early(n)?;
        if ready(h.servers()[n as usize]) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    Err(RealError::Failed(format!(
        "{} (PostgreSQL) did not answer within 10 s{}",
        h.name(n),
        h.log_tail(n)
    )))
}

#[cfg(test)]
mod tests {
    use super::sql;

    #[test]
    fn statements_take_their_clock_from_the_client_or_the_database() {
        assert_eq!(sql::now(Some(-5)), "-5::bigint");
        assert!(sql::now(None).contains("current_timestamp"));
        let lock = sql::lock(3, 7, &sql::now(Some(1_000)), 500);
        assert!(lock.contains("SELECT 1000::bigint AS now"), "{lock}");
        assert!(
            lock.contains("SELECT 3, t.now + 500, t.now, 7, 1"),
            "{lock}"
        );
        assert!(
            lock.contains("WHERE s.lock_until <= EXCLUDED.locked_at"),
            "{lock}"
        );
        let unlock = sql::unlock(3, 7, &sql::now(None), 20, 4);
        assert!(
            unlock.contains("s.locked_at + 20") && unlock.contains("s.locked_by = 7"),
            "{unlock}"
        );
        assert!(
            unlock.contains("'freed', 3, 7, o.version, 4, o.locked_by"),
            "{unlock}"
        );
        let held = sql::held(3, 7, "9::bigint");
        assert!(
            held.contains("locked_by = 7 AND lock_until > t.now"),
            "{held}"
        );
    }
}
