//! The protected resource: a storage node that accepts writes. A write that carries a fencing
//! token is rejected when the token is below the highest token the resource has seen for that
//! key (Kleppmann's fencing; Chubby's sequencers, Burrows 2006 §2.4). Writes without a token are
//! always accepted. Each key holds the last value written, and an accepted write answers with the
//! value it replaced (a swap, like Redis' `GETSET`), so the resource's history can be checked for
//! linearizability as a register. Its state is kept in memory; the nemesis does not crash it.

use std::collections::BTreeMap;

use locksim_core::history::EventKind;

use crate::ctx::NodeCtx;

/// A write to the resource under a grant.
#[derive(Debug, Clone)]
pub struct WriteReq {
    /// Lock key whose data is written.
    pub key: u32,
    /// The writer's lock handle (for the history).
    pub handle: u64,
    /// Fencing token, when the grant has one.
    pub token: Option<u64>,
    /// The value written (never 0).
    pub value: u64,
}

/// The resource's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteResp {
    /// Written; `previous` is the value it replaced (0 for a key never written).
    Accepted { previous: u64 },
    /// Rejected: the token is below `highest`.
    Fenced { highest: u64 },
}

/// Runs the resource until the run ends.
pub async fn serve(ctx: NodeCtx) {
    let mut highest: BTreeMap<u32, u64> = BTreeMap::new();
    let mut values: BTreeMap<u32, u64> = BTreeMap::new();
    loop {
        let msg = ctx.recv().await;
        let Some(req) = msg.body.downcast_ref::<WriteReq>() else {
            continue;
        };
        let resp = match (req.token, highest.get(&req.key).copied()) {
            (Some(t), Some(h)) if t < h => {
                ctx.record(EventKind::WriteRejected {
                    key: req.key,
                    handle: req.handle,
                    token: t,
                    highest: h,
                });
                WriteResp::Fenced { highest: h }
            }
            (token, _) => {
                if let Some(t) = token {
                    highest.insert(req.key, t);
                }
                ctx.record(EventKind::WriteAccepted {
                    key: req.key,
                    handle: req.handle,
                    token,
                });
                let previous = values.insert(req.key, req.value).unwrap_or(0);
                WriteResp::Accepted { previous }
            }
        };
        ctx.reply(&msg, resp).await;
    }
}
