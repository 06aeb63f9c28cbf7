//! How much memory a run will take, estimated from the scenario before
//! anything is built, so that a run that cannot fit is refused at once
//! rather than after minutes of swapping.
//!
//! The constants were calibrated by measuring the peak RSS
//! (`/usr/bin/time -f %M`) of `scenarios/dumbbell.toml` (SACK) with 1 000,
//! 10 000 and 100 000 flows: 6.0 KB per flow instance (its endpoints, its
//! access links and their queues, its share of the routing tables),
//! 85–125 bytes per flow per time-series sample when files are written
//! (the series and the CSV text), and about 5 MB whatever the size. The
//! constants below carry some headroom over those figures.

use super::{QueueSpec, Scenario, Topology};

/// Bytes every run takes whatever its size.
pub const BASE_BYTES: u64 = 8 << 20;
/// Bytes per flow instance: endpoints, access links, routes.
pub const PER_FLOW_BYTES: u64 = 7 << 10;
/// Bytes per named link direction besides its queued packets.
pub const PER_LINK_BYTES: u64 = 2 << 10;
/// Bytes per packet a queue may hold.
pub const PER_PACKET_BYTES: u64 = 256;
/// Bytes per flow per time-series sample (series and CSV text).
pub const PER_SAMPLE_BYTES: u64 = 128;

/// Bytes of flows.csv per flow per sample: 48 on the quickstart (11 634
/// bytes for 240 rows of TCP flows); TFRC rows carry rate, X_recv and p
/// too, up to about 80.
pub const FLOWS_CSV_ROW_BYTES: u64 = 64;

/// flows.csv larger than this gets a warning before the run starts.
pub const FLOWS_CSV_WARN_BYTES: u64 = 100_000_000;

/// A run's estimated peak memory and the field that weighs most in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryEstimate {
    /// Estimated peak bytes.
    pub bytes: u64,
    /// The field to change to shrink it most, e.g. `flows[0].count`.
    pub field: String,
    /// What that field contributes, in words.
    pub why: String,
}

fn queue_pkts(q: &QueueSpec) -> u64 {
    match q {
        QueueSpec::DropTail { limit, limit_bytes } | QueueSpec::Priority { limit, limit_bytes } => {
            match (limit, limit_bytes) {
                (Some(l), _) => u64::from(*l),
                (None, Some(b)) => b.0 / 40,
                (None, None) => 0,
            }
        }
        QueueSpec::Red(r) => u64::from(r.limit),
    }
}

/// Formats a byte count as `57.2 GB`, `610 MB`.
pub fn fmt_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= 1e9 {
        format!("{:.1} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.0} MB", b / 1e6)
    } else {
        format!("{:.0} KB", b / 1e3)
    }
}

impl Scenario {
    /// Flow instances in the run (the sum of every `count`).
    pub fn flow_instances(&self) -> u64 {
        self.flows.iter().map(|f| u64::from(f.count)).sum()
    }

    /// Time-series samples per flow when files are written (one every
    /// `record.interval`, and one at the start).
    pub fn samples_per_flow(&self) -> u64 {
        let iv = self.record.interval.0.as_nanos().max(1);
        self.duration.0.as_nanos() / iv + 1
    }

    /// The estimated size of flows.csv, and a warning line when it is
    /// over [`FLOWS_CSV_WARN_BYTES`]: a 10 000-flow run writes about half
    /// a gigabyte, which nobody should find out from a full disk (issue
    /// 33).
    pub fn flows_csv_warning(&self) -> Option<String> {
        let (flows, samples) = (self.flow_instances(), self.samples_per_flow());
        let bytes = flows
            .saturating_mul(samples)
            .saturating_mul(FLOWS_CSV_ROW_BYTES);
        (bytes > FLOWS_CSV_WARN_BYTES).then(|| {
            format!(
                "flows.csv will be about {} ({flows} flows × {samples} samples, one every \
                 {} s); a longer record.interval or --no-files writes less",
                fmt_bytes(bytes),
                self.record.interval.0.as_secs_f64()
            )
        })
    }

    /// Estimates the run's peak memory; `series` when the time series are
    /// recorded (files written).
    pub fn memory_estimate(&self, series: bool) -> MemoryEstimate {
        let flows = self.flow_instances();
        let links: Vec<&super::LinkSpec> = match &self.topology {
            Topology::Dumbbell(d) => vec![&d.bottleneck],
            Topology::Satellite(s) => vec![&s.uplink, &s.downlink],
            Topology::Graph(g) => g.links.iter().collect(),
            Topology::Constellation(_) => Vec::new(),
        };
        let link_bytes: u64 = links
            .iter()
            .map(|l| {
                let fwd = queue_pkts(&l.queue);
                let rev = l.reverse_queue.as_ref().map_or(fwd, queue_pkts);
                2 * PER_LINK_BYTES + (fwd + rev) * PER_PACKET_BYTES
            })
            .sum();
        let flow_bytes = flows.saturating_mul(PER_FLOW_BYTES);
        let samples = if series { self.samples_per_flow() } else { 0 };
        let sample_bytes = flows
            .saturating_mul(samples)
            .saturating_mul(PER_SAMPLE_BYTES);
        let bytes = BASE_BYTES
            .saturating_add(link_bytes)
            .saturating_add(flow_bytes)
            .saturating_add(sample_bytes);
        let (i, biggest) = self
            .flows
            .iter()
            .enumerate()
            .max_by_key(|(i, f)| (f.count, std::cmp::Reverse(*i)))
            .map_or((0, 0), |(i, f)| (i, f.count));
        let series_note = if sample_bytes > 0 {
            format!(
                ", plus {} for {samples} samples of the time series \
                 (--no-files or a longer record.interval needs less)",
                fmt_bytes(sample_bytes)
            )
        } else {
            String::new()
        };
        let (field, why) = if sample_bytes > flow_bytes && samples > flows {
            (
                "record.interval".to_string(),
                format!(
                    "{samples} samples of the time series for {flows} flows, {} B per flow \
                     per sample (--no-files or a longer record.interval needs less)",
                    PER_SAMPLE_BYTES
                ),
            )
        } else {
            (
                format!("flows[{i}].count"),
                format!(
                    "{biggest} flows here, {flows} in all, about {} each{series_note}",
                    fmt_bytes(PER_FLOW_BYTES)
                ),
            )
        };
        MemoryEstimate { bytes, field, why }
    }
}
