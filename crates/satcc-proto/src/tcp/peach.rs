//! TCP-Peach (paper 002): the parameters and per-connection state of Sudden
//! Start, Rapid Recovery and the dummy-segment counters. The window logic
//! lives in [`super::TcpSender`], which consults this state at the points
//! where Peach departs from NewReno.

use crate::time::{Duration, Instant};

/// TCP-Peach parameters. The paper's equations were lost in extraction;
/// `docs/papers.md` restores them, and every value that is our
/// reading is a field here.
#[derive(Clone, Debug)]
pub struct PeachConfig {
    /// RTT the first Sudden Start spaces its dummies over, before any
    /// sample exists. Paper 002 §III-B: "the sender can estimate RTT during
    /// the connection setup phase"; a driver passes the handshake RTT.
    pub initial_rtt: Duration,
    /// Allowed dummy segments of a Rapid Recovery as a fraction of W, the
    /// window when the loss was detected: adsn = round(adsn_factor * W).
    /// Paper 002 eq. (4) is lost; docs/papers.md reads it as W (1.0), the value for
    /// which a link-error loss restores cwnd to W (§IV case 1).
    pub adsn_factor: f64,
    /// Dummy ACKs absorbed before cwnd grows again, as a fraction of W:
    /// wdsn = round(wdsn_factor * W). Paper 002 §III-C: W/2, the dummies a
    /// congested router can still carry, so a congestion loss leaves cwnd
    /// at W/2 as Reno would (§IV case 2).
    pub wdsn_factor: f64,
    /// Dummies sent per data ACK while Rapid Recovery may send no new data
    /// (paper 002 §III-C: two).
    pub dummies_per_ack: u32,
    /// Rapid Recovery gives up and runs Sudden Start when the
    /// retransmission is not ACKed within this many RTTs of being sent
    /// (paper 002 §III-C: one), plus 4·RTTVAR. The RTT is the larger of
    /// SRTT and the latest sample. The margin is our choice: the
    /// retransmission joins the queue as it stands, and with a bare RTT
    /// its ACK usually arrived a few ms after the deadline.
    pub rr_timeout_rtts: f64,
    /// Ceiling on the dummies of one Sudden Start (rwnd − 1 in the paper)
    /// for a receiver that advertises an unbounded window.
    pub max_sudden_dummies: u32,
}

impl Default for PeachConfig {
    fn default() -> Self {
        PeachConfig {
            initial_rtt: Duration::from_millis(550),
            adsn_factor: 1.0,
            wdsn_factor: 0.5,
            dummies_per_ack: 2,
            rr_timeout_rtts: 1.0,
            max_sudden_dummies: 65_535,
        }
    }
}

/// Where a Peach connection stands.
#[derive(Clone, Debug)]
pub(super) struct PeachState {
    pub cfg: PeachConfig,
    /// "Wait for dummy segment number" (paper 002 §III-A).
    pub wdsn: u64,
    /// "Allowed dummy segment number" left in this Rapid Recovery.
    pub adsn: u64,
    /// A marked dummy ACK has arrived: the receiver understands dummies.
    pub confirmed: bool,
    /// The receiver answered a dummy with an unmarked duplicate ACK: no
    /// more dummies, the connection runs as its base variant (§III-A).
    pub fallback: bool,
    /// Dummies sent before `confirmed`; an unmarked duplicate ACK while
    /// this is positive may answer one of them.
    pub unanswered: u64,
    /// Unmarked duplicate ACKs since the last cumulative advance while
    /// dummies were unanswered.
    pub suspects: u64,
    /// After falling back, unmarked duplicate ACKs until this time answer
    /// the dummies already in flight.
    pub swallow_until: Instant,
    /// Sudden Start dummies still to send.
    pub ss_remaining: u64,
    /// rwnd of the current Sudden Start (tau * ss_count = its RTT).
    pub ss_count: u64,
    /// Unmarked duplicate ACKs until this time may answer the opening
    /// Sudden Start's dummies (§III-B: the receiver is verified during
    /// Sudden Start).
    pub verify_until: Instant,
    /// The connection's opening Sudden Start is the current one.
    pub opening: bool,
    /// Spacing tau = RTT/rwnd of the Sudden Start dummies (eq. 2).
    pub ss_tau: Duration,
    /// When the next Sudden Start dummy is due; `None` until the data
    /// segment that opens the Sudden Start has gone out.
    pub ss_next: Option<Instant>,
    /// In Rapid Recovery.
    pub rapid: bool,
    /// The segment retransmitted on entry to Rapid Recovery.
    pub rr_seq: u64,
    /// Rapid Recovery expires into Sudden Start at this time.
    pub rr_deadline: Option<Instant>,
    /// Dummies owed from Rapid Recovery, sent at the next transmit.
    pub pending: u64,
    /// Data ACKs since Rapid Recovery began (its cwnd inflation).
    pub rr_acks: u64,
    /// Dummy-ACK increments earned while the base variant was still in
    /// recovery, added back when it deflates cwnd.
    pub credit: u64,
    /// The last data segment sent (sequence, length): what a dummy copies.
    pub last_data: Option<(u64, u32)>,
}

impl PeachState {
    pub fn new(cfg: PeachConfig) -> Self {
        PeachState {
            cfg,
            wdsn: 0,
            adsn: 0,
            confirmed: false,
            fallback: false,
            unanswered: 0,
            suspects: 0,
            swallow_until: Instant::ZERO,
            ss_remaining: 0,
            ss_count: 1,
            verify_until: Instant::ZERO,
            opening: true,
            ss_tau: Duration::ZERO,
            ss_next: None,
            rapid: false,
            rr_seq: 0,
            rr_deadline: None,
            pending: 0,
            rr_acks: 0,
            credit: 0,
            last_data: None,
        }
    }

    /// Dummies go out only while the receiver may still understand them.
    pub fn active(&self) -> bool {
        !self.fallback
    }

    /// Arm a Sudden Start of `rwnd - 1` dummies spread over `rtt`; they
    /// start one tau after the next data segment.
    pub fn arm_sudden_start(&mut self, rtt: Duration, rwnd: u64) {
        let rwnd = rwnd.clamp(1, self.cfg.max_sudden_dummies as u64 + 1);
        self.ss_remaining = rwnd - 1;
        self.ss_count = rwnd;
        self.ss_tau = Duration(rtt.0 / rwnd);
        self.ss_next = None;
        // Paper 002 §III-A: wdsn starts at zero, so every dummy that comes
        // back opens cwnd by one.
        self.wdsn = 0;
        self.adsn = 0;
        self.rapid = false;
        self.rr_deadline = None;
        self.pending = 0;
        self.credit = 0;
    }

    /// Stop every dummy (fallback to the base variant).
    pub fn fall_back(&mut self) {
        self.fallback = true;
        self.ss_remaining = 0;
        self.ss_next = None;
        self.pending = 0;
        self.adsn = 0;
        self.wdsn = 0;
        self.rapid = false;
        self.rr_deadline = None;
    }
}
