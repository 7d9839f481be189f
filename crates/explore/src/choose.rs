//! A scenario from `--algo` and `--set`, or from one campaign file, with seeded fault kinds
//! and an optional `--plan` file: what `locksim run`, `shrink`, `hunt` and `real` share.

use std::path::{Path, PathBuf};

use crate::campaign_file::{read_plan, CampaignFile};
use crate::{setups_for, Setup};
use locksim_core::fault::parse_kinds;
use locksim_core::{FaultKind, Scenario};

/// One run's setup, fault kinds and the command that makes it again.
pub struct Chosen {
    /// The algorithm with its settings and explicit plan.
    pub setup: Setup,
    /// The seeded fault kinds.
    pub kinds: Vec<FaultKind>,
    /// The options that choose it, for notes such as "made by: locksim run …".
    pub command: String,
}

impl Chosen {
    /// The scenario of `seed`.
    pub fn scenario(&self, seed: u64) -> Scenario {
        self.setup.scenario(seed, &self.kinds)
    }
}

/// Chooses the setup: from campaign file `file` (its settings, client tables and plan; with
/// several fault kinds, `faults` picks one), or from `algo` and `set`; `faults` defaults to
/// `mixed` there. `plan` adds a plan file's faults.
///
/// # Errors
/// A bad file, setting or kind, a file used with `--algo`/`--set`, or neither given.
pub fn choose(
    file: Option<&Path>,
    algo: Option<&str>,
    faults: Option<&str>,
    set: &[String],
    plan: Option<&PathBuf>,
) -> Result<Chosen, String> {
    let (mut setup, kinds, mut command) = match (file, algo) {
        (Some(_), Some(_)) => {
            return Err("give a campaign file or --algo, not both".into());
        }
        (Some(path), None) => {
            if !set.is_empty() {
                return Err(format!(
                    "{}: a campaign file carries its own settings; --set applies to --algo runs",
                    path.display()
                ));
            }
            let f = CampaignFile::read(path)?;
            let file_kinds = parse_kinds(&f.faults)?;
            let kinds = match faults {
                Some(k) => {
                    let k = parse_kinds(k)?;
                    if let Some(bad) = k.iter().find(|k| !file_kinds.contains(k)) {
                        return Err(format!(
                            "{}: `{bad}` is not one of the file's fault kinds ({})",
                            path.display(),
                            f.faults
                        ));
                    }
                    k
                }
                None if file_kinds.len() == 1 => file_kinds,
                None => {
                    return Err(format!(
                        "{}: the file has one cell per fault kind ({}); choose one with --faults",
                        path.display(),
                        f.faults
                    ))
                }
            };
            let setup = f.spec(1)?.setups.remove(0);
            let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
            let command = format!("{} --faults {}", path.display(), names.join(","));
            (setup, kinds, command)
        }
        (None, Some(algo)) => {
            let faults = faults.unwrap_or("mixed");
            let kinds = parse_kinds(faults)?;
            let setup = setups_for(&[algo.to_string()], set)?.remove(0);
            let sets: String = set.iter().map(|s| format!(" --set {s}")).collect();
            (
                setup,
                kinds,
                format!("--algo {algo} --faults {faults}{sets}"),
            )
        }
        (None, None) => return Err("give --algo NAME, or a campaign file FILE.toml".into()),
    };
    if let Some(p) = plan {
        let mut faults = setup.plan.faults.clone();
        faults.extend(read_plan(p, &setup)?.faults);
        setup = setup.with_plan(locksim_core::FaultPlan::new(faults));
        command += &format!(" --plan {}", p.display());
    }
    setup.check_network(&kinds)?;
    Ok(Chosen {
        setup,
        kinds,
        command,
    })
}
