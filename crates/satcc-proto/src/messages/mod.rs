//! The typed messages every [`Message`](crate::Message) variant wraps,
//! one file per protocol family.
//!
//! They sit below [`crate::endpoint`] and below the protocol modules so
//! that imports point one way: `endpoint.rs` needs the message types to
//! define [`Message`](crate::Message), and every protocol folder needs
//! `endpoint.rs` to implement [`Endpoint`](crate::Endpoint); were the types
//! defined in the protocol folders, `endpoint.rs` and the protocols would
//! import each other. This module imports nothing but [`crate::time`].
//!
//! Each protocol module re-exports its messages under their old paths
//! (`crate::tcp::TcpData`, `crate::tfrc::TfrcFeedback`,
//! `crate::saratoga::msg::SaraStatus`, `crate::saratoga::wire::DescriptorSize`,
//! ...); conversions that need a codec (Saratoga's `to_repr`/`from_repr`,
//! the CCID3 and compact encoders) stay with the codec.

pub mod saratoga;
pub mod tcp;
pub mod tfrc;
pub mod tfrcp;
