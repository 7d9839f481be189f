//! The search agrees with brute force on small random histories: every subset of the unknown
//! operations, every order that respects real time, run through the sequential model.

use locksim_check::linear::models::kv::{Kv, KvInput, KvOutput};
use locksim_check::linear::models::lock::{LeaseLock, LockInput, LockOutput};
use locksim_check::linear::models::register::{Register, RegisterInput, RegisterOutput};
use locksim_check::linear::{check, Budget, Model, Operation, Verdict};
use proptest::prelude::*;

/// Brute force: is there a set of operations (all completed ones, any of the unknown ones) and
/// an order of them that respects real time (a before b when a returned before b was called)
/// and that the model accepts step by step?
fn brute<M: Model>(model: &M, ops: &[Operation<M::Input, M::Output>]) -> bool {
    fn go<M: Model>(
        model: &M,
        ops: &[Operation<M::Input, M::Output>],
        used: &mut Vec<bool>,
        state: M::State,
    ) -> bool {
        // Done when every completed operation is placed (unplaced unknown ones never happened).
        if ops
            .iter()
            .zip(used.iter())
            .all(|(o, &u)| u || o.ret.is_none())
        {
            return true;
        }
        for i in 0..ops.len() {
            if used[i] {
                continue;
            }
            // i may go next only if no unplaced completed operation returned before i's call.
            let blocked = ops
                .iter()
                .enumerate()
                .any(|(j, o)| !used[j] && j != i && o.ret.is_some_and(|r| r < ops[i].call));
            if blocked {
                continue;
            }
            if let Some(next) = model.step(&state, &ops[i]) {
                used[i] = true;
                if go(model, ops, used, next) {
                    return true;
                }
                used[i] = false;
            }
        }
        false
    }
    let mut used = vec![false; ops.len()];
    go(model, ops, &mut used, model.init())
}

/// An independent whole-store spec for the brute force (a map of all keys), so that the
/// search's per-key split is checked too, not assumed.
struct WholeStore;

impl Model for WholeStore {
    type State = std::collections::BTreeMap<String, String>;
    type Input = KvInput;
    type Output = KvOutput;
    fn init(&self) -> Self::State {
        Default::default()
    }
    fn step(&self, s: &Self::State, op: &Operation<KvInput, KvOutput>) -> Option<Self::State> {
        let mut s = s.clone();
        match (&op.input, &op.output) {
            (KvInput::Get { key }, KvOutput::Value(v)) => {
                return (s.get(key).map_or("", String::as_str) == v).then_some(s)
            }
            (KvInput::Get { .. }, _) => {}
            (KvInput::Put { key, value }, _) => {
                s.insert(key.clone(), value.clone());
            }
            (KvInput::Append { key, value }, _) => {
                s.entry(key.clone()).or_default().push_str(value)
            }
        }
        Some(s)
    }
}

fn verdict<M: Model>(model: &M, ops: &[Operation<M::Input, M::Output>]) -> bool {
    match check(
        model,
        ops,
        &Budget {
            threads: 2,
            ..Budget::default()
        },
    )
    .0
    {
        Verdict::Linearizable => true,
        Verdict::NotLinearizable(_) => false,
        Verdict::Unknown(w) => panic!("unknown: {w}"),
    }
}

fn timing() -> impl Strategy<Value = (u64, Option<u64>)> {
    (0u64..30, 0u64..12, prop::bool::weighted(0.2))
        .prop_map(|(c, d, unknown)| (c, if unknown { None } else { Some(c + d) }))
}

fn register_op() -> impl Strategy<Value = Operation<RegisterInput, RegisterOutput>> {
    let v = 0i64..3;
    (
        timing(),
        0u8..4,
        v.clone(),
        v,
        any::<bool>(),
        prop::option::of(0i64..3),
    )
        .prop_map(|((call, ret), kind, a, b, flag, read)| {
            let (input, output) = match kind {
                0 => (RegisterInput::Read, RegisterOutput::Read(read)),
                1 => (RegisterInput::Write(a), RegisterOutput::Written),
                2 => (RegisterInput::Swap(a), RegisterOutput::Swapped(read)),
                _ => (
                    RegisterInput::Cas { from: a, to: b },
                    RegisterOutput::Cas(flag),
                ),
            };
            let output = if ret.is_none() {
                RegisterOutput::Unknown
            } else {
                output
            };
            Operation {
                process: 0,
                input,
                output,
                call,
                ret,
                id: 0,
            }
        })
}

fn kv_op() -> impl Strategy<Value = Operation<KvInput, KvOutput>> {
    (
        timing(),
        0u8..3,
        0u8..2,
        0u8..3,
        prop::sample::select(vec!["", "a", "b", "ab", "ba", "aa"]),
    )
        .prop_map(|((call, ret), kind, key, v, read)| {
            let key = format!("k{key}");
            let value = ["a", "b", "c"][v as usize].to_string();
            let (input, output) = match kind {
                0 => (KvInput::Get { key }, KvOutput::Value(read.to_string())),
                1 => (KvInput::Put { key, value }, KvOutput::Done),
                _ => (KvInput::Append { key, value }, KvOutput::Done),
            };
            let output = if ret.is_none() {
                KvOutput::Unknown
            } else {
                output
            };
            Operation {
                process: 0,
                input,
                output,
                call,
                ret,
                id: 0,
            }
        })
}

fn number<I, O>(mut ops: Vec<Operation<I, O>>) -> Vec<Operation<I, O>> {
    for (i, o) in ops.iter_mut().enumerate() {
        o.id = i as u64;
        o.process = i as u64;
    }
    ops
}

/// A lock history: acquires with distinct handles, and for some of them a release or a
/// renewal invoked after the acquire was answered (as a client does), some with unknown
/// outcomes. Times in ns of a 10 ns lease with ±2 ns uncertainty.
fn lock_ops() -> impl Strategy<Value = Vec<Operation<LockInput, LockOutput>>> {
    prop::collection::vec(
        (0u64..30, 0u64..6, 0u8..4, 1u64..12, 0u64..6, any::<bool>()),
        1..=4,
    )
    .prop_map(|grants| {
        let mut ops = Vec::new();
        for (i, (call, dur, then, gap, rdur, unknown)) in grants.into_iter().enumerate() {
            let handle = i as u64 + 1;
            let ret = call + dur;
            ops.push(Operation {
                process: i as u64,
                input: LockInput::Acquire {
                    key: 0,
                    ttl: 10,
                    handle,
                    since: None,
                },
                output: LockOutput::Ok,
                call,
                ret: Some(ret),
                id: 0,
            });
            let input = match then {
                0 | 1 => LockInput::Release { key: 0, handle },
                2 => LockInput::Extend {
                    key: 0,
                    ttl: 10,
                    handle,
                },
                _ => continue,
            };
            let rcall = ret + gap;
            ops.push(Operation {
                process: i as u64,
                input,
                output: if unknown {
                    LockOutput::Unknown
                } else {
                    LockOutput::Ok
                },
                call: rcall,
                ret: (!unknown).then_some(rcall + rdur),
                id: 0,
            });
        }
        ops
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn lock_search_agrees_with_brute_force(ops in lock_ops()) {
        let ops: Vec<_> = ops.into_iter().enumerate().map(|(i, mut o)| { o.id = i as u64; o }).collect();
        let model = LeaseLock::new(2);
        prop_assert_eq!(verdict(&model, &ops), brute(&model, &ops));
    }

    #[test]
    fn register_search_agrees_with_brute_force(ops in prop::collection::vec(register_op(), 1..=8)) {
        let ops = number(ops);
        prop_assert_eq!(verdict(&Register, &ops), brute(&Register, &ops));
    }

    #[test]
    fn kv_search_agrees_with_brute_force(ops in prop::collection::vec(kv_op(), 1..=8)) {
        let ops = number(ops);
        prop_assert_eq!(verdict(&Kv, &ops), brute(&WholeStore, &ops));
    }
}

#[test]
fn the_generators_produce_both_verdicts() {
    // A differential test whose histories were all linearizable would prove little.
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut yes, mut no) = (0, 0);
    for _ in 0..500 {
        let ops = number(
            prop::collection::vec(register_op(), 1..=8)
                .new_tree(&mut runner)
                .unwrap()
                .current(),
        );
        if brute(&Register, &ops) {
            yes += 1
        } else {
            no += 1
        }
    }
    assert!(yes > 50 && no > 50, "linearizable {yes}, not {no}");
    let (mut yes, mut no) = (0, 0);
    for _ in 0..500 {
        let ops = lock_ops().new_tree(&mut runner).unwrap().current();
        if brute(&LeaseLock::new(2), &ops) {
            yes += 1
        } else {
            no += 1
        }
    }
    assert!(
        yes > 50 && no > 50,
        "lock histories: linearizable {yes}, not {no}"
    );
}
