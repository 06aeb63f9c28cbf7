//! The typed TCP segments exchanged by [`crate::tcp::TcpSender`] and
//! [`crate::tcp::TcpReceiver`], re-exported as `crate::tcp::{TcpData,
//! TcpAck, SackBlock, MAX_SACK_BLOCKS}`. The simulator carries these values
//! directly; the pcap writer synthesises real headers from them.

use crate::time::Instant;

/// At most this many SACK blocks ride on one ACK (RFC 2018 §3: three fit
/// beside the timestamp option).
pub const MAX_SACK_BLOCKS: usize = 3;

/// A SACK block: segments `start..end` (end exclusive) have arrived.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlock {
    /// First segment number in the block.
    pub start: u64,
    /// One past the last segment number in the block.
    pub end: u64,
}

/// A data segment, sender to receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpData {
    /// Segment number.
    pub seq: u64,
    /// Payload bytes (at most the MSS).
    pub len: u32,
    /// Send time, echoed by the receiver (RFC 7323 timestamps).
    pub ts: Instant,
    /// This transmission is a retransmission.
    pub retransmit: bool,
    /// A low-priority dummy segment carrying no new data (TCP-Peach,
    /// paper 002). Routers may drop it first; receivers that understand it
    /// echo the mark.
    pub dummy: bool,
}

/// An acknowledgement, receiver to sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpAck {
    /// Cumulative ACK: the next segment number expected.
    pub ack: u64,
    /// Advertised receive window in segments. Routers (REFWA) may lower it.
    pub wnd: u32,
    /// Timestamp echoed from the segment that triggered this ACK.
    pub ts_echo: Instant,
    /// SACK blocks, most recent first; only the first `sack_len` are valid.
    pub sack: [SackBlock; MAX_SACK_BLOCKS],
    /// Number of valid entries in `sack`.
    pub sack_len: u8,
    /// This ACKs a dummy segment (TCP-Peach echo of the mark).
    pub dummy_echo: bool,
}

impl TcpAck {
    /// The valid SACK blocks.
    pub fn sack_blocks(&self) -> &[SackBlock] {
        &self.sack[..self.sack_len as usize]
    }
}
