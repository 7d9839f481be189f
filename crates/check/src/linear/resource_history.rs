//! From a locksim [`History`] to the resource's operations, one register per key: each write
//! swaps in a fresh value and returns the value it replaced.

use std::collections::BTreeMap;

use locksim_core::history::{EventKind, OpF, Phase};
use locksim_core::History;

use super::models::register::{RegisterInput, RegisterOutput};
use super::pairs::pair_ops;
use super::Operation;

/// A resource write as a register swap; `id` is the event id of its invocation, times are true
/// time in ns.
pub type ResourceOp = Operation<RegisterInput, RegisterOutput>;

/// The resource's writes, per key. A write that failed (fenced) did not happen and is left out;
/// one without a completion (a timeout) is unknown.
pub fn resource_operations(history: &History) -> BTreeMap<u32, Vec<ResourceOp>> {
    let mut by_key: BTreeMap<u32, Vec<ResourceOp>> = BTreeMap::new();
    for (inv, completion) in pair_ops(history, |f| f == OpF::Write) {
        let EventKind::Op {
            key,
            value: Some(v),
            ..
        } = inv.kind
        else {
            continue;
        };
        let (output, ret) = match completion {
            Some((e, Phase::Ok)) => match e.kind {
                EventKind::Op {
                    value: Some(prev), ..
                } => (
                    RegisterOutput::Swapped((prev != 0).then_some(prev as i64)),
                    Some(e.time),
                ),
                _ => (RegisterOutput::Unknown, Some(e.time)),
            },
            Some((_, Phase::Fail | Phase::Invoke)) => continue,
            Some((_, Phase::Info)) | None => (RegisterOutput::Unknown, None),
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
