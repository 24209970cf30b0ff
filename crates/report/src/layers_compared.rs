//! XTP beside TCP per layer and per category: for an experiment with a
//! traced messages run of each over the same family and link, the same
//! messages' send and receive windows split by the layer and by the cost
//! category of the stack's spans, each part's mean with its 95 % interval
//! and XTP's difference from TCP (Welch). The XTP study (Taler 1992) could
//! compare the two only end to end; this is the split it could not make.

use std::fmt::Write;

use analysis::sweep::{PathFigures, SizePoint, Split, Stat};
use probe::{Category, Layer};
use stats::Difference;

use crate::html::escape;
use crate::model::{Experiment, MessagesRun};

/// Most sizes a table shows (chosen evenly over the common sizes).
const MAX_SIZES: usize = 6;

/// What XTP does differently by design, for the reader of the figures
/// (docs/xtp.md).
const DESIGN_NOTE: &str = "How XTP differs by design (docs/xtp.md): it has no congestion control (flow control by the receiver's <code>alloc</code> and optional rate control only); it acknowledges only when asked, the sender setting SREQ on the last packet of each burst, so the receiver sends one control packet per message instead of TCP's ACK per second segment; through the socket interface the data are copied five times (the write into the association's send stream, a packet's data out of it and into the packet buffer, the arrival into the receive stream, the read), each a <code>data.copy</code> span in the host layer; its header is 32 bytes (TCP's 20 plus 12 of timestamps) and its checksum covers header and data unless NOCHECK. Both run with the trace option on their packets, so a packet carries 8 bytes less payload than untraced.";

/// The section, or nothing when the experiment lacks an XTP or a TCP
/// messages run over the same family and link.
pub fn xtp_beside_tcp(h: &mut String, experiment: &Experiment) {
    let Some((xtp, tcp)) = pair(experiment) else {
        return;
    };
    let sizes_of = |run: &MessagesRun| run.points.iter().map(|p| p.size).collect::<Vec<u32>>();
    let sizes = common_sizes(&sizes_of(xtp), &sizes_of(tcp));
    if sizes.is_empty() {
        return;
    }
    let _ = write!(
        h,
        "<h3 id=\"{}-xtp-beside-tcp\">{}: XTP beside TCP, per layer and per cost category</h3>\
         <p class=\"note\">Runs <code>{}</code> and <code>{}</code>: the same message sizes, one message at a time, over {} on the <code>{}</code> link; each cell is the mean time per message inside the window with the half-width of its 95 % interval and n; <b>XTP − TCP</b> is Welch's difference with its 95 % interval (<b>same</b>: not significant at 95 %). A message with no time in a part counts 0 there. Per message the layers, <b>wire</b> and <b>other</b> add up to the window, as do the categories and <b>other</b>; the <b>window</b> row is the latency itself and <b>sum</b> says whether the parts' means add up to it. Layers: the layer of each span's probe site (<b>host</b>: buffers and data copies, charged to no protocol layer; <b>transport</b>: <code>xtp.*</code> or <code>tcp.*</code> spans and the checksum). A span counts where it lies wholly inside the window: the receive window ends when the last byte is queued for the reader, inside the last packet's input spans, so their time is left out of it for both protocols alike (a one-packet message shows no protocol-receive time there).</p>\
         <p class=\"note\">{DESIGN_NOTE}</p><p class=\"note\">{}</p>",
        escape(&experiment.name),
        escape(&experiment.name),
        escape(&xtp.id),
        escape(&tcp.id),
        escape(&xtp.family),
        escape(&xtp.link),
        machine_note(xtp, tcp),
    );
    // The stop windows by layer and by category, the start windows (the
    // first packet's share) by layer.
    for (path, receive) in [("send", false), ("receive", true)] {
        let stop = if receive {
            "receive stop".to_string()
        } else {
            format!("send stop ({})", xtp.stop_at)
        };
        for (window, name, by) in [
            (Window::Stop, &stop, By::Layer),
            (Window::Stop, &stop, By::Category),
            (Window::Start, &format!("{path} start"), By::Layer),
        ] {
            let what = Table {
                receive,
                window,
                by,
                path,
                name,
            };
            table(h, xtp, tcp, &sizes, &what);
        }
    }
}

/// Which of a path's two windows.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Window {
    Start,
    Stop,
}

impl Window {
    fn split(self, f: &PathFigures) -> &Split {
        match self {
            Window::Start => &f.start_split,
            Window::Stop => &f.stop_split,
        }
    }

    fn latency(self, f: &PathFigures) -> &Stat {
        match self {
            Window::Start => &f.start_us,
            Window::Stop => &f.stop_us,
        }
    }
}

/// One table: a path's window split one way.
struct Table<'a> {
    receive: bool,
    window: Window,
    by: By,
    path: &'a str,
    /// The window's name in the caption.
    name: &'a str,
}

/// The runs ran one after the other: what the machine was doing in each.
fn machine_note(xtp: &MessagesRun, tcp: &MessagesRun) -> String {
    let trip = |r: &MessagesRun| match (r.gauges.core_trip_min_ns, r.gauges.core_trip_max_ns) {
        (Some(lo), Some(hi)) => format!("core round trip {lo:.0}–{hi:.0} ns"),
        _ => "core round trip not measured".into(),
    };
    format!(
        "The two runs ran one after the other ({} over {:.2} s wall, {}; {} over {:.2} s, {}), not interleaved: a machine that got busier between them slows every layer of the later one alike, which a difference in one layer alone is not.",
        escape(&xtp.id),
        xtp.cpu.wall_s,
        trip(xtp),
        escape(&tcp.id),
        tcp.cpu.wall_s,
        trip(tcp),
    )
}

/// The first XTP messages run and a TCP one over its family and link.
fn pair(experiment: &Experiment) -> Option<(&MessagesRun, &MessagesRun)> {
    let xtp = experiment
        .runs
        .iter()
        .find(|r| r.protocol.eq_ignore_ascii_case("xtp"))?;
    let tcp = experiment.runs.iter().find(|r| {
        r.protocol.eq_ignore_ascii_case("tcp") && r.family == xtp.family && r.link == xtp.link
    })?;
    Some((xtp, tcp))
}

/// Sizes both runs measured, at most [`MAX_SIZES`] spread evenly from the
/// smallest to the largest.
fn common_sizes(a: &[u32], b: &[u32]) -> Vec<u32> {
    let both: Vec<u32> = a.iter().copied().filter(|s| b.contains(s)).collect();
    if both.len() <= MAX_SIZES {
        return both;
    }
    let last = both.len() - 1;
    let mut picked: Vec<u32> = (0..MAX_SIZES)
        .map(|i| both[i * last / (MAX_SIZES - 1)])
        .collect();
    picked.dedup();
    picked
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum By {
    Layer,
    Category,
}

/// One part of a window: its name and where its figure is.
enum Part {
    Layer(Layer),
    Category(Category),
    Other,
}

impl Part {
    fn name(&self) -> String {
        match self {
            Part::Layer(l) => l.to_string(),
            Part::Category(c) => c.to_string(),
            Part::Other => "other".into(),
        }
    }

    fn of<'a>(&self, split: &'a Split) -> Option<&'a Stat> {
        match self {
            Part::Layer(l) => split.layers.get(l),
            Part::Category(c) => split.categories.get(c),
            Part::Other => split.other.as_ref(),
        }
    }
}

/// The parts of a split, in the order of their enums: layers then `wire`
/// (by layer), or the categories but the tool's own (by category); then
/// `other`. Parts neither run has are left out.
fn parts(splits: &[&Split], by: By) -> Vec<Part> {
    let mut parts: Vec<Part> = match by {
        By::Layer => {
            let mut layers: Vec<Part> = Layer::ALL
                .iter()
                .filter(|l| splits.iter().any(|s| s.layers.contains_key(l)))
                .map(|&l| Part::Layer(l))
                .collect();
            if splits.iter().any(|s| s.wire().is_some()) {
                layers.push(Part::Category(Category::Wire));
            }
            layers
        }
        By::Category => Category::ALL
            .iter()
            .filter(|&&c| c != Category::Instrumentation)
            .filter(|c| splits.iter().any(|s| s.categories.contains_key(c)))
            .map(|&c| Part::Category(c))
            .collect(),
    };
    parts.push(Part::Other);
    parts
}

fn path(point: Option<&SizePoint>, receive: bool) -> Option<&PathFigures> {
    let p = point?;
    if receive {
        p.receive.as_ref()
    } else {
        p.send.as_ref()
    }
}

fn table<'a>(
    h: &mut String,
    xtp: &'a MessagesRun,
    tcp: &'a MessagesRun,
    sizes: &[u32],
    what: &Table,
) {
    let Table {
        receive,
        window,
        by,
        path: side,
        name,
    } = *what;
    let _ = write!(
        h,
        "<table><caption>{side} path, window <b>{}</b>, split by {}: µs per message</caption><tr><th class=\"l\">size</th><th class=\"l\">part</th><th>XTP ({})</th><th>TCP ({})</th><th>XTP − TCP</th></tr>",
        escape(name),
        if by == By::Layer { "layer" } else { "cost category" },
        escape(&xtp.id),
        escape(&tcp.id),
    );
    for &size in sizes {
        let at = |run: &'a MessagesRun| path(run.points.iter().find(|p| p.size == size), receive);
        let (Some(x), Some(t)) = (at(xtp), at(tcp)) else {
            let _ = write!(
                h,
                "<tr><td class=\"l\">{}</td><td class=\"l\" colspan=\"4\">not measured on this path in both runs</td></tr>",
                crate::units::size(u64::from(size))
            );
            continue;
        };
        let (xs, ts) = (window.split(x), window.split(t));
        let parts = parts(&[xs, ts], by);
        let label = crate::units::size(u64::from(size));
        for part in &parts {
            row(h, &label, &part.name(), part.of(xs), part.of(ts));
        }
        let (xl, tl) = (window.latency(x), window.latency(t));
        row(h, &label, "window", Some(xl), Some(tl));
        let sums = [(xs, xl), (ts, tl)].map(|(split, total)| closes(split, total, &parts));
        let _ = write!(
            h,
            "<tr><td class=\"l\">{label}</td><td class=\"l\">sum of the parts' means</td><td>{}</td><td>{}</td><td></td></tr>",
            sums[0], sums[1]
        );
    }
    h.push_str("</table>");
}

/// Whether the parts' means add up to the window's mean (they must: the
/// split is of each message's window).
fn closes(split: &Split, total: &Stat, parts: &[Part]) -> String {
    let sum: f64 = parts
        .iter()
        .filter_map(|p| p.of(split))
        .map(|s| s.mean)
        .sum();
    let window = total.mean;
    if (sum - window).abs() <= 1e-6 * window.abs().max(1.0) {
        format!("{sum:.2} = window")
    } else {
        format!("<b>{sum:.2}: does not add up to {window:.2}</b>")
    }
}

/// One part's row: its value on the first side, on the second, and the
/// first less the second (Welch) or `same` when not significant.
pub(crate) fn row(h: &mut String, size: &str, part: &str, xtp: Option<&Stat>, tcp: Option<&Stat>) {
    let difference = match (tcp, xtp) {
        (Some(t), Some(x)) => Difference::welch(t, x).map_or("-".into(), |d| {
            let ci = d.diff_ci95;
            format!(
                "{:+.2} ({:+.2} … {:+.2}){}",
                d.diff,
                ci.lo,
                ci.hi,
                if d.significant { "" } else { " same" }
            )
        }),
        _ => "-".into(),
    };
    let _ = write!(
        h,
        "<tr><td class=\"l\">{size}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{difference}</td></tr>",
        escape(part),
        cell(xtp),
        cell(tcp),
    );
}

/// Mean ± half-width (n); a part whose interval is wider than its mean is
/// marked noisy, one of a single message has no interval.
pub(crate) fn cell(stat: Option<&Stat>) -> String {
    let Some(s) = stat else {
        return "-".into();
    };
    match s.half_width() {
        Some(half) if half > s.mean.abs() && s.mean != 0.0 => {
            format!("{:.2} ± {:.2} (n {}) <i>noisy</i>", s.mean, half, s.n)
        }
        Some(half) => format!("{:.2} ± {:.2} (n {})", s.mean, half, s.n),
        None => format!("{:.2} (n {}, no interval)", s.mean, s.n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::messages::CategoryTimes;

    fn window(transport: f64, host: f64, wire: f64, other: f64) -> CategoryTimes {
        let mut t = CategoryTimes::default();
        t.by_layer.insert(Layer::Transport, transport);
        t.by_layer.insert(Layer::Host, host);
        t.by_category.insert(Category::ProtocolSend, transport);
        t.by_category.insert(Category::DataMove, host);
        t.by_category.insert(Category::Wire, wire);
        t.other = other;
        t
    }

    fn figures(windows: &[CategoryTimes]) -> PathFigures {
        let stop: Vec<f64> = windows
            .iter()
            .map(|w| (w.stack_ns() + w.wire_ns() + w.other) / 1e3)
            .collect();
        let refs: Vec<&CategoryTimes> = windows.iter().collect();
        PathFigures {
            stop_us: Stat::of(&stop).unwrap(),
            stop_split: Split::of(&refs),
            ..PathFigures::default()
        }
    }

    #[test]
    fn the_parts_of_a_split_add_up_to_its_window() {
        let f = figures(&[
            window(4_000.0, 1_000.0, 2_000.0, 500.0),
            window(6_000.0, 1_000.0, 0.0, 700.0),
        ]);
        let by_layer = parts(&[&f.stop_split], By::Layer);
        let names: Vec<String> = by_layer.iter().map(Part::name).collect();
        assert_eq!(names, ["transport", "host", "wire", "other"]);
        assert_eq!(
            closes(&f.stop_split, &f.stop_us, &by_layer),
            "7.60 = window"
        );
        let by_category = parts(&[&f.stop_split], By::Category);
        assert_eq!(
            closes(&f.stop_split, &f.stop_us, &by_category),
            "7.60 = window"
        );
        // Transport 4 and 6 µs: mean 5 with an interval.
        let transport = Part::Layer(Layer::Transport).of(&f.stop_split).unwrap();
        assert_eq!((transport.mean, transport.n), (5.0, 2));
        // A part left out shows.
        let short = &by_layer[..2];
        assert!(closes(&f.stop_split, &f.stop_us, short).contains("does not add up"));
    }

    #[test]
    fn many_sizes_are_thinned_to_the_ends_and_between() {
        let all: Vec<u32> = (0..11).map(|k| 16 << k).collect();
        let picked = common_sizes(&all, &all);
        assert_eq!(picked.len(), MAX_SIZES);
        assert_eq!((picked[0], *picked.last().unwrap()), (16, 16 << 10));
        assert_eq!(common_sizes(&[16, 1024], &[1024, 4096]), [1024]);
    }
}
