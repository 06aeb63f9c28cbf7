//! The RFC 5348 sender (§4): initial rate, RTT estimation, the rate update
//! on feedback with X_recv_set, the no-feedback timer, oscillation damping
//! and paced transmission.
//!
//! Data-limited intervals (§4.3 step 4): a feedback packet covering
//! (t_new − R, t_new] reports a data-limited interval when the sender was
//! data-limited over all of it (§8.2.1). The sender keeps the stretches of
//! time during which it was *not* data-limited (from a packet sent with
//! more data waiting to the packet that emptied its buffer), and the
//! interval is data-limited when it meets none of them
//! ([`DataLimitedCheck::Stretches`], the default). §8.2.1's two-timestamp
//! procedure (NotLimited1/NotLimited2, [`DataLimitedCheck::TwoTimestamps`])
//! gives the same answer when one feedback covers each RTT; with several
//! feedbacks per t_new lag (a queue that delays data by D ≫ the
//! feedback interval, issue 34) it finds both timestamps after t_new and
//! calls a bulk sender's intervals data-limited, and the data-limited
//! branch then keeps max(X_recv_set) restamped for ever. A bulk source
//! ([`super::TfrcSender::set_unlimited`]) is never data-limited, so for it
//! the rules reduce to the RFC's "typical behaviour" branch.
//!
//! "A new loss event or an increase in the loss event rate p" (§4.3 step 4)
//! is seen as an increase in p: the §3.2.2 feedback carries p and nothing
//! else about loss events.

use std::collections::VecDeque;

use super::super::{DataLimitedCheck, TfrcData, TfrcFeedback, TfrcSenderStats, MIN_RTT};
use super::Source;
use crate::equation::tfrc_rate;
use crate::pacer::{Ipi, Pacer};
use crate::time::{Duration, Instant};

/// Cap on the remembered stretches of not being data-limited (memory
/// stays bounded whatever the application's on/off pattern).
const MAX_STRETCHES: usize = 64;

/// Cap on X_recv_set entries (it holds at most the feedback of two RTTs,
/// and only a decreasing run of them; this only guards odd inputs).
const X_RECV_SET_CAP: usize = 256;

/// `v / 1000` as `u64`, for the RTT filter's weighted sum (the quotient,
/// a weighted mean of two `u64` ns counts, always fits in 64 bits):
/// through a 64-bit division when `v` fits in 64 bits, which it does
/// unless an RTT exceeds ~213 days, instead of the 128-bit division
/// routine (a call, and its code in the instruction cache, on every
/// feedback). The same quotient either way.
#[inline]
fn div_1000(v: u128) -> u64 {
    match u64::try_from(v) {
        Ok(v) => v / 1000,
        Err(_) => (v / 1000) as u64,
    }
}

/// The RFC 5348 engine of [`super::TfrcSender`].
///
/// `repr(C)`, fields in the order written: what every send touches (the
/// poll's due time, the pacer, the data-limited marks, then the source)
/// comes first, on two or three data-cache lines instead of spread over
/// the struct; what only feedback and the timer use follows.
#[derive(Debug)]
#[repr(C)]
pub struct RfcSender {
    /// t_ipi = s/X_inst (§4.6) and t_delta (§8.3) for the X, X_inst and R
    /// in force: they change only on feedback and on the no-feedback
    /// timer, which end with [`Self::reschedule`], while every poll asks
    /// for them (computed by the same expressions, so the same bits).
    ipi: Ipi,
    /// The send schedule (§4.6).
    pacer: Pacer,
    /// `pacer.due()` in ns, refreshed wherever the pacer changes (a send
    /// and [`Self::reschedule`]): every poll compares against it, and
    /// most polls (the one that ends each drain, the wake-ups before the
    /// no-feedback timer) find it not yet come.
    due_ns: u64,
    t_delta: u64,
    r: Option<Duration>,
    /// §8.2.1 NotLimited1, NotLimited2, t_new and t_next
    /// (DataLimitedCheck::TwoTimestamps).
    not_limited: [Instant; 2],
    t_new: Instant,
    t_next: Instant,
    nfb_deadline: Instant,
    /// Nothing sent since the no-feedback timer was last set (§4.4).
    idle_since_nfb: bool,
    feedback_seen: bool,
    /// The last stretch is open (`not_limited_runs.back()` has no end):
    /// every send asks, and the answer here saves a read of the deque's
    /// buffer (a data-cache line of its own) per packet.
    stretch_open: bool,
    pub(super) src: Source,
    /// Allowed sending rate X, bytes/s.
    x: f64,
    /// Cached X_recv (the last reported one, or as §4.4 lowered it).
    x_recv: f64,
    /// Loss event rate p as last reported.
    p: f64,
    /// X_Bps of the last rate update with p > 0.
    x_calc: Option<f64>,
    /// §4.5 R_sqmean, in sqrt(seconds).
    r_sqmean: f64,
    /// X_inst / X (§4.5); 1 without damping.
    damping: f64,
    /// Time last doubled (§4.2 tld).
    tld: Option<Instant>,
    /// X_recv_set (§4.3): (rate, time), kept as a decreasing run so that
    /// the front is the maximum.
    x_recv_set: VecDeque<(f64, Instant)>,
    /// s/t_mbi (§4.3), fixed by the configuration.
    floor: f64,
    /// The stretches during which the sender was not data-limited, oldest
    /// first, the last one open (end None) while data is waiting
    /// (DataLimitedCheck::Stretches).
    not_limited_runs: VecDeque<(Instant, Option<Instant>)>,
}

impl RfcSender {
    /// The state of §4.2 at `now`: X = 1 packet/s, the no-feedback timer
    /// set to 2 s, R undefined, tld unset, X_recv_set = {Infinity}.
    pub(super) fn new(src: Source, now: Instant) -> Self {
        let mut x_recv_set = VecDeque::new();
        x_recv_set.push_back((f64::INFINITY, now));
        let mut e = RfcSender {
            x: src.s, // §4.2: one packet per second
            src,
            x_recv: 0.0,
            p: 0.0,
            x_calc: None,
            r: None,
            r_sqmean: 0.0,
            damping: 1.0,
            tld: None,
            x_recv_set,
            pacer: Pacer::new(now),
            due_ns: 0,
            floor: 0.0,
            ipi: Ipi::from_rate(1.0, 1.0),
            t_delta: 0,
            nfb_deadline: now + Duration::from_secs(2), // §4.2
            idle_since_nfb: true,
            not_limited: [Instant::ZERO; 2],
            not_limited_runs: VecDeque::new(),
            stretch_open: false,
            t_new: Instant::ZERO,
            t_next: Instant::ZERO,
            feedback_seen: false,
        };
        // s/t_mbi (§4.3); t_mbi of zero is treated as 1 ns.
        e.floor = e.src.s / e.src.cfg.t_mbi.as_secs_f64().max(1e-9);
        e.refresh_ipi();
        e.due_ns = e.pacer.due().as_nanos();
        e
    }

    fn t_mbi_floor(&self) -> f64 {
        self.floor
    }

    /// initial_rate = W_init/R, W_init = min(4s, max(2s, 4380)) (§4.2).
    fn initial_rate(&self, r: Duration) -> f64 {
        let w_init = (4.0 * self.src.s).min((2.0 * self.src.s).max(4380.0));
        w_init / r.as_secs_f64()
    }

    /// The inter-packet interval t_ipi = s/X_inst (§4.6), with X_inst at
    /// least s/t_mbi (§4.5: "If (X_inst < s/t_mbi) X_inst = s/t_mbi").
    fn ipi(&self) -> Ipi {
        Ipi::from_rate(self.src.s, self.x_inst())
    }

    /// Recomputes the cached t_ipi and t_delta after X, X_inst or R
    /// changed.
    fn refresh_ipi(&mut self) {
        self.ipi = self.ipi();
        self.t_delta = self.t_delta(self.ipi);
    }

    /// t_delta = min(t_ipi, t_gran, rtt)/2 in ns (§8.3: "never to send a
    /// packet more than a round-trip time before its nominal send time").
    fn t_delta(&self, ipi: Ipi) -> u64 {
        let rtt_half = self.r.map_or(u64::MAX, |r| r.as_nanos() / 2);
        ipi.half_ns()
            .min(self.src.cfg.t_gran.as_nanos() / 2)
            .min(rtt_half)
    }

    /// After X changed: bring the next send forward to one new t_ipi after
    /// the last send if it lies beyond (see [`Pacer::reschedule`]). Every
    /// change of X, X_inst or R ends here, which refreshes the cached
    /// t_ipi and t_delta.
    fn reschedule(&mut self) {
        self.refresh_ipi();
        self.pacer.reschedule(self.ipi);
        self.due_ns = self.pacer.due().as_nanos();
    }

    /// The no-feedback interval max(4R, 2s/X) (§4.3 step 6, §4.4 step 2);
    /// 2s/X alone while R is unknown.
    fn nofeedback_interval(&self) -> Duration {
        let by_rate = Duration::from_secs_f64(2.0 * self.src.s / self.x);
        match self.r {
            Some(r) => r.saturating_mul(4).max(by_rate),
            None => by_rate,
        }
    }

    /// X_recv_set bookkeeping: Update X_recv_set() (§4.3): add (X_recv,
    /// now), delete entries older than two round-trip times.
    fn update_x_recv_set(&mut self, x_recv: f64, now: Instant, r: Duration) {
        while self.x_recv_set.back().is_some_and(|e| e.0 <= x_recv) {
            self.x_recv_set.pop_back();
        }
        self.x_recv_set.push_back((x_recv, now));
        let horizon = r.saturating_mul(2);
        while self.x_recv_set.len() > 1
            && (now.saturating_since(self.x_recv_set[0].1) > horizon
                || self.x_recv_set.len() > X_RECV_SET_CAP)
        {
            self.x_recv_set.pop_front();
        }
    }

    /// Maximize X_recv_set() (§4.3): X_recv = max(X_recv_set) (with the new
    /// report; the initial Infinity is skipped once a finite value exists),
    /// X_recv_set = {(X_recv, now)}.
    fn maximize_x_recv_set(&mut self, x_recv: f64, now: Instant) -> f64 {
        let m = self
            .x_recv_set
            .iter()
            .map(|e| e.0)
            .filter(|v| v.is_finite())
            .fold(x_recv, f64::max);
        self.x_recv_set.clear();
        self.x_recv_set.push_back((m, now));
        m
    }

    fn max_x_recv_set(&self) -> f64 {
        self.x_recv_set.front().map_or(f64::INFINITY, |e| e.0)
    }

    /// A well-formed feedback packet arrived (RFC 5348 §4.3), with X_recv
    /// and p clamped to their ranges and its RTT sample (step 1).
    pub(super) fn on_feedback(&mut self, now: Instant, fb: &TfrcFeedback, r_sample: Duration) {
        let (x_recv, p) = (fb.x_recv, fb.p);
        // §4.3 (2): R = q*R + (1-q)*R_sample (q = 0.9 by default, in
        // thousandths: SenderConfig::rtt_q_milli); the first sample sets R.
        let first = self.r.is_none();
        let r = match self.r {
            None => r_sample,
            Some(r) => {
                let q = u128::from(self.src.cfg.rtt_q_milli.min(1000));
                let v = q * r.as_nanos() as u128 + (1000 - q) * r_sample.as_nanos() as u128;
                Duration::from_nanos(div_1000(v))
            }
        }
        .max(MIN_RTT);
        self.r = Some(r);
        // §4.5: R_sqmean = q2*R_sqmean + (1-q2)*sqrt(R_sample), q2 = 0.9;
        // X_inst = X * R_sqmean / sqrt(R_sample), here at most
        // damping_max_gain * X: on a path whose base RTT is tiny against
        // its queueing delay, one sample taken on an empty queue would
        // otherwise multiply the rate by 20 or more for an RTT (see
        // SenderConfig::damping_max_gain).
        if self.src.cfg.oscillation_damping {
            let sq = r_sample.as_secs_f64().sqrt();
            self.r_sqmean = if first {
                sq
            } else {
                0.9 * self.r_sqmean + 0.1 * sq
            };
            let gain = self.src.cfg.damping_max_gain;
            let cap = if gain.is_nan() {
                super::super::DEFAULT_DAMPING_MAX_GAIN
            } else {
                gain.max(1.0)
            };
            self.damping = (self.r_sqmean / sq).min(cap);
        }
        // §4.3 (3): t_RTO = 4R (the value §3.1 recommends for the equation).
        let t_rto = 4.0 * r.as_secs_f64();
        // §4.2: on the first RTT measurement, tld = now and X = initial_rate.
        // X_recv_set = {Infinity} is (re)stamped now (our reading: it must
        // survive the first two RTTs of feedback however long the sender
        // existed before sending).
        if first {
            self.on_first_rtt(now, r);
        }
        // §4.3 (3): RTO = max(4R, 2s/X), with the X in force before this
        // feedback's update (step 4); step 6 arms the no-feedback timer
        // with it.
        let rto = self.nofeedback_interval();
        let p_prev = self.p;
        self.p = p;
        self.x_recv = x_recv;
        // §4.3 (4): recv_limit from X_recv_set. "If the feedback packet
        // reports a receive rate X_recv of zero (i.e., the first feedback
        // packet), the sender does not consider that the entire interval
        // covered by the feedback packet was a data-limited interval."
        let data_limited = self.covered_interval_data_limited(fb.ts_echo, r, now) && x_recv > 0.0;
        let recv_limit = if data_limited {
            self.data_limited_recv_limit(x_recv, p > p_prev, now)
        } else {
            // Typical behaviour.
            self.update_x_recv_set(x_recv, now, r);
            2.0 * self.max_x_recv_set()
        };
        if p > 0.0 {
            // Congestion avoidance: X = max(min(X_Bps, recv_limit), s/t_mbi).
            let x_bps = tfrc_rate(self.src.s, r.as_secs_f64(), p, self.src.cfg.b, t_rto);
            self.x_calc = Some(x_bps);
            self.x = x_bps.min(recv_limit).max(self.t_mbi_floor());
        } else {
            self.slow_start(now, r, recv_limit);
        }
        // §4.3 (6): "Reset the nofeedback timer to expire after RTO
        // seconds."
        self.nfb_deadline = now + rto;
        self.idle_since_nfb = true;
        self.feedback_seen = true;
        self.reschedule();
    }

    /// §4.2 on the first RTT measurement: tld = now, X = initial_rate, and
    /// X_recv_set = {Infinity} (re)stamped now. Out of line (`#[cold]`,
    /// once per connection), so that [`Self::on_feedback`]'s per-feedback
    /// path sits on fewer cache lines.
    #[cold]
    #[inline(never)]
    fn on_first_rtt(&mut self, now: Instant, r: Duration) {
        self.tld = Some(now);
        self.x = self.initial_rate(r);
        self.x_recv_set.clear();
        self.x_recv_set.push_back((f64::INFINITY, now));
    }

    /// recv_limit of §4.3 step 4 when the whole interval the feedback
    /// covers was data-limited (§8.2); `p_rose`: a new loss event or an
    /// increase in p. Out of line: a bulk source never takes it.
    #[cold]
    #[inline(never)]
    fn data_limited_recv_limit(&mut self, x_recv: f64, p_rose: bool, now: Instant) -> f64 {
        if p_rose {
            for e in &mut self.x_recv_set {
                e.0 /= 2.0;
            }
            self.x_recv = 0.85 * x_recv;
            self.x_recv = self.maximize_x_recv_set(self.x_recv, now);
            self.max_x_recv_set()
        } else {
            self.x_recv = self.maximize_x_recv_set(x_recv, now);
            2.0 * self.max_x_recv_set()
        }
    }

    /// §4.3 step 4 with p = 0: initial slow start, X = max(min(2X,
    /// recv_limit), initial_rate) once per RTT. Out of line: only before
    /// the first loss event.
    #[inline(never)]
    fn slow_start(&mut self, now: Instant, r: Duration, recv_limit: f64) {
        self.x_calc = None;
        let tld = self.tld.unwrap_or(now);
        if now.saturating_since(tld) >= r {
            // Initial slow start: X = max(min(2X, recv_limit), initial_rate).
            self.x = (2.0 * self.x).min(recv_limit).max(self.initial_rate(r));
            self.tld = Some(now);
        }
    }

    /// §8.2.1, "When a feedback packet is received, is this interval
    /// data-limited": the interval (t_new − R, t_new] is data-limited
    /// unless NotLimited1 or NotLimited2 falls in it.
    fn covered_interval_data_limited(&mut self, t_new: Instant, r: Duration, now: Instant) -> bool {
        if self.src.cfg.data_limited_check == DataLimitedCheck::Stretches {
            return self.no_stretch_in(t_new, r);
        }
        self.t_new = t_new;
        self.t_next = now;
        // t_old = t_new - R may lie before time zero: compare t + R > t_new.
        let inside = |t: Instant| {
            t <= t_new
                && u128::from(t.as_nanos()) + u128::from(r.as_nanos())
                    > u128::from(t_new.as_nanos())
        };
        let limited = !(inside(self.not_limited[0]) || inside(self.not_limited[1]));
        if self.not_limited[0] <= t_new && self.not_limited[1] > t_new {
            self.not_limited[0] = self.not_limited[1];
        }
        limited
    }

    /// Whether (t_new − R, t_new] meets no stretch of not being
    /// data-limited; stretches that ended before t_new − 2R are dropped
    /// (a later feedback's interval starts after them unless R more than
    /// doubles).
    fn no_stretch_in(&mut self, t_new: Instant, r: Duration) -> bool {
        let (b, r) = (u128::from(t_new.as_nanos()), u128::from(r.as_nanos()));
        while self.not_limited_runs.len() > 1
            && self.not_limited_runs[0]
                .1
                .is_some_and(|e| u128::from(e.as_nanos()) + 2 * r <= b)
        {
            self.not_limited_runs.pop_front();
        }
        // A stretch [s, e] meets (b − R, b] when s <= b and e > b − R.
        !self.not_limited_runs.iter().any(|&(s, e)| {
            u128::from(s.as_nanos()) <= b && e.is_none_or(|e| u128::from(e.as_nanos()) + r > b)
        })
    }

    /// A packet left at `now`; `more` says whether data is still waiting
    /// (the stretch of not being data-limited goes on) or not (it ends).
    fn note_stretch(&mut self, now: Instant, more: bool) {
        #[cfg(test)]
        assert_eq!(
            self.stretch_open,
            self.not_limited_runs.back().is_some_and(|r| r.1.is_none())
        );
        match (self.stretch_open, more) {
            (false, true) => {
                if self.not_limited_runs.len() >= MAX_STRETCHES {
                    // Bounded memory: the two oldest become one, as if the
                    // sender had not been data-limited between them (the
                    // RFC's typical behaviour, the safe side).
                    let first = self.not_limited_runs.pop_front().map(|r| r.0);
                    if let (Some(s), Some(r)) = (first, self.not_limited_runs.front_mut()) {
                        r.0 = s;
                    }
                }
                self.not_limited_runs.push_back((now, None));
                self.stretch_open = true;
            }
            (true, false) => {
                if let Some(r) = self.not_limited_runs.back_mut() {
                    r.1 = Some(now);
                }
                self.stretch_open = false;
            }
            _ => {}
        }
    }

    /// §8.2.1, "After sending a segment: If (sender has sent all it is
    /// allowed to send)": the sender is not data-limited now.
    fn note_not_limited(&mut self, now: Instant) {
        if self.not_limited[0] <= self.t_new {
            self.not_limited[0] = now;
        } else if self.not_limited[1] <= self.t_next {
            self.not_limited[1] = now;
        }
    }

    /// Update_Limits(timer_limit) of RFC 5348 §4.4.
    fn update_limits(&mut self, timer_limit: f64, now: Instant) {
        let timer_limit = timer_limit.max(self.t_mbi_floor());
        self.x_recv_set.clear();
        self.x_recv_set.push_back((timer_limit / 2.0, now));
        self.x_recv = timer_limit / 2.0;
        // "Recalculate X as in step (4) of Section 4.3" (p > 0 here).
        let recv_limit = 2.0 * self.max_x_recv_set();
        let x_bps = self.x_calc.unwrap_or(recv_limit);
        self.x = x_bps.min(recv_limit).max(self.t_mbi_floor());
    }

    /// The no-feedback timer expired (RFC 5348 §4.4).
    fn on_nofeedback(&mut self, now: Instant) {
        self.src.stats.nofeedback_expiries += 1;
        let floor = self.t_mbi_floor();
        let recover_rate = self.r.map(|r| self.initial_rate(r));
        // §4.4: "X_recv = max (X_recv_set);" (Infinity while the initial
        // item is still there, in the first two RTTs).
        let x_recv = self.max_x_recv_set();
        if !self.feedback_seen {
            // No RTT sample and no feedback yet: halve X, unless the sender
            // has been idle since the timer was set.
            if !self.idle_since_nfb {
                self.x = (self.x / 2.0).max(floor);
            }
        } else if self.idle_since_nfb
            && recover_rate.is_some_and(|rr| {
                (self.p == 0.0 && self.x < 2.0 * rr) || (self.p > 0.0 && x_recv < rr)
            })
        {
            // Idle, and already at or below the recovery rate: do nothing.
        } else if self.p == 0.0 {
            // No X_Bps yet: halve the allowed sending rate.
            self.x = (self.x / 2.0).max(floor);
        } else if self.x_calc.unwrap_or(f64::INFINITY) > 2.0 * x_recv {
            // 2*X_recv was already limiting the rate: halve it via X_recv.
            self.update_limits(x_recv, now);
        } else {
            // The rate was limited by X_Bps: halve that.
            self.update_limits(self.x_calc.unwrap_or(0.0) / 2.0, now);
        }
        // §4.4 (2): restart the timer after max(4R, 2s/X).
        self.nfb_deadline = now + self.nofeedback_interval();
        self.idle_since_nfb = true;
        self.reschedule();
    }

    /// The time asked for has come.
    pub(super) fn handle_timeout(&mut self, now: Instant) {
        if now >= self.nfb_deadline {
            self.on_nofeedback(now);
        }
    }

    /// The next packet, if its send time has come (RFC 5348 §4.6: a packet
    /// may leave t_delta before its nominal time; nominal times advance by
    /// t_ipi = s/X_inst from the previous nominal time, so the long-run
    /// rate is exact; a sender more than one t_ipi late, after an idle
    /// period say, restarts the schedule from now instead of bursting).
    #[inline]
    pub(super) fn poll_transmit(&mut self, now: Instant) -> Option<TfrcData> {
        if now.as_nanos().saturating_add(self.t_delta) < self.due_ns {
            return None;
        }
        self.send_now(now)
    }

    /// [`Self::poll_transmit`] once the send time has come.
    fn send_now(&mut self, now: Instant) -> Option<TfrcData> {
        let ipi = self.ipi;
        if !self.src.has_data() {
            return None;
        }
        self.pacer.on_send(now, ipi);
        self.due_ns = self.pacer.due().as_nanos();
        let len = self.src.take_payload();
        if self.src.stats.packets_sent == 0 && !self.feedback_seen {
            // §4.2: ready to send without an RTT sample: the no-feedback
            // timer expires two seconds later.
            self.nfb_deadline = now + Duration::from_secs(2);
        }
        let more = self.src.has_data();
        if more {
            // More is waiting: the rate, not the application, limits.
            self.note_not_limited(now);
        }
        self.note_stretch(now, more);
        self.idle_since_nfb = false;
        Some(self.src.packet(now, len, self.r, None))
    }

    /// When to wake next (next send time or no-feedback timer).
    pub(super) fn poll_timeout(&self) -> Option<Instant> {
        let mut t = self.nfb_deadline;
        if self.src.has_data() {
            let send = Instant(self.due_ns.saturating_sub(self.t_delta));
            t = t.min(send);
        }
        Some(t)
    }

    /// Monitoring.
    pub(super) fn stats(&self) -> TfrcSenderStats {
        self.src
            .report(self.x, self.x_recv, self.p, self.r, self.x_calc)
    }

    /// (X, X_recv, p) of [`Self::stats`].
    pub(super) fn rate_state(&self) -> (f64, f64, f64) {
        (self.x, self.x_recv, self.p)
    }

    /// The allowed sending rate X, bytes per second.
    pub(super) fn x(&self) -> f64 {
        self.x
    }

    /// The loss event rate p as last reported.
    pub(super) fn p(&self) -> f64 {
        self.p
    }

    /// The pacing rate X_inst (= X without oscillation damping, §4.5), at
    /// least s/t_mbi.
    pub(super) fn x_inst(&self) -> f64 {
        (self.x * self.damping).max(self.t_mbi_floor())
    }

    /// When the no-feedback timer expires next.
    pub(super) fn nofeedback_deadline(&self) -> Instant {
        self.nfb_deadline
    }

    /// recv_limit as the next typical feedback would start from:
    /// 2*max(X_recv_set) (§4.3).
    pub(super) fn recv_limit(&self) -> f64 {
        2.0 * self.max_x_recv_set()
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::{SenderConfig, TfrcFeedback};
    use super::super::TfrcSender;
    use crate::rng::Rng;
    use crate::time::{Duration, Instant};

    /// The open-stretch flag equals what the deque says after every step
    /// of a random data-limited run (data pushed a few packets at a time,
    /// so stretches open and close, feedback, no-feedback expiries,
    /// sends); `note_stretch` also asserts it before each use.
    #[test]
    fn stretch_flag_follows_the_deque() {
        let mut s = TfrcSender::new(SenderConfig::default(), Instant::ZERO);
        let mut rng = Rng::new(5);
        let mut now = Instant::ZERO;
        let (mut opened, mut closed) = (0, 0);
        for _ in 0..20_000 {
            now += Duration::from_micros(1 + rng.below(50_000));
            match rng.below(5) {
                // A few packets at a time, once the queue is nearly
                // empty: the sender catches up and stretches close.
                0 if s.queued_bytes() < 1000 => s.push_data(rng.below(4) * 1000 + rng.below(1000)),
                0 => {}
                1 => {
                    let echo = Instant(now.as_nanos() - rng.below(now.as_nanos().min(500_000_000)));
                    let fb = TfrcFeedback {
                        ts_echo: echo,
                        t_delay: Duration::from_micros(rng.below(1000)),
                        x_recv: rng.next_f64() * 1e6,
                        p: rng.next_f64() * 0.05,
                    };
                    s.handle_input(now, &fb);
                }
                2 => {
                    now = now.max(s.nofeedback_deadline());
                    s.handle_timeout(now);
                }
                _ => while s.poll_transmit(now).is_some() {},
            }
            let TfrcSender::Rfc(e) = &s else {
                unreachable!()
            };
            let open = e.not_limited_runs.back().is_some_and(|r| r.1.is_none());
            assert_eq!(e.stretch_open, open, "at {now:?}");
            match (open, e.not_limited_runs.back()) {
                (true, _) => opened += 1,
                (false, Some(_)) => closed += 1,
                _ => {}
            }
        }
        // Both states were visited many times.
        assert!(
            opened > 1000 && closed > 1000,
            "{opened} open, {closed} closed"
        );
    }

    /// The 64-bit path of `div_1000` gives the 128-bit quotient: edge
    /// values around 2^64 and random sums of the filter's form.
    #[test]
    fn div_1000_is_the_128_bit_quotient() {
        let edges = [
            0u128,
            1,
            999,
            1000,
            1001,
            u64::MAX as u128 - 1,
            u64::MAX as u128,
            u64::MAX as u128 + 1,
            1000 * u64::MAX as u128,
        ];
        for v in edges {
            assert_eq!(u128::from(super::div_1000(v)), v / 1000, "{v}");
        }
        let mut rng = Rng::new(3);
        for _ in 0..100_000 {
            let q = u128::from(rng.below(1001));
            let (r, rs) = (
                rng.next_u64() >> rng.below(64),
                rng.next_u64() >> rng.below(64),
            );
            let v = q * r as u128 + (1000 - q) * rs as u128;
            assert_eq!(u128::from(super::div_1000(v)), v / 1000, "{v}");
        }
    }

    /// The cached t_ipi and t_delta equal what X, X_inst and R give, and
    /// the cached due time the pacer's, at every step of a random run of
    /// feedback, no-feedback expiries and sends (with and without
    /// damping): a path that changes one of them without refreshing the
    /// cache fails here.
    #[test]
    fn cached_interval_follows_every_rate_change() {
        for damping in [false, true] {
            let cfg = SenderConfig {
                oscillation_damping: damping,
                ..SenderConfig::default()
            };
            let mut s = TfrcSender::new(cfg, Instant::ZERO);
            s.set_unlimited();
            let mut rng = Rng::new(7);
            let mut now = Instant::ZERO;
            let (mut last, mut changes) = (None, 0);
            for _ in 0..5000 {
                now += Duration::from_micros(1 + rng.below(300_000));
                match rng.below(4) {
                    0 => {
                        let echo =
                            Instant(now.as_nanos() - rng.below(now.as_nanos().min(2_000_000_000)));
                        let fb = TfrcFeedback {
                            ts_echo: echo,
                            t_delay: Duration::from_micros(rng.below(1000)),
                            x_recv: rng.next_f64() * 1e6,
                            p: if rng.chance(0.3) {
                                0.0
                            } else {
                                rng.next_f64() * 0.1
                            },
                        };
                        s.handle_input(now, &fb);
                    }
                    1 => {
                        now = now.max(s.nofeedback_deadline());
                        s.handle_timeout(now);
                    }
                    _ => while s.poll_transmit(now).is_some() {},
                }
                let TfrcSender::Rfc(e) = &s else {
                    unreachable!()
                };
                assert_eq!(e.ipi, e.ipi(), "t_ipi at {now:?}");
                assert_eq!(e.t_delta, e.t_delta(e.ipi()), "t_delta at {now:?}");
                assert_eq!(e.due_ns, e.pacer.due().as_nanos(), "due at {now:?}");
                if last != Some(e.ipi) {
                    changes += 1;
                    last = Some(e.ipi);
                }
            }
            // The run moved the rate often enough to mean something.
            assert!(changes > 500, "{changes} changes of t_ipi");
        }
    }
}
