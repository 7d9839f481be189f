//! The failure message's two commands, copied from the output, must work as printed: the
//! rerun command fails again on the same seed with the same shrunk trace (same digest), and
//! the render command replays the trace with this crate's algorithm (digest as recorded) and
//! writes its page.

use std::path::Path;
use std::process::Command;

/// Runs `sh -c COMMAND` with `LOCKSIM_TRACES` pointing at `traces`; returns (success, output).
fn sh(command: &str, traces: &Path) -> (bool, String) {
    let out = Command::new("sh")
        .arg("-c")
        .arg(command)
        .env("LOCKSIM_TRACES", traces)
        // The outer `cargo test` sets these for this process; a user's shell has none of them.
        .env_remove("LOCKSIM_SEED")
        .env_remove("LOCKSIM_REPLAY")
        .env_remove("LOCKSIM_RENDER")
        .output()
        .expect("sh runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// The text after `label` on the line that starts with it (after the indentation).
fn line<'a>(output: &'a str, label: &str) -> &'a str {
    output
        .lines()
        .find_map(|l| l.trim_start().strip_prefix(label))
        .map(str::trim)
        .unwrap_or_else(|| panic!("no `{label}` line in:\n{output}"))
}

#[test]
fn the_failure_message_commands_run_as_printed_and_reproduce_the_digest() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("commands-test");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let traces = dir.join("traces");

    // 1. The failing test, as CI or a user would run it.
    let first = format!(
        "cd {} && cargo test --test failing_seed -- --include-ignored",
        env!("CARGO_MANIFEST_DIR")
    );
    let (ok, output) = sh(&first, &traces);
    assert!(!ok, "the deliberately failing test passed:\n{output}");
    let headline = output
        .lines()
        .find(|l| l.contains("locksim: tiny-lease-careless violates S1"))
        .unwrap_or_else(|| panic!("no violation line in:\n{output}"))
        .trim()
        .to_string();
    assert_eq!(
        line(&output, "test:"),
        "careless_clients_never_double_grant"
    );
    let trace_line = line(&output, "trace:").to_string();
    let (trace_path, rest) = trace_line.split_once(' ').expect("path and details");
    let digest = rest
        .split("digest ")
        .nth(1)
        .and_then(|d| d.strip_suffix(')'))
        .expect("the trace's digest")
        .to_string();
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(trace_path).unwrap()).unwrap();
    assert_eq!(
        trace["digest"],
        digest.as_str(),
        "the printed digest is the trace's"
    );
    let rerun = line(&output, "rerun:").to_string();
    let render = line(&output, "render:").to_string();
    assert!(rerun.contains("LOCKSIM_SEED="), "{rerun}");
    assert!(
        rerun.contains("-- careless_clients_never_double_grant --exact"),
        "{rerun}"
    );

    // 2. The rerun command, copied: the same seed fails the same way, shrinking to the same
    //    trace (its name carries the digest).
    let (ok, again) = sh(&rerun, &traces);
    assert!(!ok, "the rerun passed:\n{again}");
    let seed = headline
        .split("with seed ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    assert!(
        again.contains(&format!("with seed {seed} (of {seed}..")),
        "the rerun ran another seed:\n{again}"
    );
    assert_eq!(
        line(&again, "trace:"),
        trace_line,
        "the rerun's trace differs"
    );

    // 3. The render command, copied: the trace re-runs with this crate's algorithm, with the
    //    recorded digest, and its page is written.
    let page = render
        .split("LOCKSIM_RENDER=")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .expect("the page's path")
        .to_string();
    let (ok, drawn) = sh(&render, &traces);
    assert!(ok, "the render command failed:\n{drawn}");
    assert!(
        drawn.contains(&format!("digest {digest} as recorded")),
        "the replay did not reproduce the digest:\n{drawn}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<meta name=\"generator\" content=\"locksim render\">"));
    assert!(
        html.contains(&format!("same event digest ({})", &digest[..8])),
        "the page was not drawn from a matching re-run"
    );
}

/// The scenario-file test's failure (`tests/failing_file.rs`) prints this crate's own binary's
/// commands: `run` exits 1 on the seed and draws it, `shrink` writes the very trace the test
/// wrote, and `render` draws that trace.
#[test]
fn a_failing_file_prints_commands_of_the_crates_own_binary() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("file-commands-test");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let traces = dir.join("traces");
    let first = format!(
        "cd {} && cargo test --test failing_file -- --include-ignored",
        env!("CARGO_MANIFEST_DIR")
    );
    let (ok, output) = sh(&first, &traces);
    assert!(!ok, "the deliberately failing test passed:\n{output}");
    assert!(
        output.contains("careless clients, claimed safe (careless.toml) failed its expectation"),
        "{output}"
    );
    let trace_line = line(&output, "trace:").to_string();
    let (trace_path, _) = trace_line.split_once(' ').expect("path and details");
    let trace_name = Path::new(trace_path).file_name().unwrap().to_owned();

    let run = line(&output, "run:").to_string();
    assert!(
        run.contains("cargo run -q --bin tiny-locksim -- run "),
        "{run}"
    );
    let (ok, ran) = sh(&run, &traces);
    assert!(!ok, "the run command found nothing:\n{ran}");
    assert!(ran.contains("VIOLATED S1"), "{ran}");
    let page = run.split("--html ").nth(1).expect("the page").trim();
    assert!(Path::new(page).is_file(), "no page at {page}:\n{ran}");

    // The CLI's shrinker and the test's agree: the same trace, in the same folder.
    std::fs::remove_file(trace_path).unwrap();
    let shrink = line(&output, "shrink:").to_string();
    let (ok, shrunk) = sh(&shrink, &traces);
    assert!(ok, "the shrink command failed:\n{shrunk}");
    assert!(
        traces.join(&trace_name).is_file(),
        "shrink wrote another trace than the test's {trace_name:?}:\n{shrunk}"
    );

    let render = line(&output, "render:").to_string();
    let (ok, drawn) = sh(&render, &traces);
    assert!(ok, "the render command failed:\n{drawn}");
    let html_path = render.split("-o ").nth(1).expect("the page").trim();
    let html = std::fs::read_to_string(html_path).unwrap();
    assert!(html.contains("<meta name=\"generator\" content=\"locksim render\">"));
}
