//! The fixed-point packet pacer shared by the TFRC sender (RFC 5348 §4.6)
//! and the TFRCP sender's even pacing.
//!
//! The pacer keeps the nominal send time of the next packet in ns * 2^32.
//! Nominal times advance by the inter-packet interval from the previous
//! nominal time, carrying the sub-nanosecond remainder, so the long-run
//! rate is exact; a sender more than one interval late (after an idle
//! period, say) restarts the schedule from now instead of bursting. When
//! the rate changes, [`Pacer::reschedule`] brings the next send forward to
//! one new interval after the last send, so that an increase takes effect
//! at once instead of after a long old interval.
//!
//! The pacer only keeps the schedule: when a packet may leave (early by
//! some slack, with data to send, ...) is the caller's decision.

use crate::time::Instant;

/// Fractional bits of the fixed-point times and intervals (ns * 2^32).
const FP_BITS: u32 = 32;

/// 2^FP_BITS as f64: one nanosecond in fixed point.
const FP_ONE: f64 = (1u64 << FP_BITS) as f64;

/// The longest interval, 1000 s, in fixed point.
const MAX_IPI: f64 = 1e12 * FP_ONE;

/// `t` in fixed point.
fn to_fp(t: Instant) -> u128 {
    (t.as_nanos() as u128) << FP_BITS
}

/// An inter-packet interval, ns * 2^32, at least 2^-32 ns and at most
/// 1000 s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ipi(u128);

impl Ipi {
    /// The time to send `size` units at `rate` units per second
    /// (`size` finite and positive): `size/rate` when that is finite and
    /// positive, clamped to [2^-32 ns, 1000 s]; the longest interval for
    /// a rate of zero or less, the shortest for an infinite or NaN rate.
    pub(crate) fn from_rate(size: f64, rate: f64) -> Ipi {
        let ipi = if rate.is_finite() && rate > 0.0 {
            (size * 1e9 / rate * FP_ONE).clamp(1.0, MAX_IPI)
        } else if rate.is_finite() {
            MAX_IPI
        } else {
            1.0
        };
        // Below 2^64 (every rate above ~1 packet per 4 s), convert through
        // u64: the same truncation, one instruction instead of a call to
        // the u128 conversion routine, on every packet sent.
        if ipi < 18_446_744_073_709_551_616.0 {
            Ipi(u128::from(ipi as u64))
        } else {
            Ipi(ipi as u128)
        }
    }

    /// Half the interval, rounded down to a whole ns.
    pub(crate) fn half_ns(self) -> u64 {
        (self.0 >> (FP_BITS + 1)).min(u64::MAX as u128) as u64
    }
}

/// The schedule: the nominal send time of the next packet and the time of
/// the last send.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pacer {
    /// Nominal send time of the next packet, ns * 2^32.
    t_nom: u128,
    last_send: Option<Instant>,
}

impl Pacer {
    /// A schedule whose first packet is due at `now`.
    pub(crate) fn new(now: Instant) -> Self {
        Pacer {
            t_nom: to_fp(now),
            last_send: None,
        }
    }

    /// The nominal send time of the next packet, rounded up to a whole ns.
    pub(crate) fn due(&self) -> Instant {
        let ns = self.t_nom.div_ceil(1u128 << FP_BITS);
        Instant(ns.min(u64::MAX as u128) as u64)
    }

    /// After the rate changed to one of interval `ipi`: if the next
    /// nominal send time lies beyond one new interval after the last send,
    /// bring it forward. Nothing happens before the first send.
    pub(crate) fn reschedule(&mut self, ipi: Ipi) {
        if let Some(last) = self.last_send {
            let cand = to_fp(last) + ipi.0;
            if cand < self.t_nom {
                self.t_nom = cand;
            }
        }
    }

    /// A packet left on the schedule at `now`: the next one is due `ipi`
    /// after this one's nominal time (after `now` if the sender was more
    /// than one interval late).
    pub(crate) fn on_send(&mut self, now: Instant, ipi: Ipi) {
        let now_fp = to_fp(now);
        if now_fp > self.t_nom.saturating_add(ipi.0) {
            self.t_nom = now_fp;
        }
        self.t_nom = self.t_nom.saturating_add(ipi.0);
        self.last_send = Some(now);
    }

    /// A packet left at `now` off the schedule (TFRCP burst pacing): only
    /// the time of the last send, which [`Self::reschedule`] starts from,
    /// is updated.
    pub(crate) fn on_unscheduled_send(&mut self, now: Instant) {
        self.last_send = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Duration;

    fn at_ms(ms: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(ms)
    }

    #[test]
    fn interval_from_rate_and_its_bounds() {
        // 1000 B at 10000 B/s: 100 ms.
        let ipi = Ipi::from_rate(1000.0, 10_000.0);
        assert_eq!(ipi, Ipi(100_000_000u128 << FP_BITS));
        assert_eq!(ipi.half_ns(), 50_000_000);
        // One packet at 3 packets/s keeps its sub-ns remainder.
        let ipi = Ipi::from_rate(1.0, 3.0);
        assert_eq!(ipi.0 >> FP_BITS, 333_333_333);
        assert_ne!(ipi.0 & ((1u128 << FP_BITS) - 1), 0);
        // Clamped to [2^-32 ns, 1000 s]; a zero rate gives the longest
        // interval, an infinite or NaN one the shortest.
        let max = Ipi(1_000_000_000_000u128 << FP_BITS);
        assert_eq!(Ipi::from_rate(1.0, 1e-9), max);
        assert_eq!(Ipi::from_rate(1.0, 0.0), max);
        assert_eq!(Ipi::from_rate(1.0, -1.0), max);
        assert_eq!(Ipi::from_rate(1.0, 1e300), Ipi(1));
        assert_eq!(Ipi::from_rate(1.0, f64::INFINITY), Ipi(1));
        assert_eq!(Ipi::from_rate(1.0, f64::NAN), Ipi(1));
    }

    #[test]
    fn schedule_carries_the_fractional_remainder() {
        // 3 packets/s: 333.33.. ms; due times are rounded up to whole ns,
        // and 3 intervals make exactly one second.
        let ipi = Ipi::from_rate(1.0, 3.0);
        let mut p = Pacer::new(Instant::ZERO);
        assert_eq!(p.due(), Instant::ZERO);
        let mut dues = Vec::new();
        for _ in 0..3000 {
            let t = p.due();
            p.on_send(t, ipi);
            dues.push(p.due().as_nanos());
        }
        assert_eq!(dues[0], 333_333_334);
        assert_eq!(dues[1], 666_666_667);
        assert_eq!(dues[2], 1_000_000_000);
        // 3000 intervals: 1000 s, give or take one ns of truncation each.
        let end = dues[2999] as i64;
        assert!((end - 1_000_000_000_000).abs() <= 3000, "{end}");
    }

    #[test]
    fn a_late_sender_restarts_from_now() {
        let ipi = Ipi::from_rate(1.0, 10.0); // 100 ms
        let mut p = Pacer::new(Instant::ZERO);
        p.on_send(Instant::ZERO, ipi);
        assert_eq!(p.due(), at_ms(100));
        // Late by less than one interval: the nominal schedule holds.
        p.on_send(at_ms(150), ipi);
        assert_eq!(p.due(), at_ms(200));
        // Late by more than one interval: restart from now, no burst.
        p.on_send(at_ms(1000), ipi);
        assert_eq!(p.due(), at_ms(1100));
    }

    #[test]
    fn reschedule_brings_the_next_send_forward_only() {
        let slow = Ipi::from_rate(1.0, 1.0); // 1 s
        let fast = Ipi::from_rate(1.0, 10.0); // 100 ms
        let mut p = Pacer::new(Instant::ZERO);
        // Nothing sent yet: nothing to start from.
        p.reschedule(fast);
        assert_eq!(p.due(), Instant::ZERO);
        p.on_send(Instant::ZERO, slow);
        assert_eq!(p.due(), at_ms(1000));
        // Slower: never pushed back.
        p.reschedule(Ipi::from_rate(1.0, 0.5));
        assert_eq!(p.due(), at_ms(1000));
        // Faster: one new interval after the last send.
        p.reschedule(fast);
        assert_eq!(p.due(), at_ms(100));
        // An unscheduled send moves the reference, not the schedule.
        p.on_unscheduled_send(at_ms(50));
        assert_eq!(p.due(), at_ms(100));
        p.reschedule(fast);
        assert_eq!(p.due(), at_ms(100));
        p.reschedule(Ipi::from_rate(1.0, 100.0)); // 10 ms
        assert_eq!(p.due(), at_ms(60));
    }
}
