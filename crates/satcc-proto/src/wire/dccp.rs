//! DCCP packets (RFC 4340 §5) with 48-bit sequence numbers, as carried in
//! UDP by RFC 6773, and the options CCID 3 uses.
//!
//! [`Packet`] is a view over a buffer with the generic header's fields
//! (§5.1), the Acknowledgement Number subheader, the option area and the
//! application data; [`DccpOption`] parses and emits one option (§5.8);
//! [`Repr`] is a parsed DCCP-Data, DCCP-Ack or DCCP-DataAck packet with
//! the CCID 3 option set ([`Options`]). The mapping to TFRC messages is in
//! [`super::ccid3`]; the layout, the checksum choice and the deviations
//! from the RFCs are documented in [`super`].
//!
//! Accessors never panic: a field beyond the buffer reads as zero (and a
//! setter beyond it writes nothing). [`Packet::new_checked`] guarantees the
//! generic header, the subheader its type calls for and the option area
//! lie inside the buffer.

use super::bytes::{byte, read, set_byte, write};
use super::{checksum, WireError};

mod field {
    use std::ops::Range;

    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const DATA_OFFSET: usize = 4;
    pub const CCVAL_CSCOV: usize = 5;
    pub const CHECKSUM: Range<usize> = 6..8;
    pub const TYPE_X: usize = 8;
    /// The Reserved byte and the 48-bit sequence number (X = 1).
    pub const SEQ: Range<usize> = 9..16;
    /// The subheader's 16 reserved bits and the 48-bit acknowledgement
    /// number.
    pub const ACK: Range<usize> = 16..24;
}

/// Bytes of the generic header with X = 1 (RFC 4340 §5.1).
pub const GENERIC_HEADER_LEN: usize = 16;
/// Bytes of the Acknowledgement Number subheader with X = 1.
pub const ACK_SUBHEADER_LEN: usize = 8;
/// The largest 48-bit sequence or acknowledgement number.
pub const MAX_SEQ: u64 = (1 << 48) - 1;
/// The longest header Data Offset (8 bits of 32-bit words) can describe.
pub const MAX_HEADER_LEN: usize = 255 * 4;

/// Option types (RFC 4340 §5.8 Table 3, RFC 4342 §8 Table 1).
pub mod option_type {
    /// Padding, one byte (RFC 4340 §5.8.1).
    pub const PADDING: u8 = 0;
    /// Mandatory, one byte (RFC 4340 §5.8.2).
    pub const MANDATORY: u8 = 1;
    /// Slow Receiver, one byte (RFC 4340 §11.6); not processed.
    pub const SLOW_RECEIVER: u8 = 2;
    /// Timestamp, length 6 (RFC 4340 §13.1).
    pub const TIMESTAMP: u8 = 41;
    /// Timestamp Echo, length 6, 8 or 10 (RFC 4340 §13.3).
    pub const TIMESTAMP_ECHO: u8 = 42;
    /// Elapsed Time, length 4 or 6 (RFC 4340 §13.2).
    pub const ELAPSED_TIME: u8 = 43;
    /// The sender's RTT estimate in microseconds, length 6: ours, from
    /// the range CCID 3 permanently reserves for experimental use
    /// (RFC 4342 §12.2: 184-190), within the HC-Sender's option numbers
    /// (RFC 4340 §10.3: 128-191). See [`crate::wire::ccid3`].
    pub const RTT_ESTIMATE: u8 = 184;
    /// Loss Event Rate, length 6 (RFC 4342 §8.5).
    pub const LOSS_EVENT_RATE: u8 = 192;
    /// Loss Intervals, variable (RFC 4342 §8.6); skipped.
    pub const LOSS_INTERVALS: u8 = 193;
    /// Receive Rate, length 6 (RFC 4342 §8.3).
    pub const RECEIVE_RATE: u8 = 194;
}

/// DCCP packet types (RFC 4340 §5.1 Table 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PacketType {
    /// DCCP-Request.
    Request = 0,
    /// DCCP-Response.
    Response = 1,
    /// DCCP-Data.
    Data = 2,
    /// DCCP-Ack.
    Ack = 3,
    /// DCCP-DataAck.
    DataAck = 4,
    /// DCCP-CloseReq.
    CloseReq = 5,
    /// DCCP-Close.
    Close = 6,
    /// DCCP-Reset.
    Reset = 7,
    /// DCCP-Sync.
    Sync = 8,
    /// DCCP-SyncAck.
    SyncAck = 9,
}

impl PacketType {
    /// The type with this number; `None` for the reserved 10-15.
    pub fn from_u8(v: u8) -> Option<PacketType> {
        Some(match v {
            0 => PacketType::Request,
            1 => PacketType::Response,
            2 => PacketType::Data,
            3 => PacketType::Ack,
            4 => PacketType::DataAck,
            5 => PacketType::CloseReq,
            6 => PacketType::Close,
            7 => PacketType::Reset,
            8 => PacketType::Sync,
            9 => PacketType::SyncAck,
            _ => return None,
        })
    }

    /// Whether the type carries an Acknowledgement Number subheader (all
    /// but DCCP-Request and DCCP-Data, RFC 4340 §5.1).
    pub fn has_ack(self) -> bool {
        !matches!(self, PacketType::Request | PacketType::Data)
    }

    /// The smallest header of the type with X = 1, in bytes: generic
    /// header, subheader and type-specific fields (RFC 4340 §5.2-5.7).
    pub fn min_header_len(self) -> usize {
        match self {
            PacketType::Data => GENERIC_HEADER_LEN,
            // Service Code.
            PacketType::Request => GENERIC_HEADER_LEN + 4,
            // Acknowledgement subheader, then Service Code / Reset Code
            // and data.
            PacketType::Response | PacketType::Reset => GENERIC_HEADER_LEN + ACK_SUBHEADER_LEN + 4,
            _ => GENERIC_HEADER_LEN + ACK_SUBHEADER_LEN,
        }
    }

    /// Bytes before the options: the generic header and, for the types
    /// that have one, the Acknowledgement Number subheader.
    fn fixed_len(self) -> usize {
        if self.has_ack() {
            GENERIC_HEADER_LEN + ACK_SUBHEADER_LEN
        } else {
            GENERIC_HEADER_LEN
        }
    }
}

/// A read/write view of a DCCP packet (with X = 1) in a buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking it (for [`Repr::emit`] into a fresh
    /// buffer). Accessors still never panic; fields beyond the buffer read
    /// as zero.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer after [`Packet::check_len`].
    pub fn new_checked(buffer: T) -> Result<Packet<T>, WireError> {
        let packet = Packet::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the header is well formed as far as lengths go: X = 1,
    /// the generic header present, and a Data Offset no smaller than the
    /// type's minimal header and no larger than the packet (RFC 4340
    /// §5.1: such packets are ignored).
    pub fn check_len(&self) -> Result<(), WireError> {
        let len = self.buffer.as_ref().len();
        if len > field::TYPE_X && !self.extended_seq() {
            return Err(WireError::BadHeader(
                "short sequence numbers (X = 0) are not supported",
            ));
        }
        if len < GENERIC_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let min = PacketType::from_u8(self.packet_type())
            .map_or(GENERIC_HEADER_LEN, PacketType::min_header_len);
        let header = self.header_len();
        if header < min {
            return Err(WireError::BadHeader("Data Offset smaller than the header"));
        }
        if header > len {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Source Port.
    pub fn src_port(&self) -> u16 {
        read(self.buffer.as_ref(), field::SRC_PORT) as u16
    }

    /// Dest Port.
    pub fn dst_port(&self) -> u16 {
        read(self.buffer.as_ref(), field::DST_PORT) as u16
    }

    /// Data Offset, in 32-bit words.
    pub fn data_offset(&self) -> u8 {
        byte(self.buffer.as_ref(), field::DATA_OFFSET)
    }

    /// Header length in bytes (Data Offset times 4), options included.
    pub fn header_len(&self) -> usize {
        usize::from(self.data_offset()) * 4
    }

    /// CCVal (4 bits).
    pub fn ccval(&self) -> u8 {
        byte(self.buffer.as_ref(), field::CCVAL_CSCOV) >> 4
    }

    /// Checksum Coverage (4 bits).
    pub fn cscov(&self) -> u8 {
        byte(self.buffer.as_ref(), field::CCVAL_CSCOV) & 0x0F
    }

    /// Checksum.
    pub fn checksum(&self) -> u16 {
        read(self.buffer.as_ref(), field::CHECKSUM) as u16
    }

    /// Type (4 bits, see [`PacketType::from_u8`]).
    pub fn packet_type(&self) -> u8 {
        (byte(self.buffer.as_ref(), field::TYPE_X) >> 1) & 0x0F
    }

    /// X, Extended Sequence Numbers.
    pub fn extended_seq(&self) -> bool {
        byte(self.buffer.as_ref(), field::TYPE_X) & 1 == 1
    }

    /// The 48-bit Sequence Number.
    pub fn seq_number(&self) -> u64 {
        read(self.buffer.as_ref(), field::SEQ) & MAX_SEQ
    }

    /// The 48-bit Acknowledgement Number, for the types that carry one.
    pub fn ack_number(&self) -> Option<u64> {
        PacketType::from_u8(self.packet_type())
            .filter(|t| t.has_ack())
            .map(|_| read(self.buffer.as_ref(), field::ACK) & MAX_SEQ)
    }

    fn fixed_len(&self) -> usize {
        PacketType::from_u8(self.packet_type()).map_or(GENERIC_HEADER_LEN, PacketType::fixed_len)
    }

    /// The option area: from the end of the generic header and subheader
    /// to Data Offset (empty if that range is not in the buffer).
    pub fn options(&self) -> &[u8] {
        self.buffer
            .as_ref()
            .get(self.fixed_len()..self.header_len())
            .unwrap_or(&[])
    }

    /// The application data area (after Data Offset).
    pub fn payload(&self) -> &[u8] {
        self.buffer.as_ref().get(self.header_len()..).unwrap_or(&[])
    }

    /// Bytes from the start of the packet the checksum covers (RFC 4340
    /// §9.2): all of them for CsCov = 0, else the header and
    /// (CsCov - 1) * 4 bytes of data, which must exist.
    pub fn checksum_coverage(&self) -> Result<usize, WireError> {
        let len = self.buffer.as_ref().len();
        match self.cscov() {
            0 => Ok(len),
            n => {
                let covered = self.header_len() + (usize::from(n) - 1) * 4;
                if covered > len {
                    Err(WireError::BadHeader(
                        "checksum coverage beyond the end of the packet",
                    ))
                } else {
                    Ok(covered)
                }
            }
        }
    }

    /// Checks the Checksum over the bytes CsCov covers, without a
    /// pseudo-header. A zero Checksum is "not computed" (RFC 6773 §3.3:
    /// the UDP checksum protects the packet) and passes.
    pub fn verify_checksum(&self) -> Result<(), WireError> {
        let covered = self.checksum_coverage()?;
        if self.checksum() == 0 {
            return Ok(());
        }
        match self.buffer.as_ref().get(..covered) {
            Some(data) if checksum::verify(data) => Ok(()),
            _ => Err(WireError::BadChecksum),
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets Source Port.
    pub fn set_src_port(&mut self, value: u16) {
        write(self.buffer.as_mut(), field::SRC_PORT, value.into());
    }

    /// Sets Dest Port.
    pub fn set_dst_port(&mut self, value: u16) {
        write(self.buffer.as_mut(), field::DST_PORT, value.into());
    }

    /// Sets Data Offset (32-bit words).
    pub fn set_data_offset(&mut self, words: u8) {
        set_byte(self.buffer.as_mut(), field::DATA_OFFSET, words);
    }

    /// Sets CCVal and CsCov (the low 4 bits of each).
    pub fn set_ccval_cscov(&mut self, ccval: u8, cscov: u8) {
        let v = ((ccval & 0x0F) << 4) | (cscov & 0x0F);
        set_byte(self.buffer.as_mut(), field::CCVAL_CSCOV, v);
    }

    /// Sets Checksum.
    pub fn set_checksum(&mut self, value: u16) {
        write(self.buffer.as_mut(), field::CHECKSUM, value.into());
    }

    /// Sets Type, with X = 1 and Res = 0.
    pub fn set_packet_type(&mut self, t: PacketType) {
        set_byte(self.buffer.as_mut(), field::TYPE_X, ((t as u8) << 1) | 1);
    }

    /// Sets the 48-bit Sequence Number (and the Reserved byte before it to
    /// zero).
    pub fn set_seq_number(&mut self, value: u64) {
        write(self.buffer.as_mut(), field::SEQ, value & MAX_SEQ);
    }

    /// Sets the 48-bit Acknowledgement Number (and the subheader's
    /// reserved bits to zero).
    pub fn set_ack_number(&mut self, value: u64) {
        write(self.buffer.as_mut(), field::ACK, value & MAX_SEQ);
    }

    /// The option area, writable (see [`Packet::options`]).
    pub fn options_mut(&mut self) -> &mut [u8] {
        let range = self.fixed_len()..self.header_len();
        self.buffer.as_mut().get_mut(range).unwrap_or(&mut [])
    }

    /// The application data area, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let start = self.header_len();
        self.buffer.as_mut().get_mut(start..).unwrap_or(&mut [])
    }

    /// Computes and stores the Checksum over the bytes CsCov covers (no
    /// pseudo-header; a computed zero is stored as 0xFFFF).
    pub fn fill_checksum(&mut self) -> Result<(), WireError> {
        let covered = self.checksum_coverage()?;
        self.set_checksum(0);
        let sum = checksum::compute(self.buffer.as_ref().get(..covered).unwrap_or(&[]));
        self.set_checksum(sum);
        Ok(())
    }
}

/// A Timestamp Echo option's value (RFC 4340 §13.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimestampEcho {
    /// The Timestamp Value echoed.
    pub timestamp: u32,
    /// Elapsed Time since that timestamp's packet arrived, 10 µs units;
    /// `None` when absent (equivalent to zero).
    pub elapsed: Option<u32>,
}

/// One DCCP option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DccpOption<'a> {
    /// Padding (type 0).
    Padding,
    /// Mandatory (type 1): the next option must be understood.
    Mandatory,
    /// Timestamp (41): 10 µs units.
    Timestamp(u32),
    /// Timestamp Echo (42).
    TimestampEcho(TimestampEcho),
    /// Elapsed Time (43): 10 µs units.
    ElapsedTime(u32),
    /// Receive Rate (194): bytes per second.
    ReceiveRate(u32),
    /// Loss Event Rate (192): 1/p rounded up, 2^32 - 1 for p = 0.
    LossEventRate(u32),
    /// RTT Estimate (184, ours): microseconds.
    RttEstimate(u32),
    /// Any other option: its type and data (empty for the single-byte
    /// types 2-31).
    Unknown {
        /// Option type.
        kind: u8,
        /// Option data, after the type and length bytes.
        data: &'a [u8],
    },
}

/// The value of a 4-byte option, or the error for any other length.
fn four_bytes(kind: u8, data: &[u8]) -> Result<u32, WireError> {
    if data.len() == 4 {
        Ok(read(data, 0..4) as u32)
    } else {
        Err(WireError::BadOption {
            kind,
            reason: "length must be 6",
        })
    }
}

impl<'a> DccpOption<'a> {
    /// Parses the option at the start of `buf` (which must not be empty)
    /// and returns what follows it. An option whose length byte is
    /// missing, below 2 or past the end of `buf`, or whose length its type
    /// does not allow, is an error.
    pub fn parse(buf: &'a [u8]) -> Result<(&'a [u8], DccpOption<'a>), WireError> {
        let Some((&kind, after_kind)) = buf.split_first() else {
            return Err(WireError::Truncated);
        };
        if kind < 32 {
            let opt = match kind {
                option_type::PADDING => DccpOption::Padding,
                option_type::MANDATORY => DccpOption::Mandatory,
                _ => DccpOption::Unknown { kind, data: &[] },
            };
            return Ok((after_kind, opt));
        }
        let Some(&len) = after_kind.first() else {
            return Err(WireError::BadOption {
                kind,
                reason: "length byte missing",
            });
        };
        let len = usize::from(len);
        if len < 2 {
            return Err(WireError::BadOption {
                kind,
                reason: "length below 2",
            });
        }
        let (Some(whole), Some(rest)) = (buf.get(..len), buf.get(len..)) else {
            return Err(WireError::BadOption {
                kind,
                reason: "length overruns the option space",
            });
        };
        let data = whole.get(2..).unwrap_or(&[]);
        let opt = match kind {
            option_type::TIMESTAMP => DccpOption::Timestamp(four_bytes(kind, data)?),
            option_type::TIMESTAMP_ECHO => {
                let elapsed = match data.len() {
                    4 => None,
                    6 => Some(read(data, 4..6) as u32),
                    8 => Some(read(data, 4..8) as u32),
                    _ => {
                        return Err(WireError::BadOption {
                            kind,
                            reason: "length must be 6, 8 or 10",
                        })
                    }
                };
                DccpOption::TimestampEcho(TimestampEcho {
                    timestamp: read(data, 0..4) as u32,
                    elapsed,
                })
            }
            option_type::ELAPSED_TIME => match data.len() {
                2 | 4 => DccpOption::ElapsedTime(read(data, 0..data.len()) as u32),
                _ => {
                    return Err(WireError::BadOption {
                        kind,
                        reason: "length must be 4 or 6",
                    })
                }
            },
            option_type::RECEIVE_RATE => DccpOption::ReceiveRate(four_bytes(kind, data)?),
            option_type::LOSS_EVENT_RATE => DccpOption::LossEventRate(four_bytes(kind, data)?),
            option_type::RTT_ESTIMATE => DccpOption::RttEstimate(four_bytes(kind, data)?),
            _ => DccpOption::Unknown { kind, data },
        };
        Ok((rest, opt))
    }

    /// The option's type.
    pub fn kind(&self) -> u8 {
        match self {
            DccpOption::Padding => option_type::PADDING,
            DccpOption::Mandatory => option_type::MANDATORY,
            DccpOption::Timestamp(_) => option_type::TIMESTAMP,
            DccpOption::TimestampEcho(_) => option_type::TIMESTAMP_ECHO,
            DccpOption::ElapsedTime(_) => option_type::ELAPSED_TIME,
            DccpOption::ReceiveRate(_) => option_type::RECEIVE_RATE,
            DccpOption::LossEventRate(_) => option_type::LOSS_EVENT_RATE,
            DccpOption::RttEstimate(_) => option_type::RTT_ESTIMATE,
            DccpOption::Unknown { kind, .. } => *kind,
        }
    }

    /// Bytes the option takes on the wire. Elapsed times use the smallest
    /// form that holds them (RFC 4340 §13.2, §13.3).
    pub fn buffer_len(&self) -> usize {
        match self {
            DccpOption::Padding | DccpOption::Mandatory => 1,
            DccpOption::Timestamp(_)
            | DccpOption::ReceiveRate(_)
            | DccpOption::LossEventRate(_)
            | DccpOption::RttEstimate(_) => 6,
            DccpOption::TimestampEcho(e) => match e.elapsed {
                None => 6,
                Some(v) if v <= 0xFFFF => 8,
                Some(_) => 10,
            },
            DccpOption::ElapsedTime(v) if *v <= 0xFFFF => 4,
            DccpOption::ElapsedTime(_) => 6,
            DccpOption::Unknown { kind, .. } if *kind < 32 => 1,
            DccpOption::Unknown { data, .. } => 2 + data.len(),
        }
    }

    /// Writes the option at the start of `buf` and returns the rest.
    pub fn emit<'b>(&self, buf: &'b mut [u8]) -> Result<&'b mut [u8], WireError> {
        let len = self.buffer_len();
        let kind = self.kind();
        if let DccpOption::Unknown { data, .. } = self {
            if (kind < 32 && !data.is_empty()) || len > 255 {
                return Err(WireError::Unrepresentable(
                    "option data of the wrong length",
                ));
            }
        }
        if buf.len() < len {
            return Err(WireError::BufferTooSmall { needed: len });
        }
        let (out, rest) = buf.split_at_mut(len);
        set_byte(out, 0, kind);
        if len > 1 {
            set_byte(out, 1, len as u8);
        }
        match self {
            DccpOption::Padding | DccpOption::Mandatory => {}
            DccpOption::Timestamp(v)
            | DccpOption::ReceiveRate(v)
            | DccpOption::LossEventRate(v)
            | DccpOption::RttEstimate(v) => write(out, 2..6, (*v).into()),
            DccpOption::TimestampEcho(e) => {
                write(out, 2..6, e.timestamp.into());
                if let Some(v) = e.elapsed {
                    write(out, 6..len, v.into());
                }
            }
            DccpOption::ElapsedTime(v) => write(out, 2..len, (*v).into()),
            DccpOption::Unknown { data, .. } => {
                if let Some(d) = out.get_mut(2..) {
                    d.copy_from_slice(data);
                }
            }
        }
        Ok(rest)
    }
}

/// The options of a packet that CCID 3 and our TFRC mapping use; each
/// `None` when absent. When an option occurs more than once, the last
/// occurrence counts (RFC 4340 §5.8).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Timestamp (41).
    pub timestamp: Option<u32>,
    /// RTT Estimate (184, ours), microseconds.
    pub rtt_estimate: Option<u32>,
    /// Timestamp Echo (42).
    pub timestamp_echo: Option<TimestampEcho>,
    /// Elapsed Time (43), 10 µs units. Ignored on DCCP-Data.
    pub elapsed_time: Option<u32>,
    /// Receive Rate (194), bytes per second. Ignored on DCCP-Data.
    pub receive_rate: Option<u32>,
    /// Loss Event Rate (192). Ignored on DCCP-Data.
    pub loss_event_rate: Option<u32>,
}

impl Options {
    /// Parses an option area. Unknown options are skipped (RFC 4340
    /// §5.8); on DCCP-Data the options RFC 4340 Table 3 and RFC 4342
    /// Table 1 mark "N" (Mandatory, Elapsed Time, Receive Rate, Loss Event
    /// Rate) are ignored. Elsewhere a Mandatory option before an option
    /// not processed here, before another Mandatory, or at the end is an
    /// error (§5.8.2); "Mandatory Padding" is two bytes of padding.
    pub fn parse(mut area: &[u8], packet_type: PacketType) -> Result<Options, WireError> {
        let on_data = packet_type == PacketType::Data;
        let mut out = Options::default();
        let mut mandatory = false;
        while !area.is_empty() {
            let (rest, opt) = DccpOption::parse(area)?;
            area = rest;
            if mandatory && !on_data {
                match opt {
                    DccpOption::Mandatory => {
                        return Err(WireError::BadOption {
                            kind: option_type::MANDATORY,
                            reason: "Mandatory followed by Mandatory",
                        })
                    }
                    DccpOption::Unknown { kind, .. } => {
                        return Err(WireError::BadOption {
                            kind,
                            reason: "marked Mandatory but not understood",
                        })
                    }
                    _ => {}
                }
            }
            mandatory = opt == DccpOption::Mandatory;
            match opt {
                DccpOption::Timestamp(v) => out.timestamp = Some(v),
                DccpOption::RttEstimate(v) => out.rtt_estimate = Some(v),
                DccpOption::TimestampEcho(e) => out.timestamp_echo = Some(e),
                DccpOption::ElapsedTime(v) if !on_data => out.elapsed_time = Some(v),
                DccpOption::ReceiveRate(v) if !on_data => out.receive_rate = Some(v),
                DccpOption::LossEventRate(v) if !on_data => out.loss_event_rate = Some(v),
                _ => {}
            }
        }
        if mandatory && !on_data {
            return Err(WireError::BadOption {
                kind: option_type::MANDATORY,
                reason: "Mandatory is the last option",
            });
        }
        Ok(out)
    }

    /// The options present, in the order they are emitted.
    fn list(&self) -> impl Iterator<Item = DccpOption<'static>> {
        [
            self.timestamp.map(DccpOption::Timestamp),
            self.rtt_estimate.map(DccpOption::RttEstimate),
            self.timestamp_echo.map(DccpOption::TimestampEcho),
            self.elapsed_time.map(DccpOption::ElapsedTime),
            self.receive_rate.map(DccpOption::ReceiveRate),
            self.loss_event_rate.map(DccpOption::LossEventRate),
        ]
        .into_iter()
        .flatten()
    }

    /// Bytes the options take, before padding.
    pub fn buffer_len(&self) -> usize {
        self.list().map(|o| o.buffer_len()).sum()
    }

    /// Writes the options at the start of `area`, then Padding to its end.
    pub fn emit(&self, mut area: &mut [u8]) -> Result<(), WireError> {
        for opt in self.list() {
            area = opt.emit(area)?;
        }
        area.fill(option_type::PADDING);
        Ok(())
    }
}

/// A parsed DCCP-Data, DCCP-Ack or DCCP-DataAck packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    /// Source Port.
    pub src_port: u16,
    /// Dest Port.
    pub dst_port: u16,
    /// CCVal (0-15).
    pub ccval: u8,
    /// Checksum Coverage (0-15) used when emitting.
    pub cscov: u8,
    /// Data, Ack or DataAck.
    pub packet_type: PacketType,
    /// Sequence Number (48 bits).
    pub seq: u64,
    /// Acknowledgement Number (48 bits), for Ack and DataAck; 0 on Data.
    pub ack: u64,
    /// The CCID 3 options.
    pub options: Options,
    /// Bytes of application data.
    pub payload_len: usize,
}

impl Repr {
    /// Parses a packet: lengths, checksum (see
    /// [`Packet::verify_checksum`]), type (Data, Ack or DataAck, else
    /// [`WireError::BadType`]) and options.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr, WireError> {
        packet.check_len()?;
        packet.verify_checksum()?;
        let raw = packet.packet_type();
        let packet_type = match PacketType::from_u8(raw) {
            Some(t @ (PacketType::Data | PacketType::Ack | PacketType::DataAck)) => t,
            _ => return Err(WireError::BadType(raw)),
        };
        let options = Options::parse(packet.options(), packet_type)?;
        Ok(Repr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            ccval: packet.ccval(),
            cscov: packet.cscov(),
            packet_type,
            seq: packet.seq_number(),
            ack: packet.ack_number().unwrap_or(0),
            options,
            payload_len: packet.payload().len(),
        })
    }

    /// Header bytes: generic header, subheader, options and padding to a
    /// 32-bit boundary.
    pub fn header_len(&self) -> usize {
        self.packet_type.fixed_len() + self.options.buffer_len().next_multiple_of(4)
    }

    /// Bytes of the whole packet.
    pub fn buffer_len(&self) -> usize {
        self.header_len() + self.payload_len
    }

    /// Writes the header into `packet`, whose buffer is the whole packet
    /// (at least [`Repr::buffer_len`] bytes), and fills the checksum. The
    /// application data is left as it is; with a CsCov that covers some of
    /// it, write it first.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut Packet<T>,
    ) -> Result<(), WireError> {
        if !matches!(
            self.packet_type,
            PacketType::Data | PacketType::Ack | PacketType::DataAck
        ) {
            return Err(WireError::Unrepresentable(
                "DCCP packet type other than Data, Ack and DataAck",
            ));
        }
        if self.seq > MAX_SEQ || self.ack > MAX_SEQ {
            return Err(WireError::Unrepresentable(
                "DCCP sequence or acknowledgement number at or above 2^48",
            ));
        }
        if self.ccval > 15 || self.cscov > 15 {
            return Err(WireError::Unrepresentable("CCVal or CsCov above 15"));
        }
        if self.cscov > 0 && (usize::from(self.cscov) - 1) * 4 > self.payload_len {
            return Err(WireError::Unrepresentable(
                "checksum coverage beyond the application data",
            ));
        }
        let header_len = self.header_len();
        if header_len > MAX_HEADER_LEN {
            return Err(WireError::Unrepresentable(
                "options too long for Data Offset",
            ));
        }
        let needed = self.buffer_len();
        if packet.buffer.as_ref().len() < needed {
            return Err(WireError::BufferTooSmall { needed });
        }
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_data_offset((header_len / 4) as u8);
        packet.set_ccval_cscov(self.ccval, self.cscov);
        packet.set_checksum(0);
        packet.set_packet_type(self.packet_type);
        packet.set_seq_number(self.seq);
        if self.packet_type.has_ack() {
            packet.set_ack_number(self.ack);
        }
        self.options.emit(packet.options_mut())?;
        packet.fill_checksum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data_repr() -> Repr {
        Repr {
            src_port: 5001,
            dst_port: 6511,
            ccval: 3,
            cscov: 1,
            packet_type: PacketType::Data,
            seq: 0x0102_0304_0506,
            ack: 0,
            options: Options {
                timestamp: Some(0xDEAD_BEEF),
                rtt_estimate: Some(600_000),
                ..Options::default()
            },
            payload_len: 5,
        }
    }

    #[test]
    fn data_packet_bytes() {
        let repr = data_repr();
        assert_eq!(repr.header_len(), 28);
        let mut buf = vec![0xAAu8; repr.buffer_len()];
        repr.emit(&mut Packet::new_unchecked(&mut buf[..])).unwrap();
        assert_eq!(&buf[..6], &[0x13, 0x89, 0x19, 0x6F, 7, 0x31]);
        assert_eq!(buf[8], (2 << 1) | 1);
        assert_eq!(buf[9], 0);
        assert_eq!(&buf[10..16], &[1, 2, 3, 4, 5, 6]);
        assert_eq!(&buf[16..22], &[41, 6, 0xDE, 0xAD, 0xBE, 0xEF]);
        assert_eq!(&buf[22..28], &[184, 6, 0, 0x09, 0x27, 0xC0]);
        assert_eq!(&buf[28..], &[0xAA; 5]);
        let packet = Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(packet.ack_number(), None);
        assert_eq!(Repr::parse(&packet).unwrap(), repr);
    }

    #[test]
    fn ack_packet_round_trip_and_padding() {
        let repr = Repr {
            packet_type: PacketType::Ack,
            ack: MAX_SEQ,
            seq: MAX_SEQ,
            options: Options {
                timestamp_echo: Some(TimestampEcho {
                    timestamp: 7,
                    elapsed: None,
                }),
                elapsed_time: Some(0),
                receive_rate: Some(1),
                loss_event_rate: Some(u32::MAX),
                ..Options::default()
            },
            payload_len: 0,
            ..data_repr()
        };
        // 24 + 6 + 4 + 6 + 6 = 46, padded to 48.
        assert_eq!(repr.header_len(), 48);
        let mut buf = vec![0xAAu8; repr.buffer_len()];
        repr.emit(&mut Packet::new_unchecked(&mut buf[..])).unwrap();
        assert_eq!(&buf[46..], &[0, 0]);
        assert_eq!(&buf[16..18], &[0, 0]);
        let packet = Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(packet.ack_number(), Some(MAX_SEQ));
        assert_eq!(Repr::parse(&packet).unwrap(), repr);
    }

    #[test]
    fn options_parse_and_emit_each_form() {
        let cases: [(&[u8], DccpOption); 9] = [
            (&[0], DccpOption::Padding),
            (&[1], DccpOption::Mandatory),
            (&[2], DccpOption::Unknown { kind: 2, data: &[] }),
            (
                &[42, 6, 0, 0, 0, 9],
                DccpOption::TimestampEcho(TimestampEcho {
                    timestamp: 9,
                    elapsed: None,
                }),
            ),
            (
                &[42, 8, 0, 0, 0, 9, 0xFF, 0xFF],
                DccpOption::TimestampEcho(TimestampEcho {
                    timestamp: 9,
                    elapsed: Some(0xFFFF),
                }),
            ),
            (
                &[42, 10, 0, 0, 0, 9, 0, 1, 0, 0],
                DccpOption::TimestampEcho(TimestampEcho {
                    timestamp: 9,
                    elapsed: Some(0x1_0000),
                }),
            ),
            (&[43, 4, 0x12, 0x34], DccpOption::ElapsedTime(0x1234)),
            (
                &[43, 6, 0xFF, 0xFF, 0xFF, 0xFF],
                DccpOption::ElapsedTime(u32::MAX),
            ),
            (
                &[200, 3, 7],
                DccpOption::Unknown {
                    kind: 200,
                    data: &[7],
                },
            ),
        ];
        for (bytes, opt) in cases {
            let (rest, parsed) = DccpOption::parse(bytes).unwrap();
            assert!(rest.is_empty());
            assert_eq!(parsed, opt);
            assert_eq!(opt.buffer_len(), bytes.len());
            let mut out = vec![0u8; bytes.len()];
            assert!(opt.emit(&mut out).unwrap().is_empty());
            assert_eq!(&out[..], bytes);
        }
    }

    #[test]
    fn bad_options_are_errors() {
        for (bytes, kind) in [
            (&[41u8][..], 41),
            (&[41, 1][..], 41),
            (&[41, 7, 0, 0, 0, 0][..], 41),
            (&[41, 5, 0, 0, 0][..], 41),
            (&[42, 7, 0, 0, 0, 0, 0][..], 42),
            (&[43, 5, 0, 0, 0][..], 43),
            (&[194, 4, 0, 0][..], 194),
            (&[200, 0][..], 200),
        ] {
            match DccpOption::parse(bytes) {
                Err(WireError::BadOption { kind: k, .. }) => assert_eq!(k, kind, "{bytes:?}"),
                other => panic!("{bytes:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn mandatory_rules() {
        let ack = PacketType::Ack;
        // Mandatory Padding is two paddings; Mandatory before a known
        // option is fine.
        assert!(Options::parse(&[1, 0, 0, 0], ack).is_ok());
        assert_eq!(
            Options::parse(&[1, 194, 6, 0, 0, 0, 5, 0], ack)
                .unwrap()
                .receive_rate,
            Some(5)
        );
        // Before an unknown option, another Mandatory, or at the end.
        for area in [&[1, 200, 2, 0][..], &[1, 1, 0, 0], &[0, 0, 0, 1]] {
            assert!(
                matches!(Options::parse(area, ack), Err(WireError::BadOption { .. })),
                "{area:?}"
            );
        }
        // Ignored on DCCP-Data, as are the receiver's options.
        let o = Options::parse(&[1, 200, 2, 1, 194, 6, 0, 0, 0, 5], PacketType::Data).unwrap();
        assert_eq!(o, Options::default());
    }

    #[test]
    fn header_checks() {
        let repr = data_repr();
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut Packet::new_unchecked(&mut buf[..])).unwrap();
        // X = 0.
        let mut b = buf.clone();
        b[8] &= !1;
        assert!(matches!(
            Packet::new_checked(&b[..]),
            Err(WireError::BadHeader(_))
        ));
        // Data Offset too small, too large.
        let mut b = buf.clone();
        b[4] = 3;
        assert!(matches!(
            Packet::new_checked(&b[..]),
            Err(WireError::BadHeader(_))
        ));
        b[4] = 200;
        assert_eq!(Packet::new_checked(&b[..]), Err(WireError::Truncated));
        // CsCov beyond the packet: 28 + (3 - 1) * 4 = 36 > 33.
        let mut b = buf.clone();
        b[5] = (b[5] & 0xF0) | 3;
        let p = Packet::new_checked(&b[..]).unwrap();
        assert!(matches!(Repr::parse(&p), Err(WireError::BadHeader(_))));
        // A zero checksum is not verified.
        let mut b = buf.clone();
        b[6] = 0;
        b[7] = 0;
        b[0] ^= 0xFF;
        assert!(Repr::parse(&Packet::new_checked(&b[..]).unwrap()).is_ok());
        // Any other wrong value is.
        let mut b = buf.clone();
        b[0] ^= 0xFF;
        assert_eq!(
            Repr::parse(&Packet::new_checked(&b[..]).unwrap()),
            Err(WireError::BadChecksum)
        );
    }

    #[test]
    fn full_coverage_checksum_covers_payload() {
        let repr = Repr {
            cscov: 0,
            ..data_repr()
        };
        let mut buf = vec![0x55u8; repr.buffer_len()];
        repr.emit(&mut Packet::new_unchecked(&mut buf[..])).unwrap();
        assert!(Repr::parse(&Packet::new_checked(&buf[..]).unwrap()).is_ok());
        let last = buf.len() - 1;
        buf[last] ^= 1;
        assert_eq!(
            Repr::parse(&Packet::new_checked(&buf[..]).unwrap()),
            Err(WireError::BadChecksum)
        );
    }

    #[test]
    fn emit_rejects_what_the_header_cannot_hold() {
        let mut buf = [0u8; 64];
        for bad in [
            Repr {
                seq: MAX_SEQ + 1,
                ..data_repr()
            },
            Repr {
                ccval: 16,
                ..data_repr()
            },
            Repr {
                packet_type: PacketType::Sync,
                ..data_repr()
            },
            Repr {
                cscov: 4,
                ..data_repr()
            },
        ] {
            assert!(matches!(
                bad.emit(&mut Packet::new_unchecked(&mut buf[..])),
                Err(WireError::Unrepresentable(_))
            ));
        }
        assert_eq!(
            data_repr().emit(&mut Packet::new_unchecked(&mut buf[..20])),
            Err(WireError::BufferTooSmall { needed: 33 })
        );
    }

    #[test]
    fn accessors_on_short_buffers_do_not_panic() {
        for n in 0..30 {
            let buf = vec![0xFFu8; n];
            let p = Packet::new_unchecked(&buf[..]);
            let _ = (
                p.src_port(),
                p.dst_port(),
                p.seq_number(),
                p.ack_number(),
                p.options(),
                p.payload(),
                p.checksum_coverage(),
                p.verify_checksum(),
            );
            let mut buf = vec![0u8; n];
            let mut p = Packet::new_unchecked(&mut buf[..]);
            p.set_packet_type(PacketType::Ack);
            p.set_data_offset(255);
            p.set_ack_number(1);
            let _ = p.options_mut();
            let _ = p.payload_mut();
            let _ = p.fill_checksum();
        }
    }
}
