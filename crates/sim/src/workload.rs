//! The client workload (DESIGN §5): each client loops
//! acquire → check validity → local work (an `.await`) → write the resource → … → release.
//!
//! The local work sits *between* the validity check and the write, as it does in real code
//! (a query, a computation, a GC): a pause that lands there makes the client write after its
//! grant has expired, which is how process pauses break leases.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;

use locksim_core::history::{Deadline, EventKind, OpF, Phase};
use locksim_core::time::fmt_nanos;
use locksim_core::Workload;
use rand::Rng;

use crate::ctx::NodeCtx;
use crate::protocol::{Grant, LockAlgorithm, LockClient, Outcome, Validity};
use crate::resource::{WriteReq, WriteResp};
use crate::world::{stream, Stream};

struct OpRec<'a> {
    ctx: &'a NodeCtx,
    op: u64,
    f: OpF,
    key: u32,
    handle: Option<u64>,
    token: Option<u64>,
}

impl<'a> OpRec<'a> {
    fn start(ctx: &'a NodeCtx, f: OpF, key: u32, handle: Option<u64>, token: Option<u64>) -> Self {
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
    fn invoke(ctx: &'a NodeCtx, f: OpF, key: u32, handle: Option<u64>, token: Option<u64>) -> Self {
        let op = ctx.world().new_op();
        let r = OpRec {
            ctx,
            op,
            f,
            key,
            handle,
            token,
        };
        r.emit(Phase::Invoke, None, None);
        r
    }
    fn emit(&self, phase: Phase, deadline: Option<Validity>, error: Option<String>) {
        self.emit_full(phase, deadline, error, None);
    }
    fn emit_value(&self, phase: Phase, value: u64) {
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
    fn outcome<T>(&self, o: &Outcome<T>, deadline: Option<Validity>) {
        match o {
            Outcome::Ok(_) => self.emit(Phase::Ok, deadline, None),
            Outcome::Fail(e) => self.emit(Phase::Fail, None, Some(e.clone())),
            Outcome::Unknown(e) => self.emit(Phase::Info, None, Some(e.clone())),
        }
    }
}

/// Runs one client process until the workload's duration has passed.
pub async fn client_main(ctx: NodeCtx, algo: Arc<dyn LockAlgorithm>) {
    let w = ctx.world().workload.clone();
    let client = algo.client(ctx.clone());
    let mut rng = stream(
        ctx.world().seed,
        Stream::Workload,
        ((ctx.id() as u64) << 16) | ctx.incarnation() as u64,
    );
    let mut think = true;
    while ctx.world().now() < w.duration {
        if think {
            let d = rng.gen_range(0..=w.think_max);
            ctx.sleep(d).await;
        }
        let key = rng.gen_range(0..w.keys.max(1));
        let acq = OpRec::invoke(&ctx, OpF::Acquire, key, None, None);
        let outcome = client.acquire(key, w.ttl).await;
        match outcome {
            Outcome::Ok(grant) => {
                let handle = ctx.world().new_handle();
                // A renewing client (a watchdog) trusts its grant until it releases it.
                let deadline = if w.renew_every.is_some() {
                    None
                } else {
                    grant.valid_until
                };
                let ok = OpRec {
                    handle: Some(handle),
                    token: grant.token,
                    ..acq
                };
                ok.emit(Phase::Ok, deadline, None);
                hold(&ctx, &client, &grant, handle, deadline, &mut rng, &w).await;
                think = true;
            }
            other => {
                acq.outcome(&other, None);
                let delay = rng.gen_range(0..=w.retry_delay_max);
                ctx.sleep(delay).await;
                think = false;
            }
        }
    }
}

async fn hold(
    ctx: &NodeCtx,
    client: &Rc<dyn LockClient>,
    grant: &Grant,
    handle: u64,
    deadline: Option<Validity>,
    rng: &mut impl Rng,
    w: &Workload,
) {
    let (key, token) = (grant.key, grant.token);
    let lost = Rc::new(Cell::new(false));
    let watchdog = w.renew_every.map(|every| {
        let (ctx, client, grant, lost, ttl) = (
            ctx.clone(),
            client.clone(),
            grant.clone(),
            lost.clone(),
            w.ttl,
        );
        madsim::task::spawn_local(async move {
            loop {
                ctx.sleep(every).await;
                let ext = OpRec::invoke(&ctx, OpF::Extend, key, Some(handle), token);
                let o = client.extend(&grant, ttl).await;
                ext.outcome(&o, None);
                if let Outcome::Fail(e) = o {
                    ctx.record(EventKind::Lost {
                        key,
                        handle,
                        reason: format!("renewal failed: {e}"),
                    });
                    lost.set(true);
                    return;
                }
            }
        })
    });
    for i in 0..w.writes_per_hold {
        if lost.get() {
            break;
        }
        let work = rng.gen_range(w.work_min..=w.work_max.max(w.work_min));
        if let (true, Some(v)) = (w.check_validity, deadline) {
            let now = ctx.now(v.clock);
            if now.saturating_add(work as i64) >= v.until {
                let left = v.until as i128 - now as i128;
                ctx.record(EventKind::Lost {
                    key,
                    handle,
                    reason: format!(
                        "validity check: {} left, {} of work planned",
                        fmt_nanos(left),
                        fmt_nanos(work as i128)
                    ),
                });
                break;
            }
        }
        // The `.await` between the validity check and the write: a pause here is a GC pause.
        ctx.sleep(work).await;
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
                let why = format!("fenced: token below {highest}");
                wr.emit(Phase::Fail, None, Some(why.clone()));
                ctx.record(EventKind::Lost {
                    key,
                    handle,
                    reason: why,
                });
                break;
            }
            Err(e) => wr.emit(Phase::Info, None, Some(e.to_string())),
        }
    }
    if let Some(h) = watchdog {
        h.abort();
    }
    let rel = OpRec::invoke(ctx, OpF::Release, key, Some(handle), token);
    let o = client.release(grant).await;
    rel.outcome(&o, None);
}
