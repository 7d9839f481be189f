//! Primary/replica replication for runs with Sentinel ([`crate::sentinel`]): asynchronous, as
//! Redis's is (<https://redis.io/docs/latest/operate/oss_and_stack/management/replication/>).
//!
//! A replica connects to its primary's port and asks for the stream (`LOCKSIM.SYNC`, standing
//! for Redis's `PSYNC`); the primary answers with every live key (a full resynchronisation:
//! the replica drops what it had) and then every write it executes, in order, each with the
//! primary's replication offset after it. Deadlines travel as absolute times on the primary's
//! clock, as Redis 7 propagates `PXAT`, and the replica keeps them on its own clock. A replica
//! refuses writes (`READONLY`). `REPLICAOF NO ONE` makes a replica a primary that keeps its keys
//! and offset; `REPLICAOF host port` makes any server a replica, which then resynchronises and
//! loses whatever its new primary does not have. A server's role is its configuration: it
//! survives a restart (Sentinel rewrites the configuration file).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use madsim::net::TcpStream;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::resp::{parse_request, Reply};
use crate::sim::Shared;
use crate::store::{uint as num, Effect, Store};

/// A server's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Takes writes and feeds its replicas.
    Primary,
    /// Copies server `.0` (an index from 0) and refuses writes.
    Replica(u32),
}

/// The commands a replica refuses (`READONLY`): every one that can write.
pub(crate) fn writes(cmd: &[u8]) -> bool {
    const WRITES: &[&str] = &[
        "SET", "DEL", "UNLINK", "INCR", "PEXPIRE", "EXPIRE", "EVAL", "EVALSHA",
    ];
    WRITES
        .iter()
        .any(|w| w.as_bytes().eq_ignore_ascii_case(cmd))
}

fn array(args: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    Reply::Array(args.iter().map(|a| Reply::Bulk(a.to_vec())).collect()).encode(2, &mut out);
    out
}

fn time(t: Option<u64>) -> Vec<u8> {
    t.map_or_else(|| b"-".to_vec(), |t| t.to_string().into_bytes())
}

/// The stream entries of a write's `effects` (deadlines on the primary's clock), numbered on
/// from `offset`; returns the bytes and the new offset.
pub(crate) fn entries(effects: &[Effect], mut offset: u64) -> (Vec<u8>, u64) {
    let mut out = Vec::new();
    for e in effects {
        let args: Vec<Vec<u8>> = match e {
            Effect::Acquired {
                key,
                value,
                expires,
            }
            | Effect::Wrote {
                key,
                value,
                expires,
            } => vec![b"SET".to_vec(), key.clone(), value.clone(), time(*expires)],
            Effect::Deleted { key, .. } => vec![b"DEL".to_vec(), key.clone()],
            Effect::Expiry { key, until, .. } => {
                vec![b"PEXPIREAT".to_vec(), key.clone(), time(Some(*until))]
            }
            Effect::CompareFailed { .. } => continue,
        };
        offset += 1;
        let off = offset.to_string().into_bytes();
        let mut all: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
        all.push(&off);
        out.extend(array(&all));
    }
    (out, offset)
}

/// The primary's side, on the connection that sent `LOCKSIM.SYNC`: every live key, then the
/// writes as they come, until the connection or the server dies.
pub(crate) async fn feed(
    mut stream: TcpStream,
    index: u32,
    store: Arc<Mutex<Store>>,
    shared: Arc<Shared>,
) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    // The snapshot and the registration happen in one step: no write falls between them.
    let local = shared.server_time(index, shared.now());
    let offset = shared.offset(index);
    let off = offset.to_string().into_bytes();
    let mut out = array(&[b"SYNC", &off]);
    for (k, v, e) in store.lock().expect("one thread").snapshot(local) {
        out.extend(array(&[b"SET", &k, &v, &time(e), &off]));
    }
    shared.add_feed(index, tx);
    loop {
        if stream.write_all(&out).await.is_err() || stream.flush().await.is_err() {
            return;
        }
        out = match rx.recv().await {
            Some(bytes) => bytes,
            None => return,
        };
    }
}

/// The replica's side, run on every server node: while the server is a replica, keep a
/// stream from its primary and apply it; resynchronise when the primary or the role changes.
pub(crate) async fn replicate(index: u32, store: Arc<Mutex<Store>>, shared: Arc<Shared>) {
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        let Role::Replica(primary) = shared.role(index) else {
            madsim::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let addr: SocketAddr = shared.server_addr(primary);
        let stream = madsim::time::timeout(Duration::from_secs(1), TcpStream::connect(addr)).await;
        let Ok(Ok(mut stream)) = stream else {
            madsim::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let asked = stream.write_all(&array(&[b"LOCKSIM.SYNC"])).await;
        if asked.is_err() || stream.flush().await.is_err() {
            continue;
        }
        let mut input: Vec<u8> = Vec::new();
        'stream: while shared.role(index) == Role::Replica(primary) {
            let read =
                madsim::time::timeout(Duration::from_millis(100), stream.read(&mut chunk)).await;
            match read {
                Err(_) => continue,
                Ok(Ok(0) | Err(_)) => break,
                Ok(Ok(n)) => input.extend_from_slice(&chunk[..n]),
            }
            while let Ok(Some((args, used))) = parse_request(&input) {
                input.drain(..used);
                if !apply(&args, index, &store, &shared) {
                    break 'stream;
                }
            }
        }
        madsim::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Applies one stream entry; `false` on one it cannot read.
fn apply(args: &[Vec<u8>], index: u32, store: &Mutex<Store>, shared: &Shared) -> bool {
    let mut st = store.lock().expect("one thread");
    let offset = match args {
        [c, off] if c == b"SYNC" => {
            st.clear();
            num(off)
        }
        [c, k, v, e, off] if c == b"SET" => {
            st.put(k.clone(), v.clone(), num(e));
            num(off)
        }
        [c, k, off] if c == b"DEL" => {
            st.remove(k);
            num(off)
        }
        [c, k, e, off] if c == b"PEXPIREAT" => {
            if let Some(t) = num(e) {
                st.set_deadline(k, t);
            }
            num(off)
        }
        _ => None,
    };
    match offset {
        Some(o) => {
            shared.set_offset(index, o);
            true
        }
        None => false,
    }
}
