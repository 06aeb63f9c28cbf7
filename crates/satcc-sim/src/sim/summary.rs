//! The report at the end of a run, built from the flows' statistics views
//! and the links' counters.

use super::{RunOutput, Sim};
use crate::report::{DummySummary, FlowSummary, LinkSummary, Summary};

impl Sim {
    /// Ends the run and computes the summary.
    pub fn finish(mut self, wall_s: Option<f64>) -> RunOutput {
        let end = self.end();
        self.run_until(end);
        for li in 0..self.links.len() {
            if self.links[li].eager {
                self.catch_up(li);
            }
        }
        for l in &mut self.links {
            l.note_queue(end);
        }
        let mut flows = Vec::new();
        for f in &self.flows {
            let delivered = f.delivered_bytes();
            let goodput = crate::report::goodput_bps(
                delivered,
                f.delivered_at_measure,
                (f.start, f.stop),
                self.measure_from,
                end,
            );
            let sent = f.sender_totals();
            let received = f.receiver_totals();
            flows.push(FlowSummary {
                id: f.id,
                name: f.name.clone(),
                protocol: f.protocol,
                src: self.nodes[f.src as usize].clone(),
                dst: self.nodes[f.dst as usize].clone(),
                delivered_bytes: delivered,
                goodput_bps: goodput,
                share: 0.0,
                drops: f.drops,
                packets_sent: f.packets_sent,
                retransmits: sent.retransmits,
                timeouts: sent.timeouts,
                mean_rtt_s: sent.mean_rtt_s(),
                files_completed: f.files_done,
                mean_file_time_s: (f.files_done > 0).then(|| f.file_time_sum / f.files_done as f64),
                feedback_packets: received.feedback_sent,
                // Everything the receiver sent is feedback (TFRC reports
                // carry no payload; Saratoga STATUS frames vary in size).
                feedback_bytes: received.feedback_sent.map(|_| f.tx.ack_bytes),
                loss_event_rate: crate::report::flow_loss_event_rate(
                    f.protocol,
                    received.loss_event_rate,
                    sent.rate.map(|r| r.p),
                ),
                slow_start_exit_s: f.slow_start_exit.map(|t| t.as_secs_f64()),
                loss_recovery: f.recovery.as_ref().and_then(|r| r.summary()),
                data_bytes_sent: f.tx.data_bytes,
                stale_packets: f.stale,
                ack_bytes_sent: f.tx.ack_bytes,
                dummy: sent.dummy.map(|d| DummySummary {
                    packets_sent: f.tx.dummy_packets,
                    bytes_sent: f.tx.dummy_bytes,
                    ack_bytes: f.tx.dummy_ack_bytes,
                    acks_received: d.acks,
                    overhead: if f.packets_sent > 0 {
                        f.tx.dummy_packets as f64 / f.packets_sent as f64
                    } else {
                        0.0
                    },
                    fallback: d.fallback,
                }),
            });
        }
        let measured: Vec<bool> = self.flows.iter().map(|f| f.measured).collect();
        let agg = crate::report::aggregate(&mut flows, &measured);
        let end_ns = end.as_nanos();
        let links = self
            .monitored
            .iter()
            .map(|&li| {
                let l = &self.links[li];
                // Busy time is booked when a transmission starts; take off
                // what runs past the end.
                // (On an eager link with packets queued, `busy_until` is
                // the end of the last one scheduled; the transmission
                // under way ends where the queue's head starts.)
                let tx_end = if l.eager && l.free_pending {
                    l.head_start
                } else {
                    l.busy_until
                };
                let over = tx_end.as_nanos().saturating_sub(end_ns);
                let busy = l.busy_ns.saturating_sub(over);
                let drops = l.drops.total();
                LinkSummary {
                    name: l.name.clone(),
                    rate_bps: l.rate_bps,
                    utilization: busy as f64 / end_ns.max(1) as f64,
                    arrivals: l.arrivals,
                    drops,
                    drops_queue: l.drops.queue,
                    drops_red: l.drops.red,
                    drops_error: l.drops.error,
                    drops_ttl: l.drops.ttl,
                    drops_hook: l.drops.hook,
                    drops_link_down: l.drops.link_down,
                    mean_queue_pkts: l.q_area as f64 / end_ns.max(1) as f64,
                    loss: if l.arrivals > 0 {
                        drops as f64 / l.arrivals as f64
                    } else {
                        0.0
                    },
                }
            })
            .collect();
        let mut totals = self.totals;
        totals.in_flight = self.packets.live;
        totals.drop_reasons = self.drop_reasons;
        let summary = Summary {
            scenario: self.name.clone(),
            seed: self.seed,
            // Divided, not multiplied by 1e-9 as `as_secs_f64` does: 60 s
            // reads 60, not 60.00000000000001 (issue 33).
            duration_s: self.duration.0 as f64 / 1e9,
            events: self.events_processed(),
            wall_s,
            flows,
            classes: agg.classes,
            jain: agg.jain,
            normalized_tcp_throughput: agg.normalized_tcp_throughput,
            friendliness: agg.friendliness,
            links,
            packets: totals,
            refwa: crate::net::refwa::summaries(&self.refwa),
        };
        let capture_errors = self
            .pcap
            .iter_mut()
            .filter_map(|(li, cap)| {
                cap.finish()
                    .err()
                    .map(|e| format!("{}: {e}", self.links[*li].name))
            })
            .collect();
        RunOutput {
            summary,
            series: self.series.take(),
            capture_errors,
        }
    }
}

impl Sim {
    /// The time series recorded so far (`None` unless asked for): a
    /// caller advancing the run in slices can write out the new samples
    /// while the run goes on, instead of all of them after
    /// [`Sim::finish`].
    pub fn series(&self) -> Option<&crate::report::series::Series> {
        self.series.as_ref()
    }

    /// Once every sample so far has been written out: drops what of them a
    /// goodput plot of `plotted` flow lines does not need
    /// ([`crate::report::series::Series::release_written`]), so the
    /// memory of a long run's series grows with what is drawn, not with
    /// every column.
    pub fn release_written_series(&mut self, plotted: usize) {
        if let Some(s) = self.series.as_mut() {
            s.release_written(plotted);
        }
    }
}
