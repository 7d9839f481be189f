//! The lock clients of a real run, over RESP to real `redis-server`s, with the simulator's
//! client algorithms (`crates/algos`: `central.rs`, `redlock.rs`):
//!
//! - `central` / `central-fencing`: `SET key owner NX PX ttl` on the one server (with
//!   fencing, in one Lua script that also `INCR`s the key's fencing counter, so grant and
//!   token are one atomic step); validity deadline `start + TTL − drift` on the client's clock;
//! - `redlock` (redis.io, "Distributed Locks with Redis"): the same `SET` on every master in
//!   turn, each with the per-master timeout; the lock is held when a majority said yes and the
//!   validity `TTL − elapsed − drift` is positive, `drift = TTL·drift_factor + 2 ms`; otherwise
//!   every master is unlocked;
//! - release: Lua compare-and-delete (`GET` = owner ⇒ `DEL`), on every master for Redlock;
//!   with `release = delete`, no owner check: `GETDEL key`, which deletes the key whoever holds
//!   it as a plain `DEL` does, and answers the value it deleted, so the client records whose
//!   lock it freed (a `freed` event of the server, as the simulator's server records it: S4);
//! - `timeout = none`: no socket timeout (redis-py before 8.0): a request waits until its
//!   answer comes or the connection ends.
//!
//! The value stored under a key is `OWNER@NODE`: the random owner value and the client's
//! node, which names the holder of a lock a `GETDEL` frees.
//!
//! The servers ([`RedisServers`]): one `redis-server` per server node, on its own address and
//! folder, persistence from the scenario's `fsync`, and its clock shim when the plan faults its
//! clock ([`prove_shim`] checks it is in force).

use std::net::Ipv4Addr;
use std::process::{Command, Stdio};
use std::time::Duration;

use locksim_core::history::LocalClock;
use locksim_core::{Nanos, NodeId};

use crate::backend::{
    server_dir, server_version, Grant, Host, Lock, Outcome, ServerHost, ServerSide,
};
use crate::conn::{CallError, Conn};
use crate::resp::{read_reply, request, Reply};
use crate::support::{Backend, NO_TIMEOUT};
use crate::{RealError, RealOptions};

/// Grant and fencing token in one step: 0 = held by another owner, -1 = granted without a
/// token, otherwise the token.
pub(crate) const ACQUIRE_FENCED: &str =
    "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then \
     if ARGV[3] == '1' then return redis.call('INCR', KEYS[2]) end return -1 end return 0";

/// `EVAL ACQUIRE_FENCED 2 lock:KEY fence:KEY VALUE TTL-MS FLAG`: takes `key` for the owner
/// `value` for `ttl` ns (whole ms, at least 1) and, with `fencing`, `INCR`s its token counter
/// in the same script. The arguments of one request, for [`crate::resp::request`].
pub(crate) fn acquire_fenced_args(
    key: u32,
    value: &str,
    ttl: Nanos,
    fencing: bool,
) -> Vec<Vec<u8>> {
    let ms = (ttl / 1_000_000).max(1);
    [
        "EVAL".to_string(),
        ACQUIRE_FENCED.to_string(),
        "2".into(),
        key_name(key),
        format!("fence:{key}"),
        value.to_string(),
        ms.to_string(),
        if fencing { "1" } else { "0" }.into(),
    ]
    .into_iter()
    .map(String::into_bytes)
    .collect()
}

/// Compare-and-delete: frees the lock only for its owner (1), else 0.
pub(crate) const RELEASE: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then \
     return redis.call('DEL', KEYS[1]) end return 0";

/// The Redis lock client of one client process.
pub struct RedisLock {
    backend: Backend,
    /// The client's node, part of each value it stores ([`owner_value`]).
    node: NodeId,
    conns: Vec<Conn>,
}

fn key_name(key: u32) -> String {
    format!("lock:{key}")
}

/// The value a client of node `node` stores under a key it takes for `owner`: `OWNER@NODE`.
pub(crate) fn owner_value(owner: u64, node: NodeId) -> String {
    format!("{owner}@{node}")
}

/// The owner value and the node of a value [`owner_value`] made; `None` for any other value.
pub(crate) fn parse_owner_value(v: &[u8]) -> Option<(u64, NodeId)> {
    let (owner, node) = std::str::from_utf8(v).ok()?.split_once('@')?;
    Some((owner.parse().ok()?, node.parse().ok()?))
}

/// GETDEL's answer: the value the key held (now deleted), or `None` (no such key, or an
/// answer that is not a value).
fn getdel_value(r: &Reply) -> Option<&[u8]> {
    match r {
        Reply::Bulk(v) => Some(v),
        _ => None,
    }
}

impl RedisLock {
    /// A client of `backend` on node `node` whose connections to `servers` leave from `me`.
    pub fn new(
        backend: Backend,
        node: NodeId,
        me: std::net::Ipv4Addr,
        servers: &[std::net::SocketAddrV4],
    ) -> Self {
        RedisLock {
            backend,
            node,
            conns: servers.iter().map(|&s| Conn::new(me, s)).collect(),
        }
    }

    fn call(&mut self, server: usize, args: &[&[u8]]) -> Result<Reply, CallError> {
        let t = (self.backend.timeout != NO_TIMEOUT)
            .then(|| Duration::from_nanos(self.backend.timeout));
        self.conns[server].call_within(&request(args), t, read_reply)
    }

    fn deadline(&self, host: &dyn Host, start: i64, ttl: Nanos) -> (i128, (LocalClock, i64)) {
        let clock = self.backend.client_clock;
        let now = host.now(clock);
        let elapsed = now as i128 - start as i128;
        let validity = ttl as i128 - elapsed - self.backend.drift(ttl) as i128;
        let until = (now as i128 + validity).clamp(i64::MIN as i128, i64::MAX as i128) as i64;
        (validity, (clock, until))
    }

    /// `SET`s `key` for `owner` on `server`: `Ok(Some(token))` granted, `Ok(None)` held.
    fn set(
        &mut self,
        server: usize,
        key: u32,
        owner: u64,
        ttl: Nanos,
    ) -> Result<Option<Option<u64>>, CallError> {
        let (k, o) = (key_name(key), owner_value(owner, self.node));
        let ms = (ttl / 1_000_000).max(1).to_string();
        let reply = if self.backend.fencing() {
            let args = acquire_fenced_args(key, &o, ttl, true);
            let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            self.call(server, &args)?
        } else {
            self.call(
                server,
                &[
                    b"SET",
                    k.as_bytes(),
                    o.as_bytes(),
                    b"NX",
                    b"PX",
                    ms.as_bytes(),
                ],
            )?
        };
        Ok(match reply {
            Reply::Status(s) if s == "OK" => Some(None),
            Reply::Int(-1) => Some(None),
            Reply::Int(t) if t > 0 => Some(Some(t as u64)),
            _ => None,
        })
    }

    /// Compare-and-delete on `server`: `Ok(true)` when it freed the owner's lock. With
    /// `release = delete`, `GETDEL`: `Ok(true)` when it deleted a lock, the owner's or
    /// another's (recorded as the server's `freed` event, through `host`).
    fn del(
        &mut self,
        host: &dyn Host,
        server: usize,
        key: u32,
        owner: u64,
    ) -> Result<bool, CallError> {
        let (k, o) = (key_name(key), owner_value(owner, self.node));
        if self.backend.release_delete {
            let r = self.call(server, &[b"GETDEL", k.as_bytes()])?;
            let Some(v) = getdel_value(&r) else {
                return Ok(false);
            };
            if let Some((freed, holder)) = parse_owner_value(v) {
                host.freed(host.true_time(), server as u32, key, freed, holder, owner);
            }
            return Ok(true);
        }
        let r = self.call(
            server,
            &[
                b"EVAL",
                RELEASE.as_bytes(),
                b"1",
                k.as_bytes(),
                o.as_bytes(),
            ],
        )?;
        Ok(r == Reply::Int(1))
    }

    /// Takes `key` for a lease of `ttl` ns with a fresh random `owner`.
    pub fn acquire(&mut self, host: &dyn Host, key: u32, owner: u64, ttl: Nanos) -> Outcome<Grant> {
        let start = host.now(self.backend.client_clock);
        let (mut yes, mut unknown, mut token) = (0, 0, None);
        let mut last_err = String::new();
        for m in 0..self.conns.len() {
            match self.set(m, key, owner, ttl) {
                Ok(Some(t)) => {
                    host.granted(host.true_time(), m as u32, key, t);
                    yes += 1;
                    token = token.or(t);
                }
                Ok(None) => {}
                Err(e) => {
                    if matches!(e, CallError::Unknown(_)) {
                        unknown += 1;
                    }
                    last_err = e.to_string();
                }
            }
        }
        let (validity, deadline) = self.deadline(host, start, ttl);
        if self.backend.servers == 1 {
            // `central`: the one server's answer, as the simulator's client reports it.
            return match (yes, unknown) {
                (1, _) => Outcome::Ok(Grant {
                    owner,
                    token,
                    deadline,
                    etcd: None,
                    row: None,
                    zk: None,
                }),
                (_, 1) => Outcome::Unknown(last_err),
                _ if last_err.is_empty() => Outcome::Fail("held by another client".into()),
                _ => Outcome::Fail(last_err),
            };
        }
        if yes >= self.backend.quorum() && validity > 0 {
            return Outcome::Ok(Grant {
                owner,
                token: None,
                deadline,
                etcd: None,
                row: None,
                zk: None,
            });
        }
        for m in 0..self.conns.len() {
            let _ = self.del(host, m, key, owner);
        }
        Outcome::Fail(format!(
            "{yes} of {} masters, validity {}",
            self.backend.servers,
            locksim_core::time::fmt_nanos(validity)
        ))
    }

    /// Releases `grant` of `key` (on every master).
    pub fn release(&mut self, host: &dyn Host, key: u32, grant: &Grant) -> Outcome<()> {
        let (mut ok, mut unknown, mut last) = (0, 0, String::new());
        for m in 0..self.conns.len() {
            match self.del(host, m, key, grant.owner) {
                Ok(true) => ok += 1,
                Ok(false) => {}
                Err(e) => {
                    if matches!(e, CallError::Unknown(_)) {
                        unknown += 1;
                    }
                    last = e.to_string();
                }
            }
        }
        if ok > 0 {
            Outcome::Ok(())
        } else if unknown > 0 {
            Outcome::Unknown(last)
        } else if !last.is_empty() && self.backend.servers == 1 {
            Outcome::Fail(last)
        } else {
            Outcome::Fail("not the owner (lease expired)".into())
        }
    }
}

impl Lock for RedisLock {
    fn acquire(&mut self, host: &dyn Host, key: u32, owner: u64, ttl: Nanos) -> Outcome<Grant> {
        RedisLock::acquire(self, host, key, owner, ttl)
    }
    fn release(&mut self, host: &dyn Host, key: u32, grant: &Grant) -> Outcome<()> {
        RedisLock::release(self, host, key, grant)
    }
}

/// The servers of `central`, `central-fencing` and `redlock`: `redis-server` processes.
pub struct RedisServers;

/// The install hint of `redis-server`, for Redis and Sentinel.
pub const REDIS_NEEDS: &str = "real mode needs redis-server (Debian: apt-get install redis-server)";

impl ServerSide for RedisServers {
    fn version(&self, opts: &RealOptions) -> Result<String, String> {
        server_version(&opts.redis, REDIS_NEEDS)
    }

    fn log_files(&self) -> &'static [&'static str] {
        &["redis.log"]
    }

    fn command(&self, h: &dyn ServerHost, n: NodeId) -> Result<Command, RealError> {
        let data = server_dir(h, n)?;
        let a = h.servers()[n as usize];
        let mut c = Command::new(&h.opts().redis);
        c.arg("--bind")
            .arg(a.ip().to_string())
            .arg("--port")
            .arg(a.port().to_string())
            .arg("--dir")
            .arg(&data)
            .args(["--save", "", "--protected-mode", "no", "--daemonize", "no"])
            .arg("--logfile")
            .arg(data.join("redis.log"));
        if h.backend().fsync_always {
            c.args(["--appendonly", "yes", "--appendfsync", "always"]);
        } else {
            c.args(["--appendonly", "no"]);
        }
        redis_io(h, n, &mut c);
        Ok(c)
    }

    /// Each server answers `PING` and its clock shim is in force ([`prove_shim`]).
    fn wait_ready(&self, h: &mut dyn ServerHost) -> Result<(), RealError> {
        for n in h.scenario().cluster.server_ids() {
            let a = h.servers()[n as usize];
            h.wait_up(n, a, true)?;
            prove_shim(h, n)?;
        }
        Ok(())
    }
}

/// A Redis server's clock shim (when the plan faults its clock) and no terminal I/O.
pub fn redis_io(h: &dyn ServerHost, n: NodeId, c: &mut Command) {
    if let (Some(file), Some(shim)) = (h.clock_file(n), &h.opts().clockshim) {
        c.env("LD_PRELOAD", shim)
            .env("LOCKSIM_CLOCK_FILE", &file.path);
    }
    c.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
}

/// Proves that server `n`'s clock shim is in force before the run starts: shifts its clock
/// file by [`crate::clockfile::PROBE`], reads the server's `TIME`, shifts it back. A shim
/// that did not load (a wrong file, a loader that ignored `LD_PRELOAD`) would otherwise
/// leave the clock faults without effect and the run SAFE for no reason.
///
/// # Errors
/// [`RealError::Failed`] when the server does not answer `TIME`, [`RealError::Setup`] when
/// the shim is not in force.
pub fn prove_shim(h: &dyn ServerHost, n: NodeId) -> Result<(), RealError> {
    use crate::clockfile::{host_realtime, judge_probe, PROBE};
    let Some(file) = h.clock_file(n) else {
        return Ok(());
    };
    let shim = h
        .opts()
        .clockshim
        .as_ref()
        .map_or(String::new(), |p| p.display().to_string());
    file.step(PROBE);
    let before = host_realtime();
    let mut conn = Conn::new(Ipv4Addr::LOCALHOST, h.servers()[n as usize]);
    let reply = conn.call(&request(&[b"TIME"]), Duration::from_secs(2), |r| {
        read_reply(r)
    });
    let after = host_realtime();
    file.step(-PROBE);
    let seconds = |r: &Reply| match r {
        Reply::Bulk(b) => std::str::from_utf8(b).ok()?.parse::<i64>().ok(),
        _ => None,
    };
    let server = match &reply {
        Ok(Reply::Array(v)) if v.len() == 2 => seconds(&v[0])
            .zip(seconds(&v[1]))
            .map(|(s, us)| s * 1_000_000_000 + us * 1_000),
        _ => None,
    };
    let Some(server) = server else {
        return Err(RealError::Failed(format!(
            "{} did not answer TIME ({reply:?})",
            h.name(n)
        )));
    };
    judge_probe(server, before, after, PROBE).map_err(|e| {
        RealError::Setup(format!(
            "the clock shim {shim} is not in force in {} ({e}): its clock faults would do nothing; build it with `cargo build -p locksim-clockshim` or point LOCKSIM_CLOCKSHIM at liblocksim_clockshim.so",
            h.name(n)
        ))
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_fenced_acquire_names_the_key_its_counter_and_the_flag() {
        let a = super::acquire_fenced_args(7, "42@3", 1_500_000_000, true);
        let a: Vec<&str> = a.iter().map(|x| std::str::from_utf8(x).unwrap()).collect();
        assert_eq!(a[0], "EVAL");
        assert_eq!(a[1], super::ACQUIRE_FENCED);
        assert_eq!(a[2..], ["2", "lock:7", "fence:7", "42@3", "1500", "1"]);
        let b = super::acquire_fenced_args(7, "42", 10, false);
        assert_eq!(b[6], b"1", "at least 1 ms");
        assert_eq!(b[7], b"0");
    }

    #[test]
    fn a_stored_value_names_its_owner_and_node_and_nothing_else_parses() {
        let v = super::owner_value(18_446_744_073_709_551_615, 7);
        assert_eq!(v, "18446744073709551615@7");
        assert_eq!(super::parse_owner_value(v.as_bytes()), Some((u64::MAX, 7)));
        for bad in ["42", "@7", "42@", "x@7", "42@c1", "", "42@7@8"] {
            assert_eq!(super::parse_owner_value(bad.as_bytes()), None, "{bad}");
        }
        assert_eq!(super::parse_owner_value(&[0xff, b'@', b'1']), None);
    }

    #[test]
    fn getdel_of_a_missing_key_frees_nothing() {
        use crate::resp::Reply;
        assert_eq!(super::getdel_value(&Reply::Nil), None);
        assert_eq!(super::getdel_value(&Reply::Int(1)), None);
        assert_eq!(
            super::getdel_value(&Reply::Bulk(b"1@4".to_vec())),
            Some(&b"1@4"[..])
        );
    }
}
