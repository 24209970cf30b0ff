//! The Internet checksum (RFC 1071) with IPv4/IPv6 pseudo-headers and the
//! RFC 1624 incremental update.
//!
//! Sums here are the 16-bit ones'-complement sum *before* the final
//! complement, as a host-order `u16` whose value is that of the big-endian
//! word on the wire. [`finish`] turns a sum into the field value.
//!
//! Two implementations of the sum are kept: [`reference`] (the plain RFC 1071
//! loop, easy to trust) and [`optimized`] (wide accumulation, AVX2 when the CPU
//! has it). [`sum`] is the one the stack uses.

pub mod optimized;
pub mod reference;

use core::net::{Ipv4Addr, Ipv6Addr};

/// Ones'-complement sum of `data`, with the fastest implementation this CPU
/// supports.
#[inline]
pub fn sum(data: &[u8]) -> u16 {
    optimized::sum(data)
}

/// Ones'-complement addition of two sums (RFC 1071 §2(A): the sum is
/// associative, so partial sums combine).
#[inline]
pub fn add(a: u16, b: u16) -> u16 {
    let s = u32::from(a) + u32::from(b);
    ((s & 0xffff) + (s >> 16)) as u16
}

/// Ones'-complement sum of several partial sums.
#[inline]
pub fn combine(parts: &[u16]) -> u16 {
    parts.iter().fold(0, |acc, &p| add(acc, p))
}

/// Folds a wide accumulator of 16-bit words into a 16-bit ones'-complement sum.
///
/// In fixed steps, without a loop (a data-dependent loop cost about 85
/// instructions per TCP segment, issue 22): 2^32 and 2^16 are both 1 in
/// ones'-complement arithmetic, so the high half folds onto the low one.
/// The bounds: after the first step at most 2^33 - 2, after the second
/// 0x2_fffd, after the third 0x1_0000, after the fourth 0xffff.
#[inline]
pub(crate) fn fold(acc: u64) -> u16 {
    let acc = (acc & 0xffff_ffff) + (acc >> 32);
    let acc = (acc & 0xffff) + (acc >> 16);
    let acc = (acc & 0xffff) + (acc >> 16);
    let acc = (acc & 0xffff) + (acc >> 16);
    acc as u16
}

/// The value to store in a checksum field: the complement of the sum.
#[inline]
pub fn finish(sum: u16) -> u16 {
    !sum
}

/// Checksum of a whole header or message (complement of its sum).
#[inline]
pub fn checksum(data: &[u8]) -> u16 {
    finish(sum(data))
}

/// Computes the checksum of a whole header or message that has no
/// pseudo-header (the IPv4 header, RFC 791 §3.1; ICMPv4, RFC 792; IGMP,
/// RFC 2236 §2.3) and stores it in its 16-bit checksum field at `field`,
/// which counts as zero while summing.
pub(crate) fn fill(message: &mut [u8], field: usize) {
    crate::bytes::put_be_u16(message, field, 0);
    let value = checksum(message);
    crate::bytes::put_be_u16(message, field, value);
}

/// Whether data containing its own checksum field verifies: the sum over all
/// of it, pseudo-header included via `initial`, is all ones.
#[inline]
pub fn verifies(initial: u16, data: &[u8]) -> bool {
    add(initial, sum(data)) == 0xffff
}

/// Sum of the IPv4 pseudo-header (RFC 793 §3.1, RFC 768).
pub fn pseudo_header_v4(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, length: u16) -> u16 {
    let s = src.octets();
    let d = dst.octets();
    let acc = u64::from(u16::from_be_bytes([s[0], s[1]]))
        + u64::from(u16::from_be_bytes([s[2], s[3]]))
        + u64::from(u16::from_be_bytes([d[0], d[1]]))
        + u64::from(u16::from_be_bytes([d[2], d[3]]))
        + u64::from(protocol)
        + u64::from(length);
    fold(acc)
}

/// Sum of the IPv6 pseudo-header (RFC 8200 §8.1): addresses, the 32-bit
/// upper-layer length and the next-header value.
///
/// Called twice per TCP segment (issue 22). An `Ipv6Addr` argument goes by
/// pointer: the caller stores it (in 4-, 8- and 4-byte pieces, in the TCP
/// bench) and a callee's 8-byte loads spanning two of those stores cannot
/// be forwarded (52 % of this function's samples). So only the conversion
/// to integers is inline, done where the caller has the address, and the
/// sum gets them in registers; the whole sum inline made the stack's own
/// helper too big to inline, which kept the stall.
#[inline]
pub fn pseudo_header_v6(src: Ipv6Addr, dst: Ipv6Addr, next_header: u8, length: u32) -> u16 {
    pseudo_header_v6_le(
        u128::from_le_bytes(src.octets()),
        u128::from_le_bytes(dst.octets()),
        next_header,
        length,
    )
}

/// [`pseudo_header_v6`] of addresses as little-endian integers (their bytes
/// in order from the least significant).
#[inline(never)]
fn pseudo_header_v6_le(src: u128, dst: u128, next_header: u8, length: u32) -> u16 {
    // Summed as little-endian 64-bit words and swapped once at the end
    // (RFC 1071 §2(B)); 2^64 is 1 in ones'-complement arithmetic, so the
    // u128 sum's high half folds onto its low one. The length is the
    // pseudo-header's ninth 32-bit word and the next header the last byte
    // of its tenth: as little-endian words, the byte-swapped length and the
    // next header in the top byte.
    let halves = |address: u128| u128::from(address as u64) + (address >> 64);
    let acc = halves(src)
        + halves(dst)
        + u128::from(length.swap_bytes())
        + (u128::from(next_header) << 24);
    // At most 4 * (2^64 - 1) + 2^33: the high half is at most 4, and when
    // adding it carries, the low half is at most 3, so nothing is lost.
    let (low, carry) = (acc as u64).overflowing_add((acc >> 64) as u64);
    fold(low + u64::from(carry)).swap_bytes()
}

/// RFC 1624 eqn. 3: the new checksum field after one 16-bit word of the
/// covered data changes from `old_word` to `new_word`: `HC' = ~(~HC + ~m + m')`.
/// Unlike eqn. 2 this never produces 0x0000 from a non-zero sum (RFC 1624 §3).
#[inline]
pub fn update(old_checksum: u16, old_word: u16, new_word: u16) -> u16 {
    !combine(&[!old_checksum, !old_word, new_word])
}

/// RFC 1624 applied to a run of changed bytes: the new checksum field after
/// the covered bytes `old` (starting at an even offset) become `new`.
pub fn update_bytes(old_checksum: u16, old: &[u8], new: &[u8]) -> u16 {
    debug_assert_eq!(old.len(), new.len());
    !combine(&[!old_checksum, !sum(old), sum(new)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3: the bytes 00 01 f2 03 f4 f5 f6 f7 sum to 0xddf2.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(reference::sum(&data), 0xddf2);
        assert_eq!(optimized::sum(&data), 0xddf2);
    }

    #[test]
    fn odd_length_pads_on_the_right() {
        assert_eq!(sum(&[0xab]), 0xab00);
        assert_eq!(sum(&[0x01, 0x02, 0x03]), 0x0102 + 0x0300);
    }

    #[test]
    fn ipv4_header_checksum_known_value() {
        // A real IPv4 header whose checksum field is 0xb861.
        let mut hdr = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(checksum(&hdr), 0xb861);
        hdr[10..12].copy_from_slice(&0xb861u16.to_be_bytes());
        assert!(verifies(0, &hdr));
    }

    #[test]
    fn fill_ignores_what_the_field_held() {
        // The header above with garbage where its checksum goes.
        let mut hdr = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xde, 0xad, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        fill(&mut hdr, 10);
        assert_eq!(hdr[10..12], 0xb861u16.to_be_bytes());
        assert!(verifies(0, &hdr));
    }

    #[test]
    fn incremental_update_matches_recompute() {
        let mut hdr = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        let before = checksum(&hdr);
        // Decrement the TTL, as a router does (RFC 1624 §4 example).
        let old_word = u16::from_be_bytes([hdr[8], hdr[9]]);
        hdr[8] -= 1;
        let new_word = u16::from_be_bytes([hdr[8], hdr[9]]);
        assert_eq!(update(before, old_word, new_word), checksum(&hdr));
    }

    #[test]
    fn update_bytes_matches_recompute() {
        let mut data = *b"0123456789abcdef";
        let before = checksum(&data);
        let old = [data[4], data[5], data[6], data[7]];
        data[4..8].copy_from_slice(b"WXYZ");
        assert_eq!(update_bytes(before, &old, b"WXYZ"), checksum(&data));
    }

    /// The word-wise IPv6 pseudo-header sum equals the sum of its 40
    /// bytes laid out as RFC 8200 §8.1 draws them, carries included.
    #[test]
    fn ipv6_pseudo_header_equals_the_sum_of_its_bytes() {
        let cases = [
            (Ipv6Addr::UNSPECIFIED, Ipv6Addr::LOCALHOST, 6, 20),
            (
                Ipv6Addr::new(0x2001, 0xdb8, 0xfe, 0x1234, 0xabcd, 0xffff, 0x8000, 0x7fff),
                Ipv6Addr::new(0xfe80, 0, 0, 0, 0x0211, 0x22ff, 0xfe33, 0x4455),
                17,
                0x0001_05dc,
            ),
            (
                Ipv6Addr::from_bits(u128::MAX),
                Ipv6Addr::from_bits(u128::MAX),
                255,
                u32::MAX,
            ),
        ];
        // And a spread of others (a fixed-seed xorshift).
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let spread = (0..10_000).map(|_| {
            let src = Ipv6Addr::from_bits(u128::from(next()) << 64 | u128::from(next()));
            let dst = Ipv6Addr::from_bits(u128::from(next()) << 64 | u128::from(next()));
            let r = next();
            (src, dst, r as u8, (r >> 32) as u32)
        });
        for (src, dst, next_header, length) in cases.into_iter().chain(spread) {
            let mut bytes = Vec::new();
            bytes.extend_from_slice(&src.octets());
            bytes.extend_from_slice(&dst.octets());
            bytes.extend_from_slice(&length.to_be_bytes());
            bytes.extend_from_slice(&[0, 0, 0, next_header]);
            assert_eq!(
                pseudo_header_v6(src, dst, next_header, length),
                reference::sum(&bytes),
                "{src} {dst}"
            );
        }
    }

    #[test]
    fn pseudo_headers_sum_their_fields() {
        let v4 = pseudo_header_v4(
            Ipv4Addr::new(10, 0, 0, 1),
            Ipv4Addr::new(10, 0, 0, 2),
            17,
            8,
        );
        assert_eq!(v4, fold(0x0a00 + 0x0001 + 0x0a00 + 0x0002 + 17 + 8));
        let v6 = pseudo_header_v6(Ipv6Addr::LOCALHOST, Ipv6Addr::LOCALHOST, 58, 0x1_0004);
        assert_eq!(v6, fold(1 + 1 + 1 + 4 + 58));
    }

    #[test]
    fn the_fixed_step_fold_agrees_with_the_carry_loop() {
        let by_loop = |mut acc: u64| {
            while acc >> 16 != 0 {
                acc = (acc & 0xffff) + (acc >> 16);
            }
            acc as u16
        };
        let edges = [
            0,
            1,
            0xffff,
            0x1_0000,
            0x1_fffe,
            0x2_fffe,
            0xffff_ffff,
            0x1_0000_0000,
            (1 << 33) - 2,
            u64::MAX,
            u64::MAX - 0xffff,
            // 0x1_0000_ffff after the first step, 0x1_ffff after the
            // second, 0x1_0000 after the third: the fourth step's case.
            0xffff_ffff_0001_0000,
        ];
        // And a spread of others (a fixed-seed xorshift), at every width.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let spread = (0..100_000).map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x >> (i % 64)
        });
        for acc in edges.into_iter().chain(spread) {
            assert_eq!(fold(acc), by_loop(acc), "{acc:#x}");
        }
    }
}
