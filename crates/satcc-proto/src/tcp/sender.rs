//! TCP sender: slow start and congestion avoidance (RFC 5681), Reno fast
//! recovery (RFC 5681 §3.2), NewReno (RFC 6582), SACK loss recovery
//! (RFC 6675), Limited Transmit (RFC 3042) and the RFC 6298 timer.
//!
//! With [`SenderConfig::peach`] set, the sender runs TCP-Peach (paper 002):
//! Sudden Start in place of slow start, Rapid Recovery in place of fast
//! recovery, and low-priority dummy segments that probe for spare capacity.
//!
//! Sequence numbers count segments. `snd_una` is the oldest unacknowledged
//! segment, `snd_nxt` the next one to send (it falls back to `snd_una` after
//! a timeout, go-back-N as in ns-2), `snd_max` one past the highest ever
//! sent (RFC 6675's HighData + 1).

use std::collections::VecDeque;

use super::bbr::{BbrAck, BbrState, CaState};
use super::growth::{reno_on_ack, AckInfo, Growth, GrowthState};
use super::ns2linux::{CaState as ShimCa, Shim, SHIM_MAX_BURST};
use super::peach::{PeachConfig, PeachState};
use super::rack::{LossDetection, Rack};
use super::rtt::RttEstimator;
use super::scoreboard::Scoreboard;
use super::{TcpAck, TcpData};
use crate::time::{Duration, Instant};

/// Window algorithm of a [`TcpSender`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Reno (RFC 5681): fast retransmit and fast recovery, leaving recovery
    /// on the first new ACK.
    Reno,
    /// NewReno (RFC 6582): partial ACKs keep recovery going.
    NewReno,
    /// SACK-based loss recovery (RFC 6675 scoreboard and pipe).
    Sack,
}

/// Sender parameters.
#[derive(Clone, Debug)]
pub struct SenderConfig {
    /// Window algorithm.
    pub variant: Variant,
    /// Payload bytes of a full segment.
    pub mss: u32,
    /// Initial window in segments.
    pub initial_window: u32,
    /// Initial slow-start threshold in segments.
    pub initial_ssthresh: u32,
    /// Cap on cwnd in segments (the sender's own buffer).
    pub max_window: u32,
    /// Duplicate ACKs that trigger fast retransmit.
    pub dupack_threshold: u32,
    /// RFC 6298 lower bound on RTO.
    pub min_rto: Duration,
    /// Upper bound on RTO.
    pub max_rto: Duration,
    /// Apply `min_rto` to the RTO's variance term (RTO = SRTT +
    /// max(4·RTTVAR, min_rto), Linux) rather than to the RTO (RFC 6298
    /// §2.4, the default); see [`RttEstimator::with_min_on_variance`].
    pub rto_min_on_variance: bool,
    /// RTO before the first RTT sample (RFC 6298 §2.1).
    pub initial_rto: Duration,
    /// Clock granularity G of RFC 6298 §2.
    pub clock_granularity: Duration,
    /// Limited Transmit (RFC 3042, a SHOULD of RFC 5681 §3.2 step 1): one
    /// new segment on each of the first two duplicate ACKs. ns-2's
    /// `singledup_` (on by default in 2.35).
    pub limited_transmit: bool,
    /// NewReno "Impatient" timer (RFC 6582 §3.2 step 6, §4.2): restart the
    /// retransmission timer only on the first partial ACK of a recovery.
    /// `false` gives "Slow-but-Steady" (restart on every partial ACK).
    /// ns-2 2.35 defaults to Impatient (`newreno_changes1_ 1`).
    pub newreno_impatient: bool,
    /// What ssthresh is halved from when the retransmission timer fires.
    pub rto_ssthresh: RtoSsthresh,
    /// Which segments give RTT samples.
    pub rtt_timing: RttTiming,
    /// Run TCP-Peach on top of `variant` (paper 002; the paper's own
    /// comparison ran it beside NewReno with SACK).
    pub peach: Option<PeachConfig>,
    /// Receive window in segments the peer advertised in the handshake,
    /// used until the first ACK (TCP-Peach's Sudden Start needs rwnd
    /// before any ACK has arrived).
    pub initial_rwnd: u32,
    /// Loss recovery of the [`Variant::Sack`] sender: RFC 6675 (the
    /// default) or ns-2 2.35's `Agent/TCP/Sack1`. Other variants ignore it.
    pub sack_recovery: SackRecovery,
    /// Loss detection of the [`Variant::Sack`] sender with RFC 6675
    /// recovery: RFC 6675's DupThresh rule (the default) or RFC 8985
    /// RACK-TLP. Other variants and [`SackRecovery::Ns2`] ignore it.
    pub loss_detection: LossDetection,
    /// Proportional Rate Reduction (RFC 6937, PRR-SSRB) sets cwnd during
    /// the [`Variant::Sack`] sender's RFC 6675 recovery, in place of
    /// cwnd = ssthresh on entry (Linux's default since 3.2). Ignored by
    /// BBR, which sets cwnd itself (Linux runs no PRR under BBR).
    pub prr: bool,
    /// Window growth: Reno (RFC 5681, the default), CUBIC or Hybla. Loss
    /// detection and recovery stay `variant`'s.
    pub growth: Growth,
}

/// How a [`Variant::Sack`] sender recovers from a fast retransmit.
///
/// The two differ where a window has a second loss close to its end.
/// After a partial ACK the hole now at `snd_una` may have fewer than
/// DupThresh SACKed segments above it: RFC 6675's IsLost() does not
/// call it lost, NextSeg() rule (2) sends new data before it and pipe
/// still counts it, so with a small cwnd nothing more leaves until the
/// retransmission timer fires. ns-2's Sack1 retransmits any hole with
/// SACKed data above it before new data, and its pipe estimate drops by
/// one more on each partial ACK.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SackRecovery {
    /// RFC 6675 §5: cwnd = ssthresh = max(FlightSize/2, 2) on entry
    /// (RFC 5681 eq. (4)), SetPipe() from the scoreboard, NextSeg() rules
    /// (1)-(4) with RescueRxt.
    #[default]
    Rfc6675,
    /// ns-2 2.35 `Agent/TCP/Sack1` (tcp/tcp-sack1.cc, tcp/tcp.cc,
    /// tcp/scoreboard-rq.cc) with its defaults (`partial_ack_ 0`,
    /// `precisionReduce_ 1`, `LimTransmitFix_ 0`, `decrease_num_ 0.5`):
    ///
    /// * entry (`dupack_action()` -> `slowdown(CLOSE_SSTHRESH_HALF |
    ///   CLOSE_CWND_HALF)`): W = min(cwnd, rwnd); ssthresh = max(int(W/2),
    ///   2), cwnd = max(W/2, 1) (a floor of 1, not 2);
    /// * pipe is a counter (`pipe_`): outstanding segments minus DupThresh
    ///   on entry (the fast retransmission itself is not counted), one
    ///   less for every ACK that arrives in recovery and one less again
    ///   for a partial ACK, one more for every segment `send_much()`
    ///   sends; segments go out while pipe < int(cwnd);
    /// * next segment (`send_much()`, `ScoreBoardRQ::GetNextRetran()`):
    ///   the lowest hole not yet retransmitted with SACKed data above it,
    ///   else new data; no rescue retransmission.
    Ns2,
    /// ns-2 2.35 `Agent/TCP/Linux` (tcp/tcp-linux.cc, tcp/scoreboard1.cc),
    /// the recovery ns-2 runs under Linux's congestion-control modules
    /// (`select_ca`):
    ///
    /// * loss (`ScoreBoard1::UpdateScoreBoard()`, FACK): a segment is lost
    ///   once the highest SACKed one is DupThresh + 1 = 4 above it; a
    ///   retransmission is lost once a segment sent after it is SACKed
    ///   (or one retransmitted DupThresh + 1 later arrives);
    /// * entry (`tcp_fastretrans_alert()`, on the first newly lost
    ///   segment): ssthresh from the module (`ssthresh()`: half of cwnd
    ///   for Reno and Hybla, β for CUBIC), cwnd = the module's
    ///   `min_cwnd()` (`tcp_reno_min_cwnd()` = ssthresh/2 for Reno and
    ///   Hybla; CUBIC has none: ssthresh), and rate halving
    ///   (`next_pkts_in_flight_`, one segment per two ACKs) from the old
    ///   cwnd down towards it (`send_much()`);
    /// * sending (`send_much()`): while in flight (sent − SACKed − lost
    ///   and not resent) < max(cwnd, next_pkts_in_flight_), the lowest
    ///   lost segment, else new data; also outside recovery;
    /// * exit (cumulative ACK ≥ recover_): cwnd = min(ssthresh, in flight
    ///   + 3) if below ssthresh (`tcp_moderate_cwnd()`);
    /// * timeout (`enter_loss()`): ssthresh from the module, cwnd = 1,
    ///   every unSACKed segment lost (`MarkLoss()`), SACK marks kept, no
    ///   go-back-N; counted as a timeout (ns-2's `nrexmit_`);
    /// * the timer restarts on every ACK, duplicates included
    ///   (`renew_timer`), each ACK feeds SRTT (timestamps), and only the
    ///   acknowledgment of the timed segment ends the backoff.
    Ns2Linux,
}

/// How the sender takes RTT samples for its retransmission timer.
///
/// RFC 6298 §3 allows both: with the timestamp option (RFC 7323 §4.3)
/// every ACK of new data is a valid sample, retransmissions included;
/// without it Karn's algorithm forbids samples from retransmitted segments,
/// and BSD-derived stacks (and ns-2 2.35 with `timestamps_ false`, the
/// default the TCP papers ran) time one segment per RTT. The difference
/// shows where timeouts are frequent: a timestamp sample after a
/// retransmission ends the exponential backoff at once (RFC 6298 §5.7),
/// while Karn's keeps it until a segment sent once is acknowledged. With
/// 50 Reno flows on a T1 (paper 004 §III-C.1) that is ~40 % more timeouts
/// than ns-2 with `Timestamps`, the same count with `Karn`
/// (`crates/satcc-ns2/tests/ns2_tfrcp.rs`, `reno_timeouts_50_flows`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RttTiming {
    /// A sample from every cumulative ACK of new data (timestamps).
    #[default]
    Timestamps,
    /// One segment timed at a time, a new one (never a retransmission),
    /// the timing abandoned on a retransmission; the backoff lasts until
    /// it is acknowledged (Karn and Partridge; ns-2 `rtt_active_`).
    Karn,
}

/// The quantity halved into ssthresh on a retransmission timeout.
///
/// RFC 5681 §3.1 eq. (4) halves FlightSize. ns-2 2.35 (`slowdown(
/// CLOSE_SSTHRESH_HALF)`) halves the window `min(cwnd_, window_)`, and its
/// `cwnd_` is not inflated during fast recovery (the inflation lives in
/// `dupwnd_`). After a large slow-start overshoot the two differ by 2x:
/// FlightSize still counts the whole overshooting flight, the window has
/// already been halved by fast recovery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RtoSsthresh {
    /// RFC 5681: max(FlightSize/2, 2).
    FlightSize,
    /// ns-2: max(min(cwnd without recovery inflation, rwnd)/2, 2).
    Window,
}

impl Default for SenderConfig {
    fn default() -> Self {
        SenderConfig {
            variant: Variant::NewReno,
            mss: 1000,
            // RFC 3390 for a 1000-byte MSS.
            initial_window: 4,
            initial_ssthresh: u32::MAX,
            max_window: u32::MAX,
            dupack_threshold: 3,
            min_rto: Duration::from_secs(1),
            max_rto: Duration::from_secs(60),
            rto_min_on_variance: false,
            initial_rto: Duration::from_secs(1),
            clock_granularity: Duration::from_millis(1),
            limited_transmit: true,
            newreno_impatient: true,
            rto_ssthresh: RtoSsthresh::FlightSize,
            rtt_timing: RttTiming::Timestamps,
            peach: None,
            initial_rwnd: u32::MAX,
            sack_recovery: SackRecovery::Rfc6675,
            loss_detection: LossDetection::Rfc6675,
            prr: false,
            growth: Growth::Reno,
        }
    }
}

/// What the application learns from the sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SenderEvent {
    /// Every byte the application gave has been acknowledged.
    AllAcked,
}

/// Counters and current state, for monitoring.
#[derive(Clone, Copy, Debug, Default)]
pub struct SenderStats {
    /// Congestion window in segments.
    pub cwnd: f64,
    /// Slow-start threshold in segments.
    pub ssthresh: f64,
    /// Smoothed RTT, if measured.
    pub srtt: Option<Duration>,
    /// Current retransmission timeout.
    pub rto: Duration,
    /// Data segments sent, retransmissions included.
    pub segments_sent: u64,
    /// Retransmitted segments.
    pub retransmits: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Fast retransmits (entries into loss recovery), and with RACK-TLP
    /// the losses a Tail Loss Probe repaired (RFC 8985 §7.4.2: a window
    /// reduction without a recovery).
    pub fast_retransmits: u64,
    /// RACK-TLP: segments marked lost (RFC 8985 §6.2 step 5, §6.3).
    pub rack_marked_lost: u64,
    /// RACK-TLP: retransmissions found lost (without the timer).
    pub lost_retransmits: u64,
    /// RACK-TLP: Tail Loss Probes sent (RFC 8985 §7.3).
    pub tlp_probes: u64,
    /// Payload bytes cumulatively acknowledged.
    pub acked_bytes: u64,
    /// RTT samples taken.
    pub rtt_samples: u64,
    /// Sum of all RTT samples (mean RTT = `sum_rtt / rtt_samples`).
    pub sum_rtt: Duration,
    /// Smallest RTT sample.
    pub min_rtt: Option<Duration>,
    /// Duplicate ACKs received (not counting dummy echoes).
    pub dupacks: u64,
    /// ACKs received.
    pub acks_received: u64,
    /// ACKs ignored: acknowledging data never sent, or older than
    /// `snd_una`.
    pub acks_ignored: u64,
    /// Payload bytes sent, retransmissions included.
    pub bytes_sent: u64,
    /// Oldest unacknowledged segment.
    pub snd_una: u64,
    /// One past the highest segment sent.
    pub snd_max: u64,
    /// The sender is in fast recovery.
    pub in_recovery: bool,
    /// RFC 6675 pipe in segments (the Sack variant; during an ns-2 Sack1
    /// recovery, [`SackRecovery::Ns2`], its `pipe_` counter, floored at 0;
    /// FlightSize otherwise).
    pub pipe: u64,
    /// TCP-Peach dummy segments sent.
    pub dummies_sent: u64,
    /// Bytes carried by dummy segments (copies of data already sent).
    pub dummy_bytes_sent: u64,
    /// ACKs for dummy segments (marked by the receiver) received.
    pub dummy_acks: u64,
    /// Sudden Starts run (the connection's first included).
    pub sudden_starts: u64,
    /// Rapid Recoveries entered.
    pub rapid_recoveries: u64,
    /// Rapid Recoveries that ended in Sudden Start because the
    /// retransmission went unacknowledged for an RTT.
    pub rapid_recovery_expiries: u64,
    /// The receiver did not echo the dummy mark, so the sender fell back
    /// to its base variant.
    pub peach_fallback: bool,
    /// TCP-Peach's wdsn (dummy ACKs still to absorb).
    pub wdsn: u64,
    /// TCP-Peach's adsn (dummies Rapid Recovery may still send).
    pub adsn: u64,
    /// Messages of another protocol handed to the sender, ignored.
    pub foreign: u64,
}

/// A one-way TCP sender.
#[derive(Debug)]
pub struct TcpSender {
    cfg: SenderConfig,
    mss: u64,
    // Application data.
    unlimited: bool,
    pushed_bytes: u64,
    /// Bytes carried by segments `0..snd_max`.
    assigned_bytes: u64,
    /// Segments shorter than the MSS at or above `snd_una`, ascending.
    short_segs: VecDeque<(u64, u32)>,
    reported_all_acked: u64,
    events: VecDeque<SenderEvent>,
    /// What the endpoint interface has reported so far: acknowledged
    /// bytes, and loss reactions (fast retransmits + timeouts).
    pub(super) reported_acked: u64,
    pub(super) reported_losses: u64,
    // Sequence space.
    snd_una: u64,
    snd_nxt: u64,
    snd_max: u64,
    // Congestion control.
    cwnd: f64,
    ssthresh: f64,
    rwnd: u64,
    dupacks: u32,
    in_recovery: bool,
    /// RFC 6582 `recover` / RFC 6675 RecoveryPoint, as one past HighData.
    recover: u64,
    /// The last window reduction was a timeout (ns-2 Reno's bugFix_ rule).
    last_cut_timeout: bool,
    first_partial_seen: bool,
    /// Limited Transmit segments sent since the last cumulative ACK.
    lt_sent: u64,
    /// A retransmission that goes out regardless of the window.
    pending_rexmit: Option<u64>,
    /// RFC 6675 RescueRxt, as one past the segment holding it (RescueRxt
    /// is the last octet of segment `rescue_end - 1`): NextSeg() rule (4)
    /// may fire once HighACK > RescueRxt, i.e. `snd_una > rescue_end`.
    /// `None` = undefined.
    rescue_end: Option<u64>,
    /// [`SackRecovery::Ns2`]: ns-2 Sack1's `pipe_` counter.
    ns2_pipe: i64,
    /// [`SackRecovery::Ns2Linux`]: the Agent/TCP/Linux shim's state.
    shim: Option<Box<Shim>>,
    sb: Scoreboard,
    // Timer.
    rtt: RttEstimator,
    rto_deadline: Option<Instant>,
    /// The latest RTT sample.
    last_rtt: Option<Duration>,
    /// [`RttTiming::Karn`]: the segment being timed and when it was sent.
    timed: Option<(u64, Instant)>,
    peach: Option<PeachState>,
    growth: GrowthState,
    /// BBR's model and pacing ([`Growth::Bbr`]).
    bbr: Option<Box<BbrState>>,
    /// Pacing: the earliest time the next segment may leave (Linux's
    /// `tcp_wstamp_ns`).
    next_send: Instant,
    /// The last [`Self::poll_transmit`] held a segment back for pacing.
    pace_wait: bool,
    /// Data segments sent (Linux `data_segs_out`; the first few go
    /// unpaced).
    data_segs_out: u64,
    /// BBR: the loss state of a retransmission timeout lasts until this
    /// segment is acknowledged (RFC 6582 `recover` at the timeout).
    loss_until: Option<u64>,
    /// BBR: segments marked lost on the ACK being processed.
    ack_losses: u64,
    /// RACK-TLP state ([`LossDetection::Rack`] on a SACK sender with RFC
    /// 6675 recovery).
    rack: Option<Box<Rack>>,
    /// A Tail Loss Probe to send (the segment; `snd_max` for new data).
    pending_probe: Option<u64>,
    /// RFC 6937: `prr_delivered`, `prr_out` and `RecoverFS`, in segments.
    prr_delivered: u64,
    prr_out: u64,
    recover_fs: u64,
    /// The next [`Self::poll_transmit`] is known to find nothing to send:
    /// set only by the plain path (no BBR, RACK, TCP-Peach or ns-2 Linux
    /// shim) right after it sent new data up to the window's edge, and
    /// cleared by every method that changes the sender's state
    /// ([`Self::handle_input`], [`Self::handle_timeout`], and the
    /// application's calls). A driver drains `poll_transmit` until `None`
    /// after every input, so without it each drain ends with a full pass
    /// through `poll_data` that finds the window closed.
    blocked: bool,
    /// Polls the `blocked` cache answered, each checked against the full
    /// decision (tests only).
    #[cfg(test)]
    pub(crate) blocked_hits: u64,
    pub(super) stats: SenderStats,
}

/// min(floor(cwnd), rwnd, max_window), at least 1 ([`TcpSender::window`]).
///
/// A float-to-integer cast truncates toward zero and saturates (NaN to 0),
/// which is `floor()` on every value a window can take, without the libm
/// call `floor()` is on baseline x86-64. Through `i64`: one conversion
/// instruction and its saturation checks, where `as u64` (no such
/// instruction before AVX-512) converts twice around 2^63 and selects;
/// 0.33 M fewer instructions on the 40 s bench run. The two casts differ
/// only from 2^63 up (`i64` saturates there),
/// where both exceed `max_window`, a `u32`, so the window is the same;
/// negatives give 0 either way.
#[inline]
fn window_of(cwnd: f64, rwnd: u64, max_window: u32) -> u64 {
    let w = ((cwnd as i64).max(0) as u64)
        .min(rwnd)
        .min(u64::from(max_window));
    w.max(1)
}

impl TcpSender {
    /// A sender at time `now` with nothing to send yet.
    pub fn new(cfg: SenderConfig, _now: Instant) -> Self {
        let rtt = RttEstimator::new(
            cfg.initial_rto,
            cfg.min_rto,
            cfg.max_rto,
            cfg.clock_granularity,
        )
        .with_min_on_variance(cfg.rto_min_on_variance);
        let mut cwnd = (cfg.initial_window.max(1) as f64).min(cfg.max_window.max(1) as f64);
        let mut stats = SenderStats::default();
        let peach = cfg.peach.clone().map(|pc| {
            // Paper 002 §III-B: a connection opens with cwnd = 1, one data
            // segment, then rwnd - 1 dummies over the handshake RTT.
            cwnd = 1.0;
            stats.sudden_starts = 1;
            let mut p = PeachState::new(pc);
            let rwnd = (cfg.initial_rwnd as u64).min(cfg.max_window as u64);
            p.arm_sudden_start(p.cfg.initial_rtt, rwnd);
            p
        });
        TcpSender {
            mss: cfg.mss.max(1) as u64,
            unlimited: false,
            pushed_bytes: 0,
            assigned_bytes: 0,
            short_segs: VecDeque::new(),
            reported_all_acked: 0,
            events: VecDeque::new(),
            reported_acked: 0,
            reported_losses: 0,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            cwnd,
            ssthresh: cfg.initial_ssthresh as f64,
            rwnd: cfg.initial_rwnd as u64,
            dupacks: 0,
            in_recovery: false,
            recover: 0,
            last_cut_timeout: false,
            first_partial_seen: false,
            lt_sent: 0,
            pending_rexmit: None,
            rescue_end: None,
            ns2_pipe: 0,
            shim: (cfg.variant == Variant::Sack
                && cfg.sack_recovery == SackRecovery::Ns2Linux
                && cfg.peach.is_none()
                && !matches!(cfg.growth, Growth::Bbr(_)))
            .then(Box::default),
            sb: Scoreboard::new(cfg.dupack_threshold),
            rtt,
            rto_deadline: None,
            last_rtt: None,
            timed: None,
            peach,
            growth: GrowthState::new(cfg.growth),
            bbr: match cfg.growth {
                Growth::Bbr(b) => Some(Box::new(BbrState::new(b, _now, cwnd))),
                _ => None,
            },
            next_send: Instant::ZERO,
            pace_wait: false,
            data_segs_out: 0,
            loss_until: None,
            ack_losses: 0,
            rack: match cfg.loss_detection {
                LossDetection::Rack { tlp }
                    if cfg.variant == Variant::Sack
                        && cfg.sack_recovery == SackRecovery::Rfc6675 =>
                {
                    Some(Box::new(Rack::new(tlp)))
                }
                _ => None,
            },
            pending_probe: None,
            prr_delivered: 0,
            prr_out: 0,
            recover_fs: 0,
            blocked: false,
            #[cfg(test)]
            blocked_hits: 0,
            stats,
            cfg,
        }
    }

    /// The application hands over `bytes` more bytes.
    pub fn push_data(&mut self, bytes: u64) {
        self.blocked = false;
        self.pushed_bytes = self.pushed_bytes.saturating_add(bytes);
    }

    /// The application always has data (bulk transfer).
    pub fn set_unlimited(&mut self) {
        self.blocked = false;
        self.unlimited = true;
    }

    /// The application closes: no new data from now on. What was already
    /// sent is still delivered (retransmitted as needed), and
    /// [`SenderEvent::AllAcked`] reports when it all is.
    pub fn close(&mut self) {
        self.blocked = false;
        self.unlimited = false;
        self.pushed_bytes = self.assigned_bytes;
    }

    /// An ACK arrived.
    pub fn handle_input(&mut self, now: Instant, ack: &TcpAck) {
        self.blocked = false;
        if self.bbr.is_none() || ack.ack > self.snd_max || ack.ack < self.snd_una {
            self.handle_ack(now, ack);
            return;
        }
        // tcp_rate.c: of the segments this ACK delivers, the most
        // recently sent one gives the rate sample. Looked at: the segment
        // at snd_una (a hole the ACK fills), the highest one cumulatively
        // acknowledged, and the top of the first SACK block (RFC 2018 §4:
        // the block holding the segment that triggered the ACK), each if
        // not delivered before.
        let mut cand = [None; 3];
        if ack.ack > self.snd_una {
            cand[0] = Some(self.snd_una);
            if !self.sb.sacked(ack.ack - 1) {
                cand[1] = Some(ack.ack - 1);
            }
        }
        if let Some(b) = ack.sack_blocks().first() {
            let top = b.end.saturating_sub(1);
            if b.end > b.start && top >= ack.ack && top < self.snd_max && !self.sb.sacked(top) {
                cand[2] = Some(top);
            }
        }
        let prior_inflight = self.inflight();
        // Delivered = cumulatively acknowledged + SACKed. Counted as the
        // change across this ACK only: the scoreboard forgets SACKed
        // segments at a timeout (RFC 6675 §5.1), and a running total
        // taken from it would then stop counting until snd_una caught up.
        let delivered_before = self.snd_una + self.sb.sacked_count();
        let rtt_samples = self.stats.rtt_samples;
        self.ack_losses = 0;
        self.handle_ack(now, ack);
        let rtt = (self.stats.rtt_samples > rtt_samples)
            .then_some(self.last_rtt)
            .flatten();
        if self.loss_until.is_some_and(|u| self.snd_una >= u) {
            self.loss_until = None;
        }
        let state = if self.in_recovery {
            CaState::Recovery
        } else if self.loss_until.is_some() {
            CaState::Loss
        } else {
            CaState::Open
        };
        let a = BbrAck {
            now,
            acked: (self.snd_una + self.sb.sacked_count()).saturating_sub(delivered_before),
            latest: None,
            rtt,
            prior_inflight,
            inflight: self.inflight(),
            losses: self.ack_losses,
            state,
        };
        let mss = self.mss as f64;
        let cap = self.cfg.max_window.max(1) as f64;
        if let Some(b) = self.bbr.as_mut() {
            let a = BbrAck {
                latest: b.latest_of(cand.into_iter().flatten()),
                ..a
            };
            self.cwnd = b.on_ack(a, self.cwnd, mss).min(cap);
            b.advance(self.snd_una);
        }
    }

    /// Segments in flight: RFC 6675 pipe for the Sack variant, FlightSize
    /// otherwise. After a timeout, until `loss_until` is acknowledged, only
    /// what the go-back-N resend has put out since: Linux's
    /// tcp_enter_loss() marks every unSACKed segment lost, so BBR's
    /// tcp_packets_in_flight() counts none of the old flight (without
    /// this PROBE_RTT would wait for it to drain, and it never does).
    fn inflight(&self) -> u64 {
        if let Some(r) = &self.rack {
            // RACK's marks are Linux's: this is tcp_packets_in_flight().
            r.pipe()
        } else if self.loss_until.is_some() {
            self.snd_nxt - self.snd_una
        } else if self.cfg.variant == Variant::Sack {
            self.sb.pipe()
        } else {
            self.snd_max - self.snd_una
        }
    }

    fn handle_ack(&mut self, now: Instant, ack: &TcpAck) {
        self.stats.acks_received += 1;
        // RFC 5681 §3.2 / RFC 793: an ACK for data never sent is dropped,
        // and an ACK older than SND.UNA carries nothing new.
        if ack.ack > self.snd_max || ack.ack < self.snd_una {
            self.ignore_ack(ack);
            return;
        }
        self.rwnd = ack.wnd as u64;
        if self.shim.is_some() {
            self.shim_ack(now, ack);
            return;
        }
        let delivered_before = self.snd_una + self.sb.sacked_count();
        if self.ns2_sack() && self.in_recovery && !ack.dummy_echo {
            // tcp-sack1.cc Sack1TcpAgent::recv(), fast recovery branch:
            // `--pipe_` for every ACK.
            self.ns2_pipe -= 1;
        }
        let old_una = self.snd_una;
        let advanced = ack.ack > old_una;
        if advanced {
            self.on_cumulative_ack(now, ack);
        }
        let newly_sacked = if self.rack.is_some() {
            self.rack_update(now, ack)
        } else if self.cfg.variant == Variant::Sack {
            // RFC 6675 §5: update the scoreboard on every ACK.
            self.sb.update(ack.sack_blocks())
        } else {
            0
        };
        // Dummy echoes (TCP-Peach) are probes, never loss signals by
        // themselves; SACK news they carry still counts (RFC 6675 §2).
        if ack.dummy_echo {
            self.on_dummy_echo(now, newly_sacked);
            return;
        }
        if self.peach.is_some() && self.peach_on_ack(now, advanced) {
            return;
        }
        let outstanding = self.snd_max > self.snd_una;
        let is_dup = match self.cfg.variant {
            // RFC 6675 §2 DupAck: new SACK information, even on a
            // cumulative ACK; a receiver without SACK falls back to the
            // RFC 5681 §2 definition.
            Variant::Sack => newly_sacked > 0 || (ack.sack_len == 0 && !advanced && outstanding),
            // RFC 5681 §2 DUPLICATE ACKNOWLEDGMENT (a)-(d). Rule (e), same
            // window, is not applied: routers (REFWA) rewrite the window.
            _ => !advanced && outstanding,
        };
        if is_dup {
            self.stats.dupacks += 1;
            self.on_dupack(now);
        }
        if self.rack.is_some() {
            self.rack_on_ack(now, ack, advanced || newly_sacked > 0);
        }
        if self.prr_on() && self.in_recovery {
            let delivered =
                (self.snd_una + self.sb.sacked_count()).saturating_sub(delivered_before);
            self.prr_ack(delivered);
        }
    }

    /// An ACK for data never sent or older than SND.UNA: counted and
    /// dropped. Out of line (`#[cold]`): rare, and kept off the per-ACK
    /// path's cache lines.
    #[cold]
    #[inline(never)]
    fn ignore_ack(&mut self, ack: &TcpAck) {
        // A dummy's echo rides at low priority and may be overtaken by
        // data ACKs; its credit still counts (paper 002 §III-A).
        if ack.dummy_echo && ack.ack <= self.snd_max {
            self.on_dummy_ack();
        }
        self.stats.acks_ignored += 1;
    }

    /// The scoreboard update of one ACK with RACK-TLP (out of line: only
    /// RACK runs it).
    #[cold]
    #[inline(never)]
    fn rack_update(&mut self, now: Instant, ack: &TcpAck) -> u64 {
        let min_rtt = self.stats.min_rtt;
        let Some(r) = self.rack.as_mut() else {
            return 0;
        };
        // RFC 8985 §6.2 step 2: each newly SACKed segment is delivered.
        self.sb
            .update_with(ack.sack_blocks(), |seq| r.on_sacked(seq, now, min_rtt))
    }

    /// The rest of [`Self::handle_ack`] for a TCP-Peach dummy's echo (out
    /// of line: only TCP-Peach sends dummies).
    #[cold]
    #[inline(never)]
    fn on_dummy_echo(&mut self, now: Instant, newly_sacked: u64) {
        self.on_dummy_ack();
        if newly_sacked > 0 {
            self.stats.dupacks += 1;
            self.on_dupack(now);
        }
    }

    /// TCP-Peach's check of a duplicate ACK in [`Self::handle_ack`]; true
    /// if the ACK is used up (the caller returns). Out of line: only
    /// TCP-Peach runs it.
    #[cold]
    #[inline(never)]
    fn peach_on_ack(&mut self, now: Instant, advanced: bool) -> bool {
        let rtt = self.rtt_reference();
        if let Some(p) = self.peach.as_mut() {
            // Paper 002 §III-A/B: a receiver that does not know dummies
            // takes one for a duplicate segment and answers with an
            // unmarked duplicate ACK. Such answers are not loss signals;
            // they end the dummies and the sender runs its base variant.
            // A duplicate ACK may also come from data beyond a lost
            // segment (and the dummies may all have been dropped), so the
            // verdict waits for more duplicates than the outstanding data
            // segments could have caused.
            if advanced {
                p.suspects = 0;
            }
            // §III-B: the check belongs to the connection's Sudden Start
            // (until one RTT after its last dummy), before any loss.
            // Later, duplicates are left to loss recovery: Rapid
            // Recovery's dummies are often dropped by a congested router,
            // and retransmissions draw duplicates of their own.
            let verifying = p.opening
                && self.stats.fast_retransmits + self.stats.timeouts == 0
                && (p.ss_remaining > 0 || now < p.verify_until);
            if !p.confirmed && p.unanswered > 0 && !advanced && (verifying || p.fallback) {
                if p.fallback {
                    if now < p.swallow_until {
                        p.unanswered -= 1;
                        return true;
                    }
                } else {
                    p.suspects += 1;
                    let data = (self.snd_max - self.snd_una).saturating_sub(self.lt_sent);
                    if p.suspects > data {
                        p.unanswered = p.unanswered.saturating_sub(p.suspects);
                        p.fall_back();
                        // The answers to dummies already sent arrive within
                        // about one RTT of the last one.
                        p.swallow_until = now + rtt + Duration(rtt.0 / 4);
                        self.stats.peach_fallback = true;
                        // The duplicates so far answered dummies.
                        self.dupacks = 0;
                        // Nothing but slow start can open the window now,
                        // as for the base variant at the start of a
                        // connection.
                        self.ssthresh = self.cfg.initial_ssthresh as f64;
                        return true;
                    }
                }
            }
        }
        false
    }

    /// PRR runs: the SACK sender with RFC 6675 recovery, `prr` set, no
    /// BBR.
    fn prr_on(&self) -> bool {
        self.cfg.prr
            && self.cfg.variant == Variant::Sack
            && self.cfg.sack_recovery == SackRecovery::Rfc6675
            && self.bbr.is_none()
            && self.peach.is_none()
    }

    /// RFC 6937 §3.1, on every ACK in recovery (PRR-SSRB, the RFC's
    /// recommended reduction bound, as Linux's `tcp_cwnd_reduction()`):
    /// while pipe > ssthresh, send in proportion to what was delivered
    /// (sndcnt = ceil(prr_delivered·ssthresh/RecoverFS) − prr_out);
    /// below, slow-start back towards ssthresh, by at most what was
    /// delivered plus one segment. cwnd = pipe + sndcnt.
    fn prr_ack(&mut self, delivered: u64) {
        if delivered == 0 {
            // Linux: an ACK delivering nothing changes nothing.
            return;
        }
        self.prr_delivered += delivered;
        // The fast retransmission of this ACK, not sent yet, is counted
        // as sent (RFC 6937 counts it in prr_out); RFC 6675's SetPipe()
        // already counts it in flight (HighRxt), RACK's pipe not yet.
        let pending = self.pending_rexmit.is_some() as u64;
        let pipe = self.pipe_now() + if self.rack.is_some() { pending } else { 0 };
        let out = (self.prr_out + pending) as i64;
        let ssthresh = self.ssthresh.max(0.0) as u64;
        let sndcnt = if pipe > ssthresh {
            let fs = self.recover_fs.max(1);
            (self.prr_delivered * ssthresh).div_ceil(fs) as i64 - out
        } else {
            let limit = (self.prr_delivered as i64 - out).max(delivered as i64) + 1;
            ((ssthresh - pipe) as i64).min(limit)
        };
        self.cwnd = (pipe as i64 + sndcnt.max(0)) as f64;
    }

    /// The pipe the SACK sender's recovery sends against: RACK's count
    /// with RACK-TLP, RFC 6675 SetPipe() otherwise.
    fn pipe_now(&self) -> u64 {
        match &self.rack {
            Some(r) => r.pipe(),
            None => self.sb.pipe(),
        }
    }

    /// In RTO recovery: after a timeout, until the cumulative ACK passes
    /// what was outstanding then (the guard of RFC 6582 §4.1 that
    /// [`Self::on_dupack`] applies).
    fn in_rto_recovery(&self) -> bool {
        if let Some(sh) = &self.shim {
            return sh.ca == ShimCa::Loss;
        }
        self.last_cut_timeout && self.snd_una <= self.recover
    }

    /// Fast recovery may start now (no second reduction for one window).
    fn recovery_allowed(&self) -> bool {
        if self.last_cut_timeout {
            self.snd_una > self.recover
        } else {
            self.snd_una >= self.recover
        }
    }

    /// RFC 8985 §6.2 step 5 on an ACK, then §7.4 (the ACK of a loss
    /// probe), recovery if a segment is lost (Linux `tcp_time_to_recover()`
    /// with RACK: any segment marked lost), and §7.2 (the probe timer).
    /// `news`: the ACK acknowledged or SACKed something.
    #[cold]
    #[inline(never)]
    fn rack_on_ack(&mut self, now: Instant, ack: &TcpAck, news: bool) {
        let recovering = self.in_recovery || self.in_rto_recovery();
        let newly = self.rack_detect(now, recovering);
        let mut reduce = false;
        if let Some(r) = self.rack.as_mut() {
            // §7.4.2 (Linux tcp_process_tlp_ack()): once the ACK reaches
            // TLP.end_seq, a probe of new data, or a duplicate ACK with
            // nothing new (the original and the probe both arrived),
            // resolves it; an ACK beyond it after a retransmitted probe
            // means the probe repaired a loss (the receiver sends no
            // D-SACK that could say otherwise).
            if let Some(end) = r.tlp_end.filter(|&e| ack.ack >= e) {
                if !r.tlp_retrans || !news {
                    r.tlp_end = None;
                } else if ack.ack > end {
                    r.tlp_end = None;
                    reduce = true;
                }
            }
        }
        if self.bbr.is_some() {
            self.ack_losses += newly;
        }
        // A segment marked lost and not yet resent: one whose
        // retransmission is already in flight (resent in the recovery
        // that just ended) is no new congestion signal.
        let lost = self.rack.as_mut().is_some_and(|r| r.next_lost().is_some());
        if lost && !self.in_recovery && self.recovery_allowed() {
            self.enter_recovery(now);
        } else if reduce && !self.in_recovery && self.bbr.is_none() {
            self.tlp_reduction();
        }
        self.arm_tlp(now);
    }

    /// RACK_detect_loss_and_arm_timer() (RFC 8985 §6.2 step 5, §8).
    fn rack_detect(&mut self, now: Instant, recovering: bool) -> u64 {
        let dupthresh = self.cfg.dupack_threshold.max(1) as u64;
        let (min_rtt, srtt) = (self.stats.min_rtt, self.rtt.srtt());
        let Some(r) = self.rack.as_mut() else {
            return 0;
        };
        let newly = r.detect_loss(now, recovering, dupthresh, min_rtt, srtt);
        self.stats.rack_marked_lost = r.marked_lost;
        self.stats.lost_retransmits = r.lost_retransmits;
        newly
    }

    /// RFC 8985 §7.4.2: "the sender SHOULD ... invoke congestion control
    /// ... as if a fast recovery had happened": Linux enters CWR
    /// (`tcp_init_cwnd_reduction()`, `tcp_end_cwnd_reduction()`):
    /// ssthresh from the congestion control, cwnd = min(cwnd, ssthresh).
    fn tlp_reduction(&mut self) {
        let flight = self.snd_max - self.snd_una;
        self.ssthresh = match self.growth.on_congestion(flight, self.cwnd) {
            Some(ss) => ss,
            None => ((flight / 2).max(2)) as f64,
        };
        self.cwnd = self.cwnd.min(self.ssthresh);
        self.last_cut_timeout = false;
        self.recover = self.snd_max;
        self.stats.fast_retransmits += 1;
    }

    /// RFC 8985 §7.2: (re)arm the probe timer after new data is sent or an
    /// ACK arrives, when the connection is open: not in fast or RTO
    /// recovery, nothing SACKed or marked lost (Linux: TCP_CA_Open), no
    /// probe unresolved, something outstanding. Otherwise no probe timer.
    #[inline]
    fn arm_tlp(&mut self, now: Instant) {
        if self.rack.as_ref().is_some_and(|r| r.tlp()) {
            self.arm_tlp_rack(now);
        }
    }

    /// [`Self::arm_tlp`] with RACK-TLP on (out of line: only RACK runs it).
    #[cold]
    #[inline(never)]
    fn arm_tlp_rack(&mut self, now: Instant) {
        let open = !self.in_recovery
            && !self.in_rto_recovery()
            && self.sb.sacked_count() == 0
            && self.snd_max > self.snd_una;
        let (srtt, flight, rto) = (
            self.rtt.srtt(),
            self.snd_max - self.snd_una,
            self.rto_deadline,
        );
        let Some(r) = self.rack.as_mut().filter(|r| r.tlp()) else {
            return;
        };
        r.pto_deadline = (open && r.lost_out() == 0 && r.tlp_end.is_none())
            .then(|| Rack::pto(now, srtt, flight, rto));
    }

    /// RFC 8985 §7.3, TLP_send_probe(): new data if there is any and the
    /// receiver's window allows, else the highest segment sent; then the
    /// RTO restarts.
    fn send_probe(&mut self, now: Instant) {
        let rwnd = self.rwnd.max(1).min(self.cfg.max_window as u64);
        let Some(r) = self.rack.as_mut() else {
            return;
        };
        r.pto_deadline = None;
        if r.tlp_end.is_some() || self.snd_max == self.snd_una {
            return;
        }
        if self.has_new_data() && self.snd_max < self.snd_una + rwnd {
            self.pending_probe = Some(self.snd_max);
        } else if !self.sb.sacked(self.snd_max - 1) {
            self.pending_probe = Some(self.snd_max - 1);
        }
        self.rto_deadline = Some(now + self.rtt.rto());
    }

    /// The RACK reordering timer fired (RFC 8985 §6.2 step 5, §8).
    fn rack_reo_timeout(&mut self, now: Instant) {
        let recovering = self.in_recovery || self.in_rto_recovery();
        let newly = self.rack_detect(now, recovering);
        if self.bbr.is_some() {
            self.ack_losses += newly;
        }
        // A segment marked lost and not yet resent: one whose
        // retransmission is already in flight (resent in the recovery
        // that just ended) is no new congestion signal.
        let lost = self.rack.as_mut().is_some_and(|r| r.next_lost().is_some());
        if lost && !self.in_recovery && self.recovery_allowed() {
            self.enter_recovery(now);
        }
    }

    fn on_cumulative_ack(&mut self, now: Instant, ack: &TcpAck) {
        let newly = ack.ack - self.snd_una;
        let bytes = self.bytes_in(self.snd_una, ack.ack);
        self.stats.acked_bytes += bytes;
        self.snd_una = ack.ack;
        // ns-2: a jump of the cumulative ACK past snd_nxt (go-back-N after a
        // timeout) skips what the receiver already holds.
        self.snd_nxt = self.snd_nxt.max(self.snd_una);
        self.sb.advance(self.snd_una);
        if self.pending_rexmit.is_some_and(|s| s < self.snd_una) {
            self.pending_rexmit = None;
        }
        // RFC 7323 §4.3 / RFC 6298 §3: timestamps give a valid sample on
        // every ACK of new data, retransmissions included. Duplicate ACKs
        // are never sampled.
        let r = now.saturating_since(ack.ts_echo);
        match self.cfg.rtt_timing {
            // The ns-2 Linux shim took its sample already (`shim_ack`).
            _ if self.shim.is_some() => {}
            RttTiming::Timestamps => self.rtt.on_sample(r),
            RttTiming::Karn => self.karn_sample(now, ack.ack),
        }
        self.last_rtt = Some(r);
        self.stats.rtt_samples += 1;
        self.stats.sum_rtt += r;
        self.stats.min_rtt = Some(self.stats.min_rtt.map_or(r, |m| m.min(r)));
        if self.rack.is_some() {
            self.rack_advance(now);
        }
        // RFC 6675 §5: a cumulative ACK resets DupAcks.
        self.dupacks = 0;
        self.lt_sent = 0;
        if self.peach.is_some() {
            self.peach_on_cumulative_ack();
        }
        let restart_timer = if self.in_recovery {
            self.recovery_cumulative_ack(newly)
        } else {
            self.open_cwnd(now, newly);
            true
        };
        // RFC 6298 §5.2 and §5.3.
        if self.snd_una == self.snd_max {
            self.rto_deadline = None;
        } else if restart_timer {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
        if !self.unlimited
            && self.pushed_bytes > self.reported_all_acked
            && self.stats.acked_bytes >= self.pushed_bytes
        {
            self.report_all_acked();
        }
    }

    /// RFC 6298 §3 with Karn's algorithm: the ACK of the timed segment
    /// gives the sample. Out of line: only Karn timing runs it.
    #[cold]
    #[inline(never)]
    fn karn_sample(&mut self, now: Instant, ack: u64) {
        if let Some((_, sent)) = self.timed.filter(|&(seq, _)| ack > seq) {
            self.rtt.on_sample(now.saturating_since(sent));
            self.timed = None;
        }
    }

    /// RACK's part of a cumulative ACK (out of line: only RACK runs it).
    #[cold]
    #[inline(never)]
    fn rack_advance(&mut self, now: Instant) {
        if let Some(rk) = self.rack.as_mut() {
            // RFC 8985 §6.2 steps 1-2: min_RTT first, then each newly
            // acknowledged segment.
            rk.advance(self.snd_una, now, self.stats.min_rtt);
        }
    }

    /// TCP-Peach's part of a cumulative ACK (out of line: only TCP-Peach
    /// runs it).
    #[cold]
    #[inline(never)]
    fn peach_on_cumulative_ack(&mut self) {
        if let Some(p) = self.peach.as_mut() {
            // Paper 002 §III-C: Rapid Recovery ends when the retransmitted
            // segment is acknowledged; the base variant deflates cwnd.
            if p.rapid && self.snd_una > p.rr_seq {
                p.rapid = false;
                p.rr_deadline = None;
            }
        }
    }

    /// Every byte pushed is acknowledged: tell the application once.
    #[cold]
    #[inline(never)]
    fn report_all_acked(&mut self) {
        self.reported_all_acked = self.pushed_bytes;
        self.events.push_back(SenderEvent::AllAcked);
    }

    /// A cumulative ACK of `newly` segments in fast recovery; false if the
    /// retransmission timer must not restart (RFC 6582 §6.2's Impatient
    /// variant). Out of line: a minority of ACKs, and the per-ACK path
    /// stays on fewer cache lines.
    #[inline(never)]
    fn recovery_cumulative_ack(&mut self, newly: u64) -> bool {
        let mut restart_timer = true;
        // The ns-2 Linux shim ends its recovery itself, after the ACK
        // (`shim_alert`), and grows nothing in TCP_CA_Recovery.
        let variant = if self.shim.is_some() {
            None
        } else {
            Some(self.cfg.variant)
        };
        match variant {
            None => {}
            Some(Variant::Reno) => {
                // RFC 5681 §3.2 step 6: deflate and leave on any new ACK.
                self.cwnd = self.deflated_cwnd();
                self.in_recovery = false;
            }
            Some(Variant::NewReno) => {
                if self.snd_una >= self.recover {
                    // RFC 6582 §3.2 step 5, full ACK, option (2):
                    // cwnd = ssthresh (as ns-2 does).
                    self.cwnd = self.deflated_cwnd();
                    self.in_recovery = false;
                } else {
                    // RFC 6582 §3.2 step 6, partial ACK: retransmit the
                    // next hole, deflate by the amount acknowledged and
                    // add back one SMSS.
                    self.pending_rexmit = Some(self.snd_una);
                    self.cwnd = (self.cwnd - newly as f64 + 1.0).max(1.0);
                    if self.cfg.newreno_impatient && self.first_partial_seen {
                        restart_timer = false;
                    }
                    self.first_partial_seen = true;
                }
            }
            Some(Variant::Sack) => {
                // RFC 6675 §5 (A): a cumulative ACK beyond RecoveryPoint
                // ends recovery; cwnd is already ssthresh (4.2).
                if self.snd_una >= self.recover {
                    self.in_recovery = false;
                    if self.prr_on() {
                        // RFC 6937 §3.1: "On exiting recovery: cwnd =
                        // ssthresh".
                        self.cwnd = self.ssthresh;
                    }
                } else if self.cfg.sack_recovery == SackRecovery::Ns2 {
                    // tcp-sack1.cc Sack1TcpAgent::recv(), partial ACK
                    // with partial_ack_ 0: `--pipe_` once more ("so
                    // that we never do worse than slow-start").
                    self.ns2_pipe -= 1;
                }
            }
        }
        restart_timer
    }

    /// Window growth ([`Growth`]) for one ACK of `newly` new segments.
    fn open_cwnd(&mut self, now: Instant, newly: u64) {
        if self.bbr.is_some() {
            // BBR sets cwnd after the whole ACK (`handle_input`).
            return;
        }
        let cap = (self.cfg.max_window.max(1) as f64).min(self.rwnd.max(1) as f64);
        if self.cwnd >= cap {
            return;
        }
        let peach = self.peach.as_ref().is_some_and(PeachState::active);
        if self.growth.is_reno() {
            // The common case inline; the growth rules with state (CUBIC,
            // HyStart, Hybla) out of line, off the per-ACK cache lines.
            self.cwnd = reno_on_ack(self.cwnd, self.ssthresh, peach).min(cap);
            return;
        }
        self.open_cwnd_growth(now, newly, peach, cap);
    }

    /// [`Self::open_cwnd`] for a growth rule other than Reno.
    #[inline(never)]
    fn open_cwnd_growth(&mut self, now: Instant, newly: u64, peach: bool, cap: f64) {
        let info = AckInfo {
            now,
            acked: newly,
            srtt: self.rtt.srtt(),
            rtt: self.last_rtt,
            snd_una: self.snd_una,
            snd_nxt: self.snd_max,
            mss: self.mss,
            open: !self.in_rto_recovery(),
        };
        if let Some(ss) = self.growth.slow_start_exit(self.cwnd, self.ssthresh, info) {
            self.ssthresh = ss;
        }
        self.cwnd = self
            .growth
            .on_ack(self.cwnd, self.ssthresh, peach, info)
            .min(cap);
    }

    fn on_dupack(&mut self, now: Instant) {
        self.dupacks += 1;
        if self.in_recovery {
            if self.cfg.variant != Variant::Sack {
                // RFC 5681 §3.2 step 4 / RFC 6582 step 4: inflate.
                self.cwnd += 1.0;
            }
            self.rapid_recovery_dummies();
            return;
        }
        if self.rack.is_some() {
            // RFC 8985 replaces the DupThresh rule: recovery starts when
            // RACK marks a segment lost (`rack_on_ack`).
            return;
        }
        let dupthresh = self.cfg.dupack_threshold.max(1);
        let triggered = self.dupacks >= dupthresh
            // RFC 6675 §5 (2): three segments SACKed above HighACK.
            || (self.cfg.variant == Variant::Sack && self.sb.is_lost(self.snd_una));
        if !triggered {
            return;
        }
        // RFC 6582 §3.2 step 2 (and §4.1 for SACK): no second reduction for
        // losses from a window already reduced. ns-2's Reno applies the
        // same guard only after a timeout (bugFix_).
        //
        // After a timeout the go-back-N resend puts segments the receiver
        // already holds back in flight; once the cumulative ACK reaches
        // `recover` each of them draws a duplicate ACK. RFC 6582 §4.1 names
        // this hazard; like ns-2 (tcp.cc `dupack_action`, bugFix_: no fast
        // retransmit while highest_ack_ <= recover_) we require the ACK to
        // cover new data beyond `recover` before a timeout-cut window may be
        // cut again.
        let allowed = match self.cfg.variant {
            Variant::Reno if !self.last_cut_timeout => true,
            _ => self.recovery_allowed(),
        };
        if allowed {
            self.enter_recovery(now);
        }
    }

    fn enter_recovery(&mut self, now: Instant) {
        // W of paper 002 §III-C: the window when the loss is detected.
        let w = self.window();
        let (cwnd0, ssthresh0) = (self.cwnd, self.ssthresh);
        // RFC 5681 §3.2 step 2, eq. (4): FlightSize without the segments
        // sent by Limited Transmit.
        let flight = (self.snd_max - self.snd_una).saturating_sub(self.lt_sent);
        self.ssthresh = match self.growth.on_congestion(flight, self.cwnd) {
            // RFC 9438 §4.6: CUBIC's β_cubic in place of 1/2.
            Some(ss) => ss,
            None => ((flight / 2).max(2)) as f64,
        };
        // RFC 6582 §3.2 step 2 / RFC 6675 §5 (4.1): RecoveryPoint = HighData.
        self.recover = self.snd_max;
        self.in_recovery = true;
        self.last_cut_timeout = false;
        self.first_partial_seen = false;
        self.stats.fast_retransmits += 1;
        // Karn: the timed segment may be among those to be resent.
        self.timed = None;
        // RFC 5681 §3.2 step 2 / RFC 6675 (4.3): retransmit HighACK + 1;
        // with RACK, the lowest segment it marked lost.
        self.pending_rexmit = match self.rack.as_mut() {
            Some(r) => {
                // Linux tcp_init_cwnd_reduction(): a probe in doubt is
                // settled by the recovery.
                r.tlp_end = None;
                r.pto_deadline = None;
                r.next_lost()
            }
            None => Some(self.snd_una),
        };
        match self.cfg.variant {
            // RFC 5681 §3.2 step 3: inflate by the segments that left.
            Variant::Reno | Variant::NewReno => {
                self.cwnd = self.ssthresh + self.cfg.dupack_threshold as f64;
            }
            Variant::Sack => {
                match self.cfg.sack_recovery {
                    // (Ns2Linux runs its own entry, `shim_alert`; a sender
                    // without the shim, BBR or Peach, recovers by RFC 6675.)
                    SackRecovery::Rfc6675 | SackRecovery::Ns2Linux => {
                        // RFC 6675 §5 (4.2): cwnd = ssthresh; pipe does the
                        // rest. With PRR the ACK's step sets cwnd (RFC 6937
                        // §3.1: RecoverFS = snd.nxt − snd.una).
                        self.cwnd = self.ssthresh;
                        self.prr_delivered = 0;
                        self.prr_out = 0;
                        self.recover_fs = self.snd_max - self.snd_una;
                    }
                    SackRecovery::Ns2 => {
                        // tcp.cc slowdown(CLOSE_SSTHRESH_HALF |
                        // CLOSE_CWND_HALF) with precisionReduce_ 1:
                        // halfwin = windowd()/2, ssthresh_ = int(halfwin)
                        // floored at 2, cwnd_ = halfwin floored at 1.
                        let win = self
                            .cwnd
                            .min(self.rwnd as f64)
                            .min(self.cfg.max_window as f64);
                        let half = win / 2.0;
                        self.ssthresh = half.floor().max(2.0);
                        self.cwnd = half.max(1.0);
                        // tcp-sack1.cc dupack_action() (LimTransmitFix_ 0):
                        // pipe_ = maxseq_ - highest_ack_ - numdupacks_; the
                        // retransmission goes out by output(), uncounted.
                        self.ns2_pipe = (self.snd_max - self.snd_una) as i64
                            - i64::from(self.cfg.dupack_threshold.max(1));
                    }
                }
                self.sb.start_recovery();
                self.snd_nxt = self.snd_max;
                // RFC 6675 §5 (4.3): "set both HighRxt and RescueRxt to the
                // highest sequence number in the retransmitted segment".
                self.rescue_end = Some(self.snd_una + 1);
            }
        }
        if let Some(b) = self.bbr.as_mut() {
            // tcp_bbr.c bbr_ssthresh(): note cwnd and leave ssthresh;
            // bbr_main() decides cwnd (packet conservation, §4.3 of the
            // kernel's recover_or_restore) once the ACK is processed.
            b.save_cwnd(cwnd0);
            self.cwnd = cwnd0;
            self.ssthresh = ssthresh0;
            if self.rack.is_none() {
                // (RACK counts the segments it marks, `rack_on_ack`.)
                self.ack_losses += 1;
            }
        }
        // Give the fast retransmission a full RTO, as ns-2 does.
        self.rto_deadline = Some(now + self.rtt.rto());
        let rtt = self.rtt_reference();
        if let Some(p) = self.peach.as_mut().filter(|p| p.active()) {
            // Paper 002 §III-C: halve cwnd (no Reno inflation by the three
            // duplicate ACKs: each later data ACK inflates by one), allow
            // adsn dummies and absorb wdsn of their ACKs.
            if self.cfg.variant != Variant::Sack {
                self.cwnd = self.ssthresh;
            }
            p.rapid = true;
            p.rr_seq = self.snd_una;
            p.adsn = (p.cfg.adsn_factor * w as f64).round() as u64;
            p.wdsn = (p.cfg.wdsn_factor * w as f64).round() as u64;
            // The retransmission joins the queue as it is now, usually no
            // shorter than when the latest sample left it, so its ACK lands
            // around one RTT from now: RFC 6298's 4·RTTVAR margin keeps
            // that ACK from losing the race (our choice; §III-C says "one
            // RTT").
            p.rr_deadline = Some(
                now + Duration::from_secs_f64(rtt.as_secs_f64() * p.cfg.rr_timeout_rtts)
                    + self.rtt.rttvar().saturating_mul(4),
            );
            p.rr_acks = 0;
            self.stats.rapid_recoveries += 1;
        }
    }

    /// The RTT Peach times its phases by: the larger of SRTT and the latest
    /// sample, or the handshake RTT before any sample.
    fn rtt_reference(&self) -> Duration {
        match (self.rtt.srtt(), self.last_rtt) {
            (Some(s), Some(l)) => s.max(l),
            (Some(s), None) => s,
            _ => self
                .peach
                .as_ref()
                .map_or(self.cfg.initial_rto, |p| p.cfg.initial_rtt),
        }
    }

    /// Paper 002 §III-A: an ACK for a dummy opens cwnd by one, unless wdsn
    /// says it is one of the dummies a congested router could still carry.
    fn on_dummy_ack(&mut self) {
        self.stats.dummy_acks += 1;
        let cap = (self.cfg.max_window.max(1) as f64).min(self.rwnd.max(1) as f64);
        let Some(p) = self.peach.as_mut() else {
            return;
        };
        p.confirmed = true;
        if p.fallback {
            return;
        }
        if p.wdsn == 0 {
            if self.in_recovery && self.cfg.variant != Variant::Sack {
                // NewReno's recovery (a second loss in the window) will set
                // cwnd = ssthresh on its full ACK: keep the credit to add
                // back then, so a link-error loss still restores W (§IV).
                p.credit += 1;
            } else if self.cwnd < cap {
                self.cwnd = (self.cwnd + 1.0).min(cap);
            }
        } else {
            p.wdsn -= 1;
        }
    }

    /// cwnd on leaving the base variant's recovery: ssthresh plus the
    /// dummy-ACK credit gathered meanwhile.
    fn deflated_cwnd(&mut self) -> f64 {
        let credit = self
            .peach
            .as_mut()
            .map_or(0, |p| std::mem::take(&mut p.credit));
        let cap = (self.cfg.max_window.max(1) as f64).min(self.rwnd.max(1) as f64);
        (self.ssthresh + credit as f64).min(cap.max(self.ssthresh))
    }

    /// Paper 002 §III-C: on each data ACK of Rapid Recovery, if no new data
    /// may be sent, send two dummies while adsn lasts.
    fn rapid_recovery_dummies(&mut self) {
        let outstanding = self.snd_max - self.snd_una;
        let has_data = self.has_new_data();
        let ssthresh = self.ssthresh.floor() as u64;
        if let Some(p) = self.peach.as_mut() {
            if !p.rapid {
                return;
            }
            p.rr_acks += 1;
            // §III-C's test, "cwnd <= unacknowledged data", with cwnd
            // counted as the paper inflates it (W/2 plus one per data ACK)
            // whatever the base variant: RFC 6675's pipe already leaves
            // out the SACKed and lost segments and would open W/2 - 3
            // ACKs early, cutting the dummies short of adsn.
            let blocked = !has_data || ssthresh + p.rr_acks <= outstanding;
            // Dummies go only to a receiver that has echoed one: an
            // unverified one may answer each with a duplicate ACK.
            if p.adsn > 0 && blocked && p.confirmed {
                let n = (p.cfg.dummies_per_ack as u64).min(p.adsn);
                p.adsn -= n;
                p.pending += n;
            }
        }
    }

    /// Sudden Start (paper 002 §III-B) from cwnd = 1.
    fn sudden_start(&mut self) {
        let rtt = self.rtt_reference();
        let rwnd = self.rwnd.min(self.cfg.max_window as u64);
        if let Some(p) = self.peach.as_mut().filter(|p| p.active()) {
            self.cwnd = 1.0;
            p.opening = false;
            p.arm_sudden_start(rtt, rwnd);
            self.stats.sudden_starts += 1;
        }
    }

    /// Paper 002 §III-C: the retransmission was not ACKed within one RTT,
    /// which suggests heavy congestion: leave Rapid Recovery and run Sudden
    /// Start, resending from the first unacknowledged segment as after a
    /// timeout. ssthresh keeps the halved value.
    fn rapid_recovery_expired(&mut self, now: Instant) {
        self.stats.rapid_recovery_expiries += 1;
        self.go_back_n();
        self.rto_deadline = Some(now + self.rtt.rto());
        self.sudden_start();
    }

    /// Leave any recovery and resend from the first unacknowledged segment.
    fn go_back_n(&mut self) {
        // RFC 6582 §3.2 step 1 / RFC 6675 §5.1: recover = HighData, and
        // recovery ends.
        self.recover = self.snd_max;
        self.in_recovery = false;
        self.last_cut_timeout = true;
        self.dupacks = 0;
        self.lt_sent = 0;
        self.pending_rexmit = None;
        // Go-back-N from the first unacknowledged segment (ns-2); Karn:
        // the timed segment may be resent.
        self.snd_nxt = self.snd_una;
        self.timed = None;
        // RFC 2018 §8 / RFC 6675 §5.1: forget SACK state (ns-2 Sack1).
        // BBR is Linux's: tcp_enter_loss() keeps the SACKed marks unless
        // the receiver reneged, so the go-back-N resend skips them.
        if self.bbr.is_none() {
            self.sb.clear();
        }
    }

    /// RFC 8985 §6.3 on a retransmission timeout: recovery ends as in
    /// [`Self::go_back_n`], but what is resent is what RACK marks lost
    /// (the first unacknowledged segment and every one sent more than
    /// RACK.rtt + reo_wnd ago), lowest first, as the window allows
    /// (Linux `tcp_enter_loss()`, `tcp_timeout_mark_lost()`). SACK marks
    /// are kept, as Linux keeps them unless the receiver reneged.
    fn rack_rto(&mut self, now: Instant) {
        self.recover = self.snd_max;
        self.in_recovery = false;
        self.last_cut_timeout = true;
        self.dupacks = 0;
        self.lt_sent = 0;
        self.pending_rexmit = None;
        self.pending_probe = None;
        self.timed = None;
        let (min_rtt, srtt) = (self.stats.min_rtt, self.rtt.srtt());
        if let Some(r) = self.rack.as_mut() {
            r.mark_losses_on_rto(now, min_rtt, srtt);
            self.stats.rack_marked_lost = r.marked_lost;
            self.stats.lost_retransmits = r.lost_retransmits;
        }
    }

    /// The time asked for by [`Self::poll_timeout`] has come. Calls when
    /// nothing is due are ignored.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.blocked = false;
        if self
            .peach
            .as_ref()
            .is_some_and(|p| p.rapid && p.rr_deadline.is_some_and(|d| now >= d))
        {
            self.rapid_recovery_expired(now);
            return;
        }
        if let Some(r) = self.rack.as_ref() {
            let (reo, pto) = (r.reo_deadline, r.pto_deadline);
            if reo.is_some_and(|d| now >= d) {
                self.rack_reo_timeout(now);
            }
            if pto.is_some_and(|d| now >= d) {
                self.send_probe(now);
                return;
            }
        }
        match self.rto_deadline {
            Some(d) if now >= d => {}
            _ => return,
        }
        if self.snd_max == self.snd_una {
            // Nothing outstanding: a stale timer must not keep waking us.
            self.rto_deadline = None;
            return;
        }
        if self.shim.is_some() {
            self.shim_timeout(now);
            return;
        }
        self.stats.timeouts += 1;
        // RFC 5681 §3.1 eq. (4); held constant when the segment was already
        // retransmitted by the timer (the note after eq. (4)).
        let flight = self.snd_max - self.snd_una;
        let grown = if self.rtt.backoff_count() == 0 {
            self.growth.on_rto(flight, self.cwnd)
        } else {
            None
        };
        if let Some(ss) = grown {
            self.ssthresh = ss;
        } else if self.rtt.backoff_count() == 0 {
            let base = match self.cfg.rto_ssthresh {
                RtoSsthresh::FlightSize => self.snd_max - self.snd_una,
                RtoSsthresh::Window => {
                    // Fast recovery's inflation is not part of the window.
                    let w = if self.in_recovery {
                        self.cwnd.min(self.ssthresh)
                    } else {
                        self.cwnd
                    };
                    // (`as u64` is `floor()` here: see `window`.)
                    (w as u64).min(self.rwnd)
                }
            };
            let eq4 = ((base / 2).max(2)) as f64;
            // RFC 5681 §3.1: ssthresh "MUST be set to no more than" eq.
            // (4). A timeout during RFC 6675 recovery (a retransmission
            // lost: RFC 6675 has no other way to find one) answers the
            // congestion that recovery already answered, and FlightSize
            // then includes the new data recovery sent while pipe < cwnd:
            // 64 Mb/s 1+1 of the friendliness sweep, RecoveryPoint 1824,
            // HighData 3522 at the RTO, ssthresh 456 → 1145, three times
            // what the path holds, so every slow start after a timeout
            // overshot into the next recovery and timeout (15 of 30
            // seeds, 66-70 RTOs a run). Keep the smaller, as Linux's
            // tcp_enter_loss() does ("Reduce ssthresh if it has not yet
            // been made inside this window": not in TCP_CA_Recovery).
            self.ssthresh = if self.in_recovery
                && self.cfg.variant == Variant::Sack
                && self.cfg.sack_recovery == SackRecovery::Rfc6675
                && self.cfg.rto_ssthresh == RtoSsthresh::FlightSize
            {
                eq4.min(self.ssthresh)
            } else {
                eq4
            };
        }
        if let Some(b) = self.bbr.as_mut() {
            // tcp_enter_loss(): bbr_ssthresh() notes cwnd, then BBR's
            // TCP_CA_Loss (full_bw forgotten); cwnd = in flight + 1 = 1.
            b.on_rto(self.cwnd);
            self.loss_until = Some(self.snd_max);
        }
        // RFC 5681 §3.1: loss window of one segment.
        self.cwnd = 1.0;
        if self.rack.is_some() {
            self.rack_rto(now);
        } else {
            self.go_back_n();
        }
        // RFC 6298 §5.5 and §5.6.
        self.rtt.back_off();
        self.rto_deadline = Some(now + self.rtt.rto());
        // Paper 002 Fig. 1: Sudden Start also replaces the slow start that
        // follows a timeout.
        self.sudden_start();
    }

    fn has_new_data(&self) -> bool {
        self.unlimited || self.assigned_bytes < self.pushed_bytes
    }

    /// The effective window: min(cwnd, rwnd, max_window), at least one
    /// segment so that a closed window is probed.
    fn window(&self) -> u64 {
        window_of(self.cwnd, self.rwnd, self.cfg.max_window)
    }

    /// The next segment to send now, if the window allows one: data first,
    /// then any TCP-Peach dummy that is due.
    #[inline]
    pub fn poll_transmit(&mut self, now: Instant) -> Option<TcpData> {
        if self.blocked {
            // The answer of the full decision, known since the last send
            // (checked against it in every test of this crate).
            #[cfg(test)]
            self.check_blocked(now);
            return None;
        }
        self.poll_transmit_full(now)
    }

    /// Tests: the full decision agrees with the `blocked` cache. The full
    /// decision answering `None` changes nothing in a sender that may set
    /// `blocked` (no pacing, no pending retransmission or probe).
    #[cfg(test)]
    fn check_blocked(&mut self, now: Instant) {
        self.blocked = false;
        let d = self.poll_transmit_full(now);
        assert!(d.is_none(), "blocked cache said nothing to send, but {d:?}");
        self.blocked = true;
        self.blocked_hits += 1;
    }

    /// [`Self::poll_transmit`] without the `blocked` cache.
    fn poll_transmit_full(&mut self, now: Instant) -> Option<TcpData> {
        if let Some(d) = self.poll_data(now) {
            if let Some(p) = self.peach.as_mut() {
                p.last_data = Some((d.seq, d.len));
                // The Sudden Start dummies follow the data segment that
                // opens it, one every tau (paper 002 §III-B).
                if p.ss_remaining > 0 && p.ss_next.is_none() {
                    p.ss_next = Some(now + p.ss_tau);
                }
            }
            return Some(d);
        }
        self.poll_dummy(now)
    }

    fn poll_dummy(&mut self, now: Instant) -> Option<TcpData> {
        let p = self.peach.as_mut()?;
        if p.fallback {
            return None;
        }
        let (seq, len) = p.last_data?;
        if p.pending > 0 {
            p.pending -= 1;
        } else if p.ss_remaining > 0 && p.ss_next.is_some_and(|t| t <= now) {
            p.ss_remaining -= 1;
            p.ss_next = if p.ss_remaining > 0 {
                p.ss_next.map(|t| t + p.ss_tau)
            } else {
                // Answers to this Sudden Start come back within about an
                // RTT of its last dummy.
                let rtt = p.ss_tau.saturating_mul(p.ss_count);
                p.verify_until = now + rtt + Duration(rtt.0 / 4);
                None
            };
        } else {
            return None;
        }
        if !p.confirmed {
            p.unanswered += 1;
        }
        self.stats.dummies_sent += 1;
        self.stats.dummy_bytes_sent += len as u64;
        // Paper 002 §III-A: a copy of the last data segment, marked.
        Some(TcpData {
            seq,
            len,
            ts: now,
            retransmit: false,
            dummy: true,
        })
    }

    /// RACK-TLP's pending loss probe, if still in the window (out of
    /// line: only RACK sets one).
    #[cold]
    #[inline(never)]
    fn poll_probe(&mut self, now: Instant) -> Option<TcpData> {
        let seq = self.pending_probe.take()?;
        // RFC 8985 §7.3: the probe goes out whatever cwnd says.
        if seq >= self.snd_una && seq <= self.snd_max {
            let retrans = seq < self.snd_max;
            if !retrans {
                self.snd_nxt = seq + 1;
            }
            let d = self.emit(now, seq);
            self.stats.tlp_probes += 1;
            if let Some(r) = self.rack.as_mut() {
                r.probes += 1;
                r.tlp_end = Some(self.snd_max);
                r.tlp_retrans = retrans;
                r.pto_deadline = None;
            }
            return Some(d);
        }
        None
    }

    fn poll_data(&mut self, now: Instant) -> Option<TcpData> {
        // Pacing (BBR): nothing leaves before `next_send`.
        self.pace_wait = self.bbr.is_some() && now < self.next_send;
        if self.pace_wait {
            return None;
        }
        if self.shim.is_some() {
            return self.shim_transmit(now);
        }
        if self.pending_probe.is_some() {
            if let Some(d) = self.poll_probe(now) {
                return Some(d);
            }
        }
        if let Some(seq) = self.pending_rexmit.take() {
            if seq >= self.snd_una && seq < self.snd_max {
                return Some(self.emit(now, seq));
            }
        }
        if self.cfg.variant == Variant::Sack && self.in_recovery {
            return self.sack_recovery_transmit(now);
        }
        if self.rack.as_ref().is_some_and(|r| r.lost_out() > 0) {
            // RTO recovery: the segments RACK marked lost first.
            return self.rack_transmit(now);
        }
        let win = self.window();
        let limit = self.snd_una + win;
        // Go-back-N after a timeout: resend what is not known to have
        // arrived (RFC 6675 §5.1: do not resend SACKed data).
        while self.snd_nxt < self.snd_max && self.sb.sacked(self.snd_nxt) {
            self.snd_nxt += 1;
        }
        if self.snd_nxt < self.snd_max {
            if self.snd_nxt < limit {
                let seq = self.snd_nxt;
                self.snd_nxt += 1;
                return Some(self.emit(now, seq));
            }
            return None;
        }
        if !self.has_new_data() {
            return None;
        }
        let mut limit = limit;
        if self.cfg.limited_transmit && !self.in_recovery && self.dupacks > 0 {
            // RFC 3042: one new segment per each of the first two duplicate
            // ACKs, if the receiver's window allows.
            let extra = self.dupacks.min(2) as u64;
            let lt_limit = (self.snd_una + win + extra).min(self.snd_una + self.rwnd.max(1));
            if self.snd_max >= limit && self.snd_max < lt_limit {
                limit = lt_limit;
                self.lt_sent += 1;
            }
        }
        if self.snd_max < limit {
            let seq = self.snd_max;
            self.snd_nxt = seq + 1;
            let d = self.emit(now, seq);
            // What the next call would find, nothing having changed: no
            // pending retransmission or probe (both taken above, and
            // `emit` sets neither), snd_nxt = snd_max, the same window
            // (`emit` changes neither cwnd nor rwnd) and so the same
            // `limit`. With Limited Transmit in play (a duplicate ACK
            // outside recovery) the limit may stretch: no prediction.
            // BBR (pacing), RACK (lost segments first), TCP-Peach (dummies
            // after the data) and the shim decide otherwise.
            let lt_may_stretch = self.cfg.limited_transmit && !self.in_recovery && self.dupacks > 0;
            self.blocked = (self.snd_max >= limit || !self.has_new_data())
                && !lt_may_stretch
                && self.bbr.is_none()
                && self.rack.is_none()
                && self.peach.is_none();
            return Some(d);
        }
        None
    }

    /// tcp-linux.cc `LinuxTcpAgent::recv()` for one ACK
    /// ([`SackRecovery::Ns2Linux`]), in its order: the cumulative ACK
    /// (`ack_processing()`), the scoreboard (`UpdateScoreBoard()`, when the
    /// ACK carries SACK blocks or the board is not empty), the timer and
    /// RTT (`time_processing()`), window growth (`tcp_cong_avoid`, outside
    /// TCP_CA_Recovery), then `tcp_fastretrans_alert()` for a "dubious"
    /// ACK, and the rate-halving step of `send_much()`.
    #[cold]
    #[inline(never)]
    fn shim_ack(&mut self, now: Instant, ack: &TcpAck) {
        let advanced = ack.ack > self.snd_una;
        // time_processing() -> rtt_update(now - ts_echo) on every ACK,
        // duplicates included (the sink echoes RFC 1323's TS.Recent:
        // `ts_echo_rfc1323_`), before the module sees the ACK.
        let r = now.saturating_since(ack.ts_echo);
        self.rtt.observe(r);
        if advanced {
            self.on_cumulative_ack(now, ack);
        } else if self.snd_max > self.snd_una {
            self.stats.dupacks += 1;
        }
        let una = self.snd_una;
        // A block that is empty or reaches past what was sent is malformed
        // (ns-2's sink never sends one) and dropped: it would move fack_
        // beyond snd_max and mark unsent segments lost.
        let mut blocks = [(0u64, 0u64); crate::tcp::MAX_SACK_BLOCKS];
        let mut n = 0;
        for b in ack.sack_blocks() {
            if b.start < b.end && b.end <= self.snd_max {
                blocks[n] = (b.start, b.end);
                n += 1;
            }
        }
        let Some(sh) = self.shim.as_mut() else {
            return;
        };
        let news = if n > 0 || !sh.board.is_empty() {
            sh.board.update(una, &blocks[..n])
        } else {
            Default::default()
        };
        // `rtt_active_ && seqno >= rtt_seq_`: the timed segment is
        // acknowledged, the backoff ends.
        if sh.rtt_active && sh.rtt_seq.is_some_and(|s| una > s) {
            sh.rtt_active = false;
            self.rtt.end_backoff();
        }
        // `renew_timer`: `t_seqno_ > highest_ack_` always holds, so every
        // ACK restarts the timer (the whole of why ns-2's Linux agent
        // rarely times out while ACKs flow).
        self.rto_deadline = (self.snd_max > self.snd_una).then(|| now + self.rtt.rto());
        // tcp_ack_is_dubious(): not a new cumulative ACK, SACK news
        // (FLAG_CA_ALERT), or not in TCP_CA_Open.
        let open = self.shim.as_ref().is_some_and(|sh| sh.ca == ShimCa::Open);
        if !advanced || news.sacked || !open {
            self.shim_alert(news.lost);
        }
        // send_much(): `next_pkts_in_flight_ = min(next_pkts_in_flight_,
        // packets_in_flight() + 1)` before anything is sent.
        let (una, max) = (self.snd_una, self.snd_max);
        if let Some(sh) = self.shim.as_mut() {
            let pif = sh.board.in_flight(una, max);
            sh.npif = sh.npif.min(pif + 1);
        }
    }

    /// tcp-linux.cc `tcp_fastretrans_alert()`: leave TCP_CA_Recovery or
    /// TCP_CA_Loss once `recover_` is acknowledged; enter TCP_CA_Recovery
    /// from TCP_CA_Open or TCP_CA_Loss on a newly lost segment.
    fn shim_alert(&mut self, lost: bool) {
        let (una, max) = (self.snd_una, self.snd_max);
        let Some(sh) = self.shim.as_mut() else {
            return;
        };
        if sh.ca != ShimCa::Open && una >= sh.recover {
            sh.board.clear();
            let ssthresh = self.ssthresh.floor().max(0.0);
            if self.cwnd.floor() < ssthresh {
                // `snd_cwnd = snd_ssthresh; tcp_moderate_cwnd()`: at most
                // packets_in_flight() + tcp_max_burst, counted on the board
                // just cleared (everything outstanding is in flight).
                self.cwnd = ssthresh.min((max - una + SHIM_MAX_BURST) as f64);
            }
            sh.ca = ShimCa::Open;
            // "stop rate halving".
            sh.npif = 0;
            self.in_recovery = false;
            return;
        }
        if sh.ca == ShimCa::Recovery || !lost {
            return;
        }
        // `recover_ = maxseq_`, rate halving from the current cwnd.
        sh.recover = max;
        let w = self.cwnd.floor().max(0.0);
        sh.npif = w as u64;
        sh.ca = ShimCa::Recovery;
        // The module's ssthresh() (a function of snd_cwnd), then its
        // min_cwnd(): tcp_reno_min_cwnd() = ssthresh/2 for Reno and Hybla
        // (tcp_hybla.c `.min_cwnd`), none for tcp_cubic.c (cwnd =
        // ssthresh).
        self.ssthresh = self
            .growth
            .on_congestion(w as u64, self.cwnd)
            .unwrap_or(((w as u64) / 2).max(2) as f64);
        self.cwnd = match self.cfg.growth {
            Growth::Cubic(_) => self.ssthresh,
            _ => ((self.ssthresh.floor().max(0.0) as u64) / 2) as f64,
        };
        self.recover = max;
        self.in_recovery = true;
        self.last_cut_timeout = false;
        self.stats.fast_retransmits += 1;
        self.timed = None;
    }

    /// tcp-linux.cc `LinuxTcpAgent::timeout()` with data outstanding:
    /// `enter_loss()` (ssthresh from the module, cwnd = 1, TCP_CA_Loss,
    /// `MarkLoss()` of every unSACKed segment, SACK marks kept), the timer
    /// backed off (`reset_rtx_timer(TCP_REASON_TIMEOUT, 1)`, which leaves
    /// `t_seqno_` alone: no go-back-N) and `next_pkts_in_flight_ = 0`.
    #[cold]
    #[inline(never)]
    fn shim_timeout(&mut self, now: Instant) {
        // `++nrexmit_`: the counter `satcc ns2` reads as timeouts.
        self.stats.timeouts += 1;
        let w = self.cwnd.floor().max(0.0);
        self.ssthresh = self
            .growth
            .on_rto(w as u64, self.cwnd)
            .unwrap_or(((w as u64) / 2).max(2) as f64);
        self.cwnd = 1.0;
        let (una, max) = (self.snd_una, self.snd_max);
        if let Some(sh) = self.shim.as_mut() {
            sh.recover = max;
            sh.ca = ShimCa::Loss;
            sh.board.mark_loss(una, max);
            sh.npif = 0;
            // reset_rtx_timer(): `rtt_active_ = 0`.
            sh.rtt_active = false;
        }
        self.recover = max;
        self.in_recovery = false;
        self.last_cut_timeout = true;
        self.timed = None;
        self.rtt.back_off();
        self.rto_deadline = Some(now + self.rtt.rto());
    }

    /// tcp-linux.cc `LinuxTcpAgent::send_much()`, one segment: while
    /// packets_in_flight() < max(cwnd, next_pkts_in_flight_), the next
    /// lost segment (`GetNextRetran()`, `MarkRetran()`), else new data;
    /// after it `next_pkts_in_flight_ = min(next_pkts_in_flight_,
    /// max(packets_in_flight() − 1, 1))`.
    #[cold]
    #[inline(never)]
    fn shim_transmit(&mut self, now: Instant) -> Option<TcpData> {
        let (una, max) = (self.snd_una, self.snd_max);
        let win = self.window();
        let rwnd = self.rwnd.max(1).min(self.cfg.max_window as u64);
        let new_ok = self.has_new_data() && max < una + rwnd;
        let sh = self.shim.as_mut()?;
        if sh.board.in_flight(una, max) >= win.max(sh.npif) {
            return None;
        }
        let seq = if let Some(s) = sh.board.next_retran() {
            sh.board.mark_retran(s, max);
            s
        } else if new_ok {
            self.snd_nxt = max + 1;
            max
        } else {
            return None;
        };
        let d = self.emit(now, seq);
        let new = seq == max;
        let (una, max) = (self.snd_una, self.snd_max);
        if let Some(sh) = self.shim.as_mut() {
            let pif = sh.board.in_flight(una, max);
            sh.npif = sh.npif.min(pif.saturating_sub(1).max(1));
            // tcp.cc output(): `if (seqno > maxseq_)`, a new segment is
            // timed when none is.
            if new && !sh.rtt_active {
                sh.rtt_active = true;
                sh.rtt_seq = Some(sh.rtt_seq.map_or(seq, |t| t.max(seq)));
            }
        }
        Some(d)
    }

    fn ns2_sack(&self) -> bool {
        self.cfg.variant == Variant::Sack && self.cfg.sack_recovery == SackRecovery::Ns2
    }

    /// ns-2 Sack1's `send_much()` in fast recovery: while pipe_ <
    /// int(cwnd_), the next hole from `GetNextRetran()` (any unSACKed,
    /// not yet retransmitted segment below the highest SACKed one), else
    /// new data within the receiver's window.
    fn ns2_sack_recovery_transmit(&mut self, now: Instant) -> Option<TcpData> {
        if self.ns2_pipe >= self.cwnd.floor() as i64 {
            return None;
        }
        if let Some(s) = self.sb.next_hole(true) {
            self.sb.mark_retransmitted(s);
            self.ns2_pipe += 1;
            return Some(self.emit(now, s));
        }
        if self.has_new_data()
            && self.snd_max < self.snd_una + self.rwnd.max(1).min(self.cfg.max_window as u64)
        {
            let seq = self.snd_max;
            self.snd_nxt = seq + 1;
            self.ns2_pipe += 1;
            return Some(self.emit(now, seq));
        }
        None
    }

    /// RFC 6675 §5 (C): send while cwnd - pipe >= 1 SMSS.
    fn sack_recovery_transmit(&mut self, now: Instant) -> Option<TcpData> {
        if self.cfg.sack_recovery == SackRecovery::Ns2 {
            return self.ns2_sack_recovery_transmit(now);
        }
        if self.rack.is_some() {
            return self.rack_transmit(now);
        }
        if (self.sb.pipe() as f64) + 1.0 > self.cwnd {
            return None;
        }
        // NextSeg (1): a lost segment above HighRxt.
        if let Some(s) = self.sb.next_hole(false) {
            self.sb.mark_retransmitted(s);
            return Some(self.emit(now, s));
        }
        // NextSeg (2): new data, if the receiver's window allows.
        if self.has_new_data()
            && self.snd_max < self.snd_una + self.rwnd.max(1).min(self.cfg.max_window as u64)
        {
            let seq = self.snd_max;
            self.snd_nxt = seq + 1;
            return Some(self.emit(now, seq));
        }
        // NextSeg (3): any unSACKed segment above HighRxt below the highest
        // SACKed one.
        if let Some(s) = self.sb.next_hole(true) {
            self.sb.mark_retransmitted(s);
            return Some(self.emit(now, s));
        }
        // NextSeg (4): "If HighACK is greater than RescueRxt (or RescueRxt
        // is undefined)", one rescue retransmission of the highest
        // outstanding segment if unSACKed, "and RescueRxt set to
        // RecoveryPoint. HighRxt MUST NOT be updated." RescueRxt was set
        // to the first retransmitted segment on entry (4.3), so the rescue
        // waits for a partial ACK beyond it.
        if self.rescue_end.is_none_or(|r| self.snd_una > r) && self.snd_max > self.snd_una {
            let last = self.snd_max - 1;
            if !self.sb.sacked(last) {
                self.rescue_end = Some(self.recover);
                return Some(self.emit(now, last));
            }
        }
        None
    }

    /// RFC 6675 §5 (C) with RACK's loss marks (RFC 8985 §6.2: RACK marks
    /// what IsLost() would): while pipe (Linux's count, [`Rack::pipe`])
    /// leaves a segment of cwnd, the lowest segment marked lost and not
    /// retransmitted since, else new data. Rules (3) and (4) of NextSeg()
    /// are not used: a hole RACK has not marked is not yet lost, and TLP
    /// takes the rescue retransmission's place (Linux sends neither).
    #[cold]
    #[inline(never)]
    fn rack_transmit(&mut self, now: Instant) -> Option<TcpData> {
        let r = self.rack.as_mut()?;
        if (r.pipe() as f64) + 1.0 > self.cwnd {
            return None;
        }
        if let Some(s) = r.next_lost() {
            return Some(self.emit(now, s));
        }
        if self.has_new_data()
            && self.snd_max < self.snd_una + self.rwnd.max(1).min(self.cfg.max_window as u64)
        {
            let seq = self.snd_max;
            self.snd_nxt = seq + 1;
            return Some(self.emit(now, seq));
        }
        None
    }

    /// Build segment `seq` (new if `seq == snd_max`) and account for it.
    fn emit(&mut self, now: Instant, seq: u64) -> TcpData {
        let retransmit = seq < self.snd_max;
        let len = if retransmit {
            self.seg_len(seq)
        } else {
            let len = if self.unlimited {
                self.mss
            } else {
                self.mss.min(self.pushed_bytes - self.assigned_bytes)
            };
            if len < self.mss {
                self.short_segs.push_back((seq, len as u32));
            }
            self.assigned_bytes += len;
            self.sb.on_send_new(seq);
            self.snd_max = seq + 1;
            if self.cfg.rtt_timing == RttTiming::Karn && self.timed.is_none() {
                self.timed = Some((seq, now));
            }
            len
        };
        if self.rack.is_some() {
            self.rack_on_send(now, seq, retransmit);
        }
        if self.bbr.is_some() {
            self.on_send_paced(now, seq, len);
        }
        if self.in_recovery {
            // RFC 6937: prr_out counts everything sent in recovery.
            self.prr_out += 1;
        }
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += len;
        if retransmit {
            self.stats.retransmits += 1;
        }
        // RFC 6298 §5.1: start the timer if it is not running.
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
        if !retransmit && self.pending_probe.is_none() {
            // RFC 8985 §7.2: new data (not itself a probe) rearms the PTO.
            self.arm_tlp(now);
        }
        TcpData {
            seq,
            len: len as u32,
            ts: now,
            retransmit,
            dummy: false,
        }
    }

    /// BBR: the rate estimator's record of segment `seq`, and the next
    /// departure time at the pacing rate (tcp_output.c
    /// `tcp_update_skb_after_send()`: the first `unpaced_segments` go at
    /// once; a late departure earns up to half a segment's time back).
    #[cold]
    #[inline(never)]
    fn on_send_paced(&mut self, now: Instant, seq: u64, len: u64) {
        let inflight = self.inflight();
        let Some(b) = self.bbr.as_mut() else {
            return;
        };
        // Counted before this segment: `emit` has already put a new
        // segment on the scoreboard.
        let inflight = if seq + 1 == self.snd_max && !self.sb.sacked(seq) {
            inflight.saturating_sub(1)
        } else {
            inflight
        };
        b.on_send(now, seq, inflight);
        let prior = self.next_send;
        let wstamp = prior.max(now);
        if self.data_segs_out >= b.cfg.unpaced_segments && b.pacing_rate > 0.0 {
            let segs = len as f64 / self.mss as f64;
            let mut len_ns = (segs / b.pacing_rate * 1e9) as u64;
            let credit = wstamp.0 - prior.0;
            len_ns -= (len_ns / 2).min(credit);
            self.next_send = wstamp + Duration(len_ns);
        } else {
            self.next_send = wstamp;
        }
        self.data_segs_out += 1;
    }

    /// RACK's record of a segment sent (out of line: only RACK runs it).
    #[cold]
    #[inline(never)]
    fn rack_on_send(&mut self, now: Instant, seq: u64, retransmit: bool) {
        if let Some(r) = self.rack.as_mut() {
            r.on_send(seq, now);
            if retransmit && seq == self.snd_una {
                // Linux tcp_xmit_retransmit_queue(): resending the head
                // restarts the RTO, so that a lost retransmission RACK
                // finds a round trip later still has its round trip.
                self.rto_deadline = Some(now + self.rtt.rto());
            }
        }
    }

    fn seg_len(&self, seq: u64) -> u64 {
        match self.short_segs.binary_search_by_key(&seq, |&(s, _)| s) {
            Ok(i) => self.short_segs[i].1 as u64,
            Err(_) => self.mss,
        }
    }

    /// Payload bytes of segments `from..to`, dropping the short-segment
    /// records below `to`.
    fn bytes_in(&mut self, from: u64, to: u64) -> u64 {
        let mut bytes = (to - from) * self.mss;
        while let Some(&(s, l)) = self.short_segs.front() {
            if s >= to {
                break;
            }
            self.short_segs.pop_front();
            if s >= from {
                bytes -= self.mss - l as u64;
            }
        }
        bytes
    }

    /// When the sender next needs [`Self::handle_timeout`].
    pub fn poll_timeout(&self) -> Option<Instant> {
        let mut t = self.rto_deadline;
        if let Some(p) = &self.peach {
            let ss = p.ss_next.filter(|_| p.ss_remaining > 0);
            let rr = p.rr_deadline.filter(|_| p.rapid);
            for x in [ss, rr].into_iter().flatten() {
                t = Some(t.map_or(x, |t| t.min(x)));
            }
        }
        if self.pace_wait {
            let x = self.next_send;
            t = Some(t.map_or(x, |t| t.min(x)));
        }
        if let Some(r) = &self.rack {
            for x in [r.reo_deadline, r.pto_deadline].into_iter().flatten() {
                t = Some(t.map_or(x, |t| t.min(x)));
            }
        }
        t
    }

    /// The next event for the application.
    pub fn poll_event(&mut self) -> Option<SenderEvent> {
        self.events.pop_front()
    }

    /// Current counters.
    pub fn stats(&self) -> SenderStats {
        let mut s = self.stats;
        s.cwnd = self.cwnd;
        s.ssthresh = self.ssthresh;
        s.srtt = self.rtt.srtt();
        s.rto = self.rtt.rto();
        s.snd_una = self.snd_una;
        s.snd_max = self.snd_max;
        s.in_recovery = self.in_recovery;
        if let Some(p) = &self.peach {
            s.wdsn = p.wdsn;
            s.adsn = p.adsn;
        }
        s.pipe = if let Some(sh) = &self.shim {
            sh.board.in_flight(self.snd_una, self.snd_max)
        } else if let Some(r) = &self.rack {
            r.pipe()
        } else if self.ns2_sack() && self.in_recovery {
            self.ns2_pipe.max(0) as u64
        } else if self.cfg.variant == Variant::Sack {
            self.sb.pipe()
        } else {
            self.snd_max - self.snd_una
        };
        s
    }

    /// Configuration.
    pub fn config(&self) -> &SenderConfig {
        &self.cfg
    }

    /// Oldest unacknowledged segment.
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }

    /// One past the highest segment sent.
    pub fn snd_max(&self) -> u64 {
        self.snd_max
    }

    /// Every byte pushed so far has been acknowledged (never, when
    /// unlimited).
    pub fn is_idle(&self) -> bool {
        !self.unlimited && self.snd_una == self.snd_max && self.assigned_bytes == self.pushed_bytes
    }

    /// Scoreboard steps taken so far (a measure of per-ACK work).
    #[cfg(test)]
    pub(crate) fn scoreboard_steps(&self) -> u64 {
        self.sb.steps
    }
}

#[cfg(test)]
mod window_tests {
    use super::window_of;
    use crate::rng::Rng;

    /// The window through `i64` is the window through `u64` (the form it
    /// replaced) on edge values and random ones, every bit pattern class
    /// of f64 included.
    #[test]
    fn window_through_i64_equals_window_through_u64() {
        let old =
            |cwnd: f64, rwnd: u64, maxw: u32| ((cwnd as u64).min(rwnd).min(maxw as u64)).max(1);
        let edges = [
            0.0,
            -0.0,
            0.5,
            0.999_999,
            1.0,
            2.5,
            -1.5,
            1e9,
            4_294_967_295.9,
            4_294_967_296.0,
            9.2e18,
            9_223_372_036_854_775_807.0,
            1.8e19,
            1e300,
            f64::MAX,
            f64::MIN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MIN_POSITIVE,
        ];
        let rwnds = [0, 1, 7, 1000, u32::MAX as u64, u64::MAX];
        let maxws = [0, 1, 64, 1000, u32::MAX];
        for &c in &edges {
            for &r in &rwnds {
                for &m in &maxws {
                    assert_eq!(window_of(c, r, m), old(c, r, m), "{c} {r} {m}");
                }
            }
        }
        let mut rng = Rng::new(5);
        for _ in 0..200_000 {
            let c = f64::from_bits(rng.next_u64());
            let scaled = rng.next_f64() * 2f64.powi(rng.below(80) as i32);
            let (r, m) = (rng.next_u64() >> rng.below(64), rng.next_u64() as u32);
            assert_eq!(window_of(c, r, m), old(c, r, m), "{c} {r} {m}");
            assert_eq!(
                window_of(scaled, r, m),
                old(scaled, r, m),
                "{scaled} {r} {m}"
            );
        }
    }
}
