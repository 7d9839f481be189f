//! Porcupine's key-value histories: one EDN map a line, e.g.
//! `{:process 9, :type :invoke, :f :append, :key "0", :value "x 9 0 y"}`, with `:f` one of
//! `:get`, `:put`, `:append` and `:type` one of `:invoke`, `:ok` (also `:fail`, `:info`).
//! A get's value is on its `:ok`. Operations never completed are unknown.

use std::collections::BTreeMap;
use std::path::Path;

use super::{read_text, without, Pending, ReadError};
use crate::linear::models::kv::{KvInput, KvOutput};
use crate::linear::Operation;

/// A kv operation.
pub type KvOp = Operation<KvInput, KvOutput>;

/// An EDN scalar of the subset these files use.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Edn {
    Keyword(String),
    Str(String),
    Int(i64),
    Nil,
}

/// Parses `{:k v, :k v}` with keyword keys and scalar values.
fn parse_map(line: &str) -> Result<BTreeMap<String, Edn>, String> {
    let t = line.trim();
    let inner = t
        .strip_prefix('{')
        .and_then(|s| s.strip_suffix('}'))
        .ok_or("expected an EDN map `{:key value, ...}`")?;
    let mut chars = inner.chars().peekable();
    let mut tokens: Vec<Edn> = Vec::new();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() || c == ',' {
            chars.next();
        } else if c == '"' {
            chars.next();
            let mut s = String::new();
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some('\\') => match chars.next() {
                        Some('n') => s.push('\n'),
                        Some('t') => s.push('\t'),
                        Some(other) => s.push(other),
                        None => return Err("unterminated string".into()),
                    },
                    Some(ch) => s.push(ch),
                    None => return Err("unterminated string".into()),
                }
            }
            tokens.push(Edn::Str(s));
        } else {
            let mut word = String::new();
            while let Some(&ch) = chars.peek() {
                if ch.is_whitespace() || ch == ',' {
                    break;
                }
                word.push(ch);
                chars.next();
            }
            tokens.push(if let Some(k) = word.strip_prefix(':') {
                Edn::Keyword(k.to_string())
            } else if word == "nil" {
                Edn::Nil
            } else if let Ok(n) = word.parse() {
                Edn::Int(n)
            } else {
                return Err(format!("unsupported EDN value `{word}`"));
            });
        }
    }
    if !tokens.len().is_multiple_of(2) {
        return Err("a map needs key-value pairs".into());
    }
    let mut map = BTreeMap::new();
    for pair in tokens.chunks(2) {
        match &pair[0] {
            Edn::Keyword(k) => {
                map.insert(k.clone(), pair[1].clone());
            }
            other => return Err(format!("map keys must be keywords, found {other:?}")),
        }
    }
    Ok(map)
}

fn field<'a>(m: &'a BTreeMap<String, Edn>, k: &str) -> Result<&'a Edn, String> {
    m.get(k).ok_or_else(|| format!("missing `:{k}`"))
}

fn string(e: &Edn, what: &str) -> Result<String, String> {
    match e {
        Edn::Str(s) => Ok(s.clone()),
        Edn::Int(n) => Ok(n.to_string()),
        other => Err(format!("`:{what}` must be a string, found {other:?}")),
    }
}

/// Parses one history. Times are line numbers; each operation's id is its invocation's line.
///
/// # Errors
/// A [`ReadError`] naming the line and the problem.
pub fn parse_kv(path: &Path, text: &str) -> Result<Vec<KvOp>, ReadError> {
    let err = |line: usize, problem: String| ReadError {
        file: path.to_path_buf(),
        line: Some(line),
        problem,
    };
    let mut ops: Vec<KvOp> = Vec::new();
    let mut failed: Vec<usize> = Vec::new();
    let mut pending: Pending<usize> = Pending::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let m = parse_map(raw).map_err(|p| err(line, p))?;
        let process = match field(&m, "process").map_err(|p| err(line, p))? {
            Edn::Int(n) if *n >= 0 => *n as u64,
            other => {
                return Err(err(
                    line,
                    format!("`:process` must be a non-negative integer, found {other:?}"),
                ))
            }
        };
        let kind = match field(&m, "type").map_err(|p| err(line, p))? {
            Edn::Keyword(k) => k.as_str(),
            other => {
                return Err(err(
                    line,
                    format!("`:type` must be a keyword, found {other:?}"),
                ))
            }
        };
        let f = match field(&m, "f").map_err(|p| err(line, p))? {
            Edn::Keyword(k) => k.as_str(),
            other => {
                return Err(err(
                    line,
                    format!("`:f` must be a keyword, found {other:?}"),
                ))
            }
        };
        match kind {
            "invoke" => {
                let key = string(field(&m, "key").map_err(|p| err(line, p))?, "key")
                    .map_err(|p| err(line, p))?;
                let value = || -> Result<String, String> { string(field(&m, "value")?, "value") };
                let input = match f {
                    "get" => KvInput::Get { key },
                    "put" => KvInput::Put {
                        key,
                        value: value().map_err(|p| err(line, p))?,
                    },
                    "append" => KvInput::Append {
                        key,
                        value: value().map_err(|p| err(line, p))?,
                    },
                    other => {
                        return Err(err(
                            line,
                            format!("unknown function `:{other}` (expected :get, :put or :append)"),
                        ))
                    }
                };
                pending
                    .invoke(process, line, ops.len())
                    .map_err(|p| err(line, p))?;
                ops.push(Operation {
                    process,
                    input,
                    output: KvOutput::Unknown,
                    call: line as u64,
                    ret: None,
                    id: line as u64,
                });
            }
            "ok" | "fail" | "info" => {
                let (_, idx) = pending.complete(process).map_err(|p| err(line, p))?;
                let op = &mut ops[idx];
                let invoked = match op.input {
                    KvInput::Get { .. } => "get",
                    KvInput::Put { .. } => "put",
                    KvInput::Append { .. } => "append",
                };
                if invoked != f {
                    return Err(err(
                        line,
                        format!(
                            "completes with :{f} an operation invoked as :{invoked} on line {}",
                            op.call
                        ),
                    ));
                }
                match kind {
                    "info" => {}
                    "fail" => {
                        op.ret = Some(line as u64);
                        failed.push(idx);
                    }
                    _ => {
                        op.ret = Some(line as u64);
                        op.output = match op.input {
                            KvInput::Get { .. } => KvOutput::Value(
                                string(field(&m, "value").map_err(|p| err(line, p))?, "value")
                                    .map_err(|p| err(line, p))?,
                            ),
                            _ => KvOutput::Done,
                        };
                    }
                }
            }
            other => {
                return Err(err(
                    line,
                    format!("unknown type `:{other}` (expected :invoke, :ok, :fail or :info)"),
                ))
            }
        }
    }
    Ok(without(ops, &failed))
}

/// Reads and parses one history file.
///
/// # Errors
/// When the file cannot be read or a line is malformed.
pub fn read_kv(path: &Path) -> Result<Vec<KvOp>, ReadError> {
    parse_kv(path, &read_text(path)?)
}
