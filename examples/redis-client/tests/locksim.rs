//! The lock client of `src/lib.rs`, unchanged, in locksim's simulation: each test names a
//! scenario file in `sims/` (the faults, and what the runs must show) and runs the client's own
//! job on every client node. `check_file` runs each of the file's seeds, checks its `expect`,
//! and runs the first seed again to check that the history is the same.

use std::time::Duration;

use locksim_resp_sim::{check_file, Client, FileReport};

/// What every client node runs: the application's job, connecting to the simulated server's
/// URL itself, started again 100 ms after it fails (a broken connection ends it), as a
/// supervisor would.
async fn worker(client: Client) {
    loop {
        let _ =
            redis_client::report_job(&client.url(), &client.name, Duration::from_millis(300)).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Prints the first failing seed's violations (`cargo test -- --nocapture` shows them).
fn show(report: &FileReport) {
    println!("{}", report.summary());
}

#[test]
fn a_pause_past_the_ttl_makes_two_holders_and_a_stale_write() {
    show(&check_file("sims/pause-on-grant.toml", worker));
}

#[test]
fn a_server_that_restarts_empty_grants_twice() {
    show(&check_file("sims/server-restart.toml", worker));
}

#[test]
fn a_write_given_up_on_lands_after_the_next_grant() {
    show(&check_file("sims/server-isolated.toml", worker));
}

#[test]
fn without_faults_the_client_is_safe() {
    check_file("sims/no-faults.toml", worker);
}
