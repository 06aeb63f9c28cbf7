//! Kernel TCP in `satcc run --real` and several peers behind one
//! `satcc shell` link (`--peer-delay`), end to end and unprivileged.
//!
//! Run as root (as on the development machine), each test runs satcc as
//! the user `nobody` through `setpriv`, as `tests/shell.rs` does. Where
//! the kernel forbids unprivileged user namespaces the tests fail and say
//! so, unless `SATCC_SKIP_USERNS_TESTS=1` asks to skip them knowingly.
#![cfg(target_os = "linux")]

mod common;

use common::{no_userns, satcc_unprivileged, scratch};

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    p
}

/// A dumbbell: kernel reno with SACK on a 1 ms access link, kernel cubic
/// (`linux_cc`) on a 40 ms one, and satcc's TFRC, through a 4 Mb/s
/// DropTail bottleneck.
const DUMBBELL: &str = r#"
name = "real-tcp-dumbbell"
duration = "6s"
[topology]
kind = "dumbbell"
[topology.bottleneck]
rate = "4Mbps"
delay = "10ms"
queue = { kind = "droptail", limit = 40 }
[topology.access]
rate = "100Mbps"
delays = ["1ms", "40ms", "5ms"]
[record]
links = ["bottleneck", "bottleneck.rev"]
[[flows]]
protocol = "sack"
[[flows]]
protocol = "sack"
linux_cc = "cubic"
[[flows]]
protocol = "tfrc"
"#;

/// `satcc run --real` with kernel TCP and TFRC flows on one dumbbell, as
/// `nobody`: summary.json has every flow, the kernel flows with goodput,
/// RTT, cwnd (flows.csv) and retransmissions from TCP_INFO; each flow's
/// RTT carries its own access delay (the 40 ms flow's mean RTT is 78 ms
/// more than the 1 ms flow's, within 25 ms: both see the same queue);
/// the per-flow packets add up to the bottleneck's arrivals (less what
/// was still on the access links at the end) and the per-flow drops to
/// the links' drops.
#[test]
fn run_real_kernel_tcp_and_tfrc_on_a_dumbbell() {
    let dir = scratch("dumbbell");
    let file = write(&dir, "db.toml", DUMBBELL);
    let out_dir = dir.join("out");
    let started = Instant::now();
    let out = satcc_unprivileged()
        .args(["run", "--real", "-q"])
        .arg(&file)
        .arg("--out")
        .arg(&out_dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let took = started.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if no_userns(&stderr) {
        eprintln!("note: SATCC_SKIP_USERNS_TESTS=1: not checked: {stderr}");
        return;
    }
    assert!(out.status.success(), "{stderr}");
    assert!((5.9..20.0).contains(&took), "a 6 s run took {took:.1} s");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap())
            .unwrap();
    let flows = s["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 3, "{s}");
    let f = |i: usize, k: &str| flows[i][k].clone();
    assert_eq!(f(0, "protocol"), "sack");
    assert_eq!(f(2, "protocol"), "tfrc");
    for i in 0..3 {
        let g = f(i, "goodput_bps").as_f64().unwrap();
        assert!(g > 100e3, "flow {i}: goodput {g}");
    }
    let total: f64 = (0..3).map(|i| f(i, "goodput_bps").as_f64().unwrap()).sum();
    assert!(total < 4e6, "more than the bottleneck: {total}");
    // Kernel flows: segments of the flow's mss (1000 bytes) plus 52
    // bytes of headers; a retransmission count; an RTT above the path's.
    for i in 0..2 {
        let sent = f(i, "packets_sent").as_u64().unwrap();
        let bytes = f(i, "data_bytes_sent").as_u64().unwrap();
        let per = bytes as f64 / sent as f64;
        assert!(
            (1000.0..=1052.0).contains(&per),
            "flow {i}: {per} B a packet"
        );
        assert!(f(i, "retransmits").as_u64().is_some());
        assert!(f(i, "ack_bytes_sent").as_u64().unwrap() > 0);
    }
    let rtt = |i: usize| f(i, "mean_rtt_s").as_f64().unwrap();
    assert!(rtt(0) > 0.022 && rtt(0) < 0.5, "reno RTT {}", rtt(0));
    let diff = rtt(1) - rtt(0);
    eprintln!(
        "goodput {:.0} / {:.0} / {:.0} b/s, mean RTT {:.4} / {:.4} s",
        f(0, "goodput_bps").as_f64().unwrap(),
        f(1, "goodput_bps").as_f64().unwrap(),
        f(2, "goodput_bps").as_f64().unwrap(),
        rtt(0),
        rtt(1)
    );
    assert!(
        (0.053..0.103).contains(&diff),
        "RTTs {:.4} and {:.4}: the 40 ms access link should add 78 ms",
        rtt(0),
        rtt(1)
    );
    // The books: every packet the flows sent forward reached the
    // bottleneck but those still on an access link at the end; every drop
    // is some flow's.
    let links = s["links"].as_array().unwrap();
    assert_eq!(links[0]["name"], "bottleneck");
    let arrivals = links[0]["arrivals"].as_u64().unwrap();
    let sent: u64 = (0..3).map(|i| f(i, "packets_sent").as_u64().unwrap()).sum();
    assert!(
        sent >= arrivals && sent - arrivals <= 40,
        "flows sent {sent}, the bottleneck saw {arrivals}"
    );
    let link_drops: u64 = links.iter().map(|l| l["drops"].as_u64().unwrap()).sum();
    let flow_drops: u64 = (0..3).map(|i| f(i, "drops").as_u64().unwrap()).sum();
    assert_eq!(flow_drops, link_drops, "{s}");
    assert!(link_drops > 0, "the 40-packet queue overflowed: {s}");
    // flows.csv: the kernel flows have a cwnd every interval.
    let csv = std::fs::read_to_string(out_dir.join("flows.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().filter(|l| l.contains(",sack#0,")).collect();
    assert!(rows.len() >= 50, "{} rows", rows.len());
    assert!(rows.iter().all(|r| {
        r.split(',')
            .nth(5)
            .and_then(|c| c.parse::<f64>().ok())
            .is_some_and(|c| c >= 1.0)
    }));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Refusals before anything runs: a congestion control the kernel does
/// not list, named by `flows[i].linux_cc`; TCP-Peach (satcc's own
/// sender), named by `flows[i].protocol`. One line, exit code 2.
#[test]
fn run_real_refuses_unknown_linux_cc_and_peach() {
    let dir = scratch("refuse");
    for (text, needle) in [
        (
            DUMBBELL.replace("\"cubic\"", "\"nosuch\""),
            "flows[1].linux_cc: 'nosuch'",
        ),
        (
            DUMBBELL.replace("linux_cc = \"cubic\"", "").replacen(
                "protocol = \"sack\"",
                "protocol = \"peach\"",
                1,
            ),
            "flows[0].protocol",
        ),
    ] {
        let file = write(&dir, "bad.toml", &text);
        let out = satcc_unprivileged()
            .args(["run", "--real", "--no-files"])
            .arg(&file)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Bad `--peer-delay` values: one line naming the option, exit code 2,
/// before any namespace is made.
#[test]
fn bad_peer_delay_is_one_line() {
    let many = vec!["1ms"; 65].join(",");
    for (value, needle) in [
        ("10ms,fast", "--peer-delay: invalid duration 'fast'"),
        ("-5ms", "--peer-delay: duration '-5ms'"),
        (many.as_str(), "--peer-delay: 65 peers, at most 64"),
    ] {
        let out = common::satcc()
            .args([
                "shell",
                "--preset",
                "geo",
                &format!("--peer-delay={value}"),
                "--",
                "true",
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{err}");
    }
}

/// Network namespaces of `pid`'s threads (`net:[INODE]`).
fn thread_netns(pid: u32) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.flatten()
                .filter_map(|t| std::fs::read_link(t.path().join("ns/net")).ok())
                .map(|l| l.to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v.dedup();
    v
}

/// Every thread of every process now in one of `namespaces`.
fn anyone_in(namespaces: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for p in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = p.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        for ns in thread_netns(pid) {
            if namespaces.contains(&ns) {
                found.push(format!("{pid} {ns}"));
            }
        }
    }
    found
}

/// Ctrl-C (SIGINT) to `satcc run --real` with kernel flows in mid-run:
/// it ends within 2 s, started no process, and no thread of any process
/// is left in the namespaces its kernel flows ran in (so they, their
/// devices and connections are gone).
#[test]
fn interrupting_run_real_leaves_no_namespace() {
    let dir = scratch("interrupt");
    let file = write(&dir, "db.toml", &DUMBBELL.replace("\"6s\"", "\"30s\""));
    let mut cmd = satcc_unprivileged();
    // A suite started in the background by a non-interactive shell runs
    // with SIGINT ignored, and an ignored signal stays ignored across
    // exec: satcc would then, rightly, not stop. Ctrl-C on a terminal
    // is what this test stands for, so the child gets SIGINT's default.
    // SAFETY: signal(2) is async-signal-safe, as pre_exec requires.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = cmd
        .args(["run", "--real", "-q", "--no-files"])
        .arg(&file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // setpriv execs satcc: the child's pid is satcc's.
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut namespaces = Vec::new();
    // Bounded: until the sender threads have joined their namespace.
    while Instant::now() < deadline {
        namespaces = thread_netns(pid);
        if namespaces.len() >= 2 || child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if child.try_wait().unwrap().is_some() {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if no_userns(&stderr) {
            eprintln!("note: SATCC_SKIP_USERNS_TESTS=1: not checked: {stderr}");
            return;
        }
        panic!("satcc ended early: {stderr}");
    }
    assert!(
        namespaces.len() >= 2,
        "satcc's threads are in {namespaces:?}: its own and the senders' namespace"
    );
    std::thread::sleep(Duration::from_millis(1500));
    let children: Vec<u32> = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    assert!(children.is_empty(), "satcc started processes: {children:?}");
    // SAFETY: kill on our own child.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGINT);
    }
    let gone = Instant::now() + Duration::from_secs(2);
    while child.try_wait().unwrap().is_none() && Instant::now() < gone {
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = child.try_wait().unwrap();
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    assert!(status.is_some(), "satcc still running 2 s after SIGINT");
    let mine = std::fs::read_link("/proc/self/ns/net")
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let theirs: Vec<String> = namespaces.into_iter().filter(|n| *n != mine).collect();
    let left = anyone_in(&theirs);
    assert!(left.is_empty(), "left in satcc's namespaces: {left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `satcc shell --peer-delay 20ms,60ms,100ms` on a 10 ms link: three
/// peers, each running a perf server; the shell's kernel TCP flow to each
/// has a minimum RTT of 2 x (10 ms + the peer's delay) (within 0.5 ms
/// below and 15 ms above: serialisation, a loaded machine); the summary
/// lists the peers with their delays and tells each flow's peer, and
/// every peer's flows add up to the link's counts.
#[test]
fn peer_delays_give_each_peer_its_rtt() {
    let dir = scratch("peers");
    let bin = env!("CARGO_BIN_EXE_satcc");
    let d = dir.display();
    let link = write(
        &dir,
        "link.toml",
        "rate = \"20Mbps\"\ndelay = \"10ms\"\nqueue = { kind = \"droptail\", limit = 200 }\n",
    );
    let summary = dir.join("summary.json");
    let cmd = format!(
        "sleep 0.3; for k in 1 2 3; do eval p=\\$SATCC_PEER_$k; \
         {bin} perf --client $p:5201 --protocol tcp --cc reno --time 2s --json > {d}/tcp$k.json & done; \
         wait; [ \"$SATCC_PEER\" = \"$SATCC_PEER_1\" ] && [ \"$SATCC_PEERS\" = \"$SATCC_PEER_1 $SATCC_PEER_2 $SATCC_PEER_3\" ] && exit 5"
    );
    let out = satcc_unprivileged()
        .args(["shell", "--link"])
        .arg(&link)
        .args(["--peer-delay", "20ms,60ms,100ms", "--summary"])
        .arg(&summary)
        .args([
            "--peer",
            &format!("{bin} perf --server --bind $SATCC_SELF:5201"),
            "--",
            "/bin/sh",
            "-c",
            &cmd,
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if no_userns(&stderr) {
        eprintln!("note: SATCC_SKIP_USERNS_TESTS=1: not checked: {stderr}");
        return;
    }
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(
        stderr.contains("peer 100.64.0.4 (SATCC_PEER_3), 100.0 ms more each way"),
        "{stderr}"
    );
    for (k, extra) in [(1, 0.020), (2, 0.060), (3, 0.100)] {
        let j: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("tcp{k}.json"))).unwrap(),
        )
        .unwrap();
        let min = j["min_rtt_s"].as_f64().unwrap();
        let want = 2.0 * (0.010 + extra);
        eprintln!("peer {k}: min RTT {min:.4} s (configured {want:.3})");
        assert!(
            min > want - 0.0005 && min < want + 0.015,
            "peer {k}: min RTT {min}, expected {want}"
        );
        assert!(j["bytes_acked"].as_u64().unwrap() > 0);
    }
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    let peers = s["peers"].as_array().unwrap();
    assert_eq!(peers.len(), 3);
    assert_eq!(peers[2]["addr"], "100.64.0.4");
    assert!((peers[1]["extra_delay_s"].as_f64().unwrap() - 0.060).abs() < 1e-9);
    let flows = s["flows"].as_array().unwrap();
    for (k, dir_name) in [(0usize, "forward"), (1, "reverse")] {
        let sum: u64 = flows
            .iter()
            .filter(|f| f["direction"] == dir_name)
            .map(|f| f["arrived"].as_u64().unwrap())
            .sum();
        assert_eq!(
            sum,
            s["links"][k]["arrivals"].as_u64().unwrap(),
            "{dir_name}"
        );
    }
    for p in 1..=3u64 {
        let of_peer: Vec<_> = flows
            .iter()
            .filter(|f| f["protocol"] == "tcp" && f["peer"].as_u64() == Some(p))
            .collect();
        assert_eq!(of_peer.len(), 2, "peer {p}: a flow each way: {s}");
        let addr = format!("100.64.0.{}", p + 1);
        assert!(of_peer
            .iter()
            .all(|f| f["dst"] == addr.as_str() || f["src"] == addr.as_str()));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
