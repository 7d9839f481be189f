//! Shrinking a failing scenario to a small one that fails the same way — the same violated
//! property — by delta debugging (Zeller & Hildebrandt, "Simplifying and isolating
//! failure-inducing input", 2002) over the fault plan, then greedy binary searches on each
//! fault's magnitudes and time, then fewer clients, writes, keys and a shorter run.
//!
//! Every candidate is a full deterministic run, so the result depends only on the input
//! scenario. Each step keeps a candidate only if the property is still violated.

use locksim_core::scenario::NodeId;
use locksim_core::text::plural;
use locksim_core::time::MS;
use locksim_core::{FaultPlan, History, Property, Scenario, TimedFault, Verdict};

use std::sync::Arc;

use locksim_sim::LockAlgorithm;

use crate::outcome::check_scenario;
use crate::setup::Setup;

/// The smallest scenario found.
#[derive(Debug, Clone)]
pub struct Shrunk {
    /// The scenario.
    pub scenario: Scenario,
    /// Its verdict (violates the property).
    pub verdict: Verdict,
    /// Its history.
    pub history: History,
    /// Runs performed while shrinking.
    pub runs: u64,
}

/// Seeds tried for each candidate that removes a fault or a client.
const NEAR_SEEDS: u64 = 16;

struct Shrinker<'a> {
    algo: Arc<dyn LockAlgorithm>,
    property: Property,
    runs: u64,
    progress: &'a dyn Fn(&str),
}

impl Shrinker<'_> {
    /// Runs `s`; `Some` when it still violates the property.
    fn fails(&mut self, s: &Scenario) -> Option<(Verdict, History)> {
        if s.validate().is_err() {
            return None;
        }
        self.runs += 1;
        let out = check_scenario(s, self.algo.clone());
        let history = out.history?;
        out.verdict
            .violates(self.property)
            .then_some((out.verdict, history))
    }

    /// Like [`Shrinker::fails`], but also under a few neighbouring seeds: removing a fault or a
    /// client changes who wins each race, so a remaining fault aimed at the old winner may miss.
    /// The plan stays explicit; only latencies and the workload's draws change. Returns the
    /// candidate (with the seed that failed).
    fn fails_near(&mut self, cand: Scenario) -> Option<Scenario> {
        for k in 0..NEAR_SEEDS {
            let c = Scenario {
                seed: cand.seed.wrapping_add(k),
                ..cand.clone()
            };
            if self.fails(&c).is_some() {
                return Some(c);
            }
        }
        None
    }

    fn with_faults(s: &Scenario, faults: Vec<TimedFault>) -> Scenario {
        Scenario {
            faults: FaultPlan::new(faults),
            ..s.clone()
        }
    }

    /// ddmin over the fault list (each candidate under a few neighbouring seeds).
    fn faults(&mut self, s: &mut Scenario) {
        let mut faults = s.faults.faults.clone();
        let mut n = 2usize;
        while !faults.is_empty() {
            let chunk = faults.len().div_ceil(n);
            let mut reduced = false;
            for start in (0..faults.len()).step_by(chunk.max(1)) {
                let mut rest = faults.clone();
                rest.drain(start..(start + chunk).min(faults.len()));
                if let Some(c) = self.fails_near(Self::with_faults(s, rest.clone())) {
                    faults = rest;
                    s.seed = c.seed;
                    n = n.saturating_sub(1).max(2);
                    reduced = true;
                    (self.progress)(&format!(
                        "{} left ({})",
                        plural(faults.len() as u64, "fault"),
                        plural(self.runs, "run")
                    ));
                    break;
                }
            }
            if !reduced {
                if n >= faults.len() {
                    break;
                }
                n = (2 * n).min(faults.len());
            }
        }
        *s = Self::with_faults(s, faults);
    }

    /// Binary search for the smallest value in `[lo, hi]` for which `make(v)` still fails,
    /// assuming larger values fail when smaller ones do (a heuristic: the result always fails).
    fn smallest(
        &mut self,
        lo: u64,
        hi: u64,
        resolution: u64,
        make: impl Fn(u64) -> Scenario,
    ) -> Option<Scenario> {
        let (mut lo, mut hi) = (lo, hi);
        let mut best = None;
        while hi > lo && hi - lo > resolution {
            let mid = lo + (hi - lo) / 2;
            let cand = make(mid);
            if self.fails(&cand).is_some() {
                hi = mid;
                best = Some(cand);
            } else {
                lo = mid;
            }
        }
        best
    }

    /// Makes each fault smaller and earlier.
    fn magnitudes(&mut self, s: &mut Scenario) {
        for i in 0..s.faults.len() {
            for (name, v) in s.faults.faults[i].fault.magnitudes() {
                let resolution = if name == "rate_pct" || name == "ppm" {
                    1
                } else {
                    MS
                };
                let base = s.clone();
                if let Some(c) = self.smallest(0, v, resolution, |x| {
                    let mut c = base.clone();
                    c.faults.faults[i].fault = c.faults.faults[i].fault.with_magnitude(name, x);
                    c
                }) {
                    *s = c;
                }
            }
            // A triggered fault comes earlier by a shorter delay after its event; it keeps
            // its trigger (its `at` stays 0).
            if let Some(delay) = s.faults.faults[i].after.as_ref().map(|t| t.delay) {
                let base = s.clone();
                if let Some(c) = self.smallest(0, delay, MS, |x| {
                    let mut c = base.clone();
                    if let Some(t) = c.faults.faults[i].after.as_mut() {
                        t.delay = x;
                    }
                    c
                }) {
                    *s = c;
                }
                continue;
            }
            let base = s.clone();
            let at = s.faults.faults[i].at;
            if let Some(c) = self.smallest(0, at, MS, |x| {
                let mut c = base.clone();
                c.faults.faults[i].at = x;
                c.faults = FaultPlan::new(c.faults.faults);
                c
            }) {
                *s = c;
            }
        }
    }

    /// Removes client `c` (a node id), renumbering the nodes after it.
    fn without_client(s: &Scenario, c: NodeId) -> Scenario {
        let map = |n: NodeId| -> Option<NodeId> {
            match n.cmp(&c) {
                std::cmp::Ordering::Less => Some(n),
                std::cmp::Ordering::Equal => None,
                std::cmp::Ordering::Greater => Some(n - 1),
            }
        };
        let faults = s
            .faults
            .faults
            .iter()
            .filter_map(|tf| {
                // A trigger watching only the removed client goes with its fault: it is never
                // turned into a fixed time.
                let after = match &tf.after {
                    Some(t) => Some(t.map_nodes(map)?),
                    None => None,
                };
                tf.fault.map_nodes(map).map(|fault| TimedFault {
                    at: tf.at,
                    fault,
                    after,
                })
            })
            .collect();
        let mut out = Self::with_faults(s, faults);
        out.cluster.clients -= 1;
        // Per-client settings follow their clients: `cK` after the removed one becomes `cK-1`.
        let removed = c - s.cluster.servers + 1;
        out.workload.per_client = s
            .workload
            .per_client
            .iter()
            .filter_map(|(name, p)| {
                let i: u32 = name.strip_prefix('c')?.parse().ok()?;
                match i.cmp(&removed) {
                    std::cmp::Ordering::Less => Some((name.clone(), p.clone())),
                    std::cmp::Ordering::Equal => None,
                    std::cmp::Ordering::Greater => Some((format!("c{}", i - 1), p.clone())),
                }
            })
            .collect();
        out
    }

    fn workload(&mut self, s: &mut Scenario) {
        // A shorter run first: every later candidate is then cheaper to run.
        self.duration(s);
        // Fewer clients: first the last half of them at once (many-client runs), then one at
        // a time from the last.
        while s.cluster.clients > 3 {
            let keep = s.cluster.clients / 2;
            let mut cand = s.clone();
            while cand.cluster.clients > keep {
                cand = Self::without_client(&cand, cand.cluster.client_ids().end - 1);
            }
            match self.fails_near(cand) {
                Some(c) => {
                    (self.progress)(&format!(
                        "{} left ({} runs)",
                        locksim_core::text::plural(c.cluster.clients as u64, "client"),
                        self.runs
                    ));
                    *s = c;
                }
                None => break,
            }
        }
        let mut c = s.cluster.client_ids().end;
        while c > s.cluster.client_ids().start && s.cluster.clients > 1 {
            c -= 1;
            if let Some(cand) = self.fails_near(Self::without_client(s, c)) {
                (self.progress)(&format!(
                    "{} left ({} runs)",
                    locksim_core::text::plural(cand.cluster.clients as u64, "client"),
                    self.runs
                ));
                *s = cand;
            }
        }
        for keys in 1..s.workload.keys {
            let mut cand = s.clone();
            cand.workload.keys = keys;
            if self.fails(&cand).is_some() {
                *s = cand;
                break;
            }
        }
        for writes in 1..s.workload.writes_per_hold {
            let mut cand = s.clone();
            cand.workload.writes_per_hold = writes;
            if self.fails(&cand).is_some() {
                *s = cand;
                break;
            }
        }
        self.duration(s);
    }

    /// The shortest workload duration that still fails (10 ms resolution).
    fn duration(&mut self, s: &mut Scenario) {
        let base = s.clone();
        if let Some(c) = self.smallest(MS, s.workload.duration, 10 * MS, |d| {
            let mut c = base.clone();
            c.workload.duration = d;
            // Faults the shorter run would never reach go (a plan may not outlast its run).
            let end = c.end();
            c.faults.faults.retain(|f| f.at < end);
            c
        }) {
            *s = c;
        }
    }
}

/// Shrinks `start`, which must violate `property`, with a registered algorithm rebuilt from the
/// scenario, calling `progress` with a line now and then.
///
/// # Errors
/// When the algorithm cannot be rebuilt, or `start` does not violate `property`.
pub fn shrink(
    start: &Scenario,
    property: Property,
    progress: &dyn Fn(&str),
) -> Result<Shrunk, String> {
    shrink_with(start, Setup::from_scenario(start)?.algo, property, progress)
}

/// [`shrink`] with any algorithm (your own included); the shrinker never changes its settings
/// or its number of servers.
///
/// # Errors
/// When `start` does not violate `property`.
pub fn shrink_with(
    start: &Scenario,
    algo: Arc<dyn LockAlgorithm>,
    property: Property,
    progress: &dyn Fn(&str),
) -> Result<Shrunk, String> {
    let mut sh = Shrinker {
        algo,
        property,
        runs: 0,
        progress,
    };
    if sh.fails(start).is_none() {
        return Err(format!(
            "the scenario does not violate {property}: nothing to shrink"
        ));
    }
    let mut s = start.clone();
    // Rounds until a fixed point (each round only ever keeps failing candidates).
    for round in 1..=4 {
        let before = s.clone();
        sh.faults(&mut s);
        // Fewer clients before tighter magnitudes: a fault shrunk to the least that still works
        // at one seed rarely survives the reshuffle that removing a client brings.
        sh.workload(&mut s);
        sh.magnitudes(&mut s);
        (sh.progress)(&format!(
            "round {round}: {}, {}, {} per grant, {} of workload ({})",
            plural(s.faults.len() as u64, "fault"),
            plural(s.cluster.clients, "client"),
            plural(s.workload.writes_per_hold, "write"),
            locksim_core::time::fmt_nanos(s.workload.duration as i128),
            plural(sh.runs, "run")
        ));
        if s == before {
            break;
        }
    }
    let (verdict, history) = sh
        .fails(&s)
        .ok_or("internal error: the shrunk scenario stopped failing")?;
    Ok(Shrunk {
        scenario: s,
        verdict,
        history,
        runs: sh.runs,
    })
}

impl Shrunk {
    /// The shrunk run as a trace (with its events when `events`).
    pub fn trace(&self, events: bool) -> locksim_core::Trace {
        locksim_core::Trace::new(
            self.scenario.clone(),
            self.history.digest(),
            self.verdict.clone(),
            events.then(|| self.history.events.clone()),
        )
    }
}

/// The corpus file name of a trace kept for `property`: `<algorithm>-<s1|s2|s3>-<digest
/// prefix>.json`, so two different runs never share a name.
pub fn trace_file_name(trace: &locksim_core::Trace, property: Property) -> String {
    format!(
        "{}-{}-{}.json",
        trace.scenario.algorithm,
        property.to_string().to_lowercase(),
        &trace.digest[..8.min(trace.digest.len())]
    )
}

/// The property a shrink keeps: `kind` (`S1`…) when given, else the first that `scenario`'s
/// run violates.
///
/// # Errors
/// `kind` is no property; the run panicked, or violates nothing.
pub fn property_to_keep(scenario: &Scenario, kind: Option<&str>) -> Result<Property, String> {
    if let Some(k) = kind {
        return k.parse::<Property>();
    }
    let setup = Setup::from_scenario(scenario)?;
    let out = check_scenario(scenario, setup.algo);
    if let Some(e) = &out.error {
        // Not "violates nothing": it never ran (H6 item 7).
        return Err(format!(
            "seed {} failed to run (the simulation panicked: {e}): there is no history to shrink",
            scenario.seed
        ));
    }
    let first = out.verdict.kinds().first().copied();
    Ok(first.ok_or("the run violates nothing: nothing to shrink")?)
}

/// `shrink`'s text for `shrunk`, written as `trace` to `path` in `secs` seconds from a run of
/// seed `seed`: the file, the shrunk size and verdict, a note when the seed moved, each fault,
/// and the command (`program replay PATH`) that replays it. Ends with a newline.
pub fn text(
    shrunk: &Shrunk,
    path: &std::path::Path,
    seed: u64,
    secs: f64,
    program: &str,
) -> String {
    let s = &shrunk.scenario;
    let mut t = format!(
        "{}: {}, {}, {} in {secs:.1}s; verdict {}\n",
        path.display(),
        plural(s.faults.len() as u64, "fault"),
        plural(s.cluster.clients, "client"),
        plural(shrunk.runs, "run"),
        crate::replay::verdict_kinds(&shrunk.verdict)
    );
    if s.seed != seed {
        t += &format!(
            "  (now seed {}: removing faults or clients changes who wins each race, so the shrinker also tries neighbouring seeds)\n",
            s.seed
        );
    }
    for f in &s.faults.faults {
        t += &format!(
            "  {}: {}\n",
            f.describe_when(&s.cluster),
            f.fault.describe(&s.cluster)
        );
    }
    t + &format!(
        "replay it with: {program} replay {}\n",
        crate::testing::shell_quote(&path.to_string_lossy())
    )
}

/// `shrink --json`'s object: the trace `trace` written to `path`, keeping `property`, its
/// faults, and the shrink's cost (`secs` seconds, rounded to tenths).
pub fn json(
    shrunk: &Shrunk,
    trace: &locksim_core::Trace,
    path: &std::path::Path,
    property: Property,
    secs: f64,
) -> serde_json::Value {
    let faults: Vec<serde_json::Value> = shrunk
        .scenario
        .faults
        .faults
        .iter()
        .map(|f| {
            let mut v = serde_json::json!({
                "at_ns": f.at,
                "fault": f.fault.describe(&shrunk.scenario.cluster),
            });
            // A fault aimed at an event stays so: its `at_ns` (0) is no fixed time.
            if let Some(t) = &f.after {
                v["after"] = serde_json::to_value(t).expect("serializable");
                v["when"] = f.describe_when(&shrunk.scenario.cluster).into();
            }
            v
        })
        .collect();
    serde_json::json!({
    "trace": path.display().to_string(),
    "property": property,
    "seed": shrunk.scenario.seed,
    "clients": shrunk.scenario.cluster.clients,
    "faults": faults,
    "runs": shrunk.runs,
    "seconds": (secs * 10.0).round() / 10.0,
    "digest": trace.digest,
    "verdict": crate::replay::verdict_kinds(&shrunk.verdict),
    })
}

/// The scenario of the trace at `path`, to shrink.
///
/// # Errors
/// The trace cannot be read, or records a real run (which has no seed to shrink).
pub fn scenario_of_trace(path: &std::path::Path) -> Result<Scenario, String> {
    let trace = locksim_core::Trace::read(path).map_err(|e| e.to_string())?;
    if trace.is_own_client() {
        return Err(format!(
            "{}: it records a run of your own lock client, whose code is in your crate: it was \
             shrunk there (locksim_resp_sim::shrink) before it was written",
            path.display()
        ));
    }
    if let Some(what) = &trace.real {
        return Err(format!(
            "{}: it records a real run ({what}): there is no seed to shrink; shrink the scenario in the simulator with `locksim shrink FILE.toml --seed N`",
            path.display()
        ));
    }
    Ok(trace.scenario)
}
