//! The scenario parts of campaign files, as people write them: explicit fault plans
//! (`[[fault]]`) and per-client settings (`[client.c2]`), with node *names* and durations with
//! units, turned into plain data ([`FaultPlan`], [`ClientProfile`]).
//!
//! ```toml
//! [[fault]]
//! at = "2s"              # true time
//! type = "pause"         # the trace format's fault types and field names
//! node = "c1"
//! duration = "31s"
//!
//! [[fault]]
//! at = "0s"
//! type = "partition"
//! a = ["c1"]
//! b = "servers"          # a name, a list of names, or a group: servers, clients, all
//! duration = "110s"
//! mode = "reset"         # senders get an error at once (default: "drop", a black hole)
//!
//! [[fault]]             # aimed at an event instead of a time
//! after = { node = "servers", event = "grants", client = "c1", nth = 1, delay = "0s" }
//! type = "drop_replies"
//! clients = ["c1"]
//! servers = "servers"
//! duration = "5s"
//!
//! [client.c2]
//! ttl = "10s"
//! renew_every = "3s"
//! ```
//!
//! Names are those the timeline prints: `n1..nN` servers, `c1..cM` clients, `res` the
//! resource. Every error names the fault (its number, from 1, its type and the line it starts
//! on) or the client, and the field.

use std::collections::BTreeMap;

use serde_json::{Map, Value as Json};

use crate::fault::{Fault, FaultPlan, TimedFault};
use crate::history::LocalClock;
use crate::scenario::{ClientProfile, Cluster, NodeId, RenewRetry};
use crate::time::{fmt_nanos, parse_duration, Nanos};
use crate::trigger::{Trigger, TriggerEvent, TRIGGER_EVENTS};

/// One `[[fault]]` entry as read from a file: its fields and the line it starts on.
#[derive(Debug, Clone)]
pub struct RawFault {
    /// 1-based line of the entry in its file, when known.
    pub line: Option<usize>,
    /// Its fields.
    pub table: toml::Table,
}

/// Fields that name one node.
const NODE_FIELDS: &[&str] = &["node"];
/// Fields that name a set of nodes.
const SET_FIELDS: &[&str] = &["a", "b", "from", "to", "clients", "servers"];
/// Fields that hold a non-negative duration.
const DURATION_FIELDS: &[&str] = &["duration", "min", "max", "restart_after"];

/// Every fault type with its fields, for `locksim list` and `sims/README.md`:
/// (type, fields, one line of help).
pub const FAULT_TYPES: &[(&str, &str, &str)] = &[
    (
        "partition",
        "a, b, duration, mode",
        "no message crosses between node sets a and b",
    ),
    (
        "partition_oneway",
        "from, to, duration, mode",
        "messages from `from` to `to` are stopped; the reverse flows",
    ),
    (
        "isolate",
        "node, duration, mode",
        "cut one node off from every other",
    ),
    (
        "isolate_leader",
        "duration, mode",
        "cut off whichever server leads when it fires (replicated algorithms)",
    ),
    (
        "heal",
        "",
        "end every partition, loss, delay, duplication and reply-drop window now",
    ),
    (
        "loss",
        "from, to, rate_pct, duration",
        "drop each message from `from` to `to` with probability rate_pct/100",
    ),
    (
        "delay",
        "from, to, min, max, duration",
        "add a latency drawn from [min, max] to messages from `from` to `to`",
    ),
    (
        "duplicate",
        "from, to, rate_pct, duration",
        "deliver each message from `from` to `to` twice with probability rate_pct/100",
    ),
    (
        "drop_replies",
        "clients, servers, duration",
        "requests arrive and take effect; the replies are lost (over tcp they are retransmitted and arrive after the window, to a client that still waits for them)",
    ),
    (
        "pause",
        "node, duration, task",
        "stop the node (task = process), or only a client's renewal task or its work",
    ),
    (
        "crash",
        "node, restart_after",
        "kill the node (servers lose what they did not fsync, clients hold nothing); restart it after restart_after, or never",
    ),
    (
        "clock_step",
        "node, delta",
        "step the node's wall clock by delta (negative: backwards); the monotonic clock does not step",
    ),
    (
        "clock_drift",
        "node, ppm",
        "run the node's clocks at 1 + ppm/1e6 of true time from now on",
    ),
];

/// The names of a cluster's nodes, for error messages: `n1..n5, c1..c3, res`.
fn valid_names(c: &Cluster) -> String {
    let range = |p: &str, n: u32| match n {
        0 => None,
        1 => Some(format!("{p}1")),
        n => Some(format!("{p}1..{p}{n}")),
    };
    let mut v: Vec<String> = [range("n", c.servers), range("c", c.clients)]
        .into_iter()
        .flatten()
        .collect();
    v.push("res".into());
    v.push("or a group: servers, clients, all".into());
    v.join(", ")
}

/// Quotes a value for an error message on one line (newlines and quotes escaped).
pub fn quote(text: &str) -> String {
    format!("{text:?}")
}

fn node(c: &Cluster, field: &str, v: &toml::Value) -> Result<NodeId, String> {
    let name = v
        .as_str()
        .ok_or_else(|| format!("`{field}`: give a node name such as \"c1\" or \"n2\""))?;
    c.parse_name(name.trim()).ok_or_else(|| {
        format!(
            "`{field}`: {} is not a node of this cluster (nodes: {})",
            quote(name),
            valid_names(c)
        )
    })
}

fn node_set(c: &Cluster, field: &str, v: &toml::Value) -> Result<Vec<NodeId>, String> {
    let group = |name: &str| -> Option<Vec<NodeId>> {
        match name.trim() {
            "servers" => Some(c.server_ids().collect()),
            "clients" => Some(c.client_ids().collect()),
            "all" => Some((0..c.nodes()).collect()),
            _ => None,
        }
    };
    let one = |v: &toml::Value| -> Result<Vec<NodeId>, String> {
        match v.as_str().and_then(group) {
            Some(g) => Ok(g),
            None => node(c, field, v).map(|n| vec![n]),
        }
    };
    let mut ids: Vec<NodeId> = match v {
        toml::Value::Array(items) => {
            let mut ids = Vec::new();
            for item in items {
                ids.extend(one(item)?);
            }
            ids
        }
        other => one(other)?,
    };
    ids.sort_unstable();
    ids.dedup();
    if ids.is_empty() {
        return Err(format!("`{field}`: an empty set of nodes"));
    }
    Ok(ids)
}

/// A duration written with a unit (`"500ms"`, `"2s"`); a bare 0 is allowed.
fn duration_text(field: &str, v: &toml::Value) -> Result<i128, String> {
    match v {
        toml::Value::String(s) => parse_duration(s).map_err(|e| format!("`{field}`: {e}")),
        toml::Value::Integer(0) => Ok(0),
        toml::Value::Integer(i) => Err(format!(
            "`{field}`: {i} needs a unit, e.g. \"{i}ms\" or \"{i}s\""
        )),
        other => Err(format!(
            "`{field}`: {} is not a duration (write e.g. \"500ms\" or \"2s\")",
            other.type_str()
        )),
    }
}

fn non_negative(field: &str, v: &toml::Value) -> Result<Nanos, String> {
    let d = duration_text(field, v)?;
    if d < 0 {
        return Err(format!("`{field}`: {} is negative", fmt_nanos(d)));
    }
    Ok(d as Nanos)
}

fn integer(field: &str, v: &toml::Value) -> Result<i64, String> {
    v.as_integer()
        .ok_or_else(|| format!("`{field}`: {} is not an integer", v.type_str()))
}

/// Converts one `[[fault]]` table to a timed fault of `cluster`.
fn read_fault(c: &Cluster, t: &toml::Table) -> Result<TimedFault, String> {
    let (at, after) = match (t.get("at"), t.get("after")) {
        (Some(_), Some(_)) => {
            return Err(
                "both `at` and `after`: a fault strikes at a time or after an event, not both"
                    .into(),
            )
        }
        (Some(v), None) => (non_negative("at", v)?, None),
        (None, Some(v)) => (0, Some(read_trigger(c, v)?)),
        (None, None) => {
            return Err(
                "`at`: missing (the true time at which it strikes, e.g. \"2s\", or `after = { node = \"c1\", event = \"acquire ok\" }`)"
                    .into(),
            )
        }
    };
    let kind = match t.get("type") {
        Some(toml::Value::String(s)) => s.clone(),
        Some(other) => return Err(format!("`type`: {} is not a fault type", other.type_str())),
        None => {
            let types: Vec<&str> = FAULT_TYPES.iter().map(|f| f.0).collect();
            return Err(format!("`type`: missing (one of {})", types.join(", ")));
        }
    };
    if !FAULT_TYPES.iter().any(|f| f.0 == kind) {
        let types: Vec<&str> = FAULT_TYPES.iter().map(|f| f.0).collect();
        return Err(format!(
            "`type`: {} is not a fault type (valid: {})",
            quote(&kind),
            types.join(", ")
        ));
    }
    let mut obj = Map::new();
    obj.insert("type".into(), Json::String(kind.clone()));
    for (k, v) in t {
        let f = k.as_str();
        let json = if f == "at" || f == "type" || f == "after" {
            continue;
        } else if NODE_FIELDS.contains(&f) {
            Json::from(node(c, f, v)?)
        } else if SET_FIELDS.contains(&f) {
            Json::from(node_set(c, f, v)?)
        } else if DURATION_FIELDS.contains(&f) {
            Json::from(non_negative(f, v)?)
        } else if f == "delta" {
            Json::from(duration_text(f, v)? as i64)
        } else if f == "ppm" {
            Json::from(integer(f, v)?)
        } else if f == "rate_pct" {
            let p = integer(f, v)?;
            if !(0..=100).contains(&p) {
                return Err(format!("`rate_pct`: {p} is not from 0 to 100"));
            }
            Json::from(p)
        } else if f == "task" || f == "mode" {
            match v.as_str() {
                Some(s) => Json::String(s.to_string()),
                None => return Err(format!("`{f}`: {} is not a word", v.type_str())),
            }
        } else {
            // Not a field of any fault: serde names the fields this type has.
            Json::Null
        };
        obj.insert(k.clone(), json);
    }
    let fault: Fault = serde_json::from_value(Json::Object(obj)).map_err(|e| {
        let msg = e.to_string();
        // serde says "unknown field `x`, expected one of `a`, `b`" / "missing field `x`".
        match msg.split_once('`') {
            Some((_, rest)) if msg.starts_with("unknown variant") => {
                format!("`task` or `mode`: unknown value `{rest}")
            }
            _ => msg,
        }
    })?;
    fault.validate(c)?;
    Ok(TimedFault { at, fault, after })
}

/// The keys of an `after = { ... }` trigger, for errors and `locksim list`.
pub const TRIGGER_FIELDS: &str = "node, event, nth, delay, client";

/// Reads `after = { node = "c1", event = "acquire ok", nth = 1, delay = "50ms" }`.
fn read_trigger(c: &Cluster, v: &toml::Value) -> Result<Trigger, String> {
    let t = v.as_table().ok_or_else(|| {
        format!(
            "`after`: {} is not a table (write after = {{ node = \"c1\", event = \"acquire ok\" }})",
            v.type_str()
        )
    })?;
    if let Some(k) = t
        .keys()
        .find(|k| !TRIGGER_FIELDS.split(", ").any(|f| f == k.as_str()))
    {
        return Err(format!(
            "`after.{k}`: not a trigger field (valid: {TRIGGER_FIELDS})"
        ));
    }
    let nodes = match t.get("node") {
        Some(v) => node_set(c, "after.node", v)?,
        None => return Err("`after.node`: missing (the node whose event it waits for)".into()),
    };
    let event = match t.get("event") {
        Some(toml::Value::String(s)) => {
            TriggerEvent::parse(s).map_err(|e| format!("`after.event`: {e}"))?
        }
        Some(other) => {
            return Err(format!(
                "`after.event`: {} is not an event name",
                other.type_str()
            ))
        }
        None => return Err(format!("`after.event`: missing (one of: {TRIGGER_EVENTS})")),
    };
    let nth = match t.get("nth") {
        Some(v) => {
            let n = integer("after.nth", v)?;
            if n < 1 || n > u32::MAX as i64 {
                return Err(format!(
                    "`after.nth`: {n} is not a count from 1 (1 = the first such event)"
                ));
            }
            n as u32
        }
        None => 1,
    };
    let delay = match t.get("delay") {
        Some(v) => non_negative("after.delay", v)?,
        None => 0,
    };
    let client = match t.get("client") {
        Some(v) => Some(node(c, "after.client", v)?),
        None => None,
    };
    let trigger = Trigger {
        nodes,
        event,
        nth,
        delay,
        client,
    };
    trigger.validate(c)?;
    Ok(trigger)
}

/// Reads the `[[fault]]` entries of a file into a plan for `cluster`, whose run ends at true
/// time `end` (ns).
///
/// # Errors
/// The first bad entry: `fault #N (TYPE, line L): `field`: problem` — an unknown type, field
/// or node, a missing field, a negative duration, an `at` at or after the run's end.
pub fn read_faults(raw: &[RawFault], cluster: &Cluster, end: Nanos) -> Result<FaultPlan, String> {
    read_faults_named(raw, cluster, end).map(|(plan, _)| plan)
}

/// How errors name entry `i` (from 0) of `raw`: `fault #N (TYPE, line L)`.
pub fn fault_name(raw: &[RawFault], i: usize) -> String {
    let r = &raw[i];
    let kind = r.table.get("type").and_then(|t| t.as_str()).unwrap_or("?");
    let kind = quote(kind);
    let kind = kind.trim_matches('"');
    match r.line {
        Some(l) => format!("fault #{} ({kind}, line {l})", i + 1),
        None => format!("fault #{} ({kind})", i + 1),
    }
}

/// [`read_faults`], and for each fault of the plan (which is sorted by time, so not always
/// in the file's order) the name errors give it ([`fault_name`]).
///
/// # Errors
/// As [`read_faults`].
pub fn read_faults_named(
    raw: &[RawFault],
    cluster: &Cluster,
    end: Nanos,
) -> Result<(FaultPlan, Vec<String>), String> {
    let mut faults = Vec::with_capacity(raw.len());
    for (i, r) in raw.iter().enumerate() {
        let what = fault_name(raw, i);
        let tf = read_fault(cluster, &r.table).map_err(|e| format!("{what}: {e}"))?;
        if tf.at >= end {
            return Err(format!(
                "{what}: `at`: {} is at or after the run's end at {} (the workload's duration plus the longest TTL and one second)",
                fmt_nanos(tf.at as i128),
                fmt_nanos(end as i128)
            ));
        }
        faults.push((tf, what));
    }
    // The plan's own order: by time, stably (FaultPlan::new sorts the same way).
    faults.sort_by_key(|(tf, _)| tf.at);
    let (faults, names): (Vec<TimedFault>, Vec<String>) = faults.into_iter().unzip();
    Ok((FaultPlan::new(faults), names))
}

/// The per-client settings, with what each means, for `locksim list` and errors.
pub const CLIENT_FIELDS: &[(&str, &str)] = &[
    ("ttl", "lease length this client asks for"),
    ("renew_every", "renewal period (off: no renewal)"),
    (
        "renew_deadline",
        "stop acting when no renewal succeeded for this long (off: never)",
    ),
    (
        "renew_retry",
        "after a failed renewal: until-expiry | give-up",
    ),
    (
        "step_down",
        "how long the holder keeps acting after it learns the lock is lost",
    ),
    (
        "work_after_release",
        "how long the holder keeps acting (work, writes) after its own release: client-go's ReleaseOnCancel with work still draining (0: it stops first)",
    ),
    (
        "retry",
        "wait after a failed acquire: fixed | uniform | exponential | exponential-full | exponential-equal | exponential-decorrelated",
    ),
    (
        "clock_offset",
        "initial offset of the client's wall clock (e.g. \"-2s\")",
    ),
    ("clock_drift_ppm", "drift of the client's clocks, ppm"),
    (
        "client_clock",
        "clock the lock library measures validity with: wall | mono",
    ),
    ("work_min", "least local work before each write"),
    ("work_max", "most local work before each write"),
    ("writes_per_hold", "resource writes under each grant"),
    (
        "duration",
        "true time after which this client starts no new round (it stays up)",
    ),
];

/// A value given as text (`--set c2.ttl=10s`) or in a file.
fn text_of(v: &toml::Value) -> Result<String, String> {
    match v {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::Boolean(b) => Ok(b.to_string()),
        other => Err(format!(
            "{} is not a string, number or boolean",
            other.type_str()
        )),
    }
}

fn dur(key: &str, v: &str) -> Result<Nanos, String> {
    match parse_duration(v) {
        Ok(d) if d < 0 => Err(format!("`{key}`: {} must not be negative", quote(v))),
        Ok(d) => Ok(d as Nanos),
        Err(e) => Err(format!("`{key}`: {e}")),
    }
}

/// A duration that `off` (or `false`, `0`) turns off, as `Some(0)`.
fn dur_or_off(key: &str, v: &str) -> Result<Nanos, String> {
    match v.trim() {
        "off" | "false" | "no" | "0" => Ok(0),
        _ => match dur(key, v)? {
            0 => Err(format!("`{key}`: write \"off\" to turn it off")),
            d => Ok(d),
        },
    }
}

/// Sets one per-client field from text, as `--set c2.KEY=VALUE` and `[client.c2]` do.
///
/// # Errors
/// An unknown key (listing the valid ones) or a bad value.
pub fn set_client_field(p: &mut ClientProfile, key: &str, v: &str) -> Result<(), String> {
    match key {
        "ttl" => {
            p.ttl = Some(match dur(key, v)? {
                0 => return Err("`ttl` must be more than zero".into()),
                d => d,
            })
        }
        "renew_every" => p.renew_every = Some(dur_or_off(key, v)?),
        "renew_deadline" => p.renew_deadline = Some(dur_or_off(key, v)?),
        "renew_retry" => {
            p.renew_retry = Some(match v.trim() {
                "until-expiry" => RenewRetry::UntilExpiry,
                "give-up" => RenewRetry::GiveUp,
                _ => {
                    return Err(format!(
                        "`renew_retry`: {} is not valid (choose until-expiry or give-up)",
                        quote(v)
                    ))
                }
            })
        }
        "step_down" => p.step_down = Some(dur(key, v)?),
        "work_after_release" => p.work_after_release = Some(dur(key, v)?),
        "retry" => {
            p.retry = Some(
                crate::scenario::RetryPolicy::parse(v.trim())
                    .map_err(|e| format!("`retry`: {e}"))?,
            )
        }
        "clock_offset" => {
            p.clock_offset =
                Some(parse_duration(v).map_err(|e| format!("`clock_offset`: {e}"))? as i64)
        }
        "clock_drift_ppm" => {
            p.clock_drift_ppm = Some(
                v.trim()
                    .parse::<i64>()
                    .map_err(|_| format!("`clock_drift_ppm`: {} is not an integer", quote(v)))?,
            )
        }
        "client_clock" => {
            p.client_clock = Some(match v.trim() {
                "wall" => LocalClock::Wall,
                "mono" => LocalClock::Mono,
                _ => {
                    return Err(format!(
                        "`client_clock`: {} is not valid (choose wall or mono)",
                        quote(v)
                    ))
                }
            })
        }
        "work_min" => p.work_min = Some(dur(key, v)?),
        "duration" => p.duration = Some(dur(key, v)?),
        "work_max" => p.work_max = Some(dur(key, v)?),
        "writes_per_hold" | "writes" => {
            p.writes_per_hold = Some(
                v.trim()
                    .parse::<u32>()
                    .map_err(|_| format!("`{key}`: {} is not a non-negative integer", quote(v)))?,
            )
        }
        other => {
            let valid: Vec<&str> = CLIENT_FIELDS.iter().map(|f| f.0).collect();
            return Err(format!(
                "`{other}` is not a per-client setting (valid: {})",
                valid.join(", ")
            ));
        }
    }
    p.validate()
}

/// Reads `[client.cN]` tables (client name → its fields) for a cluster of `clients` clients.
///
/// # Errors
/// `client.cN: `field`: problem`, for an unknown client or field or a bad value.
pub fn read_clients(
    tables: &BTreeMap<String, toml::Table>,
    clients: u32,
) -> Result<BTreeMap<String, ClientProfile>, String> {
    let mut out = BTreeMap::new();
    for (name, t) in tables {
        let at = |e: String| format!("client.{name}: {e}");
        let mut p = ClientProfile::default();
        for (k, v) in t {
            let text = text_of(v).map_err(|e| at(format!("`{k}`: {e}")))?;
            set_client_field(&mut p, k, &text).map_err(at)?;
        }
        out.insert(name.clone(), p);
    }
    let w = crate::scenario::Workload {
        per_client: out.clone(),
        ..Default::default()
    };
    w.validate_clients(clients)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::{CutMode, PauseTask};

    fn raw(text: &str) -> Vec<RawFault> {
        #[derive(serde::Deserialize)]
        struct F {
            fault: Vec<toml::Table>,
        }
        let f: F = toml::from_str(text).unwrap();
        f.fault
            .into_iter()
            .map(|table| RawFault { line: None, table })
            .collect()
    }

    const C: Cluster = Cluster {
        servers: 3,
        clients: 2,
    };

    #[test]
    fn reads_names_units_and_groups() {
        let plan = read_faults(
            &raw(r#"
                [[fault]]
                at = "2s"
                type = "pause"
                node = "c1"
                duration = "31s"
                [[fault]]
                at = "0s"
                type = "partition"
                a = ["c1"]
                b = "servers"
                duration = "110s"
                mode = "reset"
                [[fault]]
                at = "1s"
                type = "pause"
                node = "c2"
                duration = "1s"
                task = "renewal"
            "#),
            &C,
            200_000_000_000,
        )
        .unwrap();
        assert_eq!(plan.len(), 3);
        assert_eq!(
            plan.faults[0].fault,
            Fault::Partition {
                a: vec![3],
                b: vec![0, 1, 2],
                duration: 110_000_000_000,
                mode: CutMode::Reset
            }
        );
        assert_eq!(plan.faults[1].at, 1_000_000_000);
        assert!(matches!(
            plan.faults[1].fault,
            Fault::Pause {
                node: 4,
                task: PauseTask::Renewal,
                ..
            }
        ));
    }

    #[test]
    fn errors_name_the_fault_and_the_field() {
        let err = |text: &str| read_faults(&raw(text), &C, 20_000_000_000).unwrap_err();
        let e = err(r#"
            [[fault]]
            at = "1s"
            type = "heal"
            [[fault]]
            at = "2s"
            type = "pause"
            node = "c9"
            duration = "1s"
        "#);
        assert!(
            e.starts_with("fault #2 (pause): `node`: \"c9\" is not a node"),
            "{e}"
        );
        let e = err("[[fault]]\nat = \"2s\"\ntype = \"pause\"\nnode = \"c1\"\nduraton = \"1s\"");
        assert!(e.contains("unknown field `duraton`"), "{e}");
        let e = err("[[fault]]\nat = \"2s\"\ntype = \"pause\"\nnode = \"c1\"\nduration = \"-1s\"");
        assert!(e.contains("`duration`: -1.000s is negative"), "{e}");
        let e = err("[[fault]]\nat = \"30s\"\ntype = \"heal\"");
        assert!(
            e.contains("`at`: 30.000s is at or after the run's end"),
            "{e}"
        );
        let e = err("[[fault]]\nat = \"1s\"\ntype = \"pause\"\nnode = \"n1\"\nduration = \"1s\"\ntask = \"renewal\"");
        assert!(e.contains("`task`: only a client"), "{e}");
        let e = err("[[fault]]\nat = \"1s\"\ntype = \"pauze\"");
        assert!(e.contains("`type`: \"pauze\" is not a fault type"), "{e}");
        let e = err("[[fault]]\nat = 5\ntype = \"heal\"");
        assert!(e.contains("`at`: 5 needs a unit"), "{e}");
        let e = err("[[fault]]\nat = \"1s\"\ntype = \"pause\"\nnode = \"c1\"\nduration = \"1s\"\ntask = \"gc\"");
        assert!(e.contains("unknown value `gc`"), "{e}");
        // One spelling per node: the timeline's.
        for name in ["c01", "c+1", "n0", "n01", "C1"] {
            let e = err(&format!(
                "[[fault]]\nat = \"1s\"\ntype = \"pause\"\nnode = {name:?}\nduration = \"1s\""
            ));
            assert!(e.contains("is not a node of this cluster"), "{name}: {e}");
        }
        let e = err("[[fault]]\nat = \"1s\"\ntype = \"partition\"\na = [\"c01\"]\nb = \"servers\"\nduration = \"1s\"");
        assert!(e.contains("\"c01\" is not a node"), "{e}");
        let e = err("[[fault]]\nat = \"94522879700260684295381835.9h\"\ntype = \"heal\"");
        assert!(e.contains("`at`") && e.contains("is too large"), "{e}");
    }

    #[test]
    fn triggers_read_and_their_errors_name_the_field() {
        let plan = read_faults(
            &raw(r#"
                [[fault]]
                after = { node = "c1", event = "acquire ok", nth = 2, delay = "50ms" }
                type = "pause"
                node = "c1"
                duration = "1s"
                [[fault]]
                after = { node = "servers", event = "grants", client = "c2" }
                type = "drop_replies"
                clients = ["c2"]
                servers = "servers"
                duration = "1s"
            "#),
            &C,
            20_000_000_000,
        )
        .unwrap();
        let t = plan.faults[0].after.as_ref().unwrap();
        assert_eq!(t.nodes, vec![3]);
        assert_eq!(
            t.event,
            TriggerEvent::Op(crate::OpF::Acquire, crate::Phase::Ok)
        );
        assert_eq!((t.nth, t.delay, plan.faults[0].at), (2, 50_000_000, 0));
        let t = plan.faults[1].after.as_ref().unwrap();
        assert_eq!(
            (t.nodes.clone(), t.nth, t.client),
            (vec![0, 1, 2], 1, Some(4))
        );
        assert_eq!(
            plan.faults[0].describe_when(&C),
            "50ms after c1's 2nd acquire ok"
        );
        let err = |after: &str| {
            read_faults(
                &raw(&format!(
                    "[[fault]]\n{after}\ntype = \"pause\"\nnode = \"c1\"\nduration = \"1s\""
                )),
                &C,
                20_000_000_000,
            )
            .unwrap_err()
        };
        let e = err(r#"after = { node = "c1", event = "acquire done" }"#);
        assert!(
            e.starts_with("fault #1 (pause): `after.event`: \"acquire done\" is not an event"),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
        let e = err(r#"after = { node = "c1", event = "acquire ok", nth = 0 }"#);
        assert!(e.contains("`after.nth`: 0 is not a count from 1"), "{e}");
        let e = err("at = \"1s\"\nafter = { node = \"c1\", event = \"acquire ok\" }");
        assert!(e.contains("both `at` and `after`"), "{e}");
        let e = err(r#"after = { node = "c1", event = "grants" }"#);
        assert!(e.contains("`after.node`: c1 never records `grants`"), "{e}");
        let e = err(r#"after = { node = "c1", event = "acquire ok", nht = 2 }"#);
        assert!(e.contains("`after.nht`: not a trigger field"), "{e}");
        let e = err(r#"after = { node = "c7", event = "acquire ok" }"#);
        assert!(e.contains("`after.node`: \"c7\" is not a node"), "{e}");
        let e = err(r#"after = { node = "c1", event = "acquire ok", client = "c2" }"#);
        assert!(e.contains("`after.client`: only a `grants` trigger"), "{e}");
        let e = err(r#"after = { event = "acquire ok" }"#);
        assert!(e.contains("`after.node`: missing"), "{e}");
        let e = err(r#"after = "c1""#);
        assert!(e.contains("`after`: string is not a table"), "{e}");
    }

    #[test]
    fn client_tables() {
        let mut t = BTreeMap::new();
        let table: toml::Table =
            toml::from_str("ttl = \"10s\"\nrenew_every = \"off\"\nclock_drift_ppm = -50000")
                .unwrap();
        t.insert("c2".to_string(), table);
        let p = read_clients(&t, 2).unwrap();
        assert_eq!(p["c2"].ttl, Some(10_000_000_000));
        assert_eq!(p["c2"].renew_every, Some(0));
        assert_eq!(p["c2"].clock_drift_ppm, Some(-50_000));
        let e = read_clients(&t, 1).unwrap_err();
        assert!(e.contains("client c2: there is no such client"), "{e}");
        let mut bad = BTreeMap::new();
        bad.insert(
            "c1".to_string(),
            toml::from_str::<toml::Table>("tll = \"1s\"").unwrap(),
        );
        let e = read_clients(&bad, 2).unwrap_err();
        assert!(
            e.starts_with("client.c1: `tll` is not a per-client setting"),
            "{e}"
        );
    }
}
