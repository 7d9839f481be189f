//! The one registration point of the real lock services: which module's lock client a
//! client process runs ([`lock_client`]) and which module's servers the harness starts
//! ([`server_side`]) for each [`Service`]. A new backend is a module that implements [`Lock`]
//! and [`ServerSide`] (see [`crate::backend`]) and one arm in each function here
//! (docs/contributing.md has the checklist).

use std::net::{Ipv4Addr, SocketAddrV4};

use locksim_core::clock::Clock;
use locksim_core::NodeId;

use crate::backend::{Lock, ServerSide};
use crate::support::{Backend, Service};
use crate::{RealError, RealOptions};

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

/// The server half of `backend`'s service: what the harness starts, waits for, asks and reads
/// ([`ServerSide`]). PostgreSQL's programs are found here, with `opts.postgres`.
///
/// # Errors
/// [`RealError::Setup`] when PostgreSQL is not found (saying how to install it);
/// [`RealError::Unsupported`] for `raft-lease` in a build without the `etcd` feature.
pub fn server_side(backend: Backend, opts: &RealOptions) -> Result<Box<dyn ServerSide>, RealError> {
    let pg = || crate::postgres::PgServers::new(opts).map_err(RealError::Setup);
    Ok(match backend.service {
        Service::Central | Service::CentralFencing | Service::Redlock => {
            Box::new(crate::redis::RedisServers)
        }
        Service::RedisFailover => Box::new(crate::sentinel::SentinelServers),
        Service::RaftLease => etcd_servers()?,
        Service::DbLease => Box::new(pg()?),
        Service::PgAdvisory => Box::new(crate::advisory::AdvisoryServers(pg()?)),
        Service::Zookeeper => Box::new(crate::zookeeper::ZkServers),
    })
}

/// `raft-lease`'s servers: etcd members, with the crate's `etcd` feature.
#[cfg(feature = "etcd")]
fn etcd_servers() -> Result<Box<dyn ServerSide>, RealError> {
    Ok(Box::<crate::etcd::EtcdServers>::default())
}

/// Without the `etcd` feature `raft-lease` is refused before anything starts
/// ([`crate::support::backend`]); a spec that names it anyway is refused here.
#[cfg(not(feature = "etcd"))]
fn etcd_servers() -> Result<Box<dyn ServerSide>, RealError> {
    Err(RealError::Unsupported(
        "this locksim was built without --features etcd".into(),
    ))
}
