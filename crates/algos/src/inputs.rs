//! The two feeders of a replicated server's event loop: a periodic tick and every message the
//! node receives, each sent into the one channel the loop reads, so the loop handles both in
//! the order they happened (as etcd's `raftNode` loop multiplexes its ticker and its transport).

use futures_channel::mpsc::UnboundedSender;
use locksim_core::Nanos;
use locksim_sim::{Incoming, NodeCtx};

/// Sends `input()` every `period` ns of the node's monotonic clock, until the loop is gone.
pub fn every<T: 'static>(
    ctx: &NodeCtx,
    period: Nanos,
    tx: UnboundedSender<T>,
    input: impl Fn() -> T + 'static,
) {
    let c = ctx.clone();
    madsim::task::spawn_local(async move {
        loop {
            c.sleep(period).await;
            if tx.unbounded_send(input()).is_err() {
                return;
            }
        }
    });
}

/// Sends `input(m)` for every message `m` the node receives, until the loop is gone.
pub fn messages<T: 'static>(
    ctx: &NodeCtx,
    tx: UnboundedSender<T>,
    input: impl Fn(Incoming) -> T + 'static,
) {
    let c = ctx.clone();
    madsim::task::spawn_local(async move {
        loop {
            let m = c.recv().await;
            if tx.unbounded_send(input(m)).is_err() {
                return;
            }
        }
    });
}
