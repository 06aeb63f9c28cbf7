//! Saratoga (draft-wood-tsvwg-saratoga-22) at a fixed rate, and with
//! paper 000's sender-based TFRC (STFRC): configuration from the flow
//! line, instantiation, capabilities.

use satcc_proto::saratoga::{
    SaratogaConfig, SaratogaReceiver, SaratogaSender, StatusHoleStore, DEFAULT_HOLE_STORE_CAPACITY,
};
use satcc_proto::stfrc::{StfrcConfig, StfrcController};
use satcc_proto::wire::WireProtocol;
use satcc_proto::Instant;

use super::{
    AnyReceiver, AnySender, Capabilities, FriendlinessRole, OtherReceiver, OtherSender,
    ProtocolConfig,
};
use crate::scenario::{FlowSpec, Protocol, SaratogaOptions};

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

/// What [`Protocol::wire_protocol`] answers: Saratoga frames in UDP (port
/// 7542).
pub(super) const WIRE: Option<WireProtocol> = Some(WireProtocol::Saratoga);

/// Saratoga's and STFRC's answers for protocol `p`.
pub(super) fn capabilities(_p: Protocol) -> Capabilities {
    Capabilities {
        wire: WIRE,
        loss_recovery_metric: false,
        // STFRC is sender-based: the sender computes p from STATUS frames
        // (a fixed-rate sender has none, so it reports none).
        loss_event_rate_at_sender: true,
        friendliness: FriendlinessRole::Compared,
    }
}

/// The configuration of a Saratoga or STFRC flow.
pub(super) fn config(spec: &FlowSpec, o: &SaratogaOptions) -> ProtocolConfig {
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
        // STFRC's controller asks status_per_rtt STATUS per RTT by its own
        // RTT estimate (paper 000 §5); the sender's per-RTT rule is for a
        // fixed rate only, or it would double them.
        status_per_rtt: if stfrc {
            0.0
        } else {
            o.status_per_rtt.unwrap_or(d.status_per_rtt)
        },
        status_min_frames: o.status_min_frames.unwrap_or(d.status_min_frames),
        reverse_rate_bps: o.reverse_rate.map(|r| r.0),
        status_share: o.status_share.unwrap_or(d.status_share),
        status_max_holes: o
            .status_max_holes
            .map_or(d.status_max_holes, |n| n as usize),
        round_end_status: o.round_end_status.unwrap_or(d.round_end_status),
        defer_status_to_round_end: o
            .defer_status_to_round_end
            .unwrap_or(d.defer_status_to_round_end),
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
            request_timeout_rtts: s.request_timeout_rtts,
            receive_rate: s.receive_rate,
            loss_filter: s.loss_filter,
            exclude_hole_delay: s.exclude_hole_delay,
            ..StfrcConfig::default()
        }),
        (None, Some(r)) => SaratogaRate::Fixed(r.0),
        // `saratoga` without a rate is rejected when the scenario is read.
        (None, None) => SaratogaRate::Fixed(0),
    };
    ProtocolConfig::Saratoga { config, rate }
}

/// A fresh Saratoga sender (fixed rate or STFRC) and receiver at `now`.
pub(super) fn instantiate(
    config: &SaratogaConfig,
    rate: &SaratogaRate,
    now: Instant,
) -> (AnySender, AnyReceiver) {
    let mut sender = match rate {
        SaratogaRate::Fixed(bps) => SaratogaSender::new(config.clone(), *bps, now),
        SaratogaRate::Stfrc(c) => SaratogaSender::with_rate_controller(
            config.clone(),
            Box::new(StfrcController::new(c.clone(), now)),
            now,
        ),
    };
    let mut receiver = SaratogaReceiver::new(config.clone(), now);
    // A simulated STATUS is the frame: it lists as many holes as the real
    // one (`status_max_holes`), the ones a message cannot hold passed
    // through the flow's own store and counted in the frame's size.
    let store = StatusHoleStore::shared(DEFAULT_HOLE_STORE_CAPACITY);
    sender.set_hole_store(store.clone());
    receiver.set_hole_store(store);
    (
        AnySender::Other(Box::new(OtherSender::Saratoga(sender))),
        AnyReceiver::Other(Box::new(OtherReceiver::Saratoga(receiver))),
    )
}
