//! The TCP family's options: `reno`, `newreno`, `sack`, `cubic`, `hybla`, `bbr`,
//! and TCP-Peach (paper 002) over NewReno (`peach`) or SACK (`peach-sack`).

use satcc_proto::tcp::{self, Growth, Variant};
use serde::de;
use serde::Deserialize;

use super::{keys_of, FamilyOptions, Protocol};
use crate::scenario::{nested, nested_error, AppSpec, Dur, FieldError, Rate};

/// What TCP protocol `p` runs: its loss recovery, and whether TCP-Peach
/// runs over it.
///
/// The one place the TCP variants are told apart. It lists every protocol,
/// not only TCP's, so that a new variant of [`Protocol`] does not compile
/// until it is placed here (a new TCP must say what it runs; any other
/// protocol says `None`).
pub(crate) fn variant(p: Protocol) -> Option<(Variant, bool)> {
    match p {
        Protocol::Reno => Some((Variant::Reno, false)),
        Protocol::NewReno => Some((Variant::NewReno, false)),
        Protocol::Sack | Protocol::Cubic | Protocol::Hybla | Protocol::Bbr => {
            Some((Variant::Sack, false))
        }
        Protocol::Peach => Some((Variant::NewReno, true)),
        Protocol::PeachSack => Some((Variant::Sack, true)),
        Protocol::Tfrc
        | Protocol::Ccid3
        | Protocol::Tfrcp
        | Protocol::Saratoga
        | Protocol::Stfrc
        | Protocol::Cbr => None,
    }
}

/// The window growth TCP protocol `p` runs (Reno's for every TCP but
/// `cubic` and `hybla`; their parameters at the documents' defaults).
pub(crate) fn growth(p: Protocol) -> Growth {
    match p {
        Protocol::Cubic => Growth::Cubic(tcp::CubicConfig::default()),
        Protocol::Hybla => Growth::Hybla(tcp::HyblaConfig::default()),
        Protocol::Bbr => Growth::Bbr(tcp::BbrConfig::default()),
        _ => Growth::Reno,
    }
}

/// The keys of `p`'s window growth options (none but for `cubic`,
/// `hybla`, `bbr`).
fn growth_keys(p: Protocol) -> &'static [&'static str] {
    match p {
        Protocol::Cubic => keys_of::<CubicOptions>(),
        Protocol::Hybla => keys_of::<HyblaOptions>(),
        Protocol::Bbr => keys_of::<BbrOptions>(),
        _ => &[],
    }
}

/// Whether `p` is TCP-Peach (over either base).
fn is_peach(p: Protocol) -> bool {
    variant(p).is_some_and(|(_, peach)| peach)
}

/// Options of a TCP flow.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TcpOptions {
    /// Whose TCP the defaults below follow: `"rfc"` (the RFCs, the
    /// default) or `"linux"` (Linux's TCP; see [`TcpProfileSpec`]). Keys
    /// the flow sets override either.
    #[serde(default)]
    pub profile: TcpProfileSpec,
    /// Initial window in segments (default RFC 3390 from the MSS; profile
    /// `"linux"`: 10).
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
    /// Lower bound on RTO (RFC 6298 §2.4 says 1 s; ns-2 and Linux 200 ms;
    /// profile `"linux"`: 200 ms).
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
    /// congestion window without fast-recovery inflation; also Linux's
    /// `tcp_reno_ssthresh()`, the default of profile `"linux"`).
    #[serde(default)]
    pub rto_ssthresh: Option<RtoSsthreshSpec>,
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
    /// [`satcc_proto::tcp::SackRecovery`]; only `sack` and `peach-sack`
    /// use it) or `"ns2-linux"` (ns-2 2.35 `Agent/TCP/Linux`'s recovery,
    /// for `sack`, `cubic` and `hybla`).
    #[serde(default)]
    pub sack_recovery: SackRecoverySpec,
    /// Loss detection of SACK recovery: `"rfc6675"` (RFC 6675's DupThresh
    /// rule, the default), `"rack"` (RFC 8985 RACK-TLP: time-based loss
    /// marks, lost retransmissions found without a timeout, tail loss
    /// probes; Linux's default) or `"rack-no-tlp"` (RACK alone). See
    /// [`satcc_proto::tcp::LossDetection`]. For the SACK protocols
    /// (`sack`, `cubic`, `hybla`, `bbr`) with `sack_recovery = "rfc6675"`.
    #[serde(default)]
    pub loss_detection: Option<LossDetectionSpec>,
    /// Proportional Rate Reduction (RFC 6937, PRR-SSRB) sets cwnd through
    /// SACK recovery instead of cwnd = ssthresh on entry (default false;
    /// profile `"linux"`: true). For `sack`, `cubic` and `hybla` with
    /// `sack_recovery = "rfc6675"` (BBR sets cwnd itself).
    #[serde(default)]
    pub prr: Option<bool>,
    /// The receiver echoes TCP-Peach's dummy mark (default true; false
    /// models a receiver without the paper 002 modification, against which
    /// a Peach sender falls back to its base variant).
    #[serde(default = "TcpOptions::default_echo_dummy")]
    pub echo_dummy: bool,
    /// With app kind `onoff`: the rate offered while ON.
    #[serde(default)]
    pub rate: Option<Rate>,
    /// The Linux congestion control this flow runs as a kernel TCP
    /// connection in `satcc run --real` (any name in
    /// `net.ipv4.tcp_available_congestion_control`; default: `reno` for
    /// `reno`, `newreno` and `sack`, the protocol's own name otherwise).
    /// The simulator does not read it.
    #[serde(default)]
    pub linux_cc: Option<String>,
    /// TCP-Peach's options: `Some` exactly for `peach` and `peach-sack`.
    #[serde(skip)]
    pub peach: Option<PeachOptions>,
    /// CUBIC's options: `Some` exactly for `cubic`.
    #[serde(skip)]
    pub cubic: Option<CubicOptions>,
    /// TCP Hybla's options: `Some` exactly for `hybla`.
    #[serde(skip)]
    pub hybla: Option<HyblaOptions>,
    /// BBR's options: `Some` exactly for `bbr`.
    #[serde(skip)]
    pub bbr: Option<BbrOptions>,
}

/// Options of a CUBIC flow (RFC 9438); unset keys take the RFC's defaults
/// ([`satcc_proto::tcp::CubicConfig`]).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CubicOptions {
    /// How slow start ends: `"standard"` (RFC 5681, the default),
    /// `"hystart"` (Linux tcp_cubic.c's HyStart, the default of profile
    /// `"linux"`), `"hystart-6.13"` (the same as Linux 5.16-6.13 counted
    /// its rounds) or `"hystart++"` (RFC 9406).
    #[serde(default)]
    pub slow_start: Option<SlowStartSpec>,
    /// C, segments/s³ (RFC 9438 §5: 0.4).
    #[serde(default)]
    pub cubic_c: Option<f64>,
    /// β_cubic (RFC 9438 §4.6: 0.7), in (0, 1).
    #[serde(default)]
    pub cubic_beta: Option<f64>,
    /// Fast convergence (RFC 9438 §4.7, default true).
    #[serde(default)]
    pub cubic_fast_convergence: Option<bool>,
    /// The Reno-friendly region (RFC 9438 §4.3, default true; with
    /// `cubic_variant = "linux-2.6.22"` the module's `tcp_friendliness`).
    #[serde(default)]
    pub cubic_reno_friendly: Option<bool>,
    /// Which CUBIC: `"rfc9438"` (the default) or `"linux-2.6.22"`, the
    /// CUBIC v2.1 that ns-2 2.35's `Agent/TCP/Linux` runs (`select_ca
    /// cubic`), for like-for-like checks against it; its C and β default
    /// to the module's 410/1024 and 819/1024.
    #[serde(default)]
    pub cubic_variant: Option<CubicVariantSpec>,
}

/// Scenario spelling of [`satcc_proto::tcp::CubicVariant`].
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
pub enum CubicVariantSpec {
    /// RFC 9438.
    #[serde(rename = "rfc9438")]
    Rfc9438,
    /// Linux 2.6.22's tcp_cubic.c v2.1 as ns-2 2.35 runs it.
    #[serde(rename = "linux-2.6.22")]
    Linux2622,
}

/// Scenario spelling of [`satcc_proto::tcp::SlowStart`].
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
pub enum SlowStartSpec {
    /// RFC 5681 §3.1.
    #[serde(rename = "standard")]
    Standard,
    /// Linux tcp_cubic.c's HyStart (ACK train and delay increase), as
    /// Linux 6.14 and later (and the stable kernels since March 2025) run
    /// it.
    #[serde(rename = "hystart")]
    Hystart,
    /// The same HyStart as Linux 5.16 to 6.13 ran it: no round starts
    /// below `hystart_low_window`, so rounds begin mid-flight
    /// ([`satcc_proto::tcp::HystartConfig::rounds_below_low_window`]
    /// false).
    #[serde(rename = "hystart-6.13")]
    Hystart613,
    /// RFC 9406 HyStart++.
    #[serde(rename = "hystart++")]
    HystartPp,
}

/// Options of a TCP Hybla flow.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HyblaOptions {
    /// RTT0, the reference RTT (the paper's and Linux's 25 ms).
    #[serde(default)]
    pub hybla_rtt0: Option<Dur>,
    /// Which Hybla: `"caini2004"` (the paper's rules in real numbers, the
    /// default) or `"linux-2.6.22"`, the tcp_hybla.c that ns-2 2.35's
    /// `Agent/TCP/Linux` runs (`select_ca hybla`), for like-for-like
    /// checks against it.
    #[serde(default)]
    pub hybla_variant: Option<HyblaVariantSpec>,
}

/// Scenario spelling of [`satcc_proto::tcp::HyblaVariant`].
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
pub enum HyblaVariantSpec {
    /// Caini & Firrincieli 2004.
    #[serde(rename = "caini2004")]
    Caini2004,
    /// Linux 2.6.22's tcp_hybla.c as ns-2 2.35 runs it.
    #[serde(rename = "linux-2.6.22")]
    Linux2622,
}

/// Options of a BBR flow; unset keys take tcp_bbr.c's values
/// ([`satcc_proto::tcp::BbrConfig`]).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BbrOptions {
    /// PROBE_RTT every `min_rtt` window (10 s; default true). False never
    /// enters it: the min_rtt filter then takes the newest sample when it
    /// expires.
    #[serde(default)]
    pub bbr_probe_rtt: Option<bool>,
    /// STARTUP's pacing and cwnd gain (`bbr_high_gain`, 739/256 ≈ 2.885).
    #[serde(default)]
    pub bbr_high_gain: Option<f64>,
    /// PROBE_BW's cwnd gain (`bbr_cwnd_gain`, 2).
    #[serde(default)]
    pub bbr_cwnd_gain: Option<f64>,
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

/// A TCP flow's `profile`: whose TCP the unset keys follow.
///
/// `"linux"` is what Linux (5.x-6.x, `net.ipv4` defaults) does where it
/// departs from the RFC defaults this simulator otherwise runs, measured
/// against the kernel's reno with SACK through `satcc shell`
/// (docs/real.md, "The simulator's TCP against Linux's";
/// `scripts/linux-validation.py`):
///
/// * initial window 10 segments (RFC 6928 §2; `TCP_INIT_CWND`), not
///   RFC 3390's 3-4;
/// * minimum RTO 200 ms (`TCP_RTO_MIN`), not RFC 6298 §2.4's 1 s, and
///   applied to the variance term: RTO = SRTT + max(4·RTTVAR, 200 ms)
///   (`tcp_rtt_estimator()`, `__tcp_set_rto()`), so a steady RTT does
///   not bring the RTO down to the RTT;
/// * a timeout halves the congestion window into ssthresh
///   (`tcp_reno_ssthresh()`: max(cwnd/2, 2)), not FlightSize;
/// * the SACK protocols but `peach-sack` detect loss with RACK-TLP
///   (RFC 8985, `loss_detection = "rack"`; Linux's default since 4.18),
///   not RFC 6675's DupThresh rule, and (but `bbr`) reduce cwnd through
///   recovery with PRR (RFC 6937, `prr = true`; Linux's since 3.2).
/// * `cubic` leaves slow start by HyStart as Linux 6.14+ runs it, floors
///   its growth at cwnd/20 per RTT before the first loss and sets
///   ssthresh = β·cwnd on a loss (tcp_cubic.c).
///
/// Linux grows cwnd by the segments each ACK covers (`tcp_slow_start()`,
/// `tcp_cong_avoid_ai()`), so its delayed ACKs do not slow the window;
/// the simulator grows it per ACK, which with the default receiver (an
/// ACK per segment) is the same growth. The profile therefore keeps an
/// ACK per segment.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum TcpProfileSpec {
    /// The RFCs: RFC 3390 initial window, RFC 6298 timer (1 s minimum),
    /// RFC 5681 ssthresh from FlightSize.
    #[default]
    Rfc,
    /// Linux's TCP.
    Linux,
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

/// Scenario spelling of [`satcc_proto::tcp::LossDetection`].
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum LossDetectionSpec {
    /// RFC 6675 DupThresh.
    Rfc6675,
    /// RFC 8985 RACK with TLP.
    Rack,
    /// RFC 8985 RACK without TLP.
    RackNoTlp,
}

impl LossDetectionSpec {
    /// The protocol's value.
    pub fn to_proto(self) -> tcp::LossDetection {
        match self {
            LossDetectionSpec::Rfc6675 => tcp::LossDetection::Rfc6675,
            LossDetectionSpec::Rack => tcp::LossDetection::Rack { tlp: true },
            LossDetectionSpec::RackNoTlp => tcp::LossDetection::Rack { tlp: false },
        }
    }
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
    /// ns-2 2.35 Agent/TCP/Linux.
    #[serde(rename = "ns2-linux")]
    Ns2Linux,
}

impl SackRecoverySpec {
    /// The scenario spelling.
    pub fn name(self) -> &'static str {
        match self {
            SackRecoverySpec::Rfc6675 => "rfc6675",
            SackRecoverySpec::Ns2 => "ns2",
            SackRecoverySpec::Ns2Linux => "ns2-linux",
        }
    }
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

impl FamilyOptions for TcpOptions {
    // IPv4 + TCP.
    const HEADER_BYTES: u32 = 40;

    fn keys(p: Protocol) -> Vec<&'static str> {
        let mut keys = keys_of::<TcpOptions>().to_vec();
        if is_peach(p) {
            keys.extend(keys_of::<PeachOptions>());
        }
        keys.extend(growth_keys(p));
        keys
    }

    fn refusal(_key: &str, _p: Protocol) -> Option<&'static str> {
        None
    }

    fn requires_rate(_p: Protocol) -> bool {
        // Only with app kind "onoff", which validate() checks.
        false
    }

    fn read<E: de::Error>(p: Protocol, mut t: toml::Table) -> Result<Self, E> {
        // The flat table holds Peach's keys beside TCP's: they fill their
        // own struct.
        let peach_keys = keys_of::<PeachOptions>();
        let mut peach = toml::Table::new();
        for key in peach_keys {
            if let Some(v) = t.remove(*key) {
                peach.insert(key.to_string(), v);
            }
        }
        // And the window growth's keys (cubic, hybla, bbr) theirs.
        let mut growth_table = toml::Table::new();
        for key in growth_keys(p) {
            if let Some(v) = t.remove(*key) {
                growth_table.insert(key.to_string(), v);
            }
        }
        let mut o: TcpOptions = nested(t)?;
        let sack = variant(p).is_some_and(|(v, _)| v == Variant::Sack);
        // ns-2 Sack1's recovery sets its own ssthresh (half the window):
        // it would override CUBIC's β_cubic, so it stays with Reno growth.
        let reno_growth = growth(p) == Growth::Reno;
        if o.sack_recovery == SackRecoverySpec::Ns2 && !(sack && reno_growth) {
            return Err(nested_error(
                "sack_recovery",
                &format!(
                    "\"ns2\" applies to protocols \"sack\" and \"peach-sack\" only, \
                     not \"{}\"",
                    p.name()
                ),
            ));
        }
        // ns-2's Agent/TCP/Linux runs the module's own growth over its
        // recovery; BBR sets cwnd itself (and has no ns-2 module), and
        // Peach's dummies are not part of that agent.
        if o.sack_recovery == SackRecoverySpec::Ns2Linux
            && !matches!(p, Protocol::Sack | Protocol::Cubic | Protocol::Hybla)
        {
            return Err(nested_error(
                "sack_recovery",
                &format!(
                    "\"ns2-linux\" applies to protocols \"sack\", \"cubic\" and \"hybla\" \
                     only, not \"{}\"",
                    p.name()
                ),
            ));
        }
        let rack = o
            .loss_detection
            .is_some_and(|l| l != LossDetectionSpec::Rfc6675);
        if rack && (!sack || is_peach(p) || o.sack_recovery != SackRecoverySpec::Rfc6675) {
            // RACK marks losses for RFC 6675's recovery (NextSeg() rule
            // (1)); Peach's dummies and ns-2's pipe counter are not
            // modelled with it.
            return Err(nested_error(
                "loss_detection",
                &format!(
                    "\"rack\" applies to the SACK protocols (\"sack\", \"cubic\", \
                     \"hybla\", \"bbr\") with sack_recovery = \"rfc6675\", not \"{}\"{}",
                    p.name(),
                    if o.sack_recovery != SackRecoverySpec::Rfc6675 {
                        format!(" with sack_recovery = \"{}\"", o.sack_recovery.name())
                    } else {
                        String::new()
                    }
                ),
            ));
        }
        if o.prr == Some(true)
            && (!sack
                || is_peach(p)
                || p == Protocol::Bbr
                || o.sack_recovery != SackRecoverySpec::Rfc6675)
        {
            return Err(nested_error(
                "prr",
                &format!(
                    "applies to \"sack\", \"cubic\" and \"hybla\" with sack_recovery = \
                     \"rfc6675\" (BBR sets cwnd itself), not \"{}\"{}",
                    p.name(),
                    if o.sack_recovery != SackRecoverySpec::Rfc6675 {
                        format!(" with sack_recovery = \"{}\"", o.sack_recovery.name())
                    } else {
                        String::new()
                    }
                ),
            ));
        }
        if is_peach(p) {
            o.peach = Some(nested(peach)?);
        }
        match p {
            Protocol::Cubic => o.cubic = Some(nested(growth_table)?),
            Protocol::Hybla => o.hybla = Some(nested(growth_table)?),
            Protocol::Bbr => o.bbr = Some(nested(growth_table)?),
            _ => {}
        }
        Ok(o)
    }

    fn fits(&self, p: Protocol) -> bool {
        self.peach.is_some() == is_peach(p)
            && self.cubic.is_some() == (p == Protocol::Cubic)
            && self.hybla.is_some() == (p == Protocol::Hybla)
            && self.bbr.is_some() == (p == Protocol::Bbr)
    }

    fn rate(&self) -> Option<Rate> {
        self.rate
    }

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
        if let Some(c) = &self.cubic {
            if let Some(v) = c.cubic_c.filter(|v| !(v.is_finite() && *v > 0.0)) {
                return Err(FieldError::new(
                    "cubic_c",
                    format!("must be a finite number > 0 (segments/s³), got {v}"),
                ));
            }
            if let Some(v) = c.cubic_beta.filter(|v| !(*v > 0.0 && *v < 1.0)) {
                return Err(FieldError::new(
                    "cubic_beta",
                    format!("must be between 0 and 1 (exclusive), got {v}"),
                ));
            }
            if c.cubic_variant == Some(CubicVariantSpec::Linux2622) {
                if let Some(ss) = c.slow_start.filter(|s| *s != SlowStartSpec::Standard) {
                    let name = match ss {
                        SlowStartSpec::HystartPp => "hystart++",
                        SlowStartSpec::Hystart613 => "hystart-6.13",
                        _ => "hystart",
                    };
                    return Err(FieldError::new(
                        "slow_start",
                        format!(
                            "\"{name}\" does not apply with cubic_variant = \"linux-2.6.22\" \
                             (its tcp_cubic.c predates HyStart): leave it unset or \"standard\""
                        ),
                    ));
                }
            }
        }
        if let Some(h) = &self.hybla {
            if h.hybla_rtt0.is_some_and(|d| d.0 .0 == 0) {
                return Err(FieldError::new(
                    "hybla_rtt0",
                    "must be greater than zero (ρ = RTT/RTT0)",
                ));
            }
        }
        if let Some(b) = &self.bbr {
            for (k, v, min) in [
                ("bbr_high_gain", b.bbr_high_gain, 1.0),
                ("bbr_cwnd_gain", b.bbr_cwnd_gain, 1.0),
            ] {
                if let Some(v) = v.filter(|v| !(v.is_finite() && *v >= min && *v <= 16.0)) {
                    return Err(FieldError::new(
                        k,
                        format!("must be a number from {min} to 16, got {v}"),
                    ));
                }
            }
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
