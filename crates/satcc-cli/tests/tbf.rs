//! `satcc perf` across a real kernel token-bucket shaper (issue 34): two
//! network namespaces the test creates itself (`unshare --user --net
//! --map-root-user`, no privilege needed), joined by a veth pair with
//! `tbf rate 10mbit burst 16kb limit 150kb` on both ends, the perf server
//! in one and the client in the other.
//!
//! Before the bound on RFC 5348 §4.5's X_inst (`damping_max_gain`), a
//! TFRC or CCID3 flow on this path kept offering 2-4 times the link rate
//! with 60-77 % of its datagrams dropped by tbf: one RTT sample taken on
//! the empty queue (0.1 ms, against 120 ms when the queue is full) made
//! X_inst 20-30 X until the next feedback.
//!
//! What is measured: the kernel's own counters of the client's egress
//! qdisc (packets and bytes tbf passed, packets it dropped), read once
//! after a warm-up that covers slow start and again before the client
//! stops. The offered rate is (passed + dropped) packets times the mean
//! size tbf counted (link layer, as tbf meters them), so no satcc
//! arithmetic enters the check.
//!
//! If the namespaces cannot be made the test fails, saying so: it never
//! passes without having run.
//!
//! `SATCC_TBF_BIN=path/to/satcc` runs the same check against another
//! build (the commit before the fix, say) instead of this one's.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The link rate tbf shapes to, bits/s.
const LINK_BPS: f64 = 10e6;
/// How long the client sends, seconds.
const SEND_S: u32 = 8;
/// Time after the link came back to full rate before measuring, seconds.
const WARMUP_S: u32 = 1;
/// The whole run may take this long before it is killed.
const DEADLINE: Duration = Duration::from_secs(60);

/// Runs in the new user+net namespace (root there). The second namespace
/// is held by a `sleep` (bounded, and killed on exit); everything dies
/// with the namespaces when the script ends. Prints two `SNAP` lines,
/// `SNAP <unix time> <bytes passed> <packets passed> <packets dropped>`,
/// and the client's JSON report after `CLIENT`.
const SCRIPT: &str = r#"
set -eu
SATCC=$1; PROTO=$2; T=$3; WARM=$4
ip link set lo up
unshare --net sleep 90 &
HOLD=$!
trap 'kill $HOLD 2>/dev/null || true' EXIT
# The new namespace exists once the child has exec'd sleep.
i=0
while [ "$(readlink /proc/$HOLD/ns/net)" = "$(readlink /proc/self/ns/net)" ]; do
    i=$((i+1)); [ $i -lt 100 ] || { echo "second namespace never appeared" >&2; exit 3; }
    sleep 0.02
done
ip link add veth0 type veth peer name veth1
ip link set veth1 netns $HOLD
ip addr add 10.200.0.1/24 dev veth0
ip link set veth0 up
tc qdisc add dev veth0 root tbf rate 10mbit burst 16kb limit 150kb
nsenter -t $HOLD -n sh -c 'ip link set lo up && ip addr add 10.200.0.2/24 dev veth1 && ip link set veth1 up && tc qdisc add dev veth1 root tbf rate 10mbit burst 16kb limit 150kb'
snap() {
    tc -s qdisc show dev veth0 | awk -v now="$(date +%s.%N)" \
        '/Sent/ { gsub(/[(,)]/, " "); print "SNAP", now, $2, $4, $7 }'
}
nsenter -t $HOLD -n timeout 30 "$SATCC" perf --server --bind 10.200.0.2:5201 \
    --time $((T + 3))s --idle-timeout 1s --json > /dev/null 2>&1 &
SRV=$!
sleep 0.3
OUT=$(mktemp)
timeout 30 "$SATCC" perf --client 10.200.0.2:5201 --protocol "$PROTO" \
    --time ${T}s --json > "$OUT" &
CLI=$!
# The link slows to a quarter for 1.5 s, then comes back: the flow's
# rate falls with it, and once the link is back the queue drains, so
# that an RTT sample is taken on the empty queue with R_sqmean still
# reflecting a full one (what triggers the overload; a constant link
# only triggers it in about half the runs).
sleep 1
tc qdisc change dev veth0 root tbf rate 2500kbit burst 16kb limit 150kb
sleep 1.5
tc qdisc change dev veth0 root tbf rate 10mbit burst 16kb limit 150kb
sleep "$WARM"
snap
sleep $((T - WARM - 3))
snap
wait $CLI
echo CLIENT
cat "$OUT"
rm -f "$OUT"
kill $SRV 2>/dev/null || true
wait $SRV 2>/dev/null || true
"#;

/// One counter snapshot: time (s), bytes and packets tbf passed, packets
/// it dropped.
#[derive(Debug, Clone, Copy)]
struct Snap {
    t: f64,
    bytes: f64,
    pkts: f64,
    dropped: f64,
}

fn parse_snap(line: &str) -> Snap {
    let f: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| {
            x.parse()
                .unwrap_or_else(|_| panic!("bad SNAP line {line:?}"))
        })
        .collect();
    assert_eq!(f.len(), 4, "bad SNAP line {line:?}");
    Snap {
        t: f[0],
        bytes: f[1],
        pkts: f[2],
        dropped: f[3],
    }
}

/// Fails the test, loudly, if this machine cannot make the namespaces.
fn require_namespaces() {
    let out = Command::new("unshare")
        .args(["--user", "--net", "--map-root-user", "sh", "-c"])
        .arg("ip link add t0 type veth peer name t1 && tc qdisc add dev t0 root tbf rate 1mbit burst 16kb limit 15kb")
        .output();
    match out {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!(
            "this test needs an unprivileged user+net namespace with veth and tbf \
             (unshare --user --net --map-root-user; ip; tc), and could not make one: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => panic!("this test needs unshare(1), ip(8) and tc(8) (util-linux, iproute2): {e}"),
    }
}

/// Runs one flow across the shaped veth pair: the two snapshots and the
/// client's report.
fn run(protocol: &str) -> (Snap, Snap, serde_json::Value) {
    require_namespaces();
    let mut child = Command::new("unshare")
        .args([
            "--user",
            "--net",
            "--map-root-user",
            "sh",
            "-c",
            SCRIPT,
            "sh",
        ])
        .arg(std::env::var_os("SATCC_TBF_BIN").unwrap_or(env!("CARGO_BIN_EXE_satcc").into()))
        .arg(protocol)
        .arg(SEND_S.to_string())
        .arg(WARMUP_S.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so that a run over the deadline can be
        // killed whole.
        .process_group(0)
        .spawn()
        .expect("spawn unshare");
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if start.elapsed() > DEADLINE {
            // SAFETY: kill(2) on the process group this test created.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            panic!("the tbf run did not finish in {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut out = String::new();
    let mut err = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "tbf run failed ({status}): {err}\n{out}");
    let snaps: Vec<Snap> = out
        .lines()
        .filter(|l| l.starts_with("SNAP"))
        .map(parse_snap)
        .collect();
    assert_eq!(snaps.len(), 2, "two counter snapshots: {out}\n{err}");
    let json = out
        .split_once("CLIENT\n")
        .unwrap_or_else(|| panic!("no client report: {out}\n{err}"))
        .1;
    let report: serde_json::Value = serde_json::from_str(json).expect("client JSON");
    (snaps[0], snaps[1], report)
}

/// The check of issue 34: after the first RTTs, the flow offers at most
/// 1.1 times the link rate and tbf drops at most 5 % of it, while it does
/// use most of the link (so that an idle or broken flow cannot pass).
fn check(protocol: &str) {
    // One flow at a time: two paced senders, two servers and the shells
    // around them on 2 cores made a flow fall short of the link (7.7 of
    // 10 Mb/s once) for want of CPU, not of rate.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let (a, b, report) = run(protocol);
    let dt = b.t - a.t;
    let passed = b.pkts - a.pkts;
    let dropped = b.dropped - a.dropped;
    assert!(dt > 1.0 && passed > 0.0, "no traffic measured: {a:?} {b:?}");
    let size = (b.bytes - a.bytes) / passed;
    let offered_bps = (passed + dropped) * size * 8.0 / dt;
    let through_bps = passed * size * 8.0 / dt;
    let drop_frac = dropped / (passed + dropped);
    let msg = format!(
        "{protocol} over {dt:.1} s after {WARMUP_S} s: offered {:.2} Mb/s, passed {:.2} Mb/s, \
         dropped {:.1} % ({dropped} of {}), client: {} packets sent",
        offered_bps / 1e6,
        through_bps / 1e6,
        drop_frac * 100.0,
        passed + dropped,
        report["packets_sent"]
    );
    eprintln!("{msg}");
    // Not idle or broken: a flow that sends nothing cannot pass. (0.6,
    // not more: a TFRC flow need not fill the link, and this is about
    // overload.)
    assert!(
        through_bps > 0.6 * LINK_BPS,
        "the flow must use most of the link: {msg}"
    );
    assert!(offered_bps <= 1.1 * LINK_BPS, "overload: {msg}");
    assert!(drop_frac <= 0.05, "drops: {msg}");
}

#[test]
fn tfrc_stays_within_a_token_bucket_link() {
    check("tfrc");
}

#[test]
fn ccid3_stays_within_a_token_bucket_link() {
    check("ccid3");
}
