//! Stacked horizontal share bars: one bar per row, each a whole of 100 %,
//! its layers left to right with their shares printed where they fit.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::axis::{to_axis, Axis};
use super::frame::{
    anchored, chart, layer_colours, no_data, render, with_legend, Legend, Swatch, CHAR_W, TICK_SIZE,
};
use super::{ShareBars, WIDTH};

/// Height of one bar's row, pixels.
const ROW_H: u32 = 46;
/// A share narrower than this (%) carries no printed number.
const MIN_LABELLED: f64 = 4.0;

pub(crate) fn draw(c: &ShareBars) -> String {
    let width = c.width.max(WIDTH);
    let palette = layer_colours(c.layers.len(), &c.colour_slots);
    let legend = (!c.layers.is_empty()).then(|| {
        let entries = c
            .layers
            .iter()
            .zip(&palette)
            .map(|(name, &col)| (Swatch::Fill(col), name.as_str()))
            .collect();
        Legend::new(entries, width)
    });
    // Title (up to two lines), the bars, the axis, the legend.
    let rows = c.rows.len().max(1) as u32;
    let height = 70 + 60 + rows * ROW_H + legend.as_ref().map_or(0, Legend::height);
    render((width, height), &c.title, |root| {
        if c.rows.is_empty() || c.layers.is_empty() {
            return no_data(root, &c.title, &c.value_label, "");
        }
        let area = with_legend(root, legend.as_ref())?;
        let names: Vec<String> = c.rows.iter().rev().map(|(n, _)| n.clone()).collect();
        let widest = names.iter().map(|n| n.chars().count()).max().unwrap_or(1);
        let y_area = ((widest as f64 * CHAR_W) as u32 + 20).min(width / 3);
        let x = Axis::exact(false, 0.0, 100.0, 10);
        let y = Axis::categories(names);
        let mut chart = chart(&area, &c.title, &x, &y, &c.value_label, "", y_area)?;
        let n = c.rows.len();
        for (i, (_, shares)) in c.rows.iter().enumerate() {
            let yc = (n - 1 - i) as f64;
            let mut left = 0.0f64;
            for (j, &col) in palette.iter().enumerate() {
                let share = shares
                    .get(j)
                    .copied()
                    .and_then(|v| to_axis(false, v))
                    .filter(|v| *v > 0.0)
                    .unwrap_or(0.0);
                let right = (left + share).min(100.0);
                if right <= left {
                    continue;
                }
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(left, yc - 0.36), (right, yc + 0.36)],
                    col.filled(),
                )))?;
                if right - left >= MIN_LABELLED {
                    let ink = if luminance(col) > 0.5 { BLACK } else { WHITE };
                    chart.draw_series(std::iter::once(Text::new(
                        format!("{:.0}", right - left),
                        ((left + right) / 2.0, yc),
                        anchored(TICK_SIZE, HPos::Center, VPos::Center).color(&ink),
                    )))?;
                }
                left = right;
            }
        }
        Ok(())
    })
}

/// Relative luminance (0 black, 1 white), to pick the ink of a label.
fn luminance(c: RGBColor) -> f64 {
    (0.2126 * f64::from(c.0) + 0.7152 * f64::from(c.1) + 0.0722 * f64::from(c.2)) / 255.0
}
