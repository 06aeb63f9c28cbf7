//! The RFC 6675 SACK scoreboard, with O(1) amortised work per ACK.
//!
//! One flag per outstanding segment lives in a ring indexed by
//! `seq - una`. Everything RFC 6675 asks of the scoreboard is kept as a
//! counter or a cursor that only moves forward between resets, so neither
//! `IsLost`, `SetPipe` nor `NextSeg` ever walks the window:
//!
//! * `lost_end`: IsLost(s) holds for an unSACKed `s` exactly when at least
//!   DupThresh SACKed segments lie above it, i.e. when `s` is below the
//!   DupThresh-th highest SACKed segment. New SACKs only raise that segment,
//!   so it is a cursor walking up.
//! * `rxt_next` (HighRxt + 1) and the count of SACKed segments below it.
//! * `high_sacked_end`: one past the highest SACKed segment.

use std::collections::VecDeque;

use super::SackBlock;

/// How many SACK blocks of the previous ACK we remember, to skip the parts of
/// a repeated block that were already recorded.
const CACHE: usize = 4;

#[derive(Debug)]
pub(crate) struct Scoreboard {
    una: u64,
    /// SACKed flag of each segment in `una .. una + sacked_flags.len()`.
    flags: VecDeque<bool>,
    sacked: u64,
    dupthresh: u64,
    /// The DupThresh-th highest SACKed segment, or `una` if fewer than
    /// DupThresh segments are SACKed. Every unSACKed segment below is lost.
    lost_end: u64,
    /// One past the highest SACKed segment (`una` if none).
    high_sacked_end: u64,
    /// HighRxt + 1: the lowest segment not yet considered for retransmission.
    rxt_next: u64,
    /// SACKed segments in `una .. rxt_next`.
    sacked_below_rxt: u64,
    /// Blocks recorded from the previous ACK (all their segments are SACKed).
    cache: [SackBlock; CACHE],
    cache_len: usize,
    /// Cursor and flag steps taken, for tests of the O(1) claim.
    pub(crate) steps: u64,
}

impl Scoreboard {
    pub(crate) fn new(dupthresh: u32) -> Self {
        Scoreboard {
            una: 0,
            flags: VecDeque::new(),
            sacked: 0,
            dupthresh: dupthresh.max(1) as u64,
            lost_end: 0,
            high_sacked_end: 0,
            rxt_next: 0,
            sacked_below_rxt: 0,
            cache: [SackBlock::default(); CACHE],
            cache_len: 0,
            steps: 0,
        }
    }

    fn end(&self) -> u64 {
        self.una + self.flags.len() as u64
    }

    fn is_sacked(&self, seq: u64) -> bool {
        seq >= self.una
            && self
                .flags
                .get((seq - self.una) as usize)
                .copied()
                .unwrap_or(false)
    }

    /// SACKed segments held.
    pub(crate) fn sacked_count(&self) -> u64 {
        self.sacked
    }

    /// Segment `seq` (which must be the next after the highest sent) went out
    /// for the first time.
    pub(crate) fn on_send_new(&mut self, seq: u64) {
        if seq == self.end() {
            self.flags.push_back(false);
        }
    }

    /// The cumulative ACK moved to `new_una`.
    pub(crate) fn advance(&mut self, new_una: u64) {
        let new_una = new_una.min(self.end());
        // Popping is O(newly acknowledged), i.e. O(1) per segment sent; it
        // is not counted in `steps`, which measures the walks.
        while self.una < new_una {
            if self.flags.pop_front().unwrap_or(false) {
                self.sacked -= 1;
                if self.una < self.rxt_next {
                    self.sacked_below_rxt -= 1;
                }
            }
            self.una += 1;
        }
        if self.rxt_next < self.una {
            self.rxt_next = self.una;
            self.sacked_below_rxt = 0;
        }
        if self.high_sacked_end < self.una || self.sacked == 0 {
            self.high_sacked_end = self.una;
        }
        // Fewer than DupThresh SACKed segments can remain only if the
        // DupThresh-th highest one was just acknowledged.
        if self.sacked < self.dupthresh {
            self.lost_end = self.una;
        }
    }

    /// Forget all SACK information and retransmission marks: after an RTO
    /// the sender must not trust SACKs (RFC 2018 §8, RFC 6675 §5.1), as
    /// ns-2's Sack1 does.
    pub(crate) fn clear(&mut self) {
        for f in self.flags.iter_mut() {
            *f = false;
        }
        self.sacked = 0;
        self.lost_end = self.una;
        self.high_sacked_end = self.una;
        self.rxt_next = self.una;
        self.sacked_below_rxt = 0;
        self.cache_len = 0;
    }

    /// Record the SACK blocks of one ACK (RFC 6675 Update()). Blocks are
    /// clamped to the outstanding range; returns how many segments were
    /// newly SACKed.
    pub(crate) fn update(&mut self, blocks: &[SackBlock]) -> u64 {
        self.update_with(blocks, |_| {})
    }

    /// [`Self::update`], calling `newly_sacked` with each segment newly
    /// SACKed (RACK, RFC 8985 §6.2, needs each one's transmission time).
    pub(crate) fn update_with(
        &mut self,
        blocks: &[SackBlock],
        mut newly_sacked: impl FnMut(u64),
    ) -> u64 {
        let mut newly = 0;
        let (lo, hi) = (self.una, self.end());
        for b in blocks {
            // Blocks outside [una, snd_max) carry nothing we can use (and
            // D-SACKs below the ACK, RFC 2883, are not losses).
            let s = b.start.max(lo);
            let e = b.end.min(hi);
            let mut p = s;
            while p < e {
                if let Some(c) = self.cache[..self.cache_len]
                    .iter()
                    .find(|c| c.start <= p && p < c.end)
                {
                    p = c.end;
                    continue;
                }
                self.steps += 1;
                if self.mark(p) {
                    newly += 1;
                    newly_sacked(p);
                }
                p += 1;
            }
        }
        let n = blocks.len().min(CACHE);
        for (i, b) in blocks[..n].iter().enumerate() {
            self.cache[i] = SackBlock {
                start: b.start.max(lo),
                end: b.end.min(hi),
            };
        }
        self.cache_len = n;
        newly
    }

    fn mark(&mut self, seq: u64) -> bool {
        let i = (seq - self.una) as usize;
        if self.flags[i] {
            return false;
        }
        self.flags[i] = true;
        self.sacked += 1;
        if seq < self.rxt_next {
            self.sacked_below_rxt += 1;
        }
        if seq + 1 > self.high_sacked_end {
            self.high_sacked_end = seq + 1;
        }
        if self.sacked == self.dupthresh {
            // Exactly DupThresh SACKed: the lowest of them is the boundary.
            let mut p = self.una;
            while !self.is_sacked(p) {
                self.steps += 1;
                p += 1;
            }
            self.lost_end = p;
        } else if self.sacked > self.dupthresh && seq > self.lost_end {
            // One more SACKed segment above the boundary: the boundary moves
            // up to the next SACKed segment (never past `seq`).
            let mut p = self.lost_end + 1;
            while !self.is_sacked(p) {
                self.steps += 1;
                p += 1;
            }
            self.lost_end = p;
        }
        true
    }

    /// RFC 6675 IsLost() for an unSACKed segment: at least DupThresh SACKed
    /// segments above it. (With whole segments, "more than (DupThresh-1)
    /// SMSS bytes SACKed above" is the same test.)
    pub(crate) fn is_lost(&self, seq: u64) -> bool {
        self.sacked >= self.dupthresh && seq < self.lost_end && !self.is_sacked(seq)
    }

    /// RFC 6675 SetPipe(), in segments, computed from counters: every
    /// unSACKed segment not deemed lost counts once (§4 (a)), and every
    /// unSACKed one at or below HighRxt once more (§4 (b)).
    pub(crate) fn pipe(&self) -> u64 {
        let unsacked = self.flags.len() as u64 - self.sacked;
        let lost = if self.sacked >= self.dupthresh {
            (self.lost_end - self.una) - (self.sacked - self.dupthresh)
        } else {
            0
        };
        let retx = (self.rxt_next - self.una) - self.sacked_below_rxt;
        unsacked - lost + retx
    }

    /// RFC 6675 §5 (3.1)/(4.3): entering recovery, HighRxt starts at the
    /// segment retransmitted on entry (`una`).
    pub(crate) fn start_recovery(&mut self) {
        self.rxt_next = self.una;
        self.sacked_below_rxt = 0;
        if !self.flags.is_empty() {
            self.step_rxt();
        }
    }

    fn step_rxt(&mut self) {
        if self.is_sacked(self.rxt_next) {
            self.sacked_below_rxt += 1;
        }
        self.rxt_next += 1;
    }

    /// RFC 6675 NextSeg() rules (1) and (3): the smallest unSACKed segment
    /// above HighRxt and below the highest SACKed one, if it is lost
    /// (rule 1) or, when `allow_rule3`, even if not. The caller sends it and
    /// calls [`Self::mark_retransmitted`].
    pub(crate) fn next_hole(&mut self, allow_rule3: bool) -> Option<u64> {
        // HighRxt only moves up; skipping SACKed segments here is what makes
        // NextSeg amortised O(1).
        while self.rxt_next < self.high_sacked_end && self.is_sacked(self.rxt_next) {
            self.steps += 1;
            self.step_rxt();
        }
        let s = self.rxt_next;
        // (1.b): below the highest SACKed octet.
        if s >= self.high_sacked_end {
            return None;
        }
        // (1.c) or, for rule (3), any unSACKed segment.
        if self.is_lost(s) || allow_rule3 {
            Some(s)
        } else {
            None
        }
    }

    /// RFC 6675 §5 (C.2): HighRxt becomes the segment just retransmitted.
    pub(crate) fn mark_retransmitted(&mut self, seq: u64) {
        while self.rxt_next <= seq && self.rxt_next < self.end() {
            self.steps += 1;
            self.step_rxt();
        }
    }

    /// Is `seq` SACKed? (Out-of-range segments are not.)
    pub(crate) fn sacked(&self, seq: u64) -> bool {
        self.is_sacked(seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blk(start: u64, end: u64) -> SackBlock {
        SackBlock { start, end }
    }

    fn board(n: u64) -> Scoreboard {
        let mut sb = Scoreboard::new(3);
        for s in 0..n {
            sb.on_send_new(s);
        }
        sb
    }

    #[test]
    fn pipe_hand_example() {
        // 10 segments out; 2 and 5 lost; 3, 4, 6, 7, 8, 9 SACKed.
        let mut sb = board(10);
        sb.advance(2);
        assert_eq!(sb.pipe(), 8);
        assert_eq!(sb.update(&[blk(3, 5)]), 2);
        // Two SACKed above 2: not yet lost. pipe = 8 - 2 SACKed = 6.
        assert!(!sb.is_lost(2));
        assert_eq!(sb.pipe(), 6);
        assert_eq!(sb.update(&[blk(6, 10), blk(3, 5)]), 4);
        // 6 SACKed; lost: 2 (6 above) and 5 (4 above). Unsacked: 2, 5.
        assert!(sb.is_lost(2));
        assert!(sb.is_lost(5));
        assert_eq!(sb.pipe(), 0);
        sb.start_recovery(); // retransmits 2: HighRxt = 2
        assert_eq!(sb.pipe(), 1);
        assert_eq!(sb.next_hole(false), Some(5));
        sb.mark_retransmitted(5);
        assert_eq!(sb.pipe(), 2);
        assert_eq!(sb.next_hole(true), None);
        // Retransmission of 2 arrives: cumulative ACK to 5.
        sb.advance(5);
        assert_eq!(sb.pipe(), 1);
        sb.advance(10);
        assert_eq!(sb.pipe(), 0);
        assert_eq!(sb.sacked_count(), 0);
    }

    #[test]
    fn is_lost_needs_dupthresh_sacked_above() {
        let mut sb = board(20);
        sb.update(&[blk(5, 6)]);
        sb.update(&[blk(7, 8), blk(5, 6)]);
        assert!(!sb.is_lost(0));
        sb.update(&[blk(9, 10), blk(7, 8), blk(5, 6)]);
        // SACKed 5, 7, 9: segments below 5 are lost, 6 and 8 are not.
        assert!(sb.is_lost(0) && sb.is_lost(4));
        assert!(!sb.is_lost(6) && !sb.is_lost(8));
        sb.update(&[blk(11, 12)]);
        assert!(sb.is_lost(6) && !sb.is_lost(8));
        // The ACK of everything up to 8 leaves two SACKed (9, 11).
        sb.advance(8);
        assert!(!sb.is_lost(8));
        assert_eq!(sb.pipe(), 12 - 2);
    }

    #[test]
    fn out_of_range_blocks_ignored() {
        let mut sb = board(10);
        sb.advance(3);
        assert_eq!(
            sb.update(&[blk(0, 3), blk(10, 50), blk(u64::MAX - 1, u64::MAX)]),
            0
        );
        assert_eq!(sb.update(&[blk(1, 5)]), 2);
        assert_eq!(sb.update(&[blk(8, 100)]), 2);
        assert_eq!(sb.update(&[blk(7, 3)]), 0);
        assert_eq!(sb.sacked_count(), 4);
    }

    /// The counters and cursors against a plain model (the set of SACKed
    /// segments, walked afresh) after random sends, SACKs, cumulative ACKs
    /// and clears. Fails if an update of `sacked`, `high_sacked_end` or
    /// `lost_end` is dropped from `advance`, `mark` or `clear`.
    #[test]
    fn counters_match_a_fresh_walk() {
        use std::collections::VecDeque;
        let mut rng = crate::rng::Rng::new(7);
        let mut sb = Scoreboard::new(3);
        let (mut una, mut model) = (0u64, VecDeque::<bool>::new());
        for _ in 0..20_000 {
            let end = una + model.len() as u64;
            match rng.below(10) {
                0..=3 => {
                    for s in end..end + 1 + rng.below(8) {
                        sb.on_send_new(s);
                        model.push_back(false);
                    }
                }
                4..=5 => {
                    let a = una.saturating_sub(2) + rng.below(model.len() as u64 + 4);
                    let b = a + rng.below(6);
                    sb.update(&[blk(a, b)]);
                    for s in a.max(una)..b.min(end) {
                        model[(s - una) as usize] = true;
                    }
                }
                6..=8 => {
                    let to = una + rng.below(model.len() as u64 + 3);
                    sb.advance(to);
                    while una < to.min(end) {
                        model.pop_front();
                        una += 1;
                    }
                }
                _ => {
                    sb.clear();
                    model.iter_mut().for_each(|f| *f = false);
                }
            }
            let count = model.iter().filter(|f| **f).count() as u64;
            assert_eq!(sb.sacked_count(), count);
            assert_eq!(sb.end(), una + model.len() as u64);
            for s in una.saturating_sub(2)..una + model.len() as u64 + 2 {
                let want = s >= una && model.get((s - una) as usize).copied().unwrap_or(false);
                assert_eq!(sb.sacked(s), want, "segment {s}");
            }
            // One past the highest SACKed segment, and the DupThresh-th
            // highest (or `una`), walking the model down.
            let (mut high, mut above, mut lost_end) = (una, 0, una);
            for (i, f) in model.iter().enumerate().rev() {
                if *f {
                    high = high.max(una + i as u64 + 1);
                    above += 1;
                    if above == 3 {
                        lost_end = una + i as u64;
                    }
                }
            }
            assert_eq!(sb.high_sacked_end, high);
            assert_eq!(sb.lost_end, lost_end);
            assert!(sb.rxt_next >= una);
        }
    }

    #[test]
    fn growing_block_costs_one_step_per_ack() {
        let mut sb = board(10_000);
        for e in 2..10_000 {
            let before = sb.steps;
            sb.update(&[blk(1, e)]);
            assert!(sb.steps - before <= 3, "step cost {}", sb.steps - before);
        }
        assert_eq!(sb.sacked_count(), 9_998);
    }
}
