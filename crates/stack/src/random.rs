//! The stack's deterministic randomness: SplitMix64, seeded by the caller,
//! so the simulator replays a run exactly (RFC delays and jitter, wire
//! impairment seeds, derived per-wire seeds).

/// The SplitMix64 increment (2^64 / golden ratio).
const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// A SplitMix64 generator: small, fast, and the same on every platform.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub const fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        mix(self.state)
    }

    /// The `n`-th output (from 0) of a generator seeded with `seed`,
    /// without stepping through the ones before it.
    pub const fn nth(seed: u64, n: u64) -> u64 {
        mix(seed.wrapping_add(n.wrapping_add(1).wrapping_mul(GOLDEN_GAMMA)))
    }
}

/// SplitMix64's output function: a bijection that spreads every input bit
/// over the whole output.
const fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A seed from the operating system (`getrandom`), for a host on real
/// links: its ISN key, ephemeral ports and DAD delays must differ from run
/// to run, as a real host's do. Falls back to the clock and process id.
#[cfg(target_os = "linux")]
pub fn os_seed() -> u64 {
    let mut seed = [0u8; 8];
    // SAFETY: getrandom writes at most `seed.len()` bytes into `seed`,
    // which is live and writable for the call.
    let got = unsafe { libc::getrandom(seed.as_mut_ptr().cast(), seed.len(), 0) };
    if got == seed.len() as isize {
        return u64::from_ne_bytes(seed);
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    nanos ^ (u64::from(std::process::id()) << 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_sequence_and_nth() {
        // The reference SplitMix64 outputs for seed 0.
        let mut rng = SplitMix64::new(0);
        assert_eq!(rng.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(rng.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        let mut rng = SplitMix64::new(42);
        for n in 0..10 {
            assert_eq!(rng.next_u64(), SplitMix64::nth(42, n));
        }
    }
}
