//! TFRC messages as DCCP CCID 3 packets: [`TfrcData`] is a DCCP-Data
//! packet, [`TfrcFeedback`] a DCCP-Ack (layouts in [`super`]), and the
//! conversions of their values to the options' integer units.
//!
//! | message field | option | unit on the wire |
//! |---|---|---|
//! | `TfrcData::ts` | Timestamp (41, RFC 4340 §13.1) | 10 µs ticks, low 32 bits |
//! | `TfrcData::rtt` | RTT Estimate (184, ours) | µs, saturating at 2^32 - 1 (71.6 min) |
//! | `TfrcFeedback::ts_echo` | Timestamp Echo (42, RFC 4340 §13.3) | as `ts` |
//! | `TfrcFeedback::t_delay` | Timestamp Echo's Elapsed Time and Elapsed Time (43, §13.2) | 10 µs ticks, rounded down, saturating |
//! | `TfrcFeedback::x_recv` | Receive Rate (194, RFC 4342 §8.3) | bytes/s, rounded, saturating |
//! | `TfrcFeedback::p` | Loss Event Rate (192, RFC 4342 §8.5) | 1/p rounded up; 2^32 - 1 for p = 0 |
//!
//! **The RTT estimate.** RFC 5348 §3.2.1 has the data packet carry the
//! sender's RTT estimate, which our receiver uses (its feedback interval
//! and loss-event grouping). RFC 4342 replaces it with the 4-bit CCVal
//! window counter (§8.1), which needs per-connection state at both ends.
//! We carry the estimate explicitly, in a CCID-specific option: RFC 4340
//! §10.3 gives option numbers 128-191 to options the HC-Sender sends, and
//! RFC 4342 §12.2 permanently reserves 184-190 of them for experimental
//! and testing use; we take 184, length 6, the RTT in microseconds as a
//! 32-bit value (the Timestamp option's 10 µs would also do; microseconds
//! keep LAN round trips distinct). Absent means `rtt: None`. A CCID 3
//! receiver that does not know it ignores it (RFC 4340 §5.8); we never
//! mark it Mandatory (§5.8.2 forbids Mandatory on DCCP-Data).
//!
//! Every conversion is exact on the values it produces, so a decoded
//! message re-encodes to the same option values.

use super::dccp::{self, option_type, Options, PacketType, Repr, TimestampEcho};
use super::WireError;
use crate::endpoint::Message;
use crate::tfrc::{TfrcData, TfrcFeedback};
use crate::time::{Duration, Instant};

/// One tick of DCCP's timing options: 10 µs (RFC 4340 §13.1, §13.2).
pub const TICK: Duration = Duration::from_micros(10);

const TICK_NS: u64 = TICK.as_nanos();
const WRAP: u64 = 1 << 32;

/// The CsCov our packets use: header and options only (see [`super`]).
pub const CSCOV: u8 = 1;

/// The 32-bit Timestamp Value of `t`: whole 10 µs ticks since the run's
/// epoch, modulo 2^32.
pub fn timestamp_to_wire(t: Instant) -> u32 {
    (t.as_nanos() / TICK_NS) as u32
}

/// The [`Instant`] a 32-bit Timestamp Value stands for, seen from `now`:
/// among the instants `k` ticks after the epoch with `k ≡ v (mod 2^32)`,
/// the nearest to `now` (the earlier on a tie, never before the epoch).
/// For a value this clock encoded less than 2^31 ticks (5.9 hours) ago,
/// that is the encoded instant rounded down to its tick.
pub fn timestamp_from_wire(v: u32, now: Instant) -> Instant {
    let now_ticks = now.as_nanos() / TICK_NS;
    // (now_ticks - v) mod 2^32: how far back the candidate at or before
    // now lies.
    let back = now_ticks.wrapping_sub(u64::from(v)) % WRAP;
    let earlier = now_ticks.checked_sub(back);
    let later = now_ticks
        .checked_add(WRAP - back)
        .filter(|k| k.checked_mul(TICK_NS).is_some());
    let ticks = match (earlier, later) {
        (Some(e), _) if back == 0 => e,
        (Some(e), Some(l)) => {
            if back <= WRAP / 2 {
                e
            } else {
                l
            }
        }
        (Some(e), None) => e,
        (None, Some(l)) => l,
        // Unreachable: with no earlier candidate now_ticks < 2^32, so the
        // later one exists.
        (None, None) => u64::from(v),
    };
    Instant(ticks * TICK_NS)
}

/// An elapsed time in 10 µs ticks, rounded down (RFC 4340 §13.2: a lower
/// bound), saturating at 2^32 - 1 (which the RFC reads as "more than
/// 11.9 hours").
pub fn elapsed_to_wire(d: Duration) -> u32 {
    (d.as_nanos() / TICK_NS).min(u64::from(u32::MAX)) as u32
}

/// The duration of `v` ticks.
pub fn elapsed_from_wire(v: u32) -> Duration {
    Duration::from_nanos(u64::from(v) * TICK_NS)
}

/// An RTT estimate in whole microseconds, rounded down, saturating.
pub fn rtt_to_wire(d: Duration) -> u32 {
    (d.as_nanos() / 1_000).min(u64::from(u32::MAX)) as u32
}

/// The RTT of a wire value in microseconds.
pub fn rtt_from_wire(v: u32) -> Duration {
    Duration::from_micros(u64::from(v))
}

/// A receive rate in bytes per second, rounded to the nearest integer and
/// saturating at 2^32 - 1 (34 Gb/s). NaN and negative rates cannot be
/// encoded.
pub fn receive_rate_to_wire(x_recv: f64) -> Result<u32, WireError> {
    if x_recv.is_nan() || x_recv < 0.0 {
        return Err(WireError::Unrepresentable(
            "receive rate is NaN or negative",
        ));
    }
    if x_recv >= f64::from(u32::MAX) {
        Ok(u32::MAX)
    } else {
        Ok(x_recv.round() as u32)
    }
}

/// The receive rate of a wire value, bytes per second.
pub fn receive_rate_from_wire(v: u32) -> f64 {
    f64::from(v)
}

/// The Loss Event Rate option's value for `p` (RFC 4342 §8.5): 1/p
/// rounded up, 2^32 - 1 for p = 0. A p that is exactly 1/n (as decoding
/// gives) encodes as n; one too small for 32 bits saturates at 2^32 - 2
/// (2^32 - 1 means zero). p must be in [0, 1].
pub fn loss_event_rate_to_wire(p: f64) -> Result<u32, WireError> {
    if !(0.0..=1.0).contains(&p) {
        return Err(WireError::Unrepresentable(
            "loss event rate outside [0, 1] or NaN",
        ));
    }
    if p == 0.0 {
        return Ok(u32::MAX);
    }
    const MAX: f64 = (u32::MAX - 1) as f64;
    let inverse = 1.0 / p;
    if inverse >= MAX {
        return Ok(u32::MAX - 1);
    }
    let nearest = inverse.round();
    let n = if 1.0 / nearest == p {
        nearest
    } else {
        inverse.ceil()
    };
    Ok(n as u32)
}

/// The loss event rate of a Loss Event Rate value: 0 for 2^32 - 1, else
/// 1/v; zero is invalid.
pub fn loss_event_rate_from_wire(v: u32) -> Result<f64, WireError> {
    match v {
        0 => Err(WireError::BadOption {
            kind: option_type::LOSS_EVENT_RATE,
            reason: "zero (an infinite loss event rate)",
        }),
        u32::MAX => Ok(0.0),
        n => Ok(1.0 / f64::from(n)),
    }
}

/// The DCCP-Data packet for a TFRC data packet: ports, CCVal,
/// acknowledgement number zero, CsCov 1 (see [`super`]).
pub fn data_repr(d: &TfrcData) -> Result<Repr, WireError> {
    if d.seq > dccp::MAX_SEQ {
        return Err(WireError::Unrepresentable(
            "DCCP sequence number at or above 2^48",
        ));
    }
    Ok(Repr {
        src_port: 0,
        dst_port: 0,
        ccval: 0,
        cscov: CSCOV,
        packet_type: PacketType::Data,
        seq: d.seq,
        ack: 0,
        options: Options {
            timestamp: Some(timestamp_to_wire(d.ts)),
            rtt_estimate: d.rtt.map(rtt_to_wire),
            ..Options::default()
        },
        payload_len: d.len as usize,
    })
}

/// The DCCP-Ack packet for a TFRC feedback packet: sequence and
/// acknowledgement numbers zero (the message has neither), `t_delay` both
/// in the Timestamp Echo (smallest form, omitted when zero) and in an
/// Elapsed Time option (RFC 4342 §8.2).
pub fn feedback_repr(f: &TfrcFeedback) -> Result<Repr, WireError> {
    let elapsed = elapsed_to_wire(f.t_delay);
    Ok(Repr {
        src_port: 0,
        dst_port: 0,
        ccval: 0,
        cscov: CSCOV,
        packet_type: PacketType::Ack,
        seq: 0,
        ack: 0,
        options: Options {
            timestamp_echo: Some(TimestampEcho {
                timestamp: timestamp_to_wire(f.ts_echo),
                elapsed: (elapsed != 0).then_some(elapsed),
            }),
            elapsed_time: Some(elapsed),
            receive_rate: Some(receive_rate_to_wire(f.x_recv)?),
            loss_event_rate: Some(loss_event_rate_to_wire(f.p)?),
            ..Options::default()
        },
        payload_len: 0,
    })
}

/// The DCCP packet for a TFRC message; [`WireError::Unsupported`] for
/// other messages.
pub fn to_repr(msg: &Message) -> Result<Repr, WireError> {
    match msg {
        Message::TfrcData(d) => data_repr(d),
        Message::TfrcFeedback(f) => feedback_repr(f),
        _ => Err(WireError::Unsupported),
    }
}

/// The TFRC message a parsed packet carries, timestamps mapped with
/// [`timestamp_from_wire`] from `now`.
///
/// DCCP-Data and DCCP-DataAck are data packets and need a Timestamp;
/// DCCP-Ack is feedback and needs Timestamp Echo, Receive Rate and Loss
/// Event Rate. `t_delay` is the Timestamp Echo's Elapsed Time, else the
/// Elapsed Time option's, else zero.
pub fn to_message(repr: &Repr, now: Instant) -> Result<Message, WireError> {
    let o = &repr.options;
    match repr.packet_type {
        PacketType::Data | PacketType::DataAck => {
            let ts = o
                .timestamp
                .ok_or(WireError::MissingOption(option_type::TIMESTAMP))?;
            let len = u32::try_from(repr.payload_len)
                .map_err(|_| WireError::BadHeader("payload longer than 2^32 - 1 bytes"))?;
            Ok(Message::TfrcData(TfrcData {
                seq: repr.seq,
                len,
                ts: timestamp_from_wire(ts, now),
                rtt: o.rtt_estimate.map(rtt_from_wire),
                // ns-2's tzero field has no CCID 3 option (ns2 profile only).
                t_rto: None,
            }))
        }
        PacketType::Ack => {
            let echo = o
                .timestamp_echo
                .ok_or(WireError::MissingOption(option_type::TIMESTAMP_ECHO))?;
            let x_recv = o
                .receive_rate
                .ok_or(WireError::MissingOption(option_type::RECEIVE_RATE))?;
            let p = o
                .loss_event_rate
                .ok_or(WireError::MissingOption(option_type::LOSS_EVENT_RATE))?;
            let t_delay = echo
                .elapsed
                .or(o.elapsed_time)
                .map_or(Duration::ZERO, elapsed_from_wire);
            Ok(Message::TfrcFeedback(TfrcFeedback {
                ts_echo: timestamp_from_wire(echo.timestamp, now),
                t_delay,
                x_recv: receive_rate_from_wire(x_recv),
                p: loss_event_rate_from_wire(p)?,
            }))
        }
        other => Err(WireError::BadType(other as u8)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: u64 = 10_000; // ns per tick

    #[test]
    fn timestamp_maps_back_near_now() {
        // Exact for instants on a tick, before or after now, across wraps.
        let day = Instant::ZERO + Duration::from_secs(86_400);
        for now in [Instant::ZERO, Instant(5 * T), day, Instant(u64::MAX)] {
            for delta in [0i64, 1, -1, 1 << 20, -(1 << 20), (1 << 31) - 1, -(1 << 31)] {
                let ticks = (now.as_nanos() / T) as i64 + delta;
                if ticks < 0 || (ticks as u64).checked_mul(T).is_none() {
                    continue;
                }
                let t = Instant(ticks as u64 * T);
                assert_eq!(
                    timestamp_from_wire(timestamp_to_wire(t), now),
                    t,
                    "now {now:?} delta {delta}"
                );
            }
        }
        // Truncated to the tick.
        let t = Instant(123 * T + 9_999);
        assert_eq!(
            timestamp_from_wire(timestamp_to_wire(t), t),
            Instant(123 * T)
        );
        // Never before the epoch: early in a run, a value "from the
        // future" maps forward.
        assert_eq!(
            timestamp_from_wire(u32::MAX, Instant(T)),
            Instant(u64::from(u32::MAX) * T)
        );
    }

    #[test]
    fn from_wire_always_re_encodes() {
        let mut rng = crate::rng::Rng::new(3);
        for _ in 0..10_000 {
            let v = rng.next_u64() as u32;
            let now = Instant(rng.next_u64() >> rng.below(64));
            assert_eq!(timestamp_to_wire(timestamp_from_wire(v, now)), v);
        }
    }

    #[test]
    fn loss_event_rate_encoding() {
        assert_eq!(loss_event_rate_to_wire(0.0), Ok(u32::MAX));
        assert_eq!(loss_event_rate_to_wire(1.0), Ok(1));
        assert_eq!(loss_event_rate_to_wire(0.01), Ok(100));
        // Rounded up: 1/0.3 = 3.33 -> 4.
        assert_eq!(loss_event_rate_to_wire(0.3), Ok(4));
        assert_eq!(loss_event_rate_to_wire(1e-300), Ok(u32::MAX - 1));
        assert_eq!(loss_event_rate_to_wire(f64::MIN_POSITIVE), Ok(u32::MAX - 1));
        for bad in [f64::NAN, -0.1, 1.5, f64::INFINITY] {
            assert!(loss_event_rate_to_wire(bad).is_err());
        }
        assert!(loss_event_rate_from_wire(0).is_err());
        assert_eq!(loss_event_rate_from_wire(u32::MAX), Ok(0.0));
        for n in (1..=u32::MAX - 1)
            .step_by(65_537)
            .chain([2, 3, 7, u32::MAX - 1])
        {
            let p = loss_event_rate_from_wire(n).unwrap();
            assert_eq!(loss_event_rate_to_wire(p), Ok(n), "{n}");
        }
    }

    #[test]
    fn receive_rate_encoding() {
        assert_eq!(receive_rate_to_wire(0.0), Ok(0));
        assert_eq!(receive_rate_to_wire(1234.5), Ok(1235));
        assert_eq!(receive_rate_to_wire(1e12), Ok(u32::MAX));
        assert_eq!(receive_rate_to_wire(f64::INFINITY), Ok(u32::MAX));
        assert!(receive_rate_to_wire(f64::NAN).is_err());
        assert!(receive_rate_to_wire(-1.0).is_err());
    }

    #[test]
    fn durations_round_down_and_saturate() {
        assert_eq!(elapsed_to_wire(Duration::from_nanos(19_999)), 1);
        assert_eq!(elapsed_to_wire(Duration::MAX), u32::MAX);
        assert_eq!(elapsed_from_wire(3), Duration::from_micros(30));
        assert_eq!(rtt_to_wire(Duration::from_nanos(1_999)), 1);
        assert_eq!(rtt_to_wire(Duration::from_secs(10_000)), u32::MAX);
        assert_eq!(rtt_from_wire(600_000), Duration::from_millis(600));
    }
}
