//! The public plug-in trait for lock algorithms.
//!
//! An algorithm has a server side (the process each lock-service node runs, started again after
//! every crash) and a client side (the library a client process links). Implement
//! [`LockAlgorithm`] and [`LockClient`] in your own crate and hand the algorithm to
//! `locksim_sim::run` (or to `locksim_explore`'s campaigns); nothing in locksim needs to change.
//!
//! Protocol code talks to the world only through its [`NodeCtx`]: its own clocks
//! (`wall_now`, `mono_now`, `sleep`), its disk, its random stream and the network (`call`,
//! `send`, `recv`, `reply`). It never sees true time, which is what lets clock faults bite.

use std::any::Any;
use std::rc::Rc;

use async_trait::async_trait;
use locksim_core::{LocalClock, Nanos};

use crate::ctx::{CallError, NodeCtx};

/// The outcome of a lock operation, in Jepsen's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<T> {
    /// It happened.
    Ok(T),
    /// It definitely did not happen (the reason, for the history).
    Fail(String),
    /// It definitely did not happen because its request never left this client: under
    /// `network = "tcp"`, no connection was open by the call's timeout
    /// ([`crate::CallError::NotConnected`]). Recorded as `fail` with the reason, like
    /// [`Outcome::Fail`]; unlike it, an `extend` that was not sent says nothing about the lock,
    /// so the holder retries it as it retries an unanswered one ([`Outcome::from_call`] makes
    /// it).
    NotSent(String),
    /// Unknown: it may have happened (a timeout, a lost reply).
    Unknown(String),
}

impl<T> Outcome<T> {
    /// The outcome of a request that got no answer, by why (`e`): [`Outcome::NotSent`] when
    /// its request never left ([`CallError::NotConnected`]), [`Outcome::Fail`] when it surely
    /// did not arrive ([`CallError::Refused`]), [`Outcome::Unknown`] when it may have taken
    /// effect (a timeout, a reset, an unexpected reply). The reason is `e`'s text.
    pub fn from_call(e: CallError) -> Outcome<T> {
        match e {
            CallError::NotConnected => Outcome::NotSent(e.to_string()),
            e if e.maybe_delivered() => Outcome::Unknown(e.to_string()),
            e => Outcome::Fail(e.to_string()),
        }
    }
}

/// A lock grant as the client sees it.
#[derive(Clone)]
pub struct Grant {
    /// Lock key index.
    pub key: u32,
    /// Fencing token to present to the resource, if the algorithm issues one.
    pub token: Option<u64>,
    /// The client's own validity deadline, e.g. Redlock's `start + TTL − drift` read on the
    /// client's clock; `None` when the client does not track one.
    pub valid_until: Option<Validity>,
    /// Whatever the algorithm needs to release or extend this grant (owner value, revision).
    pub private: Rc<dyn Any>,
}

/// A validity deadline as a reading of one of the client's clocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validity {
    /// The clock the client measures with (most Redlock clients read the wall clock).
    pub clock: LocalClock,
    /// The reading, ns, at which the grant stops being valid.
    pub until: i64,
}

/// The client side of a lock algorithm: one instance per client process (per incarnation).
#[async_trait(?Send)]
pub trait LockClient {
    /// Tries once to take lock `key` with a lease of `ttl` ns. A blocking acquire may wait
    /// inside; the workload retries after `Fail`/`Unknown`.
    async fn acquire(&self, key: u32, ttl: Nanos) -> Outcome<Grant>;
    /// Gives the lock back.
    async fn release(&self, grant: &Grant) -> Outcome<()>;
    /// Renews the lease for another `ttl` ns; on success returns the new validity deadline, if
    /// the client tracks one. `Fail` means the lock is lost.
    async fn extend(&self, grant: &Grant, ttl: Nanos) -> Outcome<Option<Validity>>;
    /// Asks the service, just before an action under `grant` (each resource write, after the
    /// local work), whether the grant is still held: `None` when the client makes no such
    /// check (the default: nothing is sent and the write goes ahead), `Some(Ok(()))` when the
    /// service says it is held, `Some(Err(why))` when it says it is not or gave no answer. On
    /// `Err` the holder gives the lock up as at a failed validity check (a `lost` event whose
    /// reason starts with `held check`; no write). A check-then-act check: the lock can still
    /// be lost between the answer and the write.
    async fn check_held(&self, _grant: &Grant) -> Option<Result<(), String>> {
        None
    }
}

/// Timing facts of an algorithm that the liveness oracles (L1–L3) allow for, beyond the lease.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LivenessHints {
    /// After the lease of a holder that stopped ends, the service keeps refusing the lock for
    /// this long, ns (Consul's lock-delay); 0 for most algorithms.
    pub lock_delay: Nanos,
    /// The longest one acquire or renewal attempt takes when the service is healthy, ns: its
    /// request timeouts added up (Redlock's is masters × per-master timeout). `None`: the
    /// workload's `rpc_timeout`.
    pub attempt: Option<Nanos>,
    /// After a fault on the service ends, how long it may take to have a leader again, ns:
    /// a Raft election that may need a second round after a split vote (twice the longest
    /// randomized election timeout); 0 for a service without elections.
    pub election: Nanos,
}

/// A lock algorithm: how many service nodes it needs, what they run, and its client library.
///
/// # Example: a "lock" that never says no
/// ```
/// use std::rc::Rc;
/// use locksim_sim::protocol::{Grant, LockAlgorithm, LockClient, Outcome, Validity};
/// use locksim_sim::{async_trait, NodeCtx};
///
/// struct NoLock;
/// struct NoLockClient;
///
/// #[async_trait(?Send)]
/// impl LockClient for NoLockClient {
///     async fn acquire(&self, key: u32, _ttl: u64) -> Outcome<Grant> {
///         Outcome::Ok(Grant { key, token: None, valid_until: None, private: Rc::new(()) })
///     }
///     async fn release(&self, _grant: &Grant) -> Outcome<()> { Outcome::Ok(()) }
///     async fn extend(&self, _grant: &Grant, _ttl: u64) -> Outcome<Option<Validity>> {
///         Outcome::Ok(None)
///     }
/// }
///
/// #[async_trait(?Send)]
/// impl LockAlgorithm for NoLock {
///     fn name(&self) -> &str { "no-lock" }
///     fn servers(&self) -> u32 { 1 }
///     async fn serve(&self, _ctx: NodeCtx) {}
///     fn client(&self, _ctx: NodeCtx) -> Rc<dyn LockClient> { Rc::new(NoLockClient) }
/// }
/// ```
#[async_trait(?Send)]
pub trait LockAlgorithm: Send + Sync + 'static {
    /// The algorithm's name in reports.
    fn name(&self) -> &str;
    /// Number of lock-service nodes this configuration needs (at least 1).
    fn servers(&self) -> u32;
    /// The process of one lock-service node; runs until the node crashes. Called again on
    /// each restart with a fresh context (memory is gone; the disk keeps what was fsynced).
    async fn serve(&self, ctx: NodeCtx);
    /// The client library for one client process.
    fn client(&self, ctx: NodeCtx) -> Rc<dyn LockClient>;
    /// What the liveness oracles should allow for (default: no lock delay, attempts within
    /// the workload's `rpc_timeout`).
    fn liveness(&self) -> LivenessHints {
        LivenessHints::default()
    }
    /// `true` (the default) when a grant is a lease that ends by itself after its TTL; `false`
    /// when the lock is held until it is released or the holder's session ends (a database
    /// session lock): S3 then judges the service against the non-expiring lock spec.
    fn lock_expires(&self) -> bool {
        true
    }
    /// `true` when the service is a compare-and-swap record that judges no time (a Kubernetes
    /// Lease on the API server, whose updates check only the record's `resourceVersion`; each
    /// candidate judges expiry itself): S3 then lets the recorded holder release or renew at
    /// any time and take the lock again at once, and still requires another client's acquire
    /// to wait for the lease's end. `false` (the default): the service ends leases itself.
    fn lock_is_record(&self) -> bool {
        false
    }
    /// `true` when a grant lives as long as its holder's session, and the session is kept
    /// alive by touches the history does not show (ZooKeeper's ephemeral lock nodes, renewed by
    /// every request and ping; the leader expires a session a session timeout after its last
    /// touch): S3 then lets the holder release or renew while it holds at any time (the server
    /// judges a delete by the node's existence, not by the time since the grant), and still
    /// requires another client's acquire to wait for the lease's end (a session timeout after
    /// the grant at the earliest). `false` (the default): a grant's lease runs from the grant.
    fn lock_is_session(&self) -> bool {
        false
    }
}
