//! What an ns-2 run reports, and reading it from the script's output.

use satcc_sim::protocols::FriendlinessRole;
use satcc_sim::report::metrics::{self, Friendliness};
use satcc_sim::scenario::{FlowSpec, Scenario};

use crate::error::Ns2Error;
use crate::export::Ns2Script;

/// One flow's ns-2 result.
#[derive(Clone, Debug, PartialEq)]
pub struct Ns2Flow {
    /// Flow id, in scenario order (as satcc's `FlowSummary::id`).
    pub id: u32,
    /// Protocol name.
    pub protocol: String,
    /// Seconds over which goodput is measured.
    pub active_s: f64,
    /// In-order payload bytes delivered in the measured interval.
    pub delivered_bytes: u64,
    /// delivered_bytes * 8 / active_s.
    pub goodput_bps: f64,
    /// Data packets sent, retransmissions included (`ndatapack_`; 0 for CBR).
    pub packets_sent: u64,
    /// Retransmitted data packets (`nrexmitpack_`).
    pub retransmits: u64,
    /// Retransmission timeouts (`nrexmit_`).
    pub timeouts: u64,
    /// TFRC/CCID3 flows: what ns-2's agents expose beyond goodput.
    pub tfrc: Option<Ns2Tfrc>,
    /// TFRCP flows: the OTcl sender's round counters.
    pub tfrcp: Option<Ns2Tfrcp>,
}

/// What the script's OTcl TFRCP sender reports for one flow (a `TFRCP`
/// line), over the whole run (not only the measured interval).
#[derive(Clone, Debug, PartialEq)]
pub struct Ns2Tfrcp {
    /// Rounds closed.
    pub rounds: u64,
    /// Rounds that lost nothing and doubled the rate.
    pub doubled: u64,
    /// Packets counted lost (sum of y).
    pub lost: u64,
    /// Packets counted received (sum of x).
    pub received: u64,
    /// Mean p = y/(x+y) over the rounds that lost packets.
    pub mean_lossy_p: f64,
    /// The rate when the run ended, packets/s.
    pub rate_end_pps: f64,
}

/// What ns-2's `Agent/TFRC` and `Agent/TFRCSink` expose for one flow (a
/// `TFRC` output line). The loss *event* rate p is not among them: ns-2
/// keeps it in C++ locals (`TfrcSinkAgent::est_loss`, the feedback
/// header's `flost`) that no bound variable reaches.
#[derive(Clone, Debug, PartialEq)]
pub struct Ns2Tfrc {
    /// The sender's allowed rate X at the end of the measured interval
    /// (`rate_`, payload bytes/s, times 8), b/s.
    pub x_end_bps: f64,
    /// Payload the sender sent in the measured interval (`ndatabytes_`
    /// difference) times 8 over the active time, b/s: the mean X.
    pub send_bps: f64,
    /// The receiver's cumulative *packet* loss rate since the start
    /// (`true_loss_rate_` = lost / (received + lost)), not p.
    pub packet_loss_rate: f64,
}

/// One monitored link direction's ns-2 result.
#[derive(Clone, Debug, PartialEq)]
pub struct Ns2Link {
    /// Link name as in satcc (`bottleneck`, `bottleneck.rev`, ...).
    pub name: String,
    /// The transmitting node, by satcc's name.
    pub from: String,
    /// The receiving node, by satcc's name.
    pub to: String,
    /// Link rate.
    pub rate_bps: u64,
    /// Seconds measured.
    pub interval_s: f64,
    /// Bytes that left the queue onto the link (errored packets included:
    /// they occupy the link).
    pub departed_bytes: u64,
    /// Packets that arrived at the queue.
    pub arrivals: u64,
    /// Packets dropped by the queue and by the link's error model.
    pub drops: u64,
    /// Packets dropped by the queue (overflow, RED).
    pub drops_queue: u64,
    /// Packets lost to the link's error model (after transmission).
    pub drops_error: u64,
    /// Time-averaged number of packets waiting (the one being transmitted
    /// is not counted).
    pub mean_queue_pkts: f64,
    /// departed_bytes * 8 / (rate_bps * interval_s).
    pub utilization: f64,
}

/// RED parameters as ns-2 resolved them at t = 0.
#[derive(Clone, Debug, PartialEq)]
pub struct Ns2Red {
    /// Link name.
    pub name: String,
    /// `thresh_` (packets).
    pub min_th: f64,
    /// `maxthresh_` (packets).
    pub max_th: f64,
    /// `q_weight_`.
    pub weight: f64,
    /// `limit_`.
    pub limit: u32,
}

/// Everything an ns-2 run reported.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Ns2Result {
    /// Flows, by id.
    pub flows: Vec<Ns2Flow>,
    /// Monitored links.
    pub links: Vec<Ns2Link>,
    /// RED queues' resolved parameters.
    pub red: Vec<Ns2Red>,
    /// Simulated seconds at the end.
    pub end_s: f64,
}

impl Ns2Result {
    /// Jain's index over all flows' goodput (equal shares); `None` when no
    /// flow delivered anything.
    pub fn jain(&self) -> Option<f64> {
        metrics::jain_index(
            &self.flows.iter().map(|f| f.goodput_bps).collect::<Vec<_>>(),
            None,
        )
    }
    /// A monitored link by name.
    pub fn link(&self, name: &str) -> Option<&Ns2Link> {
        self.links.iter().find(|l| l.name == name)
    }
    /// F, E and FC (paper 004 §III-B) of the run, from the flows the
    /// scenario measures, as satcc's summary selects them: TCP against the
    /// rate-controlled flows, CBR and `measured = false` flows left out.
    pub fn friendliness(&self, sc: &Scenario) -> Option<Friendliness> {
        let specs: Vec<&FlowSpec> = sc
            .flows
            .iter()
            .flat_map(|f| std::iter::repeat_n(f, f.count as usize))
            .collect();
        let (mut tcp, mut other) = (Vec::new(), Vec::new());
        for fl in &self.flows {
            match specs.get(fl.id as usize) {
                Some(f) if f.measured => match f.protocol.friendliness_role() {
                    FriendlinessRole::Tcp => tcp.push(fl.goodput_bps),
                    FriendlinessRole::Compared => other.push(fl.goodput_bps),
                    FriendlinessRole::Background => {}
                },
                _ => {}
            }
        }
        metrics::friendliness(&other, &tcp)
    }
    /// Sum of all flows' goodput.
    pub fn total_goodput_bps(&self) -> f64 {
        self.flows.iter().map(|f| f.goodput_bps).sum()
    }
}

fn num<T: std::str::FromStr>(tok: Option<&str>, what: &str, line: &str) -> Result<T, Ns2Error> {
    let t = tok.ok_or_else(|| Ns2Error::parse(line, format!("missing {what}")))?;
    t.parse::<T>()
        .map_err(|_| Ns2Error::parse(line, format!("bad {what} '{t}'")))
}

impl Ns2Script {
    /// Reads what this script printed. `LINK` lines are matched to the
    /// links the script monitors, which gives each its two ends.
    pub fn parse_output(&self, stdout: &str) -> Result<Ns2Result, Ns2Error> {
        let mut r = Ns2Result::default();
        let mut ended = false;
        let mut tfrc_lines = Vec::new();
        let mut tfrcp_lines = Vec::new();
        for line in stdout.lines() {
            let mut t = line.split_whitespace();
            match t.next() {
                Some("FLOW") => {
                    let id: u32 = num(t.next(), "flow id", line)?;
                    let protocol = t
                        .next()
                        .ok_or_else(|| Ns2Error::parse(line, "missing protocol"))?
                        .to_string();
                    let active_s: f64 = num(t.next(), "active_s", line)?;
                    let delivered: f64 = num(t.next(), "delivered_bytes", line)?;
                    let delivered_bytes = delivered.max(0.0) as u64;
                    let packets_sent: u64 = num(t.next(), "packets_sent", line)?;
                    let retransmits: u64 = num(t.next(), "retransmits", line)?;
                    let timeouts: u64 = num(t.next(), "timeouts", line)?;
                    r.flows.push(Ns2Flow {
                        id,
                        protocol,
                        active_s,
                        delivered_bytes,
                        goodput_bps: if active_s > 0.0 {
                            delivered_bytes as f64 * 8.0 / active_s
                        } else {
                            0.0
                        },
                        packets_sent,
                        retransmits,
                        timeouts,
                        tfrc: None,
                        tfrcp: None,
                    });
                }
                Some("TFRC") => {
                    let id: u32 = num(t.next(), "flow id", line)?;
                    let x_end_bps: f64 = num(t.next(), "x_end_bps", line)?;
                    let send_bps: f64 = num(t.next(), "send_bps", line)?;
                    let packet_loss_rate: f64 = num(t.next(), "packet_loss_rate", line)?;
                    tfrc_lines.push((
                        id,
                        line,
                        Ns2Tfrc {
                            x_end_bps,
                            send_bps,
                            packet_loss_rate,
                        },
                    ));
                }
                Some("TFRCP") => {
                    let id: u32 = num(t.next(), "flow id", line)?;
                    tfrcp_lines.push((
                        id,
                        line,
                        Ns2Tfrcp {
                            rounds: num(t.next(), "rounds", line)?,
                            doubled: num(t.next(), "doubled rounds", line)?,
                            lost: num(t.next(), "packets lost", line)?,
                            received: num(t.next(), "packets received", line)?,
                            mean_lossy_p: num(t.next(), "mean p", line)?,
                            rate_end_pps: num(t.next(), "final rate", line)?,
                        },
                    ));
                }
                Some("LINK") => {
                    let name = t
                        .next()
                        .ok_or_else(|| Ns2Error::parse(line, "missing link name"))?;
                    let link = self
                        .monitored
                        .iter()
                        .map(|&i| &self.links[i])
                        .find(|l| l.name == name)
                        .ok_or_else(|| {
                            Ns2Error::parse(line, format!("link '{name}' is not monitored"))
                        })?;
                    let rate_bps: u64 = num(t.next(), "rate_bps", line)?;
                    let interval_s: f64 = num(t.next(), "interval_s", line)?;
                    let departed: f64 = num(t.next(), "departed_bytes", line)?;
                    let arrivals: u64 = num(t.next(), "arrivals", line)?;
                    let drops_queue: u64 = num(t.next(), "drops_queue", line)?;
                    let drops_error: u64 = num(t.next(), "drops_error", line)?;
                    let mean_queue_pkts: f64 = num(t.next(), "mean_queue_pkts", line)?;
                    let departed_bytes = departed.max(0.0) as u64;
                    r.links.push(Ns2Link {
                        name: link.name.clone(),
                        from: link.from.clone(),
                        to: link.to.clone(),
                        rate_bps,
                        interval_s,
                        departed_bytes,
                        arrivals,
                        drops: drops_queue + drops_error,
                        drops_queue,
                        drops_error,
                        mean_queue_pkts,
                        utilization: if interval_s > 0.0 && rate_bps > 0 {
                            departed_bytes as f64 * 8.0 / (rate_bps as f64 * interval_s)
                        } else {
                            0.0
                        },
                    });
                }
                Some("RED") => {
                    let name = t
                        .next()
                        .ok_or_else(|| Ns2Error::parse(line, "missing RED link name"))?
                        .to_string();
                    r.red.push(Ns2Red {
                        name,
                        min_th: num(t.next(), "thresh_", line)?,
                        max_th: num(t.next(), "maxthresh_", line)?,
                        weight: num(t.next(), "q_weight_", line)?,
                        limit: num(t.next(), "limit_", line)?,
                    });
                }
                Some("END") => {
                    r.end_s = num(t.next(), "end time", line)?;
                    ended = true;
                }
                _ => {}
            }
        }
        if !ended {
            return Err(Ns2Error::parse(
                "",
                "ns-2 output has no END line (the run did not finish)",
            ));
        }
        r.flows.sort_by_key(|f| f.id);
        for (id, line, t) in tfrc_lines {
            let f = r.flows.iter_mut().find(|f| f.id == id).ok_or_else(|| {
                Ns2Error::parse(line, format!("TFRC line for flow {id} without a FLOW line"))
            })?;
            f.tfrc = Some(t);
        }
        for (id, line, t) in tfrcp_lines {
            let f = r.flows.iter_mut().find(|f| f.id == id).ok_or_else(|| {
                Ns2Error::parse(
                    line,
                    format!("TFRCP line for flow {id} without a FLOW line"),
                )
            })?;
            f.tfrcp = Some(t);
        }
        Ok(r)
    }
}
