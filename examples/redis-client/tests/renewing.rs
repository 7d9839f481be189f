//! The renewing client of `src/renewing.rs` under `sims/renew-pause.toml`: with the planted
//! bug (a renewed lease counted from its reply) it writes after its lease ran out; counted from
//! the request, it stops in time. The same file, the same faults, two verdicts.

use std::time::Duration;

use locksim_resp_sim::{Client, Expect, FileReport, Property, ScenarioFile};
use redis_client::Deadline;

/// Every client node runs the job; c2 starts 200 ms after c1 (a second replica coming up), so
/// that c1 holds the lock first in every seed.
async fn worker(client: Client, rule: Deadline) {
    if client.name != "c1" && client.incarnation == 0 {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    loop {
        let _ = redis_client::renewing_job(
            &client.url(),
            &client.name,
            rule,
            Duration::from_secs(1),
            2,
            Duration::from_secs(3),
        )
        .await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The file with `expect` set as the test says (the file itself says nothing: one file, two
/// clients).
fn check(rule: Deadline, expect: Expect) -> FileReport {
    let mut file = ScenarioFile::read("sims/renew-pause.toml").expect("a valid file");
    file.expect = expect;
    let report = locksim_resp_sim::check(file, move |c| worker(c, rule));
    println!("{:?}: {}", rule, report.summary());
    report
}

#[test]
fn a_renewal_counted_from_its_reply_outlives_the_lease() {
    check(Deadline::FromReply, Expect::Violates(vec![Property::S1]));
}

#[test]
fn a_renewal_counted_from_its_request_stops_in_time() {
    check(Deadline::FromRequest, Expect::Safe);
}
