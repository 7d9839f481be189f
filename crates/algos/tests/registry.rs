//! A third party's algorithm registered by name is built, listed and described like a built-in
//! one; bad registrations are refused with their reason. (One test: the registry is fixed once
//! per process.)

use std::collections::BTreeMap;
use std::sync::Arc;

use locksim_algos::{Knob, Registration};
use locksim_core::Workload;
use locksim_sim::LockAlgorithm;

const KNOBS: &[Knob] = &[Knob {
    key: "clock",
    default: "mono",
    help: "central's clock, under another name",
}];

fn build(
    config: &BTreeMap<String, String>,
    w: &Workload,
) -> Result<Arc<dyn LockAlgorithm>, String> {
    locksim_algos::knobs::Knobs::new("my-lock", config, KNOBS)?;
    locksim_algos::build("central", config, w)
}

fn mine(name: &'static str) -> Registration {
    Registration {
        name,
        what: "central under another name",
        knobs: KNOBS,
        build,
    }
}

#[test]
fn a_registered_algorithm_is_known_by_name() {
    let w = Workload::default();
    let none = BTreeMap::new();
    assert!(locksim_algos::build("my-lock", &none, &w).is_err());
    let e = locksim_algos::register(vec![mine("central")]).unwrap_err();
    assert!(e.contains("built-in"), "{e}");
    let e = locksim_algos::register(vec![mine("My Lock")]).unwrap_err();
    assert!(e.contains("lower-case"), "{e}");
    let e = locksim_algos::register(vec![mine("my-lock"), mine("my-lock")]).unwrap_err();
    assert!(e.contains("twice"), "{e}");

    locksim_algos::register(vec![mine("my-lock")]).unwrap();
    assert_eq!(
        locksim_algos::build("my-lock", &none, &w).unwrap().name(),
        "central"
    );
    assert_eq!(locksim_algos::knobs("my-lock").unwrap()[0].key, "clock");
    assert!(locksim_algos::names().ends_with(", my-lock"));
    assert_eq!(
        locksim_algos::algorithms().last(),
        Some(&("my-lock", "central under another name"))
    );
    let bad: BTreeMap<String, String> = [("ttl_ms".to_string(), "5".to_string())].into();
    let e = locksim_algos::build("my-lock", &bad, &w)
        .err()
        .expect("a bad setting");
    assert!(e.contains("not a setting of my-lock"), "{e}");
    let e = locksim_algos::register(vec![mine("other")]).unwrap_err();
    assert!(e.contains("once"), "{e}");
    // The same set again (each test of a crate registers it): nothing changes.
    locksim_algos::register(vec![mine("my-lock")]).unwrap();
    assert_eq!(
        locksim_algos::algorithms().len(),
        locksim_algos::ALGORITHMS.len() + 1
    );
}
