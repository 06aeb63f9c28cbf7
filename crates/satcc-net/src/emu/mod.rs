//! The userspace link emulator: a UDP relay that imposes a satellite
//! link's rate, propagation delay, queue and error model on the datagrams
//! it forwards, separately in each direction.
//!
//! A link is described exactly as a scenario link (`docs/scenario.md`):
//! the same TOML keys (`rate`, `reverse_rate`, `delay`, `queue`,
//! `reverse_queue`, `error`, `reverse_error`), parsed into the simulator's
//! own [`LinkSpec`], and emulated with the simulator's own [`Queue`] and
//! [`ErrorModel`]. The emulator adds one optional table, `[schedule]`, for
//! links whose rate and delay change over time (LEO passes, traces), and
//! `satcc shell` another, `[refwa]` ([`RefwaLink`]), for paper 003's
//! router on the link.
//!
//! Each direction is a [`LinkDir`]: a pure state machine driven by the
//! caller's clock (packets arrive, are queued, serialised at the link rate
//! with the error model drawn at the start of transmission as the
//! simulator does, then delivered one propagation delay after their last
//! bit). [`Relay`] runs two of them over sockets in wall-clock time.
//!
//! [`Queue`]: satcc_sim::net::queue::Queue
//! [`ErrorModel`]: satcc_sim::net::loss::ErrorModel

mod link;
mod relay;

pub use link::{DirStats, LinkDir};
pub use relay::{CaptureError, Relay, RelayConfig, CLIENT_IDLE};

use satcc_proto::Duration;
use satcc_sim::scenario::{
    check_link, parse_table, parse_value, Dur, ErrorSpec, FieldError, LinkSpec, QueueSpec, Rate,
    ScenarioError, ShaperSpec,
};
use serde::Deserialize;

/// Why a link description (a link file, a preset, a trace) cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    /// No preset has that name.
    #[error("unknown preset '{name}' (expected one of {expected})")]
    UnknownPreset {
        /// The name asked for.
        name: String,
        /// The presets, comma-separated.
        expected: String,
    },
    /// The link file is not TOML.
    #[error("{file}: not valid TOML: {message}")]
    Toml {
        /// The file.
        file: String,
        /// The parser's message.
        message: String,
    },
    /// A field of the link file (or of the schedule a trace makes) is
    /// wrong: `FILE: FIELD: PROBLEM`.
    #[error(transparent)]
    Field(#[from] ScenarioError),
    /// A line of a trace file is wrong.
    #[error("{file}: line {line}: {message}")]
    Line {
        /// The trace file.
        file: String,
        /// Line number, from 1.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// A CSV trace without a single trace line.
    #[error("{file}: no trace lines (expected time_s,rate,delay)")]
    NoTraceLines {
        /// The trace file.
        file: String,
    },
    /// A mahimahi trace without a single delivery opportunity.
    #[error("{file}: empty mahimahi trace")]
    EmptyMahimahi {
        /// The trace file.
        file: String,
    },
}

/// Bytes a datagram occupies on the emulated link beyond its UDP payload:
/// the IPv4 (20) and UDP (8) headers. The link rate is a rate of IP
/// packets, as in the simulator.
pub const DEFAULT_OVERHEAD: u32 = 28;

/// One direction of a link as the emulator runs it.
#[derive(Clone, Debug, PartialEq)]
pub struct Direction {
    /// Bits per second.
    pub rate_bps: u64,
    /// One-way propagation delay.
    pub delay: Duration,
    /// The queue in front of the link.
    pub queue: QueueSpec,
    /// The error model, if any.
    pub error: Option<ErrorSpec>,
    /// A token-bucket shaper in front of the link (`tbf`), if any; its
    /// `limit` is then the queue.
    pub shaper: Option<ShaperSpec>,
}

/// A change of the link at a time of the schedule. Fields left out keep
/// their previous value.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// When, from the start of the emulation (or of each repetition).
    pub at: Dur,
    /// Forward rate from then on.
    #[serde(default)]
    pub rate: Option<Rate>,
    /// Reverse rate from then on.
    #[serde(default)]
    pub reverse_rate: Option<Rate>,
    /// One-way delay (both directions) from then on.
    #[serde(default)]
    pub delay: Option<Dur>,
}

/// Rate and delay changes over time.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schedule {
    /// Repeat the steps with this period (a LEO constellation's handover
    /// interval); none: the last step holds.
    #[serde(default)]
    pub repeat: Option<Dur>,
    /// The steps, in increasing `at`.
    #[serde(default)]
    pub steps: Vec<Step>,
}

/// What the schedule says at a time: forward rate, reverse rate, delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Forward rate, b/s.
    pub rate_bps: u64,
    /// Reverse rate, b/s.
    pub reverse_rate_bps: u64,
    /// One-way delay.
    pub delay: Duration,
}

impl Schedule {
    fn validate(&self) -> Result<(), FieldError> {
        if let Some(r) = self.repeat {
            if r.0 == Duration::ZERO {
                return Err(FieldError::new(
                    "schedule.repeat",
                    "must be greater than zero",
                ));
            }
            if let Some(last) = self.steps.last() {
                if last.at.0 >= r.0 {
                    return Err(FieldError::new(
                        format!("schedule.steps[{}].at", self.steps.len() - 1),
                        format!(
                            "{:.3} s is not before schedule.repeat ({:.3} s)",
                            last.at.0.as_secs_f64(),
                            r.0.as_secs_f64()
                        ),
                    ));
                }
            }
        }
        for (i, w) in self.steps.windows(2).enumerate() {
            if w[1].at.0 < w[0].at.0 {
                return Err(FieldError::new(
                    format!("schedule.steps[{}].at", i + 1),
                    "earlier than the step before it (steps must be in time order)",
                ));
            }
        }
        Ok(())
    }

    /// Position of `t` within the schedule's period.
    fn phase(&self, t: Duration) -> Duration {
        match self.repeat {
            Some(r) if r.0 > Duration::ZERO => Duration(t.0 % r.0 .0),
            _ => t,
        }
    }

    /// The parameters at time `t` since the start, from `base` (the link's
    /// own values, which hold before the first step of a schedule that
    /// does not repeat). A repeating schedule starts each period from the
    /// last step of the period before, so it is continuous.
    pub fn params_at(&self, base: Params, t: Duration) -> Params {
        let ph = self.phase(t);
        let wrapped = self.repeat.is_some() && t != ph;
        let mut p = base;
        let apply = |p: &mut Params, s: &Step| {
            if let Some(r) = s.rate {
                p.rate_bps = r.0;
            }
            if let Some(r) = s.reverse_rate {
                p.reverse_rate_bps = r.0;
            }
            if let Some(d) = s.delay {
                p.delay = d.0;
            }
        };
        if wrapped {
            for s in &self.steps {
                apply(&mut p, s);
            }
        }
        for s in self.steps.iter().take_while(|s| s.at.0 <= ph) {
            apply(&mut p, s);
        }
        p
    }

    /// Time from `t` until the next step (none if nothing changes again).
    pub fn next_change(&self, t: Duration) -> Option<Duration> {
        let ph = self.phase(t);
        if let Some(s) = self.steps.iter().find(|s| s.at.0 > ph) {
            return Some(s.at.0 - ph);
        }
        let r = self.repeat?.0;
        let first = self.steps.first()?.at.0;
        Some(r - ph + first)
    }
}

/// Which direction of the link carries the data REFWA shares out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RefwaDirection {
    /// From the shell's side to the peer's.
    Forward,
    /// From the peer's side to the shell's.
    Reverse,
}

impl RefwaDirection {
    /// The name, as in the link file and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            RefwaDirection::Forward => "forward",
            RefwaDirection::Reverse => "reverse",
        }
    }
}

/// The optional `[refwa]` table of a link file: paper 003's REFWA
/// controller as the router of the link (`satcc shell`, which reads the
/// TCP segments crossing it), the same as `--refwa DIR
/// [--refwa-quantum Q]`; the command line wins over the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefwaLink {
    /// The direction the data flows in; its rate and queue limit are the
    /// Bw and B of the paper's eq. 2.
    pub direction: RefwaDirection,
    /// The RTT grouping quantum (the paper's ISL delay); none: 10 ms.
    #[serde(default)]
    pub quantum: Option<Dur>,
}

/// A whole emulated link: the scenario link and its schedule.
#[derive(Clone, Debug)]
pub struct LinkConfig {
    /// The link, as in a scenario file.
    pub spec: LinkSpec,
    /// Changes over time.
    pub schedule: Schedule,
    /// REFWA on the link (`[refwa]`), which only `satcc shell` runs.
    pub refwa: Option<RefwaLink>,
}

/// The built-in links: name, one-line description, TOML (the syntax of a
/// `--link` file, so `satcc emulate --preset NAME --print-link` is a
/// starting point for one's own).
pub const PRESETS: &[(&str, &str, &str)] = &[
    (
        "geo",
        "GEO bent pipe: 10 Mb/s each way, 250 ms one-way, DropTail of one bandwidth-delay product",
        r#"# GEO: 10 Mb/s both ways, 250 ms one-way (500 ms RTT), no errors.
# Queue: one bandwidth-delay product (10 Mb/s x 500 ms = 625 KB).
rate = "10Mbps"
delay = "250ms"
queue = { kind = "droptail", limit_bytes = "625KB" }
"#,
    ),
    (
        "dmc",
        "paper 000's DMC satellite: 100 Mb/s down, 38.4 kb/s up, packet error rate 1e-4",
        r#"# Paper 000's DMC (Disaster Monitoring Constellation) satellite link as
# the Saratoga work describes it: a fast downlink (forward, 100 Mb/s) and a
# 38.4 kb/s uplink (reverse) for requests and status, errors 1e-4 (taken as
# a packet error rate on the downlink). Low Earth orbit at about 686 km:
# we take 10 ms one-way (slant range up to ~2,500 km plus ground
# processing); the paper's runs are insensitive to it next to the 38.4 kb/s
# return path.
rate = "100Mbps"
reverse_rate = "38.4kbps"
delay = "10ms"
queue = { kind = "droptail", limit = 1000 }
reverse_queue = { kind = "droptail", limit = 50 }
error = { kind = "uniform", per = 1e-4 }
"#,
    ),
    (
        "ipstar",
        "paper 001's IPSTAR link (scenarios/ccid3-ipstar.toml): 1 Mb/s down, 256 kb/s up, 600 ms one-way, PER 0.33 %",
        r#"# Paper 001 (CCID3 over IPSTAR), the end-to-end path of
# scenarios/ccid3-ipstar.toml collapsed into one link: 1 Mb/s downlink
# (forward) with packet error rate 0.33 % (the middle of the measured
# 0.24-0.42 %), 256 kb/s return, 600 ms one-way (1.2 s RTT as measured),
# DropTail 150 packets.
rate = "1Mbps"
reverse_rate = "256kbps"
delay = "600ms"
queue = { kind = "droptail", limit = 150 }
error = { kind = "uniform", per = 3.3e-3 }
"#,
    ),
    (
        "leo",
        "LEO pass: 20 Mb/s (5 Mb/s up), delay 8-18 ms following the slant range, a handover every 15 s",
        r#"# A LEO satellite (550 km) overhead for 15 s at a time, then a handover
# to the next (the schedule repeats every 15 s). One-way delay follows
# the slant range: 18 ms at the pass's edges, 8 ms overhead. In the second
# after each handover the link runs at a quarter of its rate (beam
# re-acquisition); forward 20 Mb/s, reverse 5 Mb/s otherwise.
rate = "20Mbps"
reverse_rate = "5Mbps"
delay = "18ms"
queue = { kind = "droptail", limit = 100 }

[schedule]
repeat = "15s"
steps = [
  { at = "0s", rate = "5Mbps", reverse_rate = "1.25Mbps", delay = "18ms" },
  { at = "1s", rate = "20Mbps", reverse_rate = "5Mbps", delay = "15ms" },
  { at = "3s", delay = "12ms" },
  { at = "5s", delay = "10ms" },
  { at = "6.5s", delay = "8ms" },
  { at = "8.5s", delay = "10ms" },
  { at = "10s", delay = "12ms" },
  { at = "12s", delay = "15ms" },
  { at = "14s", delay = "18ms" },
]
"#,
    ),
];

impl LinkConfig {
    /// A preset by name (see [`PRESETS`]).
    pub fn preset(name: &str) -> Result<LinkConfig, LinkError> {
        match PRESETS.iter().find(|p| p.0 == name) {
            Some(p) => LinkConfig::from_toml_str(p.2, &format!("preset {name}")),
            None => Err(LinkError::UnknownPreset {
                name: name.to_string(),
                expected: PRESETS.iter().map(|p| p.0).collect::<Vec<_>>().join(", "),
            }),
        }
    }

    /// The TOML of a preset.
    pub fn preset_toml(name: &str) -> Option<&'static str> {
        PRESETS.iter().find(|p| p.0 == name).map(|p| p.2)
    }

    /// Parses a link file: the keys of a scenario link, at top level or
    /// under `[link]`, and an optional `[schedule]`. Errors read
    /// `FILE: FIELD: PROBLEM`.
    pub fn from_toml_str(text: &str, file: &str) -> Result<LinkConfig, LinkError> {
        let mut t: toml::Table = text.parse().map_err(|e: toml::de::Error| LinkError::Toml {
            file: file.to_string(),
            message: e.message().to_string(),
        })?;
        let schedule = match t.remove("schedule") {
            None => Schedule::default(),
            Some(v) => parse_value::<Schedule>(v).map_err(|e| e.under("schedule").in_file(file))?,
        };
        let refwa = match t.remove("refwa") {
            None => None,
            Some(v) => {
                let r = parse_value::<RefwaLink>(v).map_err(|e| e.under("refwa").in_file(file))?;
                if r.quantum.is_some_and(|q| q.0 == Duration::ZERO) {
                    return Err(
                        FieldError::new("refwa.quantum", "must be greater than zero")
                            .in_file(file)
                            .into(),
                    );
                }
                Some(r)
            }
        };
        let (prefix, link) = match t.remove("link") {
            Some(toml::Value::Table(l)) if t.is_empty() => ("link", l),
            Some(_) => {
                return Err(FieldError::new(
                    "link",
                    "give the link's keys either under [link] or at top level, not both",
                )
                .in_file(file)
                .into())
            }
            None => ("", t),
        };
        let spec: LinkSpec = parse_table(link).map_err(|e| e.under(prefix).in_file(file))?;
        check_link(&spec, prefix).map_err(|e| {
            // check_link joins its own paths, with a leading '.' under an
            // empty prefix.
            let field = e.field.trim_start_matches('.').to_string();
            FieldError::new(field, e.message).in_file(file)
        })?;
        schedule.validate().map_err(|e| e.in_file(file))?;
        for (f, s) in [("from", &spec.from), ("to", &spec.to)] {
            if s.is_some() {
                return Err(FieldError::new(
                    f,
                    "a link file describes one link; `from` and `to` belong to graph scenarios",
                )
                .under(prefix)
                .in_file(file)
                .into());
            }
        }
        Ok(LinkConfig {
            spec,
            schedule,
            refwa,
        })
    }

    /// The base parameters (before any schedule step).
    pub fn base(&self) -> Params {
        Params {
            rate_bps: self.spec.rate.0,
            reverse_rate_bps: self.spec.reverse_rate.unwrap_or(self.spec.rate).0,
            delay: self.spec.delay.0,
        }
    }

    /// The forward direction (client to server).
    pub fn forward(&self) -> Direction {
        Direction {
            rate_bps: self.spec.rate.0,
            delay: self.spec.delay.0,
            // As in the simulator: a shaper's `limit` is the byte FIFO in
            // front of its bucket.
            queue: match &self.spec.shaper {
                Some(s) => QueueSpec::DropTail {
                    limit: None,
                    limit_bytes: Some(s.limit),
                },
                None => self.spec.queue.clone(),
            },
            error: self.spec.error.clone(),
            shaper: self.spec.shaper.clone(),
        }
    }

    /// The reverse direction (server to client).
    pub fn reverse(&self) -> Direction {
        Direction {
            rate_bps: self.spec.reverse_rate.unwrap_or(self.spec.rate).0,
            delay: self.spec.delay.0,
            queue: self
                .spec
                .reverse_queue
                .clone()
                .unwrap_or_else(|| self.spec.queue.clone()),
            error: self.spec.reverse_error.clone(),
            shaper: None,
        }
    }

    /// Replaces the schedule with a trace: CSV lines `time_s,rate,delay`
    /// (a rate such as `10Mbps` or bits per second, a delay such as
    /// `250ms` or seconds), an optional fourth column for the reverse
    /// rate; a header line and `#` comments are skipped; empty fields keep
    /// the previous value. `repeat` loops the trace.
    pub fn set_trace_csv(
        &mut self,
        text: &str,
        file: &str,
        repeat: Option<Duration>,
    ) -> Result<(), LinkError> {
        use satcc_sim::scenario::units::{parse_duration, parse_rate_bps};
        let mut steps = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let cols: Vec<&str> = line.split(',').map(str::trim).collect();
            if steps.is_empty() && cols[0].parse::<f64>().is_err() && i == 0 {
                continue; // header
            }
            let at = |s: &str| -> Result<Duration, String> {
                let v: f64 = s
                    .parse()
                    .map_err(|_| format!("time '{s}' is not a number of seconds"))?;
                if !(v >= 0.0 && v.is_finite()) {
                    return Err(format!("time '{s}' must be >= 0"));
                }
                Ok(Duration::from_secs_f64(v))
            };
            let opt_rate = |s: Option<&&str>| -> Result<Option<Rate>, String> {
                match s {
                    Some(s) if !s.is_empty() => parse_rate_bps(s).map(|r| Some(Rate(r))),
                    _ => Ok(None),
                }
            };
            let step = (|| -> Result<Step, String> {
                Ok(Step {
                    at: Dur(at(cols[0])?),
                    rate: opt_rate(cols.get(1))?,
                    delay: match cols.get(2) {
                        Some(s) if !s.is_empty() => Some(Dur(parse_duration(s)?)),
                        _ => None,
                    },
                    reverse_rate: opt_rate(cols.get(3))?,
                })
            })()
            .map_err(|message| LinkError::Line {
                file: file.to_string(),
                line: i + 1,
                message,
            })?;
            steps.push(step);
        }
        if steps.is_empty() {
            return Err(LinkError::NoTraceLines {
                file: file.to_string(),
            });
        }
        let s = Schedule {
            repeat: repeat.map(Dur),
            steps,
        };
        s.validate().map_err(|e| e.in_file(file))?;
        self.schedule = s;
        Ok(())
    }

    /// Replaces the forward rate schedule with a mahimahi packet-delivery
    /// trace (one line per delivery opportunity of an MTU-sized packet,
    /// the millisecond it occurs; the trace loops). Approximation: the
    /// opportunities are counted in `bin` windows and each window becomes
    /// a rate step (opportunities x 1500 B x 8 / bin); delivery within a
    /// window is then evenly paced rather than at the trace's exact
    /// milliseconds. A window without opportunities gets 1 b/s (the link
    /// holds its packets until the next window).
    pub fn set_mahimahi(&mut self, text: &str, file: &str, bin: Duration) -> Result<(), LinkError> {
        let mut ms = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let l = line.trim();
            if l.is_empty() {
                continue;
            }
            let line_err = |message: String| LinkError::Line {
                file: file.to_string(),
                line: i + 1,
                message,
            };
            let v: u64 = l
                .parse()
                .map_err(|_| line_err(format!("'{l}' is not a whole number of milliseconds")))?;
            if ms.last().is_some_and(|&p| v < p) {
                return Err(line_err(format!("{v} ms is earlier than the line before")));
            }
            ms.push(v);
        }
        let Some(&last) = ms.last() else {
            return Err(LinkError::EmptyMahimahi {
                file: file.to_string(),
            });
        };
        let bin_ms = (bin.as_nanos() / 1_000_000).max(1);
        let period_ms = last.max(1);
        let nbins = period_ms.div_ceil(bin_ms);
        let mut counts = vec![0u64; nbins as usize];
        for &t in &ms {
            let b = ((t.min(period_ms - 1)) / bin_ms) as usize;
            let last_bin = counts.len() - 1;
            counts[b.min(last_bin)] += 1;
        }
        let steps = counts
            .iter()
            .enumerate()
            .map(|(b, &c)| Step {
                at: Dur(Duration::from_millis(b as u64 * bin_ms)),
                rate: Some(Rate((c * 1500 * 8 * 1000 / bin_ms).max(1))),
                reverse_rate: None,
                delay: None,
            })
            .collect();
        self.schedule = Schedule {
            repeat: Some(Dur(Duration::from_millis(period_ms))),
            steps,
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_parse() {
        for (name, _, _) in PRESETS {
            LinkConfig::preset(name).unwrap();
        }
        let g = LinkConfig::preset("geo").unwrap();
        assert_eq!(g.forward().rate_bps, 10_000_000);
        assert_eq!(g.reverse().delay, Duration::from_millis(250));
        let d = LinkConfig::preset("dmc").unwrap();
        assert_eq!(d.reverse().rate_bps, 38_400);
        assert!(LinkConfig::preset("meo")
            .unwrap_err()
            .to_string()
            .contains("geo, dmc, ipstar, leo"));
    }

    /// The `[refwa]` table: read with its defaults, next to `[link]` too,
    /// and its mistakes named by field.
    #[test]
    fn refwa_table_parses_and_names_its_errors() {
        let base =
            "rate = \"1Mbps\"\ndelay = \"1ms\"\nqueue = { kind = \"droptail\", limit = 20 }\n";
        let l = LinkConfig::from_toml_str(base, "l.toml").unwrap();
        assert_eq!(l.refwa, None);
        let l = LinkConfig::from_toml_str(
            &format!("{base}[refwa]\ndirection = \"reverse\"\n"),
            "l.toml",
        )
        .unwrap();
        assert_eq!(
            l.refwa,
            Some(RefwaLink {
                direction: RefwaDirection::Reverse,
                quantum: None
            })
        );
        let l = LinkConfig::from_toml_str(
            &format!("[link]\n{base}[refwa]\ndirection = \"forward\"\nquantum = \"5ms\"\n"),
            "l.toml",
        )
        .unwrap();
        assert_eq!(
            l.refwa.unwrap().quantum.unwrap().0,
            Duration::from_millis(5)
        );
        for (extra, needles) in [
            ("direction = \"up\"", &["refwa.direction", "up"][..]),
            (
                "direction = \"forward\"\nquantum = \"0ms\"",
                &["refwa.quantum", "greater than zero"],
            ),
            (
                "direction = \"forward\"\nqantum = \"5ms\"",
                &["refwa", "qantum"],
            ),
            ("quantum = \"5ms\"", &["refwa", "direction"]),
        ] {
            let e = LinkConfig::from_toml_str(&format!("{base}[refwa]\n{extra}\n"), "l.toml")
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("l.toml: "), "{e}");
            for n in needles {
                assert!(e.contains(n), "{extra}: {e}");
            }
        }
    }

    #[test]
    fn errors_name_the_field() {
        let e = LinkConfig::from_toml_str("rate = \"fast\"\ndelay = \"1ms\"", "l.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("l.toml: rate") && e.contains("fast"), "{e}");
        let e = LinkConfig::from_toml_str(
            "rate = \"1Mbps\"\ndelay = \"1ms\"\nqueue = { kind = \"droptail\", limit = 0 }",
            "l.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("queue.limit") && e.contains("at least 1"), "{e}");
        let e = LinkConfig::from_toml_str(
            "rate = \"1Mbps\"\ndelay = \"1ms\"\nerror = { kind = \"uniform\", per = 2 }",
            "l.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("error") && e.contains("per"), "{e}");
        let e =
            LinkConfig::from_toml_str("rate = \"1Mbps\"\ndelay = \"1ms\"\ncolour = 1", "l.toml")
                .unwrap_err()
                .to_string();
        assert!(e.contains("colour"), "{e}");
        let e = LinkConfig::from_toml_str(
            "rate = \"1Mbps\"\ndelay = \"1ms\"\n[schedule]\nrepeat = \"1s\"\nsteps = [{ at = \"2s\" }]",
            "l.toml",
        )
        .unwrap_err().to_string();
        assert!(e.contains("schedule.steps[0].at"), "{e}");
    }

    #[test]
    fn schedule_repeats_continuously() {
        let l = LinkConfig::preset("leo").unwrap();
        let b = l.base();
        let p = |s: f64| l.schedule.params_at(b, Duration::from_secs_f64(s));
        assert_eq!(p(0.5).rate_bps, 5_000_000);
        assert_eq!(p(2.0).rate_bps, 20_000_000);
        assert_eq!(p(7.0).delay, Duration::from_millis(8));
        assert_eq!(p(15.5).rate_bps, 5_000_000);
        assert_eq!(p(16.5).delay, Duration::from_millis(15));
        assert_eq!(
            l.schedule.next_change(Duration::from_secs_f64(14.5)),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            l.schedule.next_change(Duration::from_secs_f64(0.25)),
            Some(Duration::from_millis(750))
        );
    }

    #[test]
    fn traces() {
        let mut l = LinkConfig::preset("geo").unwrap();
        l.set_trace_csv(
            "time_s,rate,delay\n0,10Mbps,250ms\n5,2Mbps,\n10,,300ms\n",
            "t.csv",
            None,
        )
        .unwrap();
        let b = l.base();
        let at = |s| l.schedule.params_at(b, Duration::from_secs(s));
        assert_eq!(at(6).rate_bps, 2_000_000);
        assert_eq!(at(6).delay, Duration::from_millis(250));
        assert_eq!(at(11).delay, Duration::from_millis(300));
        let e = l
            .set_trace_csv("0,10Mbps,250ms\n1,abc,1ms\n", "t.csv", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("abc"), "{e}");
        // mahimahi: 10 opportunities in each of two 100 ms bins.
        let lines: String = (0..20).map(|i| format!("{}\n", i * 10 + 5)).collect();
        l.set_mahimahi(&lines, "m.trace", Duration::from_millis(100))
            .unwrap();
        let at = |ms| l.schedule.params_at(b, Duration::from_millis(ms));
        assert_eq!(at(50).rate_bps, 10 * 1500 * 8 * 10);
    }
}
