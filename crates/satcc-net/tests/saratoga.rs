//! Real Saratoga transfers over loopback: PUT and GET of 0 B, 1 B and
//! 1 MB files with STFRC and a fixed rate, directly and through the
//! emulator with loss; integrity (nothing under the final name unless
//! complete and verified); hostile names and frames; concurrent PUTs.

use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration as StdDuration, Instant as StdInstant};

use satcc_net::emu::{LinkConfig, Relay, RelayConfig};
use satcc_net::saratoga::{
    check_name, get, put, Rate, SaratogaServer, ServeConfig, TransferConfig, TransferError,
};
use satcc_proto::saratoga::wire::{
    self, error_code, Checksum, ChecksumType, DescriptorSize, DirEntry, Frame, Properties, Repr,
    RequestType, TransferType,
};
use satcc_proto::Duration;

mod common;
use common::{serial, serve};

fn tempdir(tag: &str) -> PathBuf {
    common::tempdir("satcc-sar", tag)
}

/// Deterministic, incompressible-looking bytes.
fn pattern(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

fn cfg(rate: Rate) -> TransferConfig {
    TransferConfig {
        rate,
        inactivity_timeout: Duration::from_secs(5),
        ..TransferConfig::default()
    }
}

fn no_progress() -> impl FnMut(&satcc_net::saratoga::Progress) -> bool {
    |_| true
}

/// Files in `dir` (names), sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn names_are_single_components() {
    for ok in ["a", "file.bin", "été 2024.txt", "x..y"] {
        assert!(check_name(ok.as_bytes()).is_ok(), "{ok}");
    }
    let long = "a".repeat(201);
    for bad in [
        "",
        ".",
        "..",
        "../etc/passwd",
        "/etc/passwd",
        "a/b",
        "a\\b",
        ".hidden",
        ".x.partial",
        "nul\0byte",
        "tab\there",
        long.as_str(),
    ] {
        assert!(check_name(bad.as_bytes()).is_err(), "{bad:?} accepted");
    }
    assert!(check_name(&[0xff, 0xfe]).is_err());
}

#[test]
fn put_and_get_small_and_1mb_files_stfrc_and_fixed() {
    let _g = serial();
    let dir = tempdir("srv");
    let local = tempdir("cli");
    let server = serve(ServeConfig::new(dir.clone()));
    let mut n = 0;
    for (ri, rate) in [Rate::Stfrc, Rate::Fixed(200_000_000)]
        .into_iter()
        .enumerate()
    {
        for size in [0usize, 1, 1 << 20] {
            n += 1;
            let data = pattern(size, n);
            let src = local.join(format!("src{n}"));
            std::fs::write(&src, &data).unwrap();
            let name = format!("f{ri}-{size}");
            let t = StdInstant::now();
            let rep = put(&src, server.addr, &name, &cfg(rate), &mut no_progress())
                .unwrap_or_else(|e| panic!("put {name}: {e}"));
            assert_eq!(rep.bytes, size as u64);
            assert!(t.elapsed() < StdDuration::from_secs(10));
            let got = std::fs::read(dir.join(&name)).unwrap();
            assert!(got == data, "{name}: PUT bytes differ");
            // And back: GET into another name.
            let back = local.join(format!("back-{name}"));
            let rep = get(server.addr, &name, &back, &cfg(rate), &mut no_progress())
                .unwrap_or_else(|e| panic!("get {name}: {e}"));
            assert_eq!(rep.bytes, size as u64);
            assert!(
                std::fs::read(&back).unwrap() == data,
                "{name}: GET bytes differ"
            );
            eprintln!(
                "{name}: put+get in {:.3} s, get goodput {:.1} Mb/s",
                t.elapsed().as_secs_f64(),
                rep.goodput_bps / 1e6
            );
        }
    }
    let (c, reports) = server.stop();
    assert_eq!(c.completed, 12, "{c:?} {reports:?}");
    assert_eq!(c.failed, 0, "{reports:?}");
    assert!(listing(&dir).iter().all(|f| !f.starts_with('.')));
    assert!(listing(&local).iter().all(|f| !f.starts_with('.')));
}

/// A relay in front of `server` with `link`.
fn relay(server: SocketAddr, link: &str) -> Relay {
    let l = LinkConfig::from_toml_str(link, "test")
        .or_else(|_| LinkConfig::preset(link))
        .unwrap();
    Relay::start(RelayConfig::new("127.0.0.1:0".parse().unwrap(), server, l)).unwrap()
}

#[test]
fn through_the_emulator_with_loss() {
    let _g = serial();
    let dir = tempdir("emu");
    let local = tempdir("emucli");
    let server = serve(ServeConfig::new(dir.clone()));
    let lossy = r#"
rate = "20Mbps"
delay = "10ms"
queue = { kind = "droptail", limit = 200 }
error = { kind = "uniform", per = 1e-3 }
reverse_error = { kind = "uniform", per = 1e-3 }
"#;
    let cases: [(&str, &str, Rate, usize); 3] = [
        ("lossy-stfrc", lossy, Rate::Stfrc, 1 << 20),
        ("lossy-fixed", lossy, Rate::Fixed(16_000_000), 1 << 20),
        ("dmc-fixed", "dmc", Rate::Fixed(50_000_000), 1 << 20),
    ];
    for (i, (tag, link, rate, size)) in cases.into_iter().enumerate() {
        let r = relay(server.addr, link);
        let data = pattern(size, 100 + i as u64);
        let src = local.join(tag);
        std::fs::write(&src, &data).unwrap();
        let rep = put(&src, r.local_addr(), tag, &cfg(rate), &mut no_progress())
            .unwrap_or_else(|e| panic!("{tag}: {e}"));
        let st = r.stop();
        assert!(std::fs::read(dir.join(tag)).unwrap() == data, "{tag}");
        eprintln!(
            "{tag}: {} B in {:.2} s = {:.2} Mb/s, retx {} B, {} STATUS, p = {:?}, drops fwd {} rev {}",
            rep.bytes,
            rep.duration_s,
            rep.goodput_bps / 1e6,
            rep.retransmitted_bytes,
            rep.status_frames,
            rep.loss_event_rate,
            st[0].drops(),
            st[1].drops()
        );
    }
    // And a GET back through the lossy link (the server sends, STFRC).
    let r = relay(server.addr, lossy);
    let back = local.join("back");
    let rep = get(
        r.local_addr(),
        "lossy-stfrc",
        &back,
        &cfg(Rate::Stfrc),
        &mut no_progress(),
    )
    .unwrap_or_else(|e| panic!("get: {e}"));
    let st = r.stop();
    assert!(std::fs::read(&back).unwrap() == pattern(1 << 20, 100));
    eprintln!(
        "get through the lossy link: {:.2} s, drops fwd {} rev {}",
        rep.duration_s,
        st[0].drops(),
        st[1].drops()
    );
    let (c, reports) = server.stop();
    assert_eq!(c.completed, 4, "{reports:?}");
}

/// The receiver (server) stopped half way: the client fails, nothing
/// appears under the final name, the temporary and its resume record are
/// kept; a restarted server resumes the retried PUT from what it holds, so
/// the retry sends fewer bytes than a fresh transfer, and the file
/// arrives byte-identical. With resuming off, the temporary goes.
#[test]
fn stopped_server_leaves_no_file_and_a_retry_resumes() {
    let _g = serial();
    let dir = tempdir("stop");
    let local = tempdir("stopcli");
    let size = 4usize << 20;
    let body = pattern(size, 7);
    let src = local.join("big");
    std::fs::write(&src, &body).unwrap();
    let server = serve(ServeConfig::new(dir.clone()));
    let addr = server.addr;
    let acked = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let a2 = acked.clone();
    let s2 = src.clone();
    let client = std::thread::spawn(move || {
        let c = TransferConfig {
            inactivity_timeout: Duration::from_secs(1),
            ..cfg(Rate::Fixed(16_000_000))
        };
        put(&s2, addr, "big", &c, &mut |p| {
            a2.store(p.done, Ordering::Relaxed);
            true
        })
    });
    // Half way (bounded wait: 2.1 s for the whole file at 16 Mb/s).
    let t0 = StdInstant::now();
    while acked.load(Ordering::Relaxed) < (size / 2) as u64 {
        assert!(t0.elapsed() < StdDuration::from_secs(20), "no progress");
        std::thread::sleep(StdDuration::from_millis(20));
    }
    assert_eq!(
        listing(&dir),
        vec![".big.partial".to_string(), ".big.resume".to_string()]
    );
    let (c, reports) = server.stop();
    assert_eq!(c.failed, 1, "{reports:?}");
    let r = client.join().unwrap();
    assert!(matches!(r, Err(TransferError::Timeout(_))), "{r:?}");
    // No file under the final name; what is needed to resume is kept.
    assert_eq!(
        listing(&dir),
        vec![".big.partial".to_string(), ".big.resume".to_string()]
    );

    // Restarted: the retry resumes.
    let server = serve(ServeConfig::new(dir.clone()));
    let retry = put(
        &src,
        server.addr,
        "big",
        &cfg(Rate::Fixed(200_000_000)),
        &mut no_progress(),
    )
    .expect("retry");
    // A fresh transfer of the same file under another name, for comparison.
    let fresh = put(
        &src,
        server.addr,
        "big2",
        &cfg(Rate::Fixed(200_000_000)),
        &mut no_progress(),
    )
    .expect("fresh");
    let (c, reports) = server.stop();
    println!(
        "resumed {} B: retry sent {} B, fresh sent {} B (file {size} B)",
        retry.resumed_bytes, retry.sent_bytes, fresh.sent_bytes
    );
    assert_eq!(
        (c.resumable_found, c.resumed, c.completed),
        (1, 1, 2),
        "{reports:?}"
    );
    assert!(retry.resumed_bytes >= (size / 3) as u64, "{retry:?}");
    assert!(fresh.sent_bytes >= size as u64, "{fresh:?}");
    assert!(
        retry.sent_bytes + retry.resumed_bytes / 2 < fresh.sent_bytes,
        "retry {retry:?} fresh {fresh:?}"
    );
    assert_eq!(fresh.resumed_bytes, 0);
    let put_report = reports.iter().find(|r| r.name == "big").unwrap();
    assert!(put_report.ok && put_report.resumed_bytes >= retry.resumed_bytes);
    assert!(std::fs::read(dir.join("big")).unwrap() == body);
    assert!(std::fs::read(dir.join("big2")).unwrap() == body);
    assert_eq!(listing(&dir), vec!["big".to_string(), "big2".to_string()]);

    // Resuming off: a stopped server removes the temporary.
    let dir = tempdir("stop0");
    let server = serve(ServeConfig {
        max_resumable: 0,
        ..ServeConfig::new(dir.clone())
    });
    let addr = server.addr;
    let client = std::thread::spawn(move || {
        let c = TransferConfig {
            inactivity_timeout: Duration::from_secs(1),
            ..cfg(Rate::Fixed(8_000_000))
        };
        put(&src, addr, "big", &c, &mut no_progress())
    });
    std::thread::sleep(StdDuration::from_millis(500));
    assert_eq!(listing(&dir), vec![".big.partial".to_string()]);
    let _ = server.stop();
    assert!(client.join().unwrap().is_err());
    assert!(listing(&dir).is_empty(), "{:?}", listing(&dir));
}

/// A resume offer is only honoured for the same file: a PUT of other
/// content under the name of a kept temporary starts from zero and
/// replaces it.
#[test]
fn a_different_file_does_not_resume_a_kept_temporary() {
    let _g = serial();
    let dir = tempdir("noresume");
    let local = tempdir("noresumecli");
    let mut sc = ServeConfig::new(dir.clone());
    sc.transfer.inactivity_timeout = Duration::from_millis(600);
    let server = serve(sc.clone());
    let src = local.join("f");
    std::fs::write(&src, pattern(1 << 20, 9)).unwrap();
    let t0 = StdInstant::now();
    // A client that gives up after 300 ms: the server times it out and
    // keeps what arrived for a resume.
    let r = put(
        &src,
        server.addr,
        "f",
        &cfg(Rate::Fixed(4_000_000)),
        &mut |_| t0.elapsed() < StdDuration::from_millis(300),
    );
    assert!(matches!(r, Err(TransferError::Cancelled)), "{r:?}");
    std::thread::sleep(StdDuration::from_millis(1200));
    let (c, _) = server.stop();
    assert_eq!((c.completed, c.failed), (0, 1));
    assert_eq!(
        listing(&dir),
        vec![".f.partial".to_string(), ".f.resume".to_string()]
    );
    let other = pattern(1 << 20, 10);
    std::fs::write(&src, &other).unwrap();
    let server = serve(sc);
    let rep = put(
        &src,
        server.addr,
        "f",
        &cfg(Rate::Fixed(200_000_000)),
        &mut no_progress(),
    )
    .expect("put");
    let (c, _) = server.stop();
    assert_eq!((c.resumed, c.completed), (0, 1));
    assert_eq!(rep.resumed_bytes, 0);
    assert!(std::fs::read(dir.join("f")).unwrap() == other);
    assert_eq!(listing(&dir), vec!["f".to_string()]);
}

#[test]
fn client_that_gives_up_leaves_no_file() {
    let _g = serial();
    let dir = tempdir("giveup");
    let local = tempdir("giveupcli");
    let mut sc = ServeConfig::new(dir.clone());
    sc.transfer.inactivity_timeout = Duration::from_millis(600);
    // Without resuming: the temporary is removed (with resuming it is
    // kept: `a_different_file_does_not_resume_a_kept_temporary`).
    sc.max_resumable = 0;
    let server = serve(sc);
    let src = local.join("f");
    std::fs::write(&src, pattern(1 << 20, 9)).unwrap();
    let t0 = StdInstant::now();
    let r = put(
        &src,
        server.addr,
        "f",
        &cfg(Rate::Fixed(4_000_000)),
        &mut |_| t0.elapsed() < StdDuration::from_millis(300),
    );
    assert!(matches!(r, Err(TransferError::Cancelled)), "{r:?}");
    std::thread::sleep(StdDuration::from_millis(1200));
    let (c, reports) = server.stop();
    assert_eq!((c.completed, c.failed), (0, 1), "{reports:?}");
    assert!(listing(&dir).is_empty(), "{:?}", listing(&dir));
}

/// A GET of `name` into `dest` (from a server sending at 16 Mb/s),
/// cancelled once at least `stop_at` bytes are there.
fn interrupted_get(addr: SocketAddr, name: &str, dest: &Path, stop_at: u64) {
    let t0 = StdInstant::now();
    let r = get(addr, name, dest, &cfg(Rate::Fixed(16_000_000)), &mut |p| {
        // Bounded: the whole file takes about 2 s at 16 Mb/s.
        assert!(t0.elapsed() < StdDuration::from_secs(20), "no progress");
        p.done < stop_at
    });
    assert!(matches!(r, Err(TransferError::Cancelled)), "{r:?}");
}

/// Issue 29 item 5: an interrupted GET keeps what it received, and a
/// rerun continues from it (only the rest is sent) and ends with the
/// server's file, byte for byte; a file changed on the server since is
/// fetched whole.
#[test]
fn an_interrupted_get_resumes_from_what_it_kept() {
    let _g = serial();
    let dir = tempdir("getresume");
    let local = tempdir("getresumecli");
    let size = 4usize << 20;
    let body = pattern(size, 11);
    std::fs::write(dir.join("big"), &body).unwrap();
    let mut sc = ServeConfig::new(dir.clone());
    sc.transfer.inactivity_timeout = Duration::from_secs(1);
    // The GET responder chooses the rate: slow enough to interrupt.
    sc.transfer.rate = Rate::Fixed(16_000_000);
    let server = serve(sc);
    let dest = local.join("big");
    interrupted_get(server.addr, "big", &dest, (size / 2) as u64);
    // No file under the final name; the bytes and their record are kept.
    assert_eq!(
        listing(&local),
        vec![".big.partial".to_string(), ".big.resume".to_string()]
    );
    let retry = get(
        server.addr,
        "big",
        &dest,
        &cfg(Rate::Fixed(200_000_000)),
        &mut no_progress(),
    )
    .expect("retry");
    println!(
        "resumed {} B, {} DATA frames received (file {size} B)",
        retry.resumed_bytes, retry.data_frames
    );
    assert!(retry.resumed_bytes >= (size / 2) as u64, "{retry:?}");
    // Only the rest came: a fresh GET takes 4096 frames of 1024 bytes.
    assert!(
        retry.data_frames * 1024 < (size as u64 - retry.resumed_bytes) + 200 * 1024,
        "{retry:?}"
    );
    assert!(
        std::fs::read(&dest).unwrap() == body,
        "resumed file differs"
    );
    assert_eq!(listing(&local), vec!["big".to_string()]);

    // Interrupted again, then the server's file changes (same size): the
    // kept bytes are not this file's, so nothing is resumed.
    let dest2 = local.join("big2");
    interrupted_get(server.addr, "big", &dest2, (size / 3) as u64);
    let other = pattern(size, 12);
    std::fs::write(dir.join("big"), &other).unwrap();
    let fresh = get(
        server.addr,
        "big",
        &dest2,
        &cfg(Rate::Fixed(200_000_000)),
        &mut no_progress(),
    )
    .expect("fresh");
    assert_eq!(fresh.resumed_bytes, 0, "{fresh:?}");
    assert!(fresh.data_frames >= 4096, "{fresh:?}");
    assert!(
        std::fs::read(&dest2).unwrap() == other,
        "changed file differs"
    );
    assert_eq!(listing(&local), vec!["big".to_string(), "big2".to_string()]);
    let (c, reports) = server.stop();
    assert_eq!(c.completed, 2, "{reports:?}");
}

fn metadata(session: u32, name: &[u8], size: u64, checksum: Checksum) -> Vec<u8> {
    let d = DescriptorSize::smallest_for(size);
    Repr::Metadata(wire::Metadata {
        descriptor: d,
        session,
        transfer: TransferType::File,
        terminated: false,
        udp_lite: false,
        checksum,
        entry: DirEntry {
            properties: Properties::File,
            descriptor: d,
            size,
            mtime: 0,
            ctime: 0,
            path: name.to_vec(),
        },
    })
    .to_vec()
    .unwrap()
}

fn data(session: u32, size: u64, offset: u64, payload: &[u8], request: bool) -> Vec<u8> {
    let repr = Repr::Data(wire::Data {
        descriptor: DescriptorSize::smallest_for(size),
        session,
        transfer: TransferType::File,
        request_status: request,
        eod: offset + payload.len() as u64 == size,
        timestamp: None,
        offset,
        payload_len: payload.len(),
    });
    let mut v = repr.to_vec().unwrap();
    let h = repr.header_len();
    v[h..].copy_from_slice(payload);
    v
}

/// STATUS frames received on `sock` within `wait`.
fn statuses(sock: &UdpSocket, wait: StdDuration) -> Vec<wire::Status> {
    sock.set_read_timeout(Some(StdDuration::from_millis(50)))
        .unwrap();
    let end = StdInstant::now() + wait;
    let mut buf = [0u8; 2048];
    let mut v = Vec::new();
    while StdInstant::now() < end {
        if let Ok(n) = sock.recv(&mut buf) {
            if let Ok(Repr::Status(s)) = Frame::new_checked(&buf[..n]).and_then(|f| Repr::parse(&f))
            {
                v.push(s);
            }
        }
    }
    v
}

#[test]
fn checksum_mismatch_is_refused_and_nothing_renamed() {
    let dir = tempdir("sum");
    let server = serve(ServeConfig::new(dir.clone()));
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.connect(server.addr).unwrap();
    let body = pattern(3000, 3);
    let wrong = Checksum::compute(ChecksumType::Md5, b"something else");
    sock.send(&metadata(77, b"victim", 3000, wrong)).unwrap();
    sock.send(&data(77, 3000, 0, &body[..1500], false)).unwrap();
    sock.send(&data(77, 3000, 1500, &body[1500..], true))
        .unwrap();
    let st = statuses(&sock, StdDuration::from_millis(400));
    assert!(
        st.iter()
            .any(|s| s.session == 77 && s.error == error_code::CANT_RECEIVE),
        "{st:?}"
    );
    // The client is never told "all received" (progress 3000, no error).
    assert!(
        !st.iter().any(|s| s.error == 0 && s.progress == 3000),
        "{st:?}"
    );
    // The same frames with the right checksum: accepted and renamed.
    let right = Checksum::compute(ChecksumType::Md5, &body);
    sock.send(&metadata(78, b"victim", 3000, right)).unwrap();
    sock.send(&data(78, 3000, 0, &body[..1500], false)).unwrap();
    sock.send(&data(78, 3000, 1500, &body[1500..], true))
        .unwrap();
    let st = statuses(&sock, StdDuration::from_millis(400));
    assert!(st
        .iter()
        .any(|s| s.session == 78 && s.progress == 3000 && s.error == 0));
    let (c, _) = server.stop();
    assert_eq!((c.completed, c.failed), (1, 1));
    assert_eq!(listing(&dir), vec!["victim".to_string()]);
    assert!(std::fs::read(dir.join("victim")).unwrap() == body);
}

#[test]
fn hostile_names_and_frames_change_nothing_and_a_transfer_completes() {
    let _g = serial();
    let root = tempdir("hostile");
    let dir = root.join("served");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(root.join("secret"), b"outside").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(root.join("secret"), dir.join("link")).unwrap();
    let local = tempdir("hostilecli");
    let mut sc = ServeConfig::new(dir.clone());
    sc.transfer.max_size = 1 << 24;
    let server = serve(sc);
    let attacker = UdpSocket::bind("127.0.0.1:0").unwrap();
    attacker.connect(server.addr).unwrap();
    // Names that would leave the directory, or are otherwise refused.
    let long = vec![b'a'; 300];
    let bad: [&[u8]; 8] = [
        b"../escape",
        b"/etc/satcc-escape",
        b"sub/escape",
        b"..",
        b".hidden",
        b"link",
        &long,
        b"ok\xff\xfe",
    ];
    for (i, name) in bad.iter().enumerate() {
        let sid = 1000 + i as u32;
        attacker
            .send(&metadata(sid, name, 10, Checksum::None))
            .unwrap();
        attacker
            .send(&data(sid, 10, 0, b"0123456789", true))
            .unwrap();
        // GETs too, the symlink to a file outside included.
        let req = Repr::Request(wire::Request {
            descriptor: DescriptorSize::D64,
            session: 2000 + i as u32,
            streams: false,
            tx_willing: 0,
            rx_willing: 0,
            udp_lite: false,
            kind: RequestType::Get,
            name: name.to_vec(),
            auth: Vec::new(),
        });
        attacker.send(&req.to_vec().unwrap()).unwrap();
    }
    // Too big.
    attacker
        .send(&metadata(3000, b"huge", 1 << 40, Checksum::None))
        .unwrap();
    let st = statuses(&attacker, StdDuration::from_millis(300));
    for i in 0..bad.len() as u32 {
        assert!(
            st.iter().any(|s| s.session == 1000 + i && s.error != 0),
            "PUT {i} not refused: {st:?}"
        );
        assert!(
            st.iter().any(|s| s.session == 2000 + i && s.error != 0),
            "GET {i} not refused: {st:?}"
        );
    }
    assert!(st
        .iter()
        .any(|s| s.session == 3000 && s.error == error_code::FILE_TOO_BIG));

    // A real transfer, with garbage and mutated frames thrown at the
    // server meanwhile from another socket.
    let src = local.join("real");
    let body = pattern(1 << 20, 5);
    std::fs::write(&src, &body).unwrap();
    let addr = server.addr;
    let client = std::thread::spawn(move || {
        put(
            &src,
            addr,
            "real",
            &cfg(Rate::Fixed(40_000_000)),
            &mut |_| true,
        )
    });
    let templates = [
        metadata(5, b"m", 100, Checksum::None),
        data(5, 100, 0, &[7u8; 50], true),
        data(9, 1 << 20, 1000, &[1u8; 1000], true),
    ];
    let mut x = 0x1234_5678_9abc_def0u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let t0 = StdInstant::now();
    let mut sent = 0;
    while t0.elapsed() < StdDuration::from_millis(400) {
        let mut f = if rnd() % 3 == 0 {
            let n = (rnd() % 200) as usize;
            (0..n).map(|_| rnd() as u8).collect::<Vec<u8>>()
        } else {
            templates[(rnd() % 3) as usize].clone()
        };
        for _ in 0..1 + rnd() % 4 {
            if !f.is_empty() {
                let i = (rnd() as usize) % f.len();
                f[i] ^= 1 << (rnd() % 8);
            }
        }
        let _ = attacker.send(&f);
        sent += 1;
        if sent % 50 == 0 {
            std::thread::sleep(StdDuration::from_millis(1));
        }
    }
    let rep = client.join().unwrap().expect("transfer under attack");
    assert_eq!(rep.bytes, 1 << 20);
    assert!(std::fs::read(dir.join("real")).unwrap() == body);
    std::thread::sleep(StdDuration::from_millis(200));
    let (c, _) = server.stop();
    assert!(c.malformed + c.unknown_session > 0, "{c:?}");
    assert!(c.refused >= 2 * bad.len() as u64, "{c:?}");
    // Nothing written anywhere but "real" (and what mutated frames may
    // have named, inside the directory, never a partial left).
    assert_eq!(std::fs::read(root.join("secret")).unwrap(), b"outside");
    let mut outside = listing(&root);
    outside.retain(|f| f != "served" && f != "secret");
    assert!(outside.is_empty(), "{outside:?}");
    for f in listing(&dir) {
        assert!(!f.starts_with('.'), "left {f}");
    }
    eprintln!("{sent} hostile datagrams; server counters {c:?}");
}

/// 20 simultaneous PUTs to one server (STFRC and fixed rates mixed) all
/// complete and verify.
#[test]
fn twenty_concurrent_puts_all_complete() {
    let _g = serial();
    let dir = tempdir("conc");
    let local = tempdir("conccli");
    let server = serve(ServeConfig {
        max_sessions_per_peer: 20,
        ..ServeConfig::new(dir.clone())
    });
    let mut handles = Vec::new();
    for i in 0..20u64 {
        let src = local.join(format!("s{i}"));
        let body = pattern(256 << 10, 40 + i);
        std::fs::write(&src, &body).unwrap();
        let addr = server.addr;
        let rate = if i % 2 == 0 {
            Rate::Stfrc
        } else {
            Rate::Fixed(30_000_000)
        };
        handles.push(std::thread::spawn(move || {
            let r = put(&src, addr, &format!("c{i}"), &cfg(rate), &mut |_| true);
            (i, body, r)
        }));
    }
    for h in handles {
        let (i, body, r) = h.join().unwrap();
        r.unwrap_or_else(|e| panic!("put {i}: {e}"));
        assert!(std::fs::read(dir.join(format!("c{i}"))).unwrap() == body);
    }
    let (c, _) = server.stop();
    assert_eq!((c.completed, c.failed, c.refused), (20, 0, 0));
    assert_eq!(listing(&dir).len(), 20);
}

#[test]
fn limits_size_existing_file_and_missing_file() {
    let dir = tempdir("lim");
    let local = tempdir("limcli");
    std::fs::write(dir.join("exists"), b"old").unwrap();
    // A killed server's temporary is removed at start; other dot files
    // are not ours and stay.
    std::fs::write(dir.join(".exists.partial"), b"stale").unwrap();
    std::fs::write(dir.join(".keep"), b"x").unwrap();
    let mut sc = ServeConfig::new(dir.clone());
    sc.transfer.max_size = 1000;
    let server = serve(sc);
    let src = local.join("s");
    std::fs::write(&src, pattern(2000, 1)).unwrap();
    let c = cfg(Rate::Fixed(10_000_000));
    let r = put(&src, server.addr, "big", &c, &mut no_progress());
    assert!(
        matches!(r, Err(TransferError::Peer(error_code::FILE_TOO_BIG))),
        "{r:?}"
    );
    std::fs::write(&src, b"new").unwrap();
    let r = put(&src, server.addr, "exists", &c, &mut no_progress());
    assert!(
        matches!(r, Err(TransferError::Peer(error_code::ACCESS_DENIED))),
        "{r:?}"
    );
    assert_eq!(std::fs::read(dir.join("exists")).unwrap(), b"old");
    let r = get(
        server.addr,
        "absent",
        &local.join("a"),
        &c,
        &mut no_progress(),
    );
    assert!(
        matches!(r, Err(TransferError::Peer(error_code::FILE_NOT_FOUND))),
        "{r:?}"
    );
    assert!(!local.join("a").exists());
    assert!(matches!(
        put(&src, server.addr, "../x", &c, &mut no_progress()),
        Err(TransferError::Local(_))
    ));
    let (c, _) = server.stop();
    assert_eq!(c.stale_removed, 1);
    assert_eq!(
        listing(&dir),
        vec![".keep".to_string(), "exists".to_string()]
    );
    assert!(listing(&local).iter().all(|f| !f.starts_with('.')));
}

#[test]
fn ipv6_loopback() {
    let Ok(probe) = UdpSocket::bind("[::1]:0") else {
        eprintln!("no IPv6 loopback here: skipped");
        return;
    };
    drop(probe);
    let dir = tempdir("v6");
    let local = tempdir("v6cli");
    let mut srv =
        SaratogaServer::bind("[::1]:0".parse().unwrap(), ServeConfig::new(dir.clone())).unwrap();
    let addr = srv.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    let h = std::thread::spawn(move || srv.run(&st, &mut |_| {}));
    let body = pattern(100_000, 66);
    std::fs::write(local.join("v6"), &body).unwrap();
    put(
        &local.join("v6"),
        addr,
        "v6",
        &cfg(Rate::Stfrc),
        &mut no_progress(),
    )
    .unwrap();
    get(
        addr,
        "v6",
        &local.join("back"),
        &cfg(Rate::Stfrc),
        &mut no_progress(),
    )
    .unwrap();
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
    assert!(std::fs::read(dir.join("v6")).unwrap() == body);
    assert!(std::fs::read(local.join("back")).unwrap() == body);
}

#[test]
fn per_peer_session_limit() {
    let dir = tempdir("peer");
    let local = tempdir("peercli");
    let mut sc = ServeConfig::new(dir.clone());
    sc.max_sessions_per_peer = 1;
    let server = serve(sc);
    let src = local.join("slow");
    let body = pattern(200_000, 12);
    std::fs::write(&src, &body).unwrap();
    let addr = server.addr;
    // 200 KB at 2 Mb/s: about 0.85 s in progress.
    let first = std::thread::spawn(move || {
        put(
            &src,
            addr,
            "slow",
            &cfg(Rate::Fixed(2_000_000)),
            &mut |_| true,
        )
    });
    std::thread::sleep(StdDuration::from_millis(200));
    let other = local.join("other");
    std::fs::write(&other, b"second").unwrap();
    let r = put(&other, addr, "other", &cfg(Rate::Stfrc), &mut no_progress());
    assert!(
        matches!(r, Err(TransferError::Peer(error_code::CANT_RECEIVE))),
        "{r:?}"
    );
    first.join().unwrap().expect("the first transfer completes");
    // Once it is done, the peer may start another.
    put(&other, addr, "other", &cfg(Rate::Stfrc), &mut no_progress()).unwrap();
    let (c, _) = server.stop();
    assert_eq!((c.completed, c.refused), (2, 1));
    assert!(std::fs::read(dir.join("slow")).unwrap() == body);
}

#[test]
fn repeated_gets_and_a_replaced_file() {
    let dir = tempdir("reget");
    let local = tempdir("regetcli");
    let a = pattern(50_000, 1);
    std::fs::write(dir.join("f"), &a).unwrap();
    let server = serve(ServeConfig::new(dir.clone()));
    let c = TransferConfig {
        overwrite: true,
        ..cfg(Rate::Fixed(100_000_000))
    };
    for _ in 0..2 {
        get(server.addr, "f", &local.join("f"), &c, &mut no_progress()).unwrap();
        assert!(std::fs::read(local.join("f")).unwrap() == a);
    }
    // Same name and size, new content (a new inode): the served checksum
    // must follow, or the GET would fail its verification.
    let b = pattern(50_000, 2);
    std::fs::write(dir.join("g"), &b).unwrap();
    std::fs::rename(dir.join("g"), dir.join("f")).unwrap();
    get(server.addr, "f", &local.join("f"), &c, &mut no_progress()).unwrap();
    assert!(std::fs::read(local.join("f")).unwrap() == b);
    let (c, _) = server.stop();
    assert_eq!(c.completed, 3);
}

/// A sender at twice the link rate into a small queue: about half the
/// frames are lost in bursts, hundreds of holes. STATUS frames carry up to
/// 64 holes on the wire (the sans-IO message holds 2), so repair takes a
/// few round trips, not one per 2 holes (which would be about 50 s here).
#[test]
fn many_holes_are_repaired_in_few_round_trips() {
    let _g = serial();
    let dir = tempdir("holes");
    let local = tempdir("holescli");
    let server = serve(ServeConfig::new(dir.clone()));
    let link = r#"
rate = "10Mbps"
delay = "100ms"
queue = { kind = "droptail", limit = 50 }
"#;
    let r = relay(server.addr, link);
    let body = pattern(1 << 20, 77);
    let src = local.join("h");
    std::fs::write(&src, &body).unwrap();
    let rep = put(
        &src,
        r.local_addr(),
        "h",
        &cfg(Rate::Fixed(20_000_000)),
        &mut no_progress(),
    )
    .unwrap();
    let st = r.stop();
    assert!(std::fs::read(dir.join("h")).unwrap() == body);
    eprintln!(
        "{} drops, {} B retransmitted, {} STATUS, {:.2} s",
        st[0].drops(),
        rep.retransmitted_bytes,
        rep.status_frames,
        rep.duration_s
    );
    assert!(st[0].drops() > 200, "{}", st[0].drops());
    assert!(rep.duration_s < 10.0, "{:.1} s", rep.duration_s);
    server.stop();
}

/// A flood of REQUESTs from 10 000 session ids and STATUS frames with
/// absurd offsets and holes, while a GET and a PUT run: both complete
/// byte-identical, the session table stays within its bound, the flood is
/// refused and counted, the absurd STATUS frames are rejected (never
/// trusted), and nothing is written but the two files.
#[test]
fn request_flood_and_absurd_status_leave_memory_bounded() {
    let _g = serial();
    let dir = tempdir("flood");
    let local = tempdir("floodcli");
    let served = pattern(2 << 20, 11);
    std::fs::write(dir.join("served"), &served).unwrap();
    let up = pattern(2 << 20, 12);
    std::fs::write(local.join("up"), &up).unwrap();
    let mut sc = ServeConfig::new(dir.clone());
    // 2 MB at 10 Mb/s: about 1.7 s, longer than the flood.
    sc.transfer.rate = Rate::Fixed(10_000_000);
    sc.transfer.inactivity_timeout = Duration::from_secs(1);
    sc.max_sessions = 16;
    sc.max_sessions_per_peer = 8;
    let server = serve(sc);
    let addr = server.addr;
    let dest = local.join("copy");
    let d2 = dest.clone();
    let getter =
        std::thread::spawn(move || get(addr, "served", &d2, &cfg(Rate::Stfrc), &mut |_| true));
    let src = local.join("up");
    let putter = std::thread::spawn(move || {
        put(&src, addr, "up", &cfg(Rate::Fixed(10_000_000)), &mut |_| {
            true
        })
    });
    std::thread::sleep(StdDuration::from_millis(100));

    let socks: Vec<UdpSocket> = (0..4)
        .map(|_| {
            let s = UdpSocket::bind("127.0.0.1:0").unwrap();
            s.connect(addr).unwrap();
            s.set_nonblocking(true).unwrap();
            s
        })
        .collect();
    let absurd = |session: u32, k: u64| -> Vec<u8> {
        let (progress, irt, holes) = match k % 4 {
            // Progress far beyond the file.
            0 => (1u64 << 60, 0, vec![]),
            // Holes beyond anything sent, and huge.
            1 => (0, 0, vec![(1 << 40, 1 << 61)]),
            // 64 holes far beyond the file.
            2 => (
                0,
                0,
                (0..64u64)
                    .map(|i| ((i + 10) << 40, ((i + 10) << 40) + 1))
                    .collect(),
            ),
            // A hole below the progress indicator.
            _ => (1000, 5000, vec![(10, 20)]),
        };
        Repr::Status(wire::Status {
            descriptor: DescriptorSize::D64,
            session,
            metadata_received: true,
            incomplete: false,
            voluntary: false,
            error: 0,
            timestamp: None,
            progress,
            in_response_to: irt,
            holes,
        })
        .to_vec()
        .unwrap()
    };
    let mut buf = vec![0u8; 70_000];
    let mut accepted = std::collections::HashSet::new();
    let (mut requests, mut absurd_sent) = (0u64, 0u64);
    for k in 0..10_000u32 {
        let sock = &socks[k as usize % socks.len()];
        let req = Repr::Request(wire::Request {
            descriptor: DescriptorSize::D64,
            session: 100_000 + k,
            streams: false,
            tx_willing: 0,
            rx_willing: 0,
            udp_lite: false,
            kind: RequestType::Get,
            name: b"served".to_vec(),
            auth: Vec::new(),
        });
        let _ = sock.send(&req.to_vec().unwrap());
        requests += 1;
        // A STATUS of a session nobody has.
        let _ = sock.send(&absurd(7_000_000 + k, u64::from(k)));
        if k % 100 == 99 {
            std::thread::sleep(StdDuration::from_millis(2));
            // The sessions the server accepted answer with frames: throw
            // absurd STATUS frames at them.
            for (i, s) in socks.iter().enumerate() {
                for _ in 0..10_000 {
                    let Ok(n) = s.recv(&mut buf) else { break };
                    let Ok(f) = Frame::new_checked(&buf[..n]) else {
                        continue;
                    };
                    if let Ok(Repr::Metadata(m)) = Repr::parse(&f) {
                        accepted.insert((i, m.session));
                    }
                }
            }
            for &(i, sid) in &accepted {
                for j in 0..4 {
                    let _ = socks[i].send(&absurd(sid, j));
                    absurd_sent += 1;
                }
            }
        }
    }
    // The flood hit transfers in progress.
    assert!(!getter.is_finished() && !putter.is_finished());
    let g = getter.join().unwrap().expect("GET under a flood");
    let p = putter.join().unwrap().expect("PUT under a flood");
    assert_eq!((g.bytes, p.bytes), (2 << 20, 2 << 20));
    assert!(std::fs::read(&dest).unwrap() == served);
    assert!(std::fs::read(dir.join("up")).unwrap() == up);
    let (c, _) = server.stop();
    eprintln!(
        "{requests} REQUESTs, {} sessions accepted, {absurd_sent} absurd STATUS to them; {c:?}",
        accepted.len()
    );
    assert!(!accepted.is_empty());
    // The session table's bound (in progress and lingering).
    assert!(c.sessions_peak <= 16 * 8, "{c:?}");
    assert!(c.refused >= requests - 16 * 8, "{c:?}");
    // Every absurd STATUS to a live session was rejected, not trusted;
    // those of no session were counted as foreign.
    assert!(c.status_rejected > 0, "{c:?}");
    assert!(c.unknown_session >= requests, "{c:?}");
    let mut files = listing(&dir);
    files.sort();
    assert_eq!(files, vec!["served".to_string(), "up".to_string()]);
}

/// BEACON over loopback: a listener hears a peer announced with
/// `send_beacons` and a server announcing itself from its own port
/// (EID, willingness, free space), counts other datagrams, and a server
/// that receives a BEACON counts it and answers nothing.
#[test]
fn beacons_announce_and_discover_peers() {
    use satcc_net::saratoga::beacon::{beacon_frame, listen_beacons, send_beacons, WILLING_YES};
    let _g = serial();
    let dir = tempdir("beacon");
    let listener = UdpSocket::bind("127.0.0.1:0").unwrap();
    let laddr = listener.local_addr().unwrap();
    let server = serve(ServeConfig {
        announce: Some((laddr, Duration::from_millis(100))),
        eid: "srv-A".into(),
        ..ServeConfig::new(dir.clone())
    });
    let srv_addr = server.addr;
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    let h = std::thread::spawn(move || {
        let mut events = Vec::new();
        let r = listen_beacons(&listener, StdDuration::from_secs(10), &st, &mut |p, new| {
            events.push((p.clone(), new))
        })
        .unwrap();
        (r, events)
    });
    let frame = beacon_frame("gs-1", Some(12_345), 2, WILLING_YES);
    let never = AtomicBool::new(false);
    assert_eq!(
        send_beacons(laddr, &frame, 3, StdDuration::from_millis(50), &never).unwrap(),
        3
    );
    let junk = UdpSocket::bind("127.0.0.1:0").unwrap();
    junk.send_to(b"not a frame", laddr).unwrap();
    // The server counts a BEACON it receives and sends nothing back.
    junk.send_to(&frame, srv_addr).unwrap();
    junk.set_read_timeout(Some(StdDuration::from_millis(300)))
        .unwrap();
    let mut buf = [0u8; 100];
    assert!(junk.recv(&mut buf).is_err(), "no reply to a BEACON");
    std::thread::sleep(StdDuration::from_millis(400));
    stop.store(true, Ordering::Relaxed);
    let ((peers, c), events) = h.join().unwrap();
    let (sc, _) = server.stop();
    let gs = peers.iter().find(|p| p.eid == "gs-1").expect("gs-1 heard");
    assert_eq!((gs.tx_willing, gs.rx_willing), (2, 3));
    assert_eq!(gs.free_space_kb, Some(12_345));
    assert_eq!(gs.beacons, 3);
    assert_eq!(gs.descriptor_bits, 64);
    let srv = peers
        .iter()
        .find(|p| p.eid == "srv-A")
        .expect("server heard");
    // From the server's own port: the address to PUT to.
    assert_eq!(srv.addr, srv_addr.to_string());
    assert_eq!((srv.tx_willing, srv.rx_willing), (3, 3));
    assert!(srv.free_space_kb.is_some_and(|kb| kb > 0));
    assert!(srv.beacons >= 3, "{srv:?}");
    assert_eq!(peers.len(), 2, "{peers:?}");
    assert_eq!(c.other, 1);
    // New peers reported once each as new.
    assert_eq!(events.iter().filter(|e| e.1).count(), 2);
    assert!(sc.beacons_sent >= 3 && sc.beacons_received == 1, "{sc:?}");
}

/// The checksum of a large file served by GET is computed off the
/// server's thread: while it runs (a 256 MB sparse file: SHA-1 of its
/// zeros, about 1 s), another client's PUT completes, before the GET's METADATA
/// comes out.
#[test]
fn a_large_files_checksum_does_not_stall_other_sessions() {
    let _g = serial();
    let dir = tempdir("sumthread");
    let local = tempdir("sumthreadcli");
    let big = std::fs::File::create(dir.join("big")).unwrap();
    big.set_len(256 << 20).unwrap();
    drop(big);
    std::fs::write(local.join("one"), b"1").unwrap();
    let server = serve(ServeConfig::new(dir.clone()));
    let addr = server.addr;
    let t0 = StdInstant::now();
    let dest = local.join("big-copy");
    let getter = std::thread::spawn(move || {
        let mut meta_at = None;
        // Stop as soon as METADATA (the size) is known.
        let r = get(addr, "big", &dest, &cfg(Rate::Stfrc), &mut |p| {
            if p.total.is_some() {
                meta_at = Some(t0.elapsed());
                return false;
            }
            t0.elapsed() < StdDuration::from_secs(60)
        });
        (r, meta_at)
    });
    std::thread::sleep(StdDuration::from_millis(30));
    let p = put(
        &local.join("one"),
        addr,
        "one",
        &cfg(Rate::Fixed(10_000_000)),
        &mut no_progress(),
    )
    .expect("put while a checksum runs");
    let put_done = t0.elapsed();
    let (r, meta_at) = getter.join().unwrap();
    assert!(matches!(r, Err(TransferError::Cancelled)), "{r:?}");
    let meta_at = meta_at.expect("the GET got its METADATA");
    eprintln!(
        "PUT done at {put_done:?} ({} s), GET's METADATA at {meta_at:?}",
        p.duration_s
    );
    assert!(put_done < meta_at, "PUT {put_done:?}, METADATA {meta_at:?}");
    let (c, _) = server.stop();
    assert_eq!(c.checksums_offloaded, 1, "{c:?}");
    assert_eq!(std::fs::read(dir.join("one")).unwrap(), b"1");
}

/// A PUT whose first segment arrives last makes the whole file the
/// contiguous prefix at once. The server verifies it `HASH_AHEAD` (4 MB)
/// a pass and keeps serving other sessions meanwhile, instead of hashing
/// the whole file inside the commit: a small PUT sent just after that
/// segment is confirmed before the large one. Ordered by arrival, not
/// timed; before the change the large file's confirmation came first.
#[test]
fn a_late_first_segment_does_not_stall_other_sessions() {
    let _g = serial();
    let dir = tempdir("latefirst");
    let server = serve(ServeConfig::new(dir.clone()));
    let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    a.connect(server.addr).unwrap();
    let size: usize = 48 << 20;
    let chunk: usize = 60_000;
    let body = pattern(size, 9);
    let sum = Checksum::compute(ChecksumType::Sha1, &body);
    let frame = |off: usize, request: bool| {
        let end = (off + chunk).min(size);
        data(1, size as u64, off as u64, &body[off..end], request)
    };
    a.send(&metadata(1, b"big", size as u64, sum)).unwrap();
    // All but the first segment, a STATUS awaited every 16 frames (1 MB
    // in flight at most, so the socket buffer does not overflow).
    let offsets: Vec<usize> = (chunk..size).step_by(chunk).collect();
    for (i, &off) in offsets.iter().enumerate() {
        let ask = i % 16 == 15 || i + 1 == offsets.len();
        a.send(&frame(off, ask)).unwrap();
        if ask {
            let _ = statuses(&a, StdDuration::from_millis(20));
        }
    }
    // Repair whatever loopback dropped, until the first segment is the
    // only hole (bounded).
    let mut only_first = false;
    for _ in 0..20 {
        a.send(&frame(offsets[offsets.len() - 1], true)).unwrap();
        let st = statuses(&a, StdDuration::from_millis(100));
        let Some(s) = st.iter().rev().find(|s| s.session == 1) else {
            continue;
        };
        let holes: Vec<_> = s.holes.iter().filter(|h| h.0 >= chunk as u64).collect();
        if s.progress == 0 && holes.is_empty() {
            only_first = true;
            break;
        }
        for &&(from, to) in &holes {
            for off in (from as usize / chunk * chunk..to as usize).step_by(chunk) {
                a.send(&frame(off, false)).unwrap();
            }
        }
    }
    assert!(only_first, "could not deliver all but the first segment");
    // The first segment, then at once a whole small PUT on another socket.
    let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    b.connect(server.addr).unwrap();
    let small = pattern(1500, 4);
    a.send(&frame(0, true)).unwrap();
    let small_sum = Checksum::compute(ChecksumType::Sha1, &small);
    b.send(&metadata(2, b"small", 1500, small_sum)).unwrap();
    b.send(&data(2, 1500, 0, &small, true)).unwrap();
    // Which confirmation comes first.
    a.set_nonblocking(true).unwrap();
    b.set_nonblocking(true).unwrap();
    let mut order = Vec::new();
    let mut buf = [0u8; 2048];
    let end = StdInstant::now() + StdDuration::from_secs(20);
    while order.len() < 2 && StdInstant::now() < end {
        for (sock, session, len) in [(&a, 1, size as u64), (&b, 2, 1500)] {
            while let Ok(n) = sock.recv(&mut buf) {
                if let Ok(Repr::Status(s)) =
                    Frame::new_checked(&buf[..n]).and_then(|f| Repr::parse(&f))
                {
                    if s.session == session
                        && s.error == 0
                        && s.progress == len
                        && !order.contains(&session)
                    {
                        order.push(session);
                    }
                }
            }
        }
        std::thread::sleep(StdDuration::from_millis(1));
    }
    assert_eq!(order, vec![2, 1], "confirmations in this order");
    let (c, _) = server.stop();
    assert_eq!((c.completed, c.failed), (2, 0), "{c:?}");
    assert!(std::fs::read(dir.join("big")).unwrap() == body);
}

/// What a stopped server kept of a PUT is resumed only by a transfer from
/// the address the bytes came from: the same file (name, size, CRC-32)
/// from another address starts again from nothing, so nobody can plant
/// bytes for a file another peer will send.
#[test]
fn a_kept_partial_is_resumed_only_by_its_own_peer() {
    let _g = serial();
    let dir = tempdir("ownpeer");
    let body = pattern(3000, 11);
    let crc = Checksum::compute(ChecksumType::Crc32, &body);
    // Half of the file from `from`, then the server stops (and keeps it).
    let leave_half = |from: &str| {
        let server = serve(ServeConfig::new(dir.clone()));
        let s = UdpSocket::bind(from).unwrap();
        s.connect(server.addr).unwrap();
        s.send(&metadata(1, b"f", 3000, crc)).unwrap();
        s.send(&data(1, 3000, 0, &body[..1500], true)).unwrap();
        let st = statuses(&s, StdDuration::from_millis(300));
        assert!(
            st.iter().any(|s| s.session == 1 && s.progress == 1500),
            "{st:?}"
        );
        server.stop();
    };
    // The same file from `from` against a restarted server: how many
    // sessions resumed, and the file it ends with.
    let finish = |from: &str| {
        let server = serve(ServeConfig::new(dir.clone()));
        let s = UdpSocket::bind(from).unwrap();
        s.connect(server.addr).unwrap();
        s.send(&metadata(2, b"f", 3000, crc)).unwrap();
        s.send(&data(2, 3000, 1500, &body[1500..], true)).unwrap();
        let st = statuses(&s, StdDuration::from_millis(300));
        let done = st.iter().any(|s| s.session == 2 && s.progress == 3000);
        let (c, _) = server.stop();
        (c.resumed, done)
    };
    leave_half("127.0.0.1:0");
    // Another address: nothing resumed, so the second half alone does
    // not complete the file.
    assert_eq!(finish("127.0.0.2:0"), (0, false));
    assert!(std::fs::symlink_metadata(dir.join("f")).is_err());
    leave_half("127.0.0.1:0");
    assert_eq!(finish("127.0.0.1:0"), (1, true));
    assert!(std::fs::read(dir.join("f")).unwrap() == body);
}
