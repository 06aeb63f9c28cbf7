//! TCP (Reno, NewReno, SACK) and TCP-Peach: configuration from the flow
//! line, instantiation, capabilities.

use satcc_proto::tcp::{
    self, PeachConfig, RtoSsthresh, RttTiming, TcpReceiver, TcpSender, Variant,
};
use satcc_proto::wire::WireProtocol;
use satcc_proto::{Duration, Instant};

use super::{AnyReceiver, AnySender, Capabilities, FriendlinessRole, ProtocolConfig};
use crate::scenario::flow::{tcp_growth, tcp_variant};
use crate::scenario::{
    FlowSpec, Protocol, RtoSsthreshSpec, RttTimingSpec, SackRecoverySpec, TcpOptions,
    TcpProfileSpec,
};

/// What [`Protocol::wire_protocol`] answers: none, satcc's TCP runs in
/// the simulator only (it has no UDP encoding).
pub(super) const WIRE: Option<WireProtocol> = None;

/// TCP's answers for protocol `p`.
pub(super) fn capabilities(_p: Protocol) -> Capabilities {
    Capabilities {
        wire: WIRE,
        loss_recovery_metric: false,
        loss_event_rate_at_sender: false,
        friendliness: FriendlinessRole::Tcp,
    }
}

/// The configuration of a TCP flow.
pub(super) fn config(
    spec: &FlowSpec,
    o: &TcpOptions,
    base_rtt: Option<Duration>,
) -> ProtocolConfig {
    let mss = spec.mss;
    let (variant, _) = tcp_variant(spec.protocol).expect("TCP options on a TCP flow");
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
    let linux = o.profile == TcpProfileSpec::Linux;
    let sender = tcp::SenderConfig {
        variant,
        mss,
        // RFC 3390 §1 unless the flow says otherwise; Linux: RFC 6928's
        // 10 (TCP_INIT_CWND).
        initial_window: o.initial_window.unwrap_or(if linux {
            10
        } else {
            tcp::rfc3390_initial_window(mss)
        }),
        initial_ssthresh: o.initial_ssthresh.unwrap_or(d.initial_ssthresh),
        max_window: d.max_window,
        dupack_threshold: o.dupack_threshold.unwrap_or(d.dupack_threshold),
        // Linux: TCP_RTO_MIN, 200 ms.
        min_rto: o.min_rto.map_or(
            if linux {
                Duration::from_millis(200)
            } else {
                d.min_rto
            },
            |x| x.0,
        ),
        max_rto: o.max_rto.map_or(d.max_rto, |x| x.0),
        // Linux floors the RTO's variance term, not the RTO
        // (tcp_rtt_estimator(), __tcp_set_rto()).
        rto_min_on_variance: linux,
        initial_rto: o.initial_rto.map_or(d.initial_rto, |x| x.0),
        clock_granularity: d.clock_granularity,
        newreno_impatient: o.newreno_impatient,
        limited_transmit: o.limited_transmit,
        // Linux's tcp_enter_loss() takes ssthresh from the congestion
        // control's ssthresh(), reno's max(cwnd/2, 2).
        rto_ssthresh: match o.rto_ssthresh {
            Some(RtoSsthreshSpec::FlightSize) => RtoSsthresh::FlightSize,
            Some(RtoSsthreshSpec::Window) => RtoSsthresh::Window,
            None if linux => RtoSsthresh::Window,
            None => d.rto_ssthresh,
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
        // Linux: RACK-TLP (RFC 8985), on by default since 4.18
        // (`tcp_recovery = 1`, `tcp_early_retrans = 3`), for the SACK
        // protocols whose recovery it marks losses for.
        loss_detection: o.loss_detection.map_or(
            if linux
                && variant == Variant::Sack
                && o.peach.is_none()
                && o.sack_recovery == SackRecoverySpec::Rfc6675
            {
                tcp::LossDetection::Rack { tlp: true }
            } else {
                d.loss_detection
            },
            |l| l.to_proto(),
        ),
        // Linux: PRR (RFC 6937) since 3.2, `tcp_cwnd_reduction()`; not
        // under BBR (its cong_control sets cwnd).
        prr: o.prr.unwrap_or(
            linux
                && variant == Variant::Sack
                && o.peach.is_none()
                && spec.protocol != Protocol::Bbr
                && o.sack_recovery == SackRecoverySpec::Rfc6675,
        ),
        growth: match tcp_growth(spec.protocol) {
            // BBR's first pacing rate comes from the handshake's RTT
            // (tcp_bbr.c bbr_init_pacing_rate_from_rtt()); the path's
            // base RTT stands for it, as for Peach's Sudden Start.
            tcp::Growth::Bbr(b) => tcp::Growth::Bbr(tcp::BbrConfig {
                initial_rtt: base_rtt,
                ..b
            }),
            g => g,
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

/// A fresh TCP sender and receiver at `now`.
pub(super) fn instantiate(
    sender: &tcp::SenderConfig,
    receiver: &tcp::ReceiverConfig,
    now: Instant,
) -> (AnySender, AnyReceiver) {
    (
        AnySender::Tcp(Box::new(TcpSender::new(sender.clone(), now))),
        AnyReceiver::Tcp(Box::new(TcpReceiver::new(receiver.clone()))),
    )
}
