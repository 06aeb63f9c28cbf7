//! The simulator: a network of links and a set of flows, driven by the
//! event loop below.
//!
//! - `links`: queues, serialisation, propagation, routing, snapshots and
//!   the packet store;
//! - `flows`: the generic endpoint driver and the applications;
//! - `build`: the run built from a scenario;
//! - `options`: how to run ([`RunOptions`]) and what a run gives back
//!   ([`RunOutput`]);
//! - `summary`: the report at the end.
//!
//! The event loop dispatches events to those parts and never names a
//! protocol: endpoints are `crate::protocols::AnySender` and `AnyReceiver`,
//! enums over the protocols' endpoints that forward the
//! `satcc_proto::endpoint` traits' calls (a static switch rather than a
//! trait object's indirect call).

mod build;
pub(crate) mod flows;
pub(crate) mod links;
mod options;
mod summary;
#[cfg(test)]
mod tests;

use satcc_proto::{Duration, Instant};

use crate::engine::{Event, EventQueue};
use crate::report::series::{FlowSample, LinkSample, Series};
use crate::report::{DropCounts, PacketTotals};
use crate::topology::NetDef;

pub use build::flow_starts;
pub(crate) use flows::Flow;
pub(crate) use links::Link;
pub use options::{RunOptions, RunOutput};

// Random stream ids: each component draws from its own stream of the run
// seed, so adding a flow never changes the draws of a link.
const STREAM_LINK: u64 = 1 << 32;
const STREAM_QUEUE: u64 = 2 << 32;
const STREAM_FLOW: u64 = 3 << 32;
const STREAM_JITTER: u64 = 4 << 32;

/// A simulation in progress. Build it with [`Sim::new`], advance it with
/// [`Sim::run_until`], and collect results with [`Sim::finish`].
#[derive(Debug)]
pub struct Sim {
    name: String,
    seed: u64,
    duration: Duration,
    now: Instant,
    events: EventQueue,
    pub(crate) links: Vec<Link>,
    pub(crate) flows: Vec<Flow>,
    nodes: Vec<String>,
    /// Per-flow routes (memory grows with what is routed, not nodes²).
    routes: crate::net::routing::Routes,
    packets: links::PacketStore,
    next_uid: u64,
    totals: PacketTotals,
    drop_reasons: DropCounts,
    interval: Duration,
    measure_from: Instant,
    pub(crate) monitored: Vec<usize>,
    series: Option<Series>,
    /// `Sample` events handled (left out of the events reported).
    samples: u64,
    pcap: Vec<(usize, crate::report::capture::LinkCapture)>,
    /// The built network, for recomputing routes at snapshots.
    net: NetDef,
    /// Which links are up (all, unless a snapshot took some down).
    link_up: Vec<bool>,
    snapshots: Vec<crate::topology::snapshot::Snapshot>,
    refwa: Vec<(
        String,
        std::rc::Rc<std::cell::RefCell<satcc_proto::refwa::Refwa>>,
    )>,
}

impl Sim {
    /// Current simulated time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// The run's end.
    pub fn end(&self) -> Instant {
        Instant::ZERO + self.duration
    }

    /// Events processed so far, time-series samples not counted (a run
    /// reports the same count whether or not it records series).
    pub fn events_processed(&self) -> u64 {
        self.events.processed() - self.samples
    }

    /// Runs every event due no later than `until` (capped at the run's end).
    pub fn run_until(&mut self, until: Instant) {
        let until = until.min(self.end());
        while let Some((t, ev)) = self.events.pop_until(until) {
            self.now = t;
            match ev {
                Event::Arrive(link) => self.on_arrive(link as usize),
                Event::LinkFree(link) => self.on_link_free(link as usize),
                Event::Wake(ep) => self.on_wake(ep),
                Event::Inject(idx) => self.on_inject(idx),
                Event::App { flow, action } => self.on_app(flow as usize, action),
                Event::Sample => self.on_sample(),
                Event::MeasureStart => {
                    for f in &mut self.flows {
                        f.delivered_at_measure = f.delivered_bytes();
                    }
                }
                Event::Snapshot(k) => self.on_snapshot(k as usize),
            }
        }
        self.now = until;
        self.check_conservation();
    }

    fn on_sample(&mut self) {
        self.samples += 1;
        let now = self.now;
        for k in 0..self.monitored.len() {
            let li = self.monitored[k];
            if self.links[li].eager {
                self.catch_up(li);
            }
        }
        for &li in &self.monitored {
            self.links[li].note_queue(now);
        }
        if let Some(s) = self.series.as_mut() {
            s.sample(
                now,
                self.flows.iter().map(|f| {
                    // One view of the receiver gives both counters.
                    let r = f.receiver_totals();
                    FlowSample {
                        delivered_bytes: r.delivered_bytes,
                        sender: f.sender_stats(),
                        feedback_sent: r.feedback_sent,
                    }
                }),
                self.monitored.iter().map(|&li| {
                    let l = &self.links[li];
                    let d = &l.drops;
                    LinkSample {
                        queue_pkts: l.queue_len(),
                        busy_ns: l.busy_ns,
                        drops: [
                            d.total(),
                            d.queue,
                            d.red,
                            d.error,
                            d.ttl,
                            d.hook,
                            d.link_down,
                        ],
                    }
                }),
            );
        }
        let next = now + self.interval;
        if next <= self.end() {
            self.events.push(next, Event::Sample);
        }
    }
}
