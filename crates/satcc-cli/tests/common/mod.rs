//! Helpers the command-line tests share: the built `satcc`, a free
//! loopback port, and tshark's fields of a capture.
// Each test binary uses some of these, not all.
#![allow(dead_code)]

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

/// tshark's `-T fields` output for capture `pcap` with IPv4 checksums
/// checked, one `Vec` of tab-separated fields per packet; `fields` are the
/// `-e` names. Fails the test if tshark is missing or refuses the file.
pub fn tshark_fields(pcap: &std::path::Path, fields: &[&str]) -> Vec<Vec<String>> {
    let mut c = Command::new("tshark");
    c.args([
        "-r",
        pcap.to_str().expect("utf-8 path"),
        "-o",
        "ip.check_checksum:TRUE",
        "-T",
        "fields",
    ]);
    for f in fields {
        c.args(["-e", f]);
    }
    let out = c
        .output()
        .expect("tshark must be installed (apt-get install -y tshark; scripts/test does it)");
    assert!(
        out.status.success(),
        "tshark: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}
