//! TFRCP (paper 004): configuration from the flow line, instantiation,
//! capabilities.

use satcc_proto::rng::Rng;
use satcc_proto::tfrcp::{self, Pacing, Strategy, TfrcpReceiver, TfrcpSender};
use satcc_proto::wire::WireProtocol;
use satcc_proto::{Duration, Instant};

use super::{
    AnyReceiver, AnySender, Capabilities, FriendlinessRole, OtherReceiver, OtherSender,
    ProtocolConfig,
};
use crate::scenario::{PacingSpec, Protocol, StrategySpec, TfrcpOptions};

/// Paper 004 §III-C.1: strategy S1's default recomputation interval M.
pub const DEFAULT_TFRCP_M: Duration = Duration::from_secs(3);
/// Paper 004 §III-C.1: strategy S2's default multiple K of the RTT.
pub const DEFAULT_TFRCP_K: f64 = 10.0;

/// What [`Protocol::wire_protocol`] answers: the compact header, types 1
/// (data) and 2 (ACK).
pub(super) const WIRE: Option<WireProtocol> = Some(WireProtocol::Tfrcp);

/// TFRCP's answers.
pub(super) fn capabilities(_p: Protocol) -> Capabilities {
    Capabilities {
        wire: WIRE,
        loss_recovery_metric: false,
        loss_event_rate_at_sender: false,
        friendliness: FriendlinessRole::Compared,
    }
}

/// The configuration of a TFRCP flow with packets of `s` bytes.
pub(super) fn config(s: u32, o: &TfrcpOptions) -> ProtocolConfig {
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

/// A fresh TFRCP sender and receiver at `now`; the sender's seed (strategy
/// S3 draws M) comes from `rng`, the flow's own stream.
pub(super) fn instantiate(
    sender: &tfrcp::SenderConfig,
    receiver: &tfrcp::ReceiverConfig,
    now: Instant,
    rng: &mut Rng,
) -> (AnySender, AnyReceiver) {
    (
        AnySender::Other(Box::new(OtherSender::Tfrcp(TfrcpSender::new(
            sender.clone(),
            now,
            rng.next_u64(),
        )))),
        AnyReceiver::Other(Box::new(OtherReceiver::Tfrcp(TfrcpReceiver::new(
            receiver.clone(),
        )))),
    )
}
