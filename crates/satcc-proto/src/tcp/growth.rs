//! Window growth of the TCP sender, separate from loss recovery (as quinn's
//! `congestion::Controller` and neqo's `WindowAdjustment` separate them):
//! how cwnd opens on an ACK of new data outside recovery, and what ssthresh
//! and cwnd become on a congestion event. Detecting losses, the scoreboard,
//! pipe and what to send stay in [`super::sender`], whichever growth runs.
//!
//! * [`Growth::Reno`]: RFC 5681 §3.1 (the window every other TCP here uses);
//! * [`Growth::Cubic`]: CUBIC, RFC 9438;
//! * [`Growth::Hybla`]: TCP Hybla (Caini & Firrincieli, "TCP Hybla: a TCP
//!   enhancement for heterogeneous networks", Int. J. Satell. Commun.
//!   Network. 2004; Linux `net/ipv4/tcp_hybla.c` as a second reading);
//! * [`Growth::Bbr`]: BBR v1 as Linux's `tcp_bbr.c` (in [`super::bbr`]):
//!   it sets cwnd and a pacing rate on every ACK, in recovery too, so the
//!   sender calls it apart from the growth hooks here.

use super::bbr::BbrConfig;
use super::cubic_v21::{V21Ack, V21Params, V21State};
use super::hybla_linux::HyblaLinux;
use super::hystart::{SlowStart, SlowStartState, SsAck};
use crate::time::{Duration, Instant};

/// Which window growth a [`super::TcpSender`] runs.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Growth {
    /// RFC 5681 §3.1: slow start +1 per ACK, congestion avoidance +1/cwnd
    /// per ACK, ssthresh = max(FlightSize/2, 2) on loss.
    #[default]
    Reno,
    /// CUBIC (RFC 9438).
    Cubic(CubicConfig),
    /// TCP Hybla.
    Hybla(HyblaConfig),
    /// BBR v1 (Linux `tcp_bbr.c`), with pacing.
    Bbr(BbrConfig),
}

/// CUBIC's parameters (RFC 9438 §4.1 and §5 give the defaults).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CubicConfig {
    /// C, in segments / s³ (RFC 9438 §5: 0.4).
    pub c: f64,
    /// β_cubic, the multiplicative decrease factor (RFC 9438 §4.6: 0.7).
    pub beta: f64,
    /// Fast convergence (RFC 9438 §4.7, on by default: "SHOULD").
    pub fast_convergence: bool,
    /// The Reno-friendly region (RFC 9438 §4.3, on by default).
    pub reno_friendly: bool,
    /// How slow start ends (RFC 9438 §4.10: RFC 5681's by default,
    /// HyStart++ as an option; Linux's HyStart with profile `"linux"`).
    pub slow_start: SlowStart,
    /// Linux's growth floor before any loss: tcp_cubic.c bictcp_update()
    /// caps `cnt` at 20 ACKs per segment while `last_max_cwnd == 0` (no
    /// fast recovery since the connection began or the last timeout), so
    /// cwnd grows by at least cwnd/20 per RTT where the cubic curve from
    /// K = 0 is flatter ("the initial growth of cubic function may be too
    /// conservative when the available bandwidth is still unknown"). Not
    /// in RFC 9438 (default off; on with profile `"linux"`).
    pub linux_initial_growth: bool,
    /// ssthresh = β_cubic·cwnd on a congestion event, not RFC 9438 §4.6's
    /// β_cubic·flight_size: Linux's `cubictcp_recalc_ssthresh()` returns
    /// max(cwnd·β, 2), as §4.6 notes "some implementations" do. With RACK
    /// a recovery can end with far more outstanding than cwnd (segments
    /// marked lost are outstanding until their retransmissions are
    /// acknowledged), and β·flight_size then exceeds cwnd: on `geo` at PER
    /// 1e-2, a slow start that overflowed the queue ended each recovery
    /// with a larger window than it began with (8.3 Mb/s and 14 000
    /// retransmissions in 30 s). Default off; on with profile `"linux"`.
    pub ssthresh_from_cwnd: bool,
    /// Which CUBIC: RFC 9438 (the default) or the v2.1 of Linux 2.6.22
    /// that ns-2 2.35 runs ([`CubicVariant`]).
    pub variant: CubicVariant,
}

/// Which CUBIC a [`CubicConfig`] runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CubicVariant {
    /// RFC 9438.
    #[default]
    Rfc9438,
    /// CUBIC v2.1 as ns-2 2.35 runs it (`tcp/linux/src/tcp_cubic.c`, from
    /// linux-2.6.22.6, under `Agent/TCP/Linux`): the module's integer
    /// arithmetic, β = 819/1024 of cwnd, growth above W_max capped at 16
    /// segments per 100 ms, t measured with the minimum RTT added, `cnt =
    /// 50` ACKs per segment until the first loss, Reno's estimate with
    /// α = 8/23, and the delayed-ACK ratio dividing `cnt` (see
    /// `super::cubic_v21`). For like-for-like checks against ns-2; C and β
    /// come from [`CubicConfig::c`] and [`CubicConfig::beta`] rounded to the
    /// module's `bic_scale`/1024·10 and `beta`/1024.
    Linux2622,
}

impl Default for CubicConfig {
    fn default() -> Self {
        CubicConfig {
            c: 0.4,
            beta: 0.7,
            fast_convergence: true,
            reno_friendly: true,
            slow_start: SlowStart::Standard,
            linux_initial_growth: false,
            ssthresh_from_cwnd: false,
            variant: CubicVariant::Rfc9438,
        }
    }
}

impl CubicConfig {
    /// ns-2 2.35's `select_ca cubic` at its module defaults (tcp_cubic.c
    /// v2.1: `beta = 819`, `bic_scale = 41`, i.e. C = 410/1024,
    /// `fast_convergence = 1`, `tcp_friendliness = 1`).
    pub fn linux_2_6_22() -> Self {
        CubicConfig {
            c: 410.0 / 1024.0,
            beta: 819.0 / 1024.0,
            variant: CubicVariant::Linux2622,
            ..CubicConfig::default()
        }
    }
}

/// TCP Hybla's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HyblaConfig {
    /// RTT0, the reference RTT whose Reno the flow should match (the
    /// paper's §4 choice and Linux's `rtt0` module parameter: 25 ms).
    pub rtt0: Duration,
    /// Cap on the exponent ρ of the slow-start increase 2^ρ − 1. The paper
    /// has none; Linux's tcp_hybla.c uses `1 << min(rho, 16)` (the
    /// default here, 16), which matters only for ρ > 16 (RTT > 400 ms).
    pub max_ss_exponent: f64,
    /// Stop a slow-start increase at ssthresh, as Linux's tcp_hybla.c
    /// does ("clamp down slowstart cwnd to ssthresh value"; default true).
    /// Without it one ACK after a timeout, at ρ = 20, would open cwnd
    /// from 1 to the receiver's window in one step.
    pub clamp_slow_start: bool,
    /// Which Hybla: the paper's rules in real numbers (the default) or
    /// Linux 2.6.22's tcp_hybla.c as ns-2 2.35 runs it ([`HyblaVariant`]).
    pub variant: HyblaVariant,
}

/// Which TCP Hybla a [`HyblaConfig`] runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HyblaVariant {
    /// Caini & Firrincieli 2004 in real numbers, with
    /// [`HyblaConfig::max_ss_exponent`] and
    /// [`HyblaConfig::clamp_slow_start`].
    #[default]
    Caini2004,
    /// ns-2 2.35's `tcp/linux/src/tcp_hybla.c` (from linux-2.6.22.6):
    /// ρ in truncated steps of 1/8, increments in 1/128 of a segment, no
    /// cap on the exponent, Reno's growth outside `TCP_CA_Open`, ssthresh
    /// = cwnd/2 (see `super::hybla_linux`). For like-for-like checks
    /// against ns-2.
    Linux2622,
}

impl Default for HyblaConfig {
    fn default() -> Self {
        HyblaConfig {
            rtt0: Duration::from_millis(25),
            max_ss_exponent: 16.0,
            clamp_slow_start: true,
            variant: HyblaVariant::Caini2004,
        }
    }
}

/// What the growth algorithm is told about the path on each ACK.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AckInfo {
    /// Current time.
    pub now: Instant,
    /// Segments this ACK newly acknowledged cumulatively.
    pub acked: u64,
    /// Smoothed RTT, if measured.
    pub srtt: Option<Duration>,
    /// This ACK's RTT sample (HyStart's delay).
    pub rtt: Option<Duration>,
    /// SND.UNA after the ACK and one past the highest segment sent
    /// (HyStart's rounds).
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// Payload bytes of a segment.
    pub mss: u64,
    /// Not in fast or timeout recovery (Linux's `TCP_CA_Open`; CUBIC
    /// v2.1 tracks its ACK ratio only then).
    pub open: bool,
}

/// The state of a [`Growth`].
#[derive(Clone, Debug)]
pub(crate) enum GrowthState {
    Reno,
    Cubic(CubicState),
    Hybla(HyblaState),
}

/// Hybla's state: the RTT ρ is computed from.
#[derive(Clone, Debug)]
pub(crate) struct HyblaState {
    pub cfg: HyblaConfig,
    /// The smallest SRTT seen (Linux `minrtt_us`): ρ follows the path's
    /// propagation delay, not the queue the flow builds.
    pub min_srtt: Option<Duration>,
    /// tcp_hybla.c's state, for [`HyblaVariant::Linux2622`].
    pub linux: Option<HyblaLinux>,
}

/// RFC 9438 §4.1.2 variables.
#[derive(Clone, Debug, Default)]
pub(crate) struct CubicState {
    pub cfg: CubicConfig,
    /// W_max, segments: cwnd before the last reduction (§4.6, §4.7).
    pub w_max: Option<f64>,
    /// cwnd_prior: cwnd before the last reduction (§4.3 uses it for α).
    pub cwnd_prior: f64,
    /// t_epoch of the current congestion avoidance stage (`None` until
    /// its first ACK).
    pub epoch: Option<Instant>,
    /// K of the current stage (§4.2 eq. 2), seconds.
    pub k: f64,
    /// W_est (§4.3).
    pub w_est: f64,
    /// The last reduction was a retransmission timeout (§4.8: the next
    /// stage starts with K = 0 and W_max = cwnd_epoch).
    pub after_rto: bool,
    /// Slow start's exit (HyStart, HyStart++).
    pub ss: SlowStartState,
    /// A fast recovery has set W_max since the start or the last timeout
    /// (tcp_cubic.c `last_max_cwnd != 0`).
    pub reduced: bool,
    /// CUBIC v2.1's own state, for [`CubicVariant::Linux2622`].
    pub v21: Option<V21State>,
}

impl CubicState {
    /// W_cubic(t) of RFC 9438 §4.2 eq. 1: C·(t − K)³ + W_max, t in
    /// seconds.
    pub fn w_cubic(&self, t: f64, w_max: f64) -> f64 {
        let d = t - self.k;
        self.cfg.c * d * d * d + w_max
    }

    /// α_cubic of RFC 9438 §4.3 eq. 4: 3(1 − β)/(1 + β), or 1 once W_est
    /// has reached cwnd_prior.
    fn alpha(&self) -> f64 {
        if self.w_est >= self.cwnd_prior {
            1.0
        } else {
            3.0 * (1.0 - self.cfg.beta) / (1.0 + self.cfg.beta)
        }
    }
}

impl GrowthState {
    pub fn new(g: Growth) -> Self {
        match g {
            // BBR's window is set by `super::bbr::BbrState`, never here.
            Growth::Reno | Growth::Bbr(_) => GrowthState::Reno,
            Growth::Cubic(cfg) => GrowthState::Cubic(CubicState {
                cfg,
                ss: SlowStartState::new(cfg.slow_start),
                v21: (cfg.variant == CubicVariant::Linux2622).then(|| {
                    V21State::new(V21Params::new(
                        cfg.c,
                        cfg.beta,
                        cfg.fast_convergence,
                        cfg.reno_friendly,
                    ))
                }),
                ..CubicState::default()
            }),
            Growth::Hybla(cfg) => GrowthState::Hybla(HyblaState {
                cfg,
                min_srtt: None,
                linux: (cfg.variant == HyblaVariant::Linux2622).then(|| HyblaLinux::new(cfg.rtt0)),
            }),
        }
    }

    /// Before [`Self::on_ack`], on the same ACK: the ssthresh that ends
    /// slow start here, if HyStart or HyStart++ ends it (tcp_cubic.c runs
    /// `pkts_acked` before `cong_avoid`, so the ACK that ends slow start
    /// already grows the window by congestion avoidance).
    pub fn slow_start_exit(&mut self, cwnd: f64, ssthresh: f64, a: AckInfo) -> Option<f64> {
        match self {
            GrowthState::Cubic(s) if cwnd < ssthresh => s.ss.on_ack(
                cwnd,
                SsAck {
                    now: a.now,
                    rtt: a.rtt,
                    srtt: a.srtt,
                    snd_una: a.snd_una,
                    snd_nxt: a.snd_nxt,
                    mss: a.mss,
                },
            ),
            _ => None,
        }
    }

    /// The new cwnd after an ACK of new data outside recovery, before the
    /// cap on the window.
    pub fn on_ack(&mut self, cwnd: f64, ssthresh: f64, peach: bool, a: AckInfo) -> f64 {
        match self {
            GrowthState::Reno => reno_on_ack(cwnd, ssthresh, peach),
            GrowthState::Hybla(h) => {
                if let Some(l) = h.linux.as_mut() {
                    return l.on_ack(cwnd, ssthresh, a.srtt, a.open);
                }
                if let Some(r) = a.srtt {
                    h.min_srtt = Some(h.min_srtt.map_or(r, |m| m.min(r)));
                }
                let rho = hybla_rho(h.min_srtt, h.cfg.rtt0);
                if cwnd < ssthresh {
                    // Hybla §3 eq. (6): slow start W += 2^ρ − 1 per ACK.
                    // The exponent is capped as Linux caps it
                    // (`1 << min(rho, 16)`), a parameter.
                    let w = cwnd + rho.min(h.cfg.max_ss_exponent).exp2() - 1.0;
                    if h.cfg.clamp_slow_start {
                        w.min(ssthresh)
                    } else {
                        w
                    }
                } else {
                    // Hybla §3 eq. (6): congestion avoidance W += ρ²/W per
                    // ACK.
                    cwnd + rho * rho / cwnd
                }
            }
            GrowthState::Cubic(s) => {
                if let Some(v) = s.v21.as_mut() {
                    return v.on_ack(
                        cwnd,
                        ssthresh,
                        V21Ack {
                            now: a.now,
                            acked: a.acked,
                            rtt: a.rtt,
                            open: a.open,
                        },
                    );
                }
                if cwnd < ssthresh {
                    // RFC 9438 §4.10: slow start as RFC 5681, or HyStart++
                    // (RFC 9406) or Linux's HyStart, which only decide
                    // where it ends (and HyStart++'s CSS growth).
                    return cwnd + s.ss.increase(a.acked);
                }
                let t_epoch = match s.epoch {
                    Some(t) => t,
                    None => {
                        s.start_epoch(cwnd);
                        s.epoch = Some(a.now);
                        a.now
                    }
                };
                let w_max = s.w_max.unwrap_or(cwnd);
                let rtt = a.srtt.map_or(0.0, |d| d.as_secs_f64());
                let t = a.now.saturating_since(t_epoch).as_secs_f64();
                // §4.2: target = W_cubic(t + RTT) clamped to [cwnd, 1.5 cwnd].
                let target = s.w_cubic(t + rtt, w_max).clamp(cwnd, 1.5 * cwnd);
                // §4.3 eq. 4: W_est grows by α·segments_acked/cwnd.
                s.w_est += s.alpha() * a.acked as f64 / cwnd;
                if s.cfg.reno_friendly && s.w_cubic(t, w_max) < s.w_est {
                    // §4.3: the Reno-friendly region: cwnd = W_est.
                    return s.w_est.max(cwnd);
                }
                // §4.4/§4.5: cwnd += (target − cwnd)/cwnd per ACK.
                let mut inc = (target - cwnd) / cwnd;
                if s.cfg.linux_initial_growth && !s.reduced {
                    // tcp_cubic.c: `if (ca->last_max_cwnd == 0 && ca->cnt
                    // > 20) ca->cnt = 20;` (cwnd += 1/cnt per ACK).
                    inc = inc.max(1.0 / 20.0);
                }
                cwnd + inc
            }
        }
    }

    /// Reno's growth, the one [`GrowthState`] without per-ACK state
    /// (the sender runs it inline, without building an [`AckInfo`]).
    pub fn is_reno(&self) -> bool {
        matches!(self, GrowthState::Reno)
    }

    /// ssthresh and cwnd on entering fast recovery, `flight` being RFC
    /// 5681's FlightSize (segments), `cwnd` the window before the cut.
    /// Reno's own rules are the sender's; this answers only for the others.
    pub fn on_congestion(&mut self, flight: u64, cwnd: f64) -> Option<f64> {
        match self {
            // tcp_reno_ssthresh(): half of cwnd, not of FlightSize.
            GrowthState::Hybla(HyblaState { linux: Some(l), .. }) => Some(l.ssthresh(cwnd)),
            GrowthState::Reno | GrowthState::Hybla(_) => None,
            GrowthState::Cubic(s) => {
                s.ss.on_congestion();
                s.reduced = true;
                if let Some(v) = s.v21.as_mut() {
                    // v2.1 scales cwnd, not FlightSize.
                    return Some(v.ssthresh(cwnd));
                }
                Some(s.reduce(flight, cwnd))
            }
        }
    }

    /// ssthresh on a retransmission timeout (RFC 9438 §4.8: β_cubic as in
    /// §4.6, and the next stage starts over with K = 0).
    pub fn on_rto(&mut self, flight: u64, cwnd: f64) -> Option<f64> {
        match self {
            GrowthState::Hybla(HyblaState { linux: Some(l), .. }) => Some(l.ssthresh(cwnd)),
            GrowthState::Reno | GrowthState::Hybla(_) => None,
            GrowthState::Cubic(s) => {
                if let Some(v) = s.v21.as_mut() {
                    s.ss.on_rto();
                    return Some(v.on_rto(cwnd));
                }
                let ss = s.reduce(flight, cwnd);
                s.after_rto = true;
                s.ss.on_rto();
                // cubictcp_state(TCP_CA_Loss) -> bictcp_reset():
                // last_max_cwnd = 0.
                s.reduced = false;
                Some(ss)
            }
        }
    }
}

impl CubicState {
    /// The first ACK of a congestion avoidance stage (RFC 9438 §4.2):
    /// K from eq. 2 and W_est = cwnd_epoch (§4.3).
    fn start_epoch(&mut self, cwnd_epoch: f64) {
        if self.after_rto || self.w_max.is_none() {
            // §4.8 (and a first stage with no loss yet): W_max is the
            // window at the start of the stage, K = 0.
            self.w_max = Some(cwnd_epoch);
            self.after_rto = false;
        }
        let w_max = self.w_max.unwrap_or(cwnd_epoch);
        // §4.2 eq. 2: K = cbrt((W_max − cwnd_epoch)/C).
        self.k = ((w_max - cwnd_epoch).max(0.0) / self.cfg.c).cbrt();
        self.w_est = cwnd_epoch;
    }

    /// RFC 9438 §4.6 (and §4.7 fast convergence): returns ssthresh.
    fn reduce(&mut self, flight: u64, cwnd: f64) -> f64 {
        // §4.6: ssthresh = flight_size · β_cubic, at least 2 segments
        // (Linux: cwnd · β, CubicConfig::ssthresh_from_cwnd).
        let base = if self.cfg.ssthresh_from_cwnd {
            cwnd
        } else {
            flight as f64
        };
        let ssthresh = (base * self.cfg.beta).max(2.0);
        self.cwnd_prior = cwnd;
        // §4.7: a flow that is losing ground releases some for new flows.
        self.w_max = Some(match self.w_max {
            Some(w) if self.cfg.fast_convergence && cwnd < w => cwnd * (1.0 + self.cfg.beta) / 2.0,
            _ => cwnd,
        });
        // A new congestion avoidance stage starts after recovery.
        self.epoch = None;
        self.w_est = 0.0;
        ssthresh
    }
}

/// Hybla's ρ = RTT/RTT0, at least 1 (paper §3; before any RTT sample the
/// flow is Reno, ρ = 1).
pub(crate) fn hybla_rho(srtt: Option<Duration>, rtt0: Duration) -> f64 {
    match srtt {
        Some(r) if rtt0.0 > 0 => (r.0 as f64 / rtt0.0 as f64).max(1.0),
        _ => 1.0,
    }
}

/// Reno's window growth for one ACK of new data outside recovery, before
/// the cap on the window ([`GrowthState::on_ack`] for [`Growth::Reno`];
/// Reno has no slow-start exit of its own).
#[inline]
pub fn reno_on_ack(cwnd: f64, ssthresh: f64, peach: bool) -> f64 {
    // TCP-Peach has no slow start: Sudden Start is followed by
    // Congestion Avoidance (paper 002 Fig. 1).
    let inc = if cwnd < ssthresh && !peach {
        // RFC 5681 §3.1 slow start, eq. (2): one SMSS per ACK
        // (ns-2 counts ACKs).
        1.0
    } else {
        // Congestion avoidance, eq. (3): SMSS*SMSS/cwnd per ACK.
        1.0 / cwnd
    };
    cwnd + inc
}
