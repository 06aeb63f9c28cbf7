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
    /// Sample number of the first row `rtt_s`, `x_recv_bps`, `p` and
    /// `feedback` hold (0 unless [`Series::release_written`] dropped
    /// the rows before it).
    base: usize,
    /// The same for `cwnd` and `rate_bps` (released only when the plot
    /// cannot draw them).
    cwnd_base: usize,
    rate_base: usize,
}

/// A flow's window or rate column at a release ([`Series::release_written`]):
/// its rows before `*base & !LOST` are gone; whether they held a finite
/// value is told by `base`'s high bit ([`LOST`]).
/// `beyond` says `plotted` earlier flows have had a finite value, so this
/// one can never be drawn: emptied. Otherwise it is kept whole, except
/// while it has held nothing but NaN (as a TCP flow's rate): then only
/// the number of rows is kept, and the rows come back as NaN (which the
/// plot skips, as it skips NaN) when a finite value first shows. Returns
/// 1 if the column has ever held a finite value.
fn release_plotted(c: &mut Vec<f64>, base: &mut usize, beyond: bool, upto: usize) -> usize {
    let lost = *base & LOST != 0;
    let finite = c.iter().any(|x| x.is_finite());
    let ever = usize::from(lost || finite);
    if beyond || !finite {
        let n = c.len();
        c.clear();
        c.shrink_to(n);
        *base = upto | if lost || finite { LOST } else { 0 };
    } else if *base != 0 && !lost {
        // Only NaN was released: put it back in front.
        let mut whole = vec![f64::NAN; *base];
        whole.append(c);
        *c = whole;
        *base = 0;
    }
    ever
}

/// The bit of a window or rate column's base that says finite values were
/// released (so the column is never drawn whole again).
const LOST: usize = 1 << (usize::BITS - 1);

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
    /// Sample number of the first row of every column but `queue_pkts`
    /// (see [`Series::release_written`]).
    base: usize,
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

    /// Makes room for `samples` more samples in the columns that
    /// [`Series::release_written`] keeps whole whatever the run: the time,
    /// every flow's goodput and every link's queue length (the others grow
    /// a chunk at a time between releases).
    pub fn reserve_plotted(&mut self, samples: usize) {
        self.t.reserve(samples);
        for f in &mut self.flows {
            f.goodput_bps.reserve(samples);
        }
        for l in &mut self.links {
            l.queue_pkts.reserve(samples);
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

    /// A copy of the numbers of samples `rows` (indices into
    /// [`Series::t`]): what a writer on another thread needs to format
    /// those rows with a [`CsvFormat`] of `self` while the simulation goes
    /// on appending to `self`. Its rows are numbered from 0; flows and
    /// links keep their order, so their ids in the CSV files are the same.
    /// Names and protocols are left empty: the format holds them, and
    /// copying them for every chunk cost more than the numbers at 512
    /// flows.
    pub fn rows(&self, rows: std::ops::Range<usize>) -> Series {
        // Cut to the samples there are (an empty range for none).
        let end = rows.end.min(self.t.len());
        let r = rows.start.min(end)..end;
        let cut = |c: &Vec<f64>| c[r.clone()].to_vec();
        // A column whose rows before `base` were released holds sample
        // `k` at `k - base` (rows asked for are never released ones).
        let cut_from = |c: &Vec<f64>, base: usize| {
            let a = r.start.saturating_sub(base).min(c.len());
            let b = r.end.saturating_sub(base).clamp(a, c.len());
            c[a..b].to_vec()
        };
        Series {
            t: cut(&self.t),
            flows: self
                .flows
                .iter()
                .map(|f| FlowSeries {
                    name: String::new(),
                    protocol: String::new(),
                    goodput_bps: cut(&f.goodput_bps),
                    cwnd: cut_from(&f.cwnd, f.cwnd_base & !LOST),
                    rtt_s: cut_from(&f.rtt_s, f.base),
                    rate_bps: cut_from(&f.rate_bps, f.rate_base & !LOST),
                    x_recv_bps: cut_from(&f.x_recv_bps, f.base),
                    p: cut_from(&f.p, f.base),
                    feedback: cut_from(&f.feedback, f.base),
                    last_bytes: f.last_bytes,
                    last_feedback: f.last_feedback,
                    base: 0,
                    cwnd_base: 0,
                    rate_base: 0,
                })
                .collect(),
            links: self
                .links
                .iter()
                .map(|l| LinkSeries {
                    name: String::new(),
                    queue_pkts: cut(&l.queue_pkts),
                    utilization: cut_from(&l.utilization, l.base),
                    drops: cut_from(&l.drops, l.base),
                    drops_queue: cut_from(&l.drops_queue, l.base),
                    drops_red: cut_from(&l.drops_red, l.base),
                    drops_error: cut_from(&l.drops_error, l.base),
                    drops_ttl: cut_from(&l.drops_ttl, l.base),
                    drops_hook: cut_from(&l.drops_hook, l.base),
                    drops_link_down: cut_from(&l.drops_link_down, l.base),
                    last_busy: l.last_busy,
                    last: l.last,
                    base: 0,
                })
                .collect(),
            last_t: self.last_t,
        }
    }

    /// Drops the rows of every sample so far from the columns that a
    /// goodput plot does not draw, once they have been written (handed to
    /// [`Series::rows`]): what `satcc run` keeps in memory is then the
    /// time, every flow's goodput, the links' queue lengths, and the
    /// window and rate of the first `plotted` flows that have one (the
    /// plot draws those; a flow's window is released once `plotted`
    /// flows before it have shown a finite window, as it can no longer be
    /// among the first `plotted`; one that has held only NaN, as a TCP
    /// flow's rate, keeps only its length until a finite value shows, and
    /// gets its rows back as NaN then). At 512 flows that is one column
    /// of the 7 (goodput) and six flows' window or rate. Rows released are gone: [`Series::rows`]
    /// must not be asked for them again, and the whole-file writers
    /// ([`Series::write_flows_csv`]) need a series never released.
    pub fn release_written(&mut self, plotted: usize) {
        // Emptied, with room for as many rows as it held: the next chunk
        // is as long, so it is not regrown, and the room reserved for a
        // whole run (called before the first sample) is given back before
        // any of its pages is touched.
        fn empty(c: &mut Vec<f64>) {
            let n = c.len();
            c.clear();
            c.shrink_to(n);
        }
        let upto = self.t.len();
        let (mut cwnd_seen, mut rate_seen) = (0, 0);
        for f in &mut self.flows {
            for c in [&mut f.rtt_s, &mut f.x_recv_bps, &mut f.p, &mut f.feedback] {
                empty(c);
            }
            f.base = upto;
            cwnd_seen += release_plotted(&mut f.cwnd, &mut f.cwnd_base, cwnd_seen >= plotted, upto);
            rate_seen += release_plotted(
                &mut f.rate_bps,
                &mut f.rate_base,
                rate_seen >= plotted,
                upto,
            );
        }
        for l in &mut self.links {
            for c in [
                &mut l.utilization,
                &mut l.drops,
                &mut l.drops_queue,
                &mut l.drops_red,
                &mut l.drops_error,
                &mut l.drops_ttl,
                &mut l.drops_hook,
                &mut l.drops_link_down,
            ] {
                empty(c);
            }
            l.base = upto;
        }
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
        CsvFormat::new(self).write_flows(self, w, 0..self.t.len(), true)
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
        CsvFormat::new(self).write_links(self, w, 0..self.t.len(), true)
    }
}

/// Formats a series' CSV files a range of samples at a time: the whole
/// files ([`Series::write_flows_csv`], [`Series::write_links_csv`]) and
/// files written piece by piece while a run goes on come from the same
/// code, so they cannot differ. Consecutive ranges, the first with the
/// header line, make the whole file's bytes.
///
/// Holds the text fields of the flows and links, quoted once, so that
/// formatting many small ranges costs no more than one large one.
#[derive(Clone, Debug)]
pub struct CsvFormat {
    /// Per flow, its fields between the time and the numbers, with their
    /// separators: ",id,name,protocol,".
    flow_heads: Vec<Vec<u8>>,
    /// Per link, its name as a CSV field.
    link_names: Vec<Vec<u8>>,
}

impl CsvFormat {
    /// The format of `series`'s files, for it and for copies of its rows
    /// ([`Series::rows`]): anything with the same flows and links in the
    /// same order.
    pub fn new(series: &Series) -> CsvFormat {
        CsvFormat {
            flow_heads: series
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
                .collect(),
            link_names: series.links.iter().map(|l| csv_field(&l.name)).collect(),
        }
    }

    /// Writes the lines of [`Series::flows_csv`] for samples `rows` of `s`
    /// (one line per flow and sample; a range past the end is cut to it),
    /// preceded by the header line if `header`.
    pub fn write_flows(
        &self,
        s: &Series,
        w: &mut impl std::io::Write,
        rows: std::ops::Range<usize>,
        header: bool,
    ) -> std::io::Result<()> {
        let head: &[u8] = if header { FLOWS_CSV_HEADER } else { b"" };
        write_rows(s, w, rows, head, |b, time, i| {
            for (f, head) in s.flows.iter().zip(&self.flow_heads) {
                b.extend_from_slice(time);
                b.extend_from_slice(head);
                numfmt::push_fixed(b, f.goodput_bps[i], 0);
                // Empty where it does not apply (NaN). Written out column by
                // column so each precision is a constant the formatter's
                // divisions are compiled for.
                let mut opt = |v: f64, prec: usize| {
                    b.push(b',');
                    if v.is_finite() {
                        numfmt::push_fixed(b, v, prec);
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
        })
    }

    /// Writes the lines of [`Series::links_csv`] for samples `rows` of `s`,
    /// preceded by the header line if `header`.
    pub fn write_links(
        &self,
        s: &Series,
        w: &mut impl std::io::Write,
        rows: std::ops::Range<usize>,
        header: bool,
    ) -> std::io::Result<()> {
        let head: &[u8] = if header { LINKS_CSV_HEADER } else { b"" };
        write_rows(s, w, rows, head, |b, time, i| {
            for (l, name) in s.links.iter().zip(&self.link_names) {
                b.extend_from_slice(time);
                b.push(b',');
                b.extend_from_slice(name);
                b.push(b',');
                numfmt::push_display(b, l.queue_pkts[i]);
                b.push(b',');
                numfmt::push_fixed(b, l.utilization[i], 4);
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
                    numfmt::push_display(b, col[i]);
                }
                b.push(b'\n');
            }
        })
    }
}

/// The first line of flows.csv.
const FLOWS_CSV_HEADER: &[u8] =
    b"time_s,flow,name,protocol,goodput_bps,cwnd,rtt_s,rate_bps,x_recv_bps,p,feedback\n";

/// The first line of links.csv.
const LINKS_CSV_HEADER: &[u8] = b"time_s,link,queue_pkts,utilization,drops,drops_queue,drops_red,drops_error,drops_ttl,drops_hook,drops_link_down\n";

/// The frame both CSV files share: `head`, then for each sample `i` of
/// `rows` (cut to the samples there are) the lines `line` appends, given
/// the sample's time already formatted; handed to `w` a block at a time.
fn write_rows(
    s: &Series,
    w: &mut impl std::io::Write,
    rows: std::ops::Range<usize>,
    head: &[u8],
    mut line: impl FnMut(&mut Vec<u8>, &[u8], usize),
) -> std::io::Result<()> {
    let mut b = Vec::with_capacity(BLOCK + 4096);
    b.extend_from_slice(head);
    let mut time = Vec::with_capacity(16);
    for i in rows.start..rows.end.min(s.t.len()) {
        time.clear();
        numfmt::push_fixed(&mut time, s.t[i], 3);
        line(&mut b, &time, i);
        if b.len() >= BLOCK {
            w.write_all(&b)?;
            b.clear();
        }
    }
    w.write_all(&b)
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

#[cfg(test)]
mod tests {
    use super::*;
    use satcc_proto::Duration;

    /// A series of two flows (a window-based one, and a rate-based one
    /// whose name needs quoting) and two links over `n` samples, with
    /// values that change from sample to sample.
    fn sampled(n: u64) -> Series {
        let mut s = two_flows();
        for k in 1..=n {
            sample_k(&mut s, k);
        }
        s
    }

    fn two_flows() -> Series {
        Series::new(
            [
                ("bulk".to_string(), "sack".to_string()),
                ("a,\"b\"".to_string(), "tfrc".to_string()),
            ],
            ["up".to_string(), "down link".to_string()],
        )
    }

    /// Sample `k` (from 1) of [`sampled`].
    fn sample_k(s: &mut Series, k: u64) {
        let window = FlowSample {
            delivered_bytes: 1000 * k * k,
            sender: Stats {
                cwnd: Some(k as f64 * 1.25),
                srtt: (k > 2).then(|| Duration::from_millis(500 + k)),
                ..Stats::default()
            },
            feedback_sent: None,
        };
        let rate = FlowSample {
            delivered_bytes: 700 * k,
            sender: Stats {
                rate: Some(RateStats {
                    x_bps: 1e6 / k as f64,
                    x_recv_bps: 9e5,
                    p: 0.001 * k as f64,
                }),
                ..Stats::default()
            },
            feedback_sent: Some(3 * k),
        };
        let link = |q: usize| LinkSample {
            queue_pkts: q,
            busy_ns: 70_000_000 * k,
            drops: [k, k / 2, 0, k / 3, 0, 0, 1],
        };
        s.sample(
            Instant(100_000_000 * k),
            [window, rate],
            [link(k as usize), link(0)],
        );
    }

    fn text(f: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> String {
        let mut v = Vec::new();
        f(&mut v).expect("written to memory");
        String::from_utf8(v).expect("utf-8")
    }

    #[test]
    fn ranges_of_rows_make_the_whole_file() {
        let s = sampled(9);
        let fmt = CsvFormat::new(&s);
        let n = s.t.len();
        let (flows, links) = (s.flows_csv(), s.links_csv());
        assert_eq!(flows.lines().count(), 1 + 2 * n);
        assert!(flows.contains(",1,\"a,\"\"b\"\"\",tfrc,"), "{flows}");
        for k in 0..=n {
            let f = text(|w| fmt.write_flows(&s, w, 0..k, true))
                + &text(|w| fmt.write_flows(&s, w, k..n, false));
            assert_eq!(f, flows, "flows split at {k}");
            let l = text(|w| fmt.write_links(&s, w, 0..k, true))
                + &text(|w| fmt.write_links(&s, w, k..n, false));
            assert_eq!(l, links, "links split at {k}");
        }
        // An empty range writes the header or nothing; a range past the
        // end is cut to it.
        assert_eq!(text(|w| fmt.write_flows(&s, w, 3..3, false)), "");
        assert_eq!(
            text(|w| fmt.write_links(&s, w, 0..0, true)),
            links.lines().next().unwrap_or_default().to_string() + "\n"
        );
        assert_eq!(text(|w| fmt.write_flows(&s, w, 0..n + 5, true)), flows);
    }

    #[test]
    fn copied_rows_format_as_the_rows_they_copy() {
        let s = sampled(7);
        let fmt = CsvFormat::new(&s);
        let n = s.t.len();
        let mut flows = text(|w| fmt.write_flows(&s, w, 0..0, true));
        let mut links = text(|w| fmt.write_links(&s, w, 0..0, true));
        for r in [0..2, 2..3, 3..3, 3..n] {
            let c = s.rows(r.clone());
            assert_eq!(c.t.len(), r.len());
            flows += &text(|w| fmt.write_flows(&c, w, 0..c.t.len(), false));
            links += &text(|w| fmt.write_links(&c, w, 0..c.t.len(), false));
        }
        assert_eq!(flows, s.flows_csv());
        assert_eq!(links, s.links_csv());
        assert!(s.rows(n..n + 3).t.is_empty());
        // A range that ends before it starts is empty.
        assert!(s.rows(n - 2..n - 4).t.is_empty());
    }

    /// `satcc run`'s way: rows handed over in chunks, then released from
    /// the columns the plot does not draw. The chunks make the same files
    /// as the whole series; what stays is what the plot reads, whole; the
    /// released columns hold no more than one chunk.
    #[test]
    fn released_rows_still_make_the_whole_file() {
        let whole = sampled(23);
        for plotted in [0, 1, 6] {
            let mut s = two_flows();
            let fmt = CsvFormat::new(&s);
            let mut flows = text(|w| fmt.write_flows(&s, w, 0..0, true));
            let mut links = text(|w| fmt.write_links(&s, w, 0..0, true));
            let mut sent = 0;
            for k in 1..=23u64 {
                sample_k(&mut s, k);
                if k % 5 == 0 || k == 23 {
                    let c = s.rows(sent..s.t.len());
                    flows += &text(|w| fmt.write_flows(&c, w, 0..c.t.len(), false));
                    links += &text(|w| fmt.write_links(&c, w, 0..c.t.len(), false));
                    sent = s.t.len();
                    s.release_written(plotted);
                    assert!(s.flows[0].rtt_s.is_empty() && s.links[1].drops.is_empty());
                }
            }
            assert_eq!(flows, whole.flows_csv(), "plotted {plotted}");
            assert_eq!(links, whole.links_csv(), "plotted {plotted}");
            // Kept whole: time, goodput, queues; windows and rates of the
            // first `plotted` flows that have them (flow 0's window,
            // flow 1's rate; flow 1 has no window, flow 0 no rate).
            assert_eq!(s.t, whole.t);
            for f in 0..2 {
                assert_eq!(s.flows[f].goodput_bps, whole.flows[f].goodput_bps);
            }
            assert_eq!(s.links[0].queue_pkts, whole.links[0].queue_pkts);
            let same = |a: &[f64], b: &[f64]| format!("{a:?}") == format!("{b:?}");
            assert_eq!(
                same(&s.flows[0].cwnd, &whole.flows[0].cwnd),
                plotted >= 1,
                "plotted {plotted}"
            );
            assert_eq!(
                same(&s.flows[1].rate_bps, &whole.flows[1].rate_bps),
                plotted >= 1,
                "plotted {plotted}"
            );
            // Columns that held only NaN keep only their length.
            assert!(s.flows[1].cwnd.is_empty() && s.flows[0].rate_bps.is_empty());
        }
    }

    /// A window that shows only after some releases (a flow that starts
    /// late) is drawn whole: its released rows come back as NaN.
    #[test]
    fn a_late_window_gets_its_released_rows_back_as_nan() {
        let mut s = Series::new([("late".to_string(), "sack".to_string())], []);
        for k in 1..=12u64 {
            let sender = Stats {
                cwnd: (k > 7).then_some(k as f64),
                ..Stats::default()
            };
            let f = FlowSample {
                delivered_bytes: k,
                sender,
                feedback_sent: None,
            };
            s.sample(Instant(k * 1_000_000), [f], []);
            if k % 3 == 0 {
                s.release_written(1);
                let c = &s.flows[0].cwnd;
                assert_eq!(c.is_empty(), k < 8, "sample {k}");
            }
        }
        let c = &s.flows[0].cwnd;
        assert_eq!(c.len(), 12);
        assert!(c[..7].iter().all(|x| x.is_nan()));
        assert_eq!(c[7..], [8.0, 9.0, 10.0, 11.0, 12.0]);
    }
}
