//! Draws a fault plan from a seed for a set of fault kinds. `mixed` draws two to four kinds;
//! `swarm` switches each kind on with probability ½ and draws one to four faults of each. Each kind draws from its own
//! ChaCha stream, so restricting or extending the kinds does not reshuffle the others' faults.
//! Magnitudes scale with the workload's TTL: pauses and partitions from a tenth of a TTL to
//! three TTLs, clock steps up to two TTLs (a quarter of them hit every lock server at once, as
//! a bad shared NTP source does), drift from a few ppm to 5%. For TTLs above a third of a day
//! the scale stops at a third of a day, so that no fault lasts longer than the day a fault may
//! last ([`MAX_FAULT_NS`]): `--set ttl=12h` gets faults of up to a day, not of 36 hours.

use locksim_core::fault::MAX_FAULT_NS;
use locksim_core::{Cluster, Fault, FaultKind, FaultPlan, Nanos, NodeId, TimedFault, Workload};
use locksim_sim::world::{stream, Stream};
use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

const BASE: [FaultKind; 9] = FaultKind::BASE;

/// Draws the fault plan of `seed` for `kinds`.
pub fn generate(seed: u64, kinds: &[FaultKind], cluster: &Cluster, w: &Workload) -> FaultPlan {
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
                        faults.extend(draw(k, &mut rng, cluster, w));
                    }
                }
            }
            FaultKind::Mixed => {
                let mut pool = BASE.to_vec();
                pool.shuffle(&mut rng);
                let n = rng.gen_range(2..=4);
                for &k in &pool[..n] {
                    for _ in 0..rng.gen_range(1..=2) {
                        faults.extend(draw(k, &mut rng, cluster, w));
                    }
                }
            }
            k => {
                for _ in 0..rng.gen_range(1..=3) {
                    faults.extend(draw(k, &mut rng, cluster, w));
                }
            }
        }
    }
    FaultPlan::new(faults)
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

fn draw(kind: FaultKind, rng: &mut ChaCha8Rng, c: &Cluster, w: &Workload) -> Vec<TimedFault> {
    let ttl = scale(w);
    let at = between(rng, 0, w.duration.saturating_sub(ttl / 2));
    let servers: Vec<NodeId> = c.server_ids().collect();
    let clients: Vec<NodeId> = c.client_ids().collect();
    let all: Vec<NodeId> = (0..c.nodes()).collect();
    let pick = |rng: &mut ChaCha8Rng, v: &[NodeId]| *v.choose(rng).expect("non-empty");
    let window = |rng: &mut ChaCha8Rng| between(rng, ttl / 4, 3 * ttl);
    let fault = match kind {
        FaultKind::Partition => {
            let duration = window(rng);
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
                duration: between(rng, ttl / 10, 3 * ttl),
                task: locksim_core::fault::PauseTask::Process,
            }
        }
        FaultKind::ClockJump => {
            let size = between(rng, ttl / 10, 2 * ttl) as i64;
            let delta = if rng.gen_bool(0.5) { size } else { -size };
            match rng.gen_range(0..20) {
                // A bad shared time source steps every lock server at once.
                0..=4 => {
                    return servers
                        .iter()
                        .map(|&node| TimedFault {
                            at,
                            fault: Fault::ClockStep { node, delta },
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
            let size = if rng.gen_bool(0.5) {
                rng.gen_range(10..=1_000)
            } else {
                rng.gen_range(10_000..=50_000)
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
            duration: window(rng),
            mode: locksim_core::fault::CutMode::Drop,
        },
        FaultKind::None | FaultKind::Mixed | FaultKind::Swarm => {
            unreachable!("handled by generate")
        }
    };
    vec![TimedFault { at, fault }]
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
