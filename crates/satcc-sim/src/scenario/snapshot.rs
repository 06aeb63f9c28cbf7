//! Topology snapshots: paper 003 §IV models satellite motion as a "dynamic
//! virtual topology", a series of time-discrete snapshots over which the
//! topology is constant, with link-state changes only at the snapshot times.
//! A `[[snapshots]]` entry takes links down and brings others up at `at`;
//! the simulator then recomputes every route over the links that are up. A
//! handover is a pair: the old up-link down, a new one (an `extra_links`
//! entry, taken down at `at = 0` until needed) up.
//!
//! Packets already on the wire of a link that goes down still arrive (they
//! left before the change); packets waiting in its queue are dropped and
//! counted (reason `LinkDown`), so packet conservation holds.

use satcc_proto::Duration;
use serde::Deserialize;

use super::{Dur, FieldError};

/// One `[[snapshots]]` entry.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotSpec {
    /// When the change happens.
    pub at: Dur,
    /// Links that go down, both directions (a link named by its forward
    /// name or its `.rev`).
    #[serde(default)]
    pub down: Vec<String>,
    /// Links that come (back) up, both directions.
    #[serde(default)]
    pub up: Vec<String>,
}

impl SnapshotSpec {
    /// Checks entry `i` against the run's `duration`.
    pub(crate) fn validate(&self, i: usize, duration: Duration) -> Result<(), FieldError> {
        let at = |f: &str| format!("snapshots[{i}].{f}");
        if self.at.0 >= duration {
            return Err(FieldError::new(
                at("at"),
                "must be before the end of the run",
            ));
        }
        if self.down.is_empty() && self.up.is_empty() {
            return Err(FieldError::new(
                format!("snapshots[{i}]"),
                "changes nothing: give down and/or up",
            ));
        }
        for (k, n) in self.up.iter().enumerate() {
            if self.down.contains(n) {
                return Err(FieldError::new(
                    at(&format!("up[{k}]")),
                    format!("'{n}' is also in down"),
                ));
            }
        }
        Ok(())
    }
}
