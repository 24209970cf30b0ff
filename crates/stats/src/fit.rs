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
}
