//! The report job through redis-rs's `sentinel` module, against a primary, two replicas and
//! three sentinels, with the primary paused right after a grant.

use std::time::Duration;

use locksim_resp_sim::{check_file, Client};

async fn worker(client: Client) {
    loop {
        let _ = redis_client::report_job_sentinel(
            &client.sentinel_urls(),
            &client.name,
            Duration::from_millis(300),
        )
        .await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
fn a_paused_primary_loses_an_unreplicated_lock_to_the_promoted_replica() {
    println!(
        "{}",
        check_file("sims/sentinel-paused-primary.toml", worker).summary()
    );
}
