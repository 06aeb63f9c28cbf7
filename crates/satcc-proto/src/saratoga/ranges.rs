//! A bounded set of byte ranges `[start, end)`, merged on insertion.
//!
//! The receiver keeps what it has received in one; the sender keeps its
//! retransmission queue in another. Adjacent and overlapping ranges merge,
//! so the set's size is the number of *gaps* plus one, and a cap on it
//! bounds memory whatever a peer sends: an insertion that would need one
//! range more than the cap is refused (the caller drops the DATA, which
//! the sender will re-send as part of a hole).

use std::collections::BTreeMap;

/// Disjoint, non-adjacent ranges `[start, end)` keyed by start.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeSet {
    map: BTreeMap<u64, u64>,
    cap: usize,
}

impl RangeSet {
    /// An empty set holding at most `cap` disjoint ranges (at least 1).
    pub fn new(cap: usize) -> RangeSet {
        RangeSet {
            map: BTreeMap::new(),
            cap: cap.max(1),
        }
    }

    /// Number of disjoint ranges.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// No ranges.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The ranges in order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.map.iter().map(|(&s, &e)| (s, e))
    }

    /// The first range.
    pub fn first(&self) -> Option<(u64, u64)> {
        self.map.iter().next().map(|(&s, &e)| (s, e))
    }

    /// The end of the last range (0 when empty).
    pub fn max_end(&self) -> u64 {
        self.map.values().next_back().copied().unwrap_or(0)
    }

    /// Total bytes covered.
    pub fn covered(&self) -> u64 {
        self.map.iter().map(|(s, e)| e - s).sum()
    }

    /// Adds `[start, end)`, merging with overlapping or adjacent ranges.
    /// Returns the number of bytes newly covered, or `None` (and changes
    /// nothing) if the set would exceed its cap. An empty range adds 0.
    pub fn insert(&mut self, start: u64, end: u64) -> Option<u64> {
        if start >= end {
            return Some(0);
        }
        // Ranges that touch [start, end]: the one starting at or before
        // `start` (if it reaches start) and those starting within.
        let mut lo = start;
        let mut hi = end;
        let mut absorbed: Vec<(u64, u64)> = Vec::new();
        if let Some((&s, &e)) = self.map.range(..=start).next_back() {
            if e >= start {
                lo = s;
                hi = hi.max(e);
                absorbed.push((s, e));
            }
        }
        for (&s, &e) in self.map.range(start..=end) {
            if absorbed.first().is_some_and(|a| a.0 == s) {
                continue;
            }
            hi = hi.max(e);
            absorbed.push((s, e));
        }
        if absorbed.is_empty() && self.map.len() >= self.cap {
            return None;
        }
        let before: u64 = absorbed.iter().map(|(s, e)| e - s).sum();
        for (s, _) in &absorbed {
            self.map.remove(s);
        }
        self.map.insert(lo, hi);
        Some((hi - lo) - before)
    }

    /// Removes `[start, end)` from the set (ranges are cut or split; a
    /// split that would exceed the cap drops the upper piece, which only
    /// makes the set smaller).
    pub fn remove(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        let hit: Vec<(u64, u64)> = self
            .map
            .range(..end)
            .filter(|(_, &e)| e > start)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in hit {
            self.map.remove(&s);
            if s < start {
                self.map.insert(s, start);
            }
            if e > end && self.map.len() < self.cap {
                self.map.insert(end, e);
            }
        }
    }

    /// The bytes `[0, n)` with `n` the end of the range starting at 0: the
    /// lowest offset not in the set.
    pub fn prefix_end(&self) -> u64 {
        match self.map.get(&0) {
            Some(&e) => e,
            None => 0,
        }
    }

    /// Whether `[start, end)` is covered.
    pub fn contains(&self, start: u64, end: u64) -> bool {
        if start >= end {
            return true;
        }
        self.map
            .range(..=start)
            .next_back()
            .is_some_and(|(_, &e)| e >= end)
    }

    /// The gaps within `[from, to)`: the ranges not covered, in order.
    pub fn gaps(&self, from: u64, to: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        let mut at = from;
        let mut iter = self.map.iter().map(|(&s, &e)| (s, e));
        let mut done = from >= to;
        std::iter::from_fn(move || {
            while !done {
                match iter.next() {
                    Some((s, e)) => {
                        if e <= at {
                            continue;
                        }
                        if s > at {
                            let gap = (at, s.min(to));
                            at = e;
                            if at >= to {
                                done = true;
                            }
                            if gap.0 < gap.1 {
                                return Some(gap);
                            }
                        } else {
                            at = e;
                            if at >= to {
                                done = true;
                            }
                        }
                    }
                    None => {
                        done = true;
                        if at < to {
                            return Some((at, to));
                        }
                    }
                }
            }
            None
        })
    }

    /// Removes everything at or beyond `limit`.
    pub fn truncate(&mut self, limit: u64) {
        self.remove(limit, u64::MAX);
    }

    /// Empties the set.
    pub fn clear(&mut self) {
        self.map.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(s: &RangeSet) -> Vec<(u64, u64)> {
        s.iter().collect()
    }

    #[test]
    fn merges_overlapping_and_adjacent() {
        let mut s = RangeSet::new(10);
        assert_eq!(s.insert(10, 20), Some(10));
        assert_eq!(s.insert(30, 40), Some(10));
        assert_eq!(s.insert(20, 30), Some(10));
        assert_eq!(ranges(&s), vec![(10, 40)]);
        assert_eq!(s.insert(5, 50), Some(15));
        assert_eq!(ranges(&s), vec![(5, 50)]);
        assert_eq!(s.insert(6, 7), Some(0));
        assert_eq!(s.insert(0, 5), Some(5));
        assert_eq!(s.prefix_end(), 50);
        assert_eq!(s.covered(), 50);
        assert!(s.contains(0, 50));
        assert!(!s.contains(0, 51));
    }

    #[test]
    fn cap_refuses_a_new_range_but_not_a_merge() {
        let mut s = RangeSet::new(2);
        s.insert(0, 10);
        s.insert(20, 30);
        assert_eq!(s.insert(40, 50), None);
        assert_eq!(ranges(&s), vec![(0, 10), (20, 30)]);
        assert_eq!(s.insert(30, 35), Some(5));
        assert_eq!(s.insert(10, 20), Some(10));
        assert_eq!(ranges(&s), vec![(0, 35)]);
        assert_eq!(s.insert(40, 50), Some(10));
    }

    #[test]
    fn gaps_and_removal() {
        let mut s = RangeSet::new(10);
        s.insert(10, 20);
        s.insert(30, 40);
        assert_eq!(
            s.gaps(0, 50).collect::<Vec<_>>(),
            vec![(0, 10), (20, 30), (40, 50)]
        );
        assert_eq!(s.gaps(15, 35).collect::<Vec<_>>(), vec![(20, 30)]);
        assert_eq!(s.gaps(12, 18).count(), 0);
        assert_eq!(s.gaps(0, 0).count(), 0);
        s.remove(15, 35);
        assert_eq!(ranges(&s), vec![(10, 15), (35, 40)]);
        s.remove(0, 100);
        assert!(s.is_empty());
        s.insert(0, 100);
        s.remove(40, 60);
        assert_eq!(ranges(&s), vec![(0, 40), (60, 100)]);
        s.truncate(50);
        assert_eq!(ranges(&s), vec![(0, 40)]);
    }
}
