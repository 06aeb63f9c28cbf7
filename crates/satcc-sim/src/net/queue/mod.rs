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

/// `repr(u8)`: an explicit tag byte, one compare to read, where the
/// default layout kept the tag in the priority deque's niche and took
/// about eight instructions to decode it on every `len()`.
#[derive(Clone, Debug)]
#[repr(u8)]
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

    /// Decides on a packet arriving at an idle link with nothing queued,
    /// which transmits it at once if accepted: the verdict
    /// [`Self::enqueue`] gives, the packet not queued. What `enqueue`
    /// followed by [`Self::dequeue`] did, without the push and pop (an
    /// empty queue's head is the arrival; a priority queue's push-out has
    /// no victim in an empty queue).
    #[inline(always)]
    pub fn admit_to_idle(
        &mut self,
        now: Instant,
        p: Queued,
        idle_since: Instant,
        rng: &mut Rng,
    ) -> Admit {
        debug_assert!(self.is_empty(), "admit_to_idle on a queue holding packets");
        let fits = self.fits(1, u64::from(p.size));
        match &mut self.kind {
            Kind::Red(red) => {
                red.on_empty(idle_since);
                match red.on_arrival_sized(now, 0, 0, p.size, rng) {
                    RedVerdict::Enqueue => Admit::Accepted,
                    RedVerdict::EarlyDrop => Admit::Dropped(DropReason::RedEarly),
                    RedVerdict::ForcedDrop => Admit::Dropped(DropReason::QueueFull),
                }
            }
            // Drop-tail, and a priority queue with nothing to push out.
            _ if fits => Admit::Accepted,
            _ => Admit::Dropped(DropReason::QueueFull),
        }
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

    /// `admit_to_idle` must leave the queue, RED's state and the random
    /// stream exactly as `enqueue` then `dequeue` did (the link's idle
    /// path relies on it for byte-identical runs). Busy periods between
    /// the idle arrivals move RED's average above its thresholds, so
    /// early drops, the idle aging and the count all take part.
    #[test]
    fn admit_to_idle_is_enqueue_then_dequeue() {
        use crate::scenario::{Dur, RedMode, RedSpec};
        let red = |mode, limit, min_th| {
            QueueSpec::Red(RedSpec {
                limit,
                min_th,
                max_th: 0.0,
                weight: 0.05,
                max_p: 0.5,
                gentle: true,
                wait: false,
                mean_pktsize: 700,
                target_delay: Dur(Duration::from_millis(5)),
                mode,
            })
        };
        let specs = [
            red(RedMode::Packets, 100, 2.0),
            red(RedMode::Bytes, 100, 2.0),
            red(RedMode::Packets, 0, 0.0),
            QueueSpec::DropTail {
                limit: Some(3),
                limit_bytes: None,
            },
            QueueSpec::DropTail {
                limit: None,
                limit_bytes: Some(Bytes(500)),
            },
            QueueSpec::Priority {
                limit: Some(0),
                limit_bytes: None,
            },
            QueueSpec::Priority {
                limit: Some(4),
                limit_bytes: None,
            },
        ];
        let mut gen = Rng::new(7);
        let (mut drops, mut accepted) = (0, 0);
        for spec in &specs {
            let mut a = Queue::new(spec, 10_000_000, Duration::from_millis(10));
            let mut b = a.clone();
            let (mut ra, mut rb) = (Rng::new(3), Rng::new(3));
            let mut t = 0u64;
            for k in 0..2000u32 {
                let before = t;
                t += 1 + gen.next_u64() % 2_000_000;
                let now = Instant(t);
                let p = Queued {
                    idx: k,
                    size: 40 + (gen.next_u64() % 1460) as u32,
                    low: gen.next_u64().is_multiple_of(3),
                };
                if k % 10 < 6 {
                    // A busy stretch: arrivals queue up behind a
                    // transmission.
                    let va = a.enqueue(now, p, None, &mut ra);
                    let vb = b.enqueue(now, p, None, &mut rb);
                    assert_eq!(va, vb);
                    continue;
                }
                // The link drains and goes idle (up to 10 ms ago: RED's
                // aging counts a few packet times), then a packet arrives.
                while let (Some(x), Some(y)) = (a.dequeue(), b.dequeue()) {
                    assert_eq!(x, y);
                }
                assert!(a.is_empty() && b.is_empty());
                t += gen.next_u64() % 10_000_000;
                let now = Instant(t);
                let idle_since = Instant(before + (t - before) / 2);
                let va = a.admit_to_idle(now, p, idle_since, &mut ra);
                let vb = b.enqueue(now, p, Some(idle_since), &mut rb);
                assert_eq!(va, vb, "{spec:?} arrival {k}");
                if vb == Admit::Accepted {
                    accepted += 1;
                    assert_eq!(b.dequeue(), Some(p));
                } else {
                    drops += 1;
                }
                assert_eq!((a.len(), a.bytes()), (b.len(), b.bytes()));
                assert_eq!(a.red_avg().map(f64::to_bits), b.red_avg().map(f64::to_bits));
            }
            assert_eq!(ra.next_u64(), rb.next_u64(), "{spec:?}: random streams");
        }
        // Both verdicts occurred on idle arrivals.
        assert!(
            drops > 0 && accepted > 0,
            "{drops} drops, {accepted} accepted"
        );
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
