//! Time series sampled every `record.interval`, stored column by column.

use satcc_proto::endpoint::{RateStats, Stats};
use satcc_proto::Instant;

use super::numfmt;

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

    /// Makes room for `samples` more samples in every column at once, so
    /// that the columns are not copied as they grow during a run.
    pub fn reserve(&mut self, samples: usize) {
        self.t.reserve(samples);
        for f in &mut self.flows {
            for c in [
                &mut f.goodput_bps,
                &mut f.cwnd,
                &mut f.rtt_s,
                &mut f.rate_bps,
                &mut f.x_recv_bps,
                &mut f.p,
                &mut f.feedback,
            ] {
                c.reserve(samples);
            }
        }
        for l in &mut self.links {
            for c in [
                &mut l.queue_pkts,
                &mut l.utilization,
                &mut l.drops,
                &mut l.drops_queue,
                &mut l.drops_red,
                &mut l.drops_error,
                &mut l.drops_ttl,
                &mut l.drops_hook,
                &mut l.drops_link_down,
            ] {
                c.reserve(samples);
            }
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
        let mut out = Vec::with_capacity(self.t.len() * self.flows.len() * 64);
        let _ = self.write_flows_csv(&mut out);
        // Every byte written is ASCII or a name given as `&str`.
        String::from_utf8(out).unwrap_or_default()
    }

    /// Writes [`Series::flows_csv`]'s text to `w` as it is formatted, a
    /// block at a time, without holding the whole file in memory.
    pub fn write_flows_csv(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        let mut b = Vec::with_capacity(BLOCK + 4096);
        b.extend_from_slice(
            b"time_s,flow,name,protocol,goodput_bps,cwnd,rtt_s,rate_bps,x_recv_bps,p,feedback\n",
        );
        // The text fields of each flow, quoted once as the csv crate
        // would, with their separators: ",id,name,protocol,".
        let heads: Vec<Vec<u8>> = self
            .flows
            .iter()
            .enumerate()
            .map(|(id, f)| {
                let mut h = vec![b','];
                numfmt::push_u64(&mut h, id as u64);
                h.push(b',');
                h.extend_from_slice(&csv_field(&f.name));
                h.push(b',');
                h.extend_from_slice(&csv_field(&f.protocol));
                h.push(b',');
                h
            })
            .collect();
        let mut time = Vec::with_capacity(16);
        for (i, &t) in self.t.iter().enumerate() {
            time.clear();
            numfmt::push_fixed(&mut time, t, 3);
            for (f, head) in self.flows.iter().zip(&heads) {
                b.extend_from_slice(&time);
                b.extend_from_slice(head);
                numfmt::push_fixed(&mut b, f.goodput_bps[i], 0);
                // Empty where it does not apply (NaN). Written out column by
                // column so each precision is a constant the formatter's
                // divisions are compiled for.
                let mut opt = |v: f64, prec: usize| {
                    b.push(b',');
                    if v.is_finite() {
                        numfmt::push_fixed(&mut b, v, prec);
                    }
                };
                opt(f.cwnd[i], 2);
                opt(f.rtt_s[i], 4);
                opt(f.rate_bps[i], 0);
                opt(f.x_recv_bps[i], 0);
                opt(f.p[i], 6);
                opt(f.feedback[i], 0);
                b.push(b'\n');
            }
            if b.len() >= BLOCK {
                w.write_all(&b)?;
                b.clear();
            }
        }
        w.write_all(&b)
    }

    /// Per-link CSV:
    /// `time_s,link,queue_pkts,utilization,drops,drops_queue,drops_red,drops_error,drops_ttl,drops_hook,drops_link_down`.
    pub fn links_csv(&self) -> String {
        let mut out = Vec::with_capacity(self.t.len() * self.links.len() * 48);
        let _ = self.write_links_csv(&mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    /// Writes [`Series::links_csv`]'s text to `w`, a block at a time.
    pub fn write_links_csv(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        let mut b = Vec::with_capacity(BLOCK + 4096);
        b.extend_from_slice(
            b"time_s,link,queue_pkts,utilization,drops,drops_queue,drops_red,drops_error,drops_ttl,drops_hook,drops_link_down\n",
        );
        let names: Vec<Vec<u8>> = self.links.iter().map(|l| csv_field(&l.name)).collect();
        let mut time = Vec::with_capacity(16);
        for (i, &t) in self.t.iter().enumerate() {
            time.clear();
            numfmt::push_fixed(&mut time, t, 3);
            for (l, name) in self.links.iter().zip(&names) {
                b.extend_from_slice(&time);
                b.push(b',');
                b.extend_from_slice(name);
                b.push(b',');
                numfmt::push_display(&mut b, l.queue_pkts[i]);
                b.push(b',');
                numfmt::push_fixed(&mut b, l.utilization[i], 4);
                for col in [
                    &l.drops,
                    &l.drops_queue,
                    &l.drops_red,
                    &l.drops_error,
                    &l.drops_ttl,
                    &l.drops_hook,
                    &l.drops_link_down,
                ] {
                    b.push(b',');
                    numfmt::push_display(&mut b, col[i]);
                }
                b.push(b'\n');
            }
            if b.len() >= BLOCK {
                w.write_all(&b)?;
                b.clear();
            }
        }
        w.write_all(&b)
    }
}

/// Bytes formatted before they are handed to the writer: large enough that
/// a write is one system call per 64 KiB, small enough to stay in cache.
const BLOCK: usize = 64 * 1024;

/// A user-given name as one CSV field: the csv crate's own quoting (a
/// field is quoted only when it holds `,`, `"` or a line break; numbers
/// never need it), so the files read as they always have.
fn csv_field(s: &str) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    // Two fields, so an empty name is written as an empty field (a record
    // of one empty field would be quoted).
    let _ = w.write_record([s, ""]);
    let mut v = w.into_inner().unwrap_or_default();
    // Drop the second, empty field and the terminator: ",\n".
    v.truncate(v.len().saturating_sub(2));
    v
}
