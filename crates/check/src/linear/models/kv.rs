//! A key-value store of strings with get, put and append; every key starts empty. Keys are
//! independent, so the history is checked per key (P-compositionality).

use std::collections::BTreeMap;
use std::fmt;
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

/// One key's value: a persistent list of appended pieces (the value is its parent's value
/// followed by its piece), so an append costs the piece, not the whole value, and states
/// share their common beginnings. The hash is polynomial over the bytes,
/// `h(s + v) = h(s)·B^|v| + h(v)`, so it too costs only the piece; equal hashes are
/// confirmed byte by byte.
#[derive(Clone, Default)]
pub struct Value(Option<Arc<Node>>);

struct Node {
    hash: u64,
    len: usize,
    parent: Option<Arc<Node>>,
    piece: Piece,
}

/// A piece of text: short ones (most appends) inline, so an append is one allocation.
enum Piece {
    Inline(u8, [u8; 30]),
    Heap(Box<str>),
}

impl Piece {
    fn new(v: &str) -> Piece {
        if v.len() <= 30 {
            let mut b = [0u8; 30];
            b[..v.len()].copy_from_slice(v.as_bytes());
            Piece::Inline(v.len() as u8, b)
        } else {
            Piece::Heap(v.into())
        }
    }
    fn bytes(&self) -> &[u8] {
        match self {
            Piece::Inline(n, b) => &b[..*n as usize],
            Piece::Heap(s) => s.as_bytes(),
        }
    }
}

impl Drop for Node {
    // Iteratively: a long chain would overflow the stack if dropped recursively.
    fn drop(&mut self) {
        let mut next = self.parent.take();
        while let Some(n) = next {
            match Arc::try_unwrap(n) {
                Ok(mut n) => next = n.parent.take(),
                Err(_) => break,
            }
        }
    }
}

const BASE: u64 = 0x100_0000_01B3;

fn piece_hash(v: &str) -> u64 {
    v.bytes().fold(0u64, |h, b| {
        h.wrapping_mul(BASE).wrapping_add(u64::from(b) + 1)
    })
}

impl Value {
    fn hash(&self) -> u64 {
        self.0.as_ref().map_or(0, |n| n.hash)
    }
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |n| n.len)
    }
    /// `true` for the empty string.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn put(v: &str) -> Value {
        Value(None).append(v)
    }
    fn append(&self, v: &str) -> Value {
        if v.is_empty() {
            return self.clone();
        }
        Value(Some(Arc::new(Node {
            hash: self
                .hash()
                .wrapping_mul(BASE.wrapping_pow(v.len() as u32))
                .wrapping_add(piece_hash(v)),
            len: self.len() + v.len(),
            parent: self.0.clone(),
            piece: Piece::new(v),
        })))
    }
    /// The bytes from the last to the first.
    fn rev_bytes(&self) -> impl Iterator<Item = u8> + '_ {
        let mut node = self.0.as_deref();
        let mut piece = [].iter().rev();
        std::iter::from_fn(move || loop {
            if let Some(&b) = piece.next() {
                return Some(b);
            }
            let n = node?;
            piece = n.piece.bytes().iter().rev();
            node = n.parent.as_deref();
        })
    }
    /// `true` when the value is `v` (compared from the end, where values differ first).
    fn is(&self, v: &str) -> bool {
        self.len() == v.len() && self.rev_bytes().eq(v.bytes().rev())
    }
    /// `true` when `v` starts with the value (compared from the value's end).
    fn is_prefix_of(&self, v: &str) -> bool {
        self.len() <= v.len()
            && self
                .rev_bytes()
                .eq(v.as_bytes()[..self.len()].iter().rev().copied())
    }
    /// The string.
    pub fn text(&self) -> String {
        let mut pieces = Vec::new();
        let mut node = self.0.as_deref();
        while let Some(n) = node {
            pieces.push(n.piece.bytes());
            node = n.parent.as_deref();
        }
        pieces.reverse();
        String::from_utf8_lossy(&pieces.concat()).into_owned()
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.text())
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        self.hash() == other.hash()
            && self.len() == other.len()
            && match (&self.0, &other.0) {
                (Some(a), Some(b)) if Arc::ptr_eq(a, b) => true,
                _ => self.rev_bytes().eq(other.rev_bytes()),
            }
    }
}
impl Eq for Value {}
impl Hash for Value {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(Value::hash(self));
    }
}

/// Bytes of values read that [`Kv::unobserved`] searches at most per part, for appends.
pub const UNOBSERVED_WORK: usize = 64 << 20;

/// The kv model (one key per part).
#[derive(Debug, Clone, Copy, Default)]
pub struct Kv;

impl Model for Kv {
    type State = Value;
    type Input = KvInput;
    type Output = KvOutput;

    fn init(&self) -> Value {
        Value::default()
    }

    fn step(&self, s: &Value, op: &Operation<KvInput, KvOutput>) -> Option<Value> {
        match (&op.input, &op.output) {
            (KvInput::Get { .. }, KvOutput::Value(v)) => s.is(v).then(|| s.clone()),
            (KvInput::Get { .. }, KvOutput::Unknown) => Some(s.clone()),
            (KvInput::Put { value, .. }, KvOutput::Done | KvOutput::Unknown) => {
                Some(Value::put(value))
            }
            (KvInput::Append { value, .. }, KvOutput::Done | KvOutput::Unknown) => {
                Some(s.append(value))
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

    fn describe_state(&self, s: &Value) -> String {
        quote(&s.text())
    }

    fn why_not(&self, s: &Value, op: &Operation<KvInput, KvOutput>) -> String {
        match (&op.input, &op.output) {
            (KvInput::Get { key }, KvOutput::Value(v)) => format!(
                "a get of {key:?} by process {} returned {}, but the key holds {}",
                op.process,
                quote(v),
                quote(&s.text())
            ),
            _ => format!("{} does not fit the store", self.describe(op)),
        }
    }

    fn heap_bytes(&self, s: &Value) -> usize {
        // Its last node (with its Arc counts); the nodes before it are counted where made.
        if s.is_empty() {
            0
        } else {
            std::mem::size_of::<Node>() + 16
        }
    }

    fn is_read_only(&self, op: &Operation<KvInput, KvOutput>) -> bool {
        matches!(op.input, KvInput::Get { .. })
    }

    /// A get whose value does not start with the current value: appends only extend it.
    fn hopeless(&self, s: &Value, op: &Operation<KvInput, KvOutput>) -> bool {
        match &op.output {
            KvOutput::Value(v) => !s.is_prefix_of(v),
            _ => false,
        }
    }

    fn resets(&self, op: &Operation<KvInput, KvOutput>) -> bool {
        matches!(op.input, KvInput::Put { .. })
    }

    fn same_effect(
        &self,
        a: &Operation<KvInput, KvOutput>,
        b: &Operation<KvInput, KvOutput>,
    ) -> bool {
        a.input == b.input && a.output == b.output
    }

    /// A put of `v` whose outcome is unknown can be left out when no get returned a value
    /// starting with `v`, an append of `v` when no get returned a value containing `v`: had
    /// it taken effect, every get until the next put would have seen `v`, so none came before
    /// the next put, which overwrote it (or none came at all). An append of "" changes nothing.
    ///
    /// Puts are looked up in the sorted values read (values starting with `v` sort together,
    /// from the first one not below `v`); appends search the values read for `v` only while
    /// that costs less than [`UNOBSERVED_WORK`] bytes in all, and are kept after (the hint is
    /// optional: keeping an operation is always right).
    fn unobserved(&self, ops: &[&Operation<KvInput, KvOutput>]) -> Vec<bool> {
        let mut reads: Vec<&str> = ops
            .iter()
            .filter_map(|o| match &o.output {
                KvOutput::Value(v) => Some(v.as_str()),
                _ => None,
            })
            .collect();
        reads.sort_unstable();
        reads.dedup();
        let read_bytes: usize = reads.iter().map(|r| r.len()).sum();
        let mut work = 0usize;
        ops.iter()
            .map(|o| match (&o.input, o.ret) {
                (KvInput::Put { value, .. }, None) => {
                    let from = reads.partition_point(|r| *r < value.as_str());
                    !value.is_empty()
                        && !reads
                            .get(from)
                            .is_some_and(|r| r.starts_with(value.as_str()))
                }
                (KvInput::Append { value, .. }, None) if value.is_empty() => true,
                (KvInput::Append { value, .. }, None) => {
                    work += read_bytes;
                    work <= UNOBSERVED_WORK && !reads.iter().any(|r| r.contains(value.as_str()))
                }
                _ => false,
            })
            .collect()
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

/// A value for people: quoted, and shortened to its ends when long.
fn quote(v: &str) -> String {
    let n = v.chars().count();
    if n <= 48 {
        format!("{v:?}")
    } else {
        let head: String = v.chars().take(20).collect();
        let tail: String = v.chars().skip(n - 20).collect();
        format!("{head:?}…{tail:?} ({n} characters)")
    }
}
