//! TFRCP's sender and receiver behind the endpoint interface.

use super::{TfrcpReceiver, TfrcpSender};
use crate::endpoint::{Endpoint, Message, RateStats, Sender, Stats, Transmit};
use crate::time::Instant;

impl Endpoint for TfrcpSender {
    fn handle_input(&mut self, now: Instant, message: &Message) {
        match message {
            Message::TfrcpAck(a) => TfrcpSender::handle_input(self, now, a),
            _ => self.stats.foreign += 1,
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        TfrcpSender::handle_timeout(self, now);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        TfrcpSender::poll_transmit(self, now).map(|d| Transmit {
            message: Message::TfrcpData(d),
            payload_len: d.len,
            low_priority: false,
            overhead: false,
        })
    }

    fn poll_timeout(&self) -> Option<Instant> {
        TfrcpSender::poll_timeout(self)
    }

    fn stats(&self) -> Stats {
        let s = TfrcpSender::stats(self);
        let bits = f64::from(self.config().s) * 8.0;
        Stats {
            srtt: s.rtt,
            rtt_samples: s.rtt_samples,
            sum_rtt: s.sum_rtt,
            rate: Some(RateStats {
                x_bps: s.rate_pps * bits,
                // TFRCP's receiver reports no rate (paper 004 §II-B).
                x_recv_bps: f64::NAN,
                p: s.p,
            }),
            foreign: s.foreign,
            ..Stats::default()
        }
    }
}

impl Sender for TfrcpSender {
    fn offer(&mut self, _now: Instant, bytes: u64) {
        self.push_data(bytes);
    }

    fn set_unlimited(&mut self, _now: Instant) {
        TfrcpSender::set_unlimited(self);
    }

    fn close(&mut self, _now: Instant) {
        TfrcpSender::close(self);
    }
}

impl Endpoint for TfrcpReceiver {
    fn handle_input(&mut self, now: Instant, message: &Message) {
        match message {
            Message::TfrcpData(d) => TfrcpReceiver::handle_input(self, now, d),
            _ => self.stats.foreign += 1,
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        TfrcpReceiver::handle_timeout(self, now);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        TfrcpReceiver::poll_transmit(self, now).map(|a| Transmit {
            message: Message::TfrcpAck(a),
            payload_len: 0,
            low_priority: false,
            overhead: false,
        })
    }

    fn poll_timeout(&self) -> Option<Instant> {
        TfrcpReceiver::poll_timeout(self)
    }

    fn stats(&self) -> Stats {
        let s = TfrcpReceiver::stats(self);
        Stats {
            delivered_bytes: s.delivered_bytes,
            foreign: s.foreign,
            ..Stats::default()
        }
    }
}
