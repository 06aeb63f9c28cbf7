//! Building a LEO constellation (the schema and its geometry are
//! [`crate::scenario::constellation`]): nodes, ISLs, up- and down-links and
//! each flow's private chain, as paper 003 Fig. 1 draws them.

use crate::scenario::constellation::Constellation;
use crate::scenario::{FlowSpec, QueueSpec};
use crate::topology::{LinkRole, NetDef};

impl Constellation {
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
