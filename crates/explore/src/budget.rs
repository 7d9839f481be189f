//! A memory budget for simulations: refuse a scenario before running it when its estimated
//! peak memory is above the limit (`--max-memory`, default [`DEFAULT_MAX_MEMORY`]), instead of
//! letting a 1 KB trace that asks for a thousand clients for an hour grow past the machine.
//!
//! The estimate is linear in simulated node-seconds: a run keeps every event and every message
//! of its history, and both grow with the number of clients (each loops acquire → work → write
//! → release, retrying at its own pace) and, for replicated services, with the servers (Raft
//! heartbeats every tick), times the run's length; the checkers' memory is of the same order.
//! The constants were calibrated from the measured peak RSS of real runs; see [`estimate`].

use locksim_core::{Nanos, Scenario};

/// The default limit: 4 GiB.
pub const DEFAULT_MAX_MEMORY: u64 = 4 << 30;

/// Fixed cost of any run (runtime, tables, the checkers' working set), bytes.
const BASE: u64 = 16 << 20;
/// Bytes per client-second of simulated time (events, messages and the checkers' share).
const PER_CLIENT_SECOND: u64 = 16 << 10;
/// The same for `raft-lease` and algorithms locksim does not know: a Raft log keeps every
/// entry of the run, which about doubles the measured rate.
const PER_CLIENT_SECOND_HEAVY: u64 = 32 << 10;
/// Bytes per server² · second (all-to-all heartbeats of replicated services).
const PER_SERVER2_SECOND: u64 = 4 << 10;

/// The estimated peak memory of one run of `s`, bytes; `None` when it does not even fit in 64
/// bits (a cluster or duration far past any limit).
///
/// `BASE + (clients · per_client + servers² · PER_SERVER2_SECOND) · seconds`, where `seconds`
/// is the simulated run (workload, plus the harness's tail of one TTL and a second), rounded
/// up. Calibrated from the peak RSS of single runs (`/usr/bin/time -f %M locksim run --seed 1
/// --faults none --json …`, release build): the smallest run peaks at about 7 MB; `central`
/// with 64 clients uses 4.5 KB per client-second (24 MB for 60 s, 177 MB for 600 s, 1.0 GB
/// for an hour: linear), and 14.6 KB with no think or retry delay (the fastest loop); `redlock`
/// 9 KB, `ap-lock` 9 KB, `raft-lease` 14–22 KB per client-second, and `raft-lease` with 9
/// replicas 2.3 KB per server²-second. The constants sit above every measured rate, so a
/// scenario estimated under the limit stays under it; the issue's trace (998 clients for an
/// hour, which grew past 8 GB) is estimated at 55 GiB and refused.
pub fn estimate(s: &Scenario) -> Option<u64> {
    let run: Nanos = s
        .workload
        .duration
        .checked_add(s.workload.ttl)?
        .checked_add(1_000_000_000)?;
    let seconds = run.div_ceil(1_000_000_000);
    let servers = u64::from(s.cluster.servers);
    let per_client = match s.algorithm.as_str() {
        "central" | "central-fencing" | "redlock" | "ap-lock" => PER_CLIENT_SECOND,
        _ => PER_CLIENT_SECOND_HEAVY,
    };
    let per_second = u64::from(s.cluster.clients)
        .checked_mul(per_client)?
        .checked_add(
            servers
                .checked_mul(servers)?
                .checked_mul(PER_SERVER2_SECOND)?,
        )?;
    BASE.checked_add(per_second.checked_mul(seconds)?)
}

/// Bytes as people read them: `512 MiB`, `4.0 GiB`.
pub fn fmt_bytes(b: u64) -> String {
    if b >= 1 << 30 {
        format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
    } else {
        format!("{} MiB", b.div_ceil(1 << 20))
    }
}

/// `need` and `limit` (bytes) as people read them ([`fmt_bytes`]), with the bytes added to
/// both when the two would read alike: a refusal never says it needs about 17 MiB, more than
/// 17 MiB (an estimate of 16.1 MiB over a limit of 17,000,000 bytes, both rounded up).
pub fn exact_sizes(need: u64, limit: u64) -> (String, String) {
    let (n, l) = (fmt_bytes(need), fmt_bytes(limit));
    if n == l {
        (
            format!("{n} ({need} bytes)"),
            format!("{l} ({limit} bytes)"),
        )
    } else {
        (n, l)
    }
}

/// Refuses `s` when `runs` copies of it running at once (a campaign's worker threads) would
/// exceed `limit` bytes by the estimate.
///
/// # Errors
/// One line with the estimate, the limit and what to change; the two sizes never read alike
/// ([`exact_sizes`]).
pub fn check(s: &Scenario, runs: u64, limit: u64) -> Result<(), String> {
    let total = estimate(s).and_then(|e| e.checked_mul(runs.max(1)));
    let (need, limit) = match total {
        Some(t) if t <= limit => return Ok(()),
        Some(t) => exact_sizes(t, limit),
        None => ("more than 16 EiB".to_string(), fmt_bytes(limit)),
    };
    Err(format!(
        "{} with {} and {} for {} of simulated time needs about {need}{} by the estimate, more than --max-memory {limit}: make the run shorter or smaller{}",
        s.algorithm,
        locksim_core::text::plural(s.cluster.servers as u64, "server"),
        locksim_core::text::plural(s.cluster.clients as u64, "client"),
        locksim_core::time::fmt_nanos(s.workload.duration as i128),
        if runs > 1 { format!(" for {runs} runs at once") } else { String::new() },
        if runs > 1 { ", use fewer --jobs, or raise --max-memory" } else { ", or raise --max-memory" }
    ))
}

/// Parses a size: a number of bytes with an optional unit `K`, `M`, `G`, `T` (powers of 1024,
/// with or without `iB`/`B`), e.g. `4GiB`, `512M`, `1073741824`.
///
/// # Errors
/// A malformed size, or one that does not fit in 64 bits.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let bad = || {
        format!(
            "`{}` is not a size: write bytes with an optional unit, e.g. 4GiB or 512MiB",
            locksim_core::text::one_line(text)
        )
    };
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(digits);
    let n: u64 = n.parse().map_err(|_| bad())?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(bad()),
    };
    n.checked_mul(1u64 << shift).ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;
    use locksim_core::{Cluster, FaultPlan, Workload};

    fn scenario(servers: u32, clients: u32, secs: u64) -> Scenario {
        Scenario {
            seed: 0,
            algorithm: "central".into(),
            config: Default::default(),
            cluster: Cluster { servers, clients },
            workload: Workload {
                duration: secs * 1_000_000_000,
                ..Workload::default()
            },
            fault_kinds: vec![],
            faults: FaultPlan::default(),
        }
    }

    #[test]
    fn the_estimate_grows_with_clients_and_time_and_refuses_the_issue_trace() {
        let small = estimate(&scenario(1, 3, 10)).unwrap();
        assert!(small < 20 << 20, "{small}");
        // central, 64 clients, an hour: measured 1.0 GB, estimated under the default limit.
        let hour = estimate(&scenario(1, 64, 3600)).unwrap();
        assert!(hour > 1 << 30 && hour < DEFAULT_MAX_MEMORY, "{hour}");
        assert!(check(&scenario(1, 3, 10), 2, DEFAULT_MAX_MEMORY).is_ok());
        // The trace of issue #12: 998 clients for an hour.
        let e = check(&scenario(1, 998, 3600), 1, DEFAULT_MAX_MEMORY).unwrap_err();
        assert!(
            e.contains("998 clients") && e.contains("--max-memory 4.0 GiB"),
            "{e}"
        );
        // Sizes that overflow are refused, not wrapped.
        assert!(estimate(&scenario(u32::MAX, u32::MAX, u64::MAX / 1_000_000_000)).is_none());
        assert!(check(&scenario(1, u32::MAX, 3600), 1, DEFAULT_MAX_MEMORY).is_err());
        // Several runs at once add up.
        let one = estimate(&scenario(1, 64, 60)).unwrap();
        assert!(check(&scenario(1, 64, 60), 2, one).is_err());
        assert!(check(&scenario(1, 64, 60), 1, one).is_ok());
    }

    /// Issue #51 follow-up 4, in the shared message: an estimate of 16.1 MiB over a limit of
    /// 17,000,000 bytes read "needs about 17 MiB ..., more than --max-memory 17 MiB".
    #[test]
    fn a_refusal_never_gives_two_sizes_that_read_alike() {
        let s = scenario(1, 3, 10);
        let need = estimate(&s).unwrap();
        let limit = need - 1;
        assert_eq!(fmt_bytes(need), fmt_bytes(limit), "the case under test");
        let e = check(&s, 1, limit).unwrap_err();
        assert!(
            e.contains(&format!("needs about {} ({need} bytes)", fmt_bytes(need)))
                && e.contains(&format!(
                    "more than --max-memory {} ({limit} bytes)",
                    fmt_bytes(limit)
                )),
            "{e}"
        );
        // Sizes that read apart stay as they were, without bytes.
        let e = check(&s, 1, 1 << 20).unwrap_err();
        assert!(e.contains("more than --max-memory 1 MiB:"), "{e}");
        assert!(!e.contains("bytes"), "{e}");
        assert_eq!(
            exact_sizes(3 << 20, 1 << 20),
            ("3 MiB".to_string(), "1 MiB".to_string())
        );
    }

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("4GiB").unwrap(), 4 << 30);
        assert_eq!(parse_size("512m").unwrap(), 512 << 20);
        assert_eq!(parse_size("1024").unwrap(), 1024);
        assert!(parse_size("lots").is_err());
        assert!(parse_size("4 PB").is_err());
        assert!(parse_size("99999999999T").is_err());
        assert!(!parse_size("1\nX").unwrap_err().contains('\n'));
    }
}
