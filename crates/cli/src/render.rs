//! `locksim render`: a trace as one self-contained HTML page (a space-time diagram).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use locksim_core::Trace;
use locksim_explore::page::draw;
pub use locksim_explore::page::{check_page_target, write_page};

use crate::exit::Exit;
use crate::out;

#[derive(Args)]
pub struct RenderArgs {
    /// The trace to draw, e.g. traces/k5-redlock-s1-b51f2c63.json (written by `locksim shrink`).
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
    let out_path = locksim_explore::page::page_path(&a.trace, a.out.as_deref())?;
    check_page_target(&out_path, a.force)?;
    if !a.no_rerun {
        a.memory.check(&trace.scenario)?;
    }
    let drawn = draw(&trace, &a.trace, None, a.no_rerun)?;
    write_page(&out_path, &drawn.html, a.force)?;
    if a.json {
        out(&format!("{}\n", drawn.json(&trace, &a.trace, &out_path)));
    } else {
        // The banner's note is said once, by the error line below.
        for n in drawn.notes.iter().filter(|_| drawn.rerun_error.is_none()) {
            eprintln!("{n}");
        }
        out(&drawn.text(&trace, &out_path));
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
    Ok(ExitCode::from(if drawn.mismatch {
        Exit::VIOLATION
    } else {
        Exit::CLEAN
    }))
}
