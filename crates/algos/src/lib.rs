//! # locksim-algos
//!
//! The lock algorithms that ship with locksim, each an implementation of
//! [`locksim_sim::LockAlgorithm`]:
//!
//! | name | what |
//! |---|---|
//! | `central` | one server, SET-if-absent with TTL, owner-checked release |
//! | `central-fencing` | the same, plus a strictly increasing fencing token per grant |
//! | `redlock` | N independent masters, majority, validity = TTL − elapsed − drift |
//! | `raft-lease` | etcd-style lease lock on a Raft log (raft-rs), revision = fencing token |
//! | `ap-lock` | members with their own lock tables, replicated in the background (case K6) |
//! | `k8s-lease` | client-go leader election on a Lease record (resourceVersion CAS) |
//! | `pg-advisory` | PostgreSQL session advisory locks behind a PgBouncer-style pooler (no expiry) |
//! | `db-lease` | a ShedLock-style row with `lock_until`, on the client's or the database's clock |
//! | `redis-failover` | a Redis primary, async replicas, a Sentinel-like monitor; `WAIT` optional |
//! | `consul-session` | Consul sessions, `?acquire=` and lock-delay on the `raft-lease` server core |
//! | `zookeeper` | a Zab-like ensemble with sessions; Curator's `InterProcessMutex` recipe |
//!
//! [`build`] turns a name and `key=value` knobs into an algorithm; [`algorithms`] and
//! [`knobs`] describe what exists, for `--help` and error messages. Your own algorithm needs
//! no registration to be tested (implement the trait and pass it to `locksim_sim::run` or to a
//! `locksim_explore` campaign); [`register`] it, once, before anything asks for it by name, and
//! every name-driven part of locksim (scenario files, traces, the command line through
//! `locksim_cli::main_with`) finds it beside the built-in ones.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use locksim_core::{Nanos, Workload};
use locksim_sim::LockAlgorithm;

pub mod aplock;
pub mod central;
pub mod dblease;
mod inputs;
pub mod k8slease;
pub mod knobs;
pub mod lockserver;
pub mod pgadvisory;
pub mod raftlease;
pub mod redlock;
// Replicated lock services (issue #13).
pub mod consul;
pub mod redisfailover;
pub mod zookeeper;

pub use knobs::Knob;

/// Registered algorithms: name and one line of description.
pub const ALGORITHMS: &[(&str, &str)] = &[
    (
        "central",
        "one server, SET-if-absent with TTL (a single Redis)",
    ),
    (
        "central-fencing",
        "one server that also issues fencing tokens the resource checks",
    ),
    (
        "redlock",
        "N independent masters, majority, validity = TTL - elapsed - drift",
    ),
    (
        "raft-lease",
        "etcd-style lease lock on a Raft log (raft-rs); the lock key's revision is the fencing token",
    ),
    (
        "ap-lock",
        "members with their own lock tables, replicated in the background: available, not safe (K6)",
    ),
    // Issue #14: lease-record locks (append new entries below).
    (
        "db-lease",
        "a ShedLock-style row: UPDATE ... WHERE lock_until <= now, on the client's or the database's clock",
    ),
    (
        "k8s-lease",
        "Kubernetes leader election (client-go) on a Lease record with resourceVersion CAS; expiry judged by each candidate's own observation",
    ),
    (
        "pg-advisory",
        "PostgreSQL session advisory locks (reentrant, owned by the backend) behind a PgBouncer-style pooler; no expiry",
    ),
    // Replicated lock services (issue #13); not in the default matrix.
    (
        "redis-failover",
        "a Redis primary with async replicas and a Sentinel-like monitor that promotes one (WAIT optional)",
    ),
    (
        "consul-session",
        "Consul sessions and ?acquire= locks with lock-delay, on the raft-lease server core",
    ),
    (
        "zookeeper",
        "a ZooKeeper-style ensemble (Zab-like broadcast, sessions) and Curator's InterProcessMutex",
    ),
];

/// The algorithms of the default campaign matrix: the ones a user chooses between.
/// (`ap-lock` is a demonstration of case K6 and unsafe even without faults.)
pub const DEFAULT_MATRIX: [&str; 4] = ["central", "central-fencing", "redlock", "raft-lease"];

/// A third party's algorithm, known by name to scenario files, traces and the command line.
#[derive(Clone, Copy)]
pub struct Registration {
    /// The name `--algo` and files' `algorithm` give; not one of the built-in names.
    pub name: &'static str,
    /// One line of description, for `locksim list`.
    pub what: &'static str,
    /// Its settings (`--set key=value`, a file's `[settings]`), with defaults and help.
    pub knobs: &'static [Knob],
    /// Builds it from the settings given (every key is one of `knobs`; a missing key means its
    /// default: [`knobs::Knobs`] reads them so) and the run's workload.
    ///
    /// # Errors
    /// A bad setting, in words that name it and its valid values.
    pub build: BuildFn,
}

/// Builds an algorithm from its settings (`key → value` text) and the run's workload.
pub type BuildFn =
    fn(&BTreeMap<String, String>, &Workload) -> Result<Arc<dyn LockAlgorithm>, String>;

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

static REGISTERED: OnceLock<Vec<Registration>> = OnceLock::new();

/// Makes `algorithms` known by name beside the built-in ones, for the rest of the process.
/// Calling it again with the same names is a no-op, so that every test of a crate may
/// register the crate's algorithms first, in whatever order the tests run.
///
/// # Errors
/// A second call with other names (the set is fixed once anything may have looked a name
/// up), a name that does not start with `a-z`, holds a character other than `a-z`, `0-9`, `-`
/// and `_`, or is taken (built-in or given twice), or a setting key outside `[a-z][a-z0-9_]*`; [`build`]
/// refuses an algorithm whose `name()` is not the name it was registered under (traces record
/// `name()`).
pub fn register(algorithms: Vec<Registration>) -> Result<(), String> {
    // A lower-case word: a letter, then letters, digits, `_` and the bytes of `more`.
    let word = |s: &str, more: &[u8]| {
        s.starts_with(|c: char| c.is_ascii_lowercase())
            && s.bytes().all(|b| {
                b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || more.contains(&b)
            })
    };
    for (i, r) in algorithms.iter().enumerate() {
        if !word(r.name, b"-") {
            return Err(format!(
                "algorithm name `{}`: use lower-case letters, digits, `-` and `_`, starting with a letter",
                r.name
            ));
        }
        if let Some(k) = r.knobs.iter().find(|k| !word(k.key, b"")) {
            return Err(format!(
                "algorithm `{}`: setting `{}`: use lower-case letters, digits and `_`, starting with a letter",
                r.name, k.key
            ));
        }
        if ALGORITHMS.iter().any(|a| a.0 == r.name) {
            return Err(format!(
                "algorithm name `{}` is a built-in algorithm's: choose another",
                r.name
            ));
        }
        if algorithms[..i].iter().any(|o| o.name == r.name) {
            return Err(format!("algorithm `{}` is registered twice", r.name));
        }
    }
    let names = |rs: &[Registration]| rs.iter().map(|r| r.name).collect::<Vec<_>>();
    let wanted = names(&algorithms);
    let set = REGISTERED.get_or_init(|| algorithms);
    if names(set) == wanted {
        Ok(())
    } else {
        Err(format!(
            "algorithms can be registered once per process: {} are, so {} cannot be",
            names(set).join(", "),
            wanted.join(", ")
        ))
    }
}

/// The algorithm registered as `name`, if any.
pub fn registered(name: &str) -> Option<&'static Registration> {
    REGISTERED.get()?.iter().find(|r| r.name == name)
}

/// Every algorithm known by name, (name, description): the built-in ones ([`ALGORITHMS`]),
/// then the registered ones in the order given.
pub fn algorithms() -> Vec<(&'static str, &'static str)> {
    let mut all = ALGORITHMS.to_vec();
    all.extend(
        REGISTERED
            .get()
            .into_iter()
            .flatten()
            .map(|r| (r.name, r.what)),
    );
    all
}

/// Names of the known algorithms (built-in and registered), comma-separated.
pub fn names() -> String {
    algorithms()
        .iter()
        .map(|a| a.0)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The knobs of algorithm `name`, or `None` when there is no such algorithm.
pub fn knobs(name: &str) -> Option<&'static [Knob]> {
    match name {
        "central" | "central-fencing" => Some(central::KNOBS),
        "redlock" => Some(redlock::KNOBS),
        "raft-lease" => Some(raftlease::KNOBS),
        "ap-lock" => Some(aplock::KNOBS),
        "db-lease" => Some(dblease::KNOBS),
        "k8s-lease" => Some(k8slease::KNOBS),
        "pg-advisory" => Some(pgadvisory::KNOBS),
        "redis-failover" => Some(redisfailover::KNOBS),
        "consul-session" => Some(consul::KNOBS),
        "zookeeper" => Some(zookeeper::KNOBS),
        other => registered(other).map(|r| r.knobs),
    }
}

/// Settings that algorithm `name` accepts under its own system's name for a workload setting:
/// (alias, workload setting). `zookeeper`'s `session_timeout` is the workload's `ttl` (the
/// ZooKeeper Administrator's Guide's and Curator's name for a session's lease). The alias is
/// listed among the algorithm's knobs for `locksim list`; callers turn it into the workload
/// setting before building (giving both is an error).
pub fn workload_aliases(name: &str) -> &'static [(&'static str, &'static str)] {
    match name {
        "zookeeper" => &[("session_timeout", "ttl")],
        _ => &[],
    }
}

/// A workload setting whose default algorithm `name` takes from its real client library: the
/// library's default as a fraction of its default lease length, applied to the run's `ttl`
/// (client-go's `RetryPeriod` of 2 s with a 15 s `LeaseDuration` is `ttl × 2/15`).
#[derive(Debug, Clone, Copy)]
pub struct ClientDefault {
    /// The workload setting (`renew_every`, `renew_deadline`, `retry_delay`: the last is
    /// workload-wide, not scaled to a client's own ttl).
    pub key: &'static str,
    /// Numerator of the fraction of `ttl`.
    pub num: u64,
    /// Denominator of the fraction of `ttl`.
    pub den: u64,
    /// What the library ships, and where that is written.
    pub source: &'static str,
}

impl ClientDefault {
    /// The value for a run whose lease length is `ttl` ns.
    pub fn value(&self, ttl: Nanos) -> Nanos {
        (ttl as u128 * self.num as u128 / self.den as u128) as Nanos
    }
}

/// Workload settings whose defaults algorithm `name` takes from its real client library
/// (every other workload setting keeps the workload's default). A setting the user gives,
/// in the workload's section or a client's table, wins.
pub fn client_defaults(name: &str) -> &'static [ClientDefault] {
    match name {
        "k8s-lease" => k8slease::CLIENT_DEFAULTS,
        _ => &[],
    }
}

/// Builds algorithm `name` with knobs `config`.
///
/// # Errors
/// An unknown name (listing the valid ones) or a bad knob (naming it and its valid values).
pub fn build(
    name: &str,
    config: &BTreeMap<String, String>,
    workload: &Workload,
) -> Result<Arc<dyn LockAlgorithm>, String> {
    match name {
        "central" => Ok(Arc::new(central::Central::from_config(
            false, config, workload,
        )?)),
        "central-fencing" => Ok(Arc::new(central::Central::from_config(
            true, config, workload,
        )?)),
        "redlock" => Ok(Arc::new(redlock::Redlock::from_config(config, workload)?)),
        "raft-lease" => Ok(Arc::new(raftlease::RaftLease::from_config(
            config, workload,
        )?)),
        "ap-lock" => Ok(Arc::new(aplock::ApLock::from_config(config, workload)?)),
        "db-lease" => Ok(Arc::new(dblease::DbLease::from_config(config, workload)?)),
        "k8s-lease" => Ok(Arc::new(k8slease::K8sLease::from_config(config, workload)?)),
        "pg-advisory" => Ok(Arc::new(pgadvisory::PgAdvisory::from_config(
            config, workload,
        )?)),
        "redis-failover" => Ok(Arc::new(redisfailover::RedisFailover::from_config(
            config, workload,
        )?)),
        "consul-session" => Ok(Arc::new(consul::ConsulSession::from_config(
            config, workload,
        )?)),
        "zookeeper" => Ok(Arc::new(zookeeper::Zookeeper::from_config(
            config, workload,
        )?)),
        other => match registered(other) {
            Some(r) => {
                let algo = (r.build)(config, workload)?;
                if algo.name() != r.name {
                    // Traces record `name()`: a trace of another name would not replay by it.
                    return Err(format!(
                        "algorithm `{}` is registered under that name, but its build returned one whose name() is `{}`: they must be the same",
                        r.name,
                        algo.name()
                    ));
                }
                Ok(algo)
            }
            None => Err(format!("unknown algorithm `{other}` (valid: {})", names())),
        },
    }
}
