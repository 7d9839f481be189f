//! # locksim-check
//!
//! The oracles. Each checker is a pure function of a [`History`]: no simulator, no clocks, so
//! the same code judges simulated runs and histories recorded elsewhere.
//!
//! - [`holds`] derives each client's hold intervals in true time (DESIGN §6);
//! - [`mutex`] checks S1, mutual exclusion (no two holders' intervals overlap on a key);
//! - [`stale`] checks S2, resource safety (no write of an older grant accepted after a write
//!   of a newer one; accepted fencing tokens never decrease).

use locksim_core::{Cluster, History, NodeId, Verdict};

pub mod formats;
pub mod holds;
pub mod linear;
pub mod mutex;
pub mod stale;

pub use holds::{derive_holds, Hold, HoldEnd};

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

/// Runs every checker of this crate (S1 and S2) and returns one verdict, violations ordered
/// by property, then key, then time.
pub fn check_all(history: &History, cluster: Option<&Cluster>) -> Verdict {
    let names = Names(cluster);
    let holds = derive_holds(history);
    let mut verdict = Verdict::default();
    mutex::check(history, &holds, names, &mut verdict);
    stale::check(history, &holds, names, &mut verdict);
    verdict
}
