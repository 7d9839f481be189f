//! The Sentinel-like monitor of `redis-failover`: pings the primary, promotes a replica after
//! `down_after` without an answer, reconfigures the other nodes, and tells clients which node
//! is the primary.

use futures_channel::mpsc;
use futures_util::StreamExt;
use locksim_core::NodeId;
use locksim_sim::{Incoming, NodeCtx};
use rand::seq::SliceRandom;

use super::node::Ctl;
use super::{Promote, RedisFailover};

/// Client → monitor: which node is the primary? (`SENTINEL get-master-addr-by-name`.)
#[derive(Debug, Clone)]
pub struct WhoIsPrimary;

/// Monitor → client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrimaryIs {
    pub epoch: u64,
    pub node: NodeId,
}

const STATE: &str = "sentinel";
/// The monitor's ping period on its monotonic clock, ns (Sentinel pings every second; faster
/// here so short runs see failovers at `down_after`, not a second later).
const PING_EVERY: u64 = 100_000_000;

enum Input {
    Net(Incoming),
    Tick,
    /// A ping of the primary ended: answered or not.
    Pinged(bool),
}

/// Runs the monitor until it crashes. Its epoch and primary are kept on disk (Sentinel
/// rewrites its configuration file on every change).
pub async fn serve(ctx: NodeCtx, cfg: RedisFailover) {
    let (mut epoch, mut primary) = match ctx.disk().read(STATE) {
        Some(b) if b.len() == 12 => (
            u64::from_le_bytes(b[..8].try_into().expect("8 bytes")),
            u32::from_le_bytes(b[8..].try_into().expect("4 bytes")),
        ),
        _ => (0, 0),
    };
    let (tx, mut rx) = mpsc::unbounded();
    crate::inputs::every(&ctx, PING_EVERY, tx.clone(), || Input::Tick);
    crate::inputs::messages(&ctx, tx.clone(), Input::Net);
    // Pings run in their own task so that clients are answered meanwhile.
    let mut pinging = false;
    let mut last_ok = ctx.mono_now();
    loop {
        match rx.next().await {
            Some(Input::Pinged(ok)) => {
                pinging = false;
                if ok {
                    last_ok = ctx.mono_now();
                }
            }
            Some(Input::Net(m)) => {
                if m.body.is::<WhoIsPrimary>() {
                    ctx.reply(
                        &m,
                        PrimaryIs {
                            epoch,
                            node: primary,
                        },
                    )
                    .await;
                }
            }
            Some(Input::Tick) => {
                if ctx.mono_now().saturating_sub(last_ok) >= cfg.down_after {
                    if let Some(p) = failover(&ctx, &cfg, epoch, primary).await {
                        epoch += 1;
                        primary = p;
                        last_ok = ctx.mono_now();
                        let mut b = epoch.to_le_bytes().to_vec();
                        b.extend_from_slice(&primary.to_le_bytes());
                        let mut d = ctx.disk();
                        d.write(STATE, b);
                        d.fsync();
                    }
                }
                // Reconfigure every other data node (idempotent; reaches returning nodes).
                for n in cfg.data_nodes().filter(|&n| n != primary) {
                    ctx.send(n, Ctl::Follow { epoch, primary }).await;
                }
                if !pinging {
                    pinging = true;
                    let (c, p, timeout) = (ctx.clone(), primary, cfg.timeout);
                    let tx = tx.clone();
                    madsim::task::spawn_local(async move {
                        let ok = matches!(
                            c.call::<Ctl, Ctl>(p, Ctl::Ping, timeout).await,
                            Ok(Ctl::Pong { .. })
                        );
                        let _ = tx.unbounded_send(Input::Pinged(ok));
                    });
                }
            }
            None => return,
        }
    }
}

/// Promotes a reachable replica to primary in epoch `epoch + 1`; `None` when none answered.
async fn failover(
    ctx: &NodeCtx,
    cfg: &RedisFailover,
    epoch: u64,
    primary: NodeId,
) -> Option<NodeId> {
    let mut reachable: Vec<(u64, NodeId)> = Vec::new();
    for n in cfg.data_nodes().filter(|&n| n != primary) {
        if let Ok(Ctl::Pong { offset, .. }) = ctx.call::<Ctl, Ctl>(n, Ctl::Ping, cfg.timeout).await
        {
            reachable.push((offset, n));
        }
    }
    let chosen = match cfg.promote {
        // Largest offset; among equals the lowest node id (Sentinel breaks ties by run id).
        Promote::MostUpToDate => reachable
            .iter()
            .max_by_key(|&&(o, n)| (o, std::cmp::Reverse(n)))
            .map(|&(_, n)| n)?,
        Promote::Any => reachable.choose(&mut *ctx.rng()).map(|&(_, n)| n)?,
    };
    match ctx
        .call::<Ctl, Ctl>(chosen, Ctl::Promote { epoch: epoch + 1 }, cfg.timeout)
        .await
    {
        Ok(Ctl::Pong { primary: true, .. }) => Some(chosen),
        _ => None,
    }
}
