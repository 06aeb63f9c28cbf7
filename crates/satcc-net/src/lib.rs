//! satcc over real networks: the wall clock, a UDP runtime for the sans-IO
//! endpoints of `satcc-proto`, and a userspace satellite-link emulator.
//!
//! The protocol and simulator crates never read the wall clock; this crate
//! is where it enters. [`Clock`] maps `std::time::Instant` onto
//! [`satcc_proto::Instant`] (nanoseconds since the clock was made);
//! [`Socket`] waits for a datagram or a deadline in `ppoll` on a
//! high-resolution timer (not a socket read timeout, which Linux rounds to
//! a scheduler tick) with 1 µs timer slack, and [`ConnConfig::burst`]
//! replays send times a late wake-up missed, so that pacing holds when
//! the OS runs the driver late: at 200 Mb/s a 1000-byte packet is due
//! every 40 µs.
//!
//! - [`Conn`] drives one endpoint (a sender or a receiver) against one
//!   peer over a `UdpSocket`: receive with a timeout until the endpoint's
//!   next wake-up, decode with the wire codec, `handle_input`; fire
//!   `handle_timeout` when due; encode and send whatever `poll_transmit`
//!   yields.
//! - [`Server`] does the same for many peers on one socket, creating a
//!   receiver per peer and expiring idle ones.
//! - [`emu`] is the link emulator: a UDP relay that imposes, per
//!   direction, a link's rate, delay, queue and error model, using the
//!   simulator's own queue and error-model code and its TOML link syntax.
//! - [`real`] runs a scenario's flows for real (`satcc run --real`):
//!   endpoints on loopback sockets, the scenario's links emulated in
//!   process.
//! - [`saratoga`] runs real Saratoga file transfers (PUT, GET, a server
//!   for a directory) with STFRC or a fixed rate.
//! - [`ktcp`] is the kernel's TCP in `satcc perf` (Linux): a bulk flow
//!   with a chosen congestion control, measured from `TCP_INFO`.
//! - [`shell`] is `satcc shell` (Linux): programs in two network
//!   namespaces whose IP packets cross the emulated link.
//! - [`utcp`] is a userspace TCP sender on raw frames (Linux): satcc's
//!   NewReno, SACK and TCP-Peach against a kernel receiver.
//! - [`signal`] is the one SIGINT/SIGTERM handler: a flag a loop checks to
//!   stop cleanly.
#![warn(missing_docs)]

mod clock;
mod conn;
pub mod emu;
#[cfg(target_os = "linux")]
pub mod ktcp;
pub mod perf;
pub mod real;
pub mod saratoga;
mod server;
#[cfg(target_os = "linux")]
pub mod shell;
pub mod signal;
#[cfg(target_os = "linux")]
pub mod utcp;

pub use clock::{grow_buffers, Clock, Socket, DEFAULT_SPIN};
pub use conn::{Conn, ConnConfig, Counters, NetError, WakeStats, DEFAULT_BURST};
pub use server::{PeerReport, ReceiverFactory, Server, ServerConfig};

/// The local address a client socket for `server` binds to: loopback for
/// a loopback server (nothing beyond the machine can reach it then), the
/// unspecified address of the server's family otherwise; port 0.
pub fn client_bind_addr(server: std::net::SocketAddr) -> std::net::SocketAddr {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    let ip = match (server.ip(), server.ip().is_loopback()) {
        (IpAddr::V4(_), true) => IpAddr::V4(Ipv4Addr::LOCALHOST),
        (IpAddr::V4(_), false) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        (IpAddr::V6(_), true) => IpAddr::V6(Ipv6Addr::LOCALHOST),
        (IpAddr::V6(_), false) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    std::net::SocketAddr::new(ip, 0)
}
