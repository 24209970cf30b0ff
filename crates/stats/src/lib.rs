//! Statistics that carry stackscope's claims (issue 16): every figure is an
//! [`Estimate`] with its sample size and 95 % confidence interval; two
//! figures are compared with Welch's t-test ([`Difference`]); trend lines
//! carry the interval of their slope ([`LinearFit`]); and a measurement
//! repeats until its interval is narrow enough or a cap is reached
//! ([`Target`]).
//!
//! Intervals are Student-t intervals of the mean (the values need not be
//! normal for large n; for small n they are the usual approximation, and
//! the report says n beside every interval). The median's interval is
//! distribution-free, from order statistics.

mod compare;
mod estimate;
mod fit;
mod repeat;

pub use compare::{detectable_difference, Difference};
pub use estimate::{reaches_below_zero, Estimate, Interval, PositiveReading};
pub use fit::{intercept_below_zero, LinearFit, WEAK_R2};
pub use repeat::{Target, Verdict};

/// The confidence level of every interval and the significance level of
/// every test: 95 % two-sided.
pub const CONFIDENCE: f64 = 0.95;

/// The two-sided 95 % quantile of Student's t with `df` degrees of freedom
/// (`df` may be fractional, as Welch's is). `None` for `df` not above 0.
pub fn t95(df: f64) -> Option<f64> {
    t_quantile(df, 1.0 - (1.0 - CONFIDENCE) / 2.0)
}

/// The `p` quantile of Student's t with `df` degrees of freedom.
pub(crate) fn t_quantile(df: f64, p: f64) -> Option<f64> {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    if !(df.is_finite() && df > 0.0) {
        return None;
    }
    StudentsT::new(0.0, 1.0, df).ok().map(|t| t.inverse_cdf(p))
}

/// The two-sided p-value of a t statistic with `df` degrees of freedom.
pub(crate) fn t_p_value(t: f64, df: f64) -> Option<f64> {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    if df.is_nan() || df <= 0.0 || !t.is_finite() {
        return None;
    }
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    Some((2.0 * (1.0 - dist.cdf(t.abs()))).clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_the_tables() {
        // Student's t tables, two-sided 95 %.
        for (df, t) in [(1.0, 12.706), (2.0, 4.303), (5.0, 2.571), (30.0, 2.042)] {
            assert!((t95(df).unwrap() - t).abs() < 1e-3, "df {df}");
        }
        assert!((t95(1e6).unwrap() - 1.960).abs() < 1e-3);
        assert_eq!(t95(0.0), None);
        assert_eq!(t95(f64::NAN), None);
    }

    #[test]
    fn p_values_are_two_sided() {
        assert!((t_p_value(2.571, 5.0).unwrap() - 0.05).abs() < 1e-3);
        assert!((t_p_value(-2.571, 5.0).unwrap() - 0.05).abs() < 1e-3);
        assert!((t_p_value(0.0, 5.0).unwrap() - 1.0).abs() < 1e-12);
    }
}
