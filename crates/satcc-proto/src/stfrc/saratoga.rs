//! STFRC as the Saratoga sender's rate controller: the glue between
//! [`crate::saratoga::RateController`] and [`StfrcController`].
//!
//! The Saratoga sender already reports every DATA it sends and every valid
//! STATUS it receives in the shape STFRC needs (paper 000 §3-b: STFRC
//! changes nothing but the sender), so the adapter only renames fields.

use super::{StatusInfo, StfrcController};
use crate::saratoga::rate::{RateController, StatusInfo as SaraStatusInfo};
use crate::time::Instant;

impl RateController for StfrcController {
    fn on_data_sent(&mut self, now: Instant, offset: u64, len: u32, requests_status: bool) {
        StfrcController::on_data_sent(self, now, offset, len, requests_status);
    }

    fn on_status(&mut self, s: &SaraStatusInfo<'_>) {
        StfrcController::on_status(
            self,
            s.now,
            &StatusInfo {
                progress: s.progress,
                in_response_to: s.in_response_to,
                holes: s.holes,
                holes_incomplete: s.incomplete,
                voluntary: s.voluntary,
                echoed_timestamp: s.ts_echo,
            },
        );
    }

    fn rate_bytes_per_sec(&self) -> f64 {
        self.rate_bytes_per_s()
    }

    fn want_status_request(&mut self, now: Instant) -> bool {
        StfrcController::want_status_request(self, now)
    }

    fn loss_event_rate(&self) -> Option<f64> {
        Some(self.stats().p)
    }

    fn left_slow_start(&self) -> bool {
        // As the RFC 5348 sender: p > 0 once a loss event is known.
        self.stats().p > 0.0
    }

    fn poll_timeout(&self) -> Option<Instant> {
        StfrcController::poll_timeout(self)
    }

    fn handle_timeout(&mut self, now: Instant) {
        StfrcController::handle_timeout(self, now);
    }
}
