//! The sans-IO Saratoga messages (defined in [`crate::messages::saratoga`],
//! below [`crate::endpoint`], and re-exported here) and their conversion to
//! wire frames.
//!
//! They are the payload of [`Message::SaraRequest`], [`Message::SaraMetadata`],
//! [`Message::SaraData`] and [`Message::SaraStatus`]: `Copy` values without
//! payload bytes or strings, small enough that `Message` does not grow.
//!
//! - A file name travels as a `u64` key. [`to_repr`] writes it as 16
//!   lower-case hex digits and [`from_repr`] reads that form back; a
//!   runtime with real names builds the [`wire::Repr`] itself (or replaces
//!   `name` in the `Repr` before emitting it).
//! - A STATUS carries at most [`STATUS_INLINE_HOLES`] holes inline. A
//!   longer list is truncated to the first ones and the "hole list
//!   incomplete" flag (§4.5, bit 14) set: exactly what the draft's flag is
//!   for ("the holes listed are not all the holes"). The sender repairs
//!   those, and the next STATUS lists the rest.
//! - A timestamp is the draft's 16-byte timestamp/nonce (§4.4). Our
//!   sender writes [`ts_encode`] of the configured
//!   [`wire::TimestampType`] (byte 0 the type, as the Go implementation
//!   writes it), and reads its own echo back with [`ts_decode`]; the
//!   receiver echoes the 16 bytes as they came.

use super::wire::{
    self, DirEntry, Properties, Repr, TimestampType, TransferType, TIMESTAMP_LEN, Y2K_UNIX_SECS,
};
use crate::endpoint::Message;
pub use crate::messages::saratoga::{
    SaraData, SaraMetadata, SaraRequest, SaraStatus, STATUS_INLINE_HOLES,
};
use crate::time::Instant;

const NS: u64 = 1_000_000_000;

/// The 16-byte timestamp of type `kind` for the time `t`, laid out as the
/// Go implementation's `timestamp.Put` does (type in byte 0, big-endian
/// fields from byte 1, the rest zero). [`TimestampType::Local`] holds
/// `t` in nanoseconds (bytes 1-8); the others hold the wall-clock time
/// `unix_offset_ns + t` (`unix_offset_ns`: POSIX time in ns at
/// `Instant(0)`, given by the runtime; 0 in the simulator).
pub fn ts_encode(kind: TimestampType, t: Instant, unix_offset_ns: u64) -> [u8; TIMESTAMP_LEN] {
    let mut b = [0u8; TIMESTAMP_LEN];
    b[0] = kind.code();
    let unix = unix_offset_ns.saturating_add(t.as_nanos());
    let (secs, ns) = (unix / NS, (unix % NS) as u32);
    match kind {
        TimestampType::Local => b[1..9].copy_from_slice(&t.as_nanos().to_be_bytes()),
        // 32-bit seconds wrap in 2106, as the field does.
        TimestampType::Posix32 => b[1..5].copy_from_slice(&(secs as u32).to_be_bytes()),
        TimestampType::Posix64 => b[1..9].copy_from_slice(&secs.to_be_bytes()),
        TimestampType::Posix32_32 => {
            b[1..5].copy_from_slice(&(secs as u32).to_be_bytes());
            b[5..9].copy_from_slice(&ns.to_be_bytes());
        }
        TimestampType::Posix64_32 => {
            b[1..9].copy_from_slice(&secs.to_be_bytes());
            b[9..13].copy_from_slice(&ns.to_be_bytes());
        }
        TimestampType::Epoch2000_32 => {
            let y2k = secs.saturating_sub(Y2K_UNIX_SECS) as u32;
            b[1..5].copy_from_slice(&y2k.to_be_bytes());
        }
    }
    b
}

/// The send time a timestamp of ours says, for the types precise to the
/// nanosecond ([`TimestampType::is_precise`]); `None` for the
/// seconds-only types, a code neither table defines, a nanosecond field
/// of 10^9 or more, or a time before `Instant(0)`. Only an echo of our
/// own DATA is read: a peer's value is never trusted beyond the sender's
/// `t <= now` check.
pub fn ts_decode(ts: &[u8; TIMESTAMP_LEN], unix_offset_ns: u64) -> Option<Instant> {
    let be32 = |r: std::ops::Range<usize>| u64::from(u32::from_be_bytes(ts[r].try_into().unwrap()));
    let be64 = |r: std::ops::Range<usize>| u64::from_be_bytes(ts[r].try_into().unwrap());
    let unix = |secs: u64, ns: u64| -> Option<Instant> {
        if ns >= NS {
            return None;
        }
        let t = secs.checked_mul(NS)?.checked_add(ns)?;
        Some(Instant(t.checked_sub(unix_offset_ns)?))
    };
    match TimestampType::from_code(ts[0])? {
        TimestampType::Local => Some(Instant(be64(1..9))),
        TimestampType::Posix32_32 => unix(be32(1..5), be32(5..9)),
        TimestampType::Posix64_32 => unix(be64(1..9), be32(9..13)),
        TimestampType::Posix32 | TimestampType::Posix64 | TimestampType::Epoch2000_32 => None,
    }
}

/// The 16-byte local-interpretation timestamp (type 0) for `t`:
/// `ts_encode(TimestampType::Local, t, 0)`.
pub fn ts_from_instant(t: Instant) -> [u8; TIMESTAMP_LEN] {
    let mut b = [0u8; TIMESTAMP_LEN];
    b[1..9].copy_from_slice(&t.as_nanos().to_be_bytes());
    b
}

/// The [`Instant`] in a timestamp of ours (type byte 0); `None` for
/// another type.
pub fn instant_from_ts(ts: &[u8; TIMESTAMP_LEN]) -> Option<Instant> {
    if ts[0] != 0 {
        return None;
    }
    let mut n = [0u8; 8];
    n.copy_from_slice(&ts[1..9]);
    Some(Instant(u64::from_be_bytes(n)))
}

/// The 16-hex-digit name [`to_repr`] writes for a name key.
pub fn name_of_key(key: u64) -> Vec<u8> {
    format!("{key:016x}").into_bytes()
}

/// The key of a name in [`name_of_key`]'s form.
pub fn key_of_name(name: &[u8]) -> Option<u64> {
    if name.len() != 16
        || !name
            .iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
    {
        return None;
    }
    u64::from_str_radix(std::str::from_utf8(name).ok()?, 16).ok()
}

/// The wire frame of a Saratoga message; `None` for other messages.
pub fn to_repr(msg: &Message) -> Option<Repr> {
    Some(match *msg {
        Message::SaraRequest(r) => Repr::Request(wire::Request {
            descriptor: r.descriptor,
            session: r.session,
            streams: false,
            // "yes" both ways: the Go responder (its flag table puts these
            // in REQUEST bits 12-15) refuses a get unless rx-willing is 3
            // and a put unless tx-willing is 3; its commit 38490db says
            // they "MUST both be yes". Ignored on receipt (docs/saratoga.md).
            tx_willing: 3,
            rx_willing: 3,
            udp_lite: false,
            kind: r.kind,
            name: name_of_key(r.name),
            auth: Vec::new(),
        }),
        Message::SaraMetadata(m) => Repr::Metadata(wire::Metadata {
            descriptor: m.descriptor,
            session: m.session,
            transfer: TransferType::File,
            terminated: false,
            udp_lite: false,
            checksum: m.checksum,
            entry: DirEntry {
                properties: Properties::File,
                descriptor: m.descriptor,
                size: m.file_size,
                mtime: 0,
                ctime: 0,
                path: name_of_key(m.name),
            },
        }),
        Message::SaraData(d) => Repr::Data(wire::Data {
            descriptor: d.descriptor,
            session: d.session,
            transfer: TransferType::File,
            request_status: d.request_status,
            eod: d.eod,
            timestamp: d.ts,
            offset: d.offset,
            payload_len: d.len as usize,
        }),
        // A list kept out of line reads as its first hole, incomplete
        // (what a frame without the store can say; the simulator's frame
        // size counts the whole list: `udp_payload_len`).
        Message::SaraStatus(s) => Repr::Status(wire::Status {
            descriptor: s.descriptor,
            session: s.session,
            metadata_received: s.metadata_received(),
            incomplete: s.incomplete() || s.stored_holes().is_some(),
            voluntary: s.voluntary(),
            error: s.error,
            timestamp: s.timestamp(),
            progress: s.progress,
            in_response_to: s.in_response_to,
            holes: s.holes().to_vec(),
        }),
        _ => return None,
    })
}

/// Bytes a Saratoga message occupies as a UDP payload (its frame,
/// header included); 0 for other messages.
pub fn udp_payload_len(msg: &Message) -> u32 {
    let len = to_repr(msg).map_or(0, |r| r.buffer_len());
    // A STATUS whose list is out of line: the frame carries every hole
    // (§4.5: a (start, end) pair of descriptor-size fields each), not
    // just the first that `to_repr` writes.
    let extra = match msg {
        Message::SaraStatus(s) => {
            s.wire_holes().saturating_sub(s.holes().len()) * 2 * s.descriptor.bytes()
        }
        _ => 0,
    };
    u32::try_from(len.saturating_add(extra)).unwrap_or(u32::MAX)
}

/// Why a parsed frame has no sans-IO message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToMessageError {
    /// BEACONs are not part of a transfer's message flow.
    Beacon,
    /// A name that is not a 16-hex-digit key (a runtime with real names
    /// handles the [`Repr`] itself).
    NameNotKey,
    /// A DATA payload longer than 2^32 - 1 bytes.
    PayloadTooLong,
}

/// The sans-IO message of a parsed frame. A STATUS hole list longer than
/// [`STATUS_INLINE_HOLES`] is truncated with the incomplete flag set.
pub fn from_repr(repr: &Repr) -> Result<Message, ToMessageError> {
    Ok(match repr {
        Repr::Beacon(_) => return Err(ToMessageError::Beacon),
        Repr::Request(r) => Message::SaraRequest(SaraRequest {
            session: r.session,
            descriptor: r.descriptor,
            kind: r.kind,
            name: key_of_name(&r.name).ok_or(ToMessageError::NameNotKey)?,
        }),
        Repr::Metadata(m) => Message::SaraMetadata(SaraMetadata {
            session: m.session,
            descriptor: m.descriptor,
            file_size: m.entry.size,
            checksum: m.checksum,
            name: key_of_name(&m.entry.path).ok_or(ToMessageError::NameNotKey)?,
        }),
        Repr::Data(d) => Message::SaraData(SaraData {
            session: d.session,
            descriptor: d.descriptor,
            offset: d.offset,
            len: u32::try_from(d.payload_len).map_err(|_| ToMessageError::PayloadTooLong)?,
            request_status: d.request_status,
            eod: d.eod,
            ts: d.timestamp,
        }),
        Repr::Status(s) => {
            let mut m = SaraStatus::new(s.session, s.descriptor, s.progress, s.in_response_to);
            m.error = s.error;
            m.set_metadata_received(s.metadata_received);
            m.set_voluntary(s.voluntary);
            m.set_timestamp(s.timestamp);
            m.set_holes(s.holes.iter().copied());
            if s.incomplete {
                m.set_incomplete(true);
            }
            Message::SaraStatus(m)
        }
    })
}
