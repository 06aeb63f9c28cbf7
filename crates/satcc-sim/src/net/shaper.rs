//! A token-bucket shaper in front of a link, as Linux's `tbf` qdisc
//! (tc-tbf(8)): tokens accrue at `rate` up to `burst` bytes; the packet at
//! the head of the queue leaves only when the bucket holds its size, and
//! then at the link's own (line) rate. After an idle period a whole
//! `burst` passes at line rate before the shaping starts: what satcc's
//! serialising link alone never does, and what made issue 34's overload
//! invisible here.
//!
//! Integer arithmetic only (deterministic): tokens are counted in bit·ns
//! per second, so that `rate_bps` of them accrue each nanosecond.

use satcc_proto::{Duration, Instant};

/// Bit·ns/s in one byte.
const BYTE: u128 = 8 * 1_000_000_000;

/// A token bucket's state.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    rate_bps: u64,
    /// Bucket depth, bit·ns/s.
    cap: u128,
    /// Tokens at `at`, bit·ns/s.
    tokens: u128,
    at: Instant,
}

impl TokenBucket {
    /// A full bucket (as tbf starts) of `burst` bytes filling at
    /// `rate_bps` (at least 1 b/s and 1 byte: a scenario refuses less).
    pub fn new(rate_bps: u64, burst: u64) -> TokenBucket {
        let cap = u128::from(burst.max(1)) * BYTE;
        TokenBucket {
            rate_bps: rate_bps.max(1),
            cap,
            tokens: cap,
            at: Instant::ZERO,
        }
    }

    fn fill(&mut self, now: Instant) {
        if now > self.at {
            let gained = u128::from((now - self.at).as_nanos()) * u128::from(self.rate_bps);
            self.tokens = (self.tokens + gained).min(self.cap);
            self.at = now;
        }
    }

    /// Tokens a `size`-byte packet needs. tbf refuses a packet larger than
    /// its bucket; here such a packet waits for a full bucket instead, so
    /// that no packet is stuck for ever.
    fn need(&self, size: u32) -> u128 {
        (u128::from(size) * BYTE).min(self.cap)
    }

    /// When a `size`-byte packet at the head may leave (`now` if at once).
    pub fn ready_at(&mut self, now: Instant, size: u32) -> Instant {
        self.fill(now);
        let need = self.need(size);
        if self.tokens >= need {
            return now;
        }
        let wait = (need - self.tokens).div_ceil(u128::from(self.rate_bps));
        now + Duration(u64::try_from(wait).unwrap_or(u64::MAX))
    }

    /// A `size`-byte packet leaves now: its tokens are spent (the caller
    /// checked [`Self::ready_at`]).
    pub fn take(&mut self, now: Instant, size: u32) {
        self.fill(now);
        self.tokens = self.tokens.saturating_sub(self.need(size));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_bucket_passes_a_burst_then_shapes_to_the_rate() {
        // 10 Mb/s, 16 KiB: 16 packets of 1000 B at once, then one per
        // 800 us.
        let mut b = TokenBucket::new(10_000_000, 16 * 1024);
        let t0 = Instant(1_000_000_000);
        for _ in 0..16 {
            assert_eq!(b.ready_at(t0, 1000), t0);
            b.take(t0, 1000);
        }
        let t1 = b.ready_at(t0, 1000);
        // 384 bytes were left: 616 more take 492.8 us, rounded up.
        assert_eq!(t1, t0 + Duration(492_800));
        b.take(t1, 1000);
        assert_eq!(b.ready_at(t1, 1000), t1 + Duration::from_micros(800));
        // Idle for a second: the bucket is full again, not fuller.
        let t2 = t1 + Duration::from_secs(1);
        for _ in 0..16 {
            assert_eq!(b.ready_at(t2, 1000), t2);
            b.take(t2, 1000);
        }
        assert!(b.ready_at(t2, 1000) > t2);
    }

    #[test]
    fn a_packet_larger_than_the_bucket_waits_for_a_full_one() {
        let mut b = TokenBucket::new(8_000, 100);
        let t = Instant::ZERO;
        assert_eq!(b.ready_at(t, 1500), t);
        b.take(t, 1500);
        // 100 bytes at 1000 B/s.
        assert_eq!(b.ready_at(t, 1500), t + Duration::from_millis(100));
    }
}
