//! RACK-TLP loss detection (RFC 8985) for the SACK sender.
//!
//! RACK ("Recent ACKnowledgment", RFC 8985 §6) marks a segment lost when a
//! segment *sent later* has been delivered (cumulatively ACKed or SACKed)
//! and more than RACK.rtt + RACK.reo_wnd has passed since the segment was
//! sent. Because it compares transmission times, not sequence numbers, it
//! sees a lost retransmission, which RFC 6675's DupThresh rule cannot:
//! without RACK such a loss waits for the retransmission timer.
//!
//! TLP (Tail Loss Probe, RFC 8985 §7) sends one segment, new data or the
//! highest one sent, when no ACK has come for a probe timeout of 2·SRTT,
//! so that the ACK it draws lets RACK (or the DupThresh rule) repair a
//! tail loss without an RTO.
//!
//! This module keeps the per-segment state RACK needs (RFC 8985 §5.2:
//! transmission time, lost, retransmitted) for the outstanding window, in
//! a ring indexed by `seq - una` as the SACK scoreboard does, and the
//! counters of Linux's `tcp_packets_in_flight()` that replace RFC 6675's
//! SetPipe() once segments are marked lost by time rather than by
//! DupThresh: in flight = outstanding − SACKed − lost + retransmitted
//! (a lost segment being retransmitted counts once). The SACK flags
//! themselves stay in [`super::scoreboard::Scoreboard`]; it reports each
//! newly SACKed segment here.

use std::collections::VecDeque;

use crate::time::{Duration, Instant};

/// Loss detection of a [`super::Variant::Sack`] sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LossDetection {
    /// RFC 6675 §4-5: a segment is lost when DupThresh segments above it
    /// are SACKed (IsLost()); a lost retransmission is found by the
    /// retransmission timer. The default.
    #[default]
    Rfc6675,
    /// RFC 8985 RACK, with TLP (§7) when `tlp` is true: time-based loss
    /// marks in place of IsLost(), recovery entered when a segment is
    /// marked lost, retransmissions of the lowest lost segment first
    /// (NextSeg() rule (1) with RACK's marks), new data next. Linux's
    /// default since 4.18 (`net.ipv4.tcp_recovery = 1`,
    /// `tcp_early_retrans = 3`).
    Rack {
        /// Send Tail Loss Probes (RFC 8985 §7).
        tlp: bool,
    },
}

impl LossDetection {
    /// RACK is on (with or without TLP).
    pub fn is_rack(self) -> bool {
        matches!(self, LossDetection::Rack { .. })
    }
}

/// RFC 8985 §7.2: the worst-case delayed-ACK timer WCDelAckT added to the
/// PTO when a single segment is in flight (Linux adds `TCP_RTO_MIN`, also
/// 200 ms).
pub(crate) const WC_DEL_ACK: Duration = Duration::from_millis(200);

const LOST: u8 = 1;
/// A retransmission of the segment is in flight (Linux's
/// TCPCB_SACKED_RETRANS): counted in `retrans_out`.
const RETRANS: u8 = 2;
/// The segment was ever retransmitted (RFC 8985 §5.2
/// Segment.retransmitted; Linux's TCPCB_EVER_RETRANS).
const EVER_RETRANS: u8 = 4;
const SACKED: u8 = 8;

#[derive(Clone, Copy, Debug)]
struct Seg {
    /// Segment.xmit_ts: the time of its latest transmission.
    xmit_ts: Instant,
    flags: u8,
}

/// RACK's per-connection and per-segment state (RFC 8985 §5.2, §5.3) and
/// TLP's (§7.1).
#[derive(Debug)]
pub(crate) struct Rack {
    tlp: bool,
    una: u64,
    segs: VecDeque<Seg>,
    sacked: u64,
    lost_out: u64,
    retrans_out: u64,
    /// RACK.xmit_ts and RACK.end_seq (as one past the segment): the most
    /// recently sent segment delivered so far. `None` before any.
    rack: Option<(Instant, u64)>,
    /// That segment was a retransmission (then segments above it may have
    /// been sent before it, and the loss walk must look at all of them).
    rack_retx: bool,
    /// RACK.rtt: the RTT of the most recently delivered segment.
    rtt: Duration,
    /// RACK.fack: one past the highest segment delivered.
    fack: u64,
    /// RACK.reordering_seen.
    reordering_seen: bool,
    /// The lowest segment that may be lost and not yet retransmitted.
    rxt_hint: u64,
    /// The RACK reordering timer (RFC 8985 §6.2 step 5, §8).
    pub(crate) reo_deadline: Option<Instant>,
    /// The TLP probe timer (PTO, RFC 8985 §7.2).
    pub(crate) pto_deadline: Option<Instant>,
    /// TLP.end_seq (RFC 8985 §7.1): one past the highest segment sent when
    /// the probe went out, while a probe is unresolved.
    pub(crate) tlp_end: Option<u64>,
    /// TLP.is_retrans: the probe was a retransmission.
    pub(crate) tlp_retrans: bool,
    /// Segments marked lost (each time a segment is marked).
    pub(crate) marked_lost: u64,
    /// Segments marked lost whose retransmission was in flight (lost
    /// retransmissions; Linux's TCPLostRetransmit).
    pub(crate) lost_retransmits: u64,
    /// Loss probes sent.
    pub(crate) probes: u64,
    /// Per-segment steps of the loss walks (a measure of per-ACK work).
    pub(crate) steps: u64,
}

impl Rack {
    pub(crate) fn new(tlp: bool) -> Self {
        Rack {
            tlp,
            una: 0,
            segs: VecDeque::new(),
            sacked: 0,
            lost_out: 0,
            retrans_out: 0,
            rack: None,
            rack_retx: false,
            rtt: Duration::ZERO,
            fack: 0,
            reordering_seen: false,
            rxt_hint: 0,
            reo_deadline: None,
            pto_deadline: None,
            tlp_end: None,
            tlp_retrans: false,
            marked_lost: 0,
            lost_retransmits: 0,
            probes: 0,
            steps: 0,
        }
    }

    /// TLP is on.
    pub(crate) fn tlp(&self) -> bool {
        self.tlp
    }

    fn end(&self) -> u64 {
        self.una + self.segs.len() as u64
    }

    fn seg(&mut self, seq: u64) -> Option<&mut Seg> {
        if seq < self.una {
            return None;
        }
        self.segs.get_mut((seq - self.una) as usize)
    }

    /// Segments marked lost and not SACKed or acknowledged since.
    pub(crate) fn lost_out(&self) -> u64 {
        self.lost_out
    }

    /// Segments in flight (Linux `tcp_packets_in_flight()`): outstanding,
    /// less SACKed, less marked lost, plus retransmissions in flight.
    pub(crate) fn pipe(&self) -> u64 {
        (self.segs.len() as u64 + self.retrans_out).saturating_sub(self.sacked + self.lost_out)
    }

    /// RFC 8985 §6.1: segment `seq` was (re)transmitted at `now`.
    pub(crate) fn on_send(&mut self, seq: u64, now: Instant) {
        if seq == self.end() {
            self.segs.push_back(Seg {
                xmit_ts: now,
                flags: 0,
            });
            return;
        }
        let Some(s) = self.seg(seq) else {
            return;
        };
        s.xmit_ts = now;
        let counted = s.flags & RETRANS == 0;
        s.flags |= RETRANS | EVER_RETRANS;
        if counted {
            self.retrans_out += 1;
        }
        if seq == self.rxt_hint {
            self.rxt_hint += 1;
        }
    }

    /// RFC 8985 §6.2 steps 2 and 3 for segment `seq`, newly delivered
    /// (cumulatively ACKed or SACKed) at `now`.
    fn delivered(&mut self, seq: u64, now: Instant, min_rtt: Option<Duration>) {
        let Some(s) = self.seg(seq).copied() else {
            return;
        };
        let retx = s.flags & EVER_RETRANS != 0;
        // Step 3, RACK_detect_reordering(): an original transmission
        // delivered below the highest one delivered was reordered.
        if seq + 1 > self.fack {
            self.fack = seq + 1;
        } else if !retx {
            self.reordering_seen = true;
        }
        // Step 2, RACK_update(). For a retransmitted segment the sample is
        // ambiguous; RFC 8985 drops it when it is below min_RTT (the ACK
        // must then be for an earlier transmission). Its second test, on
        // the echoed timestamp, is not applied: this receiver echoes the
        // timestamp of the last in-order segment (RFC 7323 §4.3), never a
        // SACKed one's, so it would discard every SACKed retransmission
        // (Linux's tcp_rack_advance() applies the min_RTT test only).
        let rtt = now.saturating_since(s.xmit_ts);
        if retx && min_rtt.is_some_and(|m| rtt < m) {
            return;
        }
        self.rtt = rtt;
        if self
            .rack
            .is_none_or(|(ts, end)| sent_after(s.xmit_ts, seq + 1, ts, end))
        {
            self.rack = Some((s.xmit_ts, seq + 1));
            self.rack_retx = retx;
        }
    }

    fn clear_marks(&mut self, i: usize) {
        let f = self.segs[i].flags;
        if f & LOST != 0 {
            self.lost_out -= 1;
        }
        if f & RETRANS != 0 {
            self.retrans_out -= 1;
        }
        self.segs[i].flags &= !(LOST | RETRANS);
    }

    /// The cumulative ACK moved to `new_una` at `now`.
    pub(crate) fn advance(&mut self, new_una: u64, now: Instant, min_rtt: Option<Duration>) {
        let new_una = new_una.min(self.end());
        for seq in self.una..new_una {
            if self.segs[(seq - self.una) as usize].flags & SACKED == 0 {
                self.delivered(seq, now, min_rtt);
            }
        }
        while self.una < new_una {
            self.clear_marks(0);
            if self.segs[0].flags & SACKED != 0 {
                self.sacked -= 1;
            }
            self.segs.pop_front();
            self.una += 1;
        }
        self.rxt_hint = self.rxt_hint.max(self.una);
    }

    /// Segment `seq` was newly SACKed at `now`.
    pub(crate) fn on_sacked(&mut self, seq: u64, now: Instant, min_rtt: Option<Duration>) {
        if seq < self.una || seq >= self.end() {
            return;
        }
        let i = (seq - self.una) as usize;
        if self.segs[i].flags & SACKED != 0 {
            return;
        }
        self.delivered(seq, now, min_rtt);
        self.clear_marks(i);
        self.segs[i].flags |= SACKED;
        self.sacked += 1;
    }

    /// RFC 8985 §6.2 step 4, RACK_update_reo_wnd(). Without D-SACK (the
    /// receiver sends none) RACK.reo_wnd_mult stays 1.
    fn reo_wnd(
        &self,
        recovering: bool,
        dupthresh: u64,
        min_rtt: Option<Duration>,
        srtt: Option<Duration>,
    ) -> Duration {
        if !self.reordering_seen && (recovering || self.sacked >= dupthresh) {
            return Duration::ZERO;
        }
        let w = Duration(min_rtt.map_or(0, |m| m.0 / 4));
        srtt.map_or(w, |s| w.min(s))
    }

    /// RFC 8985 §6.2 step 5, RACK_detect_loss() and the reordering timer:
    /// mark lost every segment sent before RACK's whose RACK.rtt +
    /// RACK.reo_wnd has passed; arm the timer for the latest of the others
    /// (`timeout = max(remaining, timeout)`). Returns the segments newly
    /// marked lost. `recovering`: in fast or RTO recovery.
    pub(crate) fn detect_loss(
        &mut self,
        now: Instant,
        recovering: bool,
        dupthresh: u64,
        min_rtt: Option<Duration>,
        srtt: Option<Duration>,
    ) -> u64 {
        self.reo_deadline = None;
        let Some((rts, rend)) = self.rack else {
            return 0;
        };
        let reo = self.reo_wnd(recovering, dupthresh, min_rtt, srtt);
        let mut newly = 0;
        let mut timeout = 0u64;
        // Original transmissions leave in sequence order, so when RACK's
        // segment is one, none at or above it was sent before it.
        let stop = if self.rack_retx { self.end() } else { rend };
        for seq in self.una..stop.min(self.end()) {
            self.steps += 1;
            let i = (seq - self.una) as usize;
            let s = self.segs[i];
            // SACKed, or already lost and not retransmitted since
            // (RFC 8985 sets its xmit_ts to INFINITE_TS).
            if s.flags & SACKED != 0 || (s.flags & (LOST | RETRANS)) == LOST {
                continue;
            }
            if !sent_after(rts, rend, s.xmit_ts, seq + 1) {
                continue;
            }
            let due = s.xmit_ts + self.rtt + reo;
            if due <= now {
                self.mark_lost(i);
                newly += 1;
            } else {
                timeout = timeout.max(due.0 - now.0);
            }
        }
        if timeout > 0 {
            self.reo_deadline = Some(now + Duration(timeout));
        }
        newly
    }

    fn mark_lost(&mut self, i: usize) {
        let f = self.segs[i].flags;
        if f & RETRANS != 0 {
            // The retransmission itself is lost: it leaves the pipe, and
            // the segment is to be sent again.
            self.retrans_out -= 1;
            self.lost_retransmits += 1;
        }
        if f & LOST == 0 {
            self.lost_out += 1;
        }
        self.segs[i].flags = (f & !RETRANS) | LOST;
        self.marked_lost += 1;
        let seq = self.una + i as u64;
        self.rxt_hint = self.rxt_hint.min(seq);
    }

    /// RFC 8985 §6.3, RACK_mark_losses_on_RTO(): on a retransmission
    /// timeout, the first unacknowledged segment and every one whose
    /// RACK.rtt + RACK.reo_wnd has passed since it was sent are lost.
    pub(crate) fn mark_losses_on_rto(
        &mut self,
        now: Instant,
        min_rtt: Option<Duration>,
        srtt: Option<Duration>,
    ) {
        // In RTO recovery the window is 0 unless reordering was seen.
        let reo = self.reo_wnd(true, 0, min_rtt, srtt);
        for i in 0..self.segs.len() {
            let s = self.segs[i];
            if s.flags & SACKED != 0 || (s.flags & (LOST | RETRANS)) == LOST {
                continue;
            }
            if i == 0 || s.xmit_ts + self.rtt + reo <= now {
                self.mark_lost(i);
            }
        }
        self.reo_deadline = None;
        self.pto_deadline = None;
        self.tlp_end = None;
    }

    /// The lowest segment marked lost and not retransmitted since
    /// (NextSeg() rule (1) with RACK's loss marks).
    pub(crate) fn next_lost(&mut self) -> Option<u64> {
        if self.lost_out == 0 {
            return None;
        }
        let mut seq = self.rxt_hint.max(self.una);
        while seq < self.end() {
            let f = self.segs[(seq - self.una) as usize].flags;
            if f & (LOST | RETRANS | SACKED) == LOST {
                self.rxt_hint = seq;
                return Some(seq);
            }
            self.steps += 1;
            seq += 1;
        }
        self.rxt_hint = seq;
        None
    }

    /// RFC 8985 §7.2, TLP_calc_PTO(): 2·SRTT, plus WCDelAckT when one
    /// segment is in flight; 1 s without an RTT sample; never after the
    /// RTO would fire.
    pub(crate) fn pto(
        now: Instant,
        srtt: Option<Duration>,
        flight: u64,
        rto_deadline: Option<Instant>,
    ) -> Instant {
        let pto = match srtt {
            Some(s) => {
                let p = s.saturating_mul(2);
                if flight == 1 {
                    p + WC_DEL_ACK
                } else {
                    p
                }
            }
            None => Duration::from_secs(1),
        };
        let at = now + pto;
        rto_deadline.map_or(at, |r| at.min(r))
    }
}

/// RFC 8985 §6.2, RACK_sent_after(t1, seq1, t2, seq2): sent later, or at
/// the same time with a higher sequence number.
fn sent_after(t1: Instant, seq1: u64, t2: Instant, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}
