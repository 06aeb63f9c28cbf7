//! Deterministic fuzzing of the TCP segment codec (`wire::tcp`), like
//! `wire_fuzz.rs`.
//!
//! The seeds are kernel segments captured on a veth pair (the same bytes
//! as the codec's unit tests: SYN, SYN-ACK and data segments over IPv4
//! and IPv6, checksums valid) and segments the codec emits with SACK
//! blocks. A fixed-seed [`Rng`] mutates them (bit flips, interesting
//! bytes, insertions, deletions, truncations, splices, the Data Offset
//! and option kind/length bytes set at random), and the checksum is fixed
//! most of the time so that mutations reach the option parser. Every
//! variant must parse to `Ok` or `Err` without panicking; an `Ok` header
//! must emit and parse back to itself (or be refused as too long for the
//! option space once NOP-aligned), and rewriting its window must keep the
//! checksum valid.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::panic::{self, AssertUnwindSafe};

use satcc_proto::rng::Rng;
use satcc_proto::wire::tcp::{Endpoints, Flags, Packet, Repr, MAX_HEADER_LEN, MAX_SACK_BLOCKS};
use satcc_proto::wire::WireError;

const MUTATIONS: u64 = 1_000_000;

const INTERESTING: [u8; 14] = [0, 1, 2, 3, 4, 5, 8, 10, 18, 26, 34, 0x50, 0xF0, 0xFF];

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn v4() -> Endpoints {
    Endpoints::V4(Ipv4Addr::new(10, 9, 0, 1), Ipv4Addr::new(10, 9, 0, 2))
}

fn v6() -> Endpoints {
    Endpoints::V6("fd00::1".parse().unwrap(), "fd00::2".parse().unwrap())
}

fn seeds() -> Vec<(Vec<u8>, Endpoints)> {
    let mut s: Vec<(Vec<u8>, Endpoints)> = [
        (
            "ccb8138913d560b500000000a002faf016ec0000020405b40402080a0706c639000000000103030a",
            v4(),
        ),
        (
            "1389ccb88d37c64f13d560b6a012fe882ca20000020405b40402080a55373de20706c6390103030a",
            v4(),
        ),
        (
            "ccb8138913d560b68d37c6508018003f7ade00000101080a0706c63955373de270696e67",
            v4(),
        ),
        (
            "e564138a83ff1ba300000000a002fd20abae0000020405a00402080a2ff7dcb4000000000103030a",
            v6(),
        ),
        (
            "e564138a83ff1ba4279a473c801800401bc100000101080a2ff7dcb5f94d3e7670696e6736",
            v6(),
        ),
    ]
    .into_iter()
    .map(|(h, e)| (hex(h), e))
    .collect();
    for (blocks, ts) in [(1usize, true), (3, true), (4, false)] {
        let mut sack = [None; MAX_SACK_BLOCKS];
        for (i, b) in sack.iter_mut().take(blocks).enumerate() {
            *b = Some((1000 * i as u32, 1000 * i as u32 + 500));
        }
        let r = Repr {
            src_port: 5001,
            dst_port: 52408,
            seq_number: 7,
            ack_number: 1,
            flags: Flags::ACK,
            window: 512,
            urgent: 0,
            mss: None,
            window_scale: None,
            sack_permitted: false,
            sack,
            timestamps: ts.then_some((5, 6)),
            payload_len: 0,
        };
        let mut buf = vec![0u8; r.buffer_len()];
        r.emit(&mut buf, &[], &v4()).unwrap();
        s.push((buf, v4()));
    }
    s
}

fn mutate(rng: &mut Rng, buf: &mut Vec<u8>, other: &[u8]) {
    for _ in 0..=rng.below(4) {
        let len = buf.len() as u64;
        let at = |rng: &mut Rng| rng.below(len.max(1)) as usize;
        match rng.below(10) {
            0 if len > 0 => {
                let i = at(rng);
                buf[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = at(rng);
                buf[i] = rng.next_u64() as u8;
            }
            2 if len > 0 => {
                let i = at(rng);
                buf[i] = INTERESTING[rng.below(INTERESTING.len() as u64) as usize];
            }
            3 => {
                let i = rng.below(len + 1) as usize;
                buf.insert(i, rng.next_u64() as u8);
            }
            4 if len > 0 => {
                let i = at(rng);
                buf.remove(i);
            }
            5 => buf.truncate(rng.below(len + 1) as usize),
            6 => {
                let i = rng.below(len + 1) as usize;
                let j = rng.below(other.len() as u64 + 1) as usize;
                buf.truncate(i);
                buf.extend_from_slice(&other[j..]);
            }
            7 => {
                // Data Offset.
                if let Some(b) = buf.get_mut(12) {
                    *b = (rng.below(16) as u8) << 4;
                }
            }
            _ => {
                // An option kind or length byte.
                let i = 20 + rng.below(40) as usize;
                if let Some(b) = buf.get_mut(i) {
                    *b = INTERESTING[rng.below(INTERESTING.len() as u64) as usize];
                }
            }
        }
    }
}

fn check(buf: &mut [u8], ep: &Endpoints) -> &'static str {
    // The unchecked view's accessors must not panic on any buffer.
    let u = Packet::new_unchecked(&buf[..]);
    let _ = (
        u.options(),
        u.payload(),
        u.option_iter().count(),
        u.window(),
    );
    let p = match Packet::new_checked(&buf[..]) {
        Ok(p) => p,
        Err(_) => return "err: length",
    };
    let repr = match Repr::parse(&p, Some(ep)) {
        Ok(r) => r,
        Err(WireError::BadChecksum) => return "err: checksum",
        Err(_) => return "err: header/option",
    };
    let payload = p.payload().to_vec();
    let mut out = vec![0u8; repr.buffer_len()];
    match repr.emit(&mut out, &payload, ep) {
        Ok(n) => {
            let q = Packet::new_checked(&out[..n]).unwrap();
            assert_eq!(
                Repr::parse(&q, Some(ep)),
                Ok(repr),
                "re-parse of {buf:02x?}"
            );
        }
        Err(e) => {
            assert_eq!(e, WireError::Unrepresentable("tcp options exceed 40 bytes"));
            assert!(repr.header_len() > MAX_HEADER_LEN);
            return "ok: too long to re-emit";
        }
    }
    let mut p = Packet::new_checked(&mut buf[..]).unwrap();
    let w = p.window().wrapping_mul(7).wrapping_add(1);
    p.set_window(w);
    assert!(p.verify_checksum(ep), "window rewrite of {buf:02x?}");
    "ok"
}

#[test]
fn mutated_segments_never_panic_and_ok_round_trips() {
    let seeds = seeds();
    let mut rng = Rng::new(0x7C9_F022);
    let mut outcomes: BTreeMap<&'static str, u64> = BTreeMap::new();
    for _ in 0..MUTATIONS {
        let (seed, ep) = &seeds[rng.below(seeds.len() as u64) as usize];
        let (other, _) = &seeds[rng.below(seeds.len() as u64) as usize];
        let mut buf = seed.clone();
        mutate(&mut rng, &mut buf, other);
        if rng.below(4) != 0 {
            if let Ok(mut p) = Packet::new_checked(&mut buf[..]) {
                p.fill_checksum(ep);
            }
        }
        let before = buf.clone();
        let r = panic::catch_unwind(AssertUnwindSafe(|| check(&mut buf, ep)));
        match r {
            Ok(o) => *outcomes.entry(o).or_default() += 1,
            Err(_) => panic!("input {before:02x?}"),
        }
    }
    eprintln!("{outcomes:?}");
    // The mutations must reach every branch, or the fuzzing proves little.
    for k in ["ok", "err: length", "err: checksum", "err: header/option"] {
        assert!(
            outcomes.get(k).copied().unwrap_or(0) > 1000,
            "{k}: {outcomes:?}"
        );
    }
}
