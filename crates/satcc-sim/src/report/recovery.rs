//! Loss-recovery time of a rate-based sender (paper 001 §V-C, "loss
//! recovery after the slow start phase"), from the sender's own rate trace.
//!
//! The tracker is shown the sender's allowed rate X, its last reported
//! receive rate X_recv and loss event rate p after every event of the
//! sender (a feedback packet, a timer), which is every time X can change.
//! A *loss event* is p rising (a new loss event reached the sender, RFC
//! 5348 §6.1: the receiver reports at once when p increases; the first
//! rise is the exit from slow start). Its pre-loss level is the rate the
//! flow had before it: L = min(X, X_recv) as last observed before the rise
//! (X_recv is what the path was delivering; after a slow-start overshoot X
//! itself is up to twice that, a level TFRC never returns to). The event
//! is recovered at the first observation with X >= L, and its recovery
//! time is the time from the rise to then. Each event is timed on its own:
//! a later event with a lower level may recover before an earlier one.
//! Deterministic: a pure function of the sequence of observations.

use serde::{Deserialize, Serialize};

use satcc_proto::Instant;

/// The loss-recovery summary of one flow (summary.json `loss_recovery`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct LossRecoverySummary {
    /// Recovery time of the first loss event (the exit from slow start),
    /// seconds; absent if the rate had not come back to its pre-loss level
    /// when the run ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_s: Option<f64>,
    /// Mean recovery time over the loss events that recovered, seconds;
    /// absent if none did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_s: Option<f64>,
    /// Loss events the sender saw (rises of p).
    pub events: u64,
    /// Of those, the ones whose rate came back to the pre-loss level.
    pub recovered: u64,
}

/// The state of the tracker; see the module documentation.
#[derive(Clone, Debug, Default)]
pub struct LossRecovery {
    /// (X, X_recv, p) at the last observation, bytes/s.
    last: Option<(f64, f64, f64)>,
    /// Loss events not yet recovered: (start, pre-loss level L, is the
    /// first event).
    open: Vec<(Instant, f64, bool)>,
    first: Option<f64>,
    events: u64,
    sum: f64,
    recovered: u64,
}

/// Open events kept at most (the oldest are dropped beyond this, and
/// counted as unrecovered): a flow whose rate never comes back would
/// otherwise grow the list with every loss event.
const MAX_OPEN: usize = 4096;

impl LossRecovery {
    /// A tracker that has seen nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// The sender's X, X_recv (bytes/s) and p at `now`, after an event.
    pub fn observe(&mut self, now: Instant, x: f64, x_recv: f64, p: f64) {
        // The same (X, X_recv, p), bit for bit, as the last call (most
        // calls: the rate moves on feedback, not on every packet): p did
        // not rise, and every interval still open stayed open at this X,
        // so nothing below would change.
        if let Some((x0, xr0, p0)) = self.last {
            if (x0.to_bits(), xr0.to_bits(), p0.to_bits())
                == (x.to_bits(), x_recv.to_bits(), p.to_bits())
            {
                return;
            }
        }
        let rose = match self.last {
            Some((_, _, p0)) => p > p0,
            None => p > 0.0,
        };
        if rose {
            let level = match self.last {
                Some((x0, xr0, _)) if xr0 > 0.0 => x0.min(xr0),
                Some((x0, _, _)) => x0,
                None => x,
            };
            if self.open.len() >= MAX_OPEN {
                self.open.remove(0);
            }
            self.open.push((now, level, self.events == 0));
            self.events += 1;
        }
        let (mut sum, mut n, mut first) = (0.0, 0, None);
        self.open.retain(|&(t0, level, is_first)| {
            if x >= level {
                let dt = now.saturating_since(t0).as_secs_f64();
                sum += dt;
                n += 1;
                if is_first {
                    first = Some(dt);
                }
                false
            } else {
                true
            }
        });
        self.sum += sum;
        self.recovered += n;
        if first.is_some() {
            self.first = first;
        }
        self.last = Some((x, x_recv, p));
    }

    /// The summary at the end of the run; `None` if no loss event was seen.
    pub fn summary(&self) -> Option<LossRecoverySummary> {
        if self.events == 0 {
            return None;
        }
        Some(LossRecoverySummary {
            first_s: self.first,
            mean_s: (self.recovered > 0).then(|| self.sum / self.recovered as f64),
            events: self.events,
            recovered: self.recovered,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: f64) -> Instant {
        Instant((s * 1e9) as u64)
    }

    #[test]
    fn no_loss_no_summary() {
        let mut r = LossRecovery::new();
        for i in 0..10 {
            r.observe(t(i as f64), 1000.0 * i as f64, 500.0, 0.0);
        }
        assert_eq!(r.summary(), None);
    }

    #[test]
    fn each_event_timed_from_its_rise_to_its_own_pre_loss_level() {
        let mut r = LossRecovery::new();
        // Slow start: X 4000 (overshoot) while X_recv is 2000.
        r.observe(t(1.0), 4000.0, 2000.0, 0.0);
        // Event 1: X falls to 800; its level is min(4000, 2000) = 2000.
        r.observe(t(2.0), 800.0, 2000.0, 0.01);
        r.observe(t(3.0), 1500.0, 900.0, 0.01);
        // Event 2 before event 1 recovered: level min(1500, 900) = 900.
        r.observe(t(4.0), 850.0, 1400.0, 0.02);
        let s = r.summary().unwrap();
        assert_eq!((s.events, s.recovered, s.first_s), (2, 0, None));
        // Event 2 is back at 900 after 1 s; event 1 still below 2000.
        r.observe(t(5.0), 950.0, 1000.0, 0.015);
        let s = r.summary().unwrap();
        assert_eq!((s.events, s.recovered, s.mean_s), (2, 1, Some(1.0)));
        assert_eq!(s.first_s, None);
        // p falling is no event; event 1 recovers 10.5 s after its rise.
        r.observe(t(12.5), 2000.0, 1950.0, 0.012);
        let s = r.summary().unwrap();
        assert_eq!((s.events, s.recovered), (2, 2));
        assert_eq!(s.first_s, Some(10.5));
        assert_eq!(s.mean_s, Some((1.0 + 10.5) / 2.0));
        // An event that never drops X below its level recovers at once.
        r.observe(t(20.0), 1960.0, 1950.0, 0.013);
        let s = r.summary().unwrap();
        assert_eq!((s.events, s.recovered), (3, 3));
        assert_eq!(s.mean_s, Some(11.5 / 3.0));
    }

    /// Observing the same (X, X_recv, p) again, later, changes nothing
    /// (the early return): a run with repeats ends in the state of the
    /// same run without them. X, X_recv and p move one at a time too, so
    /// a shortcut that looked at only part of the triple would miss a
    /// rise of p or a recovery.
    #[test]
    fn a_repeated_observation_changes_nothing() {
        let mut rng = satcc_proto::rng::Rng::new(3);
        let (mut with, mut without) = (LossRecovery::new(), LossRecovery::new());
        let (mut x, mut xr, mut p) = (1000.0, 1000.0, 0.0);
        let mut now = 0.0;
        for _ in 0..20_000 {
            match rng.below(3) {
                0 => x = 500.0 + rng.below(1000) as f64,
                1 => xr = 500.0 + rng.below(1000) as f64,
                _ => p = rng.below(20) as f64 / 1000.0,
            }
            now += 0.01;
            with.observe(t(now), x, xr, p);
            without.observe(t(now), x, xr, p);
            for _ in 0..rng.below(3) {
                now += 0.01;
                with.observe(t(now), x, xr, p);
            }
        }
        assert_eq!(with.summary(), without.summary());
        let s = with.summary().unwrap();
        assert!(s.events > 100 && s.recovered > 100, "{s:?}");
        assert_eq!(
            (with.open, with.sum, with.recovered),
            (without.open, without.sum, without.recovered)
        );
    }
}
