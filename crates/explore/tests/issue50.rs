//! The public lock failures of issue #50, each a `sims/` pair: the failure file violates the
//! property its story is about on a seed, and the remedy (the same file with the knob at its
//! fix) does not; a bad value of each new knob is one error naming the key.

use locksim_core::Property;
use locksim_explore::check_scenario;

/// Seed `seed` of campaign file `sims/FILE`, with `extra` knobs set on top of the file's.
fn sims_run(file: &str, seed: u64, extra: &[(&str, &str)]) -> locksim_explore::SeedOutcome {
    sims_run_with(file, seed, extra, |_| {})
}

/// [`sims_run`], with `edit` applied to the scenario before it runs.
fn sims_run_with(
    file: &str,
    seed: u64,
    extra: &[(&str, &str)],
    edit: impl Fn(&mut locksim_core::Scenario),
) -> locksim_explore::SeedOutcome {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../sims")
        .join(file);
    let f = locksim_explore::campaign_file::CampaignFile::read(&path).unwrap();
    let kinds = locksim_core::fault::parse_kinds(&f.faults).unwrap();
    let setup = f.spec(1).unwrap().setups.remove(0);
    let mut scenario = setup.scenario(seed, &kinds);
    for (k, v) in extra {
        scenario.config.insert(k.to_string(), v.to_string());
    }
    edit(&mut scenario);
    let algo =
        locksim_algos::build(&scenario.algorithm, &scenario.config, &scenario.workload).unwrap();
    let out = check_scenario(&scenario, algo);
    assert!(out.history.is_some(), "{file} seed {seed} ran");
    out
}

/// The error `algo` gives for `key=value`.
fn refused(algo: &str, key: &str, value: &str) -> String {
    let s = vec![(key.to_string(), value.to_string())];
    locksim_explore::Setup::registered(algo, &s)
        .err()
        .unwrap_or_else(|| panic!("{algo} accepted {key}={value}"))
}

/// Item 4: `SETNX` then `EXPIRE`, with c1 crashing the moment its key is set, orphans the key
/// (L3); the atomic `SET NX PX` does not.
#[test]
fn a_crash_between_setnx_and_expire_orphans_the_key_and_set_nx_px_does_not() {
    let file = "central-setnx-expire-crash.toml";
    for seed in 0..3 {
        let two_step = sims_run(file, seed, &[]);
        assert!(
            two_step.verdict.violates(Property::L3),
            "seed {seed}: {:?}",
            two_step.verdict
        );
        let atomic = sims_run(file, seed, &[("acquire", "atomic")]);
        assert!(
            !atomic.verdict.violates(Property::L3),
            "seed {seed}: {:?}",
            atomic.verdict.violations
        );
    }
    for algo in ["central", "central-fencing"] {
        let err = refused(algo, "acquire", "setnx");
        assert!(
            err.contains("`acquire=setnx` is not valid (choose atomic or setnx-expire)"),
            "{algo}: {err}"
        );
    }
}

/// Item 3: a heartbeat conditioned on the holder's own last write loses the lock after one
/// lost success reply (L2); client-go's re-reading renewer keeps it.
#[test]
fn a_lost_heartbeat_reply_costs_a_last_write_renewer_its_lock_and_not_a_rereading_one() {
    let file = "k8s-lease-heartbeat-on-last-write.toml";
    for seed in 0..3 {
        let last_write = sims_run(file, seed, &[]);
        assert!(
            last_write.verdict.violates(Property::L2),
            "seed {seed}: {:?}",
            last_write.verdict
        );
        let reread = sims_run(file, seed, &[("renewer", "reread")]);
        assert!(
            reread.verdict.violations.is_empty(),
            "seed {seed}: {:?}",
            reread.verdict.violations
        );
    }
    let err = refused("k8s-lease", "renewer", "dynamodb");
    assert!(
        err.contains("`renewer=dynamodb` is not valid (choose reread or last-write)"),
        "{err}"
    );
}

/// Item 2: a leader whose work drains for 5 s after client-go's ReleaseOnCancel gave the Lease
/// back acts beside the next leader (S1, S2 on some seeds); the same leader stopping before
/// its release does not; a negative value is one error naming the key.
#[test]
fn work_after_a_release_on_cancel_overlaps_the_next_leader_and_draining_first_does_not() {
    let file = "k8s-lease-release-on-cancel-work-drains.toml";
    let seeds = 0..6;
    let late: Vec<u64> = seeds
        .clone()
        .filter(|&seed| {
            let out = sims_run(file, seed, &[]);
            out.verdict.violates(Property::S1) && out.verdict.violates(Property::S2)
        })
        .collect();
    assert!(!late.is_empty(), "no S1+S2 in seeds {seeds:?}");
    for seed in late {
        let drained = sims_run_with(file, seed, &[], |s| {
            let c1 = s.workload.per_client.get_mut("c1").expect("c1's table");
            c1.work_after_release = Some(0);
        });
        assert!(
            drained.verdict.violations.is_empty(),
            "seed {seed}: {:?}",
            drained.verdict.violations
        );
    }
    let s = vec![("c1.work_after_release".to_string(), "-1s".to_string())];
    let err = locksim_explore::Setup::registered("k8s-lease", &s)
        .err()
        .expect("a negative work_after_release refused");
    assert!(err.contains("work_after_release"), "{err}");
    let s = vec![("work_after_release".to_string(), "soon".to_string())];
    let err = locksim_explore::Setup::registered("central", &s)
        .err()
        .expect("work_after_release=soon refused");
    assert!(err.contains("work_after_release"), "{err}");
}

/// Item 1: a client-go leader under a slow (not down) API server gives its Lease up at its
/// RenewDeadline while a renewal is on its way and every earlier one succeeded: L2's clause
/// for a service that was renewing the lock. A deadline a slow round fits in keeps the lock.
#[test]
fn a_leader_that_steps_down_under_a_slow_api_server_violates_l2_and_a_longer_deadline_does_not() {
    let file = "k8s-lease-slow-api-server-renew-deadline.toml";
    for seed in 0..3 {
        let out = sims_run(file, seed, &[]);
        let l2 = out
            .verdict
            .violations
            .iter()
            .find(|v| v.kind == Property::L2)
            .unwrap_or_else(|| panic!("seed {seed}: {:?}", out.verdict));
        assert!(
            l2.summary.contains("while the service was renewing it")
                && l2.summary.contains("the service was slow, not down"),
            "seed {seed}: {}",
            l2.summary
        );
        assert_eq!(
            l2.events.len(),
            4,
            "grant, give-up, renewal on its way, delay"
        );
        let longer = sims_run_with(file, seed, &[], |s| {
            s.workload.renew_deadline = Some(14_000_000_000)
        });
        assert!(
            !longer.verdict.violates(Property::L2),
            "seed {seed}: {:?}",
            longer.verdict.violations
        );
    }
}
