//! One line of words per recorded event: the one describer behind the text timeline
//! (`locksim run`'s and `locksim real`'s), the witnesses of a violation on the HTML page and
//! the explanations beside them.
//!
//! The wording is the timeline's: anomalies a reader scans for are in capitals (`FAULT`, a
//! release that `FREES` another grant's lock, a resource that `REJECTS` a write), handles and
//! tokens are named wherever the event carries them, and times are [`fmt_nanos`]'s (`1.25s`,
//! `300ms`). The line names no node of its own: [`event`] leaves the node to the caller's
//! column, [`event_line`] puts its name first.

use locksim_core::history::EventKind;
use locksim_core::time::fmt_nanos;
use locksim_core::{Cluster, Event};

/// What `e` did, in words, without the node that recorded it, e.g.
/// `acquire ok k0 handle 3 token 7 (valid until 1.2s)` or `grants k0 to c2 with token 7`.
/// Node ids in the event (a grant's client, a freed lock's holder) are named by `cluster`.
pub fn event(cluster: &Cluster, e: &Event) -> String {
    let c = cluster;
    match &e.kind {
        EventKind::Op {
            phase,
            f,
            key,
            handle,
            token,
            deadline,
            error,
            ..
        } => {
            let mut t = format!("{f:?} {phase:?} k{key}").to_lowercase();
            if let Some(h) = handle {
                t += &format!(" handle {h}");
            }
            if let Some(tok) = token {
                t += &format!(" token {tok}");
            }
            if let Some(d) = deadline {
                t += &format!(" (valid until {})", fmt_nanos(d.at as i128));
            }
            if let Some(err) = error {
                t += &format!(": {err}");
            }
            t
        }
        EventKind::Lost {
            key,
            handle,
            reason,
        } => format!("gives up k{key} handle {handle}: {reason}"),
        EventKind::Grant { key, client, token } => match token {
            Some(t) => format!("grants k{key} to {} with token {t}", c.name(*client)),
            None => format!("grants k{key} to {}", c.name(*client)),
        },
        EventKind::Freed {
            key,
            client,
            freed,
            released,
            holder: Some(h),
        } if freed != released => format!(
            "FREES k{key} granted to {} for {}'s release of another grant",
            c.name(*h),
            c.name(*client)
        ),
        EventKind::Freed {
            key,
            client,
            holder: Some(_),
            ..
        } => format!("frees k{key} for {}", c.name(*client)),
        EventKind::Freed {
            key,
            client,
            freed,
            released,
            ..
        } if freed == released => {
            format!("frees k{key} (token {freed}) for {}", c.name(*client))
        }
        EventKind::Freed {
            key,
            client,
            freed,
            released,
            ..
        } => format!(
            "FREES k{key} token {freed} for {}, whose release named token {released}",
            c.name(*client)
        ),
        EventKind::WriteAccepted { key, handle, token } => match token {
            Some(t) => format!("accepts a write to k{key} from handle {handle} (token {t})"),
            None => format!("accepts a write to k{key} from handle {handle}"),
        },
        EventKind::WriteRejected {
            key,
            handle,
            token,
            highest,
        } => format!(
            "REJECTS a write to k{key} from handle {handle}: token {token} < highest {highest}"
        ),
        EventKind::Fault { fault } => format!("FAULT {}", fault.describe(c)),
        EventKind::FaultEnd { what } => format!("fault ends: {what}"),
        EventKind::Leader { term } => format!("leads (term {term})"),
        EventKind::Replicated { offset } => format!("replicates up to offset {offset}"),
        EventKind::Touched {
            key,
            client,
            session,
            seq,
        } => match seq {
            Some(n) => format!(
                "renews session {session} of {} (its k{key} node {n})",
                c.name(*client)
            ),
            None => format!(
                "renews session {session} of {} (creating a k{key} node)",
                c.name(*client)
            ),
        },
    }
}

/// [`event`] after the name of the node that recorded it, e.g. `c2 write invoke k0 handle 13`:
/// a line that stands alone (a violation's witnesses).
pub fn event_line(cluster: &Cluster, e: &Event) -> String {
    format!("{} {}", cluster.name(e.node), event(cluster, e))
}
