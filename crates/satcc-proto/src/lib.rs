//! Sans-IO protocol logic for satcc.
//!
//! Every endpoint here is a plain state machine driven through
//! `handle_input` / `handle_timeout` / `poll_transmit` / `poll_timeout` /
//! `poll_event`. Nothing in this crate owns a socket, a clock, a thread or a
//! random source: the simulator and the UDP runtime are two drivers of the
//! same machines (see `docs/architecture.md`).
#![warn(missing_docs)]

pub mod cbr;
pub mod endpoint;
pub mod equation;
pub mod messages;
mod pacer;
pub mod refwa;
pub mod refwa_tcp;
pub mod rng;
pub mod saratoga;
pub mod stfrc;
pub mod tcp;
pub mod tfrc;
pub mod tfrcp;
pub mod time;
pub mod wire;

pub use endpoint::{Endpoint, Event, Message, Sender, Stats, Transmit};
pub use time::{Duration, Instant};
