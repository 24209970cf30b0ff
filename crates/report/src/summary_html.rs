//! The summary's HTML: one stacked bar per path of where its stop latency
//! goes, then each path's sentences.

use std::fmt::Write;

use crate::html::escape;
use crate::plot::{self, ShareBars};
use analysis::kernel_messages::KernelLayer;

use crate::summary::{colour_slot, readable, PathSummary, Summary, OTHER};

/// Width of the summary chart, pixels (the page is 1100 wide).
const WIDTH: u32 = 1060;

pub(crate) fn render(h: &mut String, summary: &Summary) {
    if summary.paths.is_empty() && summary.kernel_paths.is_empty() {
        return;
    }
    h.push_str("<section id=\"summary\"><h2>Where the time goes</h2>");
    h.push_str(&bars(
        &summary.paths,
        |_| true,
        "Share of each path's stop latency per category, at the run's middle size (%)",
        "% of the stop latency (each path's window is in its sentences below)",
    ));
    findings(h, &summary.paths);
    // On a slow wire serialisation is nearly all of it: the same bars
    // without the wire and the time in no span show the stack's own work.
    let wire_bound = summary.paths.iter().any(|p| {
        p.shares
            .iter()
            .any(|s| s.category == "wire" && s.percent >= 50.0)
    });
    if wire_bound {
        h.push_str(&bars(
            &summary.paths,
            |c| c != "wire" && c != OTHER,
            "The stack's own processing (wire and time in no span left out): share per category (%)",
            "% of the stack's own processing time at that size",
        ));
    }
    if !summary.kernel_paths.is_empty() {
        h.push_str(&bars(
            &summary.kernel_paths,
            |_| true,
            "The Linux kernel's own stack: share of each path's stop latency per part, at the run's middle size (%)",
            "% of the stop latency (the kernel's tracepoints split it by part, not by category)",
        ));
        findings(h, &summary.kernel_paths);
    }
    h.push_str("<p class=\"note\">Shares are each category's mean exclusive time inside the window over the stop latency's mean, at one size (named per path); the tool's own instrumentation is already taken out. The kernel's parts are the intervals between its tracepoints on each packet's way, the probes' measured cost taken out. The runs' sections have every size.</p></section>");
}

/// Each path's sentences, its name in bold.
fn findings(h: &mut String, paths: &[PathSummary]) {
    h.push_str("<div class=\"findings\">");
    for p in paths {
        // The path's name, where the first sentence starts with it, in bold.
        let text = p.sentences.join(" ");
        let _ = match text.strip_prefix(p.path.as_str()) {
            Some(rest) => write!(h, "<p><b>{}</b>{}</p>", escape(&p.path), escape(rest)),
            None => write!(h, "<p>{}</p>", escape(&text)),
        };
    }
    h.push_str("</div>");
}

/// A category's palette slot, or a kernel part's: its place on the
/// kernel's send then receive path (no category has those names).
fn slot(name: &str) -> usize {
    let parts = KernelLayer::SEND.iter().chain(KernelLayer::RECEIVE.iter());
    match parts.into_iter().position(|l| l.as_str() == name) {
        Some(i) => i,
        None => colour_slot(name),
    }
}

/// One bar per path of the categories `keep` lets through, as shares of
/// their sum (all of them: of the stop latency).
fn bars(
    paths: &[PathSummary],
    keep: impl Fn(&str) -> bool,
    title: &str,
    value_label: &str,
) -> String {
    // Every category any path has, in one order (and colour) for all.
    let mut layers: Vec<String> = paths
        .iter()
        .flat_map(|p| p.shares.iter().map(|s| s.category.clone()))
        .filter(|c| keep(c))
        .collect();
    layers.sort_by_key(|c| slot(c));
    layers.dedup();
    // A path on another link than the first (a local run on a wire with
    // no rate limit beside the fast-ethernet ones) says so in its label.
    let first_link = paths.first().map(|p| p.link.as_str());
    let rows = paths
        .iter()
        .map(|p| {
            let kept: f64 = p
                .shares
                .iter()
                .filter(|s| keep(&s.category))
                .map(|s| s.percent)
                .sum();
            (
                format!(
                    "{} · {} · {}{}",
                    p.path,
                    p.family,
                    crate::units::size(u64::from(p.size_bytes)),
                    if Some(p.link.as_str()) == first_link {
                        String::new()
                    } else {
                        format!(" · {}", p.link)
                    }
                ),
                layers
                    .iter()
                    .map(|l| {
                        p.shares
                            .iter()
                            .find(|s| &s.category == l)
                            .filter(|_| kept > 0.0)
                            .map_or(0.0, |s| 100.0 * s.percent / kept)
                    })
                    .collect(),
            )
        })
        .collect();
    // In a `plots` box, so a narrow window scales it down.
    let svg = plot::share_bars(&ShareBars {
        title: title.into(),
        value_label: value_label.into(),
        layers: layers
            .iter()
            .map(|l| {
                if l == OTHER {
                    "other (in no span)".to_string()
                } else {
                    readable(l)
                }
            })
            .collect(),
        colour_slots: layers.iter().map(|l| slot(l)).collect(),
        rows,
        width: WIDTH,
    });
    format!("<div class=\"plots\">{svg}</div>")
}
