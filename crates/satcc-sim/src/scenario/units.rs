//! Quantities written the way people write them: `10Mbps`, `250ms`, `1e-4`,
//! `64KB`. Each parser returns a message that names the value and what was
//! expected, for the scenario error line.

use satcc_proto::Duration;

fn split_number(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit()
                || c == '.'
                || c == '_'
                || ((c == 'e' || c == 'E')
                    && s[i + 1..]
                        .chars()
                        .next()
                        .is_some_and(|n| n.is_ascii_digit() || n == '-' || n == '+'))
                || ((c == '-' || c == '+') && (i == 0 || matches!(&s[i - 1..i], "e" | "E"))))
        })
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    let num: f64 = s[..end].replace('_', "").parse().ok()?;
    Some((num, s[end..].trim()))
}

/// A link or flow rate in bits per second: `10Mbps`, `1.544Mb/s`, `64kbps`,
/// `1Gbps`, `12000bps`, a bare number of bits per second, or one of the
/// link classes `T1` (1.544 Mb/s), `T2` (10), `T3` (45), `OC3` (155).
pub fn parse_rate_bps(s: &str) -> Result<u64, String> {
    // Link-class names as paper 003 §V uses them for its ISLs (it rounds
    // T2, T3 and OC3 to 10, 45 and 155 Mb/s).
    match s.trim().to_ascii_uppercase().as_str() {
        "T1" => return Ok(1_544_000),
        "T2" => return Ok(10_000_000),
        "T3" => return Ok(45_000_000),
        "OC3" => return Ok(155_000_000),
        _ => {}
    }
    let bad = || format!("invalid rate '{s}' (expected e.g. '10Mbps', '64kbps', '1.5e6bps')");
    let (n, unit) = split_number(s).ok_or_else(bad)?;
    let mult = match unit.to_ascii_lowercase().as_str() {
        "" | "bps" | "b/s" | "bit/s" => 1.0,
        "kbps" | "kb/s" | "kbit/s" => 1e3,
        "mbps" | "mb/s" | "mbit/s" => 1e6,
        "gbps" | "gb/s" | "gbit/s" => 1e9,
        _ => return Err(bad()),
    };
    let v = n * mult;
    if !(1.0..=1e15).contains(&v) {
        return Err(format!("rate '{s}' out of range (1 bps to 1 Pbps)"));
    }
    Ok(v.round() as u64)
}

/// A duration: `250ms`, `1.5s`, `20us`, `100ns`, `2min`, or a bare number of
/// seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration '{s}' (expected e.g. '250ms', '1.5s', '20us')");
    let (n, unit) = split_number(s).ok_or_else(bad)?;
    let mult = match unit.to_ascii_lowercase().as_str() {
        "" | "s" | "sec" | "secs" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "min" | "m" => 60.0,
        "h" => 3600.0,
        _ => return Err(bad()),
    };
    let v = n * mult;
    if !(0.0..=1e9).contains(&v) {
        return Err(format!("duration '{s}' out of range"));
    }
    Ok(Duration::from_secs_f64(v))
}

/// A size in bytes: `1000`, `64KB`, `1.5MB`, `1KiB`.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let bad = || format!("invalid size '{s}' (expected e.g. '1000', '64KB', '1MiB')");
    let (n, unit) = split_number(s).ok_or_else(bad)?;
    let mult = match unit {
        "" | "B" | "b" | "bytes" => 1.0,
        "KB" | "kB" | "kb" => 1e3,
        "MB" | "mb" => 1e6,
        "GB" | "gb" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1048576.0,
        "GiB" => 1073741824.0,
        _ => return Err(bad()),
    };
    let v = n * mult;
    if !(0.0..=1e15).contains(&v) {
        return Err(format!("size '{s}' out of range"));
    }
    Ok(v.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate_bps("10Mbps"), Ok(10_000_000));
        assert_eq!(parse_rate_bps("1.544Mb/s"), Ok(1_544_000));
        assert_eq!(parse_rate_bps("64 kbps"), Ok(64_000));
        assert_eq!(parse_rate_bps("1.5e6"), Ok(1_500_000));
        assert_eq!(parse_rate_bps("T1"), Ok(1_544_000));
        assert_eq!(parse_rate_bps("oc3"), Ok(155_000_000));
        assert!(parse_rate_bps("T4").is_err());
        assert!(parse_rate_bps("10Mbs").unwrap_err().contains("10Mbs"));
        assert!(parse_rate_bps("0bps").is_err());
        assert!(parse_rate_bps("-3Mbps").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("20us"), Ok(Duration::from_micros(20)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1e-3"), Ok(Duration::from_millis(1)));
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("64KB"), Ok(64_000));
        assert_eq!(parse_bytes("1KiB"), Ok(1024));
        assert_eq!(parse_bytes("1_000"), Ok(1000));
        assert!(parse_bytes("12 parsecs").is_err());
    }
}
