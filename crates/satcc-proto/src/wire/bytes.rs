//! Bounds-checked big-endian field access: a field beyond the buffer reads
//! as zero and is not written, so no accessor can panic, whatever the
//! buffer.

use std::ops::Range;

/// The big-endian unsigned value of `buf[range]` (at most 8 bytes), zero
/// if the range is not inside `buf`.
pub(crate) fn read(buf: &[u8], range: Range<usize>) -> u64 {
    buf.get(range).map_or(0, |b| {
        b.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x))
    })
}

/// Writes the low bytes of `value` big-endian into `buf[range]` (at most
/// 8 bytes); nothing if the range is not inside `buf`.
pub(crate) fn write(buf: &mut [u8], range: Range<usize>, value: u64) {
    if let Some(b) = buf.get_mut(range) {
        let n = b.len();
        for (i, x) in b.iter_mut().enumerate() {
            let shift = 8 * (n - 1 - i);
            *x = if shift < 64 {
                (value >> shift) as u8
            } else {
                0
            };
        }
    }
}

/// `buf[at]`, zero if out of range.
pub(crate) fn byte(buf: &[u8], at: usize) -> u8 {
    buf.get(at).copied().unwrap_or(0)
}

/// Sets `buf[at]` if it exists.
pub(crate) fn set_byte(buf: &mut [u8], at: usize, value: u8) {
    if let Some(x) = buf.get_mut(at) {
        *x = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_write_round_trip_and_out_of_range() {
        let mut b = [0u8; 8];
        write(&mut b, 1..7, 0x0000_A1B2_C3D4_E5F6);
        assert_eq!(b, [0, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6, 0]);
        assert_eq!(read(&b, 1..7), 0xA1B2_C3D4_E5F6);
        assert_eq!(read(&b, 6..10), 0);
        write(&mut b, 7..9, 0xFFFF);
        assert_eq!(b[7], 0);
        assert_eq!(byte(&b, 8), 0);
        set_byte(&mut b, 8, 1);
        set_byte(&mut b, 0, 9);
        assert_eq!(byte(&b, 0), 9);
    }
}
