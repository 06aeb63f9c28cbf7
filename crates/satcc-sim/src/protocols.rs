//! The one place a flow spec becomes a protocol configuration.
//!
//! The simulator builds its endpoints from [`ProtocolConfig`], and the ns-2
//! export writes its agents from the same value, so the two can never run
//! different defaults. Adding a protocol is one variant here, one module in
//! `satcc-proto` and one variant of the scenario's protocol enum; the event
//! loop never changes.

use satcc_proto::cbr::{CbrConfig, CbrSource, Sink};
use satcc_proto::endpoint::{BoxedEndpoint, BoxedSender};
use satcc_proto::rng::Rng;
use satcc_proto::tcp::{
    self, PeachConfig, RtoSsthresh, RttTiming, TcpReceiver, TcpSender, Variant,
};
use satcc_proto::tfrc::{self, FeedbackPolicy, TfrcReceiver, TfrcSender};
use satcc_proto::tfrcp::{self, Pacing, Strategy, TfrcpReceiver, TfrcpSender};
use satcc_proto::{Duration, Instant};

use crate::scenario::{
    FeedbackSpec, FlowSpec, PacingSpec, Protocol, RtoSsthreshSpec, RttTimingSpec, StrategySpec,
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
}

impl ProtocolConfig {
    /// The configuration of a flow of `spec`. `base_rtt` is the flow's
    /// propagation round trip, which TCP-Peach's Sudden Start takes as its
    /// handshake RTT unless `handshake_rtt` says otherwise.
    pub fn from_spec(spec: &FlowSpec, base_rtt: Option<Duration>) -> ProtocolConfig {
        match spec.protocol {
            Protocol::Reno
            | Protocol::NewReno
            | Protocol::Sack
            | Protocol::Peach
            | Protocol::PeachSack => tcp_config(spec, base_rtt),
            Protocol::Tfrc | Protocol::Ccid3 => {
                let policy = match spec.feedback.unwrap_or_default() {
                    FeedbackSpec::Standard => FeedbackPolicy::Standard,
                    FeedbackSpec::Dynamic => FeedbackPolicy::Dynamic {
                        rtt_ref: spec.rtt_ref.map_or(DEFAULT_RTT_REF, |d| d.0),
                    },
                };
                ProtocolConfig::Tfrc {
                    sender: tfrc::SenderConfig {
                        s: spec.mss,
                        oscillation_damping: spec.oscillation_damping,
                        ..tfrc::SenderConfig::default()
                    },
                    receiver: tfrc::ReceiverConfig {
                        s: spec.mss,
                        policy,
                        history_discounting: spec.history_discounting,
                        ..tfrc::ReceiverConfig::default()
                    },
                }
            }
            Protocol::Tfrcp => {
                let d = tfrcp::SenderConfig::default();
                let strategy = match spec.strategy.unwrap_or(StrategySpec::S1) {
                    StrategySpec::S1 => Strategy::Fixed {
                        m: spec.m.map_or(DEFAULT_TFRCP_M, |m| m.0),
                    },
                    StrategySpec::S2 => Strategy::RttMultiple {
                        k: spec.k.unwrap_or(DEFAULT_TFRCP_K),
                    },
                    StrategySpec::S3 => Strategy::Random {
                        base: spec.m_base.map_or(Duration::ZERO, |m| m.0),
                        spread: spec.m_spread.map_or(Duration::ZERO, |m| m.0),
                    },
                };
                ProtocolConfig::Tfrcp {
                    sender: tfrcp::SenderConfig {
                        s: spec.mss,
                        r0: spec.initial_rate.unwrap_or(d.r0),
                        strategy,
                        pacing: match spec.pacing {
                            Some(PacingSpec::Burst) => Pacing::Burst,
                            _ => Pacing::Even,
                        },
                        wmax: spec.wmax.unwrap_or(d.wmax),
                        min_rto: spec.min_rto.map_or(d.min_rto, |x| x.0),
                        initial_rto: spec.initial_rto.map_or(d.initial_rto, |x| x.0),
                        max_rto: spec.max_rto.map_or(d.max_rto, |x| x.0),
                        ..d
                    },
                    receiver: tfrcp::ReceiverConfig::default(),
                }
            }
            Protocol::Cbr => {
                let payload = spec.packet_size.unwrap_or(spec.mss);
                // Validated: a CBR flow has a rate.
                let rate = spec.rate.map_or(0, |r| r.0);
                ProtocolConfig::Cbr(CbrConfig::new(
                    payload,
                    payload + spec.wire_header_bytes(),
                    rate,
                    spec.low_priority,
                ))
            }
        }
    }

    /// A fresh sender and receiver at `now`. Senders that draw random
    /// numbers (TFRCP's strategy S3) take their seed from `rng`, the
    /// flow's own stream.
    pub fn instantiate(&self, now: Instant, rng: &mut Rng) -> (BoxedSender, BoxedEndpoint) {
        match self {
            ProtocolConfig::Tcp { sender, receiver } => (
                Box::new(TcpSender::new(sender.clone(), now)),
                Box::new(TcpReceiver::new(receiver.clone())),
            ),
            ProtocolConfig::Tfrc { sender, receiver } => (
                Box::new(TfrcSender::new(sender.clone(), now)),
                Box::new(TfrcReceiver::new(receiver.clone())),
            ),
            ProtocolConfig::Tfrcp { sender, receiver } => (
                Box::new(TfrcpSender::new(sender.clone(), now, rng.next_u64())),
                Box::new(TfrcpReceiver::new(receiver.clone())),
            ),
            ProtocolConfig::Cbr(c) => (
                Box::new(CbrSource::new(c.clone(), now)),
                Box::new(Sink::new()),
            ),
        }
    }
}

fn tcp_config(spec: &FlowSpec, base_rtt: Option<Duration>) -> ProtocolConfig {
    let variant = match spec.protocol {
        Protocol::Reno => Variant::Reno,
        Protocol::NewReno | Protocol::Peach => Variant::NewReno,
        _ => Variant::Sack,
    };
    let peach = spec.protocol.is_peach().then(|| {
        let pd = PeachConfig::default();
        PeachConfig {
            initial_rtt: spec
                .handshake_rtt
                .map(|d| d.0)
                .or(base_rtt)
                .unwrap_or(pd.initial_rtt),
            adsn_factor: spec.peach_adsn.unwrap_or(pd.adsn_factor),
            wdsn_factor: spec.peach_wdsn.unwrap_or(pd.wdsn_factor),
            dummies_per_ack: spec.peach_dummies_per_ack.unwrap_or(pd.dummies_per_ack),
            rr_timeout_rtts: spec.peach_rr_timeout.unwrap_or(pd.rr_timeout_rtts),
            ..pd
        }
    });
    let d = tcp::SenderConfig::default();
    let sender = tcp::SenderConfig {
        variant,
        mss: spec.mss,
        // RFC 3390 §1 unless the flow says otherwise.
        initial_window: spec
            .initial_window
            .unwrap_or(tcp::rfc3390_initial_window(spec.mss)),
        initial_ssthresh: spec.initial_ssthresh.unwrap_or(d.initial_ssthresh),
        max_window: d.max_window,
        dupack_threshold: spec.dupack_threshold.unwrap_or(d.dupack_threshold),
        min_rto: spec.min_rto.map_or(d.min_rto, |x| x.0),
        max_rto: spec.max_rto.map_or(d.max_rto, |x| x.0),
        initial_rto: spec.initial_rto.map_or(d.initial_rto, |x| x.0),
        clock_granularity: d.clock_granularity,
        newreno_impatient: spec.newreno_impatient,
        limited_transmit: spec.limited_transmit,
        rto_ssthresh: match spec.rto_ssthresh {
            RtoSsthreshSpec::FlightSize => RtoSsthresh::FlightSize,
            RtoSsthreshSpec::Window => RtoSsthresh::Window,
        },
        rtt_timing: match spec.rtt_timing {
            RttTimingSpec::Timestamps => RttTiming::Timestamps,
            RttTimingSpec::Karn => RttTiming::Karn,
        },
        peach,
        // The handshake tells the sender the receiver's window.
        initial_rwnd: spec.rwnd,
    };
    let receiver = tcp::ReceiverConfig {
        rwnd: spec.rwnd,
        sack: variant == Variant::Sack,
        echo_dummy: spec.echo_dummy,
        delayed_ack: spec.delayed_ack,
        delack_timeout: spec
            .delack_timeout
            .map_or(tcp::ReceiverConfig::default().delack_timeout, |x| x.0),
    };
    ProtocolConfig::Tcp { sender, receiver }
}
