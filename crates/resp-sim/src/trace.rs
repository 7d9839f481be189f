//! A run of your own client as a locksim trace (docs/design.md §8): the scenario (seed,
//! servers, clients, length, faults, resource prefix, registered scripts), the digest of the
//! recorded history, the verdict, and the events themselves. `locksim render TRACE.json` draws
//! it from those events; it replays only from the crate that has the client's code, with
//! [`replay_trace`], which runs it again and compares the history event for event.
//!
//! In the trace's `scenario`, `algorithm` is [`OWN_CLIENT`] (Redis) or [`OWN_ETCD_CLIENT`]
//! (an etcd member); `cluster` is the servers and
//! clients; `workload.duration` is the run's length; `faults` is the fault plan; `config` holds
//! `resource_prefix`, `sentinel_down_after_ns`
//! in runs with Sentinel, and each registered
//! script as `script.N = "KIND:TEXT"` (KIND being [`ScriptKind::name`]).
//! `workload.check_validity` is false (nothing is known of what the client checks); the
//! workload's other fields are locksim's defaults and mean nothing here.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};

use locksim_core::fault::FaultPlan;
use locksim_core::trace::{OWN_CLIENT, OWN_ETCD_CLIENT};
use locksim_core::{Trace, Workload};

use crate::scripts::{ScriptKind, Scripts};
use crate::sim::{run, Client, Outcome, Scenario};

impl Scenario {
    /// This scenario as a locksim scenario, for a trace (the module doc says how it maps).
    pub fn to_core(&self) -> locksim_core::Scenario {
        let mut config = BTreeMap::new();
        config.insert("resource_prefix".to_string(), self.resource_prefix.clone());
        if let Some(d) = self.sentinel {
            config.insert("sentinel_down_after_ns".to_string(), d.to_string());
        }
        for (i, (text, kind)) in self.scripts.added().iter().enumerate() {
            config.insert(
                format!("script.{}", i + 1),
                format!("{}:{text}", kind.name()),
            );
        }
        locksim_core::Scenario {
            seed: self.seed,
            algorithm: match self.service {
                crate::sim::Service::Redis => OWN_CLIENT,
                crate::sim::Service::Etcd => OWN_ETCD_CLIENT,
            }
            .to_string(),
            config,
            cluster: self.cluster(),
            workload: Workload {
                duration: self.duration,
                // What the client checks is its own code's business; nothing says it checks.
                check_validity: false,
                ..Workload::default()
            },
            fault_kinds: Vec::new(),
            faults: FaultPlan::new(self.faults.clone()),
        }
    }

    /// The scenario a trace's [`Scenario::to_core`] wrote.
    ///
    /// # Errors
    /// When `s` is not of a run of your own client (its `algorithm` is neither [`OWN_CLIENT`]
    /// nor [`OWN_ETCD_CLIENT`]), a
    /// `config` entry is unknown or malformed, or the scenario is invalid here
    /// ([`Scenario::validate`]).
    pub fn from_core(s: &locksim_core::Scenario) -> Result<Scenario, String> {
        let service = match s.algorithm.as_str() {
            OWN_CLIENT => crate::sim::Service::Redis,
            OWN_ETCD_CLIENT => crate::sim::Service::Etcd,
            _ => {
                return Err(format!(
                    "it records the algorithm `{}`, not a run of your own client ({OWN_CLIENT} or \
                 {OWN_ETCD_CLIENT}): \
                 replay it with `locksim replay`",
                    s.algorithm
                ));
            }
        };
        let mut scripts = Scripts::default();
        let mut scenario = Scenario::new(s.seed);
        scenario.service = service;
        for (key, value) in &s.config {
            if key == "resource_prefix" {
                scenario.resource_prefix = value.clone();
            } else if key == "sentinel_down_after_ns" {
                let ns = value.parse::<u64>().map_err(|_| {
                    format!("config `{key}`: {value:?} is not a whole number of ns")
                })?;
                scenario.sentinel = Some(ns);
            } else if key.starts_with("script.") {
                let (kind, text) = value
                    .split_once(':')
                    .and_then(|(k, t)| Some((ScriptKind::from_name(k)?, t)))
                    .ok_or_else(|| {
                        format!(
                            "config `{key}`: expected \"compare-and-delete:TEXT\" or \
                             \"compare-and-pexpire:TEXT\""
                        )
                    })?;
                scripts.register(text, kind);
            } else {
                return Err(format!(
                    "config `{key}` means nothing to a run of your own client \
                     (valid: resource_prefix, sentinel_down_after_ns, script.N)"
                ));
            }
        }
        scenario.scripts = scripts;
        scenario.servers = s.cluster.servers;
        scenario.clients = s.cluster.clients;
        scenario.duration = s.workload.duration;
        scenario.faults = s.faults.faults.clone();
        scenario.validate()?;
        Ok(scenario)
    }
}

/// The trace of `outcome`, a run of `scenario`, events embedded.
pub fn trace_of(scenario: &Scenario, outcome: &Outcome) -> Trace {
    Trace::new(
        scenario.to_core(),
        outcome.digest(),
        outcome.verdict(),
        Some(outcome.history.events.clone()),
    )
}

/// Writes `trace` into `dir` as `NAME-DIGEST8.json` (`name` made file-safe) and returns the
/// path. The same trace written twice is one file; a different file under that name is never
/// replaced: the trace goes beside it, as `NAME-DIGEST8-2.json` (`-3`, …).
///
/// # Errors
/// When `dir` cannot be created or the file cannot be written ([`Trace::write_new`]).
pub fn write_trace(dir: &Path, name: &str, trace: &Trace) -> Result<PathBuf, String> {
    let mut safe = String::new();
    for c in name.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '_' {
            c.to_ascii_lowercase()
        } else {
            '-'
        };
        if c != '-' || !(safe.is_empty() || safe.ends_with('-')) {
            safe.push(c);
        }
    }
    let safe = safe.trim_end_matches('-');
    let safe = if safe.is_empty() { "trace" } else { safe };
    let digest = trace.digest.get(..8).unwrap_or(&trace.digest);
    trace
        .write_beside(dir, &format!("{safe}-{digest}.json"), "the trace")
        .map(|w| w.path)
}

/// Where two event logs first differ: `event #i: first at T on node N: KIND; then …` (the
/// recorded log's event, then the new one's), or `None` when they are equal.
pub(crate) fn first_difference(
    recorded: &[locksim_core::history::Event],
    now: &[locksim_core::history::Event],
) -> Option<String> {
    let i = (0..recorded.len().max(now.len())).find(|&i| recorded.get(i) != now.get(i))?;
    // The time in ns as well: two runs can differ by nanoseconds that a rounded time hides.
    let show = |e: Option<&locksim_core::history::Event>| match e {
        Some(e) => format!(
            "at {} ({} ns) on node {}: {:?}",
            locksim_core::time::fmt_nanos(e.time as i128),
            e.time,
            e.node,
            e.kind
        ),
        None => "nothing (the log ended)".to_string(),
    };
    Some(format!(
        "event #{i}: first {}; then {}",
        show(recorded.get(i)),
        show(now.get(i))
    ))
}

/// Reads the trace at `path`, runs its scenario again with `client` as every client's
/// program, and checks that the history is the one recorded, event for event, and that the
/// verdict is the same. Returns the new run.
///
/// # Errors
/// When the trace cannot be read or is not of a run of your own client, or the run differs:
/// the first event that differs, recorded and replayed (the client's code, or locksim, changed
/// since it was written; or the code is not deterministic).
pub fn replay_trace<F, Fut>(path: impl AsRef<Path>, client: F) -> Result<Outcome, String>
where
    F: Fn(Client) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let path = path.as_ref();
    let trace = Trace::read(path).map_err(|e| e.to_string())?;
    let scenario =
        Scenario::from_core(&trace.scenario).map_err(|e| format!("{}: {e}", path.display()))?;
    let outcome = run(&scenario, client);
    if let Some(recorded) = &trace.events {
        if let Some(d) = first_difference(recorded, &outcome.history.events) {
            return Err(format!("{}: the replay differs at {d}", path.display()));
        }
    }
    if outcome.digest() != trace.digest {
        return Err(format!(
            "{}: the replay's digest is {}, the trace's {}",
            path.display(),
            outcome.digest(),
            trace.digest
        ));
    }
    if outcome.verdict() != trace.verdict {
        return Err(format!(
            "{}: the same history, but another verdict (locksim's checkers changed since it \
             was written)",
            path.display()
        ));
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use locksim_core::Fault;

    #[test]
    fn a_scenario_survives_the_trip_through_a_trace() {
        let s = Scenario::new(42)
            .sentinel(2_000)
            .servers(3)
            .clients(4)
            .duration_ms(1_500)
            .resource_prefix("res/")
            .script("return 7", ScriptKind::CompareAndDelete)
            .fault(
                100,
                Fault::Crash {
                    node: 1,
                    restart_after: Some(5_000_000),
                },
            );
        let text = Trace::new(s.to_core(), "0".repeat(32), Default::default(), None).to_json();
        let back = Trace::parse(Path::new("t.json"), &text).expect("reads back");
        assert!(back.is_own_client());
        let r = Scenario::from_core(&back.scenario).expect("a scenario of ours");
        assert_eq!(
            (r.seed, r.servers, r.clients, r.duration, &r.resource_prefix),
            (42, 3, 4, 1_500_000_000, &"res/".to_string())
        );
        assert_eq!(r.faults, s.faults);
        assert_eq!(r.sentinel, Some(2_000_000_000));
        assert_eq!(
            r.scripts.recognise(b"return 7"),
            Some(ScriptKind::CompareAndDelete)
        );
        let mut other = back.scenario.clone();
        other.algorithm = "central".into();
        assert!(Scenario::from_core(&other)
            .unwrap_err()
            .contains("locksim replay"));
        other.algorithm = OWN_CLIENT.into();
        other.config.insert("colour".into(), "red".into());
        assert!(Scenario::from_core(&other).unwrap_err().contains("colour"));
    }
}
