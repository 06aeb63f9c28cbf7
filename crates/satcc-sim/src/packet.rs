//! Packets as the simulator carries them: typed protocol messages, never
//! byte buffers (the pcap writer synthesises headers when asked).

use satcc_proto::tcp::{TcpAck, TcpData};
use satcc_proto::tfrc::{TfrcData, TfrcFeedback};
use satcc_proto::tfrcp::{TfrcpAck, TfrcpData};

/// What a packet carries.
#[derive(Clone, Copy, Debug)]
pub enum Payload {
    /// TCP data segment, sender to receiver.
    TcpData(TcpData),
    /// TCP acknowledgement, receiver to sender.
    TcpAck(TcpAck),
    /// TFRC/CCID3 data packet.
    TfrcData(TfrcData),
    /// TFRC/CCID3 feedback packet.
    TfrcFeedback(TfrcFeedback),
    /// TFRCP data packet.
    TfrcpData(TfrcpData),
    /// TFRCP acknowledgement with its 8-bit vector.
    TfrcpAck(TfrcpAck),
    /// UDP datagram with a sequence number.
    Udp {
        /// Datagram sequence number.
        seq: u64,
    },
}

impl Payload {
    /// True for packets travelling from a flow's receiver back to its sender.
    pub fn is_reverse(&self) -> bool {
        matches!(
            self,
            Payload::TcpAck(_) | Payload::TfrcFeedback(_) | Payload::TfrcpAck(_)
        )
    }
}

/// A packet in the network.
#[derive(Clone, Copy, Debug)]
pub struct Packet {
    /// Unique id within the run.
    pub uid: u64,
    /// Flow instance it belongs to.
    pub flow: u32,
    /// Source node.
    pub src: u32,
    /// Destination node.
    pub dst: u32,
    /// Bytes on the wire, headers included.
    pub size: u32,
    /// Hops left; decremented by every router, dropped at zero.
    pub ttl: u8,
    /// Low priority (TCP-Peach dummies and their ACKs): a priority queue
    /// serves it only when no high-priority packet waits and drops it first.
    pub low_priority: bool,
    /// Connection generation within its flow (wrapping): a flow that
    /// opens a fresh connection per file ignores packets that belong to an
    /// earlier one.
    pub conn: u16,
    /// Contents.
    pub payload: Payload,
}

/// Initial TTL of every packet (RFC 1700's recommended default).
pub const INITIAL_TTL: u8 = 64;

/// Why a packet was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// The queue was full (or a low-priority packet was pushed out).
    QueueFull,
    /// RED dropped it early.
    RedEarly,
    /// The link's error model corrupted it.
    LinkError,
    /// Its TTL ran out.
    Ttl,
    /// No route to its destination.
    NoRoute,
    /// A router hook discarded it.
    Hook,
    /// It was queued on a link that a topology snapshot took down.
    LinkDown,
}
