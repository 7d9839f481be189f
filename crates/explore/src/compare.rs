//! Comparing two sets of runs of one scenario, property by property: K real runs against K
//! simulated seeds (`locksim real --compare`).
//!
//! Each side's rate is the runs that violated the property out of the runs on which it was
//! judged, with its 95 % Wilson score interval ([`crate::sweep::wilson`]). The sides
//! **differ** when Fisher's exact test of the 2×2 table (violated / not, real / simulated)
//! gives a two-sided p below [`ALPHA`]: the test is exact at the small counts real runs come
//! in (3–20), where a normal approximation is not valid, and asks the question directly (could
//! one violation rate have produced both counts?). Non-overlapping 95 % intervals would be a
//! far stricter criterion (about p < 0.006), blind to all but the grossest gaps at these sizes.
//! Fisher, R. A. (1922), "On the interpretation of χ² from contingency tables, and the
//! calculation of P", JRSS 85; the two-sided p sums the probabilities of every table with the
//! same margins no more likely than the one observed (Agresti, *Categorical Data Analysis*,
//! 3rd ed., §3.5).
//!
//! Apart from any test, a property that some real run violates and no simulated seed does is
//! **sim-optimistic**: the simulator called safe what reality is not, which is a simulator bug
//! by definition, whatever the counts.

use serde::Serialize;

use crate::sweep::wilson;

/// The significance level of [`Comparison::differs`].
pub const ALPHA: f64 = 0.05;

/// One side's count for one property.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// Runs in which the property was violated (for grants: runs with at least one grant).
    pub hits: u64,
    /// Runs on which it was judged (a check that ran out of budget judges nothing).
    pub runs: u64,
}

impl Tally {
    /// Counts one run: `hit` if it violated the property, judged unless `undecided` (a
    /// violation found counts as judged even when another check of it ran out of budget).
    pub fn add(&mut self, hit: bool, undecided: bool) {
        if hit || !undecided {
            self.runs += 1;
            self.hits += hit as u64;
        }
    }

    /// `hits / runs`, 0 when nothing was judged.
    pub fn rate(&self) -> f64 {
        if self.runs == 0 {
            0.0
        } else {
            self.hits as f64 / self.runs as f64
        }
    }
}

/// Both sides of one property, compared.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Comparison {
    /// The real side.
    pub real: Tally,
    /// The simulated side.
    pub sim: Tally,
    /// The real rate's 95 % Wilson interval, `[low, high]`.
    pub real_ci: (f64, f64),
    /// The simulated rate's 95 % Wilson interval.
    pub sim_ci: (f64, f64),
    /// Fisher's exact test, two-sided p (1 when a side judged nothing).
    pub p: f64,
    /// `p < ALPHA`: the counts are incompatible with one rate.
    pub differs: bool,
    /// Some real run violated it and no simulated seed did (never set for grants).
    pub sim_optimistic: bool,
}

/// Compares `real` against `sim` for a safety or liveness property (`violation = true`) or for
/// a count like grants, where more real hits than simulated ones is no simulator bug.
pub fn compare(real: Tally, sim: Tally, violation: bool) -> Comparison {
    let p = fisher_two_sided(real.hits, real.runs, sim.hits, sim.runs);
    Comparison {
        real,
        sim,
        real_ci: wilson(real.hits, real.runs),
        sim_ci: wilson(sim.hits, sim.runs),
        p,
        differs: p < ALPHA,
        sim_optimistic: violation && real.hits > 0 && sim.hits == 0,
    }
}

/// `ln n!`, exactly summed (n is at most a few thousand here).
fn ln_factorial(n: u64) -> f64 {
    (2..=n).map(|i| (i as f64).ln()).sum()
}

/// Fisher's exact test of `a` hits in `n1` trials against `b` hits in `n2`: the two-sided p,
/// the probability under the hypergeometric law (margins fixed) of every table no more likely
/// than the observed one. 1 when either side has no trials or no table but the observed one
/// is possible.
pub fn fisher_two_sided(a: u64, n1: u64, b: u64, n2: u64) -> f64 {
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    let (n, k) = (n1 + n2, a + b);
    let ln_c = |n: u64, r: u64| ln_factorial(n) - ln_factorial(r) - ln_factorial(n - r);
    let denom = ln_c(n, n1);
    let prob = |x: u64| (ln_c(k, x) + ln_c(n - k, n1 - x) - denom).exp();
    let lo = k.saturating_sub(n2);
    let hi = k.min(n1);
    let observed = prob(a);
    // Ties within rounding count as "as extreme" (the usual relative tolerance).
    let p: f64 = (lo..=hi)
        .map(prob)
        .filter(|&q| q <= observed * (1.0 + 1e-7))
        .sum();
    p.min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(hits: u64, runs: u64) -> Tally {
        Tally { hits, runs }
    }

    #[test]
    fn fisher_matches_hand_computed_tables() {
        // 5/5 against 0/5: only the two extreme tables, each 1/C(10,5) = 1/252.
        assert!((fisher_two_sided(5, 5, 0, 5) - 2.0 / 252.0).abs() < 1e-12);
        // 3/3 against 0/3: 2/C(6,3) = 0.1, not below 0.05.
        assert!((fisher_two_sided(3, 3, 0, 3) - 0.1).abs() < 1e-12);
        // 10/10 against 10/10: nothing else is possible.
        assert!((fisher_two_sided(10, 10, 10, 10) - 1.0).abs() < 1e-12);
        // 2/10 against 0/10: 9/19 = 0.4737 (the tables with 0 or 2 hits on one side).
        assert!((fisher_two_sided(2, 10, 0, 10) - 0.473_684_2).abs() < 1e-6);
        // 7/10 against 1/10: 0.019767 (summed from the binomial coefficients by hand).
        assert!((fisher_two_sided(7, 10, 1, 10) - 0.019_766_6).abs() < 1e-6);
        // Symmetric in the sides, and 1 with an empty side.
        assert_eq!(
            fisher_two_sided(1, 10, 7, 10),
            fisher_two_sided(7, 10, 1, 10)
        );
        assert_eq!(fisher_two_sided(0, 0, 3, 3), 1.0);
    }

    #[test]
    fn differs_and_sim_optimistic_follow_their_definitions() {
        // The delayed write on real Redis: 5 of 5 real runs, 0 of 5 seeds.
        let c = compare(t(5, 5), t(0, 5), true);
        assert!(c.differs && c.sim_optimistic, "{c:?}");
        assert_eq!(c.real_ci.1, 1.0);
        assert_eq!(c.sim_ci.0, 0.0);
        // One real run of ten: not significant, but still a simulator bug.
        let c = compare(t(1, 10), t(0, 10), true);
        assert!(!c.differs && c.sim_optimistic, "{c:?}");
        // The simulator harsher than reality: may differ, never sim-optimistic.
        let c = compare(t(0, 10), t(8, 10), true);
        assert!(c.differs && !c.sim_optimistic, "{c:?}");
        // Both non-zero at different rates that one rate explains.
        let c = compare(t(3, 10), t(6, 10), true);
        assert!(!c.differs && !c.sim_optimistic, "{c:?}");
        // Grants: more real runs with grants is no simulator bug.
        let c = compare(t(10, 10), t(0, 10), false);
        assert!(c.differs && !c.sim_optimistic, "{c:?}");
    }

    #[test]
    fn undecided_runs_are_not_judged() {
        let mut s = Tally::default();
        s.add(false, true);
        s.add(true, true);
        s.add(false, false);
        assert_eq!(s, t(1, 2));
        assert_eq!(Tally::default().rate(), 0.0);
    }
}
