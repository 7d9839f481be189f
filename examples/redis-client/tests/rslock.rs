//! The job on rslock (`src/with_rslock.rs`), a lock crate from crates.io, unchanged in the
//! simulation: the same simulated Redis, faults and checkers as `tests/locksim.rs`.

use std::time::Duration;

use locksim_resp_sim::{check_file, Client, FileReport};

async fn worker(client: Client) {
    loop {
        let _ = redis_client::report_job_rslock(&client.url(), Duration::from_millis(300)).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn show(report: &FileReport) {
    println!("{}", report.summary());
}

#[test]
fn rslock_refuses_a_lock_whose_acquire_outlived_its_ttl() {
    show(&check_file("sims/rslock-pause-on-grant.toml", worker));
}

#[test]
fn a_pause_after_rslock_handed_the_lock_over_is_the_jobs_problem() {
    show(&check_file("sims/rslock-pause-while-holding.toml", worker));
}

/// The job on rslock over every server of the scenario (Redlock proper).
async fn redlock_worker(client: Client) {
    loop {
        let _ = redis_client::report_job_redlock(&client.urls(), Duration::from_millis(300)).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
fn a_redlock_server_restarted_without_its_keys_grants_a_second_majority() {
    show(&check_file(
        "sims/redlock-restart-without-persistence.toml",
        redlock_worker,
    ));
}

#[test]
fn a_redlock_server_restarted_after_the_ttl_keeps_the_lock_safe() {
    show(&check_file(
        "sims/redlock-delayed-restart.toml",
        redlock_worker,
    ));
}

#[test]
fn a_redlock_servers_clock_jump_grants_a_second_majority() {
    show(&check_file("sims/redlock-clock-jump.toml", redlock_worker));
}
