//! The exit codes every `locksim` command keeps (issue #48, item 2): one table, which
//! `locksim --help` and `locksim list --markdown` (docs/reference.md) print, and named codes
//! for the code that returns them, here beside the `--fail-on` gate ([`crate::gate`]) so that
//! whatever judges runs or records (the command line, a test) maps findings to the same codes.
//!
//! When several apply, [`VIOLATION`] wins over [`UNDECIDED`] (a violation is a finding
//! whatever else is undecided), and `check` and `replay` report [`BAD_INPUT`] for an
//! unreadable file before anything else.

/// Judged and clean: a safe run with grants, a linearizable history, every expectation met,
/// a replay identical, a page or file written.
pub const CLEAN: u8 = 0;

/// A violation or a failed expectation: a property violated, a history not linearizable, a
/// campaign file's `expect`/`forbid` unmet, a frontier moved, a replay that differs, a seed
/// that failed to run (its simulation panicked).
pub const VIOLATION: u8 = 1;

/// Bad input: a file, flag or setting that cannot be used (one line on stderr names it).
pub const BAD_INPUT: u8 = 2;

/// Undecided or nothing exercised: a check out of its budget, a run without grants, a
/// `--fail-on` cell that proves nothing for a listed property (no grants, no fault took
/// effect, the property undecided or not judged, S2 judged where no write reached the
/// resource: [`crate::gate::judge`]), a `hunt` that found nothing where some runs granted
/// nothing or failed to run, no fault took effect or (S2) no write reached the resource.
pub const UNDECIDED: u8 = 3;

/// `locksim real` only: the real run failed (a server died, a fault could not be applied, an
/// adapter broke the protocol) and there is no verdict.
pub const REAL_FAILED: u8 = 4;

/// `locksim real` only: interrupted (Ctrl-C or SIGTERM); every process it started is stopped
/// and its temporary files removed.
pub const INTERRUPTED: u8 = 130;

/// One of the codes above, as a command returns it: `Exit::VIOLATION.into()` is the
/// process's [`ExitCode`], [`Exit::worst`] combines two findings by the table's priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit(u8);

impl Exit {
    /// [`CLEAN`].
    pub const CLEAN: Exit = Exit(CLEAN);
    /// [`VIOLATION`].
    pub const VIOLATION: Exit = Exit(VIOLATION);
    /// [`BAD_INPUT`].
    pub const BAD_INPUT: Exit = Exit(BAD_INPUT);
    /// [`UNDECIDED`].
    pub const UNDECIDED: Exit = Exit(UNDECIDED);

    /// The exit status.
    pub fn code(self) -> u8 {
        self.0
    }

    /// The stronger of two findings: [`VIOLATION`] over [`UNDECIDED`] over [`CLEAN`] (any
    /// other code over all three).
    pub fn worst(self, other: Exit) -> Exit {
        let rank = |c: Exit| match c.0 {
            VIOLATION => 3,
            UNDECIDED => 2,
            CLEAN => 0,
            _ => 4,
        };
        if rank(self) >= rank(other) {
            self
        } else {
            other
        }
    }

    /// The code of a `--fail-on` gate's finding.
    pub fn of_gate(g: crate::gate::Gate) -> Exit {
        use crate::gate::Gate;
        match g {
            Gate::Clean => Exit::CLEAN,
            Gate::ProvesNothing => Exit::UNDECIDED,
            Gate::Violation => Exit::VIOLATION,
        }
    }
}

/// The exit code of a campaign or a merge whose campaign files' expectations gave `code`
/// ([`Exit::CLEAN`] or [`Exit::VIOLATION`]): with `fail_on` (`--fail-on`), also the gate's
/// finding on `cells` ([`crate::gate::judge`]); the stronger wins. Returns it with the gate's
/// reasons, one line each, for stderr.
pub fn gated(
    cells: &[crate::CellSummary],
    fail_on: &[locksim_core::Property],
    code: Exit,
) -> (Exit, Vec<String>) {
    if fail_on.is_empty() {
        return (code, Vec::new());
    }
    let (own, why) = crate::gate::judge(cells, fail_on);
    let why = why
        .iter()
        .map(|w| locksim_core::text::one_line(w).into_owned())
        .collect();
    (code.worst(Exit::of_gate(own)), why)
}

/// [`gated`] for a campaign run (not a merge): a run that judged no seed (a shard without
/// seeds) proves nothing, with or without `fail_on` ([`Exit::UNDECIDED`], said in the lines).
pub fn campaign_exit(
    cells: &[crate::CellSummary],
    fail_on: &[locksim_core::Property],
    code: Exit,
) -> (Exit, Vec<String>) {
    let (code, mut why) = gated(cells, fail_on, code);
    // With `fail_on`, the gate has said so already.
    if fail_on.is_empty() && cells.iter().all(|c| c.seeds == 0) {
        why.push("no seed was judged (a shard without seeds): this run proves nothing".into());
        return (code.worst(Exit::UNDECIDED), why);
    }
    (code, why)
}

/// The exit code of a run's verdict: [`VIOLATION`] when a property is violated,
/// [`UNDECIDED`] when a check ran out of budget and nothing was violated (the run is not
/// safe, but not shown unsafe either), else [`CLEAN`].
pub fn verdict_code(v: &locksim_core::Verdict) -> u8 {
    if !v.is_safe() {
        VIOLATION
    } else if !v.inconclusive.is_empty() {
        UNDECIDED
    } else {
        CLEAN
    }
}

/// The exit code of a simulated run: [`verdict_code`], and [`UNDECIDED`] for a clean run in
/// which no client was granted the lock (`grants` = 0): it exercised nothing, so it proves
/// nothing.
pub fn run_code(v: &locksim_core::Verdict, grants: u64) -> u8 {
    match verdict_code(v) {
        CLEAN if grants == 0 => UNDECIDED,
        code => code,
    }
}

/// The exit code of `locksim check` (issue #24, item 8): a history that is not linearizable
/// (`failing`) is a violation (as Jepsen's checker fails an invalid result), one whose search
/// gave up (`unknown`) is undecided, an unreadable file (`bad_input`) is bad input; bad input
/// wins over a violation, a violation over undecided.
pub fn check_code(bad_input: bool, failing: bool, unknown: bool) -> u8 {
    if bad_input {
        BAD_INPUT
    } else if failing {
        VIOLATION
    } else if unknown {
        UNDECIDED
    } else {
        CLEAN
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(e: Exit) -> Self {
        std::process::ExitCode::from(e.0)
    }
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct Code {
    /// The process's exit status.
    pub code: u8,
    /// The constant's name in this module.
    pub name: &'static str,
    /// What it means, as `--help` prints it (one line, wrapped there).
    pub meaning: &'static str,
    /// Commands and cases that return it.
    pub examples: &'static str,
}

/// Every exit code, in order.
pub const TABLE: [Code; 6] = [
    Code {
        code: CLEAN,
        name: "CLEAN",
        meaning: "judged and clean: safe, linearizable, every expectation met, a replay \
                  identical, the page or file written",
        examples: "a safe run with grants; `check` linearizable; `campaign sims/` all PASS; \
                   `replay` identical; `render`, `export-tla`, `list` done",
    },
    Code {
        code: VIOLATION,
        name: "VIOLATION",
        meaning: "a violation or a failed expectation: a property violated, a history not \
                  linearizable (check), a campaign file's expect/forbid unmet, a frontier boundary \
                  moved, a replay or re-drawn trace that differs, a --fail-on property violated or \
                  a seed that failed to run (run included)",
        examples: "`run` VIOLATED, or its seed failed to run; `hunt` found a violating run; \
                   `check` not linearizable; `sweep` frontier moved; `replay`/`render` re-run \
                   differs; `real --compare` a property `sim_optimistic` or `differs`",
    },
    Code {
        code: BAD_INPUT,
        name: "BAD_INPUT",
        meaning: "bad input: a file, flag or setting that cannot be used (one line names it); \
                  shrink of a run that violates nothing or failed to run; merge of records \
                  without faults_applied",
        examples: "an unreadable file, a bad flag, setting or `--fail-on` list; `real` without \
                   its tools, not root, or a clock shim not in force; a registration \
                   `main_with` refuses",
    },
    Code {
        code: UNDECIDED,
        name: "UNDECIDED",
        meaning: "undecided or nothing exercised: a check out of its budget (UNDECIDED, check's \
                  unknown), a history of 0 operations (check), a run in which no client got the \
                  lock, a --fail-on cell without grants, whose faults never took effect (n/a), \
                  where a listed property is undecided or not judged, or where S2 is judged but \
                  no write reached the resource, a shard without seeds, a merge --partial that \
                  leaves an expectation unjudged",
        examples: "`run` UNDECIDED or NOTHING EXERCISED; `hunt` found nothing and some runs \
                   granted nothing or failed to run, no fault took effect (--faults none \
                   included) or, for S2, no write reached the resource; `real` with no grant, or \
                   a failover plan Sentinel never acted on",
    },
    Code {
        code: REAL_FAILED,
        name: "REAL_FAILED",
        meaning: "the real run failed (real): a server died, a fault could not be applied or an \
                  adapter broke the protocol, and there is no verdict",
        examples: "`real`: a server that would not start, an adapter that broke the protocol",
    },
    Code {
        code: INTERRUPTED,
        name: "INTERRUPTED",
        meaning: "interrupted (real): Ctrl-C or SIGTERM; every process stopped, temporary files \
                  removed",
        examples: "`real` stopped by Ctrl-C",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue #24, item 8: "not linearizable" exited 0 and "unknown" 1.
    #[test]
    fn not_linearizable_is_a_violation_and_unknown_is_undecided() {
        assert_eq!(check_code(false, false, false), 0);
        assert_eq!(check_code(false, true, false), 1);
        assert_eq!(check_code(false, false, true), 3);
        assert_eq!(check_code(false, true, true), 1);
        assert_eq!(check_code(true, true, true), 2);
    }

    /// The table names each constant once, in increasing order, by its own name.
    #[test]
    fn the_table_holds_each_code_once_in_order() {
        let codes: Vec<u8> = TABLE.iter().map(|c| c.code).collect();
        assert_eq!(
            codes,
            [
                CLEAN,
                VIOLATION,
                BAD_INPUT,
                UNDECIDED,
                REAL_FAILED,
                INTERRUPTED
            ]
        );
        assert_eq!(codes, [0, 1, 2, 3, 4, 130]);
        for c in TABLE {
            assert!(
                !c.meaning.is_empty() && !c.examples.is_empty(),
                "{}",
                c.name
            );
            assert!(!c.meaning.contains('\n'), "{}: one line", c.name);
        }
    }

    /// Row 3 names every way a command reports that it proves nothing: the `--fail-on` gate's
    /// reasons ([`crate::gate::judge`]) and `hunt`'s, not only runs without grants.
    #[test]
    fn the_undecided_row_names_every_proves_nothing_case() {
        let row = TABLE.iter().find(|c| c.code == UNDECIDED).unwrap();
        for needle in [
            "--fail-on cell without grants",
            "faults never took effect",
            "a listed property is undecided or not judged",
            "S2 is judged but no write reached the resource",
            "a shard without seeds",
        ] {
            assert!(row.meaning.contains(needle), "{needle}: {}", row.meaning);
        }
        for needle in [
            "`hunt` found nothing and some runs granted nothing or failed to run",
            "no fault took effect (--faults none included)",
            "for S2, no write reached the resource",
        ] {
            assert!(row.examples.contains(needle), "{needle}: {}", row.examples);
        }
    }
}
