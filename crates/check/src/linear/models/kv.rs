//! A key-value store of strings with get, put and append; every key starts empty. Keys are
//! independent, so the history is checked per key (P-compositionality).

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::linear::{Model, Operation};

/// What a kv operation asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KvInput {
    /// Read `key`.
    Get { key: String },
    /// Replace `key`'s value.
    Put { key: String, value: String },
    /// Append to `key`'s value.
    Append { key: String, value: String },
}

impl KvInput {
    /// The key the operation touches.
    pub fn key(&self) -> &str {
        match self {
            KvInput::Get { key } | KvInput::Put { key, .. } | KvInput::Append { key, .. } => key,
        }
    }
}

/// What a kv operation observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KvOutput {
    /// A get's value.
    Value(String),
    /// A put or append completed.
    Done,
    /// Unknown: never completed.
    Unknown,
}

/// One key's value, with its hash computed once (states are hashed at every search step).
#[derive(Debug, Clone)]
pub struct Value {
    hash: u64,
    text: Arc<str>,
}

impl Value {
    fn new(text: &str) -> Value {
        let mut h = rustc_hash::FxHasher::default();
        text.hash(&mut h);
        Value {
            hash: h.finish(),
            text: text.into(),
        }
    }
    /// The string.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && (Arc::ptr_eq(&self.text, &other.text) || self.text == other.text)
    }
}
impl Eq for Value {}
impl Hash for Value {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// The kv model (one key per part).
#[derive(Debug, Clone, Copy, Default)]
pub struct Kv;

impl Model for Kv {
    type State = Value;
    type Input = KvInput;
    type Output = KvOutput;

    fn init(&self) -> Value {
        Value::new("")
    }

    fn step(&self, s: &Value, op: &Operation<KvInput, KvOutput>) -> Option<Value> {
        match (&op.input, &op.output) {
            (KvInput::Get { .. }, KvOutput::Value(v)) => (*s.text == **v).then(|| s.clone()),
            (KvInput::Get { .. }, KvOutput::Unknown) => Some(s.clone()),
            (KvInput::Put { value, .. }, KvOutput::Done | KvOutput::Unknown) => {
                Some(Value::new(value))
            }
            (KvInput::Append { value, .. }, KvOutput::Done | KvOutput::Unknown) => {
                let mut t = String::with_capacity(s.text.len() + value.len());
                t.push_str(&s.text);
                t.push_str(value);
                Some(Value::new(&t))
            }
            _ => None,
        }
    }

    fn partition(&self, ops: &[Operation<KvInput, KvOutput>]) -> Vec<Vec<usize>> {
        let mut by_key: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, op) in ops.iter().enumerate() {
            by_key.entry(op.input.key()).or_default().push(i);
        }
        by_key.into_values().collect()
    }

    fn describe(&self, op: &Operation<KvInput, KvOutput>) -> String {
        let out = match &op.output {
            KvOutput::Value(v) => format!("{v:?}"),
            KvOutput::Done => "ok".into(),
            KvOutput::Unknown => "unknown".into(),
        };
        let inp = match &op.input {
            KvInput::Get { key } => format!("get {key:?}"),
            KvInput::Put { key, value } => format!("put {key:?} {value:?}"),
            KvInput::Append { key, value } => format!("append {key:?} {value:?}"),
        };
        format!("process {} {inp} -> {out}", op.process)
    }
}
