//! Loopback addresses: every node of a real run gets its own `127.0.0.N`, so nftables rules can
//! tell links apart by source and destination address. Clients bind their sockets to their own
//! address before connecting.

use std::net::{Ipv4Addr, SocketAddrV4, TcpListener};

use locksim_core::NodeId;

/// The first host number: node 0 is `127.0.0.10` (`127.0.0.1` stays the host's own).
const BASE: u32 = 10;

/// The most nodes a real run may have (addresses up to `127.0.0.250`).
pub const MAX_NODES: u32 = 240;

/// The loopback address of node `id`.
///
/// # Panics
/// When `id >= MAX_NODES` ([`crate::support::check_plan`] refuses such clusters).
pub fn ip(id: NodeId) -> Ipv4Addr {
    assert!(id < MAX_NODES, "node {id} has no loopback address");
    Ipv4Addr::new(127, 0, 0, (BASE + id) as u8)
}

/// A port free on `ip` right now (the kernel picks it; a tiny race with other programs remains,
/// and a server that then fails to bind makes the run fail with its log).
///
/// # Errors
/// When nothing can bind on `ip`.
pub fn free_port(ip: Ipv4Addr) -> std::io::Result<SocketAddrV4> {
    let l = TcpListener::bind(SocketAddrV4::new(ip, 0))?;
    match l.local_addr()? {
        std::net::SocketAddr::V4(a) => Ok(a),
        std::net::SocketAddr::V6(_) => unreachable!("bound an IPv4 address"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_get_distinct_loopback_addresses_that_bind() {
        assert_eq!(ip(0), Ipv4Addr::new(127, 0, 0, 10));
        assert_eq!(ip(MAX_NODES - 1), Ipv4Addr::new(127, 0, 0, 249));
        let a = free_port(ip(3)).expect("loopback binds");
        assert_eq!(*a.ip(), ip(3));
        assert_ne!(a.port(), 0);
    }
}
