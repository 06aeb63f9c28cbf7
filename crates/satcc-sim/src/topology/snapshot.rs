//! Topology snapshots resolved against the built network: the links each
//! `[[snapshots]]` entry takes down or brings up, as indices (both
//! directions of each duplex link).

use satcc_proto::Instant;

use crate::error::SimError;
use crate::scenario::snapshot::SnapshotSpec;
use crate::topology::LinkDef;

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
