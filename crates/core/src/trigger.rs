//! Faults aimed at events: a [`Trigger`] makes a `[[fault]]` strike when the `nth` event of
//! a kind is recorded on a node (plus a `delay`), instead of at a fixed true time (issue #25,
//! item 1). The event names are the timeline's: `acquire ok`, `release info`, `grants`, ...
//!
//! A trigger's firing time is a function of the history alone ([`Trigger::resolve`]): the true
//! time of the `nth` matching event plus `delay`. The nemesis fires it at exactly that time,
//! so a trace (which stores the trigger in its plan) replays the same run, and the checks here
//! can say from a history whether a triggered fault fired and, if not, why.

use serde::{Deserialize, Serialize};

use crate::fault::{FaultPlan, NodeSet};
use crate::history::{EventKind, History, OpF, Phase};
use crate::scenario::{Cluster, NodeId, Role};
use crate::time::{fmt_nanos, Nanos};

/// The kinds of recorded event a trigger can wait for, named as the timeline prints them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum TriggerEvent {
    /// A phase of a client operation (`acquire ok`, `write invoke`, `extend info`, ...).
    Op(OpF, Phase),
    /// A lock server granted the lock (`grants`), optionally to one client.
    Grants,
    /// A client stopped acting under a grant before releasing it (`gives up`).
    GivesUp,
    /// The resource accepted a write (`accepts write`).
    AcceptsWrite,
    /// The resource rejected a write's fencing token (`rejects write`).
    RejectsWrite,
    /// A server began to lead (`leader elected`): a Raft leader's new term, a Redis replica
    /// promoted to primary.
    LeaderElected,
    /// A replica took the leader's replication stream further (`replicates`).
    Replicates,
}

const OPS: [(OpF, &str); 4] = [
    (OpF::Acquire, "acquire"),
    (OpF::Release, "release"),
    (OpF::Extend, "extend"),
    (OpF::Write, "write"),
];
const PHASES: [(Phase, &str); 4] = [
    (Phase::Invoke, "invoke"),
    (Phase::Ok, "ok"),
    (Phase::Fail, "fail"),
    (Phase::Info, "info"),
];

/// The event names a trigger accepts, for `locksim list`, `sims/README.md` and errors.
pub const TRIGGER_EVENTS: &str = "acquire|release|extend|write invoke|ok|fail|info (a client's \
operation; `renew` is a synonym of `extend`), grants (a server's grant decision; `client` \
narrows it to the grants to one client), gives up (a client stops acting under a grant), accepts write, rejects write (the resource `res` took a write, or refused its fencing token), \
leader elected (a server began to lead: raft-lease, redis-failover, zookeeper), replicates (a replica \
took the leader's replication stream further: raft-lease, redis-failover)";

impl TriggerEvent {
    /// The name, as the timeline prints it: `acquire ok`, `grants`, `gives up`.
    pub fn name(self) -> String {
        match self {
            TriggerEvent::Op(f, p) => {
                let f = OPS.iter().find(|o| o.0 == f).map_or("?", |o| o.1);
                let p = PHASES.iter().find(|o| o.0 == p).map_or("?", |o| o.1);
                format!("{f} {p}")
            }
            TriggerEvent::Grants => "grants".into(),
            TriggerEvent::GivesUp => "gives up".into(),
            TriggerEvent::AcceptsWrite => "accepts write".into(),
            TriggerEvent::RejectsWrite => "rejects write".into(),
            TriggerEvent::LeaderElected => "leader elected".into(),
            TriggerEvent::Replicates => "replicates".into(),
        }
    }

    /// Parses a name (words separated by blanks; `renew` for `extend`).
    ///
    /// # Errors
    /// A one-line message listing the names supported.
    pub fn parse(text: &str) -> Result<TriggerEvent, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let found = match words.as_slice() {
            ["grants"] => Some(TriggerEvent::Grants),
            ["gives", "up"] => Some(TriggerEvent::GivesUp),
            ["accepts", "write"] => Some(TriggerEvent::AcceptsWrite),
            ["rejects", "write"] => Some(TriggerEvent::RejectsWrite),
            ["leader", "elected"] => Some(TriggerEvent::LeaderElected),
            ["replicates"] => Some(TriggerEvent::Replicates),
            [f, p] => {
                let f = if *f == "renew" { "extend" } else { f };
                let f = OPS.iter().find(|o| o.1 == f).map(|o| o.0);
                let p = PHASES.iter().find(|o| o.1 == *p).map(|o| o.0);
                f.zip(p).map(|(f, p)| TriggerEvent::Op(f, p))
            }
            _ => None,
        };
        found.ok_or_else(|| {
            format!(
                "{} is not an event a trigger supports (supported: {TRIGGER_EVENTS})",
                crate::scenario_file::quote(text)
            )
        })
    }

    /// `true` for the service's own events (`leader elected`, `replicates`): a run records
    /// them only when a trigger of its plan waits for one
    /// ([`crate::history::EventKind::Leader`]).
    pub fn is_service(self) -> bool {
        matches!(self, TriggerEvent::LeaderElected | TriggerEvent::Replicates)
    }

    /// The role of the nodes that record this event.
    pub fn role(self) -> Role {
        match self {
            TriggerEvent::Grants | TriggerEvent::LeaderElected | TriggerEvent::Replicates => {
                Role::Server
            }
            TriggerEvent::AcceptsWrite | TriggerEvent::RejectsWrite => Role::Resource,
            _ => Role::Client,
        }
    }
}

impl From<TriggerEvent> for String {
    fn from(e: TriggerEvent) -> String {
        e.name()
    }
}

impl TryFrom<String> for TriggerEvent {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        TriggerEvent::parse(&s)
    }
}

/// What a recorded event is, as far as triggers care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Occurrence {
    /// Its kind.
    pub event: TriggerEvent,
    /// For a grant: the client granted.
    pub client: Option<NodeId>,
    /// For a grant with a fencing token: the key and the token, which name the grant (a
    /// server that records the same grant again, e.g. a waiter answered twice, made one).
    pub grant: Option<(u32, u64)>,
}

/// What a recorded event is, as far as triggers care ([`Occurrence`]); `None` for events no
/// trigger waits for.
pub fn occurrence(kind: &EventKind) -> Option<Occurrence> {
    let (event, client, grant) = match kind {
        EventKind::Op { f, phase, .. } => (TriggerEvent::Op(*f, *phase), None, None),
        EventKind::Grant { key, client, token } => (
            TriggerEvent::Grants,
            Some(*client),
            token.map(|t| (*key, t)),
        ),
        EventKind::Lost { .. } => (TriggerEvent::GivesUp, None, None),
        EventKind::WriteAccepted { .. } => (TriggerEvent::AcceptsWrite, None, None),
        EventKind::WriteRejected { .. } => (TriggerEvent::RejectsWrite, None, None),
        EventKind::Leader { .. } => (TriggerEvent::LeaderElected, None, None),
        EventKind::Replicated { .. } => (TriggerEvent::Replicates, None, None),
        _ => return None,
    };
    Some(Occurrence {
        event,
        client,
        grant,
    })
}

/// A trigger's count of matching events so far ([`Trigger::count`]).
#[derive(Debug, Clone, Default)]
pub struct Count {
    /// Matching events counted.
    pub n: u32,
    /// The grants counted, as (server, key, client, token): one recorded again counts once.
    grants: std::collections::BTreeSet<(NodeId, u32, NodeId, u64)>,
}

fn one() -> u32 {
    1
}

fn is_zero(n: &Nanos) -> bool {
    *n == 0
}

/// `after = { node = "c1", event = "acquire ok", nth = 1, delay = "50ms" }`: the fault
/// strikes `delay` ns of true time after the `nth` (from 1) event `event` recorded on any node
/// of `nodes` (and, for `grants`, granted to `client` when given).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trigger {
    /// The nodes whose events count (sorted ids).
    pub nodes: NodeSet,
    /// The event waited for.
    pub event: TriggerEvent,
    /// Which matching event fires it, from 1.
    #[serde(default = "one")]
    pub nth: u32,
    /// True time after the event at which the fault strikes, ns.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay: Nanos,
    /// For `grants`: only grants to this client count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<NodeId>,
}

/// English ordinal: 1st, 2nd, 3rd, 4th, 11th, 21st.
pub fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

impl Trigger {
    /// `true` when an event `ev` (see [`occurrence`]) recorded on `node` counts toward it.
    pub fn matches(&self, node: NodeId, ev: TriggerEvent, client: Option<NodeId>) -> bool {
        ev == self.event
            && self.nodes.binary_search(&node).is_ok()
            && (self.client.is_none() || self.client == client)
    }

    /// Counts occurrence `o` recorded on `node` in `count` when it matches and is not a grant
    /// the same server recorded before (same key, client and fencing token); `true` when it
    /// counted. Grants without a token (a Redlock master's vote) always count: each master's
    /// grant is its own event.
    pub fn count(&self, count: &mut Count, node: NodeId, o: &Occurrence) -> bool {
        if !self.matches(node, o.event, o.client) {
            return false;
        }
        if let (Some((key, token)), Some(client)) = (o.grant, o.client) {
            if !count.grants.insert((node, key, client, token)) {
                return false;
            }
        }
        count.n += 1;
        true
    }

    /// The events of `history` that count toward it, in order.
    fn counted<'h>(
        &'h self,
        history: &'h History,
    ) -> impl Iterator<Item = &'h crate::history::Event> + 'h {
        let mut count = Count::default();
        history.events.iter().filter(move |e| {
            occurrence(&e.kind).is_some_and(|o| self.count(&mut count, e.node, &o))
        })
    }

    /// Who it watches, by name: `c1`, `{n1,n2,n3}`, with ` to c1` for a client filter.
    fn who(&self, cluster: &Cluster) -> String {
        let names: Vec<String> = self.nodes.iter().map(|&n| cluster.name(n)).collect();
        let mut who = if names.len() == 1 {
            names[0].clone()
        } else {
            format!("{{{}}}", names.join(","))
        };
        if let Some(c) = self.client {
            who += &format!(" (to {})", cluster.name(c));
        }
        who
    }

    /// A description: `50ms after c1's 1st acquire ok`.
    pub fn describe(&self, cluster: &Cluster) -> String {
        let delay = if self.delay == 0 {
            "at".to_string()
        } else {
            format!("{} after", fmt_nanos(self.delay as i128))
        };
        format!(
            "{delay} {}'s {} {}",
            self.who(cluster),
            ordinal(self.nth),
            self.event.name()
        )
    }

    /// The true time at which it fires in `history`: that of its `nth` matching event plus
    /// `delay`, or `None` when there were fewer matching events or that time is at or after
    /// the run's end. With no delay the fault event is recorded at that very time, right after
    /// its event; with a delay, as a timed fault's `at`, at it or a few ns later (madsim's
    /// scheduler advances true time a little per step).
    pub fn resolve(&self, history: &History) -> Option<Nanos> {
        let ev = self.counted(history).nth(self.nth as usize - 1)?;
        let at = ev.time.saturating_add(self.delay);
        (at < history.end).then_some(at)
    }

    /// Why it did not fire in `history` (`c1 had no 2nd acquire ok`), or `None` when it fired.
    pub fn never_fired(&self, history: &History, cluster: &Cluster) -> Option<String> {
        if self.resolve(history).is_some() {
            return None;
        }
        let seen = self.counted(history).count();
        Some(if seen < self.nth as usize {
            format!(
                "{} had no {} {} (only {seen})",
                self.who(cluster),
                ordinal(self.nth),
                self.event.name()
            )
        } else {
            format!(
                "{}'s {} {} came too late: {} after it is past the run's end",
                self.who(cluster),
                ordinal(self.nth),
                self.event.name(),
                fmt_nanos(self.delay as i128)
            )
        })
    }

    /// Checks nodes, `nth`, `delay` and the client filter against the cluster.
    ///
    /// # Errors
    /// A message naming the field (`after.node`, `after.nth`, ...).
    pub fn validate(&self, cluster: &Cluster) -> Result<(), String> {
        if self.nth == 0 {
            return Err("`after.nth`: 0 — the first event is nth = 1".into());
        }
        if self.delay > crate::fault::MAX_FAULT_NS {
            return Err("`after.delay`: longer than a day".into());
        }
        if self.nodes.is_empty() {
            return Err("`after.node`: an empty set of nodes".into());
        }
        let role = self.event.role();
        for &n in &self.nodes {
            if n >= cluster.nodes() {
                return Err(format!(
                    "`after.node`: node {n} is not in a cluster of {} nodes",
                    cluster.nodes()
                ));
            }
            if cluster.role(n) != role {
                return Err(format!(
                    "`after.node`: {} never records `{}` ({} record it)",
                    cluster.name(n),
                    self.event.name(),
                    match role {
                        Role::Server => "servers",
                        Role::Resource => "only the resource res would",
                        Role::Client => "clients",
                    }
                ));
            }
        }
        match self.client {
            Some(_) if self.event != TriggerEvent::Grants => {
                Err("`after.client`: only a `grants` trigger names a client".into())
            }
            Some(c) if c >= cluster.nodes() => Err(format!(
                "`after.client`: node {c} is not in a cluster of {} nodes",
                cluster.nodes()
            )),
            Some(c) if cluster.role(c) != Role::Client => Err(format!(
                "`after.client`: {} is not a client",
                cluster.name(c)
            )),
            _ => Ok(()),
        }
    }

    /// The same trigger with node ids passed through `map` (the shrinker removing a client);
    /// `None` when a watched node set empties or the client filter's client goes.
    pub fn map_nodes(&self, map: impl Fn(NodeId) -> Option<NodeId>) -> Option<Trigger> {
        let nodes: NodeSet = self.nodes.iter().filter_map(|&n| map(n)).collect();
        if nodes.is_empty() {
            return None;
        }
        let client = match self.client {
            Some(c) => Some(map(c)?),
            None => None,
        };
        Some(Trigger {
            nodes,
            client,
            ..self.clone()
        })
    }
}

/// The plan's triggered faults that never fired in `history`, one line each:
/// `fault #2 (pause c1 for 1s, at c1's 2nd acquire ok) never fired: c1 had no 2nd acquire ok
/// (only 1)`, numbered by their place in the plan, from 1.
pub fn never_fired(plan: &FaultPlan, history: &History, cluster: &Cluster) -> Vec<String> {
    plan.faults
        .iter()
        .enumerate()
        .filter_map(|(i, tf)| {
            let why = tf.after.as_ref()?.never_fired(history, cluster)?;
            Some(format!(
                "fault #{} ({}, {}) never fired: {why}",
                i + 1,
                tf.fault.describe(cluster),
                tf.describe_when(cluster)
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_bad_names_list_the_supported() {
        for f in OPS {
            for p in PHASES {
                let e = TriggerEvent::Op(f.0, p.0);
                assert_eq!(TriggerEvent::parse(&e.name()), Ok(e));
            }
        }
        for e in [
            TriggerEvent::Grants,
            TriggerEvent::GivesUp,
            TriggerEvent::AcceptsWrite,
            TriggerEvent::RejectsWrite,
            TriggerEvent::LeaderElected,
            TriggerEvent::Replicates,
        ] {
            assert_eq!(TriggerEvent::parse(&e.name()), Ok(e));
        }
        assert!(TriggerEvent::parse("leader  elected").unwrap().is_service());
        assert!(!TriggerEvent::Grants.is_service());
        assert_eq!(
            TriggerEvent::parse("renew  ok"),
            Ok(TriggerEvent::Op(OpF::Extend, Phase::Ok))
        );
        assert_eq!(TriggerEvent::parse("grants"), Ok(TriggerEvent::Grants));
        assert_eq!(TriggerEvent::parse("gives up"), Ok(TriggerEvent::GivesUp));
        for e in [TriggerEvent::AcceptsWrite, TriggerEvent::RejectsWrite] {
            assert_eq!(TriggerEvent::parse(&e.name()), Ok(e));
        }
        let e = TriggerEvent::parse("leader chosen").unwrap_err();
        assert!(e.starts_with("\"leader chosen\" is not an event"), "{e}");
        assert!(e.contains("grants") && !e.contains('\n'), "{e}");
        assert_eq!(ordinal(2), "2nd");
        assert_eq!(ordinal(12), "12th");
        assert_eq!(ordinal(21), "21st");
    }

    /// A server that records the same grant twice (raft-lease answering a waiter twice, same
    /// key, client and revision) made one grant: `nth = 2` is the next grant, not the copy.
    /// A Redlock master's grants carry no token and each counts.
    #[test]
    fn a_grant_recorded_again_counts_once() {
        let ev = |id: u64, time: Nanos, node: NodeId, token: Option<u64>| crate::history::Event {
            id,
            time,
            node,
            wall: time as i64,
            mono: time,
            kind: EventKind::Grant {
                key: 0,
                client: 3,
                token,
            },
        };
        let h = |token: Option<u64>, second: Option<u64>| History {
            events: vec![
                ev(0, 10, 0, token),
                ev(1, 20, 0, token),
                ev(2, 30, 0, second),
            ],
            end: 1000,
            ..History::default()
        };
        let t = Trigger {
            nodes: vec![0, 1, 2],
            event: TriggerEvent::Grants,
            nth: 2,
            delay: 0,
            client: Some(3),
        };
        assert_eq!(t.resolve(&h(Some(6), Some(7))), Some(30));
        assert_eq!(t.resolve(&h(None, None)), Some(20));
        let three = Trigger {
            nth: 3,
            ..t.clone()
        };
        assert_eq!(three.resolve(&h(Some(6), Some(7))), None);
    }

    /// A trace or record edited by hand may name any node id: validation says so in one line
    /// instead of panicking while it names the node (a breaker's find: `after.client = 7` in a
    /// trace of 4 nodes made replay, render, export-tla and merge --report exit 101).
    #[test]
    fn a_client_filter_outside_the_cluster_is_an_error_not_a_panic() {
        let cluster = Cluster {
            servers: 1,
            clients: 2,
        };
        let t = |client| Trigger {
            nodes: vec![0],
            event: TriggerEvent::Grants,
            nth: 1,
            delay: 0,
            client: Some(client),
        };
        let e = t(7).validate(&cluster).unwrap_err();
        assert_eq!(
            e, "`after.client`: node 7 is not in a cluster of 4 nodes",
            "{e}"
        );
        assert!(t(0)
            .validate(&cluster)
            .unwrap_err()
            .contains("n1 is not a client"));
        assert_eq!(t(1).validate(&cluster), Ok(()));
    }
}
