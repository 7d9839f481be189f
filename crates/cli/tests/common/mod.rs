//! What every CLI test file needs: running the `locksim` binary under test and reading its
//! output. (`tests/common/` is a module, not a test binary: each test file says `mod common;`.)
#![allow(dead_code)] // each test file uses some of these

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `locksim ARGS` and waits for it. A Kubernetes Indexed Job's shard variables are
/// removed, so a test run inside such a Job still sees an unsharded `locksim`.
pub fn locksim(args: &[&str]) -> Output {
    locksim_env(args, &[])
}

/// Runs `locksim ARGS` with the extra environment `env`.
pub fn locksim_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_locksim"));
    c.args(args)
        .env_remove("JOB_COMPLETION_INDEX")
        .env_remove("JOB_COMPLETIONS");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("locksim runs")
}

/// Bytes as text (lossy).
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A run's standard output.
pub fn stdout(o: &Output) -> String {
    text(&o.stdout)
}

/// A run's standard error.
pub fn stderr(o: &Output) -> String {
    text(&o.stderr)
}

/// A fresh folder `locksim-FILE-NAME-PID` in the temporary directory for one test of test
/// file `file` (removed first if an earlier run left it).
pub fn scratch(file: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("locksim-{file}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A path as an argument.
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Asserts a refusal of bad input: exit 2, one line on stderr holding every needle, nothing on
/// stdout.
pub fn refused(o: &Output, needles: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}{}", stdout(o));
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    for n in needles {
        assert!(err.contains(n), "`{n}` missing from: {err}");
    }
    assert!(o.stdout.is_empty(), "printed to stdout on error");
}

/// The path of trace `name` in the regression corpus (`traces/`).
pub fn corpus(name: &str) -> String {
    format!("{}/../../traces/{name}", env!("CARGO_MANIFEST_DIR"))
}
