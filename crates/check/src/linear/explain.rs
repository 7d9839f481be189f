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
    /// The part's operations, in call order.
    pub ops: Vec<ExplainedOp>,
    /// The model's state before any operation.
    pub initial: String,
    /// The longest linearizable prefix found, in order.
    pub prefix: Vec<PrefixStep>,
    /// The operations none of which could go next.
    pub stuck: Vec<StuckOp>,
}

impl Explanation {
    /// The counterexample `c` of a check of `ops` against `model`, with `process` naming
    /// each process and `outcome` classifying each operation (`ok`, `fail`, `info`).
    pub fn new<M: Model>(
        model: &M,
        ops: &[Operation<M::Input, M::Output>],
        c: &Counterexample,
        title: String,
        unit: &'static str,
        process: impl Fn(u64) -> String,
        outcome: impl Fn(&Operation<M::Input, M::Output>) -> &'static str,
    ) -> Explanation {
        Explanation {
            title,
            unit,
            ops: c
                .part_ops
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
            initial: c.initial.clone(),
            prefix: c
                .prefix
                .iter()
                .zip(&c.states)
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

    /// The compact text form: the prefix's length and last step, then each stuck operation
    /// with its reason; `id` writes an operation id for people (`line 12`, `event #40`).
    pub fn text(&self, id: impl Fn(u64) -> String) -> String {
        let mut t = format!(
            "  {}: the longest linearizable prefix has {} operation{}",
            self.title,
            self.prefix.len(),
            if self.prefix.len() == 1 { "" } else { "s" }
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
