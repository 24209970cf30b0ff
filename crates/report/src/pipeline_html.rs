//! The HTML of a pipeline stage's run (the SunOS study's Figure 18): its
//! figures, the three processes' on/off states over a few block periods
//! and the transmit socket's send queue beside them.

use std::fmt::Write;

use crate::html::escape;
use crate::model::PipelineStageRun;
use crate::plot::{self, Series, Style, XyChart};

/// Each lane's height when on; lanes sit one unit apart.
const ON: f64 = 0.8;

pub(crate) fn section(h: &mut String, experiment: &str, run: &PipelineStageRun) {
    crate::toc::run_heading(h, experiment, &run.id, &run.title);
    let _ = write!(
        h,
        "<p class=\"note\">{} blocks of {} B through one stage (receive, compute, transmit) over the kernel's TCP/{} loopback, {:.0} µs of compute per block ({} iterations on an idle CPU); every on-interval is in <code>{}</code>. A process is on while it has a block to read, compute or write; waiting for the next process to take a block is off.</p>",
        run.blocks,
        run.block_bytes,
        escape(&run.family),
        run.compute_us,
        run.compute_iterations,
        escape(&run.csv),
    );
    for note in &run.notes {
        let _ = write!(h, "<p class=\"note\">{}</p>", escape(note));
    }
    crate::sweep_html::table_html(h, &run.table);
    h.push_str("<div class=\"plots\">");
    h.push_str(&plot::xy_chart(&activity_chart(run)));
    if !run.send_queue.is_empty() {
        h.push_str(&plot::xy_chart(&queue_chart(run)));
    }
    h.push_str("</div>");
}

/// The on/off states as steps, one lane per process (transmit lowest).
fn activity_chart(run: &PipelineStageRun) -> XyChart {
    let width = run.window_ms[1] - run.window_ms[0];
    let series = run
        .lanes
        .iter()
        .rev()
        .enumerate()
        .map(|(lane, (name, on))| {
            let base = lane as f64;
            let mut points = vec![(0.0, base)];
            for [start, end] in on {
                points.push((*start, base + ON));
                points.push((*end, base));
            }
            points.push((width, base));
            Series::new(format!("{name} (on = raised)"), points, Style::Steps)
        })
        .collect();
    XyChart {
        title: format!("Process activity over {width:.1} ms of steady blocks (Figure 18)"),
        x_label: "time (ms)".into(),
        y_label: "on / off, one lane per process".into(),
        series,
        log_x: false,
        log_y: false,
    }
}

fn queue_chart(run: &PipelineStageRun) -> XyChart {
    let points = run
        .send_queue
        .iter()
        .map(|[t, bytes]| (*t, bytes / 1024.0))
        .collect();
    XyChart {
        title: "Transmit socket's send queue before and after each write".into(),
        x_label: "time (ms)".into(),
        y_label: "unacknowledged (KiB)".into(),
        series: vec![Series::new("send queue", points, Style::Steps)],
        log_x: false,
        log_y: false,
    }
}
