//! Constant-bit-rate traffic: an unresponsive source and the sink that
//! counts what reaches it. Background load for the papers' experiments
//! (paper 004 §III-C.4's Pareto ON/OFF sources are these, switched by the
//! driver's ON/OFF application).

use crate::endpoint::{Endpoint, Message, Sender, Stats, Transmit};
use crate::time::{Duration, Instant};

/// A constant-bit-rate source's parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CbrConfig {
    /// Time between datagrams (wire size over the rate).
    pub interval: Duration,
    /// Payload bytes per datagram.
    pub payload: u32,
    /// Mark every datagram low priority.
    pub low_priority: bool,
}

impl CbrConfig {
    /// A source sending `payload`-byte datagrams of `wire_bytes` on the
    /// wire (headers included) at `rate_bps`.
    pub fn new(payload: u32, wire_bytes: u32, rate_bps: u64, low_priority: bool) -> CbrConfig {
        CbrConfig {
            interval: Duration::transmission(u64::from(wire_bytes), rate_bps),
            payload,
            low_priority,
        }
    }
}

/// A constant-bit-rate source: one datagram every `interval` while on.
#[derive(Debug)]
pub struct CbrSource {
    cfg: CbrConfig,
    next: Instant,
    seq: u64,
    on: bool,
    stats: Stats,
}

impl CbrSource {
    /// A source that is off until the application starts it.
    pub fn new(cfg: CbrConfig, now: Instant) -> CbrSource {
        CbrSource {
            cfg,
            next: now,
            seq: 0,
            on: false,
            stats: Stats::default(),
        }
    }
}

impl Endpoint for CbrSource {
    fn handle_input(&mut self, _now: Instant, _message: &Message) {
        // Nothing comes back to an unresponsive source.
        self.stats.foreign += 1;
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        if !self.on || self.next > now {
            return None;
        }
        let message = Message::Datagram {
            seq: self.seq,
            len: self.cfg.payload,
        };
        self.seq += 1;
        self.next += self.cfg.interval;
        Some(Transmit {
            message,
            payload_len: self.cfg.payload,
            low_priority: self.cfg.low_priority,
            overhead: false,
        })
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.on.then_some(self.next)
    }

    fn stats(&self) -> Stats {
        self.stats
    }
}

impl Sender for CbrSource {
    /// A constant-bit-rate source generates its own traffic: offered bytes
    /// are not metered (ns-2's CBR and Pareto sources over UDP behave so).
    fn offer(&mut self, _now: Instant, _bytes: u64) {}

    fn set_unlimited(&mut self, now: Instant) {
        self.on = true;
        self.next = now;
    }

    fn set_paused(&mut self, now: Instant, paused: bool) {
        self.on = !paused;
        // A source resuming after a pause does not make up for it.
        self.next = self.next.max(now);
    }

    fn close(&mut self, now: Instant) {
        self.set_paused(now, true);
    }
}

/// A receiver that counts the payload of the datagrams reaching it.
#[derive(Debug, Default)]
pub struct Sink {
    stats: Stats,
}

impl Sink {
    /// An empty sink.
    pub fn new() -> Sink {
        Sink::default()
    }
}

impl Endpoint for Sink {
    fn handle_input(&mut self, _now: Instant, message: &Message) {
        match message {
            Message::Datagram { len, .. } => self.stats.delivered_bytes += u64::from(*len),
            _ => self.stats.foreign += 1,
        }
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    fn poll_transmit(&mut self, _now: Instant) -> Option<Transmit> {
        None
    }

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    fn stats(&self) -> Stats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_at_its_rate_only_while_on() {
        // 1000-byte datagrams at 8 Mb/s: one per millisecond.
        let mut s = CbrSource::new(CbrConfig::new(972, 1000, 8_000_000, false), Instant::ZERO);
        assert!(
            s.poll_transmit(Instant::ZERO).is_none(),
            "off until started"
        );
        assert_eq!(s.poll_timeout(), None);
        s.set_unlimited(Instant::ZERO);
        let mut sent = 0;
        let mut now = Instant::ZERO;
        while now < Instant::ZERO + Duration::from_millis(10) {
            while let Some(t) = s.poll_transmit(now) {
                assert_eq!(t.payload_len, 972);
                sent += 1;
            }
            now = s.poll_timeout().expect("on");
        }
        assert_eq!(sent, 10);
        s.set_paused(now, true);
        assert!(s.poll_transmit(now + Duration::from_secs(1)).is_none());
        s.set_paused(now + Duration::from_secs(1), false);
        assert_eq!(s.poll_timeout(), Some(now + Duration::from_secs(1)));
    }

    #[test]
    fn sink_counts_datagram_payload_and_ignores_the_rest() {
        let mut k = Sink::new();
        k.handle_input(Instant::ZERO, &Message::Datagram { seq: 0, len: 500 });
        k.handle_input(Instant::ZERO, &Message::Datagram { seq: 1, len: 20 });
        let ack = crate::tfrcp::TfrcpAck {
            seq: 0,
            ts_echo: Instant::ZERO,
            vector: 1,
        };
        k.handle_input(Instant::ZERO, &Message::TfrcpAck(ack));
        assert_eq!(k.stats().delivered_bytes, 520);
        assert_eq!(k.stats().foreign, 1);
    }
}
