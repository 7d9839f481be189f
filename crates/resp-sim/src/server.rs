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

use crate::resp::{parse_request, Reply};
use crate::sim::Shared;
use crate::store::{Effect, Session, Store};

/// Serves RESP on `addr` as server `index` (from 0: `n1`) until the node is killed. A fresh
/// store per call: a restarted server starts empty (a Redis without persistence).
pub(crate) async fn serve(addr: SocketAddr, index: u32, shared: Arc<Shared>) {
    let listener = TcpListener::bind(addr)
        .await
        .expect("the server node binds its address");
    let store = Arc::new(Mutex::new(Store::default()));
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
fn to_true_time(e: &mut Effect, local: Nanos, now: Nanos) {
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
                    } else {
                        let now = shared.now();
                        let local = shared.server_time(index, now);
                        let (reply, mut effects) = store.lock().expect("one thread").exec(
                            local,
                            &mut session,
                            &shared.scripts,
                            &args,
                        );
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
