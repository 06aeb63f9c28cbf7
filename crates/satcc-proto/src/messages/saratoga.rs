//! The typed Saratoga messages (draft-wood-tsvwg-saratoga-22 §4.2-§4.5)
//! carried by [`crate::Message::SaraRequest`], [`crate::Message::SaraMetadata`],
//! [`crate::Message::SaraData`] and [`crate::Message::SaraStatus`], and the
//! plain field types they hold ([`DescriptorSize`], [`Checksum`],
//! [`RequestType`], [`TIMESTAMP_LEN`]).
//!
//! The messages are re-exported from `crate::saratoga::msg` (where their
//! conversion to and from wire frames lives, `to_repr`/`from_repr`) and
//! `crate::saratoga`; the field types from `crate::saratoga::wire` (the
//! frame codec, which writes and parses them) and `crate::saratoga`.

/// Length of the timestamp/nonce field of DATA and STATUS (§4.4, §4.5).
pub const TIMESTAMP_LEN: usize = 16;

/// Offset field width (§4: flags bits 8-9).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DescriptorSize {
    /// 16-bit offsets (code 0).
    #[default]
    D16,
    /// 32-bit offsets (code 1).
    D32,
    /// 64-bit offsets (code 2).
    D64,
    /// 128-bit offsets (code 3); values must still fit `u64` here.
    D128,
}

impl DescriptorSize {
    /// The 2-bit code.
    pub fn code(self) -> u32 {
        match self {
            DescriptorSize::D16 => 0,
            DescriptorSize::D32 => 1,
            DescriptorSize::D64 => 2,
            DescriptorSize::D128 => 3,
        }
    }

    /// The size of a 2-bit code (only its low two bits count).
    pub fn from_code(code: u32) -> DescriptorSize {
        match code & 3 {
            0 => DescriptorSize::D16,
            1 => DescriptorSize::D32,
            2 => DescriptorSize::D64,
            _ => DescriptorSize::D128,
        }
    }

    /// Bytes of one field.
    pub fn bytes(self) -> usize {
        2 << self.code()
    }

    /// The largest value a field holds (in `u64`).
    pub fn max_value(self) -> u64 {
        match self {
            DescriptorSize::D16 => u64::from(u16::MAX),
            DescriptorSize::D32 => u64::from(u32::MAX),
            DescriptorSize::D64 | DescriptorSize::D128 => u64::MAX,
        }
    }

    /// The smallest descriptor that holds every offset of a file of
    /// `file_size` bytes, the size itself included (a STATUS's progress
    /// indicator and hole ends reach it). §4: "the descriptor size used
    /// SHOULD be the smallest that can represent the file size".
    pub fn smallest_for(file_size: u64) -> DescriptorSize {
        if file_size <= DescriptorSize::D16.max_value() {
            DescriptorSize::D16
        } else if file_size <= DescriptorSize::D32.max_value() {
            DescriptorSize::D32
        } else {
            DescriptorSize::D64
        }
    }

    /// Bits per field, for messages.
    pub fn bits(self) -> u32 {
        8 * self.bytes() as u32
    }
}

/// Checksum algorithm of METADATA (§4.3, bits 28-31).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ChecksumType {
    /// No checksum (0).
    #[default]
    None,
    /// CRC-32 (1), one 32-bit word.
    Crc32,
    /// MD5 (2), four words.
    Md5,
    /// SHA-1 (3), five words.
    Sha1,
}

impl ChecksumType {
    /// The 4-bit code.
    pub fn code(self) -> u32 {
        match self {
            ChecksumType::None => 0,
            ChecksumType::Crc32 => 1,
            ChecksumType::Md5 => 2,
            ChecksumType::Sha1 => 3,
        }
    }

    /// The type with this code.
    pub fn from_code(code: u32) -> Option<ChecksumType> {
        Some(match code {
            0 => ChecksumType::None,
            1 => ChecksumType::Crc32,
            2 => ChecksumType::Md5,
            3 => ChecksumType::Sha1,
            _ => return None,
        })
    }

    /// Checksum length in 32-bit words (the METADATA bits 24-27).
    pub fn words(self) -> usize {
        match self {
            ChecksumType::None => 0,
            ChecksumType::Crc32 => 1,
            ChecksumType::Md5 => 4,
            ChecksumType::Sha1 => 5,
        }
    }
}

/// A checksum value (§4.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Checksum {
    /// None.
    #[default]
    None,
    /// CRC-32 (IEEE 802.3, as zlib).
    Crc32(u32),
    /// MD5 digest.
    Md5([u8; 16]),
    /// SHA-1 digest.
    Sha1([u8; 20]),
}

impl Checksum {
    /// The checksum of `data` with algorithm `kind`.
    pub fn compute(kind: ChecksumType, data: &[u8]) -> Checksum {
        use md5::Digest as _;
        match kind {
            ChecksumType::None => Checksum::None,
            ChecksumType::Crc32 => Checksum::Crc32(crc32fast::hash(data)),
            ChecksumType::Md5 => Checksum::Md5(md5::Md5::digest(data).into()),
            ChecksumType::Sha1 => Checksum::Sha1(sha1::Sha1::digest(data).into()),
        }
    }

    /// Its algorithm.
    pub fn kind(&self) -> ChecksumType {
        match self {
            Checksum::None => ChecksumType::None,
            Checksum::Crc32(_) => ChecksumType::Crc32,
            Checksum::Md5(_) => ChecksumType::Md5,
            Checksum::Sha1(_) => ChecksumType::Sha1,
        }
    }

    /// Whether `data` has this checksum (always true for `None`).
    pub fn verify(&self, data: &[u8]) -> bool {
        Checksum::compute(self.kind(), data) == *self
    }
}

/// REQUEST type (§4.2, bits 24-31).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RequestType {
    /// 0: no action (a keep-alive / capability probe).
    NoAction,
    /// 1: get a file.
    Get,
    /// 2: put a file (announces a PUT).
    Put,
    /// 3: get, then delete at the responder.
    GetDelete,
    /// 4: put, then the sender deletes its copy.
    PutDelete,
    /// 5: delete.
    Delete,
    /// 6: get a directory listing.
    GetDir,
}

impl RequestType {
    /// The 8-bit code.
    pub fn code(self) -> u8 {
        match self {
            RequestType::NoAction => 0,
            RequestType::Get => 1,
            RequestType::Put => 2,
            RequestType::GetDelete => 3,
            RequestType::PutDelete => 4,
            RequestType::Delete => 5,
            RequestType::GetDir => 6,
        }
    }

    /// The type with this code.
    pub fn from_code(v: u8) -> Option<RequestType> {
        Some(match v {
            0 => RequestType::NoAction,
            1 => RequestType::Get,
            2 => RequestType::Put,
            3 => RequestType::GetDelete,
            4 => RequestType::PutDelete,
            5 => RequestType::Delete,
            6 => RequestType::GetDir,
            _ => return None,
        })
    }
}

/// Holes a [`SaraStatus`] carries inline: 2, so that a STATUS (72 bytes)
/// is no larger than a `TcpAck` and `size_of::<Message>()` stays 80. A
/// receiver without a hole store ([`crate::saratoga::StatusHoleStore`])
/// lists the lowest holes first and sets the incomplete flag; the rest
/// follow in later STATUS frames (one per request). With a store (the
/// simulator's), a longer list goes out of line: see
/// [`SaraStatus::stored_holes`].
pub const STATUS_INLINE_HOLES: usize = 2;

/// `n_holes` of a STATUS whose hole list is in a hole store: `holes[0]`
/// is its first hole, `holes[1]` is (store key, number of holes).
const N_HOLES_STORED: u8 = u8::MAX;

/// REQUEST (§4.2): the requester asks for a transaction on a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SaraRequest {
    /// Session id, chosen by the requester.
    pub session: u32,
    /// Largest descriptor the requester handles.
    pub descriptor: DescriptorSize,
    /// Get, put, ...
    pub kind: RequestType,
    /// The file's name key.
    pub name: u64,
}

/// METADATA (§4.3): the file's size, checksum and name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SaraMetadata {
    /// Session id.
    pub session: u32,
    /// Descriptor size of the transfer's offsets.
    pub descriptor: DescriptorSize,
    /// File size in bytes ([`crate::saratoga::UNLIMITED_SIZE`] for an endless bulk
    /// transfer).
    pub file_size: u64,
    /// Checksum of the whole file.
    pub checksum: Checksum,
    /// The file's name key.
    pub name: u64,
}

/// DATA (§4.4) without its payload bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SaraData {
    /// Session id.
    pub session: u32,
    /// Descriptor size of `offset`.
    pub descriptor: DescriptorSize,
    /// Offset of the first payload byte.
    pub offset: u64,
    /// Payload bytes.
    pub len: u32,
    /// Asks for a STATUS (bit 15).
    pub request_status: bool,
    /// Carries the file's last byte (bit 16).
    pub eod: bool,
    /// Timestamp/nonce (bit 12).
    pub ts: Option<[u8; TIMESTAMP_LEN]>,
}

const F_METADATA_MISSING: u8 = 1;
const F_INCOMPLETE: u8 = 2;
const F_VOLUNTARY: u8 = 4;
const F_TS: u8 = 8;

/// STATUS (§4.5) with at most [`STATUS_INLINE_HOLES`] holes. The flags
/// are packed in one byte (accessors below) to keep the message at 72
/// bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SaraStatus {
    /// Progress indicator: the lowest offset not yet received.
    pub progress: u64,
    /// Offset of the DATA frame this STATUS answers.
    pub in_response_to: u64,
    holes: [(u64, u64); STATUS_INLINE_HOLES],
    ts: [u8; TIMESTAMP_LEN],
    /// Session id.
    pub session: u32,
    /// Descriptor size of the offsets.
    pub descriptor: DescriptorSize,
    /// Error code (§4.5), 0 for success.
    pub error: u8,
    flags: u8,
    n_holes: u8,
}

impl SaraStatus {
    /// A STATUS without holes, timestamp or flags (requested, metadata
    /// received, list complete).
    pub fn new(
        session: u32,
        descriptor: DescriptorSize,
        progress: u64,
        in_response_to: u64,
    ) -> SaraStatus {
        SaraStatus {
            progress,
            in_response_to,
            holes: [(0, 0); STATUS_INLINE_HOLES],
            ts: [0; TIMESTAMP_LEN],
            session,
            descriptor,
            error: 0,
            flags: 0,
            n_holes: 0,
        }
    }

    /// The holes listed inline. For a STATUS whose list is out of line
    /// ([`Self::stored_holes`]) this is its first hole only, a valid
    /// partial list (the incomplete flag is then set on such a message
    /// when it is read without the store: see [`Self::without_store`]).
    pub fn holes(&self) -> &[(u64, u64)] {
        if self.n_holes == N_HOLES_STORED {
            return &self.holes[..1];
        }
        &self.holes[..usize::from(self.n_holes).min(STATUS_INLINE_HOLES)]
    }

    /// Where the hole list is when it is out of line: (key in the flow's
    /// [`crate::saratoga::StatusHoleStore`], number of holes). `None`
    /// when [`Self::holes`] is the whole list.
    pub fn stored_holes(&self) -> Option<(u64, usize)> {
        (self.n_holes == N_HOLES_STORED).then(|| {
            let (key, n) = self.holes[1];
            (key, usize::try_from(n).unwrap_or(usize::MAX))
        })
    }

    /// Holes the STATUS frame lists on the wire: the inline ones, or the
    /// stored list's length. The frame's size counts them all.
    pub fn wire_holes(&self) -> usize {
        self.stored_holes()
            .map_or_else(|| self.holes().len(), |(_, n)| n)
    }

    /// Marks the hole list as out of line: `first` is its first hole,
    /// `key` where the store keeps the whole list of `count` holes (at
    /// least 1), `incomplete` whether the receiver had more (§4.5 bit 14).
    pub fn set_stored_holes(
        &mut self,
        first: (u64, u64),
        key: u64,
        count: usize,
        incomplete: bool,
    ) {
        self.holes = [first, (key, count as u64)];
        self.n_holes = N_HOLES_STORED;
        self.set_flag(F_INCOMPLETE, incomplete);
    }

    /// The message as a reader without the hole store sees it: its first
    /// hole inline and the incomplete flag set (a stored list has more
    /// than one hole). Unchanged if the list is inline.
    pub fn without_store(&self) -> SaraStatus {
        let mut s = *self;
        if self.n_holes == N_HOLES_STORED {
            s.holes[1] = (0, 0);
            s.n_holes = 1;
            s.set_flag(F_INCOMPLETE, true);
        }
        s
    }

    /// Sets the hole list from `holes` (in order): the first
    /// [`STATUS_INLINE_HOLES`] are kept and, if there were more, the
    /// incomplete flag is set (§4.5 bit 14).
    pub fn set_holes<I: IntoIterator<Item = (u64, u64)>>(&mut self, holes: I) {
        self.holes = [(0, 0); STATUS_INLINE_HOLES];
        self.n_holes = 0;
        let mut more = false;
        for h in holes {
            if usize::from(self.n_holes) == STATUS_INLINE_HOLES {
                more = true;
                break;
            }
            self.holes[usize::from(self.n_holes)] = h;
            self.n_holes += 1;
        }
        self.set_flag(F_INCOMPLETE, more);
    }

    fn set_flag(&mut self, f: u8, on: bool) {
        if on {
            self.flags |= f;
        } else {
            self.flags &= !f;
        }
    }

    /// METADATA has been received (bit 13 clear).
    pub fn metadata_received(&self) -> bool {
        self.flags & F_METADATA_MISSING == 0
    }
    /// Sets [`Self::metadata_received`].
    pub fn set_metadata_received(&mut self, yes: bool) {
        self.set_flag(F_METADATA_MISSING, !yes);
    }
    /// The hole list is incomplete (bit 14).
    pub fn incomplete(&self) -> bool {
        self.flags & F_INCOMPLETE != 0
    }
    /// Sets [`Self::incomplete`] (after [`Self::set_holes`], which sets it).
    pub fn set_incomplete(&mut self, yes: bool) {
        self.set_flag(F_INCOMPLETE, yes);
    }
    /// Sent voluntarily, not requested (bit 15).
    pub fn voluntary(&self) -> bool {
        self.flags & F_VOLUNTARY != 0
    }
    /// Sets [`Self::voluntary`].
    pub fn set_voluntary(&mut self, yes: bool) {
        self.set_flag(F_VOLUNTARY, yes);
    }
    /// The echoed timestamp (bit 12).
    pub fn timestamp(&self) -> Option<[u8; TIMESTAMP_LEN]> {
        (self.flags & F_TS != 0).then_some(self.ts)
    }
    /// Sets [`Self::timestamp`].
    pub fn set_timestamp(&mut self, ts: Option<[u8; TIMESTAMP_LEN]>) {
        self.ts = ts.unwrap_or([0; TIMESTAMP_LEN]);
        self.set_flag(F_TS, ts.is_some());
    }
}
