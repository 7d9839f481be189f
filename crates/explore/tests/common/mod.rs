//! Helpers shared by the integration tests: scenarios with hand-written fault plans.

#![allow(dead_code)]

pub mod cases;

use locksim_core::time::parse_duration;
use locksim_core::{Fault, FaultPlan, Scenario, TimedFault, Verdict};
use locksim_explore::{check_scenario, parse_setting, Setup};

/// `key=value` settings as pairs.
pub fn pairs(settings: &[&str]) -> Vec<(String, String)> {
    settings.iter().map(|s| parse_setting(s).unwrap()).collect()
}

/// Builds a registered algorithm with `key=value` settings.
pub fn setup(algo: &str, settings: &[&str]) -> Setup {
    Setup::registered(algo, &pairs(settings)).unwrap()
}

/// Nanoseconds of a duration literal such as `2s`.
pub fn ns(d: &str) -> u64 {
    parse_duration(d).unwrap() as u64
}

/// A scenario of `setup` with seed 1 and exactly the faults `plan` (true time, fault).
pub fn scenario(setup: &Setup, plan: Vec<(&str, Fault)>) -> Scenario {
    let mut s = setup.scenario(1, &[]);
    s.faults = FaultPlan::new(
        plan.into_iter()
            .map(|(at, fault)| TimedFault {
                at: ns(at),
                fault,
                after: None,
            })
            .collect(),
    );
    s.faults.validate(&s.cluster).unwrap();
    s
}

/// Node id of `name` (`n1`, `c2`, `res`) in the scenario's cluster.
pub fn node(s: &Scenario, name: &str) -> u32 {
    s.cluster
        .parse_name(name)
        .unwrap_or_else(|| panic!("no node {name}"))
}

/// Runs the scenario and returns its verdict and how many grants each client got (indexed
/// by client number from 0), so a "safe" verdict can be told apart from "nobody got the lock".
pub fn verdict(s: &Scenario, setup: &Setup) -> (Verdict, Vec<usize>) {
    use locksim_core::history::{EventKind, OpF, Phase};
    let out = check_scenario(s, setup.algo.clone());
    assert!(out.error.is_none(), "simulation failed: {:?}", out.error);
    let h = out.history.unwrap();
    let grants = s
        .cluster
        .client_ids()
        .map(|c| {
            h.events
                .iter()
                .filter(|e| {
                    e.node == c
                        && matches!(
                            e.kind,
                            EventKind::Op {
                                f: OpF::Acquire,
                                phase: Phase::Ok,
                                ..
                            }
                        )
                })
                .count()
        })
        .collect();
    (out.verdict, grants)
}

/// The process's peak resident set (VmHWM in /proc/self/status), KiB: the memory tests run
/// alone in their binaries so that no other test moves it.
pub fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("Linux /proc");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("a VmHWM line")
}
