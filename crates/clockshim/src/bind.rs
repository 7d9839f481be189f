//! `connect(2)` from a node's own address: with `LOCKSIM_BIND_ADDR=127.0.0.N` in its
//! environment, a process's TCP sockets to loopback are bound to `127.0.0.N` (any port) just
//! before they connect, so that the nftables rules of a real run, which match on the nodes'
//! addresses, cut a lock library's connections as they cut locksim's own clients'. A socket
//! the program bound itself, a UDP socket, a connection off loopback or over IPv6 is left alone.
//! Without the variable, `connect` is the kernel's, unchanged.

use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};

/// The environment variable naming the source address.
pub const ENV: &str = "LOCKSIM_BIND_ADDR";

/// 0: not read yet; 1: no address; 2: [`ADDR`] holds it.
static STATE: AtomicU8 = AtomicU8::new(0);
/// The address, in network byte order (as `in_addr.s_addr`).
static ADDR: AtomicU32 = AtomicU32::new(0);

/// A dotted quad, in network byte order; `None` for anything else.
pub fn parse_ipv4(text: &[u8]) -> Option<u32> {
    let mut octets = [0u8; 4];
    let mut parts = text.split(|&b| b == b'.');
    for o in octets.iter_mut() {
        let p = parts.next()?;
        if p.is_empty() || p.len() > 3 || !p.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let v = p.iter().fold(0u32, |v, d| v * 10 + (d - b'0') as u32);
        *o = u8::try_from(v).ok()?;
    }
    if parts.next().is_some() {
        return None;
    }
    Some(u32::from_ne_bytes(octets))
}

fn source() -> Option<u32> {
    match STATE.load(Ordering::Acquire) {
        1 => return None,
        2 => return Some(ADDR.load(Ordering::Acquire)),
        _ => {}
    }
    // SAFETY: getenv with a NUL-terminated name; the value is read before anything can change
    // the environment of a process that is connecting (no allocation here).
    let parsed = unsafe {
        let v = libc::getenv(c"LOCKSIM_BIND_ADDR".as_ptr());
        if v.is_null() {
            None
        } else {
            parse_ipv4(std::ffi::CStr::from_ptr(v).to_bytes())
        }
    };
    match parsed {
        Some(a) => {
            ADDR.store(a, Ordering::Release);
            STATE.store(2, Ordering::Release);
        }
        None => STATE.store(1, Ordering::Release),
    }
    parsed
}

/// Binds `fd` to `src` when it is an unbound TCP socket headed for `127.0.0.0/8`.
///
/// # Safety
/// `addr` must be valid for `len` bytes, as for `connect(2)`.
unsafe fn bind_if_loopback(
    fd: libc::c_int,
    addr: *const libc::sockaddr,
    len: libc::socklen_t,
    src: u32,
) {
    if addr.is_null()
        || (len as usize) < std::mem::size_of::<libc::sockaddr_in>()
        || (*addr).sa_family != libc::AF_INET as libc::sa_family_t
    {
        return;
    }
    let dst = &*(addr as *const libc::sockaddr_in);
    if dst.sin_addr.s_addr.to_ne_bytes()[0] != 127 {
        return;
    }
    let mut ty: libc::c_int = 0;
    let mut ty_len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    if libc::getsockopt(
        fd,
        libc::SOL_SOCKET,
        libc::SO_TYPE,
        &mut ty as *mut libc::c_int as *mut libc::c_void,
        &mut ty_len,
    ) != 0
        || ty != libc::SOCK_STREAM
    {
        return;
    }
    let mut cur: libc::sockaddr_in = std::mem::zeroed();
    let mut cur_len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    if libc::getsockname(
        fd,
        &mut cur as *mut libc::sockaddr_in as *mut libc::sockaddr,
        &mut cur_len,
    ) != 0
        || cur.sin_port != 0
        || cur.sin_addr.s_addr != 0
    {
        return;
    }
    let mut local: libc::sockaddr_in = std::mem::zeroed();
    local.sin_family = libc::AF_INET as libc::sa_family_t;
    local.sin_addr.s_addr = src;
    // A failure (the address is not on this host) leaves the kernel's choice: the harness,
    // which reads every client socket's address, then stops the run.
    libc::bind(
        fd,
        &local as *const libc::sockaddr_in as *const libc::sockaddr,
        std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
    );
}

/// `connect(2)`, from [`ENV`]'s address for TCP to loopback.
///
/// # Safety
/// As libc's: `addr` valid for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn connect(
    fd: libc::c_int,
    addr: *const libc::sockaddr,
    len: libc::socklen_t,
) -> libc::c_int {
    if let Some(src) = source() {
        bind_if_loopback(fd, addr, len, src);
    }
    libc::syscall(
        libc::SYS_connect,
        fd as libc::c_long,
        addr,
        len as libc::c_long,
    ) as libc::c_int
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_quads_parse_and_nothing_else_does() {
        assert_eq!(
            parse_ipv4(b"127.0.0.5"),
            Some(u32::from_ne_bytes([127, 0, 0, 5]))
        );
        for bad in [
            &b"127.0.0"[..],
            b"127.0.0.256",
            b"127.0.0.1.2",
            b"a.b.c.d",
            b"",
            b"127..0.1",
        ] {
            assert_eq!(parse_ipv4(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn a_tcp_connection_to_loopback_leaves_from_the_given_address() {
        // This test binary's own `connect` is the one above (it is exported from the
        // executable), so std's TcpStream goes through it as an LD_PRELOADed program would.
        std::env::set_var(ENV, "127.0.0.9");
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let s = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        assert_eq!(s.local_addr().unwrap().ip().to_string(), "127.0.0.9");
        let (_, peer) = l.accept().unwrap();
        assert_eq!(peer.ip().to_string(), "127.0.0.9");
    }
}
