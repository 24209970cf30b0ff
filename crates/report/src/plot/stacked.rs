//! The stacked chart: layers of shares stacked per x, as areas or bars.

use plotters::prelude::*;

use super::axis::{to_axis, Axis};
use super::frame::{
    chart, layer_colours, no_data, render, with_legend, y_label_area, Legend, Swatch,
};
use super::{StackedChart, HEIGHT, MAX_POINTS_PER_SERIES, WIDTH};

/// Fewer distinct x values than this are drawn as bars, one per x.
const BARS_BELOW: usize = 8;
/// Layers beyond this many are summed into one "other" layer.
const MAX_LAYERS: usize = 24;

pub(crate) fn draw(c: &StackedChart) -> String {
    // Drawable columns, by x.
    let mut cols: Vec<usize> = (0..c.x.len())
        .filter(|&i| to_axis(false, c.x[i]).is_some())
        .collect();
    cols.sort_by(|&a, &b| c.x[a].total_cmp(&c.x[b]));
    let mut distinct = cols.iter().map(|&i| c.x[i]).collect::<Vec<_>>();
    distinct.dedup();
    let as_bars = distinct.len() < BARS_BELOW;
    if !as_bars && cols.len() > MAX_POINTS_PER_SERIES {
        let stride = cols.len() as f64 / MAX_POINTS_PER_SERIES as f64;
        cols = (0..MAX_POINTS_PER_SERIES)
            .map(|k| cols[((k as f64 * stride) as usize).min(cols.len() - 1)])
            .collect();
    }
    let layers = layer_values(c, &cols);
    let slots: &[usize] = if layers.len() == c.layers.len() {
        &c.colour_slots
    } else {
        &[]
    };
    let palette = layer_colours(layers.len(), slots);
    let legend = (layers.len() > 1).then(|| {
        let entries = layers
            .iter()
            .zip(&palette)
            .map(|((name, _), &col)| (Swatch::Fill(col), name.as_str()))
            .collect();
        Legend::new(entries, WIDTH)
    });
    let height = HEIGHT + legend.as_ref().map_or(0, Legend::extra_height);
    render((WIDTH, height), &c.title, |root| {
        if cols.is_empty() || c.layers.is_empty() {
            return no_data(root, &c.title, &c.x_label, &c.y_label);
        }
        let max_total = (0..cols.len())
            .map(|k| layers.iter().map(|(_, v)| v[k]).sum::<f64>())
            .fold(0.0, f64::max);
        let area = with_legend(root, legend.as_ref())?;
        let x = if as_bars {
            Axis::categories(
                cols.iter()
                    .map(|&i| {
                        if c.x_bytes {
                            super::axis::fmt_bytes(c.x[i])
                        } else {
                            super::axis::fmt_sig(c.x[i], 4)
                        }
                    })
                    .collect(),
            )
        } else {
            let (x0, x1) = (c.x[cols[0]], c.x[cols[cols.len() - 1]]);
            Axis::exact(false, x0, x1, 7)
        };
        let top = if c.percent { 100.0 } else { f64::INFINITY };
        let y = if c.percent {
            Axis::exact(false, 0.0, 100.0, 5)
        } else {
            Axis::from_zero(max_total, 5, false)
        };
        let y_area = y_label_area(y.widest_label(), !c.y_label.is_empty());
        let mut chart = chart(&area, &c.title, &x, &y, &c.x_label, &c.y_label, y_area)?;

        let mut below = vec![0.0; cols.len()];
        for ((_, values), &col) in layers.iter().zip(&palette) {
            let above: Vec<f64> = below
                .iter()
                .zip(values)
                .map(|(b, v)| (b + v).min(top))
                .collect();
            if as_bars {
                chart.draw_series((0..cols.len()).filter(|&k| above[k] > below[k]).map(|k| {
                    let xk = k as f64;
                    Rectangle::new([(xk - 0.32, below[k]), (xk + 0.32, above[k])], col.filled())
                }))?;
            } else {
                let xs = cols.iter().map(|&i| c.x[i]);
                let upper = xs.clone().zip(above.iter().copied());
                let lower = xs.zip(below.iter().copied()).rev();
                let outline: Vec<(f64, f64)> = upper.clone().chain(lower).collect();
                chart.draw_series(std::iter::once(Polygon::new(
                    outline,
                    col.mix(0.85).filled(),
                )))?;
                chart.draw_series(LineSeries::new(upper, col.stroke_width(1)))?;
            }
            below = above;
        }
        Ok(())
    })
}

/// Each layer's value per column (0 where missing, negative or not a
/// number), with layers beyond [`MAX_LAYERS`] summed into "other".
fn layer_values(c: &StackedChart, cols: &[usize]) -> Vec<(String, Vec<f64>)> {
    let value = |layer: &[f64], i: usize| {
        layer
            .get(i)
            .copied()
            .filter(|v| v.is_finite() && *v > 0.0)
            .map_or(0.0, |v| v.min(1e300))
    };
    let keep = if c.layers.len() > MAX_LAYERS {
        MAX_LAYERS - 1
    } else {
        MAX_LAYERS
    };
    let mut out: Vec<(String, Vec<f64>)> = c
        .layers
        .iter()
        .take(keep)
        .map(|(name, layer)| {
            (
                name.clone(),
                cols.iter().map(|&i| value(layer, i)).collect(),
            )
        })
        .collect();
    if c.layers.len() > keep {
        let rest = &c.layers[keep..];
        let other = cols
            .iter()
            .map(|&i| {
                rest.iter()
                    .map(|(_, layer)| value(layer, i))
                    .sum::<f64>()
                    .min(1e300)
            })
            .collect();
        out.push((format!("other ({} layers)", rest.len()), other));
    }
    out
}
