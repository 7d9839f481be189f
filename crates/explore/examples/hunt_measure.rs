//! Runs to the first violation, random search against swarm and guided, side by side (issues
//! #28, #51): one line per first seed, each search's runs and the guided search's overhead;
//! then `--summarize` reads such lines back into docs/hunt.md's table (median runs, the median
//! ratio random / search per target with its interval) and draws the chart.
//!
//! ```text
//! cargo run --release -p locksim-explore --example hunt_measure -- \
//!     sims/k3-raft-lease-unlock-by-name.toml loss S4 1500 0 1000 2000 > k3.txt
//! cargo run --release -p locksim-explore --example hunt_measure -- \
//!     redlock crash-restart S1 1500 0 1000 2000 --set ttl=2s --jobs 1 >> k3.txt
//! cargo run --release -p locksim-explore --example hunt_measure -- \
//!     --summarize k3.txt --svg docs/hunt-runs.svg
//! ```
//!
//! Arguments: a campaign file or an algorithm name, the fault kinds, the property, the budget
//! of runs per search, then first seeds; `--set KEY=VALUE` for an algorithm's settings,
//! `--jobs N` threads (default 2), `--searches random,swarm,guided` (the default). A search
//! that used up its budget prints `>BUDGET` (its true figure is larger).

use locksim_core::fault::parse_kinds;
use locksim_explore::campaign_file::CampaignFile;
use locksim_explore::hunt::chart::{self, Series, Target};
use locksim_explore::hunt::{hunt, Hunt, Search};
use locksim_explore::setups_for;

fn usage() -> ! {
    eprintln!(
        "usage: hunt_measure FILE.toml|ALGO KINDS PROPERTY BUDGET FIRST_SEED... [--set K=V] [--jobs N] [--searches S,S]\n       hunt_measure --summarize FILE... [--svg OUT.svg]"
    );
    std::process::exit(2);
}

fn fail(e: impl std::fmt::Display) -> ! {
    eprintln!("{e}");
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--summarize") {
        summarize(&args[1..]);
        return;
    }
    if args.len() < 5 {
        usage();
    }
    let (target, kinds, property) = (&args[0], &args[1], &args[2]);
    let budget: u64 = args[3].parse().unwrap_or_else(|_| usage());
    let (mut firsts, mut sets, mut jobs) = (Vec::new(), Vec::new(), 2);
    let mut searches = vec![Search::Random, Search::Swarm, Search::Guided];
    let mut rest = args[4..].iter();
    while let Some(a) = rest.next() {
        match a.as_str() {
            "--set" => sets.push(rest.next().cloned().unwrap_or_else(|| usage())),
            "--jobs" => {
                jobs = rest
                    .next()
                    .and_then(|j| j.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            "--searches" => {
                searches = rest
                    .next()
                    .unwrap_or_else(|| usage())
                    .split(',')
                    .map(|s| match s {
                        "random" => Search::Random,
                        "swarm" => Search::Swarm,
                        "guided" => Search::Guided,
                        _ => usage(),
                    })
                    .collect()
            }
            _ => firsts.push(a.parse::<u64>().unwrap_or_else(|_| usage())),
        }
    }
    let setup = if target.ends_with(".toml") {
        CampaignFile::read(std::path::Path::new(target))
            .and_then(|f| f.spec(1))
            .map(|mut s| s.setups.remove(0))
    } else {
        setups_for(std::slice::from_ref(target), &sets).map(|mut s| s.remove(0))
    }
    .unwrap_or_else(|e| fail(format!("{target}: {e}")));
    let kinds = parse_kinds(kinds).unwrap_or_else(|e| fail(e));
    let property = Some(property.parse().unwrap_or_else(|e| fail(e)));
    for first_seed in firsts {
        let mut line = format!(
            "{target} {} {} budget {budget} first_seed {first_seed}:",
            args[1], args[2]
        );
        for &search in &searches {
            let h = Hunt {
                setup: setup.clone(),
                kinds: kinds.clone(),
                property,
                budget,
                search,
                first_seed,
                jobs,
            };
            let out = hunt(&h, &|_, _, _| {});
            let runs = if out.found.is_some() {
                out.runs.to_string()
            } else {
                format!(">{}", out.runs)
            };
            line += &format!(
                " {} {runs} ({:.1}%)",
                search.name(),
                100.0 * out.time.share()
            );
        }
        println!("{line}");
    }
}

/// One line of a measurement: target, budget, first seed, and per search (name, runs or
/// `None`, overhead %).
type Line = (String, u64, u64, Vec<(String, Option<u64>, f64)>);

fn parse_line(l: &str) -> Option<Line> {
    let t: Vec<&str> = l.split_whitespace().collect();
    if t.len() < 10 || t[3] != "budget" || t[5] != "first_seed" {
        return None;
    }
    let name = format!("{} {} {}", t[0], t[1], t[2]);
    let budget = t[4].parse().ok()?;
    let first = t[6].trim_end_matches(':').parse().ok()?;
    let mut series = Vec::new();
    for s in t[7..].chunks(3) {
        let [search, runs, pct] = s else { return None };
        let runs = if runs.starts_with('>') {
            None
        } else {
            Some(runs.parse().ok()?)
        };
        let pct = pct
            .trim_matches(|c| c == '(' || c == ')' || c == '%')
            .parse()
            .ok()?;
        series.push((search.to_string(), runs, pct));
    }
    Some((name, budget, first, series))
}

/// `a` / `b` per first seed (misses counted at the budget), sorted.
fn ratios(a: &[Option<u64>], b: &[Option<u64>], budget: u64) -> Vec<f64> {
    let mut r: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(x, y)| x.unwrap_or(budget) as f64 / y.unwrap_or(budget) as f64)
        .collect();
    r.sort_by(|x, y| x.total_cmp(y));
    r
}

/// The chance that the `k+1`-th smallest and `k+1`-th largest of `n` figures bracket their
/// median (a distribution-free interval).
fn coverage(n: usize, k: usize) -> f64 {
    let mut c = 1.0f64;
    let mut tail = 0.0;
    for i in 0..=k {
        if i > 0 {
            c = c * (n - i + 1) as f64 / i as f64;
        }
        tail += c;
    }
    1.0 - 2.0 * tail / 2f64.powi(n as i32)
}

fn summarize(args: &[String]) {
    let mut files = Vec::new();
    let mut svg_out = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--svg" {
            svg_out = Some(it.next().cloned().unwrap_or_else(|| usage()));
        } else {
            files.push(a.clone());
        }
    }
    if files.is_empty() {
        usage();
    }
    // Targets in the order first seen; their lines in order.
    let mut targets: Vec<(String, u64, Vec<Line>)> = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap_or_else(|e| fail(format!("{f}: {e}")));
        for l in text.lines().filter_map(parse_line) {
            match targets.iter_mut().find(|t| t.0 == l.0) {
                Some(t) => t.2.push(l),
                None => targets.push((l.0.clone(), l.1, vec![l])),
            }
        }
    }
    if targets.is_empty() {
        fail("no measurement lines in the files");
    }
    let names: Vec<String> = targets[0].2[0].3.iter().map(|s| s.0.clone()).collect();
    let mut chart_targets = Vec::new();
    println!(
        "| target | first seeds | {} | median ratio random / {} [interval] |",
        names
            .iter()
            .map(|n| format!("{n}: median (misses)"))
            .collect::<Vec<_>>()
            .join(" | "),
        names[1..].join(", random / ")
    );
    println!("|---|---|{}---|", "---|".repeat(names.len()));
    let mut sums = vec![0u64; names.len()];
    let mut logs = vec![Vec::new(); names.len()];
    let mut worst = vec![f64::INFINITY; names.len()];
    let mut n_seeds = 0;
    for (name, budget, lines) in &targets {
        let per: Vec<Vec<Option<u64>>> = (0..names.len())
            .map(|i| lines.iter().map(|l| l.3.get(i).and_then(|s| s.1)).collect())
            .collect();
        n_seeds = lines.len();
        for (i, v) in per.iter().enumerate() {
            sums[i] += v.iter().map(|r| r.unwrap_or(*budget)).sum::<u64>();
        }
        let cells: Vec<String> = per
            .iter()
            .map(|v| {
                let misses = v.iter().filter(|r| r.is_none()).count();
                let m = chart::median(v, *budget);
                let m = if v.iter().filter(|r| r.is_none()).count() * 2 > v.len() {
                    format!(">{m}")
                } else {
                    m.to_string()
                };
                format!("{m} ({misses})")
            })
            .collect();
        let ratio_cells: Vec<String> = (1..names.len())
            .map(|i| {
                let r = ratios(&per[0], &per[i], *budget);
                let n = r.len();
                let med = if n % 2 == 1 {
                    r[n / 2]
                } else {
                    (r[n / 2 - 1] * r[n / 2]).sqrt()
                };
                logs[i].push(med.ln());
                worst[i] = worst[i].min(med);
                let k = if n >= 10 { 1 } else { 0 };
                format!("{med:.2} [{:.2}, {:.2}]", r[k], r[n - 1 - k])
            })
            .collect();
        println!(
            "| {name} | {} | {} | {} |",
            lines.len(),
            cells.join(" | "),
            ratio_cells.join(" · ")
        );
        // A campaign file by its stem, so that the name fits the chart's margin.
        let short = match name.split_once(' ') {
            Some((file, rest)) if file.ends_with(".toml") => {
                let stem = std::path::Path::new(file)
                    .file_stem()
                    .map_or(file.into(), |s| s.to_string_lossy());
                format!("{stem} {rest}")
            }
            _ => name.clone(),
        };
        chart_targets.push(Target {
            name: short,
            budget: *budget,
            series: names
                .iter()
                .enumerate()
                .map(|(i, n)| Series {
                    search: n.clone(),
                    runs: per[i].clone(),
                })
                .collect(),
        });
    }
    println!();
    let k = if n_seeds >= 10 { 1 } else { 0 };
    println!(
        "interval: the {}smallest and largest of the {n_seeds} per-seed ratios ({:.0}% distribution-free interval of the median); misses count at the budget",
        ["", "second "][k],
        100.0 * coverage(n_seeds, k)
    );
    for i in 1..names.len() {
        let geo = (logs[i].iter().sum::<f64>() / logs[i].len() as f64).exp();
        println!(
            "{}: runs summed over all targets and seeds, random {} / {} {} = {:.2}x; geometric mean of the median ratios {geo:.2}x; worst target's median ratio {:.2}x",
            names[i],
            sums[0],
            names[i],
            sums[i],
            sums[0] as f64 / sums[i] as f64,
            worst[i]
        );
    }
    println!();
    if let Some(out) = svg_out {
        let s = chart::svg(
            "Runs to the first violation, per target and search (bar: median)",
            &chart_targets,
        );
        std::fs::write(&out, s).unwrap_or_else(|e| fail(format!("{out}: {e}")));
        eprintln!("wrote {out}");
    }
}
