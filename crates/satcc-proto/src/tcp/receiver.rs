//! TCP receiver: cumulative ACKs, SACK blocks (RFC 2018), delayed ACKs
//! (RFC 5681 §4.2) and the RFC 7323 timestamp echo rule.

use std::collections::{BTreeMap, VecDeque};

use super::{SackBlock, TcpAck, TcpData, MAX_SACK_BLOCKS};
use crate::time::{Duration, Instant};

/// Receiver parameters.
#[derive(Clone, Debug)]
pub struct ReceiverConfig {
    /// Advertised window in segments.
    pub rwnd: u32,
    /// Generate SACK blocks.
    pub sack: bool,
    /// Delay ACKs (RFC 5681 §4.2: at least every second full segment).
    pub delayed_ack: bool,
    /// Delayed-ACK timer.
    pub delack_timeout: Duration,
    /// Echo the TCP-Peach dummy mark (a plain receiver does not).
    pub echo_dummy: bool,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        ReceiverConfig {
            rwnd: 10_000,
            sack: true,
            delayed_ack: false,
            delack_timeout: Duration::from_millis(100),
            echo_dummy: true,
        }
    }
}

/// Receiver counters.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReceiverStats {
    /// Payload bytes delivered in order to the application.
    pub delivered_bytes: u64,
    /// Data segments received (duplicates included, dummies excluded).
    pub segments_received: u64,
    /// Segments that had already arrived (and dummies when the mark is not
    /// echoed, since a plain receiver sees them as duplicates).
    pub duplicates: u64,
    /// ACKs generated.
    pub acks_sent: u64,
    /// Dummy segments received.
    pub dummies_received: u64,
    /// Segments delivered in order to the application.
    pub delivered_segments: u64,
    /// Segments beyond the advertised window, dropped.
    pub out_of_window: u64,
    /// Segments currently buffered out of order.
    pub buffered_segments: u64,
    /// Messages of another protocol handed to the receiver, ignored.
    pub foreign: u64,
}

/// A one-way TCP receiver.
#[derive(Debug)]
pub struct TcpReceiver {
    cfg: ReceiverConfig,
    /// Next segment expected in order (RCV.NXT).
    rcv_nxt: u64,
    /// Out-of-order data above `rcv_nxt`: start -> (end, payload bytes), as
    /// disjoint, non-adjacent ranges, all below `top`. Per segment this
    /// costs O(log holes).
    ooo: BTreeMap<u64, (u64, u64)>,
    /// The highest out-of-order range (start, end, payload bytes), kept out
    /// of `ooo`: data above a hole mostly arrives in order and extends it,
    /// which then costs no tree search. `None` exactly when there is no
    /// out-of-order data (`ooo` is empty then too).
    top: Option<(u64, u64, u64)>,
    /// SACK blocks in reporting order (RFC 2018 §4); the entries from
    /// `sack_len` on are always `SackBlock::default()`, so that an ACK
    /// copies the whole array and is the same value as one built with
    /// only the valid blocks.
    sack_list: [SackBlock; MAX_SACK_BLOCKS],
    sack_len: usize,
    /// RFC 7323 §4.3 TS.Recent and Last.ACK.sent.
    ts_recent: Instant,
    last_ack_sent: u64,
    /// In-order segments received since the last ACK (delayed ACKs).
    unacked: u32,
    delack_deadline: Option<Instant>,
    /// The ACKs to send, oldest first: the oldest in `next`, the others
    /// (rarely any: a driver polls after every input) in `out`; `out` is
    /// empty while `next` is `None`.
    next: Option<TcpAck>,
    out: VecDeque<TcpAck>,
    pub(super) stats: ReceiverStats,
}

impl TcpReceiver {
    /// A receiver expecting segment 0.
    pub fn new(cfg: ReceiverConfig) -> Self {
        TcpReceiver {
            cfg,
            rcv_nxt: 0,
            ooo: BTreeMap::new(),
            top: None,
            sack_list: [SackBlock::default(); MAX_SACK_BLOCKS],
            sack_len: 0,
            ts_recent: Instant::ZERO,
            last_ack_sent: 0,
            unacked: 0,
            delack_deadline: None,
            next: None,
            out: VecDeque::new(),
            stats: ReceiverStats::default(),
        }
    }

    /// The next segment expected in order.
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }

    /// A data segment arrived.
    pub fn handle_input(&mut self, now: Instant, seg: &TcpData) {
        let _ = now;
        if seg.dummy && self.on_dummy(seg) {
            return;
        }
        self.stats.segments_received += 1;
        let seq = seg.seq;
        let wnd_end = self.rcv_nxt.saturating_add(self.cfg.rwnd.max(1) as u64);
        if seq >= wnd_end || seq == u64::MAX {
            self.out_of_window();
            return;
        }
        // RFC 7323 §4.3 (2): TS.Recent follows segments at or below
        // Last.ACK.sent. With delayed ACKs that echoes the earliest
        // unacknowledged segment; for out-of-order data, the last in-order
        // one; for a segment filling a hole, that segment.
        if seq <= self.last_ack_sent && seg.ts >= self.ts_recent {
            self.ts_recent = seg.ts;
        }
        if seq < self.rcv_nxt {
            // RFC 5681 §4.2: an immediate (duplicate) ACK for data we have.
            self.stats.duplicates += 1;
            self.send_ack();
            return;
        }
        if seq > self.rcv_nxt {
            let (start, end, dup) = self.insert_ooo(seq, seg.len as u64);
            if dup {
                self.stats.duplicates += 1;
            }
            self.push_sack_first(SackBlock { start, end });
            // RFC 5681 §4.2: out-of-order segments get an immediate ACK so
            // the sender sees duplicate ACKs.
            self.send_ack();
            return;
        }
        // In order.
        let filled_hole = self.top.is_some();
        self.rcv_nxt += 1;
        self.stats.delivered_bytes += seg.len as u64;
        self.stats.delivered_segments += 1;
        // The lowest out-of-order range: the tree's first, else `top`.
        let lowest = if let Some(entry) = self.ooo.first_entry() {
            (*entry.key() == self.rcv_nxt).then(|| entry.remove())
        } else if self.top.is_some_and(|t| t.0 == self.rcv_nxt) {
            self.top.take().map(|t| (t.1, t.2))
        } else {
            None
        };
        if let Some((end, bytes)) = lowest {
            let n = end - self.rcv_nxt;
            self.stats.delivered_bytes += bytes;
            self.stats.delivered_segments += n;
            self.stats.buffered_segments -= n;
            self.rcv_nxt = end;
        }
        self.prune_sacks();
        if filled_hole || !self.cfg.delayed_ack {
            // RFC 5681 §4.2: ACK at once a segment that fills a gap.
            self.send_ack();
            return;
        }
        self.unacked += 1;
        if self.unacked >= 2 {
            // RFC 5681 §4.2: an ACK for at least every second full segment.
            self.send_ack();
        } else if self.delack_deadline.is_none() {
            self.delack_deadline = Some(now + self.cfg.delack_timeout);
        }
    }

    /// The delayed-ACK timer fired (a call with nothing due is ignored).
    pub fn handle_timeout(&mut self, now: Instant) {
        if let Some(d) = self.delack_deadline {
            if now >= d {
                self.send_ack();
            }
        }
    }

    /// The next ACK to send.
    pub fn poll_transmit(&mut self, _now: Instant) -> Option<TcpAck> {
        let a = self.next.take();
        if a.is_some() && !self.out.is_empty() {
            self.next = self.out.pop_front();
        }
        a
    }

    /// When the delayed-ACK timer expires.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.delack_deadline
    }

    /// Counters.
    pub fn stats(&self) -> ReceiverStats {
        self.stats
    }

    /// Configuration.
    pub fn config(&self) -> &ReceiverConfig {
        &self.cfg
    }

    /// A TCP-Peach dummy (paper 002 §III-A): echoed if the receiver knows
    /// dummies (true: the segment is used up), else treated as data.
    /// Out of line (`#[cold]`): only TCP-Peach sends dummies.
    #[cold]
    #[inline(never)]
    fn on_dummy(&mut self, seg: &TcpData) -> bool {
        self.stats.dummies_received += 1;
        if self.cfg.echo_dummy {
            // A dummy carries no data: it never moves RCV.NXT or
            // TS.Recent; its echo carries its own timestamp so that
            // TCP-Peach can time it.
            let mut ack = self.build_ack();
            ack.ts_echo = seg.ts;
            ack.dummy_echo = true;
            // The echo repeats the last cumulative ACK sent: data a
            // delayed ACK is still holding is acknowledged by that ACK,
            // which would otherwise follow the echo as a duplicate.
            ack.ack = self.last_ack_sent;
            self.stats.acks_sent += 1;
            self.queue(ack);
            return true;
        }
        // A plain receiver ignores the mark (paper 002 §III-A): it
        // sees a copy of the last data segment, usually one it already
        // has, and treats it as any data segment.
        false
    }

    /// RFC 793 §3.9: an unacceptable segment is dropped and answered with
    /// an ACK; it must not update TS.Recent (RFC 7323 §4.3). Out of line
    /// (`#[cold]`): rare.
    #[cold]
    #[inline(never)]
    fn out_of_window(&mut self) {
        self.stats.out_of_window += 1;
        self.send_ack();
    }

    #[inline]
    fn build_ack(&self) -> TcpAck {
        // The whole list: its entries past `sack_len` are default.
        let (sack, sack_len) = if self.cfg.sack {
            (self.sack_list, self.sack_len as u8)
        } else {
            ([SackBlock::default(); MAX_SACK_BLOCKS], 0)
        };
        TcpAck {
            ack: self.rcv_nxt,
            wnd: self.cfg.rwnd,
            ts_echo: self.ts_recent,
            sack,
            sack_len,
            dummy_echo: false,
        }
    }

    /// Queue `ack` behind the ACKs not yet polled.
    #[inline]
    fn queue(&mut self, ack: TcpAck) {
        if self.next.is_none() {
            self.next = Some(ack);
        } else {
            self.out.push_back(ack);
        }
    }

    fn send_ack(&mut self) {
        let ack = self.build_ack();
        self.last_ack_sent = self.rcv_nxt;
        self.unacked = 0;
        self.delack_deadline = None;
        self.stats.acks_sent += 1;
        self.queue(ack);
    }

    /// Buffer segment `seq` (> rcv_nxt); returns the range now holding it
    /// and whether it was already there.
    fn insert_ooo(&mut self, seq: u64, len: u64) -> (u64, u64, bool) {
        let Some(top) = self.top.as_mut() else {
            self.stats.buffered_segments += 1;
            self.top = Some((seq, seq + 1, len));
            return (seq, seq + 1, false);
        };
        if seq >= top.0 {
            if seq < top.1 {
                return (top.0, top.1, true);
            }
            self.stats.buffered_segments += 1;
            if seq == top.1 {
                // The common case: the next segment above the hole.
                top.1 = seq + 1;
                top.2 += len;
                return (top.0, top.1, false);
            }
            // A new highest range, above a new hole.
            let (ts, te, tb) = *top;
            self.ooo.insert(ts, (te, tb));
            self.top = Some((seq, seq + 1, len));
            return (seq, seq + 1, false);
        }
        let (start, end, dup) = self.insert_below_top(seq, len);
        if dup {
            return (start, end, true);
        }
        // The range holding `seq` may now reach `top`: they become one.
        match self.top {
            Some((ts, te, tb)) if ts == end => {
                let bytes = self.ooo.remove(&start).map_or(0, |v| v.1);
                self.top = Some((start, te, bytes + tb));
                (start, te, false)
            }
            _ => (start, end, false),
        }
    }

    /// [`Self::insert_ooo`] for a segment below `top`, in the tree.
    fn insert_below_top(&mut self, seq: u64, len: u64) -> (u64, u64, bool) {
        let mut extended = None;
        if let Some((&ps, pv)) = self.ooo.range_mut(..=seq).next_back() {
            if pv.0 > seq {
                return (ps, pv.0, true);
            }
            if pv.0 == seq {
                // Grow the range below in place: no node churn when data
                // keeps arriving above a hole.
                pv.0 = seq + 1;
                pv.1 += len;
                extended = Some(ps);
            }
        }
        self.stats.buffered_segments += 1;
        let start = match extended {
            Some(ps) => ps,
            None => {
                self.ooo.insert(seq, (seq + 1, len));
                seq
            }
        };
        // Merge with the range that starts right above.
        if let Some((nend, nbytes)) = self.ooo.remove(&(seq + 1)) {
            if let Some(v) = self.ooo.get_mut(&start) {
                v.0 = nend;
                v.1 += nbytes;
            }
        }
        let end = self.ooo.get(&start).map_or(seq + 1, |v| v.0);
        (start, end, false)
    }

    /// RFC 2018 §4: the first block holds the segment that triggered the
    /// ACK; the others repeat the most recently reported blocks, minus any
    /// the new one now covers.
    fn push_sack_first(&mut self, first: SackBlock) {
        let mut list = [SackBlock::default(); MAX_SACK_BLOCKS];
        list[0] = first;
        let mut n = 1;
        for b in &self.sack_list[..self.sack_len] {
            if n == MAX_SACK_BLOCKS {
                break;
            }
            let overlaps = b.start <= first.end && first.start <= b.end;
            if !overlaps && b.end > self.rcv_nxt {
                list[n] = *b;
                n += 1;
            }
        }
        self.sack_list = list;
        self.sack_len = n;
    }

    fn prune_sacks(&mut self) {
        let mut n = 0;
        for i in 0..self.sack_len {
            let b = self.sack_list[i];
            if b.end > self.rcv_nxt {
                self.sack_list[n] = b;
                n += 1;
            }
        }
        // Keep the entries past the valid ones default (see `sack_list`).
        for b in &mut self.sack_list[n..self.sack_len] {
            *b = SackBlock::default();
        }
        self.sack_len = n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(seq: u64, ms: u64) -> TcpData {
        TcpData {
            seq,
            len: 1000,
            ts: Instant(ms * 1_000_000),
            retransmit: false,
            dummy: false,
        }
    }

    fn t(ms: u64) -> Instant {
        Instant(ms * 1_000_000)
    }

    fn rx(cfg: ReceiverConfig) -> TcpReceiver {
        TcpReceiver::new(cfg)
    }

    fn one(r: &mut TcpReceiver, now: Instant, s: TcpData) -> TcpAck {
        r.handle_input(now, &s);
        let a = r.poll_transmit(now).expect("an ACK");
        assert!(r.poll_transmit(now).is_none());
        a
    }

    fn blocks(a: &TcpAck) -> Vec<(u64, u64)> {
        a.sack_blocks().iter().map(|b| (b.start, b.end)).collect()
    }

    #[test]
    fn cumulative_ack_and_delivery() {
        let mut r = rx(ReceiverConfig::default());
        for i in 0..5 {
            let a = one(&mut r, t(i), seg(i, i));
            assert_eq!(a.ack, i + 1);
            assert_eq!(a.ts_echo, t(i));
            assert_eq!(a.wnd, 10_000);
            assert_eq!(a.sack_len, 0);
        }
        let mut last = seg(5, 5);
        last.len = 17;
        one(&mut r, t(5), last);
        assert_eq!(r.stats().delivered_bytes, 5017);
        assert_eq!(r.stats().acks_sent, 6);
    }

    #[test]
    fn sack_block_ordering() {
        let mut r = rx(ReceiverConfig::default());
        one(&mut r, t(0), seg(0, 0));
        // 1 lost; 2, 3 arrive; 4 lost; 5 arrives; 6 lost; 7 arrives.
        let a = one(&mut r, t(1), seg(2, 2));
        assert_eq!((a.ack, blocks(&a)), (1, vec![(2, 3)]));
        assert_eq!(a.ts_echo, t(0), "out of order echoes the last in-order ts");
        let a = one(&mut r, t(2), seg(3, 3));
        assert_eq!(blocks(&a), vec![(2, 4)]);
        let a = one(&mut r, t(3), seg(5, 5));
        assert_eq!(blocks(&a), vec![(5, 6), (2, 4)]);
        let a = one(&mut r, t(4), seg(7, 7));
        assert_eq!(blocks(&a), vec![(7, 8), (5, 6), (2, 4)]);
        let a = one(&mut r, t(5), seg(9, 9));
        assert_eq!(blocks(&a), vec![(9, 10), (7, 8), (5, 6)]);
        // 4 fills the hole between 2..4 and 5..6: the merged block comes
        // first and the older blocks it covers disappear.
        let a = one(&mut r, t(6), seg(4, 4));
        assert_eq!(a.ack, 1);
        assert_eq!(blocks(&a), vec![(2, 6), (9, 10), (7, 8)]);
        // 1 fills the first hole: cumulative ACK jumps, the block goes.
        let a = one(&mut r, t(7), seg(1, 20));
        assert_eq!(a.ack, 6);
        assert_eq!(a.ts_echo, t(20), "hole-filling segment's ts is echoed");
        assert_eq!(blocks(&a), vec![(9, 10), (7, 8)]);
        assert_eq!(r.stats().delivered_bytes, 6000);
        assert_eq!(r.stats().buffered_segments, 2);
        // No SACK: no blocks at all.
        let mut r = rx(ReceiverConfig {
            sack: false,
            ..ReceiverConfig::default()
        });
        let a = one(&mut r, t(0), seg(3, 0));
        assert_eq!((a.ack, a.sack_len), (0, 0));
    }

    #[test]
    fn delayed_ack_every_second_segment_and_timer() {
        let mut r = rx(ReceiverConfig {
            delayed_ack: true,
            ..ReceiverConfig::default()
        });
        r.handle_input(t(0), &seg(0, 0));
        assert!(r.poll_transmit(t(0)).is_none());
        assert_eq!(r.poll_timeout(), Some(t(100)));
        r.handle_input(t(1), &seg(1, 1));
        let a = r.poll_transmit(t(1)).expect("ACK on second segment");
        assert_eq!(a.ack, 2);
        assert_eq!(a.ts_echo, t(0), "delayed ACK echoes the earliest unacked");
        assert_eq!(r.poll_timeout(), None);
        r.handle_input(t(10), &seg(2, 10));
        assert!(r.poll_transmit(t(10)).is_none());
        // An early wake-up does nothing.
        r.handle_timeout(t(50));
        assert!(r.poll_transmit(t(50)).is_none());
        r.handle_timeout(t(110));
        let a = r.poll_transmit(t(110)).expect("ACK on timer");
        assert_eq!((a.ack, a.ts_echo), (3, t(10)));
        assert_eq!(r.poll_timeout(), None);
        // Out of order: immediate, even with one in-order segment pending.
        r.handle_input(t(200), &seg(3, 200));
        assert!(r.poll_transmit(t(200)).is_none());
        let a = one(&mut r, t(201), seg(5, 201));
        assert_eq!(a.ack, 4);
        // Filling the hole: immediate.
        let a = one(&mut r, t(202), seg(4, 202));
        assert_eq!(a.ack, 6);
        assert_eq!(r.poll_timeout(), None);
    }

    #[test]
    fn duplicates_are_counted_and_acked() {
        let mut r = rx(ReceiverConfig::default());
        one(&mut r, t(0), seg(0, 0));
        one(&mut r, t(1), seg(2, 1));
        let a = one(&mut r, t(2), seg(0, 2));
        assert_eq!(a.ack, 1);
        let a = one(&mut r, t(3), seg(2, 3));
        assert_eq!(a.ack, 1);
        assert_eq!(blocks(&a), vec![(2, 3)]);
        let s = r.stats();
        assert_eq!(
            (s.duplicates, s.segments_received, s.delivered_bytes),
            (2, 4, 1000)
        );
    }

    #[test]
    fn dummy_echo_on_and_off() {
        let mut d = seg(7, 5);
        d.dummy = true;
        let mut r = rx(ReceiverConfig::default());
        one(&mut r, t(0), seg(0, 0));
        let a = one(&mut r, t(5), d);
        assert!(a.dummy_echo);
        assert_eq!((a.ack, a.ts_echo), (1, t(5)));
        assert_eq!(r.stats().dummies_received, 1);
        assert_eq!(r.stats().delivered_bytes, 1000);
        assert_eq!(r.stats().buffered_segments, 0);
        let mut r = rx(ReceiverConfig {
            echo_dummy: false,
            ..ReceiverConfig::default()
        });
        one(&mut r, t(0), seg(0, 0));
        // A copy of segment 0, which it has: a duplicate ACK, unmarked.
        let mut d0 = d;
        d0.seq = 0;
        let a = one(&mut r, t(5), d0);
        assert!(!a.dummy_echo);
        // RFC 7323 §4.3: SEG.SEQ <= Last.ACK.sent, so TS.Recent is taken.
        assert_eq!((a.ack, a.ts_echo), (1, t(5)));
        assert_eq!(r.stats().duplicates, 1);
        assert_eq!(r.rcv_nxt(), 1);
        // A copy of a segment it lacks is data to a plain receiver.
        d0.seq = 1;
        let a = one(&mut r, t(6), d0);
        assert!(!a.dummy_echo);
        assert_eq!(r.rcv_nxt(), 2, "the mark is ignored, the payload kept");
        assert_eq!(a.ack, 2);
    }

    #[test]
    fn an_echo_leaves_held_data_to_the_delayed_ack() {
        let mut r = rx(ReceiverConfig {
            delayed_ack: true,
            ..ReceiverConfig::default()
        });
        r.handle_input(t(0), &seg(0, 0));
        assert!(r.poll_transmit(t(0)).is_none(), "segment 0 is held");
        let mut d = seg(0, 1);
        d.dummy = true;
        let echo = one(&mut r, t(1), d);
        assert!(echo.dummy_echo);
        assert_eq!(echo.ack, 0, "the echo repeats the last ACK sent");
        let due = r.poll_timeout().expect("the delayed ACK is still armed");
        r.handle_timeout(due);
        let a = r.poll_transmit(due).expect("the delayed ACK");
        assert_eq!(a.ack, 1, "and it is not a duplicate");
    }

    #[test]
    fn odd_segments_do_not_panic() {
        let mut r = rx(ReceiverConfig::default());
        for s in [u64::MAX, u64::MAX - 1, 10_000, 9_999] {
            r.handle_input(t(0), &seg(s, 0));
        }
        while r.poll_transmit(t(0)).is_some() {}
        assert_eq!(r.stats().out_of_window, 3);
        assert_eq!(r.stats().buffered_segments, 1);
    }

    /// Random arrivals (reordered, duplicated, some never sent, some past
    /// the window) against a model that keeps every received segment in a
    /// map: after each one the cumulative ACK, the first SACK block (the
    /// maximal run holding an out-of-order segment, RFC 2018 §4) and the
    /// counters of delivered and buffered data agree. This covers the
    /// highest range kept apart from the tree (`top`): extending it,
    /// opening a new one above a hole, filling the hole just below it,
    /// and delivering it.
    #[test]
    fn out_of_order_ranges_match_a_map_of_segments() {
        use crate::rng::Rng;
        use std::collections::BTreeMap;
        for seed in 0..20 {
            let mut rng = Rng::new(seed);
            let w = 64u64;
            let mut r = rx(ReceiverConfig {
                rwnd: w as u32,
                ..ReceiverConfig::default()
            });
            // Segment -> payload bytes, above the model's RCV.NXT.
            let mut held = BTreeMap::new();
            let (mut nxt, mut delivered) = (0u64, 0u64);
            for i in 0..4000u64 {
                // Mostly segments within the window above the cumulative
                // ACK, with holes, repeats and a few beyond the window.
                let seq = nxt + rng.below(w + 4);
                let len = 1 + rng.below(1000);
                let mut d = seg(seq, i);
                d.len = len as u32;
                let a = one(&mut r, t(i), d);
                if seq < nxt + w {
                    held.entry(seq).or_insert(len);
                }
                while let Some(l) = held.remove(&nxt) {
                    delivered += l;
                    nxt += 1;
                }
                let what = format!("seed {seed} step {i} seq {seq}");
                assert_eq!(a.ack, nxt, "{what}");
                // The blocks past the valid ones are default, as in an
                // ACK built with only the valid ones.
                let unused = &a.sack[a.sack_len as usize..];
                assert!(unused.iter().all(|b| *b == SackBlock::default()), "{what}");
                assert_eq!(r.stats().delivered_bytes, delivered, "{what}");
                assert_eq!(r.stats().delivered_segments, nxt, "{what}");
                assert_eq!(r.stats().buffered_segments, held.len() as u64, "{what}");
                if seq > nxt && seq < nxt + w {
                    let (mut lo, mut hi) = (seq, seq + 1);
                    while held.contains_key(&(lo - 1)) {
                        lo -= 1;
                    }
                    while held.contains_key(&hi) {
                        hi += 1;
                    }
                    assert_eq!(blocks(&a)[0], (lo, hi), "{what}");
                }
            }
            assert!(nxt > 500, "seed {seed}: {nxt}");
        }
    }

    /// ACKs generated by several inputs before a poll come out in order
    /// (the first waits apart from the others).
    #[test]
    fn acks_queued_before_a_poll_keep_their_order() {
        let mut r = rx(ReceiverConfig::default());
        for (i, sq) in [0u64, 2, 3, 1, 5].into_iter().enumerate() {
            r.handle_input(t(i as u64), &seg(sq, i as u64));
        }
        let acks: Vec<_> = std::iter::from_fn(|| r.poll_transmit(t(9)))
            .map(|a| (a.ack, blocks(&a)))
            .collect();
        assert_eq!(
            acks,
            vec![
                (1, vec![]),
                (1, vec![(2, 3)]),
                (1, vec![(2, 4)]),
                (4, vec![]),
                (4, vec![(5, 6)]),
            ]
        );
        r.handle_input(t(10), &seg(4, 10));
        assert_eq!(r.poll_transmit(t(10)).map(|a| a.ack), Some(6));
        assert!(r.poll_transmit(t(10)).is_none());
    }
}
