//! A third party's algorithm registered by name is built, listed and described like a built-in
//! one; bad registrations are refused with their reason. (One test: the registry is fixed once
//! per process.)

use std::collections::BTreeMap;
use std::sync::Arc;

use locksim_algos::{Knob, Registration};
use locksim_core::Workload;
use locksim_sim::{async_trait, Grant, LockAlgorithm, LockClient, NodeCtx, Outcome, Validity};
use std::rc::Rc;

/// An algorithm named as registered (`name()` must be the registered name): every acquire
/// fails; nothing here runs it.
struct MyLock;

struct Refuses;

#[async_trait(?Send)]
impl LockClient for Refuses {
    async fn acquire(&self, _key: u32, _ttl: u64) -> Outcome<Grant> {
        Outcome::Fail("never".into())
    }
    async fn release(&self, _grant: &Grant) -> Outcome<()> {
        Outcome::Fail("never".into())
    }
    async fn extend(&self, _grant: &Grant, _ttl: u64) -> Outcome<Option<Validity>> {
        Outcome::Fail("never".into())
    }
}

#[async_trait(?Send)]
impl LockAlgorithm for MyLock {
    fn name(&self) -> &str {
        "my-lock"
    }
    fn servers(&self) -> u32 {
        1
    }
    async fn serve(&self, ctx: NodeCtx) {
        loop {
            ctx.recv().await;
        }
    }
    fn client(&self, _ctx: NodeCtx) -> Rc<dyn LockClient> {
        Rc::new(Refuses)
    }
}

const KNOBS: &[Knob] = &[Knob {
    key: "clock",
    default: "mono",
    help: "a clock it never reads",
}];

fn build(
    config: &BTreeMap<String, String>,
    w: &Workload,
) -> Result<Arc<dyn LockAlgorithm>, String> {
    locksim_algos::knobs::Knobs::new("my-lock", config, KNOBS)?;
    let _ = w;
    Ok(Arc::new(MyLock))
}

/// Builds a built-in algorithm under another name: refused, as its traces would carry the
/// built-in name.
fn misnamed(
    _config: &BTreeMap<String, String>,
    w: &Workload,
) -> Result<Arc<dyn LockAlgorithm>, String> {
    locksim_algos::build("central", &BTreeMap::new(), w)
}

fn mine(name: &'static str) -> Registration {
    Registration {
        name,
        what: "a lock that refuses everyone",
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
    let e = locksim_algos::register(vec![mine("-x")]).unwrap_err();
    assert!(e.contains("starting with a letter"), "{e}");
    const BAD: &[Knob] = &[Knob {
        key: "c2.ttl",
        default: "1s",
        help: "",
    }];
    let e = locksim_algos::register(vec![Registration {
        knobs: BAD,
        ..mine("my-lock")
    }])
    .unwrap_err();
    assert!(e.contains("setting `c2.ttl`"), "{e}");

    let both = || {
        vec![
            mine("my-lock"),
            Registration {
                build: misnamed,
                ..mine("other-name")
            },
        ]
    };
    locksim_algos::register(both()).unwrap();
    assert_eq!(
        locksim_algos::build("my-lock", &none, &w).unwrap().name(),
        "my-lock"
    );
    let e = locksim_algos::build("other-name", &none, &w)
        .err()
        .expect("a misnamed build");
    assert!(e.contains("name() is `central`"), "{e}");
    assert_eq!(locksim_algos::knobs("my-lock").unwrap()[0].key, "clock");
    assert!(locksim_algos::names().ends_with(", my-lock, other-name"));
    assert_eq!(
        locksim_algos::algorithms()[locksim_algos::ALGORITHMS.len()],
        ("my-lock", "a lock that refuses everyone")
    );
    let bad: BTreeMap<String, String> = [("ttl_ms".to_string(), "5".to_string())].into();
    let e = locksim_algos::build("my-lock", &bad, &w)
        .err()
        .expect("a bad setting");
    assert!(e.contains("not a setting of my-lock"), "{e}");
    let e = locksim_algos::register(vec![mine("other")]).unwrap_err();
    assert!(e.contains("once"), "{e}");
    // The same set again (each test of a crate registers it): nothing changes.
    locksim_algos::register(both()).unwrap();
    assert_eq!(
        locksim_algos::algorithms().len(),
        locksim_algos::ALGORITHMS.len() + 2
    );
}
