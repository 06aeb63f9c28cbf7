//! TCP throughput models: RFC 5348 §3.1 and the full PFTK model with Wmax.
//!
//! STUB: API only; implementation pending.

/// RFC 5348 §3.1: X in bytes/s for segment size `s` bytes, round-trip time
/// `r` seconds, loss event rate `p`, `b` packets per ACK, `t_rto` seconds.
pub fn tfrc_rate(s: f64, r: f64, p: f64, b: f64, t_rto: f64) -> f64 {
    let _ = (s, r, p, b, t_rto);
    0.0
}
