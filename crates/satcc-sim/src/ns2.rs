//! Cross-checking satcc against ns-2 2.35 (`/usr/bin/ns`, Debian `ns2`).
//!
//! [`to_tcl`] turns a [`Scenario`] into an ns-2 OTcl script that is as close
//! to the same experiment as ns-2 allows, [`run_ns2`] runs it and
//! [`parse_output`] reads the machine-readable lines it prints. The mapping
//! of every ns-2 default is in `docs/ns2.md`; the choices that matter:
//!
//! * **Packet sizes.** satcc's `mss` is payload bytes and a data packet is
//!   `mss + header_bytes` (default 40) on the wire. ns-2's `Agent/TCP`
//!   `packetSize_` is also payload: with `useHeaders_ true` (default) the
//!   agent adds `tcpip_base_hdr_size_` (default 40) to every data packet
//!   (checked with `trace-queue`: `packetSize_ 1000` gives 1040-byte data
//!   packets, 40-byte ACKs and a 40-byte SYN). So `packetSize_ = mss` and
//!   `tcpip_base_hdr_size_ = header_bytes`; the sink's `packetSize_` (ACK
//!   size, default 40) is also set to `header_bytes`. ns-2 does not add
//!   bytes for SACK blocks. For CBR, ns-2 adds nothing, so the CBR/UDP
//!   `packetSize_` is `packet_size + header_bytes`.
//! * **Handshake.** ns-2 2.35's one-way TCP sends a 40-byte SYN first
//!   (`syn_ true`) and then opens cwnd to `windowInit_`; satcc has no
//!   handshake, so we set `syn_ false` and data starts at the start time.
//! * **Windows.** `window_` (the receiver's advertised window, packets) =
//!   `rwnd`; `windowInit_` = `initial_window` (default RFC 3390 from the
//!   MSS, as satcc); initial ssthresh in ns-2 is `window_` (reset at
//!   `$ns run`), so `initial_ssthresh` is written into `ssthresh_` by an
//!   event at the flow's start (not `max_ssthresh_`, which in 2.35 turns on
//!   RFC 3742 limited slow start). `delay_growth_` is set false: with
//!   `syn_ false` it would otherwise skip the cwnd increase on the ACK of
//!   the first data packet.
//! * **Timers.** `minrto_`, `maxrto_`, `rtxcur_init_` (RTO before the first
//!   sample) and `numdupacks_` come from the flow, else from
//!   `satcc_proto::tcp::SenderConfig::default()`, so both sides use the same
//!   numbers. `tcpTick_` (ns-2 default 10 ms) is set to satcc's clock
//!   granularity (1 ms).
//! * **Errors.** A link's `error` becomes an `ErrorModel` (unit pkt, uniform
//!   ranvar on its own seeded `RNG`) inserted with `$ns link-lossmodel`, i.e.
//!   *after* the link: an errored packet is queued and transmitted (it
//!   occupies the link) and is lost at the far end. `$ns lossmodel` would
//!   instead drop it before the queue.
//! * **RED.** ns-2 2.35 defaults RED to byte mode (`bytes_ true`,
//!   `queue_in_bytes_ true`); satcc's `RedSpec` is in packets, so the script
//!   sets both to false. Thresholds, weight (-1/0/-2 = ns-2's automatic
//!   rules), `linterm_ = 1/max_p`, `gentle_`, `wait_`, `mean_pktsize_`,
//!   `targetdelay_` are passed through; the values RED resolved at t = 0 are
//!   printed as `RED` lines.
//!
//! Output lines (one per flow, one per monitored link, whitespace separated):
//!
//! ```text
//! FLOW <id> <protocol> <active_s> <delivered_bytes> <packets_sent> <retransmits> <timeouts>
//! TFRC <id> <x_end_bps> <send_bps> <packet_loss_rate>      (tfrc/ccid3 flows only)
//! LINK <name> <rate_bps> <interval_s> <departed_bytes> <arrivals> <drops_queue> <drops_error> <mean_queue_pkts>
//! RED  <name> <thresh_> <maxthresh_> <q_weight_> <limit_>
//! END  <sim_seconds>
//! ```
//!
//! `delivered_bytes` of a TCP flow is the sender's highest cumulative ACK
//! (`ack_`, a packet number starting at 0 because `syn_` is false) plus one,
//! times `mss`: in-order payload the receiver has acknowledged and the sender
//! has heard of. (The sink's `bytes_` counts every received packet with its
//! header, duplicates included, so it is not goodput.) It lags the sink's own
//! in-order count by the ACKs still in flight, at most one window.
//!
//! **TFRC/CCID3** flows become `Agent/TFRC` + `Agent/TFRCSink` with the
//! settings that bring ns-2 closest to RFC 5348 (table and every known
//! difference in `docs/ns2.md`): `packetSize_ = mss` (s, payload) plus
//! `headersize_ = header_bytes` on the wire (1040-byte data, 40-byte
//! feedback, checked with `trace-queue`). The agent is an infinite source
//! (`SndrType_ 0`, `$tfrc start`/`stop`). Its `delivered_bytes` is the
//! sink's `bytes_` (wire bytes of every packet received; TFRC never
//! retransmits and links do not duplicate, so every packet is new) / wire
//! size x mss, taken modulo 2^32 because `bytes_` is a C `int` (exact while
//! less than 4 GiB arrive in the measured interval). ns-2 keeps the loss
//! event rate p in C++ locals, so the `TFRC` line gives the final allowed
//! rate X (`rate_`), the mean sending rate and the receiver's packet loss
//! rate (`true_loss_rate_`) instead.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::Command;
use std::time::Instant as WallInstant;

use satcc_proto::tcp::{ReceiverConfig, SenderConfig};
use satcc_proto::Duration;

use crate::scenario::{
    AccessSpec, AppSpec, ErrorSpec, FeedbackSpec, FlowSpec, LinkSpec, PacingSpec, Protocol,
    QueueSpec, Scenario, StrategySpec, Topology,
};
use crate::topology::NetDef;

/// One flow's ns-2 result.
#[derive(Clone, Debug, PartialEq)]
pub struct Ns2Flow {
    /// Flow id, in scenario order (as satcc's `FlowSummary::id`).
    pub id: u32,
    /// Protocol name.
    pub protocol: String,
    /// Seconds over which goodput is measured.
    pub active_s: f64,
    /// In-order payload bytes delivered in the measured interval.
    pub delivered_bytes: u64,
    /// delivered_bytes * 8 / active_s.
    pub goodput_bps: f64,
    /// Data packets sent, retransmissions included (`ndatapack_`; 0 for CBR).
    pub packets_sent: u64,
    /// Retransmitted data packets (`nrexmitpack_`).
    pub retransmits: u64,
    /// Retransmission timeouts (`nrexmit_`).
    pub timeouts: u64,
    /// TFRC/CCID3 flows: what ns-2's agents expose beyond goodput.
    pub tfrc: Option<Ns2Tfrc>,
    /// TFRCP flows: the OTcl sender's round counters.
    pub tfrcp: Option<Ns2Tfrcp>,
}

/// What the script's OTcl TFRCP sender reports for one flow (a `TFRCP`
/// line), over the whole run (not only the measured interval).
#[derive(Clone, Debug, PartialEq)]
pub struct Ns2Tfrcp {
    /// Rounds closed.
    pub rounds: u64,
    /// Rounds that lost nothing and doubled the rate.
    pub doubled: u64,
    /// Packets counted lost (sum of y).
    pub lost: u64,
    /// Packets counted received (sum of x).
    pub received: u64,
    /// Mean p = y/(x+y) over the rounds that lost packets.
    pub mean_lossy_p: f64,
    /// The rate when the run ended, packets/s.
    pub rate_end_pps: f64,
}

/// What ns-2's `Agent/TFRC` and `Agent/TFRCSink` expose for one flow (a
/// `TFRC` output line). The loss *event* rate p is not among them: ns-2
/// keeps it in C++ locals (`TfrcSinkAgent::est_loss`, the feedback
/// header's `flost`) that no bound variable reaches.
#[derive(Clone, Debug, PartialEq)]
pub struct Ns2Tfrc {
    /// The sender's allowed rate X at the end of the measured interval
    /// (`rate_`, payload bytes/s, times 8), b/s.
    pub x_end_bps: f64,
    /// Payload the sender sent in the measured interval (`ndatabytes_`
    /// difference) times 8 over the active time, b/s: the mean X.
    pub send_bps: f64,
    /// The receiver's cumulative *packet* loss rate since the start
    /// (`true_loss_rate_` = lost / (received + lost)), not p.
    pub packet_loss_rate: f64,
}

/// One monitored link direction's ns-2 result.
#[derive(Clone, Debug, PartialEq)]
pub struct Ns2Link {
    /// Link name as in satcc (`bottleneck`, `bottleneck.rev`, ...).
    pub name: String,
    /// Link rate.
    pub rate_bps: u64,
    /// Seconds measured.
    pub interval_s: f64,
    /// Bytes that left the queue onto the link (errored packets included:
    /// they occupy the link).
    pub departed_bytes: u64,
    /// Packets that arrived at the queue.
    pub arrivals: u64,
    /// Packets dropped by the queue and by the link's error model.
    pub drops: u64,
    /// Packets dropped by the queue (overflow, RED).
    pub drops_queue: u64,
    /// Packets lost to the link's error model (after transmission).
    pub drops_error: u64,
    /// Time-averaged number of packets waiting (the one being transmitted
    /// is not counted).
    pub mean_queue_pkts: f64,
    /// departed_bytes * 8 / (rate_bps * interval_s).
    pub utilization: f64,
}

/// RED parameters as ns-2 resolved them at t = 0.
#[derive(Clone, Debug, PartialEq)]
pub struct Ns2Red {
    /// Link name.
    pub name: String,
    /// `thresh_` (packets).
    pub min_th: f64,
    /// `maxthresh_` (packets).
    pub max_th: f64,
    /// `q_weight_`.
    pub weight: f64,
    /// `limit_`.
    pub limit: u32,
}

/// Everything an ns-2 run reported.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Ns2Result {
    /// Flows, by id.
    pub flows: Vec<Ns2Flow>,
    /// Monitored links.
    pub links: Vec<Ns2Link>,
    /// RED queues' resolved parameters.
    pub red: Vec<Ns2Red>,
    /// Simulated seconds at the end.
    pub end_s: f64,
}

impl Ns2Result {
    /// Jain's index over all flows' goodput (equal shares).
    pub fn jain(&self) -> f64 {
        crate::metrics::jain_index(
            &self.flows.iter().map(|f| f.goodput_bps).collect::<Vec<_>>(),
            None,
        )
    }
    /// A monitored link by name.
    pub fn link(&self, name: &str) -> Option<&Ns2Link> {
        self.links.iter().find(|l| l.name == name)
    }
    /// F, E and FC (paper 004 §III-B) of the run, from the flows the
    /// scenario measures, as satcc's summary selects them: TCP against the
    /// rate-controlled flows, CBR and `measured = false` flows left out.
    pub fn friendliness(&self, sc: &Scenario) -> Option<crate::metrics::Friendliness> {
        let specs: Vec<&FlowSpec> = sc
            .flows
            .iter()
            .flat_map(|f| std::iter::repeat_n(f, f.count as usize))
            .collect();
        let (mut tcp, mut other) = (Vec::new(), Vec::new());
        for fl in &self.flows {
            match specs.get(fl.id as usize) {
                Some(f) if f.measured && f.protocol != Protocol::Cbr => {
                    if f.protocol.is_tcp() {
                        tcp.push(fl.goodput_bps);
                    } else {
                        other.push(fl.goodput_bps);
                    }
                }
                _ => {}
            }
        }
        crate::metrics::friendliness(&other, &tcp)
    }
    /// Sum of all flows' goodput.
    pub fn total_goodput_bps(&self) -> f64 {
        self.flows.iter().map(|f| f.goodput_bps).sum()
    }
}

fn secs(d: Duration) -> String {
    // Nanosecond-exact decimal seconds.
    let ns = d.as_nanos();
    let s = ns / 1_000_000_000;
    let frac = ns % 1_000_000_000;
    if frac == 0 {
        format!("{s}")
    } else {
        let f = format!("{frac:09}");
        format!("{s}.{}", f.trim_end_matches('0'))
    }
}

fn secs_f(d: Duration) -> f64 {
    d.as_nanos() as f64 / 1e9
}

pub use satcc_proto::tcp::rfc3390_initial_window;

/// The ns-2 RNG seed for a scenario seed: the seed itself if in
/// 1..=2^31-2, otherwise folded into that range (ns-2 wants N > 0).
pub fn ns2_seed(seed: u64) -> u64 {
    let m = 2_147_483_647u64;
    match seed % m {
        0 => m - 1,
        s => s,
    }
}

/// A seed for the i-th error model's RNG, derived from the run seed
/// (splitmix64, folded into 1..2^31-1).
fn sub_seed(seed: u64, i: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15u64.wrapping_mul(i + 1));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    1 + z % 2_147_483_646
}

struct Gen {
    out: String,
    seed: u64,
    n_err: u64,
    /// (name, tcl queue var, rate, error-model index) of every link
    /// direction.
    links: Vec<(String, String, u64, Option<u64>)>,
    red: Vec<(String, String)>,
    nodes: Vec<String>,
}

fn tcl_ident(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

impl Gen {
    fn node(&mut self, name: &str) -> String {
        let v = format!("n_{}", tcl_ident(name));
        if !self.nodes.contains(&v) {
            self.nodes.push(v.clone());
            let _ = writeln!(self.out, "set {v} [$ns node] ;# {name}");
        }
        v
    }

    /// One direction `a -> b` named `name`.
    #[allow(clippy::too_many_arguments)]
    fn simplex(
        &mut self,
        a: &str,
        b: &str,
        name: &str,
        rate: u64,
        delay: Duration,
        queue: &QueueSpec,
        error: Option<&ErrorSpec>,
        field: &str,
        qfield: &str,
        efield: &str,
    ) -> Result<(), String> {
        let kind = match queue {
            QueueSpec::DropTail { .. } => "DropTail",
            QueueSpec::Red(_) => "RED",
            QueueSpec::Priority { .. } => {
                return Err(format!(
                    "{qfield}: priority queues are not supported by the ns-2 export"
                ))
            }
        };
        let _ = writeln!(
            self.out,
            "$ns simplex-link ${a} ${b} {rate} {} {kind} ;# {name}",
            secs(delay)
        );
        let q = format!("q_{}", self.links.len());
        let _ = writeln!(self.out, "set {q} [[$ns link ${a} ${b}] queue]");
        match queue {
            QueueSpec::DropTail {
                limit: Some(l),
                limit_bytes: None,
            } => {
                let _ = writeln!(self.out, "$ns queue-limit ${a} ${b} {l}");
            }
            QueueSpec::DropTail {
                limit: None,
                limit_bytes: Some(bytes),
            } => {
                // ns-2 DropTail in byte mode compares against limit_ * mean_pktsize_.
                let _ = writeln!(
                    self.out,
                    "${q} set queue_in_bytes_ true\n${q} set mean_pktsize_ 1\n$ns queue-limit ${a} ${b} {}",
                    bytes.0
                );
            }
            QueueSpec::DropTail { .. } => {
                return Err(format!(
                    "{qfield}: ns-2's DropTail takes limit or limit_bytes, not both"
                ))
            }
            QueueSpec::Red(r) => {
                if r.weight <= 0.0 && ![0.0, -1.0, -2.0].contains(&r.weight) {
                    return Err(format!(
                        "{qfield}.weight: {} is not one of ns-2's automatic values 0, -1, -2",
                        r.weight
                    ));
                }
                let _ = writeln!(
                    self.out,
                    "$ns queue-limit ${a} ${b} {lim}\n\
                     ${q} set bytes_ false\n\
                     ${q} set queue_in_bytes_ false\n\
                     ${q} set thresh_ {min}\n\
                     ${q} set maxthresh_ {max}\n\
                     ${q} set q_weight_ {w}\n\
                     ${q} set linterm_ {lt}\n\
                     ${q} set gentle_ {g}\n\
                     ${q} set wait_ {wt}\n\
                     ${q} set mean_pktsize_ {mp}\n\
                     ${q} set targetdelay_ {td}\n\
                     ${q} set setbit_ false\n\
                     ${q} set adaptive_ 0",
                    lim = r.limit,
                    min = r.min_th,
                    max = r.max_th,
                    w = r.weight,
                    lt = 1.0 / r.max_p,
                    g = r.gentle,
                    wt = r.wait,
                    mp = r.mean_pktsize,
                    td = secs(r.target_delay.0),
                );
                self.red.push((name.to_string(), q.clone()));
            }
            QueueSpec::Priority { .. } => unreachable!(),
        }
        let mut em = None;
        match error {
            None => {}
            Some(ErrorSpec::Uniform { per }) => {
                let i = self.n_err;
                self.n_err += 1;
                let s = sub_seed(self.seed, i);
                let _ = writeln!(
                    self.out,
                    "set em_rng_{i} [new RNG]\n$em_rng_{i} seed {s}\n\
                     set em_rv_{i} [new RandomVariable/Uniform]\n$em_rv_{i} use-rng $em_rng_{i}\n\
                     set em_{i} [new ErrorModel]\n$em_{i} unit pkt\n$em_{i} set rate_ {}\n\
                     $em_{i} ranvar $em_rv_{i}\n\
                     $ns link-lossmodel $em_{i} ${a} ${b}\n\
                     set emd_{i} [new Agent/LossMonitor]\n$em_{i} drop-target $emd_{i}",
                    per.0
                );
                // link-lossmodel points the drop target at the link's drop
                // head, where a queue monitor would count the (already
                // departed) packet as a queue drop and decrement its queue
                // length; a LossMonitor of its own counts error drops.
                em = Some(i);
            }
            Some(_) => {
                return Err(format!(
                "{efield}: only kind = \"uniform\" error models are supported by the ns-2 export"
            ))
            }
        }
        let _ = field;
        self.links.push((name.to_string(), q, rate, em));
        Ok(())
    }

    /// Both directions of a LinkSpec between `a` and `b`.
    fn duplex(
        &mut self,
        a: &str,
        b: &str,
        name: &str,
        l: &LinkSpec,
        at: &str,
    ) -> Result<(), String> {
        self.simplex(
            a,
            b,
            name,
            l.rate.0,
            l.delay.0,
            &l.queue,
            l.error.as_ref(),
            at,
            &format!("{at}.queue"),
            &format!("{at}.error"),
        )?;
        let rq = l.reverse_queue.clone().unwrap_or_else(|| l.queue.clone());
        self.simplex(
            b,
            a,
            &format!("{name}.rev"),
            l.reverse_rate.unwrap_or(l.rate).0,
            l.delay.0,
            &rq,
            l.reverse_error.as_ref(),
            at,
            &format!(
                "{at}.{}",
                if l.reverse_queue.is_some() {
                    "reverse_queue"
                } else {
                    "queue"
                }
            ),
            &format!("{at}.reverse_error"),
        )
    }

    /// Access link pair `node <-> hub` (both directions same rate and queue).
    #[allow(clippy::too_many_arguments)]
    fn access(
        &mut self,
        from: &str,
        to: &str,
        name: &str,
        acc: &AccessSpec,
        delay: Duration,
    ) -> Result<(), String> {
        self.duplex(from, to, name, &acc.link(delay), "topology.access")
    }
}

/// Base RTT of every flow instance: the propagation delays along the path
/// both ways (no serialization, no queueing), as the ns-2 export uses for
/// TFRC's `minrto_` and the dynamic `NumFeedback_`.
pub fn base_rtts(sc: &Scenario) -> Vec<Option<Duration>> {
    let net = NetDef::build(sc);
    let routes = net.routes();
    net.endpoints
        .iter()
        .map(|&(s, d)| net.base_rtt(&routes, s, d))
        .collect()
}

/// RFC 5348 segment size s of a TFRC/CCID3 flow (payload bytes).
fn tfrc_s(f: &FlowSpec) -> u32 {
    f.mss
}

/// ns-2 `NumFeedback_` (reports per RTT) for a TFRC/CCID3 flow with base
/// RTT `rtt`: 1 for the standard policy; for paper 001's dynamic policy
/// max(round(RTT/rtt_ref), 1) with the *base* RTT — an approximation: the
/// paper recomputes NFb from the current RTT and also caps it at
/// RTT*X_recv/s (at most one report per received packet), which ns-2's
/// fixed count cannot do.
pub fn num_feedback(f: &FlowSpec, rtt: Duration) -> u32 {
    match f.feedback.unwrap_or_default() {
        FeedbackSpec::Standard => 1,
        FeedbackSpec::Dynamic => {
            let rref = f.rtt_ref.map(|d| d.0).unwrap_or(Duration::from_millis(100));
            let r = secs_f(rtt) / secs_f(rref).max(1e-12);
            (r.round() as u32).max(1)
        }
    }
}

/// The OTcl TFRCP sender and receiver (paper 004), emitted once into any
/// script with a TFRCP flow.
pub const TFRCP_TCL: &str = include_str!("ns2_tfrcp.tcl");

/// The `setup` dictionary of an ns-2 TFRCP sender: the flow's settings,
/// with satcc_proto::tfrcp's defaults where the flow has none (as the
/// simulator builds its sender), so both sides run the same numbers.
fn tfrcp_config(f: &FlowSpec, rng_seed: u64) -> String {
    let d = satcc_proto::tfrcp::SenderConfig::default();
    let default_m = match d.strategy {
        satcc_proto::tfrcp::Strategy::Fixed { m } => m,
        _ => Duration::from_secs(3),
    };
    let dur = |x: Option<crate::scenario::Dur>, def: Duration| secs_f(x.map_or(def, |v| v.0));
    let strategy = match f.strategy.unwrap_or(StrategySpec::S1) {
        StrategySpec::S1 => "s1",
        StrategySpec::S2 => "s2",
        StrategySpec::S3 => "s3",
    };
    format!(
        "r0 {r0} strategy {strategy} m {m} k {k} base {base} spread {spread} wmax {wmax} b {b} \
         minrto {minrto} maxrto {maxrto} initrto {initrto} g {g} minrate {minrate} maxrate {maxrate} \
         rngseed {rng_seed}",
        r0 = f.initial_rate.unwrap_or(d.r0),
        m = dur(f.m, default_m),
        k = f.k.unwrap_or(10.0),
        base = dur(f.m_base, Duration::ZERO),
        spread = dur(f.m_spread, Duration::ZERO),
        wmax = f.wmax.unwrap_or(d.wmax),
        b = d.b,
        minrto = dur(f.min_rto, d.min_rto),
        maxrto = dur(f.max_rto, d.max_rto),
        initrto = dur(f.initial_rto, d.initial_rto),
        g = secs_f(d.clock_granularity),
        minrate = d.min_rate,
        maxrate = d.max_rate,
    )
}

/// Total number of flow instances.
fn instances(sc: &Scenario) -> u32 {
    sc.flows.iter().map(|f| f.count).sum()
}

/// Generates the ns-2 2.35 script for a scenario. Errors name the scenario
/// field that ns-2 cannot reproduce.
#[allow(clippy::needless_late_init)]
pub fn to_tcl(sc: &Scenario) -> Result<String, String> {
    let mut g = Gen {
        out: String::new(),
        seed: sc.seed,
        n_err: 0,
        links: Vec::new(),
        red: Vec::new(),
        nodes: Vec::new(),
    };
    let n = instances(sc) as usize;
    if sc.refwa.as_ref().is_some_and(|r| r.enabled) {
        return Err("refwa: ns-2 has no REFWA router (run with refwa.enabled=false)".into());
    }
    if !sc.snapshots.is_empty() {
        return Err("snapshots: the ns-2 export has no topology snapshots".into());
    }
    let _ = writeln!(
        g.out,
        "# ns-2 2.35 script generated by satcc-sim ns2::to_tcl\n\
         # scenario: {}\n\
         set ns [new Simulator]\n\
         $defaultRNG seed {}",
        sc.name.as_deref().unwrap_or("(unnamed)"),
        ns2_seed(sc.seed)
    );

    // Topology: endpoints (src, dst) of each flow instance, by Tcl node var.
    let mut ends: Vec<(String, String)> = Vec::with_capacity(n);
    let default_links: Vec<String>;
    match &sc.topology {
        Topology::Dumbbell(d) => {
            g.node("r1");
            g.node("r2");
            g.duplex(
                "n_r1",
                "n_r2",
                "bottleneck",
                &d.bottleneck,
                "topology.bottleneck",
            )?;
            build_pairs(&mut g, &d.access, "r1", "r2", n, &mut ends)?;
            default_links = vec!["bottleneck".into(), "bottleneck.rev".into()];
        }
        Topology::Satellite(s) => {
            g.node("gw_a");
            g.node("sat");
            g.node("gw_b");
            g.duplex("n_gw_a", "n_sat", "uplink", &s.uplink, "topology.uplink")?;
            g.duplex(
                "n_sat",
                "n_gw_b",
                "downlink",
                &s.downlink,
                "topology.downlink",
            )?;
            build_pairs(&mut g, &s.access, "gw_a", "gw_b", n, &mut ends)?;
            default_links = vec![
                "uplink".into(),
                "uplink.rev".into(),
                "downlink".into(),
                "downlink.rev".into(),
            ];
        }
        Topology::Graph(gr) => {
            for nd in &gr.nodes {
                g.node(&nd.name);
            }
            let mut names = Vec::new();
            for (i, l) in gr.links.iter().enumerate() {
                let (Some(a), Some(b)) = (&l.from, &l.to) else {
                    return Err(format!("topology.links[{i}].from: missing"));
                };
                let name = l.name.clone().unwrap_or_else(|| format!("{a}->{b}"));
                let (va, vb) = (format!("n_{}", tcl_ident(a)), format!("n_{}", tcl_ident(b)));
                g.duplex(&va, &vb, &name, l, &format!("topology.links[{i}]"))?;
                names.push(name.clone());
                names.push(format!("{name}.rev"));
            }
            for f in &sc.flows {
                let (Some(s), Some(d)) = (&f.src, &f.dst) else {
                    return Err("flows: graph flows need src and dst".into());
                };
                for _ in 0..f.count {
                    ends.push((format!("n_{}", tcl_ident(s)), format!("n_{}", tcl_ident(d))));
                }
            }
            default_links = names;
        }
        Topology::Constellation(_) => {
            return Err("topology.kind: the ns-2 export has no constellation builder".into())
        }
    }

    // Monitored links.
    let wanted: Vec<String> = sc.record.links.clone().unwrap_or(default_links);
    let mut monitored = Vec::new();
    for (i, w) in wanted.iter().enumerate() {
        let Some(l) = g.links.iter().find(|(name, _, _, _)| name == w) else {
            return Err(format!(
                "record.links[{i}]: the ns-2 export cannot monitor link '{w}'"
            ));
        };
        monitored.push(l.clone());
    }
    // Queue monitors need the link endpoints: record them by re-deriving.
    let mut mon_lines = String::new();
    for (k, (name, q, _, _)) in monitored.iter().enumerate() {
        let _ = writeln!(
            mon_lines,
            "set qm_{k} [$ns monitor-queue {} \"\"] ;# {name}",
            link_ends(&g.out, q)?
        );
    }
    g.out.push_str(&mon_lines);

    // Flows.
    let sender_def = SenderConfig::default();
    let recv_def = ReceiverConfig::default();
    let end = secs_f(sc.duration.0);
    let mfrom = secs_f(sc.record.measure_from.0);
    let mut id = 0usize;
    let starts = crate::sim::flow_starts(sc);
    let mut rtts_cache: Option<Vec<Option<Duration>>> = None;
    let mut flow_tcl = Vec::new(); // (id, proto, kind, from_s, to_s, payload, wire)
    let mut tfrcp_lib = false;
    for (fi, f) in sc.flows.iter().enumerate() {
        let at = |x: &str| format!("flows[{fi}].{x}");
        let pareto = match f.app {
            AppSpec::Bulk => None,
            AppSpec::OnOff {
                on_mean,
                off_mean,
                shape,
            } if f.protocol == Protocol::Cbr => Some((on_mean.0, off_mean.0, shape)),
            _ => {
                return Err(format!(
                    "{}: only kind = \"bulk\" (and \"onoff\" on cbr flows) is supported by the ns-2 export",
                    at("app")
                ))
            }
        };
        if f.send_jitter.is_some() && !f.protocol.is_tcp() {
            return Err(format!(
                "{}: the ns-2 export sets overhead_ on TCP agents only",
                at("send_jitter")
            ));
        }
        let hdr = f.wire_header_bytes();
        let stop = f.stop.map(|s| secs_f(s.0)).unwrap_or(end).min(end);
        for _ in 0..f.count {
            let (s, d) = ends[id].clone();
            let i = id;
            // The very start times satcc draws (start_spread included).
            let start_d = starts[id];
            let start = secs_f(start_d);
            match f.protocol {
                Protocol::Reno | Protocol::NewReno | Protocol::Sack => {
                    let agent = match f.protocol {
                        Protocol::Reno => "Agent/TCP/Reno",
                        Protocol::NewReno => "Agent/TCP/Newreno",
                        _ => "Agent/TCP/Sack1",
                    };
                    let sink = match (f.protocol == Protocol::Sack, f.delayed_ack) {
                        (false, false) => "Agent/TCPSink",
                        (false, true) => "Agent/TCPSink/DelAck",
                        (true, false) => "Agent/TCPSink/Sack1",
                        (true, true) => "Agent/TCPSink/Sack1/DelAck",
                    };
                    let iw = f
                        .initial_window
                        .unwrap_or_else(|| rfc3390_initial_window(f.mss));
                    let _ = writeln!(
                        g.out,
                        "set tcp_{i} [new {agent}]\n\
                         $tcp_{i} set fid_ {i}\n\
                         $tcp_{i} set packetSize_ {mss}\n\
                         $tcp_{i} set tcpip_base_hdr_size_ {hdr}\n\
                         $tcp_{i} set window_ {rwnd}\n\
                         $tcp_{i} set windowInit_ {iw}\n\
                         $tcp_{i} set syn_ false\n\
                         $tcp_{i} set delay_growth_ false\n\
                         $tcp_{i} set timestamps_ false\n\
                         $tcp_{i} set maxburst_ 0\n\
                         $tcp_{i} set tcpTick_ {tick}\n\
                         $tcp_{i} set minrto_ {minrto}\n\
                         $tcp_{i} set maxrto_ {maxrto}\n\
                         $tcp_{i} set rtxcur_init_ {initrto}\n\
                         $tcp_{i} set numdupacks_ {dup}",
                        mss = f.mss,
                        rwnd = f.rwnd,
                        tick = secs(sender_def.clock_granularity),
                        minrto = secs(f.min_rto.map(|d| d.0).unwrap_or(sender_def.min_rto)),
                        maxrto = secs(f.max_rto.map(|d| d.0).unwrap_or(sender_def.max_rto)),
                        initrto =
                            secs(f.initial_rto.map(|d| d.0).unwrap_or(sender_def.initial_rto)),
                        dup = f.dupack_threshold.unwrap_or(sender_def.dupack_threshold),
                    );
                    if let Some(j) = f.send_jitter {
                        // TcpAgent::output holds each packet for
                        // Random::uniform(overhead_), as satcc does.
                        let _ = writeln!(g.out, "$tcp_{i} set overhead_ {}", secs(j.0));
                    }
                    if let Some(ss) = f.initial_ssthresh {
                        // reset() at `$ns run` overwrites ssthresh_ with
                        // window_, and max_ssthresh_ would turn on RFC 3742
                        // limited slow start: set it when the flow starts.
                        let _ = writeln!(
                            g.out,
                            "$ns at {} \"$tcp_{i} set ssthresh_ {ss}\"",
                            secs(start_d)
                        );
                    }
                    let _ = writeln!(
                        g.out,
                        "set sink_{i} [new {sink}]\n$sink_{i} set packetSize_ {hdr}"
                    );
                    if f.delayed_ack {
                        let t = f
                            .delack_timeout
                            .map(|d| d.0)
                            .unwrap_or(recv_def.delack_timeout);
                        let _ = writeln!(g.out, "$sink_{i} set interval_ {}", secs(t));
                    }
                    let _ = writeln!(
                        g.out,
                        "$ns attach-agent ${s} $tcp_{i}\n$ns attach-agent ${d} $sink_{i}\n\
                         $ns connect $tcp_{i} $sink_{i}\n\
                         set app_{i} [new Application/FTP]\n$app_{i} attach-agent $tcp_{i}\n\
                         $ns at {start} \"$app_{i} start\"",
                        start = secs(start_d)
                    );
                    if stop < end {
                        let _ = writeln!(g.out, "$ns at {stop} \"$app_{i} stop\"");
                    }
                    flow_tcl.push((i, f.protocol.name(), "tcp", start, stop, f.mss, f.mss + hdr));
                }
                Protocol::Tfrc | Protocol::Ccid3 => {
                    let rtt = rtts_cache
                        .get_or_insert_with(|| base_rtts(sc))
                        .get(i)
                        .copied()
                        .flatten()
                        .ok_or_else(|| {
                            format!("{}: no route between the flow's endpoints", at("dst"))
                        })?;
                    let sz = tfrc_s(f);
                    let nfb = num_feedback(f, rtt);
                    // Settings that bring ns-2's TFRC closest to RFC 5348 and
                    // to satcc_proto::tfrc's defaults: see docs/ns2.md.
                    let _ = writeln!(
                        g.out,
                        "set tcp_{i} [new Agent/TFRC]\n\
                         $tcp_{i} set fid_ {i}\n\
                         $tcp_{i} set packetSize_ {sz}\n\
                         $tcp_{i} set useHeaders_ true\n\
                         $tcp_{i} set headersize_ {hdr}\n\
                         $tcp_{i} set SndrType_ 0\n\
                         $tcp_{i} set InitRate_ {sz}\n\
                         $tcp_{i} set rate_init_option_ 2\n\
                         $tcp_{i} set ssmult_ 2\n\
                         $tcp_{i} set slow_increase_ 0\n\
                         $tcp_{i} set ca_ 0\n\
                         $tcp_{i} set df_ 0.9\n\
                         $tcp_{i} set tcp_tick_ {tick}\n\
                         $tcp_{i} set minrto_ {trto}\n\
                         $tcp_{i} set bval_ 1\n\
                         $tcp_{i} set conservative_ false\n\
                         $tcp_{i} set oldCode_ false\n\
                         $tcp_{i} set maxHeavyRounds_ 0\n\
                         $tcp_{i} set overhead_ 0\n\
                         $tcp_{i} set voip_ false\n\
                         $tcp_{i} set ecn_ false\n\
                         set sink_{i} [new Agent/TFRCSink]\n\
                         $sink_{i} set packetSize_ {hdr}\n\
                         $sink_{i} set NumFeedback_ {nfb}\n\
                         $sink_{i} set algo_ 1\n\
                         $sink_{i} set smooth_ 1\n\
                         $sink_{i} set NumSamples_ -1\n\
                         $sink_{i} set discount_ 0\n\
                         $sink_{i} set numPkts_ 1\n\
                         $sink_{i} set PreciseLoss_ 0\n\
                         $sink_{i} set AdjustHistoryAfterSS_ 1\n\
                         $sink_{i} set ShortIntervals_ 0\n\
                         $ns attach-agent ${s} $tcp_{i}\n$ns attach-agent ${d} $sink_{i}\n\
                         $ns connect $tcp_{i} $sink_{i}\n\
                         $ns at {start} \"$tcp_{i} start\"",
                        tick = secs(sender_def.clock_granularity),
                        trto = secs(rtt.saturating_mul(4)),
                        start = secs(start_d)
                    );
                    if stop < end {
                        let _ = writeln!(g.out, "$ns at {stop} \"$tcp_{i} stop\"");
                    }
                    flow_tcl.push((i, f.protocol.name(), "tfrc", start, stop, sz, sz + hdr));
                }
                Protocol::Peach | Protocol::PeachSack => {
                    // ns-2 2.35 has no TCP-Peach agent, and no two-class
                    // priority queue that tells dummies apart.
                    return Err(format!(
                        "{}: {} has no ns-2 2.35 agent to export to",
                        at("protocol"),
                        f.protocol.name()
                    ));
                }
                Protocol::Tfrcp => {
                    // ns-2 2.35 has no TFRCP agent: the script carries its
                    // own, an independent OTcl implementation of paper 004
                    // over Agent/Message (ns2_tfrcp.tcl).
                    if f.pacing == Some(PacingSpec::Burst) {
                        return Err(format!(
                            "{}: the ns-2 TFRCP sends evenly paced packets only",
                            at("pacing")
                        ));
                    }
                    if !tfrcp_lib {
                        g.out.push_str(TFRCP_TCL);
                        tfrcp_lib = true;
                    }
                    let _ = writeln!(
                        g.out,
                        "set tcp_{i} [new Agent/Message/Tfrcp]\n\
                         $tcp_{i} set fid_ {i}\n\
                         $tcp_{i} set packetSize_ {wire}\n\
                         $tcp_{i} setup {{{cfg}}}\n\
                         set sink_{i} [new Agent/Message/TfrcpSink]\n\
                         $sink_{i} set packetSize_ {hdr}\n\
                         $ns attach-agent ${s} $tcp_{i}\n$ns attach-agent ${d} $sink_{i}\n\
                         $ns connect $tcp_{i} $sink_{i}\n\
                         $ns at {start} \"$tcp_{i} start\"",
                        wire = f.mss + hdr,
                        cfg = tfrcp_config(f, sub_seed(sc.seed, 1_000_000 + i as u64)),
                        start = secs(start_d)
                    );
                    if stop < end {
                        let _ = writeln!(g.out, "$ns at {stop} \"$tcp_{i} stop\"");
                    }
                    flow_tcl.push((i, "tfrcp", "tfrcp", start, stop, f.mss, f.mss + hdr));
                }
                Protocol::Cbr => {
                    let payload = f.packet_size.unwrap_or(f.mss);
                    let wire = payload + hdr;
                    let rate = f
                        .rate
                        .map(|r| r.0)
                        .ok_or_else(|| at("rate") + ": required")?;
                    let _ = writeln!(
                        g.out,
                        "set tcp_{i} [new Agent/UDP]\n$tcp_{i} set fid_ {i}\n$tcp_{i} set packetSize_ {wire}\n\
                         set sink_{i} [new Agent/LossMonitor]\n\
                         $ns attach-agent ${s} $tcp_{i}\n$ns attach-agent ${d} $sink_{i}\n\
                         $ns connect $tcp_{i} $sink_{i}\n\
                         set app_{i} [new {traffic}]\n$app_{i} set packetSize_ {wire}\n\
                         $app_{i} set rate_ {rate}\n{shape}$app_{i} attach-agent $tcp_{i}\n\
                         $ns at {start} \"$app_{i} start\"",
                        start = secs(start_d),
                        traffic = if pareto.is_some() {
                            "Application/Traffic/Pareto"
                        } else {
                            "Application/Traffic/CBR"
                        },
                        // Pareto ON/OFF: ns-2 draws both periods from one
                        // shape, as satcc does.
                        shape = match pareto {
                            Some((on, off, k)) => format!(
                                "$app_{i} set burst_time_ {}\n$app_{i} set idle_time_ {}\n$app_{i} set shape_ {k}\n",
                                secs(on),
                                secs(off)
                            ),
                            None => format!("$app_{i} set random_ 0\n"),
                        },
                    );
                    if stop < end {
                        let _ = writeln!(g.out, "$ns at {stop} \"$app_{i} stop\"");
                    }
                    flow_tcl.push((i, "cbr", "cbr", start, stop, payload, wire));
                }
            }
            id += 1;
        }
    }

    // Reporting.
    let _ = writeln!(
        g.out,
        "proc delivered {{kind a s pl}} {{\n\
         \x20 if {{$kind == \"tcp\"}} {{ return [expr {{wide([$a set ack_] + 1) * $pl}}] }}\n\
         \x20 if {{$kind == \"tfrc\"}} {{ return [expr {{wide([$s set bytes_]) & 0xFFFFFFFF}}] }}\n\
         \x20 return [expr {{wide([$s set npkts_]) * $pl}}]\n}}\n\
         proc ddiff {{kind e s wire pl}} {{\n\
         \x20 if {{$kind == \"tfrc\"}} {{ return [expr {{(($e - $s) % 4294967296) / $wire * $pl}}] }}\n\
         \x20 return [expr {{$e - $s}}]\n}}\n\
         proc tfrcstat {{a}} {{\n\
         \x20 return [list [$a set rate_] [expr {{wide([$a set ndatabytes_]) & 0xFFFFFFFF}}] [$a set true_loss_rate_]]\n}}\n\
         proc qsum {{qm}} {{\n\
         \x20 global ns\n\
         \x20 set I [$qm get-pkts-integrator]\n\
         \x20 return [expr {{[$I set sum_] + [$I set lasty_] * ([$ns now] - [$I set lastx_])}}]\n}}"
    );
    // Snapshot at measure_from (or the start) for every counter.
    let mut snap = String::from("proc snap {} {\n  global ns snap_\n");
    let mut fin = String::from("proc finish {} {\n  global ns snap_\n");
    for &(i, proto, kind, start, stop, pl, wire) in &flow_tcl {
        let from = start.max(mfrom);
        let active = (stop - from).max(0.0);
        let tfrc = kind == "tfrc";
        let _ = writeln!(snap, "  global tcp_{i} sink_{i}");
        let _ = writeln!(fin, "  global tcp_{i} sink_{i}");
        if mfrom > start && mfrom < stop {
            let _ = writeln!(
                g.out,
                "$ns at {mfrom} {{global tcp_{i} sink_{i} snap_; set snap_(f{i}) [delivered {kind} $tcp_{i} $sink_{i} {pl}]}}"
            );
            if tfrc {
                let _ = writeln!(
                    g.out,
                    "$ns at {mfrom} {{global tcp_{i} snap_; set snap_(tb{i}) [lindex [tfrcstat $tcp_{i}] 1]}}"
                );
            }
        } else {
            let _ = writeln!(g.out, "set snap_(f{i}) 0");
            if tfrc {
                let _ = writeln!(g.out, "set snap_(tb{i}) 0");
            }
        }
        if (stop - end).abs() > 1e-12 && stop < end {
            let _ = writeln!(
                g.out,
                "$ns at {stop} {{global tcp_{i} sink_{i} snap_; set snap_(e{i}) [delivered {kind} $tcp_{i} $sink_{i} {pl}]}}"
            );
            if tfrc {
                let _ = writeln!(
                    g.out,
                    "$ns at {stop} {{global tcp_{i} snap_; set snap_(te{i}) [tfrcstat $tcp_{i}]}}"
                );
            }
        }
        let (endval, tfrc_end) = if stop < end {
            (format!("$snap_(e{i})"), format!("$snap_(te{i})"))
        } else {
            (
                format!("[delivered {kind} $tcp_{i} $sink_{i} {pl}]"),
                format!("[tfrcstat $tcp_{i}]"),
            )
        };
        let counters = match kind {
            "tcp" => format!(
                "[$tcp_{i} set ndatapack_] [$tcp_{i} set nrexmitpack_] [$tcp_{i} set nrexmit_]"
            ),
            "tfrc" | "tfrcp" => format!("[$tcp_{i} set ndatapack_] 0 0"),
            _ => "0 0 0".into(),
        };
        let _ = writeln!(
            fin,
            "  puts \"FLOW {i} {proto} {active} [ddiff {kind} {endval} $snap_(f{i}) {wire} {pl}] {counters}\""
        );
        if kind == "tfrcp" {
            let _ = writeln!(fin, "  puts \"TFRCP {i} [$tcp_{i} stats]\"");
        }
        if tfrc {
            let per_s = if active > 0.0 { 8.0 / active } else { 0.0 };
            let _ = writeln!(
                fin,
                "  set L {tfrc_end}\n  \
                 puts \"TFRC {i} [expr {{8.0 * [lindex $L 0]}}] \
                 [expr {{{per_s} * (([lindex $L 1] - $snap_(tb{i})) % 4294967296)}}] [lindex $L 2]\""
            );
        }
    }
    let _ = writeln!(g.out, "set snap_(t) 0");
    for (k, (name, _, rate, em)) in monitored.iter().enumerate() {
        let edrops = match em {
            Some(e) => format!("[$emd_{e} set npkts_]"),
            None => "0".into(),
        };
        if let Some(e) = em {
            let _ = writeln!(snap, "  global emd_{e}");
            let _ = writeln!(fin, "  global emd_{e}");
        }
        for v in ["barr", "bdep", "parr", "pdrops", "qsum", "edrops"] {
            let _ = writeln!(g.out, "set snap_({v}{k}) 0");
        }
        let _ = writeln!(snap, "  global qm_{k}");
        let _ = writeln!(fin, "  global qm_{k}");
        let _ = writeln!(
            snap,
            "  set snap_(bdep{k}) [$qm_{k} set bdepartures_]\n  set snap_(parr{k}) [$qm_{k} set parrivals_]\n  \
             set snap_(pdrops{k}) [$qm_{k} set pdrops_]\n  set snap_(qsum{k}) [qsum $qm_{k}]\n  \
             set snap_(edrops{k}) {edrops}"
        );
        let _ = writeln!(
            fin,
            "  set T [expr {{[$ns now] - $snap_(t)}}]\n  \
             puts \"LINK {name} {rate} $T [expr {{wide([$qm_{k} set bdepartures_]) - $snap_(bdep{k})}}] \
             [expr {{[$qm_{k} set parrivals_] - $snap_(parr{k})}}] [expr {{[$qm_{k} set pdrops_] - $snap_(pdrops{k})}}] \
             [expr {{{edrops} - $snap_(edrops{k})}}] [expr {{([qsum $qm_{k}] - $snap_(qsum{k})) / $T}}]\""
        );
    }
    snap.push_str("  set snap_(t) [$ns now]\n}\n");
    g.out.push_str(&snap);
    if mfrom > 0.0 && mfrom < end {
        let _ = writeln!(g.out, "$ns at {mfrom} snap");
    }
    // RED parameters as resolved when the run starts.
    for (k, (name, q)) in g.red.iter().enumerate() {
        let _ = writeln!(
            g.out,
            "$ns at 0 {{global {q}; puts \"RED {name} [${q} set thresh_] [${q} set maxthresh_] [${q} set q_weight_] [${q} set limit_]\"}} ;# {k}"
        );
    }
    fin.push_str("  puts \"END [$ns now]\"\n  flush stdout\n  $ns halt\n}\n");
    g.out.push_str(&fin);
    let _ = writeln!(g.out, "$ns at {} finish\n$ns run", secs(sc.duration.0));
    Ok(g.out)
}

/// Finds the `$ns simplex-link $a $b ...` line that created queue `q` and
/// returns `$a $b`.
fn link_ends(script: &str, q: &str) -> Result<String, String> {
    let needle = format!("set {q} [[$ns link ");
    for line in script.lines() {
        if let Some(rest) = line.strip_prefix(&needle) {
            if let Some(ends) = rest.strip_suffix("] queue]") {
                return Ok(ends.to_string());
            }
        }
    }
    Err(format!("internal: no link for queue {q}"))
}

fn build_pairs(
    g: &mut Gen,
    acc: &AccessSpec,
    left: &str,
    right: &str,
    n: usize,
    ends: &mut Vec<(String, String)>,
) -> Result<(), String> {
    for i in 0..n {
        let s = g.node(&format!("src{i}"));
        let d = g.node(&format!("dst{i}"));
        let sd = if acc.delays.is_empty() {
            acc.delay.0
        } else {
            acc.delays[i % acc.delays.len()].0
        };
        let dd = if !acc.sink_delays.is_empty() {
            acc.sink_delays[i % acc.sink_delays.len()].0
        } else {
            acc.sink_delay.map(|x| x.0).unwrap_or(acc.delay.0)
        };
        g.access(&s, &format!("n_{left}"), &format!("access.src{i}"), acc, sd)?;
        g.access(
            &format!("n_{right}"),
            &d,
            &format!("access.dst{i}"),
            acc,
            dd,
        )?;
        ends.push((s, d));
    }
    Ok(())
}

fn num<T: std::str::FromStr>(tok: Option<&str>, what: &str, line: &str) -> Result<T, String> {
    let t = tok.ok_or_else(|| format!("missing {what} in '{line}'"))?;
    t.parse::<T>()
        .map_err(|_| format!("bad {what} '{t}' in '{line}'"))
}

/// Reads what a generated script printed.
pub fn parse_output(stdout: &str) -> Result<Ns2Result, String> {
    let mut r = Ns2Result::default();
    let mut ended = false;
    let mut tfrc_lines = Vec::new();
    let mut tfrcp_lines = Vec::new();
    for line in stdout.lines() {
        let mut t = line.split_whitespace();
        match t.next() {
            Some("FLOW") => {
                let id: u32 = num(t.next(), "flow id", line)?;
                let protocol = t.next().ok_or("missing protocol")?.to_string();
                let active_s: f64 = num(t.next(), "active_s", line)?;
                let delivered: f64 = num(t.next(), "delivered_bytes", line)?;
                let delivered_bytes = delivered.max(0.0) as u64;
                let packets_sent: u64 = num(t.next(), "packets_sent", line)?;
                let retransmits: u64 = num(t.next(), "retransmits", line)?;
                let timeouts: u64 = num(t.next(), "timeouts", line)?;
                r.flows.push(Ns2Flow {
                    id,
                    protocol,
                    active_s,
                    delivered_bytes,
                    goodput_bps: if active_s > 0.0 {
                        delivered_bytes as f64 * 8.0 / active_s
                    } else {
                        0.0
                    },
                    packets_sent,
                    retransmits,
                    timeouts,
                    tfrc: None,
                    tfrcp: None,
                });
            }
            Some("TFRC") => {
                let id: u32 = num(t.next(), "flow id", line)?;
                let x_end_bps: f64 = num(t.next(), "x_end_bps", line)?;
                let send_bps: f64 = num(t.next(), "send_bps", line)?;
                let packet_loss_rate: f64 = num(t.next(), "packet_loss_rate", line)?;
                tfrc_lines.push((
                    id,
                    Ns2Tfrc {
                        x_end_bps,
                        send_bps,
                        packet_loss_rate,
                    },
                ));
            }
            Some("TFRCP") => {
                let id: u32 = num(t.next(), "flow id", line)?;
                tfrcp_lines.push((
                    id,
                    Ns2Tfrcp {
                        rounds: num(t.next(), "rounds", line)?,
                        doubled: num(t.next(), "doubled rounds", line)?,
                        lost: num(t.next(), "packets lost", line)?,
                        received: num(t.next(), "packets received", line)?,
                        mean_lossy_p: num(t.next(), "mean p", line)?,
                        rate_end_pps: num(t.next(), "final rate", line)?,
                    },
                ));
            }
            Some("LINK") => {
                let name = t.next().ok_or("missing link name")?.to_string();
                let rate_bps: u64 = num(t.next(), "rate_bps", line)?;
                let interval_s: f64 = num(t.next(), "interval_s", line)?;
                let departed: f64 = num(t.next(), "departed_bytes", line)?;
                let arrivals: u64 = num(t.next(), "arrivals", line)?;
                let drops_queue: u64 = num(t.next(), "drops_queue", line)?;
                let drops_error: u64 = num(t.next(), "drops_error", line)?;
                let mean_queue_pkts: f64 = num(t.next(), "mean_queue_pkts", line)?;
                let departed_bytes = departed.max(0.0) as u64;
                r.links.push(Ns2Link {
                    name,
                    rate_bps,
                    interval_s,
                    departed_bytes,
                    arrivals,
                    drops: drops_queue + drops_error,
                    drops_queue,
                    drops_error,
                    mean_queue_pkts,
                    utilization: if interval_s > 0.0 && rate_bps > 0 {
                        departed_bytes as f64 * 8.0 / (rate_bps as f64 * interval_s)
                    } else {
                        0.0
                    },
                });
            }
            Some("RED") => {
                let name = t.next().ok_or("missing RED link name")?.to_string();
                r.red.push(Ns2Red {
                    name,
                    min_th: num(t.next(), "thresh_", line)?,
                    max_th: num(t.next(), "maxthresh_", line)?,
                    weight: num(t.next(), "q_weight_", line)?,
                    limit: num(t.next(), "limit_", line)?,
                });
            }
            Some("END") => {
                r.end_s = num(t.next(), "end time", line)?;
                ended = true;
            }
            _ => {}
        }
    }
    if !ended {
        return Err("ns-2 output has no END line (the run did not finish)".into());
    }
    r.flows.sort_by_key(|f| f.id);
    for (id, t) in tfrc_lines {
        let f = r
            .flows
            .iter_mut()
            .find(|f| f.id == id)
            .ok_or_else(|| format!("TFRC line for flow {id} without a FLOW line"))?;
        f.tfrc = Some(t);
    }
    for (id, t) in tfrcp_lines {
        let f = r
            .flows
            .iter_mut()
            .find(|f| f.id == id)
            .ok_or_else(|| format!("TFRCP line for flow {id} without a FLOW line"))?;
        f.tfrcp = Some(t);
    }
    Ok(r)
}

/// Whether the `ns` binary can be run.
pub fn ns_available() -> bool {
    Command::new("ns")
        .arg("-version")
        .output()
        .map(|_| true)
        .unwrap_or(false)
}

/// Writes the script to a temporary file, runs `ns` on it and parses what it
/// prints. Returns the result and the wall-clock seconds `ns` took.
pub fn run_ns2(sc: &Scenario) -> Result<(Ns2Result, f64), String> {
    let script = to_tcl(sc)?;
    let dir = std::env::temp_dir();
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let k = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = dir.join(format!("satcc-ns2-{}-{k}.tcl", std::process::id()));
    {
        let mut f = std::fs::File::create(&path)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        f.write_all(script.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    let t0 = WallInstant::now();
    let out = Command::new("ns").arg(&path).current_dir(&dir).output();
    let wall = t0.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&path);
    let out = out.map_err(|e| {
        format!("cannot run ns-2 ('ns': {e}); install it with `apt-get install -y ns2`")
    })?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() && !stdout.contains("\nEND ") {
        return Err(format!(
            "ns exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let r = parse_output(&stdout).map_err(|e| {
        format!(
            "{e}; ns stderr: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )
    })?;
    Ok((r, wall))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"
name = "sample"
duration = "20s"
seed = 7
[topology]
kind = "dumbbell"
[topology.bottleneck]
rate = "10Mbps"
reverse_rate = "1Mbps"
delay = "250ms"
queue = { kind = "droptail", limit = 200 }
reverse_queue = { kind = "droptail", limit = 50 }
error = { kind = "uniform", per = 1e-3 }
[topology.access]
rate = "100Mbps"
delays = ["1ms", "7ms"]
[[flows]]
protocol = "sack"
count = 2
mss = 1000
rwnd = 1500
initial_window = 3
min_rto = "200ms"
max_rto = "60s"
initial_rto = "3s"
[[flows]]
protocol = "reno"
delayed_ack = true
start = "2s"
stop = "10s"
"#;

    fn sample() -> Scenario {
        Scenario::from_toml_str(SAMPLE, "<sample>", &[]).unwrap()
    }

    #[test]
    fn tcl_has_mapped_values() {
        let t = to_tcl(&sample()).unwrap();
        for want in [
            "$defaultRNG seed 7",
            "$ns simplex-link $n_r1 $n_r2 10000000 0.25 DropTail ;# bottleneck",
            "$ns simplex-link $n_r2 $n_r1 1000000 0.25 DropTail ;# bottleneck.rev",
            "$ns queue-limit $n_r1 $n_r2 200",
            "$ns queue-limit $n_r2 $n_r1 50",
            "$ns link-lossmodel $em_0 $n_r1 $n_r2",
            "$em_0 set rate_ 0.001",
            "$em_0 unit pkt",
            "$ns simplex-link $n_src1 $n_r1 100000000 0.007 DropTail",
            "set tcp_0 [new Agent/TCP/Sack1]",
            "set sink_0 [new Agent/TCPSink/Sack1]",
            "$tcp_0 set packetSize_ 1000",
            "$tcp_0 set tcpip_base_hdr_size_ 40",
            "$tcp_0 set window_ 1500",
            "$tcp_0 set windowInit_ 3",
            "$tcp_0 set minrto_ 0.2",
            "$tcp_0 set maxrto_ 60",
            "$tcp_0 set rtxcur_init_ 3",
            "$tcp_0 set syn_ false",
            "set tcp_2 [new Agent/TCP/Reno]",
            "set sink_2 [new Agent/TCPSink/DelAck]",
            "$sink_2 set interval_ 0.1",
            "$tcp_2 set windowInit_ 4",
            "$ns at 2 \"$app_2 start\"",
            "$ns at 10 \"$app_2 stop\"",
            "$ns at 20 finish",
        ] {
            assert!(t.contains(want), "missing `{want}` in\n{t}");
        }
        // One error model only (the reverse direction has none).
        assert_eq!(t.matches("link-lossmodel").count(), 1);
        // Three flows reported, two links monitored by default.
        assert_eq!(t.matches("puts \"FLOW ").count(), 3);
        assert_eq!(t.matches("puts \"LINK ").count(), 2);
    }

    #[test]
    fn red_mapping() {
        let toml = SAMPLE.replace(
            "queue = { kind = \"droptail\", limit = 200 }",
            "queue = { kind = \"red\", limit = 80, min_th = 10, max_th = 30, max_p = 0.05, gentle = false }",
        );
        let sc = Scenario::from_toml_str(&toml, "<red>", &[]).unwrap();
        let t = to_tcl(&sc).unwrap();
        for want in [
            "RED ;# bottleneck",
            "$ns queue-limit $n_r1 $n_r2 80",
            "set bytes_ false",
            "set queue_in_bytes_ false",
            "set thresh_ 10",
            "set maxthresh_ 30",
            "set q_weight_ -1",
            "set linterm_ 20",
            "set gentle_ false",
            "set wait_ true",
            "set mean_pktsize_ 500",
            "set targetdelay_ 0.005",
        ] {
            assert!(t.contains(want), "missing `{want}`");
        }
    }

    fn err_of(patch: (&str, &str)) -> String {
        let toml = SAMPLE.replace(patch.0, patch.1);
        let sc = Scenario::from_toml_str(&toml, "<x>", &[]).unwrap();
        to_tcl(&sc).unwrap_err()
    }

    #[test]
    fn unsupported_features_name_the_field() {
        let e = err_of((
            "queue = { kind = \"droptail\", limit = 200 }",
            "queue = { kind = \"priority\", limit = 200 }",
        ));
        assert!(e.starts_with("topology.bottleneck.queue:"), "{e}");
        let e = err_of((
            "reverse_queue = { kind = \"droptail\", limit = 50 }",
            "reverse_queue = { kind = \"priority\", limit = 50 }",
        ));
        assert!(e.starts_with("topology.bottleneck.reverse_queue:"), "{e}");
        let e = err_of((
            "error = { kind = \"uniform\", per = 1e-3 }",
            "error = { kind = \"gilbert\", p_gb = 0.01, p_bg = 0.5 }",
        ));
        assert!(e.starts_with("topology.bottleneck.error:"), "{e}");
        // Spread starts are exported as the very times satcc draws.
        let toml = SAMPLE.replace("count = 2", "count = 2\nstart_spread = \"1s\"");
        let sc = Scenario::from_toml_str(&toml, "<x>", &[]).unwrap();
        let t = to_tcl(&sc).unwrap();
        for d in crate::sim::flow_starts(&sc) {
            assert!(d > Duration::ZERO, "spread draws a positive offset");
            assert!(
                t.contains(&format!("$ns at {} ", secs(d))),
                "start {d} in script"
            );
        }
        let e = err_of((
            "count = 2",
            "count = 2\napp = { kind = \"files\", size = \"1MB\" }",
        ));
        assert!(e.starts_with("flows[0].app:"), "{e}");
        let e = err_of((
            "delays = [",
            "queue = { kind = \"priority\", limit = 9 }\ndelays = [",
        ));
        assert!(e.starts_with("topology.access.queue:"), "{e}");
    }

    #[test]
    fn parses_output() {
        let out = "RED bottleneck 5 15 0.002 100\n\
                   FLOW 1 sack 10 2000 5 1 0\n\
                   FLOW 0 reno 20 1000000 1000 3 1\n\
                   LINK bottleneck 10000000 20 25000000 24000 12 2 3.5\n\
                   END 20\n";
        let r = parse_output(out).unwrap();
        assert_eq!(r.flows[0].id, 0);
        assert_eq!(r.flows[0].goodput_bps, 400_000.0);
        assert_eq!(r.flows[1].goodput_bps, 1600.0);
        assert_eq!(r.flows[0].timeouts, 1);
        let l = r.link("bottleneck").unwrap();
        assert!((l.utilization - 1.0).abs() < 1e-12);
        assert_eq!(l.drops, 14);
        assert_eq!(l.drops_error, 2);
        assert_eq!(r.red[0].max_th, 15.0);
        assert!(parse_output("FLOW 0 reno 1 1 1 1 1\n").is_err());
        assert!(parse_output("FLOW x\nEND 1\n").is_err());
    }

    #[test]
    fn tfrc_mapping() {
        // Base RTTs: 2 x (1 + 250 + 1) = 504 ms for flow 2 and
        // 2 x (7 + 250 + 1) = 516 ms for flow 3 (source access delays cycle
        // 1 ms, 7 ms; sink access delay 1 ms).
        let toml = SAMPLE.replace(
            "[[flows]]\nprotocol = \"reno\"",
            "[[flows]]\nprotocol = \"tfrc\"\n[[flows]]\nprotocol = \"ccid3\"\nfeedback = \"dynamic\"\n\
             rtt_ref = \"100ms\"\nstop = \"10s\"\n[[flows]]\nprotocol = \"reno\"",
        );
        let sc = Scenario::from_toml_str(&toml, "<tfrc>", &[]).unwrap();
        let rtts = base_rtts(&sc);
        assert_eq!(rtts[2], Some(Duration::from_millis(504)));
        assert_eq!(rtts[3], Some(Duration::from_millis(516)));
        let t = to_tcl(&sc).unwrap();
        for want in [
            "set tcp_2 [new Agent/TFRC]",
            "$tcp_2 set packetSize_ 1000",
            "$tcp_2 set headersize_ 40",
            "$tcp_2 set InitRate_ 1000",
            "$tcp_2 set df_ 0.9",
            "$tcp_2 set ca_ 0",
            "$tcp_2 set slow_increase_ 0",
            "$tcp_2 set minrto_ 2.016",
            "set sink_2 [new Agent/TFRCSink]",
            "$sink_2 set packetSize_ 40",
            "$sink_2 set NumFeedback_ 1",
            "$sink_2 set discount_ 0",
            "$sink_2 set numPkts_ 1",
            "$ns at 0 \"$tcp_2 start\"",
            "set tcp_3 [new Agent/TFRC]",
            "$tcp_3 set minrto_ 2.064",
            "$sink_3 set NumFeedback_ 5",
            "$ns at 10 \"$tcp_3 stop\"",
            "puts \"TFRC 2 ",
            "puts \"TFRC 3 ",
        ] {
            assert!(t.contains(want), "missing `{want}`");
        }
        assert_eq!(t.matches("puts \"FLOW ").count(), 5);
        // Dynamic feedback: round(RTT / rtt_ref), at least 1.
        let mut f = sc.flows[2].clone();
        assert_eq!(num_feedback(&f, Duration::from_millis(516)), 5);
        assert_eq!(num_feedback(&f, Duration::from_millis(40)), 1);
        f.rtt_ref = None;
        assert_eq!(num_feedback(&f, Duration::from_millis(1260)), 13);
        f.feedback = None;
        assert_eq!(num_feedback(&f, Duration::from_millis(1260)), 1);
    }

    #[test]
    fn parses_tfrc_output() {
        let out = "FLOW 0 tfrc 200 5000000 6353 0 0\n\
                   TFRC 0 1656000 202000 0.0095\n\
                   END 200\n";
        let r = parse_output(out).unwrap();
        assert_eq!(r.flows[0].goodput_bps, 200_000.0);
        let t = r.flows[0].tfrc.as_ref().unwrap();
        assert_eq!(t.x_end_bps, 1_656_000.0);
        assert_eq!(t.send_bps, 202_000.0);
        assert_eq!(t.packet_loss_rate, 0.0095);
        assert!(parse_output("TFRC 1 1 1 0\nEND 1\n").is_err());
    }

    #[test]
    fn seeds_and_initial_window() {
        assert_eq!(ns2_seed(0), 2_147_483_646);
        assert_eq!(ns2_seed(5), 5);
        assert_eq!(rfc3390_initial_window(1000), 4);
        assert_eq!(rfc3390_initial_window(1460), 3);
        assert_eq!(rfc3390_initial_window(9000), 2);
    }
}
