//! A simulated etcd member (feature `etcd`): the etcd v3 gRPC API that lock clients use — KV
//! (`Range`, `Put`, `DeleteRange`, `Txn`), Lease (`LeaseGrant`, `LeaseRevoke`,
//! `LeaseKeepAlive`, `LeaseTimeToLive`), Watch, and the Lock service (`v3lockpb.Lock`) — served
//! over HTTP/2 on madsim's TCP, so that the real `etcd-client` crate runs against it unchanged.
//!
//! - [`mvcc`]: the key space (revisions, leases, transactions), synchronous and deterministic.
//! - `grpc`: HTTP/2 on madsim's streams, both ends ([`Channel`] is the client's).
//! - `service`: the gRPC services over one member's key space, recording what each request
//!   did for the run's checkers.
//! - `lock`: the Lock service, as etcd's server runs it (its `concurrency.Mutex`).
//!
//! One member, not a Raft cluster: a crash loses no key (etcd writes its WAL before it
//! answers) and a restarted member renews every lease to its full TTL, as a new etcd leader
//! does. What is not modelled: auth, compaction, several members, the 500 ms sweep with which
//! etcd revokes expired leases (here a lease is gone at its deadline exactly).

pub mod grpc;
mod lock;
pub mod mvcc;
mod service;

pub use grpc::Channel;

/// The port etcd's clients connect to (etcd's `--listen-client-urls` default).
pub const PORT: u16 = 2379;

pub(crate) use service::{start, State};
