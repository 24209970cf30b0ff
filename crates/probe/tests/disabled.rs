//! Built without the `probes` feature, every probe compiles to nothing.
#![cfg(not(feature = "probes"))]

mod common;

use common::*;
use probe::{Flow, Mode};

#[test]
fn probes_record_nothing_without_the_feature() {
    const { assert!(!probe::ENABLED) };
    probe::set_mode(Mode::All);
    probe::init_thread(64);
    probe::record(WIRE, 1, Flow::traced(1), 1);
    {
        let mut span = probe::span(SEND_ENTER, SEND_EXIT, 1, Flow::traced(1), 2);
        span.set_len(5);
    }
    probe::record_with(WIRE, Flow::traced(1), || {
        unreachable!("arguments of a compiled-out probe")
    });
    drop(probe::span_with(
        SEND_ENTER,
        SEND_EXIT,
        Flow::traced(1),
        || unreachable!("arguments of a compiled-out probe"),
    ));
    assert!(probe::drain_thread().is_empty());
    assert_eq!(probe::dropped(), 0);
    assert_eq!(probe::recorded(), 0);
    assert_eq!(probe::capacity(), 0);
    probe::set_mode(Mode::Off);
}

#[test]
fn span_guard_is_empty() {
    assert_eq!(std::mem::size_of::<probe::SpanGuard>(), 0);
    assert!(!std::mem::needs_drop::<probe::SpanGuard>());
}

#[test]
fn calibration_reports_no_overhead() {
    let o = probe::calibrate::overhead(100);
    assert_eq!(o.samples, 0);
    assert_eq!(o.median_cycles, 0.0);
    let cost = probe::calibrate::probe_cost(&probe::calibrate::CostConfig {
        batches: 5,
        batch_len: 100,
        overhead_groups: 10,
    });
    assert!(!cost.probes_compiled);
    assert!(cost.enabled_ns_median.is_finite() && cost.enabled_ns_median >= 0.0);
}
