//! The result of a run: what `summary.json` holds.

pub(crate) mod capture;
pub mod metrics;
pub mod numfmt;
pub mod pcap;
pub mod plot;
pub mod recovery;
pub mod series;

use satcc_proto::Instant;
use serde::{Deserialize, Serialize};

use crate::protocols::FriendlinessRole;
use crate::scenario::Protocol;

/// Per-flow results.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct FlowSummary {
    /// Flow index, in scenario order (a `count = 4` line gives 4 ids).
    pub id: u32,
    /// Label (the flow line's `name`, default the protocol).
    pub name: String,
    /// Protocol (`reno`, `newreno`, `sack`, `cbr`, ...).
    pub protocol: Protocol,
    /// Source node name.
    pub src: String,
    /// Destination node name.
    pub dst: String,
    /// Payload bytes delivered in order to the receiving application.
    pub delivered_bytes: u64,
    /// delivered_bytes * 8 / active time (from the flow's start, or
    /// `record.measure_from` if later, to its stop or the end of the run).
    pub goodput_bps: f64,
    /// This flow's share of the summed goodput of all flows.
    pub share: f64,
    /// Packets of this flow (both directions) dropped anywhere.
    pub drops: u64,
    /// Data packets sent (retransmissions included).
    pub packets_sent: u64,
    /// Retransmitted data packets (TCP).
    pub retransmits: u64,
    /// Retransmission timeouts (TCP).
    pub timeouts: u64,
    /// Mean RTT seen by the sender, seconds (TCP, if measured).
    pub mean_rtt_s: Option<f64>,
    /// Finite files completed.
    pub files_completed: u64,
    /// Mean file transfer time, seconds.
    pub mean_file_time_s: Option<f64>,
    /// TFRC/CCID3: feedback packets the receiver sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedback_packets: Option<u64>,
    /// TFRC/CCID3: feedback bytes on the wire.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedback_bytes: Option<u64>,
    /// TFRC/CCID3: the receiver's loss event rate p at the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss_event_rate: Option<f64>,
    /// TFRC/CCID3: when the sender left slow start (first loss reported),
    /// seconds from the start of the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slow_start_exit_s: Option<f64>,
    /// TFRC/CCID3: loss-recovery time, from the sender's rate trace (see
    /// [`recovery`]): for each loss event reaching the sender, the time
    /// until its rate X is back at the pre-loss level min(X, X_recv);
    /// absent if the sender never saw a loss event.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss_recovery: Option<recovery::LossRecoverySummary>,
    /// Wire bytes of data packets sent (headers and retransmissions
    /// included; dummies excluded).
    pub data_bytes_sent: u64,
    /// Wire bytes the receiver sent back (ACKs or feedback, dummy ACKs
    /// included).
    pub ack_bytes_sent: u64,
    /// Packets that reached an endpoint after their connection had been
    /// replaced by a fresh one (`new_connection` files) and were ignored.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stale_packets: u64,
    /// TCP-Peach: dummy-segment counters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dummy: Option<DummySummary>,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

/// TCP-Peach's dummy segments (paper 002 §III-A) of one flow.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct DummySummary {
    /// Dummy segments sent.
    pub packets_sent: u64,
    /// Their wire bytes.
    pub bytes_sent: u64,
    /// Wire bytes of the receiver's ACKs for dummies.
    pub ack_bytes: u64,
    /// Dummy ACKs that reached the sender.
    pub acks_received: u64,
    /// Dummy segments per data segment sent (paper 002 Fig. 12).
    pub overhead: f64,
    /// The receiver did not echo the mark and the sender fell back.
    pub fallback: bool,
}

/// Per-protocol-class aggregates.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ClassSummary {
    /// Protocol.
    pub protocol: Protocol,
    /// Number of flows.
    pub flows: u32,
    /// Summed goodput.
    pub goodput_bps: f64,
    /// Share of all flows' goodput.
    pub share: f64,
    /// Jain's index among the class's flows; `None` (null) when none of
    /// them delivered anything (0/0).
    pub jain: Option<f64>,
}

/// Per-link results.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct LinkSummary {
    /// Link name.
    pub name: String,
    /// Rate in bits per second.
    pub rate_bps: u64,
    /// Fraction of the run the link was transmitting.
    pub utilization: f64,
    /// Packets that arrived at the link.
    pub arrivals: u64,
    /// Packets dropped: queue overflow, RED, error model, TTL.
    pub drops: u64,
    /// Drops by reason.
    pub drops_queue: u64,
    /// Early drops by RED.
    pub drops_red: u64,
    /// Drops by the link error model.
    pub drops_error: u64,
    /// Packets whose TTL ran out at this link's far end.
    pub drops_ttl: u64,
    /// Drops by a router hook (REFWA) on this link.
    pub drops_hook: u64,
    /// Packets queued on this link when a topology snapshot took it down.
    pub drops_link_down: u64,
    /// Time-averaged queue length in packets.
    pub mean_queue_pkts: f64,
    /// Fraction of arrivals dropped.
    pub loss: f64,
}

/// The whole summary.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    /// Scenario name.
    pub scenario: String,
    /// Run seed.
    pub seed: u64,
    /// Simulated seconds.
    pub duration_s: f64,
    /// Events processed, time-series samples not counted: the same whether
    /// or not the run records series (files, `--json` alone).
    pub events: u64,
    /// Wall-clock seconds the run took: the only field that is not a pure
    /// function of scenario and seed, so `summary.json` on disk leaves it
    /// out (it goes to `run.json`) and `--json` on stdout includes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wall_s: Option<f64>,
    /// Flows.
    pub flows: Vec<FlowSummary>,
    /// Protocol classes.
    pub classes: Vec<ClassSummary>,
    /// Jain's index over all flows (equal shares); `None` (null) when no
    /// flow delivered anything (0/0).
    pub jain: Option<f64>,
    /// With TCP and non-TCP flows side by side: the TCP flows' aggregate
    /// goodput over their fair share of all flows' goodput (paper 000 §I,
    /// normalised by the delivered capacity so that header overhead and
    /// idle time cancel). 1 = TCP gets exactly its share.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub normalized_tcp_throughput: Option<f64>,
    /// With TCP and non-TCP flows: paper 004's F, E and FC over all flows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub friendliness: Option<FriendlinessSummary>,
    /// Monitored links.
    pub links: Vec<LinkSummary>,
    /// Packet conservation: sent = delivered + dropped + in flight.
    pub packets: PacketTotals,
    /// REFWA controllers, one per guarded link (absent without `[refwa]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refwa: Vec<crate::net::refwa::RefwaSummary>,
}

/// A flow's goodput over the measured part of a run (simulated or real):
/// the payload bytes delivered after `measure_from` (`delivered` less
/// `delivered_at_measure`, what had arrived by then), over the time the
/// flow was active then, from the later of `start` and `measure_from` to
/// the earlier of `stop` and `end`; 0 if it was never active then.
pub fn goodput_bps(
    delivered: u64,
    delivered_at_measure: u64,
    (start, stop): (Instant, Instant),
    measure_from: Instant,
    end: Instant,
) -> f64 {
    let active_s = stop
        .min(end)
        .saturating_since(start.max(measure_from))
        .as_secs_f64();
    let counted = delivered - delivered_at_measure.min(delivered);
    if active_s > 0.0 {
        counted as f64 * 8.0 / active_s
    } else {
        0.0
    }
}

/// The loss event rate a flow reports: receiver-based TFRC's is the
/// receiver's; STFRC, the sender-based TFRC of Saratoga, has it at the
/// sender (`sender_p`).
pub fn flow_loss_event_rate(
    protocol: Protocol,
    receiver_p: Option<f64>,
    sender_p: Option<f64>,
) -> Option<f64> {
    receiver_p.or_else(|| {
        protocol
            .loss_event_rate_at_sender()
            .then_some(sender_p)
            .flatten()
    })
}

/// What a run's flows add up to: shares, per-protocol classes, Jain's
/// index, and TCP against the rest. Shared by the simulator and the
/// real-time runner, so that both compute them the same way.
#[derive(Clone, Debug, PartialEq)]
pub struct Aggregates {
    /// Protocol classes, in protocol-name order.
    pub classes: Vec<ClassSummary>,
    /// Jain's index over all flows (`None` when all delivered nothing).
    pub jain: Option<f64>,
    /// TCP's normalised throughput (see [`Summary`]).
    pub normalized_tcp_throughput: Option<f64>,
    /// Paper 004's F, E and FC.
    pub friendliness: Option<FriendlinessSummary>,
}

/// Sets every flow's `share` and computes the [`Aggregates`]. `measured`
/// says, per flow, whether it counts in the TCP-against-the-rest figures
/// (a flow's `measured` key); CBR background never does.
pub fn aggregate(flows: &mut [FlowSummary], measured: &[bool]) -> Aggregates {
    use metrics::{jain_index, normalized_throughput};
    let total: f64 = flows.iter().map(|f| f.goodput_bps).sum();
    for f in flows.iter_mut() {
        f.share = if total > 0.0 {
            f.goodput_bps / total
        } else {
            0.0
        };
    }
    // Classes in protocol-name order (the order summary.json has always
    // had).
    let mut classes: std::collections::BTreeMap<&'static str, (Protocol, Vec<f64>)> =
        std::collections::BTreeMap::new();
    for f in flows.iter() {
        classes
            .entry(f.protocol.name())
            .or_insert_with(|| (f.protocol, Vec::new()))
            .1
            .push(f.goodput_bps);
    }
    let classes = classes
        .into_values()
        .map(|(protocol, g)| {
            let sum: f64 = g.iter().sum();
            ClassSummary {
                protocol,
                flows: g.len() as u32,
                goodput_bps: sum,
                share: if total > 0.0 { sum / total } else { 0.0 },
                jain: jain_index(&g, None),
            }
        })
        .collect();
    let all: Vec<f64> = flows.iter().map(|f| f.goodput_bps).collect();
    // TCP against the rate-controlled schemes (TFRC, CCID3, TFRCP);
    // CBR background and flows marked `measured = false` stay out.
    let (tcp, other): (Vec<&FlowSummary>, Vec<&FlowSummary>) = flows
        .iter()
        .zip(measured)
        .filter(|(f, &m)| m && f.protocol.friendliness_role() != FriendlinessRole::Background)
        .map(|(f, _)| f)
        .partition(|f| f.protocol.friendliness_role() == FriendlinessRole::Tcp);
    let tcp_g: Vec<f64> = tcp.iter().map(|f| f.goodput_bps).collect();
    let other_g: Vec<f64> = other.iter().map(|f| f.goodput_bps).collect();
    let (normalized_tcp_throughput, friendliness) = if tcp.is_empty() || other.is_empty() {
        (None, None)
    } else {
        (
            normalized_throughput(
                tcp_g.iter().sum(),
                tcp_g.iter().sum::<f64>() + other_g.iter().sum::<f64>(),
                tcp.len() as f64 / (tcp.len() + other.len()) as f64,
            ),
            metrics::friendliness(&other_g, &tcp_g).map(|x| FriendlinessSummary {
                f: x.f,
                e: x.e,
                fc: x.fc.is_finite().then_some(x.fc),
            }),
        )
    };
    Aggregates {
        classes,
        jain: jain_index(&all, None),
        normalized_tcp_throughput,
        friendliness,
    }
}

/// Packet conservation totals.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct PacketTotals {
    /// Packets injected by endpoints.
    pub sent: u64,
    /// Packets delivered to endpoints.
    pub delivered: u64,
    /// Packets dropped.
    pub dropped: u64,
    /// Packets still queued or on a wire at the end.
    pub in_flight: u64,
    /// `dropped`, by reason.
    pub drop_reasons: DropCounts,
}

/// Drops by reason, over the whole network.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct DropCounts {
    /// A queue was full (or pushed a low-priority packet out).
    pub queue_full: u64,
    /// RED dropped early.
    pub red_early: u64,
    /// A link's error model corrupted the packet.
    pub link_error: u64,
    /// The TTL ran out (a routing loop).
    pub ttl: u64,
    /// No route to the destination.
    pub no_route: u64,
    /// A router hook (REFWA) discarded it.
    pub hook: u64,
    /// Queued on a link a topology snapshot took down.
    pub link_down: u64,
}

impl DropCounts {
    /// Counts one drop for `why`.
    pub fn count(&mut self, why: crate::net::packet::DropReason) {
        use crate::net::packet::DropReason as R;
        *match why {
            R::QueueFull => &mut self.queue_full,
            R::RedEarly => &mut self.red_early,
            R::LinkError => &mut self.link_error,
            R::Ttl => &mut self.ttl,
            R::NoRoute => &mut self.no_route,
            R::Hook => &mut self.hook,
            R::LinkDown => &mut self.link_down,
        } += 1;
    }

    /// All drops.
    pub fn total(&self) -> u64 {
        self.queue_full
            + self.red_early
            + self.link_error
            + self.ttl
            + self.no_route
            + self.hook
            + self.link_down
    }
}

impl PacketTotals {
    /// sent = delivered + dropped + in flight.
    pub fn conserved(&self) -> bool {
        self.sent == self.delivered + self.dropped + self.in_flight
    }
}

/// Paper 004 §III-B ratios of non-TCP against TCP flows.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct FriendlinessSummary {
    /// F = mean non-TCP throughput / mean TCP throughput.
    pub f: f64,
    /// E = max(F, 1/F).
    pub e: f64,
    /// FC = max / min throughput among the non-TCP flows; `null` when one
    /// of them delivered nothing.
    pub fc: Option<f64>,
}
