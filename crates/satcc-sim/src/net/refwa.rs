//! REFWA (paper 003) in the simulator: a [`LinkHook`] that feeds a
//! satellite's [`Refwa`] controller and writes its window into ACKs.
//!
//! The controller guarding a link `L` (the satellite's outgoing ISL in the
//! data direction) sees the data packets entering `L` and the ACKs of the
//! same flows on their way back, which travel on `L`'s reverse link. So one
//! controller is shared (`Rc<RefCell<_>>`) by two hooks: on `L` it learns
//! from data packets (§III-A: TTL → H_f, the flow table), on `L.rev` it
//! rewrites ACKs (§III-C: RWND := min(RWND, F_k), never raised).
//!
//! Hop counts. Eq. 1, RTT ≈ 2·(H_b + H_f + 2)·ISL_delay, counts the routers
//! that decremented the TTL before the packet reached the guarding router:
//! a path of h links has h−1 routers, the guarding one among them, so
//! H_f + H_b + 2 = h. The simulator decrements the TTL as a packet arrives
//! at a router, before it enters the next link, so a data packet entering
//! `L` already carries the guarding router's own decrement: the hook reports
//! its TTL plus one. The ACK hook runs as the ACK enters `L.rev` at the far
//! satellite, whose decrement the ACK carries and the guarding router's it
//! does not yet: its TTL is reported as it is. It also reports the queue of
//! `L`, not of `L.rev` (Υ's Q(n−1) is the guarded link's queue, eq. 2).
//! With the constellation's equal link delays the estimate is then exact
//! up to queueing: 160 ms for paper 003 Fig. 1(a)'s flows.

use std::cell::RefCell;
use std::rc::Rc;

use satcc_proto::refwa::{FlowKey, Refwa, RefwaConfig, RefwaStats};
use satcc_proto::rng::Rng;
use satcc_proto::Instant;
use serde::{Deserialize, Serialize};

use crate::error::SimError;
use crate::net::hook::{HookVerdict, LinkHook, LinkView};
use crate::net::packet::{Message, Packet, INITIAL_TTL};
use crate::scenario::{Scenario, Topology};

/// The random stream of guarded link `i` is `STREAM_REFWA + i` (sim.rs
/// uses streams 1–3 << 32 for links, queues and flows).
const STREAM_REFWA: u64 = 8 << 32;

/// One guarded link's controller in `summary.json`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RefwaSummary {
    /// The guarded link (data direction).
    pub link: String,
    /// Recomputations of Υ and F_k.
    pub recomputations: u64,
    /// Arithmetic operations of the last recomputation (App. II).
    pub ops_last: u64,
    /// Most arithmetic operations of any recomputation.
    pub ops_max: u64,
    /// ACKs whose window the controller lowered.
    pub acks_rewritten: u64,
    /// Υ at the end, packets.
    pub upsilon: f64,
    /// RTT_avg at the end, seconds.
    pub rtt_avg_s: f64,
    /// Active flows at the end.
    pub active_flows: usize,
    /// Active hop-count groups at the end.
    pub groups: usize,
}

impl RefwaSummary {
    fn new(link: &str, s: &RefwaStats) -> Self {
        RefwaSummary {
            link: link.to_string(),
            recomputations: s.recomputations,
            ops_last: s.ops_last,
            ops_max: s.ops_max,
            acks_rewritten: s.acks_rewritten,
            upsilon: s.upsilon,
            rtt_avg_s: s.rtt_avg.as_secs_f64(),
            active_flows: s.active_flows,
            groups: s.groups,
        }
    }
}

type Shared = Rc<RefCell<Refwa>>;

/// The hook on one link: the controller it learns data from (the link's
/// own) and the one it rewrites ACKs for (the reverse link's).
#[derive(Debug, Default)]
pub struct RefwaHook {
    data: Option<Shared>,
    acks: Option<Shared>,
}

/// The 5-tuple of a flow's data direction: node ids stand for addresses,
/// the flow id for both ports (every flow instance has its own), TCP.
fn key(src: u32, dst: u32, flow: u32) -> FlowKey {
    let port = (flow & 0xffff) as u16;
    FlowKey {
        src,
        dst,
        sport: port,
        dport: port,
        proto: 6,
    }
}

impl LinkHook for RefwaHook {
    fn on_packet(&mut self, now: Instant, pkt: &mut Packet, link: &LinkView) -> HookVerdict {
        let (src, dst, flow, ttl) = (pkt.src, pkt.dst, pkt.flow, pkt.ttl);
        match &mut pkt.payload {
            Message::TcpData(_) => {
                if let Some(r) = &self.data {
                    r.borrow_mut().on_data(
                        now,
                        key(src, dst, flow),
                        ttl.saturating_add(1),
                        link.queue_pkts as u64,
                    );
                }
            }
            Message::TcpAck(a) => {
                if let Some(r) = &self.acks {
                    let q = link.reverse_queue_pkts.unwrap_or(0) as u64;
                    let w = r
                        .borrow_mut()
                        .on_ack(now, key(dst, src, flow), ttl, a.wnd, q);
                    // §III-C: the window is only ever lowered.
                    a.wnd = w.min(a.wnd);
                }
            }
            _ => {}
        }
        HookVerdict::Pass
    }
}

/// What [`install`] needs to know of a built link.
pub(crate) struct LinkInfo<'a> {
    pub name: &'a str,
    pub rate_bps: u64,
    pub delay: satcc_proto::Duration,
    pub role: crate::topology::LinkRole,
    pub is_reverse: bool,
    pub limit_pkts: Option<u64>,
    pub reverse: Option<usize>,
}

/// The controllers of a run: per guarded link, its name and controller,
/// plus the hook each link index gets. Empty when `[refwa]` is absent or
/// disabled. An unknown link name is an error naming `refwa.links[i]`.
#[allow(clippy::type_complexity)]
pub(crate) fn build(
    sc: &Scenario,
    links: &[LinkInfo<'_>],
) -> Result<(Vec<(String, Shared)>, Vec<(usize, RefwaHook)>), SimError> {
    let Some(spec) = sc.refwa.as_ref().filter(|r| r.enabled) else {
        return Ok((Vec::new(), Vec::new()));
    };
    let constellation = match &sc.topology {
        Topology::Constellation(c) => Some(c),
        _ => None,
    };
    let guarded: Vec<usize> = match (&spec.links, constellation) {
        (Some(names), _) => {
            let mut v = Vec::new();
            for (k, n) in names.iter().enumerate() {
                let i = links
                    .iter()
                    .position(|l| l.name == n)
                    .ok_or_else(|| SimError {
                        field: format!("refwa.links[{k}]"),
                        message: format!("unknown link '{n}'"),
                    })?;
                if !v.contains(&i) {
                    v.push(i);
                }
            }
            v
        }
        (None, Some(_)) => (0..links.len())
            .filter(|&i| {
                // A constellation's shared ISLs, data direction.
                let l = &links[i];
                l.role == crate::topology::LinkRole::Isl && !l.is_reverse
            })
            .collect(),
        (None, None) => {
            return Err(SimError {
                field: "refwa.links".into(),
                message: "required outside constellation topologies".into(),
            })
        }
    };
    let pkt_bytes = spec
        .packet_bytes
        .or(constellation.map(|c| c.packet_bytes))
        .unwrap_or(1000);
    let mut ctrls = Vec::new();
    let mut hooks: Vec<(usize, RefwaHook)> = Vec::new();
    let hook_of = |hooks: &mut Vec<(usize, RefwaHook)>, li: usize| -> usize {
        match hooks.iter().position(|(i, _)| *i == li) {
            Some(k) => k,
            None => {
                hooks.push((li, RefwaHook::default()));
                hooks.len() - 1
            }
        }
    };
    for &li in &guarded {
        let l = &links[li];
        // Eq. 2's ψ(B − Q) needs the buffer in packets.
        let Some(buffer_pkts) = l.limit_pkts else {
            return Err(SimError {
                field: "refwa.links".into(),
                message: format!(
                    "link '{}' has no packet limit (REFWA needs its buffer B in packets)",
                    l.name
                ),
            });
        };
        let cfg = RefwaConfig {
            phi: spec.phi,
            psi: spec.psi,
            alpha: spec.alpha,
            isl_delay: spec
                .isl_delay
                .map(|d| d.0)
                .or(constellation.map(|c| c.isl_delay.0))
                .unwrap_or(l.delay),
            bandwidth_bps: l.rate_bps,
            buffer_pkts,
            packet_bytes: pkt_bytes,
            initial_ttl: INITIAL_TTL,
            rtt_error: spec.rtt_error,
            seed: Rng::stream(sc.seed, STREAM_REFWA + li as u64).next_u64(),
            rtt_avg_gain: spec.rtt_avg_gain,
            delta: spec.delta.map(|d| d.0),
        };
        let r: Shared = Rc::new(RefCell::new(Refwa::new(cfg, Instant::ZERO)));
        let k = hook_of(&mut hooks, li);
        hooks[k].1.data = Some(r.clone());
        if let Some(rev) = l.reverse {
            let k = hook_of(&mut hooks, rev);
            hooks[k].1.acks = Some(r.clone());
        }
        ctrls.push((l.name.to_string(), r));
    }
    Ok((ctrls, hooks))
}

/// The summary rows of a run's controllers.
pub(crate) fn summaries(ctrls: &[(String, Shared)]) -> Vec<RefwaSummary> {
    ctrls
        .iter()
        .map(|(n, r)| RefwaSummary::new(n, &r.borrow().stats()))
        .collect()
}
