//! Framing: sans-IO messages to datagrams and back (with the real file
//! name and, for DATA, the file's bytes), STATUS frames built by the
//! driver, and the checksum's names and bytes.

use std::fs::File;
use std::io;

use satcc_proto::saratoga::msg::{from_repr, to_repr};
use satcc_proto::saratoga::wire::{
    self, Checksum, ChecksumType, DescriptorSize, Frame, Repr, TimestampType, Y2K_UNIX_SECS,
};
use satcc_proto::saratoga::{SaraMetadata, SaratogaReceiver, SaratogaSender};
use satcc_proto::{Instant, Message};

pub(super) fn checksum_name(k: ChecksumType) -> &'static str {
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

/// Parses a timestamp type for `--timestamp`: `none` (no timestamps), or
/// a type both reference tables define, by the Go table's name
/// (`posix32`, `posix64`, `posix32_32`, `posix64_32`, `epoch2000_32`,
/// `local`). `None` in the result is "no timestamps".
pub fn parse_timestamp(s: &str) -> Result<Option<TimestampType>, String> {
    let l = s.to_ascii_lowercase();
    if l == "none" || l == "off" {
        return Ok(None);
    }
    TimestampType::ALL
        .into_iter()
        .find(|t| t.name() == l)
        .map(Some)
        .ok_or_else(|| {
            format!(
                "--timestamp '{s}': expected none, posix32, posix64, posix32_32, posix64_32, \
                 epoch2000_32 or local"
            )
        })
}

/// A file time as a directory entry carries it (§5): seconds since
/// 2000-01-01 UTC in 32 bits, 0 for a time before 2000 or unknown, the
/// largest value past 2136.
pub(super) fn y2k_secs(t: Option<std::time::SystemTime>) -> u32 {
    t.and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| {
            u32::try_from(d.as_secs().saturating_sub(Y2K_UNIX_SECS)).unwrap_or(u32::MAX)
        })
}

/// The time a directory entry's `secs` (since 2000, §5) names; `None` for
/// 0, which we and older peers send for "unknown".
pub(super) fn from_y2k_secs(secs: u32) -> Option<std::time::SystemTime> {
    (secs != 0).then(|| {
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(Y2K_UNIX_SECS + u64::from(secs))
    })
}

pub(super) fn checksum_bytes(c: &Checksum) -> Vec<u8> {
    match c {
        Checksum::None => Vec::new(),
        Checksum::Crc32(x) => x.to_be_bytes().to_vec(),
        Checksum::Md5(x) => x.to_vec(),
        Checksum::Sha1(x) => x.to_vec(),
    }
}

pub(super) fn checksum_from(kind: ChecksumType, b: &[u8]) -> Option<Checksum> {
    Some(match kind {
        ChecksumType::None if b.is_empty() => Checksum::None,
        ChecksumType::Crc32 => Checksum::Crc32(u32::from_be_bytes(b.try_into().ok()?)),
        ChecksumType::Md5 => Checksum::Md5(b.try_into().ok()?),
        ChecksumType::Sha1 => Checksum::Sha1(b.try_into().ok()?),
        ChecksumType::None => return None,
    })
}

/// The frame of a sans-IO message with the real `name` (REQUEST,
/// METADATA), the file's `(mtime, ctime)` in seconds since 2000 (§5;
/// METADATA's directory entry) and, for DATA, the file bytes at its
/// offset, in `out`.
pub(super) fn encode(
    msg: &Message,
    name: &[u8],
    file: Option<&File>,
    times: (u32, u32),
    out: &mut [u8],
) -> io::Result<usize> {
    let mut repr = to_repr(msg).ok_or_else(|| io::Error::other("not a Saratoga message"))?;
    match &mut repr {
        Repr::Request(r) => r.name = name.to_vec(),
        Repr::Metadata(m) => {
            m.entry.path = name.to_vec();
            (m.entry.mtime, m.entry.ctime) = times;
        }
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
        // The payload straight from the file (files.rs sits above this
        // module: it encodes checksums with the helpers here).
        std::os::unix::fs::FileExt::read_exact_at(f, &mut buf[hl..], d.offset)?;
    }
    Ok(len)
}

/// Holes a STATUS frame lists at most on the wire: 64 holes with 64-bit
/// offsets make a 1,064-byte frame, within any path MTU.
pub(super) const MAX_WIRE_HOLES: usize = 64;

/// Encodes a message of the receiver `r`. A STATUS whose inline hole list
/// the sans-IO message truncated (to 2, with the "incomplete" flag) is
/// sent with up to [`MAX_WIRE_HOLES`] holes from the receiver's current
/// ranges instead: after a burst loss on a long path, 2 holes per round
/// trip would make repair take hundreds of RTTs.
pub(super) fn encode_status_or(
    m: &Message,
    r: &SaratogaReceiver,
    name: &[u8],
    out: &mut [u8],
) -> io::Result<usize> {
    let Message::SaraStatus(st) = m else {
        return encode(m, name, None, (0, 0), out);
    };
    let Some(Repr::Status(mut w)) = to_repr(m) else {
        return encode(m, name, None, (0, 0), out);
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
pub(super) fn feed_status(sender: &mut SaratogaSender, now: Instant, st: &wire::Status) {
    if let Ok(Message::SaraStatus(mut m)) = from_repr(&Repr::Status(st.clone())) {
        // `from_repr` sets "incomplete" when it truncated the list; the
        // list passed here is whole, so the frame's own flag holds.
        m.set_incomplete(st.incomplete);
        sender.on_status_with_holes(now, &m, &st.holes);
    }
}

/// A STATUS frame carrying an error code (progress 0, no holes: always
/// valid at the sender, which then gives up with that code).
pub(super) fn error_status(session: u32, code: u8) -> Vec<u8> {
    status_frame(session, code, true)
}

pub(super) fn status_frame(session: u32, code: u8, metadata_received: bool) -> Vec<u8> {
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

/// Parses a datagram: the frame and, for DATA, its payload.
pub(super) fn parse(buf: &[u8]) -> Option<(Repr, &[u8])> {
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

pub(super) fn metadata_message(m: &wire::Metadata) -> Result<Message, ()> {
    Ok(Message::SaraMetadata(SaraMetadata {
        session: m.session,
        descriptor: m.descriptor,
        file_size: m.entry.size,
        checksum: m.checksum,
        name: 0,
    }))
}
