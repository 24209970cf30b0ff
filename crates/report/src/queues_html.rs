//! HTML fragments for the queue, histogram and call-path figures: each
//! function returns a self-contained piece of HTML (tables and inline SVG
//! plots, every text escaped) that the page can place in a run's section.
//! They use the page's classes (`note`, `plots`, `l` for left-aligned
//! cells).
//!
//! * [`queue`]: one queue on one thread (the SunOS study's Figures 11–16):
//!   its figures, length over time in bytes and in packets, delay over
//!   time, the delay histogram, arrival and departure rates;
//! * [`queues`]: every queue, a summary table and then each;
//! * [`span_histograms`]: per-layer (or per-function) processing-delay
//!   histograms: a table of order statistics and the distributions;
//! * [`call_tree`]: the common call path as an indented table.

use std::fmt::Write;

use analysis::callpath::CallTree;
use analysis::histogram::{Histogram, SpanHistograms, Summary, DEFAULT_BINS_PER_DECADE};
use analysis::queues::QueueTrace;

use crate::html::escape;
use crate::plot::{self, HistogramChart, Series, Style, XyChart};

/// Every queue: a table with one row per queue and thread, then each
/// queue's section.
pub fn queues(all: &[QueueTrace]) -> String {
    let mut h = queue_table(all);
    for q in all {
        h.push_str(&queue(q));
    }
    h
}

/// The summary table of [`queues`] alone: one row per queue and thread.
pub fn queue_table(all: &[QueueTrace]) -> String {
    let mut h = String::new();
    if all.is_empty() {
        h.push_str("<p class=\"note\">No queue probes in this trace.</p>");
        return h;
    }
    h.push_str("<table><tr><th class=\"l\">queue</th><th>thread</th><th>enqueues</th><th>dequeues</th><th>max length (packets)</th><th>max length (bytes)</th><th>mean length (bytes)</th><th>median delay µs</th><th>p99 delay µs</th><th>unmatched dequeues</th></tr>");
    for q in all {
        let d = q.stats.delay;
        let _ = write!(
            h,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.0}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&q.queue),
            q.thread,
            q.counts.enqueues,
            q.counts.dequeues,
            q.stats.max_packets,
            q.stats.max_bytes,
            q.stats.mean_bytes,
            us(d.map(|d| d.median)),
            us(d.map(|d| d.p99)),
            q.counts.unmatched_dequeues,
        );
    }
    h.push_str("</table>");
    h
}

/// One queue on one thread.
pub fn queue(q: &QueueTrace) -> String {
    let mut h = String::new();
    let name = format!("{} (thread {})", q.queue, q.thread);
    let _ = write!(h, "<h4>Queue {}</h4>", escape(&name));
    let c = &q.counts;
    let pairing = match (c.stream_flows, c.datagram_flows) {
        (0, _) => "datagrams, first in first out per flow and message number or interface",
        (_, 0) => "a byte stream, by stream offset",
        _ => "byte streams by offset and datagrams in order",
    };
    let _ = write!(
        h,
        "<p class=\"note\">Paired as {pairing}: {} enqueues ({} bytes), {} dequeues ({} bytes), {} with a delay; {} dequeues ({} bytes) of what was queued before the trace began; {} left queued ({} bytes) at its end{}.</p>",
        c.enqueues,
        c.enqueued_bytes,
        c.dequeues,
        c.dequeued_bytes,
        c.matched_dequeues,
        c.unmatched_dequeues,
        c.unmatched_bytes,
        c.left_packets,
        c.left_bytes,
        if c.inconsistent > 0 {
            format!("; {} records with offsets that do not advance were ignored", c.inconsistent)
        } else {
            String::new()
        },
    );
    let s = &q.stats;
    let r = &q.rates;
    h.push_str("<table><tr><th class=\"l\">figure</th><th>packets</th><th>bytes</th></tr>");
    let _ = write!(
        h,
        "<tr><td class=\"l\">max length</td><td>{}</td><td>{}</td></tr>\
         <tr><td class=\"l\">mean length (time-weighted)</td><td>{:.2}</td><td>{:.0}</td></tr>\
         <tr><td class=\"l\">arrival rate (per s, over {:.3} ms active)</td><td>{:.0}</td><td>{:.0}</td></tr>\
         <tr><td class=\"l\">departure rate (per s)</td><td>{:.0}</td><td>{:.0}</td></tr></table>",
        s.max_packets,
        s.max_bytes,
        s.mean_packets,
        s.mean_bytes,
        r.active_ns / 1e6,
        r.arrival_packets_per_s,
        r.arrival_bytes_per_s,
        r.departure_packets_per_s,
        r.departure_bytes_per_s,
    );
    summary_table(&mut h, "delay (oldest byte of each dequeue)", s.delay);

    h.push_str("<div class=\"plots\">");
    let ms = |t: f64| t / 1e6;
    for (unit, get) in [
        (
            "bytes",
            (|p| p.bytes as f64) as fn(&analysis::queues::LengthPoint) -> f64,
        ),
        ("packets", |p| p.packets as f64),
    ] {
        h.push_str(&plot::xy_chart(&XyChart {
            title: format!("{name}: length in {unit}"),
            x_label: "time (ms)".into(),
            y_label: format!("queue length ({unit})"),
            series: vec![Series {
                name: unit.into(),
                points: q.length.iter().map(|p| (ms(p.t_ns), get(p))).collect(),
                style: Style::Steps,
                errors: Vec::new(),
            }],
            log_x: false,
            log_y: false,
        }));
    }
    h.push_str(&plot::xy_chart(&XyChart {
        title: format!("{name}: delay of each dequeue"),
        x_label: "time (ms)".into(),
        y_label: "delay (µs)".into(),
        series: vec![Series {
            name: "delay".into(),
            points: q
                .delays
                .iter()
                .map(|d| (ms(d.t_ns), d.delay_ns / 1e3))
                .collect(),
            style: Style::Points,
            errors: Vec::new(),
        }],
        log_x: false,
        log_y: false,
    }));
    h.push_str(&histogram_chart(
        &format!("{name}: delay histogram"),
        "delay (µs)",
        &q.delay_histogram(DEFAULT_BINS_PER_DECADE),
    ));
    let rate = |f: fn(&analysis::queues::RateWindow) -> f64| -> Vec<(f64, f64)> {
        q.windows.iter().map(|w| (ms(w.t_ns), f(w))).collect()
    };
    h.push_str(&plot::xy_chart(&XyChart {
        title: format!(
            "{name}: arrival and departure rate ({:.3} ms windows)",
            q.window_ns / 1e6
        ),
        x_label: "time (ms)".into(),
        y_label: "packets per second".into(),
        series: vec![
            Series {
                name: "arrivals".into(),
                points: rate(|w| w.arrival_packets_per_s),
                style: Style::Steps,
                errors: Vec::new(),
            },
            Series {
                name: "departures".into(),
                points: rate(|w| w.departure_packets_per_s),
                style: Style::Steps,
                errors: Vec::new(),
            },
        ],
        log_x: false,
        log_y: false,
    }));
    h.push_str("</div>");
    if q.length_events > q.length.len() as u64 {
        let _ = write!(
            h,
            "<p class=\"note\">The length plots show {} of {} points: each stretch's maximum and its last point.</p>",
            q.length.len(),
            q.length_events
        );
    }
    h
}

/// Per-layer (or per-function) processing-delay histograms: a table of
/// order statistics of the inclusive and exclusive times, and one plot of
/// each kind with a line per group.
pub fn span_histograms(title: &str, groups: &[SpanHistograms]) -> String {
    let mut h = String::new();
    let _ = write!(h, "<h4>{}</h4>", escape(title));
    if groups.is_empty() {
        h.push_str("<p class=\"note\">No spans.</p>");
        return h;
    }
    h.push_str("<table><tr><th class=\"l\">name</th><th class=\"l\">time</th><th>spans</th><th>min µs</th><th>median µs</th><th>p90 µs</th><th>p99 µs</th><th>max µs</th><th>mean µs</th></tr>");
    for g in groups {
        for (kind, hist) in [("inclusive", &g.inclusive), ("exclusive", &g.exclusive)] {
            let s = hist.summary;
            let _ = write!(
                h,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{kind}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&g.name),
                g.spans,
                us(s.map(|s| s.min)),
                us(s.map(|s| s.median)),
                us(s.map(|s| s.p90)),
                us(s.map(|s| s.p99)),
                us(s.map(|s| s.max)),
                us(s.map(|s| s.mean)),
            );
        }
    }
    h.push_str("</table><div class=\"plots\">");
    for (kind, pick) in [
        (
            "inclusive",
            (|g| &g.inclusive) as fn(&SpanHistograms) -> &Histogram,
        ),
        ("exclusive", |g| &g.exclusive),
    ] {
        h.push_str(&plot::xy_chart(&XyChart {
            title: format!("{title}: {kind} time per span"),
            x_label: "time (µs)".into(),
            y_label: "spans".into(),
            series: groups
                .iter()
                .map(|g| Series {
                    name: g.name.clone(),
                    points: distribution(pick(g)),
                    style: Style::Steps,
                    errors: Vec::new(),
                })
                .collect(),
            log_x: true,
            log_y: false,
        }));
    }
    h.push_str("</div>");
    let zeros: u64 = groups.iter().map(|g| g.exclusive.non_positive).sum();
    if zeros > 0 {
        let _ = write!(
            h,
            "<p class=\"note\">{zeros} spans with no exclusive time left after the probe overhead was taken out are in the table but not on the log axis.</p>"
        );
    }
    h
}

/// The call tree as an indented table, in the tree's order (depth first,
/// siblings by first occurrence).
pub fn call_tree(title: &str, tree: &CallTree) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<h4>{}</h4><p class=\"note\">Over {} measured message{} (warm-up left out); times are means per message that passes through the node, probe overhead removed.{}</p>",
        escape(title),
        tree.messages,
        if tree.messages == 1 { "" } else { "s" },
        if tree.too_deep > 0 {
            format!(" {} spans nested too deep are left out.", tree.too_deep)
        } else {
            String::new()
        }
    );
    if tree.nodes.is_empty() {
        h.push_str("<p class=\"note\">No calls.</p>");
        return h;
    }
    h.push_str("<table><tr><th class=\"l\">function</th><th class=\"l\">layer</th><th class=\"l\">category</th><th>% of messages</th><th>calls per message</th><th>inclusive µs</th><th>exclusive µs</th></tr>");
    for n in &tree.nodes {
        let _ = write!(
            h,
            "<tr><td class=\"l\" style=\"padding-left:{:.1}em\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{:.0}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td></tr>",
            0.6 + 1.5 * f64::from(n.depth),
            escape(&n.name),
            n.layer,
            n.category,
            n.share * 100.0,
            n.calls_per_message,
            n.inclusive_ns / 1e3,
            n.exclusive_ns / 1e3,
        );
    }
    h.push_str("</table>");
    h
}

/// A histogram of nanosecond samples, drawn in microseconds.
fn histogram_chart(title: &str, x_label: &str, hist: &Histogram) -> String {
    plot::histogram_chart(&HistogramChart {
        title: title.to_string(),
        x_label: x_label.to_string(),
        buckets: hist
            .buckets
            .iter()
            .map(|b| (b.lo / 1e3, b.hi / 1e3, b.count))
            .collect(),
        log_x: true,
    })
}

/// Bucket counts as a staircase over the bucket edges, in microseconds:
/// each count holds from its bucket's lower edge, and drops to zero at the
/// upper edge when the next bucket does not start there (empty buckets are
/// not listed).
fn distribution(hist: &Histogram) -> Vec<(f64, f64)> {
    let mut points: Vec<(f64, f64)> = Vec::with_capacity(2 * hist.buckets.len());
    for (i, b) in hist.buckets.iter().enumerate() {
        points.push((b.lo / 1e3, b.count as f64));
        let adjacent = hist.buckets.get(i + 1).is_some_and(|next| next.lo <= b.hi);
        if !adjacent {
            points.push((b.hi / 1e3, 0.0));
        }
    }
    points
}

fn summary_table(h: &mut String, what: &str, s: Option<Summary>) {
    let Some(s) = s else {
        let _ = write!(h, "<p class=\"note\">No {} samples.</p>", escape(what));
        return;
    };
    let _ = write!(
        h,
        "<table><tr><th class=\"l\">{}</th><th>samples</th><th>min µs</th><th>median µs</th><th>p99 µs</th><th>max µs</th><th>mean µs</th></tr><tr><td class=\"l\"></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr></table>",
        escape(what),
        s.count,
        us(Some(s.min)),
        us(Some(s.median)),
        us(Some(s.p99)),
        us(Some(s.max)),
        us(Some(s.mean)),
    );
}

/// Nanoseconds as microseconds for a table cell; empty when unknown.
fn us(ns: Option<f64>) -> String {
    match ns {
        Some(v) if v.is_finite() => format!("{:.2}", v / 1e3),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use analysis::callpath::{self, MessageSpans};
    use analysis::histogram::layer_histograms;
    use analysis::queues::{self as q, QueueOptions};
    use analysis::{all_spans, TraceView};
    use probe::{Category, Kind, Layer, Location, Record, Trace, TraceHeader};

    const LOCATIONS: &[Location] = &[
        Location {
            name: "ifq.in",
            layer: Layer::Link,
            kind: Kind::Enqueue,
            category: Category::Link,
            queue: Some("<iface & co>"),
        },
        Location {
            name: "ifq.out",
            layer: Layer::Link,
            kind: Kind::Dequeue,
            category: Category::Link,
            queue: Some("<iface & co>"),
        },
        Location {
            name: "tcp.<out>.enter",
            layer: Layer::Transport,
            kind: Kind::SpanEnter,
            category: Category::ProtocolSend,
            queue: None,
        },
        Location {
            name: "tcp.<out>.exit",
            layer: Layer::Transport,
            kind: Kind::SpanExit,
            category: Category::ProtocolSend,
            queue: None,
        },
        Location {
            name: "ipv6.output.enter",
            layer: Layer::Network,
            kind: Kind::SpanEnter,
            category: Category::ProtocolSend,
            queue: None,
        },
        Location {
            name: "ipv6.output.exit",
            layer: Layer::Network,
            kind: Kind::SpanExit,
            category: Category::ProtocolSend,
            queue: None,
        },
    ];

    fn view() -> TraceView {
        let mut records = Vec::new();
        for i in 0..20u64 {
            let t = i * 10_000;
            let r =
                |dt: u64, loc: u16, len: u32| Record::new(t + dt, probe::Loc(loc), len, 1, 0, 1);
            records.push(r(0, 2, 0));
            records.push(r(1_000, 4, 0));
            records.push(r(1_500, 0, 1514));
            records.push(r(2_000 + i * 10, 5, 0));
            records.push(r(3_000, 3, 0));
            records.push(r(5_000 + i * 100, 1, 1514));
        }
        let trace = Trace::new(TraceHeader::new(1e9, 0.0, 0, "t"), LOCATIONS, records);
        TraceView::new(&trace).unwrap()
    }

    #[test]
    fn a_queue_fragment_has_its_figures_and_five_plots_with_names_escaped() {
        let v = view();
        let all = q::analyse(&v, &QueueOptions::default());
        assert_eq!(all.len(), 1);
        let html = queues(&all);
        assert!(!html.contains("<iface"), "unescaped queue name");
        assert!(html.contains("&lt;iface &amp; co&gt; (thread 1)"));
        assert_eq!(html.matches("<svg").count(), 5);
        assert_eq!(html.matches("</svg>").count(), 5);
        // 20 frames, each 3.5 µs + i·0.1 µs in the queue: median 4.4 µs.
        assert!(html.contains("<td>20</td><td>20</td>"), "{html}");
        assert!(html.contains("<td>4.40</td>"), "median delay: {html}");
        assert!(html.contains("Paired as datagrams"));
        assert!(!html.contains("NaN"));
    }

    #[test]
    fn an_empty_queue_list_says_so() {
        assert!(queues(&[]).contains("No queue probes"));
    }

    #[test]
    fn layer_histograms_are_a_table_and_two_plots() {
        let v = view();
        let groups = layer_histograms(&v, &all_spans(&v), 10);
        let html = span_histograms("Processing <delay>", &groups);
        assert!(html.contains("<h4>Processing &lt;delay&gt;</h4>"));
        // Two layers, inclusive and exclusive rows each.
        assert_eq!(html.matches("<tr>").count(), 1 + 4);
        assert_eq!(html.matches("<svg").count(), 2);
        // Network spans: 1000 + 10·i ns, i in 0..20: median 1.09 µs.
        assert!(html.contains("<td class=\"l\">network</td><td class=\"l\">inclusive</td><td>20</td><td>1.00</td><td>1.09</td>"), "{html}");
        assert!(span_histograms("x", &[]).contains("No spans"));
        // Gaps between buckets drop to zero on the staircase.
        let hist = Histogram::from_samples([1_000.0, 1_100.0, 100_000.0], 10);
        assert_eq!(
            distribution(&hist),
            [
                (1.0, 2.0),
                (hist.buckets[0].hi / 1e3, 0.0),
                (100.0, 1.0),
                (hist.buckets[1].hi / 1e3, 0.0)
            ]
        );
    }

    #[test]
    fn the_call_tree_is_indented_by_depth_in_order() {
        let v = view();
        let spans = all_spans(&v);
        let thread = &spans[&1];
        let roots: Vec<Vec<usize>> = callpath::message_roots(&v, thread, 1, None)
            .into_iter()
            .map(|(_, r)| r)
            .collect();
        // No message marks in this table: one message of every root.
        assert!(roots.is_empty());
        let all = callpath::top_level_in(thread, 0, usize::MAX);
        let tree = callpath::build(
            &v,
            &[MessageSpans {
                spans: thread,
                roots: &all,
            }],
        );
        let html = call_tree("Send <path>", &tree);
        assert!(html.contains("<h4>Send &lt;path&gt;</h4>"));
        let out = html.find("tcp.&lt;out&gt;").expect("escaped name");
        let ipv6 = html.find("ipv6.output").unwrap();
        assert!(out < ipv6);
        assert!(html.contains("padding-left:0.6em\">tcp.&lt;out&gt;"));
        assert!(html.contains("padding-left:2.1em\">ipv6.output"));
        // 20 calls in one message, 2.5 µs + 10 ns per i on average inside.
        assert!(html.contains("<td>100</td><td>20.00</td>"), "{html}");
        assert!(call_tree("t", &CallTree::default()).contains("No calls"));
    }
}
