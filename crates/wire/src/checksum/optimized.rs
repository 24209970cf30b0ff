//! The fast Internet checksum.
//!
//! RFC 1071 §2(B): the ones'-complement sum is independent of byte order, so
//! we sum *little-endian* words as wide as the CPU allows and swap the bytes of
//! the folded result once at the end. An odd trailing byte is the high byte of
//! a big-endian word, i.e. the low byte of a little-endian one.
//!
//! * portable: 64-bit loads into 128-bit accumulators (`add`/`adc` pairs, two
//!   independent chains);
//! * x86-64 with AVX2 (detected at run time): 32-byte loads whose 16-bit
//!   words `vpmaddwd` adds in pairs into eight 32-bit lanes, four independent
//!   accumulators, one reduction at the end.

use super::fold;

/// Ones'-complement sum of `data` (not complemented); equal to
/// [`super::reference::sum`] for every input.
#[inline]
pub fn sum(data: &[u8]) -> u16 {
    fold(sum_le(data)).swap_bytes()
}

/// Shortest input worth the AVX2 path. Its fixed cost (a call across the
/// target-feature boundary, the masked tail, the reduction, `vzeroupper`)
/// loses to the portable sum below: on AMD EPYC (Zen 4, KVM), TSC ticks
/// per call in the fastest of 10 000 batches of 20, portable vs AVX2: 32 B 10.4/13.0, 96 B
/// 11.7/14.3, 128 B 14.3/13.0, 256 B 23.4/14.3, 576 B 42.9/20.8. The TCP
/// bench sums payload pieces this short where its send buffer wraps.
pub const AVX2_MIN_LEN: usize = 128;
const _: () = assert!(AVX2_MIN_LEN >= 32, "avx2::sum_le needs 32 bytes");

/// Name of the implementation [`sum`] uses on this CPU for long inputs.
pub fn implementation() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            return "avx2 from 128 B, portable below";
        }
    }
    "portable"
}

/// The portable wide sum alone (no SIMD), for comparison and for targets
/// without AVX2.
pub fn portable_sum(data: &[u8]) -> u16 {
    fold(portable_sum_le(data)).swap_bytes()
}

/// Unfolded accumulator of little-endian words over `data`.
#[inline]
fn sum_le(data: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if data.len() >= AVX2_MIN_LEN && std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            return unsafe { avx2::sum_le(data) };
        }
    }
    portable_sum_le(data)
}

/// Portable wide sum: eight bytes at a time into 128-bit accumulators (an
/// `add`/`adc` pair each), which cannot overflow for any slice length.
pub(crate) fn portable_sum_le(data: &[u8]) -> u64 {
    let le = |bytes: &[u8]| u128::from(u64::from_le_bytes(bytes.try_into().unwrap_or_default()));
    // 32 bytes per iteration, two independent chains: a TCP header (32
    // bytes with timestamps) is one iteration and no tail.
    let (mut a, mut b) = (0u128, 0u128);
    let mut blocks = data.chunks_exact(32);
    for block in &mut blocks {
        a += le(&block[..8]) + le(&block[16..24]);
        b += le(&block[8..16]) + le(&block[24..]);
    }
    let mut rest = blocks.remainder();
    if rest.len() >= 16 {
        a += le(&rest[..8]);
        b += le(&rest[8..16]);
        rest = &rest[16..];
    }
    if rest.len() >= 8 {
        a += le(&rest[..8]);
        rest = &rest[8..];
    }
    // 4, 2 and 1 bytes, each added where it lies (2^16 ≡ 1, so a word at
    // a 16-bit-aligned place needs no shift into place).
    if let [x0, x1, x2, x3, tail @ ..] = rest {
        b += u128::from(u32::from_le_bytes([*x0, *x1, *x2, *x3]));
        rest = tail;
    }
    if let [x0, x1, tail @ ..] = rest {
        a += u128::from(u16::from_le_bytes([*x0, *x1]));
        rest = tail;
    }
    if let [x0] = rest {
        b += u128::from(*x0);
    }
    let total = a + b;
    // Fold 128 → 64 bits; 2^64 ≡ 1 (mod 2^16 − 1), so carries wrap around.
    let (low, carry) = (total as u64).overflowing_add((total >> 64) as u64);
    low + u64::from(carry)
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use core::arch::x86_64::*;

    /// Bytes per main-loop iteration: four 32-byte loads into four
    /// independent accumulators (no add waits on the previous one's).
    const BLOCK: usize = 128;
    /// Main-loop iterations between reductions. Each pair sum is in
    /// [-2^16, 2^16 - 2]; a lane gets at most 4 * RUN of them from the four
    /// accumulators and 4 from the tail, and the reduction adds eight lanes:
    /// 2^16 * 8 * (4 * RUN + 4) < 2^31, so it all fits in 32-bit lanes.
    const RUN: usize = 512;

    /// `TAIL_MASK[k..k + 32]` keeps the last `k` bytes of a vector.
    static TAIL_MASK: [u8; 64] = {
        let mut mask = [0u8; 64];
        let mut i = 32;
        while i < 64 {
            mask[i] = 0xff;
            i += 1;
        }
        mask
    };

    /// The 16 little-endian words of `v`, biased to signed (`w ^ 0x8000` is
    /// `w - 2^15` as an `i16`) and added in pairs into eight 32-bit lanes
    /// by `vpmaddwd`: one instruction widens and adds, where masking and
    /// shifting out each half took three. [`reduce`] takes the bias back.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn pairs(v: __m256i) -> __m256i {
        let bias = _mm256_set1_epi16(i16::MIN);
        _mm256_madd_epi16(_mm256_xor_si256(v, bias), _mm256_set1_epi16(1))
    }

    /// # Safety
    /// `p` must be valid for reading 32 bytes.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn load(p: *const u8) -> __m256i {
        // SAFETY: the caller's; loadu has no alignment requirement.
        unsafe { _mm256_loadu_si256(p.cast()) }
    }

    /// The exact sum of the words behind `vectors` biased vectors whose
    /// pair sums `acc` holds: the eight lanes added (in 32 bits, see
    /// [`RUN`]), plus the 16 * 2^15 bias of each vector.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn reduce(acc: __m256i, vectors: usize) -> u64 {
        let x = _mm_add_epi32(
            _mm256_castsi256_si128(acc),
            _mm256_extracti128_si256::<1>(acc),
        );
        let x = _mm_add_epi32(x, _mm_shuffle_epi32::<0b01_00_11_10>(x));
        let x = _mm_add_epi32(x, _mm_shuffle_epi32::<0b10_11_00_01>(x));
        let lanes = i64::from(_mm_cvtsi128_si32(x));
        // Non-negative: it is the plain sum of the words.
        (lanes + ((vectors as i64) << 19)) as u64
    }

    /// # Safety
    /// The CPU must support AVX2, and `data` must be at least 32 bytes.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn sum_le(data: &[u8]) -> u64 {
        let len = data.len();
        debug_assert!(len >= 32);
        let p = data.as_ptr();
        let blocks = len / BLOCK;
        let mut total: u64 = 0;
        let mut first = 0;
        let (mut a0, mut a1, mut a2, mut a3);
        loop {
            let last = blocks.min(first + RUN);
            a0 = _mm256_setzero_si256();
            a1 = _mm256_setzero_si256();
            a2 = _mm256_setzero_si256();
            a3 = _mm256_setzero_si256();
            for i in first..last {
                // SAFETY: i < blocks, so the block's 128 bytes lie in `data`.
                let (v0, v1, v2, v3) = unsafe {
                    let q = p.add(i * BLOCK);
                    (load(q), load(q.add(32)), load(q.add(64)), load(q.add(96)))
                };
                a0 = _mm256_add_epi32(a0, pairs(v0));
                a1 = _mm256_add_epi32(a1, pairs(v1));
                a2 = _mm256_add_epi32(a2, pairs(v2));
                a3 = _mm256_add_epi32(a3, pairs(v3));
            }
            if last == blocks {
                break;
            }
            let run = reduce(
                _mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3)),
                (last - first) * 4,
            );
            total = add_carry(total, run);
            first = last;
        }
        let mut vectors = (blocks - first) * 4;
        // The tail, under 128 bytes: whole vectors, then the even-length
        // rest as the end of a vector that overlaps what came before (at an
        // even offset, so bytes keep their word pairing), masked to the
        // bytes not yet summed. Faster than a scalar tail (1428-byte TCP
        // payloads leave 20 bytes).
        let mut done = blocks * BLOCK;
        let mut tail = _mm256_setzero_si256();
        while len - done >= 32 {
            // SAFETY: 32 bytes from `done` lie in `data`.
            tail = _mm256_add_epi32(tail, pairs(unsafe { load(p.add(done)) }));
            done += 32;
            vectors += 1;
        }
        let even_end = len & !1;
        if even_end > done {
            let keep = even_end - done;
            // SAFETY: even_end >= 32 (len >= 32), so the 32 bytes before it
            // lie in `data`; keep <= 30, so the mask's 32 bytes lie in
            // TAIL_MASK.
            let (v, mask) = unsafe {
                (
                    load(p.add(even_end - 32)),
                    load(TAIL_MASK.as_ptr().add(keep)),
                )
            };
            tail = _mm256_add_epi32(tail, pairs(_mm256_and_si256(v, mask)));
            vectors += 1;
        }
        let acc = _mm256_add_epi32(
            _mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3)),
            tail,
        );
        // An odd last byte is the low byte of a little-endian word.
        let odd = if len % 2 == 1 {
            u64::from(data[len - 1])
        } else {
            0
        };
        add_carry(total, reduce(acc, vectors) + odd)
    }

    /// Adds with the carry wrapped around: 2^64 ≡ 1 (mod 2^16 − 1), so the
    /// total stays a ones'-complement sum however long the data.
    #[inline]
    fn add_carry(a: u64, b: u64) -> u64 {
        let (s, carry) = a.overflowing_add(b);
        s + u64::from(carry)
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// The AVX2 sum on its own, below the threshold too: every tail (0 to 3
    /// whole vectors, then 0 to 31 masked bytes, an odd byte or not) after
    /// 0 to 8 main-loop blocks, at every start alignment.
    #[test]
    fn avx2_matches_the_reference_for_every_tail() {
        if !std::is_x86_feature_detected!("avx2") {
            return;
        }
        let mut x: u32 = 0x9e37_79b9;
        let bytes: Vec<u8> = (0..1200)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        let ones = vec![0xffu8; 1200];
        for data in [&bytes, &ones] {
            for offset in 0..64 {
                for len in 32..=1100 {
                    let slice = &data[offset..offset + len];
                    // SAFETY: AVX2 was detected above; len >= 32.
                    let sum = fold(unsafe { avx2::sum_le(slice) }).swap_bytes();
                    assert_eq!(
                        sum,
                        super::super::reference::sum(slice),
                        "len {len} offset {offset}"
                    );
                }
            }
        }
    }
}
