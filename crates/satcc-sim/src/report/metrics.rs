//! Fairness and friendliness metrics, as the reproduced papers define them.
//!
//! All functions are pure and total: non-finite inputs are ignored where
//! noted, and quantities that are undefined (empty input, zero
//! denominators) come back as `None` rather than NaN.

/// Jain's fairness index (Chiu and Jain 1989, as paper 003 defines it):
/// with x_i' = x_i / b_i, J = (sum x_i')^2 / (n * sum x_i'^2). `fair_share`
/// gives b_i; `None` means equal shares. `None` for an empty or all-zero
/// input: the formula is 0/0 there, and calling a run in which no flow
/// delivered anything "perfectly fair" would hide it.
///
/// Pairs whose x_i is not finite, or whose b_i is not finite and positive,
/// are left out; if `fair_share` is shorter than `x`, the extra x_i are left
/// out too.
pub fn jain_index(x: &[f64], fair_share: Option<&[f64]>) -> Option<f64> {
    let norm: Vec<f64> = match fair_share {
        None => x.iter().copied().filter(|v| v.is_finite()).collect(),
        Some(b) => x
            .iter()
            .zip(b)
            .filter(|(xi, bi)| xi.is_finite() && bi.is_finite() && **bi > 0.0)
            .map(|(xi, bi)| xi / bi)
            .filter(|v| v.is_finite())
            .collect(),
    };
    let n = norm.len() as f64;
    let sum: f64 = norm.iter().sum();
    let sum_sq: f64 = norm.iter().map(|v| v * v).sum();
    if norm.is_empty() || sum_sq == 0.0 || !sum_sq.is_finite() {
        return None;
    }
    Some((sum * sum / (n * sum_sq)).clamp(0.0, 1.0))
}

/// Normalized throughput (paper 000 §I): the aggregate throughput of one
/// class of flows divided by its fair share of the bottleneck,
/// `capacity_bps * fraction` (e.g. `fraction` = 0.5 for one of two equally
/// numerous protocols). 1 means exactly the fair share. `None` if the fair
/// share is not positive or an input is not finite.
pub fn normalized_throughput(aggregate_bps: f64, capacity_bps: f64, fraction: f64) -> Option<f64> {
    let share = capacity_bps * fraction;
    if !(aggregate_bps.is_finite() && share.is_finite() && share > 0.0) {
        return None;
    }
    Some(aggregate_bps / share)
}

/// Friendliness ratios of paper 004 §III-B.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Friendliness {
    /// F = TC / TT: mean throughput of the non-TCP (TFRC-like) flows over
    /// the mean throughput of the TCP flows; 1 = TCP-friendly.
    pub f: f64,
    /// E = max(TT/TC, TC/TT) >= 1: how far from equal, either way.
    pub e: f64,
    /// FC = max_i T^c_i / min_i T^c_i among the non-TCP flows: their
    /// fairness among themselves (1 = equal).
    pub fc: f64,
}

/// Friendliness of `tfrc_like` flows towards `tcp` flows (paper 004
/// §III-B), from per-flow throughputs. `None` when a ratio is undefined:
/// either list empty (after dropping non-finite values), a zero mean, or a
/// zero smallest non-TCP throughput.
pub fn friendliness(tfrc_like: &[f64], tcp: &[f64]) -> Option<Friendliness> {
    let c: Vec<f64> = tfrc_like
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .collect();
    let t: Vec<f64> = tcp.iter().copied().filter(|v| v.is_finite()).collect();
    if c.is_empty() || t.is_empty() {
        return None;
    }
    let tc = c.iter().sum::<f64>() / c.len() as f64;
    let tt = t.iter().sum::<f64>() / t.len() as f64;
    if tc <= 0.0 || tt <= 0.0 {
        return None;
    }
    let max = c.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = c.iter().copied().fold(f64::INFINITY, f64::min);
    let f = tc / tt;
    Some(Friendliness {
        f,
        e: f.max(tt / tc),
        // A starved flow (zero throughput) makes FC unbounded; F and E
        // are still defined.
        fc: if min > 0.0 { max / min } else { f64::INFINITY },
    })
}

/// Coefficient of variation: population standard deviation (divide by n,
/// not n - 1: the flows of a run are the whole population being described,
/// not a sample) over the mean. Non-finite values are ignored. `None` for
/// no values or a zero mean.
pub fn coefficient_of_variation(x: &[f64]) -> Option<f64> {
    let v: Vec<f64> = x.iter().copied().filter(|v| v.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    if mean == 0.0 {
        return None;
    }
    let var = v.iter().map(|a| (a - mean) * (a - mean)).sum::<f64>() / n;
    Some(var.sqrt() / mean.abs())
}

/// Quantile `q` in [0, 1] of sorted finite data by linear interpolation
/// between order statistics: h = (n - 1) q, x[floor h] + (h - floor h)
/// (x[floor h + 1] - x[floor h]) (Hyndman & Fan 1996 type 7; the default of
/// R and NumPy).
fn quantile_sorted(s: &[f64], q: f64) -> f64 {
    let h = (s.len() - 1) as f64 * q;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(s.len() - 1);
    s[lo] + (h - lo as f64) * (s[hi] - s[lo])
}

/// Median and semi-interquartile range SIQR = (Q3 - Q1) / 2, the spread
/// paper 004 reports. Quartiles by Hyndman & Fan type 7 (linear
/// interpolation, as R's and NumPy's defaults), so the median of an even
/// count is the mean of the middle two. Non-finite values are ignored;
/// `None` if none remain.
pub fn median_siqr(x: &[f64]) -> Option<(f64, f64)> {
    let mut s: Vec<f64> = x.iter().copied().filter(|v| v.is_finite()).collect();
    if s.is_empty() {
        return None;
    }
    s.sort_by(f64::total_cmp);
    let med = quantile_sorted(&s, 0.5);
    let q1 = quantile_sorted(&s, 0.25);
    let q3 = quantile_sorted(&s, 0.75);
    Some((med, (q3 - q1) / 2.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn jain() {
        assert_eq!(jain_index(&[], None), None);
        assert_eq!(jain_index(&[0.0, 0.0], None), None);
        let jain_index = |x: &[f64], b: Option<&[f64]>| jain_index(x, b).unwrap();
        assert!(close(jain_index(&[5.0, 5.0, 5.0], None), 1.0));
        // One of n flows gets everything: 1/n.
        assert!(close(jain_index(&[1.0, 0.0, 0.0, 0.0], None), 0.25));
        // (1+2+3)^2 / (3 * 14) = 36/42.
        assert!(close(jain_index(&[1.0, 2.0, 3.0], None), 36.0 / 42.0));
        // Weighted: x/b = [1, 1] -> perfectly fair.
        assert!(close(jain_index(&[2.0, 4.0], Some(&[1.0, 2.0])), 1.0));
        // x/b = [1, 4]: 25 / (2 * 17).
        assert!(close(
            jain_index(&[1.0, 4.0], Some(&[1.0, 1.0])),
            25.0 / 34.0
        ));
        // Non-finite and zero-share entries are skipped.
        assert!(close(jain_index(&[1.0, f64::NAN, 1.0], None), 1.0));
        assert!(close(jain_index(&[1.0, 9.0], Some(&[1.0, 0.0])), 1.0));
    }

    #[test]
    fn normalized() {
        // 6 Mb/s for a class owed half of 10 Mb/s.
        assert!(close(normalized_throughput(6e6, 10e6, 0.5).unwrap(), 1.2));
        assert_eq!(normalized_throughput(6e6, 0.0, 0.5), None);
        assert_eq!(normalized_throughput(f64::NAN, 1.0, 0.5), None);
    }

    #[test]
    fn friendliness_ratios() {
        // TC = mean(2, 4) = 3, TT = mean(6) = 6: F = 0.5, E = 2, FC = 2.
        let r = friendliness(&[2.0, 4.0], &[6.0]).unwrap();
        assert!(close(r.f, 0.5) && close(r.e, 2.0) && close(r.fc, 2.0));
        // TFRC ahead: TC = 9, TT = 3: F = 3, E = 3, FC = 1.
        let r = friendliness(&[9.0, 9.0], &[2.0, 4.0]).unwrap();
        assert!(close(r.f, 3.0) && close(r.e, 3.0) && close(r.fc, 1.0));
        assert_eq!(friendliness(&[], &[1.0]), None);
        assert_eq!(friendliness(&[1.0], &[0.0]), None);
        // One starved flow: F and E defined, FC unbounded.
        let r = friendliness(&[0.0, 2.0], &[1.0]).unwrap();
        assert!(close(r.f, 1.0) && close(r.e, 1.0) && r.fc.is_infinite());
    }

    #[test]
    fn cov() {
        // [2, 4, 4, 4, 5, 5, 7, 9]: mean 5, population sd 2.
        let x = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert!(close(coefficient_of_variation(&x).unwrap(), 0.4));
        assert_eq!(coefficient_of_variation(&[3.0, 3.0]), Some(0.0));
        assert_eq!(coefficient_of_variation(&[]), None);
        assert_eq!(coefficient_of_variation(&[-1.0, 1.0]), None);
    }

    #[test]
    fn median_and_siqr() {
        // [1..=5]: median 3; Q1 = 2, Q3 = 4 -> SIQR 1.
        assert_eq!(median_siqr(&[5.0, 1.0, 4.0, 2.0, 3.0]), Some((3.0, 1.0)));
        // [1, 2, 3, 4]: median 2.5; h(Q1) = 0.75 -> 1.75, h(Q3) = 2.25 ->
        // 3.25; SIQR 0.75.
        assert_eq!(median_siqr(&[4.0, 3.0, 2.0, 1.0]), Some((2.5, 0.75)));
        assert_eq!(median_siqr(&[7.0]), Some((7.0, 0.0)));
        assert_eq!(median_siqr(&[f64::NAN]), None);
        assert_eq!(median_siqr(&[]), None);
    }
}
