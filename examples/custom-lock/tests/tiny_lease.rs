//! The tests a user writes for an algorithm of their own.

use std::sync::Arc;

use custom_lock::TinyLease;
use locksim_explore::core::{FaultKind, Property};
use locksim_explore::testing::Campaign;

#[test]
fn careful_clients_survive_partitions_and_message_loss() {
    Campaign::new(Arc::new(TinyLease::careful()))
        .seeds(0..40)
        .faults(&[FaultKind::None, FaultKind::Partition, FaultKind::Loss])
        .expect_safe();
}

#[test]
fn a_paused_holder_double_grants_even_when_careful() {
    // A lease cannot protect a client that is paused between its validity check and its write
    // (no fencing tokens here, so the resource accepts the stale write too: S2).
    Campaign::new(Arc::new(TinyLease::careful()))
        .seeds(0..40)
        .faults(&[FaultKind::Pause])
        .expect(&[Property::S1]) // some seed must violate S1
        .allow(&[Property::S2]) // either way
        .check(); // S3, S4 and L1–L3, unlisted, are forbidden
}
