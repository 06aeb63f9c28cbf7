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
/// The segment is in the time-ordered list of segments in flight
/// ([`Rack::head`]).
const LISTED: u8 = 16;
/// End of the time-ordered list.
const NIL: u64 = u64::MAX;

#[derive(Clone, Copy, Debug)]
struct Seg {
    /// Segment.xmit_ts: the time of its latest transmission.
    xmit_ts: Instant,
    flags: u8,
    /// Neighbours in the time-ordered list (sequence numbers), `NIL` at
    /// its ends; meaningful while `LISTED` is set.
    prev: u64,
    next: u64,
}

/// RACK's per-connection and per-segment state (RFC 8985 §5.2, §5.3) and
/// TLP's (§7.1).
#[derive(Clone, Debug)]
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
    /// The segments that RACK_detect_loss() can mark, oldest transmission
    /// first: in flight (neither SACKed nor marked lost and left
    /// unretransmitted), ordered by (xmit_ts, seq), the order of
    /// RACK_sent_after(). Linux keeps the same list (`tsorted_sent_queue`:
    /// a segment moves to its tail when retransmitted and leaves it when
    /// SACKed), so that the loss walk stops at the first segment sent
    /// after RACK's (`tcp_rack_detect_loss()`) instead of visiting every
    /// SACKed segment of a large window on every ACK.
    head: u64,
    tail: u64,
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
            head: NIL,
            tail: NIL,
        }
    }

    /// Puts segment `seq` into the time-ordered list at its place by
    /// (xmit_ts, seq): at the tail but for segments sent at the same
    /// instant with a higher sequence number.
    fn link(&mut self, seq: u64) {
        let (ts, una) = (self.segs[(seq - self.una) as usize].xmit_ts, self.una);
        let mut after = self.tail;
        while after != NIL {
            let a = &self.segs[(after - una) as usize];
            if (a.xmit_ts, after) < (ts, seq) {
                break;
            }
            after = a.prev;
        }
        let before = if after == NIL {
            self.head
        } else {
            self.segs[(after - una) as usize].next
        };
        let s = &mut self.segs[(seq - una) as usize];
        s.prev = after;
        s.next = before;
        s.flags |= LISTED;
        match after {
            NIL => self.head = seq,
            a => self.segs[(a - una) as usize].next = seq,
        }
        match before {
            NIL => self.tail = seq,
            b => self.segs[(b - una) as usize].prev = seq,
        }
    }

    /// Takes segment `seq` out of the time-ordered list, if it is there.
    fn unlink(&mut self, seq: u64) {
        let una = self.una;
        let s = &mut self.segs[(seq - una) as usize];
        if s.flags & LISTED == 0 {
            return;
        }
        s.flags &= !LISTED;
        let (prev, next) = (s.prev, s.next);
        match prev {
            NIL => self.head = next,
            p => self.segs[(p - una) as usize].next = next,
        }
        match next {
            NIL => self.tail = prev,
            n => self.segs[(n - una) as usize].prev = prev,
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
                prev: NIL,
                next: NIL,
            });
            self.link(seq);
            return;
        }
        if self.seg(seq).is_none() {
            return;
        }
        self.unlink(seq);
        let s = self.seg(seq).expect("checked above");
        s.xmit_ts = now;
        let counted = s.flags & RETRANS == 0;
        s.flags |= RETRANS | EVER_RETRANS;
        let in_flight = s.flags & SACKED == 0;
        if counted {
            self.retrans_out += 1;
        }
        if in_flight {
            self.link(seq);
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
            self.unlink(self.una);
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
        self.unlink(seq);
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
        // The list holds exactly the segments the RFC's walk does not skip
        // (not SACKed, not lost and left unretransmitted), oldest
        // transmission first: the walk ends at the first one RACK's
        // segment was not sent after, as `tcp_rack_detect_loss()` does.
        // Marks and the timer are a count, a minimum and a maximum over
        // the same segments as a walk in sequence order, so they come out
        // the same.
        let mut cur = self.head;
        while cur != NIL {
            self.steps += 1;
            let i = (cur - self.una) as usize;
            let s = self.segs[i];
            if !sent_after(rts, rend, s.xmit_ts, cur + 1) {
                break;
            }
            let due = s.xmit_ts + self.rtt + reo;
            if due <= now {
                self.mark_lost(i);
                newly += 1;
            } else {
                timeout = timeout.max(due.0 - now.0);
            }
            cur = s.next;
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
        let seq = self.una + i as u64;
        self.unlink(seq);
        self.segs[i].flags = (self.segs[i].flags & !RETRANS) | LOST;
        self.marked_lost += 1;
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

#[cfg(test)]
mod walk_tests {
    use super::*;
    use crate::rng::Rng;

    /// RACK_detect_loss() as RFC 8985 §6.2 step 5 writes it: every
    /// outstanding segment in sequence order. Returns the segments it
    /// marks and the reordering timeout, without changing `r`.
    fn reference(r: &Rack, now: Instant, reo: Duration) -> (Vec<u64>, u64) {
        let Some((rts, rend)) = r.rack else {
            return (Vec::new(), 0);
        };
        let (mut marked, mut timeout) = (Vec::new(), 0u64);
        for (i, s) in r.segs.iter().enumerate() {
            let seq = r.una + i as u64;
            if s.flags & SACKED != 0 || (s.flags & (LOST | RETRANS)) == LOST {
                continue;
            }
            if !sent_after(rts, rend, s.xmit_ts, seq + 1) {
                continue;
            }
            let due = s.xmit_ts + r.rtt + reo;
            if due <= now {
                marked.push(seq);
            } else {
                timeout = timeout.max(due.0 - now.0);
            }
        }
        (marked, timeout)
    }

    /// The list holds exactly the segments in flight, in (xmit_ts, seq)
    /// order, linked both ways.
    fn check_list(r: &Rack) {
        let mut listed = Vec::new();
        let (mut cur, mut prev) = (r.head, NIL);
        while cur != NIL {
            let s = &r.segs[(cur - r.una) as usize];
            assert_eq!(s.prev, prev, "back link of {cur}");
            assert!(s.flags & LISTED != 0);
            listed.push((s.xmit_ts, cur));
            prev = cur;
            cur = s.next;
        }
        assert_eq!(r.tail, prev);
        assert!(listed.windows(2).all(|w| w[0] < w[1]), "not in send order");
        let mut want: Vec<_> = r
            .segs
            .iter()
            .enumerate()
            .filter(|(_, s)| s.flags & SACKED == 0 && (s.flags & (LOST | RETRANS)) != LOST)
            .map(|(i, s)| (s.xmit_ts, r.una + i as u64))
            .collect();
        want.sort();
        assert_eq!(listed, want);
    }

    /// Random sends, retransmissions, SACKs, cumulative ACKs and RTOs:
    /// the walk over the time-ordered list marks the same segments and
    /// arms the same timer as the RFC's walk over the whole window.
    #[test]
    fn list_walk_marks_what_the_full_walk_marks() {
        let min_rtt = Some(Duration::from_millis(40));
        for seed in 1..=40 {
            let mut rng = Rng::new(seed);
            let mut r = Rack::new(true);
            let mut now = Instant::ZERO;
            let mut compared = 0;
            for _ in 0..3000 {
                // Ties in time are common: bursts leave at one instant.
                now += Duration::from_micros(rng.below(3) * 500);
                let n = r.segs.len() as u64;
                match rng.below(10) {
                    0..=3 => r.on_send(r.end(), now),
                    4 if n > 0 => r.on_send(r.una + rng.below(n), now),
                    5 | 6 if n > 0 => r.on_sacked(r.una + rng.below(n), now, min_rtt),
                    7 if n > 0 => r.advance(r.una + rng.below(n.min(4) + 1), now, min_rtt),
                    8 if rng.below(20) == 0 => r.mark_losses_on_rto(now, min_rtt, min_rtt),
                    _ => {
                        let recovering = rng.below(2) == 0;
                        let reo = r.reo_wnd(recovering, 3, min_rtt, min_rtt);
                        let (want, timeout) = reference(&r, now, reo);
                        let before = r.clone();
                        let newly = r.detect_loss(now, recovering, 3, min_rtt, min_rtt);
                        let got: Vec<u64> = (0..before.segs.len())
                            .filter(|&i| {
                                before.segs[i].flags & LOST == 0 && r.segs[i].flags & LOST != 0
                                    || before.segs[i].flags & (LOST | RETRANS) == LOST | RETRANS
                                        && r.segs[i].flags & RETRANS == 0
                            })
                            .map(|i| before.una + i as u64)
                            .collect();
                        assert_eq!(got, want, "seed {seed}");
                        assert_eq!(newly, want.len() as u64);
                        let deadline = (timeout > 0).then(|| now + Duration(timeout));
                        assert_eq!(r.reo_deadline, deadline, "seed {seed}");
                        compared += 1;
                    }
                }
                check_list(&r);
            }
            assert!(compared > 100);
        }
    }

    /// A hole at the left edge of a 10 000-segment window, every segment
    /// above it SACKed one ACK at a time: each loss walk visits the hole
    /// and stops at the first segment sent after RACK's, a few steps per
    /// ACK; a walk in sequence order visits every SACKed segment below
    /// RACK's on every ACK (about 50 million steps here).
    #[test]
    fn loss_walk_per_ack_does_not_grow_with_the_window() {
        let mut r = Rack::new(false);
        let t0 = Instant::ZERO;
        for seq in 0..10_000 {
            r.on_send(seq, t0 + Duration::from_micros(seq));
        }
        let rtt = Some(Duration::from_millis(500));
        let mut worst = 0;
        for seq in 1..10_000 {
            let now = t0 + Duration::from_millis(500) + Duration::from_micros(seq);
            r.on_sacked(seq, now, rtt);
            let before = r.steps;
            r.detect_loss(now, true, 3, rtt, rtt);
            worst = worst.max(r.steps - before);
        }
        // Segment 0 is marked lost on the first walk (reo_wnd is 0 with
        // DupThresh SACKs); from then on the walk meets segment 1's
        // successors only.
        assert!(worst <= 3, "{worst} steps in one walk");
        assert_eq!(r.lost_out(), 1);
    }
}
