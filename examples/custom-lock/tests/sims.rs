//! The crate's scenario files as tests: `sims/*.toml`, judged as `tiny-locksim campaign FILE`
//! judges them (the file's `expect` and `forbid`), and a file written inline with the same
//! fields (a `[[fault]]` plan and a client's own settings).

use locksim_explore::testing::FileCampaign;

/// This crate's algorithms by name, for the files' `algorithm = "tiny-lease"` (every test
/// registers them; the second time is a no-op).
fn register() {
    locksim_explore::algos::register(custom_lock::registrations()).expect("valid names");
}

#[test]
fn a_paused_holder_double_grants() {
    register();
    FileCampaign::read("sims/tiny-lease-pause.toml")
        .binary("tiny-locksim")
        .check();
}

#[test]
fn a_partition_delays_a_write_past_the_next_grant() {
    register();
    FileCampaign::read("sims/tiny-lease-partition.toml")
        .binary("tiny-locksim")
        .check();
}

#[test]
fn a_pause_shorter_than_the_lease_is_harmless() {
    register();
    // c1 is paused 2 s into the run for 300 ms, far less than its 1 s lease: whatever it
    // held, it still holds when it wakes. c2 works at most 100 ms before each write.
    FileCampaign::parse(
        "short-pause.toml",
        r#"
        name = "tiny-lease: a short pause"
        algorithm = "tiny-lease"
        seeds = 30
        expect = "safe"
        forbid = ["L1", "L3"]

        [settings]
        timeout = "50ms"

        [client.c2]
        work_max = "100ms"

        [[fault]]
        at = "2s"
        type = "pause"
        node = "c1"
        duration = "300ms"
        "#,
    )
    .binary("tiny-locksim")
    .check();
}
