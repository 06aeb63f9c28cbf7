//! TCP segments (RFC 9293 §3.1) with the options a congestion controller
//! or a window-rewriting router reads: MSS (RFC 9293 §3.2), window scale
//! and timestamps (RFC 7323 §2, §3), SACK-permitted and SACK blocks
//! (RFC 2018 §2, §3).
//!
//! As the other codecs here (smoltcp's `wire` style): [`Packet`] is a
//! checked view over a buffer with field accessors and setters, [`Repr`]
//! the parsed header (`parse`, `buffer_len`, `emit`). The checksum covers
//! the IPv4 (RFC 9293 §3.1) or IPv6 (RFC 8200 §8.1) pseudo-header, given
//! as [`Endpoints`]. [`Packet::set_window`] rewrites the window field and
//! updates the checksum incrementally (RFC 1624 eqn. 3), which is what a
//! router clamping advertised windows (REFWA) does to ACKs.
//!
//! Header layout (RFC 9293 §3.1):
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 2 | Source Port |
//! | 2 | 2 | Destination Port |
//! | 4 | 4 | Sequence Number |
//! | 8 | 4 | Acknowledgment Number |
//! | 12 | 1 | Data Offset (4 bits), Reserved (4 bits) |
//! | 13 | 1 | CWR ECE URG ACK PSH RST SYN FIN |
//! | 14 | 2 | Window |
//! | 16 | 2 | Checksum |
//! | 18 | 2 | Urgent Pointer |
//! | 20 | 0..40 | Options, padded to a 32-bit boundary |
//!
//! Decoding never panics: every field read is bounds-checked, option
//! parsing stops with a [`WireError`] at the first malformed option.

use std::net::{Ipv4Addr, Ipv6Addr};

use super::bytes::{byte, read, set_byte, write};
use super::checksum;
use super::WireError;

mod field {
    use std::ops::Range;
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const SEQ: Range<usize> = 4..8;
    pub const ACK: Range<usize> = 8..12;
    pub const DATA_OFFSET: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WINDOW: Range<usize> = 14..16;
    pub const CHECKSUM: Range<usize> = 16..18;
    pub const URGENT: Range<usize> = 18..20;
    pub const OPTIONS: usize = 20;
}

/// Bytes of a header without options.
pub const HEADER_LEN: usize = field::OPTIONS;
/// Bytes of the largest header (Data Offset 15).
pub const MAX_HEADER_LEN: usize = 60;
/// The IP protocol number of TCP, as the pseudo-header carries it.
pub const PROTOCOL: u8 = 6;
/// The largest window shift a receiver may use; a larger one in a SYN is
/// used as 14 (RFC 7323 §2.3).
pub const MAX_WINDOW_SHIFT: u8 = 14;
/// At most four SACK blocks fit in the 40 bytes of option space
/// (RFC 2018 §3).
pub const MAX_SACK_BLOCKS: usize = 4;

/// Option kinds (IANA "TCP Option Kind Numbers").
pub mod kind {
    /// End of Option List (RFC 9293 §3.2).
    pub const END: u8 = 0;
    /// No-Operation (RFC 9293 §3.2).
    pub const NOP: u8 = 1;
    /// Maximum Segment Size (RFC 9293 §3.2).
    pub const MSS: u8 = 2;
    /// Window Scale (RFC 7323 §2.2).
    pub const WINDOW_SCALE: u8 = 3;
    /// SACK-Permitted (RFC 2018 §2).
    pub const SACK_PERMITTED: u8 = 4;
    /// SACK (RFC 2018 §3).
    pub const SACK: u8 = 5;
    /// Timestamps (RFC 7323 §3.2).
    pub const TIMESTAMPS: u8 = 8;
}

/// The control bits (RFC 9293 §3.1; CWR and ECE from RFC 3168 §6.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Flags(pub u8);

impl Flags {
    /// No more data from sender.
    pub const FIN: Flags = Flags(0x01);
    /// Synchronize sequence numbers.
    pub const SYN: Flags = Flags(0x02);
    /// Reset the connection.
    pub const RST: Flags = Flags(0x04);
    /// Push function.
    pub const PSH: Flags = Flags(0x08);
    /// The Acknowledgment Number field is significant.
    pub const ACK: Flags = Flags(0x10);
    /// The Urgent Pointer field is significant.
    pub const URG: Flags = Flags(0x20);
    /// ECN-Echo (RFC 3168).
    pub const ECE: Flags = Flags(0x40);
    /// Congestion Window Reduced (RFC 3168).
    pub const CWR: Flags = Flags(0x80);

    /// Whether every bit of `other` is set.
    pub fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, rhs: Flags) -> Flags {
        Flags(self.0 | rhs.0)
    }
}

/// The addresses of the IP header around a segment: its checksum covers
/// them in the pseudo-header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Endpoints {
    /// IPv4 source and destination (pseudo-header of RFC 9293 §3.1).
    V4(Ipv4Addr, Ipv4Addr),
    /// IPv6 source and destination (pseudo-header of RFC 8200 §8.1).
    V6(Ipv6Addr, Ipv6Addr),
}

impl Endpoints {
    /// The one's complement sum of the pseudo-header for a segment of
    /// `tcp_len` bytes (header and payload).
    pub fn pseudo_header_sum(&self, tcp_len: u32) -> u16 {
        let mut buf = [0u8; 40];
        let n = match self {
            Endpoints::V4(s, d) => {
                // src, dst, zero, protocol, TCP length (16 bits).
                buf[0..4].copy_from_slice(&s.octets());
                buf[4..8].copy_from_slice(&d.octets());
                buf[9] = PROTOCOL;
                buf[10..12].copy_from_slice(&(tcp_len as u16).to_be_bytes());
                12
            }
            Endpoints::V6(s, d) => {
                // src, dst, upper-layer length (32 bits), zero, next header.
                buf[0..16].copy_from_slice(&s.octets());
                buf[16..32].copy_from_slice(&d.octets());
                buf[32..36].copy_from_slice(&tcp_len.to_be_bytes());
                buf[39] = PROTOCOL;
                40
            }
        };
        checksum::sum(&buf[..n])
    }
}

/// One's complement addition of two folded sums.
fn add(a: u16, b: u16) -> u16 {
    let s = u32::from(a) + u32::from(b);
    ((s & 0xFFFF) + (s >> 16)) as u16
}

/// A read/write view of a TCP segment in a buffer (header and payload).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking it. Accessors still never panic;
    /// fields beyond the buffer read as zero.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer after [`Packet::check_len`].
    pub fn new_checked(buffer: T) -> Result<Packet<T>, WireError> {
        let packet = Packet::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the fixed header is in the buffer, that the Data Offset
    /// is at least 5 words (RFC 9293 §3.1) and that the header it
    /// announces is in the buffer too.
    pub fn check_len(&self) -> Result<(), WireError> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let h = self.header_len();
        if h < HEADER_LEN {
            return Err(WireError::BadHeader("tcp data offset below 5"));
        }
        if h > len {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The source port.
    pub fn src_port(&self) -> u16 {
        read(self.buffer.as_ref(), field::SRC_PORT) as u16
    }

    /// The destination port.
    pub fn dst_port(&self) -> u16 {
        read(self.buffer.as_ref(), field::DST_PORT) as u16
    }

    /// The sequence number.
    pub fn seq_number(&self) -> u32 {
        read(self.buffer.as_ref(), field::SEQ) as u32
    }

    /// The acknowledgment number (significant only with ACK set).
    pub fn ack_number(&self) -> u32 {
        read(self.buffer.as_ref(), field::ACK) as u32
    }

    /// Header bytes, from the Data Offset field (4 × words).
    pub fn header_len(&self) -> usize {
        usize::from(byte(self.buffer.as_ref(), field::DATA_OFFSET) >> 4) * 4
    }

    /// The control bits.
    pub fn flags(&self) -> Flags {
        Flags(byte(self.buffer.as_ref(), field::FLAGS))
    }

    /// The window field as sent (not scaled).
    pub fn window(&self) -> u16 {
        read(self.buffer.as_ref(), field::WINDOW) as u16
    }

    /// The checksum field.
    pub fn checksum(&self) -> u16 {
        read(self.buffer.as_ref(), field::CHECKSUM) as u16
    }

    /// The urgent pointer.
    pub fn urgent(&self) -> u16 {
        read(self.buffer.as_ref(), field::URGENT) as u16
    }

    /// The option bytes (empty if the header is not in the buffer).
    pub fn options(&self) -> &[u8] {
        self.buffer
            .as_ref()
            .get(field::OPTIONS..self.header_len())
            .unwrap_or(&[])
    }

    /// The payload (empty if the header is not in the buffer).
    pub fn payload(&self) -> &[u8] {
        self.buffer.as_ref().get(self.header_len()..).unwrap_or(&[])
    }

    /// The one's complement sum of pseudo-header and segment; 0xFFFF when
    /// the checksum field matches.
    fn full_sum(&self, endpoints: &Endpoints) -> u16 {
        let seg = self.buffer.as_ref();
        add(
            endpoints.pseudo_header_sum(seg.len() as u32),
            checksum::sum(seg),
        )
    }

    /// Whether the checksum field matches the segment and `endpoints`
    /// (the whole buffer is the segment).
    pub fn verify_checksum(&self, endpoints: &Endpoints) -> bool {
        self.full_sum(endpoints) == 0xFFFF
    }

    /// Iterates over the options in order, stopping at End of Option
    /// List; a malformed option yields one error and ends the iteration.
    pub fn option_iter(&self) -> OptionIter<'_> {
        OptionIter {
            data: self.options(),
            done: false,
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the source port.
    pub fn set_src_port(&mut self, v: u16) {
        write(self.buffer.as_mut(), field::SRC_PORT, v.into());
    }

    /// Sets the destination port.
    pub fn set_dst_port(&mut self, v: u16) {
        write(self.buffer.as_mut(), field::DST_PORT, v.into());
    }

    /// Sets the sequence number.
    pub fn set_seq_number(&mut self, v: u32) {
        write(self.buffer.as_mut(), field::SEQ, v.into());
    }

    /// Sets the acknowledgment number.
    pub fn set_ack_number(&mut self, v: u32) {
        write(self.buffer.as_mut(), field::ACK, v.into());
    }

    /// Sets the Data Offset from a header length (a multiple of 4, at
    /// most 60); the reserved bits are cleared (RFC 9293 §3.1: must be
    /// zero).
    pub fn set_header_len(&mut self, len: usize) {
        set_byte(
            self.buffer.as_mut(),
            field::DATA_OFFSET,
            (((len / 4) as u8) & 0x0F) << 4,
        );
    }

    /// Sets the control bits.
    pub fn set_flags(&mut self, f: Flags) {
        set_byte(self.buffer.as_mut(), field::FLAGS, f.0);
    }

    /// Sets the urgent pointer.
    pub fn set_urgent(&mut self, v: u16) {
        write(self.buffer.as_mut(), field::URGENT, v.into());
    }

    /// Sets the checksum field.
    pub fn set_checksum(&mut self, v: u16) {
        write(self.buffer.as_mut(), field::CHECKSUM, v.into());
    }

    /// Computes and stores the checksum over `endpoints`' pseudo-header
    /// and the whole buffer.
    pub fn fill_checksum(&mut self, endpoints: &Endpoints) {
        self.set_checksum(0);
        let c = !self.full_sum(endpoints);
        self.set_checksum(c);
    }

    /// Writes `window` into the window field and updates the checksum
    /// incrementally, HC' = ~(~HC + ~m + m') (RFC 1624 eqn. 3), so that a
    /// segment whose checksum was valid stays valid without summing the
    /// payload again (and one whose checksum was wrong stays wrong: a
    /// router must not repair a corrupted segment).
    pub fn set_window(&mut self, window: u16) {
        let old = self.window();
        let hc = self.checksum();
        let c = !add(add(!hc, !old), window);
        write(self.buffer.as_mut(), field::WINDOW, window.into());
        self.set_checksum(c);
    }

    /// The payload, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let h = self.header_len();
        self.buffer.as_mut().get_mut(h..).unwrap_or(&mut [])
    }
}

/// One TCP option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpOption<'a> {
    /// No-Operation (padding between options).
    NoOp,
    /// Maximum Segment Size (only meaningful in a SYN).
    Mss(u16),
    /// Window Scale shift count as sent (only in a SYN; RFC 7323 §2.3
    /// caps its use at 14).
    WindowScale(u8),
    /// SACK-Permitted (only in a SYN).
    SackPermitted,
    /// SACK blocks, left and right edges (RFC 2018 §3); `None` past the
    /// blocks present.
    Sack([Option<(u32, u32)>; MAX_SACK_BLOCKS]),
    /// Timestamps: TSval and TSecr (RFC 7323 §3.2).
    Timestamps(u32, u32),
    /// An option this codec does not interpret, with its data.
    Unknown {
        /// The option kind.
        kind: u8,
        /// The bytes after kind and length.
        data: &'a [u8],
    },
}

impl TcpOption<'_> {
    /// Bytes the option takes on the wire.
    pub fn buffer_len(&self) -> usize {
        match self {
            TcpOption::NoOp => 1,
            TcpOption::Mss(_) => 4,
            TcpOption::WindowScale(_) => 3,
            TcpOption::SackPermitted => 2,
            TcpOption::Sack(b) => 2 + 8 * b.iter().flatten().count(),
            TcpOption::Timestamps(..) => 10,
            TcpOption::Unknown { data, .. } => 2 + data.len(),
        }
    }

    /// Writes the option at the start of `buf` (at least
    /// [`TcpOption::buffer_len`] bytes); returns the bytes written.
    fn emit(&self, buf: &mut [u8]) -> usize {
        let n = self.buffer_len();
        let (k, body): (u8, &mut [u8]) = match buf.get_mut(..n) {
            Some(b) => match self {
                TcpOption::NoOp => {
                    b[0] = kind::NOP;
                    return 1;
                }
                TcpOption::Mss(_) => (kind::MSS, b),
                TcpOption::WindowScale(_) => (kind::WINDOW_SCALE, b),
                TcpOption::SackPermitted => (kind::SACK_PERMITTED, b),
                TcpOption::Sack(_) => (kind::SACK, b),
                TcpOption::Timestamps(..) => (kind::TIMESTAMPS, b),
                TcpOption::Unknown { kind, .. } => (*kind, b),
            },
            None => return 0,
        };
        body[0] = k;
        body[1] = n as u8;
        match self {
            TcpOption::Mss(m) => write(body, 2..4, (*m).into()),
            TcpOption::WindowScale(s) => body[2] = *s,
            TcpOption::Sack(blocks) => {
                for (i, (l, r)) in blocks.iter().flatten().enumerate() {
                    write(body, 2 + 8 * i..6 + 8 * i, (*l).into());
                    write(body, 6 + 8 * i..10 + 8 * i, (*r).into());
                }
            }
            TcpOption::Timestamps(v, e) => {
                write(body, 2..6, (*v).into());
                write(body, 6..10, (*e).into());
            }
            TcpOption::Unknown { data, .. } => body[2..].copy_from_slice(data),
            TcpOption::NoOp | TcpOption::SackPermitted => {}
        }
        n
    }
}

/// Iterator over a segment's options (see [`Packet::option_iter`]).
#[derive(Clone, Debug)]
pub struct OptionIter<'a> {
    data: &'a [u8],
    done: bool,
}

impl<'a> OptionIter<'a> {
    fn parse_one(&mut self) -> Option<Result<TcpOption<'a>, WireError>> {
        let k = *self.data.first()?;
        match k {
            kind::END => return None,
            kind::NOP => {
                self.data = &self.data[1..];
                return Some(Ok(TcpOption::NoOp));
            }
            _ => {}
        }
        let bad = |reason| Some(Err(WireError::BadOption { kind: k, reason }));
        // Every other option has a length byte counting kind and length
        // (RFC 9293 §3.1); it must fit in the option space.
        let Some(&len) = self.data.get(1) else {
            return bad("no length byte");
        };
        let len = usize::from(len);
        if len < 2 {
            return bad("length below 2");
        }
        let Some(opt) = self.data.get(..len) else {
            return bad("overruns the option space");
        };
        let body = &opt[2..];
        let word = |at: usize| read(body, at..at + 4) as u32;
        let parsed = match k {
            kind::MSS if len == 4 => TcpOption::Mss(read(body, 0..2) as u16),
            kind::MSS => return bad("length is not 4"),
            kind::WINDOW_SCALE if len == 3 => TcpOption::WindowScale(body[0]),
            kind::WINDOW_SCALE => return bad("length is not 3"),
            kind::SACK_PERMITTED if len == 2 => TcpOption::SackPermitted,
            kind::SACK_PERMITTED => return bad("length is not 2"),
            kind::SACK => {
                // RFC 2018 §3: 8n + 2 bytes, n blocks of two edges.
                if body.is_empty() || body.len() % 8 != 0 || body.len() / 8 > MAX_SACK_BLOCKS {
                    return bad("length is not 8n + 2 with n in 1..=4");
                }
                let mut blocks = [None; MAX_SACK_BLOCKS];
                for (i, b) in blocks.iter_mut().take(body.len() / 8).enumerate() {
                    *b = Some((word(8 * i), word(8 * i + 4)));
                }
                TcpOption::Sack(blocks)
            }
            kind::TIMESTAMPS if len == 10 => TcpOption::Timestamps(word(0), word(4)),
            kind::TIMESTAMPS => return bad("length is not 10"),
            _ => TcpOption::Unknown {
                kind: k,
                data: body,
            },
        };
        self.data = &self.data[len..];
        Some(Ok(parsed))
    }
}

impl<'a> Iterator for OptionIter<'a> {
    type Item = Result<TcpOption<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = self.parse_one();
        if !matches!(r, Some(Ok(_))) {
            self.done = true;
        }
        r
    }
}

/// A parsed TCP header: the fields and the options this codec knows
/// (unknown options are skipped, as RFC 9293 §3.1 requires of a receiver;
/// their bytes are not kept).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq_number: u32,
    /// Acknowledgment number (zero unless ACK is set).
    pub ack_number: u32,
    /// Control bits.
    pub flags: Flags,
    /// Window field as sent (shift it by the peer's window scale).
    pub window: u16,
    /// Urgent pointer.
    pub urgent: u16,
    /// MSS option.
    pub mss: Option<u16>,
    /// Window Scale option's shift count as sent.
    pub window_scale: Option<u8>,
    /// SACK-Permitted option present.
    pub sack_permitted: bool,
    /// SACK blocks (`None` past the blocks present; all `None` if no SACK
    /// option).
    pub sack: [Option<(u32, u32)>; MAX_SACK_BLOCKS],
    /// Timestamps option: TSval, TSecr.
    pub timestamps: Option<(u32, u32)>,
    /// Payload bytes.
    pub payload_len: usize,
}

impl Repr {
    /// Parses a segment. With `endpoints`, the checksum is verified
    /// against their pseudo-header ([`WireError::BadChecksum`] if it does
    /// not match); `None` skips it (a segment taken from a capture whose
    /// checksum was left to the NIC).
    pub fn parse<T: AsRef<[u8]>>(
        packet: &Packet<T>,
        endpoints: Option<&Endpoints>,
    ) -> Result<Repr, WireError> {
        packet.check_len()?;
        if let Some(ep) = endpoints {
            if !packet.verify_checksum(ep) {
                return Err(WireError::BadChecksum);
            }
        }
        let mut repr = Repr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            seq_number: packet.seq_number(),
            ack_number: packet.ack_number(),
            flags: packet.flags(),
            window: packet.window(),
            urgent: packet.urgent(),
            mss: None,
            window_scale: None,
            sack_permitted: false,
            sack: [None; MAX_SACK_BLOCKS],
            timestamps: None,
            payload_len: packet.payload().len(),
        };
        for opt in packet.option_iter() {
            match opt? {
                TcpOption::Mss(m) => repr.mss = Some(m),
                TcpOption::WindowScale(s) => repr.window_scale = Some(s),
                TcpOption::SackPermitted => repr.sack_permitted = true,
                TcpOption::Sack(b) => repr.sack = b,
                TcpOption::Timestamps(v, e) => repr.timestamps = Some((v, e)),
                TcpOption::NoOp | TcpOption::Unknown { .. } => {}
            }
        }
        Ok(repr)
    }

    /// The window shift to use from a SYN's Window Scale option: 0
    /// without it, capped at 14 (RFC 7323 §2.3).
    pub fn window_shift(&self) -> u8 {
        self.window_scale.map_or(0, |s| s.min(MAX_WINDOW_SHIFT))
    }

    /// The options to emit, in the order Linux sends them (MSS,
    /// SACK-permitted, timestamps, window scale; SACK after timestamps),
    /// with the NOPs that align them.
    fn options(&self) -> impl Iterator<Item = TcpOption<'static>> {
        let mut v: [Option<TcpOption<'static>>; 12] = [None; 12];
        let mut n = 0;
        let mut push = |o| {
            v[n] = Some(o);
            n += 1;
        };
        if let Some(m) = self.mss {
            push(TcpOption::Mss(m));
        }
        match (self.sack_permitted, self.timestamps) {
            (true, Some((a, b))) => {
                push(TcpOption::SackPermitted);
                push(TcpOption::Timestamps(a, b));
            }
            (true, None) => {
                push(TcpOption::NoOp);
                push(TcpOption::NoOp);
                push(TcpOption::SackPermitted);
            }
            (false, Some((a, b))) => {
                push(TcpOption::NoOp);
                push(TcpOption::NoOp);
                push(TcpOption::Timestamps(a, b));
            }
            (false, None) => {}
        }
        if let Some(s) = self.window_scale {
            push(TcpOption::NoOp);
            push(TcpOption::WindowScale(s));
        }
        if self.sack.iter().any(Option::is_some) {
            push(TcpOption::NoOp);
            push(TcpOption::NoOp);
            push(TcpOption::Sack(self.sack));
        }
        v.into_iter().flatten()
    }

    /// Header bytes (options padded to a 32-bit boundary).
    pub fn header_len(&self) -> usize {
        let opts: usize = self.options().map(|o| o.buffer_len()).sum();
        HEADER_LEN + opts.div_ceil(4) * 4
    }

    /// Bytes of the whole segment.
    pub fn buffer_len(&self) -> usize {
        self.header_len() + self.payload_len
    }

    /// Writes header, `payload` and checksum into `buf` and returns the
    /// segment's length. `payload.len()` must equal `payload_len`.
    pub fn emit(
        &self,
        buf: &mut [u8],
        payload: &[u8],
        endpoints: &Endpoints,
    ) -> Result<usize, WireError> {
        if payload.len() != self.payload_len {
            return Err(WireError::Unrepresentable("payload length mismatch"));
        }
        let h = self.header_len();
        if h > MAX_HEADER_LEN {
            return Err(WireError::Unrepresentable("tcp options exceed 40 bytes"));
        }
        if self.sack.iter().flatten().count() > 0
            && self
                .sack
                .iter()
                .skip_while(|b| b.is_some())
                .any(Option::is_some)
        {
            return Err(WireError::Unrepresentable("sack blocks not contiguous"));
        }
        let n = h + payload.len();
        let Some(out) = buf.get_mut(..n) else {
            return Err(WireError::BufferTooSmall { needed: n });
        };
        out.fill(0);
        let mut at = field::OPTIONS;
        for o in self.options() {
            at += o.emit(&mut out[at..h]);
        }
        // The padding after the last option is already zero: End of
        // Option List (RFC 9293 §3.1).
        out[h..].copy_from_slice(payload);
        let mut p = Packet::new_unchecked(out);
        p.set_src_port(self.src_port);
        p.set_dst_port(self.dst_port);
        p.set_seq_number(self.seq_number);
        p.set_ack_number(self.ack_number);
        p.set_header_len(h);
        p.set_flags(self.flags);
        write(p.buffer, field::WINDOW, self.window.into());
        p.set_urgent(self.urgent);
        p.fill_checksum(endpoints);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    // Captured with dumpcap on one end of a veth pair between two network
    // namespaces (checksum offload turned off with ETHTOOL_STXCSUM so the
    // capture holds the checksums the kernel computed; tshark marks every
    // one "good"): Linux 10.9.0.1:52408 -> 10.9.0.2:5001 and
    // [fd00::1]:58724 -> [fd00::2]:5002. The IP header is stripped.
    const V4_SYN: &str =
        "ccb8138913d560b500000000a002faf016ec0000020405b40402080a0706c639000000000103030a";
    const V4_SYNACK: &str =
        "1389ccb88d37c64f13d560b6a012fe882ca20000020405b40402080a55373de20706c6390103030a";
    const V4_DATA: &str =
        "ccb8138913d560b68d37c6508018003f7ade00000101080a0706c63955373de270696e67";
    const V6_SYN: &str =
        "e564138a83ff1ba300000000a002fd20abae0000020405a00402080a2ff7dcb4000000000103030a";
    const V6_DATA: &str =
        "e564138a83ff1ba4279a473c801800401bc100000101080a2ff7dcb5f94d3e7670696e6736";

    fn v4(fwd: bool) -> Endpoints {
        let (a, b) = (Ipv4Addr::new(10, 9, 0, 1), Ipv4Addr::new(10, 9, 0, 2));
        if fwd {
            Endpoints::V4(a, b)
        } else {
            Endpoints::V4(b, a)
        }
    }

    fn v6() -> Endpoints {
        Endpoints::V6("fd00::1".parse().unwrap(), "fd00::2".parse().unwrap())
    }

    fn parse(s: &str, ep: &Endpoints) -> (Vec<u8>, Repr) {
        let b = hex(s);
        let r = Repr::parse(&Packet::new_checked(&b[..]).unwrap(), Some(ep)).unwrap();
        (b, r)
    }

    /// Emitting a parsed capture gives back the kernel's bytes: fields,
    /// option order and padding, and checksum.
    fn round_trips(bytes: &[u8], repr: &Repr, ep: &Endpoints) {
        let p = Packet::new_checked(bytes).unwrap();
        let mut out = vec![0u8; repr.buffer_len()];
        let n = repr.emit(&mut out, p.payload(), ep).unwrap();
        assert_eq!(n, bytes.len());
        assert_eq!(out, bytes);
    }

    #[test]
    fn captured_ipv4_handshake_parses_as_tshark_reads_it() {
        // Values as `tshark -T fields -e tcp.seq_raw ...` printed them.
        let (b, syn) = parse(V4_SYN, &v4(true));
        assert_eq!((syn.src_port, syn.dst_port), (52408, 5001));
        assert_eq!(syn.seq_number, 332_751_029);
        assert_eq!(syn.flags, Flags::SYN);
        assert_eq!(syn.window, 64240);
        assert_eq!(syn.mss, Some(1460));
        assert!(syn.sack_permitted);
        assert_eq!(syn.timestamps, Some((117_884_473, 0)));
        assert_eq!(syn.window_scale, Some(10));
        assert_eq!(syn.payload_len, 0);
        round_trips(&b, &syn, &v4(true));

        let (b, sa) = parse(V4_SYNACK, &v4(false));
        assert_eq!(sa.flags, Flags::SYN | Flags::ACK);
        assert_eq!(sa.ack_number, syn.seq_number + 1);
        assert_eq!(sa.seq_number, 2_369_242_703);
        assert_eq!(sa.window, 65160);
        assert_eq!(sa.timestamps, Some((1_429_683_682, 117_884_473)));
        round_trips(&b, &sa, &v4(false));

        let (b, d) = parse(V4_DATA, &v4(true));
        assert_eq!(d.flags, Flags::ACK | Flags::PSH);
        assert_eq!(d.window, 63);
        assert_eq!(
            (d.mss, d.window_scale, d.sack_permitted),
            (None, None, false)
        );
        assert_eq!(Packet::new_checked(&b[..]).unwrap().payload(), b"ping");
        round_trips(&b, &d, &v4(true));
    }

    #[test]
    fn captured_ipv6_segments_verify_with_the_v6_pseudo_header() {
        let (b, syn) = parse(V6_SYN, &v6());
        assert_eq!(
            (syn.src_port, syn.dst_port, syn.mss),
            (58724, 5002, Some(1440))
        );
        assert_eq!(syn.seq_number, 2_214_534_051);
        round_trips(&b, &syn, &v6());
        let (b, d) = parse(V6_DATA, &v6());
        assert_eq!(d.timestamps, Some((804_773_045, 4_182_589_046)));
        assert_eq!(d.payload_len, 5);
        round_trips(&b, &d, &v6());
        // The same bytes under the IPv4 pseudo-header do not verify.
        let p = Packet::new_checked(&b[..]).unwrap();
        assert!(!p.verify_checksum(&v4(true)));
    }

    #[test]
    fn loopback_partial_checksum_is_the_pseudo_header_sum() {
        // On lo Linux leaves CHECKSUM_PARTIAL: the field holds the folded
        // pseudo-header sum only (captured: 0xfe30 for a 40-byte SYN
        // 127.0.0.1 -> 127.0.0.1, 0x0030 for ::1 -> ::1), an independent
        // check of both pseudo-header layouts.
        let lo4 = Endpoints::V4(Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST);
        let lo6 = Endpoints::V6(Ipv6Addr::LOCALHOST, Ipv6Addr::LOCALHOST);
        assert_eq!(lo4.pseudo_header_sum(40), 0xfe30);
        assert_eq!(lo6.pseudo_header_sum(40), 0x0030);
    }

    #[test]
    fn wrong_address_or_flipped_bit_fails_the_checksum() {
        let b = hex(V4_DATA);
        let p = Packet::new_checked(&b[..]).unwrap();
        // (Swapping source and destination would not be noticed: the
        // one's complement sum is commutative.)
        let other = Endpoints::V4(Ipv4Addr::new(10, 9, 0, 1), Ipv4Addr::new(10, 9, 0, 3));
        assert_eq!(Repr::parse(&p, Some(&other)), Err(WireError::BadChecksum));
        for i in 0..b.len() {
            let mut c = b.clone();
            c[i] ^= 0x10;
            assert!(
                !Packet::new_unchecked(&c[..]).verify_checksum(&v4(true)),
                "byte {i}"
            );
        }
        // Without endpoints the checksum is not looked at.
        assert!(Repr::parse(&p, None).is_ok());
    }

    #[test]
    fn set_window_keeps_the_checksum_valid_incrementally() {
        for (s, ep) in [(V4_DATA, v4(true)), (V4_SYNACK, v4(false)), (V6_DATA, v6())] {
            let mut b = hex(s);
            for w in [0u16, 1, 20, 0x7ade, 0xFFFF, 63] {
                let mut p = Packet::new_checked(&mut b[..]).unwrap();
                p.set_window(w);
                assert_eq!(p.window(), w);
                assert!(p.verify_checksum(&ep), "window {w}");
                // Same value as a full recomputation (up to the two
                // representations of zero, which both verify).
                let inc = p.checksum();
                p.fill_checksum(&ep);
                assert!(inc == p.checksum() || (inc | p.checksum()) == 0xFFFF);
            }
            // Writing the field alone breaks the checksum: the fix is
            // what keeps it valid.
            let p = Packet::new_checked(&mut b[..]).unwrap();
            write(p.buffer, field::WINDOW, 5);
            assert!(!p.verify_checksum(&ep));
        }
        // A corrupted segment stays corrupted after a rewrite.
        let mut b = hex(V4_DATA);
        b[30] ^= 1;
        let mut p = Packet::new_checked(&mut b[..]).unwrap();
        p.set_window(7);
        assert!(!p.verify_checksum(&v4(true)));
    }

    fn sack_repr(blocks: usize, ts: bool) -> Repr {
        let mut sack = [None; MAX_SACK_BLOCKS];
        for (i, b) in sack.iter_mut().take(blocks).enumerate() {
            let i = i as u32;
            *b = Some((u32::MAX - 3000 + 1000 * i, 500 + 1000 * i));
        }
        Repr {
            src_port: 1,
            dst_port: 2,
            seq_number: 3,
            ack_number: 4,
            flags: Flags::ACK,
            window: 9,
            urgent: 0,
            mss: None,
            window_scale: None,
            sack_permitted: false,
            sack,
            timestamps: ts.then_some((11, 12)),
            payload_len: 3,
        }
    }

    #[test]
    fn sack_blocks_round_trip_and_respect_the_option_space() {
        for (blocks, ts) in [(1, true), (3, true), (4, false), (2, false)] {
            let r = sack_repr(blocks, ts);
            let mut buf = [0u8; 80];
            let n = r.emit(&mut buf, b"abc", &v6()).unwrap();
            let p = Packet::new_checked(&buf[..n]).unwrap();
            assert_eq!(Repr::parse(&p, Some(&v6())), Ok(r), "{blocks} blocks");
            // RFC 2018 §3: 8n + 2 option bytes (after two NOPs).
            let sack = p
                .options()
                .windows(2)
                .position(|w| w[0] == kind::SACK)
                .unwrap();
            assert_eq!(usize::from(p.options()[sack + 1]), 8 * blocks + 2);
        }
        // Four blocks and timestamps need 48 option bytes: not encodable.
        let r = sack_repr(4, true);
        assert_eq!(
            r.emit(&mut [0u8; 100], b"abc", &v6()),
            Err(WireError::Unrepresentable("tcp options exceed 40 bytes"))
        );
        let mut r = sack_repr(2, false);
        r.sack = [None, Some((1, 2)), None, None];
        assert!(r.emit(&mut [0u8; 100], b"abc", &v6()).is_err());
        assert_eq!(
            sack_repr(1, false).emit(&mut [0u8; 10], b"abc", &v6()),
            Err(WireError::BufferTooSmall {
                needed: 20 + 12 + 3
            })
        );
    }

    /// A 20-byte header with `opts` as options (padded with zeros).
    fn with_options(opts: &[u8]) -> Vec<u8> {
        let h = HEADER_LEN + opts.len().div_ceil(4) * 4;
        let mut b = vec![0u8; h];
        b[20..20 + opts.len()].copy_from_slice(opts);
        b[12] = ((h / 4) as u8) << 4;
        b
    }

    fn parse_err(b: &[u8]) -> WireError {
        Repr::parse(&Packet::new_unchecked(b), None).unwrap_err()
    }

    #[test]
    fn malformed_segments_are_errors() {
        assert_eq!(parse_err(&[0u8; 19]), WireError::Truncated);
        let mut b = with_options(&[]);
        b[12] = 4 << 4;
        assert_eq!(
            parse_err(&b),
            WireError::BadHeader("tcp data offset below 5")
        );
        b[12] = 6 << 4;
        assert_eq!(parse_err(&b), WireError::Truncated);
        let bad = |k: u8, reason| WireError::BadOption { kind: k, reason };
        for (opts, e) in [
            (&[30, 8, 0, 0][..], bad(30, "overruns the option space")),
            (&[2, 3, 5, 0], bad(2, "length is not 4")),
            (&[3, 4, 7, 0], bad(3, "length is not 3")),
            (&[4, 3, 0, 0], bad(4, "length is not 2")),
            (&[8, 8, 0, 0, 0, 0, 0, 0], bad(8, "length is not 10")),
            (
                &[5, 2, 0, 0],
                bad(5, "length is not 8n + 2 with n in 1..=4"),
            ),
            (
                &[5, 6, 0, 0, 0, 0],
                bad(5, "length is not 8n + 2 with n in 1..=4"),
            ),
            (&[1, 1, 1, 9], bad(9, "no length byte")),
            (&[30, 1, 0, 0], bad(30, "length below 2")),
            (&[30, 0, 0, 0], bad(30, "length below 2")),
        ] {
            assert_eq!(parse_err(&with_options(opts)), e, "{opts:?}");
        }
        // The whole 40-byte option space as one SACK option: 38 bytes of
        // blocks is not a whole number of blocks.
        let mut sack40 = vec![5u8, 40];
        sack40.resize(40, 0);
        assert!(matches!(
            parse_err(&with_options(&sack40)),
            WireError::BadOption { kind: 5, .. }
        ));
    }

    #[test]
    fn unknown_options_are_skipped_and_end_stops_parsing() {
        // An unknown option (kind 30, MPTCP) with data, then MSS; after
        // End of Option List, garbage is not parsed.
        let b = with_options(&[30, 4, 0xAA, 0xBB, 2, 4, 1, 0, 0, 0xFF, 0xFF]);
        let r = Repr::parse(&Packet::new_checked(&b[..]).unwrap(), None).unwrap();
        assert_eq!(r.mss, Some(256));
        let p = Packet::new_checked(&b[..]).unwrap();
        let opts: Vec<_> = p.option_iter().collect();
        assert_eq!(
            opts,
            [
                Ok(TcpOption::Unknown {
                    kind: 30,
                    data: &[0xAA, 0xBB]
                }),
                Ok(TcpOption::Mss(256))
            ]
        );
    }

    #[test]
    fn window_shift_is_capped_at_14() {
        let b = with_options(&[3, 3, 20, 0]);
        let r = Repr::parse(&Packet::new_checked(&b[..]).unwrap(), None).unwrap();
        assert_eq!((r.window_scale, r.window_shift()), (Some(20), 14));
        let (_, syn) = parse(V4_SYN, &v4(true));
        assert_eq!(syn.window_shift(), 10);
    }
}
