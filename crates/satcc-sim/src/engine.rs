//! The event queue: a 4-ary min-heap ordered by (time, insertion sequence),
//! so events at the same nanosecond run in the order they were scheduled and
//! a run is reproducible to the bit.

use satcc_proto::Instant;

/// What happens at an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A link finished serialising a packet and may start the next.
    LinkFree(u32),
    /// The packet at the head of a link's pipe reaches the far end. A
    /// link's arrivals are in FIFO order (constant delay, serialised
    /// transmissions), so only the head of each pipe is in the heap: the
    /// heap holds one event per busy link instead of one per packet on a
    /// wire.
    Arrive(u32),
    /// An endpoint's timer (lazy: the endpoint checks what is due).
    Wake(u32),
    /// A packet held back by its sender's `send_jitter` enters the
    /// network (the packet-store index).
    Inject(u32),
    /// An application action of a flow.
    App {
        /// Flow instance.
        flow: u32,
        /// Which action.
        action: AppAction,
    },
    /// Take a time-series sample.
    Sample,
    /// Snapshot counters at `record.measure_from`.
    MeasureStart,
    /// Apply topology snapshot `k` (links down/up, routes recomputed).
    Snapshot(u32),
}

/// Application actions scheduled in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppAction {
    /// The flow starts.
    Start,
    /// The flow stops.
    Stop,
    /// An ON/OFF source switches ON.
    On,
    /// An ON/OFF source switches OFF.
    Off,
    /// A file arrives (Poisson files) or the next sequential file starts.
    File,
}

/// Children per node of the implicit heap. A 4-ary heap is half as deep
/// as a binary one, and the four children of a node share a cache line of
/// keys, so a pop does fewer, cheaper levels.
const ARITY: usize = 4;

/// The ordering key of an entry: time in the high 64 bits, insertion
/// sequence in the low 64, so one integer compare orders by
/// (time, sequence).
#[inline(always)]
fn key(time: u64, seq: u64) -> u128 {
    (u128::from(time) << 64) | u128::from(seq)
}

/// A key no event has (it would need time and sequence both `u64::MAX`):
/// pads the key vector so every node with a child has a full set of
/// `ARITY` child slots, and the smallest child is found without branches.
const PAD: u128 = u128::MAX;

/// The pending events of a run.
///
/// A hand-written 4-ary min-heap. Keys and payloads live in parallel
/// vectors (`keys[i]` goes with `evs[i]` for `i < evs.len()`) so sifting
/// only scans the keys; `keys` has at least `ARITY` extra `PAD` slots past
/// the live entries. Keys are unique (the sequence number never repeats),
/// so the pop order is exactly (time, insertion sequence).
#[derive(Debug, Default)]
pub struct EventQueue {
    keys: Vec<u128>,
    evs: Vec<Event>,
    seq: u64,
    processed: u64,
}

impl EventQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Schedules `ev` at `at`.
    #[inline]
    pub fn push(&mut self, at: Instant, ev: Event) {
        self.seq += 1;
        let k = key(at.as_nanos(), self.seq);
        let mut i = self.evs.len();
        self.evs.push(ev);
        if self.keys.len() < i + 1 + ARITY {
            self.keys.resize(i + 1 + ARITY, PAD);
        }
        // Sift up with a hole: move parents down until `k` fits.
        while i > 0 {
            let parent = (i - 1) / ARITY;
            let pk = self.keys[parent];
            if pk <= k {
                break;
            }
            self.keys[i] = pk;
            self.evs[i] = self.evs[parent];
            i = parent;
        }
        self.keys[i] = k;
        self.evs[i] = ev;
    }

    /// The next event if it is due no later than `until`.
    #[inline]
    pub fn pop_until(&mut self, until: Instant) -> Option<(Instant, Event)> {
        let last_ev = *self.evs.last()?;
        let top = self.keys[0];
        if (top >> 64) as u64 > until.as_nanos() {
            return None;
        }
        let ev = self.evs[0];
        self.evs.pop();
        let n = self.evs.len();
        // Take the last entry out (leaving padding) and sift it down from
        // the root's hole.
        let last_k = std::mem::replace(&mut self.keys[n], PAD);
        if n > 0 {
            let mut i = 0;
            loop {
                let first = i * ARITY + 1;
                if first >= n {
                    break;
                }
                let c: &[u128; ARITY] = self.keys[first..first + ARITY].try_into().expect("padded");
                let (a, ak) = if c[1] < c[0] { (1, c[1]) } else { (0, c[0]) };
                let (b, bk) = if c[3] < c[2] { (3, c[3]) } else { (2, c[2]) };
                let (off, best_k) = if bk < ak { (b, bk) } else { (a, ak) };
                if last_k <= best_k {
                    break;
                }
                let best = first + off;
                self.keys[i] = best_k;
                self.evs[i] = self.evs[best];
                i = best;
            }
            self.keys[i] = last_k;
            self.evs[i] = last_ev;
        }
        self.processed += 1;
        Some((Instant((top >> 64) as u64), ev))
    }

    /// Events handed out so far.
    pub fn processed(&self) -> u64 {
        self.processed
    }
    /// Events still pending.
    pub fn len(&self) -> usize {
        self.evs.len()
    }
    /// No events pending.
    pub fn is_empty(&self) -> bool {
        self.evs.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_break_by_insertion_order() {
        let mut q = EventQueue::new();
        q.push(Instant(5), Event::Wake(1));
        q.push(Instant(3), Event::Wake(2));
        q.push(Instant(5), Event::Wake(3));
        q.push(Instant(3), Event::Wake(4));
        let order: Vec<Event> =
            std::iter::from_fn(|| q.pop_until(Instant::MAX).map(|(_, e)| e)).collect();
        assert_eq!(
            order,
            vec![
                Event::Wake(2),
                Event::Wake(4),
                Event::Wake(1),
                Event::Wake(3)
            ]
        );
        assert_eq!(q.processed(), 4);
    }

    #[test]
    fn pop_until_respects_the_horizon() {
        let mut q = EventQueue::new();
        q.push(Instant(10), Event::Sample);
        assert!(q.pop_until(Instant(9)).is_none());
        assert!(q.pop_until(Instant(10)).is_some());
        assert!(q.is_empty());
        assert!(q.pop_until(Instant::MAX).is_none());
    }

    /// Interleaved pushes and pops against a reference that sorts by
    /// (time, insertion sequence), with many ties and horizons.
    #[test]
    fn matches_a_sorted_reference() {
        use satcc_proto::rng::Rng;
        for seed in 0..20u64 {
            let mut rng = Rng::new(seed);
            let mut q = EventQueue::new();
            // (time, seq, payload), kept sorted descending so pop() is the min.
            let mut reference: Vec<(u64, u64, u32)> = Vec::new();
            let mut seq = 0u64;
            let mut now = 0u64;
            let spread = 1 + rng.below(1000);
            for step in 0..20_000u32 {
                let r = rng.below(100);
                if r < 55 {
                    // Times at or after `now`, with frequent ties.
                    let t = now + rng.below(spread);
                    seq += 1;
                    q.push(Instant(t), Event::Wake(step));
                    let at = reference.partition_point(|&e| e > (t, seq, step));
                    reference.insert(at, (t, seq, step));
                } else {
                    let until = if rng.chance(0.2) {
                        now + rng.below(spread)
                    } else {
                        u64::MAX
                    };
                    let want = match reference.last() {
                        Some(&(t, _, p)) if t <= until => {
                            reference.pop();
                            Some((Instant(t), Event::Wake(p)))
                        }
                        _ => None,
                    };
                    let got = q.pop_until(Instant(until));
                    assert_eq!(got, want, "seed {seed} step {step}");
                    if let Some((t, _)) = got {
                        now = t.as_nanos();
                    }
                }
                assert_eq!(q.len(), reference.len());
            }
            while let Some((t, _, p)) = reference.pop() {
                assert_eq!(
                    q.pop_until(Instant::MAX),
                    Some((Instant(t), Event::Wake(p)))
                );
            }
            assert!(q.is_empty());
        }
    }
}
