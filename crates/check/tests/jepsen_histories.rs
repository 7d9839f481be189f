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

#[test]
fn a_budget_that_runs_out_gives_unknown_with_its_reason() {
    let Some(root) = histories() else { return };
    // etcd_007 needs a few hundred configurations and a few thousand steps.
    let ops = jepsen::read_etcd_log(&root.join("etcd/etcd_007.log")).unwrap();
    let (v, stats) = check(&Register, &ops, &Budget::default());
    assert_eq!(v, Verdict::Linearizable);
    assert!(stats.configs > 100 && stats.steps > 1_000, "{stats:?}");
    let tight = Budget {
        max_configs: Some(100),
        ..Budget::default()
    };
    match check(&Register, &ops, &tight).0 {
        Verdict::Unknown(why) => assert!(why.contains("memory budget"), "{why}"),
        other => panic!("expected unknown, got {other:?}"),
    }
    let tight = Budget {
        max_steps: Some(1_000),
        ..Budget::default()
    };
    assert!(matches!(
        check(&Register, &ops, &tight).0,
        Verdict::Unknown(_)
    ));
}

#[test]
fn malformed_lines_name_the_file_the_line_and_the_problem() {
    use std::path::Path;
    let p = Path::new("bad.log");
    let cases = [
        ("INFO  jepsen.util - 0\t:invoke\t:read\tnil\nINFO  jepsen.util - 0\t:ok\t:read\tseven\n", 2, "not an integer"),
        ("INFO  jepsen.util - 0\t:invoke\t:frobnicate\t1\n", 1, "unknown function"),
        ("INFO  jepsen.util - 3\t:ok\t:write\t1\n", 1, "never invoked"),
        ("INFO  jepsen.util - 0\t:invoke\t:read\tnil\nINFO  jepsen.util - 0\t:invoke\t:read\tnil\n", 2, "still open"),
        ("garbage\n", 1, "expected"),
    ];
    for (text, line, needle) in cases {
        let e = jepsen::parse_etcd_log(p, text).unwrap_err();
        assert_eq!(e.line, Some(line), "{e}");
        assert!(
            e.to_string().starts_with(&format!("bad.log:{line}: ")),
            "{e}"
        );
        assert!(e.problem.contains(needle), "{e}");
    }
    let e = edn::parse_kv(
        Path::new("kv.txt"),
        "{:process 1, :type :invoke, :f :get, :key \"a\"}\n{:process 1, :type :ok, :f :put}\n",
    )
    .unwrap_err();
    assert_eq!(e.line, Some(2), "{e}");
    assert!(e.problem.contains("invoked as :get"), "{e}");
    let e = edn::parse_kv(
        Path::new("kv.txt"),
        "{:process 1, :type :invoke, :f :get, :key \"a}\n",
    )
    .unwrap_err();
    assert!(e.problem.contains("unterminated string"), "{e}");
}

#[test]
fn the_verdict_and_its_counterexample_do_not_depend_on_threads() {
    let Some(root) = histories() else { return };
    for file in ["c10-bad.txt", "c50-bad.txt", "c50-ok.txt"] {
        let ops = edn::read_kv(&root.join("kv").join(file)).unwrap();
        let one = check(
            &Kv,
            &ops,
            &Budget {
                threads: 1,
                ..Budget::default()
            },
        )
        .0;
        for threads in [2, 3, 8] {
            let many = check(
                &Kv,
                &ops,
                &Budget {
                    threads,
                    ..Budget::default()
                },
            )
            .0;
            assert_eq!(one, many, "{file}: 1 thread and {threads} disagree");
        }
    }
}

#[test]
fn a_cheap_failing_part_answers_first_on_one_thread() {
    // c50-bad's first part is hard; a failing one is cheap. Parts take turns, smallest first,
    // so one thread finds the failure within a small, deterministic number of steps.
    let Some(root) = histories() else { return };
    let ops = edn::read_kv(&root.join("kv/c50-bad.txt")).unwrap();
    let budget = Budget {
        threads: 1,
        max_steps: Some(2_000_000),
        ..Budget::default()
    };
    let (v, stats) = check(&Kv, &ops, &budget);
    assert!(matches!(v, Verdict::NotLinearizable(_)), "{v:?} {stats:?}");
    assert!(stats.rounds >= 1 && stats.parts == 10, "{stats:?}");
}

#[test]
fn after_the_first_round_the_part_likeliest_to_fail_goes_first() {
    // Every key of c50-bad fails; key "3" cheaply (its search stays near its start: 22 of 206
    // operations). In smallest-first order it came eighth, so one thread ran seven other
    // parts' second slices first (146,326 steps); ranked by progress it goes first in the
    // second round, and its failure ends the search (87,798 steps).
    let Some(root) = histories() else { return };
    let ops = edn::read_kv(&root.join("kv/c50-bad.txt")).unwrap();
    let budget = Budget {
        threads: 1,
        max_steps: Some(100_000),
        ..Budget::default()
    };
    let (v, stats) = check(&Kv, &ops, &budget);
    let Verdict::NotLinearizable(c) = v else {
        panic!("{v:?} {stats:?}")
    };
    assert!(stats.steps < 100_000, "{stats:?}");
    assert_eq!(c.prefix.len(), 22, "{c:?}");
    // The same part and prefix on two threads (without the step budget, which the second
    // thread's slices also spend).
    let two = check(
        &Kv,
        &ops,
        &Budget {
            threads: 2,
            ..Budget::default()
        },
    )
    .0;
    assert_eq!(two, Verdict::NotLinearizable(c));
}

#[test]
fn reasons_are_in_the_models_words() {
    let Some(root) = histories() else { return };
    let ops = jepsen::read_etcd_log(&root.join("etcd/etcd_001.log")).unwrap();
    let Verdict::NotLinearizable(c) = check(&Register, &ops, &Budget::default()).0 else {
        panic!("etcd_001 is not linearizable");
    };
    assert_eq!(c.states.len(), c.prefix.len());
    assert_eq!(c.reasons.len(), c.stuck.len());
    assert!(
        c.reasons
            .iter()
            .all(|r| r.contains("but the register holds")),
        "{:?}",
        c.reasons
    );
    // The reason names the state after the prefix.
    let last = c.states.last().unwrap();
    assert!(
        c.reasons[0].ends_with(&format!("holds {last}")),
        "{:?} / {last}",
        c.reasons
    );
}
