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
        let mut w = csv_writer(self.t.len() * self.flows.len() * 64);
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
        // Numbers are formatted into one reused buffer: the file is most of
        // what a run writes, and a String per field would cost as much as
        // the simulation's own bookkeeping.
        let mut b = Fields::default();
        for (i, t) in self.t.iter().enumerate() {
            let time = format!("{t:.3}");
            for (id, f) in self.flows.iter().enumerate() {
                b.text(&mut w, &time);
                b.num(&mut w, format_args!("{id}"));
                b.text(&mut w, &f.name);
                b.text(&mut w, &f.protocol);
                b.num(&mut w, format_args!("{:.0}", f.goodput_bps[i]));
                b.opt(&mut w, f.cwnd[i], 2);
                b.opt(&mut w, f.rtt_s[i], 4);
                b.opt(&mut w, f.rate_bps[i], 0);
                b.opt(&mut w, f.x_recv_bps[i], 0);
                b.opt(&mut w, f.p[i], 6);
                b.opt(&mut w, f.feedback[i], 0);
                let _ = w.write_record(None::<&[u8]>);
            }
        }
        csv_text(w)
    }

    /// Per-link CSV:
    /// `time_s,link,queue_pkts,utilization,drops,drops_queue,drops_red,drops_error,drops_ttl,drops_hook,drops_link_down`.
    pub fn links_csv(&self) -> String {
        let mut w = csv_writer(self.t.len() * self.links.len() * 48);
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
        let mut b = Fields::default();
        for (i, t) in self.t.iter().enumerate() {
            let time = format!("{t:.3}");
            for l in &self.links {
                b.text(&mut w, &time);
                b.text(&mut w, &l.name);
                b.num(&mut w, format_args!("{}", l.queue_pkts[i]));
                b.num(&mut w, format_args!("{:.4}", l.utilization[i]));
                for col in [
                    &l.drops,
                    &l.drops_queue,
                    &l.drops_red,
                    &l.drops_error,
                    &l.drops_ttl,
                    &l.drops_hook,
                    &l.drops_link_down,
                ] {
                    b.num(&mut w, format_args!("{}", col[i]));
                }
                let _ = w.write_record(None::<&[u8]>);
            }
        }
        csv_text(w)
    }
}

/// Writes one record's fields, numbers through a reused buffer.
#[derive(Default)]
struct Fields {
    buf: String,
}

impl Fields {
    /// A field the csv writer quotes if it must (names are the user's).
    fn text(&mut self, w: &mut csv::Writer<Vec<u8>>, s: &str) {
        let _ = w.write_field(s);
    }
    fn num(&mut self, w: &mut csv::Writer<Vec<u8>>, v: std::fmt::Arguments<'_>) {
        use std::fmt::Write as _;
        self.buf.clear();
        let _ = self.buf.write_fmt(v);
        let _ = w.write_field(&self.buf);
    }
    /// A number with `prec` decimals, or an empty field where it does not
    /// apply (NaN).
    fn opt(&mut self, w: &mut csv::Writer<Vec<u8>>, v: f64, prec: usize) {
        if v.is_finite() {
            self.num(w, format_args!("{v:.prec$}"));
        } else {
            let _ = w.write_field("");
        }
    }
}

/// A CSV writer to memory: `,`-separated, `\n`-terminated, a field quoted
/// only when it holds `,`, `"` or a line break (flow and link names are the
/// user's; numbers never need it).
fn csv_writer(capacity: usize) -> csv::Writer<Vec<u8>> {
    csv::Writer::from_writer(Vec::with_capacity(capacity))
}

/// The text written. Writing to memory cannot fail, and every field is a
/// `&str`, so the bytes are UTF-8.
fn csv_text(w: csv::Writer<Vec<u8>>) -> String {
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}
