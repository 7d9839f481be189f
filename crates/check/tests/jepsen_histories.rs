//! Verdict agreement with the known verdicts of real histories recorded by other people's
//! tools: Jepsen's etcd register logs and Porcupine's kv histories, read from
//! `../shared/data/histories` (or `$LOCKSIM_HISTORIES`). The data is not copied into the project.

use std::path::PathBuf;

use locksim_check::formats::{edn, jepsen};
use locksim_check::linear::models::{kv::Kv, register::Register};
use locksim_check::linear::{check, Budget, Verdict};

fn histories() -> Option<PathBuf> {
    let dir = std::env::var_os("LOCKSIM_HISTORIES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/histories")
        });
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "NOTE: {} does not exist: the Jepsen/Porcupine histories are not on this machine, so \
             this test checks nothing (set LOCKSIM_HISTORIES to their folder)",
            dir.display()
        );
        None
    }
}

fn expected(dir: &std::path::Path) -> Vec<(String, bool)> {
    let text = std::fs::read_to_string(dir.join("EXPECTED.tsv")).expect("EXPECTED.tsv");
    text.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (f, v) = l.split_once('\t').expect("file<TAB>verdict");
            (f.to_string(), v.trim() == "true")
        })
        .collect()
}

#[test]
fn etcd_verdicts_agree_with_expected() {
    let Some(root) = histories() else { return };
    let dir = root.join("etcd");
    let cases = expected(&dir);
    assert_eq!(cases.len(), 72, "EXPECTED.tsv lists 72 etcd histories");
    let mut bad = Vec::new();
    for (file, linearizable) in &cases {
        let ops = jepsen::read_etcd_log(&dir.join(file)).unwrap_or_else(|e| panic!("{e}"));
        let (v, _) = check(&Register, &ops, &Budget::default());
        let got = match v {
            Verdict::Linearizable => true,
            Verdict::NotLinearizable(_) => false,
            Verdict::Unknown(why) => panic!("{file}: unknown: {why}"),
        };
        if got != *linearizable {
            bad.push(file.clone());
        }
    }
    assert!(bad.is_empty(), "verdicts disagree on {bad:?}");
}

#[test]
fn kv_verdicts_agree_with_expected() {
    let Some(root) = histories() else { return };
    let dir = root.join("kv");
    let cases = expected(&dir);
    assert_eq!(cases.len(), 6);
    for (file, linearizable) in &cases {
        let ops = edn::read_kv(&dir.join(file)).unwrap_or_else(|e| panic!("{e}"));
        let budget = Budget {
            threads: 2,
            ..Budget::default()
        };
        let (v, stats) = check(&Kv, &ops, &budget);
        assert!(stats.parts > 1, "{file}: kv histories split per key");
        match (&v, linearizable) {
            (Verdict::Linearizable, true) => {}
            (Verdict::NotLinearizable(c), false) => {
                assert!(
                    !c.stuck.is_empty(),
                    "{file}: a counterexample names the stuck operations"
                );
            }
            _ => panic!("{file}: expected linearizable={linearizable}, got {v:?}"),
        }
    }
}
