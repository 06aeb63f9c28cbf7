//! LEO constellation topologies: the three shapes of paper 003 Fig. 1.
//!
//! A *core* chain of satellites `c0 → c1 → …` joined by inter-satellite
//! links (ISLs) carries every flow; the bottleneck ISLs of the core are named
//! `isl.b0` (and `isl.b1`), the others `isl.cJ` (`cJ → cJ+1`). Each flow
//! instance `I` has its own ground terminals `sI` and `dI`, an up-link
//! `up.sI` and a down-link `down.dI`. A flow whose RTT group crosses more
//! satellites than the core reaches it through its own ingress chain
//! `fI.in1 → … → fI.inP` and leaves through `fI.out1 → … → fI.outP` (ISLs
//! `isl.fI.inK`, `isl.fI.outK`), so paper 003 §IV's "senders/receivers
//! traverse different sets of satellites before entering/leaving the
//! bottleneck" holds and only core ISLs are shared. The data direction is forward; ACKs take the `.rev`
//! links back along the same path (REFWA needs both on one path, §VI).
//!
//! Shapes (paper 003 §IV–V):
//! - `single` (Fig. 1(a)): a three-satellite core; every flow crosses it, so
//!   all RTTs are 2·4 links·20 ms = 160 ms.
//! - `rtt-groups` (Fig. 1(b)): the same core; group `i` (1-based) crosses
//!   2i+1 satellites, RTT (2i+2)·40 ms with the default delays (§V-C).
//! - `two-bottlenecks` (Fig. 1(c)): a five-satellite core with four ISLs
//!   L1…L4 (`isl.b0`, `isl.c1`, `isl.b1`, `isl.c3`). Group 1 crosses all
//!   four, group 2 only L1, group 3 L3 and L4 (§V-F).

use satcc_proto::Duration;
use serde::Deserialize;

use crate::scenario::{check_queue, Dur, ErrorSpec, FlowSpec, LinkSpec, QueueSpec, Rate};
use crate::topology::{LinkRole, NetDef};

/// Which of paper 003's Fig. 1 networks.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    /// Fig. 1(a): single bottleneck, equal RTTs.
    Single,
    /// Fig. 1(b): single bottleneck, groups of different RTTs.
    RttGroups,
    /// Fig. 1(c): two bottlenecks shared by three groups.
    TwoBottlenecks,
}

/// `[topology] kind = "constellation"`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Constellation {
    /// The network shape.
    pub shape: Shape,
    /// Rate of every ISL (default `T2`, 10 Mb/s).
    #[serde(default = "Constellation::default_isl_rate")]
    pub isl_rate: Rate,
    /// One-way delay of every ISL (default 20 ms, paper 003 §IV).
    #[serde(default = "Constellation::default_delay")]
    pub isl_delay: Dur,
    /// Rate of every up-link and down-link (default 10 Mb/s, §IV).
    #[serde(default = "Constellation::default_updown_rate")]
    pub updown_rate: Rate,
    /// One-way delay of up- and down-links (default `isl_delay`, which
    /// gives §V-C's RTT (2i+2)·40 ms).
    #[serde(default)]
    pub updown_delay: Option<Dur>,
    /// `rtt-groups`: number of RTT groups (default 4, §V-C).
    #[serde(default)]
    pub groups: Option<u32>,
    /// ISL buffer in packets (default: the bottleneck's bandwidth-delay
    /// product at the mean RTT of the shape's groups, §IV).
    #[serde(default)]
    pub buffer: Option<u32>,
    /// Packet size used for the default buffer, bytes (default 1000, §IV's
    /// 1 kB packets).
    #[serde(default = "Constellation::default_packet_bytes")]
    pub packet_bytes: u32,
    /// Queue of every ISL, both directions (default Drop-Tail of `buffer`
    /// packets, §IV).
    #[serde(default)]
    pub queue: Option<QueueSpec>,
    /// Queue of up- and down-links, both directions (default Drop-Tail 1000,
    /// so a sender's burst is not lost before it reaches the satellites).
    #[serde(default = "Constellation::default_updown_queue")]
    pub updown_queue: QueueSpec,
    /// Error model of every up-link's data direction (§V-G).
    #[serde(default)]
    pub uplink_error: Option<ErrorSpec>,
    /// Error model of every down-link's data direction.
    #[serde(default)]
    pub downlink_error: Option<ErrorSpec>,
    /// More duplex links between built nodes (`from`, `to` and `name` as in
    /// a graph topology), e.g. the target of a handover; `[[snapshots]]`
    /// switch them on and off.
    #[serde(default)]
    pub extra_links: Vec<LinkSpec>,
}

/// Where a group's flows join and leave the core, and how many private
/// satellites they cross on each side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct GroupPath {
    enter: usize,
    exit: usize,
    private: usize,
}

impl Constellation {
    fn default_isl_rate() -> Rate {
        Rate(10_000_000)
    }
    fn default_delay() -> Dur {
        Dur(Duration::from_millis(20))
    }
    fn default_updown_rate() -> Rate {
        Rate(10_000_000)
    }
    fn default_packet_bytes() -> u32 {
        1000
    }
    fn default_updown_queue() -> QueueSpec {
        QueueSpec::DropTail {
            limit: Some(1000),
            limit_bytes: None,
        }
    }

    /// Number of RTT groups; flows name theirs with `group = 1..=N`.
    pub fn group_count(&self) -> u32 {
        match self.shape {
            Shape::Single => 1,
            Shape::RttGroups => self.groups.unwrap_or(4),
            Shape::TwoBottlenecks => 3,
        }
    }

    fn core_len(&self) -> usize {
        match self.shape {
            Shape::Single | Shape::RttGroups => 3,
            Shape::TwoBottlenecks => 5,
        }
    }

    /// Core ISL indices that are bottlenecks, in `isl.bK` order.
    fn bottlenecks(&self) -> &'static [usize] {
        match self.shape {
            Shape::Single | Shape::RttGroups => &[0],
            Shape::TwoBottlenecks => &[0, 2],
        }
    }

    fn path(&self, group: u32) -> GroupPath {
        let g = group.max(1) as usize;
        match self.shape {
            Shape::Single => GroupPath {
                enter: 0,
                exit: 2,
                private: 0,
            },
            // §V-C: group i crosses 2i+1 satellites: the three of the core
            // and i-1 private ones on each side.
            Shape::RttGroups => GroupPath {
                enter: 0,
                exit: 2,
                private: g - 1,
            },
            // §V-F: group 1 shares L1 with group 2 and L3 with group 3.
            Shape::TwoBottlenecks => match g {
                1 => GroupPath {
                    enter: 0,
                    exit: 4,
                    private: 0,
                },
                2 => GroupPath {
                    enter: 0,
                    exit: 1,
                    private: 0,
                },
                _ => GroupPath {
                    enter: 2,
                    exit: 4,
                    private: 0,
                },
            },
        }
    }

    fn updown(&self) -> Duration {
        self.updown_delay.unwrap_or(self.isl_delay).0
    }

    /// Round-trip propagation delay of a group's flows.
    pub fn group_rtt(&self, group: u32) -> Duration {
        let p = self.path(group);
        let sats = (p.exit - p.enter + 1 + 2 * p.private) as u64;
        let one_way = self.updown().as_nanos() * 2 + self.isl_delay.0.as_nanos() * (sats - 1);
        Duration(2 * one_way)
    }

    /// ISL buffer in packets: `buffer`, else the bottleneck bandwidth-delay
    /// product at the mean RTT of the groups, rounded up (§IV: "buffers
    /// equal to the bandwidth-delay product of the bottleneck link").
    pub fn buffer_pkts(&self) -> u32 {
        if let Some(b) = self.buffer {
            return b;
        }
        let n = u128::from(self.group_count().max(1));
        let rtt_sum: u128 = (1..=self.group_count().max(1))
            .map(|g| u128::from(self.group_rtt(g).as_nanos()))
            .sum();
        let bits = u128::from(self.isl_rate.0) * rtt_sum;
        let per_pkt = 8 * u128::from(self.packet_bytes.max(1)) * 1_000_000_000 * n;
        bits.div_ceil(per_pkt).clamp(1, u128::from(u32::MAX)) as u32
    }

    fn isl_queue(&self) -> QueueSpec {
        self.queue.clone().unwrap_or(QueueSpec::DropTail {
            limit: Some(self.buffer_pkts()),
            limit_bytes: None,
        })
    }

    fn link(
        &self,
        rate: Rate,
        delay: Duration,
        queue: QueueSpec,
        err: Option<ErrorSpec>,
    ) -> LinkSpec {
        LinkSpec {
            from: None,
            to: None,
            name: None,
            rate,
            reverse_rate: None,
            delay: Dur(delay),
            queue,
            reverse_queue: None,
            error: err,
            reverse_error: None,
        }
    }

    /// Checks what types cannot; field paths are relative to `topology`.
    pub fn validate(&self, flows: &[FlowSpec]) -> Result<(), (String, String)> {
        let at = |f: &str| format!("topology.{f}");
        if self.groups.is_some() && self.shape != Shape::RttGroups {
            return Err((at("groups"), "applies to shape \"rtt-groups\" only".into()));
        }
        if self.groups.is_some_and(|g| !(1..=64).contains(&g)) {
            return Err((
                at("groups"),
                format!("{} outside 1..=64", self.group_count()),
            ));
        }
        if self.isl_delay.0 == Duration::ZERO {
            return Err((at("isl_delay"), "must be greater than zero".into()));
        }
        if self.buffer == Some(0) {
            return Err((at("buffer"), "must be at least 1 packet".into()));
        }
        if self.packet_bytes == 0 {
            return Err((at("packet_bytes"), "must be at least 1".into()));
        }
        if let Some(q) = &self.queue {
            check_queue(q, &at("queue"))?;
        }
        check_queue(&self.updown_queue, &at("updown_queue"))?;
        let n = self.group_count();
        for (i, f) in flows.iter().enumerate() {
            if let Some(g) = f.group {
                if !(1..=n).contains(&g) {
                    return Err((
                        format!("flows[{i}].group"),
                        format!(
                            "{g} outside 1..={n} (shape {:?} has {n} groups)",
                            self.shape
                        ),
                    ));
                }
            }
        }
        let mut net = NetDef::default();
        self.build_base(flows, &mut net);
        for (i, l) in self.extra_links.iter().enumerate() {
            for (f, v) in [("from", &l.from), ("to", &l.to)] {
                let field = format!("topology.extra_links[{i}].{f}");
                match v {
                    None => return Err((field, "missing (extra links name both ends)".into())),
                    Some(n) if !net.nodes.contains(n) => {
                        return Err((field, format!("unknown node '{n}'")))
                    }
                    _ => {}
                }
            }
            if let Some(q) = &l.reverse_queue {
                check_queue(q, &format!("topology.extra_links[{i}].reverse_queue"))?;
            }
            check_queue(&l.queue, &format!("topology.extra_links[{i}].queue"))?;
        }
        Ok(())
    }

    fn build_base(&self, flows: &[FlowSpec], net: &mut NetDef) {
        let isl = |q: QueueSpec| self.link(self.isl_rate, self.isl_delay.0, q, None);
        let core: Vec<u32> = (0..self.core_len())
            .map(|j| net.node(format!("c{j}")))
            .collect();
        for j in 0..core.len() - 1 {
            let name = match self.bottlenecks().iter().position(|&b| b == j) {
                Some(k) => format!("isl.b{k}"),
                None => format!("isl.c{j}"),
            };
            net.duplex(
                core[j],
                core[j + 1],
                &name,
                &isl(self.isl_queue()),
                LinkRole::Isl,
            );
        }
        let ud = self.updown();
        let mut i = 0usize;
        for f in flows {
            let p = self.path(f.group.unwrap_or(1));
            for _ in 0..f.count {
                // §IV: "senders/receivers are assumed to traverse different
                // sets of satellites before entering/leaving the
                // bottleneck": each flow has its own private chain, so no
                // ISL but the core's is shared.
                let mut first = core[p.enter];
                let mut last = core[p.exit];
                if p.private > 0 {
                    let ins: Vec<u32> = (1..=p.private)
                        .map(|k| net.node(format!("f{i}.in{k}")))
                        .collect();
                    for k in 0..p.private {
                        let next = if k + 1 < p.private {
                            ins[k + 1]
                        } else {
                            core[p.enter]
                        };
                        let name = format!("isl.f{i}.in{}", k + 1);
                        net.duplex(
                            ins[k],
                            next,
                            &name,
                            &isl(self.isl_queue()),
                            LinkRole::Access,
                        );
                    }
                    let outs: Vec<u32> = (1..=p.private)
                        .map(|k| net.node(format!("f{i}.out{k}")))
                        .collect();
                    for k in 0..p.private {
                        let prev = if k == 0 { core[p.exit] } else { outs[k - 1] };
                        let name = format!("isl.f{i}.out{}", k + 1);
                        net.duplex(
                            prev,
                            outs[k],
                            &name,
                            &isl(self.isl_queue()),
                            LinkRole::Access,
                        );
                    }
                    first = ins[0];
                    last = outs[p.private - 1];
                }
                let s = net.node(format!("s{i}"));
                let d = net.node(format!("d{i}"));
                let up = self.link(
                    self.updown_rate,
                    ud,
                    self.updown_queue.clone(),
                    self.uplink_error.clone(),
                );
                let down = self.link(
                    self.updown_rate,
                    ud,
                    self.updown_queue.clone(),
                    self.downlink_error.clone(),
                );
                net.duplex(s, first, &format!("up.s{i}"), &up, LinkRole::Access);
                net.duplex(last, d, &format!("down.d{i}"), &down, LinkRole::Access);
                net.endpoints.push((s, d));
                i += 1;
            }
        }
    }

    /// Adds the constellation's nodes, links and flow endpoints to `net`
    /// (validated: extra links whose ends do not exist are skipped).
    pub fn build(&self, flows: &[FlowSpec], net: &mut NetDef) {
        self.build_base(flows, net);
        for l in &self.extra_links {
            let find = |n: &Option<String>| {
                n.as_ref()
                    .and_then(|n| net.nodes.iter().position(|x| x == n))
            };
            if let (Some(a), Some(b)) = (find(&l.from), find(&l.to)) {
                let name = l
                    .name
                    .clone()
                    .unwrap_or_else(|| format!("{}->{}", net.nodes[a], net.nodes[b]));
                net.duplex(a as u32, b as u32, &name, l, LinkRole::Core);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::{Scenario, Topology};
    use crate::topology::NetDef;

    fn load(topo: &str, flows: &str) -> Scenario {
        Scenario::from_toml_str(
            &format!("duration = \"1s\"\n[topology]\nkind = \"constellation\"\n{topo}\n{flows}"),
            "t.toml",
            &[],
        )
        .unwrap()
    }

    /// Follows the routes from `s` to `d`, returning the link names.
    fn path(net: &NetDef, s: &str, d: &str) -> Vec<String> {
        let r = net.routes();
        let n = net.nodes.len();
        let id = |x: &str| net.nodes.iter().position(|y| y == x).unwrap();
        let (mut u, d) = (id(s), id(d));
        let mut out = Vec::new();
        while u != d {
            let l = &net.links[r[u * n + d] as usize];
            out.push(l.name.clone());
            u = l.to as usize;
        }
        out
    }

    #[test]
    fn rtt_groups_cross_2i_plus_1_satellites() {
        let sc = load(
            "shape = \"rtt-groups\"\nisl_rate = \"T1\"",
            "[[flows]]\nprotocol=\"newreno\"\ngroup=1\n[[flows]]\nprotocol=\"newreno\"\ngroup=3",
        );
        let Topology::Constellation(c) = &sc.topology else {
            panic!()
        };
        for i in 1..=4u32 {
            // §V-C: RTT (2i+2)·40 ms.
            assert_eq!(c.group_rtt(i).as_nanos(), u64::from(2 * i + 2) * 40_000_000);
        }
        let net = NetDef::build(&sc);
        let p1 = path(&net, "s0", "d0");
        assert_eq!(p1, ["up.s0", "isl.b0", "isl.c1", "down.d0"]);
        let p3 = path(&net, "s1", "d1");
        assert_eq!(
            p3,
            [
                "up.s1",
                "isl.f1.in1",
                "isl.f1.in2",
                "isl.b0",
                "isl.c1",
                "isl.f1.out1",
                "isl.f1.out2",
                "down.d1"
            ]
        );
        // 7 satellites = 2·3+1; the ACKs come back the same way.
        assert_eq!(p3.len() - 1, 7);
        let back = path(&net, "d1", "s1");
        let fwd_rev: Vec<String> = p3.iter().rev().map(|n| format!("{n}.rev")).collect();
        assert_eq!(back, fwd_rev);
        // Buffer = T1 BDP at the mean RTT (160+240+320+400)/4 = 280 ms:
        // 1.544e6 · 0.28 / 8000 = 54.04 -> 55 packets.
        assert_eq!(c.buffer_pkts(), 55);
    }

    #[test]
    fn two_bottlenecks_share_as_fig_1c() {
        let sc = load(
            "shape = \"two-bottlenecks\"",
            "[[flows]]\nprotocol=\"newreno\"\ngroup=1\n[[flows]]\nprotocol=\"newreno\"\ngroup=2\n\
             [[flows]]\nprotocol=\"newreno\"\ngroup=3",
        );
        let net = NetDef::build(&sc);
        assert_eq!(
            path(&net, "s0", "d0"),
            ["up.s0", "isl.b0", "isl.c1", "isl.b1", "isl.c3", "down.d0"]
        );
        assert_eq!(path(&net, "s1", "d1"), ["up.s1", "isl.b0", "down.d1"]);
        assert_eq!(
            path(&net, "s2", "d2"),
            ["up.s2", "isl.b1", "isl.c3", "down.d2"]
        );
    }

    #[test]
    fn bad_group_and_extra_link_name_the_field() {
        let e = Scenario::from_toml_str(
            "duration = \"1s\"\n[topology]\nkind = \"constellation\"\nshape = \"single\"\n\
             [[flows]]\nprotocol = \"newreno\"\ngroup = 2",
            "t.toml",
            &[],
        )
        .unwrap_err();
        assert_eq!(e.field, "flows[0].group");
        assert!(e.message.contains("1..=1"), "{}", e.message);
        let e = Scenario::from_toml_str(
            "duration = \"1s\"\n[topology]\nkind = \"constellation\"\nshape = \"single\"\n\
             extra_links = [{from = \"s0\", to = \"cx\", rate = \"10Mbps\", delay = \"20ms\"}]\n\
             [[flows]]\nprotocol = \"newreno\"",
            "t.toml",
            &[],
        )
        .unwrap_err();
        assert_eq!(e.field, "topology.extra_links[0].to");
        assert!(e.message.contains("'cx'"), "{}", e.message);
        let e = Scenario::from_toml_str(
            "duration = \"1s\"\n[topology]\nkind = \"constellation\"\nshape = \"ring\"\n\
             [[flows]]\nprotocol = \"newreno\"",
            "t.toml",
            &[],
        )
        .unwrap_err();
        assert_eq!(e.field, "topology.shape");
    }
}
