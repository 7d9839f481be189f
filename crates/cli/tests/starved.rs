//! The `starved` label (issue #24, item 4): it warns that a cell hardly exercised the lock
//! because waiters were kept waiting while nobody held it — not because one holder held for
//! long.

mod common;
use common::{locksim, s, scratch, stdout};

/// The table's row for the cell (the line after the header).
fn row(args: &[&str]) -> String {
    let o = locksim(args);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    let out = stdout(&o);
    let mut lines = out.lines().skip_while(|l| !l.starts_with("algorithm"));
    lines.next();
    lines.next().expect("a cell row").to_string()
}

#[test]
fn a_long_hold_is_not_starvation() {
    // c1 takes the lock first and holds it for the whole run (1,000 writes of 20 ms under a
    // 60 s lease); c2 and c3 ask hundreds of times and are refused while it is held.
    let r = row(&[
        "campaign",
        "--algo",
        "central",
        "--faults",
        "none",
        "--seeds",
        "5",
        "--set",
        "writes=1000",
        "--set",
        "work_min=20ms",
        "--set",
        "work_max=20ms",
        "--set",
        "ttl=60s",
    ]);
    assert!(r.contains(" 5  "), "one grant per seed: {r}");
    assert!(!r.contains("starved"), "{r}");
}

#[test]
fn waiters_refused_while_nobody_holds_the_lock_are_starved() {
    // From 1 s on every client is cut off from the server: the few grants of the first second,
    // then nine seconds of waiters timing out while nobody holds the lock.
    let dir = scratch("starved", "cut");
    let plan = dir.join("cut.toml");
    std::fs::write(
        &plan,
        "[[fault]]\nat = \"1s\"\ntype = \"partition\"\na = \"clients\"\nb = \"servers\"\nduration = \"60s\"\n",
    )
    .unwrap();
    let r = row(&[
        "campaign",
        "--algo",
        "central",
        "--faults",
        "none",
        "--plan",
        s(&plan),
        "--seeds",
        "5",
    ]);
    assert!(
        r.contains("starved:") && r.contains("while nobody held the lock"),
        "{r}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
