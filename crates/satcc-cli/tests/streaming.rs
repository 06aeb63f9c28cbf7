//! flows.csv and links.csv are written while the simulation runs, a chunk
//! of samples at a time on a thread of their own (output::SeriesWriter).
//! These tests hold the streamed files to the text the library formats
//! whole from the same run, so the two paths cannot drift apart, and check
//! that a failed write leaves neither a partial file nor a truncated one.

// Shared helpers; this file needs only `satcc()`.
mod common;

use std::path::{Path, PathBuf};

use common::satcc;
use satcc_sim::scenario::Scenario;
use satcc_sim::RunOptions;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("satcc-stream-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// `satcc run FILE --out DIR -q --set ...` from the repository root.
fn run_to(file: &str, dir: &Path, sets: &[&str]) -> std::process::Output {
    let mut c = satcc();
    c.current_dir(repo_root())
        .args(["run", file, "-q", "--out"])
        .arg(dir);
    for s in sets {
        c.args(["--set", s]);
    }
    c.output().expect("run satcc")
}

/// The files the library formats whole for the same scenario and overrides.
fn whole(file: &str, sets: &[&str]) -> (String, String) {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let sc = Scenario::load(&repo_root().join(file), &sets).expect("scenario");
    let opts = RunOptions {
        series: true,
        ..RunOptions::default()
    };
    let out = satcc_sim::run(&sc, &opts).expect("run");
    let s = out.series.expect("series asked for");
    (s.flows_csv(), s.links_csv())
}

/// Names of the partial files left in `dir`.
fn partials(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".partial"))
        .collect()
}

#[test]
fn streamed_files_equal_the_series_formatted_whole() {
    // The reference scenario over 20 s: 64 flows, 200 samples, so the
    // writer gets several chunks and a last one at the end; and a graph
    // topology whose flow and link names need quoting.
    let cases: [(&str, &[&str]); 2] = [
        ("scenarios/bench.toml", &["duration=20s"]),
        (
            "scenarios/peach-hetero.toml",
            &[
                "duration=12s",
                r#"flows.0.name=a,"b"#,
                r#"topology.links.2.name=bn,"x"#,
                r#"record.links=["bn,\"x", "egress"]"#,
                "record.interval=10ms",
            ],
        ),
    ];
    for (i, (file, sets)) in cases.iter().enumerate() {
        let dir = tmpdir(&format!("equal{i}"));
        let out = run_to(file, &dir, sets);
        assert!(
            out.status.success(),
            "{file}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (flows, links) = whole(file, sets);
        let read = |n: &str| std::fs::read_to_string(dir.join(n)).expect(n);
        assert!(
            flows.lines().count() > 4096,
            "{file}: too few lines to chunk"
        );
        assert!(read("flows.csv") == flows, "{file}: flows.csv differs");
        assert!(read("links.csv") == links, "{file}: links.csv differs");
        assert!(partials(&dir).is_empty(), "{:?}", partials(&dir));
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_failed_write_leaves_no_partial_and_no_truncated_file() {
    // Writes into /dev/full fail with "no space left": the partial file
    // name pointing there makes the disk fill up half way through the run.
    if !Path::new("/dev/full").exists() {
        return;
    }
    let dir = tmpdir("full");
    std::os::unix::fs::symlink("/dev/full", dir.join(".flows.csv.partial")).expect("symlink");
    let out = run_to("scenarios/bench.toml", &dir, &["duration=20s"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&*dir.to_string_lossy()), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(partials(&dir).is_empty(), "{:?}", partials(&dir));
    assert!(!dir.join("flows.csv").exists());
    assert!(!dir.join("links.csv").exists());
    let _ = std::fs::remove_dir_all(&dir);

    // The final name taken by a directory: the complete file cannot be
    // renamed into place; the run fails and removes what it wrote.
    let dir = tmpdir("blocked");
    std::fs::create_dir_all(dir.join("flows.csv").join("inner")).expect("dir");
    let out = run_to("scenarios/quickstart.toml", &dir, &["duration=5s"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(dir.join("flows.csv").join("inner").is_dir());
    assert!(partials(&dir).is_empty(), "{:?}", partials(&dir));
    let _ = std::fs::remove_dir_all(&dir);

    // A partial file that cannot be created: reported before the run.
    let dir = tmpdir("nocreate");
    std::fs::create_dir_all(dir.join(".links.csv.partial")).expect("dir");
    let out = run_to("scenarios/quickstart.toml", &dir, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!dir.join("flows.csv").exists());
    assert!(!dir.join(".flows.csv.partial").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Ctrl-C (SIGINT) or SIGTERM during a run: the run stops at the end of
/// its slice, says where it was, removes its partial CSV and pcap files,
/// writes nothing under a final name, and exits 128 + the signal.
#[test]
fn an_interrupted_run_leaves_nothing_behind() {
    for (sig, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let dir = tmpdir(&format!("interrupt{sig}"));
        let mut child = satcc()
            .current_dir(repo_root())
            .args(["run", "scenarios/bench.toml", "-q", "--pcap", "bottleneck"])
            .args(["--set", "duration=3000s", "--out"])
            .arg(&dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start satcc");
        // Under way once its partial files exist (the whole run takes
        // seconds; this waits at most 10).
        let started = std::time::Instant::now();
        while partials(&dir).len() < 3 {
            assert!(
                started.elapsed().as_secs() < 10,
                "no partial files: {:?}",
                partials(&dir)
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // SAFETY: signals the child this test started and still owns.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
        let status = loop {
            if let Some(s) = child.try_wait().expect("wait") {
                break s;
            }
            if started.elapsed().as_secs() > 30 {
                let _ = child.kill();
                panic!("signal {sig}: the run did not stop");
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut err)
            .expect("stderr");
        assert_eq!(status.code(), Some(code), "signal {sig}: {err}");
        // (A warning may come first: 3000 s of bench is a large flows.csv.)
        assert!(
            err.lines()
                .any(|l| l.starts_with("satcc: interrupted at ") && l.contains("no files written")),
            "{err}"
        );
        let left: Vec<_> = std::fs::read_dir(&dir)
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert!(left.is_empty(), "signal {sig} left {left:?}");
    }
}
