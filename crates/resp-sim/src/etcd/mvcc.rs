//! The key space of one simulated etcd member: etcd v3's multi-version store and its lessor,
//! as a synchronous, deterministic state machine over etcd's own protobuf messages.
//!
//! What it models (etcd v3.5, <https://etcd.io/docs/v3.5/learning/api/>,
//! <https://etcd.io/docs/v3.5/learning/data_model/>, and the comments of etcd's `rpc.proto`
//! and `kv.proto`):
//! - Revisions: an empty store is at revision 1; each request that changes something (a put, a
//!   delete of a live key, a txn, a lease revoke or expiry with keys) makes one new revision,
//!   shared by all its writes. Every key keeps `create_revision`, `mod_revision` and `version`
//!   (1 at creation, +1 per put, gone with the key). The whole history is kept, so a `Range`
//!   can read any past revision and a watch can start anywhere.
//! - `Range` (single key, `[key, range_end)`, or every key `>= key` when `range_end` is `"\0"`),
//!   with `limit`, `revision`, sorting, the min/max revision filters, `keys_only`,
//!   `count_only`; `Put` (with `prev_kv`, `lease`, `ignore_value`, `ignore_lease`);
//!   `DeleteRange`; `Txn` with compares, branches and nested txns (compares see the store as
//!   it was before the txn, and a txn may not write a key twice).
//! - Leases: grant (TTL raised to etcd's 2 s minimum), revoke, keep-alive, time-to-live, list.
//!   A lease ends at its deadline: every method that takes `now` first revokes the leases whose
//!   deadline is `<= now` (earliest first), so no request sees an expired lease or its keys.
//! - A restart keeps keys and leases (etcd's WAL) and renews every lease to its TTL plus one
//!   election timeout from the restart, as etcd's lessor does when its member becomes leader.
//!
//! Left out: auth, compaction (every revision is kept), several members and Raft (one member
//! that is always leader; the header's `raft_term` only grows at restarts), lease checkpoints,
//! and the 500 ms sweep with which etcd notices expired leases (the caller can add that delay).
//!
//! Units: `now` and deadlines are ns ([`Nanos`]) on the member's own clock; TTLs on the wire
//! are whole seconds. Besides its response, each mutating method returns the [`Effect`]s the
//! lock checkers care about (see [`crate::record`]).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use etcd_client::proto::{
    PbCompare, PbCompareTarget, PbDeleteRequest, PbDeleteResponse, PbEvent, PbKeyValue,
    PbLeaseGrantRequest, PbLeaseGrantResponse, PbLeaseKeepAliveResponse, PbLeaseLeasesResponse,
    PbLeaseRevokeResponse, PbLeaseStatus, PbLeaseTimeToLiveRequest, PbLeaseTimeToLiveResponse,
    PbPutRequest, PbPutResponse, PbRangeRequest, PbRangeResponse, PbResponseHeader, PbResponseOp,
    PbTargetUnion, PbTxnOpRequest, PbTxnOpResponse, PbTxnRequest, PbTxnRequestOp, PbTxnResponse,
};
use locksim_core::Nanos;

use crate::scripts::ScriptKind;
use crate::store::Effect;

/// The cluster id in every header: a default single-member etcd's (`--name default`).
pub const CLUSTER_ID: u64 = 0xcdf8_1819_4e3a_8c32;
/// The member id in every header: a default single-member etcd's.
pub const MEMBER_ID: u64 = 0x8e9e_05c5_2164_694d;
/// etcd's smallest lease TTL, s: ⌈1.5 × the 1000 ms default election timeout⌉.
pub const MIN_LEASE_TTL: i64 = 2;
/// etcd's largest lease TTL, s.
pub const MAX_LEASE_TTL: i64 = 9_000_000_000;
/// etcd's default election timeout, ns: what a new leader adds to every lease's TTL.
pub const ELECTION_TIMEOUT: Nanos = 1_000_000_000;
/// etcd's default `--max-txn-ops`: the most compares, or ops in one branch, of a txn.
pub const MAX_TXN_OPS: usize = 128;
/// Lease ids the store picks are this plus 1, 2, …: etcd's shape (the member id's low 16 bits,
/// a millisecond timestamp, a counter), with a fixed timestamp.
pub const LEASE_ID_BASE: i64 = 0x694d_8cc2_51f4_0000;

const SEC: Nanos = 1_000_000_000;
// Enum values of rpc.proto / kv.proto (prost keeps them as i32).
const EQUAL: i32 = 0;
const GREATER: i32 = 1;
const LESS: i32 = 2;
const NOT_EQUAL: i32 = 3;
const T_VERSION: i32 = PbCompareTarget::Version as i32;
const T_CREATE: i32 = PbCompareTarget::Create as i32;
const T_MOD: i32 = PbCompareTarget::Mod as i32;
const T_VALUE: i32 = PbCompareTarget::Value as i32;
const T_LEASE: i32 = PbCompareTarget::Lease as i32;
const ORDER_NONE: i32 = 0;
const ORDER_ASCEND: i32 = 1;
const ORDER_DESCEND: i32 = 2;
const SORT_KEY: i32 = 0;
const SORT_VERSION: i32 = 1;
const SORT_CREATE: i32 = 2;
const SORT_MOD: i32 = 3;
const SORT_VALUE: i32 = 4;
const EVENT_PUT: i32 = 0;
const EVENT_DELETE: i32 = 1;

/// An error etcd answers a request with, carrying etcd's own message ([`std::fmt::Display`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EtcdError {
    /// A request (or compare) with an empty key.
    EmptyKey,
    /// `ignore_value`/`ignore_lease` on a key that does not exist, or an empty txn op.
    KeyNotFound,
    /// `ignore_value` with a value.
    ValueProvided,
    /// `ignore_lease` with a lease.
    LeaseProvided,
    /// More than [`MAX_TXN_OPS`] compares or ops in one branch.
    TooManyOps,
    /// A txn branch that puts a key twice, or puts a key it also deletes.
    DuplicateKey,
    /// A `sort_order` or `sort_target` rpc.proto does not define.
    InvalidSortOption,
    /// A `Range` at a revision the store has not reached.
    FutureRev,
    /// A lease that does not exist (never granted, revoked or expired).
    LeaseNotFound,
    /// A grant of an id already in use.
    LeaseExists,
    /// A grant with a TTL above [`MAX_LEASE_TTL`].
    LeaseTtlTooLarge,
}

impl EtcdError {
    /// etcd's message for the error (its `rpctypes` errors).
    pub fn message(self) -> &'static str {
        match self {
            EtcdError::EmptyKey => "etcdserver: key is not provided",
            EtcdError::KeyNotFound => "etcdserver: key not found",
            EtcdError::ValueProvided => "etcdserver: value is provided",
            EtcdError::LeaseProvided => "etcdserver: lease is provided",
            EtcdError::TooManyOps => "etcdserver: too many operations in txn request",
            EtcdError::DuplicateKey => "etcdserver: duplicate key given in txn request",
            EtcdError::InvalidSortOption => "etcdserver: invalid sort option",
            EtcdError::FutureRev => "etcdserver: mvcc: required revision is a future revision",
            EtcdError::LeaseNotFound => "etcdserver: requested lease not found",
            EtcdError::LeaseExists => "etcdserver: lease already exists",
            EtcdError::LeaseTtlTooLarge => "etcdserver: too large lease TTL",
        }
    }

    /// The name of the gRPC status code etcd answers with: `"InvalidArgument"`,
    /// `"OutOfRange"`, `"NotFound"` or `"FailedPrecondition"`.
    pub fn grpc_code(self) -> &'static str {
        match self {
            EtcdError::FutureRev | EtcdError::LeaseTtlTooLarge => "OutOfRange",
            EtcdError::LeaseNotFound => "NotFound",
            EtcdError::LeaseExists => "FailedPrecondition",
            _ => "InvalidArgument",
        }
    }
}

impl std::fmt::Display for EtcdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for EtcdError {}

#[derive(Debug, Clone)]
struct Lease {
    /// Granted TTL, s.
    ttl: i64,
    /// When the lease ends, ns.
    deadline: Nanos,
    keys: BTreeSet<Vec<u8>>,
}

/// One member's keys (with their whole history), leases and events.
#[derive(Debug, Clone)]
pub struct Store {
    rev: i64,
    term: u64,
    /// Per key, its versions in revision order: `(revision, value)`, `None` for a delete.
    keys: BTreeMap<Vec<u8>, Vec<(i64, Option<PbKeyValue>)>>,
    /// Every put and delete in order, each with its `prev_kv`.
    log: Vec<PbEvent>,
    leases: BTreeMap<i64, Lease>,
    lease_seq: i64,
    /// Keys deleted by expiries since the last [`Store::expire`].
    expired: Vec<PbKeyValue>,
}

impl Default for Store {
    fn default() -> Store {
        Store {
            rev: 1,
            term: 2,
            keys: BTreeMap::new(),
            log: Vec::new(),
            leases: BTreeMap::new(),
            lease_seq: 0,
            expired: Vec::new(),
        }
    }
}

/// The state of one txn being applied.
struct Ctx {
    /// The revision its writes get (the store's + 1).
    rev: i64,
    changed: bool,
    effects: Vec<Effect>,
}

impl Ctx {
    /// The revision a read in the txn sees: its own writes once it has made one.
    fn seen(&self) -> i64 {
        self.rev - i64::from(!self.changed)
    }
}

/// Whether `k` is in the range of `key` and `range_end` (rpc.proto's meaning of the pair).
fn in_range(k: &[u8], key: &[u8], end: &[u8]) -> bool {
    match end {
        [] => k == key,
        [0] => k >= key,
        _ => k >= key && k < end,
    }
}

/// The end of the range of every key starting with `prefix` (etcd's `GetPrefixRangeEnd`).
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// The key etcd's Lock service (its `concurrency.Mutex`) makes for `lease` waiting on lock
/// `name`: `name/<lease id>`, the id written as Go's `%x` writes an int64 (lowercase hex, `-`
/// before a negative one).
pub fn lock_key(name: &[u8], lease: i64) -> Vec<u8> {
    let hex = if lease < 0 {
        format!("-{:x}", lease.unsigned_abs())
    } else {
        format!("{lease:x}")
    };
    [name, b"/", hex.as_bytes()].concat()
}

fn branch(t: &PbTxnRequest, ok: bool) -> &[PbTxnRequestOp] {
    if ok {
        &t.success
    } else {
        &t.failure
    }
}

/// The number a compare compares with: its operand when it has the compare's type, else 0.
fn operand(c: &PbCompare) -> i64 {
    match (c.target, &c.target_union) {
        (T_VERSION, Some(PbTargetUnion::Version(v)))
        | (T_CREATE, Some(PbTargetUnion::CreateRevision(v)))
        | (T_MOD, Some(PbTargetUnion::ModRevision(v)))
        | (T_LEASE, Some(PbTargetUnion::Lease(v))) => *v,
        _ => 0,
    }
}

/// etcd's `compareKV`: whether `kv` passes `c` (a missing key is the zero `KeyValue`).
fn compare_kv(c: &PbCompare, kv: &PbKeyValue) -> bool {
    let ord = match c.target {
        T_VALUE => match &c.target_union {
            Some(PbTargetUnion::Value(v)) => kv.value.as_slice().cmp(v.as_slice()),
            _ => kv.value.as_slice().cmp(&[][..]),
        },
        T_VERSION => kv.version.cmp(&operand(c)),
        T_CREATE => kv.create_revision.cmp(&operand(c)),
        T_MOD => kv.mod_revision.cmp(&operand(c)),
        T_LEASE => kv.lease.cmp(&operand(c)),
        _ => std::cmp::Ordering::Equal,
    };
    match c.result {
        EQUAL => ord.is_eq(),
        NOT_EQUAL => ord.is_ne(),
        GREATER => ord.is_gt(),
        LESS => ord.is_lt(),
        _ => true,
    }
}

/// Whether `c` compares one key's `create_revision`, `version` or `mod_revision`: each is 0
/// exactly when the key does not exist (and at least 1 when it does).
fn on_existence(c: &PbCompare) -> bool {
    c.range_end.is_empty() && matches!(c.target, T_CREATE | T_VERSION | T_MOD)
}

/// Whether `c` holds only when its key does not exist: `create_revision`, `version` or
/// `mod_revision` `== 0` (or `< 1`) on one key (etcd's lock recipes).
fn tests_absence(c: &PbCompare) -> bool {
    on_existence(c) && matches!((c.result, operand(c)), (EQUAL, 0) | (LESS, 1))
}

/// Whether `c` fails only when its key does not exist: `create_revision`, `version` or
/// `mod_revision` `> 0` (or `!= 0`) on one key — a txn that failed on it and creates the key
/// in its failure branch is a lock recipe too ("if it exists, read it, else create it").
fn tests_presence(c: &PbCompare) -> bool {
    on_existence(c) && matches!((c.result, operand(c)), (GREATER, 0) | (NOT_EQUAL, 0))
}

/// Whether `ops` (or a nested txn's success branch) delete `key`.
fn deletes(ops: &[PbTxnRequestOp], key: &[u8]) -> bool {
    ops.iter().any(|op| match &op.request {
        Some(PbTxnOpRequest::RequestDeleteRange(d)) => in_range(key, &d.key, &d.range_end),
        Some(PbTxnOpRequest::RequestTxn(t)) => deletes(&t.success, key),
        _ => false,
    })
}

fn check_range(r: &PbRangeRequest) -> Result<(), EtcdError> {
    if r.key.is_empty() {
        Err(EtcdError::EmptyKey)
    } else if !(0..=2).contains(&r.sort_order) || !(0..=4).contains(&r.sort_target) {
        Err(EtcdError::InvalidSortOption)
    } else {
        Ok(())
    }
}

/// etcd's checks of a txn's shape, before it reads anything (`checkTxnRequest`).
fn check_txn(t: &PbTxnRequest) -> Result<(), EtcdError> {
    if t.compare.len().max(t.success.len()).max(t.failure.len()) > MAX_TXN_OPS {
        return Err(EtcdError::TooManyOps);
    }
    if t.compare.iter().any(|c| c.key.is_empty()) {
        return Err(EtcdError::EmptyKey);
    }
    for op in t.success.iter().chain(&t.failure) {
        match &op.request {
            None => return Err(EtcdError::KeyNotFound),
            Some(PbTxnOpRequest::RequestRange(r)) => check_range(r)?,
            Some(PbTxnOpRequest::RequestPut(p)) if p.key.is_empty() => {
                return Err(EtcdError::EmptyKey)
            }
            Some(PbTxnOpRequest::RequestPut(p)) if p.ignore_value && !p.value.is_empty() => {
                return Err(EtcdError::ValueProvided)
            }
            Some(PbTxnOpRequest::RequestPut(p)) if p.ignore_lease && p.lease != 0 => {
                return Err(EtcdError::LeaseProvided)
            }
            Some(PbTxnOpRequest::RequestDeleteRange(d)) if d.key.is_empty() => {
                return Err(EtcdError::EmptyKey)
            }
            Some(PbTxnOpRequest::RequestTxn(n)) => check_txn(n)?,
            Some(_) => {}
        }
    }
    Ok(())
}

/// Key ranges, as `(key, range_end)`.
type Spans = Vec<(Vec<u8>, Vec<u8>)>;

/// etcd's `checkIntervals` over one branch: the keys it puts and the ranges it deletes, or
/// [`EtcdError::DuplicateKey`] when it puts a key twice or puts a key it deletes (a nested
/// txn's two branches may put the same key: only one of them runs).
fn intervals(ops: &[PbTxnRequestOp]) -> Result<(BTreeSet<Vec<u8>>, Spans), EtcdError> {
    let mut dels: Spans = ops
        .iter()
        .filter_map(|op| match &op.request {
            Some(PbTxnOpRequest::RequestDeleteRange(d)) => {
                Some((d.key.clone(), d.range_end.clone()))
            }
            _ => None,
        })
        .collect();
    let deleted = |dels: &Spans, k: &[u8]| dels.iter().any(|(a, b)| in_range(k, a, b));
    let mut puts = BTreeSet::new();
    for op in ops {
        if let Some(PbTxnOpRequest::RequestTxn(t)) = &op.request {
            let (then_puts, then_dels) = intervals(&t.success)?;
            let (else_puts, else_dels) = intervals(&t.failure)?;
            for k in &then_puts {
                if puts.contains(k) || deleted(&dels, k) {
                    return Err(EtcdError::DuplicateKey);
                }
            }
            puts.extend(then_puts.iter().cloned());
            for k in else_puts {
                if (puts.contains(&k) && !then_puts.contains(&k)) || deleted(&dels, &k) {
                    return Err(EtcdError::DuplicateKey);
                }
                puts.insert(k);
            }
            dels.extend(then_dels);
            dels.extend(else_dels);
        }
    }
    for op in ops {
        if let Some(PbTxnOpRequest::RequestPut(p)) = &op.request {
            if !puts.insert(p.key.clone()) || deleted(&dels, &p.key) {
                return Err(EtcdError::DuplicateKey);
            }
        }
    }
    Ok((puts, dels))
}

impl Store {
    /// An empty store at revision 1 (as [`Default`]).
    pub fn new() -> Store {
        Store::default()
    }

    /// The current revision (1 for an empty store).
    pub fn revision(&self) -> i64 {
        self.rev
    }

    /// The header's Raft term: 2 at first (a new single-member etcd's), +1 per restart.
    pub fn raft_term(&self) -> u64 {
        self.term
    }

    /// The response header every answer of this member carries: the cluster and member ids,
    /// `revision`, and the current Raft term.
    pub fn header(&self, revision: i64) -> Option<PbResponseHeader> {
        Some(PbResponseHeader {
            cluster_id: CLUSTER_ID,
            member_id: MEMBER_ID,
            revision,
            raft_term: self.term,
        })
    }

    /// Whether `key` exists now (as the store is: see [`Store::events`]).
    pub fn contains(&self, key: &[u8]) -> bool {
        self.current(key).is_some()
    }

    fn current(&self, key: &[u8]) -> Option<&PbKeyValue> {
        self.keys.get(key)?.last()?.1.as_ref()
    }

    /// The keys in the range at revision `rev`, in key order.
    fn kvs_at(&self, key: &[u8], end: &[u8], rev: i64) -> Vec<PbKeyValue> {
        let upper = match end {
            [] => Bound::Included(key),
            [0] => Bound::Unbounded,
            _ if end <= key => return Vec::new(),
            _ => Bound::Excluded(end),
        };
        self.keys
            .range::<[u8], _>((Bound::Included(key), upper))
            .filter_map(|(_, h)| h.iter().rev().find(|(r, _)| *r <= rev)?.1.clone())
            .collect()
    }

    fn write(&mut self, key: &[u8], rev: i64, kv: Option<PbKeyValue>) {
        let h = self.keys.entry(key.to_vec()).or_default();
        match h.last_mut() {
            Some(last) if last.0 == rev => last.1 = kv,
            _ => h.push((rev, kv)),
        }
    }

    /// Deletes live `key` at `rev`: its last value, or `None` when it does not exist.
    fn delete_key(&mut self, key: &[u8], rev: i64) -> Option<PbKeyValue> {
        let prev = self.current(key)?.clone();
        self.write(key, rev, None);
        if let Some(l) = self.leases.get_mut(&prev.lease) {
            l.keys.remove(key);
        }
        let tomb = PbKeyValue {
            key: key.to_vec(),
            mod_revision: rev,
            ..Default::default()
        };
        self.log.push(PbEvent {
            r#type: EVENT_DELETE,
            kv: Some(tomb),
            prev_kv: Some(prev.clone()),
        });
        Some(prev)
    }

    /// Removes lease `id` and deletes its keys in key order, in one revision: the deleted
    /// keys, or `None` when there is no such lease.
    fn revoke(&mut self, id: i64) -> Option<Vec<PbKeyValue>> {
        let lease = self.leases.remove(&id)?;
        let rev = self.rev + 1;
        let gone: Vec<PbKeyValue> = lease
            .keys
            .iter()
            .filter_map(|k| self.delete_key(k, rev))
            .collect();
        if !gone.is_empty() {
            self.rev = rev;
        }
        Some(gone)
    }

    /// Revokes every lease whose deadline is `<= now`, earliest deadline first (then lowest
    /// id), each in its own revision, as etcd's lessor does; keeps what they deleted.
    fn run_expiry(&mut self, now: Nanos) {
        while let Some(id) = self
            .leases
            .iter()
            .filter(|(_, l)| l.deadline <= now)
            .min_by_key(|(id, l)| (l.deadline, **id))
            .map(|(id, _)| *id)
        {
            let gone = self.revoke(id).unwrap_or_default();
            self.expired.extend(gone);
        }
    }

    /// Revokes the leases that have ended by `now`. Returns every key deleted by a lease's end
    /// since the previous call (including those the other methods' own expiry deleted), in the
    /// order deleted. No [`Effect`]s: the recorder knows deadlines already.
    pub fn expire(&mut self, now: Nanos) -> Vec<PbKeyValue> {
        self.run_expiry(now);
        std::mem::take(&mut self.expired)
    }

    /// The earliest lease deadline, ns: when [`Store::expire`] will next delete something.
    pub fn next_expiry(&self) -> Option<Nanos> {
        self.leases.values().map(|l| l.deadline).min()
    }

    /// The deadline (ns) of lease `id`, `None` when it does not exist at `now`.
    pub fn lease_deadline(&mut self, now: Nanos, id: i64) -> Option<Nanos> {
        self.run_expiry(now);
        self.leases.get(&id).map(|l| l.deadline)
    }

    fn expiry_effects(&self, keys: &BTreeSet<Vec<u8>>, until: Nanos) -> Vec<Effect> {
        let kvs = keys.iter().filter_map(|k| self.current(k));
        kvs.map(|kv| Effect::Expiry {
            key: kv.key.clone(),
            value: kv.value.clone(),
            until,
        })
        .collect()
    }

    /// The member starts again at `now` with the keys and leases it had (etcd persists both):
    /// every lease, even one whose deadline passed while the member was down, is renewed to
    /// its TTL plus [`ELECTION_TIMEOUT`] from `now` (etcd's lessor `Promote`). Returns an
    /// [`Effect::Expiry`] per key with a lease, in key order. Call [`Store::expire`] with the
    /// time of the crash first, so leases that ended while the member was up are gone.
    pub fn restart(&mut self, now: Nanos) -> Vec<Effect> {
        self.term += 1;
        for l in self.leases.values_mut() {
            l.deadline = now.saturating_add(l.ttl as Nanos * SEC + ELECTION_TIMEOUT);
        }
        let mut effects = BTreeMap::new();
        for l in self.leases.values() {
            for kv in l.keys.iter().filter_map(|k| self.current(k)) {
                let (key, value) = (kv.key.clone(), kv.value.clone());
                effects.insert(
                    key.clone(),
                    Effect::Expiry {
                        key,
                        value,
                        until: l.deadline,
                    },
                );
            }
        }
        effects.into_values().collect()
    }

    /// `Range`: the keys in `req`'s range at `req.revision` (0: now), sorted, filtered and
    /// limited as asked; `count` is the number in the range before the limit and the
    /// filters. The header carries the current revision. Errors: an empty key, a bad sort
    /// option, a future revision.
    pub fn range(
        &mut self,
        now: Nanos,
        req: &PbRangeRequest,
    ) -> Result<PbRangeResponse, EtcdError> {
        self.run_expiry(now);
        check_range(req)?;
        if req.revision > self.rev {
            return Err(EtcdError::FutureRev);
        }
        Ok(self.do_range(req, self.rev))
    }

    fn do_range(&self, r: &PbRangeRequest, cur: i64) -> PbRangeResponse {
        let at = if r.revision > 0 { r.revision } else { cur };
        let mut kvs = self.kvs_at(&r.key, &r.range_end, at);
        let count = kvs.len() as i64;
        if r.count_only {
            kvs.clear();
        }
        let within = |v: i64, lo: i64, hi: i64| (lo == 0 || v >= lo) && (hi == 0 || v <= hi);
        kvs.retain(|kv| {
            within(kv.mod_revision, r.min_mod_revision, r.max_mod_revision)
                && within(
                    kv.create_revision,
                    r.min_create_revision,
                    r.max_create_revision,
                )
        });
        // Keys come in ascending key order; any other target is sorted ascending by default.
        let order = match (r.sort_order, r.sort_target) {
            (ORDER_NONE, SORT_KEY) | (ORDER_ASCEND, SORT_KEY) => ORDER_NONE,
            (ORDER_NONE, _) => ORDER_ASCEND,
            (o, _) => o,
        };
        if order != ORDER_NONE {
            kvs.sort_by(|a, b| {
                let o = match r.sort_target {
                    SORT_VERSION => a.version.cmp(&b.version),
                    SORT_CREATE => a.create_revision.cmp(&b.create_revision),
                    SORT_MOD => a.mod_revision.cmp(&b.mod_revision),
                    SORT_VALUE => a.value.cmp(&b.value),
                    _ => a.key.cmp(&b.key),
                };
                if order == ORDER_DESCEND {
                    o.reverse()
                } else {
                    o
                }
            });
        }
        let more = r.limit > 0 && kvs.len() as i64 > r.limit;
        if more {
            kvs.truncate(r.limit as usize);
        }
        if r.keys_only {
            kvs.iter_mut().for_each(|kv| kv.value.clear());
        }
        PbRangeResponse {
            header: self.header(cur),
            kvs,
            more,
            count,
        }
    }

    /// `Put`: one revision. [`Effect::Wrote`] with the lease's deadline. Errors: an empty key,
    /// a lease that does not exist, `ignore_value`/`ignore_lease` misuse or on a missing key.
    pub fn put(
        &mut self,
        now: Nanos,
        req: &PbPutRequest,
    ) -> Result<(PbPutResponse, Vec<Effect>), EtcdError> {
        match self.single(now, PbTxnOpRequest::RequestPut(req.clone()))? {
            (PbTxnOpResponse::ResponsePut(r), effects) => Ok((r, effects)),
            _ => unreachable!("a put answers with a put"),
        }
    }

    /// `DeleteRange`: deletes the live keys in the range, in one revision (none when nothing
    /// was deleted); [`Effect::Deleted`] per key, in key order, `by_script: false`. Error: an
    /// empty key.
    pub fn delete_range(
        &mut self,
        now: Nanos,
        req: &PbDeleteRequest,
    ) -> Result<(PbDeleteResponse, Vec<Effect>), EtcdError> {
        match self.single(now, PbTxnOpRequest::RequestDeleteRange(req.clone()))? {
            (PbTxnOpResponse::ResponseDeleteRange(r), effects) => Ok((r, effects)),
            _ => unreachable!("a delete answers with a delete"),
        }
    }

    /// One op on its own: a txn without compares, with the same checks and effects.
    fn single(
        &mut self,
        now: Nanos,
        op: PbTxnOpRequest,
    ) -> Result<(PbTxnOpResponse, Vec<Effect>), EtcdError> {
        let success = vec![PbTxnRequestOp { request: Some(op) }];
        let t = PbTxnRequest {
            success,
            ..Default::default()
        };
        let (mut resp, effects) = self.txn(now, &t)?;
        let r = resp.responses.pop().and_then(|r| r.response);
        Ok((r.expect("one op, one response"), effects))
    }

    /// `Txn`: when every compare holds on the store as it is (a compare on missing keys sees
    /// 0s, and a `VALUE` compare on them fails), runs `success`, else `failure`, in order; one
    /// revision for all its writes (none without writes). Effects, in op order: a put that
    /// creates a key this txn's (or an enclosing one's) compares test for absence is
    /// [`Effect::Acquired`], any other [`Effect::Wrote`]; deletes are [`Effect::Deleted`]
    /// (`by_script` when a txn on the way has compares); a txn whose compares failed gives
    /// [`Effect::CompareFailed`] for each key it compares that its success branch deletes.
    /// Errors: the shape checks, [`EtcdError::DuplicateKey`], and a lease not found, a missing
    /// key for `ignore_*` or a future revision on the branches that run.
    pub fn txn(
        &mut self,
        now: Nanos,
        req: &PbTxnRequest,
    ) -> Result<(PbTxnResponse, Vec<Effect>), EtcdError> {
        self.run_expiry(now);
        check_txn(req)?;
        intervals(&req.success)?;
        intervals(&req.failure)?;
        let mut path = Vec::new();
        self.plan(req, &mut path);
        self.check_plan(req, &mut path.iter())?;
        let mut ctx = Ctx {
            rev: self.rev + 1,
            changed: false,
            effects: Vec::new(),
        };
        let mut resp = self.exec(req, &mut path.iter(), &mut ctx, &BTreeSet::new(), false);
        if ctx.changed {
            self.rev += 1;
        }
        resp.header = self.header(self.rev);
        Ok((resp, ctx.effects))
    }

    /// The outcome of every txn's compares on the way the txn will run, in pre-order: all
    /// evaluated before any write, as etcd's `compareToPath` does.
    fn plan(&self, t: &PbTxnRequest, path: &mut Vec<bool>) {
        let ok = t.compare.iter().all(|c| {
            let kvs = self.kvs_at(&c.key, &c.range_end, self.rev);
            if kvs.is_empty() {
                c.target != T_VALUE && compare_kv(c, &PbKeyValue::default())
            } else {
                kvs.iter().all(|kv| compare_kv(c, kv))
            }
        });
        path.push(ok);
        for op in branch(t, ok) {
            if let Some(PbTxnOpRequest::RequestTxn(n)) = &op.request {
                self.plan(n, path);
            }
        }
    }

    /// etcd's `checkRequests` on the ops that will run.
    fn check_plan(
        &self,
        t: &PbTxnRequest,
        path: &mut std::slice::Iter<bool>,
    ) -> Result<(), EtcdError> {
        let ok = *path.next().expect("planned");
        for op in branch(t, ok) {
            match &op.request {
                Some(PbTxnOpRequest::RequestRange(r)) if r.revision > self.rev => {
                    return Err(EtcdError::FutureRev)
                }
                Some(PbTxnOpRequest::RequestPut(p)) => {
                    if (p.ignore_value || p.ignore_lease) && self.current(&p.key).is_none() {
                        return Err(EtcdError::KeyNotFound);
                    }
                    if p.lease != 0 && !self.leases.contains_key(&p.lease) {
                        return Err(EtcdError::LeaseNotFound);
                    }
                }
                Some(PbTxnOpRequest::RequestTxn(n)) => self.check_plan(n, path)?,
                _ => {}
            }
        }
        Ok(())
    }

    fn exec(
        &mut self,
        t: &PbTxnRequest,
        path: &mut std::slice::Iter<bool>,
        ctx: &mut Ctx,
        absent: &BTreeSet<Vec<u8>>,
        scripted: bool,
    ) -> PbTxnResponse {
        let ok = *path.next().expect("planned");
        let mut absent = absent.clone();
        if ok {
            absent.extend(
                t.compare
                    .iter()
                    .filter(|c| tests_absence(c))
                    .map(|c| c.key.clone()),
            );
        } else {
            // Which compare failed does not matter: a put that creates the key (checked at
            // the put) was made under a test that the key is absent.
            absent.extend(
                t.compare
                    .iter()
                    .filter(|c| tests_presence(c))
                    .map(|c| c.key.clone()),
            );
            let tested: BTreeSet<&Vec<u8>> = t
                .compare
                .iter()
                .filter(|c| c.range_end.is_empty())
                .map(|c| &c.key)
                .collect();
            for k in tested.into_iter().filter(|k| deletes(&t.success, k)) {
                ctx.effects.push(Effect::CompareFailed {
                    key: k.clone(),
                    kind: ScriptKind::CompareAndDelete,
                });
            }
        }
        let scripted = scripted || !t.compare.is_empty();
        let mut responses = Vec::new();
        for op in branch(t, ok) {
            let response = match &op.request {
                Some(PbTxnOpRequest::RequestRange(r)) => {
                    PbTxnOpResponse::ResponseRange(self.do_range(r, ctx.seen()))
                }
                Some(PbTxnOpRequest::RequestPut(p)) => {
                    PbTxnOpResponse::ResponsePut(self.exec_put(p, ctx, &absent))
                }
                Some(PbTxnOpRequest::RequestDeleteRange(d)) => {
                    let mut prevs = Vec::new();
                    for kv in self.kvs_at(&d.key, &d.range_end, ctx.rev) {
                        if let Some(prev) = self.delete_key(&kv.key, ctx.rev) {
                            let (key, value) = (prev.key.clone(), prev.value.clone());
                            ctx.effects.push(Effect::Deleted {
                                key,
                                value,
                                by_script: scripted,
                            });
                            prevs.push(prev);
                        }
                    }
                    ctx.changed |= !prevs.is_empty();
                    let deleted = prevs.len() as i64;
                    let prev_kvs = if d.prev_kv { prevs } else { Vec::new() };
                    PbTxnOpResponse::ResponseDeleteRange(PbDeleteResponse {
                        header: self.header(ctx.seen()),
                        deleted,
                        prev_kvs,
                    })
                }
                Some(PbTxnOpRequest::RequestTxn(n)) => {
                    let mut r = self.exec(n, path, ctx, &absent, scripted);
                    // etcd leaves a nested txn's header revision 0.
                    r.header = self.header(0);
                    PbTxnOpResponse::ResponseTxn(r)
                }
                None => continue,
            };
            responses.push(PbResponseOp {
                response: Some(response),
            });
        }
        PbTxnResponse {
            header: None,
            succeeded: ok,
            responses,
        }
    }

    fn exec_put(
        &mut self,
        p: &PbPutRequest,
        ctx: &mut Ctx,
        absent: &BTreeSet<Vec<u8>>,
    ) -> PbPutResponse {
        let prev = self.current(&p.key).cloned();
        let value = match (&prev, p.ignore_value) {
            (Some(old), true) => old.value.clone(),
            _ => p.value.clone(),
        };
        let lease = match (&prev, p.ignore_lease) {
            (Some(old), true) => old.lease,
            _ => p.lease,
        };
        let kv = PbKeyValue {
            key: p.key.clone(),
            create_revision: prev.as_ref().map_or(ctx.rev, |o| o.create_revision),
            mod_revision: ctx.rev,
            version: prev.as_ref().map_or(1, |o| o.version + 1),
            value,
            lease,
        };
        if let Some(old) = prev.as_ref().filter(|o| o.lease != lease) {
            if let Some(l) = self.leases.get_mut(&old.lease) {
                l.keys.remove(&p.key);
            }
        }
        let expires = self.leases.get_mut(&lease).map(|l| {
            l.keys.insert(p.key.clone());
            l.deadline
        });
        self.write(&p.key, ctx.rev, Some(kv.clone()));
        self.log.push(PbEvent {
            r#type: EVENT_PUT,
            kv: Some(kv.clone()),
            prev_kv: prev.clone(),
        });
        ctx.changed = true;
        let (key, value) = (kv.key, kv.value);
        ctx.effects
            .push(if prev.is_none() && absent.contains(&key) {
                Effect::Acquired {
                    key,
                    value,
                    expires,
                }
            } else {
                Effect::Wrote {
                    key,
                    value,
                    expires,
                }
            });
        PbPutResponse {
            header: self.header(ctx.rev),
            prev_kv: if p.prev_kv { prev } else { None },
        }
    }

    /// `LeaseGrant`: lease `req.id` (0: the store picks [`LEASE_ID_BASE`] + n) of `req.ttl`
    /// s, raised to [`MIN_LEASE_TTL`], ending `ttl` s after `now`. Answers the id and the
    /// granted TTL. Errors: a TTL above [`MAX_LEASE_TTL`], an id in use.
    pub fn lease_grant(
        &mut self,
        now: Nanos,
        req: &PbLeaseGrantRequest,
    ) -> Result<PbLeaseGrantResponse, EtcdError> {
        self.run_expiry(now);
        if req.ttl > MAX_LEASE_TTL {
            return Err(EtcdError::LeaseTtlTooLarge);
        }
        let id = match req.id {
            0 => loop {
                self.lease_seq += 1;
                let id = LEASE_ID_BASE + self.lease_seq;
                if !self.leases.contains_key(&id) {
                    break id;
                }
            },
            id if self.leases.contains_key(&id) => return Err(EtcdError::LeaseExists),
            id => id,
        };
        let ttl = req.ttl.max(MIN_LEASE_TTL);
        let deadline = now.saturating_add(ttl as Nanos * SEC);
        self.leases.insert(
            id,
            Lease {
                ttl,
                deadline,
                keys: BTreeSet::new(),
            },
        );
        Ok(PbLeaseGrantResponse {
            header: self.header(self.rev),
            id,
            ttl,
            error: String::new(),
        })
    }

    /// `LeaseRevoke`: removes lease `id` and deletes its keys in one revision (none without
    /// keys); [`Effect::Deleted`] per key, key order, `by_script: false`. Error: no such lease.
    pub fn lease_revoke(
        &mut self,
        now: Nanos,
        id: i64,
    ) -> Result<(PbLeaseRevokeResponse, Vec<Effect>), EtcdError> {
        self.run_expiry(now);
        let gone = self.revoke(id).ok_or(EtcdError::LeaseNotFound)?;
        let effects = gone
            .into_iter()
            .map(|kv| Effect::Deleted {
                key: kv.key,
                value: kv.value,
                by_script: false,
            })
            .collect();
        Ok((
            PbLeaseRevokeResponse {
                header: self.header(self.rev),
            },
            effects,
        ))
    }

    /// One `LeaseKeepAlive` message: lease `id` now ends its granted TTL after `now`; answers
    /// that TTL (s), or TTL 0 when the lease does not exist (as etcd does). An
    /// [`Effect::Expiry`] per key of the lease, in key order.
    pub fn lease_keep_alive(
        &mut self,
        now: Nanos,
        id: i64,
    ) -> (PbLeaseKeepAliveResponse, Vec<Effect>) {
        self.run_expiry(now);
        let Some(l) = self.leases.get_mut(&id) else {
            return (
                PbLeaseKeepAliveResponse {
                    header: self.header(self.rev),
                    id,
                    ttl: 0,
                },
                Vec::new(),
            );
        };
        l.deadline = now.saturating_add(l.ttl as Nanos * SEC);
        let (ttl, keys, until) = (l.ttl, l.keys.clone(), l.deadline);
        let effects = self.expiry_effects(&keys, until);
        (
            PbLeaseKeepAliveResponse {
                header: self.header(self.rev),
                id,
                ttl,
            },
            effects,
        )
    }

    /// `LeaseTimeToLive`: whole seconds left (rounded down), the granted TTL, and the keys
    /// (key order) when `req.keys`; TTL -1 when the lease does not exist (as etcd does).
    /// Never fails (a `Result` for the service's uniformity).
    pub fn lease_time_to_live(
        &mut self,
        now: Nanos,
        req: &PbLeaseTimeToLiveRequest,
    ) -> Result<PbLeaseTimeToLiveResponse, EtcdError> {
        self.run_expiry(now);
        let header = self.header(self.rev);
        Ok(match self.leases.get(&req.id) {
            None => PbLeaseTimeToLiveResponse {
                header,
                id: req.id,
                ttl: -1,
                ..Default::default()
            },
            Some(l) => PbLeaseTimeToLiveResponse {
                header,
                id: req.id,
                ttl: ((l.deadline - now) / SEC) as i64,
                granted_ttl: l.ttl,
                keys: if req.keys {
                    l.keys.iter().cloned().collect()
                } else {
                    Vec::new()
                },
            },
        })
    }

    /// `LeaseLeases`: every lease alive at `now`, in id order.
    pub fn lease_leases(&mut self, now: Nanos) -> PbLeaseLeasesResponse {
        self.run_expiry(now);
        let leases = self.leases.keys().map(|&id| PbLeaseStatus { id }).collect();
        PbLeaseLeasesResponse {
            header: self.header(self.rev),
            leases,
        }
    }

    /// Every put and delete with revision `>= from_rev` on a key in the range of `key` and
    /// `range_end`, in revision order (a delete's `kv` holds the key and the delete's
    /// revision); with each one's `prev_kv` when `prev_kv`. Reads the store as it is: call a
    /// method taking `now` (e.g. [`Store::expire`]) first to apply the expiries due.
    pub fn events(
        &self,
        from_rev: i64,
        key: &[u8],
        range_end: &[u8],
        prev_kv: bool,
    ) -> Vec<PbEvent> {
        self.log
            .iter()
            .filter(|e| {
                e.kv.as_ref().is_some_and(|kv| {
                    kv.mod_revision >= from_rev && in_range(&kv.key, key, range_end)
                })
            })
            .map(|e| PbEvent {
                prev_kv: if prev_kv { e.prev_kv.clone() } else { None },
                ..e.clone()
            })
            .collect()
    }

    /// The holder of lock `name` as etcd's `concurrency.Mutex` sees it: the key under
    /// `name/` with the smallest create revision. Reads the store as it is (see
    /// [`Store::events`]).
    pub fn lock_owner(&self, name: &[u8]) -> Option<PbKeyValue> {
        let prefix = [name, b"/"].concat();
        let kvs = self.kvs_at(&prefix, &prefix_end(&prefix), self.rev);
        kvs.into_iter().min_by_key(|kv| kv.create_revision)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = SEC;
    type Ops = Vec<PbTxnRequestOp>;

    fn op(r: PbTxnOpRequest) -> PbTxnRequestOp {
        PbTxnRequestOp { request: Some(r) }
    }
    fn put_req(k: &str, v: &str, lease: i64) -> PbPutRequest {
        let (key, value) = (k.into(), v.into());
        PbPutRequest {
            key,
            value,
            lease,
            ..Default::default()
        }
    }
    fn put_op(k: &str, v: &str, lease: i64) -> PbTxnRequestOp {
        op(PbTxnOpRequest::RequestPut(put_req(k, v, lease)))
    }
    fn del_req(k: &str) -> PbDeleteRequest {
        PbDeleteRequest {
            key: k.into(),
            ..Default::default()
        }
    }
    fn del_op(k: &str) -> PbTxnRequestOp {
        op(PbTxnOpRequest::RequestDeleteRange(del_req(k)))
    }
    fn get_req(k: &str, end: &str) -> PbRangeRequest {
        let (key, range_end) = (k.into(), end.into());
        PbRangeRequest {
            key,
            range_end,
            ..Default::default()
        }
    }
    fn get_op(k: &str, end: &str) -> PbTxnRequestOp {
        op(PbTxnOpRequest::RequestRange(get_req(k, end)))
    }
    fn cmp(k: &str, target: i32, result: i32, u: PbTargetUnion) -> PbCompare {
        let (key, target_union) = (k.into(), Some(u));
        PbCompare {
            result,
            target,
            key,
            range_end: Vec::new(),
            target_union,
        }
    }
    fn put(s: &mut Store, now: Nanos, k: &str, v: &str, lease: i64) -> Vec<Effect> {
        s.put(now, &put_req(k, v, lease)).unwrap().1
    }
    fn get(s: &mut Store, now: Nanos, k: &str) -> Option<PbKeyValue> {
        s.range(now, &get_req(k, "")).unwrap().kvs.pop()
    }
    fn grant(s: &mut Store, now: Nanos, ttl: i64) -> i64 {
        s.lease_grant(now, &PbLeaseGrantRequest { ttl, id: 0 })
            .unwrap()
            .id
    }
    fn txn_req(compare: Vec<PbCompare>, success: Ops, failure: Ops) -> PbTxnRequest {
        PbTxnRequest {
            compare,
            success,
            failure,
        }
    }
    fn txn(s: &mut Store, c: Vec<PbCompare>, ok: Ops, no: Ops) -> (bool, Vec<Effect>) {
        let (r, e) = s.txn(0, &txn_req(c, ok, no)).unwrap();
        (r.succeeded, e)
    }
    fn deleted(k: &str, v: &str, by_script: bool) -> Effect {
        let (key, value) = (k.into(), v.into());
        Effect::Deleted {
            key,
            value,
            by_script,
        }
    }
    fn expiry(k: &str, v: &str, until: Nanos) -> Effect {
        let (key, value) = (k.into(), v.into());
        Effect::Expiry { key, value, until }
    }
    fn ttl_req(id: i64) -> PbLeaseTimeToLiveRequest {
        PbLeaseTimeToLiveRequest { id, keys: true }
    }

    #[test]
    fn revisions_versions_and_create_revisions() {
        let mut s = Store::new();
        assert_eq!(s.revision(), 1);
        put(&mut s, 0, "a", "1", 0);
        put(&mut s, 0, "a", "2", 0);
        let kv = get(&mut s, 0, "a").unwrap();
        assert_eq!((kv.create_revision, kv.mod_revision, kv.version), (2, 3, 2));
        let mut d = del_req("a");
        d.prev_kv = true;
        let (r, e) = s.delete_range(0, &d).unwrap();
        assert_eq!((r.deleted, r.prev_kvs[0].version, s.revision()), (1, 2, 4));
        assert_eq!(e, vec![deleted("a", "2", false)]);
        // Deleting nothing makes no revision; re-creating starts a new life.
        let (r, e) = s.delete_range(0, &del_req("a")).unwrap();
        assert_eq!((r.deleted, s.revision(), e.len()), (0, 4, 0));
        put(&mut s, 0, "a", "3", 0);
        let kv = get(&mut s, 0, "a").unwrap();
        assert_eq!((kv.create_revision, kv.mod_revision, kv.version), (5, 5, 1));
    }

    #[test]
    fn a_txn_is_one_revision_and_reads_its_own_writes() {
        let mut s = Store::new();
        let ops = vec![put_op("a", "1", 0), put_op("b", "2", 0), get_op("a", "c")];
        let (r, _) = s.txn(0, &txn_req(vec![], ops, vec![])).unwrap();
        assert_eq!((s.revision(), r.header.unwrap().revision), (2, 2));
        match &r.responses[2].response {
            Some(PbTxnOpResponse::ResponseRange(g)) => assert_eq!(g.count, 2),
            other => panic!("{other:?}"),
        }
        assert_eq!(get(&mut s, 0, "b").unwrap().mod_revision, 2);
        // Reads only: no revision.
        txn(&mut s, vec![], vec![get_op("a", "")], vec![]);
        assert_eq!(s.revision(), 2);
    }

    #[test]
    fn ranges_limits_counts_and_old_revisions() {
        let mut s = Store::new();
        for k in ["a", "b", "c", "d"] {
            put(&mut s, 0, k, k, 0);
        }
        put(&mut s, 0, "b", "B", 0);
        let keys = |r: PbRangeResponse| r.kvs.into_iter().map(|kv| kv.key).collect::<Vec<_>>();
        assert_eq!(keys(s.range(0, &get_req("b", "d")).unwrap()), [b"b", b"c"]);
        assert_eq!(keys(s.range(0, &get_req("c", "\0")).unwrap()), [b"c", b"d"]);
        let mut q = get_req("a", "\0");
        (q.limit, q.keys_only) = (1, true);
        let r = s.range(0, &q).unwrap();
        assert_eq!((r.count, r.more, r.kvs.len()), (4, true, 1));
        assert_eq!((&r.kvs[0].key[..], r.kvs[0].value.len()), (&b"a"[..], 0));
        (q.limit, q.count_only) = (0, true);
        let r = s.range(0, &q).unwrap();
        assert_eq!((r.count, r.kvs.len()), (4, 0));
        // b at revision 3 was "b"; revision 2 had no b; the future is an error.
        let mut at = get_req("b", "");
        at.revision = 3;
        assert_eq!(s.range(0, &at).unwrap().kvs[0].value, b"b");
        at.revision = 2;
        assert!(s.range(0, &at).unwrap().kvs.is_empty());
        at.revision = 7;
        let e = s.range(0, &at).unwrap_err();
        let text = "etcdserver: mvcc: required revision is a future revision";
        assert_eq!(
            (e.to_string().as_str(), e.grpc_code()),
            (text, "OutOfRange")
        );
        let e = s.range(0, &get_req("", "")).unwrap_err();
        assert_eq!(e, EtcdError::EmptyKey);
    }

    #[test]
    fn sort_by_create_revision_finds_the_first_and_last_waiters() {
        let mut s = Store::new();
        for k in ["m/c", "m/a", "m/b"] {
            put(&mut s, 0, k, "", 0);
        }
        put(&mut s, 0, "m/c", "again", 0); // keeps its create revision
        let mut q = get_req("m/", "m0");
        (q.limit, q.sort_order, q.sort_target) = (1, ORDER_ASCEND, SORT_CREATE);
        let r = s.range(0, &q).unwrap();
        assert_eq!((&r.kvs[0].key[..], r.count, r.more), (&b"m/c"[..], 3, true));
        q.sort_order = ORDER_DESCEND;
        assert_eq!(s.range(0, &q).unwrap().kvs[0].key, b"m/b");
        q.sort_order = ORDER_NONE; // ascending, for a target other than the key
        assert_eq!(s.range(0, &q).unwrap().kvs[0].key, b"m/c");
        assert_eq!(s.lock_owner(b"m").unwrap().key, b"m/c");
        q.sort_target = 7;
        assert_eq!(s.range(0, &q).unwrap_err(), EtcdError::InvalidSortOption);
    }

    #[test]
    fn compares_on_missing_keys_see_zeros_and_no_value() {
        let mut s = Store::new();
        let holds = |s: &mut Store, c| txn(s, vec![c], vec![], vec![]).0;
        let create = PbTargetUnion::CreateRevision;
        assert!(holds(&mut s, cmp("x", T_CREATE, EQUAL, create(0))));
        assert!(holds(
            &mut s,
            cmp("x", T_VERSION, EQUAL, PbTargetUnion::Version(0))
        ));
        assert!(holds(
            &mut s,
            cmp("x", T_MOD, LESS, PbTargetUnion::ModRevision(5))
        ));
        assert!(holds(
            &mut s,
            cmp("x", T_LEASE, EQUAL, PbTargetUnion::Lease(0))
        ));
        let value = |v: &str| PbTargetUnion::Value(v.into());
        assert!(!holds(&mut s, cmp("x", T_VALUE, EQUAL, value(""))));
        put(&mut s, 0, "x", "v", 0);
        assert!(holds(&mut s, cmp("x", T_VALUE, EQUAL, value("v"))));
        assert!(holds(&mut s, cmp("x", T_CREATE, GREATER, create(0))));
        assert!(holds(
            &mut s,
            cmp("x", T_MOD, NOT_EQUAL, PbTargetUnion::ModRevision(1))
        ));
        assert!(!holds(
            &mut s,
            cmp("x", T_VERSION, GREATER, PbTargetUnion::Version(1))
        ));
    }

    #[test]
    fn a_ranged_compare_must_hold_for_every_key() {
        let mut s = Store::new();
        put(&mut s, 0, "p/1", "", 0);
        put(&mut s, 0, "p/2", "", 0);
        let c = |rev| {
            let mut c = cmp("p/", T_MOD, LESS, PbTargetUnion::ModRevision(rev));
            c.range_end = "p0".into();
            vec![c]
        };
        assert!(txn(&mut s, c(4), vec![], vec![]).0);
        assert!(!txn(&mut s, c(3), vec![], vec![]).0);
    }

    #[test]
    fn a_txn_may_not_write_a_key_twice() {
        let mut s = Store::new();
        let dup = |s: &mut Store, ops| s.txn(0, &txn_req(vec![], ops, vec![])).unwrap_err();
        let e = dup(&mut s, vec![put_op("a", "1", 0), put_op("a", "2", 0)]);
        assert_eq!(
            e.to_string(),
            "etcdserver: duplicate key given in txn request"
        );
        let e = dup(&mut s, vec![del_op("a"), put_op("a", "2", 0)]);
        assert_eq!(e, EtcdError::DuplicateKey);
        let nested = txn_req(vec![], vec![put_op("a", "1", 0)], vec![put_op("a", "2", 0)]);
        let outer = vec![op(PbTxnOpRequest::RequestTxn(nested.clone()))];
        assert!(s.txn(0, &txn_req(vec![], outer, vec![])).is_ok());
        let both = vec![put_op("a", "0", 0), op(PbTxnOpRequest::RequestTxn(nested))];
        assert_eq!(dup(&mut s, both), EtcdError::DuplicateKey);
        assert_eq!(s.revision(), 2);
    }

    #[test]
    fn puts_need_a_live_lease_and_ignore_value_a_key() {
        let mut s = Store::new();
        let e = s.put(0, &put_req("a", "1", 42)).unwrap_err();
        let text = "etcdserver: requested lease not found";
        assert_eq!((e.to_string().as_str(), e.grpc_code()), (text, "NotFound"));
        let mut keep = put_req("a", "", 0);
        keep.ignore_value = true;
        assert_eq!(s.put(0, &keep).unwrap_err(), EtcdError::KeyNotFound);
        let id = grant(&mut s, 0, 10);
        put(&mut s, 0, "a", "1", id);
        keep.prev_kv = true;
        let (r, _) = s.put(0, &keep).unwrap();
        assert_eq!(r.prev_kv.unwrap().value, b"1");
        let kv = get(&mut s, 0, "a").unwrap();
        assert_eq!((&kv.value[..], kv.lease, kv.version), (&b"1"[..], 0, 2));
        keep.value = "x".into();
        assert_eq!(s.put(0, &keep).unwrap_err(), EtcdError::ValueProvided);
        assert_eq!(s.revision(), 3);
    }

    #[test]
    fn lease_grants_raise_the_ttl_and_pick_ids() {
        let mut s = Store::new();
        let r = s
            .lease_grant(5, &PbLeaseGrantRequest { ttl: 1, id: 0 })
            .unwrap();
        assert_eq!((r.id, r.ttl), (LEASE_ID_BASE + 1, MIN_LEASE_TTL));
        assert_eq!(s.lease_deadline(5, r.id), Some(5 + 2 * S));
        let again = PbLeaseGrantRequest { ttl: 5, id: r.id };
        assert_eq!(
            s.lease_grant(5, &again).unwrap_err(),
            EtcdError::LeaseExists
        );
        let huge = PbLeaseGrantRequest {
            ttl: MAX_LEASE_TTL + 1,
            id: 0,
        };
        assert_eq!(
            s.lease_grant(5, &huge).unwrap_err(),
            EtcdError::LeaseTtlTooLarge
        );
        assert_eq!(grant(&mut s, 5, 60), LEASE_ID_BASE + 2);
        assert_eq!(s.lease_leases(5).leases.len(), 2);
        assert_eq!(s.revision(), 1);
    }

    #[test]
    fn a_lease_ends_at_its_deadline_with_its_keys_in_one_revision() {
        let mut s = Store::new();
        let id = grant(&mut s, 0, 5);
        put(&mut s, 0, "a", "1", id);
        put(&mut s, 0, "b", "2", id);
        assert_eq!((s.revision(), s.next_expiry()), (3, Some(5 * S)));
        assert!(get(&mut s, 5 * S - 1, "a").is_some());
        // The read at the deadline expires the lease first; `expire` reports what went.
        assert!(get(&mut s, 5 * S, "a").is_none());
        assert_eq!(s.revision(), 4);
        let gone: Vec<_> = s.expire(5 * S).into_iter().map(|kv| kv.key).collect();
        assert_eq!(gone, [b"a", b"b"]);
        assert!(s.expire(6 * S).is_empty());
        assert_eq!(s.next_expiry(), None);
        let (ka, e) = s.lease_keep_alive(6 * S, id);
        assert_eq!((ka.ttl, e.len()), (0, 0));
        assert_eq!(s.lease_time_to_live(6 * S, &ttl_req(id)).unwrap().ttl, -1);
    }

    #[test]
    fn keep_alive_moves_the_deadline() {
        let mut s = Store::new();
        let id = grant(&mut s, 0, 10);
        put(&mut s, 0, "k", "v", id);
        let (r, e) = s.lease_keep_alive(7 * S, id);
        assert_eq!((r.ttl, e), (10, vec![expiry("k", "v", 17 * S)]));
        assert!(get(&mut s, 12 * S, "k").is_some());
        let t = s.lease_time_to_live(12 * S + 1, &ttl_req(id)).unwrap();
        assert_eq!((t.ttl, t.granted_ttl, t.keys), (4, 10, vec![b"k".to_vec()]));
        assert!(get(&mut s, 17 * S, "k").is_none());
    }

    #[test]
    fn a_restart_keeps_keys_and_renews_every_lease() {
        let mut s = Store::new();
        let id = grant(&mut s, 0, 10);
        put(&mut s, 0, "k", "v", id);
        // Down from 3 s to 20 s: the lease's deadline (10 s) passed meanwhile, yet it lives.
        let e = s.restart(20 * S);
        let until = 20 * S + 10 * S + ELECTION_TIMEOUT;
        assert_eq!(e, vec![expiry("k", "v", until)]);
        assert_eq!((s.raft_term(), s.next_expiry()), (3, Some(until)));
        assert_eq!(get(&mut s, 25 * S, "k").unwrap().lease, id);
        assert!(get(&mut s, until, "k").is_none());
    }

    #[test]
    fn the_create_revision_lock_recipe_is_an_acquire() {
        let mut s = Store::new();
        let id = grant(&mut s, 0, 10);
        let absent = || {
            vec![cmp(
                "lock",
                T_CREATE,
                EQUAL,
                PbTargetUnion::CreateRevision(0),
            )]
        };
        let (ok, e) = txn(&mut s, absent(), vec![put_op("lock", "me", id)], vec![]);
        let (key, value, expires) = ("lock".into(), "me".into(), Some(10 * S));
        assert_eq!(
            (ok, e),
            (
                true,
                vec![Effect::Acquired {
                    key,
                    value,
                    expires
                }]
            )
        );
        let (ok, e) = txn(&mut s, absent(), vec![put_op("lock", "you", id)], vec![]);
        assert_eq!((ok, e.len()), (false, 0));
        // A plain put is a write.
        let e = put(&mut s, 0, "lock", "me", id);
        let (key, value) = ("lock".into(), "me".into());
        assert_eq!(
            e,
            vec![Effect::Wrote {
                key,
                value,
                expires
            }]
        );
        // A version == 0 compare, in an enclosing txn, is an absence test too.
        let inner = txn_req(vec![], vec![put_op("other", "x", 0)], vec![]);
        let version0 = cmp("other", T_VERSION, EQUAL, PbTargetUnion::Version(0));
        let ops = vec![op(PbTxnOpRequest::RequestTxn(inner))];
        let (_, e) = txn(&mut s, vec![version0], ops, vec![]);
        assert!(matches!(&e[..], [Effect::Acquired { expires: None, .. }]));
    }

    #[test]
    fn every_absence_test_is_a_lock_recipe() {
        let acquired = |e: &[Effect]| matches!(e, [Effect::Acquired { .. }]);
        let absence = [
            cmp("l1", T_MOD, EQUAL, PbTargetUnion::ModRevision(0)),
            cmp("l2", T_VERSION, LESS, PbTargetUnion::Version(1)),
            cmp("l3", T_CREATE, LESS, PbTargetUnion::CreateRevision(1)),
        ];
        for c in absence {
            let mut s = Store::new();
            let k = String::from_utf8(c.key.clone()).unwrap();
            let (ok, e) = txn(&mut s, vec![c.clone()], vec![put_op(&k, "me", 0)], vec![]);
            assert!(ok && acquired(&e), "{k}: {e:?}");
            let (ok, e) = txn(&mut s, vec![c], vec![put_op(&k, "you", 0)], vec![]);
            assert!(!ok && e.is_empty(), "{k}: {e:?}");
        }
        // "If it exists read it, else create it": the put in the failure branch of a failed
        // presence test is an acquire; once the key exists, the same txn reads it.
        for c in [
            cmp("l4", T_VERSION, GREATER, PbTargetUnion::Version(0)),
            cmp("l5", T_CREATE, NOT_EQUAL, PbTargetUnion::CreateRevision(0)),
        ] {
            let mut s = Store::new();
            let k = String::from_utf8(c.key.clone()).unwrap();
            let ops = || (vec![get_op(&k, "")], vec![put_op(&k, "me", 0)]);
            let (then, els) = ops();
            let (ok, e) = txn(&mut s, vec![c.clone()], then, els);
            assert!(!ok && acquired(&e), "{k}: {e:?}");
            let (then, els) = ops();
            let (ok, e) = txn(&mut s, vec![c], then, els);
            assert!(ok && e.is_empty(), "{k}: {e:?}");
        }
        // Not absence tests: a value compare, and a version compare that a live key passes.
        let mut s = Store::new();
        put(&mut s, 0, "l6", "x", 0);
        let c = cmp("l6", T_VERSION, GREATER, PbTargetUnion::Version(5));
        let (ok, e) = txn(&mut s, vec![c], vec![], vec![put_op("l6", "me", 0)]);
        assert!(!ok && matches!(e[..], [Effect::Wrote { .. }]), "{e:?}");
    }

    #[test]
    fn compare_and_delete_deletes_or_reports_the_failed_compare() {
        let mut s = Store::new();
        put(&mut s, 0, "lock", "me", 0);
        let is = |v: &str| vec![cmp("lock", T_VALUE, EQUAL, PbTargetUnion::Value(v.into()))];
        let (ok, e) = txn(&mut s, is("you"), vec![del_op("lock")], vec![]);
        let kind = ScriptKind::CompareAndDelete;
        let failed = Effect::CompareFailed {
            key: "lock".into(),
            kind,
        };
        assert_eq!((ok, e, s.revision()), (false, vec![failed], 2));
        let (ok, e) = txn(&mut s, is("me"), vec![del_op("lock")], vec![]);
        assert_eq!(
            (ok, e, s.revision()),
            (true, vec![deleted("lock", "me", true)], 3)
        );
        // Revoking a lease deletes its keys in one revision, not as a script.
        let id = grant(&mut s, 0, 10);
        put(&mut s, 0, "b", "2", id);
        put(&mut s, 0, "a", "1", id);
        let (r, e) = s.lease_revoke(0, id).unwrap();
        assert_eq!((r.header.unwrap().revision, s.revision()), (6, 6));
        assert_eq!(e, vec![deleted("a", "1", false), deleted("b", "2", false)]);
        assert_eq!(s.lease_revoke(0, id).unwrap_err(), EtcdError::LeaseNotFound);
    }

    #[test]
    fn events_since_a_revision_in_order() {
        let mut s = Store::new();
        put(&mut s, 0, "a/1", "x", 0); // 2
        put(&mut s, 0, "b", "y", 0); // 3
        put(&mut s, 0, "a/1", "z", 0); // 4
        s.delete_range(0, &del_req("a/1")).unwrap(); // 5
        let ev = s.events(3, b"a/", b"a0", true);
        let kv = |e: &PbEvent| e.kv.clone().unwrap();
        let kinds: Vec<_> = ev.iter().map(|e| (e.r#type, kv(e).mod_revision)).collect();
        assert_eq!(kinds, [(EVENT_PUT, 4), (EVENT_DELETE, 5)]);
        assert_eq!((&kv(&ev[1]).key[..], kv(&ev[1]).version), (&b"a/1"[..], 0));
        assert_eq!(ev[1].prev_kv.as_ref().unwrap().value, b"z");
        assert!(s
            .events(0, b"b", b"", false)
            .iter()
            .all(|e| e.prev_kv.is_none()));
        assert_eq!(s.events(0, b"\0", b"\0", false).len(), 4);
    }

    #[test]
    fn lock_keys_are_the_name_and_the_lease_in_hex() {
        assert_eq!(
            lock_key(b"job", 0x694d_8cc2_51f4_0001),
            b"job/694d8cc251f40001"
        );
        assert_eq!(lock_key(b"job", 255), b"job/ff");
        assert_eq!(lock_key(b"job", -1), b"job/-1");
        assert_eq!(prefix_end(b"a/"), b"a0");
        assert_eq!(prefix_end(b"\xff"), b"\0");
        let mut s = Store::new();
        assert!(s.lock_owner(b"job").is_none());
        put(&mut s, 0, "job/b", "", 0);
        put(&mut s, 0, "job/a", "", 0);
        put(&mut s, 0, "jobs", "", 0);
        assert_eq!(s.lock_owner(b"job").unwrap().key, b"job/b");
    }
}
