//! The few Redis commands the lock clients send, in RESP2 (the Redis serialization protocol,
//! redis.io/docs/reference/protocol-spec): requests are arrays of bulk strings; replies are
//! simple strings (`+`), errors (`-`), integers (`:`), bulk strings (`$`, `$-1` = nil) and
//! arrays (`*`).
//!
//! Own code rather than the `redis` crate: a real run must open each client's connections from
//! the client's own loopback address (so nftables can cut one client off), and the crate's sync
//! API offers no way to bind the local address of its TCP connections.

use std::io::BufRead;

use crate::conn::read_line;

/// One reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `+OK`
    Status(String),
    /// `-ERR …`
    Error(String),
    /// `:42`
    Int(i64),
    /// `$3 abc`
    Bulk(Vec<u8>),
    /// `$-1` or `*-1`
    Nil,
    /// `*2 …`
    Array(Vec<Reply>),
}

/// A request: the command and its arguments as one RESP array of bulk strings.
pub fn request(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn bad(what: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what)
}

/// Reads one reply.
///
/// # Errors
/// I/O errors, and replies that are not RESP2.
pub fn read_reply(r: &mut impl BufRead) -> std::io::Result<Reply> {
    let line = read_line(r)?;
    let (kind, rest) = line.split_at(line.len().min(1));
    let int = |s: &str| {
        s.parse::<i64>()
            .map_err(|_| bad(format!("bad RESP length or integer {s:?}")))
    };
    Ok(match kind {
        "+" => Reply::Status(rest.to_string()),
        "-" => Reply::Error(rest.to_string()),
        ":" => Reply::Int(int(rest)?),
        "$" => match int(rest)? {
            -1 => Reply::Nil,
            n if n >= 0 => {
                let mut buf = vec![0; n as usize + 2];
                r.read_exact(&mut buf)?;
                buf.truncate(n as usize);
                Reply::Bulk(buf)
            }
            n => return Err(bad(format!("bulk length {n}"))),
        },
        "*" => match int(rest)? {
            -1 => Reply::Nil,
            n if n >= 0 => {
                let mut v = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    v.push(read_reply(r)?);
                }
                Reply::Array(v)
            }
            n => return Err(bad(format!("array length {n}"))),
        },
        _ => return Err(bad(format!("not a RESP reply: {line:?}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_arrays_of_bulk_strings() {
        assert_eq!(
            request(&[b"SET", b"k", b"v1", b"NX"]),
            b"*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nv1\r\n$2\r\nNX\r\n".to_vec()
        );
    }

    #[test]
    fn every_reply_type_reads_back() {
        let mut r: &[u8] = b"+OK\r\n-ERR no\r\n:7\r\n$3\r\nabc\r\n$-1\r\n*2\r\n:1\r\n$0\r\n\r\n";
        assert_eq!(read_reply(&mut r).unwrap(), Reply::Status("OK".into()));
        assert_eq!(read_reply(&mut r).unwrap(), Reply::Error("ERR no".into()));
        assert_eq!(read_reply(&mut r).unwrap(), Reply::Int(7));
        assert_eq!(read_reply(&mut r).unwrap(), Reply::Bulk(b"abc".to_vec()));
        assert_eq!(read_reply(&mut r).unwrap(), Reply::Nil);
        assert_eq!(
            read_reply(&mut r).unwrap(),
            Reply::Array(vec![Reply::Int(1), Reply::Bulk(vec![])])
        );
        assert!(read_reply(&mut r).is_err(), "end of input is an error");
        let mut junk: &[u8] = b"hello\r\n";
        assert!(read_reply(&mut junk).is_err());
    }
}
