//! Unit tests of the export and the parser.

use satcc_proto::Duration;
use satcc_sim::protocols::ProtocolConfig;
use satcc_sim::scenario::{FeedbackSpec, ProtocolOptions, Scenario};

use crate::export::secs;
use crate::*;

const SAMPLE: &str = r#"
name = "sample"
duration = "20s"
seed = 7
[topology]
kind = "dumbbell"
[topology.bottleneck]
rate = "10Mbps"
reverse_rate = "1Mbps"
delay = "250ms"
queue = { kind = "droptail", limit = 200 }
reverse_queue = { kind = "droptail", limit = 50 }
error = { kind = "uniform", per = 1e-3 }
[topology.access]
rate = "100Mbps"
delays = ["1ms", "7ms"]
[[flows]]
protocol = "sack"
count = 2
mss = 1000
rwnd = 1500
initial_window = 3
min_rto = "200ms"
max_rto = "60s"
initial_rto = "3s"
[[flows]]
protocol = "reno"
delayed_ack = true
start = "2s"
stop = "10s"
"#;

fn sample() -> Scenario {
    Scenario::from_toml_str(SAMPLE, "<sample>", &[]).unwrap()
}

#[test]
fn tcl_has_mapped_values() {
    let t = to_tcl(&sample()).unwrap();
    assert!(t.contains(&format!("$defaultRNG seed {}", ns2_seed(7))));
    for want in [
        "$ns simplex-link $n_r1 $n_r2 10000000 0.25 DropTail ;# bottleneck",
        "$ns simplex-link $n_r2 $n_r1 1000000 0.25 DropTail ;# bottleneck.rev",
        "$ns queue-limit $n_r1 $n_r2 200",
        "$ns queue-limit $n_r2 $n_r1 50",
        "$ns link-lossmodel $em_0 $n_r1 $n_r2",
        "$em_0 set rate_ 0.001",
        "$em_0 unit pkt",
        "$ns simplex-link $n_src1 $n_r1 100000000 0.007 DropTail",
        "set tcp_0 [new Agent/TCP/Sack1]",
        "set sink_0 [new Agent/TCPSink/Sack1]",
        "$tcp_0 set packetSize_ 1000",
        "$tcp_0 set tcpip_base_hdr_size_ 40",
        "$tcp_0 set window_ 1500",
        "$tcp_0 set windowInit_ 3",
        "$tcp_0 set minrto_ 0.2",
        "$tcp_0 set maxrto_ 60",
        "$tcp_0 set rtxcur_init_ 3",
        "$tcp_0 set syn_ false",
        "set tcp_2 [new Agent/TCP/Reno]",
        "set sink_2 [new Agent/TCPSink/DelAck]",
        "$sink_2 set interval_ 0.1",
        "$tcp_2 set windowInit_ 4",
        "$ns at 2 \"$app_2 start\"",
        "$ns at 10 \"$app_2 stop\"",
        "$ns at 20 finish",
    ] {
        assert!(t.contains(want), "missing `{want}` in\n{t}");
    }
    // One error model only (the reverse direction has none).
    assert_eq!(t.matches("link-lossmodel").count(), 1);
    // Three flows reported, two links monitored by default.
    assert_eq!(t.matches("puts \"FLOW ").count(), 3);
    assert_eq!(t.matches("puts \"LINK ").count(), 2);
}

#[test]
fn red_mapping() {
    let toml = SAMPLE.replace(
        "queue = { kind = \"droptail\", limit = 200 }",
        "queue = { kind = \"red\", limit = 80, min_th = 10, max_th = 30, max_p = 0.05, gentle = false }",
    );
    let sc = Scenario::from_toml_str(&toml, "<red>", &[]).unwrap();
    let t = to_tcl(&sc).unwrap();
    for want in [
        "RED ;# bottleneck",
        "$ns queue-limit $n_r1 $n_r2 80",
        "set bytes_ false",
        "set queue_in_bytes_ false",
        "set thresh_ 10",
        "set maxthresh_ 30",
        "set q_weight_ -1",
        "set linterm_ 20",
        "set gentle_ false",
        "set wait_ true",
        "set mean_pktsize_ 500",
        "set targetdelay_ 0.005",
    ] {
        assert!(t.contains(want), "missing `{want}`");
    }
}

fn err_of(patch: (&str, &str)) -> String {
    let toml = SAMPLE.replace(patch.0, patch.1);
    let sc = Scenario::from_toml_str(&toml, "<x>", &[]).unwrap();
    let e = to_tcl(&sc).unwrap_err();
    assert!(e.is_scenario_error(), "{e:?}");
    e.to_string()
}

#[test]
fn unsupported_features_name_the_field() {
    let e = err_of((
        "queue = { kind = \"droptail\", limit = 200 }",
        "queue = { kind = \"priority\", limit = 200 }",
    ));
    assert!(e.starts_with("topology.bottleneck.queue:"), "{e}");
    let e = err_of((
        "reverse_queue = { kind = \"droptail\", limit = 50 }",
        "reverse_queue = { kind = \"priority\", limit = 50 }",
    ));
    assert!(e.starts_with("topology.bottleneck.reverse_queue:"), "{e}");
    let e = err_of((
        "error = { kind = \"uniform\", per = 1e-3 }",
        "error = { kind = \"gilbert\", p_gb = 0.01, p_bg = 0.5 }",
    ));
    assert!(e.starts_with("topology.bottleneck.error:"), "{e}");
    let e = err_of((
        "error = { kind = \"uniform\", per = 1e-3 }",
        "error = { kind = \"uniform\", per = 1e-3 }\nshaper = { rate = \"1Mbps\", burst = \"16KiB\", limit = \"150KiB\" }",
    ));
    assert!(e.starts_with("topology.bottleneck.shaper:"), "{e}");
    // Spread starts are exported as the very times satcc draws.
    let toml = SAMPLE.replace("count = 2", "count = 2\nstart_spread = \"1s\"");
    let sc = Scenario::from_toml_str(&toml, "<x>", &[]).unwrap();
    let t = to_tcl(&sc).unwrap();
    for d in satcc_sim::sim::flow_starts(&sc) {
        assert!(d > Duration::ZERO, "spread draws a positive offset");
        assert!(
            t.contains(&format!("$ns at {} ", secs(d))),
            "start {d} in script"
        );
    }
    let e = err_of((
        "count = 2",
        "count = 2\napp = { kind = \"files\", size = \"1MB\" }",
    ));
    assert!(e.starts_with("flows[0].app:"), "{e}");
    let e = err_of((
        "delays = [",
        "queue = { kind = \"priority\", limit = 9 }\ndelays = [",
    ));
    assert!(e.starts_with("topology.access.queue:"), "{e}");
}

#[test]
fn parses_output() {
    let out = "RED bottleneck 5 15 0.002 100\n\
               FLOW 1 sack 10 2000 5 1 0\n\
               FLOW 0 reno 20 1000000 1000 3 1\n\
               LINK bottleneck 10000000 20 25000000 24000 12 2 3.5\n\
               END 20\n";
    let script = export(&sample()).unwrap();
    let r = script.parse_output(out).unwrap();
    assert_eq!(r.flows[0].id, 0);
    assert_eq!(r.flows[0].goodput_bps, 400_000.0);
    assert_eq!(r.flows[1].goodput_bps, 1600.0);
    assert_eq!(r.flows[0].timeouts, 1);
    let l = r.link("bottleneck").unwrap();
    assert_eq!((l.from.as_str(), l.to.as_str()), ("r1", "r2"));
    assert!((l.utilization - 1.0).abs() < 1e-12);
    assert_eq!(l.drops, 14);
    assert_eq!(l.drops_error, 2);
    assert_eq!(r.red[0].max_th, 15.0);
    assert!(matches!(
        script.parse_output("FLOW 0 reno 1 1 1 1 1\n"),
        Err(Ns2Error::Parse { .. })
    ));
    let e = script.parse_output("FLOW x\nEND 1\n").unwrap_err();
    assert_eq!(e.to_string(), "bad flow id 'x' in 'FLOW x'");
    // A LINK line for a link the script does not monitor.
    let e = script
        .parse_output("LINK access.s0 1 1 1 1 1 1 1\nEND 1\n")
        .unwrap_err();
    assert!(
        e.to_string().contains("'access.s0' is not monitored"),
        "{e}"
    );
}

#[test]
fn tfrc_mapping() {
    // Base RTTs: 2 x (1 + 250 + 1) = 504 ms for flow 2 and
    // 2 x (7 + 250 + 1) = 516 ms for flow 3 (source access delays cycle
    // 1 ms, 7 ms; sink access delay 1 ms).
    let toml = SAMPLE.replace(
        "[[flows]]\nprotocol = \"reno\"",
        "[[flows]]\nprotocol = \"tfrc\"\n[[flows]]\nprotocol = \"ccid3\"\nfeedback = \"dynamic\"\n\
         rtt_ref = \"100ms\"\nstop = \"10s\"\n[[flows]]\nprotocol = \"reno\"",
    );
    let sc = Scenario::from_toml_str(&toml, "<tfrc>", &[]).unwrap();
    let rtts = base_rtts(&sc);
    assert_eq!(rtts[2], Some(Duration::from_millis(504)));
    assert_eq!(rtts[3], Some(Duration::from_millis(516)));
    let t = to_tcl(&sc).unwrap();
    for want in [
        "set tcp_2 [new Agent/TFRC]",
        "$tcp_2 set packetSize_ 1000",
        "$tcp_2 set headersize_ 40",
        "$tcp_2 set InitRate_ 1000",
        "$tcp_2 set df_ 0.9",
        "$tcp_2 set ca_ 1",
        "$tcp_2 set slow_increase_ 0",
        "$tcp_2 set minrto_ 2.016",
        "set sink_2 [new Agent/TFRCSink]",
        "$sink_2 set packetSize_ 40",
        "$sink_2 set NumFeedback_ 1",
        "$sink_2 set discount_ 0",
        "$sink_2 set numPkts_ 1",
        "$ns at 0 \"$tcp_2 start\"",
        "set tcp_3 [new Agent/TFRC]",
        "$tcp_3 set minrto_ 2.064",
        "$sink_3 set NumFeedback_ 5",
        "$ns at 10 \"$tcp_3 stop\"",
        "puts \"TFRC 2 ",
        "puts \"TFRC 3 ",
    ] {
        assert!(t.contains(want), "missing `{want}`");
    }
    assert_eq!(t.matches("puts \"FLOW ").count(), 5);
    // Dynamic feedback: round(RTT / rtt_ref), at least 1, with the
    // simulator's policy (and its default rtt_ref).
    let policy = |f: &satcc_sim::scenario::FlowSpec| match ProtocolConfig::from_spec(f, None) {
        ProtocolConfig::Tfrc { receiver, .. } => receiver.policy,
        c => panic!("not TFRC: {c:?}"),
    };
    let mut f = sc.flows[2].clone();
    assert_eq!(num_feedback(&policy(&f), Duration::from_millis(516)), 5);
    assert_eq!(num_feedback(&policy(&f), Duration::from_millis(40)), 1);
    let ProtocolOptions::Tfrc(o) = &mut f.options else {
        panic!("not TFRC: {:?}", f.options)
    };
    o.feedback = FeedbackSpec::Dynamic { rtt_ref: None };
    assert_eq!(num_feedback(&policy(&f), Duration::from_millis(1260)), 13);
    let ProtocolOptions::Tfrc(o) = &mut f.options else {
        unreachable!()
    };
    o.feedback = FeedbackSpec::Standard;
    assert_eq!(num_feedback(&policy(&f), Duration::from_millis(1260)), 1);
}

#[test]
fn parses_tfrc_output() {
    let out = "FLOW 0 tfrc 200 5000000 6353 0 0\n\
               TFRC 0 1656000 202000 0.0095\n\
               END 200\n";
    let script = export(&sample()).unwrap();
    let r = script.parse_output(out).unwrap();
    assert_eq!(r.flows[0].goodput_bps, 200_000.0);
    let t = r.flows[0].tfrc.as_ref().unwrap();
    assert_eq!(t.x_end_bps, 1_656_000.0);
    assert_eq!(t.send_bps, 202_000.0);
    assert_eq!(t.packet_loss_rate, 0.0095);
    assert!(script.parse_output("TFRC 1 1 1 0\nEND 1\n").is_err());
}

/// ns-2 seeds are mixed: in range, fixed, distinct for 0..1000, and not
/// in proportion to the satcc seed (ns-2's streams for seeds 1, 2, 3, ...
/// start with draws that scale with the seed).
#[test]
fn seeds() {
    let range = 1..=2_147_483_646u64;
    let s: Vec<u64> = (0..1000).map(ns2_seed).collect();
    assert!(s.iter().all(|x| range.contains(x)), "{s:?}");
    let mut d = s.clone();
    d.sort_unstable();
    d.dedup();
    assert_eq!(d.len(), s.len(), "distinct seeds");
    assert_eq!(ns2_seed(5), ns2_seed(5));
    assert!(range.contains(&ns2_seed(u64::MAX)));
    // Consecutive satcc seeds land far apart, in no order.
    assert!(s[1..11].windows(2).any(|w| w[1] < w[0]), "{:?}", &s[1..11]);
    assert!(
        s[1..11].windows(2).all(|w| w[0].abs_diff(w[1]) > 1000),
        "{:?}",
        &s[1..11]
    );
}

#[test]
fn red_byte_mode_mapping() {
    let toml = SAMPLE.replace(
        "queue = { kind = \"droptail\", limit = 200 }",
        "queue = { kind = \"red\", limit = 200, min_th = 15, max_th = 50, mean_pktsize = 1040, mode = \"bytes\" }",
    );
    let sc = Scenario::from_toml_str(&toml, "<red>", &[]).unwrap();
    let t = to_tcl(&sc).unwrap();
    for want in [
        "$ns queue-limit $n_r1 $n_r2 200",
        "set bytes_ true",
        "set queue_in_bytes_ true",
        "set thresh_ 15",
        "set maxthresh_ 50",
        "set mean_pktsize_ 1040",
    ] {
        assert!(t.contains(want), "missing `{want}`");
    }
    let bad = SAMPLE.replace(
        "queue = { kind = \"droptail\", limit = 200 }",
        "queue = { kind = \"red\", mode = \"octets\" }",
    );
    let e = Scenario::from_toml_str(&bad, "<red>", &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("mode") && e.contains("octets"), "{e}");
}

/// The TCP agent's initial window is the simulator's: RFC 3390 from the
/// MSS unless the flow sets it.
#[test]
fn initial_window_is_the_simulators() {
    for (mss, iw) in [(1000, 4), (1460, 3), (9000, 2)] {
        let toml = SAMPLE
            .replace("mss = 1000", &format!("mss = {mss}"))
            .replace("initial_window = 3\n", "");
        let sc = Scenario::from_toml_str(&toml, "<iw>", &[]).unwrap();
        let t = to_tcl(&sc).unwrap();
        assert!(
            t.contains(&format!("$tcp_0 set windowInit_ {iw}\n")),
            "mss {mss}"
        );
    }
}

/// RFC 5348 §4.5 oscillation damping and §5.5 history discounting switch
/// ns-2's `ca_` and `discount_`, each on its own. Damping is on unless the
/// flow turns it off (the RFC's SHOULD); discounting off unless turned on
/// (the RFC's OPTIONAL; ns-2's default is 1 for both).
#[test]
fn damping_and_discounting_are_exported() {
    let toml = SAMPLE.replace(
        "[[flows]]\nprotocol = \"reno\"",
        "[[flows]]\nprotocol = \"tfrc\"\n\
         [[flows]]\nprotocol = \"tfrc\"\noscillation_damping = false\n\
         [[flows]]\nprotocol = \"ccid3\"\nhistory_discounting = true\noscillation_damping = false\n\
         [[flows]]\nprotocol = \"tfrc\"\noscillation_damping = true\nhistory_discounting = true\n\
         [[flows]]\nprotocol = \"reno\"",
    );
    let sc = Scenario::from_toml_str(&toml, "<damping>", &[]).unwrap();
    let t = to_tcl(&sc).unwrap();
    // Flows 0-1 are the two SACK instances; 2-5 the TFRC flows above.
    for (i, ca, discount) in [(2, 1, 0), (3, 0, 0), (4, 0, 1), (5, 1, 1)] {
        assert!(
            t.contains(&format!("$tcp_{i} set ca_ {ca}\n")),
            "flow {i}: ca_ {ca}"
        );
        assert!(
            t.contains(&format!("$sink_{i} set discount_ {discount}\n")),
            "flow {i}: discount_ {discount}"
        );
    }
    assert_eq!(t.matches(" set ca_ ").count(), 4);
    assert_eq!(t.matches(" set discount_ ").count(), 4);
}

/// Profile "ns2": Agent/TFRC and Agent/TFRCSink keep ns-2's defaults (no
/// InitRate_, df_, tcp_tick_, minrto_, slow_increase_, PreciseLoss_,
/// numPkts_ written), discounting on by default as ns-2's discount_ 1; the
/// RFC-closest settings stay on the default-profile flow.
#[test]
fn ns2_profile_leaves_ns2_defaults() {
    let toml = SAMPLE.replace(
        "[[flows]]\nprotocol = \"reno\"",
        "[[flows]]\nprotocol = \"tfrc\"\nprofile = \"ns2\"\n\
         [[flows]]\nprotocol = \"tfrc\"\n\
         [[flows]]\nprotocol = \"reno\"",
    );
    let sc = Scenario::from_toml_str(&toml, "<ns2 profile>", &[]).unwrap();
    let t = to_tcl(&sc).unwrap();
    let flow = |i: usize| -> String {
        t.lines()
            .filter(|l| {
                l.starts_with(&format!("$tcp_{i} set "))
                    || l.starts_with(&format!("$sink_{i} set "))
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let ns2 = flow(2);
    for key in [
        "InitRate_",
        "df_",
        "tcp_tick_",
        "minrto_",
        "slow_increase_",
        "PreciseLoss_",
        "numPkts_",
        "ssmult_",
        "rate_init_option_",
    ] {
        assert!(!ns2.contains(key), "profile ns2 sets {key}:\n{ns2}");
    }
    assert!(
        ns2.contains("$tcp_2 set ca_ 1") && ns2.contains("$sink_2 set discount_ 1"),
        "{ns2}"
    );
    let rfc = flow(3);
    for key in [
        "InitRate_ 1000",
        "df_ 0.9",
        "slow_increase_ 0",
        "PreciseLoss_ 0",
        "discount_ 0",
    ] {
        assert!(rfc.contains(key), "profile rfc5348 lacks {key}:\n{rfc}");
    }
    // An unknown profile names the field and the value.
    let bad = SAMPLE.replace(
        "[[flows]]\nprotocol = \"reno\"",
        "[[flows]]\nprotocol = \"tfrc\"\nprofile = \"ns3\"\n[[flows]]\nprotocol = \"reno\"",
    );
    let e = Scenario::from_toml_str(&bad, "<bad>", &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("profile") && e.contains("ns3"), "{e}");
}

/// The script keeps each link's ends: monitors are attached to them and
/// results carry them, by satcc's link and node names.
#[test]
fn links_keep_their_ends() {
    let s = export(&sample()).unwrap();
    let names: Vec<&str> = s.links.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(
        &names[..4],
        ["bottleneck", "bottleneck.rev", "access.s0", "access.s0.rev"]
    );
    let rev = &s.links[1];
    assert_eq!(
        (rev.from.as_str(), rev.to.as_str(), rev.rate_bps),
        ("r2", "r1", 1_000_000)
    );
    assert_eq!(s.monitored, vec![0, 1]);
    assert!(s
        .tcl
        .contains("set qm_1 [$ns monitor-queue $n_r2 $n_r1 \"\"] ;# bottleneck.rev\n"));
    // Access links are monitored by satcc's names; the script's comments
    // name them after the flow (access.src0).
    let sc = Scenario::from_toml_str(SAMPLE, "<x>", &["record.links=[\"access.d1.rev\"]".into()])
        .unwrap();
    let s = export(&sc).unwrap();
    let l = &s.links[s.monitored[0]];
    assert_eq!(
        (l.name.as_str(), l.from.as_str(), l.to.as_str()),
        ("access.d1.rev", "d1", "r2")
    );
    assert!(s
        .tcl
        .contains("set qm_0 [$ns monitor-queue $n_dst1 $n_r2 \"\"] ;# access.dst1.rev\n"));
    assert!(s.tcl.contains("puts \"LINK access.d1.rev 100000000 "));
    let e = err_of((
        "stop = \"10s\"",
        "stop = \"10s\"\n[record]\nlinks = [\"access.src0\"]",
    ));
    assert_eq!(
        e,
        "record.links[0]: the ns-2 export cannot monitor link 'access.src0'"
    );
}

/// The sample with `extra` added to the SACK flow (flows 0-1; a
/// `protocol = ...` line in it replaces "sack") and `reno_extra` to the
/// Reno flow (flow 2).
fn tcp_variant(extra: &str, reno_extra: &str) -> Result<String, Ns2Error> {
    let (proto, extra) = match extra.strip_prefix("protocol = ") {
        Some(rest) => rest.split_once('\n').unwrap_or((rest, "")),
        None => ("\"sack\"", extra),
    };
    let toml = SAMPLE
        .replace("protocol = \"sack\"", &format!("protocol = {proto}"))
        .replace(
            "initial_rto = \"3s\"\n",
            &format!("initial_rto = \"3s\"\n{extra}\n"),
        )
        .replace(
            "delayed_ack = true\n",
            &format!("delayed_ack = true\n{reno_extra}\n"),
        );
    to_tcl(&Scenario::from_toml_str(&toml, "<tcp>", &[]).unwrap())
}

/// Each TCP sender setting of a flow reaches the script: a non-default
/// value ns-2 has a variable for is written (and only then, so scripts at
/// satcc's defaults are unchanged), one ns-2 runs anyway changes nothing,
/// and one ns-2 cannot express is refused naming the field.
#[test]
fn tcp_sender_settings_are_mapped_or_refused() {
    let base = to_tcl(&sample()).unwrap();
    for i in 0..3 {
        assert!(base.contains(&format!("$tcp_{i} set timestamps_ false\n")));
    }
    for v in ["singledup_", "newreno_changes1_", "ts_resetRTO_"] {
        assert!(!base.contains(v), "{v} written at satcc's defaults");
    }

    // limited_transmit = false: singledup_ 0 on every variant.
    let t = tcp_variant("limited_transmit = false", "").unwrap();
    assert!(t.contains("$tcp_0 set singledup_ 0\n"));
    assert!(t.contains("$tcp_1 set singledup_ 0\n"));
    assert_eq!(t.matches("singledup_").count(), 2, "the Reno flow keeps it");
    let t = tcp_variant("", "limited_transmit = false").unwrap();
    assert!(t.contains("$tcp_2 set singledup_ 0\n"));
    assert_eq!(t.matches("singledup_").count(), 1);

    // newreno_impatient = false: Slow-but-Steady, newreno_changes1_ 0 on
    // NewReno; no effect on Reno or SACK, in satcc as in ns-2.
    let t = tcp_variant("protocol = \"newreno\"\nnewreno_impatient = false", "").unwrap();
    assert!(t.contains("set tcp_0 [new Agent/TCP/Newreno]\n"));
    assert!(t.contains("$tcp_0 set newreno_changes1_ 0\n"));
    assert!(t.contains("$tcp_1 set newreno_changes1_ 0\n"));
    assert_eq!(t.matches("newreno_changes1_").count(), 2);
    let nr = tcp_variant("protocol = \"newreno\"", "").unwrap();
    assert!(
        !nr.contains("newreno_changes1_"),
        "Impatient is ns-2's default"
    );
    assert_eq!(
        tcp_variant("newreno_impatient = false", "newreno_impatient = false").unwrap(),
        base
    );

    // rtt_timing = "karn" is ns-2's `timestamps_ false`; rto_ssthresh =
    // "window" is what ns-2's timeout does. Both are already in the script.
    assert_eq!(
        tcp_variant("rtt_timing = \"karn\"", "rtt_timing = \"karn\"").unwrap(),
        base
    );
    assert_eq!(
        tcp_variant("rto_ssthresh = \"window\"", "rto_ssthresh = \"window\"").unwrap(),
        base
    );

    // Limited Transmit with a dupack threshold above 3: ns-2's singledup_
    // sends on numdupacks_ - 1 duplicate ACKs, satcc on two.
    let e = tcp_variant("dupack_threshold = 4", "").unwrap_err();
    assert!(e.is_scenario_error());
    assert_eq!(e.field(), Some("flows[0].limited_transmit"), "{e}");
    assert!(e.to_string().contains("numdupacks_ - 1 = 3"), "{e}");
    let e = tcp_variant("", "dupack_threshold = 5").unwrap_err();
    assert_eq!(e.field(), Some("flows[1].limited_transmit"), "{e}");
    let t = tcp_variant("dupack_threshold = 4\nlimited_transmit = false", "").unwrap();
    assert!(t.contains("$tcp_0 set numdupacks_ 4\n$tcp_0 set singledup_ 0\n"));
    let t = tcp_variant("dupack_threshold = 2", "").unwrap();
    assert!(t.contains("$tcp_0 set numdupacks_ 2\n"));
    assert!(!t.contains("singledup_"));

    // profile = "linux": Linux's RTO floor on the variance term has no
    // ns-2 counterpart.
    let e = tcp_variant("profile = \"linux\"", "").unwrap_err();
    assert!(e.is_scenario_error());
    assert_eq!(e.field(), Some("flows[0].profile"), "{e}");
    assert!(e.to_string().contains("minrto_"), "{e}");

    // RACK-TLP: ns-2 has none.
    for ld in ["rack", "rack-no-tlp"] {
        let e = tcp_variant(&format!("loss_detection = \"{ld}\""), "").unwrap_err();
        assert!(e.is_scenario_error());
        assert_eq!(e.field(), Some("flows[0].loss_detection"), "{e}");
        assert!(e.to_string().contains("no RACK-TLP"), "{e}");
    }
    assert!(tcp_variant("loss_detection = \"rfc6675\"", "").is_ok());
}

/// TFRCP's S2 interval before the first RTT sample is the sender
/// configuration's `s2_fallback_m`, not a constant of the OTcl.
#[test]
fn tfrcp_s2_fallback_is_the_configs() {
    let default = satcc_proto::tfrcp::SenderConfig::default().s2_fallback_m;
    assert_eq!(TFRCP_TCL.matches(TFRCP_S2_FALLBACK_M).count(), 1);
    let lib = tfrcp_tcl(default);
    assert!(lib.contains("if {$srtt_ < 0} { set m 3.0 }"), "{lib}");
    assert!(!lib.contains(TFRCP_S2_FALLBACK_M));
    assert!(tfrcp_tcl(Duration::from_millis(2500)).contains("{ set m 2.5 }"));

    let toml = SAMPLE.replace(
        "[[flows]]\nprotocol = \"reno\"",
        "[[flows]]\nprotocol = \"tfrcp\"\nstrategy = \"s2\"\nk = 10\n[[flows]]\nprotocol = \"reno\"",
    );
    let sc = Scenario::from_toml_str(&toml, "<tfrcp>", &[]).unwrap();
    let m = match ProtocolConfig::from_spec(&sc.flows[1], None) {
        ProtocolConfig::Tfrcp { sender, .. } => sender.s2_fallback_m,
        c => panic!("not TFRCP: {c:?}"),
    };
    let t = to_tcl(&sc).unwrap();
    assert!(t.contains(&tfrcp_tcl(m)));
    assert!(t.contains("$tcp_2 setup {r0 40 strategy s2 "));
    assert!(!t.contains(TFRCP_S2_FALLBACK_M));

    // One class per script: its S2 flows must agree (flows that do not
    // run S2 never use the value).
    let (s3, s5) = (Duration::from_secs(3), Duration::from_secs(5));
    let lib = crate::export::tfrcp_library(&[(0, false, s5), (1, true, s3), (2, false, s5)]);
    assert_eq!(lib.unwrap(), tfrcp_tcl(s3));
    assert_eq!(
        crate::export::tfrcp_library(&[(0, false, s5)]).unwrap(),
        tfrcp_tcl(s5)
    );
    let e = crate::export::tfrcp_library(&[(0, true, s3), (3, true, s5)]).unwrap_err();
    assert_eq!(e.field(), Some("flows[3].strategy"), "{e}");
}

/// CUBIC and Hybla run in ns-2 2.35 as Agent/TCP/Linux with the Linux
/// module chosen by `select_ca`, timestamps on at both ends; plain SACK
/// stays Agent/TCP/Sack1 without them.
#[test]
fn cubic_and_hybla_export_as_the_linux_agent() {
    for (p, ca) in [("cubic", "cubic"), ("hybla", "hybla")] {
        let t = tcp_variant(&format!("protocol = \"{p}\"\n"), "").unwrap();
        for i in 0..2 {
            assert!(
                t.contains(&format!("set tcp_{i} [new Agent/TCP/Linux]\n")),
                "{p}"
            );
            assert!(t.contains(&format!("$ns at 0 \"$tcp_{i} select_ca {ca}\"\n")));
            assert!(t.contains(&format!("$tcp_{i} set timestamps_ true\n")));
            assert!(t.contains(&format!("$sink_{i} set ts_echo_rfc1323_ true\n")));
        }
        // The Reno flow is untouched.
        assert!(t.contains("set tcp_2 [new Agent/TCP/Reno]\n"));
        assert!(!t.contains("select_ca reno"));
    }
    let base = to_tcl(&sample()).unwrap();
    assert!(!base.contains("Agent/TCP/Linux") && !base.contains("ts_echo_rfc1323_"));
    // satcc's model of ns-2's own CUBIC v2.1 exports as the same module.
    assert_eq!(
        tcp_variant(
            "protocol = \"cubic\"\ncubic_variant = \"linux-2.6.22\"\n",
            ""
        )
        .unwrap(),
        tcp_variant("protocol = \"cubic\"\n", "").unwrap()
    );
    assert_eq!(
        tcp_variant(
            "protocol = \"hybla\"\nhybla_variant = \"linux-2.6.22\"\n",
            ""
        )
        .unwrap(),
        tcp_variant("protocol = \"hybla\"\n", "").unwrap()
    );
    // ns-2's modules (Linux 2.6.22) run at their defaults and have no
    // HyStart: other parameters are refused, naming the key.
    for (extra, field) in [
        (
            "protocol = \"cubic\"\nslow_start = \"hystart\"",
            "slow_start",
        ),
        ("protocol = \"cubic\"\ncubic_beta = 0.8", "protocol"),
        (
            "protocol = \"cubic\"\ncubic_variant = \"linux-2.6.22\"\ncubic_beta = 0.7",
            "protocol",
        ),
        ("protocol = \"hybla\"\nhybla_rtt0 = \"50ms\"", "hybla_rtt0"),
    ] {
        let e = tcp_variant(extra, "").unwrap_err().to_string();
        assert!(e.starts_with(&format!("flows[0].{field}:")), "{extra}: {e}");
        assert!(e.contains("2.6.22"), "{e}");
    }
}

/// `sack_recovery = "ns2-linux"` is Agent/TCP/Linux's own recovery: `sack`
/// with it exports as that agent under its built-in `reno` module (not
/// Agent/TCP/Sack1), with the timestamps the agent times RTT by; `cubic`
/// and `hybla` with it export exactly as without (the agent is the same).
#[test]
fn ns2_linux_recovery_exports_as_the_linux_agent() {
    let t = tcp_variant("protocol = \"sack\"\nsack_recovery = \"ns2-linux\"\n", "").unwrap();
    for i in 0..2 {
        assert!(t.contains(&format!("set tcp_{i} [new Agent/TCP/Linux]\n")));
        assert!(t.contains(&format!("$ns at 0 \"$tcp_{i} select_ca reno\"\n")));
        assert!(t.contains(&format!("$tcp_{i} set timestamps_ true\n")));
        assert!(t.contains(&format!("$sink_{i} set ts_echo_rfc1323_ true\n")));
    }
    assert!(!t.contains("Agent/TCP/Sack1"), "{t}");
    let plain = tcp_variant("protocol = \"sack\"\n", "").unwrap();
    assert!(plain.contains("Agent/TCP/Sack1") && !plain.contains("Agent/TCP/Linux"));
    for p in ["cubic", "hybla"] {
        assert_eq!(
            tcp_variant(
                &format!("protocol = \"{p}\"\nsack_recovery = \"ns2-linux\"\n"),
                ""
            )
            .unwrap(),
            tcp_variant(&format!("protocol = \"{p}\"\n"), "").unwrap(),
            "{p}"
        );
    }
}
