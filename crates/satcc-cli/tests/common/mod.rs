//! Helpers the command-line tests share: the built `satcc`, and a free
//! loopback port.

use std::net::UdpSocket;
use std::process::{Command, Output};

/// The `satcc` binary this test run built.
pub fn satcc() -> Command {
    Command::new(env!("CARGO_BIN_EXE_satcc"))
}

/// Runs `satcc` with `args` to its end.
pub fn run(args: &[&str]) -> Output {
    satcc().args(args).output().expect("run satcc")
}

/// A loopback port free right now.
pub fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
