//! What `locksim hunt` checks before it searches and says after: the refusals of a hunt that
//! could only come back empty or over `--max-memory`, the find's trace, the `--json` object,
//! the text report and the warnings about runs that explored nothing.

use locksim_core::text::plural;
use locksim_core::trace::Written;
use locksim_core::{FaultKind, Property, Scenario, Trace};
use locksim_sim::LockAlgorithm;

use super::{Find, HuntOutcome, Origin, Search};
use crate::budget::{estimate, exact_sizes, fmt_bytes};

/// What was asked of the hunt, as its report repeats it.
pub struct Asked<'a> {
    /// `--budget`.
    pub budget: u64,
    /// `--search`.
    pub search: Search,
    /// `--first-seed`.
    pub first_seed: u64,
    /// `--property` as given, if given.
    pub property: Option<&'a str>,
    /// `--no-shrink`: the find's trace is as it ran.
    pub no_shrink: bool,
}

/// Where the find's trace went ([`Trace::write_beside`]), and its seed (the shrinker may
/// change it).
pub struct FindTrace {
    /// The file, and whether it was reused or went beside a clash.
    pub written: Written,
    /// The trace's seed.
    pub seed: u64,
}

/// Refuses a hunt for `property` when `algo` (named `algorithm`) does not judge it in the
/// run `first`: such a hunt could only come back empty.
///
/// # Errors
/// One line naming the properties it judges.
pub fn check_property(
    first: &Scenario,
    algo: &dyn LockAlgorithm,
    algorithm: &str,
    property: Option<Property>,
) -> Result<(), String> {
    let Some(p) = property else { return Ok(()) };
    let judged = crate::outcome::check_options_for(first, algo).properties();
    if judged.contains(&p) {
        return Ok(());
    }
    let names: Vec<String> = judged.iter().map(|p| p.to_string()).collect();
    Err(format!(
        "--property {p}: {p} is not judged for {algorithm} (it judges {}): a hunt for it could only come back empty",
        names.join(", ")
    ))
}

/// Refuses a hunt over `limit` bytes by the estimate, for the runs at once (`jobs` threads,
/// at most a batch, at most `budget`). The two sizes are never printed alike
/// ([`exact_sizes`]).
///
/// # Errors
/// One line with the estimate, the limit and what to change.
pub fn check_memory(first: &Scenario, jobs: usize, budget: u64, limit: u64) -> Result<(), String> {
    let at_once = (jobs.max(1) as u64).min(super::BATCH as u64).min(budget);
    let need = estimate(first).and_then(|e| e.checked_mul(at_once));
    if need.is_some_and(|n| n <= limit) {
        return Ok(());
    }
    let (need, limit) = match need {
        None => ("more than 16 EiB".to_string(), fmt_bytes(limit)),
        Some(n) => exact_sizes(n, limit),
    };
    Err(format!(
        "{} with {} and {} for {} of simulated time needs about {need}{} by the estimate, more than --max-memory {limit}: make the run shorter or smaller{}",
        first.algorithm,
        plural(first.cluster.servers as u64, "server"),
        plural(first.cluster.clients as u64, "client"),
        locksim_core::time::fmt_nanos(first.workload.duration as i128),
        if at_once > 1 { format!(" for {at_once} runs at once") } else { String::new() },
        if at_once > 1 { ", use fewer --jobs, or raise --max-memory" } else { ", or raise --max-memory" }
    ))
}

/// Refuses `--search swarm` when the cell's kinds leave nothing to draw from (`--faults
/// none`): every swarm run would be the random search's, said as if it were something else.
///
/// # Errors
/// One line naming the kinds and what to give instead.
pub fn check_swarm(
    kinds: &[FaultKind],
    workload: &locksim_core::Workload,
    search: Search,
) -> Result<(), String> {
    if search == Search::Swarm && super::swarm::pool(kinds, workload).is_empty() {
        let kinds: Vec<String> = kinds.iter().map(|k| k.to_string()).collect();
        return Err(format!(
            "--search swarm: the fault kinds ({}) leave none to draw plans from, so every swarm run would be the random search's: give kinds with --faults (e.g. mixed), or use --search random",
            kinds.join(",")
        ));
    }
    Ok(())
}

impl Find {
    /// The find's trace as it ran (`--no-shrink`), its events embedded.
    pub fn trace(&self) -> Trace {
        Trace::new(
            self.scenario.clone(),
            self.history.digest(),
            self.verdict.clone(),
            Some(self.history.events.clone()),
        )
    }
}

/// `--json`'s object: the find (if any), where its trace went, and what the search saw.
pub fn json(a: &Asked, out: &HuntOutcome, written: Option<&FindTrace>) -> serde_json::Value {
    let w = written.map(|w| &w.written);
    serde_json::json!({
        "found": out.found.is_some(),
        "runs": out.runs,
        "budget": a.budget,
        "search": a.search.name(),
        "first_seed": a.first_seed,
        "property": out.found.as_ref().map(|f| f.property.to_string()).or(a.property.map(str::to_string)),
        "seed": out.found.as_ref().map(|f| f.scenario.seed),
        "origin": out.found.as_ref().map(|f| match &f.origin {
            Origin::Fresh => serde_json::json!({"kind": "fresh"}),
            Origin::Swarm => serde_json::json!({"kind": "swarm"}),
            Origin::Mutant { parent, mutations } => serde_json::json!({
                "kind": "mutant",
                "parent": parent,
                "mutations": mutations.iter().map(|m| m.name()).collect::<Vec<_>>(),
            }),
        }),
        "trace": w.map(|w| w.path.display().to_string()),
        "trace_seed": written.map(|w| w.seed),
        "trace_reused": w.is_some_and(|w| w.reused),
        "trace_clash": w.and_then(|w| w.clash.as_ref()).map(|p| p.display().to_string()),
        "corpus": out.corpus,
        "features": out.features,
        "runs_without_grants": out.runs_without_grants,
        "runs_with_faults": out.runs_with_faults,
        "runs_with_writes": out.runs_with_writes,
        "errors": out.errors,
        "path_digest": format!("{:016x}", out.path_digest),
        "run_secs": out.time.runs,
        "search_secs": out.time.search,
    })
}

/// How a candidate was made, in words.
fn origin(o: &Origin) -> String {
    match o {
        Origin::Fresh => "a fresh seed".to_string(),
        Origin::Swarm => "a swarm run".to_string(),
        Origin::Mutant { parent, mutations } => format!(
            "a mutant of run {parent} ({})",
            mutations
                .iter()
                .map(|m| m.name())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The text report's lines about the find `f` and its trace (`program` names the command
/// in the replay line).
fn found_text(
    a: &Asked,
    f: &Find,
    secs: f64,
    written: Option<&FindTrace>,
    program: &str,
) -> String {
    let mut s = format!(
        "found {} at run {} of {} ({:.1}s): seed {}, {}, {}\n",
        f.property,
        f.run,
        a.budget,
        secs,
        f.scenario.seed,
        plural(f.scenario.faults.len() as u64, "fault"),
        origin(&f.origin)
    );
    let Some(FindTrace { written: w, seed }) = written else {
        return s;
    };
    let how = if a.no_shrink { "trace" } else { "shrunk trace" };
    let kept = if w.reused {
        "; an identical trace was already there: kept"
    } else {
        ""
    };
    s += &format!("{how}: {} (seed {seed}{kept})\n", w.path.display());
    if let Some(c) = &w.clash {
        s += &format!(
            "note: {} holds a different trace of the same digest (another hunt's, e.g. with other --faults): kept, and this find's trace is the one beside it\n",
            c.display()
        );
    }
    s += &format!(
        "replay it with: {program} replay {}\n",
        crate::testing::shell_quote(&w.path.to_string_lossy())
    );
    s
}

/// The text report: the find and its trace, or that there was none (`what`: the property
/// hunted, or "any violation"); the overhead; the corpus.
pub fn text(
    a: &Asked,
    (what, secs): (&str, f64),
    out: &HuntOutcome,
    written: Option<&FindTrace>,
    program: &str,
) -> String {
    let mut s = match &out.found {
        Some(f) => found_text(a, f, secs, written, program),
        // "no S1 in 20 runs", "no violation in 50 runs" (not "no any violation").
        None => format!(
            "no {} in {} ({:.1}s; {} search from seed {})\n",
            what.strip_prefix("any ").unwrap_or(what),
            plural(out.runs, "run"),
            secs,
            a.search.name(),
            a.first_seed
        ),
    };
    let per_run = |secs: f64| 1000.0 * secs / out.time.ran.max(1) as f64;
    s += &format!(
        "overhead: {:.2} ms a run in the search, {:.2} ms a run in the runs ({:.1}% of the time)\n",
        per_run(out.time.search),
        per_run(out.time.runs),
        100.0 * out.time.share()
    );
    if a.search == Search::Guided && out.corpus > 0 {
        s += &format!(
            "corpus: {} kept, {} distinct lock states and event pairs seen\n",
            plural(out.corpus as u64, "run"),
            out.features
        );
    }
    s
}

/// What a hunt that explored nothing proves nothing about.
pub struct Warnings {
    /// The warning lines (for stderr), without `warning: `.
    pub lines: Vec<String>,
    /// No fault took effect in any run (`--faults none` included).
    pub faultless: bool,
    /// For S2, no write reached the resource in any run.
    pub writeless: bool,
}

/// The warnings about runs that explored nothing, of a hunt of `kinds` for `property`.
pub fn warnings(out: &HuntOutcome, kinds: &[FaultKind], property: Option<Property>) -> Warnings {
    let mut lines = Vec::new();
    if out.runs_without_grants > 0 {
        lines.push(format!(
            "{} of {} granted nothing: they explored no lock",
            plural(out.runs_without_grants, "run"),
            out.runs
        ));
    }
    if let Some(e) = &out.first_error {
        lines.push(format!(
            "{} failed to run; the first: {e}",
            plural(out.errors, "run")
        ));
    }
    // `--faults none` included: a hunt in which no fault ever took effect proves nothing
    // about faults, whatever the kinds asked for.
    let faultless = out.runs_with_faults == 0 && out.runs > out.errors;
    let none_asked = kinds.iter().all(|k| *k == FaultKind::None);
    if faultless && none_asked {
        lines.push(format!(
            "no fault took effect in any of the {} (--faults none draws none): the search ran fault-free and proves nothing about faults",
            plural(out.runs, "run")
        ));
    } else if faultless {
        lines.push(format!(
            "no fault took effect in any of the {} (e.g. leader-change where no server leads): the search ran fault-free",
            plural(out.runs, "run")
        ));
    }
    let writeless =
        property == Some(Property::S2) && out.runs_with_writes == 0 && out.runs > out.errors;
    if writeless {
        lines.push(format!(
            "S2: no write reached the resource in any of the {}: stale writes were never possible",
            plural(out.runs, "run")
        ));
    }
    Warnings {
        lines,
        faultless,
        writeless,
    }
}
