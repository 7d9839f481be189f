//! # locksim-check
//!
//! The oracles. Each checker is a pure function of a [`History`]: no simulator, no clocks, so
//! the same code judges simulated runs and histories recorded elsewhere.
//!
//! - [`holds`] derives each client's hold intervals in true time (docs/design.md §6);
//! - [`mutex`] checks S1, mutual exclusion (no two holders' intervals overlap on a key);
//! - [`stale`] checks S2, resource safety (no write of an older grant accepted after a write
//!   of a newer one, grants ordered by when the service decided them; accepted fencing tokens
//!   never decrease);
//! - [`lease`] checks S3, linearizability of the lock operations against a lease lock, with the
//!   general checker of [`linear`] (which also reads real Jepsen histories through [`formats`]);
//! - [`release`] checks S4, that a release frees only its own grant's lock (from the service's
//!   `freed` records);
//! - [`liveness`] checks L1–L3: a stopped holder's lock reaches a waiter, a healthy renewing
//!   holder keeps its lock through short outages, no lock is orphaned;
//! - [`metrics`] measures what lock operators watch: latencies, waits, holds, retries.

use locksim_core::{Cluster, History, NodeId, Property, Verdict};

pub mod formats;
pub mod holds;
pub mod lease;
pub mod linear;
pub mod liveness;
pub mod metrics;
pub mod mutex;
pub mod release;
pub mod stale;

pub use holds::{derive_holds, derive_holds_in, Hold, HoldEnd};
pub use lease::LeaseSpec;

/// At most this many violations of one property are listed per key; the rest are counted in
/// [`Verdict::omitted`].
pub const MAX_LISTED_PER_KEY: usize = 8;

/// Names nodes in violation summaries: with a cluster, `n1`/`c2`/`res`; without, `node 7`.
#[derive(Clone, Copy)]
pub struct Names<'a>(pub Option<&'a Cluster>);

impl Names<'_> {
    /// The node's display name.
    pub fn of(&self, id: NodeId) -> String {
        match self.0 {
            Some(c) if id < c.nodes() => c.name(id),
            _ => format!("node {id}"),
        }
    }
}

/// What [`check_all`] needs beyond the history.
#[derive(Debug, Clone, Default)]
pub struct CheckOptions<'a> {
    /// The cluster, for node names in summaries.
    pub cluster: Option<&'a Cluster>,
    /// The lease spec for S3; `None` skips S3.
    pub lease: Option<LeaseSpec>,
    /// S3's search budget. Inside campaigns give `max_steps` (deterministic), not a timeout.
    pub budget: linear::Budget,
    /// What L1–L3 need; `None` skips them.
    pub liveness: Option<liveness::LivenessSpec>,
}

impl CheckOptions<'_> {
    /// The properties [`check_all`] judges with these options, in report order: S1, S2 and S4
    /// always, S3 with a lease spec, L1–L3 with a liveness spec. A checker added to `check_all`
    /// adds its property here, and campaigns, their tables and `testing::Campaign` count it
    /// with no other change.
    pub fn properties(&self) -> Vec<Property> {
        let mut p = vec![Property::S1, Property::S2];
        if self.lease.is_some() {
            p.push(Property::S3);
        }
        p.push(Property::S4);
        match &self.liveness {
            // A lock that never expires makes no L1 claim: L1 is not judged, so not counted.
            Some(l) if l.non_expiring => p.extend([Property::L2, Property::L3]),
            Some(_) => p.extend(Property::LIVENESS),
            None => {}
        }
        p
    }
}

/// The default S3 step budget of simulated runs: generous for lock histories (whose search is
/// nearly linear), and deterministic.
pub const S3_MAX_STEPS: u64 = 5_000_000;

/// Runs every checker — S1, S2, S4, with a lease spec S3, with a liveness spec L1–L3 — and
/// returns one verdict, violations ordered by property, then key, then time.
pub fn check_all(history: &History, opts: &CheckOptions) -> Verdict {
    let names = Names(opts.cluster);
    let holds = derive_holds_in(history, opts.cluster);
    let mut verdict = Verdict::default();
    mutex::check(&holds, names, &mut verdict);
    stale::check(history, &holds, names, &mut verdict);
    release::check(history, names, &mut verdict);
    if let Some(spec) = &opts.lease {
        lease::check_s3(history, spec, &opts.budget, names, &mut verdict);
    }
    if let Some(spec) = &opts.liveness {
        liveness::check(history, &holds, spec, names, &mut verdict);
    }
    verdict
}
