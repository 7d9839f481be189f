//! A register with read, write, compare-and-set and swap, starting empty (`nil`): Jepsen's etcd
//! tests use the first three, locksim's resource the swap. A read may return `nil`.

use crate::linear::{Model, Operation};

/// What a register operation asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegisterInput {
    /// Read the value.
    Read,
    /// Write a value.
    Write(i64),
    /// Set to `to` if the value is `from`.
    Cas { from: i64, to: i64 },
    /// Write a value and return the one it replaced (`GETSET`): locksim's resource.
    Swap(i64),
}

/// What a register operation observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegisterOutput {
    /// A read's value (`None` = nil).
    Read(Option<i64>),
    /// A write completed.
    Written,
    /// A compare-and-set's answer.
    Cas(bool),
    /// A swap's replaced value (`None` = nil).
    Swapped(Option<i64>),
    /// Unknown: timed out or never completed.
    Unknown,
}

/// The register model.
#[derive(Debug, Clone, Copy, Default)]
pub struct Register;

impl Model for Register {
    type State = Option<i64>;
    type Input = RegisterInput;
    type Output = RegisterOutput;

    fn init(&self) -> Option<i64> {
        None
    }

    fn step(
        &self,
        s: &Option<i64>,
        op: &Operation<RegisterInput, RegisterOutput>,
    ) -> Option<Option<i64>> {
        use RegisterInput as I;
        use RegisterOutput as O;
        match (op.input, op.output) {
            (I::Read, O::Read(v)) => (v == *s).then_some(*s),
            (I::Read, O::Unknown) => Some(*s),
            (I::Write(v), O::Written | O::Unknown) => Some(Some(v)),
            (I::Cas { from, to }, O::Cas(true)) => (*s == Some(from)).then_some(Some(to)),
            (I::Cas { from, .. }, O::Cas(false)) => (*s != Some(from)).then_some(*s),
            // Unknown outcome: if it took effect here, it did what a CAS does.
            (I::Cas { from, to }, O::Unknown) => Some(if *s == Some(from) { Some(to) } else { *s }),
            (I::Swap(v), O::Swapped(prev)) => (prev == *s).then_some(Some(v)),
            (I::Swap(v), O::Unknown) => Some(Some(v)),
            _ => None,
        }
    }

    fn describe_state(&self, s: &Option<i64>) -> String {
        value(*s)
    }

    fn why_not(&self, s: &Option<i64>, op: &Operation<RegisterInput, RegisterOutput>) -> String {
        use RegisterInput as I;
        use RegisterOutput as O;
        let who = format!("process {}", op.process);
        let holds = value(*s);
        match (op.input, op.output) {
            (I::Read, O::Read(v)) => format!(
                "a read by {who} returned {}, but the register holds {holds}",
                value(v)
            ),
            (I::Cas { from, to }, O::Cas(true)) => format!(
                "a cas {from}->{to} by {who} succeeded, but the register holds {holds}, not {from}"
            ),
            (I::Cas { from, to }, O::Cas(false)) => format!(
                "a cas {from}->{to} by {who} failed, but the register holds {from}, so it would \
                 have succeeded"
            ),
            (I::Swap(v), O::Swapped(prev)) => format!(
                "a swap of {v} by {who} replaced {}, but the register held {holds}",
                value(prev)
            ),
            _ => format!("{} does not fit the register", self.describe(op)),
        }
    }

    fn outcome(&self, op: &Operation<RegisterInput, RegisterOutput>) -> &'static str {
        match op.output {
            RegisterOutput::Unknown => "info",
            RegisterOutput::Cas(false) => "fail",
            _ => "ok",
        }
    }

    fn is_read_only(&self, op: &Operation<RegisterInput, RegisterOutput>) -> bool {
        matches!(
            (op.input, op.output),
            (RegisterInput::Read, _) | (RegisterInput::Cas { .. }, RegisterOutput::Cas(false))
        )
    }

    fn same_effect(
        &self,
        a: &Operation<RegisterInput, RegisterOutput>,
        b: &Operation<RegisterInput, RegisterOutput>,
    ) -> bool {
        a.input == b.input && a.output == b.output
    }

    fn describe(&self, op: &Operation<RegisterInput, RegisterOutput>) -> String {
        let out = match op.output {
            RegisterOutput::Read(Some(v)) => format!("{v}"),
            RegisterOutput::Read(None) => "nil".into(),
            RegisterOutput::Written => "ok".into(),
            RegisterOutput::Cas(b) => format!("{b}"),
            RegisterOutput::Swapped(Some(v)) => format!("replaced {v}"),
            RegisterOutput::Swapped(None) => "replaced nil".into(),
            RegisterOutput::Unknown => "unknown".into(),
        };
        let inp = match op.input {
            RegisterInput::Read => "read".to_string(),
            RegisterInput::Write(v) => format!("write {v}"),
            RegisterInput::Cas { from, to } => format!("cas {from}->{to}"),
            RegisterInput::Swap(v) => format!("swap in {v}"),
        };
        format!("process {} {inp} -> {out}", op.process)
    }
}

fn value(v: Option<i64>) -> String {
    v.map_or("nil".to_string(), |v| v.to_string())
}
