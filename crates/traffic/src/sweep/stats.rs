//! The figures a point reports: mean, sample standard deviation, min,
//! max and 95 % intervals over repetitions; nearest-rank percentiles and a log-spaced
//! histogram over round-trip times.

use serde::Serialize;

/// Mean, median, spread, range and 95 % intervals of a set of values
/// (the `stats` crate's estimate, shared with the analysis and report).
pub use stats::Estimate as Summary;

/// The nearest-rank `p`th percentile of `sorted` (ascending): the smallest
/// value with at least p % of the values at or below it, i.e. the value of
/// rank ceil(p/100 * n) (1-based). Always one of the data; p = 0 gives the
/// minimum, p = 100 the maximum. `None` for no values.
pub fn percentile(sorted: &[u64], p: u32) -> Option<u64> {
    let n = sorted.len() as u64;
    if n == 0 {
        return None;
    }
    // Integer arithmetic: ceil(p * n / 100) exactly, no float rounding
    // pushing a rank across a boundary.
    let rank = (u64::from(p.min(100)) * n).div_ceil(100).max(1);
    sorted.get(rank as usize - 1).copied()
}

/// Buckets per decade of the round-trip histogram.
pub const BUCKETS_PER_DECADE: u32 = 4;
/// The histogram's first edge (1 µs) and last edge (10 s), in nanoseconds.
pub const HISTOGRAM_FROM_NS: u64 = 1_000;
pub const HISTOGRAM_TO_NS: u64 = 10_000_000_000;

/// A count of values per log-spaced bucket: [1 µs, 10 s) split into 4
/// buckets a decade, plus one below 1 µs and one from 10 s up, so every
/// value lands somewhere.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Histogram {
    pub buckets: Vec<Bucket>,
}

/// Values in [lo_us, hi_us); `hi_us` is null for the open top bucket.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Bucket {
    pub lo_us: f64,
    pub hi_us: Option<f64>,
    pub count: u64,
}

/// The histogram's edges in nanoseconds: 10^(k/4) µs rounded to whole
/// nanoseconds, k = 0..=28 (1000, 1778, 3162, 5623, 10000, ...). Integer
/// edges make a value's bucket exact, with no logarithm to round.
pub fn histogram_edges_ns() -> Vec<u64> {
    let decades = (HISTOGRAM_TO_NS / HISTOGRAM_FROM_NS).ilog10();
    (0..=decades * BUCKETS_PER_DECADE)
        .map(|k| {
            let exponent = f64::from(k) / f64::from(BUCKETS_PER_DECADE);
            (HISTOGRAM_FROM_NS as f64 * 10f64.powf(exponent)).round() as u64
        })
        .collect()
}

impl Histogram {
    /// Counts `values_ns` into the buckets.
    pub fn of(values_ns: &[u64]) -> Self {
        let edges = histogram_edges_ns();
        // Bucket 0 is below the first edge, bucket i (1..edges.len()) is
        // [edges[i-1], edges[i]), the last is from the last edge up:
        // exactly the number of edges at or below the value.
        let mut counts = vec![0u64; edges.len() + 1];
        for &v in values_ns {
            counts[edges.partition_point(|&e| e <= v)] += 1;
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        let buckets = counts
            .iter()
            .enumerate()
            .map(|(i, &count)| Bucket {
                lo_us: if i == 0 { 0.0 } else { us(edges[i - 1]) },
                hi_us: edges.get(i).map(|&e| us(e)),
                count,
            })
            .collect();
        Self { buckets }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn summary_matches_hand_computed_values() {
        // Mean 5; squared deviations 9+1+1+1+0+0+4+16 = 32; 32/7.
        let s = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.n, 8);
        assert!(close(s.mean, 5.0));
        assert!(close(s.stdev.unwrap(), (32.0f64 / 7.0).sqrt()));
        assert_eq!((s.min, s.max), (2.0, 9.0));

        let s = Summary::of(&[1.0, 3.0]).unwrap();
        assert!(close(s.stdev.unwrap(), 2f64.sqrt()));

        let one = Summary::of(&[42.0]).unwrap();
        assert_eq!(
            (one.mean, one.stdev, one.min, one.max),
            (42.0, None, 42.0, 42.0)
        );
        assert_eq!(Summary::of(&[]), None);
    }

    #[test]
    fn stdev_of_large_nearly_equal_values_does_not_cancel() {
        // 1e9 +- 1: the naive sum-of-squares formula loses every digit here.
        let s = Summary::of(&[1e9 - 1.0, 1e9, 1e9 + 1.0]).unwrap();
        assert!(close(s.stdev.unwrap(), 1.0), "{:?}", s.stdev);
    }

    #[test]
    fn nearest_rank_percentiles_on_known_data() {
        let ten: Vec<u64> = (1..=10).map(|v| v * 10).collect();
        assert_eq!(percentile(&ten, 0), Some(10));
        assert_eq!(percentile(&ten, 10), Some(10));
        assert_eq!(percentile(&ten, 11), Some(20));
        assert_eq!(percentile(&ten, 50), Some(50));
        assert_eq!(percentile(&ten, 90), Some(90));
        assert_eq!(percentile(&ten, 99), Some(100));
        assert_eq!(percentile(&ten, 100), Some(100));

        let hundred: Vec<u64> = (1..=100).collect();
        for p in [1, 50, 90, 99, 100] {
            assert_eq!(percentile(&hundred, p), Some(u64::from(p)));
        }
        // p99 of 1000 values is the 990th, not the maximum.
        let thousand: Vec<u64> = (1..=1000).collect();
        assert_eq!(percentile(&thousand, 99), Some(990));
        assert_eq!(percentile(&[7], 99), Some(7));
        assert_eq!(percentile(&[], 50), None);
    }

    #[test]
    fn histogram_edges_are_four_per_decade_from_1us_to_10s() {
        let edges = histogram_edges_ns();
        assert_eq!(edges.len(), 29);
        assert_eq!(&edges[..5], &[1_000, 1_778, 3_162, 5_623, 10_000]);
        assert_eq!(edges[28], 10_000_000_000);
        assert!(edges.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn values_land_in_the_bucket_their_edges_say() {
        let h = Histogram::of(&[
            0,
            999,
            1_000,
            1_777,
            1_778,
            10_000,
            9_999_999_999,
            10_000_000_000,
            u64::MAX,
        ]);
        let b = &h.buckets;
        assert_eq!(b.len(), 30);
        let count = |i: usize| b[i].count;
        assert_eq!(count(0), 2, "below 1 µs");
        assert_eq!((b[0].lo_us, b[0].hi_us), (0.0, Some(1.0)));
        assert_eq!(count(1), 2, "[1, 1.778) µs");
        assert_eq!((b[1].lo_us, b[1].hi_us), (1.0, Some(1.778)));
        assert_eq!(count(2), 1, "[1.778, 3.162) µs");
        assert_eq!(count(5), 1, "[10, 17.78) µs");
        assert_eq!(count(28), 1, "just under 10 s");
        assert_eq!(count(29), 2, "10 s and up");
        assert_eq!(b[29].hi_us, None);
        assert_eq!(b.iter().map(|b| b.count).sum::<u64>(), 9);
    }
}
