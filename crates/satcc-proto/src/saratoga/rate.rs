//! The sender's sending rate, pluggable.
//!
//! Plain Saratoga sends at a configured rate (§1: on dedicated links it
//! fills the link; "standard congestion control mechanisms can be
//! implemented for operation over shared links"). [`FixedRate`] is that;
//! a congestion controller (STFRC, `crate::stfrc`) implements
//! [`RateController`] and is handed to
//! [`super::SaratogaSender::with_rate_controller`].
//!
//! The sender calls the controller for every DATA frame it sends
//! ([`RateController::on_data_sent`]) and every valid STATUS it receives
//! ([`RateController::on_status`]), asks it for the allowed rate before
//! scheduling each frame ([`RateController::rate_bytes_per_sec`]) and
//! whether the next DATA should request a STATUS
//! ([`RateController::want_status_request`]; the sender also requests one
//! by its own rules, see [`super::SaratogaConfig`]).

use crate::time::Instant;

/// What a valid STATUS told the sender (§4.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatusInfo<'a> {
    /// Arrival time.
    pub now: Instant,
    /// Progress indicator: lowest offset not yet received.
    pub progress: u64,
    /// Offset of the DATA frame it answers.
    pub in_response_to: u64,
    /// Holes `[start, end)` (possibly a partial list: see `incomplete`).
    pub holes: &'a [(u64, u64)],
    /// The hole list is incomplete (bit 14).
    pub incomplete: bool,
    /// The send time of the DATA whose timestamp it echoes, when it
    /// echoes one of ours: `now - ts` is an RTT sample.
    pub ts_echo: Option<Instant>,
    /// Sent voluntarily, not requested (bit 15).
    pub voluntary: bool,
}

/// A sending-rate controller for the Saratoga sender.
pub trait RateController: std::fmt::Debug + Send {
    /// A DATA frame of `len` payload bytes at `offset` left at `now`;
    /// `requests_status` if it asked for a STATUS (bit 15).
    fn on_data_sent(&mut self, now: Instant, offset: u64, len: u32, requests_status: bool);
    /// A STATUS passed the sender's validation.
    fn on_status(&mut self, status: &StatusInfo<'_>);
    /// The allowed sending rate now, bytes per second (wire bytes: the
    /// sender paces frames including their headers).
    fn rate_bytes_per_sec(&self) -> f64;
    /// Whether the next DATA frame should request a STATUS (the controller
    /// wants feedback now, say once per RTT).
    fn want_status_request(&mut self, _now: Instant) -> bool {
        false
    }
    /// Loss event rate for statistics, where the controller has one.
    fn loss_event_rate(&self) -> Option<f64> {
        None
    }
    /// When the controller needs waking (STFRC's no-feedback timer,
    /// RFC 5348 §4.4), if ever.
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    /// The time [`RateController::poll_timeout`] asked for has come.
    fn handle_timeout(&mut self, _now: Instant) {}
    /// The controller has left its initial slow start (a TFRC-style
    /// controller: it has learned of a loss event, RFC 5348 §4.3). The
    /// sender reports [`crate::Event::SlowStartExit`] once when this
    /// turns true.
    fn left_slow_start(&self) -> bool {
        false
    }
}

/// A constant rate: plain Saratoga.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FixedRate {
    bytes_per_sec: f64,
}

impl FixedRate {
    /// A fixed rate of `bits_per_sec` bits per second on the wire.
    pub fn new(bits_per_sec: u64) -> FixedRate {
        FixedRate {
            bytes_per_sec: bits_per_sec as f64 / 8.0,
        }
    }
}

impl RateController for FixedRate {
    fn on_data_sent(&mut self, _now: Instant, _offset: u64, _len: u32, _requests_status: bool) {}
    fn on_status(&mut self, _status: &StatusInfo<'_>) {}
    fn rate_bytes_per_sec(&self) -> f64 {
        self.bytes_per_sec
    }
}
