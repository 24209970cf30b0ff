//! Bytes-per-second of a memory-bound operation, measured the robust way:
//! several timed trials, each long enough to dwarf the clock's resolution,
//! and the median trial reported.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// Runs `op` over `len`-byte inputs for about `budget` in `trials` trials and
/// returns the median rate in GB/s (10^9 bytes per second).
pub fn gbytes_per_s(len: usize, budget: Duration, trials: usize, mut op: impl FnMut()) -> f64 {
    let per_trial = budget / trials.max(1) as u32;
    // Size a batch so one batch takes about 1/20 of a trial.
    let probe_start = Instant::now();
    let mut warm = 0u64;
    while probe_start.elapsed() < per_trial / 20 {
        op();
        warm += 1;
    }
    let batch = warm.max(1);

    let mut rates: Vec<f64> = (0..trials.max(1))
        .map(|_| {
            let start = Instant::now();
            let mut ops = 0u64;
            while start.elapsed() < per_trial {
                for _ in 0..batch {
                    op();
                }
                ops += batch;
            }
            let secs = start.elapsed().as_secs_f64();
            (ops as f64 * len as f64) / secs / 1e9
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

/// A deterministic, non-trivial byte pattern (so no branch sees zeros only).
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(131) ^ (i >> 7)) as u8)
        .collect()
}

/// GB/s of `copy_from_slice` (memcpy) for `len` bytes.
pub fn memcpy(len: usize, budget: Duration, trials: usize) -> f64 {
    let src = pattern(len);
    let mut dst = vec![0u8; len];
    gbytes_per_s(len, budget, trials, || {
        dst.copy_from_slice(black_box(&src));
        black_box(&mut dst);
    })
}

/// GB/s of a checksum function over `len` bytes.
pub fn checksum(len: usize, budget: Duration, trials: usize, sum: fn(&[u8]) -> u16) -> f64 {
    let data = pattern(len);
    gbytes_per_s(len, budget, trials, || {
        black_box(sum(black_box(&data)));
    })
}
