//! Parsing algorithm knobs (`--set key=value`) with errors that name the key and the choices.

use std::collections::BTreeMap;

use locksim_core::time::parse_duration;
use locksim_core::Nanos;

/// One knob an algorithm accepts: name, default (as text) and what it does.
#[derive(Debug, Clone, Copy)]
pub struct Knob {
    /// Key as given to `--set`.
    pub key: &'static str,
    /// Default value, as text.
    pub default: &'static str,
    /// One line of help.
    pub help: &'static str,
}

impl Knob {
    /// Whether `key` names this knob: its key, or for a per-server knob (`nN.follower_lag`)
    /// the same with a server's name in place of `nN` (`n3.follower_lag`).
    pub fn names(&self, key: &str) -> bool {
        if self.key == key {
            return true;
        }
        match (self.key.strip_prefix("nN."), key.split_once('.')) {
            (Some(field), Some((node, f))) => {
                f == field
                    && node
                        .strip_prefix('n')
                        .and_then(|n| n.parse::<u32>().ok())
                        .is_some_and(|n| node == format!("n{n}"))
            }
            _ => false,
        }
    }
}

/// The client's clock knob, shared by the algorithms whose clients compute a validity.
pub const CLIENT_CLOCK: Knob = Knob {
    key: "client_clock",
    default: "wall",
    help: "clock the client measures elapsed time and validity with: wall (as redlock-py and node-redlock do) | mono",
};

/// The client's drift allowance knob (Redlock's `TTL·factor + 2 ms`).
pub const DRIFT_FACTOR: Knob = Knob {
    key: "drift_factor",
    default: "0.01",
    help: "client's clock-drift allowance as a fraction of TTL (plus 2 ms)",
};

/// The release knob of the Redis-like lock servers (`central`, `redlock`, `redis-failover`).
/// The Redis documentation's lock pattern releases with a script that deletes the key only
/// when it still holds the client's random value, and warns that a plain `DEL` can remove a
/// lock another client acquired after the caller's expired ("Distributed Locks with Redis",
/// <https://redis.io/docs/latest/develop/use/patterns/distributed-locks/>, and the `SET`
/// command's "Patterns" section).
pub const RELEASE: Knob = Knob {
    key: "release",
    default: "owner",
    help: "how a release deletes the key: owner (compare-and-delete: only if it still holds the client's value, the Redis docs' script) | delete (a plain DEL key, no owner check: may delete the next holder's lock)",
};

/// How a lock server's release deletes a key ([`RELEASE`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseMode {
    /// Compare-and-delete: only the owner's value deletes the key.
    Owner,
    /// `DEL key`: any release deletes whatever lock the key holds.
    Delete,
}

/// Reads the [`RELEASE`] knob.
///
/// # Errors
/// When the value is neither `owner` nor `delete`.
pub fn release_mode(k: &Knobs) -> Result<ReleaseMode, String> {
    Ok(match k.choice("release", &["owner", "delete"])? {
        "owner" => ReleaseMode::Owner,
        _ => ReleaseMode::Delete,
    })
}

/// The acquire knob of `central` and `central-fencing`: one atomic command or two. The Redis
/// docs' lock pattern is the atomic `SET key value NX PX ttl`; the older two-step pattern,
/// `SETNX key value` and then `EXPIRE key ttl`, leaves a key without expiry when the client dies
/// between the two (sidekiq-grouping#23, laravel/horizon#1738, lukas-krecan/ShedLock#65).
pub const ACQUIRE: Knob = Knob {
    key: "acquire",
    default: "atomic",
    help: "how the client takes the key: atomic (SET key value NX PX ttl, the Redis docs' pattern) | setnx-expire (SETNX key value, then EXPIRE key ttl: a client that dies between them leaves a key that never expires; sidekiq-grouping#23, laravel/horizon#1738, ShedLock#65)",
};

/// How a client takes a Redis-like lock key ([`ACQUIRE`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcquireMode {
    /// `SET key value NX PX ttl`: the key and its expiry in one command.
    Atomic,
    /// `SETNX key value`, then `EXPIRE key ttl`: two round trips.
    SetNxExpire,
}

/// Reads the [`ACQUIRE`] knob.
///
/// # Errors
/// When the value is neither `atomic` nor `setnx-expire`.
pub fn acquire_mode(k: &Knobs) -> Result<AcquireMode, String> {
    Ok(match k.choice("acquire", &["atomic", "setnx-expire"])? {
        "atomic" => AcquireMode::Atomic,
        _ => AcquireMode::SetNxExpire,
    })
}

/// Reads knobs out of a config map, remembering which keys were used.
pub struct Knobs<'a> {
    algo: &'a str,
    config: &'a BTreeMap<String, String>,
    known: &'static [Knob],
}

impl<'a> Knobs<'a> {
    /// Checks that every key of `config` is one of `known`.
    ///
    /// # Errors
    /// Names the unknown key and lists the valid ones.
    pub fn new(
        algo: &'a str,
        config: &'a BTreeMap<String, String>,
        known: &'static [Knob],
    ) -> Result<Self, String> {
        for k in config.keys() {
            if !known.iter().any(|n| n.names(k)) {
                let valid: Vec<&str> = known.iter().map(|n| n.key).collect();
                return Err(format!(
                    "`{k}` is not a setting of {algo} (valid: {})",
                    valid.join(", ")
                ));
            }
        }
        Ok(Knobs {
            algo,
            config,
            known,
        })
    }

    fn raw(&self, key: &str) -> &str {
        match self.config.get(key) {
            Some(v) => v,
            None => self
                .known
                .iter()
                .find(|k| k.key == key)
                .map(|k| k.default)
                .expect("knob declared"),
        }
    }

    /// A choice among `options`.
    ///
    /// # Errors
    /// When the value is not one of `options`.
    pub fn choice(&self, key: &str, options: &[&'static str]) -> Result<&'static str, String> {
        let v = self.raw(key);
        options.iter().copied().find(|o| *o == v).ok_or_else(|| {
            format!(
                "{}: `{key}={v}` is not valid (choose {})",
                self.algo,
                options.join(" or ")
            )
        })
    }

    /// A positive duration such as `50ms`.
    ///
    /// # Errors
    /// When the value is not a positive duration.
    pub fn duration(&self, key: &str) -> Result<Nanos, String> {
        let v = self.raw(key);
        match parse_duration(v) {
            Ok(d) if d > 0 => Ok(d as Nanos),
            Ok(_) => Err(format!("{}: `{key}={v}` must be more than zero", self.algo)),
            Err(e) => Err(format!("{}: `{key}`: {e}", self.algo)),
        }
    }

    /// A request timeout: a positive duration such as `100ms`, or `none` for a client that
    /// sets none and waits for as long as the network takes ([`locksim_sim::NO_TIMEOUT`]).
    ///
    /// # Errors
    /// When the value is neither `none` nor a positive duration.
    pub fn timeout(&self, key: &str) -> Result<Nanos, String> {
        if self.raw(key) == "none" {
            return Ok(locksim_sim::NO_TIMEOUT);
        }
        self.duration(key)
            .map_err(|e| format!("{e} (or none: no timeout)"))
    }

    /// A duration such as `2s` that may be zero (`0`, `0s`).
    ///
    /// # Errors
    /// When the value is not a duration.
    pub fn duration_or_zero(&self, key: &str) -> Result<Nanos, String> {
        let v = self.raw(key);
        match parse_duration(v) {
            Ok(d) if d >= 0 => Ok(d as Nanos),
            Ok(_) => Err(format!("{}: `{key}={v}` must not be negative", self.algo)),
            Err(e) => Err(format!("{}: `{key}`: {e}", self.algo)),
        }
    }

    /// An integer in `range`.
    ///
    /// # Errors
    /// When the value is not an integer in range.
    pub fn int(&self, key: &str, range: std::ops::RangeInclusive<u32>) -> Result<u32, String> {
        let v = self.raw(key);
        match v.parse::<u32>() {
            Ok(n) if range.contains(&n) => Ok(n),
            _ => Err(format!(
                "{}: `{key}={v}` must be an integer from {} to {}",
                self.algo,
                range.start(),
                range.end()
            )),
        }
    }

    /// A boolean (`true`/`false`, `on`/`off`, `yes`/`no`, `1`/`0`).
    ///
    /// # Errors
    /// When the value is none of those.
    pub fn flag(&self, key: &str) -> Result<bool, String> {
        parse_flag(self.raw(key)).ok_or_else(|| {
            format!(
                "{}: `{key}={}` must be true or false (or on/off, yes/no, 1/0)",
                self.algo,
                self.raw(key)
            )
        })
    }

    /// A fraction such as `0.01`, returned in parts per million.
    ///
    /// # Errors
    /// When the value is not a number from 0 to 1.
    pub fn fraction_ppm(&self, key: &str) -> Result<u64, String> {
        let v = self.raw(key);
        let err = || format!("{}: `{key}={v}` must be a number from 0 to 1", self.algo);
        let (int, frac) = v.split_once('.').unwrap_or((v, ""));
        if frac.len() > 6 || !frac.chars().all(|c| c.is_ascii_digit()) {
            return Err(err());
        }
        let int: u64 = int.parse().map_err(|_| err())?;
        if int > 1 {
            return Err(err());
        }
        let frac_ppm: u64 = if frac.is_empty() {
            0
        } else {
            format!("{frac:0<6}").parse().map_err(|_| err())?
        };
        let ppm = int * 1_000_000 + frac_ppm;
        if ppm > 1_000_000 {
            return Err(err());
        }
        Ok(ppm)
    }
}

/// Refuses a TTL that the client's drift allowance (`ttl·factor + 2 ms`) would use up: every
/// grant would be invalid on arrival and the run would test nothing.
///
/// # Errors
/// Names the TTL and the allowance.
pub fn check_ttl(algo: &str, ttl: Nanos, drift_ppm: u64) -> Result<(), String> {
    let allowance = crate::lockserver::drift_allowance(ttl, drift_ppm);
    if ttl <= allowance {
        return Err(format!(
            "{algo}: ttl {} is within the clients' drift allowance of {} (ttl·drift_factor + 2ms): no grant would ever be valid",
            locksim_core::time::fmt_nanos(ttl as i128),
            locksim_core::time::fmt_nanos(allowance as i128)
        ));
    }
    Ok(())
}

/// Reads a `wall | mono` knob.
///
/// # Errors
/// When the value is neither.
pub fn local_clock(k: &Knobs, key: &str) -> Result<locksim_core::LocalClock, String> {
    Ok(match k.choice(key, &["wall", "mono"])? {
        "wall" => locksim_core::LocalClock::Wall,
        _ => locksim_core::LocalClock::Mono,
    })
}

/// Parses `true/false`, `on/off`, `yes/no`, `1/0`.
pub fn parse_flag(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "on" | "yes" | "1" => Some(true),
        "false" | "off" | "no" | "0" => Some(false),
        _ => None,
    }
}
