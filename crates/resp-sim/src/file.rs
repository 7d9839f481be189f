//! Scenario files: a run of your own client described in TOML, with the `[[fault]]` entries of
//! locksim's campaign files (node names, durations with units, `at` or `after`), and what the
//! run must show. One test function names the file:
//!
//! ```toml
//! name = "a holder paused past its TTL"
//! description = "c1 stops for 2 s the moment the server grants it the lock."
//! servers = 1                   # the default; 3 or 5 for Redlock (a majority grants)
//! sentinel = false              # true: n1 the primary, the others its replicas, under Sentinel
//! down_after = "30s"            # Sentinel's down-after-milliseconds (with sentinel = true)
//! clients = 2
//! duration = "4s"
//! seeds = 5                     # seeds 1..=5 (`seed = 10` starts them at 10)
//! resource_prefix = "resource:" # the default
//! expect = ["S1", "S2"]         # each must be violated by some seed, nothing else by any;
//!                               # "safe" (the default): no seed violates anything
//!
//! [[script]]                    # a script of your client's that the server should know
//! kind = "compare-and-delete"   # or "compare-and-pexpire"
//! text = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
//!
//! [[fault]]
//! after = { node = "n1", event = "grants", client = "c1" }
//! type = "pause"
//! node = "c1"
//! duration = "2s"
//! ```

use std::future::Future;
use std::path::{Path, PathBuf};

use locksim_core::scenario_file::{read_faults, RawFault};
use locksim_core::text::plural;
use locksim_core::time::parse_duration;
use locksim_core::{Property, Verdict};

use crate::shrink::{shrink, Shrunk};
use crate::sim::{run, Client, Outcome, Scenario};
use crate::trace::{first_difference, replay_trace, trace_of, write_trace};

/// What a scenario file asks of its runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// No seed violates any property.
    Safe,
    /// Each of these is violated by at least one seed, and no other property by any seed.
    Violates(Vec<Property>),
}

/// A parsed scenario file.
#[derive(Debug, Clone)]
pub struct ScenarioFile {
    /// Its `name` (the file name when it has none).
    pub name: String,
    /// Its `description`.
    pub description: String,
    /// The run, with the first seed.
    pub scenario: Scenario,
    /// How many seeds run, from `scenario.seed` on.
    pub seeds: u64,
    /// What the runs must show.
    pub expect: Expect,
}

const KEYS: &[&str] = &[
    "name",
    "description",
    "service",
    "servers",
    "sentinel",
    "down_after",
    "clients",
    "duration",
    "seeds",
    "seed",
    "resource_prefix",
    "expect",
    "fault",
    "script",
];

impl ScenarioFile {
    /// Reads the file at `path`.
    ///
    /// # Errors
    /// The file cannot be read, or [`ScenarioFile::parse`]'s errors, prefixed with the path.
    pub fn read(path: impl AsRef<Path>) -> Result<ScenarioFile, String> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let default_name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Self::parse(&text, &default_name).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses a scenario file's text; `default_name` names it when it has no `name`.
    ///
    /// # Errors
    /// Bad TOML, an unknown key, a bad value (with the key's name), a fault entry locksim's
    /// fault reader refuses, or a fault of a kind these runs do not support.
    pub fn parse(text: &str, default_name: &str) -> Result<ScenarioFile, String> {
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| e.to_string())?;
        if let Some(k) = table.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(format!("unknown key `{k}` (valid: {})", KEYS.join(", ")));
        }
        let text_of = |k: &str| -> Result<Option<String>, String> {
            match table.get(k) {
                None => Ok(None),
                Some(toml::Value::String(s)) => Ok(Some(s.clone())),
                Some(v) => Err(format!("`{k}`: {} is not a string", v.type_str())),
            }
        };
        let int_of = |k: &str, min: i64, max: i64| -> Result<Option<i64>, String> {
            match table.get(k) {
                None => Ok(None),
                Some(toml::Value::Integer(n)) if (min..=max).contains(n) => Ok(Some(*n)),
                Some(v) => Err(format!("`{k}`: {v} is not a whole number in {min}..={max}")),
            }
        };
        let seed = int_of("seed", 0, i64::MAX)?.unwrap_or(1) as u64;
        let mut scenario = Scenario::new(seed);
        match text_of("service")?.as_deref() {
            None | Some("redis") => {}
            Some("etcd") => scenario.service = crate::sim::Service::Etcd,
            Some(other) => {
                return Err(format!(
                    "`service`: {other:?} is not \"redis\" (the default) or \"etcd\""
                ))
            }
        }
        if let Some(n) = int_of("servers", 1, 15)? {
            scenario.servers = n as u32;
        }
        match table.get("sentinel") {
            None | Some(toml::Value::Boolean(false)) => {}
            Some(toml::Value::Boolean(true)) => scenario.sentinel = Some(30_000_000_000),
            Some(v) => return Err(format!("`sentinel`: {v} is not true or false")),
        }
        if let Some(d) = text_of("down_after")? {
            let ns = parse_duration(&d).map_err(|e| format!("`down_after`: {e}"))?;
            if scenario.sentinel.is_none() {
                return Err("`down_after` is Sentinel's: it needs `sentinel = true`".into());
            }
            if ns <= 0 || ns > 3_600_000_000_000 {
                return Err(format!(
                    "`down_after`: {d} is not a duration of up to an hour"
                ));
            }
            scenario.sentinel = Some(ns as u64);
        }
        if let Some(n) = int_of("clients", 1, 250)? {
            scenario.clients = n as u32;
        }
        if let Some(d) = text_of("duration")? {
            let ns = parse_duration(&d).map_err(|e| format!("`duration`: {e}"))?;
            if ns <= 0 || ns > u64::MAX as i128 {
                return Err(format!("`duration`: {d} is not a positive duration"));
            }
            scenario.duration = ns as u64;
        }
        if let Some(p) = text_of("resource_prefix")? {
            scenario.resource_prefix = p;
        }
        let seeds = int_of("seeds", 1, 1_000_000)?.unwrap_or(1) as u64;
        let expect = match table.get("expect") {
            None => Expect::Safe,
            Some(toml::Value::String(s)) if s == "safe" => Expect::Safe,
            Some(toml::Value::Array(a)) if !a.is_empty() => Expect::Violates(
                a.iter()
                    .map(|v| match v {
                        toml::Value::String(s) => {
                            s.parse::<Property>().map_err(|e| format!("`expect`: {e}"))
                        }
                        v => Err(format!("`expect`: {v} is not a property name")),
                    })
                    .collect::<Result<_, _>>()?,
            ),
            Some(v) => {
                return Err(format!(
                    "`expect`: {v} is neither \"safe\" nor a list of properties such as [\"S1\"]"
                ))
            }
        };
        match table.get("script") {
            None => {}
            Some(toml::Value::Array(a)) => {
                for v in a {
                    let toml::Value::Table(t) = v else {
                        return Err("`script`: write each script as a [[script]] table".into());
                    };
                    let text = t.get("text").and_then(|v| v.as_str());
                    let kind = t
                        .get("kind")
                        .and_then(|v| v.as_str())
                        .and_then(crate::scripts::ScriptKind::from_name);
                    match (text, kind, t.keys().find(|k| *k != "text" && *k != "kind")) {
                        (Some(text), Some(kind), None) => {
                            scenario.scripts.register(text, kind);
                        }
                        _ => {
                            return Err("`script`: each [[script]] has `text` (the Lua, as your \
                                        client sends it) and `kind` (\"compare-and-delete\" or \
                                        \"compare-and-pexpire\"), and nothing else"
                                .into())
                        }
                    }
                }
            }
            Some(_) => return Err("`script`: write each script as a [[script]] table".into()),
        }
        let raw: Vec<RawFault> = match table.get("fault") {
            None => Vec::new(),
            Some(toml::Value::Array(a)) => a
                .iter()
                .map(|v| match v {
                    toml::Value::Table(t) => Ok(RawFault {
                        line: None,
                        table: t.clone(),
                    }),
                    _ => Err("`fault`: write each fault as a [[fault]] table".to_string()),
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("`fault`: write each fault as a [[fault]] table".into()),
        };
        if scenario.service == crate::sim::Service::Etcd && table.contains_key("script") {
            return Err(
                "`script`: scripts are Redis's (EVAL/EVALSHA); an etcd member runs none".into(),
            );
        }
        let plan = read_faults(&raw, &scenario.cluster(), scenario.duration)?;
        scenario.faults = plan.faults;
        scenario.validate()?;
        Ok(ScenarioFile {
            name: text_of("name")?.unwrap_or_else(|| default_name.to_string()),
            description: text_of("description")?.unwrap_or_default(),
            scenario,
            seeds,
            expect,
        })
    }
}

/// What [`check_file`] found: each seed's outcome, in seed order, and the shrunk traces.
#[derive(Debug)]
pub struct FileReport {
    /// The file as read.
    pub file: ScenarioFile,
    /// `(seed, outcome)` for every seed run.
    pub runs: Vec<(u64, Outcome)>,
    /// For each expected property, the first seed violating it shrunk, written as a trace and
    /// replayed from it event for event: `(property, seed, trace file, the shrunk run)`.
    pub traces: Vec<(Property, u64, PathBuf, Shrunk)>,
    /// What went wrong on the way without changing the verdict (a trace that could not be
    /// written or did not replay), one line each.
    pub notes: Vec<String>,
}

impl FileReport {
    /// A line for the file (how many seeds violated something), one per such seed, and one
    /// per shrunk trace: what a test prints (`println!("{}", report.summary())`, shown by
    /// `cargo test -- --nocapture`).
    pub fn summary(&self) -> String {
        let failing = self.failing();
        let mut lines = vec![format!(
            "{}: {} of {} seeds violate something",
            self.file.name,
            failing.len(),
            self.runs.len()
        )];
        for (seed, v) in &failing {
            lines.push(listing(*seed, v));
        }
        lines.extend(self.notes.iter().cloned());
        for (property, seed, path, shrunk) in &self.traces {
            lines.push(format!(
                "{property} of seed {seed} shrunk to {}, {} and {} in {} runs: {}",
                plural(shrunk.scenario.faults.len() as u64, "fault"),
                plural(shrunk.scenario.clients, "client"),
                locksim_core::time::fmt_nanos(shrunk.scenario.duration as i128),
                shrunk.runs,
                path.display()
            ));
        }
        lines.join("\n")
    }

    /// The seeds whose verdict is not safe, with their verdicts.
    pub fn failing(&self) -> Vec<(u64, Verdict)> {
        self.runs
            .iter()
            .map(|(s, o)| (*s, o.verdict()))
            .filter(|(_, v)| !v.is_safe())
            .collect()
    }
}

fn listing(seed: u64, v: &Verdict) -> String {
    let mut out = format!("seed {seed}:");
    for x in &v.violations {
        out += &format!("\n  {:?}: {}", x.kind, x.summary);
    }
    out
}

/// One line of what seed `seed`'s run did: its violations, or "safe", then how many grants,
/// releases, resource writes and faults the servers recorded (for a file whose expected
/// violation did not show: did the fault strike while a client held the lock?).
fn account(seed: u64, o: &crate::sim::Outcome) -> String {
    use locksim_core::history::{EventKind, OpF, Phase};
    let ok = |f: OpF| o.count(f, Phase::Ok);
    let v = o.verdict();
    let verdict = if v.violations.is_empty() {
        "safe".to_string()
    } else {
        let mut kinds: Vec<String> = v
            .violations
            .iter()
            .map(|x| format!("{:?}", x.kind))
            .collect();
        kinds.dedup();
        kinds.join(", ")
    };
    format!(
        "  seed {seed}: {verdict}; {} grants, {} releases, {} resource writes, {} faults struck",
        ok(OpF::Acquire),
        ok(OpF::Release),
        ok(OpF::Write),
        o.history
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Fault { .. }))
            .count()
    )
}

/// A run that exercised nothing proves nothing: panics when no seed granted the lock, or when
/// a fault of the file struck in no seed (its trigger never came).
fn exercised(report: &FileReport) {
    use locksim_core::history::EventKind;
    let name = &report.file.name;
    let seeds = report.runs.len();
    let grants = report
        .runs
        .iter()
        .flat_map(|(_, o)| &o.history.events)
        .filter(|e| matches!(e.kind, EventKind::Grant { .. }))
        .count();
    assert!(
        grants > 0,
        "{name}: no seed of {seeds} granted the lock to any client: nothing was tested \
         (do the clients connect to the servers' URLs and take the lock with SET NX?)"
    );
    for t in &report.file.scenario.faults {
        let struck = report.runs.iter().any(|(_, o)| {
            o.history
                .events
                .iter()
                .any(|e| matches!(&e.kind, EventKind::Fault { fault } if *fault == t.fault))
        });
        assert!(
            struck,
            "{name}: the fault {} struck in no seed of {seeds} (its trigger never came, or \
             came after the run's end): these runs do not test it",
            t.fault.describe(&report.file.scenario.cluster())
        );
    }
}

/// Runs the scenario file at `path` (a relative path is read from the crate's folder when
/// run by `cargo test`) with `client` as every client's program, for each of its seeds, checks
/// its `expect`, and re-runs its first seed to check that the history comes out the same.
///
/// # Panics
/// When the file cannot be read or is invalid, when a run panics, when no seed granted the
/// lock or a fault struck in no seed (nothing was tested), when the runs do not show what
/// `expect` says (with each seed's violations), or when a re-run differs.
pub fn check_file<F, Fut>(path: impl AsRef<Path>, client: F) -> FileReport
where
    F: Fn(Client) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = ()> + 'static,
{
    check(
        ScenarioFile::read(path).unwrap_or_else(|e| panic!("{e}")),
        client,
    )
}

/// [`check_file`] for a file already read (and perhaps changed: one file, two clients with
/// different `expect`s).
///
/// # Panics
/// As [`check_file`].
pub fn check<F, Fut>(file: ScenarioFile, client: F) -> FileReport
where
    F: Fn(Client) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let mut runs = Vec::with_capacity(file.seeds as usize);
    for i in 0..file.seeds {
        let mut s = file.scenario.clone();
        s.seed = file.scenario.seed + i;
        runs.push((s.seed, run_named(&file.name, &s, client.clone())));
    }
    let again = run_named(&file.name, &file.scenario, client.clone());
    let mut report = FileReport {
        file,
        runs,
        traces: Vec::new(),
        notes: Vec::new(),
    };
    if let Some(d) = first_difference(&report.runs[0].1.history.events, &again.history.events) {
        panic!(
            "{}: seed {} gave another history when run again ({d}): the client's code is not \
             deterministic under the simulation. Look for a real clock or thread, a random \
             source madsim does not seed, or state a library keeps from one run to the next in \
             the same process (a lazy static; a counter, such as the uuid crate's for v7 UUIDs; \
             a cache). No verdict can be trusted until then; as run:\n{}",
            report.file.name,
            report.file.scenario.seed,
            report.summary()
        );
    }
    exercised(&report);
    let failing = report.failing();
    let all: Vec<String> = failing.iter().map(|(s, v)| listing(*s, v)).collect();
    match &report.file.expect {
        Expect::Safe => {
            if let Some((seed, v)) = failing.first() {
                panic!(
                    "{}: expected safe, but:\n{}{}",
                    report.file.name,
                    all.join("\n"),
                    shrunk_note(&report, *seed, v.violations[0].kind, client.clone())
                );
            }
        }
        Expect::Violates(props) => {
            for p in props {
                assert!(
                    failing
                        .iter()
                        .any(|(_, v)| v.violations.iter().any(|x| x.kind == *p)),
                    "{}: expected some seed of {} to violate {p:?}; none did. What each seed \
                     did:\n{}",
                    report.file.name,
                    report.file.seeds,
                    report
                        .runs
                        .iter()
                        .map(|(seed, o)| account(*seed, o))
                        .collect::<Vec<_>>()
                        .join("\n")
                );
            }
            let other: Vec<(u64, Property)> = failing
                .iter()
                .filter_map(|(s, v)| {
                    v.violations
                        .iter()
                        .find(|x| !props.contains(&x.kind))
                        .map(|x| (*s, x.kind))
                })
                .collect();
            if let Some(&(seed, p)) = other.first() {
                let listed: Vec<String> = failing
                    .iter()
                    .filter(|(s, _)| other.iter().any(|(o, _)| o == s))
                    .map(|(s, v)| listing(*s, v))
                    .collect();
                panic!(
                    "{}: violations of properties `expect` does not list:\n{}{}",
                    report.file.name,
                    listed.join("\n"),
                    shrunk_note(&report, seed, p, client.clone())
                );
            }
            for p in props.clone() {
                let Some((seed, _)) = failing
                    .iter()
                    .find(|(_, v)| v.violations.iter().any(|x| x.kind == p))
                else {
                    continue;
                };
                // The runs showed what the file expects; a trace that cannot be kept is said,
                // not a failure.
                match keep_shrunk(&report, *seed, p, client.clone()) {
                    Ok((path, shrunk)) => report.traces.push((p, *seed, path, shrunk)),
                    Err(e) => report
                        .notes
                        .push(format!("{p} of seed {seed}: no trace kept: {e}")),
                }
            }
        }
    }
    report
}

/// [`run`], with the file's name and the seed added to a panic's message (the client's code
/// panicked, or the simulation did).
fn run_named<F, Fut>(name: &str, s: &Scenario, client: F) -> Outcome
where
    F: Fn(Client) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + 'static,
{
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(s, client))) {
        Ok(o) => o,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| p.downcast_ref::<&str>().copied())
                .unwrap_or("(a panic without a message)");
            panic!("{name}: seed {} panicked: {msg}", s.seed)
        }
    }
}

/// Where shrunk traces go: `LOCKSIM_TRACES`, else `locksim-traces` in cargo's target folder
/// (`CARGO_TARGET_DIR`, else `target` in the folder the test runs in: the crate's).
pub fn traces_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("LOCKSIM_TRACES") {
        return PathBuf::from(dir);
    }
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| PathBuf::from("target"), PathBuf::from)
        .join("locksim-traces")
}

/// Shrinks seed `seed` of the report's file for `property`, writes the trace, and replays it
/// from the file to check it reproduces the run event for event.
fn keep_shrunk<F, Fut>(
    report: &FileReport,
    seed: u64,
    property: Property,
    client: F,
) -> Result<(PathBuf, Shrunk), String>
where
    F: Fn(Client) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let mut start = report.file.scenario.clone();
    start.seed = seed;
    let shrunk = shrink(&start, client.clone(), property)?;
    let trace = trace_of(&shrunk.scenario, &shrunk.outcome);
    let name = format!(
        "{}-{}",
        report.file.name,
        property.to_string().to_lowercase()
    );
    let path = write_trace(&traces_dir(), &name, &trace)?;
    replay_trace(&path, client)?;
    Ok((path, shrunk))
}

/// The lines a failure message adds about seed `seed`'s shrunk trace.
fn shrunk_note<F, Fut>(report: &FileReport, seed: u64, property: Property, client: F) -> String
where
    F: Fn(Client) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = ()> + 'static,
{
    match keep_shrunk(report, seed, property, client) {
        Ok((path, shrunk)) => format!(
            "\n  trace:  {} (seed {seed}, {property} shrunk to {} and {} client(s) in {} runs)\n  \
             replay: locksim_resp_sim::replay_trace({:?}, your_client)\n  \
             draw:   locksim render {} -o page.html",
            path.display(),
            plural(shrunk.scenario.faults.len() as u64, "fault"),
            shrunk.scenario.clients,
            shrunk.runs,
            path.display(),
            path.display()
        ),
        Err(e) => format!("\n  (shrinking seed {seed} failed: {e})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use locksim_core::Fault;

    #[test]
    fn reads_faults_by_name_and_trigger() {
        let f = ScenarioFile::parse(
            r#"
            clients = 3
            duration = "5s"
            seeds = 4
            expect = ["S1", "S2"]
            [[fault]]
            after = { node = "n1", event = "grants", client = "c2" }
            type = "pause"
            node = "c2"
            duration = "2s"
            [[fault]]
            at = "1s"
            type = "isolate"
            node = "n1"
            duration = "300ms"
            "#,
            "x",
        )
        .unwrap();
        assert_eq!(f.name, "x");
        assert_eq!(f.scenario.clients, 3);
        assert_eq!(f.scenario.duration, 5_000_000_000);
        assert_eq!(f.expect, Expect::Violates(vec![Property::S1, Property::S2]));
        assert_eq!(f.scenario.faults.len(), 2);
        let pause = f
            .scenario
            .faults
            .iter()
            .find(|t| matches!(t.fault, Fault::Pause { node: 2, .. }))
            .unwrap();
        assert_eq!(pause.after.as_ref().unwrap().client, Some(2));
    }

    #[test]
    fn refuses_what_it_cannot_run() {
        let err = |text: &str| ScenarioFile::parse(text, "x").unwrap_err();
        assert!(err("colour = 1").contains("unknown key `colour`"));
        assert!(err("duration = \"soon\"").contains("`duration`"));
        assert!(err("expect = \"maybe\"").contains("`expect`"));
        let e = err("[[fault]]\nat = \"1s\"\ntype = \"clock_step\"\nnode = \"c1\"\ndelta = \"1s\"");
        assert!(e.contains("feature `client-clocks`"), "{e}");
        let e = err(
            "service = \"etcd\"\n[[script]]\ntext = \"return 1\"\nkind = \"compare-and-delete\"",
        );
        assert!(e.contains("an etcd member runs none"), "{e}");
        let e = err("[[fault]]\nat = \"1s\"\ntype = \"delay\"\nfrom = [\"n1\"]\nto = [\"c1\"]\nmin = \"1ms\"\nmax = \"2ms\"\nduration = \"1s\"");
        assert!(e.contains("isolate, partition"), "{e}");
        assert!(ScenarioFile::parse(
            "[[fault]]\nat = \"1s\"\ntype = \"clock_step\"\nnode = \"n1\"\ndelta = \"1s\"",
            "x"
        )
        .is_ok());
        let e = err("[[fault]]\nat = \"1s\"\ntype = \"pause\"\nnode = \"c9\"\nduration = \"1s\"");
        assert!(e.contains("c9"), "{e}");
    }

    #[test]
    #[should_panic(expected = "nothing was tested")]
    fn a_file_whose_clients_never_take_the_lock_fails() {
        let path = std::env::temp_dir().join(format!("locksim-idle-{}.toml", std::process::id()));
        std::fs::write(&path, "duration = \"200ms\"\nexpect = \"safe\"\n").unwrap();
        let _ = check_file(&path, |_client| async {});
    }

    #[test]
    fn reads_the_number_of_servers() {
        let f = ScenarioFile::parse(
            "servers = 3\n[[fault]]\nat = \"1s\"\ntype = \"crash\"\nnode = \"n3\"",
            "x",
        )
        .unwrap();
        assert_eq!(f.scenario.servers, 3);
        assert_eq!(f.scenario.client(1), 3);
        assert!(ScenarioFile::parse("servers = 0", "x")
            .unwrap_err()
            .contains("`servers`"));
    }

    #[test]
    fn reads_scripts_the_server_should_know() {
        let f = ScenarioFile::parse(
            "[[script]]\nkind = \"compare-and-delete\"\ntext = \"return 42\"",
            "x",
        )
        .unwrap();
        assert_eq!(
            f.scenario.scripts.recognise(b"return 42"),
            Some(crate::scripts::ScriptKind::CompareAndDelete)
        );
        let e = ScenarioFile::parse("[[script]]\nkind = \"lock\"\ntext = \"x\"", "x").unwrap_err();
        assert!(e.contains("compare-and-pexpire"), "{e}");
    }

    #[test]
    fn reads_sentinel_and_its_down_after() {
        let f =
            ScenarioFile::parse("servers = 3\nsentinel = true\ndown_after = \"5s\"", "x").unwrap();
        assert_eq!(f.scenario.sentinel, Some(5_000_000_000));
        let f = ScenarioFile::parse("servers = 3\nsentinel = true", "x").unwrap();
        assert_eq!(f.scenario.sentinel, Some(30_000_000_000));
        let err = |t: &str| ScenarioFile::parse(t, "x").unwrap_err();
        assert!(err("down_after = \"5s\"").contains("sentinel = true"));
        assert!(err("sentinel = true").contains("servers must be 2"));
    }

    #[test]
    fn names_the_fault_and_the_node_it_refuses() {
        let err = |t: &str| ScenarioFile::parse(t, "x").unwrap_err();
        let e =
            err("[[fault]]\nat = \"1s\"\ntype = \"isolate\"\nnode = \"res\"\nduration = \"1s\"");
        assert!(
            e.contains("fault #1 (isolate)") && e.contains("res is neither"),
            "{e}"
        );
        let e = err("[[fault]]\nat = \"1s\"\ntype = \"drop_replies\"\nclients = [\"n1\"]\nservers = [\"n1\"]\nduration = \"1s\"");
        assert!(e.contains("n1 is no client"), "{e}");
        let e = err("[[fault]]\nafter = { node = \"c1\", event = \"gives up\" }\ntype = \"pause\"\nnode = \"c1\"\nduration = \"1s\"");
        assert!(e.contains("never record `gives up`"), "{e}");
        let e = err("[[fault]]\nafter = { node = \"n1\", event = \"leader elected\" }\ntype = \"pause\"\nnode = \"c1\"\nduration = \"1s\"");
        assert!(e.contains("sentinel = true"), "{e}");
        let s = crate::sim::Scenario::new(1).servers(3).sentinel(0);
        assert!(s.validate().unwrap_err().contains("down_after"));
    }
}
