//! Hole lists of STATUS messages kept out of line.
//!
//! A STATUS frame lists as many holes as fit the frame (§4.5: the holes
//! run to the frame's end; bit 14 says the list is incomplete). The
//! sans-IO [`super::SaraStatus`] holds two inline so that every simulated
//! [`crate::Message`] stays 80 bytes; a real runtime encodes the whole
//! list into the frame itself. In the simulator, where the message *is*
//! the frame, a flow's receiver and sender share one [`StatusHoleStore`]:
//! the receiver puts a STATUS's list there and the message carries its
//! key ([`super::SaraStatus::stored_holes`]); the sender takes the list
//! out when the STATUS arrives. The driver still sizes the frame by the
//! whole list ([`super::msg::udp_payload_len`]), so the reverse path
//! carries what the real frame would.
//!
//! A STATUS lost on the way never claims its list; the store keeps at
//! most `capacity` lists and drops the oldest beyond that (a STATUS that
//! arrives after its list was dropped reads as its first hole, with the
//! incomplete flag: still valid, only shorter). Memory is bounded by
//! `capacity` × the receiver's hole cap.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// Lists kept by default: more STATUS frames than a reverse path holds in
/// flight (the `dmc` uplink queue is 50 packets).
pub const DEFAULT_HOLE_STORE_CAPACITY: usize = 256;

/// The out-of-line hole lists of one flow (see the module docs).
#[derive(Debug)]
pub struct StatusHoleStore {
    /// (key, list) in increasing key order; a taken list stays, empty,
    /// until it reaches the front.
    lists: VecDeque<(u64, Vec<(u64, u64)>)>,
    next_key: u64,
    capacity: usize,
    /// Emptied lists, reused so that a long transfer allocates once.
    spare: Vec<Vec<(u64, u64)>>,
    /// Lists dropped unclaimed because the store was full.
    pub evicted: u64,
    /// Lookups of a key no longer kept.
    pub missed: u64,
}

/// A store shared by a flow's receiver and sender. `Arc<Mutex>` because
/// endpoints are `Send` (a rate controller is); it is locked once per
/// STATUS sent or received, never on the data path.
pub type SharedHoleStore = Arc<Mutex<StatusHoleStore>>;

impl StatusHoleStore {
    /// A store keeping at most `capacity` lists (at least 1).
    pub fn new(capacity: usize) -> StatusHoleStore {
        StatusHoleStore {
            lists: VecDeque::new(),
            next_key: 0,
            capacity: capacity.max(1),
            spare: Vec::new(),
            evicted: 0,
            missed: 0,
        }
    }

    /// A new store behind an `Arc<Mutex>`, to hand to both endpoints.
    pub fn shared(capacity: usize) -> SharedHoleStore {
        Arc::new(Mutex::new(StatusHoleStore::new(capacity)))
    }

    /// Keeps `holes` and returns their key and number.
    pub fn put<I: IntoIterator<Item = (u64, u64)>>(&mut self, holes: I) -> (u64, usize) {
        while self.lists.len() >= self.capacity {
            if let Some((_, v)) = self.lists.pop_front() {
                if !v.is_empty() {
                    self.evicted += 1;
                }
                self.recycle(v);
            }
        }
        let mut v = self.spare.pop().unwrap_or_default();
        v.extend(holes);
        let key = self.next_key;
        let n = v.len();
        self.next_key += 1;
        self.lists.push_back((key, v));
        (key, n)
    }

    /// Takes the list kept under `key` out of the store, if it is still
    /// there (each list can be taken once). Hand it back with
    /// [`Self::recycle`] when done.
    pub fn take(&mut self, key: u64) -> Option<Vec<(u64, u64)>> {
        let found = self
            .lists
            .binary_search_by_key(&key, |e| e.0)
            .ok()
            .map(|i| std::mem::take(&mut self.lists[i].1))
            .filter(|v| !v.is_empty());
        if found.is_none() {
            self.missed += 1;
        }
        while self.lists.front().is_some_and(|e| e.1.is_empty()) {
            if let Some((_, v)) = self.lists.pop_front() {
                self.recycle(v);
            }
        }
        found
    }

    /// Returns a list's allocation for reuse.
    pub fn recycle(&mut self, mut v: Vec<(u64, u64)>) {
        v.clear();
        if v.capacity() > 0 && self.spare.len() < self.capacity {
            self.spare.push(v);
        }
    }

    /// Lists kept now (claimed or not).
    pub fn len(&self) -> usize {
        self.lists.iter().filter(|e| !e.1.is_empty()).count()
    }

    /// Whether no list is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_come_back_once_and_memory_stays_bounded() {
        let mut s = StatusHoleStore::new(4);
        let (a, n) = s.put([(1, 2), (3, 4), (5, 6)]);
        assert_eq!(n, 3);
        let (b, _) = s.put([(7, 8), (9, 10), (11, 12)]);
        assert_eq!(s.take(b).unwrap(), vec![(7, 8), (9, 10), (11, 12)]);
        assert!(s.take(b).is_none(), "taken twice");
        let v = s.take(a).unwrap();
        assert_eq!(v, vec![(1, 2), (3, 4), (5, 6)]);
        s.recycle(v);
        assert!(s.is_empty());
        // Lost STATUS frames never claim their lists: the oldest go.
        for i in 0..100u64 {
            s.put([(i, i + 1), (i + 2, i + 3), (i + 4, i + 5)]);
        }
        assert_eq!(s.len(), 4);
        assert_eq!(s.evicted, 96);
        assert!(s.take(0).is_none());
        assert_eq!(s.take(101).unwrap()[0], (99, 100));
    }
}
