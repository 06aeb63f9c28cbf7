//! Link queues: DropTail, RED and strict two-class priority.

pub mod red;
