//! The one registration point of the real lock services: which module's lock client a
//! client process runs for each [`Service`]. A new backend is a module that implements
//! [`Lock`] (see [`crate::backend`]) and one arm here (and its server start in
//! [`crate::harness`]; docs/contributing.md has the checklist).

use std::net::{Ipv4Addr, SocketAddrV4};

use locksim_core::clock::Clock;
use locksim_core::NodeId;

use crate::backend::Lock;
use crate::support::{Backend, Service};

/// The lock client of `backend` for client `node`, whose connections to `servers` leave from
/// `me`; `seed` (the scenario's) seeds the library's own random choices (ZooKeeper's first
/// server); `clocks`: the client's clocks and the run's start, host-monotonic ns (ZooKeeper's
/// pinger reads them).
///
/// # Errors
/// When the client cannot start (etcd's runtime, the PostgreSQL client's).
pub fn lock_client(
    backend: Backend,
    node: NodeId,
    seed: u64,
    me: Ipv4Addr,
    servers: &[SocketAddrV4],
    clocks: (&Clock, u64),
) -> Result<Box<dyn Lock>, String> {
    Ok(match backend.service {
        Service::Central | Service::CentralFencing | Service::Redlock => {
            Box::new(crate::redis::RedisLock::new(backend, node, me, servers))
        }
        Service::RedisFailover => {
            Box::new(crate::sentinel::SentinelLock::new(backend, me, servers))
        }
        Service::RaftLease => etcd_client(backend, node, me, servers)?,
        Service::DbLease => Box::new(crate::postgres::PgLock::new(backend, node, me, servers[0])?),
        Service::PgAdvisory => Box::new(crate::advisory::AdvisoryLock::new(
            backend, node, me, servers[1],
        )?),
        Service::Zookeeper => Box::new(crate::zookeeper::ZkLock::new(
            backend,
            node,
            seed,
            me,
            servers,
            clocks.0.clone(),
            clocks.1,
        )),
    })
}

/// `raft-lease`'s client: etcd's, with the crate's `etcd` feature.
#[cfg(feature = "etcd")]
fn etcd_client(
    backend: Backend,
    _node: NodeId,
    me: Ipv4Addr,
    servers: &[SocketAddrV4],
) -> Result<Box<dyn Lock>, String> {
    Ok(Box::new(crate::etcd::EtcdLock::new(backend, me, servers)?))
}

/// Without the `etcd` feature `raft-lease` is refused before any client starts
/// ([`crate::support::backend`]); a spec that names it anyway gets the Redis client, as it
/// always did.
#[cfg(not(feature = "etcd"))]
fn etcd_client(
    backend: Backend,
    node: NodeId,
    me: Ipv4Addr,
    servers: &[SocketAddrV4],
) -> Result<Box<dyn Lock>, String> {
    Ok(Box::new(crate::redis::RedisLock::new(
        backend, node, me, servers,
    )))
}
