//! Time series sampled every `record.interval`, stored column by column.

use satcc_proto::endpoint::{RateStats, Stats};
use satcc_proto::Instant;

/// One flow's columns.
#[derive(Clone, Debug, Default)]
pub struct FlowSeries {
    /// Flow label.
    pub name: String,
    /// Protocol.
    pub protocol: String,
    /// Goodput over the last interval, bits per second.
    pub goodput_bps: Vec<f64>,
    /// Congestion window in segments (NaN where not applicable).
    pub cwnd: Vec<f64>,
    /// Smoothed RTT in seconds (NaN before the first sample).
    pub rtt_s: Vec<f64>,
    /// Rate-based senders: allowed rate X, bits per second (NaN otherwise).
    pub rate_bps: Vec<f64>,
    /// Rate-based senders: X_recv last reported, bits per second.
    pub x_recv_bps: Vec<f64>,
    /// Rate-based senders: loss event rate p last reported.
    pub p: Vec<f64>,
    /// Feedback packets sent by the receiver in the last interval.
    pub feedback: Vec<f64>,
    last_bytes: u64,
    last_feedback: u64,
}

/// One monitored link's columns.
#[derive(Clone, Debug, Default)]
pub struct LinkSeries {
    /// Link name.
    pub name: String,
    /// Packets waiting at the sample instant.
    pub queue_pkts: Vec<f64>,
    /// Fraction of the last interval spent transmitting.
    pub utilization: Vec<f64>,
    /// Drops in the last interval, all reasons.
    pub drops: Vec<f64>,
    /// Queue-overflow drops in the last interval.
    pub drops_queue: Vec<f64>,
    /// RED early drops in the last interval.
    pub drops_red: Vec<f64>,
    /// Error-model losses in the last interval.
    pub drops_error: Vec<f64>,
    /// TTL expiries in the last interval.
    pub drops_ttl: Vec<f64>,
    /// Router-hook (REFWA) drops in the last interval.
    pub drops_hook: Vec<f64>,
    /// Packets stranded by a snapshot taking the link down, last interval.
    pub drops_link_down: Vec<f64>,
    last_busy: u64,
    last: [u64; 7],
}

/// All time series of a run.
#[derive(Clone, Debug, Default)]
pub struct Series {
    /// Sample times, seconds.
    pub t: Vec<f64>,
    /// Per flow.
    pub flows: Vec<FlowSeries>,
    /// Per monitored link.
    pub links: Vec<LinkSeries>,
    last_t: u64,
}

/// One flow at a sample instant, as the simulator hands it over.
#[derive(Clone, Copy, Debug)]
pub struct FlowSample {
    /// Payload bytes delivered so far (all connections).
    pub delivered_bytes: u64,
    /// The sender's statistics view.
    pub sender: Stats,
    /// Feedback packets the receiver has sent so far (rate-based
    /// protocols).
    pub feedback_sent: Option<u64>,
}

/// One monitored link at a sample instant: counters since the start.
#[derive(Clone, Copy, Debug)]
pub struct LinkSample {
    /// Packets queued now.
    pub queue_pkts: usize,
    /// Nanoseconds spent transmitting so far.
    pub busy_ns: u64,
    /// Drops so far: total, queue, RED, error, TTL, hook, link down.
    pub drops: [u64; 7],
}

impl Series {
    /// Empty series for flows (label, protocol) and links (name).
    pub fn new(
        flows: impl IntoIterator<Item = (String, String)>,
        links: impl IntoIterator<Item = String>,
    ) -> Series {
        Series {
            t: Vec::new(),
            flows: flows
                .into_iter()
                .map(|(name, protocol)| FlowSeries {
                    name,
                    protocol,
                    ..Default::default()
                })
                .collect(),
            links: links
                .into_iter()
                .map(|name| LinkSeries {
                    name,
                    ..Default::default()
                })
                .collect(),
            last_t: 0,
        }
    }

    /// Appends the samples at `now`, flows and links in the order given to
    /// [`Series::new`].
    pub fn sample(
        &mut self,
        now: Instant,
        flows: impl IntoIterator<Item = FlowSample>,
        links: impl IntoIterator<Item = LinkSample>,
    ) {
        let dt_ns = now.as_nanos().saturating_sub(self.last_t).max(1);
        let dt = dt_ns as f64 * 1e-9;
        self.t.push(now.as_secs_f64());
        for (s, f) in self.flows.iter_mut().zip(flows) {
            let b = f.delivered_bytes;
            s.goodput_bps
                .push((b - s.last_bytes.min(b)) as f64 * 8.0 / dt);
            s.last_bytes = b;
            let st = f.sender;
            s.cwnd.push(st.cwnd.unwrap_or(f64::NAN));
            s.rtt_s.push(st.srtt.map_or(f64::NAN, |d| d.as_secs_f64()));
            let r = st.rate.unwrap_or(RateStats {
                x_bps: f64::NAN,
                x_recv_bps: f64::NAN,
                p: f64::NAN,
            });
            s.rate_bps.push(r.x_bps);
            s.x_recv_bps.push(r.x_recv_bps);
            s.p.push(r.p);
            match f.feedback_sent {
                Some(n) => {
                    s.feedback.push((n - s.last_feedback.min(n)) as f64);
                    s.last_feedback = n;
                }
                None => s.feedback.push(f64::NAN),
            }
        }
        for (s, l) in self.links.iter_mut().zip(links) {
            s.queue_pkts.push(l.queue_pkts as f64);
            let busy = l.busy_ns;
            s.utilization
                .push(((busy - s.last_busy.min(busy)) as f64 / dt_ns as f64).min(1.0));
            s.last_busy = busy;
            let cols = [
                &mut s.drops,
                &mut s.drops_queue,
                &mut s.drops_red,
                &mut s.drops_error,
                &mut s.drops_ttl,
                &mut s.drops_hook,
                &mut s.drops_link_down,
            ];
            for ((col, &c), last) in cols.into_iter().zip(&l.drops).zip(&mut s.last) {
                col.push((c - (*last).min(c)) as f64);
                *last = c;
            }
        }
        self.last_t = now.as_nanos();
    }

    /// Per-flow CSV:
    /// `time_s,flow,name,protocol,goodput_bps,cwnd,rtt_s,rate_bps,x_recv_bps,p,feedback`
    /// (columns that do not apply to a protocol are empty).
    pub fn flows_csv(&self) -> String {
        let mut w = csv_writer();
        let _ = w.write_record([
            "time_s",
            "flow",
            "name",
            "protocol",
            "goodput_bps",
            "cwnd",
            "rtt_s",
            "rate_bps",
            "x_recv_bps",
            "p",
            "feedback",
        ]);
        for (i, t) in self.t.iter().enumerate() {
            for (id, f) in self.flows.iter().enumerate() {
                let _ = w.write_record([
                    &format!("{t:.3}"),
                    &id.to_string(),
                    &f.name,
                    &f.protocol,
                    &format!("{:.0}", f.goodput_bps[i]),
                    &num(f.cwnd[i], 2),
                    &num(f.rtt_s[i], 4),
                    &num(f.rate_bps[i], 0),
                    &num(f.x_recv_bps[i], 0),
                    &num(f.p[i], 6),
                    &num(f.feedback[i], 0),
                ]);
            }
        }
        csv_text(w)
    }

    /// Per-link CSV:
    /// `time_s,link,queue_pkts,utilization,drops,drops_queue,drops_red,drops_error,drops_ttl,drops_hook,drops_link_down`.
    pub fn links_csv(&self) -> String {
        let mut w = csv_writer();
        let _ = w.write_record([
            "time_s",
            "link",
            "queue_pkts",
            "utilization",
            "drops",
            "drops_queue",
            "drops_red",
            "drops_error",
            "drops_ttl",
            "drops_hook",
            "drops_link_down",
        ]);
        for (i, t) in self.t.iter().enumerate() {
            for l in &self.links {
                let _ = w.write_record([
                    &format!("{t:.3}"),
                    &l.name,
                    &l.queue_pkts[i].to_string(),
                    &format!("{:.4}", l.utilization[i]),
                    &l.drops[i].to_string(),
                    &l.drops_queue[i].to_string(),
                    &l.drops_red[i].to_string(),
                    &l.drops_error[i].to_string(),
                    &l.drops_ttl[i].to_string(),
                    &l.drops_hook[i].to_string(),
                    &l.drops_link_down[i].to_string(),
                ]);
            }
        }
        csv_text(w)
    }
}

/// A CSV writer to memory: `,`-separated, `\n`-terminated, a field quoted
/// only when it holds `,`, `"` or a line break (flow and link names are the
/// user's; numbers never need it).
fn csv_writer() -> csv::Writer<Vec<u8>> {
    csv::Writer::from_writer(Vec::new())
}

/// The text written. Writing to memory cannot fail, and every field is a
/// `&str`, so the bytes are UTF-8.
fn csv_text(w: csv::Writer<Vec<u8>>) -> String {
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

fn num(v: f64, prec: usize) -> String {
    if v.is_finite() {
        format!("{v:.prec$}")
    } else {
        String::new()
    }
}
