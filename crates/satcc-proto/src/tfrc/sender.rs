//! The TFRC sender: one type over two engines, chosen by
//! [`SenderConfig::profile`].
//!
//! - [`Profile::Rfc5348`] ([`rfc`]): the RFC 5348 sender (§4): initial
//!   rate, RTT estimation, the rate update on feedback with X_recv_set,
//!   the no-feedback timer, oscillation damping and paced transmission.
//! - [`Profile::Ns2`] ([`ns2`]): ns-2 2.35's `Agent/TFRC`, so that a study
//!   done in ns-2 can be re-run here like for like.
//!
//! The two keep no state of each other's (an enum, not one struct with an
//! optional second engine: a field of one engine can never be read stale
//! under the other). What both share is the application side (`Source`:
//! the configuration, the data waiting, sequence numbers and counters),
//! the checks on arriving feedback, and the equations of
//! [`crate::equation`].

pub mod ns2;
pub mod rfc;

use super::{Profile, SenderConfig, TfrcData, TfrcFeedback, TfrcSenderStats, MIN_RTT};
use crate::time::{Duration, Instant};

/// The application side both engines share: what there is to send, the
/// packets' sequence numbers and the counters.
///
/// `repr(C)`: what every send touches first (the queue, the sequence
/// number, the counters), the configuration last.
#[derive(Debug)]
#[repr(C)]
pub(super) struct Source {
    /// s as f64 (at least 1 byte).
    s: f64,
    queued: u64,
    seq: u64,
    unlimited: bool,
    /// The endpoint interface has reported the exit from slow start.
    pub(super) ss_exit_reported: bool,
    pub(super) stats: TfrcSenderStats,
    cfg: SenderConfig,
}

impl Source {
    fn new(cfg: SenderConfig) -> Self {
        Source {
            s: f64::from(cfg.s.max(1)),
            cfg,
            unlimited: false,
            queued: 0,
            seq: 0,
            stats: TfrcSenderStats::default(),
            ss_exit_reported: false,
        }
    }

    fn has_data(&self) -> bool {
        self.unlimited || self.queued > 0
    }

    /// Takes the next packet's payload off the queue: s bytes, or what is
    /// left if less.
    fn take_payload(&mut self) -> u32 {
        if self.unlimited {
            self.cfg.s
        } else {
            let l = self.queued.min(u64::from(self.cfg.s));
            self.queued -= l;
            l as u32
        }
    }

    /// The statistics view, with an engine's current X, X_recv, p, R and
    /// X_Bps beside the counters.
    fn report(
        &self,
        x: f64,
        x_recv: f64,
        p: f64,
        rtt: Option<Duration>,
        x_calc: Option<f64>,
    ) -> TfrcSenderStats {
        TfrcSenderStats {
            x,
            x_recv,
            p,
            rtt,
            x_calc,
            ..self.stats
        }
    }

    /// Numbers and counts a packet of `len` payload bytes sent at `now`.
    fn packet(
        &mut self,
        now: Instant,
        len: u32,
        rtt: Option<Duration>,
        t_rto: Option<Duration>,
    ) -> TfrcData {
        let d = TfrcData {
            seq: self.seq,
            len,
            ts: now,
            rtt,
            t_rto,
        };
        self.seq += 1;
        self.stats.packets_sent += 1;
        d
    }
}

/// A TFRC sender, RFC 5348 or ns-2 2.35's `Agent/TFRC`
/// ([`SenderConfig::profile`]).
// The RFC engine stays inline although it is the larger variant: it is the
// one every simulated TFRC, CCID3 and STFRC flow runs, and boxing it would
// put one more pointer chase on every packet and feedback.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum TfrcSender {
    /// RFC 5348 §4.
    Rfc(rfc::RfcSender),
    /// ns-2 2.35's `Agent/TFRC` (boxed: rarely used, and larger).
    Ns2(Box<ns2::Ns2Engine>),
}

impl TfrcSender {
    /// A sender starting at `now` (RFC 5348 §4.2: X = 1 packet/s, the
    /// no-feedback timer set to 2 s, R undefined, tld unset, X_recv_set =
    /// {Infinity}; with [`Profile::Ns2`], `TfrcAgent`'s state before
    /// `start()`). It has nothing to send until [`Self::set_unlimited`]
    /// or [`Self::push_data`].
    pub fn new(cfg: SenderConfig, now: Instant) -> Self {
        let profile = cfg.profile;
        let src = Source::new(cfg);
        match profile {
            Profile::Rfc5348 => TfrcSender::Rfc(rfc::RfcSender::new(src, now)),
            Profile::Ns2 => TfrcSender::Ns2(Box::new(ns2::Ns2Engine::new(src, now))),
        }
    }

    pub(super) fn source(&self) -> &Source {
        match self {
            TfrcSender::Rfc(e) => &e.src,
            TfrcSender::Ns2(e) => &e.src,
        }
    }

    pub(super) fn source_mut(&mut self) -> &mut Source {
        match self {
            TfrcSender::Rfc(e) => &mut e.src,
            TfrcSender::Ns2(e) => &mut e.src,
        }
    }

    /// Bulk data: always something to send.
    pub fn set_unlimited(&mut self) {
        self.source_mut().unlimited = true;
    }

    /// The application closes: no data is sent from now on (TFRC does not
    /// retransmit).
    pub fn close(&mut self) {
        let src = self.source_mut();
        src.unlimited = false;
        src.queued = 0;
    }

    /// Queue `bytes` more application data (sent in packets of at most s
    /// bytes). Ignored once the sender is unlimited.
    pub fn push_data(&mut self, bytes: u64) {
        let src = self.source_mut();
        src.queued = src.queued.saturating_add(bytes);
    }

    /// Bytes queued and not yet sent (0 for an unlimited sender).
    pub fn queued_bytes(&self) -> u64 {
        let src = self.source();
        if src.unlimited {
            0
        } else {
            src.queued
        }
    }

    /// A feedback packet arrived (RFC 5348 §4.3). A malformed one (a NaN
    /// field, or an echo of a time not yet come) is counted and ignored;
    /// X_recv and p are clamped to their ranges.
    pub fn handle_input(&mut self, now: Instant, fb: &TfrcFeedback) {
        let stats = &mut self.source_mut().stats;
        stats.feedback_received += 1;
        if fb.x_recv.is_nan() || fb.p.is_nan() || fb.ts_echo > now {
            stats.feedback_ignored += 1;
            return;
        }
        let fb = TfrcFeedback {
            x_recv: fb.x_recv.max(0.0),
            p: fb.p.clamp(0.0, 1.0),
            ..*fb
        };
        // §4.3 (1): R_sample = (t_now - t_recvdata) - t_delay (in ns-2's
        // TfrcAgent::recv: now - (timestamp_echo + timestamp_offset), the
        // same sample).
        let r_sample = (now.saturating_since(fb.ts_echo) - fb.t_delay).max(MIN_RTT);
        let stats = &mut self.source_mut().stats;
        stats.rtt_samples += 1;
        stats.sum_rtt += r_sample;
        match self {
            TfrcSender::Rfc(e) => e.on_feedback(now, &fb, r_sample),
            TfrcSender::Ns2(e) => e.on_feedback(now, &fb, r_sample),
        }
    }

    /// The time asked for has come.
    pub fn handle_timeout(&mut self, now: Instant) {
        match self {
            TfrcSender::Rfc(e) => e.handle_timeout(now),
            TfrcSender::Ns2(e) => e.handle_timeout(now),
        }
    }

    /// The next packet, if its send time has come.
    #[inline]
    pub fn poll_transmit(&mut self, now: Instant) -> Option<TfrcData> {
        match self {
            TfrcSender::Rfc(e) => e.poll_transmit(now),
            TfrcSender::Ns2(e) => e.poll_transmit(now),
        }
    }

    /// When to wake next (next send time or no-feedback timer).
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self {
            TfrcSender::Rfc(e) => e.poll_timeout(),
            TfrcSender::Ns2(e) => e.poll_timeout(),
        }
    }

    /// Monitoring.
    pub fn stats(&self) -> TfrcSenderStats {
        match self {
            TfrcSender::Rfc(e) => e.stats(),
            TfrcSender::Ns2(e) => e.stats(),
        }
    }

    /// Configuration.
    pub fn config(&self) -> &SenderConfig {
        &self.source().cfg
    }

    /// The allowed sending rate X, bytes per second.
    pub fn x(&self) -> f64 {
        match self {
            TfrcSender::Rfc(e) => e.x(),
            TfrcSender::Ns2(e) => e.x(),
        }
    }

    /// (X, X_recv, p) as [`Self::stats`] reports them.
    pub fn rate_state(&self) -> (f64, f64, f64) {
        match self {
            TfrcSender::Rfc(e) => e.rate_state(),
            TfrcSender::Ns2(e) => e.rate_state(),
        }
    }

    /// The loss event rate p as last reported.
    pub fn p(&self) -> f64 {
        match self {
            TfrcSender::Rfc(e) => e.p(),
            TfrcSender::Ns2(e) => e.p(),
        }
    }

    /// The pacing rate X_inst (= X without oscillation damping, §4.5), at
    /// least s/t_mbi.
    pub fn x_inst(&self) -> f64 {
        match self {
            TfrcSender::Rfc(e) => e.x_inst(),
            TfrcSender::Ns2(e) => e.x_inst(),
        }
    }

    /// When the no-feedback timer expires next.
    pub fn nofeedback_deadline(&self) -> Instant {
        match self {
            TfrcSender::Rfc(e) => e.nofeedback_deadline(),
            TfrcSender::Ns2(e) => e.nofeedback_deadline(),
        }
    }

    /// recv_limit as the next typical feedback would start from:
    /// 2*max(X_recv_set) (§4.3). ns-2's `Agent/TFRC` keeps no X_recv_set:
    /// infinite there.
    pub fn recv_limit(&self) -> f64 {
        match self {
            TfrcSender::Rfc(e) => e.recv_limit(),
            TfrcSender::Ns2(_) => f64::INFINITY,
        }
    }
}
