//! S3 (DESIGN §7): the history of lock operations is linearizable with respect to the
//! sequential lease-lock spec ([`crate::linear::models::lock`]), judged per key; and the
//! resource's history is linearizable as one register per key (each write a swap).

use locksim_core::time::fmt_nanos;
use locksim_core::{History, Property, Verdict, Violation};

use crate::linear::lock_history::lock_operations_with;
use crate::linear::models::lock::{LeaseLock, LockInput};
use crate::linear::models::register::Register;
use crate::linear::resource_history::resource_operations;
use crate::linear::{check, Budget, Counterexample, Verdict as Lin};

/// What S3 needs to know about the lock service.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LeaseSpec {
    /// The lease length acquires and extends ask for, ns.
    pub ttl: u64,
    /// Clients that ask for another lease length (per-client settings), by node id, ns.
    pub client_ttl: std::collections::BTreeMap<locksim_core::NodeId, u64>,
    /// The declared clock-uncertainty bound `ε`, ns.
    pub uncertainty: u64,
}

impl LeaseSpec {
    /// The lease length client `node` asks for, ns.
    pub fn ttl_of(&self, node: locksim_core::NodeId) -> u64 {
        self.client_ttl.get(&node).copied().unwrap_or(self.ttl)
    }
}

/// Adds an S3 violation to `verdict` when the lock operations are not linearizable, or a note
/// to `verdict.inconclusive` when the budget ran out first.
pub fn check_s3(history: &History, spec: &LeaseSpec, budget: &Budget, verdict: &mut Verdict) {
    let ops = lock_operations_with(history, |node| spec.ttl_of(node));
    let model = LeaseLock {
        uncertainty: spec.uncertainty,
    };
    let key_of = |id: Option<&u64>| {
        ops.iter()
            .find(|o| id == Some(&o.id))
            .map_or(0, |o| match o.input {
                LockInput::Acquire { key, .. }
                | LockInput::Release { key, .. }
                | LockInput::Extend { key, .. } => key,
            })
    };
    let what = format!(
        "lock operations (lease {} ± {})",
        fmt_nanos(spec.ttl as i128),
        fmt_nanos(spec.uncertainty as i128)
    );
    report(
        check(&model, &ops, budget).0,
        |c| key_of(c.stuck.first()),
        &what,
        "operations",
        verdict,
    );
    // The resource as a register per key: every accepted write swapped in its value and
    // returned the one before. A single resource node serializes writes, so this fails only
    // when a write took effect twice (a duplicated message) or a reply was misdelivered.
    for (key, ops) in resource_operations(history) {
        report(
            check(&Register, &ops, budget).0,
            |_| key,
            "the resource's writes (as a register)",
            "writes",
            verdict,
        );
    }
}

/// Adds the outcome of one linearizability check to `verdict`.
fn report(
    outcome: Lin,
    key_of: impl Fn(&Counterexample) -> u32,
    what: &str,
    unit: &str,
    verdict: &mut Verdict,
) {
    match outcome {
        Lin::Linearizable => {}
        Lin::Unknown(why) => verdict.inconclusive.push(format!("S3, {what}: {why}")),
        Lin::NotLinearizable(c) => {
            let key = key_of(&c);
            let mut events: Vec<u64> = c.stuck.clone();
            events.extend(c.prefix.last());
            verdict.violations.push(Violation {
                kind: Property::S3,
                key,
                summary: format!(
                    "{what} on k{key} are not linearizable: after {} {unit}, none of these can take \
                     effect: {}",
                    c.prefix.len(),
                    c.stuck_described.join("; ")
                ),
                events,
                window: None,
            });
        }
    }
}
