//! Why a history is not linearizable, as data for people and pictures: the failing part's
//! operations on a time axis, the longest linearizable prefix in order with the model's state
//! after each step, and each operation that could not be placed next with the model's reason
//! ([`Model::why_not`]). `locksim check --html`/`--json` and the S3 section of `locksim render`
//! draw and print it.

use serde::Serialize;

use super::{Counterexample, Model, Operation};

/// One operation as a report shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExplainedOp {
    /// The operation's id (event id, line number).
    pub id: u64,
    /// Who performed it (`c2`, `process 4`).
    pub process: String,
    /// Invocation time.
    pub call: u64,
    /// Completion time; `None` when it never completed.
    pub ret: Option<u64>,
    /// `ok`, `fail` (completed, did nothing) or `info` (unknown outcome).
    pub outcome: &'static str,
    /// One line about it ([`Model::describe`]).
    pub text: String,
    /// `false` for operations shown for context but not checked (e.g. failed releases).
    pub checked: bool,
}

/// A step of the longest linearizable prefix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PrefixStep {
    /// The operation linearized.
    pub id: u64,
    /// The model's state after it.
    pub state: String,
}

/// An operation that could not be placed after the prefix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StuckOp {
    /// The operation.
    pub id: u64,
    /// Why, in the model's words.
    pub reason: String,
}

/// The explanation of one failing part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Explanation {
    /// What the part is (`k0`, `key "3"`, `the register`).
    pub title: String,
    /// The time axis: `ns` (true time) or `line` (line numbers of the input).
    pub unit: &'static str,
    /// The part's operations shown, in call order (all of them, unless `ops_skipped`).
    pub ops: Vec<ExplainedOp>,
    /// The model's state before the first step of `prefix`: before any operation, unless
    /// `prefix_skipped` steps come first.
    pub initial: String,
    /// The longest linearizable prefix found, in order: its last steps only when
    /// `prefix_skipped` is not 0.
    pub prefix: Vec<PrefixStep>,
    /// The operations none of which could go next.
    pub stuck: Vec<StuckOp>,
    /// Steps of the prefix before the first one in `prefix`, not shown ([`Limits`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub prefix_skipped: usize,
    /// Operations of the part not in `ops` ([`Limits`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub ops_skipped: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// How much of a failing part an explanation keeps, so that a report on a history of
/// millions of operations stays small: the last `prefix_steps` steps of the prefix, and
/// about `ops` operations around the stuck ones (those the shown steps and the stuck
/// operations name are always kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Prefix steps shown, at most.
    pub prefix_steps: usize,
    /// Operations shown beside those the steps and the stuck operations name.
    pub ops: usize,
}

impl Limits {
    /// Everything.
    pub const ALL: Limits = Limits {
        prefix_steps: usize::MAX,
        ops: usize::MAX,
    };
    /// What `locksim check` prints and draws: 200 steps and 1,000 operations (a text, JSON
    /// or page of a few hundred KB at most, whatever the history's size).
    pub const REPORT: Limits = Limits {
        prefix_steps: 200,
        ops: 1_000,
    };
}

impl Explanation {
    /// The counterexample `c` of a check of `ops` against `model`, with `process` naming
    /// each process and `outcome` classifying each operation (`ok`, `fail`, `info`): all of
    /// it ([`Limits::ALL`]).
    pub fn new<M: Model>(
        model: &M,
        ops: &[Operation<M::Input, M::Output>],
        c: &Counterexample,
        title: String,
        unit: &'static str,
        process: impl Fn(u64) -> String,
        outcome: impl Fn(&Operation<M::Input, M::Output>) -> &'static str,
    ) -> Explanation {
        Explanation::bounded(model, ops, c, title, unit, process, outcome, Limits::ALL)
    }

    /// [`Explanation::new`] within `limits`: the last steps of the prefix (with the state
    /// before the first of them as `initial`), and the operations of the part nearest the
    /// stuck ones in call order. Work and size are O(shown + part), never O(part × shown).
    #[allow(clippy::too_many_arguments)]
    pub fn bounded<M: Model>(
        model: &M,
        ops: &[Operation<M::Input, M::Output>],
        c: &Counterexample,
        title: String,
        unit: &'static str,
        process: impl Fn(u64) -> String,
        outcome: impl Fn(&Operation<M::Input, M::Output>) -> &'static str,
        limits: Limits,
    ) -> Explanation {
        use std::collections::BTreeSet;
        let skipped = c.prefix.len().saturating_sub(limits.prefix_steps);
        let initial = match skipped {
            0 => c.initial.clone(),
            k => c.states[k - 1].clone(),
        };
        let named: BTreeSet<u64> = c.prefix[skipped..]
            .iter()
            .chain(&c.stuck)
            .copied()
            .collect();
        // The part's operations in call order; a window of `limits.ops` of them that ends a
        // quarter past the first stuck one, and every operation named.
        let part = &c.part_ops;
        let keep: Vec<usize> = if part.len() <= limits.ops {
            part.clone()
        } else {
            let stuck: BTreeSet<u64> = c.stuck.iter().copied().collect();
            let first_stuck = part
                .iter()
                .position(|&i| stuck.contains(&ops[i].id))
                .unwrap_or(part.len() - 1);
            let after = (limits.ops / 4).min(part.len() - 1 - first_stuck);
            let hi = first_stuck + after + 1;
            let lo = hi.saturating_sub(limits.ops);
            part.iter()
                .enumerate()
                .filter(|(k, &i)| (lo..hi).contains(k) || named.contains(&ops[i].id))
                .map(|(_, &i)| i)
                .collect()
        };
        Explanation {
            title,
            unit,
            ops_skipped: part.len() - keep.len(),
            ops: keep
                .iter()
                .map(|&i| {
                    let o = &ops[i];
                    ExplainedOp {
                        id: o.id,
                        process: process(o.process),
                        call: o.call,
                        ret: o.ret,
                        outcome: outcome(o),
                        text: model.describe(o),
                        checked: true,
                    }
                })
                .collect(),
            initial,
            prefix_skipped: skipped,
            prefix: c.prefix[skipped..]
                .iter()
                .zip(&c.states[skipped..])
                .map(|(&id, s)| PrefixStep {
                    id,
                    state: s.clone(),
                })
                .collect(),
            stuck: c
                .stuck
                .iter()
                .zip(&c.reasons)
                .map(|(&id, r)| StuckOp {
                    id,
                    reason: r.clone(),
                })
                .collect(),
        }
    }

    /// The prefix's whole length (shown and skipped steps).
    pub fn prefix_len(&self) -> usize {
        self.prefix_skipped + self.prefix.len()
    }

    /// The compact text form: the prefix's length and last step, then each stuck operation
    /// with its reason; `id` writes an operation id for people (`line 12`, `event #40`).
    pub fn text(&self, id: impl Fn(u64) -> String) -> String {
        let n = self.prefix_len();
        let mut t = format!(
            "  {}: the longest linearizable prefix has {} operation{}",
            self.title,
            n,
            if n == 1 { "" } else { "s" }
        );
        match self.prefix.last() {
            Some(last) => {
                let what = self
                    .ops
                    .iter()
                    .find(|o| o.id == last.id)
                    .map_or(String::new(), |o| o.text.clone());
                t += &format!(
                    ", ending with {}: {what}; state then: {}\n",
                    id(last.id),
                    last.state
                );
            }
            None => t += &format!("; state: {}\n", self.initial),
        }
        t += "  none of these can take effect next:\n";
        for s in &self.stuck {
            t += &format!("    {}: {}\n", id(s.id), s.reason);
        }
        t
    }
}
