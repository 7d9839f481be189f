//! The key space of one simulated Redis and the commands lock clients send, with Redis's
//! semantics (<https://redis.io/docs/latest/commands/>): `SET` with `NX`/`XX`/`PX`/`EX`/
//! `KEEPTTL`/`GET`, `GET`, `DEL`, `EXISTS`, `INCR`, `PEXPIRE`/`EXPIRE`, `PTTL`/`TTL`, `EVAL`/
//! `EVALSHA`/`SCRIPT` for the recognised scripts ([`crate::scripts`]), and the connection
//! commands (`HELLO`, `CLIENT`, `PING`, `ECHO`, `SELECT 0`). Anything else is answered with
//! Redis's own "unknown command" error.
//!
//! Keys expire on the server's clock: a key whose deadline has passed is gone for every command
//! (Redis's passive expiry; its active expiry only frees memory sooner). Times are ns of true
//! time since the run started; TTLs on the wire are ms (`PX`) or s (`EX`).
//!
//! Besides its reply, each command returns the [`Effect`]s a lock checker cares about, which
//! [`crate::record`] turns into history events.

use std::collections::BTreeMap;

use locksim_core::Nanos;

use crate::resp::Reply;
use crate::scripts::{sha1_hex, ScriptKind, Scripts};

const MS: Nanos = 1_000_000;

#[derive(Debug, Clone)]
struct Entry {
    value: Vec<u8>,
    /// True time at which the key is gone, ns.
    expires: Option<Nanos>,
}

/// What a command did that a lock checker cares about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// `SET … NX` created the key: a lock grant, gone at `expires` (ns) unless extended.
    Acquired {
        key: Vec<u8>,
        value: Vec<u8>,
        expires: Option<Nanos>,
    },
    /// A key was written by anything but `SET … NX` (a plain `SET`, `SET … XX`, `INCR`): its
    /// new value, and its deadline (ns) when the write set one (`PX`/`EX`).
    Wrote {
        key: Vec<u8>,
        value: Vec<u8>,
        expires: Option<Nanos>,
    },
    /// A live key was deleted (`DEL`, or a compare-and-delete script whose compare held).
    Deleted {
        key: Vec<u8>,
        value: Vec<u8>,
        by_script: bool,
    },
    /// A live key's deadline was set (`PEXPIRE`, `EXPIRE`, a compare-and-pexpire script).
    Expiry {
        key: Vec<u8>,
        value: Vec<u8>,
        until: Nanos,
    },
    /// A compare-and-delete or compare-and-pexpire script found another value (or none).
    CompareFailed { key: Vec<u8>, kind: ScriptKind },
}

/// Per-connection state: the protocol version `HELLO` chose (2 until then).
#[derive(Debug, Clone)]
pub struct Session {
    /// 2 or 3.
    pub proto: u8,
    /// The connection's id (`CLIENT ID`, `HELLO`'s `id`).
    pub id: i64,
}

/// One server's keys and loaded scripts. A crash loses both (a Redis without persistence).
#[derive(Debug, Default)]
pub struct Store {
    keys: BTreeMap<Vec<u8>, Entry>,
    loaded: BTreeMap<String, ScriptKind>,
}

type Out = (Reply, Vec<Effect>);

fn reply(r: Reply) -> Out {
    (r, Vec::new())
}

fn wrong_args(cmd: &str) -> Out {
    reply(Reply::err(format!(
        "wrong number of arguments for '{}' command",
        cmd.to_ascii_lowercase()
    )))
}

fn syntax() -> Out {
    reply(Reply::err("syntax error"))
}

fn not_int() -> Out {
    reply(Reply::err("value is not an integer or out of range"))
}

fn int(arg: &[u8]) -> Option<i64> {
    std::str::from_utf8(arg).ok()?.parse().ok()
}

/// A non-negative whole number written in `arg`.
pub(crate) fn uint(arg: &[u8]) -> Option<u64> {
    std::str::from_utf8(arg).ok()?.parse().ok()
}

/// A command's or option's name in upper case.
pub(crate) fn upper(arg: &[u8]) -> String {
    String::from_utf8_lossy(arg).to_ascii_uppercase()
}

impl Store {
    /// Every live key at `now`: `(key, value, deadline)`, in key order (a replica's first sync).
    pub fn snapshot(&mut self, now: Nanos) -> Vec<(Vec<u8>, Vec<u8>, Option<Nanos>)> {
        self.keys.retain(|_, e| e.expires.is_none_or(|t| t > now));
        self.keys
            .iter()
            .map(|(k, e)| (k.clone(), e.value.clone(), e.expires))
            .collect()
    }

    /// Forgets every key (a replica about to take a full copy of its primary's).
    pub fn clear(&mut self) {
        self.keys.clear();
    }

    /// Sets `key` to `value` with `expires` (a deadline on this server's clock), as a replica
    /// applies its primary's write.
    pub fn put(&mut self, key: Vec<u8>, value: Vec<u8>, expires: Option<Nanos>) {
        self.keys.insert(key, Entry { value, expires });
    }

    /// Deletes `key`, as a replica applies its primary's delete.
    pub fn remove(&mut self, key: &[u8]) {
        self.keys.remove(key);
    }

    /// Sets a live `key`'s deadline, as a replica applies its primary's expire.
    pub fn set_deadline(&mut self, key: &[u8], expires: Nanos) {
        if let Some(e) = self.keys.get_mut(key) {
            e.expires = Some(expires);
        }
    }

    /// The live entry of `key` at `now`, dropping it when it has expired.
    fn live(&mut self, key: &[u8], now: Nanos) -> Option<&mut Entry> {
        if matches!(self.keys.get(key), Some(e) if e.expires.is_some_and(|t| t <= now)) {
            self.keys.remove(key);
        }
        self.keys.get_mut(key)
    }

    /// Runs one command (`args[0]` its name) at true time `now` and returns its reply and
    /// effects.
    pub fn exec(
        &mut self,
        now: Nanos,
        session: &mut Session,
        scripts: &Scripts,
        args: &[Vec<u8>],
    ) -> (Reply, Vec<Effect>) {
        let Some(name) = args.first() else {
            return reply(Reply::err("empty command"));
        };
        let cmd = upper(name);
        let a = &args[1..];
        match cmd.as_str() {
            "PING" => match a {
                [] => reply(Reply::Simple("PONG".into())),
                [m] => reply(Reply::Bulk(m.clone())),
                _ => wrong_args(&cmd),
            },
            "ECHO" => match a {
                [m] => reply(Reply::Bulk(m.clone())),
                _ => wrong_args(&cmd),
            },
            "HELLO" => self.hello(session, a),
            "CLIENT" => match a.first().map(|s| upper(s)).as_deref() {
                Some("SETINFO" | "SETNAME") => reply(Reply::ok()),
                Some("ID") => reply(Reply::Int(session.id)),
                Some("GETNAME") => reply(Reply::Nil),
                _ => reply(Reply::err(
                    "locksim's RESP server answers CLIENT SETINFO, SETNAME, GETNAME and ID only",
                )),
            },
            "SELECT" => match a {
                [db] if int(db) == Some(0) => reply(Reply::ok()),
                [_] => reply(Reply::err("DB index is out of range")),
                _ => wrong_args(&cmd),
            },
            "SET" => self.set(now, a),
            "GET" => match a {
                [k] => reply(
                    self.live(k, now)
                        .map_or(Reply::Nil, |e| Reply::Bulk(e.value.clone())),
                ),
                _ => wrong_args(&cmd),
            },
            "EXISTS" if !a.is_empty() => {
                let n = a.iter().filter(|k| self.live(k, now).is_some()).count();
                reply(Reply::Int(n as i64))
            }
            "DEL" | "UNLINK" if !a.is_empty() => {
                let mut effects = Vec::new();
                for k in a {
                    if self.live(k, now).is_some() {
                        let e = self.keys.remove(k.as_slice()).expect("live");
                        effects.push(Effect::Deleted {
                            key: k.clone(),
                            value: e.value,
                            by_script: false,
                        });
                    }
                }
                (Reply::Int(effects.len() as i64), effects)
            }
            "INCR" => match a {
                [k] => {
                    let e = self.live(k, now).map(|e| e.value.clone());
                    let n = match e {
                        None => 0,
                        Some(v) => match int(&v) {
                            Some(n) => n,
                            None => return not_int(),
                        },
                    };
                    let Some(n) = n.checked_add(1) else {
                        return reply(Reply::err("increment or decrement would overflow"));
                    };
                    let expires = self.live(k, now).and_then(|e| e.expires);
                    self.keys.insert(
                        k.clone(),
                        Entry {
                            value: n.to_string().into_bytes(),
                            expires,
                        },
                    );
                    let value = n.to_string().into_bytes();
                    (
                        Reply::Int(n),
                        vec![Effect::Wrote {
                            key: k.clone(),
                            value,
                            expires: None,
                        }],
                    )
                }
                _ => wrong_args(&cmd),
            },
            "PEXPIRE" | "EXPIRE" => match a {
                [k, t] => {
                    let Some(t) = int(t) else { return not_int() };
                    let unit = if cmd == "EXPIRE" { 1000 * MS } else { MS };
                    self.expire(now, k, t, unit)
                }
                _ => wrong_args(&cmd),
            },
            "PTTL" | "TTL" => match a {
                [k] => {
                    let unit = if cmd == "TTL" { 1000 * MS } else { MS };
                    reply(Reply::Int(match self.live(k, now) {
                        None => -2,
                        Some(Entry { expires: None, .. }) => -1,
                        // Redis rounds the remaining time to the nearest unit.
                        Some(Entry {
                            expires: Some(t), ..
                        }) => ((*t - now + unit / 2) / unit) as i64,
                    }))
                }
                _ => wrong_args(&cmd),
            },
            "SCRIPT" => match (a.first().map(|s| upper(s)).as_deref(), &a[1.min(a.len())..]) {
                (Some("LOAD"), [text]) => match scripts.recognise(text) {
                    Some(kind) => {
                        let sha = sha1_hex(text);
                        self.loaded.insert(sha.clone(), kind);
                        reply(Reply::text(&sha))
                    }
                    None => reply(unknown_script(text)),
                },
                (Some("EXISTS"), shas) if !shas.is_empty() => reply(Reply::Array(
                    shas.iter()
                        .map(|s| {
                            let s = String::from_utf8_lossy(s).to_ascii_lowercase();
                            Reply::Int(self.loaded.contains_key(&s) as i64)
                        })
                        .collect(),
                )),
                (Some("FLUSH"), _) => {
                    self.loaded.clear();
                    reply(Reply::ok())
                }
                _ => reply(Reply::err(
                    "locksim's RESP server answers SCRIPT LOAD, EXISTS and FLUSH only",
                )),
            },
            "EVAL" | "EVALSHA" if a.len() >= 2 => {
                let kind = if cmd == "EVAL" {
                    match scripts.recognise(&a[0]) {
                        Some(kind) => {
                            // EVAL caches the script under its SHA1, as Redis does.
                            self.loaded.insert(sha1_hex(&a[0]), kind);
                            kind
                        }
                        None => return reply(unknown_script(&a[0])),
                    }
                } else {
                    let sha = String::from_utf8_lossy(&a[0]).to_ascii_lowercase();
                    match self.loaded.get(&sha) {
                        Some(k) => *k,
                        None => {
                            return reply(Reply::Error(
                                "NOSCRIPT No matching script. Please use EVAL.".into(),
                            ))
                        }
                    }
                };
                let Some(numkeys) = int(&a[1]).filter(|n| *n >= 0) else {
                    return not_int();
                };
                let rest = &a[2..];
                if numkeys as usize > rest.len() {
                    return reply(Reply::err(
                        "Number of keys can't be greater than number of args",
                    ));
                }
                let (keys, argv) = rest.split_at(numkeys as usize);
                self.script(now, kind, keys, argv)
            }
            "EVAL" | "EVALSHA" | "EXISTS" | "DEL" | "UNLINK" => wrong_args(&cmd),
            _ => {
                let start: Vec<String> = a
                    .iter()
                    .take(3)
                    .map(|s| format!("'{}'", String::from_utf8_lossy(s)))
                    .collect();
                reply(Reply::err(format!(
                    "unknown command '{}', with args beginning with: {} (locksim's RESP server \
                     answers the commands lock clients send; see docs/own-client.md)",
                    String::from_utf8_lossy(name),
                    start.join(" ")
                )))
            }
        }
    }

    fn hello(&mut self, session: &mut Session, a: &[Vec<u8>]) -> Out {
        if let Some(v) = a.first() {
            match int(v) {
                Some(v @ (2 | 3)) => session.proto = v as u8,
                _ => return reply(Reply::Error("NOPROTO unsupported protocol version".into())),
            }
        }
        let s = |k: &str, v: Reply| (Reply::text(k), v);
        reply(Reply::Map(vec![
            s("server", Reply::text("redis")),
            s("version", Reply::text("7.2.0")),
            s("proto", Reply::Int(session.proto as i64)),
            s("id", Reply::Int(session.id)),
            s("mode", Reply::text("standalone")),
            s("role", Reply::text("master")),
            s("modules", Reply::Array(Vec::new())),
        ]))
    }

    fn set(&mut self, now: Nanos, a: &[Vec<u8>]) -> Out {
        let [key, value, opts @ ..] = a else {
            return wrong_args("SET");
        };
        let (mut nx, mut xx, mut get, mut keepttl) = (false, false, false, false);
        let mut ttl: Option<Nanos> = None;
        let mut i = 0;
        while i < opts.len() {
            match upper(&opts[i]).as_str() {
                "NX" if !xx => nx = true,
                "XX" if !nx => xx = true,
                "GET" => get = true,
                "KEEPTTL" if ttl.is_none() => keepttl = true,
                unit @ ("PX" | "EX") if ttl.is_none() && !keepttl => {
                    let Some(n) = opts.get(i + 1).and_then(|t| int(t)) else {
                        return if opts.get(i + 1).is_some() {
                            not_int()
                        } else {
                            syntax()
                        };
                    };
                    if n <= 0 {
                        return reply(Reply::err("invalid expire time in 'set' command"));
                    }
                    let per = if unit == "EX" { 1000 * MS } else { MS };
                    // A deadline past what the clock can hold is Redis's own refusal.
                    match (n as Nanos)
                        .checked_mul(per)
                        .filter(|t| now.checked_add(*t).is_some())
                    {
                        Some(t) => ttl = Some(t),
                        None => return reply(Reply::err("invalid expire time in 'set' command")),
                    }
                    i += 1;
                }
                _ => return syntax(),
            }
            i += 1;
        }
        let old = self.live(key, now).cloned();
        let old_value = || {
            old.as_ref()
                .map_or(Reply::Nil, |e| Reply::Bulk(e.value.clone()))
        };
        if (nx && old.is_some()) || (xx && old.is_none()) {
            return reply(if get { old_value() } else { Reply::Nil });
        }
        let expires = match ttl {
            Some(t) => Some(now + t),
            None if keepttl => old.as_ref().and_then(|e| e.expires),
            None => None,
        };
        self.keys.insert(
            key.clone(),
            Entry {
                value: value.clone(),
                expires,
            },
        );
        let effect = if nx {
            Effect::Acquired {
                key: key.clone(),
                value: value.clone(),
                expires,
            }
        } else {
            Effect::Wrote {
                key: key.clone(),
                value: value.clone(),
                expires: ttl.and(expires),
            }
        };
        (if get { old_value() } else { Reply::ok() }, vec![effect])
    }

    fn expire(&mut self, now: Nanos, key: &[u8], t: i64, unit: Nanos) -> Out {
        let Some(e) = self.live(key, now) else {
            return reply(Reply::Int(0));
        };
        if t <= 0 {
            // A non-positive TTL deletes the key (Redis: "the key will be deleted").
            let value = e.value.clone();
            self.keys.remove(key);
            return (
                Reply::Int(1),
                vec![Effect::Deleted {
                    key: key.to_vec(),
                    value,
                    by_script: false,
                }],
            );
        }
        let Some(until) = (t as Nanos)
            .checked_mul(unit)
            .and_then(|d| now.checked_add(d))
        else {
            return reply(Reply::err("invalid expire time in 'pexpire' command"));
        };
        e.expires = Some(until);
        let value = e.value.clone();
        (
            Reply::Int(1),
            vec![Effect::Expiry {
                key: key.to_vec(),
                value,
                until,
            }],
        )
    }

    fn script(&mut self, now: Nanos, kind: ScriptKind, keys: &[Vec<u8>], argv: &[Vec<u8>]) -> Out {
        let (Some(key), Some(owner)) = (keys.first(), argv.first()) else {
            return reply(Reply::Error(
                "ERR Error running script: the lock script needs KEYS[1] and ARGV[1]".into(),
            ));
        };
        let held = self.live(key, now).is_some_and(|e| &e.value == owner);
        if !held {
            return (
                Reply::Int(0),
                vec![Effect::CompareFailed {
                    key: key.clone(),
                    kind,
                }],
            );
        }
        match kind {
            ScriptKind::CompareAndDelete => {
                let e = self.keys.remove(key.as_slice()).expect("live");
                (
                    Reply::Int(1),
                    vec![Effect::Deleted {
                        key: key.clone(),
                        value: e.value,
                        by_script: true,
                    }],
                )
            }
            ScriptKind::CompareAndPexpire => match argv.get(1).and_then(|t| int(t)) {
                Some(ms) => self.expire(now, key, ms, MS),
                None => reply(Reply::Error(
                    "ERR Error running script: ARGV[2] is not a TTL in milliseconds".into(),
                )),
            },
        }
    }
}

fn unknown_script(text: &[u8]) -> Reply {
    Reply::Error(format!(
        "ERR locksim's RESP server runs no Lua: script {} is not one it recognises \
         (compare-and-delete, compare-and-pexpire); register it with Scenario::script, see \
         docs/own-client.md",
        sha1_hex(text)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripts::{EXTEND, UNLOCK};

    fn run(store: &mut Store, now: Nanos, cmd: &[&str]) -> (Reply, Vec<Effect>) {
        let args: Vec<Vec<u8>> = cmd.iter().map(|s| s.as_bytes().to_vec()).collect();
        let mut s = Session { proto: 2, id: 1 };
        store.exec(now, &mut s, &Scripts::default(), &args)
    }

    #[test]
    fn set_nx_px_grants_until_the_ttl() {
        let mut st = Store::default();
        let (r, e) = run(&mut st, 0, &["SET", "lock", "a", "NX", "PX", "100"]);
        assert_eq!(r, Reply::ok());
        assert!(matches!(&e[..], [Effect::Acquired { expires: Some(t), .. }] if *t == 100 * MS));
        assert_eq!(
            run(&mut st, 50 * MS, &["SET", "lock", "b", "NX", "PX", "100"]).0,
            Reply::Nil
        );
        assert_eq!(run(&mut st, 50 * MS, &["PTTL", "lock"]).0, Reply::Int(50));
        // Expired on the server's clock: the next SET NX wins.
        assert_eq!(
            run(&mut st, 100 * MS, &["SET", "lock", "b", "NX", "PX", "100"]).0,
            Reply::ok()
        );
        assert_eq!(run(&mut st, 100 * MS, &["GET", "lock"]).0, Reply::text("b"));
    }

    #[test]
    fn scripts_compare_before_deleting_or_extending() {
        let mut st = Store::default();
        run(&mut st, 0, &["SET", "lock", "a", "NX", "PX", "100"]);
        let (r, e) = run(&mut st, 10 * MS, &["EVAL", EXTEND, "1", "lock", "a", "300"]);
        assert_eq!(r, Reply::Int(1));
        assert!(matches!(&e[..], [Effect::Expiry { until, .. }] if *until == 310 * MS));
        let (r, e) = run(&mut st, 20 * MS, &["EVAL", UNLOCK, "1", "lock", "b"]);
        assert_eq!(r, Reply::Int(0));
        assert!(matches!(&e[..], [Effect::CompareFailed { .. }]));
        let sha = sha1_hex(UNLOCK.as_bytes());
        // EVAL cached it: EVALSHA now runs it.
        let (r, e) = run(&mut st, 30 * MS, &["EVALSHA", &sha, "1", "lock", "a"]);
        assert_eq!(r, Reply::Int(1));
        assert!(matches!(
            &e[..],
            [Effect::Deleted {
                by_script: true,
                ..
            }]
        ));
    }

    #[test]
    fn evalsha_needs_a_loaded_script() {
        let mut st = Store::default();
        let sha = sha1_hex(UNLOCK.as_bytes());
        let (r, _) = run(&mut st, 0, &["EVALSHA", &sha, "1", "lock", "a"]);
        assert!(matches!(r, Reply::Error(ref e) if e.starts_with("NOSCRIPT")));
        assert_eq!(
            run(&mut st, 0, &["SCRIPT", "LOAD", UNLOCK]).0,
            Reply::text(&sha)
        );
        assert_eq!(
            run(&mut st, 0, &["EVALSHA", &sha, "1", "lock", "a"]).0,
            Reply::Int(0)
        );
        let (r, _) = run(&mut st, 0, &["EVAL", "return 1", "0"]);
        assert!(
            matches!(r, Reply::Error(ref e) if e.contains("e0e1f9fabfc9d4800c877a703b823ac0578ff8db"))
        );
    }

    #[test]
    fn unknown_commands_are_refused_by_name() {
        let mut st = Store::default();
        let (r, _) = run(&mut st, 0, &["BLPOP", "q", "0"]);
        assert!(matches!(r, Reply::Error(ref e) if e.starts_with("ERR unknown command 'BLPOP'")));
    }

    #[test]
    fn hello_switches_the_protocol() {
        let mut st = Store::default();
        let mut s = Session { proto: 2, id: 7 };
        let args = vec![b"HELLO".to_vec(), b"3".to_vec()];
        let (r, _) = st.exec(0, &mut s, &Scripts::default(), &args);
        assert_eq!(s.proto, 3);
        assert!(
            matches!(r, Reply::Map(ref m) if m.contains(&(Reply::text("proto"), Reply::Int(3))))
        );
        let args = vec![b"HELLO".to_vec(), b"4".to_vec()];
        assert!(
            matches!(st.exec(0, &mut s, &Scripts::default(), &args).0, Reply::Error(ref e) if e.starts_with("NOPROTO"))
        );
    }

    #[test]
    fn a_deadline_past_the_clock_is_refused_as_redis_does() {
        let mut st = Store::default();
        let (r, e) = run(
            &mut st,
            5 * MS,
            &["SET", "k", "v", "NX", "PX", "18446744073710"],
        );
        assert_eq!(r, Reply::err("invalid expire time in 'set' command"));
        assert!(e.is_empty());
        let (r, _) = run(&mut st, 5 * MS, &["SET", "k", "v", "EX", "20000000000"]);
        assert_eq!(r, Reply::err("invalid expire time in 'set' command"));
        run(&mut st, 5 * MS, &["SET", "k", "v"]);
        let (r, _) = run(&mut st, 5 * MS, &["PEXPIRE", "k", "9223372036854775807"]);
        assert_eq!(r, Reply::err("invalid expire time in 'pexpire' command"));
    }
}
