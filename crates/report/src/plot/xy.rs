//! The x-y chart: points, lines, dashed trend lines and steps.

use std::collections::HashSet;

use plotters::prelude::*;

use super::axis::{extent, to_axis, Axis};
use super::frame::{chart, colours, no_data, render, with_legend, y_label_area, Legend, Swatch};
use super::{Style, XyChart, HEIGHT, MAX_POINTS_PER_SERIES, WIDTH};

/// Trend lines are smooth: a few points draw them, and the dash pattern
/// (one element per dash) stays small.
const MAX_DASHED_POINTS: usize = 1_000;

/// Draws `c`; with `x_bytes` a logarithmic x axis of byte counts is
/// ticked at powers of two in binary units.
pub(crate) fn draw(c: &XyChart, x_bytes: bool) -> String {
    let palette = colours(c.series.len());
    let legend = (c.series.len() > 1).then(|| {
        let entries = c
            .series
            .iter()
            .zip(&palette)
            .map(|(s, &col)| (swatch(s.style, col), s.name.as_str()))
            .collect();
        Legend::new(entries, WIDTH)
    });
    let height = HEIGHT + legend.as_ref().map_or(0, Legend::extra_height);
    render((WIDTH, height), &c.title, |root| {
        // Drawable points of each series, in axis space.
        let series: Vec<Vec<(f64, f64)>> = c
            .series
            .iter()
            .map(|s| {
                s.points
                    .iter()
                    .filter_map(|&(x, y)| {
                        // A reference line's x is not a position (0 on a
                        // log axis would drop it).
                        let x = if s.style == Style::Reference {
                            0.0
                        } else {
                            to_axis(c.log_x, x)?
                        };
                        Some((x, to_axis(c.log_y, y)?))
                    })
                    .collect()
            })
            .collect();
        // Interval bars in axis space: (x, low, high).
        let bars: Vec<Vec<(f64, f64, f64)>> = c
            .series
            .iter()
            .map(|s| {
                s.errors
                    .iter()
                    .filter_map(|&(x, lo, hi)| {
                        let (lo, hi) = (lo.min(hi), lo.max(hi));
                        Some((
                            to_axis(c.log_x, x)?,
                            to_axis(c.log_y, lo)?,
                            to_axis(c.log_y, hi)?,
                        ))
                    })
                    .collect()
            })
            .collect();
        // A reference line spans whatever the data span.
        let xs = extent(
            c.series
                .iter()
                .zip(&series)
                .filter(|(s, _)| s.style != Style::Reference)
                .flat_map(|(_, pts)| pts.iter().map(|p| p.0)),
        );
        let ys = extent(
            series
                .iter()
                .flatten()
                .map(|p| p.1)
                .chain(bars.iter().flatten().flat_map(|b| [b.1, b.2])),
        );
        let (Some((x0, x1)), Some((y0, y1))) = (xs, ys) else {
            return no_data(root, &c.title, &c.x_label, &c.y_label);
        };
        let x = if x_bytes && c.log_x {
            Axis::log_bytes(x0, x1, 0.03, 8)
        } else {
            Axis::padded(c.log_x, x0, x1, 0.03, 7)
        };
        let y = Axis::padded(c.log_y, y0, y1, 0.05, 6);

        let area = with_legend(root, legend.as_ref())?;
        let y_area = y_label_area(y.widest_label(), !c.y_label.is_empty());
        let mut chart = chart(&area, &c.title, &x, &y, &c.x_label, &c.y_label, y_area)?;

        for (i, ((s, pts), bars)) in c.series.iter().zip(series).zip(bars).enumerate() {
            let col = palette[i];
            // Caps a few pixels wide whatever the axis: a share of its span.
            let cap = (x.hi - x.lo) * 0.004;
            for (bx, lo, hi) in thin_bars(bars, MAX_POINTS_PER_SERIES) {
                let style = col.mix(0.8).stroke_width(1);
                chart.draw_series(std::iter::once(PathElement::new(
                    vec![(bx, lo), (bx, hi)],
                    style,
                )))?;
                for end in [lo, hi] {
                    chart.draw_series(std::iter::once(PathElement::new(
                        vec![(bx - cap, end), (bx + cap, end)],
                        style,
                    )))?;
                }
            }
            let lone = pts.len() == 1;
            match s.style {
                Style::Points => {
                    let pts = thin_evenly(distinct_pixels(pts, &x, &y), MAX_POINTS_PER_SERIES);
                    chart.draw_series(
                        pts.into_iter()
                            .map(|p| Circle::new(p, 3, col.mix(0.75).filled())),
                    )?;
                }
                Style::Line => {
                    let pts = thin_line(pts, MAX_POINTS_PER_SERIES);
                    chart.draw_series(LineSeries::new(pts, col.stroke_width(2)))?;
                }
                Style::Dashed => {
                    let pts = thin_line(pts, MAX_DASHED_POINTS);
                    chart.draw_series(DashedLineSeries::new(pts, 7, 5, col.stroke_width(2)))?;
                }
                Style::Steps => {
                    let pts = steps(thin_line(pts, MAX_POINTS_PER_SERIES / 2));
                    chart.draw_series(LineSeries::new(pts, col.stroke_width(2)))?;
                }
                Style::Reference => {
                    if let Some(&(_, level)) = pts.first() {
                        chart.draw_series(DashedLineSeries::new(
                            [(x.lo, level), (x.hi, level)],
                            10,
                            4,
                            col.stroke_width(2),
                        ))?;
                    }
                }
            }
            // A line through one point is invisible: mark the point.
            if lone && !matches!(s.style, Style::Points | Style::Reference) {
                let p = s
                    .points
                    .iter()
                    .find_map(|&(px, py)| Some((to_axis(c.log_x, px)?, to_axis(c.log_y, py)?)));
                chart.draw_series(p.map(|p| Circle::new(p, 3, col.filled())))?;
            }
        }
        Ok(())
    })
}

fn swatch(style: Style, col: RGBColor) -> Swatch {
    match style {
        Style::Points => Swatch::Point(col),
        Style::Line | Style::Steps => Swatch::Line(col),
        Style::Dashed | Style::Reference => Swatch::Dashed(col),
    }
}

/// Keeps the first point of each cell of a grid twice as fine as the
/// chart's pixels: the others would be drawn on top of it.
/// At most `cap` bars, evenly chosen: a dense sweep's bars would fill the
/// plot.
fn thin_bars(bars: Vec<(f64, f64, f64)>, cap: usize) -> Vec<(f64, f64, f64)> {
    if bars.len() <= cap || cap == 0 {
        return bars;
    }
    let step = bars.len() as f64 / cap as f64;
    (0..cap)
        .filter_map(|i| bars.get((i as f64 * step) as usize).copied())
        .collect()
}

fn distinct_pixels(pts: Vec<(f64, f64)>, x: &Axis, y: &Axis) -> Vec<(f64, f64)> {
    let sx = 2.0 * f64::from(WIDTH) / (x.hi - x.lo);
    let sy = 2.0 * f64::from(HEIGHT) / (y.hi - y.lo);
    let mut seen = HashSet::new();
    pts.into_iter()
        .filter(|&(px, py)| seen.insert((((px - x.lo) * sx) as i64, ((py - y.lo) * sy) as i64)))
        .collect()
}

/// At most `cap` points, evenly spaced through the input.
fn thin_evenly(pts: Vec<(f64, f64)>, cap: usize) -> Vec<(f64, f64)> {
    if pts.len() <= cap {
        return pts;
    }
    let stride = pts.len() as f64 / cap as f64;
    (0..cap)
        .map(|i| pts[((i as f64 * stride) as usize).min(pts.len() - 1)])
        .collect()
}

/// At most `cap` points of a line, in order: the first and last points and,
/// of each stretch between, the lowest and the highest, so peaks survive.
pub(crate) fn thin_line(pts: Vec<(f64, f64)>, cap: usize) -> Vec<(f64, f64)> {
    let cap = cap.max(4);
    if pts.len() <= cap {
        return pts;
    }
    let n = pts.len();
    let buckets = (cap - 2) / 2;
    let inner = &pts[1..n - 1];
    let size = inner.len().div_ceil(buckets);
    let mut out = Vec::with_capacity(cap);
    out.push(pts[0]);
    for chunk in inner.chunks(size) {
        let (mut lo, mut hi) = (0, 0);
        for (i, p) in chunk.iter().enumerate() {
            if p.1 < chunk[lo].1 {
                lo = i;
            }
            if p.1 > chunk[hi].1 {
                hi = i;
            }
        }
        out.push(chunk[lo.min(hi)]);
        if lo != hi {
            out.push(chunk[lo.max(hi)]);
        }
    }
    out.push(pts[n - 1]);
    out
}

/// The staircase through the points: each y holds until the next x.
fn steps(pts: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(pts.len() * 2);
    for w in pts.windows(2) {
        out.push(w[0]);
        out.push((w[1].0, w[0].1));
    }
    out.extend(pts.last());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thin_line_keeps_ends_and_peaks() {
        let mut pts: Vec<(f64, f64)> = (0..100_000).map(|i| (i as f64, 0.0)).collect();
        pts[54_321].1 = 99.0;
        pts[12_345].1 = -7.0;
        let out = thin_line(pts, 1000);
        assert!(out.len() <= 1000);
        assert_eq!(out.first(), Some(&(0.0, 0.0)));
        assert_eq!(out.last(), Some(&(99_999.0, 0.0)));
        assert!(out.contains(&(54_321.0, 99.0)));
        assert!(out.contains(&(12_345.0, -7.0)));
        assert!(out.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn steps_hold_values() {
        let s = steps(vec![(0.0, 1.0), (1.0, 2.0), (3.0, 0.5)]);
        assert_eq!(
            s,
            [(0.0, 1.0), (1.0, 1.0), (1.0, 2.0), (3.0, 2.0), (3.0, 0.5)]
        );
    }
}
