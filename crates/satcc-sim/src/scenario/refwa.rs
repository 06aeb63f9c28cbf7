//! The `[refwa]` table: REFWA (paper 003) router controllers on a
//! constellation's ISLs.

use satcc_proto::refwa::RefwaConfig;
use serde::Deserialize;

use super::{Dur, FieldError};

/// The `[refwa]` table.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefwaSpec {
    /// Attach the controllers (default true; `--set refwa.enabled=false`
    /// runs the same scenario with plain TCP).
    #[serde(default = "RefwaSpec::yes")]
    pub enabled: bool,
    /// φ, gain on the bandwidth-delay error (default 1.5, §V-A).
    #[serde(default = "RefwaSpec::default_phi")]
    pub phi: f64,
    /// ψ, gain on the free buffer (default 0.5, §V-A).
    #[serde(default = "RefwaSpec::default_psi")]
    pub psi: f64,
    /// α, the RTT skew factor (default 1, §V-C).
    #[serde(default = "RefwaSpec::default_alpha")]
    pub alpha: f64,
    /// σ: each RTT estimate is scaled by U[1−σ, 1+σ] (default 0, §V-D).
    #[serde(default)]
    pub rtt_error: f64,
    /// Guarded links by name, in their data direction (default on a
    /// constellation: every core ISL, `isl.bK` and `isl.cJ`, in the data
    /// direction — a flow's private ISLs carry that flow alone, so their
    /// feedback would never be the tightest; required on other topologies).
    #[serde(default)]
    pub links: Option<Vec<String>>,
    /// ISL delay of the RTT estimate, eq. 1 (default: the constellation's
    /// `isl_delay`, else the guarded link's delay).
    #[serde(default)]
    pub isl_delay: Option<Dur>,
    /// Packet size that turns Bw·RTT into packets (default: the
    /// constellation's `packet_bytes`, else 1000).
    #[serde(default)]
    pub packet_bytes: Option<u32>,
    /// Gain of the EWMA that tracks RTT_avg across epochs (paper 003
    /// §III-A.2 footnote 1 names an EWMA without its gain; default 0.5,
    /// 1 = the last epoch's mean alone).
    #[serde(default = "RefwaSpec::default_gain")]
    pub rtt_avg_gain: f64,
    /// Activity threshold δ (default: RTT_avg, §III-A.2).
    #[serde(default)]
    pub delta: Option<Dur>,
}

impl RefwaSpec {
    fn yes() -> bool {
        true
    }
    // Paper 003's defaults live with the controller (satcc_proto::refwa).
    fn default_phi() -> f64 {
        RefwaConfig::default().phi
    }
    fn default_psi() -> f64 {
        RefwaConfig::default().psi
    }
    fn default_alpha() -> f64 {
        RefwaConfig::default().alpha
    }
    fn default_gain() -> f64 {
        RefwaConfig::default().rtt_avg_gain
    }

    /// Range checks (field paths under `refwa`).
    pub(crate) fn validate(&self) -> Result<(), FieldError> {
        for (name, v) in [("phi", self.phi), ("psi", self.psi), ("alpha", self.alpha)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(FieldError::new(
                    format!("refwa.{name}"),
                    format!("{v} must be a number >= 0"),
                ));
            }
        }
        if !(self.rtt_error.is_finite() && (0.0..1.0).contains(&self.rtt_error)) {
            return Err(FieldError::new(
                "refwa.rtt_error",
                format!("{} outside [0, 1)", self.rtt_error),
            ));
        }
        if !(self.rtt_avg_gain > 0.0 && self.rtt_avg_gain <= 1.0) {
            return Err(FieldError::new(
                "refwa.rtt_avg_gain",
                format!("{} outside (0, 1]", self.rtt_avg_gain),
            ));
        }
        if self
            .delta
            .is_some_and(|d| d.0 == satcc_proto::Duration::ZERO)
        {
            return Err(FieldError::new("refwa.delta", "must be greater than zero"));
        }
        if self.packet_bytes == Some(0) {
            return Err(FieldError::new("refwa.packet_bytes", "must be at least 1"));
        }
        if self.links.as_ref().is_some_and(|l| l.is_empty()) {
            return Err(FieldError::new(
                "refwa.links",
                "empty: name at least one link",
            ));
        }
        Ok(())
    }
}
