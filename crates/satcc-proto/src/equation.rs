//! TCP throughput models: RFC 5348 §3.1 and the full PFTK model with Wmax.
//!
//! Everything here is computed from the closed-form expressions (never
//! tabulated: Linux's lookup table clamps p at 1e-4, which caps a 600 ms
//! satellite path at about 2.4 Mbit/s; see `docs/papers.md`). This is the
//! only place in the TFRC code where `f64` arithmetic decides a value.

/// RFC 5348 §3.1: X in bytes/s for segment size `s` bytes, round-trip time
/// `r` seconds, loss event rate `p`, `b` packets per ACK, `t_rto` seconds:
///
/// ```text
/// X = s / ( R*sqrt(2*b*p/3) + t_RTO * (3*sqrt(3*b*p/8)) * p * (1 + 32*p^2) )
/// ```
///
/// Edge cases (never NaN, never a panic):
/// - `p <= 0` ("no loss yet") gives `f64::INFINITY`: the equation puts no
///   limit on the rate, callers use slow start instead (RFC 5348 §4.3).
/// - `p >= 1` is evaluated at `p = 1` (the slowest rate the equation gives).
/// - `r <= 0` with `t_rto <= 0` and `p > 0` gives `f64::INFINITY`.
/// - a NaN argument, or `s <= 0`, gives `0.0`.
pub fn tfrc_rate(s: f64, r: f64, p: f64, b: f64, t_rto: f64) -> f64 {
    if s.is_nan() || r.is_nan() || p.is_nan() || b.is_nan() || t_rto.is_nan() || s <= 0.0 {
        return 0.0;
    }
    if p <= 0.0 {
        return f64::INFINITY;
    }
    let p = p.min(1.0);
    let r = r.max(0.0);
    let t_rto = t_rto.max(0.0);
    let b = b.max(0.0);
    // RFC 5348 §3.1.
    let den = r * (2.0 * b * p / 3.0).sqrt()
        + t_rto * (3.0 * (3.0 * b * p / 8.0).sqrt()) * p * (1.0 + 32.0 * p * p);
    if den.is_nan() {
        // inf * 0 (an infinite R with b = 0, say): no finite answer.
        return 0.0;
    }
    if den <= 0.0 {
        return f64::INFINITY;
    }
    s / den
}

/// Iterations of the bisection in [`tfrc_loss_rate_for`]: each halves the
/// bracket in `ln p`, which starts [`P_MIN`]..1 (width ~ 62), so 64 steps
/// leave a relative error in p far below 1e-12. Fixed, so the result is
/// deterministic.
const INVERSE_ITERATIONS: u32 = 64;

/// Smallest loss event rate [`tfrc_loss_rate_for`] returns (1e-27): a
/// loss interval of 1e27 packets is longer than any run.
pub const P_MIN: f64 = 1e-27;

/// The inverse of [`tfrc_rate`] in `p`, as RFC 5348 §6.3.1 uses it to
/// synthesise the first loss interval: the loss event rate at which the
/// equation gives `x` bytes/s for these `s`, `r`, `b`, `t_rto`.
///
/// The equation is strictly decreasing in `p`, so this bisects on `ln p`
/// over [[`P_MIN`], 1] with a fixed iteration count. Results are clamped:
/// a rate at or below the equation's value at p = 1 gives 1.0; a rate at
/// or above its value at `P_MIN` (or an infinite `x`) gives `P_MIN`.
/// `x <= 0` or NaN gives 1.0 (no rate is "as bad as it gets").
pub fn tfrc_loss_rate_for(s: f64, r: f64, x: f64, b: f64, t_rto: f64) -> f64 {
    if x.is_nan() || x <= 0.0 {
        return 1.0;
    }
    if x <= tfrc_rate(s, r, 1.0, b, t_rto) {
        return 1.0;
    }
    if x >= tfrc_rate(s, r, P_MIN, b, t_rto) {
        return P_MIN;
    }
    // Invariant: rate(exp(lo)) > x >= rate(exp(hi)).
    let mut lo = P_MIN.ln();
    let mut hi = 0.0_f64;
    for _ in 0..INVERSE_ITERATIONS {
        let mid = 0.5 * (lo + hi);
        if tfrc_rate(s, r, mid.exp(), b, t_rto) > x {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (0.5 * (lo + hi)).exp()
}

/// `(1-p)^w` computed through `ln_1p` so that it stays accurate for tiny p.
fn one_minus_p_pow(p: f64, w: f64) -> f64 {
    (w * (-p).ln_1p()).exp()
}

/// `1 - (1-p)^w`, accurate for tiny p.
fn one_minus_one_minus_p_pow(p: f64, w: f64) -> f64 {
    -(w * (-p).ln_1p()).exp_m1()
}

/// PFTK's Q(w): the probability that a loss in a window of `w` packets is
/// detected by a timeout (Padhye et al. 1998; `docs/papers.md`).
fn pftk_q(p: f64, w: f64) -> f64 {
    let a = one_minus_one_minus_p_pow(p, 3.0); // 1-(1-p)^3
    let c = one_minus_p_pow(p, 3.0); // (1-p)^3
    let d = one_minus_one_minus_p_pow(p, w - 3.0); // 1-(1-p)^(w-3)
    let e = one_minus_one_minus_p_pow(p, w); // 1-(1-p)^w
    if e <= 0.0 {
        return 1.0;
    }
    (a * (1.0 + c * d) / e).min(1.0)
}

/// PFTK's G(p) = 1 + p + 2p^2 + 4p^3 + 8p^4 + 16p^5 + 32p^6 (the timeout
/// backoff series).
fn pftk_g(p: f64) -> f64 {
    1.0 + p * (1.0 + p * (2.0 + p * (4.0 + p * (8.0 + p * (16.0 + p * 32.0)))))
}

/// The full PFTK model with a receiver window (Padhye, Firoiu, Towsley,
/// Kurose 1998; TFRCP's f(Wmax, R, p, B), paper 004), in **packets/s**,
/// exactly as `docs/papers.md` gives it:
///
/// ```text
/// Wu   = (2+b)/(3b) + sqrt( 8(1-p)/(3bp) + ((2+b)/(3b))^2 )
/// Q(w) = min(1, (1-(1-p)^3) * (1+(1-p)^3 * (1-(1-p)^(w-3))) / (1-(1-p)^w))
/// G(p) = 1 + p + 2p^2 + 4p^3 + 8p^4 + 16p^5 + 32p^6
/// Wu < Wmax:  B = ((1-p)/p + Wu + Q(Wu)/(1-p))
///                 / (R*(b/2*Wu + 1) + Q(Wu)*G(p)*T0/(1-p))
/// otherwise:  B = ((1-p)/p + Wmax + Q(Wmax)/(1-p))
///                 / (R*(b/8*Wmax + (1-p)/(p*Wmax) + 2) + Q(Wmax)*G(p)*T0/(1-p))
/// ```
///
/// `r` round-trip time (s), `p` loss probability, `b` packets acknowledged
/// per ACK, `t0` base timeout (s), `wmax` receiver window (packets).
///
/// Edge cases: `p <= 0` gives the window limit `wmax / r`; `p >= 1` gives
/// the model's limit as p -> 1, `1 / (G(1)*T0) = 1/(64*T0)`; non-positive
/// `r`, `b` or `wmax`, or a NaN argument, give 0.0 (or +inf for
/// `p <= 0, r = 0`). The result is never NaN.
pub fn pftk_rate(r: f64, p: f64, b: f64, t0: f64, wmax: f64) -> f64 {
    if r.is_nan() || p.is_nan() || b.is_nan() || t0.is_nan() || wmax.is_nan() {
        return 0.0;
    }
    if b <= 0.0 || wmax <= 0.0 || r < 0.0 {
        return 0.0;
    }
    if p <= 0.0 {
        return if r == 0.0 { f64::INFINITY } else { wmax / r };
    }
    let t0 = t0.max(0.0);
    if p >= 1.0 {
        // lim p->1: numerator ~ Q/(1-p), denominator ~ Q*G*T0/(1-p).
        return if t0 > 0.0 {
            1.0 / (pftk_g(1.0) * t0)
        } else {
            f64::INFINITY
        };
    }
    let q1 = 1.0 - p;
    let k = (2.0 + b) / (3.0 * b);
    let wu = k + (8.0 * q1 / (3.0 * b * p) + k * k).sqrt();
    let g = pftk_g(p);
    let rate = if wu < wmax {
        let q = pftk_q(p, wu);
        (q1 / p + wu + q / q1) / (r * (b / 2.0 * wu + 1.0) + q * g * t0 / q1)
    } else {
        let q = pftk_q(p, wmax);
        (q1 / p + wmax + q / q1) / (r * (b / 8.0 * wmax + q1 / (p * wmax) + 2.0) + q * g * t0 / q1)
    };
    if rate.is_nan() {
        0.0
    } else {
        rate
    }
}

/// The well-known approximation of the PFTK model, in packets/s
/// (`docs/papers.md`):
///
/// ```text
/// B ~ min(Wmax/R, 1/(R*sqrt(2bp/3) + T0*min(1, 3*sqrt(3bp/8))*p*(1+32p^2)))
/// ```
///
/// Same edge-case conventions as [`pftk_rate`] (p <= 0: Wmax/R).
pub fn pftk_approx(r: f64, p: f64, b: f64, t0: f64, wmax: f64) -> f64 {
    if r.is_nan() || p.is_nan() || b.is_nan() || t0.is_nan() || wmax.is_nan() {
        return 0.0;
    }
    if b <= 0.0 || wmax <= 0.0 || r < 0.0 {
        return 0.0;
    }
    let cap = if r == 0.0 { f64::INFINITY } else { wmax / r };
    if p <= 0.0 {
        return cap;
    }
    let p = p.min(1.0);
    let den = r * (2.0 * b * p / 3.0).sqrt()
        + t0.max(0.0) * (3.0 * (3.0 * b * p / 8.0).sqrt()).min(1.0) * p * (1.0 + 32.0 * p * p);
    if den <= 0.0 {
        return cap;
    }
    cap.min(1.0 / den)
}

/// ns-2 2.35's own forms of the equation (tcp/formula.h,
/// tcp/formula-with-inverse.h), used by the `ns2` profile of the TFRC
/// sender and receiver: they differ from RFC 5348 §3.1 in the second
/// term's factor, a rate cap, and a coarse inverse.
pub mod ns2 {
    /// `MAXRATE` of tcp/formula.h: the equation's cap, bytes/s (also its value
    /// for p = 0).
    const MAXRATE: f64 = 25_000_000.0;
    /// ns-2's `p_to_b` (tcp/formula.h): the equation with the second term's
    /// factor `min(1, 3 sqrt(3bp/8))` and the rate capped at `MAXRATE`
    /// (returned also for p = 0, where the denominator is below SAMLLFLOAT).
    pub fn p_to_b(p: f64, rtt: f64, tzero: f64, psize: f64, bval: f64) -> f64 {
        if p < 0.0 || rtt < 0.0 {
            return MAXRATE;
        }
        let mut res = rtt * (2.0 * bval * p / 3.0).sqrt();
        let tmp1 = (3.0 * (3.0 * bval * p / 8.0).sqrt()).min(1.0);
        let tmp2 = tzero * p * (1.0 + 32.0 * p * p);
        res += tmp1 * tmp2;
        let res = if res < 0.0000001 {
            MAXRATE
        } else {
            psize / res
        };
        res.min(MAXRATE)
    }

    /// ns-2's `b_to_p` (tcp/formula-with-inverse.h), used by the sink to
    /// synthesize the first loss interval: a bisection from p = 0.5 in steps
    /// halving from 0.25, stopping within ±5 % of the rate `b` or after 31
    /// evaluations (its `ctr > 30`). Coarse by design; reproduced as is.
    pub fn b_to_p(b: f64, rtt: f64, tzero: f64, psize: f64, bval: f64) -> f64 {
        let mut p = 0.5;
        let mut pi = 0.25;
        let mut ctr = 0;
        loop {
            let bres = p_to_b(p, rtt, tzero, psize, bval);
            if bres > 0.95 * b && bres < 1.05 * b {
                return p;
            }
            if bres > b {
                p += pi;
            } else {
                p -= pi;
            }
            pi /= 2.0;
            ctr += 1;
            if ctr > 30 {
                return p;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(a: f64, b: f64) -> f64 {
        ((a - b) / b).abs()
    }

    #[test]
    fn tfrc_rate_hand_computed() {
        // s = 1000 B, R = 0.1 s, p = 0.01, b = 1, t_RTO = 4R = 0.4 s:
        //   R*sqrt(2bp/3)          = 0.1 * sqrt(0.0066667)      = 0.1 * 0.0816497 = 0.00816497
        //   3*sqrt(3bp/8)          = 3 * sqrt(0.00375)          = 3 * 0.0612372   = 0.1837117
        //   t_RTO*that*p*(1+32p^2) = 0.4 * 0.1837117 * 0.01 * 1.0032              = 0.00073720
        //   X = 1000 / (0.00816497 + 0.00073720) = 1000 / 0.00890217              = 112332.2 B/s
        let x = tfrc_rate(1000.0, 0.1, 0.01, 1.0, 0.4);
        assert!(rel(x, 112_332.2) < 1e-5, "{x}");
        // s = 1460, R = 0.6 s, p = 1e-4, t_RTO = 2.4 s (the satellite case
        // that Linux's table caps at about 2.4 Mbit/s):
        //   0.6*sqrt(2e-4/3)  = 0.6 * 0.00816497 = 0.00489898
        //   3*sqrt(3e-4/8)    = 3 * 0.00612372   = 0.01837117
        //   2.4*0.01837117*1e-4*(1+3.2e-7)       = 4.40908e-6
        //   X = 1460 / 0.00490339 = 297753 B/s (2.38 Mbit/s)
        let x = tfrc_rate(1460.0, 0.6, 1e-4, 1.0, 2.4);
        assert!(rel(x, 297_753.0) < 1e-4, "{x}");
        // p = 1e-6 keeps going (no table clamp): 10x the rate at 1e-4, nearly.
        let x6 = tfrc_rate(1460.0, 0.6, 1e-6, 1.0, 2.4);
        assert!(x6 > 9.9 * x, "{x6}");
        // p = 0.5, s = 1000, R = 1, t_RTO = 4:
        //   sqrt(1/3) = 0.5773503; 3*sqrt(0.1875) = 1.2990381
        //   4 * 1.2990381 * 0.5 * (1 + 8) = 23.382686
        //   X = 1000 / 23.960036 = 41.7362 B/s
        let x = tfrc_rate(1000.0, 1.0, 0.5, 1.0, 4.0);
        assert!(rel(x, 41.7362) < 1e-5, "{x}");
    }

    #[test]
    fn tfrc_rate_edge_cases() {
        assert_eq!(tfrc_rate(1000.0, 0.1, 0.0, 1.0, 0.4), f64::INFINITY);
        assert_eq!(tfrc_rate(1000.0, 0.1, -1.0, 1.0, 0.4), f64::INFINITY);
        assert_eq!(
            tfrc_rate(1000.0, 0.1, 2.0, 1.0, 0.4),
            tfrc_rate(1000.0, 0.1, 1.0, 1.0, 0.4)
        );
        assert_eq!(tfrc_rate(1000.0, 0.0, 0.1, 1.0, 0.0), f64::INFINITY);
        let x = tfrc_rate(1000.0, 0.0, 0.1, 1.0, 0.4);
        assert!(x.is_finite() && x > 0.0);
        assert_eq!(tfrc_rate(f64::NAN, 0.1, 0.1, 1.0, 0.4), 0.0);
        assert_eq!(tfrc_rate(1000.0, f64::NAN, 0.1, 1.0, 0.4), 0.0);
        assert_eq!(tfrc_rate(1000.0, f64::INFINITY, 0.1, 0.0, 0.4), 0.0);
        assert!(!tfrc_rate(1000.0, f64::INFINITY, 0.1, 1.0, 0.4).is_nan());
    }

    #[test]
    fn inverse_round_trips() {
        for &(s, r) in &[(1000.0, 0.6), (1460.0, 0.05), (100.0, 2.0)] {
            let mut p = 1e-6;
            while p <= 0.5 {
                let x = tfrc_rate(s, r, p, 1.0, 4.0 * r);
                let back = tfrc_loss_rate_for(s, r, x, 1.0, 4.0 * r);
                assert!(rel(back, p) < 1e-9, "s={s} r={r} p={p} back={back}");
                p *= 1.37;
            }
        }
        // Clamps.
        assert_eq!(tfrc_loss_rate_for(1000.0, 0.1, 0.0, 1.0, 0.4), 1.0);
        assert_eq!(tfrc_loss_rate_for(1000.0, 0.1, 1.0, 1.0, 0.4), 1.0);
        assert_eq!(tfrc_loss_rate_for(1000.0, 0.1, f64::NAN, 1.0, 0.4), 1.0);
        assert_eq!(
            tfrc_loss_rate_for(1000.0, 0.1, f64::INFINITY, 1.0, 0.4),
            P_MIN
        );
    }

    #[test]
    fn pftk_hand_computed() {
        // R = 0.2, p = 0.01, b = 1, T0 = 0.8, Wmax = 1000 (so Wu < Wmax):
        //   Wu = 1 + sqrt(8*0.99/0.03 + 1) = 1 + sqrt(265) = 17.27882
        //   (1-p)^3 = 0.970299; 1-(1-p)^3 = 0.029701
        //   1-(1-p)^(Wu-3) = 1 - 0.99^14.27882 = 0.133733
        //   1-(1-p)^Wu     = 1 - 0.99^17.27882 = 0.159488
        //   Q = 0.029701 * (1 + 0.970299*0.133733) / 0.159488 = 0.210479
        //   G = 1.010204 (1 + 0.01 + 2e-4 + 4e-6 + ...)
        //   num = 99 + 17.27882 + 0.210479/0.99 = 116.49143
        //   den = 0.2*(0.5*17.27882 + 1) + 0.210479*1.010204*0.8/0.99 = 1.927882 + 0.171814
        //   B = 116.49143 / 2.099696 = 55.4800 packets/s
        let b = pftk_rate(0.2, 0.01, 1.0, 0.8, 1000.0);
        assert!(rel(b, 55.4800) < 1e-4, "{b}");
        // Approximation: 1/(0.2*0.0816497 + 0.8*0.1837117*0.01*1.0032)
        //              = 1/(0.01632993 + 0.00147440) = 56.1661
        let a = pftk_approx(0.2, 0.01, 1.0, 0.8, 1000.0);
        assert!(rel(a, 56.1661) < 1e-4, "{a}");
    }

    #[test]
    fn pftk_agrees_with_approximation_at_low_loss() {
        for &r in &[0.05, 0.2, 0.6] {
            let t0 = 4.0 * r;
            let mut p = 1e-4;
            while p < 0.05 {
                let full = pftk_rate(r, p, 1.0, t0, 1e6);
                let approx = pftk_approx(r, p, 1.0, t0, 1e6);
                assert!(rel(full, approx) < 0.05, "r={r} p={p} {full} {approx}");
                p *= 1.5;
            }
        }
    }

    #[test]
    fn pftk_monotone_capped_finite() {
        let wmax = 64.0;
        for &r in &[0.01, 0.1, 0.55, 2.0] {
            let t0 = f64::max(4.0 * r, 1.0);
            let cap = wmax / r;
            let mut prev = f64::INFINITY;
            let mut p = 1e-7;
            while p < 1.0 {
                let b = pftk_rate(r, p, 1.0, t0, wmax);
                assert!(b.is_finite() && b > 0.0, "r={r} p={p} b={b}");
                assert!(b <= cap * (1.0 + 1e-12), "r={r} p={p} b={b} cap={cap}");
                assert!(b <= prev, "not decreasing in p: r={r} p={p} {b} > {prev}");
                // Decreasing in R (same T0).
                let b2 = pftk_rate(r * 1.1, p, 1.0, t0, wmax);
                assert!(b2 < b, "not decreasing in R: r={r} p={p}");
                prev = b;
                p *= 1.2;
            }
            let near_one = pftk_rate(r, 1.0 - 1e-9, 1.0, t0, wmax);
            assert!(near_one.is_finite() && near_one > 0.0);
            assert!(rel(pftk_rate(r, 1.0, 1.0, t0, wmax), 1.0 / (64.0 * t0)) < 1e-12);
        }
        assert_eq!(pftk_rate(0.1, 0.0, 1.0, 1.0, 64.0), 640.0);
        assert_eq!(pftk_rate(0.1, f64::NAN, 1.0, 1.0, 64.0), 0.0);
        assert_eq!(pftk_approx(0.1, 0.0, 1.0, 1.0, 64.0), 640.0);
    }
}
