//! locksim adapter (docs/adapters.md, protocol 1) for the `redlock` crate (crates.io
//! "redlock", 2.0.0, pinned in Cargo.lock), on five Redis masters (algorithm "redlock").
//!
//! Library: `redlock::RedLock`, the Redlock of Redis's distributed-lock page: SET NX PX on
//! each master in turn, a quorum of N/2 + 1, validity = TTL - elapsed - (1% of TTL + 2 ms),
//! and a Lua compare-and-delete on every master to release.
//! Calls:
//!   hello    rl = RedLock::new(["redis://h:p/", ...]); rl.set_retry(1, 1): ONE attempt per
//!            acquire (the default is three, 200 ms apart), with no sleep after it.
//!            The crate has no timeouts: each command opens a new connection
//!            (Client::get_connection) with none, so a black-holed master blocks it.
//!   acquire  rl.lock(b"locksim:{key}", ttl_ms)          -> Option<Lock> (Lock.validity_time)
//!   release  rl.unlock(&lock)                           on the lock acquired last on the key
//! An op runs on its own thread; one not done within 2 x timeout_ms (no limit when there is
//! no timeout) is answered info, and a late grant of it is unlocked when it comes.
//! Answers:
//!   acquire Some(lock) -> ok + validity_ms = lock.validity_time; None -> fail (no quorum, or
//!     no validity left: the library unlocked what it had set); Err -> info: the crate stops
//!     at the first master's error (`?`), after setting the key on the masters before it
//!   release -> info always: unlock() returns nothing (best effort, errors swallowed), so
//!     whether the key was deleted is unknown; on a key never acquired -> fail
//!   an unknown op -> error
//! Read from the source, not shown by a run yet: validity_time is usize arithmetic, so an
//! attempt slower than TTL - drift wraps round instead of failing (a release build, as here,
//! does not check overflow) and is granted with an enormous validity.
//! No token.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::sync::mpsc;
use std::time::Duration;

use redlock::{Lock, RedLock};
use serde_json::{json, Map, Value};

fn answer(v: Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{v}");
    let _ = out.flush();
}

fn main() {
    let mut manager: Option<&'static RedLock> = None;
    let mut wait: Option<Duration> = None;
    let mut locks: BTreeMap<u64, Lock<'static>> = BTreeMap::new();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let req: Map<String, Value> = match serde_json::from_str(&line) {
            Ok(r) => r,
            Err(e) => {
                answer(json!({"id": null, "error": format!("not a JSON object: {e}")}));
                continue;
            }
        };
        let id = req.get("id").cloned().unwrap_or(Value::Null);
        let op = req.get("op").and_then(Value::as_str).unwrap_or("");
        let key = req.get("key").and_then(Value::as_u64).unwrap_or(0);
        match (op, manager) {
            ("hello", _) => {
                let uris: Vec<String> = req["servers"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|s| {
                        format!(
                            "redis://{}:{}/",
                            s["host"].as_str().unwrap_or(""),
                            s["port"]
                        )
                    })
                    .collect();
                let mut rl = RedLock::new(uris);
                rl.set_retry(1, 1);
                manager = Some(Box::leak(Box::new(rl)));
                wait = req["timeout_ms"]
                    .as_u64()
                    .map(|t| Duration::from_millis(2 * t));
                answer(json!({"id": id, "ok": true, "library": "redlock", "version": "2.0.0"}));
            }
            ("acquire", Some(rl)) => {
                let ttl = req["ttl_ms"].as_u64().unwrap_or(0) as usize;
                let resource = format!("locksim:{key}").into_bytes();
                let (tx, rx) = mpsc::channel();
                std::thread::spawn(move || {
                    let got = rl.lock(&resource, ttl);
                    if let Err(mpsc::SendError(Ok(Some(late)))) = tx.send(got) {
                        rl.unlock(&late); // answered info already: let a late grant go
                    }
                });
                let got = match wait {
                    Some(w) => rx.recv_timeout(w).map_err(|_| ()),
                    None => rx.recv().map_err(|_| ()),
                };
                match got {
                    Ok(Ok(Some(lock))) => {
                        let validity = lock.validity_time;
                        locks.insert(key, lock);
                        answer(json!({"id": id, "ok": true, "validity_ms": validity}));
                    }
                    Ok(Ok(None)) => answer(json!({"id": id, "fail":
                        "lock() returned None: no quorum, or no validity left"})),
                    Ok(Err(e)) => answer(json!({"id": id, "info": format!("lock() failed: {e}")})),
                    Err(()) => answer(json!({"id": id, "info":
                        "no answer from lock() within 2 x timeout_ms: it may still set the key"})),
                }
            }
            ("release", Some(rl)) => {
                let Some(lock) = locks.remove(&key) else {
                    answer(json!({"id": id, "fail": "no lock acquired on this key"}));
                    continue;
                };
                let (tx, rx) = mpsc::channel();
                std::thread::spawn(move || {
                    rl.unlock(&lock);
                    let _ = tx.send(());
                });
                let done = match wait {
                    Some(w) => rx.recv_timeout(w).is_ok(),
                    None => rx.recv().is_ok(),
                };
                let why = if done {
                    "unlock() returned: it says nothing of what it deleted"
                } else {
                    "no return from unlock() within 2 x timeout_ms"
                };
                answer(json!({"id": id, "info": why}));
            }
            (_, None) => answer(json!({"id": id, "error": format!("{op} before hello")})),
            (other, _) => answer(json!({"id": id, "error": format!("unknown op {other}")})),
        }
    }
    std::process::exit(0); // without waiting for ops left running
}
