//! Campaign files (`sims/*.toml`): an algorithm with its settings, seeded fault kinds and/or
//! an explicit fault plan, per-client settings, a seed range and an expectation that CI checks.
//!
//! ```toml
//! name = "K4: a Redlock master restarts empty"
//! algorithm = "redlock"
//! faults = ["crash-restart"]     # optional: one cell per kind; "swarm" mixes kinds per seed
//! seeds = 300                    # per cell
//! first_seed = 0                 # optional
//! expect = ["S1"]                # each listed property is violated in some seed; or "safe"
//! forbid = ["S2", "L2"]          # optional: properties no seed may violate
//! [settings]                     # optional: as `--set key=value`
//! ttl = "1s"
//! delayed_restart = false
//! [client.c2]                    # optional: one client's own settings
//! ttl = "10s"
//! [real]                         # optional, `locksim real` only: a lock library as the
//! client = "redis-py"            #   clients (docs/adapters.md); the simulator ignores it
//! [[fault]]                      # optional: explicit faults, in every seed (see
//! at = "2s"                      #   locksim_core::scenario_file)
//! type = "pause"
//! node = "c1"
//! duration = "3s"
//! ```
//!
//! With `[[fault]]` entries and no `faults`, every seed runs the same plan (seeds still vary
//! latencies, work times and election timeouts); with both, the plan is added to each seeded
//! one. A malformed file is one line naming the file, the line or the fault's number or the
//! client, and the field.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use locksim_core::fault::parse_kinds;
use locksim_core::scenario_file::{read_clients, read_faults, read_faults_named, RawFault};
use locksim_core::text::plural;
use locksim_core::{ClientProfile, FaultPlan, Property};
use serde::Deserialize;

use crate::campaign::{CampaignSpec, CellSummary};
use crate::key_lines::{KeyLines, SpannedClients, SpannedSettings};
use crate::setup::setups_for;

/// `expect = "safe"` or `expect = ["S1", "S2"]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Expect {
    /// `"safe"`: no seed may violate anything.
    Word(String),
    /// Properties each violated by at least one seed.
    Found(Vec<String>),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    name: Option<String>,
    description: Option<String>,
    algorithm: String,
    #[serde(default)]
    faults: Option<Vec<String>>,
    #[serde(default)]
    fault: Vec<toml::Spanned<toml::Table>>,
    #[serde(default)]
    client: SpannedClients,
    seeds: u64,
    #[serde(default)]
    first_seed: u64,
    expect: Expect,
    #[serde(default)]
    forbid: Vec<String>,
    #[serde(default)]
    settings: SpannedSettings,
    #[serde(default)]
    real: Option<RawReal>,
}

/// The `[real]` table: what `locksim real` runs as the clients.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReal {
    client: Option<String>,
    client_command: Option<Vec<String>>,
}

/// The clients of `locksim real`, from the file's `[real]` table (docs/adapters.md); the
/// simulator runs the built-in model of `algorithm` whatever this says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RealClient {
    /// `client = "NAME"`: a shipped adapter (`locksim list` shows them).
    Adapter(String),
    /// `client_command = ["prog", "arg", ...]`: the user's own adapter, run from the file's
    /// folder.
    Command(Vec<String>),
}

/// `missing field `expect`` → `expect`.
fn missing_field(msg: &str) -> Option<&str> {
    msg.strip_prefix("missing field `")?.strip_suffix('`')
}

/// What a required top-level field of a campaign file holds, with an example.
fn required_hint(field: &str) -> String {
    match field {
        "expect" => "what CI checks: `expect = \"safe\"` (no seed may violate anything) or a \
                     list of properties some seed must violate, like `expect = [\"S1\"]`"
            .into(),
        "seeds" => "how many seeds to run, from `first_seed` (default 0), e.g. `seeds = 10`".into(),
        "algorithm" => "the lock algorithm, e.g. `algorithm = \"central\"` (`locksim list` \
                        names them)"
            .into(),
        f => format!("add `{f} = ...` at the top of the file"),
    }
}

/// A parsed campaign file.
#[derive(Debug, Clone)]
pub struct CampaignFile {
    /// Where it came from.
    pub path: PathBuf,
    /// Its name (the file stem when it has none).
    pub name: String,
    /// Properties that some seed must violate.
    pub expect: Vec<Property>,
    /// Properties no seed may violate.
    pub forbid: Vec<Property>,
    /// `key=value` settings.
    pub settings: Vec<String>,
    /// Algorithm name.
    pub algorithm: String,
    /// Fault kinds, as written (`none` when the file has only an explicit plan).
    pub faults: String,
    /// The explicit plan (`[[fault]]` entries), in every seed.
    pub plan: FaultPlan,
    /// For each fault of `plan` (sorted by time), how errors name it: `fault #N (TYPE, line
    /// L)`, its number and line in the file.
    pub fault_names: Vec<String>,
    /// Per-client settings (`[client.cN]` tables).
    pub clients: BTreeMap<String, ClientProfile>,
    /// The file's description, if any.
    pub description: Option<String>,
    /// Seeds per cell.
    pub seeds: u64,
    /// First seed.
    pub first_seed: u64,
    /// What `locksim real` runs as the clients (`[real]`); `None`: locksim's own.
    pub real_client: Option<RealClient>,
}

/// `setup` with per-client settings, its algorithm rebuilt so that it checks them (a client's
/// TTL within the drift allowance, say).
fn with_clients(
    mut setup: crate::setup::Setup,
    clients: &BTreeMap<String, ClientProfile>,
) -> Result<crate::setup::Setup, String> {
    if clients.is_empty() {
        return Ok(setup);
    }
    setup.workload.per_client.extend(clients.clone());
    setup
        .workload
        .validate()
        .map_err(|e| e.replace("workload ", ""))?;
    setup.algo = locksim_algos::build(&setup.algorithm, &setup.config, &setup.workload)?;
    Ok(setup)
}

/// Reads a plan file (`--plan FILE`): `[[fault]]` entries only, for a run of `setup`.
///
/// # Errors
/// One line naming the file and the fault's number, line and field; or any other key.
pub fn read_plan(path: &Path, setup: &crate::setup::Setup) -> Result<FaultPlan, String> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct PlanOnly {
        #[serde(default)]
        fault: Vec<toml::Spanned<toml::Table>>,
    }
    let at = |what: String| format!("{}: {what}", path.display());
    let text = std::fs::read_to_string(path).map_err(|e| at(format!("cannot read: {e}")))?;
    let raw: PlanOnly = toml::from_str(&text).map_err(|e| {
        let pos = crate::key_lines::toml_error_at(&text, &e);
        at(format!(
            "{}{} (a plan file holds only [[fault]] entries)",
            pos,
            e.message().trim_end()
        ))
    })?;
    if raw.fault.is_empty() {
        return Err(at("no [[fault]] entries".into()));
    }
    let lines = locksim_core::text::LineIndex::new(&text);
    let entries: Vec<RawFault> = raw
        .fault
        .iter()
        .map(|f| RawFault {
            line: Some(lines.line(f.span().start)),
            table: f.get_ref().clone(),
        })
        .collect();
    read_faults(&entries, &setup.cluster, setup.end())
        .map_err(|e| at(format!("{} with its settings: {e}", setup.algorithm)))
}

/// A property a campaign file may name.
fn judged(text: &str) -> Result<Property, String> {
    text.parse::<Property>()
}

impl CampaignFile {
    /// Parses the text of a campaign file.
    ///
    /// # Errors
    /// A message that starts with the file name and names the line and column or the field.
    pub fn parse(path: &Path, text: &str) -> Result<CampaignFile, String> {
        let at = |what: String| format!("{}: {what}", path.display());
        let raw: Raw = toml::from_str(text).map_err(|e| {
            let msg = e.message().trim_end();
            // A missing top-level field has no line of its own: say what to write instead.
            if let Some(field) = missing_field(msg) {
                return at(format!("{msg}: {}", required_hint(field)));
            }
            let pos = crate::key_lines::toml_error_at(text, &e);
            let hint = if looks_like(text) == Some(FileKind::Frontier) {
                format!(
                    "; this is a frontier file (it has `vary`): run `locksim sweep {}`",
                    path.display()
                )
            } else {
                String::new()
            };
            at(format!("{pos}{msg}{hint}"))
        })?;
        let (expect, mut forbid) =
            match &raw.expect {
                Expect::Word(w) if w == "safe" => (
                    vec![],
                    vec![Property::S1, Property::S2, Property::S3, Property::S4],
                ),
                Expect::Word(w) => {
                    return Err(at(format!(
                        "`expect`: `{w}` is neither \"safe\" nor a list like [\"S1\"]"
                    )))
                }
                Expect::Found(list) if list.is_empty() => return Err(at(
                    "`expect`: an empty list expects nothing; write \"safe\" or name properties"
                        .into(),
                )),
                Expect::Found(list) => (
                    list.iter()
                        .map(|p| judged(p))
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(|e| at(format!("`expect`: {e}")))?,
                    vec![],
                ),
            };
        for p in &raw.forbid {
            let p = judged(p).map_err(|e| at(format!("`forbid`: {e}")))?;
            if expect.contains(&p) {
                return Err(at(format!("`forbid`: {p} is also expected")));
            }
            forbid.push(p);
        }
        if raw.seeds == 0 || raw.seeds > 1_000_000 {
            return Err(at("`seeds`: must be from 1 to 1000000".into()));
        }
        if raw.first_seed.checked_add(raw.seeds).is_none() {
            return Err(at("`first_seed` + `seeds` does not fit in 64 bits".into()));
        }
        if locksim_algos::knobs(&raw.algorithm).is_none() {
            return Err(at(format!(
                "`algorithm`: unknown algorithm `{}` (valid: {})",
                raw.algorithm,
                locksim_algos::names()
            )));
        }
        let key_lines = KeyLines::new(text, &raw.settings, &raw.client);
        let settings = raw
            .settings
            .iter()
            .map(|(k, v)| match v.get_ref() {
                toml::Value::String(s) => Ok(format!("{k}={s}")),
                toml::Value::Integer(i) => Ok(format!("{k}={i}")),
                toml::Value::Boolean(b) => Ok(format!("{k}={b}")),
                toml::Value::Float(f) => Ok(format!("{k}={f}")),
                other => Err(at(key_lines.settings_error(&format!(
                    "`{k}`: {} is not a string, number or boolean (in [settings])",
                    other.type_str()
                )))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let faults = match &raw.faults {
            Some(list) if list.is_empty() => {
                return Err(at(
                    "`faults`: an empty list; leave it out to run only the [[fault]] plan".into(),
                ))
            }
            Some(list) => list.join(","),
            None if raw.fault.is_empty() => {
                return Err(at(
                    "no faults: give seeded kinds (`faults = [\"pause\"]`), explicit [[fault]] entries, or `faults = [\"none\"]`".into(),
                ))
            }
            None => "none".to_string(),
        };
        parse_kinds(&faults).map_err(|e| at(format!("`faults`: {e}")))?;
        // Build once to report bad settings now, with the file name; the cluster it gives
        // names the nodes of the plan and the clients of the client tables.
        let setup = setups_for(std::slice::from_ref(&raw.algorithm), &settings)
            .map_err(|e| at(key_lines.settings_error(&format!("`settings`: {e}"))))?
            .remove(0);
        // The algorithm's own names for workload settings (zookeeper's `session_timeout`)
        // work in client tables too, as `--set c2.session_timeout=…` does.
        let mut client_tables = BTreeMap::new();
        for (name, t) in &raw.client {
            let mut table = toml::Table::new();
            for (k, v) in t.get_ref() {
                let key = match crate::setup::alias_of(&raw.algorithm, k) {
                    Some((alias, real)) if t.get_ref().contains_key(real) => {
                        return Err(at(key_lines.client_error(&format!(
                            "client.{name}: {}",
                            crate::setup::both_given(&raw.algorithm, "", alias, real)
                        ))));
                    }
                    Some((_, real)) => real.to_string(),
                    None => k.clone(),
                };
                table.insert(key, v.get_ref().clone());
            }
            client_tables.insert(name.clone(), table);
        }
        let clients = read_clients(&client_tables, setup.cluster.clients)
            .map_err(|e| at(key_lines.client_error(&e)))?;
        let setup = with_clients(setup, &clients).map_err(|e| at(key_lines.client_error(&e)))?;
        let lines = locksim_core::text::LineIndex::new(text);
        let raw_faults: Vec<RawFault> = raw
            .fault
            .iter()
            .map(|f| RawFault {
                line: Some(lines.line(f.span().start)),
                table: f.get_ref().clone(),
            })
            .collect();
        let (plan, fault_names) =
            read_faults_named(&raw_faults, &setup.cluster, setup.end()).map_err(at)?;
        if setup.workload.network == locksim_core::Network::Tcp {
            if let Some(i) = plan
                .faults
                .iter()
                .position(|f| matches!(f.fault, locksim_core::Fault::Duplicate { .. }))
            {
                return Err(at(format!(
                    "{}: {}",
                    fault_names[i],
                    locksim_core::scenario::DUPLICATE_UNDER_TCP
                )));
            }
        }
        crate::faultgen::check_kinds(&parse_kinds(&faults).map_err(at)?, &setup.workload)
            .map_err(at)?;
        let real_client = match raw.real {
            None => None,
            Some(RawReal {
                client: Some(_),
                client_command: Some(_),
            }) => {
                return Err(at(
                    "[real]: give `client` (a shipped adapter) or `client_command` (your own), not both"
                        .into(),
                ))
            }
            Some(RawReal {
                client: Some(name),
                ..
            }) => Some(RealClient::Adapter(name)),
            Some(RawReal {
                client_command: Some(argv),
                ..
            }) if argv.first().is_none_or(|p| p.is_empty()) => {
                return Err(at(
                    "[real] `client_command`: empty; give [\"program\", \"arg\", ...]".into(),
                ))
            }
            Some(RawReal {
                client_command: Some(argv),
                ..
            }) => Some(RealClient::Command(argv)),
            Some(_) => {
                return Err(at(
                    "[real]: an empty table; give `client = \"NAME\"` or `client_command = [...]`".into(),
                ))
            }
        };
        Ok(CampaignFile {
            path: path.to_path_buf(),
            name: raw.name.unwrap_or_else(|| {
                path.file_stem()
                    .map_or_else(String::new, |s| s.to_string_lossy().into_owned())
            }),
            expect,
            forbid,
            settings,
            algorithm: raw.algorithm,
            faults,
            plan,
            fault_names,
            clients,
            description: raw.description,
            seeds: raw.seeds,
            first_seed: raw.first_seed,
            real_client,
        })
    }

    /// `true` when the file names a liveness property, so its tables show L1–L3.
    pub fn asks_liveness(&self) -> bool {
        self.expect
            .iter()
            .chain(&self.forbid)
            .any(|p| p.is_liveness())
    }

    /// Reads and parses a campaign file.
    ///
    /// # Errors
    /// As [`CampaignFile::parse`], or when the file cannot be read.
    pub fn read(path: &Path) -> Result<CampaignFile, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        CampaignFile::parse(path, &text)
    }

    /// Every `*.toml` under each path (a file, or a folder read in name order).
    ///
    /// # Errors
    /// The first file that cannot be read or parsed; a path that does not exist.
    pub fn collect(paths: &[PathBuf]) -> Result<Vec<CampaignFile>, String> {
        collect_toml(paths, CampaignFile::read)
    }

    /// The campaign to run.
    ///
    /// # Errors
    /// When the settings do not build (already checked by [`CampaignFile::parse`]).
    pub fn spec(&self, jobs: usize) -> Result<CampaignSpec, String> {
        let setups = setups_for(std::slice::from_ref(&self.algorithm), &self.settings)?
            .into_iter()
            .map(|s| with_clients(s, &self.clients).map(|s| s.with_plan(self.plan.clone())))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(CampaignSpec {
            setups,
            kinds: parse_kinds(&self.faults)?,
            first_seed: self.first_seed,
            seeds: self.seeds,
            jobs,
        })
    }

    /// What failed in the expectation, one line each; empty when it holds. A seed that failed
    /// to run always fails the expectation, and so does a seed on which a forbidden property
    /// was left undecided (it cannot count as clean).
    pub fn judge(&self, cells: &[CellSummary]) -> Vec<String> {
        let count = |p: Property| -> u64 { cells.iter().map(|c| c.violated(p)).sum() };
        let mut problems = Vec::new();
        for &p in &self.expect {
            if count(p) == 0 {
                problems.push(format!(
                    "expected {p} to be violated in some seed; it never was"
                ));
            }
        }
        for &p in &self.forbid {
            let n = count(p);
            if n > 0 {
                let first = cells
                    .iter()
                    .filter_map(|c| c.first_violation.get(&p).copied())
                    .min()
                    .map_or(String::new(), |s| format!(", from seed {s}"));
                problems.push(format!(
                    "{p} was violated in {}{first}; the file forbids it",
                    plural(n, "seed")
                ));
            }
            let undecided: u64 = cells.iter().map(|c| c.undecided_on(p)).sum();
            if undecided > 0 {
                problems.push(format!(
                    "{p} was undecided on {} (a check ran out of budget): the file forbids it, \
                     so those seeds are not a clean result",
                    plural(undecided, "seed")
                ));
            }
        }
        // A forbidden property that no seed judged (L1 for an algorithm without leases) would
        // pass unseen: say so, as `--fail-on` does.
        for &p in &self.forbid {
            if let Some(c) = cells
                .iter()
                .find(|c| c.seeds > c.errors && !c.checked.contains(&p))
            {
                problems.push(format!(
                    "{p} is not judged for {} under {}: the file forbids it, but no seed checked it",
                    c.algorithm,
                    c.faults_label()
                ));
            }
        }
        let errors: u64 = cells.iter().map(|c| c.errors).sum();
        if errors > 0 {
            problems.push(format!("{} failed to run", plural(errors, "seed")));
        }
        // A clean cell in which nobody ever held the lock proves nothing.
        for c in cells.iter().filter(|c| c.grants == 0 && c.seeds > 0) {
            // A plan-only file's cell is named `none`: say what it ran.
            let under = match (c.faults.name(), self.plan.faults.is_empty()) {
                ("none", false) => "the file's [[fault]] plan".to_string(),
                (kinds, false) => format!("{kinds} and the file's [[fault]] plan"),
                (kinds, true) => kinds.to_string(),
            };
            problems.push(format!(
                "no client was ever granted the lock under {under} ({} seeds): a clean result here proves nothing",
                c.seeds
            ));
        }
        // Nor does a cell whose faults never took effect (issue #24, item 5): it ran
        // fault-free.
        for c in cells.iter().filter(|c| c.no_fault_took_effect()) {
            let why = if c.never_fired_seeds > 0 {
                "a trigger that never fired"
            } else {
                "e.g. no leader to isolate"
            };
            problems.push(format!(
                "no fault took effect under {} in any of its {} ({why}): it ran fault-free, so its result says nothing about the faults",
                c.faults_label(),
                plural(c.seeds, "seed")
            ));
        }
        // A fault kind beside a plan must have acted itself (H6 item 6).
        for c in cells
            .iter()
            .filter(|c| !c.no_fault_took_effect() && c.kind_untested())
        {
            problems.push(format!(
                "no {} fault took effect under {} in any of its {}: only the explicit plan acted, so its result says nothing about {}",
                c.faults.name(),
                c.faults_label(),
                plural(c.seeds, "seed"),
                c.faults.name()
            ));
        }
        problems
    }
}

/// `read` of every `*.toml` under each path (a file, or a folder read in name order), in that
/// order: campaign files and frontier files are found the same way.
///
/// # Errors
/// The first file that cannot be read or parsed; a path that does not exist.
/// The two kinds of scenario file, told apart by their keys (for a hint when one is given to
/// the other's command).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileKind {
    /// A campaign file (`algorithm`, `[[fault]]`, `[client.cN]`, …): `locksim campaign`/`run`.
    Campaign,
    /// A frontier file (a sweep: `vary`, `algorithms`): `locksim sweep`.
    Frontier,
}

/// Which kind of scenario file `text` looks like: a frontier file has `vary`; a campaign file
/// has `algorithm` (one), `fault` or `client` and no `vary`. `None` for text that is not TOML
/// or has neither's keys.
pub(crate) fn looks_like(text: &str) -> Option<FileKind> {
    let t: toml::Table = toml::from_str(text).ok()?;
    if t.contains_key("vary") {
        Some(FileKind::Frontier)
    } else if ["algorithm", "fault", "client", "forbid"]
        .iter()
        .any(|k| t.contains_key(*k))
    {
        Some(FileKind::Campaign)
    } else {
        None
    }
}

pub(crate) fn collect_toml<T>(
    paths: &[PathBuf],
    read: impl Fn(&Path) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| format!("{}: {e}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|x| x == "toml"))
                .collect();
            found.sort();
            for f in found {
                files.push(read(&f)?);
            }
        } else if p.exists() {
            files.push(read(p)?);
        } else {
            return Err(format!("{}: no such file or folder", p.display()));
        }
    }
    Ok(files)
}
