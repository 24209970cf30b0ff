//! The answer first: for each path the traced runs measured (send and
//! receive of every protocol, family and link), where its stop latency
//! goes at one representative size, and a few sentences naming the biggest
//! costs with their numbers. Computed from the experiments, so a new
//! protocol or stack appears here as soon as a recipe traces it.

use analysis::kernel_messages::KernelPathFigures;
use analysis::sweep::{PathFigures, SizePoint};
use probe::Category;
use serde::Serialize;

use crate::kernel_runs::KernelRun;
use crate::model::{Experiment, MessagesRun};

/// Every path's summary, in the order the runs came (send before receive).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub paths: Vec<PathSummary>,
    /// The Linux kernel's paths (its traced runs, issue 19): the same at
    /// one size, split by the kernel's parts (output, device queue,
    /// driver; arrival, backlog, input, socket queue, copy) instead of
    /// categories, which its tracepoints cannot tell apart.
    pub kernel_paths: Vec<PathSummary>,
}

/// One path at one size.
#[derive(Debug, Clone, Serialize)]
pub struct PathSummary {
    /// `TCP send`, `UDP receive`.
    pub path: String,
    pub protocol: String,
    /// `send` or `receive`.
    pub side: String,
    pub family: String,
    pub link: String,
    /// Where the figures come from: recipe and run.
    pub experiment: String,
    pub run: String,
    /// The representative size: the run's middle size.
    pub size_bytes: u32,
    /// The window the shares divide: its name and its ends in words.
    pub window: String,
    /// The stop latency at that size with its 95 % interval.
    pub stop_us: stats::Estimate,
    /// Each category's share of the stop latency, largest first; with
    /// `other` they add up to 100 %.
    pub shares: Vec<Share>,
    pub sentences: Vec<String>,
}

/// One category's part of a path's stop latency.
#[derive(Debug, Clone, Serialize)]
pub struct Share {
    /// The category's name (`checksum`, …, `other`).
    pub category: String,
    pub percent: f64,
    /// Mean time per message, µs.
    pub us: f64,
}

/// The name of the time in no span (see the windows note).
pub const OTHER: &str = "other";

/// The summary of every traced path of `experiments`: per protocol, family
/// and link the run with the most sizes (a sweep over a single message),
/// each of its two sides.
pub fn of(experiments: &[Experiment]) -> Summary {
    let chosen = most_sizes(
        experiments
            .iter()
            .flat_map(|e| e.runs.iter().map(move |r| (e, r))),
        |r| (&r.protocol, &r.family, &r.link),
        |r| r.points.len(),
    );
    let mut paths = Vec::new();
    for (exp, run) in chosen {
        for receive in [false, true] {
            if let Some(p) = path_summary(exp, run, receive) {
                paths.push(p);
            }
        }
    }
    // The kernel's measured runs likewise.
    let kernel_chosen = most_sizes(
        experiments.iter().flat_map(|e| {
            e.kernel_runs
                .iter()
                .filter(|k| k.status == "measured")
                .map(move |k| (e, k))
        }),
        |k| (&k.protocol, &k.family, &k.path),
        |k| k.points.len(),
    );
    let kernel_paths = kernel_chosen
        .into_iter()
        .flat_map(|(exp, k)| [false, true].map(|receive| kernel_path(exp, k, receive)))
        .flatten()
        .collect();
    Summary {
        paths,
        kernel_paths,
    }
}

/// Per `key` (protocol, family, link) the run with the most sizes
/// (`sizes`), in the order the keys first came.
fn most_sizes<'a, R, K: PartialEq>(
    runs: impl Iterator<Item = (&'a Experiment, &'a R)>,
    key: impl Fn(&'a R) -> K,
    sizes: impl Fn(&R) -> usize,
) -> Vec<(&'a Experiment, &'a R)> {
    let mut chosen: Vec<(&Experiment, &R)> = Vec::new();
    for (exp, run) in runs {
        match chosen.iter_mut().find(|(_, r)| key(r) == key(run)) {
            Some(slot) if sizes(slot.1) < sizes(run) => *slot = (exp, run),
            Some(_) => {}
            None => chosen.push((exp, run)),
        }
    }
    chosen
}

/// `send stop (on_the_wire): <first event> → <last event>`: the run's
/// stop window in words, its start taken from the start window where the
/// stop's text gives only its end (`→ …`), and without the remarks after
/// a `;`.
fn kernel_window(run: &KernelRun, side: &str) -> String {
    let find = |what: &str| {
        run.windows
            .iter()
            .find(|(name, _)| name.starts_with(&format!("{side} {what}")))
    };
    let Some((name, stop)) = find("stop") else {
        return String::new();
    };
    let stop = stop.split(';').next().unwrap_or(stop).trim();
    let ends = match (stop.strip_prefix('→'), find("start")) {
        (Some(end), Some((_, start))) => {
            let first = start.split(" → ").next().unwrap_or(start);
            format!("{first} →{end}")
        }
        _ => stop.to_string(),
    };
    format!("{name}: {ends}")
}

/// A kernel run's path at its middle measured size (`None` without a
/// window there: UDP sends have none).
fn kernel_path(exp: &Experiment, run: &KernelRun, receive: bool) -> Option<PathSummary> {
    let side = if receive { "receive" } else { "send" };
    let measured: Vec<(u32, &KernelPathFigures)> = run
        .points
        .iter()
        .filter_map(|p| {
            let f = if receive { &p.receive } else { &p.send };
            f.as_ref().map(|f| (p.size, f))
        })
        .filter(|(_, f)| f.stop_us.mean > 0.0 && f.stop_us.mean.is_finite())
        .collect();
    let &(size, fig) = measured.get(measured.len() / 2)?;
    let mut shares: Vec<Share> = fig
        .shares_percent
        .iter()
        .map(|(layer, &percent)| Share {
            category: layer.as_str().to_string(),
            percent,
            us: fig.layers_us.get(layer).map_or(0.0, |e| e.mean),
        })
        .filter(|s| s.percent > 0.0 && s.percent.is_finite())
        .collect();
    shares.sort_by(|a, b| b.percent.total_cmp(&a.percent));
    let window = kernel_window(run, side);
    let mut summary = PathSummary {
        path: format!("{} {side} (kernel)", run.protocol),
        protocol: run.protocol.clone(),
        side: side.into(),
        family: run.family.clone(),
        link: run.path.clone(),
        experiment: exp.name.clone(),
        run: run.id.clone(),
        size_bytes: size,
        window,
        stop_us: fig.stop_us,
        shares,
        sentences: Vec::new(),
    };
    summary.sentences = sentences(&summary, measured.len());
    Some(summary)
}

fn figures(p: &SizePoint, receive: bool) -> Option<&PathFigures> {
    if receive {
        p.receive.as_ref()
    } else {
        p.send.as_ref()
    }
}

fn path_summary(exp: &Experiment, run: &MessagesRun, receive: bool) -> Option<PathSummary> {
    let measured: Vec<(&SizePoint, &PathFigures)> = run
        .points
        .iter()
        .filter_map(|p| figures(p, receive).map(|f| (p, f)))
        .filter(|(_, f)| f.stop_us.mean > 0.0 && f.stop_us.mean.is_finite())
        .collect();
    let &(point, fig) = measured.get(measured.len() / 2)?;
    let stop = fig.stop_us.mean;
    let mut shares: Vec<Share> = fig
        .categories_us
        .iter()
        // Instrumentation is the tool's, already taken out of the window.
        .filter(|(&c, _)| c != Category::Instrumentation && c != Category::None)
        .map(|(c, &us)| Share {
            category: c.as_str().to_string(),
            percent: 100.0 * us / stop,
            us,
        })
        .chain(std::iter::once(Share {
            category: OTHER.into(),
            percent: 100.0 * fig.other_us / stop,
            us: fig.other_us,
        }))
        .filter(|s| s.percent > 0.0 && s.percent.is_finite())
        .collect();
    shares.sort_by(|a, b| b.percent.total_cmp(&a.percent));
    let side = if receive { "receive" } else { "send" };
    let window = if receive {
        "receive stop: first frame of the message arrived whole → last byte queued for the application".to_string()
    } else {
        format!("send stop ({}): {}", run.stop_at, run.stop_at.describe())
    };
    let mut summary = PathSummary {
        path: format!("{} {side}", run.protocol),
        protocol: run.protocol.clone(),
        side: side.into(),
        family: run.family.clone(),
        link: run.link.clone(),
        experiment: exp.name.clone(),
        run: run.id.clone(),
        size_bytes: point.size,
        window,
        stop_us: fig.stop_us,
        shares,
        sentences: Vec::new(),
    };
    summary.sentences = sentences(&summary, measured.len());
    Some(summary)
}

/// A category's name for reading: `data_move` is "data move".
pub fn readable(category: &str) -> String {
    category.replace('_', " ")
}

/// `45.2 µs (95 % CI 44.1–46.3, n 30)`, or without the interval when
/// there is none.
fn with_interval(e: &stats::Estimate) -> String {
    match e.ci95 {
        // An interval wider than half the value resolves nothing: say so
        // rather than print bounds that may cross zero.
        Some(ci) if e.mean > 0.0 && ci.half_width() > 0.5 * e.mean => format!(
            "{} µs (n {}; too noisy to resolve: the 95 % CI is ±{:.0} %)",
            us(e.mean),
            e.n,
            100.0 * ci.half_width() / e.mean
        ),
        Some(ci) => format!(
            "{} µs (95 % CI {}–{}, n {})",
            us(e.mean),
            us(ci.lo),
            us(ci.hi),
            e.n
        ),
        None => format!("{} µs (n {}, no interval)", us(e.mean), e.n),
    }
}

/// Microseconds with three significant digits or more.
fn us(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn share_phrase(s: &Share) -> String {
    format!(
        "{} {:.1} % ({} µs)",
        readable(&s.category),
        s.percent,
        us(s.us)
    )
}

fn list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// Two or three sentences: the latency, the biggest costs, and — when the
/// wire takes most of it — what the stack itself spends.
fn sentences(p: &PathSummary, sizes: usize) -> Vec<String> {
    let mut out = vec![format!(
        "{} over {} on {}: a {} message takes {} from {} ({} of the run's {} sizes; {}/{}).",
        p.path,
        p.family,
        p.link,
        crate::units::size(u64::from(p.size_bytes)),
        with_interval(&p.stop_us),
        p.window
            .split_once(": ")
            .map_or(p.window.as_str(), |(_, w)| w),
        if sizes == 1 {
            "the only one"
        } else {
            "the middle"
        },
        sizes,
        p.experiment,
        p.run,
    )];
    let top: Vec<String> = p.shares.iter().take(3).map(share_phrase).collect();
    if !top.is_empty() {
        out.push(format!(
            "The biggest costs are {} of that time.",
            list(&top)
        ));
    }
    if let Some(wire) = p.shares.iter().find(|s| s.category == "wire") {
        if wire.percent >= 50.0 {
            let own: Vec<&Share> = p
                .shares
                .iter()
                .filter(|s| s.category != "wire" && s.category != OTHER)
                .collect();
            let own_us: f64 = own.iter().map(|s| s.us).sum();
            let own_pct: f64 = own.iter().map(|s| s.percent).sum();
            let lead: Vec<String> = own
                .iter()
                .take(2)
                .map(|s| format!("{} ({} µs)", readable(&s.category), us(s.us)))
                .collect();
            if !lead.is_empty() {
                out.push(format!(
                    "The wire dominates; the stack's own processing is {} µs ({:.1} %), led by {}.",
                    us(own_us),
                    own_pct,
                    list(&lead)
                ));
            }
        }
    }
    out
}

/// The palette slot of a category (its place in `Category::ALL`; `other`
/// after them all), so a category has one colour on every chart.
pub fn colour_slot(category: &str) -> usize {
    Category::ALL
        .iter()
        .position(|c| c.as_str() == category)
        .unwrap_or(Category::ALL.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_read_as_prose() {
        assert_eq!(list(&["a".into()]), "a");
        assert_eq!(list(&["a".into(), "b".into(), "c".into()]), "a, b and c");
        assert_eq!(readable("data_move"), "data move");
    }
}
