//! The harness's side of the clock shim (`crates/clockshim`): one 4 KiB shared-memory file per
//! faulted `redis-server` (or client adapter), holding a sequence lock and `(offset, ppm, anchor)`. The server
//! process maps it read-only through `LD_PRELOAD`; the harness rewrites it at each
//! `clock_step` / `clock_drift` fault. The layout is the shim's `Shared` (four 64-bit words).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// The environment variable that names a process's clock file (the shim's `ENV`).
pub const ENV: &str = "LOCKSIM_CLOCK_FILE";

/// Bytes of the file (one page).
const LEN: usize = 4096;

/// The shim library next to `exe` (`liblocksim_clockshim.so`, as `cargo build` puts it), or
/// the path in `LOCKSIM_CLOCKSHIM`.
pub fn find_shim(exe: &Path) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("LOCKSIM_CLOCKSHIM") {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let dir = exe.parent()?;
    [
        dir.join("liblocksim_clockshim.so"),
        dir.join("../liblocksim_clockshim.so"),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

#[repr(C)]
struct Shared {
    seq: AtomicU64,
    offset: AtomicI64,
    ppm: AtomicI64,
    anchor: AtomicI64,
}

/// One server's clock file, mapped read-write.
pub struct ClockFile {
    /// Its path (given to the server as `LOCKSIM_CLOCK_FILE`).
    pub path: PathBuf,
    map: *mut Shared,
}

// SAFETY: the mapping is only written through atomics.
unsafe impl Send for ClockFile {}

/// The host's `CLOCK_REALTIME`, ns.
pub fn host_realtime() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

impl ClockFile {
    /// Creates the file at `path` with a clock that is not shifted.
    ///
    /// # Errors
    /// When it cannot be created or mapped.
    pub fn create(path: &Path) -> Result<ClockFile, String> {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        f.set_len(LEN as u64)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        use std::os::fd::AsRawFd;
        // SAFETY: mapping LEN bytes of a file of that length; unmapped in Drop.
        let m = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                LEN,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            )
        };
        if m == libc::MAP_FAILED {
            return Err(format!(
                "{}: mmap: {}",
                path.display(),
                std::io::Error::last_os_error()
            ));
        }
        Ok(ClockFile {
            path: path.to_path_buf(),
            map: m as *mut Shared,
        })
    }

    fn shared(&self) -> &Shared {
        // SAFETY: a live mapping of at least size_of::<Shared>() bytes.
        unsafe { &*self.map }
    }

    fn write(&self, offset: i64, ppm: i64, anchor: i64) {
        let s = self.shared();
        let seq = s.seq.load(Ordering::Relaxed);
        s.seq.store(seq + 1, Ordering::Release);
        s.offset.store(offset, Ordering::Release);
        s.ppm.store(ppm, Ordering::Release);
        s.anchor.store(anchor, Ordering::Release);
        s.seq.store(seq + 2, Ordering::Release);
    }

    fn read(&self) -> (i64, i64, i64) {
        let s = self.shared();
        (
            s.offset.load(Ordering::Acquire),
            s.ppm.load(Ordering::Acquire),
            s.anchor.load(Ordering::Acquire),
        )
    }

    /// Steps the server's wall clock by `delta` ns (NTP step; negative: backwards).
    pub fn step(&self, delta: i64) {
        let (offset, ppm, anchor) = self.read();
        self.write(offset.saturating_add(delta), ppm, anchor);
    }

    /// From now on the server's wall clock runs at `1 + ppm/1e6` of the host's.
    pub fn drift(&self, ppm: i64) {
        let (offset, old, anchor) = self.read();
        let real = host_realtime();
        let now = anchor as i128
            + (real as i128 - anchor as i128) * (1_000_000 + old as i128) / 1_000_000
            + offset as i128;
        self.write((now - real as i128) as i64, ppm, real);
    }
}

/// How far [`crate::redis::prove_shim`] shifts a server's clock to see that the shim is in
/// force: far beyond any disagreement of a server's unshifted clock with the host's (they read
/// the same kernel clock), so a shim that did not load cannot pass by chance.
pub const PROBE: i64 = 1_000_000_000_000;

/// Judges a probe of a server's shifted clock: `server` is the wall time (ns) the server
/// answered while its clock file said `offset`, the host's `CLOCK_REALTIME` read just before
/// the request (`before`) and just after the answer (`after`). The server's reading must lie
/// in `[before + offset − 1 s, after + offset + 1 s]` (Redis `TIME` has µs resolution; the
/// second absorbs nothing but rounding).
///
/// # Errors
/// What the server's clock read instead, relative to the host's.
pub fn judge_probe(server: i64, before: i64, after: i64, offset: i64) -> Result<(), String> {
    let slack = 1_000_000_000;
    let (lo, hi) = (before + offset - slack, after + offset + slack);
    if (lo..=hi).contains(&server) {
        return Ok(());
    }
    let off = server as i128 - before as i128;
    Err(format!(
        "its wall clock read {} from the host's where the clock file said {}",
        locksim_core::time::fmt_nanos(off),
        locksim_core::time::fmt_nanos(offset as i128)
    ))
}

impl Drop for ClockFile {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `create`.
        unsafe {
            libc::munmap(self.map as *mut libc::c_void, LEN);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_passes_only_when_the_shift_is_seen() {
        let (b, a) = (1_700_000_000_000_000_000, 1_700_000_000_002_000_000);
        // Shifted as asked, at µs resolution.
        assert!(judge_probe(b + PROBE + 1_000_000, b, a, PROBE).is_ok());
        // A shim that did not load: the server's clock is the host's.
        let e = judge_probe(b + 1_000_000, b, a, PROBE).unwrap_err();
        assert!(e.contains("where the clock file said"), "{e}");
        // Shifted the other way, or far too late.
        assert!(judge_probe(b - PROBE, b, a, PROBE).is_err());
        assert!(judge_probe(a + PROBE + 2_000_000_000, b, a, PROBE).is_err());
    }

    #[test]
    fn steps_add_up_and_a_drift_reanchors_without_a_jump() {
        let d = tempfile::tempdir().unwrap();
        let c = ClockFile::create(&d.path().join("n1.clock")).unwrap();
        assert_eq!(c.read(), (0, 0, 0));
        c.step(20_000_000_000);
        c.step(-5_000_000_000);
        assert_eq!(c.read().0, 15_000_000_000);
        c.drift(10_000);
        let (offset, ppm, anchor) = c.read();
        // At the anchor the virtual clock still reads host + 15 s: no jump.
        assert_eq!(ppm, 10_000);
        assert!(
            (anchor + offset) - (anchor + 15_000_000_000) == 0,
            "{offset}"
        );
        assert_eq!(c.shared().seq.load(Ordering::Relaxed), 6);
        let bytes = std::fs::read(&c.path).unwrap();
        assert_eq!(bytes.len(), LEN);
        assert_eq!(i64::from_ne_bytes(bytes[8..16].try_into().unwrap()), offset);
    }
}
