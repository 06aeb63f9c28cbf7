//! `satcc saratoga` as commands on loopback: serve, put, get, the JSON
//! report, errors and exit codes, and a server killed mid-transfer.

use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::Duration;

mod common;
use common::{free_port, run, satcc};

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("satcc-sarcli-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn pattern(n: usize) -> Vec<u8> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn serve(dir: &PathBuf, addr: &str) -> Child {
    let c = satcc()
        .args(["saratoga", "serve"])
        .arg(dir)
        .args(["--bind", addr])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    c
}

#[test]
fn put_get_json_and_errors() {
    let (inbox, local) = (tempdir("inbox"), tempdir("local"));
    let addr = format!("127.0.0.1:{}", free_port());
    let mut server = serve(&inbox, &addr);
    let src = local.join("data.bin");
    let body = pattern(300_000);
    std::fs::write(&src, &body).unwrap();

    let o = satcc()
        .args(["saratoga", "put"])
        .arg(&src)
        .args([&addr, "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["bytes"], 300_000);
    assert_eq!(v["checksum"], "sha1");
    assert_eq!(v["verified"], true);
    assert!(v["goodput_bps"].as_f64().unwrap() > 0.0);
    assert!(v["status_frames"].as_u64().unwrap() > 0);
    assert!(std::fs::read(inbox.join("data.bin")).unwrap() == body);

    let dest = local.join("copy.bin");
    let o = satcc()
        .args(["saratoga", "get", &addr, "data.bin"])
        .arg(&dest)
        .args(["--rate", "100Mbps"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let line = String::from_utf8_lossy(&o.stdout);
    assert!(
        line.contains("300 KB") && line.contains("sha1 verified"),
        "{line}"
    );
    assert!(std::fs::read(&dest).unwrap() == body);

    // Without a checksum the bytes arrive but nothing checked them: the
    // report says so, in words and in JSON.
    let o = satcc()
        .args(["saratoga", "put"])
        .arg(&src)
        .args([&addr, "--as", "unchecked.bin", "--checksum", "none"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let line = String::from_utf8_lossy(&o.stdout);
    assert!(line.contains("not verified: no checksum"), "{line}");
    let o = satcc()
        .args(["saratoga", "put"])
        .arg(&src)
        .args([
            &addr,
            "--as",
            "unchecked2.bin",
            "--checksum",
            "none",
            "--json",
        ])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (v["ok"].clone(), v["verified"].clone()),
        (true.into(), false.into())
    );

    // Refused: the name exists on the server; unknown file; bad name;
    // bad option value. One line each, naming the problem.
    let o = satcc()
        .args(["saratoga", "put"])
        .arg(&src)
        .arg(&addr)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("error 5"));
    let o = run(&["saratoga", "get", &addr, "absent", "--quiet"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("file not found"));
    let o = run(&["saratoga", "get", &addr, "../etc/passwd"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("NAME: name '../etc/passwd'"));
    let o = satcc()
        .args(["saratoga", "put"])
        .arg(&src)
        .args([&addr, "--rate", "fast"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--rate 'fast'"));
    for (flag, value, says) in [
        (
            "--timestamp",
            "posix16",
            "--timestamp 'posix16': expected none, posix32",
        ),
        (
            "--receive-rate",
            "measured",
            "--receive-rate 'measured': expected predicted or delivery",
        ),
        (
            "--loss-filter",
            "none",
            "--loss-filter 'none': expected all or spike",
        ),
        (
            "--progress-timeout",
            "0s",
            "--progress-timeout '0s': expected a non-zero",
        ),
        (
            "--progress-timeout",
            "10s,xrtt",
            "'xrtt': expected N followed by 'rtt'",
        ),
    ] {
        let o = satcc()
            .args(["saratoga", "put"])
            .arg(&src)
            .args([&addr, flag, value])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{flag} {value}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{flag} {value}: {err}");
    }
    let o = satcc()
        .args(["saratoga", "serve"])
        .arg(&local)
        .args(["--bind", "127.0.0.1:0", "--allow", "192.0.2.0/33"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--allow '192.0.2.0/33': prefix length 0 to 32"),
        "{err}"
    );
    let o = satcc()
        .args(["saratoga", "serve"])
        .arg(&local)
        .args(["--read-only", "--write-only"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    // Every timestamp type and none complete a PUT to our own server.
    for ts in ["none", "posix32", "epoch2000_32", "local"] {
        let o = satcc()
            .args(["saratoga", "put"])
            .arg(&src)
            .args([
                &addr,
                "--as",
                &format!("ts-{ts}"),
                "--timestamp",
                ts,
                "--quiet",
            ])
            .args(["--progress-timeout", "20s,8rtt"])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{ts}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(std::fs::read(inbox.join(format!("ts-{ts}"))).unwrap() == body);
    }
    let help = run(&["saratoga", "--help"]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("satcc saratoga put"));

    server.kill().unwrap();
    let out = server.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(log.contains("put data.bin from 127.0.0.1"), "{log}");
    assert!(log.contains("get data.bin to 127.0.0.1"), "{log}");
}

/// SIGKILL of the server half way: the client fails (exit 1) and no file
/// appears under the final name (only the temporary and its resume
/// record); the restarted server resumes the retried PUT, which sends
/// fewer bytes than the file.
#[test]
fn server_killed_mid_transfer() {
    let (inbox, local) = (tempdir("kinbox"), tempdir("klocal"));
    let addr = format!("127.0.0.1:{}", free_port());
    let mut server = serve(&inbox, &addr);
    let src = local.join("big.bin");
    std::fs::write(&src, pattern(2_000_000)).unwrap();
    let client = satcc()
        .args(["saratoga", "put"])
        .arg(&src)
        .args([&addr, "--rate", "8Mbps", "--timeout", "1s"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    server.kill().unwrap();
    server.wait().unwrap();
    let o = client.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nothing heard"));
    assert!(!inbox.join("big.bin").exists());
    let left: Vec<_> = std::fs::read_dir(&inbox)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut left = left;
    left.sort();
    assert_eq!(
        left,
        vec![
            ".big.bin.partial".to_string(),
            ".big.bin.resume".to_string()
        ]
    );
    // A restarted server keeps them; the retried PUT resumes and sends
    // fewer bytes than the file.
    let mut server = serve(&inbox, &addr);
    let o = satcc()
        .args(["saratoga", "put"])
        .arg(&src)
        .args([&addr, "--rate", "200Mbps", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let (resumed, sent) = (
        v["resumed_bytes"].as_u64().unwrap(),
        v["sent_bytes"].as_u64().unwrap(),
    );
    assert!(resumed > 300_000, "{v}");
    assert!(sent < 2_000_000 - 200_000, "{v}");
    server.kill().unwrap();
    server.wait().unwrap();
    assert!(std::fs::read(inbox.join("big.bin")).unwrap() == pattern(2_000_000));
    assert!(!inbox.join(".big.bin.partial").exists());
    assert!(!inbox.join(".big.bin.resume").exists());
}

/// `satcc saratoga beacon listen --json` reports a peer announced by
/// `beacon send` (EID, willingness) and by `serve --announce`.
#[test]
fn beacon_send_and_listen() {
    let port = free_port();
    let laddr = format!("127.0.0.1:{port}");
    let listener = satcc()
        .args(["saratoga", "beacon", "listen", "--bind", &laddr])
        .args(["--duration", "2s", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let o = run(&[
        "saratoga",
        "beacon",
        "send",
        &laddr,
        "--eid",
        "gs-1",
        "--count",
        "2",
        "--interval",
        "100ms",
        "--tx",
        "capable",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let inbox = tempdir("beacon");
    let saddr = format!("127.0.0.1:{}", free_port());
    let mut server = satcc()
        .args(["saratoga", "serve"])
        .arg(&inbox)
        .args([
            "--bind",
            &saddr,
            "--announce",
            &laddr,
            "--announce-every",
            "200ms",
        ])
        .args(["--eid", "srv-A"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let o = listener.wait_with_output().unwrap();
    server.kill().unwrap();
    server.wait().unwrap();
    assert!(o.status.success());
    let peers: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let gs = peers.iter().find(|p| p["eid"] == "gs-1").expect("gs-1");
    assert_eq!(
        (gs["tx_willing"].as_u64(), gs["rx_willing"].as_u64()),
        (Some(2), Some(3))
    );
    let srv = peers.iter().find(|p| p["eid"] == "srv-A").expect("server");
    assert_eq!(srv["addr"], saddr.as_str());
    // Bad arguments: exit 2.
    let o = run(&["saratoga", "beacon", "send", &laddr, "--tx", "maybe"]);
    assert_eq!(o.status.code(), Some(2));
}
