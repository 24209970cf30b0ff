//! Axis scales: data space to axis space (identity or log10), "nice" tick
//! positions, and tick labels that read as numbers a person would write.

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};

/// Values whose magnitude exceeds this are treated like non-finite ones
/// (skipped), so that spans and paddings never overflow.
const MAX_MAGNITUDE: f64 = 1e300;

/// Maps a data value to axis space: `None` when it cannot be drawn (NaN,
/// infinite, absurdly large, or non-positive on a log axis).
pub(crate) fn to_axis(log: bool, v: f64) -> Option<f64> {
    if !v.is_finite() || v.abs() > MAX_MAGNITUDE {
        return None;
    }
    if log {
        (v > 0.0).then(|| v.log10())
    } else {
        Some(v)
    }
}

/// Smallest and largest of the values, `None` when there are none.
pub(crate) fn extent(values: impl IntoIterator<Item = f64>) -> Option<(f64, f64)> {
    values.into_iter().fold(None, |acc, v| match acc {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })
}

/// One axis in axis space (log10 of the value on a log axis).
#[derive(Debug, Clone)]
pub(crate) struct Axis {
    log: bool,
    pub(crate) lo: f64,
    pub(crate) hi: f64,
    /// Tick positions, axis space, inside `lo..=hi`.
    pub(crate) ticks: Vec<f64>,
    /// Value-space distance between ticks when they are evenly spaced in
    /// value space; labels then carry just enough decimals for it.
    step: Option<f64>,
    /// Category names: tick `i` (at position `i`) is labelled `names[i]`.
    names: Option<Vec<String>>,
    /// Byte counts: ticks labelled in binary units ("4 KiB").
    bytes: bool,
}

impl Axis {
    /// An axis over `lo..=hi` (axis space) padded by `pad` of the span on
    /// each side, with about `target` ticks. Degenerate ranges are widened.
    pub(crate) fn padded(log: bool, lo: f64, hi: f64, pad: f64, target: usize) -> Self {
        let (lo, hi) = sane_range(log, lo, hi);
        let p = (hi - lo) * pad;
        Self::exact(log, lo - p, hi + p, target)
    }

    /// An axis over exactly `lo..=hi` (after widening a degenerate range).
    pub(crate) fn exact(log: bool, lo: f64, hi: f64, target: usize) -> Self {
        let (lo, hi) = sane_range(log, lo, hi);
        let target = target.max(2);
        if log {
            let (ticks, step) = log_ticks(lo, hi, target);
            Axis {
                log,
                lo,
                hi,
                ticks,
                step,
                names: None,
                bytes: false,
            }
        } else {
            let (ticks, step) = linear_ticks(lo, hi, target);
            Axis {
                log,
                lo,
                hi,
                ticks,
                step: Some(step),
                names: None,
                bytes: false,
            }
        }
    }

    /// A linear axis from 0 to at least `max`, ending on a tick; for counts
    /// (`integer`) the tick step is at least 1.
    pub(crate) fn from_zero(max: f64, target: usize, integer: bool) -> Self {
        let max = if max.is_finite() && max > 0.0 {
            max.min(MAX_MAGNITUDE)
        } else {
            1.0
        };
        let mut step = nice_step(max / target.max(2) as f64);
        if integer {
            step = step.max(1.0);
        }
        let top = ((max / step).ceil() * step).max(step);
        let top = if top.is_finite() && top >= max {
            top
        } else {
            max
        };
        Self::exact(false, 0.0, top, target)
    }

    /// A category axis: one slot per name, centred on 0, 1, 2, ...
    pub(crate) fn categories(names: Vec<String>) -> Self {
        let n = names.len().max(1) as f64;
        Axis {
            log: false,
            lo: -0.5,
            hi: n - 0.5,
            ticks: (0..names.len()).map(|i| i as f64).collect(),
            step: None,
            names: Some(names),
            bytes: false,
        }
    }

    /// A log axis over byte counts `lo..=hi` (axis space, padded by `pad`
    /// of the span) with ticks at powers of two, labelled "4 KiB", "1 MiB":
    /// the units a recipe writes sizes in.
    pub(crate) fn log_bytes(lo: f64, hi: f64, pad: f64, target: usize) -> Self {
        let (lo, hi) = sane_range(true, lo, hi);
        let p = (hi - lo) * pad;
        let (lo, hi) = (lo - p, hi + p);
        let l2 = std::f64::consts::LOG10_2;
        let (k0, k1) = ((lo / l2).ceil(), (hi / l2).floor());
        let count = (k1 - k0 + 1.0).max(0.0);
        let stride = (count / target.max(2) as f64).ceil().max(1.0);
        let ticks = if count > 0.0 && count < 2000.0 {
            (0..count as i64)
                .map(|i| k0 + i as f64)
                .filter(|k| (k.rem_euclid(stride)) == 0.0)
                .map(|k| k * l2)
                .collect()
        } else {
            Vec::new()
        };
        Axis {
            log: true,
            lo,
            hi,
            ticks,
            step: None,
            names: None,
            bytes: true,
        }
    }

    /// The plotters coordinate for this axis, with our ticks.
    pub(crate) fn coord(&self) -> Coord {
        Coord {
            lo: self.lo,
            hi: self.hi,
            ticks: self.ticks.clone(),
        }
    }

    /// The label of a tick at axis-space position `t`.
    pub(crate) fn label(&self, t: f64) -> String {
        if let Some(names) = &self.names {
            let i = t.round();
            return if i >= 0.0 {
                names.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            };
        }
        let v = if self.log { 10f64.powf(t) } else { t };
        if self.bytes {
            return fmt_bytes(v.round());
        }
        match self.step {
            Some(step) => fmt_with_step(v, step),
            None => fmt_sig(v, 3),
        }
    }

    /// The longest tick label, in characters (for sizing the label area).
    pub(crate) fn widest_label(&self) -> usize {
        self.ticks
            .iter()
            .map(|&t| self.label(t).chars().count())
            .max()
            .unwrap_or(1)
    }
}

/// A plotters coordinate over `lo..hi` (axis space) with fixed ticks, the
/// grid lines drawn at them, and pixels rounded rather than truncated. Tick
/// labels come from [`Axis::label`] through the mesh's label formatters.
#[derive(Debug, Clone)]
pub(crate) struct Coord {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Ranged for Coord {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let t = (v - self.lo) / (self.hi - self.lo);
        let p = f64::from(limit.0) + t * f64::from(limit.1 - limit.0);
        // `as` maps NaN to 0 and saturates; keep well inside i32 anyway.
        p.round().clamp(-1e6, 1e6) as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

/// Orders the range and widens it when empty, so that `hi - lo` is a
/// positive finite number.
fn sane_range(log: bool, lo: f64, hi: f64) -> (f64, f64) {
    let (mut lo, mut hi) = if lo.is_finite() && hi.is_finite() {
        (lo.min(hi), lo.max(hi))
    } else {
        (0.0, 1.0)
    };
    if hi - lo <= hi.abs().max(lo.abs()) * 1e-12 {
        let w = if log {
            0.5
        } else if lo == 0.0 {
            1.0
        } else {
            lo.abs() * 0.1
        };
        lo -= w;
        hi += w;
    }
    let span = hi - lo;
    if !(span.is_finite() && span > 0.0) {
        (lo - 1.0, hi + 1.0)
    } else {
        (lo, hi)
    }
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
pub(crate) fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let base = 10f64.powf(raw.log10().floor());
    if !(base.is_finite() && base > 0.0) {
        return raw;
    }
    let f = raw / base;
    let m = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * base
}

/// Multiples of a nice step inside `lo..=hi`; returns the ticks and the step.
fn linear_ticks(lo: f64, hi: f64, target: usize) -> (Vec<f64>, f64) {
    let step = nice_step((hi - lo) / target as f64);
    // A tick a rounding error outside the range still counts (0.7 / 0.1 is
    // 6.999...); it is clamped onto the edge.
    let (k0, k1) = ((lo / step - 1e-9).ceil(), (hi / step + 1e-9).floor());
    if !(k0.is_finite() && k1.is_finite()) || k1 < k0 || k1 - k0 > 1000.0 {
        return (vec![lo, hi], (hi - lo).max(f64::MIN_POSITIVE));
    }
    let ticks = (0..=(k1 - k0) as i64)
        .map(|i| ((k0 + i as f64) * step).clamp(lo, hi))
        .collect();
    (ticks, step)
}

/// Ticks for a log axis over decades `lo..=hi` (axis space): whole decades,
/// thinned when there are many; 1-2-5 per decade when there are few; and
/// evenly spaced values when the range is within a factor of a few.
fn log_ticks(lo: f64, hi: f64, target: usize) -> (Vec<f64>, Option<f64>) {
    let (d0, d1) = (lo.ceil(), hi.floor());
    let decades = if d1 >= d0 { d1 - d0 + 1.0 } else { 0.0 };
    if decades >= 3.0 {
        let stride = (decades / target as f64).ceil().max(1.0);
        let first = (d0 / stride).ceil() * stride;
        let n = ((d1 - first) / stride).floor().max(0.0) as i64;
        let ticks = (0..=n.min(1000))
            .map(|i| first + i as f64 * stride)
            .collect();
        return (ticks, None);
    }
    let mut ticks = Vec::new();
    let mut d = lo.floor();
    while d <= hi.ceil() && ticks.len() < 64 {
        for m in [1.0f64, 2.0, 5.0] {
            let t = d + m.log10();
            if t >= lo && t <= hi {
                ticks.push(t);
            }
        }
        d += 1.0;
    }
    if ticks.len() >= 3 {
        return (ticks, None);
    }
    // Within a factor of a few: evenly spaced values, mapped to log space.
    let (vlo, vhi) = (10f64.powf(lo), 10f64.powf(hi));
    let (values, step) = linear_ticks(vlo, vhi, target);
    let ticks = values
        .into_iter()
        .filter(|v| *v > 0.0)
        .map(|v| v.log10().clamp(lo, hi))
        .collect();
    (ticks, Some(step))
}

/// Trims trailing zeros (and a trailing point) of a decimal fraction.
fn trim_zeros(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Scientific notation with `decimals` digits after the mantissa's point,
/// trimmed: `1.5e6`, `2e-7`.
fn fmt_sci(v: f64, decimals: usize) -> String {
    let mut e = v.abs().log10().floor();
    let mut mant = v / 10f64.powf(e);
    let rounded: f64 = format!("{:.*}", decimals, mant).parse().unwrap_or(mant);
    if rounded.abs() >= 10.0 {
        e += 1.0;
        mant /= 10.0;
    }
    let m = trim_zeros(format!("{:.*}", decimals, mant));
    format!("{m}e{}", e as i64)
}

fn is_sci(a: f64) -> bool {
    !(1e-4..1e6).contains(&a)
}

/// A tick label for a value on an axis whose ticks are `step` apart: as
/// many decimals as the step needs, never float noise.
pub(crate) fn fmt_with_step(v: f64, step: f64) -> String {
    let step = if step.is_finite() && step > 0.0 {
        step
    } else {
        return fmt_sig(v, 3);
    };
    if !v.is_finite() {
        return String::new();
    }
    if v == 0.0 || v.abs() < step * 1e-6 {
        return "0".to_string();
    }
    let a = v.abs();
    // Scientific for large values, and for small ones on a fine axis (a
    // coarse axis shows them as 0.0).
    if a >= 1e6 || (step < 1e-4 && a < 1e-2) {
        let decimals = (a.log10().floor() - step.log10().floor()).clamp(0.0, 12.0) as usize;
        return fmt_sci(v, decimals);
    }
    let decimals = (-step.log10().floor()).clamp(0.0, 12.0) as usize;
    let s = format!("{:.*}", decimals, v);
    if s.parse::<f64>() == Ok(0.0) {
        "0".to_string()
    } else {
        s
    }
}

/// A byte count as a tick label: binary units for multiples of 1024
/// ("4 KiB"), the plain number otherwise.
pub(crate) fn fmt_bytes(v: f64) -> String {
    if v.is_finite() && v >= 1024.0 && v.fract() == 0.0 && (v as u64).is_multiple_of(1024) {
        crate::units::size_f64(v)
    } else {
        fmt_sig(v, 4)
    }
}

/// A value with `sig` significant digits, trimmed: `0.0025`, `1460`, `3e9`.
pub(crate) fn fmt_sig(v: f64, sig: usize) -> String {
    if !v.is_finite() {
        return String::new();
    }
    if v == 0.0 {
        return "0".to_string();
    }
    let sig = sig.max(1);
    let a = v.abs();
    if is_sci(a) {
        return fmt_sci(v, sig - 1);
    }
    let e = a.log10().floor() as i64;
    let decimals = (sig as i64 - 1 - e).clamp(0, 12) as usize;
    let s = trim_zeros(format!("{:.*}", decimals, v));
    if s.parse::<f64>() == Ok(0.0) {
        "0".to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(0.13), 0.2);
        assert_eq!(nice_step(3.0), 5.0);
        assert_eq!(nice_step(7.0), 10.0);
        assert_eq!(nice_step(1000.0), 1000.0);
    }

    #[test]
    fn linear_labels_have_no_float_noise() {
        let axis = Axis::exact(false, 0.1, 0.7, 6);
        let labels: Vec<String> = axis.ticks.iter().map(|&t| axis.label(t)).collect();
        assert_eq!(labels, ["0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7"]);
    }

    #[test]
    fn log_labels_are_decades() {
        let axis = Axis::exact(true, 0.0, 6.0, 8);
        let labels: Vec<String> = axis.ticks.iter().map(|&t| axis.label(t)).collect();
        assert_eq!(labels, ["1", "10", "100", "1000", "10000", "100000", "1e6"]);
    }

    #[test]
    fn short_log_range_gets_intermediate_ticks() {
        let axis = Axis::exact(true, 1.0, 2.5, 6);
        let labels: Vec<String> = axis.ticks.iter().map(|&t| axis.label(t)).collect();
        assert_eq!(labels, ["10", "20", "50", "100", "200"]);
    }

    #[test]
    fn formatting() {
        assert_eq!(fmt_sig(1460.0, 4), "1460");
        assert_eq!(fmt_sig(0.00251, 3), "0.00251");
        assert_eq!(fmt_sig(2.5e9, 3), "2.5e9");
        assert_eq!(fmt_sig(9.9999e6, 3), "1e7");
        assert_eq!(fmt_with_step(1.5e6, 5e5), "1.5e6");
        assert_eq!(fmt_with_step(-0.0000001, 0.5), "0");
        assert_eq!(fmt_with_step(2.0, 0.5), "2.0");
    }

    #[test]
    fn byte_axes_tick_at_powers_of_two_in_binary_units() {
        let axis = Axis::log_bytes(4096f64.log10(), 262_144f64.log10(), 0.0, 8);
        let labels: Vec<String> = axis.ticks.iter().map(|&t| axis.label(t)).collect();
        assert_eq!(
            labels,
            ["4 KiB", "8 KiB", "16 KiB", "32 KiB", "64 KiB", "128 KiB", "256 KiB"]
        );
        let wide = Axis::log_bytes(1.0, 9.0, 0.0, 6);
        assert!(wide.ticks.len() <= 7, "{:?}", wide.ticks);
    }

    #[test]
    fn degenerate_ranges_widen() {
        let a = Axis::padded(false, 5.0, 5.0, 0.05, 5);
        assert!(a.lo < 5.0 && a.hi > 5.0);
        let a = Axis::padded(false, 0.0, 0.0, 0.05, 5);
        assert!(a.lo < 0.0 && a.hi > 0.0);
        let a = Axis::padded(true, 2.0, 2.0, 0.05, 5);
        assert!(a.lo < 2.0 && a.hi > 2.0 && !a.ticks.is_empty());
        let a = Axis::padded(false, f64::NAN, 1.0, 0.05, 5);
        assert!(a.hi > a.lo);
    }
}
