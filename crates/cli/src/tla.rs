//! `locksim export-tla`: a trace as a TLA+ behaviour for TLC to validate against the specs.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use locksim_core::Trace;
use locksim_explore::tla::export;
use locksim_explore::tla_files;

use crate::exit::Exit;
use crate::out;

pub const EXPORT_LONG_ABOUT: &str = "\
Write a trace as a TLA+ behaviour that TLC checks against the specification of its algorithm \
(trace validation, after Cirstea, Kuppe, Loillier and Merz, 2024).

The run's observable events — acquire, release and write operations with their outcomes, the \
servers' grants, the resource's accepted and rejected writes, renewals, give-ups, pauses, clock \
steps, crashes and restarts — become a sequence of records (times in microseconds) in a module that \
extends tla/CentralTrace.tla (central, central-fencing) or tla/RedlockTrace.tla (redlock). Each \
record must be explained by one step of the specification; the steps the trace does not show \
(time passing, refusals, lost messages, the unlock round, the client's validity check) may \
happen in between. Two files are written: FILE.tla and FILE.cfg (the constants: clients, \
servers, TTL and drift allowance in microseconds, the clocks and persistence settings). Every \
acquire ok carries the grant's validity deadline on the client's clock (a renewing client's too), \
and each renewal's ok the new deadline it gives the grant, measured from the renewal's send; TLC \
checks each against the specification's.

Check the result with TLC (tla/check.sh does this for every trace in traces/):
  java -DTLA-Library=tla -cp tla2tools.jar tlc2.TLC -deadlock -workers 1 -config FILE.cfg FILE.tla
Exit 12 with \"Invariant TraceNotAccepted is violated\" means the whole trace is a behaviour of \
the specification (accepted); exit 0 means no behaviour explains it (rejected), and the last \
\"matched\" line TLC printed says how many steps the specification could follow.

Traces without embedded events are re-run to get them (the digest must match). Not modelled, \
so refused with a message: lease renewal in Redlock (renew_every), a renewal with an unknown \
outcome (which the client retries), renew_deadline, step_down, per-client settings, pauses of one \
task of a client, several keys, clock drift, pauses of servers, Redlock's delayed restart. Exit 0 when written, 2 on a bad or unsupported trace.";

pub const EXPORT_AFTER_HELP_TEXT: &str = "\
Examples:
  locksim export-tla traces/k5-redlock-s1-b51f2c63.json
      writes Trace_k5_redlock_s1_b51f2c63.tla and .cfg in the current directory
  locksim export-tla traces/central-s2-5f7972d4.json -o /tmp/tv/CentralS2.tla
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
    /// Replace FILE.tla or FILE.cfg even when it is not a file `locksim export-tla` wrote (by
    /// default such a file, e.g. a hand-written specification, is kept and nothing is written).
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    memory: crate::args::MemoryArgs,
}

pub fn export_main(a: ExportArgs) -> Result<ExitCode, String> {
    let (output, module, cfg) = tla_files::targets(&a.trace, a.output.as_deref())?;
    tla_files::check_target(&output, a.force)?;
    tla_files::check_target(&cfg, a.force)?;
    let trace = Trace::read(&a.trace).map_err(|e| e.to_string())?;
    if trace.events.is_none() {
        a.memory.check(&trace.scenario)?;
    }
    let trace = tla_files::with_events(trace, &a.trace, &|n| eprintln!("{n}"))?;
    let source = a.trace.display().to_string();
    let ex = export(&trace, &source, &module).map_err(|e| format!("{}: {e}", a.trace.display()))?;
    tla_files::write_atomic(&output, &ex.module)?;
    tla_files::write_atomic(&cfg, &ex.cfg)?;
    out(&format!(
        "{}: {} events -> {} steps for {}; wrote {} and {}\n",
        a.trace.display(),
        ex.events,
        ex.steps,
        ex.spec.module(),
        output.display(),
        cfg.display()
    ));
    Ok(ExitCode::from(Exit::CLEAN))
}
