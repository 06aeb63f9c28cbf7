//! Saratoga (draft-wood-tsvwg-saratoga-22): a UDP file-transfer protocol
//! for satellite links with negative-acknowledgement (hole list) recovery.
//!
//! Layout: [`wire`] (frames ⇄ bytes, §4), [`sender`] (the side that sends
//! a file: a PUT's initiator or a GET's responder), [`receiver`] (a PUT's
//! destination or a GET's requester), [`ranges`] (the bounded received-
//! range set), [`rate`] (the pluggable sending rate: fixed, or STFRC via
//! [`crate::stfrc::StfrcController`]), and `endpoint.rs` (the sender and
//! receiver behind [`crate::Endpoint`] and [`crate::Sender`]). See
//! `docs/saratoga.md` for the implemented subset and the
//! choices made where the draft leaves one.
//!
//! The sans-IO messages of [`msg`] are what the simulator carries
//! ([`crate::Message::SaraData`] and its siblings): typed, `Copy`, no payload bytes (like
//! `TcpData`, a DATA message carries its offset and length; a runtime
//! reads/writes the file at that offset). File names are carried as a
//! `u64` key the runtime maps to a path ([`msg`] and `docs/saratoga.md`).
//! They and their field types ([`DescriptorSize`], [`wire::Checksum`], ...)
//! are defined in [`crate::messages::saratoga`], below [`crate::endpoint`],
//! and re-exported by [`msg`] and [`wire`].

use crate::time::{Duration, Instant};

mod endpoint;
pub mod holes;
pub mod msg;
pub mod ranges;
pub mod rate;
pub mod receiver;
pub mod sender;
#[cfg(test)]
mod tests;
pub mod wire;

pub use holes::{SharedHoleStore, StatusHoleStore, DEFAULT_HOLE_STORE_CAPACITY};
pub use msg::{SaraData, SaraMetadata, SaraRequest, SaraStatus, STATUS_INLINE_HOLES};
pub use ranges::RangeSet;
pub use rate::{FixedRate, RateController, StatusInfo};
pub use receiver::SaratogaReceiver;
pub use sender::SaratogaSender;
pub use wire::{ChecksumType, DescriptorSize, RequestType, TimestampType};

/// File size announced by an endless bulk sender
/// ([`crate::Sender::set_unlimited`]): the largest 64-bit offset, so the
/// METADATA uses the 64-bit descriptor and the transfer never ends within
/// any experiment (2^64 - 1 bytes at 10 Gb/s is ~470 years).
pub const UNLIMITED_SIZE: u64 = u64::MAX;

/// Why an endpoint gave up a transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// Nothing was heard from the peer for
    /// [`SaratogaConfig::inactivity_timeout`] (§3: a session with no
    /// activity is abandoned).
    InactivityTimeout {
        /// When the endpoint last heard a valid frame of the session.
        last_heard: Instant,
    },
    /// The peer sent a STATUS with a non-zero error code (§4.5).
    PeerError(u8),
    /// STATUS frames kept arriving (or not), but none acknowledged new
    /// data for the progress timeout ([`SaratogaConfig::progress_timeout`]).
    NoProgress {
        /// How long nothing new was acknowledged.
        stalled: Duration,
        /// Bytes acknowledged from offset 0 (the progress indicator).
        acked: u64,
    },
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::InactivityTimeout { last_heard } => {
                write!(f, "inactivity timeout: nothing heard since {last_heard}")
            }
            Failure::PeerError(c) => write!(f, "peer reported STATUS error code {c}"),
            Failure::NoProgress { stalled, acked } => write!(
                f,
                "no progress: the peer acknowledged nothing new for {:.1} s ({acked} bytes acknowledged)",
                stalled.as_secs_f64()
            ),
        }
    }
}

/// Parameters of a Saratoga endpoint. The draft names the timers but
/// leaves their values to implementations; the defaults are ours, cited.
#[derive(Clone, Debug, PartialEq)]
pub struct SaratogaConfig {
    /// Session id (§4: chosen by the initiator; a GET responder takes the
    /// requester's).
    pub session: u32,
    /// Payload bytes per DATA frame (§4.4: a DATA frame should fit the
    /// path MTU; 1024 is the reference implementation's buffer size).
    pub payload: u32,
    /// Bytes below Saratoga on the wire (IPv4 + UDP, 28), counted by the
    /// pacer so that a fixed rate is a wire rate.
    pub lower_header_bytes: u32,
    /// Put a timestamp (§4.4, bit 12) in every DATA that requests a
    /// STATUS, so the STATUS echo gives an RTT sample and lets the sender
    /// tell a STATUS that predates its latest retransmissions.
    pub timestamps: bool,
    /// The timestamp type written (§4.4; byte 0 of the field). Default
    /// POSIX 64+32 (seconds and nanoseconds): every peer tried decodes it
    /// (the Go decoder refuses type 0, local interpretation) and it gives
    /// nanosecond RTT samples. With a seconds-only type no RTT is sampled.
    pub timestamp_type: wire::TimestampType,
    /// POSIX time in nanoseconds at `Instant(0)`, for the POSIX timestamp
    /// types: the runtime sets it from its wall clock; 0 (1970) in the
    /// simulator, where only our own receiver reads the field.
    pub unix_offset_ns: u64,
    /// Request a STATUS (DATA bit 15) at least every this many DATA frames
    /// (§4.4 leaves the frequency open; the reference implementation's
    /// `datacounter` is 100). 0 (the default) disables the count rule: a
    /// count ties the STATUS rate to the data rate, and on an asymmetric
    /// path (`dmc`: 100 Mb/s down, 38.4 kb/s up) every 100 frames of 1440
    /// bytes at 100 Mb/s is 87 STATUS a second, 104 % of the uplink: they
    /// queue there and the last one, which confirms the file, waits behind
    /// the queue (issue 29: 89 % of capacity instead of 96 %).
    pub status_every_frames: u32,
    /// Request a STATUS this many times per smoothed RTT (0: off; default
    /// 1). Paper 000 §5 asks for one STATUS per RTT and finds more only
    /// costs feedback bandwidth; §4.4 of the draft leaves the frequency to
    /// the sender. Per RTT also bounds the reverse path's load by itself:
    /// the RTT the sender measures contains any queue of STATUS frames on
    /// the reverse path, so if they arrive faster than it drains, the RTT
    /// grows and the requests slow down with it (about one STATUS queued
    /// at most). Before the first RTT sample (or with no timestamps, or a
    /// seconds-only timestamp type) only the other rules apply.
    pub status_per_rtt: f64,
    /// The per-RTT rule waits at least this many DATA frames between
    /// requests (default 100, the reference implementation's
    /// `datacounter`; 0: no floor). On a path whose RTT is shorter than
    /// the time of a few frames (a LAN, loopback) per RTT would ask in
    /// nearly every frame, a STATUS per DATA for the receiver to build and
    /// the sender to process; with the floor such a path is paced as
    /// before issue 29, and a long or narrow one (`dmc`: about 290 frames
    /// per RTT) by its RTT.
    pub status_min_frames: u32,
    /// The reverse path's rate in bits/s, if known (the sender cannot
    /// measure it): with it, STATUS requests are spaced so that the STATUS
    /// frames they draw use at most [`SaratogaConfig::status_share`] of it
    /// (every rule but end of data and the end of a retransmission round,
    /// which the transfer needs to finish). `None` (the default): no cap
    /// but the per-RTT rule's own.
    pub reverse_rate_bps: Option<u64>,
    /// The share of [`SaratogaConfig::reverse_rate_bps`] STATUS frames may
    /// use (default 0.5, leaving the rest to other traffic and to STATUS
    /// frames longer than the estimate, which counts two holes).
    pub status_share: f64,
    /// Request a STATUS on the last frame of every retransmission round
    /// even while new data remains to be sent (true, the default), or only
    /// when none does (false). §4.4 leaves when to set bit 15 to the
    /// sender. With nothing new to send the round's end is the only
    /// request and is always made. Off, a `dmc` STFRC PUT (100 MB) took
    /// 12.4 s instead of 13.4 s before [`Self::defer_status_to_round_end`]
    /// and STFRC's `request_timeout_rtts`; with them, 9.8 s on, 10.0 s off
    /// (seeds 1-10 but 8), and on a symmetric path the round-end requests
    /// repair faster: kept on.
    pub round_end_status: bool,
    /// A STATUS request that falls due while a retransmission round is
    /// under way goes on the round's last frame (default true). §4.5: a
    /// STATUS lists the holes from the progress indicator up; asked for on
    /// the round's first frame, it answers before the rest of the round
    /// arrives and spends its list on holes already re-sent (the sender
    /// skips them: the echoed timestamp says they are in flight), so a
    /// burst of holes was repaired at half a list per round trip. A
    /// request waits at most one smoothed RTT for the round to end (at a
    /// few packets per RTT a round of 64 holes lasts many).
    pub defer_status_to_round_end: bool,
    /// STATUS request interval: request a STATUS at least this often while
    /// sending, and, when nothing is left to send but the transfer is not
    /// acknowledged, re-send the last DATA with a STATUS request this long
    /// after the last request (§4.4, §4.5; default 1 s).
    pub status_request_interval: Duration,
    /// Inactivity timeout: give up after hearing nothing valid from the
    /// peer this long (§3 leaves the value open; default 60 s, the order
    /// of the reference implementation's 58 s transfer timeout).
    pub inactivity_timeout: Duration,
    /// Progress timeout (T): the sender gives up when, with data
    /// outstanding, no STATUS has acknowledged anything new (a higher
    /// progress indicator or in-response-to offset) for this long, or
    /// [`SaratogaConfig::progress_timeout_rtts`] smoothed RTTs if longer.
    /// The inactivity timeout alone does not end a transfer with a peer
    /// whose STATUS keeps arriving but never advances (issue 29: the Go
    /// encoder's STATUS reads as progress 0 for ever). Default 60 s; zero
    /// leaves only the RTT rule.
    pub progress_timeout: Duration,
    /// Progress timeout in smoothed RTTs (N; 0: only the time rule).
    /// Default 16: on a path whose RTT exceeds 3.75 s this lengthens T.
    pub progress_timeout_rtts: u32,
    /// The receiver's progress timeout: it gives up
    /// ([`Failure::NoProgress`]) when, once the transfer has started, no
    /// DATA has brought a byte it did not have for this long. The
    /// inactivity timeout is reset by every valid frame, so a sender that
    /// keeps re-sending what is already there (a probe that never gets
    /// our STATUS, a peer that misreads it) kept a receiver alive for
    /// ever. Zero (the default) turns it off: the simulator's STFRC may
    /// legitimately slow to one frame per 64 s (RFC 5348 §4.4, t_mbi);
    /// the runtime sets it to its progress timeout.
    pub receiver_progress_timeout: Duration,
    /// Receiver: the most holes one STATUS lists (§4.5: the hole pairs
    /// run to the end of the frame, which should fit the path MTU; bit 14
    /// says there are more). Default 64, what the real runtime's frame
    /// carries (`satcc-net`'s `MAX_WIRE_HOLES`: 64 pairs of 64-bit offsets
    /// are 1 024 bytes, within any path MTU). It takes effect where the
    /// list can leave the message ([`SaratogaReceiver::set_hole_store`],
    /// the simulator); without a store a message holds
    /// [`STATUS_INLINE_HOLES`].
    pub status_max_holes: usize,
    /// Receiver: the most disjoint received ranges kept. A DATA frame that
    /// would need another is dropped (and re-sent later as a hole), so a
    /// peer cannot grow the receiver's memory without bound.
    pub max_ranges: usize,
    /// Sender: the most hole ranges queued for retransmission.
    pub max_retx_ranges: usize,
    /// Checksum announced in METADATA (§4.3). The simulator carries no
    /// payload; a runtime computes it over the file.
    pub checksum: wire::Checksum,
    /// GET requester: REQUEST retransmission interval until METADATA or
    /// DATA arrives (§4.2; default 1 s).
    pub request_retry: Duration,
    /// Receiver: send a voluntary STATUS (bit 15) when the file becomes
    /// complete, so the sender learns it without waiting for a request.
    pub voluntary_status_on_complete: bool,
}

impl Default for SaratogaConfig {
    fn default() -> Self {
        SaratogaConfig {
            session: 1,
            payload: 1024,
            lower_header_bytes: 28,
            timestamps: true,
            timestamp_type: wire::TimestampType::Posix64_32,
            unix_offset_ns: 0,
            status_every_frames: 0,
            status_per_rtt: 1.0,
            status_min_frames: 100,
            reverse_rate_bps: None,
            status_share: 0.5,
            round_end_status: true,
            defer_status_to_round_end: true,
            status_request_interval: Duration::from_secs(1),
            inactivity_timeout: Duration::from_secs(60),
            progress_timeout: Duration::from_secs(60),
            progress_timeout_rtts: 16,
            receiver_progress_timeout: Duration::ZERO,
            status_max_holes: 64,
            max_ranges: 4096,
            max_retx_ranges: 4096,
            checksum: wire::Checksum::None,
            request_retry: Duration::from_secs(1),
            voluntary_status_on_complete: true,
        }
    }
}
