//! Helpers the command-line tests share: the built `satcc`, a free
//! loopback port, tshark's fields of a capture, and (Linux) `satcc` as an
//! unprivileged user with a scratch directory it may write, for the
//! namespace tests.
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

/// The user the namespace tests run satcc as when they run as root.
#[cfg(target_os = "linux")]
pub const NOBODY: u32 = 65534;

/// `satcc` as an unprivileged user: `nobody` when this test runs as root
/// (and `setpriv` exists, and others may run the binary), else the user
/// running it; so the path an ordinary user takes is the one tested.
#[cfg(target_os = "linux")]
pub fn satcc_unprivileged() -> Command {
    use std::path::Path;
    let bin = env!("CARGO_BIN_EXE_satcc");
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if root && Path::new("/usr/bin/setpriv").exists() && others_may_run(Path::new(bin)) {
        let mut c = Command::new("/usr/bin/setpriv");
        let id = NOBODY.to_string();
        c.args(["--reuid", &id, "--regid", &id, "--clear-groups", bin]);
        c
    } else {
        Command::new(bin)
    }
}

/// Whether a user other than the owner may run `bin`: the file and every
/// directory above it executable by others (a checkout under /root is
/// not; the tests then run satcc as root, which still makes its own user
/// namespace, and say so).
#[cfg(target_os = "linux")]
fn others_may_run(bin: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let ok = bin.ancestors().all(|p| {
        p.as_os_str().is_empty()
            || std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o001 != 0)
    });
    if !ok {
        eprintln!(
            "note: {} is not executable by others: satcc runs as root",
            bin.display()
        );
    }
    ok
}

/// A fresh directory anyone may write (the unprivileged satcc writes its
/// files there), named after the test and this process.
#[cfg(target_os = "linux")]
pub fn scratch(name: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let d = std::env::temp_dir().join(format!("satcc-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
    d
}

/// Whether satcc's stderr says the kernel refused the user namespace. A
/// refusal fails the test (a test that passes without checking anything
/// would hide it) unless `SATCC_SKIP_USERNS_TESTS=1` asks to skip these
/// tests knowingly, on a machine whose kernel forbids user namespaces.
#[cfg(target_os = "linux")]
pub fn no_userns(stderr: &str) -> bool {
    let refused = stderr.contains("cannot create a user namespace");
    if refused && std::env::var_os("SATCC_SKIP_USERNS_TESTS").is_none_or(|v| v != "1") {
        panic!(
            "satcc shell could not create a user namespace here; set \
             SATCC_SKIP_USERNS_TESTS=1 to skip the namespace tests knowingly\n{stderr}"
        );
    }
    refused
}
