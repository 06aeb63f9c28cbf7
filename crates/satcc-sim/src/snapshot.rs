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

use satcc_proto::{Duration, Instant};
use serde::Deserialize;

use crate::scenario::Dur;
use crate::topology::LinkDef;
use crate::SimError;

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
    pub(crate) fn validate(&self, i: usize, duration: Duration) -> Result<(), (String, String)> {
        let at = |f: &str| format!("snapshots[{i}].{f}");
        if self.at.0 >= duration {
            return Err((at("at"), "must be before the end of the run".into()));
        }
        if self.down.is_empty() && self.up.is_empty() {
            return Err((
                format!("snapshots[{i}]"),
                "changes nothing: give down and/or up".into(),
            ));
        }
        for (k, n) in self.up.iter().enumerate() {
            if self.down.contains(n) {
                return Err((at(&format!("up[{k}]")), format!("'{n}' is also in down")));
            }
        }
        Ok(())
    }
}

/// A snapshot with its links resolved to indices (both directions).
#[derive(Clone, Debug)]
pub(crate) struct Snapshot {
    pub at: Instant,
    pub down: Vec<usize>,
    pub up: Vec<usize>,
}

/// Both directions of the duplex link that has a direction called `name`
/// (either its own name or `NAME.rev`), in link order.
fn duplex_of(links: &[LinkDef], name: &str) -> Vec<usize> {
    let mut ids: Vec<usize> = links
        .iter()
        .enumerate()
        .filter(|(_, l)| l.name == name)
        .flat_map(|(i, l)| [i, l.reverse as usize])
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Resolves link names; an unknown name is an error naming its field.
pub(crate) fn resolve(
    specs: &[SnapshotSpec],
    links: &[LinkDef],
) -> Result<Vec<Snapshot>, SimError> {
    let mut out = Vec::with_capacity(specs.len());
    for (i, s) in specs.iter().enumerate() {
        let find = |names: &[String], what: &str| -> Result<Vec<usize>, SimError> {
            let mut v = Vec::new();
            for (k, n) in names.iter().enumerate() {
                let ids = duplex_of(links, n);
                if ids.is_empty() {
                    return Err(SimError {
                        field: format!("snapshots[{i}].{what}[{k}]"),
                        message: format!("unknown link '{n}'"),
                    });
                }
                v.extend(ids);
            }
            Ok(v)
        };
        let down = find(&s.down, "down")?;
        let up = find(&s.up, "up")?;
        out.push(Snapshot {
            at: Instant::ZERO + s.at.0,
            down,
            up,
        });
    }
    Ok(out)
}
