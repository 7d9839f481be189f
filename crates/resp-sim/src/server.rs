//! The simulated Redis server: a madsim TCP listener on the server node, one task per
//! connection, requests executed one at a time against the node's [`Store`] (Redis executes
//! commands one at a time too), each command's effects handed to the run's recorder at the
//! moment it executes.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::task::Poll;

use locksim_core::Nanos;

use madsim::net::{TcpListener, TcpStream};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::replication::Role;
use crate::resp::{parse_request, Reply};
use crate::sim::Shared;
use crate::store::{upper, Effect, Session, Store};

/// Starts server node `index` (from 0: `n1`): its Redis on `addr` and, in runs with Sentinel,
/// its replication and its sentinel. A fresh store per start: a restarted server starts empty
/// (a Redis without persistence).
pub(crate) async fn start(addr: SocketAddr, index: u32, shared: Arc<Shared>) {
    let store = Arc::new(Mutex::new(Store::default()));
    if shared.has_sentinel() {
        madsim::task::spawn(crate::replication::replicate(
            index,
            store.clone(),
            shared.clone(),
        ));
        madsim::task::spawn(crate::sentinel::sentinel(index, shared.clone()));
    }
    serve(addr, index, store, shared).await;
}

/// Serves RESP on `addr` as server `index` until the node is killed.
async fn serve(addr: SocketAddr, index: u32, store: Arc<Mutex<Store>>, shared: Arc<Shared>) {
    let listener = TcpListener::bind(addr)
        .await
        .expect("the server node binds its address");
    loop {
        let Ok((stream, peer)) = listener.accept().await else {
            continue;
        };
        let (store, shared) = (store.clone(), shared.clone());
        let session = Session {
            proto: 2,
            id: shared.new_connection() as i64,
        };
        madsim::task::spawn(connection(stream, peer, index, session, store, shared));
    }
}

/// Turns the deadlines in `e`, read on the server's clock (which read `local` at true time
/// `now`), into true time as a client counts a TTL: the same length from `now`. (The server's
/// own expiry stays on its clock; a clock that jumped ahead drops the key early, and the next
/// `SET NX` shows it.)
pub(crate) fn to_true_time(e: &mut Effect, local: Nanos, now: Nanos) {
    let shift = |t: &mut Nanos| *t = now + t.saturating_sub(local);
    match e {
        Effect::Acquired { expires, .. } | Effect::Wrote { expires, .. } => {
            if let Some(t) = expires {
                shift(t);
            }
        }
        Effect::Expiry { until, .. } => shift(until),
        Effect::Deleted { .. } | Effect::CompareFailed { .. } => {}
    }
}

/// The replication commands: `ROLE`, `INFO [replication]`, `REPLICAOF`/`SLAVEOF` (`NO ONE`,
/// or a server's address) and `LOCKSIM.ROLE` (the sentinels' question: role, whom it copies,
/// offset); `None` for every other command.
fn replication_command(args: &[Vec<u8>], index: u32, shared: &Shared) -> Option<Reply> {
    let cmd = upper(&args[0]);
    let role = shared.role(index);
    let offset = shared.offset(index);
    let ip = |s: u32| shared.server_addr(s).ip().to_string();
    Some(match (cmd.as_str(), &args[1..]) {
        ("ROLE", []) => match role {
            Role::Primary => Reply::Array(vec![
                Reply::text("master"),
                Reply::Int(offset as i64),
                Reply::Array(Vec::new()),
            ]),
            Role::Replica(p) => Reply::Array(vec![
                Reply::text("slave"),
                Reply::text(&ip(p)),
                Reply::Int(i64::from(crate::sim::PORT)),
                Reply::text("connected"),
                Reply::Int(offset as i64),
            ]),
        },
        ("INFO", rest) if rest.len() <= 1 => Reply::Bulk(
            match role {
                Role::Primary => {
                    format!("# Replication\r\nrole:master\r\nmaster_repl_offset:{offset}\r\n")
                }
                Role::Replica(p) => format!(
                    "# Replication\r\nrole:slave\r\nmaster_host:{}\r\nmaster_port:{}\r\n\
                     slave_repl_offset:{offset}\r\n",
                    ip(p),
                    crate::sim::PORT
                ),
            }
            .into_bytes(),
        ),
        ("REPLICAOF" | "SLAVEOF", [a, b]) => {
            if upper(a) == "NO" && upper(b) == "ONE" {
                shared.set_role(index, Role::Primary);
                return Some(Reply::ok());
            }
            let target = shared
                .servers()
                .find(|s| ip(*s).as_bytes() == a.as_slice() && b.as_slice() == b"6379");
            match target {
                Some(t) if t != index => {
                    shared.set_role(index, Role::Replica(t));
                    Reply::ok()
                }
                _ => Reply::err("locksim's servers replicate one of the run's servers only"),
            }
        }
        ("LOCKSIM.ROLE", []) => {
            let (r, of) = match role {
                Role::Primary => ("master", String::new()),
                Role::Replica(p) => ("replica", p.to_string()),
            };
            Reply::Array(vec![
                Reply::text(r),
                Reply::text(&of),
                Reply::text(&offset.to_string()),
            ])
        }
        _ => return None,
    })
}

/// What woke a connection: input, or the end of a `drop_replies` window it holds replies for.
enum Next {
    Read(std::io::Result<usize>),
    Release,
}

async fn connection(
    mut stream: TcpStream,
    peer: SocketAddr,
    index: u32,
    mut session: Session,
    store: Arc<Mutex<Store>>,
    shared: Arc<Shared>,
) {
    let client = shared.node_of(peer);
    let conn = session.id as u64;
    let mut input: Vec<u8> = Vec::new();
    let mut out: Vec<u8> = Vec::new();
    // Replies made inside a `drop_replies` window: they leave when it ends (the transport
    // retransmits them then), and every later reply queues behind them.
    let mut held: Vec<u8> = Vec::new();
    let mut release: Option<Nanos> = None;
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        let mut quit = false;
        loop {
            let reply = match parse_request(&input) {
                Ok(Some((args, used))) => {
                    input.drain(..used);
                    if args.is_empty() {
                        continue;
                    }
                    if args[0].eq_ignore_ascii_case(b"QUIT") {
                        quit = true;
                        Reply::ok()
                    } else if args[0].eq_ignore_ascii_case(b"LOCKSIM.SYNC") {
                        // A replica asks for the stream: this connection carries it from now.
                        if !out.is_empty()
                            && (stream.write_all(&out).await.is_err()
                                || stream.flush().await.is_err())
                        {
                            return;
                        }
                        return crate::replication::feed(stream, index, store, shared).await;
                    } else if let Some(r) = replication_command(&args, index, &shared) {
                        r
                    } else if matches!(shared.role(index), Role::Replica(_))
                        && crate::replication::writes(&args[0])
                    {
                        Reply::Error("READONLY You can't write against a read only replica.".into())
                    } else {
                        let now = shared.now();
                        let local = shared.server_time(index, now);
                        let (reply, mut effects) = store.lock().expect("one thread").exec(
                            local,
                            &mut session,
                            &shared.scripts,
                            &args,
                        );
                        if shared.has_sentinel() && !effects.is_empty() {
                            let (bytes, offset) =
                                crate::replication::entries(&effects, shared.offset(index));
                            shared.set_offset(index, offset);
                            shared.feed(index, &bytes);
                        }
                        if local != now {
                            for e in &mut effects {
                                to_true_time(e, local, now);
                            }
                        }
                        shared.record(|r| r.effects(now, index, client, conn, &effects));
                        reply
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    quit = true;
                    Reply::err(e)
                }
            };
            if let Some(until) = shared.reply_held_until(index, client) {
                release = Some(release.map_or(until, |r| r.max(until)));
            }
            reply.encode(
                session.proto,
                if release.is_some() {
                    &mut held
                } else {
                    &mut out
                },
            );
            if quit {
                break;
            }
        }
        if !out.is_empty() {
            if stream.write_all(&out).await.is_err() || stream.flush().await.is_err() {
                return;
            }
            out.clear();
        }
        if quit && release.is_none() {
            return;
        }
        let next = {
            let mut read = std::pin::pin!(stream.read(&mut chunk));
            let until = release.map(|t| shared.instant(t));
            let mut timer = std::pin::pin!(async move {
                match until {
                    Some(t) => madsim::time::sleep_until(t).await,
                    None => std::future::pending().await,
                }
            });
            std::future::poll_fn(|cx| {
                if let Poll::Ready(r) = read.as_mut().poll(cx) {
                    return Poll::Ready(Next::Read(r));
                }
                if timer.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Next::Release);
                }
                Poll::Pending
            })
            .await
        };
        match next {
            Next::Read(Ok(0) | Err(_)) => return,
            Next::Read(Ok(n)) => input.extend_from_slice(&chunk[..n]),
            Next::Release => {
                release = None;
                std::mem::swap(&mut out, &mut held);
                if stream.write_all(&out).await.is_err() || stream.flush().await.is_err() {
                    return;
                }
                out.clear();
                if quit {
                    return;
                }
            }
        }
    }
}
