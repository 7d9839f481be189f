//! The record file a campaign or a sweep writes (`--out FILE`, one JSON line per seed), held
//! by one process at a time: it is opened under an exclusive OS file lock (`flock` on Unix,
//! `LockFileEx` on Windows) that lasts as long as the returned [`File`], so a second
//! `locksim` on the same file (a second `--out`, a `--resume` or a `--force` of a campaign
//! still running) is refused before it reads, truncates or appends a byte, instead of two
//! processes interleaving their records in one corrupted file.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::SeedRecord;

/// How a record file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Open {
    /// A new file: absent or empty, else [`Error::Exists`] (nothing is replaced).
    New,
    /// Start it empty: a new file, or an existing one emptied (once the lock is held, so a
    /// running writer's records are never cut).
    Replace,
    /// Read its records and append after them (`--resume`); created when absent.
    Resume,
}

/// Why a record file was not opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// [`Open::New`] of a file that holds something (the caller says which flag replaces or
    /// continues it).
    Exists,
    /// One line naming the file: another process holds its lock, or it cannot be opened,
    /// locked or emptied.
    Other(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Exists => write!(f, "the file exists"),
            Error::Other(e) => write!(f, "{e}"),
        }
    }
}

/// Opens `path` as `how` says, under an exclusive lock held until the file is dropped. The
/// lock is taken before anything else is looked at, so a file another process is writing is
/// refused as such whatever `how` is.
///
/// # Errors
/// See [`Error`].
pub fn open(path: &Path, how: Open) -> Result<File, Error> {
    let shown = path.display();
    let mut o = OpenOptions::new();
    match how {
        // Not `truncate(true)`: the file is emptied only once this process holds the lock.
        Open::New | Open::Replace => o.write(true).create(true),
        Open::Resume => o.read(true).append(true).create(true),
    };
    let file = o.open(path).map_err(|e| {
        Error::Other(match how {
            Open::Resume => format!("cannot open {shown} to resume it: {e}"),
            _ => format!("cannot write {shown}: {e}"),
        })
    })?;
    // Fully qualified: from Rust 1.89 on, std's own `File::try_lock` would be picked.
    match fs4::FileExt::try_lock(&file) {
        Ok(()) => {}
        Err(fs4::TryLockError::WouldBlock) => {
            return Err(Error::Other(format!(
                "{shown} is being written by another process (a locksim campaign or sweep with \
                 --out {shown} is still running: it holds the file's lock); wait for it to end, \
                 or give another --out"
            )))
        }
        Err(fs4::TryLockError::Error(e)) => {
            return Err(Error::Other(format!("cannot lock {shown}: {e}")))
        }
    }
    let len = file
        .metadata()
        .map_err(|e| Error::Other(format!("cannot read {shown}: {e}")))?
        .len();
    // An empty file (left by an earlier attempt) is nothing to lose.
    match how {
        Open::New if len > 0 => return Err(Error::Exists),
        Open::Replace if len > 0 => file
            .set_len(0)
            .map_err(|e| Error::Other(format!("cannot write {shown}: {e}")))?,
        _ => {}
    }
    Ok(file)
}

/// A record file being written: each [`SeedRecord`] is appended as one JSON line, written
/// whole and flushed, from any number of worker threads.
pub struct Writer {
    path: PathBuf,
    file: Mutex<File>,
}

impl Writer {
    /// Writes to `file` (opened by [`open`], so under its lock), which is at `path`.
    pub fn new(path: &Path, file: File) -> Writer {
        Writer {
            path: path.to_path_buf(),
            file: Mutex::new(file),
        }
    }

    /// Appends `r` as one line.
    ///
    /// # Errors
    /// The file cannot be written (naming it).
    pub fn write(&self, r: &SeedRecord) -> Result<(), String> {
        let mut line = serde_json::to_string(r).expect("records serialize");
        line.push('\n');
        let mut f = self.file.lock().expect("no panics while held");
        f.write_all(line.as_bytes())
            .and_then(|_| f.flush())
            .map_err(|e| format!("cannot write {}: {e}", self.path.display()))
    }
}

/// Reads the records of `file` (opened with [`Open::Resume`] at `path`) to continue it:
/// `each` gets every record with its line number (from 1) and may refuse it. A last line
/// whose record is unfinished (an interrupted write) is cut off, and a whole last record
/// without its newline is given one, so that appending continues the file cleanly. Returns
/// whether an unfinished line was cut off.
///
/// # Errors
/// A line that is no record ([`not_a_record`]), what `each` refuses, or the file cannot be
/// read or written (naming it).
pub fn resume(
    file: &mut File,
    path: &Path,
    each: &mut dyn FnMut(SeedRecord, usize) -> Result<(), String>,
) -> Result<bool, String> {
    let shown = path.display();
    let mut reader = std::io::BufReader::new(&*file);
    let (mut good, mut line_no, mut buf) = (0u64, 0usize, Vec::new());
    let (mut unfinished, mut needs_newline) = (false, false);
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| format!("cannot read {shown}: {e}"))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let complete = buf.ends_with(b"\n");
        let text = String::from_utf8_lossy(&buf);
        if text.trim().is_empty() {
            good += n as u64;
            continue;
        }
        let r: SeedRecord = match serde_json::from_str(text.trim_end()) {
            Ok(r) => r,
            Err(_) if !complete && text.trim_start().starts_with('{') => {
                unfinished = true;
                break;
            }
            Err(e) => return Err(not_a_record(path, line_no, &e)),
        };
        each(r, line_no)?;
        good += n as u64;
        // A whole record without its newline (the last line): end it before appending.
        needs_newline = !complete;
    }
    drop(reader);
    if needs_newline {
        file.write_all(b"\n")
            .map_err(|e| format!("cannot write {shown}: {e}"))?;
    }
    if unfinished {
        file.set_len(good)
            .and_then(|_| file.seek(std::io::SeekFrom::End(0)).map(|_| ()))
            .map_err(|e| format!("cannot write {shown}: {e}"))?;
    }
    Ok(unfinished)
}

/// Refuses a record of a seed that ran but does not say how many of its faults took effect
/// (written by a build before they were counted): folded in, its cell could read `safe`
/// though no fault acted. Such records are refused by `merge` and `--resume` (exit 2) rather
/// than judged as unknown.
///
/// # Errors
/// One line naming the seed and its cell.
pub fn check_faults_recorded(r: &SeedRecord) -> Result<(), String> {
    if r.faults_applied.is_none() && r.error.is_none() {
        return Err(format!(
            "seed {} of cell {} ({} under {}) has no `faults_applied`: written by an older build, \
             which did not count the faults that took effect; run that shard again with this build",
            r.seed,
            r.cell,
            r.algorithm,
            r.faults.name()
        ));
    }
    Ok(())
}

/// Creates the folders `path` needs (as `--report` and `--svg` do), so `--out runs/a.jsonl`
/// works in a fresh clone.
///
/// # Errors
/// The folder cannot be made (naming it).
pub fn create_parent(path: &Path) -> Result<(), String> {
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) if !dir.is_dir() => std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display())),
        _ => Ok(()),
    }
}

/// The error for line `line` of `path` that is not a record: what a record file is, then
/// serde's detail (and for a TOML file, what to do with it instead).
pub fn not_a_record(path: &Path, line: usize, e: &serde_json::Error) -> String {
    let hint = if path.extension().is_some_and(|x| x == "toml") {
        "; a .toml file is a scenario: run it with `locksim campaign FILE` (or `locksim sweep FILE` for a frontier file)"
    } else {
        ""
    };
    format!(
        "{}:{line}: not a locksim record (expected one JSON object per line, as `locksim campaign --out` or `locksim sweep --out` writes them): {}{hint}",
        path.display(),
        json_problem(e)
    )
}

/// serde_json's message without its " at line L column C" tail (the caller names the line).
pub fn json_problem(e: &serde_json::Error) -> String {
    let s = e.to_string();
    s.split(" at line ").next().unwrap_or(&s).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn scratch(name: &str) -> std::path::PathBuf {
        let d =
            std::env::temp_dir().join(format!("locksim-record-file-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d.join("runs.jsonl")
    }

    /// While one handle holds the file, a second open (replace or resume) is refused with the
    /// file's name and leaves its content alone; once the first is dropped, it opens.
    #[test]
    fn a_second_writer_is_refused_while_the_first_holds_the_file() {
        let path = scratch("second");
        let mut first = open(&path, Open::Replace).unwrap();
        first.write_all(b"{\"seed\":1}\n").unwrap();
        for how in [Open::New, Open::Replace, Open::Resume] {
            let e = open(&path, how).unwrap_err().to_string();
            assert!(e.contains(&path.display().to_string()), "{e}");
            assert!(e.contains("another process"), "{e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"seed\":1}\n",
            "the refused opens cut nothing"
        );
        drop(first);
        let mut again = open(&path, Open::Resume).unwrap();
        let mut text = String::new();
        again.read_to_string(&mut text).unwrap();
        assert_eq!(text, "{\"seed\":1}\n");
        drop(again);
        assert_eq!(open(&path, Open::New).unwrap_err(), Error::Exists);
        open(&path, Open::Replace).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "", "replaced");
    }
}
