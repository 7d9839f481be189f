//! The job of `src/unlock_retry.rs` under `sims/unlock-reply-lost.toml`: an unlock by `DEL`,
//! retried after its reply was lost, deletes the next holder's lock (S4), and the lock is then
//! granted again while that holder still believes in it (S1); the compare-and-delete
//! script, retried the same way, deletes nothing of anyone else's.

use std::time::Duration;

use locksim_resp_sim::{Client, Expect, Property, ScenarioFile};
use redis_client::Unlock;

async fn worker(client: Client, unlock: Unlock) {
    loop {
        let _ = redis_client::retrying_job(
            &client.url(),
            &client.name,
            unlock,
            Duration::from_millis(300),
        )
        .await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn check(unlock: Unlock, expect: Expect) {
    let mut file = ScenarioFile::read("sims/unlock-reply-lost.toml").expect("a valid file");
    file.expect = expect;
    let report = locksim_resp_sim::check(file, move |c| worker(c, unlock));
    println!("{:?}: {}", unlock, report.summary());
}

#[test]
fn a_retried_del_deletes_the_next_holders_lock() {
    check(
        Unlock::Del,
        Expect::Violates(vec![Property::S1, Property::S4]),
    );
}

#[test]
fn a_retried_compare_and_delete_is_harmless() {
    check(Unlock::CompareAndDelete, Expect::Safe);
}
