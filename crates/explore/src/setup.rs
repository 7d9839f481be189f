//! From a name and `key=value` settings to runnable scenarios.
//!
//! Settings are shared between the workload (clients, keys, ttl, …) and the algorithm's own
//! knobs; a key that neither knows is an error that lists both.

use std::collections::BTreeMap;
use std::sync::Arc;

use locksim_algos::knobs::parse_flag;
use locksim_core::scenario_file::set_client_field;
use locksim_core::time::parse_duration;
use locksim_core::{
    Cluster, CrashKind, FaultKind, FaultPlan, Nanos, Network, RenewRetry, Scenario, Workload,
};
use locksim_sim::LockAlgorithm;

use crate::faultgen::{self, FaultShape, FAULT_KNOBS};

/// Workload settings accepted by `--set`, with their meaning.
pub const WORKLOAD_KNOBS: &[(&str, &str)] = &[
    ("clients", "number of client processes (1 to 64; default 3)"),
    ("keys", "number of lock keys (default 1)"),
    ("ttl", "lease length asked for (default 1s)"),
    ("duration", "simulated length of the run (default 10s)"),
    ("writes", "resource writes per grant (default 2)"),
    (
        "work_min",
        "least local work before each write (default 10ms)",
    ),
    (
        "work_max",
        "most local work before each write (default 500ms)",
    ),
    ("think_max", "longest pause between rounds (default 100ms)"),
    (
        "retry_delay",
        "longest wait before retrying a failed acquire: the cap of every retry policy, and what `fixed` always waits (default 200ms)",
    ),
    (
        "retry",
        "how a client waits after a failed acquire (AWS Architecture Blog, \"Exponential Backoff And Jitter\"): fixed (always retry_delay: the herd) | uniform (in [0, retry_delay]) | exponential (min(retry_delay, retry_base·2^n)) | exponential-full (uniform in [0, that]) | exponential-equal (half of it plus uniform in the other half) | exponential-decorrelated (min(retry_delay, uniform in [retry_base, 3·previous])) (default uniform)",
    ),
    (
        "retry_base",
        "first wait of the exponential retry policies (default 10ms)",
    ),
    (
        "retry_cap",
        "the same setting as retry_delay: the longest wait of every retry policy",
    ),
    (
        "retry_attempts",
        "failed acquires in a row after which a client gives the round up and starts a new one (0: never; default 0)",
    ),
    ("rpc_timeout", "timeout of resource writes (default 100ms)"),
    (
        "check_validity",
        "check remaining validity before each write (default true)",
    ),
    (
        "renew_every",
        "renew the lease this often from a task beside the work; each renewal's validity becomes the deadline; off to disable (default off)",
    ),
    (
        "renew_deadline",
        "stop acting when no renewal has succeeded for this long, from the send of the last one (client-go's RenewDeadline; default off)",
    ),
    (
        "renew_retry",
        "after a renewal without an answer: until-expiry (retry every renew_every/3 until the lease would end) | give-up (default until-expiry)",
    ),
    (
        "step_down",
        "how long a holder keeps acting after it learns its lock is lost (default 0)",
    ),
    (
        "work_after_release",
        "how long a holder keeps acting (work, writes) after its own release, as a leader whose work drains after client-go's ReleaseOnCancel gave the Lease back (kubernetes#71490, controller-runtime#1126); S1/S2 judge its late writes (default 0: it stops first)",
    ),
    (
        "uncertainty",
        "declared clock-uncertainty bound of the lock service, for S3 (default ttl/100 + 2ms)",
    ),
    (
        "network",
        "network model: tcp (connections with a handshake, ordered delivery, Linux's retransmission: what a fault swallowed lands after the heal) | datagram (independent messages; what a fault stops is gone; traces without the field) (default tcp)",
    ),
    (
        "tcp_rto_min",
        "under tcp: floor of the retransmission timeout, Linux's tcp_rto_min, at most 120s (default 200ms)",
    ),
    (
        "tcp_retries2",
        "under tcp: retransmissions before a connection is given up, Linux's net.ipv4.tcp_retries2 (default 15, about 15 minutes)",
    ),
    (
        "tcp_orphan_retries",
        "under tcp: retransmissions before an orphaned connection (closed by its application, e.g. after a request timeout, or by its process's death) is given up, Linux's net.ipv4.tcp_orphan_retries; 0 means 8, as on Linux (default 8, about 102 s)",
    ),
    (
        "crash",
        "under tcp, what a crash fault kills: process (SIGKILL, host up, as real mode's crash: its kernel closes its sockets as close() does, retransmitting what is unacknowledged, then FIN; RST if it had unread requests) | host (nothing answers until it is back) (default process)",
    ),
];

/// An algorithm with its settings, ready to run any seed.
#[derive(Clone)]
pub struct Setup {
    /// The algorithm's registered name (or the name a custom algorithm reports).
    pub algorithm: String,
    /// Its knobs, as given.
    pub config: BTreeMap<String, String>,
    /// The algorithm.
    pub algo: Arc<dyn LockAlgorithm>,
    /// Cluster shape.
    pub cluster: Cluster,
    /// Client behaviour.
    pub workload: Workload,
    /// Explicit faults added to every seed's plan (`[[fault]]` entries, `--plan`).
    pub plan: FaultPlan,
    /// The fault generator's shape knobs (`pause_max`, `step_max`, …; defaults scale with the
    /// TTL).
    pub shape: FaultShape,
}

fn dur(key: &str, v: &str) -> Result<Nanos, String> {
    match parse_duration(v) {
        Ok(d) if d > locksim_core::scenario::MAX_DURATION_NS as i128 => {
            Err(format!("`{key}={v}` is longer than a day"))
        }
        Ok(d) if d >= 0 => Ok(d as Nanos),
        Ok(_) => Err(format!("`{key}={v}` must not be negative")),
        Err(e) => Err(format!("`{key}`: {e}")),
    }
}

fn positive(key: &str, v: &str) -> Result<Nanos, String> {
    match dur(key, v)? {
        0 => Err(format!("`{key}={v}` must be more than zero")),
        d => Ok(d),
    }
}

fn int(key: &str, v: &str, lo: u32, hi: u32) -> Result<u32, String> {
    v.parse::<u32>()
        .ok()
        .filter(|n| (lo..=hi).contains(n))
        .ok_or_else(|| format!("`{key}={v}` must be an integer from {lo} to {hi}"))
}

/// Splits a per-client setting `c2.ttl` into (`c2`, `ttl`).
pub fn client_setting(key: &str) -> Option<(&str, &str)> {
    let (name, field) = key.split_once('.')?;
    let digits = name.strip_prefix('c')?;
    (!digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())).then_some((name, field))
}

fn is_workload(key: &str) -> bool {
    WORKLOAD_KNOBS.iter().any(|w| w.0 == key)
        || FAULT_KNOBS.iter().any(|w| w.0 == key)
        || client_setting(key).is_some()
}

/// Applies one workload setting; `Ok(false)` when `key` is not a workload setting.
///
/// # Errors
/// When the value is not valid for the key.
pub fn apply_workload(
    w: &mut Workload,
    clients: &mut u32,
    key: &str,
    v: &str,
) -> Result<bool, String> {
    match key {
        "clients" => *clients = int(key, v, 1, 64)?,
        "keys" => w.keys = int(key, v, 1, 1_000)?,
        "ttl" => w.ttl = positive(key, v)?,
        "duration" => w.duration = positive(key, v)?,
        "writes" => w.writes_per_hold = int(key, v, 0, 1_000)?,
        "work_min" => w.work_min = dur(key, v)?,
        "work_max" => w.work_max = dur(key, v)?,
        "think_max" => w.think_max = dur(key, v)?,
        "retry_delay" | "retry_cap" => w.retry_delay_max = dur(key, v)?,
        "retry" => {
            w.retry = locksim_core::RetryPolicy::parse(v).map_err(|e| format!("`retry`: {e}"))?
        }
        "retry_base" => w.retry_base = dur(key, v)?,
        "retry_attempts" => w.retry_attempts = int(key, v, 0, 1_000_000)?,
        "rpc_timeout" => w.rpc_timeout = positive(key, v)?,
        "check_validity" => {
            w.check_validity = parse_flag(v).ok_or_else(|| {
                format!("`{key}={v}` must be true or false (or on/off, yes/no, 1/0)")
            })?
        }
        "uncertainty" => w.uncertainty = Some(dur(key, v)?),
        "renew_deadline" => {
            w.renew_deadline = match parse_flag(v) {
                Some(false) => None,
                _ => Some(positive(key, v)?),
            }
        }
        "renew_retry" => {
            w.renew_retry = match v {
                "until-expiry" => RenewRetry::UntilExpiry,
                "give-up" => RenewRetry::GiveUp,
                _ => {
                    return Err(format!(
                        "`{key}={v}` is not valid (choose until-expiry or give-up)"
                    ))
                }
            }
        }
        "step_down" => w.step_down = dur(key, v)?,
        "work_after_release" => w.work_after_release = dur(key, v)?,
        "network" => {
            w.network = match v {
                "tcp" => Network::Tcp,
                "datagram" => Network::Datagram,
                _ => return Err(format!("`{key}={v}` is not valid (choose tcp or datagram)")),
            }
        }
        "tcp_rto_min" => {
            w.tcp_rto_min = positive(key, v)?;
            if w.tcp_rto_min > locksim_core::scenario::TCP_RTO_MAX {
                return Err(format!(
                    "`{key}={v}` is above 120s, Linux's largest retransmission timeout \
                     (TCP_RTO_MAX), which it must not exceed"
                ));
            }
        }
        "tcp_retries2" => w.tcp_retries2 = int(key, v, 0, 255)?,
        "tcp_orphan_retries" => w.tcp_orphan_retries = int(key, v, 0, 255)?,
        "crash" => {
            w.crash = match v {
                "process" => CrashKind::Process,
                "host" => CrashKind::Host,
                _ => return Err(format!("`{key}={v}` is not valid (choose process or host)")),
            }
        }
        k if client_setting(k).is_some() => {
            let (name, field) = client_setting(k).expect("checked");
            let p = w.per_client.entry(name.to_string()).or_default();
            set_client_field(p, field, v).map_err(|e| format!("client {name}: {e}"))?;
        }
        "renew_every" => {
            w.renew_every = match parse_flag(v) {
                Some(false) => None,
                _ => Some(positive(key, v)?),
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// The algorithm's own name `name` for a workload setting, with the setting it names
/// (zookeeper's `session_timeout` is `ttl`), or `None` when `name` is no alias.
pub(crate) fn alias_of(algorithm: &str, name: &str) -> Option<(&'static str, &'static str)> {
    locksim_algos::workload_aliases(algorithm)
        .iter()
        .find(|a| a.0 == name)
        .copied()
}

/// The error for an alias given beside the setting it names, both under `scope` (`c2.`, or
/// empty for the workload's section or a client's own table).
pub(crate) fn both_given(algorithm: &str, scope: &str, alias: &str, real: &str) -> String {
    format!(
        "`{scope}{alias}` and `{scope}{real}` are the same setting ({alias} is {algorithm}'s name for {real}): give one"
    )
}

/// Turns an algorithm's names for workload settings ([`locksim_algos::workload_aliases`]:
/// `zookeeper`'s `session_timeout`) into the workload's (`ttl`), in the workload's section
/// and in per-client tables alike (`c1.session_timeout` is `c1.ttl`).
///
/// # Errors
/// When both the alias and the setting it names are given for the same scope.
fn resolve_aliases(
    algorithm: &str,
    settings: &[(String, String)],
) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = Vec::with_capacity(settings.len());
    for (k, v) in settings {
        // A per-client key `cN.name` keeps its `cN.` prefix.
        let (scope, name) = match client_setting(k) {
            Some((client, field)) => (format!("{client}."), field),
            None => (String::new(), k.as_str()),
        };
        let Some((alias, real)) = alias_of(algorithm, name) else {
            out.push((k.clone(), v.clone()));
            continue;
        };
        let real_key = format!("{scope}{real}");
        if settings.iter().any(|(o, _)| *o == real_key) {
            return Err(format!(
                "{algorithm}: {}",
                both_given(algorithm, &scope, alias, real)
            ));
        }
        out.push((real_key, v.clone()));
    }
    Ok(out)
}

impl Setup {
    /// Builds a registered algorithm with `settings` (`key=value` pairs, workload settings and
    /// the algorithm's knobs mixed).
    ///
    /// # Errors
    /// An unknown algorithm, a malformed pair, an unknown key or a bad value, each in one line
    /// that names the problem and the valid choices.
    pub fn registered(algorithm: &str, settings: &[(String, String)]) -> Result<Setup, String> {
        let algo_knobs = locksim_algos::knobs(algorithm).ok_or_else(|| {
            format!(
                "unknown algorithm `{algorithm}` (valid: {})",
                locksim_algos::names()
            )
        })?;
        if let Some(r) = locksim_algos::registered(algorithm) {
            // A setting of a registered algorithm that is also a workload or fault setting
            // would never reach it (`--set writes=3` is the workload's).
            let taken = |k: &str| {
                WORKLOAD_KNOBS.iter().any(|w| w.0 == k) || FAULT_KNOBS.iter().any(|f| f.0 == k)
            };
            if let Some(k) = r.knobs.iter().find(|k| taken(k.key)) {
                return Err(format!(
                    "algorithm `{algorithm}`: its setting `{}` is a workload or fault setting's name (see `list`), so it would never reach the algorithm: rename it",
                    k.key
                ));
            }
        }
        let mut workload = Workload::default();
        let mut clients = 3;
        let mut config = BTreeMap::new();
        let mut shape = FaultShape::default();
        let given = settings;
        let settings = resolve_aliases(algorithm, settings)?;
        for (i, (k, v)) in settings.iter().enumerate() {
            // An error about an alias's setting names the key the user wrote
            // (`session_timeout`, not `ttl`).
            let named = |e: String| match given.get(i) {
                Some((g, _)) if g != k => e.replace(&format!("`{k}"), &format!("`{g}")),
                _ => e,
            };
            if apply_workload(&mut workload, &mut clients, k, v).map_err(named)?
                || shape.apply(k, v, &dur)?
            {
                continue;
            }
            if !algo_knobs.iter().any(|n| n.names(k)) {
                let mut valid: Vec<&str> = WORKLOAD_KNOBS.iter().map(|k| k.0).collect();
                valid.extend(FAULT_KNOBS.iter().map(|k| k.0));
                valid.extend(algo_knobs.iter().map(|k| k.key));
                valid.push("cN.<per-client setting>");
                return Err(format!(
                    "`{k}` is not a setting of {algorithm} (valid: {})",
                    valid.join(", ")
                ));
            }
            config.insert(k.clone(), v.clone());
        }
        if settings.iter().any(|(k, _)| k == "retry_delay")
            && settings.iter().any(|(k, _)| k == "retry_cap")
        {
            return Err(
                "`retry_delay` and `retry_cap` are the same setting (the longest retry wait): give one"
                    .into(),
            );
        }
        // What the algorithm's real client library does, where the user said nothing.
        for d in locksim_algos::client_defaults(algorithm) {
            if settings
                .iter()
                .any(|(k, _)| k == d.key || (d.key == "retry_delay" && k == "retry_cap"))
            {
                continue;
            }
            if d.key == "retry_delay" {
                // The workload's own wait between attempts (the client library waits its own).
                workload.retry_delay_max = d.value(workload.ttl);
                continue;
            }
            // The setting (where nobody set it) takes the default scaled to a ttl.
            let fill = |every: &mut Option<Nanos>, deadline: &mut Option<Nanos>, ttl: Nanos| {
                let slot = match d.key {
                    "renew_every" => every,
                    "renew_deadline" => deadline,
                    other => unreachable!("client default for `{other}`"),
                };
                slot.get_or_insert(d.value(ttl).max(1));
            };
            let ttl = workload.ttl;
            fill(&mut workload.renew_every, &mut workload.renew_deadline, ttl);
            // A client with a ttl of its own scales the library's default to it.
            for p in workload.per_client.values_mut() {
                if let Some(ttl) = p.ttl {
                    fill(&mut p.renew_every, &mut p.renew_deadline, ttl);
                }
            }
        }
        if workload.work_min > workload.work_max {
            return Err(format!(
                "`work_min` ({}) is above `work_max` ({})",
                locksim_core::time::fmt_nanos(workload.work_min as i128),
                locksim_core::time::fmt_nanos(workload.work_max as i128)
            ));
        }
        workload
            .validate()
            .map_err(|e| e.replace("workload ", ""))?;
        workload.validate_clients(clients)?;
        shape.validate()?;
        let algo = locksim_algos::build(algorithm, &config, &workload)?;
        Ok(Setup::custom(algo, config, clients, workload).with_shape(shape))
    }

    /// Wraps any algorithm (your own included) with a workload.
    pub fn custom(
        algo: Arc<dyn LockAlgorithm>,
        config: BTreeMap<String, String>,
        clients: u32,
        workload: Workload,
    ) -> Setup {
        Setup {
            algorithm: algo.name().to_string(),
            cluster: Cluster {
                servers: algo.servers(),
                clients,
            },
            config,
            algo,
            workload,
            plan: FaultPlan::default(),
            shape: FaultShape::default(),
        }
    }

    /// The same setup with the fault generator's shapes set.
    pub fn with_shape(mut self, shape: FaultShape) -> Setup {
        self.shape = shape;
        self
    }

    /// The same setup with explicit faults added to every seed's plan.
    pub fn with_plan(mut self, plan: FaultPlan) -> Setup {
        self.plan = plan;
        self
    }

    /// The scenario of `seed` with a fault plan drawn for `kinds`, plus the explicit plan.
    pub fn scenario(&self, seed: u64, kinds: &[FaultKind]) -> Scenario {
        let mut faults =
            faultgen::generate_shaped(seed, kinds, &self.cluster, &self.workload, &self.shape)
                .faults;
        faults.extend(self.plan.faults.iter().cloned());
        Scenario {
            seed,
            algorithm: self.algorithm.clone(),
            config: self.config.clone(),
            cluster: self.cluster.clone(),
            workload: self.workload.clone(),
            fault_kinds: kinds.to_vec(),
            faults: FaultPlan::new(faults),
        }
    }

    /// Refuses what this setup's network model cannot have: the `duplicate` kind, or an
    /// explicit `duplicate` fault in its plan, under tcp.
    ///
    /// # Errors
    /// A one-line message naming the kind or the fault (`faults[i]`, from 0) and saying to set
    /// `network = "datagram"`.
    pub fn check_network(&self, kinds: &[FaultKind]) -> Result<(), String> {
        faultgen::check_kinds(kinds, &self.workload)?;
        if self.workload.network == Network::Tcp {
            if let Some(i) = self
                .plan
                .faults
                .iter()
                .position(|f| matches!(f.fault, locksim_core::Fault::Duplicate { .. }))
            {
                return Err(format!(
                    "faults[{i}]: {}",
                    locksim_core::scenario::DUPLICATE_UNDER_TCP
                ));
            }
        }
        Ok(())
    }

    /// True time at which this setup's runs end, ns (see [`Scenario::end`]).
    pub fn end(&self) -> Nanos {
        self.scenario(0, &[]).end()
    }
}

/// Splits `key=value`.
///
/// # Errors
/// When there is no `=` or the key is empty.
pub fn parse_setting(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(format!(
            "`{s}` is not a setting (write key=value, e.g. ttl=2s)"
        )),
    }
}

/// Builds several registered algorithms with one list of settings, as a campaign does: each
/// algorithm gets the workload settings and the algorithm settings it knows, so
/// `--set delayed_restart=true` reaches Redlock and leaves the central lock alone.
///
/// # Errors
/// An unknown algorithm, an algorithm named twice, a malformed setting, a key set twice, a key
/// no selected algorithm knows (listing the valid keys), or a bad value.
pub fn setups_for(algorithms: &[String], settings: &[String]) -> Result<Vec<Setup>, String> {
    let pairs = settings
        .iter()
        .map(|s| parse_setting(s))
        .collect::<Result<Vec<_>, _>>()?;
    // One value per knob and one cell per algorithm: a later value silently replacing an
    // earlier one, or an algorithm run twice, is a mistake worth naming.
    for (i, (k, v)) in pairs.iter().enumerate() {
        if let Some((_, first)) = pairs[..i].iter().find(|(k2, _)| k2 == k) {
            return Err(format!(
                "`{k}` is set twice (`{k}={first}`, then `{k}={v}`): give each setting once"
            ));
        }
    }
    for (i, a) in algorithms.iter().enumerate() {
        if algorithms[..i].contains(a) {
            return Err(format!(
                "algorithm `{a}` is named twice: it would run (and be counted) twice; name it once"
            ));
        }
    }
    let mut knobs = Vec::new();
    for a in algorithms {
        knobs.push(locksim_algos::knobs(a).ok_or_else(|| {
            format!(
                "unknown algorithm `{a}` (valid: {})",
                locksim_algos::names()
            )
        })?);
    }
    for (k, _) in &pairs {
        if !is_workload(k) && !knobs.iter().any(|ks| ks.iter().any(|n| n.names(k))) {
            let mut valid: Vec<&str> = WORKLOAD_KNOBS.iter().map(|w| w.0).collect();
            valid.extend(FAULT_KNOBS.iter().map(|k| k.0));
            for n in knobs.iter().flat_map(|ks| ks.iter()) {
                if !valid.contains(&n.key) {
                    valid.push(n.key);
                }
            }
            valid.push("cN.<per-client setting>");
            return Err(format!(
                "`{k}` is not a setting of {} (valid: {})",
                algorithms.join(" or "),
                valid.join(", ")
            ));
        }
    }
    algorithms
        .iter()
        .zip(knobs)
        .map(|(a, ks)| {
            let mine: Vec<(String, String)> = pairs
                .iter()
                .filter(|(k, _)| is_workload(k) || ks.iter().any(|n| n.names(k)))
                .cloned()
                .collect();
            Setup::registered(a, &mine)
        })
        .collect()
}

impl Setup {
    /// Rebuilds a registered algorithm from a scenario (as read from a trace).
    ///
    /// # Errors
    /// An unknown algorithm, a bad knob, or a cluster whose server count the algorithm's
    /// configuration does not have.
    pub fn from_scenario(s: &Scenario) -> Result<Setup, String> {
        let algo = locksim_algos::build(&s.algorithm, &s.config, &s.workload)?;
        if algo.servers() != s.cluster.servers {
            return Err(format!(
                "{} with these settings runs {} servers, but the scenario's cluster has {}",
                s.algorithm,
                algo.servers(),
                s.cluster.servers
            ));
        }
        Ok(Setup {
            algorithm: s.algorithm.clone(),
            config: s.config.clone(),
            algo,
            cluster: s.cluster.clone(),
            workload: s.workload.clone(),
            plan: FaultPlan::default(),
            shape: FaultShape::default(),
        })
    }
}
