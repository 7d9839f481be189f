//! The lock client of `src/lib.rs`, unchanged, in locksim's simulation: a simulated Redis, two
//! workers, and a stop-the-world pause of one of them longer than the lock's TTL.

use std::time::Duration;

use locksim_resp_sim::{run, Fault, Outcome, Property, Scenario};

/// Two workers for 4 s; `c1` is paused for 2 s (twice the TTL) at 500 ms, while it holds.
fn paused_past_the_ttl(seed: u64) -> Scenario {
    Scenario::new(seed).clients(2).duration_ms(4_000).fault(
        500,
        Fault::Pause {
            node: 1,
            duration: 2_000_000_000,
            task: Default::default(),
        },
    )
}

fn workers(scenario: &Scenario) -> Outcome {
    run(scenario, |client| async move {
        let _ =
            redis_client::report_job(&client.url(), &client.name, Duration::from_millis(300)).await;
    })
}

#[test]
fn a_pause_past_the_ttl_makes_two_holders_and_a_stale_write() {
    let outcome = workers(&paused_past_the_ttl(1));
    let verdict = outcome.verdict();
    for v in &verdict.violations {
        println!("{:?}: {}", v.kind, v.summary);
    }
    assert!(verdict.violations.iter().any(|v| v.kind == Property::S1));
    assert!(verdict.violations.iter().any(|v| v.kind == Property::S2));
    // Deterministic: the same seed gives the same history, event for event.
    assert_eq!(workers(&paused_past_the_ttl(1)).digest(), outcome.digest());
}

#[test]
fn without_the_pause_the_client_is_safe() {
    for seed in 1..=20 {
        let outcome = workers(&Scenario::new(seed).clients(3).duration_ms(3_000));
        assert!(
            outcome.verdict().is_safe(),
            "seed {seed}: {:?}",
            outcome.verdict()
        );
    }
}
