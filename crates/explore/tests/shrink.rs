//! Shrinking and trace files.

mod common;

use std::path::Path;

use locksim_core::{FaultKind, Property, Trace};
use locksim_explore::replay::replay;
use locksim_explore::shrink::shrink;

#[test]
fn a_many_fault_redlock_pause_case_shrinks_to_two_faults_and_two_clients() {
    // Seed 3 is the first seed of `redlock` × `swarm` under datagram that double-grants (seed 30
    // before #49's schedule change): a plan of at least 10 faults. Pinned to datagram: that
    // plan (under tcp its duplicate windows are left out) and that run are datagram's.
    let setup = common::setup("redlock", &["network=datagram"]);
    let start = setup.scenario(3, &[FaultKind::Swarm]);
    assert!(start.faults.len() >= 10, "{} faults", start.faults.len());
    let s = shrink(&start, Property::S1, &|_| {}).unwrap();
    assert!(s.verdict.violates(Property::S1));
    assert!(s.scenario.faults.len() <= 2, "{:#?}", s.scenario.faults);
    assert!(
        s.scenario.cluster.clients <= 2,
        "{} clients",
        s.scenario.cluster.clients
    );
    // Deterministic, and the trace replays to the same digest.
    let again = shrink(&start, Property::S1, &|_| {}).unwrap();
    assert_eq!(again.scenario, s.scenario);
    let trace = s.trace(true);
    let text = trace.to_json();
    let back = Trace::parse(Path::new("x.json"), &text).unwrap();
    assert_eq!(back, trace);
    assert!(replay(&back).unwrap().ok());
}

#[test]
fn a_safe_run_has_nothing_to_shrink() {
    let setup = common::setup("central", &[]);
    let e = shrink(
        &setup.scenario(1, &[FaultKind::None]),
        Property::S1,
        &|_| {},
    )
    .unwrap_err();
    assert!(e.contains("does not violate S1"), "{e}");
}

#[test]
fn bad_trace_files_name_the_file_and_the_position() {
    let setup = common::setup("central", &[]);
    let s = setup.scenario(5, &[FaultKind::Pause]);
    let out = locksim_explore::check_scenario(&s, setup.algo.clone());
    let h = out.history.unwrap();
    let good = Trace::new(s, h.digest(), out.verdict, None).to_json();
    let p = Path::new("traces/t.json");

    // Truncated.
    let e = Trace::parse(p, &good[..good.len() / 2]).unwrap_err();
    assert!(e.to_string().starts_with("traces/t.json:"), "{e}");
    assert!(
        e.position.is_some() && e.problem.contains("truncated"),
        "{e}"
    );
    // Corrupted in the middle.
    let bad = good.replacen("\"seed\": 5", "\"seed\": five", 1);
    let e = Trace::parse(p, &bad).unwrap_err();
    assert!(e.position.is_some(), "{e}");
    // A newer version.
    let newer = good.replacen("\"version\": 1", "\"version\": 7", 1);
    let e = Trace::parse(p, &newer).unwrap_err();
    assert!(e.problem.contains("newer"), "{e}");
    // An unknown field.
    let extra = good.replacen("\"digest\"", "\"colour\": \"red\",\n  \"digest\"", 1);
    let e = Trace::parse(p, &extra).unwrap_err();
    assert!(e.problem.contains("colour") && e.position.is_some(), "{e}");
    // Not a trace at all.
    let e = Trace::parse(p, "{\"cells\": []}").unwrap_err();
    assert!(e.problem.contains("format"), "{e}");
}

#[test]
fn a_different_trace_is_never_overwritten() {
    let dir = std::env::temp_dir().join(format!("locksim-shrink-test-{}", std::process::id()));
    let path = dir.join("a.json");
    let setup = common::setup("central", &[]);
    let mk = |seed| {
        let s = setup.scenario(seed, &[FaultKind::None]);
        let out = locksim_explore::check_scenario(&s, setup.algo.clone());
        Trace::new(s, out.history.unwrap().digest(), out.verdict, None)
    };
    let (a, b) = (mk(1), mk(2));
    a.write_new(&path).unwrap();
    a.write_new(&path).unwrap(); // the same trace again: fine
    let e = b.write_new(&path).unwrap_err();
    assert!(e.contains("not overwriting"), "{e}");
    assert_eq!(Trace::read(&path).unwrap(), a);
    std::fs::remove_dir_all(&dir).ok();
}
