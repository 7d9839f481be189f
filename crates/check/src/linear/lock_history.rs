//! From a locksim [`History`] to the lock operations the lease-lock model checks.

use locksim_core::history::{EventKind, OpF, Phase};
use locksim_core::{History, NodeId};

use super::models::lock::{LockContext, LockInput, LockOutput};
use super::pairs::pair_ops;
use super::Operation;

/// A lock operation; `id` is the event id of its invocation, times are true time in ns.
pub type LockOp = Operation<LockInput, LockOutput>;

/// Extracts acquire, release and extend operations. Every acquire asked for a lease of `ttl`
/// ns. Failed operations and acquires that did not return `ok` are left out (they did not
/// give anyone the lock); releases and extends without a completion are unknown.
pub fn lock_operations(history: &History, ttl: u64) -> Vec<LockOp> {
    lock_operations_with(history, |_| ttl)
}

/// Like [`lock_operations`], with the lease length each client (by node id) asks for.
pub fn lock_operations_with(history: &History, ttl_of: impl Fn(NodeId) -> u64) -> Vec<LockOp> {
    let mut ops = Vec::new();
    for (inv, completion) in pair_ops(history, |f| f != OpF::Write) {
        let EventKind::Op { f, key, handle, .. } = inv.kind else {
            continue;
        };
        let ttl = ttl_of(inv.node);
        let (output, ret) = match completion {
            Some((e, Phase::Ok)) => (LockOutput::Ok, Some(e.time)),
            Some((_, Phase::Fail | Phase::Invoke)) => continue,
            Some((_, Phase::Info)) | None => (LockOutput::Unknown, None),
        };
        let input = match f {
            // An acquire's handle is on its `ok`.
            OpF::Acquire => match completion.map(|(e, _)| &e.kind) {
                Some(EventKind::Op {
                    handle: Some(h), ..
                }) => LockInput::Acquire {
                    key,
                    ttl,
                    handle: *h,
                    since: None,
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

/// What the lease-lock model's reasons mention beyond the operations: a name for every node
/// that invoked a lock operation (`name(node)`), and the releases that failed, by handle.
pub fn lock_context(history: &History, name: impl Fn(u32) -> String) -> LockContext {
    let mut cx = LockContext::default();
    for (inv, completion) in pair_ops(history, |f| f != OpF::Write) {
        cx.names
            .entry(inv.node as u64)
            .or_insert_with(|| name(inv.node));
        if let (
            EventKind::Op {
                f: OpF::Release,
                handle: Some(h),
                ..
            },
            Some((_, Phase::Fail)),
        ) = (&inv.kind, completion)
        {
            cx.failed_releases.entry(*h).or_default().push(inv.time);
        }
    }
    cx
}
