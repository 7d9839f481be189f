//! `locksim list`: the reference ([`locksim_explore::reference`]) as text, as JSON
//! (`--json`) or as the Markdown reference page (`--markdown`, docs/reference.md); a test
//! compares the committed page with the command's output.

use std::process::ExitCode;

use locksim_explore::reference::{self, Client, Sources};
use serde_json::Value;

use crate::exit::Exit;
use crate::out;

#[derive(clap::Args)]
pub(crate) struct ListArgs {
    /// Print one JSON object: `{"algorithms":[{"name","what","settings":[{"key","help",
    /// "default","real"?}]}],"workload":[{"key","help"}],"fault_shape":[{"key","help"}],
    /// "client":[{"key","help"}],"faults":[…],
    /// "fault_types":[{"type","fields":[…],"help"}],"properties":[…],
    /// "clients":[{"name","library","package","version","language","algorithm":[…]}]}`.
    #[arg(long, conflicts_with = "markdown")]
    json: bool,
    /// Print the reference as one Markdown page (docs/reference.md is its output): every
    /// algorithm and its settings, the fault kinds and types, triggers and their events, the
    /// properties, the exit codes, the real-mode clients and the shapes of the main --json
    /// outputs (read from sample runs of this program, a second or two).
    #[arg(long)]
    markdown: bool,
}

/// `locksim list`.
pub(crate) fn main(a: ListArgs) -> Result<ExitCode, String> {
    if a.json {
        out(&format!("{}\n", reference::json(&sources())));
    } else if a.markdown {
        out(&reference::markdown(&sources())?);
    } else {
        out(&reference::text(&sources()));
    }
    Ok(ExitCode::from(Exit::CLEAN))
}

/// The reference's inputs from this crate and from real mode.
fn sources() -> Sources<'static> {
    Sources {
        program: crate::program(),
        clients: locksim_real::adapter::SHIPPED
            .iter()
            .map(|a| Client {
                name: a.name,
                library: a.library,
                package: a.package,
                version: a.version,
                language: a.language,
                algorithms: a.algorithms,
            })
            .collect(),
        real_note: &real_note,
        sample: &sample,
    }
}

/// What real mode (`locksim real`) does not run of `algo`'s knob `key`, and why: `refused
/// <values>: <why>`, the words of its refusal; `None` when it runs every value.
fn real_note(algo: &str, key: &str) -> Option<String> {
    locksim_real::support::refused(algo, key).map(|r| format!("refused {}: {}", r.values, r.why))
}

/// Runs this program with `args` and reads the JSON it prints on its first line.
fn sample(args: &[&str]) -> Result<Value, String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("list --markdown: cannot find this program to sample: {e}"))?;
    let o = std::process::Command::new(&exe)
        .args(args)
        .env_remove("JOB_COMPLETION_INDEX")
        .env_remove("JOB_COMPLETIONS")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("list --markdown: cannot run {}: {e}", exe.display()))?;
    let stdout = String::from_utf8_lossy(&o.stdout);
    serde_json::from_str(stdout.lines().next().unwrap_or("")).map_err(|e| {
        format!(
            "list --markdown: `{} {}` printed no JSON ({e}; {}): {}",
            crate::program(),
            args.join(" "),
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        )
    })
}
