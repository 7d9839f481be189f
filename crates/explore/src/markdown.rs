//! The matrix as the README's "which lock should I use" table (`locksim campaign --markdown`):
//! one row per algorithm and one column per fault kind, generated, never typed.

use crate::CellSummary;
use locksim_core::{FaultKind, Property};

/// What one cell says: `safe`, or the violated properties with their seed counts
/// (`S1 74 · S2 70`); a cell with no grants, failed seeds or undecided checks says so, since
/// it proves nothing, and a cell whose faults never took effect (`leader-change` where no
/// server leads) is `n/a`, never `safe`.
fn cell_text(c: &CellSummary) -> String {
    let mut parts: Vec<String> = Property::ALL
        .iter()
        .filter(|p| c.violated(**p) > 0)
        .map(|p| format!("{p} {}", c.violated(*p)))
        .collect();
    if c.errors > 0 {
        parts.push(format!("{} failed to run", c.errors));
    }
    if c.undecided_seeds > 0 {
        parts.push(format!("undecided {}", c.undecided_seeds));
    }
    if c.grants == 0 {
        parts.push("no grants".into());
    }
    if c.no_fault_took_effect() {
        parts.push("n/a".into());
    } else if c.kind_untested() {
        parts.push(format!(
            "{} n/a (only the plan took effect)",
            c.faults.name()
        ));
    }
    // Seeds that granted nothing prove nothing: said apart from the safe ones.
    let idle = (c.grants > 0 && c.no_grant_seeds > 0)
        .then(|| format!("{} granted nothing", c.no_grant_seeds));
    match (parts.is_empty(), idle) {
        (true, None) => "safe".into(),
        (true, Some(idle)) => format!("safe · {idle}"),
        (false, idle) => parts
            .into_iter()
            .chain(idle)
            .collect::<Vec<_>>()
            .join(" · "),
    }
}

/// `true` when the cell is a fault kind survived: its plans held faults (the `none` column is
/// the control group, not a fault survived), no seed violated a safety property (S1–S4), and
/// the cell proves something (grants, every seed ran and was decided, some fault took
/// effect).
fn survives(c: &CellSummary) -> bool {
    c.faults_meant()
        && Property::SAFETY.iter().all(|p| c.violated(*p) == 0)
        && c.errors == 0
        && c.undecided_seeds == 0
        && c.grants > 0
        && !c.no_fault_took_effect()
        && !c.kind_untested()
}

/// The table: `| algorithm | kind… | survives |`, each cell as [`cell_text`], then the line
/// `command` that made it.
pub fn table(cells: &[CellSummary], describe: impl Fn(&str) -> String, command: &str) -> String {
    let mut algos: Vec<&str> = Vec::new();
    let mut kinds = Vec::new();
    for c in cells {
        if !algos.contains(&c.algorithm.as_str()) {
            algos.push(&c.algorithm);
        }
        if !kinds.contains(&c.faults) {
            kinds.push(c.faults);
        }
    }
    let mut out = String::from("| algorithm | what |");
    for k in &kinds {
        out += &format!(" `{}` |", k.name());
    }
    out += " survives (no S1–S4 in any seed; faults took effect) |\n|---|---|";
    out += &"---|".repeat(kinds.len() + 1);
    out.push('\n');
    for a in algos {
        out += &format!("| `{a}` | {} |", describe(a));
        let mut ok = Vec::new();
        for k in &kinds {
            match cells.iter().find(|c| c.algorithm == a && c.faults == *k) {
                Some(c) => {
                    out += &format!(" {} |", cell_text(c));
                    if survives(c) {
                        ok.push(k.name());
                    }
                }
                None => out += " – |",
            }
        }
        let ok = if ok.is_empty() {
            "nothing".to_string()
        } else {
            ok.join(", ")
        };
        out += &format!(" {ok} |\n");
    }
    let drift = drift_note(&kinds);
    out += &format!(
        "\nEach cell counts the seeds (runs) that violated each property; `safe`: none did; `n/a`: \
         no fault of the kind took effect in any seed (e.g. `leader-change` where no server \
         leads), so the cell ran fault-free and counts as neither safe nor survived. `none` is \
         the control group: no faults, judged as it is (a violation there needs no fault), \
         and not listed under survives. `safe` and survives count the seeds of this campaign \
         only: a rarer failure needs more seeds.{drift} Made by `{command}`.\n"
    );
    out
}

/// The footnote of a table with a `clock-drift` column: what the kind draws, against the drift
/// allowance the leases assume, so that `safe` there is read with its bound.
fn drift_note(kinds: &[FaultKind]) -> &'static str {
    if kinds.contains(&FaultKind::ClockDrift) {
        " `clock-drift` draws each drift from ±10–1,000 ppm or ±1–5 % (half of the drifts \
         each), up to five times the drift allowance of the leases judged on a clock (1 % of \
         the TTL + 2 ms: Redlock's `drift_factor`, and S3's default clock uncertainty): a \
         `safe` there is no promise for drift beyond the allowance, which more seeds show \
         breaking such leases."
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(algo: &str, kind: FaultKind, s1: u64, grants: u64) -> CellSummary {
        let mut c = CellSummary::new(algo, kind, 0);
        c.seeds = 10;
        c.grants = grants;
        if kind != FaultKind::None {
            c.faults_applied = 12;
            c.faulted_seeds = 10;
        }
        if s1 > 0 {
            c.violations.insert(Property::S1, s1);
        }
        c
    }

    #[test]
    fn rows_per_algorithm_columns_per_kind_and_what_each_survives() {
        let cells = [
            cell("a", FaultKind::None, 0, 5),
            cell("a", FaultKind::Pause, 3, 5),
            cell("b", FaultKind::None, 0, 0),
            cell("b", FaultKind::Pause, 0, 7),
        ];
        let t = table(
            &cells,
            |a| format!("about {a}"),
            "locksim campaign --markdown",
        );
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "| algorithm | what | `none` | `pause` | survives (no S1–S4 in any seed; faults took effect) |"
        );
        assert_eq!(lines[2], "| `a` | about a | safe | S1 3 | nothing |");
        assert_eq!(lines[3], "| `b` | about b | no grants | safe | pause |");
        assert!(t.contains("Made by `locksim campaign --markdown`"));
    }

    /// Issue #46, item 5: seeds that granted nothing are counted apart from the safe ones
    /// (consul-session: 23 of 38,400 seeds granted nothing), in a safe cell and beside a
    /// violation alike.
    #[test]
    fn seeds_that_granted_nothing_are_said_apart_from_safe_ones() {
        let mut idle = cell("consul-session", FaultKind::Pause, 0, 40);
        idle.no_grant_seeds = 2;
        let mut broke = cell("consul-session", FaultKind::Partition, 4, 40);
        broke.no_grant_seeds = 1;
        let t = table(&[idle, broke], |_| String::new(), "x");
        let row = t.lines().nth(2).unwrap();
        assert_eq!(
            row,
            "| `consul-session` |  | safe · 2 granted nothing | S1 4 · 1 granted nothing | pause |",
            "{t}"
        );
    }

    /// A `clock-drift` column says what the kind draws against the drift allowance, so that
    /// its `safe` is read with its bound (2,440 seeds of it double-grant `central`).
    #[test]
    fn a_clock_drift_column_states_the_drift_it_draws_and_the_allowance() {
        let t = table(
            &[cell("central", FaultKind::ClockDrift, 0, 40)],
            |_| String::new(),
            "x",
        );
        assert!(t.contains("| `central` |  | safe | clock-drift |"), "{t}");
        assert!(t.contains("up to five times the drift allowance"), "{t}");
        assert!(t.contains("count the seeds of this campaign only"), "{t}");
        let t = table(
            &[cell("central", FaultKind::Pause, 0, 40)],
            |_| String::new(),
            "x",
        );
        assert!(!t.contains("drift allowance"), "{t}");
    }

    /// Issue #24, item 5: a leader-change cell of an algorithm without a leader applied no
    /// fault. It read `safe` and was listed under "survives"; it is `n/a` and is not.
    #[test]
    fn a_cell_whose_faults_never_took_effect_is_na_and_not_survived() {
        let mut none = cell("redlock", FaultKind::LeaderChange, 0, 40);
        none.faults_applied = 0;
        none.faulted_seeds = 0;
        let t = table(
            &[cell("redlock", FaultKind::None, 0, 40), none.clone()],
            |_| String::new(),
            "x",
        );
        let row = t.lines().nth(2).unwrap();
        assert_eq!(row, "| `redlock` |  | safe | n/a | nothing |", "{t}");
        // A violation found without faults is still shown, beside the n/a.
        none.violations.insert(Property::S1, 2);
        assert_eq!(cell_text(&none), "S1 2 · n/a");
        // Records that predate the count are not taken for "no fault took effect".
        none.faults_unrecorded = 10;
        assert!(!none.no_fault_took_effect());
    }
}
