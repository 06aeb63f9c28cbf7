//! TCP receiver (STUB: API only; implementation pending).

use super::segment::{TcpAck, TcpData};
use crate::time::{Duration, Instant};

/// Receiver parameters.
#[derive(Clone, Debug)]
pub struct ReceiverConfig {
    /// Advertised window in segments.
    pub rwnd: u32,
    /// Generate SACK blocks.
    pub sack: bool,
    /// Delay ACKs (RFC 5681 §4.2: at least every second full segment).
    pub delayed_ack: bool,
    /// Delayed-ACK timer.
    pub delack_timeout: Duration,
    /// Echo the TCP-Peach dummy mark (a plain receiver does not).
    pub echo_dummy: bool,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        ReceiverConfig {
            rwnd: 10_000,
            sack: true,
            delayed_ack: false,
            delack_timeout: Duration::from_millis(100),
            echo_dummy: true,
        }
    }
}

/// Receiver counters.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReceiverStats {
    /// Payload bytes delivered in order to the application.
    pub delivered_bytes: u64,
    /// Data segments received (duplicates included).
    pub segments_received: u64,
    /// Segments that had already arrived.
    pub duplicates: u64,
    /// ACKs generated.
    pub acks_sent: u64,
    /// Dummy segments received.
    pub dummies_received: u64,
}

/// A one-way TCP receiver.
#[derive(Debug)]
pub struct TcpReceiver {
    cfg: ReceiverConfig,
}

impl TcpReceiver {
    /// A receiver expecting segment 0.
    pub fn new(cfg: ReceiverConfig) -> Self {
        TcpReceiver { cfg }
    }
    /// A data segment arrived.
    pub fn handle_input(&mut self, _now: Instant, _seg: &TcpData) {}
    /// The delayed-ACK timer fired.
    pub fn handle_timeout(&mut self, _now: Instant) {}
    /// The next ACK to send.
    pub fn poll_transmit(&mut self, _now: Instant) -> Option<TcpAck> {
        None
    }
    /// When the delayed-ACK timer expires.
    pub fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    /// Counters.
    pub fn stats(&self) -> ReceiverStats {
        ReceiverStats::default()
    }
    /// Configuration.
    pub fn config(&self) -> &ReceiverConfig {
        &self.cfg
    }
}
