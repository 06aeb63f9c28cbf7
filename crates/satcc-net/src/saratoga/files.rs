//! File integrity: names accepted, checksums of files (whole or piece by
//! piece as bytes arrive), the temporary `.NAME.partial` a receiver
//! writes and renames into place only once verified, the `.NAME.resume`
//! record that lets an interrupted PUT resume, and the clean-up of what
//! interrupted transfers left.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use satcc_proto::saratoga::wire::{Checksum, ChecksumType};
use satcc_proto::saratoga::RangeSet;
use satcc_sim::partial::Partial;

use super::frames::{checksum_bytes, checksum_from, checksum_name, parse_checksum, MAX_WIRE_HOLES};
use super::MAX_NAME;

/// Why a file name is refused, if it is: it must be one path component of
/// 1 to [`MAX_NAME`] bytes of UTF-8, without `/`, `\`, NUL or other
/// control characters, and not start with `.` (which rules out `.`, `..`,
/// hidden files and our own `.NAME.partial` temporaries).
pub fn check_name(name: &[u8]) -> Result<&str, NameError> {
    let shown = String::from_utf8_lossy(&name[..name.len().min(60)]).into_owned();
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name.len() > MAX_NAME {
        return Err(NameError::TooLong {
            shown,
            len: name.len(),
        });
    }
    let s = std::str::from_utf8(name).map_err(|_| NameError::NotUtf8(shown))?;
    if s.starts_with('.') {
        return Err(NameError::Hidden(s.to_string()));
    }
    if let Some(c) = s.chars().find(|&c| c == '/' || c == '\\' || c.is_control()) {
        return Err(NameError::Forbidden {
            name: s.to_string(),
            c,
        });
    }
    Ok(s)
}

/// Why [`check_name`] refused a name (the text shows its first 60 bytes).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// No bytes.
    #[error("name: empty")]
    Empty,
    /// Over [`MAX_NAME`] bytes.
    #[error("name '{shown}...': {len} bytes, over the limit of {}", MAX_NAME)]
    TooLong {
        /// The name's start.
        shown: String,
        /// Its length in bytes.
        len: usize,
    },
    /// Not UTF-8 (shown with replacement characters).
    #[error("name '{0}': not UTF-8")]
    NotUtf8(String),
    /// Starts with `.`.
    #[error("name '{0}': starts with '.'")]
    Hidden(String),
    /// Contains `/`, `\\`, NUL or another control character `c`.
    #[error("name '{}': contains {c:?} (one file name, no directories)", .name.escape_debug())]
    Forbidden {
        /// The name.
        name: String,
        /// The first character refused.
        c: char,
    },
}

/// Why a received file's temporary could not be created, written or
/// committed (the texts are those users see).
#[derive(Debug, thiserror::Error)]
pub(super) enum FileError {
    /// The destination has no file name.
    #[error("{}: not a file name", .0.display())]
    NotAFileName(PathBuf),
    /// The temporary file could not be created; `hint` when one exists.
    #[error("{}: cannot create: {source}{hint}", .path.display())]
    Create {
        path: PathBuf,
        source: io::Error,
        hint: &'static str,
    },
    /// Reading, writing or syncing the temporary file; `what` says which
    /// ("", "write: " or "sync: ").
    #[error("{}: {what}{source}", .path.display())]
    Io {
        path: PathBuf,
        what: &'static str,
        source: io::Error,
    },
    /// Every byte arrived, but not the file METADATA described.
    #[error("{kind} checksum of the {size} bytes received does not match METADATA's")]
    Mismatch { kind: &'static str, size: u64 },
    /// The final name appeared meanwhile (and is not to be replaced).
    #[error("{}: exists", .0.display())]
    Exists(PathBuf),
    /// Renaming into place failed.
    #[error("{}: rename: {source}", .path.display())]
    Rename { path: PathBuf, source: io::Error },
}

impl FileError {
    /// An I/O error on the temporary file `path`, `what` ("", "write: ",
    /// "sync: ") going first in the text.
    pub(super) fn io(path: &Path, what: &'static str) -> impl FnOnce(io::Error) -> FileError {
        let path = path.to_path_buf();
        move |source| FileError::Io { path, what, source }
    }
}

/// A checksum computed piece by piece.
pub(super) enum Hasher {
    Crc(crc32fast::Hasher),
    Md5(md5::Md5),
    Sha1(sha1::Sha1),
}

impl std::fmt::Debug for Hasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Hasher")
    }
}

impl Hasher {
    /// `None` for no checksum.
    pub(super) fn new(kind: ChecksumType) -> Option<Hasher> {
        use md5::Digest as _;
        match kind {
            ChecksumType::None => None,
            ChecksumType::Crc32 => Some(Hasher::Crc(crc32fast::Hasher::new())),
            ChecksumType::Md5 => Some(Hasher::Md5(md5::Md5::new())),
            ChecksumType::Sha1 => Some(Hasher::Sha1(sha1::Sha1::new())),
        }
    }

    pub(super) fn update(&mut self, b: &[u8]) {
        use md5::Digest as _;
        match self {
            Hasher::Crc(c) => c.update(b),
            Hasher::Md5(m) => m.update(b),
            Hasher::Sha1(s) => s.update(b),
        }
    }

    pub(super) fn finish(self) -> Checksum {
        use md5::Digest as _;
        match self {
            Hasher::Crc(c) => Checksum::Crc32(c.finalize()),
            Hasher::Md5(m) => Checksum::Md5(m.finalize().into()),
            Hasher::Sha1(s) => Checksum::Sha1(s.finalize().into()),
        }
    }

    /// Feeds bytes `[from, to)` of `f`, read in blocks of `buf`'s size.
    pub(super) fn feed(&mut self, f: &File, from: u64, to: u64, buf: &mut [u8]) -> io::Result<()> {
        let mut off = from;
        while off < to {
            let n = (to - off).min(buf.len() as u64) as usize;
            read_exact_at(f, &mut buf[..n], off)?;
            self.update(&buf[..n]);
            off += n as u64;
        }
        Ok(())
    }
}

/// The checksum of the first `len` bytes of `f`, read in 1 MB blocks (the
/// file is never held in memory whole).
pub fn checksum_file(f: &File, len: u64, kind: ChecksumType) -> io::Result<Checksum> {
    checksum_file_until(f, len, kind, &AtomicBool::new(false))
}

/// [`checksum_file`], giving up (`ErrorKind::Interrupted`) between two
/// blocks once `cancel` is set: the server's checksum workers stop when
/// the session that wanted the sum is gone, instead of reading a large
/// file to its end for nobody.
pub fn checksum_file_until(
    f: &File,
    len: u64,
    kind: ChecksumType,
    cancel: &AtomicBool,
) -> io::Result<Checksum> {
    let Some(mut h) = Hasher::new(kind) else {
        return Ok(Checksum::None);
    };
    let mut buf = vec![0u8; 1 << 20];
    let mut off = 0;
    while off < len {
        if cancel.load(Ordering::Relaxed) {
            return Err(io::Error::new(
                io::ErrorKind::Interrupted,
                "checksum cancelled",
            ));
        }
        let to = len.min(off + buf.len() as u64);
        h.feed(f, off, to, &mut buf)?;
        off = to;
    }
    Ok(h.finish())
}

#[cfg(unix)]
pub(super) fn read_exact_at(f: &File, buf: &mut [u8], off: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(f, buf, off)
}

#[cfg(unix)]
pub(super) fn write_all_at(f: &File, buf: &[u8], off: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(f, buf, off)
}

// Atomic writes go through the workspace's one helper,
// `satcc_sim::partial::Partial`: a file is written under a temporary name
// beside its final one and renamed into place once complete, so that its
// final name never shows a part of it. Here for a received file
// (`TempFile`, written piecewise, verified, then committed, or kept for a
// later resume) and for a small file written whole (`write_atomically`:
// the resume records).

/// Replaces `path` with `bytes` atomically: written to `PATH~` (created
/// afresh: a leftover is removed, never followed or reused), then renamed
/// into place; on an error `PATH~` is removed. Not synced: see
/// [`TempFile::save_resume`].
pub(super) fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push("~");
    let part = Partial::with_partial(path, PathBuf::from(tmp));
    let _ = std::fs::remove_file(part.partial());
    let mut f = part.create_new()?;
    io::Write::write_all(&mut f, bytes)?;
    drop(f);
    part.commit()
}

/// A temporary file removed on drop unless committed (renamed to its
/// final name) or suspended (kept for a resume): no failure path can
/// leave it, or a partial final file.
#[derive(Debug)]
pub(super) struct TempFile {
    pub(super) file: File,
    /// The final name and the temporary one; `None` once committed,
    /// suspended or discarded.
    part: Option<Partial>,
    tmp: PathBuf,
    dest: PathBuf,
}

impl TempFile {
    /// Creates `.NAME.partial` beside `dest` exclusively (`O_EXCL`: an
    /// existing file or symlink there is never followed or reused, nor
    /// removed: it may be an interrupted transfer's).
    pub(super) fn create(dest: &Path) -> Result<TempFile, FileError> {
        let dir = dest.parent().unwrap_or(Path::new("."));
        let name = dest
            .file_name()
            .ok_or_else(|| FileError::NotAFileName(dest.to_path_buf()))?;
        let tmp = dir.join(format!(".{}.partial", name.to_string_lossy()));
        let part = Partial::with_partial(dest, &tmp);
        let file = match part.create_new() {
            Ok(f) => f,
            Err(e) => {
                part.keep();
                let hint = if e.kind() == io::ErrorKind::AlreadyExists {
                    " (left by an interrupted transfer? remove it)"
                } else {
                    ""
                };
                return Err(FileError::Create {
                    path: tmp,
                    source: e,
                    hint,
                });
            }
        };
        Ok(TempFile {
            file,
            part: Some(part),
            tmp,
            dest: dest.to_path_buf(),
        })
    }

    /// Reopens the `.NAME.partial` an interrupted transfer left beside
    /// `dest` (a regular file, never through a symlink), to resume it.
    pub(super) fn reopen(dest: &Path) -> Option<TempFile> {
        let tmp = partial_path(dest)?;
        let md = std::fs::symlink_metadata(&tmp).ok()?;
        if !md.file_type().is_file() {
            return None;
        }
        let mut oo = OpenOptions::new();
        oo.read(true).write(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            oo.custom_flags(libc::O_NOFOLLOW);
        }
        let file = oo.open(&tmp).ok()?;
        Some(TempFile {
            file,
            part: Some(Partial::with_partial(dest, &tmp)),
            tmp,
            dest: dest.to_path_buf(),
        })
    }

    /// The temporary file's path.
    pub(super) fn tmp(&self) -> &Path {
        &self.tmp
    }

    /// Removes the temporary file now (a failed transfer), and its
    /// resume record if any.
    pub(super) fn discard(&mut self) {
        if let Some(part) = self.part.take() {
            part.abandon();
            if let Some(r) = resume_path(&self.dest) {
                let _ = std::fs::remove_file(r);
            }
        }
    }

    /// Records that the file holds `info.ranges` (after syncing them to
    /// disk, so the record never claims bytes that a crash could lose),
    /// replacing the record atomically.
    ///
    /// While the transfer runs the record is written without syncing
    /// (a killed process loses nothing the kernel holds; a machine crash
    /// may leave a record claiming bytes that never reached the disk, and
    /// the final checksum then fails and the transfer reports it: never
    /// a wrong file under the final name). `sync` (on suspending) makes
    /// the data durable first.
    pub(super) fn save_resume(&self, info: &ResumeInfo, sync: bool) -> io::Result<()> {
        let path = resume_path(&self.dest).ok_or_else(|| io::Error::other("no name"))?;
        if sync {
            self.file.sync_data()?;
        }
        write_atomically(&path, info.encode().as_bytes())
    }

    /// Keeps the temporary file and its resume record (written now) for
    /// a later transfer of the same file to resume; nothing is renamed.
    pub(super) fn suspend(&mut self, info: &ResumeInfo) -> bool {
        if self.part.is_none() {
            return false;
        }
        if self.save_resume(info, true).is_err() {
            self.discard();
            return false;
        }
        if let Some(part) = self.part.take() {
            part.keep();
        }
        true
    }

    /// Sets the length, checks the checksum, syncs and renames. `hashed`:
    /// the checksum of the file's first bytes, computed while they
    /// arrived (see [`super::session::RecvSide::hash_ahead`]), finished here.
    pub(super) fn commit(
        &mut self,
        size: u64,
        sum: &Checksum,
        overwrite: bool,
        hashed: Option<(Hasher, u64)>,
    ) -> Result<(), FileError> {
        self.file
            .set_len(size)
            .map_err(FileError::io(&self.tmp, ""))?;
        let got = match hashed {
            Some((mut h, at)) if h_kind(&h) == sum.kind() && at <= size => h
                .feed(&self.file, at, size, &mut vec![0u8; 1 << 20])
                .map(|()| h.finish()),
            _ => checksum_file(&self.file, size, sum.kind()),
        }
        .map_err(FileError::io(&self.tmp, ""))?;
        if got != *sum {
            return Err(FileError::Mismatch {
                kind: checksum_name(sum.kind()),
                size,
            });
        }
        self.file
            .sync_all()
            .map_err(FileError::io(&self.tmp, "sync: "))?;
        if !overwrite && std::fs::symlink_metadata(&self.dest).is_ok() {
            return Err(FileError::Exists(self.dest.clone()));
        }
        // Renamed or not, the resume record goes: the file is complete
        // (or, if the rename failed, removed with its partial).
        let renamed = match self.part.take() {
            // Durable: the peer is told "complete" once this returns.
            Some(part) => part.commit_durable(),
            None => Err(io::ErrorKind::NotFound.into()),
        };
        if let Some(r) = resume_path(&self.dest) {
            let _ = std::fs::remove_file(r);
        }
        renamed.map_err(|source| FileError::Rename {
            path: self.dest.clone(),
            source,
        })
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        self.discard();
    }
}

pub(super) fn h_kind(h: &Hasher) -> ChecksumType {
    match h {
        Hasher::Crc(_) => ChecksumType::Crc32,
        Hasher::Md5(_) => ChecksumType::Md5,
        Hasher::Sha1(_) => ChecksumType::Sha1,
    }
}

/// `.NAME.partial` beside `dest`.
pub(super) fn partial_path(dest: &Path) -> Option<PathBuf> {
    let name = dest.file_name()?;
    Some(dest.with_file_name(format!(".{}.partial", name.to_string_lossy())))
}

/// `.NAME.resume` beside `dest`: the resume record of `.NAME.partial`.
pub(super) fn resume_path(dest: &Path) -> Option<PathBuf> {
    let name = dest.file_name()?;
    Some(dest.with_file_name(format!(".{}.resume", name.to_string_lossy())))
}

/// Ranges a resume record keeps at most. A STATUS lists at most
/// [`MAX_WIRE_HOLES`] holes and `k` ranges leave at most `k + 1` holes,
/// so the resume offer always fits one STATUS with a complete list.
pub(super) const MAX_RESUME_RANGES: usize = MAX_WIRE_HOLES - 1;

/// Largest resume record read.
pub(super) const MAX_RESUME_RECORD: u64 = 16 * 1024;

/// What a kept `.NAME.partial` holds, as recorded in `.NAME.resume`: the
/// file it is part of (size and checksum, from METADATA) and the byte
/// ranges present. A transfer of the same name, size and checksum
/// resumes from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ResumeInfo {
    pub(super) size: u64,
    pub(super) checksum: Checksum,
    /// The address of the peer the bytes came from (a server's PUT: the
    /// client; a GET client's: the server): only a transfer with the same
    /// peer resumes from them. Otherwise anyone could plant bytes for a
    /// file another will send, and with a CRC-32 (which one can forge)
    /// have them committed as part of it.
    pub(super) peer: Option<IpAddr>,
    pub(super) ranges: Vec<(u64, u64)>,
}

impl ResumeInfo {
    /// At most [`MAX_RESUME_RANGES`] of `received`'s ranges: the largest
    /// ones (bytes of the others are simply received again). Bounded
    /// whatever the peer sent.
    pub(super) fn from_received(
        size: u64,
        checksum: Checksum,
        peer: Option<IpAddr>,
        received: &RangeSet,
    ) -> ResumeInfo {
        let mut ranges: Vec<(u64, u64)> = received
            .iter()
            .map(|(a, b)| (a.min(size), b.min(size)))
            .filter(|(a, b)| a < b)
            .collect();
        if ranges.len() > MAX_RESUME_RANGES {
            ranges.sort_by_key(|&(a, b)| std::cmp::Reverse(b - a));
            ranges.truncate(MAX_RESUME_RANGES);
            ranges.sort_unstable();
        }
        ResumeInfo {
            size,
            checksum,
            peer,
            ranges,
        }
    }

    pub(super) fn held(&self) -> u64 {
        self.ranges.iter().map(|(a, b)| b - a).sum()
    }

    /// What is missing: the gaps of `ranges` in `[0, size)`, in order.
    pub(super) fn holes(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut at = 0;
        for &(a, b) in &self.ranges {
            if a > at {
                out.push((at, a));
            }
            at = at.max(b);
        }
        if at < self.size {
            out.push((at, self.size));
        }
        out
    }

    pub(super) fn encode(&self) -> String {
        let hex: String = checksum_bytes(&self.checksum)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let mut s = format!(
            "satcc-saratoga-resume 2\nsize {}\nchecksum {} {hex}\npeer {}\nranges",
            self.size,
            checksum_name(self.checksum.kind()),
            self.peer.map_or("-".to_string(), |a| a.to_string())
        );
        for (a, b) in &self.ranges {
            s.push_str(&format!(" {a}-{b}"));
        }
        s.push('\n');
        s
    }

    /// Parses a record; `None` for anything not exactly as written by
    /// [`Self::encode`] (ranges in order, disjoint, within the size).
    pub(super) fn parse(text: &str) -> Option<ResumeInfo> {
        let mut lines = text.lines();
        // Version 1 had no peer: such a record is not resumed (its file
        // is received again whole).
        if lines.next()? != "satcc-saratoga-resume 2" {
            return None;
        }
        let size: u64 = lines.next()?.strip_prefix("size ")?.parse().ok()?;
        let mut ck = lines.next()?.strip_prefix("checksum ")?.split(' ');
        let kind = parse_checksum(ck.next()?).ok()?;
        let hex = ck.next().unwrap_or("");
        if hex.len() % 2 != 0 || hex.len() > 64 {
            return None;
        }
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
            .collect::<Option<_>>()?;
        let checksum = checksum_from(kind, &bytes)?;
        let peer = match lines.next()?.strip_prefix("peer ")? {
            "-" => None,
            a => Some(a.parse().ok()?),
        };
        let mut ranges = Vec::new();
        let mut at = 0u64;
        for r in lines.next()?.strip_prefix("ranges")?.split_whitespace() {
            let (a, b) = r.split_once('-')?;
            let (a, b): (u64, u64) = (a.parse().ok()?, b.parse().ok()?);
            if a >= b || b > size || (a < at) || ranges.len() >= MAX_RESUME_RANGES {
                return None;
            }
            at = b;
            ranges.push((a, b));
        }
        Some(ResumeInfo {
            size,
            checksum,
            peer,
            ranges,
        })
    }

    /// The record beside `dest`, if there is a valid one.
    pub(super) fn load(dest: &Path) -> Option<ResumeInfo> {
        let p = resume_path(dest)?;
        let md = std::fs::symlink_metadata(&p).ok()?;
        if !md.file_type().is_file() || md.len() > MAX_RESUME_RECORD {
            return None;
        }
        ResumeInfo::parse(&std::fs::read_to_string(p).ok()?)
    }
}

/// The NAME of our own `.NAME.SUFFIX` files (`partial`, `resume` or
/// `resume~`), if `file` is one with a valid NAME.
pub(super) fn own_file<'a>(file: &'a [u8], suffix: &str) -> Option<&'a str> {
    let inner = file
        .strip_prefix(b".")?
        .strip_suffix(suffix.as_bytes())?
        .strip_suffix(b".")?;
    check_name(inner).ok()
}

/// Cleans up what interrupted transfers left in `dir` (only names this
/// module creates, regular files): a `.NAME.partial` with a valid
/// `.NAME.resume` record is kept for resuming, up to `max_resumable`;
/// other partials, orphan records and half-written records are removed.
/// Returns (partials removed, partials kept).
pub(super) fn sweep_partials(dir: &Path, max_resumable: usize) -> (u64, u64) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return (0, 0);
    };
    let (mut removed, mut kept) = (0, 0);
    let mut entries: Vec<_> = rd.flatten().collect();
    // Deterministic choice of what is kept when over the limit.
    entries.sort_by_key(|e| e.file_name());
    for e in &entries {
        let f = e.file_name();
        let b = f.as_encoded_bytes();
        if !e.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        if let Some(name) = own_file(b, "partial") {
            let dest = dir.join(name);
            let keep = (kept as usize) < max_resumable
                && ResumeInfo::load(&dest)
                    .is_some_and(|i| e.metadata().is_ok_and(|m| m.len() <= i.size) && i.held() > 0);
            if keep {
                kept += 1;
            } else if std::fs::remove_file(e.path()).is_ok() {
                removed += 1;
                if let Some(r) = resume_path(&dest) {
                    let _ = std::fs::remove_file(r);
                }
            }
        } else if let Some(name) = own_file(b, "resume") {
            let partial = partial_path(&dir.join(name));
            if !partial.is_some_and(|p| p.exists()) {
                let _ = std::fs::remove_file(e.path());
            }
        } else if own_file(b, "resume~").is_some() {
            let _ = std::fs::remove_file(e.path());
        }
    }
    (removed, kept)
}

/// How many interrupted PUTs `dir` holds for resuming (resume records).
pub(super) fn count_resumable(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |rd| {
        rd.flatten()
            .filter(|e| own_file(e.file_name().as_encoded_bytes(), "resume").is_some())
            .count()
    })
}

/// Checksums of served files, keyed by name and valid while the file's
/// identity (device, inode), size and modification time are unchanged.
#[derive(Debug, Default)]
pub(super) struct SumCache {
    pub(super) map: HashMap<String, (FileId, Checksum)>,
}

/// What identifies a file's content for [`SumCache`].
pub(super) type FileId = (u64, u64, u64, Option<std::time::SystemTime>);

/// Files whose checksum is remembered (the cache is emptied beyond:
/// bounded memory).
pub(super) const SUM_CACHE: usize = 1024;

/// What identifies `file`'s content (`size` bytes) for [`SumCache`].
pub(super) fn file_id(file: &File, size: u64) -> Option<FileId> {
    let md = file.metadata().ok()?;
    #[cfg(unix)]
    let (dev, ino) = {
        use std::os::unix::fs::MetadataExt;
        (md.dev(), md.ino())
    };
    #[cfg(not(unix))]
    let (dev, ino) = (0, 0);
    Some((dev, ino, size, md.modified().ok()))
}

impl SumCache {
    pub(super) fn get(&self, name: &str, id: &FileId, kind: ChecksumType) -> Option<Checksum> {
        self.map
            .get(name)
            .filter(|(fid, sum)| fid == id && sum.kind() == kind)
            .map(|e| e.1)
    }

    pub(super) fn put(&mut self, name: &str, id: FileId, sum: Checksum) {
        if self.map.len() >= SUM_CACHE {
            self.map.clear();
        }
        self.map.insert(name.to_string(), (id, sum));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A resume record holds at most [`MAX_RESUME_RANGES`] ranges whatever
    /// the receiver holds (its holes then fit one STATUS), round-trips,
    /// and anything malformed or out of bounds is refused.
    #[test]
    fn resume_records_are_bounded_and_parsed_strictly() {
        let mut rs = RangeSet::new(4096);
        for i in 0..1000u64 {
            // Ranges of growing length: the largest are kept.
            let _ = rs.insert(i * 10_000, i * 10_000 + 100 + i);
        }
        let sum = Checksum::Sha1([7; 20]);
        let info = ResumeInfo::from_received(10_000_000, sum, Some([10, 0, 0, 7].into()), &rs);
        assert_eq!(info.ranges.len(), MAX_RESUME_RANGES);
        assert_eq!(info.ranges[0], (937 * 10_000, 937 * 10_000 + 1037));
        assert!(info.holes().len() <= MAX_WIRE_HOLES);
        assert_eq!(info.holes().last().unwrap().1, 10_000_000);
        let back = ResumeInfo::parse(&info.encode()).unwrap();
        assert_eq!(back, info);
        let crc = ResumeInfo {
            size: 5,
            checksum: Checksum::Crc32(0xdead_beef),
            peer: None,
            ranges: vec![(0, 2), (3, 5)],
        };
        assert_eq!(ResumeInfo::parse(&crc.encode()), Some(crc.clone()));
        let v6 = ResumeInfo {
            peer: Some("::1".parse().unwrap()),
            ..crc.clone()
        };
        assert!(v6.encode().contains("\npeer ::1\n"));
        assert_eq!(ResumeInfo::parse(&v6.encode()), Some(v6.clone()));
        assert_eq!(crc.holes(), vec![(2, 3)]);
        for bad in [
            "",
            "satcc-saratoga-resume 3\nsize 5\nchecksum crc32 deadbeef\npeer -\nranges 0-2\n",
            // Version 1 (no peer): not resumed.
            "satcc-saratoga-resume 1\nsize 5\nchecksum crc32 deadbeef\nranges 0-2\n",
            "satcc-saratoga-resume 2\nsize 5\nchecksum crc32 deadbeef\nranges 0-2\n",
            "satcc-saratoga-resume 2\nsize 5\nchecksum crc32 deadbeef\npeer 10.0.0.300\nranges 0-2\n",
            "satcc-saratoga-resume 2\nsize 5\nchecksum crc32 deadbe\npeer -\nranges 0-2\n",
            "satcc-saratoga-resume 2\nsize 5\nchecksum sha1 deadbeef\npeer -\nranges 0-2\n",
            "satcc-saratoga-resume 2\nsize 5\nchecksum crc32 deadbeef\npeer -\nranges 0-6\n",
            "satcc-saratoga-resume 2\nsize 5\nchecksum crc32 deadbeef\npeer -\nranges 2-2\n",
            "satcc-saratoga-resume 2\nsize 5\nchecksum crc32 deadbeef\npeer -\nranges 2-4 0-1\n",
            "satcc-saratoga-resume 2\nsize 5\nchecksum crc32 deadbeef\npeer -\nranges 0-3 2-4\n",
            "satcc-saratoga-resume 2\nsize x\nchecksum crc32 deadbeef\npeer -\nranges 0-2\n",
            "satcc-saratoga-resume 2\nsize 5\nchecksum crc32 zzzzzzzz\npeer -\nranges 0-2\n",
            "satcc-saratoga-resume 2\nsize 5\nchecksum crc32 deadbeef\npeer -\n",
        ] {
            assert_eq!(ResumeInfo::parse(bad), None, "{bad:?}");
        }
    }

    /// The error types print what the `String`s they replaced said (the
    /// CLI's tests and users read these texts).
    #[test]
    fn error_texts_are_unchanged() {
        let text = |n: &[u8]| check_name(n).unwrap_err().to_string();
        assert_eq!(text(b""), "name: empty");
        assert_eq!(
            text(&[b'a'; 201]),
            format!(
                "name '{}...': 201 bytes, over the limit of 200",
                "a".repeat(60)
            )
        );
        assert_eq!(text(&[b'x', 0xff]), "name 'x\u{fffd}': not UTF-8");
        assert_eq!(text(b".x"), "name '.x': starts with '.'");
        assert_eq!(
            text(b"a\n/b"),
            "name 'a\\n/b': contains '\\n' (one file name, no directories)"
        );
        let tmp = Path::new("d/.f.partial");
        let e = || io::Error::other("boom");
        let cases: Vec<(FileError, &str)> =
            vec![
            (FileError::NotAFileName("d/..".into()), "d/..: not a file name"),
            (
                FileError::Create {
                    path: tmp.into(),
                    source: e(),
                    hint: " (left by an interrupted transfer? remove it)",
                },
                "d/.f.partial: cannot create: boom (left by an interrupted transfer? remove it)",
            ),
            (FileError::io(tmp, "")(e()), "d/.f.partial: boom"),
            (FileError::io(tmp, "write: ")(e()), "d/.f.partial: write: boom"),
            (FileError::io(tmp, "sync: ")(e()), "d/.f.partial: sync: boom"),
            (
                FileError::Mismatch {
                    kind: "sha1",
                    size: 5,
                },
                "sha1 checksum of the 5 bytes received does not match METADATA's",
            ),
            (FileError::Exists("d/f".into()), "d/f: exists"),
            (
                FileError::Rename {
                    path: "d/f".into(),
                    source: e(),
                },
                "d/f: rename: boom",
            ),
        ];
        for (err, want) in cases {
            assert_eq!(err.to_string(), want);
        }
    }
}
