//! # locksim-explore
//!
//! Exploring many runs: [`setup`] turns an algorithm and settings into scenarios,
//! [`faultgen`] draws a fault plan from each seed, [`outcome`] runs one scenario through the
//! simulation and the checkers, and [`campaign`] runs an algorithm × fault-kind matrix over a
//! seed range on every core; [`hunt`] searches fault plans for a rare violation (guided by
//! what each run did to the lock, or seed by seed); [`shrink`] makes a failing scenario small, [`replay`] re-runs a
//! trace and compares (your own algorithm's too), [`page`] draws it; [`tla`] exports a trace for validation against the TLA+ specifications;
//! [`budget`] refuses scenarios whose estimated memory is over a limit; [`compare`] sets two
//! sets of runs side by side per property (rates, intervals, Fisher's exact test).
//!
//! What each `locksim` command computes lives here too, with plain parameters and return
//! values, so that tests and other programs reuse it: [`campaign_run`] and [`merge`]
//! (campaign files, shard records), [`sweep_run`], [`history_check`], [`real_compare`],
//! [`choose`] (a scenario from `--algo`/`--set` or a file), [`exit`] (the exit codes) and
//! [`timeline`] (the text account of one run). The command line parses, calls and prints.

pub mod applied;
pub mod budget;
pub mod campaign;
pub mod campaign_file;
pub mod campaign_json;
pub mod campaign_run;
pub mod campaign_words;
pub mod choose;
pub mod compare;
pub mod exit;
pub mod faultgen;
pub mod frontier;
pub mod gate;
pub mod history_check;
pub mod hunt;
mod key_lines;
pub mod markdown;
pub mod merge;
pub mod out_dir;
pub mod outcome;
pub mod page;
pub mod real_compare;
pub mod record_file;
pub mod reference;
pub mod replay;
pub mod report;
pub mod seed_flags;
pub mod setup;
pub mod shrink;
pub mod sweep;
pub mod sweep_run;
pub mod sweep_text;
pub mod table;
pub mod testing;
pub mod timeline;
pub mod tla;
pub mod tla_files;

pub use campaign::{
    run_campaign, run_each, run_seeds, summarize, CampaignSpec, CellSummary, SeedRecord, Shard,
    Summary,
};
pub use outcome::{check_scenario, SeedOutcome};
pub use setup::{parse_setting, setups_for, Setup};

/// The built-in algorithms, their settings' reader ([`algos::knobs::Knobs`]) and
/// [`algos::register`], which makes an algorithm of your own known by name to scenario files,
/// traces and `locksim_cli::main_with`.
pub use locksim_algos as algos;
/// The crates a user's own algorithm and tests need, so that one dependency is enough:
/// `locksim_explore::core` (scenarios, faults, properties), `locksim_explore::sim` (the
/// [`sim::LockAlgorithm`] and [`sim::LockClient`] traits).
pub use locksim_core as core;
pub use locksim_sim as sim;
