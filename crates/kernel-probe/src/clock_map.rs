//! Kernel time onto the trace's counter.
//!
//! The eBPF programs stamp events with `bpf_ktime_get_ns`, the monotonic
//! clock in nanoseconds. The trace keeps the cycle counter of
//! [`probe::clock`], so kernel events share one timeline with user-space
//! ones: the counter's rate comes from [`probe::clock::calibrate`] (measured
//! against the same monotonic clock) and its offset from the tightest of a
//! few paired counter / `CLOCK_MONOTONIC` reads.

use std::time::Duration;

/// A linear map from monotonic nanoseconds to counter values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClockMap {
    anchor_ns: u64,
    anchor_counter: u64,
    /// Counter frequency in Hz.
    pub counter_hz: f64,
}

impl ClockMap {
    /// Measures the map, spending about `calibration` on the rate.
    pub fn measure(calibration: Duration) -> ClockMap {
        let counter_hz = probe::clock::calibrate(calibration);
        let (anchor_ns, anchor_counter) = paired_read();
        ClockMap {
            anchor_ns,
            anchor_counter,
            counter_hz,
        }
    }

    /// A map from its parts (tests, or a map measured elsewhere).
    pub fn new(anchor_ns: u64, anchor_counter: u64, counter_hz: f64) -> ClockMap {
        ClockMap {
            anchor_ns,
            anchor_counter,
            counter_hz,
        }
    }

    /// The counter value at monotonic time `ns`, rounded; 0 for a time so
    /// far before the anchor that the counter would be negative.
    pub fn to_counter(&self, ns: u64) -> u64 {
        let delta_ns = ns as f64 - self.anchor_ns as f64;
        let counter = self.anchor_counter as f64 + delta_ns * self.counter_hz / 1e9;
        if counter <= 0.0 {
            0
        } else {
            counter.round() as u64
        }
    }
}

/// `CLOCK_MONOTONIC` in nanoseconds, the clock `bpf_ktime_get_ns` reads.
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own; CLOCK_MONOTONIC
    // always exists on Linux, so it cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The monotonic time bracketed by two counter reads, with the counter at
/// the bracket's midpoint; the tightest of a few tries, so a preemption
/// between the reads does not shift the anchor.
fn paired_read() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..16 {
        let before = probe::clock::read();
        let ns = monotonic_ns();
        let after = probe::clock::read();
        let width = after.wrapping_sub(before);
        if width < best.0 {
            best = (width, ns, before + width / 2);
        }
    }
    (best.1, best.2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_linearly_from_the_anchor() {
        let map = ClockMap::new(1_000, 5_000, 2e9);
        assert_eq!(map.to_counter(1_000), 5_000);
        assert_eq!(map.to_counter(2_000), 7_000);
        assert_eq!(map.to_counter(0), 3_000);
        assert_eq!(map.to_counter(0), 3_000);
        // Before the counter's zero: clamped, never wrapped.
        assert_eq!(ClockMap::new(10_000, 10, 1e9).to_counter(0), 0);
    }

    #[test]
    fn a_measured_map_puts_now_near_the_counter() {
        let map = ClockMap::measure(Duration::from_millis(10));
        let (ns, counter) = paired_read();
        let mapped = map.to_counter(ns);
        // Within a millisecond's worth of counts: the offset is right.
        let tolerance = map.counter_hz / 1e3;
        assert!(
            (mapped as f64 - counter as f64).abs() < tolerance,
            "{mapped} vs {counter}"
        );
    }
}
