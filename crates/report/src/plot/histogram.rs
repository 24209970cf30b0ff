//! The histogram: one bar per bucket, count against the bucket edges.

use plotters::prelude::*;

use super::axis::{extent, to_axis, Axis};
use super::frame::{chart, colour, no_data, render, y_label_area};
use super::{HistogramChart, HEIGHT, MAX_BUCKETS, WIDTH};

const Y_DESC: &str = "count";

pub(crate) fn draw(c: &HistogramChart) -> String {
    render((WIDTH, HEIGHT), &c.title, |root| {
        // Drawable buckets in axis space, by lower edge.
        let mut buckets: Vec<(f64, f64, u64)> = c
            .buckets
            .iter()
            .filter_map(|&(lo, hi, n)| {
                let (a, b) = (to_axis(c.log_x, lo)?, to_axis(c.log_x, hi)?);
                (b > a).then_some((a, b, n))
            })
            .collect();
        buckets.sort_by(|p, q| p.0.total_cmp(&q.0));
        let buckets = merge(buckets, MAX_BUCKETS);
        let max_count = buckets.iter().map(|b| b.2).max().unwrap_or(0);
        let edges = extent(buckets.iter().flat_map(|b| [b.0, b.1]));
        let Some((x0, x1)) = edges.filter(|_| max_count > 0) else {
            return no_data(root, &c.title, &c.x_label, Y_DESC);
        };
        let x = Axis::padded(c.log_x, x0, x1, 0.02, 7);
        let y = Axis::from_zero(max_count as f64, 5, true);
        let y_area = y_label_area(y.widest_label(), true);
        let mut chart = chart(root, &c.title, &x, &y, &c.x_label, Y_DESC, y_area)?;
        let col = colour(0);
        let drawn = buckets.iter().filter(|b| b.2 > 0);
        chart.draw_series(
            drawn.clone().map(|&(a, b, n)| {
                Rectangle::new([(a, 0.0), (b, n as f64)], col.mix(0.85).filled())
            }),
        )?;
        chart
            .draw_series(drawn.map(|&(a, b, n)| {
                Rectangle::new([(a, 0.0), (b, n as f64)], WHITE.stroke_width(1))
            }))?;
        Ok(())
    })
}

/// At most `cap` buckets: runs of neighbours are merged (edges of the run,
/// summed counts).
fn merge(buckets: Vec<(f64, f64, u64)>, cap: usize) -> Vec<(f64, f64, u64)> {
    if buckets.len() <= cap {
        return buckets;
    }
    let size = buckets.len().div_ceil(cap.max(1));
    buckets
        .chunks(size)
        .map(|run| {
            let lo = run[0].0;
            let hi = run.iter().map(|b| b.1).fold(f64::MIN, f64::max);
            let n = run.iter().fold(0u64, |s, b| s.saturating_add(b.2));
            (lo, hi, n)
        })
        .collect()
}
