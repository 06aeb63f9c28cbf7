//! Real Saratoga file transfers over UDP: a PUT client ([`put`]), a GET
//! client ([`get`]) and a responder serving a directory
//! ([`SaratogaServer`]), driving the sans-IO endpoints of
//! `satcc_proto::saratoga` with file bytes.
//!
//! The sans-IO messages carry offsets and lengths, never bytes, and name
//! files by a `u64` key. This driver works on the wire frames
//! ([`wire::Repr`]) instead: it puts the real file name in REQUEST and
//! METADATA, reads the file at a DATA frame's offset into its payload when
//! sending, and writes a received payload at its offset into a temporary
//! file *before* handing the frame to the receiver endpoint (so that what
//! the endpoint counts as received is on disk).
//!
//! Integrity: a receiver writes to `.NAME.partial` beside the final name,
//! and renames it only when every byte has arrived and the whole file
//! matches the METADATA checksum (computed by the sender over the file).
//! The temporary file is removed on every failure path (a guard's `Drop`),
//! so no file ever appears half-written under its final name. A checksum
//! mismatch is reported to the sender with a STATUS error
//! ([`wire::error_code::CANT_RECEIVE`]) before the STATUS that would have
//! told it the transfer succeeded.
//!
//! Safety: names are single path components ([`check_name`]); the server
//! limits sizes, sessions per peer IP and sessions in all; frames of an
//! unknown session or from another address are dropped and counted
//! ([`ServerCounters`]); STATUS frames with impossible offsets are
//! rejected by the sans-IO sender; memory per session is bounded by the
//! endpoints' range-set caps. Saratoga has no authentication: anyone who
//! can reach the port can write files into the directory (within the
//! limits), so bind the server to a trusted interface.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use satcc_proto::saratoga::msg::{from_repr, to_repr};
use satcc_proto::saratoga::wire::{
    self, error_code, Checksum, ChecksumType, DescriptorSize, Frame, Repr, RequestType,
};
use satcc_proto::saratoga::{
    RangeSet, RateController, SaraMetadata, SaraRequest, SaratogaConfig, SaratogaReceiver,
    SaratogaSender,
};
use satcc_proto::stfrc::{StfrcConfig, StfrcController};
use satcc_proto::{Duration, Endpoint, Instant, Message};
use serde::Serialize;

use crate::clock::{grow_buffers, Clock, Socket};

pub mod beacon;

/// The Saratoga port (draft §4: 7542).
pub const DEFAULT_PORT: u16 = wire::PORT;

/// Longest file name accepted, in bytes: the temporary name adds 9 bytes
/// and common file systems stop at 255.
pub const MAX_NAME: usize = 200;

/// Transmits taken from an endpoint in one pass (bounds one step's work).
const MAX_BURST: usize = 4_096;

/// Burst credit: send times missed by up to this much after a late
/// wake-up are replayed (as [`crate::ConnConfig::burst`]).
const BURST: Duration = Duration::from_millis(2);

/// Largest datagram read.
const MAX_DATAGRAM: usize = 65_535;

/// Largest DATA payload accepted in configuration (a frame must fit a
/// UDP datagram with the largest header).
pub const MAX_PAYLOAD: u32 = 65_000;

/// How often a client reports progress (and checks for cancellation).
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// The sending rate of a transfer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rate {
    /// A fixed rate in bits per second on the wire (plain Saratoga, for a
    /// dedicated link).
    Fixed(u64),
    /// STFRC (paper 000): TFRC-friendly, for a shared link.
    Stfrc,
}

/// How a transfer runs (client and server side).
#[derive(Clone, Debug, PartialEq)]
pub struct TransferConfig {
    /// Sending rate (for the side that sends).
    pub rate: Rate,
    /// Payload bytes per DATA frame.
    pub payload: u32,
    /// Checksum the sender computes over the file and the receiver
    /// verifies before it renames.
    pub checksum: ChecksumType,
    /// Give up after hearing nothing valid from the peer this long.
    pub inactivity_timeout: Duration,
    /// Refuse files larger than this.
    pub max_size: u64,
    /// Replace an existing file of the same name (else refused).
    pub overwrite: bool,
    /// The sender requests a STATUS every this many DATA frames (and at
    /// least once a second; 0: by time only). The draft leaves the
    /// frequency open (§4.4); on a narrow return path (`dmc`'s 38.4 kb/s)
    /// frequent STATUS frames queue there and delay the last one.
    pub status_every_frames: u32,
}

impl Default for TransferConfig {
    fn default() -> Self {
        TransferConfig {
            rate: Rate::Stfrc,
            payload: 1024,
            checksum: ChecksumType::Sha1,
            inactivity_timeout: Duration::from_secs(30),
            max_size: 10_000_000_000,
            overwrite: false,
            status_every_frames: 100,
        }
    }
}

/// What a finished transfer measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TransferReport {
    /// "put" or "get" (as the client saw it).
    pub direction: &'static str,
    /// File name on the wire.
    pub name: String,
    /// The peer.
    pub peer: String,
    /// File size in bytes.
    pub bytes: u64,
    /// From the first frame sent or received to completion, seconds.
    pub duration_s: f64,
    /// File bytes per second over that time, in bits per second.
    pub goodput_bps: f64,
    /// DATA frames sent (the sending side) or received.
    pub data_frames: u64,
    /// Payload bytes sent again (holes and probes); 0 on the receiving side.
    pub retransmitted_bytes: u64,
    /// Payload bytes sent in DATA frames, retransmissions included (0 on
    /// the receiving side).
    pub sent_bytes: u64,
    /// Bytes the receiver already held from an interrupted transfer of
    /// the same file and said so (a resume offer): not sent again.
    pub resumed_bytes: u64,
    /// STATUS frames received (sending side) or sent (receiving side).
    pub status_frames: u64,
    /// The rate controller's final loss event rate (STFRC), if any.
    pub loss_event_rate: Option<f64>,
    /// Smoothed RTT from timestamp echoes (sending side), seconds.
    pub srtt_s: Option<f64>,
    /// The checksum verified ("sha1", "md5", "crc32" or "none").
    pub checksum: &'static str,
}

/// Why a transfer failed.
#[derive(Debug)]
pub enum TransferError {
    /// A local problem: a file, a name, an argument.
    Local(String),
    /// The peer refused or aborted with a STATUS error code.
    Peer(u8),
    /// Nothing valid heard from the peer for this long.
    Timeout(Duration),
    /// Every byte arrived but the checksum did not match.
    Integrity(String),
    /// The progress callback asked to stop.
    Cancelled,
}

impl std::fmt::Display for TransferError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TransferError::Local(m) => write!(f, "{m}"),
            TransferError::Peer(c) => {
                write!(f, "peer reported STATUS error {c} ({})", error_text(*c))
            }
            TransferError::Timeout(d) => write!(
                f,
                "nothing heard from the peer for {:.1} s (is it running and reachable?)",
                d.as_secs_f64()
            ),
            TransferError::Integrity(m) => write!(f, "integrity check failed: {m}"),
            TransferError::Cancelled => write!(f, "cancelled"),
        }
    }
}

impl std::error::Error for TransferError {}

/// What a STATUS error code means (draft §4.5), with this server's use.
pub fn error_text(code: u8) -> &'static str {
    match code {
        error_code::UNSPECIFIED => "unspecified error",
        error_code::CANT_SEND => "cannot send: the server could not read the file",
        error_code::CANT_RECEIVE => {
            "cannot receive: checksum mismatch, disk error or session limit reached"
        }
        error_code::FILE_NOT_FOUND => "file not found",
        error_code::ACCESS_DENIED => {
            "access denied: name refused or the file exists (serve --overwrite)"
        }
        error_code::UNKNOWN_ID => "unknown session id",
        error_code::FILE_TOO_BIG => "file too big for the server's --max-size",
        error_code::BAD_REQUEST => "request type not supported",
        error_code::FILE_IN_USE => "file in use by another transfer",
        _ => "see draft-wood-tsvwg-saratoga §4.5",
    }
}

/// Progress of a client transfer, reported about every 100 ms.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// Bytes confirmed (PUT: acknowledged by the server; GET: received).
    pub done: u64,
    /// File size, once known.
    pub total: Option<u64>,
    /// Seconds since the transfer started.
    pub elapsed_s: f64,
}

/// Why a file name is refused, if it is: it must be one path component of
/// 1 to [`MAX_NAME`] bytes of UTF-8, without `/`, `\`, NUL or other
/// control characters, and not start with `.` (which rules out `.`, `..`,
/// hidden files and our own `.NAME.partial` temporaries).
pub fn check_name(name: &[u8]) -> Result<&str, String> {
    let shown = String::from_utf8_lossy(&name[..name.len().min(60)]).into_owned();
    if name.is_empty() {
        return Err("name: empty".into());
    }
    if name.len() > MAX_NAME {
        return Err(format!(
            "name '{shown}...': {} bytes, over the limit of {MAX_NAME}",
            name.len()
        ));
    }
    let s = std::str::from_utf8(name).map_err(|_| format!("name '{shown}': not UTF-8"))?;
    if s.starts_with('.') {
        return Err(format!("name '{s}': starts with '.'"));
    }
    if let Some(c) = s.chars().find(|&c| c == '/' || c == '\\' || c.is_control()) {
        return Err(format!(
            "name '{}': contains {c:?} (one file name, no directories)",
            s.escape_debug()
        ));
    }
    Ok(s)
}

fn checksum_name(k: ChecksumType) -> &'static str {
    match k {
        ChecksumType::None => "none",
        ChecksumType::Crc32 => "crc32",
        ChecksumType::Md5 => "md5",
        ChecksumType::Sha1 => "sha1",
    }
}

/// Parses a checksum name: none, crc32, md5 or sha1.
pub fn parse_checksum(s: &str) -> Result<ChecksumType, String> {
    match s.to_ascii_lowercase().as_str() {
        "none" => Ok(ChecksumType::None),
        "crc32" => Ok(ChecksumType::Crc32),
        "md5" => Ok(ChecksumType::Md5),
        "sha1" | "sha-1" => Ok(ChecksumType::Sha1),
        _ => Err(format!(
            "--checksum '{s}': expected none, crc32, md5 or sha1"
        )),
    }
}

/// A checksum computed piece by piece.
enum Hasher {
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
    fn new(kind: ChecksumType) -> Option<Hasher> {
        use md5::Digest as _;
        match kind {
            ChecksumType::None => None,
            ChecksumType::Crc32 => Some(Hasher::Crc(crc32fast::Hasher::new())),
            ChecksumType::Md5 => Some(Hasher::Md5(md5::Md5::new())),
            ChecksumType::Sha1 => Some(Hasher::Sha1(sha1::Sha1::new())),
        }
    }

    fn update(&mut self, b: &[u8]) {
        use md5::Digest as _;
        match self {
            Hasher::Crc(c) => c.update(b),
            Hasher::Md5(m) => m.update(b),
            Hasher::Sha1(s) => s.update(b),
        }
    }

    fn finish(self) -> Checksum {
        use md5::Digest as _;
        match self {
            Hasher::Crc(c) => Checksum::Crc32(c.finalize()),
            Hasher::Md5(m) => Checksum::Md5(m.finalize().into()),
            Hasher::Sha1(s) => Checksum::Sha1(s.finalize().into()),
        }
    }

    /// Feeds bytes `[from, to)` of `f`, read in blocks of `buf`'s size.
    fn feed(&mut self, f: &File, from: u64, to: u64, buf: &mut [u8]) -> io::Result<()> {
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
    let Some(mut h) = Hasher::new(kind) else {
        return Ok(Checksum::None);
    };
    h.feed(f, 0, len, &mut vec![0u8; 1 << 20])?;
    Ok(h.finish())
}

#[cfg(unix)]
fn read_exact_at(f: &File, buf: &mut [u8], off: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(f, buf, off)
}

#[cfg(unix)]
fn write_all_at(f: &File, buf: &[u8], off: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(f, buf, off)
}

/// A temporary file removed on drop unless committed (renamed to its
/// final name): no failure path can leave it, or a partial final file.
#[derive(Debug)]
struct TempFile {
    file: File,
    tmp: PathBuf,
    dest: PathBuf,
    committed: bool,
}

impl TempFile {
    /// Creates `.NAME.partial` beside `dest` exclusively (`O_EXCL`: an
    /// existing file or symlink there is never followed or reused).
    fn create(dest: &Path) -> Result<TempFile, String> {
        let dir = dest.parent().unwrap_or(Path::new("."));
        let name = dest
            .file_name()
            .ok_or_else(|| format!("{}: not a file name", dest.display()))?;
        let tmp = dir.join(format!(".{}.partial", name.to_string_lossy()));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| {
                let hint = if e.kind() == io::ErrorKind::AlreadyExists {
                    " (left by an interrupted transfer? remove it)"
                } else {
                    ""
                };
                format!("{}: cannot create: {e}{hint}", tmp.display())
            })?;
        Ok(TempFile {
            file,
            tmp,
            dest: dest.to_path_buf(),
            committed: false,
        })
    }

    /// Reopens the `.NAME.partial` an interrupted transfer left beside
    /// `dest` (a regular file, never through a symlink), to resume it.
    fn reopen(dest: &Path) -> Option<TempFile> {
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
            tmp,
            dest: dest.to_path_buf(),
            committed: false,
        })
    }

    /// Removes the temporary file now (a failed transfer), and its
    /// resume record if any.
    fn discard(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.tmp);
            if let Some(r) = resume_path(&self.dest) {
                let _ = std::fs::remove_file(r);
            }
            self.committed = true;
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
    fn save_resume(&self, info: &ResumeInfo, sync: bool) -> io::Result<()> {
        let path = resume_path(&self.dest).ok_or_else(|| io::Error::other("no name"))?;
        if sync {
            self.file.sync_data()?;
        }
        let mut tmp = path.clone().into_os_string();
        tmp.push("~");
        let tmp = PathBuf::from(tmp);
        let _ = std::fs::remove_file(&tmp);
        {
            let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
            io::Write::write_all(&mut f, info.encode().as_bytes())?;
        }
        std::fs::rename(&tmp, &path)
    }

    /// Keeps the temporary file and its resume record (written now) for
    /// a later transfer of the same file to resume; nothing is renamed.
    fn suspend(&mut self, info: &ResumeInfo) -> bool {
        if self.committed {
            return false;
        }
        if self.save_resume(info, true).is_err() {
            self.discard();
            return false;
        }
        self.committed = true;
        true
    }

    /// Sets the length, checks the checksum, syncs and renames. `hashed`:
    /// the checksum of the file's first bytes, computed while they
    /// arrived (see [`RecvSide::hash_ahead`]), finished here.
    fn commit(
        &mut self,
        size: u64,
        sum: &Checksum,
        overwrite: bool,
        hashed: Option<(Hasher, u64)>,
    ) -> Result<(), String> {
        self.file
            .set_len(size)
            .map_err(|e| format!("{}: {e}", self.tmp.display()))?;
        let got = match hashed {
            Some((mut h, at)) if h_kind(&h) == sum.kind() && at <= size => h
                .feed(&self.file, at, size, &mut vec![0u8; 1 << 20])
                .map(|()| h.finish()),
            _ => checksum_file(&self.file, size, sum.kind()),
        }
        .map_err(|e| format!("{}: {e}", self.tmp.display()))?;
        if got != *sum {
            return Err(format!(
                "{} checksum of the {size} bytes received does not match METADATA's",
                checksum_name(sum.kind())
            ));
        }
        self.file
            .sync_all()
            .map_err(|e| format!("{}: sync: {e}", self.tmp.display()))?;
        if !overwrite && std::fs::symlink_metadata(&self.dest).is_ok() {
            return Err(format!("{}: exists", self.dest.display()));
        }
        std::fs::rename(&self.tmp, &self.dest)
            .map_err(|e| format!("{}: rename: {e}", self.dest.display()))?;
        self.committed = true;
        if let Some(r) = resume_path(&self.dest) {
            let _ = std::fs::remove_file(r);
        }
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        self.discard();
    }
}

fn h_kind(h: &Hasher) -> ChecksumType {
    match h {
        Hasher::Crc(_) => ChecksumType::Crc32,
        Hasher::Md5(_) => ChecksumType::Md5,
        Hasher::Sha1(_) => ChecksumType::Sha1,
    }
}

/// `.NAME.partial` beside `dest`.
fn partial_path(dest: &Path) -> Option<PathBuf> {
    let name = dest.file_name()?;
    Some(dest.with_file_name(format!(".{}.partial", name.to_string_lossy())))
}

/// `.NAME.resume` beside `dest`: the resume record of `.NAME.partial`.
fn resume_path(dest: &Path) -> Option<PathBuf> {
    let name = dest.file_name()?;
    Some(dest.with_file_name(format!(".{}.resume", name.to_string_lossy())))
}

/// Ranges a resume record keeps at most. A STATUS lists at most
/// [`MAX_WIRE_HOLES`] holes and `k` ranges leave at most `k + 1` holes,
/// so the resume offer always fits one STATUS with a complete list.
const MAX_RESUME_RANGES: usize = MAX_WIRE_HOLES - 1;

/// Bytes of a receiver's prefix hashed at most per pass (about 10 ms of
/// SHA-1): the verification keeps up with the transfer without stalling
/// a server's other sessions for long.
const HASH_AHEAD: u64 = 4 << 20;

/// Smallest piece of the prefix hashed ahead (but the file's last).
const HASH_BLOCK: u64 = 256 << 10;

/// How many times a resume offer is repeated (before STATUS replies).
const RESUME_OFFER_REPEATS: u8 = 8;

/// How often a server records what a PUT in progress holds (each record
/// syncs the temporary file first).
const RESUME_SAVE_EVERY: Duration = Duration::from_millis(500);

/// Largest resume record read.
const MAX_RESUME_RECORD: u64 = 16 * 1024;

/// What a kept `.NAME.partial` holds, as recorded in `.NAME.resume`: the
/// file it is part of (size and checksum, from METADATA) and the byte
/// ranges present. A transfer of the same name, size and checksum
/// resumes from it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ResumeInfo {
    size: u64,
    checksum: Checksum,
    ranges: Vec<(u64, u64)>,
}

impl ResumeInfo {
    /// At most [`MAX_RESUME_RANGES`] of `received`'s ranges: the largest
    /// ones (bytes of the others are simply received again). Bounded
    /// whatever the peer sent.
    fn from_received(size: u64, checksum: Checksum, received: &RangeSet) -> ResumeInfo {
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
            ranges,
        }
    }

    fn held(&self) -> u64 {
        self.ranges.iter().map(|(a, b)| b - a).sum()
    }

    /// What is missing: the gaps of `ranges` in `[0, size)`, in order.
    fn holes(&self) -> Vec<(u64, u64)> {
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

    fn encode(&self) -> String {
        let hex: String = checksum_bytes(&self.checksum)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let mut s = format!(
            "satcc-saratoga-resume 1\nsize {}\nchecksum {} {hex}\nranges",
            self.size,
            checksum_name(self.checksum.kind())
        );
        for (a, b) in &self.ranges {
            s.push_str(&format!(" {a}-{b}"));
        }
        s.push('\n');
        s
    }

    /// Parses a record; `None` for anything not exactly as written by
    /// [`Self::encode`] (ranges in order, disjoint, within the size).
    fn parse(text: &str) -> Option<ResumeInfo> {
        let mut lines = text.lines();
        if lines.next()? != "satcc-saratoga-resume 1" {
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
            ranges,
        })
    }

    /// The record beside `dest`, if there is a valid one.
    fn load(dest: &Path) -> Option<ResumeInfo> {
        let p = resume_path(dest)?;
        let md = std::fs::symlink_metadata(&p).ok()?;
        if !md.file_type().is_file() || md.len() > MAX_RESUME_RECORD {
            return None;
        }
        ResumeInfo::parse(&std::fs::read_to_string(p).ok()?)
    }
}

fn checksum_bytes(c: &Checksum) -> Vec<u8> {
    match c {
        Checksum::None => Vec::new(),
        Checksum::Crc32(x) => x.to_be_bytes().to_vec(),
        Checksum::Md5(x) => x.to_vec(),
        Checksum::Sha1(x) => x.to_vec(),
    }
}

fn checksum_from(kind: ChecksumType, b: &[u8]) -> Option<Checksum> {
    Some(match kind {
        ChecksumType::None if b.is_empty() => Checksum::None,
        ChecksumType::Crc32 => Checksum::Crc32(u32::from_be_bytes(b.try_into().ok()?)),
        ChecksumType::Md5 => Checksum::Md5(b.try_into().ok()?),
        ChecksumType::Sha1 => Checksum::Sha1(b.try_into().ok()?),
        ChecksumType::None => return None,
    })
}

/// The frame of a sans-IO message with the real `name` (REQUEST,
/// METADATA) and, for DATA, the file bytes at its offset, in `out`.
fn encode(msg: &Message, name: &[u8], file: Option<&File>, out: &mut [u8]) -> io::Result<usize> {
    let mut repr = to_repr(msg).ok_or_else(|| io::Error::other("not a Saratoga message"))?;
    match &mut repr {
        Repr::Request(r) => r.name = name.to_vec(),
        Repr::Metadata(m) => m.entry.path = name.to_vec(),
        _ => {}
    }
    let len = repr.buffer_len();
    let hl = repr.header_len();
    let buf = out
        .get_mut(..len)
        .ok_or_else(|| io::Error::other("frame too long"))?;
    repr.emit(&mut Frame::new_unchecked(&mut *buf))
        .map_err(|e| io::Error::other(e.to_string()))?;
    if let Repr::Data(d) = &repr {
        let f = file.ok_or_else(|| io::Error::other("DATA without a file"))?;
        read_exact_at(f, &mut buf[hl..], d.offset)?;
    }
    Ok(len)
}

/// Holes a STATUS frame lists at most on the wire: 64 holes with 64-bit
/// offsets make a 1,064-byte frame, within any path MTU.
const MAX_WIRE_HOLES: usize = 64;

/// Encodes a message of the receiver `r`. A STATUS whose inline hole list
/// the sans-IO message truncated (to 2, with the "incomplete" flag) is
/// sent with up to [`MAX_WIRE_HOLES`] holes from the receiver's current
/// ranges instead: after a burst loss on a long path, 2 holes per round
/// trip would make repair take hundreds of RTTs.
fn encode_status_or(
    m: &Message,
    r: &SaratogaReceiver,
    name: &[u8],
    out: &mut [u8],
) -> io::Result<usize> {
    let Message::SaraStatus(st) = m else {
        return encode(m, name, None, out);
    };
    let Some(Repr::Status(mut w)) = to_repr(m) else {
        return encode(m, name, None, out);
    };
    if st.incomplete() && st.error == 0 {
        let rs = r.received();
        let mut holes: Vec<(u64, u64)> = rs
            .gaps(st.progress, rs.max_end())
            .take(MAX_WIRE_HOLES + 1)
            .collect();
        w.incomplete = holes.len() > MAX_WIRE_HOLES;
        holes.truncate(MAX_WIRE_HOLES);
        w.holes = holes;
    }
    let repr = Repr::Status(w);
    let len = repr.buffer_len();
    let buf = out
        .get_mut(..len)
        .ok_or_else(|| io::Error::other("frame too long"))?;
    repr.emit(&mut Frame::new_unchecked(&mut *buf))
        .map_err(|e| io::Error::other(e.to_string()))?;
    Ok(len)
}

/// Hands a wire STATUS to the sender with its whole hole list (the
/// sans-IO message holds 2 inline; see [`encode_status_or`]).
fn feed_status(sender: &mut SaratogaSender, now: Instant, st: &wire::Status) {
    if let Ok(Message::SaraStatus(mut m)) = from_repr(&Repr::Status(st.clone())) {
        // `from_repr` sets "incomplete" when it truncated the list; the
        // list passed here is whole, so the frame's own flag holds.
        m.set_incomplete(st.incomplete);
        sender.on_status_with_holes(now, &m, &st.holes);
    }
}

/// A STATUS frame carrying an error code (progress 0, no holes: always
/// valid at the sender, which then gives up with that code).
fn error_status(session: u32, code: u8) -> Vec<u8> {
    status_frame(session, code, true)
}

fn status_frame(session: u32, code: u8, metadata_received: bool) -> Vec<u8> {
    Repr::Status(wire::Status {
        // Offsets are all 0: the smallest descriptor, a 12-byte frame.
        descriptor: DescriptorSize::D16,
        session,
        metadata_received,
        incomplete: false,
        voluntary: true,
        error: code,
        timestamp: None,
        progress: 0,
        in_response_to: 0,
        holes: Vec::new(),
    })
    .to_vec()
    .unwrap_or_default()
}

/// The NAME of our own `.NAME.SUFFIX` files (`partial`, `resume` or
/// `resume~`), if `file` is one with a valid NAME.
fn own_file<'a>(file: &'a [u8], suffix: &str) -> Option<&'a str> {
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
fn sweep_partials(dir: &Path, max_resumable: usize) -> (u64, u64) {
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
fn count_resumable(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |rd| {
        rd.flatten()
            .filter(|e| own_file(e.file_name().as_encoded_bytes(), "resume").is_some())
            .count()
    })
}

/// Parses a datagram: the frame and, for DATA, its payload.
fn parse(buf: &[u8]) -> Option<(Repr, &[u8])> {
    let frame = Frame::new_checked(buf).ok()?;
    let repr = Repr::parse(&frame).ok()?;
    let hl = repr.header_len();
    let payload = if matches!(repr, Repr::Data(_)) {
        buf.get(hl..)?
    } else {
        &[]
    };
    Some((repr, payload))
}

/// A session id: not secret (Saratoga has no authentication), just
/// unlikely to collide between runs from the same address.
fn new_session_id() -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let x = t ^ (u64::from(std::process::id()) << 32) ^ 0x9e37_79b9_7f4a_7c15;
    // splitmix64 finaliser.
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) as u32
}

fn sara_config(cfg: &TransferConfig, session: u32, checksum: Checksum) -> SaratogaConfig {
    SaratogaConfig {
        session,
        payload: cfg.payload.clamp(1, MAX_PAYLOAD),
        checksum,
        inactivity_timeout: cfg.inactivity_timeout,
        status_every_frames: cfg.status_every_frames,
        ..SaratogaConfig::default()
    }
}

/// The sending endpoint for a file of `size` bytes in `session`.
///
/// Built as a GET responder and started with a synthetic REQUEST for
/// both directions: a PUT sender starts on `offer(size)`, which ignores
/// a size of 0, so an empty file could not be sent that way.
fn make_sender(
    cfg: &TransferConfig,
    session: u32,
    size: u64,
    checksum: Checksum,
    now: Instant,
) -> SaratogaSender {
    let sc = sara_config(cfg, session, checksum);
    let rc: Box<dyn RateController> = match cfg.rate {
        Rate::Fixed(bps) => Box::new(satcc_proto::saratoga::FixedRate::new(bps)),
        Rate::Stfrc => {
            let d = DescriptorSize::smallest_for(size).bytes() as u32;
            Box::new(StfrcController::new(
                StfrcConfig {
                    // The equation's s: a full DATA frame on the wire
                    // (payload, Saratoga header, IPv4 + UDP).
                    segment_size: sc.payload + 8 + d + 28,
                    // Bounded history per session (memory on a server).
                    max_history: 1 << 16,
                    ..StfrcConfig::default()
                },
                now,
            ))
        }
    };
    let mut s = SaratogaSender::get_responder(sc, rc, 0, size, now);
    s.handle_input(
        now,
        &Message::SaraRequest(SaraRequest {
            session,
            descriptor: DescriptorSize::D64,
            kind: RequestType::Get,
            name: 0,
        }),
    );
    s
}

/// A sender endpoint with its file.
#[derive(Debug)]
struct SendSide {
    sender: SaratogaSender,
    file: File,
    name: Vec<u8>,
    size: u64,
    checksum: Checksum,
    retx_bytes: u64,
    data_frames: u64,
    /// Payload bytes sent.
    sent_bytes: u64,
    /// After a resume offer: holes beyond what had been sent, whose
    /// first transmission is not a retransmission.
    fresh: RangeSet,
    last_passed: Instant,
    /// Empty file: the sans-IO sender does not repeat a lost METADATA when
    /// there is no DATA to request a STATUS with, so the driver does.
    meta_retry: Option<Instant>,
    error: Option<String>,
}

impl SendSide {
    fn send_one(&mut self, t: Instant, sock: &Socket, to: SocketAddr, out: &mut [u8]) -> bool {
        let before = self.sender.sent_end();
        let Some(m) = self.sender.poll_message(t) else {
            return false;
        };
        if let Message::SaraData(d) = &m {
            self.data_frames += 1;
            self.sent_bytes += u64::from(d.len);
            let end = d.offset + u64::from(d.len);
            if d.offset < before {
                if self.fresh.contains(d.offset, end) {
                    self.fresh.remove(d.offset, end);
                } else {
                    self.retx_bytes += u64::from(d.len);
                }
            }
        }
        match encode(&m, &self.name, Some(&self.file), out) {
            Ok(n) => {
                // A full socket buffer loses the frame, as a full queue
                // would: Saratoga repairs it.
                let _ = sock.send_to(&out[..n], to);
            }
            Err(e) => self.error = Some(format!("reading the file: {e}")),
        }
        true
    }

    /// Sends what is due at `now`, replaying send times missed by a late
    /// wake-up (up to [`BURST`]), and fires timers.
    fn pump(&mut self, now: Instant, sock: &Socket, to: SocketAddr, out: &mut [u8]) {
        let floor = Instant(now.as_nanos().saturating_sub(BURST.as_nanos())).max(self.last_passed);
        for _ in 0..MAX_BURST {
            let Some(due) = self.sender.poll_timeout() else {
                break;
            };
            if due >= now {
                break;
            }
            let t = due.max(floor);
            if !self.send_one(t, sock, to, out) {
                break;
            }
            self.last_passed = t;
        }
        self.last_passed = now;
        if self.sender.poll_timeout().is_some_and(|t| t <= now) {
            self.sender.handle_timeout(now);
        }
        for _ in 0..MAX_BURST {
            if !self.send_one(now, sock, to, out) {
                break;
            }
        }
        // The sender queues an event per acknowledging STATUS; nothing
        // here reads them, and undrained they would grow with the file.
        while self.sender.poll_event().is_some() {}
        if self.size == 0 && self.sender.sender_stats().status_received == 0 {
            match self.meta_retry {
                None => self.meta_retry = Some(now + Duration::from_secs(1)),
                Some(t) if now >= t => {
                    let m = Message::SaraMetadata(SaraMetadata {
                        session: self.sender.session(),
                        descriptor: DescriptorSize::D16,
                        file_size: 0,
                        checksum: self.checksum,
                        name: 0,
                    });
                    if let Ok(n) = encode(&m, &self.name, None, out) {
                        let _ = sock.send_to(&out[..n], to);
                    }
                    self.meta_retry = Some(now + Duration::from_secs(1));
                }
                Some(_) => {}
            }
        }
    }

    /// A STATUS for a PUT: a resume offer if it is one
    /// ([`SaratogaSender::try_resume`]), else an ordinary STATUS.
    fn on_status(&mut self, now: Instant, st: &wire::Status) {
        let old = self.sender.sent_end();
        if let Ok(Message::SaraStatus(mut m)) = from_repr(&Repr::Status(st.clone())) {
            m.set_incomplete(st.incomplete);
            if self.sender.try_resume(now, &m, &st.holes) {
                for &(a, b) in &st.holes {
                    let _ = self.fresh.insert(a.max(old), b);
                }
                return;
            }
        }
        feed_status(&mut self.sender, now, st);
    }

    fn next_wake(&self) -> Option<Instant> {
        let t = self.sender.poll_timeout();
        match (t, self.meta_retry) {
            (Some(a), Some(b)) if self.size == 0 => Some(a.min(b)),
            (None, Some(b)) if self.size == 0 => Some(b),
            _ => t,
        }
    }

    /// Confirmed by the receiver (a STATUS saying all is there).
    fn done(&self) -> bool {
        self.sender.is_complete() && self.sender.sender_stats().status_received > 0
    }

    fn report(&self, direction: &'static str, peer: SocketAddr, secs: f64) -> TransferReport {
        let st = self.sender.sender_stats();
        let es = self.sender.stats();
        TransferReport {
            direction,
            name: String::from_utf8_lossy(&self.name).into_owned(),
            peer: peer.to_string(),
            bytes: self.size,
            duration_s: secs,
            goodput_bps: rate(self.size, secs),
            data_frames: self.data_frames,
            retransmitted_bytes: self.retx_bytes,
            sent_bytes: self.sent_bytes,
            resumed_bytes: st.resumed_bytes,
            status_frames: st.status_received,
            loss_event_rate: es.rate.map(|r| r.p),
            srtt_s: st.srtt.map(|d| d.as_secs_f64()),
            checksum: checksum_name(self.checksum.kind()),
        }
    }
}

fn rate(bytes: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 * 8.0 / secs
    } else {
        0.0
    }
}

/// A receiver endpoint writing into a temporary file.
#[derive(Debug)]
struct RecvSide {
    receiver: SaratogaReceiver,
    session: u32,
    temp: TempFile,
    /// Size and checksum from METADATA.
    meta: Option<(u64, Checksum)>,
    max_size: u64,
    overwrite: bool,
    data_frames: u64,
    /// Set once complete: Ok after the rename, Err why not.
    result: Option<Result<(), String>>,
    /// Keep a resume record while receiving, and the temporary file when
    /// the peer goes silent (a server's PUT).
    keep: bool,
    /// When the resume record was last written, and the bytes it held.
    last_saved: Option<Instant>,
    saved_held: u64,
    /// Bytes restored from an interrupted transfer.
    resumed_bytes: u64,
    /// Failed in a way a later transfer may resume from (the peer went
    /// silent, the server stopped), not a checksum or disk failure.
    resumable_fail: bool,
    /// Resume offers still to repeat (see [`SaratogaServer`]).
    offer: Option<(u8, Vec<u8>)>,
    /// The checksum of the file's contiguous prefix `[0, n)`, computed as
    /// it arrives, with `n`; bytes below `n` are never written again.
    hash: Option<(Hasher, u64)>,
}

impl RecvSide {
    fn on_metadata(&mut self, now: Instant, m: &wire::Metadata) -> Result<(), u8> {
        if m.entry.size > self.max_size {
            return Err(error_code::FILE_TOO_BIG);
        }
        if self
            .meta
            .is_some_and(|(s, c)| s != m.entry.size || c != m.checksum)
        {
            // A METADATA that changes the file mid-transfer: ignored.
            return Ok(());
        }
        if let Ok(msg) = metadata_message(m) {
            let before = self.receiver.receiver_stats().metadata_received;
            self.receiver.handle_input(now, &msg);
            // Only a METADATA the endpoint accepted (not smaller than the
            // data already received, within its descriptor) sets what the
            // file is verified against.
            if self.receiver.receiver_stats().metadata_received > before {
                if self.meta.is_none() {
                    self.hash = Hasher::new(m.checksum.kind()).map(|h| (h, 0));
                }
                self.meta = Some((m.entry.size, m.checksum));
            }
        }
        Ok(())
    }

    /// Writes the payload, then hands the frame to the endpoint.
    fn on_data(&mut self, now: Instant, d: &wire::Data, payload: &[u8]) -> Result<(), String> {
        let Some(end) = d.offset.checked_add(payload.len() as u64) else {
            return Ok(());
        };
        let limit = self.meta.map_or(self.max_size, |m| m.0);
        if end > limit || payload.len() != d.payload_len {
            return Ok(()); // the endpoint rejects and counts it too
        }
        // Bytes already hashed stay as they were hashed: a later
        // duplicate (or a forged DATA) cannot change what is verified.
        let hashed = self.hash.as_ref().map_or(0, |h| h.1);
        if self.result.is_none() && end > hashed {
            let skip = hashed.saturating_sub(d.offset) as usize;
            write_all_at(&self.temp.file, &payload[skip..], d.offset + skip as u64)
                .map_err(|e| format!("{}: write: {e}", self.temp.tmp.display()))?;
        }
        if let Ok(msg) = from_repr(&Repr::Data(*d)) {
            self.data_frames += 1;
            self.receiver.handle_input(now, &msg);
        }
        Ok(())
    }

    /// What a resume record would say now: `None` without a checksum (it
    /// is what tells a retried transfer of the same file from another).
    fn resume_info(&self) -> Option<ResumeInfo> {
        let (size, sum) = self.meta?;
        if matches!(sum, Checksum::None) {
            return None;
        }
        Some(ResumeInfo::from_received(
            size,
            sum,
            self.receiver.received(),
        ))
    }

    /// Rewrites the resume record every [`RESUME_SAVE_EVERY`] while bytes
    /// arrive.
    fn maybe_save(&mut self, now: Instant) {
        if !self.keep || self.result.is_some() {
            return;
        }
        if self
            .last_saved
            .is_some_and(|t| now.saturating_since(t) < RESUME_SAVE_EVERY)
        {
            return;
        }
        self.last_saved = Some(now);
        let Some(info) = self.resume_info() else {
            return;
        };
        let held = info.held();
        if held != self.saved_held && self.temp.save_resume(&info, false).is_ok() {
            self.saved_held = held;
        }
    }

    /// Keeps the temporary file and a resume record, if there is
    /// something worth resuming; else (or on any error) removes it.
    fn suspend_or_discard(&mut self, allowed: bool) -> bool {
        match self.resume_info().filter(|i| i.held() > 0) {
            Some(info) if allowed && self.keep && self.result.is_none() => self.temp.suspend(&info),
            _ => {
                self.temp.discard();
                false
            }
        }
    }

    /// Hashes up to `budget` more bytes of the contiguous prefix
    /// received, so that the verification at the end has little left to
    /// read (a large file's checksum would otherwise stall a server's
    /// other sessions, and delay the confirmation, at the end).
    fn hash_ahead(&mut self, budget: u64) {
        let Some((size, _)) = self.meta else {
            return;
        };
        let prefix = self.receiver.received().prefix_end().min(size);
        let Some((h, at)) = &mut self.hash else {
            return;
        };
        // Not a read per frame: wait for a block, or the end.
        if *at >= prefix || (prefix - *at < HASH_BLOCK && prefix < size) {
            return;
        }
        let to = prefix.min(at.saturating_add(budget));
        let mut buf = vec![0u8; (to - *at).min(1 << 20) as usize];
        if h.feed(&self.temp.file, *at, to, &mut buf).is_ok() {
            *at = to;
        } else {
            // Verified from scratch at the end instead.
            self.hash = None;
        }
    }

    /// Once every byte is there and METADATA seen: verify and rename.
    fn try_commit(&mut self) -> Option<&Result<(), String>> {
        if self.result.is_none() && self.receiver.is_complete() {
            if let Some((size, sum)) = self.meta {
                let hashed = self.hash.take();
                self.result = Some(self.temp.commit(size, &sum, self.overwrite, hashed));
            }
        }
        self.result.as_ref()
    }
}

fn metadata_message(m: &wire::Metadata) -> Result<Message, ()> {
    Ok(Message::SaraMetadata(SaraMetadata {
        session: m.session,
        descriptor: m.descriptor,
        file_size: m.entry.size,
        checksum: m.checksum,
        name: 0,
    }))
}

fn client_socket(server: SocketAddr) -> Result<Socket, TransferError> {
    let bind = crate::client_bind_addr(server);
    let s = UdpSocket::bind(bind).map_err(|e| TransferError::Local(format!("bind {bind}: {e}")))?;
    grow_buffers(&s, 4 << 20);
    Ok(Socket::new(s))
}

/// Sends `path` to the server at `server` as `name` (a Saratoga PUT),
/// calling `progress` about every 100 ms (return `false` to give up).
/// Returns when the server has confirmed every byte (after verifying the
/// checksum and renaming the file into place).
pub fn put(
    path: &Path,
    server: SocketAddr,
    name: &str,
    cfg: &TransferConfig,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<TransferReport, TransferError> {
    check_name(name.as_bytes()).map_err(TransferError::Local)?;
    let file =
        File::open(path).map_err(|e| TransferError::Local(format!("{}: {e}", path.display())))?;
    let md = file
        .metadata()
        .map_err(|e| TransferError::Local(format!("{}: {e}", path.display())))?;
    if !md.is_file() {
        return Err(TransferError::Local(format!(
            "{}: not a regular file",
            path.display()
        )));
    }
    let size = md.len();
    let checksum = checksum_file(&file, size, cfg.checksum)
        .map_err(|e| TransferError::Local(format!("{}: {e}", path.display())))?;
    let mut sock = client_socket(server)?;
    let clock = Clock::new();
    let start = clock.now();
    let session = new_session_id();
    let mut side = SendSide {
        sender: make_sender(cfg, session, size, checksum, start),
        file,
        name: name.as_bytes().to_vec(),
        size,
        checksum,
        retx_bytes: 0,
        data_frames: 0,
        sent_bytes: 0,
        fresh: RangeSet::new(2 * MAX_WIRE_HOLES),
        last_passed: start,
        meta_retry: None,
        error: None,
    };
    let mut out = vec![0u8; MAX_DATAGRAM + 64];
    let mut inbuf = vec![0u8; MAX_DATAGRAM + 1];
    let mut next_progress = start;
    let mut last_heard = start;
    // Bounded: every pass waits for a datagram or a deadline, and the
    // inactivity timeout ends a transfer that hears nothing valid.
    loop {
        let now = clock.now();
        side.pump(now, &sock, server, &mut out);
        if let Some(e) = side.error.take() {
            return Err(TransferError::Local(format!("{}: {e}", path.display())));
        }
        if side.done() {
            let secs = (clock.now() - start).as_secs_f64();
            return Ok(side.report("put", server, secs));
        }
        match side.sender.failure() {
            Some(satcc_proto::saratoga::Failure::PeerError(c)) => {
                return Err(TransferError::Peer(c))
            }
            Some(_) => return Err(TransferError::Timeout(now.saturating_since(last_heard))),
            None => {}
        }
        if size == 0 && now.saturating_since(last_heard) >= cfg.inactivity_timeout {
            return Err(TransferError::Timeout(now.saturating_since(last_heard)));
        }
        if now >= next_progress {
            let p = Progress {
                done: side.sender.sender_stats().acked_bytes,
                total: Some(size),
                elapsed_s: (now - start).as_secs_f64(),
            };
            if !progress(&p) {
                return Err(TransferError::Cancelled);
            }
            next_progress = now + PROGRESS_EVERY;
        }
        let deadline = side
            .next_wake()
            .map_or(next_progress, |t| t.min(next_progress));
        let got = sock
            .recv_until(&clock, &mut inbuf, deadline)
            .map_err(|e| TransferError::Local(format!("receive: {e}")))?;
        let Some((n, from)) = got else { continue };
        if from != server {
            continue;
        }
        let now = clock.now();
        if let Some((Repr::Status(s), _)) = parse(&inbuf[..n]) {
            if s.session != session {
                continue;
            }
            if s.error != 0 {
                return Err(TransferError::Peer(s.error));
            }
            let before = side.sender.sender_stats().status_received;
            side.on_status(now, &s);
            if side.sender.sender_stats().status_received > before {
                last_heard = now;
            }
        }
    }
}

/// Fetches `name` from the server at `server` into `dest` (a Saratoga
/// GET): written to `.DEST.partial`, renamed to `dest` once complete and
/// verified. `progress` as for [`put`].
pub fn get(
    server: SocketAddr,
    name: &str,
    dest: &Path,
    cfg: &TransferConfig,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<TransferReport, TransferError> {
    check_name(name.as_bytes()).map_err(TransferError::Local)?;
    if !cfg.overwrite && std::fs::symlink_metadata(dest).is_ok() {
        return Err(TransferError::Local(format!(
            "{}: exists (--overwrite to replace it)",
            dest.display()
        )));
    }
    let temp = TempFile::create(dest).map_err(TransferError::Local)?;
    let mut sock = client_socket(server)?;
    let clock = Clock::new();
    let start = clock.now();
    let session = new_session_id();
    let mut side = RecvSide {
        receiver: SaratogaReceiver::get(sara_config(cfg, session, Checksum::None), 0, start),
        session,
        temp,
        meta: None,
        max_size: cfg.max_size,
        overwrite: cfg.overwrite,
        data_frames: 0,
        result: None,
        keep: false,
        last_saved: None,
        saved_held: 0,
        resumed_bytes: 0,
        resumable_fail: false,
        offer: None,
        hash: None,
    };
    let name_b = name.as_bytes().to_vec();
    let mut out = vec![0u8; MAX_DATAGRAM + 64];
    let mut inbuf = vec![0u8; MAX_DATAGRAM + 1];
    let mut next_progress = start;
    let mut finished: Option<Instant> = None;
    let mut last_rx = start;
    loop {
        let now = clock.now();
        if side.receiver.poll_timeout().is_some_and(|t| t <= now) {
            side.receiver.handle_timeout(now);
        }
        for _ in 0..MAX_BURST {
            let Some(m) = side.receiver.poll_message(now) else {
                break;
            };
            if let Ok(n) = encode_status_or(&m, &side.receiver, &name_b, &mut out) {
                let _ = sock.send_to(&out[..n], server);
            }
        }
        if side.receiver.failure().is_some() {
            return Err(TransferError::Timeout(now.saturating_since(last_rx)));
        }
        if let Some(t) = finished {
            // Linger briefly to answer the server's last STATUS requests
            // (a lost final STATUS would leave it probing).
            if now.saturating_since(last_rx) >= Duration::from_millis(300)
                || now.saturating_since(t) >= Duration::from_secs(3)
            {
                let secs = (t - start).as_secs_f64();
                let (size, sum) = side.meta.unwrap_or((0, Checksum::None));
                let st = side.receiver.receiver_stats();
                return Ok(TransferReport {
                    direction: "get",
                    name: name.to_string(),
                    peer: server.to_string(),
                    bytes: size,
                    duration_s: secs,
                    goodput_bps: rate(size, secs),
                    data_frames: side.data_frames,
                    retransmitted_bytes: 0,
                    sent_bytes: 0,
                    resumed_bytes: 0,
                    status_frames: st.status_sent,
                    loss_event_rate: None,
                    srtt_s: None,
                    checksum: checksum_name(sum.kind()),
                });
            }
        } else if now.saturating_since(last_rx) >= cfg.inactivity_timeout {
            return Err(TransferError::Timeout(now.saturating_since(last_rx)));
        }
        if finished.is_none() && now >= next_progress {
            let p = Progress {
                done: side.receiver.received().prefix_end(),
                total: side.meta.map(|m| m.0),
                elapsed_s: (now - start).as_secs_f64(),
            };
            if !progress(&p) {
                return Err(TransferError::Cancelled);
            }
            next_progress = now + PROGRESS_EVERY;
        }
        let mut deadline = now + PROGRESS_EVERY;
        if let Some(t) = side.receiver.poll_timeout() {
            deadline = deadline.min(t);
        }
        let got = sock
            .recv_until(&clock, &mut inbuf, deadline)
            .map_err(|e| TransferError::Local(format!("receive: {e}")))?;
        let Some((n, from)) = got else { continue };
        if from != server {
            continue;
        }
        let now = clock.now();
        let Some((repr, payload)) = parse(&inbuf[..n]) else {
            continue;
        };
        match &repr {
            Repr::Status(s) if s.session == session && s.error != 0 => {
                return Err(TransferError::Peer(s.error));
            }
            Repr::Metadata(m) if m.session == session => {
                last_rx = now;
                if let Err(code) = side.on_metadata(now, m) {
                    let _ = sock.send_to(&error_status(session, code), server);
                    return Err(TransferError::Local(format!(
                        "{name}: {} bytes, over --max-size {}",
                        m.entry.size, cfg.max_size
                    )));
                }
            }
            Repr::Data(d) if d.session == session => {
                last_rx = now;
                side.on_data(now, d, payload)
                    .map_err(TransferError::Local)?;
                side.hash_ahead(HASH_AHEAD);
            }
            _ => continue,
        }
        if finished.is_none() {
            match side.try_commit() {
                Some(Ok(())) => finished = Some(now),
                Some(Err(e)) => {
                    let e = e.clone();
                    let _ = sock.send_to(&error_status(session, error_code::CANT_RECEIVE), server);
                    return Err(TransferError::Integrity(e));
                }
                None => {}
            }
        }
    }
}

/// How a [`SaratogaServer`] runs.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// The directory PUTs land in and GETs are served from.
    pub dir: PathBuf,
    /// Rate, payload, checksum (of files served), size limit, timeouts.
    pub transfer: TransferConfig,
    /// Sessions in progress at once, all peers together.
    pub max_sessions: usize,
    /// Sessions in progress at once from one IP address.
    pub max_sessions_per_peer: usize,
    /// How long a finished session is kept to answer late frames (a
    /// client whose final STATUS was lost probes again).
    pub linger: Duration,
    /// Interrupted PUTs kept for resuming (`.NAME.partial` with its
    /// `.NAME.resume` record) at most; 0 disables resuming (every failure
    /// removes its temporary file, as does a server restart).
    pub max_resumable: usize,
    /// Send a BEACON (§4.1) from the server's socket to this address
    /// (unicast or broadcast) every so often: willing to send and
    /// receive, the directory's free space, `eid`.
    pub announce: Option<(SocketAddr, Duration)>,
    /// The endpoint identifier announced.
    pub eid: String,
}

impl ServeConfig {
    /// Serving `dir` with default limits: 64 sessions, 8 per peer.
    pub fn new(dir: PathBuf) -> ServeConfig {
        ServeConfig {
            dir,
            transfer: TransferConfig::default(),
            max_sessions: 64,
            max_sessions_per_peer: 8,
            linger: Duration::from_secs(10),
            max_resumable: 32,
            announce: None,
            eid: "satcc".into(),
        }
    }
}

/// What a server counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ServerCounters {
    /// Datagrams received.
    pub datagrams: u64,
    /// Datagrams that did not parse as Saratoga frames.
    pub malformed: u64,
    /// Frames of no session known for their address (and session id).
    pub unknown_session: u64,
    /// Sessions refused (name, size, limits, existing file).
    pub refused: u64,
    /// Transfers completed (PUTs verified and renamed, GETs confirmed).
    pub completed: u64,
    /// Transfers failed (timeout, checksum, disk).
    pub failed: u64,
    /// Stale `.NAME.partial` files (of a server killed mid-transfer)
    /// removed at start: those without a valid resume record, or beyond
    /// [`ServeConfig::max_resumable`].
    pub stale_removed: u64,
    /// STATUS frames of a GET's client rejected as impossible (offsets
    /// or holes beyond what was sent, out of order, ...; never trusted).
    pub status_rejected: u64,
    /// Largest number of sessions held at once (in progress and
    /// finished, kept to answer late frames): bounded by the limits.
    pub sessions_peak: u64,
    /// GETs whose file's checksum was computed in a worker thread (files
    /// over 4 MB not in the checksum cache).
    pub checksums_offloaded: u64,
    /// BEACON frames received (peers announcing themselves; no reply).
    pub beacons_received: u64,
    /// BEACON frames sent (`ServeConfig::announce`).
    pub beacons_sent: u64,
    /// Interrupted PUTs found at start with a resume record, kept.
    pub resumable_found: u64,
    /// PUTs resumed from an interrupted transfer's bytes.
    pub resumed: u64,
    /// Resume offers sent (voluntary STATUS frames listing what a resumed
    /// PUT lacks).
    pub resume_offers: u64,
}

/// A finished session, as a server reports it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SessionReport {
    /// "put" (the peer sent a file) or "get" (the peer fetched one).
    pub kind: &'static str,
    /// The peer.
    pub peer: String,
    /// Session id.
    pub session: u32,
    /// File name.
    pub name: String,
    /// Whether it succeeded.
    pub ok: bool,
    /// Why not, if not.
    pub error: Option<String>,
    /// Bytes of the file.
    pub bytes: u64,
    /// Bytes a PUT resumed from (held from an interrupted transfer).
    pub resumed_bytes: u64,
    /// Seconds from the session's first frame to its end.
    pub duration_s: f64,
    /// Goodput, bits per second.
    pub goodput_bps: f64,
}

#[derive(Debug)]
enum Side {
    Put(Box<RecvSide>),
    Get(Box<SendSide>),
    /// A GET whose file's checksum a worker thread computes first.
    Preparing(Box<Preparing>),
}

/// A GET waiting for its file's checksum: computed in a thread of its
/// own, so that a large file (SHA-1 runs at a few hundred MB/s) does not
/// stall the server's other sessions.
#[derive(Debug)]
struct Preparing {
    file: Option<File>,
    name: Vec<u8>,
    size: u64,
    id: FileId,
    rx: std::sync::mpsc::Receiver<io::Result<Checksum>>,
}

/// Files up to this size are checksummed in the server's thread (a few
/// milliseconds); larger ones in a worker.
const INLINE_SUM: u64 = 4 << 20;

/// Checksum workers at once; a GET beyond is refused (the client repeats
/// its REQUEST and gets in later).
const MAX_SUM_WORKERS: usize = 4;

/// The sending side of a GET of `file` (`size` bytes, `checksum`).
fn get_side(
    cfg: &TransferConfig,
    session: u32,
    file: File,
    name: Vec<u8>,
    size: u64,
    checksum: Checksum,
    now: Instant,
) -> SendSide {
    SendSide {
        sender: make_sender(cfg, session, size, checksum, now),
        file,
        name,
        size,
        checksum,
        retx_bytes: 0,
        data_frames: 0,
        sent_bytes: 0,
        fresh: RangeSet::new(2 * MAX_WIRE_HOLES),
        last_passed: now,
        meta_retry: None,
        error: None,
    }
}

#[derive(Debug)]
struct Session {
    side: Side,
    name: String,
    started: Instant,
    last_heard: Instant,
    /// Finished (reported) at; kept until `linger` has passed.
    ended: Option<Instant>,
    /// How it ended: `Err((STATUS error code or 0, why))`.
    outcome: Outcome,
}

/// A Saratoga responder: accepts PUTs into a directory and serves GETs
/// from it, many sessions at once on one socket.
#[derive(Debug)]
pub struct SaratogaServer {
    sock: Socket,
    cfg: ServeConfig,
    clock: Clock,
    sessions: HashMap<(SocketAddr, u32), Session>,
    counters: ServerCounters,
    /// Length of the datagram being handled: an unsolicited reply (a
    /// refusal, a request for METADATA) is sent only if at most twice as
    /// long, so a spoofed source address gains no useful amplification
    /// (the smallest REQUEST is 9 bytes, a refusal 12).
    in_len: usize,
    /// Checksums of files served, so that repeated GETs (or a peer
    /// sending REQUESTs with fresh session ids) do not re-read a large
    /// file in the server's only thread each time.
    sums: SumCache,
}

/// Checksums of served files, keyed by name and valid while the file's
/// identity (device, inode), size and modification time are unchanged.
#[derive(Debug, Default)]
struct SumCache {
    map: HashMap<String, (FileId, Checksum)>,
}

/// What identifies a file's content for [`SumCache`].
type FileId = (u64, u64, u64, Option<std::time::SystemTime>);

/// Files whose checksum is remembered (the cache is emptied beyond:
/// bounded memory).
const SUM_CACHE: usize = 1024;

/// What identifies `file`'s content (`size` bytes) for [`SumCache`].
fn file_id(file: &File, size: u64) -> Option<FileId> {
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
    fn get(&self, name: &str, id: &FileId, kind: ChecksumType) -> Option<Checksum> {
        self.map
            .get(name)
            .filter(|(fid, sum)| fid == id && sum.kind() == kind)
            .map(|e| e.1)
    }

    fn put(&mut self, name: &str, id: FileId, sum: Checksum) {
        if self.map.len() >= SUM_CACHE {
            self.map.clear();
        }
        self.map.insert(name.to_string(), (id, sum));
    }
}

impl SaratogaServer {
    /// Binds `addr` to serve `cfg.dir` (which must be a directory).
    pub fn bind(addr: SocketAddr, mut cfg: ServeConfig) -> io::Result<SaratogaServer> {
        let dir = cfg
            .dir
            .canonicalize()
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", cfg.dir.display())))?;
        if !dir.is_dir() {
            return Err(io::Error::other(format!(
                "{}: not a directory",
                dir.display()
            )));
        }
        let (stale_removed, resumable_found) = sweep_partials(&dir, cfg.max_resumable);
        cfg.dir = dir;
        let s = UdpSocket::bind(addr)?;
        grow_buffers(&s, 8 << 20);
        if cfg.announce.is_some() {
            // Announcing to a broadcast address needs it.
            s.set_broadcast(true)?;
        }
        Ok(SaratogaServer {
            sock: Socket::new(s),
            cfg,
            clock: Clock::new(),
            sessions: HashMap::new(),
            counters: ServerCounters {
                stale_removed,
                resumable_found,
                ..ServerCounters::default()
            },
            in_len: 0,
            sums: SumCache::default(),
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.local_addr()
    }

    /// The counters so far.
    pub fn counters(&self) -> ServerCounters {
        self.counters
    }

    /// Serves until `stop` is set (checked at least every 50 ms), calling
    /// `report` for each finished session. On stop, transfers in progress
    /// are abandoned and their temporary files removed.
    pub fn run(
        &mut self,
        stop: &AtomicBool,
        report: &mut dyn FnMut(&SessionReport),
    ) -> io::Result<()> {
        let mut out = vec![0u8; MAX_DATAGRAM + 64];
        let mut inbuf = vec![0u8; MAX_DATAGRAM + 1];
        let mut next_beacon = self.clock.now();
        while !stop.load(Ordering::Relaxed) {
            let now = self.clock.now();
            if let Some((to, every)) = self.cfg.announce {
                if now >= next_beacon {
                    let free = beacon::free_space_kb(&self.cfg.dir);
                    let b = beacon::beacon_frame(
                        &self.cfg.eid,
                        free,
                        beacon::WILLING_YES,
                        beacon::WILLING_YES,
                    );
                    if self.sock.send_to(&b, to).is_ok() {
                        self.counters.beacons_sent += 1;
                    }
                    next_beacon = now + every;
                }
            }
            self.step(now, &mut out, report);
            let mut deadline = now + Duration::from_millis(50);
            for s in self.sessions.values() {
                let t = match &s.side {
                    Side::Put(r) if s.ended.is_none() => r.receiver.poll_timeout(),
                    Side::Get(g) if s.ended.is_none() => g.next_wake(),
                    _ => None,
                };
                if let Some(t) = t {
                    deadline = deadline.min(t);
                }
            }
            if let Some((n, from)) = self.sock.recv_until(&self.clock, &mut inbuf, deadline)? {
                self.counters.datagrams += 1;
                let now = self.clock.now();
                self.on_datagram(now, from, &inbuf[..n]);
                self.step(now, &mut out, report);
            }
        }
        let now = self.clock.now();
        for ((peer, id), mut s) in self.sessions.drain() {
            if s.ended.is_none() {
                if let Side::Put(r) = &mut s.side {
                    // A stopped server's PUTs may be resumed after restart.
                    let room = count_resumable(&self.cfg.dir) < self.cfg.max_resumable;
                    r.suspend_or_discard(room);
                }
                self.counters.failed += 1;
                report(&session_report(
                    &s,
                    peer,
                    id,
                    now,
                    Err("server stopped".into()),
                ));
            }
        }
        Ok(())
    }

    fn send(&self, buf: &[u8], to: SocketAddr) {
        let _ = self.sock.send_to(buf, to);
    }

    fn refuse(&mut self, peer: SocketAddr, session: u32, code: u8) {
        self.counters.refused += 1;
        self.reply(&error_status(session, code), peer);
    }

    /// An unsolicited reply, sent only if at most twice what came in.
    fn reply(&self, buf: &[u8], to: SocketAddr) {
        if buf.len() <= 2 * self.in_len {
            self.send(buf, to);
        }
    }

    fn active_from(&self, ip: IpAddr) -> usize {
        self.sessions
            .iter()
            .filter(|(k, s)| k.0.ip() == ip && s.ended.is_none())
            .count()
    }

    fn active(&self) -> usize {
        self.sessions.values().filter(|s| s.ended.is_none()).count()
    }

    /// Whether a new session from `peer` fits the limits.
    fn admit(&self, peer: SocketAddr) -> bool {
        self.active() < self.cfg.max_sessions
            && self.active_from(peer.ip()) < self.cfg.max_sessions_per_peer
            // Finished sessions are small but not free: bound them too.
            && self.sessions.len() < self.cfg.max_sessions.saturating_mul(8).max(64)
    }

    fn name_in_use(&self, name: &str) -> bool {
        self.sessions
            .values()
            .any(|s| s.ended.is_none() && s.name == name && matches!(s.side, Side::Put(_)))
    }

    fn on_datagram(&mut self, now: Instant, peer: SocketAddr, buf: &[u8]) {
        self.in_len = buf.len();
        let Some((repr, payload)) = parse(buf) else {
            self.counters.malformed += 1;
            return;
        };
        let session = match &repr {
            Repr::Beacon(_) => {
                self.counters.beacons_received += 1;
                return;
            }
            Repr::Request(r) => r.session,
            Repr::Metadata(m) => m.session,
            Repr::Data(d) => d.session,
            Repr::Status(s) => s.session,
        };
        let key = (peer, session);
        let Some(s) = self.sessions.get_mut(&key) else {
            match &repr {
                Repr::Metadata(m) => self.new_put(now, peer, m),
                Repr::Request(r) => self.new_get(now, peer, r),
                Repr::Data(d) => {
                    self.counters.unknown_session += 1;
                    // A PUT whose METADATA was lost: ask for it (a STATUS
                    // with bit 13 set, no larger than the DATA: no
                    // amplification), only when the DATA asked for one.
                    if d.request_status {
                        self.reply(&status_frame(session, 0, false), peer);
                    }
                }
                _ => self.counters.unknown_session += 1,
            }
            return;
        };
        if let Some(Err((code, _))) = &s.outcome {
            // A failed session: repeat why to a sender still asking.
            if matches!(&repr, Repr::Data(d) if d.request_status) && *code != 0 {
                let b = error_status(session, *code);
                self.reply(&b, peer);
            }
            return;
        }
        let mut fail: Option<(u8, String)> = None;
        match (&mut s.side, &repr) {
            (Side::Put(r), Repr::Metadata(m)) if m.entry.path == s.name.as_bytes() => {
                s.last_heard = now;
                if let Err(c) = r.on_metadata(now, m) {
                    fail = Some((c, format!("size {} over --max-size", m.entry.size)));
                }
            }
            (Side::Put(r), Repr::Data(d)) => {
                s.last_heard = now;
                if let Err(e) = r.on_data(now, d, payload) {
                    fail = Some((error_code::CANT_RECEIVE, e));
                }
            }
            (Side::Get(g), Repr::Status(st)) => {
                s.last_heard = now;
                if st.error != 0 {
                    fail = Some((0, format!("peer aborted: {}", error_text(st.error))));
                } else {
                    let before = g.sender.sender_stats().status_rejected;
                    feed_status(&mut g.sender, now, st);
                    self.counters.status_rejected +=
                        g.sender.sender_stats().status_rejected - before;
                }
            }
            (Side::Preparing(p), Repr::Request(r)) if r.name == p.name => {
                // Repeated while the checksum is computed: still alive.
                s.last_heard = now;
            }
            (Side::Get(g), Repr::Request(r)) if r.name == g.name => {
                // A repeated REQUEST: our METADATA was lost.
                s.last_heard = now;
                let m = Message::SaraRequest(SaraRequest {
                    session,
                    descriptor: r.descriptor,
                    kind: RequestType::Get,
                    name: 0,
                });
                g.sender.handle_input(now, &m);
            }
            _ => {
                self.counters.unknown_session += 1;
                return;
            }
        }
        if let Some(f) = fail {
            s.outcome = Some(Err(f));
        }
    }

    /// A METADATA of a new session: a PUT, if name, size and limits allow.
    fn new_put(&mut self, now: Instant, peer: SocketAddr, m: &wire::Metadata) {
        let session = m.session;
        let name = match check_name(&m.entry.path) {
            Ok(n) => n.to_string(),
            Err(_) => return self.refuse(peer, session, error_code::ACCESS_DENIED),
        };
        if m.entry.size > self.cfg.transfer.max_size {
            return self.refuse(peer, session, error_code::FILE_TOO_BIG);
        }
        if !self.admit(peer) {
            return self.refuse(peer, session, error_code::CANT_RECEIVE);
        }
        if self.name_in_use(&name) {
            return self.refuse(peer, session, error_code::FILE_IN_USE);
        }
        let dest = self.cfg.dir.join(&name);
        if !self.cfg.transfer.overwrite && std::fs::symlink_metadata(&dest).is_ok() {
            return self.refuse(peer, session, error_code::ACCESS_DENIED);
        }
        // An interrupted PUT of the same file (name, size and checksum)
        // resumes from what it left; anything else left under this name
        // is replaced (no other transfer of the name is running).
        let resume = ResumeInfo::load(&dest).filter(|i| {
            self.cfg.max_resumable > 0
                && i.size == m.entry.size
                && i.checksum == m.checksum
                && !matches!(m.checksum, Checksum::None)
        });
        let reopened = resume.as_ref().and_then(|_| TempFile::reopen(&dest));
        let (temp, resume) = match reopened {
            Some(t) => (t, resume),
            None => {
                for p in [partial_path(&dest), resume_path(&dest)]
                    .into_iter()
                    .flatten()
                {
                    if std::fs::symlink_metadata(&p).is_ok() {
                        let _ = std::fs::remove_file(&p);
                    }
                }
                match TempFile::create(&dest) {
                    Ok(t) => (t, None),
                    Err(_) => return self.refuse(peer, session, error_code::CANT_RECEIVE),
                }
            }
        };
        let cfg = &self.cfg.transfer;
        let mut side = RecvSide {
            receiver: SaratogaReceiver::new(sara_config(cfg, session, Checksum::None), now),
            session,
            temp,
            meta: None,
            max_size: cfg.max_size,
            overwrite: cfg.overwrite,
            data_frames: 0,
            result: None,
            keep: self.cfg.max_resumable > 0,
            last_saved: None,
            saved_held: 0,
            resumed_bytes: 0,
            resumable_fail: false,
            offer: None,
            hash: None,
        };
        let _ = side.on_metadata(now, m);
        if let Some(info) = resume {
            side.resumed_bytes = side.receiver.restore(&info.ranges);
            side.saved_held = info.held();
            self.counters.resumed += 1;
            if !side.receiver.is_complete() {
                // The resume offer: a voluntary STATUS listing every hole
                // up to the file's end (the sender's `try_resume`). Once
                // now, and before each of the next few STATUS replies in
                // case it is lost (a sender that already took one, or
                // took an ordinary STATUS first, ignores the rest).
                let holes = info.holes();
                let offer = Repr::Status(wire::Status {
                    descriptor: m.descriptor,
                    session,
                    metadata_received: true,
                    incomplete: false,
                    voluntary: true,
                    error: 0,
                    timestamp: None,
                    progress: holes.first().map_or(info.size, |h| h.0),
                    in_response_to: 0,
                    holes,
                })
                .to_vec()
                .unwrap_or_default();
                self.counters.resume_offers += 1;
                self.send(&offer, peer);
                side.offer = Some((RESUME_OFFER_REPEATS, offer));
            }
        }
        self.counters.sessions_peak = self
            .counters
            .sessions_peak
            .max(self.sessions.len() as u64 + 1);
        self.sessions.insert(
            (peer, session),
            Session {
                side: Side::Put(Box::new(side)),
                name,
                started: now,
                last_heard: now,
                ended: None,
                outcome: None,
            },
        );
    }

    /// A REQUEST of a new session: a GET of a regular file in the
    /// directory (no symlinks), if limits allow; other requests refused.
    fn new_get(&mut self, now: Instant, peer: SocketAddr, r: &wire::Request) {
        let session = r.session;
        if !matches!(r.kind, RequestType::Get) {
            // PUT needs no REQUEST here (a blind PUT starts with
            // METADATA); delete and directory requests are not served.
            return self.refuse(peer, session, error_code::BAD_REQUEST);
        }
        let name = match check_name(&r.name) {
            Ok(n) => n.to_string(),
            Err(_) => return self.refuse(peer, session, error_code::ACCESS_DENIED),
        };
        if !self.admit(peer) {
            return self.refuse(peer, session, error_code::CANT_SEND);
        }
        let path = self.cfg.dir.join(&name);
        match std::fs::symlink_metadata(&path) {
            Ok(md) if md.file_type().is_file() => {}
            Ok(_) => return self.refuse(peer, session, error_code::ACCESS_DENIED),
            Err(_) => return self.refuse(peer, session, error_code::FILE_NOT_FOUND),
        }
        let mut oo = OpenOptions::new();
        oo.read(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            // The name may have become a symlink since the check.
            oo.custom_flags(libc::O_NOFOLLOW);
        }
        let Ok(file) = oo.open(&path) else {
            return self.refuse(peer, session, error_code::CANT_SEND);
        };
        let size = match file.metadata() {
            Ok(md) if md.is_file() => md.len(),
            _ => return self.refuse(peer, session, error_code::CANT_SEND),
        };
        if size > self.cfg.transfer.max_size {
            return self.refuse(peer, session, error_code::FILE_TOO_BIG);
        }
        let cfg = self.cfg.transfer.clone();
        let Some(id) = file_id(&file, size) else {
            return self.refuse(peer, session, error_code::CANT_SEND);
        };
        let side = match self.sums.get(&name, &id, cfg.checksum) {
            Some(sum) => Side::Get(Box::new(get_side(
                &cfg,
                session,
                file,
                r.name.clone(),
                size,
                sum,
                now,
            ))),
            None if size <= INLINE_SUM => {
                let Ok(sum) = checksum_file(&file, size, cfg.checksum) else {
                    return self.refuse(peer, session, error_code::CANT_SEND);
                };
                self.sums.put(&name, id, sum);
                Side::Get(Box::new(get_side(
                    &cfg,
                    session,
                    file,
                    r.name.clone(),
                    size,
                    sum,
                    now,
                )))
            }
            None => {
                let workers = self
                    .sessions
                    .values()
                    .filter(|s| matches!(s.side, Side::Preparing(_)))
                    .count();
                let Ok(f2) = file.try_clone() else {
                    return self.refuse(peer, session, error_code::CANT_SEND);
                };
                if workers >= MAX_SUM_WORKERS {
                    return self.refuse(peer, session, error_code::CANT_SEND);
                }
                let (tx, rx) = std::sync::mpsc::channel();
                let kind = cfg.checksum;
                let spawned = std::thread::Builder::new()
                    .name("satcc-sar-sum".into())
                    .spawn(move || {
                        let _ = tx.send(checksum_file(&f2, size, kind));
                    });
                if spawned.is_err() {
                    return self.refuse(peer, session, error_code::CANT_SEND);
                }
                self.counters.checksums_offloaded += 1;
                Side::Preparing(Box::new(Preparing {
                    file: Some(file),
                    name: r.name.clone(),
                    size,
                    id,
                    rx,
                }))
            }
        };
        self.counters.sessions_peak = self
            .counters
            .sessions_peak
            .max(self.sessions.len() as u64 + 1);
        self.sessions.insert(
            (peer, session),
            Session {
                side,
                name,
                started: now,
                last_heard: now,
                ended: None,
                outcome: None,
            },
        );
    }

    /// Timers, transmissions, completions and expiry of every session.
    fn step(&mut self, now: Instant, out: &mut [u8], report: &mut dyn FnMut(&SessionReport)) {
        let linger = self.cfg.linger;
        let sock = &self.sock;
        let dir = &self.cfg.dir;
        let max_resumable = self.cfg.max_resumable;
        let mut done = Vec::new();
        for (&(peer, id), s) in self.sessions.iter_mut() {
            if let Side::Preparing(p) = &mut s.side {
                use std::sync::mpsc::TryRecvError;
                match p.rx.try_recv() {
                    Ok(Ok(sum)) if p.file.is_some() => {
                        self.sums.put(&s.name, p.id, sum);
                        let file = p.file.take().expect("checked");
                        let g = get_side(
                            &self.cfg.transfer,
                            id,
                            file,
                            std::mem::take(&mut p.name),
                            p.size,
                            sum,
                            now,
                        );
                        s.side = Side::Get(Box::new(g));
                    }
                    Err(TryRecvError::Empty) => {}
                    Ok(Ok(_)) | Ok(Err(_)) | Err(TryRecvError::Disconnected) => {
                        let _ = sock.send_to(&error_status(id, error_code::CANT_SEND), peer);
                        s.outcome = Some(Err((
                            error_code::CANT_SEND,
                            "reading the file for its checksum failed".into(),
                        )));
                    }
                }
            }
            if s.ended.is_none() && s.outcome.is_none() {
                s.outcome = match &mut s.side {
                    Side::Put(r) => put_step(r, now, sock, peer, out),
                    Side::Get(g) => get_step(g, now, sock, peer, out),
                    Side::Preparing(_) => None,
                };
            } else if let (Side::Put(r), Some(Ok(()))) = (&mut s.side, &s.outcome) {
                // Finished: keep answering STATUS requests (its last
                // STATUS may have been lost).
                r.receiver.handle_timeout(now);
                send_all_from_receiver(r, now, sock, peer, out, &[]);
            }
            if s.ended.is_none() {
                if let Some(o) = &s.outcome {
                    s.ended = Some(now);
                    if let (Side::Put(r), Err(_)) = (&mut s.side, o) {
                        let room = r.resumable_fail && count_resumable(dir) < max_resumable;
                        r.suspend_or_discard(room);
                    }
                    let res = o.clone().map_err(|e| e.1);
                    done.push(session_report(s, peer, id, now, res));
                }
            }
        }
        for r in &done {
            if r.ok {
                self.counters.completed += 1;
            } else {
                self.counters.failed += 1;
            }
            report(r);
        }
        self.sessions
            .retain(|_, s| s.ended.is_none_or(|t| now.saturating_since(t) < linger));
    }
}

/// Sends the receiver's pending frames.
fn send_all_from_receiver(
    r: &mut RecvSide,
    now: Instant,
    sock: &Socket,
    peer: SocketAddr,
    out: &mut [u8],
    name: &[u8],
) {
    for _ in 0..MAX_BURST {
        let Some(m) = r.receiver.poll_message(now) else {
            break;
        };
        if let Some((left, offer)) = &mut r.offer {
            let _ = sock.send_to(offer, peer);
            *left -= 1;
            if *left == 0 {
                r.offer = None;
            }
        }
        if let Ok(n) = encode_status_or(&m, &r.receiver, name, out) {
            let _ = sock.send_to(&out[..n], peer);
        }
    }
}

type Outcome = Option<Result<(), (u8, String)>>;

/// A PUT session's step: verify and rename once complete, *then* let the
/// STATUS frames out (so a client never hears "complete" for a file that
/// failed its checksum); give up on inactivity.
fn put_step(
    r: &mut RecvSide,
    now: Instant,
    sock: &Socket,
    peer: SocketAddr,
    out: &mut [u8],
) -> Outcome {
    if r.receiver.poll_timeout().is_some_and(|t| t <= now) {
        r.receiver.handle_timeout(now);
    }
    if r.receiver.failure().is_some() {
        r.resumable_fail = true;
        return Some(Err((
            0,
            "inactivity timeout: the client went silent".into(),
        )));
    }
    r.maybe_save(now);
    r.hash_ahead(HASH_AHEAD);
    match r.try_commit().cloned() {
        Some(Err(e)) => {
            // Drop the STATUS that would say "all received".
            while r.receiver.poll_message(now).is_some() {}
            let b = error_status(r.session, error_code::CANT_RECEIVE);
            let _ = sock.send_to(&b, peer);
            Some(Err((error_code::CANT_RECEIVE, e)))
        }
        Some(Ok(())) => {
            send_all_from_receiver(r, now, sock, peer, out, &[]);
            Some(Ok(()))
        }
        None => {
            send_all_from_receiver(r, now, sock, peer, out, &[]);
            None
        }
    }
}

/// A GET session's step: send what is due; done once the client confirmed
/// every byte.
fn get_step(
    g: &mut SendSide,
    now: Instant,
    sock: &Socket,
    peer: SocketAddr,
    out: &mut [u8],
) -> Outcome {
    g.pump(now, sock, peer, out);
    if let Some(e) = g.error.take() {
        let b = error_status(g.sender.session(), error_code::CANT_SEND);
        let _ = sock.send_to(&b, peer);
        return Some(Err((error_code::CANT_SEND, e)));
    }
    if g.done() {
        return Some(Ok(()));
    }
    g.sender
        .failure()
        .map(|f| Err((0, format!("client lost: {f}"))))
}

fn session_report(
    s: &Session,
    peer: SocketAddr,
    id: u32,
    now: Instant,
    res: Result<(), String>,
) -> SessionReport {
    let (kind, bytes, resumed_bytes) = match &s.side {
        Side::Put(r) => ("put", r.meta.map_or(0, |m| m.0), r.resumed_bytes),
        Side::Get(g) => ("get", g.size, 0),
        Side::Preparing(p) => ("get", p.size, 0),
    };
    let secs = now.saturating_since(s.started).as_secs_f64();
    let ok = res.is_ok();
    SessionReport {
        kind,
        peer: peer.to_string(),
        session: id,
        name: s.name.clone(),
        ok,
        error: res.err(),
        bytes,
        resumed_bytes,
        duration_s: secs,
        goodput_bps: if ok { rate(bytes, secs) } else { 0.0 },
    }
}

/// Set by SIGINT or SIGTERM once [`stop_on_signals`] has run.
static STOP: AtomicBool = AtomicBool::new(false);

#[cfg(unix)]
extern "C" fn on_signal(_: libc::c_int) {
    // Async-signal-safe: one atomic store.
    STOP.store(true, Ordering::SeqCst);
}

/// Makes SIGINT and SIGTERM set the returned flag instead of killing the
/// process, so that a server or client interrupted by Ctrl-C stops its
/// loop and removes its temporary files. (SIGKILL cannot be caught: a
/// killed receiver leaves `.NAME.partial`, never a file under the final
/// name.)
pub fn stop_on_signals() -> &'static AtomicBool {
    #[cfg(unix)]
    // SAFETY: installs a handler that only stores to an atomic.
    unsafe {
        let h = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::signal(libc::SIGINT, h);
        libc::signal(libc::SIGTERM, h);
    }
    &STOP
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
        let info = ResumeInfo::from_received(10_000_000, sum, &rs);
        assert_eq!(info.ranges.len(), MAX_RESUME_RANGES);
        assert_eq!(info.ranges[0], (937 * 10_000, 937 * 10_000 + 1037));
        assert!(info.holes().len() <= MAX_WIRE_HOLES);
        assert_eq!(info.holes().last().unwrap().1, 10_000_000);
        let back = ResumeInfo::parse(&info.encode()).unwrap();
        assert_eq!(back, info);
        let crc = ResumeInfo {
            size: 5,
            checksum: Checksum::Crc32(0xdead_beef),
            ranges: vec![(0, 2), (3, 5)],
        };
        assert_eq!(ResumeInfo::parse(&crc.encode()), Some(crc.clone()));
        assert_eq!(crc.holes(), vec![(2, 3)]);
        for bad in [
            "",
            "satcc-saratoga-resume 2\nsize 5\nchecksum crc32 deadbeef\nranges 0-2\n",
            "satcc-saratoga-resume 1\nsize 5\nchecksum crc32 deadbe\nranges 0-2\n",
            "satcc-saratoga-resume 1\nsize 5\nchecksum sha1 deadbeef\nranges 0-2\n",
            "satcc-saratoga-resume 1\nsize 5\nchecksum crc32 deadbeef\nranges 0-6\n",
            "satcc-saratoga-resume 1\nsize 5\nchecksum crc32 deadbeef\nranges 2-2\n",
            "satcc-saratoga-resume 1\nsize 5\nchecksum crc32 deadbeef\nranges 2-4 0-1\n",
            "satcc-saratoga-resume 1\nsize 5\nchecksum crc32 deadbeef\nranges 0-3 2-4\n",
            "satcc-saratoga-resume 1\nsize x\nchecksum crc32 deadbeef\nranges 0-2\n",
            "satcc-saratoga-resume 1\nsize 5\nchecksum crc32 zzzzzzzz\nranges 0-2\n",
            "satcc-saratoga-resume 1\nsize 5\nchecksum crc32 deadbeef\n",
        ] {
            assert_eq!(ResumeInfo::parse(bad), None, "{bad:?}");
        }
    }
}
