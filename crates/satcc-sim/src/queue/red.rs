//! RED as ns-2 2.35's `Queue/RED` (STUB: API only; implementation pending).

use satcc_proto::rng::Rng;
use satcc_proto::Instant;

use crate::scenario::RedSpec;

/// What RED decides for an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedVerdict {
    /// Queue it.
    Enqueue,
    /// Random early drop (avg between the thresholds).
    EarlyDrop,
    /// Forced drop (avg above max_th, or above 2*max_th in gentle mode, or
    /// the physical limit reached).
    ForcedDrop,
}

/// RED state of one queue.
#[derive(Clone, Debug)]
pub struct Red {
    limit: u32,
}

impl Red {
    /// RED for a link of `link_rate_bps`, resolving ns-2's automatic values.
    pub fn new(spec: &RedSpec, _link_rate_bps: u64) -> Red {
        Red { limit: spec.limit }
    }
    /// Decides for a packet arriving at a queue holding `qlen_pkts` packets.
    pub fn on_arrival(&mut self, _now: Instant, qlen_pkts: usize, _rng: &mut Rng) -> RedVerdict {
        if qlen_pkts >= self.limit as usize {
            RedVerdict::ForcedDrop
        } else {
            RedVerdict::Enqueue
        }
    }
    /// The queue has just become empty (an idle period starts).
    pub fn on_empty(&mut self, _now: Instant) {}
    /// Current average queue estimate, packets.
    pub fn avg(&self) -> f64 {
        0.0
    }
}
