//! The processes a real run starts, each in a process group of its own (so a signal reaches
//! it and every child it has), each dying with the harness (`PR_SET_PDEATHSIG`, so even a
//! `SIGKILL` of the harness leaves no server behind). [`Procs`] kills and reaps every one of
//! them when dropped: at the end, on an error, on a panic and after Ctrl-C.

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

    /// Sends `sig` to its whole process group.
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) with a negative pid signals that process group; no memory involved.
        unsafe {
            libc::kill(-self.pid(), sig);
        }
    }

    /// `Some(status)` when it has exited.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Kills the group and reaps the process.
    pub fn kill(&mut self) {
        self.signal(libc::SIGKILL);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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
