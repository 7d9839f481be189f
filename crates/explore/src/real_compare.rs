//! `locksim real --compare`'s tallies and table: K real runs beside K simulated seeds of one
//! scenario file, per property (S1–S4, L1–L3 with liveness, and runs with a grant), judged
//! with [`crate::compare`] (Wilson intervals, Fisher's exact test). The runs themselves are
//! the caller's: this module counts their verdicts and words the result.

use locksim_core::text::plural;
use locksim_core::{History, Property, Verdict};
use serde_json::{json, Value};

use crate::compare::{compare, Comparison, Tally, ALPHA};

/// The properties compared: S1–S4, and L1–L3 when `liveness`.
pub fn properties(liveness: bool) -> Vec<Property> {
    let mut props = vec![Property::S1, Property::S2, Property::S3, Property::S4];
    if liveness {
        props.extend(Property::LIVENESS);
    }
    props
}

/// The distinct properties `v` violates, sorted by name.
pub fn violated(v: &Verdict) -> Vec<Property> {
    let mut p: Vec<Property> = v.violations.iter().map(|x| x.kind).collect();
    p.sort_by_key(|p| p.to_string());
    p.dedup();
    p
}

/// `S1, S2` or `safe`.
pub fn props_text(p: &[Property]) -> String {
    if p.is_empty() {
        "safe".into()
    } else {
        p.iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// One run's or seed's own result for `--json`'s `each`: `{"side", "seed", "grants",
/// "violated"}`.
pub fn one(side: &str, seed: u64, got: &[Property], granted: usize) -> Value {
    json!({"side": side, "seed": seed, "grants": granted,
        "violated": got.iter().map(|p| p.to_string()).collect::<Vec<_>>()})
}

/// One side's tallies: per property (in the order of the `props` given to [`Self::add`]),
/// and runs with at least one grant.
pub struct SideTally {
    pub props: Vec<Tally>,
    pub granted: Tally,
    /// Grants over all runs.
    pub grants: usize,
    /// Checks that ran out of budget over all runs.
    pub undecided: usize,
}

impl SideTally {
    /// Empty tallies for `n` properties.
    pub fn new(n: usize) -> SideTally {
        SideTally {
            props: vec![Tally::default(); n],
            granted: Tally::default(),
            grants: 0,
            undecided: 0,
        }
    }

    /// Counts one run's verdict; returns its violated properties and grant count.
    pub fn add(&mut self, props: &[Property], v: &Verdict, h: &History) -> (Vec<Property>, usize) {
        let got = violated(v);
        let undecided = v.undecided();
        for (k, p) in props.iter().enumerate() {
            self.props[k].add(got.contains(p), undecided.contains(p));
        }
        let granted = crate::outcome::grants(h) as usize;
        self.granted.add(granted > 0, false);
        self.grants += granted;
        self.undecided += v.inconclusive.len();
        (got, granted)
    }

    /// Runs without a grant.
    pub fn empty(&self) -> u64 {
        self.granted.runs - self.granted.hits
    }
}

/// What a comparison found, as its exit code reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finding {
    /// No property differs and none is sim-optimistic, and every run counted.
    Agree,
    /// A property is sim-optimistic, or the sides differ.
    Differ,
    /// The sides agree, but some runs prove nothing (no grant, no failover, a check out of
    /// budget).
    Undecided,
}

/// Both sides of a comparison, judged.
pub struct Judged {
    /// Per property: its name and the comparison.
    pub rows: Vec<(String, Comparison)>,
    /// Runs with at least one grant.
    pub granted: Comparison,
    /// Properties real runs violate and no simulated seed does.
    pub optimistic: Vec<String>,
    /// Rows (properties and `grants`) whose rates differ.
    pub differs: Vec<String>,
    /// Real runs and simulated seeds without a grant.
    pub empty: (u64, u64),
    /// Checks out of budget, both sides.
    pub undecided: usize,
    /// Grants, real and simulated.
    pub grants: (usize, usize),
    /// Real runs whose plan cut a failover's primary off and in which nobody was promoted.
    pub missed: u64,
}

/// Judges the tallies `real` and `sim` of `props`; `missed`: real runs that did not
/// exercise the failover they are about.
pub fn judge(props: &[Property], real: &SideTally, sim: &SideTally, missed: u64) -> Judged {
    let rows: Vec<(String, Comparison)> = props
        .iter()
        .enumerate()
        .map(|(k, p)| (p.to_string(), compare(real.props[k], sim.props[k], true)))
        .collect();
    let granted = compare(real.granted, sim.granted, false);
    let optimistic = rows
        .iter()
        .filter(|r| r.1.sim_optimistic)
        .map(|r| r.0.clone())
        .collect();
    let grants_row = ("grants".to_string(), granted);
    let differs = rows
        .iter()
        .chain([&grants_row])
        .filter(|r| r.1.differs)
        .map(|r| r.0.clone())
        .collect();
    Judged {
        rows,
        granted,
        optimistic,
        differs,
        empty: (real.empty(), sim.empty()),
        undecided: real.undecided + sim.undecided,
        grants: (real.grants, sim.grants),
        missed,
    }
}

/// `12%` for a rate in [0, 1].
fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// One row of the comparison table: the sides' counts with their 95 % intervals, Fisher's p,
/// and what the row means.
fn row(name: &str, c: &Comparison) -> String {
    let side = |t: &Tally, ci: (f64, f64)| {
        format!(
            "{:>3}/{:<3} {:>4} [{}, {}]",
            t.hits,
            t.runs,
            pct(t.rate()),
            pct(ci.0),
            pct(ci.1)
        )
    };
    let mut what = Vec::new();
    if c.differs {
        what.push("differs");
    }
    if c.sim_optimistic {
        what.push("SIM_OPTIMISTIC");
    }
    let p = if c.p < 0.001 {
        "<0.001".to_string()
    } else {
        format!("{:.3}", c.p)
    };
    format!(
        "{:<8} {:<24} {:<24} {:>6}  {}\n",
        name,
        side(&c.real, c.real_ci),
        side(&c.sim, c.sim_ci),
        p,
        if what.is_empty() {
            "-".to_string()
        } else {
            what.join(", ")
        }
    )
}

fn row_json(name: &str, c: &Comparison) -> Value {
    json!({
        "property": name,
        "real": c.real.hits, "real_runs": c.real.runs, "real_rate": c.real.rate(),
        "real_ci": [c.real_ci.0, c.real_ci.1],
        "sim": c.sim.hits, "sim_runs": c.sim.runs, "sim_rate": c.sim.rate(),
        "sim_ci": [c.sim_ci.0, c.sim_ci.1],
        "p": c.p, "differs": c.differs, "sim_optimistic": c.sim_optimistic,
        "agree": !c.differs && !c.sim_optimistic,
    })
}

impl Judged {
    /// What the comparison found.
    pub fn finding(&self) -> Finding {
        if !self.optimistic.is_empty() || !self.differs.is_empty() {
            Finding::Differ
        } else if self.empty != (0, 0) || self.undecided > 0 || self.missed > 0 {
            Finding::Undecided
        } else {
            Finding::Agree
        }
    }

    /// The table for people: a head naming `file`, `runs` per side from seed `first`, a row
    /// per property and one for grants, then the warnings. Ends with a newline.
    pub fn text(&self, file: &str, runs: u64, first: u64) -> String {
        let mut t = format!(
            "{file}: {} and {} (from seed {first}; seed N draws the same workload on both sides)\n",
            plural(runs, "real run"),
            plural(runs, "simulated seed")
        );
        t += &format!(
            "{:<8} {:<24} {:<24} {:>6}  {}\n",
            "property", "real      rate [95% CI]", "simulated rate [95% CI]", "p", "verdict"
        );
        for (n, c) in &self.rows {
            t += &row(n, c);
        }
        t += &row("grants", &self.granted);
        t += &format!(
            "grants: {} real, {} simulated (the grants row counts runs with at least one)\n",
            self.grants.0, self.grants.1
        );
        t += "rates: violating runs / runs judged, 95% Wilson score intervals; p: Fisher's exact test, two-sided; differs: p < 0.05\n";
        t + &self.warnings()
    }

    /// The text's last lines: sim-optimistic properties, runs that prove nothing.
    fn warnings(&self) -> String {
        let mut t = String::new();
        if !self.optimistic.is_empty() {
            t += &format!(
                "SIM_OPTIMISTIC: {}: real runs violate it and no simulated seed does (the simulator calls safe what is not: a simulator bug)\n",
                self.optimistic.join(", ")
            );
        }
        let (real_empty, sim_empty) = self.empty;
        if real_empty > 0 || sim_empty > 0 {
            t += &format!(
                "WARNING: no client was granted the lock in {} and {}: those prove nothing\n",
                plural(real_empty, "real run"),
                plural(sim_empty, "simulated seed")
            );
        }
        if self.missed > 0 {
            t += &format!(
                "WARNING: Sentinel promoted no replica in {} though the plan cut the primary off for longer than down_after: those did not exercise failover\n",
                plural(self.missed, "real run")
            );
        }
        if self.undecided > 0 {
            t += &format!("UNDECIDED: {} checks ran out of budget\n", self.undecided);
        }
        t
    }

    /// `--json`'s object: `file`, `runs`, `real_service`, `first_seed`, `properties` (a row
    /// per property and `grants`), the counts, `alpha`, `differs`, `sim_optimistic`, `agree`
    /// and `each` (every run's and seed's own result, from [`one`]).
    pub fn json(
        &self,
        file: &str,
        runs: u64,
        first: u64,
        service: &str,
        each: Vec<Value>,
    ) -> Value {
        let mut rows: Vec<Value> = self.rows.iter().map(|(n, c)| row_json(n, c)).collect();
        rows.push(row_json("grants", &self.granted));
        json!({"file": file, "runs": runs,
            "real_service": service,
            "first_seed": first, "properties": rows, "real_grants": self.grants.0,
            "sim_grants": self.grants.1, "real_runs_without_grants": self.empty.0,
            "sim_seeds_without_grants": self.empty.1, "undecided": self.undecided,
            "real_runs_without_failover": self.missed,
            "alpha": ALPHA, "differs": self.differs, "sim_optimistic": self.optimistic,
            "agree": self.differs.is_empty() && self.optimistic.is_empty(), "each": each})
    }
}

/// The verdict of `s`'s run `h` by the checks `algo`'s campaigns use, L1–L3 only with
/// `liveness`.
pub fn verdict(
    s: &locksim_core::Scenario,
    algo: &dyn locksim_sim::LockAlgorithm,
    h: &History,
    liveness: bool,
) -> Verdict {
    let mut opts = crate::outcome::check_options_for(s, algo);
    if !liveness {
        opts.liveness = None;
    }
    locksim_check::check_all(h, &opts)
}

/// The simulated side of a comparison: `runs` seeds of `chosen` from `first`, tallied over
/// `props` (L1–L3 checked with `liveness`), each seed's own result added to `each` ([`one`]);
/// `None` when `interrupted` says so before a seed.
///
/// # Errors
/// A seed's simulation failed (panicked).
pub fn sim_side(
    chosen: &crate::choose::Chosen,
    (first, runs): (u64, u64),
    (props, liveness): (&[Property], bool),
    each: &mut Vec<Value>,
    interrupted: &dyn Fn() -> bool,
) -> Result<Option<SideTally>, String> {
    let mut sim = SideTally::new(props.len());
    for i in 0..runs {
        if interrupted() {
            return Ok(None);
        }
        let s = chosen.scenario(first + i);
        let o = crate::check_scenario(&s, chosen.setup.algo.clone());
        if let Some(e) = o.error {
            return Err(format!("the simulation of seed {} failed: {e}", first + i));
        }
        let h = o.history.expect("a history");
        let v = verdict(&s, &*chosen.setup.algo, &h, liveness);
        let (got, granted) = sim.add(props, &v, &h);
        each.push(one("sim", first + i, &got, granted));
    }
    Ok(Some(sim))
}

/// The real side of a comparison, run by run ([`RealSide::add`]).
pub struct RealSide {
    pub tally: SideTally,
    /// Runs that did not exercise the failover their plan is about.
    pub missed: u64,
    /// What ran (servers, and an adapter's library and version), as run 1 said.
    pub service: String,
}

/// One real run as [`RealSide::add`] counts it.
pub struct RealRunDone<'a> {
    /// Its index (from 0), of how many.
    pub index: (u64, u64),
    /// Its seed.
    pub seed: u64,
    /// What ran.
    pub service: &'a str,
    pub verdict: &'a Verdict,
    pub history: &'a History,
    /// It did not exercise the failover its plan is about.
    pub missed_failover: bool,
    /// Where its logs are kept.
    pub logs: Option<&'a std::path::Path>,
}

impl RealSide {
    /// An empty side for `n` properties.
    pub fn new(n: usize) -> RealSide {
        RealSide {
            tally: SideTally::new(n),
            missed: 0,
            service: String::new(),
        }
    }

    /// Counts real run `r` over `props` and adds its own result to `each` ([`one`], with
    /// `logs`); returns the lines for stderr (where its logs are, and `real run I of N (seed
    /// S): S1, S2` with what proves nothing).
    pub fn add(
        &mut self,
        props: &[Property],
        r: RealRunDone,
        each: &mut Vec<Value>,
    ) -> Vec<String> {
        if self.service.is_empty() {
            self.service = r.service.to_string();
        }
        let (got, granted) = self.tally.add(props, r.verdict, r.history);
        let mut this = one("real", r.seed, &got, granted);
        let mut lines = Vec::new();
        let (i, runs) = r.index;
        if let Some(d) = r.logs {
            lines.push(format!("run {}: logs kept in {}", i + 1, d.display()));
            this["logs"] = json!(d);
        }
        each.push(this);
        let none = if granted == 0 {
            " (NO GRANT: proves nothing)"
        } else if r.missed_failover {
            self.missed += 1;
            " (NO FAILOVER: Sentinel promoted nobody; proves nothing about failover)"
        } else {
            ""
        };
        lines.push(format!(
            "real run {} of {runs} (seed {}): {}{none}",
            i + 1,
            r.seed,
            props_text(&got)
        ));
        lines
    }
}
