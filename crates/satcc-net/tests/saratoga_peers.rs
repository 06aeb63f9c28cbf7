//! The faults that other Saratoga implementations showed (issue 29),
//! each against a peer written here frame by frame: a receiver whose
//! STATUS never advances (the Go encoder's timestamped STATUS reads as
//! progress 0 for ever), a responder that answers with a session-0 error
//! STATUS, a REQUEST(put) before a PUT, the timestamp type on the wire,
//! REQUEST's willingness bits, and file times in METADATA.

use std::net::UdpSocket;
use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::{Duration as StdDuration, Instant as StdInstant, SystemTime, UNIX_EPOCH};

use satcc_net::saratoga::{get, put, Rate, ServeConfig, TransferConfig, TransferError};
use satcc_proto::saratoga::wire::{
    self, error_code, Checksum, DescriptorSize, DirEntry, Frame, Properties, Repr, RequestType,
    TimestampType, TransferType,
};
use satcc_proto::Duration;

mod common;
use common::{serial, serve};

fn tempdir(tag: &str) -> PathBuf {
    common::tempdir("satcc-sarpeer", tag)
}

fn cfg() -> TransferConfig {
    TransferConfig {
        rate: Rate::Fixed(20_000_000),
        inactivity_timeout: Duration::from_secs(20),
        ..TransferConfig::default()
    }
}

fn parse(b: &[u8]) -> Option<Repr> {
    Repr::parse(&Frame::new_checked(b).ok()?).ok()
}

/// The STATUS the Go encoder sends when it echoes a timestamp: 16 bytes
/// reserved after the session but the offsets written there, so the
/// draft's order reads a "timestamp" and then progress 0, in-response-to
/// 0, no holes. Every one the same: it never advances.
fn stuck_status(session: u32) -> Vec<u8> {
    let mut ts = [0u8; 16];
    ts[..8].copy_from_slice(&[0, 0, 0, 0, 0, 0, 0x10, 0]);
    Repr::Status(wire::Status {
        descriptor: DescriptorSize::D32,
        session,
        metadata_received: true,
        incomplete: false,
        voluntary: false,
        error: 0,
        timestamp: Some(ts),
        progress: 0,
        in_response_to: 0,
        holes: Vec::new(),
    })
    .to_vec()
    .unwrap()
}

/// What [`stuck_peer`] heard: the timestamp of each STATUS-requesting
/// DATA, and the error STATUS frames.
type Heard = (Vec<Option<[u8; 16]>>, Vec<wire::Status>);

/// A peer that answers every STATUS-requesting DATA it receives with
/// [`stuck_status`], for `for_how_long`.
fn stuck_peer(sock: UdpSocket, for_how_long: StdDuration) -> JoinHandle<Heard> {
    std::thread::spawn(move || {
        sock.set_read_timeout(Some(StdDuration::from_millis(20)))
            .unwrap();
        let end = StdInstant::now() + for_how_long;
        let mut buf = vec![0u8; 70_000];
        let (mut ts, mut errors) = (Vec::new(), Vec::new());
        while StdInstant::now() < end {
            let Ok((n, from)) = sock.recv_from(&mut buf) else {
                continue;
            };
            match parse(&buf[..n]) {
                Some(Repr::Data(d)) if d.request_status => {
                    ts.push(d.timestamp);
                    let _ = sock.send_to(&stuck_status(d.session), from);
                }
                Some(Repr::Status(s)) if s.error != 0 => errors.push(s),
                _ => {}
            }
        }
        (ts, errors)
    })
}

#[test]
fn a_put_to_a_peer_whose_status_never_advances_ends_with_one_line() {
    let _g = serial();
    let dir = tempdir("stuckput");
    let src = dir.join("f");
    std::fs::write(&src, vec![7u8; 200_000]).unwrap();
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = peer.local_addr().unwrap();
    let h = stuck_peer(peer, StdDuration::from_secs(8));
    let c = TransferConfig {
        progress_timeout: Duration::from_secs(2),
        ..cfg()
    };
    let t0 = StdInstant::now();
    let err = put(&src, addr, "f", &c, &mut |_| true).expect_err("cannot succeed");
    let took = t0.elapsed();
    // Within the progress timeout (plus a probe interval), long before
    // the 20 s inactivity timeout the STATUS frames keep fresh.
    assert!(
        took >= StdDuration::from_secs(2) && took < StdDuration::from_secs(5),
        "{took:?}"
    );
    assert!(
        matches!(
            err,
            TransferError::Stalled {
                acked: 0,
                total: 200_000,
                ..
            }
        ),
        "{err:?}"
    );
    let line = err.to_string();
    assert!(
        !line.contains('\n') && line.starts_with("no progress"),
        "{line}"
    );
    let (ts, _) = h.join().unwrap();
    assert!(ts.len() >= 2, "{ts:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_server_get_to_a_client_whose_status_never_advances_ends() {
    let _g = serial();
    let dir = tempdir("stuckget");
    std::fs::write(dir.join("big"), vec![1u8; 2_000_000]).unwrap();
    let mut sc = ServeConfig::new(dir.clone());
    sc.transfer.rate = Rate::Fixed(20_000_000);
    sc.transfer.progress_timeout = Duration::from_secs(2);
    sc.transfer.inactivity_timeout = Duration::from_secs(20);
    let server = serve(sc);
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client.connect(server.addr).unwrap();
    let req = Repr::Request(wire::Request {
        descriptor: DescriptorSize::D64,
        session: 4242,
        streams: false,
        tx_willing: 3,
        rx_willing: 3,
        udp_lite: false,
        kind: RequestType::Get,
        name: b"big".to_vec(),
        auth: Vec::new(),
    });
    client.send(&req.to_vec().unwrap()).unwrap();
    let t0 = StdInstant::now();
    let (_, errors) = stuck_peer(client, StdDuration::from_secs(6))
        .join()
        .unwrap();
    let (counters, reports) = server.stop();
    let e = errors.first().expect("an error STATUS");
    assert_eq!((e.session, e.error), (4242, error_code::INTERNAL_TIMEOUT));
    assert_eq!(counters.failed, 1, "{counters:?}");
    let r = &reports[0];
    assert!(!r.ok);
    let msg = r.error.as_deref().unwrap();
    assert!(msg.starts_with("client stalled: no progress"), "{msg}");
    assert!(t0.elapsed() < StdDuration::from_secs(7));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A responder that answers the first REQUEST with a STATUS of session 0
/// carrying `code`, and returns that REQUEST's flags.
fn refusing_responder(sock: UdpSocket, code: u8) -> JoinHandle<Option<u32>> {
    std::thread::spawn(move || {
        sock.set_read_timeout(Some(StdDuration::from_secs(5)))
            .unwrap();
        let mut buf = vec![0u8; 70_000];
        let (n, from) = sock.recv_from(&mut buf).ok()?;
        let flags = u32::from_be_bytes(buf[..4].try_into().unwrap());
        let Some(Repr::Request(_)) = parse(&buf[..n]) else {
            return None;
        };
        let st = Repr::Status(wire::Status {
            descriptor: DescriptorSize::D16,
            session: 0,
            metadata_received: false,
            incomplete: false,
            voluntary: false,
            error: code,
            timestamp: None,
            progress: 0,
            in_response_to: 0,
            holes: Vec::new(),
        });
        sock.send_to(&st.to_vec().unwrap(), from).unwrap();
        Some(flags)
    })
}

#[test]
fn a_session_zero_error_status_is_reported_as_the_peers_error() {
    let _g = serial();
    let dir = tempdir("sess0");
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = peer.local_addr().unwrap();
    let h = refusing_responder(peer, error_code::FILE_NOT_FOUND);
    let t0 = StdInstant::now();
    let err = get(addr, "nothere", &dir.join("x"), &cfg(), &mut |_| true).expect_err("refused");
    assert!(
        matches!(err, TransferError::Peer(error_code::FILE_NOT_FOUND)),
        "{err:?}"
    );
    assert!(err.to_string().contains("file not found"), "{err}");
    // At once, not after the 20 s inactivity timeout.
    assert!(t0.elapsed() < StdDuration::from_secs(3));
    // Our REQUEST said willing to send and to receive, "yes" (3) each, in
    // bits 12-13 and 14-15 as the Go table places them (the Go responder
    // refuses a get whose rx-willing is not 3).
    let flags = h.join().unwrap().expect("a REQUEST");
    assert_eq!((flags >> 16) & 0xF, 0xF, "{flags:#010x}");
    assert_eq!(flags & 0xFF, 1, "get");
    assert!(!dir.join("x").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

fn request(session: u32, kind: RequestType, name: &[u8]) -> Vec<u8> {
    Repr::Request(wire::Request {
        descriptor: DescriptorSize::D32,
        session,
        streams: false,
        tx_willing: 3,
        rx_willing: 3,
        udp_lite: false,
        kind,
        name: name.to_vec(),
        auth: Vec::new(),
    })
    .to_vec()
    .unwrap()
}

fn recv_status(sock: &UdpSocket) -> Option<wire::Status> {
    sock.set_read_timeout(Some(StdDuration::from_secs(2)))
        .unwrap();
    let mut buf = [0u8; 2048];
    let n = sock.recv(&mut buf).ok()?;
    match parse(&buf[..n])? {
        Repr::Status(s) => Some(s),
        _ => None,
    }
}

#[test]
fn a_put_request_is_answered_and_the_put_that_follows_lands() {
    let _g = serial();
    let dir = tempdir("reqput");
    std::fs::write(dir.join("exists"), b"old").unwrap();
    let server = serve(ServeConfig::new(dir.clone()));
    let c = UdpSocket::bind("127.0.0.1:0").unwrap();
    c.connect(server.addr).unwrap();
    // Refused as a METADATA would be: outside the directory, existing.
    c.send(&request(11, RequestType::Put, b"../escape"))
        .unwrap();
    let s = recv_status(&c).expect("answer");
    assert_eq!((s.session, s.error), (11, error_code::ACCESS_DENIED));
    c.send(&request(12, RequestType::Put, b"exists")).unwrap();
    let s = recv_status(&c).expect("answer");
    assert_eq!((s.session, s.error), (12, error_code::ACCESS_DENIED));
    // Accepted: success, METADATA not yet received.
    c.send(&request(13, RequestType::Put, b"new")).unwrap();
    let s = recv_status(&c).expect("answer");
    assert_eq!((s.session, s.error), (13, error_code::SUCCESS));
    assert!(!s.metadata_received);
    // Then METADATA and DATA in that session: the file lands.
    let body = b"hello, saratoga";
    let md = Repr::Metadata(wire::Metadata {
        descriptor: DescriptorSize::D16,
        session: 13,
        transfer: TransferType::File,
        terminated: false,
        udp_lite: false,
        checksum: Checksum::compute(satcc_proto::saratoga::ChecksumType::Crc32, body),
        entry: DirEntry {
            properties: Properties::File,
            descriptor: DescriptorSize::D16,
            size: body.len() as u64,
            mtime: 0,
            ctime: 0,
            path: b"new".to_vec(),
        },
    });
    c.send(&md.to_vec().unwrap()).unwrap();
    let d = Repr::Data(wire::Data {
        descriptor: DescriptorSize::D16,
        session: 13,
        transfer: TransferType::File,
        request_status: true,
        eod: true,
        timestamp: None,
        offset: 0,
        payload_len: body.len(),
    });
    let mut f = d.to_vec().unwrap();
    let h = d.header_len();
    f[h..].copy_from_slice(body);
    c.send(&f).unwrap();
    let s = recv_status(&c).expect("STATUS");
    assert_eq!((s.session, s.error, s.progress), (13, 0, body.len() as u64));
    let (counters, _) = server.stop();
    assert_eq!(std::fs::read(dir.join("new")).unwrap(), body);
    assert_eq!(counters.completed, 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_timestamp_type_is_chosen_and_none_sends_none() {
    let _g = serial();
    let dir = tempdir("tstype");
    let src = dir.join("f");
    std::fs::write(&src, vec![3u8; 50_000]).unwrap();
    for want in [
        Some(TimestampType::Posix32),
        Some(TimestampType::Posix64_32),
        Some(TimestampType::Epoch2000_32),
        None,
    ] {
        let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = peer.local_addr().unwrap();
        let h = stuck_peer(peer, StdDuration::from_millis(2500));
        let c = TransferConfig {
            timestamp: want,
            progress_timeout: Duration::from_secs(1),
            ..cfg()
        };
        let before = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        let _ = put(&src, addr, "f", &c, &mut |_| true).expect_err("stuck");
        let (ts, _) = h.join().unwrap();
        assert!(!ts.is_empty());
        for t in &ts {
            match (want, t) {
                (None, None) => {}
                (Some(k), Some(b)) => {
                    assert_eq!(b[0], k.code(), "{k:?}");
                    // The wall clock, not the process's: the seconds
                    // field is now (within a few seconds).
                    let secs = match k {
                        TimestampType::Posix32 => {
                            u64::from(u32::from_be_bytes(b[1..5].try_into().unwrap()))
                        }
                        TimestampType::Posix64_32 => {
                            u64::from_be_bytes(b[1..9].try_into().unwrap())
                        }
                        _ => {
                            946_684_800 + u64::from(u32::from_be_bytes(b[1..5].try_into().unwrap()))
                        }
                    };
                    assert!(secs.abs_diff(before.as_secs()) <= 5, "{k:?}: {secs}");
                }
                other => panic!("{want:?}: {other:?}"),
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn file_times_travel_in_metadata_and_are_applied_on_receipt() {
    let _g = serial();
    let dir = tempdir("times");
    let served = dir.join("served");
    let local = dir.join("local");
    std::fs::create_dir_all(&served).unwrap();
    std::fs::create_dir_all(&local).unwrap();
    let src = local.join("a");
    std::fs::write(&src, vec![9u8; 30_000]).unwrap();
    // 2021-03-04 05:06:07 UTC.
    let when = UNIX_EPOCH + StdDuration::from_secs(1_614_834_367);
    std::fs::File::options()
        .write(true)
        .open(&src)
        .unwrap()
        .set_modified(when)
        .unwrap();
    // What METADATA carries: seconds since 2000 (§5).
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = peer.local_addr().unwrap();
    let h = std::thread::spawn(move || {
        peer.set_read_timeout(Some(StdDuration::from_secs(3)))
            .unwrap();
        let mut buf = vec![0u8; 70_000];
        loop {
            let n = peer.recv(&mut buf).ok()?;
            if let Some(Repr::Metadata(m)) = parse(&buf[..n]) {
                return Some(m.entry);
            }
        }
    });
    let c = TransferConfig {
        inactivity_timeout: Duration::from_secs(1),
        ..cfg()
    };
    let _ = put(&src, addr, "a", &c, &mut |_| true);
    let e = h.join().unwrap().expect("METADATA");
    assert_eq!(u64::from(e.mtime), 1_614_834_367 - 946_684_800);
    let now_y2k = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        - 946_684_800;
    assert!(
        u64::from(e.ctime).abs_diff(now_y2k) < 60,
        "ctime: {}",
        e.ctime
    );
    // Applied by the server (PUT) and by the client (GET).
    let server = serve(ServeConfig::new(served.clone()));
    put(&src, server.addr, "a", &cfg(), &mut |_| true).expect("put");
    let back = local.join("back");
    get(server.addr, "a", &back, &cfg(), &mut |_| true).expect("get");
    server.stop();
    for p in [served.join("a"), back] {
        let m = std::fs::metadata(&p).unwrap().modified().unwrap();
        assert_eq!(m, when, "{}", p.display());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cidr_blocks_parse_and_match() {
    use satcc_net::saratoga::Cidr;
    let ip = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
    let c = Cidr::parse("192.0.2.0/24").unwrap();
    assert!(c.contains(ip("192.0.2.200")));
    assert!(!c.contains(ip("192.0.3.1")));
    assert!(!c.contains(ip("2001:db8::1")));
    // An IPv4 peer seen on an IPv6 socket.
    assert!(c.contains(ip("::ffff:192.0.2.7")));
    assert_eq!(c.to_string(), "192.0.2.0/24");
    let one = Cidr::parse("10.1.2.3").unwrap();
    assert!(one.contains(ip("10.1.2.3")) && !one.contains(ip("10.1.2.4")));
    assert!(Cidr::parse("0.0.0.0/0")
        .unwrap()
        .contains(ip("203.0.113.9")));
    let v6 = Cidr::parse("2001:db8::/32").unwrap();
    assert!(v6.contains(ip("2001:db8:ffff::1")));
    assert!(!v6.contains(ip("2001:db9::1")));
    assert!(Cidr::parse("::/0").unwrap().contains(ip("::1")));
    for bad in [
        "192.0.2.0/33",
        "2001:db8::/129",
        "host/24",
        "1.2.3.4/",
        "1.2.3.4/x",
    ] {
        let e = Cidr::parse(bad).expect_err(bad);
        assert!(e.starts_with(&format!("--allow '{bad}'")), "{e}");
    }
}

#[test]
fn allow_list_read_only_and_write_only() {
    use satcc_net::saratoga::{Access, Cidr};
    let _g = serial();
    let dir = tempdir("access");
    std::fs::write(dir.join("there"), vec![5u8; 10_000]).unwrap();
    let src = dir.join("src");
    std::fs::write(&src, vec![6u8; 10_000]).unwrap();
    let inbox = dir.join("inbox");
    std::fs::create_dir_all(&inbox).unwrap();
    std::fs::copy(dir.join("there"), inbox.join("there")).unwrap();
    let quick = TransferConfig {
        inactivity_timeout: Duration::from_secs(1),
        ..cfg()
    };

    // Outside the list: no answer at all, counted.
    let mut sc = ServeConfig::new(inbox.clone());
    sc.allow = vec![
        Cidr::parse("10.0.0.0/8").unwrap(),
        Cidr::parse("::1").unwrap(),
    ];
    let server = serve(sc);
    let c = UdpSocket::bind("127.0.0.1:0").unwrap();
    c.connect(server.addr).unwrap();
    c.send(&request(21, RequestType::Get, b"there")).unwrap();
    c.send(&request(22, RequestType::Put, b"new")).unwrap();
    assert!(recv_status(&c).is_none(), "answered a peer not allowed");
    let err =
        get(server.addr, "there", &dir.join("x"), &quick, &mut |_| true).expect_err("dropped");
    assert!(matches!(err, TransferError::Timeout(_)), "{err:?}");
    let (counters, _) = server.stop();
    assert!(counters.not_allowed >= 3, "{counters:?}");
    assert_eq!(counters.refused, 0);

    // Inside it: served.
    let mut sc = ServeConfig::new(inbox.clone());
    sc.allow = vec![Cidr::parse("127.0.0.0/8").unwrap()];
    let server = serve(sc);
    get(server.addr, "there", &dir.join("got"), &cfg(), &mut |_| {
        true
    })
    .expect("allowed");
    assert_eq!(server.stop().0.not_allowed, 0);

    // Read-only: GET yes, PUT and REQUEST(put) refused with error 5.
    let mut sc = ServeConfig::new(inbox.clone());
    sc.access = Access::ReadOnly;
    let server = serve(sc);
    get(server.addr, "there", &dir.join("got2"), &cfg(), &mut |_| {
        true
    })
    .expect("get");
    let err = put(&src, server.addr, "new", &cfg(), &mut |_| true).expect_err("read-only");
    assert!(
        matches!(err, TransferError::Peer(error_code::ACCESS_DENIED)),
        "{err:?}"
    );
    let c = UdpSocket::bind("127.0.0.1:0").unwrap();
    c.connect(server.addr).unwrap();
    c.send(&request(23, RequestType::Put, b"new2")).unwrap();
    let s = recv_status(&c).expect("refusal");
    assert_eq!((s.session, s.error), (23, error_code::ACCESS_DENIED));
    server.stop();
    assert!(!inbox.join("new").exists() && !inbox.join("new2").exists());

    // Write-only: PUT yes, GET refused with error 5.
    let mut sc = ServeConfig::new(inbox.clone());
    sc.access = Access::WriteOnly;
    let server = serve(sc);
    put(&src, server.addr, "new", &cfg(), &mut |_| true).expect("put");
    let err = get(server.addr, "there", &dir.join("got3"), &cfg(), &mut |_| {
        true
    })
    .expect_err("write-only");
    assert!(
        matches!(err, TransferError::Peer(error_code::ACCESS_DENIED)),
        "{err:?}"
    );
    server.stop();
    assert_eq!(std::fs::read(inbox.join("new")).unwrap(), vec![6u8; 10_000]);
    assert!(!dir.join("got3").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Empty PUTs (one unanswered datagram each, from any source address)
/// take no place in the quota table, and the table is bounded: with room
/// for two addresses, two empty files from two addresses leave room for
/// two that send bytes, and a third such address is refused.
#[test]
fn quota_table_holds_only_addresses_with_bytes_and_is_bounded() {
    let _g = serial();
    let dir = tempdir("quota-table");
    let inbox = dir.join("inbox");
    std::fs::create_dir_all(&inbox).unwrap();
    let mut sc = ServeConfig::new(inbox.clone());
    sc.quota_total = Some(1_000_000);
    sc.max_quota_peers = 2;
    let server = serve(sc);
    let md = metadata_frame;
    let from = |last: u8| {
        let s = UdpSocket::bind(format!("127.0.0.{last}:0")).unwrap();
        s.connect(server.addr).unwrap();
        s
    };
    for (k, last) in [(0u32, 12u8), (1, 13)] {
        let s = from(last);
        s.send(&md(40 + k, format!("empty{k}").as_bytes(), 0))
            .unwrap();
        let st = recv_status(&s).expect("the empty PUT's STATUS");
        assert_eq!(st.error, 0, "{st:?}");
    }
    // Two addresses with bytes fit; a third does not.
    let (a, b, c) = (from(14), from(15), from(16));
    a.send(&md(50, b"big-a", 10_000)).unwrap();
    b.send(&md(51, b"big-b", 10_000)).unwrap();
    c.send(&md(52, b"big-c", 10_000)).unwrap();
    let refused = recv_status(&c).expect("refusal");
    assert_eq!(
        (refused.session, refused.error),
        (52, error_code::FILE_TOO_BIG)
    );
    let (counters, _) = server.stop();
    assert_eq!(counters.over_quota, 1, "{counters:?}");
    assert!(inbox.join("empty0").exists() && inbox.join("empty1").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn byte_quotas_per_peer_and_in_total() {
    let _g = serial();
    let dir = tempdir("quota");
    let inbox = dir.join("inbox");
    std::fs::create_dir_all(&inbox).unwrap();
    let src = dir.join("src");
    std::fs::write(&src, vec![4u8; 10_000]).unwrap();
    let mut sc = ServeConfig::new(inbox.clone());
    sc.quota_per_peer = Some(25_000);
    sc.quota_total = Some(35_000);
    let server = serve(sc);
    // 127.0.0.1: two 10 kB PUTs fit its 25 kB, the third does not.
    put(&src, server.addr, "a", &cfg(), &mut |_| true).expect("first");
    put(&src, server.addr, "b", &cfg(), &mut |_| true).expect("second");
    let err = put(&src, server.addr, "c", &cfg(), &mut |_| true).expect_err("over quota");
    assert!(
        matches!(err, TransferError::Peer(error_code::FILE_TOO_BIG)),
        "{err:?}"
    );
    assert!(err.to_string().contains("quota"), "{err}");
    // Another address (127.0.0.2, loopback too): 10 kB fit the 35 kB
    // total (20 kB used), a second 10 kB would not.
    let other = UdpSocket::bind("127.0.0.2:0").unwrap();
    other.connect(server.addr).unwrap();
    let md = |session: u32, name: &[u8]| {
        Repr::Metadata(wire::Metadata {
            descriptor: DescriptorSize::D16,
            session,
            transfer: TransferType::File,
            terminated: false,
            udp_lite: false,
            checksum: Checksum::None,
            entry: DirEntry {
                properties: Properties::File,
                descriptor: DescriptorSize::D16,
                size: 10_000,
                mtime: 0,
                ctime: 0,
                path: name.to_vec(),
            },
        })
        .to_vec()
        .unwrap()
    };
    other.send(&md(31, b"d")).unwrap();
    other.send(&md(32, b"e")).unwrap();
    let s = recv_status(&other).expect("refusal");
    assert_eq!((s.session, s.error), (32, error_code::FILE_TOO_BIG));
    let (counters, _) = server.stop();
    assert_eq!(counters.over_quota, 2, "{counters:?}");
    assert!(inbox.join("a").exists() && inbox.join("b").exists());
    assert!(!inbox.join("c").exists());

    // A failed PUT's bytes are given back: with 15 kB per peer, a 10 kB
    // PUT that fails its checksum, then another 10 kB PUT, is accepted.
    let mut sc = ServeConfig::new(inbox.clone());
    sc.quota_per_peer = Some(15_000);
    let server = serve(sc);
    let p = UdpSocket::bind("127.0.0.3:0").unwrap();
    p.connect(server.addr).unwrap();
    let frames = |session: u32, name: &[u8], sum: Checksum, len: usize| {
        let body = vec![1u8; 10_000];
        let md = Repr::Metadata(wire::Metadata {
            descriptor: DescriptorSize::D16,
            session,
            transfer: TransferType::File,
            terminated: false,
            udp_lite: false,
            checksum: sum,
            entry: DirEntry {
                properties: Properties::File,
                descriptor: DescriptorSize::D16,
                size: 10_000,
                mtime: 0,
                ctime: 0,
                path: name.to_vec(),
            },
        });
        let d = Repr::Data(wire::Data {
            descriptor: DescriptorSize::D16,
            session,
            transfer: TransferType::File,
            request_status: true,
            eod: len == 10_000,
            timestamp: None,
            offset: 0,
            payload_len: len,
        });
        let mut f = d.to_vec().unwrap();
        let h = d.header_len();
        f[h..].copy_from_slice(&body[..len]);
        (md.to_vec().unwrap(), f)
    };
    let (m1, d1) = frames(41, b"bad", Checksum::Crc32(0), 10_000);
    p.send(&m1).unwrap();
    p.send(&d1).unwrap();
    let s = recv_status(&p).expect("checksum refusal");
    assert_eq!((s.session, s.error), (41, error_code::CANT_RECEIVE));
    let (m2, d2) = frames(42, b"good", Checksum::None, 100);
    p.send(&m2).unwrap();
    p.send(&d2).unwrap();
    let s = recv_status(&p).expect("accepted");
    assert_eq!((s.session, s.error, s.progress), (42, 0, 100));
    let (counters, _) = server.stop();
    assert_eq!(counters.over_quota, 0, "{counters:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn metadata_frame(session: u32, name: &[u8], size: u64) -> Vec<u8> {
    let d = DescriptorSize::smallest_for(size);
    Repr::Metadata(wire::Metadata {
        descriptor: d,
        session,
        transfer: TransferType::File,
        terminated: false,
        udp_lite: false,
        checksum: Checksum::None,
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

/// DATA `[0, 1000)` of a `size`-byte file, asking for a STATUS.
fn first_data(session: u32, size: u64) -> Vec<u8> {
    let repr = Repr::Data(wire::Data {
        descriptor: DescriptorSize::smallest_for(size),
        session,
        transfer: TransferType::File,
        request_status: true,
        eod: false,
        timestamp: None,
        offset: 0,
        payload_len: 1000,
    });
    let mut v = repr.to_vec().unwrap();
    let h = repr.header_len();
    v[h..].fill(7);
    v
}

/// A sender that sends METADATA of a 10 000-byte file and then the same
/// first DATA frame every 100 ms, for `for_how_long` or until an error
/// STATUS comes: (the error STATUS frames, when the first came).
fn repeating_sender(
    sock: UdpSocket,
    to: std::net::SocketAddr,
    session: u32,
    for_how_long: StdDuration,
) -> (Vec<wire::Status>, Option<StdDuration>) {
    sock.set_read_timeout(Some(StdDuration::from_millis(100)))
        .unwrap();
    let t0 = StdInstant::now();
    let mut buf = vec![0u8; 70_000];
    let mut errors = Vec::new();
    let mut first_error = None;
    sock.send_to(&metadata_frame(session, b"stuck", 10_000), to)
        .unwrap();
    while t0.elapsed() < for_how_long && first_error.is_none() {
        sock.send_to(&first_data(session, 10_000), to).unwrap();
        // Drain what came back in 100 ms.
        let until = StdInstant::now() + StdDuration::from_millis(100);
        while StdInstant::now() < until {
            let Ok((n, _)) = sock.recv_from(&mut buf) else {
                break;
            };
            if let Some(Repr::Status(s)) = parse(&buf[..n]) {
                if s.error != 0 {
                    errors.push(s);
                    first_error.get_or_insert(t0.elapsed());
                }
            }
        }
    }
    (errors, first_error)
}

/// Issue 29: a server session whose client keeps sending, but only what
/// the server already has, ends within the progress timeout (2 s here)
/// with a one-line error and error 12 to the client. Before, every such
/// DATA reset the inactivity timer and the session never ended.
#[test]
fn a_server_put_from_a_client_that_sends_nothing_new_ends() {
    let _g = serial();
    let dir = tempdir("starvedput");
    let mut sc = ServeConfig::new(dir.clone());
    sc.transfer.progress_timeout = Duration::from_secs(2);
    sc.transfer.inactivity_timeout = Duration::from_secs(20);
    let server = serve(sc);
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (errors, first) = repeating_sender(client, server.addr, 5151, StdDuration::from_secs(8));
    let (counters, reports) = server.stop();
    let e = errors.first().expect("an error STATUS");
    assert_eq!((e.session, e.error), (5151, error_code::INTERNAL_TIMEOUT));
    let first = first.unwrap();
    assert!(
        first >= StdDuration::from_millis(1900) && first < StdDuration::from_secs(4),
        "{first:?}"
    );
    assert_eq!(counters.failed, 1, "{counters:?}");
    let msg = reports[0].error.as_deref().unwrap();
    assert!(msg.starts_with("client stalled: no progress"), "{msg}");
    assert!(!msg.contains('\n'), "{msg}");
    assert!(msg.contains("1000 bytes"), "{msg}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 29: a GET whose server keeps re-sending the first DATA frame and
/// nothing else ends within the progress timeout with a one-line error.
#[test]
fn a_get_from_a_server_that_sends_nothing_new_ends() {
    let _g = serial();
    let local = tempdir("starvedget");
    let fake = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = fake.local_addr().unwrap();
    let h = std::thread::spawn(move || {
        fake.set_read_timeout(Some(StdDuration::from_secs(5)))
            .unwrap();
        let mut buf = vec![0u8; 70_000];
        let Ok((n, from)) = fake.recv_from(&mut buf) else {
            return;
        };
        let Some(Repr::Request(r)) = parse(&buf[..n]) else {
            return;
        };
        // Until the client's error (error 3 from a GET client that gives
        // up is not sent: it just stops), at most 8 s.
        let _ = repeating_sender(fake, from, r.session, StdDuration::from_secs(8));
    });
    let c = TransferConfig {
        progress_timeout: Duration::from_secs(2),
        ..cfg()
    };
    let t0 = StdInstant::now();
    let r = get(addr, "stuck", &local.join("stuck"), &c, &mut |_| true);
    let took = t0.elapsed();
    h.join().unwrap();
    match &r {
        Err(
            e @ TransferError::Starved {
                received, total, ..
            },
        ) => {
            assert_eq!((*received, *total), (1000, Some(10_000)));
            let line = e.to_string();
            assert!(
                line.starts_with("no progress: the peer sent nothing new"),
                "{line}"
            );
            assert!(!line.contains('\n'));
        }
        other => panic!("{other:?}"),
    }
    assert!(took < StdDuration::from_secs(4), "{took:?}");
    let _ = std::fs::remove_dir_all(&local);
}

/// Issue 29: a client that answers the server's GET frames with a STATUS
/// of session 0 and an error (it could not take the session, as the Go
/// implementation answers) ends that GET at once: the server stops
/// sending and reports the client's error. Before, the server sent until
/// its progress or inactivity timeout.
#[test]
fn a_session_zero_error_from_a_client_ends_the_servers_get() {
    let _g = serial();
    let dir = tempdir("sess0srv");
    std::fs::write(dir.join("big"), vec![3u8; 2_000_000]).unwrap();
    let mut sc = ServeConfig::new(dir.clone());
    sc.transfer.rate = Rate::Fixed(1_000_000); // 16 s for the file
    let server = serve(sc);
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client.connect(server.addr).unwrap();
    client
        .set_read_timeout(Some(StdDuration::from_millis(100)))
        .unwrap();
    let req = Repr::Request(wire::Request {
        descriptor: DescriptorSize::D64,
        session: 777,
        streams: false,
        tx_willing: 3,
        rx_willing: 3,
        udp_lite: false,
        kind: RequestType::Get,
        name: b"big".to_vec(),
        auth: Vec::new(),
    });
    client.send(&req.to_vec().unwrap()).unwrap();
    // Wait for the first DATA (bounded), then refuse in session 0.
    let mut buf = vec![0u8; 70_000];
    let t0 = StdInstant::now();
    loop {
        assert!(t0.elapsed() < StdDuration::from_secs(5), "no DATA");
        if let Ok(n) = client.recv(&mut buf) {
            if let Some(Repr::Data(_)) = parse(&buf[..n]) {
                break;
            }
        }
    }
    let refuse = Repr::Status(wire::Status {
        descriptor: DescriptorSize::D16,
        session: 0,
        metadata_received: false,
        incomplete: false,
        voluntary: false,
        error: error_code::RX_NOT_INTERESTED,
        timestamp: None,
        progress: 0,
        in_response_to: 0,
        holes: Vec::new(),
    });
    client.send(&refuse.to_vec().unwrap()).unwrap();
    // 0.3 s to drain what was on its way, then nothing more for 1 s
    // (at 1 Mb/s the session would send about 120 frames a second).
    let settle = StdInstant::now() + StdDuration::from_millis(300);
    while StdInstant::now() < settle {
        let _ = client.recv(&mut buf);
    }
    let quiet = StdInstant::now() + StdDuration::from_secs(1);
    let mut data_after = 0;
    while StdInstant::now() < quiet {
        if let Ok(n) = client.recv(&mut buf) {
            if let Some(Repr::Data(_)) = parse(&buf[..n]) {
                data_after += 1;
            }
        }
    }
    let (counters, reports) = server.stop();
    assert_eq!(data_after, 0, "the server kept sending");
    assert_eq!(counters.peer_refused, 1, "{counters:?}");
    let r = reports
        .iter()
        .find(|r| r.kind == "get")
        .expect("a GET report");
    let msg = r.error.as_deref().unwrap();
    assert!(msg.starts_with("peer refused: "), "{msg}");
    let _ = std::fs::remove_dir_all(&dir);
}
