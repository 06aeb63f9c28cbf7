//! TCP (Reno, NewReno, SACK) and TCP-Peach: configuration from the flow
//! line, instantiation, capabilities.

use satcc_proto::rng::Rng;
use satcc_proto::tcp::{
    self, PeachConfig, RtoSsthresh, RttTiming, TcpReceiver, TcpSender, Variant,
};
use satcc_proto::wire::WireProtocol;
use satcc_proto::{Duration, Instant};

use super::{AnyReceiver, AnySender, Capabilities, FriendlinessRole, ProtocolConfig};
use crate::scenario::flow::{tcp_growth, tcp_variant};
use crate::scenario::{
    CubicVariantSpec, FlowSpec, HyblaVariantSpec, Protocol, RtoSsthreshSpec, RttTimingSpec,
    SackRecoverySpec, SlowStartSpec, TcpOptions, TcpProfileSpec,
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
            SackRecoverySpec::Ns2Linux => tcp::SackRecovery::Ns2Linux,
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
        growth: growth(spec.protocol, o, linux, base_rtt),
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

/// The window growth of a flow of `p` with options `o`: the documents'
/// defaults, then the flow's keys.
fn growth(p: Protocol, o: &TcpOptions, linux: bool, base_rtt: Option<Duration>) -> tcp::Growth {
    match tcp_growth(p) {
        tcp::Growth::Cubic(d) => {
            let c = o.cubic.clone().unwrap_or_default();
            // The variant picks the defaults of C and β (v2.1's module
            // parameters for "linux-2.6.22").
            let d = match c.cubic_variant {
                Some(CubicVariantSpec::Linux2622) => tcp::CubicConfig::linux_2_6_22(),
                _ => d,
            };
            tcp::Growth::Cubic(tcp::CubicConfig {
                c: c.cubic_c.unwrap_or(d.c),
                beta: c.cubic_beta.unwrap_or(d.beta),
                fast_convergence: c.cubic_fast_convergence.unwrap_or(d.fast_convergence),
                reno_friendly: c.cubic_reno_friendly.unwrap_or(d.reno_friendly),
                // Linux runs HyStart by default (tcp_cubic.c `hystart =
                // 1`); RFC 9438 §4.10 leaves HyStart++ optional.
                slow_start: match c.slow_start {
                    Some(SlowStartSpec::Standard) => tcp::SlowStart::Standard,
                    Some(SlowStartSpec::Hystart) => {
                        tcp::SlowStart::Hystart(tcp::HystartConfig::default())
                    }
                    Some(SlowStartSpec::Hystart613) => {
                        tcp::SlowStart::Hystart(tcp::HystartConfig {
                            rounds_below_low_window: false,
                            ..tcp::HystartConfig::default()
                        })
                    }
                    Some(SlowStartSpec::HystartPp) => {
                        tcp::SlowStart::HystartPp(tcp::HystartPpConfig::default())
                    }
                    None if linux => tcp::SlowStart::Hystart(tcp::HystartConfig::default()),
                    None => d.slow_start,
                },
                // Linux's floor of cwnd/20 per RTT before any loss
                // (tcp_cubic.c bictcp_update()).
                linux_initial_growth: linux,
                // Linux's cubictcp_recalc_ssthresh(): β·cwnd, not
                // β·FlightSize (RFC 9438 §4.6).
                ssthresh_from_cwnd: linux,
                variant: d.variant,
            })
        }
        tcp::Growth::Hybla(d) => {
            let h = o.hybla.clone().unwrap_or_default();
            tcp::Growth::Hybla(tcp::HyblaConfig {
                rtt0: h.hybla_rtt0.map_or(d.rtt0, |x| x.0),
                variant: match h.hybla_variant {
                    Some(HyblaVariantSpec::Linux2622) => tcp::HyblaVariant::Linux2622,
                    _ => tcp::HyblaVariant::Caini2004,
                },
                ..d
            })
        }
        tcp::Growth::Bbr(d) => {
            let b = o.bbr.clone().unwrap_or_default();
            tcp::Growth::Bbr(tcp::BbrConfig {
                // BBR's first pacing rate comes from the handshake's RTT
                // (tcp_bbr.c bbr_init_pacing_rate_from_rtt()); the path's
                // base RTT stands for it, as for Peach's Sudden Start.
                initial_rtt: base_rtt,
                probe_rtt: b.bbr_probe_rtt.unwrap_or(d.probe_rtt),
                high_gain: b.bbr_high_gain.unwrap_or(d.high_gain),
                cwnd_gain: b.bbr_cwnd_gain.unwrap_or(d.cwnd_gain),
                ..d
            })
        }
        g => g,
    }
}

/// A fresh TCP sender and receiver at `now`. A BBR sender takes the seed
/// of its PROBE_BW phase draw from `rng`, the flow's own stream (the run
/// seed and the flow's index), so that flows, and successive connections
/// of one flow, draw different phases as the kernel's
/// `get_random_u32_below()` does, and runs still repeat.
pub(super) fn instantiate(
    sender: &tcp::SenderConfig,
    receiver: &tcp::ReceiverConfig,
    now: Instant,
    rng: &mut Rng,
) -> (AnySender, AnyReceiver) {
    let mut sender = sender.clone();
    if let tcp::Growth::Bbr(b) = &mut sender.growth {
        b.seed = rng.next_u64();
    }
    (
        AnySender::Tcp(Box::new(TcpSender::new(sender, now))),
        AnyReceiver::Tcp(Box::new(TcpReceiver::new(receiver.clone()))),
    )
}
