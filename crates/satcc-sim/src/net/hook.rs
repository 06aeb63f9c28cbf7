//! Per-link router hooks: controllers that see every packet entering a
//! link's queue and may rewrite it (REFWA lowers the advertised window of
//! ACKs) or discard it.

use satcc_proto::Instant;

use crate::net::packet::Packet;

/// What a hook sees of the link it is attached to.
#[derive(Clone, Copy, Debug)]
pub struct LinkView {
    /// Link rate, bits per second.
    pub rate_bps: u64,
    /// Packets waiting in the queue.
    pub queue_pkts: usize,
    /// Bytes waiting in the queue.
    pub queue_bytes: u64,
    /// Queue limit in packets, if it has one.
    pub limit_pkts: Option<u64>,
    /// Packets waiting in the queue of the opposite direction between the
    /// same two nodes, if there is one (a controller guarding that direction
    /// sees the ACKs of its flows here, paper 003 §III-C).
    pub reverse_queue_pkts: Option<usize>,
}

/// What the hook decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookVerdict {
    /// Let the (possibly rewritten) packet through to the queue.
    Pass,
    /// Discard it (counted as a hook drop).
    Drop,
}

/// A per-link controller.
pub trait LinkHook: std::fmt::Debug {
    /// Called for every packet arriving at the link, before the queue.
    fn on_packet(&mut self, now: Instant, pkt: &mut Packet, link: &LinkView) -> HookVerdict;
}
