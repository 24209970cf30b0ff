//! The horizontal bar chart: one labelled bar per entry, top to bottom.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::axis::{extent, fmt_sig, to_axis, Axis};
use super::frame::{anchored, chart, colour, no_data, render, MUTED, TEXT, TICK_CHAR_W, TICK_SIZE};
use super::{BarChart, HEIGHT, MAX_BARS, MAX_BAR_CHART_HEIGHT, WIDTH};

/// Longest bar label shown, in characters.
const MAX_NAME: usize = 40;
/// A bar's label cut to `max` characters (a function name; the table
/// beside the chart has it whole).
fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// Height of the note saying how many bars were left out.
const NOTE_H: u32 = 24;

/// The chart's height for `n` bars: [`HEIGHT`] at least, about 22 pixels a
/// bar, at most [`MAX_BAR_CHART_HEIGHT`].
fn height_for(n: usize) -> u32 {
    (110 + 22 * n.min(MAX_BARS) as u32).clamp(HEIGHT, MAX_BAR_CHART_HEIGHT)
}

pub(crate) fn draw(c: &BarChart) -> String {
    let bars: Vec<(&str, f64)> = c
        .bars
        .iter()
        .filter(|(_, v)| to_axis(false, *v).is_some())
        .map(|(name, v)| (name.as_str(), *v))
        .collect();
    let hidden = bars.len().saturating_sub(MAX_BARS);
    let bars = &bars[..bars.len().min(MAX_BARS)];
    let n = bars.len();
    let height = height_for(n);
    render((WIDTH, height), &c.title, |root| {
        let Some((vmin, vmax)) = extent(bars.iter().map(|b| b.1)) else {
            return no_data(root, &c.title, &c.value_label, "");
        };
        // From 0 to the extremes, with room for the value printed past the
        // end of each bar.
        let (mut lo, mut hi) = (vmin.min(0.0), vmax.max(0.0));
        let span = hi - lo;
        if vmax > 0.0 {
            hi += span * 0.12;
        }
        if vmin < 0.0 {
            lo -= span * 0.12;
        }
        // Shares of a whole: 0–100 whatever the bars (values past it, which
        // no share can have, are cut at the edge).
        if c.percent {
            (lo, hi) = (0.0, 100.0);
        }
        let x = Axis::exact(false, lo, hi, 6);
        // Category 0 is drawn at the bottom: list the names bottom-up.
        let names: Vec<String> = bars
            .iter()
            .rev()
            .map(|(name, _)| truncate(name, MAX_NAME))
            .collect();
        let widest = names.iter().map(|s| s.chars().count()).max().unwrap_or(1);
        let y = Axis::categories(names);

        let area = if hidden > 0 {
            let (upper, lower) = root.split_vertically(height - NOTE_H);
            lower.draw(&Text::new(
                format!("… and {hidden} more not shown"),
                (16, (NOTE_H / 2) as i32),
                anchored(TICK_SIZE, HPos::Left, VPos::Center).color(&MUTED),
            ))?;
            upper
        } else {
            root.clone()
        };
        let y_area = (widest as f64 * TICK_CHAR_W) as u32 + 16;
        let mut chart = chart(&area, &c.title, &x, &y, &c.value_label, "", y_area)?;

        let col = colour(0);
        for (i, &(_, v)) in bars.iter().enumerate() {
            let yc = (n - 1 - i) as f64;
            let end = v.clamp(lo, hi);
            chart.draw_series(std::iter::once(Rectangle::new(
                [(0.0, yc - 0.34), (end, yc + 0.34)],
                col.filled(),
            )))?;
            // The value past the bar's end, or inside it near the axis' end.
            let inside = c.percent && end > 85.0;
            let (dx, h, ink) = match (v >= 0.0, inside) {
                (true, false) => (5, HPos::Left, TEXT),
                (true, true) => (-5, HPos::Right, WHITE),
                (false, _) => (-5, HPos::Right, TEXT),
            };
            chart.draw_series(std::iter::once(
                EmptyElement::at((end, yc))
                    + Text::new(
                        fmt_sig(v, 3),
                        (dx, 0),
                        anchored(TICK_SIZE, h, VPos::Center).color(&ink),
                    ),
            ))?;
        }
        Ok(())
    })
}
