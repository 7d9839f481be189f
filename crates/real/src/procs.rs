//! The processes a real run starts, each in a process group of its own (so a signal reaches
//! it and every child it has), each dying with the harness (`PR_SET_PDEATHSIG`, so even a
//! `SIGKILL` of the harness leaves no server behind). [`Procs`] kills and reaps every one of
//! them when dropped: at the end, on an error, on a panic and after Ctrl-C.

use std::net::SocketAddrV4;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

/// One started process.
pub struct Proc {
    /// What it is, for messages (`n1`, `c2`, `res`).
    pub name: String,
    child: Child,
}

impl Proc {
    /// Its process id (and process group id).
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Sends `sig` to its whole process group and to every descendant that left it: a
    /// PostgreSQL server's children (its backends, checkpointer, WAL writer) each call
    /// `setsid()`, so a pause or a crash of the server must reach them one by one, or the
    /// "paused" database would go on serving its open connections. The descendants are read
    /// before the signal (a killed parent's children are handed to init at once) and after it
    /// (a child forked meanwhile; a stopped parent forks no more).
    pub fn signal(&self, sig: i32) {
        let mut kids = descendants(self.pid() as u32);
        // SAFETY: kill(2) with a negative pid signals that process group; no memory involved.
        unsafe {
            libc::kill(-self.pid(), sig);
        }
        for k in descendants(self.pid() as u32) {
            if !kids.contains(&k) {
                kids.push(k);
            }
        }
        for pid in kids {
            // SAFETY: kill(2) of a process id; a pid that has exited meanwhile is harmless.
            unsafe {
                libc::kill(pid as i32, sig);
            }
        }
    }

    /// `Some(status)` when it has exited.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Kills the group (and every descendant) and reaps the process.
    pub fn kill(&mut self) {
        self.signal(libc::SIGKILL);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The processes descended from `root` now (children, their children, …), from `/proc`.
pub fn descendants(root: u32) -> Vec<u32> {
    let mut parent_of: Vec<(u32, u32)> = Vec::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                // pid (comm) state ppid …: comm may hold spaces, so split after the last ')'.
                let ppid = stat
                    .rsplit_once(')')
                    .and_then(|r| r.1.split_whitespace().nth(1))
                    .and_then(|p| p.parse::<u32>().ok());
                if let Some(ppid) = ppid {
                    parent_of.push((pid, ppid));
                }
            }
        }
    }
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for &(child, _) in parent_of.iter().filter(|(_, pp)| *pp == p) {
            if !out.contains(&child) {
                out.push(child);
                frontier.push(child);
            }
        }
    }
    out
}

/// The TCP connections (local, remote) that processes `pids` hold open, from their file
/// descriptors and the kernel's `/proc/net/tcp` (IPv4; listening sockets left out).
pub fn tcp_connections(pids: &[u32]) -> Vec<(SocketAddrV4, SocketAddrV4)> {
    let mut inodes = std::collections::BTreeSet::new();
    for pid in pids {
        let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for e in rd.flatten() {
            if let Ok(link) = std::fs::read_link(e.path()) {
                let l = link.to_string_lossy();
                if let Some(i) = l
                    .strip_prefix("socket:[")
                    .and_then(|r| r.strip_suffix(']'))
                    .and_then(|i| i.parse::<u64>().ok())
                {
                    inodes.insert(i);
                }
            }
        }
    }
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    // `sl local rem st tx:rx tr:when retrnsmt uid timeout inode …`; addresses are the raw
    // 32-bit value in hex (so in this host's byte order) and the port in hex.
    let addr = |t: &str| -> Option<SocketAddrV4> {
        let (a, p) = t.split_once(':')?;
        let a = u32::from_str_radix(a, 16).ok()?.to_ne_bytes();
        Some(SocketAddrV4::new(
            a.into(),
            u16::from_str_radix(p, 16).ok()?,
        ))
    };
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let inode = f.get(9)?.parse::<u64>().ok()?;
            let (local, remote) = (addr(f.get(1)?)?, addr(f.get(2)?)?);
            (inodes.contains(&inode) && remote.port() != 0).then_some((local, remote))
        })
        .collect()
}

/// Starts `cmd` as `name` in its own process group, to die with this process.
///
/// # Errors
/// When it cannot be started.
pub fn spawn(name: &str, mut cmd: Command) -> Result<Proc, String> {
    cmd.process_group(0);
    // SAFETY: prctl is async-signal-safe; called between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {name} ({:?}): {e}", cmd.get_program()))?;
    Ok(Proc {
        name: name.to_string(),
        child,
    })
}

/// Every process of a run, by node; killed and reaped when dropped.
#[derive(Default)]
pub struct Procs {
    /// The running process of each node that has one.
    pub by_node: std::collections::BTreeMap<u32, Proc>,
}

impl Procs {
    /// Kills every process now.
    pub fn kill_all(&mut self) {
        for p in self.by_node.values_mut() {
            p.kill();
        }
        self.by_node.clear();
    }
}

impl Drop for Procs {
    fn drop(&mut self) {
        self.kill_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_processs_tcp_connections_are_read_with_their_addresses() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let to = match l.local_addr().unwrap() {
            std::net::SocketAddr::V4(a) => a,
            _ => unreachable!(),
        };
        let c = std::net::TcpStream::connect(to).unwrap();
        let from = match c.local_addr().unwrap() {
            std::net::SocketAddr::V4(a) => a,
            _ => unreachable!(),
        };
        let found = tcp_connections(&[std::process::id()]);
        assert!(
            found.contains(&(from, to)),
            "{found:?} lacks {from} -> {to}"
        );
        // The listener itself is not a connection.
        assert!(!found.iter().any(|(l, r)| *l == to && r.port() == 0));
    }
}
