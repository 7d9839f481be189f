//! What real mode can run: the algorithms with a real backend, their knobs, and the faults it
//! can apply. Everything else is refused up front with one line naming the algorithm, knob or
//! fault (the CLI exits 2), never skipped silently.

use std::collections::BTreeMap;

use locksim_core::fault::{Fault, PauseTask};
use locksim_core::history::LocalClock;
use locksim_core::time::{fmt_nanos, parse_duration, MS, SEC};
use locksim_core::{Nanos, Role, Scenario};
use serde::{Deserialize, Serialize};

/// The lock service a real run starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Service {
    /// One `redis-server`: `SET key owner NX PX ttl`, Lua compare-and-delete release.
    Central,
    /// As `Central`, plus an `INCR` fencing counter in the same Lua script as the `SET`.
    CentralFencing,
    /// N independent `redis-server` masters and the Redlock client algorithm.
    Redlock,
    /// `raft-lease` on an etcd cluster (3.4, v3 API): a session lease kept alive, the lock
    /// recipe of etcd's `concurrency.Mutex`, the key's creation revision as fencing token.
    RaftLease,
    /// `db-lease` on one PostgreSQL server: ShedLock's row (`UPDATE … WHERE lock_until <=
    /// :now`), `now` from the client's clock or the database's ([`crate::postgres`]).
    DbLease,
    /// `pg-advisory`: session advisory locks on one PostgreSQL server behind PgBouncer
    /// ([`crate::advisory`]).
    PgAdvisory,
    /// `redis-failover`: a Redis primary, asynchronous replicas and one Sentinel
    /// ([`crate::sentinel`]).
    RedisFailover,
    /// `zookeeper`: a ZooKeeper ensemble and Curator's lock recipe ([`crate::zookeeper`]).
    Zookeeper,
}

/// The backend of a real run: the service and the client library's knobs, read from the
/// scenario's algorithm configuration with the simulator's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Backend {
    /// Which service.
    pub service: Service,
    /// Lock servers (1, or the Redlock masters).
    pub servers: u32,
    /// Per-request timeout of the lock client, ns (connect, send and reply together).
    pub timeout: Nanos,
    /// Drift allowance factor in ppm of the TTL (Redlock's 0.01 = 10 000), plus 2 ms.
    pub drift_ppm: u64,
    /// The clock the client measures validity with.
    pub client_clock: LocalClock,
    /// `fsync = always`: Redis runs with `appendonly yes`, `appendfsync always`; `never`:
    /// no AOF and no RDB snapshots, so a restarted server is empty. etcd always fsyncs.
    pub fsync_always: bool,
    /// etcd's `--heartbeat-interval`, ns (the simulator's Raft `tick`; 0 for Redis).
    pub tick: Nanos,
    /// etcd's `--election-timeout` in ticks (the simulator's `election_ticks`; 0 for Redis).
    pub election_ticks: u32,
    /// How long an acquire waits in etcd's lock queue before giving up, ns (0 for Redis).
    pub lock_wait: Nanos,
    /// `db-lease`'s knobs (all off for the other services).
    pub db: DbKnobs,
    /// `pg-advisory`'s knobs (all off for the other services).
    pub pg: PoolKnobs,
    /// `redis-failover`'s knobs (all off for the other services).
    pub failover: FailoverKnobs,
    /// `zookeeper`'s knobs (all off for the other services).
    pub zk: ZkKnobs,
    /// `release = delete` (Redis services): a release deletes the key without an owner check.
    #[serde(default)]
    pub release_delete: bool,
}

/// The knobs of `zookeeper` (the simulator's, `crates/algos/src/zookeeper`), as the real
/// client takes them; the ensemble's `tickTime` is [`Backend::tick`], Curator's acquire wait
/// [`Backend::lock_wait`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ZkKnobs {
    /// `protected = guid+session`: a node found by its GUID is the client's only when its
    /// session owns it (Curator 4.2.0); `false`: by GUID alone (CURATOR-498).
    pub protected_session: bool,
    /// `reconnect = any`: after a connection loss the client moves to another server.
    pub reconnect_any: bool,
    /// `sync` before each children listing.
    pub sync_before_read: bool,
    /// The lock node's sequence number is the fencing token.
    pub fencing: bool,
    /// How long a request waits for an answer, ns; 0: the read timeout, 2/3 of the session
    /// timeout.
    pub timeout: Nanos,
}

/// The knobs of `redis-failover` (the simulator's, `crates/algos/src/redisfailover`), as
/// Redis, Sentinel and the real client take them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FailoverKnobs {
    /// Replicas of the primary.
    pub replicas: u32,
    /// Sentinel's `down-after-milliseconds`, ns.
    pub down_after: Nanos,
    /// `WAIT n` after each `SET` (0: none).
    pub wait_replicas: u32,
    /// `WAIT`'s timeout, ns.
    pub wait_timeout: Nanos,
    /// The token counter's `INCR` beside the `SET`.
    pub fencing: bool,
}

/// The knobs of `pg-advisory` (the simulator's, `crates/algos/src/pgadvisory.rs`), as
/// PgBouncer and the real client take them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PoolKnobs {
    /// `pool_mode = transaction` (else `session`).
    pub transaction: bool,
    /// PgBouncer's `default_pool_size`.
    pub pool_size: u32,
    /// PgBouncer's `server_lifetime`, ns (whole seconds).
    pub server_lifetime: Nanos,
    /// `pg_advisory_unlock` returning false is a failed release.
    pub check_unlock_result: bool,
    /// The lock statement bumps a `lock_tokens` row, the grant's fencing token.
    pub fencing: bool,
    /// Before each write, `pg_locks` says whether this backend still holds the lock.
    pub check_held: bool,
}

/// The knobs of `db-lease` (the simulator's, `crates/algos/src/dblease.rs`), as the real
/// client takes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DbKnobs {
    /// `time_source = db`: the database's clock computes and compares `lock_until`
    /// (ShedLock's `usingDbTime()`); `false`: the client's wall clock, sent with each statement.
    pub db_time: bool,
    /// ShedLock's `lockAtLeastFor`, ns: a release keeps the row locked until `locked_at + this`.
    pub lock_at_least: Nanos,
    /// The row's `version` column, bumped by each acquire, is the grant's fencing token.
    pub fencing: bool,
    /// Before each write the holder reads its row and gives up unless it still holds it.
    pub check_held: bool,
}

/// A per-request timeout of `none`: wait as long as TCP does.
pub const NO_TIMEOUT: Nanos = Nanos::MAX;

impl Backend {
    /// `true` when the service issues fencing tokens.
    pub fn fencing(&self) -> bool {
        matches!(self.service, Service::CentralFencing | Service::RaftLease)
            || (self.service == Service::DbLease && self.db.fencing)
            || (self.service == Service::PgAdvisory && self.pg.fencing)
            || (self.service == Service::RedisFailover && self.failover.fencing)
            || (self.service == Service::Zookeeper && self.zk.fencing)
    }
    /// `true` for the ZooKeeper backend.
    pub fn zookeeper(&self) -> bool {
        self.service == Service::Zookeeper
    }
    /// `true` for Redis with Sentinel (the last server is the Sentinel).
    pub fn sentinel(&self) -> bool {
        self.service == Service::RedisFailover
    }
    /// `true` for the PostgreSQL backends (`n1` is a PostgreSQL server).
    pub fn postgres(&self) -> bool {
        matches!(self.service, Service::DbLease | Service::PgAdvisory)
    }
    /// `true` when `n2` is a PgBouncer in front of the server (`pg-advisory`).
    pub fn pooler(&self) -> bool {
        self.service == Service::PgAdvisory
    }
    /// `true` for the etcd backend.
    pub fn etcd(&self) -> bool {
        self.service == Service::RaftLease
    }
    /// The Redlock majority, `servers / 2 + 1` (1 for a single server).
    pub fn quorum(&self) -> u32 {
        self.servers / 2 + 1
    }
    /// The clock-drift allowance for a lease of `ttl` ns: `ttl·drift_factor + 2 ms` (Redlock's
    /// formula, which the raft-lease client uses too), ns.
    pub fn drift(&self, ttl: Nanos) -> i64 {
        (ttl as u128 * self.drift_ppm as u128 / 1_000_000) as i64 + 2_000_000
    }
}

/// A setting of the simulator that real mode refuses: which algorithms, which value(s), and
/// why. `locksim list` prints it on the knob (`real` in `list --json`), and the refusal says
/// the same ([`refusal`]).
#[derive(Debug, Clone, Copy)]
pub struct Refused {
    /// The algorithms whose knob it is.
    pub algorithms: &'static [&'static str],
    /// The knob.
    pub key: &'static str,
    /// The values refused, as a reader says them ("when true", "when set", "other than wall").
    pub values: &'static str,
    /// Why real mode cannot run them.
    pub why: &'static str,
}

/// Every knob value real mode refuses (ranges a real server imposes, such as etcd's whole
/// second leases, are checked and explained where they are read).
pub const REFUSED: &[Refused] = &[
    Refused {
        algorithms: &["central", "central-fencing", "redlock"],
        key: "clock",
        values: "other than wall",
        why: "redis-server judges key expiry by its wall clock",
    },
    Refused {
        algorithms: &["redlock"],
        key: "delayed_restart",
        values: "when true",
        why: "a master that waits out a TTL before it answers after a restart is not in real mode yet",
    },
    Refused {
        algorithms: &["pg-advisory"],
        key: "xact",
        values: "when true",
        why: "the real client records each grant from the lock's own statement, which with a \
              transaction-level lock runs in a transaction left open while the lock is held: \
              the record would roll back with a transaction that never commits, so the run \
              could not see the grant (not in real mode yet)",
    },
    Refused {
        algorithms: &["redis-failover"],
        key: "repl_delay",
        values: "when set",
        why: "the replication lag is what real Redis on loopback gives (well under a millisecond)",
    },
    Refused {
        algorithms: &["redis-failover"],
        key: "promote",
        values: "other than most-up-to-date",
        why: "Sentinel promotes the replica with the best priority and largest replication offset",
    },
    Refused {
        algorithms: &["raft-lease"],
        key: "clock",
        values: "other than mono",
        why: "etcd times leases with Go's monotonic clock",
    },
    Refused {
        algorithms: &["raft-lease"],
        key: "fsync",
        values: "other than always",
        why: "etcd 3.4 always fsyncs its log",
    },
    Refused {
        algorithms: &["raft-lease"],
        key: "grant_on_expired_lease",
        values: "when set",
        why: BUG,
    },
    Refused {
        algorithms: &["raft-lease"],
        key: "unlock_by_name",
        values: "when set",
        why: BUG,
    },
    Refused {
        algorithms: &["raft-lease"],
        key: "unlock_retry",
        values: "when set",
        why: BUG,
    },
    Refused {
        algorithms: &["zookeeper"],
        key: "follower_lag",
        values: "when set",
        why: "a follower applies a commit when real ZooKeeper does (well under a millisecond on \
              loopback)",
    },
];

const BUG: &str =
    "a bug the simulator injects into its own model; real etcd and our real client do not have it";

/// What real mode refuses of `algo`'s knob `key` ([`REFUSED`]).
pub fn refused(algo: &str, key: &str) -> Option<&'static Refused> {
    REFUSED
        .iter()
        .find(|r| r.key == key && r.algorithms.contains(&algo))
}

/// The refusal of `algo`'s `key = value`: one line, the words `locksim list` shows.
fn refusal(algo: &str, key: &str, value: &str) -> String {
    let why = refused(algo, key).map_or("", |r| r.why);
    format!("{algo}: `{key} = {value}` cannot run for real: {why}")
}

/// A flag as the simulator's knobs spell it: true/false, on/off, yes/no, 1/0 (any case).
fn flag_knob(algo: &str, k: &str, v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "on" | "yes" | "1" => Ok(true),
        "false" | "off" | "no" | "0" => Ok(false),
        _ => Err(format!(
            "{algo}: `{k}`: {v:?} must be true or false (or on/off, yes/no, 1/0)"
        )),
    }
}

fn knob_duration(name: &str, v: &str) -> Result<Nanos, String> {
    match parse_duration(v) {
        Ok(n) if n > 0 && n <= u64::MAX as i128 => Ok(n as Nanos),
        Ok(_) => Err(format!("`{name}`: {v:?} must be more than zero")),
        Err(e) => Err(format!("`{name}`: {e}")),
    }
}

/// A fraction such as `0.01` as ppm.
fn fraction_ppm(name: &str, v: &str) -> Result<u64, String> {
    let bad = || format!("`{name}`: {v:?} is not a fraction from 0 to 1 (e.g. 0.01)");
    let (int, frac) = v.trim().split_once('.').unwrap_or((v.trim(), ""));
    if frac.len() > 6 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let int: u64 = int.parse().map_err(|_| bad())?;
    let frac: u64 = if frac.is_empty() {
        0
    } else {
        format!("{frac:0<6}").parse().map_err(|_| bad())?
    };
    let ppm = int * 1_000_000 + frac;
    if ppm > 1_000_000 {
        return Err(bad());
    }
    Ok(ppm)
}

/// The real backend of `scenario`'s algorithm and knobs.
///
/// # Errors
/// One line naming the algorithm (no real backend: `raft-lease` is phase 2) or the knob.
pub fn backend(scenario: &Scenario) -> Result<Backend, String> {
    let algo = scenario.algorithm.as_str();
    let service = match algo {
        "central" => Service::Central,
        "central-fencing" => Service::CentralFencing,
        "redlock" => Service::Redlock,
        "raft-lease" if cfg!(feature = "etcd") => Service::RaftLease,
        "db-lease" => return db_backend(scenario),
        "pg-advisory" => return pool_backend(scenario),
        "redis-failover" => return failover_backend(scenario),
        "zookeeper" => return zk_backend(scenario),
        "raft-lease" => {
            return Err(
                "algorithm `raft-lease` runs against real etcd only in a locksim built with \
                 `--features etcd` (cargo build --release -p locksim-cli --features etcd; the \
                 build needs protoc: apt-get install protobuf-compiler)"
                    .into(),
            )
        }
        other => {
            return Err(format!(
                "algorithm `{other}` has no real backend (real mode runs central, \
                 central-fencing, redlock, raft-lease, db-lease, pg-advisory, redis-failover, \
                 zookeeper)"
            ))
        }
    };
    if service == Service::RaftLease {
        return etcd_backend(scenario);
    }
    let cfg: &BTreeMap<String, String> = &scenario.config;
    let get = |k: &str, d: &'static str| cfg.get(k).map_or(d, |s| s.as_str());
    let known: &[&str] = match service {
        Service::Redlock => &[
            "masters",
            "clock",
            "fsync",
            "delayed_restart",
            "timeout",
            "release",
            "client_clock",
            "drift_factor",
        ],
        _ => &[
            "clock",
            "fsync",
            "timeout",
            "release",
            "client_clock",
            "drift_factor",
        ],
    };
    if let Some(k) = cfg.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(format!("{algo}: setting `{k}` is unknown in real mode"));
    }
    if get("clock", "wall") != "wall" {
        return Err(refusal(algo, "clock", get("clock", "wall")));
    }
    if get("delayed_restart", "false") != "false" {
        return Err(refusal(algo, "delayed_restart", get("delayed_restart", "")));
    }
    let fsync_always = match get("fsync", "never") {
        "never" => false,
        "always" => true,
        other => {
            return Err(format!(
                "{algo}: `fsync`: {other:?} is neither never nor always"
            ))
        }
    };
    let client_clock = match get("client_clock", "wall") {
        "wall" => LocalClock::Wall,
        "mono" => LocalClock::Mono,
        other => {
            return Err(format!(
                "{algo}: `client_clock`: {other:?} is neither wall nor mono"
            ))
        }
    };
    let servers = match service {
        Service::Redlock => get("masters", "5")
            .parse::<u32>()
            .ok()
            .filter(|m| (1..=15).contains(m))
            .ok_or_else(|| {
                format!(
                    "redlock: `masters`: {:?} is not 1 to 15",
                    get("masters", "5")
                )
            })?,
        _ => 1,
    };
    let default_timeout = if service == Service::Redlock {
        "50ms"
    } else {
        "100ms"
    };
    let timeout = match get("timeout", default_timeout) {
        "none" => NO_TIMEOUT,
        t => knob_duration("timeout", t).map_err(|e| format!("{algo}: {e} (or none)"))?,
    };
    let release_delete = match get("release", "owner") {
        "owner" => false,
        "delete" => true,
        other => {
            return Err(format!(
                "{algo}: `release`: {other:?} is neither owner nor delete"
            ))
        }
    };
    Ok(Backend {
        service,
        servers,
        timeout,
        drift_ppm: fraction_ppm("drift_factor", get("drift_factor", "0.01"))
            .map_err(|e| format!("{algo}: {e}"))?,
        client_clock,
        fsync_always,
        tick: 0,
        election_ticks: 0,
        lock_wait: 0,
        db: DbKnobs::default(),
        pg: PoolKnobs::default(),
        failover: FailoverKnobs::default(),
        zk: ZkKnobs::default(),
        release_delete,
    })
}

/// One algorithm's settings as a real backend reads them: every key known, each value checked,
/// errors naming the algorithm and the key.
struct Settings<'a> {
    algo: &'static str,
    cfg: &'a BTreeMap<String, String>,
}

impl<'a> Settings<'a> {
    /// # Errors
    /// The first key not in `known`.
    fn new(algo: &'static str, s: &'a Scenario, known: &[&str]) -> Result<Self, String> {
        if let Some(k) = s.config.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(format!("{algo}: setting `{k}` is unknown in real mode"));
        }
        Ok(Settings {
            algo,
            cfg: &s.config,
        })
    }
    fn get(&self, k: &str, d: &'static str) -> &'a str {
        self.cfg.get(k).map_or(d, |s| s.as_str())
    }
    fn flag(&self, k: &str) -> Result<bool, String> {
        flag_knob(self.algo, k, self.get(k, "false"))
    }
    /// The value of `k` (default `d`), which must be one of `choices`.
    fn choice(&self, k: &str, d: &'static str, choices: &[&str]) -> Result<&'a str, String> {
        let v = self.get(k, d);
        if choices.contains(&v) {
            Ok(v)
        } else {
            Err(format!(
                "{}: `{k}`: {v:?} is not one of {}",
                self.algo,
                choices.join(", ")
            ))
        }
    }
    fn duration(&self, k: &str, d: &'static str) -> Result<Nanos, String> {
        knob_duration(k, self.get(k, d)).map_err(|e| format!("{}: {e}", self.algo))
    }
    /// A duration that may be zero.
    fn duration_or_zero(&self, k: &str, d: &'static str) -> Result<Nanos, String> {
        match parse_duration(self.get(k, d)) {
            Ok(n) if (0..=u64::MAX as i128).contains(&n) => Ok(n as Nanos),
            Ok(_) => Err(format!(
                "{}: `{k}`: {:?} must not be negative",
                self.algo,
                self.get(k, d)
            )),
            Err(e) => Err(format!("{}: `{k}`: {e}", self.algo)),
        }
    }
    /// A per-request timeout, or `none` ([`NO_TIMEOUT`]).
    fn timeout(&self, d: &'static str) -> Result<Nanos, String> {
        match self.get("timeout", d) {
            "none" => Ok(NO_TIMEOUT),
            _ => self
                .duration("timeout", d)
                .map_err(|e| format!("{e} (or none)")),
        }
    }
    fn client_clock(&self, d: &'static str) -> Result<LocalClock, String> {
        Ok(match self.choice("client_clock", d, &["wall", "mono"])? {
            "wall" => LocalClock::Wall,
            _ => LocalClock::Mono,
        })
    }
    fn drift_ppm(&self) -> Result<u64, String> {
        fraction_ppm("drift_factor", self.get("drift_factor", "0.01"))
            .map_err(|e| format!("{}: {e}", self.algo))
    }
    /// An integer from `range`.
    fn int(
        &self,
        k: &str,
        d: &'static str,
        range: std::ops::RangeInclusive<u32>,
    ) -> Result<u32, String> {
        self.get(k, d)
            .parse::<u32>()
            .ok()
            .filter(|n| range.contains(n))
            .ok_or_else(|| {
                format!(
                    "{}: `{k}`: {:?} is not {} to {}",
                    self.algo,
                    self.get(k, d),
                    range.start(),
                    range.end()
                )
            })
    }
}

/// A backend of one server with no Raft and none of the other services' knobs.
fn plain(
    service: Service,
    servers: u32,
    timeout: Nanos,
    drift_ppm: u64,
    client_clock: LocalClock,
) -> Backend {
    Backend {
        service,
        servers,
        timeout,
        drift_ppm,
        client_clock,
        fsync_always: true,
        tick: 0,
        election_ticks: 0,
        lock_wait: 0,
        db: DbKnobs::default(),
        pg: PoolKnobs::default(),
        failover: FailoverKnobs::default(),
        zk: ZkKnobs::default(),
        release_delete: false,
    }
}

/// The simulator's `db-lease` knobs, as a PostgreSQL server and our ShedLock-style client
/// take them.
fn db_backend(scenario: &Scenario) -> Result<Backend, String> {
    let k = Settings::new(
        "db-lease",
        scenario,
        &[
            "time_source",
            "lock_at_least",
            "fencing",
            "check_held",
            "timeout",
            "client_clock",
            "drift_factor",
        ],
    )?;
    let mut b = plain(
        Service::DbLease,
        1,
        k.timeout("none")?,
        k.drift_ppm()?,
        k.client_clock("wall")?,
    );
    b.db = DbKnobs {
        db_time: k.choice("time_source", "client", &["client", "db"])? == "db",
        lock_at_least: k.duration_or_zero("lock_at_least", "0")?,
        fencing: k.flag("fencing")?,
        check_held: k.flag("check_held")?,
    };
    Ok(b)
}

/// The simulator's `pg-advisory` knobs, as PgBouncer and our client take them.
fn pool_backend(scenario: &Scenario) -> Result<Backend, String> {
    let algo = "pg-advisory";
    let k = Settings::new(
        algo,
        scenario,
        &[
            "pool_mode",
            "pool_size",
            "server_lifetime",
            "check_unlock_result",
            "xact",
            "fencing",
            "check_held",
            "timeout",
        ],
    )?;
    if k.flag("xact")? {
        return Err(refusal(algo, "xact", k.get("xact", "")));
    }
    let server_lifetime = k.duration("server_lifetime", "3600s")?;
    if server_lifetime % SEC != 0 {
        return Err(format!(
            "{algo}: `server_lifetime`: PgBouncer takes whole seconds, not {}",
            k.get("server_lifetime", "3600s")
        ));
    }
    let mut b = plain(
        Service::PgAdvisory,
        2,
        k.timeout("none")?,
        0,
        LocalClock::Mono,
    );
    b.pg = PoolKnobs {
        transaction: k.choice("pool_mode", "session", &["session", "transaction"])?
            == "transaction",
        pool_size: k.int("pool_size", "4", 1..=64)?,
        server_lifetime,
        check_unlock_result: k.flag("check_unlock_result")?,
        fencing: k.flag("fencing")?,
        check_held: k.flag("check_held")?,
    };
    Ok(b)
}

/// The simulator's `redis-failover` knobs, as Redis, Sentinel and our client take them.
fn failover_backend(scenario: &Scenario) -> Result<Backend, String> {
    let algo = "redis-failover";
    if let Some(v) = scenario.config.get("repl_delay") {
        return Err(refusal(algo, "repl_delay", v));
    }
    let k = Settings::new(
        algo,
        scenario,
        &[
            "replicas",
            "down_after",
            "promote",
            "wait_replicas",
            "wait_timeout",
            "fencing",
            "fsync",
            "timeout",
            "release",
            "client_clock",
            "drift_factor",
        ],
    )?;
    if k.get("promote", "most-up-to-date") != "most-up-to-date" {
        return Err(refusal(algo, "promote", k.get("promote", "")));
    }
    let replicas = k.int("replicas", "2", 1..=6)?;
    let mut b = plain(
        Service::RedisFailover,
        replicas + 2,
        k.duration("timeout", "100ms")?,
        k.drift_ppm()?,
        k.client_clock("wall")?,
    );
    b.fsync_always = k.choice("fsync", "never", &["never", "always"])? == "always";
    b.failover = FailoverKnobs {
        replicas,
        down_after: k.duration("down_after", "5s")?,
        wait_replicas: k.int("wait_replicas", "0", 0..=replicas)?,
        wait_timeout: k.duration("wait_timeout", "100ms")?,
        fencing: k.flag("fencing")?,
    };
    b.release_delete = k.choice("release", "owner", &["owner", "delete"])? == "delete";
    Ok(b)
}

/// The simulator's `raft-lease` knobs, as an etcd cluster and its client take them.
fn etcd_backend(scenario: &Scenario) -> Result<Backend, String> {
    let algo = "raft-lease";
    let cfg: &BTreeMap<String, String> = &scenario.config;
    let get = |k: &str, d: &'static str| cfg.get(k).map_or(d, |s| s.as_str());
    let known = [
        "servers",
        "tick",
        "election_ticks",
        "fsync",
        "clock",
        "timeout",
        "lock_wait",
        "client_clock",
        "drift_factor",
    ];
    let bugs = ["grant_on_expired_lease", "unlock_by_name", "unlock_retry"];
    if let Some((k, v)) = cfg.iter().find(|(k, _)| bugs.contains(&k.as_str())) {
        return Err(refusal(algo, k, v));
    }
    if let Some(k) = cfg.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(format!("{algo}: setting `{k}` is unknown in real mode"));
    }
    if get("clock", "mono") != "mono" {
        return Err(refusal(algo, "clock", get("clock", "mono")));
    }
    if get("fsync", "always") != "always" {
        return Err(refusal(algo, "fsync", get("fsync", "always")));
    }
    let servers = get("servers", "3")
        .parse::<u32>()
        .ok()
        .filter(|m| (1..=9).contains(m))
        .ok_or_else(|| format!("{algo}: `servers`: {:?} is not 1 to 9", get("servers", "3")))?;
    let tick = knob_duration("tick", get("tick", "20ms")).map_err(|e| format!("{algo}: {e}"))?;
    if tick % MS != 0 {
        return Err(format!(
            "{algo}: `tick`: etcd's --heartbeat-interval is whole milliseconds, not {}",
            get("tick", "20ms")
        ));
    }
    let election_ticks = get("election_ticks", "10")
        .parse::<u32>()
        .ok()
        .filter(|e| (5..=1000).contains(e))
        .ok_or_else(|| {
            format!(
                "{algo}: `election_ticks`: {:?} is not 5 to 1000 (etcd wants an election timeout \
                 of at least 5 heartbeats)",
                get("election_ticks", "10")
            )
        })?;
    let client_clock = match get("client_clock", "mono") {
        "wall" => LocalClock::Wall,
        "mono" => LocalClock::Mono,
        other => {
            return Err(format!(
                "{algo}: `client_clock`: {other:?} is neither wall nor mono"
            ))
        }
    };
    // etcd's lease TTLs are whole seconds, at least 1.5 election timeouts rounded up.
    let election = tick * election_ticks as u64;
    if election >= 50 * SEC {
        return Err(format!(
            "{algo}: an election timeout of {} (tick × election_ticks) is too long for etcd, \
             which refuses 50 s or more",
            fmt_nanos(election as i128)
        ));
    }
    let min_ttl = (election * 3 / 2).div_ceil(SEC).max(1) * SEC;
    let mut ttls = vec![scenario.workload.ttl];
    ttls.extend(scenario.workload.per_client.values().filter_map(|p| p.ttl));
    for ttl in ttls {
        if ttl % SEC != 0 || ttl < min_ttl {
            return Err(format!(
                "{algo}: ttl {} cannot be an etcd lease: etcd grants whole seconds, at least \
                 {} (1.5 election timeouts of {}, rounded up)",
                fmt_nanos(ttl as i128),
                fmt_nanos(min_ttl as i128),
                fmt_nanos(election as i128)
            ));
        }
    }
    Ok(Backend {
        service: Service::RaftLease,
        servers,
        timeout: knob_duration("timeout", get("timeout", "100ms"))
            .map_err(|e| format!("{algo}: {e}"))?,
        drift_ppm: fraction_ppm("drift_factor", get("drift_factor", "0.01"))
            .map_err(|e| format!("{algo}: {e}"))?,
        client_clock,
        fsync_always: true,
        tick,
        election_ticks,
        lock_wait: knob_duration("lock_wait", get("lock_wait", "3s"))
            .map_err(|e| format!("{algo}: {e}"))?,
        db: DbKnobs::default(),
        pg: PoolKnobs::default(),
        failover: FailoverKnobs::default(),
        zk: ZkKnobs::default(),
        release_delete: false,
    })
}

/// The simulator's `zookeeper` knobs, as a ZooKeeper ensemble and our Curator-style client
/// take them.
fn zk_backend(scenario: &Scenario) -> Result<Backend, String> {
    let algo = "zookeeper";
    if let Some(v) = scenario.config.get("follower_lag") {
        return Err(refusal(algo, "follower_lag", v));
    }
    // One follower's own lag (`n3.follower_lag`) is refused for the same reason.
    if let Some((k, v)) = (scenario.config.iter()).find(|(k, _)| k.ends_with(".follower_lag")) {
        return Err(refusal(algo, "follower_lag", v).replacen("follower_lag", k, 1));
    }
    let k = Settings::new(
        algo,
        scenario,
        &[
            "servers",
            "protected",
            "reconnect",
            "sync_before_read",
            "tick",
            "fencing",
            "timeout",
            "lock_wait",
            "client_clock",
            "drift_factor",
        ],
    )?;
    let servers = k.int("servers", "3", 1..=9)?;
    let tick = k.duration("tick", "50ms")?;
    if tick % MS != 0 {
        return Err(format!(
            "{algo}: `tick`: ZooKeeper's tickTime is whole milliseconds, not {}",
            k.get("tick", "")
        ));
    }
    let mut ttls = vec![scenario.workload.ttl];
    ttls.extend(scenario.workload.per_client.values().filter_map(|p| p.ttl));
    for ttl in ttls {
        if ttl < 2 * tick || ttl > 60 * SEC || ttl % MS != 0 {
            return Err(format!(
                "{algo}: ttl {} cannot be a ZooKeeper session timeout here: whole milliseconds \
                 from 2 ticks ({}) to 60 s",
                fmt_nanos(ttl as i128),
                fmt_nanos(2 * tick as i128)
            ));
        }
    }
    let mut b = plain(
        Service::Zookeeper,
        servers,
        0,
        k.drift_ppm()?,
        k.client_clock("mono")?,
    );
    b.tick = tick;
    b.lock_wait = k.duration("lock_wait", "3s")?;
    b.zk = ZkKnobs {
        protected_session: k.choice("protected", "guid", &["guid", "guid+session"])?
            == "guid+session",
        reconnect_any: k.choice("reconnect", "same", &["same", "any"])? == "any",
        sync_before_read: k.flag("sync_before_read")?,
        fencing: flag_knob(algo, "fencing", k.get("fencing", "true"))?,
        timeout: match scenario.config.get("timeout") {
            Some(_) => k.duration("timeout", "1s")?,
            None => 0,
        },
    };
    Ok(b)
}

/// `redis-failover`: whether the plan keeps the first primary (`n1`) from the Sentinel for
/// longer than `down_after` (a partition between them, an isolation of either or of the
/// leader, a pause or crash of the primary), so that a run without a promotion did not
/// exercise the failover its scenario is about.
pub fn expects_failover(scenario: &Scenario, backend: &Backend) -> bool {
    if !backend.sentinel() {
        return false;
    }
    let sentinel = scenario.cluster.servers - 1;
    let long = |d: Nanos| d > backend.failover.down_after;
    scenario.faults.faults.iter().any(|tf| match &tf.fault {
        Fault::Partition { a, b, duration, .. } => {
            long(*duration)
                && ((a.contains(&0) && b.contains(&sentinel))
                    || (b.contains(&0) && a.contains(&sentinel)))
        }
        Fault::Isolate { node, duration, .. } => {
            long(*duration) && (*node == 0 || *node == sentinel)
        }
        Fault::IsolateLeader { duration, .. } => long(*duration),
        Fault::Pause { node, duration, .. } => *node == 0 && long(*duration),
        Fault::Crash {
            node,
            restart_after,
        } => *node == 0 && restart_after.is_none_or(long),
        _ => false,
    })
}

/// A fault's `type`, as files and traces write it (`clock_step`).
pub fn fault_type(f: &Fault) -> String {
    serde_json::to_value(f)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(String::from))
        .unwrap_or_else(|| "?".into())
}

/// How a plan's fault is named in errors when nothing better is known: its time and type
/// (`fault at 1.000s (delay)`); a file's own names (number and line) come from
/// `CampaignFile::fault_names`.
pub fn fault_at(tf: &locksim_core::fault::TimedFault) -> String {
    format!(
        "fault at {} ({})",
        locksim_core::time::fmt_nanos(tf.at as i128),
        fault_type(&tf.fault)
    )
}

/// Checks that real mode can apply every fault of the plan and run the workload.
///
/// # Errors
/// One line naming the fault (as `name` gives it: [`fault_at`], or the file's number and
/// line) or the setting.
///
/// `backend`: the service the run starts; `server_clocks`: whether the clock shim is
/// available, so clock faults on Redis servers can be applied.
pub fn check_plan(
    scenario: &Scenario,
    backend: &Backend,
    server_clocks: bool,
    name: &dyn Fn(&locksim_core::fault::TimedFault) -> String,
) -> Result<(), String> {
    let c = &scenario.cluster;
    if c.nodes() > crate::addr::MAX_NODES {
        return Err(format!(
            "real mode runs at most {} nodes (each gets its own 127.0.0.N address); this cluster has {}",
            crate::addr::MAX_NODES,
            c.nodes()
        ));
    }
    let w = &scenario.workload;
    let renewing = w.renew_every.is_some()
        || w.renew_deadline.is_some()
        || w.per_client.values().any(|p| {
            p.renew_every.is_some_and(|r| r > 0) || p.renew_deadline.is_some_and(|r| r > 0)
        });
    if renewing {
        return Err(
            "`renew_every` / `renew_deadline`: lease renewal is not in real mode yet".into(),
        );
    }
    linux_network(w)?;
    for tf in &scenario.faults.faults {
        let refuse = |why: &str| Err(format!("{}: {why}", name(tf)));
        if tf.after.is_some() {
            return refuse("`after`: faults aimed at events run only in the simulator (real mode injects at times)");
        }
        match &tf.fault {
            Fault::Partition { .. }
            | Fault::PartitionOneway { .. }
            | Fault::Isolate { .. }
            | Fault::Loss { .. }
            | Fault::Heal => {}
            Fault::Delay { .. } | Fault::Duplicate { .. } => {
                return refuse(
                    "real mode cannot delay or duplicate packets on this host (the kernel has no \
                     netem); use partition, isolate or loss",
                )
            }
            Fault::DropReplies { .. } => {}
            Fault::IsolateLeader { .. }
                if !backend.etcd() && !backend.sentinel() && !backend.zookeeper() =>
            {
                return refuse("real mode has no leader to isolate for this algorithm")
            }
            Fault::IsolateLeader { .. } => {}
            Fault::Pause { task, .. } if *task != PauseTask::Process => {
                return refuse("real mode pauses whole processes (SIGSTOP) only, not one task")
            }
            Fault::Pause { .. } => {}
            Fault::Crash { node, .. } => {
                if c.role(*node) == Role::Resource {
                    return refuse("the resource is not crashed, in real mode as in the simulator");
                }
            }
            Fault::ClockStep { node, .. } | Fault::ClockDrift { node, .. } => {
                if c.role(*node) == Role::Resource {
                    return refuse("the resource's clock plays no part in a run");
                }
                if c.role(*node) == Role::Server && backend.etcd() {
                    return refuse(&format!(
                        "{} is an etcd member: etcd is Go (it ignores LD_PRELOAD) and times \
                         leases with its monotonic clock, so its clock cannot be faulted; \
                         client clocks can",
                        c.name(*node)
                    ));
                }
                if c.role(*node) == Role::Server && backend.zookeeper() {
                    return refuse(&format!(
                        "{} is a ZooKeeper server: the clock shim is made for redis-server \
                         and not proven on a JVM, so faulting a member's clock is not in real \
                         mode; client clocks can be faulted (they are virtual)",
                        c.name(*node)
                    ));
                }
                if backend.sentinel() && *node + 1 == c.servers {
                    return refuse(&format!(
                        "{} is the Sentinel: faulting its clock is not in real mode yet; the \
                         data nodes' clocks can be (with the clock shim)",
                        c.name(*node)
                    ));
                }
                if c.role(*node) == Role::Server && backend.postgres() {
                    return refuse(&format!(
                        "{} is a PostgreSQL server or its pooler: faulting its clock is not in real mode \
                         yet; client clocks can be faulted (they are virtual)",
                        c.name(*node)
                    ));
                }
                if c.role(*node) == Role::Server && !server_clocks {
                    return refuse(&format!(
                        "clock faults on {} need the clock shim for redis-server \
                         (liblocksim_clockshim.so beside the locksim binary: cargo build -p \
                         locksim-clockshim, with --release for a release binary; or \
                         LOCKSIM_CLOCKSHIM=PATH); client clocks are virtual",
                        c.name(*node)
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Real runs go over the host's TCP with Linux's defaults, which real mode cannot change:
/// a workload asking for another network is refused rather than judged against one it did
/// not get.
///
/// # Errors
/// One line naming the setting: `network = "datagram"`, `crash = "host"`, or a
/// `tcp_rto_min` / `tcp_retries2` / `tcp_orphan_retries` other than Linux's default (200 ms,
/// 15, 8; `tcp_orphan_retries = 0` is accepted, Linux's own spelling of 8).
pub fn linux_network(w: &locksim_core::Workload) -> Result<(), String> {
    use locksim_core::scenario::{
        TCP_ORPHAN_RETRIES_DEFAULT, TCP_RETRIES2_DEFAULT, TCP_RTO_MIN_DEFAULT,
    };
    use locksim_core::{CrashKind, Network};
    let cannot = |what: String| {
        Err(format!(
            "{what}: real mode runs over the host's TCP with Linux's defaults and cannot apply it"
        ))
    };
    if w.network != Network::Tcp {
        return cannot("`network = \"datagram\"`".into());
    }
    if w.crash != CrashKind::Process {
        return cannot(
            "`crash = \"host\"` (real mode SIGKILLs processes; the host stays up)".into(),
        );
    }
    if w.tcp_rto_min != TCP_RTO_MIN_DEFAULT {
        return cannot(format!(
            "`tcp_rto_min = {}` (Linux: 200ms)",
            fmt_nanos(w.tcp_rto_min as i128)
        ));
    }
    if w.tcp_retries2 != TCP_RETRIES2_DEFAULT {
        return cannot(format!("`tcp_retries2 = {}` (Linux: 15)", w.tcp_retries2));
    }
    if ![0, TCP_ORPHAN_RETRIES_DEFAULT].contains(&w.tcp_orphan_retries) {
        return cannot(format!(
            "`tcp_orphan_retries = {}` (Linux: 8)",
            w.tcp_orphan_retries
        ));
    }
    Ok(())
}

/// Whether the plan has faults that nftables applies (cuts, loss, dropped replies).
pub(crate) fn has_network_faults(s: &Scenario) -> bool {
    s.faults.faults.iter().any(|f| {
        matches!(
            f.fault,
            Fault::Partition { .. }
                | Fault::DropReplies { .. }
                | Fault::PartitionOneway { .. }
                | Fault::Isolate { .. }
                | Fault::IsolateLeader { .. }
                | Fault::Loss { .. }
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use locksim_core::fault::{CutMode, FaultPlan, TimedFault};
    use locksim_core::time::{MS, SEC};
    use locksim_core::{Cluster, Workload};

    fn scenario(algo: &str, config: &[(&str, &str)], faults: Vec<Fault>) -> Scenario {
        Scenario {
            seed: 1,
            algorithm: algo.into(),
            config: config
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            cluster: Cluster {
                servers: if algo == "redlock" { 5 } else { 1 },
                clients: 2,
            },
            workload: Workload::default(),
            fault_kinds: vec![],
            faults: FaultPlan::new(
                faults
                    .into_iter()
                    .map(|fault| TimedFault {
                        at: SEC,
                        fault,
                        after: None,
                    })
                    .collect(),
            ),
        }
    }

    #[test]
    fn backends_take_the_simulators_defaults_and_knobs() {
        let b = backend(&scenario("redlock", &[], vec![])).unwrap();
        assert_eq!((b.servers, b.quorum(), b.timeout), (5, 3, 50 * MS));
        assert_eq!(b.drift_ppm, 10_000);
        assert!(!b.fsync_always && !b.fencing());
        let b = backend(&scenario(
            "central-fencing",
            &[
                ("fsync", "always"),
                ("drift_factor", "0.05"),
                ("timeout", "1s"),
            ],
            vec![],
        ))
        .unwrap();
        assert!(b.fencing() && b.fsync_always);
        assert_eq!((b.drift_ppm, b.timeout, b.servers), (50_000, SEC, 1));
    }

    #[test]
    fn central_runs_without_a_timeout_and_with_a_plain_delete() {
        let b = backend(&scenario(
            "central",
            &[("timeout", "none"), ("release", "delete")],
            vec![],
        ))
        .unwrap();
        assert_eq!(b.timeout, NO_TIMEOUT);
        assert!(b.release_delete);
        let b = backend(&scenario("central-fencing", &[], vec![])).unwrap();
        assert_eq!((b.timeout, b.release_delete), (100 * MS, false));
        let b = backend(&scenario("redlock", &[("release", "owner")], vec![])).unwrap();
        assert!(!b.release_delete);
        let e = backend(&scenario("central", &[("release", "del")], vec![])).unwrap_err();
        assert!(
            e.starts_with("central: `release`") && e.contains("owner nor delete"),
            "{e}"
        );
        let e = backend(&scenario("central", &[("timeout", "never")], vec![])).unwrap_err();
        assert!(e.contains("`timeout`") && e.contains("(or none)"), "{e}");
        let s = scenario("redis-failover", &[("release", "delete")], vec![]);
        assert!(backend(&s).unwrap().release_delete);
    }

    #[test]
    fn each_refused_knob_is_refused_with_the_words_list_shows() {
        for r in REFUSED {
            for algo in r.algorithms {
                let value = match r.values {
                    "when true" | "when set" => "true",
                    _ => "bogus",
                };
                let mut s = scenario(algo, &[(r.key, value)], vec![]);
                s.cluster.servers = match *algo {
                    "redlock" => 5,
                    "redis-failover" => 4,
                    "raft-lease" | "zookeeper" => 3,
                    _ => 1,
                };
                let Err(e) = backend(&s) else {
                    panic!("{algo}: `{} = {value}` ran", r.key)
                };
                if *algo == "raft-lease" && !cfg!(feature = "etcd") {
                    continue;
                }
                assert!(
                    e.contains(&format!("`{} = {value}` cannot run for real", r.key))
                        && e.ends_with(r.why),
                    "{algo}: {e}"
                );
            }
        }
        assert!(refused("pg-advisory", "xact").is_some());
        assert!(refused("central", "timeout").is_none() && refused("central", "release").is_none());
    }

    #[test]
    fn db_lease_takes_the_simulators_spellings() {
        let b = backend(&scenario(
            "db-lease",
            &[
                ("fencing", "yes"),
                ("check_held", "On"),
                ("lock_at_least", "0s"),
            ],
            vec![],
        ))
        .unwrap();
        assert!(b.fencing() && b.db.check_held && b.postgres());
        assert_eq!((b.db.lock_at_least, b.timeout), (0, NO_TIMEOUT));
        let e = backend(&scenario("db-lease", &[("lock_at_least", "-1s")], vec![])).unwrap_err();
        assert!(e.contains("must not be negative"), "{e}");
        let e = backend(&scenario("db-lease", &[("fencing", "maybe")], vec![])).unwrap_err();
        assert!(e.contains("on/off"), "{e}");
    }

    #[test]
    fn what_has_no_real_backend_is_refused_by_name() {
        let e = backend(&scenario("ap-lock", &[], vec![])).unwrap_err();
        assert!(e.contains("ap-lock"), "{e}");
        let e = backend(&scenario("central", &[("clock", "mono")], vec![])).unwrap_err();
        assert!(e.contains("wall clock"), "{e}");
        let e = backend(&scenario("central", &[("fsync", "sometimes")], vec![])).unwrap_err();
        assert!(e.contains("fsync"), "{e}");
    }

    #[test]
    fn zookeeper_takes_the_simulators_knobs_and_refuses_the_rest() {
        let b = backend(&scenario("zookeeper", &[], vec![])).unwrap();
        assert_eq!((b.service, b.servers), (Service::Zookeeper, 3));
        assert_eq!((b.tick, b.lock_wait), (50 * MS, 3 * SEC));
        assert!(b.fencing() && !b.zk.protected_session && !b.zk.reconnect_any);
        assert_eq!((b.zk.timeout, b.client_clock), (0, LocalClock::Mono));
        let b = backend(&scenario(
            "zookeeper",
            &[
                ("protected", "guid+session"),
                ("reconnect", "any"),
                ("fencing", "off"),
                ("timeout", "300ms"),
            ],
            vec![],
        ))
        .unwrap();
        assert!(b.zk.protected_session && b.zk.reconnect_any && !b.fencing());
        assert_eq!(b.zk.timeout, 300 * MS);
        for (k, v, says) in [
            ("follower_lag", "5ms", "follower_lag"),
            ("n3.follower_lag", "2s", "`n3.follower_lag"),
            ("protected", "session", "protected"),
            ("tick", "1500us", "whole milliseconds"),
            ("servers", "10", "servers"),
            ("bug", "1", "unknown in real mode"),
        ] {
            let e = backend(&scenario("zookeeper", &[(k, v)], vec![])).unwrap_err();
            assert!(e.starts_with("zookeeper: ") && e.contains(says), "{e}");
        }
        let mut s = scenario("zookeeper", &[("tick", "2s")], vec![]);
        s.workload.ttl = 3 * SEC;
        let e = backend(&s).unwrap_err();
        assert!(
            e.contains("session timeout") && e.contains("2 ticks"),
            "{e}"
        );
        // A member's clock cannot be faulted; a client's can; the leader can be isolated.
        let mut s = scenario(
            "zookeeper",
            &[],
            vec![
                Fault::IsolateLeader {
                    duration: SEC,
                    mode: Default::default(),
                },
                Fault::ClockStep {
                    node: 3,
                    delta: 1_000_000,
                },
            ],
        );
        s.cluster.servers = 3;
        assert_eq!(check_plan_of(&s, true), Ok(()));
        s.faults.faults[1].fault = Fault::ClockStep {
            node: 1,
            delta: 1_000_000,
        };
        let e = check_plan_of(&s, true).unwrap_err();
        assert!(e.contains("n2 is a ZooKeeper server"), "{e}");
    }

    #[test]
    fn a_failover_is_expected_when_the_primary_is_cut_off_past_down_after() {
        let cut = |d: Nanos| Fault::Partition {
            a: [0].into_iter().collect(),
            b: [3].into_iter().collect(),
            duration: d,
            mode: Default::default(),
        };
        let mut s = scenario(
            "redis-failover",
            &[("down_after", "1s")],
            vec![cut(2 * SEC)],
        );
        s.cluster.servers = 4;
        let b = backend(&s).unwrap();
        assert!(expects_failover(&s, &b));
        s.faults.faults[0].fault = cut(SEC / 2);
        assert!(!expects_failover(&s, &b));
        s.faults.faults[0].fault = Fault::Pause {
            node: 1,
            duration: 5 * SEC,
            task: Default::default(),
        };
        assert!(!expects_failover(&s, &b), "a replica's pause moves nothing");
        let z = scenario("zookeeper", &[], vec![cut(9 * SEC)]);
        assert!(!expects_failover(&z, &backend(&z).unwrap()));
    }

    #[cfg(not(feature = "etcd"))]
    #[test]
    fn raft_lease_needs_the_etcd_feature() {
        let e = backend(&scenario("raft-lease", &[], vec![])).unwrap_err();
        assert!(e.contains("--features etcd") && e.contains("protoc"), "{e}");
    }

    #[cfg(feature = "etcd")]
    #[test]
    fn raft_lease_runs_on_etcd_with_the_simulators_knobs_and_refuses_the_rest() {
        let mut s = scenario("raft-lease", &[("election_ticks", "20")], vec![]);
        s.cluster.servers = 3;
        let b = backend(&s).unwrap();
        assert!(b.etcd() && b.fencing() && b.fsync_always);
        assert_eq!((b.servers, b.tick, b.election_ticks), (3, 20 * MS, 20));
        assert_eq!(
            (b.timeout, b.lock_wait, b.client_clock),
            (100 * MS, 3 * SEC, LocalClock::Mono)
        );
        for (knob, value, needle) in [
            ("clock", "wall", "monotonic"),
            ("fsync", "never", "always fsyncs"),
            ("unlock_by_name", "true", "bug the simulator injects"),
            ("tick", "1500us", "whole milliseconds"),
            ("election_ticks", "3", "5 heartbeats"),
            ("shards", "2", "unknown"),
        ] {
            let e = backend(&scenario("raft-lease", &[(knob, value)], vec![])).unwrap_err();
            assert!(e.contains(needle), "{knob}: {e}");
        }
        // etcd leases are whole seconds, at least 1.5 election timeouts.
        let mut s = scenario("raft-lease", &[], vec![]);
        s.workload.ttl = 1_500 * MS;
        assert!(backend(&s).unwrap_err().contains("whole seconds"));
        s.workload.ttl = SEC;
        let s2 = scenario("raft-lease", &[("election_ticks", "100")], vec![]);
        let mut s2 = s2;
        s2.workload.ttl = SEC;
        assert!(backend(&s2).unwrap_err().contains("at least 3.000s"));
        // The leader can be isolated; an etcd member's clock cannot be faulted.
        let b = backend(&s).unwrap();
        let mut plan = scenario(
            "raft-lease",
            &[],
            vec![Fault::IsolateLeader {
                duration: SEC,
                mode: CutMode::Drop,
            }],
        );
        plan.cluster.servers = 3;
        check_plan(&plan, &b, true, &fault_at).unwrap();
        plan.faults = FaultPlan::new(vec![TimedFault {
            at: SEC,
            fault: Fault::ClockStep { node: 1, delta: 1 },
            after: None,
        }]);
        let e = check_plan(&plan, &b, true, &fault_at).unwrap_err();
        assert!(
            e.contains("fault at 1.000s (clock_step)") && e.contains("etcd member"),
            "{e}"
        );
        // A fault aimed at an event has no time real mode could inject it at.
        plan.faults = FaultPlan::new(vec![TimedFault::after(
            locksim_core::trigger::Trigger {
                nodes: vec![3],
                event: locksim_core::trigger::TriggerEvent::Grants,
                nth: 1,
                delay: 0,
                client: None,
            },
            Fault::IsolateLeader {
                duration: SEC,
                mode: CutMode::Drop,
            },
        )]);
        let e = check_plan(&plan, &b, true, &fault_at).unwrap_err();
        assert!(
            e.contains("`after`: faults aimed at events run only in the simulator"),
            "{e}"
        );
        let redlock = scenario(
            "redlock",
            &[],
            vec![Fault::IsolateLeader {
                duration: SEC,
                mode: CutMode::Drop,
            }],
        );
        assert!(check_plan_of(&redlock, true)
            .unwrap_err()
            .contains("no leader"));
    }

    fn check_plan_of(s: &Scenario, shim: bool) -> Result<(), String> {
        check_plan(s, &backend(s).unwrap(), shim, &fault_at)
    }

    #[test]
    fn tcp_settings_real_mode_cannot_apply_are_refused_by_name() {
        use locksim_core::{CrashKind, Network};
        let mut s = scenario("central", &[], vec![]);
        assert_eq!(check_plan_of(&s, false), Ok(()));
        s.workload.tcp_orphan_retries = 0; // Linux's sysctl default, meaning 8
        assert_eq!(check_plan_of(&s, false), Ok(()));
        type Set = fn(&mut Workload);
        let cases: [(Set, &str); 5] = [
            (
                |w| w.network = Network::Datagram,
                "`network = \"datagram\"`",
            ),
            (|w| w.crash = CrashKind::Host, "`crash = \"host\"`"),
            (|w| w.tcp_rto_min = 2 * SEC, "`tcp_rto_min = 2.000s`"),
            (|w| w.tcp_retries2 = 3, "`tcp_retries2 = 3`"),
            (|w| w.tcp_orphan_retries = 15, "`tcp_orphan_retries = 15`"),
        ];
        for (set, name) in cases {
            let mut s = scenario("central", &[], vec![]);
            set(&mut s.workload);
            let e = check_plan_of(&s, false).unwrap_err();
            assert!(e.starts_with(name) && !e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn faults_real_mode_cannot_apply_are_refused_with_their_number() {
        let ok = vec![
            Fault::Pause {
                node: 5,
                duration: SEC,
                task: PauseTask::Process,
            },
            Fault::Isolate {
                node: 0,
                duration: SEC,
                mode: CutMode::Reset,
            },
            Fault::ClockStep {
                node: 6,
                delta: 1_000,
            },
        ];
        check_plan_of(&scenario("redlock", &[], ok.clone()), false).unwrap();
        let mut bad = ok.clone();
        bad.push(Fault::Delay {
            from: vec![5],
            to: vec![0],
            min: MS,
            max: MS,
            duration: SEC,
        });
        let e = check_plan_of(&scenario("redlock", &[], bad), true).unwrap_err();
        assert!(
            e.starts_with("fault at 1.000s (delay)") && e.contains("netem"),
            "{e}"
        );
        let mut bad = ok;
        bad[2] = Fault::ClockStep { node: 2, delta: 1 };
        let e = check_plan_of(&scenario("redlock", &[], bad.clone()), false).unwrap_err();
        assert!(
            e.contains("fault at 1.000s (clock_step)")
                && e.contains("n3")
                && e.contains("clock shim"),
            "{e}"
        );
        // With the shim, a server's clock step runs; the resource's clock is never faulted.
        check_plan_of(&scenario("redlock", &[], bad.clone()), true).unwrap();
        bad[2] = Fault::ClockStep { node: 7, delta: 1 };
        let e = check_plan_of(&scenario("redlock", &[], bad), true).unwrap_err();
        assert!(e.contains("resource"), "{e}");
    }
}
