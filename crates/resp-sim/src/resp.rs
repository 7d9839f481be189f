//! RESP, the Redis serialization protocol, as far as a lock server needs it: requests are
//! arrays of bulk strings (what every client library sends) or inline commands (what a human
//! types into telnet); replies are written in RESP2 or RESP3 as the connection's `HELLO` chose.
//!
//! Source: <https://redis.io/docs/latest/develop/reference/protocol-spec/>.

/// The longest request this server takes, bytes (Redis's own `proto-max-bulk-len` is 512 MiB;
/// a lock client's requests are a few hundred bytes).
pub const MAX_REQUEST: usize = 1 << 20;

/// One reply, written in the connection's protocol version by [`Reply::encode`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `+OK`-style status.
    Simple(String),
    /// `-ERR …`: the text after the dash, its first word being the error code.
    Error(String),
    /// `:n`.
    Int(i64),
    /// A bulk string.
    Bulk(Vec<u8>),
    /// The null reply (`$-1` in RESP2, `_` in RESP3).
    Nil,
    /// An array.
    Array(Vec<Reply>),
    /// A map (RESP3 `%`; RESP2 writes it as a flat array of keys and values).
    Map(Vec<(Reply, Reply)>),
}

impl Reply {
    /// `+OK`.
    pub fn ok() -> Reply {
        Reply::Simple("OK".into())
    }

    /// A bulk string from text.
    pub fn text(s: &str) -> Reply {
        Reply::Bulk(s.as_bytes().to_vec())
    }

    /// `-ERR <msg>`.
    pub fn err(msg: impl Into<String>) -> Reply {
        Reply::Error(format!("ERR {}", msg.into()))
    }

    /// Appends the reply's bytes in protocol `version` (2 or 3) to `out`.
    pub fn encode(&self, version: u8, out: &mut Vec<u8>) {
        match self {
            Reply::Simple(s) => line(out, b'+', s.as_bytes()),
            Reply::Error(s) => line(out, b'-', s.as_bytes()),
            Reply::Int(n) => line(out, b':', n.to_string().as_bytes()),
            Reply::Bulk(b) => {
                line(out, b'$', b.len().to_string().as_bytes());
                out.extend_from_slice(b);
                out.extend_from_slice(b"\r\n");
            }
            Reply::Nil if version >= 3 => out.extend_from_slice(b"_\r\n"),
            Reply::Nil => out.extend_from_slice(b"$-1\r\n"),
            Reply::Array(items) => {
                line(out, b'*', items.len().to_string().as_bytes());
                for i in items {
                    i.encode(version, out);
                }
            }
            Reply::Map(pairs) => {
                if version >= 3 {
                    line(out, b'%', pairs.len().to_string().as_bytes());
                } else {
                    line(out, b'*', (2 * pairs.len()).to_string().as_bytes());
                }
                for (k, v) in pairs {
                    k.encode(version, out);
                    v.encode(version, out);
                }
            }
        }
    }
}

fn line(out: &mut Vec<u8>, tag: u8, body: &[u8]) {
    out.push(tag);
    out.extend_from_slice(body);
    out.extend_from_slice(b"\r\n");
}

/// One request: the command's name and its arguments, as bytes.
pub type Request = Vec<Vec<u8>>;

/// Parses one request from the front of `buf`: `Ok(Some((arguments, bytes used)))`, `Ok(None)`
/// when more bytes are needed, `Err` (a protocol error, after which Redis closes the
/// connection) on malformed input or a request over [`MAX_REQUEST`].
pub fn parse_request(buf: &[u8]) -> Result<Option<(Request, usize)>, String> {
    if buf.is_empty() {
        return Ok(None);
    }
    if buf[0] != b'*' {
        // An inline command: one line of space-separated words.
        let Some(end) = find_crlf(buf, 0) else {
            return too_long(buf.len()).map(|_| None);
        };
        let words = buf[..end]
            .split(|b| *b == b' ' || *b == b'\t')
            .filter(|w| !w.is_empty())
            .map(|w| w.to_vec())
            .collect();
        return Ok(Some((words, end + 2)));
    }
    let Some((n, mut at)) = number(buf, 1)? else {
        return Ok(None);
    };
    if n < 0 || n as usize > MAX_REQUEST {
        return Err(format!("Protocol error: invalid multibulk length {n}"));
    }
    let mut args = Vec::with_capacity(n as usize);
    for _ in 0..n {
        if at >= buf.len() {
            return too_long(buf.len()).map(|_| None);
        }
        if buf[at] != b'$' {
            return Err(format!(
                "Protocol error: expected '$', got '{}'",
                buf[at] as char
            ));
        }
        let Some((len, start)) = number(buf, at + 1)? else {
            return too_long(buf.len()).map(|_| None);
        };
        if len < 0 || len as usize > MAX_REQUEST {
            return Err(format!("Protocol error: invalid bulk length {len}"));
        }
        let end = start + len as usize;
        if buf.len() < end + 2 {
            return too_long(buf.len()).map(|_| None);
        }
        if &buf[end..end + 2] != b"\r\n" {
            return Err("Protocol error: bulk string not ended by CRLF".into());
        }
        args.push(buf[start..end].to_vec());
        at = end + 2;
    }
    Ok(Some((args, at)))
}

fn too_long(len: usize) -> Result<(), String> {
    if len > MAX_REQUEST {
        Err(format!("Protocol error: request over {MAX_REQUEST} bytes"))
    } else {
        Ok(())
    }
}

fn find_crlf(buf: &[u8], from: usize) -> Option<usize> {
    buf.get(from..)?
        .windows(2)
        .position(|w| w == b"\r\n")
        .map(|p| p + from)
}

/// The decimal integer from `at` to the next CRLF, and the index after the CRLF.
fn number(buf: &[u8], at: usize) -> Result<Option<(i64, usize)>, String> {
    let Some(end) = find_crlf(buf, at) else {
        return Ok(None);
    };
    let text = std::str::from_utf8(&buf[at..end]).map_err(|_| "Protocol error: bad length")?;
    let n = text
        .parse::<i64>()
        .map_err(|_| format!("Protocol error: invalid length '{text}'"))?;
    Ok(Some((n, end + 2)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_arrays_in_pieces() {
        let req = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nv1\r\n";
        for cut in 0..req.len() {
            assert_eq!(parse_request(&req[..cut]).unwrap(), None, "cut at {cut}");
        }
        let (args, used) = parse_request(req).unwrap().unwrap();
        assert_eq!(args, vec![b"SET".to_vec(), b"k".to_vec(), b"v1".to_vec()]);
        assert_eq!(used, req.len());
    }

    #[test]
    fn parses_inline_commands() {
        let (args, used) = parse_request(b"PING  hi\r\nrest").unwrap().unwrap();
        assert_eq!(args, vec![b"PING".to_vec(), b"hi".to_vec()]);
        assert_eq!(used, 10);
    }

    #[test]
    fn refuses_malformed_requests() {
        assert!(parse_request(b"*1\r\n+x\r\n").is_err());
        assert!(parse_request(b"*x\r\n").is_err());
        assert!(parse_request(b"*1\r\n$1\r\nab\r\n").is_err());
    }

    #[test]
    fn encodes_both_versions() {
        let r = Reply::Map(vec![(Reply::text("proto"), Reply::Int(3))]);
        let (mut two, mut three) = (Vec::new(), Vec::new());
        r.encode(2, &mut two);
        r.encode(3, &mut three);
        assert_eq!(two, b"*2\r\n$5\r\nproto\r\n:3\r\n");
        assert_eq!(three, b"%1\r\n$5\r\nproto\r\n:3\r\n");
        let (mut two, mut three) = (Vec::new(), Vec::new());
        Reply::Nil.encode(2, &mut two);
        Reply::Nil.encode(3, &mut three);
        assert_eq!(
            (two.as_slice(), three.as_slice()),
            (&b"$-1\r\n"[..], &b"_\r\n"[..])
        );
    }
}
