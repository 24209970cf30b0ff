//! The plain RFC 1071 §4.1 loop: sum big-endian 16-bit words into a wide
//! accumulator, pad an odd byte with zero, fold the carries. Kept as the
//! reference that the optimized sum is tested against.

/// Ones'-complement sum of `data` (not complemented).
pub fn sum(data: &[u8]) -> u16 {
    let mut acc: u64 = 0;
    let mut words = data.chunks_exact(2);
    for w in &mut words {
        acc += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        acc += u64::from(u16::from_be_bytes([*last, 0]));
    }
    // RFC 1071 §4.1's own fold, a carry at a time: the optimized sum's
    // fixed-step fold is checked against it.
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}
