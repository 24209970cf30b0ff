//! Least-squares trend lines and steps at multiples of the path MTU.
//!
//! The IPv6 study (seed `000`, section 5) summarises each latency sweep as a
//! linear trend line `y = a*x + b` and each throughput sweep as a power
//! law `y = a*x^b`. Each comes with R². It also notes that stop latency rises
//! in steps whenever the payload needs one more packet. Here the same
//! figures come from the data, so a run can be compared with the study's
//! Table 5a and with other runs; each fit also carries the 95 % intervals
//! of its parameters and is marked weak below R² 0.8 (a line also when its
//! intercept, the latency at size 0, is below zero), and the step test
//! says the smallest step it could have found.
//!
//! Every function accepts any input without panicking. Non-finite points are
//! ignored. Inputs that cannot define a fit give `None`, or an empty
//! [`StepReport`], rather than a misleading number.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use stats::Interval;

/// Most boundaries [`steps_at_multiples`] reports. This bounds the output
/// (and the report's table) when the period is tiny compared with the
/// payload range. The lowest multiples are kept.
pub const MAX_BOUNDARIES: usize = 10_000;

/// Residual spread below this fraction of the data's magnitude is treated
/// as floating-point rounding, not noise. Without this floor, exact data
/// would divide rounding-level rises by rounding-level spread and give
/// arbitrary scores.
const NOISE_FLOOR: f64 = 1e-9;

/// Which family of curve a [`Fit`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FitKind {
    /// `y = a*x + b`: what the study fits to latency against payload size.
    Linear,
    /// `y = a*x^b`: what the study fits to throughput against payload size.
    Power,
}

/// A fitted trend line: `y = slope * x + intercept` (Linear) or
/// `y = coefficient * x^exponent` (Power), with the 95 % intervals of its
/// two parameters and whether it explains too little to be read as a
/// trend.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Fit {
    /// Which curve this is. It decides how `a` and `b` are read.
    pub kind: FitKind,
    /// Linear: the slope. Power: the coefficient `a` of `a*x^b`.
    pub a: f64,
    /// Linear: the intercept. Power: the exponent `b`.
    pub b: f64,
    /// Coefficient of determination on the scale the least squares ran on.
    ///
    /// Linear: on `y`. Power: on `ln y` against `ln a + b ln x`. That is the
    /// quantity the fit minimised, so it always lies in `[0, 1]`. It is also
    /// what spreadsheet power trend lines report, which is how the study's
    /// `y = 2258.1x^0.1475` was made, so the numbers can be compared. (An R²
    /// on `y` itself can be negative for a log-space fit.) When every `y` is
    /// equal there is no variance to explain. R² is then 1 if the fit passes
    /// through every point, which the fitting functions ensure, and 0
    /// otherwise. Always finite.
    pub r2: f64,
    /// Points used: those with finite `x` and `y`. Power fits use only
    /// those with `x > 0` and `y > 0`.
    pub n: usize,
    /// 95 % interval of the slope of the line the least squares fitted:
    /// Linear: of `a`. Power: of the exponent `b` (the slope of `ln y`
    /// against `ln x`). `None` below three points (no residual to
    /// estimate the noise from).
    pub slope_ci95: Option<Interval>,
    /// 95 % interval of the other parameter: Linear: of the intercept `b`.
    /// Power: of the coefficient `a`, the log-space intercept's interval
    /// transformed back (`exp`), so it is not symmetric around `a`.
    pub intercept_ci95: Option<Interval>,
    /// R² below [`stats::WEAK_R2`] (0.8): the line explains too little of
    /// its points to be read as a trend; the report marks it and does not
    /// draw it.
    pub weak: bool,
    /// Linear only: the intercept — the latency at size 0 — is below zero
    /// beyond doubt ([`stats::intercept_below_zero`]: its 95 % interval
    /// lies wholly below 0, or, with two points and so no interval, the
    /// intercept itself is below 0). No message takes negative time, so
    /// such a line is not "fixed cost + cost per byte": the points are not
    /// on one line down to zero (one segment against several) or too few.
    /// The report marks it and does not draw it. Independent of `weak`.
    /// Always false for a power law, whose `a` is a coefficient, not an
    /// intercept (and is positive by construction).
    pub intercept_below_zero: bool,
}

impl Fit {
    /// The curve's value at `x`. A power fit at `x <= 0` gives NaN or
    /// infinity, as `powf` does: the curve is defined only for `x > 0`.
    pub fn eval(&self, x: f64) -> f64 {
        match self.kind {
            FitKind::Linear => self.a * x + self.b,
            FitKind::Power => self.a * x.powf(self.b),
        }
    }

    /// The slope the least squares fitted (Linear: `a`; Power: the
    /// exponent `b`), the one [`Fit::slope_ci95`] is the interval of.
    pub fn slope(&self) -> f64 {
        match self.kind {
            FitKind::Linear => self.a,
            FitKind::Power => self.b,
        }
    }

    /// The slope's 95 % half-width as a share of the slope's magnitude
    /// (0.1 is ±10 %); `None` without an interval or for a zero slope.
    pub fn slope_relative_half_width(&self) -> Option<f64> {
        let ci = self.slope_ci95?;
        let slope = self.slope();
        (slope != 0.0).then(|| ci.half_width() / slope.abs())
    }

    /// Whether the report draws this line: not when it is weak, nor when
    /// its intercept is below zero ([`Fit::intercept_below_zero`]).
    pub fn drawn(&self) -> bool {
        !self.weak && !self.intercept_below_zero
    }

    /// The mark of a linear fit whose intercept is below zero, e.g. `not
    /// linear near zero: intercept below 0 (−74.913 µs)`, with the
    /// intercept's 95 % interval when there is one; `None` when the fit is
    /// not so marked. `y_unit` may be empty.
    pub fn intercept_mark(&self, y_unit: &str) -> Option<String> {
        if !self.intercept_below_zero {
            return None;
        }
        let unit = if y_unit.is_empty() {
            String::new()
        } else {
            format!(" {y_unit}")
        };
        let minus = |v: f64| sig5(v).replace('-', "−");
        let value = match self.intercept_ci95 {
            Some(ci) => format!(
                "{}{unit}, 95 % CI {} … {}",
                minus(self.b),
                minus(ci.lo),
                minus(ci.hi)
            ),
            None => format!("{}{unit}, 2 points: no interval", minus(self.b)),
        };
        Some(format!("not linear near zero: intercept below 0 ({value})"))
    }

    /// The curve to draw over `from..=to` (in the fit's `x` units),
    /// sampled at `segments + 1` evenly spaced `x`, where it is at or
    /// above zero: a latency or a throughput is never negative, so where
    /// the line falls below zero nothing is drawn, and where it crosses
    /// zero the crossing itself is the curve's end. Non-finite values
    /// (a power law at `x <= 0`) are left out too.
    pub fn curve(&self, from: f64, to: f64, segments: u32) -> Curve {
        let mut curve = Curve {
            points: Vec::new(),
            clipped: false,
        };
        if !(from.is_finite() && to.is_finite()) || segments == 0 {
            return curve;
        }
        let xs: Vec<f64> = (0..=segments)
            .map(|i| from + (to - from) * f64::from(i) / f64::from(segments))
            .collect();
        let mut previous: Option<(f64, f64)> = None;
        for x in xs {
            let y = self.eval(x);
            if !y.is_finite() {
                curve.clipped = true;
                previous = None;
                continue;
            }
            if let Some((px, py)) = previous {
                // The line crosses zero between the two samples: draw it
                // to (or from) the crossing, found on the straight line
                // between them (exact for a linear fit).
                if (py < 0.0) != (y < 0.0) {
                    let cx = px + (x - px) * (0.0 - py) / (y - py);
                    if cx.is_finite() {
                        curve.points.push((cx, 0.0));
                    }
                }
            }
            if y >= 0.0 {
                curve.points.push((x, y));
            } else {
                curve.clipped = true;
            }
            previous = Some((x, y));
        }
        curve
    }

    /// The trend line as the study writes it, with five significant
    /// digits. Examples: `y = 192.57x + 246.98 (x in thousands of bytes, y in
    /// µs)` and `y = 2258.1x^0.1475`. The units say what `x` and `y` count,
    /// as the remark under Table 5a does. An empty unit is left out.
    pub fn formula(&self, x_unit: &str, y_unit: &str) -> String {
        let body = match self.kind {
            FitKind::Linear => {
                let (sign, magnitude) = if self.b < 0.0 {
                    ('-', -self.b)
                } else {
                    ('+', self.b)
                };
                format!("y = {}x {sign} {}", sig5(self.a), sig5(magnitude))
            }
            FitKind::Power => format!("y = {}x^{}", sig5(self.a), sig5(self.b)),
        };
        let units: Vec<String> = [("x", x_unit), ("y", y_unit)]
            .iter()
            .filter(|(_, unit)| !unit.is_empty())
            .map(|(axis, unit)| format!("{axis} in {unit}"))
            .collect();
        if units.is_empty() {
            body
        } else {
            format!("{body} ({})", units.join(", "))
        }
    }
}

/// A fit's curve as drawn: the points at or above zero, and whether any
/// part of the sampled range was left out (below zero or undefined).
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    pub points: Vec<(f64, f64)>,
    pub clipped: bool,
}

/// Least-squares line `y = a*x + b` through the finite points, with the
/// 95 % intervals of slope and intercept ([`stats::LinearFit`]).
///
/// `None` when there are fewer than two finite points, or when all their
/// `x` are equal (the slope is undefined). Also `None` when the slope or
/// intercept is too large for an `f64`. Values are scaled by powers of two
/// before summing, so huge or tiny magnitudes do not overflow. This scaling
/// is exact, so exact data is recovered. When every `y` is equal the fit is
/// exactly `y = 0x + y`, with R² = 1 and zero-width intervals.
pub fn linear(points: &[(f64, f64)]) -> Option<Fit> {
    let (xs, ys): (Vec<f64>, Vec<f64>) = points
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .unzip();
    let ex = magnitude_exponent(&xs);
    let ey = magnitude_exponent(&ys);
    let sx: Vec<f64> = xs.iter().map(|&x| ldexp(x, -ex)).collect();
    let sy: Vec<f64> = ys.iter().map(|&y| ldexp(y, -ey)).collect();
    let fit = least_squares(&sx, &sy)?;
    // Undo the scaling: exact, and the intervals scale as their centres.
    let slope_scale = |v: f64| ldexp(v, ey - ex);
    let intercept_scale = |v: f64| ldexp(v, ey);
    let a = slope_scale(fit.slope);
    let b = intercept_scale(fit.intercept);
    let interval = |ci: Option<Interval>, scale: &dyn Fn(f64) -> f64| {
        ci.map(|c| Interval {
            lo: scale(c.lo),
            hi: scale(c.hi),
        })
        .filter(|c| c.lo.is_finite() && c.hi.is_finite())
    };
    (a.is_finite() && b.is_finite()).then(|| Fit {
        kind: FitKind::Linear,
        a,
        b,
        r2: fit.r2,
        n: xs.len(),
        slope_ci95: interval(fit.slope_ci95, &slope_scale),
        intercept_ci95: interval(fit.intercept_ci95, &intercept_scale),
        weak: fit.r2 < stats::WEAK_R2,
        intercept_below_zero: stats::intercept_below_zero(
            b,
            interval(fit.intercept_ci95, &intercept_scale),
        ),
    })
}

/// Least-squares power law `y = a*x^b`, fitted as the line
/// `ln y = ln a + b ln x`. This is how spreadsheets (and so the study)
/// fit power trend lines. The exponent's interval is the log-space
/// slope's; the coefficient's is the log-space intercept's, through `exp`.
///
/// Only finite points with `x > 0` and `y > 0` are used, because the
/// logarithm needs them. `None` when fewer than two remain, when their
/// `ln x` are all equal, or when `a` would overflow or underflow an `f64`.
/// When every `y` is equal the fit is exactly `y = y*x^0`, with R² = 1.
pub fn power(points: &[(f64, f64)]) -> Option<Fit> {
    let (xs, ys): (Vec<f64>, Vec<f64>) = points
        .iter()
        .copied()
        .filter(|&(x, y)| x.is_finite() && y.is_finite() && x > 0.0 && y > 0.0)
        .unzip();
    let lx: Vec<f64> = xs.iter().map(|x| x.ln()).collect();
    let ly: Vec<f64> = ys.iter().map(|y| y.ln()).collect();
    let fit = least_squares(&lx, &ly)?;
    // exp(ln y) need not give back y exactly. Constant data should give
    // back its value.
    let constant = ys.first().copied().filter(|_| all_equal(&ys));
    let a = constant.unwrap_or_else(|| fit.intercept.exp());
    let b = fit.slope;
    let a_ci95 = match constant {
        Some(y) => Some(Interval { lo: y, hi: y }),
        None => fit.intercept_ci95.map(|c| Interval {
            lo: c.lo.exp(),
            hi: c.hi.exp(),
        }),
    }
    .filter(|c| c.lo.is_finite() && c.hi.is_finite());
    (a.is_finite() && a > 0.0 && b.is_finite()).then_some(Fit {
        kind: FitKind::Power,
        a,
        b,
        r2: fit.r2,
        n: xs.len(),
        slope_ci95: fit.slope_ci95,
        intercept_ci95: a_ci95,
        weak: fit.r2 < stats::WEAK_R2,
        intercept_below_zero: false,
    })
}

/// [`stats::LinearFit`] on already finite, reasonably scaled values, with
/// the two exact cases made exact: every `x` equal is no line, every `y`
/// equal is the flat line through them (R² 1, zero-width intervals).
fn least_squares(xs: &[f64], ys: &[f64]) -> Option<stats::LinearFit> {
    // Checked on the values themselves: a rounded mean of equal values can
    // differ from them and fake a tiny variance.
    if xs.len() < 2 || all_equal(xs) {
        return None;
    }
    if all_equal(ys) {
        let exact = |v: f64| Some(Interval { lo: v, hi: v });
        let with_interval = xs.len() > 2;
        return Some(stats::LinearFit {
            slope: 0.0,
            intercept: ys[0],
            r2: 1.0,
            n: xs.len(),
            slope_ci95: exact(0.0).filter(|_| with_interval),
            intercept_ci95: exact(ys[0]).filter(|_| with_interval),
        });
    }
    let points: Vec<(f64, f64)> = xs.iter().copied().zip(ys.iter().copied()).collect();
    let fit = stats::LinearFit::of(&points)?;
    let finite = [fit.slope, fit.intercept, fit.r2]
        .iter()
        .all(|v| v.is_finite());
    finite.then(|| stats::LinearFit {
        // Clamped to [0, 1], which only removes rounding: a least-squares
        // fit with an intercept never does worse than the mean.
        r2: fit.r2.clamp(0.0, 1.0),
        ..fit
    })
}

/// One tested boundary `multiple * period`, e.g. where a payload first needs
/// `multiple + 1` packets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// `k` in `k * period`, counting from 1.
    pub multiple: u32,
    /// `multiple * period`, in the units of `x`.
    pub boundary: f64,
    /// Mean detrended `y` just above the boundary minus mean just below it,
    /// in the units of `y`. Detrended means the common within-segment slope
    /// is removed (see [`steps_at_multiples`]). Positive means `y` jumps up
    /// at the boundary.
    pub rise: f64,
    /// `rise` divided by the residual standard error of the step model:
    /// the size of the jump in units of one point's noise. 0 when the
    /// noise cannot be estimated (too few points).
    pub score: f64,
    /// Points in the half-period windows below and above the boundary.
    pub below: usize,
    pub above: usize,
    /// The rise's t statistic: `rise / (noise * sqrt(1/below + 1/above))`.
    /// 0 when the noise cannot be estimated.
    pub t: f64,
    /// The smallest rise this boundary would show as significant with
    /// 80 % power ([`stats::detectable_difference`] of the noise and the
    /// smaller window's count), in the units of `y`. `None` when the noise
    /// is unknown or a window has one point. A step smaller than this can
    /// be there unseen.
    pub detectable: Option<f64>,
    /// `rise > 0` and `t` at or above the two-sided 95 % t quantile (the
    /// residual degrees of freedom): a one-sided test at 2.5 %. Only upward
    /// jumps count: one more packet costs time, it never saves time.
    pub significant: bool,
}

/// What [`steps_at_multiples`] found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepReport {
    /// The period asked for, as given.
    pub period: f64,
    /// One entry per tested boundary, in increasing `multiple`, whether
    /// significant or not. The report can then show the misses too.
    pub steps: Vec<Step>,
    /// Boundaries tested, i.e. those with points on both sides (at most
    /// [`MAX_BOUNDARIES`]). Equals `steps.len()`.
    pub tested: u32,
    /// How many of `steps` are significant.
    pub significant: u32,
    /// The points' noise: the residual standard error of the staircase
    /// model, in the units of `y`; `None` when it cannot be estimated.
    pub noise: Option<f64>,
    /// Its degrees of freedom (those of every step's t test).
    pub df: usize,
    /// The smallest and the largest of the boundaries' detectable steps:
    /// with 80 % power, a step at least `detectable_max` high would have
    /// been found at every tested boundary, one at least `detectable_min`
    /// at the best-covered one. `None` when no boundary has one.
    pub detectable_min: Option<f64>,
    pub detectable_max: Option<f64>,
}

/// Looks for upward jumps in `y` at each positive multiple of `period`,
/// e.g. stop latency against payload size with `period` the payload that
/// fits in one packet of the path MTU.
///
/// The model is a staircase: a common slope plus a constant level for each
/// segment `((k-1)*period, k*period]`. A payload of exactly `k * period`
/// fits in `k` packets, so it belongs to segment `k`, below boundary `k`.
///
/// * Trend: the slope is pooled from the variation within each segment.
///   A line fitted across all points would also absorb the steps. It
///   would then tilt each segment and hide about half of every rise. If no
///   segment has two distinct `x`, the slope of the line through all
///   points is used.
/// * Rise at boundary `k`: the detrended points in `(k*period - period/2,
///   k*period]` (below) and `(k*period, k*period + period/2]` (above). Half
///   a period on each side keeps each window to the neighbourhood of one
///   boundary. Each point falls in exactly one window.
/// * Noise: the residual standard error of the staircase model, with
///   `n - segments - 1` degrees of freedom. If there are no degrees of
///   freedom left, the residuals of the line through all points are used
///   when there are more than two points. Otherwise the noise is unknown
///   and every score is 0. The noise is never taken below a billionth of
///   the data's magnitude, so rounding in exact data is not read as noise.
/// * Test: a rise is significant when its t statistic against that noise
///   reaches the 95 % two-sided quantile (each boundary at 2.5 %, upward
///   only: among 40 boundaries without a step, about one reads as a step
///   by chance). Each boundary states the smallest step the test finds
///   with 80 % power there, so "no step" can be read as "no step larger
///   than this".
///
/// Points need not be sorted. Non-finite points are ignored. A `period`
/// that is not finite and positive gives an empty report, as do data with
/// fewer than two points or with every `x` equal. Work is `O(n log n)`.
/// At most [`MAX_BOUNDARIES`] boundaries are reported.
pub fn steps_at_multiples(points: &[(f64, f64)], period: f64) -> StepReport {
    let mut report = StepReport {
        period,
        steps: Vec::new(),
        tested: 0,
        significant: 0,
        noise: None,
        df: 0,
        detectable_min: None,
        detectable_max: None,
    };
    if !(period.is_finite() && period > 0.0) {
        return report;
    }
    let finite: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    let n = finite.len();
    if n < 2 {
        return report;
    }

    // Scale by powers of two (exact), so sums cannot overflow. Scores do not
    // depend on the scale. The rise is scaled back at the end.
    let ex = magnitude_exponent(&finite.iter().map(|p| p.0).collect::<Vec<_>>());
    let ey = magnitude_exponent(&finite.iter().map(|p| p.1).collect::<Vec<_>>());
    let xs: Vec<f64> = finite.iter().map(|p| ldexp(p.0, -ex)).collect();
    let ys: Vec<f64> = finite.iter().map(|p| ldexp(p.1, -ey)).collect();

    // Segment and window of every point, from the unscaled x and period.
    let mut segments: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
    let mut windows: BTreeMap<u32, (Mean, Mean)> = BTreeMap::new();
    let mut placement = Vec::with_capacity(n);
    for (i, &(x, _)) in finite.iter().enumerate() {
        let t = x / period;
        let segment = t.ceil();
        // `as` saturates, so an enormous x/period cannot wrap.
        segments.entry(segment as i64).or_default().push(i);
        let (k, above) = if t > segment - 0.5 {
            (segment, false)
        } else {
            (segment - 1.0, true)
        };
        let place = (k >= 1.0 && k <= f64::from(u32::MAX)).then_some((k as u32, above));
        if let Some((k, _)) = place {
            windows.entry(k).or_default();
        }
        placement.push(place);
    }

    let overall = ols(&xs, &ys);
    let Some(slope) = within_slope(&segments, &xs, &ys).or(overall.map(|f| f.slope)) else {
        return report;
    };
    let z: Vec<f64> = xs.iter().zip(&ys).map(|(x, y)| y - slope * x).collect();
    if z.iter().any(|v| !v.is_finite()) {
        return report;
    }

    let noise = residual_standard_error(&segments, &z, overall.as_ref());
    let magnitude = xs
        .iter()
        .zip(&ys)
        .map(|(x, y)| y.abs().max((slope * x).abs()))
        .fold(0.0, f64::max);
    let floor = (NOISE_FLOOR * magnitude).max(f64::MIN_POSITIVE);
    let noise = noise.map(|(s, df)| (s.max(floor), df));
    // The quantile the t statistics must reach; `None` leaves every
    // boundary untested (no noise estimate).
    let critical = noise.and_then(|(_, df)| stats::t95(df as f64));
    if let Some((s, df)) = noise {
        report.noise = Some(clamp_finite(ldexp(s, ey)));
        report.df = df;
    }

    for (i, place) in placement.iter().enumerate() {
        if let Some((k, above)) = place {
            if let Some((below_mean, above_mean)) = windows.get_mut(k) {
                if *above {
                    above_mean.add(z[i]);
                } else {
                    below_mean.add(z[i]);
                }
            }
        }
    }

    for (&multiple, (below, above)) in &windows {
        if report.steps.len() >= MAX_BOUNDARIES {
            break;
        }
        if below.n == 0 || above.n == 0 {
            continue;
        }
        let rise = above.mean - below.mean;
        if !rise.is_finite() {
            continue;
        }
        let spread = (1.0 / below.n as f64 + 1.0 / above.n as f64).sqrt();
        let score = clamp_finite(noise.map_or(0.0, |(s, _)| rise / s));
        let t = clamp_finite(noise.map_or(0.0, |(s, _)| rise / (s * spread)));
        let detectable = noise
            .and_then(|(s, _)| stats::detectable_difference(s, below.n.min(above.n)))
            .map(|d| clamp_finite(ldexp(d, ey)));
        let rise = clamp_finite(ldexp(rise, ey));
        let significant = critical.is_some_and(|c| t >= c) && rise > 0.0;
        report.steps.push(Step {
            multiple,
            boundary: f64::from(multiple) * period,
            rise,
            score,
            below: below.n,
            above: above.n,
            t,
            detectable,
            significant,
        });
    }
    // Both counts are at most MAX_BOUNDARIES, far below u32::MAX.
    report.tested = u32::try_from(report.steps.len()).unwrap_or(u32::MAX);
    report.significant =
        u32::try_from(report.steps.iter().filter(|s| s.significant).count()).unwrap_or(u32::MAX);
    let detectable = report.steps.iter().filter_map(|s| s.detectable);
    report.detectable_min = detectable.clone().reduce(f64::min);
    report.detectable_max = detectable.reduce(f64::max);
    report
}

/// Running mean. It is updated incrementally, so a window of large values
/// does not overflow a sum.
#[derive(Debug, Default, Clone, Copy)]
struct Mean {
    n: usize,
    mean: f64,
}

impl Mean {
    fn add(&mut self, v: f64) {
        self.n += 1;
        self.mean += (v - self.mean) / self.n as f64;
    }
}

/// Slope pooled over the segments: Σ within-segment Sxy / Σ within-segment
/// Sxx. `None` if no segment has two distinct x.
fn within_slope(segments: &BTreeMap<i64, Vec<usize>>, xs: &[f64], ys: &[f64]) -> Option<f64> {
    let (mut sxx, mut sxy) = (0.0, 0.0);
    for members in segments.values() {
        if members.len() < 2 {
            continue;
        }
        let count = members.len() as f64;
        let mx = members.iter().map(|&i| xs[i]).sum::<f64>() / count;
        let my = members.iter().map(|&i| ys[i]).sum::<f64>() / count;
        for &i in members {
            sxx += (xs[i] - mx) * (xs[i] - mx);
            sxy += (xs[i] - mx) * (ys[i] - my);
        }
    }
    let slope = sxy / sxx;
    (sxx > 0.0 && slope.is_finite()).then_some(slope)
}

/// Standard error of the staircase residuals `z - mean(z of segment)` and
/// its degrees of freedom. Falls back to the line through all points when
/// the staircase leaves no degrees of freedom. `None` when neither can be
/// estimated.
fn residual_standard_error(
    segments: &BTreeMap<i64, Vec<usize>>,
    z: &[f64],
    overall: Option<&Ols>,
) -> Option<(f64, usize)> {
    let n = z.len();
    let parameters = segments.len() + 1;
    let (s, df) = if n > parameters {
        let mut ss = 0.0;
        for members in segments.values() {
            let mean = members.iter().map(|&i| z[i]).sum::<f64>() / members.len() as f64;
            ss += members.iter().map(|&i| (z[i] - mean).powi(2)).sum::<f64>();
        }
        let df = n - parameters;
        ((ss / df as f64).sqrt(), df)
    } else if n > 2 {
        ((overall?.ss_res / (n - 2) as f64).sqrt(), n - 2)
    } else {
        return None;
    };
    s.is_finite().then_some((s, df))
}

/// Ordinary least squares on already finite, reasonably scaled values:
/// the slope and the residual sum of squares the step model needs.
#[derive(Debug, Clone, Copy)]
struct Ols {
    slope: f64,
    ss_res: f64,
}

fn ols(xs: &[f64], ys: &[f64]) -> Option<Ols> {
    let n = xs.len().min(ys.len());
    let (xs, ys) = (&xs[..n], &ys[..n]);
    // Checked on the values themselves: a rounded mean of equal values can
    // differ from them and fake a tiny variance.
    if n < 2 || all_equal(xs) {
        return None;
    }
    if all_equal(ys) {
        return Some(Ols {
            slope: 0.0,
            ss_res: 0.0,
        });
    }
    let count = n as f64;
    let mx = xs.iter().sum::<f64>() / count;
    let my = ys.iter().sum::<f64>() / count;
    let (mut sxx, mut sxy) = (0.0, 0.0);
    for (x, y) in xs.iter().zip(ys) {
        sxx += (x - mx) * (x - mx);
        sxy += (x - mx) * (y - my);
    }
    if !(sxx > 0.0 && sxx.is_finite()) {
        return None;
    }
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    let ss_res: f64 = xs
        .iter()
        .zip(ys)
        .map(|(x, y)| (y - (slope * x + intercept)).powi(2))
        .sum();
    (slope.is_finite() && ss_res.is_finite()).then_some(Ols { slope, ss_res })
}

fn all_equal(values: &[f64]) -> bool {
    values.windows(2).all(|w| w[0] == w[1])
}

/// Exponent `e` with `2^e` close to the largest magnitude in `values`.
/// Dividing by `2^e` is exact and brings the values to about 1. 0 for
/// empty or all-zero input.
fn magnitude_exponent(values: &[f64]) -> i32 {
    let largest = values.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
    if largest > 0.0 && largest.is_finite() {
        // log2 of a positive finite f64 lies in [-1075, 1024].
        largest.log2().floor() as i32
    } else {
        0
    }
}

/// `v * 2^e`, in steps small enough that each factor is a normal f64.
fn ldexp(mut v: f64, mut e: i32) -> f64 {
    const STEP: i32 = 1000;
    while e > STEP {
        v *= 2.0_f64.powi(STEP);
        e -= STEP;
    }
    while e < -STEP {
        v *= 2.0_f64.powi(-STEP);
        e += STEP;
    }
    v * 2.0_f64.powi(e)
}

/// Finite stand-in for a value that overflowed: ±`f64::MAX`, or 0 for NaN.
/// This keeps the JSON report free of nulls.
fn clamp_finite(v: f64) -> f64 {
    if v.is_nan() {
        0.0
    } else {
        v.clamp(-f64::MAX, f64::MAX)
    }
}

/// Five significant digits, trailing zeros dropped. Scientific notation
/// (`1.2346e5`) is used outside `1e-4 ..< 1e5`, as spreadsheets do, so large
/// coefficients do not show spurious zeros. (How [`Fit::formula`] writes
/// numbers; the report writes the intervals the same way.)
pub fn sig5(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    if v == 0.0 {
        return "0".to_string();
    }
    let scientific = format!("{v:.4e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-4..=4).contains(&exponent) {
        let decimals = usize::try_from(4 - exponent).unwrap_or(0);
        trim_zeros(&format!("{v:.decimals$}")).to_string()
    } else {
        format!("{}e{exponent}", trim_zeros(mantissa))
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}
