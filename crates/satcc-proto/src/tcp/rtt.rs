//! Retransmission-timeout estimation (RFC 6298).

use crate::time::Duration;

/// Smoothed RTT, RTT variance and the retransmission timeout of RFC 6298,
/// with exponential backoff.
///
/// All arithmetic is in integer nanoseconds so that a run is reproducible to
/// the bit.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
    backoff: u32,
    initial_rto: Duration,
    min_rto: Duration,
    max_rto: Duration,
    granularity: Duration,
    min_on_variance: bool,
}

impl RttEstimator {
    /// An estimator with no sample yet.
    pub fn new(
        initial_rto: Duration,
        min_rto: Duration,
        max_rto: Duration,
        granularity: Duration,
    ) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: Duration::ZERO,
            backoff: 0,
            initial_rto,
            min_rto,
            // A misconfigured max below min must not make clamp() panic.
            max_rto: max_rto.max(min_rto),
            granularity,
            min_on_variance: false,
        }
    }

    /// Apply `min_rto` to the variance term instead of the RTO, as Linux
    /// does: RTO = SRTT + max(4·RTTVAR, min_rto). Linux's
    /// `tcp_rtt_estimator()` never lets `mdev_max_us` (its 4·RTTVAR) fall
    /// below `tcp_rto_min_us()` (200 ms, `TCP_RTO_MIN`), and
    /// `__tcp_set_rto()` takes SRTT + `rttvar_us`. On a long path this
    /// keeps the RTO at least 200 ms above the RTT, where RFC 6298 §2.4's
    /// floor on the RTO itself (1 s there; 200 ms with a Linux-like
    /// `min_rto`) lets a steady 500 ms RTT give an RTO barely above it.
    pub fn with_min_on_variance(mut self, on: bool) -> Self {
        self.min_on_variance = on;
        self
    }

    /// Feed one RTT measurement `r`.
    pub fn on_sample(&mut self, r: Duration) {
        self.observe(r);
        // RFC 6298 §5.7 (and Karn): a fresh sample ends the backoff.
        self.backoff = 0;
    }

    /// Feed one RTT measurement `r` into SRTT and RTTVAR without ending
    /// the backoff: ns-2's `rtt_update()`, which the `Agent/TCP/Linux`
    /// shim calls on every ACK while only the acknowledgment of its timed
    /// segment ends the backoff (tcp-linux.cc `time_processing()`).
    pub fn observe(&mut self, r: Duration) {
        match self.srtt {
            None => {
                // RFC 6298 §2.2: SRTT <- R, RTTVAR <- R/2.
                self.srtt = Some(r);
                self.rttvar = Duration(r.0 / 2);
            }
            Some(srtt) => {
                // RFC 6298 §2.3, alpha = 1/8, beta = 1/4. RTTVAR is updated
                // first because it uses the old SRTT.
                let diff = srtt.0.abs_diff(r.0) as u128;
                let var = (3 * self.rttvar.0 as u128 + diff) / 4;
                let s = (7 * srtt.0 as u128 + r.0 as u128) / 8;
                self.rttvar = Duration(var.min(u64::MAX as u128) as u64);
                self.srtt = Some(Duration(s.min(u64::MAX as u128) as u64));
            }
        }
    }

    /// End the backoff (the next RTO is the base RTO again).
    pub fn end_backoff(&mut self) {
        self.backoff = 0;
    }

    /// Smoothed RTT, if a sample has been taken.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// RTT variation (zero before the first sample).
    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }

    /// The RTO without backoff, clamped to `[min_rto, max_rto]`.
    pub fn base_rto(&self) -> Duration {
        let raw = match self.srtt {
            // RFC 6298 §2.1: the initial RTO before any sample.
            None => self.initial_rto,
            // RFC 6298 §2.2/§2.3: RTO = SRTT + max(G, K*RTTVAR), K = 4.
            Some(srtt) if self.min_on_variance => {
                srtt + self.min_rto.max(self.rttvar.saturating_mul(4))
            }
            Some(srtt) => srtt + self.granularity.max(self.rttvar.saturating_mul(4)),
        };
        // RFC 6298 §2.4 (lower bound) and §2.5 (upper bound).
        raw.clamp(self.min_rto, self.max_rto)
    }

    /// The current RTO: the base RTO doubled once per backoff, capped at
    /// `max_rto` (RFC 6298 §5.5).
    pub fn rto(&self) -> Duration {
        let base = self.base_rto();
        let rto = if self.backoff >= 63 {
            Duration::MAX
        } else {
            base.saturating_mul(1u64 << self.backoff)
        };
        rto.min(self.max_rto)
    }

    /// The retransmission timer expired: double the RTO (RFC 6298 §5.5).
    pub fn back_off(&mut self) {
        self.backoff = (self.backoff + 1).min(63);
    }

    /// Consecutive backoffs since the last RTT sample.
    pub fn backoff_count(&self) -> u32 {
        self.backoff
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_on_variance_keeps_the_rto_that_far_above_srtt() {
        let ms = Duration::from_millis;
        let mut rfc = est();
        let mut linux = est().with_min_on_variance(true);
        // Before a sample both use the initial RTO.
        assert_eq!((rfc.rto(), linux.rto()), (ms(1000), ms(1000)));
        // A steady 500 ms RTT: RTTVAR decays toward 0.
        for _ in 0..40 {
            rfc.on_sample(ms(500));
            linux.on_sample(ms(500));
        }
        // RFC 6298: SRTT + 4·RTTVAR, barely above the RTT (above the
        // 200 ms floor); Linux: SRTT + 200 ms.
        assert!(rfc.rto() < ms(505), "{:?}", rfc.rto());
        assert_eq!(linux.rto(), ms(700));
        // A large variance term wins over the floor.
        linux.on_sample(ms(900));
        let var4 = linux.rttvar().saturating_mul(4);
        assert!(var4 > ms(200));
        assert_eq!(linux.rto(), linux.srtt().unwrap() + var4);
    }

    fn est() -> RttEstimator {
        RttEstimator::new(
            Duration::from_secs(1),
            Duration::from_millis(200),
            Duration::from_secs(60),
            Duration::from_millis(1),
        )
    }

    #[test]
    fn initial_rto_before_samples() {
        let e = est();
        assert_eq!(e.srtt(), None);
        assert_eq!(e.rto(), Duration::from_secs(1));
    }

    #[test]
    fn first_sample() {
        let mut e = est();
        e.on_sample(Duration::from_millis(500));
        assert_eq!(e.srtt(), Some(Duration::from_millis(500)));
        assert_eq!(e.rttvar(), Duration::from_millis(250));
        // 500 + 4 * 250 = 1500 ms.
        assert_eq!(e.rto(), Duration::from_millis(1500));
    }

    #[test]
    fn subsequent_sample_hand_computed() {
        let mut e = est();
        e.on_sample(Duration::from_millis(800));
        // SRTT = 800, RTTVAR = 400.
        e.on_sample(Duration::from_millis(400));
        // RTTVAR = 3/4 * 400 + 1/4 * |800 - 400| = 300 + 100 = 400
        // SRTT   = 7/8 * 800 + 1/8 * 400 = 700 + 50 = 750
        assert_eq!(e.rttvar(), Duration::from_millis(400));
        assert_eq!(e.srtt(), Some(Duration::from_millis(750)));
        assert_eq!(e.rto(), Duration::from_millis(750 + 1600));
        e.on_sample(Duration::from_millis(750));
        // RTTVAR = 300 + 0 = 300, SRTT = 750.
        assert_eq!(e.rttvar(), Duration::from_millis(300));
        assert_eq!(e.rto(), Duration::from_millis(750 + 1200));
    }

    #[test]
    fn min_rto_clamp_and_granularity() {
        let mut e = est();
        e.on_sample(Duration::from_millis(10));
        // 10 + 4 * 5 = 30 ms < 200 ms.
        assert_eq!(e.rto(), Duration::from_millis(200));
        let mut g = RttEstimator::new(
            Duration::from_secs(1),
            Duration::ZERO,
            Duration::from_secs(60),
            Duration::from_millis(100),
        );
        g.on_sample(Duration::from_millis(10));
        // max(G, 4 * RTTVAR) = max(100, 20) = 100.
        assert_eq!(g.rto(), Duration::from_millis(110));
    }

    #[test]
    fn backoff_doubles_caps_and_clears() {
        let mut e = est();
        e.on_sample(Duration::from_millis(500));
        e.back_off();
        assert_eq!(e.rto(), Duration::from_millis(3000));
        e.back_off();
        assert_eq!(e.rto(), Duration::from_millis(6000));
        for _ in 0..100 {
            e.back_off();
        }
        assert_eq!(e.rto(), Duration::from_secs(60));
        e.on_sample(Duration::from_millis(500));
        assert_eq!(e.backoff_count(), 0);
        assert!(e.rto() < Duration::from_secs(2));
    }
}
