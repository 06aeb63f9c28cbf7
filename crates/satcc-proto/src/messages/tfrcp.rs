//! The typed TFRCP packets (paper 004 §II-B) exchanged by
//! [`crate::tfrcp::TfrcpSender`] and [`crate::tfrcp::TfrcpReceiver`],
//! re-exported as `crate::tfrcp::{TfrcpData, TfrcpAck}`. The compact codec
//! (`crate::wire::compact`) puts them on a real network.

use crate::time::Instant;

/// A TFRCP data packet (paper 004 §II-B: sequence number and send
/// timestamp).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TfrcpData {
    /// Sequence number, one per packet.
    pub seq: u64,
    /// Payload bytes.
    pub len: u32,
    /// Send time.
    pub ts: Instant,
}

/// A TFRCP ACK (paper 004 §II-B): the sequence number and timestamp of the
/// packet that triggered it, and the reception vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TfrcpAck {
    /// k: the data packet that triggered this ACK.
    pub seq: u64,
    /// Its send time (echoed).
    pub ts_echo: Instant,
    /// Bit i set: packet k-i was received, i = 0..7 (bit 0 is k itself).
    pub vector: u8,
}
