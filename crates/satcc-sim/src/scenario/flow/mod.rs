//! `[[flows]]`: one line of traffic. The fields every flow has sit on
//! [`FlowSpec`]; those of one protocol sit in its [`ProtocolOptions`]
//! variant, so that an option a protocol does not have cannot be held.
//!
//! In the file both are flat keys of the same table. The deserializer takes
//! `protocol`, routes every other key to the common fields or to that
//! protocol's options, and names a key another protocol owns (`flows[1].k:
//! applies to protocol "tfrcp" only`).
//!
//! Each protocol family has its own file here (`tcp`, `tfrc`, `tfrcp`,
//! `saratoga`, `cbr`): its options, their keys, defaults and checks, behind
//! `FamilyOptions`. This file holds what every flow shares, the
//! [`Protocol`] list and the dispatch, whose matches have no catch-all arm
//! so that a new protocol does not compile until each of them places it.

mod cbr;
mod saratoga;
mod tcp;
mod tfrc;
mod tfrcp;

use satcc_proto::Duration;
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use super::{nested, nested_error, AppSpec, Dur, FieldError, FileMode, Rate};

pub use cbr::CbrOptions;
pub use saratoga::{SaratogaOptions, StfrcOptions};
pub(crate) use tcp::{growth as tcp_growth, variant as tcp_variant};
pub use tcp::{
    BbrOptions, CubicOptions, CubicVariantSpec, HyblaOptions, HyblaVariantSpec, LossDetectionSpec,
    PeachOptions, RtoSsthreshSpec, RttTimingSpec, SackRecoverySpec, SlowStartSpec, TcpOptions,
    TcpProfileSpec,
};
pub use tfrc::{FeedbackSpec, TfrcOptions, TfrcProfileSpec};
pub use tfrcp::{PacingSpec, StrategySpec, TfrcpOptions};

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
    /// CUBIC window growth (RFC 9438) with SACK loss recovery (RFC 6675).
    Cubic,
    /// TCP Hybla window growth (Caini & Firrincieli 2004) with SACK loss
    /// recovery (RFC 6675).
    Hybla,
    /// BBR v1 as Linux's tcp_bbr.c (model-based cwnd and pacing) with
    /// SACK loss recovery (RFC 6675).
    Bbr,
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

/// A protocol family: the protocols that share one options type, one file
/// in this directory and one in `crate::protocols`. The dispatch matches
/// it; what the rest of satcc asks of a protocol it asks through named
/// methods of [`Protocol`] (capabilities), never through the family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    /// Every TCP, TCP-Peach included ([`TcpOptions`]).
    Tcp,
    /// TFRC and CCID3 ([`TfrcOptions`]).
    Tfrc,
    /// TFRCP ([`TfrcpOptions`]).
    Tfrcp,
    /// Saratoga and STFRC ([`SaratogaOptions`]).
    Saratoga,
    /// CBR ([`CbrOptions`]).
    Cbr,
}

impl Protocol {
    /// Every protocol, in the order error messages list them. A test
    /// checks that it holds every variant.
    pub const ALL: [Protocol; 14] = [
        Protocol::Reno,
        Protocol::NewReno,
        Protocol::Sack,
        Protocol::Cubic,
        Protocol::Hybla,
        Protocol::Bbr,
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
            Protocol::Cubic => "cubic",
            Protocol::Hybla => "hybla",
            Protocol::Bbr => "bbr",
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

    /// The family `self` belongs to: the one map from protocols to
    /// families.
    pub(crate) fn family(self) -> Family {
        match self {
            Protocol::Reno
            | Protocol::NewReno
            | Protocol::Sack
            | Protocol::Cubic
            | Protocol::Hybla
            | Protocol::Bbr
            | Protocol::Peach
            | Protocol::PeachSack => Family::Tcp,
            Protocol::Tfrc | Protocol::Ccid3 => Family::Tfrc,
            Protocol::Tfrcp => Family::Tfrcp,
            Protocol::Saratoga | Protocol::Stfrc => Family::Saratoga,
            Protocol::Cbr => Family::Cbr,
        }
    }

    /// A flow of this protocol must give `rate` (CBR and plain Saratoga
    /// send at a fixed rate; the others choose their own, or take it only
    /// with some applications).
    pub fn requires_rate(self) -> bool {
        match self.family() {
            Family::Tcp => TcpOptions::requires_rate(self),
            Family::Tfrc => TfrcOptions::requires_rate(self),
            Family::Tfrcp => TfrcpOptions::requires_rate(self),
            Family::Saratoga => SaratogaOptions::requires_rate(self),
            Family::Cbr => CbrOptions::requires_rate(self),
        }
    }
}

/// What a protocol family's options type does for the reader and the
/// checks; one implementation per file of this directory. No method has a
/// default, so that a new family is told by the compiler all it must say.
trait FamilyOptions: Sized {
    /// Header bytes added to every packet on the wire when the flow does
    /// not give `header_bytes`.
    const HEADER_BYTES: u32;
    /// The option keys protocol `p` of the family takes (besides the
    /// common ones).
    fn keys(p: Protocol) -> Vec<&'static str>;
    /// A plainer reason than "applies to protocol ... only" why protocol
    /// `p` does not take `key`, which other protocols take.
    fn refusal(key: &str, p: Protocol) -> Option<&'static str>;
    /// Whether a flow of protocol `p` must give `rate`.
    fn requires_rate(p: Protocol) -> bool;
    /// Reads protocol `p`'s options from their keys (only keys that
    /// [`FamilyOptions::keys`] lists are in `t`).
    fn read<E: de::Error>(p: Protocol, t: toml::Table) -> Result<Self, E>;
    /// Whether these are options of `p`, a protocol of the family.
    fn fits(&self, p: Protocol) -> bool;
    /// The rate the flow offers, if it is given one.
    fn rate(&self) -> Option<Rate>;
    /// Checks ranges and the application the protocol can carry; field
    /// paths relative to the flow.
    fn validate(&self, app: &AppSpec) -> Result<(), FieldError>;
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
    /// Host timing jitter, written `host_jitter = "20us"` (`"0"` or
    /// `"none"`: off); `None` when not written, which means the
    /// protocol's default ([`FlowSpec::host_jitter_bound`]). Each packet
    /// the sender emits at t enters the network at max(previous packet's
    /// entry, t + U[0, host_jitter]): a real host's send path delays
    /// packets by varying amounts but does not reorder them.
    pub host_jitter: Option<Dur>,
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

fn yes() -> bool {
    true
}

/// The default host timing jitter of the flows [`FlowSpec::host_jitter_bound`]
/// gives one to: 20 µs. Any jitter at all breaks RFC 5348 §4.3 step 4's
/// slow-start tie (100 µs and 1 ms give the same goodputs within 0.3 %);
/// with 20 µs every row of docs/validation.md's simulated-against-real
/// table is within 5 % (without it the loss-free TFRC and CCID3 rows give
/// real/simulated 0.946 and 0.936; measured 2026-11-26).
pub const DEFAULT_HOST_JITTER: Duration = Duration::from_micros(20);

/// `host_jitter` as written: a duration, or `"none"` for none.
#[derive(Clone, Copy)]
struct JitterField(Dur);

impl<'de> Deserialize<'de> for JitterField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = match super::NumOrStr::read(d, "a duration such as \"20us\", or \"none\"")? {
            super::NumOrStr::Int(i) => i.to_string(),
            super::NumOrStr::Float(f) => f.to_string(),
            super::NumOrStr::Str(s) => s,
        };
        if s.trim().eq_ignore_ascii_case("none") {
            return Ok(JitterField(Dur(Duration::ZERO)));
        }
        super::units::parse_duration(&s)
            .map(|d| JitterField(Dur(d)))
            .map_err(de::Error::custom)
    }
}

impl FlowSpec {
    /// The bound j of the flow's host timing jitter (see
    /// [`FlowSpec::host_jitter`]): as written; otherwise none when
    /// `send_jitter` is written (that is the flow's jitter then), and
    /// otherwise [`DEFAULT_HOST_JITTER`] for the senders that apply RFC
    /// 5348 §4.3 step 4's slow-start test "t_now - tld >= R" (`tfrc` and
    /// `ccid3` with profile `"rfc5348"`, `stfrc`) and none for the rest.
    /// Why those: with every RTT sample equal, feedback arrives exactly R
    /// apart and the test passes at every feedback, where a real host's
    /// timing makes it fail about every other (docs/validation.md,
    /// "Simulated against real traffic"). Profile `"ns2"` stays
    /// jitter-free as ns-2 is; TCP and TFRCP have no such tie.
    pub fn host_jitter_bound(&self) -> Duration {
        if let Some(j) = self.host_jitter {
            return j.0;
        }
        if self.send_jitter.is_some() {
            return Duration::ZERO;
        }
        let tied = match &self.options {
            ProtocolOptions::Tfrc(o) => o.profile == TfrcProfileSpec::Rfc5348,
            ProtocolOptions::Saratoga(_) => self.protocol == Protocol::Stfrc,
            ProtocolOptions::Tcp(_) | ProtocolOptions::Tfrcp(_) | ProtocolOptions::Cbr(_) => false,
        };
        if tied {
            DEFAULT_HOST_JITTER
        } else {
            Duration::ZERO
        }
    }

    /// Header bytes on the wire: as given, else the protocol's (40 for
    /// IPv4 + TCP, or IPv4 + UDP + the TFRC/DCCP or TFRCP header; 28 for
    /// CBR and Saratoga, IPv4 + UDP).
    pub fn wire_header_bytes(&self) -> u32 {
        self.header_bytes.unwrap_or(match self.protocol.family() {
            Family::Tcp => TcpOptions::HEADER_BYTES,
            Family::Tfrc => TfrcOptions::HEADER_BYTES,
            Family::Tfrcp => TfrcpOptions::HEADER_BYTES,
            Family::Saratoga => SaratogaOptions::HEADER_BYTES,
            Family::Cbr => CbrOptions::HEADER_BYTES,
        })
    }

    /// Checks what the types cannot (ranges, the application a protocol
    /// can carry); field paths are relative to the flow. Whole scenarios
    /// are checked by [`super::Scenario::validate`], which calls it; a
    /// flow made on its own (`satcc perf`) calls it directly.
    pub fn validate(&self) -> Result<(), FieldError> {
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
        // Both would hold each packet, one out of order and one in order:
        // which jitter the flow has must be a choice, not a sum.
        if let (Some(h), Some(sj)) = (self.host_jitter, self.send_jitter) {
            if h.0 > Duration::ZERO {
                return Err(FieldError::new(
                    "host_jitter",
                    format!(
                        "{} beside send_jitter {}: set one of them (send_jitter alone, or host_jitter alone)",
                        h.0, sj.0
                    ),
                ));
            }
        }
        match &self.options {
            ProtocolOptions::Tcp(o) => o.validate(&self.app)?,
            ProtocolOptions::Tfrc(o) => o.validate(&self.app)?,
            ProtocolOptions::Tfrcp(o) => o.validate(&self.app)?,
            ProtocolOptions::Cbr(o) => o.validate(&self.app)?,
            ProtocolOptions::Saratoga(o) => o.validate(&self.app)?,
        }
        self.app.validate()
    }
}

impl ProtocolOptions {
    /// The rate a flow offers: a CBR flow's rate, a TCP ON/OFF source's
    /// rate while ON, plain Saratoga's fixed rate.
    pub fn rate(&self) -> Option<Rate> {
        match self {
            ProtocolOptions::Tcp(o) => o.rate(),
            ProtocolOptions::Tfrc(o) => o.rate(),
            ProtocolOptions::Tfrcp(o) => o.rate(),
            ProtocolOptions::Cbr(o) => o.rate(),
            ProtocolOptions::Saratoga(o) => o.rate(),
        }
    }

    /// Whether these are options of protocol `p`.
    fn fits(&self, p: Protocol) -> bool {
        match (self, p.family()) {
            (ProtocolOptions::Tcp(o), Family::Tcp) => o.fits(p),
            (ProtocolOptions::Tfrc(o), Family::Tfrc) => o.fits(p),
            (ProtocolOptions::Tfrcp(o), Family::Tfrcp) => o.fits(p),
            (ProtocolOptions::Cbr(o), Family::Cbr) => o.fits(p),
            (ProtocolOptions::Saratoga(o), Family::Saratoga) => o.fits(p),
            // Options of one family on a protocol of another. (Listed so
            // that a new family is flagged here too.)
            (
                ProtocolOptions::Tcp(_)
                | ProtocolOptions::Tfrc(_)
                | ProtocolOptions::Tfrcp(_)
                | ProtocolOptions::Cbr(_)
                | ProtocolOptions::Saratoga(_),
                Family::Tcp | Family::Tfrc | Family::Tfrcp | Family::Cbr | Family::Saratoga,
            ) => false,
        }
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
    #[serde(default)]
    host_jitter: Option<JitterField>,
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

/// The keys of a struct read with `#[derive(Deserialize)]`: the field list
/// serde's derive hands to `deserialize_struct`.
fn keys_of<T: de::DeserializeOwned>() -> &'static [&'static str] {
    serde_names::<T>()
}

/// The names serde's derive hands its deserializer for `T`: a struct's
/// field list (`deserialize_struct`) or an enum's variant list
/// (`deserialize_enum`), every one of them; empty for other types.
fn serde_names<T: de::DeserializeOwned>() -> &'static [&'static str] {
    struct Probe<'a>(&'a mut &'static [&'static str]);
    impl<'de> Deserializer<'de> for Probe<'_> {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("neither a struct nor an enum"))
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
        fn deserialize_enum<V: Visitor<'de>>(
            self,
            _: &'static str,
            variants: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = variants;
            Err(de::Error::custom("probed"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map identifier ignored_any
        }
    }
    let mut names: &'static [&'static str] = &[];
    let _ = T::deserialize(Probe(&mut names));
    names
}

/// The option keys protocol `p` takes.
fn option_keys(p: Protocol) -> Vec<&'static str> {
    match p.family() {
        Family::Tcp => TcpOptions::keys(p),
        Family::Tfrc => TfrcOptions::keys(p),
        Family::Tfrcp => TfrcpOptions::keys(p),
        Family::Saratoga => SaratogaOptions::keys(p),
        Family::Cbr => CbrOptions::keys(p),
    }
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
    let refusal = match p.family() {
        Family::Tcp => TcpOptions::refusal(key, p),
        Family::Tfrc => TfrcOptions::refusal(key, p),
        Family::Tfrcp => TfrcpOptions::refusal(key, p),
        Family::Saratoga => SaratogaOptions::refusal(key, p),
        Family::Cbr => CbrOptions::refusal(key, p),
    };
    if let Some(r) = refusal {
        return r.into();
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
        let mut options = toml::Table::new();
        let keys: Vec<String> = t.keys().cloned().collect();
        for key in keys {
            if common.contains(&key.as_str()) {
                continue;
            }
            if !own.contains(&key.as_str()) {
                return Err(nested_error(&key, &misplaced(&key, protocol)));
            }
            let v = t.remove(&key).expect("a listed key");
            options.insert(key, v);
        }
        let c: CommonFields = nested(t)?;
        let options = match protocol.family() {
            Family::Tcp => ProtocolOptions::Tcp(TcpOptions::read(protocol, options)?),
            Family::Tfrc => ProtocolOptions::Tfrc(TfrcOptions::read(protocol, options)?),
            Family::Tfrcp => ProtocolOptions::Tfrcp(TfrcpOptions::read(protocol, options)?),
            Family::Saratoga => {
                ProtocolOptions::Saratoga(SaratogaOptions::read(protocol, options)?)
            }
            Family::Cbr => ProtocolOptions::Cbr(CbrOptions::read(protocol, options)?),
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
            host_jitter: c.host_jitter.map(|j| j.0),
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

    /// The names serde's derive gives `Protocol`'s variants: the list
    /// `deserialize_enum` is handed, which has every variant.
    fn variant_names() -> &'static [&'static str] {
        serde_names::<Protocol>()
    }

    #[test]
    fn all_holds_every_protocol_once_under_its_name() {
        // ALL is the one list the compiler cannot check (an array of any
        // length compiles): a new variant left out of it would be missing
        // from error messages and from `satcc perf`.
        let mut names: Vec<&str> = Protocol::ALL.iter().map(|p| p.name()).collect();
        for p in Protocol::ALL {
            let read: Protocol = toml::Value::String(p.name().into()).try_into().unwrap();
            assert_eq!(read, p, "name() and serde disagree on {p:?}");
        }
        names.sort_unstable();
        let mut variants = variant_names().to_vec();
        variants.sort_unstable();
        assert_eq!(names, variants);
    }

    #[test]
    fn key_sets_do_not_overlap() {
        let common = keys_of::<CommonFields>();
        assert!(common.contains(&"app") && common.len() == 14);
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
    fn host_jitter_defaults_by_protocol_and_reads_none() {
        let bound = |flow: &str| load(flow).unwrap().flows[0].host_jitter_bound();
        let d = DEFAULT_HOST_JITTER;
        // The senders with RFC 5348 §4.3 step 4's slow-start test.
        assert_eq!(bound("protocol = \"tfrc\""), d);
        assert_eq!(bound("protocol = \"ccid3\""), d);
        assert_eq!(bound("protocol = \"stfrc\""), d);
        // ns-2's TFRC (jitter-free as ns-2 is) and the protocols without
        // the test.
        let zero = Duration::ZERO;
        assert_eq!(bound("protocol = \"tfrc\"\nprofile = \"ns2\""), zero);
        assert_eq!(bound("protocol = \"ccid3\"\nprofile = \"ns2\""), zero);
        for p in ["sack", "reno", "tfrcp", "saratoga", "cubic"] {
            let extra = if p == "saratoga" {
                "\nrate = \"1Mbps\""
            } else {
                ""
            };
            assert_eq!(bound(&format!("protocol = \"{p}\"{extra}")), zero, "{p}");
        }
        // Written: as written, "none" and 0 being off; send_jitter alone
        // replaces the default.
        let us20 = Duration::from_micros(20);
        assert_eq!(bound("protocol = \"sack\"\nhost_jitter = \"20us\""), us20);
        assert_eq!(bound("protocol = \"tfrc\"\nhost_jitter = \"none\""), zero);
        assert_eq!(bound("protocol = \"tfrc\"\nhost_jitter = 0"), zero);
        assert_eq!(bound("protocol = \"tfrc\"\nsend_jitter = \"1ms\""), zero);
        assert_eq!(
            bound("protocol = \"tfrc\"\nsend_jitter = \"1ms\"\nhost_jitter = \"none\""),
            zero
        );
        // Both, or a value that is no duration: one line naming the field.
        let (field, msg) =
            error("protocol = \"tfrc\"\nsend_jitter = \"1ms\"\nhost_jitter = \"5us\"");
        assert!(
            field.ends_with("host_jitter") && msg.contains("send_jitter"),
            "{field}: {msg}"
        );
        let (field, msg) = error("protocol = \"tfrc\"\nhost_jitter = \"often\"");
        assert!(
            field.ends_with("host_jitter") && msg.contains("often"),
            "{field}: {msg}"
        );
    }

    #[test]
    fn rtt_filter_q_reads_thousandths_and_refuses_what_does_not_apply() {
        let q = |flow: &str| match &load(flow).unwrap().flows[0].options {
            ProtocolOptions::Tfrc(o) => o.rtt_q_milli,
            o => panic!("{o:?}"),
        };
        assert_eq!(q("protocol = \"ccid3\""), 900);
        assert_eq!(q("protocol = \"ccid3\"\nrtt_filter_q = 0.349"), 349);
        assert_eq!(q("protocol = \"tfrc\"\nrtt_filter_q = 0"), 0);
        let (field, msg) = error("protocol = \"ccid3\"\nrtt_filter_q = 1.5");
        assert!(
            field.ends_with("rtt_filter_q") && msg.contains("1.5"),
            "{field}: {msg}"
        );
        let (field, msg) = error("protocol = \"ccid3\"\nprofile = \"ns2\"\nrtt_filter_q = 0.5");
        assert!(
            field.ends_with("rtt_filter_q") && msg.contains("rfc5348"),
            "{field}: {msg}"
        );
    }

    /// The TCP sender a flow line gives.
    fn tcp_sender(flow: &str) -> satcc_proto::tcp::SenderConfig {
        let spec = &load(flow).unwrap().flows[0];
        match crate::protocols::ProtocolConfig::from_spec(spec, None) {
            crate::protocols::ProtocolConfig::Tcp { sender, .. } => sender,
            _ => panic!("not TCP"),
        }
    }

    #[test]
    fn tcp_profile_linux_sets_linux_defaults_and_keys_override_them() {
        use satcc_proto::tcp::RtoSsthresh;
        use satcc_proto::Duration;
        let rfc = tcp_sender("protocol = \"sack\"\nmss = 1448");
        let explicit = tcp_sender("protocol = \"sack\"\nmss = 1448\nprofile = \"rfc\"");
        // The RFC defaults: RFC 3390 (3 segments of 1448 B), RFC 6298's
        // 1 s, RFC 5681's FlightSize; "rfc" is the default.
        for s in [&rfc, &explicit] {
            assert_eq!(s.initial_window, 3);
            assert_eq!(s.min_rto, Duration::from_secs(1));
            assert_eq!(s.rto_ssthresh, RtoSsthresh::FlightSize);
        }
        let linux = tcp_sender("protocol = \"sack\"\nmss = 1448\nprofile = \"linux\"");
        assert_eq!(linux.initial_window, 10);
        assert_eq!(linux.min_rto, Duration::from_millis(200));
        assert_eq!(linux.rto_ssthresh, RtoSsthresh::Window);
        assert!(linux.rto_min_on_variance && !rfc.rto_min_on_variance);
        // RACK-TLP and PRR: Linux's, for the SACK protocols; BBR sets its
        // own cwnd (no PRR); keys override; the RFC default has neither.
        use satcc_proto::tcp::LossDetection;
        let rack = LossDetection::Rack { tlp: true };
        assert_eq!(
            (rfc.loss_detection, rfc.prr),
            (LossDetection::Rfc6675, false)
        );
        assert_eq!((linux.loss_detection, linux.prr), (rack, true));
        let bbr = tcp_sender("protocol = \"bbr\"\nprofile = \"linux\"");
        assert_eq!((bbr.loss_detection, bbr.prr), (rack, false));
        for p in ["reno", "newreno", "peach-sack"] {
            let s = tcp_sender(&format!("protocol = \"{p}\"\nprofile = \"linux\""));
            assert_eq!(
                (s.loss_detection, s.prr),
                (LossDetection::Rfc6675, false),
                "{p}"
            );
        }
        let s = tcp_sender(
            "protocol = \"sack\"\nprofile = \"linux\"\nloss_detection = \"rack-no-tlp\"\nprr = false",
        );
        assert_eq!(
            (s.loss_detection, s.prr),
            (LossDetection::Rack { tlp: false }, false)
        );
        let over = tcp_sender(
            "protocol = \"reno\"\nprofile = \"linux\"\ninitial_window = 2\n\
             min_rto = \"1s\"\nrto_ssthresh = \"flightsize\"",
        );
        assert_eq!(over.initial_window, 2);
        assert_eq!(over.min_rto, Duration::from_secs(1));
        assert_eq!(over.rto_ssthresh, RtoSsthresh::FlightSize);
        let (field, message) = error("protocol = \"sack\"\nprofile = \"bsd\"");
        assert!(field.ends_with("profile"), "{field}: {message}");
        assert!(message.contains("linux"), "{message}");
    }

    #[test]
    fn growth_keys_reach_the_sender_and_are_checked() {
        use satcc_proto::tcp::{Growth, SlowStart};
        use satcc_proto::Duration;
        let cubic = |flow: &str| match tcp_sender(flow).growth {
            Growth::Cubic(c) => c,
            g => panic!("{g:?}"),
        };
        // RFC 9438's defaults, RFC 5681's slow start; profile "linux"
        // runs tcp_cubic.c's HyStart (`hystart = 1`) unless told.
        let d = cubic("protocol = \"cubic\"");
        assert_eq!(d, satcc_proto::tcp::CubicConfig::default());
        assert_eq!(d.slow_start, SlowStart::Standard);
        let l = cubic("protocol = \"cubic\"\nprofile = \"linux\"");
        assert!(matches!(l.slow_start, SlowStart::Hystart(_)), "{l:?}");
        let l = cubic("protocol = \"cubic\"\nprofile = \"linux\"\nslow_start = \"standard\"");
        assert_eq!(l.slow_start, SlowStart::Standard);
        let c = cubic(
            "protocol = \"cubic\"\nslow_start = \"hystart++\"\ncubic_c = 0.2\n\
             cubic_beta = 0.5\ncubic_fast_convergence = false\ncubic_reno_friendly = false",
        );
        assert!(matches!(c.slow_start, SlowStart::HystartPp(_)), "{c:?}");
        assert_eq!((c.c, c.beta), (0.2, 0.5));
        assert!(!c.fast_convergence && !c.reno_friendly);
        // ns-2's CUBIC v2.1 takes its module's C and β unless told.
        let v = cubic("protocol = \"cubic\"\ncubic_variant = \"linux-2.6.22\"");
        assert_eq!(v, satcc_proto::tcp::CubicConfig::linux_2_6_22());
        let v = cubic("protocol = \"cubic\"\ncubic_variant = \"linux-2.6.22\"\ncubic_beta = 0.7");
        assert_eq!(
            (v.variant, v.beta),
            (satcc_proto::tcp::CubicVariant::Linux2622, 0.7)
        );
        assert_eq!(
            cubic("protocol = \"cubic\"\ncubic_variant = \"rfc9438\""),
            satcc_proto::tcp::CubicConfig::default()
        );
        match tcp_sender("protocol = \"hybla\"\nhybla_rtt0 = \"50ms\"").growth {
            Growth::Hybla(h) => assert_eq!(h.rtt0, Duration::from_millis(50)),
            g => panic!("{g:?}"),
        }
        match tcp_sender("protocol = \"hybla\"\nhybla_variant = \"linux-2.6.22\"").growth {
            Growth::Hybla(h) => {
                assert_eq!(h.variant, satcc_proto::tcp::HyblaVariant::Linux2622)
            }
            g => panic!("{g:?}"),
        }
        match tcp_sender("protocol = \"bbr\"\nbbr_probe_rtt = false\nbbr_cwnd_gain = 3").growth {
            Growth::Bbr(b) => {
                assert!(!b.probe_rtt);
                assert_eq!(b.cwnd_gain, 3.0);
            }
            g => panic!("{g:?}"),
        }
        for (flow, field, message) in [
            (
                "protocol = \"sack\"\nslow_start = \"hystart\"",
                "slow_start",
                "applies to protocol \"cubic\" only",
            ),
            (
                "protocol = \"cubic\"\nhybla_rtt0 = \"25ms\"",
                "hybla_rtt0",
                "applies to protocol \"hybla\" only",
            ),
            (
                "protocol = \"hybla\"\nbbr_probe_rtt = false",
                "bbr_probe_rtt",
                "applies to protocol \"bbr\" only",
            ),
            (
                "protocol = \"cubic\"\nslow_start = \"fast\"",
                "slow_start",
                "fast",
            ),
            (
                "protocol = \"cubic\"\ncubic_beta = 1.5",
                "cubic_beta",
                "got 1.5",
            ),
            ("protocol = \"cubic\"\ncubic_c = -1", "cubic_c", "got -1"),
            (
                "protocol = \"cubic\"\ncubic_variant = \"linux-2.6.22\"\nslow_start = \"hystart\"",
                "slow_start",
                "predates HyStart",
            ),
            (
                "protocol = \"cubic\"\ncubic_variant = \"v2\"",
                "cubic_variant",
                "linux-2.6.22",
            ),
            (
                "protocol = \"hybla\"\nhybla_rtt0 = 0",
                "hybla_rtt0",
                "greater than zero",
            ),
            (
                "protocol = \"bbr\"\nbbr_high_gain = 0.5",
                "bbr_high_gain",
                "got 0.5",
            ),
        ] {
            let (f, m) = error(flow);
            assert_eq!(f, format!("flows[0].{field}"), "{flow}: {m}");
            assert!(m.contains(message), "{flow}: {m}");
        }
        let (_, m) = error("protocol = \"cubic\"\nslow_start = \"fast\"");
        assert!(m.contains("hystart++"), "{m}");
    }

    #[test]
    fn bbr_flows_draw_their_own_probe_bw_seed() {
        use crate::protocols::{AnySender, ProtocolConfig};
        use satcc_proto::rng::Rng;
        use satcc_proto::tcp::Growth;
        use satcc_proto::Instant;
        let spec = &load("protocol = \"bbr\"").unwrap().flows[0];
        let cfg = ProtocolConfig::from_spec(spec, None);
        // The seed comes from the flow's own stream (run seed, flow
        // index): two flows differ, the same flow repeats.
        let seed = |run: u64, flow: u64| match cfg
            .instantiate(Instant::ZERO, &mut Rng::stream(run, flow))
            .0
        {
            AnySender::Tcp(s) => match s.config().growth {
                Growth::Bbr(b) => b.seed,
                g => panic!("{g:?}"),
            },
            _ => panic!("not TCP"),
        };
        assert_ne!(seed(1, 10), seed(1, 11));
        assert_ne!(seed(1, 10), seed(2, 10));
        assert_eq!(seed(1, 10), seed(1, 10));
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
        // cubic and hybla recover as `sack` does (RFC 6675) but Sack1's
        // own halving would override their window rules.
        for p in ["cubic", "hybla", "bbr"] {
            let (field, message) = error(&format!("protocol = \"{p}\"\nsack_recovery = \"ns2\""));
            assert_eq!(field, "flows[0].sack_recovery");
            assert!(message.contains(&format!("\"{p}\"")), "{message}");
        }
        let (field, message) = error("protocol = \"sack\"\nsack_recovery = \"fack\"");
        assert_eq!(field, "flows[0].sack_recovery");
        assert!(
            message.contains("fack") && message.contains("ns2"),
            "{message}"
        );
    }

    #[test]
    fn sack_recovery_ns2_linux_is_parsed_and_checked() {
        for p in ["sack", "cubic", "hybla"] {
            let ProtocolOptions::Tcp(o) = options(&format!(
                "protocol = \"{p}\"\nsack_recovery = \"ns2-linux\""
            )) else {
                panic!()
            };
            assert_eq!(o.sack_recovery, SackRecoverySpec::Ns2Linux, "{p}");
        }
        // BBR sets cwnd itself; Peach and Reno/NewReno are not that agent.
        for p in ["bbr", "peach-sack", "peach", "newreno", "reno"] {
            let (field, message) = error(&format!(
                "protocol = \"{p}\"\nsack_recovery = \"ns2-linux\""
            ));
            assert_eq!(field, "flows[0].sack_recovery", "{p}");
            assert!(
                message.contains(&format!("\"{p}\"")) && message.contains("ns2-linux"),
                "{message}"
            );
        }
        for (key, value) in [("loss_detection", "\"rack\""), ("prr", "true")] {
            let (field, message) = error(&format!(
                "protocol = \"hybla\"\nsack_recovery = \"ns2-linux\"\n{key} = {value}"
            ));
            assert_eq!(field, format!("flows[0].{key}"));
            assert!(message.contains("ns2-linux"), "{message}");
        }
    }

    #[test]
    fn loss_detection_is_parsed_and_checked() {
        let ProtocolOptions::Tcp(o) = options("protocol = \"sack\"") else {
            panic!()
        };
        assert_eq!(o.loss_detection, None);
        for (v, want) in [
            ("rfc6675", LossDetectionSpec::Rfc6675),
            ("rack", LossDetectionSpec::Rack),
            ("rack-no-tlp", LossDetectionSpec::RackNoTlp),
        ] {
            for p in ["sack", "cubic", "hybla", "bbr"] {
                let ProtocolOptions::Tcp(o) =
                    options(&format!("protocol = \"{p}\"\nloss_detection = \"{v}\""))
                else {
                    panic!()
                };
                assert_eq!(o.loss_detection, Some(want), "{p} {v}");
            }
        }
        for p in ["reno", "newreno", "peach", "peach-sack"] {
            let (field, message) = error(&format!("protocol = \"{p}\"\nloss_detection = \"rack\""));
            assert_eq!(field, "flows[0].loss_detection");
            assert!(message.contains(&format!("\"{p}\"")), "{message}");
        }
        let (field, message) =
            error("protocol = \"sack\"\nsack_recovery = \"ns2\"\nloss_detection = \"rack\"");
        assert_eq!(field, "flows[0].loss_detection");
        assert!(message.contains("ns2"), "{message}");
        let (field, message) = error("protocol = \"sack\"\nloss_detection = \"fack\"");
        assert_eq!(field, "flows[0].loss_detection");
        assert!(
            message.contains("fack") && message.contains("rack"),
            "{message}"
        );
        // PRR: the SACK protocols whose cwnd the sender sets.
        for p in ["sack", "cubic", "hybla"] {
            let ProtocolOptions::Tcp(o) = options(&format!("protocol = \"{p}\"\nprr = true"))
            else {
                panic!()
            };
            assert_eq!(o.prr, Some(true), "{p}");
        }
        for p in ["reno", "newreno", "peach", "peach-sack", "bbr"] {
            let (field, message) = error(&format!("protocol = \"{p}\"\nprr = true"));
            assert_eq!(field, "flows[0].prr");
            assert!(message.contains(&format!("\"{p}\"")), "{message}");
        }
        assert!(matches!(
            options("protocol = \"bbr\"\nprr = false"),
            ProtocolOptions::Tcp(_)
        ));
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
                "applies to protocols \"reno\", \"newreno\", \"sack\", \"cubic\", \"hybla\", \"bbr\", \
                 \"peach\" and \"peach-sack\" only",
            ),
            (
                "protocol = \"cbr\"\nrate = 1000\nmin_rto = 1",
                "min_rto",
                "applies to protocols \"reno\", \"newreno\", \"sack\", \"cubic\", \"hybla\", \"bbr\", \
                 \"peach\", \"peach-sack\" and \"tfrcp\" only",
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
                "protocol = \"stfrc\"\nreceive_rate = \"measured\"",
                "receive_rate",
                "\"measured\": expected \"predicted\" or \"delivery\"",
            ),
            (
                "protocol = \"stfrc\"\nloss_filter = \"none\"",
                "loss_filter",
                "\"none\": expected \"all\" or \"spike\"",
            ),
            (
                "protocol = \"saratoga\"\nrate = 1000\nloss_filter = \"spike\"",
                "loss_filter",
                "applies to protocol \"stfrc\" only",
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
