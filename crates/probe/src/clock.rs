//! The probe clock: the fastest counter the target has.
//!
//! On x86_64 this is the time-stamp counter (`rdtsc`), in cycles of its
//! nominal frequency. Elsewhere it is nanoseconds of the monotonic clock
//! since the first read. [`calibrate`] measures the counter's frequency
//! against the monotonic clock so traces can be converted to time.

use std::time::{Duration, Instant};

/// Whether [`read`] returns cycles (true) or nanoseconds (false).
pub const IS_CYCLE_COUNTER: bool = cfg!(target_arch = "x86_64");

/// Short name of the counter, stored in trace headers.
pub const KIND: &str = if IS_CYCLE_COUNTER {
    "rdtsc"
} else {
    "monotonic_ns"
};

/// Reads the counter.
///
/// No fence: `lfence; rdtsc` or `rdtscp` would stop out-of-order
/// execution at every probe, costing more than the read itself and
/// perturbing the code being measured. An unfenced read may drift a few
/// cycles against its neighbours, which is small against the probe's own
/// cost — and that cost is measured with the same unfenced reads
/// ([`crate::calibrate::overhead`]) and subtracted by analysis.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn read() -> u64 {
    // SAFETY: RDTSC exists on every x86_64 CPU and only reads a counter;
    // it touches no memory. (User-mode RDTSC can be disabled by the OS via
    // CR4.TSD, which no mainstream OS does for ordinary processes.)
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// Reads the counter: nanoseconds since the process first read it.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub fn read() -> u64 {
    use std::sync::OnceLock;
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let epoch = *EPOCH.get_or_init(Instant::now);
    epoch.elapsed().as_nanos() as u64
}

/// Measures the counter frequency in Hz against the monotonic clock,
/// spending about `duration` (at least a few milliseconds).
///
/// The time is split into several intervals; each gives a rate and the
/// median is returned, so one interval disturbed by preemption or a core
/// migration does not skew the result. Nothing is assumed about
/// `constant_tsc`: the CPU is kept busy so the rate seen is the rate while
/// probes run. On targets where the counter is already nanoseconds this
/// returns exactly 1e9.
pub fn calibrate(duration: Duration) -> f64 {
    if !IS_CYCLE_COUNTER {
        return 1e9;
    }
    const INTERVALS: u32 = 9;
    let slice = (duration / INTERVALS).max(Duration::from_micros(500));
    let mut rates = Vec::with_capacity(INTERVALS as usize);
    // A few extra attempts cover intervals rejected for a counter that
    // went backwards (a migration between cores that disagree).
    for _ in 0..INTERVALS * 3 {
        if rates.len() == INTERVALS as usize {
            break;
        }
        let (t0, c0) = paired_read();
        let (t1, c1) = loop {
            std::hint::spin_loop();
            let (t, c) = paired_read();
            if t.duration_since(t0) >= slice {
                break (t, c);
            }
        };
        let secs = t1.duration_since(t0).as_secs_f64();
        if c1 > c0 && secs > 0.0 {
            rates.push((c1 - c0) as f64 / secs);
        }
    }
    if rates.is_empty() {
        return 1e9;
    }
    crate::stats::Stats::of(&rates).median
}

/// Whether the CPU advertises a constant-rate TSC (`constant_tsc` in
/// Linux's `/proc/cpuinfo` flags), for the record: `None` where that cannot
/// be told (other OS or architecture). Nothing here depends on it —
/// [`calibrate`] measures the rate either way.
pub fn constant_tsc() -> Option<bool> {
    if !IS_CYCLE_COUNTER {
        return None;
    }
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let flags = info.lines().find_map(|l| {
        let (key, value) = l.split_once(':')?;
        (key.trim() == "flags").then_some(value)
    })?;
    Some(flags.split_whitespace().any(|f| f == "constant_tsc"))
}

/// Reads the monotonic clock bracketed by two counter reads and returns
/// the counter value at its midpoint, so the cost of `Instant::now`
/// does not bias the pairing. Of a few tries the one with the tightest
/// bracket wins: a preemption between the reads would otherwise shift the
/// midpoint by half a scheduler slice and skew a short calibration.
fn paired_read() -> (Instant, u64) {
    const TRIES: usize = 5;
    let mut best: Option<(u64, Instant, u64)> = None;
    for _ in 0..TRIES {
        let before = read();
        let now = Instant::now();
        let after = read();
        let bracket = after.wrapping_sub(before);
        if best.is_none_or(|(width, _, _)| bracket < width) {
            best = Some((bracket, now, before + bracket / 2));
        }
    }
    let (_, now, counter) = best.unwrap_or_else(|| (0, Instant::now(), read()));
    (now, counter)
}

/// Converts a counter difference to nanoseconds at frequency `hz`.
pub fn cycles_to_ns(cycles: f64, hz: f64) -> f64 {
    cycles * 1e9 / hz
}

/// Converts nanoseconds to counter units at frequency `hz`.
pub fn ns_to_cycles(ns: f64, hz: f64) -> f64 {
    ns * hz / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_does_not_go_backwards_on_one_thread() {
        let a = read();
        let b = read();
        assert!(b >= a);
    }

    #[test]
    fn calibrate_returns_a_positive_finite_rate() {
        let hz = calibrate(Duration::from_millis(20));
        assert!(hz.is_finite() && hz > 0.0, "{hz}");
    }

    #[test]
    fn constant_tsc_is_answered_on_linux_x86_64() {
        if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
            assert!(constant_tsc().is_some());
        }
    }

    #[test]
    fn conversions_are_inverse() {
        let hz = 2.5e9;
        assert_eq!(cycles_to_ns(2500.0, hz), 1000.0);
        assert_eq!(ns_to_cycles(1000.0, hz), 2500.0);
    }
}
