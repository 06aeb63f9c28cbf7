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
//! - A timestamp is the draft's opaque 16-byte timestamp/nonce (§4.4).
//!   Our sender writes [`ts_from_instant`]: byte 0 is the timestamp type
//!   0 ("local interpretation"), bytes 1-8 the [`Instant`] in ns,
//!   big-endian, the rest zero; the receiver echoes the 16 bytes as they
//!   came.

use super::wire::{self, DirEntry, Properties, Repr, TransferType, TIMESTAMP_LEN};
use crate::endpoint::Message;
pub use crate::messages::saratoga::{
    SaraData, SaraMetadata, SaraRequest, SaraStatus, STATUS_INLINE_HOLES,
};
use crate::time::Instant;

/// The 16-byte timestamp our sender puts in DATA for `t`.
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
        Message::SaraStatus(s) => Repr::Status(wire::Status {
            descriptor: s.descriptor,
            session: s.session,
            metadata_received: s.metadata_received(),
            incomplete: s.incomplete(),
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
    to_repr(msg).map_or(0, |r| u32::try_from(r.buffer_len()).unwrap_or(u32::MAX))
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
