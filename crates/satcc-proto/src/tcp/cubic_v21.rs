//! CUBIC v2.1 as ns-2 2.35 runs it: `tcp/linux/src/tcp_cubic.c` ("Modified
//! Linux module source code from linux-2.6.22.6", `MODULE_VERSION("2.1")`)
//! under ns-2's `Agent/TCP/Linux` shim (`tcp/tcp-linux.cc`), for
//! like-for-like checks against `select_ca cubic` (`cubic_variant =
//! "linux-2.6.22"`). RFC 9438 (the default, [`super::growth`]) differs:
//! β 0.7 on FlightSize, no cap on growth above W_max, t + SRTT, the 1.5·cwnd
//! target clamp; v2.1 has β = 819/1024 of cwnd, `max_increment`, t +
//! `delay_min`, `cnt = 50` until the first loss and the delayed-ACK ratio
//! below.
//!
//! The module's integer arithmetic is kept: time in jiffies (ns-2's
//! `JIFFY_RATIO` 1000, so HZ = 1000 and a jiffy is 1 ms, `tcp_time_stamp =
//! trunc(clock·1000)`), cwnd in whole segments, growth by one segment
//! after `cnt` ACKs (`snd_cwnd_cnt`, a 16-bit counter in ns-2's
//! `struct tcp_sock`). Two simplifications, both said where they are: K's
//! cube root is `f64::cbrt` truncated (the module's `cubic_root()` is a
//! table lookup and one Newton step, "Avg err ~= 0.195%"), and
//! `tcp_is_cwnd_limited()` is not checked (the sender calls the growth
//! only for ACKs of a flow that has data; the bulk flows compared here are
//! window limited).

use crate::time::Instant;

/// ns-2's HZ (`JIFFY_RATIO` in `tcp/linux/ns-linux-util.h`).
const HZ: u64 = 1000;
/// `BICTCP_BETA_SCALE`.
const BETA_SCALE: u64 = 1024;
/// `BICTCP_HZ`: K and t are in 1/2^10 s.
const BICTCP_HZ: u32 = 10;
/// `ACK_RATIO_SHIFT`.
const ACK_RATIO_SHIFT: u32 = 4;

/// The module parameters of tcp_cubic.c v2.1 (its defaults: `beta = 819`,
/// `bic_scale = 41`, `max_increment = 16`, `fast_convergence = 1`,
/// `tcp_friendliness = 1`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct V21Params {
    /// `beta`, in 1/1024.
    pub beta: u64,
    /// `bic_scale`: C = bic_scale·10/1024 segments/s³ (41: 0.4004).
    pub bic_scale: u64,
    /// `max_increment`: at most this many segments per 100 ms above W_max.
    pub max_increment: u64,
    /// `fast_convergence`.
    pub fast_convergence: bool,
    /// `tcp_friendliness`.
    pub tcp_friendliness: bool,
}

impl V21Params {
    /// From a [`super::CubicConfig`]'s C and β (0.4004 and 819/1024 by
    /// [`super::CubicConfig::linux_2_6_22`]), rounded to the module's
    /// integers.
    pub fn new(c: f64, beta: f64, fast_convergence: bool, tcp_friendliness: bool) -> Self {
        V21Params {
            beta: ((beta * BETA_SCALE as f64).round() as u64).clamp(1, BETA_SCALE - 1),
            bic_scale: ((c * 1024.0 / 10.0).round() as u64).max(1),
            max_increment: 16,
            fast_convergence,
            tcp_friendliness,
        }
    }

    /// `cubictcp_register()`: `beta_scale = 8*(BICTCP_BETA_SCALE+beta)/3/
    /// (BICTCP_BETA_SCALE - beta)` (23 at the defaults: Reno's estimate
    /// gains a segment every 23/8 windows of ACKs).
    fn beta_scale(&self) -> u64 {
        8 * (BETA_SCALE + self.beta) / 3 / (BETA_SCALE - self.beta)
    }

    /// `cube_rtt_scale = bic_scale * 10`.
    fn cube_rtt_scale(&self) -> u64 {
        self.bic_scale * 10
    }

    /// `cube_factor = 2^40 / (bic_scale * 10)`.
    fn cube_factor(&self) -> u64 {
        (1u64 << (10 + 3 * BICTCP_HZ)) / (self.bic_scale * 10)
    }
}

/// `struct bictcp` plus the shim's `snd_cwnd_cnt`.
#[derive(Clone, Debug)]
pub(crate) struct V21State {
    pub p: V21Params,
    pub cnt: u64,
    pub last_max_cwnd: u64,
    pub loss_cwnd: u64,
    last_cwnd: u64,
    last_time: u64,
    bic_origin_point: u64,
    bic_k: u64,
    /// Minimum delay in jiffies << 3.
    pub delay_min: u64,
    epoch_start: u64,
    ack_cnt: u64,
    tcp_cwnd: u64,
    /// Packets per ACK << 4.
    pub delayed_ack: u64,
    /// `tp->snd_cwnd_cnt` (`__u16` in ns-2's `struct tcp_sock`).
    snd_cwnd_cnt: u16,
}

/// What one ACK tells v2.1.
pub(crate) struct V21Ack {
    pub now: Instant,
    /// Segments newly acknowledged (`ack - prior_snd_una`).
    pub acked: u64,
    /// This ACK's RTT sample from its timestamp echo.
    pub rtt: Option<crate::time::Duration>,
    /// Linux's `TCP_CA_Open`: not in fast or timeout recovery.
    pub open: bool,
}

/// ns-2's tcp_cong.c `tcp_slow_start()` (`sysctl_tcp_abc` 0), shared by
/// the 2.6.22 modules: `snd_cwnd_cnt += snd_cwnd`, then a segment per
/// `snd_cwnd` of it. Returns the new window.
pub(super) fn slow_start(snd_cwnd_cnt: &mut u16, w: u64) -> u64 {
    let mut c = (u64::from(*snd_cwnd_cnt) + w) & 0xffff;
    let mut w2 = w;
    while c >= w2 {
        c -= w2;
        w2 += 1;
    }
    *snd_cwnd_cnt = c as u16;
    w2
}

fn jiffies(t: Instant) -> u64 {
    // tcp-linux.cc recv(): `tcp_time_stamp = trunc(clock * JIFFY_RATIO)`.
    t.0 / (1_000_000_000 / HZ)
}

impl V21State {
    pub fn new(p: V21Params) -> Self {
        let mut s = V21State::zero(p);
        s.reset();
        s
    }

    /// Every counter at 0 (what `bictcp_reset()` starts from).
    fn zero(p: V21Params) -> Self {
        V21State {
            p,
            cnt: 0,
            last_max_cwnd: 0,
            loss_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            bic_origin_point: 0,
            bic_k: 0,
            delay_min: 0,
            epoch_start: 0,
            ack_cnt: 0,
            tcp_cwnd: 0,
            delayed_ack: 0,
            snd_cwnd_cnt: 0,
        }
    }

    /// `bictcp_reset()` (init, and `bictcp_state(TCP_CA_Loss)`).
    fn reset(&mut self) {
        *self = V21State {
            delayed_ack: 2 << ACK_RATIO_SHIFT,
            snd_cwnd_cnt: self.snd_cwnd_cnt,
            ..V21State::zero(self.p)
        };
    }

    /// One ACK of new data outside fast recovery: tcp-linux.cc recv() calls
    /// `pkts_acked` (`bictcp_acked`) and then `cong_avoid`
    /// (`bictcp_cong_avoid`). Returns the new cwnd (whole segments).
    pub fn on_ack(&mut self, cwnd: f64, ssthresh: f64, a: V21Ack) -> f64 {
        let now = jiffies(a.now);
        // bictcp_acked(): "Track delayed acknowledgment ratio using
        // sliding window ratio = (15*ratio + sample) / 16", only in
        // TCP_CA_Open. Unsigned arithmetic as written: with one ACK per
        // segment the ratio starts at 2 (<< 4 = 32), drops to 31 and stays
        // there (31 >> 4 = 1 = the sample), so cnt below is divided by
        // 31/16 for the whole connection.
        if a.acked > 0 && a.open {
            let c = a.acked.wrapping_sub(self.delayed_ack >> ACK_RATIO_SHIFT);
            self.delayed_ack = self.delayed_ack.wrapping_add(c);
        }
        // bictcp_cong_avoid(): measure_delay() on ACKs of data.
        self.measure_delay(now, a.now, a.rtt);
        let w = (cwnd.floor() as u64).max(1);
        // `if (tp->snd_cwnd <= tp->snd_ssthresh) tcp_slow_start(tp)`.
        if w as f64 <= ssthresh.floor() {
            return slow_start(&mut self.snd_cwnd_cnt, w) as f64;
        }
        self.update(w, now);
        // "In dangerous area, increase slowly."
        if self.snd_cwnd_cnt as u64 >= self.cnt {
            self.snd_cwnd_cnt = 0;
            (w + 1) as f64
        } else {
            self.snd_cwnd_cnt = self.snd_cwnd_cnt.wrapping_add(1);
            w as f64
        }
    }

    /// `measure_delay()`: the smallest timestamp RTT, in jiffies << 3,
    /// ignoring samples in the first second of an epoch ("Discard delay
    /// samples right after fast recovery").
    fn measure_delay(&mut self, now: u64, at: Instant, rtt: Option<crate::time::Duration>) {
        let Some(rtt) = rtt else { return };
        if (now.wrapping_sub(self.epoch_start) as i64) < HZ as i64 {
            return;
        }
        // tcp-linux.cc time_processing(): `rcv_tsecr = round(ts_echo *
        // JIFFY_RATIO)`, the echoed send time rounded to a jiffy.
        let ns = 1_000_000_000 / HZ;
        let sent = (at.0.saturating_sub(rtt.0) + ns / 2) / ns;
        let mut delay = (now.wrapping_sub(sent)) << 3;
        if delay == 0 {
            delay = 1;
        }
        if self.delay_min == 0 || self.delay_min > delay {
            self.delay_min = delay;
        }
    }

    /// `bictcp_update()`: sets `cnt`, the ACKs per segment of growth.
    fn update(&mut self, cwnd: u64, now: u64) {
        self.ack_cnt += 1;
        if self.last_cwnd == cwnd && (now.wrapping_sub(self.last_time) as i64) <= (HZ / 32) as i64 {
            return;
        }
        self.last_cwnd = cwnd;
        self.last_time = now;
        if self.epoch_start == 0 {
            self.epoch_start = now;
            self.ack_cnt = 1;
            self.tcp_cwnd = cwnd;
            if self.last_max_cwnd <= cwnd {
                self.bic_k = 0;
                self.bic_origin_point = cwnd;
            } else {
                // `cubic_root(cube_factor * (last_max_cwnd - cwnd))`; the
                // module's table-and-Newton root is within 0.2 % of this.
                let x = self.p.cube_factor() * (self.last_max_cwnd - cwnd);
                self.bic_k = (x as f64).cbrt() as u64;
                self.bic_origin_point = self.last_max_cwnd;
            }
        }
        // `t = ((tcp_time_stamp + (delay_min>>3) - epoch_start) << BICTCP_HZ) / HZ`.
        let t = (now
            .wrapping_add(self.delay_min >> 3)
            .wrapping_sub(self.epoch_start)
            << BICTCP_HZ)
            / HZ;
        let offs = t.abs_diff(self.bic_k);
        // `delta = (cube_rtt_scale * offs * offs * offs) >> (10+3*BICTCP_HZ)`
        // (u64 in ns-2, wrapping past ~2^21 offs as the module's would).
        let delta = self
            .p
            .cube_rtt_scale()
            .wrapping_mul(offs)
            .wrapping_mul(offs)
            .wrapping_mul(offs)
            >> (10 + 3 * BICTCP_HZ);
        let bic_target = if t < self.bic_k {
            self.bic_origin_point.wrapping_sub(delta)
        } else {
            self.bic_origin_point.wrapping_add(delta)
        };
        self.cnt = if bic_target > cwnd {
            cwnd / (bic_target - cwnd)
        } else {
            100 * cwnd
        };
        if self.delay_min > 0 {
            // "max increment = Smax * rtt / 0.1": at most max_increment
            // segments per 100 ms, above the origin only.
            let min_cnt = (cwnd * HZ * 8) / (10 * self.p.max_increment * self.delay_min);
            if self.cnt < min_cnt && t >= self.bic_k {
                self.cnt = min_cnt;
            }
        }
        // "slow start and low utilization": before any loss.
        if self.loss_cwnd == 0 {
            self.cnt = 50;
        }
        if self.p.tcp_friendliness {
            let d = (cwnd * self.p.beta_scale()) >> 3;
            while d > 0 && self.ack_cnt > d {
                self.ack_cnt -= d;
                self.tcp_cwnd += 1;
            }
            if self.tcp_cwnd > cwnd {
                let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
                if self.cnt > max_cnt {
                    self.cnt = max_cnt;
                }
            }
        }
        self.cnt = (self.cnt << ACK_RATIO_SHIFT) / self.delayed_ack.max(1);
        if self.cnt == 0 {
            self.cnt = 1;
        }
    }

    /// `bictcp_recalc_ssthresh()` at the start of fast recovery (the shim
    /// then sets cwnd = ssthresh and `snd_cwnd_cnt = 0`).
    pub fn ssthresh(&mut self, cwnd: f64) -> f64 {
        let w = (cwnd.floor() as u64).max(1);
        self.epoch_start = 0;
        self.last_max_cwnd = if w < self.last_max_cwnd && self.p.fast_convergence {
            (w * (BETA_SCALE + self.p.beta)) / (2 * BETA_SCALE)
        } else {
            w
        };
        self.loss_cwnd = w;
        self.snd_cwnd_cnt = 0;
        ((w * self.p.beta) / BETA_SCALE).max(2) as f64
    }

    /// A timeout: tcp-linux.cc enter_loss() asks `ssthresh()`, then
    /// `tcp_set_ca_state(TCP_CA_Loss)` runs `bictcp_reset()`.
    pub fn on_rto(&mut self, cwnd: f64) -> f64 {
        let ss = self.ssthresh(cwnd);
        self.reset();
        ss
    }
}
