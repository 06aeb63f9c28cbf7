//! The TFRCP receiver (paper 004 §II-B): "the receiver acknowledges each
//! packet, by sending an ACK that carries the sequence number and
//! timestamp of the packet it is acknowledging ... \[and\] a bit vector of 8
//! bits indicating whether or not each of the previous 8 packets
//! (k-7 ... k) was received".
//!
//! Reception is remembered in a fixed ring bitmap of the last [`WINDOW`]
//! sequence numbers below the highest seen, which serves both the vector
//! and duplicate detection in constant memory; any sequence number, even
//! a wild jump, costs at most one sweep of the ring.

use std::collections::VecDeque;

use super::{ReceiverConfig, TfrcpAck, TfrcpData, TfrcpReceiverStats, VECTOR_LEN};
use crate::time::Instant;

/// Sequence numbers remembered below the highest seen (2^16).
pub const WINDOW: u64 = 1 << 16;

/// ACKs waiting for the driver at most; beyond it the oldest is dropped.
/// (One ACK is queued per data packet and a driver collects it at once;
/// the bound only keeps a misbehaving driver from growing memory.)
pub const MAX_PENDING_ACKS: usize = 4096;

const WORDS: usize = (WINDOW / 64) as usize;

/// The TFRCP receiver.
#[derive(Debug)]
pub struct TfrcpReceiver {
    #[allow(dead_code)]
    cfg: ReceiverConfig,
    /// Ring bitmap: bit (seq mod WINDOW) set = seq received, valid for
    /// seq in (hi - WINDOW, hi].
    bits: Vec<u64>,
    hi: Option<u64>,
    pending: VecDeque<TfrcpAck>,
    pub(super) stats: TfrcpReceiverStats,
}

impl TfrcpReceiver {
    /// A receiver that has seen nothing.
    pub fn new(cfg: ReceiverConfig) -> Self {
        TfrcpReceiver {
            cfg,
            bits: vec![0; WORDS],
            hi: None,
            pending: VecDeque::new(),
            stats: TfrcpReceiverStats::default(),
        }
    }

    fn slot(seq: u64) -> (usize, u64) {
        let i = seq % WINDOW;
        ((i / 64) as usize, 1u64 << (i % 64))
    }

    fn test(&self, seq: u64) -> bool {
        let (w, m) = Self::slot(seq);
        self.bits[w] & m != 0
    }

    fn set(&mut self, seq: u64) {
        let (w, m) = Self::slot(seq);
        self.bits[w] |= m;
    }

    /// Forget sequence numbers `from..=to` (slots about to be reused).
    fn clear_range(&mut self, from: u64, to: u64) {
        if to < from {
            return;
        }
        if to - from >= WINDOW - 1 {
            self.bits.iter_mut().for_each(|w| *w = 0);
            return;
        }
        let mut s = from;
        loop {
            let (w, m) = Self::slot(s);
            if s & 63 == 0 && to - s >= 63 {
                self.bits[w] = 0;
                match s.checked_add(64) {
                    Some(n) => s = n,
                    None => return,
                }
            } else {
                self.bits[w] &= !m;
                match s.checked_add(1) {
                    Some(n) => s = n,
                    None => return,
                }
            }
            if s > to {
                return;
            }
        }
    }

    /// Whether `seq` is within the remembered window.
    fn in_window(&self, seq: u64) -> bool {
        self.hi.is_some_and(|h| seq <= h && h - seq < WINDOW)
    }

    /// A data packet arrived: record it and queue its ACK.
    pub fn handle_input(&mut self, _now: Instant, d: &TfrcpData) {
        let k = d.seq;
        let new = match self.hi {
            None => {
                self.hi = Some(k);
                true
            }
            Some(h) if k > h => {
                self.clear_range(h + 1, k);
                self.hi = Some(k);
                true
            }
            Some(h) if h - k >= WINDOW => {
                // Too old to tell a duplicate from a late original; the
                // sender has long settled its fate.
                self.stats.packets_ignored += 1;
                return;
            }
            Some(_) => !self.test(k),
        };
        if new {
            self.set(k);
            self.stats.packets_received += 1;
            self.stats.delivered_bytes += u64::from(d.len);
        } else {
            // A duplicate is acknowledged too (the sender counts each
            // packet once whatever it hears), but not delivered again.
            self.stats.duplicates += 1;
        }
        // The vector: bit i = packet k-i received, i = 0..7.
        let mut vector = 0u8;
        for i in 0..VECTOR_LEN {
            match k.checked_sub(i) {
                Some(q) if self.in_window(q) && self.test(q) => vector |= 1 << i,
                Some(_) => {}
                None => break,
            }
        }
        if self.pending.len() >= MAX_PENDING_ACKS {
            self.pending.pop_front();
            self.stats.acks_dropped += 1;
        }
        self.pending.push_back(TfrcpAck {
            seq: k,
            ts_echo: d.ts,
            vector,
        });
    }

    /// The next ACK to send (one per data packet received, at once).
    pub fn poll_transmit(&mut self, _now: Instant) -> Option<TfrcpAck> {
        let a = self.pending.pop_front()?;
        self.stats.acks_sent += 1;
        Some(a)
    }

    /// The receiver has no timers.
    pub fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    /// The receiver has no timers; nothing happens.
    pub fn handle_timeout(&mut self, _now: Instant) {}

    /// Counters.
    pub fn stats(&self) -> TfrcpReceiverStats {
        self.stats
    }
}
