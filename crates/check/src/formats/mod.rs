//! Readers of histories recorded elsewhere, into operations for the linearizability checker:
//! Jepsen's etcd logs ([`jepsen`]), Porcupine's EDN key-value histories ([`edn`]) and
//! locksim's own runs ([`locksim`]).
//! A malformed line is an error that names the file, the line and the problem.

use std::fmt;
use std::path::{Path, PathBuf};

pub mod edn;
pub mod jepsen;
pub mod locksim;

/// A problem with an input file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    /// The file.
    pub file: PathBuf,
    /// 1-based line number, when the problem is on a line.
    pub line: Option<usize>,
    /// What is wrong.
    pub problem: String,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{l}: {}", self.file.display(), self.problem),
            None => write!(f, "{}: {}", self.file.display(), self.problem),
        }
    }
}

impl std::error::Error for ReadError {}

pub(crate) fn read_text(path: &Path) -> Result<String, ReadError> {
    std::fs::read_to_string(path).map_err(|e| ReadError {
        file: path.to_path_buf(),
        line: None,
        problem: format!("cannot read: {e}"),
    })
}

/// Matches completions to invocations by process: at most one open operation per process.
pub(crate) struct Pending<T> {
    open: std::collections::BTreeMap<u64, (usize, T)>,
}

impl<T> Pending<T> {
    pub(crate) fn new() -> Self {
        Pending {
            open: Default::default(),
        }
    }
    /// Registers an invocation on `line`; errors when the process already has one open.
    pub(crate) fn invoke(&mut self, process: u64, line: usize, what: T) -> Result<(), String> {
        if let Some((l, _)) = self.open.get(&process) {
            return Err(format!(
                "process {process} invokes again while its operation from line {l} is still open"
            ));
        }
        self.open.insert(process, (line, what));
        Ok(())
    }
    /// Takes the open invocation of `process`.
    pub(crate) fn complete(&mut self, process: u64) -> Result<(usize, T), String> {
        self.open
            .remove(&process)
            .ok_or_else(|| format!("process {process} completes an operation it never invoked"))
    }
}

/// `ops` without the operations at the indices in `failed` (operations that definitely did not
/// happen take no part in a history).
pub(crate) fn without<T>(ops: Vec<T>, failed: &[usize]) -> Vec<T> {
    ops.into_iter()
        .enumerate()
        .filter(|(i, _)| !failed.contains(i))
        .map(|(_, o)| o)
        .collect()
}
