//! BBR v1 as Linux's `net/ipv4/tcp_bbr.c` runs it, with the delivery-rate
//! estimator of `net/ipv4/tcp_rate.c` (draft-cheng-iccrg-delivery-rate-
//! estimation) and the windowed max filter of `lib/win_minmax.c`; the state
//! machine and gains as draft-cardwell-iccrg-bbr-congestion-control
//! describes them (§4.3 STARTUP/DRAIN/PROBE_BW/PROBE_RTT).
//!
//! Units: bandwidth in segments per second, windows in segments (the
//! kernel's `bw` is packets per µs << 24 and its cwnd is packets; the
//! sender here counts segments, so the same arithmetic applies).
//!
//! Not modelled (stated in docs/validation.md "BBR"): the long-term
//! bandwidth sampling for policers (`bbr_lt_bw_sampling`, which engages
//! only at loss rates above 20 %), the ACK-aggregation allowance
//! (`bbr_extra_acked`), idle restarts.

use std::collections::VecDeque;

use crate::time::{Duration, Instant};

/// BBR's parameters, the kernel's defaults (tcp_bbr.c module constants).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BbrConfig {
    /// STARTUP pacing and cwnd gain: `bbr_high_gain = BBR_UNIT * 2885 /
    /// 1000 + 1`, i.e. 2/ln 2 (draft §4.3.1.1) rounded up in 1/256 units.
    pub high_gain: f64,
    /// DRAIN pacing gain: `bbr_drain_gain = BBR_UNIT * 1000 / 2885`.
    pub drain_gain: f64,
    /// PROBE_BW cwnd gain: `bbr_cwnd_gain = BBR_UNIT * 2`.
    pub cwnd_gain: f64,
    /// PROBE_BW pacing gain cycle: `bbr_pacing_gain[]` (draft §4.3.3).
    pub cycle: [f64; 8],
    /// Length of the max-bandwidth filter in round trips: `bbr_bw_rtts =
    /// CYCLE_LEN + 2`.
    pub bw_rtts: u64,
    /// Length of the min_rtt filter: `bbr_min_rtt_win_sec = 10`.
    pub min_rtt_win: Duration,
    /// Time PROBE_RTT holds the window at its minimum:
    /// `bbr_probe_rtt_mode_ms = 200`.
    pub probe_rtt_time: Duration,
    /// PROBE_RTT runs when the min_rtt filter expires (tcp_bbr.c always;
    /// false is an experiment's switch: the filter then takes the newest
    /// sample and the mode never drops to 4 segments).
    pub probe_rtt: bool,
    /// cwnd floor and PROBE_RTT's window: `bbr_cwnd_min_target = 4`.
    pub cwnd_min_target: f64,
    /// Growth that counts as still growing: `bbr_full_bw_thresh` = 1.25.
    pub full_bw_thresh: f64,
    /// Rounds without such growth that end STARTUP: `bbr_full_bw_cnt = 3`.
    pub full_bw_cnt: u32,
    /// Pacing below the estimate: `bbr_pacing_margin_percent = 1`.
    pub pacing_margin: f64,
    /// PROBE_BW starts at a random phase other than the 0.75 one
    /// (`bbr_cycle_rand = 7`, `get_random_u32_below`); the draw here comes
    /// from this seed so that runs repeat.
    pub seed: u64,
    /// RTT the pacing rate starts from before any sample (the kernel's
    /// `bbr_init_pacing_rate_from_rtt` uses the handshake's SRTT, or 1 ms).
    pub initial_rtt: Option<Duration>,
    /// Data segments sent before pacing applies (tcp_output.c
    /// `tcp_update_skb_after_send`: `tp->data_segs_out >= 10`).
    pub unpaced_segments: u64,
    /// Segments the sender may put in one burst (the kernel's TSO/GSO
    /// goal, `bbr_tso_segs_goal`); cwnd adds 3 of them
    /// (`bbr_quantization_budget`). `None`: computed as the kernel does,
    /// from the pacing rate (1 ms of data, at least 2 segments above
    /// 1.2 Mb/s, else 1).
    pub tso_segs: Option<u32>,
}

impl Default for BbrConfig {
    fn default() -> Self {
        BbrConfig {
            // BBR_UNIT (256) * 2885 / 1000 + 1 = 739 in integer arithmetic.
            high_gain: 739.0 / 256.0,
            // BBR_UNIT * 1000 / 2885 = 88.
            drain_gain: 88.0 / 256.0,
            cwnd_gain: 2.0,
            cycle: [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
            bw_rtts: 10,
            min_rtt_win: Duration::from_secs(10),
            probe_rtt_time: Duration::from_millis(200),
            probe_rtt: true,
            cwnd_min_target: 4.0,
            full_bw_thresh: 1.25,
            full_bw_cnt: 3,
            pacing_margin: 0.01,
            seed: 0,
            initial_rtt: None,
            unpaced_segments: 10,
            tso_segs: None,
        }
    }
}

/// BBR's modes (draft §4.3; tcp_bbr.c `enum bbr_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BbrMode {
    /// Ramp up quickly at 2/ln 2.
    Startup,
    /// Drain the queue STARTUP built.
    Drain,
    /// Cycle the pacing gain around the bandwidth estimate.
    ProbeBw,
    /// Cut inflight to 4 segments to see the path's min RTT.
    ProbeRtt,
}

/// The sender's loss-recovery state, as `icsk_ca_state` tells BBR.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum CaState {
    Open,
    Recovery,
    Loss,
}

/// `struct minmax` of lib/win_minmax.c: the best, 2nd best and 3rd best
/// samples of a window (Kathleen Nichols' algorithm).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MaxFilter {
    s: [(u64, f64); 3],
}

impl MaxFilter {
    pub fn get(&self) -> f64 {
        self.s[0].1
    }

    fn reset(&mut self, t: u64, v: f64) -> f64 {
        self.s = [(t, v); 3];
        v
    }

    /// `minmax_running_max()`.
    pub fn update(&mut self, win: u64, t: u64, v: f64) -> f64 {
        if v >= self.s[0].1 || t.saturating_sub(self.s[2].0) > win {
            return self.reset(t, v);
        }
        if v >= self.s[1].1 {
            self.s[1] = (t, v);
            self.s[2] = (t, v);
        } else if v >= self.s[2].1 {
            self.s[2] = (t, v);
        }
        // minmax_subwin_update()
        let dt = t.saturating_sub(self.s[0].0);
        if dt > win {
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = (t, v);
            if t.saturating_sub(self.s[0].0) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = (t, v);
            }
        } else if self.s[1].0 == self.s[0].0 && dt > win / 4 {
            self.s[1] = (t, v);
            self.s[2] = (t, v);
        } else if self.s[2].0 == self.s[1].0 && dt > win / 2 {
            self.s[2] = (t, v);
        }
        self.s[0].1
    }
}

/// What tcp_rate.c stores with each segment sent (`tcp_skb_cb->tx`).
#[derive(Clone, Copy, Debug)]
struct TxRecord {
    sent: Instant,
    first_sent: Instant,
    delivered_time: Instant,
    delivered: u64,
    app_limited: bool,
}

/// What the sender tells BBR about one ACK.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BbrAck {
    pub now: Instant,
    /// Segments this ACK newly delivered (cumulatively ACKed or SACKed).
    pub acked: u64,
    /// The most recently sent of the segments this ACK newly delivered
    /// (tcp_rate_skb_delivered() keeps the one with the largest
    /// `delivered`).
    pub latest: Option<u64>,
    /// The ACK's RTT sample.
    pub rtt: Option<Duration>,
    /// Segments in flight before and after the ACK.
    pub prior_inflight: u64,
    pub inflight: u64,
    /// Segments newly marked lost on this ACK.
    pub losses: u64,
    pub state: CaState,
}

/// BBR's state (tcp_bbr.c `struct bbr`) and the rate estimator's
/// (`struct tcp_sock` delivered, delivered_mstamp, first_tx_mstamp,
/// app_limited).
#[derive(Clone, Debug)]
pub(crate) struct BbrState {
    pub cfg: BbrConfig,
    pub mode: BbrMode,
    // tcp_rate.c
    delivered: u64,
    delivered_time: Instant,
    first_sent: Instant,
    app_limited: u64,
    tx: VecDeque<TxRecord>,
    tx_base: u64,
    // tcp_bbr.c
    pub bw: MaxFilter,
    pub rtt_cnt: u64,
    next_rtt_delivered: u64,
    pub round_start: bool,
    pub min_rtt: Option<Duration>,
    min_rtt_stamp: Instant,
    probe_rtt_done: Option<Instant>,
    probe_rtt_round_done: bool,
    /// PROBE_RTT ended on this ACK: cwnd goes back to `prior_cwnd`.
    probe_rtt_exit: bool,
    packet_conservation: bool,
    prev_ca_state: CaState,
    prior_cwnd: f64,
    pub full_bw_reached: bool,
    full_bw: f64,
    full_bw_cnt: u32,
    pub cycle_idx: usize,
    cycle_stamp: Instant,
    pub pacing_gain: f64,
    pub cwnd_gain: f64,
    /// Pacing rate, segments per second (`sk_pacing_rate` / mss).
    pub pacing_rate: f64,
    has_seen_rtt: bool,
    rng: u64,
}

impl BbrState {
    /// `bbr_init()` at time `now`, with `cwnd` the initial window.
    pub fn new(cfg: BbrConfig, now: Instant, cwnd: f64) -> Self {
        let mut s = BbrState {
            cfg,
            mode: BbrMode::Startup,
            delivered: 0,
            delivered_time: now,
            first_sent: now,
            app_limited: 0,
            tx: VecDeque::new(),
            tx_base: 0,
            bw: MaxFilter::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            round_start: false,
            min_rtt: None,
            min_rtt_stamp: now,
            probe_rtt_done: None,
            probe_rtt_round_done: false,
            probe_rtt_exit: false,
            packet_conservation: false,
            prev_ca_state: CaState::Open,
            prior_cwnd: 0.0,
            full_bw_reached: false,
            full_bw: 0.0,
            full_bw_cnt: 0,
            cycle_idx: 0,
            cycle_stamp: now,
            pacing_gain: cfg.high_gain,
            cwnd_gain: cfg.high_gain,
            pacing_rate: 0.0,
            has_seen_rtt: false,
            rng: cfg.seed ^ 0x9E37_79B9_7F4A_7C15,
        };
        // bbr_init_pacing_rate_from_rtt(): high_gain × cwnd / RTT, 1 ms
        // before any RTT is known.
        let rtt = cfg.initial_rtt.unwrap_or(Duration::from_millis(1));
        s.has_seen_rtt = cfg.initial_rtt.is_some();
        s.pacing_rate = s.rate(cwnd / rtt.as_secs_f64().max(1e-9), cfg.high_gain);
        s
    }

    /// `bbr_rate_bytes_per_sec()` in segments: bw × gain × (1 − margin).
    fn rate(&self, bw: f64, gain: f64) -> f64 {
        bw * gain * (1.0 - self.cfg.pacing_margin)
    }

    /// Deterministic stand-in for `get_random_u32_below(n)` (splitmix64).
    fn random_below(&mut self, n: u64) -> u64 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n.max(1)
    }

    /// `tcp_rate_skb_sent()`: segment `seq` leaves at `now` with `inflight`
    /// segments already in flight.
    pub fn on_send(&mut self, now: Instant, seq: u64, inflight: u64) {
        if inflight == 0 {
            self.first_sent = now;
            self.delivered_time = now;
        }
        let rec = TxRecord {
            sent: now,
            first_sent: self.first_sent,
            delivered_time: self.delivered_time,
            delivered: self.delivered,
            app_limited: self.app_limited != 0,
        };
        if seq < self.tx_base {
            return;
        }
        let i = (seq - self.tx_base) as usize;
        while self.tx.len() <= i {
            self.tx.push_back(rec);
        }
        self.tx[i] = rec;
    }

    /// Forget the records below `una` (cumulatively acknowledged).
    pub fn advance(&mut self, una: u64) {
        while self.tx_base < una && self.tx.pop_front().is_some() {
            self.tx_base += 1;
        }
        self.tx_base = self.tx_base.max(una);
    }

    fn record(&self, seq: u64) -> Option<TxRecord> {
        seq.checked_sub(self.tx_base)
            .and_then(|i| self.tx.get(i as usize).copied())
    }

    /// The max-bandwidth estimate (`bbr_max_bw`), segments/s.
    pub fn max_bw(&self) -> f64 {
        self.bw.get()
    }

    /// `bbr_bdp()`: gain × bw × min_rtt, rounded up; the initial window
    /// (10, TCP_INIT_CWND) before any RTT sample.
    fn bdp(&self, bw: f64, gain: f64) -> f64 {
        match self.min_rtt {
            None => 10.0,
            Some(r) => (bw * r.as_secs_f64() * gain).ceil(),
        }
    }

    /// `bbr_tso_segs_goal()`: about 1 ms of data at the pacing rate
    /// (`sk_pacing_shift` 10), at least `bbr_min_tso_segs()`.
    fn tso_segs_goal(&self, mss_bytes: f64) -> f64 {
        if let Some(n) = self.cfg.tso_segs {
            return n as f64;
        }
        let bytes_per_s = self.pacing_rate * mss_bytes;
        // bbr_min_tso_segs(): 1 below bbr_min_tso_rate (1.2 Mb/s).
        let min = if bytes_per_s < 1_200_000.0 / 8.0 {
            1.0
        } else {
            2.0
        };
        ((bytes_per_s / 1024.0 / mss_bytes).floor()).clamp(min, 127.0)
    }

    /// `bbr_quantization_budget()`: room for the sender's bursts, an even
    /// number, and 2 more in the 1.25 phase of PROBE_BW.
    fn quantization_budget(&self, cwnd: f64, mss_bytes: f64) -> f64 {
        let mut c = cwnd + 3.0 * self.tso_segs_goal(mss_bytes);
        c = (c / 2.0).ceil() * 2.0;
        if self.mode == BbrMode::ProbeBw && self.cycle_idx == 0 {
            c += 2.0;
        }
        c
    }

    /// `bbr_inflight()`.
    fn inflight_target(&self, bw: f64, gain: f64, mss_bytes: f64) -> f64 {
        self.quantization_budget(self.bdp(bw, gain), mss_bytes)
    }

    /// `bbr_save_cwnd()`.
    pub fn save_cwnd(&mut self, cwnd: f64) {
        if self.prev_ca_state < CaState::Recovery && self.mode != BbrMode::ProbeRtt {
            self.prior_cwnd = cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(cwnd);
        }
    }

    /// `bbr_set_state(sk, TCP_CA_Loss)` after a retransmission timeout
    /// (with `bbr_ssthresh()`'s save of cwnd before it).
    pub fn on_rto(&mut self, cwnd: f64) {
        self.save_cwnd(cwnd);
        self.prev_ca_state = CaState::Loss;
        self.full_bw = 0.0;
        // "treat RTO like end of a round" (used by the long-term sampling
        // only, which is not modelled).
        self.round_start = true;
    }

    /// `bbr_reset_probe_bw_mode()`: a random phase other than 0.75, then
    /// advance one.
    fn reset_probe_bw(&mut self, now: Instant) {
        self.mode = BbrMode::ProbeBw;
        let n = self.cfg.cycle.len() as u64;
        self.cycle_idx = (n - 1 - self.random_below(n - 1)) as usize;
        self.advance_cycle_phase(now);
    }

    /// `bbr_reset_mode()`.
    fn reset_mode(&mut self, now: Instant) {
        if !self.full_bw_reached {
            self.mode = BbrMode::Startup;
        } else {
            self.reset_probe_bw(now);
        }
    }

    fn advance_cycle_phase(&mut self, now: Instant) {
        self.cycle_idx = (self.cycle_idx + 1) % self.cfg.cycle.len();
        self.cycle_stamp = now;
    }

    /// The per-ACK work of `bbr_main()` and the rate sample of
    /// `tcp_rate_gen()`; returns the new cwnd (segments).
    pub fn on_ack(&mut self, a: BbrAck, cwnd: f64, mss_bytes: f64) -> f64 {
        // tcp_rate_gen()
        let newly = a.acked;
        self.delivered += newly;
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        let rec = a.latest.and_then(|s| self.record(s));
        if let Some(r) = rec {
            // tcp_rate_skb_delivered(): the next interval starts at the
            // send time of the most recently delivered segment.
            self.first_sent = r.sent;
        }
        if newly > 0 {
            self.delivered_time = a.now;
        }
        // (delivered, interval) of the sample, when valid.
        let sample = rec.and_then(|r| {
            let send = r.sent.saturating_since(r.first_sent);
            let ack = a.now.saturating_since(r.delivered_time);
            let interval = send.max(ack);
            // "Normally we expect interval_us >= min-rtt": shorter
            // intervals come from ACK compression and are discarded.
            if interval.0 == 0 || self.min_rtt.is_some_and(|m| interval < m) {
                None
            } else {
                Some((self.delivered - r.delivered, interval, r))
            }
        });
        // bbr_update_model()
        self.update_bw(sample);
        self.update_cycle_phase(a, mss_bytes);
        self.check_full_bw_reached(sample);
        self.check_drain(a, mss_bytes);
        self.update_min_rtt(a, cwnd);
        self.update_gains();
        // bbr_set_pacing_rate()
        let bw = self.max_bw();
        if !self.has_seen_rtt {
            if let Some(r) = a.rtt {
                self.has_seen_rtt = true;
                self.pacing_rate = self.rate(cwnd / r.as_secs_f64().max(1e-9), self.cfg.high_gain);
            }
        }
        let rate = self.rate(bw, self.pacing_gain);
        if bw > 0.0 && (self.full_bw_reached || rate > self.pacing_rate) {
            self.pacing_rate = rate;
        }
        self.set_cwnd(a, newly, bw, cwnd, mss_bytes)
    }

    /// `bbr_update_bw()`: round counting and the max-bandwidth filter.
    fn update_bw(&mut self, sample: Option<(u64, Duration, TxRecord)>) {
        self.round_start = false;
        let Some((delivered, interval, r)) = sample else {
            return;
        };
        // A round trip ends when a segment sent after the previous round's
        // end is delivered (draft §4.1.1.3).
        if r.delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = self.delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        let bw = delivered as f64 / interval.as_secs_f64();
        // An application-limited sample counts only if it raises the
        // estimate.
        if !r.app_limited || bw >= self.max_bw() {
            self.bw.update(self.cfg.bw_rtts, self.rtt_cnt, bw);
        }
    }

    /// `bbr_update_cycle_phase()` / `bbr_is_next_cycle_phase()` (draft
    /// §4.3.4.3).
    fn update_cycle_phase(&mut self, a: BbrAck, mss_bytes: f64) {
        if self.mode != BbrMode::ProbeBw || !self.is_next_cycle_phase(a, mss_bytes) {
            return;
        }
        self.advance_cycle_phase(a.now);
    }

    fn is_next_cycle_phase(&self, a: BbrAck, mss_bytes: f64) -> bool {
        let min_rtt = self.min_rtt.unwrap_or(Duration::ZERO);
        let full_length = self.delivered_time.saturating_since(self.cycle_stamp) > min_rtt;
        let gain = self.pacing_gain;
        if gain == 1.0 {
            return full_length;
        }
        let inflight = a.prior_inflight as f64;
        let bw = self.max_bw();
        if gain > 1.0 {
            // Probe until inflight reaches gain × BDP or a loss says the
            // pipe is full.
            return full_length
                && (a.losses > 0 || inflight >= self.inflight_target(bw, gain, mss_bytes));
        }
        // Drain to the estimated BDP, or for at most one min_rtt.
        full_length || inflight <= self.inflight_target(bw, 1.0, mss_bytes)
    }

    /// `bbr_check_full_bw_reached()` (draft §4.3.1.2): three rounds
    /// without 25 % growth.
    fn check_full_bw_reached(&mut self, sample: Option<(u64, Duration, TxRecord)>) {
        let app_limited = sample.is_some_and(|(_, _, r)| r.app_limited);
        if self.full_bw_reached || !self.round_start || app_limited {
            return;
        }
        if self.max_bw() >= self.full_bw * self.cfg.full_bw_thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= self.cfg.full_bw_cnt;
    }

    /// `bbr_check_drain()`.
    fn check_drain(&mut self, a: BbrAck, mss_bytes: f64) {
        if self.mode == BbrMode::Startup && self.full_bw_reached {
            self.mode = BbrMode::Drain;
        }
        if self.mode == BbrMode::Drain
            && a.inflight as f64 <= self.inflight_target(self.max_bw(), 1.0, mss_bytes)
        {
            self.reset_probe_bw(a.now);
        }
    }

    /// `bbr_update_min_rtt()` and PROBE_RTT (draft §4.3.5).
    fn update_min_rtt(&mut self, a: BbrAck, cwnd: f64) {
        let expired = a.now.saturating_since(self.min_rtt_stamp) > self.cfg.min_rtt_win;
        if let Some(r) = a.rtt {
            if self.min_rtt.is_none_or(|m| r < m) || expired {
                self.min_rtt = Some(r);
                self.min_rtt_stamp = a.now;
            }
        }
        if expired && self.cfg.probe_rtt && self.mode != BbrMode::ProbeRtt {
            // The kernel sets the mode before bbr_save_cwnd(), which then
            // keeps the larger of prior_cwnd and cwnd.
            self.mode = BbrMode::ProbeRtt;
            self.save_cwnd(cwnd);
            self.probe_rtt_done = None;
        }
        if self.mode == BbrMode::ProbeRtt {
            // Samples taken while the window is held down do not lower the
            // bandwidth estimate.
            self.app_limited = (self.delivered + a.inflight).max(1);
            match self.probe_rtt_done {
                None if a.inflight as f64 <= self.cfg.cwnd_min_target => {
                    self.probe_rtt_done = Some(a.now + self.cfg.probe_rtt_time);
                    self.probe_rtt_round_done = false;
                    self.next_rtt_delivered = self.delivered;
                }
                Some(done) => {
                    if self.round_start {
                        self.probe_rtt_round_done = true;
                    }
                    if self.probe_rtt_round_done && a.now > done {
                        // bbr_check_probe_rtt_done(): the cwnd restore
                        // happens in set_cwnd (it sees the mode change).
                        self.min_rtt_stamp = a.now;
                        self.probe_rtt_exit = true;
                        self.reset_mode(a.now);
                    }
                }
                None => {}
            }
        }
    }

    /// `bbr_update_gains()`.
    fn update_gains(&mut self) {
        let c = &self.cfg;
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            BbrMode::Startup => (c.high_gain, c.high_gain),
            BbrMode::Drain => (c.drain_gain, c.high_gain),
            BbrMode::ProbeBw => (c.cycle[self.cycle_idx], c.cwnd_gain),
            BbrMode::ProbeRtt => (1.0, 1.0),
        };
    }

    /// `bbr_set_cwnd()` with `bbr_set_cwnd_to_recover_or_restore()`.
    fn set_cwnd(&mut self, a: BbrAck, acked: u64, bw: f64, cwnd: f64, mss_bytes: f64) -> f64 {
        let mut cwnd = cwnd;
        if std::mem::take(&mut self.probe_rtt_exit) {
            // bbr_check_probe_rtt_done(): back to the window before.
            cwnd = cwnd.max(self.prior_cwnd);
        }
        let acked_f = acked as f64;
        let mut conserved = false;
        if acked > 0 {
            // bbr_set_cwnd_to_recover_or_restore()
            if a.losses > 0 {
                cwnd = (cwnd - a.losses as f64).max(1.0);
            }
            if a.state == CaState::Recovery && self.prev_ca_state != CaState::Recovery {
                // Packet conservation for the first round of recovery.
                self.packet_conservation = true;
                self.next_rtt_delivered = self.delivered;
                cwnd = a.inflight as f64 + acked_f;
            } else if self.prev_ca_state >= CaState::Recovery && a.state < CaState::Recovery {
                // Recovery over: restore the window before it.
                cwnd = cwnd.max(self.prior_cwnd);
                self.packet_conservation = false;
            }
            self.prev_ca_state = a.state;
            if self.packet_conservation {
                cwnd = cwnd.max(a.inflight as f64 + acked_f);
                conserved = true;
            }
            if !conserved {
                let target = self.quantization_budget(self.bdp(bw, self.cwnd_gain), mss_bytes);
                if self.full_bw_reached {
                    cwnd = (cwnd + acked_f).min(target);
                } else if cwnd < target || self.delivered < 10 {
                    cwnd += acked_f;
                }
                cwnd = cwnd.max(self.cfg.cwnd_min_target);
            }
        }
        if self.mode == BbrMode::ProbeRtt {
            cwnd = cwnd.min(self.cfg.cwnd_min_target);
        }
        cwnd
    }
}

impl BbrState {
    /// Of segments `seqs`, the one sent last (largest `delivered` at send,
    /// then latest send time), as tcp_rate_skb_delivered() picks it.
    pub fn latest_of(&self, seqs: impl Iterator<Item = u64>) -> Option<u64> {
        seqs.filter_map(|s| self.record(s).map(|r| (r.delivered, r.sent, s)))
            .max()
            .map(|(_, _, s)| s)
    }
}
