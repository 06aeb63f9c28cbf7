//! The TFRC family's options: `tfrc` (RFC 5348, feedback once per RTT)
//! and `ccid3` (RFC 4342, with paper 001's dynamic feedback as an option).

use satcc_proto::Duration;
use serde::de;
use serde::Deserialize;

use super::{keys_of, FamilyOptions, Protocol};
use crate::scenario::{nested, nested_error, AppSpec, Dur, FieldError, Rate};

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
    /// The RTT filter constant q of RFC 5348 §4.3 step 2, written
    /// `rtt_filter_q = 0.9` (the default), in thousandths (see
    /// [`satcc_proto::tfrc::SenderConfig::rtt_q_milli`]); profile
    /// `rfc5348` only (the ns2 profile's filter is ns-2's `df_`).
    pub rtt_q_milli: u32,
    /// What X_recv covers after empty feedback-timer expiries, written
    /// `x_recv_interval = "since_feedback" | "rtt"` (see
    /// [`satcc_proto::tfrc::ReceiverConfig::x_recv_interval`]).
    pub x_recv_interval: satcc_proto::tfrc::XRecvInterval,
    /// How the sender recognises a data-limited interval, written
    /// `data_limited = "two_timestamps" | "stretches"` (see
    /// [`satcc_proto::tfrc::SenderConfig::data_limited_check`]).
    pub data_limited: satcc_proto::tfrc::DataLimitedCheck,
    /// X_target of the first loss interval, written `first_loss_target =
    /// "max_x_recv" | "recent"` (see
    /// [`satcc_proto::tfrc::ReceiverConfig::first_loss_target`]).
    pub first_loss_target: satcc_proto::tfrc::FirstLossTarget,
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
            oscillation_damping: damping_default(),
            damping_max_gain: satcc_proto::tfrc::DEFAULT_DAMPING_MAX_GAIN,
            rtt_q_milli: satcc_proto::tfrc::DEFAULT_RTT_Q_MILLI,
            x_recv_interval: Default::default(),
            data_limited: Default::default(),
            first_loss_target: Default::default(),
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

/// On by default: RFC 5348 §4.5 says damping "SHOULD be implemented".
/// STFRC takes the same default (see `super::saratoga`).
pub(super) fn damping_default() -> bool {
    true
}

/// `x_recv_interval` as written.
#[derive(Clone, Copy, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
enum XRecvIntervalKind {
    SinceFeedback,
    Rtt,
}

/// `data_limited` as written.
#[derive(Clone, Copy, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
enum DataLimitedKind {
    TwoTimestamps,
    Stretches,
}

/// `first_loss_target` as written.
#[derive(Clone, Copy, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
enum FirstLossTargetKind {
    MaxXRecv,
    Recent,
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
    #[serde(default = "damping_default")]
    oscillation_damping: bool,
    #[serde(default)]
    damping_max_gain: Option<f64>,
    #[serde(default)]
    rtt_filter_q: Option<f64>,
    #[serde(default)]
    x_recv_interval: Option<XRecvIntervalKind>,
    #[serde(default)]
    data_limited: Option<DataLimitedKind>,
    #[serde(default)]
    first_loss_target: Option<FirstLossTargetKind>,
    /// Default: off with profile "rfc5348", on with "ns2".
    #[serde(default)]
    history_discounting: Option<bool>,
    #[serde(default)]
    profile: TfrcProfileSpec,
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
        let rtt_q_milli = match f.rtt_filter_q {
            None => satcc_proto::tfrc::DEFAULT_RTT_Q_MILLI,
            Some(q) if (0.0..=1.0).contains(&q) => {
                if f.profile == TfrcProfileSpec::Ns2 {
                    return Err(FieldError::new(
                        "rtt_filter_q",
                        "applies to profile \"rfc5348\" only (ns-2's filter is its df_ 0.95)",
                    ));
                }
                (q * 1000.0).round() as u32
            }
            Some(q) => {
                return Err(FieldError::new(
                    "rtt_filter_q",
                    format!("{q} is not between 0 and 1 (RFC 5348 §4.3: q = 0.9)"),
                ))
            }
        };
        Ok(TfrcOptions {
            feedback,
            oscillation_damping: f.oscillation_damping,
            damping_max_gain,
            rtt_q_milli,
            x_recv_interval: match f.x_recv_interval {
                Some(XRecvIntervalKind::Rtt) => satcc_proto::tfrc::XRecvInterval::Rtt,
                Some(XRecvIntervalKind::SinceFeedback) | None => {
                    satcc_proto::tfrc::XRecvInterval::SinceFeedback
                }
            },
            data_limited: match f.data_limited {
                Some(DataLimitedKind::Stretches) => satcc_proto::tfrc::DataLimitedCheck::Stretches,
                Some(DataLimitedKind::TwoTimestamps) => {
                    satcc_proto::tfrc::DataLimitedCheck::TwoTimestamps
                }
                None => satcc_proto::tfrc::DataLimitedCheck::default(),
            },
            first_loss_target: match f.first_loss_target {
                Some(FirstLossTargetKind::Recent) => satcc_proto::tfrc::FirstLossTarget::Recent,
                Some(FirstLossTargetKind::MaxXRecv) | None => {
                    satcc_proto::tfrc::FirstLossTarget::MaxXRecv
                }
            },
            history_discounting: f
                .history_discounting
                .unwrap_or(f.profile == TfrcProfileSpec::Ns2),
            profile: f.profile,
        })
    }
}

impl FamilyOptions for TfrcOptions {
    // IPv4 + UDP + the TFRC/DCCP header.
    const HEADER_BYTES: u32 = 40;

    fn keys(p: Protocol) -> Vec<&'static str> {
        let mut keys = keys_of::<TfrcFields>().to_vec();
        if p == Protocol::Tfrc {
            // RFC 5348's feedback is once per RTT; the policy is CCID3's.
            keys.retain(|k| !matches!(*k, "feedback" | "rtt_ref"));
        }
        keys
    }

    fn refusal(key: &str, p: Protocol) -> Option<&'static str> {
        match key {
            "rate" => Some("TFRC and CCID3 choose their own rate"),
            "feedback" if p == Protocol::Tfrc => Some(
                "applies to protocol \"ccid3\" only (tfrc is RFC 5348's once-per-RTT feedback)",
            ),
            _ => None,
        }
    }

    fn requires_rate(_p: Protocol) -> bool {
        false
    }

    fn read<E: de::Error>(_p: Protocol, t: toml::Table) -> Result<Self, E> {
        nested::<TfrcFields, _>(t)?
            .try_into()
            .map_err(|e: FieldError| nested_error(&e.field, &e.message))
    }

    fn fits(&self, p: Protocol) -> bool {
        p == Protocol::Ccid3 || self.feedback == FeedbackSpec::Standard
    }

    fn rate(&self) -> Option<Rate> {
        None
    }

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
