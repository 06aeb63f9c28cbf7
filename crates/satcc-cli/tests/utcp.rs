//! satcc's TCP senders over real TCP (`satcc perf --protocol peach`, the
//! userspace sender of `satcc_net::utcp`) to a kernel receiver, inside
//! `satcc shell`, unprivileged: the bytes arrive exactly, every segment we
//! emit decodes with good checksums, Peach's dummies leave with DSCP LE
//! and come back as D-SACKs; bad input is one line and exit code 2.
#![cfg(target_os = "linux")]

mod common;

use common::{no_userns, satcc_unprivileged, scratch};

use std::net::Ipv4Addr;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use satcc_proto::wire::tcp::{Endpoints, Packet, Repr};

const US: Ipv4Addr = Ipv4Addr::new(100, 64, 0, 3);

/// A kernel TCP receiver that writes what it reads to a file: Python's
/// sockets, the kernel's TCP with nothing of satcc's.
const RECEIVER: &str = "import socket,sys
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('0.0.0.0', 5201)); s.listen(1); s.settimeout(60)
open(sys.argv[2], 'w').close()
c,_=s.accept(); c.settimeout(60)
with open(sys.argv[1], 'wb') as f:
    while True:
        b=c.recv(65536)
        if not b: break
        f.write(b)
c.close()
";

/// The pcap records (raw IPv4 packets) of a capture.
fn pcap_packets(path: &Path) -> Vec<Vec<u8>> {
    let b = std::fs::read(path).unwrap();
    let mut out = Vec::new();
    let mut at = 24usize;
    while at + 16 <= b.len() {
        let caplen = u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap()) as usize;
        out.push(b[at + 16..at + 16 + caplen].to_vec());
        at += 16 + caplen;
    }
    out
}

/// The client's command: it waits (at most 20 s) for the receiver to
/// say it listens, so a SYN never beats `listen()` to the peer (the
/// kernel would answer it with a RST).
fn when_ready(dir: &Path, client: &str) -> String {
    format!(
        "i=0; while [ ! -e {r} ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done; exec {client}",
        r = dir.join("ready").display()
    )
}

fn run_peach(dir: &Path, link: &str, bytes: u64, protocol: &str) -> Output {
    run_with(
        dir,
        link,
        "",
        &format!("--protocol {protocol} --bytes {bytes}"),
    )
}

/// A transfer through `link` to the Python receiver (after `before`, a
/// shell command in the peer's namespace), the client with `args`.
fn run_with(dir: &Path, link: &str, before: &str, args: &str) -> Output {
    let py = "/usr/bin/python3";
    assert!(
        Path::new(py).exists(),
        "this test's kernel receiver runs {py} (apt-get install -y python3)"
    );
    std::fs::write(dir.join("script.py"), RECEIVER).unwrap();
    std::fs::write(dir.join("link.toml"), link).unwrap();
    let bin = env!("CARGO_BIN_EXE_satcc");
    satcc_unprivileged()
        .args(["shell", "--seed", "3", "--link"])
        .arg(dir.join("link.toml"))
        .arg("--pcap")
        .arg(dir.join("cap.pcap"))
        .arg("--peer")
        .arg(format!(
            "{before}{py} {} {} {}",
            dir.join("script.py").display(),
            dir.join("recv.bin").display(),
            dir.join("ready").display()
        ))
        .args([
            "--",
            "sh",
            "-c",
            &when_ready(
                dir,
                &format!("timeout 120 {bin} perf --client 100.64.0.2:5201 {args} --json"),
            ),
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The issue's test: TCP-Peach (on NewReno) sends 1 MB through a lossy
/// 10 Mb/s link with a two-class priority queue to a kernel receiver.
/// Every byte arrives in place; every segment we emitted (as the link
/// delivered it) has good IP and TCP checksums by our codec and by
/// tshark; the dummies carry DSCP LE and a copy of data already sent; the
/// kernel answered them with D-SACKs, counted as their ACKs.
#[test]
fn peach_transfer_to_a_kernel_receiver_is_byte_exact() {
    let dir = scratch("peach");
    let n = 1_000_000u64;
    let out = run_peach(
        &dir,
        "rate = \"10Mbps\"\ndelay = \"40ms\"\nqueue = { kind = \"priority\", limit = 100 }\nerror = { kind = \"uniform\", per = 0.01 }\n",
        n,
        "peach",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    if no_userns(&stderr) {
        return;
    }
    assert!(out.status.success(), "{stderr}");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    eprintln!("PEACH {j}");
    assert_eq!(j["bytes_acked"], n, "{j}");
    assert_eq!(j["malformed"], 0, "{j}");
    let sent = j["dummies_sent"].as_u64().unwrap();
    let acked = j["dummies_acked"].as_u64().unwrap();
    // The opening Sudden Start alone sends rwnd - 1 (dozens).
    assert!(sent >= 20, "{j}");
    assert!(acked > 0 && acked <= sent, "{j}");
    assert_eq!(j["peach_fallback"], false, "{j}");
    // PER 1e-2 over ~700 data segments: losses, and they were repaired.
    assert!(j["retransmits"].as_u64().unwrap() > 0, "{j}");

    let got = std::fs::read(dir.join("recv.bin")).unwrap();
    assert_eq!(got.len() as u64, n);
    let bad = got
        .iter()
        .enumerate()
        .position(|(i, &b)| b != satcc_net::utcp::payload_byte(i as u64));
    assert_eq!(bad, None, "first wrong byte");

    // Our segments as the link delivered them.
    let (mut ours, mut le, mut isn) = (0u64, 0u64, None);
    for p in pcap_packets(&dir.join("cap.pcap")) {
        let src = Ipv4Addr::new(p[12], p[13], p[14], p[15]);
        if p[9] != 6 || src != US {
            continue;
        }
        let ihl = usize::from(p[0] & 15) * 4;
        assert!(
            satcc_proto::wire::checksum::verify(&p[..ihl]),
            "IP checksum"
        );
        let ep = Endpoints::V4(src, Ipv4Addr::new(p[16], p[17], p[18], p[19]));
        let seg = Packet::new_checked(&p[ihl..]).unwrap();
        let r = Repr::parse(&seg, Some(&ep)).unwrap_or_else(|e| panic!("segment {ours}: {e}"));
        ours += 1;
        if r.flags.contains(satcc_proto::wire::tcp::Flags::SYN) {
            isn = Some(r.seq_number);
            assert!(r.mss.is_some() && r.sack_permitted && r.timestamps.is_some());
            assert!(r.window_scale.is_some());
        }
        if p[1] >> 2 == 1 {
            // A dummy: a copy of data already sent, in its place.
            le += 1;
            let off = r.seq_number.wrapping_sub(isn.unwrap().wrapping_add(1)) as u64;
            let data = seg.payload();
            assert!(!data.is_empty());
            for (i, &b) in data.iter().enumerate() {
                assert_eq!(b, satcc_net::utcp::payload_byte(off + i as u64));
            }
        }
    }
    assert!(ours > 700, "{ours}");
    assert!(le >= acked, "{le} LE segments delivered, {acked} answered");
    let o = Command::new("tshark")
        .arg("-r")
        .arg(dir.join("cap.pcap"))
        .args([
            "-o",
            "tcp.check_checksum:TRUE",
            "-o",
            "ip.check_checksum:TRUE",
            "-Y",
            "ip.src == 100.64.0.3",
            "-T",
            "fields",
            "-e",
            "ip.checksum.status",
            "-e",
            "tcp.checksum.status",
            "-e",
            "ip.dsfield.dscp",
        ])
        .output()
        .expect("tshark must be installed (scripts/test installs it)");
    let st = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = st.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(
        lines.len() as u64,
        ours,
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // 1: good (tshark's PROTO_CHECKSUM_E_GOOD), both checksums.
    assert!(lines.iter().all(|l| l.starts_with("1\t1\t")), "{st}");
    assert_eq!(
        lines.iter().filter(|l| l.ends_with("\t1")).count() as u64,
        le
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// SACK over real TCP: the kernel's SACK blocks drive the RFC 6675
/// recovery; the bytes arrive exactly, and no dummies are sent.
#[test]
fn sack_transfer_to_a_kernel_receiver_is_byte_exact() {
    let dir = scratch("sack");
    let n = 600_000u64;
    let out = run_peach(
        &dir,
        "rate = \"10Mbps\"\ndelay = \"20ms\"\nqueue = { kind = \"droptail\", limit = 30 }\nerror = { kind = \"uniform\", per = 0.02 }\n",
        n,
        "sack",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    if no_userns(&stderr) {
        return;
    }
    assert!(out.status.success(), "{stderr}");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["bytes_acked"], n, "{j}");
    assert_eq!(j["dummies_sent"], 0, "{j}");
    assert!(j["retransmits"].as_u64().unwrap() > 0, "{j}");
    let got = std::fs::read(dir.join("recv.bin")).unwrap();
    assert_eq!(got.len() as u64, n);
    assert!(got
        .iter()
        .enumerate()
        .all(|(i, &b)| b == satcc_net::utcp::payload_byte(i as u64)));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A receiver with D-SACK off (`net.ipv4.tcp_dsack = 0` in the peer's
/// namespace) answers dummies with plain duplicate ACKs: the opening
/// Sudden Start's dummies go unanswered, the sender falls back to NewReno
/// (paper 002 §III-A) and sends no more; the transfer completes.
#[test]
fn peach_falls_back_without_dsack() {
    let dir = scratch("nodsack");
    let out = run_with(
        &dir,
        "rate = \"10Mbps\"\ndelay = \"40ms\"\nqueue = { kind = \"priority\", limit = 100 }\n",
        "echo 0 > /proc/sys/net/ipv4/tcp_dsack && ",
        "--protocol peach --bytes 500000",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    if no_userns(&stderr) {
        return;
    }
    assert!(out.status.success(), "{stderr}");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["bytes_acked"], 500_000, "{j}");
    assert_eq!(j["dummies_acked"], 0, "{j}");
    assert_eq!(j["peach_fallback"], true, "{j}");
    // The opening Sudden Start only (rwnd - 1 of the SYN-ACK's window).
    let sent = j["dummies_sent"].as_u64().unwrap();
    assert!((20..=50).contains(&sent), "{j}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// No server listening: the kernel's RST ends the handshake at once with
/// one line; outside a namespace with the device, one line too; a bad
/// flow key is named. Exit code 2 each time.
#[test]
fn refusals_are_one_line_and_exit_2() {
    let bin = env!("CARGO_BIN_EXE_satcc");
    let out = satcc_unprivileged()
        .args(["shell", "--preset", "geo", "--peer", "sleep 20", "--"])
        .args([
            "timeout",
            "60",
            bin,
            "perf",
            "--client",
            "100.64.0.2:5201",
            "--protocol",
            "peach",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if no_userns(&stderr) {
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("refused the connection (RST)"), "{stderr}");
    let o = common::run(&[
        "perf",
        "--client",
        "100.64.0.2:5201",
        "--protocol",
        "newreno",
        "--iface",
        "nosuch0",
    ]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    assert!(e.contains("--iface nosuch0"), "{e}");
    let o = common::run(&[
        "perf",
        "--client",
        "100.64.0.2:5201",
        "--protocol",
        "peach",
        "--set",
        "peach_adsn=-1",
    ]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("peach_adsn"), "{e}");
    let o = common::run(&[
        "perf",
        "--client",
        "100.64.0.2:5201",
        "--protocol",
        "tfrc",
        "--bytes",
        "10",
    ]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("--bytes: only with --protocol"), "{e}");
}
