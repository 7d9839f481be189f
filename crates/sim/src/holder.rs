//! What a client does while it holds a lock (docs/design.md §5), shared by every algorithm:
//!
//! - **the work**: before each write it checks its remaining validity (a careful client) and
//!   gives the lock up when the planned work would outlast it; the local work is an `.await`
//!   between that check and the write, so a pause there makes the write late;
//! - **renewal** (`renew_every`): a task beside the work extends the lease on that period; the
//!   validity each successful `extend` returns becomes the grant's deadline. After a renewal
//!   without an answer it retries every `renew_every / 3` until the lease would end, or gives
//!   up at once (`renew_retry = give-up`, a common client bug); "the lock is gone" ends the hold;
//! - **renew deadline** (`renew_deadline`, client-go's `RenewDeadline`): when no renewal has
//!   succeeded for that long on the client's monotonic clock, counted from the send time of
//!   the last successful renewal, or before the first one from the grant (the acquire's `ok`:
//!   client-go starts its first `RenewDeadline` when it has acquired; counting from the
//!   acquire's send would make a holder whose acquire waited in a queue — raft-lease's
//!   `lock_wait`, zookeeper, consul-session — longer than the deadline give its grant up on
//!   arrival), the holder stops acting;
//! - **step-down** (`step_down`): once it has learned the lock is lost (any of the above, or a
//!   fenced write), the holder keeps acting for that long before it stops — slow shutdown
//!   hooks, in-flight work — and the hold lasts until it really stops (its late writes count).
//!
//! - **work after release** (`work_after_release`): after it invoked its release, the holder
//!   keeps working and writing under the released grant for that long (a leader whose work
//!   drains after client-go's `ReleaseOnCancel` gave the Lease back); its writes are late acts.
//!
//! Every step of the work and of the renewal task passes a [`NodeCtx::checkpoint`], so a
//! `pause` fault with `task = work` or `task = renewal` stalls just that task.

use std::cell::Cell;
use std::rc::Rc;

use locksim_core::draw::WorkloadDraws;
use locksim_core::history::{EventKind, LostCause, OpF, Phase};
use locksim_core::time::fmt_nanos;
use locksim_core::{ClientParams, RenewRetry, Workload};

use crate::ctx::NodeCtx;
use crate::protocol::{Grant, LockClient, Outcome, Validity};
use crate::resource::{WriteReq, WriteResp};
use crate::workload::OpRec;
use crate::world::Task;

/// What the work and the renewal task of one hold share.
struct HoldState {
    /// The grant's current validity deadline (moved by each successful renewal); `None` when
    /// the algorithm tracks none.
    deadline: Cell<Option<Validity>>,
    /// Monotonic reading at which the client learned it lost the lock, if it has.
    lost_at: Cell<Option<u64>>,
    /// Monotonic reading the renew deadline counts from: the send of the last successful
    /// renewal, or the grant (the acquire's `ok`) before the first.
    renewed_sent: Cell<u64>,
}

impl HoldState {
    /// Records that the client learned it lost the lock (the first time only).
    fn lose(&self, ctx: &NodeCtx, key: u32, handle: u64, reason: String) {
        if self.lost_at.get().is_none() {
            self.lost_at.set(Some(ctx.mono_now()));
            ctx.record(EventKind::Lost {
                key,
                handle,
                reason,
            });
        }
    }

    /// `true` once the client has learned of the loss and its step-down time has passed.
    fn stopped(&self, ctx: &NodeCtx, step_down: u64) -> bool {
        self.lost_at
            .get()
            .is_some_and(|t| ctx.mono_now() >= t.saturating_add(step_down))
    }
}

/// Holds `grant` (granted as lock handle `handle` just now, at the acquire's `ok`): does the
/// work, renews, steps down, then releases.
pub(crate) async fn hold(
    ctx: &NodeCtx,
    client: &Rc<dyn LockClient>,
    grant: &Grant,
    handle: u64,
    rng: &mut WorkloadDraws,
    me: &ClientParams,
    w: &Workload,
) {
    let (key, token) = (grant.key, grant.token);
    let state = Rc::new(HoldState {
        deadline: Cell::new(grant.valid_until),
        lost_at: Cell::new(None),
        renewed_sent: Cell::new(ctx.mono_now()),
    });
    let renewal = me.renew_every.map(|every| {
        let (ctx, client, grant, state, me) = (
            ctx.clone(),
            client.clone(),
            grant.clone(),
            state.clone(),
            *me,
        );
        madsim::task::spawn_local(async move {
            renew(&ctx, &client, &grant, handle, every, &state, &me).await;
        })
    });
    let deadline_watch = me.renew_deadline.map(|limit| {
        let (ctx, state) = (ctx.clone(), state.clone());
        madsim::task::spawn_local(async move {
            watch_renew_deadline(&ctx, key, handle, limit, &state).await;
        })
    });
    for i in 0..me.writes_per_hold {
        ctx.checkpoint(Task::Work).await;
        if state.stopped(ctx, me.step_down) {
            break;
        }
        let work = rng.work(me);
        if let (true, None, Some(v)) = (w.check_validity, state.lost_at.get(), state.deadline.get())
        {
            let now = ctx.now(v.clock);
            if now.saturating_add(work as i64) >= v.until {
                let left = v.until as i128 - now as i128;
                state.lose(
                    ctx,
                    key,
                    handle,
                    format!(
                        "{}: {} left, {} of work planned",
                        LostCause::ValidityCheck.prefix(),
                        fmt_nanos(left),
                        fmt_nanos(work as i128)
                    ),
                );
                if state.stopped(ctx, me.step_down) {
                    break;
                }
            }
        }
        // The `.await` between the validity check and the write: a pause here is a GC pause.
        ctx.sleep(work).await;
        ctx.checkpoint(Task::Work).await;
        if state.stopped(ctx, me.step_down) {
            break;
        }
        // The service's word, if the client asks for it (LockClient::check_held): the write
        // below still comes a round trip after the answer.
        if state.lost_at.get().is_none() {
            if let Some(answer) = client.check_held(grant).await {
                if let Err(why) = answer {
                    let why = format!("{}: {why}", LostCause::HeldCheck.prefix());
                    state.lose(ctx, key, handle, why);
                }
                // A pause here falls between the answer and the write.
                ctx.checkpoint(Task::Work).await;
                if state.stopped(ctx, me.step_down) {
                    break;
                }
            }
        }
        if let Some(why) = write(ctx, key, handle, token, i, w).await {
            state.lose(ctx, key, handle, why);
            if state.stopped(ctx, me.step_down) {
                break;
            }
        }
    }
    for task in [renewal, deadline_watch].into_iter().flatten() {
        task.abort();
    }
    ctx.checkpoint(Task::Work).await;
    let rel = OpRec::invoke(ctx, OpF::Release, key, Some(handle), token);
    let released = ctx.mono_now();
    let o = client.release(grant).await;
    rel.outcome(&o, None);
    if me.work_after_release > 0 && !state.stopped(ctx, me.step_down) {
        drain(ctx, grant, handle, rng, me, w, released).await;
    }
}

/// Work that goes on after the holder's own release (`work_after_release`): work, then a write
/// under the released grant, while the write would still start within the window counted from
/// the release's invoke (`released`, a monotonic reading). A fenced write ends it.
async fn drain(
    ctx: &NodeCtx,
    grant: &Grant,
    handle: u64,
    rng: &mut WorkloadDraws,
    me: &ClientParams,
    w: &Workload,
    released: u64,
) {
    let until = released.saturating_add(me.work_after_release);
    for i in me.writes_per_hold.. {
        let work = rng.work(me);
        if ctx.mono_now().saturating_add(work) > until {
            return;
        }
        ctx.sleep(work).await;
        ctx.checkpoint(Task::Work).await;
        if write(ctx, grant.key, handle, grant.token, i, w)
            .await
            .is_some()
        {
            return;
        }
    }
}

/// The `i`-th resource write under lock handle `handle` (from 0); `Some(why)` when the
/// resource refused its fencing token.
async fn write(
    ctx: &NodeCtx,
    key: u32,
    handle: u64,
    token: Option<u64>,
    i: u32,
    w: &Workload,
) -> Option<String> {
    // A value unique in the run, never 0: the handle and the write's number under it.
    let value = (handle << 16) | (i as u64 + 1);
    let wr = OpRec::start(ctx, OpF::Write, key, Some(handle), token);
    wr.emit_value(Phase::Invoke, value);
    let resource = ctx.cluster().resource_id();
    let req = WriteReq {
        key,
        handle,
        token,
        value,
    };
    match ctx
        .call::<WriteReq, WriteResp>(resource, req, w.rpc_timeout)
        .await
    {
        Ok(WriteResp::Accepted { previous }) => wr.emit_value(Phase::Ok, previous),
        Ok(WriteResp::Fenced { highest }) => {
            let why = format!("{}: token below {highest}", LostCause::Fenced.prefix());
            wr.emit(Phase::Fail, None, Some(why.clone()));
            return Some(why);
        }
        Err(e) if e.maybe_delivered() => wr.emit(Phase::Info, None, Some(e.to_string())),
        Err(e) => wr.emit(Phase::Fail, None, Some(e.to_string())),
    }
    None
}

/// The renewal task: extends the lease every `every` ns until the hold ends.
async fn renew(
    ctx: &NodeCtx,
    client: &Rc<dyn LockClient>,
    grant: &Grant,
    handle: u64,
    every: u64,
    state: &HoldState,
    me: &ClientParams,
) {
    let (key, token) = (grant.key, grant.token);
    let mut wait = every;
    loop {
        ctx.sleep(wait).await;
        ctx.checkpoint(Task::Renewal).await;
        if state.lost_at.get().is_some() {
            return;
        }
        let sent = ctx.mono_now();
        let ext = OpRec::invoke(ctx, OpF::Extend, key, Some(handle), token);
        let o = client.extend(grant, me.ttl).await;
        match &o {
            Outcome::Ok(v) => {
                ext.outcome(&o, *v);
                state.deadline.set(*v);
                state.renewed_sent.set(sent);
                wait = every;
            }
            Outcome::Fail(e) => {
                ext.outcome(&o, None);
                state.lose(
                    ctx,
                    key,
                    handle,
                    format!("{}: {e}", LostCause::RenewalFailed.prefix()),
                );
                return;
            }
            // A renewal that never left (under tcp: no connection by its timeout) says
            // nothing about the lock: it is retried like an unanswered one.
            Outcome::NotSent(_) | Outcome::Unknown(_) => {
                ext.outcome(&o, None);
                if me.renew_retry == RenewRetry::GiveUp {
                    return;
                }
                // Until the lease would end: a renewal after that could not save it.
                if let Some(v) = state.deadline.get() {
                    if ctx.now(v.clock) >= v.until {
                        return;
                    }
                }
                wait = (every / 3).max(1);
            }
        }
    }
}

/// Ends the hold when no renewal has succeeded for `limit` ns of the client's monotonic clock.
async fn watch_renew_deadline(ctx: &NodeCtx, key: u32, handle: u64, limit: u64, state: &HoldState) {
    loop {
        let since = state.renewed_sent.get();
        ctx.sleep_until_mono(since.saturating_add(limit)).await;
        if state.lost_at.get().is_some() {
            return;
        }
        if state.renewed_sent.get() == since {
            state.lose(
                ctx,
                key,
                handle,
                format!(
                    "{}: no renewal succeeded for {}",
                    LostCause::RenewDeadline.prefix(),
                    fmt_nanos(limit as i128)
                ),
            );
            return;
        }
    }
}
