//! The `--fail-on` gate of a campaign or a merge: which properties fail it, and what a set
//! of cells says under them. The command line turns a [`Gate`] into its exit code (1, 3, 0);
//! anything else (the Kubernetes merge Job, a test) can judge records the same way.

use locksim_core::text::plural;
use locksim_core::Property;

use crate::CellSummary;

/// What a gate found, from the mildest: the order is the priority when several apply (a
/// violation wins over cells that prove nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Gate {
    /// Every listed property judged and never violated, in cells that were exercised.
    Clean,
    /// Some cell proves nothing for the properties: no grants, no fault took effect, a
    /// property undecided or not judged for its algorithm, or no seed judged at all.
    ProvesNothing,
    /// A listed property violated, or a seed that failed to run.
    Violation,
}

/// Reads a `--fail-on` list: `S1..S4`, `L1..L3`, `safety` (S1–S4) and `liveness` (L1–L3),
/// comma-separated, each at most once; returned validated, in report order.
///
/// # Errors
/// An empty list or item, a name given twice, or a name that is no property (one line
/// naming it, starting `--fail-on: `).
pub fn parse(text: &str) -> Result<Vec<Property>, String> {
    let mut list: Vec<Property> = Vec::new();
    for word in text.split(',').map(str::trim) {
        let add: Vec<Property> = match word.to_ascii_lowercase().as_str() {
            "" => {
                return Err(format!(
                    "--fail-on: an empty item in {text:?}; give properties such as S1,S2"
                ))
            }
            "safety" => Property::SAFETY.to_vec(),
            "liveness" => Property::LIVENESS.to_vec(),
            _ => vec![word.parse::<Property>().map_err(|e| {
                format!("--fail-on: {e} (give properties such as S1,S2, or safety, liveness)")
            })?],
        };
        if let Some(p) = add.iter().find(|p| list.contains(p)) {
            return Err(format!("--fail-on: {p} is given twice in {text:?}"));
        }
        list.extend(add);
    }
    if list.is_empty() {
        return Err("--fail-on: an empty list; give properties such as S1,S2 or safety".into());
    }
    list.sort();
    list.dedup();
    Ok(list)
}

/// What `--fail-on properties` makes of `cells`: [`Gate::Violation`] with the violations
/// (a listed property violated, a seed that failed to run), else [`Gate::ProvesNothing`]
/// with what proves nothing, else [`Gate::Clean`]; and one line per reason, for stderr, each
/// starting `--fail-on P,Q: `.
pub fn judge(cells: &[CellSummary], properties: &[Property]) -> (Gate, Vec<String>) {
    let names: Vec<String> = properties.iter().map(|p| p.to_string()).collect();
    let (mut violated, mut empty) = (Vec::new(), Vec::new());
    for c in cells {
        let at = format!("{} × {}", c.algorithm, c.faults_label());
        for &p in properties {
            if c.violated(p) > 0 {
                violated.push(format!(
                    "{p} violated in {at} ({}, first seed {})",
                    plural(c.violated(p), "seed"),
                    c.first_violation.get(&p).copied().unwrap_or(0)
                ));
            }
        }
        if c.errors > 0 {
            violated.push(format!("{at}: {} failed to run", plural(c.errors, "seed")));
        }
        let undecided: Vec<String> = properties
            .iter()
            .filter(|p| c.undecided_on(**p) > 0)
            .map(|p| p.to_string())
            .collect();
        if !undecided.is_empty() {
            empty.push(format!("{at}: {} undecided", undecided.join(", ")));
        }
        if c.grants == 0 && c.seeds > c.errors {
            empty.push(format!("{at}: no client was ever granted the lock"));
        }
        if properties.contains(&Property::S2)
            && c.violated(Property::S2) == 0
            && c.counts.no_write_accepted(c.seeds - c.errors)
        {
            empty.push(format!(
                "{at}: S2: no write reached the resource in any seed"
            ));
        }
        if c.no_fault_took_effect() {
            empty.push(format!("{at}: no fault took effect in any seed"));
        } else if c.kind_untested() {
            empty.push(format!(
                "{at}: no {} fault took effect in any seed (only the plan did)",
                c.faults.name()
            ));
        }
        if c.seeds > c.errors {
            for &p in properties.iter().filter(|p| !c.checked.contains(p)) {
                empty.push(format!("{at}: {p} is not judged for {}", c.algorithm));
            }
        }
    }
    if cells.iter().all(|c| c.seeds == 0) {
        empty.push("no seed was judged (a shard without seeds, or no records)".into());
    }
    let head = format!("--fail-on {}: ", names.join(","));
    if !violated.is_empty() {
        (
            Gate::Violation,
            violated.into_iter().map(|v| format!("{head}{v}")).collect(),
        )
    } else if !empty.is_empty() {
        (
            Gate::ProvesNothing,
            empty
                .into_iter()
                .map(|v| format!("{head}{v}: proves nothing"))
                .collect(),
        )
    } else {
        (Gate::Clean, Vec::new())
    }
}
