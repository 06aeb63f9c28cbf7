//! TFRC (RFC 5348) and CCID3 (RFC 4342) with paper 001's feedback:
//! configuration from the flow line, instantiation, capabilities.

use satcc_proto::tfrc::{self, FeedbackPolicy, TfrcReceiver, TfrcSender};
use satcc_proto::wire::WireProtocol;
use satcc_proto::{Duration, Instant};

use super::{AnyReceiver, AnySender, Capabilities, FriendlinessRole, ProtocolConfig};
use crate::scenario::{FeedbackSpec, Protocol, TfrcOptions, TfrcProfileSpec};

/// Paper 001 §3: the dynamic feedback policy's reference RTT, 100 ms.
pub const DEFAULT_RTT_REF: Duration = Duration::from_millis(100);

/// What [`Protocol::wire_protocol`] answers: DCCP-Data and DCCP-Ack in
/// UDP (RFC 6773).
pub(super) const WIRE: Option<WireProtocol> = Some(WireProtocol::Dccp);

/// TFRC's and CCID3's answers for protocol `p`.
pub(super) fn capabilities(_p: Protocol) -> Capabilities {
    Capabilities {
        wire: WIRE,
        // Paper 001 §V-C times how the rate comes back after a loss.
        loss_recovery_metric: true,
        loss_event_rate_at_sender: false,
        friendliness: FriendlinessRole::Compared,
    }
}

/// The configuration of a TFRC or CCID3 flow with packets of `s` bytes.
pub(super) fn config(s: u32, o: &TfrcOptions) -> ProtocolConfig {
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
            rtt_q_milli: o.rtt_q_milli,
            data_limited_check: o.data_limited,
            profile,
            ..tfrc::SenderConfig::default()
        },
        receiver: tfrc::ReceiverConfig {
            s,
            policy,
            history_discounting: o.history_discounting,
            x_recv_interval: o.x_recv_interval,
            first_loss_target: o.first_loss_target,
            ndupack,
            profile,
            ..tfrc::ReceiverConfig::default()
        },
    }
}

/// A fresh TFRC sender and receiver at `now`.
pub(super) fn instantiate(
    sender: &tfrc::SenderConfig,
    receiver: &tfrc::ReceiverConfig,
    now: Instant,
) -> (AnySender, AnyReceiver) {
    (
        AnySender::Tfrc(Box::new(TfrcSender::new(sender.clone(), now))),
        AnyReceiver::Tfrc(Box::new(TfrcReceiver::new(receiver.clone()))),
    )
}
