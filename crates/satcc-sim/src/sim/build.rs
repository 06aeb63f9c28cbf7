//! Building a run from a validated scenario: links, hooks, flows and the
//! first events.

use std::collections::VecDeque;

use satcc_proto::rng::Rng;
use satcc_proto::{Duration, Instant};

use super::flows::{Flow, TxBytes};
use super::links::{Link, PacketStore};
use super::{RunOptions, Sim, STREAM_FLOW, STREAM_JITTER};
use crate::engine::{AppAction, Event, EventQueue};
use crate::error::SimError;
use crate::net::routing::Routes;
use crate::protocols::ProtocolConfig;
use crate::report::series::Series;
use crate::report::{DropCounts, PacketTotals};
use crate::scenario::{FlowSpec, Scenario};
use crate::topology::{LinkRole, NetDef};

/// A flow's start: `start` plus a uniform draw over `start_spread`, the
/// first draw of the flow's own random stream.
fn flow_start(spec: &FlowSpec, rng: &mut Rng) -> Duration {
    let spread = spec.start_spread.0.as_nanos();
    let offset = if spread > 0 { rng.below(spread + 1) } else { 0 };
    spec.start.0 + Duration(offset)
}

/// The start time of every flow instance of `sc`, in flow order, exactly as
/// a run draws them (the ns-2 export uses the same times).
pub fn flow_starts(sc: &Scenario) -> Vec<Duration> {
    let mut out = Vec::new();
    for spec in &sc.flows {
        for _ in 0..spec.count {
            let id = out.len() as u64;
            let mut rng = Rng::stream(sc.seed, STREAM_FLOW + id);
            out.push(flow_start(spec, &mut rng));
        }
    }
    out
}

impl Sim {
    /// Builds the network and flows of a validated scenario.
    pub fn new(sc: &Scenario, opts: &RunOptions) -> Result<Sim, SimError> {
        let net = NetDef::build(sc);
        let routes = Routes::build(&net, &vec![true; net.links.len()]);
        let mut links: Vec<Link> = Vec::with_capacity(net.links.len());
        for (i, l) in net.links.iter().enumerate() {
            let mut link = Link::new(l, sc.seed, i);
            link.reverse = Some(l.reverse);
            links.push(link);
        }
        let monitored: Vec<usize> = match &sc.record.links {
            Some(names) => {
                let mut v = Vec::new();
                for (k, name) in names.iter().enumerate() {
                    let i = links
                        .iter()
                        .position(|l| &l.name == name)
                        .ok_or_else(|| SimError {
                            field: format!("record.links[{k}]"),
                            message: format!(
                                "unknown link '{name}' (links: {})",
                                link_names_hint(&links)
                            ),
                        })?;
                    v.push(i);
                }
                v
            }
            None => (0..links.len())
                .filter(|&i| links[i].role != LinkRole::Access)
                .collect(),
        };
        let mut pcap = Vec::new();
        for name in &opts.pcap_links {
            let i = links
                .iter()
                .position(|l| &l.name == name)
                .ok_or_else(|| SimError {
                    field: "--pcap".into(),
                    message: format!("unknown link '{name}' (links: {})", link_names_hint(&links)),
                })?;
            let dir = opts.pcap_dir.clone().unwrap_or_else(|| ".".into());
            let cap =
                crate::report::capture::LinkCapture::create(&dir, name).map_err(|e| SimError {
                    field: "--pcap".into(),
                    message: format!("cannot write capture for '{name}': {e}"),
                })?;
            pcap.push((i, cap));
        }
        let mut sim = Sim {
            name: sc.name.clone().unwrap_or_else(|| "scenario".into()),
            seed: sc.seed,
            duration: sc.duration.0,
            now: Instant::ZERO,
            events: EventQueue::new(),
            links,
            flows: Vec::new(),
            nodes: net.nodes.clone(),
            routes,
            packets: PacketStore::default(),
            next_uid: 0,
            totals: PacketTotals::default(),
            drop_reasons: DropCounts::default(),
            interval: sc.record.interval.0,
            measure_from: Instant::ZERO + sc.record.measure_from.0,
            monitored,
            series: None,
            samples: 0,
            pcap,
            link_up: vec![true; net.links.len()],
            snapshots: crate::topology::snapshot::resolve(&sc.snapshots, &net.links)?,
            net,
            refwa: Vec::new(),
        };
        for (k, s) in sim.snapshots.iter().enumerate() {
            sim.events.push(s.at, Event::Snapshot(k as u32));
        }
        let infos: Vec<crate::net::refwa::LinkInfo<'_>> = sim
            .links
            .iter()
            .map(|l| crate::net::refwa::LinkInfo {
                name: &l.name,
                rate_bps: l.rate_bps,
                delay: l.delay,
                role: l.role,
                is_reverse: l.is_reverse,
                limit_pkts: l.queue.limit_pkts(),
                reverse: l.reverse.map(|r| r as usize),
            })
            .collect();
        let (ctrls, hooks) = crate::net::refwa::build(sc, &infos)?;
        for (li, h) in hooks {
            sim.links[li].set_hook(Box::new(h));
        }
        if opts.wire_round_trip {
            for l in &mut sim.links {
                if l.hook.is_none() {
                    l.set_hook(Box::new(crate::net::hook::WireRoundTrip::default()));
                }
            }
        }
        sim.refwa = ctrls;
        let mut id = 0u32;
        let graph = matches!(sc.topology, crate::scenario::Topology::Graph(_));
        for (fi, spec) in sc.flows.iter().enumerate() {
            for _ in 0..spec.count {
                let (src, dst) = sim.net.endpoints[id as usize];
                let base_rtt = sim.routes.base_rtt(&sim.net, id);
                // A graph flow with no path would run at 0 b/s without a
                // word; snapshots may bring a path up later, so only a
                // static graph is refused.
                if graph && base_rtt.is_none() && sc.snapshots.is_empty() {
                    return Err(SimError {
                        field: format!("flows[{fi}].dst"),
                        message: format!(
                            "node '{}' cannot be reached from '{}': no path of links joins them",
                            spec.dst.as_deref().unwrap_or("?"),
                            spec.src.as_deref().unwrap_or("?")
                        ),
                    });
                }
                let flow = make_flow(id, spec, (src, dst), base_rtt, sc);
                sim.events.push(
                    flow.start,
                    Event::App {
                        flow: id,
                        action: AppAction::Start,
                    },
                );
                if flow.stop < Instant::ZERO + sim.duration {
                    sim.events.push(
                        flow.stop,
                        Event::App {
                            flow: id,
                            action: AppAction::Stop,
                        },
                    );
                }
                sim.flows.push(flow);
                id += 1;
            }
        }
        // Links whose departures are scheduled at enqueue (`Link::eager`).
        if sim.snapshots.is_empty() && sim.links.iter().all(|l| l.hook.is_none()) {
            for (i, l) in sim.links.iter_mut().enumerate() {
                l.eager = l.plain && l.queue.is_fifo() && !sim.pcap.iter().any(|(c, _)| *c == i);
            }
            sim.fold_hops();
            sim.fold_injects();
        }
        if opts.series {
            let mut series = Series::new(
                sim.flows.iter().map(|f| {
                    (
                        format!("{}#{}", f.name, f.id),
                        f.protocol.name().to_string(),
                    )
                }),
                sim.monitored.iter().map(|&li| sim.links[li].name.clone()),
            );
            // One sample per interval up to the end: reserved once (the
            // memory estimate already counts it), never grown by copying.
            let samples = sim.duration.as_nanos() / sim.interval.as_nanos().max(1);
            let samples = samples.min(1 << 24) as usize;
            if opts.series_streamed {
                series.reserve_plotted(samples);
            } else {
                series.reserve(samples);
            }
            sim.series = Some(series);
            sim.events.push(Instant::ZERO + sim.interval, Event::Sample);
        }
        if sim.measure_from > Instant::ZERO {
            sim.events.push(sim.measure_from, Event::MeasureStart);
        }
        Ok(sim)
    }
}

fn make_flow(
    id: u32,
    spec: &FlowSpec,
    (src, dst): (u32, u32),
    base_rtt: Option<Duration>,
    sc: &Scenario,
) -> Flow {
    let mut rng = Rng::stream(sc.seed, STREAM_FLOW + u64::from(id));
    let start = Instant::ZERO + flow_start(spec, &mut rng);
    let stop = spec
        .stop
        .map_or(Instant::ZERO + sc.duration.0, |d| Instant::ZERO + d.0);
    let config = ProtocolConfig::from_spec(spec, base_rtt);
    let (sender, receiver) = config.instantiate(Instant::ZERO, &mut rng);
    Flow {
        id,
        name: spec
            .name
            .clone()
            .unwrap_or_else(|| spec.protocol.name().to_string()),
        protocol: spec.protocol,
        src,
        dst,
        header: spec.wire_header_bytes(),
        mss: spec.mss,
        measured: spec.measured,
        start,
        stop,
        active: false,
        sender,
        receiver,
        config: Box::new(config),
        wake: [Instant::MAX; 2],
        app: spec.app.clone(),
        rate_bps: spec.options.rate().map_or(0, |r| r.0),
        rng,
        files: VecDeque::new(),
        pushed: 0,
        acked: 0,
        files_started: 0,
        files_done: 0,
        file_time_sum: 0.0,
        packets_sent: 0,
        drops: 0,
        tx: TxBytes::default(),
        conn: 0,
        past: Default::default(),
        stale: 0,
        send_jitter: spec.send_jitter.map_or(Duration::ZERO, |d| d.0),
        host_jitter: spec.host_jitter_bound(),
        host_last: Instant::ZERO,
        inject_link: u32::MAX,
        injects_pending: 0,
        jitter_rng: Rng::stream(sc.seed, STREAM_JITTER + u64::from(id)),
        delivered_at_measure: 0,
        slow_start_exit: None,
        recovery: spec
            .protocol
            .has_loss_recovery_metric()
            .then(|| Box::new(crate::report::recovery::LossRecovery::new())),
    }
}

fn link_names_hint(links: &[Link]) -> String {
    let names: Vec<&str> = links
        .iter()
        .filter(|l| l.role != LinkRole::Access)
        .map(|l| l.name.as_str())
        .collect();
    let mut s = names.join(", ");
    // Access links come one (or a chain) per flow: name their patterns
    // (`access.sN`, `up.sN`, `isl.fN.inK`, ...) rather than list thousands.
    let mut patterns: Vec<String> = Vec::new();
    for l in links
        .iter()
        .filter(|l| l.role == LinkRole::Access && !l.is_reverse)
    {
        let base = l.name.as_str();
        let mut p = String::new();
        let (mut runs, mut in_digits) = (0, false);
        for c in base.chars() {
            if !c.is_ascii_digit() {
                p.push(c);
            } else if !in_digits {
                p.push(if runs == 0 { 'N' } else { 'K' });
                runs += 1;
            }
            in_digits = c.is_ascii_digit();
        }
        if !patterns.contains(&p) {
            patterns.push(p);
        }
    }
    if !patterns.is_empty() {
        s.push_str(&format!(", {} (+ .rev)", patterns.join(", ")));
    }
    s
}
