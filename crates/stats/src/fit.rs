//! Least-squares lines with the intervals of their coefficients.

use serde::{Deserialize, Serialize};

use crate::Interval;

/// `y = slope·x + intercept` fitted by ordinary least squares.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LinearFit {
    pub slope: f64,
    pub intercept: f64,
    /// Coefficient of determination (1 for a perfect line; 0 when x
    /// explains nothing).
    pub r2: f64,
    pub n: usize,
    /// 95 % intervals (t with n − 2 degrees of freedom); `None` below
    /// three points, which leave no residual to estimate from.
    pub slope_ci95: Option<Interval>,
    pub intercept_ci95: Option<Interval>,
}

/// Below this R² a line explains too little of its points to be read as
/// a trend: the report marks it weak.
pub const WEAK_R2: f64 = 0.8;

/// Whether a line of latency against size has an intercept that is
/// below zero beyond doubt: the intercept's 95 % interval lies wholly
/// below 0 (`hi < 0`), or — without an interval (two points leave no
/// residual to estimate one from) — the intercept itself is below 0.
///
/// Why: the intercept is the line's latency at size 0, and no message
/// takes negative time. A line that needs a negative intercept to pass
/// its points says the points are not on one straight line down to zero
/// (one segment against several costs differently per byte) or that
/// there are too few of them; such a line must not be read as "time =
/// fixed cost + cost per byte". An interval that reaches 0 or above is
/// not marked: a true intercept of 0 or more fits the points. A
/// non-finite intercept is not judged (false). This is independent of
/// R² ([`WEAK_R2`]): a line can be both weak and marked.
pub fn intercept_below_zero(intercept: f64, intercept_ci95: Option<Interval>) -> bool {
    match intercept_ci95 {
        Some(ci) => ci.hi < 0.0,
        None => intercept < 0.0,
    }
}

impl LinearFit {
    /// `None` for fewer than two points or when every x is the same.
    pub fn of(points: &[(f64, f64)]) -> Option<Self> {
        let points: Vec<(f64, f64)> = points
            .iter()
            .copied()
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .collect();
        let n = points.len();
        if n < 2 {
            return None;
        }
        let nf = n as f64;
        let mx = points.iter().map(|p| p.0).sum::<f64>() / nf;
        let my = points.iter().map(|p| p.1).sum::<f64>() / nf;
        let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
        let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
        let syy: f64 = points.iter().map(|p| (p.1 - my).powi(2)).sum();
        if sxx == 0.0 {
            return None;
        }
        let slope = sxy / sxx;
        let intercept = my - slope * mx;
        let sse: f64 = points
            .iter()
            .map(|p| (p.1 - (slope * p.0 + intercept)).powi(2))
            .sum();
        let r2 = if syy == 0.0 {
            1.0
        } else {
            (1.0 - sse / syy).max(0.0)
        };
        let (slope_ci95, intercept_ci95) = match crate::t95(nf - 2.0) {
            Some(t) => {
                let s2 = sse / (nf - 2.0);
                let se_slope = (s2 / sxx).sqrt();
                let se_intercept = (s2 * (1.0 / nf + mx * mx / sxx)).sqrt();
                let around = |c: f64, se: f64| Interval {
                    lo: c - t * se,
                    hi: c + t * se,
                };
                (
                    Some(around(slope, se_slope)),
                    Some(around(intercept, se_intercept)),
                )
            }
            None => (None, None),
        };
        Some(Self {
            slope,
            intercept,
            r2,
            n,
            slope_ci95,
            intercept_ci95,
        })
    }

    pub fn eval(&self, x: f64) -> f64 {
        self.slope * x + self.intercept
    }

    /// R² below [`WEAK_R2`].
    pub fn is_weak(&self) -> bool {
        self.r2 < WEAK_R2
    }

    /// [`intercept_below_zero`] of this line: its intercept (the latency
    /// at size 0) is below zero beyond its 95 % interval, or below zero
    /// outright when there is no interval (two points).
    pub fn intercept_below_zero(&self) -> bool {
        intercept_below_zero(self.intercept, self.intercept_ci95)
    }

    /// The slope's half-width as a share of the slope.
    pub fn slope_relative_half_width(&self) -> Option<f64> {
        let ci = self.slope_ci95?;
        (self.slope != 0.0).then(|| ci.half_width() / self.slope.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_line_has_a_zero_width_interval() {
        let f = LinearFit::of(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0), (3.0, 7.0)]).unwrap();
        assert!((f.slope - 2.0).abs() < 1e-12 && (f.intercept - 1.0).abs() < 1e-12);
        assert!((f.r2 - 1.0).abs() < 1e-12);
        assert!(f.slope_ci95.unwrap().half_width() < 1e-9);
        assert!(!f.is_weak());
    }

    #[test]
    fn slope_interval_matches_a_hand_computation() {
        // x 1..5, y 2,4,5,4,5: slope 0.6, intercept 2.2, SSE 2.4,
        // s² 0.8, se(slope) = √(0.8/10) = 0.28284, t(3) = 3.18245.
        let f =
            LinearFit::of(&[(1.0, 2.0), (2.0, 4.0), (3.0, 5.0), (4.0, 4.0), (5.0, 5.0)]).unwrap();
        assert!((f.slope - 0.6).abs() < 1e-12 && (f.intercept - 2.2).abs() < 1e-12);
        assert!((f.r2 - 0.6).abs() < 1e-12);
        assert!(f.is_weak());
        let ci = f.slope_ci95.unwrap();
        assert!(
            (ci.half_width() - 0.90012).abs() < 1e-4,
            "{}",
            ci.half_width()
        );
    }

    #[test]
    fn two_points_have_no_interval_and_one_x_no_line() {
        let f = LinearFit::of(&[(0.0, 0.0), (1.0, 1.0)]).unwrap();
        assert_eq!(f.slope_ci95, None);
        assert_eq!(LinearFit::of(&[(1.0, 0.0), (1.0, 1.0)]), None);
    }

    #[test]
    fn an_intercept_interval_wholly_below_zero_is_marked() {
        // y = 10x − 50 with noise ±1: intercept ≈ −50, interval far below 0.
        let f =
            LinearFit::of(&[(10.0, 51.0), (20.0, 149.0), (30.0, 251.0), (40.0, 349.0)]).unwrap();
        let ci = f.intercept_ci95.unwrap();
        assert!(ci.hi < 0.0, "{ci:?}");
        assert!(f.intercept_below_zero());
        assert!(!f.is_weak(), "a good R² does not clear the mark");
    }

    #[test]
    fn an_intercept_interval_spanning_zero_is_not_marked() {
        // Intercept −1 but noise wide enough that the interval reaches
        // above 0: a true intercept of 0 fits; the value alone would
        // have been marked.
        let g = LinearFit::of(&[(1.0, 0.0), (2.0, 4.0), (3.0, 2.0), (4.0, 6.0)]).unwrap();
        assert!(g.intercept < 0.0, "{g:?}");
        let ci = g.intercept_ci95.unwrap();
        assert!(ci.hi > 0.0, "{ci:?}");
        assert!(!g.intercept_below_zero());
    }

    #[test]
    fn two_points_are_judged_by_the_intercept_itself() {
        // The quick run's receive line: 82.7 µs/KB · x − 74.9 µs.
        let below = LinearFit::of(&[(1.0, 7.8), (2.0, 90.5)]).unwrap();
        assert!(below.intercept < 0.0 && below.intercept_ci95.is_none());
        assert!(below.intercept_below_zero());
        let above = LinearFit::of(&[(1.0, 30.0), (2.0, 40.0)]).unwrap();
        assert!(!above.intercept_below_zero());
        let zero = LinearFit::of(&[(1.0, 1.0), (2.0, 2.0)]).unwrap();
        assert!(!zero.intercept_below_zero(), "0 is not below 0");
    }

    #[test]
    fn the_judgement_reads_the_interval_before_the_value() {
        let ci = |lo, hi| Some(Interval { lo, hi });
        assert!(intercept_below_zero(-5.0, ci(-9.0, -1.0)));
        assert!(!intercept_below_zero(-5.0, ci(-9.0, 0.0)));
        assert!(!intercept_below_zero(5.0, ci(1.0, 9.0)));
        assert!(intercept_below_zero(-5.0, None));
        assert!(!intercept_below_zero(f64::NAN, None));
    }
}
