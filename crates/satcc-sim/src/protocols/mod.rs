//! The one place a flow spec becomes a protocol configuration, and where
//! the rest of satcc learns what a protocol can do.
//!
//! The simulator builds its endpoints from [`ProtocolConfig`], and the ns-2
//! export writes its agents from the same value, so the two can never run
//! different defaults.
//!
//! Each protocol family has its own file here (`tcp`, `tfrc`, `tfrcp`,
//! `saratoga`, `cbr`): its configuration from the flow line with the
//! defaults, its instantiation, and its capabilities (see [`Protocol`]'s
//! methods below: what the simulator, the reports and the real runs ask of
//! a protocol, instead of asking which protocol it is). This file holds the
//! enums and the dispatch, whose matches have no catch-all arm so that a
//! new protocol does not compile until each of them places it. The event
//! loop never changes.

mod cbr;
mod saratoga;
mod tcp;
mod tfrc;
mod tfrcp;

use satcc_proto::cbr::{CbrConfig, CbrSource, Sink};
use satcc_proto::endpoint::{Endpoint, Event, Message, RateStats, Sender, Stats, Transmit};
use satcc_proto::rng::Rng;
use satcc_proto::saratoga::{SaratogaConfig, SaratogaReceiver, SaratogaSender};
use satcc_proto::tcp::{self as tcp_proto, TcpReceiver, TcpSender};
use satcc_proto::tfrc::{self as tfrc_proto, TfrcReceiver, TfrcSender};
use satcc_proto::tfrcp::{self as tfrcp_proto, TfrcpReceiver, TfrcpSender};
use satcc_proto::wire::WireProtocol;
use satcc_proto::{Duration, Instant};

use crate::scenario::flow::Family;
use crate::scenario::{FlowSpec, Protocol, ProtocolOptions};

pub use saratoga::{SaratogaRate, SARATOGA_DATA_HEADER};
pub use tfrc::DEFAULT_RTT_REF;
pub use tfrcp::{DEFAULT_TFRCP_K, DEFAULT_TFRCP_M};

/// A flow's two endpoints as configured.
#[derive(Clone, Debug)]
pub enum ProtocolConfig {
    /// TCP Reno, NewReno, SACK, or TCP-Peach over NewReno or SACK.
    Tcp {
        /// Sender.
        sender: tcp_proto::SenderConfig,
        /// Receiver.
        receiver: tcp_proto::ReceiverConfig,
    },
    /// TFRC (RFC 5348) or CCID3 (RFC 4342) with paper 001's feedback.
    Tfrc {
        /// Sender.
        sender: tfrc_proto::SenderConfig,
        /// Receiver.
        receiver: tfrc_proto::ReceiverConfig,
    },
    /// TFRCP (paper 004).
    Tfrcp {
        /// Sender.
        sender: tfrcp_proto::SenderConfig,
        /// Receiver.
        receiver: tfrcp_proto::ReceiverConfig,
    },
    /// Constant bit rate over UDP, into a counting sink.
    Cbr(CbrConfig),
    /// A Saratoga PUT (draft-wood-tsvwg-saratoga-22): sender and receiver
    /// share the configuration.
    Saratoga {
        /// Both endpoints' parameters.
        config: SaratogaConfig,
        /// How the sender sets its rate.
        rate: SaratogaRate,
    },
}

impl ProtocolConfig {
    /// The configuration of a flow of `spec`. `base_rtt` is the flow's
    /// propagation round trip, which TCP-Peach's Sudden Start takes as its
    /// handshake RTT unless `handshake_rtt` says otherwise.
    pub fn from_spec(spec: &FlowSpec, base_rtt: Option<Duration>) -> ProtocolConfig {
        match &spec.options {
            ProtocolOptions::Tcp(o) => tcp::config(spec, o, base_rtt),
            ProtocolOptions::Tfrc(o) => tfrc::config(spec.mss, o),
            ProtocolOptions::Tfrcp(o) => tfrcp::config(spec.mss, o),
            ProtocolOptions::Cbr(o) => cbr::config(spec, o),
            ProtocolOptions::Saratoga(o) => saratoga::config(spec, o),
        }
    }

    /// A fresh sender and receiver at `now`. Senders that draw random
    /// numbers (TFRCP's strategy S3, BBR's PROBE_BW phase) take their
    /// seed from `rng`, the flow's own stream.
    pub fn instantiate(&self, now: Instant, rng: &mut Rng) -> (AnySender, AnyReceiver) {
        match self {
            ProtocolConfig::Tcp { sender, receiver } => {
                tcp::instantiate(sender, receiver, now, rng)
            }
            ProtocolConfig::Tfrc { sender, receiver } => tfrc::instantiate(sender, receiver, now),
            ProtocolConfig::Tfrcp { sender, receiver } => {
                tfrcp::instantiate(sender, receiver, now, rng)
            }
            ProtocolConfig::Cbr(c) => cbr::instantiate(c, now),
            ProtocolConfig::Saratoga { config, rate } => saratoga::instantiate(config, rate, now),
        }
    }
}

impl ProtocolConfig {
    /// The UDP wire format the configured flow runs over for real, as
    /// [`Protocol::wire_protocol`] says for its protocol.
    pub fn wire_protocol(&self) -> Option<WireProtocol> {
        match self {
            ProtocolConfig::Tcp { .. } => tcp::WIRE,
            ProtocolConfig::Tfrc { .. } => tfrc::WIRE,
            ProtocolConfig::Tfrcp { .. } => tfrcp::WIRE,
            ProtocolConfig::Cbr(_) => cbr::WIRE,
            ProtocolConfig::Saratoga { .. } => saratoga::WIRE,
        }
    }
}

/// The part a flow of a protocol plays in the TCP-friendliness figures
/// (the normalized TCP throughput, paper 004's F, E and FC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FriendlinessRole {
    /// The TCP side.
    Tcp,
    /// The side compared against TCP (TFRC, CCID3, TFRCP, Saratoga,
    /// STFRC).
    Compared,
    /// Neither: background traffic (CBR), left out of the figures.
    Background,
}

/// What the rest of satcc asks of a protocol, answered once per family in
/// its file. The files write it as a struct literal without `..`, so that
/// a new capability does not compile until every family answers it.
struct Capabilities {
    /// See [`Protocol::wire_protocol`].
    wire: Option<WireProtocol>,
    /// See [`Protocol::has_loss_recovery_metric`].
    loss_recovery_metric: bool,
    /// See [`Protocol::loss_event_rate_at_sender`].
    loss_event_rate_at_sender: bool,
    /// See [`Protocol::friendliness_role`].
    friendliness: FriendlinessRole,
}

impl Protocol {
    fn capabilities(self) -> Capabilities {
        match self.family() {
            Family::Tcp => tcp::capabilities(self),
            Family::Tfrc => tfrc::capabilities(self),
            Family::Tfrcp => tfrcp::capabilities(self),
            Family::Saratoga => saratoga::capabilities(self),
            Family::Cbr => cbr::capabilities(self),
        }
    }

    /// The UDP wire format a flow of this protocol runs over for real
    /// (`satcc perf`, `satcc run --real`); `None` if it runs in the
    /// simulator only.
    pub fn wire_protocol(self) -> Option<WireProtocol> {
        self.capabilities().wire
    }

    /// Whether the report tracks this protocol's loss-recovery time
    /// (paper 001 §V-C, summary.json `loss_recovery`) from the sender's
    /// rate.
    pub fn has_loss_recovery_metric(self) -> bool {
        self.capabilities().loss_recovery_metric
    }

    /// Whether the loss event rate the report shows is the sender's when
    /// the receiver reports none (sender-based TFRC: STFRC).
    pub fn loss_event_rate_at_sender(self) -> bool {
        self.capabilities().loss_event_rate_at_sender
    }

    /// The part its flows play in the TCP-friendliness figures.
    pub fn friendliness_role(self) -> FriendlinessRole {
        self.capabilities().friendliness
    }
}

/// The sender of any protocol: what [`ProtocolConfig::instantiate`] builds.
///
/// The simulator reaches it only through the [`Endpoint`] and [`Sender`]
/// traits. It is an enum rather than a `Box<dyn Sender>` for speed: the
/// calls dispatch on a tag the branch predictor learns per flow, and the
/// compiler can inline them (a trait object costs the reference scenario
/// about 4 % in mispredicted indirect calls). TCP and TFRC, the protocols
/// of most runs, are variants of their own; the others are behind one more
/// tag ([`OtherSender`]), so that the match of every call has three arms,
/// which the compiler makes two conditional branches, where five made a
/// jump table: an indirect jump whose target changes whenever one drive's
/// flow is of another protocol than the last one's, and which a
/// predictor without a history of the branches before it mispredicts
/// (issue 28). A new protocol adds one variant to `OtherSender` and one
/// arm to each macro below.
#[derive(Debug)]
pub enum AnySender {
    /// TCP (all variants, TCP-Peach included).
    Tcp(Box<TcpSender>),
    /// TFRC / CCID3.
    Tfrc(Box<TfrcSender>),
    /// Every other protocol.
    Other(Box<OtherSender>),
}

/// The senders of the protocols other than TCP and TFRC (see
/// [`AnySender`]).
#[derive(Debug)]
pub enum OtherSender {
    /// TFRCP.
    Tfrcp(TfrcpSender),
    /// Constant bit rate.
    Cbr(CbrSource),
    /// Saratoga (fixed rate or STFRC).
    Saratoga(SaratogaSender),
}

/// The receiver of any protocol (see [`AnySender`]).
#[derive(Debug)]
pub enum AnyReceiver {
    /// TCP.
    Tcp(Box<TcpReceiver>),
    /// TFRC / CCID3.
    Tfrc(Box<TfrcReceiver>),
    /// Every other protocol.
    Other(Box<OtherReceiver>),
}

/// The receivers of the protocols other than TCP and TFRC (see
/// [`AnySender`]).
// Always boxed whole (`AnyReceiver::Other`): the size difference costs a
// CBR sink's flow 480 bytes instead of 168, and saves Saratoga's receiver
// a second indirection.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum OtherReceiver {
    /// TFRCP.
    Tfrcp(TfrcpReceiver),
    /// The CBR sink.
    Sink(Sink),
    /// Saratoga.
    Saratoga(SaratogaReceiver),
}

/// `$body` with `$e` bound to the sender inside (`&mut` with `as_mut`,
/// `&` with `as_ref`), whatever its protocol.
macro_rules! each_sender {
    ($s:expr, $as:ident, $e:ident => $body:expr) => {
        match $s {
            AnySender::Tcp(b) => {
                let $e = b.$as();
                $body
            }
            AnySender::Tfrc(b) => {
                let $e = b.$as();
                $body
            }
            AnySender::Other(b) => match b.$as() {
                OtherSender::Tfrcp($e) => $body,
                OtherSender::Cbr($e) => $body,
                OtherSender::Saratoga($e) => $body,
            },
        }
    };
}

/// `$body` with `$e` bound to the receiver inside.
macro_rules! each_receiver {
    ($s:expr, $as:ident, $e:ident => $body:expr) => {
        match $s {
            AnyReceiver::Tcp(b) => {
                let $e = b.$as();
                $body
            }
            AnyReceiver::Tfrc(b) => {
                let $e = b.$as();
                $body
            }
            AnyReceiver::Other(b) => match b.$as() {
                OtherReceiver::Tfrcp($e) => $body,
                OtherReceiver::Sink($e) => $body,
                OtherReceiver::Saratoga($e) => $body,
            },
        }
    };
}

impl AnySender {
    /// [`Endpoint::poll_transmit`], with `take` applied to the transmit in
    /// the protocol's own arm: the simulator's drive builds its packet from
    /// the transmit where the protocol returned it, not from a copy into
    /// which the arms' results are first merged (issue 28).
    #[inline(always)]
    pub(crate) fn poll_transmit_with<R>(
        &mut self,
        now: Instant,
        take: impl FnOnce(&Transmit) -> R,
    ) -> Option<R> {
        each_sender!(self, as_mut, e => Endpoint::poll_transmit(e, now).map(|t| take(&t)))
    }
}

impl AnyReceiver {
    /// As [`AnySender::poll_transmit_with`].
    #[inline(always)]
    pub(crate) fn poll_transmit_with<R>(
        &mut self,
        now: Instant,
        take: impl FnOnce(&Transmit) -> R,
    ) -> Option<R> {
        each_receiver!(self, as_mut, e => Endpoint::poll_transmit(e, now).map(|t| take(&t)))
    }
}

impl Endpoint for AnySender {
    #[inline]
    fn handle_input(&mut self, now: Instant, message: &Message) {
        each_sender!(self, as_mut, e => Endpoint::handle_input(e, now, message))
    }
    #[inline]
    fn handle_timeout(&mut self, now: Instant) {
        each_sender!(self, as_mut, e => Endpoint::handle_timeout(e, now))
    }
    #[inline]
    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        each_sender!(self, as_mut, e => Endpoint::poll_transmit(e, now))
    }
    #[inline]
    fn poll_timeout(&self) -> Option<Instant> {
        each_sender!(self, as_ref, e => Endpoint::poll_timeout(e))
    }
    #[inline]
    fn poll_event(&mut self) -> Option<Event> {
        each_sender!(self, as_mut, e => Endpoint::poll_event(e))
    }
    fn stats(&self) -> Stats {
        each_sender!(self, as_ref, e => Endpoint::stats(e))
    }
    #[inline]
    fn rate(&self) -> Option<RateStats> {
        each_sender!(self, as_ref, e => Endpoint::rate(e))
    }
}

impl Sender for AnySender {
    fn offer(&mut self, now: Instant, bytes: u64) {
        each_sender!(self, as_mut, e => Sender::offer(e, now, bytes))
    }
    fn set_unlimited(&mut self, now: Instant) {
        each_sender!(self, as_mut, e => Sender::set_unlimited(e, now))
    }
    fn set_paused(&mut self, now: Instant, paused: bool) {
        each_sender!(self, as_mut, e => Sender::set_paused(e, now, paused))
    }
    fn close(&mut self, now: Instant) {
        each_sender!(self, as_mut, e => Sender::close(e, now))
    }
}

impl Endpoint for AnyReceiver {
    #[inline]
    fn handle_input(&mut self, now: Instant, message: &Message) {
        each_receiver!(self, as_mut, e => Endpoint::handle_input(e, now, message))
    }
    #[inline]
    fn handle_timeout(&mut self, now: Instant) {
        each_receiver!(self, as_mut, e => Endpoint::handle_timeout(e, now))
    }
    #[inline]
    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        each_receiver!(self, as_mut, e => Endpoint::poll_transmit(e, now))
    }
    #[inline]
    fn poll_timeout(&self) -> Option<Instant> {
        each_receiver!(self, as_ref, e => Endpoint::poll_timeout(e))
    }
    #[inline]
    fn poll_event(&mut self) -> Option<Event> {
        each_receiver!(self, as_mut, e => Endpoint::poll_event(e))
    }
    fn stats(&self) -> Stats {
        each_receiver!(self, as_ref, e => Endpoint::stats(e))
    }
}
