//! RED as ns-2 2.35's `Queue/RED` (`queue/red.cc`), in packet mode
//! (`bytes_ false`, `queue_in_bytes_ false`, satcc's default) or in byte
//! mode (`bytes_ true`, `queue_in_bytes_ true`, ns-2's default; see
//! [`RedMode::Bytes`] and "Byte mode" below), with ns-2's defaults
//! (`tcl/lib/ns-default.tcl`): `gentle_ true`, `wait_ true`,
//! `use_mark_p_ true`, `setbit_ false` (drop, never mark), `drop_tail_ true`,
//! `cautious_ 0`, `adaptive_ 0`.
//!
//! The algorithm is Floyd & Jacobson 1993 ("Random Early Detection Gateways
//! for Congestion Avoidance", IEEE/ACM ToN 1(4)) §4 with the ns-2 refinements
//! that 2.35 applies by default:
//!
//! * "gentle" RED (Floyd 2000, "Recommendation on using the gentle_ variant
//!   of RED"): between `max_th` and `2*max_th` the drop probability rises
//!   linearly from `max_p` to 1 instead of jumping to 1;
//! * `wait_`: uniform inter-drop spacing that waits at least `1/p_b` packets
//!   after a drop (`modify_p` in red.cc);
//! * automatic parameters (`initialize_params` in red.cc; Floyd, Gummadi &
//!   Shenker 2001, "Adaptive RED", §5) when `thresh_`/`maxthresh_` are 0 and
//!   `q_weight_` is 0, -1 or -2.
//!
//! What was checked against the installed ns-2 2.35 binary (`ns`), with a
//! Tcl script that builds one duplex RED link, runs to t = 0.5 s and prints
//! the queue's bound variables after `reset()` resolved them:
//!
//! | link          | thresh_ | maxthresh_ | q_weight_ (-1)   |
//! |---------------|---------|------------|------------------|
//! | 16Mb, 1 ms    | 10      | 30         | 2.499687526e-4   |
//! | 4Mb, 1 ms     | 5       | 15         | 9.995001666e-4   |
//! | 16Mb, 250 ms  | 10      | 30         | 3.329947886e-5   |
//! | 1.5Mb, 10 ms  | 5       | 15         | 2.663114269e-3   |
//! | 100Mb, 1 ms   | 62.5    | 187.5      | 3.999920001e-5   |
//!
//! and `q_weight_ 0` -> 2.499687526e-4, `q_weight_ -2` -> 2.496877603e-3
//! on 16Mb. These match, to every printed digit, the formulas of
//! [`RedParams::resolve`] (ptc = bandwidth / (8 * mean_pktsize)):
//! `q_weight_ = 0`: 1-exp(-1/ptc); `-1`: 1-exp(-1/(10*rtt*ptc)) with
//! rtt = max(0.1 s, 3*(link delay + 1/ptc)); `-2`: 1-exp(-10/ptc);
//! `thresh_` = max(5, targetdelay*ptc/2); `maxthresh_` = 3*`thresh_`.
//! Other defaults printed by `puts [Queue/RED set VAR]`: `linterm_ 10`,
//! `mean_pktsize_ 500`, `targetdelay_ 0.005`, `use_mark_p_ true`,
//! `bytes_ true`, `queue_in_bytes_ true` (packet mode stays satcc's
//! default; `mode = "bytes"` selects ns-2's) and `Queue set limit_ 50`
//! (our scenario default is 100).
//!
//! # Byte mode
//!
//! With `queue_in_bytes_` (`qib_`) and `bytes_` set, red.cc differs from
//! packet mode in exactly these places, all followed here:
//!
//! * `reset()`: `th_min = th_min_pkts * mean_pktsize`, `th_max =
//!   th_max_pkts * mean_pktsize` (the automatic thresholds are computed in
//!   packets first, as in packet mode);
//! * `enque()`: the EWMA runs on `q_->byteLength()` (bytes waiting), the
//!   early-drop test reads `qlen > 1` with `qlen` in bytes (so one waiting
//!   packet is enough), and the physical limit is `qlen >= qlim_ *
//!   mean_pktsize` bytes; `count_bytes` adds each arrival's size;
//! * `modify_p()`: the count is `count_bytes / mean_pktsize` (integer
//!   division), and after the `wait_` spacing a packet of `size` bytes
//!   has `p = p * size / mean_pktsize` when `p < 1` (capped at 1).
//!
//! The idle-time aging (`m = ptc * idle time`, `ptc` from `mean_pktsize`)
//! is the same in both modes.

use satcc_proto::rng::Rng;
use satcc_proto::{Duration, Instant};

use crate::scenario::{RedMode, RedSpec};

/// What RED decides for an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedVerdict {
    /// Queue it.
    Enqueue,
    /// Random early drop (avg between the thresholds).
    EarlyDrop,
    /// Forced drop (avg above max_th, or above 2*max_th in gentle mode, or
    /// the physical limit reached).
    ForcedDrop,
}

/// RED parameters after ns-2's automatic values are resolved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RedParams {
    /// Physical limit in packets (`limit_`).
    pub limit: u32,
    /// Minimum threshold, packets (`thresh_`).
    pub min_th: f64,
    /// Maximum threshold, packets (`maxthresh_`).
    pub max_th: f64,
    /// EWMA weight of the average queue (`q_weight_`).
    pub weight: f64,
    /// Drop probability at `max_th` (1/`linterm_`).
    pub max_p: f64,
    /// Gentle mode (`gentle_`).
    pub gentle: bool,
    /// Uniform inter-drop spacing with a wait (`wait_`).
    pub wait: bool,
    /// Packet time constant: link packets per second at `mean_pktsize`
    /// (ns-2 `edp_.ptc`).
    pub ptc: f64,
    /// Byte mode (ns-2 `bytes_` and `queue_in_bytes_`): `min_th` and
    /// `max_th` above are then in bytes (already multiplied by
    /// `mean_pktsize`), `limit` stays in packets of `mean_pktsize`.
    pub bytes: bool,
    /// `mean_pktsize_` in bytes (at least 1).
    pub mean_pktsize: u32,
}

impl RedParams {
    /// Resolves a spec for a link of `link_rate_bps` and one-way
    /// propagation `link_delay`, as red.cc `reset()` + `initialize_params()`.
    /// Non-finite inputs are treated as "automatic" (ns-2 would compute
    /// garbage); a negative weight other than -2 is treated as -1.
    pub fn resolve(spec: &RedSpec, link_rate_bps: u64, link_delay: Duration) -> RedParams {
        // ns-2 red.cc reset(): ptc = bandwidth / (8.0 * mean_pktsize).
        let psize = f64::from(spec.mean_pktsize.max(1));
        let mut ptc = link_rate_bps as f64 / (8.0 * psize);
        if !(ptc.is_finite() && ptc > 0.0) {
            // A zero-rate link: keep every formula finite.
            ptc = 1e-9;
        }
        let delay = link_delay.as_secs_f64();
        let w = spec.weight;
        // red.cc initialize_params(): the q_w cases 0, -1, -2.
        let weight = if w.is_finite() && w > 0.0 {
            w.min(1.0)
        } else if w == 0.0 {
            1.0 - (-1.0 / ptc).exp()
        } else if w == -2.0 {
            1.0 - (-10.0 / ptc).exp()
        } else {
            let rtt = (3.0 * (delay + 1.0 / ptc)).max(0.1);
            1.0 - (-1.0 / (10.0 * rtt * ptc)).exp()
        };
        let target = spec.target_delay.0.as_secs_f64();
        // red.cc initialize_params(): th_min = max(5, targetqueue / 2).
        let mut min_th = if spec.min_th.is_finite() {
            spec.min_th.max(0.0)
        } else {
            0.0
        };
        if min_th == 0.0 {
            min_th = (target * ptc / 2.0).max(5.0);
        }
        // red.cc reset(): th_max_pkts = 3 * th_min_pkts when 0.
        let mut max_th = if spec.max_th.is_finite() {
            spec.max_th.max(0.0)
        } else {
            0.0
        };
        if max_th == 0.0 {
            max_th = 3.0 * min_th;
        }
        let max_p = if spec.max_p.is_finite() && spec.max_p > 0.0 {
            spec.max_p.min(1.0)
        } else {
            0.1
        };
        let bytes = spec.mode == RedMode::Bytes;
        if bytes {
            // red.cc reset(): "If queue is measured in bytes, scale min/max
            // thresh by the size of an average packet".
            min_th *= psize;
            max_th *= psize;
        }
        RedParams {
            limit: spec.limit,
            min_th,
            max_th,
            weight,
            max_p,
            gentle: spec.gentle,
            wait: spec.wait,
            ptc,
            bytes,
            mean_pktsize: spec.mean_pktsize.max(1),
        }
    }
}

/// The base drop probability p_b at average queue `avg` (red.cc
/// `calculate_p_new`; Floyd & Jacobson 1993 §4: p_b = max_p (avg - min_th) /
/// (max_th - min_th)). Gentle: max_p + (1 - max_p)(avg - max_th)/max_th
/// between max_th and 2 max_th; not gentle: 1 above max_th. Capped at 1.
/// Below `min_th` the formula goes negative, as in ns-2 (which never calls
/// it there); this function returns 0 instead.
pub fn base_drop_prob(avg: f64, min_th: f64, max_th: f64, max_p: f64, gentle: bool) -> f64 {
    if !avg.is_finite() || avg < min_th {
        return if avg == f64::INFINITY { 1.0 } else { 0.0 };
    }
    // red.cc reset(): th_diff = 1 when the thresholds are equal.
    let mut th_diff = max_th - min_th;
    if th_diff == 0.0 {
        th_diff = 1.0;
    }
    let p = if avg >= max_th {
        if gentle {
            // v_c = (1 - max_p)/th_max, v_d = 2 max_p - 1.
            if max_th > 0.0 {
                (1.0 - max_p) / max_th * avg + (2.0 * max_p - 1.0)
            } else {
                1.0
            }
        } else {
            1.0
        }
    } else {
        // v_a = 1/th_diff, v_b = -th_min/th_diff.
        (avg / th_diff - min_th / th_diff) * max_p
    };
    p.clamp(0.0, 1.0)
}

/// The actual drop probability p_a given p_b and the number of packets
/// `count` since the last drop (red.cc `modify_p`, packet mode). Without
/// `wait`: p_a = p_b / (1 - count p_b) (Floyd & Jacobson 1993 §4), 1 once
/// count p_b >= 1. With `wait`: 0 while count p_b < 1, then p_b / (2 -
/// count p_b), 1 once count p_b >= 2.
pub fn actual_drop_prob(p_b: f64, count: u64, wait: bool) -> f64 {
    let c = u64_as_f64(count);
    let cp = c * p_b;
    let p = if wait {
        if cp < 1.0 {
            0.0
        } else if cp < 2.0 {
            p_b / (2.0 - cp)
        } else {
            1.0
        }
    } else if cp < 1.0 {
        p_b / (1.0 - cp)
    } else {
        1.0
    };
    if p.is_nan() {
        0.0
    } else {
        p.clamp(0.0, 1.0)
    }
}

/// Byte mode's actual drop probability for a packet of `size` bytes
/// (red.cc `modify_p` with `bytes_` set): the count of packets since the
/// last drop is `count_bytes / mean_pktsize` in integer division, the
/// `wait` spacing of [`actual_drop_prob`] applies to it, and then, if the
/// result is below 1, it is scaled by `size / mean_pktsize` and capped at
/// 1.
pub fn actual_drop_prob_bytes(
    p_b: f64,
    count_bytes: u64,
    mean_pktsize: u32,
    wait: bool,
    size: u32,
) -> f64 {
    let mps = u64::from(mean_pktsize.max(1));
    let p = actual_drop_prob(p_b, count_bytes / mps, wait);
    if p < 1.0 {
        (p * f64::from(size) / mps as f64).min(1.0)
    } else {
        p
    }
}

/// `x as f64`, by the signed conversion when `x` fits in an i64 (every
/// queue length, count and idle time of a run): one instruction where the
/// unsigned one takes six on x86-64, and the same value (both round the
/// same integer to the nearest double).
#[inline(always)]
fn u64_as_f64(x: u64) -> f64 {
    match i64::try_from(x) {
        Ok(i) => i as f64,
        Err(_) => x as f64,
    }
}

/// x^n by repeated squaring: deterministic on every platform (unlike
/// `f64::powi`, whose precision Rust leaves unspecified).
fn pow_u64(mut x: f64, mut n: u64) -> f64 {
    let mut acc = 1.0;
    while n > 0 {
        if n & 1 == 1 {
            acc *= x;
        }
        x *= x;
        n >>= 1;
        if acc == 0.0 {
            break;
        }
    }
    acc
}

/// RED state of one queue.
#[derive(Clone, Debug)]
pub struct Red {
    p: RedParams,
    /// Average queue, packets (`edv_.v_ave`).
    ave: f64,
    /// Packets since the last drop (`edv_.count`).
    count: u64,
    /// Bytes since the last drop (`edv_.count_bytes`).
    count_bytes: u64,
    /// avg was above min_th at the previous arrival (`edv_.old`).
    old: bool,
    /// The link is idle (`idle_`).
    idle: bool,
    /// When it became idle (`idletime_`).
    idle_since: Instant,
    /// What [`base_drop_prob`] computes from the parameters alone, once
    /// (each by the same expression on the same values: the same bits):
    /// red.cc's `th_diff`, `v_b` (here `min_th / th_diff`, subtracted),
    /// `v_c` and `v_d`.
    th_diff: f64,
    min_over_diff: f64,
    v_c: f64,
    v_d: f64,
    /// Early drops so far.
    early_drops: u64,
    /// Forced drops so far.
    forced_drops: u64,
}

impl Red {
    /// RED for a link of `link_rate_bps`, resolving ns-2's automatic values
    /// as for a link of negligible propagation delay (which for
    /// `weight = -1` means the 100 ms RTT floor applies). Use
    /// [`Red::with_link_delay`] for the exact ns-2 value on long links.
    pub fn new(spec: &RedSpec, link_rate_bps: u64) -> Red {
        Red::with_link_delay(spec, link_rate_bps, Duration::ZERO)
    }

    /// RED for a link of `link_rate_bps` and one-way delay `link_delay`
    /// (ns-2's `q_weight_ -1` rule depends on the delay).
    pub fn with_link_delay(spec: &RedSpec, link_rate_bps: u64, link_delay: Duration) -> Red {
        Red::from_params(RedParams::resolve(spec, link_rate_bps, link_delay))
    }

    /// RED with already resolved parameters.
    pub fn from_params(p: RedParams) -> Red {
        // red.cc reset(): th_diff = 1 when the thresholds are equal.
        let mut th_diff = p.max_th - p.min_th;
        if th_diff == 0.0 {
            th_diff = 1.0;
        }
        // red.cc reset(): idle_ = 1, idletime_ = now (the start of the run).
        Red {
            th_diff,
            min_over_diff: p.min_th / th_diff,
            v_c: (1.0 - p.max_p) / p.max_th,
            v_d: 2.0 * p.max_p - 1.0,
            p,
            ave: 0.0,
            count: 0,
            count_bytes: 0,
            old: false,
            idle: true,
            idle_since: Instant::ZERO,
            early_drops: 0,
            forced_drops: 0,
        }
    }

    /// The resolved parameters.
    pub fn params(&self) -> &RedParams {
        &self.p
    }

    /// Decides for a packet arriving at a queue holding `qlen_pkts` packets
    /// (ns-2 `q_->length()`: waiting packets, not the one being
    /// transmitted), in packet mode; in byte mode every packet is taken to
    /// be `mean_pktsize` bytes. See [`Red::on_arrival_sized`].
    pub fn on_arrival(&mut self, now: Instant, qlen_pkts: usize, rng: &mut Rng) -> RedVerdict {
        let mps = self.p.mean_pktsize;
        let qlen_bytes = (qlen_pkts as u64).saturating_mul(u64::from(mps));
        self.on_arrival_sized(now, qlen_pkts, qlen_bytes, mps, rng)
    }

    /// Decides for a packet of `size` bytes arriving at a queue holding
    /// `qlen_pkts` packets of `qlen_bytes` bytes in all (waiting, not the
    /// one being transmitted: ns-2 `q_->length()`, `q_->byteLength()`).
    /// Follows red.cc `REDQueue::enque`; packet mode reads only the
    /// packet count, byte mode only the bytes and `size`.
    #[inline(always)]
    pub fn on_arrival_sized(
        &mut self,
        now: Instant,
        qlen_pkts: usize,
        qlen_bytes: u64,
        size: u32,
        rng: &mut Rng,
    ) -> RedVerdict {
        // Idle-period aging: pretend m = int(ptc * idle time) packets
        // arrived to an empty queue (Floyd & Jacobson 1993 §4 / red.cc).
        let mut m: u64 = 0;
        if self.idle {
            self.idle = false;
            // `Duration::as_secs_f64`, written out with the cheaper
            // conversion (the same bits).
            let idle_ns = now.saturating_since(self.idle_since).as_nanos();
            let idle_s = u64_as_f64(idle_ns) * 1e-9;
            let x = self.p.ptc * idle_s;
            // Finite and positive (NaN fails both compares): two compares
            // where `is_finite` took a dozen instructions.
            m = if x > 0.0 && x < f64::INFINITY {
                x as u64
            } else {
                0
            };
        }
        // red.cc estimator(nqueued, m + 1): m extra decays, then the EWMA,
        // on `qib_ ? q_->byteLength() : q_->length()`.
        let w = self.p.weight;
        let qlen = if self.p.bytes {
            qlen_bytes
        } else {
            qlen_pkts as u64
        };
        let q = u64_as_f64(qlen);
        self.ave *= pow_u64(1.0 - w, m);
        self.ave = self.ave * (1.0 - w) + w * q;

        // One per arrival: 2^64 arrivals are out of reach of any run, so
        // the add cannot overflow (it saturated, at two more instructions).
        self.count += 1;
        self.count_bytes = self.count_bytes.saturating_add(u64::from(size));

        let avg = self.ave;
        let mut verdict = RedVerdict::Enqueue;
        // red.cc: early dropping only with `qlen > 1` (2 packets queued in
        // packet mode, 2 bytes, i.e. one packet, in byte mode), so a
        // packet arriving to an idle queue is never dropped early.
        if avg >= self.p.min_th && qlen > 1 {
            if !self.old {
                // avg just crossed min_th: start counting.
                self.count = 1;
                self.count_bytes = u64::from(size);
                self.old = true;
            } else {
                // drop_early(): with use_mark_p_ true (the default) even the
                // region above (2*)max_th goes through here with p = 1.
                let p_b = self.base_drop_prob(avg);
                let p_a = if self.p.bytes {
                    actual_drop_prob_bytes(
                        p_b,
                        self.count_bytes,
                        self.p.mean_pktsize,
                        self.p.wait,
                        size,
                    )
                } else {
                    actual_drop_prob(p_b, self.count, self.p.wait)
                };
                let u = rng.next_f64();
                // ns-2 drops when u <= p with u in (0,1); ours is in [0,1),
                // so `<` keeps p = 0 from ever dropping.
                if u < p_a || p_a >= 1.0 {
                    self.count = 0;
                    self.count_bytes = 0;
                    let forced_region = if self.p.gentle {
                        avg >= 2.0 * self.p.max_th
                    } else {
                        avg >= self.p.max_th
                    };
                    // ns-2 counts these as unforced drops when use_mark_p_
                    // is set; we report the region, as Floyd & Jacobson do.
                    verdict = if forced_region {
                        RedVerdict::ForcedDrop
                    } else {
                        RedVerdict::EarlyDrop
                    };
                }
            }
        } else {
            self.old = false;
        }
        // red.cc: physical limit (drop_tail_: the arriving packet), `qlen
        // >= qlim` with qlim = qlim_ * mean_pktsize bytes in byte mode.
        let qlim = if self.p.bytes {
            u64::from(self.p.limit).saturating_mul(u64::from(self.p.mean_pktsize))
        } else {
            u64::from(self.p.limit)
        };
        if qlen >= qlim {
            verdict = RedVerdict::ForcedDrop;
            self.count = 0;
            self.count_bytes = 0;
        }
        match verdict {
            RedVerdict::EarlyDrop => self.early_drops += 1,
            RedVerdict::ForcedDrop => self.forced_drops += 1,
            RedVerdict::Enqueue => {}
        }
        verdict
    }

    /// [`base_drop_prob`] for this queue's parameters, with what depends
    /// on them alone computed at build: the same operations on the same
    /// values in the same order, so the same bits (test
    /// `cached_base_drop_prob_is_bit_identical`).
    #[inline(always)]
    fn base_drop_prob(&self, avg: f64) -> f64 {
        let p = &self.p;
        if !avg.is_finite() || avg < p.min_th {
            return if avg == f64::INFINITY { 1.0 } else { 0.0 };
        }
        let pb = if avg >= p.max_th {
            if p.gentle && p.max_th > 0.0 {
                self.v_c * avg + self.v_d
            } else {
                1.0
            }
        } else {
            (avg / self.th_diff - self.min_over_diff) * p.max_p
        };
        pb.clamp(0.0, 1.0)
    }

    /// The link found the queue empty when it went to send (an idle period
    /// starts). ns-2 sets `idle_` in `deque()` when it returns no packet,
    /// i.e. when the link finishes a transmission and nothing waits.
    pub fn on_empty(&mut self, now: Instant) {
        self.idle = true;
        self.idle_since = now;
    }

    /// Current average queue estimate, packets (bytes in byte mode).
    pub fn avg(&self) -> f64 {
        self.ave
    }

    /// Packets since the last drop (ns-2 `edv_.count`).
    pub fn count(&self) -> u64 {
        self.count
    }

    /// (early, forced) drops decided so far.
    pub fn drops(&self) -> (u64, u64) {
        (self.early_drops, self.forced_drops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Dur;

    fn spec() -> RedSpec {
        RedSpec {
            limit: 100,
            min_th: 0.0,
            max_th: 0.0,
            weight: -1.0,
            max_p: 0.1,
            gentle: true,
            wait: true,
            mean_pktsize: 500,
            target_delay: Dur(Duration::from_millis(5)),
            mode: RedMode::Packets,
        }
    }

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    #[test]
    fn the_signed_conversion_gives_the_unsigned_ones_bits() {
        let mut rng = Rng::new(5);
        let edges = [
            0,
            1,
            (1 << 53) - 1,
            1 << 53,
            (1 << 53) + 1,
            (1 << 63) - 1,
            1 << 63,
            (1 << 63) + 1,
            u64::MAX,
        ];
        let random = (0..10_000).map(|k| rng.next_u64() >> (k % 64));
        for x in edges.into_iter().chain(random) {
            assert_eq!(u64_as_f64(x).to_bits(), (x as f64).to_bits(), "{x}");
        }
    }

    #[test]
    fn cached_base_drop_prob_is_bit_identical() {
        let mut rng = Rng::new(11);
        let mut pick = |xs: &[f64]| xs[(rng.next_u64() % xs.len() as u64) as usize];
        let ths = [0.0, 1.0, 2.5, 5.0, 15.0, 30.0, 1e-3, 7.3, 1e6];
        let ps = [0.1, 0.02, 0.5, 1.0, 1e-9, 0.3333];
        let mut seen_gentle_region = 0;
        for k in 0..4000 {
            let min_th = pick(&ths);
            let max_th = if k % 7 == 0 { min_th } else { pick(&ths) };
            let max_p = pick(&ps);
            let gentle = k % 2 == 0;
            let red = Red::from_params(RedParams {
                limit: 100,
                min_th,
                max_th,
                weight: 0.002,
                max_p,
                gentle,
                wait: true,
                ptc: 1000.0,
                bytes: false,
                mean_pktsize: 500,
            });
            let avgs = [
                f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY,
                0.0,
                min_th,
                max_th,
                2.0 * max_th,
                (min_th + max_th) / 2.0,
                max_th * 1.37 + 0.1,
                pick(&ths) * 0.77,
            ];
            for avg in avgs {
                let want = base_drop_prob(avg, min_th, max_th, max_p, gentle);
                let got = red.base_drop_prob(avg);
                assert_eq!(
                    got.to_bits(),
                    want.to_bits(),
                    "{min_th} {max_th} {max_p} {gentle} {avg}"
                );
                if gentle && avg > max_th && want < 1.0 && want > max_p {
                    seen_gentle_region += 1;
                }
            }
        }
        assert!(seen_gentle_region > 0);
    }

    #[test]
    fn automatic_parameters_match_ns2() {
        // Values printed by ns-2 2.35 (see the module docs).
        let p = RedParams::resolve(&spec(), 16_000_000, Duration::from_millis(1));
        assert_eq!(p.ptc, 4000.0);
        assert_eq!((p.min_th, p.max_th), (10.0, 30.0));
        assert!(close(p.weight, 2.499687526e-4, 1e-9), "{}", p.weight);
        assert_eq!(p.max_p, 0.1);

        let p = RedParams::resolve(&spec(), 4_000_000, Duration::from_millis(1));
        assert_eq!(p.ptc, 1000.0);
        assert_eq!((p.min_th, p.max_th), (5.0, 15.0));
        assert!(close(p.weight, 9.995001666e-4, 1e-9), "{}", p.weight);

        let p = RedParams::resolve(&spec(), 16_000_000, Duration::from_millis(250));
        assert!(close(p.weight, 3.329947886e-5, 1e-9), "{}", p.weight);

        let p = RedParams::resolve(&spec(), 100_000_000, Duration::from_millis(1));
        assert_eq!((p.min_th, p.max_th), (62.5, 187.5));
        assert!(close(p.weight, 3.999920001e-5, 1e-9), "{}", p.weight);

        let mut s = spec();
        s.weight = 0.0;
        let p = RedParams::resolve(&s, 16_000_000, Duration::from_millis(1));
        assert!(close(p.weight, 2.499687526e-4, 1e-9), "{}", p.weight);
        s.weight = -2.0;
        let p = RedParams::resolve(&s, 16_000_000, Duration::from_millis(1));
        assert!(close(p.weight, 2.496877603e-3, 1e-9), "{}", p.weight);

        // Explicit values are kept.
        s.weight = 0.002;
        s.min_th = 7.0;
        s.max_th = 0.0;
        let p = RedParams::resolve(&s, 16_000_000, Duration::ZERO);
        assert_eq!((p.weight, p.min_th, p.max_th), (0.002, 7.0, 21.0));
    }

    #[test]
    fn degenerate_inputs_stay_finite() {
        let mut s = spec();
        s.weight = f64::NAN;
        s.min_th = f64::INFINITY;
        s.max_p = f64::NAN;
        s.mean_pktsize = 0;
        let p = RedParams::resolve(&s, 0, Duration::MAX);
        assert!(p.weight.is_finite() && p.weight > 0.0 && p.weight <= 1.0);
        assert!(p.min_th.is_finite() && p.max_th.is_finite() && p.max_p == 0.1);
        let mut red = Red::from_params(p);
        let mut rng = Rng::new(1);
        for i in 0..100 {
            red.on_arrival(Instant(i), usize::MAX, &mut rng);
            red.on_empty(Instant(i));
            red.on_arrival(Instant::MAX, 0, &mut rng);
        }
        assert!(red.avg().is_finite());
    }

    #[test]
    fn base_probability_at_hand_computed_points() {
        // min 5, max 15, max_p 0.1.
        let f = |avg, gentle| base_drop_prob(avg, 5.0, 15.0, 0.1, gentle);
        assert_eq!(f(4.9, true), 0.0);
        assert_eq!(f(5.0, true), 0.0);
        assert!(close(f(10.0, true), 0.05, 1e-12));
        assert!(close(f(12.5, false), 0.075, 1e-12));
        // Gentle: max_p + 0.9 * (avg - 15)/15.
        assert!(close(f(15.0, true), 0.1, 1e-12));
        assert!(close(f(22.5, true), 0.55, 1e-12));
        assert_eq!(f(30.0, true), 1.0);
        assert_eq!(f(40.0, true), 1.0);
        // Not gentle: 1 from max_th on.
        assert_eq!(f(15.0, false), 1.0);
        assert_eq!(f(f64::NAN, true), 0.0);
    }

    #[test]
    fn actual_probability_spacing() {
        // Without wait (F&J 1993): p_b / (1 - count p_b).
        assert!(close(actual_drop_prob(0.05, 10, false), 0.1, 1e-12));
        assert!(close(actual_drop_prob(0.05, 1, false), 0.05 / 0.95, 1e-12));
        assert_eq!(actual_drop_prob(0.05, 20, false), 1.0);
        // With wait: 0 before 1/p_b packets, then p_b / (2 - count p_b).
        assert_eq!(actual_drop_prob(0.05, 19, true), 0.0);
        assert!(close(actual_drop_prob(0.05, 30, true), 0.1, 1e-12));
        assert_eq!(actual_drop_prob(0.05, 40, true), 1.0);
        assert_eq!(actual_drop_prob(0.0, 1_000_000, true), 0.0);
    }

    fn fixed(weight: f64, wait: bool, gentle: bool) -> RedParams {
        RedParams {
            limit: 1000,
            min_th: 5.0,
            max_th: 15.0,
            weight,
            max_p: 0.1,
            gentle,
            wait,
            ptc: 1000.0,
            bytes: false,
            mean_pktsize: 500,
        }
    }

    #[test]
    fn ewma_tracks_the_queue() {
        let mut red = Red::from_params(fixed(0.5, true, true));
        let mut rng = Rng::new(1);
        // Starts idle at t = 0; arrival at t = 0 means m = 0.
        red.on_arrival(Instant::ZERO, 4, &mut rng);
        assert_eq!(red.avg(), 2.0);
        red.on_arrival(Instant::ZERO, 4, &mut rng);
        assert_eq!(red.avg(), 3.0);
        red.on_arrival(Instant::ZERO, 0, &mut rng);
        assert_eq!(red.avg(), 1.5);
    }

    #[test]
    fn idle_aging() {
        let w = 0.01;
        let mut red = Red::from_params(fixed(w, true, true));
        let mut rng = Rng::new(1);
        for _ in 0..5000 {
            red.on_arrival(Instant::ZERO, 3, &mut rng);
        }
        let before = red.avg();
        assert!(close(before, 3.0, 1e-9));
        // Idle for 25.5 ms at ptc = 1000 pkt/s: m = int(25.5) = 25 decays,
        // then the arrival itself (queue 0): avg (1-w)^26.
        red.on_empty(Instant(1_000_000_000));
        red.on_arrival(Instant(1_025_500_000), 0, &mut rng);
        let expect = before * 0.99f64.powi(26);
        assert!(
            close(red.avg(), expect, 1e-12),
            "{} vs {}",
            red.avg(),
            expect
        );
        // No aging without an idle period.
        let a = red.avg();
        red.on_arrival(Instant(5_000_000_000), 0, &mut rng);
        assert!(close(red.avg(), a * 0.99, 1e-12));
    }

    #[test]
    fn nothing_dropped_below_min_th_or_into_short_queue() {
        let mut red = Red::from_params(fixed(0.002, true, true));
        let mut rng = Rng::new(3);
        for _ in 0..50_000 {
            assert_eq!(
                red.on_arrival(Instant::ZERO, 4, &mut rng),
                RedVerdict::Enqueue
            );
        }
        // avg is about 40 (far above 2 max_th) but the queue holds 1 packet.
        let mut red = Red::from_params(fixed(1.0, true, true));
        red.on_arrival(Instant::ZERO, 40, &mut rng);
        assert_eq!(
            red.on_arrival(Instant::ZERO, 1, &mut rng),
            RedVerdict::Enqueue
        );
    }

    /// Expected fraction of arrivals dropped at a constant p_b: the
    /// inter-drop gap X has P(X = n) = p_a(n) prod_{k<n} (1 - p_a(k)) with
    /// count restarting at 1 after a drop; fraction = 1 / E[X].
    fn expected_fraction(p_b: f64, wait: bool) -> f64 {
        let mut survive = 1.0;
        let mut mean = 0.0;
        for n in 1..10_000u64 {
            let p = actual_drop_prob(p_b, n, wait);
            mean += n as f64 * survive * p;
            survive *= 1.0 - p;
            if survive == 0.0 {
                break;
            }
        }
        1.0 / mean
    }

    fn held_run(params: RedParams, q: usize) -> (f64, f64) {
        let mut red = Red::from_params(params);
        let mut rng = Rng::new(99);
        for _ in 0..40_000 {
            red.on_arrival(Instant::ZERO, q, &mut rng);
        }
        let (e0, f0) = red.drops();
        let n = 400_000;
        for _ in 0..n {
            red.on_arrival(Instant::ZERO, q, &mut rng);
        }
        let (e1, f1) = red.drops();
        ((e1 - e0) as f64 / n as f64, (f1 - f0) as f64 / n as f64)
    }

    #[test]
    fn long_run_early_drop_fraction_at_held_queue() {
        // Queue held at 10: avg -> 10, p_b = 0.05.
        let (early, forced) = held_run(fixed(0.002, true, true), 10);
        let want = expected_fraction(0.05, true);
        // Wait spacing: gaps uniform on [1/p_b, 2/p_b - 1] = [20, 39],
        // mean 29.5.
        assert!((want - 1.0 / 29.5).abs() < 1e-9, "{want}");
        assert!((early - want).abs() < 0.03 * want, "{early} vs {want}");
        assert_eq!(forced, 0.0);

        let (early, _) = held_run(fixed(0.002, false, true), 10);
        let want = expected_fraction(0.05, false);
        // F&J spacing; ns-2's count is already 1 at the first packet after
        // a drop, so gaps are uniform on [1, 1/p_b - 1]: fraction 2 p_b.
        assert!((want - 0.1).abs() < 1e-9, "{want}");
        assert!((early - want).abs() < 0.03 * want, "{early} vs {want}");

        // Gentle region: queue 22.5 -> p_b = 0.55.
        let (early, _) = held_run(fixed(0.002, true, true), 22);
        let p_b = base_drop_prob(22.0, 5.0, 15.0, 0.1, true);
        let want = expected_fraction(p_b, true);
        assert!((early - want).abs() < 0.03 * want, "{early} vs {want}");
    }

    #[test]
    fn forced_region_and_limit() {
        // Held above 2 max_th (gentle) or max_th (not gentle): every
        // arrival after the first crossing is dropped, reported as forced.
        let (early, forced) = held_run(fixed(0.002, true, true), 31);
        assert_eq!(early, 0.0);
        assert_eq!(forced, 1.0);
        let (early, forced) = held_run(fixed(0.002, true, false), 16);
        assert_eq!(early, 0.0);
        assert_eq!(forced, 1.0);
        // The physical limit.
        let mut p = fixed(0.002, true, true);
        p.limit = 3;
        let mut red = Red::from_params(p);
        let mut rng = Rng::new(5);
        assert_eq!(
            red.on_arrival(Instant::ZERO, 2, &mut rng),
            RedVerdict::Enqueue
        );
        assert_eq!(
            red.on_arrival(Instant::ZERO, 3, &mut rng),
            RedVerdict::ForcedDrop
        );
        assert_eq!(red.count(), 0);
    }

    #[test]
    fn byte_mode_probability_is_ns2_modify_p() {
        // red.cc modify_p(p, count, count_bytes, bytes=1, mean_pktsize,
        // wait, size), worked by hand. p_b = 0.02, mean_pktsize 1000.
        // count_bytes 60 000 -> count1 = 60, count1 p = 1.2 -> wait:
        // p = 0.02 / (2 - 1.2) = 0.025; size 1040 -> 0.025 * 1.04.
        let p = actual_drop_prob_bytes(0.02, 60_000, 1000, true, 1040);
        assert!(close(p, 0.026, 1e-12), "{p}");
        // Integer division: 59 999 bytes count as 59 packets (1.18).
        let p = actual_drop_prob_bytes(0.02, 59_999, 1000, true, 1000);
        assert!(close(p, 0.02 / (2.0 - 59.0 * 0.02), 1e-12), "{p}");
        // Below 1/p_b "packets": 0 whatever the size.
        assert_eq!(actual_drop_prob_bytes(0.02, 49_999, 1000, true, 1040), 0.0);
        // A 40-byte ACK is 26 times less likely to go than a 1040-byte
        // data packet at the same count.
        let ack = actual_drop_prob_bytes(0.02, 60_000, 1000, true, 40);
        assert!(close(ack, 0.025 * 0.04, 1e-12), "{ack}");
        // Without wait: p / (1 - count1 p), then scaled: 0.02 / 0.8 * 1.04.
        let p = actual_drop_prob_bytes(0.02, 10_000, 1000, false, 1040);
        assert!(close(p, 0.02 / (1.0 - 0.2) * 1.04, 1e-12), "{p}");
        // p = 1 stays 1 (no scaling), and the scaled value is capped at 1.
        assert_eq!(actual_drop_prob_bytes(0.02, 100_000, 1000, true, 40), 1.0);
        assert_eq!(actual_drop_prob_bytes(0.9, 1000, 1000, false, 3000), 1.0);
    }

    fn byte_spec() -> RedSpec {
        RedSpec {
            mode: RedMode::Bytes,
            mean_pktsize: 1000,
            limit: 10,
            ..spec()
        }
    }

    #[test]
    fn byte_mode_thresholds_and_limit_in_mean_packets() {
        // 4 Mb/s at 1000-byte mean packets: ptc 500/s, automatic min_th
        // max(5, 0.005 * 500 / 2) = 5 packets = 5000 bytes, max 15000.
        let p = RedParams::resolve(&byte_spec(), 4_000_000, Duration::from_millis(1));
        assert!(p.bytes);
        assert_eq!(p.ptc, 500.0);
        assert_eq!((p.min_th, p.max_th), (5000.0, 15000.0));
        let mut s = byte_spec();
        s.min_th = 3.0 + 1.5 * 8.0;
        s.max_th = 10.0 + 5.0 * 8.0;
        let p = RedParams::resolve(&s, 8_000_000, Duration::from_millis(1));
        assert_eq!((p.min_th, p.max_th), (15_000.0, 50_000.0));
        // The physical limit is limit * mean_pktsize = 10 000 bytes,
        // whatever the packets: 9 data packets of 1040 B (9360) fit, 10
        // (10 400) do not; 100 ACKs of 40 B (4000) do.
        let mut red = Red::with_link_delay(&byte_spec(), 4_000_000, Duration::ZERO);
        let mut rng = Rng::new(7);
        assert_eq!(
            red.on_arrival_sized(Instant::ZERO, 9, 9360, 1040, &mut rng),
            RedVerdict::Enqueue
        );
        let mut red = Red::with_link_delay(&byte_spec(), 4_000_000, Duration::ZERO);
        assert_eq!(
            red.on_arrival_sized(Instant::ZERO, 10, 10_400, 1040, &mut rng),
            RedVerdict::ForcedDrop
        );
        let mut red = Red::with_link_delay(&byte_spec(), 4_000_000, Duration::ZERO);
        assert_eq!(
            red.on_arrival_sized(Instant::ZERO, 100, 4000, 40, &mut rng),
            RedVerdict::Enqueue
        );
        // Packet mode counts those ACKs as 100 packets: over the limit.
        let mut red = Red::with_link_delay(
            &RedSpec {
                mode: RedMode::Packets,
                ..byte_spec()
            },
            4_000_000,
            Duration::ZERO,
        );
        assert_eq!(
            red.on_arrival_sized(Instant::ZERO, 100, 4000, 40, &mut rng),
            RedVerdict::ForcedDrop
        );
    }

    #[test]
    fn byte_mode_average_and_drop_rate_follow_bytes() {
        // The EWMA runs on bytes waiting.
        let mut p = fixed(0.5, true, true);
        p.bytes = true;
        p.mean_pktsize = 1000;
        p.min_th = 5000.0;
        p.max_th = 15000.0;
        let mut red = Red::from_params(p);
        let mut rng = Rng::new(1);
        red.on_arrival_sized(Instant::ZERO, 4, 4160, 1040, &mut rng);
        assert_eq!(red.avg(), 2080.0);
        // Held at 10 400 bytes waiting (10 packets of 1040): avg -> 10 400,
        // p_b = 0.1 (10 400 - 5000) / 10 000 = 0.054. Arrivals of 1040 B
        // add 1.04 "mean packets" each, so count1 = int(1.04 n) and the
        // expected drop fraction is 1 / E[gap] with p_a(n) from modify_p.
        let mut p = fixed(0.002, true, true);
        p.bytes = true;
        p.mean_pktsize = 1000;
        p.min_th = 5000.0;
        p.max_th = 15000.0;
        let mut red = Red::from_params(p);
        let mut rng = Rng::new(99);
        for _ in 0..40_000 {
            red.on_arrival_sized(Instant::ZERO, 10, 10_400, 1040, &mut rng);
        }
        let (e0, _) = red.drops();
        let n = 400_000u64;
        for _ in 0..n {
            red.on_arrival_sized(Instant::ZERO, 10, 10_400, 1040, &mut rng);
        }
        let (e1, f1) = red.drops();
        let got = (e1 - e0) as f64 / n as f64;
        let p_b = base_drop_prob(10_400.0, 5000.0, 15000.0, 0.1, true);
        assert!(close(p_b, 0.054, 1e-12));
        let (mut survive, mut mean) = (1.0, 0.0);
        for k in 1..100_000u64 {
            let pa = actual_drop_prob_bytes(p_b, 1040 * k, 1000, true, 1040);
            mean += k as f64 * survive * pa;
            survive *= 1.0 - pa;
            if survive == 0.0 {
                break;
            }
        }
        let want = 1.0 / mean;
        assert!((got - want).abs() < 0.03 * want, "{got} vs {want}");
        assert_eq!(f1, 0);
        // Packet mode at the same queue would see avg 10 packets: p_b 0.05
        // and a different rate (the byte scaling matters).
        assert!((want - expected_fraction(0.05, true)).abs() > 0.03 * want);
    }
}
