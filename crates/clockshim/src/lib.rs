//! # locksim-clockshim
//!
//! A tiny `LD_PRELOAD` library that gives one process (a `redis-server` of a real run) a wall
//! clock of its own: `clock_gettime` of the realtime clocks, `gettimeofday` and `time` return
//!
//! ```text
//! wall = anchor + (real − anchor)·(1 + ppm/1e6) + offset        (ns)
//! ```
//!
//! where `real` is the host's `CLOCK_REALTIME` and `(offset, ppm, anchor)` are read from a
//! 4 KiB shared-memory file named by `LOCKSIM_CLOCK_FILE`, which the harness rewrites at each
//! `clock_step` / `clock_drift` fault (a sequence lock: readers retry while it is odd). The
//! monotonic clocks are left alone (they never step; Redis judges key expiry by its wall
//! clock: `mstime()` from `gettimeofday` in 7.0).
//!
//! Why our own and not libfaketime: Debian's libfaketime 0.9.10 resolves the real functions
//! with `dlsym` and allocates on first use; with a jemalloc-linked redis-server, jemalloc's
//! own `clock_gettime` call re-enters it and start-up dies ("Unexpected recursive calls to
//! clock_gettime()"). This library calls the kernel directly (`syscall(SYS_clock_gettime)`),
//! allocates nothing and resolves nothing, so there is nothing to recurse into.
//!
//! It also gives a lock library's process its node's source address ([`bind`]): the adapters
//! of `locksim real` (docs/adapters.md) run with it preloaded.

pub mod bind;

use std::sync::atomic::{AtomicI64, AtomicPtr, AtomicU64, Ordering};

/// The shared record: a sequence number (odd while being written) and the three values.
#[repr(C)]
pub struct Shared {
    /// Even when stable.
    pub seq: AtomicU64,
    /// Added to the wall clock, ns.
    pub offset: AtomicI64,
    /// Rate of the wall clock relative to the host's, ppm (0: same speed).
    pub ppm: AtomicI64,
    /// Host realtime at which the current rate started, ns.
    pub anchor: AtomicI64,
}

/// The environment variable that names the shared file.
pub const ENV: &str = "LOCKSIM_CLOCK_FILE";

/// Bytes of the shared file.
pub const FILE_LEN: usize = 4096;

static SHARED: AtomicPtr<Shared> = AtomicPtr::new(std::ptr::null_mut());
/// 1 after a failed attempt to map the file: the clock is then left as it is.
static FAILED: AtomicU64 = AtomicU64::new(0);

fn shared() -> Option<&'static Shared> {
    let p = SHARED.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: a mapping of FILE_LEN bytes that is never unmapped.
        return Some(unsafe { &*p });
    }
    if FAILED.load(Ordering::Relaxed) != 0 {
        return None;
    }
    // SAFETY: getenv/open/mmap/close with a NUL-terminated name; no allocation.
    unsafe {
        let name = libc::getenv(c"LOCKSIM_CLOCK_FILE".as_ptr());
        if name.is_null() {
            FAILED.store(1, Ordering::Relaxed);
            return None;
        }
        let fd = libc::open(name, libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            FAILED.store(1, Ordering::Relaxed);
            return None;
        }
        let m = libc::mmap(
            std::ptr::null_mut(),
            FILE_LEN,
            libc::PROT_READ,
            libc::MAP_SHARED,
            fd,
            0,
        );
        libc::close(fd);
        if m == libc::MAP_FAILED {
            FAILED.store(1, Ordering::Relaxed);
            return None;
        }
        // Another thread may have mapped it too: keep the first, leak the other (4 KiB once).
        match SHARED.compare_exchange(
            std::ptr::null_mut(),
            m as *mut Shared,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => Some(&*(m as *const Shared)),
            Err(first) => Some(&*first),
        }
    }
}

/// `(offset, ppm, anchor)`, consistently.
fn params(s: &Shared) -> (i64, i64, i64) {
    loop {
        let a = s.seq.load(Ordering::Acquire);
        if a % 2 == 1 {
            std::hint::spin_loop();
            continue;
        }
        let v = (
            s.offset.load(Ordering::Acquire),
            s.ppm.load(Ordering::Acquire),
            s.anchor.load(Ordering::Acquire),
        );
        if s.seq.load(Ordering::Acquire) == a {
            return v;
        }
    }
}

/// The virtual wall clock for host realtime `real`, ns.
pub fn virtual_wall(real: i64, offset: i64, ppm: i64, anchor: i64) -> i64 {
    let scaled = (real as i128 - anchor as i128) * (1_000_000 + ppm as i128) / 1_000_000;
    (anchor as i128 + scaled + offset as i128) as i64
}

fn raw_clock_gettime(id: libc::clockid_t, ts: *mut libc::timespec) -> libc::c_int {
    // SAFETY: the kernel's clock_gettime with the caller's pointer.
    unsafe { libc::syscall(libc::SYS_clock_gettime, id as libc::c_long, ts) as libc::c_int }
}

fn is_realtime(id: libc::clockid_t) -> bool {
    id == libc::CLOCK_REALTIME || id == libc::CLOCK_REALTIME_COARSE
}

/// Shifted realtime, ns; `None` when the kernel refused.
fn now_ns(id: libc::clockid_t) -> Option<i64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    if raw_clock_gettime(id, &mut ts) != 0 {
        return None;
    }
    let real = ts.tv_sec * 1_000_000_000 + ts.tv_nsec;
    Some(match shared() {
        Some(s) => {
            let (offset, ppm, anchor) = params(s);
            virtual_wall(real, offset, ppm, anchor)
        }
        None => real,
    })
}

/// `clock_gettime(2)`, with the realtime clocks shifted.
///
/// # Safety
/// `ts` must be valid for writes, as for libc's.
#[no_mangle]
pub unsafe extern "C" fn clock_gettime(
    id: libc::clockid_t,
    ts: *mut libc::timespec,
) -> libc::c_int {
    if !is_realtime(id) || ts.is_null() {
        return raw_clock_gettime(id, ts);
    }
    match now_ns(id) {
        Some(ns) => {
            (*ts).tv_sec = ns.div_euclid(1_000_000_000);
            (*ts).tv_nsec = ns.rem_euclid(1_000_000_000);
            0
        }
        None => -1,
    }
}

/// `gettimeofday(2)`, shifted.
///
/// # Safety
/// `tv` must be null or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn gettimeofday(
    tv: *mut libc::timeval,
    _tz: *mut libc::c_void,
) -> libc::c_int {
    if tv.is_null() {
        return 0;
    }
    match now_ns(libc::CLOCK_REALTIME) {
        Some(ns) => {
            (*tv).tv_sec = ns.div_euclid(1_000_000_000);
            (*tv).tv_usec = ns.rem_euclid(1_000_000_000) / 1_000;
            0
        }
        None => -1,
    }
}

/// `time(2)`, shifted.
///
/// # Safety
/// `t` must be null or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn time(t: *mut libc::time_t) -> libc::time_t {
    let s = now_ns(libc::CLOCK_REALTIME).map_or(-1, |ns| ns.div_euclid(1_000_000_000));
    if !t.is_null() {
        *t = s;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_and_rates_shift_the_wall_clock_from_the_anchor() {
        assert_eq!(virtual_wall(1_000, 0, 0, 0), 1_000);
        assert_eq!(virtual_wall(1_000, 20_000_000_000, 0, 0), 20_000_001_000);
        // 1% fast from the anchor at 1 s: at 3 s it reads 3.02 s.
        let s = 1_000_000_000;
        assert_eq!(virtual_wall(3 * s, 0, 10_000, s), 3 * s + 20_000_000);
        assert_eq!(virtual_wall(s, 5, 10_000, s), s + 5);
    }
}
