//! Replaying traces: run the trace's scenario again and compare the event digest and the
//! verdict with what the trace recorded.

use std::sync::Arc;

use locksim_core::{Event, Trace, Verdict};
use locksim_sim::LockAlgorithm;

use crate::outcome::{check_scenario, SeedOutcome};
use crate::setup::Setup;

/// What a replay found.
#[derive(Debug, Clone)]
pub struct Replay {
    /// The new run.
    pub outcome: SeedOutcome,
    /// Its digest.
    pub digest: String,
    /// Digest equal to the trace's (and the events, when the trace embeds them).
    pub digest_matches: bool,
    /// Verdict equal to the trace's (every violation, summary and witness).
    pub verdict_matches: bool,
    /// When the digests differ and the trace embeds its events: the first event that differs,
    /// described as "event #N: recorded … / replayed …".
    pub first_difference: Option<String>,
}

impl Replay {
    /// `true` when the run reproduced the trace exactly.
    pub fn ok(&self) -> bool {
        self.digest_matches && self.verdict_matches
    }
}

fn first_difference(recorded: &[Event], replayed: &[Event]) -> String {
    let show = |e: Option<&Event>| match e {
        Some(e) => serde_json::to_string(e).expect("events serialize"),
        None => "(no event)".to_string(),
    };
    let n = recorded.len().max(replayed.len());
    (0..n)
        .find(|&i| recorded.get(i) != replayed.get(i))
        .map(|i| {
            format!(
                "event #{i}: recorded {} / replayed {}",
                show(recorded.get(i)),
                show(replayed.get(i))
            )
        })
        .unwrap_or_else(|| {
            "the events are equal but the digests differ (the run's end time?)".to_string()
        })
}

/// A trace of a real run (`locksim real`) records processes, not a seed: it cannot be replayed.
/// Nor can one of a user's own client here: its code is in the user's crate.
fn refuse_real(trace: &Trace) -> Result<(), String> {
    if trace.is_own_client() {
        return Err(
            "it records a run of your own lock client (locksim-resp-sim), whose code is in your \
             crate: replay it there with `locksim_resp_sim::replay_trace(\"TRACE.json\", your_client)`; \
             `locksim render TRACE.json` draws it from its events"
                .to_string(),
        );
    }
    match &trace.real {
        Some(what) => Err(format!(
            "it records a real run ({what}): real runs cannot be replayed, only re-run with `locksim real`"
        )),
        None => Ok(()),
    }
}

/// Replays `trace` with the registered algorithm its scenario names.
///
/// # Errors
/// When the trace records a real run, its algorithm cannot be rebuilt (an algorithm of your
/// own: the error says how to replay it with [`replay_with`] from your crate), or the
/// simulation fails.
pub fn replay(trace: &Trace) -> Result<Replay, String> {
    refuse_real(trace)?;
    let name = &trace.scenario.algorithm;
    if locksim_algos::knobs(name).is_none() {
        return Err(format!(
            "`{name}` is not one of locksim's algorithms ({}); a trace of your own algorithm \
             replays from your crate, which has the algorithm: with your own binary \
             (`locksim_cli::main_with(registrations)`: `my-locksim replay TRACE.json`), \
             `locksim_explore::testing::replay(\"TRACE.json\", Arc::new(MyLock))`, or by re-running \
             the test that wrote it with LOCKSIM_REPLAY=TRACE.json (its failure message prints \
             the whole command)",
            locksim_algos::names()
        ));
    }
    let setup = Setup::from_scenario(&trace.scenario)?;
    replay_with(trace, setup.algo)
}

/// Replays `trace` with `algo`, e.g. your own algorithm (the registered ones replay with
/// [`replay`]): runs the trace's scenario again and compares the event digest, the embedded
/// events (if any) and the verdict.
///
/// # Errors
/// When `algo` is not the algorithm the scenario names (its [`LockAlgorithm::name`] differs)
/// or runs another number of servers than the scenario's cluster has, or the simulation fails.
pub fn replay_with(trace: &Trace, algo: Arc<dyn LockAlgorithm>) -> Result<Replay, String> {
    refuse_real(trace)?;
    if algo.name() != trace.scenario.algorithm {
        return Err(format!(
            "the trace is a run of `{}`, not of `{}`",
            trace.scenario.algorithm,
            algo.name()
        ));
    }
    if algo.servers() != trace.scenario.cluster.servers {
        return Err(format!(
            "{} runs {}, but the trace's cluster has {} (another configuration?)",
            algo.name(),
            locksim_core::text::plural(algo.servers() as u64, "server"),
            trace.scenario.cluster.servers
        ));
    }
    let outcome = check_scenario(&trace.scenario, algo);
    if let Some(e) = &outcome.error {
        return Err(format!("the simulation failed: {e}"));
    }
    let history = outcome.history.as_ref().expect("no error, a history");
    let digest = history.digest();
    // Embedded events must match too: a hand-edited event list is a mismatch.
    let digest_matches =
        digest == trace.digest && trace.events.as_ref().is_none_or(|e| *e == history.events);
    let verdict_matches = outcome.verdict == trace.verdict;
    let first_difference = match (&trace.events, digest_matches) {
        (Some(rec), false) => Some(first_difference(rec, &history.events)),
        _ => None,
    };
    Ok(Replay {
        outcome,
        digest,
        digest_matches,
        verdict_matches,
        first_difference,
    })
}

/// A short description of a verdict: `safe` or the violated properties, e.g. `S1,S2`.
pub fn verdict_kinds(v: &Verdict) -> String {
    if v.is_safe() {
        "safe".into()
    } else {
        v.kinds()
            .iter()
            .map(|k| k.to_string())
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// `replay --json`'s object for the trace `trace` read from `file` and its replay `r`, which
/// took `ms` milliseconds: `{"file", "ok", "digest", "recorded_digest", "digest_matches",
/// "verdict_matches", "verdict", "recorded", "first_difference", "ms"}`.
pub fn json(file: &std::path::Path, trace: &Trace, r: &Replay, ms: f64) -> serde_json::Value {
    serde_json::json!({
        "file": file.display().to_string(),
        "ok": r.ok(),
        "digest": r.digest,
        "recorded_digest": trace.digest,
        "digest_matches": r.digest_matches,
        "verdict_matches": r.verdict_matches,
        "verdict": r.outcome.verdict,
        "recorded": verdict_kinds(&trace.verdict),
        "first_difference": r.first_difference,
        "ms": (ms * 1000.0).round() / 1000.0,
    })
}

/// `replay`'s text for the trace `trace` read from `file` and its replay `r`, which took
/// `ms` milliseconds: `ok    FILE: digest …, verdict … (N ms)`, or `FAIL  FILE:` with what
/// differs and the first differing event. Ends with a newline.
pub fn text(file: &std::path::Path, trace: &Trace, r: &Replay, ms: f64) -> String {
    if r.ok() {
        return format!(
            "ok    {}: digest {}, verdict {} ({ms:.0} ms)\n",
            file.display(),
            &r.digest[..8],
            verdict_kinds(&r.outcome.verdict)
        );
    }
    let mut t = format!("FAIL  {}:", file.display());
    if !r.digest_matches {
        t += &format!(
            " digest {} where the trace recorded {};",
            &r.digest[..8],
            &trace.digest[..8.min(trace.digest.len())]
        );
    }
    if !r.verdict_matches {
        t += &format!(
            " verdict {} where the trace recorded {};",
            verdict_kinds(&r.outcome.verdict),
            verdict_kinds(&trace.verdict)
        );
    }
    t += "\n";
    if let Some(d) = &r.first_difference {
        t += &format!("  first difference: {d}\n");
    }
    t
}
