//! TCP's sender and receiver behind the endpoint interface.

use super::{SenderEvent, TcpReceiver, TcpSender};
use crate::endpoint::{DummyStats, Endpoint, Event, Message, Sender, Stats, Transmit};
use crate::time::Instant;

impl Endpoint for TcpSender {
    fn handle_input(&mut self, now: Instant, message: &Message) {
        match message {
            Message::TcpAck(a) => TcpSender::handle_input(self, now, a),
            _ => self.stats.foreign += 1,
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        TcpSender::handle_timeout(self, now);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        TcpSender::poll_transmit(self, now).map(|d| Transmit {
            message: Message::TcpData(d),
            payload_len: d.len,
            low_priority: d.dummy,
            overhead: d.dummy,
        })
    }

    fn poll_timeout(&self) -> Option<Instant> {
        TcpSender::poll_timeout(self)
    }

    fn poll_event(&mut self) -> Option<Event> {
        // Progress is reported from the counters when asked, so the ACK
        // path pays nothing for an event nobody reads.
        let acked = self.stats.acked_bytes;
        if acked > self.reported_acked {
            let d = acked - self.reported_acked;
            self.reported_acked = acked;
            return Some(Event::Acked(d));
        }
        let losses = self.stats.fast_retransmits + self.stats.timeouts;
        if losses > self.reported_losses {
            self.reported_losses += 1;
            return Some(Event::LossEvent);
        }
        TcpSender::poll_event(self).map(|e| match e {
            SenderEvent::AllAcked => Event::AllAcked,
        })
    }

    fn stats(&self) -> Stats {
        let s = TcpSender::stats(self);
        Stats {
            cwnd: Some(s.cwnd),
            srtt: s.srtt,
            acked_bytes: s.acked_bytes,
            retransmits: s.retransmits,
            timeouts: s.timeouts,
            rtt_samples: s.rtt_samples,
            sum_rtt: s.sum_rtt,
            dummy: self.config().peach.is_some().then_some(DummyStats {
                acks: s.dummy_acks,
                fallback: s.peach_fallback,
            }),
            foreign: s.foreign,
            ..Stats::default()
        }
    }
}

impl Sender for TcpSender {
    fn offer(&mut self, _now: Instant, bytes: u64) {
        self.push_data(bytes);
    }

    fn set_unlimited(&mut self, _now: Instant) {
        TcpSender::set_unlimited(self);
    }

    fn close(&mut self, _now: Instant) {
        TcpSender::close(self);
    }
}

impl Endpoint for TcpReceiver {
    fn handle_input(&mut self, now: Instant, message: &Message) {
        match message {
            Message::TcpData(d) => TcpReceiver::handle_input(self, now, d),
            _ => self.stats.foreign += 1,
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        TcpReceiver::handle_timeout(self, now);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        TcpReceiver::poll_transmit(self, now).map(|a| Transmit {
            message: Message::TcpAck(a),
            payload_len: 0,
            low_priority: a.dummy_echo,
            overhead: false,
        })
    }

    fn poll_timeout(&self) -> Option<Instant> {
        TcpReceiver::poll_timeout(self)
    }

    fn stats(&self) -> Stats {
        Stats {
            delivered_bytes: self.stats.delivered_bytes,
            foreign: self.stats.foreign,
            ..Stats::default()
        }
    }
}
