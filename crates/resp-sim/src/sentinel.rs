//! Redis Sentinel, simulated: one sentinel beside each Redis server (on its node, port 26379,
//! as deployments of three machines run them), watching the primary and failing over to a
//! replica when it stops answering. The rules are Sentinel's own
//! (<https://redis.io/docs/latest/operate/oss_and_stack/management/sentinel/>), cut to what a
//! lock client meets:
//!
//! - Each sentinel pings the primary it knows every second. One that has had no answer for
//!   `down-after-milliseconds` (30 s by default, as Redis ships it) holds it subjectively down
//!   (`s_down`) and asks the other sentinels; with a quorum of them (a majority, as
//!   `sentinel monitor mymaster … 2` of three) agreeing, it is objectively down (`o_down`).
//! - A sentinel that sees `o_down` waits a random 0–1 s, then asks the others for their vote in
//!   a new epoch. Each votes once per epoch. With a majority of all sentinels it is the leader:
//!   it promotes the replica with the highest replication offset that answers
//!   (`REPLICAOF NO ONE`), records the new primary in its configuration and tells the others.
//!   A sentinel that loses waits two seconds before trying again.
//! - Every second each sentinel also tells every other server it reaches, the old primary
//!   included when it answers again, to replicate the primary it knows (`REPLICAOF`); such a
//!   server drops its keys and copies the new primary's ([`crate::replication`]).
//! - Clients ask any sentinel: `SENTINEL MASTERS`, `SENTINEL SLAVES mymaster` and
//!   `SENTINEL GET-MASTER-ADDR-BY-NAME mymaster`, as redis-rs's `sentinel` module does.
//!
//! A sentinel's configuration (epoch, primary, last vote) survives its node's restart, as
//! Sentinel rewrites its configuration file.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use locksim_core::Nanos;
use madsim::net::{TcpListener, TcpStream};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::resp::{parse_request, Reply};
use crate::sim::Shared;
use crate::store::{uint as num, upper, Session, Store};

/// The service name sentinels monitor (`sentinel monitor mymaster …`).
pub const SERVICE: &str = "mymaster";
/// The sentinels' port.
pub const PORT: u16 = 26379;
/// How long a sentinel waits for another's answer.
const PEER_WAIT: Duration = Duration::from_millis(300);

/// What one sentinel knows.
#[derive(Debug, Clone)]
pub(crate) struct Watch {
    /// The configuration epoch of its view.
    pub epoch: u64,
    /// The server it takes for the primary.
    pub primary: u32,
    /// The last epoch it voted in.
    pub voted: u64,
    /// When the primary last answered, true time ns.
    pub last_ok: Nanos,
    /// Whether it holds the primary subjectively down.
    pub sdown: bool,
}

/// Sends `args` to `addr` on a fresh connection and returns the first reply's words (a RESP
/// array of bulk strings, or a status line), or `None` when nothing came within `wait`.
async fn ask(addr: SocketAddr, args: &[&[u8]], wait: Duration) -> Option<Vec<Vec<u8>>> {
    madsim::time::timeout(wait, async {
        let mut stream = TcpStream::connect(addr).await.ok()?;
        let mut out = Vec::new();
        Reply::Array(args.iter().map(|a| Reply::Bulk(a.to_vec())).collect()).encode(2, &mut out);
        stream.write_all(&out).await.ok()?;
        stream.flush().await.ok()?;
        let mut input = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            if let Ok(Some((words, _))) = parse_request(&input) {
                return Some(words);
            }
            let n = stream.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            input.extend_from_slice(&chunk[..n]);
        }
    })
    .await
    .ok()
    .flatten()
}

/// The other sentinels' answers to `args`, asked all at once (as Sentinel does), in their
/// order, each `None` when it did not answer within `wait`.
async fn ask_sentinels(
    shared: &Arc<Shared>,
    index: u32,
    args: &[&[u8]],
    wait: Duration,
) -> Vec<Option<Vec<Vec<u8>>>> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let others: Vec<u32> = shared.servers().filter(|s| *s != index).collect();
    let args: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
    for (i, s) in others.iter().enumerate() {
        let (tx, addr, args) = (tx.clone(), shared.sentinel_addr(*s), args.clone());
        madsim::task::spawn(async move {
            let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
            let _ = tx.send((i, ask(addr, &refs, wait).await));
        });
    }
    drop(tx);
    let mut answers = vec![None; others.len()];
    while let Some((i, a)) = rx.recv().await {
        answers[i] = a;
    }
    answers
}

fn yes(words: &Option<Vec<Vec<u8>>>) -> bool {
    matches!(words.as_deref(), Some([w]) if w == b"1")
}

/// Runs sentinel `index` on its node: its listener and its watch, until the node dies.
pub(crate) async fn sentinel(index: u32, shared: Arc<Shared>) {
    let addr = shared.sentinel_addr(index);
    let listener = TcpListener::bind(addr)
        .await
        .expect("the sentinel binds its address");
    {
        let shared = shared.clone();
        madsim::task::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                madsim::task::spawn(answer(stream, index, shared.clone()));
            }
        });
    }
    shared.watch(index, |w| w.last_ok = shared.now());
    loop {
        madsim::time::sleep(Duration::from_secs(1)).await;
        check(index, &shared).await;
    }
}

/// One round of sentinel `index`'s watch: learn the newest configuration from the others (as
/// Sentinel's hello messages spread it), ping, reconfigure, and fail over when it must.
async fn check(index: u32, shared: &Arc<Shared>) {
    let second = Duration::from_secs(1);
    for said in ask_sentinels(shared, index, &[b"LOCKSIM.EPOCH"], PEER_WAIT).await {
        if let Some([e, p]) = said.as_deref() {
            adopt(shared, index, e, p);
        }
    }
    let primary = shared.watch(index, |w| w.primary);
    let pong = ask(shared.server_addr(primary), &[b"PING"], second).await;
    let now = shared.now();
    let down_after = shared.down_after();
    let sdown = shared.watch(index, |w| {
        if w.primary == primary {
            if pong.is_some() {
                w.last_ok = now;
            }
            w.sdown = now.saturating_sub(w.last_ok) >= down_after;
        }
        w.sdown
    });
    // Every other server it reaches replicates the primary it knows.
    for s in shared.servers() {
        if s == primary {
            continue;
        }
        let role = ask(shared.server_addr(s), &[b"LOCKSIM.ROLE"], second).await;
        let follows = matches!(role.as_deref(), Some([r, of, _]) if r == b"replica" && of == primary.to_string().as_bytes());
        if role.is_some() && !follows && !sdown {
            let ip = shared.server_addr(primary).ip().to_string();
            let _ = ask(
                shared.server_addr(s),
                &[b"REPLICAOF", ip.as_bytes(), b"6379"],
                second,
            )
            .await;
        }
    }
    if sdown {
        fail_over(index, primary, shared).await;
    }
}

/// Sentinel `index` holds `primary` down: with a quorum agreeing, it seeks votes and, elected,
/// promotes the best replica.
async fn fail_over(index: u32, primary: u32, shared: &Arc<Shared>) {
    let second = Duration::from_secs(1);
    let p = primary.to_string();
    let agree = 1 + ask_sentinels(shared, index, &[b"LOCKSIM.ISDOWN", p.as_bytes()], PEER_WAIT)
        .await
        .iter()
        .filter(|a| yes(a))
        .count();
    if agree < shared.sentinel_quorum() {
        return;
    }
    // A random wait, so that two sentinels rarely seek votes at once.
    let jitter = madsim::rand::random::<u64>() % 3_000;
    madsim::time::sleep(Duration::from_millis(jitter)).await;
    let Some(epoch) = shared.watch(index, |w| {
        (w.primary == primary && w.sdown).then(|| {
            let e = w.epoch.max(w.voted) + 1;
            w.voted = e;
            e
        })
    }) else {
        return;
    };
    let e = epoch.to_string();
    let votes = 1 + ask_sentinels(shared, index, &[b"LOCKSIM.VOTE", e.as_bytes()], PEER_WAIT)
        .await
        .iter()
        .filter(|a| yes(a))
        .count();
    if votes < shared.servers().len() / 2 + 1 || votes < shared.sentinel_quorum() {
        madsim::time::sleep(Duration::from_secs(2)).await;
        return;
    }
    // The replica with the highest offset that answers.
    let mut best: Option<(u64, u32)> = None;
    for s in shared.servers().filter(|s| *s != primary) {
        let role = ask(shared.server_addr(s), &[b"LOCKSIM.ROLE"], second).await;
        if let Some([_, _, off]) = role.as_deref() {
            let off: u64 = std::str::from_utf8(off)
                .ok()
                .and_then(|o| o.parse().ok())
                .unwrap_or(0);
            if best.is_none_or(|(b, _)| off > b) {
                best = Some((off, s));
            }
        }
    }
    let Some((_, promoted)) = best else {
        return;
    };
    if ask(
        shared.server_addr(promoted),
        &[b"REPLICAOF", b"NO", b"ONE"],
        second,
    )
    .await
    .is_none()
    {
        return;
    }
    let now = shared.now();
    shared.watch(index, |w| {
        w.epoch = epoch;
        w.primary = promoted;
        w.last_ok = now;
        w.sdown = false;
    });
    shared.record(|r| r.leader(now, promoted, epoch + 1));
    let np = promoted.to_string();
    ask_sentinels(
        shared,
        index,
        &[b"LOCKSIM.CONFIG", e.as_bytes(), np.as_bytes()],
        PEER_WAIT,
    )
    .await;
}

/// Answers one connection to sentinel `index`: clients' `SENTINEL` questions and the other
/// sentinels' messages.
async fn answer(mut stream: TcpStream, index: u32, shared: Arc<Shared>) {
    let mut session = Session { proto: 2, id: 0 };
    let mut handshake = Store::default();
    let mut input = Vec::new();
    let mut chunk = vec![0u8; 4096];
    loop {
        let mut out = Vec::new();
        while let Ok(Some((args, used))) = parse_request(&input) {
            input.drain(..used);
            let reply = respond(&args, index, &shared)
                .unwrap_or_else(|| handshake.exec(0, &mut session, &shared.scripts, &args).0);
            reply.encode(session.proto, &mut out);
        }
        if !out.is_empty()
            && (stream.write_all(&out).await.is_err() || stream.flush().await.is_err())
        {
            return;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => input.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Sentinel `index` takes another's configuration (epoch `e`, primary `p`, as text) when it
/// is newer than its own.
fn adopt(shared: &Shared, index: u32, e: &[u8], p: &[u8]) {
    let (e, p) = (num(e).unwrap_or(0), num(p).unwrap_or(0) as u32);
    let now = shared.now();
    shared.watch(index, |w| {
        if e > w.epoch {
            w.epoch = e;
            w.primary = p;
            w.last_ok = now;
            w.sdown = false;
        }
    });
}

/// Sentinel `index`'s answer to `args`, `None` for a command it leaves to the handshake
/// (`PING`, `HELLO`, `CLIENT …`).
fn respond(args: &[Vec<u8>], index: u32, shared: &Shared) -> Option<Reply> {
    let cmd = upper(args.first()?);
    let one = |b: bool| Reply::Array(vec![Reply::text(if b { "1" } else { "0" })]);
    let w = shared.watch(index, |w| w.clone());
    let node = |s: u32, flags: &str| {
        let a = shared.server_addr(s);
        Reply::Map(vec![
            (Reply::text("name"), Reply::text(SERVICE)),
            (Reply::text("ip"), Reply::text(&a.ip().to_string())),
            (Reply::text("port"), Reply::text(&a.port().to_string())),
            (Reply::text("flags"), Reply::text(flags)),
        ])
    };
    Some(match (cmd.as_str(), &args[1..]) {
        ("ROLE", []) => Reply::Array(vec![
            Reply::text("sentinel"),
            Reply::Array(vec![Reply::text(SERVICE)]),
        ]),
        ("LOCKSIM.EPOCH", []) => Reply::Array(vec![
            Reply::text(&w.epoch.to_string()),
            Reply::text(&w.primary.to_string()),
        ]),
        ("LOCKSIM.ISDOWN", [p]) => one(num(p) == Some(u64::from(w.primary)) && w.sdown),
        ("LOCKSIM.VOTE", [e]) => {
            let e = num(e).unwrap_or(0);
            one(shared.watch(index, |w| {
                let fresh = e > w.voted && e > w.epoch;
                if fresh {
                    w.voted = e;
                }
                fresh
            }))
        }
        ("LOCKSIM.CONFIG", [e, p]) => {
            adopt(shared, index, e, p);
            Reply::ok()
        }
        ("SENTINEL", [sub, rest @ ..]) => match (upper(sub).as_str(), rest) {
            ("MASTERS", []) => {
                let flags = if w.sdown { "master,s_down" } else { "master" };
                Reply::Array(vec![node(w.primary, flags)])
            }
            ("SLAVES" | "REPLICAS", [name]) if name == SERVICE.as_bytes() => Reply::Array(
                shared
                    .servers()
                    .filter(|s| *s != w.primary)
                    .map(|s| node(s, "slave"))
                    .collect(),
            ),
            ("GET-MASTER-ADDR-BY-NAME", [name]) if name == SERVICE.as_bytes() => {
                let a = shared.server_addr(w.primary);
                Reply::Array(vec![
                    Reply::text(&a.ip().to_string()),
                    Reply::text(&a.port().to_string()),
                ])
            }
            (_, [name, ..]) if name != SERVICE.as_bytes() => Reply::Nil,
            _ => Reply::err(
                "locksim's sentinel answers SENTINEL MASTERS, SLAVES, REPLICAS and \
                 GET-MASTER-ADDR-BY-NAME",
            ),
        },
        _ => return None,
    })
}
