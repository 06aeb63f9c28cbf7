//! Fairness and friendliness metrics (STUB: API only).

/// Jain's fairness index (Chiu and Jain 1989, as paper 003 defines it):
/// with x_i' = x_i / b_i, J = (sum x_i')^2 / (n * sum x_i'^2). `fair_share`
/// gives b_i; `None` means equal shares. 1 for an empty or all-zero input.
pub fn jain_index(x: &[f64], fair_share: Option<&[f64]>) -> f64 {
    let _ = (x, fair_share);
    1.0
}
