//! ZooKeeper's client protocol, the few requests a lock recipe needs, over a socket of ours
//! bound to the node's own loopback address (so nftables cuts it like every other link).
//!
//! The encoding is jute's (apache/zookeeper `zookeeper-jute/src/main/resources/zookeeper.jute`,
//! and the Programmer's Guide): every packet is a 4-byte big-endian length and a record; ints
//! and longs are big-endian, a string or buffer is its length (int) and bytes, a vector its
//! count and elements, a boolean one byte. A session starts with a `ConnectRequest` (protocol
//! version 0, the last zxid the client saw, the session timeout it asks for in ms, the session
//! id and password to re-attach to, or 0 and 16 zero bytes for a new session); the server's
//! `ConnectResponse` gives the negotiated timeout, or a timeout of 0 when the session has
//! expired. Then each request is `RequestHeader {xid, type}` and its body, each answer
//! `ReplyHeader {xid, zxid, err}` and, when `err` is 0, its body; a watch fires as a reply of
//! xid -1 carrying a `WatcherEvent`, a ping is xid -2 of type 11.
//!
//! Like the Java client's `ClientCnxn`, a connection that waits for an answer sends a ping
//! when it has sent nothing for a while (the caller says how long: half the read timeout), so
//! the session stays touched while a request is outstanding.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};

/// Request types (`ZooDefs.OpCode`).
pub mod op {
    pub const CREATE: i32 = 1;
    pub const DELETE: i32 = 2;
    pub const EXISTS: i32 = 3;
    pub const GET_CHILDREN: i32 = 8;
    pub const SYNC: i32 = 9;
    pub const PING: i32 = 11;
}

/// `KeeperException.Code` values the recipe tells apart.
pub mod code {
    pub const NO_NODE: i32 = -101;
    pub const NODE_EXISTS: i32 = -110;
    pub const SESSION_EXPIRED: i32 = -112;
}

/// `CreateMode`: persistent and ephemeral-sequential.
pub const PERSISTENT: i32 = 0;
pub const EPHEMERAL_SEQUENTIAL: i32 = 3;

/// `Watcher.Event.EventType.NodeDeleted`.
const NODE_DELETED: i32 = 2;

/// Why a request has no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ZkError {
    /// No connection could be opened: nothing was sent.
    NotSent(String),
    /// The connection broke or no answer came in time: the request may have taken effect
    /// (ZooKeeper's `CONNECTIONLOSS`). The connection is unusable.
    Lost(String),
    /// The server said the session has expired (at connect, or `SESSIONEXPIRED`).
    Expired,
    /// The server refused the request with this error code (`NONODE`, `NODEEXISTS`, …).
    Code(i32),
}

impl std::fmt::Display for ZkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ZkError::NotSent(e) => write!(f, "not connected: {e}"),
            ZkError::Lost(e) => write!(f, "connection loss: {e}"),
            ZkError::Expired => write!(f, "session expired"),
            ZkError::Code(c) => write!(f, "error {c}"),
        }
    }
}

/// A session the server created: its id, password and the timeout it granted (ms).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub id: i64,
    pub passwd: Vec<u8>,
    pub timeout_ms: i32,
}

/// A jute record being written.
#[derive(Default)]
pub struct Out(Vec<u8>);

impl Out {
    pub fn int(mut self, v: i32) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn long(mut self, v: i64) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn boolean(mut self, v: bool) -> Self {
        self.0.push(v as u8);
        self
    }
    pub fn buffer(self, b: &[u8]) -> Self {
        let mut s = self.int(b.len() as i32);
        s.0.extend_from_slice(b);
        s
    }
    pub fn string(self, s: &str) -> Self {
        self.buffer(s.as_bytes())
    }
    /// The open ACL (`world:anyone`, every permission), a vector of one.
    pub fn open_acl(self) -> Self {
        self.int(1).int(31).string("world").string("anyone")
    }
    pub fn bytes(self) -> Vec<u8> {
        self.0
    }
}

/// A jute record being read; reads past its end are errors, never panics.
pub struct In<'a>(&'a [u8]);

impl<'a> In<'a> {
    pub fn new(b: &'a [u8]) -> Self {
        In(b)
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.0.len() < n {
            return Err(format!(
                "a record ended early ({} of {n} bytes)",
                self.0.len()
            ));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    pub fn int(&mut self) -> Result<i32, String> {
        Ok(i32::from_be_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    pub fn long(&mut self) -> Result<i64, String> {
        Ok(i64::from_be_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    pub fn buffer(&mut self) -> Result<Vec<u8>, String> {
        let n = self.int()?;
        if n < 0 {
            return Ok(Vec::new());
        }
        Ok(self.take(n as usize)?.to_vec())
    }
    pub fn string(&mut self) -> Result<String, String> {
        String::from_utf8(self.buffer()?).map_err(|e| e.to_string())
    }
    pub fn strings(&mut self) -> Result<Vec<String>, String> {
        let n = self.int()?;
        (0..n.max(0)).map(|_| self.string()).collect()
    }
    /// A `Stat`'s `ephemeralOwner` (the session that owns an ephemeral node, else 0).
    pub fn stat_ephemeral_owner(&mut self) -> Result<i64, String> {
        // czxid, mzxid, ctime, mtime (longs), version, cversion, aversion (ints).
        self.take(8 * 4 + 4 * 3)?;
        self.long()
    }
}

/// One connection to one server, carrying one session.
pub struct ZkConn {
    stream: TcpStream,
    buf: Vec<u8>,
    xid: i32,
    /// The highest zxid any answer carried.
    pub zxid: i64,
    last_send: Instant,
    /// Paths whose `NodeDeleted` watch has fired and not been consumed.
    deleted: Vec<String>,
}

impl ZkConn {
    /// Opens a connection from `from` to `to` and starts `session` on it (`None`: a new one),
    /// asking for `timeout_ms`; `last_zxid` is the newest zxid the client has seen (a server
    /// behind it refuses the connection, as ZooKeeper's do). Everything within `timeout`.
    ///
    /// # Errors
    /// [`ZkError::NotSent`] when no connection opens; [`ZkError::Expired`] when the server
    /// says `session` has expired; [`ZkError::Lost`] when the handshake gets no answer.
    pub fn connect(
        from: Ipv4Addr,
        to: SocketAddrV4,
        session: Option<&Session>,
        timeout_ms: i32,
        last_zxid: i64,
        timeout: Duration,
    ) -> Result<(ZkConn, Session), ZkError> {
        let started = Instant::now();
        let s = (|| {
            let s = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
            s.bind(&SocketAddr::V4(SocketAddrV4::new(from, 0)).into())?;
            s.connect_timeout(&SocketAddr::V4(to).into(), timeout)?;
            s.set_tcp_nodelay(true)?;
            Ok::<TcpStream, std::io::Error>(s.into())
        })()
        .map_err(|e: std::io::Error| ZkError::NotSent(e.to_string()))?;
        let mut c = ZkConn {
            stream: s,
            buf: Vec::new(),
            xid: 0,
            zxid: last_zxid,
            last_send: Instant::now(),
            deleted: Vec::new(),
        };
        let (id, passwd) = session.map_or((0, vec![0u8; 16]), |s| (s.id, s.passwd.clone()));
        let req = Out::default()
            .int(0)
            .long(last_zxid)
            .int(timeout_ms)
            .long(id)
            .buffer(&passwd)
            .boolean(false)
            .bytes();
        c.send(&req)?;
        let deadline = started + timeout;
        let frame = c.frame(deadline, None)?;
        let mut r = In::new(&frame);
        let parse = |r: &mut In| -> Result<Session, String> {
            let _version = r.int()?;
            let timeout_ms = r.int()?;
            let id = r.long()?;
            let passwd = r.buffer()?;
            Ok(Session {
                id,
                passwd,
                timeout_ms,
            })
        };
        let got = parse(&mut r).map_err(ZkError::Lost)?;
        if got.timeout_ms <= 0 {
            return Err(ZkError::Expired);
        }
        Ok((c, got))
    }

    fn send(&mut self, record: &[u8]) -> Result<(), ZkError> {
        let mut p = (record.len() as i32).to_be_bytes().to_vec();
        p.extend_from_slice(record);
        self.stream
            .set_write_timeout(Some(Duration::from_secs(1)))
            .and_then(|_| self.stream.write_all(&p))
            .map_err(|e| ZkError::Lost(e.to_string()))?;
        self.last_send = Instant::now();
        Ok(())
    }

    /// The next whole packet, read by `deadline`; with `ping_every`, a ping goes out whenever
    /// nothing was sent for that long.
    fn frame(
        &mut self,
        deadline: Instant,
        ping_every: Option<Duration>,
    ) -> Result<Vec<u8>, ZkError> {
        loop {
            if self.buf.len() >= 4 {
                let n = i32::from_be_bytes(self.buf[..4].try_into().expect("4 bytes"));
                if !(0..=16 << 20).contains(&n) {
                    return Err(ZkError::Lost(format!("a packet of {n} bytes")));
                }
                if self.buf.len() >= 4 + n as usize {
                    let f = self.buf[4..4 + n as usize].to_vec();
                    self.buf.drain(..4 + n as usize);
                    return Ok(f);
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(ZkError::Lost("no answer within the timeout".into()));
            }
            let mut wake = deadline;
            if let Some(p) = ping_every {
                let due = self.last_send + p;
                if now >= due {
                    let ping = Out::default().int(-2).int(op::PING).bytes();
                    self.send(&ping)?;
                    continue;
                }
                wake = wake.min(due);
            }
            let wait = wake
                .saturating_duration_since(now)
                .max(Duration::from_millis(1));
            self.stream
                .set_read_timeout(Some(wait))
                .map_err(|e| ZkError::Lost(e.to_string()))?;
            let mut chunk = [0u8; 4096];
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(ZkError::Lost("the server closed the connection".into())),
                Ok(k) => self.buf.extend_from_slice(&chunk[..k]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => return Err(ZkError::Lost(e.to_string())),
            }
        }
    }

    /// Handles a packet that is not the answer awaited: a watch event or a ping's answer.
    /// Returns the reply header and body when it is an answer to `xid`.
    fn dispatch(
        &mut self,
        frame: &[u8],
        xid: Option<i32>,
    ) -> Result<Option<(i32, Vec<u8>)>, ZkError> {
        let mut r = In::new(frame);
        let got = r.int().map_err(ZkError::Lost)?;
        let zxid = r.long().map_err(ZkError::Lost)?;
        let err = r.int().map_err(ZkError::Lost)?;
        if zxid > 0 {
            self.zxid = self.zxid.max(zxid);
        }
        match got {
            -1 => {
                let ty = r.int().map_err(ZkError::Lost)?;
                let _state = r.int().map_err(ZkError::Lost)?;
                let path = r.string().map_err(ZkError::Lost)?;
                if ty == NODE_DELETED {
                    self.deleted.push(path);
                }
                Ok(None)
            }
            -2 => Ok(None),
            x if Some(x) == xid => Ok(Some((err, r.0.to_vec()))),
            x => Err(ZkError::Lost(format!(
                "an answer to request {x}, not {xid:?}"
            ))),
        }
    }

    /// Sends request `ty` with `body` and waits up to `timeout` for its answer, pinging every
    /// `ping_every` meanwhile; returns the answer's body.
    ///
    /// # Errors
    /// [`ZkError::Lost`] (no answer: the connection must be dropped), [`ZkError::Expired`],
    /// [`ZkError::Code`].
    pub fn call(
        &mut self,
        ty: i32,
        body: &[u8],
        timeout: Duration,
        ping_every: Duration,
    ) -> Result<Vec<u8>, ZkError> {
        let deadline = Instant::now() + timeout;
        self.xid += 1;
        let xid = self.xid;
        let mut p = Out::default().int(xid).int(ty).bytes();
        p.extend_from_slice(body);
        self.send(&p)?;
        loop {
            let f = self.frame(deadline, Some(ping_every))?;
            if let Some((err, body)) = self.dispatch(&f, Some(xid))? {
                return match err {
                    0 => Ok(body),
                    code::SESSION_EXPIRED => Err(ZkError::Expired),
                    c => Err(ZkError::Code(c)),
                };
            }
        }
    }

    /// Sends a ping (xid -2) and waits up to `timeout` for its answer; watch events that
    /// come first are kept.
    ///
    /// # Errors
    /// [`ZkError::Lost`] (the connection must be dropped), [`ZkError::Expired`].
    pub fn ping(&mut self, timeout: Duration) -> Result<(), ZkError> {
        let deadline = Instant::now() + timeout;
        self.send(&Out::default().int(-2).int(op::PING).bytes())?;
        loop {
            let f = self.frame(deadline, None)?;
            let mut r = In::new(&f);
            let xid = r.int().map_err(ZkError::Lost)?;
            if xid == -2 {
                let _zxid = r.long().map_err(ZkError::Lost)?;
                return match r.int().map_err(ZkError::Lost)? {
                    0 => Ok(()),
                    code::SESSION_EXPIRED => Err(ZkError::Expired),
                    c => Err(ZkError::Code(c)),
                };
            }
            self.dispatch(&f, None)?;
        }
    }

    /// Waits until `path`'s delete watch fires or `until`, pinging every `ping_every`;
    /// `true` when it fired.
    ///
    /// # Errors
    /// [`ZkError::Lost`] when the connection breaks.
    pub fn wait_deleted(
        &mut self,
        path: &str,
        until: Instant,
        ping_every: Duration,
    ) -> Result<bool, ZkError> {
        loop {
            if let Some(i) = self.deleted.iter().position(|p| p == path) {
                self.deleted.remove(i);
                return Ok(true);
            }
            if Instant::now() >= until {
                return Ok(false);
            }
            match self.frame(until, Some(ping_every)) {
                Ok(f) => {
                    self.dispatch(&f, None)?;
                }
                Err(ZkError::Lost(_)) if Instant::now() >= until => return Ok(false),
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_short_ones_are_errors() {
        let b = Out::default()
            .int(-2)
            .long(1 << 40)
            .string("/locksim/k0")
            .int(2)
            .string("a")
            .string("b")
            .bytes();
        let mut r = In::new(&b);
        assert_eq!(r.int(), Ok(-2));
        assert_eq!(r.long(), Ok(1 << 40));
        assert_eq!(r.string().as_deref(), Ok("/locksim/k0"));
        assert_eq!(r.strings(), Ok(vec!["a".to_string(), "b".to_string()]));
        assert!(r.int().unwrap_err().contains("ended early"));
        let acl = Out::default().open_acl().bytes();
        assert_eq!(acl.len(), 4 + 4 + (4 + 5) + (4 + 6));
    }

    #[test]
    fn a_stat_gives_its_ephemeral_owner() {
        let stat = Out::default()
            .long(1)
            .long(2)
            .long(3)
            .long(4)
            .int(5)
            .int(6)
            .int(7)
            .long(0x1234)
            .int(0)
            .int(0)
            .long(9)
            .bytes();
        assert_eq!(In::new(&stat).stat_ephemeral_owner(), Ok(0x1234));
    }
}
