//! One scenario through the whole pipeline: simulation → history → checkers → verdict.

use std::sync::Arc;

use locksim_check::linear::Budget;
use locksim_check::{CheckOptions, LeaseSpec, S3_MAX_STEPS};
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

/// The checkers' options for a simulated scenario: node names, the lease spec of S3 (the
/// workload's TTL and declared uncertainty) and S3's deterministic step budget.
pub fn check_options(scenario: &Scenario) -> CheckOptions<'_> {
    CheckOptions {
        cluster: Some(&scenario.cluster),
        lease: Some(LeaseSpec {
            ttl: scenario.workload.ttl,
            uncertainty: scenario.workload.uncertainty(),
        }),
        budget: Budget {
            max_steps: Some(S3_MAX_STEPS),
            ..Budget::default()
        },
    }
}

/// Runs `scenario` with `algo` on a fresh thread and checks the history.
pub fn check_scenario(scenario: &Scenario, algo: Arc<dyn LockAlgorithm>) -> SeedOutcome {
    match locksim_sim::run_isolated(scenario, algo) {
        Ok(history) => {
            let verdict = locksim_check::check_all(&history, &check_options(scenario));
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
