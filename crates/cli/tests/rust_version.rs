//! The supported Rust version is stated once (the workspace's `rust-version`), every crate
//! inherits it, and it is the strictest `rust-version` among the packages the lockfile
//! resolves (dev-dependencies included: `cargo test` builds them), so the README's "Rust 1.x or
//! newer" is true of a clone's `cargo test`.

use std::path::Path;
use std::process::Command;

fn version(v: &str) -> Vec<u64> {
    let mut parts: Vec<u64> = v.split('.').map(|p| p.parse().expect("a number")).collect();
    parts.resize(3, 0);
    parts
}

#[test]
fn every_crate_inherits_the_rust_version_of_the_lockfiles_strictest_dependency() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // Not `--offline`: the resolve covers every platform's packages (windows-only ones too),
    // which a fresh machine's `cargo build` never downloads; crates.io fetches them.
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--locked"])
        .current_dir(&root)
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let members: Vec<&str> = m["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let resolved: Vec<&str> = m["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    let root_toml = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let declared = root_toml
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .expect("[workspace.package] rust-version")
        .trim_matches('"')
        .to_string();
    let (mut strictest, mut by) = (vec![0, 0, 0], String::new());
    for p in m["packages"].as_array().unwrap() {
        let id = p["id"].as_str().unwrap();
        let name = p["name"].as_str().unwrap();
        if members.contains(&id) {
            let manifest = std::fs::read_to_string(p["manifest_path"].as_str().unwrap()).unwrap();
            assert!(
                manifest.contains("rust-version.workspace = true"),
                "{name} does not inherit the workspace's rust-version"
            );
            assert_eq!(
                p["rust_version"].as_str(),
                Some(declared.as_str()),
                "{name}"
            );
        } else if let (true, Some(v)) = (resolved.contains(&id), p["rust_version"].as_str()) {
            if version(v) > strictest {
                (strictest, by) = (version(v), format!("{name} {}", p["version"]));
            }
        }
    }
    assert_eq!(
        version(&declared),
        strictest,
        "the workspace says rust-version {declared}, but the lockfile's strictest dependency, {by}, needs {strictest:?}"
    );
    // The example third-party crate and the Docker image state the same version.
    let example = std::fs::read_to_string(root.join("examples/custom-lock/Cargo.toml")).unwrap();
    assert!(
        example.contains(&format!("rust-version = \"{declared}\"")),
        "examples/custom-lock"
    );
    let docker = std::fs::read_to_string(root.join("Dockerfile")).unwrap();
    assert!(
        docker.contains(&format!("FROM rust:{declared}-")),
        "Dockerfile"
    );
}
