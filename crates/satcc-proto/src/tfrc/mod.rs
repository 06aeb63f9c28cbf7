//! TFRC (RFC 5348) sender and receiver, and the DCCP CCID3 feedback
//! policies (standard, and the dynamic NFb of paper 001).
//!
//! Layout: [`sender`] (RFC 5348 §4), [`receiver`] (§5, §6 and the CCID3
//! feedback policies), [`loss`] (loss detection, loss events and the
//! loss-interval history of §5, reusable by sender-based TFRC such as
//! STFRC). Units follow the RFC: X and X_recv in bytes per second; all
//! timing is integer-nanosecond
//! [`Instant`](crate::time::Instant)/[`Duration`], and `f64` is used only
//! for the equation arithmetic. The packets, [`TfrcData`] and
//! [`TfrcFeedback`], are defined in [`crate::messages::tfrc`].

use crate::time::Duration;

mod endpoint;
pub mod loss;
pub mod ns2_sink;
#[cfg(test)]
mod ns2_tests;
pub mod receiver;
pub mod sender;
#[cfg(test)]
mod tests;

pub use crate::equation::ns2::{b_to_p as ns2_b_to_p, p_to_b as ns2_p_to_b};
pub use crate::messages::tfrc::{TfrcData, TfrcFeedback};
pub use loss::{LossDetector, LossIntervals, PacketClass};
pub use receiver::TfrcReceiver;
pub use sender::TfrcSender;

/// The smallest RTT either endpoint uses (10 µs): an RTT sample or a
/// data packet's `rtt` field below it (zero, say) is raised to it, so that
/// no timer is ever armed for "now" over and over.
pub const MIN_RTT: Duration = Duration::from_micros(10);

/// The observation interval a receiver reports before any data packet has
/// carried the sender's RTT estimate (1 s). Until then the receiver answers
/// every data packet (RFC 5348 §6.3: "If the first data packet does not
/// contain an estimate R_i of the round-trip time, then the receiver sends a
/// feedback packet for every arriving data packet until a data packet
/// arrives containing an estimate of the round-trip time"); this interval
/// only bounds how far back X_recv is measured then.
pub const FALLBACK_FEEDBACK_INTERVAL: Duration = Duration::from_secs(1);

/// When the receiver sends feedback (the CCID3 profile's knob).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FeedbackPolicy {
    /// Once per RTT (RFC 5348 §6.2; CCID3 as RFC 4342 specifies).
    Standard,
    /// Paper 001: every O = RTT/NFb with
    /// NFb = min(max(round(RTT/rtt_ref), 1), RTT*X_recv/s).
    Dynamic {
        /// RTTref.
        rtt_ref: Duration,
    },
}

impl FeedbackPolicy {
    /// The number of feedback messages per RTT, NFb. `Standard`: 1.
    /// `Dynamic` (paper 001 eq. 2):
    /// `NFb = min(max(round(RTT/RTTref), 1), floor(RTT*X_recv/s))`, and at
    /// least 1. The second term is floored (our reading): the paper bounds
    /// NFb so that at least one packet arrives per observation interval
    /// O = RTT/NFb, and flooring is what keeps O >= s/X_recv. A zero
    /// `rtt_ref` is treated as 1 ns; a NaN or negative `x_recv` as 0.
    pub fn nfb(&self, rtt: Duration, x_recv: f64, s: u32) -> u64 {
        match *self {
            FeedbackPolicy::Standard => 1,
            FeedbackPolicy::Dynamic { rtt_ref } => {
                let rtt_ns = rtt.as_nanos();
                let rref = rtt_ref.as_nanos().max(1);
                // round(RTT/RTTref), half away from zero, in integers.
                let by_delay = ((rtt_ns as u128 * 2 + rref as u128) / (2 * rref as u128))
                    .min(u64::MAX as u128) as u64;
                let by_delay = by_delay.max(1);
                let per_rtt = if x_recv.is_nan() || x_recv <= 0.0 || s == 0 {
                    0.0
                } else {
                    (rtt.as_secs_f64() * x_recv / s as f64).floor()
                };
                let by_rate = if per_rtt >= u64::MAX as f64 {
                    u64::MAX
                } else {
                    per_rtt as u64
                };
                by_delay.min(by_rate).max(1)
            }
        }
    }

    /// The observation (feedback) interval O = RTT/NFb (RFC 5348 §6.2 for
    /// `Standard`, O = RTT; paper 001 §III for `Dynamic`), at least
    /// [`MIN_RTT`].
    pub fn interval(&self, rtt: Duration, x_recv: f64, s: u32) -> Duration {
        let nfb = self.nfb(rtt, x_recv, s);
        Duration::from_nanos(rtt.as_nanos() / nfb).max(MIN_RTT)
    }
}

/// Which TFRC a sender or receiver runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Profile {
    /// RFC 5348, to the letter (the default).
    #[default]
    Rfc5348,
    /// ns-2 2.35's `Agent/TFRC` and `Agent/TFRCSink` with their default
    /// settings (tcp/tfrc.cc, tcp/tfrc-sink.cc): ns-2's slow start, its
    /// additive increase of at most 2 packets/RTT per report, its
    /// no-feedback timer, its t_RTO from a 100 ms-tick TCP estimator, its
    /// RTT filter (df_ 0.95) and damping. See [`Ns2Params`] and
    /// `docs/ns2.md`, "The ns2 profile".
    Ns2,
}

/// The `Agent/TFRC` variables the `ns2` profile reproduces, with ns-2
/// 2.35's defaults (tcl/lib/ns-default.tcl) as [`Default`].
#[derive(Clone, Debug, PartialEq)]
pub struct Ns2Params {
    /// `InitRate_`: the rate before the first feedback, bytes/s (300).
    pub init_rate: f64,
    /// `tcp_tick_`: granularity of the TCP-style estimator behind t_RTO,
    /// seconds (0.1).
    pub tcp_tick: f64,
    /// `minrto_`: floor of t_RTO, seconds (0).
    pub min_rto: f64,
    /// `df_`: weight of the old value in the RTT filter and in the
    /// R_sqmean filter of the damping (0.95).
    pub df: f64,
    /// `ssmult_`: slow-start multiplier per RTT (2).
    pub ssmult: f64,
    /// `slow_increase_`: spread each slow-start increase over the next RTT
    /// (true).
    pub slow_increase: bool,
    /// `srtt_init_`, `rttvar_init_`, `rtxcur_init_` (0, 12, 6.0 s).
    pub srtt_init: f64,
    /// See `srtt_init`.
    pub rttvar_init: f64,
    /// See `srtt_init`.
    pub rtxcur_init: f64,
    /// `maxHeavyRounds_`: reports the rate may stay above 2 X_recv (0).
    pub max_heavy_rounds: u32,
    /// Not an ns-2 variable: the relative difference below which slow
    /// start takes `rate_` and `ss_maxrate_` (2 X_recv) as equal, so that
    /// neither doubles nor halves the rate (`TfrcAgent::slowstart()` does
    /// nothing on an exact tie). Default 1e-6: a report interval of 2 ms
    /// or more measures the same X_recv to within 1 ns of arrival time,
    /// which is what ns-2's double clock gives as equal; 0 compares as
    /// ns-2's code reads.
    pub ss_tie: f64,
}

impl Default for Ns2Params {
    fn default() -> Self {
        Ns2Params {
            init_rate: 300.0,
            tcp_tick: 0.1,
            min_rto: 0.0,
            df: 0.95,
            ssmult: 2.0,
            slow_increase: true,
            srtt_init: 0.0,
            rttvar_init: 12.0,
            rtxcur_init: 6.0,
            max_heavy_rounds: 0,
            ss_tie: 1e-6,
        }
    }
}

/// The default of [`SenderConfig::rtt_q_milli`]: q = 0.9 (RFC 5348 §4.3
/// step 2).
pub const DEFAULT_RTT_Q_MILLI: u32 = 900;

/// The default of [`SenderConfig::damping_max_gain`].
pub const DEFAULT_DAMPING_MAX_GAIN: f64 = 2.0;

/// How the sender decides that a feedback packet covered a data-limited
/// interval (RFC 5348 §4.3 step 4, §8.2.1; see
/// [`SenderConfig::data_limited_check`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DataLimitedCheck {
    /// §8.2.1's procedure with two timestamps, NotLimited1 and
    /// NotLimited2.
    TwoTimestamps,
    /// The interval meets no stretch of time during which the sender had
    /// data waiting: exactly "data-limited over the entire interval",
    /// whatever the feedback rate (the default).
    #[default]
    Stretches,
}

/// Sender parameters.
#[derive(Clone, Debug)]
pub struct SenderConfig {
    /// Segment size s in bytes.
    pub s: u32,
    /// Maximum backoff interval t_mbi (RFC 5348 §4.3: 64 s).
    pub t_mbi: Duration,
    /// Oscillation damping (RFC 5348 §4.5; on by default, as the RFC's
    /// "SHOULD be implemented" asks).
    pub oscillation_damping: bool,
    /// The largest X_inst/X oscillation damping may give (RFC 5348 §4.5;
    /// default 2). §4.5 sets X_inst = X * R_sqmean / sqrt(R_sample) to
    /// *reduce* the rate as queueing delay grows, and expects "only a
    /// moderate difference between the instantaneous transmit rate X_inst
    /// and the allowed transmit rate X"; it puts no upper bound on X_inst.
    /// When the base RTT is tiny against the queueing delay (a sub-ms
    /// path behind a 120 ms token-bucket queue, issue 34), one RTT sample
    /// taken on an empty queue makes X_inst 20-30 X for a whole RTT, and
    /// the flow settles into a cycle of filling the queue and overflowing
    /// it. Our reading: the factor is bounded at 2, the most by which
    /// RFC 5348 ever lets the sending rate grow within one RTT (§4.3 step
    /// 4: X = min(2X, recv_limit) in slow start, and recv_limit =
    /// 2 X_recv); X_inst changes once per feedback, i.e. once per RTT.
    /// `f64::INFINITY` is the RFC's unbounded formula; a value below 1 is
    /// treated as 1 (damping never caps below X) and NaN as 2.
    pub damping_max_gain: f64,
    /// How a data-limited interval is recognised (§4.3 step 4: "If the
    /// entire interval covered by the feedback packet was a data-limited
    /// interval"). §8.2.1 gives a procedure with two timestamps that
    /// answers correctly when feedback comes about once per RTT; when
    /// several feedback packets arrive within the lag between a packet's
    /// sending and its echo (a standing queue, or a receiver whose R_m is
    /// still the tiny first sample), both timestamps lie after t_new and a
    /// sender that always had data waiting is judged data-limited, which
    /// freezes max(X_recv_set) (§4.3: "X_recv_set = {max X_recv_set}",
    /// restamped now). [`DataLimitedCheck::Stretches`] (the default)
    /// answers the question itself; `TwoTimestamps` is §8.2.1's
    /// procedure, which agrees with it when feedback comes once per RTT.
    pub data_limited_check: DataLimitedCheck,
    /// The b of the throughput equation (packets acknowledged per ACK).
    pub b: f64,
    /// The RTT filter constant q of RFC 5348 §4.3 step 2, R = q·R + (1 −
    /// q)·R_sample on every feedback packet, in thousandths (default 900,
    /// the RFC's recommended 0.9; from 0, where R is the latest sample, to
    /// 1000, where R keeps its first). The filter runs once per feedback,
    /// so its memory in time is that of about 1/(1 − q) feedback
    /// intervals: one RTT's worth of reports forgets 1 − q^NFb of an old
    /// queueing delay, 10 % with the standard policy and 65 % with paper
    /// 001's NFb = 10 (docs/validation.md, "Paper 001"). Integer
    /// thousandths keep the default's arithmetic exact:
    /// (900·R + 100·R_sample)/1000 is (9·R + R_sample)/10.
    pub rtt_q_milli: u32,
    /// Scheduling granularity t_gran of the host (RFC 5348 §4.6): a packet
    /// may leave up to t_delta = min(t_ipi/2, t_gran/2) before its nominal
    /// send time. Zero (the default) suits the simulator, which wakes at
    /// exact nanoseconds; a real-time runtime should set its timer
    /// granularity (about 1 ms).
    pub t_gran: Duration,
    /// RFC 5348 (default) or ns-2 2.35's `Agent/TFRC`. With
    /// [`Profile::Ns2`], `t_mbi` and `t_gran` are not used (ns-2 has
    /// neither) and `oscillation_damping` is ns-2's `ca_`.
    pub profile: Profile,
    /// ns-2's variables, used with [`Profile::Ns2`] only.
    pub ns2: Ns2Params,
}

impl Default for SenderConfig {
    fn default() -> Self {
        SenderConfig {
            s: 1000,
            t_mbi: Duration::from_secs(64),
            // §4.5: "this modification SHOULD be implemented".
            oscillation_damping: true,
            damping_max_gain: DEFAULT_DAMPING_MAX_GAIN,
            data_limited_check: DataLimitedCheck::default(),
            b: 1.0,
            rtt_q_milli: DEFAULT_RTT_Q_MILLI,
            t_gran: Duration::ZERO,
            profile: Profile::Rfc5348,
            ns2: Ns2Params::default(),
        }
    }
}

/// What X_recv is measured over when data arrives after the feedback
/// timer expired with nothing received since the last report (RFC 5348
/// §6.2; see [`ReceiverConfig::x_recv_interval`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum XRecvInterval {
    /// Everything since the last feedback packet was sent (the default;
    /// §6.2 step 2's "MAY be calculated over a longer time interval").
    #[default]
    SinceFeedback,
    /// About the last R_m: from the timer's latest (skipped) expiry,
    /// reaching back one more R_m when that is less than R_m ago, so a
    /// lone packet reports between s/(2 R_m) and s/R_m.
    Rtt,
}

/// The X_target from which the first loss interval is synthesised
/// (RFC 5348 §6.3.1; see [`ReceiverConfig::first_loss_target`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FirstLossTarget {
    /// "the maximum value of X_recv so far" (§6.3.1; the default).
    #[default]
    MaxXRecv,
    /// The receive rate over the current measurement window, the packet
    /// that revealed the loss included: what the next report would carry
    /// (ns-2 2.35's `adjust_history` takes the same kind of recent rate,
    /// `est_thput`).
    Recent,
}

/// Receiver parameters.
#[derive(Clone, Debug)]
pub struct ReceiverConfig {
    /// Segment size s in bytes.
    pub s: u32,
    /// Feedback policy.
    pub policy: FeedbackPolicy,
    /// History discounting (RFC 5348 §5.5).
    pub history_discounting: bool,
    /// Packets after a hole that declare it lost (RFC 5348 §5.1).
    pub ndupack: u32,
    /// The b of the throughput equation used to synthesise the first loss
    /// interval (§6.3.1); it should equal the sender's (§3.1: b = 1 is
    /// the RFC's recommendation).
    pub b: f64,
    /// RFC 5348 (default) or ns-2 2.35's `Agent/TFRCSink`: with
    /// [`Profile::Ns2`] the first loss interval is synthesized as
    /// `adjust_history` does (tcp/tfrc-sink.cc): from the packets received
    /// in the last R, with the sender's t_RTO ([`TfrcData::t_rto`]) and
    /// ns-2's coarse inverse `b_to_p` (formula-with-inverse.h).
    pub profile: Profile,
    /// What X_recv covers when data arrives after empty feedback-timer
    /// expiries (profile `rfc5348`; the `ns2` profile measures as ns-2
    /// does). R_m is the RTT the sender wrote into the data packet, so a
    /// packet that queued behind the sender's own slow start carries the
    /// RTT of a path with no queue: behind a token-bucket shaper on a
    /// sub-ms veth pair (issue 34) it was 0.1 ms while packets arrived
    /// every 0.83 ms, and "one packet per R_m" reported 77 Mb/s on a
    /// 10 Mb/s link for 120 ms, which the sender's slow start (X =
    /// min(2X, 2 X_recv), §4.3) took at its word: 153 Mb/s offered, 1 935
    /// of 4 008 datagrams dropped in the first 0.2 s. Measured since the
    /// last report ([`XRecvInterval::SinceFeedback`], the default), the
    /// same packets report 9.6 Mb/s and 166 are dropped, the queue's
    /// worth a TCP slow start also loses. A TFRC or CCID3 source here is
    /// always a bulk source, so a gap between packets is the network's,
    /// never an idle application's; [`XRecvInterval::Rtt`] is the
    /// one-R_m reading (what satcc did before).
    pub x_recv_interval: XRecvInterval,
    /// X_target of the first loss interval (profile `rfc5348`). §6.3.1
    /// takes the largest X_recv so far, reasoning that in slow start the
    /// receive rate never exceeds what the path delivers; behind a token
    /// bucket the first reports measure its burst passing at line rate
    /// (278 Mb/s on a 2 Mb/s tbf, issue 34), the synthesised interval
    /// gives p near 1e-6, and the flow goes on at twice the link rate for
    /// the eight loss events it takes to age that interval out.
    /// [`FirstLossTarget::Recent`] takes the current receive rate.
    pub first_loss_target: FirstLossTarget,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        ReceiverConfig {
            s: 1000,
            policy: FeedbackPolicy::Standard,
            history_discounting: false,
            ndupack: 3,
            b: 1.0,
            profile: Profile::Rfc5348,
            x_recv_interval: XRecvInterval::default(),
            first_loss_target: FirstLossTarget::default(),
        }
    }
}

/// Sender state for monitoring.
#[derive(Clone, Copy, Debug, Default)]
pub struct TfrcSenderStats {
    /// Allowed sending rate X, bytes per second.
    pub x: f64,
    /// Last reported receive rate, bytes per second.
    pub x_recv: f64,
    /// Last reported loss event rate.
    pub p: f64,
    /// RTT estimate R.
    pub rtt: Option<Duration>,
    /// Data packets sent.
    pub packets_sent: u64,
    /// Feedback packets received.
    pub feedback_received: u64,
    /// No-feedback timer expiries.
    pub nofeedback_expiries: u64,
    /// The throughput equation's rate X_Bps (RFC 5348 §3.1) for the last
    /// reported p and the current R, bytes per second; `None` while p = 0.
    pub x_calc: Option<f64>,
    /// Feedback packets ignored as malformed (a NaN field, an echoed
    /// timestamp later than now).
    pub feedback_ignored: u64,
    /// Messages of another protocol handed to the sender, ignored.
    pub foreign: u64,
    /// RTT samples taken from accepted feedback (RFC 5348 §4.3 (1)).
    pub rtt_samples: u64,
    /// Sum of those samples: their mean is the run's mean RTT, where `rtt`
    /// is only the smoothed estimate at the end.
    pub sum_rtt: Duration,
}

/// Receiver counters.
#[derive(Clone, Copy, Debug, Default)]
pub struct TfrcReceiverStats {
    /// Payload bytes of distinct packets received.
    pub delivered_bytes: u64,
    /// Distinct data packets received.
    pub packets_received: u64,
    /// Feedback packets sent.
    pub feedback_sent: u64,
    /// Loss events detected.
    pub loss_events: u64,
    /// Packets detected lost.
    pub packets_lost: u64,
    /// Current loss event rate.
    pub p: f64,
    /// Duplicate data packets (not counted above).
    pub duplicates: u64,
    /// Data packets ignored: older than the duplicate-detection window, or
    /// a sequence number implausibly far ahead (see [`loss::MAX_SEQ_JUMP`]).
    pub packets_ignored: u64,
    /// X_recv of the last feedback sent, bytes per second.
    pub x_recv: f64,
    /// The receiver's RTT, R_m (the `rtt` field of the latest data packet).
    pub rtt: Option<Duration>,
    /// Messages of another protocol handed to the receiver, ignored.
    pub foreign: u64,
}
