//! `locksim check`: linearizability of recorded histories, one verdict per file, with the
//! reason when a history is not linearizable, as text, JSON or a page (the engine is
//! [`locksim_explore::history_check`]).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use locksim_check::linear::Verdict;
use locksim_explore::history_check::{
    self as engine, Model, DEFAULT_MAX_MEMORY_MIB, DEFAULT_TIMEOUT,
};
use locksim_explore::page::write_page;
use locksim_render::linear::linear_page;

use crate::exit::check_code;
use crate::out;

#[derive(Clone, Copy, ValueEnum)]
enum ModelName {
    /// A read/write/compare-and-set register (Jepsen's etcd logs).
    Etcd,
    /// A key-value store with get/put/append, checked per key (EDN lines).
    Kv,
    /// A lease lock in true time (a `locksim run --json --events` file).
    Lock,
    /// A lock that never expires (held until released, or until its holder crashed): a
    /// session lock such as PostgreSQL's advisory locks (a `locksim run --json --events` file).
    Mutex,
}

impl From<ModelName> for Model {
    fn from(m: ModelName) -> Model {
        match m {
            ModelName::Etcd => Model::Etcd,
            ModelName::Kv => Model::Kv,
            ModelName::Lock => Model::Lock,
            ModelName::Mutex => Model::Mutex,
        }
    }
}

#[derive(Args)]
pub struct CheckArgs {
    /// The sequential specification and input format.
    #[arg(long, value_enum)]
    model: ModelName,
    /// History files.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Print one JSON object per file:
    /// {"file","verdict":"linearizable"|"not_linearizable"|"unknown","ops","ms",...}; a
    /// failing file adds "prefix_length", "prefix" (the ids of its last 200 steps at most)
    /// and "stuck" (operation ids) and "explanation" (the failing part's operations — about
    /// 1,000 around the stuck ones at most, "ops_skipped" counts the others —, the prefix's
    /// steps shown with the state after each, "prefix_skipped" the steps before them, and
    /// the stuck operations with the model's reasons); an unknown one "reason". The output
    /// stays small however long the history.
    #[arg(long)]
    json: bool,
    /// Give up on a file after this many seconds (its verdict is then `unknown`).
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_TIMEOUT)]
    timeout: f64,
    /// Give up on a file when the search's tables would hold more than this many MiB (its
    /// verdict is then `unknown`).
    #[arg(long, value_name = "MIB", default_value_t = DEFAULT_MAX_MEMORY_MIB)]
    max_memory: u64,
    /// Worker threads for a history's independent parts [default: the machine's cores].
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// Also write a page that draws why each failing history is not linearizable: each
    /// client's operations on a time axis, the longest linearizable prefix step by step with
    /// the model's state, and the operations that could not be placed, with the reasons.
    #[arg(long, value_name = "OUT.html")]
    html: Option<PathBuf>,
    /// With --html: replace OUT even when it is not a page locksim wrote.
    #[arg(long)]
    force: bool,
}

pub fn main(a: CheckArgs) -> Result<ExitCode, String> {
    let budget = engine::budget(a.timeout, a.max_memory, a.threads)?;
    if let Some(h) = &a.html {
        engine::check_html_target(&a.files, h, a.force)?;
    }
    let (mut unknown, mut bad_input, mut failing) = (false, false, false);
    let mut page = Vec::new();
    for file in &a.files {
        let name = file.display().to_string();
        let c = match engine::check_file(a.model.into(), file, &budget) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("error: {e}");
                bad_input = true;
                continue;
            }
        };
        if a.json {
            out(&format!("{}\n", engine::json(&name, &c)));
        } else {
            out(&engine::text(&name, &c));
        }
        unknown |= matches!(c.verdict, Verdict::Unknown(_));
        failing |= matches!(c.verdict, Verdict::NotLinearizable(_));
        if let Some(why) = engine::proves_nothing(&name, &c) {
            eprintln!("{why}");
            unknown = true;
        }
        page.push(engine::page_item(name, c));
    }
    if let Some(h) = &a.html {
        write_page(
            h,
            &linear_page(&engine::page_title(&a.files), &page),
            a.force,
        )?;
        if !a.json {
            eprintln!("wrote {}", h.display());
        }
    }
    Ok(ExitCode::from(check_code(bad_input, failing, unknown)))
}
