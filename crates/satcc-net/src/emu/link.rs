//! One direction of an emulated link, as a clock-driven state machine.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

use satcc_proto::rng::Rng;
use satcc_proto::{Duration, Instant};
use satcc_sim::net::loss::ErrorModel;
use satcc_sim::net::packet::DropReason;
use satcc_sim::net::queue::{Admit, Queue, Queued};
use satcc_sim::net::shaper::TokenBucket;

use super::Direction;

/// What one direction did, cumulatively.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirStats {
    /// Datagrams that arrived at the link.
    pub arrived: u64,
    /// Their bytes on the link (the UDP payload; without any
    /// [`LinkDir::set_uncharged`] header).
    pub arrived_bytes: u64,
    /// Datagrams delivered at the far end.
    pub delivered: u64,
    /// Their bytes, counted as `arrived_bytes`.
    pub delivered_bytes: u64,
    /// Dropped by a full queue (or pushed out of a priority queue).
    pub drops_queue: u64,
    /// Dropped early by RED.
    pub drops_red: u64,
    /// Lost to the error model.
    pub drops_error: u64,
    /// Delivered datagrams the socket refused to send.
    pub send_errors: u64,
    /// Nanoseconds the link spent serialising (for utilisation).
    pub busy_ns: u64,
    /// Datagrams waiting in the queue now (not counting the one in
    /// transmission).
    pub queue_pkts: u64,
    /// Most datagrams ever waiting.
    pub max_queue_pkts: u64,
    /// Delivered datagrams handed over more than 1 ms after their due time
    /// (the caller polled late: a loaded machine).
    pub late_1ms: u64,
    /// The largest lateness of a delivery, ns.
    pub max_late_ns: u64,
}

impl DirStats {
    /// All drops.
    pub fn drops(&self) -> u64 {
        self.drops_queue + self.drops_red + self.drops_error
    }
}

struct InFlight {
    at: Instant,
    seq: u64,
    data: Vec<u8>,
}

impl PartialEq for InFlight {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for InFlight {}
impl PartialOrd for InFlight {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for InFlight {
    // Reversed: BinaryHeap is a max-heap and we want the earliest.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.at, o.seq).cmp(&(self.at, self.seq))
    }
}

/// One direction of a link: a queue, a transmitter at the link rate, an
/// error model drawn at the start of each transmission (as the simulator
/// does), and a propagation delay. It owns the datagrams' bytes and hands
/// them back from [`LinkDir::poll`] when they reach the far end.
///
/// Pure: time is whatever the caller passes, so a test can drive it with
/// simulated instants and a relay with the wall clock.
pub struct LinkDir {
    rate_bps: u64,
    delay: Duration,
    overhead: u32,
    queue: Queue,
    error: Option<ErrorModel>,
    /// The token bucket in front of the link, if any.
    shaper: Option<TokenBucket>,
    err_rng: Rng,
    queue_rng: Rng,
    store: HashMap<u32, Vec<u8>>,
    next_idx: u32,
    /// When the transmission in progress ends (`None`: idle).
    free_at: Option<Instant>,
    idle_since: Option<Instant>,
    pipe: BinaryHeap<InFlight>,
    seq: u64,
    stats: DirStats,
    /// Integral of the queue length over time, packet-nanoseconds, up to
    /// `q_since` (for the mean queue a run's summary reports).
    q_area: u64,
    q_since: Instant,
    /// With [`LinkDir::keep_dropped`]: the datagrams dropped since the
    /// last [`LinkDir::take_dropped`], for a caller that attributes drops
    /// to flows by the datagram's contents.
    dropped: Option<Vec<Vec<u8>>>,
    /// Leading bytes of each datagram the link does not carry (see
    /// [`LinkDir::set_uncharged`]).
    uncharged: u32,
}

impl std::fmt::Debug for LinkDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkDir")
            .field("rate_bps", &self.rate_bps)
            .field("delay", &self.delay)
            .field("stats", &self.stats)
            .finish()
    }
}

impl LinkDir {
    /// A direction as `d` describes it. `seed` seeds the error model's and
    /// the queue's random streams; `overhead` bytes are added to each
    /// datagram's UDP payload for its time on the link and its bit-error
    /// probability (see [`super::DEFAULT_OVERHEAD`]).
    pub fn new(d: &Direction, seed: u64, overhead: u32) -> LinkDir {
        LinkDir {
            rate_bps: d.rate_bps,
            delay: d.delay,
            overhead,
            queue: Queue::new(&d.queue, d.rate_bps, d.delay),
            error: d.error.as_ref().map(ErrorModel::new),
            shaper: d
                .shaper
                .as_ref()
                .map(|s| TokenBucket::new(s.rate.0, s.burst.0)),
            err_rng: Rng::stream(seed, 1),
            queue_rng: Rng::stream(seed, 2),
            store: HashMap::new(),
            next_idx: 0,
            free_at: None,
            idle_since: Some(Instant::ZERO),
            pipe: BinaryHeap::new(),
            seq: 0,
            stats: DirStats::default(),
            q_area: 0,
            q_since: Instant::ZERO,
            dropped: None,
            uncharged: 0,
        }
    }

    /// Leading bytes of every datagram handed to [`LinkDir::arrive`] that
    /// are not charged to the link: neither to its serialisation time nor
    /// to its error model nor to the byte counters. `satcc shell` relays
    /// Ethernet frames whose 14-byte header exists only on the veth
    /// devices: the emulated link carries IP packets, as the simulator's
    /// links do.
    pub fn set_uncharged(&mut self, bytes: u32) {
        self.uncharged = bytes;
    }

    /// Changes the rate (takes effect at the next transmission).
    pub fn set_rate(&mut self, rate_bps: u64) {
        self.rate_bps = rate_bps.max(1);
    }

    /// Changes the delay (takes effect for transmissions starting from
    /// now; a shorter delay can reorder, as a real path change would).
    pub fn set_delay(&mut self, delay: Duration) {
        self.delay = delay;
    }

    /// Counters so far.
    pub fn stats(&self) -> DirStats {
        DirStats {
            queue_pkts: self.queue.len() as u64,
            ..self.stats
        }
    }

    /// Keeps every dropped datagram until [`LinkDir::take_dropped`] (off
    /// by default: the relay only counts drops).
    pub fn keep_dropped(&mut self) {
        self.dropped.get_or_insert_with(Vec::new);
    }

    /// The datagrams dropped since the last call (none unless
    /// [`LinkDir::keep_dropped`] was called).
    pub fn take_dropped(&mut self) -> Vec<Vec<u8>> {
        self.dropped
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    fn log_drop(&mut self, data: Vec<u8>) {
        if let Some(d) = self.dropped.as_mut() {
            d.push(data);
        }
    }

    /// Books the queue length since the last change, up to `t`.
    fn note_queue(&mut self, t: Instant) {
        let dt = t.saturating_since(self.q_since).as_nanos();
        self.q_area = self
            .q_area
            .saturating_add(dt.saturating_mul(self.queue.len() as u64));
        self.q_since = self.q_since.max(t);
    }

    /// The time-average number of datagrams waiting from the start to
    /// `end` (transmissions that ended by `end` are completed first).
    pub fn mean_queue_pkts(&mut self, end: Instant) -> f64 {
        self.progress(end);
        self.note_queue(end);
        self.q_area as f64 / end.as_nanos().max(1) as f64
    }

    /// Counts a delivered datagram the socket refused.
    pub fn count_send_error(&mut self) {
        self.stats.send_errors += 1;
    }

    /// The next time something happens: a transmission ends or a datagram
    /// reaches the far end.
    pub fn next_event(&self) -> Option<Instant> {
        let p = self.pipe.peek().map(|f| f.at);
        match (self.free_at, p) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The link is free at `t`: start the next transmission, if any.
    fn start_next(&mut self, t: Instant) {
        if let (Some(s), Some(size)) = (self.shaper.as_mut(), self.queue.head_size()) {
            // The head waits for its tokens (tbf): wake up then, with the
            // link idle but its queue not empty.
            let at = s.ready_at(t, size);
            if at > t {
                self.free_at = Some(at);
                self.idle_since = None;
                return;
            }
            s.take(t, size);
        }
        self.note_queue(t);
        let Some(h) = self.queue.dequeue() else {
            self.free_at = None;
            self.idle_since = Some(t);
            return;
        };
        let tx = Duration::transmission(u64::from(h.size), self.rate_bps);
        let end = t + tx;
        self.free_at = Some(end);
        self.idle_since = None;
        self.stats.busy_ns = self.stats.busy_ns.saturating_add(tx.as_nanos());
        let data = self.store.remove(&h.idx).unwrap_or_default();
        let lost = match self.error.as_mut() {
            Some(e) => e.lose(h.size, &mut self.err_rng),
            None => false,
        };
        if lost {
            self.stats.drops_error += 1;
            self.log_drop(data);
        } else {
            self.seq += 1;
            self.pipe.push(InFlight {
                at: end + self.delay,
                seq: self.seq,
                data,
            });
        }
    }

    /// Completes every transmission that ended by `now`, starting the
    /// next back to back (so the link keeps its rate however late the
    /// caller is).
    fn progress(&mut self, now: Instant) {
        while let Some(f) = self.free_at {
            if f > now {
                break;
            }
            self.start_next(f);
        }
    }

    /// A datagram arrives at `now`.
    pub fn arrive(&mut self, now: Instant, data: Vec<u8>) {
        self.arrive_class(now, data, false);
    }

    /// A datagram arrives at `now`, `low` if it is of the lower-effort
    /// class (RFC 8622; TCP-Peach's dummies). A `priority` queue serves
    /// such datagrams only when no other waits and drops them first, as
    /// the simulator's does; every other queue ignores the class.
    pub fn arrive_class(&mut self, now: Instant, data: Vec<u8>, low: bool) {
        self.progress(now);
        let len = (data.len() as u64).saturating_sub(u64::from(self.uncharged));
        self.stats.arrived += 1;
        self.stats.arrived_bytes += len;
        let size = u32::try_from(len)
            .unwrap_or(u32::MAX)
            .saturating_add(self.overhead);
        let idx = self.next_idx;
        self.next_idx = self.next_idx.wrapping_add(1);
        let p = Queued { idx, size, low };
        self.note_queue(now);
        let idle = if self.free_at.is_none() {
            self.idle_since
        } else {
            None
        };
        match self.queue.enqueue(now, p, idle, &mut self.queue_rng) {
            Admit::Accepted => {
                self.store.insert(idx, data);
            }
            Admit::Dropped(DropReason::RedEarly) => {
                self.stats.drops_red += 1;
                self.log_drop(data);
            }
            Admit::Dropped(_) => {
                self.stats.drops_queue += 1;
                self.log_drop(data);
            }
            Admit::PushedOut(victim) => {
                if let Some(v) = self.store.remove(&victim.idx) {
                    self.log_drop(v);
                }
                self.store.insert(idx, data);
                self.stats.drops_queue += 1;
            }
        }
        self.stats.max_queue_pkts = self.stats.max_queue_pkts.max(self.queue.len() as u64);
        if self.free_at.is_none() {
            self.start_next(now);
        }
    }

    /// The next datagram that has reached the far end by `now`, if any.
    pub fn poll(&mut self, now: Instant) -> Option<Vec<u8>> {
        self.progress(now);
        if self.pipe.peek().is_some_and(|f| f.at <= now) {
            let f = self.pipe.pop()?;
            let late = now.saturating_since(f.at).as_nanos();
            self.stats.max_late_ns = self.stats.max_late_ns.max(late);
            if late > 1_000_000 {
                self.stats.late_1ms += 1;
            }
            self.stats.delivered += 1;
            self.stats.delivered_bytes +=
                (f.data.len() as u64).saturating_sub(u64::from(self.uncharged));
            return Some(f.data);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use satcc_sim::scenario::{ErrorSpec, Prob, QueueSpec};

    fn dir(rate: u64, delay_ms: u64, limit: u32, error: Option<ErrorSpec>) -> LinkDir {
        LinkDir::new(
            &Direction {
                rate_bps: rate,
                delay: Duration::from_millis(delay_ms),
                queue: QueueSpec::DropTail {
                    limit: Some(limit),
                    limit_bytes: None,
                },
                error,
                shaper: None,
            },
            7,
            28,
        )
    }

    #[test]
    fn serialisation_and_delay() {
        // 972 + 28 = 1000 bytes at 8 Mb/s: 1 ms each; 10 ms delay.
        let mut l = dir(8_000_000, 10, 100, None);
        let t0 = Instant::ZERO;
        for _ in 0..3 {
            l.arrive(t0, vec![0; 972]);
        }
        assert_eq!(l.next_event(), Some(t0 + Duration::from_millis(1)));
        let ms = |m| t0 + Duration::from_millis(m);
        assert!(l.poll(ms(10)).is_none());
        assert!(l.poll(ms(11)).is_some());
        assert!(l.poll(ms(11)).is_none());
        // Late polling still delivers both, and the link kept its rate.
        assert!(l.poll(ms(100)).is_some());
        assert!(l.poll(ms(100)).is_some());
        assert_eq!(l.stats().delivered, 3);
        assert_eq!(l.stats().busy_ns, 3_000_000);
    }

    /// An uncharged header (a frame's Ethernet header in `satcc shell`)
    /// takes no link time and is not in the byte counts.
    #[test]
    fn uncharged_header_takes_no_link_time() {
        let mut l = LinkDir::new(
            &Direction {
                rate_bps: 8_000_000,
                delay: Duration::ZERO,
                queue: QueueSpec::DropTail {
                    limit: Some(10),
                    limit_bytes: None,
                },
                error: None,
                shaper: None,
            },
            7,
            0,
        );
        l.set_uncharged(14);
        // 14 + 1000 bytes: 1000 on the link, 1 ms at 8 Mb/s.
        l.arrive(Instant::ZERO, vec![0; 1014]);
        assert_eq!(
            l.next_event(),
            Some(Instant::ZERO + Duration::from_millis(1))
        );
        assert_eq!(
            l.poll(Instant::ZERO + Duration::from_millis(1))
                .unwrap()
                .len(),
            1014
        );
        assert_eq!(l.stats().arrived_bytes, 1000);
        assert_eq!(l.stats().delivered_bytes, 1000);
        assert_eq!(l.stats().busy_ns, 1_000_000);
    }

    /// A shaper (`tbf rate 8mbit burst 4000 limit 3000`, 1000-byte
    /// datagrams on the wire) in front of a 1 Gb/s link, ten datagrams
    /// 10 us apart: four pass at line rate on the full bucket's tokens,
    /// three wait for tokens (1 ms each at 8 Mb/s) and three find the
    /// 3000-byte queue full.
    #[test]
    fn shaper_passes_its_burst_then_shapes() {
        use satcc_sim::scenario::{Bytes, Rate, ShaperSpec};
        let mut l = LinkDir::new(
            &Direction {
                rate_bps: 1_000_000_000,
                delay: Duration::ZERO,
                queue: QueueSpec::DropTail {
                    limit: None,
                    limit_bytes: Some(Bytes(3000)),
                },
                error: None,
                shaper: Some(ShaperSpec {
                    rate: Rate(8_000_000),
                    burst: Bytes(4000),
                    limit: Bytes(3000),
                }),
            },
            7,
            28,
        );
        for i in 0..10 {
            l.arrive(Instant(i * 10_000), vec![0; 972]);
        }
        let mut got = 0;
        while l.poll(Instant(100_000)).is_some() {
            got += 1;
        }
        assert_eq!(got, 4);
        assert_eq!(l.stats().drops_queue, 3);
        // The fifth waits from 40 us, with 40 bytes of tokens, until
        // 1 ms (8 Mb/s is a byte per us), then 8 us on the wire; the next
        // two follow 1 ms apart.
        assert!(l.poll(Instant(990_000)).is_none());
        assert!(l.poll(Instant(1_010_000)).is_some());
        assert!(l.poll(Instant(1_990_000)).is_none());
        assert!(l.poll(Instant(2_010_000)).is_some());
        assert!(l.poll(Instant(3_010_000)).is_some());
        assert!(l.poll(Instant(10_000_000)).is_none());
        assert_eq!(l.stats().delivered, 7);
    }

    /// A strict two-class queue: a lower-effort datagram that arrived
    /// first still leaves after the normal ones waiting with it, and is
    /// the one pushed out when the buffer is full.
    #[test]
    fn priority_queue_serves_lower_effort_last() {
        let mut l = LinkDir::new(
            &Direction {
                rate_bps: 8_000_000,
                delay: Duration::ZERO,
                queue: QueueSpec::Priority {
                    limit: Some(3),
                    limit_bytes: None,
                },
                error: None,
                shaper: None,
            },
            7,
            28,
        );
        // The first goes on the wire at once; then one LE, three normal.
        l.arrive_class(Instant::ZERO, vec![1; 972], false);
        l.arrive_class(Instant::ZERO, vec![2; 972], true);
        l.arrive_class(Instant::ZERO, vec![3; 972], false);
        l.arrive_class(Instant::ZERO, vec![4; 972], false);
        // Full (3 waiting): the LE datagram is pushed out for this one.
        l.arrive_class(Instant::ZERO, vec![5; 972], false);
        l.arrive_class(Instant::ZERO, vec![6; 972], true);
        let mut order = Vec::new();
        while let Some(d) = l.poll(Instant(1_000_000_000)) {
            order.push(d[0]);
        }
        assert_eq!(l.stats().drops_queue, 2, "{order:?}");
        assert_eq!(order, vec![1, 3, 4, 5]);
        // Without the class the same arrivals are served in order.
        let mut l = dir(8_000_000, 0, 10, None);
        l.arrive_class(Instant::ZERO, vec![1; 972], false);
        l.arrive_class(Instant::ZERO, vec![2; 972], true);
        l.arrive_class(Instant::ZERO, vec![3; 972], false);
        let mut order = Vec::new();
        while let Some(d) = l.poll(Instant(1_000_000_000)) {
            order.push(d[0]);
        }
        assert_eq!(order, vec![1, 2, 3]);
    }

    #[test]
    fn droptail_limit_counts_the_waiting_only() {
        let mut l = dir(8_000_000, 0, 2, None);
        for _ in 0..5 {
            l.arrive(Instant::ZERO, vec![0; 972]);
        }
        // One in transmission, two waiting, two dropped.
        assert_eq!(l.stats().drops_queue, 2);
        assert_eq!(l.stats().queue_pkts, 2);
    }

    #[test]
    fn uniform_loss_rate() {
        let mut l = dir(
            1_000_000_000,
            0,
            100_000,
            Some(ErrorSpec::Uniform { per: Prob(0.1) }),
        );
        let n = 20_000;
        for i in 0..n {
            l.arrive(Instant(i * 1_000_000), vec![0; 100]);
            while l.poll(Instant(i * 1_000_000 + 999_999)).is_some() {}
        }
        let lost = l.stats().drops_error as f64 / n as f64;
        // sd = sqrt(0.09 / 2e4) = 0.0021; 4 sd.
        assert!((lost - 0.1).abs() < 0.0085, "{lost}");
        assert_eq!(l.stats().delivered + l.stats().drops_error, n);
    }

    /// The simulator's RED runs here too: an overloaded RED queue drops
    /// early (and not only when full).
    #[test]
    fn red_drops_early() {
        let q: QueueSpec = toml::from_str::<toml::Table>("q = { kind = \"red\", limit = 100 }")
            .unwrap()
            .remove("q")
            .unwrap()
            .try_into()
            .unwrap();
        let mut l = LinkDir::new(
            &Direction {
                rate_bps: 1_000_000,
                delay: Duration::ZERO,
                queue: q,
                error: None,
                shaper: None,
            },
            3,
            28,
        );
        // 2 Mb/s into 1 Mb/s for 5 s.
        for i in 0..1250u64 {
            let t = Instant(i * 4_000_000);
            l.arrive(t, vec![0; 972]);
            while l.poll(t).is_some() {}
        }
        let s = l.stats();
        assert!(s.drops_red > 0, "{s:?}");
        assert!(s.max_queue_pkts < 100, "{s:?}");
    }

    /// Bit errors and Gilbert-Elliott bursts come from the simulator's
    /// error model: BER 1e-5 on 1000-byte packets loses 7.7 %; a
    /// Gilbert-Elliott channel loses in runs.
    #[test]
    fn ber_and_gilbert() {
        let mut l = dir(
            1_000_000_000,
            0,
            100_000,
            Some(ErrorSpec::Ber { ber: Prob(1e-5) }),
        );
        let n = 20_000u64;
        for i in 0..n {
            l.arrive(Instant(i * 1_000_000), vec![0; 972]);
            while l.poll(Instant(i * 1_000_000 + 999_999)).is_some() {}
        }
        let lost = l.stats().drops_error as f64 / n as f64;
        // 1 - (1 - 1e-5)^8000 = 0.0769; sd = 0.0019.
        assert!((lost - 0.0769).abs() < 0.0076, "{lost}");
        let mut g = dir(
            1_000_000_000,
            0,
            100_000,
            Some(ErrorSpec::Gilbert {
                p_gb: Prob(0.01),
                p_bg: Prob(0.25),
                loss_good: Prob(0.0),
                loss_bad: Prob(1.0),
            }),
        );
        let (mut runs, mut prev_lost, mut lost) = (0u64, false, 0u64);
        for i in 0..n {
            let before = g.stats().drops_error;
            g.arrive(Instant(i * 1_000_000), vec![0; 100]);
            while g.poll(Instant(i * 1_000_000 + 999_999)).is_some() {}
            let l = g.stats().drops_error > before;
            if l {
                lost += 1;
                if !prev_lost {
                    runs += 1;
                }
            }
            prev_lost = l;
        }
        // Mean bad-state run 1 / p_bg = 4 packets.
        let burst = lost as f64 / runs as f64;
        assert!((burst - 4.0).abs() < 0.6, "mean loss run {burst}");
    }
}
