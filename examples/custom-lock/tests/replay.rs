//! A trace of this crate's algorithm, kept in `traces/` (written by `tests/failing_seed.rs`),
//! replays and renders from here (the built-in `locksim replay` cannot, since only this crate
//! has the algorithm; this crate's `tiny-locksim replay` can: tests/binary.rs).

use std::path::Path;
use std::sync::Arc;

use custom_lock::TinyLease;
use locksim_explore::core::Property;
use locksim_explore::testing::{render, replay};

fn kept_trace() -> std::path::PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
    std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .expect("a kept trace")
}

#[test]
fn the_kept_trace_replays_with_the_same_digest_and_verdict() {
    let r = replay(kept_trace(), Arc::new(TinyLease::careless())).unwrap();
    assert!(
        r.ok(),
        "digest {} verdict {:?}",
        r.digest,
        r.outcome.verdict
    );
    assert!(r.outcome.verdict.violates(Property::S1));
}

#[test]
fn it_renders_from_a_real_run() {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kept-trace.html");
    let _ = std::fs::remove_file(&out);
    let drawn = render(kept_trace(), Arc::new(TinyLease::careless()), &out).unwrap();
    assert!(drawn.rerun, "{:?}", drawn.notes);
    assert!(drawn.messages > 0, "a re-run has messages");
    assert!(std::fs::read_to_string(&out).unwrap().contains("S1"));
}

#[test]
fn another_algorithm_is_refused() {
    let e = replay(kept_trace(), Arc::new(TinyLease::careful())).unwrap_err();
    assert!(e.contains("not of `tiny-lease`"), "{e}");
}
