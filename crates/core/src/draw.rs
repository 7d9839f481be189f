//! The random draws of a run, derived from the scenario seed, shared by the simulator
//! (`crates/sim`) and real mode (`crates/real`) so that seed N of a real run faces the same
//! workload schedule as simulated seed N.
//!
//! Each purpose has its own ChaCha8 stream ([`stream`]): removing a fault or a client does not
//! reshuffle the others' draws. A client's workload stream ([`WorkloadDraws`]) gives, in the
//! order the client loop asks for them, its think times, lock keys, work lengths and retry
//! delays; nothing else may draw from it (an owner value or a protocol's retry comes from the
//! node's own stream, [`NODE`]), or the two sides would drift apart after the first round.

use rand::Rng;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::scenario::{ClientParams, NodeId, RetryPolicy, Workload};
use crate::time::Nanos;

/// Stream purpose: network routing (loss, delay and duplication draws).
pub const NET: u64 = 1;
/// Stream purpose: a node's own randomness (owner values, retry delays), per node and
/// incarnation ([`node_index`]).
pub const NODE: u64 = 2;
/// Stream purpose: the workload's choices, per client and incarnation ([`node_index`]).
pub const WORKLOAD: u64 = 3;
/// Stream purpose: fault plan generation.
pub const FAULTS: u64 = 4;

/// A ChaCha8 stream from the scenario seed, a purpose (one of the constants above) and an
/// index: `ChaCha8Rng::seed_from_u64(seed)` on stream `purpose << 48 ^ index` (the `rand_chacha`
/// 0.3 stream selector; see its `set_stream` docs).
pub fn stream(seed: u64, purpose: u64, index: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream((purpose << 48) ^ index);
    rng
}

/// The stream index of node `node` in its `incarnation`-th start (0 for the first):
/// `node << 16 | incarnation`.
pub fn node_index(node: NodeId, incarnation: u32) -> u64 {
    ((node as u64) << 16) | incarnation as u64
}

/// One client's workload draws (think, key, work, retry delay), in the order its loop asks.
#[derive(Debug, Clone)]
pub struct WorkloadDraws {
    rng: ChaCha8Rng,
}

impl WorkloadDraws {
    /// The draws of client node `node` (its id in the cluster, servers first) in its
    /// `incarnation`-th start, for scenario seed `seed`.
    pub fn new(seed: u64, node: NodeId, incarnation: u32) -> WorkloadDraws {
        WorkloadDraws {
            rng: stream(seed, WORKLOAD, node_index(node, incarnation)),
        }
    }

    /// The think time before a new round, ns: uniform in `0..=think_max`.
    pub fn think(&mut self, w: &Workload) -> Nanos {
        self.rng.gen_range(0..=w.think_max)
    }

    /// The lock a round asks for: uniform in `0..keys` (made by a waiter too, so the stream
    /// does not depend on whether the previous acquire succeeded).
    pub fn key(&mut self, w: &Workload) -> u32 {
        self.rng.gen_range(0..w.keys.max(1))
    }

    /// The local work before one write, ns: uniform in `work_min..=max(work_max, work_min)`.
    pub fn work(&mut self, me: &ClientParams) -> Nanos {
        self.rng
            .gen_range(me.work_min..=me.work_max.max(me.work_min))
    }

    /// The wait after a failed acquire, ns: uniform in `0..=retry_delay_max`.
    pub fn retry_delay(&mut self, w: &Workload) -> Nanos {
        self.rng.gen_range(0..=w.retry_delay_max)
    }
}

/// A client's waits between failed acquires under its [`RetryPolicy`]: it counts the failures
/// in a row and remembers the last wait (decorrelated jitter grows from it). The `uniform`
/// policy draws exactly what [`WorkloadDraws::retry_delay`] always drew, so runs under the
/// default replay unchanged; `fixed` and `exponential` draw nothing.
#[derive(Debug, Clone, Default)]
pub struct Backoff {
    failures: u32,
    prev: Nanos,
}

impl Backoff {
    /// The wait after one more failed acquire, ns, drawn from `d` (`w`: `retry_base`, and
    /// `retry_delay_max` as the cap).
    pub fn next(&mut self, d: &mut WorkloadDraws, w: &Workload, policy: RetryPolicy) -> Nanos {
        let cap = w.retry_delay_max;
        let base = w.retry_base;
        // min(cap, base · 2^attempt), without overflow.
        let grown = 1u64
            .checked_shl(self.failures)
            .and_then(|m| base.checked_mul(m))
            .map_or(cap, |v| v.min(cap));
        let wait = match policy {
            RetryPolicy::Fixed => cap,
            RetryPolicy::Uniform => d.retry_delay(w),
            RetryPolicy::Exponential => grown,
            RetryPolicy::ExponentialFull => d.rng.gen_range(0..=grown),
            RetryPolicy::ExponentialEqual => grown - grown / 2 + d.rng.gen_range(0..=grown / 2),
            RetryPolicy::ExponentialDecorrelated => {
                let prev = if self.failures == 0 { base } else { self.prev };
                let hi = prev.saturating_mul(3).max(base);
                d.rng.gen_range(base..=hi).min(cap)
            }
        };
        self.failures = self.failures.saturating_add(1);
        self.prev = wait;
        wait
    }

    /// What a client loop does after a failed acquire: the wait ([`Backoff::next`]), and
    /// whether the round is given up (`retry_attempts` failures in a row; the count then
    /// starts over), so the simulator's loop and real mode's agree.
    pub fn after_failure(
        &mut self,
        d: &mut WorkloadDraws,
        w: &Workload,
        policy: RetryPolicy,
    ) -> (Nanos, bool) {
        let wait = self.next(d, w, policy);
        let give_up = w.retry_attempts > 0 && self.failures >= w.retry_attempts;
        if give_up {
            self.reset();
        }
        (wait, give_up)
    }

    /// Failed acquires in a row so far.
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// After a grant, or a round given up: the next failure is the first again.
    pub fn reset(&mut self) {
        *self = Backoff::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    /// The derivation the simulator has always used (traces in traces/ replay against it):
    /// the first draws of seed 7, node 2, first incarnation, pinned.
    #[test]
    fn the_workload_stream_is_the_simulators() {
        let w = Workload {
            think_max: 100 * MS,
            retry_delay_max: 50 * MS,
            keys: 5,
            work_min: 10 * MS,
            work_max: 30 * MS,
            ..Workload::default()
        };
        let me = w.client(1);
        let mut d = WorkloadDraws::new(7, 2, 0);
        let got = [
            d.think(&w),
            d.key(&w) as u64,
            d.work(&me),
            d.retry_delay(&w),
        ];
        assert_eq!(got, PINNED, "{got:?}");
        // Another incarnation, another node and another seed each give another stream.
        let first = |mut d: WorkloadDraws| d.think(&w);
        assert_ne!(first(WorkloadDraws::new(7, 2, 1)), got[0]);
        assert_ne!(first(WorkloadDraws::new(7, 3, 0)), got[0]);
        assert_ne!(first(WorkloadDraws::new(8, 2, 0)), got[0]);
    }

    const PINNED: [u64; 4] = [13_032_473, 0, 17_647_918, 41_740_225];

    /// Base 10 ms, cap 200 ms.
    fn capped() -> Workload {
        Workload {
            retry_base: 10 * MS,
            retry_delay_max: 200 * MS,
            ..Workload::default()
        }
    }

    fn waits(policy: RetryPolicy, n: usize) -> Vec<Nanos> {
        let w = capped();
        let mut d = WorkloadDraws::new(3, 4, 0);
        let mut b = Backoff::default();
        (0..n).map(|_| b.next(&mut d, &w, policy)).collect()
    }

    #[test]
    fn the_default_policy_draws_what_the_retry_delay_always_drew() {
        let w = Workload::default();
        let mut plain = WorkloadDraws::new(3, 4, 0);
        let expected: Vec<Nanos> = (0..20).map(|_| plain.retry_delay(&w)).collect();
        let mut d = WorkloadDraws::new(3, 4, 0);
        let mut b = Backoff::default();
        let got: Vec<Nanos> = (0..20)
            .map(|_| b.next(&mut d, &w, RetryPolicy::Uniform))
            .collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn each_policy_keeps_to_its_formula() {
        let (base, cap) = (10 * MS, 200 * MS);
        assert!(waits(RetryPolicy::Fixed, 8).iter().all(|&d| d == cap));
        assert_eq!(
            waits(RetryPolicy::Exponential, 8),
            [10, 20, 40, 80, 160, 200, 200, 200].map(|m| m * MS)
        );
        for (i, d) in waits(RetryPolicy::ExponentialFull, 200)
            .into_iter()
            .enumerate()
        {
            let grown = (base << i.min(40)).min(cap);
            assert!(d <= grown, "full #{i}: {d} > {grown}");
        }
        for (i, d) in waits(RetryPolicy::ExponentialEqual, 200)
            .into_iter()
            .enumerate()
        {
            let grown = (base << i.min(40)).min(cap);
            assert!(
                d >= grown - grown / 2 && d <= grown,
                "equal #{i}: {d} of {grown}"
            );
        }
        let dec = waits(RetryPolicy::ExponentialDecorrelated, 200);
        let mut prev = base;
        for (i, &d) in dec.iter().enumerate() {
            assert!(
                d >= base.min(cap) && d <= (3 * prev).min(cap),
                "decorrelated #{i}: {d} after {prev}"
            );
            prev = d;
        }
        // The jittered policies vary; the first full-jitter waits grow with the attempt.
        let full = waits(RetryPolicy::ExponentialFull, 200);
        assert!(full.iter().any(|&d| d != full[0]));
        assert!(dec.iter().any(|&d| d != dec[0]));
    }

    #[test]
    fn a_long_run_of_failures_does_not_overflow_and_a_reset_starts_over() {
        let w = capped();
        let mut d = WorkloadDraws::new(1, 4, 0);
        let mut b = Backoff::default();
        for _ in 0..100 {
            assert!(b.next(&mut d, &w, RetryPolicy::Exponential) <= 200 * MS);
        }
        assert_eq!(b.failures(), 100);
        b.reset();
        assert_eq!(b.next(&mut d, &w, RetryPolicy::Exponential), 10 * MS);
    }
}
