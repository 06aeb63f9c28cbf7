//! Number formatting for the bulk outputs (CSV series, SVG coordinates)
//! that gives exactly the bytes of `format!("{v:.p}")` and
//! `format!("{v}")`, several times faster.
//!
//! `core::fmt` prints a float with a fixed number of decimals through an
//! exact big-number algorithm (Grisu with a Dragon fallback); writing the
//! time series of a run that way cost as much as a third of the run. Here
//! the value is scaled by 10^p in one `f64` multiplication and rounded to
//! an integer. That product carries a relative error below 2^-53, so its
//! rounding is the correctly rounded one except when it lies within that
//! error of a half: those cases are settled exactly in integer arithmetic
//! (half to even, as `core::fmt` does); negative numbers and anything too
//! large for the fast path go to `core::fmt`, so the output never differs.

use std::fmt::Write as _;

/// Powers of ten for up to this many decimals.
const POW10: [u64; 10] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
];

/// Largest scaled value taken by the fast path: far below 2^53, so the
/// floor and the fraction are exact.
const FAST_MAX: f64 = 1e15;

/// "00" to "99": two digits per division.
const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Appends `n` in decimal.
#[inline]
pub fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    while n >= 100 {
        let k = (n % 100) as usize * 2;
        n /= 100;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&PAIRS[k..k + 2]);
    }
    if n >= 10 {
        let k = n as usize * 2;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&PAIRS[k..k + 2]);
    } else {
        i -= 1;
        buf[i] = b'0' + n as u8;
    }
    out.extend_from_slice(&buf[i..]);
}

/// Appends `v` as `format!("{v:.prec$}")` would.
#[inline(always)]
pub fn push_fixed(out: &mut Vec<u8>, v: f64, prec: usize) {
    if let Some(m) = fast_scaled(v, prec) {
        let p = POW10[prec];
        push_u64(out, m / p);
        if prec > 0 {
            out.push(b'.');
            let frac = m % p;
            // Zero-padded to `prec` digits.
            let mut digits = [b'0'; 9];
            let mut f = frac;
            for d in digits[..prec].iter_mut().rev() {
                *d = b'0' + (f % 10) as u8;
                f /= 10;
            }
            out.extend_from_slice(&digits[..prec]);
        }
        return;
    }
    slow(out, format_args!("{v:.prec$}"));
}

/// Appends `v` as `format!("{v}")` (the shortest representation) would.
#[inline]
pub fn push_display(out: &mut Vec<u8>, v: f64) {
    // Whole non-negative numbers below 2^53 print as integers; the sign
    // test keeps -0.0 (which prints "-0") on the slow path.
    if v.is_sign_positive() && v < 9_007_199_254_740_992.0 && v.fract() == 0.0 {
        push_u64(out, v as u64);
    } else {
        slow(out, format_args!("{v}"));
    }
}

/// `round(v * 10^prec)` when the fast path is certain to round as the
/// exact decimal expansion of `v` does; `None` otherwise.
#[inline(always)]
fn fast_scaled(v: f64, prec: usize) -> Option<u64> {
    if prec >= POW10.len() || !v.is_sign_positive() {
        return None;
    }
    let scaled = v * POW10[prec] as f64;
    if !scaled.is_finite() || scaled >= FAST_MAX {
        return None;
    }
    // Truncation is the floor here (non-negative), and exact, as is the
    // fraction, below 2^53; `f64::floor` would be a libm call on baseline
    // x86-64.
    let m = scaled as u64;
    let frac = scaled - m as f64;
    // The product is within scaled * 2^-53 of the exact value (plus the
    // smallest subnormal steps near zero): stay clear of a half by more.
    let margin = scaled * (1.0 / (1u64 << 50) as f64) + 1e-300;
    if (frac - 0.5).abs() <= margin {
        return Some(exact_scaled(v, POW10[prec]));
    }
    Some(if frac > 0.5 { m + 1 } else { m })
}

/// `v * pow10` rounded to an integer exactly as `core::fmt` rounds it
/// (half to even), for finite `v >= 0` whose scaled value is below 2^53:
/// with `v = mant * 2^e`, `mant * pow10` (below 2^83) is exact in a u128,
/// so the comparison of the fraction with one half is exact. Near-ties are
/// common in plot coordinates (a sample time times a whole number of
/// pixels per second), and `core::fmt` settles each of them through its
/// slow big-number path.
fn exact_scaled(v: f64, pow10: u64) -> u64 {
    let bits = v.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let frac_bits = bits & ((1u64 << 52) - 1);
    let (mant, e) = if biased == 0 {
        (frac_bits, -1074)
    } else {
        (frac_bits | (1u64 << 52), biased - 1075)
    };
    let n = u128::from(mant) * u128::from(pow10);
    if e >= 0 {
        // A whole number (never here: its scaled value has no fraction).
        return (n << e) as u64;
    }
    let shift = (-e) as u32;
    if shift >= 100 {
        // n < 2^83: below a quarter, the value rounds to 0.
        return 0;
    }
    let m = (n >> shift) as u64;
    let rem = n & ((1u128 << shift) - 1);
    let half = 1u128 << (shift - 1);
    match rem.cmp(&half) {
        std::cmp::Ordering::Greater => m + 1,
        std::cmp::Ordering::Less => m,
        std::cmp::Ordering::Equal => m + (m & 1),
    }
}

#[cold]
fn slow(out: &mut Vec<u8>, args: std::fmt::Arguments<'_>) {
    let mut s = String::new();
    let _ = s.write_fmt(args);
    out.extend_from_slice(s.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use satcc_proto::rng::Rng;

    fn fixed(v: f64, p: usize) -> String {
        let mut o = Vec::new();
        push_fixed(&mut o, v, p);
        String::from_utf8(o).expect("ascii")
    }
    fn display(v: f64) -> String {
        let mut o = Vec::new();
        push_display(&mut o, v);
        String::from_utf8(o).expect("ascii")
    }

    #[test]
    fn same_bytes_as_core_fmt() {
        let specials = [
            0.0,
            -0.0,
            0.5,
            1.5,
            2.5,
            0.125,
            0.375,
            1e-7,
            0.0049999999999999,
            0.005,
            0.015,
            0.045,
            1.0005,
            123456.789,
            9.999_999_5,
            999.9995,
            1e14,
            1e15,
            1e16,
            1e300,
            -1.25,
            -0.001,
            f64::MIN_POSITIVE,
            5e-324,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        for &v in &specials {
            for p in 0..=9 {
                assert_eq!(fixed(v, p), format!("{v:.p$}"), "{v:e} .{p}");
            }
            assert_eq!(display(v), format!("{v}"), "{v:e}");
        }
        let mut rng = Rng::new(7);
        for i in 0..200_000u64 {
            // Magnitudes from 1e-6 to 1e12, halves and quarters of
            // thousandths (near-ties), whole numbers.
            let v = match i % 4 {
                0 => rng.next_f64() * 10f64.powi((rng.below(19) as i32) - 6),
                1 => (rng.below(10_000_000) as f64 + 0.5) / 1000.0,
                2 => rng.below(1 << 40) as f64,
                _ => (rng.below(1_000_000) as f64) * 0.0001,
            };
            for p in [0usize, 2, 3, 4, 6] {
                assert_eq!(fixed(v, p), format!("{v:.p$}"), "{v:e} .{p}");
            }
            assert_eq!(display(v), format!("{v}"), "{v:e}");
        }
    }

    #[test]
    fn exact_ties_round_half_to_even_as_core_fmt() {
        // Dyadic values (exact ties at some precision) and decimals just
        // around a half, at every precision.
        let mut rng = Rng::new(11);
        for i in 0..100_000u64 {
            let v = match i % 3 {
                0 => rng.below(1 << 30) as f64 / (1u64 << rng.below(40)) as f64,
                1 => (rng.below(100_000_000) as f64 * 2.0 + 1.0) / 2000.0,
                _ => {
                    let x = (rng.below(1_000_000) as f64 + 0.5) / 100.0;
                    f64::from_bits(x.to_bits() + rng.below(3) - 1)
                }
            };
            for p in 0..=9 {
                assert_eq!(fixed(v, p), format!("{v:.p$}"), "{v:e} .{p}");
            }
        }
        for v in [
            0.125, 0.375, 0.625, 7.0625, 123.125, 2.5, 3.5, 5e-324, 1e-300,
        ] {
            for p in 0..=9 {
                assert_eq!(fixed(v, p), format!("{v:.p$}"), "{v:e} .{p}");
            }
        }
    }

    #[test]
    fn integers() {
        for n in [0u64, 1, 9, 10, 99, 100, 12345, u64::MAX] {
            let mut o = Vec::new();
            push_u64(&mut o, n);
            assert_eq!(String::from_utf8(o).expect("ascii"), n.to_string());
        }
    }
}
