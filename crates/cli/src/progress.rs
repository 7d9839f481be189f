//! Progress of long work (campaigns, shrinking) on stderr: an indicatif bar on a terminal;
//! elsewhere (CI logs, pipes) plain lines — one each time another 10% is done, and one at
//! least every 5 seconds — whose content is deterministic apart from the times.
//!
//! A campaign over several files names the file on its bar or line
//! ([`Progress::for_file`]); off a terminal it prints at most one line every 5 seconds (the
//! files' result lines on stdout say when each ends), so 80 short files are not 800 lines.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// How often a plain line is printed at the least.
const EVERY: Duration = Duration::from_secs(5);

struct Plain {
    /// The last tenth reported (0..=10).
    tenth: u64,
    /// When the last line was printed.
    last: Instant,
}

/// A progress report for `total` units of work.
pub struct Progress {
    what: String,
    /// The file being run (`[3/80] sims/a.toml`), for a campaign over files.
    name: Option<String>,
    /// Plain lines only when [`EVERY`] passed since the last (not at each tenth).
    throttled: bool,
    total: u64,
    started: Instant,
    bar: Option<ProgressBar>,
    plain: Mutex<Plain>,
}

impl Progress {
    /// Progress of `total` units named `what` (e.g. "seeds"). A bar when stderr is a terminal,
    /// plain lines otherwise.
    pub fn new(what: &str, total: u64) -> Progress {
        Self::with_terminal(what, total, std::io::stderr().is_terminal())
    }

    /// Progress of `total` units of one file of several (`name`, e.g. `[3/80] sims/a.toml`):
    /// a bar headed by the name on a terminal; otherwise a plain line naming it at most every
    /// [`EVERY`] (none for a file that takes less).
    pub fn for_file(name: &str, what: &str, total: u64) -> Progress {
        Self::file_on(name, what, total, std::io::stderr().is_terminal())
    }

    fn file_on(name: &str, what: &str, total: u64, terminal: bool) -> Progress {
        let mut p = Self::with_terminal(what, total, terminal);
        p.name = Some(name.to_string());
        p.throttled = true;
        if let Some(bar) = &p.bar {
            bar.set_style(
                ProgressStyle::with_template(&format!(
                    "{{prefix}} {{bar:20}} {{pos}}/{{len}} {what}, eta {{eta}} {{msg}}"
                ))
                .expect("valid template"),
            );
            bar.set_prefix(name.to_string());
        }
        p
    }

    /// No progress at all (`--quiet`): every report is dropped.
    pub fn hidden(what: &str, total: u64) -> Progress {
        let mut p = Self::with_terminal(what, total, false);
        p.bar = Some(ProgressBar::hidden());
        p
    }

    fn with_terminal(what: &str, total: u64, terminal: bool) -> Progress {
        let bar = terminal.then(|| {
            let bar = ProgressBar::new(total);
            bar.set_style(
                ProgressStyle::with_template(&format!(
                    "{{bar:40}} {{pos}}/{{len}} {what}, {{elapsed}} elapsed, eta {{eta}} {{msg}}"
                ))
                .expect("valid template"),
            );
            bar
        });
        let now = Instant::now();
        Progress {
            what: what.to_string(),
            name: None,
            throttled: false,
            total,
            started: now,
            bar,
            plain: Mutex::new(Plain {
                tenth: 0,
                last: now,
            }),
        }
    }

    /// Progress of work of unknown length (shrinking): a spinner with the latest news on a
    /// terminal, the news as plain lines otherwise.
    pub fn spinner() -> Progress {
        let terminal = std::io::stderr().is_terminal();
        let mut p = Self::with_terminal("steps", 0, false);
        if terminal {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {elapsed} {msg}").expect("valid template"),
            );
            bar.enable_steady_tick(Duration::from_millis(120));
            p.bar = Some(bar);
        }
        p
    }

    /// Reports that `done` units are done (from any thread).
    pub fn set(&self, done: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(done);
            return;
        }
        if let Some(line) = self.plain_line(done, Instant::now()) {
            eprintln!("{line}");
        }
    }

    /// The plain line to print for `done` at `now`, if one is due: when another tenth of
    /// the work is done, or [`EVERY`] passed since the last line.
    fn plain_line(&self, done: u64, now: Instant) -> Option<String> {
        let mut p = self.plain.lock().expect("no panic while holding it");
        let tenth = (done * 10).checked_div(self.total).unwrap_or(10).min(10);
        let quiet_while = now.duration_since(p.last) >= EVERY;
        let due = quiet_while || (tenth > p.tenth && !self.throttled);
        if !due {
            return None;
        }
        // A line for a tenth names the tenth's own count, not whichever count a worker thread
        // reported first, so these lines read the same in every run but for the times.
        let shown = if tenth > p.tenth && !self.throttled {
            self.total * tenth / 10
        } else {
            done
        };
        p.tenth = p.tenth.max(tenth);
        p.last = now;
        let name = self
            .name
            .as_ref()
            .map_or(String::new(), |n| format!("{n}: "));
        Some(format!(
            "  {name}{shown}/{} {} ({}%), {:.1}s",
            self.total,
            self.what,
            (shown * 100).checked_div(self.total).unwrap_or(100),
            now.duration_since(self.started).as_secs_f64()
        ))
    }

    /// Shows a line of news: as the bar's message on a terminal, printed otherwise.
    pub fn note(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.set_message(line.to_string()),
            None => eprintln!("  {line}"),
        }
    }

    /// Removes the bar (plain output needs no closing line).
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The display of a report's shrinking ([`locksim_explore::report::Shrinking`]): the line
/// `message(n)` on stderr when it starts on `n` seeds, then progress of `unit`.
pub fn shrinking(
    message: impl Fn(u64) -> String + Sync,
    unit: &'static str,
) -> impl Fn(locksim_explore::report::Shrinking) + Sync {
    use locksim_explore::report::Shrinking;
    let bar: std::sync::OnceLock<Progress> = std::sync::OnceLock::new();
    move |s| match s {
        Shrinking::Start(n) => {
            eprintln!("{}", message(n));
            let _ = bar.set(Progress::new(unit, n));
        }
        Shrinking::Done(k) => bar.get().into_iter().for_each(|b| b.set(k)),
        Shrinking::Finished => bar.get().into_iter().for_each(Progress::finish),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lines_come_at_each_tenth_and_after_a_quiet_while() {
        let p = Progress::with_terminal("seeds", 100, false);
        let t0 = p.started;
        let lines: Vec<u64> = (1..=100)
            .filter(|&d| p.plain_line(d, t0).is_some())
            .collect();
        assert_eq!(lines, vec![10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
        assert!(p.plain_line(100, t0).is_none(), "nothing new");
        let later = t0 + EVERY + Duration::from_millis(1);
        let line = p
            .plain_line(100, later)
            .expect("a line after a quiet while");
        assert!(line.starts_with("  100/100 seeds (100%), 5.0s"), "{line}");
    }

    #[test]
    fn a_files_plain_lines_name_it_and_come_at_most_every_five_seconds() {
        let p = Progress::file_on("[2/3] sims/a.toml", "seeds", 100, false);
        let t0 = p.started;
        assert!(
            (1..=100).all(|d| p.plain_line(d, t0).is_none()),
            "no line per tenth"
        );
        let soon = t0 + EVERY - Duration::from_millis(1);
        assert!(p.plain_line(40, soon).is_none(), "not before 5 s");
        let later = t0 + EVERY;
        let line = p.plain_line(40, later).expect("a line after 5 s");
        assert!(
            line.starts_with("  [2/3] sims/a.toml: 40/100 seeds (40%), 5.0s"),
            "{line}"
        );
        assert!(p.plain_line(90, later + Duration::from_secs(4)).is_none());
        assert!(p.plain_line(90, later + EVERY).is_some());
    }

    #[test]
    fn an_empty_job_does_not_divide_by_zero() {
        let p = Progress::with_terminal("seeds", 0, false);
        assert!(p.plain_line(0, p.started).is_some());
    }
}
