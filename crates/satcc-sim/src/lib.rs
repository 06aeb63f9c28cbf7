//! satcc's deterministic packet-level discrete-event simulator.
#![warn(missing_docs)]

pub mod error;
pub mod metrics;
pub mod ns2;
pub mod queue;
pub mod report;
pub mod run;
pub mod scenario;
pub mod units;
pub use run::{run, RunOptions, RunOutput, SimError};
