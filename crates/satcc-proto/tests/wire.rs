//! The wire codecs: exact layouts, round trips at the boundaries of every
//! field, malformed input, and the endpoints driven over bytes instead of
//! typed messages.

use std::collections::VecDeque;

use satcc_proto::cbr::{CbrConfig, CbrSource, Sink};
use satcc_proto::endpoint::{Endpoint, Message, Sender, Stats};
use satcc_proto::tcp::{SackBlock, TcpAck, TcpData};
use satcc_proto::tfrc::{self, TfrcData, TfrcFeedback, TfrcReceiver, TfrcSender};
use satcc_proto::tfrcp::{self, TfrcpAck, TfrcpData, TfrcpReceiver, TfrcpSender};
use satcc_proto::wire::dccp::{self, option_type, PacketType};
use satcc_proto::wire::{self, compact, decode, encode, WireError, WireProtocol};
use satcc_proto::{Duration, Instant};

const TICK: u64 = 10_000; // ns per DCCP timestamp tick

fn enc(msg: &Message) -> Vec<u8> {
    let mut buf = vec![0u8; wire::encoded_len(msg).expect("encodable")];
    let n = encode(msg, &mut buf).expect("encode");
    assert_eq!(n, buf.len());
    buf
}

fn proto(msg: &Message) -> WireProtocol {
    WireProtocol::of(msg).expect("a datagram message")
}

fn round_trip(msg: &Message, now: Instant) -> Message {
    let bytes = enc(msg);
    let back = decode(proto(msg), &bytes, now).expect("decode");
    // Canonical: the decoded value encodes to the same bytes.
    assert_eq!(enc(&back), bytes, "{msg:?}");
    back
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn data(seq: u64, len: u32, ts: u64, rtt: Option<Duration>) -> Message {
    Message::TfrcData(TfrcData {
        seq,
        len,
        ts: Instant(ts),
        rtt,
        t_rto: None,
    })
}

fn feedback(ts_echo: u64, t_delay: Duration, x_recv: f64, p: f64) -> Message {
    Message::TfrcFeedback(TfrcFeedback {
        ts_echo: Instant(ts_echo),
        t_delay,
        x_recv,
        p,
    })
}

/// One message of each type, with small payloads (zeros).
fn samples() -> Vec<Message> {
    vec![
        data(
            0x0A_0B0C,
            4,
            1_234_567_890,
            Some(Duration::from_millis(100)),
        ),
        data(7, 3, 50 * TICK, None),
        feedback(1_234_567_890, Duration::from_millis(2), 250_000.4, 0.01),
        feedback(0, Duration::from_secs(1), 1e6, 0.0),
        Message::TfrcpData(TfrcpData {
            seq: 5,
            len: 2,
            ts: Instant(0x0102_0304_0506_0708),
        }),
        Message::TfrcpAck(TfrcpAck {
            seq: 5,
            ts_echo: Instant(0x0102_0304_0506_0708),
            vector: 0b1000_0001,
        }),
        Message::Datagram {
            seq: 0x0102_0304_0506_0708,
            len: 1,
        },
    ]
}

// ---------------------------------------------------------------- layouts

#[test]
fn golden_bytes_match_the_documented_layouts() {
    let s = samples();
    // DCCP-Data: ports 0, Data Offset 7, CCVal 0 / CsCov 1, checksum, type
    // 2 with X = 1, reserved, 48-bit seq; Timestamp 123456 ticks; RTT
    // 100000 µs; 4 payload bytes.
    let want = "0000 0000 07 01 9ef8 05 00 0000000a0b0c \
                2906 0001e240 b806 000186a0 00000000";
    assert_eq!(hex(&enc(&s[0])), hex(&unhex(want)));
    // DCCP-Ack: Data Offset 12, type 3, seq 0, ack subheader 0; Timestamp
    // Echo with 2-byte Elapsed Time 200; Elapsed Time 200; Receive Rate
    // 250000; Loss Event Rate 100.
    let want = "0000 0000 0c 01 611b 07 00 000000000000 0000 000000000000 \
                2a08 0001e240 00c8 2b04 00c8 c206 0003d090 c006 00000064";
    assert_eq!(hex(&enc(&s[2])), hex(&unhex(want)));
    // Compact: magic/version, type, checksum, seq, ts / vector.
    let want = "a101 4ee5 0000000000000005 0102030405060708 0000";
    assert_eq!(hex(&enc(&s[4])), hex(&unhex(want)));
    let want = "a102 cde3 0000000000000005 0102030405060708 81";
    assert_eq!(hex(&enc(&s[5])), hex(&unhex(want)));
    let want = "a103 4ee8 0102030405060708 00";
    assert_eq!(hex(&enc(&s[6])), hex(&unhex(want)));
}

#[test]
fn header_lengths() {
    let cases = [
        (data(1, 0, 0, None), 24),
        (data(1, 0, 0, Some(Duration::ZERO)), 28),
        (feedback(0, Duration::ZERO, 1.0, 0.5), 48),
        (feedback(0, Duration::from_micros(655_350), 1.0, 0.5), 48),
        (feedback(0, Duration::from_micros(655_360), 1.0, 0.5), 52),
        (
            Message::TfrcpData(TfrcpData {
                seq: 0,
                len: 0,
                ts: Instant::ZERO,
            }),
            20,
        ),
        (
            Message::TfrcpAck(TfrcpAck {
                seq: 0,
                ts_echo: Instant::ZERO,
                vector: 0,
            }),
            21,
        ),
        (Message::Datagram { seq: 0, len: 0 }, 12),
    ];
    for (msg, len) in cases {
        assert_eq!(wire::header_len(&msg), Ok(len), "{msg:?}");
        assert!(len <= wire::MAX_HEADER_LEN);
        let with_payload = match msg {
            Message::TfrcData(d) => Message::TfrcData(TfrcData { len: 1000, ..d }),
            other => other,
        };
        let extra = if matches!(msg, Message::TfrcData(_)) {
            1000
        } else {
            0
        };
        assert_eq!(wire::encoded_len(&with_payload), Ok(len + extra));
    }
}

#[test]
fn payload_is_the_callers() {
    // The codec writes the header only; bytes after it are left alone and
    // decoding does not look at them.
    let msg = data(9, 6, 70 * TICK, None);
    let mut buf = [0xEEu8; 64];
    let n = encode(&msg, &mut buf).unwrap();
    assert_eq!(n, 30);
    assert_eq!(&buf[24..30], &[0xEE; 6]);
    assert_eq!(
        decode(WireProtocol::Dccp, &buf[..n], Instant::ZERO),
        Ok(msg)
    );
    // The UDP datagram is the packet: a longer slice is more payload.
    assert_eq!(
        decode(WireProtocol::Dccp, &buf, Instant::ZERO),
        Ok(data(9, 40, 70 * TICK, None))
    );
}

// ------------------------------------------------------------ round trips

#[test]
fn tfrc_data_round_trips_at_the_boundaries() {
    // 5.5 hours: every ts below is within 2^31 ticks (5.96 h) of now.
    let now = Instant(19_800 * 1_000_000_000);
    let near = now.as_nanos() / TICK * TICK;
    for (seq, len) in [(0, 0), (1, 1), (dccp::MAX_SEQ, 65_507), (1 << 47, 1460)] {
        for ts in [
            near,
            near - 5 * 3_600 * 1_000_000_000,
            near + 5 * 3_600 * 1_000_000_000,
            0,
        ] {
            for rtt in [
                None,
                Some(Duration::ZERO),
                Some(Duration::from_micros(1)),
                Some(Duration::from_millis(600)),
                Some(Duration::from_micros(u64::from(u32::MAX))),
            ] {
                let msg = data(seq, len, ts, rtt);
                assert_eq!(round_trip(&msg, now), msg);
            }
        }
    }
}

#[test]
fn tfrc_data_quantization() {
    let now = Instant::ZERO;
    // ts rounds down to its 10 µs tick, rtt to its microsecond; an rtt
    // beyond 2^32 - 1 µs saturates.
    let got = round_trip(
        &data(3, 10, 12 * TICK + 9_999, Some(Duration::from_nanos(1_999))),
        now,
    );
    assert_eq!(got, data(3, 10, 12 * TICK, Some(Duration::from_micros(1))));
    let got = round_trip(&data(3, 10, 0, Some(Duration::from_secs(10_000))), now);
    assert_eq!(
        got,
        data(3, 10, 0, Some(Duration::from_micros(u64::from(u32::MAX))))
    );
    let got = round_trip(&data(3, 10, 0, Some(Duration::from_nanos(999))), now);
    assert_eq!(got, data(3, 10, 0, Some(Duration::ZERO)));
}

#[test]
fn timestamps_wrap_and_map_back_to_the_senders_clock() {
    // The sender's clock crosses a 2^32-tick wrap; the receiver's clock
    // has another epoch. The receiver decodes with its own clock and
    // echoes what it got; the sender decodes the echo with its own clock
    // and recovers exactly the timestamp it sent (on a tick).
    let wrap = (1u64 << 32) * TICK;
    let receiver_offset = 3 * 3_600 * 1_000_000_000 + 12_345;
    for sent in [wrap - TICK, wrap, wrap + TICK, 5 * wrap + 77 * TICK] {
        let at_receiver = Instant(sent + 300_000_000 + receiver_offset);
        let d = match decode(
            WireProtocol::Dccp,
            &enc(&data(1, 0, sent, None)),
            at_receiver,
        ) {
            Ok(Message::TfrcData(d)) => d,
            other => panic!("{other:?}"),
        };
        let fb = feedback(d.ts.as_nanos(), Duration::from_millis(20), 1000.0, 0.0);
        let at_sender = Instant(sent + 600_000_000);
        match decode(WireProtocol::Dccp, &enc(&fb), at_sender) {
            Ok(Message::TfrcFeedback(f)) => {
                assert_eq!(f.ts_echo, Instant(sent), "sent at {sent}");
                assert_eq!(f.t_delay, Duration::from_millis(20));
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn tfrc_feedback_round_trips_at_the_boundaries() {
    let now = Instant(7 * 1_000_000_000);
    let cases = [
        // (t_delay, x_recv, p) -> (t_delay, x_recv, p) decoded.
        (Duration::ZERO, 0.0, 0.0, Duration::ZERO, 0.0, 0.0),
        (
            Duration::from_nanos(9_999),
            1.0,
            1.0,
            Duration::ZERO,
            1.0,
            1.0,
        ),
        (
            Duration::from_micros(655_350),
            1234.6,
            1.0 / 3.0,
            Duration::from_micros(655_350),
            1235.0,
            1.0 / 3.0,
        ),
        (
            Duration::from_micros(655_360),
            1e15,
            0.3,
            Duration::from_micros(655_360),
            f64::from(u32::MAX),
            0.25,
        ),
        (
            Duration::MAX,
            f64::INFINITY,
            1e-15,
            Duration::from_nanos(u64::from(u32::MAX) * TICK),
            f64::from(u32::MAX),
            1.0 / f64::from(u32::MAX - 1),
        ),
        (
            Duration::from_secs(3),
            4_294_967_294.6,
            1.0 / f64::from(u32::MAX - 1),
            Duration::from_secs(3),
            f64::from(u32::MAX),
            1.0 / f64::from(u32::MAX - 1),
        ),
    ];
    let ts = now.as_nanos() - 5 * TICK;
    for (t_delay, x_recv, p, want_delay, want_x, want_p) in cases {
        let msg = feedback(ts, t_delay, x_recv, p);
        assert_eq!(
            round_trip(&msg, now),
            feedback(ts, want_delay, want_x, want_p),
            "{msg:?}"
        );
    }
    // Exact inverses survive unchanged.
    for n in [1u32, 2, 3, 7, 100, 65_537, 1 << 31, u32::MAX - 1] {
        let msg = feedback(ts, Duration::ZERO, 1.0, 1.0 / f64::from(n));
        assert_eq!(round_trip(&msg, now), msg, "1/{n}");
    }
}

#[test]
fn tfrcp_and_datagram_round_trip_exactly() {
    for seq in [0, 1, 1 << 48, u64::MAX] {
        for ts in [Instant::ZERO, Instant(1), Instant::MAX] {
            for len in [0, 1, 65_507] {
                let m = Message::TfrcpData(TfrcpData { seq, len, ts });
                assert_eq!(round_trip(&m, Instant::ZERO), m);
                let m = Message::Datagram { seq, len };
                assert_eq!(round_trip(&m, Instant::ZERO), m);
            }
            for vector in [0, 1, 0x80, 0xFF, 0b0101_1010] {
                let m = Message::TfrcpAck(TfrcpAck {
                    seq,
                    ts_echo: ts,
                    vector,
                });
                assert_eq!(round_trip(&m, Instant::MAX), m);
            }
        }
    }
}

#[test]
fn encode_refuses_what_it_cannot_carry() {
    let mut buf = [0u8; 2048];
    let tcp = [
        Message::TcpData(TcpData {
            seq: 1,
            len: 1,
            ts: Instant::ZERO,
            retransmit: false,
            dummy: false,
        }),
        Message::TcpAck(TcpAck {
            ack: 1,
            wnd: 1,
            ts_echo: Instant::ZERO,
            sack: [SackBlock::default(); 3],
            sack_len: 0,
            dummy_echo: false,
        }),
    ];
    for m in tcp {
        assert_eq!(WireProtocol::of(&m), None);
        assert_eq!(encode(&m, &mut buf), Err(WireError::Unsupported));
        assert_eq!(wire::encoded_len(&m), Err(WireError::Unsupported));
    }
    let unrepresentable = [
        data(dccp::MAX_SEQ + 1, 0, 0, None),
        feedback(0, Duration::ZERO, f64::NAN, 0.1),
        feedback(0, Duration::ZERO, -1.0, 0.1),
        feedback(0, Duration::ZERO, 1.0, f64::NAN),
        feedback(0, Duration::ZERO, 1.0, 1.5),
        feedback(0, Duration::ZERO, 1.0, -0.5),
    ];
    for m in unrepresentable {
        assert!(
            matches!(encode(&m, &mut buf), Err(WireError::Unrepresentable(_))),
            "{m:?}"
        );
    }
    for m in samples() {
        let n = wire::encoded_len(&m).unwrap();
        assert_eq!(
            encode(&m, &mut buf[..n - 1]),
            Err(WireError::BufferTooSmall { needed: n })
        );
    }
    // Errors display as one line.
    let e = WireError::BadOption {
        kind: 192,
        reason: "length below 2",
    };
    assert_eq!(e.to_string(), "bad option 192: length below 2");
    let _: &dyn std::error::Error = &e;
}

// ------------------------------------------------------ malformed input

/// Builds a DCCP packet by hand: `options` padded with zeros to a word,
/// `payload` zero bytes, checksum filled (CsCov 1).
fn dccp_raw(t: PacketType, seq: u64, options: &[u8], payload: usize) -> Vec<u8> {
    let fixed = if t.has_ack() { 24 } else { 16 };
    let header = fixed + options.len().next_multiple_of(4);
    let mut buf = vec![0u8; header + payload];
    buf[fixed..fixed + options.len()].copy_from_slice(options);
    let mut p = dccp::Packet::new_unchecked(&mut buf[..]);
    p.set_data_offset((header / 4) as u8);
    p.set_ccval_cscov(0, 1);
    p.set_packet_type(t);
    p.set_seq_number(seq);
    if t.has_ack() {
        p.set_ack_number(seq);
    }
    p.fill_checksum().expect("coverage");
    buf
}

fn refill_dccp_checksum(buf: &mut [u8]) {
    let mut p = dccp::Packet::new_checked(&mut buf[..]).expect("valid header");
    p.fill_checksum().expect("coverage");
}

const TS: [u8; 6] = [41, 6, 0, 0, 0, 100];
const ECHO: [u8; 8] = [42, 8, 0, 0, 0, 100, 0, 50];
const RR: [u8; 6] = [194, 6, 0, 0, 0x27, 0x10];
const LER: [u8; 6] = [192, 6, 0, 0, 0, 20];

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

fn dccp(buf: &[u8]) -> Result<Message, WireError> {
    decode(WireProtocol::Dccp, buf, Instant(1_000 * TICK))
}

#[test]
fn every_truncation_is_an_error_or_a_shorter_payload() {
    for msg in samples() {
        let bytes = enc(&msg);
        let header = wire::header_len(&msg).unwrap();
        // What the whole packet decodes to (timestamps on their tick).
        let msg = decode(proto(&msg), &bytes, Instant::ZERO).unwrap();
        for n in 0..bytes.len() {
            let got = decode(proto(&msg), &bytes[..n], Instant::ZERO);
            if n < header {
                assert!(got.is_err(), "{msg:?} cut to {n}: {got:?}");
            } else {
                let shorter = match msg {
                    Message::TfrcData(d) => Message::TfrcData(TfrcData {
                        len: (n - header) as u32,
                        ..d
                    }),
                    Message::TfrcpData(d) => Message::TfrcpData(TfrcpData {
                        len: (n - header) as u32,
                        ..d
                    }),
                    Message::Datagram { seq, .. } => Message::Datagram {
                        seq,
                        len: (n - header) as u32,
                    },
                    other => panic!("{other:?} has no payload"),
                };
                assert_eq!(got, Ok(shorter));
            }
        }
    }
}

#[test]
fn flipped_header_bytes_are_caught() {
    // Any change to one header byte is an error (the checksum, or a
    // header check before it); payload bytes are not the codec's.
    for msg in samples() {
        let bytes = enc(&msg);
        let header = wire::header_len(&msg).unwrap();
        let msg = decode(proto(&msg), &bytes, Instant::ZERO).unwrap();
        for i in 0..bytes.len() {
            for mask in [0x01u8, 0x10, 0x80, 0xFF, 0x5A] {
                let mut b = bytes.clone();
                b[i] ^= mask;
                let got = decode(proto(&msg), &b, Instant::ZERO);
                if i < header {
                    assert!(got.is_err(), "{msg:?} byte {i} ^ {mask:#x}: {got:?}");
                } else {
                    assert_eq!(got, Ok(msg));
                }
            }
        }
    }
}

#[test]
fn dccp_types_other_than_data_and_acks_are_refused() {
    let base = enc(&samples()[0]);
    for t in 0u8..16 {
        let mut b = base.clone();
        b[8] = (t << 1) | 1;
        refill_dccp_checksum(&mut b);
        let got = dccp(&b);
        match t {
            2 => assert!(matches!(got, Ok(Message::TfrcData(_))), "{t}: {got:?}"),
            // The data packet's options read from after the subheader:
            // whatever they parse to, an error.
            3 | 4 => assert!(got.is_err(), "{t}: {got:?}"),
            _ => assert_eq!(got, Err(WireError::BadType(t))),
        }
    }
}

#[test]
fn dccp_header_errors() {
    let base = enc(&samples()[0]);
    // X = 0: short sequence numbers.
    let mut b = base.clone();
    b[8] &= !1;
    assert!(matches!(dccp(&b), Err(WireError::BadHeader(_))));
    // Data Offset below the generic header, or past the packet.
    for (offset, want) in [
        (0u8, "BadHeader"),
        (3, "BadHeader"),
        (9, "Truncated"),
        (255, "Truncated"),
    ] {
        let mut b = base.clone();
        b[4] = offset;
        let got = dccp(&b);
        assert!(format!("{got:?}").contains(want), "{offset}: {got:?}");
    }
    // A DCCP-Ack with a Data Offset that leaves no room for its subheader.
    let mut b = dccp_raw(PacketType::Ack, 1, &cat(&[&ECHO, &RR, &LER]), 0);
    b[4] = 5;
    assert!(matches!(dccp(&b), Err(WireError::BadHeader(_))));
    // CsCov beyond the packet: header 24 + (CsCov - 1) * 4 > 28.
    let mut b = base.clone();
    b[5] = 3;
    refill_dccp_checksum_or_zero(&mut b);
    assert!(matches!(dccp(&b), Err(WireError::BadHeader(_))));
    // The compact format is not DCCP.
    assert!(dccp(&enc(&samples()[4])).is_err());
}

/// With a CsCov beyond the packet the checksum cannot be filled: zero it
/// (not verified) so the coverage check is what fails.
fn refill_dccp_checksum_or_zero(buf: &mut [u8]) {
    buf[6] = 0;
    buf[7] = 0;
}

#[test]
fn dccp_option_errors() {
    let ack = |opts: &[u8]| dccp(&dccp_raw(PacketType::Ack, 9, opts, 0));
    let bad = |got: Result<Message, WireError>, kind: u8| match got {
        Err(WireError::BadOption { kind: k, .. }) => assert_eq!(k, kind),
        other => panic!("want BadOption {kind}: {other:?}"),
    };
    // Lengths that overrun the option space, or are below 2, or missing.
    bad(ack(&cat(&[&ECHO, &RR, &[192, 9, 0, 0, 0, 20]])), 192);
    bad(ack(&cat(&[&ECHO, &RR, &LER, &[0, 0, 200, 10]])), 200);
    bad(ack(&cat(&[&ECHO, &RR, &LER, &[38, 1]])), 38);
    bad(ack(&cat(&[&ECHO, &RR, &LER, &[0, 0, 0, 38]])), 38);
    bad(ack(&cat(&[&[43, 0], &ECHO, &RR, &LER])), 43);
    // Lengths the option type does not allow.
    bad(ack(&cat(&[&[42, 7, 0, 0, 0, 1, 0], &RR, &LER])), 42);
    bad(ack(&cat(&[&ECHO, &[43, 5, 0, 0, 1], &RR, &LER])), 43);
    bad(ack(&cat(&[&ECHO, &[194, 5, 0, 0, 1], &LER])), 194);
    bad(dccp(&dccp_raw(PacketType::Data, 1, &[41, 4, 0, 1], 0)), 41);
    bad(
        dccp(&dccp_raw(
            PacketType::Data,
            1,
            &cat(&[&TS, &[184, 5, 0, 0, 1]]),
            0,
        )),
        184,
    );
    // An infinite loss event rate.
    bad(ack(&cat(&[&ECHO, &RR, &[192, 6, 0, 0, 0, 0]])), 192);
    // Mandatory before an option not understood, another Mandatory, or
    // nothing.
    bad(ack(&cat(&[&ECHO, &RR, &LER, &[1, 38, 3, 0]])), 38);
    bad(ack(&cat(&[&ECHO, &RR, &LER, &[1, 1]])), 1);
    bad(ack(&cat(&[&ECHO, &RR, &LER, &[0, 0, 0, 1]])), 1);
    // Required options missing.
    assert_eq!(ack(&cat(&[&RR, &LER])), Err(WireError::MissingOption(42)));
    assert_eq!(
        ack(&cat(&[&ECHO, &LER])),
        Err(WireError::MissingOption(194))
    );
    assert_eq!(ack(&cat(&[&ECHO, &RR])), Err(WireError::MissingOption(192)));
    assert_eq!(
        dccp(&dccp_raw(PacketType::Data, 1, &[], 10)),
        Err(WireError::MissingOption(41))
    );
}

#[test]
fn dccp_accepts_what_the_rfcs_allow() {
    let want_fb = |t_delay: Duration| Ok(feedback(100 * TICK, t_delay, 10_000.0, 1.0 / 20.0));
    let ack = |opts: &[u8]| dccp(&dccp_raw(PacketType::Ack, 9, opts, 0));
    // Unknown options are skipped (RFC 4340 §5.8): Slow Receiver, a
    // reserved single-byte type, NDP Count, Ack Vector, Loss Intervals
    // (one interval), a CCID-specific 250, padding anywhere.
    let noise: &[u8] = &[
        2, 17, 37, 3, 1, 38, 4, 0, 0, 193, 12, 0, 0, 0, 1, 0, 0, 2, 0, 0, 3, 250, 2, 0,
    ];
    assert_eq!(
        ack(&cat(&[noise, &ECHO, &[0], &RR, &[0, 0], &LER])),
        want_fb(Duration::from_micros(500))
    );
    // t_delay from the Elapsed Time option when the echo has none, from
    // the echo when both are there; a bare echo means zero (§13.3).
    let echo6: &[u8] = &[42, 6, 0, 0, 0, 100];
    let et: &[u8] = &[43, 6, 0, 0, 0, 70];
    assert_eq!(
        ack(&cat(&[echo6, et, &RR, &LER])),
        want_fb(Duration::from_micros(700))
    );
    assert_eq!(
        ack(&cat(&[&ECHO, et, &RR, &LER])),
        want_fb(Duration::from_micros(500))
    );
    assert_eq!(ack(&cat(&[echo6, &RR, &LER])), want_fb(Duration::ZERO));
    // A 4-byte Elapsed Time in the echo.
    assert_eq!(
        ack(&cat(&[&[42, 10, 0, 0, 0, 100, 0, 1, 0, 0], &RR, &LER])),
        want_fb(Duration::from_nanos(0x1_0000 * TICK))
    );
    // The last occurrence of an option counts (§5.8).
    assert_eq!(
        ack(&cat(&[&ECHO, &[194, 6, 0, 0, 0, 1], &RR, &LER])),
        want_fb(Duration::from_micros(500))
    );
    // Mandatory before an option we process; "Mandatory Padding".
    assert_eq!(
        ack(&cat(&[&[1], &ECHO, &[1, 0], &RR, &[1], &LER])),
        want_fb(Duration::from_micros(500))
    );
    // On DCCP-Data the receiver's options and Mandatory are ignored.
    let d = dccp(&dccp_raw(
        PacketType::Data,
        5,
        &cat(&[&[1, 38, 3, 0], &RR, &[192, 6, 0, 0, 0, 0], &TS]),
        3,
    ));
    assert_eq!(d, Ok(data(5, 3, 100 * TICK, None)));
    // DCCP-DataAck is a data packet with an acknowledgement.
    let d = dccp(&dccp_raw(PacketType::DataAck, 6, &TS, 2));
    assert_eq!(d, Ok(data(6, 2, 100 * TICK, None)));
    // A DCCP-Ack's application data area is padding, ignored (§5.4).
    assert_eq!(
        dccp(&dccp_raw(PacketType::Ack, 9, &cat(&[&ECHO, &RR, &LER]), 40)),
        want_fb(Duration::from_micros(500))
    );
    // RFC 6773 §3.3: a sender that leaves the DCCP checksum zero.
    let mut b = enc(&samples()[2]);
    b[6] = 0;
    b[7] = 0;
    assert_eq!(dccp(&b).map(|_| ()), Ok(()));
    // Full coverage (CsCov 0) is verified over the payload too.
    let mut b = dccp_raw(PacketType::Data, 1, &TS, 8);
    b[5] = 0;
    b[10] = 0xFF;
    refill_dccp_checksum(&mut b);
    assert_eq!(dccp(&b).map(|_| ()), Ok(()));
    b[30] ^= 1;
    assert_eq!(dccp(&b), Err(WireError::BadChecksum));
}

#[test]
fn compact_errors() {
    let s = samples();
    let tfrcp = |b: &[u8]| decode(WireProtocol::Tfrcp, b, Instant::ZERO);
    // Another format's type for the flow's protocol.
    assert_eq!(tfrcp(&enc(&s[6])), Err(WireError::BadType(3)));
    assert_eq!(
        decode(WireProtocol::Datagram, &enc(&s[4]), Instant::ZERO),
        Err(WireError::BadType(1))
    );
    // DCCP bytes start with the port, not our magic.
    assert_eq!(tfrcp(&enc(&s[0])), Err(WireError::BadVersion(0)));
    // Unknown types, with the checksum right.
    for t in (0u8..=255).filter(|t| !(1..=3).contains(t)) {
        let mut b = enc(&s[4]);
        b[1] = t;
        assert_eq!(tfrcp(&b), Err(WireError::BadType(t)));
    }
    // Bytes after an ACK.
    let mut b = enc(&s[5]);
    b.push(0);
    let mut p = compact::Packet::new_checked(&mut b[..]).unwrap();
    p.fill_checksum();
    assert!(matches!(tfrcp(&b), Err(WireError::BadHeader(_))));
    assert_eq!(tfrcp(&[]), Err(WireError::Truncated));
    assert_eq!(tfrcp(&[0xA1]), Err(WireError::Truncated));
}

#[test]
fn every_error_displays() {
    let all = [
        WireError::Truncated,
        WireError::BufferTooSmall { needed: 3 },
        WireError::BadVersion(2),
        WireError::BadType(12),
        WireError::BadHeader("x"),
        WireError::BadChecksum,
        WireError::BadOption {
            kind: option_type::TIMESTAMP,
            reason: "y",
        },
        WireError::MissingOption(41),
        WireError::Unrepresentable("z"),
        WireError::Unsupported,
    ];
    for e in all {
        let s = e.to_string();
        assert!(!s.is_empty() && !s.contains('\n'), "{e:?}");
    }
}

// ------------------------------------------------ endpoints over the codec

/// What crossed the path.
enum Carried {
    Typed(Message),
    Bytes(Vec<u8>),
}

#[derive(Debug, Default)]
struct Run {
    sender: Stats,
    receiver: Stats,
    forward: u64,
    reverse: u64,
    max_header: usize,
}

/// Drives `s` and `r` for `secs` seconds over a 2 Mb/s, 100 ms, 30-packet
/// drop-tail path, each endpoint on its own clock (local = global +
/// offset). With `protocol`, every message crosses as bytes: encoded by
/// the sender of it, decoded by the receiver of it with its own clock.
fn run_over(
    s: &mut dyn Sender,
    r: &mut dyn Endpoint,
    protocol: Option<WireProtocol>,
    secs: u64,
    s_off: u64,
    r_off: u64,
) -> Run {
    let delay = Duration::from_millis(100);
    let rate_bps = 2_000_000;
    let end = Instant::ZERO + Duration::from_secs(secs);
    let mut out = Run::default();
    let mut fwd: VecDeque<(Instant, Carried)> = VecDeque::new();
    let mut rev: VecDeque<(Instant, Carried)> = VecDeque::new();
    let mut link_free = Instant::ZERO;
    let mut now = Instant::ZERO;
    let local = |g: Instant, off: u64| Instant(g.as_nanos() + off);
    let global = |l: Instant, off: u64| Instant(l.as_nanos().saturating_sub(off));
    let carry = |m: Message, out: &mut Run| -> (Carried, u64) {
        let len = wire::encoded_len(&m).expect("datagram protocol");
        out.max_header = out.max_header.max(wire::header_len(&m).unwrap());
        match protocol {
            Some(p) => {
                assert_eq!(WireProtocol::of(&m), Some(p));
                let mut buf = vec![0u8; len];
                assert_eq!(encode(&m, &mut buf), Ok(len));
                (Carried::Bytes(buf), len as u64)
            }
            None => (Carried::Typed(m), len as u64),
        }
    };
    let open = |c: Carried, at: Instant| -> Message {
        match c {
            Carried::Typed(m) => m,
            Carried::Bytes(b) => decode(protocol.expect("bytes"), &b, at).expect("decodes"),
        }
    };
    s.set_unlimited(local(now, s_off));
    for _ in 0..5_000_000 {
        while let Some(t) = s.poll_transmit(local(now, s_off)) {
            out.forward += 1;
            let queued = fwd.iter().filter(|(at, _)| *at > now + delay).count();
            let (c, len) = carry(t.message, &mut out);
            if queued >= 30 {
                continue;
            }
            // IPv4 and UDP headers on top of the datagram.
            link_free = link_free.max(now) + Duration::transmission(len + 28, rate_bps);
            fwd.push_back((link_free + delay, c));
        }
        while s.poll_event().is_some() {}
        while let Some(t) = r.poll_transmit(local(now, r_off)) {
            out.reverse += 1;
            let (c, _) = carry(t.message, &mut out);
            rev.push_back((now + delay, c));
        }
        let next = [
            s.poll_timeout().map(|t| global(t, s_off)),
            r.poll_timeout().map(|t| global(t, r_off)),
            fwd.front().map(|x| x.0),
            rev.front().map(|x| x.0),
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(next) = next.filter(|&t| t <= end) else {
            break;
        };
        now = next.max(now);
        while fwd.front().is_some_and(|x| x.0 <= now) {
            let (_, c) = fwd.pop_front().expect("front");
            let at = local(now, r_off);
            r.handle_input(at, &open(c, at));
        }
        while rev.front().is_some_and(|x| x.0 <= now) {
            let (_, c) = rev.pop_front().expect("front");
            let at = local(now, s_off);
            s.handle_input(at, &open(c, at));
        }
        if s.poll_timeout().is_some_and(|t| global(t, s_off) <= now) {
            s.handle_timeout(local(now, s_off));
        }
        if r.poll_timeout().is_some_and(|t| global(t, r_off) <= now) {
            r.handle_timeout(local(now, r_off));
        }
    }
    out.sender = s.stats();
    out.receiver = r.stats();
    out
}

/// The sender's clock starts 2 s before its 32-bit DCCP timestamps wrap;
/// the receiver's clock is 3 hours and a bit ahead.
const S_OFF: u64 = (1 << 32) * TICK - 2_000_000_000;
const R_OFF: u64 = S_OFF + 3 * 3_600 * 1_000_000_000 + 12_345;

#[test]
fn tfrc_runs_over_dccp_bytes() {
    let pair = || {
        let s = TfrcSender::new(tfrc::SenderConfig::default(), Instant(S_OFF));
        let r = TfrcReceiver::new(tfrc::ReceiverConfig::default());
        (s, r)
    };
    let (mut s, mut r) = pair();
    let typed = run_over(&mut s, &mut r, None, 30, S_OFF, R_OFF);
    let (mut s, mut r) = pair();
    let bytes = run_over(&mut s, &mut r, Some(WireProtocol::Dccp), 30, S_OFF, R_OFF);
    assert_eq!(bytes.sender.foreign + bytes.receiver.foreign, 0);
    assert!(bytes.reverse > 100, "{bytes:?}");
    // The base RTT is 200 ms plus queueing; quantization adds at most
    // 20 µs to a sample (the echo's tick and t_delay's).
    let srtt = bytes.sender.srtt.expect("an RTT");
    assert!(
        srtt >= Duration::from_millis(200) && srtt < Duration::from_millis(400),
        "{srtt}"
    );
    // The codec's rounding (10 µs ticks, 1/p rounded up) does not change
    // what the flow achieves.
    let (a, b) = (
        typed.receiver.delivered_bytes as f64,
        bytes.receiver.delivered_bytes as f64,
    );
    eprintln!(
        "TFRC 30 s: typed {a} B, over DCCP {b} B, srtt {srtt}, {} feedback",
        bytes.reverse
    );
    assert!(b > 3_000_000.0, "{bytes:?}");
    assert!((a - b).abs() / a < 0.05, "typed {a} vs bytes {b}");
    assert!(bytes.max_header <= wire::MAX_HEADER_LEN);
}

#[test]
fn tfrcp_and_cbr_run_over_compact_bytes() {
    let pair = || {
        (
            TfrcpSender::new(tfrcp::SenderConfig::default(), Instant(S_OFF), 3),
            TfrcpReceiver::new(tfrcp::ReceiverConfig::default()),
        )
    };
    let (mut s, mut r) = pair();
    let typed = run_over(&mut s, &mut r, None, 30, S_OFF, R_OFF);
    let (mut s, mut r) = pair();
    let bytes = run_over(&mut s, &mut r, Some(WireProtocol::Tfrcp), 30, S_OFF, R_OFF);
    // 64-bit timestamps: the run is the same to the nanosecond (compared
    // as text: the stats hold a NaN).
    assert_eq!(format!("{:?}", typed.sender), format!("{:?}", bytes.sender));
    assert_eq!(
        format!("{:?}", typed.receiver),
        format!("{:?}", bytes.receiver)
    );
    assert!(bytes.receiver.delivered_bytes > 1_000_000, "{bytes:?}");

    let mut s = CbrSource::new(CbrConfig::new(972, 1000, 1_000_000, false), Instant(S_OFF));
    let mut r = Sink::new();
    let o = run_over(
        &mut s,
        &mut r,
        Some(WireProtocol::Datagram),
        5,
        S_OFF,
        R_OFF,
    );
    // 125 datagrams/s; those still on the 100 ms path at the end are not
    // delivered.
    assert!(o.forward > 600, "{o:?}");
    assert!(o.receiver.delivered_bytes <= 972 * o.forward);
    assert!(
        o.receiver.delivered_bytes >= 972 * (o.forward - 20),
        "{o:?}"
    );
}
