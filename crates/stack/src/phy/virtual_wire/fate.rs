//! What happens to a frame on an impaired wire, and the timing and
//! random draws behind it.

use super::*;

/// What happens to one frame. All five draws are made for every frame
/// sent, whatever the probabilities, so changing one impairment does not
/// reshuffle the others.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Fate {
    pub(super) lost: bool,
    pub(super) duplicated: bool,
    pub(super) held_back: bool,
    /// Index of the bit to flip, if the frame is corrupted.
    pub(super) corrupt_bit: Option<u64>,
}

impl Fate {
    pub(super) fn draw(rng: &mut Pcg64, config: &WireConfig, len: usize) -> Self {
        let lost = chance(rng.next_u64(), config.loss);
        let duplicated = chance(rng.next_u64(), config.duplicate);
        let held_back = chance(rng.next_u64(), config.reorder);
        let corrupt = chance(rng.next_u64(), config.corrupt);
        let bits = (len as u64).saturating_mul(8);
        let bit = below(rng.next_u64(), bits);
        Self {
            lost,
            duplicated,
            held_back,
            // An empty frame has no bit to flip.
            corrupt_bit: (corrupt && bits > 0).then_some(bit),
        }
    }
}

/// True with probability `probability`, from one uniform 64-bit draw.
pub(super) fn chance(draw: u64, probability: f64) -> bool {
    // The top 53 bits make a uniform value in [0, 1) with every f64 step.
    let unit = (draw >> 11) as f64 / (1u64 << 53) as f64;
    unit < probability
}

/// A value in `0..bound` (0 if `bound` is 0), by scaling a uniform draw.
pub(super) fn below(draw: u64, bound: u64) -> u64 {
    ((u128::from(draw) * u128::from(bound)) >> 64) as u64
}

pub(super) fn flip_bit(bytes: &mut [u8], bit: u64) {
    let Ok(index) = usize::try_from(bit / 8) else {
        return;
    };
    if let Some(byte) = bytes.get_mut(index) {
        *byte ^= 1 << (bit % 8);
    }
}

/// Time to clock `len` bytes onto a link of `rate` bits per second,
/// rounded up to the nanosecond.
pub(super) fn serialization_time(len: usize, rate_bits_per_s: Option<u64>) -> Duration {
    let Some(rate) = rate_bits_per_s.filter(|&rate| rate > 0) else {
        return Duration::ZERO;
    };
    let bit_nanos = (len as u128) * 8 * 1_000_000_000;
    let nanos = bit_nanos.div_ceil(u128::from(rate));
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

/// The PRNG of one direction: PCG-64 with a 256-bit seed expanded by
/// SplitMix64 from the wire's seed and the direction, so the two
/// directions draw unrelated sequences.
pub(super) fn direction_rng(seed: u64, direction: u64) -> Pcg64 {
    let mut expand = SplitMix64::new(seed ^ direction.wrapping_mul(0xd1b5_4a32_d192_ed03));
    let mut bytes = [0u8; 32];
    for chunk in bytes.chunks_exact_mut(8) {
        chunk.copy_from_slice(&expand.next_u64().to_le_bytes());
    }
    Pcg64::from_seed(bytes)
}
