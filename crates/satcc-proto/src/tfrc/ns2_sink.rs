//! The loss estimator of the `ns2` profile's receiver: ns-2 2.35's
//! `TfrcSinkAgent` (tcp/tfrc-sink.cc) with its defaults (`algo_ 1` WALI,
//! `smooth_ 1`, `NumSamples_ -1` = 8, `AdjustHistoryAfterSS_ 1`,
//! `ShortIntervals_ 0`), reproduced function by function because three of
//! its rules differ from RFC 5348 §5 and the differences decide a long-delay
//! run (docs/validation.md, "TFRC profile ns2 on long-delay paths"):
//!
//! * loss events are grouped by the lost packets' interpolated **send**
//!   times (`estimate_tstamp` over the data packets' timestamps), against
//!   `lastloss`, which at the first loss is the send time of the packet
//!   that revealed it (`adjust_history(tfrch->timestamp)`), not the lost
//!   packet's;
//! * while fewer than 8 loss intervals are closed, the average that
//!   includes the open interval also includes every closed one
//!   (`weighted_average1(0, ds, ...)` over `ds = sample_count` entries, with
//!   the weights shifted by one), where RFC 5348 §5.4 leaves out the oldest;
//!   with one large synthesized first interval this decides when the open
//!   interval starts to lower p;
//! * the open interval is counted at reports only (`est_loss_WALI` walks
//!   the packets since the last report), starting after the packets of the
//!   last report, and the first report after the first loss carries the p
//!   `adjust_history` computed, not the average.
//!
//! `PreciseLoss_` (on in ns-2) is not reproduced: satcc's data packets
//! carry no round id; turning it off in ns-2 changes no goodput on the
//! paths of `scripts/tfrc-ns2-grid.py` (measured at 10 Mb/s, 300 ms,
//! 1 BDP: PER 1e-3 over 20 seeds and 1e-2 over 10, and 20 Mb/s, 250 ms,
//! 2 BDP at PER 0: identical).
//!
//! Memory stays bounded whatever the peer sends: holes are kept as the
//! received packets above `maxseqList` (at most `numPkts_` of them), the
//! loss events not yet counted by a report are capped (beyond
//! [`MAX_PENDING_EVENTS`] they are counted at once, which ns-2's walk would
//! do at the next report anyway), and one hole opens at most
//! [`MAX_EVENTS_PER_GAP`] loss events.

use std::collections::{BTreeMap, VecDeque};

/// `NumSamples_` -1 → `DEFAULT_NUMSAMPLES` 8, plus 1 for `smooth_ 1`
/// (`init_WALI`): the arrays hold `NUMSAMPLES + 1` = 10 entries.
const NUMSAMPLES: usize = 9;
/// Entries of `sample[]`, `mult[]`, `weights[]`.
const N: usize = NUMSAMPLES + 1;
/// `minDiscountRatio_` (ns-default.tcl: 0.5).
const MIN_DISCOUNT_RATIO: f64 = 0.5;
/// Loss events marked but not yet counted by a report, beyond which they
/// are counted at once (a bound on memory; a report comes every RTT).
pub const MAX_PENDING_EVENTS: usize = 4096;
/// Loss events one hole may open (a bound on work for a forged timestamp
/// gap; ns-2 has none).
pub const MAX_EVENTS_PER_GAP: usize = 1024;

/// `init_WALI()` with `smooth_ 1`: mid = 4, weights 1 for i < 4, then
/// 1 - (i - 4)/5: 1, 1, 1, 1, 1, .8, .6, .4, .2, 0.
fn weights() -> [f64; N] {
    let mut w = [0.0; N];
    let mid = NUMSAMPLES / 2;
    for (i, wi) in w.iter_mut().enumerate() {
        *wi = if i < mid {
            1.0
        } else {
            1.0 - (i - mid) as f64 / (mid as f64 + 1.0)
        };
    }
    w
}

/// What [`Ns2Sink::on_packet`] saw.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Ns2Arrival {
    /// A new loss event began (`congestionEvent`).
    pub congestion_event: bool,
    /// The first gap of the connection was seen and `adjust_history` ran:
    /// the p it computed, which the report sent now carries.
    pub first_loss_p: Option<f64>,
    /// The packet is a new highest one (`seqno > maxseq`).
    pub new_max: bool,
}

/// `TfrcSinkAgent`'s loss state (see the module documentation).
#[derive(Debug, Clone)]
pub struct Ns2Sink {
    num_pkts: u32,
    discount: bool,
    /// `maxseq` (None = -1 before the first packet).
    maxseq: Option<u64>,
    maxseq_list: u64,
    num_pkts_so_far: u32,
    /// `tsvec_[maxseq]`, `tsvec_[maxseqList]`: send times, seconds.
    ts_max: f64,
    ts_list: f64,
    /// Packets received above `maxseqList` (RCVD; every other sequence
    /// number in (maxseqList, maxseq) is an UNKNOWN hole), with send times.
    above: BTreeMap<u64, f64>,
    /// `rtt_` from the latest data packet (0 until the sender has one).
    rtt: f64,
    lastloss: f64,
    loss_seen_yet: bool,
    /// Sequence numbers marked LOST and not yet walked by `est_loss_WALI`.
    lost: VecDeque<u64>,
    last_sample: u64,
    sample: [i64; N],
    mult: [f64; N],
    weights: [f64; N],
    sample_count: usize,
    false_sample: i64,
    mult_factor: f64,
    loss_events: u64,
    packets_lost: u64,
}

impl Ns2Sink {
    /// A sink declaring a hole lost after `num_pkts` (`numPkts_`, 1..=1024)
    /// later packets, with `discount_` = `discount`.
    pub fn new(num_pkts: u32, discount: bool) -> Self {
        Ns2Sink {
            num_pkts: num_pkts.clamp(1, 1024),
            discount,
            maxseq: None,
            maxseq_list: 0,
            num_pkts_so_far: 0,
            ts_max: 0.0,
            ts_list: 0.0,
            above: BTreeMap::new(),
            rtt: 0.0,
            lastloss: 0.0,
            loss_seen_yet: false,
            lost: VecDeque::new(),
            last_sample: 0,
            sample: [0; N],
            mult: [1.0; N],
            weights: weights(),
            sample_count: 1,
            false_sample: 0,
            mult_factor: 1.0,
            loss_events: 0,
            packets_lost: 0,
        }
    }

    /// `TfrcSinkAgent::recv()`'s loss part for a data packet `seq` sent at
    /// `ts` seconds carrying the sender's `rtt` seconds (0 if none).
    /// `first_loss_p` computes `adjust_history`'s p (`b_to_p` of
    /// `est_thput()`), called at most once.
    pub fn on_packet(
        &mut self,
        seq: u64,
        ts: f64,
        rtt: f64,
        first_loss_p: &mut dyn FnMut() -> f64,
    ) -> Ns2Arrival {
        let mut out = Ns2Arrival::default();
        let Some(oldmaxseq) = self.maxseq else {
            // The first data packet: maxseq = seqno - 1, maxseqList = seqno.
            self.maxseq = Some(seq);
            self.maxseq_list = seq;
            self.ts_max = ts;
            self.ts_list = ts;
            self.rtt = rtt;
            out.new_max = true;
            return out;
        };
        let fills = seq > self.maxseq_list && seq < oldmaxseq && !self.above.contains_key(&seq);
        if seq > oldmaxseq || fills {
            if seq > self.maxseq_list + 1 {
                self.num_pkts_so_far += 1;
            }
            self.rtt = rtt;
        } else {
            // A duplicate, or a late packet whose hole was already decided:
            // lossvec_ is not UNKNOWN, nothing changes.
            return out;
        }
        let ts_old = self.ts_max;
        let ts_seq = ts;
        if seq > self.maxseq_list
            && (self.num_pkts_so_far >= self.num_pkts || ts_seq - self.ts_list > self.rtt)
        {
            // Decide every UNKNOWN hole in [maxseqList, seqno).
            let holes: Vec<(u64, u64)> = self.holes_below(seq);
            for (a, b) in holes {
                self.packets_lost += b - a + 1;
                if self.mark(a, b, oldmaxseq, ts_old, seq, ts_seq) {
                    out.congestion_event = true;
                }
            }
            self.above = self.above.split_off(&(seq + 1));
            self.maxseq_list = seq;
            self.ts_list = ts_seq;
            self.num_pkts_so_far = 0;
        } else if seq == self.maxseq_list + 1 {
            self.maxseq_list = seq;
            self.ts_list = ts_seq;
            self.num_pkts_so_far = 0;
        } else {
            // RCVD above maxseqList, its holes still UNKNOWN.
            self.above.insert(seq, ts_seq);
        }
        if seq > oldmaxseq {
            self.maxseq = Some(seq);
            self.ts_max = ts_seq;
            out.new_max = true;
            if !self.loss_seen_yet && seq - oldmaxseq > 1 {
                self.loss_seen_yet = true;
                out.first_loss_p = Some(self.adjust_history(ts_seq, first_loss_p()));
            }
        }
        out
    }

    /// The UNKNOWN holes in (maxseqList, seq) as inclusive ranges.
    fn holes_below(&self, seq: u64) -> Vec<(u64, u64)> {
        let mut v = Vec::new();
        let mut from = self.maxseq_list + 1;
        for (&r, _) in self.above.range(..seq) {
            if r > from {
                v.push((from, r - 1));
            }
            from = r + 1;
        }
        if seq > from {
            v.push((from, seq - 1));
        }
        v
    }

    /// The holes a..=b: each gets `estimate_tstamp(before, after, i)` and
    /// is LOST if `new_loss()` says so (its time more than `rtt_` after
    /// `lastloss`), else NOT_RCVD. The interpolated times rise with i, so
    /// the first LOST at or after x is found by bisection, with the same
    /// arithmetic per i as ns-2's loop.
    fn mark(&mut self, a: u64, b: u64, before: u64, ts_b: f64, after: u64, ts_a: f64) -> bool {
        let delta = (ts_a - ts_b) / (after as f64 - before as f64);
        let t_of = |i: u64| ts_b + (i as f64 - before as f64) * delta;
        let mut x = a;
        let mut any = false;
        let mut made = 0;
        while x <= b && made < MAX_EVENTS_PER_GAP {
            let new_at = |i: u64, lastloss: f64, rtt: f64| t_of(i) - lastloss > rtt;
            let y = if new_at(x, self.lastloss, self.rtt) {
                x
            } else if delta.is_nan() || delta <= 0.0 || !new_at(b, self.lastloss, self.rtt) {
                break;
            } else {
                // Smallest y in (x, b] with new_at(y).
                let (mut lo, mut hi) = (x, b);
                while hi - lo > 1 {
                    let mid = lo + (hi - lo) / 2;
                    if new_at(mid, self.lastloss, self.rtt) {
                        hi = mid;
                    } else {
                        lo = mid;
                    }
                }
                hi
            };
            // new_loss(): lastloss = tstamp.
            self.lastloss = t_of(y);
            self.loss_events += 1;
            any = true;
            made += 1;
            if self.lost.len() >= MAX_PENDING_EVENTS {
                self.walk(self.lost[0]);
            }
            self.lost.push_back(y);
            x = y + 1;
        }
        any
    }

    /// `adjust_history(ts)` at the first gap: every LOST so far becomes
    /// NOT_RCVD, `lastloss` = the revealing packet's send time, and the
    /// first loss interval is `(int)(1/p)` (clamped to a C `int`).
    fn adjust_history(&mut self, ts: f64, p: f64) -> f64 {
        self.lost.clear();
        self.lastloss = ts;
        self.loss_events = 1;
        let inv = if p > 0.0 { (1.0 / p).trunc() } else { f64::MAX };
        self.false_sample = inv.clamp(1.0, f64::from(i32::MAX)) as i64;
        self.sample[1] = self.false_sample;
        self.sample[0] = 0;
        self.sample_count += 1;
        self.false_sample = -1;
        p
    }

    /// The first part of `est_loss_WALI()` up to sequence number `to`:
    /// `sample[0]++` per packet from `last_sample`, and at each LOST a new
    /// interval (shift, the discount factor folded into the older
    /// intervals' `mult`). Walking in pieces gives the same state as
    /// walking at once.
    fn walk(&mut self, to: u64) {
        while let Some(&l) = self.lost.front() {
            if l > to {
                break;
            }
            self.lost.pop_front();
            if l < self.last_sample {
                // Marked after a report walked past it (numPkts_ > 1):
                // ns-2 never counts it.
                continue;
            }
            self.sample[0] += (l - self.last_sample + 1) as i64;
            self.last_sample = l + 1;
            self.sample_count += 1;
            self.sample.copy_within(0..N - 1, 1);
            self.sample[0] = 0;
            // multiply_array(mult, .., mult_factor_) from index 1, then
            // shift_array(mult, .., 1.0).
            for m in &mut self.mult[1..] {
                *m *= self.mult_factor;
            }
            self.mult.copy_within(0..N - 1, 1);
            self.mult[0] = 1.0;
            self.mult_factor = 1.0;
        }
        if to + 1 > self.last_sample {
            self.sample[0] += (to + 1 - self.last_sample) as i64;
            self.last_sample = to + 1;
        }
    }

    /// `weighted_average1(start, end, factor, mult, weights, sample, ...)`
    /// with `ShortIntervals_ 0` and `smooth_ 1`.
    fn weighted_average(&self, start: usize, end: usize, factor: f64) -> f64 {
        let (m, w, s) = (&self.mult, &self.weights, &self.sample);
        let mut wsum = 0.0;
        let mut answer = 0.0;
        if start == 0 {
            let end = if end == NUMSAMPLES + 1 { end - 1 } else { end };
            for i in start..end {
                wsum += if i == 0 {
                    m[i] * w[i + 1]
                } else {
                    factor * m[i] * w[i + 1]
                };
            }
            for i in start..end {
                let f = if i == 0 { 1.0 } else { factor };
                answer += f * m[i] * w[i + 1] * s[i] as f64 / wsum;
            }
        } else {
            for i in start..end {
                wsum += if i == 0 {
                    m[i] * w[i]
                } else {
                    factor * m[i] * w[i]
                };
            }
            for i in start..end {
                let f = if i == 0 { 1.0 } else { factor };
                answer += f * m[i] * w[i] * s[i] as f64 / wsum;
            }
        }
        answer
    }

    /// `est_loss_WALI()`, run when a report is built: the loss event rate
    /// it carries.
    pub fn est_loss(&mut self) -> f64 {
        if let Some(maxseq) = self.maxseq {
            self.walk(maxseq);
        }
        let ds = self.sample_count.min(NUMSAMPLES + 1);
        if self.sample_count == 1 && self.false_sample == 0 {
            return 0.0;
        }
        if self.sample_count > 1 && self.discount && self.sample[0] > 0 {
            let ave = self.weighted_average(1, ds, 1.0);
            let ratio = 2.0 * ave / self.sample[0] as f64;
            if ratio < 1.0 {
                self.mult_factor = ratio.max(MIN_DISCOUNT_RATIO);
            }
        }
        let mut ave1 = self.weighted_average(0, ds, self.mult_factor);
        let ave2 = self.weighted_average(1, ds, self.mult_factor);
        if ave2 > ave1 {
            ave1 = ave2;
        }
        if ave1 > 0.0 {
            1.0 / ave1
        } else {
            999.0
        }
    }

    /// The loss intervals `sample[1..]` (most recent first) as of the last
    /// report, the synthesized first one included; `sample[0]`, the open
    /// interval, is first.
    pub fn samples(&self) -> &[i64] {
        &self.sample[..self.sample_count.min(N)]
    }

    /// Loss events so far (the first, synthesized one included).
    pub fn loss_events(&self) -> u64 {
        self.loss_events
    }

    /// Packets declared lost so far.
    pub fn packets_lost(&self) -> u64 {
        self.packets_lost
    }

    /// `rtt_`: the sender's RTT from the latest data packet, seconds.
    pub fn rtt(&self) -> f64 {
        self.rtt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_p() -> f64 {
        panic!("no first loss expected")
    }

    #[test]
    fn weights_are_init_walis() {
        assert_eq!(
            weights(),
            [
                1.0,
                1.0,
                1.0,
                1.0,
                1.0,
                0.8,
                0.6,
                0.4,
                0.19999999999999996,
                0.0
            ]
        );
    }

    /// Packets 0..n at 1 ms each, RTT 100 ms, except `lost`.
    fn feed(s: &mut Ns2Sink, n: u64, lost: &[u64], p_first: f64) -> Vec<Ns2Arrival> {
        let mut v = Vec::new();
        for seq in 0..n {
            if lost.contains(&seq) {
                continue;
            }
            v.push(s.on_packet(seq, seq as f64 * 1e-3, 0.1, &mut || p_first));
        }
        v
    }

    #[test]
    fn no_loss_gives_p_zero() {
        let mut s = Ns2Sink::new(1, true);
        feed(&mut s, 100, &[], 0.0);
        assert_eq!(s.est_loss(), 0.0);
        s.on_packet(100, 0.1, 0.1, &mut no_p);
        assert_eq!(s.est_loss(), 0.0);
    }

    #[test]
    fn first_loss_synthesizes_the_interval_and_groups_by_send_time() {
        let mut s = Ns2Sink::new(1, false);
        // Packet 10 lost (first loss: adjust_history, interval 1/0.001),
        // 50 lost: its send time 50 ms is within rtt_ 100 ms of the
        // revealing packet 11's 11 ms, so it is NOT_RCVD; 150 lost: 150 ms
        // - 11 ms > 100 ms, a new loss event.
        let v = feed(&mut s, 300, &[10, 50, 150], 0.001);
        assert_eq!(v[10].first_loss_p, Some(0.001));
        // 10 and 50 are within rtt_ of time 0 / of the revealing packet.
        assert_eq!(v.iter().filter(|a| a.congestion_event).count(), 1);
        assert_eq!(s.loss_events(), 2);
        assert_eq!(s.packets_lost(), 3);
        let p = s.est_loss();
        // Walk from 0: sample[0] counts 0..=150 (151) when 150 shifts it;
        // the open interval 151..=299 is 149. Closed: 151, 1000.
        assert_eq!(s.samples(), &[149, 151, 1000]);
        // ds = 3: ave1 = (149 w1 + 151 w2 + 1000 w3)/3, ave2 = (151 +
        // 1000)/2 (the oldest interval included in both: ns-2, not RFC
        // 5348 §5.4).
        let ave1 = (149.0 + 151.0 + 1000.0) / 3.0;
        let ave2 = (151.0 + 1000.0) / 2.0;
        assert!(ave2 > ave1);
        assert!((p - 1.0 / ave2).abs() < 1e-15);
        // The open interval raises the mean once it is larger than the
        // closed ones' mean, and all closed intervals stay in.
        for seq in 300..1000 {
            s.on_packet(seq, seq as f64 * 1e-3, 0.1, &mut no_p);
        }
        let p = s.est_loss();
        assert_eq!(s.samples(), &[849, 151, 1000]);
        assert!((p - 3.0 / (849.0 + 151.0 + 1000.0)).abs() < 1e-15, "{p}");
    }

    #[test]
    fn discounting_uses_the_factor_of_the_last_report() {
        let mut s = Ns2Sink::new(1, true);
        feed(&mut s, 300, &[10, 150], 1.0 / 128.0);
        let _ = s.est_loss();
        assert_eq!(s.samples(), &[149, 151, 128]);
        // I_0 = 1000 > 2 x mean(151, 128) = 279: DF = max(0.279, 0.5).
        for seq in 300..1151 {
            s.on_packet(seq, seq as f64 * 1e-3, 0.1, &mut no_p);
        }
        let p = s.est_loss();
        assert_eq!(s.samples()[0], 1000);
        let ave1 = (1000.0 + 0.5 * 151.0 + 0.5 * 128.0) / (1.0 + 2.0 * 0.5);
        assert!((p - 1.0 / ave1).abs() < 1e-12, "{p} vs {}", 1.0 / ave1);
        // At the next loss event the factor is folded into the older
        // intervals: after it, with I_0 small, the closed mean is
        // (1000 + 0.5 x 151 + 0.5 x 128) / 2 over weights 1, .5, .5.
        s.on_packet(1152, 1.152, 0.1, &mut no_p);
        let p = s.est_loss();
        assert_eq!(s.samples(), &[1, 1001, 151, 128]);
        let ave2 = (1001.0 + 0.5 * 151.0 + 0.5 * 128.0) / 2.0;
        assert!((p - 1.0 / ave2).abs() < 1e-12, "{p} vs {}", 1.0 / ave2);
    }

    #[test]
    fn memory_is_bounded_under_a_forged_gap() {
        let mut s = Ns2Sink::new(1, false);
        s.on_packet(0, 0.0, 1e-5, &mut no_p);
        s.on_packet(1, 0.0, 1e-5, &mut no_p);
        // A jump of 16 M packets spanning 1e6 s: one hole, at most
        // MAX_EVENTS_PER_GAP events, quickly.
        s.on_packet(1 << 24, 1e6, 1e-5, &mut || 0.5);
        assert!(s.loss_events() as usize <= MAX_EVENTS_PER_GAP + 1);
        for k in 0..10_000u64 {
            let seq = (1 << 24) + 2 * k + 2;
            s.on_packet(seq, 1e6 + k as f64, 1e-5, &mut no_p);
        }
        assert!(s.lost.len() <= MAX_PENDING_EVENTS);
        assert!(s.above.is_empty());
        assert!(s.est_loss() > 0.0);
    }
}
