//! Frame-level interoperability with an independent Saratoga
//! implementation: frames produced by the encoders of
//! github.com/charlesetsmith/saratoga (Go, by one of the draft's authors;
//! commit 0a0c803c3197b746257c89742ce16c24676a10b8, its packages
//! `beacon`, `request`, `metadata`, `dirent`, `data`, `status`,
//! `timestamp` with its `saratoga.json` flag table), decoded here field by
//! field. The other direction (our frames through its decoders) and every
//! disagreement, with the side the draft supports, are in
//! docs/saratoga.md ("Interoperability").

use satcc_proto::saratoga::wire::{
    Beacon, Checksum, Data, DescriptorSize, DirEntry, Frame, Metadata, Properties, Repr, Request,
    RequestType, Status, TransferType,
};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn parse(s: &str) -> Repr {
    let b = hex(s);
    let r = Repr::parse(&Frame::new_checked(&b[..]).expect("checked")).expect("parse");
    // And back to the same bytes (DATA: header only, the payload is ours
    // to copy).
    let mut out = vec![0u8; r.buffer_len()];
    r.emit(&mut Frame::new_unchecked(&mut out[..]))
        .expect("emit");
    let n = r.header_len().max(if matches!(r, Repr::Data(_)) {
        0
    } else {
        b.len()
    });
    assert_eq!(out[..n], b[..n], "re-encoded {s}");
    r
}

#[test]
fn go_beacon_frames_decode() {
    // descriptor d32, tx willing "yes" (3), rx willing "capable" (2),
    // free space 123456 KB with a 32-bit descriptor, EID "go-peer".
    assert_eq!(
        parse("204e50000001e240676f2d70656572"),
        Repr::Beacon(Beacon {
            descriptor: DescriptorSize::D32,
            streams: false,
            tx_willing: 3,
            rx_willing: 2,
            udp_lite: false,
            free_space: Some((DescriptorSize::D32, 123_456)),
            eid: b"go-peer".to_vec(),
        })
    );
    // d16, tx "no", rx "yes", no free space, EID "x".
    assert_eq!(
        parse("2003000078"),
        Repr::Beacon(Beacon {
            descriptor: DescriptorSize::D16,
            streams: false,
            tx_willing: 0,
            rx_willing: 3,
            udp_lite: false,
            free_space: None,
            eid: b"x".to_vec(),
        })
    );
}

#[test]
fn go_request_frames_decode() {
    assert_eq!(
        parse("2140000101020304706173732d34322e72617700"),
        Repr::Request(Request {
            descriptor: DescriptorSize::D32,
            session: 0x0102_0304,
            streams: false,
            tx_willing: 0,
            rx_willing: 0,
            udp_lite: false,
            kind: RequestType::Get,
            name: b"pass-42.raw".to_vec(),
            auth: Vec::new(),
        })
    );
    // The Go side sets tx-willing (bits 12-13) and rx-willing (14-15) in
    // REQUEST, both "yes" (3), as its flag table defines them: decoded
    // into the fields, and re-encoded to the same bytes.
    assert_eq!(
        parse("218f0002000000076100dead"),
        Repr::Request(Request {
            descriptor: DescriptorSize::D64,
            session: 7,
            streams: false,
            tx_willing: 3,
            rx_willing: 3,
            udp_lite: false,
            kind: RequestType::Put,
            name: b"a".to_vec(),
            auth: vec![0xde, 0xad],
        })
    );
}

#[test]
fn go_metadata_frame_decodes() {
    let mut sum = [0u8; 16];
    for (i, b) in sum.iter_mut().enumerate() {
        *b = i as u8;
    }
    assert_eq!(
        parse("2240004201020304000102030405060708090a0b0c0d0e0f8040000186a0000003e8000007d0706173732d34322e72617700"),
        Repr::Metadata(Metadata {
            descriptor: DescriptorSize::D32,
            session: 0x0102_0304,
            transfer: TransferType::File,
            terminated: false,
            udp_lite: false,
            checksum: Checksum::Md5(sum),
            entry: DirEntry {
                properties: Properties::File,
                descriptor: DescriptorSize::D32,
                size: 100_000,
                mtime: 1000,
                ctime: 2000,
                path: b"pass-42.raw".to_vec(),
            },
        })
    );
}

#[test]
fn go_data_frames_decode() {
    let b = hex("23410000010203040000100068656c6c6f");
    let f = Frame::new_checked(&b[..]).unwrap();
    assert_eq!(
        Repr::parse(&f).unwrap(),
        Repr::Data(Data {
            descriptor: DescriptorSize::D32,
            session: 0x0102_0304,
            transfer: TransferType::File,
            request_status: true,
            eod: false,
            timestamp: None,
            offset: 4096,
            payload_len: 5,
        })
    );
    assert_eq!(f.payload(), b"hello");
    // A POSIX 32+32 timestamp (type 3: seconds, nanoseconds), end of data.
    let b = hex("2309800000000009036553f1000000138800000000000000000a010203");
    let f = Frame::new_checked(&b[..]).unwrap();
    let mut ts = [0u8; 16];
    ts[..9].copy_from_slice(&hex("036553f10000001388"));
    assert_eq!(
        Repr::parse(&f).unwrap(),
        Repr::Data(Data {
            descriptor: DescriptorSize::D16,
            session: 9,
            transfer: TransferType::File,
            request_status: true,
            eod: true,
            timestamp: Some(ts),
            offset: 10,
            payload_len: 3,
        })
    );
    assert_eq!(f.payload(), &[1, 2, 3]);
}

#[test]
fn go_status_frames_decode() {
    assert_eq!(
        parse("2440000001020304000003e800001388000007d000000bb800000fa000001194"),
        Repr::Status(Status {
            descriptor: DescriptorSize::D32,
            session: 0x0102_0304,
            metadata_received: true,
            incomplete: false,
            voluntary: false,
            error: 0,
            timestamp: None,
            progress: 1000,
            in_response_to: 5000,
            holes: vec![(2000, 3000), (4000, 4500)],
        })
    );
    // Error 4 (file not found), METADATA not received (bit 13), hole list
    // incomplete (bit 14), voluntary (bit 15).
    assert_eq!(
        parse("240700040000000500000000"),
        Repr::Status(Status {
            descriptor: DescriptorSize::D16,
            session: 5,
            metadata_received: false,
            incomplete: true,
            voluntary: true,
            error: 4,
            timestamp: None,
            progress: 0,
            in_response_to: 0,
            holes: vec![],
        })
    );
    // Its STATUS with a timestamp (bit 12): the Go encoder reserves the 16
    // bytes but never writes the timestamp, and writes progress (1) and
    // in-response-to (2) where the timestamp belongs (status.go: the
    // `havetstamp` flag is never set). We read the draft's layout: the
    // timestamp after the session id, then the offsets, which are zero.
    let Repr::Status(s) = parse("2448000000000006000000010000000200000000000000000000000000000000")
    else {
        panic!("not a STATUS");
    };
    assert_eq!(s.timestamp.unwrap()[..8], hex("0000000100000002")[..]);
    assert_eq!((s.progress, s.in_response_to), (0, 0));
}
