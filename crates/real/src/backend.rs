//! The seam between the harness and the real lock services. The client half: what a lock
//! client of any backend answers ([`Outcome`], [`Grant`]), what it needs from its client
//! process ([`Host`]), and the one interface every lock client implements ([`Lock`]). The
//! server half: what the harness asks of a service's servers ([`ServerSide`]: their version,
//! ports, source NAT, command, readiness, leader, own records and log files), and what they
//! need from the harness ([`ServerHost`]). Each service's module (`redis`, `sentinel`, `etcd`,
//! `postgres`, `advisory`, `zookeeper`, `adapter`) depends on this module and on nothing that
//! dispatches; [`crate::services`] is the one place that names them all.
//!
//! These are not the simulator's `Outcome`, `Grant` and `LockClient`
//! (`crates/sim/src/protocol.rs`): those are `async` over madsim, carry an `Rc<dyn Any>` for the
//! algorithm and know an `Outcome::NotSent` of the simulated TCP; a real client blocks on real
//! sockets, its grant carries the wire values each service needs to release it (owner value,
//! etcd lease and revision, row version, znode), and this crate depends on `locksim-core`
//! alone (docs/design.md §2), never on `locksim-sim`.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread::JoinHandle;

use locksim_core::clock::Clock;
use locksim_core::history::{Event, LocalClock};
use locksim_core::{Cluster, Nanos, NodeId, Scenario};

use crate::addr::ip;
use crate::clockfile::ClockFile;
use crate::support::Backend;
use crate::{RealError, RealOptions};

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

/// The server half of a real service: what the harness asks of its servers, whatever the
/// service. One implementation per service module; [`crate::services::server_side`] picks it.
pub trait ServerSide {
    /// What the servers say they are (`Redis server v=7.0.15 …`), for the run's notes
    /// (`redlock on <version>`).
    ///
    /// # Errors
    /// When a server program cannot be run: which, and how to install it (the harness reports
    /// it as a setup error, exit 2).
    fn version(&self, opts: &RealOptions) -> Result<String, String>;

    /// How many free ports beyond its client port each server takes on its own address: 0
    /// (the default), etcd's peer port 1, ZooKeeper's quorum and election ports 2.
    fn extra_ports(&self) -> usize {
        0
    }

    /// `true` when the servers dial each other from 127.0.0.1 and so, in a run with network
    /// faults, each runs as a user id of its own ([`member_uid`]) whose connections the
    /// nftables table gives the member's own address (etcd, ZooKeeper). `false` by default.
    fn member_uids(&self) -> bool {
        false
    }

    /// The source NAT a run with network faults needs in `cluster`: (user id, the address its
    /// connections get). By default each server's [`member_uid`] when [`Self::member_uids`],
    /// else none.
    fn snat(&self, cluster: &Cluster) -> Vec<(u32, Ipv4Addr)> {
        if self.member_uids() {
            cluster
                .server_ids()
                .map(|n| (member_uid(n), ip(n)))
                .collect()
        } else {
            Vec::new()
        }
    }

    /// The names of the log files a server writes in its folder of the run folder
    /// (`redis.log`), in the order the harness looks for the last line of one to quote when
    /// the server fails.
    fn log_files(&self) -> &'static [&'static str];

    /// Made once per run before any server starts (PostgreSQL's database cluster); nothing by
    /// default.
    ///
    /// # Errors
    /// [`RealError::Setup`] when it cannot be made.
    fn prepare(&self, _h: &dyn ServerHost) -> Result<(), RealError> {
        Ok(())
    }

    /// The command that starts server `n` (the harness spawns it), at the run's start and
    /// again after a crash (a restart reuses the server's folder).
    ///
    /// # Errors
    /// [`RealError::Setup`] when its folder or configuration cannot be written.
    fn command(&self, h: &dyn ServerHost, n: NodeId) -> Result<Command, RealError>;

    /// Waits until every server, just started, serves the run (and makes what the run needs
    /// on them: the lock table, the lock nodes' parents).
    ///
    /// # Errors
    /// [`RealError::Failed`] when a server exits or is not ready in time (quoting its log),
    /// [`RealError::Interrupted`] on Ctrl-C.
    fn wait_ready(&self, h: &mut dyn ServerHost) -> Result<(), RealError>;

    /// The server that leads now, for `isolate_leader`; `None` (the default): no leader, or
    /// none known now.
    fn leader(&self, _h: &dyn ServerHost) -> Option<NodeId> {
        None
    }

    /// A thread that watches leadership changes from true time 0 ([`ServerHost::t0`]) until
    /// `stop` is set, and returns each new leader's address with the true time (ns) it was
    /// seen: the harness records them as `leader` events (Sentinel's promotions). `None` by
    /// default.
    fn watch_leaders(
        &self,
        _h: &dyn ServerHost,
        _stop: Arc<AtomicBool>,
    ) -> Option<JoinHandle<Vec<(Nanos, SocketAddrV4)>>> {
        None
    }

    /// `true` when the service keeps its own records of grants and releases, read after the
    /// clients are gone ([`Self::events`]); `false` by default.
    fn records_events(&self) -> bool {
        false
    }

    /// The service's own records as history events, read once the clients are killed (with
    /// [`Self::records_events`]); none by default.
    ///
    /// # Errors
    /// [`RealError::Failed`] when they cannot be read.
    fn events(&self, _h: &mut dyn ServerHost) -> Result<Vec<Event>, RealError> {
        Ok(Vec::new())
    }
}

/// What a service's [`ServerSide`] needs from the harness: the run's setting, and its
/// process management.
pub trait ServerHost {
    /// The scenario that runs.
    fn scenario(&self) -> &Scenario;
    /// The service and its knobs.
    fn backend(&self) -> Backend;
    /// The run's options (the server programs' paths).
    fn opts(&self) -> &RealOptions;
    /// The run folder (each server's folder is in it, named after the server).
    fn dir(&self) -> &Path;
    /// The servers' client addresses, by node.
    fn servers(&self) -> &[SocketAddrV4];
    /// Server `n`'s extra ports on its own address ([`ServerSide::extra_ports`] of them).
    fn ports(&self, n: NodeId) -> &[u16];
    /// `true` when the servers run as their own user ids ([`ServerSide::member_uids`] in a run
    /// with network faults).
    fn member_uids(&self) -> bool;
    /// The clock file of `n`'s shifted clock, when the plan faults its clock.
    fn clock_file(&self, n: NodeId) -> Option<&ClockFile>;
    /// True time 0 of the run, host-monotonic ns (set when the clients start).
    fn t0(&self) -> u64;
    /// Node `n`'s clocks (not the resource's).
    fn clock(&self, n: NodeId) -> Option<&Clock>;
    /// `true` once SIGINT or SIGTERM arrived.
    fn interrupted(&self) -> bool;
    /// Node `n`'s name (`n1`).
    fn name(&self, n: NodeId) -> String {
        self.scenario().cluster.name(n)
    }
    /// `; its log ends: LINE` with the last line of server `n`'s log, or nothing.
    fn log_tail(&self, n: NodeId) -> String;
    /// Fails the run when server `n` has exited as it started, quoting its log.
    ///
    /// # Errors
    /// [`RealError::Failed`].
    fn exited_early(&mut self, n: NodeId) -> Result<(), RealError>;
    /// Waits until `addr` of node `n` answers (a `PING` with `ping`, else a connect), 5 s at
    /// most.
    ///
    /// # Errors
    /// [`RealError::Failed`] when it exits or does not answer in time,
    /// [`RealError::Interrupted`].
    fn wait_up(&mut self, n: NodeId, addr: SocketAddrV4, ping: bool) -> Result<(), RealError>;
    /// Starts server `n` again when the plan left it crashed (its next incarnation).
    ///
    /// # Errors
    /// [`RealError::Setup`] when it cannot be started.
    fn restart_if_down(&mut self, n: NodeId) -> Result<(), RealError>;
}

/// Server `n`'s folder in the run folder, made if missing.
///
/// # Errors
/// [`RealError::Setup`] naming the folder.
pub fn server_dir(h: &dyn ServerHost, n: NodeId) -> Result<PathBuf, RealError> {
    let data = h.dir().join(h.name(n));
    std::fs::create_dir_all(&data)
        .map_err(|e| RealError::Setup(format!("{}: {e}", data.display())))?;
    Ok(data)
}

/// The user id etcd or ZooKeeper member `n` runs as when the plan has network faults (see
/// [`crate::nft::Table::with_snat`]): no process of this host should have it.
pub fn member_uid(n: NodeId) -> u32 {
    61_000 + n
}

/// The first line `SERVER --version` prints (`Redis server v=7.0.15 …`, `etcd Version: 3.4.23`).
///
/// # Errors
/// When it cannot be run: `needs` says what needs it and how to install it.
pub fn server_version(server: &str, needs: &str) -> Result<String, String> {
    let out = Command::new(server)
        .arg("--version")
        .output()
        .map_err(|e| format!("cannot run {server} ({e}): {needs}"))?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .to_string())
}
