//! STFRC through the public API only, the way a Saratoga sender drives it.

use satcc_proto::stfrc::{StatusInfo, StfrcConfig, StfrcController, SYMMETRY_RATIO_RED};
use satcc_proto::{Duration, Instant};

fn ms(x: u64) -> Instant {
    Instant(x * 1_000_000)
}

#[test]
fn a_saratoga_sender_drives_the_controller() {
    let cfg = StfrcConfig {
        segment_size: 1000,
        symmetry_ratio: SYMMETRY_RATIO_RED,
        ..StfrcConfig::default()
    };
    let mut c = StfrcController::new(cfg, ms(0));
    // Before the first RTT sample: one packet per second (RFC 5348 §4.2).
    assert_eq!(c.rate_bytes_per_s(), 1000.0);
    let req = c.want_status_request(ms(0));
    assert!(req);
    let d = c.on_data_sent(ms(0), 0, 1000, req);
    assert_eq!(d, 0);
    // The STATUS for it, 200 ms later, echoing the DATA's timestamp.
    let st = StatusInfo {
        progress: 1000,
        in_response_to: 0,
        holes: &[],
        holes_incomplete: false,
        voluntary: false,
        echoed_timestamp: Some(ms(0)),
    };
    assert!(c.on_status(ms(200), &st));
    let s = c.stats();
    assert_eq!(s.rtt, Some(Duration::from_millis(200)));
    // W_init/R = 4000 B / 0.2 s.
    assert!((c.rate_bytes_per_s() - 20_000.0).abs() < 1e-6);
    assert_eq!(c.last_cycle().map(|r| r.rx_end), Some(ms(130)));
    // Next request due one RTT after the last.
    assert!(!c.want_status_request(ms(199)));
    assert!(c.want_status_request(ms(200)));
    assert!(c.poll_timeout().is_some_and(|t| t > ms(200)));
}
