//! Links and the packet store: queueing, serialisation, propagation,
//! forwarding and topology snapshots. Nothing here knows a protocol.

use satcc_proto::rng::Rng;
use satcc_proto::{Duration, Instant};

use super::Sim;
use crate::engine::Event;
use crate::net::hook::{HookVerdict, LinkHook, LinkView};
use crate::net::loss::ErrorModel;
use crate::net::packet::{DropReason, Packet, INITIAL_TTL};
use crate::net::queue::{Admit, Queue, Queued};
use crate::net::shaper::TokenBucket;
use crate::topology::LinkRole;

/// Drops of one link, by reason.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LinkDrops {
    /// The queue was full (or pushed a low-priority packet out).
    pub queue: u64,
    /// RED dropped early.
    pub red: u64,
    /// The error model corrupted the packet.
    pub error: u64,
    /// TTL ran out at the link's far end.
    pub ttl: u64,
    /// A router hook (REFWA) discarded it.
    pub hook: u64,
    /// Queued when a snapshot took the link down.
    pub link_down: u64,
}

impl LinkDrops {
    pub(crate) fn total(&self) -> u64 {
        self.queue + self.red + self.error + self.ttl + self.hook + self.link_down
    }
}

/// A packet on a wire: when it reaches the far end, its store index and
/// uid.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct OnWire {
    pub at: Instant,
    pub uid: u64,
    pub idx: u32,
}

/// The packets on a link's wire, first to arrive first: the first kept
/// inline, the others in a ring of power-of-two capacity. What
/// `VecDeque` did, with a push that inlines (std's `push_back` is a call
/// per hop); the ring grows when full and never shrinks (a wire holds at
/// most a bandwidth-delay product of packets).
///
/// The first packet inline: a wire that seldom holds more than one packet
/// (an access link carrying one flow) then touches no line but its
/// link's. At `satcc bench --scale 8` a separate buffer's line was cold
/// at nearly every packet (docs/validation.md, "Speed").
#[derive(Debug, Default)]
pub(super) struct Pipe {
    /// The packet to arrive first, when `len > 0`.
    first: OnWire,
    /// The others (`len - 1` of them), from `head` on.
    buf: Box<[OnWire]>,
    head: u32,
    /// Packets on the wire, `first` included.
    len: u32,
}

impl Pipe {
    #[inline(always)]
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }
    #[inline(always)]
    pub(super) fn len(&self) -> usize {
        self.len as usize
    }
    /// Puts `w` on an empty wire (what `push_back` does there, without
    /// its test).
    #[inline(always)]
    pub(super) fn push_first(&mut self, w: OnWire) {
        debug_assert!(self.is_empty());
        self.first = w;
        self.len = 1;
    }
    #[inline(always)]
    pub(super) fn push_back(&mut self, w: OnWire) {
        if self.len == 0 {
            self.push_first(w);
            return;
        }
        let queued = self.len as usize - 1;
        if queued == self.buf.len() {
            self.grow();
        }
        // The capacity is a power of two: the mask wraps the index.
        let mask = self.buf.len() - 1;
        let i = (self.head as usize + queued) & mask;
        self.buf[i] = w;
        self.len += 1;
    }
    #[inline(always)]
    pub(super) fn pop_front(&mut self) -> Option<OnWire> {
        if self.len == 0 {
            return None;
        }
        let w = self.first;
        self.len -= 1;
        if self.len > 0 {
            self.first = self.buf[self.head as usize];
            // An emptied ring restarts at its first entry: a wire that
            // seldom holds more than two packets (an access link behind
            // the bottleneck) then keeps to one line of its ring, where
            // the head cycled through the eight entries' three.
            self.head = if self.len == 1 {
                0
            } else {
                (self.head + 1) & (self.buf.len() as u32 - 1)
            };
        }
        Some(w)
    }
    #[inline(always)]
    pub(super) fn front(&self) -> Option<&OnWire> {
        (self.len > 0).then_some(&self.first)
    }
    /// Doubles the ring's capacity (at least 8), the entries unwrapped in
    /// order.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let cap = (self.buf.len() * 2).max(8);
        let mut buf = vec![OnWire::default(); cap].into_boxed_slice();
        let n = self.len as usize - 1;
        let old = self.buf.len();
        for (k, slot) in buf.iter_mut().take(n).enumerate() {
            *slot = self.buf[(self.head as usize + k) % old];
        }
        self.buf = buf;
        self.head = 0;
    }
}

/// A directed link in the running network.
///
/// `repr(C)` keeps the fields in the order written: what every packet
/// crossing the link reads and writes comes first, so a hop touches the
/// link's first line, and its second where the packet goes on or off the
/// wire, rather than lines spread over its 7 (and no line elsewhere for
/// a wire holding one packet, see [`Pipe`]). That is for scenarios whose
/// links no longer fit in the core's cache (hundreds of access links at
/// `satcc bench --scale 8`: cachegrind counts a third fewer last-level
/// misses; the time gained is small, see docs/validation.md, "Speed").
#[derive(Debug)]
#[repr(C, align(64))]
pub(crate) struct Link {
    // First line: all that a packet crossing an idle link without hook or
    // error model reads and writes, but the wire (at `satcc bench --scale
    // 8` the 1 000 links no longer fit the core's cache, and each further
    // line is a miss).
    pub(super) busy_until: Instant,
    pub delay: Duration,
    /// A `LinkFree` event is pending; on an eager link (below), packets
    /// wait in the queue whose transmissions are already scheduled.
    pub(super) free_pending: bool,
    /// The queue must see every arrival ([`Queue::sees_every_arrival`]),
    /// or a shaper must see the packet first: kept here so that the idle
    /// fast path reads no line of the queue.
    pub(super) queue_sees_all: bool,
    /// Neither a hook nor an error model nor a shaper: the fast path need
    /// not read the lines that hold them. Kept by [`Link::set_hook`].
    pub(super) plain: bool,
    /// Some link folds its arrivals from this one ([`Link::fold_from`]):
    /// a packet put on this wire may go straight onto the next link.
    pub(super) feeds_fold: bool,
    /// (size, serialisation time in ns) of the last size [`Link::tx_time`]
    /// had to compute, when the time fits in 32 bits (data and ACK sizes
    /// repeat; the division is the costly part).
    pub(super) tx_last: (u32, u32),
    /// The size `tx_last` held before it.
    pub(super) tx_prev: (u32, u32),
    // Counters every packet writes.
    pub busy_ns: u64,
    pub arrivals: u64,
    /// The link every packet entering this one comes from, when there is
    /// exactly one and this link is eager, unmonitored and drop-tail
    /// ([`Sim::fold_hops`]); `u32::MAX` otherwise. A packet that will
    /// find this link idle then crosses the node between the two without
    /// an event: its hop onto this link is done when it goes on the
    /// feeder's wire (issue 28, item 2's "hops that only one flow uses").
    pub(super) fold_from: u32,
    /// Packets bound for this link that are on the feeder's wire without
    /// having been folded: while any is, no later one may be folded (it
    /// would overtake them).
    pub(super) unfolded: u32,
    // Second line: the wire (its first packet inline), an eager link's
    // head.
    /// Packets on the wire, in arrival order (the head's arrival event is
    /// ranked by its uid).
    pub(super) pipe: Pipe,
    /// Departures are scheduled when a packet is queued, with no
    /// `LinkFree` event: a FIFO queue on a link without hook, error
    /// model, shaper or capture, in a run without snapshots or hooks
    /// anywhere. Its departure time is then known at enqueue (the end of
    /// the transmission before it), and with the same-instant rule
    /// (engine.rs) the packet's arrival event is the same whenever it is
    /// scheduled. The queue still holds the packet until its start, for
    /// its length (drop-tail limit, RED, samples); [`Sim::catch_up`]
    /// takes out the packets whose start has passed before anything
    /// reads the queue.
    pub(super) eager: bool,
    /// The far end. In the wire's line, not the first: an arrival reads
    /// the wire and this alone, so it touches one line of its link, where
    /// it touched both (at `scenarios/bench.toml`'s last hop each was a
    /// first-level miss about half the time; docs/validation.md, "Tenth
    /// sitting, packets"). Whoever puts a packet on the wire reads this
    /// line anyway.
    pub to: u32,
    /// On an eager link with packets queued: when the head's
    /// transmission starts.
    pub(super) head_start: Instant,
    pub(super) hook: Option<Box<dyn LinkHook>>,
    /// Read when routes are built, not per packet: out of the first line.
    pub is_reverse: bool,
    /// The opposite direction between the same nodes (its queue is what a
    /// REFWA hook on this link needs for ACKs).
    pub(super) reverse: Option<u32>,
    // Then the queue (its own hot fields first), and the rest.
    pub(super) queue: Queue,
    pub(super) error: Option<ErrorModel>,
    pub(super) q_area: u128,
    pub(super) q_last: Instant,
    pub drops: LinkDrops,
    pub(super) err_rng: Rng,
    pub(super) queue_rng: Rng,
    pub rate_bps: u64,
    pub role: LinkRole,
    pub name: String,
    /// The token bucket in front of the link (`tbf`), if any: the head of
    /// the queue starts its transmission only when the bucket holds it.
    pub(super) shaper: Option<TokenBucket>,
}

impl Link {
    pub(super) fn new(def: &crate::topology::LinkDef, seed: u64, i: usize) -> Link {
        let queue = Queue::new(&def.queue, def.rate_bps, def.delay);
        let error = def.error.as_ref().map(ErrorModel::new);
        let shaper = def
            .shaper
            .as_ref()
            .map(|s| TokenBucket::new(s.rate.0, s.burst.0));
        Link {
            queue_sees_all: queue.sees_every_arrival() || shaper.is_some(),
            plain: error.is_none() && shaper.is_none(),
            shaper,
            name: def.name.clone(),
            to: def.to,
            rate_bps: def.rate_bps,
            delay: def.delay,
            role: def.role,
            is_reverse: def.is_reverse,
            queue,
            error,
            err_rng: Rng::stream(seed, super::STREAM_LINK + i as u64),
            queue_rng: Rng::stream(seed, super::STREAM_QUEUE + i as u64),
            busy_until: Instant::ZERO,
            free_pending: false,
            pipe: Pipe::default(),
            tx_last: (0, 0),
            tx_prev: (0, 0),
            hook: None,
            reverse: None,
            eager: false,
            head_start: Instant::ZERO,
            feeds_fold: false,
            fold_from: u32::MAX,
            unfolded: 0,
            arrivals: 0,
            drops: LinkDrops::default(),
            busy_ns: 0,
            q_area: 0,
            q_last: Instant::ZERO,
        }
    }
    /// Puts `hook` on the link (it then sees every packet offered).
    pub(super) fn set_hook(&mut self, hook: Box<dyn LinkHook>) {
        self.hook = Some(hook);
        self.plain = false;
    }
    /// Serialisation time of a `size`-byte packet, from the two sizes last
    /// seen when it is one of them. Inlined (a compare and a load where a
    /// packet has the size of the one before, nearly every time); the
    /// other cases out of line.
    #[inline(always)]
    fn tx_time(&mut self, size: u32) -> Duration {
        if self.tx_last.0 == size {
            return Duration(u64::from(self.tx_last.1));
        }
        self.tx_time_other(size)
    }
    #[inline(never)]
    fn tx_time_other(&mut self, size: u32) -> Duration {
        if self.tx_prev.0 == size {
            return Duration(u64::from(self.tx_prev.1));
        }
        let tx = Duration::transmission(u64::from(size), self.rate_bps);
        // Times past 4.3 s (slower than ~2 kb/s for 1000 bytes) are not
        // cached: they are recomputed, which gives the same value.
        if let Ok(ns) = u32::try_from(tx.as_nanos()) {
            self.tx_prev = self.tx_last;
            self.tx_last = (size, ns);
        }
        tx
    }
    /// Packet `idx` (uid `uid`) goes on this link's (`li`'s) wire, to
    /// reach the far end at `at`; the arrival event is the head's only.
    #[inline(always)]
    fn enter_wire(
        &mut self,
        events: &mut crate::engine::EventQueue,
        li: usize,
        at: Instant,
        idx: u32,
        uid: u64,
    ) {
        if self.pipe.is_empty() {
            let ev = Event::Arrive(li as u32);
            events.push_ranked(at, ev, ev.packet_rank(uid));
            self.pipe.push_first(OnWire { at, uid, idx });
        } else {
            self.pipe.push_back(OnWire { at, uid, idx });
        }
    }
    /// [`Sim::catch_up`] on this link, for a caller that holds it.
    /// Inlined: as a call, `forward` moved eight registers to and from
    /// the ones the call keeps, around each of the ~100 000 calls of the
    /// reference run.
    #[inline(always)]
    fn catch_up(&mut self, now: Instant) {
        while self.free_pending && self.head_start <= now {
            let start = self.head_start;
            self.note_queue(start);
            let Some(h) = self.queue.dequeue() else {
                self.free_pending = false;
                break;
            };
            let tx = self.tx_time(h.size);
            self.busy_ns += tx.as_nanos();
            self.head_start = start + tx;
            self.free_pending = !self.queue.is_empty();
        }
    }
    pub(super) fn note_queue(&mut self, now: Instant) {
        self.q_area += self.queue.len() as u128 * u128::from((now - self.q_last).as_nanos());
        self.q_last = now;
    }
    pub(crate) fn queue_len(&self) -> usize {
        self.queue.len()
    }
}

/// What a slot holds before `admit` writes its packet.
const VACANT: Packet = Packet {
    uid: 0,
    flow: 0,
    src: 0,
    dst: 0,
    size: 0,
    ttl: 0,
    low_priority: false,
    conn: 0,
    payload: crate::net::packet::Message::Datagram { seq: 0, len: 0 },
};

/// Packets live in a slab; queues and events hold indices.
#[derive(Debug, Default)]
pub(super) struct PacketStore {
    pub(super) slots: Vec<Packet>,
    free: Vec<u32>,
    pub(super) live: u64,
}

impl PacketStore {
    /// Stores a new packet, counted in `sent` and given uid `next_uid`
    /// (which then moves on): from here until it is delivered or dropped,
    /// hops pass its index, never a copy. `build` makes the packet from
    /// its uid once its slot is chosen, so it is written where it will lie
    /// (a packet built first and moved in was copied twice: 112 bytes).
    #[inline(always)]
    pub(super) fn admit(
        &mut self,
        sent: &mut u64,
        next_uid: &mut u64,
        build: impl FnOnce(u64) -> Packet,
    ) -> u32 {
        *sent += 1;
        let uid = *next_uid;
        *next_uid += 1;
        self.live += 1;
        let i = match self.free.pop() {
            Some(i) => i,
            None => self.new_slot(),
        };
        self.slots[i as usize] = build(uid);
        i
    }

    /// A slot past the end, for `admit` to fill (only while the number of
    /// packets in flight reaches a new high).
    #[cold]
    #[inline(never)]
    fn new_slot(&mut self) -> u32 {
        self.slots.push(VACANT);
        (self.slots.len() - 1) as u32
    }
    pub(super) fn remove(&mut self, i: u32) -> Packet {
        self.release(i);
        self.slots[i as usize]
    }
    /// Frees slot `i` without copying its packet out (what is still there
    /// stays readable until the slot is reused).
    pub(super) fn release(&mut self, i: u32) {
        self.live -= 1;
        self.free.push(i);
    }
}

impl Sim {
    /// Removes a packet from the network as dropped for `why`.
    fn drop_idx(&mut self, idx: u32, why: DropReason) {
        let p = self.packets.remove(idx);
        self.totals.dropped += 1;
        self.drop_reasons.count(why);
        if let Some(f) = self.flows.get_mut(p.flow as usize) {
            f.drops += 1;
        }
    }

    pub(super) fn forward(&mut self, node: u32, idx: u32) {
        let p = &self.packets.slots[idx as usize];
        // Hops taken so far, from the TTL: the routes' O(1) lookup hint.
        let hops = u32::from(INITIAL_TTL - p.ttl);
        // Read with the route's inputs, so that the slot is indexed once.
        let read = (p.size, p.uid, p.low_priority);
        match self
            .routes
            .next_hop(&self.net, &self.link_up, p.flow, p.dst, node, hops)
        {
            Some(li) => self.send_on_link(li as usize, idx, read),
            None => self.drop_idx(idx, DropReason::NoRoute),
        }
    }

    /// Packet `idx`, whose (size, uid, low priority) are `read`, arrives
    /// at link `li`.
    #[inline(always)]
    fn send_on_link(&mut self, li: usize, idx: u32, read: (u32, u64, bool)) {
        let now = self.now;
        let (mut size, mut uid, mut low) = read;
        let mut link = &mut self.links[li];
        if link.plain
            && !link.queue_sees_all
            && !link.free_pending
            && link.busy_until <= now
            && self.pcap.is_empty()
        {
            // The common case, what the general path below does for it
            // with each field read once: an idle link without hook,
            // shaper, error model, capture or a queue that must see the
            // arrival transmits at once.
            link.arrivals += 1;
            if link.fold_from != u32::MAX {
                link.unfolded -= 1;
            }
            let tx = link.tx_time(size);
            link.busy_until = now + tx;
            link.busy_ns += tx.as_nanos();
            let at = link.busy_until + link.delay;
            if !link.feeds_fold {
                link.enter_wire(&mut self.events, li, at, idx, uid);
            } else {
                let to = link.to;
                if !self.fold_hop(li, to, idx, at) {
                    self.links[li].enter_wire(&mut self.events, li, at, idx, uid);
                }
            }
            return;
        }
        if link.free_pending && link.eager {
            link.catch_up(now);
        }
        link.arrivals += 1;
        if link.fold_from != u32::MAX {
            // Only the feeder's unfolded packets come this way.
            link.unfolded -= 1;
        }
        if !link.plain && link.hook.is_some() {
            // Out of line, with the link read again after it: the common
            // path keeps its reference (no second bounds check).
            let Some(read) = self.hook_packet(li, idx) else {
                return;
            };
            (size, uid, low) = read;
            link = &mut self.links[li];
        }
        // A link whose transmission ends exactly now but whose LinkFree
        // event has not run yet is not idle: that event pulls the queue.
        let idle = link.busy_until <= now && !link.free_pending;
        let idle_since = idle.then_some(link.busy_until);
        if idle && !link.queue_sees_all {
            // Fast path: an idle link transmits at once. An idle link has
            // nothing queued: a packet queued behind a transmission always
            // has that transmission's LinkFree pending.
            debug_assert!(
                link.queue.is_empty(),
                "idle link {} with a queue",
                link.name
            );
            self.start_tx(li, idx);
            return;
        }
        // An idle shaped link has nothing queued either (a packet waiting
        // for tokens has its LinkFree pending), so the arrival is the head:
        // it may start now only if the bucket holds it.
        let shaper_wait = match (link.plain, idle) {
            (false, true) => link.shaper.as_mut().and_then(|s| {
                let at = s.ready_at(now, size);
                (at > now).then_some(at)
            }),
            _ => None,
        };
        let idle_tx = idle && shaper_wait.is_none();
        let q = Queued { idx, size, low };
        // The queue's time integral up to now (an idle link's queue is
        // empty: this only moves `q_last`).
        link.note_queue(now);
        let admit = match idle_since {
            // RED (which must see every arrival) on an idle link that
            // sends the packet at once: its verdict without the push and
            // pop (the note_queue between them added nothing).
            Some(since) if idle_tx => link.queue.admit_to_idle(now, q, since, &mut link.queue_rng),
            _ => link.queue.enqueue(now, q, idle_since, &mut link.queue_rng),
        };
        match admit {
            Admit::Accepted => {}
            Admit::Dropped(why) => {
                match why {
                    DropReason::RedEarly => link.drops.red += 1,
                    _ => link.drops.queue += 1,
                }
                self.drop_idx(idx, why);
                return;
            }
            Admit::PushedOut(victim) => {
                link.drops.queue += 1;
                self.drop_idx(victim.idx, DropReason::QueueFull);
                link = &mut self.links[li];
            }
        }
        let at = if idle_tx {
            if !link.plain || !self.pcap.is_empty() {
                self.start_tx(li, idx);
                return;
            }
            // `start_tx` on a link with no shaper, error model or capture,
            // with the link and the packet already read.
            debug_assert!(link.busy_until <= now);
            let tx = link.tx_time(size);
            link.busy_until = now + tx;
            link.busy_ns += tx.as_nanos();
            link.busy_until + link.delay
        } else if link.eager {
            // Behind a transmission: it starts when the last one
            // scheduled ends, and goes on the wire now.
            if !link.free_pending {
                link.free_pending = true;
                link.head_start = link.busy_until;
            }
            let tx = link.tx_time(size);
            link.busy_until += tx;
            link.busy_until + link.delay
        } else {
            if !link.free_pending {
                link.free_pending = true;
                // Behind a transmission, or (idle) waiting for tokens.
                let at = shaper_wait.unwrap_or(link.busy_until);
                self.events.push(at, Event::LinkFree(li as u32));
            }
            return;
        };
        // `put_on_wire`, with the link and the packet already read.
        if !link.feeds_fold {
            link.enter_wire(&mut self.events, li, at, idx, uid);
        } else {
            let to = link.to;
            if !self.fold_hop(li, to, idx, at) {
                self.links[li].enter_wire(&mut self.events, li, at, idx, uid);
            }
        }
    }

    /// Offers packet `idx` to link `li`'s hook (the caller checked there
    /// is one): the packet's (size, uid, low priority) as the hook left
    /// them (it may rewrite the packet), or `None` when it dropped it.
    #[cold]
    #[inline(never)]
    fn hook_packet(&mut self, li: usize, idx: u32) -> Option<(u32, u64, bool)> {
        let now = self.now;
        // Only hooked links look at their reverse direction's queue.
        let reverse_queue_pkts = self.links[li]
            .reverse
            .map(|r| self.links[r as usize].queue.len());
        let link = &mut self.links[li];
        let Some(h) = link.hook.as_mut() else {
            // No hook after all: the packet as it is.
            let p = &self.packets.slots[idx as usize];
            return Some((p.size, p.uid, p.low_priority));
        };
        let view = LinkView {
            rate_bps: link.rate_bps,
            queue_pkts: link.queue.len(),
            queue_bytes: link.queue.bytes(),
            limit_pkts: link.queue.limit_pkts(),
            reverse_queue_pkts,
        };
        let p = &mut self.packets.slots[idx as usize];
        if h.on_packet(now, p, &view) == HookVerdict::Drop {
            link.drops.hook += 1;
            self.drop_idx(idx, DropReason::Hook);
            return None;
        }
        Some((p.size, p.uid, p.low_priority))
    }

    /// Applies topology snapshot `k` (paper 003 §IV's dynamic virtual
    /// topology): links go down or up and every route is recomputed over the
    /// links that are up. Packets queued on a link that goes down are
    /// dropped; those already on its wire still arrive.
    pub(super) fn on_snapshot(&mut self, k: usize) {
        let now = self.now;
        let (down, up) = {
            let s = &self.snapshots[k];
            (s.down.clone(), s.up.clone())
        };
        for li in down {
            self.link_up[li] = false;
            let link = &mut self.links[li];
            link.note_queue(now);
            let mut stranded = Vec::new();
            while let Some(q) = link.queue.dequeue() {
                stranded.push(q.idx);
            }
            link.drops.link_down += stranded.len() as u64;
            for idx in stranded {
                self.drop_idx(idx, DropReason::LinkDown);
            }
        }
        for li in up {
            self.link_up[li] = true;
        }
        self.routes.update(&self.net, &self.link_up);
    }

    #[inline(always)]
    fn start_tx(&mut self, li: usize, idx: u32) {
        let now = self.now;
        let link = &mut self.links[li];
        let size = self.packets.slots[idx as usize].size;
        // An internal invariant, not an input check: two overlapping
        // transmissions would let a link exceed its rate.
        assert!(
            link.busy_until <= now,
            "link {} started a transmission while busy",
            link.name
        );
        if !link.plain {
            if let Some(s) = link.shaper.as_mut() {
                s.take(now, size);
            }
        }
        let tx = link.tx_time(size);
        link.busy_until = now + tx;
        link.busy_ns += tx.as_nanos();
        if !self.pcap.is_empty() {
            let p = &self.packets.slots[idx as usize];
            for (ci, cap) in &mut self.pcap {
                if *ci == li {
                    let f = &self.flows[p.flow as usize];
                    cap.record(now, p, f.id, f.mss);
                }
            }
        }
        let link = &mut self.links[li];
        let lost = !link.plain
            && match link.error.as_mut() {
                Some(e) => e.lose(size, &mut link.err_rng),
                None => false,
            };
        if lost {
            link.drops.error += 1;
            self.drop_idx(idx, DropReason::LinkError);
        } else {
            self.put_on_wire(li, idx);
        }
    }

    /// Puts packet `idx`, whose transmission ends at the link's
    /// `busy_until`, on the link's wire.
    #[inline(always)]
    fn put_on_wire(&mut self, li: usize, idx: u32) {
        let link = &mut self.links[li];
        let (at, to) = (link.busy_until + link.delay, link.to);
        if link.feeds_fold && self.fold_hop(li, to, idx, at) {
            return;
        }
        let uid = self.packets.slots[idx as usize].uid;
        self.links[li].enter_wire(&mut self.events, li, at, idx, uid);
    }

    /// Packet `idx`, going on link `li`'s wire to reach its far end at
    /// `at`, crosses that node now if the link it takes there folds its
    /// arrivals from `li` and will be idle at `at`: what `on_arrive` and
    /// `send_on_link`'s idle fast path would do at `at` is done now, with
    /// `at` as the time, and no arrival event at that node. Returns false
    /// (nothing done) when the packet must take the ordinary way.
    ///
    /// The same run, event for event, less one: the next link's state
    /// changes only through packets from `li`, which reach it in the order
    /// they go on `li`'s wire, so doing each change earlier, in that
    /// order, gives the same sequence of states; nothing reads that link
    /// between now and `at` (it is not monitored, and no snapshot or hook
    /// exists in a run with eager links); its arrival event at the far
    /// end has the same time and rank (the packet's uid) either way. Kept
    /// to arrivals no later than the run's end, so no packet is counted
    /// on a link it would not have reached.
    ///
    /// `node` is link `li`'s far end (the caller holds the link).
    #[inline(never)]
    fn fold_hop(&mut self, li: usize, node: u32, idx: u32, at: Instant) -> bool {
        let end = self.end();
        // Held from here to the TTL's decrement: the slot is indexed once.
        let p = &mut self.packets.slots[idx as usize];
        if p.dst == node || p.ttl <= 1 || at > end {
            return false;
        }
        let hops = u32::from(INITIAL_TTL - (p.ttl - 1));
        let Some(next) = self
            .routes
            .next_hop(&self.net, &self.link_up, p.flow, p.dst, node, hops)
        else {
            return false;
        };
        let (size, uid) = (p.size, p.uid);
        let l2 = &mut self.links[next as usize];
        if l2.fold_from != li as u32 {
            return false;
        }
        if l2.unfolded > 0 || l2.free_pending || l2.busy_until > at {
            // Queued behind another packet, or behind one still on the
            // feeder's wire: the ordinary way, in order.
            l2.unfolded += 1;
            return false;
        }
        // `on_arrive` at `node`, then the idle fast path of `send_on_link`
        // and `start_tx` on a plain eager link, at `at`.
        p.ttl -= 1;
        l2.arrivals += 1;
        let tx = l2.tx_time(size);
        l2.busy_until = at + tx;
        l2.busy_ns += tx.as_nanos();
        let at2 = l2.busy_until + l2.delay;
        l2.enter_wire(&mut self.events, next as usize, at2, idx, uid);
        true
    }

    /// Marks the links whose arrivals can be folded into their feeder's
    /// departures ([`Link::fold_from`]): eager, not monitored, a queue
    /// that need not see every arrival, and every flow path that takes
    /// the link takes it right after one same link (never as its first).
    pub(super) fn fold_hops(&mut self) {
        const MANY: u32 = u32::MAX - 1;
        let n = self.links.len();
        // u32::MAX: no path takes it; MANY: several feeders or a first hop.
        let mut from = vec![u32::MAX; n];
        for fi in 0..self.flows.len() as u32 {
            for reverse in [false, true] {
                let Some(path) = self.routes.path(fi, reverse) else {
                    continue;
                };
                let mut prev = MANY;
                for &l in &path {
                    let f = &mut from[l as usize];
                    *f = if *f == u32::MAX || *f == prev {
                        prev
                    } else {
                        MANY
                    };
                    prev = l;
                }
            }
        }
        for (li, &f) in from.iter().enumerate() {
            let l = &self.links[li];
            if f >= MANY || !l.eager || l.queue_sees_all || self.monitored.contains(&li) {
                continue;
            }
            self.links[li].fold_from = f;
            self.links[f as usize].feeds_fold = true;
        }
    }

    /// On an eager link: takes out of the queue the packets whose
    /// transmission has started by now (they are on the wire already),
    /// as the `LinkFree` events of a link that is not eager would have,
    /// at the same instants: the queue's time integral and the busy time
    /// come out the same.
    pub(super) fn catch_up(&mut self, li: usize) {
        let now = self.now;
        self.links[li].catch_up(now);
    }

    pub(super) fn on_link_free(&mut self, li: usize) {
        let now = self.now;
        let link = &mut self.links[li];
        link.free_pending = false;
        if !link.plain {
            // The head waits for its tokens (tbf's dequeue).
            if let (Some(s), Some(size)) = (link.shaper.as_mut(), link.queue.head_size()) {
                let at = s.ready_at(now, size);
                if at > now {
                    link.free_pending = true;
                    self.events.push(at, Event::LinkFree(li as u32));
                    return;
                }
            }
        }
        link.note_queue(now);
        if let Some(h) = link.queue.dequeue() {
            self.start_tx(li, h.idx);
            let link = &mut self.links[li];
            if !link.queue.is_empty() {
                link.free_pending = true;
                let at = link.busy_until;
                self.events.push(at, Event::LinkFree(li as u32));
            }
        }
    }

    pub(super) fn on_arrive(&mut self, li: usize) {
        let link = &mut self.links[li];
        let Some(OnWire { idx, .. }) = link.pipe.pop_front() else {
            return;
        };
        if let Some(&OnWire { at, uid, .. }) = link.pipe.front() {
            let ev = Event::Arrive(li as u32);
            self.events.push_ranked(at, ev, ev.packet_rank(uid));
        }
        let node = link.to;
        let p = &mut self.packets.slots[idx as usize];
        if p.dst == node {
            self.totals.delivered += 1;
            self.deliver(idx);
            return;
        }
        if p.ttl <= 1 {
            // What `saturating_sub(1)` then a test for zero did, with
            // the common case a plain decrement.
            p.ttl = 0;
            self.links[li].drops.ttl += 1;
            self.drop_idx(idx, DropReason::Ttl);
            return;
        }
        p.ttl -= 1;
        self.forward(node, idx);
    }

    /// Debug builds check after every `run_until` that packets are
    /// conserved (see [`Sim::conservation_error`]).
    pub(super) fn check_conservation(&self) {
        if cfg!(debug_assertions) {
            if let Some(e) = self.conservation_error() {
                panic!("packet conservation: {e}");
            }
        }
    }

    /// Why packets are not conserved, if they are not: every packet sent
    /// is delivered, dropped for a counted reason, or still in the network
    /// (queued, on a wire, or held back by send jitter), and the links'
    /// drops add up to the network's.
    pub fn conservation_error(&self) -> Option<String> {
        let t = &self.totals;
        if t.sent != t.delivered + t.dropped + self.packets.live {
            return Some(format!(
                "sent {} != delivered {} + dropped {} + in flight {}",
                t.sent, t.delivered, t.dropped, self.packets.live
            ));
        }
        if t.dropped != self.drop_reasons.total() {
            return Some(format!(
                "{} drops but {} with a reason",
                t.dropped,
                self.drop_reasons.total()
            ));
        }
        let on_links: u64 = self.links.iter().map(|l| l.drops.total()).sum();
        // Every drop but "no route" happens on a link.
        if on_links + self.drop_reasons.no_route != t.dropped {
            return Some(format!(
                "links count {on_links} drops (+{} unroutable), the network {}",
                self.drop_reasons.no_route, t.dropped
            ));
        }
        let held: usize = self
            .links
            .iter()
            .map(|l| {
                // An eager link's queued packets are in its pipe already.
                if l.eager {
                    l.pipe.len()
                } else {
                    l.queue.len() + l.pipe.len()
                }
            })
            .sum();
        if held as u64 > self.packets.live {
            return Some(format!(
                "links hold {held} packets but the store has {}",
                self.packets.live
            ));
        }
        None
    }
}

#[cfg(test)]
mod layout {
    /// A `Link` of a power-of-two size puts every link's first line in
    /// the same few sets of the core's last-level cache (set = address
    /// bits 6 and up): at `satcc bench --scale 8` a 512-byte `Link`
    /// gave cachegrind 4 % more last-level misses than a 576-byte one
    /// (docs/validation.md, "Ninth sitting, links"). An odd number of
    /// lines spreads the links over every set.
    #[test]
    fn a_link_is_an_odd_number_of_cache_lines() {
        let lines = std::mem::size_of::<super::Link>() / 64;
        assert_eq!(std::mem::size_of::<super::Link>() % 64, 0);
        assert_eq!(
            lines % 2,
            1,
            "Link is {lines} lines: pad it to an odd number"
        );
    }
}
