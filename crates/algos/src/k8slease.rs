//! `k8s-lease`: Kubernetes leader election, as client-go's `tools/leaderelection` package does
//! it on a `coordination.k8s.io/v1` Lease object
//! (<https://github.com/kubernetes/client-go/blob/master/tools/leaderelection/leaderelection.go>).
//!
//! - **The API server** (node `n1`) is a strongly consistent store of Lease records
//!   (`holderIdentity`, `leaseDurationSeconds`, `acquireTime`, `renewTime`,
//!   `leaseTransitions`), each with a `resourceVersion`; an update carries the version it read
//!   and is refused with a conflict when the record changed since (optimistic concurrency, as
//!   etcd's revisions give it). It commits every write durably. It judges **no** expiry.
//! - **Candidates** run client-go's `tryAcquireOrRenew`: GET the record; when it differs from
//!   the one last observed, remember it and the *local* (monotonic) time of the observation;
//!   while another holder is named and `observedTime + duration` is in the future, the lease is
//!   held; else UPDATE it with the read resourceVersion (CREATE the first time), naming itself,
//!   bumping `leaseTransitions` when the holder changes. `duration` is, by `expiry_duration`,
//!   the candidate's own `LeaseDuration` (`own`, as client-go did before it read the record's
//!   field) or the record's `leaseDurationSeconds` (`record`, as current client-go does).
//! - **The durations, per client**: `LeaseDuration` is the client's `ttl` (written into the
//!   record), `RetryPeriod` its `renew_every` (the leader renews on it; a candidate whose
//!   attempt did not get the lease — held, a conflict, an error — polls again after
//!   `RetryPeriod` plus up to 1.2 × `RetryPeriod` of jitter, `wait.JitterUntil`'s factor, and
//!   the workload's `retry_delay` defaults to 0 on top of it, as client-go's `acquire` loop
//!   waits nothing more), `RenewDeadline` its `renew_deadline` (the leader stops
//!   leading when no renewal succeeded for that long). Kubernetes' components default them
//!   to 15 s, 2 s and 10 s; unless a file or `--set` says otherwise, `renew_every` and
//!   `renew_deadline` take those defaults scaled to the run's `ttl` (`2/15` and `2/3` of it,
//!   [`CLIENT_DEFAULTS`]; `ttl = "15s"` gives exactly 15 s, 2 s and 10 s), and each request
//!   times out after `max(renew_deadline / 2, ttl / 15)`, as `resourcelock.NewFromKubeconfig`
//!   (kube-scheduler, kube-controller-manager) and controller-runtime set `rest.Config.Timeout
//!   = max(RenewDeadline / 2, 1 s)`; a bare `rest.Config` has none (`timeout = none`), and a
//!   renewal round is then bounded by the `RenewDeadline` context alone. When a leader stops
//!   (`OnStoppedLeading`), the workload's `step_down` says how long it keeps acting.
//! - **`release_on_cancel`** (`LeaderElectionConfig.ReleaseOnCancel`): a release writes an
//!   empty holder with `leaseDurationSeconds = 1`, so a candidate may take the lease at once;
//!   without it a release only stops renewing and the lease runs out; it answers `ok` while the
//!   leader's own lease is still valid (the same leader may take the lease straight back, as
//!   client-go's `holderIdentity == me` path does) and `fail` once it has run out.
//! - **Fencing token** (`fencing = true`, a remedy; off by default, as client-go ships):
//!   `leaseTransitions` in the high 32 bits and the resourceVersion of the acquiring write in
//!   the low 32 (strictly increasing over grants, also when the same client takes the lease
//!   again), checked by the resource. client-go's `leaderelection` package says
//!   of itself that it does not guarantee only one client acts as leader at a time (it provides
//!   no fencing: <https://pkg.go.dev/k8s.io/client-go/tools/leaderelection>), so most users
//!   protect nothing.
//! - The leader's own validity is `start + LeaseDuration − drift` on its monotonic clock, from
//!   the send of its last successful acquire or renewal (a careful leader).
//!
//! - **What S3 holds it to** ([`LockAlgorithm::lock_is_record`]): the API server promises a
//!   compare-and-swap record, not a lease it ends itself; so the recorded holder's release
//!   (with `release_on_cancel`, an update the server accepts at any time; without it, the
//!   client's own answer) and renewal take effect whatever the time, and the holder may take
//!   the record back at once; another candidate's take-over must still come after the lease's
//!   end (± the declared uncertainty), which is what the candidates' clocks promise.
//!
//! - **`renewer`**: a renewal GETs the record and UPDATEs it on the resourceVersion read
//!   (`reread`, client-go's way), or UPDATEs it on the version of the client's own last write
//!   without a read (`last-write`, the DynamoDB lock client's heartbeat, [`Renewer`]).
//!
//! One deviation: when a leader's renewal finds another holder named it reports the lease lost,
//! where client-go would try to take it back if that holder's lease looked expired.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use locksim_core::history::EventKind;
use locksim_core::{Nanos, NodeId, Workload};
use locksim_sim::{
    async_trait, CallError, Grant, LocalClock, LockAlgorithm, LockClient, NodeCtx, Outcome,
    Validity,
};
use rand::Rng;

use crate::knobs::{Knob, Knobs};
use crate::lockserver::{call_failed, valid_until};

/// Knobs of `k8s-lease`.
pub const KNOBS: &[Knob] = &[
    Knob {
        key: "expiry_duration",
        default: "record",
        help: "how long a candidate waits after it last saw the record change: record (its leaseDurationSeconds, current client-go) | own (its own LeaseDuration, older client-go)",
    },
    Knob {
        key: "release_on_cancel",
        default: "false",
        help: "a release empties the holder (leaseDurationSeconds = 1) instead of letting the lease run out",
    },
    Knob {
        key: "fencing",
        default: "false",
        help: "hand the resource a fencing token (leaseTransitions, resourceVersion), a remedy; false (the default): no token, as client-go ships it: its leaderelection package documents that it provides no fencing (pkg.go.dev/k8s.io/client-go/tools/leaderelection)",
    },
    Knob {
        key: "timeout",
        default: "max(renew_deadline/2, ttl/15)",
        help: "client's per-request timeout (one GET or UPDATE): by default max(renew_deadline/2, ttl/15), what resourcelock.NewFromKubeconfig and controller-runtime set (max(RenewDeadline/2, 1s): 5 s with the 10 s default); a duration, or none (a rest.Config of your own: no Timeout)",
    },
    Knob {
        key: "renewer",
        default: "reread",
        help: "what a renewal's update is conditioned on: reread (GET the Lease, then UPDATE on the resourceVersion read: client-go's tryAcquireOrRenew, so after a renewal without an answer the next one finds its own write) | last-write (one UPDATE on the version this client last wrote, no read: the DynamoDB lock client's heartbeat on its recordVersionNumber; a lost success reply leaves it a stale version and its next heartbeat fails: cirello-io/dynamolock#280)",
    },
    crate::knobs::DRIFT_FACTOR,
];

/// What a renewal's UPDATE is conditioned on (the `renewer` knob).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renewer {
    /// GET the record, then UPDATE on the resourceVersion read (client-go's
    /// `tryAcquireOrRenew`).
    Reread,
    /// UPDATE on the resourceVersion of this client's own last successful write, without a
    /// read: the DynamoDB lock client's heartbeat, conditioned on the `recordVersionNumber` it
    /// last wrote (<https://github.com/awslabs/amazon-dynamodb-lock-client>,
    /// cirello-io/dynamolock#280). A write that took effect but whose reply was lost leaves the
    /// client a stale version: its next heartbeat is refused and it loses the lock it holds.
    LastWrite,
}

/// client-go's leader-election durations as Kubernetes' components ship them, scaled to the
/// run's `ttl` (the `LeaseDuration`): `RetryPeriod` 2 s and `RenewDeadline` 10 s of a 15 s
/// lease (kubernetes/component-base `config/v1alpha1/defaults.go`,
/// `RecommendedDefaultLeaderElectionConfiguration`; controller-runtime `pkg/manager/internal.go`
/// has the same three). The library itself has no defaults: `NewLeaderElector` refuses zeros.
pub const CLIENT_DEFAULTS: &[crate::ClientDefault] = &[
    crate::ClientDefault {
        key: "renew_every",
        num: 2,
        den: 15,
        source: "client-go RetryPeriod: 2s of a 15s LeaseDuration (component-base RecommendedDefaultLeaderElectionConfiguration, controller-runtime defaultRetryPeriod)",
    },
    crate::ClientDefault {
        key: "renew_deadline",
        num: 2,
        den: 3,
        source: "client-go RenewDeadline: 10s of a 15s LeaseDuration (component-base RecommendedDefaultLeaderElectionConfiguration, controller-runtime defaultRenewDeadline)",
    },
    crate::ClientDefault {
        key: "retry_delay",
        num: 0,
        den: 1,
        source: "none on top of the client's own wait: client-go's LeaderElector.acquire polls with wait.JitterUntil(tryAcquireOrRenew, RetryPeriod, JitterFactor = 1.2, sliding), so after every attempt that did not get the lease it waits RetryPeriod plus up to 1.2 RetryPeriod, itself, and tries again",
    },
];

/// A Lease object's spec. Times are readings of the writer's wall clock, ns (informational:
/// no one judges expiry by them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseRecord {
    /// `holderIdentity`; `None` when empty.
    pub holder: Option<NodeId>,
    /// `leaseDurationSeconds`, in ns.
    pub duration: Nanos,
    /// `acquireTime`.
    pub acquire_time: i64,
    /// `renewTime`.
    pub renew_time: i64,
    /// `leaseTransitions`.
    pub transitions: u64,
}

/// A request to the API server.
#[derive(Debug, Clone)]
pub enum ApiReq {
    /// GET the Lease `name`.
    Get { name: u32 },
    /// CREATE it (fails when it exists).
    Create { name: u32, record: LeaseRecord },
    /// UPDATE it if its resourceVersion is still `rv`. `acquire` is the recorder's annotation
    /// (this write takes the lease rather than renewing or releasing it), not part of the API.
    Update {
        name: u32,
        record: LeaseRecord,
        rv: u64,
        acquire: bool,
    },
}

/// The API server's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiResp {
    /// The object and its resourceVersion (`None`: not found).
    Object(Option<(LeaseRecord, u64)>),
    /// Written; the new resourceVersion.
    Written(u64),
    /// 409: the object exists (create) or changed since it was read (update).
    Conflict,
}

/// The API server's store, apart from the network (unit-testable).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Store {
    /// The last resourceVersion handed out (a global counter, as etcd's revision).
    pub rv: u64,
    /// Leases by name, with their resourceVersion.
    pub leases: BTreeMap<u32, (LeaseRecord, u64)>,
}

impl Store {
    /// Applies `req`.
    pub fn apply(&mut self, req: &ApiReq) -> ApiResp {
        match *req {
            ApiReq::Get { name } => ApiResp::Object(self.leases.get(&name).copied()),
            ApiReq::Create { name, record } => {
                if self.leases.contains_key(&name) {
                    return ApiResp::Conflict;
                }
                self.rv += 1;
                self.leases.insert(name, (record, self.rv));
                ApiResp::Written(self.rv)
            }
            ApiReq::Update {
                name, record, rv, ..
            } => match self.leases.get(&name) {
                Some(&(_, cur)) if cur == rv => {
                    self.rv += 1;
                    self.leases.insert(name, (record, self.rv));
                    ApiResp::Written(self.rv)
                }
                _ => ApiResp::Conflict,
            },
        }
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = self.rv.to_le_bytes().to_vec();
        for (name, (r, rv)) in &self.leases {
            out.extend_from_slice(&name.to_le_bytes());
            out.extend_from_slice(&r.holder.map_or(u32::MAX, |h| h).to_le_bytes());
            for v in [
                r.duration,
                r.acquire_time as u64,
                r.renew_time as u64,
                r.transitions,
                *rv,
            ] {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        out
    }

    fn decode(b: &[u8]) -> Store {
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let mut s = Store {
            rv: u64_at(0),
            leases: BTreeMap::new(),
        };
        let mut i = 8;
        while i + 48 <= b.len() {
            let holder = u32_at(i + 4);
            let r = LeaseRecord {
                holder: (holder != u32::MAX).then_some(holder),
                duration: u64_at(i + 8),
                acquire_time: u64_at(i + 16) as i64,
                renew_time: u64_at(i + 24) as i64,
                transitions: u64_at(i + 32),
            };
            s.leases.insert(u32_at(i), (r, u64_at(i + 40)));
            i += 48;
        }
        s
    }
}

/// The fencing token of a grant: `leaseTransitions` and the acquiring write's resourceVersion.
pub fn token(transitions: u64, rv: u64) -> u64 {
    (transitions << 32) | (rv & 0xffff_ffff)
}

/// Which duration a candidate adds to the time it last observed the record change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpiryDuration {
    /// Its own configured `LeaseDuration`.
    Own,
    /// The record's `leaseDurationSeconds`.
    Record,
}

/// The `k8s-lease` algorithm.
#[derive(Debug, Clone)]
pub struct K8sLease {
    expiry: ExpiryDuration,
    release_on_cancel: bool,
    /// What a renewal is conditioned on.
    renewer: Renewer,
    /// Hand the resource the fencing token ([`token`]).
    fencing: bool,
    timeout: Nanos,
    /// Whether `timeout` was given; if not, each client derives its own from its durations
    /// ([`derived_timeout`]).
    timeout_given: bool,
    drift_ppm: u64,
    /// The longest pause between a candidate's polls, ns (for the liveness hints).
    longest_poll: Nanos,
    retry_delay: Nanos,
}

impl K8sLease {
    /// Builds `k8s-lease` from its knobs.
    ///
    /// # Errors
    /// A message naming a bad or unknown knob.
    pub fn from_config(config: &BTreeMap<String, String>, w: &Workload) -> Result<Self, String> {
        let k = Knobs::new("k8s-lease", config, KNOBS)?;
        // client-go's NewLeaderElector refuses these: "leaseDuration must be greater than
        // renewDeadline", "renewDeadline must be greater than retryPeriod*JitterFactor".
        let mut clients = vec![(String::new(), w.client(1))];
        for name in w.per_client.keys() {
            if let Some(i) = name.strip_prefix('c').and_then(|i| i.parse::<u32>().ok()) {
                clients.push((format!("{name}."), w.client(i)));
            }
        }
        for (scope, p) in &clients {
            if let Some(deadline) = p.renew_deadline {
                if deadline >= p.ttl {
                    return Err(format!(
                        "k8s-lease: `{scope}renew_deadline` ({}) must be shorter than the lease (`{scope}ttl`, {}), as client-go's NewLeaderElector requires",
                        locksim_core::time::fmt_nanos(deadline as i128),
                        locksim_core::time::fmt_nanos(p.ttl as i128)
                    ));
                }
                if let Some(every) = p.renew_every {
                    if deadline as u128 * 5 <= every as u128 * 6 {
                        return Err(format!(
                            "k8s-lease: `{scope}renew_deadline` ({}) must be longer than 1.2 × `{scope}renew_every` ({}), client-go's RetryPeriod × JitterFactor, as its NewLeaderElector requires",
                            locksim_core::time::fmt_nanos(deadline as i128),
                            locksim_core::time::fmt_nanos(every as i128)
                        ));
                    }
                }
            }
        }
        let drift_ppm = k.fraction_ppm("drift_factor")?;
        crate::knobs::check_ttl("k8s-lease", w.min_ttl(), drift_ppm)?;
        let timeout_given = config.contains_key("timeout");
        let mut longest = w.renew_every.unwrap_or(0);
        for p in w.per_client.values() {
            longest = longest.max(p.renew_every.unwrap_or(0));
        }
        Ok(K8sLease {
            expiry: match k.choice("expiry_duration", &["record", "own"])? {
                "own" => ExpiryDuration::Own,
                _ => ExpiryDuration::Record,
            },
            release_on_cancel: k.flag("release_on_cancel")?,
            renewer: match k.choice("renewer", &["reread", "last-write"])? {
                "last-write" => Renewer::LastWrite,
                _ => Renewer::Reread,
            },
            fencing: k.flag("fencing")?,
            timeout: if timeout_given {
                k.timeout("timeout")?
            } else {
                derived_timeout(&w.client(1))
            },
            timeout_given,
            drift_ppm,
            longest_poll: longest + longest * 6 / 5,
            retry_delay: w.retry_delay_max,
        })
    }
}

/// A client's request timeout when none is given: `max(renew_deadline / 2, ttl / 15)`, as
/// `resourcelock.NewFromKubeconfig` and controller-runtime set `rest.Config.Timeout =
/// max(RenewDeadline / 2, 1 s)` (1 s of the default 15 s lease is `ttl / 15`); without a
/// renew deadline, `ttl / 3` (the default RenewDeadline's half).
fn derived_timeout(p: &locksim_core::ClientParams) -> Nanos {
    (p.renew_deadline.unwrap_or(p.ttl * 2 / 3) / 2)
        .max(p.ttl / 15)
        .max(1)
}

/// What a candidate remembers between attempts (client-go's `observedRecord`/`observedTime`).
#[derive(Debug, Clone, Copy, Default)]
struct Observed {
    /// The record and its resourceVersion, as last seen.
    record: Option<(LeaseRecord, u64)>,
    /// Monotonic reading when it was first seen, ns.
    at: u64,
}

struct Client {
    ctx: NodeCtx,
    cfg: K8sLease,
    clock: LocalClock,
    /// This client's `RetryPeriod` (its `renew_every`), if it has one.
    retry_period: Option<Nanos>,
    observed: RefCell<BTreeMap<u32, Observed>>,
    /// Per lease: the monotonic reading at the send of this client's last successful write
    /// naming itself (acquire or renewal), and the LeaseDuration it wrote.
    own_write: RefCell<BTreeMap<u32, (u64, Nanos)>>,
}

/// Why one `tryAcquireOrRenew` did not end with this client holding the lease.
enum NotHeld {
    /// Another holder's lease has not expired by this client's observation.
    Held(NodeId, Nanos),
    /// The write lost a race (409) or the server answered oddly.
    Conflict,
    /// No answer.
    Call(CallError),
}

impl Client {
    async fn api(&self, req: ApiReq) -> Result<ApiResp, CallError> {
        self.ctx
            .call::<ApiReq, ApiResp>(0, req, self.cfg.timeout)
            .await
    }

    /// Remembers `seen` and, when it changed, the local time of the observation.
    fn observe(&self, name: u32, seen: Option<(LeaseRecord, u64)>) -> Observed {
        let mut obs = self.observed.borrow_mut();
        let o = obs.entry(name).or_default();
        if o.record.map(|r| r.1) != seen.map(|r| r.1) || o.record.is_none() {
            o.record = seen;
            o.at = self.ctx.mono_now();
        }
        *o
    }

    /// client-go's `tryAcquireOrRenew` for lease `name` with this client's `LeaseDuration`
    /// `ttl`; `renew_only`: fail rather than take a lease someone else holds. Returns the
    /// record written and its resourceVersion.
    async fn try_acquire_or_renew(
        &self,
        name: u32,
        ttl: Nanos,
        renew_only: bool,
    ) -> Result<(LeaseRecord, u64), NotHeld> {
        let sent = self.ctx.mono_now();
        let r = self.try_once(name, ttl, renew_only).await;
        if r.is_ok() {
            self.own_write.borrow_mut().insert(name, (sent, ttl));
        }
        r
    }

    async fn try_once(
        &self,
        name: u32,
        ttl: Nanos,
        renew_only: bool,
    ) -> Result<(LeaseRecord, u64), NotHeld> {
        let me = self.ctx.id();
        let wall = self.ctx.wall_now();
        let fresh = LeaseRecord {
            holder: Some(me),
            duration: ttl,
            acquire_time: wall,
            renew_time: wall,
            transitions: 0,
        };
        if renew_only && self.cfg.renewer == Renewer::LastWrite {
            return self.heartbeat(name, fresh).await;
        }
        let seen = match self.api(ApiReq::Get { name }).await {
            Ok(ApiResp::Object(o)) => o,
            Ok(_) => return Err(NotHeld::Conflict),
            Err(e) => return Err(NotHeld::Call(e)),
        };
        let Some((old, rv)) = seen else {
            if renew_only {
                return Err(NotHeld::Conflict);
            }
            let req = ApiReq::Create {
                name,
                record: fresh,
            };
            return match self.api(req).await {
                Ok(ApiResp::Written(rv)) => Ok(self.wrote(name, fresh, rv)),
                Ok(_) => Err(NotHeld::Conflict),
                Err(e) => Err(NotHeld::Call(e)),
            };
        };
        let o = self.observe(name, seen);
        let ours = old.holder == Some(me);
        if let Some(h) = old.holder.filter(|_| !ours) {
            let dur = match self.cfg.expiry {
                ExpiryDuration::Own => ttl,
                ExpiryDuration::Record => old.duration,
            };
            let now = self.ctx.mono_now();
            if renew_only || o.at.saturating_add(dur) > now {
                return Err(NotHeld::Held(
                    h,
                    o.at.saturating_add(dur).saturating_sub(now),
                ));
            }
        }
        if renew_only && !ours {
            return Err(NotHeld::Conflict);
        }
        let record = LeaseRecord {
            acquire_time: if ours { old.acquire_time } else { wall },
            transitions: if ours {
                old.transitions
            } else {
                old.transitions + 1
            },
            ..fresh
        };
        let req = ApiReq::Update {
            name,
            record,
            rv,
            acquire: !renew_only,
        };
        match self.api(req).await {
            Ok(ApiResp::Written(rv)) => Ok(self.wrote(name, record, rv)),
            Ok(_) => Err(NotHeld::Conflict),
            Err(e) => Err(NotHeld::Call(e)),
        }
    }

    /// A renewal with `renewer = last-write`: one UPDATE conditioned on the resourceVersion of
    /// this client's last successful write (the record it last observed is its own), no GET.
    async fn heartbeat(
        &self,
        name: u32,
        fresh: LeaseRecord,
    ) -> Result<(LeaseRecord, u64), NotHeld> {
        let last = self.observed.borrow().get(&name).and_then(|o| o.record);
        let Some((old, rv)) = last.filter(|(r, _)| r.holder == Some(self.ctx.id())) else {
            return Err(NotHeld::Conflict);
        };
        let record = LeaseRecord {
            acquire_time: old.acquire_time,
            transitions: old.transitions,
            ..fresh
        };
        let req = ApiReq::Update {
            name,
            record,
            rv,
            acquire: false,
        };
        match self.api(req).await {
            Ok(ApiResp::Written(rv)) => Ok(self.wrote(name, record, rv)),
            Ok(_) => Err(NotHeld::Conflict),
            Err(e) => Err(NotHeld::Call(e)),
        }
    }

    /// After a successful write: the record observed is our own, now.
    fn wrote(&self, name: u32, record: LeaseRecord, rv: u64) -> (LeaseRecord, u64) {
        self.observed.borrow_mut().insert(
            name,
            Observed {
                record: Some((record, rv)),
                at: self.ctx.mono_now(),
            },
        );
        (record, rv)
    }

    fn validity(&self, start: i64, ttl: Nanos) -> Validity {
        Validity {
            clock: self.clock,
            until: valid_until(start, ttl, self.cfg.drift_ppm),
        }
    }
}

fn not_held<T>(e: NotHeld) -> Outcome<T> {
    match e {
        NotHeld::Held(h, left) => Outcome::Fail(format!(
            "held by node {h}, {} left by this candidate's observation",
            locksim_core::time::fmt_nanos(left as i128)
        )),
        NotHeld::Conflict => Outcome::Fail("conflict: the Lease changed".into()),
        NotHeld::Call(e) => call_failed(e),
    }
}

#[async_trait(?Send)]
impl LockClient for Client {
    async fn acquire(&self, key: u32, ttl: Nanos) -> Outcome<Grant> {
        let start = self.ctx.now(self.clock);
        match self.try_acquire_or_renew(key, ttl, false).await {
            Ok((r, rv)) => Outcome::Ok(Grant {
                key,
                token: self.cfg.fencing.then(|| token(r.transitions, rv)),
                valid_until: Some(self.validity(start, ttl)),
                private: Rc::new(()),
            }),
            Err(e) => {
                // wait.JitterUntil(RetryPeriod, 1.2, sliding): after any attempt that did not
                // get the lease (held, a conflict, an error), the candidate polls again later.
                if let Some(p) = self.retry_period {
                    let jitter = self.ctx.rng().gen_range(0..=p * 6 / 5);
                    self.ctx.sleep(p + jitter).await;
                }
                not_held(e)
            }
        }
    }

    async fn release(&self, grant: &Grant) -> Outcome<()> {
        if !self.cfg.release_on_cancel {
            // The leader just stops renewing; the lease runs out.
            let own = self.own_write.borrow().get(&grant.key).copied();
            return match own {
                Some((sent, ttl))
                    if (self.ctx.mono_now() as i64)
                        < valid_until(sent as i64, ttl, self.cfg.drift_ppm) =>
                {
                    Outcome::Ok(())
                }
                _ => Outcome::Fail("the lease had already run out".into()),
            };
        }
        let me = self.ctx.id();
        let Some((old, rv)) = self
            .observed
            .borrow()
            .get(&grant.key)
            .and_then(|o| o.record)
        else {
            return Outcome::Fail("no record observed".into());
        };
        if old.holder != Some(me) {
            return Outcome::Fail("not the leader".into());
        }
        let wall = self.ctx.wall_now();
        let record = LeaseRecord {
            holder: None,
            duration: 1_000_000_000,
            acquire_time: wall,
            renew_time: wall,
            transitions: old.transitions,
        };
        let req = ApiReq::Update {
            name: grant.key,
            record,
            rv,
            acquire: false,
        };
        match self.api(req).await {
            Ok(ApiResp::Written(rv)) => {
                self.wrote(grant.key, record, rv);
                Outcome::Ok(())
            }
            Ok(_) => Outcome::Fail("conflict: the Lease changed".into()),
            Err(e) => call_failed(e),
        }
    }

    async fn extend(&self, grant: &Grant, ttl: Nanos) -> Outcome<Option<Validity>> {
        let start = self.ctx.now(self.clock);
        match self.try_acquire_or_renew(grant.key, ttl, true).await {
            Ok(_) => Outcome::Ok(Some(self.validity(start, ttl))),
            Err(NotHeld::Held(h, _)) => Outcome::Fail(format!("the Lease names node {h}")),
            Err(e) => not_held(e),
        }
    }
}

#[async_trait(?Send)]
impl LockAlgorithm for K8sLease {
    fn name(&self) -> &str {
        "k8s-lease"
    }
    fn servers(&self) -> u32 {
        1
    }
    async fn serve(&self, ctx: NodeCtx) {
        const FILE: &str = "leases";
        let mut store = ctx.disk().read(FILE).map(Store::decode).unwrap_or_default();
        loop {
            let msg = ctx.recv().await;
            let Some(req) = msg.body.downcast_ref::<ApiReq>() else {
                continue;
            };
            let resp = store.apply(req);
            if let ApiResp::Written(rv) = resp {
                let taken = match *req {
                    ApiReq::Create { name, record } => Some((name, record)),
                    ApiReq::Update {
                        name,
                        record,
                        acquire: true,
                        ..
                    } => Some((name, record)),
                    _ => None,
                };
                if let Some((name, r)) = taken {
                    ctx.record(EventKind::Grant {
                        key: name,
                        client: msg.from,
                        token: Some(token(r.transitions, rv)),
                    });
                }
                let mut d = ctx.disk();
                d.write(FILE, store.encode());
                d.fsync();
            }
            ctx.reply(&msg, resp).await;
        }
    }
    /// The API server's update is a compare-and-swap on `resourceVersion` that judges no time:
    /// S3 holds it to that (the record spec), not to a server that ends leases itself.
    fn lock_is_record(&self) -> bool {
        true
    }
    fn liveness(&self) -> locksim_sim::LivenessHints {
        // A candidate sees the last change up to one poll late and the expiry up to one poll
        // late again (each poll: a retry period with jitter, then the workload's retry delay).
        locksim_sim::LivenessHints {
            lock_delay: 2 * (self.longest_poll + self.retry_delay),
            attempt: Some(2 * locksim_sim::finite(self.timeout)),
            election: 0,
        }
    }
    fn client(&self, ctx: NodeCtx) -> Rc<dyn LockClient> {
        let clock = ctx.client_clock(LocalClock::Mono);
        let me = ctx
            .world()
            .workload
            .client(ctx.id() - ctx.cluster().servers + 1);
        let retry_period = me.renew_every;
        let mut cfg = self.clone();
        if !cfg.timeout_given {
            cfg.timeout = derived_timeout(&me);
        }
        Rc::new(Client {
            ctx,
            cfg,
            clock,
            retry_period,
            observed: RefCell::new(BTreeMap::new()),
            own_write: RefCell::new(BTreeMap::new()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(holder: NodeId) -> LeaseRecord {
        LeaseRecord {
            holder: Some(holder),
            duration: 15_000_000_000,
            acquire_time: 0,
            renew_time: 0,
            transitions: 0,
        }
    }

    #[test]
    fn updates_are_compare_and_swap_on_the_resource_version() {
        let mut s = Store::default();
        assert_eq!(
            s.apply(&ApiReq::Create {
                name: 0,
                record: rec(1)
            }),
            ApiResp::Written(1)
        );
        assert_eq!(
            s.apply(&ApiReq::Create {
                name: 0,
                record: rec(2)
            }),
            ApiResp::Conflict
        );
        let upd = |rv, h| ApiReq::Update {
            name: 0,
            record: rec(h),
            rv,
            acquire: true,
        };
        assert_eq!(s.apply(&upd(1, 2)), ApiResp::Written(2));
        assert_eq!(s.apply(&upd(1, 3)), ApiResp::Conflict, "a stale read loses");
        assert_eq!(
            s.apply(&ApiReq::Get { name: 0 }),
            ApiResp::Object(Some((rec(2), 2)))
        );
        assert_eq!(s.apply(&ApiReq::Get { name: 9 }), ApiResp::Object(None));
    }

    #[test]
    fn tokens_grow_with_transitions_and_versions() {
        assert!(token(1, 5) > token(0, 900));
        assert!(token(1, 6) > token(1, 5));
    }

    #[test]
    fn the_store_survives_encoding() {
        let mut s = Store::default();
        s.apply(&ApiReq::Create {
            name: 3,
            record: LeaseRecord {
                holder: None,
                ..rec(0)
            },
        });
        s.apply(&ApiReq::Create {
            name: 1,
            record: rec(4),
        });
        assert_eq!(Store::decode(&s.encode()), s);
    }

    #[test]
    fn bad_knobs_are_named() {
        let w = Workload::default();
        let cfg = |k: &str, v: &str| BTreeMap::from([(k.to_string(), v.to_string())]);
        let e = K8sLease::from_config(&cfg("expiry_duration", "mine"), &w).unwrap_err();
        assert!(
            e.contains("expiry_duration") && e.contains("record or own"),
            "{e}"
        );
        let e = K8sLease::from_config(&cfg("release_on_cancel", "maybe"), &w).unwrap_err();
        assert!(e.contains("release_on_cancel"), "{e}");
        let e = K8sLease::from_config(&cfg("renewer", "dynamodb"), &w).unwrap_err();
        assert_eq!(
            e,
            "k8s-lease: `renewer=dynamodb` is not valid (choose reread or last-write)"
        );
    }
}
