//! Applications on top of flows: finite files, Poisson arrivals, Pareto
//! ON/OFF, start/stop times.

mod common;
use common::sim;

const NET: &str = r#"
[topology]
kind = "dumbbell"
[topology.bottleneck]
rate = "10Mbps"
delay = "100ms"
queue = { kind = "droptail", limit = 200 }
"#;

#[test]
fn sequential_files_complete_one_after_another() {
    let out = sim(&format!(
        r#"duration = "60s"
{NET}
[[flows]]
protocol = "newreno"
app = {{ kind = "files", size = "50KB", count = 6, gap = "1s" }}
"#
    ));
    let f = &out.summary.flows[0];
    assert_eq!(f.files_completed, 6);
    assert_eq!(f.delivered_bytes, 6 * 50_000);
    // The files share one connection: the first grows the window from IW 4
    // (~4.5 RTTs of 204 ms), the next five find it open (~1.5 RTT each:
    // there is no RFC 5681 §4.1 restart after idle), so the mean is about
    // (0.9 + 5 * 0.3) / 6 = 0.4 s.
    let t = f.mean_file_time_s.unwrap();
    assert!(t > 0.25 && t < 0.5, "mean file time {t}");
}

#[test]
fn poisson_files_arrive_at_their_rate() {
    let out = sim(&format!(
        r#"duration = "200s"
{NET}
[[flows]]
protocol = "sack"
app = {{ kind = "files", size = "20KB", mode = "poisson", mean_interarrival = "2s" }}
"#
    ));
    let f = &out.summary.flows[0];
    // ~100 arrivals expected (Poisson sd 10).
    assert!(
        f.files_completed > 70 && f.files_completed < 130,
        "{}",
        f.files_completed
    );
    assert_eq!(f.delivered_bytes % 20_000, 0);
}

#[test]
fn pareto_onoff_cbr_keeps_its_duty_cycle() {
    let out = sim(&format!(
        r#"duration = "2000s"
{NET}
[[flows]]
protocol = "cbr"
rate = "1Mbps"
app = {{ kind = "onoff", on_mean = "1s", off_mean = "2s", shape = 1.5 }}
"#
    ));
    let f = &out.summary.flows[0];
    // ON a third of the time: about 1/3 of 1 Mb/s (of which 1000/1028 is
    // payload). Pareto with shape 1.5 converges slowly: allow ±25 %.
    let duty = f.goodput_bps / (1e6 * 1000.0 / 1028.0);
    assert!((duty - 1.0 / 3.0).abs() < 0.083, "duty cycle {duty}");
}

#[test]
fn tcp_onoff_sends_in_bursts_and_stop_ends_a_flow() {
    let out = sim(&format!(
        r#"duration = "100s"
{NET}
[[flows]]
protocol = "newreno"
rate = "2Mbps"
app = {{ kind = "onoff", on_mean = "1s", off_mean = "1s" }}
[[flows]]
protocol = "newreno"
start = "10s"
stop = "20s"
"#
    ));
    let s = &out.summary;
    let onoff = &s.flows[0];
    // Offers ~2 Mb/s half the time: ~1 Mb/s on average, well under capacity.
    assert!(
        onoff.goodput_bps > 0.5e6 && onoff.goodput_bps < 1.6e6,
        "{}",
        onoff.goodput_bps
    );
    // The stopped flow's goodput is over its 10 s of life, and it sent
    // nothing after stopping: its bytes fit in 10 s at line rate.
    let bulk = &s.flows[1];
    assert!(bulk.delivered_bytes as f64 <= 10.0 * 10e6 / 8.0);
    assert!(bulk.goodput_bps > 2e6, "{}", bulk.goodput_bps);
}
