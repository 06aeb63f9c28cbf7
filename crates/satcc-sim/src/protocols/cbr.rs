//! Constant bit rate over UDP into a counting sink: configuration from
//! the flow line, instantiation, capabilities.

use satcc_proto::cbr::{CbrConfig, CbrSource, Sink};
use satcc_proto::wire::WireProtocol;
use satcc_proto::Instant;

use super::{
    AnyReceiver, AnySender, Capabilities, FriendlinessRole, OtherReceiver, OtherSender,
    ProtocolConfig,
};
use crate::scenario::{CbrOptions, FlowSpec, Protocol};

/// What [`Protocol::wire_protocol`] answers: plain datagrams (the
/// compact header, type 3).
pub(super) const WIRE: Option<WireProtocol> = Some(WireProtocol::Datagram);

/// CBR's answers.
pub(super) fn capabilities(_p: Protocol) -> Capabilities {
    Capabilities {
        wire: WIRE,
        loss_recovery_metric: false,
        loss_event_rate_at_sender: false,
        // Background traffic: it does not react to congestion, so it is
        // neither side of a friendliness comparison.
        friendliness: FriendlinessRole::Background,
    }
}

/// The configuration of a CBR flow.
pub(super) fn config(spec: &FlowSpec, o: &CbrOptions) -> ProtocolConfig {
    let payload = o.packet_size.unwrap_or(spec.mss);
    ProtocolConfig::Cbr(CbrConfig::new(
        payload,
        payload + spec.wire_header_bytes(),
        o.rate.0,
        o.low_priority,
    ))
}

/// A fresh CBR source and sink at `now`.
pub(super) fn instantiate(c: &CbrConfig, now: Instant) -> (AnySender, AnyReceiver) {
    (
        AnySender::Other(Box::new(OtherSender::Cbr(CbrSource::new(c.clone(), now)))),
        AnyReceiver::Other(Box::new(OtherReceiver::Sink(Sink::new()))),
    )
}
