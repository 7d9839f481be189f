//! Jepsen's etcd register logs, one event a line:
//! `INFO  jepsen.util - <process> :<type> :<f> <value>`, with `<type>` one of `:invoke`, `:ok`,
//! `:fail`, `:info` and `<f>` one of `:read` (value `nil` on invoke; an integer or `nil` on ok),
//! `:write N`, `:cas [FROM TO]`. The register starts as nil. A `:fail :cas` returned false (it
//! happened and changed nothing); a `:fail :read` ends the read with an unknown result; an
//! `:info` leaves the operation open (unknown). Operations still open at the end are unknown.

use std::path::Path;

use super::{read_text, without, Pending, ReadError};
use crate::linear::models::register::{RegisterInput, RegisterOutput};
use crate::linear::Operation;

/// A register operation.
pub type RegisterOp = Operation<RegisterInput, RegisterOutput>;

fn parse_int(s: &str) -> Result<i64, String> {
    s.parse().map_err(|_| format!("`{s}` is not an integer"))
}

fn parse_value(f: &str, v: &[&str]) -> Result<RegisterInput, String> {
    match f {
        ":read" => Ok(RegisterInput::Read),
        ":write" => match v {
            [n] => Ok(RegisterInput::Write(parse_int(n)?)),
            _ => Err(format!(
                "a write needs one integer, found `{}`",
                v.join(" ")
            )),
        },
        ":cas" => {
            let joined = v.join(" ");
            let inner = joined
                .strip_prefix('[')
                .and_then(|s| s.strip_suffix(']'))
                .ok_or_else(|| format!("a cas needs `[FROM TO]`, found `{joined}`"))?;
            let parts: Vec<&str> = inner.split_whitespace().collect();
            match parts.as_slice() {
                [a, b] => Ok(RegisterInput::Cas {
                    from: parse_int(a)?,
                    to: parse_int(b)?,
                }),
                _ => Err(format!("a cas needs `[FROM TO]`, found `{joined}`")),
            }
        }
        other => Err(format!(
            "unknown function `{other}` (expected :read, :write or :cas)"
        )),
    }
}

/// Parses one log. Times are line numbers; each operation's id is the line of its invocation.
///
/// # Errors
/// A [`ReadError`] naming the line and the problem: an unknown type or function, a malformed
/// value, a completion without an invocation, a second invocation by a process whose operation
/// is open, or a completion whose function differs from its invocation's.
pub fn parse_etcd_log(path: &Path, text: &str) -> Result<Vec<RegisterOp>, ReadError> {
    let err = |line: usize, problem: String| ReadError {
        file: path.to_path_buf(),
        line: Some(line),
        problem,
    };
    let mut ops: Vec<RegisterOp> = Vec::new();
    let mut pending: Pending<usize> = Pending::new();
    let mut failed: Vec<usize> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let rest = match raw.split_once(" - ") {
            Some((_, r)) => r,
            None => {
                return Err(err(
                    line,
                    "expected `INFO  jepsen.util - <process> :<type> :<f> <value>`".into(),
                ))
            }
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() < 3 {
            return Err(err(
                line,
                format!("expected `<process> :<type> :<f> <value>`, found `{rest}`"),
            ));
        }
        let process: u64 = fields[0]
            .parse()
            .map_err(|_| err(line, format!("`{}` is not a process number", fields[0])))?;
        let (kind, f, value) = (fields[1], fields[2], &fields[3..]);
        match kind {
            ":invoke" => {
                let input = parse_value(f, if f == ":read" { &[] } else { value })
                    .map_err(|p| err(line, p))?;
                pending
                    .invoke(process, line, ops.len())
                    .map_err(|p| err(line, p))?;
                ops.push(Operation {
                    process,
                    input,
                    output: RegisterOutput::Unknown,
                    call: line as u64,
                    ret: None,
                    id: line as u64,
                });
            }
            ":ok" | ":fail" | ":info" => {
                let (_, idx) = pending.complete(process).map_err(|p| err(line, p))?;
                let op = &mut ops[idx];
                let same_f = matches!(
                    (op.input, f),
                    (RegisterInput::Read, ":read")
                        | (RegisterInput::Write(_), ":write")
                        | (RegisterInput::Cas { .. }, ":cas")
                );
                if !same_f {
                    return Err(err(
                        line,
                        format!(
                            "completes with {f} an operation invoked as {:?} on line {}",
                            op.input, op.call
                        ),
                    ));
                }
                match (kind, op.input) {
                    (":info", _) => {} // stays open: unknown
                    (":fail", RegisterInput::Read) => op.ret = Some(line as u64),
                    (":fail", RegisterInput::Cas { .. }) => {
                        op.ret = Some(line as u64);
                        op.output = RegisterOutput::Cas(false);
                    }
                    (":fail", RegisterInput::Write(_)) => {
                        // A write that definitely did not happen takes no part in the history.
                        op.ret = Some(line as u64);
                        failed.push(idx);
                    }
                    (_, RegisterInput::Read) => {
                        op.ret = Some(line as u64);
                        op.output = match value {
                            ["nil"] => RegisterOutput::Read(None),
                            [v] => {
                                RegisterOutput::Read(Some(parse_int(v).map_err(|p| err(line, p))?))
                            }
                            _ => {
                                return Err(err(
                                    line,
                                    format!(
                                        "a read returns one value, found `{}`",
                                        value.join(" ")
                                    ),
                                ))
                            }
                        };
                    }
                    (_, RegisterInput::Write(_)) => {
                        op.ret = Some(line as u64);
                        op.output = RegisterOutput::Written;
                    }
                    (_, RegisterInput::Cas { .. }) => {
                        op.ret = Some(line as u64);
                        op.output = RegisterOutput::Cas(true);
                    }
                    (_, RegisterInput::Swap(_)) => unreachable!("the etcd logs have no swaps"),
                }
            }
            other => {
                return Err(err(
                    line,
                    format!("unknown type `{other}` (expected :invoke, :ok, :fail or :info)"),
                ))
            }
        }
    }
    Ok(without(ops, &failed))
}

/// Reads and parses one log file.
///
/// # Errors
/// When the file cannot be read or a line is malformed.
pub fn read_etcd_log(path: &Path) -> Result<Vec<RegisterOp>, ReadError> {
    parse_etcd_log(path, &read_text(path)?)
}
