//! Real Saratoga file transfers over UDP: a PUT client ([`put`]), a GET
//! client ([`get`]) and a responder serving a directory
//! ([`SaratogaServer`]), driving the sans-IO endpoints of
//! `satcc_proto::saratoga` with file bytes.
//!
//! The sans-IO messages carry offsets and lengths, never bytes, and name
//! files by a `u64` key. This driver works on the wire frames
//! ([`wire::Repr`]) instead: it puts the real file name in REQUEST and
//! METADATA, reads the file at a DATA frame's offset into its payload when
//! sending, and writes a received payload at its offset into a temporary
//! file *before* handing the frame to the receiver endpoint (so that what
//! the endpoint counts as received is on disk).
//!
//! Integrity: a receiver writes to `.NAME.partial` beside the final name,
//! and renames it only when every byte has arrived and the whole file
//! matches the METADATA checksum (computed by the sender over the file).
//! The temporary file is removed on every failure path (a guard's `Drop`),
//! so no file ever appears half-written under its final name. A checksum
//! mismatch is reported to the sender with a STATUS error
//! ([`wire::error_code::CANT_RECEIVE`]) before the STATUS that would have
//! told it the transfer succeeded.
//!
//! Safety: names are single path components ([`check_name`]); the server
//! limits sizes, sessions per peer IP and sessions in all; frames of an
//! unknown session or from another address are dropped and counted
//! ([`ServerCounters`]); STATUS frames with impossible offsets are
//! rejected by the sans-IO sender; memory per session is bounded by the
//! endpoints' range-set caps. Saratoga has no authentication: anyone who
//! can reach the port can write files into the directory (within the
//! limits), so bind the server to a trusted interface.

pub mod beacon;
mod client;
mod files;
mod frames;
mod server;
mod session;
mod types;

pub use crate::signal::stop_on_signals;
pub use client::{get, put};
pub use files::{check_name, checksum_file, NameError};
pub use frames::{parse_checksum, parse_timestamp};
pub use server::SaratogaServer;
pub use types::{
    error_text, Access, Cidr, Progress, Rate, ServeConfig, ServerCounters, SessionReport,
    TransferConfig, TransferError, TransferReport,
};

use satcc_proto::saratoga::wire;

/// The Saratoga port (draft §4: 7542).
pub const DEFAULT_PORT: u16 = wire::PORT;

/// Longest file name accepted, in bytes: the temporary name adds 9 bytes
/// and common file systems stop at 255.
pub const MAX_NAME: usize = 200;

/// Largest DATA payload accepted in configuration (a frame must fit a
/// UDP datagram with the largest header).
pub const MAX_PAYLOAD: u32 = 65_000;
