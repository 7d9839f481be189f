//! `locksim render`: a trace as one self-contained HTML page (a space-time diagram).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use locksim_core::Trace;
use locksim_explore::page::draw;
pub use locksim_explore::page::{check_page_target, write_page};
use locksim_explore::replay::verdict_kinds;

use crate::exit::Exit;
use crate::out;

#[derive(Args)]
pub struct RenderArgs {
    /// The trace to draw, e.g. traces/k5-redlock-s1-f4f49b23.json (written by `locksim shrink`).
    #[arg(value_name = "TRACE")]
    trace: PathBuf,
    /// Where to write the page [default: the trace's name with .html, in the current folder].
    #[arg(short, long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Draw the events the trace embeds without re-running its scenario (no messages then).
    #[arg(long)]
    no_rerun: bool,
    /// Replace FILE even when it is not a page locksim wrote (by default such a file is kept).
    #[arg(long)]
    force: bool,
    /// Print one JSON object about what was drawn instead of a line of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    memory: crate::args::MemoryArgs,
}

pub fn main(a: RenderArgs) -> Result<ExitCode, String> {
    let trace = Trace::read(&a.trace).map_err(|e| e.to_string())?;
    let out_path = a.out.clone().unwrap_or_else(|| {
        let stem = a
            .trace
            .file_stem()
            .map_or("trace".into(), |s| s.to_string_lossy().into_owned());
        PathBuf::from(format!("{stem}.html"))
    });
    if out_path == a.trace {
        return Err(format!(
            "{}: the page would replace the trace itself; give another -o",
            out_path.display()
        ));
    }
    check_page_target(&out_path, a.force)?;
    if !a.no_rerun {
        a.memory.check(&trace.scenario)?;
    }
    let drawn = draw(&trace, &a.trace, None, a.no_rerun)?;
    write_page(&out_path, &drawn.html, a.force)?;
    if a.json {
        out(&format!(
            "{}\n",
            serde_json::json!({
                "trace": a.trace.display().to_string(),
                "out": out_path.display().to_string(),
                "bytes": drawn.html.len(),
                "events": drawn.events,
                "messages": drawn.messages,
                "rerun": drawn.rerun,
                "matches_trace": !drawn.mismatch,
                "verdict": verdict_kinds(&trace.verdict),
                "notes": drawn.notes,
                "rerun_error": drawn.rerun_error,
            })
        ));
    } else {
        // The banner's note is said once, by the error line below.
        for n in drawn.notes.iter().filter(|_| drawn.rerun_error.is_none()) {
            eprintln!("{n}");
        }
        out(&format!(
            "{}: {} events, {} messages, verdict {} ({} KiB)\n",
            out_path.display(),
            drawn.events,
            drawn.messages,
            verdict_kinds(&trace.verdict),
            drawn.html.len().div_ceil(1024)
        ));
    }
    // A trace that could not be re-run is not checked: exit as `replay` does for it, the
    // page drawn from what it records (under a banner that says so).
    if let Some(e) = &drawn.rerun_error {
        crate::error_line(&format!(
            "{}: cannot re-run it, so it is not checked: {e}; {} shows the events and verdict it records, under a warning banner",
            a.trace.display(),
            out_path.display()
        ));
        return Ok(ExitCode::from(Exit::BAD_INPUT));
    }
    Ok(if drawn.mismatch {
        ExitCode::from(Exit::VIOLATION)
    } else {
        ExitCode::from(Exit::CLEAN)
    })
}
