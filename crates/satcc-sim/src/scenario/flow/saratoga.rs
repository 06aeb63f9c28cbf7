//! The Saratoga family's options: `saratoga` (draft-wood-tsvwg-saratoga-22
//! at a fixed rate, as deployed) and `stfrc` (paper 000's sender-based
//! TFRC).

use satcc_proto::Duration;
use serde::de;
use serde::Deserialize;

use super::{keys_of, tfrc, FamilyOptions, Protocol};
use crate::scenario::{nested, nested_error, AppSpec, Dur, FieldError, FileMode, Rate};

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
    /// `saratoga`: STATUS requests per smoothed RTT (0: off; STFRC's is in
    /// [`StfrcOptions::status_per_rtt`]).
    pub status_per_rtt: Option<f64>,
    /// `saratoga`: the least DATA frames between two requests of the
    /// per-RTT rule (0: no floor).
    pub status_min_frames: Option<u32>,
    /// The reverse path's rate, if the sender is told it: STATUS requests
    /// are spaced to use at most `status_share` of it.
    pub reverse_rate: Option<Rate>,
    /// The share of `reverse_rate` STATUS frames may use.
    pub status_share: Option<f64>,
    /// The most holes one STATUS lists.
    pub status_max_holes: Option<u32>,
    /// Request a STATUS at the end of each retransmission round even while
    /// new data remains to be sent.
    pub round_end_status: Option<bool>,
    /// A STATUS request due during a retransmission round goes on the
    /// round's last frame.
    pub defer_status_to_round_end: Option<bool>,
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
    /// A STATUS request unanswered for this many RTTs counts as lost;
    /// until then at most `ceil(status_per_rtt)` are outstanding (0: off).
    pub request_timeout_rtts: f64,
    /// How X_recv is estimated: `"predicted"` (paper 000 §3-c(I)) or
    /// `"delivery"` (from the STATUS frames' arrivals).
    pub receive_rate: satcc_proto::stfrc::ReceiveRate,
    /// Which losses enter p: `"all"` (RFC 5348) or `"spike"` (only those
    /// while the RTT says the path queues).
    pub loss_filter: satcc_proto::stfrc::LossFilter,
    /// Leave the STATUS hole lists' serialization out of the equation's R.
    pub exclude_hole_delay: bool,
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
    status_min_frames: Option<u32>,
    #[serde(default)]
    reverse_rate: Option<Rate>,
    #[serde(default)]
    status_share: Option<f64>,
    #[serde(default)]
    status_max_holes: Option<u32>,
    #[serde(default)]
    round_end_status: Option<bool>,
    #[serde(default)]
    defer_status_to_round_end: Option<bool>,
    #[serde(default)]
    history_discounting: Option<bool>,
    #[serde(default)]
    oscillation_damping: Option<bool>,
    #[serde(default)]
    request_timeout_rtts: Option<f64>,
    #[serde(default)]
    receive_rate: Option<String>,
    #[serde(default)]
    loss_filter: Option<String>,
    #[serde(default)]
    exclude_hole_delay: Option<bool>,
}

/// Keys of [`SaratogaFields`] that only `stfrc` takes.
const STFRC_KEYS: [&str; 7] = [
    "symmetry_ratio",
    "history_discounting",
    "oscillation_damping",
    "request_timeout_rtts",
    "receive_rate",
    "loss_filter",
    "exclude_hole_delay",
];

impl SaratogaFields {
    fn into_options(self, protocol: Protocol) -> Result<SaratogaOptions, FieldError> {
        use satcc_proto::stfrc::ReceiveRate;
        let receive_rate = match self.receive_rate.as_deref() {
            None => satcc_proto::stfrc::StfrcConfig::default().receive_rate,
            Some("predicted") => ReceiveRate::Predicted,
            Some("delivery") => ReceiveRate::Delivery,
            Some(v) => {
                return Err(FieldError::new(
                    "receive_rate",
                    format!("{v:?}: expected \"predicted\" or \"delivery\""),
                ))
            }
        };
        let loss_filter = match self.loss_filter.as_deref() {
            None => satcc_proto::stfrc::StfrcConfig::default().loss_filter,
            Some("all") => satcc_proto::stfrc::LossFilter::All,
            Some("spike") => satcc_proto::stfrc::LossFilter::SPIKE,
            Some(v) => {
                return Err(FieldError::new(
                    "loss_filter",
                    format!("{v:?}: expected \"all\" or \"spike\""),
                ))
            }
        };
        let stfrc = (protocol == Protocol::Stfrc).then(|| {
            let d = satcc_proto::stfrc::StfrcConfig::default();
            StfrcOptions {
                symmetry_ratio: self.symmetry_ratio.unwrap_or(d.symmetry_ratio),
                status_per_rtt: self.status_per_rtt.unwrap_or(d.status_per_rtt),
                history_discounting: self.history_discounting.unwrap_or(d.history_discounting),
                // Our RFC 5348 TFRC's default, so that STFRC and TFRC on the
                // same scenario differ only where the paper makes them.
                oscillation_damping: self.oscillation_damping.unwrap_or(tfrc::damping_default()),
                request_timeout_rtts: self.request_timeout_rtts.unwrap_or(d.request_timeout_rtts),
                receive_rate,
                loss_filter,
                exclude_hole_delay: self.exclude_hole_delay.unwrap_or(d.exclude_hole_delay),
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
            status_per_rtt: (protocol == Protocol::Saratoga)
                .then_some(self.status_per_rtt)
                .flatten(),
            status_min_frames: self.status_min_frames,
            reverse_rate: self.reverse_rate,
            status_share: self.status_share,
            status_max_holes: self.status_max_holes,
            round_end_status: self.round_end_status,
            defer_status_to_round_end: self.defer_status_to_round_end,
        })
    }
}

impl FamilyOptions for SaratogaOptions {
    // IPv4 + UDP: a Saratoga frame's own header counts as UDP payload,
    // since its size varies from frame to frame.
    const HEADER_BYTES: u32 = 28;

    fn keys(p: Protocol) -> Vec<&'static str> {
        let all = keys_of::<SaratogaFields>().iter().copied();
        if p == Protocol::Stfrc {
            all.filter(|k| *k != "rate").collect()
        } else {
            all.filter(|k| !STFRC_KEYS.contains(k)).collect()
        }
    }

    fn refusal(key: &str, p: Protocol) -> Option<&'static str> {
        (key == "rate" && p == Protocol::Stfrc).then_some("STFRC chooses its own rate")
    }

    fn requires_rate(p: Protocol) -> bool {
        p == Protocol::Saratoga
    }

    fn read<E: de::Error>(p: Protocol, t: toml::Table) -> Result<Self, E> {
        nested::<SaratogaFields, _>(t)?
            .into_options(p)
            .map_err(|e| nested_error(&e.field, &e.message))
    }

    fn fits(&self, p: Protocol) -> bool {
        if p == Protocol::Stfrc {
            self.rate.is_none() && self.stfrc.is_some()
        } else {
            self.rate.is_some() && self.stfrc.is_none()
        }
    }

    fn rate(&self) -> Option<Rate> {
        self.rate
    }

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
        if let Some(k) = self.status_per_rtt {
            if !(k.is_finite() && k >= 0.0) {
                return Err(FieldError::new(
                    "status_per_rtt",
                    format!("must be a number >= 0, got {k}"),
                ));
            }
        }
        if self.reverse_rate == Some(Rate(0)) {
            return Err(FieldError::new("reverse_rate", "must be greater than zero"));
        }
        if let Some(x) = self.status_share {
            if !(x.is_finite() && x > 0.0 && x <= 1.0) {
                return Err(FieldError::new(
                    "status_share",
                    format!("must be in (0, 1], got {x}"),
                ));
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
