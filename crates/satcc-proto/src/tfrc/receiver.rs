//! The RFC 5348 receiver (§5, §6) with the CCID3 feedback policies:
//! standard (a report every RTT, RFC 5348 §6.2 / RFC 4342) and the dynamic
//! NFb of paper 001 (a report every O = RTT/NFb).
//!
//! X_recv is measured over the observation interval: the payload bytes of
//! packets received since the previous feedback divided by the time since
//! it (paper 001 §III; RFC 5348 §6.2 measures "over the last R_m"). When a
//! feedback goes out early — on a rise in p (§6.1) — and the current
//! window is shorter than O, the previous window is included so that
//! X_recv still spans at least one observation interval (in the spirit of
//! RFC 4342 errata 610/611: never measure over less than one RTT). The first
//! feedback, sent at the first data packet (§6.3), has no interval to
//! measure and reports X_recv = 0; the sender's X_recv_set still holds
//! its initial Infinity then (§4.2), so this does not limit it. When the
//! feedback timer expired with nothing to report, the next report covers
//! everything since the last one (§6.2's longer interval,
//! [`super::XRecvInterval::SinceFeedback`]), so packets that arrive less
//! often than one per R_m report their real rate.

use std::collections::VecDeque;

use super::loss::{LossDetector, LossIntervals, PacketClass};
use super::ns2_sink::Ns2Sink;
use super::{
    FirstLossTarget, Profile, ReceiverConfig, TfrcData, TfrcFeedback, TfrcReceiverStats,
    XRecvInterval, FALLBACK_FEEDBACK_INTERVAL, MIN_RTT,
};
use crate::equation::ns2::b_to_p;
use crate::equation::tfrc_loss_rate_for;
use crate::time::{Duration, Instant};

/// The receive-rate window: bytes since `start`, and the previous window.
#[derive(Clone, Copy, Debug)]
struct Window {
    start: Instant,
    bytes: u64,
    prev: Option<(u64, Duration)>,
}

impl Window {
    /// (X_recv, bytes, duration) over the window at `now`, reaching back
    /// into the previous window when the current one is shorter than `obs`.
    fn measure(&self, now: Instant, extra: u64, obs: Duration) -> (f64, u64, Duration) {
        let el = now.saturating_since(self.start);
        let bytes = self.bytes + extra;
        if el < obs {
            if let Some((pb, pd)) = self.prev {
                let d = el + pd;
                if d > Duration::ZERO {
                    return ((bytes + pb) as f64 / d.as_secs_f64(), bytes + pb, d);
                }
            }
        }
        if el > Duration::ZERO {
            (bytes as f64 / el.as_secs_f64(), bytes, el)
        } else {
            (0.0, bytes, el)
        }
    }
}

/// X_target for the first loss interval (RFC 5348 §6.3.1), bytes per
/// second: the largest X_recv reported so far, at least 0.5/R packets per
/// second.
pub fn first_loss_target(max_x_recv: f64, s: u32, rtt: Duration) -> f64 {
    let floor = 0.5 * f64::from(s.max(1)) / rtt.as_secs_f64().max(1e-9);
    if max_x_recv.is_finite() {
        max_x_recv.max(floor)
    } else {
        floor
    }
}

/// RFC 5348 receiver with a CCID3 feedback policy.
#[derive(Debug)]
pub struct TfrcReceiver {
    cfg: ReceiverConfig,
    det: LossDetector,
    /// R_m: the latest RTT carried by a data packet.
    r_m: Option<Duration>,
    /// (arrival, send timestamp) of the last data packet received.
    last_data: Option<(Instant, Instant)>,
    win: Window,
    received_since_fb: bool,
    last_fb: Option<Instant>,
    next_fb: Option<Instant>,
    /// The observation interval O in force.
    obs: Duration,
    /// The feedback timer last expired at this time with no data received
    /// since the previous feedback, so none was sent (§6.2). The RFC keeps
    /// restarting the timer every R_m while idle; we stop it and account
    /// for the expiries it would have had when data resumes (same reports,
    /// no events while idle).
    skipped_at: Option<Instant>,
    /// The largest X_recv reported so far: X_target of §6.3.1.
    max_x_recv: f64,
    pending: Option<TfrcFeedback>,
    p: f64,
    /// `ns2` profile: arrival times of the packets of the last R_m, for
    /// ns-2's receive rate at the first loss (`est_thput`).
    arrivals: VecDeque<Instant>,
    /// `ns2` profile: `last_report_sent` (0 at the start, as ns-2's).
    ns2_last_report: Instant,
    /// `ns2` profile: `rcvd_since_last_report`.
    ns2_rcvd_since: u64,
    /// `ns2` profile: ns-2's loss estimator, which sets p (`det` still
    /// tells duplicates apart).
    ns2_sink: Ns2Sink,
    pub(super) stats: TfrcReceiverStats,
}

impl TfrcReceiver {
    /// A receiver (RFC 5348 §6.3: nothing happens until the first data
    /// packet).
    pub fn new(cfg: ReceiverConfig) -> Self {
        let det = LossDetector::new(cfg.ndupack, cfg.history_discounting);
        let ns2_sink = Ns2Sink::new(cfg.ndupack, cfg.history_discounting);
        TfrcReceiver {
            cfg,
            det,
            r_m: None,
            last_data: None,
            win: Window {
                start: Instant::ZERO,
                bytes: 0,
                prev: None,
            },
            received_since_fb: false,
            last_fb: None,
            next_fb: None,
            obs: FALLBACK_FEEDBACK_INTERVAL,
            skipped_at: None,
            max_x_recv: 0.0,
            pending: None,
            p: 0.0,
            arrivals: VecDeque::new(),
            ns2_last_report: Instant::ZERO,
            ns2_rcvd_since: 0,
            ns2_sink,
            stats: TfrcReceiverStats::default(),
        }
    }

    /// The observation interval for the current R_m and an X_recv.
    fn interval_for(&self, x_recv: f64) -> Duration {
        match self.r_m {
            Some(r) => self.cfg.policy.interval(r, x_recv, self.cfg.s),
            None => FALLBACK_FEEDBACK_INTERVAL,
        }
    }

    /// A data packet arrived (RFC 5348 §6.1).
    pub fn handle_input(&mut self, now: Instant, d: &TfrcData) {
        if let Some(r) = d.rtt {
            let had = self.r_m.is_some();
            self.r_m = Some(r.max(MIN_RTT));
            if !had {
                self.on_first_rtt(now);
            }
        }
        let rtt = self.r_m.unwrap_or(FALLBACK_FEEDBACK_INTERVAL);
        let first = self.det.max_seq().is_none();
        let len = u64::from(d.len);
        let ns2_p = if self.cfg.profile == Profile::Ns2 {
            Some(self.ns2_first_loss(now, rtt, d))
        } else {
            None
        };
        // The synthesis runs once per connection, at the first loss event;
        // after that event the detector never calls it, and no closure is
        // built on every packet.
        let class = if self.det.loss_events() > 0 {
            self.det.on_packet(d.seq, now, rtt, &mut |n| n as f64)
        } else {
            self.on_packet_before_first_loss(now, d, rtt, ns2_p)
        };
        match class {
            PacketClass::New => {}
            PacketClass::Duplicate => {
                self.stats.duplicates += 1;
                return;
            }
            PacketClass::Stale | PacketClass::TooFar => {
                self.stats.packets_ignored += 1;
                return;
            }
        }
        // §6.1 step 2: "no feedback packet was sent when the feedback
        // timer last expired".
        let resumed = match self.skipped_at.take() {
            Some(t) => {
                // With XRecvInterval::SinceFeedback the window simply goes
                // on from the last report (§6.2's longer interval).
                if self.cfg.x_recv_interval == XRecvInterval::Rtt
                    || self.cfg.profile == Profile::Ns2
                {
                    self.resume_after_idle(now, t);
                }
                true
            }
            None => false,
        };
        self.stats.packets_received += 1;
        self.stats.delivered_bytes += len;
        self.win.bytes += len;
        self.last_data = Some((now, d.ts));
        self.received_since_fb = true;
        if self.cfg.profile == Profile::Ns2 {
            self.ns2_after_packet(now, d, ns2_p);
            return;
        }
        // §6.1 (3): the new p; (4): feedback at once if p rose, "If p <=
        // p_prev and no feedback packet was sent when the feedback timer
        // last expired, cause the feedback timer to expire".
        let p = self.det.p();
        let rose = p > self.p;
        self.p = p;
        if first {
            // §6.3: the first data packet is answered at once.
            self.win.start = now;
            self.send_feedback(now);
        } else if rose || resumed || self.r_m.is_none() {
            // (Without an RTT, §6.3 answers every data packet.)
            self.send_feedback(now);
        }
    }

    /// The first RTT the sender reports: the fallback feedback interval
    /// gives way to the real one at once. Out of line (`#[cold]`, once
    /// per connection), off [`Self::handle_input`]'s cache lines.
    #[cold]
    #[inline(never)]
    fn on_first_rtt(&mut self, now: Instant) {
        self.obs = self.interval_for(self.stats.x_recv);
        if let (Some(last), Some(next)) = (self.last_fb, self.next_fb) {
            let cand = (last + self.obs).max(now);
            if cand < next {
                self.next_fb = Some(cand);
            }
        }
    }

    /// [`Self::handle_input`]'s end for the ns-2 profile (out of line:
    /// the RFC profile's per-packet path stays on fewer cache lines).
    #[inline(never)]
    fn ns2_after_packet(&mut self, now: Instant, d: &TfrcData, ns2_p: Option<f64>) {
        self.ns2_rcvd_since += 1;
        let p_first = ns2_p.unwrap_or(0.0);
        let a = self.ns2_sink.on_packet(
            d.seq,
            d.ts.as_nanos() as f64 * 1e-9,
            d.rtt.map_or(0.0, |r| r.as_secs_f64()),
            &mut || p_first,
        );
        // TfrcSinkAgent::recv (tcp/tfrc-sink.cc): a report at once on
        // the sender's UrgentFlag (set until its first feedback: the
        // packets that carry no RTT), on a new loss event
        // (congestionEvent) or the first gap (adjust_history), or when
        // a new highest packet arrives R/NumFeedback_ or more after the
        // last report ("now - last_report_sent >= rtt_/NumFeedback_").
        let urgent = d.rtt.is_none()
            || a.congestion_event
            || a.first_loss_p.is_some()
            || (a.new_max
                && self.r_m.is_some_and(|r| {
                    now.saturating_since(self.ns2_last_report) >= self.ns2_period(r)
                }));
        if urgent {
            self.ns2_nextpkt(now, a.first_loss_p);
        }
    }

    /// [`LossDetector::on_packet`] before the first loss event, with the
    /// closure that synthesises the first loss interval if this packet
    /// reveals it (RFC 5348 §6.3.1, or ns-2's first interval under
    /// the `ns2` profile, `ns2_p`).
    fn on_packet_before_first_loss(
        &mut self,
        now: Instant,
        d: &TfrcData,
        rtt: Duration,
        ns2_p: Option<f64>,
    ) -> PacketClass {
        let len = u64::from(d.len);
        let (target, max_x_recv, win, obs) = (
            self.cfg.first_loss_target,
            self.max_x_recv,
            self.win,
            self.obs,
        );
        let (s, b) = (self.cfg.s, self.cfg.b);
        // §6.3.1: when the first loss event is detected, synthesise the
        // first loss interval: "TFRC approximates this target rate,
        // X_target, by the maximum value of X_recv so far", and "uses
        // 0.5/R packets per second as the minimum value for X_target";
        // find the p for which the equation (t_RTO = 4R, §3.1) gives
        // X_target, and use 1/p.
        let mut synth = |_actual: u64| -> f64 {
            if let Some(p) = ns2_p {
                // (Not used for p under the ns2 profile: `ns2_sink` is.)
                return if p > 0.0 {
                    (1.0 / p).trunc().max(1.0)
                } else {
                    f64::MAX
                };
            }
            let basis = match target {
                FirstLossTarget::MaxXRecv => max_x_recv,
                // The rate the next report would carry, this packet included.
                FirstLossTarget::Recent => win.measure(now, len, obs).0,
            };
            let x_target = first_loss_target(basis, s, rtt);
            let r = rtt.as_secs_f64();
            1.0 / tfrc_loss_rate_for(f64::from(s.max(1)), r, x_target, b, 4.0 * r)
        };
        self.det.on_packet(d.seq, now, rtt, &mut synth)
    }

    /// The p of the `ns2` profile's first loss interval, computed as each
    /// data packet arrives (it is used only if this packet reveals the
    /// first loss): `TfrcSinkAgent::adjust_history` (tcp/tfrc-sink.cc),
    /// `false_sample = (int)(1.0/p)` with `p = b_to_p(est_thput()*psize_,
    /// rtt_, tzero_, fsize_, 1)`; `est_thput()` is the packets received
    /// since the last report over the time since it when that is at least
    /// R, else the packets received in the last R (this one included)
    /// over R; `tzero_` is the sender's t_RTO carried by the packet.
    #[inline(never)]
    fn ns2_first_loss(&mut self, now: Instant, rtt: Duration, d: &TfrcData) -> f64 {
        self.arrivals.push_back(now);
        while self
            .arrivals
            .front()
            .is_some_and(|&t| t + rtt <= now && self.arrivals.len() > 1)
        {
            self.arrivals.pop_front();
        }
        let s = f64::from(self.cfg.s.max(1));
        let r = rtt.as_secs_f64();
        let since = self.last_fb.map(|t| now.saturating_since(t));
        let pkts_per_s = match since {
            Some(el) if el >= rtt && el > Duration::ZERO => {
                // rcvd_since_last_report, this packet included.
                (self.ns2_rcvd_since + 1) as f64 / el.as_secs_f64()
            }
            _ => self.arrivals.len() as f64 / r,
        };
        let tzero = d.t_rto.map_or(4.0 * r, |t| t.as_secs_f64());
        b_to_p(pkts_per_s * s, r, tzero, s, 1.0)
    }

    /// [`super::XRecvInterval::Rtt`] and the `ns2` profile: data arrives
    /// after the feedback timer expired empty at `t`: the timer the RFC
    /// keeps running would have expired again every O since
    /// (§6.2: "the feedback timer is restarted to expire after R_m
    /// seconds"). X_recv is measured from the latest of those expiries,
    /// going back one more interval when it is less than O ago (§6.2 step
    /// 2's "MAY be calculated over a longer time interval"); no data
    /// arrived in either, so the report is about one packet per R_m, the
    /// minimum §6.2 notes, never bytes divided by the whole idle time.
    #[inline(never)]
    fn resume_after_idle(&mut self, now: Instant, t: Instant) {
        let o = self.obs.as_nanos().max(1);
        let k = now.saturating_since(t).as_nanos() / o;
        let latest = Instant(t.as_nanos() + k * o);
        self.win = Window {
            start: latest,
            bytes: 0,
            prev: Some((0, self.obs)),
        };
    }

    /// Prepare a feedback packet (RFC 5348 §6.2 steps 1-4).
    fn send_feedback(&mut self, now: Instant) {
        let Some((_, ts)) = self.last_data else {
            return;
        };
        // (2) X_recv over the observation interval.
        let (x_recv, bytes, dur) = self.win.measure(now, 0, self.obs);
        self.pending = Some(TfrcFeedback {
            ts_echo: ts,
            t_delay: Duration::ZERO, // set when it leaves (poll_transmit)
            x_recv,
            p: self.p,
        });
        self.stats.x_recv = x_recv;
        if x_recv.is_finite() {
            self.max_x_recv = self.max_x_recv.max(x_recv);
        }
        self.win = Window {
            start: now,
            bytes: 0,
            prev: (dur > Duration::ZERO).then_some((bytes, dur)),
        };
        self.received_since_fb = false;
        // (4) restart the feedback timer; the dynamic policy recomputes
        // NFb from this X_recv (paper 001 eq. 2).
        self.obs = self.interval_for(x_recv);
        self.last_fb = Some(now);
        self.next_fb = Some(now + self.obs);
    }

    /// R/NumFeedback_ of the `ns2` profile: NumFeedback_ is the policy's
    /// count for the current R with no cap from the receive rate (a fixed
    /// count in ns-2).
    fn ns2_period(&self, r: Duration) -> Duration {
        let nfb = self.cfg.policy.nfb(r, f64::INFINITY, self.cfg.s);
        Duration::from_nanos(r.as_nanos() / nfb.max(1))
    }

    /// `TfrcSinkAgent::nextpkt(p)` of the `ns2` profile: `sendpkt(p)` — a
    /// report only if data arrived since the last one (`last_arrival_ >=
    /// last_report_sent`), carrying `p` if given (the first loss), else
    /// `est_loss()` — then the report timer restarted at
    /// 1.5 R/NumFeedback_ whether or not a report left.
    fn ns2_nextpkt(&mut self, now: Instant, p: Option<f64>) {
        let data_since = self
            .last_data
            .is_some_and(|(a, _)| a >= self.ns2_last_report);
        if let (true, Some((arrival, ts))) = (data_since, self.last_data) {
            // est_thput(): packets since the last report over the time
            // since it if that is at least R (1 packet/s if none), else
            // the packets received in the R up to the last arrival over R;
            // 1 packet/s while R is unknown.
            let thput = match self.r_m {
                Some(r) => {
                    let since = now.saturating_since(self.ns2_last_report);
                    if since >= r && since > Duration::ZERO {
                        if self.ns2_rcvd_since > 0 {
                            self.ns2_rcvd_since as f64 / since.as_secs_f64()
                        } else {
                            1.0
                        }
                    } else {
                        let n = self.arrivals.iter().filter(|&&t| t + r > arrival).count();
                        if n > 0 {
                            n as f64 / r.as_secs_f64()
                        } else {
                            1.0
                        }
                    }
                }
                None => 1.0,
            };
            let x_recv = thput * f64::from(self.cfg.s.max(1));
            self.p = p.unwrap_or_else(|| self.ns2_sink.est_loss());
            self.pending = Some(TfrcFeedback {
                ts_echo: ts,
                t_delay: Duration::ZERO, // set when it leaves (poll_transmit)
                x_recv,
                p: self.p,
            });
            self.stats.x_recv = x_recv;
            self.max_x_recv = self.max_x_recv.max(x_recv);
            self.ns2_last_report = now;
            self.ns2_rcvd_since = 0;
            self.last_fb = Some(now);
            self.received_since_fb = false;
        }
        self.next_fb = self.r_m.map(|r| {
            let period = self.ns2_period(r);
            now + Duration::from_nanos(period.as_nanos().saturating_mul(3) / 2)
        });
    }

    /// The time asked for has come (RFC 5348 §6.2: the feedback timer).
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.cfg.profile == Profile::Ns2 {
            if self.next_fb.is_some_and(|t| now >= t) {
                // TfrcNackTimer::expire: nextpkt(-1).
                self.ns2_nextpkt(now, None);
            }
            return;
        }
        if let Some(t) = self.next_fb {
            if now >= t {
                if self.received_since_fb {
                    self.send_feedback(now);
                } else {
                    // §6.2: "If no data packets have been received since
                    // the last feedback was sent, then no feedback packet
                    // is sent, and the feedback timer is restarted". It
                    // would only fire empty until data arrives, so it
                    // sleeps; `resume_after_idle` accounts for the
                    // expiries it skips, and the next data packet is
                    // answered at once (§6.1 step 4).
                    self.skipped_at = Some(t);
                    self.next_fb = None;
                }
            }
        }
    }

    /// The next feedback packet, if one is due.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<TfrcFeedback> {
        let mut fb = self.pending.take()?;
        let arrival = self.last_data.map_or(now, |(a, _)| a);
        fb.t_delay = now.saturating_since(arrival);
        self.stats.feedback_sent += 1;
        Some(fb)
    }

    /// When the feedback timer expires.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.next_fb
    }

    /// Counters.
    pub fn stats(&self) -> TfrcReceiverStats {
        let (loss_events, packets_lost) = if self.cfg.profile == Profile::Ns2 {
            (self.ns2_sink.loss_events(), self.ns2_sink.packets_lost())
        } else {
            (self.det.loss_events(), self.det.packets_lost())
        };
        TfrcReceiverStats {
            loss_events,
            packets_lost,
            p: self.p,
            rtt: self.r_m,
            ..self.stats
        }
    }

    /// Configuration.
    pub fn config(&self) -> &ReceiverConfig {
        &self.cfg
    }

    /// The observation (feedback) interval O in force.
    pub fn observation_interval(&self) -> Duration {
        self.obs
    }

    /// The loss-interval history.
    pub fn loss_intervals(&self) -> &LossIntervals {
        self.det.intervals()
    }

    /// The loss detector (history, counters).
    pub fn loss_detector(&self) -> &LossDetector {
        &self.det
    }

    /// The `ns2` profile's loss estimator (ns-2's `TfrcSinkAgent`), whose
    /// p the reports carry under that profile.
    pub fn ns2_sink(&self) -> &Ns2Sink {
        &self.ns2_sink
    }
}
