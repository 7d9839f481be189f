//! The commands a failing test prints: `cargo test` of exactly this test, with the variables
//! that re-run its failing seed or replay and draw its trace. Built from what cargo tells the
//! test process: the test's name (libtest names each test's thread after the test's path),
//! the package (`CARGO_MANIFEST_DIR`, `CARGO_PKG_NAME`) and the test binary's path (its target
//! and profile).

use std::path::{Path, PathBuf};

/// Where this test runs, as cargo started it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestInvocation {
    /// The test's path, e.g. `tests::my_lock_is_safe` (`None` outside libtest's threads).
    pub name: Option<String>,
    /// The package's folder, absolute (`None` when not run by cargo). The commands `cd` there
    /// first: cargo reads `.cargo/config.toml` (the `--cfg madsim` flag) from the folder it
    /// runs in and its parents, not from the manifest's.
    pub package_dir: Option<PathBuf>,
    /// Cargo's target selector: `--test NAME`, `--lib`, or none (cargo then runs every target
    /// with the filter).
    pub target: Option<String>,
    /// `--release` or `--profile NAME` when the binary was not built in the dev profile.
    pub profile: Option<String>,
}

/// Text safe to paste into a POSIX shell: as is when it has no special characters, else in
/// single quotes.
pub fn shell_quote(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

impl TestInvocation {
    /// This process's invocation: the current thread's name, cargo's variables and the
    /// executable's path.
    pub fn current() -> TestInvocation {
        let name = std::thread::current()
            .name()
            .filter(|n| *n != "main")
            .map(str::to_string);
        let dir = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
        let pkg = std::env::var("CARGO_PKG_NAME").ok();
        let exe = std::env::current_exe().ok();
        TestInvocation::from_parts(name, dir.as_deref(), pkg.as_deref(), exe.as_deref())
    }

    /// [`TestInvocation::current`] from its parts (a test binary is
    /// `target/<profile>/deps/<target>-<hash>`).
    pub fn from_parts(
        name: Option<String>,
        manifest_dir: Option<&Path>,
        package: Option<&str>,
        exe: Option<&Path>,
    ) -> TestInvocation {
        let stem = exe
            .and_then(|e| e.file_name())
            .map(|f| f.to_string_lossy().into_owned())
            .map(|f| match f.rsplit_once('-') {
                Some((s, hash))
                    if hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()) =>
                {
                    s.to_string()
                }
                _ => f,
            });
        let target = match (&stem, manifest_dir) {
            (Some(s), Some(dir)) => {
                let tests = dir.join("tests");
                let named = [s.clone(), s.replace('_', "-")].into_iter().find(|n| {
                    tests.join(format!("{n}.rs")).is_file()
                        || tests.join(n).join("main.rs").is_file()
                });
                match named {
                    Some(n) => Some(format!("--test {}", shell_quote(&n))),
                    None if package.is_some_and(|p| p.replace('-', "_") == *s) => {
                        Some("--lib".into())
                    }
                    None => None,
                }
            }
            _ => None,
        };
        let profile = exe
            .and_then(|e| e.parent())
            .filter(|d| d.file_name().is_some_and(|n| n == "deps"))
            .and_then(|d| d.parent())
            .and_then(|p| p.file_name())
            .map(|p| p.to_string_lossy().into_owned())
            .and_then(|p| match p.as_str() {
                "debug" => None,
                "release" => Some("--release".to_string()),
                other => Some(format!("--profile {}", shell_quote(other))),
            });
        TestInvocation {
            name,
            package_dir: manifest_dir.map(Path::to_path_buf),
            target,
            profile,
        }
    }

    /// `cd PACKAGE && VARS cargo test … -- NAME --exact --include-ignored [extra]`: runs
    /// exactly this test (ignored or not) with `vars` (`KEY=VALUE`, quoted as needed) in its
    /// environment.
    pub fn command(&self, vars: &[(&str, String)], extra: &[&str]) -> String {
        let mut parts: Vec<String> = Vec::new();
        if let Some(d) = &self.package_dir {
            parts.push(format!("cd {} &&", shell_quote(&d.to_string_lossy())));
        }
        parts.extend(vars.iter().map(|(k, v)| format!("{k}={}", shell_quote(v))));
        parts.push("cargo test".into());
        if let Some(p) = &self.profile {
            parts.push(p.clone());
        }
        if let Some(t) = &self.target {
            parts.push(t.clone());
        }
        parts.push("--".into());
        match &self.name {
            Some(n) => {
                parts.push(shell_quote(n));
                parts.push("--exact".into());
            }
            None => parts.push("<the test's name>".into()),
        }
        parts.push("--include-ignored".into());
        parts.extend(extra.iter().map(|s| s.to_string()));
        parts.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_integration_test_in_release() {
        let dir = std::env::temp_dir().join(format!("locksim-cmd-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("tests")).unwrap();
        std::fs::write(dir.join("tests/failing_seed.rs"), "").unwrap();
        let inv = TestInvocation::from_parts(
            Some("m::a_test".into()),
            Some(&dir),
            Some("my-lock"),
            Some(Path::new(
                "/x/target/release/deps/failing_seed-0123456789abcdef",
            )),
        );
        let cmd = inv.command(&[("LOCKSIM_SEED", "5".into())], &[]);
        assert_eq!(
            cmd,
            format!(
                "cd {} && LOCKSIM_SEED=5 cargo test --release --test failing_seed -- m::a_test --exact --include-ignored",
                dir.display()
            )
        );
        let lib = TestInvocation::from_parts(
            None,
            Some(&dir),
            Some("my-lock"),
            Some(Path::new("/x/target/debug/deps/my_lock-0123456789abcdef")),
        );
        assert_eq!(
            (lib.target.as_deref(), lib.profile.as_deref()),
            (Some("--lib"), None)
        );
        assert!(lib.command(&[], &[]).contains("<the test's name>"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("/a/b-c.json"), "/a/b-c.json");
        assert_eq!(shell_quote("/a b/it's"), r"'/a b/it'\''s'");
    }
}
