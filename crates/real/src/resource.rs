//! The protected resource of a real run: a small TCP server of ours (a process of its own, on
//! its own address) with the simulator's semantics (`crates/sim/src/resource.rs`): each key
//! holds the last value written, an accepted write answers with the value it replaced, and a
//! write whose fencing token is below the highest the key has seen is rejected. It records
//! `write_accepted` / `write_rejected` events.
//!
//! Protocol, one line each way: `W key handle token|- value` → `A previous` or `F highest`.

use std::collections::BTreeMap;
use std::io::{BufReader, Write};
use std::net::{SocketAddrV4, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use locksim_core::history::EventKind;

use crate::conn::read_line;
use crate::node::{true_now, Log, NodeSpec};

/// The resource's answer to a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteResp {
    /// Written; it replaced `previous` (0 for a key never written).
    Accepted { previous: u64 },
    /// Rejected: the token is below `highest`.
    Fenced { highest: u64 },
}

/// A write request line.
pub fn write_line(key: u32, handle: u64, token: Option<u64>, value: u64) -> String {
    let token = token.map_or("-".to_string(), |t| t.to_string());
    format!("W {key} {handle} {token} {value}\n")
}

/// Reads the answer line to a write.
///
/// # Errors
/// I/O errors and lines that are not an answer.
pub fn read_answer(line: &str) -> std::io::Result<WriteResp> {
    let bad = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("bad answer {line:?}"),
        )
    };
    let (k, n) = line.split_once(' ').ok_or_else(bad)?;
    let n: u64 = n.parse().map_err(|_| bad())?;
    match k {
        "A" => Ok(WriteResp::Accepted { previous: n }),
        "F" => Ok(WriteResp::Fenced { highest: n }),
        _ => Err(bad()),
    }
}

#[derive(Default)]
struct State {
    highest: BTreeMap<u32, u64>,
    values: BTreeMap<u32, u64>,
}

/// Applies one write to the state: the decision and the event to record.
fn apply(
    st: &mut State,
    key: u32,
    handle: u64,
    token: Option<u64>,
    value: u64,
) -> (WriteResp, EventKind) {
    match (token, st.highest.get(&key).copied()) {
        (Some(t), Some(h)) if t < h => (
            WriteResp::Fenced { highest: h },
            EventKind::WriteRejected {
                key,
                handle,
                token: t,
                highest: h,
            },
        ),
        (token, _) => {
            if let Some(t) = token {
                st.highest.insert(key, t);
            }
            let previous = st.values.insert(key, value).unwrap_or(0);
            (
                WriteResp::Accepted { previous },
                EventKind::WriteAccepted { key, handle, token },
            )
        }
    }
}

fn parse_write(line: &str) -> Option<(u32, u64, Option<u64>, u64)> {
    let mut it = line.split(' ');
    if it.next()? != "W" {
        return None;
    }
    let key = it.next()?.parse().ok()?;
    let handle = it.next()?.parse().ok()?;
    let token = match it.next()? {
        "-" => None,
        t => Some(t.parse().ok()?),
    };
    let value = it.next()?.parse().ok()?;
    Some((key, handle, token, value))
}

fn serve_conn(stream: TcpStream, state: &Mutex<State>, log: &Log, spec: &NodeSpec) {
    let mut r = BufReader::new(stream);
    while let Ok(line) = read_line(&mut r) {
        let Some((key, handle, token, value)) = parse_write(&line) else {
            return;
        };
        let answer = {
            let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
            let (resp, event) = apply(&mut st, key, handle, token, value);
            // Recorded under the lock, so the log's order is the resource's order.
            let t = true_now(spec.t0);
            log.record(t, spec.node, t as i64, t, event);
            resp
        };
        let text = match answer {
            WriteResp::Accepted { previous } => format!("A {previous}\n"),
            WriteResp::Fenced { highest } => format!("F {highest}\n"),
        };
        if r.get_mut().write_all(text.as_bytes()).is_err() {
            return;
        }
    }
}

/// Runs the resource of `spec` until the process is killed.
///
/// # Errors
/// When it cannot listen or open its log.
pub fn main(spec: NodeSpec) -> Result<(), String> {
    let log = Arc::new(Log::open(&spec.log).map_err(|e| format!("{}: {e}", spec.log.display()))?);
    let listener = TcpListener::bind(SocketAddrV4::new(spec.me, spec.resource.port()))
        .map_err(|e| format!("resource: cannot listen on {}: {e}", spec.resource))?;
    let state = Arc::new(Mutex::new(State::default()));
    let spec = Arc::new(spec);
    for stream in listener.incoming().flatten() {
        let (state, log, spec) = (state.clone(), log.clone(), spec.clone());
        std::thread::spawn(move || serve_conn(stream, &state, &log, &spec));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fencing_rejects_tokens_below_the_highest_and_writes_swap() {
        let mut st = State::default();
        assert_eq!(
            apply(&mut st, 0, 1, Some(5), 11).0,
            WriteResp::Accepted { previous: 0 }
        );
        assert_eq!(
            apply(&mut st, 0, 2, Some(5), 12).0,
            WriteResp::Accepted { previous: 11 }
        );
        let (resp, ev) = apply(&mut st, 0, 3, Some(4), 13);
        assert_eq!(resp, WriteResp::Fenced { highest: 5 });
        assert!(matches!(
            ev,
            EventKind::WriteRejected {
                token: 4,
                highest: 5,
                ..
            }
        ));
        // No token: always accepted; another key has its own counter.
        assert_eq!(
            apply(&mut st, 0, 4, None, 14).0,
            WriteResp::Accepted { previous: 12 }
        );
        assert_eq!(
            apply(&mut st, 1, 5, Some(1), 15).0,
            WriteResp::Accepted { previous: 0 }
        );
    }

    #[test]
    fn the_line_protocol_reads_back() {
        let l = write_line(3, 77, Some(9), 1234);
        assert_eq!(parse_write(l.trim_end()), Some((3, 77, Some(9), 1234)));
        assert_eq!(
            parse_write(write_line(0, 1, None, 2).trim_end()),
            Some((0, 1, None, 2))
        );
        assert_eq!(parse_write("X 1 2 3 4"), None);
        assert_eq!(
            read_answer("F 8").unwrap(),
            WriteResp::Fenced { highest: 8 }
        );
        assert!(read_answer("A x").is_err());
    }
}
