//! The recorded history of a run (docs/design.md §6), in Jepsen's vocabulary.
//!
//! Client operations (`acquire`, `release`, `extend`, `write`) are an `invoke` followed by a
//! completion that is `ok`, `fail` (definitely did not happen) or `info` (unknown: a timeout or
//! a lost reply). Beside them the history holds service-side grants, the resource's accepted
//! and rejected writes, the moments a client learns or decides it lost a lock, and every fault
//! the nemesis injected. Every event carries true time and the node's local clock readings.

use serde::{Deserialize, Serialize};

use crate::fault::Fault;
use crate::scenario::NodeId;
use crate::time::Nanos;

/// Jepsen's operation phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// The operation started.
    Invoke,
    /// It completed and took effect.
    Ok,
    /// It completed and definitely did not take effect.
    Fail,
    /// Its outcome is unknown (timeout, lost reply): it may take effect at any later time.
    Info,
}

/// Client operation functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpF {
    /// Take the lock.
    Acquire,
    /// Give the lock back.
    Release,
    /// Renew the lease.
    Extend,
    /// Write to the protected resource.
    Write,
}

/// Which of a node's two clocks a reading comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LocalClock {
    /// The wall clock: drifts and steps (NTP), may go backwards.
    Wall,
    /// The monotonic clock: drifts, never steps.
    Mono,
}

/// A validity deadline: the local clock reading the client computed, and the first true time
/// at or after the grant at which that clock reaches it (filled in when the run ends, from the
/// node's full clock history, so later drift changes and steps are accounted for).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deadline {
    /// The clock the client reads.
    pub clock: LocalClock,
    /// Its reading at the deadline, nanoseconds.
    pub local: i64,
    /// True time, nanoseconds since the start of the run.
    pub at: Nanos,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// One phase of a client operation.
    Op {
        /// Operation id, shared by the invoke and its completion.
        op: u64,
        phase: Phase,
        f: OpF,
        /// Lock key index.
        key: u32,
        /// The lock handle (one per successful acquire). Set on acquire `ok` and on every
        /// operation performed under that grant.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        handle: Option<u64>,
        /// Fencing token of the grant, when the algorithm issues one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        token: Option<u64>,
        /// Validity deadline returned with an acquire or extend `ok`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        deadline: Option<Deadline>,
        /// Why a `fail` or `info` ended the operation.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// A write's value: on the invoke, the value written; on the `ok`, the value it replaced
        /// (0 when the key had never been written). Resource values are never 0.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<u64>,
    },
    /// The client stops acting under a grant before releasing it: its validity check failed
    /// or it learned the lease was lost.
    Lost {
        key: u32,
        handle: u64,
        reason: String,
    },
    /// Service side: a lock server granted `key` to `client` (per server for Redlock).
    Grant {
        key: u32,
        client: NodeId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        token: Option<u64>,
    },
    /// Service side: a release from `client` that named the grant with fencing token
    /// `released` deleted the lock of the grant with token `freed`. When the two differ, a
    /// release freed another grant's lock: an S4 violation. Recorded by algorithms whose
    /// tokens identify grants (`raft-lease`: the lock key's revision), by lock servers whose
    /// release deletes without an owner check (`release = "delete"`) and by `db-lease`, whose
    /// unlock matches by host name: these name the client the freed lock was granted to in
    /// `holder`, and `freed`/`released` are then the owner values (or row versions) the
    /// service stored and the release carried, not fencing tokens.
    Freed {
        key: u32,
        client: NodeId,
        freed: u64,
        released: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        holder: Option<NodeId>,
    },
    /// The resource accepted a write.
    WriteAccepted {
        key: u32,
        handle: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        token: Option<u64>,
    },
    /// The resource rejected a write whose fencing token was below the highest it had seen.
    WriteRejected {
        key: u32,
        handle: u64,
        token: u64,
        highest: u64,
    },
    /// The nemesis injected a fault (recorded on the node it acts on, or node 0 otherwise).
    Fault { fault: Fault },
    /// A fault with a duration ended (pause resumed, node restarted, window closed).
    FaultEnd { what: String },
    /// Service side: this server began to lead in `term` (raft-lease: the Raft term;
    /// redis-failover: the configuration epoch + 1 of its promotion; zookeeper: 1). In the
    /// simulator recorded only in runs whose plan has a trigger waiting for `leader elected`,
    /// so that every other run's event log (and digest) is what it was before the event
    /// existed; real `redis-failover` runs record each promotion Sentinel announces (its
    /// `+switch-master`, the n-th as term n).
    Leader { term: u64 },
    /// Service side: this replica took the leader's replication stream up to `offset`
    /// (raft-lease: the last log index a follower appended; redis-failover: the replication
    /// offset a replica applied). Recorded only in runs whose plan has a trigger waiting for
    /// `replicates`, as [`EventKind::Leader`].
    Replicated { offset: u64 },
    /// Service side: the lock service renewed the session behind `client`'s lock node under
    /// `key`, so that node now lives a full session timeout from this moment (unless deleted):
    /// zookeeper's leader moved session `session`'s expiry later, and the session owns the lock
    /// node numbered `seq` under `key` (its sequence number, the grant's token), or is creating
    /// one there (`seq` is then `None`: the touch of the create request itself). (Not `node`:
    /// the event's own field.) Recorded only by
    /// `zookeeper`, only for such sessions, and only when the expiry moved. S3's session spec
    /// counts a holder's lease from the last of these its leader recorded (docs/design.md §7).
    Touched {
        key: u32,
        client: NodeId,
        session: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seq: Option<u64>,
    },
}

/// Why a client stopped acting under a grant, read from the `reason` of an
/// [`EventKind::Lost`] event: the workload starts each reason with its cause's
/// [`LostCause::prefix`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LostCause {
    /// The client's check of its remaining validity failed: it gave the lock up itself.
    ValidityCheck,
    /// A renewal was answered "the lock is gone".
    RenewalFailed,
    /// No renewal succeeded within the renew deadline.
    RenewDeadline,
    /// The resource rejected a write's fencing token.
    Fenced,
    /// The client asked the service before a write whether it still held the lock
    /// (`LockClient::check_held` in locksim-sim) and heard no (or no answer).
    HeldCheck,
    /// Anything else (histories from elsewhere).
    Other,
}

impl LostCause {
    /// The text a `lost` reason of this cause starts with.
    pub fn prefix(self) -> &'static str {
        match self {
            LostCause::ValidityCheck => "validity check",
            LostCause::RenewalFailed => "renewal failed",
            LostCause::RenewDeadline => "renew deadline",
            LostCause::Fenced => "fenced",
            LostCause::HeldCheck => "held check",
            LostCause::Other => "",
        }
    }

    /// The cause of a `lost` event with this reason.
    pub fn of(reason: &str) -> LostCause {
        [
            LostCause::ValidityCheck,
            LostCause::RenewalFailed,
            LostCause::RenewDeadline,
            LostCause::Fenced,
            LostCause::HeldCheck,
        ]
        .into_iter()
        .find(|c| reason.starts_with(c.prefix()))
        .unwrap_or(LostCause::Other)
    }
}

/// One recorded event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// Position in the history, from 0.
    pub id: u64,
    /// True time, nanoseconds since the start of the run.
    pub time: Nanos,
    /// The node on which it happened.
    pub node: NodeId,
    /// The node's wall-clock reading at that moment (ns; steps included).
    pub wall: i64,
    /// The node's monotonic-clock reading at that moment (ns).
    pub mono: u64,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// A run's events in the order they happened (true time, then recording order).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct History {
    /// The events, `events[i].id == i`.
    pub events: Vec<Event>,
    /// True time at which the run ended, ns.
    pub end: Nanos,
    /// Messages the network layer was asked to send.
    pub messages_sent: u64,
    /// Messages dropped by partitions, loss windows or lost replies.
    pub messages_dropped: u64,
    /// Every message the network layer was asked to send, in send order (filled by the
    /// simulator; empty for histories recorded elsewhere). Not part of the digest and not
    /// serialized: a trace re-runs its scenario to get them back.
    #[serde(skip)]
    pub messages: Vec<Message>,
}

/// One message on the simulated network: who sent it to whom, and when it was sent and
/// delivered, in true time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message {
    /// Sender.
    pub from: NodeId,
    /// Receiver.
    pub to: NodeId,
    /// True time of the send, ns.
    pub sent: Nanos,
    /// True time the receiver first took it in, ns; `None` when it was dropped, or never
    /// received (the receiver crashed, or a caller had stopped waiting for the reply).
    pub delivered: Option<Nanos>,
    /// `true` for a reply to a call, `false` for a request or a one-way message.
    pub reply: bool,
    /// `true` when a fault rule dropped it (partition, loss, lost reply).
    pub dropped: bool,
}

impl History {
    /// A stable 128-bit digest of the canonical event log (the events serialized as JSON lines,
    /// hashed with XXH3-128), as 32 hex digits. Same scenario ⇒ same digest on any machine.
    pub fn digest(&self) -> String {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        for e in &self.events {
            let line = serde_json::to_vec(e).expect("events always serialize");
            h.update(&line);
            h.update(b"\n");
        }
        h.update(&self.end.to_le_bytes());
        format!("{:032x}", h.digest128())
    }
}
