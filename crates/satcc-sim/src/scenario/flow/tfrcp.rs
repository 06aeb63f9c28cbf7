//! TFRCP's options (paper 004): the recomputation strategy and pacing.

use satcc_proto::Duration;
use serde::de;
use serde::Deserialize;

use super::{keys_of, FamilyOptions, Protocol};
use crate::scenario::{nested, nested_error, AppSpec, Dur, FieldError, Rate};

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

impl FamilyOptions for TfrcpOptions {
    // IPv4 + UDP + TFRCP's header.
    const HEADER_BYTES: u32 = 40;

    fn keys(_p: Protocol) -> Vec<&'static str> {
        keys_of::<TfrcpFields>().to_vec()
    }

    fn refusal(key: &str, _p: Protocol) -> Option<&'static str> {
        (key == "rate").then_some("TFRCP chooses its own rate")
    }

    fn requires_rate(_p: Protocol) -> bool {
        false
    }

    fn read<E: de::Error>(_p: Protocol, t: toml::Table) -> Result<Self, E> {
        nested::<TfrcpFields, _>(t)?
            .try_into()
            .map_err(|e: FieldError| nested_error(&e.field, &e.message))
    }

    fn fits(&self, _p: Protocol) -> bool {
        true
    }

    fn rate(&self) -> Option<Rate> {
        None
    }

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
