//! TFRC (RFC 5348) sender and receiver, and the DCCP CCID3 feedback
//! policies (standard, and the dynamic NFb of paper 001).
//!
//! STUB: API only; implementation pending.

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

/// When the receiver sends feedback (the CCID3 profile's knob).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FeedbackPolicy {
    /// Once per RTT (RFC 5348 §6.2; CCID3 as RFC 4342 specifies).
    Standard,
    /// Paper 001: every O = RTT/NFb with
    /// NFb = min(max(round(RTT/rtt_ref), 1), RTT*X_recv/s).
    Dynamic {
        /// RTTref.
        rtt_ref: Duration,
    },
}

/// Sender parameters.
#[derive(Clone, Debug)]
pub struct SenderConfig {
    /// Segment size s in bytes.
    pub s: u32,
    /// Maximum backoff interval t_mbi (RFC 5348 §4.3: 64 s).
    pub t_mbi: Duration,
    /// Oscillation damping (RFC 5348 §4.5).
    pub oscillation_damping: bool,
    /// The b of the throughput equation (packets acknowledged per ACK).
    pub b: f64,
}

impl Default for SenderConfig {
    fn default() -> Self {
        SenderConfig {
            s: 1000,
            t_mbi: Duration::from_secs(64),
            oscillation_damping: false,
            b: 1.0,
        }
    }
}

/// Receiver parameters.
#[derive(Clone, Debug)]
pub struct ReceiverConfig {
    /// Segment size s in bytes.
    pub s: u32,
    /// Feedback policy.
    pub policy: FeedbackPolicy,
    /// History discounting (RFC 5348 §5.5).
    pub history_discounting: bool,
    /// Packets after a hole that declare it lost (RFC 5348 §5.1).
    pub ndupack: u32,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        ReceiverConfig {
            s: 1000,
            policy: FeedbackPolicy::Standard,
            history_discounting: false,
            ndupack: 3,
        }
    }
}

/// Sender state for monitoring.
#[derive(Clone, Copy, Debug, Default)]
pub struct TfrcSenderStats {
    /// Allowed sending rate X, bytes per second.
    pub x: f64,
    /// Last reported receive rate, bytes per second.
    pub x_recv: f64,
    /// Last reported loss event rate.
    pub p: f64,
    /// RTT estimate R.
    pub rtt: Option<Duration>,
    /// Data packets sent.
    pub packets_sent: u64,
    /// Feedback packets received.
    pub feedback_received: u64,
    /// No-feedback timer expiries.
    pub nofeedback_expiries: u64,
}

/// Receiver counters.
#[derive(Clone, Copy, Debug, Default)]
pub struct TfrcReceiverStats {
    /// Payload bytes of distinct packets received.
    pub delivered_bytes: u64,
    /// Distinct data packets received.
    pub packets_received: u64,
    /// Feedback packets sent.
    pub feedback_sent: u64,
    /// Loss events detected.
    pub loss_events: u64,
    /// Packets detected lost.
    pub packets_lost: u64,
    /// Current loss event rate.
    pub p: f64,
}

/// RFC 5348 sender.
#[derive(Debug)]
pub struct TfrcSender {
    cfg: SenderConfig,
}

impl TfrcSender {
    /// A sender starting at `now`.
    pub fn new(cfg: SenderConfig, _now: Instant) -> Self {
        TfrcSender { cfg }
    }
    /// Bulk data: always something to send.
    pub fn set_unlimited(&mut self) {}
    /// A feedback packet arrived.
    pub fn handle_input(&mut self, _now: Instant, _fb: &TfrcFeedback) {}
    /// The time asked for has come.
    pub fn handle_timeout(&mut self, _now: Instant) {}
    /// The next packet, if its send time has come.
    pub fn poll_transmit(&mut self, _now: Instant) -> Option<TfrcData> {
        None
    }
    /// When to wake next (next send time or no-feedback timer).
    pub fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    /// Monitoring.
    pub fn stats(&self) -> TfrcSenderStats {
        TfrcSenderStats::default()
    }
    /// Configuration.
    pub fn config(&self) -> &SenderConfig {
        &self.cfg
    }
}

/// RFC 5348 receiver with a CCID3 feedback policy.
#[derive(Debug)]
pub struct TfrcReceiver {
    cfg: ReceiverConfig,
}

impl TfrcReceiver {
    /// A receiver.
    pub fn new(cfg: ReceiverConfig) -> Self {
        TfrcReceiver { cfg }
    }
    /// A data packet arrived.
    pub fn handle_input(&mut self, _now: Instant, _d: &TfrcData) {}
    /// The time asked for has come.
    pub fn handle_timeout(&mut self, _now: Instant) {}
    /// The next feedback packet, if one is due.
    pub fn poll_transmit(&mut self, _now: Instant) -> Option<TfrcFeedback> {
        None
    }
    /// When the feedback timer expires.
    pub fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    /// Counters.
    pub fn stats(&self) -> TfrcReceiverStats {
        TfrcReceiverStats::default()
    }
    /// Configuration.
    pub fn config(&self) -> &ReceiverConfig {
        &self.cfg
    }
}
