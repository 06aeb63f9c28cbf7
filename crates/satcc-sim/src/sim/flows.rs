//! Flows: the generic driver of a flow's two endpoints, and the
//! applications on top of them. Endpoints are reached only through the
//! `satcc_proto::endpoint` traits; no protocol is named here.

use std::collections::VecDeque;

use satcc_proto::endpoint::{Endpoint, Event as EpEvent, Sender, Stats, Transmit};
use satcc_proto::rng::Rng;
use satcc_proto::{Duration, Instant};

use super::Sim;
use crate::engine::{AppAction, Event, EventQueue};
use crate::net::packet::{Packet, INITIAL_TTL};
use crate::protocols::{AnyReceiver, AnySender, ProtocolConfig};
use crate::scenario::{AppSpec, FileMode, Protocol};

/// Wire bytes a flow put on the network, by kind (headers included).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TxBytes {
    /// Data packets (retransmissions included), sender to receiver.
    pub data_bytes: u64,
    /// Probing overhead packets (TCP-Peach dummy segments).
    pub dummy_packets: u64,
    /// Bytes of those packets.
    pub dummy_bytes: u64,
    /// Everything the receiver sent back (ACKs, feedback).
    pub ack_bytes: u64,
    /// The low-priority part of `ack_bytes` (echoes of dummies).
    pub dummy_ack_bytes: u64,
}

/// Counters of a flow's closed connections, one running total per side.
#[derive(Debug, Default)]
pub(crate) struct PastConnections {
    pub(super) sender: Stats,
    pub(super) receiver: Stats,
}

/// Which of a flow's endpoints a wake-up is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Side {
    Sender = 0,
    Receiver = 1,
}

/// A flow instance: two endpoints, the application driving the sender,
/// and its counters.
///
/// `repr(C)`, hot fields first: a packet's delivery reads the struct's
/// first cache line, a sender's drive its first three (four with host
/// jitter; see `Link`, and the test `a_drive_reads_three_lines_of_its_flow`).
#[derive(Debug)]
#[repr(C, align(64))]
pub(crate) struct Flow {
    // First line: what every packet of the flow needs, its delivery
    // included (the connection and `active`: a delivery that sends
    // nothing, as most of a TFRC receiver's, then reads no other line).
    pub(super) sender: AnySender,
    pub(super) receiver: AnyReceiver,
    pub(super) wake: [Instant; 2],
    pub src: u32,
    pub dst: u32,
    pub(super) header: u32,
    /// Current connection generation (see [`Packet::conn`]).
    pub(super) conn: u16,
    pub(super) active: bool,
    // Second line: the counters every packet sent moves, and the jitter
    // bounds every packet sent is checked against.
    /// Wire bytes sent, by kind.
    pub tx: TxBytes,
    pub packets_sent: u64,
    /// Upper bound of the random hold before each data packet is sent.
    pub(super) send_jitter: Duration,
    /// Upper bound of the order-preserving host timing jitter.
    pub(super) host_jitter: Duration,
    // Third line: the rest of the sender's drive. A drive of a sender
    // without host jitter (TCP) reads three lines of its flow, where it
    // read four (docs/validation.md, "Tenth sitting, packets").
    /// When the sender's latest host-jittered packet enters the network.
    pub(super) host_last: Instant,
    /// The link a host-jittered packet of this flow enters, when its
    /// entry may be done at the send instead of by an `Inject` event
    /// ([`Sim::fold_injects`]); `u32::MAX` otherwise.
    pub(super) inject_link: u32,
    /// `Inject` events of this flow still pending: while any is, no later
    /// packet's entry may be folded (it would overtake them).
    pub(super) injects_pending: u32,
    /// Bytes acknowledged over all connections (sum of `Acked` events).
    pub(super) acked: u64,
    /// TFRC/CCID3: the loss-recovery tracker fed from the sender's rate.
    pub(super) recovery: Option<Box<crate::report::recovery::LossRecovery>>,
    /// Files: (cumulative end byte, arrival time) of files not yet acked.
    pub(super) files: VecDeque<(u64, Instant)>,
    // Fourth line: what a host-jittered send draws from, and what is
    // written only on a loss or a drop.
    pub(super) jitter_rng: Rng,
    /// When a rate-based sender first learned of a loss (left slow start).
    pub(super) slow_start_exit: Option<Instant>,
    pub drops: u64,
    // The rest: set up once, or read at sample instants and the end.
    /// The flow's index in the simulator's flows, which packets carry
    /// ([`Packet::flow`]); out of the first line, where the drives have
    /// the index already.
    pub id: u32,
    pub(super) measured: bool,
    pub mss: u32,
    pub(super) files_started: u32,
    pub(super) start: Instant,
    pub(super) stop: Instant,
    /// What a fresh connection is built from (boxed, as the counters of
    /// past connections: both are cold).
    pub(super) config: Box<ProtocolConfig>,
    pub(super) app: AppSpec,
    pub(super) rate_bps: u64,
    pub(super) rng: Rng,
    pub(super) pushed: u64,
    pub files_done: u64,
    pub(super) file_time_sum: f64,
    /// Counters of the connections closed so far, sender and receiver.
    pub(super) past: Box<PastConnections>,
    /// Packets that arrived for a connection already closed.
    pub stale: u64,
    pub(super) delivered_at_measure: u64,
    pub name: String,
    pub protocol: Protocol,
}

impl Flow {
    /// Payload bytes delivered to the receiving application, all
    /// connections.
    pub(crate) fn delivered_bytes(&self) -> u64 {
        self.past.receiver.delivered_bytes + self.receiver.stats().delivered_bytes
    }
    /// The sender's counters over all connections, with the current
    /// connection's state.
    pub(crate) fn sender_totals(&self) -> Stats {
        let mut all = self.sender.stats();
        all.accumulate(&self.past.sender);
        all
    }
    /// The receiver's counters over all connections, with the current
    /// connection's state.
    pub(crate) fn receiver_totals(&self) -> Stats {
        let mut all = self.receiver.stats();
        all.accumulate(&self.past.receiver);
        all
    }
    /// The current sender's statistics view.
    pub(crate) fn sender_stats(&self) -> Stats {
        self.sender.stats()
    }

    /// Close the connection and open a fresh one (the previous file is
    /// fully acknowledged; whatever of it is still in flight is ignored).
    fn reconnect(&mut self, now: Instant) {
        self.past.sender.accumulate(&self.sender.stats());
        self.past.receiver.accumulate(&self.receiver.stats());
        self.conn = self.conn.wrapping_add(1);
        let (s, r) = self.config.instantiate(now, &mut self.rng);
        self.sender = s;
        self.receiver = r;
    }

    /// What the flow's packets are addressed with (copied out, so that a
    /// packet can be built while the endpoint that gives it is borrowed).
    /// `fi` is the flow's index, which is its id (what `deliver` indexes
    /// the flows with): the id field itself is not read.
    #[inline(always)]
    fn addr(&self, fi: usize) -> FlowAddr {
        debug_assert_eq!(fi, self.id as usize);
        FlowAddr {
            id: fi as u32,
            src: self.src,
            dst: self.dst,
            header: self.header,
            conn: self.conn,
        }
    }
}

/// A flow's id, end nodes, header bytes and connection: what its packets
/// carry besides the endpoint's transmit.
#[derive(Clone, Copy)]
struct FlowAddr {
    id: u32,
    src: u32,
    dst: u32,
    header: u32,
    conn: u16,
}

impl FlowAddr {
    /// Packet `uid` carrying `t` from the flow's sender to its receiver
    /// (`reverse`: the other way).
    #[inline(always)]
    fn packet(self, uid: u64, reverse: bool, t: &Transmit) -> Packet {
        let (src, dst) = if reverse {
            (self.dst, self.src)
        } else {
            (self.src, self.dst)
        };
        Packet {
            uid,
            flow: self.id,
            src,
            dst,
            size: t.payload_len + self.header,
            ttl: INITIAL_TTL,
            low_priority: t.low_priority,
            conn: self.conn,
            payload: t.message,
        }
    }
}

impl Sim {
    /// Packet `idx` reached its flow's sender or receiver: the endpoint
    /// reads it where it lies in the store (no copy), then its slot is
    /// freed, before the endpoint's answer is sent.
    pub(super) fn deliver(&mut self, idx: u32) {
        let p = &self.packets.slots[idx as usize];
        let fi = p.flow as usize;
        let now = self.now;
        let f = &mut self.flows[fi];
        if p.conn != f.conn {
            // A closed connection's straggler: its socket is gone.
            f.stale += 1;
            self.packets.release(idx);
            return;
        }
        if p.payload.is_reverse() {
            // A stopped flow's sender is closed: late feedback is ignored.
            let active = f.active;
            if active {
                f.sender.handle_input(now, &p.payload);
            }
            self.packets.release(idx);
            if active {
                self.drive_sender(fi);
            }
        } else {
            f.receiver.handle_input(now, &p.payload);
            self.packets.release(idx);
            self.drive_receiver(fi);
        }
    }

    pub(super) fn on_wake(&mut self, ep: u32) {
        let fi = (ep / 2) as usize;
        let side = (ep % 2) as usize;
        let now = self.now;
        let f = &mut self.flows[fi];
        if f.wake[side] != now {
            return; // superseded by an earlier wake-up
        }
        f.wake[side] = Instant::MAX;
        if side == Side::Sender as usize {
            if !f.active {
                return;
            }
            f.sender.handle_timeout(now);
            self.drive_sender(fi);
        } else {
            f.receiver.handle_timeout(now);
            self.drive_receiver(fi);
        }
    }

    /// Arms flow `fi`'s (`f`'s) timer on `side` for `at`, at `now` or
    /// later. An associated function given the flow and the queue rather
    /// than a method: the drives call it with the flow they hold, without
    /// indexing `flows` again.
    #[inline(always)]
    fn schedule_wake(
        events: &mut EventQueue,
        f: &mut Flow,
        fi: usize,
        side: Side,
        at: Option<Instant>,
        now: Instant,
    ) {
        let Some(at) = at else { return };
        let at = at.max(now);
        let side = side as usize;
        // Lazy timers: only an earlier deadline needs a new event; a later
        // one is found when the pending event fires and asks again.
        if at < f.wake[side] {
            f.wake[side] = at;
            events.push(at, Event::Wake(fi as u32 * 2 + side as u32));
        }
    }

    /// Sends what the sender has, hands its events to the application, and
    /// arms its timer.
    pub(super) fn drive_sender(&mut self, fi: usize) {
        let now = self.now;
        // Each packet is built in the store and sent as soon as the sender
        // gives it (no outbox): uids are given in the same order, a link
        // sees the flow's packets in the same order, and the link code
        // never touches an endpoint, so polling on afterwards gives the
        // same answers; the events it schedules are ordered by rank, not
        // by when they were pushed.
        loop {
            let f = &mut self.flows[fi];
            let addr = f.addr(fi);
            let (tx, sent) = (&mut f.tx, &mut f.packets_sent);
            let (packets, totals, next_uid) =
                (&mut self.packets, &mut self.totals, &mut self.next_uid);
            let Some(idx) = f.sender.poll_transmit_with(now, |t| {
                let size = u64::from(t.payload_len + addr.header);
                if t.overhead {
                    tx.dummy_packets += 1;
                    tx.dummy_bytes += size;
                } else {
                    *sent += 1;
                    tx.data_bytes += size;
                }
                packets.admit(&mut totals.sent, next_uid, |uid| addr.packet(uid, false, t))
            }) else {
                break;
            };
            self.send_from_sender(fi, idx);
        }
        let f = &mut self.flows[fi];
        let mut all_acked = false;
        while let Some(ev) = f.sender.poll_event() {
            match ev {
                EpEvent::Acked(n) => f.acked += n,
                EpEvent::AllAcked => all_acked = true,
                EpEvent::SlowStartExit => {
                    f.slow_start_exit.get_or_insert(now);
                }
                EpEvent::LossEvent => {}
            }
        }
        if let Some(rec) = f.recovery.as_deref_mut() {
            if let Some(r) = f.sender.rate() {
                rec.observe(now, r.x_bps / 8.0, r.x_recv_bps / 8.0, r.p);
            }
        }
        while let Some(&(end, t0)) = f.files.front() {
            if f.acked < end {
                break;
            }
            f.files.pop_front();
            f.files_done += 1;
            f.file_time_sum += (now - t0).as_secs_f64();
        }
        let timeout = f.sender.poll_timeout();
        if all_acked {
            self.next_sequential_file(fi);
            let f = &mut self.flows[fi];
            Self::schedule_wake(&mut self.events, f, fi, Side::Sender, timeout, now);
        } else {
            Self::schedule_wake(&mut self.events, f, fi, Side::Sender, timeout, now);
        }
    }

    /// Packet `idx`, just built for flow `fi`'s sender, enters the network:
    /// after the host's jitter if the flow has one, else at once.
    #[inline(always)]
    fn send_from_sender(&mut self, fi: usize, idx: u32) {
        let f = &mut self.flows[fi];
        let (jitter, host_jitter) = (f.send_jitter, f.host_jitter);
        if host_jitter > Duration::ZERO {
            // A host's send path (scheduler, syscall, NIC queue) adds
            // a varying delay but keeps the packets in order: entry at
            // max(previous entry, now + U[0, j]). What this breaks is
            // RFC 5348 §4.3 step 4's tie (FlowSpec::host_jitter_bound).
            let wait = Duration(f.jitter_rng.below(host_jitter.0 + 1));
            let at = f.host_last.max(self.now + wait);
            f.host_last = at;
            let (li, src) = (f.inject_link, f.src);
            let end = Instant::ZERO + self.duration;
            if li != u32::MAX && f.injects_pending == 0 && at <= end {
                let l = &self.links[li as usize];
                if !l.free_pending && l.busy_until <= at {
                    // The link will be idle at `at` and only this flow's
                    // packets enter it: what the `Inject` event would do
                    // at `at` is done now, with `at` as the time
                    // (`fold_injects` says why that is the same run).
                    // `forward` reads the time only there, in the idle
                    // fast path of `send_on_link`.
                    let now = std::mem::replace(&mut self.now, at);
                    self.forward(src, idx);
                    self.now = now;
                    return;
                }
            }
            f.injects_pending += 1;
            // Same-instant entries keep the emission order: the rank
            // is the packet's uid, which grows with emission.
            let uid = self.packets.slots[idx as usize].uid;
            let ev = Event::Inject(idx);
            self.events.push_ranked(at, ev, ev.packet_rank(uid));
        } else if jitter > Duration::ZERO {
            // ns-2's Agent `overhead_`: each packet waits U[0, jitter]
            // before it reaches the wire, independently of the others.
            let wait = Duration(f.jitter_rng.below(jitter.0 + 1));
            // Ranked by the packet's uid, not its store slot (slots
            // are reused in an order that is the code's, not the run's).
            f.injects_pending += 1;
            let uid = self.packets.slots[idx as usize].uid;
            let ev = Event::Inject(idx);
            self.events
                .push_ranked(self.now + wait, ev, ev.packet_rank(uid));
        } else {
            let src = f.src;
            self.forward(src, idx);
        }
    }

    /// An `Inject` event: packet `idx`, held back by its sender's jitter,
    /// enters the network.
    pub(super) fn on_inject(&mut self, idx: u32) {
        let p = &self.packets.slots[idx as usize];
        let src = p.src;
        self.flows[p.flow as usize].injects_pending -= 1;
        self.forward(src, idx);
    }

    /// Marks the flows whose host-jittered packets may enter their first
    /// link when they are sent rather than by an `Inject` event at their
    /// entry time (`Flow::inject_link`; issue 28): the flow has a host
    /// jitter (which keeps its packets in order, unlike `send_jitter`),
    /// and its first link is eager (so the run has no snapshot and no
    /// hook), not monitored, and carries no packet of any other flow or
    /// direction. Called after [`Sim::fold_hops`], once links are eager.
    ///
    /// The same run, event for event, less the `Inject`: at send time the
    /// entry is done only if no earlier `Inject` of the flow is pending,
    /// the entry time is no later than the run's end, and the link will
    /// be idle then (nothing queued, its last transmission ended). The
    /// link's state changes only through this flow's packets, in their
    /// order, so it is at the entry time what it is now, and the entry
    /// takes `send_on_link`'s idle fast path either way, computing the
    /// same transmission and arrival times; nothing reads the link in
    /// between (not monitored, no capture, no snapshot); the arrival event
    /// at the far end has the same time and rank (the packet's uid)
    /// whenever it is pushed. As with `fold_hop`, only `events` in the
    /// summary changes (test
    /// `folded_injects_give_the_same_run_with_fewer_events`).
    pub(super) fn fold_injects(&mut self) {
        let n = self.links.len();
        // Per link: the one flow whose first forward hop it is, u32::MAX
        // when none, MANY when anything else takes it.
        const MANY: u32 = u32::MAX - 1;
        let mut user = vec![u32::MAX; n];
        for fi in 0..self.flows.len() as u32 {
            for reverse in [false, true] {
                let Some(path) = self.routes.path(fi, reverse) else {
                    continue;
                };
                for (k, &l) in path.iter().enumerate() {
                    let u = &mut user[l as usize];
                    *u = if !reverse && k == 0 && *u == u32::MAX {
                        fi
                    } else {
                        MANY
                    };
                }
            }
        }
        for (li, &u) in user.iter().enumerate() {
            if u >= MANY {
                continue;
            }
            let l = &self.links[li];
            let f = &mut self.flows[u as usize];
            if f.host_jitter > Duration::ZERO
                && l.eager
                && l.plain
                && !l.queue_sees_all
                && self.pcap.is_empty()
                && !self.monitored.contains(&li)
            {
                f.inject_link = li as u32;
            }
        }
    }

    /// Sends what the receiver has (ACKs, feedback) and arms its timer.
    fn drive_receiver(&mut self, fi: usize) {
        let now = self.now;
        // Sent as they come, as in `drive_sender`.
        loop {
            let f = &mut self.flows[fi];
            let addr = f.addr(fi);
            let tx = &mut f.tx;
            let (packets, totals, next_uid) =
                (&mut self.packets, &mut self.totals, &mut self.next_uid);
            let Some(idx) = f.receiver.poll_transmit_with(now, |t| {
                let size = u64::from(t.payload_len + addr.header);
                tx.ack_bytes += size;
                if t.low_priority {
                    tx.dummy_ack_bytes += size;
                }
                packets.admit(&mut totals.sent, next_uid, |uid| addr.packet(uid, true, t))
            }) else {
                break;
            };
            self.forward(addr.dst, idx);
        }
        let f = &mut self.flows[fi];
        let timeout = f.receiver.poll_timeout();
        Self::schedule_wake(&mut self.events, f, fi, Side::Receiver, timeout, now);
    }

    // ---- applications ----

    /// Sequential files: the previous one is acknowledged; the next one
    /// comes after the configured gap.
    fn next_sequential_file(&mut self, fi: usize) {
        let now = self.now;
        let f = &mut self.flows[fi];
        if let AppSpec::Files {
            mode: FileMode::Sequential,
            gap,
            gap_mean,
            count,
            ..
        } = f.app
        {
            if count.is_none_or(|c| f.files_started < c) {
                // Random idle time (paper 004 §III-C.3 arrivals), from the
                // flow's own stream: deterministic.
                let extra = gap_mean.map_or(Duration::ZERO, |m| {
                    Duration::from_secs_f64(f.rng.exponential(m.0.as_secs_f64()))
                });
                self.events.push(
                    now + gap.0 + extra,
                    Event::App {
                        flow: fi as u32,
                        action: AppAction::File,
                    },
                );
            }
        }
    }

    fn push_file(&mut self, fi: usize) {
        let now = self.now;
        let f = &mut self.flows[fi];
        let AppSpec::Files {
            size,
            size_max,
            new_connection,
            ..
        } = f.app
        else {
            return;
        };
        if new_connection && f.files_started > 0 {
            f.reconnect(now);
        }
        let bytes = match size_max {
            Some(max) if max.0 > size.0 => size.0 + f.rng.below(max.0 - size.0 + 1),
            _ => size.0,
        };
        f.sender.offer(now, bytes);
        f.pushed += bytes;
        f.files.push_back((f.pushed, now));
        f.files_started += 1;
    }

    pub(super) fn on_app(&mut self, fi: usize, action: AppAction) {
        let now = self.now;
        match action {
            AppAction::Start => {
                let f = &mut self.flows[fi];
                f.active = true;
                match f.app {
                    AppSpec::Bulk => f.sender.set_unlimited(now),
                    AppSpec::Files { mode, .. } => {
                        self.push_file(fi);
                        if mode == FileMode::Poisson {
                            self.schedule_poisson(fi);
                        }
                    }
                    AppSpec::OnOff { .. } => {
                        self.on_app(fi, AppAction::On);
                        return;
                    }
                }
                self.drive_sender(fi);
            }
            AppAction::Stop => {
                let f = &mut self.flows[fi];
                f.active = false;
                f.sender.close(now);
            }
            AppAction::On | AppAction::Off => {
                let f = &mut self.flows[fi];
                if !f.active {
                    return;
                }
                let AppSpec::OnOff {
                    on_mean,
                    off_mean,
                    shape,
                } = f.app
                else {
                    return;
                };
                let on = action == AppAction::On;
                let mean = if on { on_mean.0 } else { off_mean.0 };
                let period = Duration::from_secs_f64(f.rng.pareto(mean.as_secs_f64(), shape));
                f.sender.set_paused(now, !on);
                if on {
                    // ns-2's Pareto source hands its agent rate*ON bytes
                    // per burst; we hand them at once (a source that makes
                    // its own traffic, CBR, just resumes).
                    let bytes = (f.rate_bps as f64 / 8.0 * period.as_secs_f64()) as u64;
                    f.sender.offer(now, bytes.max(1));
                }
                let next = if on { AppAction::Off } else { AppAction::On };
                self.events.push(
                    now + period,
                    Event::App {
                        flow: fi as u32,
                        action: next,
                    },
                );
                self.drive_sender(fi);
            }
            AppAction::File => {
                if !self.flows[fi].active {
                    return;
                }
                self.push_file(fi);
                if let AppSpec::Files {
                    mode: FileMode::Poisson,
                    ..
                } = self.flows[fi].app
                {
                    self.schedule_poisson(fi);
                }
                self.drive_sender(fi);
            }
        }
    }

    fn schedule_poisson(&mut self, fi: usize) {
        let now = self.now;
        let f = &mut self.flows[fi];
        if let AppSpec::Files {
            count,
            mean_interarrival: Some(m),
            ..
        } = f.app
        {
            if count.is_some_and(|c| f.files_started >= c) {
                return;
            }
            let gap = Duration::from_secs_f64(f.rng.exponential(m.0.as_secs_f64()));
            self.events.push(
                now + gap,
                Event::App {
                    flow: fi as u32,
                    action: AppAction::File,
                },
            );
        }
    }
}

#[cfg(test)]
mod layout {
    /// What a delivery reads lies in the flow's first line, what a drive
    /// of a sender without host jitter reads in its first three.
    #[test]
    fn a_drive_reads_three_lines_of_its_flow() {
        use std::mem::{offset_of, size_of};

        use super::Flow;
        assert!(offset_of!(Flow, active) < 64 && offset_of!(Flow, conn) + 2 <= 64);
        for (name, end) in [
            ("packets_sent", offset_of!(Flow, packets_sent) + 8),
            ("host_jitter", offset_of!(Flow, host_jitter) + 8),
            ("acked", offset_of!(Flow, acked) + 8),
            ("recovery", offset_of!(Flow, recovery) + 8),
            (
                "files",
                offset_of!(Flow, files) + size_of::<std::collections::VecDeque<(u64, u64)>>(),
            ),
        ] {
            assert!(end <= 192, "{name} ends at byte {end} of Flow");
        }
    }
}
