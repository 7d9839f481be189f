//! The job of `src/wall_clock.rs` under `sims/client-clock-step.toml`: a client's own clock
//! stepped back (locksim-resp-sim's `client-clocks`, on madsim patched for per-node clocks).
//! A lease checked on the wall clock passes after the lease ran out (S1, S2); checked on the
//! monotonic clock, it does not.

use std::time::Duration;

use locksim_resp_sim::{check, Client, Expect, Property, ScenarioFile};
use redis_client::LeaseClock;

async fn worker(client: Client, clock: LeaseClock) {
    loop {
        let _ = redis_client::checked_job(
            &client.url(),
            &client.name,
            clock,
            Duration::from_millis(300),
        )
        .await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn run(clock: LeaseClock, expect: Expect) {
    let mut file = ScenarioFile::read("sims/client-clock-step.toml").expect("a valid file");
    file.expect = expect;
    let report = check(file, move |c| worker(c, clock));
    println!("{clock:?}: {}", report.summary());
}

#[test]
fn a_lease_checked_on_the_wall_clock_passes_after_a_step_back() {
    run(
        LeaseClock::Wall,
        Expect::Violates(vec![Property::S1, Property::S2]),
    );
}

#[test]
fn a_lease_checked_on_the_monotonic_clock_is_safe() {
    run(LeaseClock::Monotonic, Expect::Safe);
}
