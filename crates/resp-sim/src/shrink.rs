//! Shrinking a failing run of your own client to a small one that fails the same way (the
//! same violated property): faults removed one at a time, then fewer clients, then each
//! fault's magnitudes (durations, restart delays) and the run's length cut by binary search.
//! The same approach as locksim's own shrinker (`crates/explore/src/shrink.rs`, after Zeller &
//! Hildebrandt's delta debugging), at one seed: every candidate is a full deterministic run of
//! the client's code, kept only if it still violates the property.

use std::future::Future;

use locksim_core::{Nanos, Property};

use crate::sim::{run, Client, Outcome, Scenario};

/// The smallest scenario found, its run, and how many runs it took.
#[derive(Debug, Clone)]
pub struct Shrunk {
    /// The scenario.
    pub scenario: Scenario,
    /// Its run (violates the property).
    pub outcome: Outcome,
    /// Runs performed while shrinking.
    pub runs: u64,
}

/// The shortest run the shrinker tries, ns.
const MIN_DURATION: Nanos = 50_000_000;

struct Shrinker<F> {
    client: F,
    property: Property,
    runs: u64,
}

impl<F, Fut> Shrinker<F>
where
    F: Fn(Client) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = ()> + 'static,
{
    /// Runs `s`; `Some` when it still violates the property.
    fn fails(&mut self, s: &Scenario) -> Option<Outcome> {
        s.validate().ok()?;
        self.runs += 1;
        let o = run(s, self.client.clone());
        o.verdict()
            .violations
            .iter()
            .any(|v| v.kind == self.property)
            .then_some(o)
    }

    /// Drops faults that are not needed, one at a time, until none can go.
    fn faults(&mut self, s: &mut Scenario) {
        let mut i = 0;
        while i < s.faults.len() {
            let mut c = s.clone();
            c.faults.remove(i);
            if self.fails(&c).is_some() {
                *s = c;
            } else {
                i += 1;
            }
        }
    }

    /// Drops the last client while the run still fails and no fault names it.
    fn clients(&mut self, s: &mut Scenario) {
        while s.clients > 1 {
            let mut c = s.clone();
            c.clients -= 1;
            if self.fails(&c).is_none() {
                return;
            }
            *s = c;
        }
    }

    /// The least value of each fault's magnitudes, and of the run's length, that still fails
    /// (binary search: a failure is taken to stay a failure as the value grows).
    fn magnitudes(&mut self, s: &mut Scenario) {
        for i in 0..s.faults.len() {
            for (name, value) in s.faults[i].fault.magnitudes() {
                let (mut lo, mut hi) = (0u64, value);
                while hi - lo > 1_000_000 {
                    let mid = lo + (hi - lo) / 2;
                    let mut c = s.clone();
                    c.faults[i].fault = c.faults[i].fault.with_magnitude(name, mid);
                    if self.fails(&c).is_some() {
                        *s = c;
                        hi = mid;
                    } else {
                        lo = mid;
                    }
                }
            }
        }
        let (mut lo, mut hi) = (MIN_DURATION, s.duration);
        while hi > lo && hi - lo > 10_000_000 {
            let mid = lo + (hi - lo) / 2;
            let mut c = s.clone();
            c.duration = mid;
            if self.fails(&c).is_some() {
                *s = c;
                hi = mid;
            } else {
                lo = mid;
            }
        }
    }
}

/// Shrinks `start`, whose run with `client` must violate `property`, to a smaller scenario
/// that still does, at the same seed.
///
/// # Errors
/// When `start` is invalid or its run does not violate `property`.
pub fn shrink<F, Fut>(start: &Scenario, client: F, property: Property) -> Result<Shrunk, String>
where
    F: Fn(Client) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = ()> + 'static,
{
    start.validate()?;
    let mut sh = Shrinker {
        client,
        property,
        runs: 0,
    };
    if sh.fails(start).is_none() {
        return Err(format!(
            "seed {} does not violate {property}: nothing to shrink",
            start.seed
        ));
    }
    let mut s = start.clone();
    for _round in 0..3 {
        let before = (s.faults.clone(), s.clients, s.duration);
        sh.faults(&mut s);
        sh.clients(&mut s);
        sh.magnitudes(&mut s);
        if (s.faults.clone(), s.clients, s.duration) == before {
            break;
        }
    }
    let outcome = sh
        .fails(&s)
        .ok_or("internal error: the shrunk scenario stopped failing")?;
    Ok(Shrunk {
        scenario: s,
        outcome,
        runs: sh.runs,
    })
}
