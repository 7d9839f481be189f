//! Writing a file whole or not at all: through a temporary file beside it, which every error
//! path removes again (a full disk, a missing folder, a failed rename), so a failed write never
//! leaves `FILE.tmpPID` behind nor half a file in place of the old one.

use std::io::Write;
use std::path::{Path, PathBuf};

/// How the finished temporary file takes the target's place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A rename: an existing target is replaced (the caller decided it may be).
    Replace,
    /// A hard link: an existing target is never replaced, even by a concurrent writer; the
    /// error is then [`std::io::ErrorKind::AlreadyExists`].
    NewOnly,
}

/// The temporary file for `path`: `path` with `.tmp<pid>` appended, in the same folder (so the
/// final rename or link stays on one file system).
pub fn temp_path(path: &Path) -> PathBuf {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp{}", std::process::id()));
    PathBuf::from(tmp)
}

/// Writes `bytes` to `path` through [`temp_path`] and `place`.
///
/// # Errors
/// The I/O error of the step that failed (the temporary file is gone by then).
pub fn write_whole(path: &Path, bytes: &[u8], place: Place) -> std::io::Result<()> {
    write_whole_with(path, place, |f| f.write_all(bytes))
}

/// [`write_whole`] with the contents written by `fill` (which may fail midway: the temporary
/// file is removed, the target untouched).
///
/// # Errors
/// As [`write_whole`], or `fill`'s error.
pub fn write_whole_with(
    path: &Path,
    place: Place,
    fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let tmp = temp_path(path);
    let mut created = false;
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        created = true;
        fill(&mut f)?;
        f.sync_all()?;
        drop(f);
        match place {
            Place::Replace => std::fs::rename(&tmp, path),
            Place::NewOnly => std::fs::hard_link(&tmp, path),
        }
    })();
    // After a rename the temporary name is gone already; after a link, or on any error, it is
    // removed here (unless it was not ours: one left by another run that had our pid).
    if created {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("locksim-file-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn leftovers(d: &Path) -> Vec<String> {
        std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".tmp"))
            .collect()
    }

    #[test]
    fn a_write_that_fails_midway_leaves_nothing_and_keeps_the_old_file() {
        let d = dir("midway");
        let target = d.join("page.html");
        std::fs::write(&target, "old").unwrap();
        let err = write_whole_with(&target, Place::Replace, |f| {
            f.write_all(b"half of the new")?;
            Err(std::io::Error::other("No space left on device"))
        })
        .unwrap_err();
        assert!(err.to_string().contains("No space"));
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "old");
        assert!(leftovers(&d).is_empty(), "{:?}", leftovers(&d));
        std::fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn new_only_never_replaces_and_cleans_up() {
        let d = dir("newonly");
        let target = d.join("trace.json");
        write_whole(&target, b"first", Place::NewOnly).unwrap();
        let err = write_whole(&target, b"second", Place::NewOnly).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "first");
        assert!(leftovers(&d).is_empty(), "{:?}", leftovers(&d));
        write_whole(&target, b"third", Place::Replace).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "third");
        assert!(leftovers(&d).is_empty());
        std::fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn a_missing_folder_is_an_error_without_leftovers() {
        let d = dir("nofolder");
        let target = d.join("no/such/folder/x.tla");
        assert!(write_whole(&target, b"x", Place::Replace).is_err());
        assert!(leftovers(&d).is_empty());
        std::fs::remove_dir_all(&d).ok();
    }
}
