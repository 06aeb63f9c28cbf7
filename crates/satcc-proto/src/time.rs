//! Integer-nanosecond time.
//!
//! Simulated and real time are both counted in whole nanoseconds so that a
//! run is reproducible to the bit: no `f64` seconds ever decide an event's
//! order.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in time, in nanoseconds since the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(pub u64);

/// A span of time in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub u64);

impl Instant {
    /// The start of a run.
    pub const ZERO: Instant = Instant(0);
    /// A time later than any run reaches (used as "never").
    pub const MAX: Instant = Instant(u64::MAX);

    /// Nanoseconds since the start of the run.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Seconds since the start of the run (for reporting only).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    /// The span from `earlier` to `self`, zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
}

impl Duration {
    /// No time.
    pub const ZERO: Duration = Duration(0);
    /// The longest representable span.
    pub const MAX: Duration = Duration(u64::MAX);

    /// A span of `n` nanoseconds.
    pub const fn from_nanos(n: u64) -> Self {
        Duration(n)
    }
    /// A span of `n` microseconds.
    pub const fn from_micros(n: u64) -> Self {
        Duration(n * 1_000)
    }
    /// A span of `n` milliseconds.
    pub const fn from_millis(n: u64) -> Self {
        Duration(n * 1_000_000)
    }
    /// A span of `n` seconds.
    pub const fn from_secs(n: u64) -> Self {
        Duration(n * 1_000_000_000)
    }
    /// A span from fractional seconds, rounded to the nearest nanosecond.
    /// Negative and non-finite inputs give zero; huge ones saturate.
    pub fn from_secs_f64(s: f64) -> Self {
        if !s.is_finite() || s <= 0.0 {
            return Duration::ZERO;
        }
        let ns = s * 1e9;
        // 2^64 (`u64::MAX as f64`): a product below it rounds to below it
        // (floats there are 2048 apart, all whole).
        if ns >= u64::MAX as f64 {
            return Duration::MAX;
        }
        // `ns.round()` (half away from zero) without the call to the
        // rounding routine (baseline x86-64 has no rounding instruction):
        // the truncation, plus one if the fraction is at least a half.
        // `ns - trunc(ns)` is exact for every float, and from 2^52 up
        // `ns` is whole, so this is the same integer (test
        // `from_secs_f64_rounds_as_round`).
        let t = ns as u64;
        let frac = ns - t as f64;
        Duration(t + u64::from(frac >= 0.5))
    }
    /// Nanoseconds in the span.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Seconds in the span (for arithmetic in rate equations and reporting).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    /// `self * k`, saturating.
    pub fn saturating_mul(self, k: u64) -> Duration {
        Duration(self.0.saturating_mul(k))
    }
    /// The time to serialise `bytes` at `rate_bps` bits per second, rounded up
    /// to a whole nanosecond so that a link is never faster than its rate.
    pub fn transmission(bytes: u64, rate_bps: u64) -> Duration {
        if rate_bps == 0 {
            return Duration::MAX;
        }
        // u64 arithmetic (far cheaper than u128 division) whenever the
        // product fits, which is every packet size.
        match bytes.checked_mul(8_000_000_000) {
            Some(bits_ns) => Duration(bits_ns.div_ceil(rate_bps)),
            None => {
                let bits = bytes as u128 * 8 * 1_000_000_000;
                Duration(bits.div_ceil(rate_bps as u128).min(u64::MAX as u128) as u64)
            }
        }
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }
}
impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, other: Instant) -> Duration {
        Duration(self.0.saturating_sub(other.0))
    }
}
impl Add for Duration {
    type Output = Duration;
    fn add(self, d: Duration) -> Duration {
        Duration(self.0.saturating_add(d.0))
    }
}
impl AddAssign for Duration {
    fn add_assign(&mut self, d: Duration) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub for Duration {
    type Output = Duration;
    fn sub(self, d: Duration) -> Duration {
        Duration(self.0.saturating_sub(d.0))
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.9}s", self.as_secs_f64())
    }
}
impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.9}s", self.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rounding without the rounding routine gives what
    /// `(s * 1e9).round()` gives: halves, the neighbours of halves, the
    /// 2^52..2^64 range, the saturation edge and random bit patterns.
    #[test]
    fn from_secs_f64_rounds_as_round() {
        fn by_round(s: f64) -> Duration {
            if !s.is_finite() || s <= 0.0 {
                return Duration::ZERO;
            }
            let ns = (s * 1e9).round();
            if ns >= u64::MAX as f64 {
                Duration::MAX
            } else {
                Duration(ns as u64)
            }
        }
        let mut cases = vec![
            0.0,
            -0.0,
            -1.0,
            f64::NAN,
            f64::INFINITY,
            f64::MIN_POSITIVE,
            1e-300,
        ];
        for ns in [
            0.5f64,
            1.5,
            2.5,
            1e6 + 0.5,
            4503599627370495.5,
            2f64.powi(52),
            2f64.powi(53),
        ] {
            for x in [
                ns,
                f64::from_bits(ns.to_bits() - 1),
                f64::from_bits(ns.to_bits() + 1),
            ] {
                cases.push(x / 1e9);
            }
        }
        for e in 50..=65 {
            let ns = 2f64.powi(e);
            for x in [
                ns,
                f64::from_bits(ns.to_bits() - 1),
                f64::from_bits(ns.to_bits() + 1),
            ] {
                cases.push(x / 1e9);
            }
        }
        let mut rng = crate::rng::Rng::new(11);
        for _ in 0..200_000 {
            cases.push(f64::from_bits(rng.next_u64()));
            // Durations of interest: ns to days, with fractions.
            cases.push(rng.next_f64() * 10f64.powi(rng.below(15) as i32 - 9));
        }
        for s in cases {
            assert_eq!(Duration::from_secs_f64(s), by_round(s), "{s:e}");
        }
    }

    #[test]
    fn transmission_time_rounds_up() {
        // 1000 bytes at 10 Mb/s is exactly 800 us.
        assert_eq!(
            Duration::transmission(1000, 10_000_000),
            Duration::from_micros(800)
        );
        // 1 byte at 3 b/s is 2.666.. s, rounded up.
        assert_eq!(Duration::transmission(1, 3), Duration(2_666_666_667));
        assert_eq!(Duration::transmission(1, 0), Duration::MAX);
    }

    #[test]
    fn secs_f64_conversion_saturates() {
        assert_eq!(Duration::from_secs_f64(-1.0), Duration::ZERO);
        assert_eq!(Duration::from_secs_f64(f64::NAN), Duration::ZERO);
        assert_eq!(Duration::from_secs_f64(1e30), Duration::MAX);
        assert_eq!(Duration::from_secs_f64(0.25), Duration::from_millis(250));
    }
}
