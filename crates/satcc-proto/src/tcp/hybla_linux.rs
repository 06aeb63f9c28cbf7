//! TCP Hybla as ns-2 2.35 runs it: `tcp/linux/src/tcp_hybla.c` ("Modified
//! Linux module source code from linux-2.6.22.6") under `Agent/TCP/Linux`
//! (`tcp/tcp-linux.cc`), for like-for-like checks against `select_ca
//! hybla` (`hybla_variant = "linux-2.6.22"`). The rules are the paper's
//! (2^ρ − 1 and ρ²/W per ACK) in the module's fixed point: ρ in steps of
//! 1/8, truncated (`rho_3ls`), increments in 1/128 of a segment carried in
//! `snd_cwnd_cents`, 2^fraction from an 8-entry table, no cap on the
//! slow-start exponent; Reno's growth outside `TCP_CA_Open` (after a
//! timeout, until its recovery ends); ssthresh = cwnd/2
//! (`tcp_reno_ssthresh`, of cwnd rather than FlightSize).
//!
//! The shim's loss recovery is a separate choice, `sack_recovery =
//! "ns2-linux"` (`tcp/ns2linux.rs`). When fast recovery starts it
//! sets cwnd to the module's `min_cwnd()`, `tcp_reno_min_cwnd()` =
//! ssthresh/2 (tcp-linux.cc tcp_fastretrans_alert(); Linux uses it only as
//! rate halving's floor), and lets the pipe down towards it by rate
//! halving (`next_pkts_in_flight_`: one segment per two ACKs), then on
//! leaving recovery sets cwnd = min(ssthresh, in flight + 3). By default
//! the satcc sender's recovery is RFC 6675's whichever growth runs
//! (docs/validation.md "Like for like" measures what that costs, "ns-2's
//! own recovery" the shim's).

use crate::time::Duration;

/// `hybla_fraction()`: 2^(odds/8) in 1/128.
const FRACTIONS: [u64; 8] = [128, 139, 152, 165, 181, 197, 215, 234];

/// `struct hybla` plus the shim's `snd_cwnd_cnt` for Reno's growth.
#[derive(Clone, Debug, Default)]
pub(crate) struct HyblaLinux {
    /// `rtt0` in jiffies (ms).
    rtt0_ms: u64,
    initialized: bool,
    /// ρ << 3.
    pub rho_3ls: u64,
    rho: u64,
    rho2_7ls: u64,
    /// Smallest SRTT seen, jiffies << 3.
    minrtt: u64,
    snd_cwnd_cents: u64,
    snd_cwnd_cnt: u16,
}

/// ns-2's `t_srtt_` (ms << 3) from satcc's SRTT.
fn srtt8(srtt: Option<Duration>) -> u64 {
    srtt.map_or(0, |d| d.0 * 8 / 1_000_000)
}

impl HyblaLinux {
    pub fn new(rtt0: Duration) -> Self {
        HyblaLinux {
            rtt0_ms: (rtt0.0 / 1_000_000).max(1),
            ..HyblaLinux::default()
        }
    }

    /// `hybla_recalc_param()`.
    fn recalc(&mut self, srtt8: u64) {
        self.rho_3ls = (srtt8 / self.rtt0_ms).max(8);
        self.rho = self.rho_3ls >> 3;
        self.rho2_7ls = (self.rho_3ls * self.rho_3ls) << 1;
    }

    /// One ACK of new data outside fast recovery (`hybla_cong_avoid()`,
    /// after `hybla_init()` on the first). `open`: Linux's `TCP_CA_Open`
    /// (`hybla_state()` sets `hybla_en` from it).
    pub fn on_ack(&mut self, cwnd: f64, ssthresh: f64, srtt: Option<Duration>, open: bool) -> f64 {
        let s8 = srtt8(srtt);
        let mut w = (cwnd.floor() as u64).max(1);
        let ssthresh = ssthresh.floor().max(0.0) as u64;
        if !self.initialized {
            // hybla_init(), called by tcp-linux.cc recv() on the first ACK
            // (after its RTT sample): "1st Rho measurement based on
            // initial srtt", and `tp->snd_cwnd = ca->rho`.
            self.initialized = true;
            self.recalc(s8);
            self.minrtt = s8;
            w = self.rho.max(1);
        }
        // "Recalculate rho only if this srtt is the lowest".
        if s8 < self.minrtt {
            self.recalc(s8);
            self.minrtt = s8;
        }
        if !open {
            return self.reno(w, ssthresh) as f64;
        }
        if self.rho == 0 {
            self.recalc(s8);
        }
        let rho_fractions = self.rho_3ls - (self.rho << 3);
        let slow_start = w < ssthresh;
        let increment = if slow_start {
            // "INC = 2^RHO - 1" as (1 << int) · 2^fract<<7 − 128.
            (1u64 << self.rho.min(63)).saturating_mul(FRACTIONS[rho_fractions as usize]) - 128
        } else {
            // "INC = RHO^2 / W", already << 7.
            let inc = self.rho2_7ls / w;
            if inc < 128 {
                self.snd_cwnd_cnt = self.snd_cwnd_cnt.wrapping_add(1);
            }
            inc
        };
        w = w.saturating_add(increment >> 7);
        self.snd_cwnd_cents += increment % 128;
        while self.snd_cwnd_cents >= 128 {
            w += 1;
            self.snd_cwnd_cents -= 128;
            self.snd_cwnd_cnt = 0;
        }
        // "clamp down slowstart cwnd to ssthresh value."
        if slow_start {
            w = w.min(ssthresh);
        }
        w as f64
    }

    /// ns-2's tcp_cong.c `tcp_reno_cong_avoid()` (`sysctl_tcp_abc` 0).
    fn reno(&mut self, w: u64, ssthresh: u64) -> u64 {
        if w <= ssthresh {
            super::cubic_v21::slow_start(&mut self.snd_cwnd_cnt, w)
        } else if self.snd_cwnd_cnt as u64 >= w {
            self.snd_cwnd_cnt = 0;
            w + 1
        } else {
            self.snd_cwnd_cnt = self.snd_cwnd_cnt.wrapping_add(1);
            w
        }
    }

    /// `tcp_reno_ssthresh()`: max(cwnd >> 1, 2); the shim zeroes
    /// `snd_cwnd_cnt` on a reduction.
    pub fn ssthresh(&mut self, cwnd: f64) -> f64 {
        self.snd_cwnd_cnt = 0;
        ((cwnd.floor() as u64) >> 1).max(2) as f64
    }
}
