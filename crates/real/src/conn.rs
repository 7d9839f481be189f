//! Client connections from a node's own loopback address (bind before connect, with
//! `socket2`), each request bounded by one timeout for connect, send and reply together.
//!
//! The outcome of a failed request follows the simulator's: a connect that is refused, reset
//! or times out never sent the request (`NotSent`: it surely did not take effect); a request
//! sent whose reply did not come back in time, or whose connection broke, may have taken
//! effect (`Unknown`). After any failure the connection is dropped, so a late reply is never
//! read as the answer to the next request.

use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};

/// Why a request has no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// The request was never sent (connection refused, reset or timed out while connecting).
    NotSent(String),
    /// The request was sent; its effect is unknown (timeout, broken connection).
    Unknown(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::NotSent(e) => write!(f, "not sent: {e}"),
            CallError::Unknown(e) => write!(f, "no answer: {e}"),
        }
    }
}

/// A lazily (re)connected TCP connection from `from` to `to`.
pub struct Conn {
    from: Ipv4Addr,
    to: SocketAddrV4,
    stream: Option<BufReader<TcpStream>>,
}

impl Conn {
    /// A connection from address `from` (port chosen by the kernel) to `to`; nothing is
    /// connected until the first request.
    pub fn new(from: Ipv4Addr, to: SocketAddrV4) -> Conn {
        Conn {
            from,
            to,
            stream: None,
        }
    }

    /// Connects within `timeout`; `None`: as long as the kernel's SYN retries take.
    fn connect(&self, timeout: Option<Duration>) -> std::io::Result<TcpStream> {
        let s = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
        s.bind(&SocketAddr::V4(SocketAddrV4::new(self.from, 0)).into())?;
        match timeout {
            Some(t) => s.connect_timeout(&SocketAddr::V4(self.to).into(), t)?,
            None => s.connect(&SocketAddr::V4(self.to).into())?,
        }
        s.set_tcp_nodelay(true)?;
        Ok(s.into())
    }

    /// Sends `request` and reads one reply with `read`, all within `timeout`.
    ///
    /// # Errors
    /// [`CallError`]; the connection is dropped.
    pub fn call<T>(
        &mut self,
        request: &[u8],
        timeout: Duration,
        read: impl FnOnce(&mut BufReader<TcpStream>) -> std::io::Result<T>,
    ) -> Result<T, CallError> {
        self.call_within(request, Some(timeout), read)
    }

    /// As [`Conn::call`]; `timeout = None` waits as a client without a socket timeout does
    /// (redis-py before 8.0): until the answer comes or the connection ends (a reset, or the
    /// kernel giving the connection up after `tcp_retries2` retransmissions).
    ///
    /// # Errors
    /// [`CallError`]; the connection is dropped.
    pub fn call_within<T>(
        &mut self,
        request: &[u8],
        timeout: Option<Duration>,
        read: impl FnOnce(&mut BufReader<TcpStream>) -> std::io::Result<T>,
    ) -> Result<T, CallError> {
        let started = Instant::now();
        if self.stream.is_none() {
            let s = self
                .connect(timeout)
                .map_err(|e| CallError::NotSent(e.to_string()))?;
            self.stream = Some(BufReader::new(s));
        }
        let left = timeout.map(|t| {
            t.saturating_sub(started.elapsed())
                .max(Duration::from_millis(1))
        });
        let r = self.exchange(request, left, read);
        if r.is_err() {
            self.stream = None;
        }
        r
    }

    fn exchange<T>(
        &mut self,
        request: &[u8],
        left: Option<Duration>,
        read: impl FnOnce(&mut BufReader<TcpStream>) -> std::io::Result<T>,
    ) -> Result<T, CallError> {
        let s = self.stream.as_mut().expect("connected");
        let unknown = |e: std::io::Error| CallError::Unknown(e.to_string());
        s.get_ref().set_write_timeout(left).map_err(unknown)?;
        s.get_ref().set_read_timeout(left).map_err(unknown)?;
        s.get_mut().write_all(request).map_err(unknown)?;
        read(s).map_err(|e| match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                CallError::Unknown(format!("no reply within the timeout ({e})"))
            }
            _ => CallError::Unknown(e.to_string()),
        })
    }
}

/// Reads one line without its `\r\n` / `\n`; a closed connection is an error.
pub fn read_line(r: &mut impl BufRead) -> std::io::Result<String> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "connection closed",
        ));
    }
    while line.ends_with('\n') || line.ends_with('\r') {
        line.pop();
    }
    Ok(line)
}
