//! Link error models: uniform packet loss, independent bit errors, and
//! Gilbert-Elliott two-state bursts.
//!
//! Every draw comes from the `&mut Rng` the link passes in, so a run is
//! reproducible. A model that cannot lose (probability 0) draws nothing.

use satcc_proto::rng::Rng;

use crate::scenario::ErrorSpec;

/// The probability that a packet of `size_bytes` has at least one bit in
/// error when bits fail independently with probability `ber`:
/// 1 - (1 - ber)^(8 L), computed as -expm1(8 L ln1p(-ber)) so that tiny
/// rates (1e-9) and large packets keep full precision.
pub fn ber_packet_loss(ber: f64, size_bytes: u32) -> f64 {
    if size_bytes == 0 || ber.is_nan() || ber <= 0.0 {
        return 0.0;
    }
    if ber >= 1.0 {
        return 1.0;
    }
    let bits = 8.0 * f64::from(size_bytes);
    (-(bits * (-ber).ln_1p()).exp_m1()).clamp(0.0, 1.0)
}

/// Gilbert-Elliott channel state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GeState {
    /// Good state (loss probability `loss_good`).
    Good,
    /// Bad state (loss probability `loss_bad`).
    Bad,
}

#[derive(Clone, Debug)]
enum Kind {
    Uniform(f64),
    Ber(f64),
    Gilbert {
        p_gb: f64,
        p_bg: f64,
        loss_good: f64,
        loss_bad: f64,
        state: GeState,
    },
}

/// A link direction's error model.
#[derive(Clone, Debug)]
pub struct ErrorModel {
    kind: Kind,
}

/// A probability from a spec, NaN read as 0 and clamped to [0, 1].
fn prob(p: f64) -> f64 {
    if p.is_nan() {
        0.0
    } else {
        p.clamp(0.0, 1.0)
    }
}

impl ErrorModel {
    /// The model a scenario asks for. The Gilbert-Elliott model starts in
    /// the good state.
    pub fn new(spec: &ErrorSpec) -> Self {
        let kind = match spec {
            ErrorSpec::Uniform { per } => Kind::Uniform(prob(per.0)),
            ErrorSpec::Ber { ber } => Kind::Ber(prob(ber.0)),
            ErrorSpec::Gilbert {
                p_gb,
                p_bg,
                loss_good,
                loss_bad,
            } => Kind::Gilbert {
                p_gb: prob(p_gb.0),
                p_bg: prob(p_bg.0),
                loss_good: prob(loss_good.0),
                loss_bad: prob(loss_bad.0),
                state: GeState::Good,
            },
        };
        ErrorModel { kind }
    }

    /// Whether a packet of `size_bytes` is corrupted (and so lost).
    ///
    /// Gilbert-Elliott: the packet is lost with the current state's loss
    /// probability, then the state takes one step of the Markov chain
    /// (Gilbert 1960; Elliott 1963), so a bad period of k packets has
    /// probability (1 - p_bg)^(k-1) p_bg: mean length 1 / p_bg.
    pub fn lose(&mut self, size_bytes: u32, rng: &mut Rng) -> bool {
        match &mut self.kind {
            Kind::Uniform(p) => rng.chance(*p),
            Kind::Ber(ber) => rng.chance(ber_packet_loss(*ber, size_bytes)),
            Kind::Gilbert {
                p_gb,
                p_bg,
                loss_good,
                loss_bad,
                state,
            } => {
                let lost = match *state {
                    GeState::Good => rng.chance(*loss_good),
                    GeState::Bad => rng.chance(*loss_bad),
                };
                *state = match *state {
                    GeState::Good if rng.chance(*p_gb) => GeState::Bad,
                    GeState::Bad if rng.chance(*p_bg) => GeState::Good,
                    s => s,
                };
                lost
            }
        }
    }

    /// The Gilbert-Elliott state (`None` for the other models).
    pub fn ge_state(&self) -> Option<GeState> {
        match &self.kind {
            Kind::Gilbert { state, .. } => Some(*state),
            _ => None,
        }
    }

    /// The long-run loss probability of a packet of `size_bytes`. For
    /// Gilbert-Elliott: pi_g loss_good + pi_b loss_bad with
    /// pi_b = p_gb / (p_gb + p_bg) (the initial state if both are 0).
    pub fn mean_loss(&self, size_bytes: u32) -> f64 {
        match &self.kind {
            Kind::Uniform(p) => *p,
            Kind::Ber(b) => ber_packet_loss(*b, size_bytes),
            Kind::Gilbert {
                p_gb,
                p_bg,
                loss_good,
                loss_bad,
                state,
            } => {
                let pi_b = if p_gb + p_bg > 0.0 {
                    p_gb / (p_gb + p_bg)
                } else if *state == GeState::Bad {
                    1.0
                } else {
                    0.0
                };
                (1.0 - pi_b) * loss_good + pi_b * loss_bad
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Prob;

    const N: usize = 1_000_000;

    fn rate(m: &mut ErrorModel, size: u32, seed: u64) -> f64 {
        let mut rng = Rng::new(seed);
        (0..N).filter(|_| m.lose(size, &mut rng)).count() as f64 / N as f64
    }

    #[test]
    fn uniform_rate() {
        let mut m = ErrorModel::new(&ErrorSpec::Uniform { per: Prob(0.01) });
        let r = rate(&mut m, 1000, 1);
        // sd = sqrt(0.01*0.99/1e6) = 1e-4; allow 4 sd.
        assert!((r - 0.01).abs() < 4e-4, "{r}");
        let mut m = ErrorModel::new(&ErrorSpec::Uniform { per: Prob(0.0) });
        assert_eq!(rate(&mut m, 1000, 1), 0.0);
        let mut m = ErrorModel::new(&ErrorSpec::Uniform { per: Prob(1.0) });
        assert_eq!(rate(&mut m, 1000, 1), 1.0);
    }

    #[test]
    fn ber_formula_and_rate() {
        // 1 - (1 - 1e-5)^8000 = 0.07688... (hand: 1 - exp(8000 ln(1 - 1e-5))).
        let p = ber_packet_loss(1e-5, 1000);
        assert!((p - 0.076_883_7).abs() < 1e-6, "{p}");
        // Tiny rates keep precision: ~ 8 L ber.
        let p = ber_packet_loss(1e-15, 1500);
        assert!((p / 1.2e-11 - 1.0).abs() < 1e-6, "{p}");
        assert_eq!(ber_packet_loss(1e-5, 0), 0.0);
        assert_eq!(ber_packet_loss(1.0, 1), 1.0);
        assert_eq!(ber_packet_loss(f64::NAN, 100), 0.0);

        let mut m = ErrorModel::new(&ErrorSpec::Ber { ber: Prob(1e-5) });
        let r = rate(&mut m, 1000, 2);
        // sd = sqrt(0.077*0.923/1e6) = 2.7e-4.
        assert!((r - 0.076_883_7).abs() < 1.1e-3, "{r}");
        // Smaller packets lose less.
        let r40 = rate(&mut m, 40, 3);
        assert!((r40 - ber_packet_loss(1e-5, 40)).abs() < 2e-4, "{r40}");
    }

    fn ge(p_gb: f64, p_bg: f64, lg: f64, lb: f64) -> ErrorModel {
        ErrorModel::new(&ErrorSpec::Gilbert {
            p_gb: Prob(p_gb),
            p_bg: Prob(p_bg),
            loss_good: Prob(lg),
            loss_bad: Prob(lb),
        })
    }

    #[test]
    fn gilbert_stationary_loss() {
        // pi_b = 0.01 / (0.01 + 0.1) = 1/11; loss = 10/11 * 0.001 + 1/11 * 0.5.
        let mut m = ge(0.01, 0.1, 0.001, 0.5);
        let want = 10.0 / 11.0 * 0.001 + 0.5 / 11.0;
        assert!((m.mean_loss(1000) - want).abs() < 1e-12);
        assert_eq!(m.ge_state(), Some(GeState::Good));
        let r = rate(&mut m, 1000, 4);
        // Bursty: allow 4% relative.
        assert!((r - want).abs() < 0.04 * want, "{r} vs {want}");
    }

    #[test]
    fn gilbert_mean_burst_length() {
        // loss_bad = 1, loss_good = 0: loss runs are bad sojourns, mean
        // 1/p_bg = 4 packets; stationary loss 0.02/(0.02+0.25).
        let mut m = ge(0.02, 0.25, 0.0, 1.0);
        let mut rng = Rng::new(5);
        let (mut runs, mut lost, mut prev) = (0u64, 0u64, false);
        for _ in 0..N {
            let l = m.lose(1000, &mut rng);
            if l {
                lost += 1;
                if !prev {
                    runs += 1;
                }
            }
            prev = l;
        }
        let burst = lost as f64 / runs as f64;
        assert!((burst - 4.0).abs() < 0.1, "mean burst {burst}");
        let loss = lost as f64 / N as f64;
        let want = 0.02 / 0.27;
        assert!((loss - want).abs() < 0.03 * want, "{loss} vs {want}");
    }
}
