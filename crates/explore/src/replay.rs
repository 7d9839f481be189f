//! Replaying traces: run the trace's scenario again and compare the event digest and the
//! verdict with what the trace recorded.

use locksim_core::{Event, Trace, Verdict};

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

/// Replays `trace`.
///
/// # Errors
/// When the trace records a real run, its algorithm cannot be rebuilt, or the simulation
/// fails.
pub fn replay(trace: &Trace) -> Result<Replay, String> {
    if let Some(what) = &trace.real {
        return Err(format!(
            "it records a real run ({what}): real runs cannot be replayed, only re-run with `locksim real`"
        ));
    }
    let setup = Setup::from_scenario(&trace.scenario)?;
    let outcome = check_scenario(&trace.scenario, setup.algo.clone());
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
