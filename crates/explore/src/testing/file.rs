//! A campaign file (`sims/*.toml`) as a test: the file's algorithm (built-in, or one of your
//! own made known with [`locksim_algos::register`]), settings, `[[fault]]` plan, per-client
//! tables, seeds and `expect`/`forbid`, judged as `locksim campaign FILE` judges it.

use std::ops::Range;
use std::path::{Path, PathBuf};

use locksim_core::text::plural;
use locksim_core::Trace;

use super::command::{shell_quote, TestInvocation};
use super::knobs::Knobs;
use super::{
    assert_deterministic, first_violation_of, note_unrecorded_grants, replay_trace,
    shrink_and_write, violation_counts,
};
use crate::campaign::{run_campaign, CellSummary};
use crate::campaign_file::CampaignFile;
use crate::setup::Setup;

/// A campaign file in a test, for an algorithm known by name:
///
/// ```no_run
/// use locksim_explore::testing::FileCampaign;
///
/// #[test]
/// fn a_paused_holder() {
///     // Your algorithms by name (a no-op when another test already registered them).
///     locksim_explore::algos::register(my_lock::registrations()).unwrap();
///     FileCampaign::read("sims/my-lock-pause.toml")
///         .binary("my-locksim") // the failure message's commands run your own locksim
///         .check();
/// }
/// # mod my_lock { pub fn registrations() -> Vec<locksim_explore::algos::Registration> { vec![] } }
/// ```
///
/// [`FileCampaign::check`] runs the file's seeds (`LOCKSIM_SEED`/`LOCKSIM_SEEDS` replace them,
/// `LOCKSIM_JOBS`, `LOCKSIM_CHECK_DETERMINISM`, `LOCKSIM_TRACES` and `LOCKSIM_REPLAY` work as
/// for [`super::Campaign`]) and panics unless the file's expectation holds. The expectation is
/// the file's: every `expect` property violated by some seed, no `forbid` property violated or
/// undecided, no seed failing to run, some grant, and faults that took effect; properties the
/// file names in neither list may go either way (unlike [`super::Campaign`], where they are
/// forbidden). On a forbidden violation it shrinks the first failing seed, writes its trace
/// and prints the commands of your binary that run, shrink and draw it.
#[derive(Debug, Clone)]
pub struct FileCampaign {
    file: CampaignFile,
    /// The TOML text when it came from [`FileCampaign::parse`] (written beside the traces on
    /// failure, so that the printed commands have a file to read).
    text: Option<String>,
    binary: Option<String>,
    jobs: Option<usize>,
}

impl FileCampaign {
    /// Reads the campaign file at `path` (relative paths are from the package's folder, where
    /// `cargo test` runs a test).
    ///
    /// # Panics
    /// When the file cannot be read or parsed (the message names the file, the line or fault
    /// and the field), e.g. an algorithm name that nothing registered.
    pub fn read(path: impl AsRef<Path>) -> FileCampaign {
        let path = path.as_ref();
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let file = CampaignFile::read(&path).unwrap_or_else(|e| panic!("locksim: {e}"));
        FileCampaign {
            file,
            text: None,
            binary: None,
            jobs: None,
        }
    }

    /// Parses `toml`, a campaign file's text; `name` stands for its path in errors and, on a
    /// failure, names the copy written beside the traces (`NAME-<hash>.toml`).
    ///
    /// # Panics
    /// As [`FileCampaign::read`].
    pub fn parse(name: &str, toml: &str) -> FileCampaign {
        let file =
            CampaignFile::parse(Path::new(name), toml).unwrap_or_else(|e| panic!("locksim: {e}"));
        FileCampaign {
            file,
            text: Some(toml.to_string()),
            binary: None,
            jobs: None,
        }
    }

    /// The name of your crate's binary that runs `locksim_cli::main_with` (a `[[bin]]` of the
    /// test's package): the failure message then prints `cargo run --bin NAME -- run …`,
    /// `… shrink …` and `… render …` for the failing seed. Without it, only a file of a
    /// built-in algorithm gets such commands (of `locksim`).
    pub fn binary(mut self, name: &str) -> Self {
        self.binary = Some(name.to_string());
        self
    }

    /// Worker threads (default: every core; `LOCKSIM_JOBS` overrides both).
    pub fn jobs(mut self, n: usize) -> Self {
        self.jobs = Some(n.max(1));
        self
    }

    /// Runs the file's campaign and judges it by the file's expectation (see the type's
    /// documentation).
    ///
    /// # Panics
    /// When the expectation fails; on a malformed variable or a setting that does not build.
    pub fn check(mut self) {
        let knobs =
            Knobs::read(&|k| std::env::var(k).ok()).unwrap_or_else(|e| panic!("locksim: {e}"));
        let jobs = knobs.jobs_or(self.jobs);
        let mut spec = self
            .file
            .spec(jobs)
            .unwrap_or_else(|e| panic!("locksim: {}: {e}", self.file.path.display()));
        if let Some(trace) = &knobs.replay {
            let t = Trace::read(trace).unwrap_or_else(|e| panic!("locksim: LOCKSIM_REPLAY: {e}"));
            let setup = Setup::from_scenario(&t.scenario)
                .unwrap_or_else(|e| panic!("locksim: LOCKSIM_REPLAY: {}: {e}", trace.display()));
            replay_trace(setup.algo, trace, knobs.render.as_deref());
            return;
        }
        let seeds =
            knobs.seeds_for(&(self.file.first_seed..self.file.first_seed + self.file.seeds));
        assert!(
            !seeds.is_empty(),
            "locksim: the seed range {seeds:?} is empty"
        );
        (spec.first_seed, spec.seeds) = (seeds.start, seeds.end - seeds.start);
        (self.file.first_seed, self.file.seeds) = (spec.first_seed, spec.seeds);
        let invocation = TestInvocation::current();
        let label = format!("{} ({})", self.file.name, self.file.path.display());
        if knobs.check_determinism {
            assert_deterministic(
                &spec.setups,
                &spec.kinds,
                &seeds,
                jobs,
                &format!("{label}: {}", self.file.algorithm),
                &invocation,
            );
        }
        let cells = run_campaign(&spec, &|_, _| {});
        eprintln!("locksim: {label}: {}", summary(&self.file, &cells, &seeds));
        note_unrecorded_grants(&cells, &self.file.algorithm);
        let problems = self.file.judge(&cells);
        if problems.is_empty() {
            return;
        }
        // The seed to show: the first forbidden violation, else the first seed that failed to
        // run, else the first left undecided, else the file's first seed (an expectation that
        // never came true).
        let forbidden = first_violation_of(&cells, &self.file.forbid);
        let errored = cells
            .iter()
            .filter_map(|c| c.first_error_seed.map(|s| (s, c.faults)))
            .min();
        let undecided = cells
            .iter()
            .filter_map(|c| c.first_undecided_seed.map(|s| (s, c.faults)))
            .min();
        let (seed, kind) = match (forbidden, errored.or(undecided)) {
            (Some((s, _, k)), _) | (None, Some((s, k))) => (s, k),
            (None, None) => (seeds.start, spec.kinds[0]),
        };
        // Absolute, so that the printed commands work from any folder.
        let dir = knobs.traces_dir();
        let dir = std::path::absolute(&dir).unwrap_or(dir);
        let mut lines = vec![format!(
            "  test:     {}",
            invocation.name.as_deref().unwrap_or("?")
        )];
        lines.push(format!(
            "  rerun:    {}",
            invocation.command(&knobs.rerun_vars(seed), &[])
        ));
        let cli = self.cli(&invocation);
        let file_path = match self.file_for_commands(&dir) {
            Ok(p) => Some(p),
            Err(e) => {
                lines.push(format!("  (no file for the commands below: {e})"));
                None
            }
        };
        let run_args = file_path.as_ref().map(|f| {
            let stem = f.file_stem().map_or("run".into(), |s| s.to_string_lossy());
            let page = dir.join(format!("{stem}-seed{seed}.html"));
            format!(
                "run {} --faults {} --seed {seed} --html {}",
                shell_quote(&f.to_string_lossy()),
                kind.name(),
                shell_quote(&page.to_string_lossy())
            )
        });
        if let (Some(args), Some(cmd)) = (&run_args, &cli) {
            lines.push(format!("  run:      {cmd} {args}"));
        }
        if let Some((_, property, _)) = forbidden {
            let setup = &spec.setups[0];
            let scenario = setup.scenario(seed, &[kind]);
            match shrink_and_write(&scenario, setup.algo.clone(), property, &dir) {
                Ok((path, n, digest)) => {
                    lines.insert(
                        1,
                        format!(
                            "  trace:    {} (shrunk to {}; digest {digest})",
                            path.display(),
                            plural(n as u64, "fault")
                        ),
                    );
                    if let Some(cmd) = &cli {
                        let page = path.with_extension("html");
                        lines.push(format!(
                            "  render:   {cmd} render {} -o {}",
                            shell_quote(&path.to_string_lossy()),
                            shell_quote(&page.to_string_lossy())
                        ));
                    }
                }
                Err(e) => lines.push(format!("  (shrinking failed: {e})")),
            }
            if let (Some(f), Some(cmd)) = (&file_path, &cli) {
                lines.push(format!(
                    "  shrink:   {cmd} shrink {} --faults {} --seed {seed} --kind {property} --out-dir {}",
                    shell_quote(&f.to_string_lossy()),
                    kind.name(),
                    shell_quote(&dir.to_string_lossy())
                ));
            }
        }
        if cli.is_none() {
            lines.push(format!(
                "  (`{}` is your own algorithm: name your crate's binary with .binary(\"NAME\") to get the commands that run, shrink and draw this seed)",
                self.file.algorithm
            ));
        }
        panic!(
            "locksim: {label} failed its expectation at seed {seed} under {}: {}\n{}",
            kind.name(),
            problems.join("; "),
            lines.join("\n")
        );
    }

    /// The command prefix that runs a locksim with this file's algorithm: the user's binary
    /// through cargo in the test's package, or `locksim` for a built-in algorithm.
    fn cli(&self, inv: &TestInvocation) -> Option<String> {
        match &self.binary {
            Some(bin) => {
                let mut parts = Vec::new();
                if let Some(d) = &inv.package_dir {
                    parts.push(format!("cd {} &&", shell_quote(&d.to_string_lossy())));
                }
                parts.push("cargo run -q".to_string());
                if let Some(p) = &inv.profile {
                    parts.push(p.clone());
                }
                parts.push(format!("--bin {} --", shell_quote(bin)));
                Some(parts.join(" "))
            }
            None => locksim_algos::ALGORITHMS
                .iter()
                .any(|a| a.0 == self.file.algorithm)
                .then(|| "locksim".to_string()),
        }
    }

    /// The file the printed commands read: the one read, or (for [`FileCampaign::parse`]) the
    /// text written into `dir` (absolute) as `NAME-<hash>.toml`, kept if already there.
    fn file_for_commands(&self, dir: &Path) -> Result<PathBuf, String> {
        let Some(text) = &self.text else {
            return Ok(self.file.path.clone());
        };
        let stem = Path::new(&self.file.path)
            .file_stem()
            .map_or("campaign".to_string(), |s| s.to_string_lossy().into_owned());
        let hash = xxhash_rust::xxh3::xxh3_64(text.as_bytes());
        let path = dir.join(format!("{stem}-{:08x}.toml", hash >> 32));
        match std::fs::read_to_string(&path) {
            Ok(old) if old == *text => return Ok(path),
            Ok(_) => return Err(format!("{} holds another file", path.display())),
            Err(_) => {}
        }
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(path)
    }
}

/// One line of counts: grants, and per property its seeds and role in the file.
fn summary(file: &CampaignFile, cells: &[CellSummary], seeds: &Range<u64>) -> String {
    let grants: u64 = cells.iter().map(|c| c.grants).sum();
    let counts = violation_counts(cells, &|p| {
        if file.expect.contains(&p) {
            " (expected)"
        } else if file.forbid.contains(&p) {
            " (forbidden)"
        } else {
            ""
        }
    });
    format!(
        "{}, seeds {}..{} × {}: {grants} grants; violations by seed: {counts}",
        file.algorithm,
        seeds.start,
        seeds.end,
        plural(cells.len() as u64, "cell"),
    )
}
