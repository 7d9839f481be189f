//! `locksim merge`: the record files of a campaign's (or a sweep's) shards read back into one
//! [`Merged`] per campaign, each seed counted once, with what the records lack (missing
//! seeds, missing shards) said in a bounded number of lines whatever sizes records claim.
//! Judging and printing the merged cells is the caller's.

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;
use std::path::{Path, PathBuf};

use locksim_core::text::plural;
use locksim_core::FaultKind;

use crate::campaign_file::CampaignFile;
use crate::campaign_json::{to_json, Campaigns, Cells, FileResult};
use crate::record_file::{check_faults_recorded, not_a_record};
use crate::sweep_text::{self, MergedSweep};
use crate::{CellSummary, SeedRecord, Shard, Summary};

/// The most seeds per cell one invocation runs; bigger campaigns are sharded.
pub const MAX_SEEDS: u64 = 1_000_000;

/// What one campaign's records in the merged files cover.
#[derive(Default)]
pub struct Merged {
    /// The records folded, each seed once.
    pub summary: Summary,
    /// (cell, seed) seen, to count each once, with the record's [`SeedRecord::digest`] and
    /// where it was read (file index, line): a second record of the seed must say the same.
    seen: BTreeMap<(usize, u64), (u64, usize, usize)>,
    duplicates: u64,
    /// Per cell: (algorithm, faults, settings) of its first record.
    pub cells: BTreeMap<usize, (String, FaultKind, String)>,
    /// The campaign's shapes as its records state them: (cells, first_seed, seeds); more
    /// than one means records of different seed ranges (mixed `--first-seed` or `--seeds`).
    pub shapes: BTreeSet<(usize, u64, u64)>,
    /// Shards named by the records, `I/N`.
    pub shards: BTreeSet<String>,
    /// Whether the records are a sweep's (they name a point) or a campaign's; set by the first.
    sweep: Option<bool>,
    /// A sweep's records name their point: by cell.
    pub points: BTreeMap<usize, String>,
    /// Per cell, the smallest failing seed whose record carries its scenario.
    pub carried: BTreeMap<usize, (u64, locksim_core::Scenario)>,
}

/// Whether record `r`'s seed belongs where it says: within its campaign's seeds, and in the
/// shard it names (shard `I/N` runs the seed offsets `I, I+N, I+2N, …` of every cell).
fn check_seed_place(r: &SeedRecord) -> Result<(), String> {
    check_faults_recorded(r)?;
    if r.seeds == 0 || r.seeds > MAX_SEEDS {
        return Err(format!(
            "its campaign claims {} per cell (a campaign or sweep runs 1 to {MAX_SEEDS})",
            plural(r.seeds, "seed")
        ));
    }
    let Some(end) = r.first_seed.checked_add(r.seeds) else {
        return Err(format!(
            "its campaign's seeds ({} from {}) run past 2^64: no campaign wraps its seed range",
            plural(r.seeds, "seed"),
            r.first_seed
        ));
    };
    if r.seed < r.first_seed || r.seed >= end {
        return Err(format!(
            "seed {} is outside its campaign's seeds {}..{end}",
            r.seed, r.first_seed
        ));
    }
    let shard = Shard::parse(&r.shard).map_err(|e| format!("its shard: {e}"))?;
    if (r.seed - r.first_seed) % shard.count != shard.index {
        return Err(format!(
            "seed {} is not one of shard {}'s seeds (offsets {} mod {})",
            r.seed, r.shard, shard.index, shard.count
        ));
    }
    if r.cell >= r.cells {
        return Err(format!(
            "cell {} is outside its campaign's {} cells",
            r.cell, r.cells
        ));
    }
    Ok(())
}

/// The sweep point of `cell` (`pause_max=311ms`), when the records are a sweep's: its own
/// records' label, or for a cell with none, a neighbour's of the same point (cells are
/// point-major, `per point` = algorithms × kinds, the distinct pairs the records name).
fn point_of(m: &Merged, cell: usize) -> Option<String> {
    if m.points.is_empty() {
        return None;
    }
    if let Some(p) = m.points.get(&cell) {
        return Some(p.clone());
    }
    let pairs: BTreeSet<(&str, FaultKind)> =
        m.cells.values().map(|c| (c.0.as_str(), c.1)).collect();
    let pp = pairs.len().max(1);
    m.points
        .iter()
        .find(|(c, _)| *c / pp == cell / pp)
        .map(|(_, p)| p.clone())
}

/// The first `n` values of `lo..hi` that `present` (ascending, within the range) lacks:
/// walks at most `present.len() + n` values, whatever the range's size.
fn first_absent(lo: u64, hi: u64, present: impl Iterator<Item = u64>, n: usize) -> Vec<u64> {
    let mut out = Vec::new();
    let mut next = lo;
    for p in present {
        while next < p && out.len() < n {
            out.push(next);
            next += 1;
        }
        if out.len() >= n {
            return out;
        }
        next = p + 1;
    }
    while next < hi && out.len() < n {
        out.push(next);
        next += 1;
    }
    out
}

/// How many record-less cells [`missing`] names one by one before it counts the rest.
const NAMED_EMPTY_CELLS: usize = 5;

/// Seeds a campaign's merged records lack: per cell label, how many, and the first few. Its
/// work and its lines are bounded by the records, not by the sizes they claim: a cell with
/// records gets a line, the first few cells without any get one each, and the rest one line.
fn missing(m: &Merged) -> Vec<String> {
    if m.shapes.len() > 1 {
        let ranges: Vec<String> = m
            .shapes
            .iter()
            .map(|(_, first, seeds)| format!("{} from {first}", plural(*seeds, "seed")))
            .collect();
        return vec![format!(
            "its records come from different seed ranges ({}: mixed --first-seed or --seeds)",
            ranges.join(", ")
        )];
    }
    let Some(&(cells, first, seeds)) = m.shapes.first() else {
        return vec![];
    };
    // `check_seed_place` saw that the range fits.
    let end = first + seeds;
    let line = |cell: usize, absent: u64, shown: &[u64]| {
        let mut name = m
            .cells
            .get(&cell)
            .map_or_else(|| format!("cell {cell}"), |c| format!("{} × {}", c.0, c.1));
        if let Some(p) = point_of(m, cell) {
            name += &format!(" at {p}");
        }
        let shown: Vec<String> = shown.iter().map(|s| s.to_string()).collect();
        format!(
            "{name}: {} of {} missing (seed {}{})",
            plural(absent, "seed"),
            seeds,
            shown.join(", "),
            if absent > shown.len() as u64 {
                ", …"
            } else {
                ""
            }
        )
    };
    // Cells without a record: the first few, by a walk past the cells that have records.
    let empty: Vec<u64> = first_absent(
        0,
        cells as u64,
        m.cells.keys().map(|&c| c as u64),
        NAMED_EMPTY_CELLS,
    );
    let all_seeds: Vec<u64> = (first..end).take(5).collect();
    let mut out: Vec<(usize, String)> = empty
        .iter()
        .map(|&c| (c as usize, line(c as usize, seeds, &all_seeds)))
        .collect();
    for &cell in m.cells.keys() {
        let present = m.seen.range((cell, first)..(cell, end)).map(|(k, _)| k.1);
        let absent = seeds - m.seen.range((cell, first)..(cell, end)).count() as u64;
        if absent > 0 {
            out.push((
                cell,
                line(cell, absent, &first_absent(first, end, present, 5)),
            ));
        }
    }
    out.sort_by_key(|x| x.0);
    let mut out: Vec<String> = out.into_iter().map(|x| x.1).collect();
    let unnamed = (cells - m.cells.len()).saturating_sub(empty.len());
    if unnamed > 0 {
        out.push(format!(
            "and {unnamed} more {} without any record",
            if unnamed == 1 { "cell" } else { "cells" }
        ));
    }
    out
}

/// The shards of `I/N` that hold seeds (those with `I` below both `N` and `seeds`) and that
/// no record names: how many, and the first five, without walking the others.
fn absent_shards(present: &BTreeSet<String>, count: u64, seeds: u64) -> Option<String> {
    let indexes: BTreeSet<u64> = present
        .iter()
        .filter_map(|s| Shard::parse(s).ok())
        .map(|s| s.index)
        .collect();
    let holding = count.min(seeds);
    let n = holding - indexes.iter().filter(|&&i| i < holding).count() as u64;
    if n == 0 {
        return None;
    }
    let shown: Vec<String> = first_absent(0, holding, indexes.iter().copied(), 5)
        .iter()
        .map(|i| format!("{i}/{count}"))
        .collect();
    Some(if n == 1 {
        format!("shard {} missing", shown[0])
    } else if n > 5 {
        format!(
            "shards {}, … missing ({n} of the {holding} that hold seeds)",
            shown.join(", ")
        )
    } else {
        format!("shards {} missing", shown.join(", "))
    })
}

/// The campaigns' records in `files` (written by `campaign --out` or `sweep --out` on each
/// shard), each checked (its seed in its campaign's range and its shard, its faults counted)
/// and folded into its campaign's [`Merged`]; a seed recorded twice counts once, if both
/// records say the same. Returns the campaigns in the order their first records come (as
/// `campaign` ran them), and each one's records. With `campaigns_only` (`merge --report`),
/// a sweep's record is refused.
///
/// # Errors
/// One line naming the file and line: unreadable, not a record, a record out of place, two
/// records that disagree, a sweep's and a campaign's records under one name, or a file
/// without records.
pub fn read(
    files: &[PathBuf],
    campaigns_only: bool,
) -> Result<(Vec<String>, BTreeMap<String, Merged>), String> {
    let mut by_campaign: BTreeMap<String, Merged> = BTreeMap::new();
    // Campaigns in the order their first records come, as `campaign` ran them (it runs its
    // files one after the other, each file's records before the next's).
    let mut order: Vec<String> = Vec::new();
    for (file_index, path) in files.iter().enumerate() {
        let file = std::fs::File::open(path)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        let mut reader = std::io::BufReader::new(file);
        let (mut line, mut i, mut records) = (String::new(), 0usize, 0usize);
        loop {
            line.clear();
            let n = reader
                .read_line(&mut line)
                .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
            if n == 0 {
                break;
            }
            i += 1;
            if line.trim().is_empty() {
                continue;
            }
            let r: SeedRecord = serde_json::from_str(line.trim_end()).map_err(|e| {
                if !line.ends_with('\n') && line.trim_start().starts_with('{') {
                    format!("{}:{i}: the file ends in the middle of a record (an interrupted campaign: run it again with --resume)", path.display())
                } else {
                    not_a_record(path, i, &e)
                }
            })?;
            records += 1;
            add(
                &mut by_campaign,
                &mut order,
                r,
                (files, file_index, i),
                campaigns_only,
            )?;
        }
        if records == 0 {
            return Err(format!(
                "{}: no records (a file that `locksim campaign --out` or `locksim sweep --out` writes has one JSON line per seed)",
                path.display()
            ));
        }
    }
    Ok((order, by_campaign))
}

/// Folds record `r`, read at line `i` of `files[file_index]`, into its campaign (see [`read`]).
fn add(
    by_campaign: &mut BTreeMap<String, Merged>,
    order: &mut Vec<String>,
    r: SeedRecord,
    (files, file_index, i): (&[PathBuf], usize, usize),
    campaigns_only: bool,
) -> Result<(), String> {
    let path = &files[file_index];
    // A sweep's record names its point, so that an error says which one.
    let at_point = if r.point.is_empty() {
        String::new()
    } else {
        format!(" (sweep point {})", r.point)
    };
    check_seed_place(&r).map_err(|why| format!("{}:{i}: {why}{at_point}", path.display()))?;
    if campaigns_only && !r.point.is_empty() {
        return Err(format!(
            "{}:{i}: a sweep's record: merge --report draws campaign pages only (merge the \
             sweep's shards without --report for its table, --json or frontier verdicts; \
             `locksim sweep --report` draws a sweep's page)",
            path.display()
        ));
    }
    let label = if r.campaign.is_empty() {
        "the matrix".to_string()
    } else {
        r.campaign.clone()
    };
    if !by_campaign.contains_key(&r.campaign) {
        order.push(r.campaign.clone());
    }
    let m = by_campaign.entry(r.campaign.clone()).or_default();
    // A sweep's records (they name a point) and a campaign's under one name (both
    // from the command line, say) would be counted as one or the other: refuse.
    let sweep = !r.point.is_empty();
    if *m.sweep.get_or_insert(sweep) != sweep {
        return Err(format!(
            "{}:{i}: a {} record among {} records of {label}: merge one kind at a time",
            path.display(),
            if sweep { "sweep's" } else { "campaign's" },
            if sweep { "campaign" } else { "sweep" }
        ));
    }
    m.shapes.insert((r.cells, r.first_seed, r.seeds));
    // One cell, one configuration: never add up runs of different settings.
    let this = (r.algorithm.clone(), r.faults, r.settings.clone());
    if let Some(first) = m.cells.get(&r.cell) {
        if *first != this {
            return Err(format!(
                "cannot merge {label}: cell {}{at_point} holds results of different runs ({} {} settings {} and {} {} settings {})",
                r.cell, first.0, first.1, first.2, this.0, this.1, this.2
            ));
        }
    } else {
        m.cells.insert(r.cell, this);
    }
    m.shards.insert(r.shard.clone());
    if !r.point.is_empty() {
        m.points.insert(r.cell, r.point.clone());
    }
    if let Some(sc) = &r.scenario {
        if m.carried.get(&r.cell).is_none_or(|c| r.seed < c.0) {
            m.carried.insert(r.cell, (r.seed, sc.clone()));
        }
    }
    let digest = r.digest();
    match m.seen.get(&(r.cell, r.seed)) {
        None => {
            m.summary
                .add(&r)
                .map_err(|e| format!("{}:{i}: cannot merge {label}: {e}", path.display()))?;
            m.seen.insert((r.cell, r.seed), (digest, file_index, i));
        }
        // Records of different seed ranges are refused as such below.
        Some(&(d, _, _)) if d == digest || m.shapes.len() > 1 => m.duplicates += 1,
        Some(&(_, f, l)) => {
            return Err(format!(
                "cannot merge {label}: {}:{l} and {}:{i} disagree about seed {} of {} × {}{at_point} (a seed's run is deterministic: one of them comes from other code or settings, or was edited)",
                files[f].display(),
                path.display(),
                r.seed,
                r.algorithm,
                r.faults
            ))
        }
    }
    Ok(())
}

/// What `m`'s records lack for a whole merge, one line each: the shards no record names
/// (first), then per cell the missing seeds ([`missing`]); empty when nothing is missing.
/// `label` names the campaign in the error.
///
/// # Errors
/// Its shards were cut differently (`0/2` and `1/3`).
pub fn lacking(m: &Merged, label: &str) -> Result<Vec<String>, String> {
    let counts: BTreeSet<&str> = m
        .shards
        .iter()
        .filter_map(|s| s.split('/').nth(1))
        .collect();
    if counts.len() > 1 {
        return Err(format!(
            "cannot merge {label}: its shards were cut differently ({})",
            m.shards.iter().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    let mut lacking = missing(m);
    if let (Some(n), Some(&(_, _, seeds))) = (
        counts.iter().next().and_then(|n| n.parse::<u64>().ok()),
        m.shapes.first(),
    ) {
        if let Some(absent) = absent_shards(&m.shards, n, seeds) {
            lacking.insert(0, absent);
        }
    }
    Ok(lacking)
}

impl Merged {
    /// The note on seeds recorded in more than one file (counted once), if any.
    pub fn duplicates_note(&self, label: &str) -> Option<String> {
        (self.duplicates > 0 && self.shapes.len() == 1).then(|| {
            format!(
                "note: {label}: {} appeared in more than one file; counted once",
                plural(self.duplicates, "seed")
            )
        })
    }
}

/// One campaign's merged records, judged as `campaign` judges an unsharded run.
pub struct MergedCampaign {
    /// The records' `campaign`: "" for the command-line matrix, else the file's path.
    pub campaign: String,
    /// Its cells, in cell order.
    pub cells: Vec<CellSummary>,
    /// The verdict as the heading shows it after the name: `: PASS`, `: FAIL: …`,
    /// ` (partial, not judged: …)`, ` (not judged: …)`, or empty (the matrix, whole).
    pub verdict: String,
    /// What the records lack (empty for a whole merge).
    pub lacking: Vec<String>,
    /// The campaign file's `name`, when the file is still where it ran.
    pub name: String,
    /// The campaign file's problems, when judged here (empty: it passed).
    pub judged: Option<Vec<String>>,
    /// Its expectation failed.
    pub failed: bool,
    /// A campaign file's expectation, or `--fail-on`, left unjudged (exit 3).
    pub unjudged: bool,
    /// The heading and verdict (`name (path): PASS`), for a campaign file or a partial
    /// matrix; none for the whole matrix.
    pub heading: Option<String>,
    /// The campaign file names an L property (its table shows L1–L3).
    pub asks_liveness: bool,
    /// Notes for stderr (`note: … is partial`, `… is not judged`).
    pub notes: Vec<String>,
}

/// Judges campaign `campaign`'s merged records `m` (not a sweep's), which lack `lacking`
/// ([`lacking`]): a campaign file still where it ran is judged against its expectations
/// and headed by its name, as `campaign` heads it, so that the merged summary is byte for
/// byte the unsharded run's. With `partial`, what cannot be judged is said instead of
/// refused; `fail_on` says whether `--fail-on` was given (a partial merge leaves it unjudged).
///
/// # Errors
/// Seeds or shards missing without `partial`; the campaign file cannot be read without
/// `partial`.
pub fn judge(
    campaign: &str,
    m: &Merged,
    lacking: Vec<String>,
    partial: bool,
    fail_on: bool,
) -> Result<MergedCampaign, String> {
    let label = if campaign.is_empty() {
        "the matrix".to_string()
    } else {
        campaign.to_string()
    };
    let cells = m.summary.cells();
    let (mut failed, mut unjudged) = (false, false);
    let mut notes = Vec::new();
    let mut verdict = String::new();
    // The problems of a campaign file judged here (as `campaign` judges it).
    let mut judged: Option<Vec<String>> = None;
    if !lacking.is_empty() {
        if !partial {
            return Err(format!(
                "cannot merge {label}: {} (give every shard's file, or --partial to summarize what is there)",
                lacking.join("; ")
            ));
        }
        notes.push(format!("note: {label} is partial: {}", lacking.join("; ")));
        verdict = format!(" (partial, not judged: {})", lacking.join("; "));
        // A campaign file's expectation, or --fail-on, left unjudged: exit 3.
        unjudged = !campaign.is_empty() || fail_on;
    } else if !campaign.is_empty() {
        // Judge the campaign file's expectation, if the file is still where it was run.
        match CampaignFile::read(Path::new(campaign)) {
            Ok(f) => {
                let problems = f.judge(&cells);
                if problems.is_empty() {
                    verdict = ": PASS".into();
                } else {
                    failed = true;
                    verdict = format!(": FAIL: {}", problems.join("; "));
                }
                judged = Some(problems);
            }
            // Unjudged is no pass: refused (exit 2), or with --partial shown as such (exit 3).
            Err(e) if !partial => return Err(format!(
                "cannot judge {label}: its campaign file cannot be read ({e}); merge where it was run, or give --partial to summarize the records without judging them"
            )),
            Err(e) => {
                notes.push(format!("note: {label} is not judged: its campaign file cannot be read ({e})"));
                verdict = format!(" (not judged: {e})");
                unjudged = true;
            }
        }
    }
    let file = (!campaign.is_empty())
        .then(|| CampaignFile::read(Path::new(campaign)).ok())
        .flatten();
    let heading = match &file {
        Some(f) => format!("{} ({campaign})", f.name),
        None => label,
    };
    Ok(MergedCampaign {
        campaign: campaign.to_string(),
        heading: (!campaign.is_empty() || !lacking.is_empty())
            .then(|| format!("{heading}{verdict}")),
        asks_liveness: file.as_ref().is_some_and(|f| f.asks_liveness()),
        name: file.as_ref().map_or_else(String::new, |f| f.name.clone()),
        cells,
        verdict,
        lacking,
        judged,
        failed,
        unjudged,
        notes,
    })
}

/// `merge --json`'s object for merged `campaigns` and `sweeps` (one line, no newline), in the
/// shape the unsharded command prints: `campaign --json`'s (`{"cells"}` for the matrix,
/// `{"campaigns"}` for files: one judged here reads as `campaign --json` prints it, one not
/// judged says why in `verdict`), `sweep --json`'s (`{"axes", "points"}`, `{"frontiers"}`),
/// or for a mix `{"sweeps", "campaigns"}`.
pub fn json(campaigns: Vec<MergedCampaign>, sweeps: &[(String, MergedSweep)]) -> String {
    if !sweeps.is_empty() && campaigns.is_empty() && sweeps.iter().all(|s| s.1.frontier.is_some()) {
        // Frontier files only: `sweep FILES --json`'s shape.
        let list: Vec<&serde_json::Value> = sweeps
            .iter()
            .filter_map(|s| s.1.frontier.as_ref())
            .collect();
        serde_json::json!({ "frontiers": list }).to_string()
    } else if let ([one], true) = (sweeps, campaigns.is_empty()) {
        // The command line's sweep: `sweep --json`'s shape.
        one.1.axes_points.to_string()
    } else if !sweeps.is_empty() {
        let sweeps: Vec<serde_json::Value> = sweeps
            .iter()
            .map(|(name, s)| {
                let mut v = s.axes_points.clone();
                v["sweep"] = name.as_str().into();
                v["verdict"] = s.frontier.as_ref().map_or(
                    serde_json::Value::Null,
                    |f| serde_json::json!({"ok": f["ok"], "problems": f["problems"]}),
                );
                v
            })
            .collect();
        let mut v = serde_json::json!({ "sweeps": sweeps });
        if !campaigns.is_empty() {
            let list: Vec<serde_json::Value> = campaigns
                .iter()
                .map(|m| {
                    serde_json::json!({"file": m.campaign, "cells": m.cells, "verdict": m.verdict, "missing": m.lacking})
                })
                .collect();
            v["campaigns"] = list.into();
        }
        v.to_string()
    } else {
        match campaigns.as_slice() {
            [m] if m.campaign.is_empty() => to_json(&Cells {
                cells: &m.cells,
                missing: &m.lacking,
            }),
            _ => {
                // A file judged here reads as `campaign --json` of the same file prints it
                // (name, ok, problems; no verdict); one not judged says why in `verdict`.
                let list: Vec<FileResult> = campaigns
                    .into_iter()
                    .map(|m| (m.campaign, m.cells, m.verdict, m.lacking, m.name, m.judged))
                    .map(|(c, cells, v, lacking, name, judged)| match judged {
                        Some(problems) => FileResult {
                            name,
                            file: c,
                            cells,
                            ok: problems.is_empty(),
                            problems,
                            verdict: None,
                            missing: lacking,
                        },
                        None => FileResult {
                            name,
                            ok: !v.starts_with(": FAIL"),
                            problems: Vec::new(),
                            file: c,
                            cells,
                            verdict: Some(
                                v.trim_start_matches(": ")
                                    .trim_start_matches(" (")
                                    .trim_end_matches(')')
                                    .to_string(),
                            ),
                            missing: lacking,
                        },
                    })
                    .collect();
                to_json(&Campaigns { campaigns: &list })
            }
        }
    }
}

/// Merges the records `m` of the sweep `campaign` (they name their points), which lack
/// `lacking` ([`lacking`]): what `sweep` prints for them ([`sweep_text::merged`]); `note` gets
/// the notes for stderr as they arise. With `partial`, what is missing is said instead of refused.
///
/// # Errors
/// Seeds or shards missing without `partial`; axes that cannot be rebuilt.
pub fn sweep(
    campaign: &str,
    m: &Merged,
    lacking: &[String],
    partial: bool,
    note: &mut dyn FnMut(String),
) -> Result<MergedSweep, String> {
    let label = if campaign.is_empty() {
        "the matrix"
    } else {
        campaign
    };
    if !lacking.is_empty() && !partial {
        return Err(format!(
            "cannot merge {label}: {} (give every shard's file, or --partial to summarize what is there)",
            lacking.join("; ")
        ));
    }
    if !lacking.is_empty() {
        note(format!("note: {label} is partial: {}", lacking.join("; ")));
    }
    let seeds = m.shapes.first().map_or(0, |s| s.2);
    sweep_text::merged(
        campaign,
        &m.summary.indexed_cells(),
        &m.points,
        seeds,
        lacking,
    )
}

/// The shard files of one `locksim merge` read, merged and judged, campaign by campaign in
/// the order they ran.
pub struct MergedFiles {
    /// The campaigns' tables (campaign files under their headings) and the sweeps' text, in
    /// order, without the legend.
    pub text: String,
    /// `None` when no campaign's table is in [`Self::text`], else whether one shows L1–L3
    /// (the legend after the tables says so).
    pub legend_liveness: Option<bool>,
    /// The campaigns' merged records, judged.
    pub campaigns: Vec<MergedCampaign>,
    /// The sweeps' merged records, by campaign name.
    pub sweeps: Vec<(String, MergedSweep)>,
    /// The `--report` page's sections (one per campaign), when asked for.
    pub sections: Vec<crate::report::Section>,
    /// Campaigns whose expectation (or sweeps whose frontier) failed.
    pub failed: usize,
    /// Campaigns left unjudged (a partial merge).
    pub unjudged: usize,
}

/// Merges the record files `files` ([`read`], [`lacking`], then [`judge`] or [`sweep`]
/// each campaign), giving `note` each line for stderr as it arises. `partial`: summarize
/// what is there (`--partial`); `fail_on`: `--fail-on` was given; `report`: build the
/// report's sections (a sweep's records are then refused).
///
/// # Errors
/// As [`read`], [`lacking`], [`judge`] and [`sweep`].
pub fn merge_files(
    files: &[PathBuf],
    partial: bool,
    fail_on: bool,
    report: bool,
    note: &mut dyn FnMut(String),
) -> Result<MergedFiles, String> {
    let (order, by_campaign) = read(files, report)?;
    let mut all = MergedFiles {
        text: String::new(),
        legend_liveness: None,
        campaigns: Vec::new(),
        sweeps: Vec::new(),
        sections: Vec::new(),
        failed: 0,
        unjudged: 0,
    };
    for campaign in &order {
        let m = &by_campaign[campaign];
        let label = if campaign.is_empty() {
            "the matrix".to_string()
        } else {
            campaign.clone()
        };
        let lacking = lacking(m, &label)?;
        if let Some(n) = m.duplicates_note(&label) {
            note(n);
        }
        if !m.points.is_empty() {
            let merged = sweep(campaign, m, &lacking, partial, note)?;
            all.failed += usize::from(!merged.ok);
            all.text += &merged.text;
            all.sweeps.push((campaign.clone(), merged));
            continue;
        }
        let mc = judge(campaign, m, lacking, partial, fail_on)?;
        for n in &mc.notes {
            note(n.clone());
        }
        all.failed += usize::from(mc.failed);
        all.unjudged += usize::from(mc.unjudged);
        if let Some(h) = &mc.heading {
            all.text += &format!("== {h}\n");
        }
        let liveness = crate::table::shows_liveness(&mc.cells, mc.asks_liveness);
        all.legend_liveness = Some(all.legend_liveness.unwrap_or(false) || liveness);
        all.text += &crate::table::table_body(&mc.cells, liveness);
        if !campaign.is_empty() {
            all.text += "\n";
        }
        if report {
            all.sections.push(crate::report::Section {
                heading: mc.heading.clone(),
                notes: vec![],
                starts: merged_starts(campaign, m, &mc.cells),
                cells: mc.cells.clone(),
            });
        }
        all.campaigns.push(mc);
    }
    Ok(all)
}

impl MergedFiles {
    /// The campaigns' cells, in order (what `--fail-on` judges).
    pub fn cells(&self) -> Vec<CellSummary> {
        self.campaigns
            .iter()
            .flat_map(|j| j.cells.iter().cloned())
            .collect()
    }

    /// The tables with the legend once after them, as `campaign` prints it.
    pub fn text_with_legend(&self) -> String {
        let mut text = self.text.clone();
        if let Some(liveness) = self.legend_liveness {
            let l = crate::table::legend(liveness);
            // After a file's table and its blank line, no second blank line.
            text += if text.ends_with("\n\n") {
                l.trim_start_matches('\n')
            } else {
                &l
            };
        }
        text
    }

    /// `--csv`: the sweeps' rows, as `sweep --csv` prints them.
    ///
    /// # Errors
    /// The files hold campaign records, which have no CSV form.
    pub fn csv(&self) -> Result<String, String> {
        if let Some(mc) = self.campaigns.first() {
            let c = &mc.campaign;
            return Err(format!(
                "merge --csv prints sweep records (one row per point, algorithm and fault kind, as `sweep --csv`); {} holds campaign records: use the table or --json for them",
                if c.is_empty() { "the command-line matrix" } else { c.as_str() }
            ));
        }
        Ok(self.sweeps.iter().map(|s| s.1.csv.as_str()).collect())
    }
}

/// Where `merge --report` gets each violated cell's first failing seed: the scenario its
/// record carries (`campaign --out` stores it), else the campaign file, if it is still where
/// it ran and its settings fingerprint matches the records'.
pub fn merged_starts(
    campaign: &str,
    m: &Merged,
    cells: &[CellSummary],
) -> Vec<Option<crate::report::Start>> {
    let file = (!campaign.is_empty())
        .then(|| CampaignFile::read(Path::new(campaign)).and_then(|f| f.spec(1)));
    // The summary's cells come in cell-index order, as `m.cells` holds them.
    m.cells
        .iter()
        .zip(cells)
        .map(|((&cell, (_, _, settings)), c)| {
            let seed = c.first_failing_seed?;
            if let Some((s, scenario)) = m.carried.get(&cell).filter(|x| x.0 == seed) {
                debug_assert_eq!(*s, seed);
                return Some(
                    crate::Setup::from_scenario(scenario)
                        .map(|setup| (scenario.clone(), setup.algo))
                        .map_err(|e| format!("seed {seed}: {e}")),
                );
            }
            let from_file = match &file {
                Some(Ok(spec)) => {
                    let setup = &spec.setups[(cell / spec.kinds.len().max(1)).min(spec.setups.len() - 1)];
                    if crate::campaign::fingerprint(setup) == *settings {
                        Ok((setup.scenario(seed, &[c.faults]), setup.algo.clone()))
                    } else {
                        Err(format!("{campaign} changed since its shards ran (its settings fingerprint differs)"))
                    }
                }
                Some(Err(e)) => Err(e.clone()),
                None => Err("the command-line matrix's settings are not in its records".into()),
            };
            Some(from_file.map_err(|e| {
                format!("the shards' records do not carry seed {seed}'s scenario, and {e}: run `locksim shrink` on it with the campaign's settings")
            }))
        })
        .collect()
}
