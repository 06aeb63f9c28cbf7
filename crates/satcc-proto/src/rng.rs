//! A small, version-stable pseudo-random generator.
//!
//! We carry our own generator (xoshiro256++ seeded through SplitMix64)
//! instead of a crate's so that a scenario and seed give the same bytes in
//! every future release: a dependency bump must never change results.
//! Protocols that need randomness take a `&mut Rng` from their driver.

/// xoshiro256++ generator. Each simulator component owns its own stream,
/// derived from the run seed with [`Rng::stream`].
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    /// A generator seeded from one 64-bit value.
    pub fn new(seed: u64) -> Self {
        let mut x = seed;
        let s = [
            splitmix64(&mut x),
            splitmix64(&mut x),
            splitmix64(&mut x),
            splitmix64(&mut x),
        ];
        Rng { s }
    }

    /// An independent stream for component `id` of a run seeded with `seed`.
    /// Streams depend only on (seed, id), so adding a component never
    /// perturbs the draws of the others.
    pub fn stream(seed: u64, id: u64) -> Self {
        let mut x = seed ^ id.wrapping_mul(0xD6E8_FEB8_6659_FD93);
        let _ = splitmix64(&mut x);
        Rng::new(splitmix64(&mut x) ^ id)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[0]
            .wrapping_add(self.s[3])
            .rotate_left(23)
            .wrapping_add(self.s[0]);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1) with 53 bits of precision.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p` (clamped to [0, 1]).
    pub fn chance(&mut self, p: f64) -> bool {
        if p <= 0.0 {
            false
        } else if p >= 1.0 {
            true
        } else {
            self.next_f64() < p
        }
    }

    /// Uniform integer in [0, n); 0 when n is 0.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        // Lemire's multiply-shift; the tiny bias is irrelevant here and the
        // result is deterministic, which is what matters.
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Exponentially distributed with the given mean.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        let u = 1.0 - self.next_f64(); // in (0, 1]
        -mean * u.ln()
    }

    /// Pareto distributed with the given mean and shape (> 1), as ns-2's
    /// `Application/Traffic/Pareto` draws it: scale = mean*(shape-1)/shape.
    pub fn pareto(&mut self, mean: f64, shape: f64) -> f64 {
        let scale = mean * (shape - 1.0) / shape;
        let u = 1.0 - self.next_f64(); // in (0, 1]
        scale / u.powf(1.0 / shape)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: Vec<u64> = (0..4).map(|_| Rng::stream(7, 1).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        assert_ne!(Rng::stream(7, 1).next_u64(), Rng::stream(7, 2).next_u64());
        assert_ne!(Rng::stream(7, 1).next_u64(), Rng::stream(8, 1).next_u64());
    }

    #[test]
    fn long_run_means() {
        let mut r = Rng::new(42);
        let n = 200_000;
        let u: f64 = (0..n).map(|_| r.next_f64()).sum::<f64>() / n as f64;
        assert!((u - 0.5).abs() < 0.01, "uniform mean {u}");
        let e: f64 = (0..n).map(|_| r.exponential(2.0)).sum::<f64>() / n as f64;
        assert!((e - 2.0).abs() < 0.05, "exponential mean {e}");
        let p: f64 = (0..n).map(|_| r.pareto(1.0, 2.5)).sum::<f64>() / n as f64;
        assert!((p - 1.0).abs() < 0.05, "pareto mean {p}");
        let c = (0..n).filter(|_| r.chance(0.01)).count() as f64 / n as f64;
        assert!((c - 0.01).abs() < 0.002, "chance {c}");
    }
}
