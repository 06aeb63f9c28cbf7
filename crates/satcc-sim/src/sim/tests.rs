//! The simulator's own tests: packet conservation on every shipped
//! scenario, and flows of different protocols driven side by side through
//! the one generic flow driver.

use std::path::PathBuf;

use satcc_proto::{Duration, Instant};

use super::{RunOptions, RunOutput, Sim};
use crate::scenario::Scenario;

/// A whole run, as `crate::run` makes it (which sits above this module).
fn run(sc: &Scenario, opts: &RunOptions) -> RunOutput {
    Sim::new(sc, opts).expect("runs").finish(None)
}

fn scenarios_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

fn load(text: &str) -> Scenario {
    Scenario::from_toml_str(text, "test.toml", &[]).expect("valid scenario")
}

#[test]
fn every_shipped_scenario_conserves_packets() {
    let mut n = 0;
    let mut entries: Vec<_> = std::fs::read_dir(scenarios_dir())
        .expect("scenarios/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    entries.sort();
    for path in entries {
        // Short runs: conservation is checked at several instants, with
        // packets queued, on wires and held back by send jitter.
        let sc = Scenario::load(&path, &["duration=\"12s\"".into()]).expect("loads");
        let mut sim = Sim::new(&sc, &RunOptions::default()).expect("builds");
        for k in 1..=4u64 {
            sim.run_until(Instant::ZERO + Duration::from_secs(3 * k));
            assert_eq!(
                sim.conservation_error(),
                None,
                "{} at {} s",
                path.display(),
                3 * k
            );
        }
        let s = sim.finish(None).summary;
        assert!(s.packets.conserved(), "{}: {:?}", path.display(), s.packets);
        assert_eq!(s.packets.dropped, s.packets.drop_reasons.total());
        assert!(s.packets.sent > 0, "{}", path.display());
        n += 1;
    }
    assert!(n >= 20, "only {n} scenarios found");
}

/// A broken count is caught: the check is not vacuous.
#[test]
fn conservation_check_sees_a_lost_packet() {
    let sc = load(MIXED);
    let mut sim = Sim::new(&sc, &RunOptions::default()).expect("builds");
    sim.run_until(Instant::ZERO + Duration::from_secs(2));
    assert_eq!(sim.conservation_error(), None);
    sim.totals.sent += 1;
    let e = sim.conservation_error().expect("detected");
    assert!(e.contains("sent"), "{e}");
    sim.totals.sent -= 1;
    sim.totals.dropped += 1;
    assert!(sim.conservation_error().is_some());
}

/// One dumbbell, four protocol families, one event loop: every flow gets
/// through, each reports what its family has (a window, a rate, feedback).
const MIXED: &str = r#"
name = "mixed"
duration = "30s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "8Mbps", delay = "100ms", queue = { kind = "droptail", limit = 100 } }
[[flows]]
protocol = "sack"
[[flows]]
protocol = "peach"
rwnd = 64
[[flows]]
protocol = "tfrc"
[[flows]]
protocol = "tfrcp"
[[flows]]
protocol = "cbr"
rate = "500kbps"
"#;

#[test]
fn different_protocols_share_one_driver() {
    let out = run(
        &load(MIXED),
        &RunOptions {
            series: true,
            ..RunOptions::default()
        },
    );
    let s = &out.summary;
    for f in &s.flows {
        assert!(
            f.goodput_bps > 100_000.0,
            "{} got {} b/s",
            f.protocol,
            f.goodput_bps
        );
    }
    let by = |name: &str| {
        s.flows
            .iter()
            .find(|f| f.protocol.name() == name)
            .expect("flow")
    };
    assert!(by("sack").retransmits + by("sack").timeouts < by("sack").packets_sent);
    assert!(by("peach").dummy.is_some() && by("sack").dummy.is_none());
    assert!(by("tfrc").feedback_packets.unwrap_or(0) > 0);
    assert!(by("tfrcp").feedback_packets.is_none());
    // CBR: 500 kb/s of 1028-byte datagrams, unresponsive: what it
    // delivers is what it sent less what the full queue dropped.
    let cbr = by("cbr");
    let nominal = 500_000.0 * 1000.0 / 1028.0;
    let sent = cbr.packets_sent as f64;
    let kept = (sent - cbr.drops as f64) / sent;
    assert!(
        (cbr.goodput_bps - nominal * kept).abs() < 0.01 * nominal,
        "{} vs {} x {kept}",
        cbr.goodput_bps,
        nominal
    );
    // The series see each family's own state.
    let series = out.series.expect("series");
    let col = |name: &str| {
        series
            .flows
            .iter()
            .find(|f| f.protocol == name)
            .expect("flow series")
    };
    assert!(col("sack").cwnd.iter().any(|c| c.is_finite()));
    assert!(col("tfrc").cwnd.iter().all(|c| c.is_nan()));
    assert!(col("tfrc").rate_bps.iter().any(|x| *x > 0.0));
    assert!(col("tfrcp").rate_bps.iter().any(|x| *x > 0.0));
    assert!(col("cbr").rtt_s.iter().all(|x| x.is_nan()));
}

/// Same scenario and seed, same summary: the generic driver keeps the run
/// deterministic.
#[test]
fn mixed_run_is_deterministic() {
    let a = run(&load(MIXED), &RunOptions::default());
    let b = run(&load(MIXED), &RunOptions::default());
    assert_eq!(a.summary, b.summary);
}

/// What a packet crossing an idle link without hook or error model reads
/// lies in the link's first cache line (`Link` is `repr(C, align(64))`):
/// a field added before them, or one of them moved, would bring back a
/// second miss per hop when the links outgrow the cache.
#[test]
fn a_plain_hop_reads_two_lines_of_its_link() {
    use std::mem::{align_of, offset_of, size_of};

    use super::links::Link;
    assert_eq!(align_of::<Link>(), 64);
    // The first line: what the idle fast path and a folded hop read and
    // write.
    for (name, end) in [
        (
            "busy_until",
            offset_of!(Link, busy_until) + size_of::<Instant>(),
        ),
        ("delay", offset_of!(Link, delay) + size_of::<Duration>()),
        ("free_pending", offset_of!(Link, free_pending) + 1),
        ("queue_sees_all", offset_of!(Link, queue_sees_all) + 1),
        ("plain", offset_of!(Link, plain) + 1),
        ("feeds_fold", offset_of!(Link, feeds_fold) + 1),
        ("tx_last", offset_of!(Link, tx_last) + 8),
        ("busy_ns", offset_of!(Link, busy_ns) + 8),
        ("arrivals", offset_of!(Link, arrivals) + 8),
        ("fold_from", offset_of!(Link, fold_from) + 4),
        ("unfolded", offset_of!(Link, unfolded) + 4),
    ] {
        assert!(end <= 64, "{name} ends at byte {end} of Link");
    }
    // The second: the wire, its first packet inline, and the far end
    // (all that an arrival reads of its link).
    let pipe = offset_of!(Link, pipe);
    let end = pipe + size_of::<super::links::Pipe>();
    assert!(
        pipe >= 64 && end <= 128,
        "pipe at bytes {pipe}..{end} of Link"
    );
    let to = offset_of!(Link, to);
    assert!(to >= 64 && to + 4 <= 128, "to at bytes {to}.. of Link");
}

/// A link's pipe is a FIFO whatever the interleaving of pushes and pops,
/// across its growth while the ring is wrapped (checked against
/// `VecDeque`), and `front` is the next `pop_front`.
#[test]
fn a_pipe_is_a_fifo_across_wraps_and_growth() {
    use std::collections::VecDeque;

    use super::links::{OnWire, Pipe};
    let mut rng = satcc_proto::rng::Rng::new(7);
    let mut pipe = Pipe::default();
    let mut reference = VecDeque::new();
    let mut next = 0u32;
    for step in 0..20_000 {
        // Bursts of pushes and of pops, so the ring fills while its head
        // is anywhere and grows from 8 to hundreds of entries.
        let push = if step % 2_000 < 1_000 {
            rng.below(10) < 6
        } else {
            rng.below(10) < 4
        };
        if push {
            let w = OnWire {
                at: Instant(u64::from(next) * 3),
                uid: u64::from(next) + 1_000,
                idx: next,
            };
            // As `Link::enter_wire` does: an empty wire's packet goes
            // inline, without `push_back`'s test.
            if pipe.is_empty() {
                pipe.push_first(w);
            } else {
                pipe.push_back(w);
            }
            reference.push_back(next);
            next += 1;
        } else {
            let want = reference.pop_front();
            let front = pipe.front().map(|w| w.idx);
            let got = pipe.pop_front();
            assert_eq!(front, want, "step {step}");
            assert_eq!(got.map(|w| w.idx), want, "step {step}");
            if let Some(w) = got {
                assert_eq!(w.at, Instant(u64::from(w.idx) * 3));
                assert_eq!(w.uid, u64::from(w.idx) + 1_000);
            }
        }
        assert_eq!(pipe.len(), reference.len());
        assert_eq!(pipe.is_empty(), reference.is_empty());
    }
    assert!(next > 5_000, "{next} pushes");
}

/// A link with an error model is not `plain`, so its losses still happen;
/// a transmission too long for the 32-bit cache (600 bytes at 1 kb/s:
/// 4.8 s) is computed anew every time, not cut short or cached wrapped.
#[test]
fn error_models_and_slow_links_survive_the_fast_path() {
    let sc = load(
        r#"
name = "lossy-slow"
duration = "300s"
[topology]
kind = "dumbbell"
[topology.bottleneck]
rate = "1kbps"
delay = "10ms"
error = { kind = "uniform", per = 0.2 }
[topology.access]
rate = "10Mbps"
delay = "1ms"
[[flows]]
protocol = "cbr"
rate = "2kbps"
packet_size = 600
"#,
    );
    let mut sim = Sim::new(&sc, &RunOptions::default()).expect("builds");
    let slow = |sim: &Sim| {
        sim.links
            .iter()
            .position(|l| l.rate_bps == 1_000 && !l.is_reverse)
            .expect("the 1 kb/s link")
    };
    let b = slow(&sim);
    assert!(
        !sim.links[b].plain,
        "a link with an error model is not plain"
    );
    assert!(sim.links.iter().any(|l| l.plain), "access links are plain");
    sim.run_until(sim.end());
    let link = &sim.links[b];
    assert!(link.drops.error > 0, "no error-model loss");
    // Every transmission took the full 4.8 s and more: busy time is
    // booked a whole packet at a time, and ~62 of them fit in 300 s.
    let tx = Duration::transmission(600 + 28, 1_000).as_nanos();
    assert!(tx > u64::from(u32::MAX));
    assert_eq!(link.busy_ns % tx, 0, "busy {} ns", link.busy_ns);
    assert!(link.busy_ns / tx >= 60, "{} packets", link.busy_ns / tx);
    assert_eq!(link.tx_last, (0, 0), "a time past 32 bits was cached");
}

/// The order of same-instant events is a property of the events, not of
/// the order the code scheduled them in: every shipped scenario (shortened)
/// gives the same summary and time series when the events pushed between
/// two pops enter the queue in shuffled orders.
#[test]
fn same_instant_order_does_not_depend_on_insertion() {
    let mut entries: Vec<_> = std::fs::read_dir(scenarios_dir())
        .expect("scenarios/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    entries.sort();
    let mut sources = vec![("mixed".to_string(), load(MIXED))];
    for path in &entries {
        let sc = Scenario::load(path, &["duration=\"12s\"".into()]).expect("loads");
        sources.push((path.display().to_string(), sc));
    }
    let opts = RunOptions {
        series: true,
        ..RunOptions::default()
    };
    let mut differ = Vec::new();
    for (name, sc) in &sources {
        let plain = run(sc, &opts);
        let want = format!("{:?}\n{:?}", plain.summary, plain.series);
        for seed in 1..=2u64 {
            let mut sim = Sim::new(sc, &opts).expect("builds");
            sim.events.shuffle_insertions(seed);
            let out = sim.finish(None);
            if format!("{:?}\n{:?}", out.summary, out.series) != want {
                differ.push(format!("{name} (shuffle seed {seed})"));
            }
        }
    }
    assert!(differ.is_empty(), "outputs moved: {differ:?}");
}

/// `events` in the summary counts the simulation, not the recording: a
/// run with time series (files) and one without (`--json` alone) report
/// the same count, and the same summary.
#[test]
fn events_do_not_count_samples() {
    let sc = load(MIXED);
    let with = run(
        &sc,
        &RunOptions {
            series: true,
            ..RunOptions::default()
        },
    );
    let without = run(&sc, &RunOptions::default());
    assert!(with.series.as_ref().is_some_and(|s| s.t.len() > 100));
    assert_eq!(with.summary.events, without.summary.events);
    assert_eq!(with.summary, without.summary);
}

/// Departures scheduled at enqueue (`Link::eager`) change nothing but the
/// number of events: every shipped scenario (shortened) and the mixed
/// dumbbell give the same summary and series with every link made to
/// use `LinkFree` events instead, and fewer events.
#[test]
fn eager_departures_give_the_same_run_with_fewer_events() {
    let mut entries: Vec<_> = std::fs::read_dir(scenarios_dir())
        .expect("scenarios/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    entries.sort();
    let mut sources = vec![("mixed".to_string(), load(MIXED))];
    for path in &entries {
        let sc = Scenario::load(path, &["duration=\"12s\"".into()]).expect("loads");
        sources.push((path.display().to_string(), sc));
    }
    let opts = RunOptions {
        series: true,
        ..RunOptions::default()
    };
    let mut fewer = 0;
    for (name, sc) in &sources {
        let eager = Sim::new(sc, &opts).expect("builds");
        let any = eager.links.iter().any(|l| l.eager);
        let mut a = eager.finish(None);
        let mut sim = Sim::new(sc, &opts).expect("builds");
        for l in &mut sim.links {
            l.eager = false;
        }
        let mut b = sim.finish(None);
        assert!(a.summary.events <= b.summary.events, "{name}");
        if a.summary.events < b.summary.events {
            fewer += 1;
        }
        if !any {
            assert_eq!(a.summary.events, b.summary.events, "{name}");
        }
        a.summary.events = 0;
        b.summary.events = 0;
        assert_eq!(
            format!("{:?}\n{:?}", a.summary, a.series),
            format!("{:?}\n{:?}", b.summary, b.series),
            "{name}"
        );
    }
    assert!(fewer >= 10, "only {fewer} scenarios have eager links");
}

/// Runs each of `extra` (name, scenario text) and every shipped scenario
/// (shortened to 12 s) twice: as built, and with `unfold` applied before
/// the run. Asserts the same summary and series but for `events`, never
/// more events as built, and the same count where `folds` finds nothing
/// to fold; returns the names of the runs with fewer events as built.
fn same_run_when_unfolded(
    extra: &[(&str, &str)],
    folds: impl Fn(&Sim) -> bool,
    unfold: impl Fn(&mut Sim),
) -> Vec<String> {
    let mut entries: Vec<_> = std::fs::read_dir(scenarios_dir())
        .expect("scenarios/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    entries.sort();
    let mut sources: Vec<(String, Scenario)> = extra
        .iter()
        .map(|&(name, text)| (name.to_string(), load(text)))
        .collect();
    for path in &entries {
        let sc = Scenario::load(path, &["duration=\"12s\"".into()]).expect("loads");
        sources.push((path.display().to_string(), sc));
    }
    let opts = RunOptions {
        series: true,
        ..RunOptions::default()
    };
    let mut fewer = Vec::new();
    for (name, sc) in &sources {
        let folded = Sim::new(sc, &opts).expect("builds");
        let any = folds(&folded);
        let mut a = folded.finish(None);
        let mut sim = Sim::new(sc, &opts).expect("builds");
        unfold(&mut sim);
        let mut b = sim.finish(None);
        assert!(a.summary.events <= b.summary.events, "{name}");
        if a.summary.events < b.summary.events {
            fewer.push(name.clone());
        }
        if !any {
            assert_eq!(a.summary.events, b.summary.events, "{name}");
        }
        a.summary.events = 0;
        b.summary.events = 0;
        assert_eq!(
            format!("{:?}\n{:?}", a.summary, a.series),
            format!("{:?}\n{:?}", b.summary, b.series),
            "{name}"
        );
    }
    fewer
}

/// Hops folded into their feeder's departure (`Link::fold_from`) change
/// nothing but the number of events: every shipped scenario (shortened)
/// and the mixed dumbbell give the same summary and series with folding
/// turned off, and the bench and dumbbell scenarios have fewer events.
#[test]
fn folded_hops_give_the_same_run_with_fewer_events() {
    // Last hops slower than the bottleneck: they queue and drop, so a
    // packet often finds its last link busy and must take the ordinary
    // way, and the packets behind it must not overtake it.
    let slow_last_hop = r#"
name = "slow-last-hop"
duration = "20s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "20Mbps", delay = "20ms", queue = { kind = "droptail", limit = 100 } }
access = { rate = "2Mbps", delay = "5ms", queue = { kind = "droptail", limit = 8 } }
[[flows]]
protocol = "sack"
count = 2
[[flows]]
protocol = "tfrc"
[[flows]]
protocol = "cbr"
rate = "3Mbps"
"#;
    let fewer = same_run_when_unfolded(
        &[("mixed", MIXED), ("slow-last-hop", slow_last_hop)],
        |sim| sim.links.iter().any(|l| l.fold_from != u32::MAX),
        |sim| {
            for l in &mut sim.links {
                l.fold_from = u32::MAX;
                l.feeds_fold = false;
            }
        },
    );
    for want in ["bench.toml", "dumbbell.toml", "slow-last-hop"] {
        assert!(
            fewer.iter().any(|n| n.ends_with(want)),
            "{want} has no folded hop: {fewer:?}"
        );
    }
    assert!(
        fewer.len() >= 10,
        "only {} scenarios fold hops",
        fewer.len()
    );
}

/// Host-jittered packets whose entry into their first link is done at the
/// send (`Flow::inject_link`, `Sim::fold_injects`) change nothing but the
/// number of events: every shipped scenario (shortened), and a dumbbell
/// whose TFRC senders fill slow access links, so that a packet often
/// finds its link busy at its entry time and takes the `Inject` event,
/// and the packets sent behind it must not overtake it, give the same
/// summary and series with the fold turned off.
#[test]
fn folded_injects_give_the_same_run_with_fewer_events() {
    let busy_access = r#"
name = "busy-access"
duration = "20s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "20Mbps", delay = "20ms", queue = { kind = "droptail", limit = 100 } }
access = { rate = "1Mbps", delay = "5ms", queue = { kind = "droptail", limit = 6 } }
[[flows]]
protocol = "tfrc"
count = 2
host_jitter = "3ms"
[[flows]]
protocol = "tfrc"
host_jitter = "20ms"
[[flows]]
protocol = "sack"
"#;
    let fewer = same_run_when_unfolded(
        &[("mixed", MIXED), ("busy-access", busy_access)],
        |sim| sim.flows.iter().any(|f| f.inject_link != u32::MAX),
        |sim| {
            for f in &mut sim.flows {
                f.inject_link = u32::MAX;
            }
        },
    );
    for want in ["bench.toml", "tfrc-friendliness.toml", "busy-access"] {
        assert!(
            fewer.iter().any(|n| n.ends_with(want)),
            "{want} has no folded inject: {fewer:?}"
        );
    }
}
