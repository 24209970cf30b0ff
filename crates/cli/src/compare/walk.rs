//! Pairs the figures of two summary.json files by where they are: objects
//! by key, arrays of objects by a stable identity (a recipe's `name`, a
//! run's `id`, a point's size or its whole configuration), never by
//! position when an identity exists, so a reordered array still pairs.
//!
//! The walk is generic: it knows the shapes of figures, not the layout of
//! the report, so fields other helpers add later are compared too.
//! * `{n, mean, stdev, …}` (stats::Estimate): a figure with a spread.
//! * `{…, mean_U, stdev_U, reps}` (a throughput sweep point): `mean_U` is
//!   a figure with a spread over its repetitions. A delay point's stdev is
//!   over round trips pooled from its repetitions (`samples`): they share
//!   one window, so their spread says nothing of how windows differ (two
//!   quick runs' UDP round trips differed by 47 % with intervals of
//!   ±5 %), and its mean stays a single number.
//! * `{…, X, X_ci95, n}` (a fit): the coefficient `X` with its interval.
//!   A trend line (`analysis::trend::Fit`, `{kind, a, b, slope_ci95,
//!   intercept_ci95, n}`) names its intervals by role: a linear line's `a`
//!   is its slope and `b` its intercept; a power law's exponent `b` has the
//!   log-space slope's interval, and its coefficient `a`, whose interval is
//!   that of `ln a` carried back and not symmetric, stays a single number.
//! * any other number: a single number, no spread.
//!
//! Strings, booleans and nulls are not figures; `*ci95` fields belong to
//! their sibling.
//!
//! One boolean qualifies its siblings: a linear trend line's
//! `intercept_below_zero` (`analysis::trend::Fit`). Its intercept (`b`,
//! or `intercept`) says a zero-byte message takes negative time, so it is
//! no result: the pair carries which sides are so marked, and every fit
//! marked on either side is listed with both sides' marks.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::identity::Identity;
use report::compare_html::InterceptMark;
use stats::Interval;

/// A figure as one side has it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Figure {
    /// `n` values with their mean and sample standard deviation.
    Spread {
        n: usize,
        mean: f64,
        stdev: Option<f64>,
        ci95: Option<Interval>,
    },
    /// A fitted coefficient with its 95 % interval, from `n` points.
    Coefficient {
        value: f64,
        ci95: Interval,
        n: usize,
    },
    /// A single number.
    Number(f64),
}

/// A figure both sides have.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    pub path: String,
    pub a: Figure,
    pub b: Figure,
    /// The machine's states each side measured the figure in, as the
    /// nearest object around it that has them says.
    pub states: [Gauges; 2],
    /// Whether the figure is the intercept of a trend line whose
    /// intercept is below zero on A, on B (`intercept_below_zero`): no
    /// result on that side.
    pub intercept_below_zero: [bool; 2],
}

/// A measurement's machine state, where measured: its core-to-core round
/// trips (`core_trip_*`, ns; `traffic::core_trip`), wake-up round trips
/// (`wake_trip_*`, ns; `traffic::wake_trip`) and the CPUs' speed at
/// copying and summing (`cpu_speed_*`, ns per KiB; `traffic::cpu_speed`),
/// and the CPUs' worth of time other processes used (`others_cpu`;
/// `traffic::sweep::busy`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Gauges {
    pub core: Option<Reading>,
    pub wake: Option<Reading>,
    pub cpu: Option<Reading>,
    pub others: Option<f64>,
}

/// A gauge's readings over one measurement: their median and range
/// (`[median, median]` when there was one reading), and how many there
/// were where the measurement says (`gauge_readings`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    pub median: f64,
    pub range: [f64; 2],
    pub count: Option<u64>,
}

impl Gauges {
    /// Each gauge this one lacks taken from `outer`.
    fn or(self, outer: Gauges) -> Gauges {
        Gauges {
            core: self.core.or(outer.core),
            wake: self.wake.or(outer.wake),
            cpu: self.cpu.or(outer.cpu),
            others: self.others.or(outer.others),
        }
    }
}

/// The fields naming a gauge: the median of its round trips, and their
/// range when there were several.
const CORE_TRIP: [&str; 3] = ["core_trip_ns", "core_trip_min_ns", "core_trip_max_ns"];
const WAKE_TRIP: [&str; 3] = ["wake_trip_ns", "wake_trip_min_ns", "wake_trip_max_ns"];
const CPU_SPEED: [&str; 3] = [
    "cpu_speed_ns_per_kib",
    "cpu_speed_min_ns_per_kib",
    "cpu_speed_max_ns_per_kib",
];

/// Every figure of both sides, paired where they match.
#[derive(Debug, Default)]
pub struct Paired {
    pub pairs: Vec<Pair>,
    pub only_a: Vec<String>,
    pub only_b: Vec<String>,
    /// Every trend line both sides have that is marked
    /// `intercept_below_zero` on either.
    pub intercept_marks: Vec<InterceptMark>,
}

/// Keys at the top of a summary that describe the run rather than measure
/// anything (the header shows them).
const METADATA: &[&str] = &["title", "command", "generated_unix", "quick", "machine"];

/// Pairs the figures of `a` and `b`. Absolute paths in identities (a
/// capture's input files) are compared relative to their side's directory,
/// given as the prefixes it may be spelled with.
pub fn pair(a: &Value, b: &Value, a_dirs: &[String], b_dirs: &[String]) -> Paired {
    let mut walker = Walker {
        dirs: [a_dirs.to_vec(), b_dirs.to_vec()],
        out: Paired::default(),
    };
    let strip = |v: &Value| match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !METADATA.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    };
    walker.visit("", Some(&strip(a)), Some(&strip(b)), Default::default());
    walker.out
}

struct Walker {
    dirs: [Vec<String>; 2],
    out: Paired,
}

/// What a JSON value is to the walk.
enum Node<'a> {
    Figure(Figure),
    Object(Vec<(String, Entry<'a>)>),
    Array(&'a [Value]),
    Nothing,
}

/// A field of an object: already a figure (a fit's coefficient, a sweep
/// point's mean) or a value still to walk.
enum Entry<'a> {
    Figure(Figure),
    Value(&'a Value),
}

impl Walker {
    fn visit(&mut self, path: &str, a: Option<&Value>, b: Option<&Value>, states: States) {
        let (a, b) = (a.map(node), b.map(node));
        self.visit_nodes(path, a, b, states);
    }

    fn visit_nodes(&mut self, path: &str, a: Option<Node>, b: Option<Node>, states: States) {
        match (a, b) {
            (Some(Node::Figure(a)), Some(Node::Figure(b))) => self.out.pairs.push(Pair {
                path: path.to_string(),
                a,
                b,
                states,
                intercept_below_zero: [false; 2],
            }),
            (Some(Node::Object(a)), Some(Node::Object(b))) => {
                let states = [state(&a).or(states[0]), state(&b).or(states[1])];
                let marked = [below_zero(&a), below_zero(&b)];
                if marked.contains(&true) {
                    self.out.intercept_marks.push(InterceptMark {
                        path: path.to_string(),
                        marked,
                    });
                }
                let mut keys: Vec<&String> = a.iter().map(|(k, _)| k).collect();
                keys.extend(
                    b.iter()
                        .map(|(k, _)| k)
                        .filter(|k| !a.iter().any(|(ka, _)| ka == *k)),
                );
                let intercepts = [intercept_key(&a), intercept_key(&b)];
                for key in keys {
                    let child = field_path(path, key);
                    let first = self.out.pairs.len();
                    self.visit_nodes(&child, find(&a, key), find(&b, key), states);
                    if marked.contains(&true) && intercepts.contains(&Some(key)) {
                        for pair in &mut self.out.pairs[first..] {
                            pair.intercept_below_zero = marked;
                        }
                    }
                }
            }
            (Some(Node::Array(a)), Some(Node::Array(b))) => self.visit_arrays(path, a, b, states),
            (a, b) => {
                if let Some(a) = a {
                    self.one_sided(0, path, a);
                }
                if let Some(b) = b {
                    self.one_sided(1, path, b);
                }
            }
        }
    }

    fn visit_arrays(&mut self, path: &str, a: &[Value], b: &[Value], states: States) {
        let Some(id) = Identity::of(a, b, &self.dirs) else {
            for i in 0..a.len().max(b.len()) {
                self.visit(&format!("{path}[{i}]"), a.get(i), b.get(i), states);
            }
            return;
        };
        let (ka, kb) = (id.keys(a, &self.dirs[0]), id.keys(b, &self.dirs[1]));
        let (la, lb) = (id.labels(a, &self.dirs[0]), id.labels(b, &self.dirs[1]));
        // Keys are unique on each side (Identity::of checked).
        let index = |keys: &[String]| -> HashMap<String, usize> {
            keys.iter()
                .enumerate()
                .map(|(i, k)| (k.clone(), i))
                .collect()
        };
        let (in_a, in_b) = (index(&ka), index(&kb));
        for (i, item) in a.iter().enumerate() {
            let child = format!("{path}[{}]", la[i]);
            let other = in_b.get(&ka[i]).map(|&j| id.strip(&b[j]));
            self.visit(&child, Some(&id.strip(item)), other.as_ref(), states);
        }
        for (j, item) in b.iter().enumerate() {
            if !in_a.contains_key(&kb[j]) {
                let child = format!("{path}[{}]", lb[j]);
                self.visit(&child, None, Some(&id.strip(item)), states);
            }
        }
    }

    /// Lists every figure under `this` as one side's only.
    fn one_sided(&mut self, side: usize, path: &str, this: Node) {
        match this {
            Node::Figure(_) => {
                let list = if side == 0 {
                    &mut self.out.only_a
                } else {
                    &mut self.out.only_b
                };
                list.push(path.to_string());
            }
            Node::Object(fields) => {
                for (key, entry) in &fields {
                    self.one_sided(side, &field_path(path, key), entry_node(entry));
                }
            }
            Node::Array(items) => {
                let dirs = self.dirs[side].clone();
                let id = Identity::of(items, &[], &[dirs.clone(), dirs.clone()]);
                let labels = id.as_ref().map(|id| id.labels(items, &dirs));
                for (i, item) in items.iter().enumerate() {
                    let (child, item) = match (&id, &labels) {
                        (Some(id), Some(labels)) => {
                            (format!("{path}[{}]", labels[i]), id.strip(item))
                        }
                        _ => (format!("{path}[{i}]"), item.clone()),
                    };
                    self.one_sided(side, &child, node(&item));
                }
            }
            Node::Nothing => {}
        }
    }
}

/// The machine's state on each side, where known.
type States = [Gauges; 2];

/// An object's own machine state, as far as it gives one.
fn state(fields: &[(String, Entry)]) -> Gauges {
    let field = |name: &str| {
        fields.iter().find_map(|(key, entry)| match entry {
            Entry::Value(v) if key == name => v.as_f64().filter(|x| x.is_finite() && *x > 0.0),
            _ => None,
        })
    };
    let reading = |[median, min, max]: [&str; 3]| {
        let median = field(median)?;
        let lo = field(min).map_or(median, |m| m.min(median));
        let hi = field(max).map_or(median, |m| m.max(median));
        Some(Reading {
            median,
            range: [lo, hi],
            count: fields.iter().find_map(|(key, entry)| match entry {
                Entry::Value(v) if key == "gauge_readings" => v.as_u64(),
                _ => None,
            }),
        })
    };
    Gauges {
        core: reading(CORE_TRIP),
        wake: reading(WAKE_TRIP),
        cpu: reading(CPU_SPEED),
        // Zero is a reading here: nothing else ran.
        others: fields.iter().find_map(|(key, entry)| match entry {
            Entry::Value(v) if key == "others_cpu" => {
                v.as_f64().filter(|x| x.is_finite() && *x >= 0.0)
            }
            _ => None,
        }),
    }
}

/// Whether an object is a trend line marked `intercept_below_zero`.
fn below_zero(fields: &[(String, Entry)]) -> bool {
    fields.iter().any(|(key, entry)| {
        key == "intercept_below_zero" && matches!(entry, Entry::Value(Value::Bool(true)))
    })
}

/// The key of a trend line's intercept: `b` of a linear fit
/// (`analysis::trend::Fit`, `y = a·x + b`), or `intercept`. A power
/// law's `b` is its exponent, and it is never marked.
fn intercept_key<'k>(fields: &'k [(String, Entry)]) -> Option<&'k String> {
    let linear = fields.iter().any(|(key, entry)| {
        key == "kind" && matches!(entry, Entry::Value(Value::String(k)) if k == "linear")
    });
    fields
        .iter()
        .map(|(key, _)| key)
        .find(|key| *key == "intercept" || (linear && *key == "b"))
}

fn field_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn node(v: &Value) -> Node<'_> {
    match v {
        Value::Number(n) => n
            .as_f64()
            .map_or(Node::Nothing, |x| Node::Figure(Figure::Number(x))),
        Value::Array(items) => Node::Array(items),
        // An estimate of nothing (n = 0) or of nonsense is no figure.
        Value::Object(map) if map.contains_key("stdev") && map.contains_key("mean") => {
            estimate(map).map_or(Node::Nothing, Node::Figure)
        }
        Value::Object(map) if is_interval(map) => Node::Nothing,
        Value::Object(map) => Node::Object(fields(map)),
        _ => Node::Nothing,
    }
}

fn find<'a>(fields: &[(String, Entry<'a>)], key: &str) -> Option<Node<'a>> {
    fields
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, e)| entry_node(e))
}

fn entry_node<'a>(e: &Entry<'a>) -> Node<'a> {
    match e {
        Entry::Figure(f) => Node::Figure(*f),
        Entry::Value(v) => node(v),
    }
}

fn count(v: Option<&Value>) -> Option<usize> {
    v.and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
}

fn interval(v: Option<&Value>) -> Option<Interval> {
    let map = v?.as_object()?;
    let lo = map.get("lo")?.as_f64()?;
    let hi = map.get("hi")?.as_f64()?;
    (lo.is_finite() && hi.is_finite() && lo <= hi).then_some(Interval { lo, hi })
}

fn is_interval(map: &Map<String, Value>) -> bool {
    map.len() == 2 && map.contains_key("lo") && map.contains_key("hi")
}

/// A stats::Estimate: `{n, mean, stdev, ci95, …}`.
fn estimate(map: &Map<String, Value>) -> Option<Figure> {
    let n = count(map.get("n")).filter(|n| *n > 0)?;
    let mean = map.get("mean")?.as_f64().filter(|m| m.is_finite())?;
    let stdev = map.get("stdev")?.as_f64();
    Some(Figure::Spread {
        n,
        mean,
        stdev: stdev.filter(|s| s.is_finite() && *s >= 0.0),
        ci95: interval(map.get("ci95")),
    })
}

/// An object's fields, with sweep means and fitted coefficients made
/// figures and the fields that only qualify them (stdevs, intervals)
/// left out.
fn fields(map: &Map<String, Value>) -> Vec<(String, Entry<'_>)> {
    // A throughput point's values are its repetitions; a delay point's
    // stdev is over pooled round trips (`samples`), not repetitions.
    let values = count(map.get("reps")).filter(|_| !map.contains_key("samples"));
    let fit_points = count(map.get("n")).filter(|n| *n >= 3);
    let mut out = Vec::new();
    for (key, value) in map {
        if key.ends_with("ci95") {
            continue;
        }
        if let Some(unit) = key.strip_prefix("stdev_") {
            if map.contains_key(&format!("mean_{unit}")) && values.is_some() {
                continue;
            }
        }
        let entry = match (value.as_f64(), key.strip_prefix("mean_")) {
            (Some(mean), Some(unit))
                if values.is_some() && map.contains_key(&format!("stdev_{unit}")) =>
            {
                let n = values.unwrap_or(1);
                let stdev = map
                    .get(&format!("stdev_{unit}"))
                    .and_then(Value::as_f64)
                    .filter(|s| s.is_finite() && *s >= 0.0 && n >= 2);
                Entry::Figure(Figure::Spread {
                    n,
                    mean,
                    stdev,
                    ci95: stdev.and_then(|s| {
                        let half = stats::t95((n - 1) as f64)? * s / (n as f64).sqrt();
                        Some(Interval {
                            lo: mean - half,
                            hi: mean + half,
                        })
                    }),
                })
            }
            (Some(x), _) => match (
                fit_points,
                interval(interval_key(map, key).and_then(|k| map.get(&k))),
            ) {
                (Some(n), Some(ci95)) => Entry::Figure(Figure::Coefficient { value: x, ci95, n }),
                _ => Entry::Value(value),
            },
            _ => Entry::Value(value),
        };
        out.push((key.clone(), entry));
    }
    out
}

/// The field that holds `key`'s 95 % interval: `key_ci95`, or, in a trend
/// line, the interval of the parameter `key` is (see the module's head).
/// None for a power law's coefficient, which has no symmetric interval
/// to test with.
fn interval_key(map: &Map<String, Value>, key: &str) -> Option<String> {
    let trend_line = map.contains_key("slope_ci95") && map.contains_key("intercept_ci95");
    let role = match (trend_line, map.get("kind").and_then(Value::as_str), key) {
        (true, Some("linear"), "a") | (true, Some("power"), "b") => "slope_ci95",
        (true, Some("linear"), "b") => "intercept_ci95",
        (true, Some("power"), "a") => return None,
        _ => return Some(format!("{key}_ci95")),
    };
    Some(role.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn est(mean: f64) -> Value {
        json!({"n": 5, "mean": mean, "median": mean, "stdev": 1.0,
               "ci95": {"lo": mean - 1.24, "hi": mean + 1.24},
               "median_ci95": null, "min": mean - 2.0, "max": mean + 2.0})
    }

    fn paths(p: &Paired) -> Vec<&str> {
        p.pairs.iter().map(|p| p.path.as_str()).collect()
    }

    #[test]
    fn reordered_arrays_pair_by_identity() {
        let a = json!({"experiments": [
            {"name": "x", "runs": [{"id": "tcp", "v": 1.0}, {"id": "udp", "v": 2.0}]},
            {"name": "y", "runs": []}]});
        let b = json!({"experiments": [
            {"name": "y", "runs": []},
            {"name": "x", "runs": [{"id": "udp", "v": 20.0}, {"id": "tcp", "v": 10.0}]}]});
        let p = pair(&a, &b, &[], &[]);
        assert_eq!(p.pairs.len(), 2);
        for pr in &p.pairs {
            let (Figure::Number(x), Figure::Number(y)) = (pr.a, pr.b) else {
                panic!("{pr:?}")
            };
            assert_eq!(y, 10.0 * x, "{}", pr.path);
        }
        assert!(paths(&p).contains(&"experiments[x].runs[tcp].v"));
        assert!(p.only_a.is_empty() && p.only_b.is_empty());
    }

    #[test]
    fn sweep_points_pair_by_their_configuration() {
        let point = |stack: &str, size: u64, mean: f64| {
            json!({"point": 1, "stack": stack, "protocol": "tcp", "size_bytes": size,
                   "reps": 3, "mean_bps": mean, "stdev_bps": 1.0, "min_bps": mean})
        };
        let a = json!({"points": [point("ref", 16, 1.0), point("kernel", 16, 2.0), point("ref", 32, 3.0)]});
        let b = json!({"points": [point("ref", 32, 30.0), point("ref", 16, 10.0), point("kernel", 64, 5.0)]});
        let p = pair(&a, &b, &[], &[]);
        let mean = |path: &str| p.pairs.iter().find(|x| x.path == path).map(|x| (x.a, x.b));
        let Some((
            Figure::Spread {
                n: 3,
                mean: 1.0,
                stdev: Some(_),
                ci95: Some(_),
            },
            Figure::Spread { mean: 10.0, .. },
        )) = mean("points[stack=ref,size_bytes=16].mean_bps")
        else {
            panic!("{:?}", paths(&p))
        };
        assert!(mean("points[stack=ref,size_bytes=32].mean_bps").is_some());
        // stdev_bps qualifies mean_bps; it is no figure of its own.
        assert!(!paths(&p).iter().any(|x| x.contains("stdev")));
        assert!(p
            .only_a
            .contains(&"points[stack=kernel,size_bytes=16].mean_bps".to_string()));
        assert!(p
            .only_b
            .contains(&"points[stack=kernel,size_bytes=64].min_bps".to_string()));
    }

    #[test]
    fn a_trend_lines_parameters_are_coefficients_by_their_role() {
        let ci = |lo: f64, hi: f64| json!({"lo": lo, "hi": hi});
        let a = json!({
            "linear": {"kind": "linear", "a": 80.0, "b": 12.0, "r2": 0.99, "n": 6,
                       "slope_ci95": ci(78.0, 82.0), "intercept_ci95": ci(10.0, 14.0),
                       "weak": false, "intercept_below_zero": false},
            "power": {"kind": "power", "a": 2258.1, "b": 0.15, "r2": 0.9, "n": 6,
                      "slope_ci95": ci(0.1, 0.2), "intercept_ci95": ci(1900.0, 2700.0),
                      "weak": false, "intercept_below_zero": false},
            "two_points": {"kind": "linear", "a": 80.0, "b": 12.0, "r2": 1.0, "n": 2,
                           "slope_ci95": null, "intercept_ci95": null,
                           "weak": false, "intercept_below_zero": false}});
        let p = pair(&a, &a, &[], &[]);
        let get = |path: &str| p.pairs.iter().find(|x| x.path == path).map(|x| x.a);
        let coefficient = |path: &str| match get(path) {
            Some(Figure::Coefficient { value, ci95, n: 6 }) => Some((value, ci95.lo, ci95.hi)),
            _ => None,
        };
        assert_eq!(coefficient("linear.a"), Some((80.0, 78.0, 82.0)));
        assert_eq!(coefficient("linear.b"), Some((12.0, 10.0, 14.0)));
        assert_eq!(coefficient("power.b"), Some((0.15, 0.1, 0.2)));
        // The coefficient's interval is exp of a symmetric one: no test.
        assert_eq!(get("power.a"), Some(Figure::Number(2258.1)));
        // Two points: no interval, single numbers.
        assert_eq!(get("two_points.a"), Some(Figure::Number(80.0)));
        assert_eq!(get("two_points.b"), Some(Figure::Number(12.0)));
    }

    #[test]
    fn estimates_fits_and_numbers_are_told_apart() {
        let a = json!({"start_us": est(3.0), "fit": {"slope": 2.0, "slope_ci95": {"lo": 1.5, "hi": 2.5},
                        "intercept": 1.0, "intercept_ci95": null, "r2": 0.9, "n": 10},
                       "label": "text", "flag": true, "nothing": null});
        let p = pair(&a, &a, &[], &[]);
        let get = |path: &str| p.pairs.iter().find(|x| x.path == path).map(|x| x.a);
        assert!(matches!(
            get("start_us"),
            Some(Figure::Spread {
                n: 5,
                mean: 3.0,
                ..
            })
        ));
        assert!(matches!(
            get("fit.slope"),
            Some(Figure::Coefficient {
                n: 10,
                value: 2.0,
                ..
            })
        ));
        assert_eq!(get("fit.intercept"), Some(Figure::Number(1.0)));
        assert_eq!(get("fit.r2"), Some(Figure::Number(0.9)));
        assert_eq!(p.pairs.len(), 5, "{:?}", paths(&p)); // with fit.n
        assert!(get("start_us.mean").is_none() && get("label").is_none());
    }

    #[test]
    fn each_figure_carries_the_gauges_of_the_nearest_object_that_has_them() {
        let side = |cpu: f64| {
            json!({"runs": [{"id": "udp",
                "core_trip_ns": 60.0,
                "wake_trip_ns": 30e3, "wake_trip_min_ns": 29e3, "wake_trip_max_ns": 50e3,
                "cpu_speed_ns_per_kib": cpu, "cpu_speed_min_ns_per_kib": 19.0,
                "cpu_speed_max_ns_per_kib": 47.0, "others_cpu": 0.0, "gauge_readings": 18,
                "points": [{"size": 100, "stop": est(10.0),
                            "cpu_speed_ns_per_kib": 39.0}]}]})
        };
        let paired = pair(&side(20.0), &side(29.0), &[], &[]);
        let states = |path: &str| {
            paired
                .pairs
                .iter()
                .find(|p| p.path.ends_with(path))
                .unwrap_or_else(|| panic!("no {path} in {:?}", paths(&paired)))
                .states
        };
        let [a, b] = states("points[size=100].stop");
        // The point's own CPU reading (one, so its range is itself); the
        // run's core and wake readings, the wake's range kept.
        assert_eq!(
            a.cpu.map(|r| (r.median, r.range)),
            Some((39.0, [39.0, 39.0]))
        );
        assert_eq!(b.cpu, a.cpu);
        assert_eq!(a.core.map(|r| r.range), Some([60.0, 60.0]));
        assert_eq!(
            a.wake.map(|r| (r.median, r.range)),
            Some((30e3, [29e3, 50e3]))
        );
        // Nothing else ran: zero is a reading.
        assert_eq!(a.others, Some(0.0));
        assert_eq!(a.wake.and_then(|r| r.count), Some(18));
    }

    #[test]
    fn capture_paths_pair_relative_to_their_directory() {
        let a = json!({"inputs": [{"path": "/tmp/A/pcap/x.pcapng", "packets": 3}]});
        let b = json!({"inputs": [{"path": "/data/B/pcap/x.pcapng", "packets": 4}]});
        let p = pair(&a, &b, &["/tmp/A".into()], &["/data/B/".into()]);
        assert_eq!(paths(&p), ["inputs[pcap/x.pcapng].packets"]);
    }

    #[test]
    fn one_sided_and_mismatched_shapes_are_listed_not_paired() {
        let a =
            json!({"x": 1.0, "gone": {"y": est(1.0)}, "shape": [1.0, 2.0], "top": 1, "title": "A"});
        let b = json!({"x": 2.0, "new": 3.0, "shape": {"z": 1.0}, "top": "now text", "title": "B"});
        let p = pair(&a, &b, &[], &[]);
        assert_eq!(paths(&p), ["x"]);
        assert_eq!(p.only_a, ["gone.y", "shape[0]", "shape[1]", "top"]);
        assert_eq!(p.only_b, ["shape.z", "new"]);
    }

    #[test]
    fn repeating_names_pair_by_occurrence() {
        // A call tree whose second run has one node more in front.
        let a = json!({"nodes": [{"name": "send", "calls": 1.0}, {"name": "copy", "calls": 2.0},
                                 {"name": "copy", "calls": 3.0}]});
        let b = json!({"nodes": [{"name": "wake", "calls": 9.0}, {"name": "send", "calls": 1.0},
                                 {"name": "copy", "calls": 2.0}, {"name": "copy", "calls": 3.0}]});
        let p = pair(&a, &b, &[], &[]);
        assert!(p.pairs.iter().all(|x| x.a == x.b), "{:?}", p.pairs);
        assert_eq!(
            paths(&p),
            [
                "nodes[send#1].calls",
                "nodes[copy#1].calls",
                "nodes[copy#2].calls"
            ]
        );
        assert_eq!(p.only_b, ["nodes[wake#1].calls"]);
    }

    #[test]
    fn arrays_without_identity_pair_by_position() {
        let a = json!({"bins": [1.0, 2.0, 3.0], "rows": [{"v": 1.0}, {"v": 2.0}]});
        let b = json!({"bins": [1.0, 2.0], "rows": [{"v": 1.0}, {"v": 2.0}]});
        let p = pair(&a, &b, &[], &[]);
        assert_eq!(paths(&p), ["bins[0]", "bins[1]", "rows[0].v", "rows[1].v"]);
        assert_eq!(p.only_a, ["bins[2]"]);
    }

    fn any_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let key = prop::sample::select(vec![
            "id",
            "name",
            "size",
            "n",
            "mean",
            "stdev",
            "ci95",
            "lo",
            "hi",
            "x",
            "reps",
            "mean_us",
            "stdev_us",
            "slope",
            "slope_ci95",
            "v",
        ]);
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-1e6f64..1e6).prop_map(|x| json!(x)),
            (0u64..5).prop_map(|x| json!(x)),
            "[a-c]{0,2}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((key.clone(), inner), 0..6).prop_map(|fields| Value::Object(
                    fields
                        .into_iter()
                        .map(|(k, v)| (k.to_string(), v))
                        .collect()
                )),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn any_json_pairs_without_panicking(a in any_json(), b in any_json()) {
            let _ = pair(&a, &b, &[], &["/".into()]);
            // A summary against itself: every figure pairs with itself.
            let same = pair(&a, &a, &[], &[]);
            proptest::prop_assert!(same.only_a.is_empty() && same.only_b.is_empty());
            proptest::prop_assert!(same.pairs.iter().all(|p| p.a == p.b));
        }
    }
}
