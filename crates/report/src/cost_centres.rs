//! The IPv6 study's cost-centre figures (Xie 1999, `000_…` §5.2–5.4),
//! drawn from a traced size sweep:
//!
//! * each cost centre's time per message against payload size with its
//!   trend line (Figs. 5.7, 5.10, 5.13, 5.16, 5.19; Table 5b) and its
//!   share of the stop latency against size (Figs. 5.9, 5.12, 5.15, 5.18,
//!   5.21), on the send and the receive path;
//! * CPU share by overhead category, sender and receiver (Figs. 5.31,
//!   5.32);
//! * TCP against UDP on one chart (Fig. 5.5) and the chapter's summary
//!   (Table 5e) for an experiment with both.
//!
//! Trend lines are the analysis' (`PathTrends::categories`): least
//! squares over the per-size means, x in thousands of bytes and y in µs as
//! in the study, with the slope's 95 % interval and R²; a weak fit
//! (R² < 0.8) is marked and not drawn, as is a line whose intercept (the
//! time at size 0) is below zero ("not linear near zero", see
//! `analysis::trend::Fit::intercept_below_zero`), and no line is drawn
//! below zero.

use std::fmt::Write;

use analysis::sweep::PathTrends;
use analysis::sweep::{PathFigures, SizePoint};
use analysis::trend::Fit;
use probe::Category;

use crate::html::escape;
use crate::model::{Experiment, MessagesRun};
use crate::plot::{self, BarChart, Series, Style, XyChart};

/// The cost centres a figure is drawn for: those with time in the window
/// at some size.
fn centres(points: &[SizePoint], receive: bool) -> Vec<Category> {
    Category::ALL
        .iter()
        .copied()
        .filter(|c| c.is_cost_centre())
        .filter(|c| {
            points
                .iter()
                .filter_map(|p| path(p, receive))
                .any(|f| f.categories_us.get(c).is_some_and(|&us| us > 0.0))
        })
        .collect()
}

fn path(p: &SizePoint, receive: bool) -> Option<&PathFigures> {
    if receive {
        p.receive.as_ref()
    } else {
        p.send.as_ref()
    }
}

/// One cost centre over the sweep: (size B, µs per message), (size B, %
/// of the stop latency) and (size B, % of the stack's own work in the
/// window: every category but the wire and the tool's instrumentation),
/// with the analysis' trend line and mean share of the stop latency.
struct Curve {
    category: Category,
    time: Vec<(f64, f64)>,
    share: Vec<(f64, f64)>,
    work_share: Vec<(f64, f64)>,
    fit: Option<Fit>,
    mean_share: Option<f64>,
}

impl Curve {
    fn of(points: &[SizePoint], trends: &PathTrends, receive: bool, category: Category) -> Self {
        let mut curve = Curve {
            category,
            time: Vec::new(),
            share: Vec::new(),
            work_share: Vec::new(),
            fit: trends.categories.get(&category).copied(),
            mean_share: trends.category_shares.get(&category).map(|s| s * 100.0),
        };
        for p in points {
            let Some(f) = path(p, receive) else { continue };
            let us = f.categories_us.get(&category).copied().unwrap_or(0.0);
            let x = f64::from(p.size);
            curve.time.push((x, us));
            if f.stop_us.mean > 0.0 {
                curve.share.push((x, 100.0 * us / f.stop_us.mean));
            }
            let work: f64 = f
                .categories_us
                .iter()
                .filter(|(c, _)| !matches!(c, Category::Wire | Category::Instrumentation))
                .map(|(_, us)| us)
                .sum();
            if work > 0.0 {
                curve.work_share.push((x, 100.0 * us / work));
            }
        }
        curve
    }

    /// The mean of the per-size shares of the stack's own work.
    fn mean_work_share(&self) -> Option<f64> {
        let shares: Vec<f64> = self.work_share.iter().map(|p| p.1).collect();
        stats::Estimate::of(&shares).map(|e| e.mean)
    }
}

/// A linear fit as "y = (15.888 ± 0.412)·x + 28.00; R² 0.970", weak fits
/// and fits whose intercept is below zero said so.
pub fn formula(fit: &Fit) -> String {
    let slope = match fit.slope_ci95 {
        Some(ci) => format!("({:.3} ± {:.3})", fit.a, ci.half_width()),
        None => format!("{:.3}", fit.a),
    };
    format!(
        "y = {slope}·x {} {:.2}; R² {:.3}{}{}",
        if fit.b < 0.0 { '−' } else { '+' },
        fit.b.abs(),
        fit.r2,
        if fit.weak { " (weak: not a trend)" } else { "" },
        fit.intercept_mark("µs")
            .map_or(String::new(), |mark| format!(" ({mark}; not drawn)"))
    )
}

/// The trend drawn over `lo..=hi` bytes where it is at or above zero
/// ([`Fit::curve`]); a weak fit and one whose intercept is below zero
/// ([`Fit::drawn`]) are not drawn.
fn trend_series(name: &str, fit: &Fit, lo: f64, hi: f64) -> Option<Series> {
    if !fit.drawn() {
        return None;
    }
    let curve = fit.curve(lo / 1e3, hi / 1e3, 40);
    let points = curve.points.iter().map(|&(x, y)| (x * 1e3, y)).collect();
    Some(Series::new(name, points, Style::Dashed))
}

fn extent(points: &[(f64, f64)]) -> (f64, f64) {
    points
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
            (lo.min(p.0), hi.max(p.0))
        })
}

/// The cost-centre figures of one run, both paths, and its CPU share by
/// category. Nothing for a run of fewer than two sizes or one without
/// cost-centre probes (the `layers` depth).
pub fn run_figures(h: &mut String, run: &MessagesRun) {
    if run.points.len() < 2 {
        return;
    }
    for (side, receive, trends) in [("send", false, &run.send), ("receive", true, &run.receive)] {
        let curves: Vec<Curve> = centres(&run.points, receive)
            .into_iter()
            .map(|c| Curve::of(&run.points, trends, receive, c))
            .collect();
        if curves.is_empty() {
            continue;
        }
        let _ = write!(
            h,
            "<h4>{}: cost centres on the {side} path against payload size</h4><table><caption>Per message, µs, within the {side} window (x: payload in thousands of bytes); the trend's slope with its 95 % interval; a weak trend (R² below 0.8) and one whose intercept is below 0 (negative time at size 0: not linear near zero) are marked and not drawn</caption><tr><th class=\"l\">cost centre</th><th class=\"l\">trend line</th><th>mean share of stop latency</th><th>mean share of the stack's work (wire left out)</th><th>sizes</th></tr>",
            escape(&run.id)
        );
        for c in &curves {
            let _ = write!(
                h,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                c.category,
                c.fit.as_ref().map_or("-".into(), |f| escape(&formula(f))),
                c.mean_share.map_or("-".into(), |s| format!("{s:.1} %")),
                c.mean_work_share().map_or("-".into(), |s| format!("{s:.1} %")),
                c.time.len()
            );
        }
        h.push_str("</table><div class=\"plots\">");
        for c in &curves {
            let mut series = vec![Series::new(
                format!("{} per message", c.category),
                c.time.clone(),
                Style::Points,
            )];
            let (lo, hi) = extent(&c.time);
            if let Some(trend) = c
                .fit
                .as_ref()
                .and_then(|f| trend_series(&format!("trend: {}", formula(f)), f, lo, hi))
            {
                series.push(trend);
            }
            h.push_str(&plot::xy_chart(&XyChart {
                title: format!("{}: {} on the {side} path vs payload", run.id, c.category),
                x_label: "payload (bytes)".into(),
                y_label: "time per message (µs)".into(),
                series,
                log_x: false,
                log_y: false,
            }));
        }
        h.push_str(&plot::xy_chart(&XyChart {
            title: format!("{}: cost centres' share of the {side} stop latency", run.id),
            x_label: "payload (bytes)".into(),
            y_label: "% of stop latency".into(),
            series: curves
                .iter()
                .map(|c| Series::new(c.category.to_string(), c.share.clone(), Style::Line))
                .collect(),
            log_x: false,
            log_y: false,
        }));
        h.push_str("</div>");
    }
    cpu_by_category(h, run);
}

/// CPU share by overhead category of each host thread's time in the stack
/// over the whole run (Figs. 5.31 / 5.32, there the sender's).
fn cpu_by_category(h: &mut String, run: &MessagesRun) {
    let mut charts = String::new();
    for (role, profile) in [
        ("sender", &run.sender_profile),
        ("receiver", &run.receiver_profile),
    ] {
        let Some(p) = profile else { continue };
        let mut bars: Vec<(String, f64)> = p
            .categories
            .iter()
            .filter(|(c, _)| **c != Category::Instrumentation)
            .map(|(c, &(_, share))| (c.to_string(), share * 100.0))
            .filter(|(_, share)| *share > 0.0)
            .collect();
        bars.sort_by(|a, b| b.1.total_cmp(&a.1));
        if bars.is_empty() {
            continue;
        }
        charts.push_str(&plot::bar_chart(&BarChart {
            title: format!("{}: {role} CPU by overhead category", run.id),
            value_label: "% of the thread's time in the stack".into(),
            bars,
            percent: true,
        }));
    }
    if !charts.is_empty() {
        let _ = write!(h, "<div class=\"plots\">{charts}</div>");
    }
}

/// The messages runs of an experiment that are size sweeps, by protocol.
fn sweeps<'a>(experiment: &'a Experiment, protocol: &str) -> Option<&'a MessagesRun> {
    experiment
        .runs
        .iter()
        .find(|r| r.protocol.eq_ignore_ascii_case(protocol) && r.points.len() >= 2)
}

/// TCP against UDP on one chart and the summary table, for an experiment
/// with a TCP and a UDP size sweep (the IPv6 study's Fig. 5.5 and Table
/// 5e). Nothing otherwise.
pub fn protocols_compared(h: &mut String, experiment: &Experiment) {
    let (Some(tcp), Some(udp)) = (sweeps(experiment, "tcp"), sweeps(experiment, "udp")) else {
        return;
    };
    let _ = write!(h, "<h3>{}: TCP against UDP</h3>", escape(&experiment.name));
    h.push_str(&send_latency_chart(
        format!(
            "{}: TCP and UDP send start and stop latency",
            experiment.name
        ),
        [(tcp, tcp.protocol.as_str()), (udp, udp.protocol.as_str())],
        false,
    ));
    summary_table(h, tcp, udp);
}

/// Each run's send start and stop latency against payload size, as
/// points (the sizes' medians, or means), in one chart; each run's series
/// named by its label.
pub(crate) fn send_latency_chart(
    title: String,
    runs: [(&MessagesRun, &str); 2],
    medians: bool,
) -> String {
    let mut series = Vec::new();
    for (run, label) in runs {
        for (what, start) in [("start", true), ("stop", false)] {
            let points: Vec<(f64, f64)> = run
                .points
                .iter()
                .filter_map(|p| {
                    let f = p.send.as_ref()?;
                    let s = if start { &f.start_us } else { &f.stop_us };
                    Some((f64::from(p.size), if medians { s.median } else { s.mean }))
                })
                .collect();
            series.push(Series::new(
                format!(
                    "{label} send {what} ({}, {})",
                    run.stop_at,
                    if medians { "median" } else { "mean" }
                ),
                points,
                Style::Points,
            ));
        }
    }
    let chart = plot::xy_chart(&XyChart {
        title,
        x_label: "payload (bytes)".into(),
        y_label: "latency (µs)".into(),
        series,
        log_x: false,
        log_y: false,
    });
    format!("<div class=\"plots\">{chart}</div>")
}

/// One row of the summary: a label and a cell per protocol.
fn row(h: &mut String, label: &str, cells: [String; 2]) {
    let _ = write!(
        h,
        "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
        escape(label),
        escape(&cells[0]),
        escape(&cells[1])
    );
}

/// The study's Table 5e, ours: trends, peak throughput, the cost centres'
/// trends and mean shares, and the stack's CPU share, TCP beside UDP.
fn summary_table(h: &mut String, tcp: &MessagesRun, udp: &MessagesRun) {
    let runs = [tcp, udp];
    let _ = write!(
        h,
        "<table><caption>Summary (the IPv6 study's Table 5e): x payload in thousands of bytes, y µs, send path; slopes with their 95 % interval; latency lines through the sizes' medians, cost-centre lines through their means; \"intercept below 0\": the line gives negative time at size 0, so it is not linear near zero and holds only between the sizes measured</caption><tr><th class=\"l\"></th><th class=\"l\">{} over {}</th><th class=\"l\">{} over {}</th></tr>",
        escape(&tcp.protocol),
        escape(&tcp.family),
        escape(&udp.protocol),
        escape(&udp.family)
    );
    // The run's own lines (through the sizes' medians), as its trend table.
    let latency = |run: &MessagesRun, start: bool| {
        let fit = if start {
            &run.send.start
        } else {
            &run.send.stop
        };
        fit.as_ref().map_or("-".into(), formula)
    };
    row(h, "start latency", runs.map(|r| latency(r, true)));
    row(
        h,
        &format!("stop latency ({})", tcp.stop_at),
        runs.map(|r| latency(r, false)),
    );
    row(
        h,
        "peak payload throughput (one message; payload / stop latency)",
        runs.map(|r| {
            r.points
                .iter()
                .filter_map(|p| p.send.as_ref().map(|f| f.throughput_kbps))
                .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
                .map_or("-".into(), |kbps| format!("{:.1} Mbit/s", kbps * 8.0 / 1e3))
        }),
    );
    for category in [Category::Checksum, Category::Buffer, Category::DataMove] {
        let curves = runs.map(|r| Curve::of(&r.points, &r.send, false, category));
        row(
            h,
            &format!("{category} latency"),
            [&curves[0], &curves[1]].map(|c| c.fit.as_ref().map_or("-".into(), formula)),
        );
        row(
            h,
            &format!("mean share of {category} in stop latency (in the stack's work)"),
            [&curves[0], &curves[1]].map(|c| match (c.mean_share, c.mean_work_share()) {
                (Some(s), Some(w)) => format!("{s:.2} % ({w:.1} %)"),
                (Some(s), None) => format!("{s:.2} %"),
                _ => "-".into(),
            }),
        );
    }
    row(
        h,
        "sender's time in the stack (share of its traced wall time)",
        runs.map(|r| {
            r.sender_profile
                .as_ref()
                .filter(|p| p.wall_ns > 0.0)
                .map_or("-".into(), |p| {
                    format!("{:.2} %", 100.0 * p.stack_ns / p.wall_ns)
                })
        }),
    );
    h.push_str("</table>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::sweep::Stat;

    fn point(size: u32, stop: f64, checksum: f64) -> SizePoint {
        let mut send = PathFigures {
            stop_us: Stat::of(&[stop]).unwrap(),
            ..PathFigures::default()
        };
        send.categories_us.insert(Category::Checksum, checksum);
        SizePoint {
            size,
            messages: 1,
            send: Some(send),
            ..SizePoint::default()
        }
    }

    #[test]
    fn curve_trend_and_share_are_in_the_studys_units() {
        // checksum = 10 µs per KB + 5; stop = 100 µs per KB.
        let points: Vec<SizePoint> = (1..=5)
            .map(|k| point(k * 1000, 100.0 * f64::from(k), 10.0 * f64::from(k) + 5.0))
            .collect();
        assert_eq!(centres(&points, false), vec![Category::Checksum]);
        assert!(centres(&points, true).is_empty());
        let trends = analysis::sweep::trends(&points, None, false);
        let c = Curve::of(&points, &trends, false, Category::Checksum);
        let fit = c.fit.unwrap();
        assert!((fit.a - 10.0).abs() < 1e-9 && (fit.b - 5.0).abs() < 1e-9);
        // Shares 15 %, 12.5 %, 11.67 %, 11.25 %, 11 %: mean 12.283 %.
        assert!((c.mean_share.unwrap() - 12.2833).abs() < 1e-3);
        // The only category: all of the stack's work.
        assert!((c.mean_work_share().unwrap() - 100.0).abs() < 1e-9);
    }

    #[test]
    fn weak_trends_are_not_drawn_and_drawn_ones_stay_at_or_above_zero() {
        let falling = analysis::trend::linear(&[(1.0, 98.0), (2.0, 49.0), (3.0, 0.0)]).unwrap();
        let drawn = trend_series("t", &falling, 0.0, 4000.0).unwrap();
        assert!(drawn.points.iter().all(|p| p.1 >= 0.0));
        assert_eq!(
            drawn.points.last().unwrap().1,
            0.0,
            "the line stops where it reaches zero"
        );
        // y = 49x − 48: latency −48 at size 0, not linear near zero.
        let steep = analysis::trend::linear(&[(1.0, 1.0), (2.0, 50.0), (3.0, 99.0)]).unwrap();
        assert!(steep.intercept_below_zero && !steep.weak);
        assert!(trend_series("t", &steep, 0.0, 3000.0).is_none());
        assert!(formula(&steep).contains("intercept below 0"));
        let weak =
            analysis::trend::linear(&[(1.0, 5.0), (2.0, 1.0), (3.0, 6.0), (4.0, 2.0)]).unwrap();
        assert!(weak.weak);
        assert!(trend_series("t", &weak, 0.0, 1.0).is_none());
        assert!(formula(&weak).contains("weak"));
    }
}
