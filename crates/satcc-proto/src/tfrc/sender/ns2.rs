//! The `ns2` profile of the sender: ns-2 2.35's `Agent/TFRC`
//! (tcp/tfrc.cc, `TfrcAgent`) with its default settings, so that a study
//! done in ns-2 can be re-run here like for like.
//!
//! Each method names the `TfrcAgent` function it reproduces. Times are
//! `f64` seconds from the start of the run, as ns-2's `now`, so that the
//! comparisons with ns-2's `lastlimited_` (0 for a bulk source) come out
//! the same. The sender sends on its own timer (`send_timer_`): the next
//! packet `s/xrate` after the last, and at once when `recv` or the
//! no-feedback timer call `nextpkt()`.

use super::super::{Ns2Params, TfrcData, TfrcFeedback, TfrcSenderStats, MIN_RTT};
use super::Source;
use crate::equation::ns2::p_to_b;
use crate::time::{Duration, Instant};

/// `SMALLFLOAT` of tcp/tfrc.h.
const SMALLFLOAT: f64 = 0.0000001;
/// `T_SRTT_BITS`, `T_RTTVAR_BITS`, `rttvar_exp_` (ns-default.tcl: 3, 2, 2).
const T_SRTT_BITS: u32 = 3;
const T_RTTVAR_BITS: u32 = 2;
const RTTVAR_EXP: u32 = 2;

/// Slack (1 µs) in slow start's "more than an RTT since the last
/// change" (`now - last_change_ > rtt_`). On an uncongested path ns-2's
/// reports reach the sender exactly one path RTT apart (the receiver
/// answers the packet that `nextpkt()` sent on the previous report's
/// arrival, `now - last_report_sent >= rtt_` holding with equality:
/// reports at 0.884294, 1.389331, 1.894368 s on the cross-check path), and
/// `rtt_` is the same RTT; ns-2's double arithmetic resolves that tie as
/// "more" (its `rate_` rises on every report in slow start). Our clock is
/// whole nanoseconds and the tie exact, so without the slack the rate
/// would rise on every other report only.
const TIE: f64 = 1e-6;

/// `rate_change_` of tcp/tfrc.h.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RateChange {
    SlowStart,
    CongAvoid,
    RateDecrease,
    OutOfSlowStart,
}

/// The state of ns-2's `TfrcAgent` for a bulk source (`SndrType_ 0`,
/// never data-limited: `datalimited_` 0, `lastlimited_` 0.0).
#[derive(Debug)]
pub(crate) struct Ns2Sender {
    prm: Ns2Params,
    /// `size_`.
    s: f64,
    /// `bval_`.
    b: f64,
    /// `ca_`.
    ca: bool,
    pub(crate) rate: f64,
    oldrate: f64,
    delta: f64,
    rate_change: RateChange,
    /// `rtt_`, seconds (0 until the first feedback).
    pub(crate) rtt: f64,
    sqrtrtt: f64,
    rttcur: f64,
    /// `tzero_`: t_RTO for the equation.
    pub(crate) tzero: f64,
    last_change: f64,
    maxrate: f64,
    ss_maxrate: f64,
    round_id: u64,
    heavyrounds: u32,
    t_srtt: i32,
    t_rttvar: i32,
    /// `rcvrate`: the equation's rate at the last report.
    pub(crate) rcvrate: f64,
    first_pkt_rcvd: bool,
    /// The send timer: when `nextpkt()` runs next (`None` before start).
    pub(crate) next_send: Option<Instant>,
    /// `NoFeedbacktimer_`.
    pub(crate) nfb_deadline: Option<Instant>,
    /// When the last packet left.
    last_send: Option<Instant>,
}

fn secs(t: Instant) -> f64 {
    t.as_nanos() as f64 * 1e-9
}

fn after(now: Instant, dt: f64) -> Instant {
    // ns-2's timers take seconds as doubles; ours whole nanoseconds.
    let dt = if dt.is_finite() {
        dt.clamp(0.0, 1e9)
    } else {
        1e9
    };
    now + Duration::from_secs_f64(dt)
}

impl Ns2Sender {
    pub(crate) fn new(prm: Ns2Params, s: f64, b: f64, ca: bool) -> Self {
        Ns2Sender {
            prm,
            s,
            b,
            ca,
            rate: 0.0,
            oldrate: 0.0,
            delta: 0.0,
            rate_change: RateChange::SlowStart,
            rtt: 0.0,
            sqrtrtt: 1.0,
            rttcur: 1.0,
            tzero: 0.0,
            last_change: 0.0,
            maxrate: 0.0,
            ss_maxrate: 0.0,
            round_id: 0,
            heavyrounds: 0,
            t_srtt: 0,
            t_rttvar: 0,
            rcvrate: 0.0,
            first_pkt_rcvd: false,
            next_send: None,
            nfb_deadline: None,
            last_send: None,
        }
    }

    /// `TfrcAgent::start()`: rate_ = InitRate_, the first packet now, the
    /// next s/rate_ later, the no-feedback timer at 2 s/rate_.
    pub(crate) fn start(&mut self, now: Instant) {
        let p = &self.prm;
        self.rate = p.init_rate;
        self.delta = 0.0;
        self.oldrate = self.rate;
        self.rate_change = RateChange::SlowStart;
        self.rtt = 0.0;
        self.sqrtrtt = 1.0;
        self.rttcur = 1.0;
        self.tzero = 0.0;
        self.last_change = 0.0;
        self.maxrate = 0.0;
        self.ss_maxrate = 0.0;
        self.round_id = 0;
        self.heavyrounds = 0;
        // t_srtt_ = int(srtt_init_/tcp_tick_) << T_SRTT_BITS; likewise rttvar.
        self.t_srtt = ((p.srtt_init / p.tcp_tick) as i32) << T_SRTT_BITS;
        self.t_rttvar = ((p.rttvar_init / p.tcp_tick) as i32) << T_RTTVAR_BITS;
        self.tzero = 0.0;
        self.rcvrate = 0.0;
        self.first_pkt_rcvd = false;
        self.next_send = Some(after(now, self.s / self.rate));
        self.nfb_deadline = Some(after(now, 2.0 * self.s / self.rate));
        self.last_send = Some(now);
    }

    /// `nextpkt()` called from `recv()` or the no-feedback timer: a packet
    /// now, and the send timer restarted from it. If the send timer fired
    /// at this very instant (a tie: in slow start the rate is a whole
    /// number of packets per RTT, so the timer and the report often fall
    /// on the same nanosecond), that packet stands for this one: ns-2
    /// handles the report first there (one packet at 1.136333 s on the
    /// cross-check path, the timer rescheduled), and sending a second one
    /// would put an extra packet in the next X_recv.
    fn nextpkt_now(&mut self, now: Instant) {
        if self.last_send == Some(now) {
            self.after_send(now);
        } else {
            self.next_send = Some(now);
        }
    }

    /// `initial_rate()` with `rate_init_option_ 2`: `rfc3390()`, 4, 3 or 2
    /// packets for s <= 1095, < 2190, else.
    fn rfc3390(&self) -> f64 {
        if self.s <= 1095.0 {
            4.0
        } else if self.s < 2190.0 {
            3.0
        } else {
            2.0
        }
    }

    /// The second half of `nextpkt()` (after `sendpkt()`): the interval to
    /// the next packet, s/xrate, with `slow_increase_`'s per-packet ramp
    /// (`oldrate_ += delta_`, no damping) or `ca_`'s damping
    /// (`rate_ * sqrtrtt_/sqrt(rttcur_)`). `None` if xrate <= SMALLFLOAT
    /// (ns-2 then stops its send timer).
    pub(crate) fn after_send(&mut self, now: Instant) {
        self.last_send = Some(now);
        let xrate = if self.prm.slow_increase
            && self.round_id > 2
            && self.rate_change == RateChange::SlowStart
            && self.oldrate + SMALLFLOAT < self.rate
        {
            self.oldrate += self.delta;
            self.oldrate
        } else {
            self.x_inst()
        };
        self.next_send = if xrate > SMALLFLOAT {
            let next = self.s / xrate;
            Some(after(now, next.max(SMALLFLOAT)))
        } else {
            None
        };
    }

    /// The pacing rate `nextpkt()` uses outside slow_increase_'s ramp.
    pub(crate) fn x_inst(&self) -> f64 {
        if self.ca {
            self.rate * self.sqrtrtt / self.rttcur.sqrt()
        } else {
            self.rate
        }
    }

    /// `update_rtt(tao, now)` with the sample `r` = now - tao: the TCP
    /// estimator in ticks of `tcp_tick_` behind `tzero_` (floored at
    /// `minrto_`), and the `df_` filters of `rtt_` and `sqrtrtt_`.
    fn update_rtt(&mut self, r: f64) {
        let tick = self.prm.tcp_tick;
        let mut t_rtt = (r / tick + 0.5) as i32;
        if t_rtt == 0 {
            t_rtt = 1;
        }
        if self.t_srtt != 0 {
            // `register short rtt_delta`.
            let mut rtt_delta = t_rtt.wrapping_sub(self.t_srtt >> T_SRTT_BITS) as i16;
            self.t_srtt = self.t_srtt.wrapping_add(i32::from(rtt_delta));
            if self.t_srtt <= 0 {
                self.t_srtt = 1;
            }
            if rtt_delta < 0 {
                rtt_delta = rtt_delta.wrapping_neg();
            }
            rtt_delta = rtt_delta.wrapping_sub((self.t_rttvar >> T_RTTVAR_BITS) as i16);
            self.t_rttvar = self.t_rttvar.wrapping_add(i32::from(rtt_delta));
            if self.t_rttvar <= 0 {
                self.t_rttvar = 1;
            }
        } else {
            self.t_srtt = t_rtt << T_SRTT_BITS;
            self.t_rttvar = t_rtt << (T_RTTVAR_BITS - 1);
        }
        let t_rtxcur = f64::from(
            ((self.t_rttvar << (RTTVAR_EXP + (T_SRTT_BITS - T_RTTVAR_BITS))) + self.t_srtt)
                >> T_SRTT_BITS,
        ) * tick;
        self.tzero = t_rtxcur.max(self.prm.min_rto);
        let df = self.prm.df;
        if self.rtt > 0.0 {
            self.rtt = df * self.rtt + (1.0 - df) * r;
            self.sqrtrtt = df * self.sqrtrtt + (1.0 - df) * r.sqrt();
        } else {
            self.rtt = r;
            self.sqrtrtt = r.sqrt();
        }
        self.rttcur = r;
    }

    /// `TfrcAgent::recv()`: a report with receive rate `x_recv` (bytes/s)
    /// and loss event rate `p`, RTT sample `r` seconds.
    pub(crate) fn recv(&mut self, now: Instant, fb: &TfrcFeedback, r: f64) {
        let t = secs(now);
        self.round_id += 1;
        if self.round_id > 1 && fb.x_recv > 0.0 {
            // ss_maxrate_ = maxrate_ = 2*rate_since_last_report*size_
            // (conservative_ 0).
            self.ss_maxrate = 2.0 * fb.x_recv;
            self.maxrate = 2.0 * fb.x_recv;
        } else {
            self.ss_maxrate = 0.0;
            self.maxrate = 0.0;
        }
        self.update_rtt(r);
        self.rcvrate = p_to_b(fb.p, self.rtt, self.tzero, self.s, self.b);
        // "if we get no more feedback for some time, cut rate in half":
        // max(2 rtt_, 2 size_/rate_), with the rate before this report.
        let nfb = (2.0 * self.rtt).max(2.0 * self.s / self.rate);
        self.nfb_deadline = Some(after(now, nfb));
        if !self.first_pkt_rcvd {
            self.first_pkt_rcvd = true;
            self.slowstart(t);
            self.nextpkt_now(now);
        } else if self.rate_change == RateChange::SlowStart {
            if fb.p > 0.0 {
                // Out of slow start at the first loss: rate_ = rcvrate,
                // with no cap from the receive rate.
                self.rate_change = RateChange::OutOfSlowStart;
                self.rate = self.rcvrate;
                self.oldrate = self.rcvrate;
            } else {
                self.slowstart(t);
                self.nextpkt_now(now);
            }
        } else if self.rcvrate > self.rate {
            self.increase_rate(t);
        } else {
            self.decrease_rate(t);
        }
    }

    /// `rate_` and `ss_maxrate_` equal within [`Ns2Params::ss_tie`]: once
    /// slow start has set `rate_ = ss_maxrate_` = 2 X_recv on a saturated
    /// bottleneck, every later report measures the same X_recv (the link
    /// rate), and which of `rate_ < ss_maxrate_` (hold at the cap) and
    /// `rate_ > ss_maxrate_` (halve) holds is decided by the last bits of
    /// the two measurements. ns-2's event times are doubles accumulated
    /// in the same steps, so its X_recv repeats to ~1e-14 and it holds the
    /// cap (50 Mb/s, 150 ms, 2 BDP: rate_ stays at 2 X_recv from 8.2 to
    /// 9.4 s, and stays so with the delay moved by 1-10 µs); satcc's
    /// arrival times are whole nanoseconds, so X_recv differs by up to
    /// 1 ns per report interval between reports, and without the tie the
    /// rate halved on the first report below the previous one (goodput
    /// +65 % against ns-2 on that path: the halving delays the overshoot
    /// into the 2-BDP buffer, which then ends in one loss event instead of
    /// three).
    fn ss_tie(&self) -> bool {
        (self.rate - self.ss_maxrate).abs() <= self.prm.ss_tie * self.rate.max(self.ss_maxrate)
    }

    /// `TfrcAgent::slowstart()`.
    fn slowstart(&mut self, now: f64) {
        let initrate = self.rfc3390() * self.s / self.rtt;
        // A bulk source is never data-limited (datalimited_ 0,
        // lastlimited_ 0.0), but `lastlimited_ > now - 1.5*rtt_` holds in
        // the first 1.5 RTT of the run: reproduced as ns-2 has it.
        let limited_recently = 0.0 > now - 1.5 * self.rtt;
        if self.round_id <= 1 || (self.round_id == 2 && self.rfc3390() > 1.0) {
            // "We don't have a good rate report yet, so keep to the
            // initial rate."
            self.oldrate = self.rate;
            if self.rate < initrate {
                self.rate = initrate;
            }
            self.delta = (self.rate - self.oldrate) / (self.rate * self.rtt / self.s);
            self.last_change = now;
        } else if self.ss_maxrate > 0.0 {
            if limited_recently && self.ss_maxrate < initrate {
                self.oldrate = self.rate;
                if self.rate < initrate {
                    self.rate = initrate;
                }
                self.delta = (self.rate - self.oldrate) / (self.rate * self.rtt / self.s);
                self.last_change = now;
            } else if self.rate < self.ss_maxrate
                && !self.ss_tie()
                && now - self.last_change > self.rtt - TIE
            {
                // Multiply the rate by ssmult_, if maxrate allows.
                self.oldrate = self.rate;
                if self.prm.ssmult * self.rate > self.ss_maxrate {
                    self.rate = self.ss_maxrate;
                } else {
                    self.rate *= self.prm.ssmult;
                }
                if self.rate < self.s / self.rtt {
                    self.rate = self.s / self.rtt;
                }
                self.delta = (self.rate - self.oldrate) / (self.rate * self.rtt / self.s);
                self.last_change = now;
            } else if self.rate > self.ss_maxrate && !self.ss_tie() {
                // Limited by maxrate.
                self.rate = self.ss_maxrate / 2.0;
                self.oldrate = self.rate;
                self.delta = 0.0;
                self.last_change = now;
            }
        } else {
            // ss_maxrate <= 0: the receive rate is 0.
            self.oldrate = self.rate;
            self.rate = self.s / self.rtt;
            self.delta = 0.0;
            self.last_change = now;
        }
    }

    /// `TfrcAgent::increase_rate()`: at most s/rtt_ x min(2, elapsed/rtt_)
    /// more per report, toward min(rcvrate, max(maxrate_, s/rtt_)).
    fn increase_rate(&mut self, now: f64) {
        let mult = ((now - self.last_change) / self.rtt).min(2.0);
        self.rate += (self.s / self.rtt) * mult;
        let floor = if 0.0 > now - 1.5 * self.rtt {
            // datalimited_ || lastlimited_ > now - 1.5*rtt_ (see slowstart).
            self.rfc3390() * self.s / self.rtt
        } else {
            self.s / self.rtt
        };
        let maximumrate = self.maxrate.max(floor).min(self.rcvrate);
        self.rate = self.rate.min(maximumrate);
        self.rate_change = RateChange::CongAvoid;
        self.last_change = now;
        self.heavyrounds = 0;
    }

    /// `TfrcAgent::decrease_rate()`: straight to rcvrate, capped at
    /// max(maxrate_, s/rtt_) after `maxHeavyRounds_` reports above it.
    fn decrease_rate(&mut self, now: f64) {
        self.rate = self.rcvrate;
        let maximumrate = self.maxrate.max(self.s / self.rtt);
        if self.rate > maximumrate {
            self.heavyrounds += 1;
        } else {
            self.heavyrounds = 0;
        }
        if self.heavyrounds > self.prm.max_heavy_rounds {
            self.rate = self.rate.min(maximumrate);
        }
        self.rate_change = RateChange::RateDecrease;
        self.last_change = now;
    }

    /// `reduce_rate_on_no_feedback()` for a source that is not
    /// data-limited: halve rate_, leave slow start's state alone, restart
    /// the timer at max(2 rtt_, 2 s/rate_) and send a packet now.
    pub(crate) fn on_nofeedback(&mut self, now: Instant) {
        if self.rate_change != RateChange::SlowStart {
            self.rate_change = RateChange::RateDecrease;
        }
        self.rate *= 0.5;
        self.round_id += 1;
        let t = (2.0 * self.rtt).max(2.0 * self.s / self.rate);
        self.nfb_deadline = Some(after(now, t));
        self.nextpkt_now(now);
    }
}

/// The ns-2 engine of [`super::TfrcSender`]: `TfrcAgent` with the
/// application side, and what [`super::TfrcSender::stats`] reports,
/// cached as the RFC engine caches it (X, X_recv and p as of the last
/// report or timer, R and X_Bps from the agent at the last report).
#[derive(Debug)]
pub struct Ns2Engine {
    pub(super) src: Source,
    agent: Ns2Sender,
    /// When the sender was made: its first packet is due then (the
    /// agent's `start()` runs at the first send).
    created: Instant,
    x: f64,
    x_recv: f64,
    p: f64,
    r: Option<Duration>,
    x_calc: Option<f64>,
}

impl Ns2Engine {
    pub(super) fn new(src: Source, now: Instant) -> Self {
        let agent = Ns2Sender::new(
            src.cfg.ns2.clone(),
            src.s,
            src.cfg.b,
            src.cfg.oscillation_damping,
        );
        Ns2Engine {
            x: src.s,
            src,
            agent,
            created: now,
            x_recv: 0.0,
            p: 0.0,
            r: None,
            x_calc: None,
        }
    }

    /// A well-formed report (`TfrcAgent::recv`), X_recv and p clamped,
    /// with its RTT sample.
    pub(super) fn on_feedback(&mut self, now: Instant, fb: &TfrcFeedback, r_sample: Duration) {
        let ns = &mut self.agent;
        ns.recv(now, fb, r_sample.as_secs_f64());
        self.p = fb.p;
        self.x_recv = fb.x_recv;
        self.x = ns.rate;
        self.r = (ns.rtt > 0.0).then(|| Duration::from_secs_f64(ns.rtt).max(MIN_RTT));
        self.x_calc = (fb.p > 0.0).then_some(ns.rcvrate);
    }

    /// The no-feedback timer, if due.
    pub(super) fn handle_timeout(&mut self, now: Instant) {
        let ns = &mut self.agent;
        if ns.nfb_deadline.is_some_and(|t| now >= t) {
            self.src.stats.nofeedback_expiries += 1;
            ns.on_nofeedback(now);
            self.x = ns.rate;
        }
    }

    /// `start()` sends the first packet; then `nextpkt()` whenever the
    /// send timer is due.
    pub(super) fn poll_transmit(&mut self, now: Instant) -> Option<TfrcData> {
        if !self.src.has_data() {
            return None;
        }
        let ns = &mut self.agent;
        if self.src.stats.packets_sent == 0 {
            ns.start(now);
        } else if ns.next_send.is_some_and(|t| now >= t) {
            ns.after_send(now);
        } else {
            return None;
        }
        self.x = ns.rate;
        let (rtt, t_rto) = if ns.rtt > 0.0 {
            (
                Some(Duration::from_secs_f64(ns.rtt).max(MIN_RTT)),
                Some(Duration::from_secs_f64(ns.tzero)),
            )
        } else {
            (None, None)
        };
        let len = self.src.take_payload();
        Some(self.src.packet(now, len, rtt, t_rto))
    }

    /// The send timer or the no-feedback timer, whichever is first; before
    /// the first packet, the time the sender was made.
    pub(super) fn poll_timeout(&self) -> Option<Instant> {
        if self.src.stats.packets_sent == 0 {
            return Some(self.created);
        }
        let ns = &self.agent;
        let send = ns.next_send.filter(|_| self.src.has_data());
        match (send, ns.nfb_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub(super) fn stats(&self) -> TfrcSenderStats {
        self.src
            .report(self.x, self.x_recv, self.p, self.r, self.x_calc)
    }

    /// (X, X_recv, p) of [`Self::stats`].
    pub(super) fn rate_state(&self) -> (f64, f64, f64) {
        (self.x, self.x_recv, self.p)
    }

    pub(super) fn x(&self) -> f64 {
        self.x
    }

    pub(super) fn p(&self) -> f64 {
        self.p
    }

    pub(super) fn x_inst(&self) -> f64 {
        self.agent.x_inst()
    }

    /// The agent's `NoFeedbacktimer_`; before `start()` set it, two
    /// seconds after the sender was made (RFC 5348 §4.2, as the RFC
    /// engine).
    pub(super) fn nofeedback_deadline(&self) -> Instant {
        self.agent
            .nfb_deadline
            .unwrap_or(self.created + Duration::from_secs(2))
    }
}
