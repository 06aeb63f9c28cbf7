//! satcc's deterministic packet-level discrete-event simulator.
//!
//! A scenario ([`scenario::Scenario`], pure data) is built into a network
//! ([`topology`]: nodes and directed links; [`net`]: queues, error models,
//! routes, router hooks) and a set of flows whose endpoints are the sans-IO
//! state machines of `satcc-proto`, configured by [`protocols`]. [`Sim`]
//! runs the events in (time, rank) order ([`engine`]) and
//! [`Sim::finish`] reports ([`report`]). Dependencies point one way:
//! [`error`] <- `scenario` <- `topology`/`net`/`protocols` <- `report` <-
//! `sim` <- `run`/`store`. [`RunOptions`] and [`RunOutput`] live beside the
//! simulator ([`sim`]) and [`SimError`] in [`error`], so that the layers
//! below `run` can name them.
#![warn(missing_docs)]

pub mod engine;
pub mod error;
pub mod net;
pub mod partial;
pub mod protocols;
pub mod report;
pub mod run;
pub mod scenario;
pub mod sim;
pub mod store;
pub mod topology;

pub use error::{FieldError, SimError};
pub use run::run;
pub use sim::Sim;
pub use sim::{RunOptions, RunOutput};
