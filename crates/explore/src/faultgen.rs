//! Draws a fault plan from a seed for a set of fault kinds. `mixed` draws two to four kinds;
//! `swarm` switches each kind on with probability ½ and draws one to four faults of each. Each kind draws from its own
//! ChaCha stream, so restricting or extending the kinds does not reshuffle the others' faults.
//! Magnitudes scale with the workload's TTL: pauses and partitions from a tenth of a TTL to
//! three TTLs, clock steps up to two TTLs (a quarter of them hit every lock server at once, as
//! a bad shared NTP source does), drift from a few ppm to 5%. For TTLs above a third of a day
//! the scale stops at a third of a day, so that no fault lasts longer than the day a fault may
//! last ([`MAX_FAULT_NS`]): `--set ttl=12h` gets faults of up to a day, not of 36 hours.
//!
//! Under `network = "tcp"` a `duplicate` window drawn by `mixed` or `swarm` is drawn (so the
//! other faults of the seed keep their times and shapes) and then left out of the plan: a TCP
//! connection delivers each segment once, so the fault does not exist there. The `duplicate`
//! kind on its own is refused under tcp ([`check_kinds`]).
//!
//! Those shapes are knobs ([`FaultShape`], given with `--set` or swept with `locksim sweep
//! --vary`): `pause_min`/`pause_max`, `step_max`, `drift_min_ppm`/`drift_max_ppm` (or
//! `drift_ppm` for both), `partition_max`. A knob left unset draws exactly as before, so every
//! existing seed keeps its plan.

use locksim_core::fault::MAX_FAULT_NS;
use locksim_core::{
    Cluster, Fault, FaultKind, FaultPlan, Nanos, Network, NodeId, TimedFault, Workload,
};
use locksim_sim::world::{stream, Stream};
use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

const BASE: [FaultKind; 9] = FaultKind::BASE;

/// The fault generator's shape parameters; `None` keeps the default, which scales with the
/// TTL (see the module's docs). Durations in nanoseconds of true time, drift in parts per
/// million of the node's clock rate.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultShape {
    /// Shortest process pause, ns (default: a tenth of the TTL, or `pause_max` if less).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_min: Option<Nanos>,
    /// Longest process pause, ns (default: three TTLs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_max: Option<Nanos>,
    /// Largest clock step, forward or back, ns (default: two TTLs; the smallest is a tenth
    /// of the TTL, or `step_max` if less).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_max: Option<Nanos>,
    /// Smallest drift magnitude, ppm (default: 10, or `drift_max_ppm` if less).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_min_ppm: Option<u32>,
    /// Largest drift magnitude, ppm; with either drift knob set, magnitudes are drawn evenly
    /// from `drift_min_ppm..=drift_max_ppm` with a random sign (default: half from 10..=1,000,
    /// half from 10,000..=50,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_max_ppm: Option<u32>,
    /// Longest partition (and leader isolation), ns (default: three TTLs; the shortest is a
    /// quarter of the TTL, or `partition_max` if less).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition_max: Option<Nanos>,
}

/// The fault generator's knobs accepted by `--set` (and `--vary`), with their meaning.
pub const FAULT_KNOBS: &[(&str, &str)] = &[
    ("pause_min", "shortest drawn process pause (default ttl/10)"),
    ("pause_max", "longest drawn process pause (default 3 × ttl)"),
    ("step_max", "largest drawn clock step, forward or back (default 2 × ttl)"),
    (
        "drift_ppm",
        "every drawn clock drift has this magnitude, ppm, with a random sign (sets drift_min_ppm and drift_max_ppm)",
    ),
    ("drift_min_ppm", "smallest drawn clock drift magnitude, ppm (default 10)"),
    (
        "drift_max_ppm",
        "largest drawn clock drift magnitude, ppm (default: half of the drifts 10..1000, half 10000..50000)",
    ),
    (
        "partition_max",
        "longest drawn partition or leader isolation (default 3 × ttl)",
    ),
];

impl FaultShape {
    /// `true` when every knob keeps its default.
    pub fn is_default(&self) -> bool {
        *self == FaultShape::default()
    }

    /// Applies one knob; `Ok(false)` when `key` is not a fault-shape knob. `parse` reads a
    /// duration (non-negative, with a unit).
    ///
    /// # Errors
    /// A bad value, naming the key.
    pub fn apply(
        &mut self,
        key: &str,
        v: &str,
        parse: &dyn Fn(&str, &str) -> Result<Nanos, String>,
    ) -> Result<bool, String> {
        let ppm = |v: &str| {
            v.parse::<u32>()
                .ok()
                .filter(|n| *n <= 500_000)
                .ok_or_else(|| format!("`{key}={v}` must be an integer from 0 to 500000 (ppm)"))
        };
        match key {
            "pause_min" => self.pause_min = Some(parse(key, v)?),
            "pause_max" => self.pause_max = Some(parse(key, v)?),
            "step_max" => self.step_max = Some(parse(key, v)?),
            "partition_max" => self.partition_max = Some(parse(key, v)?),
            "drift_min_ppm" => self.drift_min_ppm = Some(ppm(v)?),
            "drift_max_ppm" => self.drift_max_ppm = Some(ppm(v)?),
            "drift_ppm" => {
                let n = ppm(v)?;
                self.drift_min_ppm = Some(n);
                self.drift_max_ppm = Some(n);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Checks that each range is not empty.
    ///
    /// # Errors
    /// A minimum above its maximum, naming both knobs.
    pub fn validate(&self) -> Result<(), String> {
        use locksim_core::time::fmt_nanos;
        if let (Some(lo), Some(hi)) = (self.pause_min, self.pause_max) {
            if lo > hi {
                return Err(format!(
                    "`pause_min` ({}) is above `pause_max` ({})",
                    fmt_nanos(lo as i128),
                    fmt_nanos(hi as i128)
                ));
            }
        }
        if let (Some(lo), Some(hi)) = (self.drift_min_ppm, self.drift_max_ppm) {
            if lo > hi {
                return Err(format!(
                    "`drift_min_ppm` ({lo}) is above `drift_max_ppm` ({hi})"
                ));
            }
        }
        Ok(())
    }
}

/// Draws the fault plan of `seed` for `kinds`, with the default shapes.
pub fn generate(seed: u64, kinds: &[FaultKind], cluster: &Cluster, w: &Workload) -> FaultPlan {
    generate_shaped(seed, kinds, cluster, w, &FaultShape::default())
}

/// Draws the fault plan of `seed` for `kinds`, with the shapes of `shape`.
pub fn generate_shaped(
    seed: u64,
    kinds: &[FaultKind],
    cluster: &Cluster,
    w: &Workload,
    shape: &FaultShape,
) -> FaultPlan {
    let mut faults = Vec::new();
    for &kind in kinds {
        let mut rng = stream(seed, Stream::Faults, kind as u64);
        match kind {
            FaultKind::None => {}
            FaultKind::Swarm => {
                let mut on: Vec<FaultKind> =
                    BASE.iter().copied().filter(|_| rng.gen_bool(0.5)).collect();
                if on.is_empty() {
                    on.push(*BASE.choose(&mut rng).expect("non-empty"));
                }
                let intensity = rng.gen_range(1..=4);
                for k in on {
                    for _ in 0..rng.gen_range(1..=intensity) {
                        let f = draw(k, &mut rng, cluster, w, shape);
                        if exists(k, w) {
                            faults.extend(f);
                        }
                    }
                }
            }
            FaultKind::Mixed => {
                let mut pool = BASE.to_vec();
                pool.shuffle(&mut rng);
                let n = rng.gen_range(2..=4);
                for &k in &pool[..n] {
                    for _ in 0..rng.gen_range(1..=2) {
                        let f = draw(k, &mut rng, cluster, w, shape);
                        if exists(k, w) {
                            faults.extend(f);
                        }
                    }
                }
            }
            k => {
                for _ in 0..rng.gen_range(1..=3) {
                    faults.extend(draw(k, &mut rng, cluster, w, shape));
                }
            }
        }
    }
    FaultPlan::new(faults)
}

/// `false` for a fault kind the workload's network model cannot have: `duplicate` under tcp.
fn exists(kind: FaultKind, w: &Workload) -> bool {
    !(kind == FaultKind::Duplicate && w.network == Network::Tcp)
}

/// Refuses fault kinds the workload's network model cannot have (`duplicate` under tcp),
/// before any seed runs; `mixed` and `swarm` leave such draws out instead (module docs).
///
/// # Errors
/// A one-line message that names the kind and the way out (`network = "datagram"`).
pub fn check_kinds(kinds: &[FaultKind], w: &Workload) -> Result<(), String> {
    match kinds.iter().find(|&&k| !exists(k, w)) {
        Some(_) => Err(format!(
            "faults `duplicate`: {}",
            locksim_core::scenario::DUPLICATE_UNDER_TCP
        )),
        None => Ok(()),
    }
}

fn between(rng: &mut ChaCha8Rng, lo: Nanos, hi: Nanos) -> Nanos {
    rng.gen_range(lo..=hi.max(lo))
}

fn subset(rng: &mut ChaCha8Rng, from: &[NodeId]) -> (Vec<NodeId>, Vec<NodeId>) {
    loop {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for &n in from {
            if rng.gen_bool(0.5) {
                a.push(n)
            } else {
                b.push(n)
            }
        }
        if !a.is_empty() && !b.is_empty() {
            return (a, b);
        }
    }
}

/// The TTL that fault magnitudes scale with: the workload's, at most a third of a day (the
/// longest faults last three of it).
fn scale(w: &Workload) -> Nanos {
    w.ttl.min(MAX_FAULT_NS / 3)
}

fn draw(
    kind: FaultKind,
    rng: &mut ChaCha8Rng,
    c: &Cluster,
    w: &Workload,
    shape: &FaultShape,
) -> Vec<TimedFault> {
    let ttl = scale(w);
    let at = between(rng, 0, w.duration.saturating_sub(ttl / 2));
    let servers: Vec<NodeId> = c.server_ids().collect();
    let clients: Vec<NodeId> = c.client_ids().collect();
    let all: Vec<NodeId> = (0..c.nodes()).collect();
    let pick = |rng: &mut ChaCha8Rng, v: &[NodeId]| *v.choose(rng).expect("non-empty");
    let window = |rng: &mut ChaCha8Rng| between(rng, ttl / 4, 3 * ttl);
    let fault = match kind {
        FaultKind::Partition => {
            let duration = match shape.partition_max {
                None => window(rng),
                Some(hi) => between(rng, (ttl / 4).min(hi), hi),
            };
            match rng.gen_range(0..4) {
                0 => Fault::Isolate {
                    node: pick(rng, &all[..all.len() - 1]),
                    duration,
                    mode: locksim_core::fault::CutMode::Drop,
                },
                1 => {
                    let (a, b) = subset(rng, &all);
                    Fault::Partition {
                        a,
                        b,
                        duration,
                        mode: locksim_core::fault::CutMode::Drop,
                    }
                }
                2 => Fault::Partition {
                    a: vec![pick(rng, &clients)],
                    b: servers,
                    duration,
                    mode: locksim_core::fault::CutMode::Drop,
                },
                _ => {
                    let (from, to) = subset(rng, &all);
                    Fault::PartitionOneway {
                        from,
                        to,
                        duration,
                        mode: locksim_core::fault::CutMode::Drop,
                    }
                }
            }
        }
        FaultKind::Pause => {
            let node = if rng.gen_bool(0.7) {
                pick(rng, &clients)
            } else {
                pick(rng, &servers)
            };
            Fault::Pause {
                node,
                duration: match (shape.pause_min, shape.pause_max) {
                    (None, None) => between(rng, ttl / 10, 3 * ttl),
                    (lo, hi) => {
                        let hi = hi.unwrap_or(3 * ttl);
                        between(rng, lo.unwrap_or((ttl / 10).min(hi)), hi)
                    }
                },
                task: locksim_core::fault::PauseTask::Process,
            }
        }
        FaultKind::ClockJump => {
            let size = match shape.step_max {
                None => between(rng, ttl / 10, 2 * ttl),
                Some(hi) => between(rng, (ttl / 10).min(hi), hi),
            } as i64;
            let delta = if rng.gen_bool(0.5) { size } else { -size };
            match rng.gen_range(0..20) {
                // A bad shared time source steps every lock server at once.
                0..=4 => {
                    return servers
                        .iter()
                        .map(|&node| TimedFault {
                            at,
                            fault: Fault::ClockStep { node, delta },
                            after: None,
                        })
                        .collect()
                }
                5..=13 => Fault::ClockStep {
                    node: pick(rng, &servers),
                    delta,
                },
                _ => Fault::ClockStep {
                    node: pick(rng, &clients),
                    delta,
                },
            }
        }
        FaultKind::ClockDrift => {
            let node = pick(rng, &all[..all.len() - 1]);
            let size = match (shape.drift_min_ppm, shape.drift_max_ppm) {
                (None, None) => {
                    if rng.gen_bool(0.5) {
                        rng.gen_range(10..=1_000)
                    } else {
                        rng.gen_range(10_000..=50_000)
                    }
                }
                (lo, hi) => {
                    let hi = i64::from(hi.unwrap_or(50_000));
                    rng.gen_range(lo.map_or(10.min(hi), i64::from)..=hi)
                }
            };
            Fault::ClockDrift {
                node,
                ppm: if rng.gen_bool(0.5) { size } else { -size },
            }
        }
        FaultKind::CrashRestart => Fault::Crash {
            node: pick(rng, &servers),
            restart_after: Some(between(rng, 0, 2 * ttl)),
        },
        FaultKind::Loss => {
            let (from, to) = subset(rng, &all);
            Fault::Loss {
                from,
                to,
                rate_pct: rng.gen_range(10..=60),
                duration: window(rng),
            }
        }
        FaultKind::Delay => {
            let (from, to) = subset(rng, &all);
            let max = between(rng, ttl / 20, ttl);
            Fault::Delay {
                from,
                to,
                min: 0,
                max,
                duration: window(rng),
            }
        }
        FaultKind::Duplicate => {
            let (from, to) = subset(rng, &all);
            Fault::Duplicate {
                from,
                to,
                rate_pct: rng.gen_range(10..=50),
                duration: window(rng),
            }
        }
        FaultKind::DropReplies => Fault::DropReplies {
            clients: vec![pick(rng, &clients)],
            servers: servers.clone(),
            duration: window(rng),
        },
        FaultKind::LeaderChange => Fault::IsolateLeader {
            duration: match shape.partition_max {
                None => window(rng),
                Some(hi) => between(rng, (ttl / 4).min(hi), hi),
            },
            mode: locksim_core::fault::CutMode::Drop,
        },
        FaultKind::None | FaultKind::Mixed | FaultKind::Swarm => {
            unreachable!("handled by generate")
        }
    };
    vec![TimedFault {
        at,
        fault,
        after: None,
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster() -> Cluster {
        Cluster {
            servers: 5,
            clients: 3,
        }
    }

    #[test]
    fn same_seed_same_plan_and_valid() {
        let w = Workload::default();
        for seed in 0..200 {
            let p = generate(seed, &[FaultKind::Mixed], &cluster(), &w);
            assert_eq!(p, generate(seed, &[FaultKind::Mixed], &cluster(), &w));
            p.validate(&cluster()).unwrap();
            assert!(p.faults.windows(2).all(|f| f[0].at <= f[1].at));
            assert!(p.faults.iter().all(|f| f.at < w.duration));
        }
        assert!(generate(0, &[FaultKind::None], &cluster(), &w).is_empty());
    }

    #[test]
    fn plans_stay_within_the_limits_for_long_ttls() {
        for ttl_h in [8, 12, 24] {
            let w = Workload {
                ttl: ttl_h * 3_600 * locksim_core::time::SEC,
                duration: 3_600 * locksim_core::time::SEC,
                ..Workload::default()
            };
            let mut longest = 0;
            for seed in 0..100 {
                for kind in FaultKind::ALL {
                    let p = generate(seed, &[kind], &cluster(), &w);
                    p.validate(&cluster())
                        .unwrap_or_else(|e| panic!("ttl {ttl_h}h, {kind} seed {seed}: {e}"));
                    for f in &p.faults {
                        if let Fault::Pause { duration, .. } | Fault::Partition { duration, .. } =
                            f.fault
                        {
                            longest = longest.max(duration);
                        }
                    }
                }
            }
            assert!(
                longest > MAX_FAULT_NS / 2,
                "faults still scale up: {longest}"
            );
        }
        // Short TTLs are unchanged.
        let w = Workload::default();
        assert_eq!(scale(&w), w.ttl);
    }

    #[test]
    fn kinds_draw_independently() {
        let w = Workload::default();
        let c = cluster();
        let pause = generate(7, &[FaultKind::Pause], &c, &w);
        let both = generate(7, &[FaultKind::Pause, FaultKind::ClockJump], &c, &w);
        for f in &pause.faults {
            assert!(
                both.faults.contains(f),
                "adding a kind reshuffled the pauses"
            );
        }
    }
}

#[cfg(test)]
mod shape_tests {
    use super::*;
    use locksim_core::time::{MS, SEC};

    fn cluster() -> Cluster {
        Cluster {
            servers: 5,
            clients: 3,
        }
    }

    /// The plans of seeds 0..50 of every kind, hashed: the knobs' defaults must keep every
    /// seed's plan (and so every recorded trace and campaign expectation) as it was.
    /// Pinned to `datagram`: under tcp `mixed` and `swarm` leave their duplicate windows out
    /// (tests/tcp.rs checks that the rest of each plan is the datagram one).
    #[test]
    fn the_default_shape_draws_the_plans_of_before() {
        let w = Workload {
            network: Network::Datagram,
            ..Workload::default()
        };
        let mut text = String::new();
        for seed in 0..50 {
            for kind in FaultKind::ALL {
                let p = generate_shaped(seed, &[kind], &cluster(), &w, &FaultShape::default());
                text += &serde_json::to_string(&p).unwrap();
            }
        }
        let digest = format!("{:016x}", xxhash_rust::xxh3::xxh3_64(text.as_bytes()));
        assert_eq!(digest, "44868ded570d3cd6");
    }

    #[test]
    fn shape_knobs_bound_what_is_drawn() {
        let w = Workload::default();
        let shape = FaultShape {
            pause_min: Some(300 * MS),
            pause_max: Some(400 * MS),
            step_max: Some(50 * MS),
            drift_min_ppm: Some(20_000),
            drift_max_ppm: Some(20_000),
            partition_max: Some(2 * SEC),
        };
        let (mut pauses, mut steps, mut drifts, mut cuts) = (0, 0, 0, 0);
        for seed in 0..100 {
            let kinds = [
                FaultKind::Pause,
                FaultKind::ClockJump,
                FaultKind::ClockDrift,
                FaultKind::Partition,
            ];
            let p = generate_shaped(seed, &kinds, &cluster(), &w, &shape);
            p.validate(&cluster()).unwrap();
            for f in &p.faults {
                match f.fault {
                    Fault::Pause { duration, .. } => {
                        assert!((300 * MS..=400 * MS).contains(&duration), "{duration}");
                        pauses += 1;
                    }
                    Fault::ClockStep { delta, .. } => {
                        assert!(delta.unsigned_abs() <= 50 * MS, "{delta}");
                        steps += 1;
                    }
                    Fault::ClockDrift { ppm, .. } => {
                        assert_eq!(ppm.abs(), 20_000);
                        drifts += 1;
                    }
                    Fault::Partition { duration, .. }
                    | Fault::Isolate { duration, .. }
                    | Fault::PartitionOneway { duration, .. } => {
                        assert!(duration <= 2 * SEC, "{duration}");
                        cuts += 1;
                    }
                    _ => {}
                }
            }
        }
        assert!(pauses > 50 && steps > 50 && drifts > 50 && cuts > 50);
    }

    #[test]
    fn bad_shapes_are_refused_by_name() {
        let mut s = FaultShape::default();
        let parse = |_: &str, v: &str| -> Result<Nanos, String> {
            locksim_core::time::parse_duration(v)
                .map(|d| d as Nanos)
                .map_err(|e| e.to_string())
        };
        assert!(s.apply("pause_min", "2s", &parse).unwrap());
        assert!(s.apply("pause_max", "1s", &parse).unwrap());
        assert!(s.validate().unwrap_err().contains("pause_min"));
        assert!(!s.apply("ttl", "1s", &parse).unwrap());
        assert!(s
            .apply("drift_ppm", "-5", &parse)
            .unwrap_err()
            .contains("drift_ppm"));
    }
}
