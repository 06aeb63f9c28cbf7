//! STFRC: the sender-based TFRC rate controller for Saratoga of paper 000
//! (`docs/papers.md`; its §3 gives the algorithm, §4 and Table 1 the
//! parameters, §5 the symmetry ratio and the STATUS frequency; see also
//! `docs/stfrc.md`).
//!
//! The Saratoga receiver is unchanged (§3-a). Only the sender runs TFRC:
//!
//! - every DATA transmission gets a sender-only *dummy sequence number*
//!   and its send time is kept (Algorithm 1; offsets are kept as runs of
//!   consecutive byte ranges, the paper's per-set first packet and
//!   per-retransmission mapping);
//! - a DATA that requests a STATUS ends a *period*; a *cycle* is the time
//!   between sending two successive requests that were both answered, so
//!   when a request or its STATUS is lost, periods merge into one cycle
//!   (§3-c(II), Fig. 1);
//! - on each STATUS (Algorithm 2): (1) the RTT is updated, (2) the cycle is
//!   identified, (3) the holes the STATUS reports are mapped to the dummy
//!   sequence numbers of the packets of the cycle that carried those bytes,
//!   (4) each packet of the cycle gets a fate and a predicted receive time,
//!   its send time plus symmetry ratio times RTT (§3-c(I)), (5) the receiver's
//!   throughput X_recv and the loss event rate p are computed as an
//!   RFC 5348 receiver would (reusing [`crate::tfrc::loss`]), and (6) the
//!   allowed rate X is updated as an RFC 5348 §4.3 sender does (reusing
//!   [`crate::tfrc::TfrcSender`]). Step 7, the retransmission list, is the
//!   Saratoga sender's business.
//!
//! The controller is sans-IO and knows nothing of Saratoga frames: the
//! Saratoga sender reports what it sends ([`StfrcController::on_data_sent`])
//! and what STATUS frames say ([`StfrcController::on_status`]), asks when to
//! set the request flag ([`StfrcController::want_status_request`]) and paces
//! its DATA at [`StfrcController::rate_bytes_per_s`]. Time is integer
//! nanoseconds; nothing here reads a clock or a random source.
//!
//! Assumption inherited from the paper (§3-c(II), "assuming packets arrive
//! at the receiver in the sequence they are sent"): a STATUS reports on
//! every packet sent up to the one that requested it. A lost packet whose
//! bytes lie beyond the highest offset the receiver has seen is not
//! reported as a hole and so counts as received.

mod history;
mod saratoga;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;

use history::History;

use crate::equation::tfrc_loss_rate_for;
use crate::tfrc::{LossDetector, SenderConfig, TfrcFeedback, TfrcSender, MIN_RTT};
use crate::time::{Duration, Instant};

/// Symmetry ratio the paper used with Drop-Tail queues (Table 1, §4-a).
pub const SYMMETRY_RATIO_DROPTAIL: f64 = 0.75;

/// Symmetry ratio the paper used with RED queues (Table 1, §4-a).
pub const SYMMETRY_RATIO_RED: f64 = 0.65;

/// Requests awaiting their STATUS that are remembered; beyond this the
/// oldest is forgotten (its period simply merges into the next cycle).
pub const MAX_OUTSTANDING_REQUESTS: usize = 1024;

/// Parameters of the controller. Every choice the paper leaves open is a
/// field here.
#[derive(Clone, Debug)]
pub struct StfrcConfig {
    /// Segment size s in bytes, the packet size of the equation
    /// (RFC 5348 §3.1; Table 1 of paper 000: 1040 bytes).
    pub segment_size: u32,
    /// The symmetry ratio: average forward delay / average RTT. The
    /// predicted receive time of a packet is its send time plus this
    /// times the RTT (paper 000 §3-c(I)). The paper used 0.75 with
    /// Drop-Tail and 0.65 with RED ([`SYMMETRY_RATIO_DROPTAIL`],
    /// [`SYMMETRY_RATIO_RED`]; Table 1, §4-a) and found 0.5-0.7 gave
    /// similar results (§5). Clamped to [0, 1]; NaN is taken as 0.5.
    /// Default 0.75.
    pub symmetry_ratio: f64,
    /// STATUS requests per RTT. Paper 000 §5 recommends one: more make
    /// the Saratoga sender retransmit the same data several times, lost
    /// duplicates are never reported, and p is under-estimated. Values
    /// above 1 reproduce that experiment. Non-finite or non-positive
    /// values are taken as 1. Default 1.
    pub status_per_rtt: f64,
    /// A STATUS request unanswered for this many RTTs is taken as lost;
    /// until then a due request waits while `ceil(status_per_rtt)` are
    /// outstanding (see [`StfrcController::want_status_request`]). 0 or
    /// non-finite: off, requests by the interval alone (paper 000 §5 as
    /// written). Default 4, the scale of RFC 5348 §4.4's no-feedback timer
    /// (4 R): a lost STATUS delays the next request by at most that.
    pub request_timeout_rtts: f64,
    /// The request interval used before the first RTT sample (the paper
    /// is silent; RFC 5348 has no initial RTT either). Only spaces the
    /// first STATUS requests when the first is lost. Default 1 s.
    pub initial_rtt: Duration,
    /// History discounting of the loss-interval history (RFC 5348 §5.5;
    /// Table 1 of paper 000: "History discounting for TFRC: yes").
    /// Default true.
    pub history_discounting: bool,
    /// The b of the throughput equation (paper 000 eq. (1); RFC 5348 §3.1
    /// recommends 1). Default 1.
    pub b: f64,
    /// Maximum backoff interval t_mbi: X never falls below s/t_mbi
    /// (paper 000 §2-c: "one packet every 64 seconds"; RFC 5348 §4.3).
    /// Default 64 s.
    pub t_mbi: Duration,
    /// Oscillation damping (RFC 5348 §4.5, optional there; the paper does
    /// not mention it). Default false.
    pub oscillation_damping: bool,
    /// The no-feedback timer of RFC 5348 §4.4 (paper 000 §2-c step 3:
    /// "if no feedback packet is received for a certain period of time,
    /// the sender cuts down the rate to half"; §3 keeps every sender
    /// function of TFRC). Default true.
    pub nofeedback_timer: bool,
    /// The most transmissions kept in the history while waiting for a
    /// STATUS (our bound: the paper keeps them until their cycle is
    /// evaluated). Beyond it the oldest are forgotten unevaluated. Default
    /// 2^18.
    pub max_history: usize,
    /// How the receiver's throughput X_recv is estimated (see
    /// [`ReceiveRate`]). Default [`ReceiveRate::Predicted`], paper 000's.
    pub receive_rate: ReceiveRate,
    /// Which losses count for p (see [`LossFilter`]). Default
    /// [`LossFilter::All`], RFC 5348's and paper 000's.
    pub loss_filter: LossFilter,
    /// Take out of the equation's RTT samples the time a STATUS's hole
    /// list adds on the return path (see
    /// [`StfrcController::hole_delay`]). Default false (paper 000: the
    /// whole request-to-STATUS time).
    pub exclude_hole_delay: bool,
}

/// Which of the losses a STATUS reports enter the loss event rate p.
/// Every loss is still repaired by the Saratoga sender.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LossFilter {
    /// Every loss (RFC 5348 §5; paper 000 §3-c step 5).
    All,
    /// Only losses of a cycle whose RTT sample says the path was queueing,
    /// by the "Spike" loss differentiation scheme (Tobe et al. 2000, as
    /// evaluated for TFRC-like flows by Cen, Cosman and Voelker,
    /// "End-to-end differentiation of congestion and wireless losses",
    /// IEEE/ACM ToN 2003, §III): with RTT_min and RTT_max the extremes of
    /// the samples so far, the path enters the spike state when a sample
    /// exceeds RTT_min + `start` (RTT_max - RTT_min) and leaves it when a
    /// sample falls below RTT_min + `end` (RTT_max - RTT_min); losses
    /// outside the spike state are taken as link errors. Spike works on
    /// relative one-way delays at the receiver; STFRC has one RTT sample
    /// per STATUS, so the sample stands in for the delay. `min_spread`
    /// (our addition) is the least RTT_max - RTT_min used, so that timer
    /// jitter on an idle path is not taken for a queue.
    ///
    /// Not TCP-friendly where a shared bottleneck drops without queueing
    /// (a small RED queue): such losses are ignored too.
    Spike {
        /// The spike state's entry threshold (1/2 in Cen et al.).
        start: f64,
        /// Its exit threshold (1/3 in Cen et al.).
        end: f64,
        /// The least spread of RTT samples used.
        min_spread: Duration,
    },
}

impl LossFilter {
    /// Spike with the thresholds Cen et al. used and a 5 ms floor.
    pub const SPIKE: LossFilter = LossFilter::Spike {
        start: 0.5,
        end: 1.0 / 3.0,
        min_spread: Duration::from_millis(5),
    };
}

/// How STFRC estimates X_recv, the rate at which the receiver got the
/// cycle's bytes (the RFC 5348 §4.3 sender caps X at 2 X_recv, and
/// §6.3.1 synthesises the first loss interval from it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ReceiveRate {
    /// Paper 000 §3-c(I): each packet is received at its send time plus
    /// the symmetry ratio times R, so X_recv is the cycle's bytes over the
    /// span of its send times. Before the first loss this is the sending
    /// rate, whatever the bottleneck does with it: the 2 X_recv bound of
    /// slow start does not hold X.
    #[default]
    Predicted,
    /// The cycle's bytes over the longer of that span and the time between
    /// the STATUS frames that closed this cycle and the previous one: a
    /// delivery rate as draft-cheng-iccrg-delivery-rate-estimation-02
    /// §3.3 computes it (delivered / max(send_elapsed, ack_elapsed)).
    /// Past a bottleneck the STATUS frames come back at the bottleneck's
    /// pace, so X_recv is its rate and slow start stops at twice that.
    Delivery,
}

impl Default for StfrcConfig {
    fn default() -> Self {
        StfrcConfig {
            segment_size: 1040,
            symmetry_ratio: SYMMETRY_RATIO_DROPTAIL,
            status_per_rtt: 1.0,
            request_timeout_rtts: 4.0,
            initial_rtt: Duration::from_secs(1),
            history_discounting: true,
            b: 1.0,
            t_mbi: Duration::from_secs(64),
            oscillation_damping: false,
            nofeedback_timer: true,
            max_history: 1 << 18,
            receive_rate: ReceiveRate::Predicted,
            loss_filter: LossFilter::All,
            exclude_hole_delay: false,
        }
    }
}

/// What a Saratoga STATUS frame says, as the controller needs it
/// (draft-wood-tsvwg-saratoga STATUS fields).
#[derive(Clone, Copy, Debug)]
pub struct StatusInfo<'a> {
    /// Progress indicator: every byte below it has been received.
    pub progress: u64,
    /// In-response-to: the offset of the DATA frame whose request this
    /// STATUS answers. A value anywhere in that frame's byte range, end
    /// included, is accepted.
    pub in_response_to: u64,
    /// Holes, as half-open byte ranges `[start, end)`, in any order.
    pub holes: &'a [(u64, u64)],
    /// The hole list is incomplete (STATUS flag bit 14): bytes past the
    /// end of the last hole listed are of unknown fate and are taken as
    /// received.
    pub holes_incomplete: bool,
    /// A voluntary STATUS (flag bit 15), answering no request: it closes
    /// no cycle and is ignored by the rate control.
    pub voluntary: bool,
    /// The timestamp echoed from the requesting DATA (flag bit 12), if
    /// the sender put its own send time there. It identifies the request
    /// (paper 000 §3-c(II): "Saratoga has an explicit but optional
    /// timestamp field which is used to identify the cycle").
    pub echoed_timestamp: Option<Instant>,
}

/// What one STATUS did to the history: the cycle it closed.
#[derive(Clone, Debug, PartialEq)]
pub struct CycleReport {
    /// First dummy sequence number of the cycle.
    pub first: u64,
    /// Last dummy sequence number of the cycle (the answered request).
    pub last: u64,
    /// Periods merged into this cycle (1 when no request or STATUS was
    /// lost since the previous cycle).
    pub periods: u32,
    /// Packets of the cycle still in the history (evaluated).
    pub packets: u64,
    /// Dummy sequence numbers of the packets found lost, ascending.
    pub lost: Vec<u64>,
    /// Payload bytes of the packets found received.
    pub bytes_received: u64,
    /// Predicted receive time of the first packet of the observation
    /// interval's start: the end of the previous cycle, or the first
    /// packet of this one.
    pub rx_start: Instant,
    /// Predicted receive time of the answered request (send time +
    /// symmetry ratio * RTT).
    pub rx_end: Instant,
    /// The RTT sample this STATUS gave.
    pub rtt_sample: Duration,
    /// The smoothed RTT used for the predictions.
    pub rtt: Duration,
    /// The receiver's throughput estimate, bytes/s (0 when the interval
    /// is empty).
    pub x_recv: f64,
    /// The loss event rate after this cycle.
    pub p: f64,
}

/// Monitoring.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StfrcStats {
    /// Allowed sending rate X, bytes/s.
    pub x: f64,
    /// Pacing rate (X with oscillation damping applied), bytes/s.
    pub x_inst: f64,
    /// X_recv as the rate update last used it, bytes/s.
    pub x_recv: f64,
    /// Loss event rate p.
    pub p: f64,
    /// Smoothed RTT.
    pub rtt: Option<Duration>,
    /// The equation's rate for the current p and RTT, if p > 0.
    pub x_calc: Option<f64>,
    /// DATA transmissions reported.
    pub packets_sent: u64,
    /// DATA transmissions reported ahead of the pacing schedule at rate X
    /// (the Saratoga sender sent faster than allowed).
    pub sent_early: u64,
    /// STATUS requests sent.
    pub requests_sent: u64,
    /// STATUS frames received.
    pub status_received: u64,
    /// Cycles closed.
    pub cycles: u64,
    /// Periods merged into longer cycles (lost requests or STATUS).
    pub periods_merged: u64,
    /// Voluntary STATUS frames (ignored by the rate control).
    pub status_voluntary: u64,
    /// STATUS frames answering no outstanding request (unknown offset or
    /// timestamp, a late answer to a request already merged), ignored.
    pub status_unmatched: u64,
    /// Holes ignored: empty or inverted, or wholly past every byte sent.
    pub holes_ignored: u64,
    /// Packets whose fate was unknown (hole list incomplete), taken as
    /// received.
    pub unknown_fate: u64,
    /// Packets found lost.
    pub packets_lost: u64,
    /// Loss events.
    pub loss_events: u64,
    /// Transmissions forgotten unevaluated (the history cap).
    pub history_dropped: u64,
    /// Transmissions held in the history.
    pub history_len: usize,
    /// Runs held in the history (regular sets and retransmissions).
    pub history_runs: usize,
    /// No-feedback timer expiries.
    pub nofeedback_expiries: u64,
    /// Packets found lost but left out of p by [`LossFilter::Spike`].
    pub losses_ignored: u64,
}

/// A STATUS request sent and not yet answered: the end of a period.
#[derive(Clone, Copy, Debug)]
struct Request {
    d: u64,
    offset: u64,
    len: u32,
    sent: Instant,
}

/// The STFRC sender-side rate controller (paper 000 §3).
#[derive(Debug)]
pub struct StfrcController {
    cfg: StfrcConfig,
    sr: f64,
    per_rtt: f64,
    hist: History,
    /// Outstanding requests, oldest first.
    requests: VecDeque<Request>,
    last_request_at: Option<Instant>,
    /// First dummy sequence number of the open cycle.
    cycle_start: u64,
    /// Highest byte sent + 1.
    max_end: u64,
    /// Smoothed RTT (RFC 5348 §4.3 step 2, as the TFRC sender keeps it).
    rtt: Option<Duration>,
    /// The RFC 5348 loss-event machinery, fed with the packets of each
    /// cycle in dummy order with their predicted receive times.
    det: LossDetector,
    /// The detector's own sequence: evaluated packets only, so that
    /// packets forgotten by the history cap are not taken as lost.
    det_seq: u64,
    /// Predicted receive time of the end of the previous cycle.
    last_rx_end: Option<Instant>,
    /// Arrival time of the STATUS that closed the previous cycle.
    last_status_at: Option<Instant>,
    /// Extremes of the RTT samples (for [`LossFilter::Spike`]).
    rtt_min: Option<Duration>,
    rtt_max: Duration,
    /// The spike state of [`LossFilter::Spike`].
    in_spike: bool,
    /// Least RTT sample of a STATUS listing no hole.
    rtt_no_holes: Option<Duration>,
    /// Least (sample - `rtt_no_holes`) / holes over STATUS frames listing
    /// holes, seconds per hole.
    per_hole: Option<f64>,
    x_recv: f64,
    tfrc: TfrcSender,
    last_cycle: Option<CycleReport>,
    stats: StfrcStats,
}

impl StfrcController {
    /// A controller starting at `now`. The rate starts as RFC 5348 §4.2
    /// says (one packet per second until the first RTT sample, then
    /// W_init/R with slow start); paper 000 §2-c step 1.
    pub fn new(cfg: StfrcConfig, now: Instant) -> Self {
        let sr = if cfg.symmetry_ratio.is_nan() {
            0.5
        } else {
            cfg.symmetry_ratio.clamp(0.0, 1.0)
        };
        let per_rtt = if cfg.status_per_rtt.is_finite() && cfg.status_per_rtt > 0.0 {
            cfg.status_per_rtt
        } else {
            1.0
        };
        let scfg = SenderConfig {
            s: cfg.segment_size.max(1),
            t_mbi: cfg.t_mbi,
            oscillation_damping: cfg.oscillation_damping,
            b: if cfg.b.is_finite() && cfg.b > 0.0 {
                cfg.b
            } else {
                1.0
            },
            // The Saratoga sender paces on its own; a packet up to half an
            // interval early still counts as on schedule.
            t_gran: Duration::MAX,
            ..SenderConfig::default()
        };
        let mut tfrc = TfrcSender::new(scfg, now);
        tfrc.set_unlimited();
        StfrcController {
            det: LossDetector::new(1, cfg.history_discounting),
            cfg,
            sr,
            per_rtt,
            hist: History::default(),
            requests: VecDeque::new(),
            last_request_at: None,
            cycle_start: 0,
            max_end: 0,
            rtt: None,
            det_seq: 0,
            last_rx_end: None,
            last_status_at: None,
            rtt_min: None,
            rtt_max: Duration::ZERO,
            in_spike: false,
            rtt_no_holes: None,
            per_hole: None,
            x_recv: 0.0,
            tfrc,
            last_cycle: None,
            stats: StfrcStats::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &StfrcConfig {
        &self.cfg
    }

    /// The interval between STATUS requests: RTT / status_per_rtt
    /// (paper 000 §5), with the initial RTT before the first sample.
    pub fn request_interval(&self) -> Duration {
        let r = self.rtt.unwrap_or(self.cfg.initial_rtt);
        Duration::from_secs_f64(r.as_secs_f64() / self.per_rtt)
    }

    /// Whether the next DATA should request a STATUS: the first one does,
    /// then one per request interval (paper 000 §5: one STATUS per RTT;
    /// §3-c(II): "when a request for STATUS-feedback packet is due, the
    /// sender sends a request with the very next packet").
    ///
    /// With [`StfrcConfig::request_timeout_rtts`] a due request also waits
    /// while `ceil(status_per_rtt)` earlier ones are unanswered and younger
    /// than that many RTTs: "one STATUS per RTT" then counts round trips as
    /// they happen. R is an average (RFC 5348 §4.3, q = 0.9) and lags: when
    /// STATUS frames grow (a burst of holes on `dmc`: 60 to 572 bytes,
    /// 12.5 to 119 ms on the 38.4 kb/s uplink) requests at the old R queue
    /// STATUS frames on a narrow return path, and that queue enters R.
    pub fn want_status_request(&self, now: Instant) -> bool {
        let Some(t) = self.last_request_at else {
            return true;
        };
        if now < t + self.request_interval() {
            return false;
        }
        let k = self.cfg.request_timeout_rtts;
        // Before an RTT sample the first request may simply be lost: the
        // initial interval alone spaces them.
        let Some(r) = self.rtt.filter(|_| k.is_finite() && k > 0.0) else {
            return true;
        };
        let horizon = Duration::from_secs_f64(r.as_secs_f64() * k);
        let waiting = self
            .requests
            .iter()
            .rev()
            .take_while(|q| now < q.sent + horizon)
            .count();
        (waiting as f64) < self.per_rtt.ceil()
    }

    /// A DATA frame left at `now` carrying bytes `[offset, offset+len)`;
    /// `requests_status` if its request-STATUS flag was set. Returns the
    /// dummy sequence number assigned to this transmission (a
    /// retransmission gets a new one). Paper 000 Algorithm 1.
    pub fn on_data_sent(
        &mut self,
        now: Instant,
        offset: u64,
        len: u32,
        requests_status: bool,
    ) -> u64 {
        let d = self.hist.push(now, offset, len);
        self.max_end = self.max_end.max(offset.saturating_add(u64::from(len)));
        self.stats.packets_sent += 1;
        // Keeps the RFC 5348 sender's idea of "sending" (no-feedback timer).
        if self.tfrc.poll_transmit(now).is_none() {
            self.stats.sent_early += 1;
        }
        if requests_status {
            // Algorithm 1 steps 2-7: this packet ends a period; the next
            // one starts the next.
            self.requests.push_back(Request {
                d,
                offset,
                len,
                sent: now,
            });
            if self.requests.len() > MAX_OUTSTANDING_REQUESTS {
                self.requests.pop_front();
            }
            self.last_request_at = Some(now);
            self.stats.requests_sent += 1;
        }
        while self.hist.len() > self.cfg.max_history.max(1) && self.hist.drop_oldest() {
            self.stats.history_dropped += 1;
            // The next X_recv interval cannot reach back over them.
            self.last_rx_end = None;
        }
        let base = self.hist.base();
        self.cycle_start = self.cycle_start.max(base);
        while self.requests.front().is_some_and(|r| r.d < base) {
            self.requests.pop_front();
        }
        d
    }

    /// The outstanding request this STATUS answers, by echoed timestamp
    /// first, then by offset (oldest first: never claim the fate of
    /// packets a STATUS may not cover).
    fn match_request(&self, st: &StatusInfo<'_>) -> Option<usize> {
        let covers = |r: &Request| {
            st.in_response_to >= r.offset
                && st.in_response_to <= r.offset.saturating_add(u64::from(r.len))
        };
        if let Some(ts) = st.echoed_timestamp {
            let by_ts = self
                .requests
                .iter()
                .position(|r| r.sent == ts && covers(r))
                .or_else(|| self.requests.iter().position(|r| r.sent == ts));
            if by_ts.is_some() {
                return by_ts;
            }
        }
        self.requests
            .iter()
            .position(|r| r.offset == st.in_response_to)
            .or_else(|| self.requests.iter().position(covers))
    }

    /// The holes clipped to `progress`, sorted and merged; invalid ones and
    /// ones past everything sent are counted and dropped.
    fn clean_holes(&mut self, st: &StatusInfo<'_>) -> Vec<(u64, u64)> {
        let mut v: Vec<(u64, u64)> = Vec::with_capacity(st.holes.len());
        for &(s, e) in st.holes {
            let s = s.max(st.progress);
            if s >= e || s >= self.max_end {
                self.stats.holes_ignored += 1;
                continue;
            }
            v.push((s, e));
        }
        v.sort_unstable();
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
        for (s, e) in v {
            match out.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => out.push((s, e)),
            }
        }
        out
    }

    /// A STATUS frame arrived at `now` (paper 000 Algorithm 2). Returns
    /// true if it closed a cycle (see [`Self::last_cycle`]).
    pub fn on_status(&mut self, now: Instant, st: &StatusInfo<'_>) -> bool {
        self.stats.status_received += 1;
        if st.voluntary {
            self.stats.status_voluntary += 1;
            return false;
        }
        let Some(k) = self.match_request(st) else {
            self.stats.status_unmatched += 1;
            return false;
        };
        let req = self.requests[k];
        if req.sent > now {
            self.stats.status_unmatched += 1;
            return false;
        }
        // Step 2: the cycle. Older outstanding requests were lost, or their
        // STATUS was: their periods merge into this cycle (§3-c(II)).
        self.requests.drain(..=k);
        let periods = k as u32 + 1;
        self.stats.periods_merged += u64::from(periods - 1);
        let lo = self.cycle_start.max(self.hist.base());
        let hi = req.d;

        // Step 1: the RTT (RFC 5348 §4.3 steps 1-2: R = 0.9 R + 0.1 R_sample,
        // the first sample sets R). The sample is the request's send time to
        // now: the receiver answers a request at once.
        let sample = now.saturating_since(req.sent).max(MIN_RTT);
        let r = match self.rtt {
            None => sample,
            Some(r) => Duration::from_nanos(
                ((9 * u128::from(r.as_nanos()) + u128::from(sample.as_nanos())) / 10) as u64,
            ),
        }
        .max(MIN_RTT);
        self.rtt = Some(r);
        let congestion = self.classify(sample);
        let t_delay = self.hole_delay(sample, st.holes.len());
        let fwd = Duration::from_secs_f64(self.sr * r.as_secs_f64());

        // Step 3: dummy sequence numbers of the lost packets of the cycle.
        let holes = self.clean_holes(st);
        let lost = self.hist.lost_in(lo, hi, &holes);
        let unknown_from = if st.holes_incomplete {
            Some(holes.last().map_or(st.progress, |h| h.1))
        } else {
            None
        };

        // Step 4: receive times and fates; step 5 (first half): X_recv over
        // the predicted receive times, as the receiver measures it (bytes
        // received since its previous feedback, RFC 5348 §6.2).
        let mut pkts: Vec<(u64, Instant, bool)> = Vec::new();
        let mut bytes = 0u64;
        let mut li = 0usize;
        let mut unknown = 0u64;
        self.hist.for_each(lo, hi, |d, sent, off, len| {
            while li < lost.len() && lost[li] < d {
                li += 1;
            }
            let is_lost = li < lost.len() && lost[li] == d;
            if !is_lost {
                bytes += u64::from(len);
                if unknown_from.is_some_and(|u| off >= u) {
                    unknown += 1;
                }
            }
            pkts.push((d, sent + fwd, !is_lost));
        });
        self.stats.unknown_fate += unknown;
        let rx_end = req.sent + fwd;
        let rx_start = self
            .last_rx_end
            .filter(|&t| t <= rx_end)
            .or_else(|| pkts.first().map(|p| p.1))
            .unwrap_or(rx_end);
        let mut span = rx_end.saturating_since(rx_start);
        if self.cfg.receive_rate == ReceiveRate::Delivery {
            // Only when the interval starts at the previous cycle's end,
            // the same boundary the previous STATUS closed.
            if let (Some(a), Some(_)) = (
                self.last_status_at,
                self.last_rx_end.filter(|&t| t <= rx_end),
            ) {
                span = span.max(now.saturating_since(a));
            }
        }
        let x_recv = if span > Duration::ZERO {
            bytes as f64 / span.as_secs_f64()
        } else {
            0.0
        };
        self.x_recv = x_recv;

        // Step 5 (second half): p as an RFC 5348 receiver computes it. The
        // sender knows every fate, so one later arrival declares a loss
        // (NDUPACK = 1); losses within one RTT of a loss event's start
        // join it (§5.2); the first interval is synthesised from X_recv
        // (§6.3.1).
        let s = f64::from(self.cfg.segment_size.max(1));
        let b = self.tfrc.config().b;
        let rs = r.as_secs_f64();
        let mut synth = |n: u64| -> f64 {
            if x_recv > 0.0 && x_recv.is_finite() {
                1.0 / tfrc_loss_rate_for(s, rs, x_recv, b, 4.0 * rs)
            } else {
                n.max(1) as f64
            }
        };
        let mut ignored = 0u64;
        for &(_, rx, ok) in &pkts {
            if !ok && !congestion {
                ignored += 1;
            }
            if ok || !congestion {
                self.det.on_packet(self.det_seq, rx, r, &mut synth);
            }
            self.det_seq += 1;
        }
        self.stats.losses_ignored += ignored;
        let p = self.det.p();

        // Step 6: the rate, as the RFC 5348 §4.3 sender sets it.
        self.tfrc.handle_input(
            now,
            &TfrcFeedback {
                ts_echo: req.sent,
                t_delay,
                x_recv,
                p,
            },
        );

        self.stats.cycles += 1;
        self.stats.packets_lost += lost.len() as u64;
        self.last_rx_end = Some(rx_end);
        self.last_status_at = Some(now);
        self.last_cycle = Some(CycleReport {
            first: lo,
            last: hi,
            periods,
            packets: pkts.len() as u64,
            lost,
            bytes_received: bytes,
            rx_start,
            rx_end,
            rtt_sample: sample,
            rtt: r,
            x_recv,
            p,
        });
        self.hist.prune_through(hi);
        self.cycle_start = hi + 1;
        true
    }

    /// The part of an RTT sample due to the STATUS's `holes` entries, to
    /// leave out of the equation's R when
    /// [`StfrcConfig::exclude_hole_delay`] is set: on a narrow return path
    /// (`dmc`'s 38.4 kb/s) a STATUS of 64 holes takes 119 ms against
    /// 12.5 ms for one without, and that would enter R as if the path were
    /// that long. The cost per hole is learnt as variable-packet-size
    /// probing learns a link's rate (Downey, "Using pathchar to estimate
    /// Internet link characteristics", SIGCOMM 1999): the least RTT by
    /// frame size, here the least sample of a hole-less STATUS and the
    /// least excess per hole above it; queues only add, so the least is
    /// the closest to the serialization alone.
    fn hole_delay(&mut self, sample: Duration, holes: usize) -> Duration {
        if holes == 0 {
            self.rtt_no_holes = Some(self.rtt_no_holes.map_or(sample, |m| m.min(sample)));
            return Duration::ZERO;
        }
        let Some(base) = self.rtt_no_holes else {
            return Duration::ZERO;
        };
        let excess = sample - base;
        let k = excess.as_secs_f64() / holes as f64;
        let k = self.per_hole.map_or(k, |m| m.min(k));
        self.per_hole = Some(k);
        if !self.cfg.exclude_hole_delay {
            return Duration::ZERO;
        }
        Duration::from_secs_f64(k * holes as f64).min(excess)
    }

    /// Whether the losses of a cycle whose RTT sample is `sample` count as
    /// congestion ([`LossFilter`]); updates the spike state.
    fn classify(&mut self, sample: Duration) -> bool {
        let min = self.rtt_min.map_or(sample, |m| m.min(sample));
        self.rtt_min = Some(min);
        self.rtt_max = self.rtt_max.max(sample);
        let LossFilter::Spike {
            start,
            end,
            min_spread,
        } = self.cfg.loss_filter
        else {
            return true;
        };
        let spread = (self.rtt_max - min).max(min_spread);
        let thr = |k: f64| min.as_secs_f64() + k * spread.as_secs_f64();
        let x = sample.as_secs_f64();
        if !self.in_spike && x > thr(start) {
            self.in_spike = true;
        } else if self.in_spike && x < thr(end) {
            self.in_spike = false;
        }
        self.in_spike
    }

    /// The allowed sending rate, bytes/s (X, or X_inst with oscillation
    /// damping, RFC 5348 §4.5).
    pub fn rate_bytes_per_s(&self) -> f64 {
        self.tfrc.x_inst()
    }

    /// When [`Self::handle_timeout`] wants to run: the no-feedback timer
    /// (RFC 5348 §4.4), if enabled.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.cfg.nofeedback_timer.then(|| {
            self.tfrc
                .nofeedback_deadline()
                .max(self.own_nofeedback_floor())
        })
    }

    /// With [`StfrcConfig::exclude_hole_delay`] the equation's R leaves
    /// out the hole lists' serialization, but the STATUS frames still take
    /// it: the no-feedback timer (RFC 5348 §4.4: 4 R) waits at least 4 of
    /// the controller's own, whole, R after the last STATUS.
    fn own_nofeedback_floor(&self) -> Instant {
        match (self.cfg.exclude_hole_delay, self.last_status_at, self.rtt) {
            (true, Some(t), Some(r)) => t + r.saturating_mul(4),
            _ => Instant::ZERO,
        }
    }

    /// The time asked for has come: the no-feedback timer halves the rate
    /// (RFC 5348 §4.4; paper 000 §2-c step 3).
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.cfg.nofeedback_timer && now >= self.own_nofeedback_floor() {
            self.tfrc.handle_timeout(now);
        }
    }

    /// The cycle closed by the latest STATUS that closed one.
    pub fn last_cycle(&self) -> Option<&CycleReport> {
        self.last_cycle.as_ref()
    }

    /// The predicted receive time of a packet sent at `sent` under the
    /// current RTT estimate (paper 000 §3-c(I)); `None` before the first
    /// RTT sample.
    pub fn predicted_receive_time(&self, sent: Instant) -> Option<Instant> {
        self.rtt
            .map(|r| sent + Duration::from_secs_f64(self.sr * r.as_secs_f64()))
    }

    /// The loss-interval history and loss-event counts.
    pub fn loss_detector(&self) -> &LossDetector {
        &self.det
    }

    /// Monitoring.
    pub fn stats(&self) -> StfrcStats {
        let t = self.tfrc.stats();
        StfrcStats {
            x: t.x,
            x_inst: self.tfrc.x_inst(),
            x_recv: t.x_recv,
            p: t.p,
            rtt: self.rtt,
            x_calc: t.x_calc,
            loss_events: self.det.loss_events(),
            history_len: self.hist.len(),
            history_runs: self.hist.runs_len(),
            nofeedback_expiries: t.nofeedback_expiries,
            ..self.stats
        }
    }
}
