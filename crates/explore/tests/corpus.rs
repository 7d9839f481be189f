//! The regression corpus in `traces/`: every trace replays to its recorded digest and verdict.
//! `write_corpus` (ignored; run it by name) regenerates the corpus from the cases of
//! `shared/cases/CASES.md` and the default campaign's first failing seeds.

mod common;

use std::path::{Path, PathBuf};

use locksim_core::{FaultKind, Property, Trace};
use locksim_explore::replay::replay;
use locksim_explore::shrink::{shrink, trace_file_name};
use locksim_explore::{check_scenario, Setup};

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../traces")
}

#[test]
fn every_trace_in_the_corpus_replays_exactly() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus())
        .expect("traces/ exists")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 5,
        "the corpus holds at least K1, K4, K5 and the campaign's finds: {files:?}"
    );
    for f in &files {
        let trace = Trace::read(f).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            !trace.verdict.is_safe(),
            "{}: a corpus trace records a violation",
            f.display()
        );
        let r = replay(&trace).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(
            r.ok(),
            "{}: digest {} (recorded {}), first difference {:?}",
            f.display(),
            r.digest,
            trace.digest,
            r.first_difference
        );
    }
}

fn keep(dir: &Path, name: &str, trace: &Trace) {
    let path = dir.join(name);
    trace.write_new(&path).unwrap();
    eprintln!("wrote {}", path.display());
}

fn hand_written(
    dir: &Path,
    case: &str,
    property: Property,
    (setup, scenario): (Setup, locksim_core::Scenario),
) {
    let out = check_scenario(&scenario, setup.algo);
    let h = out.history.expect("runs");
    assert!(out.verdict.violates(property), "{case}: {:?}", out.verdict);
    let trace = Trace::new(scenario, h.digest(), out.verdict, Some(h.events));
    keep(
        dir,
        &format!("{case}-{}", trace_file_name(&trace, property)),
        &trace,
    );
}

fn shrunk(dir: &Path, algo: &str, seed: u64, kind: FaultKind, property: Property) {
    shrunk_case(dir, "", algo, &[], seed, kind, property);
}

/// Shrinks seed `seed` of `algo` with `settings` under `kind`, keeping `property`; the file name
/// gets `prefix` (e.g. `k2-`).
fn shrunk_case(
    dir: &Path,
    prefix: &str,
    algo: &str,
    settings: &[(&str, &str)],
    seed: u64,
    kind: FaultKind,
    property: Property,
) {
    let settings: Vec<(String, String)> = settings
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let setup = Setup::registered(algo, &settings).unwrap();
    let s = shrink(&setup.scenario(seed, &[kind]), property, &|_| {}).unwrap();
    let trace = s.trace(true);
    keep(
        dir,
        &format!("{prefix}{}", trace_file_name(&trace, property)),
        &trace,
    );
}

/// Shrinks seed `seed` of campaign file `file` (under `sims/`), keeping `property`; the file
/// name gets `prefix`.
fn shrunk_file(dir: &Path, prefix: &str, file: &str, seed: u64, property: Property) {
    let path = dir.join("../sims").join(file);
    let f = locksim_explore::campaign_file::CampaignFile::read(&path).unwrap();
    let kinds = locksim_core::fault::parse_kinds(&f.faults).unwrap();
    let setup = f.spec(1).unwrap().setups.remove(0);
    let s = shrink(&setup.scenario(seed, &kinds), property, &|_| {}).unwrap();
    let trace = s.trace(true);
    keep(
        dir,
        &format!("{prefix}{}", trace_file_name(&trace, property)),
        &trace,
    );
}

#[test]
#[ignore = "regenerates traces/: cargo test -p locksim-explore --test corpus -- --ignored write_corpus"]
fn write_corpus() {
    let dir = corpus();
    hand_written(&dir, "k1", Property::S2, common::cases::k1("central"));
    hand_written(
        &dir,
        "k1",
        Property::S1,
        common::cases::k1("central-fencing"),
    );
    hand_written(&dir, "k4", Property::S1, common::cases::k4(&[]));
    hand_written(&dir, "k5", Property::S1, common::cases::k5(&[]));
    hand_written(&dir, "k5-pause", Property::S1, common::cases::k5_pause());
    // The default campaign's first failing seeds (`locksim campaign`), shrunk.
    shrunk(&dir, "redlock", 6, FaultKind::Pause, Property::S1);
    shrunk(&dir, "redlock", 6, FaultKind::ClockJump, Property::S1);
    shrunk(&dir, "central", 1, FaultKind::Pause, Property::S2);
    shrunk(&dir, "central-fencing", 1, FaultKind::Pause, Property::S1);
    shrunk(&dir, "central", 0, FaultKind::ClockJump, Property::S3);
    shrunk(&dir, "central", 3, FaultKind::CrashRestart, Property::S3);
    // raft-lease: the inherent pause double grant, and its two bug toggles (CASES.md K2, K3);
    // ap-lock's split brain (K6).
    shrunk(&dir, "raft-lease", 1, FaultKind::Pause, Property::S1);
    let k2 = [("grant_on_expired_lease", "true")];
    shrunk_case(
        &dir,
        "k2-",
        "raft-lease",
        &k2,
        3,
        FaultKind::DropReplies,
        Property::S1,
    );
    let k3 = [("unlock_by_name", "true")];
    shrunk_case(
        &dir,
        "k3-",
        "raft-lease",
        &k3,
        70,
        FaultKind::Delay,
        Property::S4,
    );
    shrunk_case(
        &dir,
        "k6-",
        "ap-lock",
        &[],
        0,
        FaultKind::Partition,
        Property::S1,
    );
    // Liveness: the first failing seed of each L file of sims/, shrunk.
    let l1 = "l1-central-watchdog-hung-holder.toml";
    shrunk_file(&dir, "l1-", l1, 5, Property::L1);
    let l2 = "l2-raft-lease-renewal-gives-up.toml";
    shrunk_file(&dir, "l2-", l2, 0, Property::L2);
    let l3 = "l3-raft-lease-orphaned-unlock.toml";
    shrunk_file(&dir, "l3-", l3, 6, Property::L3);
}
