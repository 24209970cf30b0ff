//! Distributions of times: log-spaced histograms with order statistics,
//! and per-layer (and per-function) processing-delay histograms of the
//! spans of a trace (the SunOS study's protocol processing delay
//! histograms, `001_…` Figure 14; the IPv6 study's per-function times).
//!
//! A [`Histogram`] is built from samples (nanoseconds here, but any unit):
//! bucket `k` holds the samples in `[10^(k/b), 10^((k+1)/b))` for `b` bins
//! per decade; only buckets that hold samples are listed (so there are
//! never more buckets than samples, whatever their range). A log axis has
//! no room for zero: samples `≤ 0` are counted in `non_positive` and take
//! part in the order statistics but in no bucket. Non-finite samples are
//! counted in `non_finite` and ignored otherwise.

use std::collections::BTreeMap;

use probe::{Category, Layer};
use serde::Serialize;

use crate::spans::ThreadSpans;
use crate::view::TraceView;

/// Default resolution: 10 buckets per decade (each about 26 % wide).
pub const DEFAULT_BINS_PER_DECADE: u32 = 10;
/// Finest resolution accepted; finer requests are clamped to it.
pub const MAX_BINS_PER_DECADE: u32 = 100;

/// Order statistics of a set of samples. Percentiles are nearest-rank:
/// the `p`-th is the smallest sample with at least `p` % of the samples at
/// or below it, so every figure is one of the samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    pub count: u64,
    pub min: f64,
    pub mean: f64,
    pub median: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl Summary {
    /// The summary of the finite `samples`; `None` when there are none.
    pub fn of(samples: impl IntoIterator<Item = f64>) -> Option<Summary> {
        let mut sorted: Vec<f64> = samples.into_iter().filter(|v| v.is_finite()).collect();
        Summary::of_sorted_in_place(&mut sorted)
    }

    fn of_sorted_in_place(sorted: &mut [f64]) -> Option<Summary> {
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let (&min, &max) = (sorted.first()?, sorted.last()?);
        // A sum of finite values can overflow: then sum the values scaled
        // down first. The mean cannot lie outside [min, max].
        let sum: f64 = sorted.iter().sum();
        let mean = if sum.is_finite() {
            sum / n as f64
        } else {
            sorted.iter().map(|v| v / n as f64).sum::<f64>()
        };
        let mean = mean.clamp(min, max);
        Some(Summary {
            count: n as u64,
            min,
            mean,
            median: nearest_rank(sorted, 0.5),
            p90: nearest_rank(sorted, 0.9),
            p99: nearest_rank(sorted, 0.99),
            max,
        })
    }
}

/// The nearest-rank `q`-quantile (0 < q ≤ 1) of sorted, non-empty values.
fn nearest_rank(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    let rank = (q * n as f64).ceil() as usize;
    sorted[rank.clamp(1, n) - 1]
}

/// One bucket: samples in `[lo, hi)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Bucket {
    pub lo: f64,
    pub hi: f64,
    pub count: u64,
}

/// A log-binned histogram of samples with their order statistics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Histogram {
    pub bins_per_decade: u32,
    /// The buckets that hold samples, in increasing order (a gap between
    /// two is empty buckets).
    pub buckets: Vec<Bucket>,
    /// Samples `≤ 0` (in the summary, in no bucket).
    pub non_positive: u64,
    /// NaN and infinite samples (ignored).
    pub non_finite: u64,
    /// Of every finite sample; `None` when there are none.
    pub summary: Option<Summary>,
}

impl Histogram {
    /// Bins `samples` with `bins_per_decade` buckets per decade (clamped
    /// to `1..=`[`MAX_BINS_PER_DECADE`]).
    pub fn from_samples(samples: impl IntoIterator<Item = f64>, bins_per_decade: u32) -> Histogram {
        let b = bins_per_decade.clamp(1, MAX_BINS_PER_DECADE);
        let mut non_finite = 0u64;
        let mut finite: Vec<f64> = Vec::new();
        for v in samples {
            if v.is_finite() {
                finite.push(v);
            } else {
                non_finite += 1;
            }
        }
        let summary = Summary::of_sorted_in_place(&mut finite);
        // `finite` is sorted now: the positive samples are its tail.
        let first_positive = finite.partition_point(|&v| v <= 0.0);
        let non_positive = first_positive as u64;
        let positive = &finite[first_positive..];
        // Only buckets that hold samples: a histogram never has more
        // buckets than samples, however wide their range.
        let mut buckets: Vec<Bucket> = Vec::new();
        let mut current: Option<i64> = None;
        for &v in positive {
            let k = bin_of(v, b);
            match buckets.last_mut() {
                Some(last) if current == Some(k) => last.count += 1,
                _ => {
                    current = Some(k);
                    buckets.push(Bucket {
                        lo: edge(k, b),
                        hi: edge(k + 1, b),
                        count: 1,
                    });
                }
            }
        }
        Histogram {
            bins_per_decade: b,
            buckets,
            non_positive,
            non_finite,
            summary,
        }
    }

    /// Samples in buckets and at or below zero (every finite sample).
    pub fn count(&self) -> u64 {
        self.summary.map_or(0, |s| s.count)
    }

    /// The bucket holding `v`, if `v` is inside the histogram's range.
    pub fn bucket_of(&self, v: f64) -> Option<&Bucket> {
        if !(v.is_finite() && v > 0.0) {
            return None;
        }
        let i = self.buckets.partition_point(|b| b.hi <= v);
        self.buckets.get(i).filter(|b| b.lo <= v)
    }
}

/// Lower edge of bucket `k` with `b` buckets per decade.
fn edge(k: i64, b: u32) -> f64 {
    10f64.powf(k as f64 / f64::from(b))
}

/// The bucket of a positive finite `v`: the `k` with
/// `edge(k) ≤ v < edge(k + 1)`, exactly by the edges the histogram reports.
fn bin_of(v: f64, b: u32) -> i64 {
    let mut k = (v.log10() * f64::from(b)).floor() as i64;
    // log10 may be off by an ulp at a bucket edge: settle on the edges.
    while edge(k + 1, b) <= v {
        k += 1;
    }
    while k > i64::MIN / 2 && edge(k, b) > v {
        k -= 1;
    }
    k
}

/// The processing-delay distributions of one layer (or one function):
/// each span is one sample, its inclusive and its exclusive time in
/// nanoseconds, probe overhead removed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpanHistograms {
    /// The layer's name, or the function's (span) name.
    pub name: String,
    pub layer: Layer,
    /// For a function: its category; for a layer: `None`.
    pub category: Option<Category>,
    pub spans: u64,
    pub inclusive: Histogram,
    pub exclusive: Histogram,
}

/// Per layer, in [`Layer`] order, the distributions of the inclusive and
/// exclusive times of every span of every thread in `spans` (pass a
/// subset of threads to look at one side). Layers without spans are left
/// out, and so are instrumentation spans: the tool's work is no layer's
/// processing (their own distribution is among the functions').
pub fn layer_histograms(
    view: &TraceView,
    spans: &BTreeMap<u16, ThreadSpans>,
    bins_per_decade: u32,
) -> Vec<SpanHistograms> {
    let mut by_layer: BTreeMap<Layer, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for span in spans.values().flat_map(|t| t.spans.iter()) {
        let Some(site) = view.sites.get(span.enter as usize) else {
            continue;
        };
        if span.is_instrumentation() {
            continue;
        }
        let entry = by_layer.entry(site.layer).or_default();
        entry.0.push(view.ns(span.inclusive));
        entry.1.push(view.ns(span.exclusive));
    }
    by_layer
        .into_iter()
        .map(|(layer, (inclusive, exclusive))| SpanHistograms {
            name: layer.as_str().to_string(),
            layer,
            category: None,
            spans: inclusive.len() as u64,
            inclusive: Histogram::from_samples(inclusive, bins_per_decade),
            exclusive: Histogram::from_samples(exclusive, bins_per_decade),
        })
        .collect()
}

/// Per function (span name), the same distributions, most total
/// exclusive time first.
pub fn function_histograms(
    view: &TraceView,
    spans: &BTreeMap<u16, ThreadSpans>,
    bins_per_decade: u32,
) -> Vec<SpanHistograms> {
    let mut by_loc: BTreeMap<u16, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for span in spans.values().flat_map(|t| t.spans.iter()) {
        if view.sites.get(span.enter as usize).is_none() {
            continue;
        }
        let entry = by_loc.entry(span.enter).or_default();
        entry.0.push(view.ns(span.inclusive));
        entry.1.push(view.ns(span.exclusive));
    }
    let mut out: Vec<(f64, SpanHistograms)> = by_loc
        .into_iter()
        .map(|(loc, (inclusive, exclusive))| {
            let site = view.site(loc);
            let total: f64 = exclusive.iter().filter(|v| v.is_finite()).sum();
            (
                total,
                SpanHistograms {
                    name: site.span.clone().unwrap_or_else(|| site.name.clone()),
                    layer: site.layer,
                    category: Some(site.category),
                    spans: inclusive.len() as u64,
                    inclusive: Histogram::from_samples(inclusive, bins_per_decade),
                    exclusive: Histogram::from_samples(exclusive, bins_per_decade),
                },
            )
        })
        .collect();
    out.sort_by(|a, b| b.0.total_cmp(&a.0));
    out.into_iter().map(|(_, h)| h).collect()
}
