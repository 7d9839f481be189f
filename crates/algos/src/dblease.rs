//! `db-lease`: a lock that is a row in a SQL table, as ShedLock keeps it
//! (<https://github.com/lukas-krecan/ShedLock>, README "JdbcTemplate" and "Lock assertion"):
//! one row `(name, lock_until, locked_at, locked_by)` per lock, on one database node.
//!
//! - **Acquire** inserts the row the first time, and afterwards runs
//!   `UPDATE shedlock SET lock_until = :now + lock_at_most, locked_at = :now, locked_by = :me
//!   WHERE name = :name AND lock_until <= :now`; one updated row means the lock is taken.
//!   `lock_at_most` is the client's lease length (the workload's `ttl`, per client).
//! - **Release** runs `UPDATE shedlock SET lock_until = :unlock WHERE name = :name AND
//!   locked_by = :me` (by host name: a retransmitted unlock ends the same host's next grant,
//!   which the database records for S4), where `:unlock` is `max(now, locked_at + lock_at_least)` (ShedLock's
//!   `lockAtLeastFor` keeps a short task from running twice on machines whose schedules differ).
//! - **Extend** (ShedLock's `KeepAliveLockProvider`/`extend`) runs `UPDATE ... SET lock_until =
//!   :now + lock_at_most WHERE name = :name AND locked_by = :me AND lock_until > :now`.
//! - **Whose clock**: with `time_source = client` (ShedLock's default) `:now` is the client's
//!   wall clock, sent with the statement; with `time_source = db` it is the database's own
//!   clock (`usingDbTime()`, which the README recommends because the application servers'
//!   clocks may differ). Expiry is judged by whichever clock wrote the timestamps.
//! - **Fencing** (`fencing = true`, not in ShedLock): a `version` column incremented by every
//!   acquire, handed to the holder as its fencing token and checked by the resource.
//! - **Held check** (`check_held = true`, in the spirit of ShedLock's `LockAssert`, which only
//!   checks the caller's thread): before each write (after its local work) the holder runs
//!   `SELECT lock_until, locked_by FROM shedlock WHERE name = :name` and gives up (a `lost`
//!   event, `held check: ...`, no write) unless the row is locked by its host and
//!   `lock_until > :now`, `:now` from the clock `time_source` names (the statement carries the
//!   client's, or the database uses its own), or when no answer comes. Check-then-act: the row
//!   can be taken between the answer and the write; fencing closes that gap.
//!
//! **No statement timeout** (`timeout = none`): ShedLock's `JdbcTemplateLockProvider` runs on a
//! `JdbcTemplate` whose `queryTimeout` is -1 (the driver's default), and pgjdbc's
//! `socketTimeout` and PostgreSQL's `statement_timeout` are 0, off; a statement whose packets a
//! cut swallows waits until TCP retransmits it after the heal or gives up.
//!
//! The database commits every statement durably (it survives a crash), and records a `grant`
//! event when an acquire's update takes the row. The client's validity is Redlock's
//! `start + lock_at_most − drift` on its own clock (a careful client that checks its lease).

use std::collections::BTreeMap;
use std::rc::Rc;

use locksim_core::history::EventKind;
use locksim_core::{Nanos, NodeId, Workload};
use locksim_sim::{
    async_trait, Grant, LocalClock, LockAlgorithm, LockClient, NodeCtx, Outcome, Validity,
};

use crate::knobs::{Knob, Knobs};
use crate::lockserver::{call_failed, valid_until};

/// Knobs of `db-lease`.
pub const KNOBS: &[Knob] = &[
    Knob {
        key: "time_source",
        default: "client",
        help: "whose wall clock writes and judges lock_until: client (ShedLock's default) | db (usingDbTime)",
    },
    Knob {
        key: "lock_at_least",
        default: "0",
        help: "ShedLock's lockAtLeastFor: a release keeps the row locked until locked_at + this (0: until now)",
    },
    Knob {
        key: "fencing",
        default: "false",
        help: "a version column bumped by each acquire, handed out as the fencing token",
    },
    Knob {
        key: "check_held",
        default: "false",
        help: "before each write read the row (lock_until, locked_by); give up unless it is ours and not expired",
    },
    Knob {
        key: "timeout",
        default: "none",
        help: "client's per-statement timeout, or none: ShedLock's JdbcTemplate sets no query timeout (Spring's queryTimeout -1: the driver's), pgjdbc's socketTimeout and PostgreSQL's statement_timeout default to 0 (off), so a statement into a black hole waits until TCP gives up or the cut heals",
    },
    crate::knobs::CLIENT_CLOCK,
    crate::knobs::DRIFT_FACTOR,
];

/// Whose clock supplies `now` in the statements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeSource {
    /// The client's wall clock, sent as a statement parameter (ShedLock's default).
    Client,
    /// The database's wall clock (`usingDbTime()`).
    Db,
}

/// The `db-lease` algorithm.
#[derive(Debug, Clone)]
pub struct DbLease {
    time_source: TimeSource,
    lock_at_least: Nanos,
    fencing: bool,
    check_held: bool,
    timeout: Nanos,
    drift_ppm: u64,
    client_clock: LocalClock,
}

impl DbLease {
    /// Builds `db-lease` from its knobs.
    ///
    /// # Errors
    /// A message naming a bad or unknown knob.
    pub fn from_config(config: &BTreeMap<String, String>, w: &Workload) -> Result<Self, String> {
        let k = Knobs::new("db-lease", config, KNOBS)?;
        let drift_ppm = k.fraction_ppm("drift_factor")?;
        crate::knobs::check_ttl("db-lease", w.min_ttl(), drift_ppm)?;
        Ok(DbLease {
            time_source: match k.choice("time_source", &["client", "db"])? {
                "client" => TimeSource::Client,
                _ => TimeSource::Db,
            },
            lock_at_least: k.duration_or_zero("lock_at_least")?,
            fencing: k.flag("fencing")?,
            check_held: k.flag("check_held")?,
            timeout: k.timeout("timeout")?,
            drift_ppm,
            client_clock: crate::knobs::local_clock(&k, "client_clock")?,
        })
    }
}

/// A statement, with `now` filled in by the client under `time_source = client`.
#[derive(Debug, Clone)]
pub enum Stmt {
    /// Insert the row, or take it `WHERE lock_until <= now`, for `at_most` ns.
    Lock {
        name: u32,
        me: NodeId,
        now: Option<i64>,
        at_most: Nanos,
    },
    /// `SET lock_until = max(now, locked_at + at_least) WHERE locked_by = me`. `grant` is the
    /// recorder's annotation (the row version the client's acquire set), not part of the SQL:
    /// the statement unlocks by host name, so it can end the same host's *next* grant (a
    /// retransmitted unlock), which the database records for S4.
    Unlock {
        name: u32,
        me: NodeId,
        now: Option<i64>,
        at_least: Nanos,
        grant: u64,
    },
    /// `SET lock_until = now + at_most WHERE locked_by = me AND lock_until > now`.
    Extend {
        name: u32,
        me: NodeId,
        now: Option<i64>,
        at_most: Nanos,
    },
    /// `SELECT lock_until, locked_by WHERE name = name`, judged as the client judges it: one
    /// row when `locked_by = me AND lock_until > now` (`check_held`). Changes nothing.
    Read {
        name: u32,
        me: NodeId,
        now: Option<i64>,
    },
}

/// The number of rows a statement updated, and the row's version after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Updated {
    /// 1 when the statement changed the row, 0 otherwise.
    pub rows: u32,
    /// The row's `version` column after the statement.
    pub version: u64,
}

/// One row of the lock table; times are readings of the wall clock that wrote them, ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    /// Until when the row is locked.
    pub lock_until: i64,
    /// When it was last locked.
    pub locked_at: i64,
    /// The client node that locked it.
    pub locked_by: NodeId,
    /// Incremented by every acquire.
    pub version: u64,
}

/// The lock table and its statements, apart from the network (unit-testable).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    /// Rows by lock name.
    pub rows: BTreeMap<u32, Row>,
}

impl Table {
    /// Executes `stmt` with `db_now` as the database's clock reading; `now` in the statement
    /// (the client's) wins when present.
    pub fn execute(&mut self, stmt: &Stmt, db_now: i64) -> Updated {
        let none = |v| Updated {
            rows: 0,
            version: v,
        };
        match *stmt {
            Stmt::Lock {
                name,
                me,
                now,
                at_most,
            } => {
                let now = now.unwrap_or(db_now);
                let version = self.rows.get(&name).map_or(0, |r| r.version);
                match self.rows.get(&name) {
                    Some(r) if r.lock_until > now => none(version),
                    _ => {
                        let row = Row {
                            lock_until: now.saturating_add(at_most as i64),
                            locked_at: now,
                            locked_by: me,
                            version: version + 1,
                        };
                        self.rows.insert(name, row);
                        Updated {
                            rows: 1,
                            version: row.version,
                        }
                    }
                }
            }
            Stmt::Unlock {
                name,
                me,
                now,
                at_least,
                ..
            } => {
                let now = now.unwrap_or(db_now);
                match self.rows.get_mut(&name) {
                    Some(r) if r.locked_by == me => {
                        r.lock_until = now.max(r.locked_at.saturating_add(at_least as i64));
                        Updated {
                            rows: 1,
                            version: r.version,
                        }
                    }
                    r => none(r.map_or(0, |r| r.version)),
                }
            }
            Stmt::Extend {
                name,
                me,
                now,
                at_most,
            } => {
                let now = now.unwrap_or(db_now);
                match self.rows.get_mut(&name) {
                    Some(r) if r.locked_by == me && r.lock_until > now => {
                        r.lock_until = now.saturating_add(at_most as i64);
                        Updated {
                            rows: 1,
                            version: r.version,
                        }
                    }
                    r => none(r.map_or(0, |r| r.version)),
                }
            }
            Stmt::Read { name, me, now } => {
                let now = now.unwrap_or(db_now);
                match self.rows.get(&name) {
                    Some(r) if r.locked_by == me && r.lock_until > now => Updated {
                        rows: 1,
                        version: r.version,
                    },
                    r => none(r.map_or(0, |r| r.version)),
                }
            }
        }
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.rows.len() * 36);
        for (name, r) in &self.rows {
            out.extend_from_slice(&name.to_le_bytes());
            out.extend_from_slice(&r.lock_until.to_le_bytes());
            out.extend_from_slice(&r.locked_at.to_le_bytes());
            out.extend_from_slice(&r.locked_by.to_le_bytes());
            out.extend_from_slice(&r.version.to_le_bytes());
        }
        out
    }

    fn decode(b: &[u8]) -> Table {
        let i64_at = |i: usize| i64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let mut rows = BTreeMap::new();
        let mut i = 0;
        while i + 32 <= b.len() {
            rows.insert(
                u32_at(i),
                Row {
                    lock_until: i64_at(i + 4),
                    locked_at: i64_at(i + 12),
                    locked_by: u32_at(i + 20),
                    version: i64_at(i + 24) as u64,
                },
            );
            i += 32;
        }
        Table { rows }
    }
}

const FILE: &str = "shedlock";

struct Client {
    ctx: NodeCtx,
    cfg: DbLease,
}

impl Client {
    fn now(&self) -> Option<i64> {
        (self.cfg.time_source == TimeSource::Client).then(|| self.ctx.wall_now())
    }
    async fn exec(&self, stmt: Stmt) -> Result<Updated, locksim_sim::CallError> {
        self.ctx
            .call::<Stmt, Updated>(0, stmt, self.cfg.timeout)
            .await
    }
    fn validity(&self, start: i64, ttl: Nanos) -> Validity {
        Validity {
            clock: self.cfg.client_clock,
            until: valid_until(start, ttl, self.cfg.drift_ppm),
        }
    }
}

#[async_trait(?Send)]
impl LockClient for Client {
    async fn acquire(&self, key: u32, ttl: Nanos) -> Outcome<Grant> {
        let start = self.ctx.now(self.cfg.client_clock);
        let stmt = Stmt::Lock {
            name: key,
            me: self.ctx.id(),
            now: self.now(),
            at_most: ttl,
        };
        match self.exec(stmt).await {
            Ok(Updated { rows: 1, version }) => Outcome::Ok(Grant {
                key,
                token: self.cfg.fencing.then_some(version),
                valid_until: Some(self.validity(start, ttl)),
                private: Rc::new(version),
            }),
            Ok(_) => Outcome::Fail("0 rows updated: lock_until is in the future".into()),
            Err(e) => call_failed(e),
        }
    }

    async fn release(&self, grant: &Grant) -> Outcome<()> {
        let stmt = Stmt::Unlock {
            name: grant.key,
            me: self.ctx.id(),
            now: self.now(),
            at_least: self.cfg.lock_at_least,
            grant: *grant.private.downcast_ref::<u64>().expect("db-lease grant"),
        };
        match self.exec(stmt).await {
            Ok(Updated { rows: 1, .. }) => Outcome::Ok(()),
            Ok(_) => Outcome::Fail("0 rows updated: locked by another client".into()),
            Err(e) => call_failed(e),
        }
    }

    async fn extend(&self, grant: &Grant, ttl: Nanos) -> Outcome<Option<Validity>> {
        let start = self.ctx.now(self.cfg.client_clock);
        let stmt = Stmt::Extend {
            name: grant.key,
            me: self.ctx.id(),
            now: self.now(),
            at_most: ttl,
        };
        match self.exec(stmt).await {
            Ok(Updated { rows: 1, .. }) => Outcome::Ok(Some(self.validity(start, ttl))),
            Ok(_) => Outcome::Fail("0 rows updated: the lock expired or was taken".into()),
            Err(e) => call_failed(e),
        }
    }

    async fn check_held(&self, grant: &Grant) -> Option<Result<(), String>> {
        if !self.cfg.check_held {
            return None;
        }
        let stmt = Stmt::Read {
            name: grant.key,
            me: self.ctx.id(),
            now: self.now(),
        };
        Some(match self.exec(stmt).await {
            Ok(Updated { rows: 1, .. }) => Ok(()),
            Ok(_) => Err("the row is locked by another host or its lock_until has passed".into()),
            Err(e) => Err(e.to_string()),
        })
    }
}

#[async_trait(?Send)]
impl LockAlgorithm for DbLease {
    fn name(&self) -> &str {
        "db-lease"
    }
    fn servers(&self) -> u32 {
        1
    }
    async fn serve(&self, ctx: NodeCtx) {
        let mut table = ctx.disk().read(FILE).map(Table::decode).unwrap_or_default();
        loop {
            let msg = ctx.recv().await;
            let Some(stmt) = msg.body.downcast_ref::<Stmt>() else {
                continue;
            };
            let db_now = ctx.wall_now();
            // The row an unlock finds still locked: what it frees, for S4.
            let unlocking = match *stmt {
                Stmt::Unlock {
                    name, now, grant, ..
                } => table
                    .rows
                    .get(&name)
                    .filter(|r| r.lock_until > now.unwrap_or(db_now))
                    .map(|r| (name, *r, grant)),
                _ => None,
            };
            let out = table.execute(stmt, db_now);
            if let (1, Some((name, row, grant))) = (out.rows, unlocking) {
                ctx.record(EventKind::Freed {
                    key: name,
                    client: msg.from,
                    freed: row.version,
                    released: grant,
                    holder: Some(row.locked_by),
                });
            }
            if out.rows == 1 && !matches!(stmt, Stmt::Read { .. }) {
                if let Stmt::Lock { name, .. } = *stmt {
                    ctx.record(EventKind::Grant {
                        key: name,
                        client: msg.from,
                        token: self.fencing.then_some(out.version),
                    });
                }
                let mut d = ctx.disk();
                d.write(FILE, table.encode());
                d.fsync();
            }
            ctx.reply(&msg, out).await;
        }
    }
    fn liveness(&self) -> locksim_sim::LivenessHints {
        locksim_sim::LivenessHints {
            // A release keeps the row locked for up to lock_at_least after its acquire.
            lock_delay: self.lock_at_least,
            attempt: Some(locksim_sim::finite(self.timeout)),
            election: 0,
        }
    }
    fn client(&self, ctx: NodeCtx) -> Rc<dyn LockClient> {
        let mut cfg = self.clone();
        cfg.client_clock = ctx.client_clock(cfg.client_clock);
        Rc::new(Client { ctx, cfg })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    fn lock(me: NodeId, now: i64) -> Stmt {
        Stmt::Lock {
            name: 0,
            me,
            now: Some(now),
            at_most: 10 * S as u64,
        }
    }

    #[test]
    fn a_row_is_taken_only_once_lock_until_has_passed_by_the_callers_clock() {
        let mut t = Table::default();
        assert_eq!(t.execute(&lock(1, 0), 0).rows, 1, "the insert");
        assert_eq!(t.execute(&lock(2, 9 * S), 0).rows, 0, "still locked");
        // A client whose clock reads 10 s already (true time may be far less) takes it.
        let u = t.execute(&lock(2, 10 * S), 0);
        assert_eq!((u.rows, u.version), (1, 2));
        assert_eq!(t.rows[&0].locked_by, 2);
    }

    #[test]
    fn the_database_clock_is_used_when_the_statement_carries_none() {
        let mut t = Table::default();
        let db = |me| Stmt::Lock {
            name: 0,
            me,
            now: None,
            at_most: 10 * S as u64,
        };
        assert_eq!(t.execute(&db(1), 5 * S).rows, 1);
        assert_eq!(t.rows[&0].lock_until, 15 * S);
        assert_eq!(t.execute(&db(2), 14 * S).rows, 0);
        assert_eq!(t.execute(&db(2), 15 * S).rows, 1);
    }

    #[test]
    fn unlock_is_owner_checked_and_keeps_lock_at_least() {
        let mut t = Table::default();
        t.execute(&lock(1, 0), 0);
        let unlock = |me, now| Stmt::Unlock {
            name: 0,
            me,
            now: Some(now),
            at_least: 3 * S as u64,
            grant: 1,
        };
        assert_eq!(t.execute(&unlock(2, S), 0).rows, 0, "not the owner");
        assert_eq!(t.rows[&0].lock_until, 10 * S);
        assert_eq!(t.execute(&unlock(1, S), 0).rows, 1);
        assert_eq!(t.rows[&0].lock_until, 3 * S, "locked_at + lock_at_least");
        assert_eq!(t.execute(&lock(2, 2 * S), 0).rows, 0);
        assert_eq!(t.execute(&lock(2, 3 * S), 0).rows, 1);
    }

    #[test]
    fn extend_needs_a_live_row_of_ones_own() {
        let mut t = Table::default();
        t.execute(&lock(1, 0), 0);
        let ext = |me, now| Stmt::Extend {
            name: 0,
            me,
            now: Some(now),
            at_most: 10 * S as u64,
        };
        assert_eq!(t.execute(&ext(2, S), 0).rows, 0);
        assert_eq!(t.execute(&ext(1, 5 * S), 0).rows, 1);
        assert_eq!(t.rows[&0].lock_until, 15 * S);
        assert_eq!(t.execute(&ext(1, 15 * S), 0).rows, 0, "expired");
    }

    #[test]
    fn a_read_finds_the_row_held_only_by_its_owner_before_lock_until() {
        let mut t = Table::default();
        let read = |me, now| Stmt::Read {
            name: 0,
            me,
            now: Some(now),
        };
        assert_eq!(t.execute(&read(1, 0), 0).rows, 0, "no row yet");
        t.execute(&lock(1, 0), 0);
        let before = t.clone();
        assert_eq!(t.execute(&read(1, 9 * S), 0).rows, 1);
        assert_eq!(t.execute(&read(2, 9 * S), 0).rows, 0, "not c2's");
        assert_eq!(t.execute(&read(1, 10 * S), 0).rows, 0, "lock_until passed");
        let by_db = Stmt::Read {
            name: 0,
            me: 1,
            now: None,
        };
        assert_eq!(t.execute(&by_db, 10 * S).rows, 0, "by the database's clock");
        assert_eq!(t, before, "a read changes nothing");
    }

    #[test]
    fn the_table_survives_encoding() {
        let mut t = Table::default();
        t.execute(&lock(1, 7), 0);
        t.execute(
            &Stmt::Lock {
                name: 3,
                me: 4,
                now: Some(-5),
                at_most: 1,
            },
            0,
        );
        assert_eq!(Table::decode(&t.encode()), t);
    }

    #[test]
    fn bad_knobs_are_named() {
        let w = Workload::default();
        let cfg = |k: &str, v: &str| BTreeMap::from([(k.to_string(), v.to_string())]);
        let e = DbLease::from_config(&cfg("time_source", "ntp"), &w).unwrap_err();
        assert!(
            e.contains("time_source") && e.contains("client or db"),
            "{e}"
        );
        let e = DbLease::from_config(&cfg("lock_at_least", "-1s"), &w).unwrap_err();
        assert!(e.contains("lock_at_least"), "{e}");
        assert!(DbLease::from_config(&cfg("lock_at_least", "0"), &w).is_ok());
        let e = DbLease::from_config(&cfg("check_held", "maybe"), &w).unwrap_err();
        assert!(e.contains("check_held"), "{e}");
    }
}
