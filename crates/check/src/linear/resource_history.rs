//! From a locksim [`History`] to the resource's operations, one register per key: each write
//! swaps in a fresh value and returns the value it replaced.

use std::collections::BTreeMap;

use locksim_core::history::{EventKind, OpF, Phase};
use locksim_core::{Event, History};

use super::models::register::{RegisterInput, RegisterOutput};
use super::Operation;

/// A resource write as a register swap; `id` is the event id of its invocation, times are true
/// time in ns.
pub type ResourceOp = Operation<RegisterInput, RegisterOutput>;

/// The resource's writes, per key. A write that failed (fenced) did not happen and is left out;
/// one without a completion (a timeout) is unknown.
pub fn resource_operations(history: &History) -> BTreeMap<u32, Vec<ResourceOp>> {
    let mut invokes: BTreeMap<u64, &Event> = BTreeMap::new();
    let mut done: BTreeMap<u64, (&Event, Phase, Option<u64>)> = BTreeMap::new();
    for e in &history.events {
        if let EventKind::Op {
            op,
            phase,
            f: OpF::Write,
            value,
            ..
        } = &e.kind
        {
            match phase {
                Phase::Invoke => {
                    invokes.insert(*op, e);
                }
                p => {
                    done.insert(*op, (e, *p, *value));
                }
            }
        }
    }
    let mut by_key: BTreeMap<u32, Vec<ResourceOp>> = BTreeMap::new();
    for (op, inv) in invokes {
        let EventKind::Op {
            key,
            value: Some(v),
            ..
        } = inv.kind
        else {
            continue;
        };
        let (output, ret) = match done.get(&op) {
            Some((e, Phase::Ok, Some(prev))) => (
                RegisterOutput::Swapped((*prev != 0).then_some(*prev as i64)),
                Some(e.time),
            ),
            Some((_, Phase::Fail, _)) => continue,
            _ => (RegisterOutput::Unknown, None),
        };
        by_key.entry(key).or_default().push(Operation {
            process: inv.node as u64,
            input: RegisterInput::Swap(v as i64),
            output,
            call: inv.time,
            ret,
            id: inv.id,
        });
    }
    by_key
}
