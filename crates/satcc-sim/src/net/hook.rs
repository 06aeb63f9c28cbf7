//! Per-link router hooks: controllers that see every packet entering a
//! link's queue and may rewrite it (REFWA lowers the advertised window of
//! ACKs) or discard it.

use satcc_proto::{Instant, Message};

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

/// A hook that puts every packet through the wire codec and back
/// (`satcc_proto::wire::encode` then `decode`), so a run shows whether the
/// codecs carry everything the protocols use: a field the codec loses or
/// changes changes the run's results. Packets without a wire format (TCP)
/// pass untouched; one that does not encode or decode is dropped (a hook
/// drop, visible in the summary).
#[derive(Debug, Default)]
pub struct WireRoundTrip {
    buf: Vec<u8>,
}

impl LinkHook for WireRoundTrip {
    fn on_packet(&mut self, now: Instant, pkt: &mut Packet, _link: &LinkView) -> HookVerdict {
        use satcc_proto::wire::{decode, encode, encoded_len, WireProtocol};
        let Some(proto) = WireProtocol::of(&pkt.payload) else {
            return HookVerdict::Pass;
        };
        let Ok(n) = encoded_len(&pkt.payload) else {
            return HookVerdict::Drop;
        };
        if self.buf.len() < n {
            self.buf.resize(n, 0);
        }
        let Ok(n) = encode(&pkt.payload, &mut self.buf) else {
            return HookVerdict::Drop;
        };
        match decode(proto, &self.buf[..n], now) {
            Ok(m) => {
                // A STATUS whose hole list is out of line (its flow's
                // `StatusHoleStore`) encodes as a reader without the store
                // sees it; the decoded frame must say exactly that, and
                // the message keeps its reference to the whole list, which
                // these bytes cannot carry (the list's own encoding is the
                // codec's tests').
                if let (Message::SaraStatus(orig), Message::SaraStatus(dec)) = (&pkt.payload, &m) {
                    if orig.stored_holes().is_some() {
                        return if *dec == orig.without_store() {
                            HookVerdict::Pass
                        } else {
                            HookVerdict::Drop
                        };
                    }
                }
                pkt.payload = m;
                HookVerdict::Pass
            }
            Err(_) => HookVerdict::Drop,
        }
    }
}
