//! Saratoga's sender and receiver behind the endpoint interface: what a
//! driver that knows only [`Endpoint`] and [`Sender`] (the simulator)
//! sees of them.

use super::msg::udp_payload_len;
use super::sender::Role;
use super::wire::DescriptorSize;
use super::{Failure, SaratogaReceiver, SaratogaSender, UNLIMITED_SIZE};
use crate::endpoint::{Endpoint, Event, Message, RateStats, Sender, Stats, Transmit};
use crate::time::Instant;

impl Endpoint for SaratogaSender {
    fn handle_input(&mut self, now: Instant, message: &Message) {
        match message {
            Message::SaraStatus(s) => self.on_status(now, s),
            Message::SaraRequest(r) => self.on_request(now, r.kind, r.name, r.session),
            _ => self.stats.foreign += 1,
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        SaratogaSender::handle_timeout(self, now);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        let m = SaratogaSender::poll_message(self, now)?;
        // The UDP payload: the whole Saratoga frame, header included (its
        // size varies with the descriptor, the timestamp and the hole
        // list), so a driver adds only the IP and UDP headers.
        let payload_len = udp_payload_len(&m);
        Some(Transmit {
            message: m,
            payload_len,
            low_priority: false,
            overhead: false,
        })
    }

    fn poll_timeout(&self) -> Option<Instant> {
        SaratogaSender::poll_timeout(self)
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    fn stats(&self) -> Stats {
        let s = &self.stats;
        Stats {
            srtt: s.srtt,
            rate: Some(RateStats {
                x_bps: self.rc.rate_bytes_per_sec() * 8.0,
                x_recv_bps: f64::NAN,
                p: self.rc.loss_event_rate().unwrap_or(0.0),
            }),
            acked_bytes: s.acked_bytes,
            retransmits: s.retransmits,
            timeouts: u64::from(matches!(
                self.failure,
                Some(Failure::InactivityTimeout { .. } | Failure::NoProgress { .. })
            )),
            rtt_samples: s.rtt_samples,
            sum_rtt: s.sum_rtt,
            foreign: s.foreign,
            ..Stats::default()
        }
    }
}

impl Sender for SaratogaSender {
    /// PUT: the first offer starts a transfer of a file of `bytes` bytes
    /// (METADATA announces the size). A later offer grows the file and
    /// announces the new size in a fresh METADATA (our extension: a file
    /// still being written). A GET responder ignores it.
    fn offer(&mut self, now: Instant, bytes: u64) {
        if self.role != Role::Put || self.closed || bytes == 0 {
            return;
        }
        match self.file_size {
            None => self.start(bytes, now),
            Some(s) if s != UNLIMITED_SIZE => {
                let n = s.saturating_add(bytes);
                self.file_size = Some(n);
                self.descriptor = self.descriptor.max(DescriptorSize::smallest_for(n));
                self.metadata_due = true;
                if self.all_acked_reported {
                    self.all_acked_reported = false;
                }
            }
            Some(_) => {}
        }
    }

    /// PUT: an endless transfer, a file of [`UNLIMITED_SIZE`] bytes with
    /// 64-bit offsets (for bulk experiments; it never completes).
    fn set_unlimited(&mut self, now: Instant) {
        if self.role != Role::Put || self.closed {
            return;
        }
        if self.file_size.is_none() {
            self.start(UNLIMITED_SIZE, now);
        } else {
            self.file_size = Some(UNLIMITED_SIZE);
            self.descriptor = DescriptorSize::D64;
            self.metadata_due = true;
        }
    }

    /// Sends no new data; what was sent is still repaired until
    /// acknowledged, then [`Event::AllAcked`].
    fn close(&mut self, _now: Instant) {
        self.closed = true;
        self.check_complete();
    }
}

impl Endpoint for SaratogaReceiver {
    fn handle_input(&mut self, now: Instant, message: &Message) {
        if self.failure.is_some() {
            return;
        }
        match message {
            Message::SaraData(d) => self.on_data(now, d),
            Message::SaraMetadata(m) => self.on_metadata(now, m),
            _ => self.stats.foreign += 1,
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        SaratogaReceiver::handle_timeout(self, now);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        SaratogaReceiver::poll_message(self, now).map(|message| Transmit {
            message,
            // The whole STATUS frame (see the sender's poll_transmit).
            payload_len: udp_payload_len(&message),
            low_priority: false,
            overhead: false,
        })
    }

    fn poll_timeout(&self) -> Option<Instant> {
        SaratogaReceiver::poll_timeout(self)
    }

    fn stats(&self) -> Stats {
        Stats {
            delivered_bytes: self.stats.delivered_bytes,
            feedback_sent: Some(self.stats.status_sent),
            timeouts: u64::from(self.failure.is_some()),
            foreign: self.stats.foreign,
            ..Stats::default()
        }
    }
}
