//! What `satcc run` prints and writes.

use std::fmt::Write as _;
use std::path::Path;

use satcc_sim::partial::{write_whole, write_with, Partial};
use satcc_sim::report::plot::{stacked_charts_svg, Chart, Series as PlotSeries};
use satcc_sim::report::series::{CsvFormat, Series};
use satcc_sim::report::Summary;
use satcc_sim::RunOutput;

/// The summary as pretty JSON.
pub fn summary_json(s: &Summary) -> String {
    serde_json::to_string_pretty(s).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

/// Jain's index to three places, or "n/a" where it is undefined (every
/// flow at 0 b/s: the formula is 0/0).
pub fn fmt_jain(j: Option<f64>) -> String {
    j.map_or_else(|| "n/a".into(), |j| format!("{j:.3}"))
}

/// Human units for a rate.
pub fn fmt_bps(v: f64) -> String {
    if v >= 1e9 {
        format!("{:.2} Gb/s", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.2} Mb/s", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1} kb/s", v / 1e3)
    } else {
        format!("{v:.0} b/s")
    }
}

/// The table printed after a simulated run.
pub fn summary_table(s: &Summary) -> String {
    let head = format!(
        "scenario {}  seed {}  simulated {:.1} s  events {}{}",
        s.scenario,
        s.seed,
        s.duration_s,
        s.events,
        s.wall_s
            .map(|w| format!(
                "  wall {:.2} s ({:.1} M events/s)",
                w,
                s.events as f64 / w.max(1e-9) / 1e6
            ))
            .unwrap_or_default()
    );
    table_with_head(s, &head)
}

/// The table printed after `satcc run --real`: its first line speaks of
/// wall-clock time and of the packets the emulated links carried (a real
/// run's `events`: loopback UDP datagrams and, with TCP flows, the kernel
/// TCP segments crossing from the namespaces), not simulated time and
/// events.
pub fn real_summary_table(s: &Summary) -> String {
    let head = format!(
        "scenario {}  seed {}  real {:.1} s  packets through the emulated links {}",
        s.scenario, s.seed, s.duration_s, s.events
    );
    table_with_head(s, &head)
}

fn table_with_head(s: &Summary, head: &str) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{head}");
    let _ = writeln!(o);
    const MAX_ROWS: usize = 40;
    let _ = writeln!(
        o,
        "{:>4}  {:<12} {:<10} {:>12} {:>7} {:>8} {:>7} {:>5} {:>8}",
        "flow", "name", "proto", "goodput", "share", "drops", "retx", "RTOs", "rtt"
    );
    for f in s.flows.iter().take(MAX_ROWS) {
        let _ = writeln!(
            o,
            "{:>4}  {:<12} {:<10} {:>12} {:>6.1}% {:>8} {:>7} {:>5} {:>8}",
            f.id,
            truncate(&f.name, 12),
            f.protocol,
            fmt_bps(f.goodput_bps),
            f.share * 100.0,
            f.drops,
            f.retransmits,
            f.timeouts,
            f.mean_rtt_s
                .map(|r| format!("{:.0} ms", r * 1e3))
                .unwrap_or_else(|| "-".into())
        );
    }
    if s.flows.len() > MAX_ROWS {
        let _ = writeln!(
            o,
            "  ... {} more flows in summary.json",
            s.flows.len() - MAX_ROWS
        );
    }
    let fb: Vec<_> = s
        .flows
        .iter()
        .filter_map(|f| Some((f, f.feedback_packets?, f.loss_event_rate?)))
        .collect();
    if !fb.is_empty() {
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "{:>4}  {:<12} {:>10} {:>11} {:>12}",
            "flow", "feedback", "packets", "per second", "loss event p"
        );
        for (f, n, p) in fb.iter().take(MAX_ROWS) {
            let _ = writeln!(
                o,
                "{:>4}  {:<12} {:>10} {:>11.2} {:>12.5}",
                f.id,
                truncate(&f.name, 12),
                n,
                *n as f64 / s.duration_s.max(1e-9),
                p
            );
        }
    }
    let dm: Vec<_> = s
        .flows
        .iter()
        .filter_map(|f| Some((f, f.dummy.as_ref()?)))
        .collect();
    if !dm.is_empty() {
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "{:>4}  {:<12} {:>9} {:>10} {:>9} {:>9}",
            "flow", "dummies", "sent", "ACKed", "overhead", "receiver"
        );
        for (f, d) in dm.iter().take(MAX_ROWS) {
            let _ = writeln!(
                o,
                "{:>4}  {:<12} {:>9} {:>10} {:>8.1}% {:>9}",
                f.id,
                truncate(&f.name, 12),
                d.packets_sent,
                d.acks_received,
                d.overhead * 100.0,
                if d.fallback { "plain" } else { "echoes" }
            );
        }
        let (sent, data) = dm.iter().fold((0, 0), |(a, b), (f, d)| {
            (a + d.packets_sent, b + f.packets_sent)
        });
        let _ = writeln!(
            o,
            "dummy overhead: {:.1}% (dummy segments per data segment, all Peach flows)",
            sent as f64 * 100.0 / data.max(1) as f64
        );
    }
    let files: Vec<_> = s
        .flows
        .iter()
        .filter_map(|f| Some((f, f.mean_file_time_s?)))
        .collect();
    if !files.is_empty() {
        let n: u64 = files.iter().map(|(f, _)| f.files_completed).sum();
        let t: f64 = files
            .iter()
            .map(|(f, t)| t * f.files_completed as f64)
            .sum();
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "files: {n} completed, mean transfer time {:.3} s",
            t / n.max(1) as f64
        );
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "{:<11} {:>6} {:>14} {:>7} {:>7}",
        "protocol", "flows", "goodput", "share", "jain"
    );
    for c in &s.classes {
        let _ = writeln!(
            o,
            "{:<11} {:>6} {:>14} {:>6.1}% {:>7}",
            c.protocol,
            c.flows,
            fmt_bps(c.goodput_bps),
            c.share * 100.0,
            fmt_jain(c.jain)
        );
    }
    let _ = writeln!(o, "all flows: Jain fairness index {}", fmt_jain(s.jain));
    let _ = writeln!(o, "{JAIN_LEGEND}");
    if let (Some(n), Some(fr)) = (s.normalized_tcp_throughput, s.friendliness) {
        let _ = writeln!(
            o,
            "TCP vs the rest: normalized TCP throughput {n:.3} (1 = fair share), F {:.3}, E {:.3}, FC {}",
            fr.f,
            fr.e,
            fr.fc
                .map_or("unbounded (a flow got nothing)".into(), |x| format!("{x:.2}"))
        );
        let _ = writeln!(o, "{FRIENDLINESS_LEGEND}");
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "{:<16} {:>11} {:>7} {:>9} {:>8} {:>8} {:>8} {:>8} {:>10}",
        "link", "rate", "util", "loss", "q-drops", "red", "errors", "other", "mean queue"
    );
    for l in &s.links {
        let _ = writeln!(
            o,
            "{:<16} {:>11} {:>6.1}% {:>8.3}% {:>8} {:>8} {:>8} {:>8} {:>10.1}",
            truncate(&l.name, 16),
            fmt_bps(l.rate_bps as f64),
            l.utilization * 100.0,
            l.loss * 100.0,
            l.drops_queue,
            l.drops_red,
            l.drops_error,
            l.drops_ttl + l.drops_hook + l.drops_link_down,
            l.mean_queue_pkts
        );
    }
    if !s.refwa.is_empty() {
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "{:<16} {:>8} {:>8} {:>12} {:>9} {:>8} {:>6}",
            "REFWA on", "recomp", "ops/rec", "acks lowered", "Υ pkts", "RTT_avg", "flows"
        );
        for r in &s.refwa {
            let _ = writeln!(
                o,
                "{:<16} {:>8} {:>8} {:>12} {:>9.1} {:>5.0} ms {:>6}",
                truncate(&r.link, 16),
                r.recomputations,
                r.ops_max,
                r.acks_rewritten,
                r.upsilon,
                r.rtt_avg_s * 1e3,
                r.active_flows
            );
        }
        let _ = writeln!(o, "{REFWA_LEGEND}");
    }
    o
}

/// Under tables that show Jain's index.
pub const JAIN_LEGEND: &str =
    "  jain: Jain's fairness index of the flows' goodputs, 1/n (one flow gets all) to 1 (all equal), n/a if none delivered anything";
/// Under tables that show F, E and FC (paper 004 §III-B).
pub const FRIENDLINESS_LEGEND: &str =
    "  F: mean non-TCP / mean TCP goodput (1 = TCP-friendly); E: max(F, 1/F); \
FC: max / min goodput among the non-TCP flows (1 = equal; large when one of them was starved)";
/// Under the REFWA table.
pub const REFWA_LEGEND: &str =
    "  Υ: the aggregate window (packets) REFWA shares among the flows of the link \
(paper 003 eq. 2); RTT_avg: their mean RTT; ops/rec: most operations in one recomputation";

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('~');
        t
    }
}

/// Writes summary.json (deterministic), run.json (timing), CSV series and
/// the plot. With `streamed`, flows.csv and links.csv have been written
/// during the run: the writer is handed the samples it has not seen yet
/// and finished, and the series are not formatted again here.
pub fn write_files(
    dir: &Path,
    out: &RunOutput,
    streamed: Option<SeriesWriter>,
) -> std::io::Result<()> {
    // Each file is written whole under a temporary name, then renamed: a
    // run interrupted while writing never leaves a truncated file under a
    // name a script would read. (A streamed writer dropped on an early
    // return below removes its partial files.)
    let mut det = out.summary.clone();
    let wall = det.wall_s.take();
    write_whole(dir.join("summary.json"), summary_json(&det) + "\n")?;
    let run = serde_json::json!({
        "satcc_version": env!("CARGO_PKG_VERSION"),
        "wall_s": wall,
        "events": det.events,
        "events_per_s": wall.map(|w| det.events as f64 / w.max(1e-9)),
    });
    write_whole(
        dir.join("run.json"),
        serde_json::to_string_pretty(&run).unwrap_or_default() + "\n",
    )?;
    let Some(series) = &out.series else {
        return match streamed {
            // Nothing to finish the files with: not a run's series.
            Some(_) => Err(std::io::Error::other("no series to write")),
            None => Ok(()),
        };
    };
    let svg = || charts_svg(&out.summary, series);
    if let Some(mut w) = streamed {
        // The plot's file is created before the writer renames the CSV
        // files into place: renaming over a previous run's large file
        // holds the directory for milliseconds, and creating a file in it
        // would wait for that.
        let plot = Partial::beside(dir.join("goodput.svg"));
        let file = plot.create();
        // The writer formats the last samples and renames the files while
        // this thread draws the plot.
        w.commit(series);
        // On an error `plot` is dropped, which removes its partial file.
        let plot = file.and_then(|mut f| {
            std::io::Write::write_all(&mut f, svg().as_bytes())?;
            drop(f);
            plot.commit()
        });
        return w.finish().and(plot);
    }
    // No writer during the run (`satcc run --real`): the series are
    // streamed to the files as they are formatted, so the text of a long
    // run is never held whole in memory. flows.csv, most of the bytes, is
    // written on a second thread while this one writes links.csv and draws
    // the plot from the same columns.
    std::thread::scope(|s| {
        let flows = s.spawn(|| {
            write_with(Partial::beside(dir.join("flows.csv")), |w| {
                series.write_flows_csv(w)
            })
        });
        let rest = write_with(Partial::beside(dir.join("links.csv")), |w| {
            series.write_links_csv(w)
        })
        .and_then(|()| write_whole(dir.join("goodput.svg"), svg()));
        let flows = flows
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("flows.csv writer panicked")));
        rest.and(flows)
    })
}

/// Chunks handed to the CSV writer thread but not yet written, at most:
/// the text is formatted as it arrives, so memory stays bounded whatever
/// the run's length (a full channel holds the simulation back).
const CHUNKS_IN_FLIGHT: usize = 4;

/// Lines (flows and links) in a chunk handed to the writer, at least
/// (but the last): a few hundred kilobytes of text, so that the writer
/// is woken, and the samples copied, a few dozen times in a run rather
/// than after every slice of it.
const CHUNK_LINES: usize = 4096;

/// flows.csv and links.csv written while the simulation runs, on a thread
/// of their own, instead of formatted after it: the simulation takes one
/// core, and formatting the series, the bulk of the output's cost, goes on
/// beside it on another.
///
/// The files are written as `.flows.csv.partial` and `.links.csv.partial`
/// and renamed once complete ([`SeriesWriter::commit`]); on any error, or
/// if the writer is dropped uncommitted, the partial files are removed, so
/// a half-written file never appears under the final name. The bytes are
/// those of [`Series::write_flows_csv`] and [`Series::write_links_csv`],
/// written by the same formatter a range of samples at a time.
#[derive(Debug)]
pub struct SeriesWriter {
    /// Samples handed over so far.
    sent: usize,
    /// `None` once the writer has stopped (on an error) or been told that
    /// all is sent.
    to_writer: Option<std::sync::mpsc::SyncSender<ToWriter>>,
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
    /// Whether [`SeriesWriter::commit`] reached the writer.
    committed: bool,
}

/// What the simulation's side tells the writer thread.
#[derive(Debug)]
enum ToWriter {
    /// The next samples, in order.
    Rows(Series),
    /// Every sample has been sent: complete the files and rename them into
    /// place. Without it (the channel closed early) the writer only stops.
    Commit,
}

impl SeriesWriter {
    /// Creates the partial files in `dir` and starts the writer thread,
    /// which writes the header lines for `series`'s flows and links (the
    /// series as recorded so far: the names are fixed from the start).
    pub fn start(dir: &Path, series: &Series) -> std::io::Result<SeriesWriter> {
        // The thread owns the two files: it renames them on a commit, and
        // dropping them (on an error, a panic, or the channel closed
        // without a commit) removes them.
        let files = ["flows.csv", "links.csv"].map(|n| Partial::beside(dir.join(n)));
        let mut w = SeriesWriter {
            sent: 0,
            to_writer: None,
            thread: None,
            committed: false,
        };
        // Created here rather than on the thread, so that an unwritable
        // directory is reported before the run, not after it. On an error
        // `files` is dropped and removes whichever file was created.
        let flows = files[0].create()?;
        let links = files[1].create()?;
        let (tx, rx) = std::sync::mpsc::sync_channel::<ToWriter>(CHUNKS_IN_FLIGHT);
        // The names are fixed from the start: quoted once, here.
        let format = CsvFormat::new(series);
        let thread = std::thread::Builder::new()
            .name("satcc-csv".into())
            .spawn(move || {
                // A chunk's last lines are gathered into whole blocks with
                // the next chunk's before they reach the file.
                let mut flows = std::io::BufWriter::with_capacity(64 * 1024, flows);
                let mut links = std::io::BufWriter::with_capacity(64 * 1024, links);
                let none = Series::default();
                format.write_flows(&none, &mut flows, 0..0, true)?;
                format.write_links(&none, &mut links, 0..0, true)?;
                // Returning on an error drops the receiver: the simulation
                // side sees it at its next send and stops sending.
                for m in rx {
                    match m {
                        ToWriter::Rows(c) => {
                            let n = c.t.len();
                            format.write_flows(&c, &mut flows, 0..n, false)?;
                            format.write_links(&c, &mut links, 0..n, false)?;
                            start_writeback(flows.get_ref());
                        }
                        ToWriter::Commit => {
                            std::io::Write::flush(&mut flows)?;
                            std::io::Write::flush(&mut links)?;
                            drop((flows, links));
                            // Here rather than on the simulation's thread:
                            // renaming over a previous run's files frees
                            // their pages, which takes a while for large
                            // ones, and that thread has the plot to draw.
                            for f in files {
                                f.commit()?;
                            }
                            return Ok(());
                        }
                    }
                }
                Ok(())
            })?;
        w.to_writer = Some(tx);
        w.thread = Some(thread);
        Ok(w)
    }

    /// Hands the writer the samples `series` has recorded since the last
    /// hand-over, once they make at least [`CHUNK_LINES`] lines (or all of
    /// them with `all`): a copy of them, so the simulation can go on
    /// appending. Blocks only while [`CHUNKS_IN_FLIGHT`] chunks wait to be
    /// written. After the writer has stopped on an error this does
    /// nothing; [`SeriesWriter::finish`] reports the error.
    pub fn send_new(&mut self, series: &Series, all: bool) {
        let n = series.t.len();
        let per_sample = (series.flows.len() + series.links.len()).max(1);
        if n <= self.sent || (!all && (n - self.sent) * per_sample < CHUNK_LINES) {
            return;
        }
        if let Some(tx) = &self.to_writer {
            if tx.send(ToWriter::Rows(series.rows(self.sent..n))).is_err() {
                self.to_writer = None;
            }
        }
        self.sent = n;
    }

    /// Whether every sample `series` holds has been handed over (so its
    /// rows may be released: [`Series::release_written`]).
    pub fn all_sent(&self, series: &Series) -> bool {
        self.sent == series.t.len()
    }

    /// Hands over the samples `series` holds that the writer has not had,
    /// and has it complete the files and rename them into place; returns
    /// at once, so the caller can go on (draw the plot) while the writer
    /// finishes. [`SeriesWriter::finish`] waits for it.
    pub fn commit(&mut self, series: &Series) {
        self.send_new(series, true);
        if let Some(tx) = self.to_writer.take() {
            self.committed = tx.send(ToWriter::Commit).is_ok();
        }
    }

    /// Waits for the writer. Ok if it wrote and renamed both files after
    /// [`SeriesWriter::commit`]; otherwise the writer's error (its
    /// partial files are gone with it).
    pub fn finish(mut self) -> std::io::Result<()> {
        match self.join() {
            Ok(()) if !self.committed => Err(std::io::Error::other(
                "the CSV files were not complete (SeriesWriter::commit was not called)",
            )),
            r => r,
        }
    }

    /// Closes the channel (uncommitted, if not yet) and waits for the
    /// thread: what it returned.
    fn join(&mut self) -> std::io::Result<()> {
        self.to_writer = None;
        match self.thread.take() {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("CSV writer thread panicked"))),
            None => Ok(()),
        }
    }
}

impl Drop for SeriesWriter {
    /// Not finished (an error elsewhere ended the run's output): closing
    /// the channel uncommitted stops the writer, whose partial files are
    /// removed as it drops them. A commit already sent is waited for and
    /// its files kept: they are complete.
    fn drop(&mut self) {
        let _ = self.join();
    }
}

/// Asks the kernel to start writing `f`'s dirty pages to disk, without
/// waiting for them. Only to save time at the end: ext4 writes a file out
/// when it is renamed over an existing one (the `auto_da_alloc` safeguard),
/// and for flows.csv, megabytes written since the run began, that takes
/// milliseconds the rename would otherwise spend; started chunk by chunk
/// on the writer's thread, most of it is done while the run goes on.
/// Errors are ignored: nothing depends on it.
#[cfg(target_os = "linux")]
fn start_writeback(f: &std::fs::File) {
    use std::os::fd::AsRawFd;
    // SAFETY: `f` is an open file for the whole call; sync_file_range
    // reads nothing from this process's memory.
    unsafe {
        libc::sync_file_range(f.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
    }
}

#[cfg(not(target_os = "linux"))]
fn start_writeback(_: &std::fs::File) {}

/// Per-flow lines up to this many flows; beyond, per protocol the mean
/// over its flows with the lowest and highest flow at each sample (eight
/// overlapping lines of one protocol are a tangle nobody can read).
pub const MAX_FLOW_LINES: usize = 6;

/// The value below which `q` of the finite values lie (nearest rank).
fn quantile(mut v: Vec<f64>, q: f64) -> Option<f64> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let k = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1;
    Some(v[k])
}

/// Where a y axis should end: a little above the link capacity drawn (for
/// goodput), or above the `q` quantile of the points if higher, so that a
/// single burst (a hole filled, a cumulative ACK) does not flatten every
/// other line (issue 33). `None` when the data's own top is lower.
fn axis_top(lines: &[PlotSeries], capacity: Option<f64>, q: f64) -> Option<f64> {
    let all: Vec<f64> = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .collect();
    let p = quantile(all, q)?;
    Some(p.max(capacity.unwrap_or(0.0)) * 1.1)
}

/// Goodput, congestion window, queue length and drops over time, stacked;
/// the x axes run over the run, [0, `duration_s`]. Per protocol, the total
/// goodput (what comparing protocols is about), against the capacity of
/// the busiest link; per flow, each flow's up to [`MAX_FLOW_LINES`] flows,
/// else the mean, lowest and highest flow on an axis of their own. Panels
/// say what they leave out (flows past the first six, links whose queue
/// never held a packet).
pub fn charts_svg(summary: &Summary, s: &Series) -> String {
    let duration_s = summary.duration_s;
    let pts = |ys: &[f64], k: f64| -> Vec<(f64, f64)> {
        s.t.iter().zip(ys).map(|(&t, &y)| (t, y * k)).collect()
    };
    let n = s.t.len();
    let interval = match s.t.as_slice() {
        [a, b, ..] => Some(b - a),
        _ => None,
    };
    let every = interval.map_or(String::new(), |i| {
        format!(", sampled every {} s", trim_num(i))
    });
    // Per protocol: (name, flows, sum, min, max) at every sample.
    type Class = (String, usize, Vec<f64>, Vec<f64>, Vec<f64>);
    let mut classes: Vec<Class> = Vec::new();
    for f in &s.flows {
        let i = match classes.iter().position(|c| c.0 == f.protocol) {
            Some(i) => i,
            None => {
                classes.push((
                    f.protocol.clone(),
                    0,
                    vec![0.0; n],
                    vec![f64::INFINITY; n],
                    vec![f64::NEG_INFINITY; n],
                ));
                classes.len() - 1
            }
        };
        let c = &mut classes[i];
        c.1 += 1;
        for (k, &g) in f.goodput_bps.iter().enumerate().take(n) {
            c.2[k] += g;
            c.3[k] = c.3[k].min(g);
            c.4[k] = c.4[k].max(g);
        }
    }
    // The busiest link's capacity: the reference the totals fill.
    let busiest = summary
        .links
        .iter()
        .filter(|l| l.rate_bps > 0)
        .max_by(|a, b| a.utilization.total_cmp(&b.utilization));
    let capacity = busiest.map(|l| l.rate_bps as f64 * 1e-6);
    let per_flow = s.flows.len() <= MAX_FLOW_LINES;
    let mut goodput: Vec<PlotSeries> = Vec::new();
    if per_flow {
        goodput.extend(s.flows.iter().map(|f| PlotSeries {
            name: f.name.clone(),
            points: pts(&f.goodput_bps, 1e-6),
        }));
    }
    // Totals when they say something the flows do not: several flows of a
    // protocol, or too many flows to draw.
    if !per_flow || classes.iter().any(|c| c.1 > 1) {
        for (p, flows, sum, _, _) in &classes {
            goodput.push(PlotSeries {
                name: format!("{p}: total of {flows}"),
                points: pts(sum, 1e-6),
            });
        }
    }
    if let (Some(cap), Some(l)) = (capacity, busiest) {
        goodput.push(PlotSeries {
            name: format!("{} capacity", l.name),
            points: vec![(0.0, cap), (duration_s, cap)],
        });
    }
    let top = axis_top(&goodput, capacity, 0.99);
    let mut charts = vec![Chart {
        title: format!(
            "{}, seed {}: goodput{}",
            summary.scenario,
            summary.seed,
            if per_flow { "" } else { " per protocol" }
        ),
        x_label: "time (s)".into(),
        y_label: "goodput (Mb/s, per interval)".into(),
        series: goodput,
        y_min: Some(0.0),
        x_range: Some((0.0, duration_s)),
        y_max: top,
    }];
    if !per_flow {
        let mut lines = Vec::new();
        for (p, flows, sum, min, max) in &classes {
            let mean: Vec<f64> = sum.iter().map(|x| x / *flows as f64).collect();
            lines.push(PlotSeries {
                name: format!("{p}: mean of {flows}"),
                points: pts(&mean, 1e-6),
            });
            if *flows > 1 {
                lines.push(PlotSeries {
                    name: format!("{p}: lowest flow"),
                    points: pts(min, 1e-6),
                });
                lines.push(PlotSeries {
                    name: format!("{p}: highest flow"),
                    points: pts(max, 1e-6),
                });
            }
        }
        let top = axis_top(&lines, None, 0.99);
        charts.push(Chart {
            title: format!("goodput per flow, {} flows", s.flows.len()),
            x_label: "time (s)".into(),
            y_label: "goodput (Mb/s, per interval)".into(),
            series: lines,
            y_min: Some(0.0),
            x_range: Some((0.0, duration_s)),
            y_max: top,
        });
    }
    let of_flows = |shown: usize, with: usize| {
        if shown < with {
            format!(" (the first {shown} of {with} flows)")
        } else {
            String::new()
        }
    };
    let with_cwnd = s
        .flows
        .iter()
        .filter(|f| f.cwnd.iter().any(|c| c.is_finite()))
        .count();
    let cwnd: Vec<PlotSeries> = s
        .flows
        .iter()
        .filter(|f| f.cwnd.iter().any(|c| c.is_finite()))
        .take(MAX_FLOW_LINES)
        .map(|f| PlotSeries {
            name: f.name.clone(),
            points: pts(&f.cwnd, 1.0),
        })
        .collect();
    let with_rate = s
        .flows
        .iter()
        .filter(|f| f.rate_bps.iter().any(|c| c.is_finite()))
        .count();
    let rate: Vec<PlotSeries> = s
        .flows
        .iter()
        .filter(|f| f.rate_bps.iter().any(|c| c.is_finite()))
        .take(MAX_FLOW_LINES)
        .map(|f| PlotSeries {
            name: f.name.clone(),
            points: pts(&f.rate_bps, 1e-6),
        })
        .collect();
    if !rate.is_empty() {
        charts.push(Chart {
            title: format!(
                "allowed sending rate X (TFRC/CCID3){}",
                of_flows(rate.len(), with_rate)
            ),
            x_label: "time (s)".into(),
            y_label: "X (Mb/s)".into(),
            series: rate,
            y_min: Some(0.0),
            x_range: Some((0.0, duration_s)),
            y_max: None,
        });
    }
    if !cwnd.is_empty() {
        charts.push(Chart {
            title: format!("congestion window{}", of_flows(cwnd.len(), with_cwnd)),
            x_label: "time (s)".into(),
            y_label: "cwnd (segments)".into(),
            series: cwnd,
            y_min: Some(0.0),
            x_range: Some((0.0, duration_s)),
            y_max: None,
        });
    }
    if !s.links.is_empty() {
        // Links whose queue never held a packet would lie on top of each
        // other at zero: named in the title instead.
        let (queued, empty): (Vec<_>, Vec<_>) = s
            .links
            .iter()
            .partition(|l| l.queue_pkts.iter().any(|q| *q > 0.0));
        let title = format!("queue length{every}");
        let mut x_label = "time (s)".to_string();
        if !empty.is_empty() {
            let names: Vec<&str> = empty.iter().map(|l| l.name.as_str()).collect();
            let list = if names.len() > 4 {
                format!("{} and {} more", names[..4].join(", "), names.len() - 4)
            } else {
                names.join(", ")
            };
            x_label.push_str(&format!("; queue empty at every sample: {list}"));
        }
        charts.push(Chart {
            title,
            x_label,
            y_label: "packets".into(),
            series: queued
                .iter()
                .map(|l| PlotSeries {
                    name: l.name.clone(),
                    points: pts(&l.queue_pkts, 1.0),
                })
                .collect(),
            y_min: Some(0.0),
            x_range: Some((0.0, duration_s)),
            y_max: None,
        });
        // Where packets were lost, and why: queue overflow (and RED) or
        // link errors, per link that lost any.
        let mut drops = Vec::new();
        for l in &s.links {
            for (why, v) in [
                ("queue", &l.drops_queue),
                ("RED", &l.drops_red),
                ("errors", &l.drops_error),
                ("other", &l.drops),
            ] {
                let v: Vec<f64> = if why == "other" {
                    // Everything not counted above: TTL, router hook, link down.
                    (0..v.len())
                        .map(|k| {
                            let at = |x: &Vec<f64>| x.get(k).copied().unwrap_or(0.0);
                            v[k] - at(&l.drops_queue) - at(&l.drops_red) - at(&l.drops_error)
                        })
                        .collect()
                } else {
                    v.clone()
                };
                if v.iter().any(|d| *d > 0.0) {
                    drops.push(PlotSeries {
                        name: format!("{} ({why})", l.name),
                        points: pts(&v, 1.0),
                    });
                }
            }
        }
        if !drops.is_empty() {
            // A burst of overflow drops would flatten the trickle of link
            // errors: the axis ends above the 95th percentile.
            let top = axis_top(&drops, None, 0.95);
            charts.push(Chart {
                title: format!("packets dropped per interval{every}"),
                x_label: "time (s)".into(),
                y_label: "drops".into(),
                series: drops,
                y_min: Some(0.0),
                x_range: Some((0.0, duration_s)),
                y_max: top,
            });
        }
    }
    stacked_charts_svg(&charts)
}

/// A number without trailing zeros: 10, 2.5, 0.1.
fn trim_num(x: f64) -> String {
    let s = format!("{x:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::{write_whole, SeriesWriter};
    use satcc_sim::report::series::Series;

    fn partials(dir: &std::path::Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .expect("list")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".partial"))
            .collect()
    }

    #[test]
    fn series_files_only_once_committed() {
        let dir = std::env::temp_dir().join(format!("satcc-writer-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let series = Series::new([("a".into(), "sack".into())], ["l".into()]);
        // Dropped before the commit (an error elsewhere): nothing is left.
        let w = SeriesWriter::start(&dir, &series).expect("started");
        assert_eq!(partials(&dir).len(), 2);
        drop(w);
        assert!(partials(&dir).is_empty(), "{:?}", partials(&dir));
        assert!(!dir.join("flows.csv").exists());
        // Finished without a commit: an error, and nothing is left.
        let w = SeriesWriter::start(&dir, &series).expect("started");
        assert!(w.finish().is_err());
        assert!(partials(&dir).is_empty(), "{:?}", partials(&dir));
        // Committed: both files in place, as formatted whole.
        let mut w = SeriesWriter::start(&dir, &series).expect("started");
        w.commit(&series);
        w.finish().expect("written");
        let read = |n: &str| std::fs::read_to_string(dir.join(n)).expect(n);
        assert_eq!(read("flows.csv"), series.flows_csv());
        assert_eq!(read("links.csv"), series.links_csv());
        assert!(partials(&dir).is_empty(), "{:?}", partials(&dir));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn whole_files_only_under_the_final_name() {
        let dir = std::env::temp_dir().join(format!("satcc-whole-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("summary.json");
        write_whole(path.clone(), "{}\n").expect("written");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "{}\n");
        // A target that cannot be replaced (a directory): the write fails,
        // the old content stays, and no partial file is left behind.
        let blocked = dir.join("blocked");
        std::fs::create_dir_all(blocked.join("inner")).expect("dir");
        assert!(write_whole(blocked.clone(), "x").is_err());
        assert!(blocked.is_dir());
        let left: Vec<_> = std::fs::read_dir(&dir)
            .expect("list")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".partial"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
