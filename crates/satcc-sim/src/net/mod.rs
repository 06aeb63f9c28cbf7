//! The network model: packets, queues, link error models, routes and the
//! router hooks (REFWA) that links carry.

pub mod hook;
pub mod loss;
pub mod packet;
pub mod queue;
pub mod refwa;
pub mod routing;
pub mod shaper;
