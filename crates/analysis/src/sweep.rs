//! A sweep of message sizes: per size, the mean latencies, throughput and
//! category times over its repetitions; over the sweep, the trend lines in
//! the IPv6 study's units (`000_…` Table 5a: x in thousands of bytes, y
//! in microseconds; throughput: x in hundreds of bytes, y in KB/s, a
//! power law) and the steps at multiples of the path's segment size.

use std::collections::{BTreeMap, BTreeSet};

use probe::{Category, Layer};
use serde::Serialize;
use stats::{Interval, Verdict};

use crate::messages::{CategoryTimes, Messages, PathLatency, StopAt};
use crate::trend::{self, Fit, StepReport};

/// Mean, median, spread, range and 95 % intervals of one figure over a
/// size's repetitions. Latency trend lines are fitted to the medians. The
/// study fitted means, on an isolated machine where a message was never
/// held up; on a shared one a few messages in a hundred wait
/// milliseconds for the CPU, and the means carry them: on two shared
/// cores under load 7 the xie1999 send stop slope through the means was
/// 107 ± 5 and 90 ± 4 µs/KB (TCP), 82 ± 2 and 107 ± 5 (UDP) in two
/// consecutive runs, each interval ±5 % and none overlapping; through the
/// medians 86.1 ± 0.1 and 87.6 ± 1.9, 83.73 ± 0.05 and 83.82 ± 0.05.
/// (On a quiet machine the two agree: medians gave R² 0.872 / 0.895, TCP
/// start / stop, against the means' 0.869 / 0.910.) The stop latency's
/// line and steps through the means are given beside.
pub use stats::Estimate as Stat;

/// One path's figures at one size, in microseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PathFigures {
    pub start_us: Stat,
    /// Send path: under the analysis' stop definition; receive path: to
    /// the last byte queued for the application.
    pub stop_us: Stat,
    /// Send path: the stop latency under every definition the trace
    /// allows (the one above among them).
    pub stops_us: BTreeMap<StopAt, Stat>,
    /// Payload / stop latency, KB/s (1 KB = 1000 bytes, as the study).
    pub throughput_kbps: f64,
    pub frames: f64,
    /// Mean time per message per category, µs; `other` is time in no span.
    pub categories_us: BTreeMap<Category, f64>,
    pub other_us: f64,
    /// The start and the stop window split by layer and by category, with
    /// intervals.
    pub start_split: Split,
    pub stop_split: Split,
}

/// A window's time per message split by layer and by category, µs, each
/// part with its 95 % interval over the size's messages (a message with no
/// time in a part counts 0 there, so every part has every message).
/// Per message the layers, `wire` and `other` add up to the window, and so
/// do the categories (`wire` among them) and `other`: the means add up to
/// the window's mean. `instrumentation` is the tool's time already taken
/// out, not part of the window.
///
/// In JSON each part is brief (`n`, `mean`, `ci95`): a run of 200 sizes
/// would otherwise write some 60 full estimates per size.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Split {
    #[serde(serialize_with = "brief_parts")]
    pub layers: BTreeMap<Layer, Stat>,
    #[serde(serialize_with = "brief_parts")]
    pub categories: BTreeMap<Category, Stat>,
    /// Time in no span and not on the wire.
    #[serde(serialize_with = "brief_part")]
    pub other: Option<Stat>,
    /// The part of `layers` that is a tunnel's work
    /// (`CategoryTimes::tunnel`), by layer; empty without a tunnel.
    #[serde(
        serialize_with = "brief_parts",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub tunnel: BTreeMap<Layer, Stat>,
    /// The tunnel's whole time per message (the parts above summed per
    /// message); `None` without a tunnel.
    #[serde(serialize_with = "brief_part", skip_serializing_if = "Option::is_none")]
    pub tunnel_total: Option<Stat>,
    /// Each layer's time outside the tunnel (`layers` less `tunnel`, per
    /// message), so that these, `tunnel`, `wire` and `other` add up to
    /// the window; empty without a tunnel.
    #[serde(
        serialize_with = "brief_parts",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub outside_tunnel: BTreeMap<Layer, Stat>,
    /// The tunnel's time as a share of each message's window, and of the
    /// stack's own work in it (every layer: no wire, no `other`).
    #[serde(serialize_with = "brief_part", skip_serializing_if = "Option::is_none")]
    pub tunnel_share: Option<Stat>,
    #[serde(serialize_with = "brief_part", skip_serializing_if = "Option::is_none")]
    pub tunnel_share_of_stack: Option<Stat>,
}

/// A part of a split as summary.json keeps it.
#[derive(Serialize)]
struct Brief {
    n: usize,
    mean: f64,
    ci95: Option<Interval>,
}

impl Brief {
    fn of(stat: &Stat) -> Brief {
        Brief {
            n: stat.n,
            mean: stat.mean,
            ci95: stat.ci95,
        }
    }
}

fn brief_parts<K: Serialize, S: serde::Serializer>(
    parts: &BTreeMap<K, Stat>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_map(parts.iter().map(|(k, v)| (k, Brief::of(v))))
}

fn brief_part<S: serde::Serializer>(part: &Option<Stat>, serializer: S) -> Result<S::Ok, S::Error> {
    part.as_ref().map(Brief::of).serialize(serializer)
}

impl Split {
    /// The split of `windows` (each message's window times, ns).
    pub fn of(windows: &[&CategoryTimes]) -> Split {
        let us = |pick: &dyn Fn(&CategoryTimes) -> f64| {
            let values: Vec<f64> = windows.iter().map(|w| pick(w) / 1e3).collect();
            Stat::of(&values)
        };
        let layers: BTreeSet<Layer> = windows
            .iter()
            .flat_map(|w| w.by_layer.keys().copied())
            .collect();
        let categories: BTreeSet<Category> = windows
            .iter()
            .flat_map(|w| w.by_category.keys().copied())
            .collect();
        let tunnel: BTreeSet<Layer> = windows
            .iter()
            .flat_map(|w| w.tunnel.keys().copied())
            .collect();
        let tunnel_sum = |w: &CategoryTimes| -> f64 { w.tunnel.values().sum() };
        let share = |part: f64, whole: f64| if whole > 0.0 { part / whole } else { 0.0 };
        let shares = |whole: &dyn Fn(&CategoryTimes) -> f64| {
            let values: Vec<f64> = windows
                .iter()
                .map(|w| share(tunnel_sum(w), whole(w)))
                .collect();
            Stat::of(&values)
        };
        let (tunnel_total, tunnel_share, tunnel_share_of_stack) = if tunnel.is_empty() {
            (None, None, None)
        } else {
            (
                us(&|w| tunnel_sum(w)),
                shares(&|w| w.stack_ns() + w.wire_ns() + w.other),
                shares(&|w| w.stack_ns()),
            )
        };
        let outside_tunnel = if tunnel.is_empty() {
            BTreeMap::new()
        } else {
            layers
                .iter()
                .filter_map(|&l| {
                    let outside = |w: &CategoryTimes| {
                        w.by_layer.get(&l).copied().unwrap_or(0.0)
                            - w.tunnel.get(&l).copied().unwrap_or(0.0)
                    };
                    Some((l, us(&outside)?))
                })
                .collect()
        };
        Split {
            layers: layers
                .into_iter()
                .filter_map(|l| Some((l, us(&|w| w.by_layer.get(&l).copied().unwrap_or(0.0))?)))
                .collect(),
            categories: categories
                .into_iter()
                .filter_map(|c| Some((c, us(&|w| w.by_category.get(&c).copied().unwrap_or(0.0))?)))
                .collect(),
            other: us(&|w| w.other),
            tunnel: tunnel
                .into_iter()
                .filter_map(|l| Some((l, us(&|w| w.tunnel.get(&l).copied().unwrap_or(0.0))?)))
                .collect(),
            tunnel_total,
            outside_tunnel,
            tunnel_share,
            tunnel_share_of_stack,
        }
    }

    /// The time on the wire's side, per message.
    pub fn wire(&self) -> Option<&Stat> {
        self.categories.get(&Category::Wire)
    }
}

/// One message size.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SizePoint {
    pub size: u32,
    /// Messages of this size that were sent; of those, measured on each path.
    pub messages: u32,
    pub send: Option<PathFigures>,
    pub receive: Option<PathFigures>,
    pub one_way_us: Option<Stat>,
}

/// Per size, in increasing size.
pub fn by_size(messages: &Messages) -> Vec<SizePoint> {
    let mut groups: BTreeMap<u32, Vec<&crate::messages::MessageLatency>> = BTreeMap::new();
    for m in &messages.messages {
        groups.entry(m.size).or_default().push(m);
    }
    groups
        .into_iter()
        .map(|(size, group)| {
            let send: Vec<&PathLatency> = group.iter().filter_map(|m| m.send.as_ref()).collect();
            let receive: Vec<&PathLatency> =
                group.iter().filter_map(|m| m.receive.as_ref()).collect();
            let one_way: Vec<f64> = group
                .iter()
                .filter_map(|m| m.one_way_ns.map(|ns| ns / 1e3))
                .collect();
            SizePoint {
                size,
                messages: group.len() as u32,
                send: path_figures(size, &send),
                receive: path_figures(size, &receive),
                one_way_us: Stat::of(&one_way),
            }
        })
        .collect()
}

fn path_figures(size: u32, paths: &[&PathLatency]) -> Option<PathFigures> {
    let start: Vec<f64> = paths.iter().map(|p| p.start_ns / 1e3).collect();
    let stop: Vec<f64> = paths.iter().map(|p| p.stop_ns / 1e3).collect();
    let start_us = Stat::of(&start)?;
    let stop_us = Stat::of(&stop)?;
    let stops_us = StopAt::ALL
        .into_iter()
        .filter_map(|at| {
            let values: Vec<f64> = paths
                .iter()
                .filter_map(|p| p.stops.as_ref()?.get(at))
                .map(|ns| ns / 1e3)
                .collect();
            Some((at, Stat::of(&values)?))
        })
        .collect();
    let n = paths.len() as f64;
    let mut categories_us: BTreeMap<Category, f64> = BTreeMap::new();
    for p in paths {
        for (&c, &ns) in &p.categories.by_category {
            *categories_us.entry(c).or_default() += ns / 1e3 / n;
        }
    }
    Some(PathFigures {
        throughput_kbps: if stop_us.mean > 0.0 {
            f64::from(size) / 1e3 / (stop_us.mean / 1e6)
        } else {
            0.0
        },
        frames: paths.iter().map(|p| f64::from(p.frames)).sum::<f64>() / n,
        other_us: paths.iter().map(|p| p.categories.other / 1e3).sum::<f64>() / n,
        categories_us,
        start_split: Split::of(
            &paths
                .iter()
                .map(|p| &p.start_categories)
                .collect::<Vec<_>>(),
        ),
        stop_split: Split::of(&paths.iter().map(|p| &p.categories).collect::<Vec<_>>()),
        start_us,
        stop_us,
        stops_us,
    })
}

/// Trend lines of one path over a sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathTrends {
    /// y = a·x + b, x in thousands of bytes, y in µs, through the sizes'
    /// medians (see [`Stat`]).
    pub start: Option<Fit>,
    pub stop: Option<Fit>,
    /// The stop latency's line through the sizes' means instead of their
    /// medians (the study's way), same units: on a busy machine it
    /// carries the few messages that waited milliseconds for the CPU.
    pub stop_of_means: Option<Fit>,
    /// The send path's stop latency under every definition the trace
    /// allows, same units.
    pub stop_by_definition: BTreeMap<StopAt, Fit>,
    /// y = a·x^b, x in hundreds of bytes, y in KB/s (payload / mean stop
    /// latency, the per-size figure).
    pub throughput: Option<Fit>,
    /// Steps of the stop latency (the sizes' medians) at multiples of the
    /// segment payload.
    pub stop_steps: Option<StepReport>,
    /// The same test on the sizes' means.
    pub stop_steps_of_means: Option<StepReport>,
    /// Send path of a run with a slope target: how its passes came to
    /// know the stop latency's slope; `None` for one pass with no target.
    pub stop_slope_repetition: Option<SlopeRepetition>,
    /// Mean share of the stop latency per category over the sizes.
    pub category_shares: BTreeMap<Category, f64>,
    pub other_share: f64,
    /// Per cost centre with time in the window: its mean time per message
    /// against size, x in thousands of bytes, y in µs (the IPv6 study's
    /// Table 5b and §5.2 checksum and data-move lines).
    pub categories: BTreeMap<Category, Fit>,
}

/// How a messages run repeated its sizes until the slope of the send
/// stop latency was known: passes over every size (each the first run
/// again, `reps` times each size, on a new stack), until the 95 %
/// interval of the run's slope was within `target` of it, or the time cap
/// came.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SlopeRepetition {
    /// The 95 % half-width asked for, as a share of the slope (0.02 is
    /// ±2 %).
    pub target: f64,
    /// The run's slope (µs per KB): the send stop trend's, the line
    /// through the sizes' medians over every pass.
    pub slope: Option<f64>,
    /// Its 95 % interval: the hull of the line's own (`line_ci95`) and,
    /// from `min_passes` passes on, the passes' median's
    /// (`passes_median_ci95`), which carries how far new stacks on the
    /// same machine differ; the send stop trend carries it too.
    pub slope_ci95: Option<Interval>,
    /// The interval's wider side as a share of the slope; `None` before
    /// `min_passes` passes.
    pub reached: Option<f64>,
    /// The line's interval alone (t with points − 2 degrees of freedom).
    pub line_ci95: Option<Interval>,
    /// The median of the passes' slopes and its distribution-free 95 %
    /// interval (`None` below six passes).
    pub passes_median: Option<f64>,
    pub passes_median_ci95: Option<Interval>,
    /// Passes before the target could be met.
    pub min_passes: u32,
    /// `met`, `time_cap` (the next pass would have ended after the cap)
    /// or `rep_cap` (the run's message limit).
    pub verdict: Verdict,
    /// Wall time the passes may take, seconds.
    pub time_cap_s: f64,
    pub passes: Vec<Pass>,
}

/// One pass over the sizes and the slope it measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pass {
    /// Repetitions of each size in this pass.
    pub reps: u32,
    /// Messages measured in this pass (warm-up left out).
    pub messages: u64,
    /// Wall time of the pass (its messages and their analysis), seconds.
    pub wall_s: f64,
    /// When the pass began, seconds after the run's first pass began: the
    /// passes of a recipe's repeating runs take turns, so a run's passes
    /// spread over more time than they take.
    pub began_s: f64,
    /// The pass's probe trace, relative to the results directory.
    pub trace: String,
    /// The send stop latency's slope through this pass's sizes' medians
    /// (µs per KB), with the line's 95 % interval and its half-width as a
    /// share of the slope.
    pub slope: Option<f64>,
    pub slope_ci95: Option<Interval>,
    pub relative_half_width: Option<f64>,
}

/// Trend lines for the send and receive paths. `segment` is the payload
/// one packet carries on the path (steps are looked for at its multiples).
pub fn trends(points: &[SizePoint], segment: Option<f64>, receive: bool) -> PathTrends {
    let path = |p: &SizePoint| {
        if receive {
            p.receive.clone()
        } else {
            p.send.clone()
        }
    };
    let series = |f: &dyn Fn(&PathFigures) -> f64, x_unit: f64| -> Vec<(f64, f64)> {
        points
            .iter()
            .filter_map(|p| path(p).map(|fig| (f64::from(p.size) / x_unit, f(&fig))))
            .collect()
    };
    let start = series(&|f| f.start_us.median, 1000.0);
    let stop = series(&|f| f.stop_us.median, 1000.0);
    let throughput = series(&|f| f.throughput_kbps, 100.0);
    let stop_bytes = series(&|f| f.stop_us.median, 1.0);
    let stop_means = series(&|f| f.stop_us.mean, 1000.0);
    let stop_mean_bytes = series(&|f| f.stop_us.mean, 1.0);
    let mut shares: BTreeMap<Category, f64> = BTreeMap::new();
    let mut other = 0.0;
    let mut counted = 0.0;
    for p in points {
        let Some(fig) = path(p) else { continue };
        if fig.stop_us.mean <= 0.0 {
            continue;
        }
        counted += 1.0;
        for (&c, &us) in &fig.categories_us {
            *shares.entry(c).or_default() += us / fig.stop_us.mean;
        }
        other += fig.other_us / fig.stop_us.mean;
    }
    if counted > 0.0 {
        shares.values_mut().for_each(|v| *v /= counted);
        other /= counted;
    }
    let stop_by_definition = StopAt::ALL
        .into_iter()
        .filter_map(|at| {
            let points: Vec<(f64, f64)> = points
                .iter()
                .filter_map(|p| {
                    let stat = path(p)?.stops_us.get(&at).copied()?;
                    Some((f64::from(p.size) / 1000.0, stat.median))
                })
                .collect();
            Some((at, trend::linear(&points)?))
        })
        .collect();
    PathTrends {
        stop_by_definition,
        start: trend::linear(&start),
        stop: trend::linear(&stop),
        throughput: trend::power(&throughput),
        stop_of_means: trend::linear(&stop_means),
        stop_steps: segment.map(|s| trend::steps_at_multiples(&stop_bytes, s)),
        stop_steps_of_means: segment.map(|s| trend::steps_at_multiples(&stop_mean_bytes, s)),
        stop_slope_repetition: None,
        category_shares: shares,
        other_share: other,
        categories: category_trends(points, receive),
    }
}

/// Each cost centre's mean time per message against size (x KB, y µs),
/// for the centres with time at some size.
fn category_trends(points: &[SizePoint], receive: bool) -> BTreeMap<Category, Fit> {
    Category::ALL
        .iter()
        .copied()
        .filter(|c| c.is_cost_centre())
        .filter_map(|c| {
            let series: Vec<(f64, f64)> = points
                .iter()
                .filter_map(|p| {
                    let fig = if receive { &p.receive } else { &p.send };
                    let fig = fig.as_ref()?;
                    Some((
                        f64::from(p.size) / 1000.0,
                        fig.categories_us.get(&c).copied().unwrap_or(0.0),
                    ))
                })
                .collect();
            if series.iter().all(|&(_, us)| us <= 0.0) {
                return None;
            }
            Some((c, trend::linear(&series)?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::Stat;

    #[test]
    fn stat_has_the_median_of_odd_and_even_counts_and_skips_non_finite() {
        let s = Stat::of(&[9.0, 1.0, 5.0, f64::NAN]).unwrap();
        assert_eq!(
            (s.n, s.median, s.mean, s.min, s.max),
            (3, 5.0, 5.0, 1.0, 9.0)
        );
        let s = Stat::of(&[4.0, 1.0, 2.0, 100.0]).unwrap();
        assert_eq!(s.median, 3.0);
        assert_eq!(s.mean, 26.75);
        assert!(Stat::of(&[f64::INFINITY]).is_none());
    }
}

#[cfg(test)]
mod split_tests {
    use super::*;

    #[test]
    fn a_split_counts_every_message_and_writes_brief_parts() {
        let mut a = CategoryTimes::default();
        a.by_layer.insert(Layer::Transport, 2_000.0);
        a.by_category.insert(Category::ProtocolSend, 2_000.0);
        a.other = 1_000.0;
        let b = CategoryTimes {
            other: 3_000.0,
            ..CategoryTimes::default()
        };
        let split = Split::of(&[&a, &b]);
        // The message without transport time counts 0 there: 2 and 0 µs.
        let t = &split.layers[&Layer::Transport];
        assert_eq!((t.n, t.mean), (2, 1.0));
        assert_eq!(split.categories[&Category::ProtocolSend].mean, 1.0);
        assert_eq!(split.other.as_ref().map(|o| o.mean), Some(2.0));
        let json = serde_json::to_value(&split).unwrap();
        let part = &json["layers"]["transport"];
        assert_eq!(
            (part["n"].as_u64(), part["mean"].as_f64()),
            (Some(2), Some(1.0))
        );
        assert!(part.get("median").is_none(), "{part}");
        assert!(json["other"]["ci95"]["lo"].is_number(), "{json}");
        // No tunnel: no tunnel parts in the JSON either.
        assert!(split.tunnel_total.is_none());
        assert!(json.get("tunnel").is_none(), "{json}");
    }

    #[test]
    fn a_tunnels_parts_are_split_out_of_their_layers_per_message() {
        let mut a = CategoryTimes::default();
        a.by_layer.insert(Layer::Network, 3_000.0);
        a.by_layer.insert(Layer::Link, 1_000.0);
        a.tunnel.insert(Layer::Network, 1_000.0);
        a.tunnel.insert(Layer::Link, 500.0);
        let mut b = CategoryTimes::default();
        b.by_layer.insert(Layer::Network, 2_000.0);
        b.tunnel.insert(Layer::Network, 500.0);
        let split = Split::of(&[&a, &b]);
        assert_eq!(split.tunnel[&Layer::Network].mean, 0.75);
        // b had no encapsulation time: it counts 0.
        assert_eq!(split.tunnel[&Layer::Link].mean, 0.25);
        let total = split.tunnel_total.as_ref().unwrap();
        assert_eq!((total.n, total.mean), (2, 1.0));
        // Outside the tunnel: a 2 µs, b 1.5 µs of network; a 0.5 µs of
        // link, b none.
        assert_eq!(split.outside_tunnel[&Layer::Network].mean, 1.75);
        assert_eq!(split.outside_tunnel[&Layer::Link].mean, 0.25);
        // a: 1.5 of a 4 µs window, b: 0.5 of 2 µs.
        let share = split.tunnel_share.as_ref().unwrap();
        assert!((share.mean - (0.375 + 0.25) / 2.0).abs() < 1e-12);
        let json = serde_json::to_value(&split).unwrap();
        assert_eq!(json["tunnel"]["network"]["mean"].as_f64(), Some(0.75));
        assert_eq!(json["tunnel_total"]["n"].as_u64(), Some(2));
    }
}
