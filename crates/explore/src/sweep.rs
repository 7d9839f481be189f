//! Sweeps: one or two `--vary KEY=RANGE` axes over any `--set` knob (workload, algorithm or
//! fault shape), each point of the grid run as a campaign cell per algorithm and fault kind.
//! Beside them, one `--vary KEY=A,B,C` list of words (`retry=fixed,uniform`) makes each value
//! a series of its own, as the algorithms are: one line each in the plots.
//!
//! A sweep is a campaign whose setups are *point × algorithm* (point-major): cell `i` is point
//! `i / (algorithms × kinds)`, algorithm `(i / kinds) % algorithms`, kind `i % kinds`, so
//! [`run_each`](crate::run_each), `--out`, shards and `merge` work unchanged; each record also
//! names its point (`SeedRecord::point`). Rates come with a 95 % Wilson score interval.

use locksim_core::time::{fmt_nanos, parse_duration};
use locksim_core::{FaultKind, Property};
use serde::Serialize;

use crate::campaign::{CampaignSpec, CellSummary};
use crate::setup::setups_for;

/// How many points one axis may have.
pub const MAX_POINTS: usize = 200;

/// What an axis's values are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// Durations (values in nanoseconds).
    Duration,
    /// Plain integers.
    Integer,
    /// Words (`retry=fixed,uniform,exponential-full`, `timeout=none,1s`): a list with a value
    /// that is no number. Each value is a series of its own (a line per value in the plots,
    /// beside the algorithms), not a plotted axis; `numbers` are the values' positions.
    Word,
}

/// One axis of a sweep: a knob and its values.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Axis {
    /// The knob, as `--set` names it (`pause_max`, `ttl`, `c2.clock_drift_ppm`, …).
    pub key: String,
    /// The values as `--set` takes them (`"100ms"`, `"5000"`).
    pub values: Vec<String>,
    /// The same values as numbers: nanoseconds for durations, the integer otherwise.
    pub numbers: Vec<f64>,
    /// What the values are.
    pub unit: Unit,
    /// `true` when the points are log-spaced (plots use a log axis).
    pub log: bool,
}

/// Reads one value of an axis: an integer, or a duration with a unit (as nanoseconds).
///
/// # Errors
/// Neither, naming `key`.
pub fn parse_value(key: &str, text: &str) -> Result<(f64, Unit), String> {
    number(key, text)
}

fn number(key: &str, text: &str) -> Result<(f64, Unit), String> {
    let t = text.trim();
    if let Ok(n) = t.parse::<i64>() {
        return Ok((n as f64, Unit::Integer));
    }
    match parse_duration(t) {
        Ok(d) => Ok((d as f64, Unit::Duration)),
        Err(e) => Err(format!(
            "`--vary {key}`: `{t}` is neither an integer nor a duration with a unit ({e})"
        )),
    }
}

/// The text `--set` takes for a value of `unit` (durations rounded to the microsecond, shown
/// in the largest unit that keeps them exact).
pub fn format_value(n: f64, unit: Unit) -> String {
    match unit {
        Unit::Integer | Unit::Word => format!("{}", n.round() as i64),
        Unit::Duration => {
            let us = (n / 1e3).round() as i64;
            if us % 1_000_000 == 0 {
                format!("{}s", us / 1_000_000)
            } else if us % 1_000 == 0 {
                format!("{}ms", us / 1_000)
            } else {
                format!("{us}us")
            }
        }
    }
}

/// A value of an axis as the table shows it (`1.500s`, `5000`).
pub fn show_value(n: f64, unit: Unit) -> String {
    match unit {
        Unit::Integer | Unit::Word => format!("{}", n.round() as i64),
        Unit::Duration => fmt_nanos(n.round() as i128),
    }
}

impl Axis {
    /// Parses `KEY=RANGE`: `LO..HI:N` (N points, log-spaced when LO > 0, evenly spaced
    /// otherwise), `LO..HI+STEP` (evenly spaced by STEP), `LO..HI` (every integer), or a list
    /// `A,B,C`. Durations need a unit (`100ms..3s:10`); integers have none (`0..50000:11`).
    ///
    /// # Errors
    /// No `=`, a malformed range, values of mixed units, HI below LO, fewer than 2 or more than
    /// [`MAX_POINTS`] points, each naming the axis.
    pub fn parse(text: &str) -> Result<Axis, String> {
        let (key, range) = text.split_once('=').ok_or_else(|| {
            format!("`--vary {text}`: write KEY=RANGE, e.g. pause_max=100ms..3s:10")
        })?;
        let (key, range) = (key.trim().to_string(), range.trim());
        if key.is_empty() {
            return Err(format!("`--vary {text}`: the knob's name is missing"));
        }
        let mixed = || {
            format!(
                "`--vary {key}`: the values mix durations and integers: give every value a unit (100ms, 2s) or none"
            )
        };
        // A bare `0` is zero in any unit: it takes the unit of the other values (`0..1s:5`).
        let unit_of = |vals: &[(f64, Unit)]| -> Result<Unit, String> {
            let durations = vals.iter().any(|v| v.1 == Unit::Duration);
            let integers = vals.iter().any(|v| v.1 == Unit::Integer && v.0 != 0.0);
            match (durations, integers) {
                (true, true) => Err(mixed()),
                (true, false) => Ok(Unit::Duration),
                (false, _) => Ok(Unit::Integer),
            }
        };
        let too_many = |n: usize| {
            format!(
                "`--vary {key}`: {} (an axis needs at least 2 points and at most {MAX_POINTS})",
                locksim_core::text::plural(n as u64, "point")
            )
        };
        let (numbers, unit, log) = if let Some((lo, rest)) = range.split_once("..") {
            let (hi, how) = match rest.find([':', '+']) {
                Some(i) => (&rest[..i], Some((&rest[i..i + 1], &rest[i + 1..]))),
                None => (rest, None),
            };
            let (lo, hi) = (number(&key, lo)?, number(&key, hi)?);
            let u1 = unit_of(&[lo, hi])?;
            let (lo, hi): (f64, f64) = (lo.0, hi.0);
            if hi <= lo {
                return Err(format!(
                    "`--vary {key}`: the range's end is not above its start"
                ));
            }
            match how {
                Some((":", n)) => {
                    let n: usize = n.trim().parse().map_err(|_| {
                        format!("`--vary {key}`: `:{n}` is not a number of points")
                    })?;
                    if !(2..=MAX_POINTS).contains(&n) {
                        return Err(too_many(n));
                    }
                    let log = lo > 0.0;
                    let v: Vec<f64> = (0..n)
                        .map(|i| {
                            let f = i as f64 / (n - 1) as f64;
                            if log {
                                // Three significant digits: 234ms, not 234.035ms.
                                let v = lo * (hi / lo).powf(f);
                                let scale = 10f64.powf(v.log10().floor() - 2.0);
                                (v / scale).round() * scale
                            } else {
                                lo + (hi - lo) * f
                            }
                        })
                        .collect();
                    (v, u1, log)
                }
                Some((_, step)) => {
                    let step_at = number(&key, step)?;
                    if step_at.1 != u1 && step_at.0 != 0.0 {
                        return Err(mixed());
                    }
                    let step = step_at.0;
                    if step <= 0.0 {
                        return Err(format!("`--vary {key}`: the step must be above zero"));
                    }
                    let n = ((hi - lo) / step).floor() as usize + 1;
                    if n > MAX_POINTS {
                        return Err(too_many(n));
                    }
                    ((0..n).map(|i| lo + step * i as f64).collect(), u1, false)
                }
                None if u1 == Unit::Integer => {
                    let n = (hi - lo) as usize + 1;
                    if n > MAX_POINTS {
                        return Err(too_many(n));
                    }
                    ((0..n).map(|i| lo + i as f64).collect(), u1, false)
                }
                None => {
                    return Err(format!(
                        "`--vary {key}={range}`: say how many points (`{range}:10`) or the step (`{lo_}..{hi_}+100ms`)",
                        lo_ = format_value(lo, u1),
                        hi_ = format_value(hi, u1)
                    ))
                }
            }
        } else {
            if let Some(words) = Axis::words(&key, range)? {
                return Ok(words);
            }
            let parts = range
                .split(',')
                .map(|part| number(&key, part))
                .collect::<Result<Vec<_>, _>>()?;
            let unit = unit_of(&parts)?;
            if parts.len() < 2 || parts.len() > MAX_POINTS {
                return Err(too_many(parts.len()));
            }
            (parts.into_iter().map(|p| p.0).collect(), unit, false)
        };
        let values: Vec<String> = numbers.iter().map(|&n| format_value(n, unit)).collect();
        // Rounding may merge neighbours (`1us..2us:10`): refuse rather than run a point twice.
        if values.windows(2).any(|w| w[0] == w[1]) {
            return Err(format!(
                "`--vary {key}`: points closer than the knob's resolution (a microsecond for durations, 1 for integers)"
            ));
        }
        let numbers = values
            .iter()
            .map(|v| number(&key, v).map(|x| x.0))
            .collect::<Result<_, _>>()?;
        Ok(Axis {
            key,
            values,
            numbers,
            unit,
            log,
        })
    }
}

impl Axis {
    /// A list `A,B,C` with a value that is neither an integer nor a duration: a word axis
    /// ([`Unit::Word`]), or `None` when every value is a number.
    ///
    /// # Errors
    /// An empty value, a value given twice, fewer than 2 or more than [`MAX_POINTS`] values.
    fn words(key: &str, list: &str) -> Result<Option<Axis>, String> {
        let values: Vec<String> = list.split(',').map(|v| v.trim().to_string()).collect();
        if values.iter().all(|v| number(key, v).is_ok()) {
            return Ok(None);
        }
        if values.iter().any(String::is_empty) {
            return Err(format!("`--vary {key}={list}`: a value is empty"));
        }
        if values.len() < 2 || values.len() > MAX_POINTS {
            return Err(format!(
                "`--vary {key}`: {} (an axis needs at least 2 points and at most {MAX_POINTS})",
                locksim_core::text::plural(values.len() as u64, "value")
            ));
        }
        if let Some(v) = values
            .iter()
            .enumerate()
            .find_map(|(i, v)| values[..i].contains(v).then_some(v))
        {
            return Err(format!("`--vary {key}`: `{v}` is given twice"));
        }
        Ok(Some(Axis::of_words(key, values)))
    }

    /// A word axis of `values` as given (its `numbers` are their positions).
    fn of_words(key: &str, values: Vec<String>) -> Axis {
        Axis {
            key: key.to_string(),
            numbers: (0..values.len()).map(|i| i as f64).collect(),
            values,
            unit: Unit::Word,
            log: false,
        }
    }

    /// `true` for a word axis: its values are series, not points along a plotted axis.
    pub fn is_words(&self) -> bool {
        self.unit == Unit::Word
    }

    /// The axis that `values` came from, as a sweep's records carry them (each point's
    /// `key=value`, in grid order; `locksim merge` has no other account of the axis): the unit
    /// from the values, `log` when there are three or more positive values evenly spaced on a
    /// log scale (to the three significant digits `LO..HI:N` rounds to) and not on a linear one.
    /// Two values are taken as linear.
    ///
    /// # Errors
    /// A value that is neither an integer nor a duration, or values of mixed units.
    pub fn from_values(key: &str, values: Vec<String>) -> Result<Axis, String> {
        if values.iter().any(|v| number(key, v).is_err()) {
            // A word axis (a partial merge may have seen only one of its values).
            return Ok(Axis::of_words(key, values));
        }
        let parsed = values
            .iter()
            .map(|v| number(key, v))
            .collect::<Result<Vec<_>, _>>()?;
        let unit = if parsed.iter().any(|p| p.1 == Unit::Duration) {
            if parsed.iter().any(|p| p.1 == Unit::Integer && p.0 != 0.0) {
                return Err(format!("`{key}`: the values mix durations and integers"));
            }
            Unit::Duration
        } else {
            Unit::Integer
        };
        let numbers: Vec<f64> = parsed.iter().map(|p| p.0).collect();
        // Steps equal to within `slack` plus 1% of the mean step.
        let even = |xs: &[f64], slack: f64| {
            let d: Vec<f64> = xs.windows(2).map(|w| w[1] - w[0]).collect();
            let mean = d.iter().sum::<f64>() / d.len() as f64;
            mean != 0.0
                && d.iter()
                    .all(|x| (x - mean).abs() <= slack + (mean * 0.01).abs())
        };
        // Three significant digits move a value by up to 0.5%, its logarithm by up to 0.005.
        let log = numbers.len() >= 3
            && numbers.iter().all(|&n| n > 0.0)
            && !even(&numbers, 0.0)
            && even(&numbers.iter().map(|n| n.ln()).collect::<Vec<_>>(), 0.011);
        Ok(Axis {
            key: key.to_string(),
            values,
            numbers,
            unit,
            log,
        })
    }
}

/// What a sweep runs.
#[derive(Debug, Clone)]
pub struct SweepDef {
    /// Algorithms (one line each in the plots).
    pub algorithms: Vec<String>,
    /// Settings every point gets (`key=value`), before the axes' values.
    pub settings: Vec<String>,
    /// One or two axes.
    pub axes: Vec<Axis>,
    /// Fault kinds drawn from.
    pub kinds: Vec<FaultKind>,
    /// First seed.
    pub first_seed: u64,
    /// Seeds per point, algorithm and fault kind.
    pub seeds: u64,
}

impl SweepDef {
    /// The grid's points, first axis varying slowest: each a list of (key, value).
    pub fn points(&self) -> Vec<Vec<(String, String)>> {
        let mut points: Vec<Vec<(String, String)>> = vec![Vec::new()];
        for a in &self.axes {
            points = points
                .into_iter()
                .flat_map(|p| {
                    a.values.iter().map(move |v| {
                        let mut q = p.clone();
                        q.push((a.key.clone(), v.clone()));
                        q
                    })
                })
                .collect();
        }
        points
    }

    /// The axes the plots draw along (numbers and durations), in order.
    pub fn plotted_axes(&self) -> impl Iterator<Item = &Axis> {
        self.axes.iter().filter(|a| !a.is_words())
    }

    /// The list of words whose values are series of their own, if any.
    pub fn series_axis(&self) -> Option<&Axis> {
        self.axes.iter().find(|a| a.is_words())
    }

    /// A point's label, as records carry it: `pause_max=100ms ttl=1s`.
    pub fn label(point: &[(String, String)]) -> String {
        point
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The campaign that runs the sweep (setups point-major, then algorithm) and the label of
    /// each point.
    ///
    /// # Errors
    /// No or more than two axes, an axis named twice or also set, an unknown algorithm or knob, or a value
    /// a knob refuses (naming the point).
    pub fn spec(&self, jobs: usize) -> Result<(CampaignSpec, Vec<String>), String> {
        let plotted = self.plotted_axes().count();
        if plotted == 0 || plotted > 2 {
            return Err(format!(
                "a sweep has one or two --vary axes of numbers or durations ({plotted} given){}",
                if self.series_axis().is_some() && plotted == 0 {
                    "; a list of words is a set of series beside them, not an axis"
                } else {
                    ""
                }
            ));
        }
        if self.axes.iter().filter(|a| a.is_words()).count() > 1 {
            return Err(
                "a sweep takes one --vary list of words (its values become series); give the others as separate sweeps"
                    .into(),
            );
        }
        for (i, a) in self.axes.iter().enumerate() {
            if self.axes[..i].iter().any(|b| b.key == a.key) {
                return Err(format!("`--vary {}` is given twice", a.key));
            }
        }
        for (i, a) in self.algorithms.iter().enumerate() {
            if self.algorithms[..i].contains(a) {
                return Err(format!(
                    "algorithm `{a}` is named twice: it would run (and be counted) twice; name it once"
                ));
            }
        }
        for a in &self.axes {
            let set = self
                .settings
                .iter()
                .find(|s| s.split_once('=').is_some_and(|(k, _)| k.trim() == a.key));
            if let Some(s) = set {
                return Err(format!(
                    "`{}` is both varied (`--vary {}=…`, or the file's `vary`) and set (`{}`): each point's value would replace the setting; give it once",
                    a.key, a.key, s.trim()
                ));
            }
        }
        let mut setups = Vec::new();
        let mut labels = Vec::new();
        for p in self.points() {
            let mut settings = self.settings.clone();
            settings.extend(p.iter().map(|(k, v)| format!("{k}={v}")));
            let label = SweepDef::label(&p);
            setups.extend(
                setups_for(&self.algorithms, &settings).map_err(|e| format!("at {label}: {e}"))?,
            );
            labels.push(label);
        }
        Ok((
            CampaignSpec {
                setups,
                kinds: self.kinds.clone(),
                first_seed: self.first_seed,
                seeds: self.seeds,
                jobs,
            },
            labels,
        ))
    }
}

/// The 95 % Wilson score interval of `k` successes in `n` trials, `(low, high)`; `(0, 1)`
/// when `n` is 0 (nothing is known). Wilson (1927), "Probable inference, the law of
/// succession, and statistical inference", JASA 22: it stays inside [0, 1] and is not empty
/// at `k = 0`, unlike the normal approximation.
pub fn wilson(k: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = 1.959_963_984_540_054_f64;
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = z / denom * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    // Exactly 0 (or 1) at the ends, not a rounding error away from it.
    let low = if k == 0.0 {
        0.0
    } else {
        (centre - half).max(0.0)
    };
    let high = if k == n {
        1.0
    } else {
        (centre + half).min(1.0)
    };
    (low, high)
}

/// One property's result at one point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rate {
    /// The property.
    pub property: Property,
    /// Seeds that violate it.
    pub violations: u64,
    /// Seeds on which it was judged (run, decided): the rate's denominator.
    pub judged: u64,
    /// `violations / judged` (0 when nothing was judged).
    pub rate: f64,
    /// The 95 % Wilson interval's low end.
    pub low: f64,
    /// Its high end.
    pub high: f64,
}

/// One point × algorithm × fault kind of a finished sweep.
#[derive(Debug, Clone)]
pub struct PointResult {
    /// Index of the point (first axis slowest).
    pub point: usize,
    /// The point's knob values, in axis order.
    pub values: Vec<(String, String)>,
    /// The cell: seeds, violations, grants, metrics.
    pub cell: CellSummary,
    /// Per checked property, its rate and interval.
    pub rates: Vec<Rate>,
}

impl PointResult {
    /// The rate of `p`, if it was checked.
    pub fn rate(&self, p: Property) -> Option<&Rate> {
        self.rates.iter().find(|r| r.property == p)
    }

    /// `true` when the point proves nothing about its faults: no client was granted the lock,
    /// or its plans held faults and none took effect in any seed (it ran fault-free), or a
    /// `KIND+plan` point's drawn kind never acted. Its zero violations are `n/a`, not a rate.
    pub fn proves_nothing(&self) -> bool {
        let c = &self.cell;
        c.grants == 0 || c.no_fault_took_effect() || c.kind_untested()
    }

    /// What makes this point prove nothing, or less than it seems: no grants, faults that
    /// never took effect, undecided checks, seeds that failed to run, seeds missing. Empty
    /// when it is a clean result.
    pub fn warnings(&self, expected_seeds: u64) -> Vec<String> {
        let c = &self.cell;
        let mut w = Vec::new();
        if c.grants == 0 {
            w.push("NO GRANTS: no client was ever granted the lock (proves nothing)".into());
        }
        if c.no_fault_took_effect() {
            w.push(
                "N/A: no fault took effect in any seed (it ran fault-free: proves nothing about \
                 the faults)"
                    .into(),
            );
        } else if c.kind_untested() {
            w.push(format!(
                "N/A: no {} fault took effect in any seed (only the plan did)",
                c.faults.name()
            ));
        }
        if c.undecided_seeds > 0 {
            let which: Vec<String> = c.undecided.keys().map(|p| p.to_string()).collect();
            w.push(format!(
                "UNDECIDED: {} on {}",
                which.join(", "),
                locksim_core::text::plural(c.undecided_seeds, "seed")
            ));
        }
        if c.errors > 0 {
            w.push(format!(
                "{} FAILED TO RUN",
                locksim_core::text::plural(c.errors, "seed")
            ));
        }
        if c.seeds < expected_seeds {
            w.push(format!(
                "only {} of {}",
                c.seeds,
                locksim_core::text::plural(expected_seeds, "seed")
            ));
        }
        w
    }
}

/// The sweep's results from its cells (by cell index, as [`Summary::cells`] gives them, any
/// subset of cells for a partial merge); `labels` are the points' labels.
///
/// [`Summary::cells`]: crate::Summary::cells
pub fn results(
    cells: &[(usize, CellSummary)],
    labels: &[String],
    algorithms: usize,
    kinds: usize,
) -> Vec<PointResult> {
    let per_point = (algorithms * kinds).max(1);
    cells
        .iter()
        .map(|(i, c)| {
            let point = i / per_point;
            let values = labels
                .get(point)
                .map(|l| {
                    l.split(' ')
                        .filter_map(|kv| kv.split_once('='))
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect()
                })
                .unwrap_or_default();
            let rates = c
                .checked
                .iter()
                .map(|&p| {
                    let judged = c.seeds.saturating_sub(c.errors + c.undecided_on(p));
                    let k = c.violated(p);
                    let (low, high) = wilson(k, judged);
                    Rate {
                        property: p,
                        violations: k,
                        judged,
                        rate: if judged == 0 {
                            0.0
                        } else {
                            k as f64 / judged as f64
                        },
                        low,
                        high,
                    }
                })
                .collect();
            PointResult {
                point,
                values,
                cell: c.clone(),
                rates,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_parse_into_the_points_they_say() {
        let a = Axis::parse("pause_max=100ms..3s:10").unwrap();
        assert_eq!(a.values.len(), 10);
        assert_eq!(a.values[0], "100ms");
        assert_eq!(a.values[9], "3s");
        assert!(a.log);
        assert!(a
            .numbers
            .windows(2)
            .all(|w| w[1] / w[0] > 1.4 && w[1] / w[0] < 1.5));
        let d = Axis::parse("drift_ppm=0..50000:11").unwrap();
        assert!(!d.log);
        assert_eq!(d.values[1], "5000");
        assert_eq!(d.unit, Unit::Integer);
        assert_eq!(Axis::parse("clients=2..30").unwrap().values.len(), 29);
        assert_eq!(
            Axis::parse("ttl=500ms..2s+500ms").unwrap().values,
            ["500ms", "1s", "1500ms", "2s"]
        );
        assert_eq!(
            Axis::parse("ttl=1s,2s,5s").unwrap().numbers,
            [1e9, 2e9, 5e9]
        );
    }

    /// A list with a word is a set of series: its values as given, in order, none plotted.
    #[test]
    fn a_list_of_words_is_a_set_of_series() {
        let a = Axis::parse("retry=fixed, uniform,exponential-full").unwrap();
        assert!(a.is_words());
        assert_eq!(a.values, ["fixed", "uniform", "exponential-full"]);
        // A number beside a word is a word too (`timeout=none,1s`).
        assert!(Axis::parse("timeout=none,1s").unwrap().is_words());
        assert!(!Axis::parse("timeout=2s,1s").unwrap().is_words());
        assert_eq!(
            Axis::from_values("retry", vec!["fixed".into()])
                .unwrap()
                .unit,
            Unit::Word
        );
        for (text, says) in [
            ("retry=fixed,fixed", "`fixed` is given twice"),
            ("retry=fixed,,uniform", "a value is empty"),
            ("retry=fixed..uniform", "neither an integer nor a duration"),
        ] {
            let e = Axis::parse(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
        let def = |vary: &[&str]| SweepDef {
            algorithms: vec!["central".into()],
            settings: vec![],
            axes: vary.iter().map(|v| Axis::parse(v).unwrap()).collect(),
            kinds: vec![FaultKind::None],
            first_seed: 0,
            seeds: 1,
        };
        // Beside one axis of numbers: every pair is a point, and the label names the word.
        let d = def(&["clients=2,4", "retry=fixed,uniform"]);
        let (spec, labels) = d.spec(1).unwrap();
        assert_eq!(spec.setups.len(), 4);
        assert_eq!(labels[1], "clients=2 retry=uniform");
        assert_eq!(d.plotted_axes().count(), 1);
        assert_eq!(d.series_axis().unwrap().key, "retry");
        // Alone, or two of them: refused, saying why.
        let e = def(&["retry=fixed,uniform"]).spec(1).err().unwrap();
        assert!(e.contains("a list of words is a set of series"), "{e}");
        let e = def(&["clients=2,4", "retry=fixed,uniform", "timeout=none,1s"])
            .spec(1)
            .err()
            .unwrap();
        assert!(e.contains("one --vary list of words"), "{e}");
        // A word the knob refuses names the point.
        let e = def(&["clients=2,4", "retry=fixed,sometimes"])
            .spec(1)
            .err()
            .unwrap();
        assert!(e.contains("retry=sometimes"), "{e}");
    }

    /// `merge` rebuilds a sweep's axes from its records' point labels: the same axes.
    #[test]
    fn axes_rebuilt_from_their_values_are_the_axes() {
        for text in [
            "pause_max=100ms..3s:10",
            "pause_max=100ms..3s:200",
            "drift_ppm=0..50000:11",
            "drift_ppm=10..50000:7",
            "ttl=500ms..2s+500ms",
            "ttl=1s,2s,5s",
            "clients=2..8",
            "pause_max=0..1s:5",
            "retry=fixed,uniform,exponential-full",
        ] {
            let a = Axis::parse(text).unwrap();
            assert_eq!(
                Axis::from_values(&a.key, a.values.clone()).unwrap(),
                a,
                "{text}"
            );
        }
        assert!(Axis::from_values("ttl", vec!["1s".into(), "5".into()]).is_err());
    }

    #[test]
    fn bad_axes_are_refused_by_name() {
        for (text, says) in [
            ("pause_max", "KEY=RANGE"),
            ("pause_max=3s..1s:4", "not above"),
            ("pause_max=1s..3s", "how many points"),
            ("pause_max=1s..3:4", "mix"),
            (
                "pause_max=1s..3s:1",
                "1 point (an axis needs at least 2 points",
            ),
            (
                "pause_max=0..1s:0",
                "0 points (an axis needs at least 2 points",
            ),
            ("clients=1..100000", "at most 200"),
            ("pause_max=5..1s", "give every value a unit"),
            ("ttl=1us..2us:10", "resolution"),
            ("ttl=soon..3s:2", "neither"),
        ] {
            let e = Axis::parse(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn wilson_intervals_match_published_values() {
        // Newcombe (1998), Statistics in Medicine 17, table I: 0/10 → 0–0.2775, 1/29 →
        // 0.0061–0.1718, 81/263 → 0.2553–0.3662.
        let close = |a: f64, b: f64| (a - b).abs() < 5e-4;
        let (l, h) = wilson(0, 10);
        assert!(close(l, 0.0) && close(h, 0.2775), "{l} {h}");
        let (l, h) = wilson(1, 29);
        assert!(close(l, 0.0061) && close(h, 0.1718), "{l} {h}");
        let (l, h) = wilson(81, 263);
        assert!(close(l, 0.2553) && close(h, 0.3662), "{l} {h}");
        assert_eq!(wilson(0, 0), (0.0, 1.0));
        assert_eq!(wilson(0, 12).0, 0.0);
        assert_eq!(wilson(12, 12).1, 1.0);
    }

    fn record(cell: usize, seed: u64, grants: u64, undecided: Vec<Property>) -> crate::SeedRecord {
        crate::SeedRecord {
            campaign: "sweep".into(),
            point: String::new(),
            cell,
            cells: 2,
            algorithm: "redlock".into(),
            faults: FaultKind::Pause,
            plan: 0,
            first_seed: 0,
            seeds: 3,
            seed,
            checked: vec![Property::S1, Property::S2],
            violated: if seed == 1 {
                vec![Property::S1]
            } else {
                vec![]
            },
            undecided,
            error: None,
            grants,
            faults_applied: Some(1),
            kind_applied: None,
            never_fired: 0,
            settings: String::new(),
            shard: "0/1".into(),
            scenario: None,
            metrics: None,
        }
    }

    #[test]
    fn points_without_grants_or_with_undecided_checks_say_so() {
        let mut s = crate::Summary::default();
        for seed in 0..3 {
            s.add(&record(0, seed, 0, vec![])).unwrap();
            s.add(&record(
                1,
                seed,
                5,
                if seed == 2 {
                    vec![Property::S2]
                } else {
                    vec![]
                },
            ))
            .unwrap();
        }
        let labels = vec!["pause_max=1s".to_string(), "pause_max=2s".to_string()];
        let r = results(&s.indexed_cells(), &labels, 1, 1);
        assert_eq!(r.len(), 2);
        assert_eq!(r[1].values, [("pause_max".to_string(), "2s".to_string())]);
        assert!(r[0].warnings(3)[0].starts_with("NO GRANTS"));
        assert!(r[1].warnings(3)[0].starts_with("UNDECIDED: S2"));
        assert!(r[1].warnings(4).iter().any(|w| w.contains("only 3 of 4")));
        // The undecided seed is left out of S2's denominator, not counted as clean.
        let s2 = r[1].rate(Property::S2).unwrap();
        assert_eq!((s2.violations, s2.judged), (0, 2));
        let s1 = r[1].rate(Property::S1).unwrap();
        assert_eq!((s1.violations, s1.judged), (1, 3));
        assert!((s1.rate - 1.0 / 3.0).abs() < 1e-12);
        assert!(r[0].proves_nothing() && !r[1].proves_nothing());
    }

    /// Issue #24: a sweep point whose faults never took effect (e.g. `leader-change` against
    /// an algorithm without a leader) showed `- (0–x%)` like a clean point. It says N/A and
    /// proves nothing.
    #[test]
    fn a_point_whose_faults_never_took_effect_is_na() {
        let mut s = crate::Summary::default();
        for seed in 0..3 {
            let mut r = record(0, seed, 5, vec![]);
            r.faults_applied = Some(0);
            r.violated.clear();
            s.add(&r).unwrap();
            s.add(&record(1, seed, 5, vec![])).unwrap();
        }
        let labels = vec!["pause_max=1s".to_string(), "pause_max=2s".to_string()];
        let r = results(&s.indexed_cells(), &labels, 1, 1);
        assert!(r[0].proves_nothing());
        assert!(
            r[0].warnings(3)
                .iter()
                .any(|w| w.starts_with("N/A: no fault took effect")),
            "{:?}",
            r[0].warnings(3)
        );
        assert!(!r[1].proves_nothing());
        assert!(r[1].warnings(3).is_empty(), "{:?}", r[1].warnings(3));
    }

    #[test]
    fn a_sweep_is_a_campaign_of_points_times_algorithms() {
        let def = SweepDef {
            algorithms: vec!["redlock".into(), "central-fencing".into()],
            settings: vec!["ttl=1s".into()],
            axes: vec![
                Axis::parse("pause_max=100ms..1s:3").unwrap(),
                Axis::parse("clients=2..3").unwrap(),
            ],
            kinds: vec![FaultKind::Pause],
            first_seed: 0,
            seeds: 5,
        };
        let (spec, labels) = def.spec(1).unwrap();
        assert_eq!(spec.setups.len(), 3 * 2 * 2);
        assert_eq!(labels[1], "pause_max=100ms clients=3");
        assert_eq!(spec.setups[2].algorithm, "redlock");
        assert_eq!(spec.setups[2].cluster.clients, 3);
        assert_eq!(
            spec.setups[11].shape.pause_max,
            Some(locksim_core::time::SEC)
        );
        let bad = SweepDef {
            axes: vec![Axis::parse("nonsense=1..3").unwrap()],
            ..def
        };
        match bad.spec(1) {
            Err(e) => assert!(e.contains("nonsense"), "{e}"),
            Ok(_) => panic!("an unknown knob was accepted"),
        }
    }
}
