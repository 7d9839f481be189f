use std::collections::BTreeMap;

use super::*;

fn build(pairs: &[(&str, &str)]) -> Result<RedisFailover, String> {
    let config: BTreeMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    RedisFailover::from_config(&config, &Workload::default())
}

#[test]
fn defaults_are_the_documented_ones() {
    let r = build(&[]).unwrap();
    assert_eq!(r.replicas, 2);
    assert_eq!(r.repl_delay, (1_000_000, 50_000_000));
    assert_eq!(r.down_after, 5_000_000_000);
    assert_eq!(r.promote, Promote::MostUpToDate);
    assert_eq!(r.wait_replicas, 0);
    assert!(!r.fencing && !r.fsync);
    assert_eq!(r.servers(), 4);
    assert_eq!(r.monitor(), 3);
    assert_eq!(r.data_nodes(), 0..3);
}

#[test]
fn bad_knobs_name_themselves() {
    let e = build(&[("wait_replicas", "3")]).unwrap_err();
    assert!(
        e.contains("wait_replicas=3") && e.contains("2 replicas"),
        "{e}"
    );
    let e = build(&[("repl_delay", "50ms..1ms")]).unwrap_err();
    assert!(
        e.contains("repl_delay") && e.contains("MIN is above MAX"),
        "{e}"
    );
    let e = build(&[("promote", "oldest")]).unwrap_err();
    assert!(e.contains("promote=oldest"), "{e}");
    let e = build(&[("sentinels", "3")]).unwrap_err();
    assert!(e.contains("`sentinels` is not a setting"), "{e}");
}

#[test]
fn one_duration_is_a_fixed_delay() {
    let r = build(&[("repl_delay", "20ms")]).unwrap();
    assert_eq!(r.repl_delay, (20_000_000, 20_000_000));
    let r = build(&[("repl_delay", "0ms..5ms")]).unwrap();
    assert_eq!(r.repl_delay, (0, 5_000_000));
}

#[test]
fn wait_adds_its_timeout_to_each_request() {
    let plain = build(&[]).unwrap();
    let wait = build(&[("wait_replicas", "2")]).unwrap();
    assert_eq!(plain.request_timeout(), plain.timeout);
    assert_eq!(wait.request_timeout(), wait.timeout + wait.wait_timeout);
    assert_eq!(
        wait.liveness().attempt,
        Some(wait.timeout + wait.request_timeout())
    );
}
