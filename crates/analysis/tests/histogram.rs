//! Log-binned histograms and order statistics, and per-layer and
//! per-function processing-delay histograms of hand-built spans.

use analysis::histogram::{self, Histogram, Summary};
use analysis::{all_spans, TraceView};
use probe::{Category, Kind, Layer, Location, Record};
use proptest::prelude::*;

mod support;

#[test]
fn one_bin_per_decade_puts_each_edge_in_the_bucket_it_starts() {
    let h = Histogram::from_samples([1.0, 9.99, 10.0, 99.0, 100.0, 1000.0], 1);
    let buckets: Vec<(f64, f64, u64)> = h.buckets.iter().map(|b| (b.lo, b.hi, b.count)).collect();
    assert_eq!(
        buckets,
        [
            (1.0, 10.0, 2),
            (10.0, 100.0, 2),
            (100.0, 1000.0, 1),
            (1000.0, 10000.0, 1)
        ]
    );
    assert_eq!(h.bins_per_decade, 1);
}

#[test]
fn only_buckets_with_samples_are_listed() {
    let h = Histogram::from_samples([2.0, 2.5, 2_000.0], 2);
    // 2 and 2.5 are in 10^0.0..10^0.5, 2000 in 10^3.0..10^3.5; the five
    // empty buckets between are left out.
    let buckets: Vec<(f64, u64)> = h.buckets.iter().map(|b| (b.lo, b.count)).collect();
    assert_eq!(buckets, [(1.0, 2), (1_000.0, 1)]);
    assert!((h.buckets[0].hi - 10f64.sqrt()).abs() < 1e-12);
}

#[test]
fn samples_on_fine_edges_land_in_the_bucket_they_start() {
    for k in -30i32..=60 {
        let edge = 10f64.powf(f64::from(k) / 10.0);
        let h = Histogram::from_samples([edge], 10);
        assert_eq!(h.buckets.len(), 1, "edge {edge}");
        assert_eq!(h.buckets[0].lo, edge);
        assert_eq!(h.bucket_of(edge).map(|b| b.lo), Some(edge));
    }
}

#[test]
fn order_statistics_are_nearest_rank() {
    let s = Summary::of((1..=100).map(f64::from)).unwrap();
    assert_eq!(s.count, 100);
    assert_eq!(
        (s.min, s.median, s.p90, s.p99, s.max),
        (1.0, 50.0, 90.0, 99.0, 100.0)
    );
    assert_eq!(s.mean, 50.5);
    let s = Summary::of([7.0]).unwrap();
    assert_eq!(
        (s.min, s.median, s.p99, s.max, s.mean),
        (7.0, 7.0, 7.0, 7.0, 7.0)
    );
    // Order of input does not matter.
    let s = Summary::of([3.0, 1.0, 2.0]).unwrap();
    assert_eq!((s.min, s.median, s.max), (1.0, 2.0, 3.0));
    assert!(Summary::of([]).is_none());
    assert!(Summary::of([f64::NAN]).is_none());
}

#[test]
fn zeros_and_non_finite_samples_are_counted_apart() {
    let h = Histogram::from_samples([0.0, 0.0, -1.0, 5.0, f64::NAN, f64::INFINITY], 10);
    assert_eq!(h.non_positive, 3);
    assert_eq!(h.non_finite, 2);
    assert_eq!(h.buckets.iter().map(|b| b.count).sum::<u64>(), 1);
    let s = h.summary.unwrap();
    assert_eq!((s.count, s.min, s.median, s.max), (4, -1.0, 0.0, 5.0));
    assert_eq!(h.count(), 4);
    let empty = Histogram::from_samples(Vec::new(), 10);
    assert!(empty.buckets.is_empty() && empty.summary.is_none());
}

#[test]
fn extreme_ranges_stay_bounded() {
    let h = Histogram::from_samples([f64::MIN_POSITIVE, 5e-324, f64::MAX], 1_000);
    assert_eq!(h.bins_per_decade, histogram::MAX_BINS_PER_DECADE);
    // Never more buckets than samples, across 632 decades.
    assert_eq!(h.buckets.len(), 3);
    assert_eq!(h.buckets.iter().map(|b| b.count).sum::<u64>(), 3);
    assert!(h.bucket_of(f64::MAX).is_some() && h.bucket_of(5e-324).is_some());
    let h = Histogram::from_samples([1.0, 2.0], 0);
    assert_eq!(h.bins_per_decade, 1);
    // The mean of huge finite values does not overflow.
    let s = Summary::of([f64::MAX, f64::MAX]).unwrap();
    assert_eq!(s.mean, f64::MAX);
}

proptest! {
    #[test]
    fn every_positive_sample_is_in_exactly_its_bucket(
        samples in proptest::collection::vec(
            prop_oneof![0.0f64..1e9, -10.0f64..10.0, 1e-300f64..1e-290, Just(0.0)], 0..300),
        bins in 0u32..40,
    ) {
        let h = Histogram::from_samples(samples.clone(), bins);
        let positive = samples.iter().filter(|&&v| v > 0.0).count() as u64;
        prop_assert_eq!(h.buckets.iter().map(|b| b.count).sum::<u64>(), positive);
        prop_assert_eq!(h.non_positive + positive, samples.len() as u64);
        prop_assert!(h.buckets.windows(2).all(|w| w[0].hi <= w[1].lo && w[0].lo < w[1].lo));
        prop_assert!(h.buckets.iter().all(|b| b.count > 0 && b.lo < b.hi));
        for &v in samples.iter().filter(|&&v| v > 0.0) {
            let b = h.bucket_of(v).expect("in range");
            prop_assert!(b.lo <= v && v < b.hi);
        }
        if let Some(s) = h.summary {
            prop_assert!(s.min <= s.median && s.median <= s.p90 && s.p90 <= s.p99 && s.p99 <= s.max);
            prop_assert!(s.min <= s.mean && s.mean <= s.max);
        }
    }
}

const LOCATIONS: &[Location] = &[
    loc(
        "ipv6.output.exit",
        Layer::Network,
        Kind::SpanExit,
        Category::ProtocolSend,
    ),
    loc(
        "tcp.output.enter",
        Layer::Transport,
        Kind::SpanEnter,
        Category::ProtocolSend,
    ),
    loc(
        "tcp.output.exit",
        Layer::Transport,
        Kind::SpanExit,
        Category::ProtocolSend,
    ),
    loc(
        "ipv6.output.enter",
        Layer::Network,
        Kind::SpanEnter,
        Category::ProtocolSend,
    ),
    loc(
        "checksum.enter",
        Layer::Transport,
        Kind::SpanEnter,
        Category::Checksum,
    ),
    loc(
        "checksum.exit",
        Layer::Transport,
        Kind::SpanExit,
        Category::Checksum,
    ),
];

const fn loc(name: &'static str, layer: Layer, kind: Kind, category: Category) -> Location {
    support::loc(name, layer, kind, category, None)
}

fn record(name: &str, tsc: u64, thread: u16) -> Record {
    Record::new(tsc, support::at(LOCATIONS, name), 0, 1, 0, thread)
}

/// Two TCP outputs on two threads: 600 ns with a 100 ns checksum and a
/// 200 ns IPv6 output inside, and 1000 ns with a 300 ns IPv6 output.
fn spans_view() -> TraceView {
    let records = vec![
        record("tcp.output.enter", 0, 1),
        record("checksum.enter", 50, 1),
        record("checksum.exit", 150, 1),
        record("ipv6.output.enter", 300, 1),
        record("ipv6.output.exit", 500, 1),
        record("tcp.output.exit", 600, 1),
        record("tcp.output.enter", 1_000, 2),
        record("ipv6.output.enter", 1_100, 2),
        record("ipv6.output.exit", 1_400, 2),
        record("tcp.output.exit", 2_000, 2),
    ];
    support::view(LOCATIONS, 0.0, records)
}

#[test]
fn layer_histograms_hold_every_span_of_the_layer() {
    let v = spans_view();
    let h = histogram::layer_histograms(&v, &all_spans(&v), 10);
    let layers: Vec<Layer> = h.iter().map(|h| h.layer).collect();
    assert_eq!(layers, [Layer::Transport, Layer::Network]);
    let transport = &h[0];
    assert_eq!(transport.name, "transport");
    // Two outputs and one checksum.
    assert_eq!(transport.spans, 3);
    let inc = transport.inclusive.summary.unwrap();
    assert_eq!((inc.min, inc.max), (100.0, 1_000.0));
    let exc = transport.exclusive.summary.unwrap();
    // 600 - 100 - 200 = 300 and 1000 - 300 = 700, the checksum 100.
    assert_eq!((exc.min, exc.median, exc.max), (100.0, 300.0, 700.0));
    let network = &h[1];
    assert_eq!(network.spans, 2);
    let inc = network.inclusive.summary.unwrap();
    assert_eq!((inc.min, inc.max), (200.0, 300.0));
    assert_eq!(network.inclusive, network.exclusive);
    // One thread alone.
    let mut one = all_spans(&v);
    one.remove(&2);
    let h = histogram::layer_histograms(&v, &one, 10);
    assert_eq!(h[0].spans, 2);
}

#[test]
fn function_histograms_come_most_exclusive_time_first() {
    let v = spans_view();
    let h = histogram::function_histograms(&v, &all_spans(&v), 10);
    let names: Vec<&str> = h.iter().map(|h| h.name.as_str()).collect();
    // tcp.output 300 + 700, ipv6.output 200 + 300, checksum 100.
    assert_eq!(names, ["tcp.output", "ipv6.output", "checksum"]);
    assert_eq!(h[2].category, Some(Category::Checksum));
    assert_eq!(h[1].layer, Layer::Network);
}
