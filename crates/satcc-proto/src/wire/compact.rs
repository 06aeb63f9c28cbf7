//! The compact header of TFRCP (paper 004 §II-B) and of plain datagrams:
//! no standard format exists for either, so this is ours (layout table in
//! [`super`]).
//!
//! Every packet starts with the magic/version byte [`MAGIC_VERSION`], a
//! type byte and a 16-bit Internet checksum of the header (RFC 1071, the
//! field taken as zero); then big-endian fields:
//!
//! | type | header bytes | fields after the checksum | then |
//! |---|---|---|---|
//! | 1, TFRCP data | 20 | seq (8), ts in ns (8) | `len` payload bytes |
//! | 2, TFRCP ACK | 21 | seq of the packet acknowledged (8), its ts echoed (8), reception vector (1) | nothing |
//! | 3, datagram | 12 | seq (8) | `len` payload bytes |
//!
//! Timestamps are the [`Instant`]'s full 64-bit nanosecond count, so they
//! survive the trip exactly and need no unwrapping. The checksum covers
//! the header only (the payload is opaque and covered by the UDP
//! checksum); a version other than ours, an unknown type, a short header,
//! a checksum mismatch or bytes after an ACK are errors.

use super::bytes::{byte, read, set_byte, write};
use super::{checksum, WireError};
use crate::endpoint::Message;
use crate::tfrcp::{TfrcpAck, TfrcpData};
use crate::time::Instant;

/// The first byte of every compact packet: magic 0xA in the high nibble,
/// version 1 in the low one.
pub const MAGIC_VERSION: u8 = 0xA1;

mod field {
    use std::ops::Range;

    pub const VERSION: usize = 0;
    pub const TYPE: usize = 1;
    pub const CHECKSUM: Range<usize> = 2..4;
    pub const SEQ: Range<usize> = 4..12;
    pub const TIMESTAMP: Range<usize> = 12..20;
    pub const VECTOR: usize = 20;
}

/// Compact packet types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PacketType {
    /// TFRCP data packet.
    TfrcpData = 1,
    /// TFRCP ACK with its reception vector.
    TfrcpAck = 2,
    /// Plain datagram (CBR).
    Datagram = 3,
}

impl PacketType {
    /// The type with this number, if any.
    pub fn from_u8(v: u8) -> Option<PacketType> {
        match v {
            1 => Some(PacketType::TfrcpData),
            2 => Some(PacketType::TfrcpAck),
            3 => Some(PacketType::Datagram),
            _ => None,
        }
    }

    /// Header bytes of the type.
    pub fn header_len(self) -> usize {
        match self {
            PacketType::TfrcpData => field::TIMESTAMP.end,
            PacketType::TfrcpAck => field::VECTOR + 1,
            PacketType::Datagram => field::SEQ.end,
        }
    }
}

/// A read/write view of a compact packet in a buffer.
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

    /// Checks the magic/version byte and the type (they decide the
    /// layout) and that the type's header is in the buffer.
    pub fn check_len(&self) -> Result<(), WireError> {
        let len = self.buffer.as_ref().len();
        if len <= field::TYPE {
            return Err(WireError::Truncated);
        }
        if self.version() != MAGIC_VERSION {
            return Err(WireError::BadVersion(self.version()));
        }
        match self.header_len() {
            None => Err(WireError::BadType(self.packet_type())),
            Some(h) if h > len => Err(WireError::Truncated),
            Some(_) => Ok(()),
        }
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The magic/version byte.
    pub fn version(&self) -> u8 {
        byte(self.buffer.as_ref(), field::VERSION)
    }

    /// The type byte (see [`PacketType::from_u8`]).
    pub fn packet_type(&self) -> u8 {
        byte(self.buffer.as_ref(), field::TYPE)
    }

    /// Header bytes for the packet's type; `None` for an unknown type.
    pub fn header_len(&self) -> Option<usize> {
        PacketType::from_u8(self.packet_type()).map(PacketType::header_len)
    }

    /// The checksum field.
    pub fn checksum(&self) -> u16 {
        read(self.buffer.as_ref(), field::CHECKSUM) as u16
    }

    /// The sequence number.
    pub fn seq(&self) -> u64 {
        read(self.buffer.as_ref(), field::SEQ)
    }

    /// The timestamp in nanoseconds (data: send time; ACK: the echo);
    /// `None` for a datagram, which has none.
    pub fn timestamp(&self) -> Option<u64> {
        match PacketType::from_u8(self.packet_type()) {
            Some(PacketType::TfrcpData | PacketType::TfrcpAck) => {
                Some(read(self.buffer.as_ref(), field::TIMESTAMP))
            }
            _ => None,
        }
    }

    /// The ACK's reception vector; `None` for other types.
    pub fn vector(&self) -> Option<u8> {
        match PacketType::from_u8(self.packet_type()) {
            Some(PacketType::TfrcpAck) => Some(byte(self.buffer.as_ref(), field::VECTOR)),
            _ => None,
        }
    }

    /// The bytes after the header (empty if the type is unknown).
    pub fn payload(&self) -> &[u8] {
        match self.header_len() {
            Some(h) => self.buffer.as_ref().get(h..).unwrap_or(&[]),
            None => &[],
        }
    }

    /// Whether the checksum matches the header.
    pub fn verify_checksum(&self) -> bool {
        match self
            .header_len()
            .and_then(|h| self.buffer.as_ref().get(..h))
        {
            Some(header) => checksum::verify(header),
            None => false,
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the magic/version byte to [`MAGIC_VERSION`].
    pub fn set_version(&mut self) {
        set_byte(self.buffer.as_mut(), field::VERSION, MAGIC_VERSION);
    }

    /// Sets the type.
    pub fn set_packet_type(&mut self, t: PacketType) {
        set_byte(self.buffer.as_mut(), field::TYPE, t as u8);
    }

    /// Sets the checksum field.
    pub fn set_checksum(&mut self, value: u16) {
        write(self.buffer.as_mut(), field::CHECKSUM, value.into());
    }

    /// Sets the sequence number.
    pub fn set_seq(&mut self, value: u64) {
        write(self.buffer.as_mut(), field::SEQ, value);
    }

    /// Sets the timestamp (data and ACK only).
    pub fn set_timestamp(&mut self, ns: u64) {
        write(self.buffer.as_mut(), field::TIMESTAMP, ns);
    }

    /// Sets the reception vector (ACK only).
    pub fn set_vector(&mut self, value: u8) {
        set_byte(self.buffer.as_mut(), field::VECTOR, value);
    }

    /// The bytes after the header, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        match self.header_len() {
            Some(h) => self.buffer.as_mut().get_mut(h..).unwrap_or(&mut []),
            None => &mut [],
        }
    }

    /// Computes and stores the header checksum.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let h = self.header_len().unwrap_or(0);
        let sum = checksum::compute(self.buffer.as_ref().get(..h).unwrap_or(&[]));
        self.set_checksum(sum);
    }
}

/// A parsed compact packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Repr {
    /// TFRCP data.
    TfrcpData {
        /// Sequence number.
        seq: u64,
        /// Send time.
        ts: Instant,
        /// Payload bytes.
        payload_len: usize,
    },
    /// TFRCP ACK.
    TfrcpAck {
        /// k, the data packet acknowledged.
        seq: u64,
        /// Its send time, echoed.
        ts_echo: Instant,
        /// Bit i: packet k-i received.
        vector: u8,
    },
    /// Plain datagram.
    Datagram {
        /// Sequence number.
        seq: u64,
        /// Payload bytes.
        payload_len: usize,
    },
}

impl Repr {
    /// Parses a packet: version, type, lengths, checksum; an ACK must end
    /// with its header.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr, WireError> {
        packet.check_len()?;
        if !packet.verify_checksum() {
            return Err(WireError::BadChecksum);
        }
        let seq = packet.seq();
        let payload_len = packet.payload().len();
        let ts = Instant(packet.timestamp().unwrap_or(0));
        Ok(match PacketType::from_u8(packet.packet_type()) {
            Some(PacketType::TfrcpData) => Repr::TfrcpData {
                seq,
                ts,
                payload_len,
            },
            Some(PacketType::TfrcpAck) => {
                if payload_len != 0 {
                    return Err(WireError::BadHeader("bytes after a TFRCP ACK"));
                }
                Repr::TfrcpAck {
                    seq,
                    ts_echo: ts,
                    vector: packet.vector().unwrap_or(0),
                }
            }
            Some(PacketType::Datagram) => Repr::Datagram { seq, payload_len },
            None => return Err(WireError::BadType(packet.packet_type())),
        })
    }

    /// The packet's type.
    pub fn packet_type(&self) -> PacketType {
        match self {
            Repr::TfrcpData { .. } => PacketType::TfrcpData,
            Repr::TfrcpAck { .. } => PacketType::TfrcpAck,
            Repr::Datagram { .. } => PacketType::Datagram,
        }
    }

    /// Header bytes.
    pub fn header_len(&self) -> usize {
        self.packet_type().header_len()
    }

    /// Bytes of the whole packet.
    pub fn buffer_len(&self) -> usize {
        self.header_len()
            + match self {
                Repr::TfrcpData { payload_len, .. } | Repr::Datagram { payload_len, .. } => {
                    *payload_len
                }
                Repr::TfrcpAck { .. } => 0,
            }
    }

    /// Writes the header into `packet` (at least [`Repr::buffer_len`]
    /// bytes) and fills its checksum; the payload is left as it is.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut Packet<T>,
    ) -> Result<(), WireError> {
        let needed = self.buffer_len();
        if packet.buffer.as_ref().len() < needed {
            return Err(WireError::BufferTooSmall { needed });
        }
        packet.set_version();
        packet.set_packet_type(self.packet_type());
        packet.set_checksum(0);
        match *self {
            Repr::TfrcpData { seq, ts, .. } => {
                packet.set_seq(seq);
                packet.set_timestamp(ts.as_nanos());
            }
            Repr::TfrcpAck {
                seq,
                ts_echo,
                vector,
            } => {
                packet.set_seq(seq);
                packet.set_timestamp(ts_echo.as_nanos());
                packet.set_vector(vector);
            }
            Repr::Datagram { seq, .. } => packet.set_seq(seq),
        }
        packet.fill_checksum();
        Ok(())
    }

    /// The packet for a TFRCP or datagram message; [`WireError::Unsupported`]
    /// for other messages.
    pub fn from_message(msg: &Message) -> Result<Repr, WireError> {
        Ok(match *msg {
            Message::TfrcpData(d) => Repr::TfrcpData {
                seq: d.seq,
                ts: d.ts,
                payload_len: d.len as usize,
            },
            Message::TfrcpAck(a) => Repr::TfrcpAck {
                seq: a.seq,
                ts_echo: a.ts_echo,
                vector: a.vector,
            },
            Message::Datagram { seq, len } => Repr::Datagram {
                seq,
                payload_len: len as usize,
            },
            _ => return Err(WireError::Unsupported),
        })
    }

    /// The message the packet carries.
    pub fn to_message(&self) -> Result<Message, WireError> {
        let len = |n: usize| {
            u32::try_from(n).map_err(|_| WireError::BadHeader("payload longer than 2^32 - 1 bytes"))
        };
        Ok(match *self {
            Repr::TfrcpData {
                seq,
                ts,
                payload_len,
            } => Message::TfrcpData(TfrcpData {
                seq,
                len: len(payload_len)?,
                ts,
            }),
            Repr::TfrcpAck {
                seq,
                ts_echo,
                vector,
            } => Message::TfrcpAck(TfrcpAck {
                seq,
                ts_echo,
                vector,
            }),
            Repr::Datagram { seq, payload_len } => Message::Datagram {
                seq,
                len: len(payload_len)?,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts() {
        let ack = Repr::TfrcpAck {
            seq: 0x0102_0304_0506_0708,
            ts_echo: Instant(0x1112_1314_1516_1718),
            vector: 0b1011_0111,
        };
        let mut buf = [0u8; 21];
        ack.emit(&mut Packet::new_unchecked(&mut buf[..])).unwrap();
        assert_eq!(buf[0], 0xA1);
        assert_eq!(buf[1], 2);
        assert_eq!(&buf[4..12], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(
            &buf[12..20],
            &[0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18]
        );
        assert_eq!(buf[20], 0b1011_0111);
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert!(p.verify_checksum());
        assert_eq!(Repr::parse(&p), Ok(ack));

        let dg = Repr::Datagram {
            seq: u64::MAX,
            payload_len: 3,
        };
        let mut buf = [0x77u8; 15];
        dg.emit(&mut Packet::new_unchecked(&mut buf[..])).unwrap();
        assert_eq!(&buf[4..12], &[0xFF; 8]);
        assert_eq!(&buf[12..], &[0x77; 3]);
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(p.timestamp(), None);
        assert_eq!(Repr::parse(&p), Ok(dg));
    }

    #[test]
    fn header_errors() {
        let data = Repr::TfrcpData {
            seq: 1,
            ts: Instant(2),
            payload_len: 0,
        };
        let mut buf = [0u8; 20];
        data.emit(&mut Packet::new_unchecked(&mut buf[..])).unwrap();
        let mut b = buf;
        b[0] = 0xA2;
        assert_eq!(
            Packet::new_checked(&b[..]).map(|_| ()),
            Err(WireError::BadVersion(0xA2))
        );
        let mut b = buf;
        b[1] = 9;
        assert_eq!(
            Packet::new_checked(&b[..]).map(|_| ()),
            Err(WireError::BadType(9))
        );
        let mut b = buf;
        b[7] ^= 0x10;
        assert_eq!(
            Repr::parse(&Packet::new_checked(&b[..]).unwrap()),
            Err(WireError::BadChecksum)
        );
        assert_eq!(
            Packet::new_checked(&buf[..19]).map(|_| ()),
            Err(WireError::Truncated)
        );
        assert_eq!(
            data.emit(&mut Packet::new_unchecked(&mut buf[..10])),
            Err(WireError::BufferTooSmall { needed: 20 })
        );
    }
}
