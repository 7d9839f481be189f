//! `LOCKSIM_CHECK_DETERMINISM=1` runs every seed twice more and compares the event digests: a
//! deterministic algorithm passes, one whose behaviour leaks state between runs (here a
//! process-wide counter) is caught. The only test in its binary, since it sets the variable.

use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use custom_lock::TinyLease;
use locksim_explore::core::FaultKind;
use locksim_explore::sim::{
    async_trait, Grant, LockAlgorithm, LockClient, NodeCtx, Outcome, Validity,
};
use locksim_explore::testing::Campaign;

/// Counts acquires over the whole process: a run's behaviour depends on the runs before it.
static ACQUIRES: AtomicU64 = AtomicU64::new(0);

/// `tiny-lease` whose every third acquire (process-wide) fails without asking the server.
struct Leaky(TinyLease);

struct LeakyClient(Rc<dyn LockClient>);

#[async_trait(?Send)]
impl LockClient for LeakyClient {
    async fn acquire(&self, key: u32, ttl: u64) -> Outcome<Grant> {
        if ACQUIRES.fetch_add(1, Ordering::Relaxed).is_multiple_of(3) {
            return Outcome::Fail("leaky".into());
        }
        self.0.acquire(key, ttl).await
    }
    async fn release(&self, grant: &Grant) -> Outcome<()> {
        self.0.release(grant).await
    }
    async fn extend(&self, grant: &Grant, ttl: u64) -> Outcome<Option<Validity>> {
        self.0.extend(grant, ttl).await
    }
}

#[async_trait(?Send)]
impl LockAlgorithm for Leaky {
    fn name(&self) -> &str {
        "leaky-lease"
    }
    fn servers(&self) -> u32 {
        self.0.servers()
    }
    async fn serve(&self, ctx: NodeCtx) {
        self.0.serve(ctx).await
    }
    fn client(&self, ctx: NodeCtx) -> Rc<dyn LockClient> {
        Rc::new(LeakyClient(self.0.client(ctx)))
    }
}

#[test]
fn check_determinism_passes_tiny_lease_and_catches_a_leaky_one() {
    std::env::set_var("LOCKSIM_CHECK_DETERMINISM", "1");
    std::env::set_var("LOCKSIM_SEEDS", "8");
    std::env::set_var("LOCKSIM_JOBS", "2");
    // Fault-free: this test is about determinism, and over TCP a partition's held-back write
    // can land after the next holder's (S2), which tests/campaign.rs expects.
    Campaign::new(Arc::new(TinyLease::careful()))
        .faults(&[FaultKind::None])
        .expect_safe();
    let failure = std::panic::catch_unwind(|| {
        Campaign::new(Arc::new(Leaky(TinyLease::careful())))
            .faults(&[FaultKind::None])
            .expect_safe()
    })
    .expect_err("a leaky algorithm must fail the determinism check");
    let msg = failure
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(
        msg.contains("leaky-lease is not deterministic: seed "),
        "{msg}"
    );
    assert!(msg.contains("LOCKSIM_CHECK_DETERMINISM=1"), "{msg}");
}
