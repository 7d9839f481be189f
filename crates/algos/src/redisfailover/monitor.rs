//! The Sentinel-like monitor of `redis-failover`: pings every data node, promotes a replica
//! after the primary has not answered for `down_after`, reconfigures the replicas it can
//! reach, and tells clients which node is the primary.
//!
//! What a node that was down (paused, cut off, crashed) receives from it when it returns,
//! as Redis Sentinel does it (redis `src/sentinel.c`, 7.x):
//! - **Nothing while it is down.** The reconfiguration of a failover (`REPLICAOF` to each
//!   replica, `sentinelFailoverReconfNextSlave`) goes to the replicas the monitor can reach;
//!   the failed primary gets none. A paused process therefore finds no `REPLICAOF` queued
//!   when it resumes: it resumes as a primary and grants to the clients that still use it.
//! - **A returning old primary is converted after about ten seconds**
//!   (`sentinelRefreshInstanceInfo`, "A slave turned into a master"): after the failover the
//!   old primary is one of the new primary's replicas in the monitor's table, a fresh entry
//!   whose reported role is "replica" and whose `INFO` has never been read. Its first `INFO`
//!   answer reports "primary" and sets `role_reported_time`; `REPLICAOF` is sent only at a
//!   later `INFO` (every `SENTINEL_INFO_PERIOD`, 10 s, for a replica) when the role has been
//!   reported for more than `SENTINEL_PUBLISH_PERIOD * 4` (8 s), the node has not been
//!   subjectively down for 8 s (`sentinelRedisInstanceNoDownFor`, counted from when the
//!   last down began) and the new primary looks sane (`sentinelMasterLooksSane`). Measured
//!   on Redis 7.0 Sentinel: the demotion came 10–11 s after the old primary resumed.
//! - **A replica that missed the failover** (down at the time) keeps following the old
//!   primary until `+fix-slave-config`, which waits for the failover timeout
//!   (`SENTINEL_DEFAULT_FAILOVER_TIMEOUT`, 3 min) in the same way.
//! - A replica reachable at the failover gets its `REPLICAOF` then; over the datagram
//!   network the monitor sends it again on each answer that shows it still following
//!   another node, as TCP would retransmit the one command Sentinel sends.

use std::collections::BTreeMap;

use futures_channel::mpsc;
use futures_util::StreamExt;
use locksim_core::{Nanos, NodeId};
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
const PING_EVERY: Nanos = 100_000_000;
/// How often a replica's role is read (`SENTINEL_INFO_PERIOD`, 10 000 ms), ns.
pub(crate) const INFO_PERIOD: Nanos = 10_000_000_000;
/// How long a wrong role must have been reported, and the node up, before the monitor
/// converts it (`SENTINEL_PUBLISH_PERIOD * 4`, 2 000 ms × 4), ns.
pub(crate) const CONVERT_WAIT: Nanos = 8_000_000_000;
/// How often a replica's INFO is read while a failover is in progress (1 000 ms in
/// `sentinelSendPeriodicCommands`), ns: the promotion is seen one period after the failover
/// starts (the INFO read at its start is the one before).
pub(crate) const FAILOVER_INFO_PERIOD: Nanos = 1_000_000_000;
/// How long a replica following the wrong primary is left alone before `+fix-slave-config`
/// (`SENTINEL_DEFAULT_FAILOVER_TIMEOUT`, 3 min), ns.
pub(crate) const FAILOVER_TIMEOUT: Nanos = 180_000_000_000;

/// One answer to a ping: the node's role and whom it follows.
#[derive(Debug, Clone, Copy)]
struct Report {
    primary: bool,
    follows: NodeId,
}

enum Input {
    Net(Incoming),
    Tick,
    /// A ping of a data node ended: answered (with its report) or not.
    Pinged(NodeId, Option<Report>),
}

/// The monitor's view of one data node (a `sentinelRedisInstance`), monotonic readings, ns.
#[derive(Debug, Clone)]
pub(crate) struct Instance {
    /// The last answered ping (`last_avail_time`); a new entry counts from its creation.
    last_ok: Nanos,
    /// When the last subjective down began (`s_down_since_time`, kept after the node
    /// returns); `None`: never down since the entry was made.
    down_since: Option<Nanos>,
    /// Is it down now (`SRI_S_DOWN`)?
    down: bool,
    /// When its role was last read (`info_refresh`); `None`: never.
    info_at: Option<Nanos>,
    /// The role it last reported (`role_reported`) and since when (`role_reported_time`).
    reported_primary: bool,
    reported_at: Nanos,
    /// A failover's `REPLICAOF` is owed to it (sent, not yet seen to take).
    reconf: bool,
    pinging: bool,
}

impl Instance {
    /// A fresh entry, as Sentinel makes one at its start and for every replica when a
    /// failover switches to the new primary (`createSentinelRedisInstance`): its role is
    /// the expected one, reported `now`.
    pub(crate) fn new(primary: bool, now: Nanos) -> Self {
        Instance {
            last_ok: now,
            down_since: None,
            down: false,
            info_at: None,
            reported_primary: primary,
            reported_at: now,
            reconf: false,
            pinging: false,
        }
    }

    /// `sentinelRedisInstanceNoDownFor`: not down, and the last down began more than `ms`
    /// ago (or never happened).
    fn no_down_for(&self, now: Nanos, wait: Nanos) -> bool {
        !self.down && self.down_since.is_none_or(|t| now.saturating_sub(t) > wait)
    }

    /// Marks the node down once it has not answered for `down_after`
    /// (`sentinelCheckSubjectivelyDown`).
    fn check_down(&mut self, now: Nanos, down_after: Nanos) {
        if !self.down && now.saturating_sub(self.last_ok) >= down_after {
            self.down = true;
            self.down_since = Some(now);
        }
    }
}

/// What the monitor does when a ping's answer comes back, as Sentinel does on `PING` and
/// `INFO` answers: the role is read when `INFO` is due, and a replica reporting the wrong
/// role or following the wrong primary is sent `REPLICAOF` only once Sentinel would.
/// `primary` is the monitor's primary, `primary_sane` whether it is up and reports its role.
/// Returns whether to send `n` a `REPLICAOF primary` now.
pub(crate) fn on_answer(
    e: &mut Instance,
    is_primary_node: bool,
    reported_primary: bool,
    follows_primary: bool,
    primary_sane: bool,
    now: Nanos,
) -> bool {
    e.last_ok = now;
    e.down = false;
    // A failover's REPLICAOF not yet taken: sent again (the retransmission of the one
    // command), until the replica follows the primary.
    if e.reconf && !is_primary_node {
        if !reported_primary && follows_primary {
            e.reconf = false;
        } else {
            return true;
        }
    }
    // The role is read only when INFO is due (`info_refresh`), and dated when it changes.
    if e.info_at
        .is_some_and(|t| now.saturating_sub(t) < INFO_PERIOD)
    {
        return false;
    }
    e.info_at = Some(now);
    if reported_primary != e.reported_primary {
        e.reported_primary = reported_primary;
        e.reported_at = now;
    }
    if is_primary_node {
        return false;
    }
    if reported_primary {
        // "A slave turned into a master": convert it once the role has stood for 8 s.
        primary_sane
            && e.no_down_for(now, CONVERT_WAIT)
            && now.saturating_sub(e.reported_at) > CONVERT_WAIT
    } else if !follows_primary {
        // "+fix-slave-config": a replica of another primary, after the failover timeout.
        primary_sane
            && e.no_down_for(now, FAILOVER_TIMEOUT)
            && now.saturating_sub(e.reported_at) > FAILOVER_TIMEOUT
    } else {
        false
    }
}

/// The monitor's table with a fresh entry for every data node, `primary` expected to lead:
/// at the monitor's start and at every switch to a new primary.
fn fresh_table(cfg: &RedisFailover, primary: NodeId, now: Nanos) -> BTreeMap<NodeId, Instance> {
    cfg.data_nodes()
        .map(|n| (n, Instance::new(n == primary, now)))
        .collect()
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
    let start = ctx.mono_now();
    // A promoted replica not yet seen promoted, and when its INFO will show it.
    let mut promoting: Option<(NodeId, Nanos)> = None;
    let mut table = fresh_table(&cfg, primary, start);
    loop {
        match rx.next().await {
            Some(Input::Pinged(n, report)) => {
                let now = ctx.mono_now();
                table.get_mut(&n).expect("a data node").pinging = false;
                let Some(r) = report else { continue };
                let sane = table.get(&primary).is_some_and(|p| !p.down);
                let e = table.get_mut(&n).expect("a data node");
                if on_answer(e, n == primary, r.primary, r.follows == primary, sane, now) {
                    ctx.send(n, Ctl::Follow { epoch, primary }).await;
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
                let now = ctx.mono_now();
                for e in table.values_mut() {
                    e.check_down(now, cfg.down_after);
                }
                // A promotion is seen at the promoted replica's next INFO (every second
                // during a failover: `+promoted-slave`); until then clients are told the old
                // primary, as `SENTINEL get-master-addr-by-name` does before the failover
                // reaches its reconfiguration state.
                if let Some((p, seen_at)) = promoting {
                    if now >= seen_at {
                        promoting = None;
                        epoch += 1;
                        primary = p;
                        let mut b = epoch.to_le_bytes().to_vec();
                        b.extend_from_slice(&primary.to_le_bytes());
                        {
                            let mut d = ctx.disk();
                            d.write(STATE, b);
                            d.fsync();
                        }
                        // The switch to the new primary makes every entry anew
                        // (`sentinelResetMasterAndChangeAddress`); the replicas it can
                        // reach are sent REPLICAOF, the old primary and down replicas
                        // nothing.
                        let reachable: Vec<NodeId> = table
                            .iter()
                            .filter(|&(&n, e)| n != primary && !e.down)
                            .map(|(&n, _)| n)
                            .collect();
                        table = fresh_table(&cfg, primary, now);
                        for n in reachable {
                            table.get_mut(&n).expect("a data node").reconf = true;
                            ctx.send(n, Ctl::Follow { epoch, primary }).await;
                        }
                    }
                } else if table[&primary].down {
                    // Sentinel reads the replicas' INFO as the failover starts (their INFO
                    // period drops to 1 s) and sees the promotion at the next one: measured on
                    // Redis 7.0.15 Sentinel, `+promoted-slave` came 1.01-1.11 s after
                    // `+sdown` in 18 of 18 runs (primary SIGKILLed, `down_after` 1 s).
                    if let Some(p) = failover(&ctx, &cfg, epoch, primary).await {
                        promoting = Some((p, now + FAILOVER_INFO_PERIOD));
                    }
                }
                for (&n, e) in table.iter_mut().filter(|(_, e)| !e.pinging) {
                    e.pinging = true;
                    let (c, timeout, tx) = (ctx.clone(), cfg.timeout, tx.clone());
                    madsim::task::spawn_local(async move {
                        let report = match c.call::<Ctl, Ctl>(n, Ctl::Ping, timeout).await {
                            Ok(Ctl::Pong {
                                primary, follows, ..
                            }) => Some(Report { primary, follows }),
                            _ => None,
                        };
                        let _ = tx.unbounded_send(Input::Pinged(n, report));
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

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = 1_000_000_000;

    #[test]
    fn a_returning_old_primary_is_converted_only_at_an_info_eight_seconds_after_its_role() {
        // The failover made the old primary's entry anew at 2 s, expected a replica.
        let mut e = Instance::new(false, 2 * S);
        // It was paused: down at 3 s, resumes at 3.3 s and answers "primary".
        e.check_down(3 * S, S);
        assert!(e.down);
        let t0 = 3 * S + 300_000_000;
        assert!(!on_answer(&mut e, false, true, false, true, t0));
        // Answers in between read no INFO and send nothing.
        for k in 1..100 {
            assert!(!on_answer(
                &mut e,
                false,
                true,
                false,
                true,
                t0 + k * 100_000_000
            ));
        }
        // The next INFO, 10 s after the first, converts it.
        assert!(on_answer(
            &mut e,
            false,
            true,
            false,
            true,
            t0 + INFO_PERIOD
        ));
    }

    #[test]
    fn a_node_down_within_the_last_eight_seconds_is_not_converted() {
        let mut e = Instance::new(false, 0);
        assert!(!on_answer(&mut e, false, true, false, true, S));
        // Down again at 9.5 s, back at 10.5 s: at the 11 s INFO it was down 1.5 s ago.
        e.check_down(9 * S + 500_000_000, 0);
        assert!(!on_answer(&mut e, false, true, false, true, 11 * S));
        // And an insane primary stops it too.
        let mut e = Instance::new(false, 0);
        assert!(!on_answer(&mut e, false, true, false, false, S));
        assert!(!on_answer(&mut e, false, true, false, false, 11 * S + 1));
    }

    #[test]
    fn a_failovers_replicaof_is_sent_until_the_replica_follows() {
        let mut e = Instance::new(false, 0);
        e.reconf = true;
        assert!(on_answer(&mut e, false, false, false, true, S));
        assert!(!on_answer(&mut e, false, false, true, true, 2 * S));
        assert!(!e.reconf);
        // A replica of another primary waits for the failover timeout.
        assert!(!on_answer(&mut e, false, false, false, true, 12 * S));
    }
}
