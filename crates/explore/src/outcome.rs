//! One scenario through the whole pipeline: simulation → history → checkers → verdict.

use std::sync::Arc;

use locksim_check::linear::Budget;
use locksim_check::liveness::{ClientTiming, LivenessSpec};
use locksim_check::{CheckOptions, LeaseSpec, S3_MAX_STEPS};
use locksim_core::{History, Scenario, Verdict};
use locksim_sim::{LivenessHints, LockAlgorithm};

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

/// Successful acquires in `history` (its acquire `ok` events): a run with none proves nothing.
pub fn grants(history: &History) -> u64 {
    use locksim_core::history::{EventKind, OpF, Phase};
    history
        .events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::Op {
                    f: OpF::Acquire,
                    phase: Phase::Ok,
                    ..
                }
            )
        })
        .count() as u64
}

/// The service's `grant` records in `history` (its `EventKind::Grant` events; one per master
/// for Redlock-style services): a run with grants and none orders them by the clients' `ok`.
pub fn grant_records(history: &History) -> u64 {
    use locksim_core::history::EventKind;
    history
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Grant { .. }))
        .count() as u64
}

/// The warning for a run with grants and no service-side grant record, naming `algorithm`.
pub fn no_grant_records_note(algorithm: &str) -> String {
    format!(
        "note: {algorithm} granted the lock but its service recorded no `grant` event \
         (EventKind::Grant): S2 and S4 then order grants by the clients' `ok`, which can raise \
         false alarms, and L3 cannot see a lock taken by a grant whose answer was lost; record \
         one where the service decides each grant (README: 'What your model must tell the \
         checkers')"
    )
}

/// Whether S3 judges `scenario`'s service by the record spec
/// ([`LockAlgorithm::lock_is_record`]: k8s-lease) and by the session spec
/// ([`LockAlgorithm::lock_is_session`]: zookeeper): from `algo` when given, else from the
/// algorithm the scenario names; `(false, false)` (the plain lease spec) for the others and
/// for an algorithm or knobs this build does not know.
pub fn held_spec(scenario: &Scenario, algo: Option<&dyn LockAlgorithm>) -> (bool, bool) {
    let of = |a: &dyn LockAlgorithm| (a.lock_is_record(), a.lock_is_session());
    match algo {
        Some(a) => of(a),
        None => locksim_algos::build(&scenario.algorithm, &scenario.config, &scenario.workload)
            .map_or((false, false), |a| of(&*a)),
    }
}

/// Writes the resource accepted in `history` (its `write_accepted` events): a run with grants
/// and none never exercised S2.
pub fn writes_accepted(history: &History) -> u64 {
    use locksim_core::history::EventKind;
    history
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::WriteAccepted { .. }))
        .count() as u64
}

/// A client operation that never got an answer: invoked, and neither `ok`, `fail` nor `info`
/// by the end of the run (a request without timeout into a host that never came back, or a
/// cut TCP had not given up on).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Pending {
    /// The client node.
    pub node: locksim_core::NodeId,
    /// `acquire`, `release`, `extend` or `write`.
    pub f: locksim_core::history::OpF,
    /// True time of the invoke, ns.
    pub invoked_ns: locksim_core::Nanos,
}

/// The operations of `history` still waiting for an answer when the run ended, by invoke
/// time. A process that crashed abandons its calls: its open operations are not listed.
pub fn pending_at_end(history: &History) -> Vec<Pending> {
    use locksim_core::history::{EventKind, Phase};
    use locksim_core::Fault;
    let mut open: std::collections::BTreeMap<u64, Pending> = Default::default();
    for e in &history.events {
        match &e.kind {
            EventKind::Op { op, phase, f, .. } => {
                if *phase == Phase::Invoke {
                    let p = Pending {
                        node: e.node,
                        f: *f,
                        invoked_ns: e.time,
                    };
                    open.insert(*op, p);
                } else {
                    open.remove(op);
                }
            }
            EventKind::Fault {
                fault: Fault::Crash { node, .. },
            } => open.retain(|_, p| p.node != *node),
            _ => {}
        }
    }
    let mut v: Vec<Pending> = open.into_values().collect();
    v.sort_by_key(|p| (p.invoked_ns, p.node));
    v
}

/// Faults of `history` that took effect: its `fault` events that could change something
/// (see [`crate::applied`] for the rule: zero-size faults, an `isolate_leader` that found no
/// leader, a heal with nothing to heal, a crash of a node already down and a pause nested
/// in an earlier pause of the node do not count). Read from the recorded events alone, so a
/// trace gives the same count.
///
/// A run whose plan held faults and in which this is 0 tested the fault-free case: campaign
/// cells show it as `n/a` (issue #24, item 5).
pub fn faults_applied(history: &History) -> u64 {
    crate::applied::faults_applied(history)
}

/// The checkers' options for a simulated scenario run by an algorithm with liveness hints
/// `hints`: node names, the lease spec of S3 (each client's TTL and the declared
/// uncertainty), S3's deterministic step budget, and what L1–L3 need.
pub fn check_options(scenario: &Scenario, hints: LivenessHints) -> CheckOptions<'_> {
    let w = &scenario.workload;
    CheckOptions {
        cluster: Some(&scenario.cluster),
        lease: Some(LeaseSpec::for_scenario(scenario)),
        budget: Budget {
            max_steps: Some(S3_MAX_STEPS),
            ..Budget::default()
        },
        liveness: Some(LivenessSpec {
            servers: scenario.cluster.servers,
            clients: scenario
                .cluster
                .client_ids()
                .map(|id| {
                    let p = client_params(scenario, id);
                    (
                        id,
                        ClientTiming {
                            ttl: p.ttl,
                            renew_every: p.renew_every,
                            renew_retry: p.renew_retry,
                            duration: p.duration,
                        },
                    )
                })
                .collect(),
            default: None,
            lock_delay: hints.lock_delay,
            attempt: hints.attempt.unwrap_or(w.rpc_timeout),
            retry: w.retry_delay_max,
            uncertainty: w.uncertainty(),
            duration: w.duration,
            non_expiring: false,
            observed_expiry: false,
            election: hints.election,
            backoff: (w.network == locksim_core::Network::Tcp).then_some(w.tcp_rto_min),
        }),
    }
}

/// [`check_options`] for `scenario` run by `algo`: its liveness hints, for an algorithm whose
/// lock never expires ([`LockAlgorithm::lock_expires`]) the non-expiring lock spec of S3 and no
/// L1 claim, and for a compare-and-swap record ([`LockAlgorithm::lock_is_record`]) the record
/// spec of S3 and the waiters' observed expiry of L3 ([`LivenessSpec::observed_expiry`]), and
/// for a session lock ([`LockAlgorithm::lock_is_session`]) the session spec of S3.
pub fn check_options_for<'a>(scenario: &'a Scenario, algo: &dyn LockAlgorithm) -> CheckOptions<'a> {
    let mut options = check_options(scenario, algo.liveness());
    let non_expiring = !algo.lock_expires();
    if let Some(lease) = options.lease.as_mut() {
        lease.non_expiring = non_expiring;
        lease.record = algo.lock_is_record();
        lease.session = algo.lock_is_session();
    }
    if let Some(liveness) = options.liveness.as_mut() {
        liveness.non_expiring = non_expiring;
        // A record that judges no time is expired by its waiters' own observations.
        liveness.observed_expiry = algo.lock_is_record();
    }
    options
}

/// The settings client node `id` of `scenario` runs with.
pub fn client_params(scenario: &Scenario, id: locksim_core::NodeId) -> locksim_core::ClientParams {
    scenario.workload.client(id - scenario.cluster.servers + 1)
}

/// Runs `scenario` with `algo` on a fresh thread and checks the history.
pub fn check_scenario(scenario: &Scenario, algo: Arc<dyn LockAlgorithm>) -> SeedOutcome {
    let options = check_options_for(scenario, &*algo);
    match locksim_sim::run_isolated(scenario, algo) {
        Ok(history) => {
            let verdict = locksim_check::check_all(&history, &options);
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

/// `locksim run --json`'s object for `scenario`'s run `history` judged `verdict`, exiting
/// `exit`: `scenario`, `nodes` (names), `digest`, `events`, `messages_sent`,
/// `messages_dropped`, `grants`, `grant_records`, `writes_accepted`, `faults_planned`,
/// `faults_applied`, `faults_never_fired`, `ops_pending_at_end`, `exit`, `verdict`; with
/// `events`, the `history` too.
pub fn run_json(
    scenario: &Scenario,
    history: &History,
    verdict: &Verdict,
    exit: u8,
    events: bool,
) -> serde_json::Value {
    let names: Vec<String> = (0..scenario.cluster.nodes())
        .map(|n| scenario.cluster.name(n))
        .collect();
    let mut v = serde_json::json!({
        "scenario": scenario,
        "nodes": names,
        "digest": history.digest(),
        "events": history.events.len(),
        "messages_sent": history.messages_sent,
        "messages_dropped": history.messages_dropped,
        "grants": grants(history),
        "grant_records": grant_records(history),
        "writes_accepted": writes_accepted(history),
        "faults_planned": scenario.faults.len(),
        "faults_applied": faults_applied(history),
        "faults_never_fired": locksim_core::trigger::never_fired(&scenario.faults, history, &scenario.cluster),
        "ops_pending_at_end": pending_at_end(history),
        "exit": exit,
        "verdict": verdict,
    });
    if events {
        v["history"] = serde_json::to_value(history).expect("serializable");
    }
    v
}
