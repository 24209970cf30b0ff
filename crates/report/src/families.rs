//! IPv6 against IPv4 through the traced stack: the IPv6 study's future
//! work (d) (Xie 1999, `000_…` §6.2), a traced IPv4 run beside the IPv6
//! one. For each protocol an experiment sweeps over both families on one
//! link, their send latencies on one chart and their trend lines in one
//! table, with the ratio of the stop latency's slopes beside the ratio
//! the headers predict.
//!
//! The prediction: on a rate-limited wire the stop latency's slope (µs
//! per KB, the last bit on the wire) is the wire's time per payload byte,
//! frame bytes over payload bytes per full packet; full frames are the
//! same size in both families, so IPv6's slope over IPv4's is IPv4's
//! payload per packet over IPv6's (TCP: the segment less the longer IP
//! header and its trace option; UDP: the fragment's share).

use std::fmt::Write;

use analysis::trend::Fit;

use crate::html::escape;
use crate::model::{Experiment, MessagesRun};

/// The first size sweep of `protocol` over `family` on `link`.
fn sweep<'a>(
    experiment: &'a Experiment,
    protocol: &str,
    family: &str,
    link: Option<&str>,
) -> Option<&'a MessagesRun> {
    experiment.runs.iter().find(|r| {
        r.protocol.eq_ignore_ascii_case(protocol)
            && r.family == family
            && link.is_none_or(|l| r.link == l)
            && r.points.len() >= 2
    })
}

/// The IPv6 and IPv4 sweeps of `protocol`: the first IPv6 size sweep, and
/// the first IPv4 one on its link.
fn pair<'a>(
    experiment: &'a Experiment,
    protocol: &str,
) -> Option<(&'a MessagesRun, &'a MessagesRun)> {
    let v6 = sweep(experiment, protocol, "IPv6", None)?;
    let v4 = sweep(experiment, protocol, "IPv4", Some(&v6.link))?;
    Some((v6, v4))
}

/// Both families on one chart and in one table, per protocol swept over
/// both; nothing for an experiment without such a pair.
pub fn families_compared(h: &mut String, experiment: &Experiment) {
    for protocol in ["TCP", "UDP"] {
        let Some((v6, v4)) = pair(experiment, protocol) else {
            continue;
        };
        let _ = write!(
            h,
            "<h3>{}: {protocol} over IPv6 against IPv4, traced</h3>",
            escape(&experiment.name)
        );
        h.push_str(&crate::cost_centres::send_latency_chart(
            format!(
                "{}: {protocol} send latency, IPv6 and IPv4",
                experiment.name
            ),
            [(v6, "IPv6"), (v4, "IPv4")],
            true,
        ));
        table(h, protocol, [v6, v4]);
    }
}

/// `value [lo, hi]`, then `(weak fit)` under R² 0.8 and the fit's
/// [`Fit::intercept_mark`] when its intercept is below zero.
fn with_interval(fit: &Fit, value: f64, ci: Option<&stats::Interval>) -> String {
    let mut weak = if fit.weak { " (weak fit)" } else { "" }.to_string();
    if let Some(mark) = fit.intercept_mark("µs") {
        weak.push_str(&format!(" ({mark})"));
    }
    match ci {
        Some(ci) => format!("{value:.3} [{:.3}, {:.3}]{weak}", ci.lo, ci.hi),
        None => format!("{value:.3}{weak}"),
    }
}

/// A fit's slope with its 95 % interval.
fn slope(fit: Option<&Fit>) -> String {
    fit.map_or("-".into(), |f| with_interval(f, f.a, f.slope_ci95.as_ref()))
}

/// IPv6's slope over IPv4's with an interval from the two slopes'
/// relative half-widths added in quadrature (first order; both fits
/// independent).
pub fn slope_ratio(v6: &Fit, v4: &Fit) -> Option<(f64, f64, f64)> {
    let relative = |f: &Fit| {
        let ci = f.slope_ci95.as_ref()?;
        (f.a > 0.0).then(|| (ci.hi - ci.lo) / 2.0 / f.a)
    };
    if v4.a <= 0.0 {
        return None;
    }
    let ratio = v6.a / v4.a;
    let half = relative(v6)?.hypot(relative(v4)?) * ratio;
    Some((ratio, ratio - half, ratio + half))
}

fn table(h: &mut String, protocol: &str, runs: [&MessagesRun; 2]) {
    let [v6, v4] = runs;
    let _ = write!(
        h,
        "<table><caption>{protocol} over IPv6 and IPv4 on {}, send path unless named: trend lines y = a·x + b through the sizes' medians, x in thousands of bytes, y in µs, slopes with their 95 % interval; the stop latency is {}; \"weak fit\": R² below 0.8; \"not linear near zero\": the intercept (the latency at size 0) is below 0 beyond its interval (or, from two sizes, at all), which no message can take, so the line holds only between the sizes measured</caption><tr><th class=\"l\"></th><th class=\"l\">IPv6 (run {})</th><th class=\"l\">IPv4 (run {})</th><th class=\"l\">IPv6 / IPv4</th></tr>",
        escape(&v6.link),
        escape(&v6.stop_at.to_string()),
        escape(&v6.id),
        escape(&v4.id),
    );
    let row = |h: &mut String, label: &str, cells: [String; 3]| {
        let _ = write!(
            h,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            escape(label),
            escape(&cells[0]),
            escape(&cells[1]),
            escape(&cells[2])
        );
    };
    let predicted = v4.segment_bytes / v6.segment_bytes;
    row(
        h,
        "payload per full packet (bytes)",
        [
            format!("{:.0}", v6.segment_bytes),
            format!("{:.0}", v4.segment_bytes),
            format!("IPv4's over IPv6's: {predicted:.4}"),
        ],
    );
    let stop = [v6.send.stop.as_ref(), v4.send.stop.as_ref()];
    let ratio = match stop {
        [Some(a), Some(b)] => slope_ratio(a, b).map_or("-".into(), |(r, lo, hi)| {
            let verdict = if (lo..=hi).contains(&predicted) {
                "consistent with"
            } else {
                "not consistent with"
            };
            format!("{r:.4} [{lo:.4}, {hi:.4}], {verdict} the headers' {predicted:.4}")
        }),
        _ => "-".into(),
    };
    row(
        h,
        "stop latency slope (µs/KB)",
        [slope(stop[0]), slope(stop[1]), ratio],
    );
    let plain_ratio = |a: Option<&Fit>, b: Option<&Fit>| match (a, b) {
        (Some(a), Some(b)) => slope_ratio(a, b).map_or("-".into(), |(r, lo, hi)| {
            format!("{r:.3} [{lo:.3}, {hi:.3}]")
        }),
        _ => "-".into(),
    };
    let intercept = |f: Option<&Fit>| {
        f.map_or("-".into(), |f| {
            with_interval(f, f.b, f.intercept_ci95.as_ref())
        })
    };
    row(
        h,
        "stop latency intercept (µs)",
        [intercept(stop[0]), intercept(stop[1]), String::new()],
    );
    let start = [v6.send.start.as_ref(), v4.send.start.as_ref()];
    row(
        h,
        "start latency slope (µs/KB)",
        [
            slope(start[0]),
            slope(start[1]),
            plain_ratio(start[0], start[1]),
        ],
    );
    let receive = [v6.receive.stop.as_ref(), v4.receive.stop.as_ref()];
    row(
        h,
        "receive path stop latency slope (µs/KB)",
        [
            slope(receive[0]),
            slope(receive[1]),
            plain_ratio(receive[0], receive[1]),
        ],
    );
    for category in [
        probe::Category::Checksum,
        probe::Category::Buffer,
        probe::Category::DataMove,
    ] {
        let share = |r: &MessagesRun| {
            r.send
                .category_shares
                .get(&category)
                .map_or("-".into(), |s| format!("{:.2} %", s * 100.0))
        };
        row(
            h,
            &format!("mean share of {category} in the stop latency"),
            [share(v6), share(v4), String::new()],
        );
    }
    h.push_str("</table>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slope_ratio_carries_both_intervals() {
        let fit = |a: f64, half: f64| {
            let mut f = analysis::trend::linear(&[(1.0, a), (2.0, 2.0 * a), (3.0, 3.0 * a)])
                .expect("a line");
            f.slope_ci95 = Some(stats::Interval {
                lo: a - half,
                hi: a + half,
            });
            f
        };
        // 1 % and 1 % relative: the ratio ±1.414 %.
        let (r, lo, hi) = slope_ratio(&fit(102.0, 1.02), &fit(100.0, 1.0)).unwrap();
        assert!((r - 1.02).abs() < 1e-12);
        assert!((hi - r - 1.02 * 2f64.sqrt() / 100.0).abs() < 1e-9);
        assert!((r - lo - (hi - r)).abs() < 1e-12);
        // No interval, no ratio interval; a zero slope, no ratio.
        let mut bare = fit(100.0, 1.0);
        bare.slope_ci95 = None;
        assert!(slope_ratio(&fit(100.0, 1.0), &bare).is_none());
        assert!(slope_ratio(&fit(100.0, 1.0), &fit(0.0, 0.0)).is_none());
    }
}
