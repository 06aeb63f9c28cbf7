//! Saratoga frames ⇄ bytes (draft-wood-tsvwg-saratoga-22, §4).
//!
//! smoltcp style, like [`crate::wire`]: [`Frame`] is a checked view of a
//! buffer (`new_checked` validates the version, the type and that the fixed
//! part of the header is present; accessors never panic), [`Repr`] the
//! parsed frame ([`Repr::parse`], [`Repr::buffer_len`], [`Repr::emit`]).
//!
//! Every frame starts with a 32-bit big-endian flags word whose bit 0 is
//! the most significant (the draft's bit diagrams number bits that way):
//!
//! | bits | field | frames |
//! |---|---|---|
//! | 0-2 | version, 1 (`001`) | all (§4) |
//! | 3-7 | type: 0 BEACON, 1 REQUEST, 2 METADATA, 3 DATA, 4 STATUS | all (§4) |
//! | 8-9 | descriptor size: 16, 32, 64, 128-bit offsets | all (§4) |
//! | 10-11 | transfer type (0 file, 1 directory, 2 bundle, 3 stream) | METADATA, DATA (§4.3, §4.4) |
//! | 11 | streams supported | BEACON, REQUEST (§4.1, §4.2) |
//! | 12-13 / 14-15 | willing to send / willing to receive | BEACON (§4.1); REQUEST per the Go table (Vallona differs: docs/saratoga.md) |
//! | 16 | UDP-Lite supported | BEACON, REQUEST |
//! | 17, 18-19 | free space advertised, its descriptor size | BEACON (§4.1) |
//! | 12 | transfer in progress (0) / terminated (1) | METADATA (§4.3) |
//! | 13 | UDP-Lite reliability | METADATA (§4.3) |
//! | 24-27, 28-31 | checksum length (32-bit words), checksum type | METADATA (§4.3) |
//! | 12 | timestamp/nonce present | DATA, STATUS (§4.4, §4.5) |
//! | 15 | request a STATUS | DATA (§4.4) |
//! | 16 | end of data | DATA (§4.4) |
//! | 13 | METADATA *not* received (1) | STATUS (§4.5) |
//! | 14 | hole list incomplete (1) | STATUS (§4.5) |
//! | 15 | voluntary (1) / requested (0) | STATUS (§4.5) |
//! | 24-31 | request type | REQUEST (§4.2) |
//! | 24-31 | error code | STATUS (§4.5) |
//!
//! Bits not listed are reserved: sent as zero and ignored on receipt.
//! Every frame but BEACON carries a 32-bit session id after the flags.
//! Offsets, sizes and hole bounds are descriptor-sized unsigned integers.
//! This crate keeps them in `u64`: a 128-bit descriptor is parsed, and a
//! value whose upper 64 bits are not zero is [`Error::Offset128`].

use std::fmt;

pub use crate::messages::saratoga::{
    Checksum, ChecksumType, DescriptorSize, RequestType, TIMESTAMP_LEN,
};

/// The UDP port Saratoga uses (§1, IANA-assigned 7542).
pub const PORT: u16 = 7542;
/// The protocol version in bits 0-2 (§4).
pub const VERSION: u8 = 1;
/// Longest file name / directory-entry path, bytes, without the NUL (§5).
pub const MAX_NAME_LEN: usize = 1024;
/// Longest datagram the codec accepts or writes: a UDP payload over IPv4
/// (65535 - 20 - 8). A hole list is bounded by it.
pub const MAX_FRAME_LEN: usize = 65_507;

/// Frame type (§4, flags bits 3-7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameType {
    /// Presence and capabilities (§4.1).
    Beacon = 0,
    /// Start a transaction (§4.2).
    Request = 1,
    /// File description (§4.3).
    Metadata = 2,
    /// File content at an offset (§4.4).
    Data = 3,
    /// Receiver feedback: progress and holes (§4.5).
    Status = 4,
}

impl FrameType {
    /// The type with this code.
    pub fn from_code(v: u8) -> Option<FrameType> {
        Some(match v {
            0 => FrameType::Beacon,
            1 => FrameType::Request,
            2 => FrameType::Metadata,
            3 => FrameType::Data,
            4 => FrameType::Status,
            _ => return None,
        })
    }

    /// Upper-case name, as the draft writes it.
    pub fn name(self) -> &'static str {
        match self {
            FrameType::Beacon => "BEACON",
            FrameType::Request => "REQUEST",
            FrameType::Metadata => "METADATA",
            FrameType::Data => "DATA",
            FrameType::Status => "STATUS",
        }
    }
}

/// Why a frame could not be parsed or emitted. Every variant names the
/// frame and field; none carries heap data, so the type is `Copy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The buffer ends inside `field`.
    Truncated {
        /// Frame type name.
        frame: &'static str,
        /// The field cut short.
        field: &'static str,
        /// Bytes the frame needs up to the end of that field.
        needed: usize,
        /// Bytes there are.
        have: usize,
    },
    /// Version bits other than 1.
    BadVersion(u8),
    /// Frame type code other than 0-4.
    BadFrameType(u8),
    /// A field has a value the draft does not allow.
    BadField {
        /// Frame type name.
        frame: &'static str,
        /// The field.
        field: &'static str,
        /// Its value.
        value: u64,
    },
    /// A 128-bit field whose value does not fit 64 bits.
    Offset128 {
        /// Frame type name.
        frame: &'static str,
        /// The field.
        field: &'static str,
    },
    /// A STATUS hole is empty, reversed, or not after the previous one.
    Hole {
        /// Index of the hole in the list, from 0.
        index: usize,
        /// Its start offset.
        start: u64,
        /// Its end offset.
        end: u64,
        /// End of the previous hole (0 for the first).
        prev_end: u64,
    },
    /// A name or path longer than [`MAX_NAME_LEN`] (or not NUL-terminated
    /// within that many bytes).
    NameTooLong {
        /// Frame type name.
        frame: &'static str,
        /// Its length (or the bytes searched).
        len: usize,
    },
    /// A name with a NUL byte inside (emit) or none at all (parse).
    BadName {
        /// Frame type name.
        frame: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
    /// Bytes after a frame that must end with its last field.
    TrailingBytes {
        /// Frame type name.
        frame: &'static str,
        /// How many.
        count: usize,
    },
    /// A value does not fit the frame's descriptor size (emit).
    Unrepresentable {
        /// Frame type name.
        frame: &'static str,
        /// The field.
        field: &'static str,
        /// Its value.
        value: u64,
        /// The descriptor's bit width.
        bits: u32,
    },
    /// The output buffer is too small.
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
    },
    /// A frame longer than [`MAX_FRAME_LEN`].
    TooLong {
        /// Its length.
        len: usize,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Error::Truncated {
                frame,
                field,
                needed,
                have,
            } => write!(
                f,
                "{frame} truncated in {field}: {needed} bytes needed, {have} present"
            ),
            Error::BadVersion(v) => write!(f, "version {v}, expected {VERSION}"),
            Error::BadFrameType(t) => write!(f, "unknown frame type {t}"),
            Error::BadField {
                frame,
                field,
                value,
            } => write!(f, "{frame} {field}: invalid value {value}"),
            Error::Offset128 { frame, field } => {
                write!(f, "{frame} {field}: 128-bit value does not fit 64 bits")
            }
            Error::Hole {
                index,
                start,
                end,
                prev_end,
            } => {
                if start > end {
                    write!(f, "STATUS hole {index}: start {start} > end {end}")
                } else if start == end {
                    write!(f, "STATUS hole {index}: empty ({start}..{end})")
                } else {
                    write!(
                        f,
                        "STATUS hole {index}: start {start} before the previous hole's end {prev_end}"
                    )
                }
            }
            Error::NameTooLong { frame, len } => {
                write!(f, "{frame} name of {len} bytes, at most {MAX_NAME_LEN}")
            }
            Error::BadName { frame, reason } => write!(f, "{frame} name: {reason}"),
            Error::TrailingBytes { frame, count } => {
                write!(f, "{frame}: {count} bytes after the last field")
            }
            Error::Unrepresentable {
                frame,
                field,
                value,
                bits,
            } => write!(f, "{frame} {field}: {value} does not fit {bits} bits"),
            Error::BufferTooSmall { needed } => {
                write!(f, "output buffer too small: {needed} bytes needed")
            }
            Error::TooLong { len } => {
                write!(f, "frame of {len} bytes, at most {MAX_FRAME_LEN}")
            }
        }
    }
}

impl std::error::Error for Error {}

/// Transfer type of METADATA and DATA (§4.3, bits 10-11).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TransferType {
    /// 0: a file.
    #[default]
    File,
    /// 1: a directory.
    Directory,
    /// 2: a bundle.
    Bundle,
    /// 3: a stream.
    Stream,
}

impl TransferType {
    /// The 2-bit code.
    pub fn code(self) -> u32 {
        match self {
            TransferType::File => 0,
            TransferType::Directory => 1,
            TransferType::Bundle => 2,
            TransferType::Stream => 3,
        }
    }

    /// The type of a 2-bit code.
    pub fn from_code(code: u32) -> TransferType {
        match code & 3 {
            0 => TransferType::File,
            1 => TransferType::Directory,
            2 => TransferType::Bundle,
            _ => TransferType::Stream,
        }
    }
}

/// Timestamp/nonce types: the first byte of the 16-byte timestamp of
/// DATA and STATUS (§4.4, §4.5). Both reference tables define the same
/// six codes (Go `saratoga.json` "timestamps": localinterp, posix32,
/// posix64, posix32_32, posix64_32, epoch2000_32; Vallona `timestamp.h`:
/// T_TSTAMP_UDEF, _32, _64, _32_32, _64_32, _32_Y2K). They disagree on
/// where the code goes: Go writes it in byte 0 and the time from byte 1,
/// Vallona in byte 15 and the time from byte 0. We follow Go (issue 29:
/// where the tables disagree, the Go table). All values big-endian; the
/// unused bytes are zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimestampType {
    /// 0, "local interpretation": opaque to everyone but its writer. Ours
    /// holds a monotonic nanosecond count in bytes 1-8. The Go decoder
    /// refuses the whole frame (docs/saratoga.md, disagreement 1).
    Local,
    /// 1: POSIX seconds in 32 bits (bytes 1-4).
    Posix32,
    /// 2: POSIX seconds in 64 bits (bytes 1-8).
    Posix64,
    /// 3: POSIX seconds in 32 bits (1-4), nanoseconds in 32 bits (5-8).
    Posix32_32,
    /// 4: POSIX seconds in 64 bits (1-8), nanoseconds in 32 bits (9-12).
    Posix64_32,
    /// 5: seconds since 2000-01-01 00:00 UTC in 32 bits (bytes 1-4).
    Epoch2000_32,
}

impl TimestampType {
    /// Every type, in code order.
    pub const ALL: [TimestampType; 6] = [
        TimestampType::Local,
        TimestampType::Posix32,
        TimestampType::Posix64,
        TimestampType::Posix32_32,
        TimestampType::Posix64_32,
        TimestampType::Epoch2000_32,
    ];

    /// The type code (byte 0 of the field).
    pub fn code(self) -> u8 {
        match self {
            TimestampType::Local => 0,
            TimestampType::Posix32 => 1,
            TimestampType::Posix64 => 2,
            TimestampType::Posix32_32 => 3,
            TimestampType::Posix64_32 => 4,
            TimestampType::Epoch2000_32 => 5,
        }
    }

    /// The type of a code; `None` for codes neither table defines.
    pub fn from_code(c: u8) -> Option<TimestampType> {
        TimestampType::ALL.into_iter().find(|t| t.code() == c)
    }

    /// The Go table's name (`posix64_32`, ...; `local` for localinterp).
    pub fn name(self) -> &'static str {
        match self {
            TimestampType::Local => "local",
            TimestampType::Posix32 => "posix32",
            TimestampType::Posix64 => "posix64",
            TimestampType::Posix32_32 => "posix32_32",
            TimestampType::Posix64_32 => "posix64_32",
            TimestampType::Epoch2000_32 => "epoch2000_32",
        }
    }

    /// Whether the field resolves nanoseconds, so that its echo gives an
    /// RTT sample (the seconds-only types do not).
    pub fn is_precise(self) -> bool {
        matches!(
            self,
            TimestampType::Local | TimestampType::Posix32_32 | TimestampType::Posix64_32
        )
    }
}

/// Seconds from the POSIX epoch to 2000-01-01 00:00 UTC: the epoch of
/// directory-entry times (§5) and of timestamp type 5.
pub const Y2K_UNIX_SECS: u64 = 946_684_800;

/// STATUS error codes (§4.5, bits 24-31) this crate names; others are
/// carried as numbers.
pub mod error_code {
    /// Success, no error.
    pub const SUCCESS: u8 = 0;
    /// Unspecified error.
    pub const UNSPECIFIED: u8 = 1;
    /// Unable to send the file.
    pub const CANT_SEND: u8 = 2;
    /// Unable to receive the file.
    pub const CANT_RECEIVE: u8 = 3;
    /// File not found.
    pub const FILE_NOT_FOUND: u8 = 4;
    /// Access denied.
    pub const ACCESS_DENIED: u8 = 5;
    /// Unknown session id.
    pub const UNKNOWN_ID: u8 = 6;
    /// Did not delete the file.
    pub const DID_NOT_DELETE: u8 = 7;
    /// File too big.
    pub const FILE_TOO_BIG: u8 = 8;
    /// Bad offset.
    pub const BAD_OFFSET: u8 = 9;
    /// Bad packet.
    pub const BAD_PACKET: u8 = 10;
    /// Bad request.
    pub const BAD_REQUEST: u8 = 11;
    /// Internal timeout.
    pub const INTERNAL_TIMEOUT: u8 = 12;
    /// Bad DATA flags.
    pub const BAD_DATA_FLAG: u8 = 13;
    /// Receiver no longer interested.
    pub const RX_NOT_INTERESTED: u8 = 14;
    /// File in use.
    pub const FILE_IN_USE: u8 = 15;
    /// METADATA required before DATA.
    pub const METADATA_REQUIRED: u8 = 16;
}

/// Directory-entry properties (§5, flags bits 6-7).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Properties {
    /// 0: a normal file.
    #[default]
    File,
    /// 1: a normal directory.
    Directory,
    /// 2: a special file (a stream, a device).
    SpecialFile,
    /// 3: a special directory.
    SpecialDirectory,
}

impl Properties {
    fn code(self) -> u16 {
        match self {
            Properties::File => 0,
            Properties::Directory => 1,
            Properties::SpecialFile => 2,
            Properties::SpecialDirectory => 3,
        }
    }

    fn from_code(c: u16) -> Properties {
        match c & 3 {
            0 => Properties::File,
            1 => Properties::Directory,
            2 => Properties::SpecialFile,
            _ => Properties::SpecialDirectory,
        }
    }
}

/// A directory entry (§5): 16-bit flags (bit 0 always 1, bits 6-7
/// properties, bits 8-9 the size's descriptor), the size, mtime and ctime
/// in seconds since 2000-01-01 00:00:00 UTC, and a NUL-terminated path of
/// at most [`MAX_NAME_LEN`] bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DirEntry {
    /// What the entry is.
    pub properties: Properties,
    /// Descriptor size of `size`.
    pub descriptor: DescriptorSize,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, seconds since 2000-01-01 UTC.
    pub mtime: u32,
    /// Creation time, seconds since 2000-01-01 UTC.
    pub ctime: u32,
    /// Path, without the NUL.
    pub path: Vec<u8>,
}

/// BEACON (§4.1).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Beacon {
    /// Largest descriptor size the sender supports (bits 8-9).
    pub descriptor: DescriptorSize,
    /// Streams supported (bit 11).
    pub streams: bool,
    /// Willingness to send, 2 bits (12-13): 0 no, 2 capable, 3 yes.
    pub tx_willing: u8,
    /// Willingness to receive, 2 bits (14-15), same values.
    pub rx_willing: u8,
    /// UDP-Lite supported (bit 16).
    pub udp_lite: bool,
    /// Free space in kilobytes, if advertised (bit 17), written with the
    /// given descriptor size (bits 18-19).
    pub free_space: Option<(DescriptorSize, u64)>,
    /// Endpoint identifier: the rest of the frame.
    pub eid: Vec<u8>,
}

/// REQUEST (§4.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// Descriptor size the requester supports (bits 8-9).
    pub descriptor: DescriptorSize,
    /// Session id, chosen by the requester.
    pub session: u32,
    /// Streams supported (bit 11).
    pub streams: bool,
    /// Willing to send (bits 12-13, as BEACON's: 0 no, 1 invalid, 2
    /// capable, 3 yes). The Go implementation's flag table defines it
    /// here and its responder refuses a put whose value is not 3;
    /// Vallona's `flags.txt` has one "willingness" field in 12-13 instead.
    /// We follow the Go table (issue 29, docs/saratoga.md).
    pub tx_willing: u8,
    /// Willing to receive (bits 14-15, Go table): its responder refuses a
    /// get whose value is not 3. Vallona reads bit 14 as the session type
    /// and bit 15 as file-or-directory; Go's own table also lists
    /// `fileordir` at bit 15, overlapping this field.
    pub rx_willing: u8,
    /// UDP-Lite supported (bit 16).
    pub udp_lite: bool,
    /// Request type (bits 24-31).
    pub kind: RequestType,
    /// File name, without the NUL.
    pub name: Vec<u8>,
    /// Optional authentication field: the bytes after the name's NUL.
    pub auth: Vec<u8>,
}

/// METADATA (§4.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metadata {
    /// Descriptor size of the transfer's offsets (bits 8-9).
    pub descriptor: DescriptorSize,
    /// Session id.
    pub session: u32,
    /// Transfer type (bits 10-11).
    pub transfer: TransferType,
    /// Transfer terminated rather than in progress (bit 12).
    pub terminated: bool,
    /// UDP-Lite reliability (bit 13).
    pub udp_lite: bool,
    /// The whole file's checksum.
    pub checksum: Checksum,
    /// The file's directory entry.
    pub entry: DirEntry,
}

/// DATA (§4.4). The payload is the bytes after the header; the `Repr`
/// records only its length (the runtime writes and reads file bytes there).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Data {
    /// Descriptor size of `offset` (bits 8-9).
    pub descriptor: DescriptorSize,
    /// Session id.
    pub session: u32,
    /// Transfer type (bits 10-11).
    pub transfer: TransferType,
    /// The sender asks for a STATUS (bit 15).
    pub request_status: bool,
    /// The last byte of the file is in this frame (bit 16).
    pub eod: bool,
    /// Timestamp/nonce (bit 12): opaque to the receiver, echoed in the
    /// STATUS this frame asks for.
    pub timestamp: Option<[u8; TIMESTAMP_LEN]>,
    /// Offset of the payload's first byte in the file.
    pub offset: u64,
    /// Payload bytes.
    pub payload_len: usize,
}

/// STATUS (§4.5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    /// Descriptor size of the offsets (bits 8-9).
    pub descriptor: DescriptorSize,
    /// Session id.
    pub session: u32,
    /// METADATA has been received (bit 13 clear).
    pub metadata_received: bool,
    /// The hole list does not hold every hole (bit 14).
    pub incomplete: bool,
    /// Sent without a request (bit 15).
    pub voluntary: bool,
    /// Error code (bits 24-31), [`error_code::SUCCESS`] normally.
    pub error: u8,
    /// Timestamp/nonce echoed from the DATA that asked (bit 12).
    pub timestamp: Option<[u8; TIMESTAMP_LEN]>,
    /// Progress indicator: lowest offset not yet received.
    pub progress: u64,
    /// Offset of the DATA frame this STATUS answers.
    pub in_response_to: u64,
    /// Holes, `[start, end)`, in increasing order, disjoint.
    pub holes: Vec<(u64, u64)>,
}

/// A parsed frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Repr {
    /// BEACON.
    Beacon(Beacon),
    /// REQUEST.
    Request(Request),
    /// METADATA.
    Metadata(Metadata),
    /// DATA.
    Data(Data),
    /// STATUS.
    Status(Status),
}

mod bit {
    /// The mask of the flags word's bit `i` (bit 0 the most significant).
    pub const fn at(i: u32) -> u32 {
        1 << (31 - i)
    }
    /// The value of the field of `len` bits whose first bit is `msb`.
    pub const fn get(flags: u32, msb: u32, len: u32) -> u32 {
        (flags >> (32 - msb - len)) & ((1 << len) - 1)
    }
    /// `value` placed in the field of `len` bits at `msb`.
    pub const fn put(value: u32, msb: u32, len: u32) -> u32 {
        (value & ((1 << len) - 1)) << (32 - msb - len)
    }
}

/// A checked view of a frame in a buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Frame<T> {
    /// Wraps a buffer without checks; accessors read missing bytes as 0.
    pub const fn new_unchecked(buffer: T) -> Frame<T> {
        Frame { buffer }
    }

    /// Wraps a buffer after [`Frame::check_len`].
    pub fn new_checked(buffer: T) -> Result<Frame<T>, Error> {
        let f = Frame::new_unchecked(buffer);
        f.check_len()?;
        Ok(f)
    }

    /// Checks the length against [`MAX_FRAME_LEN`], the version, the type,
    /// and that the fixed header (flags, session, timestamp, first
    /// descriptor field where the type has them) is in the buffer.
    pub fn check_len(&self) -> Result<(), Error> {
        let len = self.buffer.as_ref().len();
        if len > MAX_FRAME_LEN {
            return Err(Error::TooLong { len });
        }
        if len < 4 {
            return Err(Error::Truncated {
                frame: "frame",
                field: "flags",
                needed: 4,
                have: len,
            });
        }
        if self.version() != VERSION {
            return Err(Error::BadVersion(self.version()));
        }
        let t = self
            .frame_type()
            .ok_or(Error::BadFrameType(self.type_code()))?;
        let needed = self.fixed_len(t);
        if len < needed {
            return Err(Error::Truncated {
                frame: t.name(),
                field: "header",
                needed,
                have: len,
            });
        }
        Ok(())
    }

    /// Bytes of the header up to the first variable part.
    fn fixed_len(&self, t: FrameType) -> usize {
        let d = self.descriptor().bytes();
        let ts = if self.has_timestamp() {
            TIMESTAMP_LEN
        } else {
            0
        };
        match t {
            FrameType::Beacon => 4,
            FrameType::Request | FrameType::Metadata => 8,
            FrameType::Data => 8 + ts + d,
            FrameType::Status => 8 + ts + 2 * d,
        }
    }

    /// The buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The 32-bit flags word.
    pub fn flags(&self) -> u32 {
        let b = self.buffer.as_ref();
        b.get(..4)
            .map_or(0, |w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
    }

    /// Version (bits 0-2).
    pub fn version(&self) -> u8 {
        bit::get(self.flags(), 0, 3) as u8
    }

    /// Raw type code (bits 3-7).
    pub fn type_code(&self) -> u8 {
        bit::get(self.flags(), 3, 5) as u8
    }

    /// Frame type, if known.
    pub fn frame_type(&self) -> Option<FrameType> {
        FrameType::from_code(self.type_code())
    }

    /// Descriptor size (bits 8-9).
    pub fn descriptor(&self) -> DescriptorSize {
        DescriptorSize::from_code(bit::get(self.flags(), 8, 2))
    }

    /// DATA/STATUS: timestamp present (bit 12).
    pub fn has_timestamp(&self) -> bool {
        matches!(self.frame_type(), Some(FrameType::Data | FrameType::Status))
            && self.flags() & bit::at(12) != 0
    }

    /// Session id (0 for a BEACON, which has none).
    pub fn session(&self) -> u32 {
        match self.frame_type() {
            Some(FrameType::Beacon) | None => 0,
            _ => self
                .buffer
                .as_ref()
                .get(4..8)
                .map_or(0, |w| u32::from_be_bytes([w[0], w[1], w[2], w[3]])),
        }
    }

    /// DATA: the offset field (0 for other types or a value beyond 64
    /// bits; [`Repr::parse`] reports the latter).
    pub fn data_offset(&self) -> u64 {
        if self.frame_type() != Some(FrameType::Data) {
            return 0;
        }
        let at = 8 + if self.has_timestamp() {
            TIMESTAMP_LEN
        } else {
            0
        };
        let mut c = Cursor::new(self.buffer.as_ref(), "DATA");
        c.pos = at;
        c.offset(self.descriptor(), "offset").unwrap_or(0)
    }

    /// DATA: the payload bytes (empty for other types).
    pub fn payload(&self) -> &[u8] {
        if self.frame_type() != Some(FrameType::Data) {
            return &[];
        }
        let h = self.fixed_len(FrameType::Data);
        self.buffer.as_ref().get(h..).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Frame<T> {
    /// DATA: the payload bytes, writable (empty for other types).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        if self.frame_type() != Some(FrameType::Data) {
            return &mut [];
        }
        let h = self.fixed_len(FrameType::Data);
        self.buffer.as_mut().get_mut(h..).unwrap_or(&mut [])
    }
}

/// Writes a checksum's bytes (METADATA, §4.3).
fn write_checksum(checksum: &Checksum, out: &mut Vec<u8>) {
    match checksum {
        Checksum::None => {}
        Checksum::Crc32(c) => out.extend_from_slice(&c.to_be_bytes()),
        Checksum::Md5(d) => out.extend_from_slice(d),
        Checksum::Sha1(d) => out.extend_from_slice(d),
    }
}

/// The checksum of type `kind` in `b` (at least `4 * kind.words()` bytes).
fn checksum_from_bytes(kind: ChecksumType, b: &[u8]) -> Checksum {
    let mut a16 = [0u8; 16];
    let mut a20 = [0u8; 20];
    match kind {
        ChecksumType::None => Checksum::None,
        ChecksumType::Crc32 => {
            let mut w = [0u8; 4];
            w.copy_from_slice(&b[..4]);
            Checksum::Crc32(u32::from_be_bytes(w))
        }
        ChecksumType::Md5 => {
            a16.copy_from_slice(&b[..16]);
            Checksum::Md5(a16)
        }
        ChecksumType::Sha1 => {
            a20.copy_from_slice(&b[..20]);
            Checksum::Sha1(a20)
        }
    }
}

/// A bounds-checked reader.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    frame: &'static str,
}

impl<'a> Cursor<'a> {
    fn new(buf: &'a [u8], frame: &'static str) -> Cursor<'a> {
        Cursor { buf, pos: 0, frame }
    }

    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], Error> {
        let end = self.pos.saturating_add(n);
        match self.buf.get(self.pos..end) {
            Some(b) => {
                self.pos = end;
                Ok(b)
            }
            None => Err(Error::Truncated {
                frame: self.frame,
                field,
                needed: end,
                have: self.buf.len(),
            }),
        }
    }

    fn uint(&mut self, n: usize, field: &'static str) -> Result<u64, Error> {
        let b = self.take(n, field)?;
        Ok(b.iter().fold(0u64, |a, &x| (a << 8) | u64::from(x)))
    }

    fn offset(&mut self, d: DescriptorSize, field: &'static str) -> Result<u64, Error> {
        if d == DescriptorSize::D128 {
            let hi = self.uint(8, field)?;
            let lo = self.uint(8, field)?;
            if hi != 0 {
                return Err(Error::Offset128 {
                    frame: self.frame,
                    field,
                });
            }
            Ok(lo)
        } else {
            self.uint(d.bytes(), field)
        }
    }

    fn rest(&mut self) -> &'a [u8] {
        let r = self.buf.get(self.pos..).unwrap_or(&[]);
        self.pos = self.buf.len();
        r
    }

    fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    /// A NUL-terminated name of at most [`MAX_NAME_LEN`] bytes.
    fn name(&mut self) -> Result<Vec<u8>, Error> {
        let rest = self.buf.get(self.pos..).unwrap_or(&[]);
        let window = &rest[..rest.len().min(MAX_NAME_LEN + 1)];
        match window.iter().position(|&b| b == 0) {
            Some(n) => {
                self.pos += n + 1;
                Ok(window[..n].to_vec())
            }
            None if rest.len() > MAX_NAME_LEN => Err(Error::NameTooLong {
                frame: self.frame,
                len: rest.len(),
            }),
            None => Err(Error::BadName {
                frame: self.frame,
                reason: "no terminating NUL",
            }),
        }
    }
}

fn timestamp(c: &mut Cursor<'_>) -> Result<[u8; TIMESTAMP_LEN], Error> {
    let mut t = [0u8; TIMESTAMP_LEN];
    t.copy_from_slice(c.take(TIMESTAMP_LEN, "timestamp")?);
    Ok(t)
}

/// Checks a hole list: each hole non-empty and starting at or after the
/// previous one's end (§4.5: holes are listed in order and do not overlap).
pub fn check_holes(holes: &[(u64, u64)]) -> Result<(), Error> {
    let mut prev_end = 0u64;
    for (index, &(start, end)) in holes.iter().enumerate() {
        if start >= end || (index > 0 && start < prev_end) {
            return Err(Error::Hole {
                index,
                start,
                end,
                prev_end,
            });
        }
        prev_end = end;
    }
    Ok(())
}

impl Repr {
    /// Parses a checked frame. Lengths, names, checksum lengths, hole
    /// order and 128-bit values are validated; nothing panics.
    pub fn parse<T: AsRef<[u8]>>(frame: &Frame<T>) -> Result<Repr, Error> {
        frame.check_len()?;
        let flags = frame.flags();
        let t = frame
            .frame_type()
            .ok_or(Error::BadFrameType(frame.type_code()))?;
        let descriptor = frame.descriptor();
        let mut c = Cursor::new(frame.buffer.as_ref(), t.name());
        c.take(4, "flags")?;
        let on = |i: u32| flags & bit::at(i) != 0;
        Ok(match t {
            FrameType::Beacon => {
                let free_space = if on(17) {
                    let d = DescriptorSize::from_code(bit::get(flags, 18, 2));
                    Some((d, c.offset(d, "free space")?))
                } else {
                    None
                };
                let eid = c.rest().to_vec();
                Repr::Beacon(Beacon {
                    descriptor,
                    streams: on(11),
                    tx_willing: bit::get(flags, 12, 2) as u8,
                    rx_willing: bit::get(flags, 14, 2) as u8,
                    udp_lite: on(16),
                    free_space,
                    eid,
                })
            }
            FrameType::Request => {
                let session = c.uint(4, "session")? as u32;
                let code = bit::get(flags, 24, 8) as u8;
                let kind = RequestType::from_code(code).ok_or(Error::BadField {
                    frame: "REQUEST",
                    field: "request type",
                    value: code.into(),
                })?;
                let name = c.name()?;
                let auth = c.rest().to_vec();
                Repr::Request(Request {
                    descriptor,
                    session,
                    streams: on(11),
                    tx_willing: bit::get(flags, 12, 2) as u8,
                    rx_willing: bit::get(flags, 14, 2) as u8,
                    udp_lite: on(16),
                    kind,
                    name,
                    auth,
                })
            }
            FrameType::Metadata => {
                let session = c.uint(4, "session")? as u32;
                let code = bit::get(flags, 28, 4);
                let kind = ChecksumType::from_code(code).ok_or(Error::BadField {
                    frame: "METADATA",
                    field: "checksum type",
                    value: code.into(),
                })?;
                let words = bit::get(flags, 24, 4) as usize;
                if words != kind.words() {
                    return Err(Error::BadField {
                        frame: "METADATA",
                        field: "checksum length",
                        value: words as u64,
                    });
                }
                let checksum = checksum_from_bytes(kind, c.take(4 * words, "checksum")?);
                let eflags = c.uint(2, "directory entry flags")? as u16;
                if eflags & 0x8000 == 0 {
                    return Err(Error::BadField {
                        frame: "METADATA",
                        field: "directory entry flags bit 0",
                        value: 0,
                    });
                }
                let edesc = DescriptorSize::from_code(u32::from((eflags >> 6) & 3));
                let size = c.offset(edesc, "file size")?;
                let mtime = c.uint(4, "mtime")? as u32;
                let ctime = c.uint(4, "ctime")? as u32;
                let path = c.name()?;
                if c.remaining() > 0 {
                    return Err(Error::TrailingBytes {
                        frame: "METADATA",
                        count: c.remaining(),
                    });
                }
                // §4.3: the transfer's offsets reach the file size, so the
                // frame's descriptor must hold it.
                if size > descriptor.max_value() {
                    return Err(Error::Unrepresentable {
                        frame: "METADATA",
                        field: "file size in the transfer descriptor",
                        value: size,
                        bits: descriptor.bits(),
                    });
                }
                Repr::Metadata(Metadata {
                    descriptor,
                    session,
                    transfer: TransferType::from_code(bit::get(flags, 10, 2)),
                    terminated: on(12),
                    udp_lite: on(13),
                    checksum,
                    entry: DirEntry {
                        properties: Properties::from_code((eflags >> 8) & 3),
                        descriptor: edesc,
                        size,
                        mtime,
                        ctime,
                        path,
                    },
                })
            }
            FrameType::Data => {
                let session = c.uint(4, "session")? as u32;
                let ts = if on(12) {
                    Some(timestamp(&mut c)?)
                } else {
                    None
                };
                let offset = c.offset(descriptor, "offset")?;
                let payload_len = c.remaining();
                Repr::Data(Data {
                    descriptor,
                    session,
                    transfer: TransferType::from_code(bit::get(flags, 10, 2)),
                    request_status: on(15),
                    eod: on(16),
                    timestamp: ts,
                    offset,
                    payload_len,
                })
            }
            FrameType::Status => {
                let session = c.uint(4, "session")? as u32;
                let ts = if on(12) {
                    Some(timestamp(&mut c)?)
                } else {
                    None
                };
                let progress = c.offset(descriptor, "progress indicator")?;
                let in_response_to = c.offset(descriptor, "in-response-to")?;
                let pair = 2 * descriptor.bytes();
                if !c.remaining().is_multiple_of(pair) {
                    return Err(Error::TrailingBytes {
                        frame: "STATUS",
                        count: c.remaining() % pair,
                    });
                }
                let mut holes = Vec::with_capacity(c.remaining() / pair);
                while c.remaining() > 0 {
                    let s = c.offset(descriptor, "hole start")?;
                    let e = c.offset(descriptor, "hole end")?;
                    holes.push((s, e));
                }
                check_holes(&holes)?;
                Repr::Status(Status {
                    descriptor,
                    session,
                    metadata_received: !on(13),
                    incomplete: on(14),
                    voluntary: on(15),
                    error: bit::get(flags, 24, 8) as u8,
                    timestamp: ts,
                    progress,
                    in_response_to,
                    holes,
                })
            }
        })
    }

    /// The frame's type.
    pub fn frame_type(&self) -> FrameType {
        match self {
            Repr::Beacon(_) => FrameType::Beacon,
            Repr::Request(_) => FrameType::Request,
            Repr::Metadata(_) => FrameType::Metadata,
            Repr::Data(_) => FrameType::Data,
            Repr::Status(_) => FrameType::Status,
        }
    }

    /// Header bytes (the whole frame except a DATA payload).
    pub fn header_len(&self) -> usize {
        match self {
            Repr::Beacon(b) => 4 + b.free_space.map_or(0, |(d, _)| d.bytes()) + b.eid.len(),
            Repr::Request(r) => 8 + r.name.len() + 1 + r.auth.len(),
            Repr::Metadata(m) => {
                8 + 4 * m.checksum.kind().words()
                    + 2
                    + m.entry.descriptor.bytes()
                    + 8
                    + m.entry.path.len()
                    + 1
            }
            Repr::Data(d) => 8 + d.timestamp.map_or(0, |_| TIMESTAMP_LEN) + d.descriptor.bytes(),
            Repr::Status(s) => {
                8 + s.timestamp.map_or(0, |_| TIMESTAMP_LEN)
                    + (2 + 2 * s.holes.len()) * s.descriptor.bytes()
            }
        }
    }

    /// Bytes of the whole frame.
    pub fn buffer_len(&self) -> usize {
        self.header_len()
            + match self {
                Repr::Data(d) => d.payload_len,
                _ => 0,
            }
    }

    /// The flags word.
    pub fn flags(&self) -> u32 {
        let common = |t: FrameType, d: DescriptorSize| {
            bit::put(u32::from(VERSION), 0, 3) | bit::put(t as u32, 3, 5) | bit::put(d.code(), 8, 2)
        };
        let b = |on: bool, i: u32| if on { bit::at(i) } else { 0 };
        match self {
            Repr::Beacon(x) => {
                common(FrameType::Beacon, x.descriptor)
                    | b(x.streams, 11)
                    | bit::put(x.tx_willing.into(), 12, 2)
                    | bit::put(x.rx_willing.into(), 14, 2)
                    | b(x.udp_lite, 16)
                    | x.free_space
                        .map_or(0, |(d, _)| bit::at(17) | bit::put(d.code(), 18, 2))
            }
            Repr::Request(x) => {
                common(FrameType::Request, x.descriptor)
                    | b(x.streams, 11)
                    | bit::put(x.tx_willing.into(), 12, 2)
                    | bit::put(x.rx_willing.into(), 14, 2)
                    | b(x.udp_lite, 16)
                    | bit::put(x.kind.code().into(), 24, 8)
            }
            Repr::Metadata(x) => {
                common(FrameType::Metadata, x.descriptor)
                    | bit::put(x.transfer.code(), 10, 2)
                    | b(x.terminated, 12)
                    | b(x.udp_lite, 13)
                    | bit::put(x.checksum.kind().words() as u32, 24, 4)
                    | bit::put(x.checksum.kind().code(), 28, 4)
            }
            Repr::Data(x) => {
                common(FrameType::Data, x.descriptor)
                    | bit::put(x.transfer.code(), 10, 2)
                    | b(x.timestamp.is_some(), 12)
                    | b(x.request_status, 15)
                    | b(x.eod, 16)
            }
            Repr::Status(x) => {
                common(FrameType::Status, x.descriptor)
                    | b(x.timestamp.is_some(), 12)
                    | b(!x.metadata_received, 13)
                    | b(x.incomplete, 14)
                    | b(x.voluntary, 15)
                    | bit::put(x.error.into(), 24, 8)
            }
        }
    }

    /// The header bytes (everything but a DATA payload), validated.
    pub fn header_bytes(&self) -> Result<Vec<u8>, Error> {
        let name = self.frame_type().name();
        let mut out = Vec::with_capacity(self.header_len());
        out.extend_from_slice(&self.flags().to_be_bytes());
        let put = |out: &mut Vec<u8>, d: DescriptorSize, v: u64, field: &'static str| {
            if v > d.max_value() {
                return Err(Error::Unrepresentable {
                    frame: name,
                    field,
                    value: v,
                    bits: d.bits(),
                });
            }
            if d == DescriptorSize::D128 {
                out.extend_from_slice(&[0u8; 8]);
            }
            let n = d.bytes().min(8);
            out.extend_from_slice(&v.to_be_bytes()[8 - n..]);
            Ok(())
        };
        let check_name = |n: &[u8]| {
            if n.len() > MAX_NAME_LEN {
                Err(Error::NameTooLong {
                    frame: name,
                    len: n.len(),
                })
            } else if n.contains(&0) {
                Err(Error::BadName {
                    frame: name,
                    reason: "interior NUL byte",
                })
            } else {
                Ok(())
            }
        };
        match self {
            Repr::Beacon(x) => {
                if x.tx_willing > 3 || x.rx_willing > 3 {
                    return Err(Error::BadField {
                        frame: name,
                        field: "willing",
                        value: x.tx_willing.max(x.rx_willing).into(),
                    });
                }
                if let Some((d, v)) = x.free_space {
                    put(&mut out, d, v, "free space")?;
                }
                out.extend_from_slice(&x.eid);
            }
            Repr::Request(x) => {
                if x.tx_willing > 3 || x.rx_willing > 3 {
                    return Err(Error::BadField {
                        frame: name,
                        field: "willing",
                        value: x.tx_willing.max(x.rx_willing).into(),
                    });
                }
                check_name(&x.name)?;
                out.extend_from_slice(&x.session.to_be_bytes());
                out.extend_from_slice(&x.name);
                out.push(0);
                out.extend_from_slice(&x.auth);
            }
            Repr::Metadata(x) => {
                check_name(&x.entry.path)?;
                out.extend_from_slice(&x.session.to_be_bytes());
                write_checksum(&x.checksum, &mut out);
                let eflags: u16 = 0x8000
                    | (x.entry.properties.code() << 8)
                    | ((x.entry.descriptor.code() as u16) << 6);
                out.extend_from_slice(&eflags.to_be_bytes());
                if x.entry.size > x.descriptor.max_value() {
                    return Err(Error::Unrepresentable {
                        frame: name,
                        field: "file size in the transfer descriptor",
                        value: x.entry.size,
                        bits: x.descriptor.bits(),
                    });
                }
                put(&mut out, x.entry.descriptor, x.entry.size, "file size")?;
                out.extend_from_slice(&x.entry.mtime.to_be_bytes());
                out.extend_from_slice(&x.entry.ctime.to_be_bytes());
                out.extend_from_slice(&x.entry.path);
                out.push(0);
            }
            Repr::Data(x) => {
                out.extend_from_slice(&x.session.to_be_bytes());
                if let Some(t) = x.timestamp {
                    out.extend_from_slice(&t);
                }
                put(&mut out, x.descriptor, x.offset, "offset")?;
            }
            Repr::Status(x) => {
                check_holes(&x.holes)?;
                out.extend_from_slice(&x.session.to_be_bytes());
                if let Some(t) = x.timestamp {
                    out.extend_from_slice(&t);
                }
                put(&mut out, x.descriptor, x.progress, "progress indicator")?;
                put(&mut out, x.descriptor, x.in_response_to, "in-response-to")?;
                for &(s, e) in &x.holes {
                    put(&mut out, x.descriptor, s, "hole start")?;
                    put(&mut out, x.descriptor, e, "hole end")?;
                }
            }
        }
        debug_assert_eq!(out.len(), self.header_len());
        if self.buffer_len() > MAX_FRAME_LEN {
            return Err(Error::TooLong {
                len: self.buffer_len(),
            });
        }
        Ok(out)
    }

    /// Writes the frame's header into the start of `frame`'s buffer (at
    /// least [`Repr::buffer_len`] bytes); a DATA payload is left as it is.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut Frame<T>) -> Result<(), Error> {
        let needed = self.buffer_len();
        let header = self.header_bytes()?;
        match frame.buffer.as_mut().get_mut(..needed) {
            Some(out) => {
                out[..header.len()].copy_from_slice(&header);
                Ok(())
            }
            None => Err(Error::BufferTooSmall { needed }),
        }
    }

    /// The frame as a new vector (a DATA payload as zeros).
    pub fn to_vec(&self) -> Result<Vec<u8>, Error> {
        let mut v = self.header_bytes()?;
        v.resize(self.buffer_len(), 0);
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smallest_descriptor() {
        assert_eq!(DescriptorSize::smallest_for(0), DescriptorSize::D16);
        assert_eq!(DescriptorSize::smallest_for(65_535), DescriptorSize::D16);
        assert_eq!(DescriptorSize::smallest_for(65_536), DescriptorSize::D32);
        assert_eq!(
            DescriptorSize::smallest_for(u64::from(u32::MAX)),
            DescriptorSize::D32
        );
        assert_eq!(
            DescriptorSize::smallest_for(u64::from(u32::MAX) + 1),
            DescriptorSize::D64
        );
        assert_eq!(DescriptorSize::smallest_for(u64::MAX), DescriptorSize::D64);
        assert_eq!(DescriptorSize::D128.bytes(), 16);
        assert_eq!(DescriptorSize::D16.bytes(), 2);
    }

    #[test]
    fn hole_error_names_the_hole() {
        let e = check_holes(&[(0, 10), (20, 30), (40, 50), (900, 800)]).unwrap_err();
        assert_eq!(e.to_string(), "STATUS hole 3: start 900 > end 800");
        assert!(check_holes(&[(0, 10), (10, 20)]).is_ok());
        assert!(check_holes(&[(0, 10), (5, 20)]).is_err());
        assert!(check_holes(&[(5, 5)]).is_err());
    }

    #[test]
    fn checksums() {
        assert_eq!(
            Checksum::compute(ChecksumType::Crc32, b"123456789"),
            Checksum::Crc32(0xCBF4_3926)
        );
        let md5 = Checksum::compute(ChecksumType::Md5, b"");
        assert_eq!(
            md5,
            Checksum::Md5([
                0xd4, 0x1d, 0x8c, 0xd9, 0x8f, 0x00, 0xb2, 0x04, 0xe9, 0x80, 0x09, 0x98, 0xec, 0xf8,
                0x42, 0x7e
            ])
        );
        let sha = Checksum::compute(ChecksumType::Sha1, b"abc");
        assert_eq!(
            sha,
            Checksum::Sha1([
                0xa9, 0x99, 0x3e, 0x36, 0x47, 0x06, 0x81, 0x6a, 0xba, 0x3e, 0x25, 0x71, 0x78, 0x50,
                0xc2, 0x6c, 0x9c, 0xd0, 0xd8, 0x9d
            ])
        );
        assert!(sha.verify(b"abc"));
        assert!(!sha.verify(b"abd"));
    }
}
