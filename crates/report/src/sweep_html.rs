//! The HTML of a throughput or delay sweep: its plot and tables.

use std::fmt::Write;

use crate::html::escape;
use crate::model::{SweepRun, Table};
use crate::plot::{self, Series, Style, XyChart};

/// A sweep's section: caption, plot, tables.
pub(crate) fn section(h: &mut String, experiment: &str, run: &SweepRun) {
    crate::toc::run_heading(h, experiment, &run.id, &run.title);
    let _ = write!(
        h,
        "<p class=\"note\">{} {} points on <code>{}</code>, {} repetition{} each{}; every point's figures are in <code>{}</code>.</p>",
        run.points.len(),
        escape(&run.mode),
        escape(&run.link),
        run.reps,
        if run.reps == 1 { "" } else { "s" },
        load_words(run),
        escape(&run.csv),
    );
    if let Some(study) = &run.study {
        let _ = write!(
            h,
            "<p class=\"study\"><strong>The study:</strong> {}</p>",
            escape(study)
        );
    }
    if let Some(failure) = &run.failure {
        let _ = write!(h, "<p><strong>Stopped:</strong> {}</p>", escape(failure));
    }
    for note in &run.notes {
        let _ = write!(h, "<p class=\"note\">{}</p>", escape(note));
    }
    // One point is still a figure: drawn as a dot with its interval.
    if run.series.iter().any(|s| !s.points.is_empty()) {
        h.push_str("<div class=\"plots\">");
        // Sizes the recipe wrote in binary units (4K, 64K) keep them.
        let binary = run.log_x
            && run.x_label.ends_with("(bytes)")
            && run
                .series
                .iter()
                .flat_map(|s| &s.points)
                .all(|p| binary_size(p.x));
        let chart = chart(run);
        h.push_str(&if binary {
            plot::xy_chart_bytes(&chart)
        } else {
            plot::xy_chart(&chart)
        });
        h.push_str("</div>");
    }
    for table in &run.tables {
        table_html(h, table);
    }
}

/// `, under 1 CPU-bound background process`, `, at background loads of
/// 0, 1, 2 and 4 CPU-bound processes on the server's and on the client's
/// CPU`, or nothing without load.
fn load_words(run: &SweepRun) -> String {
    if run.loads.iter().all(|&l| l == 0) {
        return String::new();
    }
    let levels: Vec<String> = run.loads.iter().map(u32::to_string).collect();
    let sides: Vec<String> = run
        .load_on
        .iter()
        .filter(|s| *s != "both")
        .map(|s| format!("the {s}'s"))
        .collect();
    let what = match levels.as_slice() {
        [one] if one == "1" => "under 1 CPU-bound background process".to_string(),
        [one] => format!("under {one} CPU-bound background processes"),
        [rest @ .., last] => format!(
            "at background loads of {} and {last} CPU-bound processes",
            rest.join(", ")
        ),
        [] => return String::new(),
    };
    let whole = run.load_on.iter().any(|s| s == "both");
    let mut places: Vec<String> = Vec::new();
    if whole {
        places.push("anywhere on the machine".into());
    }
    if !sides.is_empty() {
        places.push(format!("on {} CPU", sides.join(" and on ")));
    }
    if places.is_empty() {
        format!(", {what}")
    } else {
        format!(", {what} {}", places.join(", and "))
    }
}

/// Means as lines, with the 95 % interval of each mean as a bar.
fn chart(run: &SweepRun) -> XyChart {
    let mut series = Vec::new();
    for s in &run.series {
        let errors = s
            .points
            .iter()
            // No bar where the interval would reach below zero, which a
            // rate or a delay cannot.
            .filter_map(|p| {
                p.ci95
                    .filter(|ci| !stats::reaches_below_zero(p.y, *ci))
                    .map(|ci| (p.x, ci.lo, ci.hi))
            })
            .collect();
        series.push(
            Series::new(
                s.label.clone(),
                s.points.iter().map(|p| (p.x, p.y)).collect(),
                Style::Line,
            )
            .with_errors(errors),
        );
    }
    // A throughput axis gets the wire's rate: no payload rate passes it.
    if let Some(bps) = run.link_bps.filter(|b| b.is_finite() && *b > 0.0) {
        if run.mode == "throughput" && run.y_label.contains("Mbit/s") {
            series.push(Series::new(
                format!("link rate {} Mbit/s", plot_number(bps / 1e6)),
                vec![(0.0, bps / 1e6)],
                Style::Reference,
            ));
        }
    }
    XyChart {
        title: format!("{}: {}", run.id, run.title),
        x_label: run.x_label.clone(),
        y_label: run.y_label.clone(),
        series,
        log_x: run.log_x,
        log_y: wide_spread(run),
    }
}

/// A size a recipe writes in binary units: a multiple of 1 KiB, or a
/// power of two (16, 256, 4K, 16K).
fn binary_size(x: f64) -> bool {
    (1.0..1e15).contains(&x)
        && x.fract() == 0.0
        && ((x as u64).is_power_of_two() || (x as u64).is_multiple_of(1024))
}

/// Whether the plotted means span more than a factor of 50 (a kernel's
/// loopback beside a 100 Mbit/s wire): then a log axis shows both.
fn wide_spread(run: &SweepRun) -> bool {
    let ys = run
        .series
        .iter()
        .flat_map(|s| &s.points)
        .map(|p| p.y)
        .filter(|y| y.is_finite() && *y > 0.0);
    let (lo, hi) = ys.fold((f64::INFINITY, 0.0f64), |(lo, hi), y| {
        (lo.min(y), hi.max(y))
    });
    hi > 0.0 && hi / lo > 50.0
}

/// A rate for a legend: `100`, `1000`, `2.5`.
fn plot_number(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}").trim_end_matches('0').to_string()
    }
}

/// A table: first column left-aligned, the rest right-aligned.
pub(crate) fn table_html(h: &mut String, table: &Table) {
    h.push_str("<table>");
    if !table.caption.is_empty() {
        let _ = write!(h, "<caption>{}</caption>", escape(&table.caption));
    }
    h.push_str("<tr>");
    for (i, c) in table.columns.iter().enumerate() {
        let class = if i == 0 { " class=\"l\"" } else { "" };
        let _ = write!(h, "<th{class}>{}</th>", escape(c));
    }
    h.push_str("</tr>");
    for row in &table.rows {
        h.push_str("<tr>");
        for (i, c) in row.iter().enumerate() {
            let class = if i == 0 { " class=\"l\"" } else { "" };
            let _ = write!(h, "<td{class}>{}</td>", escape(c));
        }
        h.push_str("</tr>");
    }
    h.push_str("</table>");
}
