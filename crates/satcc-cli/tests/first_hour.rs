//! Issue 33, a new user's first hour: what used to look like success and
//! was not, a real run overwriting a simulated one, and sweeps that held
//! every result before printing any.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn scenario(name: &str) -> String {
    root().join("scenarios").join(name).display().to_string()
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("satcc-first-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `perf --client` to a server that never answers: with `--time` no longer
/// than `--peer-timeout` it used to end "successfully" with 0 feedback
/// packets. It measured nothing: a failure naming the silent peer.
#[test]
fn perf_client_hearing_nothing_fails() {
    // A socket that takes the datagrams and never answers (a server that
    // is not there, or a link that drops everything, look the same).
    let sink = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let to = sink.local_addr().unwrap().to_string();
    for extra in [&[][..], &["--json"][..]] {
        let mut args = vec![
            "perf",
            "--client",
            &to,
            "--protocol",
            "tfrc",
            "--time",
            "1s",
            "--peer-timeout",
            "2s",
        ];
        args.extend_from_slice(extra);
        let out = common::run(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{extra:?}: {err}");
        assert!(err.contains("silent"), "{extra:?}: {err}");
        assert!(out.stdout.is_empty(), "{extra:?}: no report on stdout");
    }
}

/// `run --pcap` on a full file system: the capture cannot be written, so
/// no "wrote …pcap" line, the file absent and a non-zero exit. A 256 KB
/// tmpfs in a mount namespace of the test's own stands for the full disk.
#[test]
fn pcap_on_a_full_disk_is_a_failure() {
    let dir = tmpdir("full");
    let mnt = dir.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let script = format!(
        "mount -t tmpfs -o size=256k none '{m}' && exec '{bin}' run '{sc}' --no-files --pcap uplink --out '{m}/o' -q",
        m = mnt.display(),
        bin = env!("CARGO_BIN_EXE_satcc"),
        sc = scenario("quickstart.toml"),
    );
    let out = std::process::Command::new("unshare")
        .args(["--user", "--mount", "--map-root-user", "sh", "-c", &script])
        .output()
        .expect("unshare");
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stdout {text} stderr {err}");
    assert!(!text.contains("uplink.pcap"), "{text}");
    assert!(err.contains("pcap uplink"), "{err}");
    // The mount went with the namespace; nothing was written here.
    assert!(!mnt.join("o/uplink.pcap").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `sweep --store` on a directory that cannot be written: refused before
/// any run, on one line; it used to report runs "taken from the store"
/// that never were.
#[test]
fn sweep_store_that_cannot_be_written_is_refused_first() {
    let out = common::run(&[
        "sweep",
        &scenario("quickstart.toml"),
        "--set",
        "duration=2s",
        "--vary",
        "flows.0.count=1,2",
        "--seeds",
        "3",
        "--store",
        "/proc/satcc-store",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--store /proc/satcc-store"), "{err}");
    assert!(!err.contains("taken from the store"), "{err}");
    assert!(out.stdout.is_empty());
}

/// A `--real` run and the simulated run of the same scenario write to
/// different default directories, so neither overwrites the other.
#[test]
fn real_run_does_not_overwrite_the_simulated_one() {
    let dir = tmpdir("realdir");
    let sc = scenario("real-geo.toml");
    let run = |extra: &[&str]| {
        let mut args = vec!["run", sc.as_str(), "--set", "duration=2s", "-q"];
        args.extend_from_slice(extra);
        let out = common::satcc()
            .args(&args)
            .current_dir(&dir)
            .output()
            .expect("satcc");
        assert!(
            out.status.success(),
            "{extra:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let sim = run(&[]);
    let real = run(&["--real"]);
    let sim_dir = dir.join("out/real-geo_duration=2s");
    let real_dir = dir.join("out/real-geo_duration=2s-real");
    assert!(sim.contains("out/real-geo_duration=2s/"), "{sim}");
    assert!(real.contains("out/real-geo_duration=2s-real/"), "{real}");
    let events = |d: &Path| -> serde_json::Value {
        let s: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("summary.json")).unwrap())
                .unwrap();
        s["events"].clone()
    };
    // The simulated run's summary is still its own: the simulator is
    // deterministic, so running it again gives the same file.
    let before = std::fs::read(sim_dir.join("summary.json")).unwrap();
    run(&[]);
    assert_eq!(before, std::fs::read(sim_dir.join("summary.json")).unwrap());
    assert!(events(&real_dir).is_u64());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A big sweep streams: each point's block is printed when its runs are
/// done (not after the whole sweep), and memory stays small whatever the
/// number of seeds (a few numbers per run, not every summary). It used to
/// print nothing until the end while growing by ~15 KB per run (2.9 GB for
/// 200 000 runs).
#[test]
// The child is reaped by wait4 (for its own peak RSS), not Child::wait.
#[allow(clippy::zombie_processes)]
fn big_sweep_streams_in_bounded_memory() {
    let mut child = common::satcc()
        .args([
            "sweep",
            &scenario("quickstart.toml"),
            "--set",
            "duration=100ms",
            "--vary",
            "topology.uplink.rate=5Mbps,10Mbps",
            "--seeds",
            "20000",
            "--jobs",
            "2",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("satcc");
    let started = std::time::Instant::now();
    let mut first_block = None;
    let mut blocks = 0;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if line.starts_with("== ") {
            blocks += 1;
            first_block.get_or_insert(started.elapsed());
        }
    }
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it for our own child.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    assert_eq!(r, pid);
    let total = started.elapsed();
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    assert_eq!(blocks, 2);
    let first = first_block.unwrap();
    // The first point is half the runs: its block comes well before the end.
    assert!(
        first.as_secs_f64() < 0.8 * total.as_secs_f64(),
        "first block after {first:?} of {total:?}"
    );
    // ru_maxrss is in KB on Linux.
    assert!(ru.ru_maxrss < 100 * 1024, "peak RSS {} KB", ru.ru_maxrss);
}

/// An interrupted Saratoga PUT rerun at once, from the same address, of
/// the same file: the server ends the abandoned session (keeping its
/// bytes) and resumes, instead of answering "file in use" (STATUS error
/// 15) until the old session's 30 s inactivity timeout.
#[test]
fn interrupted_put_rerun_at_once_resumes() {
    let dir = tmpdir("sara");
    let (inbox, local) = (dir.join("inbox"), dir.join("local"));
    std::fs::create_dir_all(&inbox).unwrap();
    std::fs::create_dir_all(&local).unwrap();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let body: Vec<u8> = (0..2_000_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let src = local.join("big.bin");
    std::fs::write(&src, &body).unwrap();
    let addr = format!("127.0.0.1:{}", common::free_port());
    let mut server = common::satcc()
        .args(["saratoga", "serve"])
        .arg(&inbox)
        .args(["--bind", &addr])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut client = common::satcc()
        .args(["saratoga", "put"])
        .arg(&src)
        .args([&addr, "--rate", "8Mbps"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1200));
    // Ctrl-C's harsher cousin: the client leaves without a word.
    client.kill().unwrap();
    client.wait().unwrap();
    let o = common::satcc()
        .args(["saratoga", "put"])
        .arg(&src)
        .args([&addr, "--rate", "200Mbps", "--json", "--timeout", "5s"])
        .output()
        .unwrap();
    server.kill().unwrap();
    server.wait().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let resumed = v["resumed_bytes"].as_u64().unwrap();
    assert!(resumed > 300_000, "{v}");
    assert!(std::fs::read(inbox.join("big.bin")).unwrap() == body);
    let _ = std::fs::remove_dir_all(&dir);
}

/// goodput.svg says what it shows (issue 33): the seed; per-protocol
/// totals against the busiest link's capacity; the per-flow mean on an
/// axis of its own when flows are many; how many flows the cwnd panel
/// leaves out; links whose queue never held a packet named instead of
/// drawn on top of each other at zero; a panel of drops.
#[test]
fn goodput_svg_says_what_it_shows() {
    let dir = tmpdir("svg");
    let out = common::run(&[
        "run",
        &scenario("quickstart.toml"),
        "--set",
        "flows.0.count=10",
        "--set",
        "flows.1.count=10",
        "--seed",
        "7",
        "--out",
        dir.to_str().unwrap(),
        "-q",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let svg = std::fs::read_to_string(dir.join("goodput.svg")).unwrap();
    assert!(svg.contains("quickstart, seed 7: goodput"), "no seed");
    assert!(svg.contains(">newreno: total of 10<") && svg.contains(">sack: total of 10<"));
    assert!(svg.contains(">uplink capacity<"), "no capacity line");
    assert!(svg.contains("goodput per flow, 20 flows"));
    assert!(svg.contains("congestion window (the first 6 of 20 flows)"));
    // The reverse paths and the downlink never queue in the quickstart.
    assert!(svg.contains("queue empty at every sample: uplink.rev, downlink, downlink.rev"));
    assert!(!svg.contains(">downlink.rev<"), "an empty queue drawn");
    assert!(svg.contains("packets dropped per interval"));
    assert!(svg.contains(">uplink (errors)<"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Smaller points of issue 33: `duration_s` of a 60 s run is 60 (was
/// 60.00000000000001); `perf --interval 0`, `emulate` relaying to its
/// own address and `emulate --overhead 1000000000` are refused on one
/// line, exit 2.
#[test]
fn smaller_guards() {
    let out = common::run(&["run", &scenario("quickstart.toml"), "--json", "-q"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["duration_s"].as_f64(), Some(60.0), "{}", v["duration_s"]);

    let sink = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let to = sink.local_addr().unwrap().to_string();
    for args in [
        vec![
            "perf",
            "--client",
            to.as_str(),
            "--interval",
            "0",
            "--time",
            "1s",
        ],
        vec![
            "perf",
            "--client",
            to.as_str(),
            "--protocol",
            "tcp",
            "--interval",
            "0",
        ],
        vec![
            "emulate",
            "--listen",
            to.as_str(),
            "--to",
            to.as_str(),
            "--preset",
            "geo",
            "--duration",
            "1s",
        ],
        vec![
            "emulate",
            "--listen",
            "127.0.0.1:0",
            "--to",
            to.as_str(),
            "--preset",
            "geo",
            "--overhead",
            "1000000000",
            "--duration",
            "1s",
        ],
    ] {
        let out = common::run(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains("--interval") || err.contains("--listen") || err.contains("--overhead"),
            "{err}"
        );
    }
}
