//! The plug-in trait used from outside `locksim-algos`: a deliberately broken "lock" that
//! grants everyone, and a careless one that forgets validity. The checkers must catch both.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use locksim_core::{FaultKind, Property, Workload};
use locksim_explore::{check_scenario, run_campaign, CampaignSpec, Setup};
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
    assert_eq!(cells[0].s1_violations, 8);
    assert_eq!(cells[0].errors, 0);
}
