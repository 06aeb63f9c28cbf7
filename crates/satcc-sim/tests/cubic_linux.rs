//! `protocol = "cubic"` with `profile = "linux"` on the `geo` link of
//! `scripts/linux-validation.py` (docs/validation.md, "Against the kernel's
//! CUBIC through `satcc shell`"): the two differences from the kernel found
//! there.

mod common;
use common::{geo_one_flow, sim};

/// The script's scenario: 10 Mb/s, 250 ms, DropTail 625 KB, one CUBIC flow
/// of 1500-byte packets for 30 s, with `extra` flow keys.
fn geo(per: f64, seed: u64, extra: &str) -> (f64, u64) {
    let error = if per > 0.0 {
        format!(", error = {{ kind = \"uniform\", per = {per} }}")
    } else {
        String::new()
    };
    let flow = format!(
        "protocol = \"cubic\"\nmss = 1448\nheader_bytes = 52\nprofile = \"linux\"\n{extra}"
    );
    let out = sim(&geo_one_flow(seed, &error, &flow));
    let f = &out.summary.flows[0];
    (f.goodput_bps, f.retransmits)
}

#[test]
fn linux_hystart_leaves_slow_start_when_the_queue_outlasts_a_round() {
    // Linux 6.14+ (the default): HyStart's rounds follow the flights, the
    // delay test waits for a queue that outlasts a round trip; cwnd
    // overshoots the 850-packet pipe as the kernel's does (exit at 1289,
    // ~600 retransmissions in 30 s, 8.58 Mb/s).
    let (g, r) = geo(0.0, 1, "");
    assert!(g > 8.5e6 && r > 50, "6.14+: {g} b/s, {r} retransmitted");
    // Linux 5.16-6.13: rounds start mid-flight, the delay test fires at
    // cwnd 136 and CUBIC climbs from there (7.56 Mb/s).
    let (g, r) = geo(0.0, 1, "slow_start = \"hystart-6.13\"");
    assert!(g < 8.0e6, "5.16-6.13: {g} b/s, {r} retransmitted");
}

#[test]
fn linux_ssthresh_from_cwnd_ends_a_runaway_window() {
    // PER 1e-2, seed 116: the first error after 398 packets, a slow start
    // that overflows the queue and a RACK recovery that ends with more
    // outstanding than cwnd. RFC 9438's ssthresh = β·FlightSize then grew
    // the window at every congestion event: 8.3 Mb/s and 14 228
    // retransmissions through a link losing 1 % (the kernel: 0.38-1.23
    // Mb/s, 12-36 retransmissions). Linux's β·cwnd: 1.2 Mb/s.
    let (g, r) = geo(0.01, 116, "slow_start = \"standard\"");
    assert!(g < 2.0e6 && r < 500, "{g} b/s, {r} retransmitted");
}
