//! Cross-checking satcc against ns-2 2.35 (`/usr/bin/ns`, Debian `ns2`).
//!
//! [`export`] (or [`to_tcl`] for the text alone) turns a
//! [`Scenario`](satcc_sim::scenario::Scenario) into an ns-2 OTcl script
//! that is as close to the same experiment as ns-2 allows, [`run_ns2`] (or
//! [`Ns2Script::run`]) runs it and [`Ns2Script::parse_output`] reads the
//! machine-readable lines it prints. Errors are [`Ns2Error`]s.
//!
//! The network is the simulator's own `NetDef` and every protocol
//! parameter comes from `satcc_sim::protocols::ProtocolConfig::from_spec`,
//! the builder the simulator makes its endpoints with, so the two sides
//! run the same numbers by construction. The mapping of every ns-2 default
//! is in `docs/ns2.md`; the choices that matter:
//!
//! * **Packet sizes.** satcc's `mss` is payload bytes and a data packet is
//!   `mss + header_bytes` (default 40) on the wire. ns-2's `Agent/TCP`
//!   `packetSize_` is also payload: with `useHeaders_ true` (default) the
//!   agent adds `tcpip_base_hdr_size_` (default 40) to every data packet
//!   (checked with `trace-queue`: `packetSize_ 1000` gives 1040-byte data
//!   packets, 40-byte ACKs and a 40-byte SYN). So `packetSize_ = mss` and
//!   `tcpip_base_hdr_size_ = header_bytes`; the sink's `packetSize_` (ACK
//!   size, default 40) is also set to `header_bytes`. ns-2 does not add
//!   bytes for SACK blocks. For CBR, ns-2 adds nothing, so the CBR/UDP
//!   `packetSize_` is `packet_size + header_bytes`.
//! * **Handshake.** ns-2 2.35's one-way TCP sends a 40-byte SYN first
//!   (`syn_ true`) and then opens cwnd to `windowInit_`; satcc has no
//!   handshake, so we set `syn_ false` and data starts at the start time.
//! * **Windows.** `window_` (the receiver's advertised window, packets) =
//!   `rwnd`; `windowInit_` = `initial_window` (default RFC 3390 from the
//!   MSS, as satcc); initial ssthresh in ns-2 is `window_` (reset at
//!   `$ns run`), so `initial_ssthresh` is written into `ssthresh_` by an
//!   event at the flow's start (not `max_ssthresh_`, which in 2.35 turns on
//!   RFC 3742 limited slow start). `delay_growth_` is set false: with
//!   `syn_ false` it would otherwise skip the cwnd increase on the ACK of
//!   the first data packet.
//! * **Timers.** `minrto_`, `maxrto_`, `rtxcur_init_` (RTO before the first
//!   sample), `numdupacks_` and `tcpTick_` (ns-2 default 10 ms) are the
//!   simulator's sender configuration (the flow's values, else
//!   `satcc_proto::tcp::SenderConfig`'s defaults; clock granularity 1 ms).
//! * **Errors.** A link's `error` becomes an `ErrorModel` (unit pkt, uniform
//!   ranvar on its own seeded `RNG`) inserted with `$ns link-lossmodel`, i.e.
//!   *after* the link: an errored packet is queued and transmitted (it
//!   occupies the link) and is lost at the far end. `$ns lossmodel` would
//!   instead drop it before the queue.
//! * **RED.** ns-2 2.35 defaults RED to byte mode (`bytes_ true`,
//!   `queue_in_bytes_ true`); satcc's `RedSpec` is in packets, so the script
//!   sets both to false. Thresholds, weight (-1/0/-2 = ns-2's automatic
//!   rules), `linterm_ = 1/max_p`, `gentle_`, `wait_`, `mean_pktsize_`,
//!   `targetdelay_` are passed through; the values RED resolved at t = 0 are
//!   printed as `RED` lines.
//!
//! Output lines (one per flow, one per monitored link, whitespace separated):
//!
//! ```text
//! FLOW <id> <protocol> <active_s> <delivered_bytes> <packets_sent> <retransmits> <timeouts>
//! TFRC <id> <x_end_bps> <send_bps> <packet_loss_rate>      (tfrc/ccid3 flows only)
//! TFRCP <id> <rounds> <doubled> <lost> <received> <mean_lossy_p> <rate_end_pps>   (tfrcp flows only)
//! LINK <name> <rate_bps> <interval_s> <departed_bytes> <arrivals> <drops_queue> <drops_error> <mean_queue_pkts>
//! RED  <name> <thresh_> <maxthresh_> <q_weight_> <limit_>
//! END  <sim_seconds>
//! ```
//!
//! `delivered_bytes` of a TCP flow is the sender's highest cumulative ACK
//! (`ack_`, a packet number starting at 0 because `syn_` is false) plus one,
//! times `mss`: in-order payload the receiver has acknowledged and the sender
//! has heard of. (The sink's `bytes_` counts every received packet with its
//! header, duplicates included, so it is not goodput.) It lags the sink's own
//! in-order count by the ACKs still in flight, at most one window.
//!
//! **TFRC/CCID3** flows become `Agent/TFRC` + `Agent/TFRCSink` with the
//! settings that bring ns-2 closest to RFC 5348 (table and every known
//! difference in `docs/ns2.md`): `packetSize_ = mss` (s, payload) plus
//! `headersize_ = header_bytes` on the wire (1040-byte data, 40-byte
//! feedback, checked with `trace-queue`). The agent is an infinite source
//! (`SndrType_ 0`, `$tfrc start`/`stop`). Its `delivered_bytes` is the
//! sink's `bytes_` (wire bytes of every packet received; TFRC never
//! retransmits and links do not duplicate, so every packet is new) / wire
//! size x mss, taken modulo 2^32 because `bytes_` is a C `int` (exact while
//! less than 4 GiB arrive in the measured interval). ns-2 keeps the loss
//! event rate p in C++ locals, so the `TFRC` line gives the final allowed
//! rate X (`rate_`), the mean sending rate and the receiver's packet loss
//! rate (`true_loss_rate_`) instead. The flow's `oscillation_damping`
//! (RFC 5348 §4.5) and `history_discounting` (§5.5) switch ns-2's `ca_`
//! and `discount_` (ns-2's defaults are both on; satcc's both off); how
//! ns-2's versions differ from the RFC's is in `docs/ns2.md`.
#![warn(missing_docs)]

mod error;
mod export;
mod results;
mod run;
#[cfg(test)]
mod tests;

pub use error::Ns2Error;
pub use export::{
    base_rtts, export, ns2_seed, num_feedback, tfrcp_tcl, to_tcl, ExportedLink, Ns2Script,
    TFRCP_S2_FALLBACK_M, TFRCP_TCL,
};
pub use results::{Ns2Flow, Ns2Link, Ns2Red, Ns2Result, Ns2Tfrc, Ns2Tfrcp};
pub use run::{ns_available, run_ns2};
