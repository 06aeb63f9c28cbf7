//! `[[flows]]`: one line of traffic. The fields every flow has sit on
//! [`FlowSpec`]; those of one protocol sit in its [`ProtocolOptions`]
//! variant, so that an option a protocol does not have cannot be held.
//!
//! In the file both are flat keys of the same table. The deserializer takes
//! `protocol`, routes every other key to the common fields or to that
//! protocol's options, and names a key another protocol owns (`flows[1].k:
//! applies to protocol "tfrcp" only`).

use satcc_proto::{tcp, Duration};
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use super::{nested, nested_error, AppSpec, Dur, FieldError, FileMode, Rate};

/// A flow's protocol.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// TCP Reno.
    Reno,
    /// TCP NewReno (RFC 6582).
    NewReno,
    /// TCP with SACK loss recovery (RFC 6675).
    Sack,
    /// UDP constant bit rate.
    Cbr,
    /// TFRC (RFC 5348) with a bulk source; feedback once per RTT.
    Tfrc,
    /// DCCP CCID3 (RFC 4342: TFRC profile); `feedback` chooses the
    /// standard or paper 001's dynamic feedback policy.
    Ccid3,
    /// TFRCP (paper 004): rate recomputed every M seconds from the full
    /// PFTK model.
    Tfrcp,
    /// TCP-Peach (paper 002) over NewReno: Sudden Start, Rapid Recovery
    /// and low-priority dummy segments.
    Peach,
    /// TCP-Peach over SACK loss recovery.
    #[serde(rename = "peach-sack")]
    PeachSack,
    /// Saratoga (draft-wood-tsvwg-saratoga-22) file transfer at a fixed
    /// rate, as deployed.
    Saratoga,
    /// Saratoga with the sender-based TFRC of paper 000 (STFRC).
    Stfrc,
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

impl Protocol {
    /// Every protocol, in the order error messages list them.
    pub const ALL: [Protocol; 11] = [
        Protocol::Reno,
        Protocol::NewReno,
        Protocol::Sack,
        Protocol::Peach,
        Protocol::PeachSack,
        Protocol::Tfrc,
        Protocol::Ccid3,
        Protocol::Tfrcp,
        Protocol::Saratoga,
        Protocol::Stfrc,
        Protocol::Cbr,
    ];

    /// Name as written in scenario files and reports.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Reno => "reno",
            Protocol::NewReno => "newreno",
            Protocol::Sack => "sack",
            Protocol::Cbr => "cbr",
            Protocol::Tfrc => "tfrc",
            Protocol::Ccid3 => "ccid3",
            Protocol::Tfrcp => "tfrcp",
            Protocol::Peach => "peach",
            Protocol::PeachSack => "peach-sack",
            Protocol::Saratoga => "saratoga",
            Protocol::Stfrc => "stfrc",
        }
    }
    /// A TCP variant.
    pub fn is_tcp(self) -> bool {
        matches!(
            self,
            Protocol::Reno
                | Protocol::NewReno
                | Protocol::Sack
                | Protocol::Peach
                | Protocol::PeachSack
        )
    }
    /// TCP-Peach over either base.
    pub fn is_peach(self) -> bool {
        matches!(self, Protocol::Peach | Protocol::PeachSack)
    }
    /// TFRC or CCID3.
    pub fn is_tfrc(self) -> bool {
        matches!(self, Protocol::Tfrc | Protocol::Ccid3)
    }
    /// Saratoga, with a fixed rate or STFRC.
    pub fn is_saratoga(self) -> bool {
        matches!(self, Protocol::Saratoga | Protocol::Stfrc)
    }
}

/// One line of traffic: `count` identical flows.
#[derive(Clone, Debug)]
pub struct FlowSpec {
    /// Protocol.
    pub protocol: Protocol,
    /// Number of identical flows.
    pub count: u32,
    /// Label in reports (default: the protocol).
    pub name: Option<String>,
    /// Graph topologies: source node.
    pub src: Option<String>,
    /// Graph topologies: destination node.
    pub dst: Option<String>,
    /// Start time.
    pub start: Dur,
    /// Starts are spread uniformly over [start, start + start_spread].
    pub start_spread: Dur,
    /// Stop time (default: end of run).
    pub stop: Option<Dur>,
    /// Constellation topologies: the RTT group (1-based, default 1).
    pub group: Option<u32>,
    /// Payload bytes per packet (TCP segment, TFRC/TFRCP packet size s;
    /// CBR: the default `packet_size`).
    pub mss: u32,
    /// Header bytes added to every packet on the wire (IP + TCP/UDP).
    pub header_bytes: Option<u32>,
    /// Hold each packet the sender emits for a random time uniform in
    /// [0, send_jitter] before it enters the network, as ns-2's Agent
    /// `overhead_` does: paper 004 §III-A adds such a processing time to
    /// break the phase effects of deterministic drop-tail simulations.
    /// Packets may leave out of order. Default: none.
    pub send_jitter: Option<Dur>,
    /// Count this flow in the class comparisons (normalized TCP
    /// throughput, F/E/FC). Paper 004's scenarios C.3 and C.4 monitor one
    /// TCP and one TFRCP flow among background traffic: set it false on
    /// the background.
    pub measured: bool,
    /// What the application offers.
    pub app: AppSpec,
    /// The options of `protocol`; the variant matches it (checked by
    /// [`super::Scenario::validate`]).
    pub options: ProtocolOptions,
}

/// The options of a flow's protocol.
#[derive(Clone, Debug, PartialEq)]
pub enum ProtocolOptions {
    /// `reno`, `newreno`, `sack`, `peach`, `peach-sack`.
    Tcp(TcpOptions),
    /// `tfrc`, `ccid3`.
    Tfrc(TfrcOptions),
    /// `tfrcp`.
    Tfrcp(TfrcpOptions),
    /// `cbr`.
    Cbr(CbrOptions),
    /// `saratoga`, `stfrc`.
    Saratoga(SaratogaOptions),
}

/// Options of a Saratoga flow. Each `None` takes the protocol's default
/// (`satcc_proto::saratoga::SaratogaConfig`, `satcc_proto::stfrc::StfrcConfig`).
#[derive(Clone, Debug, PartialEq)]
pub struct SaratogaOptions {
    /// `saratoga`: the fixed sending rate, on the wire (required).
    pub rate: Option<Rate>,
    /// `stfrc`: the rate controller's parameters.
    pub stfrc: Option<StfrcOptions>,
    /// Timestamps in DATA frames that request a STATUS (draft §4.4 bit 12).
    pub timestamps: Option<bool>,
    /// Request a STATUS at least this often while sending.
    pub status_request_interval: Option<Dur>,
    /// Request a STATUS at least every this many DATA frames (0: never by
    /// count).
    pub status_every_frames: Option<u32>,
    /// Give up after hearing nothing from the peer this long.
    pub inactivity_timeout: Option<Dur>,
}

/// STFRC's parameters (paper 000 §3-§5, Table 1).
#[derive(Clone, Debug, PartialEq)]
pub struct StfrcOptions {
    /// Average forward delay over the average RTT (Table 1: 0.75 with
    /// Drop-Tail, 0.65 with RED).
    pub symmetry_ratio: f64,
    /// STATUS requests per RTT (§5 recommends 1).
    pub status_per_rtt: f64,
    /// RFC 5348 §5.5 history discounting (Table 1: yes).
    pub history_discounting: bool,
    /// RFC 5348 §4.5 oscillation damping.
    pub oscillation_damping: bool,
}

/// Options of a TCP flow.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TcpOptions {
    /// Initial window in segments (default RFC 3390 from the MSS).
    #[serde(default)]
    pub initial_window: Option<u32>,
    /// Receiver's advertised window in segments.
    #[serde(default = "TcpOptions::default_rwnd")]
    pub rwnd: u32,
    /// Receiver delays ACKs (RFC 5681 §4.2).
    #[serde(default)]
    pub delayed_ack: bool,
    /// Delayed-ACK timeout.
    #[serde(default)]
    pub delack_timeout: Option<Dur>,
    /// Lower bound on RTO (RFC 6298 §2.4 says 1 s; ns-2 and Linux 200 ms).
    #[serde(default)]
    pub min_rto: Option<Dur>,
    /// RTO before the first sample.
    #[serde(default)]
    pub initial_rto: Option<Dur>,
    /// Upper bound on RTO.
    #[serde(default)]
    pub max_rto: Option<Dur>,
    /// Initial slow-start threshold in segments.
    #[serde(default)]
    pub initial_ssthresh: Option<u32>,
    /// Duplicate-ACK threshold.
    #[serde(default)]
    pub dupack_threshold: Option<u32>,
    /// What a retransmission timeout halves into ssthresh: `"flightsize"`
    /// (RFC 5681 §3.1 eq. 4, the default) or `"window"` (ns-2 2.35: the
    /// congestion window without fast-recovery inflation).
    #[serde(default)]
    pub rto_ssthresh: RtoSsthreshSpec,
    /// Which segments give RTT samples: `"timestamps"` (every ACK of new
    /// data, the default) or `"karn"` (one new segment timed at a time,
    /// none retransmitted: ns-2 2.35 and the TCPs the papers ran).
    #[serde(default)]
    pub rtt_timing: RttTimingSpec,
    /// NewReno: restart the retransmission timer only on the first partial
    /// ACK of a recovery (RFC 6582 §4 "Impatient", ns-2's default); false
    /// restarts it on every partial ACK ("Slow-but-Steady").
    #[serde(default = "TcpOptions::default_impatient")]
    pub newreno_impatient: bool,
    /// RFC 3042 Limited Transmit (ns-2 `singledup_`, on by default).
    #[serde(default = "TcpOptions::default_limited_transmit")]
    pub limited_transmit: bool,
    /// SACK loss recovery: `"rfc6675"` (the default) or `"ns2"` (ns-2
    /// 2.35 `Agent/TCP/Sack1`: holes before new data, pipe counted per ACK
    /// and cut again on partial ACKs, cwnd halved with a floor of 1; see
    /// [`satcc_proto::tcp::SackRecovery`]). Only `sack` and `peach-sack`
    /// use it.
    #[serde(default)]
    pub sack_recovery: SackRecoverySpec,
    /// The receiver echoes TCP-Peach's dummy mark (default true; false
    /// models a receiver without the paper 002 modification, against which
    /// a Peach sender falls back to its base variant).
    #[serde(default = "TcpOptions::default_echo_dummy")]
    pub echo_dummy: bool,
    /// With app kind `onoff`: the rate offered while ON.
    #[serde(default)]
    pub rate: Option<Rate>,
    /// TCP-Peach's options: `Some` exactly for `peach` and `peach-sack`.
    #[serde(skip)]
    pub peach: Option<PeachOptions>,
}

/// Options of a TCP-Peach flow (paper 002).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PeachOptions {
    /// The RTT the first Sudden Start spaces its dummies over (default:
    /// the path's base RTT, what the handshake would measure).
    #[serde(default)]
    pub handshake_rtt: Option<Dur>,
    /// adsn as a fraction of the window W at loss detection (paper 002
    /// eq. 4, lost; default 1.0 per docs/papers.md).
    #[serde(default)]
    pub peach_adsn: Option<f64>,
    /// wdsn as a fraction of W (paper 002 §III-C; default 0.5).
    #[serde(default)]
    pub peach_wdsn: Option<f64>,
    /// Dummies per data ACK in Rapid Recovery (default 2).
    #[serde(default)]
    pub peach_dummies_per_ack: Option<u32>,
    /// Rapid Recovery expires into Sudden Start after this many RTTs
    /// without the retransmission's ACK (default 1).
    #[serde(default)]
    pub peach_rr_timeout: Option<f64>,
}

/// Options of a TFRC or CCID3 flow.
#[derive(Clone, Debug, PartialEq)]
pub struct TfrcOptions {
    /// The receiver's feedback policy; always `Standard` for `tfrc`.
    pub feedback: FeedbackSpec,
    /// RFC 5348 §4.5 oscillation damping (default on: "SHOULD be
    /// implemented").
    pub oscillation_damping: bool,
    /// The largest X_inst/X the damping may give (default 2, `inf` for
    /// the RFC's unbounded formula; see
    /// [`satcc_proto::tfrc::SenderConfig::damping_max_gain`]).
    pub damping_max_gain: f64,
    /// RFC 5348 §5.5 history discounting (OPTIONAL; default off with
    /// profile `rfc5348`, on with `ns2` as ns-2's `discount_ 1`).
    pub history_discounting: bool,
    /// Which TFRC runs, written `profile = "rfc5348" | "ns2"` (default
    /// `rfc5348`).
    pub profile: TfrcProfileSpec,
}

impl Default for TfrcOptions {
    fn default() -> Self {
        TfrcOptions {
            feedback: FeedbackSpec::default(),
            oscillation_damping: TfrcFields::damping_default(),
            damping_max_gain: satcc_proto::tfrc::DEFAULT_DAMPING_MAX_GAIN,
            history_discounting: false,
            profile: TfrcProfileSpec::default(),
        }
    }
}

/// A TFRC/CCID3 flow's `profile`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum TfrcProfileSpec {
    /// RFC 5348 to the letter (the default).
    #[default]
    Rfc5348,
    /// ns-2 2.35's `Agent/TFRC` / `Agent/TFRCSink` with their defaults
    /// (`satcc_proto::tfrc::Profile::Ns2`; docs/ns2.md).
    Ns2,
}

/// CCID3's feedback policy, written `feedback = "standard" | "dynamic"`
/// with `rtt_ref` beside it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FeedbackSpec {
    /// One feedback per RTT (RFC 4342 / RFC 5348 §6.2).
    #[default]
    Standard,
    /// NFb = min(max(round(RTT/RTTref), 1), RTT*X_recv/s) per RTT (paper 001).
    Dynamic {
        /// RTTref (default 100 ms).
        rtt_ref: Option<Dur>,
    },
}

/// Options of a TFRCP flow (paper 004).
#[derive(Clone, Debug, PartialEq)]
pub struct TfrcpOptions {
    /// How the recomputation interval M is chosen.
    pub strategy: StrategySpec,
    /// How packets are clocked out.
    pub pacing: PacingSpec,
    /// Initial rate r0 in packets per second (default 40).
    pub initial_rate: Option<f64>,
    /// Wmax of the PFTK model in packets (default 100).
    pub wmax: Option<f64>,
    /// Lower bound on the RTO.
    pub min_rto: Option<Dur>,
    /// RTO before the first sample.
    pub initial_rto: Option<Dur>,
    /// Upper bound on the RTO.
    pub max_rto: Option<Dur>,
}

/// TFRCP recomputation strategy (paper 004 §III-C.1), written `strategy =
/// "s1" | "s2" | "s3"` with its parameters beside it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StrategySpec {
    /// Fixed M: `m` (default 3 s).
    S1 {
        /// M.
        m: Option<Dur>,
    },
    /// M = `k` × RTT.
    S2 {
        /// K.
        k: f64,
    },
    /// M = `m_base` + U[0, `m_spread`].
    S3 {
        /// The constant part of M.
        base: Dur,
        /// The width of M's uniform part.
        spread: Dur,
    },
}

/// TFRCP packet clocking as written in scenarios.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum PacingSpec {
    /// Evenly spaced.
    #[default]
    Even,
    /// One burst per RTT.
    Burst,
}

/// Options of a CBR flow.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CbrOptions {
    /// Sending rate (while ON, with app kind `onoff`).
    pub rate: Rate,
    /// Payload bytes per datagram (default `mss`).
    #[serde(default)]
    pub packet_size: Option<u32>,
    /// Mark every datagram low priority (a priority queue serves it only
    /// when no other packet waits), e.g. to flood a link with traffic that
    /// must not displace anybody's data.
    #[serde(default)]
    pub low_priority: bool,
}

/// Scenario spelling of [`satcc_proto::tcp::RttTiming`].
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum RttTimingSpec {
    /// A sample from every ACK of new data (RFC 7323 timestamps).
    #[default]
    Timestamps,
    /// Karn's algorithm, one segment timed per RTT (ns-2 2.35).
    Karn,
}

/// Scenario spelling of [`satcc_proto::tcp::RtoSsthresh`].
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum RtoSsthreshSpec {
    /// RFC 5681: half the FlightSize.
    #[default]
    FlightSize,
    /// ns-2: half the window.
    Window,
}

/// Scenario spelling of [`satcc_proto::tcp::SackRecovery`].
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum SackRecoverySpec {
    /// RFC 6675.
    #[default]
    Rfc6675,
    /// ns-2 2.35 Sack1.
    Ns2,
}

fn yes() -> bool {
    true
}

// TCP's defaults live with the protocol (satcc_proto::tcp): written once.
impl TcpOptions {
    fn default_rwnd() -> u32 {
        tcp::ReceiverConfig::default().rwnd
    }
    fn default_impatient() -> bool {
        tcp::SenderConfig::default().newreno_impatient
    }
    fn default_limited_transmit() -> bool {
        tcp::SenderConfig::default().limited_transmit
    }
    fn default_echo_dummy() -> bool {
        tcp::ReceiverConfig::default().echo_dummy
    }
}

impl FlowSpec {
    /// Header bytes on the wire: as given, else 40 (IPv4 + TCP, or IPv4 +
    /// UDP + TFRC/DCCP header) or 28 for CBR and Saratoga (IPv4 + UDP; a
    /// Saratoga frame's own header counts as UDP payload, since its size
    /// varies from frame to frame).
    pub fn wire_header_bytes(&self) -> u32 {
        self.header_bytes.unwrap_or(
            if self.protocol == Protocol::Cbr || self.protocol.is_saratoga() {
                28
            } else {
                40
            },
        )
    }

    /// Checks what the types cannot (ranges, the application a protocol
    /// can carry); field paths are relative to the flow.
    pub(crate) fn validate(&self) -> Result<(), FieldError> {
        if !self.options.fits(self.protocol) {
            return Err(FieldError::new(
                "protocol",
                format!("options of another protocol on a {} flow", self.protocol),
            ));
        }
        if self.count == 0 {
            return Err(FieldError::new("count", "must be at least 1"));
        }
        if self.mss == 0 || self.mss > 65_000 {
            return Err(FieldError::new(
                "mss",
                format!("{} outside 1..=65000", self.mss),
            ));
        }
        if let Some(stop) = self.stop {
            if stop.0 <= self.start.0 {
                return Err(FieldError::new("stop", "must be after start"));
            }
        }
        match &self.options {
            ProtocolOptions::Tcp(o) => o.validate(&self.app)?,
            ProtocolOptions::Tfrc(o) => o.validate(&self.app)?,
            ProtocolOptions::Tfrcp(o) => o.validate(&self.app)?,
            ProtocolOptions::Cbr(_) => {
                if matches!(self.app, AppSpec::Files { .. }) {
                    return Err(FieldError::new(
                        "app",
                        "files run over TCP and Saratoga flows only",
                    ));
                }
            }
            ProtocolOptions::Saratoga(o) => o.validate(&self.app)?,
        }
        self.app.validate()
    }
}

impl ProtocolOptions {
    /// The rate a flow offers: a CBR flow's rate, a TCP ON/OFF source's
    /// rate while ON.
    pub fn rate(&self) -> Option<Rate> {
        match self {
            ProtocolOptions::Tcp(o) => o.rate,
            ProtocolOptions::Cbr(o) => Some(o.rate),
            ProtocolOptions::Saratoga(o) => o.rate,
            ProtocolOptions::Tfrc(_) | ProtocolOptions::Tfrcp(_) => None,
        }
    }

    /// Whether these are options of protocol `p`.
    fn fits(&self, p: Protocol) -> bool {
        match self {
            ProtocolOptions::Tcp(o) => p.is_tcp() && o.peach.is_some() == p.is_peach(),
            ProtocolOptions::Tfrc(o) => {
                p == Protocol::Ccid3
                    || (p == Protocol::Tfrc && o.feedback == FeedbackSpec::Standard)
            }
            ProtocolOptions::Tfrcp(_) => p == Protocol::Tfrcp,
            ProtocolOptions::Cbr(_) => p == Protocol::Cbr,
            ProtocolOptions::Saratoga(o) => match p {
                Protocol::Saratoga => o.rate.is_some() && o.stfrc.is_none(),
                Protocol::Stfrc => o.rate.is_none() && o.stfrc.is_some(),
                _ => false,
            },
        }
    }
}

impl SaratogaOptions {
    fn validate(&self, app: &AppSpec) -> Result<(), FieldError> {
        match app {
            AppSpec::Bulk => {}
            AppSpec::Files {
                mode: FileMode::Sequential,
                ..
            } => {}
            _ => {
                return Err(FieldError::new(
                    "app",
                    "Saratoga flows carry bulk data or sequential files",
                ))
            }
        }
        if self.rate == Some(Rate(0)) {
            return Err(FieldError::new("rate", "must be greater than zero"));
        }
        for (k, d) in [
            ("status_request_interval", self.status_request_interval),
            ("inactivity_timeout", self.inactivity_timeout),
        ] {
            if d == Some(Dur(Duration::ZERO)) {
                return Err(FieldError::new(k, "must be greater than zero"));
            }
        }
        if let Some(s) = &self.stfrc {
            if !(s.symmetry_ratio.is_finite() && (0.0..=1.0).contains(&s.symmetry_ratio)) {
                return Err(FieldError::new(
                    "symmetry_ratio",
                    format!("must be in [0, 1], got {}", s.symmetry_ratio),
                ));
            }
            if !(s.status_per_rtt.is_finite() && s.status_per_rtt > 0.0) {
                return Err(FieldError::new(
                    "status_per_rtt",
                    format!("must be a number > 0, got {}", s.status_per_rtt),
                ));
            }
        }
        Ok(())
    }
}

impl TcpOptions {
    fn validate(&self, app: &AppSpec) -> Result<(), FieldError> {
        if self.rwnd == 0 {
            return Err(FieldError::new("rwnd", "must be at least 1 segment"));
        }
        if self.initial_window == Some(0) {
            return Err(FieldError::new(
                "initial_window",
                "must be at least 1 segment (a window of 0 never sends)",
            ));
        }
        let onoff = matches!(app, AppSpec::OnOff { .. });
        if self.rate.is_some() && !onoff {
            return Err(FieldError::new(
                "rate",
                "applies to protocol \"cbr\" and to app kind \"onoff\" only",
            ));
        }
        if onoff && self.rate.is_none() {
            return Err(FieldError::new(
                "rate",
                "required with app kind \"onoff\" (the rate offered while ON)",
            ));
        }
        if let Some(p) = &self.peach {
            for (k, v) in [
                ("peach_adsn", p.peach_adsn),
                ("peach_wdsn", p.peach_wdsn),
                ("peach_rr_timeout", p.peach_rr_timeout),
            ] {
                if let Some(v) = v.filter(|v| !(v.is_finite() && *v >= 0.0)) {
                    return Err(FieldError::new(
                        k,
                        format!("must be a finite number >= 0, got {v}"),
                    ));
                }
            }
            if p.peach_rr_timeout == Some(0.0) {
                return Err(FieldError::new(
                    "peach_rr_timeout",
                    "must be greater than zero",
                ));
            }
        }
        Ok(())
    }
}

impl TfrcOptions {
    fn validate(&self, app: &AppSpec) -> Result<(), FieldError> {
        if *app != AppSpec::Bulk {
            return Err(FieldError::new(
                "app",
                "TFRC and CCID3 flows are bulk sources",
            ));
        }
        if let FeedbackSpec::Dynamic {
            rtt_ref: Some(Dur(Duration::ZERO)),
        } = self.feedback
        {
            return Err(FieldError::new("rtt_ref", "must be greater than zero"));
        }
        Ok(())
    }
}

impl TfrcpOptions {
    fn validate(&self, app: &AppSpec) -> Result<(), FieldError> {
        if *app != AppSpec::Bulk {
            return Err(FieldError::new("app", "TFRCP flows are bulk sources"));
        }
        match self.strategy {
            StrategySpec::S1 {
                m: Some(Dur(Duration::ZERO)),
            } => return Err(FieldError::new("m", "must be greater than zero")),
            StrategySpec::S2 { k } if !(k > 0.0 && k.is_finite()) => {
                return Err(FieldError::new("k", "must be a positive number"))
            }
            _ => {}
        }
        if self
            .initial_rate
            .is_some_and(|r| !(r > 0.0 && r.is_finite()))
        {
            return Err(FieldError::new(
                "initial_rate",
                "must be a positive number of packets/s",
            ));
        }
        if self.wmax.is_some_and(|w| !(w >= 1.0 && w.is_finite())) {
            return Err(FieldError::new("wmax", "must be at least 1 packet"));
        }
        Ok(())
    }
}

impl AppSpec {
    /// Checks an application's own fields (paths relative to the flow).
    fn validate(&self) -> Result<(), FieldError> {
        match self {
            AppSpec::Files {
                size,
                size_max,
                mode,
                mean_interarrival,
                new_connection,
                gap_mean,
                ..
            } => {
                if gap_mean.is_some() && *mode == FileMode::Poisson {
                    return Err(FieldError::new(
                        "app.gap_mean",
                        "applies to mode = \"sequential\" only",
                    ));
                }
                if *new_connection && *mode == FileMode::Poisson {
                    return Err(FieldError::new(
                        "app.new_connection",
                        "needs mode = \"sequential\" (one connection at a time per flow)",
                    ));
                }
                if size.0 == 0 {
                    return Err(FieldError::new("app.size", "must be greater than zero"));
                }
                if size_max.is_some_and(|m| m.0 < size.0) {
                    return Err(FieldError::new("app.size_max", "must be at least size"));
                }
                if *mode == FileMode::Poisson
                    && mean_interarrival.is_none_or(|d| d.0 == Duration::ZERO)
                {
                    return Err(FieldError::new(
                        "app.mean_interarrival",
                        "required (and > 0) for mode = \"poisson\"",
                    ));
                }
            }
            AppSpec::OnOff {
                on_mean,
                off_mean,
                shape,
            } => {
                if !(*shape > 1.0 && shape.is_finite()) {
                    return Err(FieldError::new("app.shape", format!("{shape} must be > 1")));
                }
                if on_mean.0 == Duration::ZERO || off_mean.0 == Duration::ZERO {
                    return Err(FieldError::new("app", "on_mean and off_mean must be > 0"));
                }
            }
            AppSpec::Bulk => {}
        }
        Ok(())
    }
}

// ---- reading a `[[flows]]` table ----

/// The fields every flow has, as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CommonFields {
    #[serde(default = "CommonFields::default_count")]
    count: u32,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    src: Option<String>,
    #[serde(default)]
    dst: Option<String>,
    #[serde(default)]
    start: Dur,
    #[serde(default)]
    start_spread: Dur,
    #[serde(default)]
    stop: Option<Dur>,
    #[serde(default)]
    group: Option<u32>,
    #[serde(default = "CommonFields::default_mss")]
    mss: u32,
    #[serde(default)]
    header_bytes: Option<u32>,
    #[serde(default)]
    send_jitter: Option<Dur>,
    #[serde(default = "yes")]
    measured: bool,
    #[serde(default)]
    app: AppSpec,
}

impl CommonFields {
    fn default_count() -> u32 {
        1
    }
    fn default_mss() -> u32 {
        1000
    }
}

/// `feedback` as written.
#[derive(Clone, Copy, Deserialize, PartialEq)]
#[serde(rename_all = "lowercase")]
enum FeedbackKind {
    Standard,
    Dynamic,
}

/// A TFRC/CCID3 flow's keys as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TfrcFields {
    #[serde(default)]
    feedback: Option<FeedbackKind>,
    #[serde(default)]
    rtt_ref: Option<Dur>,
    /// On by default: RFC 5348 §4.5 says damping "SHOULD be implemented".
    #[serde(default = "TfrcFields::damping_default")]
    oscillation_damping: bool,
    #[serde(default)]
    damping_max_gain: Option<f64>,
    /// Default: off with profile "rfc5348", on with "ns2".
    #[serde(default)]
    history_discounting: Option<bool>,
    #[serde(default)]
    profile: TfrcProfileSpec,
}

impl TfrcFields {
    fn damping_default() -> bool {
        true
    }
}

/// A Saratoga or STFRC flow's keys as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SaratogaFields {
    #[serde(default)]
    rate: Option<Rate>,
    #[serde(default)]
    timestamps: Option<bool>,
    #[serde(default)]
    status_request_interval: Option<Dur>,
    #[serde(default)]
    status_every_frames: Option<u32>,
    #[serde(default)]
    inactivity_timeout: Option<Dur>,
    #[serde(default)]
    symmetry_ratio: Option<f64>,
    #[serde(default)]
    status_per_rtt: Option<f64>,
    #[serde(default)]
    history_discounting: Option<bool>,
    #[serde(default)]
    oscillation_damping: Option<bool>,
}

/// Keys of [`SaratogaFields`] that only `stfrc` takes.
const STFRC_KEYS: [&str; 4] = [
    "symmetry_ratio",
    "status_per_rtt",
    "history_discounting",
    "oscillation_damping",
];

impl SaratogaFields {
    fn into_options(self, protocol: Protocol) -> Result<SaratogaOptions, FieldError> {
        let stfrc = (protocol == Protocol::Stfrc).then(|| {
            let d = satcc_proto::stfrc::StfrcConfig::default();
            StfrcOptions {
                symmetry_ratio: self.symmetry_ratio.unwrap_or(d.symmetry_ratio),
                status_per_rtt: self.status_per_rtt.unwrap_or(d.status_per_rtt),
                history_discounting: self.history_discounting.unwrap_or(d.history_discounting),
                // Our RFC 5348 TFRC's default, so that STFRC and TFRC on the
                // same scenario differ only where the paper makes them.
                oscillation_damping: self
                    .oscillation_damping
                    .unwrap_or(TfrcFields::damping_default()),
            }
        });
        if protocol == Protocol::Saratoga && self.rate.is_none() {
            return Err(FieldError::new(
                "rate",
                "required for protocol \"saratoga\" (plain Saratoga sends at a fixed rate; \"stfrc\" chooses its own)",
            ));
        }
        Ok(SaratogaOptions {
            rate: self.rate,
            stfrc,
            timestamps: self.timestamps,
            status_request_interval: self.status_request_interval,
            status_every_frames: self.status_every_frames,
            inactivity_timeout: self.inactivity_timeout,
        })
    }
}

/// `strategy` as written.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "lowercase")]
enum StrategyKind {
    #[default]
    S1,
    S2,
    S3,
}

/// A TFRCP flow's keys as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TfrcpFields {
    #[serde(default)]
    strategy: StrategyKind,
    #[serde(default)]
    m: Option<Dur>,
    #[serde(default)]
    k: Option<f64>,
    #[serde(default)]
    m_base: Option<Dur>,
    #[serde(default)]
    m_spread: Option<Dur>,
    #[serde(default)]
    pacing: PacingSpec,
    #[serde(default)]
    initial_rate: Option<f64>,
    #[serde(default)]
    wmax: Option<f64>,
    #[serde(default)]
    min_rto: Option<Dur>,
    #[serde(default)]
    initial_rto: Option<Dur>,
    #[serde(default)]
    max_rto: Option<Dur>,
}

impl TryFrom<TfrcFields> for TfrcOptions {
    type Error = FieldError;
    fn try_from(f: TfrcFields) -> Result<Self, FieldError> {
        let feedback = match (f.feedback, f.rtt_ref) {
            (Some(FeedbackKind::Dynamic), rtt_ref) => FeedbackSpec::Dynamic { rtt_ref },
            (_, Some(_)) => {
                return Err(FieldError::new(
                    "rtt_ref",
                    "applies to feedback = \"dynamic\" only",
                ))
            }
            _ => FeedbackSpec::Standard,
        };
        let damping_max_gain = f
            .damping_max_gain
            .unwrap_or(satcc_proto::tfrc::DEFAULT_DAMPING_MAX_GAIN);
        if damping_max_gain.is_nan() || damping_max_gain < 1.0 {
            return Err(FieldError::new(
                "damping_max_gain",
                "must be at least 1 (inf: RFC 5348 §4.5 unbounded)",
            ));
        }
        Ok(TfrcOptions {
            feedback,
            oscillation_damping: f.oscillation_damping,
            damping_max_gain,
            history_discounting: f
                .history_discounting
                .unwrap_or(f.profile == TfrcProfileSpec::Ns2),
            profile: f.profile,
        })
    }
}

impl TryFrom<TfrcpFields> for TfrcpOptions {
    type Error = FieldError;
    fn try_from(f: TfrcpFields) -> Result<Self, FieldError> {
        let (name, uses): (&str, &[&str]) = match f.strategy {
            StrategyKind::S1 => ("s1", &["m"]),
            StrategyKind::S2 => ("s2", &["k"]),
            StrategyKind::S3 => ("s3", &["m_base", "m_spread"]),
        };
        let given = [
            ("m", f.m.is_some()),
            ("k", f.k.is_some()),
            ("m_base", f.m_base.is_some()),
            ("m_spread", f.m_spread.is_some()),
        ];
        for (key, set) in given {
            if set && !uses.contains(&key) {
                return Err(FieldError::new(
                    key,
                    format!(
                        "does not apply to strategy \"{name}\" (it uses {})",
                        uses.join(", ")
                    ),
                ));
            }
        }
        let required =
            |key: &str| FieldError::new(key, format!("required for strategy \"{name}\""));
        let strategy = match f.strategy {
            StrategyKind::S1 => StrategySpec::S1 { m: f.m },
            StrategyKind::S2 => StrategySpec::S2 {
                k: f.k.ok_or_else(|| required("k"))?,
            },
            StrategyKind::S3 => StrategySpec::S3 {
                base: f.m_base.ok_or_else(|| required("m_base"))?,
                spread: f.m_spread.ok_or_else(|| required("m_spread"))?,
            },
        };
        Ok(TfrcpOptions {
            strategy,
            pacing: f.pacing,
            initial_rate: f.initial_rate,
            wmax: f.wmax,
            min_rto: f.min_rto,
            initial_rto: f.initial_rto,
            max_rto: f.max_rto,
        })
    }
}

/// The keys of a struct read with `#[derive(Deserialize)]`: the field list
/// serde's derive hands to `deserialize_struct`.
fn keys_of<T: de::DeserializeOwned>() -> &'static [&'static str] {
    struct Probe<'a>(&'a mut &'static [&'static str]);
    impl<'de> Deserializer<'de> for Probe<'_> {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("probed"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map enum identifier ignored_any
        }
    }
    let mut keys: &'static [&'static str] = &[];
    let _ = T::deserialize(Probe(&mut keys));
    keys
}

/// The option keys protocol `p` takes.
fn option_keys(p: Protocol) -> Vec<&'static str> {
    // Exhaustive: a new protocol must say which options it takes.
    let mut keys = match p {
        Protocol::Reno
        | Protocol::NewReno
        | Protocol::Sack
        | Protocol::Peach
        | Protocol::PeachSack => keys_of::<TcpOptions>().to_vec(),
        Protocol::Tfrc | Protocol::Ccid3 => keys_of::<TfrcFields>().to_vec(),
        Protocol::Tfrcp => keys_of::<TfrcpFields>().to_vec(),
        Protocol::Cbr => keys_of::<CbrOptions>().to_vec(),
        Protocol::Saratoga => keys_of::<SaratogaFields>()
            .iter()
            .copied()
            .filter(|k| !STFRC_KEYS.contains(k))
            .collect(),
        Protocol::Stfrc => keys_of::<SaratogaFields>()
            .iter()
            .copied()
            .filter(|k| *k != "rate")
            .collect(),
    };
    if p.is_peach() {
        keys.extend(keys_of::<PeachOptions>());
    }
    if p == Protocol::Tfrc {
        // RFC 5348's feedback is once per RTT; the policy is CCID3's.
        keys.retain(|k| !matches!(*k, "feedback" | "rtt_ref"));
    }
    keys
}

/// Why `key` cannot be written on a flow of protocol `p`.
fn misplaced(key: &str, p: Protocol) -> String {
    let owners: Vec<&str> = Protocol::ALL
        .into_iter()
        .filter(|&q| option_keys(q).contains(&key))
        .map(|q| q.name())
        .collect();
    if owners.is_empty() {
        let expected: Vec<String> = ["protocol"]
            .iter()
            .chain(keys_of::<CommonFields>())
            .chain(&option_keys(p))
            .map(|k| format!("`{k}`"))
            .collect();
        return format!(
            "unknown field `{key}`, expected one of {}",
            expected.join(", ")
        );
    }
    match (key, p) {
        ("rate", Protocol::Tfrc | Protocol::Ccid3) => {
            return "TFRC and CCID3 choose their own rate".into()
        }
        ("rate", Protocol::Tfrcp) => return "TFRCP chooses its own rate".into(),
        ("rate", Protocol::Stfrc) => return "STFRC chooses its own rate".into(),
        ("feedback", Protocol::Tfrc) => {
            return "applies to protocol \"ccid3\" only (tfrc is RFC 5348's once-per-RTT feedback)"
                .into()
        }
        _ => {}
    }
    let quoted: Vec<String> = owners.iter().map(|n| format!("\"{n}\"")).collect();
    match quoted.split_last() {
        Some((last, [])) => format!("applies to protocol {last} only"),
        Some((last, rest)) => format!("applies to protocols {} and {last} only", rest.join(", ")),
        None => unreachable!("owners is not empty"),
    }
}

impl<'de> Deserialize<'de> for FlowSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut t = toml::Table::deserialize(d)?;
        let protocol: Protocol = t
            .remove("protocol")
            .ok_or_else(|| <D::Error as de::Error>::missing_field("protocol"))?
            .try_into()
            .map_err(|e: toml::de::Error| nested_error::<D::Error>("protocol", e.message()))?;
        let common = keys_of::<CommonFields>();
        let own = option_keys(protocol);
        let peach_keys = keys_of::<PeachOptions>();
        let (mut options, mut peach) = (toml::Table::new(), toml::Table::new());
        let keys: Vec<String> = t.keys().cloned().collect();
        for key in keys {
            if common.contains(&key.as_str()) {
                continue;
            }
            if !own.contains(&key.as_str()) {
                return Err(nested_error(&key, &misplaced(&key, protocol)));
            }
            let v = t.remove(&key).expect("a listed key");
            if peach_keys.contains(&key.as_str()) {
                peach.insert(key, v);
            } else {
                options.insert(key, v);
            }
        }
        let c: CommonFields = nested(t)?;
        let typed = |e: FieldError| nested_error::<D::Error>(&e.field, &e.message);
        let options = match protocol {
            Protocol::Reno
            | Protocol::NewReno
            | Protocol::Sack
            | Protocol::Peach
            | Protocol::PeachSack => {
                let mut o: TcpOptions = nested(options)?;
                if o.sack_recovery != SackRecoverySpec::Rfc6675
                    && !matches!(protocol, Protocol::Sack | Protocol::PeachSack)
                {
                    return Err(nested_error(
                        "sack_recovery",
                        &format!(
                            "\"ns2\" applies to protocols \"sack\" and \"peach-sack\" only, \
                             not \"{}\"",
                            protocol.name()
                        ),
                    ));
                }
                if protocol.is_peach() {
                    o.peach = Some(nested(peach)?);
                }
                ProtocolOptions::Tcp(o)
            }
            Protocol::Tfrc | Protocol::Ccid3 => ProtocolOptions::Tfrc(
                nested::<TfrcFields, _>(options)?
                    .try_into()
                    .map_err(typed)?,
            ),
            Protocol::Tfrcp => ProtocolOptions::Tfrcp(
                nested::<TfrcpFields, _>(options)?
                    .try_into()
                    .map_err(typed)?,
            ),
            Protocol::Cbr => {
                if !options.contains_key("rate") {
                    return Err(nested_error("rate", "required for protocol \"cbr\""));
                }
                ProtocolOptions::Cbr(nested(options)?)
            }
            Protocol::Saratoga | Protocol::Stfrc => ProtocolOptions::Saratoga(
                nested::<SaratogaFields, _>(options)?
                    .into_options(protocol)
                    .map_err(typed)?,
            ),
        };
        Ok(FlowSpec {
            protocol,
            count: c.count,
            name: c.name,
            src: c.src,
            dst: c.dst,
            start: c.start,
            start_spread: c.start_spread,
            stop: c.stop,
            group: c.group,
            mss: c.mss,
            header_bytes: c.header_bytes,
            send_jitter: c.send_jitter,
            measured: c.measured,
            app: c.app,
            options,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Scenario, ScenarioError};

    /// A dumbbell with one flow line `flow`.
    fn load(flow: &str) -> Result<Scenario, ScenarioError> {
        Scenario::from_toml_str(
            &format!(
                "duration = \"10s\"\n[topology]\nkind = \"dumbbell\"\n\
                 [topology.bottleneck]\nrate = \"10Mbps\"\ndelay = \"10ms\"\n\
                 [[flows]]\n{flow}\n"
            ),
            "t.toml",
            &[],
        )
    }

    fn options(flow: &str) -> ProtocolOptions {
        load(flow).unwrap().flows[0].options.clone()
    }

    fn error(flow: &str) -> (String, String) {
        let e = load(flow).unwrap_err();
        (e.field, e.message)
    }

    #[test]
    fn key_sets_do_not_overlap() {
        let common = keys_of::<CommonFields>();
        assert!(common.contains(&"app") && common.len() == 13);
        for p in Protocol::ALL {
            let own = option_keys(p);
            assert!(!own.is_empty(), "{p}");
            assert!(own.iter().all(|k| !common.contains(k)), "{p}: {own:?}");
        }
        let peach = keys_of::<PeachOptions>();
        assert!(peach.iter().all(|k| !keys_of::<TcpOptions>().contains(k)));
        assert!(!option_keys(Protocol::Sack).contains(&"peach_adsn"));
        assert!(option_keys(Protocol::PeachSack).contains(&"peach_adsn"));
        assert!(!option_keys(Protocol::Tfrc).contains(&"feedback"));
        assert!(option_keys(Protocol::Ccid3).contains(&"rtt_ref"));
    }

    #[test]
    fn options_are_typed_by_protocol() {
        let ProtocolOptions::Tcp(o) = options("protocol = \"sack\"\nrwnd = 64") else {
            panic!()
        };
        assert_eq!((o.rwnd, o.peach), (64, None));
        let ProtocolOptions::Tcp(o) = options("protocol = \"peach\"\npeach_adsn = 0.5") else {
            panic!()
        };
        assert_eq!(o.peach.unwrap().peach_adsn, Some(0.5));
        assert_eq!(
            options("protocol = \"ccid3\"\nfeedback = \"dynamic\"\nrtt_ref = \"50ms\""),
            ProtocolOptions::Tfrc(TfrcOptions {
                feedback: FeedbackSpec::Dynamic {
                    rtt_ref: Some(Dur(Duration::from_millis(50)))
                },
                ..TfrcOptions::default()
            })
        );
        let ProtocolOptions::Tfrcp(o) =
            options("protocol = \"tfrcp\"\nstrategy = \"s3\"\nm_base = 1\nm_spread = 2")
        else {
            panic!()
        };
        assert_eq!(
            o.strategy,
            StrategySpec::S3 {
                base: Dur(Duration::from_secs(1)),
                spread: Dur(Duration::from_secs(2))
            }
        );
        let ProtocolOptions::Tfrcp(o) = options("protocol = \"tfrcp\"") else {
            panic!()
        };
        assert_eq!(o.strategy, StrategySpec::S1 { m: None });
        let cbr = options("protocol = \"cbr\"\nrate = \"1Mbps\"\nlow_priority = true");
        assert_eq!(cbr.rate(), Some(Rate(1_000_000)));
    }

    #[test]
    fn sack_recovery_is_parsed_and_checked() {
        let ProtocolOptions::Tcp(o) = options("protocol = \"sack\"") else {
            panic!()
        };
        assert_eq!(o.sack_recovery, SackRecoverySpec::Rfc6675);
        for p in ["sack", "peach-sack"] {
            let ProtocolOptions::Tcp(o) =
                options(&format!("protocol = \"{p}\"\nsack_recovery = \"ns2\""))
            else {
                panic!()
            };
            assert_eq!(o.sack_recovery, SackRecoverySpec::Ns2, "{p}");
        }
        let (field, message) = error("protocol = \"newreno\"\nsack_recovery = \"ns2\"");
        assert_eq!(field, "flows[0].sack_recovery");
        assert!(message.contains("\"newreno\""), "{message}");
        let (field, message) = error("protocol = \"sack\"\nsack_recovery = \"fack\"");
        assert_eq!(field, "flows[0].sack_recovery");
        assert!(
            message.contains("fack") && message.contains("ns2"),
            "{message}"
        );
    }

    #[test]
    fn a_key_of_another_protocol_names_its_protocols() {
        for (flow, field, message) in [
            (
                "protocol = \"sack\"\nk = 3",
                "k",
                "applies to protocol \"tfrcp\" only",
            ),
            (
                "protocol = \"sack\"\npeach_adsn = 1",
                "peach_adsn",
                "applies to protocols \"peach\" and \"peach-sack\" only",
            ),
            (
                "protocol = \"tfrc\"\nrwnd = 64",
                "rwnd",
                "applies to protocols \"reno\", \"newreno\", \"sack\", \"peach\" and \
                 \"peach-sack\" only",
            ),
            (
                "protocol = \"cbr\"\nrate = 1000\nmin_rto = 1",
                "min_rto",
                "applies to protocols \"reno\", \"newreno\", \"sack\", \"peach\", \
                 \"peach-sack\" and \"tfrcp\" only",
            ),
            (
                "protocol = \"newreno\"\nlow_priority = true",
                "low_priority",
                "applies to protocol \"cbr\" only",
            ),
            (
                "protocol = \"tfrc\"\nfeedback = \"dynamic\"",
                "feedback",
                "applies to protocol \"ccid3\" only (tfrc is RFC 5348's once-per-RTT feedback)",
            ),
            (
                "protocol = \"tfrcp\"\nrate = 1000",
                "rate",
                "TFRCP chooses its own rate",
            ),
            (
                "protocol = \"ccid3\"\nrate = 1000",
                "rate",
                "TFRC and CCID3 choose their own rate",
            ),
            (
                "protocol = \"cbr\"",
                "rate",
                "required for protocol \"cbr\"",
            ),
            (
                "protocol = \"sack\"\nrate = 1000",
                "rate",
                "applies to protocol \"cbr\" and to app kind \"onoff\" only",
            ),
            (
                "protocol = \"ccid3\"\nrtt_ref = 1",
                "rtt_ref",
                "applies to feedback = \"dynamic\" only",
            ),
            (
                "protocol = \"tfrcp\"\nstrategy = \"s2\"",
                "k",
                "required for strategy \"s2\"",
            ),
            (
                "protocol = \"tfrcp\"\nk = 4",
                "k",
                "does not apply to strategy \"s1\" (it uses m)",
            ),
            (
                "protocol = \"tfrcp\"\nstrategy = \"s3\"\nm_spread = 1",
                "m_base",
                "required for strategy \"s3\"",
            ),
            (
                "protocol = \"tfrcp\"\napp = { kind = \"onoff\", on_mean = 1, off_mean = 1 }",
                "app",
                "TFRCP flows are bulk sources",
            ),
            (
                "protocol = \"cbr\"\nrate = 1000\napp = { kind = \"files\", size = 1000 }",
                "app",
                "files run over TCP and Saratoga flows only",
            ),
            (
                "protocol = \"stfrc\"\nrate = 1000",
                "rate",
                "STFRC chooses its own rate",
            ),
            (
                "protocol = \"saratoga\"",
                "rate",
                "required for protocol \"saratoga\" (plain Saratoga sends at a fixed rate; \"stfrc\" chooses its own)",
            ),
            (
                "protocol = \"saratoga\"\nrate = 1000\nsymmetry_ratio = 0.5",
                "symmetry_ratio",
                "applies to protocol \"stfrc\" only",
            ),
            (
                "protocol = \"stfrc\"\nsymmetry_ratio = 1.5",
                "symmetry_ratio",
                "must be in [0, 1], got 1.5",
            ),
            (
                "protocol = \"stfrc\"\nstatus_per_rtt = 0",
                "status_per_rtt",
                "must be a number > 0, got 0",
            ),
            (
                "protocol = \"stfrc\"\napp = { kind = \"onoff\", on_mean = 1, off_mean = 1 }",
                "app",
                "Saratoga flows carry bulk data or sequential files",
            ),
        ] {
            assert_eq!(
                error(flow),
                (format!("flows[0].{field}"), message.to_string()),
                "{flow}"
            );
        }
    }

    #[test]
    fn an_unknown_key_suggests_what_the_protocol_takes() {
        // The full list is what misplaced() hands on; the scenario error
        // rewrites it as the nearest name, or a pointer to the docs.
        let m = misplaced("bogus", Protocol::Cbr);
        assert!(
            m.starts_with("unknown field `bogus`, expected one of `protocol`, `count`"),
            "{m}"
        );
        assert!(m.ends_with("`rate`, `packet_size`, `low_priority`"), "{m}");
        let (field, message) = error("protocol = \"cbr\"\nrate = 1000\nbogus = 1");
        assert_eq!(field, "flows[0].bogus");
        assert_eq!(
            message,
            "unknown field `bogus` (docs/scenario.md lists the fields)"
        );
        let (field, message) = error("protocol = \"cbr\"\nrate = 1000\npacket_sise = 1");
        assert_eq!(field, "flows[0].packet_sise");
        assert_eq!(
            message,
            "unknown field `packet_sise`; did you mean `packet_size`?"
        );
        let (_, message) = error("protocol = \"sack\"\nmin_rtoo = 1");
        assert_eq!(message, "unknown field `min_rtoo`; did you mean `min_rto`?");
        let (field, message) = error("protocol = \"newrenno\"");
        assert_eq!(field, "flows[0].protocol");
        assert!(message.contains("unknown variant `newrenno`"), "{message}");
        assert_eq!(error("count = 2").1, "missing field `protocol`");
    }

    #[test]
    fn options_must_match_the_protocol() {
        let mut sc = load("protocol = \"sack\"").unwrap();
        sc.flows[0].protocol = Protocol::Peach;
        let e = sc.validate().unwrap_err();
        assert_eq!(e.field, "flows[0].protocol");
        sc.flows[0].protocol = Protocol::Tfrc;
        assert!(sc.validate().is_err());
        sc.flows[0].options = ProtocolOptions::Tfrc(TfrcOptions::default());
        assert!(sc.validate().is_ok());
    }
}
