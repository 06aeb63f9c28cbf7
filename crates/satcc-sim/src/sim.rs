//! The simulator: links, flows and the event loop that drives the sans-IO
//! endpoints of `satcc-proto`.

use std::collections::{BTreeMap, VecDeque};

use satcc_proto::rng::Rng;
use satcc_proto::tcp::{
    PeachConfig, ReceiverConfig, RtoSsthresh, RttTiming, SenderConfig, SenderEvent, TcpReceiver,
    TcpSender, Variant,
};
use satcc_proto::tfrc::{
    FeedbackPolicy, ReceiverConfig as TfrcReceiverConfig, SenderConfig as TfrcSenderConfig,
    TfrcReceiver, TfrcSender,
};
use satcc_proto::tfrcp::{
    Pacing, ReceiverConfig as TfrcpReceiverConfig, SenderConfig as TfrcpSenderConfig, Strategy,
    TfrcpReceiver, TfrcpSender,
};
use satcc_proto::{Duration, Instant};

use crate::engine::{AppAction, Event, EventQueue};
use crate::error::ErrorModel;
use crate::hook::{HookVerdict, LinkHook, LinkView};
use crate::metrics::{self, jain_index, normalized_throughput};
use crate::packet::{DropReason, Packet, Payload, INITIAL_TTL};
use crate::queue::{Admit, Queue, Queued};
use crate::report::{
    ClassSummary, DummySummary, FlowSummary, FriendlinessSummary, LinkSummary, PacketTotals,
    Summary,
};
use crate::scenario::{
    AppSpec, FeedbackSpec, FileMode, FlowSpec, PacingSpec, Protocol, RtoSsthreshSpec,
    RttTimingSpec, Scenario, StrategySpec,
};
use crate::series::Series;
use crate::topology::NetDef;

// Random stream ids: each component draws from its own stream of the run
// seed, so adding a flow never changes the draws of a link.
const STREAM_LINK: u64 = 1 << 32;
const STREAM_QUEUE: u64 = 2 << 32;
const STREAM_FLOW: u64 = 3 << 32;
const STREAM_JITTER: u64 = 4 << 32;

/// Counters of a flow's closed TCP connections, so that per-flow totals
/// survive a fresh connection per file.
#[derive(Clone, Copy, Debug, Default)]
struct PastConns {
    delivered: u64,
    acked: u64,
    retransmits: u64,
    timeouts: u64,
    rtt_samples: u64,
    sum_rtt: Duration,
    dummy_acks: u64,
    fallback: bool,
}

impl PastConns {
    fn add(&mut self, s: &satcc_proto::tcp::SenderStats, delivered: u64) {
        self.delivered += delivered;
        self.acked += s.acked_bytes;
        self.retransmits += s.retransmits;
        self.timeouts += s.timeouts;
        self.rtt_samples += s.rtt_samples;
        self.sum_rtt += s.sum_rtt;
        self.dummy_acks += s.dummy_acks;
        self.fallback |= s.peach_fallback;
    }
}

/// Wire bytes a flow put on the network, by kind (headers included).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TxBytes {
    /// Data packets (retransmissions included), sender to receiver.
    pub data_bytes: u64,
    /// TCP-Peach dummy segments.
    pub dummy_packets: u64,
    /// Bytes of those dummies.
    pub dummy_bytes: u64,
    /// Everything the receiver sent back (ACKs, feedback).
    pub ack_bytes: u64,
    /// The part of `ack_bytes` that answered dummies.
    pub dummy_ack_bytes: u64,
}

/// A directed link in the running network.
#[derive(Debug)]
pub(crate) struct Link {
    pub name: String,
    pub to: u32,
    pub rate_bps: u64,
    pub delay: Duration,
    pub access: bool,
    queue: Queue,
    error: Option<ErrorModel>,
    err_rng: Rng,
    queue_rng: Rng,
    busy_until: Instant,
    free_pending: bool,
    /// Packets on the wire: (arrival time at the far end, packet index).
    pipe: VecDeque<(Instant, u32)>,
    /// Serialisation times of the last two packet sizes seen (data and
    /// ACK sizes repeat; the division is the costly part).
    tx_cache: [(u32, Duration); 2],
    hook: Option<Box<dyn LinkHook>>,
    /// The opposite direction between the same nodes (its queue is what a
    /// REFWA hook on this link needs for ACKs).
    reverse: Option<u32>,
    // Counters.
    pub arrivals: u64,
    pub drops_queue: u64,
    pub drops_red: u64,
    pub drops_error: u64,
    pub drops_other: u64,
    pub busy_ns: u64,
    q_area: u128,
    q_last: Instant,
}

impl Link {
    fn drops(&self) -> u64 {
        self.drops_queue + self.drops_red + self.drops_error + self.drops_other
    }
    fn note_queue(&mut self, now: Instant) {
        self.q_area += self.queue.len() as u128 * u128::from((now - self.q_last).as_nanos());
        self.q_last = now;
    }
    pub(crate) fn queue_len(&self) -> usize {
        self.queue.len()
    }
}

#[derive(Debug)]
struct Cbr {
    interval: Duration,
    payload: u32,
    next: Instant,
    seq: u64,
    on: bool,
    low_priority: bool,
}

#[derive(Debug)]
enum Sender {
    Tcp(Box<TcpSender>),
    Tfrc(Box<TfrcSender>),
    Tfrcp(Box<TfrcpSender>),
    Cbr(Cbr),
}

#[derive(Debug)]
enum Receiver {
    Tcp(Box<TcpReceiver>),
    Tfrc(Box<TfrcReceiver>),
    Tfrcp(Box<TfrcpReceiver>),
    Sink { bytes: u64 },
}

#[derive(Debug)]
pub(crate) struct Flow {
    pub id: u32,
    pub name: String,
    pub protocol: Protocol,
    pub src: u32,
    pub dst: u32,
    header: u32,
    pub mss: u32,
    measured: bool,
    start: Instant,
    stop: Instant,
    active: bool,
    sender: Sender,
    receiver: Receiver,
    wake: [Instant; 2],
    app: AppSpec,
    rate_bps: u64,
    rng: Rng,
    // Files: (cumulative end byte, arrival time) of files not yet acked.
    files: VecDeque<(u64, Instant)>,
    pushed: u64,
    files_started: u32,
    pub files_done: u64,
    file_time_sum: f64,
    // Counters.
    pub packets_sent: u64,
    pub drops: u64,
    /// Wire bytes sent, by kind.
    pub tx: TxBytes,
    /// Current connection generation (see [`Packet::conn`]).
    conn: u16,
    /// TCP: what a fresh connection is built from.
    tcp_cfg: Option<Box<(SenderConfig, ReceiverConfig)>>,
    /// TCP: totals of the connections closed so far.
    past: PastConns,
    /// Packets that arrived for a connection already closed.
    pub stale: u64,
    /// Upper bound of the random hold before each data packet is sent.
    send_jitter: Duration,
    jitter_rng: Rng,
    delivered_at_measure: u64,
    /// When a rate-based sender first learned of a loss (left slow start).
    slow_start_exit: Option<Instant>,
}

impl Flow {
    pub(crate) fn delivered_bytes(&self) -> u64 {
        match &self.receiver {
            Receiver::Tcp(r) => self.past.delivered + r.stats().delivered_bytes,
            Receiver::Tfrc(r) => r.stats().delivered_bytes,
            Receiver::Tfrcp(r) => r.stats().delivered_bytes,
            Receiver::Sink { bytes } => *bytes,
        }
    }
    pub(crate) fn cwnd(&self) -> f64 {
        match &self.sender {
            Sender::Tcp(s) => s.stats().cwnd,
            _ => f64::NAN,
        }
    }
    pub(crate) fn srtt_s(&self) -> f64 {
        match &self.sender {
            Sender::Tcp(s) => s.stats().srtt.map_or(f64::NAN, |d| d.as_secs_f64()),
            Sender::Tfrc(s) => s.stats().rtt.map_or(f64::NAN, |d| d.as_secs_f64()),
            Sender::Tfrcp(s) => s.stats().rtt.map_or(f64::NAN, |d| d.as_secs_f64()),
            Sender::Cbr(_) => f64::NAN,
        }
    }
    /// Rate-based senders: (X, X_recv, p) as the sender sees them, X and
    /// X_recv in bits per second.
    pub(crate) fn rate_state(&self) -> Option<(f64, f64, f64)> {
        match &self.sender {
            Sender::Tfrc(s) => {
                let st = s.stats();
                Some((st.x * 8.0, st.x_recv * 8.0, st.p))
            }
            Sender::Tfrcp(s) => {
                let st = s.stats();
                let bits = f64::from(s.config().s) * 8.0;
                Some((st.rate_pps * bits, f64::NAN, st.p))
            }
            _ => None,
        }
    }
    /// Close the TCP connection and open a fresh one (the previous file is
    /// fully acknowledged; whatever of it is still in flight is ignored).
    fn reconnect(&mut self, now: Instant) {
        let (Sender::Tcp(s), Receiver::Tcp(r), Some(cfg)) =
            (&self.sender, &self.receiver, self.tcp_cfg.as_deref())
        else {
            return;
        };
        self.past.add(&s.stats(), r.stats().delivered_bytes);
        self.conn = self.conn.wrapping_add(1);
        self.sender = Sender::Tcp(Box::new(TcpSender::new(cfg.0.clone(), now)));
        self.receiver = Receiver::Tcp(Box::new(TcpReceiver::new(cfg.1.clone())));
    }

    fn ends(&self) -> Ends {
        Ends {
            id: self.id,
            src: self.src,
            dst: self.dst,
            header: self.header,
            conn: self.conn,
        }
    }
    /// Feedback packets the receiver has sent (rate-based protocols).
    pub(crate) fn feedback_sent(&self) -> Option<u64> {
        match &self.receiver {
            Receiver::Tfrc(r) => Some(r.stats().feedback_sent),
            _ => None,
        }
    }
}

/// Who a flow's packets go between, copied out so that packets can be built
/// while the flow's endpoints are borrowed.
#[derive(Clone, Copy, Debug)]
struct Ends {
    id: u32,
    src: u32,
    dst: u32,
    header: u32,
    conn: u16,
}

impl Ends {
    /// A packet from the flow's sender to its receiver.
    fn packet(self, size: u32, low_priority: bool, payload: Payload) -> Packet {
        Packet {
            uid: 0,
            flow: self.id,
            src: self.src,
            dst: self.dst,
            size,
            ttl: INITIAL_TTL,
            low_priority,
            conn: self.conn,
            payload,
        }
    }
    /// A packet from the flow's receiver back to its sender.
    fn reply(self, size: u32, low_priority: bool, payload: Payload) -> Packet {
        Packet {
            src: self.dst,
            dst: self.src,
            ..self.packet(size, low_priority, payload)
        }
    }
}

/// Packets live in a slab; queues and events hold indices.
#[derive(Debug, Default)]
struct PacketStore {
    slots: Vec<Packet>,
    free: Vec<u32>,
    live: u64,
}

impl PacketStore {
    fn insert(&mut self, p: Packet) -> u32 {
        self.live += 1;
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = p;
                i
            }
            None => {
                self.slots.push(p);
                (self.slots.len() - 1) as u32
            }
        }
    }
    fn remove(&mut self, i: u32) -> Packet {
        self.live -= 1;
        self.free.push(i);
        self.slots[i as usize]
    }
}

/// A flow's start: `start` plus a uniform draw over `start_spread`, the
/// first draw of the flow's own random stream.
fn flow_start(spec: &FlowSpec, rng: &mut Rng) -> Duration {
    let spread = spec.start_spread.0.as_nanos();
    let offset = if spread > 0 { rng.below(spread + 1) } else { 0 };
    spec.start.0 + Duration(offset)
}

/// The start time of every flow instance of `sc`, in flow order, exactly as
/// a run draws them (the ns-2 export uses the same times).
pub fn flow_starts(sc: &Scenario) -> Vec<Duration> {
    let mut out = Vec::new();
    for spec in &sc.flows {
        for _ in 0..spec.count {
            let id = out.len() as u64;
            let mut rng = Rng::stream(sc.seed, STREAM_FLOW + id);
            out.push(flow_start(spec, &mut rng));
        }
    }
    out
}

/// A simulation in progress. Build it with [`Sim::new`], advance it with
/// [`Sim::run_until`], and collect results with [`Sim::finish`].
#[derive(Debug)]
pub struct Sim {
    name: String,
    seed: u64,
    duration: Duration,
    now: Instant,
    events: EventQueue,
    pub(crate) links: Vec<Link>,
    pub(crate) flows: Vec<Flow>,
    nodes: Vec<String>,
    routes: Vec<u32>,
    packets: PacketStore,
    outbox: Vec<Packet>,
    next_uid: u64,
    totals: PacketTotals,
    interval: Duration,
    measure_from: Instant,
    pub(crate) monitored: Vec<usize>,
    series: Option<Series>,
    pcap: Vec<(usize, crate::capture::LinkCapture)>,
    /// The built network, for recomputing routes at snapshots.
    net: NetDef,
    /// Which links are up (all, unless a snapshot took some down).
    link_up: Vec<bool>,
    snapshots: Vec<crate::snapshot::Snapshot>,
    refwa: Vec<(
        String,
        std::rc::Rc<std::cell::RefCell<satcc_proto::refwa::Refwa>>,
    )>,
}

impl Sim {
    /// Builds the network and flows of a validated scenario.
    pub fn new(sc: &Scenario, opts: &crate::RunOptions) -> Result<Sim, crate::SimError> {
        let net = NetDef::build(sc);
        let routes = net.flow_routes_over(&vec![true; net.links.len()]);
        let n = net.nodes.len();
        let mut links = Vec::with_capacity(net.links.len());
        for (i, l) in net.links.iter().enumerate() {
            links.push(Link {
                name: l.name.clone(),
                to: l.to,
                rate_bps: l.rate_bps,
                delay: l.delay,
                access: l.access,
                queue: Queue::new(&l.queue, l.rate_bps, l.delay),
                error: l.error.as_ref().map(ErrorModel::new),
                err_rng: Rng::stream(sc.seed, STREAM_LINK + i as u64),
                queue_rng: Rng::stream(sc.seed, STREAM_QUEUE + i as u64),
                busy_until: Instant::ZERO,
                free_pending: false,
                pipe: VecDeque::new(),
                tx_cache: [(0, Duration::ZERO); 2],
                hook: None,
                reverse: reverse_of(&net, i),
                arrivals: 0,
                drops_queue: 0,
                drops_red: 0,
                drops_error: 0,
                drops_other: 0,
                busy_ns: 0,
                q_area: 0,
                q_last: Instant::ZERO,
            });
        }
        let monitored: Vec<usize> = match &sc.record.links {
            Some(names) => {
                let mut v = Vec::new();
                for (k, name) in names.iter().enumerate() {
                    let i = links.iter().position(|l| &l.name == name).ok_or_else(|| {
                        crate::SimError {
                            field: format!("record.links[{k}]"),
                            message: format!(
                                "unknown link '{name}' (links: {})",
                                link_names_hint(&links)
                            ),
                        }
                    })?;
                    v.push(i);
                }
                v
            }
            None => (0..links.len()).filter(|&i| !links[i].access).collect(),
        };
        let mut pcap = Vec::new();
        for name in &opts.pcap_links {
            let i = links
                .iter()
                .position(|l| &l.name == name)
                .ok_or_else(|| crate::SimError {
                    field: "--pcap".into(),
                    message: format!("unknown link '{name}' (links: {})", link_names_hint(&links)),
                })?;
            let dir = opts.pcap_dir.clone().unwrap_or_else(|| ".".into());
            let cap =
                crate::capture::LinkCapture::create(&dir, name).map_err(|e| crate::SimError {
                    field: "--pcap".into(),
                    message: format!("cannot write capture for '{name}': {e}"),
                })?;
            pcap.push((i, cap));
        }
        let mut sim = Sim {
            name: sc.name.clone().unwrap_or_else(|| "scenario".into()),
            seed: sc.seed,
            duration: sc.duration.0,
            now: Instant::ZERO,
            events: EventQueue::new(),
            links,
            flows: Vec::new(),
            nodes: net.nodes.clone(),
            routes,
            packets: PacketStore::default(),
            outbox: Vec::new(),
            next_uid: 0,
            totals: PacketTotals::default(),
            interval: sc.record.interval.0,
            measure_from: Instant::ZERO + sc.record.measure_from.0,
            monitored,
            series: None,
            pcap,
            link_up: vec![true; net.links.len()],
            snapshots: crate::snapshot::resolve(&sc.snapshots, &net.links)?,
            net,
            refwa: Vec::new(),
        };
        let _ = n;
        for (k, s) in sim.snapshots.iter().enumerate() {
            sim.events.push(s.at, Event::Snapshot(k as u32));
        }
        let infos: Vec<crate::refwa_hook::LinkInfo<'_>> = sim
            .links
            .iter()
            .map(|l| crate::refwa_hook::LinkInfo {
                name: &l.name,
                rate_bps: l.rate_bps,
                delay: l.delay,
                access: l.access,
                limit_pkts: l.queue.limit_pkts(),
                reverse: l.reverse.map(|r| r as usize),
            })
            .collect();
        let (ctrls, hooks) = crate::refwa_hook::build(sc, &infos)?;
        for (li, h) in hooks {
            sim.links[li].hook = Some(Box::new(h));
        }
        sim.refwa = ctrls;
        let mut id = 0u32;
        for spec in &sc.flows {
            for _ in 0..spec.count {
                let (src, dst) = sim.net.endpoints[id as usize];
                let base_rtt = sim.net.base_rtt(&sim.routes, src, dst);
                let flow = sim.make_flow(id, spec, (src, dst), base_rtt, sc);
                sim.events.push(
                    flow.start,
                    Event::App {
                        flow: id,
                        action: AppAction::Start,
                    },
                );
                if flow.stop < Instant::ZERO + sim.duration {
                    sim.events.push(
                        flow.stop,
                        Event::App {
                            flow: id,
                            action: AppAction::Stop,
                        },
                    );
                }
                sim.flows.push(flow);
                id += 1;
            }
        }
        if opts.series {
            sim.series = Some(Series::new(&sim));
            sim.events.push(Instant::ZERO + sim.interval, Event::Sample);
        }
        if sim.measure_from > Instant::ZERO {
            sim.events.push(sim.measure_from, Event::MeasureStart);
        }
        Ok(sim)
    }

    fn make_flow(
        &self,
        id: u32,
        spec: &FlowSpec,
        (src, dst): (u32, u32),
        base_rtt: Option<Duration>,
        sc: &Scenario,
    ) -> Flow {
        let mut rng = Rng::stream(sc.seed, STREAM_FLOW + u64::from(id));
        let start = Instant::ZERO + flow_start(spec, &mut rng);
        let stop = spec
            .stop
            .map_or(Instant::ZERO + sc.duration.0, |d| Instant::ZERO + d.0);
        let mut tcp_cfg = None;
        let (sender, receiver, header) = if spec.protocol.is_tcp() {
            let variant = match spec.protocol {
                Protocol::Reno => Variant::Reno,
                Protocol::NewReno | Protocol::Peach => Variant::NewReno,
                _ => Variant::Sack,
            };
            let peach = spec.protocol.is_peach().then(|| {
                let pd = PeachConfig::default();
                PeachConfig {
                    initial_rtt: spec
                        .handshake_rtt
                        .map(|d| d.0)
                        .or(base_rtt)
                        .unwrap_or(pd.initial_rtt),
                    adsn_factor: spec.peach_adsn.unwrap_or(pd.adsn_factor),
                    wdsn_factor: spec.peach_wdsn.unwrap_or(pd.wdsn_factor),
                    dummies_per_ack: spec.peach_dummies_per_ack.unwrap_or(pd.dummies_per_ack),
                    rr_timeout_rtts: spec.peach_rr_timeout.unwrap_or(pd.rr_timeout_rtts),
                    ..pd
                }
            });
            let d = SenderConfig::default();
            let rfc3390 = satcc_proto::tcp::rfc3390_initial_window(spec.mss);
            let cfg = SenderConfig {
                variant,
                mss: spec.mss,
                initial_window: spec.initial_window.unwrap_or(rfc3390),
                initial_ssthresh: spec.initial_ssthresh.unwrap_or(d.initial_ssthresh),
                max_window: d.max_window,
                dupack_threshold: spec.dupack_threshold.unwrap_or(d.dupack_threshold),
                min_rto: spec.min_rto.map_or(d.min_rto, |x| x.0),
                max_rto: spec.max_rto.map_or(d.max_rto, |x| x.0),
                initial_rto: spec.initial_rto.map_or(d.initial_rto, |x| x.0),
                clock_granularity: d.clock_granularity,
                newreno_impatient: spec.newreno_impatient,
                limited_transmit: spec.limited_transmit,
                rto_ssthresh: match spec.rto_ssthresh {
                    RtoSsthreshSpec::FlightSize => RtoSsthresh::FlightSize,
                    RtoSsthreshSpec::Window => RtoSsthresh::Window,
                },
                rtt_timing: match spec.rtt_timing {
                    RttTimingSpec::Timestamps => RttTiming::Timestamps,
                    RttTimingSpec::Karn => RttTiming::Karn,
                },
                peach,
                // The handshake tells the sender the receiver's window.
                initial_rwnd: spec.rwnd,
            };
            let rcfg = ReceiverConfig {
                rwnd: spec.rwnd,
                sack: variant == Variant::Sack,
                echo_dummy: spec.echo_dummy,
                delayed_ack: spec.delayed_ack,
                delack_timeout: spec
                    .delack_timeout
                    .map_or(ReceiverConfig::default().delack_timeout, |x| x.0),
            };
            tcp_cfg = Some(Box::new((cfg.clone(), rcfg.clone())));
            (
                Sender::Tcp(Box::new(TcpSender::new(cfg, Instant::ZERO))),
                Receiver::Tcp(Box::new(TcpReceiver::new(rcfg))),
                spec.wire_header_bytes(),
            )
        } else if spec.protocol.is_tfrc() {
            let sd = TfrcSenderConfig::default();
            let rd = TfrcReceiverConfig::default();
            let policy = match spec.feedback.unwrap_or_default() {
                FeedbackSpec::Standard => FeedbackPolicy::Standard,
                FeedbackSpec::Dynamic => FeedbackPolicy::Dynamic {
                    // Paper 001 §3: RTTref = 100 ms.
                    rtt_ref: spec.rtt_ref.map_or(Duration::from_millis(100), |d| d.0),
                },
            };
            (
                Sender::Tfrc(Box::new(TfrcSender::new(
                    TfrcSenderConfig {
                        s: spec.mss,
                        oscillation_damping: spec.oscillation_damping,
                        ..sd
                    },
                    Instant::ZERO,
                ))),
                Receiver::Tfrc(Box::new(TfrcReceiver::new(TfrcReceiverConfig {
                    s: spec.mss,
                    policy,
                    history_discounting: spec.history_discounting,
                    ..rd
                }))),
                spec.wire_header_bytes(),
            )
        } else if spec.protocol == Protocol::Tfrcp {
            let d = TfrcpSenderConfig::default();
            let strategy = match spec.strategy.unwrap_or(StrategySpec::S1) {
                StrategySpec::S1 => Strategy::Fixed {
                    m: spec.m.map_or(
                        match d.strategy {
                            Strategy::Fixed { m } => m,
                            _ => Duration::from_secs(3),
                        },
                        |m| m.0,
                    ),
                },
                StrategySpec::S2 => Strategy::RttMultiple {
                    k: spec.k.unwrap_or(10.0),
                },
                StrategySpec::S3 => Strategy::Random {
                    base: spec.m_base.map_or(Duration::ZERO, |m| m.0),
                    spread: spec.m_spread.map_or(Duration::ZERO, |m| m.0),
                },
            };
            let cfg = TfrcpSenderConfig {
                s: spec.mss,
                r0: spec.initial_rate.unwrap_or(d.r0),
                strategy,
                pacing: match spec.pacing {
                    Some(PacingSpec::Burst) => Pacing::Burst,
                    _ => Pacing::Even,
                },
                wmax: spec.wmax.unwrap_or(d.wmax),
                min_rto: spec.min_rto.map_or(d.min_rto, |x| x.0),
                initial_rto: spec.initial_rto.map_or(d.initial_rto, |x| x.0),
                max_rto: spec.max_rto.map_or(d.max_rto, |x| x.0),
                ..d
            };
            // S3's draws come from the flow's own stream.
            let seed = rng.next_u64();
            (
                Sender::Tfrcp(Box::new(TfrcpSender::new(cfg, Instant::ZERO, seed))),
                Receiver::Tfrcp(Box::new(TfrcpReceiver::new(TfrcpReceiverConfig::default()))),
                spec.wire_header_bytes(),
            )
        } else {
            let payload = spec.packet_size.unwrap_or(spec.mss);
            let header = spec.wire_header_bytes();
            let rate = spec.rate.map_or(1_000_000, |r| r.0);
            (
                Sender::Cbr(Cbr {
                    interval: Duration::transmission(u64::from(payload + header), rate),
                    payload,
                    next: start,
                    seq: 0,
                    on: false,
                    low_priority: spec.low_priority,
                }),
                Receiver::Sink { bytes: 0 },
                header,
            )
        };
        Flow {
            id,
            name: spec
                .name
                .clone()
                .unwrap_or_else(|| spec.protocol.name().to_string()),
            protocol: spec.protocol,
            src,
            dst,
            header,
            mss: spec.mss,
            measured: spec.measured,
            start,
            stop,
            active: false,
            sender,
            receiver,
            wake: [Instant::MAX; 2],
            app: spec.app.clone(),
            rate_bps: spec.rate.map_or(0, |r| r.0),
            rng,
            files: VecDeque::new(),
            pushed: 0,
            files_started: 0,
            files_done: 0,
            file_time_sum: 0.0,
            packets_sent: 0,
            drops: 0,
            tx: TxBytes::default(),
            conn: 0,
            tcp_cfg,
            past: PastConns::default(),
            stale: 0,
            send_jitter: spec.send_jitter.map_or(Duration::ZERO, |d| d.0),
            jitter_rng: Rng::stream(sc.seed, STREAM_JITTER + u64::from(id)),
            delivered_at_measure: 0,
            slow_start_exit: None,
        }
    }

    /// Attaches a controller to the link named `name`.
    pub fn attach_hook(&mut self, name: &str, hook: Box<dyn LinkHook>) -> Result<(), String> {
        let l = self
            .links
            .iter_mut()
            .find(|l| l.name == name)
            .ok_or_else(|| format!("unknown link '{name}'"))?;
        l.hook = Some(hook);
        Ok(())
    }

    /// Current simulated time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// The run's end.
    pub fn end(&self) -> Instant {
        Instant::ZERO + self.duration
    }

    /// Events processed so far.
    pub fn events_processed(&self) -> u64 {
        self.events.processed()
    }

    /// Runs every event due no later than `until` (capped at the run's end).
    pub fn run_until(&mut self, until: Instant) {
        let until = until.min(self.end());
        while let Some((t, ev)) = self.events.pop_until(until) {
            self.now = t;
            match ev {
                Event::Arrive(link) => self.on_arrive(link as usize),
                Event::LinkFree(link) => self.on_link_free(link as usize),
                Event::Wake(ep) => self.on_wake(ep),
                Event::Inject(idx) => {
                    let src = self.packets.slots[idx as usize].src;
                    self.forward(src, idx);
                }
                Event::App { flow, action } => self.on_app(flow as usize, action),
                Event::Sample => self.on_sample(),
                Event::MeasureStart => {
                    for f in &mut self.flows {
                        f.delivered_at_measure = f.delivered_bytes();
                    }
                }
                Event::Snapshot(k) => self.on_snapshot(k as usize),
            }
        }
        self.now = until;
    }

    // ---- links ----

    fn inject(&mut self, p: Packet) {
        let node = p.src;
        let idx = self.store_new(p);
        self.forward(node, idx);
    }

    /// A new packet enters the store: from here until it is delivered or
    /// dropped, hops pass its index, never a copy.
    fn store_new(&mut self, mut p: Packet) -> u32 {
        self.totals.sent += 1;
        p.uid = self.next_uid;
        self.next_uid += 1;
        self.packets.insert(p)
    }

    /// Removes a packet from the network as dropped.
    fn drop_idx(&mut self, idx: u32, _why: DropReason) {
        let p = self.packets.remove(idx);
        self.totals.dropped += 1;
        if let Some(f) = self.flows.get_mut(p.flow as usize) {
            f.drops += 1;
        }
    }

    fn forward(&mut self, node: u32, idx: u32) {
        let n = self.nodes.len();
        let dst = self.packets.slots[idx as usize].dst;
        let li = self.routes[node as usize * n + dst as usize];
        if li == u32::MAX {
            self.drop_idx(idx, DropReason::NoRoute);
            return;
        }
        self.send_on_link(li as usize, idx);
    }

    fn send_on_link(&mut self, li: usize, idx: u32) {
        let now = self.now;
        // Only hooked links look at their reverse direction's queue.
        let reverse_queue_pkts = match &self.links[li] {
            l if l.hook.is_some() => l.reverse.map(|r| self.links[r as usize].queue.len()),
            _ => None,
        };
        let link = &mut self.links[li];
        link.arrivals += 1;
        if let Some(h) = link.hook.as_mut() {
            let view = LinkView {
                rate_bps: link.rate_bps,
                queue_pkts: link.queue.len(),
                queue_bytes: link.queue.bytes(),
                limit_pkts: link.queue.limit_pkts(),
                reverse_queue_pkts,
            };
            if h.on_packet(now, &mut self.packets.slots[idx as usize], &view) == HookVerdict::Drop {
                link.drops_other += 1;
                self.drop_idx(idx, DropReason::Hook);
                return;
            }
        }
        // A link whose transmission ends exactly now but whose LinkFree
        // event has not run yet is not idle: that event pulls the queue.
        let idle = link.busy_until <= now && !link.free_pending;
        let idle_since = idle.then_some(link.busy_until);
        if idle && link.queue.is_empty() && link.queue.red_avg().is_none() {
            // Fast path: an idle link with nothing queued transmits at once.
            self.start_tx(li, idx);
            return;
        }
        let p = &self.packets.slots[idx as usize];
        let q = Queued {
            idx,
            size: p.size,
            low: p.low_priority,
        };
        link.note_queue(now);
        match link.queue.enqueue(now, q, idle_since, &mut link.queue_rng) {
            Admit::Accepted => {}
            Admit::Dropped(why) => {
                match why {
                    DropReason::RedEarly => link.drops_red += 1,
                    _ => link.drops_queue += 1,
                }
                self.drop_idx(idx, why);
                return;
            }
            Admit::PushedOut(victim) => {
                link.drops_queue += 1;
                self.drop_idx(victim.idx, DropReason::QueueFull);
            }
        }
        let link = &mut self.links[li];
        if idle {
            // RED (which must see every arrival) accepted a packet for an
            // idle link: send the head now.
            link.note_queue(now);
            if let Some(h) = link.queue.dequeue() {
                self.start_tx(li, h.idx);
            }
        } else if !link.free_pending {
            link.free_pending = true;
            let at = link.busy_until;
            self.events.push(at, Event::LinkFree(li as u32));
        }
    }

    /// Applies topology snapshot `k` (paper 003 §IV's dynamic virtual
    /// topology): links go down or up and every route is recomputed over the
    /// links that are up. Packets queued on a link that goes down are
    /// dropped; those already on its wire still arrive.
    fn on_snapshot(&mut self, k: usize) {
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
            link.drops_other += stranded.len() as u64;
            for idx in stranded {
                self.drop_idx(idx, DropReason::LinkDown);
            }
        }
        for li in up {
            self.link_up[li] = true;
        }
        self.routes = self.net.flow_routes_over(&self.link_up);
    }

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
        let tx = if link.tx_cache[0].0 == size {
            link.tx_cache[0].1
        } else if link.tx_cache[1].0 == size {
            link.tx_cache[1].1
        } else {
            let tx = Duration::transmission(u64::from(size), link.rate_bps);
            link.tx_cache[1] = link.tx_cache[0];
            link.tx_cache[0] = (size, tx);
            tx
        };
        link.busy_until = now + tx;
        link.busy_ns += tx.as_nanos();
        if !self.pcap.is_empty() {
            let p = &self.packets.slots[idx as usize];
            for (ci, cap) in &mut self.pcap {
                if *ci == li {
                    cap.record(now, p, &self.flows[p.flow as usize]);
                }
            }
        }
        let link = &mut self.links[li];
        let lost = match link.error.as_mut() {
            Some(e) => e.lose(size, &mut link.err_rng),
            None => false,
        };
        if lost {
            link.drops_error += 1;
            self.drop_idx(idx, DropReason::LinkError);
        } else {
            let at = link.busy_until + link.delay;
            if link.pipe.is_empty() {
                self.events.push(at, Event::Arrive(li as u32));
            }
            link.pipe.push_back((at, idx));
        }
    }

    fn on_link_free(&mut self, li: usize) {
        let now = self.now;
        let link = &mut self.links[li];
        link.free_pending = false;
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

    fn on_arrive(&mut self, li: usize) {
        let link = &mut self.links[li];
        let Some((_, idx)) = link.pipe.pop_front() else {
            return;
        };
        if let Some(&(next, _)) = link.pipe.front() {
            self.events.push(next, Event::Arrive(li as u32));
        }
        let node = link.to;
        let p = &mut self.packets.slots[idx as usize];
        if p.dst == node {
            let p = self.packets.remove(idx);
            self.totals.delivered += 1;
            self.deliver(p);
            return;
        }
        p.ttl = p.ttl.saturating_sub(1);
        if p.ttl == 0 {
            self.links[li].drops_other += 1;
            self.drop_idx(idx, DropReason::Ttl);
            return;
        }
        self.forward(node, idx);
    }

    // ---- endpoints ----

    fn deliver(&mut self, p: Packet) {
        let fi = p.flow as usize;
        let now = self.now;
        let f = &mut self.flows[fi];
        if p.conn != f.conn {
            // A closed connection's straggler: its socket is gone.
            f.stale += 1;
            return;
        }
        match (&p.payload, &mut f.receiver, &mut f.sender) {
            (Payload::TcpData(d), Receiver::Tcp(r), _) => {
                r.handle_input(now, d);
                self.drive_receiver(fi);
            }
            (Payload::TcpAck(a), _, Sender::Tcp(s)) if f.active => {
                s.handle_input(now, a);
                self.drive_sender(fi);
            }
            (Payload::TfrcData(d), Receiver::Tfrc(r), _) => {
                r.handle_input(now, d);
                self.drive_receiver(fi);
            }
            (Payload::TfrcFeedback(fb), _, Sender::Tfrc(s)) if f.active => {
                s.handle_input(now, fb);
                // RFC 5348 §4.3: slow start lasts until the first report of
                // a loss event.
                if f.slow_start_exit.is_none() && s.stats().p > 0.0 {
                    f.slow_start_exit = Some(now);
                }
                self.drive_sender(fi);
            }
            (Payload::TfrcpData(d), Receiver::Tfrcp(r), _) => {
                r.handle_input(now, d);
                self.drive_receiver(fi);
            }
            (Payload::TfrcpAck(a), _, Sender::Tfrcp(s)) if f.active => {
                s.handle_input(now, a);
                self.drive_sender(fi);
            }
            (Payload::Udp { .. }, Receiver::Sink { bytes }, _) => {
                *bytes += u64::from(p.size.saturating_sub(f.header));
            }
            _ => {}
        }
    }

    fn on_wake(&mut self, ep: u32) {
        let fi = (ep / 2) as usize;
        let side = (ep % 2) as usize;
        let now = self.now;
        let f = &mut self.flows[fi];
        if f.wake[side] != now {
            return; // superseded by an earlier wake-up
        }
        f.wake[side] = Instant::MAX;
        if side == 0 {
            if !f.active {
                return;
            }
            match &mut f.sender {
                Sender::Tcp(s) => s.handle_timeout(now),
                Sender::Tfrc(s) => s.handle_timeout(now),
                Sender::Tfrcp(s) => s.handle_timeout(now),
                Sender::Cbr(_) => {}
            }
            self.drive_sender(fi);
        } else {
            match &mut f.receiver {
                Receiver::Tcp(r) => r.handle_timeout(now),
                Receiver::Tfrc(r) => r.handle_timeout(now),
                Receiver::Tfrcp(r) => r.handle_timeout(now),
                Receiver::Sink { .. } => {}
            }
            self.drive_receiver(fi);
        }
    }

    fn schedule_wake(&mut self, fi: usize, side: usize, at: Option<Instant>) {
        let Some(at) = at else { return };
        let at = at.max(self.now);
        let f = &mut self.flows[fi];
        // Lazy timers: only an earlier deadline needs a new event; a later
        // one is found when the pending event fires and asks again.
        if at < f.wake[side] {
            f.wake[side] = at;
            self.events
                .push(at, Event::Wake(fi as u32 * 2 + side as u32));
        }
    }

    fn drive_sender(&mut self, fi: usize) {
        let now = self.now;
        let mut out = std::mem::take(&mut self.outbox);
        let f = &mut self.flows[fi];
        let e = f.ends();
        let timeout = match &mut f.sender {
            Sender::Tcp(s) => {
                while let Some(d) = s.poll_transmit(now) {
                    out.push(e.packet(d.len + e.header, d.dummy, Payload::TcpData(d)));
                }
                let mut all_acked = false;
                while let Some(ev) = s.poll_event() {
                    match ev {
                        SenderEvent::AllAcked => all_acked = true,
                    }
                }
                if !f.files.is_empty() {
                    let acked = f.past.acked + s.stats().acked_bytes;
                    while let Some(&(end, t0)) = f.files.front() {
                        if acked < end {
                            break;
                        }
                        f.files.pop_front();
                        f.files_done += 1;
                        f.file_time_sum += (now - t0).as_secs_f64();
                    }
                }
                let next = s.poll_timeout();
                if all_acked {
                    if let AppSpec::Files {
                        mode: FileMode::Sequential,
                        gap,
                        gap_mean,
                        count,
                        ..
                    } = f.app
                    {
                        if count.is_none_or(|c| f.files_started < c) {
                            // Random idle time (paper 004 §III-C.3 arrivals),
                            // from the flow's own stream: deterministic.
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
                next
            }
            Sender::Tfrc(s) => {
                while let Some(d) = s.poll_transmit(now) {
                    out.push(e.packet(d.len + e.header, false, Payload::TfrcData(d)));
                }
                s.poll_timeout()
            }
            Sender::Tfrcp(s) => {
                while let Some(d) = s.poll_transmit(now) {
                    out.push(e.packet(d.len + e.header, false, Payload::TfrcpData(d)));
                }
                s.poll_timeout()
            }
            Sender::Cbr(c) => {
                while c.on && c.next <= now {
                    let udp = Payload::Udp { seq: c.seq };
                    out.push(e.packet(c.payload + e.header, c.low_priority, udp));
                    c.seq += 1;
                    c.next += c.interval;
                }
                c.on.then_some(c.next)
            }
        };
        let f = &mut self.flows[fi];
        for p in &out {
            if matches!(p.payload, Payload::TcpData(d) if d.dummy) {
                f.tx.dummy_packets += 1;
                f.tx.dummy_bytes += u64::from(p.size);
            } else {
                f.packets_sent += 1;
                f.tx.data_bytes += u64::from(p.size);
            }
        }
        let jitter = self.flows[fi].send_jitter;
        for p in out.drain(..) {
            if jitter > Duration::ZERO {
                // ns-2's Agent `overhead_`: each packet waits U[0, jitter]
                // before it reaches the wire, independently of the others.
                let f = &mut self.flows[fi];
                let wait = Duration(f.jitter_rng.below(jitter.0 + 1));
                let idx = self.store_new(p);
                self.events.push(self.now + wait, Event::Inject(idx));
            } else {
                self.inject(p);
            }
        }
        self.outbox = out;
        self.schedule_wake(fi, 0, timeout);
    }

    fn drive_receiver(&mut self, fi: usize) {
        let now = self.now;
        let mut out = std::mem::take(&mut self.outbox);
        let f = &mut self.flows[fi];
        let e = f.ends();
        let timeout = match &mut f.receiver {
            Receiver::Tcp(r) => {
                while let Some(a) = r.poll_transmit(now) {
                    out.push(e.reply(e.header, a.dummy_echo, Payload::TcpAck(a)));
                }
                r.poll_timeout()
            }
            Receiver::Tfrc(r) => {
                while let Some(fb) = r.poll_transmit(now) {
                    out.push(e.reply(e.header, false, Payload::TfrcFeedback(fb)));
                }
                r.poll_timeout()
            }
            Receiver::Tfrcp(r) => {
                while let Some(a) = r.poll_transmit(now) {
                    out.push(e.reply(e.header, false, Payload::TfrcpAck(a)));
                }
                r.poll_timeout()
            }
            Receiver::Sink { .. } => None,
        };
        for p in &out {
            f.tx.ack_bytes += u64::from(p.size);
            if p.low_priority {
                f.tx.dummy_ack_bytes += u64::from(p.size);
            }
        }
        for p in out.drain(..) {
            self.inject(p);
        }
        self.outbox = out;
        self.schedule_wake(fi, 1, timeout);
    }

    // ---- applications ----

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
        if let Sender::Tcp(s) = &mut f.sender {
            s.push_data(bytes);
            f.pushed += bytes;
            f.files.push_back((f.pushed, now));
            f.files_started += 1;
        }
    }

    fn on_app(&mut self, fi: usize, action: AppAction) {
        let now = self.now;
        match action {
            AppAction::Start => {
                let f = &mut self.flows[fi];
                f.active = true;
                match f.app.clone() {
                    AppSpec::Bulk => match &mut f.sender {
                        Sender::Tcp(s) => s.set_unlimited(),
                        Sender::Tfrc(s) => s.set_unlimited(),
                        Sender::Tfrcp(s) => s.set_unlimited(),
                        Sender::Cbr(c) => {
                            c.on = true;
                            c.next = now;
                        }
                    },
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
                if let Sender::Cbr(c) = &mut f.sender {
                    c.on = false;
                }
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
                match &mut f.sender {
                    Sender::Cbr(c) => {
                        c.on = on;
                        c.next = c.next.max(now);
                    }
                    Sender::Tcp(s) if on => {
                        // ns-2's Pareto source over TCP hands the agent
                        // rate*ON bytes per burst; we hand them at once.
                        let bytes = (f.rate_bps as f64 / 8.0 * period.as_secs_f64()) as u64;
                        s.push_data(bytes.max(1));
                    }
                    Sender::Tcp(_) | Sender::Tfrc(_) | Sender::Tfrcp(_) => {}
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

    // ---- measurement ----

    fn on_sample(&mut self) {
        let now = self.now;
        for &li in &self.monitored {
            self.links[li].note_queue(now);
        }
        if let Some(mut s) = self.series.take() {
            s.sample(self, now);
            self.series = Some(s);
        }
        let next = now + self.interval;
        if next <= self.end() {
            self.events.push(next, Event::Sample);
        }
    }

    /// Ends the run and computes the summary.
    pub fn finish(mut self, wall_s: Option<f64>) -> crate::RunOutput {
        let end = self.end();
        self.run_until(end);
        let dur = self.duration.as_secs_f64();
        for l in &mut self.links {
            l.note_queue(end);
        }
        let mut flows = Vec::new();
        for f in &self.flows {
            let from = f.start.max(self.measure_from);
            let to = f.stop.min(end);
            let active = (to.saturating_since(from)).as_secs_f64();
            let delivered = f.delivered_bytes();
            let counted = delivered - f.delivered_at_measure.min(delivered);
            let goodput = if active > 0.0 {
                counted as f64 * 8.0 / active
            } else {
                0.0
            };
            let (retx, tos, rtt) = match &f.sender {
                Sender::Tcp(s) => {
                    let mut all = f.past;
                    all.add(&s.stats(), 0);
                    let rtt = (all.rtt_samples > 0)
                        .then(|| all.sum_rtt.as_secs_f64() / all.rtt_samples as f64);
                    (all.retransmits, all.timeouts, rtt)
                }
                Sender::Tfrc(s) => (0, 0, s.stats().rtt.map(|d| d.as_secs_f64())),
                Sender::Tfrcp(s) => (0, 0, s.stats().rtt.map(|d| d.as_secs_f64())),
                Sender::Cbr(_) => (0, 0, None),
            };
            let (feedback_packets, feedback_bytes, loss_event_rate) = match &f.receiver {
                Receiver::Tfrc(r) => {
                    let st = r.stats();
                    (
                        Some(st.feedback_sent),
                        Some(st.feedback_sent * u64::from(f.header)),
                        Some(st.p),
                    )
                }
                _ => (None, None, None),
            };
            flows.push(FlowSummary {
                id: f.id,
                name: f.name.clone(),
                protocol: f.protocol.name().into(),
                src: self.nodes[f.src as usize].clone(),
                dst: self.nodes[f.dst as usize].clone(),
                delivered_bytes: delivered,
                goodput_bps: goodput,
                share: 0.0,
                drops: f.drops,
                packets_sent: f.packets_sent,
                retransmits: retx,
                timeouts: tos,
                mean_rtt_s: rtt,
                files_completed: f.files_done,
                mean_file_time_s: (f.files_done > 0).then(|| f.file_time_sum / f.files_done as f64),
                feedback_packets,
                feedback_bytes,
                loss_event_rate,
                slow_start_exit_s: f.slow_start_exit.map(|t| t.as_secs_f64()),
                data_bytes_sent: f.tx.data_bytes,
                stale_packets: f.stale,
                ack_bytes_sent: f.tx.ack_bytes,
                dummy: f.protocol.is_peach().then(|| {
                    let (acks, fallback) = match &f.sender {
                        Sender::Tcp(s) => {
                            let mut all = f.past;
                            all.add(&s.stats(), 0);
                            (all.dummy_acks, all.fallback)
                        }
                        _ => (0, false),
                    };
                    DummySummary {
                        packets_sent: f.tx.dummy_packets,
                        bytes_sent: f.tx.dummy_bytes,
                        ack_bytes: f.tx.dummy_ack_bytes,
                        acks_received: acks,
                        overhead: if f.packets_sent > 0 {
                            f.tx.dummy_packets as f64 / f.packets_sent as f64
                        } else {
                            0.0
                        },
                        fallback,
                    }
                }),
            });
        }
        let total: f64 = flows.iter().map(|f| f.goodput_bps).sum();
        for f in &mut flows {
            f.share = if total > 0.0 {
                f.goodput_bps / total
            } else {
                0.0
            };
        }
        let mut classes: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for f in &flows {
            classes
                .entry(f.protocol.clone())
                .or_default()
                .push(f.goodput_bps);
        }
        let classes = classes
            .into_iter()
            .map(|(protocol, g)| {
                let sum: f64 = g.iter().sum();
                ClassSummary {
                    protocol,
                    flows: g.len() as u32,
                    goodput_bps: sum,
                    share: if total > 0.0 { sum / total } else { 0.0 },
                    jain: jain_index(&g, None),
                }
            })
            .collect();
        let all: Vec<f64> = flows.iter().map(|f| f.goodput_bps).collect();
        // TCP against the rate-controlled schemes (TFRC, CCID3, TFRCP);
        // CBR background and flows marked `measured = false` stay out.
        let (tcp, other): (Vec<&FlowSummary>, Vec<&FlowSummary>) = flows
            .iter()
            .filter(|f| {
                let fl = &self.flows[f.id as usize];
                fl.measured && fl.protocol != Protocol::Cbr
            })
            .partition(|f| self.flows[f.id as usize].protocol.is_tcp());
        let tcp_g: Vec<f64> = tcp.iter().map(|f| f.goodput_bps).collect();
        let other_g: Vec<f64> = other.iter().map(|f| f.goodput_bps).collect();
        let (normalized_tcp_throughput, friendliness) = if tcp.is_empty() || other.is_empty() {
            (None, None)
        } else {
            (
                normalized_throughput(
                    tcp_g.iter().sum(),
                    tcp_g.iter().sum::<f64>() + other_g.iter().sum::<f64>(),
                    tcp.len() as f64 / (tcp.len() + other.len()) as f64,
                ),
                metrics::friendliness(&other_g, &tcp_g).map(|x| FriendlinessSummary {
                    f: x.f,
                    e: x.e,
                    fc: x.fc.is_finite().then_some(x.fc),
                }),
            )
        };
        let end_ns = end.as_nanos();
        let links = self
            .monitored
            .iter()
            .map(|&li| {
                let l = &self.links[li];
                // Busy time is booked when a transmission starts; take off
                // what runs past the end.
                let over = l.busy_until.as_nanos().saturating_sub(end_ns);
                let busy = l.busy_ns.saturating_sub(over);
                LinkSummary {
                    name: l.name.clone(),
                    rate_bps: l.rate_bps,
                    utilization: busy as f64 / end_ns.max(1) as f64,
                    arrivals: l.arrivals,
                    drops: l.drops(),
                    drops_queue: l.drops_queue,
                    drops_red: l.drops_red,
                    drops_error: l.drops_error,
                    mean_queue_pkts: l.q_area as f64 / end_ns.max(1) as f64,
                    loss: if l.arrivals > 0 {
                        l.drops() as f64 / l.arrivals as f64
                    } else {
                        0.0
                    },
                }
            })
            .collect();
        let mut totals = self.totals;
        totals.in_flight = self.packets.live;
        let summary = Summary {
            scenario: self.name.clone(),
            seed: self.seed,
            duration_s: dur,
            events: self.events.processed(),
            wall_s,
            flows,
            classes,
            jain: jain_index(&all, None),
            normalized_tcp_throughput,
            friendliness,
            links,
            packets: totals,
            refwa: crate::refwa_hook::summaries(&self.refwa),
        };
        let capture_errors = self
            .pcap
            .iter_mut()
            .filter_map(|(li, cap)| {
                cap.finish()
                    .err()
                    .map(|e| format!("{}: {e}", self.links[*li].name))
            })
            .collect();
        crate::RunOutput {
            summary,
            series: self.series.take(),
            capture_errors,
        }
    }
}

/// The link of `net` that runs the other way between the same two nodes:
/// `NetDef::duplex` pushes the two directions of a link side by side.
fn reverse_of(net: &NetDef, i: usize) -> Option<u32> {
    let l = &net.links[i];
    let j = i ^ 1;
    net.links
        .get(j)
        .filter(|m| m.from == l.to && m.to == l.from)
        .map(|_| j as u32)
}

fn link_names_hint(links: &[Link]) -> String {
    let names: Vec<&str> = links
        .iter()
        .filter(|l| !l.access)
        .map(|l| l.name.as_str())
        .collect();
    let mut s = names.join(", ");
    // Access links come one (or a chain) per flow: name their patterns
    // (`access.sN`, `up.sN`, `isl.fN.inK`, ...) rather than list thousands.
    let mut patterns: Vec<String> = Vec::new();
    for l in links.iter().filter(|l| l.access) {
        let base = l.name.strip_suffix(".rev").unwrap_or(&l.name);
        let mut p = String::new();
        let (mut runs, mut in_digits) = (0, false);
        for c in base.chars() {
            if !c.is_ascii_digit() {
                p.push(c);
            } else if !in_digits {
                p.push(if runs == 0 { 'N' } else { 'K' });
                runs += 1;
            }
            in_digits = c.is_ascii_digit();
        }
        if !patterns.contains(&p) {
            patterns.push(p);
        }
    }
    if !patterns.is_empty() {
        s.push_str(&format!(", {} (+ .rev)", patterns.join(", ")));
    }
    s
}
