//! Criterion benchmarks of the simulator, reported per simulated packet.
//!
//! `cargo bench -p satcc-sim` — see also `satcc bench`, which times the
//! reference scenario against ns-2.
//!
//! - `reference_20s`: the `satcc bench` scenario cut to 20 s.
//! - `geo_window/{10,10000}`: one GEO TCP SACK flow whose window is 10 or
//!   10 000 segments. The time per packet must not grow with the window
//!   (the SACK scoreboard and the receiver's reassembly are amortised O(1)).
//! - `refwa_oc3_2s/{newreno,refwa}`: paper 003's OC3 constellation with 512
//!   flows in four RTT groups (`scenarios/refwa-c-oc3.toml`) cut to 2 s,
//!   with and without the REFWA controllers: the cost of the per-packet
//!   flow-table work and of a network with thousands of nodes.
//! - `refwa_oc3_build`: building that network alone (`Sim::new`: nodes,
//!   links, routes, endpoints, REFWA hooks), no event run.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use satcc_sim::scenario::Scenario;
use satcc_sim::{run, RunOptions, Sim};

const REFERENCE: &str = include_str!("../../../scenarios/bench.toml");
const OC3: &str = include_str!("../../../scenarios/refwa-c-oc3.toml");

fn packets(sc: &Scenario) -> u64 {
    run(sc, &RunOptions::default())
        .expect("runs")
        .summary
        .packets
        .sent
}

fn reference(c: &mut Criterion) {
    let sc = Scenario::from_toml_str(REFERENCE, "bench.toml", &["duration=20s".into()])
        .expect("reference scenario");
    let mut g = c.benchmark_group("reference_20s");
    g.sample_size(10);
    g.throughput(Throughput::Elements(packets(&sc)));
    g.bench_function("64 flows", |b| b.iter(|| run(&sc, &RunOptions::default())));
    g.finish();
}

fn geo_window(c: &mut Criterion) {
    let mut g = c.benchmark_group("geo_window");
    g.sample_size(10);
    for (rwnd, rate) in [(10u32, "1Mbps"), (10_000, "200Mbps")] {
        // A 10-segment window on a 1 Mb/s link and a 10 000-segment one on
        // 200 Mb/s (BDP ~ 12 000 segments), both at 0.1 % packet errors so
        // SACK recovery runs throughout; the same number of packets is
        // simulated in each (duration scaled by the rate).
        let secs = if rwnd == 10 { 400 } else { 2 };
        let text = format!(
            r#"
duration = "{secs}s"
[topology]
kind = "satellite"
uplink = {{ rate = "{rate}", delay = "125ms", queue = {{ kind = "droptail", limit = 20000 }}, error = {{ kind = "uniform", per = 1e-3 }} }}
downlink = {{ rate = "{rate}", delay = "125ms", queue = {{ kind = "droptail", limit = 20000 }} }}
access = {{ rate = "10Gbps" }}
[[flows]]
protocol = "sack"
rwnd = {rwnd}
initial_window = {iw}
min_rto = "1s"
"#,
            iw = rwnd.min(10_000)
        );
        let sc = Scenario::from_toml_str(&text, "geo.toml", &[]).expect("geo scenario");
        g.throughput(Throughput::Elements(packets(&sc)));
        g.bench_with_input(BenchmarkId::from_parameter(rwnd), &sc, |b, sc| {
            b.iter(|| run(sc, &RunOptions::default()))
        });
    }
    g.finish();
}

fn refwa_oc3(c: &mut Criterion) {
    let mut g = c.benchmark_group("refwa_oc3_2s");
    g.sample_size(10);
    for (name, on) in [("newreno", "false"), ("refwa", "true")] {
        let sets = ["duration=2s".to_string(), format!("refwa.enabled={on}")];
        let sc = Scenario::from_toml_str(OC3, "refwa-c-oc3.toml", &sets).expect("oc3 scenario");
        g.throughput(Throughput::Elements(packets(&sc)));
        g.bench_with_input(BenchmarkId::from_parameter(name), &sc, |b, sc| {
            b.iter(|| run(sc, &RunOptions::default()))
        });
    }
    g.finish();
}

fn refwa_oc3_build(c: &mut Criterion) {
    let mut g = c.benchmark_group("refwa_oc3_build");
    g.sample_size(20);
    let sc = Scenario::from_toml_str(OC3, "refwa-c-oc3.toml", &[]).expect("oc3 scenario");
    g.bench_function("512 flows", |b| {
        b.iter(|| Sim::new(&sc, &RunOptions::default()).expect("builds"))
    });
    g.finish();
}

criterion_group!(benches, reference, geo_window, refwa_oc3, refwa_oc3_build);
criterion_main!(benches);
