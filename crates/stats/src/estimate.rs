//! One figure over repetitions: mean, median, spread and their 95 %
//! confidence intervals.

use serde::{Deserialize, Serialize};

/// A closed interval `[lo, hi]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
}

impl Interval {
    pub fn contains(&self, x: f64) -> bool {
        self.lo <= x && x <= self.hi
    }

    pub fn half_width(&self) -> f64 {
        (self.hi - self.lo) / 2.0
    }

    pub fn overlaps(&self, other: &Interval) -> bool {
        self.lo <= other.hi && other.lo <= self.hi
    }

    /// Every bound multiplied by `k` (a positive unit change).
    pub fn scaled(&self, k: f64) -> Interval {
        Interval {
            lo: self.lo * k,
            hi: self.hi * k,
        }
    }
}

/// A figure measured `n` times (the default: none yet, n = 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    /// Sample standard deviation (n − 1 in the denominator); `None` for
    /// one value.
    pub stdev: Option<f64>,
    /// 95 % Student-t interval of the mean; `None` for fewer than two
    /// values.
    pub ci95: Option<Interval>,
    /// 95 % distribution-free interval of the median (order statistics);
    /// `None` below six values, too few for 95 %.
    pub median_ci95: Option<Interval>,
    pub min: f64,
    pub max: f64,
}

impl Estimate {
    /// `None` for no values; non-finite values are left out (a figure that
    /// could not be computed is not a measurement).
    pub fn of(values: &[f64]) -> Option<Self> {
        let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        if sorted.is_empty() {
            return None;
        }
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let mean = sorted.iter().sum::<f64>() / n as f64;
        // Two passes: deviations from the mean do not cancel the way
        // sum(x²) − n·mean² does.
        let stdev = (n > 1).then(|| {
            let squares: f64 = sorted.iter().map(|v| (v - mean) * (v - mean)).sum();
            (squares / (n - 1) as f64).sqrt()
        });
        let ci95 = stdev.and_then(|s| {
            let t = crate::t95((n - 1) as f64)?;
            let half = t * s / (n as f64).sqrt();
            Some(Interval {
                lo: mean - half,
                hi: mean + half,
            })
        });
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        Some(Self {
            n,
            mean,
            median,
            stdev,
            ci95,
            median_ci95: median_interval(&sorted),
            min: sorted[0],
            max: sorted[n - 1],
        })
    }

    /// Half the width of the mean's interval.
    pub fn half_width(&self) -> Option<f64> {
        self.ci95.map(|ci| ci.half_width())
    }

    /// The mean's half-width as a share of the mean's magnitude (0.02 is
    /// ±2 %); `None` without an interval or for a zero mean.
    pub fn relative_half_width(&self) -> Option<f64> {
        let half = self.half_width()?;
        (self.mean != 0.0).then(|| half / self.mean.abs())
    }

    /// Coefficient of variation: stdev / |mean|.
    pub fn cv(&self) -> Option<f64> {
        let s = self.stdev?;
        (self.mean != 0.0).then(|| s / self.mean.abs())
    }

    /// Every figure multiplied by `k` (a positive unit change).
    pub fn scaled(&self, k: f64) -> Estimate {
        Estimate {
            n: self.n,
            mean: self.mean * k,
            median: self.median * k,
            stdev: self.stdev.map(|s| s * k.abs()),
            ci95: self.ci95.map(|c| c.scaled(k)),
            median_ci95: self.median_ci95.map(|c| c.scaled(k)),
            min: self.min * k,
            max: self.max * k,
        }
    }
}

/// How to state a figure that cannot be negative (a latency, a rate, a
/// size, a CPU time), decided once for every table that prints one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PositiveReading {
    /// The mean and its t interval (none from one value).
    Mean { mean: f64, ci: Option<Interval> },
    /// The mean's interval reaches below zero, which the figure cannot:
    /// a few long values skew it, so the median and its
    /// distribution-free interval stand instead; the mean is kept for
    /// the reader.
    Median {
        median: f64,
        ci: Interval,
        mean: f64,
    },
    /// The mean's interval reaches below zero and there are too few
    /// values for a median interval: no result, only a mark.
    TooNoisy { mean: f64, ci: Interval },
}

impl Estimate {
    /// The reading of a figure that cannot be negative: its mean, or its
    /// median where the mean's t interval would reach below zero (a TCP
    /// flow beside UDP read 526.02 ± 580.23 Mbit/s), or a mark where
    /// neither resolves it.
    pub fn positive_reading(&self) -> PositiveReading {
        match (self.ci95, self.median_ci95) {
            (Some(ci), Some(median_ci)) if reaches_below_zero(self.mean, ci) => {
                PositiveReading::Median {
                    median: self.median,
                    ci: median_ci,
                    mean: self.mean,
                }
            }
            (Some(ci), None) if reaches_below_zero(self.mean, ci) => PositiveReading::TooNoisy {
                mean: self.mean,
                ci,
            },
            (ci, _) => PositiveReading::Mean {
                mean: self.mean,
                ci,
            },
        }
    }
}

impl PositiveReading {
    /// The reading's name, for a table column: `mean`, `median` or
    /// `too_noisy`.
    pub fn name(&self) -> &'static str {
        match self {
            PositiveReading::Mean { .. } => "mean",
            PositiveReading::Median { .. } => "median",
            PositiveReading::TooNoisy { .. } => "too_noisy",
        }
    }
}

impl Estimate {
    /// The mean's 95 % interval of a figure that cannot be negative, or
    /// `None` where it reaches below zero: such an interval claims what
    /// the figure cannot be, so a table leaves it out and names the
    /// reading that stands instead ([`Estimate::positive_reading`]).
    pub fn positive_ci95(&self) -> Option<Interval> {
        self.ci95.filter(|ci| !reaches_below_zero(self.mean, *ci))
    }
}

/// A positive value whose interval reaches below zero: the interval
/// claims something the figure cannot be.
pub fn reaches_below_zero(value: f64, ci: Interval) -> bool {
    value > 0.0 && ci.lo < 0.0
}

/// The 95 % interval of the median of `sorted` (ascending, finite):
/// `[x(j), x(n+1−j)]` with the largest rank j whose binomial tail
/// P(B ≤ j − 1), B ~ Bin(n, ½), is at most 2.5 % — the interval covers the
/// median with at least 95 % whatever the distribution.
fn median_interval(sorted: &[f64]) -> Option<Interval> {
    use statrs::distribution::{Binomial, DiscreteCDF};
    let n = sorted.len();
    let binomial = Binomial::new(0.5, n as u64).ok()?;
    let tail = |j: usize| binomial.cdf(j as u64 - 1);
    // Start near the normal approximation and walk to the exact rank.
    let guess = (n as f64 / 2.0 - 0.98 * (n as f64).sqrt()).floor().max(1.0) as usize;
    let mut j = guess.min(n / 2).max(1);
    while j > 1 && tail(j) > 0.025 {
        j -= 1;
    }
    if tail(j) > 0.025 {
        return None;
    }
    while j < n / 2 && tail(j + 1) <= 0.025 {
        j += 1;
    }
    Some(Interval {
        lo: sorted[j - 1],
        hi: sorted[n - j],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_interval_matches_a_hand_computation() {
        // mean 5, s = sqrt(10/4) = 1.5811, t(4) = 2.7764: half 1.9632.
        let e = Estimate::of(&[3.0, 4.0, 5.0, 6.0, 7.0]).unwrap();
        assert_eq!(e.n, 5);
        assert_eq!(e.mean, 5.0);
        assert_eq!(e.median, 5.0);
        assert!((e.stdev.unwrap() - 1.58114).abs() < 1e-4);
        let ci = e.ci95.unwrap();
        assert!((ci.lo - 3.0368).abs() < 1e-3 && (ci.hi - 6.9632).abs() < 1e-3);
        assert!((e.relative_half_width().unwrap() - 0.39264).abs() < 1e-4);
        // Five values are too few for a 95 % median interval.
        assert_eq!(e.median_ci95, None);
    }

    #[test]
    fn a_positive_interval_never_reaches_below_zero() {
        // Two values, t(1) = 12.706: 10.4 ± 53.4 reaches far below zero.
        let wide = Estimate::of(&[2.0, 18.8]).unwrap();
        assert!(wide.ci95.unwrap().lo < 0.0);
        assert_eq!(wide.positive_ci95(), None);
        assert_eq!(wide.positive_reading().name(), "too_noisy");
        let tight = Estimate::of(&[10.0, 10.5, 11.0]).unwrap();
        assert_eq!(tight.positive_ci95(), tight.ci95);
        assert_eq!(tight.positive_reading().name(), "mean");
    }

    #[test]
    fn one_value_has_no_interval_and_none_is_no_estimate() {
        let e = Estimate::of(&[2.5]).unwrap();
        assert_eq!((e.stdev, e.ci95, e.median), (None, None, 2.5));
        assert_eq!(Estimate::of(&[]), None);
        assert_eq!(Estimate::of(&[f64::NAN]), None);
    }

    #[test]
    fn median_interval_ranks_are_the_binomial_ones() {
        // n = 6: [x1, x6] (coverage 96.9 %); n = 20: [x6, x15] (95.9 %);
        // n = 100: [x40, x61] (96.5 %).
        let v = |n: usize| (1..=n).map(|i| i as f64).collect::<Vec<_>>();
        let ci = |n: usize| Estimate::of(&v(n)).unwrap().median_ci95.unwrap();
        assert_eq!(ci(6), Interval { lo: 1.0, hi: 6.0 });
        assert_eq!(ci(20), Interval { lo: 6.0, hi: 15.0 });
        assert_eq!(ci(100), Interval { lo: 40.0, hi: 61.0 });
        let big = ci(10_001);
        assert!(big.lo < 5001.0 && big.hi > 5001.0 && big.hi - big.lo < 220.0);
    }

    #[test]
    fn positive_reading_falls_back_to_the_median_only_when_the_mean_cannot_stand() {
        // Nineteen quick values and one long one: mean 5.95, its interval
        // reaches below zero; the median's interval does not.
        let mut skewed = vec![1.0; 19];
        skewed.push(100.0);
        let e = Estimate::of(&skewed).unwrap();
        assert!(e.ci95.unwrap().lo < 0.0);
        assert_eq!(
            e.positive_reading(),
            PositiveReading::Median {
                median: 1.0,
                ci: Interval { lo: 1.0, hi: 1.0 },
                mean: e.mean
            }
        );
        // Three values: no median interval, so only a mark.
        let few = Estimate::of(&[1.0, 1.0, 40.0]).unwrap();
        assert!(matches!(
            few.positive_reading(),
            PositiveReading::TooNoisy { .. }
        ));
        // A steady figure keeps its mean.
        let steady = Estimate::of(&[3.0, 4.0, 5.0, 6.0, 7.0]).unwrap();
        assert_eq!(
            steady.positive_reading(),
            PositiveReading::Mean {
                mean: 5.0,
                ci: steady.ci95
            }
        );
    }

    #[test]
    fn even_median_is_the_middle_pair_mean() {
        assert_eq!(Estimate::of(&[4.0, 1.0, 3.0, 2.0]).unwrap().median, 2.5);
    }

    proptest::proptest! {
        #[test]
        fn intervals_hold_their_centre(values in proptest::collection::vec(-1e9f64..1e9, 1..200)) {
            let e = Estimate::of(&values).unwrap();
            proptest::prop_assert!(e.min <= e.median && e.median <= e.max);
            if let Some(ci) = e.ci95 {
                proptest::prop_assert!(ci.lo <= e.mean + 1e-6 && e.mean <= ci.hi + 1e-6);
            }
            if let Some(ci) = e.median_ci95 {
                proptest::prop_assert!(ci.lo <= e.median && e.median <= ci.hi);
            }
        }
    }
}
