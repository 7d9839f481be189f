//! A test that fails on purpose, to show (and, in `tests/commands.rs`, to check) what a failure
//! prints: careless clients double-grant without any fault, and S1 is forbidden here.

use std::sync::Arc;

use custom_lock::TinyLease;
use locksim_explore::core::{FaultKind, Property, Workload};
use locksim_explore::testing::Campaign;

#[test]
#[ignore = "fails on purpose; tests/commands.rs runs it and checks the commands it prints"]
fn careless_clients_never_double_grant() {
    Campaign::new(Arc::new(TinyLease::careless()))
        // Three writes per grant, up to 500 ms of work before each, 1 s leases: a client
        // that never checks its lease outlives it now and then, with no fault at all.
        .workload(Workload {
            writes_per_hold: 3,
            ..Workload::default()
        })
        .seeds(0..20)
        .faults(&[FaultKind::None])
        .forbid(&[Property::S1])
        .allow(&[Property::S2])
        .check();
}
