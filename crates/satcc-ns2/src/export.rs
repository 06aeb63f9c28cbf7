//! Writing the ns-2 2.35 script of a scenario.
//!
//! The network is the simulator's own [`NetDef`] (same nodes, link
//! directions, rates, queues, error models and flow endpoints), and every
//! protocol parameter comes from [`ProtocolConfig::from_spec`], the builder
//! the simulator makes its endpoints with: the export holds no default of
//! its own.

use std::fmt::Write as _;

use satcc_proto::tcp::{
    self, CubicConfig, Growth, HyblaConfig, HyblaVariant, RtoSsthresh, RttTiming, SackRecovery,
    SlowStart, Variant,
};
use satcc_proto::tfrc::{self, FeedbackPolicy};
use satcc_proto::tfrcp::{self, Pacing, Strategy};
use satcc_proto::Duration;
use satcc_sim::net::routing::Routes;
use satcc_sim::protocols::{ProtocolConfig, DEFAULT_TFRCP_K, DEFAULT_TFRCP_M};
use satcc_sim::scenario::{
    AppSpec, ErrorSpec, LinkSpec, Protocol, ProtocolOptions, QueueSpec, RedMode, Scenario, Topology,
};
use satcc_sim::topology::{LinkRole, NetDef};

use crate::error::Ns2Error;

/// The OTcl TFRCP sender and receiver (paper 004), `ns2_tfrcp.tcl` as
/// written: a template in which [`TFRCP_S2_FALLBACK_M`] stands for S2's
/// recomputation interval before the first RTT sample. [`tfrcp_tcl`]
/// fills it in; the export emits the result once into any script with a
/// TFRCP flow.
pub const TFRCP_TCL: &str = include_str!("ns2_tfrcp.tcl");

/// The placeholder in [`TFRCP_TCL`] for S2's fallback M, seconds.
pub const TFRCP_S2_FALLBACK_M: &str = "@S2_FALLBACK_M@";

/// The OTcl TFRCP library with S2's interval M before the first RTT
/// sample (`tfrcp::SenderConfig::s2_fallback_m`) filled in, as a Tcl
/// decimal with a point (3 s: `3.0`).
pub fn tfrcp_tcl(s2_fallback_m: Duration) -> String {
    let mut m = secs(s2_fallback_m);
    if !m.contains('.') {
        m.push_str(".0");
    }
    TFRCP_TCL.replace(TFRCP_S2_FALLBACK_M, &m)
}

/// The TFRCP library of a script with these TFRCP flows: (index in
/// `flows`, whether the flow runs S2, its `s2_fallback_m`). The OTcl class
/// holds one fallback M for the script, the S2 flows' (any flow's when
/// none runs S2: the others never use it); S2 flows that differ in it
/// cannot share the class and are refused.
pub(crate) fn tfrcp_library(flows: &[(usize, bool, Duration)]) -> Result<String, Ns2Error> {
    let s2 = flows.iter().filter(|f| f.1);
    let Some(&(_, _, m)) = s2.clone().next().or(flows.first()) else {
        return Ok(tfrcp_tcl(tfrcp::SenderConfig::default().s2_fallback_m));
    };
    if let Some(&(fi, _, other)) = s2.clone().find(|f| f.2 != m) {
        return Err(Ns2Error::unsupported(
            format!("flows[{fi}].strategy"),
            format!(
                "the ns-2 TFRCP takes one S2 interval before the first RTT sample per script \
                 (s2_fallback_m): {} s here, {} s in an earlier S2 flow",
                secs(other),
                secs(m)
            ),
        ));
    }
    Ok(tfrcp_tcl(m))
}

/// A generated script and what it is made of.
#[derive(Clone, Debug)]
pub struct Ns2Script {
    /// The OTcl script.
    pub tcl: String,
    /// Every link direction, in the order the script creates them (the
    /// order of satcc's `NetDef`).
    pub links: Vec<ExportedLink>,
    /// The monitored directions, as indices into `links`, in the order
    /// the script reports them (`LINK` lines).
    pub monitored: Vec<usize>,
}

/// One link direction of a script: kept as the script is written, so that
/// results are matched to links (and monitors to link ends) without
/// reading the script back.
#[derive(Clone, Debug, PartialEq)]
pub struct ExportedLink {
    /// satcc's name of the direction (`bottleneck`, `bottleneck.rev`,
    /// `access.s0`, ...): what `record.links` names and `LINK` lines print.
    pub name: String,
    /// The transmitting node, by satcc's name.
    pub from: String,
    /// The receiving node, by satcc's name.
    pub to: String,
    /// Rate, b/s.
    pub rate_bps: u64,
    /// An access link (not monitored by default).
    pub access: bool,
    /// Tcl variables of the two nodes (`n_r1`, `n_r2`).
    from_var: String,
    to_var: String,
    /// The name in the script's comments (access links: `access.src0`).
    label: String,
    /// Index of the link's error model (`em_N`), if it has one.
    error_model: Option<u64>,
}

/// Nanosecond-exact decimal seconds.
pub(crate) fn secs(d: Duration) -> String {
    let ns = d.as_nanos();
    let s = ns / 1_000_000_000;
    let frac = ns % 1_000_000_000;
    if frac == 0 {
        format!("{s}")
    } else {
        let f = format!("{frac:09}");
        format!("{s}.{}", f.trim_end_matches('0'))
    }
}

fn secs_f(d: Duration) -> f64 {
    d.as_nanos() as f64 / 1e9
}

/// The ns-2 RNG seed (`$defaultRNG seed N`) for a scenario seed: a
/// splitmix64 mix of it, folded into 1..=2^31-2 (ns-2 wants N > 0).
///
/// Not the seed itself: ns-2's RNG (tools/rng.cc, the MRG32k3a streams
/// seeded through `RNG::set_seed`) gives, for seeds 1, 2, 3, ..., streams
/// whose first draws grow in proportion to the seed, so runs with seeds
/// 1..N are not independent samples. Mixed seeds are; the mapping is fixed,
/// so a satcc seed always names the same ns-2 run.
pub fn ns2_seed(seed: u64) -> u64 {
    sub_seed(seed, 0x6E73_325F_7365_6564) // "ns2_seed"
}

/// A seed for the i-th error model's RNG, derived from the run seed
/// (splitmix64, folded into 1..2^31-1).
fn sub_seed(seed: u64, i: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15u64.wrapping_mul(i + 1));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    1 + z % 2_147_483_646
}

fn tcl_ident(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// Base RTT of every flow instance: the propagation delays along the path
/// both ways (no serialization, no queueing), as the simulator computes it
/// for [`ProtocolConfig::from_spec`] and the export uses for TFRC's
/// `minrto_` and the dynamic `NumFeedback_`.
pub fn base_rtts(sc: &Scenario) -> Vec<Option<Duration>> {
    let net = NetDef::build(sc);
    let routes = Routes::build(&net, &vec![true; net.links.len()]);
    (0..net.endpoints.len() as u32)
        .map(|id| routes.base_rtt(&net, id))
        .collect()
}

/// ns-2 `NumFeedback_` (reports per RTT) of a TFRC/CCID3 receiver with
/// feedback `policy` on a path of base RTT `rtt`: the policy's own NFb
/// with no cap from the receive rate (1 for the standard policy; paper
/// 001's dynamic policy max(round(RTT/rtt_ref), 1)), computed once from
/// the *base* RTT — an approximation: the paper recomputes NFb from the
/// current RTT and also caps it at RTT*X_recv/s (at most one report per
/// received packet), which ns-2's fixed count cannot do.
pub fn num_feedback(policy: &FeedbackPolicy, rtt: Duration) -> u64 {
    policy.nfb(rtt, f64::INFINITY, 1)
}

/// The `setup` dictionary of the script's TFRCP sender, from the sender
/// configuration the simulator runs. The dictionary has a slot for every
/// strategy's parameters; those of the strategies not in use are unused
/// by the OTcl sender and get satcc's defaults.
fn tfrcp_setup(c: &tfrcp::SenderConfig, rng_seed: u64) -> String {
    let zero = Duration::ZERO;
    let (strategy, m, k, base, spread) = match c.strategy {
        Strategy::Fixed { m } => ("s1", m, DEFAULT_TFRCP_K, zero, zero),
        Strategy::RttMultiple { k } => ("s2", DEFAULT_TFRCP_M, k, zero, zero),
        Strategy::Random { base, spread } => ("s3", DEFAULT_TFRCP_M, DEFAULT_TFRCP_K, base, spread),
    };
    format!(
        "r0 {r0} strategy {strategy} m {m} k {k} base {base} spread {spread} wmax {wmax} b {b} \
         minrto {minrto} maxrto {maxrto} initrto {initrto} g {g} minrate {minrate} maxrate {maxrate} \
         rngseed {rng_seed}",
        r0 = c.r0,
        m = secs_f(m),
        base = secs_f(base),
        spread = secs_f(spread),
        wmax = c.wmax,
        b = c.b,
        minrto = secs_f(c.min_rto),
        maxrto = secs_f(c.max_rto),
        initrto = secs_f(c.initial_rto),
        g = secs_f(c.clock_granularity),
        minrate = c.min_rate,
        maxrate = c.max_rate,
    )
}

/// The script being written.
struct Gen<'a> {
    net: &'a NetDef,
    out: String,
    seed: u64,
    n_err: u64,
    /// Tcl variable of each node.
    node_var: Vec<String>,
    /// Name of each node in the script's comments.
    node_label: Vec<String>,
    /// Nodes already created.
    node_done: Vec<bool>,
    /// Nodes all of whose links are access links (a flow's source or
    /// sink on a built-in topology).
    access_node: Vec<bool>,
    /// Every link direction written so far.
    links: Vec<ExportedLink>,
    /// (name, queue variable) of every RED queue.
    red: Vec<(String, String)>,
}

impl Gen<'_> {
    /// `set n_X [$ns node]`, once per node.
    fn node(&mut self, n: u32) {
        let n = n as usize;
        if !self.node_done[n] {
            self.node_done[n] = true;
            let _ = writeln!(
                self.out,
                "set {} [$ns node] ;# {}",
                self.node_var[n], self.node_label[n]
            );
        }
    }

    /// The name of link direction `i` in the script's comments: satcc's,
    /// except that an access link is named after its access node
    /// (`access.src0`; the reverse direction `access.src0.rev`).
    fn link_label(&self, i: usize) -> String {
        let l = &self.net.links[i];
        if l.role != LinkRole::Access {
            return l.name.clone();
        }
        let fwd = (i as u32).min(l.reverse) as usize;
        let f = &self.net.links[fwd];
        // The access node is the end that is a flow's source or sink.
        let end = if self.is_access_node(f.from) {
            f.from
        } else {
            f.to
        };
        let base = format!("access.{}", self.node_label[end as usize]);
        if fwd == i {
            base
        } else {
            format!("{base}.rev")
        }
    }

    fn is_access_node(&self, n: u32) -> bool {
        self.access_node[n as usize]
    }

    /// Link direction `i` of the network; `qfield`/`efield` name its
    /// queue and error model in the scenario.
    fn simplex(&mut self, i: usize, qfield: &str, efield: &str) -> Result<(), Ns2Error> {
        let net = self.net;
        let l = &net.links[i];
        let (a, b) = (
            self.node_var[l.from as usize].clone(),
            self.node_var[l.to as usize].clone(),
        );
        let label = self.link_label(i);
        let rate = l.rate_bps;
        let kind = match &l.queue {
            QueueSpec::DropTail { .. } => "DropTail",
            QueueSpec::Red(_) => "RED",
            QueueSpec::Priority { .. } => {
                return Err(Ns2Error::unsupported(
                    qfield,
                    "priority queues are not supported by the ns-2 export",
                ))
            }
        };
        let _ = writeln!(
            self.out,
            "$ns simplex-link ${a} ${b} {rate} {} {kind} ;# {label}",
            secs(l.delay)
        );
        let q = format!("q_{}", self.links.len());
        let _ = writeln!(self.out, "set {q} [[$ns link ${a} ${b}] queue]");
        match &l.queue {
            QueueSpec::DropTail {
                limit: Some(lim),
                limit_bytes: None,
            } => {
                let _ = writeln!(self.out, "$ns queue-limit ${a} ${b} {lim}");
            }
            QueueSpec::DropTail {
                limit: None,
                limit_bytes: Some(bytes),
            } => {
                // ns-2 DropTail in byte mode compares against limit_ * mean_pktsize_.
                let _ = writeln!(
                    self.out,
                    "${q} set queue_in_bytes_ true\n${q} set mean_pktsize_ 1\n$ns queue-limit ${a} ${b} {}",
                    bytes.0
                );
            }
            QueueSpec::DropTail { .. } => {
                return Err(Ns2Error::unsupported(
                    qfield,
                    "ns-2's DropTail takes limit or limit_bytes, not both",
                ))
            }
            QueueSpec::Red(r) => {
                if r.weight <= 0.0 && ![0.0, -1.0, -2.0].contains(&r.weight) {
                    return Err(Ns2Error::unsupported(
                        format!("{qfield}.weight"),
                        format!(
                            "{} is not one of ns-2's automatic values 0, -1, -2",
                            r.weight
                        ),
                    ));
                }
                // `mode`: red.cc's bytes_ (count and drop probability in
                // bytes) and queue_in_bytes_ (average, thresholds and limit
                // in bytes: thresh_, maxthresh_ and limit_ are scaled by
                // mean_pktsize_ in reset() and enque()) go together.
                let bytes = r.mode == RedMode::Bytes;
                let _ = writeln!(
                    self.out,
                    "$ns queue-limit ${a} ${b} {lim}\n\
                     ${q} set bytes_ {bytes}\n\
                     ${q} set queue_in_bytes_ {bytes}\n\
                     ${q} set thresh_ {min}\n\
                     ${q} set maxthresh_ {max}\n\
                     ${q} set q_weight_ {w}\n\
                     ${q} set linterm_ {lt}\n\
                     ${q} set gentle_ {g}\n\
                     ${q} set wait_ {wt}\n\
                     ${q} set mean_pktsize_ {mp}\n\
                     ${q} set targetdelay_ {td}\n\
                     ${q} set setbit_ false\n\
                     ${q} set adaptive_ 0",
                    lim = r.limit,
                    min = r.min_th,
                    max = r.max_th,
                    w = r.weight,
                    lt = 1.0 / r.max_p,
                    g = r.gentle,
                    wt = r.wait,
                    mp = r.mean_pktsize,
                    td = secs(r.target_delay.0),
                );
                self.red.push((l.name.clone(), q.clone()));
            }
            QueueSpec::Priority { .. } => unreachable!("rejected above"),
        }
        let mut em = None;
        match &l.error {
            None => {}
            Some(ErrorSpec::Uniform { per }) => {
                let e = self.n_err;
                self.n_err += 1;
                let s = sub_seed(self.seed, e);
                let _ = writeln!(
                    self.out,
                    "set em_rng_{e} [new RNG]\n$em_rng_{e} seed {s}\n\
                     set em_rv_{e} [new RandomVariable/Uniform]\n$em_rv_{e} use-rng $em_rng_{e}\n\
                     set em_{e} [new ErrorModel]\n$em_{e} unit pkt\n$em_{e} set rate_ {}\n\
                     $em_{e} ranvar $em_rv_{e}\n\
                     $ns link-lossmodel $em_{e} ${a} ${b}\n\
                     set emd_{e} [new Agent/LossMonitor]\n$em_{e} drop-target $emd_{e}",
                    per.0
                );
                // link-lossmodel points the drop target at the link's drop
                // head, where a queue monitor would count the (already
                // departed) packet as a queue drop and decrement its queue
                // length; a LossMonitor of its own counts error drops.
                em = Some(e);
            }
            Some(_) => {
                return Err(Ns2Error::unsupported(
                    efield,
                    "only kind = \"uniform\" error models are supported by the ns-2 export",
                ))
            }
        }
        self.links.push(ExportedLink {
            name: l.name.clone(),
            from: net.nodes[l.from as usize].clone(),
            to: net.nodes[l.to as usize].clone(),
            rate_bps: rate,
            access: l.role == LinkRole::Access,
            from_var: a,
            to_var: b,
            label,
            error_model: em,
        });
        Ok(())
    }
}

/// The scenario field and spec of each non-access duplex link, in the
/// order `NetDef::build` creates them.
fn core_links(topology: &Topology) -> Vec<(String, &LinkSpec)> {
    match topology {
        Topology::Dumbbell(d) => vec![("topology.bottleneck".into(), &d.bottleneck)],
        Topology::Satellite(s) => vec![
            ("topology.uplink".into(), &s.uplink),
            ("topology.downlink".into(), &s.downlink),
        ],
        Topology::Graph(g) => g
            .links
            .iter()
            .enumerate()
            .map(|(i, l)| (format!("topology.links[{i}]"), l))
            .collect(),
        Topology::Constellation(_) => Vec::new(),
    }
}

/// One flow instance's reporting, written after all flows.
struct FlowReport {
    id: usize,
    protocol: &'static str,
    /// `tcp`, `tfrc`, `tfrcp` or `cbr`: how its counters are read.
    kind: &'static str,
    start: f64,
    stop: f64,
    /// Payload and wire bytes of a data packet.
    payload: u32,
    wire: u32,
}

/// Generates the ns-2 2.35 script for a scenario. Errors name the scenario
/// field that ns-2 cannot reproduce.
pub fn to_tcl(sc: &Scenario) -> Result<String, Ns2Error> {
    export(sc).map(|s| s.tcl)
}

/// Generates the ns-2 2.35 script for a scenario, with the links it
/// creates and monitors. Errors name the scenario field that ns-2 cannot
/// reproduce.
pub fn export(sc: &Scenario) -> Result<Ns2Script, Ns2Error> {
    if sc.refwa.as_ref().is_some_and(|r| r.enabled) {
        return Err(Ns2Error::unsupported(
            "refwa",
            "ns-2 has no REFWA router (run with refwa.enabled=false)",
        ));
    }
    if !sc.snapshots.is_empty() {
        return Err(Ns2Error::unsupported(
            "snapshots",
            "the ns-2 export has no topology snapshots",
        ));
    }
    if matches!(sc.topology, Topology::Constellation(_)) {
        return Err(Ns2Error::unsupported(
            "topology.kind",
            "the ns-2 export has no constellation builder",
        ));
    }
    let net = NetDef::build(sc);

    // Node names. On the built-in topologies the script names each flow's
    // access nodes after the flow (`src0`/`dst0`; satcc: `s0`/`d0`).
    let mut node_label = net.nodes.clone();
    if matches!(sc.topology, Topology::Dumbbell(_) | Topology::Satellite(_)) {
        for (k, &(s, d)) in net.endpoints.iter().enumerate() {
            node_label[s as usize] = format!("src{k}");
            node_label[d as usize] = format!("dst{k}");
        }
    }
    let node_var: Vec<String> = node_label
        .iter()
        .map(|l| format!("n_{}", tcl_ident(l)))
        .collect();
    // A map, not a scan of the names before each: 100 000 flows' access
    // nodes made the scan quadratic (issue 33).
    let mut seen: std::collections::HashMap<&str, usize> =
        std::collections::HashMap::with_capacity(node_var.len());
    for (i, v) in node_var.iter().enumerate() {
        if let Some(&j) = seen.get(v.as_str()) {
            return Err(Ns2Error::unsupported(
                "topology.nodes",
                format!(
                    "'{}' and '{}' would be the same ns-2 node ({v})",
                    net.nodes[j], net.nodes[i]
                ),
            ));
        }
        seen.insert(v, i);
    }
    let mut access_node = vec![None::<bool>; net.nodes.len()];
    for l in &net.links {
        for n in [l.from, l.to] {
            let a = &mut access_node[n as usize];
            *a = Some(a.unwrap_or(true) && l.role == LinkRole::Access);
        }
    }
    let mut g = Gen {
        net: &net,
        access_node: access_node.into_iter().map(|a| a == Some(true)).collect(),
        out: String::new(),
        seed: sc.seed,
        n_err: 0,
        node_done: vec![false; net.nodes.len()],
        node_var,
        node_label,
        links: Vec::new(),
        red: Vec::new(),
    };
    let _ = writeln!(
        g.out,
        "# ns-2 2.35 script generated by satcc-sim ns2::to_tcl\n\
         # scenario: {}\n\
         set ns [new Simulator]\n\
         $defaultRNG seed {}",
        sc.name.as_deref().unwrap_or("(unnamed)"),
        ns2_seed(sc.seed)
    );

    // Topology: the nodes of the core network first, then each link with
    // its reverse direction; a flow's two access nodes just before its
    // first access link.
    for n in 0..net.nodes.len() as u32 {
        if !g.is_access_node(n) {
            g.node(n);
        }
    }
    // Which flow's endpoints each node is (the first flow's, as a scan
    // would find): looked up per access link, so a vector, not a scan.
    let mut endpoint_of = vec![None::<usize>; net.nodes.len()];
    for (k, &(s, d)) in net.endpoints.iter().enumerate() {
        for n in [s, d] {
            endpoint_of[n as usize].get_or_insert(k);
        }
    }
    let core = core_links(&sc.topology);
    let mut core = core.iter();
    for i in 0..net.links.len() {
        let l = &net.links[i];
        let rev = l.reverse as usize;
        if rev < i {
            continue; // written with its forward direction
        }
        let (at, spec) = if l.role == LinkRole::Access {
            let end = if g.is_access_node(l.from) {
                l.from
            } else {
                l.to
            };
            if let Some(&(s, d)) = endpoint_of[end as usize].map(|k| &net.endpoints[k]) {
                g.node(s);
                g.node(d);
            }
            ("topology.access".to_string(), None)
        } else {
            let (at, spec) = core
                .next()
                .expect("NetDef builds one duplex link per core link spec");
            (at.clone(), Some(*spec))
        };
        if l.shaper.is_some() || net.links[rev].shaper.is_some() {
            // Exporting the link without it would cross-check another path.
            return Err(Ns2Error::unsupported(
                format!("{at}.shaper"),
                "ns-2 2.35's links have no token-bucket shaper (Linux's tbf); remove it to export the rest",
            ));
        }
        g.node(l.from);
        g.node(l.to);
        g.simplex(i, &format!("{at}.queue"), &format!("{at}.error"))?;
        let rq = if spec.is_some_and(|s| s.reverse_queue.is_some()) {
            "reverse_queue"
        } else {
            "queue"
        };
        g.simplex(rev, &format!("{at}.{rq}"), &format!("{at}.reverse_error"))?;
    }

    // Monitored links: by satcc's names, as `satcc run` (default: all but
    // access links).
    let monitored: Vec<usize> = match &sc.record.links {
        Some(names) => names
            .iter()
            .enumerate()
            .map(|(k, w)| {
                g.links.iter().position(|l| &l.name == w).ok_or_else(|| {
                    Ns2Error::unsupported(
                        format!("record.links[{k}]"),
                        format!("the ns-2 export cannot monitor link '{w}'"),
                    )
                })
            })
            .collect::<Result<_, _>>()?,
        None => (0..g.links.len()).filter(|&i| !g.links[i].access).collect(),
    };
    for (k, &li) in monitored.iter().enumerate() {
        let l = &g.links[li];
        let _ = writeln!(
            g.out,
            "set qm_{k} [$ns monitor-queue ${} ${} \"\"] ;# {}",
            l.from_var, l.to_var, l.label
        );
    }

    // Flows.
    let routes = Routes::build(&net, &vec![true; net.links.len()]);
    let end = secs_f(sc.duration.0);
    let mfrom = secs_f(sc.record.measure_from.0);
    let starts = satcc_sim::sim::flow_starts(sc);
    let mut reports = Vec::new();
    // Where the TFRCP library goes (before the first TFRCP flow), and
    // what it is made from.
    let mut tfrcp_at = None;
    let mut tfrcp_flows = Vec::new();
    let mut id = 0usize;
    for (fi, f) in sc.flows.iter().enumerate() {
        let at = |x: &str| format!("flows[{fi}].{x}");
        let pareto = match f.app {
            AppSpec::Bulk => None,
            AppSpec::OnOff {
                on_mean,
                off_mean,
                shape,
            } if f.protocol == Protocol::Cbr => Some((on_mean.0, off_mean.0, shape)),
            _ => return Err(Ns2Error::unsupported(
                at("app"),
                "only kind = \"bulk\" (and \"onoff\" on cbr flows) is supported by the ns-2 export",
            )),
        };
        // TcpAgent::output holds packets for overhead_; the agents the
        // other protocols export to do not. A match without a catch-all,
        // so that a new protocol's export says whether it can.
        let overhead = match f.options {
            ProtocolOptions::Tcp(_) => true,
            ProtocolOptions::Tfrc(_)
            | ProtocolOptions::Tfrcp(_)
            | ProtocolOptions::Cbr(_)
            | ProtocolOptions::Saratoga(_) => false,
        };
        if f.send_jitter.is_some() && !overhead {
            return Err(Ns2Error::unsupported(
                at("send_jitter"),
                "the ns-2 export sets overhead_ on TCP agents only",
            ));
        }
        // ns-2 has no order-preserving host jitter: a jitter the user
        // wrote is refused; the protocol default (FlowSpec::
        // host_jitter_bound) is left out, as ns-2 runs jitter-free.
        if f.host_jitter.is_some_and(|j| j.0 > Duration::ZERO) {
            return Err(Ns2Error::unsupported(
                at("host_jitter"),
                "ns-2 has no order-preserving host jitter (set host_jitter = \"none\" to export)",
            ));
        }
        let hdr = f.wire_header_bytes();
        let stop = f.stop.map(|s| secs_f(s.0)).unwrap_or(end).min(end);
        for _ in 0..f.count {
            let i = id;
            let (src, dst) = net.endpoints[i];
            let s = g.node_var[src as usize].clone();
            let d = g.node_var[dst as usize].clone();
            // The very start times satcc draws (start_spread included).
            let start_d = starts[i];
            let start = secs_f(start_d);
            let base_rtt = routes.base_rtt(&net, i as u32);
            let mut report = |kind, payload, wire| {
                reports.push(FlowReport {
                    id: i,
                    protocol: f.protocol.name(),
                    kind,
                    start,
                    stop,
                    payload,
                    wire,
                })
            };
            match ProtocolConfig::from_spec(f, base_rtt) {
                ProtocolConfig::Saratoga { .. } => {
                    // ns-2 2.35 ships no Saratoga agent (paper 000's was
                    // its authors' own, not released).
                    return Err(Ns2Error::unsupported(
                        at("protocol"),
                        format!("{} has no ns-2 2.35 agent to export to", f.protocol.name()),
                    ));
                }
                ProtocolConfig::Tcp { sender, receiver } => {
                    if sender.peach.is_some() {
                        // ns-2 2.35 has no TCP-Peach agent, and no two-class
                        // priority queue that tells dummies apart.
                        return Err(Ns2Error::unsupported(
                            at("protocol"),
                            format!("{} has no ns-2 2.35 agent to export to", f.protocol.name()),
                        ));
                    }
                    write_tcp(&mut g.out, i, &sender, &receiver, hdr, &at)?;
                    if let Some(j) = f.send_jitter {
                        // TcpAgent::output holds each packet for
                        // Random::uniform(overhead_), as satcc does.
                        let _ = writeln!(g.out, "$tcp_{i} set overhead_ {}", secs(j.0));
                    }
                    if sender.initial_ssthresh != tcp::SenderConfig::default().initial_ssthresh {
                        // reset() at `$ns run` overwrites ssthresh_ with
                        // window_, and max_ssthresh_ would turn on RFC 3742
                        // limited slow start: set it when the flow starts.
                        // (satcc's default, "infinite", is what ns-2's
                        // ssthresh_ = window_ does.)
                        let _ = writeln!(
                            g.out,
                            "$ns at {} \"$tcp_{i} set ssthresh_ {}\"",
                            secs(start_d),
                            sender.initial_ssthresh
                        );
                    }
                    let sink = match (receiver.sack, receiver.delayed_ack) {
                        (false, false) => "Agent/TCPSink",
                        (false, true) => "Agent/TCPSink/DelAck",
                        (true, false) => "Agent/TCPSink/Sack1",
                        (true, true) => "Agent/TCPSink/Sack1/DelAck",
                    };
                    let _ = writeln!(
                        g.out,
                        "set sink_{i} [new {sink}]\n$sink_{i} set packetSize_ {hdr}"
                    );
                    if sender.growth != tcp::Growth::Reno
                        || sender.sack_recovery == SackRecovery::Ns2Linux
                    {
                        // Agent/TCP/Linux times RTT by the timestamp echo.
                        let _ = writeln!(g.out, "$sink_{i} set ts_echo_rfc1323_ true");
                    }
                    if receiver.delayed_ack {
                        let _ = writeln!(
                            g.out,
                            "$sink_{i} set interval_ {}",
                            secs(receiver.delack_timeout)
                        );
                    }
                    let _ = writeln!(
                        g.out,
                        "$ns attach-agent ${s} $tcp_{i}\n$ns attach-agent ${d} $sink_{i}\n\
                         $ns connect $tcp_{i} $sink_{i}\n\
                         set app_{i} [new Application/FTP]\n$app_{i} attach-agent $tcp_{i}\n\
                         $ns at {start} \"$app_{i} start\"",
                        start = secs(start_d)
                    );
                    if stop < end {
                        let _ = writeln!(g.out, "$ns at {stop} \"$app_{i} stop\"");
                    }
                    report("tcp", sender.mss, sender.mss + hdr);
                }
                ProtocolConfig::Tfrc { sender, receiver } => {
                    let rtt = base_rtt.ok_or_else(|| Ns2Error::NoRoute { field: at("dst") })?;
                    let sz = sender.s;
                    let nfb = num_feedback(&receiver.policy, rtt);
                    // Settings that bring ns-2's TFRC closest to RFC 5348 and
                    // to satcc_proto::tfrc: see docs/ns2.md. tcp_tick_ is the
                    // granularity of ns-2's TCP-style estimator behind t_RTO;
                    // satcc's TFRC has none (t_RTO = 4R), so it gets the
                    // simulator's TCP clock granularity.
                    //
                    // ca_ is RFC 5348 §4.5 oscillation damping: ns-2 sends at
                    // X * sqrtrtt_ / sqrt(R_sample), sqrtrtt_ an EWMA of
                    // sqrt(R_sample) with the RTT filter's df_ (0.9 here, the
                    // RFC's q2), started at the first sample (tfrc.cc
                    // nextpkt, update_rtt): the RFC's R_sqmean. Before the
                    // first feedback the factor is 1, and the rate ns-2
                    // reports (rate_) is the undamped X. docs/ns2.md, TFRC
                    // difference 16.
                    if sender.profile == tfrc::Profile::Ns2 {
                        // Profile ns2: Agent/TFRC and Agent/TFRCSink keep
                        // ns-2 2.35's defaults (InitRate_ 300, slow_increase_
                        // 1, df_ 0.95, tcp_tick_ 0.1, minrto_ 0, ca_ 1,
                        // PreciseLoss_ 1, discount_ 1, numPkts_ 1: the ones
                        // satcc_proto::tfrc::Profile::Ns2 reproduces); only
                        // the sizes, the flow's own ca_/discount_ choice and
                        // the feedback count are set. docs/ns2.md, "The ns2
                        // profile".
                        let _ = writeln!(
                            g.out,
                            "set tcp_{i} [new Agent/TFRC]\n\
                             $tcp_{i} set fid_ {i}\n\
                             $tcp_{i} set packetSize_ {sz}\n\
                             $tcp_{i} set useHeaders_ true\n\
                             $tcp_{i} set headersize_ {hdr}\n\
                             $tcp_{i} set SndrType_ 0\n\
                             $tcp_{i} set ca_ {ca}\n\
                             $tcp_{i} set bval_ {b}\n\
                             set sink_{i} [new Agent/TFRCSink]\n\
                             $sink_{i} set packetSize_ {hdr}\n\
                             $sink_{i} set NumFeedback_ {nfb}\n\
                             $sink_{i} set discount_ {discount}\n\
                             $ns attach-agent ${s} $tcp_{i}\n$ns attach-agent ${d} $sink_{i}\n\
                             $ns connect $tcp_{i} $sink_{i}\n\
                             $ns at {start} \"$tcp_{i} start\"",
                            ca = u8::from(sender.oscillation_damping),
                            b = sender.b,
                            discount = u8::from(receiver.history_discounting),
                            start = secs(start_d)
                        );
                    } else {
                        let _ = writeln!(
                            g.out,
                            "set tcp_{i} [new Agent/TFRC]\n\
                             $tcp_{i} set fid_ {i}\n\
                             $tcp_{i} set packetSize_ {sz}\n\
                             $tcp_{i} set useHeaders_ true\n\
                             $tcp_{i} set headersize_ {hdr}\n\
                             $tcp_{i} set SndrType_ 0\n\
                             $tcp_{i} set InitRate_ {sz}\n\
                             $tcp_{i} set rate_init_option_ 2\n\
                             $tcp_{i} set ssmult_ 2\n\
                             $tcp_{i} set slow_increase_ 0\n\
                             $tcp_{i} set ca_ {ca}\n\
                             $tcp_{i} set df_ {df}\n\
                             $tcp_{i} set tcp_tick_ {tick}\n\
                             $tcp_{i} set minrto_ {trto}\n\
                             $tcp_{i} set bval_ {b}\n\
                             $tcp_{i} set conservative_ false\n\
                             $tcp_{i} set oldCode_ false\n\
                             $tcp_{i} set maxHeavyRounds_ 0\n\
                             $tcp_{i} set overhead_ 0\n\
                             $tcp_{i} set voip_ false\n\
                             $tcp_{i} set ecn_ false",
                            ca = u8::from(sender.oscillation_damping),
                            // df_ is RFC 5348 §4.3's q (0.9 by default); in
                            // ns-2 it also weighs sqrtrtt_, the damping's
                            // R_sqmean (whose q2 the RFC keeps at 0.9).
                            df = f64::from(sender.rtt_q_milli.min(1000)) / 1000.0,
                            tick = secs(tcp::SenderConfig::default().clock_granularity),
                            trto = secs(rtt.saturating_mul(4)),
                            b = sender.b,
                        );
                        // discount_ is RFC 5348 §5.5 history discounting, with
                        // minDiscountRatio_ (default 0.5) as the RFC's DF floor
                        // (tfrc-sink.cc est_loss_WALI): when I_0 > 2 I_mean, the
                        // closed intervals are weighted by max(0.5, 2 I_mean /
                        // I_0) and the factor is folded into them at the next
                        // loss event. ns-2 computes the factor only when it
                        // builds a report (and folds in the last report's
                        // factor), and applies it to the closed intervals of
                        // both averages (with and without I_0); satcc
                        // (satcc_proto::tfrc::loss) only to the one with I_0.
                        // docs/ns2.md, TFRC difference 11.
                        let _ = writeln!(
                            g.out,
                            "set sink_{i} [new Agent/TFRCSink]\n\
                             $sink_{i} set packetSize_ {hdr}\n\
                             $sink_{i} set NumFeedback_ {nfb}\n\
                             $sink_{i} set algo_ 1\n\
                             $sink_{i} set smooth_ 1\n\
                             $sink_{i} set NumSamples_ -1\n\
                             $sink_{i} set discount_ {discount}\n\
                             $sink_{i} set numPkts_ 1\n\
                             $sink_{i} set PreciseLoss_ 0\n\
                             $sink_{i} set AdjustHistoryAfterSS_ 1\n\
                             $sink_{i} set ShortIntervals_ 0\n\
                             $ns attach-agent ${s} $tcp_{i}\n$ns attach-agent ${d} $sink_{i}\n\
                             $ns connect $tcp_{i} $sink_{i}\n\
                             $ns at {start} \"$tcp_{i} start\"",
                            discount = u8::from(receiver.history_discounting),
                            start = secs(start_d)
                        );
                    }
                    if stop < end {
                        let _ = writeln!(g.out, "$ns at {stop} \"$tcp_{i} stop\"");
                    }
                    report("tfrc", sz, sz + hdr);
                }
                ProtocolConfig::Tfrcp { sender, .. } => {
                    // ns-2 2.35 has no TFRCP agent: the script carries its
                    // own, an independent OTcl implementation of paper 004
                    // over Agent/Message (ns2_tfrcp.tcl).
                    if sender.pacing == Pacing::Burst {
                        return Err(Ns2Error::unsupported(
                            at("pacing"),
                            "the ns-2 TFRCP sends evenly paced packets only",
                        ));
                    }
                    tfrcp_at.get_or_insert(g.out.len());
                    tfrcp_flows.push((
                        fi,
                        matches!(sender.strategy, Strategy::RttMultiple { .. }),
                        sender.s2_fallback_m,
                    ));
                    let _ = writeln!(
                        g.out,
                        "set tcp_{i} [new Agent/Message/Tfrcp]\n\
                         $tcp_{i} set fid_ {i}\n\
                         $tcp_{i} set packetSize_ {wire}\n\
                         $tcp_{i} setup {{{cfg}}}\n\
                         set sink_{i} [new Agent/Message/TfrcpSink]\n\
                         $sink_{i} set packetSize_ {hdr}\n\
                         $ns attach-agent ${s} $tcp_{i}\n$ns attach-agent ${d} $sink_{i}\n\
                         $ns connect $tcp_{i} $sink_{i}\n\
                         $ns at {start} \"$tcp_{i} start\"",
                        wire = sender.s + hdr,
                        cfg = tfrcp_setup(&sender, sub_seed(sc.seed, 1_000_000 + i as u64)),
                        start = secs(start_d)
                    );
                    if stop < end {
                        let _ = writeln!(g.out, "$ns at {stop} \"$tcp_{i} stop\"");
                    }
                    report("tfrcp", sender.s, sender.s + hdr);
                }
                ProtocolConfig::Cbr(c) => {
                    let payload = c.payload;
                    let wire = payload + hdr;
                    // The configuration keeps the interval, not the rate:
                    // the rate is the scenario's (it has no default).
                    let rate = f
                        .options
                        .rate()
                        .map(|r| r.0)
                        .ok_or_else(|| Ns2Error::unsupported(at("rate"), "required"))?;
                    debug_assert_eq!(
                        c.interval,
                        Duration::transmission(u64::from(wire), rate),
                        "CBR interval is wire size over the rate"
                    );
                    let _ = writeln!(
                        g.out,
                        "set tcp_{i} [new Agent/UDP]\n$tcp_{i} set fid_ {i}\n$tcp_{i} set packetSize_ {wire}\n\
                         set sink_{i} [new Agent/LossMonitor]\n\
                         $ns attach-agent ${s} $tcp_{i}\n$ns attach-agent ${d} $sink_{i}\n\
                         $ns connect $tcp_{i} $sink_{i}\n\
                         set app_{i} [new {traffic}]\n$app_{i} set packetSize_ {wire}\n\
                         $app_{i} set rate_ {rate}\n{shape}$app_{i} attach-agent $tcp_{i}\n\
                         $ns at {start} \"$app_{i} start\"",
                        start = secs(start_d),
                        traffic = if pareto.is_some() {
                            "Application/Traffic/Pareto"
                        } else {
                            "Application/Traffic/CBR"
                        },
                        // Pareto ON/OFF: ns-2 draws both periods from one
                        // shape, as satcc does.
                        shape = match pareto {
                            Some((on, off, k)) => format!(
                                "$app_{i} set burst_time_ {}\n$app_{i} set idle_time_ {}\n$app_{i} set shape_ {k}\n",
                                secs(on),
                                secs(off)
                            ),
                            None => format!("$app_{i} set random_ 0\n"),
                        },
                    );
                    if stop < end {
                        let _ = writeln!(g.out, "$ns at {stop} \"$app_{i} stop\"");
                    }
                    report("cbr", payload, wire);
                }
            }
            id += 1;
        }
    }

    if let Some(pos) = tfrcp_at {
        g.out.insert_str(pos, &tfrcp_library(&tfrcp_flows)?);
    }
    write_reporting(&mut g, &reports, &monitored, mfrom, end);
    let _ = writeln!(g.out, "$ns at {} finish\n$ns run", secs(sc.duration.0));
    Ok(Ns2Script {
        tcl: g.out,
        links: g.links,
        monitored,
    })
}

/// A TCP sender `tcp_i`, every parameter from the simulator's
/// configuration; `at` names a field of the flow. Each setting of the
/// sender is either written (a variable is set only where satcc's value
/// differs from the one ns-2 2.35 already runs with, so that scripts of
/// flows at satcc's defaults do not change), is what ns-2 does anyway, is
/// one of the two documented default differences (`rtt_timing =
/// "timestamps"`, `rto_ssthresh = "flightsize"`), or is refused naming
/// the field. Source references are to ns-2.35's tcp/*.cc and
/// tcl/lib/ns-default.tcl.
fn write_tcp(
    out: &mut String,
    i: usize,
    sender: &tcp::SenderConfig,
    receiver: &tcp::ReceiverConfig,
    hdr: u32,
    at: &dyn Fn(&str) -> String,
) -> Result<(), Ns2Error> {
    // TCP `profile = "linux"` floors the RTO's variance term at min_rto
    // (RTO = SRTT + max(4·RTTVAR, min_rto), Linux's tcp_rtt_estimator()).
    // ns-2's rtt_timeout() (tcp.cc) floors the RTO itself at minrto_:
    // writing minrto_ would model another timer, so it is refused.
    if sender.rto_min_on_variance {
        return Err(Ns2Error::unsupported(
            at("profile"),
            "\"linux\" floors the RTO's variance term at min_rto (Linux's \
             RTO = SRTT + max(4*RTTVAR, 200 ms)); ns-2 floors the RTO itself (minrto_): \
             use profile = \"rfc\" with min_rto = \"200ms\" for ns-2's own timer"
                .to_string(),
        ));
    }
    // CUBIC and Hybla: ns-2 2.35's Agent/TCP/Linux runs Linux 2.6.22's own
    // congestion-control modules (tcp/linux/src/, "from linux-2.6.22.6"),
    // chosen by `select_ca`, over its SACK recovery, at their defaults.
    // Hybla's rtt0 is satcc's 25 ms. Its tcp_cubic.c is CUBIC v2.1, not
    // RFC 9438: β 819/1024 (0.8, not 0.7), C 0.4 (bic_scale 41), fast
    // convergence and tcp_friendliness on, growth capped at
    // max_increment = 16 segments per 100 ms above the origin, cnt = 50
    // before the first loss, no HyStart (docs/validation.md "CUBIC and
    // Hybla": the export stays the module's defaults, the difference is
    // measured there).
    let linux_ca = match sender.growth {
        // BBR came to Linux in 4.9; ns-2 2.35's tcp/linux/ holds the
        // 2.6 modules only.
        Growth::Bbr(_) => {
            return Err(Ns2Error::unsupported(
                at("protocol"),
                "\"bbr\" has no ns-2 2.35 counterpart (its Agent/TCP/Linux carries Linux 2.6's \
                 modules; BBR arrived in Linux 4.9): compare bbr with the kernel through \
                 satcc shell instead"
                    .to_string(),
            ));
        }
        // `sack_recovery = "ns2-linux"` with Reno's growth is
        // Agent/TCP/Linux under its built-in "reno" (tcp-linux.cc
        // CongestionControlManager: ops_list[0] = &tcp_reno): Linux
        // 2.6.22's tcp_reno_ssthresh(), tcp_reno_min_cwnd() and
        // tcp_reno_cong_avoid() over the agent's own recovery.
        Growth::Reno if sender.sack_recovery == SackRecovery::Ns2Linux => Some("reno"),
        Growth::Reno => None,
        // The modules' parameters are fixed at their defaults (the
        // script cannot set module parameters), and ns-2 2.35's
        // tcp_cubic.c predates HyStart (Linux 2.6.29): other values
        // would model another sender.
        // `cubic_variant = "linux-2.6.22"` at its defaults is the module
        // ns-2 runs, so it exports the same way.
        Growth::Cubic(c) if c != CubicConfig::default() && c != CubicConfig::linux_2_6_22() => {
            return Err(Ns2Error::unsupported(
                at(if c.slow_start != SlowStart::Standard {
                    "slow_start"
                } else {
                    "protocol"
                }),
                "ns-2 2.35's Agent/TCP/Linux runs Linux 2.6.22's tcp_cubic.c (CUBIC v2.1) \
                 at its defaults, which no key changes (it has no HyStart): leave slow_start \
                 and the cubic_* keys unset but cubic_variant (and profile = \"rfc\")"
                    .to_string(),
            ));
        }
        // Likewise `hybla_variant = "linux-2.6.22"`.
        Growth::Hybla(h)
            if h != HyblaConfig::default()
                && h != (HyblaConfig {
                    variant: HyblaVariant::Linux2622,
                    ..HyblaConfig::default()
                }) =>
        {
            return Err(Ns2Error::unsupported(
                at("hybla_rtt0"),
                "ns-2 2.35's Agent/TCP/Linux runs Linux 2.6.22's tcp_hybla.c at its default \
                 rtt0 of 25 ms: leave hybla_rtt0 unset"
                    .to_string(),
            ));
        }
        Growth::Cubic(_) => Some("cubic"),
        Growth::Hybla(_) => Some("hybla"),
    };
    let agent = match (linux_ca, sender.variant) {
        (Some(_), _) => "Agent/TCP/Linux",
        (None, Variant::Reno) => "Agent/TCP/Reno",
        (None, Variant::NewReno) => "Agent/TCP/Newreno",
        (None, Variant::Sack) => "Agent/TCP/Sack1",
    };
    // RTT timing. `timestamps_ false` (ns-default.tcl) is ns-2's Karn
    // timing: output() times one new segment at a time (rtt_active_,
    // rtt_seq_, rtt_ts_), reset_rtx_timer() abandons it at a fast
    // retransmit or a timeout, and newack() samples it when it is
    // acknowledged, the ACK that ends the backoff (t_backoff_ = 1). That
    // is what satcc's "karn" models (the same timed segment, abandoned at
    // the same points; ns-2 also ends the backoff, without a sample, on
    // partial ACKs of a recovery: partialnewack(), Sack1TcpAgent::recv).
    // satcc's default, "timestamps" (a
    // sample from every ACK of new data, each ending the backoff), is
    // exported as the same `timestamps_ false`: a documented default
    // difference (docs/ns2.md "TCP RTT timing", docs/validation.md), not
    // refused. `timestamps_ true` would not be it either: headersize()
    // adds ts_option_size_ (10 B) to every data packet, newack() ends the
    // backoff on a timestamp sample only with ts_resetRTO_ (default
    // false), and the partial ACKs of a NewReno or SACK recovery
    // (partialnewack(), Sack1TcpAgent::recv) give no sample at all.
    let timestamps = match (linux_ca, sender.rtt_timing) {
        // The Linux agent samples RTT from the timestamp echo, as Linux
        // does (its sink is told to echo them: `ts_echo_rfc1323_`).
        (Some(_), _) => "true",
        (None, RttTiming::Karn | RttTiming::Timestamps) => "false",
    };
    // What a timeout halves into ssthresh. ns-2 has no choice here:
    // TcpAgent::timeout() calls slowdown(CLOSE_SSTHRESH_HALF |
    // CLOSE_CWND_RESTART), which sets ssthresh_ = windowd() / 2 =
    // min(cwnd_, window_) / 2 (floored at 2), and the fast-recovery
    // inflation is not in it (RenoTcpAgent::timeout() zeroes dupwnd_
    // first; Sack1 never inflates cwnd_). That is satcc's "window".
    // satcc's default, RFC 5681's "flightsize", has no ns-2 variable and
    // is exported as the same window halving: a documented default
    // difference (docs/validation.md, the single-flow TCP cross-check;
    // docs/ns2.md), not refused.
    match sender.rto_ssthresh {
        RtoSsthresh::Window | RtoSsthresh::FlightSize => {}
    }
    let _ = writeln!(
        out,
        "set tcp_{i} [new {agent}]\n\
         $tcp_{i} set fid_ {i}\n\
         $tcp_{i} set packetSize_ {mss}\n\
         $tcp_{i} set tcpip_base_hdr_size_ {hdr}\n\
         $tcp_{i} set window_ {rwnd}\n\
         $tcp_{i} set windowInit_ {iw}\n\
         $tcp_{i} set syn_ false\n\
         $tcp_{i} set delay_growth_ false\n\
         $tcp_{i} set timestamps_ {timestamps}\n\
         $tcp_{i} set maxburst_ 0\n\
         $tcp_{i} set tcpTick_ {tick}\n\
         $tcp_{i} set minrto_ {minrto}\n\
         $tcp_{i} set maxrto_ {maxrto}\n\
         $tcp_{i} set rtxcur_init_ {initrto}\n\
         $tcp_{i} set numdupacks_ {dup}",
        mss = sender.mss,
        rwnd = receiver.rwnd,
        iw = sender.initial_window,
        tick = secs(sender.clock_granularity),
        minrto = secs(sender.min_rto),
        maxrto = secs(sender.max_rto),
        initrto = secs(sender.initial_rto),
        dup = sender.dupack_threshold,
    );
    // Limited Transmit (RFC 3042). ns-2's `singledup_` (default 1,
    // ns-default.tcl) is honoured by all three agents (tcp-reno.cc,
    // tcp-newreno.cc and tcp-sack1.cc call send_one() on a duplicate ACK
    // when dupacks_ < numdupacks_ && singledup_), and send_one() (tcp.cc)
    // sends one new segment within cwnd_ + dupacks_ and the receiver's
    // window: on each of the first numdupacks_ - 1 duplicate ACKs. satcc
    // sends on the first two only, as RFC 3042 says, so the two agree for
    // a dupack threshold of 3 or less and ns-2 cannot express more.
    if let Some(ca) = linux_ca {
        let _ = writeln!(out, "$ns at 0 \"$tcp_{i} select_ca {ca}\"");
    }
    if sender.limited_transmit {
        if sender.dupack_threshold > 3 {
            return Err(Ns2Error::unsupported(
                at("limited_transmit"),
                format!(
                    "ns-2's Limited Transmit (singledup_) sends a new segment on each of the first \
                     numdupacks_ - 1 = {} duplicate ACKs, satcc on the first two only: set \
                     limited_transmit = false or dupack_threshold <= 3",
                    sender.dupack_threshold - 1
                ),
            ));
        }
    } else {
        let _ = writeln!(out, "$tcp_{i} set singledup_ 0");
    }
    // NewReno's timer on partial ACKs (RFC 6582 §4.2). ns-2's
    // `newreno_changes1_` (Agent/TCP/Newreno, default 1, ns-default.tcl):
    // partialnewack_helper() (tcp-newreno.cc) restarts the timer on every
    // partial ACK with 0 (Slow-but-Steady) and on the first of a recovery
    // only with 1 (Impatient; firstpartial_ is cleared when recovery
    // ends). Only NewReno has the choice, in satcc as in ns-2: Reno leaves
    // recovery on the first new ACK, and SACK restarts the timer on every
    // partial ACK in both (Sack1TcpAgent::recv with partial_ack_ false,
    // ns-2's default), so the field has no effect on those variants.
    if sender.variant == Variant::NewReno && !sender.newreno_impatient {
        let _ = writeln!(out, "$tcp_{i} set newreno_changes1_ 0");
    }
    // SACK loss recovery. `sack_recovery = "ns2"` is what Agent/TCP/Sack1
    // does with its defaults (partial_ack_ 0, precisionReduce_ 1,
    // LimTransmitFix_ 0: tcp-sack1.cc dupack_action(), recv(),
    // send_much()), so nothing is written. satcc's default, RFC 6675, has
    // no ns-2 agent and is exported as the same Sack1: a documented
    // default difference (docs/ns2.md "SACK loss recovery"), not refused.
    // `"ns2-linux"` is Agent/TCP/Linux's own recovery (tcp-linux.cc,
    // scoreboard1.cc), which that agent always runs: the agent chosen
    // above (Agent/TCP/Linux for sack, cubic and hybla) is the whole of
    // its export. cubic and hybla with "rfc6675" go to the same agent, a
    // documented difference (docs/validation.md "CUBIC and Hybla").
    match sender.sack_recovery {
        SackRecovery::Ns2 | SackRecovery::Rfc6675 | SackRecovery::Ns2Linux => {}
    }
    // RACK-TLP (RFC 8985) came to Linux in 4.4-4.18; ns-2 2.35's agents
    // detect loss by duplicate ACKs only.
    if sender.loss_detection.is_rack() {
        return Err(Ns2Error::unsupported(
            at("loss_detection"),
            "ns-2 2.35 has no RACK-TLP (RFC 8985): its SACK agents detect loss by \
             duplicate ACKs only; use loss_detection = \"rfc6675\""
                .to_string(),
        ));
    }
    Ok(())
}

/// The procedures and events that print the `FLOW`, `TFRC`, `TFRCP`,
/// `LINK`, `RED` and `END` lines.
fn write_reporting(
    g: &mut Gen<'_>,
    reports: &[FlowReport],
    monitored: &[usize],
    mfrom: f64,
    end: f64,
) {
    let _ = writeln!(
        g.out,
        "proc delivered {{kind a s pl}} {{\n\
         \x20 if {{$kind == \"tcp\"}} {{ return [expr {{wide([$a set ack_] + 1) * $pl}}] }}\n\
         \x20 if {{$kind == \"tfrc\"}} {{ return [expr {{wide([$s set bytes_]) & 0xFFFFFFFF}}] }}\n\
         \x20 return [expr {{wide([$s set npkts_]) * $pl}}]\n}}\n\
         proc ddiff {{kind e s wire pl}} {{\n\
         \x20 if {{$kind == \"tfrc\"}} {{ return [expr {{(($e - $s) % 4294967296) / $wire * $pl}}] }}\n\
         \x20 return [expr {{$e - $s}}]\n}}\n\
         proc tfrcstat {{a}} {{\n\
         \x20 return [list [$a set rate_] [expr {{wide([$a set ndatabytes_]) & 0xFFFFFFFF}}] [$a set true_loss_rate_]]\n}}\n\
         proc qsum {{qm}} {{\n\
         \x20 global ns\n\
         \x20 set I [$qm get-pkts-integrator]\n\
         \x20 return [expr {{[$I set sum_] + [$I set lasty_] * ([$ns now] - [$I set lastx_])}}]\n}}"
    );
    // Snapshot at measure_from (or the start) for every counter.
    let mut snap = String::from("proc snap {} {\n  global ns snap_\n");
    let mut fin = String::from("proc finish {} {\n  global ns snap_\n");
    for r in reports {
        let FlowReport {
            id: i,
            protocol: proto,
            kind,
            start,
            stop,
            payload: pl,
            wire,
        } = *r;
        let from = start.max(mfrom);
        let active = (stop - from).max(0.0);
        let tfrc = kind == "tfrc";
        let _ = writeln!(snap, "  global tcp_{i} sink_{i}");
        let _ = writeln!(fin, "  global tcp_{i} sink_{i}");
        if mfrom > start && mfrom < stop {
            let _ = writeln!(
                g.out,
                "$ns at {mfrom} {{global tcp_{i} sink_{i} snap_; set snap_(f{i}) [delivered {kind} $tcp_{i} $sink_{i} {pl}]}}"
            );
            if tfrc {
                let _ = writeln!(
                    g.out,
                    "$ns at {mfrom} {{global tcp_{i} snap_; set snap_(tb{i}) [lindex [tfrcstat $tcp_{i}] 1]}}"
                );
            }
        } else {
            let _ = writeln!(g.out, "set snap_(f{i}) 0");
            if tfrc {
                let _ = writeln!(g.out, "set snap_(tb{i}) 0");
            }
        }
        if (stop - end).abs() > 1e-12 && stop < end {
            let _ = writeln!(
                g.out,
                "$ns at {stop} {{global tcp_{i} sink_{i} snap_; set snap_(e{i}) [delivered {kind} $tcp_{i} $sink_{i} {pl}]}}"
            );
            if tfrc {
                let _ = writeln!(
                    g.out,
                    "$ns at {stop} {{global tcp_{i} snap_; set snap_(te{i}) [tfrcstat $tcp_{i}]}}"
                );
            }
        }
        let (endval, tfrc_end) = if stop < end {
            (format!("$snap_(e{i})"), format!("$snap_(te{i})"))
        } else {
            (
                format!("[delivered {kind} $tcp_{i} $sink_{i} {pl}]"),
                format!("[tfrcstat $tcp_{i}]"),
            )
        };
        let counters = match kind {
            "tcp" => format!(
                "[$tcp_{i} set ndatapack_] [$tcp_{i} set nrexmitpack_] [$tcp_{i} set nrexmit_]"
            ),
            "tfrc" | "tfrcp" => format!("[$tcp_{i} set ndatapack_] 0 0"),
            _ => "0 0 0".into(),
        };
        let _ = writeln!(
            fin,
            "  puts \"FLOW {i} {proto} {active} [ddiff {kind} {endval} $snap_(f{i}) {wire} {pl}] {counters}\""
        );
        if kind == "tfrcp" {
            let _ = writeln!(fin, "  puts \"TFRCP {i} [$tcp_{i} stats]\"");
        }
        if tfrc {
            let per_s = if active > 0.0 { 8.0 / active } else { 0.0 };
            let _ = writeln!(
                fin,
                "  set L {tfrc_end}\n  \
                 puts \"TFRC {i} [expr {{8.0 * [lindex $L 0]}}] \
                 [expr {{{per_s} * (([lindex $L 1] - $snap_(tb{i})) % 4294967296)}}] [lindex $L 2]\""
            );
        }
    }
    let _ = writeln!(g.out, "set snap_(t) 0");
    for (k, &li) in monitored.iter().enumerate() {
        let l = &g.links[li];
        let (name, rate, em) = (&l.name, l.rate_bps, l.error_model);
        let edrops = match em {
            Some(e) => format!("[$emd_{e} set npkts_]"),
            None => "0".into(),
        };
        if let Some(e) = em {
            let _ = writeln!(snap, "  global emd_{e}");
            let _ = writeln!(fin, "  global emd_{e}");
        }
        for v in ["barr", "bdep", "parr", "pdrops", "qsum", "edrops"] {
            let _ = writeln!(g.out, "set snap_({v}{k}) 0");
        }
        let _ = writeln!(snap, "  global qm_{k}");
        let _ = writeln!(fin, "  global qm_{k}");
        let _ = writeln!(
            snap,
            "  set snap_(bdep{k}) [$qm_{k} set bdepartures_]\n  set snap_(parr{k}) [$qm_{k} set parrivals_]\n  \
             set snap_(pdrops{k}) [$qm_{k} set pdrops_]\n  set snap_(qsum{k}) [qsum $qm_{k}]\n  \
             set snap_(edrops{k}) {edrops}"
        );
        let _ = writeln!(
            fin,
            "  set T [expr {{[$ns now] - $snap_(t)}}]\n  \
             puts \"LINK {name} {rate} $T [expr {{wide([$qm_{k} set bdepartures_]) - $snap_(bdep{k})}}] \
             [expr {{[$qm_{k} set parrivals_] - $snap_(parr{k})}}] [expr {{[$qm_{k} set pdrops_] - $snap_(pdrops{k})}}] \
             [expr {{{edrops} - $snap_(edrops{k})}}] [expr {{([qsum $qm_{k}] - $snap_(qsum{k})) / $T}}]\""
        );
    }
    snap.push_str("  set snap_(t) [$ns now]\n}\n");
    g.out.push_str(&snap);
    if mfrom > 0.0 && mfrom < end {
        let _ = writeln!(g.out, "$ns at {mfrom} snap");
    }
    // RED parameters as resolved when the run starts.
    for (k, (name, q)) in g.red.iter().enumerate() {
        let _ = writeln!(
            g.out,
            "$ns at 0 {{global {q}; puts \"RED {name} [${q} set thresh_] [${q} set maxthresh_] [${q} set q_weight_] [${q} set limit_]\"}} ;# {k}"
        );
    }
    fin.push_str("  puts \"END [$ns now]\"\n  flush stdout\n  $ns halt\n}\n");
    g.out.push_str(&fin);
}
