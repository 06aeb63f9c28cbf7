//! The TOML scenario schema (documented for users in `docs/scenario.md`).
//!
//! Parsing goes TOML text -> `toml::Value` -> command-line overrides applied
//! -> typed [`Scenario`] through `serde_path_to_error` ([`parse_value`]), so
//! that every error names the field path at fault, then
//! [`Scenario::validate`] checks what types cannot (cross-references,
//! ranges).

pub mod constellation;
pub mod flow;
pub mod limits;
pub mod refwa;
pub mod snapshot;
pub mod units;

use std::cell::RefCell;
use std::fmt;
use std::path::Path;

use satcc_proto::Duration;
use serde::{Deserialize, Deserializer};

pub use flow::{
    BbrOptions, CbrOptions, CubicOptions, CubicVariantSpec, FeedbackSpec, FlowSpec, HyblaOptions,
    HyblaVariantSpec, LossDetectionSpec, PacingSpec, PeachOptions, Protocol, ProtocolOptions,
    RtoSsthreshSpec, RttTimingSpec, SackRecoverySpec, SaratogaOptions, SlowStartSpec, StfrcOptions,
    StrategySpec, TcpOptions, TcpProfileSpec, TfrcOptions, TfrcProfileSpec, TfrcpOptions,
};

use crate::error::join_path;
pub use crate::error::{FieldError, ScenarioError};

/// A rate in bits per second, written `10Mbps` or as a number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rate(pub u64);

/// A duration, written `250ms` or as a number of seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Dur(pub Duration);

/// A byte count, written `64KB` or as a number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bytes(pub u64);

/// A probability in [0, 1], written `1e-4`, `0.01` or `"1e-4"`.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Default)]
pub struct Prob(pub f64);

enum NumOrStr {
    Int(i64),
    Float(f64),
    Str(String),
}

impl NumOrStr {
    /// Reads a number or a string; anything else is refused with what was
    /// expected (`what`, in the user's words).
    fn read<'de, D: Deserializer<'de>>(d: D, what: &'static str) -> Result<NumOrStr, D::Error> {
        struct V(&'static str);
        impl serde::de::Visitor<'_> for V {
            type Value = NumOrStr;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.0)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<NumOrStr, E> {
                Ok(NumOrStr::Int(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<NumOrStr, E> {
                Ok(i64::try_from(v).map_or(NumOrStr::Float(v as f64), NumOrStr::Int))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<NumOrStr, E> {
                Ok(NumOrStr::Float(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<NumOrStr, E> {
                Ok(NumOrStr::Str(v.to_string()))
            }
        }
        d.deserialize_any(V(what))
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = match NumOrStr::read(d, "a rate such as \"10Mbps\"")? {
            NumOrStr::Int(i) => i.to_string(),
            NumOrStr::Float(f) => f.to_string(),
            NumOrStr::Str(s) => s,
        };
        units::parse_rate_bps(&s)
            .map(Rate)
            .map_err(serde::de::Error::custom)
    }
}
impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = match NumOrStr::read(d, "a duration such as \"250ms\" or a number of seconds")? {
            NumOrStr::Int(i) => i.to_string(),
            NumOrStr::Float(f) => f.to_string(),
            NumOrStr::Str(s) => s,
        };
        units::parse_duration(&s)
            .map(Dur)
            .map_err(serde::de::Error::custom)
    }
}
impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = match NumOrStr::read(d, "a size such as \"64KB\" or a number of bytes")? {
            NumOrStr::Int(i) => i.to_string(),
            NumOrStr::Float(f) => f.to_string(),
            NumOrStr::Str(s) => s,
        };
        units::parse_bytes(&s)
            .map(Bytes)
            .map_err(serde::de::Error::custom)
    }
}
impl<'de> Deserialize<'de> for Prob {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = match NumOrStr::read(d, "a probability such as 1e-4")? {
            NumOrStr::Int(i) => i as f64,
            NumOrStr::Float(f) => f,
            NumOrStr::Str(s) => s.trim().parse::<f64>().map_err(|_| {
                serde::de::Error::custom(format!("invalid probability '{s}' (expected e.g. 1e-4)"))
            })?,
        };
        if !(0.0..=1.0).contains(&v) {
            return Err(serde::de::Error::custom(format!(
                "probability {v} outside [0, 1]"
            )));
        }
        Ok(Prob(v))
    }
}

fn default_seed() -> u64 {
    1
}

/// A whole scenario.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Short name, used in reports.
    #[serde(default)]
    pub name: Option<String>,
    /// Free text.
    #[serde(default)]
    pub description: Option<String>,
    /// Simulated time.
    pub duration: Dur,
    /// Run seed; every component's random stream is split from it.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// The network.
    pub topology: Topology,
    /// The traffic.
    #[serde(default)]
    pub flows: Vec<FlowSpec>,
    /// What to measure and write.
    #[serde(default)]
    pub record: Record,
    /// REFWA router controllers (paper 003).
    #[serde(default)]
    pub refwa: Option<crate::scenario::refwa::RefwaSpec>,
    /// Topology changes at given times (paper 003's dynamic virtual
    /// topology).
    #[serde(default)]
    pub snapshots: Vec<crate::scenario::snapshot::SnapshotSpec>,
    /// What was accepted but looks like a mistake (a rate without a
    /// unit), one line each: `FIELD: PROBLEM`. The scenario runs as
    /// written; the command line prints these on stderr.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// The network, by kind.
#[derive(Clone, Debug)]
pub enum Topology {
    /// N sources -> router `r1` -> bottleneck -> router `r2` -> N sinks; one
    /// source/sink pair per flow instance.
    Dumbbell(Box<Dumbbell>),
    /// N sources -> gateway `gw_a` -> uplink -> `sat` -> downlink -> gateway
    /// `gw_b` -> N sinks: one bent-pipe satellite hop, each direction with
    /// its own rate.
    Satellite(Box<Satellite>),
    /// Explicit nodes and links; flows name their `src` and `dst`.
    Graph(Graph),
    /// A LEO constellation in one of paper 003's Fig. 1 shapes; flows name
    /// their RTT `group`.
    Constellation(Box<crate::scenario::constellation::Constellation>),
}

/// Built-in dumbbell.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dumbbell {
    /// The shared link `r1 -> r2` (named `bottleneck`; its reverse is
    /// `bottleneck.rev`).
    pub bottleneck: LinkSpec,
    /// Links from sources to `r1` and from `r2` to sinks.
    #[serde(default)]
    pub access: AccessSpec,
}

/// Built-in single satellite hop.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Satellite {
    /// `gw_a -> sat` (named `uplink`; reverse `uplink.rev`).
    pub uplink: LinkSpec,
    /// `sat -> gw_b` (named `downlink`; reverse `downlink.rev`).
    pub downlink: LinkSpec,
    /// Links from sources to `gw_a` and from `gw_b` to sinks.
    #[serde(default)]
    pub access: AccessSpec,
}

/// Access links of a built-in topology.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessSpec {
    /// Rate of every access link, both directions.
    #[serde(default = "AccessSpec::default_rate")]
    pub rate: Rate,
    /// One-way delay of source access links.
    #[serde(default = "AccessSpec::default_delay")]
    pub delay: Dur,
    /// Per-source delays (pair i uses entry i mod len), overriding `delay`.
    #[serde(default)]
    pub delays: Vec<Dur>,
    /// One-way delay of sink access links (default: `delay`).
    #[serde(default)]
    pub sink_delay: Option<Dur>,
    /// Per-sink delays, overriding `sink_delay`.
    #[serde(default)]
    pub sink_delays: Vec<Dur>,
    /// Queue of every access link.
    #[serde(default = "AccessSpec::default_queue")]
    pub queue: QueueSpec,
}

impl AccessSpec {
    fn default_rate() -> Rate {
        Rate(100_000_000)
    }
    fn default_delay() -> Dur {
        Dur(Duration::from_millis(1))
    }
    fn default_queue() -> QueueSpec {
        QueueSpec::DropTail {
            limit: Some(1000),
            limit_bytes: None,
        }
    }
}

impl AccessSpec {
    /// The duplex link spec of one access link with one-way `delay`.
    pub fn link(&self, delay: Duration) -> LinkSpec {
        LinkSpec {
            from: None,
            to: None,
            name: None,
            rate: self.rate,
            reverse_rate: None,
            delay: Dur(delay),
            queue: self.queue.clone(),
            reverse_queue: None,
            error: None,
            reverse_error: None,
            shaper: None,
        }
    }
}

impl Default for AccessSpec {
    fn default() -> Self {
        AccessSpec {
            rate: Self::default_rate(),
            delay: Self::default_delay(),
            delays: Vec::new(),
            sink_delay: None,
            sink_delays: Vec::new(),
            queue: Self::default_queue(),
        }
    }
}

/// A duplex link. The forward direction is `from -> to` (or the built-in
/// topology's data direction); the reverse takes the `reverse_*` values,
/// defaulting to the forward ones.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Graph topologies: first end.
    #[serde(default)]
    pub from: Option<String>,
    /// Graph topologies: second end.
    #[serde(default)]
    pub to: Option<String>,
    /// Name of the forward direction (reverse: `NAME.rev`). Graph default
    /// `FROM->TO`.
    #[serde(default)]
    pub name: Option<String>,
    /// Forward rate.
    pub rate: Rate,
    /// Reverse rate (asymmetric links); default `rate`.
    #[serde(default)]
    pub reverse_rate: Option<Rate>,
    /// One-way propagation delay, both directions.
    pub delay: Dur,
    /// Forward queue.
    #[serde(default = "LinkSpec::default_queue")]
    pub queue: QueueSpec,
    /// Reverse queue; default the same as `queue`.
    #[serde(default)]
    pub reverse_queue: Option<QueueSpec>,
    /// Forward error model.
    #[serde(default)]
    pub error: Option<ErrorSpec>,
    /// Reverse error model; default none.
    #[serde(default)]
    pub reverse_error: Option<ErrorSpec>,
    /// A token-bucket shaper in front of the forward direction (Linux's
    /// `tbf`); default none.
    #[serde(default)]
    pub shaper: Option<ShaperSpec>,
}

/// A token-bucket shaper, as `tc qdisc ... tbf rate R burst B limit L`:
/// tokens accrue at `rate` up to `burst` bytes, a packet leaves when the
/// bucket holds its size (then at the link's own `rate`, the line rate),
/// and up to `limit` bytes wait in front of the bucket (a byte FIFO that
/// takes the place of the link's forward `queue`). tc's `kb` is 1024
/// bytes: write `16KiB` for tc's `16kb`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ShaperSpec {
    /// Token rate.
    pub rate: Rate,
    /// Bucket depth, bytes.
    pub burst: Bytes,
    /// Bytes that may wait for tokens.
    pub limit: Bytes,
}

impl LinkSpec {
    fn default_queue() -> QueueSpec {
        QueueSpec::DropTail {
            limit: Some(100),
            limit_bytes: None,
        }
    }
}

/// A queue discipline.
#[derive(Clone, Debug, PartialEq)]
pub enum QueueSpec {
    /// First in, first out; drops arrivals when full.
    DropTail {
        /// Limit in packets.
        limit: Option<u32>,
        /// Limit in bytes (if both are given, both apply).
        limit_bytes: Option<Bytes>,
    },
    /// Random Early Detection, as ns-2's `Queue/RED`.
    Red(RedSpec),
    /// Strict two-class priority: low-priority packets (TCP-Peach dummies)
    /// are served only when no high-priority packet waits and are dropped
    /// first when the shared buffer is full.
    Priority {
        /// Shared limit in packets.
        limit: Option<u32>,
        /// Shared limit in bytes.
        limit_bytes: Option<Bytes>,
    },
}

/// RED parameters, named and defaulted as ns-2 2.35's `Queue/RED`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RedSpec {
    /// Physical limit in packets (ns-2 `limit_`).
    #[serde(default = "RedSpec::default_limit")]
    pub limit: u32,
    /// Minimum threshold in packets (`thresh_`); 0 = automatic.
    #[serde(default)]
    pub min_th: f64,
    /// Maximum threshold in packets (`maxthresh_`); 0 = automatic.
    #[serde(default)]
    pub max_th: f64,
    /// Queue weight (`q_weight_`); <= 0 = automatic from the link rate.
    #[serde(default = "RedSpec::default_weight")]
    pub weight: f64,
    /// Drop probability at max_th (`1/linterm_`).
    #[serde(default = "RedSpec::default_max_p")]
    pub max_p: f64,
    /// Gentle mode (`gentle_`).
    #[serde(default = "RedSpec::default_true")]
    pub gentle: bool,
    /// Space drops out (`wait_`).
    #[serde(default = "RedSpec::default_true")]
    pub wait: bool,
    /// Mean packet size for idle-period aging (`mean_pktsize_`).
    #[serde(default = "RedSpec::default_mean_pktsize")]
    pub mean_pktsize: u32,
    /// Target queueing delay used by automatic thresholds (`targetdelay_`).
    #[serde(default = "RedSpec::default_target_delay")]
    pub target_delay: Dur,
    /// What the queue counts: `"packets"` (the default) or `"bytes"`
    /// (ns-2 2.35's own default, `bytes_ true` + `queue_in_bytes_ true`).
    #[serde(default)]
    pub mode: RedMode,
}

/// The unit a RED queue measures itself in.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RedMode {
    /// Packets: average and instantaneous queue in packets, thresholds and
    /// limit in packets, every packet dropped with the same probability
    /// (ns-2 `bytes_ false`, `queue_in_bytes_ false`).
    #[default]
    Packets,
    /// Bytes, as ns-2 2.35's `Queue/RED` defaults (`bytes_ true`,
    /// `queue_in_bytes_ true`; queue/red.cc): the average and the
    /// instantaneous queue count bytes, `min_th`, `max_th` and `limit` stay
    /// in packets of `mean_pktsize` bytes (compared as `min_th *
    /// mean_pktsize` bytes and so on), the packets since the last drop are
    /// counted in bytes / `mean_pktsize`, and a packet of `size` bytes is
    /// dropped with probability `p * size / mean_pktsize` (`modify_p`).
    Bytes,
}

impl RedSpec {
    fn default_limit() -> u32 {
        100
    }
    fn default_weight() -> f64 {
        -1.0
    }
    fn default_max_p() -> f64 {
        0.1
    }
    fn default_true() -> bool {
        true
    }
    fn default_mean_pktsize() -> u32 {
        500
    }
    fn default_target_delay() -> Dur {
        Dur(Duration::from_millis(5))
    }
}

/// A link error model; draws come from the link's own random stream.
#[derive(Clone, Debug, PartialEq)]
pub enum ErrorSpec {
    /// Each packet is lost with probability `per`.
    Uniform {
        /// Packet error rate.
        per: Prob,
    },
    /// Each bit is in error with probability `ber`: a packet of L bytes is
    /// lost with probability 1-(1-ber)^(8L).
    Ber {
        /// Bit error rate.
        ber: Prob,
    },
    /// Gilbert-Elliott two-state bursts, stepped once per packet.
    Gilbert {
        /// P(good -> bad) per packet.
        p_gb: Prob,
        /// P(bad -> good) per packet.
        p_bg: Prob,
        /// Loss probability in the good state.
        loss_good: Prob,
        /// Loss probability in the bad state.
        loss_bad: Prob,
    },
}

impl ErrorSpec {
    fn one() -> Prob {
        Prob(1.0)
    }
}

/// Explicit topology.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Graph {
    /// Nodes.
    pub nodes: Vec<NodeSpec>,
    /// Duplex links.
    pub links: Vec<LinkSpec>,
}

/// A node of an explicit topology.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    /// Unique name.
    pub name: String,
}

/// Whether a finite-file source sends files back to back or as they arrive.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum FileMode {
    /// Next file once the previous is fully acknowledged (after `gap`).
    #[default]
    Sequential,
    /// Files arrive as a Poisson process with `mean_interarrival`.
    Poisson,
}

/// The application on top of a flow.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum AppSpec {
    /// Always has data.
    #[default]
    Bulk,
    /// Finite files.
    Files {
        /// Size of each file (the lower bound when `size_max` is given).
        size: Bytes,
        /// Sizes drawn uniformly from [size, size_max] (the flow's own
        /// random stream).
        size_max: Option<Bytes>,
        /// Back to back or Poisson arrivals.
        mode: FileMode,
        /// Stop after this many files.
        count: Option<u32>,
        /// Poisson mode: mean time between arrivals.
        mean_interarrival: Option<Dur>,
        /// Sequential mode: idle time between one file's end and the next.
        gap: Dur,
        /// Sequential mode: if set, the idle time is `gap` plus an
        /// exponential draw with this mean from the flow's own random
        /// stream, so that N flows model transfers arriving at random
        /// with on average fewer than N active (paper 004 §III-C.3).
        gap_mean: Option<Dur>,
        /// Sequential mode: every file after the first opens a fresh TCP
        /// connection (new sender and receiver state: initial window, slow
        /// or Sudden Start, RTT estimate), as a browser fetching one page
        /// per connection does (paper 002 §V-A, Figs. 14-15). Otherwise
        /// files share one connection.
        new_connection: bool,
    },
    /// Pareto ON/OFF periods (as ns-2's `Application/Traffic/Pareto`): TCP
    /// has unlimited data while ON; CBR sends at `rate` while ON.
    OnOff {
        /// Mean ON time.
        on_mean: Dur,
        /// Mean OFF time.
        off_mean: Dur,
        /// Pareto shape (> 1).
        shape: f64,
    },
}

impl AppSpec {
    fn default_shape() -> f64 {
        1.5
    }
}

/// What to measure.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// Sampling interval of the time series.
    #[serde(default = "Record::default_interval")]
    pub interval: Dur,
    /// Links in the summary (default: all but access links).
    #[serde(default)]
    pub links: Option<Vec<String>>,
    /// Goodput is also reported over [measure_from, end] (default 0).
    #[serde(default)]
    pub measure_from: Dur,
}

impl Record {
    fn default_interval() -> Dur {
        Dur(Duration::from_millis(100))
    }
}

impl Default for Record {
    fn default() -> Self {
        Record {
            interval: Self::default_interval(),
            links: None,
            measure_from: Dur::default(),
        }
    }
}

/// Applies `--set a.b.c=value` to a parsed TOML tree. The value is read as a
/// TOML value when it parses as one (`3`, `1e-4`, `true`, `"x"`,
/// `{kind="red"}`), otherwise as a string (`16Mbps`). Array elements are
/// addressed by index (`flows.0.count=4`).
pub fn apply_override(root: &mut toml::Value, assignment: &str) -> Result<(), ScenarioError> {
    let err = |field: &str, message: String| ScenarioError {
        file: "--set".into(),
        field: field.into(),
        message,
    };
    let (key, raw) = assignment
        .split_once('=')
        .ok_or_else(|| err(assignment, "expected KEY=VALUE".into()))?;
    if key.trim().is_empty() {
        return Err(err(assignment, "empty key".into()));
    }
    set_value(root, key, parse_override_value(raw.trim()))
}

/// Sets the field at dotted `key` (`flows.0.count`, the keys of `--set`)
/// to `value` in a parsed TOML tree, creating tables on the way; array
/// elements are addressed by index. The one implementation behind `--set`,
/// `--vary` and the Python `Scenario.set`.
pub fn set_value(
    root: &mut toml::Value,
    key: &str,
    value: toml::Value,
) -> Result<(), ScenarioError> {
    let err = |field: &str, message: String| ScenarioError {
        file: "--set".into(),
        field: field.into(),
        message,
    };
    let key = key.trim();
    if key.is_empty() {
        return Err(err(key, "empty key".into()));
    }
    let parts: Vec<&str> = key.split('.').collect();
    let mut cur = root;
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let path = parts[..=i].join(".");
        cur = match cur {
            toml::Value::Table(t) => {
                if last {
                    t.insert((*part).to_string(), value);
                    return Ok(());
                }
                t.entry((*part).to_string())
                    .or_insert_with(|| toml::Value::Table(Default::default()))
            }
            toml::Value::Array(a) => {
                let idx: usize = part
                    .parse()
                    .map_err(|_| err(&path, format!("'{part}' is not an array index")))?;
                let len = a.len();
                let slot = a.get_mut(idx).ok_or_else(|| {
                    err(&path, format!("index {idx} out of range (array has {len})"))
                })?;
                if last {
                    *slot = value;
                    return Ok(());
                }
                slot
            }
            _ => return Err(err(&path, "cannot set a field inside a plain value".into())),
        };
    }
    Ok(())
}

/// The value an override `KEY=RAW` sets: RAW read as a TOML value when it
/// parses as one (`3`, `1e-4`, `true`, `{kind="red"}`), else the string
/// itself (`16Mbps`).
pub fn parse_override_value(raw: &str) -> toml::Value {
    let doc = format!("v = {raw}");
    match doc.parse::<toml::Table>() {
        Ok(mut t) => t.remove("v").unwrap_or(toml::Value::String(raw.into())),
        Err(_) => toml::Value::String(raw.to_string()),
    }
}

/// Parses scenario text into its TOML tree, untyped: what overrides apply
/// to and what [`Scenario::from_tree`] types; `file` names it in errors.
pub fn parse_tree(text: &str, file: &str) -> Result<toml::Value, ScenarioError> {
    text.parse::<toml::Table>()
        .map(toml::Value::Table)
        .map_err(|e| ScenarioError {
            file: file.into(),
            field: String::new(),
            message: format!("not valid TOML: {}", one_line(&e.to_string())),
        })
}

impl Scenario {
    /// Reads, overrides and validates a scenario file.
    pub fn load(path: &Path, overrides: &[String]) -> Result<Scenario, ScenarioError> {
        let root = Self::load_tree(path, overrides)?;
        Self::from_tree(root, &path.display().to_string())
    }

    /// Reads a scenario file into its TOML tree and applies the overrides,
    /// without typing or validating it.
    pub fn load_tree(path: &Path, overrides: &[String]) -> Result<toml::Value, ScenarioError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: file.clone(),
            field: String::new(),
            message: format!("cannot read: {e}"),
        })?;
        let mut root = parse_tree(&text, &file)?;
        for o in overrides {
            apply_override(&mut root, o)?;
        }
        Ok(root)
    }

    /// Parses scenario text; `file` names it in errors.
    pub fn from_toml_str(
        text: &str,
        file: &str,
        overrides: &[String],
    ) -> Result<Scenario, ScenarioError> {
        let mut root = parse_tree(text, file)?;
        for o in overrides {
            apply_override(&mut root, o)?;
        }
        Self::from_tree(root, file)
    }

    /// Types and validates a parsed TOML tree (overrides already applied);
    /// `file` names it in errors.
    pub fn from_tree(root: toml::Value, file: &str) -> Result<Scenario, ScenarioError> {
        let mut warnings = Vec::new();
        bare_rates(&root, "", &mut warnings);
        let mut sc: Scenario = parse_value(root).map_err(|mut fe| {
            fe.message = suggest_field(&fe.message);
            fe.in_file(file)
        })?;
        sc.validate().map_err(|e| e.in_file(file))?;
        for (i, f) in sc.flows.iter().enumerate() {
            if f.start.0 >= sc.duration.0 {
                warnings.push(format!(
                    "flows[{i}].start: {} s is at or after the end of the run: this background flow never sends",
                    secs(f.start.0)
                ));
            }
        }
        // A link slower to cross than the whole run (`delay = "1e9s"`) is
        // legal but delivers nothing: say so rather than let a table of
        // zeros pass for a result (issue 33).
        let links: Vec<(String, Duration)> = match &sc.topology {
            Topology::Dumbbell(d) => vec![("topology.bottleneck".into(), d.bottleneck.delay.0)],
            Topology::Satellite(t) => vec![
                ("topology.uplink".into(), t.uplink.delay.0),
                ("topology.downlink".into(), t.downlink.delay.0),
            ],
            Topology::Graph(g) => g
                .links
                .iter()
                .enumerate()
                .map(|(i, l)| (format!("topology.links[{i}]"), l.delay.0))
                .collect(),
            Topology::Constellation(_) => Vec::new(),
        };
        for (at, delay) in links {
            if delay >= sc.duration.0 {
                warnings.push(format!(
                    "{at}.delay: {} s is not shorter than the run ({} s): no packet can cross it",
                    secs(delay),
                    secs(sc.duration.0)
                ));
            }
        }
        sc.warnings = warnings;
        Ok(sc)
    }

    /// Checks what the types cannot: cross-references and ranges.
    pub fn validate(&self) -> Result<(), FieldError> {
        if self.duration.0 == Duration::ZERO {
            return Err(FieldError::new("duration", "must be greater than zero"));
        }
        if self.record.interval.0 == Duration::ZERO {
            return Err(FieldError::new(
                "record.interval",
                "must be greater than zero",
            ));
        }
        if self.flows.is_empty() {
            return Err(FieldError::new(
                "flows",
                "no flows: add at least one [[flows]] table",
            ));
        }
        let node_names: Vec<&str> = match &self.topology {
            Topology::Graph(g) => {
                let mut names: Vec<&str> = Vec::new();
                for (i, n) in g.nodes.iter().enumerate() {
                    if names.contains(&n.name.as_str()) {
                        return Err(FieldError::new(
                            format!("topology.nodes[{i}].name"),
                            format!("duplicate node name '{}'", n.name),
                        ));
                    }
                    names.push(&n.name);
                }
                for (i, l) in g.links.iter().enumerate() {
                    for (f, v) in [("from", &l.from), ("to", &l.to)] {
                        let field = || format!("topology.links[{i}].{f}");
                        match v {
                            None => {
                                return Err(FieldError::new(
                                    field(),
                                    "missing (graph links name both ends)",
                                ))
                            }
                            Some(n) if !names.contains(&n.as_str()) => {
                                return Err(FieldError::new(field(), format!("unknown node '{n}'")))
                            }
                            _ => {}
                        }
                    }
                    check_link(l, &format!("topology.links[{i}]"))?;
                }
                names
            }
            Topology::Dumbbell(d) => {
                check_link(&d.bottleneck, "topology.bottleneck")?;
                check_queue(&d.access.queue, "topology.access.queue")?;
                Vec::new()
            }
            Topology::Satellite(s) => {
                check_link(&s.uplink, "topology.uplink")?;
                check_link(&s.downlink, "topology.downlink")?;
                check_queue(&s.access.queue, "topology.access.queue")?;
                Vec::new()
            }
            Topology::Constellation(c) => {
                c.validate(&self.flows)?;
                Vec::new()
            }
        };
        let is_constellation = matches!(self.topology, Topology::Constellation(_));
        if let Some(i) = self.flows.iter().position(|f| f.group.is_some()) {
            if !is_constellation {
                return Err(FieldError::new(
                    format!("flows[{i}].group"),
                    "applies to constellation topologies only",
                ));
            }
        }
        if let Some(r) = &self.refwa {
            r.validate()?;
        }
        for (i, s) in self.snapshots.iter().enumerate() {
            s.validate(i, self.duration.0)?;
        }
        let is_graph = matches!(self.topology, Topology::Graph(_));
        for (i, f) in self.flows.iter().enumerate() {
            let at = |field: &str| format!("flows[{i}].{field}");
            // A background flow (measured = false) may be switched off this
            // way (a warning); a measured one would report 0 b/s.
            if f.start.0 >= self.duration.0 && f.measured {
                return Err(FieldError::new(
                    at("start"),
                    format!(
                        "{} s is at or after the end of the run (duration {} s): the flow would never send",
                        secs(f.start.0),
                        secs(self.duration.0)
                    ),
                ));
            }
            if is_graph {
                for (name, v) in [("src", &f.src), ("dst", &f.dst)] {
                    match v {
                        None => {
                            return Err(FieldError::new(at(name), "required on a graph topology"))
                        }
                        Some(n) if !node_names.contains(&n.as_str()) => {
                            return Err(FieldError::new(at(name), format!("unknown node '{n}'")))
                        }
                        _ => {}
                    }
                }
                if f.src == f.dst {
                    return Err(FieldError::new(at("dst"), "must differ from src"));
                }
            } else if f.src.is_some() || f.dst.is_some() {
                return Err(FieldError::new(
                    at("src"),
                    "src/dst apply to graph topologies; built-in ones give each flow its own pair",
                ));
            }
            f.validate().map_err(|e| e.under(&format!("flows[{i}]")))?;
        }
        Ok(())
    }
}

/// Checks a link's queues; `at` is the link's field path in errors. Public
/// so that a link described outside a scenario (the emulator's link file)
/// is held to the same rules.
pub fn check_link(l: &LinkSpec, at: &str) -> Result<(), FieldError> {
    check_queue(&l.queue, &format!("{at}.queue"))?;
    if let Some(q) = &l.reverse_queue {
        check_queue(q, &format!("{at}.reverse_queue"))?;
    }
    if let Some(s) = &l.shaper {
        if s.rate.0 == 0 {
            return Err(FieldError::new(
                format!("{at}.shaper.rate"),
                "must be above 0",
            ));
        }
        if s.burst.0 == 0 {
            return Err(FieldError::new(
                format!("{at}.shaper.burst"),
                "must be at least 1 byte",
            ));
        }
        if s.limit.0 == 0 {
            return Err(FieldError::new(
                format!("{at}.shaper.limit"),
                "must be at least 1 byte",
            ));
        }
    }
    Ok(())
}

pub(crate) fn check_queue(q: &QueueSpec, at: &str) -> Result<(), FieldError> {
    let sub = |f: &str| format!("{at}.{f}");
    match q {
        QueueSpec::DropTail { limit, limit_bytes } | QueueSpec::Priority { limit, limit_bytes } => {
            if limit.is_none() && limit_bytes.is_none() {
                return Err(FieldError::new(at, "give limit (packets) or limit_bytes"));
            }
            if *limit == Some(0) {
                return Err(FieldError::new(sub("limit"), "must be at least 1"));
            }
        }
        QueueSpec::Red(r) => {
            if r.limit == 0 {
                return Err(FieldError::new(sub("limit"), "must be at least 1"));
            }
            if !(r.max_p > 0.0 && r.max_p <= 1.0) {
                return Err(FieldError::new(
                    sub("max_p"),
                    format!("{} outside (0, 1]", r.max_p),
                ));
            }
            if r.weight > 1.0 {
                return Err(FieldError::new(
                    sub("weight"),
                    format!("{} above 1", r.weight),
                ));
            }
            if r.min_th < 0.0 || r.max_th < 0.0 || (r.max_th > 0.0 && r.max_th < r.min_th) {
                return Err(FieldError::new(
                    sub("max_th"),
                    "thresholds must satisfy 0 <= min_th <= max_th",
                ));
            }
        }
    }
    Ok(())
}

/// Rate fields written as a bare number (`rate = 10`): read as bits per
/// second, which is rarely what was meant.
fn bare_rates(v: &toml::Value, path: &str, out: &mut Vec<String>) {
    match v {
        toml::Value::Table(t) => {
            for (k, x) in t {
                let p = join_path(path, k);
                let bare = match x {
                    toml::Value::Integer(_) | toml::Value::Float(_) => true,
                    toml::Value::String(s) => s.trim().parse::<f64>().is_ok(),
                    _ => false,
                };
                if bare && matches!(k.as_str(), "rate" | "reverse_rate") {
                    out.push(format!(
                        "{p}: {x} has no unit, read as {x} b/s (write the unit: \"{x}bps\", or e.g. \"10Mbps\")",
                        x = x.to_string().trim_matches('"')
                    ));
                } else {
                    bare_rates(x, &p, out);
                }
            }
        }
        toml::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                bare_rates(x, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// Rewrites serde's "unknown field `x`, expected one of `a`, `b`, ..."
/// (a list that can run to dozens of names) as a suggestion of the closest
/// accepted name, or a pointer to the documentation.
fn suggest_field(msg: &str) -> String {
    let Some(rest) = msg.strip_prefix("unknown field `") else {
        return plain_types(msg);
    };
    let Some((key, expected)) = rest.split_once('`') else {
        return msg.to_string();
    };
    let names: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    let best = names
        .iter()
        .map(|n| (levenshtein(key, n), *n))
        .min_by_key(|&(d, _)| d);
    match best {
        Some((d, n)) if d <= (key.chars().count() / 3).max(2) => {
            format!("unknown field `{key}`; did you mean `{n}`?")
        }
        Some(_) => format!("unknown field `{key}` (docs/scenario.md lists the fields)"),
        None => msg.to_string(),
    }
}

/// Serde names the Rust type a value failed to fit (`expected u32`); a
/// user wrote a count or a number, so say which numbers fit (issue 33).
fn plain_types(msg: &str) -> String {
    const TYPES: [(&str, &str); 6] = [
        ("expected u8", "expected a whole number from 0 to 255"),
        ("expected u16", "expected a whole number from 0 to 65535"),
        (
            "expected u32",
            "expected a whole number from 0 to 4294967295",
        ),
        ("expected u64", "expected a whole number of 0 or more"),
        ("expected i64", "expected a whole number"),
        ("expected f64", "expected a number"),
    ];
    let mut m = msg.to_string();
    for (rust, plain) in TYPES {
        if let Some(i) = m.find(rust) {
            let end = i + rust.len();
            // Only the whole word: `u32` but not `u32s`.
            if !m[end..].starts_with(|c: char| c.is_ascii_alphanumeric()) {
                m.replace_range(i..end, plain);
            }
        }
    }
    m
}

/// Edit distance between `a` and `b` (insertions, deletions,
/// substitutions).
fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// Seconds as a short decimal: `120`, `0.25`.
fn secs(d: Duration) -> String {
    let s = format!("{:.6}", d.as_secs_f64());
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

// ---- kind-tagged tables ----
//
// serde's internally tagged enums buffer their content and lose the path of
// an error inside it ("topology: invalid rate" instead of
// "topology.bottleneck.rate: invalid rate"). These impls read `kind`
// themselves and deserialize the rest with its own path tracker. The inner
// path cannot ride in the error they return: a `Deserialize` impl returns
// its deserializer's error type, which is made from a message only. So the
// path goes beside it, in `NESTED`, and `parse_value` joins it to the path
// tracked outside. (Typed by any other route, e.g. `toml::Value::try_into`,
// these tables' errors still carry the message, only without the inner
// path.)

thread_local! {
    /// The last error a kind-tagged table's deserializer returned, with
    /// its path inside that table (joined with the paths inside the tables
    /// around it as it propagates out through their deserializers).
    static NESTED: RefCell<Option<FieldError>> = const { RefCell::new(None) };
}

/// Takes the recorded nested error out of `NESTED`, and returns its path
/// if it is the error whose message reads `msg` (the deserializer may
/// append context to the message; a record an impl swallowed is another
/// error's, and dropped).
fn take_nested(msg: &str) -> Option<String> {
    NESTED
        .with(|n| n.borrow_mut().take())
        .filter(|e| msg.starts_with(&e.message))
        .map(|e| e.field)
}

/// The error `msg` at `path` inside a kind-tagged table, as its
/// deserializer returns it; the path is recorded for `parse_value`.
fn nested_error<E: serde::de::Error>(path: &str, msg: &str) -> E {
    // An inner error that is itself nested: join the paths.
    let field = match take_nested(msg) {
        Some(inner) => join_path(path, &inner),
        None => path.to_string(),
    };
    NESTED.with(|n| *n.borrow_mut() = Some(FieldError::new(field, msg)));
    E::custom(msg)
}

/// Drops the " in `key`" context the toml crate appends: we name the field
/// ourselves.
fn strip_toml_context(m: &str) -> &str {
    let mut m = m.trim_end();
    while let Some(i) = m.rfind(" in `") {
        if m.ends_with('`') {
            m = &m[..i];
        } else {
            break;
        }
    }
    m
}

/// Types a TOML value as `T`: a whole scenario, or any part of the schema
/// (a flow's keys, a link, ...). An error names the field at fault by its
/// dotted path from `v` (empty for `v` itself), inside kind-tagged tables
/// too, and its message is one line without the toml crate's context.
pub fn parse_value<T: serde::de::DeserializeOwned>(v: toml::Value) -> Result<T, FieldError> {
    // A record left by a deserialization that did not come through here
    // belongs to no error of this one.
    NESTED.with(|n| n.borrow_mut().take());
    serde_path_to_error::deserialize(v).map_err(|e| {
        let field = e.path().to_string();
        let raw = e.into_inner().to_string();
        let field = match take_nested(&raw) {
            Some(inner) => join_path(&field, &inner),
            None => join_path(&field, ""),
        };
        FieldError::new(field, strip_toml_context(&one_line(&raw)))
    })
}

/// [`parse_value`] of a table.
pub fn parse_table<T: serde::de::DeserializeOwned>(t: toml::Table) -> Result<T, FieldError> {
    parse_value(toml::Value::Table(t))
}

fn nested<T: serde::de::DeserializeOwned, E: serde::de::Error>(t: toml::Table) -> Result<T, E> {
    serde_path_to_error::deserialize(toml::Value::Table(t)).map_err(|e| {
        let path = e.path().to_string();
        nested_error(&path, &e.into_inner().to_string())
    })
}

/// Takes `kind` out of a table, checking it is one of `kinds`.
fn take_kind<E: serde::de::Error>(t: &mut toml::Table, kinds: &[&str]) -> Result<String, E> {
    let expected = kinds
        .iter()
        .map(|k| format!("\"{k}\""))
        .collect::<Vec<_>>()
        .join(", ");
    match t.remove("kind") {
        None => Err(E::missing_field("kind")),
        Some(toml::Value::String(k)) if kinds.contains(&k.as_str()) => Ok(k),
        Some(v) => Err(nested_error(
            "kind",
            &format!("unknown kind {v} (expected one of {expected})"),
        )),
    }
}

impl<'de> Deserialize<'de> for Topology {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut t = toml::Table::deserialize(d)?;
        Ok(
            match take_kind::<D::Error>(
                &mut t,
                &["dumbbell", "satellite", "graph", "constellation"],
            )?
            .as_str()
            {
                "dumbbell" => Topology::Dumbbell(Box::new(nested(t)?)),
                "satellite" => Topology::Satellite(Box::new(nested(t)?)),
                "constellation" => Topology::Constellation(Box::new(nested(t)?)),
                _ => Topology::Graph(nested(t)?),
            },
        )
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Limits {
    #[serde(default)]
    limit: Option<u32>,
    #[serde(default)]
    limit_bytes: Option<Bytes>,
}

impl<'de> Deserialize<'de> for QueueSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut t = toml::Table::deserialize(d)?;
        Ok(
            match take_kind::<D::Error>(&mut t, &["droptail", "red", "priority"])?.as_str() {
                "droptail" => {
                    let l: Limits = nested(t)?;
                    QueueSpec::DropTail {
                        limit: l.limit,
                        limit_bytes: l.limit_bytes,
                    }
                }
                "priority" => {
                    let l: Limits = nested(t)?;
                    QueueSpec::Priority {
                        limit: l.limit,
                        limit_bytes: l.limit_bytes,
                    }
                }
                _ => QueueSpec::Red(nested(t)?),
            },
        )
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UniformFields {
    per: Prob,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BerFields {
    ber: Prob,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GilbertFields {
    p_gb: Prob,
    p_bg: Prob,
    #[serde(default)]
    loss_good: Prob,
    #[serde(default = "ErrorSpec::one")]
    loss_bad: Prob,
}

impl<'de> Deserialize<'de> for ErrorSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut t = toml::Table::deserialize(d)?;
        Ok(
            match take_kind::<D::Error>(&mut t, &["uniform", "ber", "gilbert"])?.as_str() {
                "uniform" => ErrorSpec::Uniform {
                    per: nested::<UniformFields, _>(t)?.per,
                },
                "ber" => ErrorSpec::Ber {
                    ber: nested::<BerFields, _>(t)?.ber,
                },
                _ => {
                    let g: GilbertFields = nested(t)?;
                    ErrorSpec::Gilbert {
                        p_gb: g.p_gb,
                        p_bg: g.p_bg,
                        loss_good: g.loss_good,
                        loss_bad: g.loss_bad,
                    }
                }
            },
        )
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EmptyFields {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FilesFields {
    size: Bytes,
    #[serde(default)]
    size_max: Option<Bytes>,
    #[serde(default)]
    mode: FileMode,
    #[serde(default)]
    count: Option<u32>,
    #[serde(default)]
    mean_interarrival: Option<Dur>,
    #[serde(default)]
    gap: Dur,
    #[serde(default)]
    gap_mean: Option<Dur>,
    #[serde(default)]
    new_connection: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OnOffFields {
    on_mean: Dur,
    off_mean: Dur,
    #[serde(default = "AppSpec::default_shape")]
    shape: f64,
}

impl<'de> Deserialize<'de> for AppSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut t = toml::Table::deserialize(d)?;
        Ok(
            match take_kind::<D::Error>(&mut t, &["bulk", "files", "onoff"])?.as_str() {
                "bulk" => {
                    let _: EmptyFields = nested(t)?;
                    AppSpec::Bulk
                }
                "files" => {
                    let f: FilesFields = nested(t)?;
                    AppSpec::Files {
                        size: f.size,
                        size_max: f.size_max,
                        mode: f.mode,
                        count: f.count,
                        mean_interarrival: f.mean_interarrival,
                        gap: f.gap,
                        gap_mean: f.gap_mean,
                        new_connection: f.new_connection,
                    }
                }
                _ => {
                    let o: OnOffFields = nested(t)?;
                    AppSpec::OnOff {
                        on_mean: o.on_mean,
                        off_mean: o.off_mean,
                        shape: o.shape,
                    }
                }
            },
        )
    }
}
