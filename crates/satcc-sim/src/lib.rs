//! satcc's deterministic packet-level discrete-event simulator.
//!
//! A scenario ([`scenario::Scenario`]) becomes a network of links with
//! queues and error models and a set of flows whose endpoints are the sans-IO
//! state machines of `satcc-proto`; [`Sim`] runs its events in (time,
//! insertion) order and [`Sim::finish`] reports.
#![warn(missing_docs)]

mod capture;
pub mod constellation;
pub mod engine;
pub mod error;
pub mod hook;
pub mod metrics;
pub mod packet;
pub mod pcap;
pub mod plot;
pub mod protocols;
pub mod queue;
pub mod refwa_hook;
pub mod report;
pub mod routing;
pub mod run;
pub mod scenario;
pub mod series;
pub mod sim;
pub mod snapshot;
pub mod topology;
pub mod units;

pub use run::{run, RunOptions, RunOutput, SimError};
pub use sim::Sim;
