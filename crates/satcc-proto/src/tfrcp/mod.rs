//! TFRCP, the TCP-friendly rate control protocol of paper 004 (Padhye,
//! Kurose, Towsley, Koodli): a sender that works in rounds of M seconds,
//! logs every packet it sends, learns their fate from per-packet ACKs that
//! carry an 8-bit reception vector, and sets the next round's rate to
//! `2*r` after a loss-free round or to the full PFTK model
//! f(Wmax, R, p, B) ([`crate::equation::pftk_rate`]) otherwise.
//!
//! Layout: [`sender`] (paper 004 §II-B, the recomputation strategies of
//! §III-C.1 and the burst pacing of §IV-A), [`receiver`] (one ACK per data
//! packet with the reception vector, §II-B). Rates are in packets per
//! second, as the paper states them; all timing is integer-nanosecond
//! [`Instant`](crate::time::Instant)/[`Duration`], and `f64` is used only
//! for the rate arithmetic. The packets, [`TfrcpData`] and [`TfrcpAck`],
//! are defined in [`crate::messages::tfrcp`].

use crate::time::Duration;

mod endpoint;
pub mod receiver;
pub mod sender;
#[cfg(test)]
mod tests;

pub use crate::messages::tfrcp::{TfrcpAck, TfrcpData};
pub use receiver::TfrcpReceiver;
pub use sender::TfrcpSender;

/// Packets an ACK's vector reports on: k-7..k (paper 004 §II-B).
pub const VECTOR_LEN: u64 = 8;

/// The smallest RTT the sender uses (10 µs, as the TFRC code does): an
/// RTT sample below it (zero, on a loopback say) is raised to it, so that
/// no round or burst timer is ever armed for "now" over and over.
pub const MIN_RTT: Duration = Duration::from_micros(10);

/// The shortest round the sender runs (1 ms), whatever the strategy says
/// (a zero `M` from a misconfiguration or a tiny `K*RTT` must not spin).
pub const MIN_ROUND: Duration = Duration::from_millis(1);

/// How the sender chooses the recomputation interval M (paper 004
/// §III-C.1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Strategy {
    /// S1: a fixed M.
    Fixed {
        /// The recomputation interval.
        m: Duration,
    },
    /// S2: M = K * RTT, with the RTT estimate at the start of the round.
    /// Before any RTT sample the sender uses
    /// [`SenderConfig::s2_fallback_m`].
    RttMultiple {
        /// K (the paper tries 10..60).
        k: f64,
    },
    /// S3: M = base + U[0, spread], drawn at the start of each round from
    /// the sender's own seeded generator.
    Random {
        /// The constant part.
        base: Duration,
        /// Width of the uniform part.
        spread: Duration,
    },
}

/// How packets are clocked out within a round.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Pacing {
    /// Evenly, one packet every 1/r seconds (paper 004 §II-B: "clocked out
    /// uniformly during the round", as in its simulations).
    #[default]
    Even,
    /// In back-to-back bursts one RTT apart, r*RTT packets each (paper 004
    /// §IV-A, the Internet implementation). Even until an RTT is known.
    Burst,
}

/// Sender parameters.
#[derive(Clone, Debug)]
pub struct SenderConfig {
    /// Payload bytes per packet.
    pub s: u32,
    /// Initial rate r0, packets/s (paper 004 §II-B: 40 in all its runs).
    pub r0: f64,
    /// Recomputation interval strategy. Default S1 with M = 3 s: the paper
    /// settles on S1 ("the simplest strategy", §III-C.1) and its Internet
    /// experiments use M = 3 s, "the protocol works well with a
    /// recomputation interval of three seconds" (§IV-B, §V).
    pub strategy: Strategy,
    /// Packet clocking within a round.
    pub pacing: Pacing,
    /// Wmax of the PFTK model, packets: the receiver's declared window
    /// (paper 004 eq. 2). Default 100, the value of the paper's Internet
    /// experiments (§IV-B). Scenarios comparing with TCP should set the
    /// competing TCP's receiver window here (§V: "the value of Wmax can
    /// significantly affect the throughput ... at low loss rates").
    pub wmax: f64,
    /// b, packets acknowledged per ACK in the model (1: no delayed ACKs).
    pub b: f64,
    /// RTO before any RTT sample (RFC 6298 §2.1: 1 s). Paper 004 §II-B:
    /// "the initial values of R and B are set in a manner similar to TCP".
    pub initial_rto: Duration,
    /// Lower bound on the base timeout B (RFC 6298 §2.4: 1 s, as the TCP
    /// sender's default, so that T0 in the model is the competing TCP's).
    pub min_rto: Duration,
    /// Upper bound on B (RFC 6298 §2.5: at least 60 s).
    pub max_rto: Duration,
    /// Clock granularity G of RFC 6298 §2.
    pub clock_granularity: Duration,
    /// Upper bound on the rate, packets/s. The paper doubles without a
    /// limit after every loss-free round; this only keeps a lossless path
    /// from driving the rate to absurd values.
    pub max_rate: f64,
    /// Lower bound on the rate, packets/s. Default 1/64, one packet per
    /// t_mbi = 64 s as RFC 5348 §4.3 (TFRC, TFRCP's successor) floors its
    /// rate; with B >= 1 s this is at or above the model's own limit as
    /// p -> 1, 1/(64*B), so it only guards degenerate inputs and keeps
    /// the protocol's "self-limitation" (§II-B) intact.
    pub min_rate: f64,
    /// The recomputation interval under S2 before the first RTT sample
    /// (our choice: 3 s, the paper's S1 value, §IV-B).
    pub s2_fallback_m: Duration,
    /// Reordering tolerance, packets: at the end of a round an
    /// unacknowledged packet u is declared lost when u + tolerance < a,
    /// a the highest acknowledged sequence number. 0 (the default) is the
    /// paper's rule ("unknown between j and a", §II-B). See
    /// [`sender`] for why this is exact on a FIFO path.
    pub reorder_tolerance: u64,
}

impl Default for SenderConfig {
    fn default() -> Self {
        SenderConfig {
            s: 1000,
            r0: 40.0,
            strategy: Strategy::Fixed {
                m: Duration::from_secs(3),
            },
            pacing: Pacing::Even,
            wmax: 100.0,
            b: 1.0,
            initial_rto: Duration::from_secs(1),
            min_rto: Duration::from_secs(1),
            max_rto: Duration::from_secs(60),
            clock_granularity: Duration::from_millis(1),
            max_rate: 1e6,
            min_rate: 1.0 / 64.0,
            s2_fallback_m: Duration::from_secs(3),
            reorder_tolerance: 0,
        }
    }
}

/// Receiver parameters (none yet: the receiver answers every packet at
/// once).
#[derive(Clone, Debug, Default)]
pub struct ReceiverConfig {}

/// Sender state for monitoring.
#[derive(Clone, Copy, Debug, Default)]
pub struct TfrcpSenderStats {
    /// Current sending rate r_i, packets/s.
    pub rate_pps: f64,
    /// p of the last round closed: y/(x+y), 0 if it lost nothing or
    /// decided nothing.
    pub p: f64,
    /// x of the last round closed: packets counted received.
    pub last_received: u64,
    /// y of the last round closed: packets counted lost.
    pub last_lost: u64,
    /// Smoothed RTT R (RFC 6298), once sampled.
    pub rtt: Option<Duration>,
    /// Base timeout B (RFC 6298 RTO without backoff).
    pub rto: Duration,
    /// Length M of the current round.
    pub round_len: Duration,
    /// Data packets sent.
    pub packets_sent: u64,
    /// Rounds completed.
    pub rounds: u64,
    /// ACKs received (including ignored ones).
    pub acks_received: u64,
    /// ACKs ignored: for a packet never sent or already pruned from the
    /// log, or echoing a timestamp later than now.
    pub acks_ignored: u64,
    /// Packets counted received over the whole run (sum of x).
    pub packets_acked: u64,
    /// Packets counted lost over the whole run (sum of y).
    pub packets_lost: u64,
    /// Messages of another protocol handed to the sender, ignored.
    pub foreign: u64,
    /// RTT samples taken (the first ACK of each packet, §II-B).
    pub rtt_samples: u64,
    /// Sum of those samples: their mean is the run's mean RTT, where `rtt`
    /// is only the smoothed estimate at the end.
    pub sum_rtt: Duration,
}

/// Receiver counters.
#[derive(Clone, Copy, Debug, Default)]
pub struct TfrcpReceiverStats {
    /// Payload bytes of distinct packets received.
    pub delivered_bytes: u64,
    /// Distinct data packets received.
    pub packets_received: u64,
    /// Duplicate data packets (not counted above, but acknowledged).
    pub duplicates: u64,
    /// ACKs sent.
    pub acks_sent: u64,
    /// Data packets ignored: older than the receiver's duplicate-detection
    /// window ([`receiver::WINDOW`] packets behind the highest seen).
    pub packets_ignored: u64,
    /// ACKs dropped because the driver did not collect them
    /// ([`receiver::MAX_PENDING_ACKS`] were already waiting).
    pub acks_dropped: u64,
    /// Messages of another protocol handed to the receiver, ignored.
    pub foreign: u64,
}
