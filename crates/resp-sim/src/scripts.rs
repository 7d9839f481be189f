//! The Lua scripts lock clients ship, recognised rather than interpreted: this server embeds no
//! Lua. A script is known by the SHA1 of its exact text (as Redis names scripts in `EVALSHA`
//! and `SCRIPT LOAD`) or, failing that, by its *shape*: the text with case, whitespace, `;`
//! and the quote style ignored, compared with the shapes below. A script of another shape is
//! refused with an error that names its SHA1; [`Scripts::register`] adds one.
//!
//! Semantics are Redis's: `redis.call("get", …)`, `del` and `pexpire` as the commands
//! (<https://redis.io/docs/latest/commands/eval/>), the scripts as the distributed-lock pattern
//! gives them (<https://redis.io/docs/latest/develop/use/patterns/distributed-locks/>).

use std::collections::BTreeMap;

use sha1::{Digest, Sha1};

/// What a recognised script does, with `KEYS[1]` the lock key and `ARGV[1]` the owner value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptKind {
    /// Unlock: deletes `KEYS[1]` when its value is `ARGV[1]`; returns 1, else 0.
    CompareAndDelete,
    /// Extend: sets `KEYS[1]`'s time to live to `ARGV[2]` milliseconds when its value is
    /// `ARGV[1]`; returns 1, else 0.
    CompareAndPexpire,
}

/// The unlock script of the Redis distributed-lock pattern, as the Redis docs print it.
pub const UNLOCK: &str = r#"if redis.call("get",KEYS[1]) == ARGV[1] then
    return redis.call("del",KEYS[1])
else
    return 0
end"#;

/// The matching extend script: `pexpire` in place of `del`, the new TTL in `ARGV[2]` (ms).
pub const EXTEND: &str = r#"if redis.call("get",KEYS[1]) == ARGV[1] then
    return redis.call("pexpire",KEYS[1],ARGV[2])
else
    return 0
end"#;

/// Shapes recognised besides the texts above: the `~=`-first form, and the extend that
/// re-`SET`s the value with `PX` (as several Rust lock crates write it).
const SHAPES: &[(&str, ScriptKind)] = &[
    (UNLOCK, ScriptKind::CompareAndDelete),
    (EXTEND, ScriptKind::CompareAndPexpire),
    (
        r#"if redis.call("get",KEYS[1]) ~= ARGV[1] then return 0 else return redis.call("del",KEYS[1]) end"#,
        ScriptKind::CompareAndDelete,
    ),
    (
        r#"if redis.call("get",KEYS[1]) ~= ARGV[1] then return 0 else return redis.call("pexpire",KEYS[1],ARGV[2]) end"#,
        ScriptKind::CompareAndPexpire,
    ),
    (
        r#"if redis.call("get",KEYS[1]) ~= ARGV[1] then return 0 else if redis.call("set",KEYS[1],ARGV[1],"PX",ARGV[2]) ~= nil then return 1 else return 0 end end"#,
        ScriptKind::CompareAndPexpire,
    ),
];

/// The SHA1 of `text` as 40 lower-case hex digits (Redis's script name).
pub fn sha1_hex(text: &[u8]) -> String {
    Sha1::digest(text)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `text` with case, whitespace, `;` and the quote style ignored.
fn shape(text: &[u8]) -> Vec<u8> {
    text.iter()
        .filter(|b| !b.is_ascii_whitespace() && **b != b';')
        .map(|b| {
            if *b == b'\'' {
                b'"'
            } else {
                b.to_ascii_lowercase()
            }
        })
        .collect()
}

/// The scripts a server recognises.
#[derive(Debug, Clone)]
pub struct Scripts {
    by_sha: BTreeMap<String, ScriptKind>,
    by_shape: Vec<(Vec<u8>, ScriptKind)>,
    /// The scripts registered besides the built-in ones, in order (a trace keeps them).
    added: Vec<(String, ScriptKind)>,
}

impl Default for Scripts {
    fn default() -> Self {
        let mut s = Scripts {
            by_sha: BTreeMap::new(),
            by_shape: Vec::new(),
            added: Vec::new(),
        };
        for (text, kind) in SHAPES {
            s.recognise_as(text, *kind);
        }
        s
    }
}

impl Scripts {
    /// Recognise `text` (by its SHA1 and by its shape) as a script doing `kind`.
    pub fn register(&mut self, text: &str, kind: ScriptKind) {
        self.recognise_as(text, kind);
        self.added.push((text.to_string(), kind));
    }

    fn recognise_as(&mut self, text: &str, kind: ScriptKind) {
        self.by_sha.insert(sha1_hex(text.as_bytes()), kind);
        self.by_shape.push((shape(text.as_bytes()), kind));
    }

    /// The scripts [`Scripts::register`] added, in order.
    pub fn added(&self) -> &[(String, ScriptKind)] {
        &self.added
    }

    /// What `text` does, if recognised.
    pub fn recognise(&self, text: &[u8]) -> Option<ScriptKind> {
        if let Some(k) = self.by_sha.get(&sha1_hex(text)) {
            return Some(*k);
        }
        let s = shape(text);
        self.by_shape.iter().find(|(t, _)| *t == s).map(|(_, k)| *k)
    }
}

impl ScriptKind {
    /// Its name in a trace: `compare-and-delete` or `compare-and-pexpire`.
    pub fn name(self) -> &'static str {
        match self {
            ScriptKind::CompareAndDelete => "compare-and-delete",
            ScriptKind::CompareAndPexpire => "compare-and-pexpire",
        }
    }

    /// The kind [`ScriptKind::name`] names.
    pub fn from_name(name: &str) -> Option<ScriptKind> {
        [ScriptKind::CompareAndDelete, ScriptKind::CompareAndPexpire]
            .into_iter()
            .find(|k| k.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1_is_redis_script_name() {
        // `SCRIPT LOAD "return 1"` answers this name on a real Redis.
        assert_eq!(
            sha1_hex(b"return 1"),
            "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
        );
    }

    #[test]
    fn shapes_ignore_spacing_case_and_quotes() {
        let s = Scripts::default();
        let variant = "if redis.call('GET', KEYS[1]) == ARGV[1] then\n  return redis.call('DEL', KEYS[1]);\nelse return 0 end";
        assert_eq!(
            s.recognise(variant.as_bytes()),
            Some(ScriptKind::CompareAndDelete)
        );
        assert_eq!(
            s.recognise(EXTEND.as_bytes()),
            Some(ScriptKind::CompareAndPexpire)
        );
        assert_eq!(s.recognise(b"return redis.call('del', KEYS[1])"), None);
    }
}
