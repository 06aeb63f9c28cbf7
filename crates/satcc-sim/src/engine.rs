//! The event queue, ordered by (time, rank): the rank of an event is a
//! property of the event itself (its class, then the link, endpoint, flow,
//! packet or snapshot it is about; see [`Event::rank`]), so events at the
//! same nanosecond run in an order that does not depend on the order the
//! code scheduled them in, and a run is reproducible to the bit.
//!
//! Two parts: a calendar (timer wheel) of fixed-width time buckets for the
//! dense near future, where nearly every event of a packet simulation
//! falls (serialisation, propagation, ACK clocks), and a 4-ary heap for the
//! rest (long timers, application events far ahead). Pushing to and
//! popping from the calendar cost the same whatever the number of pending
//! events; the pop order is exactly the heap's.

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

/// Bits of a rank below the class: the entity index.
const CLASS_SHIFT: u32 = 60;

impl Event {
    /// Where the event stands among events at the same nanosecond: its
    /// class in the high 4 bits, then the entity it is about in the low 60.
    ///
    /// Classes, first to last: a topology snapshot (the network at an
    /// instant is the one after its change), the start of measurement
    /// (what happens at that instant is measured), a link's end of
    /// transmission (a link freed at `t` takes its next queued packet
    /// before a packet arriving at `t` is offered to it), a packet's
    /// arrival at a link's far end, a jittered packet's entry into the
    /// network, an endpoint's timer (packets that arrive at a deadline are
    /// seen before the timer fires), an application action, and the
    /// time-series sample (it sees the state after everything at its
    /// instant).
    ///
    /// Within a class: by snapshot, link, endpoint (`2 x flow + side`), or
    /// flow and action. Events about a packet (`Arrive`, `Inject`) are
    /// ranked by the packet's uid instead ([`Event::packet_rank`], given
    /// to [`EventQueue::push_ranked`]): of two packets reaching a router
    /// at the same instant, the one sent first is offered to the next
    /// queue first, as a FIFO would, rather than the one on the link with
    /// the smaller index, which would favour the same flows every time in
    /// a symmetric topology. What `rank` gives for those two is their
    /// class and payload, for the test of the queue alone.
    ///
    /// Two pending events with the same time and rank are the same event
    /// (same class, same entity, same payload), so the order between them
    /// cannot matter: the pop order is a function of the pending set.
    #[inline(always)]
    pub fn rank(self) -> u64 {
        let (class, entity): (u64, u64) = match self {
            Event::Snapshot(k) => (0, u64::from(k)),
            Event::MeasureStart => (1, 0),
            Event::LinkFree(l) => (2, u64::from(l)),
            Event::Arrive(l) => (3, u64::from(l)),
            Event::Inject(i) => (4, u64::from(i)),
            Event::Wake(ep) => (5, u64::from(ep)),
            Event::App { flow, action } => (6, u64::from(flow) * 8 + action as u64),
            Event::Sample => (7, 0),
        };
        (class << CLASS_SHIFT) | entity
    }

    /// The rank of an event about the packet of uid `uid`: the event's
    /// class, then the uid (uids are given in sending order).
    #[inline(always)]
    pub fn packet_rank(self, uid: u64) -> u64 {
        let class = self.rank() >> CLASS_SHIFT;
        (class << CLASS_SHIFT) | (uid & ((1 << CLASS_SHIFT) - 1))
    }
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

/// The ordering key of an entry: time in the high 64 bits, rank in the
/// low 64, so one integer compare orders by (time, rank).
#[inline(always)]
fn key(time: u64, rank: u64) -> u128 {
    (u128::from(time) << 64) | u128::from(rank)
}

/// A key no event has (it would need time and rank both `u64::MAX`, and
/// no class reaches 15):
/// pads the key vector so every node with a child has a full set of
/// `ARITY` child slots, and the smallest child is found without branches.
const PAD: u128 = u128::MAX;

/// A hand-written 4-ary min-heap. Keys and payloads live in parallel
/// vectors (`keys[i]` goes with `evs[i]` for `i < evs.len()`) so sifting
/// only scans the keys; `keys` has at least `ARITY` extra `PAD` slots past
/// the live entries. Equal keys belong to identical events, so the pop
/// order is (time, rank) whatever the order of insertion.
#[derive(Debug, Default)]
struct Heap {
    keys: Vec<u128>,
    evs: Vec<Event>,
}

impl Heap {
    /// The smallest key, `PAD` when empty.
    #[inline]
    fn top(&self) -> u128 {
        if self.evs.is_empty() {
            PAD
        } else {
            self.keys[0]
        }
    }

    // Out of line: rare next to the calendar's pushes, and kept out of
    // them so `EventQueue::push` stays small enough to inline.
    #[inline(never)]
    fn push(&mut self, k: u128, ev: Event) {
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

    /// Removes the top entry (the heap must not be empty).
    #[inline(never)]
    fn pop(&mut self) -> Event {
        let last_ev = *self.evs.last().expect("non-empty heap");
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
        ev
    }
}

/// Width of a calendar bucket: 2^14 ns = 16.4 µs, about one 1000-byte
/// packet's serialisation at 500 Mb/s, so a bucket rarely holds more than
/// a few events even on fast links.
const BUCKET_SHIFT: u32 = 14;
/// Buckets in the calendar: it covers 2^14 x 16.4 µs = 268 ms ahead, past
/// a GEO hop's propagation delay; later events go to the heap.
const BUCKETS: usize = 1 << 14;
/// Words of the occupancy bitmap (one bit per bucket).
const WORDS: usize = BUCKETS / 64;
/// End of a bucket's list.
const NIL: u32 = u32::MAX;

/// A calendar entry, linked into its bucket's list (32 bytes).
#[derive(Clone, Copy, Debug)]
struct Node {
    time: u64,
    rank: u64,
    ev: Event,
    next: u32,
}

/// An event with its time and rank (the test-only shuffle buffer).
#[cfg(test)]
type Ranked = (Instant, Event, u64);

/// The pending events of a run.
///
/// A calendar of `BUCKETS` buckets of `2^BUCKET_SHIFT` ns each covers the
/// window of buckets `[base, base + BUCKETS)`, used circularly; each bucket
/// is a list sorted by (time, rank), so its head is its smallest entry,
/// and a two-level bitmap finds the first non-empty bucket in a few word
/// operations. An event beyond the window (or, never in a run, before it)
/// goes to the heap. A pop takes the smaller of the calendar's first entry
/// and the heap's top, so the order is exactly (time, rank)
/// wherever each event was kept; `base` then moves up to the popped
/// event's bucket, which no pending event precedes.
#[derive(Debug)]
pub struct EventQueue {
    /// First node of each bucket's list, `NIL` when empty.
    /// (Arrays of fixed length: a bucket index is masked to the length,
    /// so the compiler drops the bounds checks.)
    heads: Box<[u32; BUCKETS]>,
    /// Bit `b` set: bucket `b` is non-empty.
    bits: Box<[u64; WORDS]>,
    /// Bit `w` set: word `w` of `bits` is non-zero.
    summary: [u64; WORDS / 64],
    /// Node slab; `free` heads the list of unused nodes.
    nodes: Vec<Node>,
    free: u32,
    /// Absolute bucket number (time >> BUCKET_SHIFT) of the window start.
    base: u64,
    near: usize,
    far: Heap,
    /// `far.top()`, kept up to date by the (rare) pushes to and pops from
    /// the heap: every pop compares the calendar's first entry with it,
    /// and reading it here saves the heap's emptiness and bounds checks.
    far_top: u128,
    /// Events pushed so far.
    seq: u64,
    /// Test only: pushes wait here and enter the queue in a shuffled
    /// order just before the next pop (see [`EventQueue::shuffle_insertions`]).
    #[cfg(test)]
    shuffle: Option<(satcc_proto::rng::Rng, Vec<Ranked>)>,
}

impl Default for EventQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl EventQueue {
    /// An empty queue.
    pub fn new() -> Self {
        EventQueue {
            heads: Box::new([NIL; BUCKETS]),
            bits: Box::new([0; WORDS]),
            summary: [0; WORDS / 64],
            nodes: Vec::new(),
            free: NIL,
            base: 0,
            near: 0,
            far: Heap::default(),
            far_top: PAD,
            seq: 0,
            #[cfg(test)]
            shuffle: None,
        }
    }

    /// Test only: from now on, the events pushed between two pops (and
    /// those pending now) enter the queue in an order permuted by `seed`
    /// rather than the order they were pushed in. A run's outputs must not
    /// change: the pop order may depend only on the events themselves.
    #[cfg(test)]
    pub(crate) fn shuffle_insertions(&mut self, seed: u64) {
        let mut pending = Vec::new();
        loop {
            // The rank goes with the event (an `Inject`'s is not its own).
            let far = self.far.top();
            let near = (self.near > 0).then(|| {
                let slot = self.first_bucket_from((self.base as usize) & (BUCKETS - 1));
                let n = self.nodes[self.heads[slot] as usize];
                key(n.time, n.rank)
            });
            let k = near.map_or(far, |n| n.min(far));
            let Some((at, ev)) = self.pop_until(Instant::MAX) else {
                break;
            };
            pending.push((at, ev, k as u64));
        }
        self.seq -= pending.len() as u64;
        self.shuffle = Some((satcc_proto::rng::Rng::new(seed), pending));
    }

    /// Test only: moves the buffered pushes into the queue, shuffled.
    #[cfg(test)]
    fn flush_shuffled(&mut self) {
        let Some((mut rng, mut buf)) = self.shuffle.take() else {
            return;
        };
        // Fisher-Yates.
        for i in (1..buf.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            buf.swap(i, j);
        }
        for (at, ev, rank) in buf.drain(..) {
            self.push_ranked(at, ev, rank);
        }
        self.shuffle = Some((rng, buf));
    }

    /// Schedules `ev` at `at`, ranked by [`Event::rank`].
    #[inline(always)]
    pub fn push(&mut self, at: Instant, ev: Event) {
        self.push_ranked(at, ev, ev.rank());
    }

    /// Schedules `ev` at `at` with rank `rank` (for an event whose payload
    /// is not what should order it: an `Inject` carries a packet-store
    /// slot, which is reused, and is ranked by the packet's uid). The rank
    /// must keep the event in its class: `rank >> 60` is the class of
    /// [`Event::rank`].
    #[inline(always)]
    pub fn push_ranked(&mut self, at: Instant, ev: Event, rank: u64) {
        debug_assert_eq!(rank >> CLASS_SHIFT, ev.rank() >> CLASS_SHIFT);
        #[cfg(test)]
        if let Some((_, buf)) = self.shuffle.as_mut() {
            buf.push((at, ev, rank));
            return;
        }
        self.seq += 1;
        let t = at.as_nanos();
        let b = t >> BUCKET_SHIFT;
        let k = key(t, rank);
        if b.wrapping_sub(self.base) >= BUCKETS as u64 {
            self.far.push(k, ev);
            self.far_top = self.far.top();
            return;
        }
        let slot = (b as usize) & (BUCKETS - 1);
        let head = self.heads[slot];
        if head != NIL {
            self.insert_sorted(slot, t, rank, ev);
        } else {
            let n = self.alloc(Node {
                time: t,
                rank,
                ev,
                next: NIL,
            });
            self.heads[slot] = n;
            self.bits[slot >> 6] |= 1 << (slot & 63);
            self.summary[slot >> 12] |= 1 << ((slot >> 6) & 63);
        }
        self.near += 1;
    }

    /// A node holding `node`, from the free list or new.
    #[inline(always)]
    fn alloc(&mut self, node: Node) -> u32 {
        if self.free != NIL {
            let n = self.free;
            let slot = &mut self.nodes[n as usize];
            self.free = slot.next;
            *slot = node;
            n
        } else {
            self.nodes.push(node);
            (self.nodes.len() - 1) as u32
        }
    }

    /// A push into a non-empty bucket: after every entry with a smaller or
    /// equal key, so the list stays sorted. Out of line, so that the push
    /// into an empty bucket, inlined at every caller, stays short.
    #[inline(never)]
    fn insert_sorted(&mut self, slot: usize, t: u64, rank: u64, ev: Event) {
        let k = key(t, rank);
        // The place is found first, so the node is written once, with
        // its successor.
        let mut prev = NIL;
        let mut cur = self.heads[slot];
        while cur != NIL && {
            let c = &self.nodes[cur as usize];
            key(c.time, c.rank) <= k
        } {
            prev = cur;
            cur = self.nodes[cur as usize].next;
        }
        let n = self.alloc(Node {
            time: t,
            rank,
            ev,
            next: cur,
        });
        if prev == NIL {
            self.heads[slot] = n;
        } else {
            self.nodes[prev as usize].next = n;
        }
    }

    /// The first non-empty bucket at or after `start`, circularly (there
    /// must be one).
    #[inline]
    fn first_bucket_from(&self, start: usize) -> usize {
        let w = (start >> 6) & (WORDS - 1);
        let m = self.bits[w] & (!0u64 << (start & 63));
        if m != 0 {
            return ((w << 6) | m.trailing_zeros() as usize) & (BUCKETS - 1);
        }
        // The next non-zero word after `w`, wrapping round to `w` itself
        // (whose bits below `start` are the far end of the window).
        let w = self.next_word(w + 1) & (WORDS - 1);
        ((w << 6) | self.bits[w].trailing_zeros() as usize) & (BUCKETS - 1)
    }

    /// The first non-zero word of `bits` at or after `from`, circularly.
    #[inline]
    fn next_word(&self, from: usize) -> usize {
        let from = from & (WORDS - 1);
        let sw = from >> 6;
        let m = self.summary[sw] & (!0u64 << (from & 63));
        if m != 0 {
            return (sw << 6) | m.trailing_zeros() as usize;
        }
        for k in 1..=self.summary.len() {
            let i = (sw + k) % self.summary.len();
            if self.summary[i] != 0 {
                return (i << 6) | self.summary[i].trailing_zeros() as usize;
            }
        }
        unreachable!("next_word on an empty calendar")
    }

    /// The next event if it is due no later than `until`.
    #[inline]
    pub fn pop_until(&mut self, until: Instant) -> Option<(Instant, Event)> {
        #[cfg(test)]
        self.flush_shuffled();
        let far = self.far_top;
        if self.near > 0 {
            let slot = self.first_bucket_from((self.base as usize) & (BUCKETS - 1));
            let slot = slot & (BUCKETS - 1);
            let n = self.heads[slot];
            let node = self.nodes[n as usize];
            if key(node.time, node.rank) < far {
                if node.time > until.as_nanos() {
                    return None;
                }
                self.heads[slot] = node.next;
                // Whether the bucket is now empty is a coin toss when the
                // events are dense (1.3 a bucket at `bench --scale 8`):
                // its bit is cleared by arithmetic, not behind a branch.
                // (A word of 64 empty buckets is rarer: a branch.)
                let w = slot >> 6;
                self.bits[w] &= !(u64::from(node.next == NIL) << (slot & 63));
                if self.bits[w] == 0 {
                    self.summary[slot >> 12] &= !(1 << (w & 63));
                }
                self.nodes[n as usize].next = self.free;
                self.free = n;
                self.near -= 1;
                self.base = node.time >> BUCKET_SHIFT;
                return Some((Instant(node.time), node.ev));
            }
        }
        if far == PAD {
            return None;
        }
        let t = (far >> 64) as u64;
        if t > until.as_nanos() {
            return None;
        }
        let ev = self.far.pop();
        self.far_top = self.far.top();
        // Nothing pending precedes the popped event, so the window may
        // start at its bucket (it never moves back).
        self.base = self.base.max(t >> BUCKET_SHIFT);
        Some((Instant(t), ev))
    }

    /// Events handed out so far.
    pub fn processed(&self) -> u64 {
        // Every event pushed is either handed out or still pending (none
        // is ever cancelled): one counter fewer to move on every pop.
        self.seq - self.len() as u64
    }
    /// Events still pending.
    pub fn len(&self) -> usize {
        self.near + self.far.evs.len()
    }
    /// No events pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Same-instant events pop by rank (class, then entity), whatever
    /// order they were pushed in; an `Inject` by the rank its caller gave.
    #[test]
    fn ties_break_by_rank_not_insertion() {
        let evs = [
            (5, Event::Wake(3)),
            (3, Event::Sample),
            (5, Event::Wake(1)),
            (3, Event::Arrive(9)),
            (3, Event::LinkFree(9)),
            (3, Event::Arrive(2)),
            (3, Event::Snapshot(0)),
        ];
        let want = vec![
            Event::Snapshot(0),
            Event::LinkFree(9),
            Event::Arrive(2),
            Event::Arrive(9),
            Event::Sample,
            Event::Wake(1),
            Event::Wake(3),
        ];
        for rot in 0..evs.len() {
            for rev in [false, true] {
                let mut q = EventQueue::new();
                let mut order: Vec<_> = evs.iter().cycle().skip(rot).take(evs.len()).collect();
                if rev {
                    order.reverse();
                }
                for &&(t, ev) in &order {
                    q.push(Instant(t), ev);
                }
                let got: Vec<Event> =
                    std::iter::from_fn(|| q.pop_until(Instant::MAX).map(|(_, e)| e)).collect();
                assert_eq!(got, want, "rotation {rot}, reversed {rev}");
                assert_eq!(q.processed(), evs.len() as u64);
            }
        }
        let mut q = EventQueue::new();
        let inject = Event::Inject(0).rank();
        q.push_ranked(Instant(1), Event::Inject(7), inject + 2);
        q.push_ranked(Instant(1), Event::Inject(8), inject + 1);
        assert_eq!(
            q.pop_until(Instant::MAX),
            Some((Instant(1), Event::Inject(8)))
        );
        assert_eq!(
            q.pop_until(Instant::MAX),
            Some((Instant(1), Event::Inject(7)))
        );
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
    /// (time, rank), with many ties and horizons.
    #[test]
    fn matches_a_sorted_reference() {
        use satcc_proto::rng::Rng;
        for seed in 0..40u64 {
            let mut rng = Rng::new(seed);
            let mut q = EventQueue::new();
            // (time, rank, payload), kept sorted descending so pop() is the min.
            let mut reference: Vec<(u64, u64, u32)> = Vec::new();
            let mut now = 0u64;
            // Within one bucket, across many, around the calendar's
            // horizon, and mostly beyond it.
            let scale = [1_000, 100_000, 30_000_000, 300_000_000, 2_000_000_000][seed as usize % 5];
            let spread = 1 + rng.below(scale);
            for step in 0..20_000u32 {
                let r = rng.below(100);
                if r < 55 {
                    // Times at or after `now`, with frequent ties.
                    // Entities in an order unrelated to insertion.
                    let t = now + rng.below(spread);
                    let ep = step.wrapping_mul(2_654_435_761);
                    let rank = Event::Wake(ep).rank();
                    q.push(Instant(t), Event::Wake(ep));
                    let at = reference.partition_point(|&e| e > (t, rank, ep));
                    reference.insert(at, (t, rank, ep));
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

    /// The calendar pops in exactly the order of the plain heap it
    /// replaced, on random schedules that mix ties, near and far events,
    /// pops with horizons, and long runs that wrap the calendar many times.
    #[test]
    fn pops_in_the_order_of_the_heap() {
        use satcc_proto::rng::Rng;
        for seed in 0..30u64 {
            let mut rng = Rng::new(1000 + seed);
            let mut q = EventQueue::new();
            let mut heap = Heap::default();
            let mut now = 0u64;
            for step in 0..30_000u32 {
                if rng.below(100) < 52 {
                    let d = match rng.below(10) {
                        0 => 0,
                        1..=5 => rng.below(50_000),
                        6..=7 => rng.below(20_000_000),
                        8 => (1u64 << BUCKET_SHIFT) * BUCKETS as u64 - 5 + rng.below(10),
                        _ => rng.below(5_000_000_000),
                    };
                    let ev = Event::Arrive(step.wrapping_mul(2_654_435_761));
                    q.push(Instant(now + d), ev);
                    heap.push(key(now + d, ev.rank()), ev);
                } else {
                    let until = if rng.chance(0.1) {
                        now + rng.below(1_000_000)
                    } else {
                        u64::MAX
                    };
                    let top = heap.top();
                    let want = (top != PAD && (top >> 64) as u64 <= until)
                        .then(|| (Instant((top >> 64) as u64), heap.pop()));
                    let got = q.pop_until(Instant(until));
                    assert_eq!(got, want, "seed {seed} step {step}");
                    if let Some((t, _)) = got {
                        now = t.as_nanos();
                    }
                }
                assert_eq!(q.len(), heap.evs.len());
            }
            while heap.top() != PAD {
                let t = (heap.top() >> 64) as u64;
                assert_eq!(q.pop_until(Instant::MAX), Some((Instant(t), heap.pop())));
            }
            assert!(q.is_empty());
        }
    }
}
