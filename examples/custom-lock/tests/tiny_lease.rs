//! The tests a user writes for an algorithm of their own.

use std::sync::Arc;

use custom_lock::TinyLease;
use locksim_explore::core::{FaultKind, Property};
use locksim_explore::testing::Campaign;

#[test]
fn careful_clients_never_double_grant_under_partitions_and_message_loss() {
    // No lease is granted twice, but over TCP a write that a partition or loss held back is
    // retransmitted and lands after the next holder's: without fencing tokens that is a stale
    // write (S2), Kleppmann's delayed packet.
    Campaign::new(Arc::new(TinyLease::careful()))
        .seeds(0..40)
        .faults(&[FaultKind::None, FaultKind::Partition, FaultKind::Loss])
        .expect(&[Property::S2]) // some seed must violate S2
        .check(); // S1, S3, S4, L1 and L2, unlisted, are forbidden
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
