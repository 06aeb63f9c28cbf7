//! Saratoga wire codec: golden bytes built by hand from the bit diagrams
//! of draft-wood-tsvwg-saratoga-22 §4 (bit 0 = most significant bit of
//! the 32-bit flags word), round trips of every field of every frame
//! type, and malformed input.

use satcc_proto::endpoint::Message;
use satcc_proto::saratoga::msg::{self, ts_from_instant};
use satcc_proto::saratoga::wire::{
    Beacon, Checksum, ChecksumType, Data, DescriptorSize, DirEntry, Error, Frame, FrameType,
    Metadata, Properties, Repr, Request, RequestType, Status, TransferType, MAX_FRAME_LEN,
    MAX_NAME_LEN,
};
use satcc_proto::saratoga::{SaraData, SaraMetadata, SaraRequest, SaraStatus};
use satcc_proto::wire::{self, WireError, WireProtocol};
use satcc_proto::Instant;

const DESCRIPTORS: [DescriptorSize; 4] = [
    DescriptorSize::D16,
    DescriptorSize::D32,
    DescriptorSize::D64,
    DescriptorSize::D128,
];

fn parse(b: &[u8]) -> Result<Repr, Error> {
    Repr::parse(&Frame::new_checked(b)?)
}

fn emit(r: &Repr) -> Vec<u8> {
    let mut buf = vec![0u8; r.buffer_len()];
    r.emit(&mut Frame::new_unchecked(&mut buf[..]))
        .expect("emit");
    buf
}

fn round_trip(r: &Repr) {
    let b = emit(r);
    assert_eq!(b.len(), r.buffer_len());
    assert_eq!(parse(&b).as_ref(), Ok(r), "{b:02x?}");
    let f = Frame::new_checked(&b[..]).expect("checked");
    assert_eq!(f.frame_type(), Some(r.frame_type()));
    assert_eq!(f.flags(), r.flags());
}

// ---- Golden bytes ----------------------------------------------------

#[test]
fn golden_beacon() {
    // §4.1 BEACON.
    // Flags: 001 00000 | 10 (D64) 0 0 (no streams) 11 (tx yes) 11 (rx
    // yes) | 0 (no UDP-Lite) 1 (free space) 01 (its descriptor: 32 bits)
    // 0000 | 0. Then free space 123456 KB in 32 bits and the EID.
    let golden = [
        0x20, 0x8F, 0x50, 0x00, 0x00, 0x01, 0xE2, 0x40, b's', b'a', b't', b'1',
    ];
    let r = Repr::Beacon(Beacon {
        descriptor: DescriptorSize::D64,
        streams: false,
        tx_willing: 3,
        rx_willing: 3,
        udp_lite: false,
        free_space: Some((DescriptorSize::D32, 123_456)),
        eid: b"sat1".to_vec(),
    });
    assert_eq!(emit(&r), golden);
    assert_eq!(parse(&golden), Ok(r));
}

#[test]
fn golden_request() {
    // §4.2 REQUEST.
    // 001 00001 | 01 (D32) 000000 | 0 | request type 1 (get); session;
    // "a.txt" NUL.
    let golden = [
        0x21, 0x40, 0x00, 0x01, 0x01, 0x02, 0x03, 0x04, b'a', b'.', b't', b'x', b't', 0x00,
    ];
    let r = Repr::Request(Request {
        descriptor: DescriptorSize::D32,
        session: 0x0102_0304,
        streams: false,
        tx_willing: 0,
        rx_willing: 0,
        udp_lite: false,
        kind: RequestType::Get,
        name: b"a.txt".to_vec(),
        auth: Vec::new(),
    });
    assert_eq!(emit(&r), golden);
    assert_eq!(parse(&golden), Ok(r));
}

#[test]
fn golden_metadata() {
    // §4.3 METADATA, directory entry §5.
    // 001 00010 | 00 (D16) 00 (file) 0 (in progress) 0 (UDP) 00 | 0 |
    // 0001 (1 word) 0001 (CRC32); session; CRC32("123456789");
    // directory entry: flags 1 00000 00 (file) 00 (D16) 000000, size 9,
    // mtime, ctime, "f" NUL.
    let golden = [
        0x22, 0x00, 0x00, 0x11, 0xDE, 0xAD, 0xBE, 0xEF, 0xCB, 0xF4, 0x39, 0x26, 0x80, 0x00, 0x00,
        0x09, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, b'f', 0x00,
    ];
    let r = Repr::Metadata(Metadata {
        descriptor: DescriptorSize::D16,
        session: 0xDEAD_BEEF,
        transfer: TransferType::File,
        terminated: false,
        udp_lite: false,
        checksum: Checksum::compute(ChecksumType::Crc32, b"123456789"),
        entry: DirEntry {
            properties: Properties::File,
            descriptor: DescriptorSize::D16,
            size: 9,
            mtime: 0x1122_3344,
            ctime: 0x5566_7788,
            path: b"f".to_vec(),
        },
    });
    assert_eq!(emit(&r), golden);
    assert_eq!(parse(&golden), Ok(r));
}

#[test]
fn golden_data() {
    // §4.4 DATA.
    // 001 00011 | 01 (D32) 00 (file) 1 (timestamp) 00 1 (request STATUS)
    // | 1 (end of data) 0000000 | 0; session 7; 16-byte timestamp;
    // offset 65536; 3 payload bytes.
    let mut golden = vec![0x23, 0x49, 0x80, 0x00, 0x00, 0x00, 0x00, 0x07];
    golden.extend(0u8..16);
    golden.extend([0x00, 0x01, 0x00, 0x00, 0xAA, 0xBB, 0xCC]);
    let mut ts = [0u8; 16];
    for (i, b) in ts.iter_mut().enumerate() {
        *b = i as u8;
    }
    let r = Repr::Data(Data {
        descriptor: DescriptorSize::D32,
        session: 7,
        transfer: TransferType::File,
        request_status: true,
        eod: true,
        timestamp: Some(ts),
        offset: 65_536,
        payload_len: 3,
    });
    let mut out = emit(&r);
    out[28..].copy_from_slice(&[0xAA, 0xBB, 0xCC]);
    assert_eq!(out, golden);
    assert_eq!(parse(&golden), Ok(r));
    let f = Frame::new_checked(&golden[..]).expect("checked");
    assert_eq!(f.payload(), &[0xAA, 0xBB, 0xCC]);
    assert_eq!(f.data_offset(), 65_536);
    assert_eq!(f.session(), 7);
}

#[test]
fn golden_status() {
    // §4.5 STATUS.
    // 001 00100 | 00 (D16) 000 0 (metadata received) 1 (list incomplete)
    // 1 (voluntary) | 0 | error 0; session 9; progress 0x100;
    // in-response-to 0x400; holes [0x100, 0x200) [0x300, 0x380).
    let golden = [
        0x24, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, 0x01, 0x00, 0x04, 0x00, 0x01, 0x00, 0x02,
        0x00, 0x03, 0x00, 0x03, 0x80,
    ];
    let r = Repr::Status(Status {
        descriptor: DescriptorSize::D16,
        session: 9,
        metadata_received: true,
        incomplete: true,
        voluntary: true,
        error: 0,
        timestamp: None,
        progress: 0x100,
        in_response_to: 0x400,
        holes: vec![(0x100, 0x200), (0x300, 0x380)],
    });
    assert_eq!(emit(&r), golden);
    assert_eq!(parse(&golden), Ok(r));
    // Bit 13 set (METADATA not received), timestamp (bit 12), error 4 (file
    // not found), 64-bit descriptor (bits 8-9 = 10), no holes.
    let mut g2 = vec![0x24, 0x8C, 0x00, 0x04, 0x00, 0x00, 0x00, 0x01];
    g2.extend([0xEE; 16]);
    g2.extend(0u64.to_be_bytes());
    g2.extend(5u64.to_be_bytes());
    let r2 = Repr::Status(Status {
        descriptor: DescriptorSize::D64,
        session: 1,
        metadata_received: false,
        incomplete: false,
        voluntary: false,
        error: 4,
        timestamp: Some([0xEE; 16]),
        progress: 0,
        in_response_to: 5,
        holes: vec![],
    });
    assert_eq!(emit(&r2), g2);
    assert_eq!(parse(&g2), Ok(r2));
}

// ---- Round trips -----------------------------------------------------

#[test]
fn every_field_of_every_frame_round_trips() {
    for d in DESCRIPTORS {
        let big = d.max_value();
        for (tx, rx, fs) in [(0u8, 2u8, None), (3, 0, Some((d, big)))] {
            round_trip(&Repr::Beacon(Beacon {
                descriptor: d,
                streams: tx == 3,
                tx_willing: tx,
                rx_willing: rx,
                udp_lite: tx == 0,
                free_space: fs,
                eid: b"eid-\x00-bytes".to_vec(),
            }));
        }
        for kind in [
            RequestType::NoAction,
            RequestType::Get,
            RequestType::Put,
            RequestType::GetDelete,
            RequestType::PutDelete,
            RequestType::Delete,
            RequestType::GetDir,
        ] {
            round_trip(&Repr::Request(Request {
                descriptor: d,
                session: u32::MAX - kind.code() as u32,
                streams: kind.code() % 2 == 0,
                tx_willing: kind.code() % 4,
                rx_willing: (kind.code() + 1) % 4,
                udp_lite: kind.code() % 3 == 0,
                kind,
                name: vec![b'x'; kind.code() as usize * 170],
                auth: if kind == RequestType::Put {
                    b"token\x00with nul".to_vec()
                } else {
                    Vec::new()
                },
            }));
        }
        for (i, ck) in [
            ChecksumType::None,
            ChecksumType::Crc32,
            ChecksumType::Md5,
            ChecksumType::Sha1,
        ]
        .into_iter()
        .enumerate()
        {
            for props in [
                Properties::File,
                Properties::Directory,
                Properties::SpecialFile,
                Properties::SpecialDirectory,
            ] {
                round_trip(&Repr::Metadata(Metadata {
                    descriptor: d,
                    session: 0x8000_0001,
                    transfer: [
                        TransferType::File,
                        TransferType::Directory,
                        TransferType::Bundle,
                        TransferType::Stream,
                    ][i],
                    terminated: i % 2 == 1,
                    udp_lite: i >= 2,
                    checksum: Checksum::compute(ck, b"some file"),
                    entry: DirEntry {
                        properties: props,
                        descriptor: d,
                        size: big,
                        mtime: u32::MAX,
                        ctime: 1,
                        path: vec![b'p'; MAX_NAME_LEN],
                    },
                }));
            }
        }
        for (rs, eod, ts) in [(false, false, None), (true, true, Some([0x5A; 16]))] {
            round_trip(&Repr::Data(Data {
                descriptor: d,
                session: 42,
                transfer: if eod {
                    TransferType::Stream
                } else {
                    TransferType::File
                },
                request_status: rs,
                eod,
                timestamp: ts,
                offset: big,
                payload_len: 1400,
            }));
        }
        for flags in 0..8u8 {
            round_trip(&Repr::Status(Status {
                descriptor: d,
                session: 5,
                metadata_received: flags & 1 != 0,
                incomplete: flags & 2 != 0,
                voluntary: flags & 4 != 0,
                error: flags * 31,
                timestamp: (flags % 3 == 0).then_some([flags; 16]),
                progress: 1,
                in_response_to: big,
                holes: vec![(1, 2), (2, 3), (100, big)],
            }));
        }
    }
}

#[test]
fn messages_round_trip_through_the_wire_dispatch() {
    let mut st = SaraStatus::new(11, DescriptorSize::D32, 1000, 5000);
    st.set_holes([(1000, 2000), (3000, 4000), (4500, 4600), (4700, 4800)]);
    st.set_timestamp(Some(ts_from_instant(Instant(123_456_789))));
    st.set_voluntary(true);
    st.set_metadata_received(false);
    st.error = 9;
    let msgs = [
        Message::SaraRequest(SaraRequest {
            session: 1,
            descriptor: DescriptorSize::D64,
            kind: RequestType::GetDelete,
            name: 0xFEED_F00D_0000_0001,
        }),
        Message::SaraMetadata(SaraMetadata {
            session: 2,
            descriptor: DescriptorSize::D64,
            file_size: u64::MAX,
            checksum: Checksum::Md5([3; 16]),
            name: 7,
        }),
        Message::SaraData(SaraData {
            session: 3,
            descriptor: DescriptorSize::D16,
            offset: 65_000,
            len: 535,
            request_status: true,
            eod: true,
            ts: Some(ts_from_instant(Instant(99))),
        }),
        Message::SaraStatus(st),
    ];
    assert!(st.incomplete(), "four holes, fewer inline");
    for m in msgs {
        assert_eq!(WireProtocol::of(&m), Some(WireProtocol::Saratoga));
        let n = wire::encoded_len(&m).expect("len");
        assert!(wire::header_len(&m).expect("header") <= wire::MAX_HEADER_LEN);
        let mut buf = vec![0u8; n];
        assert_eq!(wire::encode(&m, &mut buf), Ok(n));
        assert_eq!(
            wire::decode(WireProtocol::Saratoga, &buf, Instant::ZERO),
            Ok(m)
        );
    }
    assert_eq!(
        msg::instant_from_ts(&ts_from_instant(Instant(123))),
        Some(Instant(123))
    );
}

#[test]
fn descriptor_selection_and_limits_on_emit() {
    assert_eq!(DescriptorSize::smallest_for(65_535), DescriptorSize::D16);
    assert_eq!(DescriptorSize::smallest_for(65_536), DescriptorSize::D32);
    let r = Repr::Data(Data {
        descriptor: DescriptorSize::D16,
        session: 1,
        transfer: TransferType::File,
        request_status: false,
        eod: false,
        timestamp: None,
        offset: 65_536,
        payload_len: 0,
    });
    let e = r.to_vec().unwrap_err();
    assert_eq!(
        e,
        Error::Unrepresentable {
            frame: "DATA",
            field: "offset",
            value: 65_536,
            bits: 16
        }
    );
    assert_eq!(e.to_string(), "DATA offset: 65536 does not fit 16 bits");
    let mut small = [0u8; 5];
    let ok = Repr::Data(Data {
        offset: 1,
        ..match r {
            Repr::Data(d) => d,
            _ => unreachable!(),
        }
    });
    assert_eq!(
        ok.emit(&mut Frame::new_unchecked(&mut small[..])),
        Err(Error::BufferTooSmall { needed: 10 })
    );
}

// ---- Malformed input -------------------------------------------------

fn metadata_bytes() -> Vec<u8> {
    emit(&Repr::Metadata(Metadata {
        descriptor: DescriptorSize::D32,
        session: 1,
        transfer: TransferType::File,
        terminated: false,
        udp_lite: false,
        checksum: Checksum::Sha1([9; 20]),
        entry: DirEntry {
            properties: Properties::File,
            descriptor: DescriptorSize::D32,
            size: 1 << 20,
            mtime: 5,
            ctime: 6,
            path: b"dir/file.bin".to_vec(),
        },
    }))
}

#[test]
fn every_truncation_of_a_metadata_frame_is_an_error() {
    let b = metadata_bytes();
    for n in 0..b.len() {
        assert!(parse(&b[..n]).is_err(), "prefix {n}");
    }
    assert!(parse(&b).is_ok());
    let mut longer = b.clone();
    longer.push(0);
    assert_eq!(
        parse(&longer),
        Err(Error::TrailingBytes {
            frame: "METADATA",
            count: 1
        })
    );
}

#[test]
fn truncated_headers_and_partial_hole_pairs_are_errors() {
    let st = emit(&Repr::Status(Status {
        descriptor: DescriptorSize::D32,
        session: 1,
        metadata_received: true,
        incomplete: false,
        voluntary: false,
        error: 0,
        timestamp: Some([1; 16]),
        progress: 10,
        in_response_to: 20,
        holes: vec![(10, 12), (14, 16)],
    }));
    // Fixed part: 8 + 16 + 2*4 = 32 bytes; each hole 8.
    for n in 0..st.len() {
        let r = parse(&st[..n]);
        let whole_pairs = n >= 32 && (n - 32) % 8 == 0;
        assert_eq!(r.is_ok(), whole_pairs, "prefix {n}: {r:?}");
    }
    assert!(matches!(
        parse(&st[..20]),
        Err(Error::Truncated {
            frame: "STATUS",
            ..
        })
    ));
    assert_eq!(
        parse(&st[..35]),
        Err(Error::TrailingBytes {
            frame: "STATUS",
            count: 3
        })
    );
    // DATA shorter than its header.
    let d = emit(&Repr::Data(Data {
        descriptor: DescriptorSize::D64,
        session: 1,
        transfer: TransferType::File,
        request_status: false,
        eod: false,
        timestamp: None,
        offset: 5,
        payload_len: 0,
    }));
    for n in 0..d.len() {
        assert!(parse(&d[..n]).is_err(), "DATA prefix {n}");
    }
}

#[test]
fn malformed_fields_are_named() {
    let good = emit(&Repr::Status(Status {
        descriptor: DescriptorSize::D16,
        session: 1,
        metadata_received: true,
        incomplete: false,
        voluntary: false,
        error: 0,
        timestamp: None,
        progress: 0,
        in_response_to: 0,
        holes: vec![(0, 10), (20, 30), (40, 50), (900, 1000)],
    }));
    // Hole 3 reversed: end 800 < start 900.
    let mut b = good.clone();
    b[26..28].copy_from_slice(&800u16.to_be_bytes());
    let e = parse(&b).unwrap_err();
    assert_eq!(e.to_string(), "STATUS hole 3: start 900 > end 800");
    // Overlap.
    let mut b = good.clone();
    b[20..22].copy_from_slice(&25u16.to_be_bytes());
    assert!(matches!(parse(&b), Err(Error::Hole { index: 2, .. })));
    // Version 2, unknown type 5.
    let mut b = good.clone();
    b[0] = 0x44;
    assert_eq!(parse(&b), Err(Error::BadVersion(2)));
    let mut b = good.clone();
    b[0] = 0x25;
    assert_eq!(parse(&b), Err(Error::BadFrameType(5)));
    // REQUEST type 7.
    let req = |code: u8, name: &[u8]| {
        let mut v = vec![0x21, 0x00, 0x00, code, 0, 0, 0, 1];
        v.extend_from_slice(name);
        v
    };
    let e = parse(&req(7, b"x\0")).unwrap_err();
    assert_eq!(e.to_string(), "REQUEST request type: invalid value 7");
    assert_eq!(
        parse(&req(1, b"no terminator")),
        Err(Error::BadName {
            frame: "REQUEST",
            reason: "no terminating NUL"
        })
    );
    let long = vec![b'a'; MAX_NAME_LEN + 1];
    assert!(matches!(
        parse(&req(1, &[&long[..], b"\0"].concat())),
        Err(Error::NameTooLong { .. })
    ));
    assert!(parse(&req(1, &[&long[..MAX_NAME_LEN], b"\0"].concat())).is_ok());
    // Emit refuses a long name and an interior NUL.
    let r = Repr::Request(Request {
        descriptor: DescriptorSize::D16,
        session: 1,
        streams: false,
        tx_willing: 0,
        rx_willing: 0,
        udp_lite: false,
        kind: RequestType::Get,
        name: long.clone(),
        auth: vec![],
    });
    assert!(matches!(
        r.to_vec(),
        Err(Error::NameTooLong { len: 1025, .. })
    ));
    let r = Repr::Request(Request {
        name: b"a\0b".to_vec(),
        ..match r {
            Repr::Request(q) => q,
            _ => unreachable!(),
        }
    });
    assert!(matches!(r.to_vec(), Err(Error::BadName { .. })));
    // METADATA: checksum type 4, length not matching the type, entry flag
    // bit 0 clear.
    let m = metadata_bytes();
    let mut b = m.clone();
    b[3] = 0x54;
    assert!(matches!(
        parse(&b),
        Err(Error::BadField {
            field: "checksum type",
            value: 4,
            ..
        })
    ));
    let mut b = m.clone();
    b[3] = 0x43;
    assert!(matches!(
        parse(&b),
        Err(Error::BadField {
            field: "checksum length",
            value: 4,
            ..
        })
    ));
    let mut b = m.clone();
    b[28] &= 0x7F;
    assert!(matches!(parse(&b), Err(Error::BadField { .. })));
    // A 128-bit offset beyond 64 bits.
    let mut d = vec![0x23, 0xC0, 0, 0, 0, 0, 0, 1];
    d.extend([0, 0, 0, 0, 0, 0, 0, 1]);
    d.extend([0u8; 8]);
    assert_eq!(
        parse(&d),
        Err(Error::Offset128 {
            frame: "DATA",
            field: "offset"
        })
    );
    d[15] = 0;
    d[23] = 9;
    assert!(
        matches!(parse(&d), Ok(Repr::Data(x)) if x.offset == 9 && x.descriptor == DescriptorSize::D128)
    );
    // Oversized datagram.
    let mut huge = vec![0u8; MAX_FRAME_LEN + 1];
    huge[..8].copy_from_slice(&[0x23, 0x00, 0, 0, 0, 0, 0, 1]);
    assert_eq!(
        parse(&huge),
        Err(Error::TooLong {
            len: MAX_FRAME_LEN + 1
        })
    );
    // Through the generic decoder: errors keep their detail; a BEACON has
    // no message; a real file name is not a key.
    let e = wire::decode(WireProtocol::Saratoga, &b[..3], Instant::ZERO).unwrap_err();
    assert!(matches!(e, WireError::Saratoga(Error::Truncated { .. })));
    let beacon = emit(&Repr::Beacon(Beacon::default()));
    assert_eq!(
        wire::decode(WireProtocol::Saratoga, &beacon, Instant::ZERO),
        Err(WireError::BadType(0))
    );
    assert!(matches!(
        wire::decode(WireProtocol::Saratoga, &req(1, b"a.txt\0"), Instant::ZERO),
        Err(WireError::BadHeader(_))
    ));
    assert_eq!(FrameType::Status.name(), "STATUS");
}
