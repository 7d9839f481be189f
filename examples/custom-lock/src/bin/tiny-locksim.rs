//! This crate's own `locksim`: every subcommand, with `tiny-lease` and `tiny-lease-careless`
//! beside the built-in algorithms (`tiny-locksim list`, `tiny-locksim run --algo tiny-lease
//! --seed 1`, `tiny-locksim campaign sims/`).

use std::process::ExitCode;

fn main() -> ExitCode {
    locksim_cli::main_with(custom_lock::registrations())
}
