//! `satcc emulate` and `satcc perf` end to end as commands, on loopback.

use std::process::Stdio;

mod common;
use common::{free_port, run, satcc};

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
    let pcap = std::env::temp_dir().join(format!("satcc-real-{}-emu.pcap", std::process::id()));
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
            "--pcap",
            pcap.to_str().unwrap(),
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
    // The capture: every delivered datagram, whole, both directions, with
    // valid IPv4 checksums; the forward ones are DCCP-Data and the reverse
    // ones DCCP-Ack (this tshark has no DCCP-over-UDP dissector, so the
    // DCCP type is read from the payload: byte 8, bits 1-4, RFC 4340 5.1);
    // nothing was left under a temporary name.
    let delivered =
        e["links"][0]["delivered"].as_u64().unwrap() + e["links"][1]["delivered"].as_u64().unwrap();
    let rows = common::tshark_fields(&pcap, &["udp.dstport", "ip.checksum.status", "data.data"]);
    assert_eq!(
        rows.len() as u64,
        delivered,
        "one record per delivered datagram"
    );
    assert!(
        rows.iter().all(|r| r[1] == "1"),
        "IPv4 checksums good (status 1)"
    );
    let dccp_type = |r: &Vec<String>| {
        r.get(2)
            .and_then(|h| h.get(16..18))
            .and_then(|b| u8::from_str_radix(b, 16).ok())
            .map(|b| (b >> 1) & 0x0F)
    };
    let to_server: Vec<_> = rows.iter().filter(|r| r[0] == sp.to_string()).collect();
    let to_client: Vec<_> = rows.iter().filter(|r| r[0] != sp.to_string()).collect();
    assert!(
        to_server.iter().all(|r| dccp_type(r) == Some(2)),
        "DCCP-Data"
    );
    assert!(
        to_client.iter().all(|r| dccp_type(r) == Some(3)),
        "DCCP-Ack"
    );
    assert!(
        !to_client.is_empty()
            && to_server.len() as u64 == e["links"][0]["delivered"].as_u64().unwrap()
    );
    let partial = pcap.with_file_name(format!(
        ".{}.partial",
        pcap.file_name().unwrap().to_string_lossy()
    ));
    assert!(!partial.exists());
    let _ = std::fs::remove_file(&pcap);
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

/// A dumbbell of two TFRC flows and a TFRCP flow through a 4 Mb/s RED
/// bottleneck.
const DUMBBELL: &str = r#"
name = "real-dumbbell"
duration = "5s"
[topology]
kind = "dumbbell"
[topology.bottleneck]
rate = "4Mbps"
delay = "10ms"
queue = { kind = "red", limit = 60 }
[topology.access]
rate = "100Mbps"
delays = ["1ms", "3ms", "5ms"]
[[flows]]
protocol = "tfrc"
count = 2
[[flows]]
protocol = "tfrcp"
"#;

fn summary(dir: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("summary.json")).expect("summary.json written");
    serde_json::from_str(&text).expect("summary.json parses")
}

/// `satcc run --real` on a dumbbell: it takes the scenario's duration in
/// wall-clock time, writes the simulated run's files, keeps the packet
/// books balanced, and fills the bottleneck as the simulator does (the
/// flows' total goodput within 15 % of the simulated one: both are held
/// by the 4 Mb/s bottleneck after a second of slow start at a 30 ms RTT).
#[test]
fn run_real_dumbbell_matches_the_simulated_bottleneck() {
    let file = tmp("dumbbell.toml", DUMBBELL);
    let base = std::env::temp_dir().join(format!("satcc-real-run-{}", std::process::id()));
    let (real_dir, sim_dir) = (base.join("real"), base.join("sim"));
    let started = std::time::Instant::now();
    let out = run(&[
        "run",
        &file,
        "--real",
        "-q",
        "--out",
        real_dir.to_str().unwrap(),
    ]);
    let took = started.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        (4.9..20.0).contains(&took),
        "a 5 s scenario ran {took:.1} s for real"
    );
    let out = run(&["run", &file, "-q", "--out", sim_dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (real, sim) = (summary(&real_dir), summary(&sim_dir));
    for f in ["flows.csv", "links.csv", "goodput.svg"] {
        assert!(real_dir.join(f).exists(), "{f} not written by --real");
    }
    let flows = real["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 3);
    for f in flows {
        assert!(f["goodput_bps"].as_f64().unwrap() > 100e3, "{f}");
        // TFRC counts its feedback; TFRCP's acknowledgements are not
        // counted as such (null), in simulated runs too.
        assert!(f["feedback_packets"].as_u64().is_none_or(|n| n > 0), "{f}");
    }
    let total = |s: &serde_json::Value| -> f64 {
        s["flows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["goodput_bps"].as_f64().unwrap())
            .sum()
    };
    let (r, s) = (total(&real), total(&sim));
    assert!(r < 4e6, "more goodput than the bottleneck carries: {r}");
    assert!(
        (r / s - 1.0).abs() < 0.15,
        "real {r:.0} b/s, simulated {s:.0} b/s"
    );
    // The packet books: nothing is delivered that was not sent.
    let p = &real["packets"];
    let (sent, delivered, dropped) = (
        p["sent"].as_u64().unwrap(),
        p["delivered"].as_u64().unwrap(),
        p["dropped"].as_u64().unwrap(),
    );
    assert!(delivered + dropped <= sent, "{p}");
    // The bottleneck is the monitored link, as in the simulated run.
    assert_eq!(real["links"][0]["name"], sim["links"][0]["name"]);
    let util = real["links"][0]["utilization"].as_f64().unwrap();
    assert!(util > 0.6, "bottleneck utilisation {util}");
    let csv = std::fs::read_to_string(real_dir.join("flows.csv")).unwrap();
    assert!(
        csv.lines().count() > 3 * 40,
        "flows.csv has {} lines",
        csv.lines().count()
    );
    let _ = std::fs::remove_dir_all(&base);
}

/// A scenario `--real` cannot run is refused at once, on one line naming
/// the field, with exit code 2: TCP-Peach is satcc's own TCP sender, with
/// no wire format and no kernel equivalent (the kernel's TCP flows are in
/// `tests/real_tcp.rs`).
#[test]
fn run_real_refuses_peach_on_one_line() {
    let file = tmp("tcp.toml", &DUMBBELL.replace("\"tfrcp\"", "\"peach\""));
    let out = run(&["run", &file, "--real", "--no-files"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("flows[1].protocol"), "{err}");
}

/// The server without --json writes each client's result to stdout (it
/// used to go to stderr only, with the progress lines; issue 34).
#[test]
fn perf_server_text_result_on_stdout() {
    let sp = free_port();
    let addr = format!("127.0.0.1:{sp}");
    let server = satcc()
        .args([
            "perf",
            "--server",
            "--bind",
            &addr,
            "--time",
            "3s",
            "--idle-timeout",
            "1s",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let client = run(&[
        "perf",
        "--client",
        &addr,
        "--protocol",
        "cbr",
        "--rate",
        "1Mbps",
        "--time",
        "1s",
    ]);
    assert!(client.status.success());
    let out = server.wait_with_output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().next().unwrap_or_default();
    assert!(
        line.contains("datagram") && line.contains("bytes in") && line.contains("Mb/s"),
        "server stdout: {text:?}"
    );
}
