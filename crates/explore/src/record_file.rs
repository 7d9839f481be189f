//! The record file a campaign or a sweep writes (`--out FILE`, one JSON line per seed), held
//! by one process at a time: it is opened under an exclusive OS file lock (`flock` on Unix,
//! `LockFileEx` on Windows) that lasts as long as the returned [`File`], so a second
//! `locksim` on the same file (a second `--out`, a `--resume` or a `--force` of a campaign
//! still running) is refused before it reads, truncates or appends a byte, instead of two
//! processes interleaving their records in one corrupted file.

use std::fs::{File, OpenOptions};
use std::path::Path;

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
