//! 1,000 seeds of `sims/unlock-reply-lost.toml` with the buggy unlock, run twice: every seed's
//! history must come out the same both times (digests compared). Ignored by default (about
//! 10 s in a debug build); `cargo test --release --test thousand_seeds -- --ignored
//! --nocapture` also prints the runs per second it saw (a figure, not a check: speed targets
//! live in benches).

use std::time::{Duration, Instant};

use etcd_lock_client::Unlock;
use locksim_resp_sim::{run, Client, ScenarioFile};

async fn worker(client: Client) {
    loop {
        if let Ok(mut etcd) = client.etcd().await {
            let _ = etcd_lock_client::txn_job(
                &mut etcd,
                &client.name,
                Unlock::Delete,
                Duration::from_millis(300),
                Duration::from_millis(300),
            )
            .await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
#[ignore = "1,000 seeds twice: run with --ignored"]
fn a_thousand_seeds_replay_identically() {
    let file = ScenarioFile::read("sims/unlock-reply-lost.toml").expect("a valid file");
    let digests = |_: ()| -> (Vec<String>, usize) {
        let mut violated = 0;
        let d = (1..=1_000u64)
            .map(|seed| {
                let mut s = file.scenario.clone();
                s.seed = seed;
                let o = run(&s, worker);
                violated += usize::from(!o.verdict().is_safe());
                o.digest()
            })
            .collect();
        (d, violated)
    };
    let t = Instant::now();
    let (first, violated) = digests(());
    let secs = t.elapsed().as_secs_f64();
    let (second, _) = digests(());
    let same = first.iter().zip(&second).filter(|(a, b)| a == b).count();
    println!(
        "1000 seeds in {secs:.2} s ({:.0} runs/s), {violated} violating; {same} of 1000 identical on a re-run",
        1_000.0 / secs
    );
    assert_eq!(same, 1_000);
    assert!(violated > 0, "the planted bug showed in no seed");
}
