//! TCP sender (STUB: API only; implementation pending).

use super::segment::{TcpAck, TcpData};
use crate::time::{Duration, Instant};

/// Window algorithm of a [`TcpSender`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Reno (RFC 5681): fast retransmit and fast recovery, leaving recovery
    /// on the first new ACK.
    Reno,
    /// NewReno (RFC 6582): partial ACKs keep recovery going.
    NewReno,
    /// SACK-based loss recovery (RFC 6675 scoreboard and pipe).
    Sack,
}

/// Sender parameters.
#[derive(Clone, Debug)]
pub struct SenderConfig {
    /// Window algorithm.
    pub variant: Variant,
    /// Payload bytes of a full segment.
    pub mss: u32,
    /// Initial window in segments.
    pub initial_window: u32,
    /// Initial slow-start threshold in segments.
    pub initial_ssthresh: u32,
    /// Cap on cwnd in segments (the sender's own buffer).
    pub max_window: u32,
    /// Duplicate ACKs that trigger fast retransmit.
    pub dupack_threshold: u32,
    /// RFC 6298 lower bound on RTO.
    pub min_rto: Duration,
    /// Upper bound on RTO.
    pub max_rto: Duration,
    /// RTO before the first RTT sample (RFC 6298 §2.1).
    pub initial_rto: Duration,
    /// Clock granularity G of RFC 6298 §2.
    pub clock_granularity: Duration,
}

impl Default for SenderConfig {
    fn default() -> Self {
        SenderConfig {
            variant: Variant::NewReno,
            mss: 1000,
            initial_window: 4,
            initial_ssthresh: u32::MAX,
            max_window: u32::MAX,
            dupack_threshold: 3,
            min_rto: Duration::from_secs(1),
            max_rto: Duration::from_secs(60),
            initial_rto: Duration::from_secs(1),
            clock_granularity: Duration::from_millis(1),
        }
    }
}

/// What the application learns from the sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SenderEvent {
    /// Every byte the application gave has been acknowledged.
    AllAcked,
}

/// Counters and current state, for monitoring.
#[derive(Clone, Copy, Debug, Default)]
pub struct SenderStats {
    /// Congestion window in segments.
    pub cwnd: f64,
    /// Slow-start threshold in segments.
    pub ssthresh: f64,
    /// Smoothed RTT, if measured.
    pub srtt: Option<Duration>,
    /// Current retransmission timeout.
    pub rto: Duration,
    /// Data segments sent, retransmissions included.
    pub segments_sent: u64,
    /// Retransmitted segments.
    pub retransmits: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Fast retransmits (entries into loss recovery).
    pub fast_retransmits: u64,
    /// Payload bytes cumulatively acknowledged.
    pub acked_bytes: u64,
}

/// A one-way TCP sender.
#[derive(Debug)]
pub struct TcpSender {
    cfg: SenderConfig,
}

impl TcpSender {
    /// A sender at time `now` with nothing to send yet.
    pub fn new(cfg: SenderConfig, _now: Instant) -> Self {
        TcpSender { cfg }
    }
    /// The application hands over `bytes` more bytes.
    pub fn push_data(&mut self, _bytes: u64) {}
    /// The application always has data (bulk transfer).
    pub fn set_unlimited(&mut self) {}
    /// An ACK arrived.
    pub fn handle_input(&mut self, _now: Instant, _ack: &TcpAck) {}
    /// The time asked for by [`Self::poll_timeout`] has come.
    pub fn handle_timeout(&mut self, _now: Instant) {}
    /// The next segment to send now, if the window allows one.
    pub fn poll_transmit(&mut self, _now: Instant) -> Option<TcpData> {
        None
    }
    /// When the sender next needs [`Self::handle_timeout`].
    pub fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    /// The next event for the application.
    pub fn poll_event(&mut self) -> Option<SenderEvent> {
        None
    }
    /// Current counters.
    pub fn stats(&self) -> SenderStats {
        SenderStats::default()
    }
    /// Configuration.
    pub fn config(&self) -> &SenderConfig {
        &self.cfg
    }
}
