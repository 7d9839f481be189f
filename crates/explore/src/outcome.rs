//! One scenario through the whole pipeline: simulation → history → checkers → verdict.

use std::sync::Arc;

use locksim_core::{History, Scenario, Verdict};
use locksim_sim::LockAlgorithm;

/// The result of one seed.
#[derive(Debug, Clone)]
pub struct SeedOutcome {
    /// The seed.
    pub seed: u64,
    /// The recorded history (`None` when the simulation itself failed).
    pub history: Option<History>,
    /// The verdict of the checkers.
    pub verdict: Verdict,
    /// Why the simulation failed (an algorithm panicked), if it did.
    pub error: Option<String>,
}

/// Runs `scenario` with `algo` on a fresh thread and checks the history.
pub fn check_scenario(scenario: &Scenario, algo: Arc<dyn LockAlgorithm>) -> SeedOutcome {
    match locksim_sim::run_isolated(scenario, algo) {
        Ok(history) => {
            let verdict = locksim_check::check_all(&history, Some(&scenario.cluster));
            SeedOutcome {
                seed: scenario.seed,
                history: Some(history),
                verdict,
                error: None,
            }
        }
        Err(e) => SeedOutcome {
            seed: scenario.seed,
            history: None,
            verdict: Verdict::default(),
            error: Some(e),
        },
    }
}
