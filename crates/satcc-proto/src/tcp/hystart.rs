//! How a CUBIC sender leaves slow start before it overshoots the path:
//!
//! * [`SlowStart::Standard`]: RFC 5681 §3.1, until ssthresh or a loss (RFC
//!   9438 §4.10 without HyStart++);
//! * [`SlowStart::Hystart`]: HyStart as Linux's `net/ipv4/tcp_cubic.c` runs
//!   it (on by default there: `hystart = 1`, `hystart_detect = 3`), the
//!   ACK-train and delay-increase exits of `hystart_update()`;
//! * [`SlowStart::HystartPp`]: HyStart++ (RFC 9406 §4), the delay-increase
//!   exit into Conservative Slow Start (CSS) and from CSS into congestion
//!   avoidance after `CSS_ROUNDS` rounds.
//!
//! Both end slow start by setting ssthresh to cwnd (tcp_cubic.c
//! `tp->snd_ssthresh = tcp_snd_cwnd(tp)`; RFC 9406 §4.2 "enter congestion
//! avoidance by setting the ssthresh to the current cwnd"); the sender
//! then grows the window by CUBIC's congestion avoidance.

use crate::time::{Duration, Instant};

/// Which slow start a CUBIC sender runs.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum SlowStart {
    /// RFC 5681 §3.1: +1 segment per ACK until ssthresh or a loss.
    #[default]
    Standard,
    /// Linux tcp_cubic.c's HyStart.
    Hystart(HystartConfig),
    /// RFC 9406 HyStart++.
    HystartPp(HystartPpConfig),
}

/// HyStart's parameters: tcp_cubic.c's module parameters and constants,
/// at the kernel's defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HystartConfig {
    /// The ACK-train exit (`hystart_detect & HYSTART_ACK_TRAIN`, on).
    pub ack_train: bool,
    /// The delay-increase exit (`hystart_detect & HYSTART_DELAY`, on).
    pub delay: bool,
    /// HyStart runs only from this cwnd up (`hystart_low_window = 16`).
    pub low_window: f64,
    /// Rounds are counted below [`Self::low_window`] too, as Linux does
    /// since commit 25c1a9ca53db ("tcp_cubic: fix incorrect HyStart round
    /// start detection", 6.14 and the stable kernels from March 2025):
    /// `hystart_update()` resets the round when snd_una passes end_seq
    /// and only then returns below hystart_low_window, so each round
    /// starts with the first ACK of a flight. `false` is Linux 5.16 to
    /// 6.13 (commit 4e1fddc98d25), where the low-window test came first:
    /// the first round starts at the ACK that brings cwnd to 16, in the
    /// middle of a flight, and every later round starts mid-flight, its
    /// first RTT samples already carrying half a flight of queue (on the
    /// `geo` preset satcc then left slow start at cwnd 136 where the
    /// kernel, 6.18, leaves at 1289; docs/validation.md).
    pub rounds_below_low_window: bool,
    /// ACKs at most this far apart make a train (`hystart_ack_delta_us =
    /// 2000`).
    pub ack_delta: Duration,
    /// RTT samples a round takes before the delay test
    /// (`HYSTART_MIN_SAMPLES = 8`).
    pub min_samples: u32,
    /// The delay threshold delay_min/8 clamped to [`Self::delay_thresh_min`],
    /// [`Self::delay_thresh_max`] (`HYSTART_DELAY_MIN` 4 ms,
    /// `HYSTART_DELAY_MAX` 16 ms).
    pub delay_thresh_min: Duration,
    /// See [`Self::delay_thresh_min`].
    pub delay_thresh_max: Duration,
    /// The sender paces (`sk_pacing_status != SK_PACING_NONE`): the
    /// ACK-train threshold is then delay_min, else delay_min/2. satcc's
    /// CUBIC does not pace, nor does Linux's without the fq qdisc.
    pub paced: bool,
    /// `sk_gso_max_size`, bytes (65536, `GSO_LEGACY_MAX_SIZE`), for
    /// `hystart_ack_delay()`'s allowance 4·gso_max_size/pacing_rate,
    /// capped at 1 ms.
    pub gso_max_size: u64,
}

impl Default for HystartConfig {
    fn default() -> Self {
        HystartConfig {
            ack_train: true,
            delay: true,
            low_window: 16.0,
            rounds_below_low_window: true,
            ack_delta: Duration::from_micros(2000),
            min_samples: 8,
            delay_thresh_min: Duration::from_millis(4),
            delay_thresh_max: Duration::from_millis(16),
            paced: false,
            gso_max_size: 65536,
        }
    }
}

/// HyStart++'s constants (RFC 9406 §4.3, the RECOMMENDED values).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HystartPpConfig {
    /// `MIN_RTT_THRESH` (4 ms).
    pub min_rtt_thresh: Duration,
    /// `MAX_RTT_THRESH` (16 ms).
    pub max_rtt_thresh: Duration,
    /// `MIN_RTT_DIVISOR` (8).
    pub min_rtt_divisor: u32,
    /// `N_RTT_SAMPLE` (8).
    pub n_rtt_sample: u32,
    /// `CSS_GROWTH_DIVISOR` (4).
    pub css_growth_divisor: f64,
    /// `CSS_ROUNDS` (5).
    pub css_rounds: u32,
    /// L, the most segments one ACK may add (§4.2: "L = infinity if paced,
    /// L = 8 if non-paced"; satcc's CUBIC does not pace: 8).
    pub l: u64,
}

impl Default for HystartPpConfig {
    fn default() -> Self {
        HystartPpConfig {
            min_rtt_thresh: Duration::from_millis(4),
            max_rtt_thresh: Duration::from_millis(16),
            min_rtt_divisor: 8,
            n_rtt_sample: 8,
            css_growth_divisor: 4.0,
            css_rounds: 5,
            l: 8,
        }
    }
}

/// What slow start is told about one ACK of new data.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SsAck {
    pub now: Instant,
    /// This ACK's RTT sample (tcp_cubic.c `sample->rtt_us`).
    pub rtt: Option<Duration>,
    /// Smoothed RTT (Linux's pacing rate, hence `hystart_ack_delay()`).
    pub srtt: Option<Duration>,
    /// SND.UNA after the ACK and SND.NXT (one past the highest segment
    /// sent), in segments.
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// Payload bytes of a segment.
    pub mss: u64,
}

/// The state of a [`SlowStart`].
#[derive(Clone, Debug, Default)]
pub(crate) enum SlowStartState {
    #[default]
    Standard,
    Hystart(Box<HystartState>),
    HystartPp(Box<HystartPpState>),
}

/// tcp_cubic.c `struct bictcp`'s HyStart fields.
#[derive(Clone, Debug)]
pub(crate) struct HystartState {
    pub cfg: HystartConfig,
    /// `found`: slow start was ended by HyStart.
    pub found: bool,
    /// `delay_min`: the smallest RTT sample since the connection started
    /// or the last timeout.
    pub delay_min: Option<Duration>,
    /// `round_start`, `last_ack`, `end_seq`, `curr_rtt`, `sample_cnt`.
    round_start: Instant,
    last_ack: Instant,
    end_seq: u64,
    curr_rtt: Option<Duration>,
    sample_cnt: u32,
}

/// RFC 9406 §4.2's variables.
#[derive(Clone, Debug)]
pub(crate) struct HystartPpState {
    pub cfg: HystartPpConfig,
    last_round_min_rtt: Option<Duration>,
    current_round_min_rtt: Option<Duration>,
    rtt_sample_count: u32,
    window_end: Option<u64>,
    /// `cssBaselineMinRtt`; `Some` while in CSS.
    pub css_baseline_min_rtt: Option<Duration>,
    css_round_count: u32,
    /// The ACK being processed grows cwnd at CSS's rate: RFC 9406 §4.2
    /// grows cwnd before its checks, so the ACK that enters (or leaves)
    /// CSS still grows at the rate it arrived under.
    css_growth: bool,
    /// HyStart++ is over: a loss, a timeout or CSS's end (§4.3: it runs
    /// for the initial slow start only).
    pub done: bool,
}

impl SlowStartState {
    pub fn new(s: SlowStart) -> Self {
        match s {
            SlowStart::Standard => SlowStartState::Standard,
            SlowStart::Hystart(cfg) => SlowStartState::Hystart(Box::new(HystartState {
                cfg,
                found: false,
                delay_min: None,
                // cubictcp_init() -> bictcp_hystart_reset(): end_seq =
                // snd_nxt before any data, so the first ACK of data starts
                // a round.
                round_start: Instant::ZERO,
                last_ack: Instant::ZERO,
                end_seq: 0,
                curr_rtt: None,
                sample_cnt: 0,
            })),
            SlowStart::HystartPp(cfg) => SlowStartState::HystartPp(Box::new(HystartPpState {
                cfg,
                last_round_min_rtt: None,
                current_round_min_rtt: None,
                rtt_sample_count: 0,
                window_end: None,
                css_baseline_min_rtt: None,
                css_round_count: 0,
                css_growth: false,
                done: false,
            })),
        }
    }

    /// One ACK of new data in slow start (cwnd < ssthresh), before the
    /// window grows; returns the ssthresh that ends slow start, if it
    /// ends here.
    pub fn on_ack(&mut self, cwnd: f64, a: SsAck) -> Option<f64> {
        match self {
            SlowStartState::Standard => None,
            SlowStartState::Hystart(h) => h.on_ack(cwnd, a),
            SlowStartState::HystartPp(h) => h.on_ack(cwnd, a),
        }
    }

    /// How much one ACK of `acked` segments opens the window in slow
    /// start.
    pub fn increase(&self, acked: u64) -> f64 {
        match self {
            // RFC 5681 §3.1 eq. (2) with ns-2's count of ACKs: one
            // segment per ACK (tcp_cubic.c's tcp_slow_start() adds the
            // segments acked; with an ACK per segment, the same).
            SlowStartState::Standard | SlowStartState::Hystart(_) => 1.0,
            // RFC 9406 §4.3: once HyStart++ is over (a loss, a timeout,
            // CSS's end), later slow starts are RFC 5681's.
            SlowStartState::HystartPp(h) if h.done => 1.0,
            SlowStartState::HystartPp(h) => {
                // RFC 9406 §4.2: cwnd += min(N, L·SMSS), divided by
                // CSS_GROWTH_DIVISOR in CSS.
                let inc = acked.min(h.cfg.l).max(1) as f64;
                if h.css_growth {
                    inc / h.cfg.css_growth_divisor
                } else {
                    inc
                }
            }
        }
    }

    /// A fast retransmit (a loss in slow start or later).
    pub fn on_congestion(&mut self) {
        if let SlowStartState::HystartPp(h) = self {
            // RFC 9406 §4.2: a loss in slow start or CSS ends them;
            // §4.3: HyStart++ for the initial slow start only.
            h.done = true;
            h.css_baseline_min_rtt = None;
        }
        // tcp_cubic.c keeps `found` and `delay_min` over a fast recovery
        // (only cubictcp_state(TCP_CA_Loss) resets them).
    }

    /// A retransmission timeout.
    pub fn on_rto(&mut self) {
        match self {
            SlowStartState::Standard => {}
            SlowStartState::Hystart(h) => {
                // cubictcp_state(TCP_CA_Loss): bictcp_reset() clears
                // `found` and `delay_min`; bictcp_hystart_reset() opens a
                // round at the next call.
                h.found = false;
                h.delay_min = None;
                h.curr_rtt = None;
                h.sample_cnt = 0;
                h.end_seq = 0;
            }
            SlowStartState::HystartPp(h) => {
                // RFC 9406 §4.3: standard slow start after a timeout.
                h.done = true;
                h.css_baseline_min_rtt = None;
            }
        }
    }
}

impl HystartState {
    /// `hystart_ack_delay()`: min(1 ms, 4·gso_max_size / pacing_rate),
    /// Linux's pacing rate in slow start being 2·cwnd·mss/srtt
    /// (tcp_update_pacing_rate(), `sysctl_tcp_pacing_ss_ratio` 200 %).
    fn ack_delay(&self, cwnd: f64, a: &SsAck) -> Duration {
        let cap = Duration::from_millis(1);
        let Some(srtt) = a.srtt.filter(|s| s.0 > 0) else {
            return Duration::ZERO;
        };
        let rate = 2.0 * cwnd * a.mss as f64 / srtt.as_secs_f64();
        if rate <= 0.0 {
            return Duration::ZERO;
        }
        let d = (4 * self.cfg.gso_max_size) as f64 / rate;
        Duration::from_secs_f64(d).min(cap)
    }

    /// `cubictcp_acked()` and `hystart_update()`.
    fn on_ack(&mut self, cwnd: f64, a: SsAck) -> Option<f64> {
        let rtt = a.rtt?;
        // cubictcp_acked(): `if (delay == 0) delay = 1` (µs).
        let delay = rtt.max(Duration::from_micros(1));
        let delay_min = match self.delay_min {
            Some(m) if m <= delay => m,
            _ => delay,
        };
        self.delay_min = Some(delay_min);
        if self.found {
            return None;
        }
        let low = cwnd < self.cfg.low_window;
        if low && !self.cfg.rounds_below_low_window {
            // Linux 5.16-6.13: cubictcp_acked() tests hystart_low_window
            // before it calls hystart_update(), so no round starts below.
            return None;
        }
        // hystart_update(): a new round once snd_una passes end_seq.
        if a.snd_una > self.end_seq {
            self.round_start = a.now;
            self.last_ack = a.now;
            self.end_seq = a.snd_nxt;
            self.curr_rtt = None;
            self.sample_cnt = 0;
        }
        if low {
            // Linux 6.14+: "hystart triggers when cwnd is larger than
            // some threshold", tested after the round's reset.
            return None;
        }
        if self.cfg.ack_train && a.now.saturating_since(self.last_ack) <= self.cfg.ack_delta {
            // The first exit: ACKs closely spaced for longer than
            // delay_min/2 (delay_min unpaced) since the round began.
            self.last_ack = a.now;
            let mut threshold = delay_min + self.ack_delay(cwnd, &a);
            if !self.cfg.paced {
                threshold = Duration(threshold.0 >> 1);
            }
            if a.now.saturating_since(self.round_start) > threshold {
                self.found = true;
                return Some(cwnd);
            }
        }
        if self.cfg.delay {
            // The second: the round's smallest RTT, after
            // HYSTART_MIN_SAMPLES samples, above delay_min +
            // clamp(delay_min/8, 4 ms, 16 ms).
            let cur = self.curr_rtt.map_or(delay, |c| c.min(delay));
            self.curr_rtt = Some(cur);
            if self.sample_cnt < self.cfg.min_samples {
                self.sample_cnt += 1;
            } else {
                let thresh = Duration(delay_min.0 >> 3)
                    .max(self.cfg.delay_thresh_min)
                    .min(self.cfg.delay_thresh_max);
                if cur > delay_min + thresh {
                    self.found = true;
                    return Some(cwnd);
                }
            }
        }
        None
    }
}

impl HystartPpState {
    /// RFC 9406 §4.2, one ACK in slow start or CSS.
    fn on_ack(&mut self, cwnd: f64, a: SsAck) -> Option<f64> {
        if self.done {
            return None;
        }
        let c = self.cfg;
        self.css_growth = self.css_baseline_min_rtt.is_some();
        // "When windowEnd is ACKed, the current round ends and windowEnd
        // is set to SND.NXT."
        let round_over = match self.window_end {
            Some(w) => a.snd_una > w,
            None => true,
        };
        if round_over {
            if self.window_end.is_some() && self.css_baseline_min_rtt.is_some() {
                self.css_round_count += 1;
                // "If CSS_ROUNDS rounds are complete, enter congestion
                // avoidance by setting the ssthresh to the current cwnd."
                if self.css_round_count >= c.css_rounds {
                    self.done = true;
                    self.css_baseline_min_rtt = None;
                    return Some(cwnd);
                }
            }
            self.window_end = Some(a.snd_nxt);
            self.last_round_min_rtt = self.current_round_min_rtt;
            self.current_round_min_rtt = None;
            self.rtt_sample_count = 0;
        }
        if let Some(r) = a.rtt {
            self.current_round_min_rtt = Some(self.current_round_min_rtt.map_or(r, |m| m.min(r)));
            self.rtt_sample_count += 1;
        }
        if self.rtt_sample_count < c.n_rtt_sample {
            return None;
        }
        let cur = self.current_round_min_rtt?;
        match self.css_baseline_min_rtt {
            None => {
                let last = self.last_round_min_rtt?;
                // RttThresh = max(MIN_RTT_THRESH, min(lastRoundMinRTT /
                // MIN_RTT_DIVISOR, MAX_RTT_THRESH)).
                let thresh = Duration(last.0 / u64::from(c.min_rtt_divisor.max(1)))
                    .min(c.max_rtt_thresh)
                    .max(c.min_rtt_thresh);
                if cur >= last + thresh {
                    // Exit slow start, enter CSS.
                    self.css_baseline_min_rtt = Some(cur);
                    self.css_round_count = 0;
                }
            }
            Some(base) => {
                if cur < base {
                    // "the slow start exit was spurious": resume slow
                    // start.
                    self.css_baseline_min_rtt = None;
                }
            }
        }
        None
    }
}
