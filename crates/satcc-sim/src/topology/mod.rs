//! Turning a scenario's topology into nodes, directed links and routes.

mod constellation;
pub(crate) mod snapshot;

use std::collections::VecDeque;

use satcc_proto::Duration;

use crate::scenario::{AccessSpec, ErrorSpec, LinkSpec, QueueSpec, Scenario, ShaperSpec, Topology};

/// One direction of a link, as built.
#[derive(Clone, Debug)]
pub struct LinkDef {
    /// Name in reports and `--pcap`.
    pub name: String,
    /// Transmitting node.
    pub from: u32,
    /// Receiving node.
    pub to: u32,
    /// Rate in bits per second.
    pub rate_bps: u64,
    /// Propagation delay.
    pub delay: Duration,
    /// Queue discipline.
    pub queue: QueueSpec,
    /// Error model.
    pub error: Option<ErrorSpec>,
    /// Token-bucket shaper in front of the link, if any.
    pub shaper: Option<ShaperSpec>,
    /// What the link is for.
    pub role: LinkRole,
    /// The second direction of its duplex pair (`NAME.rev`).
    pub is_reverse: bool,
    /// The link running the other way between the same two nodes (every
    /// link is built as one direction of a duplex pair).
    pub reverse: u32,
}

/// What a link is for, as the topology that built it says (so no code
/// has to guess from a name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkRole {
    /// A flow's own access link (or chain of them) on a built-in topology:
    /// left out of the default summary and of REFWA.
    Access,
    /// A shared link: a bottleneck, a satellite hop, a graph link.
    Core,
    /// A constellation's shared inter-satellite link (REFWA guards these).
    Isl,
}

/// A built network.
#[derive(Clone, Debug, Default)]
pub struct NetDef {
    /// Node names, indexed by node id.
    pub nodes: Vec<String>,
    /// Directed links.
    pub links: Vec<LinkDef>,
    /// (source, sink) node of each flow instance, in flow order.
    pub endpoints: Vec<(u32, u32)>,
}

impl NetDef {
    pub(crate) fn node(&mut self, name: String) -> u32 {
        self.nodes.push(name);
        (self.nodes.len() - 1) as u32
    }

    pub(crate) fn duplex(&mut self, a: u32, b: u32, name: &str, spec: &LinkSpec, role: LinkRole) {
        let fwd = self.links.len() as u32;
        self.links.push(LinkDef {
            name: name.to_string(),
            from: a,
            to: b,
            rate_bps: spec.rate.0,
            delay: spec.delay.0,
            // A shaper's `limit` is the byte FIFO in front of its bucket.
            queue: match &spec.shaper {
                Some(s) => QueueSpec::DropTail {
                    limit: None,
                    limit_bytes: Some(s.limit),
                },
                None => spec.queue.clone(),
            },
            error: spec.error.clone(),
            shaper: spec.shaper.clone(),
            role,
            is_reverse: false,
            reverse: fwd + 1,
        });
        self.links.push(LinkDef {
            name: format!("{name}.rev"),
            from: b,
            to: a,
            rate_bps: spec.reverse_rate.unwrap_or(spec.rate).0,
            delay: spec.delay.0,
            queue: spec
                .reverse_queue
                .clone()
                .unwrap_or_else(|| spec.queue.clone()),
            error: spec.reverse_error.clone(),
            shaper: None,
            role,
            is_reverse: true,
            reverse: fwd,
        });
    }

    fn access_pairs(&mut self, acc: &AccessSpec, left: u32, right: u32, n: usize) {
        for i in 0..n {
            let s = self.node(format!("s{i}"));
            let d = self.node(format!("d{i}"));
            let pick = |list: &[crate::scenario::Dur], default: Duration| {
                if list.is_empty() {
                    default
                } else {
                    list[i % list.len()].0
                }
            };
            let sdelay = pick(&acc.delays, acc.delay.0);
            let ddelay = pick(&acc.sink_delays, acc.sink_delay.unwrap_or(acc.delay).0);
            self.duplex(
                s,
                left,
                &format!("access.s{i}"),
                &acc.link(sdelay),
                LinkRole::Access,
            );
            self.duplex(
                right,
                d,
                &format!("access.d{i}"),
                &acc.link(ddelay),
                LinkRole::Access,
            );
            self.endpoints.push((s, d));
        }
    }

    /// Builds the network of `sc`, with one (source, sink) pair per flow
    /// instance on built-in topologies.
    pub fn build(sc: &Scenario) -> NetDef {
        let n_flows: usize = sc.flows.iter().map(|f| f.count as usize).sum();
        let mut net = NetDef::default();
        match &sc.topology {
            Topology::Dumbbell(d) => {
                let r1 = net.node("r1".into());
                let r2 = net.node("r2".into());
                net.duplex(r1, r2, "bottleneck", &d.bottleneck, LinkRole::Core);
                net.access_pairs(&d.access, r1, r2, n_flows);
            }
            Topology::Satellite(s) => {
                let a = net.node("gw_a".into());
                let sat = net.node("sat".into());
                let b = net.node("gw_b".into());
                net.duplex(a, sat, "uplink", &s.uplink, LinkRole::Core);
                net.duplex(sat, b, "downlink", &s.downlink, LinkRole::Core);
                net.access_pairs(&s.access, a, b, n_flows);
            }
            Topology::Graph(g) => {
                for n in &g.nodes {
                    net.node(n.name.clone());
                }
                let id = |net: &NetDef, name: &Option<String>| {
                    // Validated: every name exists.
                    net.nodes
                        .iter()
                        .position(|n| Some(n) == name.as_ref())
                        .unwrap_or(0) as u32
                };
                for l in &g.links {
                    let (a, b) = (id(&net, &l.from), id(&net, &l.to));
                    let name = l.name.clone().unwrap_or_else(|| {
                        format!("{}->{}", net.nodes[a as usize], net.nodes[b as usize])
                    });
                    net.duplex(a, b, &name, l, LinkRole::Core);
                }
                for f in &sc.flows {
                    let (s, d) = (id(&net, &f.src), id(&net, &f.dst));
                    for _ in 0..f.count {
                        net.endpoints.push((s, d));
                    }
                }
            }
            Topology::Constellation(c) => c.build(&sc.flows, &mut net),
        }
        net
    }

    /// Sum of the propagation delays along the static (fewest-hop) route
    /// from `a` to `b`, or `None` without a route.
    pub fn path_delay(&self, routes: &[u32], a: u32, b: u32) -> Option<Duration> {
        let n = self.nodes.len();
        let (mut v, mut sum, mut hops) = (a as usize, Duration::ZERO, 0usize);
        while v != b as usize {
            let li = *routes.get(v * n + b as usize)?;
            let l = self.links.get(li as usize)?;
            sum += l.delay;
            v = l.to as usize;
            hops += 1;
            if hops > n {
                return None;
            }
        }
        Some(sum)
    }

    /// Propagation-only round trip between `a` and `b` along the static
    /// routes (no serialisation, no queueing).
    pub fn base_rtt(&self, routes: &[u32], a: u32, b: u32) -> Option<Duration> {
        Some(self.path_delay(routes, a, b)? + self.path_delay(routes, b, a)?)
    }

    /// Static shortest-path routes by hop count (as ns-2's static routing):
    /// `table[node * n + dst]` is the link to take, `u32::MAX` if none.
    /// Ties go to the lowest-numbered link, so routes are deterministic.
    pub fn routes(&self) -> Vec<u32> {
        self.routes_over(&vec![true; self.links.len()])
    }

    /// Routes as [`NetDef::routes`], over the links with `up[i]` only (a
    /// snapshot of a dynamic topology).
    pub fn routes_over(&self, up: &[bool]) -> Vec<u32> {
        self.routes_to(up, &vec![true; self.nodes.len()])
    }

    fn routes_to(&self, up: &[bool], is_dst: &[bool]) -> Vec<u32> {
        let n = self.nodes.len();
        let mut table = vec![u32::MAX; n * n];
        // Incoming links per node, for a BFS outward from each destination.
        let mut incoming: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (i, l) in self.links.iter().enumerate() {
            if up.get(i).copied().unwrap_or(true) {
                incoming[l.to as usize].push(i as u32);
            }
        }
        let mut dist = vec![u32::MAX; n];
        let mut q = VecDeque::new();
        for dst in (0..n).filter(|&d| is_dst[d]) {
            dist.iter_mut().for_each(|d| *d = u32::MAX);
            dist[dst] = 0;
            q.clear();
            q.push_back(dst);
            while let Some(v) = q.pop_front() {
                for &li in &incoming[v] {
                    let u = self.links[li as usize].from as usize;
                    if dist[u] == u32::MAX {
                        dist[u] = dist[v] + 1;
                        table[u * n + dst] = li;
                        q.push_back(u);
                    }
                }
            }
        }
        table
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graph_routes_take_fewest_hops() {
        let sc = Scenario::from_toml_str(
            r#"
duration = "1s"
[topology]
kind = "graph"
nodes = [{name="a"},{name="b"},{name="c"},{name="d"}]
links = [
  {from="a", to="b", rate="1Mbps", delay="1ms"},
  {from="b", to="c", rate="1Mbps", delay="1ms"},
  {from="c", to="d", rate="1Mbps", delay="1ms"},
  {from="a", to="d", rate="1Mbps", delay="100ms"},
]
[[flows]]
protocol = "newreno"
src = "a"
dst = "c"
"#,
            "t.toml",
            &[],
        )
        .unwrap();
        let net = NetDef::build(&sc);
        let r = net.routes();
        let n = net.nodes.len();
        let link = |u: usize, d: usize| &net.links[r[u * n + d] as usize];
        assert_eq!(link(0, 2).name, "a->b");
        assert_eq!(link(1, 2).name, "b->c");
        // a -> d directly (one hop) despite the longer delay.
        assert_eq!(link(0, 3).name, "a->d");
        assert_eq!(link(3, 0).name, "a->d.rev");
        assert_eq!(net.endpoints, vec![(0, 2)]);
    }
}
