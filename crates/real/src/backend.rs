//! The seam between the harness and the real lock services: what a lock client of any
//! backend answers ([`Outcome`], [`Grant`]), what it needs from its client process
//! ([`Host`]), and the one interface every lock client implements ([`Lock`]). Each service's
//! module (`redis`, `sentinel`, `etcd`, `postgres`, `advisory`, `zookeeper`, `adapter`)
//! depends on this module and on nothing that dispatches; [`crate::services`] is the one place
//! that names them all.
//!
//! These are not the simulator's `Outcome`, `Grant` and `LockClient`
//! (`crates/sim/src/protocol.rs`): those are `async` over madsim, carry an `Rc<dyn Any>` for the
//! algorithm and know an `Outcome::NotSent` of the simulated TCP; a real client blocks on real
//! sockets, its grant carries the wire values each service needs to release it (owner value,
//! etcd lease and revision, row version, znode), and this crate depends on `locksim-core`
//! alone (docs/design.md §2), never on `locksim-sim`.

use locksim_core::history::LocalClock;
use locksim_core::{Nanos, NodeId};

/// The deadline of a grant that does not expire (an advisory lock): no validity check fires
/// and none is recorded.
pub const NO_DEADLINE: i64 = i64::MAX;

/// An operation's outcome, in Jepsen's terms (ok / fail / info).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<T> {
    /// Done.
    Ok(T),
    /// Definitely not done.
    Fail(String),
    /// Unknown.
    Unknown(String),
}

/// A granted lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// The owner value stored under the key.
    pub owner: u64,
    /// Fencing token, with `central-fencing`.
    pub token: Option<u64>,
    /// Validity deadline: the clock and its reading.
    pub deadline: (LocalClock, i64),
    /// With etcd: the session's lease and the lock key's creation revision.
    pub etcd: Option<(i64, i64)>,
    /// With PostgreSQL: the lock row's `version` the grant set.
    pub row: Option<u64>,
    /// With ZooKeeper: the lock node's sequence number and GUID (its name).
    pub zk: Option<(u64, u64)>,
}

/// What the client library needs from its host: its clock, and a place to record a lock
/// server's grant (the moment its `OK` reply arrived: the latest the service can have decided).
pub trait Host {
    /// The reading of `clock` now.
    fn now(&self, clock: LocalClock) -> i64;
    /// True time now, ns since the run's start.
    fn true_time(&self) -> Nanos;
    /// Lock server `server` answered at true time `at` that it granted `key`.
    fn granted(&self, at: Nanos, server: u32, key: u32, token: Option<u64>);
    /// Lock server `server` answered at true time `at` that a release without an owner check
    /// deleted `key`'s lock: the owner value `freed` of `holder`'s grant, where the release
    /// meant the one of value `released` (the simulator's `freed` event, judged by S4).
    /// Hosts that keep no history record nothing.
    fn freed(
        &self,
        _at: Nanos,
        _server: u32,
        _key: u32,
        _freed: u64,
        _holder: NodeId,
        _released: u64,
    ) {
    }
}

/// The lock client of one client process, whatever the service: what `crates/real/src/client.rs`
/// drives. One implementation per service module; [`crate::services::lock_client`] picks it.
pub trait Lock {
    /// Takes `key` for a lease of `ttl` ns; `owner` is the fresh random owner value of this
    /// attempt (the value Redis stores; services that make their own ignore it).
    fn acquire(&mut self, host: &dyn Host, key: u32, owner: u64, ttl: Nanos) -> Outcome<Grant>;
    /// Releases `grant` of `key`.
    fn release(&mut self, host: &dyn Host, key: u32, grant: &Grant) -> Outcome<()>;
    /// The service's word on whether this client still holds `key`, for clients that ask it
    /// before each write (`check_held`); `None` (the default): this client does not ask.
    fn check_held(&mut self, _host: &dyn Host, _key: u32) -> Option<Result<(), String>> {
        None
    }
}
