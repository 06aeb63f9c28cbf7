//! The sender's transmission history (paper 000 §3-c(II), Algorithm 1).
//!
//! Every DATA transmission gets the next dummy sequence number and its send
//! time is stored (Algorithm 1 step 8). Offsets are not stored per packet:
//! the paper records, for each set of regular transmissions, the offset and
//! dummy sequence number of its first packet (offsets of regular packets
//! are sequential), and an offset-to-dummy mapping for every retransmitted
//! packet (§3-c(II), the three bullet points after the "sets" of Fig. 1).
//! Both are kept here as *runs*: a run is a stretch of consecutive dummy
//! sequence numbers whose packets cover consecutive byte ranges of one
//! segment size each (the last may be shorter). A regular set is one run;
//! a retransmission that does not continue the previous packet's range
//! starts a run of its own, which is the paper's per-retransmission
//! mapping. A hole `[start, end)` then maps to dummy sequence numbers by
//! arithmetic on the first packet of each run.
//!
//! Memory: one `Instant` per packet not yet evaluated plus one run per
//! discontinuity; [`History::prune_through`] drops everything a closed
//! cycle has consumed.

use std::collections::VecDeque;

use crate::time::Instant;

/// Consecutive transmissions covering consecutive byte ranges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Run {
    /// Dummy sequence number of the first packet.
    pub d0: u64,
    /// Offset of the first packet.
    pub off0: u64,
    /// Length of every packet of the run but the last (0: a run of one
    /// empty packet).
    pub seg: u32,
    /// Packets in the run (at least 1).
    pub n: u64,
    /// Length of the last packet (at most `seg`).
    pub last_len: u32,
}

impl Run {
    /// One past the last dummy sequence number.
    fn end_d(&self) -> u64 {
        self.d0 + self.n
    }
    /// Offset of packet `k` of the run.
    fn off_of(&self, k: u64) -> u64 {
        self.off0
            .saturating_add(k.saturating_mul(u64::from(self.seg)))
    }
    /// Length of packet `k` of the run.
    fn len_of(&self, k: u64) -> u32 {
        if k + 1 == self.n {
            self.last_len
        } else {
            self.seg
        }
    }
    /// One past the last byte the run covers.
    fn byte_end(&self) -> u64 {
        self.off_of(self.n - 1)
            .saturating_add(u64::from(self.last_len))
    }
    /// Drop the packets before dummy sequence number `d` (d0 < d < end_d).
    fn trim_front(&mut self, d: u64) {
        let k = d - self.d0;
        self.off0 = self.off_of(k);
        self.d0 = d;
        self.n -= k;
    }
}

/// Send times and runs of the transmissions not yet evaluated.
#[derive(Clone, Debug, Default)]
pub(crate) struct History {
    /// Dummy sequence number of `times[0]`.
    base: u64,
    /// The next dummy sequence number to assign.
    next: u64,
    times: VecDeque<Instant>,
    runs: VecDeque<Run>,
}

impl History {
    /// Record a transmission; returns its dummy sequence number.
    pub fn push(&mut self, now: Instant, offset: u64, len: u32) -> u64 {
        let d = self.next;
        self.next += 1;
        self.times.push_back(now);
        let extend = self.runs.back().is_some_and(|r| {
            r.end_d() == d
                && r.seg > 0
                && r.last_len == r.seg
                && len > 0
                && len <= r.seg
                && r.byte_end() == offset
        });
        if extend {
            let r = self.runs.back_mut().expect("checked above");
            r.n += 1;
            r.last_len = len;
        } else {
            self.runs.push_back(Run {
                d0: d,
                off0: offset,
                seg: len,
                n: 1,
                last_len: len,
            });
        }
        d
    }

    /// The oldest dummy sequence number still held.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Packets held.
    pub fn len(&self) -> usize {
        self.times.len()
    }

    /// Runs held.
    pub fn runs_len(&self) -> usize {
        self.runs.len()
    }

    /// Send time of dummy sequence number `d`, if still held.
    pub fn send_time(&self, d: u64) -> Option<Instant> {
        d.checked_sub(self.base)
            .and_then(|i| self.times.get(i as usize).copied())
    }

    /// Calls `f(d, send_time, offset, len)` for every held packet with
    /// `lo <= d <= hi`, in dummy sequence order.
    pub fn for_each(&self, lo: u64, hi: u64, mut f: impl FnMut(u64, Instant, u64, u32)) {
        let lo = lo.max(self.base);
        for r in &self.runs {
            if r.end_d() <= lo {
                continue;
            }
            if r.d0 > hi {
                break;
            }
            let k_lo = lo.saturating_sub(r.d0);
            let k_hi = (hi - r.d0).min(r.n - 1);
            for k in k_lo..=k_hi {
                let d = r.d0 + k;
                if let Some(t) = self.send_time(d) {
                    f(d, t, r.off_of(k), r.len_of(k));
                }
            }
        }
    }

    /// The dummy sequence numbers in `lo..=hi` of packets whose byte range
    /// overlaps one of `holes` (half-open `[start, end)` ranges, sorted by
    /// start, non-overlapping), ascending. A packet that overlaps a hole
    /// was lost: had it arrived, none of its bytes would be missing
    /// (paper 000 §3-c(II), Algorithm 2 step 3).
    pub fn lost_in(&self, lo: u64, hi: u64, holes: &[(u64, u64)]) -> Vec<u64> {
        let mut lost = Vec::new();
        if holes.is_empty() || lo > hi {
            return lost;
        }
        let lo = lo.max(self.base);
        for r in &self.runs {
            if r.end_d() <= lo {
                continue;
            }
            if r.d0 > hi {
                break;
            }
            if r.seg == 0 {
                continue; // an empty packet covers no byte
            }
            let k_lo = lo.saturating_sub(r.d0);
            let k_hi = (hi - r.d0).min(r.n - 1);
            // Bytes of the packets k_lo..=k_hi.
            let b_lo = r.off_of(k_lo);
            let b_hi = r.off_of(k_hi).saturating_add(u64::from(r.len_of(k_hi)));
            // First hole ending after b_lo.
            let mut i = holes.partition_point(|h| h.1 <= b_lo);
            while i < holes.len() && holes[i].0 < b_hi {
                let hs = holes[i].0.max(b_lo);
                let he = holes[i].1.min(b_hi);
                i += 1;
                if hs >= he {
                    continue;
                }
                let seg = u64::from(r.seg);
                let k_first = ((hs - r.off0) / seg).max(k_lo);
                let k_last = ((he - 1 - r.off0) / seg).min(k_hi);
                for k in k_first..=k_last {
                    let d = r.d0 + k;
                    if lost.last() != Some(&d) {
                        lost.push(d);
                    }
                }
            }
        }
        lost.sort_unstable();
        lost.dedup();
        lost
    }

    /// Forget every packet with a dummy sequence number up to `hi`.
    pub fn prune_through(&mut self, hi: u64) {
        let upto = hi.saturating_add(1).min(self.next);
        if upto <= self.base {
            return;
        }
        let k = (upto - self.base) as usize;
        self.times.drain(..k.min(self.times.len()));
        self.base = upto;
        while let Some(r) = self.runs.front_mut() {
            if r.end_d() <= upto {
                self.runs.pop_front();
            } else {
                if r.d0 < upto {
                    r.trim_front(upto);
                }
                break;
            }
        }
    }

    /// Forget the oldest packet (the memory cap); false if none is held.
    pub fn drop_oldest(&mut self) -> bool {
        if self.times.is_empty() {
            return false;
        }
        self.prune_through(self.base);
        true
    }

    /// The runs held (tests and monitoring).
    #[cfg(test)]
    pub fn runs(&self) -> impl Iterator<Item = &Run> {
        self.runs.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> Instant {
        Instant(ms * 1_000_000)
    }

    #[test]
    fn regular_packets_form_one_run_and_retransmissions_their_own() {
        let mut h = History::default();
        for i in 0..5u64 {
            assert_eq!(h.push(t(i), i * 1000, 1000), i);
        }
        // Retransmissions of offsets 1000 and 3000, then regular data again.
        assert_eq!(h.push(t(5), 1000, 1000), 5);
        assert_eq!(h.push(t(6), 3000, 1000), 6);
        assert_eq!(h.push(t(7), 5000, 1000), 7);
        assert_eq!(h.push(t(8), 6000, 400), 8); // short last packet
        assert_eq!(h.push(t(9), 6400, 400), 9); // cannot extend a short run
        let runs: Vec<(u64, u64, u64)> = h.runs().map(|r| (r.d0, r.off0, r.n)).collect();
        assert_eq!(
            runs,
            vec![
                (0, 0, 5),
                (5, 1000, 1),
                (6, 3000, 1),
                (7, 5000, 2),
                (9, 6400, 1)
            ]
        );
        let mut seen = Vec::new();
        h.for_each(3, 8, |d, s, o, l| seen.push((d, s, o, l)));
        assert_eq!(
            seen,
            vec![
                (3, t(3), 3000, 1000),
                (4, t(4), 4000, 1000),
                (5, t(5), 1000, 1000),
                (6, t(6), 3000, 1000),
                (7, t(7), 5000, 1000),
                (8, t(8), 6000, 400)
            ]
        );
    }

    #[test]
    fn a_hole_over_several_packets_and_resent_ranges() {
        let mut h = History::default();
        for i in 0..10u64 {
            h.push(t(i), i * 1000, 1000);
        }
        // Offsets 2000 and 3000 sent again (d = 10, 11).
        h.push(t(10), 2000, 1000);
        h.push(t(11), 3000, 1000);
        // A hole covering the tail of packet 1, all of 2 and the head of 3.
        let holes = [(1500, 3100)];
        assert_eq!(h.lost_in(0, 9, &holes), vec![1, 2, 3]);
        // In the cycle of the retransmissions only the copies count.
        assert_eq!(h.lost_in(10, 11, &holes), vec![10, 11]);
        // Both cycles together (merged): originals and copies.
        assert_eq!(h.lost_in(0, 11, &holes), vec![1, 2, 3, 10, 11]);
        // Two holes inside one run, one at the boundary of the run.
        assert_eq!(h.lost_in(0, 9, &[(0, 1), (9999, 10_000)]), vec![0, 9]);
        // A hole past everything sent, an empty cycle.
        assert!(h.lost_in(0, 11, &[(20_000, 30_000)]).is_empty());
        assert!(h.lost_in(5, 4, &holes).is_empty());
    }

    #[test]
    fn pruning_trims_runs_and_times() {
        let mut h = History::default();
        for i in 0..10u64 {
            h.push(t(i), i * 1000, 1000);
        }
        h.prune_through(3);
        assert_eq!((h.base(), h.len()), (4, 6));
        assert_eq!(h.send_time(3), None);
        assert_eq!(h.send_time(4), Some(t(4)));
        // The run now starts at packet 4, offset 4000: mapping still exact.
        assert_eq!(h.lost_in(0, 9, &[(4000, 5000)]), vec![4]);
        assert_eq!(h.lost_in(0, 9, &[(3000, 4000)]), Vec::<u64>::new());
        assert!(h.drop_oldest());
        assert_eq!(h.base(), 5);
        h.prune_through(100);
        assert_eq!((h.len(), h.runs_len(), h.base()), (0, 0, 10));
        assert!(!h.drop_oldest());
        assert_eq!(h.push(t(20), 0, 1000), 10);
    }
}
