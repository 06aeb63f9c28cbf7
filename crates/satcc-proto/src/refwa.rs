//! REFWA (paper 003): a satellite router's window controller.
//!
//! Pure computation: the driver (the simulator's link hook) reports every
//! data packet and ACK of the outgoing link it guards, with the TTL it
//! arrived with and the link's current queue, and writes the returned window
//! into the ACK. Nothing here owns a timer: recomputation happens lazily on
//! the first packet at or after the next epoch.
//!
//! Flows. A flow counts (joins the group of its RTT estimate) once one of
//! its data packets has been seen; its ACKs supply H_b and carry the
//! window back. A flow seen only through ACKs takes no share.
//!
//! Timeline. The first data packet opens epoch 0 (t₀): it fixes a
//! provisional RTT_avg (that flow's estimate), the first queue sample Q(0)
//! and the first epoch length. Feedback is first computed at t₁, once the
//! flow table holds a whole slot of flows (paper 003 §III-A.2: the router
//! uses the flows that traversed it during the previous slot); until then
//! ACKs pass unchanged. Every recomputation n then (1) drops flows idle for
//! more than δ, (2) updates RTT_avg, (3) steps Υ by eq. 2, (4) recomputes
//! every group's F_k and (5) schedules the next epoch RTT_avg later. If no
//! flow is left after (1), the controller waits for a data packet to open
//! a fresh t₀.
//!
//! Cost. Per packet: one hash-map lookup and, only when a flow changes
//! group, a move in a [`BTreeMap`] of at most M groups. Per epoch: a sweep
//! of the flow table (comparisons only; with δ = RTT_avg every flow it
//! keeps was seen within about the last epoch, so the sweep is O(1)
//! amortised per packet; a δ override of k epochs makes it O(k)) and the
//! arithmetic of eq. 2, which is counted (paper 003 App. II) and is linear
//! in the number of groups M, independent of the number of flows.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use crate::rng::Rng;
use crate::time::{Duration, Instant};

/// The shortest epoch the controller runs (1 ms): a zero ISL delay or a
/// large RTT error could drive RTT_avg to zero, and a zero epoch would
/// recompute on every packet.
pub const MIN_EPOCH: Duration = Duration::from_millis(1);

/// A flow's 5-tuple.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    /// Source address (of the data direction).
    pub src: u32,
    /// Destination address (of the data direction).
    pub dst: u32,
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// IP protocol number.
    pub proto: u8,
}

/// Controller parameters (paper 003 §III, eq. 2; defaults from §V).
#[derive(Clone, Debug)]
pub struct RefwaConfig {
    /// φ, the gain on the bandwidth-delay error (default 1.5).
    pub phi: f64,
    /// ψ, the gain on the free buffer (default 0.5).
    pub psi: f64,
    /// α, the RTT-fairness exponent (default 1).
    pub alpha: f64,
    /// Delay of one inter-satellite link (default 20 ms).
    pub isl_delay: Duration,
    /// Bandwidth Bw of the guarded link, bits per second.
    pub bandwidth_bps: u64,
    /// Buffer B of the guarded link, packets.
    pub buffer_pkts: u64,
    /// Packet size used to turn Bw·RTT into packets, bytes (default 1000).
    pub packet_bytes: u32,
    /// TTL every packet starts with at its source.
    pub initial_ttl: u8,
    /// Relative RTT-estimate error σ: each flow's estimate is multiplied by
    /// a factor drawn uniformly from [1−σ, 1+σ] (paper 003 Fig. 7). 0 = exact.
    /// The factor is drawn once per flow from `seed` and the flow's 5-tuple,
    /// so it does not depend on the order flows arrive in. σ ≥ 1 allows
    /// estimates of zero and is not meaningful.
    pub rtt_error: f64,
    /// Seed for the RTT-error draws.
    pub seed: u64,
    /// Gain g of the EWMA that tracks RTT_avg across epochs,
    /// RTT_avg ← RTT_avg + g·(sample − RTT_avg), where the sample is the
    /// flow-weighted mean RTT estimate of the active flows (paper 003
    /// §III-A.2 footnote 1; App. II gives the mean). Default 0.5; 1 uses
    /// the last slot's mean alone.
    pub rtt_avg_gain: f64,
    /// Activity threshold δ: a flow not seen for longer than δ leaves its
    /// group at the next epoch. `None` (default) uses δ = RTT_avg, as paper
    /// 003 §III-A.2 does.
    pub delta: Option<Duration>,
}

impl Default for RefwaConfig {
    fn default() -> Self {
        RefwaConfig {
            phi: 1.5,
            psi: 0.5,
            alpha: 1.0,
            isl_delay: Duration::from_millis(20),
            bandwidth_bps: 10_000_000,
            buffer_pkts: 100,
            packet_bytes: 1000,
            initial_ttl: 64,
            rtt_error: 0.0,
            seed: 0,
            rtt_avg_gain: 0.5,
            delta: None,
        }
    }
}

/// Counters and the current control state.
#[derive(Clone, Debug, Default)]
pub struct RefwaStats {
    /// Recomputations of Υ and F_k so far.
    pub recomputations: u64,
    /// Arithmetic operations (add, subtract, multiply, divide, power) of the
    /// last recomputation (paper 003 App. II): 7 per group plus 13, or plus
    /// 10 at the first, which has no EWMA step.
    pub ops_last: u64,
    /// Largest arithmetic-operation count of any recomputation.
    pub ops_max: u64,
    /// Current Υ(n), packets.
    pub upsilon: f64,
    /// Current RTT_avg.
    pub rtt_avg: Duration,
    /// Flows counted in groups: those active at the last epoch plus those
    /// whose data was first seen since (idle flows are dropped at epochs;
    /// flows seen only through ACKs are not counted).
    pub active_flows: usize,
    /// Hop-count groups with at least one flow in the table.
    pub groups: usize,
    /// ACKs whose window was lowered.
    pub acks_rewritten: u64,
}

/// One group's state, for inspection.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GroupInfo {
    /// The RTT estimate shared by the group's flows.
    pub rtt: Duration,
    /// n_k: flows in the group.
    pub flows: usize,
    /// F_k from the last recomputation, packets (before rounding down to
    /// whole packets); `None` for a group formed since.
    pub window: Option<f64>,
}

/// Per-flow state of the flow table (paper 003 §III-A.2).
#[derive(Clone, Debug)]
struct Flow {
    last_seen: Instant,
    /// H_f: hops from the source to here, from the data packets' TTL.
    h_f: Option<u8>,
    /// H_b: hops from the receiver to here, from the ACKs' TTL.
    h_b: Option<u8>,
    /// The flow's RTT-estimate error factor, 1 when σ = 0.
    err: f64,
    /// The flow's RTT estimate.
    rtt: Duration,
    /// The key of the group the flow is counted in; `None` while only its
    /// ACKs have been seen.
    group: Option<Duration>,
}

#[derive(Clone, Debug)]
struct Group {
    /// n_k.
    flows: usize,
    /// RTT_k in seconds, kept so that the epoch arithmetic needs no unit
    /// conversion.
    rtt_s: f64,
    /// RTT_k^α of the last recomputation.
    weight: f64,
    /// F_k of the last recomputation; `None` until the group has been
    /// through one.
    window: Option<f64>,
}

/// Counts the arithmetic of one recomputation (paper 003 App. II). Every
/// add, subtract, multiply, divide and power of eq. 2 goes through it, so
/// the count cannot drift from the code.
#[derive(Default)]
struct Ops(u64);

impl Ops {
    fn add(&mut self, a: f64, b: f64) -> f64 {
        self.0 += 1;
        a + b
    }
    fn sub(&mut self, a: f64, b: f64) -> f64 {
        self.0 += 1;
        a - b
    }
    fn mul(&mut self, a: f64, b: f64) -> f64 {
        self.0 += 1;
        a * b
    }
    fn div(&mut self, a: f64, b: f64) -> f64 {
        self.0 += 1;
        a / b
    }
    fn pow(&mut self, a: f64, b: f64) -> f64 {
        self.0 += 1;
        a.powf(b)
    }
}

/// One step of paper 003 eq. 2:
/// Υ(n) = Υ(n−1) + φ(Bw·RTT_avg − Υ(n−1)) + ψ(B − Q(n−1)),
/// all in packets, clamped at 0 (an aggregate window cannot be negative;
/// with Υ < 0 every F_k would be clamped to one packet anyway).
pub fn upsilon_step(prev: f64, bw_rtt: f64, buffer: f64, queue: f64, phi: f64, psi: f64) -> f64 {
    upsilon_step_counted(&mut Ops::default(), prev, bw_rtt, buffer, queue, phi, psi)
}

fn upsilon_step_counted(
    ops: &mut Ops,
    prev: f64,
    bw_rtt: f64,
    buffer: f64,
    queue: f64,
    phi: f64,
    psi: f64,
) -> f64 {
    let spare = ops.sub(bw_rtt, prev);
    let free = ops.sub(buffer, queue);
    let a = ops.mul(phi, spare);
    let b = ops.mul(psi, free);
    let up = ops.add(prev, a);
    // f64::max also maps a NaN from degenerate inputs to 0.
    ops.add(up, b).max(0.0)
}

/// A fixed multiply-rotate hash (the rustc/Firefox "Fx" hash) for the flow
/// table: every packet looks its flow up, SipHash's DoS resistance buys
/// nothing inside a simulation, and a fixed hash keeps the table's layout
/// the same from run to run.
#[derive(Clone, Copy, Debug, Default)]
pub struct FlowHasher(u64);

impl Hasher for FlowHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.add(u64::from(b));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    fn write_u16(&mut self, i: u16) {
        self.add(u64::from(i));
    }
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

impl FlowHasher {
    fn add(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// A REFWA controller for one outgoing satellite link.
#[derive(Debug)]
pub struct Refwa {
    cfg: RefwaConfig,
    stats: RefwaStats,
    flows: HashMap<FlowKey, Flow, BuildHasherDefault<FlowHasher>>,
    /// Groups keyed by their RTT estimate: ordered, so that the epoch sums
    /// are taken in the same order on every run.
    groups: BTreeMap<Duration, Group>,
    /// Bw in packets per second.
    pkts_per_sec: f64,
    /// When the next recomputation is due; `None` before the first packet.
    next_epoch: Option<Instant>,
    /// RTT_avg in seconds (provisional before the first recomputation).
    rtt_avg_s: f64,
    /// No recomputation since t₀: the next one seeds RTT_avg and Υ(0).
    fresh: bool,
    /// Υ(n) of the last recomputation.
    upsilon: f64,
    /// The queue sampled at the last epoch: Q(n−1) for the next step.
    q_prev: f64,
}

impl Refwa {
    /// A controller with no flows yet.
    pub fn new(cfg: RefwaConfig, _now: Instant) -> Self {
        let pkts_per_sec = cfg.bandwidth_bps as f64 / (8.0 * f64::from(cfg.packet_bytes.max(1)));
        Refwa {
            cfg,
            stats: RefwaStats::default(),
            flows: HashMap::default(),
            groups: BTreeMap::new(),
            pkts_per_sec,
            next_epoch: None,
            rtt_avg_s: 0.0,
            fresh: true,
            upsilon: 0.0,
            q_prev: 0.0,
        }
    }

    /// A data packet of `key` is about to enter the guarded link with `ttl`
    /// left; `queue_pkts` packets wait in its queue.
    pub fn on_data(&mut self, now: Instant, key: FlowKey, ttl: u8, queue_pkts: u64) {
        let hops = self.cfg.initial_ttl.saturating_sub(ttl);
        self.observe(now, key, Some(hops), None);
        self.tick(now, queue_pkts);
    }

    /// An ACK of the flow `key` (the 5-tuple of its *data* direction) passes
    /// this satellite with `ttl` left and advertised window `rwnd` packets;
    /// returns the window to write, never above `rwnd`.
    ///
    /// The window is F_k of the flow's group from the last recomputation,
    /// rounded down. `rwnd` passes unchanged before the first recomputation,
    /// for a flow whose data has not been seen here (it is in no group),
    /// and for a flow whose group formed after the last recomputation
    /// (until the next one, at most RTT_avg later).
    pub fn on_ack(
        &mut self,
        now: Instant,
        key: FlowKey,
        ttl: u8,
        rwnd: u32,
        queue_pkts: u64,
    ) -> u32 {
        let hops = self.cfg.initial_ttl.saturating_sub(ttl);
        self.observe(now, key, None, Some(hops));
        self.tick(now, queue_pkts);
        match self.window_of(&key) {
            // Paper 003 §III-C: RWND is only ever lowered, so the tightest
            // router on the path ends up in the header.
            Some(w) if w < f64::from(rwnd) => {
                self.stats.acks_rewritten += 1;
                // Rounded down so the group's windows never add up to more
                // than Υ; w ≥ 1 already.
                w.floor() as u32
            }
            _ => rwnd,
        }
    }

    /// Configuration.
    pub fn config(&self) -> &RefwaConfig {
        &self.cfg
    }

    /// Counters and state.
    pub fn stats(&self) -> RefwaStats {
        let mut s = self.stats.clone();
        s.active_flows = self.groups.values().map(|g| g.flows).sum();
        s.groups = self.groups.len();
        s
    }

    /// The groups, shortest RTT first.
    pub fn groups(&self) -> Vec<GroupInfo> {
        self.groups
            .iter()
            .map(|(&rtt, g)| GroupInfo {
                rtt,
                flows: g.flows,
                window: g.window,
            })
            .collect()
    }

    /// The RTT estimate of `key` (eq. 1, with its error factor), if the
    /// flow is in the table.
    pub fn flow_rtt(&self, key: &FlowKey) -> Option<Duration> {
        self.flows.get(key).map(|f| f.rtt)
    }

    /// The window F_k the flow's ACKs would get now (unrounded), if it is
    /// in a group that has been through a recomputation.
    pub fn window_of(&self, key: &FlowKey) -> Option<f64> {
        let group = self.flows.get(key)?.group?;
        self.groups.get(&group)?.window
    }

    /// Records a packet of `key` with the hop count its direction gives.
    fn observe(&mut self, now: Instant, key: FlowKey, h_f: Option<u8>, h_b: Option<u8>) {
        if !self.flows.contains_key(&key) {
            let err = self.error_factor(&key);
            self.flows.insert(
                key,
                Flow {
                    last_seen: now,
                    h_f: None,
                    h_b: None,
                    err,
                    rtt: Duration::ZERO,
                    group: None,
                },
            );
        }
        let Some(flow) = self.flows.get_mut(&key) else {
            return;
        };
        flow.last_seen = now;
        if h_f.is_some() {
            flow.h_f = h_f;
        }
        if h_b.is_some() {
            flow.h_b = h_b;
        }
        flow.rtt = estimate(self.cfg.isl_delay, flow.h_f, flow.h_b, flow.err);
        // Υ is the aggregate window of the flows loading the guarded link
        // (paper 003 §III-B), so only flows whose data has crossed it take
        // a share; one known from its ACKs alone is remembered for H_b.
        let group = flow.h_f.map(|_| flow.rtt);
        if group != flow.group {
            // A flow moves on its first data packet, on the first packet of
            // the other direction (the mirrored hop count gives way to the
            // real one) and on a path change (handover, paper 003 §VI).
            if let Some(old) = flow.group {
                leave(&mut self.groups, old);
            }
            if let Some(rtt) = group {
                self.groups
                    .entry(rtt)
                    .or_insert_with(|| Group {
                        flows: 0,
                        rtt_s: rtt.as_secs_f64(),
                        weight: 0.0,
                        window: None,
                    })
                    .flows += 1;
            }
            flow.group = group;
        }
    }

    /// The RTT-error factor of a new flow, uniform in [1−σ, 1+σ]. Drawn
    /// from the seed and the 5-tuple rather than from one stream in arrival
    /// order, so that a flow that goes idle and comes back keeps its error
    /// and a run does not depend on which of two simultaneous flows the
    /// driver reports first.
    fn error_factor(&self, key: &FlowKey) -> f64 {
        let sigma = self.cfg.rtt_error;
        if sigma <= 0.0 {
            return 1.0;
        }
        let addrs = (u64::from(key.src) << 32) | u64::from(key.dst);
        let rest =
            (u64::from(key.sport) << 32) | (u64::from(key.dport) << 16) | u64::from(key.proto);
        let mut rng = Rng::stream(Rng::stream(self.cfg.seed, addrs).next_u64(), rest);
        (1.0 + sigma * (2.0 * rng.next_f64() - 1.0)).max(0.0)
    }

    /// Opens epoch 0 on the first data packet, recomputes when an epoch is
    /// due.
    fn tick(&mut self, now: Instant, queue_pkts: u64) {
        match self.next_epoch {
            None => {
                // t₀: the only flow in a group is the one just seen, so its
                // estimate stands in for RTT_avg until t₁ (it sets δ and
                // the first epoch's length only).
                let Some(&rtt) = self.groups.keys().next() else {
                    return;
                };
                self.rtt_avg_s = rtt.as_secs_f64();
                self.stats.rtt_avg = rtt;
                self.q_prev = queue_pkts as f64;
                self.next_epoch = Some(now + rtt.max(MIN_EPOCH));
            }
            Some(t) if now >= t => self.recompute(now, queue_pkts),
            Some(_) => {}
        }
    }

    fn recompute(&mut self, now: Instant, queue_pkts: u64) {
        // Paper 003 §III-A.2: δ of this slot is the RTT_avg of the last.
        let delta = self.cfg.delta.unwrap_or(self.stats.rtt_avg);
        let groups = &mut self.groups;
        self.flows.retain(|_, f| {
            let active = now.saturating_since(f.last_seen) <= delta;
            if let (false, Some(g)) = (active, f.group) {
                leave(groups, g);
            }
            active
        });
        if self.groups.is_empty() {
            // Only ACK-only flows are left (the packet that got here was
            // one): nothing loads the link, so the controller waits for the
            // next data packet to open a fresh t₀ rather than share Υ among
            // no one.
            self.next_epoch = None;
            self.fresh = true;
            return;
        }

        let mut ops = Ops::default();
        let cfg = &self.cfg;

        // RTT_avg: flow-weighted mean of the active flows' estimates
        // (paper 003 App. II), smoothed across epochs (§III-A.2 fn. 1).
        let mut n_total = 0.0;
        let mut rtt_sum = 0.0;
        for g in self.groups.values() {
            let n = g.flows as f64;
            let nr = ops.mul(n, g.rtt_s);
            rtt_sum = ops.add(rtt_sum, nr);
            n_total = ops.add(n_total, n);
        }
        let sample = ops.div(rtt_sum, n_total);
        let first = self.fresh;
        self.fresh = false;
        self.rtt_avg_s = if first {
            // The provisional t₀ value came from one flow; the first full
            // slot's mean replaces it rather than being averaged with it.
            sample
        } else {
            let d = ops.sub(sample, self.rtt_avg_s);
            let step = ops.mul(cfg.rtt_avg_gain, d);
            ops.add(self.rtt_avg_s, step)
        };
        let rtt_avg = Duration(ops.mul(self.rtt_avg_s, 1e9).round().max(0.0) as u64);

        // Paper 003 §III-B eq. 2, Bw·RTT_avg in packets.
        let bw_rtt = ops.mul(self.pkts_per_sec, self.rtt_avg_s);
        if first {
            // Υ(0) = Bw·RTT_avg: eq. 2 steers the aggregate window to the
            // pipe (§III-B; App. I's equilibrium is Bw·RTT_avg +
            // ψB/(φ+ψ)), so starting on the pipe zeroes the φ term's error
            // and Υ(1) = Bw·RTT_avg + ψ(B − Q(0)). Υ(0) = 0 would instead
            // rely on φ > 1 to overshoot up to the pipe in one step.
            self.upsilon = bw_rtt;
        }
        self.upsilon = upsilon_step_counted(
            &mut ops,
            self.upsilon,
            bw_rtt,
            cfg.buffer_pkts as f64,
            // Q(n−1): sampled at the previous epoch (App. I: the queue the
            // windows of the previous slot left behind).
            self.q_prev,
            cfg.phi,
            cfg.psi,
        );
        // This call's queue is Q(n), used by the next step.
        self.q_prev = queue_pkts as f64;

        // F_k = RTT_k^α / Σ_j n_j RTT_j^α · Υ(n).
        let mut denom = 0.0;
        for g in self.groups.values_mut() {
            g.weight = ops.pow(g.rtt_s, cfg.alpha);
            let nw = ops.mul(g.flows as f64, g.weight);
            denom = ops.add(denom, nw);
        }
        let scale = ops.div(self.upsilon, denom);
        for g in self.groups.values_mut() {
            // At least one packet: a zero window would stall the flow until
            // its persist timer, which no router feedback can then undo.
            g.window = Some(ops.mul(g.weight, scale).max(1.0));
        }

        self.next_epoch = Some(now + rtt_avg.max(MIN_EPOCH));
        let s = &mut self.stats;
        s.recomputations += 1;
        s.ops_last = ops.0;
        s.ops_max = s.ops_max.max(ops.0);
        s.upsilon = self.upsilon;
        s.rtt_avg = rtt_avg;
    }
}

/// Paper 003 eq. 1, RTT ≈ 2·(H_b + H_f + 2)·ISL_delay, times the flow's
/// error factor. Until both directions have been seen the known hop count
/// stands in for the missing one, i.e. this router is taken to sit mid-path:
/// the unbiased guess for a symmetric pinned path, where taking the missing
/// count as 0 would always underestimate.
fn estimate(isl: Duration, h_f: Option<u8>, h_b: Option<u8>, err: f64) -> Duration {
    let (f, b) = match (h_f, h_b) {
        (Some(f), Some(b)) => (f, b),
        (Some(h), None) | (None, Some(h)) => (h, h),
        (None, None) => (0, 0),
    };
    let base = isl.saturating_mul(2 * (u64::from(f) + u64::from(b) + 2));
    if err == 1.0 {
        base
    } else {
        Duration((base.as_nanos() as f64 * err).round() as u64)
    }
}

/// Takes one flow out of the group keyed `rtt`, dropping the group when it
/// empties (M counts only groups with flows).
fn leave(groups: &mut BTreeMap<Duration, Group>, rtt: Duration) {
    if let Some(g) = groups.get_mut(&rtt) {
        g.flows -= 1;
        if g.flows == 0 {
            groups.remove(&rtt);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u32) -> FlowKey {
        FlowKey {
            src: i,
            dst: 10_000 + i,
            sport: 40_000,
            dport: 80,
            proto: 6,
        }
    }

    /// A flow and its hop counts (H_f, H_b) at the router under test.
    #[derive(Clone, Copy)]
    struct Path {
        key: FlowKey,
        h_f: u8,
        h_b: u8,
    }

    fn path(i: u32, h_f: u8, h_b: u8) -> Path {
        Path {
            key: key(i),
            h_f,
            h_b,
        }
    }

    const RWND: u32 = 100_000;

    /// Every `step` from `from` until before `to`: one data packet and one
    /// ACK per flow, the queue at `queue`. Returns the next unused time.
    fn drive(
        r: &mut Refwa,
        paths: &[Path],
        from: Instant,
        to: Instant,
        step: Duration,
        queue: u64,
    ) -> Instant {
        let ttl0 = r.config().initial_ttl;
        let mut t = from;
        while t < to {
            for p in paths {
                r.on_data(t, p.key, ttl0 - p.h_f, queue);
                r.on_ack(t, p.key, ttl0 - p.h_b, RWND, queue);
            }
            t += step;
        }
        t
    }

    fn secs(s: f64) -> Instant {
        Instant(Duration::from_secs_f64(s).as_nanos())
    }

    const STEP: Duration = Duration::from_millis(10);

    /// Bw·RTT in packets for the default 10 Mb/s, 1000-byte packets.
    fn bw_rtt(rtt_s: f64) -> f64 {
        1250.0 * rtt_s
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1.0)
    }

    #[test]
    fn upsilon_converges_with_constant_queue() {
        // Fixed point of eq. 2 with Q held: Υ* = Bw·RTT + ψ(B − Q)/φ.
        let (bw, b) = (300.0, 100.0);
        for (phi, psi, q) in [(1.5, 0.5, 40.0), (0.8, 0.3, 10.0), (1.9, 0.9, 90.0)] {
            let want = bw + psi * (b - q) / phi;
            let mut y = 0.0;
            for _ in 0..400 {
                y = upsilon_step(y, bw, b, q, phi, psi);
            }
            assert!(close(y, want, 1e-9), "φ={phi} ψ={psi}: Υ={y}, want {want}");
        }

        // The same through the controller: one group, RTT 240 ms.
        let mut r = Refwa::new(RefwaConfig::default(), Instant::ZERO);
        drive(
            &mut r,
            &[path(1, 2, 2)],
            Instant::ZERO,
            secs(10.0),
            STEP,
            40,
        );
        let s = r.stats();
        assert_eq!(s.rtt_avg, Duration::from_millis(240));
        let want = bw_rtt(0.24) + 0.5 * (100.0 - 40.0) / 1.5;
        assert!(close(s.upsilon, want, 1e-9), "Υ={} want {want}", s.upsilon);
    }

    #[test]
    fn eq2_uses_the_queue_sampled_one_epoch_earlier() {
        // One flow, RTT 240 ms: t₀ = 0 and epoch n falls on n·240 ms. The
        // queue steps 0, 30, 60, 0, … per slot, so the packet that runs
        // epoch n reports Q(n) = 30·(n mod 3), and Υ(n) must use Q(n−1).
        let q_at = |t: Instant| 30 * ((t.as_nanos() / 240_000_000) % 3);
        let mut r = Refwa::new(RefwaConfig::default(), Instant::ZERO);
        let p = [path(1, 2, 2)];
        let bw = bw_rtt(0.24);
        let mut want = bw; // Υ(0)
        let mut t = Instant::ZERO;
        for n in 1..=12u64 {
            while r.stats().recomputations < n {
                t = drive(&mut r, &p, t, t + STEP, STEP, q_at(t));
            }
            let q_prev = (30 * ((n - 1) % 3)) as f64;
            want = upsilon_step(want, bw, 100.0, q_prev, 1.5, 0.5);
            let got = r.stats().upsilon;
            assert!(close(got, want, 1e-9), "epoch {n}: Υ = {got}, want {want}");
        }
    }

    /// Paper 003 App. I: Q(n−1) = Υ(n−2) − Bw·RTT_avg, from an empty queue
    /// and Υ(−1) = Υ(0) = Bw·RTT_avg. With `clamp_q` the queue is held in
    /// [0, B] as a real buffer would; without, the loop is App. I's linear
    /// one, apart from Υ ≥ 0, which turns the unstable cases' divergence
    /// into a limit cycle between 0 and a peak.
    fn closed_loop(phi: f64, psi: f64, clamp_q: bool, steps: usize) -> Vec<f64> {
        let (bw, b): (f64, f64) = (300.0, 100.0);
        let mut ys = vec![bw, bw];
        for _ in 0..steps {
            let n = ys.len();
            let mut q = ys[n - 2] - bw;
            if clamp_q {
                q = q.clamp(0.0, b);
            }
            ys.push(upsilon_step(ys[n - 1], bw, b, q, phi, psi));
        }
        ys
    }

    fn amplitude(ys: &[f64], target: f64) -> f64 {
        ys.iter().map(|y| (y - target).abs()).fold(0.0, f64::max)
    }

    #[test]
    fn closed_loop_settles_inside_stability_region_only() {
        let (bw, b) = (300.0, 100.0);
        for clamp_q in [false, true] {
            // Inside 0 ≤ φ−1 ≤ ψ+1, ψ < 1: settles at Bw·RTT + ψB/(φ+ψ).
            let (phi, psi) = (1.5, 0.5);
            let want = bw + psi * b / (phi + psi);
            let ys = closed_loop(phi, psi, clamp_q, 300);
            assert!(amplitude(&ys[2..12], want) > 5.0, "never left {want}");
            assert!(
                amplitude(&ys[250..], want) < 1e-6,
                "clamp {clamp_q}: tail {:?}",
                &ys[ys.len() - 4..]
            );

            // Outside: φ−1 > ψ+1 (φ = 3), and ψ ≥ 1 (ψ = 1.2). The
            // deviation from the would-be equilibrium does not decay.
            for (phi, psi) in [(3.0, 0.5), (1.5, 1.2)] {
                let want = bw + psi * b / (phi + psi);
                let ys = closed_loop(phi, psi, clamp_q, 600);
                let early = amplitude(&ys[2..102], want);
                let late = amplitude(&ys[500..], want);
                assert!(
                    late > 0.1 * want && late >= 0.5 * early,
                    "φ={phi} ψ={psi} clamp {clamp_q}: early {early}, late {late}"
                );
            }
        }
    }

    #[test]
    fn groups_share_upsilon_by_rtt_power_alpha() {
        // Two flows 2+2 hops (240 ms), one 4+4 hops (400 ms).
        let paths = [path(1, 2, 2), path(2, 2, 2), path(3, 4, 4)];
        for alpha in [1.0, 0.0] {
            let cfg = RefwaConfig {
                alpha,
                ..RefwaConfig::default()
            };
            let mut r = Refwa::new(cfg, Instant::ZERO);
            let t = drive(&mut r, &paths, Instant::ZERO, secs(3.0), STEP, 20);
            let g = r.groups();
            assert_eq!(g.len(), 2);
            assert_eq!(g[0].rtt, Duration::from_millis(240));
            assert_eq!(g[1].rtt, Duration::from_millis(400));
            assert_eq!((g[0].flows, g[1].flows), (2, 1));
            let (f1, f2) = (g[0].window.unwrap(), g[1].window.unwrap());
            let want_ratio = if alpha == 1.0 { 240.0 / 400.0 } else { 1.0 };
            assert!(close(f1 / f2, want_ratio, 1e-12), "α={alpha}: {f1}/{f2}");
            let total = 2.0 * f1 + f2;
            let ups = r.stats().upsilon;
            assert!(close(total, ups, 1e-12), "Σ n F = {total}, Υ = {ups}");
            // RTT_avg is the flow-weighted mean: (2·240 + 400)/3 ms.
            let avg = r.stats().rtt_avg.as_secs_f64();
            assert!(close(avg, (2.0 * 0.24 + 0.4) / 3.0, 1e-6), "RTT_avg {avg}");
            // The ACKs carry the group's window in whole packets.
            let ttl0 = r.config().initial_ttl;
            assert_eq!(r.on_ack(t, key(1), ttl0 - 2, RWND, 20), f1 as u32);
            assert_eq!(r.on_ack(t, key(3), ttl0 - 4, RWND, 20), f2 as u32);
        }
    }

    #[test]
    fn rwnd_is_only_ever_lowered() {
        let mut r = Refwa::new(RefwaConfig::default(), Instant::ZERO);
        let ttl0 = r.config().initial_ttl;
        let p = path(1, 2, 2);
        r.on_data(Instant::ZERO, p.key, ttl0 - 2, 0);
        // Before the first recomputation nothing is known: unchanged.
        assert_eq!(r.on_ack(Instant::ZERO, p.key, ttl0 - 2, RWND, 0), RWND);
        assert_eq!(r.stats().acks_rewritten, 0);

        let t = drive(&mut r, &[p], Instant::ZERO, secs(2.0), STEP, 10);
        let f = r.window_of(&p.key).unwrap();
        assert!(f > 10.0, "F = {f}");
        let before = r.stats().acks_rewritten;
        // A smaller advertised window passes untouched and is not counted.
        assert_eq!(r.on_ack(t, p.key, ttl0 - 2, 5, 10), 5);
        assert_eq!(r.on_ack(t, p.key, ttl0 - 2, f as u32, 10), f as u32);
        assert_eq!(r.stats().acks_rewritten, before);
        // A larger one is lowered to F and counted.
        assert_eq!(r.on_ack(t, p.key, ttl0 - 2, RWND, 10), f as u32);
        assert_eq!(r.stats().acks_rewritten, before + 1);
        // A flow whose data never crossed this router: unchanged, however
        // often its ACKs pass, though its hop count matches a group that
        // has a window; nor does it take a share.
        for _ in 0..3 {
            assert_eq!(r.on_ack(t, key(99), ttl0 - 2, RWND, 10), RWND);
        }
        assert_eq!(r.stats().acks_rewritten, before + 1);
        assert_eq!(r.stats().active_flows, 1);
    }

    #[test]
    fn window_is_at_least_one_packet() {
        // A 10 kb/s link gives Υ ≈ 0.3·1.25 + ψ·1 packets for 40 flows.
        let cfg = RefwaConfig {
            bandwidth_bps: 10_000,
            buffer_pkts: 1,
            ..RefwaConfig::default()
        };
        let mut r = Refwa::new(cfg, Instant::ZERO);
        let paths: Vec<Path> = (0..40).map(|i| path(i, 2, 2)).collect();
        let t = drive(&mut r, &paths, Instant::ZERO, secs(2.0), STEP, 1);
        assert!(r.stats().upsilon < 40.0);
        assert_eq!(r.window_of(&key(0)), Some(1.0));
        assert_eq!(r.on_ack(t, key(0), 62, RWND, 1), 1);
    }

    #[test]
    fn idle_flow_leaves_its_group_after_delta() {
        let paths = [path(1, 2, 2), path(2, 2, 2), path(3, 2, 2)];
        let mut r = Refwa::new(RefwaConfig::default(), Instant::ZERO);
        let mut t = drive(&mut r, &paths, Instant::ZERO, secs(8.0), STEP, 20);
        assert_eq!(r.groups()[0].flows, 3);
        let f_before = r.window_of(&key(1)).unwrap();
        let delta = r.stats().rtt_avg;
        assert_eq!(delta, Duration::from_millis(240));

        // Flow 3 falls silent; its last packet was at t − STEP.
        let last_seen = Instant(t.as_nanos() - STEP.as_nanos());
        let (mut kept, mut dropped) = (0, 0);
        let mut epochs = r.stats().recomputations;
        while t < secs(10.0) {
            t = drive(&mut r, &paths[..2], t, t + STEP, STEP, 20);
            let s = r.stats();
            if s.recomputations > epochs {
                epochs = s.recomputations;
                let now = Instant(t.as_nanos() - STEP.as_nanos());
                let n = r.groups()[0].flows;
                if now.saturating_since(last_seen) <= delta {
                    assert_eq!(n, 3, "left before δ at {now}");
                    kept += 1;
                } else {
                    assert_eq!(n, 2, "still counted after δ at {now}");
                    assert_eq!(s.active_flows, 2);
                    dropped += 1;
                }
            }
        }
        assert!(kept >= 1 && dropped >= 2, "kept {kept}, dropped {dropped}");
        // One group, so F = Υ/n; Υ is unchanged (same RTT_avg, same Q):
        // the two remaining flows get half as much again.
        let f_after = r.window_of(&key(1)).unwrap();
        assert!(
            close(f_after / f_before, 1.5, 1e-6),
            "{f_before} → {f_after}"
        );
    }

    #[test]
    fn delta_override_replaces_rtt_avg() {
        let cfg = RefwaConfig {
            delta: Some(Duration::from_secs(1)),
            ..RefwaConfig::default()
        };
        let mut r = Refwa::new(cfg, Instant::ZERO);
        let paths = [path(1, 2, 2), path(2, 2, 2)];
        let t = drive(&mut r, &paths, Instant::ZERO, secs(2.0), STEP, 0);
        // Flow 2 idles 0.7 s (~3 RTT_avg): still counted under δ = 1 s.
        let t = drive(
            &mut r,
            &paths[..1],
            t,
            t + Duration::from_millis(700),
            STEP,
            0,
        );
        assert_eq!(r.groups()[0].flows, 2);
        drive(
            &mut r,
            &paths[..1],
            t,
            t + Duration::from_millis(600),
            STEP,
            0,
        );
        assert_eq!(r.groups()[0].flows, 1);
    }

    #[test]
    fn rtt_error_is_bounded_and_deterministic() {
        let estimates = |sigma: f64, seed: u64, reverse: bool| -> Vec<Duration> {
            let cfg = RefwaConfig {
                rtt_error: sigma,
                seed,
                ..RefwaConfig::default()
            };
            let mut r = Refwa::new(cfg, Instant::ZERO);
            let mut ids: Vec<u32> = (0..100).collect();
            if reverse {
                ids.reverse();
            }
            for &i in &ids {
                r.on_data(Instant::ZERO, key(i), 62, 0);
                r.on_ack(Instant::ZERO, key(i), 62, RWND, 0);
            }
            (0..100).map(|i| r.flow_rtt(&key(i)).unwrap()).collect()
        };
        let exact = Duration::from_millis(240).as_nanos() as f64;
        assert!(estimates(0.0, 7, false)
            .iter()
            .all(|d| d.as_nanos() as f64 == exact));

        let a = estimates(0.2, 7, false);
        for d in &a {
            let x = d.as_nanos() as f64 / exact;
            assert!((0.8 - 1e-8..=1.2 + 1e-8).contains(&x), "factor {x}");
        }
        let lo = a.iter().min().unwrap().as_nanos() as f64 / exact;
        let hi = a.iter().max().unwrap().as_nanos() as f64 / exact;
        assert!(lo < 0.85 && hi > 1.15, "spread {lo}..{hi}");
        // Same seed: same estimates, whatever the arrival order.
        assert_eq!(a, estimates(0.2, 7, true));
        assert_ne!(a, estimates(0.2, 8, false));
    }

    #[test]
    fn hop_counts_come_from_ttls() {
        let mut r = Refwa::new(RefwaConfig::default(), Instant::ZERO);
        let k = key(1);
        // ACK first, H_b = 1: H_f taken to be 1 as well, 2·4·20 ms; not yet
        // in a group, since its data has not been seen on this link.
        r.on_ack(Instant::ZERO, k, 63, RWND, 0);
        assert_eq!(r.flow_rtt(&k), Some(Duration::from_millis(160)));
        assert!(r.groups().is_empty());
        // Its data brings H_f = 3: 2·6·20 ms, and it joins that group.
        r.on_data(Instant::ZERO, k, 61, 0);
        assert_eq!(r.flow_rtt(&k), Some(Duration::from_millis(240)));
        // Data only, H_f = 3: H_b taken to be 3, 2·8·20 ms.
        r.on_data(Instant::ZERO, key(2), 61, 0);
        assert_eq!(r.flow_rtt(&key(2)), Some(Duration::from_millis(320)));
        // Its ACK brings H_b = 1: it moves to flow 1's group.
        r.on_ack(Instant::ZERO, key(2), 63, RWND, 0);
        assert_eq!(r.flow_rtt(&key(2)), Some(Duration::from_millis(240)));
        let g = r.groups();
        assert_eq!(g.len(), 1);
        assert_eq!((g[0].rtt, g[0].flows), (Duration::from_millis(240), 2));
        // A TTL above the initial one counts as zero hops, not a wrap.
        r.on_data(Instant::ZERO, key(3), 255, 0);
        assert_eq!(r.flow_rtt(&key(3)), Some(Duration::from_millis(80)));
    }

    #[test]
    fn recomputes_lazily_once_per_rtt_avg() {
        let mut r = Refwa::new(RefwaConfig::default(), Instant::ZERO);
        let ttl0 = r.config().initial_ttl;
        let p = [path(1, 2, 2), path(2, 2, 2)];
        // t₀ = 0, epochs every 240 ms: at 240, 480, ..., 2160 ms.
        drive(&mut r, &p, Instant::ZERO, secs(2.4), STEP, 0);
        assert_eq!(r.stats().recomputations, 9);
        // After a long silence one packet recomputes once, not once per
        // missed epoch, and the silent flow has left.
        r.on_data(secs(10.0), key(1), ttl0 - 2, 0);
        let s = r.stats();
        assert_eq!(s.recomputations, 10);
        assert_eq!(s.active_flows, 1);
        r.on_data(secs(10.1), key(1), ttl0 - 2, 0);
        assert_eq!(r.stats().recomputations, 10);

        // Silence again, then only an ACK (of a flow dropped long ago):
        // no flow loads the link, so nothing is computed and the next data
        // packet opens a fresh t₀ with Υ(0) = Bw·RTT_avg and its queue as
        // Q(0).
        assert_eq!(r.on_ack(secs(20.0), key(2), ttl0 - 2, RWND, 0), RWND);
        let s = r.stats();
        assert_eq!((s.recomputations, s.groups, s.active_flows), (10, 0, 0));
        r.on_data(secs(21.0), key(1), ttl0 - 2, 40);
        assert_eq!(r.stats().recomputations, 10);
        r.on_data(secs(21.24), key(1), ttl0 - 2, 70);
        let s = r.stats();
        assert_eq!(s.recomputations, 11);
        let want = bw_rtt(0.24) + 0.5 * (100.0 - 40.0);
        assert!(
            close(s.upsilon, want, 1e-9),
            "Υ(1) = {}, want {want}",
            s.upsilon
        );
    }

    #[test]
    fn ops_per_recomputation_scale_with_groups_not_flows() {
        let ops = |groups: u8, per_group: u32| -> RefwaStats {
            let mut r = Refwa::new(RefwaConfig::default(), Instant::ZERO);
            let paths: Vec<Path> = (0..groups)
                .flat_map(|g| {
                    (0..per_group).map(move |i| path(u32::from(g) * 1000 + i, g + 1, g + 1))
                })
                .collect();
            drive(&mut r, &paths, Instant::ZERO, secs(3.0), STEP, 5);
            let s = r.stats();
            assert_eq!(s.groups, usize::from(groups));
            assert!(s.recomputations > 2);
            s
        };
        for m in [1u8, 3, 6] {
            let few = ops(m, 1);
            let many = ops(m, 60);
            assert_eq!(few.ops_last, many.ops_last, "M = {m}");
            assert_eq!(few.ops_max, many.ops_max, "M = {m}");
            // 7 per group (mean, weight, share) plus 13 (two divisions,
            // the EWMA, Bw·RTT_avg and eq. 2).
            let bound = 7 * u64::from(m) + 13;
            assert!(many.ops_max <= bound, "M = {m}: {} > {bound}", many.ops_max);
        }
        assert!(ops(6, 1).ops_last > ops(3, 1).ops_last);
    }
}
