//! The sentences `locksim campaign` and `locksim merge` print around their tables: the
//! report's notes (with its "Made by:" line), the matrix's Markdown table with the command
//! that makes it, and the matrix's last lines on stderr. `program` is the command's name as
//! it was started (`locksim`, or a program of one's own that embeds it).

use std::path::{Path, PathBuf};

use locksim_core::text::plural;

use crate::seed_flags::SeedFlags;
use crate::{CampaignSpec, CellSummary, Shard};

/// `--set` settings as a command line gives them: ` --set ttl=2s --set clients=3`.
pub fn sets(set: &[String]) -> String {
    set.iter().map(|s| format!(" --set {s}")).collect()
}

/// The fault kinds of `spec`, comma-separated, as `--faults` takes them.
fn kinds(spec: &CampaignSpec) -> String {
    spec.kinds
        .iter()
        .map(|k| k.name())
        .collect::<Vec<_>>()
        .join(",")
}

/// The notes of the matrix's `--report`: what ran (algorithms × fault kinds, the seeds of each
/// cell, `set`), and the command that makes it again with `algos`.
pub fn matrix_notes(
    spec: &CampaignSpec,
    algos: &[String],
    set: &[String],
    program: &str,
) -> Vec<String> {
    let (first_seed, seeds) = (spec.first_seed, spec.seeds);
    let sets = sets(set);
    vec![
        format!(
            "{} × {}, seeds {}‥{} of each cell{sets}.",
            plural(spec.setups.len() as u64, "algorithm"),
            plural(spec.kinds.len() as u64, "fault kind"),
            first_seed,
            first_seed + seeds - 1
        ),
        format!(
            "Made by: {program} campaign --algo {} --faults {} --seeds {seeds} --first-seed {first_seed}{sets}",
            algos.join(","),
            kinds(spec)
        ),
    ]
}

/// `--markdown`: the matrix `cells` as the README's table, under the command that makes it
/// (`all_algorithms`: it was `--all-algorithms`, else `--algo` with `algos`).
pub fn matrix_markdown(
    spec: &CampaignSpec,
    algos: &[String],
    set: &[String],
    all_algorithms: bool,
    program: &str,
    cells: &[CellSummary],
) -> String {
    let which = if all_algorithms {
        " --all-algorithms".to_string()
    } else {
        format!(" --algo {}", algos.join(","))
    };
    let command = format!(
        "{program} campaign{which} --faults {} --seeds {}{} --markdown",
        kinds(spec),
        spec.seeds,
        sets(set)
    );
    let describe = |name: &str| {
        locksim_algos::algorithms()
            .iter()
            .find(|a| a.0 == name)
            .map_or(String::new(), |a| a.1.replace('|', "/"))
    };
    crate::markdown::table(cells, describe, &command)
}

/// How a campaign invocation ran, for its last line: seeds run now and recorded before
/// (`--resume`), seconds it took, worker threads, and its shard.
#[derive(Clone, Copy, Debug)]
pub struct Ran {
    pub ran: u64,
    pub resumed: u64,
    pub secs: f64,
    pub jobs: usize,
    pub shard: Shard,
}

/// The matrix's last lines on stderr: the seeds run and how fast, and how to look at the
/// first failing seed of `cells` (run with the settings `set`). Ends with a newline.
pub fn matrix_tail(cells: &[CellSummary], set: &[String], r: Ran, program: &str) -> String {
    let mut tail = format!(
        "\n{} in {:.1}s on {} ({:.0} seeds/s){}{}.\n",
        plural(r.ran, "seed"),
        r.secs,
        plural(r.jobs as u64, "thread"),
        r.ran as f64 / r.secs.max(1e-9),
        if r.resumed > 0 {
            format!(", and {} recorded before", plural(r.resumed, "seed"))
        } else {
            String::new()
        },
        if r.shard == Shard::ALL {
            String::new()
        } else {
            format!(", shard {}/{}", r.shard.index, r.shard.count)
        }
    );
    if let Some(c) = cells.iter().find(|c| c.first_failing_seed.is_some()) {
        let sets = sets(set);
        tail += &format!(
            "See a failing seed's timeline (--html draws it as a page), or shrink it to a trace, e.g.:\n  {3} run --algo {0} --faults {1} --seed {2}{sets} --html seed{2}.html\n  {3} shrink --algo {0} --faults {1} --seed {2}{sets}\n",
            c.algorithm,
            c.faults,
            c.first_failing_seed.unwrap_or(0),
            program,
        );
    }
    tail
}

/// The notes of campaign files' `--report`: `count` files named by `paths`, `failed` of them
/// failing their expectation, the seeds `flags` overrode, and the command.
pub fn files_notes(
    paths: &[PathBuf],
    flags: SeedFlags,
    (count, failed): (usize, usize),
    program: &str,
) -> Vec<String> {
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let mut notes = vec![format!(
        "{}, {failed} failed their expectation.",
        plural(count as u64, "campaign file")
    )];
    if flags.given() {
        notes.push(format!("{}.", flags.note()));
    }
    notes.push(format!(
        "Made by: {program} campaign {}{}",
        names.join(" "),
        flags.flags()
    ));
    notes
}

/// The notes of `merge --report` to `path` from the shard files `files` (`partial`: with
/// `--partial`).
pub fn merge_notes(files: &[PathBuf], partial: bool, path: &Path, program: &str) -> Vec<String> {
    let names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
    vec![
        format!(
            "Merged from {}{}.",
            plural(files.len() as u64, "shard file"),
            if partial {
                " (--partial: shards or seeds may be missing)"
            } else {
                ""
            }
        ),
        format!(
            "Made by: {program} merge --report {} {}",
            path.display(),
            names.join(" ")
        ),
    ]
}
