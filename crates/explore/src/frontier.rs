//! Frontier files (`sims/frontier/*.toml`): a sweep with expectations about where a property
//! starts being violated, which CI checks on a small grid.
//!
//! ```toml
//! name = "Redlock: a GC pause longer than the validity left at the write"
//! why = """…why the boundary must sit where it does…"""
//! algorithms = ["redlock", "central-fencing"]
//! faults = ["pause"]
//! seeds = 60                        # per point, algorithm and fault kind
//! first_seed = 0                    # optional
//! vary = ["pause_max=100ms..3s:6"]  # one or two axes, as `--vary`
//! [settings]                        # optional, as `--set`
//! ttl = "1s"
//! [[expect]]
//! algorithm = "redlock"
//! property = "S1"
//! zero_below = "300ms"    # rate exactly 0 at every point whose axis value is below this
//! nonzero_from = "1s"     # rate above 0 at every point at or above this
//! [[expect]]
//! algorithm = "central-fencing"
//! property = "S2"
//! zero = true             # rate 0 at every point
//! ```
//!
//! `axis = "KEY"` names the axis an expectation reads (needed with two axes), `faults = "KIND"`
//! the fault kind (needed with several). A `vary` list of words (`"retry=fixed,uniform"`) is a
//! set of series beside the axes, and an expectation holds for each of its values. Runs are deterministic, so a result moves only when
//! the algorithms, the checkers or the generator change: a moved boundary fails the file. A
//! point an expectation reads that has no grants, or on which the property was left
//! undecided or a seed failed to run, fails it too (a zero there proves nothing).

use std::path::{Path, PathBuf};

use locksim_core::fault::parse_kinds;
use locksim_core::{FaultKind, Property};
use serde::Deserialize;

use crate::key_lines::{KeyLines, SpannedSettings};
use crate::sweep::{format_value, show_value, Axis, PointResult, SweepDef, Unit};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    algorithm: String,
    property: String,
    #[serde(default)]
    axis: Option<String>,
    #[serde(default)]
    faults: Option<String>,
    #[serde(default)]
    zero: bool,
    #[serde(default)]
    zero_below: Option<toml::Value>,
    #[serde(default)]
    nonzero_from: Option<toml::Value>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    name: Option<String>,
    why: String,
    algorithms: Vec<String>,
    faults: Vec<String>,
    seeds: u64,
    #[serde(default)]
    first_seed: u64,
    vary: Vec<String>,
    #[serde(default)]
    settings: SpannedSettings,
    expect: Vec<RawExpect>,
}

/// One stated boundary.
#[derive(Debug, Clone, PartialEq)]
pub struct Boundary {
    /// The algorithm it is about.
    pub algorithm: String,
    /// The property.
    pub property: Property,
    /// The axis it reads (index into the sweep's axes).
    pub axis: usize,
    /// The fault kind it reads.
    pub faults: FaultKind,
    /// Rate 0 at every point whose axis value is below this (`f64::INFINITY`: everywhere).
    pub zero_below: Option<f64>,
    /// Rate above 0 at every point whose axis value is at least this.
    pub nonzero_from: Option<f64>,
}

/// A parsed frontier file.
#[derive(Debug, Clone)]
pub struct FrontierFile {
    /// Where it came from.
    pub path: PathBuf,
    /// Its name (the file stem when it has none).
    pub name: String,
    /// Why the boundaries sit where they do.
    pub why: String,
    /// The sweep it runs.
    pub sweep: SweepDef,
    /// What must be seen.
    pub expect: Vec<Boundary>,
}

fn value_text(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Boolean(b) => Some(b.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        _ => None,
    }
}

impl FrontierFile {
    /// Parses the text of a frontier file.
    ///
    /// # Errors
    /// One line starting with the file name that names the line or the field.
    pub fn parse(path: &Path, text: &str) -> Result<FrontierFile, String> {
        let at = |what: String| format!("{}: {what}", path.display());
        let raw: Raw = toml::from_str(text).map_err(|e| {
            let pos = crate::key_lines::toml_error_at(text, &e);
            let hint = if crate::campaign_file::looks_like(text)
                == Some(crate::campaign_file::FileKind::Campaign)
            {
                format!(
                    "; this is a campaign file (it has `algorithm`, `[[fault]]` or `[client.cN]`, and no `vary`): run `locksim campaign {}` (or `locksim run {} --seed N`)",
                    path.display(),
                    path.display()
                )
            } else {
                String::new()
            };
            at(format!(
                "{}{}{hint}",
                pos,
                e.message().trim_end()
            ))
        })?;
        if raw.why.trim().is_empty() {
            return Err(at(
                "`why`: say why the boundary must sit where the expectations put it".into(),
            ));
        }
        if raw.seeds == 0 || raw.seeds > 1_000_000 {
            return Err(at("`seeds`: must be from 1 to 1000000".into()));
        }
        if raw.algorithms.is_empty() {
            return Err(at("`algorithms`: name at least one".into()));
        }
        let kinds = parse_kinds(&raw.faults.join(",")).map_err(|e| at(format!("`faults`: {e}")))?;
        let axes = raw
            .vary
            .iter()
            .map(|v| Axis::parse(v))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| at(format!("`vary`: {e}")))?;
        let key_lines = KeyLines::new(text, &raw.settings, &Default::default());
        let settings = raw
            .settings
            .iter()
            .map(|(k, v)| {
                value_text(v.get_ref())
                    .map(|v| format!("{k}={v}"))
                    .ok_or_else(|| {
                        at(key_lines.settings_error(&format!(
                            "`{k}`: not a string, number or boolean (in [settings])"
                        )))
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let sweep = SweepDef {
            algorithms: raw.algorithms.clone(),
            settings,
            axes,
            kinds,
            first_seed: raw.first_seed,
            seeds: raw.seeds,
        };
        // Build it now, so that a bad knob is reported with the file's name.
        sweep
            .spec(1)
            .map_err(|e| at(key_lines.settings_error(&e)))?;
        if raw.expect.is_empty() {
            return Err(at("no [[expect]]: a frontier file states a boundary".into()));
        }
        let mut expect = Vec::new();
        for (i, e) in raw.expect.iter().enumerate() {
            let at = |what: String| at(format!("expect #{}: {what}", i + 1));
            if !sweep.algorithms.contains(&e.algorithm) {
                return Err(at(format!(
                    "`algorithm`: {} is not one of the sweep's ({})",
                    e.algorithm,
                    sweep.algorithms.join(", ")
                )));
            }
            let property: Property = e
                .property
                .parse()
                .map_err(|x| at(format!("`property`: {x}")))?;
            let plotted: Vec<usize> = (0..sweep.axes.len())
                .filter(|&i| !sweep.axes[i].is_words())
                .collect();
            let axis = match &e.axis {
                None if plotted.len() == 1 => plotted[0],
                None => return Err(at("`axis`: the sweep has two axes; name one".into())),
                Some(k) => {
                    let i =
                        sweep.axes.iter().position(|a| &a.key == k).ok_or_else(|| {
                            at(format!("`axis`: {k} is not an axis of the sweep"))
                        })?;
                    if sweep.axes[i].is_words() {
                        return Err(at(format!(
                            "`axis`: {k} is a list of words (series, each judged by the expectation), not an axis with a boundary"
                        )));
                    }
                    i
                }
            };
            let faults = match &e.faults {
                None if sweep.kinds.len() == 1 => sweep.kinds[0],
                None => {
                    return Err(at(
                        "`faults`: the sweep has several fault kinds; name one".into()
                    ))
                }
                Some(k) => {
                    let k = parse_kinds(k).map_err(|x| at(format!("`faults`: {x}")))?;
                    match k.as_slice() {
                        [k] if sweep.kinds.contains(k) => *k,
                        _ => return Err(at("`faults`: not one of the sweep's kinds".into())),
                    }
                }
            };
            let unit = sweep.axes[axis].unit;
            let bound = |v: &Option<toml::Value>, field: &str| -> Result<Option<f64>, String> {
                let Some(v) = v else { return Ok(None) };
                let text = value_text(v)
                    .ok_or_else(|| at(format!("`{field}`: not a value of the axis")))?;
                match crate::sweep::parse_value(field, &text) {
                    Ok((n, u)) if u == unit => Ok(Some(n)),
                    _ => Err(at(format!(
                        "`{field}`: `{text}` is not a {} like the axis's values",
                        if unit == Unit::Duration {
                            "duration"
                        } else {
                            "integer"
                        }
                    ))),
                }
            };
            let (zb, nf) = (
                bound(&e.zero_below, "zero_below")?,
                bound(&e.nonzero_from, "nonzero_from")?,
            );
            if !e.zero && zb.is_none() && nf.is_none() {
                return Err(at(
                    "say what must be seen: `zero = true`, `zero_below` and/or `nonzero_from`"
                        .into(),
                ));
            }
            if e.zero && (zb.is_some() || nf.is_some()) {
                return Err(at(
                    "`zero = true` already says the rate is 0 everywhere".into()
                ));
            }
            if let (Some(a), Some(b)) = (zb, nf) {
                if b < a {
                    return Err(at("`nonzero_from` is below `zero_below`".into()));
                }
            }
            expect.push(Boundary {
                algorithm: e.algorithm.clone(),
                property,
                axis,
                faults,
                zero_below: if e.zero { Some(f64::INFINITY) } else { zb },
                nonzero_from: nf,
            });
        }
        Ok(FrontierFile {
            path: path.to_path_buf(),
            name: raw.name.unwrap_or_else(|| {
                path.file_stem()
                    .map_or_else(String::new, |s| s.to_string_lossy().into_owned())
            }),
            why: raw.why.trim().to_string(),
            sweep,
            expect,
        })
    }

    /// Reads and parses a frontier file.
    ///
    /// # Errors
    /// As [`FrontierFile::parse`], or when the file cannot be read.
    pub fn read(path: &Path) -> Result<FrontierFile, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        FrontierFile::parse(path, &text)
    }

    /// Every `*.toml` under each path (a file, or a folder read in name order).
    ///
    /// # Errors
    /// The first file that cannot be read or parsed; a path that does not exist.
    pub fn collect(paths: &[PathBuf]) -> Result<Vec<FrontierFile>, String> {
        crate::campaign_file::collect_toml(paths, FrontierFile::read)
    }

    /// What the results contradict: one line per broken expectation, naming the point and
    /// the rate. Empty when every boundary holds.
    pub fn judge(&self, results: &[PointResult]) -> Vec<String> {
        let mut problems = Vec::new();
        for b in &self.expect {
            let axis = &self.sweep.axes[b.axis];
            let mut seen = 0;
            for r in results
                .iter()
                .filter(|r| r.cell.algorithm == b.algorithm && r.cell.faults == b.faults)
            {
                let Some(text) = r.values.iter().find(|(k, _)| *k == axis.key).map(|v| &v.1) else {
                    continue;
                };
                let Some(i) = axis.values.iter().position(|v| v == text) else {
                    continue;
                };
                let x = axis.numbers[i];
                let zero = b.zero_below.is_some_and(|z| x < z);
                let nonzero = b.nonzero_from.is_some_and(|n| x >= n);
                if !zero && !nonzero {
                    continue;
                }
                seen += 1;
                let at = format!(
                    "{} {} at {}",
                    b.algorithm,
                    b.property,
                    crate::sweep::SweepDef::label(&r.values)
                );
                let mut bad: Vec<String> = r.warnings(self.sweep.seeds);
                if r.cell.undecided_on(b.property) == 0 {
                    bad.retain(|w| !w.starts_with("UNDECIDED"));
                }
                if !bad.is_empty() {
                    problems.push(format!("{at}: {}", bad.join("; ")));
                    continue;
                }
                let k = r.cell.violated(b.property);
                if zero && k > 0 {
                    problems.push(format!(
                        "{at}: {k} of {} seeds violate it, but the file expects none {} (the boundary moved down)",
                        r.cell.seeds,
                        match b.zero_below {
                            Some(z) if z.is_finite() =>
                                format!("below {}={}", axis.key, format_value(z, axis.unit)),
                            _ => "anywhere".into(),
                        }
                    ));
                }
                if nonzero && k == 0 {
                    problems.push(format!(
                        "{at}: no seed of {} violates it, but the file expects violations from {}={} on (the boundary moved up)",
                        r.cell.seeds,
                        axis.key,
                        show_value(b.nonzero_from.unwrap_or(0.0), axis.unit)
                    ));
                }
            }
            if seen == 0 {
                problems.push(format!(
                    "{} {}: no point of the grid falls where the expectation speaks",
                    b.algorithm, b.property
                ));
            }
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
why = "because"
algorithms = ["redlock", "central-fencing"]
faults = ["pause"]
seeds = 3
vary = ["pause_max=100ms..1s:3"]
[settings]
ttl = "1s"
[[expect]]
algorithm = "redlock"
property = "S1"
zero_below = "300ms"
nonzero_from = "1s"
[[expect]]
algorithm = "central-fencing"
property = "S2"
zero = true
"#;

    #[test]
    fn a_frontier_file_parses() {
        let f = FrontierFile::parse(Path::new("f.toml"), FILE).unwrap();
        assert_eq!(f.sweep.axes[0].values, ["100ms", "316ms", "1s"]);
        assert_eq!(f.expect[0].zero_below, Some(3e8));
        assert_eq!(f.expect[1].zero_below, Some(f64::INFINITY));
    }

    /// A list of words beside the axis: the expectations read the axis of numbers, for every
    /// series; naming the words as the axis is refused.
    #[test]
    fn a_list_of_words_is_series_the_expectations_read_each_of() {
        let text = FILE.replace(
            "vary = [\"pause_max=100ms..1s:3\"]",
            "vary = [\"pause_max=100ms..1s:3\", \"retry=fixed,uniform\"]",
        );
        assert_ne!(text, FILE);
        let f = FrontierFile::parse(Path::new("f.toml"), &text).unwrap();
        assert_eq!(f.expect[0].axis, 0);
        assert_eq!(f.sweep.points().len(), 6);
        let named = text.replace(
            "zero_below = \"300ms\"",
            "axis = \"retry\"\nzero_below = \"300ms\"",
        );
        let e = FrontierFile::parse(Path::new("f.toml"), &named).unwrap_err();
        assert!(e.contains("`axis`: retry is a list of words"), "{e}");
    }

    #[test]
    fn mistakes_name_the_file_and_field() {
        for (from, to, says) in [
            ("why = \"because\"", "why = \"\"", "`why`"),
            (
                "property = \"S1\"",
                "property = \"S9\"",
                "expect #1: `property`",
            ),
            (
                "zero_below = \"300ms\"",
                "zero_below = \"300\"",
                "not a duration",
            ),
            (
                "\"redlock\", \"central",
                "\"redlockx\", \"central",
                "redlockx",
            ),
            (
                "nonzero_from = \"1s\"",
                "nonzero_from = \"1s\"\nbogus = 1",
                "bogus",
            ),
            (
                "ttl = \"1s\"",
                "ttl = \"1s\"\npause_typo = \"1s\"",
                "pause_typo",
            ),
        ] {
            let text = FILE.replace(from, to);
            let e = FrontierFile::parse(Path::new("f.toml"), &text).unwrap_err();
            assert!(e.starts_with("f.toml: ") && e.contains(says), "{to}: {e}");
        }
    }
}
