//! Fault seeds in your own `cargo test`:
//!
//! ```no_run
//! use std::sync::Arc;
//! use locksim_core::{FaultKind, Property};
//! use locksim_explore::testing::Campaign;
//!
//! #[test]
//! fn my_lock_survives_pauses_and_partitions() {
//!     Campaign::registered("central-fencing", &["ttl=2s"])
//!         .seeds(0..500)
//!         .faults(&[FaultKind::Partition, FaultKind::Loss])
//!         .expect_safe();
//! }
//!
//! #[test]
//! fn a_paused_holder_double_grants_but_fencing_keeps_the_data() {
//!     Campaign::registered("central-fencing", &[])
//!         .faults(&[FaultKind::Pause])
//!         .expect(&[Property::S1])       // some seed must violate S1
//!         .forbid(&[Property::S2])       // none may violate S2
//!         .allow(&[Property::S3])        // S3 may go either way
//!         .check();                      // and S4, unlisted, is forbidden
//! }
//! ```
//!
//! Every property the run checks counts ([`locksim_check::CheckOptions::properties`]: S1–S4,
//! and the liveness properties when their checkers judge the run): a property that is neither
//! expected nor allowed is forbidden. [`Campaign::check`] judges the cells with the gate of
//! `locksim campaign --fail-on` ([`crate::gate::judge`]) over the forbidden properties, so a
//! test and the command line give the same verdict on the same cells: a forbidden property
//! violated fails, and so does a cell that proves nothing — a forbidden property left
//! undecided (its budget ran out), no grant, no fault taking effect in any seed (a
//! [`FaultKind::None`] cell, the control group, needs none), S2 forbidden and no write
//! reaching the resource, or a forbidden property the algorithm is not judged on. On a
//! forbidden violation it shrinks the first failing seed, writes its trace (to
//! `$LOCKSIM_TRACES`, or `traces/` under the current folder) and panics with the test's name,
//! the seed, the trace's path and two commands that work as printed: one re-runs this test on
//! that seed alone (`cd PACKAGE && LOCKSIM_SEED=N cargo test --test T -- the::test --exact
//! --include-ignored`), one replays the trace with this test's algorithm and draws its page
//! (`… LOCKSIM_REPLAY=TRACE LOCKSIM_RENDER=PAGE cargo test …`): a trace of your own algorithm
//! can only re-run where the algorithm is, in your crate. [`replay`] and [`render`] do the
//! same from code.
//!
//! Environment variables (read by [`Campaign::check`]; see [`Knobs`]):
//!
//! | variable | effect |
//! |---|---|
//! | `LOCKSIM_SEED=N` | run seed `N` alone |
//! | `LOCKSIM_SEEDS=COUNT` or `A..B` | replace the test's seed range (nightly CI: `LOCKSIM_SEEDS=20000`) |
//! | `LOCKSIM_JOBS=N` | worker threads |
//! | `LOCKSIM_CHECK_DETERMINISM=1` | run every seed twice more and compare event digests |
//! | `LOCKSIM_TRACES=DIR` | where shrunk traces go |
//! | `LOCKSIM_REPLAY=TRACE.json` | replay that trace with the test's algorithm instead of the campaign |
//! | `LOCKSIM_RENDER=PAGE.html` | with `LOCKSIM_REPLAY`: draw the replayed run there |

mod command;
mod file;
mod knobs;

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use locksim_core::text::plural;
use locksim_core::{FaultKind, Property, Trace, Workload};
use locksim_sim::LockAlgorithm;

pub use command::{shell_quote, TestInvocation};
pub use file::FileCampaign;
pub use knobs::{Knobs, SeedsKnob};

use crate::campaign::{run_campaign, CampaignSpec, CellSummary};
use crate::gate::Gate;
use crate::outcome::check_scenario;
pub use crate::page::Drawn;
pub use crate::replay::Replay;
use crate::replay::{replay_with, verdict_kinds};
use crate::setup::{parse_setting, Setup};
use crate::shrink::{shrink_with, trace_file_name};

/// Replays the trace in `trace_file` with `algo` (your own algorithm, which `locksim replay`
/// cannot build): the same scenario run again, its event digest and verdict compared with
/// the trace's ([`Replay::ok`]).
///
/// # Errors
/// An unreadable trace (naming the file, line and column), a trace of another algorithm, or a
/// simulation that fails.
pub fn replay(
    trace_file: impl AsRef<Path>,
    algo: Arc<dyn LockAlgorithm>,
) -> Result<Replay, String> {
    let path = trace_file.as_ref();
    let trace = Trace::read(path).map_err(|e| e.to_string())?;
    replay_with(&trace, algo).map_err(|e| format!("{}: {e}", path.display()))
}

/// Re-runs the trace in `trace_file` with `algo` and writes the run's page (the timeline
/// `locksim render` draws) to `out`; never replaces a file that is not a locksim page.
///
/// # Errors
/// As [`replay`], and when `out` cannot be written.
pub fn render(
    trace_file: impl AsRef<Path>,
    algo: Arc<dyn LockAlgorithm>,
    out: impl AsRef<Path>,
) -> Result<Drawn, String> {
    crate::page::render(trace_file.as_ref(), algo, out.as_ref())
}

/// A campaign in a test.
pub struct Campaign {
    setup: Setup,
    registered: bool,
    seeds: Range<u64>,
    kinds: Vec<FaultKind>,
    jobs: Option<usize>,
    expect: Vec<Property>,
    forbid: Vec<Property>,
    allow: Vec<Property>,
}

impl Campaign {
    /// Your own algorithm, with 3 clients and the default workload.
    pub fn new(algo: Arc<dyn LockAlgorithm>) -> Campaign {
        Campaign::of(
            Setup::custom(algo, Default::default(), 3, Workload::default()),
            false,
        )
    }

    /// A registered algorithm with `key=value` settings.
    ///
    /// # Panics
    /// On an unknown algorithm or a bad setting (a test's configuration error).
    pub fn registered(name: &str, settings: &[&str]) -> Campaign {
        let pairs: Vec<(String, String)> = settings
            .iter()
            .map(|s| parse_setting(s).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        Campaign::of(
            Setup::registered(name, &pairs).unwrap_or_else(|e| panic!("{e}")),
            true,
        )
    }

    fn of(setup: Setup, registered: bool) -> Campaign {
        Campaign {
            setup,
            registered,
            seeds: 0..100,
            kinds: vec![FaultKind::Mixed],
            jobs: None,
            expect: Vec::new(),
            forbid: Vec::new(),
            allow: Vec::new(),
        }
    }

    /// Number of client processes (default 3).
    pub fn clients(mut self, n: u32) -> Self {
        self.setup.cluster.clients = n;
        self
    }

    /// The workload (default [`Workload::default`]).
    pub fn workload(mut self, w: Workload) -> Self {
        self.setup.workload = w;
        self
    }

    /// The seeds to run (default `0..100`); `LOCKSIM_SEED=N` overrides it with `N..N+1`,
    /// `LOCKSIM_SEEDS` with a count from the same first seed or a range.
    pub fn seeds(mut self, seeds: Range<u64>) -> Self {
        self.seeds = seeds;
        self
    }

    /// Fault kinds, each a cell of its own (default `mixed`).
    pub fn faults(mut self, kinds: &[FaultKind]) -> Self {
        self.kinds = kinds.to_vec();
        self
    }

    /// Worker threads (default: every core; `LOCKSIM_JOBS` overrides both).
    pub fn jobs(mut self, n: usize) -> Self {
        self.jobs = Some(n.max(1));
        self
    }

    /// Properties some seed must violate (each of them; added to earlier calls).
    pub fn expect(mut self, properties: &[Property]) -> Self {
        self.expect.extend_from_slice(properties);
        self
    }

    /// Properties no seed may violate (everything neither expected nor allowed is forbidden
    /// anyway; naming them documents the test and is checked against `expect`).
    pub fn forbid(mut self, properties: &[Property]) -> Self {
        self.forbid.extend_from_slice(properties);
        self
    }

    /// Properties seeds may or may not violate.
    pub fn allow(mut self, properties: &[Property]) -> Self {
        self.allow.extend_from_slice(properties);
        self
    }

    /// [`Campaign::check`], named for the common case: nothing expected, so every property
    /// the run checks that is not [`Campaign::allow`]ed is forbidden.
    ///
    /// # Panics
    /// As [`Campaign::check`].
    pub fn expect_safe(self) {
        self.check();
    }

    /// Runs the campaign and judges its cells (one per fault kind) as `locksim campaign
    /// --fail-on P,…` judges the same cells ([`crate::gate::judge`]), `P,…` being the
    /// properties this test forbids; then checks its expectations.
    ///
    /// **Inputs.** The algorithm with its settings, clients, workload, seeds and fault kinds;
    /// the properties expected ([`Campaign::expect`]), allowed ([`Campaign::allow`]) and
    /// forbidden; the environment's knobs (the module's table). The forbidden properties are
    /// those named by [`Campaign::forbid`] and every property the run checks (S1–S4, and
    /// L1–L3 when their checkers judge the algorithm) that is neither expected nor allowed.
    ///
    /// **Passes** when the gate over the forbidden properties finds every cell clean — no
    /// forbidden property violated or left undecided (a check out of its budget) on any seed,
    /// no seed failing to run, some client granted the lock, some fault taking effect in some
    /// seed, some write reaching the resource when S2 is forbidden, every forbidden property
    /// judged for the algorithm — and every expected property is violated by some seed. A
    /// [`FaultKind::None`] cell is the control group: it needs no fault to take effect, and is
    /// how a test claims a fault-free run (or a violation without faults). Any other cell in
    /// which no fault took effect proves nothing, whatever it found: an expected violation
    /// there need not be the fault's. Expected and allowed properties are not the gate's: they
    /// may be left undecided, and S2 expected or allowed needs no write.
    ///
    /// With `LOCKSIM_REPLAY` it replays that trace instead and judges nothing else; with
    /// `LOCKSIM_CHECK_DETERMINISM` it first runs every seed twice more and compares digests.
    ///
    /// # Panics
    /// - A seed failed to run: its error and the command that re-runs that seed alone.
    /// - A forbidden property is violated (the gate's violation): it shrinks the first such
    ///   seed (smallest seed, then property, then fault kind), writes its trace, and panics
    ///   with the seed, the gate's lines (`--fail-on P,…: S1 violated in ALGO × KIND (N seeds,
    ///   first seed M)`), any unmet expectation, the test's name, the trace and the commands
    ///   that re-run the seed and draw the trace.
    /// - A cell proves nothing (the gate's `locksim campaign` exit 3): the gate's lines
    ///   (`--fail-on P,…: ALGO × KIND: no fault took effect in any seed: proves nothing`), a
    ///   `fix:` line for each kind of reason, any unmet expectation, the test's name.
    /// - An expected property is never violated, or the run does not check it.
    /// - A property both forbidden and expected or allowed, an empty seed range, no fault
    ///   kinds, no clients, a malformed variable, a nondeterministic seed, or a replayed
    ///   trace that does not reproduce.
    pub fn check(self) {
        let knobs =
            Knobs::read(&|k| std::env::var(k).ok()).unwrap_or_else(|e| panic!("locksim: {e}"));
        for p in &self.forbid {
            assert!(
                !self.expect.contains(p) && !self.allow.contains(p),
                "locksim: {p} is both forbidden and expected or allowed"
            );
        }
        if let Some(trace) = &knobs.replay {
            replay_trace(self.setup.algo.clone(), trace, knobs.render.as_deref());
            return;
        }
        let seeds = knobs.seeds_for(&self.seeds);
        assert!(
            !seeds.is_empty(),
            "locksim: the seed range {seeds:?} is empty"
        );
        assert!(!self.kinds.is_empty(), "locksim: no fault kinds to run");
        assert!(
            self.setup.cluster.clients > 0,
            "locksim: a campaign needs at least one client"
        );
        let jobs = knobs.jobs_or(self.jobs);
        let spec = CampaignSpec {
            setups: vec![self.setup.clone()],
            kinds: self.kinds.clone(),
            first_seed: seeds.start,
            seeds: seeds.end - seeds.start,
            jobs,
        };
        let algo = &self.setup.algorithm;
        let range = format!("{}..{}", seeds.start, seeds.end);
        let invocation = TestInvocation::current();
        if knobs.check_determinism {
            assert_deterministic(
                std::slice::from_ref(&self.setup),
                &self.kinds,
                &seeds,
                jobs,
                algo,
                &invocation,
            );
        }
        let cells = run_campaign(&spec, &|_, _| {});
        if let Some(c) = cells
            .iter()
            .filter(|c| c.errors > 0)
            .min_by_key(|c| c.first_error_seed)
        {
            let seed = c.first_error_seed.unwrap_or(0);
            panic!(
                "locksim: {algo} seed {seed} under {} failed to run: {}\n  rerun:    {}",
                c.faults,
                c.first_error.as_deref().unwrap_or(""),
                invocation.command(&[("LOCKSIM_SEED", seed.to_string())], &[])
            );
        }
        let checked: Vec<Property> = Property::ALL
            .into_iter()
            .filter(|p| cells.iter().any(|c| c.checked.contains(p)))
            .collect();
        let forbidden: Vec<Property> = Property::ALL
            .into_iter()
            .filter(|p| {
                self.forbid.contains(p)
                    || (checked.contains(p) && !self.allow.contains(p) && !self.expect.contains(p))
            })
            .collect();
        let mut unmet = Vec::new();
        for &p in &self.expect {
            if !checked.contains(&p) {
                unmet.push(format!("{p} is expected, but this run does not check it"));
            } else if cells.iter().all(|c| c.violated(p) == 0) {
                unmet.push(format!(
                    "expected {p} to be violated by some seed of {range}; it never was"
                ));
            }
        }
        // Every checked property, counted: what the test's output shows under --nocapture.
        let counts = violation_counts(&cells, &|p| {
            if self.expect.contains(&p) {
                " (expected)"
            } else if self.allow.contains(&p) {
                " (allowed)"
            } else {
                " (forbidden)"
            }
        });
        let grants: u64 = cells.iter().map(|c| c.grants).sum();
        let applied: u64 = cells.iter().map(|c| c.faults_applied).sum();
        // The control group's zero is no finding: say so rather than print a bare 0.
        let faults = if cells.iter().any(|c| c.faults_meant()) {
            format!("{} took effect", plural(applied, "fault"))
        } else {
            "no fault meant (the control group)".to_string()
        };
        eprintln!(
            "locksim: {algo}, seeds {range} × {}: {grants} grants, {faults}; violations by seed: {counts}",
            plural(self.kinds.len() as u64, "fault kind"),
        );
        note_unrecorded_grants(&cells, algo);
        let (gate, why) = gate_lines(&cells, &forbidden);
        let mut lines: Vec<String> = why.iter().chain(&unmet).map(|w| format!("  {w}")).collect();
        let test = format!("  test:     {}", invocation.name.as_deref().unwrap_or("?"));
        match gate {
            Gate::Violation => {
                // Every seed ran (a failed one panicked above): the gate's violation is a
                // forbidden property's.
                let Some((seed, property, kind)) = first_violation_of(&cells, &forbidden) else {
                    panic!(
                        "locksim: {algo}, seeds {range}:\n{}\n{test}",
                        lines.join("\n")
                    );
                };
                let written = shrink_and_write(
                    &self.setup.scenario(seed, &[kind]),
                    self.setup.algo.clone(),
                    property,
                    &knobs.traces_dir(),
                );
                panic!(
                    "locksim: {algo} violates {property} under {kind} with seed {seed} (of {range}):\n{}\n{test}{}",
                    lines.join("\n"),
                    self.trace_lines(&written, &invocation, &knobs.rerun_vars(seed))
                );
            }
            Gate::ProvesNothing => {
                let fixes = fixes(&cells, &forbidden);
                lines.extend(fixes.iter().map(|f| format!("  fix:      {f}")));
                panic!(
                    "locksim: {algo}, seeds {range}: this campaign proves nothing, as `locksim campaign --fail-on {}` says of the same cells:\n{}\n{test}",
                    names(&forbidden),
                    lines.join("\n")
                );
            }
            Gate::Clean => assert!(
                unmet.is_empty(),
                "locksim: {algo}, seeds {range}:\n{}\n{test}",
                lines.join("\n")
            ),
        }
    }

    /// The failure message's lines after the test's name, for a forbidden violation whose
    /// shrunk trace `written` gave (path, faults left, digest) or why not: the trace, the
    /// command that re-runs the seed (`rerun_vars`), and those that draw the trace.
    fn trace_lines(
        &self,
        written: &Result<(PathBuf, usize, String), String>,
        invocation: &TestInvocation,
        rerun_vars: &[(&str, String)],
    ) -> String {
        let rerun = invocation.command(rerun_vars, &[]);
        match written {
            Ok((path, n, digest)) => {
                let page = path.with_extension("html");
                let render = invocation.command(
                    &[
                        ("LOCKSIM_REPLAY", path.to_string_lossy().into_owned()),
                        ("LOCKSIM_RENDER", page.to_string_lossy().into_owned()),
                    ],
                    &["--nocapture"],
                );
                let cli = if self.registered {
                    format!(
                        "\n  or:       locksim render {} -o {}",
                        shell_quote(&path.to_string_lossy()),
                        shell_quote(&page.to_string_lossy())
                    )
                } else {
                    String::new()
                };
                format!(
                    "\n  trace:    {} (shrunk to {}; digest {digest})\n  rerun:    {rerun}\n  render:   {render}{cli}",
                    path.display(),
                    plural(*n as u64, "fault")
                )
            }
            Err(e) => format!("\n  (shrinking failed: {e})\n  rerun:    {rerun}"),
        }
    }
}

/// `S1,S2,…`: `properties` as `--fail-on` lists them (`(none)` for an empty list, which the
/// command line cannot give: a test that expects or allows every property it checks).
fn names(properties: &[Property]) -> String {
    if properties.is_empty() {
        return "(none)".into();
    }
    properties
        .iter()
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// [`crate::gate::judge`] of `cells` over `forbidden`, each line on one line as the command
/// line prints it (`--fail-on S1,S2: …`; `--fail-on (none): …` when nothing is forbidden).
fn gate_lines(cells: &[CellSummary], forbidden: &[Property]) -> (Gate, Vec<String>) {
    let (gate, why) = crate::gate::judge(cells, forbidden);
    let lines = why
        .iter()
        .map(|w| {
            let w = locksim_core::text::one_line(w);
            match w.strip_prefix("--fail-on : ") {
                Some(rest) => format!("--fail-on (none): {rest}"),
                None => w.into_owned(),
            }
        })
        .collect();
    (gate, lines)
}

/// How to make cells that prove nothing under `forbidden` (by [`crate::gate::judge`]) exercise
/// what the test claims: one line per kind of reason the gate gives, in the gate's order.
/// Never by silencing the gate: each names what to run so that the claim is tested.
fn fixes(cells: &[CellSummary], forbidden: &[Property]) -> Vec<String> {
    let mut out: Vec<&str> = Vec::new();
    let ran = |c: &CellSummary| c.seeds > c.errors;
    for c in cells {
        let reasons = [
            (
                forbidden.iter().any(|&p| c.undecided_on(p) > 0),
                "a check ran out of its budget, so the property is not judged: shorter runs (Workload::duration) keep it decidable; .allow() it only if the test makes no claim about it",
            ),
            (
                c.grants == 0 && ran(c),
                "no client was ever granted the lock, so nothing was exercised: check that the algorithm grants at all (its servers answer, the clients' timeouts leave room for a reply)",
            ),
            (
                forbidden.contains(&Property::S2)
                    && c.violated(Property::S2) == 0
                    && c.counts.no_write_accepted(c.seeds - c.errors),
                "no write reached the resource, so S2 (stale writes) was never exercised: a workload whose holders write (Workload::writes_per_hold) and a resource that accepts them; .allow(&[Property::S2]) only if the test makes no claim about stale writes",
            ),
            (
                c.no_fault_took_effect() || c.kind_untested(),
                "no fault of the kind took effect in any seed, so the cell tested the fault-free run only: a fault kind that acts on this algorithm (leader-change needs a leader), or more seeds; a test that means the fault-free run says so with FaultKind::None (the control group, which needs no fault)",
            ),
            (
                ran(c) && forbidden.iter().any(|p| !c.checked.contains(p)),
                "a forbidden property is not judged for this algorithm (it makes no such claim, e.g. L1 for a lock that never expires): forbid only properties the run checks",
            ),
        ];
        for (applies, fix) in reasons {
            if applies && !out.contains(&fix) {
                out.push(fix);
            }
        }
    }
    out.into_iter().map(str::to_string).collect()
}

/// The first violation of one of `properties` in `cells`: the smallest seed, then property,
/// then fault kind.
pub(crate) fn first_violation_of(
    cells: &[crate::campaign::CellSummary],
    properties: &[Property],
) -> Option<(u64, Property, FaultKind)> {
    cells
        .iter()
        .flat_map(|c| {
            properties
                .iter()
                .filter_map(move |p| c.first_violation.get(p).map(|&s| (s, *p, c.faults)))
        })
        .min()
}

/// `LOCKSIM_CHECK_DETERMINISM`: panics, naming `what` and the command that re-runs it, on the
/// first seed that [`nondeterministic`] finds.
pub(crate) fn assert_deterministic(
    setups: &[Setup],
    kinds: &[FaultKind],
    seeds: &Range<u64>,
    jobs: usize,
    what: &str,
    invocation: &TestInvocation,
) {
    if let Some((seed, kind, a, b)) = nondeterministic(setups, kinds, seeds, jobs) {
        let rerun = invocation.command(
            &[
                ("LOCKSIM_SEED", seed.to_string()),
                ("LOCKSIM_CHECK_DETERMINISM", "1".into()),
            ],
            &[],
        );
        panic!(
            "locksim: {what} is not deterministic: seed {seed} under {kind} ran twice with digests {a} and {b} (the same seed must give the same run: no wall-clock time, no thread_rng, no HashMap order in the algorithm)\n  test:     {}\n  rerun:    {rerun}",
            invocation.name.as_deref().unwrap_or("?")
        );
    }
}

/// `S1 3 (expected), S2 0 (forbidden), …`: the seeds violating each property some cell
/// checked, each followed by its `role` in the test (`""` for none).
pub(crate) fn violation_counts(
    cells: &[crate::campaign::CellSummary],
    role: &dyn Fn(Property) -> &'static str,
) -> String {
    Property::ALL
        .into_iter()
        .filter(|p| cells.iter().any(|c| c.checked.contains(p)))
        .map(|p| {
            let n: u64 = cells.iter().map(|c| c.violated(p)).sum();
            format!("{p} {n}{}", role(p))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Prints the note on runs with grants and no service-side grant record, if `cells` have any.
pub(crate) fn note_unrecorded_grants(cells: &[crate::campaign::CellSummary], algorithm: &str) {
    let unrecorded: u64 = cells
        .iter()
        .map(|c| c.counts.runs_without_grant_records)
        .sum();
    if unrecorded > 0 {
        eprintln!(
            "locksim: {} (in {})",
            crate::outcome::no_grant_records_note(algorithm),
            plural(unrecorded, "seed")
        );
    }
}

/// Shrinks `scenario`, which violates `property`, and writes its trace (with its events) into
/// `dir` under its corpus name: (absolute path, faults left, digest). A different file of that
/// name is kept, and the trace written beside it as `NAME-2.json` (or `-3`, …).
///
/// # Errors
/// When shrinking fails or the trace cannot be written.
pub(crate) fn shrink_and_write(
    scenario: &locksim_core::Scenario,
    algo: Arc<dyn LockAlgorithm>,
    property: Property,
    dir: &Path,
) -> Result<(PathBuf, usize, String), String> {
    let s = shrink_with(scenario, algo, property, &|_| {})?;
    let trace = s.trace(true);
    let dir = std::path::absolute(dir).unwrap_or(dir.to_path_buf());
    // Never lost: a different trace of that name is kept, and this one written beside it.
    match trace.write_beside(&dir, &trace_file_name(&trace, property), "the shrunk trace") {
        Ok(w) => Ok((w.path, s.scenario.faults.len(), trace.digest)),
        Err(e) => Err(format!("the shrunk trace could not be written: {e}")),
    }
}

/// `LOCKSIM_REPLAY`: replays `trace` with `algo` (the test's algorithm) and, with `render`,
/// draws it; panics unless the run reproduces the trace's digest and verdict.
pub(crate) fn replay_trace(algo: Arc<dyn LockAlgorithm>, trace: &Path, render: Option<&Path>) {
    if let Some(out) = render {
        match crate::page::render(trace, algo.clone(), out) {
            Ok(d) => eprintln!(
                "locksim: drew {} ({} events, {} messages)",
                out.display(),
                d.events,
                d.messages
            ),
            Err(e) => panic!("locksim: LOCKSIM_RENDER: {e}"),
        }
    }
    let replayed = replay(trace, algo).unwrap_or_else(|e| panic!("locksim: LOCKSIM_REPLAY: {e}"));
    let recorded = Trace::read(trace).map(|t| (t.digest, verdict_kinds(&t.verdict)));
    let (digest, verdict) = recorded.unwrap_or_default();
    assert!(
        replayed.ok(),
        "locksim: {} does not reproduce: digest {} where the trace recorded {digest}, verdict {} where it recorded {verdict}{}",
        trace.display(),
        replayed.digest,
        verdict_kinds(&replayed.outcome.verdict),
        replayed.first_difference.as_deref().map_or(String::new(), |d| format!("; first difference: {d}"))
    );
    eprintln!(
        "locksim: replayed {}: digest {} as recorded, verdict {}",
        trace.display(),
        replayed.digest,
        verdict_kinds(&replayed.outcome.verdict)
    );
}

/// `LOCKSIM_CHECK_DETERMINISM`: runs every (setup, fault kind, seed) twice on `jobs`
/// threads and returns the first (smallest seed) whose digests differ, with both digests.
pub(crate) fn nondeterministic(
    setups: &[Setup],
    kinds: &[FaultKind],
    seeds: &Range<u64>,
    jobs: usize,
) -> Option<(u64, FaultKind, String, String)> {
    let runs: Vec<(&Setup, u64, FaultKind)> = setups
        .iter()
        .flat_map(|setup| {
            kinds
                .iter()
                .flat_map(move |&k| seeds.clone().map(move |s| (setup, s, k)))
        })
        .collect();
    let digest = |setup: &Setup, s: u64, k: FaultKind| {
        let out = check_scenario(&setup.scenario(s, &[k]), setup.algo.clone());
        match (&out.history, &out.error) {
            (Some(h), _) => h.digest(),
            (None, e) => format!("(failed: {})", e.as_deref().unwrap_or("?")),
        }
    };
    let next = AtomicU64::new(0);
    let found: Mutex<Vec<(u64, FaultKind, String, String)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| loop {
                let Some(&(setup, s, k)) = runs.get(next.fetch_add(1, Ordering::Relaxed) as usize)
                else {
                    return;
                };
                let (a, b) = (digest(setup, s, k), digest(setup, s, k));
                if a != b {
                    found
                        .lock()
                        .expect("no panic while held")
                        .push((s, k, a, b));
                }
            });
        }
    });
    found
        .into_inner()
        .expect("workers finished")
        .into_iter()
        .min_by_key(|f| (f.0, f.1))
}
