//! `locksim`: run lock algorithms under a seeded simulator that injects real faults, and see
//! which ones grant the same lock twice.

mod campaign;
mod run;
mod timeline;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

const ABOUT: &str = "Deterministic simulation of distributed lock algorithms under faults.";

const LONG_ABOUT: &str = "\
Deterministic simulation of distributed lock algorithms under faults.

locksim runs a lock algorithm (a single server, Redlock, ...) inside a simulated cluster where \
clients take the lock, do some work and write to a protected resource, while a nemesis \
partitions the network, pauses processes, steps and skews clocks and crashes servers. \
Every run is fixed by its seed: the same seed gives the same run, event for event.

Two safety properties are checked on every run:
  S1  mutual exclusion: no two clients hold the same lock at the same true time
  S2  resource safety: the resource never accepts a write from an older grant after a
      write from a newer one (what fencing tokens are for)";

const AFTER_HELP: &str = "\
Examples:
  locksim campaign                                  the default matrix, a few hundred seeds per cell
  locksim campaign --algo redlock --faults pause --seeds 1000
  locksim run --algo redlock --seed 42 --faults pause
  locksim run --algo central --seed 7 --faults clock-jump --set clock=mono --set ttl=2s
  locksim list                                      algorithms, their settings, fault kinds";

#[derive(Parser)]
#[command(name = "locksim", version, about = ABOUT, long_about = LONG_ABOUT, after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one seed and print the verdict and a timeline of what happened.
    Run(run::RunArgs),
    /// Run an algorithm × fault-kind matrix over many seeds and print a table.
    Campaign(campaign::CampaignArgs),
    /// List the algorithms with their settings, the workload settings and the fault kinds.
    List,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(a) => run::main(a),
        Command::Campaign(a) => campaign::main(a),
        Command::List => {
            list();
            Ok(ExitCode::SUCCESS)
        }
    };
    match result {
        Ok(code) => code,
        Err(msg) => {
            eprintln!("error: {msg}");
            ExitCode::from(2)
        }
    }
}

fn list() {
    println!("Algorithms (--algo NAME) and their settings (--set key=value):");
    for (name, what) in locksim_algos::ALGORITHMS {
        println!("  {name:<16} {what}");
        for k in locksim_algos::knobs(name).unwrap_or(&[]) {
            println!("      {:<16} {} (default {})", k.key, k.help, k.default);
        }
    }
    println!("\nWorkload settings (--set key=value, any algorithm):");
    for (k, help) in locksim_explore::setup::WORKLOAD_KNOBS {
        println!("  {k:<16} {help}");
    }
    println!("\nFault kinds (--faults KIND[,KIND]):");
    for k in locksim_core::FaultKind::ALL {
        println!("  {k}");
    }
}

/// Parses `--set` values and builds each algorithm's setup.
fn setups(algos: &[String], sets: &[String]) -> Result<Vec<locksim_explore::Setup>, String> {
    let settings = sets
        .iter()
        .map(|s| locksim_explore::parse_setting(s))
        .collect::<Result<Vec<_>, _>>()?;
    algos
        .iter()
        .map(|a| locksim_explore::Setup::registered(a, &settings))
        .collect()
}
