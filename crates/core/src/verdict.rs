//! Verdicts: which safety properties a history violates, with witnesses.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::time::Nanos;

/// The safety (S1–S4) and liveness (L1–L3) properties of docs/design.md §7.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Property {
    /// Mutual exclusion in true time: no two holders' hold intervals overlap on one key.
    S1,
    /// Resource safety: no write from a holder accepted after a write of a later grant.
    S2,
    /// Linearizability of the lock operations against a lease-lock spec.
    S3,
    /// A release frees only its own incarnation of the lock.
    S4,
    /// Liveness: after a holder crashes (or stops for good), a waiting client gets the lock
    /// within `ttl + lock_delay + slack`.
    L1,
    /// Liveness: a healthy holder that renews keeps its lock through every outage shorter
    /// than `ttl − renew_every`.
    L2,
    /// Liveness: no lock stays taken at the service for longer than `ttl + slack` while no
    /// live client believes it holds it (an orphaned lock).
    L3,
}

impl Property {
    /// Every property, in report order.
    pub const ALL: [Property; 7] = [
        Property::S1,
        Property::S2,
        Property::S3,
        Property::S4,
        Property::L1,
        Property::L2,
        Property::L3,
    ];
    /// The safety properties.
    pub const SAFETY: [Property; 4] = [Property::S1, Property::S2, Property::S3, Property::S4];
    /// The liveness properties.
    pub const LIVENESS: [Property; 3] = [Property::L1, Property::L2, Property::L3];

    /// `true` for L1–L3.
    pub fn is_liveness(self) -> bool {
        matches!(self, Property::L1 | Property::L2 | Property::L3)
    }
}

impl std::str::FromStr for Property {
    type Err = String;
    /// Parses `S1` … `S4`, `L1` … `L3` (any case).
    fn from_str(s: &str) -> Result<Property, String> {
        let up = s.trim().to_ascii_uppercase();
        Property::ALL
            .into_iter()
            .find(|p| format!("{p:?}") == up)
            .ok_or_else(|| format!("unknown property `{s}` (valid: S1, S2, S3, S4, L1, L2, L3)"))
    }
}

impl fmt::Display for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

/// One violation and the events that witness it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Violation {
    /// Which property.
    pub kind: Property,
    /// Lock key index.
    pub key: u32,
    /// One sentence for people, with node names and times.
    pub summary: String,
    /// Ids of the witnessing events (for S1: both acquire `ok`s and the events that ended the
    /// holds; for S2: the stale accepted write, its grant's acquire `ok`, the later grant's
    /// acquire `ok` and write, then the service's `grant` records of both grants when the
    /// history has them — or, for a token that went down, the stale write, its `ok` and the
    /// higher-token write).
    pub events: Vec<u64>,
    /// True-time window of the overlap (S1), ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<(Nanos, Nanos)>,
}

/// The checkers' result for one history.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Verdict {
    /// Every violation found (each checker reports at most a bounded number of witnesses and
    /// counts the rest in `counts`).
    pub violations: Vec<Violation>,
    /// Further violations found but not listed (checkers list at most a few per key).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub omitted: u64,
    /// Checks that ran out of budget before deciding, one note each, starting with the
    /// property it concerns (e.g. "S3, k0: step budget … exhausted"); see
    /// [`Verdict::undecided`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inconclusive: Vec<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Verdict {
    /// `true` when no property is violated.
    pub fn is_safe(&self) -> bool {
        self.violations.is_empty()
    }
    /// `true` when property `p` is violated.
    pub fn violates(&self, p: Property) -> bool {
        self.violations.iter().any(|v| v.kind == p)
    }
    /// The properties some check could not decide (named at the start of each
    /// `inconclusive` note, before a `,`, `:` or space), sorted, without repeats. A note that
    /// names no property counts as undecided for every property, so it is never taken for a
    /// clean result.
    pub fn undecided(&self) -> Vec<Property> {
        let mut out: Vec<Property> = Vec::new();
        for note in &self.inconclusive {
            let head = note.split([',', ':', ' ']).next().unwrap_or("");
            match head.parse::<Property>() {
                Ok(p) => out.push(p),
                Err(_) => out.extend(Property::ALL),
            }
        }
        out.sort();
        out.dedup();
        out
    }
    /// The violated properties, sorted, without repeats.
    pub fn kinds(&self) -> Vec<Property> {
        let mut k: Vec<Property> = self.violations.iter().map(|v| v.kind).collect();
        k.sort();
        k.dedup();
        k
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undecided_properties_are_read_from_the_notes() {
        let mut v = Verdict::default();
        assert!(v.undecided().is_empty());
        v.inconclusive
            .push("S3, k0: step budget of 5 exhausted".into());
        v.inconclusive
            .push("S3, k1: step budget of 5 exhausted".into());
        assert_eq!(v.undecided(), vec![Property::S3]);
        v.inconclusive.push("L2: ran out".into());
        assert_eq!(v.undecided(), vec![Property::S3, Property::L2]);
        v.inconclusive = vec!["something ran out".into()];
        assert_eq!(v.undecided(), Property::ALL.to_vec());
    }
}
