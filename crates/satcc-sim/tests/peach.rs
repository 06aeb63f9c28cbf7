//! TCP-Peach (paper 002) end to end: the §V comparisons against NewReno
//! with SACK, the fallback against a plain receiver, and the promise that
//! dummies never cost a data packet its place.

mod common;

use common::sim;
use satcc_sim::report::Summary;

/// The GEO system of paper 002 §V with docs/papers.md's choices for the values
/// the extraction lost: 10 Mb/s, ~550 ms RTT, a 50-segment priority
/// buffer, N = 10, rwnd 64, link-error probability `per` on the satellite
/// hop (data and dummies alike; ACKs return error-free).
fn geo(protocol: &str, per: f64, extra: &str, secs: u32) -> Summary {
    geo_n(protocol, 10, per, extra, secs)
}

fn geo_n(protocol: &str, count: u32, per: f64, extra: &str, secs: u32) -> Summary {
    sim(&format!(
        "duration = \"{secs}s\"\nseed = 3\n\
         [topology]\nkind = \"dumbbell\"\n\
         [topology.bottleneck]\nrate = \"10Mbps\"\ndelay = \"270ms\"\n\
         queue = {{ kind = \"priority\", limit = 50 }}\n\
         error = {{ kind = \"uniform\", per = {per} }}\n\
         [topology.access]\nrate = \"100Mbps\"\ndelay = \"2ms\"\n\
         [[flows]]\nprotocol = \"{protocol}\"\ncount = {count}\nstart_spread = \"1s\"\n\
         rwnd = 64\nmin_rto = \"1s\"\n{extra}"
    ))
    .summary
}

fn goodput(s: &Summary) -> f64 {
    s.flows.iter().map(|f| f.goodput_bps).sum()
}

fn overhead(s: &Summary) -> f64 {
    let dummies: u64 = s
        .flows
        .iter()
        .filter_map(|f| f.dummy.as_ref())
        .map(|d| d.packets_sent)
        .sum();
    let data: u64 = s.flows.iter().map(|f| f.packets_sent).sum();
    dummies as f64 / data as f64
}

#[test]
fn peach_outperforms_newreno_sack_at_every_link_error_rate() {
    // Paper 002 Fig. 11/12: Peach's goodput is higher at every loss
    // probability, by tens of percent at the highest (+30.65 % with
    // 17.21 % overhead), and the overhead grows with the loss.
    let mut last_overhead = 0.0;
    for per in [1e-5, 1e-4, 1e-3, 1e-2] {
        let p = geo("peach-sack", per, "", 300);
        let r = geo("sack", per, "", 300);
        let (gp, gr) = (goodput(&p), goodput(&r));
        let ov = overhead(&p);
        eprintln!(
            "PEACH per={per:e} peach {:.3} Mb/s sack {:.3} Mb/s gain {:+.1} % overhead {:.1} %",
            gp / 1e6,
            gr / 1e6,
            (gp / gr - 1.0) * 100.0,
            ov * 100.0
        );
        assert!(gp > gr, "per {per}: Peach {gp} <= NewReno+SACK {gr}");
        if per >= 1e-3 {
            assert!(gp > 1.2 * gr, "per {per}: gain only {:.2}", gp / gr);
        }
        assert!(
            ov > last_overhead,
            "overhead {ov} did not grow at per {per}"
        );
        last_overhead = ov;
        assert_eq!(overhead(&r), 0.0);
        assert!(p.flows.iter().all(|f| !f.dummy.as_ref().unwrap().fallback));
    }
}

#[test]
fn newreno_saturates_with_capacity_while_peach_keeps_growing() {
    // Paper 002 Fig. 13: link errors keep Reno's window small, so its
    // goodput stops growing with the link (the paper: under 620 pkt/s);
    // Rapid Recovery lets Peach use the capacity. rwnd is raised so that
    // it does not cap Peach first.
    let run = |proto: &str, rate: u32| {
        let s = sim(&format!(
            "duration = \"200s\"\nseed = 3\n\
             [topology]\nkind = \"dumbbell\"\n\
             [topology.bottleneck]\nrate = \"{rate}Mbps\"\ndelay = \"270ms\"\n\
             queue = {{ kind = \"priority\", limit = 50 }}\n\
             error = {{ kind = \"uniform\", per = 1e-3 }}\n\
             [topology.access]\nrate = \"100Mbps\"\ndelay = \"2ms\"\n\
             [[flows]]\nprotocol = \"{proto}\"\ncount = 10\nstart_spread = \"1s\"\n\
             rwnd = 1000\nmin_rto = \"1s\"\n"
        ))
        .summary;
        goodput(&s) / 8000.0
    };
    let (p10, p40) = (run("peach-sack", 10), run("peach-sack", 40));
    let (r10, r40) = (run("sack", 10), run("sack", 40));
    eprintln!(
        "PEACH capacity 10->40 Mb/s: peach {p10:.0}->{p40:.0} pkt/s, sack {r10:.0}->{r40:.0}"
    );
    assert!(
        r40 < 1.15 * r10,
        "NewReno+SACK should saturate: {r10} -> {r40}"
    );
    assert!(
        p40 > 1.8 * p10,
        "Peach should grow with capacity: {p10} -> {p40}"
    );
    // At a capacity the link errors do not limit, the two are close.
    let (p2, r2) = (run("peach-sack", 2), run("sack", 2));
    assert!((p2 / r2 - 1.0).abs() < 0.1, "2 Mb/s: {p2} vs {r2}");
}

#[test]
fn web_pages_finish_sooner_with_peach() {
    // Paper 002 Figs. 14-15: pages of 50 segments, each on a fresh
    // connection, back to back; Reno starts from 1 segment, Reno with the
    // increased initial window from 4.
    let page_time = |proto: &str, iw: u32| {
        let s = geo(
            proto,
            1e-3,
            &format!(
                "initial_window = {iw}\n\
                 app = {{ kind = \"files\", size = \"50000B\", new_connection = true }}\n"
            ),
            200,
        );
        let n: u64 = s.flows.iter().map(|f| f.files_completed).sum();
        assert!(n > 100, "{proto}: only {n} pages");
        s.flows
            .iter()
            .map(|f| f.mean_file_time_s.unwrap() * f.files_completed as f64)
            .sum::<f64>()
            / n as f64
    };
    let peach = page_time("peach-sack", 1);
    let reno = page_time("sack", 1);
    let reno_iw4 = page_time("sack", 4);
    eprintln!("PEACH page time: peach {peach:.2} s, reno {reno:.2} s, reno iw4 {reno_iw4:.2} s");
    assert!(peach < reno_iw4 && reno_iw4 < reno);
    // Sudden Start: one RTT for the first segment and one for the rest,
    // where slow start from 1 needs about six.
    assert!(peach < 0.6 * reno);
}

#[test]
fn a_fresh_connection_per_file_restarts_the_window() {
    let pages = |fresh: bool| {
        geo(
            "sack",
            0.0,
            &format!(
                "initial_window = 1\n\
                 app = {{ kind = \"files\", size = \"50000B\", new_connection = {fresh} }}\n"
            ),
            100,
        )
    };
    let (fresh, shared) = (pages(true), pages(false));
    let t = |s: &Summary| s.flows[0].mean_file_time_s.unwrap();
    // One connection: after the first page the window is open and later
    // pages take about one RTT; fresh connections slow-start every page.
    assert!(
        t(&fresh) > 2.0 * t(&shared),
        "{} vs {}",
        t(&fresh),
        t(&shared)
    );
    assert!(fresh.flows[0].files_completed > 20);
    // Every byte of every page was delivered and counted across the
    // connections.
    for f in &fresh.flows {
        assert!(f.delivered_bytes >= f.files_completed * 50_000);
    }
}

#[test]
fn peach_against_a_plain_receiver_falls_back_to_newreno() {
    // §III-A: without the receiver's echo Peach behaves as its base
    // variant. NewReno here starts from one segment as Sudden Start does.
    let p = geo(
        "peach",
        1e-3,
        "echo_dummy = false\ninitial_window = 1\n",
        300,
    );
    let n = geo("newreno", 1e-3, "initial_window = 1\n", 300);
    for f in &p.flows {
        let d = f.dummy.as_ref().unwrap();
        assert!(d.fallback, "flow {} did not fall back", f.id);
        assert_eq!(d.acks_received, 0);
        // Only the first Sudden Start's dummies, at most rwnd - 1.
        assert!(d.packets_sent <= 63);
    }
    let (gp, gn) = (goodput(&p), goodput(&n));
    eprintln!(
        "PEACH fallback: peach {:.3} Mb/s newreno {:.3} Mb/s",
        gp / 1e6,
        gn / 1e6
    );
    assert!((gp / gn - 1.0).abs() < 0.05, "{gp} vs {gn}");
}

#[test]
fn peach_flows_share_fairly() {
    // Paper 002 §V-B (Fig. 17): N_i(t), the segments connection i has had
    // acknowledged by time t, is about the same for every connection at
    // any time.
    let out = sim(r#"
duration = "300s"
seed = 3
[topology]
kind = "dumbbell"
[topology.bottleneck]
rate = "10Mbps"
delay = "270ms"
queue = { kind = "priority", limit = 50 }
error = { kind = "uniform", per = 1e-3 }
[topology.access]
rate = "100Mbps"
delay = "2ms"
[[flows]]
protocol = "peach-sack"
count = 10
start_spread = "1s"
rwnd = 64
min_rto = "1s"
[record]
interval = "1s"
"#);
    let c = out
        .summary
        .classes
        .iter()
        .find(|c| c.protocol.name() == "peach-sack")
        .unwrap();
    let j = c.jain.expect("the class delivered");
    assert!(j > 0.95, "Jain {j}");
    let series = out.series.expect("series recorded");
    let mut cum = vec![0.0; series.flows.len()];
    let mut worst: f64 = 1.0;
    for (k, t) in series.t.iter().enumerate() {
        for (i, f) in series.flows.iter().enumerate() {
            cum[i] += f.goodput_bps[k];
        }
        if *t >= 30.0 && (*t as u64).is_multiple_of(30) {
            let hi = cum.iter().cloned().fold(f64::MIN, f64::max);
            let lo = cum.iter().cloned().fold(f64::MAX, f64::min);
            // Within 15 % of each other at every check in this run (8-10 %
            // from 60 s on): no connection is left behind.
            assert!(hi / lo < 1.2, "t = {t} s: N_i(t) from {lo} to {hi}");
            worst = worst.max(hi / lo);
        }
    }
    eprintln!("PEACH fairness over time: max N_i(t)/min N_j(t) = {worst:.3}");
}

#[test]
fn a_dummy_flood_does_not_displace_data() {
    // Issue #5: a NewReno flow's goodput through a congested priority
    // bottleneck is the same, within noise over seeds, whether or not
    // another sender floods it with low-priority packets at line rate.
    let run = |seed: u64, flood: bool| {
        let extra = if flood {
            "[[flows]]\nprotocol = \"cbr\"\nrate = \"4Mbps\"\nlow_priority = true\npacket_size = 1000\n"
        } else {
            ""
        };
        let s = sim(&format!(
            "duration = \"120s\"\nseed = {seed}\n\
             [topology]\nkind = \"dumbbell\"\n\
             [topology.bottleneck]\nrate = \"4Mbps\"\ndelay = \"50ms\"\n\
             queue = {{ kind = \"priority\", limit = 40 }}\n\
             [topology.access]\nrate = \"100Mbps\"\ndelay = \"2ms\"\n\
             [[flows]]\nprotocol = \"newreno\"\ncount = 4\nstart_spread = \"2s\"\n\
             min_rto = \"200ms\"\n{extra}"
        ))
        .summary;
        let class = |p: &str| {
            s.classes
                .iter()
                .find(|c| c.protocol.name() == p)
                .map_or(0.0, |c| c.goodput_bps)
        };
        (class("newreno"), class("cbr"))
    };
    let seeds = 1..=5;
    let with: Vec<_> = seeds.clone().map(|s| run(s, true)).collect();
    let without: Vec<f64> = seeds.map(|s| run(s, false).0).collect();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let tcp_with: Vec<f64> = with.iter().map(|x| x.0).collect();
    let (a, b) = (mean(&tcp_with), mean(&without));
    let leftover = mean(&with.iter().map(|x| x.1).collect::<Vec<_>>());
    eprintln!(
        "PEACH flood: newreno {:.3} vs {:.3} Mb/s, flood got {:.3} Mb/s",
        a / 1e6,
        b / 1e6,
        leftover / 1e6
    );
    // The flood only ever waits for an idle link and is pushed out of a
    // full buffer; one flood packet in transmission can delay a data
    // packet by 2 ms, hence a small tolerance.
    assert!((a / b - 1.0).abs() < 0.03, "with flood {a}, without {b}");
    // It did get the capacity TCP left unused, so it really was there.
    assert!(leftover > 0.0);
    assert!(a + leftover > 0.95 * 4e6);
}

/// Goodput per flow of the flows labelled `name`.
fn per_flow(s: &Summary, name: &str) -> f64 {
    let v: Vec<f64> = s
        .flows
        .iter()
        .filter(|f| f.name == name)
        .map(|f| f.goodput_bps)
        .collect();
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn peach_on_the_satellite_side_is_fairer_to_it_than_reno() {
    // Paper 002 Figs. 18-19: satellite (550 ms, link errors) and
    // terrestrial (100 ms, no errors) connections share a bottleneck;
    // fairness G_sat/G_terr is higher with Peach on the satellite side.
    // The effect is small (docs/validation.md: ~10 % at P = 1e-3, the
    // scenario file's value, with a seed spread of ~6 %), so it is tested
    // as a difference of means over ten seeds of the shipped 550 s run,
    // larger than three standard errors of that difference. (Three
    // 300 s seeds against a fixed 10 % gain passed or failed with the
    // order of same-instant events: 12.4 % under insertion order, 4.1 %
    // under the rank rule, while ten 550 s seeds give 9.4 % and 13.5 %.)
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/peach-hetero.toml"
    ))
    .unwrap();
    let fairness = |proto: &str| {
        let v: Vec<f64> = (1..=10)
            .map(|seed| {
                let t = text
                    .replace(
                        "protocol = \"peach-sack\"",
                        &format!("protocol = \"{proto}\""),
                    )
                    .replace("seed = 1", &format!("seed = {seed}"));
                let s = sim(&t).summary;
                per_flow(&s, "satellite") / per_flow(&s, "terrestrial")
            })
            .collect();
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (mean, var / n)
    };
    let ((fp, vp), (fr, vr)) = (fairness("peach-sack"), fairness("sack"));
    let se = (vp + vr).sqrt();
    eprintln!("PEACH hetero P=1e-3: G_sat/G_terr peach {fp:.3} reno {fr:.3} (se of the difference {se:.4})");
    assert!(fp - fr > 3.0 * se, "Peach {fp} vs Reno {fr}, se {se}");
}

#[test]
fn peach_beside_reno_on_one_path_takes_spare_capacity_not_renos() {
    // Paper 002 Fig. 20: Peach and Reno through the same GEO channel.
    // G_reno/G_peach is well below 1, yet Reno loses little against an
    // all-Reno run: Peach's gain comes from capacity Reno leaves unused.
    let mixed = |other: &str| {
        geo_n(
            "sack",
            5,
            1e-3,
            &format!(
                "name = \"reno\"\n\
                 [[flows]]\nname = \"other\"\nprotocol = \"{other}\"\ncount = 5\n\
                 start_spread = \"1s\"\nrwnd = 64\nmin_rto = \"1s\"\n"
            ),
            300,
        )
    };
    let (with_peach, all_reno) = (mixed("peach-sack"), mixed("sack"));
    let f = per_flow(&with_peach, "reno") / per_flow(&with_peach, "other");
    let loss = 1.0 - per_flow(&with_peach, "reno") / per_flow(&all_reno, "reno");
    eprintln!(
        "PEACH mixed P=1e-3: G_reno/G_peach {f:.3}, Reno's goodput lower by {:.1} %",
        loss * 100.0
    );
    assert!(f < 0.8, "G_reno/G_peach {f}");
    assert!(loss < 0.1, "Reno lost {:.1} % of its goodput", loss * 100.0);
}
