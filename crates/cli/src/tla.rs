//! `locksim export-tla`: a trace as a TLA+ behaviour for TLC to validate against the specs.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use locksim_core::Trace;
use locksim_explore::replay::replay;
use locksim_explore::tla::{export, module_name_for, valid_module_name};

use crate::out;

pub const EXPORT_LONG_ABOUT: &str = "\
Write a trace as a TLA+ behaviour that TLC checks against the specification of its algorithm \
(trace validation, after Cirstea, Kuppe, Loillier and Merz, 2024).

The run's observable events — acquire, release and write operations with their outcomes, the \
servers' grants, the resource's accepted and rejected writes, give-ups, pauses, clock steps, \
crashes and restarts — become a sequence of records (times in microseconds) in a module that \
extends tla/CentralTrace.tla (central, central-fencing) or tla/RedlockTrace.tla (redlock). Each \
record must be explained by one step of the specification; the steps the trace does not show \
(time passing, refusals, lost messages, the unlock round, the client's validity check) may \
happen in between. Two files are written: FILE.tla and FILE.cfg (the constants: clients, \
servers, TTL and drift allowance in microseconds, the clocks and persistence settings).

Check the result with TLC (tla/check.sh does this for every trace in traces/):
  java -DTLA-Library=tla -cp tla2tools.jar tlc2.TLC -deadlock -workers 1 -config FILE.cfg FILE.tla
Exit 12 with \"Invariant TraceNotAccepted is violated\" means the whole trace is a behaviour of \
the specification (accepted); exit 0 means no behaviour explains it (rejected), and the last \
\"matched\" line TLC printed says how many steps the specification could follow.

Traces without embedded events are re-run to get them (the digest must match). Not modelled, \
so refused with a message: lease renewal in Redlock (renew_every), several keys, clock drift, pauses of \
servers, Redlock's delayed restart. Exit 0 when written, 2 on a bad or unsupported trace.";

pub const EXPORT_AFTER_HELP_TEXT: &str = "\
Examples:
  locksim export-tla traces/k5-redlock-s1-f4f49b23.json
      writes Trace_k5_redlock_s1_f4f49b23.tla and .cfg in the current directory
  locksim export-tla traces/central-s2-0f3b8de2.json -o /tmp/tv/CentralS2.tla
  tla/check.sh traces                       export and validate every trace in traces/";

#[derive(Args)]
pub struct ExportArgs {
    /// The trace to export (a locksim trace file, as written by `locksim shrink`).
    #[arg(value_name = "TRACE")]
    trace: PathBuf,
    /// The module to write, FILE.tla (FILE.cfg is written beside it). Its file name is the
    /// module's name, so it must be letters, digits and `_`. [default: Trace_<trace name>.tla]
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
}

/// Writes `text` to `path` through a temporary file and a rename, so that a failure never
/// leaves half a file (and never touches an existing one).
fn write_atomic(path: &Path, text: &str) -> Result<(), String> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot write {}: {e}", path.display())
    })
}

pub fn export_main(a: ExportArgs) -> Result<ExitCode, String> {
    let output = match &a.output {
        Some(o) => o.clone(),
        None => PathBuf::from(format!("{}.tla", module_name_for(&a.trace))),
    };
    if output.extension().and_then(|e| e.to_str()) != Some("tla") {
        return Err(format!(
            "-o {}: the module's file must end in .tla",
            output.display()
        ));
    }
    let module = output
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default()
        .to_string();
    if !valid_module_name(&module) {
        return Err(format!(
            "-o {}: `{module}` cannot be a TLA+ module name (use letters, digits and _)",
            output.display()
        ));
    }
    let mut trace = Trace::read(&a.trace).map_err(|e| e.to_string())?;
    if trace.events.is_none() {
        eprintln!(
            "{}: no embedded events; re-running the scenario",
            a.trace.display()
        );
        let r = replay(&trace).map_err(|e| format!("{}: {e}", a.trace.display()))?;
        if !r.digest_matches {
            return Err(format!(
                "{}: the re-run's digest {} differs from the trace's {}: the trace does not describe this locksim's run",
                a.trace.display(),
                r.digest,
                trace.digest
            ));
        }
        trace.events = r.outcome.history.map(|h| h.events);
    }
    let source = a.trace.display().to_string();
    let ex = export(&trace, &source, &module).map_err(|e| format!("{}: {e}", a.trace.display()))?;
    write_atomic(&output, &ex.module)?;
    let cfg = output.with_extension("cfg");
    write_atomic(&cfg, &ex.cfg)?;
    out(&format!(
        "{}: {} events -> {} steps for {}; wrote {} and {}\n",
        a.trace.display(),
        ex.events,
        ex.steps,
        ex.spec.module(),
        output.display(),
        cfg.display()
    ));
    Ok(ExitCode::SUCCESS)
}
