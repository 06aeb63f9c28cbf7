//! The Internet checksum (RFC 1071), the one implementation in the
//! workspace: DCCP (RFC 4340 §9.1) and our compact header use it here, the
//! simulator's pcap writer for the IPv4 headers it draws.

/// The one's complement sum of `data` as big-endian 16-bit words (an odd
/// last byte padded on the right with zero), folded to 16 bits.
pub fn sum(data: &[u8]) -> u16 {
    let mut acc: u64 = 0;
    let mut words = data.chunks_exact(2);
    for w in &mut words {
        acc += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        acc += u64::from(*last) << 8;
    }
    while acc > 0xFFFF {
        acc = (acc & 0xFFFF) + (acc >> 16);
    }
    acc as u16
}

/// The checksum to store for `data` (whose checksum field reads zero):
/// the complement of its sum. A result of 0x0000 is returned as 0xFFFF
/// (the same value in one's complement), so that a zero field can mean
/// "not computed" (RFC 6773 §3.3; UDP does the same).
pub fn compute(data: &[u8]) -> u16 {
    match !sum(data) {
        0 => 0xFFFF,
        c => c,
    }
}

/// The checksum to store for an IPv4 header (RFC 791 §3.1): the plain
/// complement of its sum, 0x0000 kept as it is (IPv4 has no "not
/// computed" value to avoid, unlike [`compute`]).
pub fn complement(data: &[u8]) -> u16 {
    !sum(data)
}

/// Whether `data`, checksum field included, sums to 0xFFFF (negative
/// zero): the field matches the rest.
pub fn verify(data: &[u8]) -> bool {
    sum(data) == 0xFFFF
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3: the sum of 0001 f203 f4f5 f6f7 is ddf2.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(sum(&data), 0xddf2);
        assert_eq!(compute(&data), !0xddf2);
    }

    #[test]
    fn odd_length_pads_right() {
        assert_eq!(sum(&[0x12]), 0x1200);
        assert_eq!(sum(&[0x12, 0x34, 0x56]), 0x1234 + 0x5600);
    }

    #[test]
    fn computed_value_verifies() {
        let mut data = [0xAB, 0xCD, 0x00, 0x00, 0x12, 0x34, 0xFF];
        let c = compute(&data);
        data[2..4].copy_from_slice(&c.to_be_bytes());
        assert!(verify(&data));
        data[0] ^= 1;
        assert!(!verify(&data));
    }

    #[test]
    fn zero_result_is_sent_as_ffff() {
        // Words summing to 0xFFFF: the complement is 0, sent as 0xFFFF.
        let mut data = [0xFF, 0x00, 0x00, 0xFF, 0x00, 0x00];
        assert_eq!(sum(&data), 0xFFFF);
        assert_eq!(compute(&data), 0xFFFF);
        data[4..6].copy_from_slice(&0xFFFFu16.to_be_bytes());
        assert!(verify(&data));
    }
}
