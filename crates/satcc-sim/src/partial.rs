//! Files written whole or not at all: the one atomic-write helper of the
//! workspace (run outputs, pcap captures, the results store, the link
//! emulator's captures, Saratoga's received files).
//!
//! A file is written under a hidden partial name in the same directory as
//! its final path (`.NAME.partial` by default) and renamed into place only
//! when it is complete: a rename within one directory is atomic on POSIX
//! file systems, so a reader sees the old file or the whole new one, never
//! a half-written one. On an error, or if the [`Partial`] is dropped
//! before [`Partial::commit`] (an interrupted run), the partial file is
//! removed and the final path is left as it was.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// `.NAME.partial` beside `path`: where `path` is written before it is
/// complete.
pub fn partial_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.partial"))
}

/// A final path and the partial file it is written through. Dropped
/// uncommitted, it removes the partial file.
#[derive(Debug)]
pub struct Partial {
    path: PathBuf,
    partial: PathBuf,
    /// Renamed into place or removed: nothing left to clean up.
    done: bool,
}

impl Partial {
    /// `path` written through `.NAME.partial` beside it. Nothing is
    /// created yet: see [`Self::create`].
    pub fn beside(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        let partial = partial_path(&path);
        Partial::with_partial(path, partial)
    }

    /// `path` written through `partial`, a name the caller chose (say,
    /// one unique per writer, or one a later resume looks for). `partial`
    /// must be on the same file system as `path` for the rename to be
    /// atomic.
    pub fn with_partial(path: impl Into<PathBuf>, partial: impl Into<PathBuf>) -> Self {
        Partial {
            path: path.into(),
            partial: partial.into(),
            done: false,
        }
    }

    /// Creates (or truncates) the partial file for writing.
    pub fn create(&self) -> io::Result<File> {
        File::create(&self.partial)
    }

    /// Creates the partial file exclusively, for reading and writing
    /// (`O_EXCL`: an existing file or symlink under the partial name is
    /// never followed or reused; the call fails instead). For files whose
    /// directory a peer may have written to (Saratoga's received files).
    pub fn create_new(&self) -> io::Result<File> {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&self.partial)
    }

    /// The final path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The partial file's path.
    pub fn partial(&self) -> &Path {
        &self.partial
    }

    /// The partial file is complete: renames it to the final path. If the
    /// rename fails, the partial file is removed and the error returned.
    pub fn commit(mut self) -> io::Result<()> {
        self.done = true;
        let renamed = std::fs::rename(&self.partial, &self.path);
        if renamed.is_err() {
            let _ = std::fs::remove_file(&self.partial);
        }
        renamed
    }

    /// As [`Partial::commit`], then syncs the directory, so that the
    /// rename itself survives a crash: without it the new name lives in
    /// the directory's unsynced metadata, and a power loss after a peer
    /// was told "complete" can bring back the partial name (which a
    /// restart then sweeps away). The file's own contents must have been
    /// synced by the caller (`File::sync_all`) before. For what is
    /// promised to someone else (Saratoga's received files); run outputs
    /// only need [`Partial::commit`]'s atomicity.
    pub fn commit_durable(self) -> io::Result<()> {
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        self.commit()?;
        File::open(&dir)?.sync_all()
    }

    /// Gives up: removes the partial file (as dropping does), leaving the
    /// final path as it was.
    pub fn abandon(mut self) {
        self.remove();
    }

    /// Leaves the partial file where it is, neither renamed nor removed:
    /// for a later run to resume (an interrupted Saratoga transfer).
    pub fn keep(mut self) {
        self.done = true;
    }

    fn remove(&mut self) {
        if !self.done {
            self.done = true;
            let _ = std::fs::remove_file(&self.partial);
        }
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Has `write` fill the partial file of `partial`, then renames it into
/// place; on any error (creating, writing or renaming) the partial file is
/// removed and the final path left untouched.
pub fn write_with(
    partial: Partial,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let mut f = partial.create()?;
    write(&mut f)?;
    drop(f);
    partial.commit()
}

/// Writes `contents` to `path` whole or not at all (through
/// `.NAME.partial` beside it).
pub fn write_whole(path: impl Into<PathBuf>, contents: impl AsRef<[u8]>) -> io::Result<()> {
    write_with(Partial::beside(path), |f| {
        io::Write::write_all(f, contents.as_ref())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("satcc-partial-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn names(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn whole_file_replaces_the_old_one_and_leaves_no_partial() {
        let d = dir("whole");
        let p = d.join("a.json");
        std::fs::write(&p, "old").unwrap();
        write_whole(&p, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(names(&d), ["a.json"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_failed_write_keeps_the_old_file_and_removes_the_partial() {
        let d = dir("fail");
        let p = d.join("a.json");
        std::fs::write(&p, "old").unwrap();
        let r = write_with(Partial::beside(&p), |f| {
            io::Write::write_all(f, b"half")?;
            Err(io::Error::other("disk full"))
        });
        assert_eq!(r.unwrap_err().to_string(), "disk full");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old");
        assert_eq!(names(&d), ["a.json"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn dropped_uncommitted_removes_the_partial() {
        let d = dir("drop");
        let p = d.join("x.pcap");
        {
            let part = Partial::beside(&p);
            assert_eq!(part.partial(), d.join(".x.pcap.partial"));
            let mut f = part.create().unwrap();
            io::Write::write_all(&mut f, b"abc").unwrap();
            assert_eq!(names(&d), [".x.pcap.partial"]);
        }
        assert!(names(&d).is_empty());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn create_new_refuses_a_leftover_and_keep_leaves_the_partial() {
        let d = dir("excl");
        let p = d.join("f.bin");
        let part = Partial::beside(&p);
        std::fs::write(part.partial(), "left by someone").unwrap();
        let e = part.create_new().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        // keep(): the file under the partial name is left alone (here it
        // is somebody else's; for Saratoga, a transfer to resume later).
        part.keep();
        assert_eq!(names(&d), [".f.bin.partial"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn durable_commit_renames_into_place_and_syncs_the_directory() {
        let d = dir("durable");
        let path = d.join("f.bin");
        let p = Partial::beside(&path);
        let mut f = p.create().unwrap();
        io::Write::write_all(&mut f, b"abc").unwrap();
        f.sync_all().unwrap();
        drop(f);
        p.commit_durable().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"abc");
        assert_eq!(names(&d), vec!["f.bin".to_string()]);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_failed_rename_removes_the_partial() {
        let d = dir("rename");
        // The final path is a non-empty directory: rename fails.
        let p = d.join("busy");
        std::fs::create_dir_all(p.join("inside")).unwrap();
        let r = write_whole(&p, "x");
        assert!(r.is_err());
        assert_eq!(names(&d), ["busy"]);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
