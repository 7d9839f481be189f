//! The `raft-lease` backend of a real run: etcd members (3.4, v3 API) and our lock client over
//! the maintained [`etcd_client`] crate. The client does what the simulator's `raft-lease`
//! client does (`crates/algos/src/raftlease/client.rs`), with etcd's own lock recipe
//! (`clientv3/concurrency`'s `Session` and `Mutex`, etcd.io "Lock" docs):
//!
//! - a **session** is a lease granted for the scenario's TTL (whole seconds: etcd's unit); it
//!   is kept alive (one `LeaseKeepAlive` round) before queueing when less than half its TTL is
//!   left, every TTL/3 while the client waits in a lock's queue, and once as it takes the lock,
//!   whose validity is `sent + TTL − drift` from that keep-alive's send time, `drift =
//!   TTL·drift_factor + 2 ms`. Between holds (think time) no keep-alive is sent, and a session
//!   whose lease ran out is replaced by a new one at the next acquire;
//! - **lock** `k`: a transaction creates `locksim/lock/<k>/<lease>` under the lease if it does
//!   not exist (else reads it); its creation revision is the client's place in the queue and
//!   its **fencing token**. The client then polls the prefix (sorted by creation revision) until
//!   its key heads it: the lock is granted. If its key vanished meanwhile, the lease expired
//!   while it waited (etcd's fix for case K2) and the acquire fails. After `lock_wait` it
//!   gives up, revokes the session and reports the acquire as unknown;
//! - **release**: a transaction deletes the key only if its creation revision is still the
//!   grant's; a grant whose validity had passed is not touched (the key dies with the lease);
//!   an unlock without an answer gives the session up (revoked if possible: unknown), so the
//!   key goes when its lease does; an unlock no member took fails and drops the session
//!   without revoking it (the lock stays held until the lease runs out).
//!
//! Requests go to the member the client last got an answer from (asking for a leader, etcd's
//! `WithRequireLeader`), and move to the next member on a refused connection or a member
//! without a leader; a timeout moves on and reports the request as unknown.
//!
//! The members ([`EtcdServers`]): each with its own folder, client and peer ports on its own
//! address, the scenario's Raft tick and election timeout.

use std::cell::RefCell;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddrV4};
use std::process::{Command, Stdio};
use std::time::Duration;

use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, GetOptions, PutOptions, SortOrder, SortTarget, Txn,
    TxnOp, TxnOpResponse,
};
use locksim_core::history::LocalClock;
use locksim_core::time::fmt_nanos;
use locksim_core::time::MS;
use locksim_core::{Nanos, NodeId};

use crate::backend::{
    member_uid, server_dir, server_version, Grant, Host, Outcome, ServerHost, ServerSide,
};
use crate::support::Backend;
use crate::{RealError, RealOptions};

/// Why a request got no usable answer.
#[derive(Debug)]
enum RpcError {
    /// No member would take it: it definitely did not happen.
    NoLeader(String),
    /// No answer in time, or the connection broke: it may have happened.
    Unknown(String),
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RpcError::NoLeader(m) | RpcError::Unknown(m) => f.write_str(m),
        }
    }
}

/// `true` when etcd or the transport says the request never reached a working member: a
/// refused or failed connect, or a member without a leader (`WithRequireLeader` rejects the
/// request before it is proposed). Not "leader changed": etcd says that of a proposal still
/// pending when the leader changed, which may yet be applied (a real run's S3 caught our
/// client reporting such an unlock as failed while it had freed the lock).
fn not_delivered(e: &etcd_client::Error) -> bool {
    let text = format!("{e:?}").to_lowercase();
    text.contains("no leader")
        || text.contains("connection refused")
        || text.contains("tcp connect error")
        || text.contains("not capable")
}

/// A session: one lease kept alive.
#[derive(Debug, Clone, Copy)]
struct Session {
    lease: i64,
    /// Validity deadline, a reading of the client's clock (send time of the last acknowledged
    /// grant or keep-alive, plus TTL − drift).
    deadline: i64,
    /// Client-clock reading of the last acknowledged keep-alive's send.
    renewed: i64,
}

/// The etcd lock client of one client process.
pub struct EtcdLock {
    rt: tokio::runtime::Runtime,
    backend: Backend,
    me: Ipv4Addr,
    servers: Vec<SocketAddrV4>,
    clients: Vec<Option<Client>>,
    /// The member asked first.
    current: usize,
    session: Option<Session>,
    /// Each member's id, by node (`n1` first), learnt from the member list at the first grant.
    ids: Vec<u64>,
}

fn lock_prefix(key: u32) -> String {
    format!("locksim/lock/{key}/")
}

fn key_of(key: u32, lease: i64) -> String {
    format!("{}{lease:016x}", lock_prefix(key))
}

impl EtcdLock {
    /// A client of the etcd members `servers` whose connections leave from `me`.
    ///
    /// # Errors
    /// When the async runtime cannot start.
    pub fn new(backend: Backend, me: Ipv4Addr, servers: &[SocketAddrV4]) -> Result<Self, String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the etcd client's runtime: {e}"))?;
        Ok(EtcdLock {
            rt,
            backend,
            me,
            servers: servers.to_vec(),
            clients: vec![None; servers.len()],
            current: 0,
            session: None,
            ids: Vec::new(),
        })
    }

    fn timeout(&self) -> Duration {
        Duration::from_nanos(self.backend.timeout)
    }

    /// The client of member `m`, connecting lazily from our own address.
    fn client(&mut self, m: usize) -> Result<Client, String> {
        if let Some(c) = &self.clients[m] {
            return Ok(c.clone());
        }
        let t = self.timeout();
        let url = format!("http://{}", self.servers[m]);
        let endpoint = tonic::transport::Endpoint::from_shared(url.clone())
            .map_err(|e| format!("{url}: {e}"))?
            .local_address(Some(IpAddr::V4(self.me)))
            .connect_timeout(t)
            .tcp_nodelay(true);
        let channel = {
            let _guard = self.rt.enter();
            endpoint.connect_lazy()
        };
        let opts = ConnectOptions::new().with_require_leader(true);
        let client = self
            .rt
            .block_on(Client::from_channel(
                etcd_client::Channel::Tonic(channel),
                Some(opts),
            ))
            .map_err(|e| format!("{url}: {e}"))?;
        self.clients[m] = Some(client.clone());
        Ok(client)
    }

    /// Runs `f` on the current member, moving on as the simulator's client does: a request
    /// that surely did not happen is tried on the next member (twice round the cluster at
    /// most); one without an answer in `timeout` is reported unknown. Returns the answer and
    /// the member that gave it.
    fn call<T, F, Fut>(&mut self, timeout: Duration, f: F) -> Result<(T, usize), RpcError>
    where
        F: Fn(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let n = self.servers.len();
        let mut last = String::new();
        for _ in 0..2 * n {
            let m = self.current;
            let client = match self.client(m) {
                Ok(c) => c,
                Err(e) => {
                    last = e;
                    self.current = (m + 1) % n;
                    continue;
                }
            };
            let fut = f(client);
            match self
                .rt
                .block_on(async { tokio::time::timeout(timeout, fut).await })
            {
                Ok(Ok(v)) => return Ok((v, m)),
                Ok(Err(e)) if not_delivered(&e) => {
                    last = format!("n{}: {e}", m + 1);
                    self.current = (m + 1) % n;
                    // Perhaps an election is on: give it a moment.
                    let pause =
                        Duration::from_nanos((2 * self.backend.tick).min(self.backend.timeout));
                    std::thread::sleep(pause);
                }
                Ok(Err(e)) => {
                    self.current = (m + 1) % n;
                    return Err(RpcError::Unknown(format!("n{}: {e}", m + 1)));
                }
                Err(_) => {
                    self.current = (m + 1) % n;
                    return Err(RpcError::Unknown(format!(
                        "n{}: no answer in {}",
                        m + 1,
                        fmt_nanos(timeout.as_nanos() as i128)
                    )));
                }
            }
        }
        Err(RpcError::NoLeader(format!("no member took it ({last})")))
    }

    fn valid_until(&self, sent: i64, ttl: Nanos) -> i64 {
        sent.saturating_add(ttl as i64)
            .saturating_sub(self.backend.drift(ttl))
    }

    /// One keep-alive of `lease`: `Ok(Some(sent))` renewed (sent at client-clock reading
    /// `sent`), `Ok(None)` the lease is gone.
    fn keep_alive(&mut self, host: &dyn Host, lease: i64) -> Result<Option<i64>, RpcError> {
        let sent = host.now(self.backend.client_clock);
        let (ttl, _) = self.call(self.timeout(), move |mut c| async move {
            let (mut keeper, mut stream) = c.lease_keep_alive(lease).await?;
            keeper.keep_alive().await?;
            Ok(stream.message().await?.map_or(0, |r| r.ttl()))
        })?;
        Ok((ttl > 0).then_some(sent))
    }

    /// Renews the session now; `false` when its lease is gone or no answer came.
    fn renew(&mut self, host: &dyn Host, ttl: Nanos) -> Result<bool, RpcError> {
        let Some(s) = self.session else {
            return Ok(false);
        };
        match self.keep_alive(host, s.lease)? {
            Some(sent) => {
                let until = self.valid_until(sent, ttl);
                if let Some(s) = &mut self.session {
                    s.deadline = s.deadline.max(until);
                    s.renewed = sent;
                }
                Ok(true)
            }
            None => {
                self.session = None;
                Ok(false)
            }
        }
    }

    /// Gives the session up: one revoke attempt; either way its keys go with its lease.
    fn abandon(&mut self) {
        if let Some(s) = self.session.take() {
            let _ = self.call(self.timeout(), move |mut c| async move {
                c.lease_revoke(s.lease).await.map(|_| ())
            });
        }
    }

    /// The live session, or a new one.
    fn session(&mut self, host: &dyn Host, ttl: Nanos) -> Result<Session, Outcome<Grant>> {
        let clock = self.backend.client_clock;
        if let Some(s) = self.session {
            let left = s.deadline.saturating_sub(host.now(clock));
            if left >= (ttl / 2) as i64 {
                return Ok(s);
            }
            if left > 0 && matches!(self.renew(host, ttl), Ok(true)) {
                return Ok(self.session.expect("renewed"));
            }
            self.session = None;
        }
        let sent = host.now(clock);
        let secs = (ttl / 1_000_000_000) as i64;
        let lease = match self.call(self.timeout(), move |mut c| async move {
            c.lease_grant(secs, None).await.map(|r| r.id())
        }) {
            Ok((lease, _)) => lease,
            Err(RpcError::NoLeader(e)) => return Err(Outcome::Fail(format!("lease grant: {e}"))),
            // A lease granted without our knowing expires by itself and holds no lock.
            Err(RpcError::Unknown(e)) => return Err(Outcome::Fail(format!("lease grant: {e}"))),
        };
        let s = Session {
            lease,
            deadline: self.valid_until(sent, ttl),
            renewed: sent,
        };
        self.session = Some(s);
        Ok(s)
    }

    /// Takes `key` for a lease of `ttl` ns (whole seconds).
    pub fn acquire(&mut self, host: &dyn Host, key: u32, ttl: Nanos) -> Outcome<Grant> {
        let s = match self.session(host, ttl) {
            Ok(s) => s,
            Err(o) => return o,
        };
        let name = key_of(key, s.lease);
        let queue = {
            let name = name.clone();
            move |mut c: Client| {
                let name = name.clone();
                async move {
                    let txn = Txn::new()
                        .when([Compare::create_revision(name.clone(), CompareOp::Equal, 0)])
                        .and_then([TxnOp::put(
                            name.clone(),
                            "",
                            Some(PutOptions::new().with_lease(s.lease)),
                        )])
                        .or_else([TxnOp::get(name, None)]);
                    let r = c.txn(txn).await?;
                    let rev = if r.succeeded() {
                        r.header().map_or(0, |h| h.revision())
                    } else {
                        r.op_responses()
                            .into_iter()
                            .find_map(|op| match op {
                                TxnOpResponse::Get(g) => {
                                    g.kvs().first().map(|kv| kv.create_revision())
                                }
                                _ => None,
                            })
                            .unwrap_or(0)
                    };
                    Ok(rev)
                }
            }
        };
        let rev = match self.call(self.timeout(), queue) {
            Ok((rev, _)) if rev > 0 => rev,
            Ok(_) => {
                self.abandon();
                return Outcome::Unknown("lock: no revision in the answer".into());
            }
            Err(RpcError::NoLeader(e)) => return Outcome::Fail(format!("lock: {e}")),
            Err(RpcError::Unknown(e)) => {
                self.abandon();
                return Outcome::Unknown(format!("lock: {e}"));
            }
        };
        let clock = self.backend.client_clock;
        let give_up = host
            .now(LocalClock::Mono)
            .saturating_add(self.backend.lock_wait as i64);
        let prefix = lock_prefix(key);
        loop {
            let head = {
                let prefix = prefix.clone();
                let name = name.clone();
                move |mut c: Client| {
                    let (prefix, name) = (prefix.clone(), name.clone());
                    async move {
                        let opts = GetOptions::new()
                            .with_prefix()
                            .with_sort(SortTarget::Create, SortOrder::Ascend);
                        let r = c.get(prefix, Some(opts)).await?;
                        let head = r.kvs().first().map(|kv| kv.create_revision());
                        let mine = r.kvs().iter().any(|kv| kv.key() == name.as_bytes());
                        Ok((head, mine))
                    }
                }
            };
            match self.call(self.timeout(), head) {
                Ok(((_, false), _)) => {
                    self.session = None;
                    return Outcome::Fail("session lease expired while waiting".into());
                }
                Ok(((Some(h), true), member)) if h == rev => {
                    // The service's record belongs to the leader, which decided it (a follower
                    // forwards); the member that answered when the leader is not known. Its
                    // time is the answer's, not that of the question that follows.
                    let at = host.true_time();
                    let by = self.leader_seen_by(member).unwrap_or(member);
                    host.granted(at, by as u32, key, Some(rev as u64));
                    return self.granted(host, rev, ttl);
                }
                Ok(_) | Err(_) => {}
            }
            if host.now(LocalClock::Mono) >= give_up {
                self.abandon();
                return Outcome::Unknown(format!("gave up waiting behind revision {rev}"));
            }
            // Keep the session alive while waiting.
            if let Some(s) = self.session {
                let due = host.now(clock).saturating_sub(s.renewed) >= (ttl / 3) as i64;
                // No answer: try again at the next poll; the lease may still be alive.
                if due && matches!(self.renew(host, ttl), Ok(false)) {
                    return Outcome::Fail("session lease expired while waiting".into());
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The node that leads as member `m` sees it now (one `Status` request to it), if it
    /// answers in time.
    fn leader_seen_by(&mut self, m: usize) -> Option<usize> {
        let t = self.timeout();
        if self.ids.is_empty() {
            let (list, _) = self
                .call(t, |mut c| async move { c.member_list().await })
                .ok()?;
            let mut ids = vec![0; self.servers.len()];
            for member in list.members() {
                let n = member.name().strip_prefix('n')?.parse::<usize>().ok()?;
                *ids.get_mut(n.checked_sub(1)?)? = member.id();
            }
            self.ids = ids;
        }
        let mut c = self.client(m).ok()?;
        let leader = self
            .rt
            .block_on(async { tokio::time::timeout(t, c.status()).await })
            .ok()?
            .ok()?
            .leader();
        self.ids.iter().position(|&id| id == leader && leader != 0)
    }

    /// The lock is ours: one keep-alive starts the grant's validity.
    fn granted(&mut self, host: &dyn Host, rev: i64, ttl: Nanos) -> Outcome<Grant> {
        // No answer: the validity is what the last acknowledged keep-alive gave.
        if let Ok(false) = self.renew(host, ttl) {
            return Outcome::Fail("session lease expired as the lock was granted".into());
        }
        let s = self.session.expect("a session holds the lock");
        Outcome::Ok(Grant {
            owner: s.lease as u64,
            token: Some(rev as u64),
            deadline: (self.backend.client_clock, s.deadline),
            etcd: Some((s.lease, rev)),
            row: None,
            zk: None,
        })
    }

    /// Releases `grant` of `key`.
    pub fn release(&mut self, host: &dyn Host, key: u32, grant: &Grant) -> Outcome<()> {
        let Some((lease, rev)) = grant.etcd else {
            return Outcome::Fail("not an etcd grant".into());
        };
        let (clock, until) = grant.deadline;
        if host.now(clock) >= until {
            // The lease may be gone and the lock another holder's: do not touch it; the
            // session ends, so the key goes when the lease expires.
            if self.session.is_some_and(|s| s.lease == lease) {
                self.session = None;
            }
            return Outcome::Fail("the grant's validity had passed; not releasing".into());
        }
        let name = key_of(key, lease);
        let unlock = move |mut c: Client| {
            let name = name.clone();
            async move {
                let txn = Txn::new()
                    .when([Compare::create_revision(
                        name.clone(),
                        CompareOp::Equal,
                        rev,
                    )])
                    .and_then([TxnOp::delete(name, None)]);
                Ok(c.txn(txn).await?.succeeded())
            }
        };
        match self.call(self.timeout(), unlock) {
            Ok((true, _)) => Outcome::Ok(()),
            Ok((false, _)) => Outcome::Unknown("key already gone (expired or released)".into()),
            // Surely not done: the lock stays held until the lease runs out. The session is
            // dropped (not revoked: a revoke would free the lock after all, and "fail" would
            // be a lie, which a real run's S3 caught), so the next acquire queues a new key.
            Err(RpcError::NoLeader(e)) => {
                if self.session.is_some_and(|s| s.lease == lease) {
                    self.session = None;
                }
                Outcome::Fail(format!("unlock: {e}"))
            }
            Err(RpcError::Unknown(e)) => {
                self.abandon();
                Outcome::Unknown(format!("unlock: {e}"))
            }
        }
    }
}

/// Each reachable member's `(member id, leader id, raft term)`, asked from the harness
/// (`127.0.0.1`, which no fault touches) all at once, each with `timeout`; `None` for a
/// member that did not answer (stopped, or cut off).
pub fn statuses(servers: &[SocketAddrV4], timeout: Duration) -> Vec<Option<(u64, u64, u64)>> {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return vec![None; servers.len()];
    };
    rt.block_on(async {
        let mut asks = tokio::task::JoinSet::new();
        for (i, &a) in servers.iter().enumerate() {
            asks.spawn(async move {
                let opts = ConnectOptions::new()
                    .with_connect_timeout(timeout)
                    .with_timeout(timeout);
                let ask = async {
                    let mut c = Client::connect([format!("http://{a}")], Some(opts)).await?;
                    let s = c.status().await?;
                    Ok::<_, etcd_client::Error>((
                        s.header().map_or(0, |h| h.member_id()),
                        s.leader(),
                        s.raft_term(),
                    ))
                };
                (
                    i,
                    tokio::time::timeout(timeout, ask)
                        .await
                        .ok()
                        .and_then(Result::ok),
                )
            });
        }
        let mut out = vec![None; servers.len()];
        while let Some(Ok((i, answer))) = asks.join_next().await {
            out[i] = answer;
        }
        out
    })
}

/// The member that leads now, by the answers of [`statuses`]: the leader named in the
/// highest term, found among `ids` (each member's id, learnt when all answered at start-up),
/// so a leader that cannot answer itself (stopped) is still found.
pub fn leader(servers: &[SocketAddrV4], timeout: Duration, ids: &[u64]) -> Option<usize> {
    let st = statuses(servers, timeout);
    let (_, leader, _) = st.iter().flatten().max_by_key(|s| s.2)?;
    ids.iter().position(|id| id == leader && *leader != 0)
}

impl crate::backend::Lock for EtcdLock {
    fn acquire(&mut self, host: &dyn Host, key: u32, _owner: u64, ttl: Nanos) -> Outcome<Grant> {
        EtcdLock::acquire(self, host, key, ttl)
    }
    fn release(&mut self, host: &dyn Host, key: u32, grant: &Grant) -> Outcome<()> {
        EtcdLock::release(self, host, key, grant)
    }
}

/// The servers of `raft-lease`: etcd members.
#[derive(Default)]
pub struct EtcdServers {
    /// Each member's id, by node (learnt at start-up, by [`ServerSide::wait_ready`]).
    member_ids: RefCell<Vec<u64>>,
}

/// Member `m`'s peer (Raft) address: its extra port on its own address.
fn peer(h: &dyn ServerHost, m: NodeId) -> SocketAddrV4 {
    SocketAddrV4::new(crate::addr::ip(m), h.ports(m)[0])
}

impl ServerSide for EtcdServers {
    fn version(&self, opts: &RealOptions) -> Result<String, String> {
        server_version(
            &opts.etcd,
            "real mode of raft-lease needs etcd 3.4 (Debian: apt-get install etcd-server)",
        )
    }

    /// The peer (Raft) port.
    fn extra_ports(&self) -> usize {
        1
    }

    fn member_uids(&self) -> bool {
        true
    }

    fn log_files(&self) -> &'static [&'static str] {
        &["etcd.log"]
    }

    /// One etcd member: its own data directory, client and peer URLs on its own address, the
    /// scenario's Raft tick and election timeout. A restart after a crash reuses the data
    /// directory (etcd then ignores the initial-cluster flags).
    fn command(&self, h: &dyn ServerHost, n: NodeId) -> Result<Command, RealError> {
        let data = server_dir(h, n)?;
        let url = |a: SocketAddrV4| format!("http://{a}");
        let cluster: Vec<String> = h
            .scenario()
            .cluster
            .server_ids()
            .map(|m| format!("{}={}", h.name(m), url(peer(h, m))))
            .collect();
        if h.member_uids() {
            // Its own user id (for the source NAT): it must own its directory and be able to
            // pass through the run's.
            use std::os::unix::fs::PermissionsExt;
            let uid = member_uid(n);
            std::os::unix::fs::chown(&data, Some(uid), Some(uid))
                .and_then(|_| {
                    std::fs::set_permissions(h.dir(), std::fs::Permissions::from_mode(0o711))
                })
                .map_err(|e| RealError::Setup(format!("{}: {e}", data.display())))?;
        }
        let (client, peer) = (url(h.servers()[n as usize]), url(peer(h, n)));
        let backend = h.backend();
        let tick_ms = backend.tick / MS;
        let mut c = Command::new(&h.opts().etcd);
        if h.member_uids() {
            use std::os::unix::process::CommandExt;
            c.uid(member_uid(n)).gid(member_uid(n));
        }
        c.arg("--name")
            .arg(h.name(n))
            .arg("--data-dir")
            .arg(data.join("member-data"))
            .args(["--listen-client-urls", &client])
            .args(["--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer])
            .args(["--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &cluster.join(",")])
            .args(["--initial-cluster-state", "new"])
            .arg("--initial-cluster-token")
            .arg(format!("locksim-{}", std::process::id()))
            .arg("--heartbeat-interval")
            .arg(tick_ms.to_string())
            .arg("--election-timeout")
            .arg((tick_ms * backend.election_ticks as u64).to_string())
            .args(["--logger", "zap", "--log-outputs", "stderr"]);
        c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(
            std::fs::File::create(data.join("etcd.log"))
                .map(Stdio::from)
                .unwrap_or_else(|_| Stdio::null()),
        );
        Ok(c)
    }

    /// Waits until every etcd member answers and one of them leads (10 s at most), and learns
    /// their ids.
    fn wait_ready(&self, h: &mut dyn ServerHost) -> Result<(), RealError> {
        for _ in 0..200 {
            if h.interrupted() {
                return Err(RealError::Interrupted);
            }
            for n in h.scenario().cluster.server_ids() {
                h.exited_early(n)?;
            }
            let st = statuses(h.servers(), Duration::from_millis(300));
            if st
                .iter()
                .all(|s| s.is_some_and(|(_, leader, _)| leader != 0))
            {
                *self.member_ids.borrow_mut() = st.iter().flatten().map(|s| s.0).collect();
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(RealError::Failed(format!(
            "the etcd members did not elect a leader within 10 s{}",
            h.log_tail(0)
        )))
    }

    /// The etcd member that leads now ([`leader`]).
    fn leader(&self, h: &dyn ServerHost) -> Option<NodeId> {
        leader(
            h.servers(),
            Duration::from_millis(100),
            &self.member_ids.borrow(),
        )
        .map(|m| m as NodeId)
    }
}
