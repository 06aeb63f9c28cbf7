//! Loss detection, loss events and the loss-interval history (RFC 5348 §5).
//!
//! [`LossDetector`] turns packet arrivals (sequence number, arrival time)
//! into loss events: a packet is lost once NDUPACK packets with higher
//! sequence numbers have arrived (§5.1); losses whose interpolated arrival
//! time falls within one RTT of the start of a loss event belong to it
//! (§5.2). [`LossIntervals`] keeps the last n = 8 closed loss intervals and
//! computes the average loss interval (§5.4) with optional history
//! discounting (§5.5).
//!
//! Memory is bounded whatever the input: 8 closed intervals plus the open
//! one; a 4096-bit duplicate-detection window; and a packet history that
//! reaches back only to the oldest hole not yet declared lost (at most
//! NDUPACK + 1 entries after each arrival). Work per packet is O(1)
//! amortised, plus O(1) per loss event.

use std::collections::VecDeque;

use crate::time::{Duration, Instant};

/// Number of loss intervals averaged, n (RFC 5348 §5.4 recommends 8).
pub const N_INTERVALS: usize = 8;

/// Weights w_0..w_7 for n = 8 (RFC 5348 §5.4: w_i = 1 for i < n/2, else
/// 2*(n-i)/(n+2)).
pub const WEIGHTS: [f64; N_INTERVALS] = [1.0, 1.0, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2];

/// Lower bound on the history discount factor DF (RFC 5348 §5.5: "We
/// recommend a THRESHOLD of 0.25"; RFC 3448 had 0.5, §9.2 notes the
/// change).
pub const DISCOUNT_THRESHOLD: f64 = 0.25;

/// Sequence numbers the duplicate-detection window covers behind the
/// highest one received.
pub const DEDUP_WINDOW: u64 = 4096;

/// A data packet whose sequence number is more than this far (2^24) ahead
/// of the highest one received is treated as malformed and ignored: no
/// real sender loses 16 million packets in a row, and ignoring it keeps a
/// corrupt header from declaring them all lost.
pub const MAX_SEQ_JUMP: u64 = 1 << 24;

/// A safety cap on the loss events one hole can open (a gap spanning more
/// than 1024 RTTs of interpolated time); beyond it the rest of the hole is
/// folded into one last event. Only the last 8 intervals matter anyway.
const MAX_EVENTS_PER_GAP: u64 = 1024;

/// The loss-interval history: the last n = 8 closed loss intervals
/// I_1..I_8 (most recent first) with their discount factors (RFC 5348
/// §5.4, §5.5). The open interval I_0 is passed in by the caller.
///
/// Intervals are `f64` because the first one may be synthesised from the
/// equation (§6.3.1) and need not be a whole number of packets.
#[derive(Clone, Debug)]
pub struct LossIntervals {
    closed: [f64; N_INTERVALS],
    df: [f64; N_INTERVALS],
    len: usize,
    discounting: bool,
    /// [`LossIntervals::closed_mean`] of the intervals above, computed in
    /// `push` (the only change to them): every data packet asks for it,
    /// twice with discounting, and the history changes once per loss
    /// event. The same operations in the same order, so the same bits.
    closed_mean: Option<f64>,
    /// For an open interval that is not discounted (DF = 1, §5.5: every
    /// I_0 without discounting, and with it while I_0 <= 2*I_mean), the
    /// terms of I_tot0 after w_0*I_0, I_i * w_i * DF_i for i = 1..k-1,
    /// and W_tot0: computed in `push` by `mean`'s operations in `mean`'s
    /// order (a factor DF of 1 changes no bit), so `mean` adds k-1
    /// numbers per data packet instead of recomputing the products.
    terms: [f64; N_INTERVALS],
    w_tot0: f64,
}

impl LossIntervals {
    /// An empty history; `discounting` enables RFC 5348 §5.5.
    pub fn new(discounting: bool) -> Self {
        LossIntervals {
            closed: [0.0; N_INTERVALS],
            df: [1.0; N_INTERVALS],
            len: 0,
            discounting,
            closed_mean: None,
            terms: [0.0; N_INTERVALS],
            w_tot0: WEIGHTS[0],
        }
    }

    /// No loss event yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The closed intervals I_1..I_k, most recent first (k <= 8).
    pub fn closed(&self) -> &[f64] {
        &self.closed[..self.len]
    }

    /// A new loss event began: the open interval, of `interval` packets,
    /// becomes I_1 and I_8 is forgotten (RFC 5348 §5.4). With discounting,
    /// the discount factor in force (computed with I_0 = `interval`) is
    /// folded into the older intervals' factors and the new I_1 starts
    /// undiscounted (§5.5: DF_i = DF * DF_i, then shift, DF_1 = 1 — with
    /// the RFC 3448 erratum 1459 initialisation from i = 0).
    #[allow(clippy::needless_range_loop)] // indices follow the RFC's I_i, w_i
    pub fn push(&mut self, interval: f64) {
        let interval = if interval.is_finite() && interval > 0.0 {
            interval
        } else {
            1.0
        };
        if self.discounting {
            let df = self.discount_factor(interval);
            for d in &mut self.df[..self.len] {
                *d *= df;
            }
        }
        let keep = self.len.min(N_INTERVALS - 1);
        self.closed.copy_within(0..keep, 1);
        self.df.copy_within(0..keep, 1);
        self.closed[0] = interval;
        self.df[0] = 1.0;
        self.len = (self.len + 1).min(N_INTERVALS);
        self.closed_mean = self.compute_closed_mean();
        let mut w_tot0 = WEIGHTS[0];
        for i in 1..self.len {
            let w = WEIGHTS[i] * self.df[i - 1];
            self.terms[i - 1] = self.closed[i - 1] * w;
            w_tot0 += w;
        }
        self.w_tot0 = w_tot0;
    }

    /// The weighted mean of the closed intervals alone,
    /// sum(I_i * w_(i-1) * DF_i) / sum(w_(i-1) * DF_i), i = 1..k.
    #[inline]
    fn closed_mean(&self) -> Option<f64> {
        self.closed_mean
    }

    fn compute_closed_mean(&self) -> Option<f64> {
        if self.len == 0 {
            return None;
        }
        let (mut i_tot1, mut w_tot1) = (0.0, 0.0);
        for i in 1..=self.len {
            let w = WEIGHTS[i - 1] * self.df[i - 1];
            i_tot1 += self.closed[i - 1] * w;
            w_tot1 += w;
        }
        Some(i_tot1 / w_tot1)
    }

    /// The current discount factor DF for an open interval of `i0` packets
    /// (RFC 5348 §5.5): 1 unless discounting is on and I_0 > 2*I_mean, then
    /// max(THRESHOLD, 2*I_mean/I_0) with THRESHOLD = 0.25. I_mean here is the mean of the closed
    /// intervals (our reading: the open interval is what is being compared
    /// against the history).
    pub fn discount_factor(&self, i0: f64) -> f64 {
        if !self.discounting {
            return 1.0;
        }
        match self.closed_mean() {
            Some(m) if i0 > 2.0 * m => (2.0 * m / i0).max(DISCOUNT_THRESHOLD),
            _ => 1.0,
        }
    }

    /// The average loss interval I_mean for an open interval of `i0`
    /// packets, or `None` before the first loss event (RFC 5348 §5.4):
    ///
    /// ```text
    /// I_tot0 = sum_{i=0}^{k-1} I_i * w_i        I_tot1 = sum_{i=1}^{k} I_i * w_(i-1)
    /// I_mean = max(I_tot0, I_tot1) / W_tot,     W_tot  = sum_{i=0}^{k-1} w_i
    /// ```
    ///
    /// with k the number of closed intervals (at most n = 8), so the open
    /// interval counts only when it raises the mean. With discounting
    /// (§5.5) each closed I_i carries w_i*DF_i (and also the current DF in
    /// the I_tot0 sum), and the two sums are normalised by their own
    /// weight totals.
    #[allow(clippy::needless_range_loop)] // indices follow the RFC's I_i, w_i
    pub fn mean(&self, i0: f64) -> Option<f64> {
        if self.len == 0 {
            return None;
        }
        let i0 = if i0.is_finite() { i0.max(0.0) } else { 0.0 };
        let df = self.discount_factor(i0);
        // RFC 5348 §5.4 (and §5.5 weights).
        let (mut i_tot0, mut w_tot0) = (i0 * WEIGHTS[0], WEIGHTS[0]);
        if df == 1.0 {
            // The products and W_tot0 of the loop below, kept by `push`.
            for t in &self.terms[..self.len - 1] {
                i_tot0 += t;
            }
            w_tot0 = self.w_tot0;
        } else {
            for i in 1..self.len {
                let w = WEIGHTS[i] * self.df[i - 1] * df;
                i_tot0 += self.closed[i - 1] * w;
                w_tot0 += w;
            }
        }
        // I_tot1 / W_tot1 is the closed intervals' mean.
        let closed = self.closed_mean?;
        Some((i_tot0 / w_tot0).max(closed))
    }

    /// The loss event rate p = 1/I_mean (RFC 5348 §5.4); 0 before the first
    /// loss event.
    pub fn p(&self, i0: f64) -> f64 {
        match self.mean(i0) {
            Some(m) if m > 0.0 => (1.0 / m).min(1.0),
            Some(_) => 1.0,
            None => 0.0,
        }
    }
}

/// What [`LossDetector::on_packet`] made of an arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketClass {
    /// A packet not seen before (it counts as received).
    New,
    /// A copy of a packet already received.
    Duplicate,
    /// Too far behind the highest sequence number to tell (more than
    /// [`DEDUP_WINDOW`]); ignored.
    Stale,
    /// Implausibly far ahead (more than [`MAX_SEQ_JUMP`]); ignored.
    TooFar,
}

/// Loss detection and loss-event accounting (RFC 5348 §5.1–§5.3) feeding a
/// [`LossIntervals`] history.
#[derive(Clone, Debug)]
pub struct LossDetector {
    ndupack: usize,
    /// Received packets (seq, arrival), ascending seq, from the last one
    /// below the oldest undeclared hole ("anchor") to the highest.
    pending: VecDeque<(u64, Instant)>,
    seen: [u64; (DEDUP_WINDOW / 64) as usize],
    max_seq: Option<u64>,
    first_seq: u64,
    /// First lost packet of the most recent loss event and its
    /// interpolated arrival time.
    event_start: Option<(u64, Instant)>,
    intervals: LossIntervals,
    packets_lost: u64,
    loss_events: u64,
}

impl LossDetector {
    /// A detector declaring a packet lost after `ndupack` later arrivals
    /// (clamped to 1..=1024), with RFC 5348 §5.5 discounting if asked.
    pub fn new(ndupack: u32, discounting: bool) -> Self {
        LossDetector {
            ndupack: ndupack.clamp(1, 1024) as usize,
            pending: VecDeque::new(),
            seen: [0; (DEDUP_WINDOW / 64) as usize],
            max_seq: None,
            first_seq: 0,
            event_start: None,
            intervals: LossIntervals::new(discounting),
            packets_lost: 0,
            loss_events: 0,
        }
    }

    fn bit(seq: u64) -> (usize, u64) {
        let slot = seq % DEDUP_WINDOW;
        ((slot / 64) as usize, 1u64 << (slot % 64))
    }
    fn is_seen(&self, seq: u64) -> bool {
        let (w, m) = Self::bit(seq);
        self.seen[w] & m != 0
    }
    fn set_seen(&mut self, seq: u64) {
        let (w, m) = Self::bit(seq);
        self.seen[w] |= m;
    }
    fn clear_seen(&mut self, seq: u64) {
        let (w, m) = Self::bit(seq);
        self.seen[w] &= !m;
    }

    /// A data packet `seq` arrived at `arrival`; `rtt` is the RTT used to
    /// group losses into loss events (RFC 5348 §5.2: the sender's estimate
    /// carried in the data packets). `first_interval` is called once, when
    /// the first loss event is detected, with the number of packets from
    /// the first one received up to the first lost one; it returns the
    /// first loss interval to record (RFC 5348 §6.3.1 synthesises it from
    /// X_recv; returning the argument keeps the measured one).
    pub fn on_packet(
        &mut self,
        seq: u64,
        arrival: Instant,
        rtt: Duration,
        first_interval: &mut dyn FnMut(u64) -> f64,
    ) -> PacketClass {
        let Some(max) = self.max_seq else {
            self.max_seq = Some(seq);
            self.first_seq = seq;
            self.set_seen(seq);
            self.pending.push_back((seq, arrival));
            return PacketClass::New;
        };
        if seq > max {
            let jump = seq - max;
            if jump > MAX_SEQ_JUMP {
                return PacketClass::TooFar;
            }
            if jump >= DEDUP_WINDOW {
                self.seen = [0; (DEDUP_WINDOW / 64) as usize];
            } else {
                for x in max + 1..=seq {
                    self.clear_seen(x);
                }
            }
            self.set_seen(seq);
            self.max_seq = Some(seq);
            if jump == 1 && self.pending.len() == 1 {
                // The next packet in order with no hole open (most
                // arrivals): `resolve` would find no hole and keep only
                // this packet as the anchor.
                self.pending[0] = (seq, arrival);
                return PacketClass::New;
            }
            self.pending.push_back((seq, arrival));
        } else {
            if max - seq >= DEDUP_WINDOW {
                return PacketClass::Stale;
            }
            if self.is_seen(seq) {
                return PacketClass::Duplicate;
            }
            self.set_seen(seq);
            // A reordered packet: if it fills a hole not yet declared lost
            // it enters the history (RFC 5348 §5.1: the hole was not a
            // loss); if the hole was already declared lost, it is simply a
            // late arrival (counted as received, history unchanged).
            let anchor = self.pending.front().map_or(u64::MAX, |e| e.0);
            if seq > anchor {
                let pos = self.pending.partition_point(|e| e.0 < seq);
                self.pending.insert(pos, (seq, arrival));
            }
        }
        self.resolve(rtt, first_interval);
        PacketClass::New
    }

    /// Declare lost every hole with at least NDUPACK later arrivals
    /// (RFC 5348 §5.1), oldest first, and trim the history.
    fn resolve(&mut self, rtt: Duration, first_interval: &mut dyn FnMut(u64) -> f64) {
        loop {
            let mut i = 0;
            while i + 1 < self.pending.len() && self.pending[i + 1].0 == self.pending[i].0 + 1 {
                i += 1;
            }
            if i + 1 >= self.pending.len() {
                // No hole: only the highest packet is needed as an anchor.
                let n = self.pending.len().saturating_sub(1);
                self.pending.drain(..n);
                return;
            }
            self.pending.drain(..i);
            // pending[0] is the packet just below the oldest hole.
            if self.pending.len() - 1 < self.ndupack {
                return;
            }
            let (sb, tb) = self.pending[0];
            let (sa, ta) = self.pending[1];
            self.gap_lost(sb, tb, sa, ta, rtt, first_interval);
            self.pending.pop_front();
        }
    }

    /// Packets sb+1..sa-1 are lost; their arrival times are interpolated
    /// between the packets around the hole (RFC 5348 §5.2:
    /// T_loss = T_before + (T_after - T_before)*(S_loss - S_before)/(S_after - S_before)),
    /// and each either joins the current loss event ("If T_old + R >=
    /// T_new, then S_new is part of the existing loss event")
    /// or starts a new one, which closes the previous interval (§5.3:
    /// I = S_new_start - S_old_start).
    fn gap_lost(
        &mut self,
        sb: u64,
        tb: Instant,
        sa: u64,
        ta: Instant,
        rtt: Duration,
        first_interval: &mut dyn FnMut(u64) -> f64,
    ) {
        let last = sa - 1;
        let mut x = sb + 1;
        self.packets_lost += sa - sb - 1;
        let l = (sa - sb) as i128;
        let d = ta.as_nanos() as i128 - tb.as_nanos() as i128;
        let t_of = |y: u64| -> Instant {
            let off = ((y - sb) as i128 * d).div_euclid(l);
            Instant((tb.as_nanos() as i128 + off).clamp(0, u64::MAX as i128) as u64)
        };
        // Smallest y in [x, last] with T(y) >= thr, by monotonicity. A new
        // event needs T(y) > T_old + R, i.e. T(y) >= T_old + R + 1 ns.
        let first_at_or_after = |thr: Instant, x: u64| -> Option<u64> {
            if t_of(x) >= thr {
                return Some(x);
            }
            if d <= 0 {
                return None;
            }
            // (y - sb)*d >= (thr - tb)*l  <=>  floor((y-sb)*d/l) >= thr - tb.
            let need = (thr.as_nanos() as i128 - tb.as_nanos() as i128) * l;
            let k = (need + d - 1).div_euclid(d);
            let y = sb as i128 + k;
            (y <= last as i128).then_some(y as u64)
        };
        let mut created = 0;
        while x <= last {
            match self.event_start {
                None => {
                    // The first loss event of the connection (§6.3.1): the
                    // interval before it is synthesised by the caller.
                    let i1 = first_interval(x - self.first_seq);
                    self.intervals.push(i1);
                    self.event_start = Some((x, t_of(x)));
                    self.loss_events += 1;
                }
                Some((s0, t0)) => {
                    created += 1;
                    let y = if created > MAX_EVENTS_PER_GAP {
                        match first_at_or_after(t0 + rtt + Duration::from_nanos(1), last) {
                            Some(y) => y,
                            None => break,
                        }
                    } else {
                        match first_at_or_after(t0 + rtt + Duration::from_nanos(1), x) {
                            Some(y) => y,
                            None => break,
                        }
                    };
                    // §5.3: the closed interval runs from the start of one
                    // loss event to the start of the next.
                    self.intervals.push((y - s0) as f64);
                    self.event_start = Some((y, t_of(y)));
                    self.loss_events += 1;
                    x = y;
                }
            }
            x += 1;
        }
    }

    /// The open interval I_0 = S_max - S_start + 1 (RFC 5348 §5.3: packets
    /// from the start of the latest loss event to the highest received),
    /// or `None` before the first loss event.
    pub fn i0(&self) -> Option<f64> {
        match (self.event_start, self.max_seq) {
            (Some((s, _)), Some(m)) => Some((m.saturating_sub(s) + 1) as f64),
            _ => None,
        }
    }

    /// The loss event rate p (RFC 5348 §5.4); 0 before any loss event.
    pub fn p(&self) -> f64 {
        match self.i0() {
            Some(i0) => self.intervals.p(i0),
            None => 0.0,
        }
    }

    /// The loss-interval history.
    pub fn intervals(&self) -> &LossIntervals {
        &self.intervals
    }

    /// Packets declared lost so far.
    pub fn packets_lost(&self) -> u64 {
        self.packets_lost
    }

    /// Loss events so far.
    pub fn loss_events(&self) -> u64 {
        self.loss_events
    }

    /// The highest sequence number received.
    pub fn max_seq(&self) -> Option<u64> {
        self.max_seq
    }

    /// Entries in the packet-arrival history (bounded by NDUPACK + 1 after
    /// every arrival; for tests and monitoring).
    pub fn history_len(&self) -> usize {
        self.pending.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn weights_follow_the_rfc_formula() {
        let n = N_INTERVALS as f64;
        for (i, &w) in WEIGHTS.iter().enumerate() {
            let want = if (i as f64) < n / 2.0 {
                1.0
            } else {
                2.0 * (n - i as f64) / (n + 2.0)
            };
            assert!(close(w, want));
        }
    }

    #[test]
    fn mean_open_interval_counts_only_if_it_raises_the_mean() {
        let mut h = LossIntervals::new(false);
        assert_eq!(h.mean(5.0), None);
        assert_eq!(h.p(5.0), 0.0);
        // Closed (most recent first): 100, 100, 100, 100, 100, 100, 100, 100.
        for _ in 0..8 {
            h.push(100.0);
        }
        // I_0 = 10: I_tot0 = 10 + 100*(1+1+1+0.8+0.6+0.4+0.2) = 10 + 500 = 510,
        // I_tot1 = 100*6 = 600, W_tot = 6 -> I_mean = 600/6 = 100 (I_0 ignored).
        assert!(close(h.mean(10.0).unwrap(), 100.0));
        // I_0 = 400: I_tot0 = 400 + 500 = 900 > 600 -> I_mean = 150.
        assert!(close(h.mean(400.0).unwrap(), 150.0));
        assert!(close(h.p(400.0), 1.0 / 150.0));
        // A ninth push forgets the oldest: history stays at 8 entries.
        h.push(50.0);
        assert_eq!(h.closed().len(), 8);
        assert_eq!(h.closed()[0], 50.0);
        // Closed: 50, 100 x7. I_tot1 = 50*w_0 + 100*(w_1..w_7) = 50 + 500 = 550;
        // I_0 = 0: I_tot0 = 0*w_0 + 50*w_1 + 100*(w_2..w_7) = 50 + 400 = 450
        //   -> I_mean = 550/6.
        assert!(close(h.mean(0.0).unwrap(), 550.0 / 6.0));
    }

    /// `mean` with the products kept by `push` gives the bits of the
    /// RFC 5348 §5.4/§5.5 loop written out (the code before the cache),
    /// with and without discounting, for every history length and open
    /// intervals on both sides of 2*I_mean (DF = 1 and DF < 1).
    #[test]
    #[allow(clippy::needless_range_loop)] // indices follow the RFC's I_i, w_i
    fn mean_is_bit_identical_to_the_written_out_sums() {
        fn reference(h: &LossIntervals, i0: f64) -> Option<f64> {
            if h.len == 0 {
                return None;
            }
            let i0 = if i0.is_finite() { i0.max(0.0) } else { 0.0 };
            let df = h.discount_factor(i0);
            let (mut i_tot0, mut w_tot0) = (i0 * WEIGHTS[0], WEIGHTS[0]);
            for i in 1..h.len {
                let w = WEIGHTS[i] * h.df[i - 1] * df;
                i_tot0 += h.closed[i - 1] * w;
                w_tot0 += w;
            }
            let (mut i_tot1, mut w_tot1) = (0.0, 0.0);
            for i in 1..=h.len {
                let w = WEIGHTS[i - 1] * h.df[i - 1];
                i_tot1 += h.closed[i - 1] * w;
                w_tot1 += w;
            }
            Some((i_tot0 / w_tot0).max(i_tot1 / w_tot1))
        }
        let mut rng = crate::rng::Rng::new(11);
        for discounting in [false, true] {
            let mut h = LossIntervals::new(discounting);
            let (mut discounted, mut plain) = (0, 0);
            for _ in 0..400 {
                for _ in 0..50 {
                    let i0 = rng.next_f64() * 400.0;
                    if h.discount_factor(i0) == 1.0 {
                        plain += 1;
                    } else {
                        discounted += 1;
                    }
                    let (got, want) = (h.mean(i0), reference(&h, i0));
                    assert_eq!(
                        got.map(f64::to_bits),
                        want.map(f64::to_bits),
                        "{got:?} {want:?}"
                    );
                }
                h.push(1.0 + rng.next_f64() * 100.0);
            }
            assert!(plain > 1000, "{plain}");
            assert_eq!(discounted > 1000, discounting, "{discounted}");
        }
    }

    #[test]
    fn mean_with_few_intervals_uses_k() {
        let mut h = LossIntervals::new(false);
        h.push(40.0);
        h.push(20.0); // closed: 20, 40
                      // k = 2: W_tot = 2. I_0 = 10: I_tot0 = 10 + 20 = 30, I_tot1 = 20 + 40 = 60 -> 30.
        assert!(close(h.mean(10.0).unwrap(), 30.0));
        // I_0 = 70: I_tot0 = 70 + 20 = 90 -> 45.
        assert!(close(h.mean(70.0).unwrap(), 45.0));
    }

    #[test]
    fn history_discounting() {
        let mut plain = LossIntervals::new(false);
        let mut disc = LossIntervals::new(true);
        for _ in 0..8 {
            plain.push(100.0);
            disc.push(100.0);
        }
        // I_0 = 150 is not > 2*I_mean = 200: no discounting, same mean.
        assert_eq!(disc.discount_factor(150.0), 1.0);
        assert!(close(disc.mean(150.0).unwrap(), plain.mean(150.0).unwrap()));
        // RFC 5348 §5.5: "We recommend a THRESHOLD of 0.25" (RFC 3448's
        // was 0.5). I_0 = 1000 > 200: DF = max(0.25, 200/1000) = 0.25.
        assert_eq!(disc.discount_factor(1000.0), 0.25);
        // I_0 = 500: DF = 200/500 = 0.4, above the threshold.
        assert!(close(disc.discount_factor(500.0), 0.4));
        // Plain: I_tot0 = 1000 + 500 = 1500 -> 250.
        assert!(close(plain.mean(1000.0).unwrap(), 250.0));
        // Discounted: I_tot0 = 1000 + 0.25*500 = 1125, W_tot0 = 1 + 0.25*5
        //   = 2.25 -> 500; I_tot1/W_tot1 = 100 -> I_mean = 500.
        assert!(close(disc.mean(1000.0).unwrap(), 1125.0 / 2.25));
        // I_0 = 300: DF = 200/300 = 2/3; I_tot0 = 300 + (2/3)*500, W_tot0 = 1 + (2/3)*5.
        let df: f64 = 2.0 / 3.0;
        assert!(close(
            disc.mean(300.0).unwrap(),
            (300.0 + df * 500.0) / (1.0 + df * 5.0)
        ));
        // Closing that long interval folds DF = 0.25 into the old intervals:
        // closed = 1000 (DF 1), 100 x7 (DF 0.25). I_0 = 0 does not raise it:
        // I_tot1 = 1000*1 + 0.25*100*(1+1+1+0.8+0.6+0.4+0.2) = 1000 + 125,
        // W_tot1 = 1 + 0.25*5 = 2.25.
        disc.push(1000.0);
        assert!(close(disc.mean(0.0).unwrap(), 1125.0 / 2.25));
        plain.push(1000.0);
        assert!(close(plain.mean(0.0).unwrap(), 1500.0 / 6.0));
    }

    fn feed(d: &mut LossDetector, seq: u64, t_ms: u64, rtt_ms: u64) -> PacketClass {
        d.on_packet(
            seq,
            Instant(t_ms * 1_000_000),
            Duration::from_millis(rtt_ms),
            &mut |n| n as f64,
        )
    }

    #[test]
    fn ndupack_late_packet_is_not_a_loss() {
        let mut d = LossDetector::new(3, false);
        // 0,1,3,4 then 2 (only two later arrivals so far), then 5.
        for (s, t) in [(0, 0), (1, 10), (3, 30), (4, 40), (2, 41), (5, 50), (6, 60)] {
            assert_eq!(feed(&mut d, s, t, 100), PacketClass::New);
        }
        assert_eq!(d.packets_lost(), 0);
        assert_eq!(d.loss_events(), 0);
        assert_eq!(d.p(), 0.0);
        assert_eq!(d.history_len(), 1);
    }

    #[test]
    fn ndupack_third_later_arrival_declares_loss() {
        let mut d = LossDetector::new(3, false);
        for (s, t) in [(0, 0), (1, 10), (3, 30), (4, 40)] {
            feed(&mut d, s, t, 100);
        }
        assert_eq!(d.packets_lost(), 0);
        feed(&mut d, 5, 50, 100);
        assert_eq!(d.packets_lost(), 1);
        assert_eq!(d.loss_events(), 1);
        // Too late now: 2 arrives, counts as new but the loss stands.
        assert_eq!(feed(&mut d, 2, 51, 100), PacketClass::New);
        assert_eq!(d.packets_lost(), 1);
        assert_eq!(feed(&mut d, 2, 52, 100), PacketClass::Duplicate);
    }

    /// Packets every 10 ms, RTT 100 ms; `lost` are never delivered.
    fn run_with_losses(lost: &[u64], n: u64) -> LossDetector {
        let mut d = LossDetector::new(3, false);
        for s in 0..n {
            if !lost.contains(&s) {
                feed(&mut d, s, s * 10, 100);
            }
        }
        d
    }

    #[test]
    fn losses_within_one_rtt_are_one_event() {
        // 10 and 15: interpolated 100 ms and 150 ms, 50 ms apart.
        let d = run_with_losses(&[10, 15], 40);
        assert_eq!(d.packets_lost(), 2);
        assert_eq!(d.loss_events(), 1);
        // 10 and 19: 90 ms apart, still one event.
        let d = run_with_losses(&[10, 19], 40);
        assert_eq!(d.loss_events(), 1);
        // A burst 10..=14 in one hole is one event.
        let d = run_with_losses(&[10, 11, 12, 13, 14], 40);
        assert_eq!((d.packets_lost(), d.loss_events()), (5, 1));
    }

    #[test]
    fn losses_one_rtt_apart_are_two_events() {
        // RFC 5348 §5.2: "If T_old + R >= T_new, then S_new is part of the
        // existing loss event." 10 and 20 are exactly 100 ms = one RTT
        // apart: one event; 10 and 21 (110 ms): two.
        let d = run_with_losses(&[10, 20], 40);
        assert_eq!(d.loss_events(), 1);
        let d = run_with_losses(&[10, 21], 40);
        assert_eq!(d.loss_events(), 2);
        // The closed interval is S_21 - S_10 = 11 packets; first interval is
        // the measured 10 (closure returns its argument).
        assert_eq!(d.intervals().closed(), &[11.0, 10.0]);
        // I_0 = 39 - 21 + 1 = 19: I_mean = max(19+11, 11+10)/2 = 15.
        assert!(close(d.p(), 1.0 / 15.0));
        // A single hole spanning 2.5 RTTs (seq 10..=34 lost) opens events at
        // 10, 21 and 32 (interpolated times 100, 210, 320 ms: each the
        // first more than one RTT after the previous start).
        let lost: Vec<u64> = (10..35).collect();
        let d = run_with_losses(&lost, 60);
        assert_eq!((d.packets_lost(), d.loss_events()), (25, 3));
        assert_eq!(d.intervals().closed(), &[11.0, 11.0, 10.0]);
    }

    #[test]
    fn odd_inputs_never_panic_and_memory_stays_bounded() {
        let mut d = LossDetector::new(3, true);
        let mut rng = crate::rng::Rng::new(5);
        let mut seq = 0u64;
        for i in 0..200_000u64 {
            seq += 1 + if rng.chance(0.02) { rng.below(5) } else { 0 };
            let s = if rng.chance(0.01) {
                seq.saturating_sub(rng.below(20))
            } else {
                seq
            };
            // Arrival times jitter and sometimes go backwards.
            let t = i * 1_000_000 + rng.below(3_000_000);
            let rtt = Duration::from_nanos(rng.below(200_000_000));
            d.on_packet(s, Instant(t), rtt, &mut |n| n as f64);
            assert!(d.history_len() <= 4);
        }
        assert!(d.loss_events() > 0);
        let p = d.p();
        assert!(p > 0.0 && p < 1.0);
        // Far-future and ancient packets are ignored.
        let m = d.max_seq().unwrap();
        assert_eq!(
            feed(&mut d, m + MAX_SEQ_JUMP + 1, 0, 100),
            PacketClass::TooFar
        );
        assert_eq!(feed(&mut d, m - DEDUP_WINDOW, 0, 100), PacketClass::Stale);
        assert_eq!(feed(&mut d, u64::MAX, 0, 100), PacketClass::TooFar);
        // A huge but allowed jump with a zero RTT is cheap (capped events).
        let mut d = LossDetector::new(3, false);
        feed(&mut d, 0, 0, 0);
        for k in 0..3 {
            d.on_packet(
                MAX_SEQ_JUMP + k,
                Instant(3_600_000_000_000 + k),
                Duration::ZERO,
                &mut |n| n as f64,
            );
        }
        assert_eq!(d.packets_lost(), MAX_SEQ_JUMP - 1);
        assert!(d.loss_events() <= MAX_EVENTS_PER_GAP + 2);
        assert!(d.p() > 0.0);
    }
}
