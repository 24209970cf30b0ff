//! The HTML of a kernel messages run (issue 19) and of the kernel beside
//! the reference stack, per layer, at the same protocol, family and
//! (nearest) size.

use std::fmt::Write;

use analysis::kernel_messages::{KernelLayer, KernelPathFigures, KernelSizePoint};
use analysis::sweep::PathFigures;
use probe::{Category, Layer};
use stats::{Estimate, PositiveReading};

use crate::html::escape;
use crate::kernel_runs::{KernelRun, ProbeCostFigures};
use crate::model::{Experiment, MachineGauges, MessagesRun, Table};
use crate::plot::{self, Series, ShareBars, StackedChart, Style, XyChart};

mod queues;

/// `12.3 µs [11.9, 12.7] (n 40)`. A latency whose t interval reaches
/// below zero is too skewed for its mean (a few messages waited long):
/// its median and the median's distribution-free interval instead.
fn est(e: &Estimate, unit: &str) -> String {
    match e.positive_reading() {
        PositiveReading::Median { median, ci, mean } => format!(
            "median {} {unit} [{}, {}] (n {}; the mean, {}, is too skewed for its interval)",
            sig(median),
            sig(ci.lo),
            sig(ci.hi),
            e.n,
            sig(mean)
        ),
        PositiveReading::TooNoisy { mean, .. } => format!(
            "too skewed to resolve: mean {} {unit}, its 95 % interval reaches below zero (n {})",
            sig(mean),
            e.n
        ),
        PositiveReading::Mean { mean, ci: Some(ci) } => format!(
            "{} {unit} [{}, {}] (n {})",
            sig(mean),
            sig(ci.lo),
            sig(ci.hi),
            e.n
        ),
        PositiveReading::Mean { mean, ci: None } => {
            format!("{} {unit} (n {}, no interval)", sig(mean), e.n)
        }
    }
}

fn sig(v: f64) -> String {
    crate::plot::fmt_sig(v, 4)
}

fn opt(e: Option<&Estimate>, unit: &str) -> String {
    e.map_or("-".into(), |e| est(e, unit))
}

/// A figure that cannot be negative (a rate, a CPU time, a cost): when its
/// interval reaches 0 the measurement could not resolve it, and says so
/// instead of printing an impossible bound.
fn positive(e: Option<&Estimate>, unit: &str) -> String {
    match e {
        Some(e) if e.ci95.is_some_and(|ci| ci.lo <= 0.0) => format!(
            "too noisy to resolve: mean {} {unit}, 95 % interval reaches 0 (n {})",
            sig(e.mean),
            e.n
        ),
        _ => opt(e, unit),
    }
}

pub(crate) fn section(h: &mut String, experiment: &str, run: &KernelRun) {
    let title = if run.title.is_empty() {
        format!(
            "the Linux kernel's {} over {} ({})",
            run.protocol, run.family, run.path
        )
    } else {
        run.title.clone()
    };
    crate::toc::run_heading(h, experiment, &run.id, &title);
    if let Some(why) = &run.skipped {
        let _ = write!(
            h,
            "<p class=\"note\"><strong>Not run:</strong> {}. The kernel rows of this run are missing; the rest of the lab ran.</p>",
            escape(why)
        );
        missing_probes(h, run);
        return;
    }
    let _ = write!(
        h,
        "<p class=\"note\">The kernel's own {} over {}, {}: single messages one at a time (each read whole before the next), traced with eBPF (docs/kernel-probes.md) for this flow only{}; {} measured messages sent, {} received whole, after {} warm-up. {} records, {} lost to a full ring. Trace <code>{}</code>, timeline <code>{}</code>.</p>",
        escape(&run.protocol),
        escape(&run.family),
        if run.path == "veth" {
            "sender and receiver in two network namespaces joined by a veth pair made for the run"
        } else {
            "sender and receiver in one network namespace over its loopback"
        },
        escape(&congestion_note(run)),
        run.sent,
        run.received,
        run.warmup,
        run.records,
        run.ring_dropped,
        escape(run.trace.as_deref().unwrap_or("-")),
        escape(run.timeline.as_deref().unwrap_or("-")),
    );
    h.push_str("<p class=\"note\">Windows: ");
    let windows: Vec<String> = run
        .windows
        .iter()
        .map(|(k, v)| format!("<em>{}</em>: {}", escape(k), escape(v)))
        .collect();
    h.push_str(&windows.join("; "));
    h.push_str(".</p>");
    for note in &run.notes {
        let _ = write!(h, "<p class=\"note\">{}</p>", escape(note));
    }
    incomplete(h, run);
    missing_probes(h, run);
    overhead(h, run);
    crate::sweep_html::table_html(h, &latency_table(run));
    h.push_str("<div class=\"plots\">");
    for receive in [false, true] {
        let measured = run.points.iter().any(|p| {
            if receive {
                p.receive.is_some()
            } else {
                p.send.is_some()
            }
        });
        if measured {
            h.push_str(&plot::xy_chart(&latency_chart(run, receive)));
        }
    }
    for receive in [false, true] {
        if let Some(chart) = layer_chart(run, receive) {
            h.push_str(&plot::stacked_chart(&chart));
        }
    }
    h.push_str("</div>");
    for receive in [false, true] {
        if let Some(table) = layer_table(run, receive) {
            crate::sweep_html::table_html(h, &table);
        }
    }
    crate::sweep_html::table_html(h, &queues::queue_table(run));
}

fn incomplete(h: &mut String, run: &KernelRun) {
    for (path, map) in [
        ("send", &run.incomplete_send),
        ("receive", &run.incomplete_receive),
    ] {
        if map.is_empty() {
            continue;
        }
        let parts: Vec<String> = map
            .iter()
            .map(|(why, n)| format!("{n} {}", why.replace('_', " ")))
            .collect();
        let _ = write!(
            h,
            "<p class=\"note\">Messages without a {path} window (counted, left out of the figures): {}.</p>",
            escape(&parts.join(", "))
        );
    }
}

fn missing_probes(h: &mut String, run: &KernelRun) {
    if run.probes_missing.is_empty() {
        return;
    }
    h.push_str("<p class=\"note\">Probes missing: ");
    let parts: Vec<String> = run
        .probes_missing
        .iter()
        .map(|m| format!("<code>{}</code> ({})", escape(&m.probe), escape(&m.why)))
        .collect();
    h.push_str(&parts.join("; "));
    h.push_str(".</p>");
}

fn overhead(h: &mut String, run: &KernelRun) {
    let o = &run.overhead;
    match &o.cost {
        Some(cost) => {
            match &o.not_measured {
                Some(why) => {
                    let _ = write!(
                        h,
                        "<p class=\"note\">Probe cost {}; the windows below keep the probes' time (docs/lab.md).</p>",
                        escape(why)
                    );
                }
                None => {
                    let when = match &o.this_run_ns_per_record {
                        Some(e) => format!(
                            "the programs' own time per record in timed transfers just before and after this run's messages, {}, read by the kernel's BPF run-time statistics (the machine's speed drifts between runs; the lab-wide figure is in the table below",
                            est(e, "ns")
                        ),
                        None => "the programs' own time per record below, read by the kernel's BPF run-time statistics (".to_string(),
                    };
                    let _ = write!(
                        h,
                        "<p class=\"note\">Probe cost taken out of every window: {} ns per record inside it on the path's CPUs: {}; the extra CPU per event, which also holds what the probes do to the path around them, is beside it; docs/lab.md says what each can and cannot correct).</p>",
                        sig(o.subtracted_ns),
                        escape(&when)
                    );
                }
            }
            crate::sweep_html::table_html(h, &cost_table(cost));
        }
        None => {
            let _ = write!(
                h,
                "<p class=\"note\">Probe cost not measured ({}): nothing taken out of the windows.</p>",
                escape(o.not_measured.as_deref().unwrap_or("unknown reason"))
            );
        }
    }
}

fn cost_table(c: &ProbeCostFigures) -> Table {
    let change = match (c.throughput_change_percent, c.throughput_change_ci95) {
        (Some(p), Some(ci)) => format!(
            "{:+.1} % [{:+.1}, {:+.1}], p {}",
            p,
            ci.lo,
            ci.hi,
            c.throughput_change_p
                .map_or("-".into(), |p| format!("{p:.3}"))
        ),
        _ => "-".into(),
    };
    Table {
        caption: format!(
            "Kernel probes' cost: {} rounds of bulk TCP transfers of {} MiB across the veth pair, attached then detached in turn, then attached with the kernel's BPF run-time statistics on (the programs' own time; that transfer is not in the throughput)",
            c.pairs,
            c.bytes_per_transfer >> 20
        ),
        columns: vec![
            "figure".into(),
            "probes attached".into(),
            "detached".into(),
        ],
        rows: vec![
            vec![
                "throughput".into(),
                positive(c.attached_gbps.as_ref(), "Gbit/s"),
                positive(c.detached_gbps.as_ref(), "Gbit/s"),
            ],
            vec!["throughput change".into(), change, String::new()],
            vec![
                "CPU per GiB (sending + receiving thread)".into(),
                positive(c.attached_cpu_s_per_gib.as_ref(), "s"),
                positive(c.detached_cpu_s_per_gib.as_ref(), "s"),
            ],
            vec![
                "events per transfer".into(),
                positive(c.events_per_transfer.as_ref(), ""),
                "0".into(),
            ],
            vec![
                "extra CPU per event".into(),
                positive(c.per_event_ns.as_ref(), "ns"),
                String::new(),
            ],
            vec![
                "the programs' own time per record (subtracted)".into(),
                match &c.program_time_missing {
                    Some(why) => format!("not measured: {}", why),
                    None => positive(c.program_ns_per_record.as_ref(), "ns"),
                },
                String::new(),
            ],
            vec![
                "the programs' own time per run (runs that kept nothing too)".into(),
                positive(c.program_ns_per_run.as_ref(), "ns"),
                String::new(),
            ],
            vec![
                "events lost to a full ring".into(),
                c.dropped.to_string(),
                String::new(),
            ],
        ],
    }
}

fn path_cells(f: Option<&KernelPathFigures>) -> [String; 2] {
    match f {
        Some(f) => [est(&f.start_us, "µs"), est(&f.stop_us, "µs")],
        None => ["-".into(), "-".into()],
    }
}

/// `; TCP's congestion control, as the kernel ran it: cubic (the
/// recipe's congestion)`: read back from the sockets, so a comparison
/// with the reference stack (CUBIC) says whether it compared one
/// algorithm. Empty without TCP.
fn congestion_note(run: &KernelRun) -> String {
    let Some(ran) = &run.congestion_control else {
        return String::new();
    };
    let chosen = match &run.congestion {
        Some(_) => "the recipe's congestion",
        None => "the kernel's default: the recipe chose none",
    };
    format!("; TCP's congestion control, as the kernel ran it: {ran} ({chosen})")
}

/// A kernel row's name beside the reference stack's: its id and path,
/// and for TCP the congestion control it ran.
fn kernel_label(run: &KernelRun) -> String {
    match &run.congestion_control {
        Some(ran) => format!("kernel ({}, {}, {ran})", run.id, run.path),
        None => format!("kernel ({}, {})", run.id, run.path),
    }
}

fn latency_table(run: &KernelRun) -> Table {
    let rows = run
        .points
        .iter()
        .map(|p| {
            let [ss, sp] = path_cells(p.send.as_ref());
            let [rs, rp] = path_cells(p.receive.as_ref());
            vec![
                p.size.to_string(),
                p.messages.to_string(),
                ss,
                sp,
                rs,
                rp,
                p.packets_sent.as_ref().map_or("-".into(), |e| sig(e.mean)),
                format!("{} / {}", p.send_incomplete, p.receive_incomplete),
                format!("{} / {}", p.retransmits, p.drops),
            ]
        })
        .collect();
    Table {
        caption: format!(
            "Kernel start and stop latency per size (mean, 95 % interval, n; probe cost taken out){}",
            congestion_note(run)
        ),
        columns: [
            "size (B)",
            "messages",
            "send start",
            "send stop (on the wire)",
            "receive start",
            "receive stop",
            "skbs sent",
            "no window send / receive",
            "retransmits / kfree_skb (any reason; in the trace)",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

fn latency_chart(run: &KernelRun, receive: bool) -> XyChart {
    let path = if receive { "receive" } else { "send" };
    let mut series = Vec::new();
    let fits = if receive {
        [&run.trends.receive_start, &run.trends.receive_stop]
    } else {
        [&run.trends.send_start, &run.trends.send_stop]
    };
    for (which, fit) in ["start", "stop"].into_iter().zip(fits) {
        let pick = |p: &KernelSizePoint| -> Option<Estimate> {
            let f = if receive {
                p.receive.as_ref()
            } else {
                p.send.as_ref()
            }?;
            Some(if which == "start" {
                f.start_us
            } else {
                f.stop_us
            })
        };
        let points: Vec<(f64, f64)> = run
            .points
            .iter()
            .filter_map(|p| Some((f64::from(p.size) / 1e3, pick(p)?.mean)))
            .collect();
        let errors = run
            .points
            .iter()
            .filter_map(|p| {
                let e = pick(p)?;
                let ci = e.ci95?;
                Some((f64::from(p.size) / 1e3, ci.lo, ci.hi))
            })
            .collect();
        series.push(
            Series::new(
                format!("{path} {which} (mean, 95 % CI)"),
                points.clone(),
                Style::Points,
            )
            .with_errors(errors),
        );
        if let Some(fit) = fit.filter(|f| f.weak) {
            series.push(Series::new(
                format!("{which}: weak trend (R² {:.3}), not drawn", fit.r2),
                Vec::new(),
                Style::Dashed,
            ));
        }
        if let Some(fit) = fit.filter(|f| !f.weak && f.intercept_below_zero) {
            series.push(Series::new(
                format!(
                    "{which}: {} — intercept below 0, not linear near zero: not drawn",
                    fit.formula("KB", "µs")
                ),
                Vec::new(),
                Style::Dashed,
            ));
        }
        if let Some(fit) = fit.filter(|f| f.drawn()) {
            let (lo, hi) = points
                .iter()
                .fold((f64::MAX, f64::MIN), |(lo, hi), (x, _)| {
                    (lo.min(*x), hi.max(*x))
                });
            if lo < hi {
                let line = (0..=20)
                    .map(|i| lo + (hi - lo) * f64::from(i) / 20.0)
                    .map(|x| (x, fit.eval(x)))
                    .filter(|(_, y)| *y >= 0.0)
                    .collect();
                series.push(Series::new(
                    format!(
                        "{which}: {} (R² {:.3}, through the medians)",
                        fit.formula("KB", "µs"),
                        fit.r2
                    ),
                    line,
                    Style::Dashed,
                ));
            }
        }
    }
    XyChart {
        title: format!("Kernel {path} latency against message size"),
        x_label: "message size (KB, 1000 B)".into(),
        y_label: "latency (µs)".into(),
        series,
        log_x: false,
        log_y: false,
    }
}

/// The path's layers in path order, those the run measured only (a run
/// with the IP events has the cut parts, one without the uncut ones).
fn measured_layers(run: &KernelRun, receive: bool) -> Vec<KernelLayer> {
    let all: &[KernelLayer] = if receive {
        &KernelLayer::RECEIVE
    } else {
        &KernelLayer::SEND
    };
    all.iter()
        .copied()
        .filter(|l| {
            run.points.iter().any(|p| {
                let f = if receive { &p.receive } else { &p.send };
                f.as_ref().is_some_and(|f| f.layers_us.contains_key(l))
            })
        })
        .collect()
}

fn layer_chart(run: &KernelRun, receive: bool) -> Option<StackedChart> {
    let layers = measured_layers(run, receive);
    let points: Vec<(&KernelSizePoint, &KernelPathFigures)> = run
        .points
        .iter()
        .filter_map(|p| {
            Some((
                p,
                if receive {
                    p.receive.as_ref()
                } else {
                    p.send.as_ref()
                }?,
            ))
        })
        .collect();
    if points.is_empty() {
        return None;
    }
    Some(StackedChart {
        title: format!(
            "Kernel {} stop latency by layer (% of the mean)",
            if receive { "receive" } else { "send" }
        ),
        x_label: "message size".into(),
        y_label: "share of stop latency (%)".into(),
        x: points.iter().map(|(p, _)| f64::from(p.size)).collect(),
        layers: layers
            .iter()
            .map(|l| {
                (
                    l.label().to_string(),
                    points
                        .iter()
                        .map(|(_, f)| f.shares_percent.get(l).copied().unwrap_or(0.0))
                        .collect(),
                )
            })
            .collect(),
        percent: true,
        colour_slots: Vec::new(),
        x_bytes: true,
    })
}

fn layer_table(run: &KernelRun, receive: bool) -> Option<Table> {
    let path = if receive { "receive" } else { "send" };
    let layers = measured_layers(run, receive);
    let rows: Vec<Vec<String>> = run
        .points
        .iter()
        .filter_map(|p| {
            let f = if receive {
                p.receive.as_ref()
            } else {
                p.send.as_ref()
            }?;
            let mut row = vec![p.size.to_string()];
            row.extend(layers.iter().map(|l| {
                match (f.layers_us.get(l), f.shares_percent.get(l)) {
                    (Some(e), Some(share)) => format!("{share:.1} % · {}", est(e, "µs")),
                    _ => "-".into(),
                }
            }));
            Some(row)
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let mut columns = vec!["size (B)".to_string()];
    columns.extend(layers.iter().map(|l| l.label().to_string()));
    Some(Table {
        caption: format!("Kernel {path} stop window by layer: share of the mean stop latency, and each part's mean time per message with its 95 % interval"),
        columns,
        rows,
    })
}

/// The parts both stacks have: `stack` (socket, transport, network and
/// their buffers and copies), `link`, `waiting` (the reference's wire and
/// other; the kernel's wait for arrival).
const PARTS: [&str; 3] = ["stack", "link", "waiting"];

fn reference_shares(f: &PathFigures) -> Option<[f64; 3]> {
    let stop = f.stop_us.mean;
    if stop <= 0.0 {
        return None;
    }
    let layer = |l: Layer| f.stop_split.layers.get(&l).map_or(0.0, |e| e.mean);
    let stack = [
        Layer::App,
        Layer::Socket,
        Layer::Transport,
        Layer::Network,
        Layer::Host,
    ]
    .into_iter()
    .map(layer)
    .sum::<f64>();
    let wire = f
        .stop_split
        .categories
        .get(&Category::Wire)
        .map_or(0.0, |e| e.mean);
    let other = f.stop_split.other.as_ref().map_or(0.0, |e| e.mean);
    Some([
        100.0 * stack / stop,
        100.0 * layer(Layer::Link) / stop,
        100.0 * (wire + other) / stop,
    ])
}

fn kernel_shares(f: &KernelPathFigures) -> [f64; 3] {
    let mut parts = [0.0; 3];
    for (layer, share) in &f.shares_percent {
        let i = PARTS
            .iter()
            .position(|p| *p == layer.compared_as())
            .unwrap_or(2);
        parts[i] += share;
    }
    parts
}

/// The reference runs to set beside a kernel run: same protocol and
/// family, no background load; of those, the ones on a wire without a rate
/// where there are any (a veth pair has none either, so the windows hold
/// the same kind of work), else all of them.
fn references<'a>(exp: &'a Experiment, run: &KernelRun) -> Vec<&'a MessagesRun> {
    let twins: Vec<&MessagesRun> = exp
        .runs
        .iter()
        .filter(|r| r.protocol == run.protocol && r.family == run.family && r.load.is_none())
        .collect();
    let unrated: Vec<&MessagesRun> = twins
        .iter()
        .copied()
        .filter(|r| r.link_bps.is_none_or(|bps| bps <= 0.0))
        .collect();
    if unrated.is_empty() {
        twins
    } else {
        unrated
    }
}

/// The point nearest `size` among `points`.
fn nearest<T>(points: impl Iterator<Item = T>, size: u32, of: impl Fn(&T) -> u32) -> Option<T> {
    points.min_by_key(|p| (i64::from(of(p)) - i64::from(size)).abs())
}

/// For each measured kernel run with a reference twin: at 1 KiB and 64 KiB
/// (or the sizes nearest them each run has) start and stop latency and
/// the stop window by part, side by side, as a table and stacked bars.
pub(crate) fn beside_reference(h: &mut String, exp: &Experiment) {
    let pairs: Vec<(&KernelRun, Vec<&MessagesRun>)> = exp
        .kernel_runs
        .iter()
        .filter(|k| k.skipped.is_none())
        .map(|k| (k, references(exp, k)))
        .filter(|(_, refs)| !refs.is_empty())
        .collect();
    if pairs.is_empty() {
        return;
    }
    let _ = write!(
        h,
        "<h3 id=\"{}\">{}: the kernel beside the reference stack, per layer</h3><p class=\"note\">At 1 KiB and 64 KiB (the kernel runs' sizes; the reference run's nearest). The kernel's cuts between transport and network (at IP output's <code>ip_finish_output</code> and at TCP/UDP input's socket filter) leave IP's header and netfilter work on the transport side, unlike the reference stack's, so socket, transport and network are compared as one part (<em>stack</em>; the kernel's own tables split them); <em>link</em> is the reference stack's link layer and the kernel's qdisc, device queue, driver and backlog; <em>waiting</em> is the reference stack's wire and time in no span (its reader's wake-up among it), the kernel's wait for the next packet's arrival and in the socket's receive queue until the reader takes it (the reader's wake-up). The reference stack runs on its virtual wire without a rate where the recipe has such runs (else on its rate-limited link, whose wire time then fills its windows), the kernel across a veth pair, which has no rate either: the windows are the same kind, the paths are not (the kernel's hands each packet to the peer's backlog; the reference stack's wire is a queue between two threads or one simulated clock). A kernel TCP row names the congestion control the kernel ran, read back from its sockets; the reference stack's messages run its own, CUBIC.</p>",
        crate::toc::run(&exp.name, "kernel-beside-reference"),
        escape(&exp.name),
    );
    let mut rows = Vec::new();
    let mut bars = Vec::new();
    for (k, refs) in pairs {
        let mut seen = Vec::new();
        for target in [1024u32, 65536] {
            let Some(kp) = nearest(k.points.iter(), target, |p| p.size) else {
                continue;
            };
            if seen.contains(&kp.size) {
                continue;
            }
            seen.push(kp.size);
            let candidates = refs
                .iter()
                .flat_map(|r| r.points.iter().map(move |p| (*r, p)));
            let Some((r, rp)) = nearest(candidates, kp.size, |(_, p)| p.size) else {
                continue;
            };
            for receive in [false, true] {
                let path = if receive { "receive" } else { "send" };
                let kf = if receive {
                    kp.receive.as_ref()
                } else {
                    kp.send.as_ref()
                };
                let rf = if receive {
                    rp.receive.as_ref()
                } else {
                    rp.send.as_ref()
                };
                if let Some(rf) = rf {
                    let shares = reference_shares(rf);
                    rows.push(row(
                        &format!("reference ({}, {})", r.id, r.link),
                        path,
                        rp.size,
                        &rf.start_us,
                        &rf.stop_us,
                        shares,
                        &r.gauges,
                    ));
                    if let Some(s) = shares {
                        bars.push((
                            format!("ref {}/{} {path} {} B", r.protocol, r.family, rp.size),
                            s.to_vec(),
                        ));
                    }
                }
                if let Some(kf) = kf {
                    let shares = kernel_shares(kf);
                    rows.push(row(
                        &kernel_label(k),
                        path,
                        kp.size,
                        &kf.start_us,
                        &kf.stop_us,
                        Some(shares),
                        &k.gauges,
                    ));
                    bars.push((
                        format!("kernel {}/{} {path} {} B", k.protocol, k.family, kp.size),
                        shares.to_vec(),
                    ));
                } else {
                    rows.push(vec![
                        kernel_label(k),
                        path.into(),
                        kp.size.to_string(),
                        "no window (see the run)".into(),
                        String::new(),
                        String::new(),
                        String::new(),
                        String::new(),
                        speed(&k.gauges),
                    ]);
                }
            }
        }
    }
    crate::sweep_html::table_html(
        h,
        &Table {
            caption: "Reference stack and kernel: start and stop latency (mean, 95 % interval, n), the stop window's parts, % of the mean, and the CPUs' speed around the run (the same per-byte work, ns per KiB: on a shared VM it drifts by up to 3× between runs, and every figure of the run with it)".into(),
            columns: [
                "stack (run, path)",
                "path",
                "size (B)",
                "start",
                "stop",
                "stack %",
                "link %",
                "waiting %",
                "CPU speed (ns/KiB)",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        },
    );
    if !bars.is_empty() {
        h.push_str(&plot::share_bars(&ShareBars {
            title: "Stop latency by part: reference stack and kernel".into(),
            value_label: "share of the mean stop latency (%)".into(),
            layers: PARTS.iter().map(|p| p.to_string()).collect(),
            rows: bars,
            colour_slots: Vec::new(),
            width: 900,
        }));
    }
}

fn row(
    who: &str,
    path: &str,
    size: u32,
    start: &Estimate,
    stop: &Estimate,
    shares: Option<[f64; 3]>,
    gauges: &MachineGauges,
) -> Vec<String> {
    let mut row = vec![
        who.to_string(),
        path.to_string(),
        size.to_string(),
        est(start, "µs"),
        est(stop, "µs"),
    ];
    match shares {
        Some(s) => row.extend(s.iter().map(|v| format!("{v:.1}"))),
        None => row.extend(["-".to_string(), "-".to_string(), "-".to_string()]),
    }
    row.push(speed(gauges));
    row
}

/// The CPU-speed gauge around a run: median [min, max] ns per KiB.
fn speed(g: &MachineGauges) -> String {
    match (
        g.cpu_speed_ns_per_kib,
        g.cpu_speed_min_ns_per_kib,
        g.cpu_speed_max_ns_per_kib,
    ) {
        (Some(m), Some(lo), Some(hi)) => format!("{} [{}, {}]", sig(m), sig(lo), sig(hi)),
        (Some(m), _, _) => sig(m),
        _ => "not measured".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TCP run says which congestion control the kernel ran, and whether
    /// the recipe chose it, in its note, its latency table's caption and
    /// its name beside the reference stack; a UDP run says nothing of one.
    #[test]
    fn a_tcp_run_names_the_congestion_control_it_ran() {
        let mut run = KernelRun {
            id: "kernel-tcp".into(),
            protocol: "TCP".into(),
            family: "IPv6".into(),
            path: "veth".into(),
            status: "measured".into(),
            ..KernelRun::default()
        };
        let html = |run: &KernelRun| {
            let mut h = String::new();
            section(&mut h, "xie1999", run);
            h
        };
        assert!(!html(&run).contains("congestion control"));
        assert_eq!(kernel_label(&run), "kernel (kernel-tcp, veth)");
        run.congestion_control = Some("bbr".into());
        assert!(html(&run).contains(&escape(
            "as the kernel ran it: bbr (the kernel's default: the recipe chose none)"
        )));
        run.congestion = Some("cubic".into());
        run.congestion_control = Some("cubic".into());
        let note =
            "; TCP's congestion control, as the kernel ran it: cubic (the recipe's congestion)";
        assert!(latency_table(&run).caption.ends_with(note));
        assert!(html(&run).contains(&escape(&format!("for this flow only{note};"))));
        assert_eq!(kernel_label(&run), "kernel (kernel-tcp, veth, cubic)");
    }

    #[test]
    fn a_latency_whose_interval_reaches_below_zero_gives_its_median() {
        // The reference run's receive start at 20 000 B: a few messages
        // waited long (23.98 µs mean, [-20.35, 68.3]).
        let mut values = vec![1.0; 24];
        values.extend([300.0, 310.0, 320.0]);
        let skewed = Estimate::of(&values).expect("an estimate");
        assert!(skewed.ci95.unwrap().lo < 0.0, "{skewed:?}");
        let text = est(&skewed, "µs");
        assert!(text.starts_with("median 1 µs ["), "{text}");
        assert!(text.contains("too skewed"), "{text}");
        // A tight one is its mean and interval.
        let tight = Estimate::of(&[10.0, 10.5, 9.5, 10.2]).expect("an estimate");
        assert!(
            est(&tight, "µs").starts_with("10.05 µs ["),
            "{}",
            est(&tight, "µs")
        );
    }
}
