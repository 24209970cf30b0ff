//! The SunOS study's Figure 14, ours: protocol processing delay per
//! packet in linear bins, send side and receive side
//! (`analysis::protocol_delay` defines both windows).

use std::fmt::Write;

use analysis::protocol_delay::{LinearHistogram, ProtocolDelay};

use crate::html::escape;
use crate::plot::{self, HistogramChart};

/// Both histograms with a line of figures under them; nothing for a side
/// with fewer than [`MIN_PACKETS`] packets (a one-segment message has no
/// burst to measure gaps in).
pub(crate) fn charts(h: &mut String, run: &str, delay: &ProtocolDelay) {
    let sides = [
        (
            "send: gaps between the packets of a window burst",
            delay.send.as_ref(),
        ),
        (
            "receive: link to socket queue per packet",
            delay.receive.as_ref(),
        ),
    ];
    let shown: Vec<(&str, &LinearHistogram)> = sides
        .into_iter()
        .filter_map(|(what, h)| {
            h.filter(|h| h.summary.count >= MIN_PACKETS)
                .map(|h| (what, h))
        })
        .collect();
    if shown.is_empty() {
        return;
    }
    let _ = write!(
        h,
        "<h4>{}: protocol processing delay per packet (the SunOS study's Figure 14)</h4><div class=\"plots\">",
        escape(run)
    );
    for (what, histogram) in &shown {
        h.push_str(&plot::histogram_chart(&HistogramChart {
            title: format!("{run}, {what}"),
            x_label: format!("delay (µs), bins {} wide", width(histogram.width_ns)),
            buckets: histogram
                .bins
                .iter()
                .map(|b| (b.lo_ns / 1e3, (b.lo_ns + histogram.width_ns) / 1e3, b.count))
                .collect(),
            log_x: false,
        }));
    }
    h.push_str("</div><p class=\"note\">");
    for (what, histogram) in &shown {
        let s = &histogram.summary;
        let _ = write!(
            h,
            "{}: {} packets, median {:.2} µs, p90 {:.2} µs, p99 {:.2} µs, max {:.2} µs{}. ",
            escape(what),
            s.count,
            s.median / 1e3,
            s.p90 / 1e3,
            s.p99 / 1e3,
            s.max / 1e3,
            if histogram.beyond > 0 {
                format!(" ({} beyond the last bin, not drawn)", histogram.beyond)
            } else {
                String::new()
            }
        );
    }
    h.push_str("The study drew 50 µs bins for a Sparcstation 1; the bins here are a round width spreading the packets up to their 99th percentile over about 40 bins. Probe cost is subtracted as in every span.</p>");
}

/// Fewest packets a histogram is drawn for.
const MIN_PACKETS: u64 = 10;

/// A bin width (a round number of ns) as it reads best.
fn width(ns: f64) -> String {
    if ns >= 1000.0 {
        format!("{} µs", ns / 1000.0)
    } else {
        format!("{ns} ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sides_are_drawn_with_their_figures_and_a_thin_side_is_not() {
        let many: Vec<f64> = (0..50).map(|k| 100.0 + f64::from(k) * 20.0).collect();
        let delay = ProtocolDelay {
            send: LinearHistogram::of(&many),
            receive: LinearHistogram::of(&[500.0, 700.0]),
        };
        let mut h = String::new();
        charts(&mut h, "continuous", &delay);
        assert!(h.contains("Figure 14"), "{h}");
        assert_eq!(h.matches("<svg").count(), 1, "only the side with packets");
        assert!(h.contains("send: gaps between the packets of a window burst: 50 packets"));
        assert!(!h.contains("receive: link to socket queue per packet:"));
        assert_eq!(width(50_000.0), "50 µs");
        assert_eq!(width(20.0), "20 ns");
        let mut none = String::new();
        charts(
            &mut none,
            "x",
            &ProtocolDelay {
                send: None,
                receive: None,
            },
        );
        assert!(none.is_empty());
    }
}
