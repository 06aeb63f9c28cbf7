//! One-way TCP: a bulk sender with pluggable window algorithms and a
//! receiver that generates cumulative ACKs, SACK blocks and an advertised
//! window.
//!
//! Sequence numbers count *segments*, not bytes, as ns-2's one-way TCP
//! agents do: every segment but a file's last carries `mss` payload bytes.
//! That keeps the SACK scoreboard a dense ring indexed by segment number, so
//! per-ACK work does not grow with the window. The segments, [`TcpData`]
//! and [`TcpAck`], are defined in [`crate::messages::tcp`].

mod bbr;
#[cfg(test)]
mod bbr_tests;
mod cubic_v21;
#[cfg(test)]
mod cubic_v21_tests;
mod endpoint;
mod growth;
#[cfg(test)]
mod growth_tests;
mod hybla_linux;
mod hystart;
#[cfg(test)]
mod hystart_tests;
mod ns2linux;
#[cfg(test)]
mod ns2linux_tests;
mod peach;
#[cfg(test)]
mod peach_tests;
mod rack;
#[cfg(test)]
mod rack_tests;
mod receiver;
mod rtt;
mod scoreboard;
mod sender;
#[cfg(test)]
mod tests;

pub use crate::messages::tcp::{SackBlock, TcpAck, TcpData, MAX_SACK_BLOCKS};
pub use bbr::{BbrConfig, BbrMode};
pub use growth::{CubicConfig, CubicVariant, Growth, HyblaConfig, HyblaVariant};
pub use hystart::{HystartConfig, HystartPpConfig, SlowStart};
pub use peach::PeachConfig;
pub use rack::LossDetection;
pub use receiver::{ReceiverConfig, ReceiverStats, TcpReceiver};
pub use rtt::RttEstimator;
pub use sender::{
    RtoSsthresh, RttTiming, SackRecovery, SenderConfig, SenderEvent, SenderStats, TcpSender,
    Variant,
};

/// RFC 3390 §1 initial window in segments for `mss` payload bytes:
/// min(4*MSS, max(2*MSS, 4380 bytes)) / MSS.
pub fn rfc3390_initial_window(mss: u32) -> u32 {
    (4380 / mss.max(1)).clamp(2, 4)
}
