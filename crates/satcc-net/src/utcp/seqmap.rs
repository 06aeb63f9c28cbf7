//! The sans-IO [`TcpSender`](satcc_proto::tcp::TcpSender) counts segments;
//! real TCP counts bytes. Segment `n` is the bytes `n * mss ..
//! (n + 1) * mss` of the stream (every segment but a finite stream's last
//! is full), so both directions of the mapping are a division. This file
//! also recognises D-SACK blocks (RFC 2883), which stand for TCP-Peach's
//! dummy echoes on a real path.

use std::collections::VecDeque;

use satcc_proto::tcp::{SackBlock, MAX_SACK_BLOCKS};

/// Most dummies remembered while their D-SACK is awaited; older ones are
/// forgotten (their answer was lost or never comes: the LE queue dropped
/// them), so memory stays bounded whatever the peer does.
pub const MAX_PENDING_DUMMIES: usize = 8192;

/// Byte offsets in the stream against sequence numbers on the wire, and
/// segments against byte offsets.
#[derive(Clone, Debug)]
pub struct SeqMap {
    /// Sequence number of the stream's first byte (ISN + 1).
    pub base: u32,
    /// Payload bytes of a full segment.
    pub mss: u64,
    /// Bytes in the stream once it is finite.
    pub end: Option<u64>,
}

/// A cumulative ACK and SACK blocks translated into segments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MappedAck {
    /// Next segment expected.
    pub ack: u64,
    /// The ACK's byte offset.
    pub ack_bytes: u64,
    /// SACK blocks in segments (D-SACK removed), most recent first.
    pub sack: Vec<SackBlock>,
    /// The first block was a D-SACK (RFC 2883 §4): bytes received twice,
    /// as segments `start..end`.
    pub dsack: Option<SackBlock>,
    /// The D-SACK's byte offsets, left and right edge.
    pub dsack_bytes: Option<(u64, u64)>,
}

impl SeqMap {
    /// The sequence number of stream byte `off`.
    pub fn seq_of(&self, off: u64) -> u32 {
        self.base.wrapping_add(off as u32)
    }

    /// The stream offset of sequence number `seq`, taken as the one
    /// nearest `reference` (sequence numbers wrap every 4 GiB).
    pub fn off_of(&self, seq: u32, reference: u64) -> u64 {
        let delta = u64::from(seq.wrapping_sub(self.base));
        let hi = reference & !0xFFFF_FFFF;
        let mut best = hi | delta;
        for cand in [
            best.wrapping_add(1 << 32),
            best.checked_sub(1 << 32).unwrap_or(best),
        ] {
            if cand.abs_diff(reference) < best.abs_diff(reference) {
                best = cand;
            }
        }
        best
    }

    /// Segments that bytes `0..off` fill: whole segments only, except at
    /// the end of a finite stream (its last segment may be short).
    pub fn seg_of(&self, off: u64) -> u64 {
        match self.end {
            Some(e) if off >= e => e.div_ceil(self.mss),
            _ => off / self.mss,
        }
    }

    /// The byte range of segment `seg`.
    pub fn bytes_of(&self, seg: u64) -> (u64, u64) {
        let start = seg * self.mss;
        let end = start + self.mss;
        (start, self.end.map_or(end, |e| end.min(e)))
    }

    /// Translates an ACK: `ack` and the SACK blocks as received,
    /// `reference` the byte offset last acknowledged (for unwrapping).
    pub fn map_ack(&self, ack: u32, sack: &[Option<(u32, u32)>], reference: u64) -> MappedAck {
        let ack_bytes = self.off_of(ack, reference);
        let blocks: Vec<(u64, u64)> = sack
            .iter()
            .flatten()
            .map(|&(l, r)| (self.off_of(l, ack_bytes), self.off_of(r, ack_bytes)))
            .filter(|(l, r)| l < r)
            .collect();
        // RFC 2883 §4: a first block below the cumulative ACK, or one
        // inside the second block, reports a duplicate.
        let first_is_dsack = blocks.first().is_some_and(|&(l, r)| {
            r <= ack_bytes || blocks.get(1).is_some_and(|&(l2, r2)| l >= l2 && r <= r2)
        });
        let to_segs = |(l, r): (u64, u64)| SackBlock {
            start: l / self.mss,
            end: self.seg_of(r),
        };
        let mut m = MappedAck {
            ack: self.seg_of(ack_bytes),
            ack_bytes,
            sack: Vec::with_capacity(MAX_SACK_BLOCKS),
            dsack: None,
            dsack_bytes: None,
        };
        for (i, &b) in blocks.iter().enumerate() {
            if i == 0 && first_is_dsack {
                m.dsack = Some(to_segs(b));
                m.dsack_bytes = Some(b);
                continue;
            }
            let s = to_segs(b);
            if s.start < s.end && m.sack.len() < MAX_SACK_BLOCKS {
                m.sack.push(s);
            }
        }
        m
    }
}

/// The bytes a dummy copying `seg` carries: the segment without its
/// first byte, so that its D-SACK (which reports exactly the duplicate's
/// range, RFC 2883 §4) starts one byte into a segment and cannot be taken
/// for the D-SACK of a retransmission, which starts on a segment
/// boundary. `None` for a one-byte segment (its copy would be empty).
pub fn dummy_range(map: &SeqMap, seg: u64) -> Option<(u64, u64)> {
    let (start, end) = map.bytes_of(seg);
    (end > start + 1).then_some((start + 1, end))
}

/// Whether a D-SACK's byte range is a dummy's: its left edge one byte
/// into a segment.
pub fn is_dummy_dsack(map: &SeqMap, left: u64) -> bool {
    left % map.mss == 1
}

/// The dummies sent whose D-SACK has not come back yet.
#[derive(Clone, Debug, Default)]
pub struct PendingDummies {
    segs: VecDeque<u64>,
    /// Dummies forgotten unanswered to keep the list bounded.
    pub forgotten: u64,
}

impl PendingDummies {
    /// A dummy copying segment `seg` was sent.
    pub fn sent(&mut self, seg: u64) {
        if self.segs.len() >= MAX_PENDING_DUMMIES {
            self.segs.pop_front();
            self.forgotten += 1;
        }
        self.segs.push_back(seg);
    }

    /// A D-SACK for segments `d` that starts one byte into a segment (a
    /// dummy's range, see [`dummy_range`]) arrived: whether a dummy of a
    /// segment in `d` is pending, which then no longer is.
    pub fn answer(&mut self, d: SackBlock) -> bool {
        match self.segs.iter().position(|&s| s >= d.start && s < d.end) {
            Some(i) => {
                self.segs.remove(i);
                true
            }
            None => false,
        }
    }

    /// Dummies still awaiting their D-SACK.
    pub fn len(&self) -> usize {
        self.segs.len()
    }

    /// No dummy is awaiting its D-SACK.
    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> SeqMap {
        SeqMap {
            base: 0xFFFF_FF00,
            mss: 1000,
            end: None,
        }
    }

    #[test]
    fn offsets_unwrap_across_the_32_bit_edge() {
        let m = map();
        assert_eq!(m.seq_of(0), 0xFFFF_FF00);
        assert_eq!(m.seq_of(0x100), 0);
        assert_eq!(m.off_of(0, 0), 0x100);
        // Past 4 GiB: the offset keeps growing.
        let far = (1u64 << 32) + 5000;
        assert_eq!(m.off_of(m.seq_of(far), far - 3000), far);
        assert_eq!(m.off_of(m.seq_of(far - 10), far + 10), far - 10);
    }

    #[test]
    fn segments_and_the_short_last_one() {
        let mut m = map();
        assert_eq!(m.seg_of(2999), 2);
        assert_eq!(m.seg_of(3000), 3);
        m.end = Some(2500);
        assert_eq!(m.seg_of(2000), 2);
        assert_eq!(m.seg_of(2500), 3);
        assert_eq!(m.bytes_of(2), (2000, 2500));
    }

    #[test]
    fn dsack_below_the_ack_and_inside_the_second_block() {
        let m = map();
        let s = |o: u64| m.seq_of(o);
        // A duplicate of segment 4 after everything up to 10 arrived.
        let a = m.map_ack(s(10_000), &[Some((s(4000), s(5000))), None, None], 0);
        assert_eq!(a.ack, 10);
        assert_eq!(a.dsack, Some(SackBlock { start: 4, end: 5 }));
        assert!(a.sack.is_empty());
        // A duplicate of segment 12, held out of order in 12..14 above a
        // hole at 10: D-SACK first, then the block holding it.
        let a = m.map_ack(
            s(10_000),
            &[
                Some((s(12_000), s(13_000))),
                Some((s(12_000), s(14_000))),
                None,
            ],
            0,
        );
        assert_eq!(a.dsack, Some(SackBlock { start: 12, end: 13 }));
        assert_eq!(a.sack, vec![SackBlock { start: 12, end: 14 }]);
        // An ordinary SACK is none.
        let a = m.map_ack(
            s(10_000),
            &[
                Some((s(12_000), s(13_000))),
                Some((s(15_000), s(16_000))),
                None,
            ],
            0,
        );
        assert_eq!(a.dsack, None);
        assert_eq!(a.sack.len(), 2);
    }

    /// A dummy's D-SACK is told from a retransmission's by its left edge.
    #[test]
    fn dummy_dsacks_start_one_byte_into_a_segment() {
        let mut m = map();
        let (l, r) = dummy_range(&m, 4).unwrap();
        assert_eq!((l, r), (4001, 5000));
        assert!(is_dummy_dsack(&m, l));
        assert!(!is_dummy_dsack(&m, 4000));
        let a = m.map_ack(
            m.seq_of(10_000),
            &[Some((m.seq_of(l), m.seq_of(r))), None],
            0,
        );
        assert_eq!(a.dsack, Some(SackBlock { start: 4, end: 5 }));
        assert_eq!(a.dsack_bytes, Some((4001, 5000)));
        m.end = Some(4001);
        assert_eq!(dummy_range(&m, 4), None);
    }

    #[test]
    fn pending_dummies_match_and_stay_bounded() {
        let mut p = PendingDummies::default();
        p.sent(7);
        p.sent(7);
        assert!(p.answer(SackBlock { start: 7, end: 8 }));
        assert!(!p.answer(SackBlock { start: 3, end: 4 }));
        assert!(p.answer(SackBlock { start: 6, end: 9 }));
        assert!(!p.answer(SackBlock { start: 7, end: 8 }));
        for i in 0..(MAX_PENDING_DUMMIES as u64 + 10) {
            p.sent(i);
        }
        assert_eq!(p.len(), MAX_PENDING_DUMMIES);
        assert_eq!(p.forgotten, 10);
    }
}
