//! Link queues: DropTail, RED and strict two-class priority.
//!
//! A queue holds packet handles; the link that owns it serialises the head.
//! The packet being transmitted is not in the queue (as in ns-2, whose queue
//! monitors count only waiting packets).

pub mod red;

use std::collections::VecDeque;

use satcc_proto::rng::Rng;
use satcc_proto::{Duration, Instant};

use crate::net::packet::DropReason;
use crate::scenario::QueueSpec;
use red::{Red, RedVerdict};

/// A packet handle in a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Queued {
    /// Index of the packet in the simulator's packet store.
    pub idx: u32,
    /// Bytes on the wire.
    pub size: u32,
    /// Low-priority class.
    pub low: bool,
}

/// What happened to an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// Queued (or may go straight to the wire).
    Accepted,
    /// The arriving packet is dropped.
    Dropped(DropReason),
    /// The arriving packet is queued and this queued low-priority packet
    /// is pushed out to make room.
    PushedOut(Queued),
}

#[derive(Clone, Debug)]
enum Kind {
    DropTail,
    Red(Box<Red>),
    Priority {
        low: VecDeque<Queued>,
        low_bytes: u64,
    },
}

/// A link's queue.
///
/// `repr(C)`: the packets' deque and the kind's tag, read on every
/// arrival, share one cache line (see the simulator's `Link`).
#[derive(Clone, Debug)]
#[repr(C)]
pub struct Queue {
    q: VecDeque<Queued>,
    bytes: u64,
    limit_pkts: u64,
    limit_bytes: u64,
    kind: Kind,
}

impl Queue {
    /// The queue a scenario describes, for a link of `rate_bps` and
    /// propagation `delay` (ns-2's automatic RED weight depends on both).
    pub fn new(spec: &QueueSpec, rate_bps: u64, delay: Duration) -> Queue {
        let (kind, lp, lb) = match spec {
            QueueSpec::DropTail { limit, limit_bytes } => (
                Kind::DropTail,
                limit.map_or(u64::MAX, u64::from),
                limit_bytes.map_or(u64::MAX, |b| b.0),
            ),
            QueueSpec::Red(r) => (
                Kind::Red(Box::new(Red::with_link_delay(r, rate_bps, delay))),
                u64::from(r.limit),
                u64::MAX,
            ),
            QueueSpec::Priority { limit, limit_bytes } => (
                Kind::Priority {
                    low: VecDeque::new(),
                    low_bytes: 0,
                },
                limit.map_or(u64::MAX, u64::from),
                limit_bytes.map_or(u64::MAX, |b| b.0),
            ),
        };
        Queue {
            kind,
            q: VecDeque::new(),
            bytes: 0,
            limit_pkts: lp,
            limit_bytes: lb,
        }
    }

    /// Packets waiting.
    pub fn len(&self) -> usize {
        self.q.len()
            + match &self.kind {
                Kind::Priority { low, .. } => low.len(),
                _ => 0,
            }
    }

    /// No packet waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes waiting.
    pub fn bytes(&self) -> u64 {
        self.bytes
            + match &self.kind {
                Kind::Priority { low_bytes, .. } => *low_bytes,
                _ => 0,
            }
    }

    /// The limit in packets, if any.
    pub fn limit_pkts(&self) -> Option<u64> {
        (self.limit_pkts != u64::MAX).then_some(self.limit_pkts)
    }

    fn fits(&self, extra_pkts: u64, extra_bytes: u64) -> bool {
        self.len() as u64 + extra_pkts <= self.limit_pkts
            && self.bytes() + extra_bytes <= self.limit_bytes
    }

    /// Decides on an arriving packet and queues it if accepted.
    /// `idle_since` is when the link last went idle, if it is idle now
    /// (RED ages its average over idle periods).
    #[inline(always)]
    pub fn enqueue(
        &mut self,
        now: Instant,
        p: Queued,
        idle_since: Option<Instant>,
        rng: &mut Rng,
    ) -> Admit {
        match &mut self.kind {
            Kind::DropTail => {
                if !self.fits(1, u64::from(p.size)) {
                    return Admit::Dropped(DropReason::QueueFull);
                }
            }
            Kind::Red(red) => {
                if let (Some(t), true) = (idle_since, self.q.is_empty()) {
                    red.on_empty(t);
                }
                match red.on_arrival_sized(now, self.q.len(), self.bytes, p.size, rng) {
                    RedVerdict::Enqueue => {}
                    RedVerdict::EarlyDrop => return Admit::Dropped(DropReason::RedEarly),
                    RedVerdict::ForcedDrop => return Admit::Dropped(DropReason::QueueFull),
                }
            }
            Kind::Priority { .. } => return self.enqueue_priority(p),
        }
        self.bytes += u64::from(p.size);
        self.q.push_back(p);
        Admit::Accepted
    }

    fn enqueue_priority(&mut self, p: Queued) -> Admit {
        let size = u64::from(p.size);
        if self.fits(1, size) {
            self.push_class(p);
            return Admit::Accepted;
        }
        // A full buffer never costs a high-priority packet its place while a
        // low-priority one holds a slot (paper 002 §II: dummies must not
        // hurt data). A low arrival into a full queue is simply dropped.
        if p.low {
            return Admit::Dropped(DropReason::QueueFull);
        }
        let Kind::Priority { low, low_bytes } = &mut self.kind else {
            unreachable!("enqueue_priority on a non-priority queue")
        };
        // Push out the most recently queued low-priority packet: the one
        // that would have waited longest anyway.
        match low.pop_back() {
            Some(victim) => {
                *low_bytes -= u64::from(victim.size);
                if self.fits(1, size) {
                    self.push_class(p);
                    Admit::PushedOut(victim)
                } else {
                    // One victim freed too few bytes; put it back and drop
                    // the arrival rather than evict several packets.
                    let Kind::Priority { low, low_bytes } = &mut self.kind else {
                        unreachable!()
                    };
                    *low_bytes += u64::from(victim.size);
                    low.push_back(victim);
                    Admit::Dropped(DropReason::QueueFull)
                }
            }
            None => Admit::Dropped(DropReason::QueueFull),
        }
    }

    fn push_class(&mut self, p: Queued) {
        match &mut self.kind {
            Kind::Priority { low, low_bytes } if p.low => {
                *low_bytes += u64::from(p.size);
                low.push_back(p);
            }
            _ => {
                self.bytes += u64::from(p.size);
                self.q.push_back(p);
            }
        }
    }

    /// The size of the packet [`Self::dequeue`] would return next.
    pub fn head_size(&self) -> Option<u32> {
        match (self.q.front(), &self.kind) {
            (Some(p), _) => Some(p.size),
            (None, Kind::Priority { low, .. }) => low.front().map(|p| p.size),
            (None, _) => None,
        }
    }

    /// The next packet to transmit: high priority first.
    pub fn dequeue(&mut self) -> Option<Queued> {
        if let Some(p) = self.q.pop_front() {
            self.bytes -= u64::from(p.size);
            return Some(p);
        }
        if let Kind::Priority { low, low_bytes } = &mut self.kind {
            if let Some(p) = low.pop_front() {
                *low_bytes -= u64::from(p.size);
                return Some(p);
            }
        }
        None
    }

    /// First in, first out: the order packets leave is the order they
    /// were accepted (not a priority queue, which may also push one out).
    pub fn is_fifo(&self) -> bool {
        !matches!(self.kind, Kind::Priority { .. })
    }

    /// True for a queue that must see every arrival, even to an idle link
    /// with nothing queued (RED: its average ages over idle time).
    pub fn sees_every_arrival(&self) -> bool {
        matches!(self.kind, Kind::Red(_))
    }

    /// RED's average queue estimate, if this is a RED queue.
    pub fn red_avg(&self) -> Option<f64> {
        match &self.kind {
            Kind::Red(r) => Some(r.avg()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Bytes;

    fn pkt(idx: u32, low: bool) -> Queued {
        Queued {
            idx,
            size: 1000,
            low,
        }
    }

    #[test]
    fn droptail_limits_packets_and_bytes() {
        let mut rng = Rng::new(1);
        let mut q = Queue::new(
            &QueueSpec::DropTail {
                limit: Some(2),
                limit_bytes: None,
            },
            1_000_000,
            Duration::ZERO,
        );
        let t = Instant::ZERO;
        assert_eq!(q.enqueue(t, pkt(1, false), None, &mut rng), Admit::Accepted);
        assert_eq!(q.enqueue(t, pkt(2, false), None, &mut rng), Admit::Accepted);
        assert_eq!(
            q.enqueue(t, pkt(3, false), None, &mut rng),
            Admit::Dropped(DropReason::QueueFull)
        );
        assert_eq!(q.dequeue().map(|p| p.idx), Some(1));
        let mut qb = Queue::new(
            &QueueSpec::DropTail {
                limit: None,
                limit_bytes: Some(Bytes(2500)),
            },
            1_000_000,
            Duration::ZERO,
        );
        assert_eq!(
            qb.enqueue(t, pkt(1, false), None, &mut rng),
            Admit::Accepted
        );
        assert_eq!(
            qb.enqueue(t, pkt(2, false), None, &mut rng),
            Admit::Accepted
        );
        assert!(matches!(
            qb.enqueue(t, pkt(3, false), None, &mut rng),
            Admit::Dropped(_)
        ));
        assert_eq!(qb.bytes(), 2000);
    }

    #[test]
    fn priority_serves_low_only_when_no_high_waits_and_drops_it_first() {
        let mut rng = Rng::new(1);
        let mut q = Queue::new(
            &QueueSpec::Priority {
                limit: Some(3),
                limit_bytes: None,
            },
            1_000_000,
            Duration::ZERO,
        );
        let t = Instant::ZERO;
        assert_eq!(q.enqueue(t, pkt(1, true), None, &mut rng), Admit::Accepted);
        assert_eq!(q.enqueue(t, pkt(2, false), None, &mut rng), Admit::Accepted);
        assert_eq!(q.enqueue(t, pkt(3, true), None, &mut rng), Admit::Accepted);
        // Full: a high arrival pushes out the newest low packet.
        assert_eq!(
            q.enqueue(t, pkt(4, false), None, &mut rng),
            Admit::PushedOut(pkt(3, true))
        );
        // Full of one low and two high: a low arrival is dropped.
        assert_eq!(
            q.enqueue(t, pkt(5, true), None, &mut rng),
            Admit::Dropped(DropReason::QueueFull)
        );
        // High pushes out the last low packet.
        assert_eq!(
            q.enqueue(t, pkt(6, false), None, &mut rng),
            Admit::PushedOut(pkt(1, true))
        );
        // Now all high: a high arrival is dropped.
        assert_eq!(
            q.enqueue(t, pkt(7, false), None, &mut rng),
            Admit::Dropped(DropReason::QueueFull)
        );
        let order: Vec<u32> = std::iter::from_fn(|| q.dequeue().map(|p| p.idx)).collect();
        assert_eq!(order, vec![2, 4, 6]);
        assert_eq!(q.len(), 0);
        assert_eq!(q.bytes(), 0);
        // Low is served once high is gone.
        q.enqueue(t, pkt(8, true), None, &mut rng);
        q.enqueue(t, pkt(9, false), None, &mut rng);
        assert_eq!(q.dequeue().map(|p| p.idx), Some(9));
        assert_eq!(q.dequeue().map(|p| p.idx), Some(8));
    }
}
