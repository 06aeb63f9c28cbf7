//! TFRC's sender and receiver behind the endpoint interface.

use super::{TfrcReceiver, TfrcSender};
use crate::endpoint::{Endpoint, Event, Message, RateStats, Sender, Stats, Transmit};
use crate::time::Instant;

impl Endpoint for TfrcSender {
    fn handle_input(&mut self, now: Instant, message: &Message) {
        match message {
            Message::TfrcFeedback(fb) => TfrcSender::handle_input(self, now, fb),
            _ => self.source_mut().stats.foreign += 1,
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        TfrcSender::handle_timeout(self, now);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        TfrcSender::poll_transmit(self, now).map(|d| Transmit {
            message: Message::TfrcData(d),
            payload_len: d.len,
            low_priority: false,
            overhead: false,
        })
    }

    fn poll_timeout(&self) -> Option<Instant> {
        TfrcSender::poll_timeout(self)
    }

    fn poll_event(&mut self) -> Option<Event> {
        // RFC 5348 §4.3: slow start lasts until the first feedback that
        // reports a loss event (p > 0); only feedback changes p, and the
        // driver drains events right after handing feedback in.
        if !self.source().ss_exit_reported && self.p() > 0.0 {
            self.source_mut().ss_exit_reported = true;
            return Some(Event::SlowStartExit);
        }
        None
    }

    fn stats(&self) -> Stats {
        let s = TfrcSender::stats(self);
        Stats {
            srtt: s.rtt,
            rtt_samples: s.rtt_samples,
            sum_rtt: s.sum_rtt,
            rate: Some(RateStats {
                x_bps: s.x * 8.0,
                x_recv_bps: s.x_recv * 8.0,
                p: s.p,
            }),
            foreign: s.foreign,
            ..Stats::default()
        }
    }

    fn rate(&self) -> Option<RateStats> {
        // The same values as `stats().rate`, without copying the counters.
        let (x, x_recv, p) = self.rate_state();
        Some(RateStats {
            x_bps: x * 8.0,
            x_recv_bps: x_recv * 8.0,
            p,
        })
    }
}

impl Sender for TfrcSender {
    fn offer(&mut self, _now: Instant, bytes: u64) {
        self.push_data(bytes);
    }

    fn set_unlimited(&mut self, _now: Instant) {
        TfrcSender::set_unlimited(self);
    }

    fn close(&mut self, _now: Instant) {
        TfrcSender::close(self);
    }
}

impl Endpoint for TfrcReceiver {
    fn handle_input(&mut self, now: Instant, message: &Message) {
        match message {
            Message::TfrcData(d) => TfrcReceiver::handle_input(self, now, d),
            _ => self.stats.foreign += 1,
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        TfrcReceiver::handle_timeout(self, now);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        TfrcReceiver::poll_transmit(self, now).map(|fb| Transmit {
            message: Message::TfrcFeedback(fb),
            payload_len: 0,
            low_priority: false,
            overhead: false,
        })
    }

    fn poll_timeout(&self) -> Option<Instant> {
        TfrcReceiver::poll_timeout(self)
    }

    fn stats(&self) -> Stats {
        let s = TfrcReceiver::stats(self);
        Stats {
            delivered_bytes: s.delivered_bytes,
            feedback_sent: Some(s.feedback_sent),
            loss_event_rate: Some(s.p),
            foreign: s.foreign,
            ..Stats::default()
        }
    }
}
