//! `satcc emulate` and `satcc perf` end to end as commands, on loopback.

use std::net::UdpSocket;
use std::process::{Command, Output, Stdio};

fn satcc() -> Command {
    Command::new(env!("CARGO_BIN_EXE_satcc"))
}

fn run(args: &[&str]) -> Output {
    satcc().args(args).output().expect("run satcc")
}

/// A loopback port free right now.
fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn tmp(name: &str, text: &str) -> String {
    let p = std::env::temp_dir().join(format!("satcc-real-{}-{name}", std::process::id()));
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

/// A server, an emulator with a link file, and a TFRC client, all with
/// --json: the client's report and the emulator's summary parse, and they
/// agree (what the client sent arrived at the emulator).
#[test]
fn perf_through_emulate() {
    let (sp, ep) = (free_port(), free_port());
    let (srv_addr, emu_addr) = (format!("127.0.0.1:{sp}"), format!("127.0.0.1:{ep}"));
    let link = tmp(
        "link.toml",
        "rate = \"5Mbps\"\ndelay = \"10ms\"\nqueue = { kind = \"droptail\", limit = 30 }\n",
    );
    let server = satcc()
        .args([
            "perf", "--server", "--bind", &srv_addr, "--time", "5s", "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let emu = satcc()
        .args([
            "emulate",
            "--listen",
            &emu_addr,
            "--to",
            &srv_addr,
            "--link",
            &link,
            "--duration",
            "4s",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let client = run(&[
        "perf",
        "--client",
        &emu_addr,
        "--protocol",
        "tfrc",
        "--time",
        "3s",
        "--json",
    ]);
    let emu = emu.wait_with_output().unwrap();
    let server = server.wait_with_output().unwrap();
    assert!(
        client.status.success(),
        "client: {}",
        String::from_utf8_lossy(&client.stderr)
    );
    assert!(client.stderr.is_empty(), "--json prints nothing else");
    let c: serde_json::Value = serde_json::from_slice(&client.stdout).unwrap();
    let e: serde_json::Value = serde_json::from_slice(&emu.stdout).unwrap();
    assert!(emu.status.success());
    let sent = c["packets_sent"].as_u64().unwrap();
    assert!(sent > 300, "{c}");
    assert_eq!(e["links"][0]["name"], "forward");
    assert_eq!(e["links"][0]["arrivals"].as_u64().unwrap(), sent);
    let rtt = c["mean_rtt_s"].as_f64().unwrap();
    assert!((0.02..0.2).contains(&rtt), "mean RTT {rtt}");
    assert_eq!(c["intervals"].as_array().unwrap().len(), 3);
    // The server printed the flow it served, in summary.json's names.
    let line = String::from_utf8_lossy(&server.stdout);
    let s: serde_json::Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    assert_eq!(s["protocol"], "dccp");
    assert!(s["delivered_bytes"].as_u64().unwrap() > 300_000);
    assert!(s["goodput_bps"].as_f64().unwrap() < 5e6);
}

/// Bad input: exit code 2 and one line naming the field.
#[test]
fn bad_input_is_one_line() {
    let link = tmp(
        "bad.toml",
        "rate = \"1Mbps\"\ndelay = \"1ms\"\nerror = { kind = \"gilbert\", p_gb = 2, p_bg = 0.1 }\n",
    );
    for (args, needle) in [
        (
            vec!["emulate", "--to", "127.0.0.1:1", "--link", link.as_str()],
            "error.p_gb",
        ),
        (
            vec!["emulate", "--to", "127.0.0.1:1", "--preset", "meo"],
            "geo, dmc, ipstar, leo",
        ),
        (
            vec!["perf", "--client", "127.0.0.1:1", "--protocol", "reno"],
            "--protocol",
        ),
        (vec!["perf", "--client", "127.0.0.1:1", "--mss", "0"], "mss"),
        (vec!["perf"], "--server or --client"),
    ] {
        let out = run(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

/// A preset printed with --print-link is a valid link file.
#[test]
fn printed_presets_load_back() {
    for p in ["geo", "dmc", "ipstar", "leo"] {
        let out = run(&["emulate", "--preset", p, "--print-link"]);
        assert!(out.status.success());
        let f = tmp(&format!("{p}.toml"), &String::from_utf8_lossy(&out.stdout));
        // Valid: the emulator starts (and stops after 100 ms).
        let out = run(&[
            "emulate",
            "--listen",
            "127.0.0.1:0",
            "--to",
            "127.0.0.1:9",
            "--link",
            &f,
            "--duration",
            "100ms",
            "--json",
        ]);
        assert!(
            out.status.success(),
            "{p}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
