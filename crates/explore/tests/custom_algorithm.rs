//! The plug-in trait used from outside `locksim-algos`, as a third party would: a deliberately
//! broken "lock" that grants everyone, and a careless lock — a real server with leases judged
//! on its own clock — whose client forgets to track its lease's validity. The checkers must
//! catch both, and must not blame the careless lock's server (S3 holds).

use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use locksim_core::{FaultKind, Property, Workload};
use locksim_explore::{check_scenario, run_campaign, CampaignSpec, Setup};
use locksim_sim::CallError;
use locksim_sim::{async_trait, Grant, LockAlgorithm, LockClient, NodeCtx, Outcome, Validity};

/// A "lock" that never says no: every acquire succeeds at once.
struct NoLock;

struct NoLockClient;

#[async_trait(?Send)]
impl LockClient for NoLockClient {
    async fn acquire(&self, key: u32, _ttl: u64) -> Outcome<Grant> {
        Outcome::Ok(Grant {
            key,
            token: None,
            valid_until: None,
            private: Rc::new(()),
        })
    }
    async fn release(&self, _grant: &Grant) -> Outcome<()> {
        Outcome::Ok(())
    }
    async fn extend(&self, _grant: &Grant, _ttl: u64) -> Outcome<Option<Validity>> {
        Outcome::Ok(None)
    }
}

#[async_trait(?Send)]
impl LockAlgorithm for NoLock {
    fn name(&self) -> &str {
        "no-lock"
    }
    fn servers(&self) -> u32 {
        1
    }
    async fn serve(&self, ctx: NodeCtx) {
        // A server that answers nothing: the clients never ask.
        loop {
            ctx.recv().await;
        }
    }
    fn client(&self, _ctx: NodeCtx) -> Rc<dyn LockClient> {
        Rc::new(NoLockClient)
    }
}

#[test]
fn the_checkers_catch_a_lock_that_grants_everyone() {
    let setup = Setup::custom(Arc::new(NoLock), BTreeMap::new(), 3, Workload::default());
    let out = check_scenario(&setup.scenario(0, &[FaultKind::None]), setup.algo.clone());
    assert!(out.verdict.violates(Property::S1), "{:#?}", out.verdict);
    assert!(out.verdict.violates(Property::S2), "{:#?}", out.verdict);
    // And in a campaign, every seed is caught.
    let cells = run_campaign(
        &CampaignSpec {
            setups: vec![setup],
            kinds: vec![FaultKind::None],
            first_seed: 0,
            seeds: 8,
            jobs: 2,
        },
        &|_, _| {},
    );
    assert_eq!(cells[0].violated(Property::S1), 8);
    assert_eq!(cells[0].errors, 0);
    // Its "service" records no grant: every seed is counted, for the table's warning.
    assert_eq!(cells[0].counts.runs_without_grant_records, 8);
}

/// A lock server that keeps one lease per key, judged on its monotonic clock; its client takes
/// the lock but never tracks how long the lease lasts.
struct CarelessLock {
    timeout: u64,
}

/// Requests and replies of the careless lock (any `Clone + Send + Sync + 'static` type works).
#[derive(Clone, Debug)]
enum Req {
    Acquire { key: u32, owner: u64, ttl: u64 },
    Release { key: u32, owner: u64 },
}

struct CarelessClient {
    ctx: NodeCtx,
    timeout: u64,
}

#[async_trait(?Send)]
impl LockClient for CarelessClient {
    async fn acquire(&self, key: u32, ttl: u64) -> Outcome<Grant> {
        let owner = self.ctx.id() as u64 * 1_000_000 + self.ctx.mono_now() % 1_000_000;
        // Servers are nodes 0..servers; `call` waits for a reply of the given type.
        match self
            .ctx
            .call::<Req, bool>(0, Req::Acquire { key, owner, ttl }, self.timeout)
            .await
        {
            // The careless part: no `valid_until`, so the client trusts the grant until it
            // releases, however long its work takes.
            Ok(true) => Outcome::Ok(Grant {
                key,
                token: None,
                valid_until: None,
                private: Rc::new(owner),
            }),
            Ok(false) => Outcome::Fail("held".into()),
            Err(CallError::Timeout) => Outcome::Unknown("timeout".into()),
            Err(e) => Outcome::Fail(e.to_string()),
        }
    }
    async fn release(&self, grant: &Grant) -> Outcome<()> {
        let owner = *grant.private.downcast_ref::<u64>().unwrap();
        match self
            .ctx
            .call::<Req, bool>(
                0,
                Req::Release {
                    key: grant.key,
                    owner,
                },
                self.timeout,
            )
            .await
        {
            Ok(true) => Outcome::Ok(()),
            Ok(false) => Outcome::Fail("not the owner".into()),
            Err(e) => Outcome::Unknown(e.to_string()),
        }
    }
    async fn extend(&self, _grant: &Grant, _ttl: u64) -> Outcome<Option<Validity>> {
        Outcome::Fail("not supported".into())
    }
}

#[async_trait(?Send)]
impl LockAlgorithm for CarelessLock {
    fn name(&self) -> &str {
        "careless"
    }
    fn servers(&self) -> u32 {
        1
    }
    async fn serve(&self, ctx: NodeCtx) {
        // key -> (owner, expiry on this node's monotonic clock); lost on a crash.
        let mut leases: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
        loop {
            let msg = ctx.recv().await;
            let Some(req) = msg.body.downcast_ref::<Req>() else {
                continue;
            };
            let now = ctx.mono_now();
            let live =
                |l: &BTreeMap<u32, (u64, u64)>, k: &u32| l.get(k).filter(|e| now < e.1).copied();
            let answer = match *req {
                Req::Acquire { key, owner, ttl } => match live(&leases, &key) {
                    Some(_) => false,
                    None => {
                        leases.insert(key, (owner, now + ttl));
                        true
                    }
                },
                Req::Release { key, owner } => match live(&leases, &key) {
                    Some((o, _)) if o == owner => leases.remove(&key).is_some(),
                    _ => false,
                },
            };
            ctx.reply(&msg, answer).await;
        }
    }
    fn client(&self, ctx: NodeCtx) -> Rc<dyn LockClient> {
        Rc::new(CarelessClient {
            ctx,
            timeout: self.timeout,
        })
    }
}

#[test]
fn the_checkers_catch_a_client_that_forgets_its_lease_but_clear_the_server() {
    // Work before each write can reach 500 ms, three writes a grant, leases of 1 s: a client
    // that does not check validity outlives its lease now and then, even without faults.
    let workload = Workload {
        writes_per_hold: 3,
        ..Workload::default()
    };
    let setup = Setup::custom(
        Arc::new(CarelessLock {
            timeout: 100_000_000,
        }),
        BTreeMap::new(),
        3,
        workload,
    );
    let cells = run_campaign(
        &CampaignSpec {
            setups: vec![setup],
            kinds: vec![FaultKind::None],
            first_seed: 0,
            seeds: 40,
            jobs: 2,
        },
        &|_, _| {},
    );
    let c = &cells[0];
    assert_eq!(c.errors, 0, "{c:?}");
    assert!(c.grants > 100, "{c:?}");
    assert!(c.violated(Property::S1) > 0, "{c:?}");
    assert_eq!(
        c.violated(Property::S3),
        0,
        "the server is a correct lease lock: {c:?}"
    );
}

/// A lock whose renewals never succeed: every `extend` answers `Fail` with the text a request
/// that never left reads as ("not connected (request not sent)") when `typed` is false — a
/// server's definite no that happens to read like the transport's — and `NotSent` when true.
struct UnrenewableLock {
    typed: bool,
}

struct UnrenewableClient {
    typed: bool,
}

#[async_trait(?Send)]
impl LockClient for UnrenewableClient {
    async fn acquire(&self, key: u32, _ttl: u64) -> Outcome<Grant> {
        Outcome::Ok(Grant {
            key,
            token: None,
            valid_until: None,
            private: Rc::new(()),
        })
    }
    async fn release(&self, _grant: &Grant) -> Outcome<()> {
        Outcome::Ok(())
    }
    async fn extend(&self, _grant: &Grant, _ttl: u64) -> Outcome<Option<Validity>> {
        if self.typed {
            Outcome::from_call(CallError::NotConnected)
        } else {
            Outcome::Fail(CallError::NotConnected.to_string())
        }
    }
}

#[async_trait(?Send)]
impl LockAlgorithm for UnrenewableLock {
    fn name(&self) -> &str {
        "unrenewable"
    }
    fn servers(&self) -> u32 {
        1
    }
    async fn serve(&self, ctx: NodeCtx) {
        loop {
            ctx.recv().await;
        }
    }
    fn client(&self, _ctx: NodeCtx) -> Rc<dyn LockClient> {
        Rc::new(UnrenewableClient { typed: self.typed })
    }
}

/// (renewal attempts, renewal losses, holds) of one client renewing every 50 ms through holds
/// of three writes (up to 500 ms of work each).
fn renewals(typed: bool) -> (usize, usize, usize) {
    use locksim_core::history::{EventKind, LostCause, OpF, Phase};
    let workload = Workload {
        writes_per_hold: 3,
        renew_every: Some(50_000_000),
        ..Workload::default()
    };
    let setup = Setup::custom(
        Arc::new(UnrenewableLock { typed }),
        BTreeMap::new(),
        1,
        workload,
    );
    let out = check_scenario(&setup.scenario(0, &[FaultKind::None]), setup.algo.clone());
    let h = out.history.expect("the simulation runs");
    let count = |f: OpF, p: Phase| {
        h.events
            .iter()
            .filter(|e| matches!(&e.kind, EventKind::Op { f: ef, phase, .. } if *ef == f && *phase == p))
            .count()
    };
    let lost = h
        .events
        .iter()
        .filter(|e| {
            matches!(&e.kind, EventKind::Lost { reason, .. }
                if LostCause::of(reason) == LostCause::RenewalFailed)
        })
        .count();
    (
        count(OpF::Extend, Phase::Invoke),
        lost,
        count(OpF::Acquire, Phase::Ok),
    )
}

#[test]
fn a_renewal_that_was_not_sent_is_retried_and_a_failed_one_ends_the_hold_whatever_its_text() {
    // Typed: a renewal that never left says nothing about the lock, so it is retried (every
    // renew_every / 3) and nothing is lost. Before the reason was typed, the holder told the
    // two apart by the text alone, so an algorithm's `Fail` reading "not connected (request
    // not sent)" was retried too.
    let (attempts, lost, holds) = renewals(true);
    assert!(holds > 3, "{holds} holds");
    assert_eq!(lost, 0, "a renewal that was not sent ended a hold");
    assert!(
        attempts > 2 * holds,
        "{attempts} renewal attempts over {holds} holds: not retried"
    );
    // A definite `Fail` ends the hold at once: one renewal attempt and one loss per hold
    // (the last hold may end with the run before its first renewal).
    let (attempts, lost, holds) = renewals(false);
    assert!(holds > 3, "{holds} holds");
    assert!(
        lost + 1 >= holds && lost <= holds,
        "{lost} losses in {holds} holds"
    );
    assert_eq!(attempts, lost, "a failed renewal was retried");
}
