//! Packets as the simulator carries them: typed protocol messages, never
//! byte buffers (the pcap writer synthesises headers when asked).

pub use satcc_proto::endpoint::Message;

/// A packet in the network.
///
/// `repr(C, align(64))`: 128 bytes, two whole cache lines, the header
/// (the 32 bytes every hop reads) first, so that a router's read of the
/// header is one line and the header, the message's tag and a TCP data
/// segment's fields share it. At 112 bytes unaligned, half the slots
/// of the simulator's packet store spanned three lines and one header in
/// four two (docs/validation.md, "Tenth sitting, packets": 1.5 % fewer
/// first-level data misses on `scenarios/bench.toml`).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
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
    /// Contents: the endpoint's typed message.
    pub payload: Message,
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
