//! The client workload (docs/design.md §5): each client loops
//! acquire → (hold: check validity → local work → write the resource → …) → release,
//! with its own settings ([`locksim_core::Workload::client`]). A client whose acquire failed
//! retries the same lock after a random delay, as a waiter does. What happens while it holds
//! the lock — renewal, renew deadline, step-down — is [`crate::holder`]'s.

use std::sync::Arc;

use locksim_core::draw::{Backoff, WorkloadDraws};
use locksim_core::history::{Deadline, EventKind, OpF, Phase};

use crate::ctx::NodeCtx;
use crate::holder::hold;
use crate::protocol::{LockAlgorithm, Outcome, Validity};
use crate::world::Task;

/// One operation's events in the history (an invoke and its completion share an op id).
pub(crate) struct OpRec<'a> {
    pub(crate) ctx: &'a NodeCtx,
    pub(crate) op: u64,
    pub(crate) f: OpF,
    pub(crate) key: u32,
    pub(crate) handle: Option<u64>,
    pub(crate) token: Option<u64>,
}

impl<'a> OpRec<'a> {
    pub(crate) fn start(
        ctx: &'a NodeCtx,
        f: OpF,
        key: u32,
        handle: Option<u64>,
        token: Option<u64>,
    ) -> Self {
        let op = ctx.world().new_op();
        OpRec {
            ctx,
            op,
            f,
            key,
            handle,
            token,
        }
    }
    pub(crate) fn invoke(
        ctx: &'a NodeCtx,
        f: OpF,
        key: u32,
        handle: Option<u64>,
        token: Option<u64>,
    ) -> Self {
        let r = OpRec::start(ctx, f, key, handle, token);
        r.emit(Phase::Invoke, None, None);
        r
    }
    pub(crate) fn emit(&self, phase: Phase, deadline: Option<Validity>, error: Option<String>) {
        self.emit_full(phase, deadline, error, None);
    }
    pub(crate) fn emit_value(&self, phase: Phase, value: u64) {
        self.emit_full(phase, None, None, Some(value));
    }
    fn emit_full(
        &self,
        phase: Phase,
        deadline: Option<Validity>,
        error: Option<String>,
        value: Option<u64>,
    ) {
        self.ctx.record(EventKind::Op {
            op: self.op,
            phase,
            f: self.f,
            key: self.key,
            handle: self.handle,
            token: self.token,
            deadline: deadline.map(|v| Deadline {
                clock: v.clock,
                local: v.until,
                at: 0,
            }),
            error,
            value,
        });
    }
    pub(crate) fn outcome<T>(&self, o: &Outcome<T>, deadline: Option<Validity>) {
        match o {
            Outcome::Ok(_) => self.emit(Phase::Ok, deadline, None),
            Outcome::Fail(e) | Outcome::NotSent(e) => self.emit(Phase::Fail, None, Some(e.clone())),
            Outcome::Unknown(e) => self.emit(Phase::Info, None, Some(e.clone())),
        }
    }
}

/// Runs one client process until the workload's duration has passed.
pub async fn client_main(ctx: NodeCtx, algo: Arc<dyn LockAlgorithm>) {
    let w = ctx.world().workload.clone();
    let me = w.client(ctx.id() - ctx.cluster().servers + 1);
    let client = algo.client(ctx.clone());
    // One derivation with real mode: seed N of a real run draws the same.
    let mut rng = WorkloadDraws::new(ctx.world().seed, ctx.id(), ctx.incarnation());
    let mut think = true;
    let mut key = 0;
    let mut backoff = Backoff::default();
    while ctx.world().now() < me.duration {
        // A stalled workload (a `pause` with `task = work`) starts no round.
        ctx.checkpoint(Task::Work).await;
        if think {
            let d = rng.think(&w);
            ctx.sleep(d).await;
        }
        // A new round picks a lock; a waiter whose acquire failed asks for the same one again
        // (the draw is made either way, so the random stream does not depend on it).
        let drawn = rng.key(&w);
        if think {
            key = drawn;
        }
        let acq = OpRec::invoke(&ctx, OpF::Acquire, key, None, None);
        let outcome = client.acquire(key, me.ttl).await;
        match outcome {
            Outcome::Ok(grant) => {
                let handle = ctx.world().new_handle();
                let ok = OpRec {
                    handle: Some(handle),
                    token: grant.token,
                    ..acq
                };
                ok.emit(Phase::Ok, grant.valid_until, None);
                hold(&ctx, &client, &grant, handle, &mut rng, &me, &w).await;
                backoff.reset();
                think = true;
            }
            other => {
                acq.outcome(&other, None);
                let (delay, give_up) = backoff.after_failure(&mut rng, &w, me.retry);
                ctx.sleep(delay).await;
                // A round given up starts anew, after its think time.
                think = give_up;
            }
        }
    }
    // A client with a shorter duration of its own stays up (its library's background tasks
    // go on) until the workload's end, when every client process exits.
    if me.duration < w.duration {
        let end = ctx.world().instant(w.duration);
        madsim::time::sleep_until(end).await;
    }
}
