//! Calibration gives positive, finite figures. No timing thresholds:
//! speed is measured by the benchmarks, not asserted here.
#![cfg(feature = "probes")]

use probe::calibrate::{self, CostConfig};
use probe::Mode;
use std::sync::Mutex;
use std::time::Duration;

static LOCK: Mutex<()> = Mutex::new(());

fn positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

#[test]
fn counter_frequency_is_positive_and_finite() {
    let hz = probe::clock::calibrate(Duration::from_millis(30));
    assert!(positive(hz), "{hz}");
}

#[test]
fn overhead_from_doubled_and_tripled_probes() {
    let _g = LOCK.lock().unwrap();
    probe::set_mode(Mode::TracedFlows);
    let o = calibrate::overhead(2000);
    // 2000 doubled groups give 2000 differences, 2000 tripled give 4000.
    assert_eq!(o.samples, 6000);
    assert_eq!(o.groups, 2000);
    for x in [
        o.median_cycles,
        o.mean_cycles,
        o.p99_cycles,
        o.doubled_median_cycles,
        o.tripled_median_cycles,
    ] {
        assert!(positive(x), "{o:?}");
    }
    assert!(o.min_cycles <= o.median_cycles && o.median_cycles <= o.p99_cycles);
    assert_eq!(probe::mode(), Mode::TracedFlows, "mode restored");
    assert_eq!(probe::recorded(), 0, "calibration empties the ring");
    probe::set_mode(Mode::Off);
}

#[test]
fn probe_cost_figures() {
    let _g = LOCK.lock().unwrap();
    let cost = calibrate::probe_cost(&CostConfig {
        batches: 20,
        batch_len: 500,
        overhead_groups: 500,
    });
    assert!(cost.probes_compiled);
    assert!(positive(cost.enabled_ns_median), "{cost:?}");
    assert!(cost.enabled_ns_median <= cost.enabled_ns_p99);
    for x in [
        cost.disabled_ns_median,
        cost.disabled_ns_p99,
        cost.untraced_ns_median,
        cost.untraced_ns_p99,
    ] {
        assert!(x.is_finite() && x >= 0.0, "{cost:?}");
    }
    assert!(positive(cost.overhead_cycles));
    assert_eq!(cost.overhead_cycles, cost.overhead.median_cycles);
    // The figures are meant for a JSON report.
    let json = serde_json::to_value(&cost).unwrap();
    assert!(json["enabled_ns_median"].is_number());
    assert_eq!(probe::mode(), Mode::Off);
}

#[test]
fn calibration_leaves_the_callers_ring_alone() {
    let _g = LOCK.lock().unwrap();
    std::thread::spawn(|| {
        probe::set_mode(Mode::All);
        probe::init_thread(10);
        for i in 0..20 {
            probe::record(probe::calibrate::POINT, 0, probe::Flow::traced(1), i);
        }
        probe::set_mode(Mode::Off);
        let before = (probe::capacity(), probe::recorded(), probe::dropped());
        assert_eq!(before, (10, 10, 10));
        calibrate::overhead(100);
        calibrate::probe_cost(&CostConfig {
            batches: 3,
            batch_len: 50,
            overhead_groups: 10,
        });
        // Capacity, records and the drop count a report must show survive.
        assert_eq!(
            (probe::capacity(), probe::recorded(), probe::dropped()),
            before
        );
    })
    .join()
    .unwrap();
}
