//! Synthetic histories for benchmarks and scale tests, generated (never stored): a kv store
//! driven by many clients over many keys, and a lease lock passed between clients. Each is
//! linearizable by construction: every operation takes effect at a point inside its interval,
//! and the outputs are those of the real object at those points. A few operations have an
//! unknown outcome (`info`), of which some took effect and some did not.

use super::models::kv::{KvInput, KvOutput};
use super::models::lock::{LockInput, LockOutput};
use super::Operation;

/// A small deterministic generator (SplitMix64), so the library needs no RNG dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `lo..hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo).max(1)
    }
    fn chance(&mut self, p: f64) -> bool {
        ((self.next() >> 11) as f64 / (1u64 << 53) as f64) < p
    }
}

/// A kv history of `n` operations by `clients` clients over `keys` keys: each client invokes
/// its next operation (40% get, 30% put, 30% append of a unique value) on a random key when
/// its previous one returned; `info` of them never complete (half of those took effect).
/// Times are abstract ticks; ids are positions in the result.
pub fn kv_history(
    n: usize,
    keys: usize,
    clients: usize,
    info: f64,
    seed: u64,
) -> Vec<Operation<KvInput, KvOutput>> {
    let mut rng = Rng(seed);
    // (point, call, ret, client, key, kind, value, unknown, applies)
    struct Gen {
        point: u64,
        call: u64,
        ret: Option<u64>,
        client: u64,
        key: usize,
        kind: u8,
        value: String,
        applies: bool,
    }
    let mut gens: Vec<Gen> = Vec::with_capacity(n);
    let mut clock = vec![0u64; clients];
    let mut counter = vec![0u64; clients];
    for i in 0..n {
        let c = i % clients;
        let call = clock[c] + rng.range(1, 50);
        let dur = rng.range(2, 100);
        let point = call + rng.range(0, dur);
        let unknown = rng.chance(info);
        let kind = match rng.range(0, 10) {
            0..=3 => 0,
            4..=6 => 1,
            _ => 2,
        };
        counter[c] += 1;
        gens.push(Gen {
            point,
            call,
            ret: (!unknown).then_some(call + dur),
            client: c as u64,
            key: rng.range(0, keys as u64) as usize,
            kind,
            value: format!("{c}.{};", counter[c]),
            applies: !unknown || rng.chance(0.5),
        });
        // An unknown operation leaves its client free to go on (a new process, as in Jepsen).
        clock[c] = call + dur;
    }
    // The real store, applied in point order.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (gens[i].point, i));
    let mut store: Vec<String> = vec![String::new(); keys];
    let mut seen: Vec<Option<String>> = vec![None; n];
    for &i in &order {
        let g = &gens[i];
        if !g.applies {
            continue;
        }
        match g.kind {
            0 => seen[i] = Some(store[g.key].clone()),
            1 => store[g.key] = g.value.clone(),
            _ => store[g.key].push_str(&g.value),
        }
    }
    gens.into_iter()
        .zip(seen)
        .enumerate()
        .map(|(i, (g, seen))| {
            let key = format!("{}", g.key);
            let (input, output) = match g.kind {
                0 => (
                    KvInput::Get { key },
                    match (g.ret, seen) {
                        (Some(_), Some(v)) => KvOutput::Value(v),
                        _ => KvOutput::Unknown,
                    },
                ),
                1 => (
                    KvInput::Put {
                        key,
                        value: g.value,
                    },
                    KvOutput::Done,
                ),
                _ => (
                    KvInput::Append {
                        key,
                        value: g.value,
                    },
                    KvOutput::Done,
                ),
            };
            let output = if g.ret.is_none() {
                KvOutput::Unknown
            } else {
                output
            };
            Operation {
                process: g.client,
                input,
                output,
                call: g.call,
                ret: g.ret,
                id: i as u64,
            }
        })
        .collect()
}

/// A lock history of `n` operations: 5 clients take turns holding one key with a lease of
/// 1 s, the next holder's acquire invoked while the previous holder is still releasing; some
/// leases run out instead of being released, and some releases have an unknown outcome.
/// Times in ns.
pub fn lock_history(n: usize, seed: u64) -> Vec<Operation<LockInput, LockOutput>> {
    const MS: u64 = 1_000_000;
    let ttl = 1_000 * MS;
    let mut rng = Rng(seed);
    let mut ops = Vec::with_capacity(n);
    let mut t = 0u64;
    let mut handle = 0u64;
    while ops.len() < n {
        handle += 1;
        let client = rng.range(0, 5);
        // The acquire is invoked before the previous release completed and returns after it.
        let call = t.saturating_sub(rng.range(0, 5 * MS));
        let ok = t + rng.range(1, 10) * MS;
        ops.push(Operation {
            process: client,
            input: LockInput::Acquire {
                key: 0,
                ttl,
                handle,
                since: None,
            },
            output: LockOutput::Ok,
            call,
            ret: Some(ok),
            id: ops.len() as u64,
        });
        let hold = rng.range(10, 300) * MS;
        if rng.chance(0.1) {
            // No release: the lease runs out; the next grant comes after TTL.
            t = ok + ttl + rng.range(1, 20) * MS;
            continue;
        }
        let rel_call = ok + hold;
        let unknown = rng.chance(0.05);
        let rel_ret = rel_call + rng.range(1, 10) * MS;
        ops.push(Operation {
            process: client,
            input: LockInput::Release { key: 0, handle },
            output: if unknown {
                LockOutput::Unknown
            } else {
                LockOutput::Ok
            },
            call: rel_call,
            ret: if unknown { None } else { Some(rel_ret) },
            id: ops.len() as u64,
        });
        t = if unknown {
            rel_call + ttl + 20 * MS
        } else {
            rel_ret
        };
    }
    ops.truncate(n);
    ops
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linear::models::{kv::Kv, lock::LeaseLock};
    use crate::linear::{check, Budget, Verdict};

    #[test]
    fn generated_histories_are_linearizable_and_break_when_tampered_with() {
        let mut ops = kv_history(5_000, 20, 10, 0.03, 1);
        assert!(ops.iter().any(|o| o.ret.is_none()), "some unknown outcomes");
        assert_eq!(
            check(&Kv, &ops, &Budget::default()).0,
            Verdict::Linearizable
        );
        // A get that saw a value nobody wrote.
        let g = ops
            .iter()
            .position(|o| matches!(&o.output, KvOutput::Value(v) if !v.is_empty()))
            .expect("a get that saw something");
        ops[g].output = KvOutput::Value("nobody wrote this".into());
        assert!(matches!(
            check(&Kv, &ops, &Budget::default()).0,
            Verdict::NotLinearizable(_)
        ));
        let lock = lock_history(2_000, 3);
        assert_eq!(
            check(&LeaseLock::new(12_000_000), &lock, &Budget::default()).0,
            Verdict::Linearizable
        );
    }
}
