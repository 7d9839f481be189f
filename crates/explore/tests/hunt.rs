//! `locksim hunt`'s search (issue #28): deterministic from its first seed whatever the number
//! of threads, the random search is the campaign's seed order, and a find is a scenario that
//! replays its violation.

use locksim_core::{FaultKind, Property};
use locksim_explore::hunt::{feedback::feedback, hunt, Hunt, Search};
use locksim_explore::{check_scenario, Setup};

fn spec(search: Search, first_seed: u64, jobs: usize) -> Hunt {
    Hunt {
        setup: Setup::registered("redlock", &[]).expect("redlock"),
        kinds: vec![FaultKind::CrashRestart],
        property: Some(Property::S1),
        budget: 200,
        search,
        first_seed,
        jobs,
    }
}

#[test]
fn the_same_first_seed_gives_the_same_search_path_and_find() {
    let a = hunt(&spec(Search::Guided, 7, 1), &|_, _, _| {});
    let b = hunt(&spec(Search::Guided, 7, 2), &|_, _, _| {});
    assert_eq!(a.path_digest, b.path_digest);
    assert_eq!(a.runs, b.runs);
    let (fa, fb) = (a.found.expect("a find"), b.found.expect("a find"));
    assert_eq!(fa.scenario, fb.scenario);
    assert_eq!(fa.history.digest(), fb.history.digest());
    let c = hunt(&spec(Search::Guided, 8, 2), &|_, _, _| {});
    assert_ne!(
        a.path_digest, c.path_digest,
        "another first seed, another path"
    );
}

#[test]
fn the_random_search_runs_seeds_in_order_and_stops_at_the_first_violation() {
    let setup = Setup::registered("redlock", &[]).expect("redlock");
    let first = 1100;
    let expected = (first..first + 200)
        .position(|seed| {
            let s = setup.scenario(seed, &[FaultKind::CrashRestart]);
            check_scenario(&s, setup.algo.clone())
                .verdict
                .violates(Property::S1)
        })
        .expect("some seed of 200 violates S1") as u64;
    let out = hunt(&spec(Search::Random, first, 2), &|_, _, _| {});
    let f = out.found.expect("a find");
    assert_eq!(out.runs, expected + 1);
    assert_eq!(f.scenario.seed, first + expected);
}

#[test]
fn a_guided_find_replays_its_violation_and_its_feedback_saw_two_holders() {
    let out = hunt(&spec(Search::Guided, 3, 2), &|_, _, _| {});
    let f = out.found.expect("a find");
    let again = check_scenario(
        &f.scenario,
        Setup::registered("redlock", &[]).expect("redlock").algo,
    );
    assert!(again.verdict.violates(Property::S1));
    assert_eq!(again.history.expect("ran").digest(), f.history.digest());
    // Two clients believed they held at once: the nearest miss is a hit.
    assert_eq!(feedback(&f.history).hold_gap, Some(0));
}

#[test]
fn a_budget_without_a_violation_says_so() {
    let h = Hunt {
        setup: Setup::registered("central", &[]).expect("central"),
        kinds: vec![FaultKind::None],
        property: Some(Property::S1),
        budget: 24,
        search: Search::Guided,
        first_seed: 0,
        jobs: 2,
    };
    let out = hunt(&h, &|_, _, _| {});
    assert!(out.found.is_none());
    assert_eq!(out.runs, 24);
    assert!(out.corpus > 0 && out.features > 0);
    assert_eq!(out.runs_without_grants, 0);
    // The overhead report: every run made, time in the runs and in the search.
    assert_eq!(out.time.ran, 24);
    assert!(out.time.runs > 0.0 && out.time.search > 0.0);
    assert!((0.0..1.0).contains(&out.time.share()));
}

#[test]
fn mutants_keep_the_explicit_plan_and_always_change_the_scenario() {
    use locksim_core::{Fault, FaultPlan, TimedFault};
    use rand::SeedableRng;
    let pause = TimedFault::at(
        2_000_000_000,
        Fault::Pause {
            node: 5,
            duration: 1_500_000_000,
            task: Default::default(),
        },
    );
    let setup = Setup::registered("central", &[])
        .expect("central")
        .with_plan(FaultPlan::new(vec![pause.clone()]));
    let kinds = [FaultKind::Partition];
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let mut parent = setup.scenario(0, &kinds);
    // (The explicit pause names a node outside the cluster: the moments come from a plain run.)
    let plain = Setup::registered("central", &[]).expect("central");
    let ran = check_scenario(&plain.scenario(0, &kinds), plain.algo.clone());
    let moments = locksim_explore::hunt::feedback::moments(ran.history.as_ref().expect("ran"));
    let mut same = 0;
    for _ in 0..300 {
        let (m, done) =
            locksim_explore::hunt::mutate::mutate(&parent, &moments, &setup, &kinds, &mut rng);
        assert!(
            m.faults.faults.contains(&pause),
            "the explicit pause is gone"
        );
        // One mutation always changes the scenario; two may cancel out (an add, then a drop
        // of what was added), which the hunt then skips as already run.
        if m == parent {
            assert_eq!(done.len(), 2, "{done:?} left the scenario as it was");
            same += 1;
        }
        parent = m;
    }
    assert!(same < 10, "{same} of 300 mutants were their parent");
}

#[test]
fn a_lease_taken_over_after_its_deadline_is_a_near_miss_not_a_hit() {
    // central under pauses, seed 108: a safe run whose nearest miss is a 2.04 ms gap between
    // one client's hold ending and the next grant (seed 107 before #49's schedule change).
    let setup = Setup::registered("central", &[]).expect("central");
    let out = check_scenario(
        &setup.scenario(108, &[FaultKind::Pause]),
        setup.algo.clone(),
    );
    assert!(out.verdict.is_safe());
    let gap = feedback(&out.history.expect("ran")).hold_gap;
    assert!(gap.is_some_and(|g| g > 0), "hold gap {gap:?}");
}

#[test]
fn the_guided_search_needs_at_most_six_fifths_of_the_random_searchs_runs() {
    // Five of every six runs after the warm-up are the random search's seeds, in order.
    let mut past_warmup = 0;
    for first in [1000, 2000, 5000, 7000] {
        let random = hunt(
            &Hunt {
                budget: 400,
                ..spec(Search::Random, first, 2)
            },
            &|_, _, _| {},
        );
        assert!(
            random.found.is_some(),
            "first seed {first}: random found nothing"
        );
        let guided = hunt(
            &Hunt {
                budget: random.runs + random.runs / 5 + 1,
                ..spec(Search::Guided, first, 2)
            },
            &|_, _, _| {},
        );
        assert!(
            guided.found.is_some(),
            "first seed {first}: guided found nothing in {} runs (random: {})",
            guided.runs,
            random.runs
        );
        past_warmup += (random.runs > locksim_explore::hunt::WARMUP + 6) as u32;
    }
    assert!(
        past_warmup > 0,
        "every find within the warm-up: the test tests nothing"
    );
}

#[test]
fn a_swarm_run_draws_a_subset_of_the_kinds_from_its_seed_and_replays() {
    use locksim_explore::hunt::swarm;
    let setup = Setup::registered("central", &[]).expect("central");
    let pool = swarm::pool(&[FaultKind::Mixed], &setup.workload);
    assert!(
        !pool.contains(&FaultKind::Duplicate),
        "tcp has no duplicates"
    );
    assert_eq!(pool.len(), 8);
    // Deterministic from the seed; subsets vary between seeds, each within the pool.
    let a = swarm::scenario(&setup, &[FaultKind::Mixed], 5);
    assert_eq!(a, swarm::scenario(&setup, &[FaultKind::Mixed], 5));
    let mut sizes = std::collections::BTreeSet::new();
    for seed in 0..40 {
        let d = swarm::draw(seed, &pool);
        assert!(!d.on.is_empty());
        assert!(d.on.iter().all(|(k, n, pct)| pool.contains(k)
            && (1..=swarm::MOST_PER_KIND).contains(n)
            && (25..=200).contains(pct)));
        sizes.insert(d.on.len());
        let s = swarm::scenario(&setup, &[FaultKind::Mixed], seed);
        assert_eq!(s.seed, seed, "the random search's seed");
        s.faults.validate(&s.cluster).expect("a valid plan");
    }
    assert!(sizes.len() >= 3, "subsets of one size only: {sizes:?}");
    // One kind: only counts and scales vary.
    let one = swarm::pool(&[FaultKind::CrashRestart], &setup.workload);
    assert_eq!(one, vec![FaultKind::CrashRestart]);
    // A swarm hunt finds, and its find replays.
    let out = hunt(&spec(Search::Swarm, 0, 2), &|_, _, _| {});
    let f = out.found.expect("a swarm find");
    let again = check_scenario(&f.scenario, setup_of("redlock"));
    assert!(again.verdict.violates(Property::S1));
    assert_eq!(again.history.expect("ran").digest(), f.history.digest());
    let b = hunt(&spec(Search::Swarm, 0, 1), &|_, _, _| {});
    assert_eq!(out.path_digest, b.path_digest, "whatever the jobs");
}

fn setup_of(algo: &str) -> std::sync::Arc<dyn locksim_explore::sim::LockAlgorithm> {
    Setup::registered(algo, &[]).expect(algo).algo
}

#[test]
fn aimed_mutants_wait_for_the_parents_lock_moments_and_fire() {
    use locksim_explore::hunt::feedback::moments;
    use locksim_explore::hunt::mutate::{mutate, Mutation};
    use rand::SeedableRng;
    let setup = Setup::registered("redlock", &[]).expect("redlock");
    let kinds = [FaultKind::Pause, FaultKind::CrashRestart];
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
    let (mut aimed, mut fired, mut tuned, mut held) = (0, 0, 0, 0);
    let ttl = setup.workload.ttl;
    for seed in 0..30 {
        let parent = setup.scenario(seed, &kinds);
        let ran = check_scenario(&parent, setup.algo.clone());
        let m = moments(ran.history.as_ref().expect("ran"));
        assert!(m.iter().any(|m| m.nth > 1), "seed {seed}: counted moments");
        for _ in 0..6 {
            let (child, done) = mutate(&parent, &m, &setup, &kinds, &mut rng);
            if done.contains(&Mutation::Tune) {
                tuned += 1;
                assert!(child.faults.faults.iter().any(|f| {
                    let d = f.after.as_ref().map(|t| t.delay);
                    let mags = f.fault.magnitudes();
                    d.into_iter()
                        .chain(mags.iter().map(|(_, v)| *v))
                        .any(|v| v > ttl * 89 / 100 && v < ttl * 126 / 100)
                }));
            }
            if done.contains(&Mutation::Holder) {
                held += 1;
            }
            if done == [Mutation::Aim] {
                aimed += 1;
                let child_out = check_scenario(&child, setup.algo.clone());
                let h = child_out.history.expect("ran");
                if locksim_core::trigger::never_fired(&child.faults, &h, &child.cluster).is_empty()
                {
                    fired += 1;
                }
                let again = check_scenario(&child, setup.algo.clone());
                assert_eq!(again.history.expect("ran").digest(), h.digest(), "replays");
            }
        }
    }
    assert!(
        aimed >= 10 && tuned >= 5 && held >= 1,
        "{aimed} {tuned} {held}"
    );
    assert!(
        fired * 10 >= aimed * 7,
        "{fired} of {aimed} aimed mutants fired their trigger"
    );
}

/// A write with a fault's edge between its invoke and its answer is a feature of its own
/// (issue #51: the lock's states at a fault's edges), and only such a write makes it.
#[test]
fn a_write_crossed_by_a_fault_edge_is_a_feature() {
    use locksim_core::history::{EventKind, OpF, Phase};
    use locksim_explore::hunt::feedback::crossed_write;
    let setup = Setup::registered("central", &[]).expect("central");
    let (mut crossed_runs, mut clean_runs) = (0, 0);
    for seed in 0..40 {
        let h = check_scenario(
            &setup.scenario(seed, &[FaultKind::Pause]),
            setup.algo.clone(),
        )
        .history
        .expect("ran");
        // Each write's answer, and whether a fault or a fault's end came between.
        let mut open: std::collections::BTreeMap<u32, bool> = Default::default();
        let mut answers: Vec<Phase> = Vec::new();
        for e in &h.events {
            match &e.kind {
                EventKind::Op {
                    f: OpF::Write,
                    phase: Phase::Invoke,
                    ..
                } => {
                    open.insert(e.node, false);
                }
                EventKind::Op {
                    f: OpF::Write,
                    phase,
                    ..
                } if open.remove(&e.node) == Some(true) => answers.push(*phase),
                EventKind::Fault { .. } | EventKind::FaultEnd { .. } => {
                    open.values_mut().for_each(|c| *c = true)
                }
                _ => {}
            }
        }
        let features = feedback(&h).features;
        for p in [Phase::Ok, Phase::Fail, Phase::Info] {
            assert_eq!(
                features.binary_search(&crossed_write(p)).is_ok(),
                answers.contains(&p),
                "seed {seed}, {p:?}"
            );
        }
        if answers.is_empty() {
            clean_runs += 1;
        } else {
            crossed_runs += 1;
        }
    }
    assert!(
        crossed_runs > 0 && clean_runs > 0,
        "{crossed_runs} {clean_runs}"
    );
}
