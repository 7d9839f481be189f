//! `--seeds N` and `--first-seed K`: the matrix's seed range, or, for campaign files, a range
//! that overrides each file's own `seeds` and `first_seed` (issue #47 item 5, issue #50 item 6).
//! The flags are read as text so that a value that is not a number is a one-line error
//! (exit 2) like every other bad value, not clap's three-line usage message.

use crate::campaign_file::CampaignFile;

use locksim_core::text::plural;

use crate::merge::MAX_SEEDS;

/// `--seeds` and `--first-seed` as given (each `None` when absent).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeedFlags {
    pub seeds: Option<u64>,
    pub first_seed: Option<u64>,
}

/// A whole number of `flag`, or a one-line error naming the flag and the value.
fn number(flag: &str, text: &str) -> Result<u64, String> {
    let t = text.trim();
    t.parse::<u64>().map_err(|_| {
        let example = if flag == "--seeds" { 100 } else { 1000 };
        if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
            let most = if flag == "--seeds" {
                MAX_SEEDS
            } else {
                u64::MAX
            };
            format!("{flag} `{text}` is too large: at most {most} (e.g. {flag} {example})")
        } else {
            format!("{flag} `{text}` is not a whole number (e.g. {flag} {example})")
        }
    })
}

impl SeedFlags {
    /// Reads the flags' text: `--seeds` from 1 to [`MAX_SEEDS`], `--first-seed` any `u64`, and
    /// together they must fit in 64 bits.
    ///
    /// # Errors
    /// One line naming the flag and what it must be.
    pub fn parse(seeds: Option<&str>, first_seed: Option<&str>) -> Result<Self, String> {
        let seeds = seeds.map(|t| number("--seeds", t)).transpose()?;
        let first_seed = first_seed.map(|t| number("--first-seed", t)).transpose()?;
        if let Some(n) = seeds {
            if n == 0 || n > MAX_SEEDS {
                return Err(format!(
                    "--seeds must be from 1 to {MAX_SEEDS} (split bigger campaigns with --shard)"
                ));
            }
        }
        if let (Some(n), Some(k)) = (seeds, first_seed) {
            if k.checked_add(n).is_none() {
                return Err("--first-seed + --seeds does not fit in 64 bits".into());
            }
        }
        Ok(SeedFlags { seeds, first_seed })
    }

    /// Whether either flag was given (for campaign files: whether they override).
    pub fn given(&self) -> bool {
        self.seeds.is_some() || self.first_seed.is_some()
    }

    /// Makes `file` run the flags' seeds instead of its own.
    ///
    /// # Errors
    /// When its own count from `--first-seed` (or `--seeds` from its own first seed) runs past
    /// 2^64, naming the file.
    pub fn apply(&self, file: &mut CampaignFile) -> Result<(), String> {
        let seeds = self.seeds.unwrap_or(file.seeds);
        let first_seed = self.first_seed.unwrap_or(file.first_seed);
        if first_seed.checked_add(seeds).is_none() {
            return Err(format!(
                "{}: {} from {first_seed} (--seeds, --first-seed and the file's own) run past 2^64",
                file.path.display(),
                plural(seeds, "seed"),
            ));
        }
        file.seeds = seeds;
        file.first_seed = first_seed;
        Ok(())
    }

    /// The line that says, once per run, that campaign files run other seeds than their own.
    pub fn note(&self) -> String {
        match (self.seeds, self.first_seed) {
            (Some(n), Some(k)) => format!("seeds: {n} from {k} (overriding each file's own)"),
            (Some(n), None) => format!(
                "seeds: {n} from each file's own first_seed (overriding each file's own count)"
            ),
            (None, Some(k)) => {
                format!("seeds: each file's own count from {k} (overriding each file's first_seed)")
            }
            (None, None) => String::new(),
        }
    }

    /// The flags as a command line would give them (` --seeds 3 --first-seed 7`), for "Made
    /// by:" lines.
    pub fn flags(&self) -> String {
        let mut s = String::new();
        if let Some(n) = self.seeds {
            s += &format!(" --seeds {n}");
        }
        if let Some(k) = self.first_seed {
            s += &format!(" --first-seed {k}");
        }
        s
    }
}

/// What a file's FAIL verdict adds when it ran other seeds than its own: which seeds it ran,
/// and which the file names, so that a failure under overridden seeds reads as one.
pub fn overridden(file: &CampaignFile, own: (u64, u64)) -> String {
    let (first, seeds) = own;
    if (file.first_seed, file.seeds) == (first, seeds) {
        return String::new();
    }
    format!(
        " (under overridden seeds {}‥{}; the file's own are {}‥{})",
        file.first_seed,
        file.first_seed + (file.seeds - 1),
        first,
        first.saturating_add(seeds.saturating_sub(1))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_values_are_one_line_errors_naming_the_flag() {
        for (seeds, first, needle) in [
            (Some("0"), None, "--seeds must be from 1"),
            (Some("abc"), None, "--seeds `abc` is not a whole number"),
            (
                Some("99999999999999999999999"),
                None,
                "--seeds `99999999999999999999999` is too large",
            ),
            (Some("-3"), None, "--seeds `-3`"),
            (Some("1000001"), None, "--seeds must be from 1"),
            (None, Some("x"), "--first-seed `x`"),
            (Some("2"), Some("18446744073709551615"), "64 bits"),
        ] {
            let e = SeedFlags::parse(seeds, first).unwrap_err();
            assert!(e.contains(needle) && !e.contains('\n'), "{e}");
        }
        let f = SeedFlags::parse(Some(" 3"), Some("7")).unwrap();
        assert_eq!((f.seeds, f.first_seed), (Some(3), Some(7)));
        assert_eq!(f.note(), "seeds: 3 from 7 (overriding each file's own)");
        assert_eq!(f.flags(), " --seeds 3 --first-seed 7");
        assert!(!SeedFlags::parse(None, None).unwrap().given());
    }
}
