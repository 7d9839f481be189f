//! An `--out-dir` made ready before the work whose trace goes there (`hunt`, `shrink`): said
//! at once, not after the whole search or shrink.

use std::path::Path;

/// Refuses an `--out-dir` that cannot take `what` (a trace: "the find's trace", "the shrunk
/// trace"), before the work that makes it: the nearest existing folder on the way must be one,
/// and the folder must be made and take a file (a probe, removed at once).
///
/// # Errors
/// One line naming the folder and the OS error.
pub fn ready(dir: &Path, what: &str) -> Result<(), String> {
    if let Some(existing) = dir.ancestors().find(|p| p.exists()) {
        if !existing.is_dir() {
            return Err(format!(
                "--out-dir {}: {} exists and is not a directory",
                dir.display(),
                existing.display()
            ));
        }
    }
    std::fs::create_dir_all(dir).map_err(|e| {
        format!(
            "--out-dir {}: cannot create it ({e}): {what} would have nowhere to go",
            dir.display()
        )
    })?;
    let probe = dir.join(format!(".locksim-probe-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(format!(
            "--out-dir {}: cannot write a file in it ({e}): {what} would have nowhere to go",
            dir.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_is_made_and_a_file_in_the_way_refused() {
        let d = std::env::temp_dir().join(format!("locksim-out-dir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        ready(&d.join("a/b"), "the trace").unwrap();
        assert!(d.join("a/b").is_dir());
        assert_eq!(std::fs::read_dir(d.join("a/b")).unwrap().count(), 0);
        std::fs::write(d.join("f"), "").unwrap();
        let e = ready(&d.join("f/traces"), "the trace").unwrap_err();
        assert!(e.ends_with("exists and is not a directory"), "{e}");
        let long = d.join("x".repeat(300));
        let e = ready(&long, "the trace").unwrap_err();
        assert!(
            e.contains("cannot create it") && e.ends_with("the trace would have nowhere to go"),
            "{e}"
        );
        std::fs::remove_dir_all(&d).ok();
    }
}
