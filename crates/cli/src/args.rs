//! The argument groups several commands share (`--max-memory`, `--fail-on`, `--check`,
//! `--jobs`): parsed here, so that the command modules import them from below and never
//! from each other. Nothing here imports a command module.

use locksim_core::Property;

/// `--max-memory`, shared by every command that runs simulations.
#[derive(clap::Args, Clone)]
pub(crate) struct MemoryArgs {
    /// Refuse to run a scenario whose estimated peak memory (for all the runs at once) is
    /// above this size, e.g. 4GiB or 512MiB; the estimate grows with clients, servers and
    /// simulated time.
    #[arg(long, value_name = "SIZE", default_value = "4GiB")]
    max_memory: String,
}

impl MemoryArgs {
    /// The limit, bytes.
    pub(crate) fn limit(&self) -> Result<u64, String> {
        locksim_explore::budget::parse_size(&self.max_memory)
            .map_err(|e| format!("--max-memory: {e}"))
    }
    /// Refuses one run of `s` over the limit.
    pub(crate) fn check(&self, s: &locksim_core::Scenario) -> Result<(), String> {
        locksim_explore::budget::check(s, 1, self.limit()?)
    }
    /// Refuses a campaign whose runs (`jobs` at once) would not fit under the limit.
    pub(crate) fn check_campaign(
        &self,
        spec: &locksim_explore::CampaignSpec,
        jobs: usize,
    ) -> Result<(), String> {
        locksim_explore::campaign_run::check_memory(spec, jobs, self.limit()?)
    }
}

/// Properties whose columns `--check` shows.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Check {
    /// L1–L3.
    Liveness,
}

/// `--fail-on`: the properties whose violation fails a campaign or a merge (exit 1), and
/// whose cells must have been exercised (grants, faults that took effect, decided checks)
/// for a clean exit 0 (else exit 3).
#[derive(clap::Args, Clone, Default)]
pub(crate) struct FailOn {
    /// Exit 1 when a seed violates one of these properties, comma-separated (S1..S4, L1..L3,
    /// `safety` for S1–S4, `liveness` for L1–L3; each at most once, no empty item), or a seed
    /// failed to run; else exit 3 when a cell proves nothing for them (no grants, no fault
    /// took effect, one of them undecided or not judged for its algorithm) or no seed was
    /// judged; else 0. For CI; without it the matrix is exploratory and exits 0 whatever
    /// it finds (a campaign file's own expectations still give exit 1). On one shard it
    /// judges that shard's seeds; on merge, every merged cell.
    #[arg(long, value_name = "P[,P]")]
    fail_on: Option<String>,
}

impl FailOn {
    /// The properties, validated, in report order (empty without the flag).
    ///
    /// # Errors
    /// An empty list or a name that is no property, naming it.
    pub(crate) fn properties(&self) -> Result<Vec<Property>, String> {
        self.fail_on
            .as_deref()
            .map_or(Ok(Vec::new()), locksim_explore::gate::parse)
    }
}

/// `--jobs`, or every core.
pub(crate) fn jobs_of(jobs: Option<usize>) -> Result<usize, String> {
    match jobs {
        Some(j) if j == 0 || j > 1024 => Err("--jobs must be from 1 to 1024".into()),
        Some(j) => Ok(j),
        None => Ok(std::thread::available_parallelism().map_or(1, |n| n.get())),
    }
}
