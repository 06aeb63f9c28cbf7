//! The typed TFRC packets (RFC 5348 §3.2) exchanged by
//! [`crate::tfrc::TfrcSender`] and [`crate::tfrc::TfrcReceiver`] (STFRC's
//! sender reads the feedback too), re-exported as
//! `crate::tfrc::{TfrcData, TfrcFeedback}`. The CCID3 codec
//! (`crate::wire::ccid3`) turns them into DCCP packets.

use crate::time::{Duration, Instant};

/// A TFRC data packet (RFC 5348 §3.2.1: sequence number, timestamp, the
/// sender's RTT estimate).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TfrcData {
    /// Sequence number, one per packet.
    pub seq: u64,
    /// Payload bytes (the segment size s for full packets).
    pub len: u32,
    /// Send time.
    pub ts: Instant,
    /// The sender's current RTT estimate, if it has one.
    pub rtt: Option<Duration>,
    /// The sender's timeout value t_RTO for the equation, carried by the
    /// `ns2` profile only (ns-2 2.35's data header field `tzero`, set in
    /// `TfrcAgent::sendpkt`, tcp/tfrc.cc: `tfrch->tzero=tzero_`), for the
    /// receiver's first loss interval (`TfrcSinkAgent::adjust_history`,
    /// tcp/tfrc-sink.cc). `None` from an RFC 5348 sender (the receiver
    /// then uses t_RTO = 4R, §3.1); not on the CCID3 wire.
    pub t_rto: Option<Duration>,
}

/// A TFRC feedback packet (RFC 5348 §3.2.2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TfrcFeedback {
    /// Timestamp of the last data packet received.
    pub ts_echo: Instant,
    /// Time between that packet's arrival and this feedback.
    pub t_delay: Duration,
    /// Rate at which the receiver received data over the last
    /// observation interval, bytes per second.
    pub x_recv: f64,
    /// Loss event rate.
    pub p: f64,
}
