//! Two figures compared: Welch's t-test on their means, the difference
//! and the ratio with 95 % intervals, and the smallest effect a
//! measurement could have resolved.

use serde::{Deserialize, Serialize};

use crate::{Estimate, Interval};

/// `b` against `a` (e.g. IPv6 against IPv4, or the new run against the
/// old one), by Welch's unequal-variances t-test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    /// `b.mean − a.mean` and its 95 % interval.
    pub diff: f64,
    pub diff_ci95: Interval,
    /// `b.mean / a.mean` and its 95 % interval (delta method: the
    /// relative errors of the two means added in quadrature).
    pub ratio: f64,
    pub ratio_ci95: Interval,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value of "the means are equal".
    pub p_value: f64,
    /// `p_value < 0.05`: the difference is significant at 95 %.
    pub significant: bool,
}

impl Difference {
    /// `None` unless both have at least two values (a spread to test
    /// against) and `a`'s mean is not zero.
    pub fn welch(a: &Estimate, b: &Estimate) -> Option<Self> {
        let (sa, sb) = (a.stdev?, b.stdev?);
        let (na, nb) = (a.n as f64, b.n as f64);
        let (va, vb) = (sa * sa / na, sb * sb / nb);
        let diff = b.mean - a.mean;
        let se = (va + vb).sqrt();
        if a.mean == 0.0 || !se.is_finite() {
            return None;
        }
        let ratio = b.mean / a.mean;
        if se == 0.0 {
            // Both without spread: equal means are the same figure; any
            // other difference is exact.
            let exact = Interval { lo: diff, hi: diff };
            return Some(Self {
                diff,
                diff_ci95: exact,
                ratio,
                ratio_ci95: Interval {
                    lo: ratio,
                    hi: ratio,
                },
                df: na + nb - 2.0,
                p_value: if diff == 0.0 { 1.0 } else { 0.0 },
                significant: diff != 0.0,
            });
        }
        let df = (va + vb).powi(2) / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
        let t = crate::t95(df)?;
        let p_value = crate::t_p_value(diff / se, df)?;
        let rel = |v: f64, m: f64| if m == 0.0 { 0.0 } else { v / (m * m) };
        let ratio_half = t * ratio.abs() * (rel(va, a.mean) + rel(vb, b.mean)).sqrt();
        Some(Self {
            diff,
            diff_ci95: Interval {
                lo: diff - t * se,
                hi: diff + t * se,
            },
            ratio,
            ratio_ci95: Interval {
                lo: ratio - ratio_half,
                hi: ratio + ratio_half,
            },
            df,
            p_value,
            significant: p_value < 1.0 - crate::CONFIDENCE,
        })
    }

    /// The relative difference `b/a − 1` and its interval, e.g. to set
    /// beside a predicted +1.4 %.
    pub fn relative(&self) -> (f64, Interval) {
        (
            self.ratio - 1.0,
            Interval {
                lo: self.ratio_ci95.lo - 1.0,
                hi: self.ratio_ci95.hi - 1.0,
            },
        )
    }
}

/// The smallest true difference between two means that two measurements
/// of `n` values each with standard deviation `stdev` detect with 80 %
/// power at the 5 % level: (t₀.₉₇₅ + t₀.₈₀)·s·√(2/n). A step or an effect
/// below it can be there unseen. `None` for n < 2.
pub fn detectable_difference(stdev: f64, n: usize) -> Option<f64> {
    if n < 2 {
        return None;
    }
    let df = 2.0 * (n as f64 - 1.0);
    let t_alpha = crate::t95(df)?;
    let t_power = crate::t_quantile(df, 0.80)?;
    Some((t_alpha + t_power) * stdev * (2.0 / n as f64).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn welch_matches_a_hand_computation() {
        // Equal variances (2.5) and n (5): se = 1, t = -3, df = 8,
        // p = 0.01707, diff CI -3 ± 2.3060.
        let a = Estimate::of(&[5.0, 6.0, 7.0, 8.0, 9.0]).unwrap();
        let b = Estimate::of(&[2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        let d = Difference::welch(&a, &b).unwrap();
        assert_eq!(d.diff, -3.0);
        assert!((d.df - 8.0).abs() < 1e-9);
        assert!((d.p_value - 0.01707).abs() < 1e-4, "{}", d.p_value);
        assert!(d.significant);
        assert!((d.diff_ci95.lo - -5.3060).abs() < 1e-3);
        assert!((d.diff_ci95.hi - -0.6940).abs() < 1e-3);
        assert!((d.ratio - 4.0 / 7.0).abs() < 1e-12);
        assert!(d.ratio_ci95.contains(d.ratio) && d.ratio_ci95.hi < 1.0);
        // One unit less apart: t = -2, p = 0.0805, not significant.
        let c = Estimate::of(&[3.0, 4.0, 5.0, 6.0, 7.0]).unwrap();
        let d = Difference::welch(&a, &c).unwrap();
        assert!((d.p_value - 0.08052).abs() < 1e-4, "{}", d.p_value);
        assert!(!d.significant && d.diff_ci95.contains(0.0));
    }

    #[test]
    fn the_same_sample_is_not_significantly_different() {
        let a = Estimate::of(&[10.0, 11.0, 9.0, 10.5, 9.5]).unwrap();
        let d = Difference::welch(&a, &a).unwrap();
        assert_eq!(d.diff, 0.0);
        assert!(!d.significant);
        assert!((d.p_value - 1.0).abs() < 1e-12);
        assert!(d.diff_ci95.contains(0.0) && d.ratio_ci95.contains(1.0));
    }

    #[test]
    fn single_values_cannot_be_tested() {
        let a = Estimate::of(&[1.0]).unwrap();
        let b = Estimate::of(&[1.0, 2.0]).unwrap();
        assert_eq!(Difference::welch(&a, &b), None);
    }

    #[test]
    fn detectable_difference_shrinks_with_the_square_root_of_n() {
        let d10 = detectable_difference(1.0, 10).unwrap();
        let d1000 = detectable_difference(1.0, 1000).unwrap();
        // (1.96 + 0.84)·√(2/1000) = 0.1253 for large n.
        assert!((d1000 - 0.1253).abs() < 1e-3, "{d1000}");
        assert!(d10 > 9.0 * d1000 && d10 < 11.0 * d1000);
        assert_eq!(detectable_difference(1.0, 1), None);
    }
}
