//! `report.html`: one self-contained page (styles and plots inline, no
//! script, nothing fetched), a section per experiment and run.

use std::fmt::Write;

use analysis::sweep::{PathFigures, PathTrends, SizePoint};
use analysis::trend::{self, Fit};
use probe::Category;
use stats::{Estimate, PositiveReading};

use crate::model::{MessagesRun, Report};
use crate::plot::{self, BarChart, Series, StackedChart, Style, XyChart};

/// Escapes text for HTML content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The page's stylesheet (the compare page uses it too).
pub(crate) const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}\
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}h3{margin-top:1.6em}\
table{border-collapse:collapse;margin:.8em 0;display:block;max-width:100%;overflow-x:auto}td,th{border:1px solid #ddd;padding:.25em .6em;text-align:right}\
th{background:#f4f4f4}td.l,th.l{text-align:left}.note{color:#555;font-size:.92em}.study{border-left:3px solid #bbb;padding-left:.6em}\
.plots{display:flex;flex-wrap:wrap;gap:12px}.plots svg{max-width:100%;height:auto;border:1px solid #eee}\
code{background:#f4f4f4;padding:0 .2em}\
.front{display:flex;flex-wrap:wrap;gap:2em;align-items:flex-start}.front>*{flex:1 1 420px}\
.toc ol{padding-left:1.4em;margin:.2em 0}.toc li{margin:.1em 0}.findings p{margin:.4em 0}\
caption{caption-side:top;text-align:left;color:#555;font-size:.92em}";

/// The whole page: the title naming the run, the summary (where the time
/// goes on each path), the contents, the machine, then the experiments.
pub fn render(report: &Report) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>",
        escape(&report.title)
    );
    let _ = write!(h, "<h1>{}</h1>", escape(&report.title));
    let _ = write!(
        h,
        "<p class=\"note\">{} run{}; command <code>{}</code>. Every figure below names its window and carries its 95 % interval where there were repetitions.</p>",
        if report.quick { "A quick (coarser sweeps, fewer repetitions)" } else { "A full" },
        report
            .machine
            .cpu_model
            .as_ref()
            .map_or(String::new(), |m| format!(" on {}", escape(m))),
        escape(&report.command),
    );
    crate::summary_html::render(&mut h, &report.summary);
    h.push_str("<div class=\"front\">");
    crate::toc::render(&mut h, report);
    crate::machine_html::render(&mut h, report);
    h.push_str("</div>");
    for exp in &report.experiments {
        let _ = write!(
            h,
            "<h2 id=\"{}\">{}</h2><p>{}</p><p class=\"note\">Source: {} Recipe <code>{}</code>.</p>",
            crate::toc::experiment(&exp.name),
            escape(&exp.title),
            escape(&exp.description),
            if exp.citation.is_empty() {
                format!("<code>{}</code>.", escape(&exp.source))
            } else if exp.citation.ends_with('.') {
                escape(&exp.citation)
            } else {
                format!("{}.", escape(&exp.citation))
            },
            escape(&exp.name)
        );
        for run in &exp.runs {
            run_section(&mut h, &exp.name, run);
        }
        crate::cost_centres::protocols_compared(&mut h, exp);
        crate::layers_compared::xtp_beside_tcp(&mut h, exp);
        crate::families::families_compared(&mut h, exp);
        crate::tunnel_html::beside_native(&mut h, exp);
        crate::tunnel_flavours_html::section(&mut h, exp);
        for sweep in &exp.sweeps {
            crate::sweep_html::section(&mut h, &exp.name, sweep);
        }
        for stage in &exp.pipelines {
            crate::pipeline_html::section(&mut h, &exp.name, stage);
        }
        for run in &exp.kernel_runs {
            crate::kernel_html::section(&mut h, &exp.name, run);
        }
        crate::kernel_html::beside_reference(&mut h, exp);
        h.push_str(&crate::published::beside_html(exp));
    }
    h.push_str("</body></html>\n");
    h
}

/// Where a run's background load ran, and whether the pins held.
fn load_note(h: &mut String, load: &crate::model::RunLoad) {
    let cpu = |c: Option<usize>| c.map_or("?".to_string(), |c| c.to_string());
    let placed = match load.pinned {
        None => "nothing pinned: the processes and both hosts ran wherever the scheduler put them"
            .to_string(),
        Some(held) => format!(
            "on CPU {} ({}'s side); the receiver's host thread on CPU {}, the sender's on CPU {}{}",
            cpu(load.load_cpu),
            escape(&load.on),
            cpu(load.receiver_cpu),
            cpu(load.sender_cpu),
            if held {
                ", every pin held"
            } else {
                " — <strong>a pin did not hold</strong>: the sides were not kept apart"
            }
        ),
    };
    let _ = write!(
        h,
        "<p class=\"note\">Under {} CPU-bound background process{} throughout, {placed}.</p>",
        load.processes,
        if load.processes == 1 { "" } else { "es" },
    );
}

fn run_section(h: &mut String, experiment: &str, run: &MessagesRun) {
    crate::toc::run_heading(
        h,
        experiment,
        &run.id,
        &format!("{} over {} on {}", run.protocol, run.family, run.link),
    );
    if !run.title.is_empty() {
        let _ = write!(h, "<p>{}</p>", escape(&run.title));
    }
    if let Some(load) = &run.load {
        load_note(h, load);
    }
    let _ = write!(
        h,
        "<p class=\"note\">{} size{} × {} repetition{} after {} warm-up message{}; {} of {} measured message{} delivered whole. Probes: {} records, {} dropped, {} unmatched exits, {} unclosed spans; on average {:.0} probes inside a message's send window, {:.2} µs of probe cost subtracted from it ({:.1} % of the mean send stop latency{}), probe depth <b>{}</b>.</p>",
        run.points.len(),
        plural(run.points.len() as u64),
        run.reps,
        plural(u64::from(run.reps)),
        run.warmup,
        plural(u64::from(run.warmup)),
        run.delivered,
        run.sent,
        plural(run.sent),
        run.probes.records,
        run.probes.dropped,
        run.probes.unmatched_exits,
        run.probes.unclosed_spans,
        run.probes.probes_per_message,
        run.probes.overhead_per_message_ns / 1e3,
        run.probes.overhead_share_of_stop * 100.0,
        if run.probes.overhead_share_of_stop > 0.05 {
            ": more than 5 %, the probes weigh on the figures; the layers depth records fewer"
        } else {
            ""
        },
        run.probes.level,
    );
    windows_note(h, run);
    if run.warmup > 0 {
        let _ = write!(
            h,
            "<p class=\"note\">Counts leave the {} warm-up message{} out: the tables, the queues and the packet trace start at the first measured message.</p>",
            run.warmup,
            if run.warmup == 1 { "" } else { "s" }
        );
    }
    let sweep = run.points.len() >= 2;
    if sweep {
        trend_table(h, run);
    }
    per_size_table(h, run);
    h.push_str("<div class=\"plots\">");
    if sweep {
        for (path, trends, receive) in [("send", &run.send, false), ("receive", &run.receive, true)]
        {
            h.push_str(&plot::xy_chart(&latency_chart(run, path, trends, receive)));
        }
        h.push_str(&plot::xy_chart(&throughput_chart(run)));
    }
    h.push_str(&plot::stacked_chart(&shares_chart(run, false)));
    if let Some(profile) = &run.sender_profile {
        h.push_str(&plot::bar_chart(&BarChart {
            title: format!(
                "{}: sender CPU share per function (the tool's own instrumentation left out)",
                run.id
            ),
            value_label: "% of the thread's time in the stack".into(),
            // Instrumentation is not stack time: as a share of it, it
            // would push the bars past 100 % together.
            bars: profile
                .functions
                .iter()
                .filter(|f| f.category != Category::Instrumentation)
                .take(15)
                .map(|f| (f.name.clone(), f.share_of_stack * 100.0))
                .collect(),
            percent: true,
        }));
    }
    h.push_str("</div>");
    share_table(h, run);
    crate::cost_centres::run_figures(h, run);
    cpu_table(h, run);
    if !run.components.rows.is_empty() {
        crate::sweep_html::table_html(h, &run.components);
    }
    if let Some(tree) = &run.call_tree {
        h.push_str(&crate::queues_html::call_tree(
            &format!("{}: the common send path of one message", run.id),
            tree,
        ));
    }
    if let Some(delay) = &run.protocol_delay {
        crate::protocol_delay_html::charts(h, &run.id, delay);
    }
    for (side, layers) in [
        ("sender", &run.sender_layers),
        ("receiver", &run.receiver_layers),
    ] {
        if !layers.is_empty() {
            h.push_str(&crate::queues_html::span_histograms(
                &format!("{}: processing time per layer, {side}", run.id),
                layers,
            ));
        }
    }
    if !run.packet_trace.is_empty() {
        h.push_str("<div class=\"plots\">");
        for chart in crate::trace_charts::packet_trace(run) {
            if !chart.series.is_empty() {
                h.push_str(&plot::xy_chart(&chart));
            }
        }
        if !run.acks.is_empty() {
            h.push_str(&plot::xy_chart(&crate::trace_charts::acks(run)));
        }
        h.push_str("</div>");
    }
    // A sweep's queues in a table; a run of a few sizes (a focused
    // experiment) with every queue's plots.
    if run.points.len() <= 4 {
        h.push_str(&crate::queues_html::queues(&run.queues));
    } else {
        h.push_str(&crate::queues_html::queue_table(&run.queues));
    }
}

/// "s" unless there is exactly one.
fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Each size's mean latencies, for runs of a few sizes (a sweep's are in
/// its CSV and plots).
/// Which window every figure of the run measures.
fn windows_note(h: &mut String, run: &MessagesRun) {
    let _ = write!(
        h,
        "<p class=\"note\">Windows: <b>send start</b> first byte written (<code>socket.send.enter</code>) → first payload frame handed to the link (<code>link.transmit.enter</code>); <b>send stop ({stop})</b> {window}; <b>receive start/stop</b> first frame of the message arrived whole (the wire's arrival, <code>link.receive.arrival</code>, however late the receiver's <code>link.receive.enter</code>) → first / last byte queued for the application (<code>socket.recv_queue.enqueue</code>). Categories: exclusive span time inside the window; <b>wire</b> is time in no span while a frame of the path is on its way (send: the device ring holds one; receive: the first frame waiting in the device for the receiver to look, a sleeping receiver's wake-up included, and later frames still arriving); <b>other</b> is the rest (application, poll loop, waiting for acknowledgements); <b>instrumentation</b> is the tool's own cost, already subtracted.</p>",
        stop = run.stop_at,
        window = escape(run.stop_at.describe()),
    );
}

fn per_size_table(h: &mut String, run: &MessagesRun) {
    if run.points.len() > 4 {
        return;
    }
    let header = format!("<table><caption>mean ± half-width of its 95 % confidence interval (where that would reach below zero, the median and its interval, or a mark: too noisy)</caption><tr><th class=\"l\">size</th><th>messages</th><th>send start µs</th><th>send stop µs ({})</th><th>receive start µs</th><th>receive stop µs</th><th>one-way µs</th><th>send Mbit/s</th></tr>", run.stop_at);
    h.push_str(&header);
    // A latency cannot be negative: where its mean's interval would reach
    // below zero, the median and its interval stand, or a mark.
    let stat = |s: Option<&analysis::sweep::Stat>| {
        s.map_or("-".to_string(), |s| match s.positive_reading() {
            PositiveReading::Mean { mean, ci: Some(ci) } => {
                format!("{:.1} ± {:.1} (n {})", mean, ci.half_width(), s.n)
            }
            PositiveReading::Mean { mean, ci: None } => format!("{:.1} (n {})", mean, s.n),
            PositiveReading::Median { median, ci, .. } => format!(
                "median {:.1} [{:.1}, {:.1}] (n {}; mean too skewed)",
                median, ci.lo, ci.hi, s.n
            ),
            PositiveReading::TooNoisy { mean, .. } => {
                format!("too noisy (mean {:.1}, n {})", mean, s.n)
            }
        })
    };
    for p in &run.points {
        let _ = write!(
            h,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            crate::units::size(u64::from(p.size)),
            p.messages,
            stat(p.send.as_ref().map(|f| &f.start_us)),
            stat(p.send.as_ref().map(|f| &f.stop_us)),
            stat(p.receive.as_ref().map(|f| &f.start_us)),
            stat(p.receive.as_ref().map(|f| &f.stop_us)),
            stat(p.one_way_us.as_ref()),
            p.send.as_ref().map_or("-".into(), |f| format!("{:.2}", f.throughput_kbps * 8.0 / 1000.0)),
        );
    }
    h.push_str("</table>");
}

/// A fit's cells: formula, R² (marked weak below 0.8), the 95 % intervals
/// of slope and intercept (of a power law: exponent and coefficient), and
/// the number of points. A line whose intercept is below zero
/// ([`Fit::intercept_below_zero`]) says so under its formula.
fn fit_cell(fit: &Option<Fit>, x: &str, y: &str) -> String {
    let Some(f) = fit else {
        return "<td class=\"l\">(too few points)</td><td></td><td></td><td></td><td></td>".into();
    };
    let interval = |ci: Option<stats::Interval>| {
        ci.map_or("(too few points)".to_string(), |c| {
            format!("{} … {}", trend::sig5(c.lo), trend::sig5(c.hi))
        })
    };
    let relative = f
        .slope_relative_half_width()
        .map_or(String::new(), |r| format!(" (±{:.1} %)", r * 100.0));
    let r2 = if f.weak {
        format!("{:.3} <b>weak</b>", f.r2)
    } else {
        format!("{:.3}", f.r2)
    };
    format!(
        "<td class=\"l\">{}{}</td><td>{r2}</td><td>{}{relative}</td><td>{}</td><td>{}</td>",
        escape(&f.formula(x, y)),
        intercept_mark_html(f, y),
        interval(f.slope_ci95),
        interval(f.intercept_ci95),
        f.n
    )
}

/// `<br><b>not linear near zero</b>: intercept below 0 (…)` for a fit so
/// marked, else nothing.
pub(crate) fn intercept_mark_html(f: &Fit, y_unit: &str) -> String {
    f.intercept_mark(y_unit).map_or(String::new(), |mark| {
        let rest = mark.strip_prefix("not linear near zero").unwrap_or(&mark);
        format!("<br><b>not linear near zero</b>{}", escape(rest))
    })
}

fn trend_table(h: &mut String, run: &MessagesRun) {
    h.push_str("<table><tr><th class=\"l\">trend line</th><th class=\"l\">formula (x: thousands of bytes, y: µs)</th><th>R²</th><th>slope 95 % CI (power: exponent)</th><th>intercept 95 % CI (power: coefficient)</th><th>points (sizes)</th></tr>");
    for (name, fit) in [
        ("send start latency", &run.send.start),
        ("send stop latency", &run.send.stop),
        ("receive start latency", &run.receive.start),
        ("receive stop latency", &run.receive.stop),
    ] {
        let name = if name == "send stop latency" {
            format!("{name} ({})", run.stop_at)
        } else {
            name.to_string()
        };
        let _ = write!(
            h,
            "<tr><td class=\"l\">{name}</td>{}</tr>",
            fit_cell(fit, "KB", "µs")
        );
    }
    let _ = write!(
        h,
        "<tr><td class=\"l\">send stop latency ({}) through the sizes' means (the study's way, for comparison: carries the messages that waited for the CPU)</td>{}</tr>",
        run.stop_at,
        fit_cell(&run.send.stop_of_means, "KB", "µs")
    );
    for (at, fit) in &run.send.stop_by_definition {
        if *at == run.stop_at {
            continue;
        }
        let _ = write!(
            h,
            "<tr><td class=\"l\">send stop latency ({at}; for comparison)</td>{}</tr>",
            fit_cell(&Some(*fit), "KB", "µs")
        );
    }
    let _ = write!(
        h,
        "<tr><td class=\"l\">send payload throughput = payload / stop latency ({}) (x: hundreds of bytes, y: KB/s)</td>{}</tr></table>",
        run.stop_at,
        fit_cell(&run.send.throughput, "100 B", "KB/s")
    );
    h.push_str("<p class=\"note\">Each latency line is fitted by least squares to the sizes' median latencies (the study fitted means on an isolated machine; here a few messages wait for the CPU, which the means carry: the means' line is given for comparison), the throughput line to payload / mean stop latency; the intervals are 95 % (t with points − 2 degrees of freedom). A line with R² below 0.8 explains too little of its points to be read as a trend: it is marked weak and not drawn. A latency line whose intercept (its latency at size 0) is below zero — its 95 % interval wholly below 0, or, from two sizes and so without an interval, the intercept itself — says a zero-byte message would take negative time, which none can: the sizes are not on one straight line down to zero (one segment against several costs differently per byte) or are too few. It is marked <b>not linear near zero</b> and not drawn; its slope holds only between the sizes measured. A drawn line stops where it would fall below zero.</p>");
    if let Some(rep) = &run.send.stop_slope_repetition {
        let passes = rep.passes.len();
        let reps: u32 = rep.passes.iter().map(|p| p.reps).sum();
        let wall: f64 = rep.passes.iter().map(|p| p.wall_s).sum();
        // The passes took turns with the recipe's other repeating runs.
        let span = rep.passes.last().map_or(0.0, |p| p.began_s + p.wall_s);
        let outcome = match rep.verdict {
            stats::Verdict::Met => "met".to_string(),
            stats::Verdict::TimeCap => format!(
                "<b>not met</b>: the next pass would have run past the {:.0} s cap",
                rep.time_cap_s
            ),
            stats::Verdict::RepCap => "<b>not met</b>: the run's message limit".to_string(),
            stats::Verdict::Continue => "<b>not met</b>".to_string(),
        };
        let slopes: Vec<f64> = rep.passes.iter().filter_map(|p| p.slope).collect();
        let spread = match Estimate::of(&slopes) {
            Some(e) if e.n > 1 => {
                let median = match (rep.passes_median, rep.passes_median_ci95) {
                    (Some(m), Some(ci)) => format!(
                        "median {} [{}, {}] (95 %, distribution-free)",
                        trend::sig5(m),
                        trend::sig5(ci.lo),
                        trend::sig5(ci.hi)
                    ),
                    _ => format!(
                        "median {} (too few passes for its interval)",
                        trend::sig5(e.median)
                    ),
                };
                format!(
                    " The passes' own slopes (each a new stack) ranged {}–{} µs/KB, {median}: how far one short run can be off on this machine.",
                    trend::sig5(e.min),
                    trend::sig5(e.max),
                )
            }
            _ => String::new(),
        };
        let _ = write!(
            h,
            "<p class=\"note\">Repeated passes over the sizes, each size {} times a pass, until the send stop latency's slope (the line above, through every pass) was known to ±{:.0} % (95 %; at least {} passes, and the slope's interval is the hull of the line's own and the passes' median's, so that it carries how far passes differ): {outcome} after {passes} pass{}, {reps} repetitions per size in all, {wall:.1} s of passes spread over {span:.0} s (the recipe's repeating runs take their passes in turn, so that each meets the machine over that stretch and runs compared with each other meet the same states); reached {}.{spread}</p>",
            rep.passes.first().map_or(0, |p| p.reps),
            rep.target * 100.0,
            rep.min_passes,
            if passes == 1 { "" } else { "es" },
            rep.reached
                .map_or("no interval".to_string(), |r| format!("±{:.2} %", r * 100.0)),
        );
    }
    for (steps, of) in [
        (&run.send.stop_steps, "medians"),
        (&run.send.stop_steps_of_means, "means"),
    ] {
        let Some(steps) = steps else { continue };
        let detectable = match (steps.detectable_min, steps.detectable_max) {
            (Some(lo), Some(hi)) if (hi - lo).abs() < 0.05 => {
                format!("; a step of {lo:.1} µs or more would have been found with 80 % power")
            }
            (Some(lo), Some(hi)) => format!(
                "; a step of {lo:.1}–{hi:.1} µs (by boundary) or more would have been found with 80 % power"
            ),
            _ => "; too few points to say what step could have been found".to_string(),
        };
        let _ = write!(
            h,
            "<p class=\"note\">Steps in the send stop latency (the sizes' {of}) at multiples of {:.0} bytes (one packet's payload): {} of {} boundaries show a significant rise (t test of the points on either side against their residual noise{}, 2.5 % each){detectable}.</p>",
            steps.period,
            steps.significant,
            steps.tested,
            steps
                .noise
                .map_or(String::new(), |s| format!(" of {s:.2} µs")),
        );
    }
}

fn path_of(p: &SizePoint, receive: bool) -> Option<&PathFigures> {
    if receive {
        p.receive.as_ref()
    } else {
        p.send.as_ref()
    }
}

fn latency_chart(run: &MessagesRun, path: &str, trends: &PathTrends, receive: bool) -> XyChart {
    // Each size's mean with the 95 % interval of the mean as a bar.
    let series_of = |name: String, f: &dyn Fn(&PathFigures) -> &analysis::sweep::Stat| {
        let figures = || {
            run.points
                .iter()
                .filter_map(|p| path_of(p, receive).map(|fig| (f64::from(p.size), f(fig))))
        };
        Series::new(
            name,
            figures().map(|(x, s)| (x, s.mean)).collect(),
            Style::Points,
        )
        .with_errors(
            figures()
                .filter_map(|(x, s)| s.positive_ci95().map(|ci| (x, ci.lo, ci.hi)))
                .collect(),
        )
    };
    let mut series = vec![
        series_of(format!("{path} start latency"), &|f| &f.start_us),
        series_of(format!("{path} stop latency"), &|f| &f.stop_us),
    ];
    let (lo, hi) = size_range(run);
    // Weak lines and lines with an intercept below zero are not drawn (the
    // legend says so); the others stop where they would fall below zero
    // (and say so).
    for (i, (name, fit)) in [("start trend", &trends.start), ("stop trend", &trends.stop)]
        .into_iter()
        .enumerate()
    {
        let Some(fit) = fit else { continue };
        if fit.weak {
            series[i].name.push_str(" (weak trend not drawn)");
            continue;
        }
        if fit.intercept_below_zero {
            series[i]
                .name
                .push_str(" (trend not drawn: intercept below 0, not linear near zero)");
            continue;
        }
        let curve = fit.curve(lo / 1000.0, hi / 1000.0, 50);
        series.push(Series {
            name: format!(
                "{name}{}: {}",
                if curve.clipped { " (≥ 0 drawn)" } else { "" },
                fit.formula("KB", "")
            ),
            points: curve.points.iter().map(|&(x, y)| (x * 1000.0, y)).collect(),
            style: Style::Dashed,
            errors: Vec::new(),
        });
    }
    XyChart {
        title: format!("{}: {path} path latency vs payload size", run.id),
        x_label: "payload (bytes)".into(),
        y_label: "latency (µs)".into(),
        series,
        log_x: false,
        log_y: false,
    }
}

fn size_range(run: &MessagesRun) -> (f64, f64) {
    let lo = run.points.first().map_or(0.0, |p| f64::from(p.size));
    let hi = run.points.last().map_or(1.0, |p| f64::from(p.size));
    (lo, hi.max(lo + 1.0))
}

fn throughput_chart(run: &MessagesRun) -> XyChart {
    // The study's KB/s (1000 B) as Mbit/s, the unit of the wire's rate.
    const MBPS_PER_KBPS: f64 = 8.0 / 1000.0;
    let mut series = vec![Series {
        name: "payload / send stop latency".into(),
        points: run
            .points
            .iter()
            .filter_map(|p| {
                p.send
                    .as_ref()
                    .map(|f| (f64::from(p.size), f.throughput_kbps * MBPS_PER_KBPS))
            })
            .collect(),
        style: Style::Line,
        errors: Vec::new(),
    }];
    if let Some(fit) = &run.send.throughput {
        let (lo, hi) = size_range(run);
        if fit.weak {
            // Its own legend entry: a chart of one series has no legend.
            series.push(Series::new(
                format!("trend weak (R² {:.2}): not drawn", fit.r2),
                Vec::new(),
                Style::Dashed,
            ));
        } else {
            let curve = fit.curve(lo / 100.0, hi / 100.0, 50);
            series.push(Series::new(
                format!(
                    "trend{}: {}, drawn in Mbit/s",
                    if curve.clipped { " (≥ 0 drawn)" } else { "" },
                    fit.formula("100 B", "KB/s")
                ),
                curve
                    .points
                    .iter()
                    .map(|&(x, y)| (x * 100.0, y * MBPS_PER_KBPS))
                    .collect(),
                Style::Dashed,
            ));
        }
    }
    if let Some(bps) = run.link_bps.filter(|b| b.is_finite() && *b > 0.0) {
        series.push(Series::new(
            format!("link rate {:.0} Mbit/s", bps / 1e6),
            vec![(0.0, bps / 1e6)],
            Style::Reference,
        ));
    }
    XyChart {
        title: format!("{}: payload throughput vs size (send path)", run.id),
        x_label: "payload (bytes)".into(),
        y_label: "throughput (Mbit/s)".into(),
        series,
        log_x: false,
        log_y: false,
    }
}

fn shares_chart(run: &MessagesRun, receive: bool) -> StackedChart {
    let x: Vec<f64> = run
        .points
        .iter()
        .filter(|p| path_of(p, receive).is_some())
        .map(|p| f64::from(p.size))
        .collect();
    let share = |p: &SizePoint, c: Option<Category>| -> f64 {
        let Some(f) = path_of(p, receive) else {
            return 0.0;
        };
        if f.stop_us.mean <= 0.0 {
            return 0.0;
        }
        let us = match c {
            Some(c) => f.categories_us.get(&c).copied().unwrap_or(0.0),
            None => f.other_us,
        };
        100.0 * us / f.stop_us.mean
    };
    // Instrumentation was taken out of the window: stacking it on top
    // would pass 100 %. Each category keeps its colour on every chart.
    let mut slots = Vec::new();
    let mut layers: Vec<(String, Vec<f64>)> = Category::ALL
        .iter()
        .filter(|&&c| c != Category::None && c != Category::Instrumentation)
        .map(|&c| {
            (
                c,
                crate::summary::readable(c.as_str()),
                run.points
                    .iter()
                    .filter(|p| path_of(p, receive).is_some())
                    .map(|p| share(p, Some(c)))
                    .collect::<Vec<f64>>(),
            )
        })
        .filter(|(_, _, v)| v.iter().any(|&s| s > 0.0))
        .map(|(c, name, v)| {
            slots.push(crate::summary::colour_slot(c.as_str()));
            (name, v)
        })
        .collect();
    slots.push(crate::summary::colour_slot(crate::summary::OTHER));
    layers.push((
        "other (in no span)".into(),
        run.points
            .iter()
            .filter(|p| path_of(p, receive).is_some())
            .map(|p| share(p, None))
            .collect(),
    ));
    StackedChart {
        title: format!(
            "{}: share of {} stop latency per category",
            run.id,
            if receive { "receive" } else { "send" }
        ),
        x_label: "payload (bytes)".into(),
        y_label: "% of stop latency".into(),
        x,
        layers,
        percent: true,
        colour_slots: slots,
        x_bytes: true,
    }
}

fn share_table(h: &mut String, run: &MessagesRun) {
    let _ = write!(h, "<table><tr><th class=\"l\">category</th><th>share of send stop latency ({})</th><th>share of receive stop latency</th><th>spans</th><th>spans below probe resolution</th></tr>", run.stop_at);
    for c in Category::ALL {
        let s = run.send.category_shares.get(c).copied().unwrap_or(0.0);
        let r = run.receive.category_shares.get(c).copied().unwrap_or(0.0);
        let resolution = run.probes.resolution.iter().find(|r| r.category == *c);
        if s == 0.0 && r == 0.0 && resolution.is_none() {
            continue;
        }
        let (spans, below) = resolution.map_or(("-".to_string(), "-".to_string()), |r| {
            (
                r.spans.to_string(),
                format!(
                    "{:.1} %",
                    r.below_resolution as f64 * 100.0 / r.spans.max(1) as f64
                ),
            )
        });
        let _ = write!(
            h,
            "<tr><td class=\"l\">{}</td><td>{:.1} %</td><td>{:.1} %</td><td>{spans}</td><td>{below}</td></tr>",
            escape(&category_label(*c, false)),
            s * 100.0,
            r * 100.0
        );
    }
    let _ = write!(
        h,
        "<tr><td class=\"l\">other (in no span and nothing on the wire: application, poll loop, waiting for acknowledgements)</td><td>{:.1} %</td><td>{:.1} %</td><td></td><td></td></tr></table>",
        run.send.other_share * 100.0,
        run.receive.other_share * 100.0
    );
    h.push_str("<p class=\"note\">Mean over the sizes of each category's exclusive time inside the message's window divided by its stop latency. A span is below the probe resolution when its time with the probes' cost removed is less than one probe's cost: its category's time is then mostly a floor, not a measurement. Instrumentation is the tool's own work that cannot leave the window (a pcapng capture's copy of each frame into its ring): it is shown, and taken out of the spans it ran in and out of the window's latency, so no stack category holds it.</p>");
}

/// A category's name in the report; instrumentation says that it is the
/// tool's and not counted as the stack's.
fn category_label(c: Category, short: bool) -> String {
    match (c, short) {
        (Category::Instrumentation, true) => "instrumentation (subtracted)".into(),
        (Category::Instrumentation, false) => {
            "instrumentation (the tool's own: capture copies; subtracted from the spans around it)"
                .into()
        }
        _ => c.as_str().to_string(),
    }
}

fn cpu_table(h: &mut String, run: &MessagesRun) {
    for (role, profile) in [
        ("sender", &run.sender_profile),
        ("receiver", &run.receiver_profile),
    ] {
        let Some(p) = profile else { continue };
        let _ = write!(
            h,
            "<table><tr><th class=\"l\">{role}: function (≥ 1 % of stack time)</th><th class=\"l\">category</th><th>calls</th><th>exclusive µs</th><th>% of stack</th><th>% of wall</th></tr>"
        );
        for f in p.functions.iter().filter(|f| f.share_of_stack >= 0.01) {
            let _ = write!(
                h,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.2}</td></tr>",
                escape(&f.name),
                f.category,
                f.calls,
                f.exclusive_ns / 1e3,
                f.share_of_stack * 100.0,
                f.share_of_wall * 100.0
            );
        }
        h.push_str("</table>");
        if p.instrumentation_ns > 0.0 {
            let _ = write!(
                h,
                "<p class=\"note\">{role}: {:.1} µs of instrumentation (the capture's copies, function <code>capture.copy</code>) are listed but not part of the stack time.</p>",
                p.instrumentation_ns / 1e3
            );
        }
    }
    let c = &run.cpu;
    let _ = write!(
        h,
        "<p class=\"note\">Process CPU over {:.2} s: sender thread {:.2} s user + {:.2} s system, receiver thread {:.2} s user + {:.2} s system (runner wait: {}; {}).</p>",
        c.wall_s,
        c.sender_user_s,
        c.sender_system_s,
        c.receiver_user_s,
        c.receiver_system_s,
        escape(c.runner_wait),
        if c.runner_wait == "block" {
            "a host thread blocks whenever it has nothing to do, so CPU time and % of wall are the work done"
        } else {
            "the threads poll their hosts while waiting, so CPU time includes spinning and % of wall is not load"
        }
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instrumentation_is_labelled_as_subtracted_and_the_rest_by_name() {
        for short in [true, false] {
            assert!(category_label(Category::Instrumentation, short).contains("subtracted"));
        }
        assert_eq!(category_label(Category::Link, false), "link");
        assert_eq!(category_label(Category::Checksum, true), "checksum");
    }
}
