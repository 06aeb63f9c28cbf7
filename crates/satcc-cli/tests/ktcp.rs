//! `satcc perf --protocol tcp`: the kernel's TCP with a chosen congestion
//! control, on loopback, measured from TCP_INFO.
#![cfg(target_os = "linux")]

mod common;

use std::process::Stdio;

/// For each congestion control this kernel has of reno and cubic: a 1.5 s
/// flow to a perf server; the client's JSON names the congestion control
/// the socket ran (read back from the kernel), has three intervals with a
/// cwnd and an RTT, a goodput that is its acknowledged bytes over its
/// duration, and the server read every byte written.
#[test]
fn kernel_tcp_flows_report_from_tcp_info() {
    let avail =
        std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap();
    let ccs: Vec<&str> = ["reno", "cubic"]
        .into_iter()
        .filter(|c| avail.split_whitespace().any(|a| a == *c))
        .collect();
    assert!(!ccs.is_empty(), "neither reno nor cubic: {avail}");
    for cc in ccs {
        let port = common::free_port();
        let addr = format!("127.0.0.1:{port}");
        let server = common::satcc()
            .args([
                "perf", "--server", "--bind", &addr, "--time", "4s", "--json",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        let out = common::run(&[
            "perf",
            "--client",
            &addr,
            "--protocol",
            "tcp",
            "--cc",
            cc,
            "--time",
            "1.5s",
            "--interval",
            "0.5s",
            "--json",
        ]);
        let server = server.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(r["protocol"], "tcp");
        assert_eq!(r["cc"], cc);
        let acked = r["bytes_acked"].as_u64().unwrap();
        assert!(acked > 1_000_000, "{r}");
        let d = r["duration_s"].as_f64().unwrap();
        assert!((1.4..3.0).contains(&d), "{d}");
        let g = r["send_rate_bps"].as_f64().unwrap();
        assert!((g - acked as f64 * 8.0 / d).abs() < 1.0, "{g}");
        assert!(r["mss"].as_u64().unwrap() > 0);
        assert!(r["retransmits"].as_u64().is_some());
        let ivs = r["intervals"].as_array().unwrap();
        assert_eq!(ivs.len(), 3, "{r}");
        for iv in ivs {
            assert!(iv["cwnd"].as_u64().unwrap() > 0, "{iv}");
            assert!(iv["rtt_s"].as_f64().unwrap() < 0.1, "{iv}");
            assert!(iv["retransmits"].as_u64().is_some(), "{iv}");
        }
        // The server's line for this client (JSON lines on stdout).
        let lines = String::from_utf8_lossy(&server.stdout).to_string();
        let s: serde_json::Value = lines
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|v| v["protocol"] == "tcp")
            .unwrap_or_else(|| panic!("no tcp line from the server: {lines}"));
        // Every byte written reached the server, and was acknowledged
        // by the close.
        let written = r["data_bytes_sent"].as_u64().unwrap();
        assert_eq!(
            s["delivered_bytes"].as_u64(),
            Some(written),
            "server {s}\nclient {r}"
        );
        assert_eq!(r["bytes_acked_at_close"].as_u64(), Some(written));
        assert!(written >= acked);
    }
}

/// Bad input: one line, exit code 2.
#[test]
fn bad_tcp_options_are_one_line() {
    let port = common::free_port().to_string();
    let addr = format!("127.0.0.1:{port}");
    for args in [
        &[
            "perf",
            "--client",
            &addr,
            "--protocol",
            "tcp",
            "--cc",
            "nope",
        ][..],
        &["perf", "--client", &addr, "--protocol", "tcp", "--cc", ""][..],
        &[
            "perf",
            "--client",
            &addr,
            "--protocol",
            "tfrc",
            "--cc",
            "reno",
        ][..],
        &[
            "perf",
            "--client",
            &addr,
            "--protocol",
            "tcp",
            "--rate",
            "1Mbps",
        ][..],
        // Nothing listens there.
        &[
            "perf",
            "--client",
            &addr,
            "--protocol",
            "tcp",
            "--cc",
            "reno",
        ][..],
    ] {
        let out = common::run(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
    }
}
