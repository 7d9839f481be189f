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
