//! The public lock failures of issue #50, each a `sims/` pair: the failure file violates the
//! property its story is about on a seed, and the remedy (the same file with the knob at its
//! fix) does not; a bad value of each new knob is one error naming the key.

use locksim_core::Property;
use locksim_explore::check_scenario;

/// Seed `seed` of campaign file `sims/FILE`, with `extra` knobs set on top of the file's.
fn sims_run(file: &str, seed: u64, extra: &[(&str, &str)]) -> locksim_explore::SeedOutcome {
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
