//! `redis-failover` on real Redis: a primary (`n1`), `replicas` asynchronous replicas
//! (`n2…`) and one Sentinel (the last server) with quorum 1, as the simulator's model
//! (`crates/algos/src/redisfailover`) has one monitor, said plainly: one Sentinel is its own
//! majority, so it alone decides a failover (redis.io, "High availability with Redis
//! Sentinel", recommends at least three).
//!
//! - **The servers** are `redis-server`s started from configuration files of ours (so that
//!   Sentinel's `CONFIG REWRITE` of a node's role survives its restart, as the model keeps roles
//!   on disk); each binds its own `127.0.0.N` and makes its own connections from it
//!   (`bind-source-addr`: a replica's to its primary, Sentinel's to every node), so nftables
//!   cuts replication and monitoring like any link, and a replica announces that address
//!   (`replica-announce-ip`), which Sentinel learns from the primary's `INFO`. Replication, promotion and the
//!   reconfiguration of the other nodes are Redis's and Sentinel's own, with the scenario's
//!   `down_after` as `down-after-milliseconds`. A run starts once every replica is in sync
//!   (`repl-diskless-sync-delay 0`: Redis 7 otherwise waits 5 s before a first full sync, for
//!   more replicas to join it) and Sentinel knows every replica.
//! - **The client** asks Sentinel for the primary (`SENTINEL get-master-addr-by-name`), keeps
//!   using the answer until a request fails or a replica answers `READONLY`, and runs the
//!   single-instance lock against it: `SET key owner NX PX ttl` (with `fencing = true`, the
//!   `INCR` of a token counter in the same script), then `WAIT n timeout` with
//!   `wait_replicas = n` (a shortfall is a failed acquire); release is the compare-and-delete
//!   script, or a plain `DEL` with `release = delete`.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use locksim_core::{Nanos, NodeId};

use crate::backend::{server_dir, server_version, Grant, Host, Outcome, ServerHost, ServerSide};
use crate::conn::{CallError, Conn};
use crate::redis::{redis_io, RedisServers, REDIS_NEEDS, RELEASE};
use crate::resp::{read_reply, request, Reply};
use crate::support::Backend;
use crate::{RealError, RealOptions};

/// The name Sentinel monitors the primary under.
pub const MASTER: &str = "locksim";

/// A data node's configuration: its address, folder, persistence, and (for a replica) its
/// primary. `fsync_always`: `appendonly yes` with `appendfsync always`; else no AOF and no
/// snapshots (a restarted node is empty).
pub fn node_conf(
    dir: &Path,
    me: SocketAddrV4,
    primary: Option<SocketAddrV4>,
    fsync_always: bool,
) -> String {
    let mut c = format!(
        "bind {ip}\nbind-source-addr {ip}\nreplica-announce-ip {ip}\nport {port}\ndir {dir}\n\
         logfile {dir}/redis.log\nprotected-mode no\ndaemonize no\nsave \"\"\n\
         repl-diskless-sync-delay 0\n",
        ip = me.ip(),
        port = me.port(),
        dir = dir.display()
    );
    c += if fsync_always {
        "appendonly yes\nappendfsync always\n"
    } else {
        "appendonly no\n"
    };
    if let Some(p) = primary {
        c += &format!("replicaof {} {}\n", p.ip(), p.port());
    }
    c
}

/// The `down-after-milliseconds` Sentinel starts with, before the run's own is set
/// ([`ready_with_down_after`]): with a run's 1 s, a Sentinel just started sometimes called the
/// primary down within its first second (no answer to its first PING yet), tried a failover
/// that found no replica it knew well enough (`-failover-abort-no-good-slave`), and then
/// refused any failover for twice its failover timeout (6 min): 2 of 10 real runs of
/// `sims/real/redis-failover-split-brain.toml` had none.
pub const SETUP_DOWN_AFTER: Nanos = 60_000_000_000;

/// Sentinel's configuration: it monitors `primary` under [`MASTER`] with quorum 1 and
/// `down-after-milliseconds` of `down_after` ns.
pub fn sentinel_conf(
    dir: &Path,
    me: SocketAddrV4,
    primary: SocketAddrV4,
    down_after: Nanos,
) -> String {
    format!(
        "bind {ip}\nbind-source-addr {ip}\nport {port}\ndir {dir}\nlogfile {dir}/redis.log\n\
         protected-mode no\ndaemonize no\nsentinel monitor {MASTER} {pip} {pport} 1\n\
         sentinel down-after-milliseconds {MASTER} {ms}\n\
         sentinel parallel-syncs {MASTER} 1\n",
        ip = me.ip(),
        port = me.port(),
        dir = dir.display(),
        pip = primary.ip(),
        pport = primary.port(),
        ms = (down_after / 1_000_000).max(1),
    )
}

/// Asks Sentinel at `sentinel` (from `from`) which address the primary has.
pub fn ask_primary(
    from: Ipv4Addr,
    sentinel: SocketAddrV4,
    timeout: Duration,
) -> Option<SocketAddrV4> {
    let mut c = Conn::new(from, sentinel);
    let r = c
        .call(
            &request(&[b"SENTINEL", b"get-master-addr-by-name", MASTER.as_bytes()]),
            timeout,
            read_reply,
        )
        .ok()?;
    addr_of(&r)
}

fn addr_of(r: &Reply) -> Option<SocketAddrV4> {
    let Reply::Array(v) = r else { return None };
    let text = |r: &Reply| match r {
        Reply::Bulk(b) => std::str::from_utf8(b).ok().map(str::to_string),
        _ => None,
    };
    let ip: Ipv4Addr = text(v.first()?)?.parse().ok()?;
    let port: u16 = text(v.get(1)?)?.parse().ok()?;
    Some(SocketAddrV4::new(ip, port))
}

/// Listens on Sentinel's `+switch-master` channel (redis.io, "Sentinel API": "the master new
/// configuration is now the one specified") from the host's own address, which no fault of a
/// run cuts, until `stop`: each announced promotion's true time (ns since `t0`'s run start, when
/// the message arrived) and the new primary's address. A Sentinel that is paused, crashed or not
/// yet up is retried every 50 ms.
pub fn watch_switches(
    sentinel: SocketAddrV4,
    t0: u64,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<Vec<(Nanos, SocketAddrV4)>> {
    use std::io::{BufReader, Write};
    use std::sync::atomic::Ordering;
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let Ok(mut s) = std::net::TcpStream::connect_timeout(
                &std::net::SocketAddr::V4(sentinel),
                Duration::from_millis(200),
            ) else {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            };
            let sub = request(&[b"SUBSCRIBE", b"+switch-master"]);
            if s.write_all(&sub).is_err()
                || s.set_read_timeout(Some(Duration::from_millis(100)))
                    .is_err()
            {
                continue;
            }
            let mut r = BufReader::new(s);
            while !stop.load(Ordering::Relaxed) {
                match read_reply(&mut r) {
                    Ok(Reply::Array(v)) if v.len() == 3 => {
                        let at = crate::node::true_now(t0);
                        if let Some(a) = switched_to(&v[2]) {
                            seen.push((at, a));
                        }
                    }
                    Ok(_) => {}
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) => {}
                    Err(_) => break,
                }
            }
        }
        seen
    })
}

/// The new primary in a `+switch-master` message: `NAME OLD-IP OLD-PORT NEW-IP NEW-PORT`.
fn switched_to(r: &Reply) -> Option<SocketAddrV4> {
    let Reply::Bulk(b) = r else { return None };
    let text = std::str::from_utf8(b).ok()?;
    let f: Vec<&str> = text.split_whitespace().collect();
    (f.len() == 5 && f[0] == MASTER)
        .then(|| Some(SocketAddrV4::new(f[3].parse().ok()?, f[4].parse().ok()?)))
        .flatten()
}

/// How many replicas the primary at `primary` has online (`INFO replication`), or `None`.
pub fn online_replicas(primary: SocketAddrV4, timeout: Duration) -> Option<usize> {
    let mut c = Conn::new(Ipv4Addr::LOCALHOST, primary);
    match c
        .call(&request(&[b"INFO", b"replication"]), timeout, read_reply)
        .ok()?
    {
        Reply::Bulk(b) => Some(
            String::from_utf8_lossy(&b)
                .lines()
                .filter(|l| l.starts_with("slave") && l.contains("state=online"))
                .count(),
        ),
        _ => None,
    }
}

/// How many replicas Sentinel at `sentinel` knows of (`SENTINEL replicas`), or `None`.
pub fn known_replicas(sentinel: SocketAddrV4, timeout: Duration) -> Option<usize> {
    let mut c = Conn::new(Ipv4Addr::LOCALHOST, sentinel);
    match c
        .call(
            &request(&[b"SENTINEL", b"replicas", MASTER.as_bytes()]),
            timeout,
            read_reply,
        )
        .ok()?
    {
        Reply::Array(v) => Some(v.len()),
        _ => None,
    }
}

/// Sets Sentinel's `down-after-milliseconds` to `down_after` ns (`SENTINEL SET`, which it
/// saves in its configuration file) and says whether it now monitors the primary with that
/// value, sees it up (flags `master` only) and has attempted no failover (`failover-state`
/// none). `None`: Sentinel did not answer.
pub fn ready_with_down_after(
    sentinel: SocketAddrV4,
    down_after: Nanos,
    timeout: Duration,
) -> Option<Result<(), String>> {
    let mut c = Conn::new(Ipv4Addr::LOCALHOST, sentinel);
    let ms = (down_after / 1_000_000).max(1).to_string();
    let set = request(&[
        b"SENTINEL",
        b"SET",
        MASTER.as_bytes(),
        b"down-after-milliseconds",
        ms.as_bytes(),
    ]);
    match c.call(&set, timeout, read_reply).ok()? {
        Reply::Status(_) => {}
        other => return Some(Err(format!("SENTINEL SET answered {other:?}"))),
    }
    let r = c
        .call(
            &request(&[b"SENTINEL", b"MASTER", MASTER.as_bytes()]),
            timeout,
            read_reply,
        )
        .ok()?;
    let Reply::Array(v) = r else {
        return Some(Err(format!("SENTINEL MASTER answered {r:?}")));
    };
    let text = |r: &Reply| match r {
        Reply::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        _ => String::new(),
    };
    let field = |name: &str| {
        v.chunks(2)
            .find(|p| p.len() == 2 && text(&p[0]) == name)
            .map(|p| text(&p[1]))
    };
    let (flags, after, state) = (
        field("flags"),
        field("down-after-milliseconds"),
        field("failover-state"),
    );
    if flags.as_deref() != Some("master")
        || after.as_deref() != Some(ms.as_str())
        || state.as_deref().is_some_and(|s| s != "none")
    {
        return Some(Err(format!(
            "Sentinel's view of the primary: flags {flags:?}, down-after-milliseconds {after:?}, failover-state {state:?}"
        )));
    }
    Some(Ok(()))
}

/// The lock client of one client process.
pub struct SentinelLock {
    backend: Backend,
    me: Ipv4Addr,
    /// Every server's address: the data nodes, then Sentinel.
    servers: Vec<SocketAddrV4>,
    conns: Vec<Conn>,
    /// The primary as Sentinel last said (an index into `servers`); `None`: ask first.
    primary: Option<usize>,
}

impl SentinelLock {
    /// A client whose connections to `servers` (the last one Sentinel) leave from `me`.
    pub fn new(backend: Backend, me: Ipv4Addr, servers: &[SocketAddrV4]) -> Self {
        SentinelLock {
            backend,
            me,
            servers: servers.to_vec(),
            conns: servers.iter().map(|&s| Conn::new(me, s)).collect(),
            primary: None,
        }
    }

    /// The cached primary, else Sentinel's answer, else (Sentinel unreachable) `n1`.
    fn primary(&mut self) -> usize {
        if let Some(p) = self.primary {
            return p;
        }
        let sentinel = *self.servers.last().expect("a sentinel");
        let t = Duration::from_nanos(self.backend.timeout);
        let p = ask_primary(self.me, sentinel, t)
            .and_then(|a| self.servers.iter().position(|&s| s == a));
        if p.is_some() {
            self.primary = p;
        }
        p.unwrap_or(0)
    }

    /// One command on the primary; a failure or `READONLY` makes the next one ask Sentinel.
    fn command(&mut self, args: &[&[u8]], timeout: Nanos) -> (usize, Result<Reply, CallError>) {
        let p = self.primary();
        let r = self.conns[p].call(&request(args), Duration::from_nanos(timeout), read_reply);
        let readonly = matches!(&r, Ok(Reply::Error(e)) if e.starts_with("READONLY"));
        if r.is_err() || readonly {
            self.primary = None;
        }
        (p, r)
    }

    /// Takes `key` for `ttl` ns with `owner` as its value.
    pub fn acquire(&mut self, host: &dyn Host, key: u32, owner: u64, ttl: Nanos) -> Outcome<Grant> {
        let clock = self.backend.client_clock;
        let start = host.now(clock);
        let value = owner.to_string();
        let args = crate::redis::acquire_fenced_args(key, &value, ttl, self.backend.fencing());
        let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        let (p, r) = self.command(&args, self.backend.timeout);
        let token = match r {
            Ok(Reply::Int(-1)) => None,
            Ok(Reply::Int(t)) if t > 0 => Some(t as u64),
            Ok(Reply::Int(0)) => return Outcome::Fail("held by another client".into()),
            Ok(Reply::Error(e)) if e.starts_with("READONLY") => {
                return Outcome::Fail("READONLY: asked a replica".into())
            }
            Ok(other) => return Outcome::Fail(format!("server answered {other:?}")),
            Err(e @ CallError::Unknown(_)) => return Outcome::Unknown(e.to_string()),
            Err(e) => return Outcome::Fail(e.to_string()),
        };
        host.granted(host.true_time(), p as u32, key, token);
        let wait = self.backend.failover.wait_replicas;
        if wait > 0 {
            let (n, ms) = (
                wait.to_string(),
                (self.backend.failover.wait_timeout / 1_000_000)
                    .max(1)
                    .to_string(),
            );
            let t = self.backend.timeout + self.backend.failover.wait_timeout;
            match self.command(&[b"WAIT", n.as_bytes(), ms.as_bytes()], t).1 {
                Ok(Reply::Int(acked)) if acked >= wait as i64 => {}
                Ok(Reply::Int(acked)) => {
                    return Outcome::Fail(format!(
                        "WAIT {wait}: only {acked} replicas acknowledged"
                    ))
                }
                Ok(other) => return Outcome::Fail(format!("WAIT answered {other:?}")),
                Err(e) => return Outcome::Fail(format!("WAIT: {e}")),
            }
        }
        let until = start
            .saturating_add(ttl as i64)
            .saturating_sub(self.backend.drift(ttl));
        Outcome::Ok(Grant {
            owner,
            token,
            deadline: (clock, until),
            etcd: None,
            row: None,
            zk: None,
        })
    }

    /// Releases `grant` of `key`: compare-and-delete, or `DEL` with `release = delete`.
    pub fn release(&mut self, key: u32, grant: &Grant) -> Outcome<()> {
        let (k, o) = (format!("lock:{key}"), grant.owner.to_string());
        let r = if self.backend.release_delete {
            self.command(&[b"DEL", k.as_bytes()], self.backend.timeout)
                .1
        } else {
            let args: [&[u8]; 5] = [
                b"EVAL",
                RELEASE.as_bytes(),
                b"1",
                k.as_bytes(),
                o.as_bytes(),
            ];
            self.command(&args, self.backend.timeout).1
        };
        match r {
            Ok(Reply::Int(1)) => Outcome::Ok(()),
            Ok(Reply::Int(0)) => Outcome::Fail("not the owner (lease expired)".into()),
            Ok(Reply::Error(e)) if e.starts_with("READONLY") => {
                Outcome::Fail("READONLY: asked a replica".into())
            }
            Ok(other) => Outcome::Fail(format!("server answered {other:?}")),
            Err(e @ CallError::Unknown(_)) => Outcome::Unknown(e.to_string()),
            Err(e) => Outcome::Fail(e.to_string()),
        }
    }
}

impl crate::backend::Lock for SentinelLock {
    fn acquire(&mut self, host: &dyn Host, key: u32, owner: u64, ttl: Nanos) -> Outcome<Grant> {
        SentinelLock::acquire(self, host, key, owner, ttl)
    }
    fn release(&mut self, _host: &dyn Host, key: u32, grant: &Grant) -> Outcome<()> {
        SentinelLock::release(self, key, grant)
    }
}

/// The servers of `redis-failover`: `redis-server`s from configuration files of ours, the last
/// one a Sentinel.
pub struct SentinelServers;

impl ServerSide for SentinelServers {
    fn version(&self, opts: &RealOptions) -> Result<String, String> {
        server_version(&opts.redis, REDIS_NEEDS)
    }

    fn log_files(&self) -> &'static [&'static str] {
        &["redis.log"]
    }

    /// A node from its configuration file, written at its first start only: a restart reads
    /// what Sentinel's `CONFIG REWRITE` left there (its role), as the model keeps roles on
    /// disk. The last server is the Sentinel.
    fn command(&self, h: &dyn ServerHost, n: NodeId) -> Result<Command, RealError> {
        let data = server_dir(h, n)?;
        let sentinel = n + 1 == h.scenario().cluster.servers;
        let conf = data.join(if sentinel {
            "sentinel.conf"
        } else {
            "redis.conf"
        });
        if !conf.exists() {
            let me = h.servers()[n as usize];
            let text = if sentinel {
                // The run's own down-after is set once every replica is known
                // (`wait_sentinel`); a restart reads it from the file Sentinel rewrote.
                sentinel_conf(&data, me, h.servers()[0], SETUP_DOWN_AFTER)
            } else {
                let primary = (n > 0).then_some(h.servers()[0]);
                node_conf(&data, me, primary, h.backend().fsync_always)
            };
            std::fs::write(&conf, text)
                .map_err(|e| RealError::Setup(format!("{}: {e}", conf.display())))?;
        }
        let mut c = Command::new(&h.opts().redis);
        c.arg(&conf);
        if sentinel {
            c.arg("--sentinel");
        }
        redis_io(h, n, &mut c);
        Ok(c)
    }

    /// As Redis's ([`RedisServers`]), then [`wait_sentinel`].
    fn wait_ready(&self, h: &mut dyn ServerHost) -> Result<(), RealError> {
        RedisServers.wait_ready(h)?;
        wait_sentinel(h)
    }

    /// The primary Sentinel names.
    fn leader(&self, h: &dyn ServerHost) -> Option<NodeId> {
        let m = *h.servers().last()?;
        let p = ask_primary(Ipv4Addr::LOCALHOST, m, Duration::from_millis(200))?;
        h.servers()
            .iter()
            .position(|&s| s == p)
            .map(|i| i as NodeId)
    }

    /// Sentinel's own word on each promotion ([`watch_switches`]).
    fn watch_leaders(
        &self,
        h: &dyn ServerHost,
        stop: Arc<AtomicBool>,
    ) -> Option<JoinHandle<Vec<(Nanos, SocketAddrV4)>>> {
        let servers = h.servers();
        let m = servers[servers.len() - 1];
        Some(watch_switches(m, h.t0(), stop))
    }
}

/// Waits until every replica is in sync with the primary and Sentinel knows every one (it
/// learns them from the primary's `INFO`), then sets the run's `down_after`.
///
/// # Errors
/// [`RealError::Failed`] (quoting the Sentinel's log) when that takes over 10 s or the
/// Sentinel refuses the setting, [`RealError::Interrupted`].
pub fn wait_sentinel(h: &mut dyn ServerHost) -> Result<(), RealError> {
    let m = h.scenario().cluster.servers - 1;
    let want = h.backend().failover.replicas as usize;
    for _ in 0..400 {
        if h.interrupted() {
            return Err(RealError::Interrupted);
        }
        h.exited_early(m)?;
        let t = Duration::from_millis(200);
        let known = known_replicas(h.servers()[m as usize], t);
        let online = online_replicas(h.servers()[0], t);
        if known == Some(want) && online == Some(want) {
            let m_addr = h.servers()[m as usize];
            let down_after = h.backend().failover.down_after;
            return match ready_with_down_after(m_addr, down_after, t) {
                Some(Ok(())) => Ok(()),
                Some(Err(e)) => Err(RealError::Failed(format!(
                    "the Sentinel ({}) is not ready for the run: {e}{}",
                    h.name(m),
                    h.log_tail(m)
                ))),
                None => Err(RealError::Failed(format!(
                    "the Sentinel ({}) did not answer SENTINEL SET{}",
                    h.name(m),
                    h.log_tail(m)
                ))),
            };
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    Err(RealError::Failed(format!(
        "the {want} replicas were not in sync, or the Sentinel ({}) did not know them, within 10 s{}",
        h.name(m),
        h.log_tail(m)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_switch_message_names_the_new_primary() {
        let m = Reply::Bulk(b"locksim 127.0.0.10 6379 127.0.0.12 6380".to_vec());
        assert_eq!(
            switched_to(&m),
            Some(SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, 12), 6380))
        );
        assert_eq!(switched_to(&Reply::Bulk(b"other 1 2 3 4".to_vec())), None);
        assert_eq!(switched_to(&Reply::Bulk(b"locksim 1 2".to_vec())), None);
    }

    #[test]
    fn configurations_bind_their_node_and_name_the_primary() {
        let a = SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, 10), 7001);
        let b = SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, 11), 7002);
        let n = node_conf(Path::new("/d"), b, Some(a), false);
        assert!(
            n.contains("bind 127.0.0.11\nbind-source-addr 127.0.0.11\n")
                && n.contains("replica-announce-ip 127.0.0.11\nport 7002\n")
                && n.contains("replicaof 127.0.0.10 7001"),
            "{n}"
        );
        assert!(n.contains("appendonly no"), "{n}");
        let s = sentinel_conf(Path::new("/d"), b, a, 1_500_000_000);
        assert!(
            s.contains("sentinel monitor locksim 127.0.0.10 7001 1"),
            "{s}"
        );
        assert!(s.contains("down-after-milliseconds locksim 1500"), "{s}");
        let r = Reply::Array(vec![
            Reply::Bulk(b"127.0.0.10".to_vec()),
            Reply::Bulk(b"7001".to_vec()),
        ]);
        assert_eq!(addr_of(&r), Some(a));
        assert_eq!(addr_of(&Reply::Nil), None);
    }
}
