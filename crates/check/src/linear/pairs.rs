//! Pairs each client operation's invocation with its completion in a locksim history.

use std::collections::BTreeMap;

use locksim_core::history::{EventKind, OpF, Phase};
use locksim_core::{Event, History};

/// The invocation of every operation whose function passes `keep`, in invocation order, with
/// its completion event and phase when there is one.
pub(crate) fn pair_ops(
    history: &History,
    keep: impl Fn(OpF) -> bool,
) -> Vec<(&Event, Option<(&Event, Phase)>)> {
    let mut invokes: BTreeMap<u64, &Event> = BTreeMap::new();
    let mut done: BTreeMap<u64, (&Event, Phase)> = BTreeMap::new();
    for e in &history.events {
        if let EventKind::Op { op, phase, f, .. } = &e.kind {
            if !keep(*f) {
                continue;
            }
            match phase {
                Phase::Invoke => {
                    invokes.insert(*op, e);
                }
                p => {
                    done.insert(*op, (e, *p));
                }
            }
        }
    }
    invokes
        .into_iter()
        .map(|(op, inv)| (inv, done.get(&op).copied()))
        .collect()
}
