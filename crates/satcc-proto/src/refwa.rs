//! REFWA (paper 003): a satellite router's window controller.
//!
//! Pure computation: the driver (the simulator's link hook) reports every
//! data packet and ACK of the outgoing link it guards, with the TTL it
//! arrived with and the link's current queue, and writes the returned window
//! into the ACK. Nothing here owns a timer: recomputation happens lazily on
//! the first packet at or after the next epoch.
//!
//! STUB: the API is fixed; the implementation arrives with issue #6.

use crate::time::{Duration, Instant};

/// A flow's 5-tuple.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    /// Source address (of the data direction).
    pub src: u32,
    /// Destination address (of the data direction).
    pub dst: u32,
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// IP protocol number.
    pub proto: u8,
}

/// Controller parameters (paper 003 §III, eq. 2; defaults from §V).
#[derive(Clone, Debug)]
pub struct RefwaConfig {
    /// φ, the gain on the bandwidth-delay error (default 1.5).
    pub phi: f64,
    /// ψ, the gain on the free buffer (default 0.5).
    pub psi: f64,
    /// α, the RTT-fairness exponent (default 1).
    pub alpha: f64,
    /// Delay of one inter-satellite link (default 20 ms).
    pub isl_delay: Duration,
    /// Bandwidth Bw of the guarded link, bits per second.
    pub bandwidth_bps: u64,
    /// Buffer B of the guarded link, packets.
    pub buffer_pkts: u64,
    /// Packet size used to turn Bw·RTT into packets, bytes (default 1000).
    pub packet_bytes: u32,
    /// TTL every packet starts with at its source.
    pub initial_ttl: u8,
    /// Relative RTT-estimate error σ: each flow's estimate is multiplied by
    /// a factor drawn uniformly from [1−σ, 1+σ] (paper 003 Fig. 7). 0 = exact.
    pub rtt_error: f64,
    /// Seed for the RTT-error draws.
    pub seed: u64,
}

impl Default for RefwaConfig {
    fn default() -> Self {
        RefwaConfig {
            phi: 1.5,
            psi: 0.5,
            alpha: 1.0,
            isl_delay: Duration::from_millis(20),
            bandwidth_bps: 10_000_000,
            buffer_pkts: 100,
            packet_bytes: 1000,
            initial_ttl: 64,
            rtt_error: 0.0,
            seed: 0,
        }
    }
}

/// Counters and the current control state.
#[derive(Clone, Debug, Default)]
pub struct RefwaStats {
    /// Recomputations of Υ and F_k so far.
    pub recomputations: u64,
    /// Arithmetic operations of the last recomputation (paper 003 App. II).
    pub ops_last: u64,
    /// Largest arithmetic-operation count of any recomputation.
    pub ops_max: u64,
    /// Current Υ(n), packets.
    pub upsilon: f64,
    /// Current RTT_avg.
    pub rtt_avg: Duration,
    /// Active flows.
    pub active_flows: usize,
    /// Active hop-count groups.
    pub groups: usize,
    /// ACKs whose window was lowered.
    pub acks_rewritten: u64,
}

/// A REFWA controller for one outgoing satellite link.
#[derive(Debug)]
pub struct Refwa {
    cfg: RefwaConfig,
    stats: RefwaStats,
}

impl Refwa {
    /// A controller with no flows yet.
    pub fn new(cfg: RefwaConfig, _now: Instant) -> Self {
        Refwa {
            cfg,
            stats: RefwaStats::default(),
        }
    }

    /// A data packet of `key` is about to enter the guarded link with `ttl`
    /// left; `queue_pkts` packets wait in its queue.
    pub fn on_data(&mut self, _now: Instant, _key: FlowKey, _ttl: u8, _queue_pkts: u64) {}

    /// An ACK of the flow `key` (the 5-tuple of its *data* direction) passes
    /// this satellite with `ttl` left and advertised window `rwnd` packets;
    /// returns the window to write, never above `rwnd`.
    pub fn on_ack(
        &mut self,
        _now: Instant,
        _key: FlowKey,
        _ttl: u8,
        rwnd: u32,
        _queue_pkts: u64,
    ) -> u32 {
        rwnd
    }

    /// Configuration.
    pub fn config(&self) -> &RefwaConfig {
        &self.cfg
    }

    /// Counters and state.
    pub fn stats(&self) -> RefwaStats {
        self.stats.clone()
    }
}
