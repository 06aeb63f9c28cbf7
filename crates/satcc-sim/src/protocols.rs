//! The one place a flow spec becomes a protocol configuration.
//!
//! The simulator builds its endpoints from [`ProtocolConfig`], and the ns-2
//! export writes its agents from the same value, so the two can never run
//! different defaults. Adding a protocol is one variant here, one module in
//! `satcc-proto` and one variant of the scenario's protocol enum; the event
//! loop never changes.

use satcc_proto::cbr::{CbrConfig, CbrSource, Sink};
use satcc_proto::endpoint::{Endpoint, Event, Message, Sender, Stats, Transmit};
use satcc_proto::rng::Rng;
use satcc_proto::saratoga::{SaratogaConfig, SaratogaReceiver, SaratogaSender};
use satcc_proto::stfrc::{StfrcConfig, StfrcController};
use satcc_proto::tcp::{
    self, PeachConfig, RtoSsthresh, RttTiming, TcpReceiver, TcpSender, Variant,
};
use satcc_proto::tfrc::{self, FeedbackPolicy, TfrcReceiver, TfrcSender};
use satcc_proto::tfrcp::{self, Pacing, Strategy, TfrcpReceiver, TfrcpSender};
use satcc_proto::{Duration, Instant};

use crate::scenario::{
    CbrOptions, FeedbackSpec, FlowSpec, PacingSpec, Protocol, ProtocolOptions, RtoSsthreshSpec,
    RttTimingSpec, SackRecoverySpec, SaratogaOptions, StrategySpec, TcpOptions, TfrcOptions,
    TfrcProfileSpec, TfrcpOptions,
};

/// Paper 001 §3: the dynamic feedback policy's reference RTT, 100 ms.
pub const DEFAULT_RTT_REF: Duration = Duration::from_millis(100);
/// Paper 004 §III-C.1: strategy S1's default recomputation interval M.
pub const DEFAULT_TFRCP_M: Duration = Duration::from_secs(3);
/// Paper 004 §III-C.1: strategy S2's default multiple K of the RTT.
pub const DEFAULT_TFRCP_K: f64 = 10.0;

/// A flow's two endpoints as configured.
#[derive(Clone, Debug)]
pub enum ProtocolConfig {
    /// TCP Reno, NewReno, SACK, or TCP-Peach over NewReno or SACK.
    Tcp {
        /// Sender.
        sender: tcp::SenderConfig,
        /// Receiver.
        receiver: tcp::ReceiverConfig,
    },
    /// TFRC (RFC 5348) or CCID3 (RFC 4342) with paper 001's feedback.
    Tfrc {
        /// Sender.
        sender: tfrc::SenderConfig,
        /// Receiver.
        receiver: tfrc::ReceiverConfig,
    },
    /// TFRCP (paper 004).
    Tfrcp {
        /// Sender.
        sender: tfrcp::SenderConfig,
        /// Receiver.
        receiver: tfrcp::ReceiverConfig,
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

/// How a Saratoga sender sets its rate.
#[derive(Clone, Debug)]
pub enum SaratogaRate {
    /// A fixed wire rate in bits per second (plain Saratoga, as deployed).
    Fixed(u64),
    /// Paper 000's sender-based TFRC.
    Stfrc(StfrcConfig),
}

/// Bytes of a Saratoga DATA frame's header when it carries no timestamp:
/// flags and session id (8) and a 64-bit offset (8), as a bulk transfer
/// (64-bit descriptor) sends them. With IPv4 and UDP (28) this is the
/// per-packet overhead STFRC's segment size counts.
pub const SARATOGA_DATA_HEADER: u32 = 16;

impl ProtocolConfig {
    /// The configuration of a flow of `spec`. `base_rtt` is the flow's
    /// propagation round trip, which TCP-Peach's Sudden Start takes as its
    /// handshake RTT unless `handshake_rtt` says otherwise.
    pub fn from_spec(spec: &FlowSpec, base_rtt: Option<Duration>) -> ProtocolConfig {
        match &spec.options {
            ProtocolOptions::Tcp(o) => tcp_config(spec.protocol, spec.mss, o, base_rtt),
            ProtocolOptions::Tfrc(o) => tfrc_config(spec.mss, o),
            ProtocolOptions::Tfrcp(o) => tfrcp_config(spec.mss, o),
            ProtocolOptions::Cbr(o) => cbr_config(spec, o),
            ProtocolOptions::Saratoga(o) => saratoga_config(spec, o),
        }
    }

    /// A fresh sender and receiver at `now`. Senders that draw random
    /// numbers (TFRCP's strategy S3) take their seed from `rng`, the
    /// flow's own stream.
    pub fn instantiate(&self, now: Instant, rng: &mut Rng) -> (AnySender, AnyReceiver) {
        match self {
            ProtocolConfig::Tcp { sender, receiver } => (
                AnySender::Tcp(Box::new(TcpSender::new(sender.clone(), now))),
                AnyReceiver::Tcp(Box::new(TcpReceiver::new(receiver.clone()))),
            ),
            ProtocolConfig::Tfrc { sender, receiver } => (
                AnySender::Tfrc(Box::new(TfrcSender::new(sender.clone(), now))),
                AnyReceiver::Tfrc(Box::new(TfrcReceiver::new(receiver.clone()))),
            ),
            ProtocolConfig::Tfrcp { sender, receiver } => (
                AnySender::Tfrcp(Box::new(TfrcpSender::new(
                    sender.clone(),
                    now,
                    rng.next_u64(),
                ))),
                AnyReceiver::Tfrcp(Box::new(TfrcpReceiver::new(receiver.clone()))),
            ),
            ProtocolConfig::Cbr(c) => (
                AnySender::Cbr(Box::new(CbrSource::new(c.clone(), now))),
                AnyReceiver::Sink(Box::new(Sink::new())),
            ),
            ProtocolConfig::Saratoga { config, rate } => {
                let sender = match rate {
                    SaratogaRate::Fixed(bps) => SaratogaSender::new(config.clone(), *bps, now),
                    SaratogaRate::Stfrc(c) => SaratogaSender::with_rate_controller(
                        config.clone(),
                        Box::new(StfrcController::new(c.clone(), now)),
                        now,
                    ),
                };
                (
                    AnySender::Saratoga(Box::new(sender)),
                    AnyReceiver::Saratoga(Box::new(SaratogaReceiver::new(config.clone(), now))),
                )
            }
        }
    }
}

/// The sender of any protocol: what [`ProtocolConfig::instantiate`] builds.
///
/// The simulator reaches it only through the [`Endpoint`] and [`Sender`]
/// traits. It is an enum rather than a `Box<dyn Sender>` for speed: the
/// calls dispatch on a tag the branch predictor learns per flow, and the
/// compiler can inline them (a trait object costs the reference scenario
/// about 4 % in mispredicted indirect calls). A new protocol adds one
/// variant here and one arm to each macro below.
#[derive(Debug)]
pub enum AnySender {
    /// TCP (all variants, TCP-Peach included).
    Tcp(Box<TcpSender>),
    /// TFRC / CCID3.
    Tfrc(Box<TfrcSender>),
    /// TFRCP.
    Tfrcp(Box<TfrcpSender>),
    /// Constant bit rate.
    Cbr(Box<CbrSource>),
    /// Saratoga (fixed rate or STFRC).
    Saratoga(Box<SaratogaSender>),
}

/// The receiver of any protocol (see [`AnySender`]).
#[derive(Debug)]
pub enum AnyReceiver {
    /// TCP.
    Tcp(Box<TcpReceiver>),
    /// TFRC / CCID3.
    Tfrc(Box<TfrcReceiver>),
    /// TFRCP.
    Tfrcp(Box<TfrcpReceiver>),
    /// The CBR sink.
    Sink(Box<Sink>),
    /// Saratoga.
    Saratoga(Box<SaratogaReceiver>),
}

/// `$body` with `$e` bound to the sender inside, whatever its protocol.
macro_rules! each_sender {
    ($s:expr, $e:ident => $body:expr) => {
        match $s {
            AnySender::Tcp($e) => $body,
            AnySender::Tfrc($e) => $body,
            AnySender::Tfrcp($e) => $body,
            AnySender::Cbr($e) => $body,
            AnySender::Saratoga($e) => $body,
        }
    };
}

/// `$body` with `$e` bound to the receiver inside.
macro_rules! each_receiver {
    ($s:expr, $e:ident => $body:expr) => {
        match $s {
            AnyReceiver::Tcp($e) => $body,
            AnyReceiver::Tfrc($e) => $body,
            AnyReceiver::Tfrcp($e) => $body,
            AnyReceiver::Sink($e) => $body,
            AnyReceiver::Saratoga($e) => $body,
        }
    };
}

impl Endpoint for AnySender {
    #[inline]
    fn handle_input(&mut self, now: Instant, message: &Message) {
        each_sender!(self, e => Endpoint::handle_input(e.as_mut(), now, message))
    }
    #[inline]
    fn handle_timeout(&mut self, now: Instant) {
        each_sender!(self, e => Endpoint::handle_timeout(e.as_mut(), now))
    }
    #[inline]
    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        each_sender!(self, e => Endpoint::poll_transmit(e.as_mut(), now))
    }
    #[inline]
    fn poll_timeout(&self) -> Option<Instant> {
        each_sender!(self, e => Endpoint::poll_timeout(e.as_ref()))
    }
    #[inline]
    fn poll_event(&mut self) -> Option<Event> {
        each_sender!(self, e => Endpoint::poll_event(e.as_mut()))
    }
    fn stats(&self) -> Stats {
        each_sender!(self, e => Endpoint::stats(e.as_ref()))
    }
}

impl Sender for AnySender {
    fn offer(&mut self, now: Instant, bytes: u64) {
        each_sender!(self, e => Sender::offer(e.as_mut(), now, bytes))
    }
    fn set_unlimited(&mut self, now: Instant) {
        each_sender!(self, e => Sender::set_unlimited(e.as_mut(), now))
    }
    fn set_paused(&mut self, now: Instant, paused: bool) {
        each_sender!(self, e => Sender::set_paused(e.as_mut(), now, paused))
    }
    fn close(&mut self, now: Instant) {
        each_sender!(self, e => Sender::close(e.as_mut(), now))
    }
}

impl Endpoint for AnyReceiver {
    #[inline]
    fn handle_input(&mut self, now: Instant, message: &Message) {
        each_receiver!(self, e => Endpoint::handle_input(e.as_mut(), now, message))
    }
    #[inline]
    fn handle_timeout(&mut self, now: Instant) {
        each_receiver!(self, e => Endpoint::handle_timeout(e.as_mut(), now))
    }
    #[inline]
    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        each_receiver!(self, e => Endpoint::poll_transmit(e.as_mut(), now))
    }
    #[inline]
    fn poll_timeout(&self) -> Option<Instant> {
        each_receiver!(self, e => Endpoint::poll_timeout(e.as_ref()))
    }
    #[inline]
    fn poll_event(&mut self) -> Option<Event> {
        each_receiver!(self, e => Endpoint::poll_event(e.as_mut()))
    }
    fn stats(&self) -> Stats {
        each_receiver!(self, e => Endpoint::stats(e.as_ref()))
    }
}

fn tcp_config(
    protocol: Protocol,
    mss: u32,
    o: &TcpOptions,
    base_rtt: Option<Duration>,
) -> ProtocolConfig {
    let variant = match protocol {
        Protocol::Reno => Variant::Reno,
        Protocol::NewReno | Protocol::Peach => Variant::NewReno,
        _ => Variant::Sack,
    };
    let peach = o.peach.as_ref().map(|p| {
        let pd = PeachConfig::default();
        PeachConfig {
            initial_rtt: p
                .handshake_rtt
                .map(|d| d.0)
                .or(base_rtt)
                .unwrap_or(pd.initial_rtt),
            adsn_factor: p.peach_adsn.unwrap_or(pd.adsn_factor),
            wdsn_factor: p.peach_wdsn.unwrap_or(pd.wdsn_factor),
            dummies_per_ack: p.peach_dummies_per_ack.unwrap_or(pd.dummies_per_ack),
            rr_timeout_rtts: p.peach_rr_timeout.unwrap_or(pd.rr_timeout_rtts),
            ..pd
        }
    });
    let d = tcp::SenderConfig::default();
    let sender = tcp::SenderConfig {
        variant,
        mss,
        // RFC 3390 §1 unless the flow says otherwise.
        initial_window: o.initial_window.unwrap_or(tcp::rfc3390_initial_window(mss)),
        initial_ssthresh: o.initial_ssthresh.unwrap_or(d.initial_ssthresh),
        max_window: d.max_window,
        dupack_threshold: o.dupack_threshold.unwrap_or(d.dupack_threshold),
        min_rto: o.min_rto.map_or(d.min_rto, |x| x.0),
        max_rto: o.max_rto.map_or(d.max_rto, |x| x.0),
        initial_rto: o.initial_rto.map_or(d.initial_rto, |x| x.0),
        clock_granularity: d.clock_granularity,
        newreno_impatient: o.newreno_impatient,
        limited_transmit: o.limited_transmit,
        rto_ssthresh: match o.rto_ssthresh {
            RtoSsthreshSpec::FlightSize => RtoSsthresh::FlightSize,
            RtoSsthreshSpec::Window => RtoSsthresh::Window,
        },
        rtt_timing: match o.rtt_timing {
            RttTimingSpec::Timestamps => RttTiming::Timestamps,
            RttTimingSpec::Karn => RttTiming::Karn,
        },
        peach,
        // The handshake tells the sender the receiver's window.
        initial_rwnd: o.rwnd,
        sack_recovery: match o.sack_recovery {
            SackRecoverySpec::Rfc6675 => tcp::SackRecovery::Rfc6675,
            SackRecoverySpec::Ns2 => tcp::SackRecovery::Ns2,
        },
    };
    let receiver = tcp::ReceiverConfig {
        rwnd: o.rwnd,
        sack: variant == Variant::Sack,
        echo_dummy: o.echo_dummy,
        delayed_ack: o.delayed_ack,
        delack_timeout: o
            .delack_timeout
            .map_or(tcp::ReceiverConfig::default().delack_timeout, |x| x.0),
    };
    ProtocolConfig::Tcp { sender, receiver }
}

fn tfrc_config(s: u32, o: &TfrcOptions) -> ProtocolConfig {
    let policy = match o.feedback {
        FeedbackSpec::Standard => FeedbackPolicy::Standard,
        FeedbackSpec::Dynamic { rtt_ref } => FeedbackPolicy::Dynamic {
            rtt_ref: rtt_ref.map_or(DEFAULT_RTT_REF, |d| d.0),
        },
    };
    let (profile, ndupack) = match o.profile {
        TfrcProfileSpec::Rfc5348 => (tfrc::Profile::Rfc5348, 3),
        // ns-2's Agent/TFRCSink numPkts_ 1 (tcl/lib/ns-default.tcl): a
        // hole is declared lost when one later packet arrives.
        TfrcProfileSpec::Ns2 => (tfrc::Profile::Ns2, 1),
    };
    ProtocolConfig::Tfrc {
        sender: tfrc::SenderConfig {
            s,
            oscillation_damping: o.oscillation_damping,
            damping_max_gain: o.damping_max_gain,
            profile,
            ..tfrc::SenderConfig::default()
        },
        receiver: tfrc::ReceiverConfig {
            s,
            policy,
            history_discounting: o.history_discounting,
            ndupack,
            profile,
            ..tfrc::ReceiverConfig::default()
        },
    }
}

fn tfrcp_config(s: u32, o: &TfrcpOptions) -> ProtocolConfig {
    let d = tfrcp::SenderConfig::default();
    let strategy = match o.strategy {
        StrategySpec::S1 { m } => Strategy::Fixed {
            m: m.map_or(DEFAULT_TFRCP_M, |m| m.0),
        },
        StrategySpec::S2 { k } => Strategy::RttMultiple { k },
        StrategySpec::S3 { base, spread } => Strategy::Random {
            base: base.0,
            spread: spread.0,
        },
    };
    ProtocolConfig::Tfrcp {
        sender: tfrcp::SenderConfig {
            s,
            r0: o.initial_rate.unwrap_or(d.r0),
            strategy,
            pacing: match o.pacing {
                PacingSpec::Even => Pacing::Even,
                PacingSpec::Burst => Pacing::Burst,
            },
            wmax: o.wmax.unwrap_or(d.wmax),
            min_rto: o.min_rto.map_or(d.min_rto, |x| x.0),
            initial_rto: o.initial_rto.map_or(d.initial_rto, |x| x.0),
            max_rto: o.max_rto.map_or(d.max_rto, |x| x.0),
            ..d
        },
        receiver: tfrcp::ReceiverConfig::default(),
    }
}

fn cbr_config(spec: &FlowSpec, o: &CbrOptions) -> ProtocolConfig {
    let payload = o.packet_size.unwrap_or(spec.mss);
    ProtocolConfig::Cbr(CbrConfig::new(
        payload,
        payload + spec.wire_header_bytes(),
        o.rate.0,
        o.low_priority,
    ))
}

fn saratoga_config(spec: &FlowSpec, o: &SaratogaOptions) -> ProtocolConfig {
    let d = SaratogaConfig::default();
    let stfrc = o.stfrc.is_some();
    let config = SaratogaConfig {
        payload: spec.mss,
        lower_header_bytes: spec.wire_header_bytes(),
        timestamps: o.timestamps.unwrap_or(d.timestamps),
        // Paper 000 §5: STFRC asks for one STATUS per RTT; the
        // every-N-frames rule would ask for more at high rates and make
        // STFRC under-estimate p, so an STFRC flow leaves it off unless
        // told otherwise.
        status_every_frames: o.status_every_frames.unwrap_or(if stfrc {
            0
        } else {
            d.status_every_frames
        }),
        status_request_interval: o
            .status_request_interval
            .map_or(d.status_request_interval, |x| x.0),
        // RFC 5348 §4.4 lets STFRC's no-feedback timer back the rate off to
        // one packet per t_mbi (64 s); a session that gave up after 60 s
        // of silence would end a transfer STFRC meant only to slow down,
        // so an STFRC flow waits two such gaps unless told otherwise.
        inactivity_timeout: o.inactivity_timeout.map_or(
            if stfrc {
                StfrcConfig::default().t_mbi.saturating_mul(2)
            } else {
                d.inactivity_timeout
            },
            |x| x.0,
        ),
        ..d
    };
    let rate = match (&o.stfrc, o.rate) {
        (Some(s), _) => SaratogaRate::Stfrc(StfrcConfig {
            // The equation's packet: a DATA frame as it appears on the
            // wire (paper 000 Table 1: 1040-byte packets).
            segment_size: spec.mss + SARATOGA_DATA_HEADER + spec.wire_header_bytes(),
            symmetry_ratio: s.symmetry_ratio,
            status_per_rtt: s.status_per_rtt,
            history_discounting: s.history_discounting,
            oscillation_damping: s.oscillation_damping,
            ..StfrcConfig::default()
        }),
        (None, Some(r)) => SaratogaRate::Fixed(r.0),
        // `saratoga` without a rate is rejected when the scenario is read.
        (None, None) => SaratogaRate::Fixed(0),
    };
    ProtocolConfig::Saratoga { config, rate }
}
