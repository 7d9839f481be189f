//! A scenario-file test that fails on purpose, to show (and, in `tests/commands.rs`, to check)
//! what its failure prints: the commands of this crate's own `tiny-locksim` that run, shrink
//! and draw the failing seed.

use locksim_explore::testing::FileCampaign;

#[test]
#[ignore = "fails on purpose; tests/commands.rs runs it and checks the commands it prints"]
fn careless_clients_are_safe_says_the_file() {
    locksim_explore::algos::register(custom_lock::registrations()).expect("valid names");
    FileCampaign::parse(
        "careless.toml",
        r#"
        name = "careless clients, claimed safe"
        algorithm = "tiny-lease-careless"
        faults = ["none"]
        seeds = 20
        expect = "safe"

        [settings]
        writes = 3
        "#,
    )
    .binary("tiny-locksim")
    .check();
}
