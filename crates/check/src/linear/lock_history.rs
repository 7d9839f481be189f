//! From a locksim [`History`] to the lock operations the lease-lock model checks.

use std::collections::BTreeMap;

use locksim_core::history::{EventKind, OpF, Phase};
use locksim_core::{Event, History};

use super::models::lock::{LockInput, LockOutput};
use super::Operation;

/// A lock operation; `id` is the event id of its invocation, times are true time in ns.
pub type LockOp = Operation<LockInput, LockOutput>;

/// Extracts acquire, release and extend operations. Every acquire asked for a lease of `ttl`
/// ns. Failed operations and acquires that did not return `ok` are left out (they did not
/// give anyone the lock); releases and extends without a completion are unknown.
pub fn lock_operations(history: &History, ttl: u64) -> Vec<LockOp> {
    let mut invokes: BTreeMap<u64, &Event> = BTreeMap::new();
    let mut done: BTreeMap<u64, (&Event, Phase, Option<u64>)> = BTreeMap::new();
    for e in &history.events {
        if let EventKind::Op {
            op,
            phase,
            f,
            handle,
            ..
        } = &e.kind
        {
            if *f == OpF::Write {
                continue;
            }
            match phase {
                Phase::Invoke => {
                    invokes.insert(*op, e);
                }
                p => {
                    done.insert(*op, (e, *p, *handle));
                }
            }
        }
    }
    let mut ops = Vec::new();
    for (op, inv) in invokes {
        let EventKind::Op { f, key, handle, .. } = inv.kind else {
            continue;
        };
        let completion = done.get(&op);
        let (output, ret) = match completion {
            Some((e, Phase::Ok, _)) => (LockOutput::Ok, Some(e.time)),
            Some((_, Phase::Fail, _)) => continue,
            Some((_, Phase::Info, _)) | None => (LockOutput::Unknown, None),
            Some((_, Phase::Invoke, _)) => continue,
        };
        let input = match f {
            OpF::Acquire => match (output, completion.and_then(|c| c.2)) {
                (LockOutput::Ok, Some(h)) => LockInput::Acquire {
                    key,
                    ttl,
                    handle: h,
                },
                _ => continue,
            },
            OpF::Release => match handle {
                Some(h) => LockInput::Release { key, handle: h },
                None => continue,
            },
            OpF::Extend => match handle {
                Some(h) => LockInput::Extend {
                    key,
                    ttl,
                    handle: h,
                },
                None => continue,
            },
            OpF::Write => continue,
        };
        ops.push(Operation {
            process: inv.node as u64,
            input,
            output,
            call: inv.time,
            ret,
            id: inv.id,
        });
    }
    ops
}
