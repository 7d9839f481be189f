//! The `locksim` binary: the command line of [`locksim_cli`] with the built-in algorithms.

use std::process::ExitCode;

fn main() -> ExitCode {
    locksim_cli::main_with(Vec::new())
}
