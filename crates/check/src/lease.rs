//! S3 (docs/design.md §7): the history of lock operations is linearizable with respect to the
//! sequential lease-lock spec ([`crate::linear::models::lock`]), judged per key; and the
//! resource's history is linearizable as one register per key (each write a swap).
//!
//! A violation's summary gives the model's reasons in plain words (who was answered what,
//! when, and which lease stood in the way); [`s3_explanations`] gives the whole picture for
//! pages: the failing key's operations, the longest linearizable prefix with the lock's state
//! after each step, and the operations that could not be placed.

use std::sync::Arc;

use locksim_core::history::{EventKind, OpF, Phase};
use locksim_core::time::fmt_nanos;
use locksim_core::{History, Property, Verdict, Violation};

use crate::linear::explain::{ExplainedOp, Explanation};
use crate::linear::lock_history::{lock_context, lock_operations_with, LockOp};
use crate::linear::models::lock::{LeaseLock, LockInput};
use crate::linear::models::register::Register;
use crate::linear::resource_history::resource_operations;
use crate::linear::{check, Budget, Counterexample, Model, Verdict as Lin};
use crate::Names;

/// What S3 needs to know about the lock service.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LeaseSpec {
    /// The lease length acquires and extends ask for, ns.
    pub ttl: u64,
    /// Clients that ask for another lease length (per-client settings), by node id, ns.
    pub client_ttl: std::collections::BTreeMap<locksim_core::NodeId, u64>,
    /// The declared clock-uncertainty bound `ε`, ns.
    pub uncertainty: u64,
    /// The non-expiring lock spec instead of the lease spec: a grant lasts until its release,
    /// or until its holder crashed (a session lock, e.g. PostgreSQL's advisory locks, ends with
    /// the holder's session at some unknown moment after the crash). TTLs are then ignored.
    pub non_expiring: bool,
    /// The compare-and-swap record spec instead of the plain lease spec: the service is a
    /// record whose updates check its version and judge no time (a Kubernetes Lease on the API
    /// server; expiry is each candidate's own judgement), so the holder's release or renewal
    /// takes effect whatever the time and its own process may take the lock again at once;
    /// another client's acquire must still wait for the lease's end (± `uncertainty`). See
    /// [`crate::linear::models::lock`].
    pub record: bool,
    /// The session-lock spec instead of the plain lease spec: a grant lives while its holder's
    /// session does (ZooKeeper), so the holder's release or renewal takes effect whatever the
    /// time; another client's acquire must still wait for the lease's end (± `uncertainty`),
    /// and the lease counts from the last touch of the session the service recorded
    /// ([`EventKind::Touched`]), not from the grant: see [`LeaseSpec::operations`] and
    /// [`crate::linear::models::lock`].
    pub session: bool,
}

pub use crate::linear::models::lock::FOREVER;

impl LeaseSpec {
    /// The spec of a simulated scenario: each client's TTL and the declared uncertainty.
    pub fn for_scenario(s: &locksim_core::Scenario) -> LeaseSpec {
        let w = &s.workload;
        LeaseSpec {
            ttl: w.ttl,
            client_ttl: s
                .cluster
                .client_ids()
                .map(|id| (id, w.client(id - s.cluster.servers + 1).ttl))
                .filter(|&(_, ttl)| ttl != w.ttl)
                .collect(),
            uncertainty: w.uncertainty(),
            non_expiring: false,
            record: false,
            session: false,
        }
    }

    /// The non-expiring lock spec (see [`LeaseSpec::non_expiring`]).
    pub fn non_expiring() -> LeaseSpec {
        LeaseSpec {
            non_expiring: true,
            ..LeaseSpec::default()
        }
    }

    /// The lease length client `node` asks for, ns ([`FOREVER`] under the non-expiring spec).
    pub fn ttl_of(&self, node: locksim_core::NodeId) -> u64 {
        if self.non_expiring {
            return FOREVER;
        }
        self.client_ttl.get(&node).copied().unwrap_or(self.ttl)
    }

    /// The lock operations S3 judges: the history's; under the session spec, the service's
    /// session touches (see [`session_touches`]); and under the non-expiring spec, for each
    /// client crash, a release of unknown outcome of every grant the client had asked for by
    /// then (its session ends at some moment after the crash, or never).
    pub fn operations(&self, history: &History) -> Vec<LockOp> {
        let mut ops = lock_operations_with(history, |n| self.ttl_of(n));
        if self.session && !self.non_expiring {
            session_touches(history, &mut ops);
        }
        if !self.non_expiring {
            return ops;
        }
        let mut ends = Vec::new();
        for e in &history.events {
            let EventKind::Fault {
                fault: locksim_core::Fault::Crash { node, .. },
            } = &e.kind
            else {
                continue;
            };
            for op in ops
                .iter()
                .filter(|o| o.process == *node as u64 && o.call < e.time)
            {
                if let LockInput::Acquire { key, handle, .. } = op.input {
                    ends.push(crate::linear::Operation {
                        process: op.process,
                        input: LockInput::Release { key, handle },
                        output: crate::linear::models::lock::LockOutput::Unknown,
                        call: e.time,
                        ret: None,
                        id: e.id,
                    });
                }
            }
        }
        ops.extend(ends);
        ops
    }

    /// The lease lengths for summaries: `1.000s`, or `1.000s (c2: 5.000s)`.
    fn describe(&self, names: Names) -> String {
        if self.non_expiring {
            return "none: held until released or the holder crashed".into();
        }
        let mut t = fmt_nanos(self.ttl as i128);
        if self.record {
            t = format!("record, {t}");
        } else if self.session {
            t = format!("session, {t}");
        }
        if !self.client_ttl.is_empty() {
            let own: Vec<String> = self
                .client_ttl
                .iter()
                .map(|(&n, &ttl)| format!("{}: {}", names.of(n), fmt_nanos(ttl as i128)))
                .collect();
            t += &format!(" ({})", own.join(", "));
        }
        t
    }
}

/// The session spec's view of the service's [`EventKind::Touched`] records: each acquire `ok`
/// whose grant the service recorded ([`EventKind::Grant`] to its client on its key, within the
/// acquire's call, with the lock node's number as token) gets `since`, the time of the last
/// touch at or before that grant of its node or of a create by its client on its key since the
/// acquire was invoked; and each later touch of its node becomes a renewal of its handle that
/// succeeded at that known time (`call = ret`). Histories without touches (other algorithms,
/// real runs) are unchanged.
pub fn session_touches(history: &History, ops: &mut Vec<LockOp>) {
    use crate::linear::models::lock::LockOutput;
    struct Touch {
        time: u64,
        id: u64,
        key: u32,
        client: u64,
        node: Option<u64>,
    }
    let mut touches = Vec::new();
    let mut grants = Vec::new();
    for e in &history.events {
        match e.kind {
            EventKind::Touched {
                key,
                client,
                seq: node,
                ..
            } => touches.push(Touch {
                time: e.time,
                id: e.id,
                key,
                client: client as u64,
                node,
            }),
            EventKind::Grant {
                key,
                client,
                token: Some(seq),
            } => grants.push((e.time, key, client as u64, seq)),
            _ => {}
        }
    }
    if touches.is_empty() {
        return;
    }
    let mut renewals = Vec::new();
    for op in ops.iter_mut() {
        let (
            LockInput::Acquire {
                key,
                ttl,
                handle,
                ref mut since,
            },
            Some(ret),
        ) = (&mut op.input, op.ret)
        else {
            continue;
        };
        let (key, ttl, handle) = (*key, *ttl, *handle);
        let Some(&(g, _, _, seq)) = grants
            .iter()
            .rev()
            .find(|&&(t, k, c, _)| k == key && c == op.process && op.call <= t && t <= ret)
        else {
            continue;
        };
        let mine = |t: &Touch| t.key == key && t.client == op.process;
        *since = touches
            .iter()
            .filter(|t| mine(t) && op.call <= t.time && t.time <= g)
            .filter(|t| t.node.is_none_or(|n| n == seq))
            .map(|t| t.time)
            .max();
        for t in touches
            .iter()
            .filter(|t| mine(t) && t.time > g && t.node == Some(seq))
        {
            renewals.push(crate::linear::Operation {
                process: op.process,
                input: LockInput::Extend { key, ttl, handle },
                output: LockOutput::Ok,
                call: t.time,
                ret: Some(t.time),
                id: t.id,
            });
        }
    }
    ops.extend(renewals);
}

fn key_of(op: &LockOp) -> u32 {
    match op.input {
        LockInput::Acquire { key, .. }
        | LockInput::Release { key, .. }
        | LockInput::Extend { key, .. } => key,
    }
}

/// The lease-lock model of `spec`, with the history's names and failed releases for its
/// reasons.
fn model(history: &History, spec: &LeaseSpec, names: Names) -> LeaseLock {
    LeaseLock {
        uncertainty: spec.uncertainty,
        record: spec.record,
        session: spec.session,
        context: Arc::new(lock_context(history, |n| names.of(n))),
    }
}

/// Adds an S3 violation to `verdict` when the lock operations are not linearizable, or a note
/// to `verdict.inconclusive` when the budget ran out first.
pub fn check_s3(
    history: &History,
    spec: &LeaseSpec,
    budget: &Budget,
    names: Names,
    verdict: &mut Verdict,
) {
    let ops = spec.operations(history);
    let model = model(history, spec, names);
    let what = format!(
        "lock operations (lease {} ± {})",
        spec.describe(names),
        fmt_nanos(spec.uncertainty as i128)
    );
    report(
        check(&model, &ops, budget).0,
        |c| {
            c.stuck
                .first()
                .and_then(|id| ops.iter().find(|o| o.id == *id))
                .map_or(0, key_of)
        },
        &what,
        "operation",
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
            "write",
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
            let after = match c.prefix.len() {
                0 => format!("no {unit} fits the spec first"),
                1 => format!("after the first {unit} that fits"),
                n => format!("after {n} {unit}s that fit in some order"),
            };
            let next = if c.stuck.len() == 1 {
                String::new()
            } else {
                format!(
                    " none of the {} {unit}s that could come next can:",
                    c.stuck.len()
                )
            };
            verdict.violations.push(Violation {
                kind: Property::S3,
                key,
                summary: format!(
                    "{what} on k{key} are not linearizable: {after},{next} {}",
                    c.reasons.join("; ")
                ),
                events,
                window: None,
            });
        }
    }
}

/// The explanation of every failing key of S3's lock check, for pictures: the key's lock
/// operations (with its failed releases and acquires, drawn but not checked), the longest
/// linearizable prefix with the lock's state after each step, and the operations that could
/// not be placed with the model's reasons. Empty when the lock operations are linearizable
/// (or the budget ran out).
pub fn s3_explanations(
    history: &History,
    spec: &LeaseSpec,
    budget: &Budget,
    names: Names,
) -> Vec<Explanation> {
    let ops = spec.operations(history);
    let model = model(history, spec, names);
    let Lin::NotLinearizable(c) = check(&model, &ops, budget).0 else {
        return Vec::new();
    };
    let key = c
        .stuck
        .first()
        .and_then(|id| ops.iter().find(|o| o.id == *id))
        .map_or(0, key_of);
    let mut x = Explanation::new(
        &model,
        &ops,
        &c,
        format!("k{key}"),
        "ns",
        |p| names.of(p as u32),
        |o| model.outcome(o),
    );
    x.ops.extend(failed_ops(history, key, names));
    x.ops.sort_by_key(|o| (o.call, o.id));
    vec![x]
}

/// The lock operations of `key` that failed (they did not happen, so the check leaves them
/// out) or acquires that never got an answer, to draw beside the checked ones.
fn failed_ops(history: &History, key: u32, names: Names) -> Vec<ExplainedOp> {
    let mut invokes = std::collections::BTreeMap::new();
    let mut out = Vec::new();
    for e in &history.events {
        let EventKind::Op {
            op,
            phase,
            f,
            key: k,
            handle,
            ..
        } = &e.kind
        else {
            continue;
        };
        if *k != key || *f == OpF::Write {
            continue;
        }
        match phase {
            Phase::Invoke => {
                invokes.insert(*op, e);
            }
            Phase::Fail | Phase::Info if *f == OpF::Acquire || *phase == Phase::Fail => {
                let Some(inv) = invokes.remove(op) else {
                    continue;
                };
                let outcome = if *phase == Phase::Fail {
                    "fail"
                } else {
                    "info"
                };
                let what = format!("{f:?}").to_lowercase();
                let h = handle.map_or(String::new(), |h| format!(" handle {h}"));
                out.push(ExplainedOp {
                    id: inv.id,
                    process: names.of(inv.node),
                    call: inv.time,
                    ret: (*phase == Phase::Fail).then_some(e.time),
                    outcome,
                    text: format!(
                        "{} {what} k{key}{h} -> {} (not checked: {})",
                        names.of(inv.node),
                        if outcome == "fail" {
                            "failed"
                        } else {
                            "unknown"
                        },
                        if outcome == "fail" {
                            "it did not happen"
                        } else {
                            "an acquire nobody heard granted gives nobody the lock"
                        }
                    ),
                    checked: false,
                });
            }
            _ => {
                invokes.remove(op);
            }
        }
    }
    out
}
