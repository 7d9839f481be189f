//! redis-rs, unchanged, against the simulated server: its handshake, SET NX PX, its `Script`
//! (EVALSHA, then SCRIPT LOAD on NOSCRIPT), RESP3, and a recorded history the checkers judge.

use std::time::Duration;

use locksim_core::history::{EventKind, OpF, Phase};
use locksim_core::{Fault, Property};
use locksim_resp_sim::scripts::UNLOCK;
use locksim_resp_sim::{run, Client, Scenario};
use redis::AsyncCommands;

/// A naive lock loop: SET NX PX, write the resource, unlock by script; no validity check.
async fn naive(client: Client, ttl_ms: u64, work_ms: u64) {
    let mut conn = client.redis().await.expect("connects");
    let unlock = redis::Script::new(UNLOCK);
    for round in 0u64.. {
        let owner = format!("{}-{}-{round}", client.name, client.incarnation);
        let got: Option<String> = redis::cmd("SET")
            .arg("lock:job")
            .arg(&owner)
            .arg("NX")
            .arg("PX")
            .arg(ttl_ms)
            .query_async(&mut conn)
            .await
            .expect("SET answers");
        if got.is_none() {
            madsim::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        madsim::time::sleep(Duration::from_millis(work_ms)).await;
        let _: () = conn
            .set("resource:counter", round)
            .await
            .expect("write answers");
        let _: i64 = unlock
            .key("lock:job")
            .arg(&owner)
            .invoke_async(&mut conn)
            .await
            .expect("unlock answers");
        madsim::time::sleep(Duration::from_millis(10)).await;
    }
}

#[test]
fn a_fault_free_run_is_safe_and_records_grants_and_releases() {
    let outcome = run(&Scenario::new(7).clients(3).duration_ms(2_000), |c| {
        naive(c, 1_000, 50)
    });
    let v = outcome.verdict();
    assert!(v.is_safe(), "{v:?}");
    let count = |f: OpF, p: Phase| outcome.count(f, p);
    let grants = count(OpF::Acquire, Phase::Ok);
    assert!(grants >= 10, "{grants} grants");
    assert!(count(OpF::Release, Phase::Ok) >= grants - 1);
    assert!(count(OpF::Write, Phase::Ok) >= grants - 1);
}

#[test]
fn a_holder_paused_past_its_ttl_writes_late_s1_and_s2() {
    // c1 and c2 contend; work takes 300 ms of a 1 s lease. c1 is paused for 2 s at 500 ms: if
    // it holds then, c2 gets the lock after the TTL and c1 writes on waking up.
    let mut found = None;
    for seed in 1..=10 {
        let s = Scenario::new(seed).clients(2).duration_ms(4_000).fault(
            500,
            Fault::Pause {
                node: 1,
                duration: 2_000_000_000,
                task: Default::default(),
            },
        );
        let v = run(&s, |c| naive(c, 1_000, 300)).verdict();
        if v.violations.iter().any(|x| x.kind == Property::S1)
            && v.violations.iter().any(|x| x.kind == Property::S2)
        {
            found = Some(seed);
            break;
        }
    }
    assert!(found.is_some(), "no seed of 1..=10 showed the late write");
}

#[test]
fn same_seed_same_history() {
    let s = Scenario::new(3)
        .clients(3)
        .duration_ms(3_000)
        .fault(
            700,
            Fault::Isolate {
                node: 0,
                duration: 400_000_000,
                mode: Default::default(),
            },
        )
        .fault(
            1_500,
            Fault::Crash {
                node: 2,
                restart_after: Some(300_000_000),
            },
        );
    let a = run(&s, |c| naive(c, 500, 40));
    let b = run(&s, |c| naive(c, 500, 40));
    assert!(a.history.events.len() > 20);
    assert_eq!(a.digest(), b.digest());
    assert_eq!(a.history, b.history);
}

#[test]
fn resp3_handshake_and_commands() {
    let outcome = run(
        &Scenario::new(1).clients(1).duration_ms(1_000),
        |c| async move {
            let info =
                redis::RedisConnectionInfo::default().set_protocol(redis::ProtocolVersion::RESP3);
            let mut conn = c.redis_with(info).await.expect("connects in RESP3");
            let pong: String = redis::cmd("PING").query_async(&mut conn).await.unwrap();
            assert_eq!(pong, "PONG");
            let set: bool = conn
                .set_options(
                    "lock:a",
                    "me",
                    redis::SetOptions::default()
                        .conditional_set(redis::ExistenceCheck::NX)
                        .with_expiration(redis::SetExpiry::PX(250)),
                )
                .await
                .unwrap();
            assert!(set);
            let ttl: i64 = conn.pttl("lock:a").await.unwrap();
            // Less the network's latency between the SET and the PTTL.
            assert!((200..250).contains(&ttl), "{ttl}");
            let missing: Option<String> = conn.get("nothing").await.unwrap();
            assert_eq!(missing, None);
            let extended: i64 = conn.pexpire("lock:a", 1_000).await.unwrap();
            assert_eq!(extended, 1);
            let err = redis::cmd("BLPOP")
                .arg("q")
                .arg(0)
                .query_async::<()>(&mut conn)
                .await
                .unwrap_err();
            assert!(err.to_string().contains("unknown command"), "{err}");
        },
    );
    let extends = outcome
        .history
        .events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::Op {
                    f: OpF::Extend,
                    phase: Phase::Ok,
                    ..
                }
            )
        })
        .count();
    assert_eq!(extends, 1);
}

#[test]
fn a_written_trace_replays_event_for_event_and_tells_a_changed_client() {
    let s = Scenario::new(5).clients(2).duration_ms(3_000).fault(
        400,
        Fault::Pause {
            node: 1,
            duration: 1_500_000_000,
            task: Default::default(),
        },
    );
    let first = run(&s, |c| naive(c, 1_000, 300));
    assert!(
        first.verdict().violates(Property::S1),
        "{:?}",
        first.verdict()
    );
    let dir = std::env::temp_dir().join(format!("locksim-resp-trace-{}", std::process::id()));
    let path =
        locksim_resp_sim::write_trace(&dir, "Pause: c1", &locksim_resp_sim::trace_of(&s, &first))
            .expect("written");
    assert!(path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with("pause-c1-"));
    let again = locksim_resp_sim::replay_trace(&path, |c| naive(c, 1_000, 300)).expect("replays");
    assert_eq!(again.history.events, first.history.events);
    // The same trace, replayed with a client that works longer: the first differing event.
    let e = locksim_resp_sim::replay_trace(&path, |c| naive(c, 1_000, 350)).unwrap_err();
    assert!(e.contains("differs at event #"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn shrinking_keeps_the_violation_and_drops_what_it_does_not_need() {
    let s = locksim_resp_sim::ScenarioFile::parse(
        r#"
        clients = 3
        duration = "4s"
        seed = 1
        [[fault]]
        after = { node = "n1", event = "grants", client = "c1" }
        type = "pause"
        node = "c1"
        duration = "2s"
        [[fault]]
        at = "3500ms"
        type = "isolate"
        node = "c2"
        duration = "100ms"
        "#,
        "x",
    )
    .expect("a valid file")
    .scenario;
    let shrunk = locksim_resp_sim::shrink(&s, |c| naive(c, 1_000, 300), Property::S1)
        .expect("it violates S1");
    assert!(shrunk.outcome.verdict().violates(Property::S1));
    assert!(
        shrunk.scenario.faults.len() <= 1,
        "{:?}",
        shrunk.scenario.faults
    );
    assert!(shrunk.scenario.clients <= 3 && shrunk.scenario.duration <= s.duration);
    assert!(
        (
            shrunk.scenario.faults.len(),
            shrunk.scenario.clients,
            shrunk.scenario.duration
        ) < (s.faults.len(), s.clients, s.duration)
    );
}

#[test]
fn a_reply_in_a_drop_replies_window_leaves_when_it_ends_and_the_command_takes_effect() {
    // The window opens at 100 ms, after the client connected (the handshake's replies would be
    // held too), and the client asks at 150 ms.
    let s = Scenario::new(3).clients(1).duration_ms(1_000).fault(
        100,
        Fault::DropReplies {
            clients: vec![1],
            servers: vec![0],
            duration: 300_000_000,
        },
    );
    let answered = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = answered.clone();
    let outcome = run(&s, move |c| {
        let seen = seen.clone();
        async move {
            let mut conn = c.redis().await.expect("connects");
            madsim::time::sleep(Duration::from_millis(150)).await;
            let t0 = madsim::time::Instant::now();
            let got: Option<String> = redis::cmd("SET")
                .arg("lock:job")
                .arg("me")
                .arg("NX")
                .arg("PX")
                .arg(5_000)
                .query_async(&mut conn)
                .await
                .expect("SET answers");
            seen.lock().unwrap().push((got, t0.elapsed()));
        }
    });
    let answered = answered.lock().unwrap();
    let (got, waited) = answered.first().expect("the client got its answer");
    assert_eq!(got.as_deref(), Some("OK"));
    assert!(
        *waited >= Duration::from_millis(200),
        "answered after {waited:?}"
    );
    // The grant is recorded when the server executed it, inside the window.
    let granted = outcome
        .history
        .events
        .iter()
        .find(|e| matches!(e.kind, EventKind::Grant { .. }))
        .expect("a grant");
    assert!(
        (150_000_000..200_000_000).contains(&granted.time),
        "granted at {}",
        granted.time
    );
    let bad = Scenario::new(1).fault(
        0,
        Fault::DropReplies {
            clients: vec![0],
            servers: vec![0],
            duration: 1,
        },
    );
    assert!(bad.validate().unwrap_err().contains("no client"));
}

/// Finds the primary through the sentinels (each asked in turn, 500 ms each), then takes the
/// lock there with a 5 s TTL, holds it 3 s, writes and unlocks; forever.
async fn through_sentinel(client: Client) {
    let unlock = redis::Script::new(UNLOCK);
    let sentinels: Vec<std::net::SocketAddr> = client
        .servers
        .iter()
        .map(|a| std::net::SocketAddr::new(a.ip(), locksim_resp_sim::sentinel::PORT))
        .collect();
    let wait = Duration::from_millis(500);
    for round in 0u64.. {
        madsim::time::sleep(Duration::from_millis(50)).await;
        let s = sentinels[round as usize % sentinels.len()];
        let Ok(Ok(mut sc)) = madsim::time::timeout(wait, client.redis_to(s)).await else {
            continue;
        };
        let addr: Result<Result<Vec<String>, _>, _> = madsim::time::timeout(
            wait,
            redis::cmd("SENTINEL")
                .arg("GET-MASTER-ADDR-BY-NAME")
                .arg("mymaster")
                .query_async(&mut sc),
        )
        .await;
        let Ok(Ok(addr)) = addr else { continue };
        let primary = std::net::SocketAddr::new(addr[0].parse().unwrap(), 6379);
        let Ok(Ok(mut conn)) = madsim::time::timeout(wait, client.redis_to(primary)).await else {
            continue;
        };
        let owner = format!("{}-{}-{round}", client.name, client.incarnation);
        let got: Result<Result<Option<String>, _>, _> = madsim::time::timeout(
            wait,
            redis::cmd("SET")
                .arg("lock:job")
                .arg(&owner)
                .arg("NX")
                .arg("PX")
                .arg(5_000)
                .query_async(&mut conn),
        )
        .await;
        if !matches!(got, Ok(Ok(Some(_)))) {
            continue;
        }
        madsim::time::sleep(Duration::from_secs(3)).await;
        let _ = madsim::time::timeout(wait, conn.set::<_, _, ()>("resource:n", round)).await;
        let _ = madsim::time::timeout(
            wait,
            unlock
                .key("lock:job")
                .arg(&owner)
                .invoke_async::<i64>(&mut conn),
        )
        .await;
    }
}

#[test]
fn sentinel_fails_over_from_a_paused_primary_and_the_unreplicated_lock_is_granted_twice() {
    let file = locksim_resp_sim::ScenarioFile::parse(
        r#"
        servers = 3
        sentinel = true
        down_after = "2s"
        clients = 2
        duration = "12s"
        [[fault]]
        after = { node = "n1", event = "grants", client = "c1" }
        type = "pause"
        node = "n1"
        duration = "8s"
        "#,
        "x",
    )
    .expect("a valid file");
    let mut found = None;
    for seed in 1..=5 {
        let mut s = file.scenario.clone();
        s.seed = seed;
        let o = run(&s, through_sentinel);
        let leaders = o
            .history
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Leader { .. }))
            .count();
        let v = o.verdict();
        eprintln!(
            "seed {seed}: {leaders} promotions, {:?}",
            v.violations.iter().map(|x| x.kind).collect::<Vec<_>>()
        );
        if leaders > 0 && v.violates(Property::S1) {
            found = Some(seed);
            break;
        }
    }
    assert!(
        found.is_some(),
        "no seed of 1..=5 failed over into a second grant"
    );
}

/// Takes the lock with SET NX PX 400, unlocks after 50 ms; reconnects after any error (a server
/// crash included).
async fn tolerant(client: Client) {
    loop {
        madsim::time::sleep(Duration::from_millis(20)).await;
        let Ok(Ok(mut conn)) =
            madsim::time::timeout(Duration::from_millis(200), client.redis()).await
        else {
            continue;
        };
        loop {
            let got: Result<Result<Option<String>, _>, _> = madsim::time::timeout(
                Duration::from_millis(200),
                redis::cmd("SET")
                    .arg("lock:job")
                    .arg(&client.name)
                    .arg("NX")
                    .arg("PX")
                    .arg(400)
                    .query_async(&mut conn),
            )
            .await;
            match got {
                Ok(Ok(Some(_))) => {
                    madsim::time::sleep(Duration::from_millis(50)).await;
                    let unlock = redis::Script::new(UNLOCK);
                    let _ = madsim::time::timeout(
                        Duration::from_millis(200),
                        unlock
                            .key("lock:job")
                            .arg(&client.name)
                            .invoke_async::<i64>(&mut conn),
                    )
                    .await;
                }
                Ok(Ok(None)) => madsim::time::sleep(Duration::from_millis(20)).await,
                _ => break,
            }
        }
    }
}

#[test]
fn overlapping_faults_on_one_node_last_until_the_longest_ends() {
    let pause = |d: u64| Fault::Pause {
        node: 0,
        duration: d * 1_000_000,
        task: Default::default(),
    };
    let crash = |d: u64| Fault::Crash {
        node: 0,
        restart_after: Some(d * 1_000_000),
    };
    for (long, short) in [(pause(3_000), pause(100)), (crash(3_000), crash(100))] {
        let s = Scenario::new(2)
            .clients(2)
            .duration_ms(5_000)
            .fault(1_000, long)
            .fault(1_500, short);
        let o = run(&s, tolerant);
        let granted: Vec<u64> = o
            .history
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Grant { .. }))
            .map(|e| e.time)
            .collect();
        assert!(granted.iter().any(|t| *t < 1_000_000_000), "{granted:?}");
        assert!(
            !granted
                .iter()
                .any(|t| (1_001_000_000..4_000_000_000).contains(t)),
            "the server granted while a fault still held it: {granted:?}"
        );
    }
}

#[test]
#[should_panic(expected = "none did. What each seed did:\n  seed 1: safe; ")]
fn an_expected_violation_that_never_shows_says_what_each_seed_did() {
    let file = locksim_resp_sim::ScenarioFile::parse(
        "clients = 2\nduration = \"1s\"\nseeds = 2\nexpect = [\"S1\"]\n",
        "never",
    )
    .expect("a valid file");
    locksim_resp_sim::check(file, |c| naive(c, 1_000, 50));
}
