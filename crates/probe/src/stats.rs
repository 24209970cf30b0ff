//! Order statistics shared by the calibrations.

/// Order statistics of a sample; all zero for an empty one.
#[derive(Default)]
pub(crate) struct Stats {
    pub median: f64,
    pub mean: f64,
    pub min: f64,
    pub p99: f64,
}

impl Stats {
    pub fn of(values: &[f64]) -> Stats {
        if values.is_empty() {
            return Stats::default();
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        // Nearest rank: the smallest value with at least 99 % at or below.
        let p99 = v[(n * 99).div_ceil(100).clamp(1, n) - 1];
        Stats {
            median,
            mean: v.iter().sum::<f64>() / n as f64,
            min: v[0],
            p99,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_of_a_small_sample() {
        let s = Stats::of(&[5.0, 1.0, 3.0, 2.0, 4.0]);
        assert_eq!((s.median, s.mean, s.min, s.p99), (3.0, 3.0, 1.0, 5.0));
        let s = Stats::of(&(1..=100).map(f64::from).collect::<Vec<_>>());
        assert_eq!(s.p99, 99.0);
        assert_eq!(s.median, 50.5);
        assert_eq!(Stats::of(&[]).median, 0.0);
    }
}
