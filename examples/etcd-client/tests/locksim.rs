//! The etcd lock clients of `src/lib.rs`, unchanged, in locksim's simulation: each test names a
//! scenario file in `sims/` and runs the client's own job on every client node, with an
//! `etcd_client::Client` connected to the simulated etcd member. `check` runs each of the
//! file's seeds, checks what the file (or the test) expects, shrinks the first failing seed of
//! each property into a trace, and replays it event for event.

use std::time::Duration;

use etcd_lock_client::{Unlock, Write};
use locksim_resp_sim::{check, Client, Expect, Property, ScenarioFile};

/// A client node: the txn job, started again 100 ms after it fails, as a supervisor would.
async fn txn_worker(client: Client, unlock: Unlock) {
    loop {
        if let Ok(mut etcd) = client.etcd().await {
            let _ = etcd_lock_client::txn_job(
                &mut etcd,
                &client.name,
                unlock,
                Duration::from_millis(300),
                Duration::from_millis(300),
            )
            .await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A client node: the Lock-API job with a 2 s lease on a client it connects itself, as
/// production code does (`Client::connect`, on the simulated network through the patched
/// etcd-client of `.cargo/config.toml`), started again after it fails.
async fn lock_api_worker(client: Client, write: Write) {
    loop {
        if let Ok(mut etcd) = etcd_client::Client::connect([client.etcd_url()], None).await {
            let _ = etcd_lock_client::lock_api_job(&mut etcd, 2, Duration::from_millis(300), write)
                .await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn run_file(path: &str, expect: Option<Expect>, unlock: Unlock) {
    let mut file = ScenarioFile::read(path).expect("a valid file");
    if let Some(expect) = expect {
        file.expect = expect;
    }
    let report = check(file, move |c| txn_worker(c, unlock));
    println!("{unlock:?}: {}", report.summary());
}

#[test]
fn a_retried_delete_deletes_the_next_holders_lock() {
    run_file(
        "sims/unlock-reply-lost.toml",
        Some(Expect::Violates(vec![Property::S1, Property::S4])),
        Unlock::Delete,
    );
}

#[test]
fn a_retried_compare_and_delete_is_harmless() {
    run_file(
        "sims/unlock-reply-lost.toml",
        Some(Expect::Safe),
        Unlock::CompareAndDelete,
    );
}

#[test]
fn without_faults_both_unlocks_are_safe() {
    run_file("sims/no-faults.toml", None, Unlock::Delete);
    run_file("sims/no-faults.toml", None, Unlock::CompareAndDelete);
}

#[test]
fn a_lock_api_holder_paused_past_its_lease_writes_late() {
    let file = ScenarioFile::read("sims/lock-api-pause.toml").expect("a valid file");
    println!(
        "{}",
        check(file, |c| lock_api_worker(c, Write::Plain)).summary()
    );
}

#[test]
fn a_fenced_write_after_the_same_pause_is_refused_by_etcd() {
    let mut file = ScenarioFile::read("sims/lock-api-pause.toml").expect("a valid file");
    file.expect = Expect::Safe;
    check(file, |c| lock_api_worker(c, Write::Fenced));
}

#[test]
fn the_lock_api_is_safe_without_faults() {
    let file = ScenarioFile::read("sims/no-faults.toml").expect("a valid file");
    check(file, |c| lock_api_worker(c, Write::Plain));
    let file = ScenarioFile::read("sims/no-faults.toml").expect("a valid file");
    check(file, |c| lock_api_worker(c, Write::Fenced));
}
