//! The simulated Redis server: a madsim TCP listener on the server node, one task per
//! connection, requests executed one at a time against the node's [`Store`] (Redis executes
//! commands one at a time too), each command's effects handed to the run's recorder at the
//! moment it executes.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use madsim::net::{TcpListener, TcpStream};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::resp::{parse_request, Reply};
use crate::sim::Shared;
use crate::store::{Session, Store};

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
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        let mut quit = false;
        loop {
            match parse_request(&input) {
                Ok(Some((args, used))) => {
                    input.drain(..used);
                    if args.is_empty() {
                        continue;
                    }
                    if args[0].eq_ignore_ascii_case(b"QUIT") {
                        Reply::ok().encode(session.proto, &mut out);
                        quit = true;
                        break;
                    }
                    let now = shared.now();
                    let (reply, effects) = store.lock().expect("one thread").exec(
                        now,
                        &mut session,
                        &shared.scripts,
                        &args,
                    );
                    shared.record(|r| r.effects(now, index, client, conn, &effects));
                    reply.encode(session.proto, &mut out);
                }
                Ok(None) => break,
                Err(e) => {
                    Reply::err(e).encode(session.proto, &mut out);
                    quit = true;
                    break;
                }
            }
        }
        if !out.is_empty() {
            if stream.write_all(&out).await.is_err() || stream.flush().await.is_err() {
                return;
            }
            out.clear();
        }
        if quit {
            return;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => input.extend_from_slice(&chunk[..n]),
        }
    }
}
