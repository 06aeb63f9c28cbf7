//! The TFRCP sender (paper 004 §II-B).
//!
//! **Rounds.** Round i lasts M_i (the strategy of §III-C.1, drawn at its
//! start) and sends at r_i. At its end the sender marks packets lost,
//! counts x_i received and y_i lost, and sets r_{i+1}.
//!
//! **The log** holds one entry per packet sent and not yet counted: its
//! send time, its "timeout limit" (send time + B at send time, §II-B) and
//! its received status (received / presumed lost / unknown). ACKs only
//! ever set statuses; counting happens at round ends, when the decided
//! prefix of the log is popped. Each packet is therefore counted exactly
//! once, whatever ACKs are lost, duplicated or reordered, and the log
//! holds only the packets still in doubt (amortised O(1) work per packet).
//!
//! **Which packets a round's p covers** (§II-B, our reading). The paper
//! counts x_i and y_i over [j, a]: j the oldest packet whose status was
//! still unknown at the end of round i-1, a the highest sequence number
//! acknowledged. After the marking step every packet in [j, a] is decided,
//! so this is "every packet decided during round i". Read literally, a
//! packet above a that times out is marked lost but never counted (it
//! lies below the next round's j): in a blackout, where a stops moving,
//! every round would then count x = y = 0 and double the rate, the
//! opposite of the "self-limitation" §II-B claims. We therefore count
//! every packet when it becomes decided and all older ones are decided
//! too (the popped prefix): [j, a] as the paper says, plus timed-out
//! packets above a. A round that decides nothing (x + y = 0, e.g. the
//! sender had nothing to send) keeps its rate: "no packets were lost"
//! needs packets.
//!
//! **Loss below a.** The paper marks lost every unknown packet between j
//! and a. We keep that rule (with an optional tolerance,
//! [`SenderConfig::reorder_tolerance`], default 0). With the vector in
//! mind: the ACK for a reports on a-7..a, so an unknown packet in
//! [a-7, a-1] was *seen missing* by the receiver when it sent that ACK; on
//! a FIFO path it can no longer arrive, and deferring would only delay the
//! verdict. An unknown packet below a-7 is reported by no vector that
//! arrived: it is lost, or it and the ACKs of the 7 packets after it were
//! all lost, which no rule can tell apart. Only reordering (LEO route
//! changes) makes [a-7, a-1] premature; the tolerance covers that.
//!
//! **Timeouts.** A packet is lost by timeout when its timeout limit is
//! before t_i (§II-B) and also send time + the current B is (our
//! addition: before the first RTT sample B is the initial RTO, 1 s, which
//! a long satellite path can exceed; the later, measured B then prevails).

use std::collections::VecDeque;

use super::{
    Pacing, SenderConfig, Strategy, TfrcpAck, TfrcpData, TfrcpSenderStats, MIN_ROUND, MIN_RTT,
    VECTOR_LEN,
};
use crate::equation::pftk_rate;
use crate::pacer::{Ipi, Pacer};
use crate::rng::Rng;
use crate::tcp::RttEstimator;
use crate::time::{Duration, Instant};

/// Received status of a logged packet (paper 004 §II-B).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Unknown,
    Received,
    Lost,
}

/// One log entry.
#[derive(Clone, Copy, Debug)]
struct Entry {
    sent: Instant,
    /// Send time + B at send time (§II-B "timeout limit").
    limit: Instant,
    status: Status,
    /// The packet's own ACK has arrived (its RTT has been sampled).
    acked: bool,
}

/// The TFRCP sender.
#[derive(Debug)]
pub struct TfrcpSender {
    cfg: SenderConfig,
    rng: Rng,
    rtt: RttEstimator,
    /// r_i, packets/s.
    rate: f64,
    round_len: Duration,
    round_end: Instant,
    /// Burst pacing in force this round, with the RTT it was set up with.
    burst_rtt: Option<Duration>,
    /// The log: `log[0]` is sequence number `base`.
    log: VecDeque<Entry>,
    base: u64,
    next_seq: u64,
    /// a: the highest sequence number acknowledged.
    highest_acked: Option<u64>,
    unlimited: bool,
    queued: u64,
    /// Even pacing: the send schedule (its last send time counts burst
    /// sends too).
    pacer: Pacer,
    /// Burst pacing: when the current burst started, when the next one
    /// starts, packets left in the current one, and the fraction of a
    /// packet carried to the next.
    burst_at: Instant,
    next_burst: Instant,
    burst_left: u64,
    burst_frac: f64,
    pub(super) stats: TfrcpSenderStats,
}

/// `x` if it is a number in [lo, hi], else clamped (NaN gives `lo`).
fn clamp_rate(x: f64, lo: f64, hi: f64) -> f64 {
    if x.is_nan() {
        lo
    } else {
        x.max(lo).min(hi)
    }
}

impl TfrcpSender {
    /// A sender starting round 0 at `now` with rate r0 (paper 004 §II-B).
    /// `rng_seed` seeds the generator S3 draws M from. It has nothing to
    /// send until [`Self::set_unlimited`] or [`Self::push_data`].
    pub fn new(cfg: SenderConfig, now: Instant, rng_seed: u64) -> Self {
        let mut cfg = cfg;
        // Sanitise the bounds so that the rate is always a positive finite
        // number (never panic, never divide by zero).
        if !(cfg.min_rate.is_finite() && cfg.min_rate > 0.0) {
            cfg.min_rate = 1.0 / 64.0;
        }
        if cfg.max_rate.is_nan() || cfg.max_rate <= 0.0 {
            cfg.max_rate = 1e6;
        }
        cfg.max_rate = cfg.max_rate.clamp(cfg.min_rate, 1e9);
        let rate = clamp_rate(cfg.r0, cfg.min_rate, cfg.max_rate);
        let rtt = RttEstimator::new(
            cfg.initial_rto,
            cfg.min_rto,
            cfg.max_rto,
            cfg.clock_granularity,
        );
        let mut s = TfrcpSender {
            cfg,
            rng: Rng::new(rng_seed),
            rtt,
            rate,
            round_len: Duration::ZERO,
            round_end: now,
            burst_rtt: None,
            log: VecDeque::new(),
            base: 0,
            next_seq: 0,
            highest_acked: None,
            unlimited: false,
            queued: 0,
            pacer: Pacer::new(now),
            burst_at: now,
            next_burst: now,
            burst_left: 0,
            burst_frac: 0.0,
            stats: TfrcpSenderStats::default(),
        };
        s.start_round(now);
        s
    }

    /// Bulk data: always something to send.
    pub fn set_unlimited(&mut self) {
        self.unlimited = true;
    }

    /// The application closes: no data is sent from now on (TFRCP does not
    /// retransmit).
    pub fn close(&mut self) {
        self.unlimited = false;
        self.queued = 0;
    }

    /// Queue `bytes` more application data (sent in packets of at most s
    /// bytes). Ignored once the sender is unlimited.
    pub fn push_data(&mut self, bytes: u64) {
        self.queued = self.queued.saturating_add(bytes);
    }

    fn has_data(&self) -> bool {
        self.unlimited || self.queued > 0
    }

    /// M for a round starting now (paper 004 §III-C.1), at least
    /// [`MIN_ROUND`].
    fn draw_round_len(&mut self) -> Duration {
        let m = match self.cfg.strategy {
            // S1.
            Strategy::Fixed { m } => m,
            // S2: "if at the beginning of round i the round trip time is
            // rtt_i, the next recomputation is performed after K*rtt_i".
            Strategy::RttMultiple { k } => match self.rtt.srtt() {
                Some(r) => Duration::from_secs_f64(k * r.as_secs_f64()),
                None => self.cfg.s2_fallback_m,
            },
            // S3: a constant plus a uniform draw, in whole nanoseconds.
            Strategy::Random { base, spread } => {
                let u = self.rng.below(spread.as_nanos().saturating_add(1));
                base + Duration::from_nanos(u)
            }
        };
        m.max(MIN_ROUND)
    }

    /// Begin a round at `now` with the current rate.
    fn start_round(&mut self, now: Instant) {
        self.round_len = self.draw_round_len();
        self.round_end = now + self.round_len;
        // §IV-A: "let R be the round trip time estimate at the beginning of
        // this round ... the round is divided into bursts of duration R".
        let burst_rtt = match self.cfg.pacing {
            Pacing::Burst => self.rtt.srtt().map(|r| r.max(MIN_RTT)),
            Pacing::Even => None,
        };
        if burst_rtt.is_some() {
            if self.burst_rtt.is_none() {
                self.burst_frac = 0.0;
            }
            self.burst_at = now;
            self.next_burst = now;
            self.burst_left = 0;
        } else {
            self.reschedule();
        }
        self.burst_rtt = burst_rtt;
    }

    /// The end of round i at t_i = `now` (paper 004 §II-B).
    fn close_round(&mut self, now: Instant) {
        let b = self.rtt.base_rto();
        // "Any packet whose sequence number lies between j and a, and whose
        // received status is unknown, is marked as lost" (less the
        // reordering tolerance, 0 by default; see the module notes).
        if let Some(a) = self.highest_acked {
            let end = a
                .saturating_sub(self.cfg.reorder_tolerance)
                .min(self.next_seq);
            let upto = end.saturating_sub(self.base);
            for e in self
                .log
                .iter_mut()
                .take(upto.min(usize::MAX as u64) as usize)
            {
                if e.status == Status::Unknown {
                    e.status = Status::Lost;
                }
            }
        }
        // "Any packet whose sequence number lies between j and l, and whose
        // timeout limit is less than t_i, is marked as lost" (and, our
        // addition, whose send time + the current B is too). Send times
        // grow with the sequence number, so the scan stops at the first
        // packet younger than B.
        for e in self.log.iter_mut() {
            if e.sent + b >= now {
                break;
            }
            if e.status == Status::Unknown && e.limit < now {
                e.status = Status::Lost;
            }
        }
        // Count and prune the decided prefix: x_i received, y_i lost.
        let (mut x, mut y) = (0u64, 0u64);
        while let Some(e) = self.log.front() {
            match e.status {
                Status::Unknown => break,
                Status::Received => x += 1,
                Status::Lost => y += 1,
            }
            self.log.pop_front();
            self.base += 1;
        }
        self.stats.last_received = x;
        self.stats.last_lost = y;
        self.stats.packets_acked += x;
        self.stats.packets_lost += y;
        self.stats.rounds += 1;
        let next = if x + y == 0 {
            // Nothing decided: no evidence either way, keep r_i.
            self.stats.p = 0.0;
            self.rate
        } else if y == 0 {
            // "If y_i = 0 ... r_{i+1} = 2*r_i."
            self.stats.p = 0.0;
            2.0 * self.rate
        } else {
            // "p_i = y_i/(x_i+y_i) ... r_{i+1} = f(Wmax, R, p_i, B)" with R
            // the smoothed RTT and B the base timeout (RFC 6298 RTO). With
            // no RTT sample yet (only timeouts, x = 0) R is taken as B;
            // f then hardly depends on R.
            let p = y as f64 / (x + y) as f64;
            self.stats.p = p;
            let r = self.rtt.srtt().unwrap_or(b).max(MIN_RTT);
            pftk_rate(
                r.as_secs_f64(),
                p,
                self.cfg.b,
                b.as_secs_f64(),
                self.cfg.wmax,
            )
        };
        self.rate = clamp_rate(next, self.cfg.min_rate, self.cfg.max_rate);
        self.start_round(now);
    }

    fn maybe_close_round(&mut self, now: Instant) {
        if now >= self.round_end {
            self.close_round(now);
        }
    }

    /// An ACK arrived (paper 004 §II-B): sample the RTT and mark k and
    /// the packets its vector reports received.
    pub fn handle_input(&mut self, now: Instant, ack: &TfrcpAck) {
        self.stats.acks_received += 1;
        let k = ack.seq;
        if ack.ts_echo > now || k >= self.next_seq || k < self.base {
            // Never sent, already counted and pruned (its fate and its
            // vector's are settled; its echo cannot be checked against the
            // log), or echoing a time not yet come.
            self.stats.acks_ignored += 1;
            return;
        }
        let idx = (k - self.base) as usize;
        let e = &mut self.log[idx];
        if !e.acked {
            // "The sender also updates the round trip time estimate (R) and
            // base timeout (B) using the difference t_k - s_k. This update
            // is done exactly as in TCP" (RFC 6298 §2). Only the first ACK
            // of a packet is sampled: a duplicate would measure the
            // duplicate's delay, not the path's.
            let sample = now.saturating_since(ack.ts_echo).max(MIN_RTT);
            self.rtt.on_sample(sample);
            self.stats.rtt_samples += 1;
            self.stats.sum_rtt += sample;
            e.acked = true;
        }
        // k itself was received, whatever bit 0 says. A "presumed lost"
        // packet not yet counted yields to the evidence.
        e.status = Status::Received;
        for i in 1..VECTOR_LEN {
            if ack.vector & (1u8 << i) == 0 {
                continue;
            }
            match k.checked_sub(i) {
                Some(q) if q >= self.base => {
                    self.log[(q - self.base) as usize].status = Status::Received;
                }
                _ => break, // older ones are pruned too
            }
        }
        self.highest_acked = Some(self.highest_acked.map_or(k, |a| a.max(k)));
    }

    /// The time asked for has come: close the round if its end is due.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.maybe_close_round(now);
    }

    /// Even pacing: the inter-packet interval 1/r (r is always positive
    /// and finite).
    fn ipi(&self) -> Ipi {
        Ipi::from_rate(1.0, self.rate)
    }

    /// After r changed: bring the next send forward to one new interval
    /// after the last send if it lies beyond (as the TFRC sender does), so
    /// that an increase takes effect at once.
    fn reschedule(&mut self) {
        self.pacer.reschedule(self.ipi());
    }

    /// Burst pacing: start the burst due at `next_burst` if `now` has
    /// reached it. A burst is followed by a silence until the next one,
    /// R later or at the round's end, whichever is first, and carries
    /// r times that interval, the fraction of a packet carried over, so
    /// that a round sends r*M packets (the paper rounds r*R to the
    /// nearest integer per burst, §IV-A; carrying keeps the long-run rate
    /// exact, also when r*R < 1/2).
    fn maybe_start_burst(&mut self, now: Instant, r: Duration) {
        if now < self.next_burst {
            return;
        }
        let mut t = self.next_burst;
        if now >= t + r {
            // The driver overslept a whole burst: start from now rather
            // than crediting the time missed.
            t = now;
        }
        let mut end = (t + r).min(self.round_end);
        if end <= t {
            end = t + r;
        }
        let credit = self.burst_frac + self.rate * end.saturating_since(t).as_secs_f64();
        let whole = credit.floor();
        self.burst_frac = credit - whole;
        // Packets the application did not fill in the last burst lapse.
        self.burst_left = if whole >= u64::MAX as f64 {
            u64::MAX
        } else {
            whole as u64
        };
        self.burst_at = t;
        self.next_burst = end;
    }

    /// The next packet, if its send time has come.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<TfrcpData> {
        self.maybe_close_round(now);
        match self.burst_rtt {
            Some(r) => {
                self.maybe_start_burst(now, r);
                if self.burst_left == 0 || !self.has_data() {
                    return None;
                }
                self.burst_left -= 1;
                self.pacer.on_unscheduled_send(now);
            }
            None => {
                if now < self.pacer.due() || !self.has_data() {
                    return None;
                }
                // Nominal times advance by 1/r from the previous nominal
                // time, so the long-run rate is exact; a sender more than
                // one interval late (idle, say) restarts from now instead
                // of bursting.
                self.pacer.on_send(now, self.ipi());
            }
        }
        let len = if self.unlimited {
            self.cfg.s
        } else {
            let l = self.queued.min(u64::from(self.cfg.s));
            self.queued -= l;
            l as u32
        };
        // The log entry: send time and "timeout limit" = send time + the
        // current base timeout (§II-B); status unknown.
        self.log.push_back(Entry {
            sent: now,
            limit: now + self.rtt.base_rto(),
            status: Status::Unknown,
            acked: false,
        });
        let d = TfrcpData {
            seq: self.next_seq,
            len,
            ts: now,
        };
        self.next_seq += 1;
        self.stats.packets_sent += 1;
        Some(d)
    }

    /// When to wake next: the round's end, or the next send time.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let mut t = self.round_end;
        if self.has_data() {
            let send = match self.burst_rtt {
                Some(_) if self.burst_left > 0 => self.burst_at,
                Some(_) => self.next_burst,
                None => self.pacer.due(),
            };
            t = t.min(send);
        }
        Some(t)
    }

    /// Monitoring.
    pub fn stats(&self) -> TfrcpSenderStats {
        TfrcpSenderStats {
            rate_pps: self.rate,
            rtt: self.rtt.srtt(),
            rto: self.rtt.base_rto(),
            round_len: self.round_len,
            ..self.stats
        }
    }

    /// Configuration (after sanitising the rate bounds).
    pub fn config(&self) -> &SenderConfig {
        &self.cfg
    }

    /// The current rate r_i, packets/s.
    pub fn rate_pps(&self) -> f64 {
        self.rate
    }

    /// When the current round ends.
    pub fn round_end(&self) -> Instant {
        self.round_end
    }

    /// Length M of the current round.
    pub fn round_len(&self) -> Duration {
        self.round_len
    }

    /// Packets in the log (sent and not yet counted).
    pub fn log_len(&self) -> usize {
        self.log.len()
    }
}
