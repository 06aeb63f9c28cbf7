//! Byte codecs for the datagram protocols, so that the sans-IO endpoints
//! can run over real UDP.
//!
//! The endpoints exchange typed [`Message`]s; this module turns the
//! datagram protocols' messages into the bytes of one UDP payload and back.
//! Each format follows smoltcp's `wire` style: a checked view over a
//! buffer (`Packet<T: AsRef<[u8]>>`, built with `new_checked`, with field
//! accessors and setters) and a parsed representation (`Repr`, with
//! `parse`, `buffer_len` and `emit`). On top of them, [`encode`] and
//! [`decode`] convert a whole [`Message`] for a flow's [`WireProtocol`].
//!
//! | protocol | messages | format | module |
//! |---|---|---|---|
//! | [`WireProtocol::Dccp`] | `TfrcData`, `TfrcFeedback` | DCCP (RFC 4340) with the CCID 3 options (RFC 4342), in UDP as RFC 6773 | [`dccp`], [`ccid3`] |
//! | [`WireProtocol::Tfrcp`] | `TfrcpData`, `TfrcpAck` | our compact header (no standard exists) | [`compact`] |
//! | [`WireProtocol::Datagram`] | `Datagram` | our compact header | [`compact`] |
//! | [`WireProtocol::Saratoga`] | `SaraRequest`, `SaraMetadata`, `SaraData`, `SaraStatus` | draft-wood-tsvwg-saratoga-22 §4 | [`crate::saratoga::wire`] |
//!
//! Saratoga file names travel as 16-hex-digit renderings of the messages'
//! name keys (see [`crate::saratoga::msg`]); a runtime with real names
//! uses [`crate::saratoga::wire::Repr`] directly.
//!
//! TCP's messages have no codec here (the UDP runtime carries datagram
//! protocols): [`encode`] answers [`WireError::Unsupported`]. Real TCP
//! segments (RFC 9293, as a router on an emulated link sees them) have
//! their own codec in [`tcp`].
//!
//! # TFRC and CCID 3: DCCP in UDP
//!
//! A TFRC data packet is a DCCP-Data packet, a feedback packet a DCCP-Ack,
//! both with the generic header of RFC 4340 §5.1 with X = 1 (48-bit
//! sequence numbers), carried as the payload of a UDP datagram as RFC 6773
//! §3 specifies (the DCCP header directly follows the UDP header).
//!
//! DCCP-Data (TfrcData), 24 bytes of header without the RTT option, 28
//! with it; then `len` payload bytes:
//!
//! | offset | bytes | field | value |
//! |---|---|---|---|
//! | 0 | 2 | Source Port | 0 (see below) |
//! | 2 | 2 | Dest Port | 0 |
//! | 4 | 1 | Data Offset | header length / 4 (6 or 7) |
//! | 5 | 1 | CCVal (4 bits), CsCov (4 bits) | CCVal 0, CsCov 1 |
//! | 6 | 2 | Checksum | header only, no pseudo-header (see below) |
//! | 8 | 1 | Res (3), Type (4), X (1) | Type 2 (DCCP-Data), X 1 |
//! | 9 | 1 | Reserved | 0 |
//! | 10 | 6 | Sequence Number | `seq` (at most 2^48 - 1) |
//! | 16 | 6 | Timestamp option (41, len 6) | `ts` in 10 µs ticks mod 2^32 (RFC 4340 §13.1) |
//! | 22 | 6 | RTT Estimate option (184, len 6), only if `rtt` is `Some` | `rtt` in µs (ours, see [`ccid3`]) |
//! | 22 or 28 | 2 or 0 | Padding (0) | to a 32-bit boundary (RFC 4340 §5.8) |
//!
//! DCCP-Ack (TfrcFeedback), 48 or 52 bytes, no payload:
//!
//! | offset | bytes | field | value |
//! |---|---|---|---|
//! | 0 | 16 | generic header | Type 3 (DCCP-Ack), X 1, Sequence Number 0 |
//! | 16 | 8 | Acknowledgement Number subheader (RFC 4340 §5.1) | 0 |
//! | 24 | 6, 8 or 10 | Timestamp Echo option (42, RFC 4340 §13.3) | the echoed timestamp, and `t_delay` as its Elapsed Time (omitted when zero, 2 bytes up to 0.65535 s, else 4) |
//! | | 4 or 6 | Elapsed Time option (43, RFC 4340 §13.2) | `t_delay` in 10 µs ticks (RFC 4342 §8.2 requires it) |
//! | | 6 | Receive Rate option (194, RFC 4342 §8.3) | `x_recv` in bytes/s, rounded, saturating at 2^32 - 1 |
//! | | 6 | Loss Event Rate option (192, RFC 4342 §8.5) | 1/`p` rounded up; 2^32 - 1 for p = 0 |
//! | | 0 or 2 | Padding | to a 32-bit boundary |
//!
//! Decoding also accepts DCCP-DataAck (type 4) as a data packet, skips
//! options it does not know (RFC 4340 §5.8), and takes `t_delay` from the
//! Timestamp Echo's Elapsed Time, else from the Elapsed Time option, else
//! zero (§13.3: a missing Elapsed Time equals zero).
//!
//! Deviations from the standards, and why:
//!
//! - **No connection.** There is no DCCP-Request/Response handshake,
//!   feature negotiation or Service Code: the UDP runtime sets flows up
//!   itself, and only the data-transfer packets (Data, Ack, DataAck) are
//!   encoded or accepted; any other type decodes to
//!   [`WireError::BadType`].
//! - **Ports and numbering.** [`Message`] carries neither DCCP ports nor
//!   the DCCP-Ack's own sequence and acknowledgement numbers, so
//!   [`encode`] writes zeros there: the UDP 4-tuple identifies the flow
//!   (one DCCP connection per UDP port pair, the first demultiplexing
//!   method of RFC 6773 §3.8) and the TFRC sender matches feedback by its
//!   echoed timestamp (RFC 5348 §6). A runtime that wants them builds a
//!   [`dccp::Repr`] with [`ccid3::to_repr`], sets the fields and emits it.
//! - **CCVal is 0.** RFC 4342 §8.1's window counter is per-connection
//!   state a stateless codec does not have; our sender carries its RTT
//!   estimate explicitly instead (RFC 5348 §3.2.1), in the experimental
//!   CCID-specific option 184 (see [`ccid3`]).
//! - **Loss Event Rate instead of Loss Intervals.** RFC 4342 §6 lists the
//!   Loss Intervals option (§8.6) among a feedback packet's required
//!   options and Loss Event Rate (§8.5) as optional. Our receiver computes
//!   p itself (RFC 5348 §6: the feedback carries p) and [`TfrcFeedback`]
//!   has no interval history, so feedback carries Loss Event Rate and no
//!   Loss Intervals; decoding requires Loss Event Rate and skips Loss
//!   Intervals.
//! - **Checksum.** RFC 6773 §3.3 leaves integrity to the UDP checksum
//!   (mandatory, non-zero, over the whole datagram) and says to send the
//!   DCCP Checksum as zero and ignore it on receipt. We still fill it, as
//!   an end-to-end check of the header that does not depend on the
//!   socket layer: the Internet checksum (RFC 4340 §9.1) over the DCCP
//!   header and options *without* the IP pseudo-header (the codec does not
//!   know the addresses, and NATs rewrite them: the very reason RFC 6773
//!   moved the checksum to UDP), with CsCov = 1 (§9.2: header and options
//!   only; the payload is the caller's, written before or after
//!   [`encode`], and the UDP checksum covers it). A computed 0x0000 is sent
//!   as 0xFFFF, so a zero field keeps RFC 6773's meaning: a received zero
//!   Checksum is not verified (an RFC 6773 sender interoperates), any
//!   other value is verified with the coverage its CsCov gives, and a
//!   mismatch is [`WireError::BadChecksum`].
//! - **Strict options.** RFC 4340 §5.8 tells a receiver to ignore an
//!   option with a nonsensical length together with the rest of the option
//!   space, and to ignore options with invalid values. We reject such a
//!   packet ([`WireError::BadOption`]): a packet whose header passed the
//!   checksum and still carries a malformed option did not come from a
//!   conforming sender, and ignoring the option would only turn it into a
//!   packet with a missing field. Unknown option types are skipped as the
//!   RFC says; a Mandatory option (§5.8.2) before one we do not process is
//!   an error. Options that RFC 4340 Table 3 and RFC 4342 Table 1 mark as
//!   ignored on DCCP-Data packets are ignored there.
//! - **No short sequence numbers.** Packets with X = 0 (24-bit sequence
//!   numbers, §7.6) are rejected: a stateless decoder cannot extend them
//!   to 48 bits (that needs the receiver's GSR), and we always send X = 1.
//!
//! ## Timestamps
//!
//! [`Instant`] is nanoseconds since an arbitrary epoch of the run; DCCP's
//! Timestamp is 32 bits in units of 10 µs (RFC 4340 §13.1), so encoding
//! truncates `ts` to whole 10 µs ticks (rounding down: an RTT measured from
//! an echo is at most 10 µs too long, never too short) and keeps the low
//! 32 bits (the value wraps every 2^32 ticks, about 11.9 hours). The
//! receiver echoes what it received: decoding maps a 32-bit value back to
//! the [`Instant`] congruent to it modulo 2^32 ticks that is nearest to the
//! decoder's `now` ([`ccid3::timestamp_from_wire`]). At the sender, which
//! compares an echo with its own clock, that is exactly the instant it
//! encoded (to the tick) as long as the round trip is under 5.9 hours. At
//! the receiver the value is on the sender's clock and only echoed, and it
//! re-encodes to the same 32 bits whatever instant it mapped to. Elapsed
//! times (`t_delay`) are whole 10 µs ticks, rounded down (RFC 4340 §13.2:
//! "an estimated lower bound"), saturating at 2^32 - 1 ticks.
//!
//! # TFRCP and plain datagrams: the compact header
//!
//! Paper 004 (§II-B) defines TFRCP's fields but no wire format, so the
//! [`compact`] module defines one, shared with the CBR [`Message::Datagram`]:
//! a magic/version byte, a type, an Internet checksum of the header, then
//! big-endian fields; 64-bit sequence numbers and 64-bit nanosecond
//! timestamps carry [`Instant`]s exactly.
//!
//! | offset | bytes | TfrcpData (type 1) | TfrcpAck (type 2) | Datagram (type 3) |
//! |---|---|---|---|---|
//! | 0 | 1 | magic/version 0xA1 | 0xA1 | 0xA1 |
//! | 1 | 1 | type 1 | type 2 | type 3 |
//! | 2 | 2 | checksum | checksum | checksum |
//! | 4 | 8 | `seq` | `seq` (k, the packet acknowledged) | `seq` |
//! | 12 | 8 | `ts`, ns | `ts_echo`, ns | payload... |
//! | 20 | 1 | payload... | `vector` (bit i: packet k-i received) | |
//! | header | | 20 bytes, then `len` payload bytes | exactly 21 bytes | 12 bytes, then `len` payload bytes |
//!
//! The checksum is the Internet checksum (RFC 1071) of the header bytes
//! with the field as zero, like DCCP's CsCov = 1: the header is what the
//! codec interprets, the payload is covered by the UDP checksum.
//!
//! # Errors
//!
//! Decoding never panics on any input: every field is read with a bounds
//! check, and a malformed packet gives a [`WireError`].
//!
//! [`TfrcFeedback`]: crate::tfrc::TfrcFeedback

use std::fmt;

use crate::endpoint::Message;
use crate::saratoga::{msg as sara_msg, wire as sara};
use crate::time::Instant;

mod bytes;
pub mod ccid3;
pub mod checksum;
pub mod compact;
pub mod dccp;
pub mod tcp;

/// Why a packet could not be decoded, or a message not encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// The buffer ends before the header (or the part of it the packet's
    /// own fields announce) does.
    Truncated,
    /// The output buffer is too small: `needed` bytes are required.
    BufferTooSmall {
        /// Bytes the encoded packet takes.
        needed: usize,
    },
    /// The compact header's magic/version byte is not ours.
    BadVersion(u8),
    /// A packet type this codec does not accept (a DCCP type other than
    /// Data, Ack and DataAck, a reserved one, or a compact type of another
    /// protocol).
    BadType(u8),
    /// A header field is invalid: the reason says which.
    BadHeader(&'static str),
    /// The checksum does not match.
    BadChecksum,
    /// An option is malformed: it overruns the option space, has a length
    /// its type does not allow or an invalid value, or is marked Mandatory
    /// and not understood.
    BadOption {
        /// The option type.
        kind: u8,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An option the message needs is absent (its type).
    MissingOption(u8),
    /// The message holds a value the format cannot carry (a DCCP sequence
    /// number at or above 2^48, a NaN rate, a loss event rate above 1).
    Unrepresentable(&'static str),
    /// The message has no wire format here (TCP segments).
    Unsupported,
    /// A Saratoga frame is malformed (the error names the field).
    Saratoga(sara::Error),
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Truncated => write!(f, "packet truncated"),
            WireError::BufferTooSmall { needed } => {
                write!(f, "output buffer too small: {needed} bytes needed")
            }
            WireError::BadVersion(v) => write!(f, "bad magic/version byte {v:#04x}"),
            WireError::BadType(t) => write!(f, "unsupported packet type {t}"),
            WireError::BadHeader(why) => write!(f, "bad header: {why}"),
            WireError::BadChecksum => write!(f, "bad checksum"),
            WireError::BadOption { kind, reason } => write!(f, "bad option {kind}: {reason}"),
            WireError::MissingOption(kind) => write!(f, "required option {kind} missing"),
            WireError::Unrepresentable(what) => write!(f, "cannot encode: {what}"),
            WireError::Unsupported => write!(f, "message has no wire format"),
            WireError::Saratoga(e) => write!(f, "saratoga: {e}"),
        }
    }
}

impl std::error::Error for WireError {}

/// The wire format of a flow: what a UDP runtime hands [`decode`] for the
/// datagrams of one flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WireProtocol {
    /// TFRC / DCCP CCID 3: DCCP-Data and DCCP-Ack in UDP (RFC 6773).
    Dccp,
    /// TFRCP: the compact header, types 1 (data) and 2 (ACK).
    Tfrcp,
    /// Plain datagrams (CBR): the compact header, type 3.
    Datagram,
    /// Saratoga frames (draft-wood-tsvwg-saratoga-22), UDP port 7542.
    Saratoga,
}

impl WireProtocol {
    /// The format that carries `msg`, `None` for messages without one
    /// (TCP).
    pub fn of(msg: &Message) -> Option<WireProtocol> {
        match msg {
            Message::TfrcData(_) | Message::TfrcFeedback(_) => Some(WireProtocol::Dccp),
            Message::TfrcpData(_) | Message::TfrcpAck(_) => Some(WireProtocol::Tfrcp),
            Message::Datagram { .. } => Some(WireProtocol::Datagram),
            Message::SaraRequest(_)
            | Message::SaraMetadata(_)
            | Message::SaraData(_)
            | Message::SaraStatus(_) => Some(WireProtocol::Saratoga),
            Message::TcpData(_) | Message::TcpAck(_) => None,
        }
    }

    /// A short name.
    pub fn name(self) -> &'static str {
        match self {
            WireProtocol::Dccp => "dccp",
            WireProtocol::Tfrcp => "tfrcp",
            WireProtocol::Datagram => "datagram",
            WireProtocol::Saratoga => "saratoga",
        }
    }
}

impl fmt::Display for WireProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The longest header [`encode`] writes (a Saratoga STATUS with a
/// timestamp and two 128-bit holes: 8 + 16 + 6 * 16 bytes; the longest
/// DCCP-Ack is 52): a buffer of `MAX_HEADER_LEN + s` bytes holds any packet
/// of payload size `s`.
pub const MAX_HEADER_LEN: usize = 120;

/// A message in its wire form, the one conversion both `encode` and
/// `header_len` go through.
enum Wire {
    Dccp(dccp::Repr),
    Compact(compact::Repr),
    Saratoga(sara::Repr),
}

impl Wire {
    fn of(msg: &Message) -> Result<Wire, WireError> {
        match WireProtocol::of(msg) {
            Some(WireProtocol::Dccp) => ccid3::to_repr(msg).map(Wire::Dccp),
            Some(WireProtocol::Saratoga) => sara_msg::to_repr(msg)
                .map(Wire::Saratoga)
                .ok_or(WireError::Unsupported),
            Some(_) => compact::Repr::from_message(msg).map(Wire::Compact),
            None => Err(WireError::Unsupported),
        }
    }

    fn header_len(&self) -> usize {
        match self {
            Wire::Dccp(r) => r.header_len(),
            Wire::Compact(r) => r.header_len(),
            Wire::Saratoga(r) => r.header_len(),
        }
    }

    fn buffer_len(&self) -> usize {
        match self {
            Wire::Dccp(r) => r.buffer_len(),
            Wire::Compact(r) => r.buffer_len(),
            Wire::Saratoga(r) => r.buffer_len(),
        }
    }
}

/// Bytes of header [`encode`] writes for `msg` (its payload follows).
pub fn header_len(msg: &Message) -> Result<usize, WireError> {
    Wire::of(msg).map(|w| w.header_len())
}

/// Bytes of the whole encoded packet: header plus the message's payload
/// length.
pub fn encoded_len(msg: &Message) -> Result<usize, WireError> {
    Wire::of(msg).map(|w| w.buffer_len())
}

/// Encodes `msg` at the start of `buf` and returns the packet's length
/// (header plus payload): send `&buf[..n]` as one UDP datagram.
///
/// Only the header is written; the `len` payload bytes after it are the
/// caller's (their content is not covered by the codec's checksum, so they
/// may be written before or after). Fails with
/// [`WireError::BufferTooSmall`] if `buf` cannot hold the packet,
/// [`WireError::Unsupported`] for TCP messages, and
/// [`WireError::Unrepresentable`] for values the format cannot carry.
pub fn encode(msg: &Message, buf: &mut [u8]) -> Result<usize, WireError> {
    let wire = Wire::of(msg)?;
    let n = wire.buffer_len();
    let Some(out) = buf.get_mut(..n) else {
        return Err(WireError::BufferTooSmall { needed: n });
    };
    match wire {
        Wire::Dccp(r) => r.emit(&mut dccp::Packet::new_unchecked(out))?,
        Wire::Compact(r) => r.emit(&mut compact::Packet::new_unchecked(out))?,
        Wire::Saratoga(r) => r
            .emit(&mut sara::Frame::new_unchecked(out))
            .map_err(WireError::Saratoga)?,
    }
    Ok(n)
}

/// Decodes one UDP payload of a flow using `protocol`.
///
/// `now` is the decoding endpoint's clock: DCCP carries 32-bit timestamps
/// of 10 µs ticks, mapped back to the [`Instant`] nearest to `now` that
/// has the same value modulo 2^32 ticks (see the module documentation).
/// The compact formats carry full 64-bit timestamps and ignore it.
pub fn decode(protocol: WireProtocol, buf: &[u8], now: Instant) -> Result<Message, WireError> {
    match protocol {
        WireProtocol::Dccp => {
            let packet = dccp::Packet::new_checked(buf)?;
            let repr = dccp::Repr::parse(&packet)?;
            ccid3::to_message(&repr, now)
        }
        WireProtocol::Tfrcp | WireProtocol::Datagram => {
            let packet = compact::Packet::new_checked(buf)?;
            let repr = compact::Repr::parse(&packet)?;
            let ok = matches!(
                (protocol, repr),
                (WireProtocol::Tfrcp, compact::Repr::TfrcpData { .. })
                    | (WireProtocol::Tfrcp, compact::Repr::TfrcpAck { .. })
                    | (WireProtocol::Datagram, compact::Repr::Datagram { .. })
            );
            if !ok {
                return Err(WireError::BadType(repr.packet_type() as u8));
            }
            repr.to_message()
        }
        WireProtocol::Saratoga => {
            let frame = sara::Frame::new_checked(buf).map_err(WireError::Saratoga)?;
            let repr = sara::Repr::parse(&frame).map_err(WireError::Saratoga)?;
            sara_msg::from_repr(&repr).map_err(|e| match e {
                sara_msg::ToMessageError::Beacon => WireError::BadType(0),
                sara_msg::ToMessageError::NameNotKey => {
                    WireError::BadHeader("saratoga name is not a 16-hex-digit key")
                }
                sara_msg::ToMessageError::PayloadTooLong => {
                    WireError::BadHeader("payload longer than 2^32 - 1 bytes")
                }
            })
        }
    }
}
