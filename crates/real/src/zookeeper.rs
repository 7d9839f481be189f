//! `zookeeper` on a real ZooKeeper ensemble (3.8, Debian's `zookeeper` package), with the
//! simulator's client (`crates/algos/src/zookeeper/client.rs`): Curator's `InterProcessMutex`
//! recipe (curator.apache.org, "Shared Reentrant Lock"; the ZooKeeper recipe "Locks",
//! zookeeper.apache.org/doc/current/recipes.html) over our own speaker of ZooKeeper's client
//! protocol ([`crate::zkwire`]).
//!
//! - **The ensemble**: one `QuorumPeerMain` per server, each on its own `127.0.0.N` (client
//!   port, quorum and election ports), its own data directory and `myid`, ZooKeeper's
//!   `tickTime` the scenario's `tick`; sessions may last from 2 ticks to 60 s. Members elect
//!   their leader themselves (the model's leader is fixed at `n1`; a real one is whoever
//!   Zab's fast leader election picks). Their quorum connections leave from 127.0.0.1, so
//!   with network faults each member runs as a user id of its own whose connections nftables
//!   gives the member's address (as for etcd). `isolate_leader` asks each member's `srvr`
//!   four-letter word which one says `Mode: leader`.
//! - **The lock** for key K is a child of the persistent `/locksim/kK` (made before the run):
//!   an `EPHEMERAL_SEQUENTIAL` node named `_c_GUID-lock-` (protected mode; the GUID is 64
//!   random bits, where Curator uses a UUID, fresh per acquire), to which the server appends its 10-digit sequence number: the fencing token with
//!   `fencing = true`. The client lists the children; the lowest sequence number holds (the
//!   grant is recorded at that answer, by the member that gave it); the others watch their
//!   predecessor (`exists` with a watch) and list again when it goes, or after a quarter TTL.
//! - **Protected mode**: after a create without an answer (connection loss), the client lists
//!   the children for its GUID before creating again. `protected = guid` takes any node with
//!   the GUID as its own, also one of a session it has given up on (CURATOR-498);
//!   `guid+session` takes it only when its `ephemeralOwner` is the current session (Curator
//!   4.2.0's fix has the same effect).
//! - **Sessions** as ZooKeeper's client and Curator keep them: the session timeout asked for is
//!   the workload's TTL; a request without an answer for the read timeout (2/3 of the session
//!   timeout, or `timeout`) loses the connection, which is dropped; the next request reconnects
//!   to the `same` server or `any` other, re-attaching the session; after a session timeout
//!   without an answer Curator calls the connection LOST and the next request starts a new
//!   session (the old one is left for the servers to expire). A connection waiting for an
//!   answer pings when it has sent nothing for half the read timeout, as `ClientCnxn` does.
//!   Between operations the client sends nothing: its think and retry times (at most a few
//!   hundred ms) are far below a session timeout, where the model's client pings every third
//!   of it.
//! - **Release** deletes the node; after a validity deadline that has passed, or a delete
//!   without an answer, the client gives the session up instead (as the model does).
//! - A create that used up `lock_wait` after a connection loss deletes the node it may have
//!   made before returning (Curator's `FindAndDeleteProtectedNodeInBackground`, here one
//!   attempt in the foreground).

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use locksim_core::history::LocalClock;
use locksim_core::{Nanos, NodeId};
use rand::{Rng, SeedableRng};

use crate::backend::{member_uid, Grant, Host, Outcome, ServerHost, ServerSide};
use crate::support::Backend;
use crate::zkwire::{code, op, In, Out, Session, ZkConn, ZkError};
use crate::{RealError, RealOptions};

/// The persistent parent of every lock key's node.
pub const ROOT: &str = "/locksim";

/// The path of lock key `key`'s parent node.
pub fn key_path(key: u32) -> String {
    format!("{ROOT}/k{key}")
}

/// One member's `zoo.cfg`: `tick` ns as `tickTime`, the ensemble's `peers` (client, quorum and
/// election addresses by member, `myid` = index + 1).
pub fn member_conf(
    data: &Path,
    me: usize,
    peers: &[(SocketAddrV4, u16, u16)],
    tick: Nanos,
) -> String {
    let tick_ms = (tick / 1_000_000).max(1);
    let (client, _, _) = peers[me];
    let mut c = format!(
        "tickTime={tick_ms}\ninitLimit={init}\nsyncLimit={sync}\ndataDir={dir}\n\
         clientPort={port}\nclientPortAddress={ip}\nminSessionTimeout={min}\n\
         maxSessionTimeout=60000\nadmin.enableServer=false\n4lw.commands.whitelist=srvr\n\
         electionPortBindRetry=0\nstandaloneEnabled=false\n",
        // 10 s to join a leader; a follower that hears nothing from it for 10 ticks leaves.
        init = (10_000 / tick_ms).max(10),
        sync = 10,
        dir = data.display(),
        port = client.port(),
        ip = client.ip(),
        min = 2 * tick_ms,
    );
    for (i, (a, quorum, election)) in peers.iter().enumerate() {
        c += &format!("server.{}={}:{quorum}:{election}\n", i + 1, a.ip());
    }
    c
}

/// ZooKeeper's classpath on Debian: the server's jar (its manifest names its dependencies)
/// and slf4j's simple logger, so that the member's log says something.
pub const CLASSPATH: &str = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar";

/// What one member's `srvr` four-letter word says of its role: `leader`, `follower`, or
/// `None` when it does not answer or serves nobody (no quorum).
pub fn mode(from: Ipv4Addr, member: SocketAddrV4, timeout: Duration) -> Option<String> {
    let mut c = crate::conn::Conn::new(from, member);
    let text = c
        .call(b"srvr", timeout, |r| {
            let mut s = String::new();
            std::io::Read::read_to_string(r, &mut s)?;
            Ok(s)
        })
        .ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("Mode: "))
        .map(|m| m.trim().to_string())
        .filter(|m| m == "leader" || m == "follower" || m == "standalone")
}

/// Makes `/locksim` and `/locksim/kK` for every key, on a session of its own.
///
/// # Errors
/// The request that failed.
pub fn create_parents(member: SocketAddrV4, keys: u32) -> Result<(), String> {
    let t = Duration::from_secs(5);
    let (mut c, _) = ZkConn::connect(Ipv4Addr::LOCALHOST, member, None, 10_000, 0, t)
        .map_err(|e| e.to_string())?;
    let paths = std::iter::once(ROOT.to_string()).chain((0..keys.max(1)).map(key_path));
    for p in paths {
        let body = Out::default()
            .string(&p)
            .buffer(&[])
            .open_acl()
            .int(crate::zkwire::PERSISTENT)
            .bytes();
        match c.call(op::CREATE, &body, t, t) {
            Ok(_) | Err(ZkError::Code(code::NODE_EXISTS)) => {}
            Err(e) => return Err(format!("create {p}: {e}")),
        }
    }
    Ok(())
}

/// A lock node's name under its key: `_c_GUID-lock-SEQUENCE`; its GUID and sequence number.
fn parse_child(name: &str) -> Option<(u64, u64)> {
    let rest = name.strip_prefix("_c_")?;
    let (guid, seq) = rest.split_once("-lock-")?;
    Some((seq.parse().ok()?, u64::from_str_radix(guid, 16).ok()?))
}

/// The recipe's state: the connection, the session and what the client has heard.
struct Recipe {
    backend: Backend,
    me: Ipv4Addr,
    servers: Vec<SocketAddrV4>,
    /// The member this client talks to (index into `servers`).
    server: usize,
    conn: Option<ZkConn>,
    session: Option<Session>,
    /// The newest zxid seen, for re-connects.
    zxid: i64,
    /// The client clock's reading when a server last answered.
    heard: Option<i64>,
    /// The session timeout asked for, ns (the acquire's TTL).
    timeout: Nanos,
    rng: rand_chacha::ChaCha8Rng,
    /// A grant is held: the idle pings pause (the model's heartbeat does the same).
    holding: bool,
}

/// What a request's failure means to the recipe.
enum Lost {
    /// No answer: it may have taken effect.
    Connection,
    /// The session is gone.
    Expired,
    /// The server refused it.
    Code(i32),
}

impl Recipe {
    fn new(
        backend: Backend,
        node: NodeId,
        seed: u64,
        me: Ipv4Addr,
        servers: &[SocketAddrV4],
    ) -> Recipe {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ ((node as u64) << 32) ^ 0x2b);
        let server = rng.gen_range(0..servers.len().max(1));
        Recipe {
            backend,
            me,
            servers: servers.to_vec(),
            server,
            conn: None,
            session: None,
            zxid: 0,
            heard: None,
            timeout: 0,
            rng,
            holding: false,
        }
    }

    fn clock(&self) -> LocalClock {
        self.backend.client_clock
    }

    /// How long a request waits for an answer: `timeout`, else the read timeout, 2/3 of the
    /// session timeout.
    fn read_timeout(&self) -> Duration {
        let z = self.backend.zk;
        Duration::from_nanos(if z.timeout > 0 {
            z.timeout
        } else {
            self.timeout * 2 / 3
        })
    }

    /// The connection is gone: reconnect elsewhere with `reconnect = any`; after a session
    /// timeout without an answer the session is LOST (Curator) and the next request makes a
    /// new one.
    fn lost(&mut self, host: &dyn Host) {
        self.conn = None;
        if self.backend.zk.reconnect_any && self.servers.len() > 1 {
            let step = self.rng.gen_range(1..self.servers.len());
            self.server = (self.server + step) % self.servers.len();
        }
        if self
            .heard
            .is_some_and(|h| host.now(self.clock()) - h >= self.timeout as i64)
        {
            self.session = None;
        }
    }

    /// Gives the session up (its nodes die with it when the servers expire it).
    fn abandon(&mut self) {
        self.session = None;
        self.conn = None;
    }

    /// A connection carrying the session (a new session when there is none).
    fn connected(&mut self, host: &dyn Host) -> Result<(), Lost> {
        if self.conn.is_some() && self.session.is_some() {
            return Ok(());
        }
        self.conn = None;
        let ms = (self.timeout / 1_000_000).clamp(1, i32::MAX as u64) as i32;
        match ZkConn::connect(
            self.me,
            self.servers[self.server],
            self.session.as_ref(),
            ms,
            self.zxid,
            self.read_timeout(),
        ) {
            Ok((c, s)) => {
                self.heard = Some(host.now(self.clock()));
                self.conn = Some(c);
                self.session = Some(s);
                Ok(())
            }
            Err(ZkError::Expired) => {
                self.heard = Some(host.now(self.clock()));
                self.session = None;
                Err(Lost::Expired)
            }
            Err(_) => {
                self.lost(host);
                Err(Lost::Connection)
            }
        }
    }

    /// One request on the session, with the outcome rules above.
    fn call(
        &mut self,
        host: &dyn Host,
        ty: i32,
        body: &[u8],
        timeout: Duration,
    ) -> Result<Vec<u8>, Lost> {
        self.connected(host)?;
        let ping = self.read_timeout() / 2;
        let c = self.conn.as_mut().expect("connected");
        let r = c.call(ty, body, timeout, ping);
        self.zxid = self.zxid.max(c.zxid);
        match r {
            Ok(b) => {
                self.heard = Some(host.now(self.clock()));
                Ok(b)
            }
            Err(ZkError::Code(k)) => {
                self.heard = Some(host.now(self.clock()));
                Err(Lost::Code(k))
            }
            Err(ZkError::Expired) => {
                self.heard = Some(host.now(self.clock()));
                self.abandon();
                Err(Lost::Expired)
            }
            Err(ZkError::Lost(_) | ZkError::NotSent(_)) => {
                self.lost(host);
                Err(Lost::Connection)
            }
        }
    }

    /// One ping on the session (reconnecting first when the connection was lost), as the
    /// model's heartbeat sends every third of the session timeout while nothing is held.
    fn ping(&mut self, host: &dyn Host) {
        if self.session.is_none() || self.holding || self.connected(host).is_err() {
            return;
        }
        let t = self.read_timeout();
        let c = self.conn.as_mut().expect("connected");
        match c.ping(t) {
            Ok(()) => self.heard = Some(host.now(self.clock())),
            Err(ZkError::Expired) => self.abandon(),
            Err(_) => self.lost(host),
        }
    }

    /// Key `key`'s lock nodes, lowest sequence number first: (sequence, GUID, name).
    fn children(&mut self, host: &dyn Host, key: u32) -> Result<Vec<(u64, u64, String)>, Lost> {
        let t = self.read_timeout();
        if self.backend.zk.sync_before_read {
            let body = Out::default().string(&key_path(key)).bytes();
            self.call(host, op::SYNC, &body, t)?;
        }
        let body = Out::default().string(&key_path(key)).boolean(false).bytes();
        let b = self.call(host, op::GET_CHILDREN, &body, t)?;
        let names = In::new(&b).strings().map_err(|_| Lost::Connection)?;
        let mut v: Vec<(u64, u64, String)> = names
            .into_iter()
            .filter_map(|n| parse_child(&n).map(|(s, g)| (s, g, n)))
            .collect();
        v.sort();
        Ok(v)
    }

    /// The current session owns node `name` of `key`.
    fn owns(&mut self, host: &dyn Host, key: u32, name: &str) -> Result<bool, Lost> {
        let path = format!("{}/{name}", key_path(key));
        let body = Out::default().string(&path).boolean(false).bytes();
        let b = self.call(host, op::EXISTS, &body, self.read_timeout())?;
        let owner = In::new(&b)
            .stat_ephemeral_owner()
            .map_err(|_| Lost::Connection)?;
        Ok(self.session.as_ref().is_some_and(|s| s.id == owner))
    }

    fn delete(&mut self, host: &dyn Host, key: u32, name: &str) -> Result<(), Lost> {
        let path = format!("{}/{name}", key_path(key));
        let body = Out::default().string(&path).int(-1).bytes();
        self.call(host, op::DELETE, &body, self.read_timeout())
            .map(|_| ())
    }

    /// Curator's protected create; `Ok((sequence, name))`, or the acquire's outcome.
    fn create(
        &mut self,
        host: &dyn Host,
        key: u32,
        guid: u64,
        give_up: i64,
    ) -> Result<(u64, String), String> {
        let prefix = format!("_c_{guid:016x}-lock-");
        let mut lost_once = false;
        loop {
            if host.now(LocalClock::Mono) >= give_up {
                if lost_once && self.session.is_some() {
                    if let Ok(c) = self.children(host, key) {
                        if let Some((_, _, name)) = c.into_iter().find(|(_, g, _)| *g == guid) {
                            let _ = self.delete(host, key, &name);
                        }
                    }
                }
                return Err("lock node create: retries used up".into());
            }
            if self.connected(host).is_err() {
                // The model's pause before trying again: `timeout`, else 100 ms.
                let z = self.backend.zk.timeout;
                std::thread::sleep(Duration::from_nanos(if z > 0 { z } else { 100_000_000 }));
                continue;
            }
            if lost_once {
                match self.children(host, key) {
                    Ok(c) => {
                        let found = c.into_iter().find(|(_, g, _)| *g == guid);
                        if let Some((seq, _, name)) = found {
                            let mine = !self.backend.zk.protected_session
                                || matches!(self.owns(host, key, &name), Ok(true));
                            if mine {
                                return Ok((seq, name));
                            }
                        }
                    }
                    Err(_) => continue,
                }
            }
            let body = Out::default()
                .string(&format!("{}/{prefix}", key_path(key)))
                .buffer(&[])
                .open_acl()
                .int(crate::zkwire::EPHEMERAL_SEQUENTIAL)
                .bytes();
            match self.call(host, op::CREATE, &body, self.read_timeout()) {
                Ok(b) => {
                    let path = In::new(&b).string().unwrap_or_default();
                    let name = path.rsplit('/').next().unwrap_or("").to_string();
                    match parse_child(&name) {
                        Some((seq, _)) => return Ok((seq, name)),
                        None => return Err(format!("create answered {path:?}")),
                    }
                }
                Err(Lost::Connection) => lost_once = true,
                Err(Lost::Expired | Lost::Code(_)) => {}
            }
        }
    }

    /// Takes `key` for `ttl` ns (the session timeout asked for), waiting up to `lock_wait`.
    fn acquire(&mut self, host: &dyn Host, key: u32, ttl: Nanos) -> Outcome<Grant> {
        if ttl != self.timeout {
            // A new session timeout is asked for by a new session.
            self.timeout = ttl;
            self.abandon();
        }
        let give_up = host
            .now(LocalClock::Mono)
            .saturating_add(self.backend.lock_wait as i64);
        let guid: u64 = self.rng.gen();
        let (seq, name) = match self.create(host, key, guid, give_up) {
            Ok(x) => x,
            Err(why) => return Outcome::Unknown(why),
        };
        loop {
            if host.now(LocalClock::Mono) >= give_up {
                if self.delete(host, key, &name).is_err() {
                    self.abandon();
                }
                return Outcome::Unknown(format!("gave up waiting behind node {seq}"));
            }
            let sent = host.now(self.clock());
            let children = match self.children(host, key) {
                Ok(c) => c,
                Err(Lost::Expired) => return Outcome::Fail("session expired while waiting".into()),
                Err(_) => continue,
            };
            let answered = host.true_time();
            let Some(pos) = children.iter().position(|(s, _, _)| *s == seq) else {
                return Outcome::Fail("own lock node is gone (session expired)".into());
            };
            if pos == 0 {
                let token = self.backend.fencing().then_some(seq);
                host.granted(answered, self.server as u32, key, token);
                return Outcome::Ok(Grant {
                    owner: seq,
                    token,
                    deadline: (self.clock(), sent + ttl as i64 - self.backend.drift(ttl)),
                    etcd: None,
                    row: None,
                    zk: Some((seq, guid)),
                });
            }
            let pred = format!("{}/{}", key_path(key), children[pos - 1].2);
            let body = Out::default().string(&pred).boolean(true).bytes();
            match self.call(host, op::EXISTS, &body, self.read_timeout()) {
                Ok(_) => {
                    let until = Instant::now() + Duration::from_nanos((ttl / 4).max(1));
                    let ping = self.read_timeout() / 2;
                    if let Some(c) = self.conn.as_mut() {
                        if c.wait_deleted(&pred, until, ping).is_err() {
                            self.lost(host);
                        }
                    }
                }
                Err(Lost::Expired) => return Outcome::Fail("session expired while waiting".into()),
                Err(_) => {}
            }
        }
    }

    /// Deletes the grant's node, unless its validity has passed (then the session is given up).
    fn release(&mut self, host: &dyn Host, key: u32, grant: &Grant) -> Outcome<()> {
        let (clock, until) = grant.deadline;
        if host.now(clock) >= until {
            self.abandon();
            return Outcome::Fail("the grant's validity had passed; not releasing".into());
        }
        let Some((seq, guid)) = grant.zk else {
            return Outcome::Fail("not a ZooKeeper grant".into());
        };
        let name = format!("_c_{guid:016x}-lock-{seq:010}");
        match self.delete(host, key, &name) {
            Ok(()) => Outcome::Ok(()),
            Err(Lost::Code(code::NO_NODE)) => Outcome::Unknown("lock node already gone".into()),
            Err(_) => {
                self.abandon();
                Outcome::Unknown("delete got no answer".into())
            }
        }
    }
}

/// The clock of the pinger thread: the client's own virtual clocks (its plan's offsets,
/// drifts and steps; [`crate::vclock`]) read at true time.
struct PingHost {
    clock: locksim_core::clock::Clock,
    t0: u64,
}

impl Host for PingHost {
    fn now(&self, clock: LocalClock) -> i64 {
        self.clock.read(clock, crate::node::true_now(self.t0))
    }
    fn true_time(&self) -> Nanos {
        crate::node::true_now(self.t0)
    }
    fn granted(&self, _: Nanos, _: u32, _: u32, _: Option<u64>) {}
}

/// The lock client of one client process: the recipe, and a thread that pings the session
/// every third of the session timeout while the client neither holds the lock nor has a
/// request outstanding (the ZooKeeper client's idle pings; the model's heartbeat).
pub struct ZkLock {
    recipe: std::sync::Arc<std::sync::Mutex<Recipe>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl ZkLock {
    /// A client whose connections leave from `me`; `node` and `seed` seed its choice of
    /// server; `clock` and `t0` are the client's clocks and the run's start, for the pinger.
    pub fn new(
        backend: Backend,
        node: NodeId,
        seed: u64,
        me: Ipv4Addr,
        servers: &[SocketAddrV4],
        clock: locksim_core::clock::Clock,
        t0: u64,
    ) -> ZkLock {
        use std::sync::atomic::Ordering;
        let recipe = std::sync::Arc::new(std::sync::Mutex::new(Recipe::new(
            backend, node, seed, me, servers,
        )));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (r, halt) = (recipe.clone(), stop.clone());
        std::thread::spawn(move || {
            let host = PingHost { clock, t0 };
            while !halt.load(Ordering::Relaxed) {
                let every = r.lock().map_or(0, |g| g.timeout / 3);
                std::thread::sleep(Duration::from_nanos(every.max(10_000_000)));
                // A request in progress touches the session itself: no ping then.
                if let Ok(mut g) = r.try_lock() {
                    g.ping(&host);
                }
            }
        });
        ZkLock { recipe, stop }
    }

    /// Takes `key` for `ttl` ns (the session timeout asked for), waiting up to `lock_wait`.
    pub fn acquire(&mut self, host: &dyn Host, key: u32, ttl: Nanos) -> Outcome<Grant> {
        let mut r = self.recipe.lock().unwrap_or_else(|e| e.into_inner());
        let o = r.acquire(host, key, ttl);
        r.holding = matches!(o, Outcome::Ok(_));
        o
    }

    /// Deletes the grant's node, unless its validity has passed (then the session is given up).
    pub fn release(&mut self, host: &dyn Host, key: u32, grant: &Grant) -> Outcome<()> {
        let mut r = self.recipe.lock().unwrap_or_else(|e| e.into_inner());
        r.holding = false;
        r.release(host, key, grant)
    }
}

impl Drop for ZkLock {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

impl crate::backend::Lock for ZkLock {
    fn acquire(&mut self, host: &dyn Host, key: u32, _owner: u64, ttl: Nanos) -> Outcome<Grant> {
        ZkLock::acquire(self, host, key, ttl)
    }
    fn release(&mut self, host: &dyn Host, key: u32, grant: &Grant) -> Outcome<()> {
        ZkLock::release(self, host, key, grant)
    }
}

/// `Apache ZooKeeper, version 3.8.0 …` from ZooKeeper's own version class on `classpath`.
///
/// # Errors
/// When `java` cannot be run or `classpath` has no ZooKeeper: how to install it.
pub fn version(classpath: &str) -> Result<String, String> {
    let needs = "zookeeper in real mode needs ZooKeeper and Java (Debian: apt-get install zookeeper; or --zookeeper CLASSPATH)";
    let out = Command::new("java")
        .args([
            "-cp",
            classpath,
            "org.apache.zookeeper.version.VersionInfoMain",
        ])
        .output()
        .map_err(|e| format!("cannot run java ({e}): {needs}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().next().unwrap_or("").trim().to_string();
    if !out.status.success() || !line.contains("ZooKeeper") {
        return Err(format!("{classpath} has no ZooKeeper server: {needs}"));
    }
    Ok(line)
}

/// The servers of `zookeeper`: ZooKeeper members run by `java`.
pub struct ZkServers;

impl ServerSide for ZkServers {
    fn version(&self, opts: &RealOptions) -> Result<String, String> {
        version(&opts.zookeeper)
    }

    /// The quorum and election ports.
    fn extra_ports(&self) -> usize {
        2
    }

    fn member_uids(&self) -> bool {
        true
    }

    fn log_files(&self) -> &'static [&'static str] {
        &["zookeeper.log"]
    }

    /// One ZooKeeper member: its own data directory, `myid` and `zoo.cfg` ([`member_conf`]),
    /// its log as `zookeeper.log`. A restart after a crash reuses the data directory (its
    /// transaction log and snapshots).
    fn command(&self, h: &dyn ServerHost, n: NodeId) -> Result<Command, RealError> {
        let data = h.dir().join(h.name(n));
        let setup = |e: std::io::Error| RealError::Setup(format!("{}: {e}", data.display()));
        std::fs::create_dir_all(&data).map_err(setup)?;
        let peers: Vec<(SocketAddrV4, u16, u16)> = h
            .scenario()
            .cluster
            .server_ids()
            .map(|m| {
                let ports = h.ports(m);
                (h.servers()[m as usize], ports[0], ports[1])
            })
            .collect();
        let conf = data.join("zoo.cfg");
        std::fs::write(data.join("myid"), format!("{}\n", n + 1)).map_err(setup)?;
        std::fs::write(
            &conf,
            member_conf(&data, n as usize, &peers, h.backend().tick),
        )
        .map_err(setup)?;
        let mut c = Command::new("java");
        if h.member_uids() {
            use std::os::unix::fs::PermissionsExt;
            use std::os::unix::process::CommandExt;
            let uid = member_uid(n);
            for p in [data.clone(), data.join("myid"), conf.clone()] {
                std::os::unix::fs::chown(&p, Some(uid), Some(uid)).map_err(setup)?;
            }
            if let Ok(rd) = std::fs::read_dir(&data) {
                for e in rd.flatten() {
                    let _ = std::os::unix::fs::chown(e.path(), Some(uid), Some(uid));
                }
            }
            std::fs::set_permissions(h.dir(), std::fs::Permissions::from_mode(0o711))
                .map_err(setup)?;
            c.uid(uid).gid(uid);
        }
        // A small heap and no perf-data file in /tmp; the simple logger writes to stderr.
        c.args(["-Xmx256m", "-XX:+UseSerialGC", "-XX:-UsePerfData"])
            .arg("-Dorg.slf4j.simpleLogger.showDateTime=true")
            .arg("-Dzookeeper.jmx.log4j.disable=true")
            .arg("-cp")
            .arg(&h.opts().zookeeper)
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg(&conf);
        c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(data.join("zookeeper.log"))
                .map(Stdio::from)
                .unwrap_or_else(|_| Stdio::null()),
        );
        Ok(c)
    }

    /// Waits until every ZooKeeper member serves (one leader, the others following; 15 s at
    /// most), then makes the lock keys' parent nodes.
    fn wait_ready(&self, h: &mut dyn ServerHost) -> Result<(), RealError> {
        for _ in 0..300 {
            if h.interrupted() {
                return Err(RealError::Interrupted);
            }
            for n in h.scenario().cluster.server_ids() {
                h.exited_early(n)?;
            }
            let t = Duration::from_millis(300);
            let modes: Vec<Option<String>> = h
                .servers()
                .iter()
                .map(|&a| mode(Ipv4Addr::LOCALHOST, a, t))
                .collect();
            let leaders = modes
                .iter()
                .filter(|m| matches!(m.as_deref(), Some("leader" | "standalone")))
                .count();
            if leaders == 1 && modes.iter().all(Option::is_some) {
                let keys = h.scenario().workload.keys;
                return create_parents(h.servers()[0], keys).map_err(|e| {
                    RealError::Failed(format!(
                        "{}: making the lock nodes' parents: {e}",
                        h.name(0)
                    ))
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(RealError::Failed(format!(
            "the ZooKeeper members did not elect a leader within 15 s{}",
            h.log_tail(0)
        )))
    }

    /// The member whose `srvr` says `leader`.
    fn leader(&self, h: &dyn ServerHost) -> Option<NodeId> {
        let t = Duration::from_millis(200);
        h.servers()
            .iter()
            .position(|&a| mode(Ipv4Addr::LOCALHOST, a, t).as_deref() == Some("leader"))
            .map(|i| i as NodeId)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_node_names_give_sequence_and_guid() {
        assert_eq!(
            parse_child("_c_00000000000000ff-lock-0000000042"),
            Some((42, 255))
        );
        assert_eq!(parse_child("lock-0000000042"), None);
        assert_eq!(parse_child("_c_zz-lock-1"), None);
    }

    #[test]
    fn members_are_configured_on_their_own_addresses() {
        let a = |n: u8| SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, n), 2000 + n as u16);
        let peers = vec![(a(1), 3001, 4001), (a(2), 3002, 4002), (a(3), 3003, 4003)];
        let c = member_conf(Path::new("/tmp/x"), 1, &peers, 50_000_000);
        for want in [
            "tickTime=50\n",
            "clientPortAddress=127.0.0.2\n",
            "clientPort=2002\n",
            "minSessionTimeout=100\n",
            "server.1=127.0.0.1:3001:4001\n",
            "server.3=127.0.0.3:3003:4003\n",
            "4lw.commands.whitelist=srvr\n",
        ] {
            assert!(c.contains(want), "{want:?} not in {c}");
        }
    }
}
