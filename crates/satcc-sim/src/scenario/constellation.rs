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

use super::{check_queue, Dur, ErrorSpec, FieldError, FlowSpec, LinkSpec, QueueSpec, Rate};

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
pub(crate) struct GroupPath {
    pub(crate) enter: usize,
    pub(crate) exit: usize,
    pub(crate) private: usize,
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

    pub(crate) fn core_len(&self) -> usize {
        match self.shape {
            Shape::Single | Shape::RttGroups => 3,
            Shape::TwoBottlenecks => 5,
        }
    }

    /// Core ISL indices that are bottlenecks, in `isl.bK` order.
    pub(crate) fn bottlenecks(&self) -> &'static [usize] {
        match self.shape {
            Shape::Single | Shape::RttGroups => &[0],
            Shape::TwoBottlenecks => &[0, 2],
        }
    }

    pub(crate) fn path(&self, group: u32) -> GroupPath {
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

    pub(crate) fn updown(&self) -> Duration {
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

    pub(crate) fn isl_queue(&self) -> QueueSpec {
        self.queue.clone().unwrap_or(QueueSpec::DropTail {
            limit: Some(self.buffer_pkts()),
            limit_bytes: None,
        })
    }

    pub(crate) fn link(
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
            shaper: None,
        }
    }

    /// The nodes the constellation has for `flows`, in the order the
    /// build creates them: the core `cJ`, then per flow instance `I` its
    /// private chain `fI.inK`, `fI.outK` and its terminals `sI`, `dI`.
    pub fn node_names(&self, flows: &[FlowSpec]) -> Vec<String> {
        let mut v: Vec<String> = (0..self.core_len()).map(|j| format!("c{j}")).collect();
        let mut i = 0usize;
        for f in flows {
            let p = self.path(f.group.unwrap_or(1));
            for _ in 0..f.count {
                v.extend((1..=p.private).map(|k| format!("f{i}.in{k}")));
                v.extend((1..=p.private).map(|k| format!("f{i}.out{k}")));
                v.push(format!("s{i}"));
                v.push(format!("d{i}"));
                i += 1;
            }
        }
        v
    }

    /// Checks what types cannot; field paths are relative to `topology`.
    pub fn validate(&self, flows: &[FlowSpec]) -> Result<(), FieldError> {
        let at = |f: &str| format!("topology.{f}");
        if self.groups.is_some() && self.shape != Shape::RttGroups {
            return Err(FieldError::new(
                at("groups"),
                "applies to shape \"rtt-groups\" only",
            ));
        }
        if self.groups.is_some_and(|g| !(1..=64).contains(&g)) {
            return Err(FieldError::new(
                at("groups"),
                format!("{} outside 1..=64", self.group_count()),
            ));
        }
        if self.isl_delay.0 == Duration::ZERO {
            return Err(FieldError::new(
                at("isl_delay"),
                "must be greater than zero",
            ));
        }
        if self.buffer == Some(0) {
            return Err(FieldError::new(at("buffer"), "must be at least 1 packet"));
        }
        if self.packet_bytes == 0 {
            return Err(FieldError::new(at("packet_bytes"), "must be at least 1"));
        }
        if let Some(q) = &self.queue {
            check_queue(q, &at("queue"))?;
        }
        check_queue(&self.updown_queue, &at("updown_queue"))?;
        let n = self.group_count();
        for (i, f) in flows.iter().enumerate() {
            if let Some(g) = f.group {
                if !(1..=n).contains(&g) {
                    return Err(FieldError::new(
                        format!("flows[{i}].group"),
                        format!(
                            "{g} outside 1..={n} (shape {:?} has {n} groups)",
                            self.shape
                        ),
                    ));
                }
            }
        }
        let nodes = self.node_names(flows);
        for (i, l) in self.extra_links.iter().enumerate() {
            for (f, v) in [("from", &l.from), ("to", &l.to)] {
                let field = format!("topology.extra_links[{i}].{f}");
                match v {
                    None => {
                        return Err(FieldError::new(
                            field,
                            "missing (extra links name both ends)",
                        ))
                    }
                    Some(n) if !nodes.contains(n) => {
                        return Err(FieldError::new(field, format!("unknown node '{n}'")))
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
}
