//! The CPUs' speed, measured: how long the stack's own per-byte work — a
//! copy of 16 KiB and the Internet checksum over it — takes on each of
//! the first two CPUs, ns per KiB.
//!
//! Why a third gauge: two full labs whose core round trips (`core_trip`)
//! and wake round trips (`wake_trip`) agreed within 1.5× ran the copying
//! UDP send path three times apart — every category per KB (checksum
//! 2.1×, data move 3.7×, buffers 3.8×, fragmentation 2.6×) — and
//! `stackscope compare` read the machine's slowness as the stack's. The
//! guest saw almost no steal time: the host ran the vCPUs slower. This
//! gauge does the kind of work the stack does, so such a state shows in
//! it. Messages and pipeline runs record it beside the round trips.
//!
//! Within single runs of one quiet quick lab it took 19.5 to 50 ns/KiB
//! (each CPU about 19.5 or about 39, the mean of the two in steps
//! between), so a run's range spans two states far more often than the
//! core trip's: `stackscope compare` withholds its verdict when the two
//! sides' medians — the state each side's repetitions mostly ran in —
//! differ by more than [`STATE_RATIO`].
//!
//! It takes well under a millisecond per CPU and is run between
//! repetitions, never inside a measured window.

use std::hint::black_box;
use std::time::Instant;

use crate::affinity::{first_two_cpus, pin_current as pin};

/// Bytes copied and summed per round.
const BLOCK: usize = 16 * 1024;
/// Rounds per batch, and batches (the median batch's mean is the figure).
const ROUNDS: u64 = 32;
const BATCHES: usize = 5;

/// Two runs' median speeds this far apart (as a ratio) come from
/// different machine states: within one state the medians of a quick
/// lab's runs stayed within 1.08× (19.3–20.8 ns/KiB), and the states
/// seen lie 1.5× and 2.4× apart.
pub const STATE_RATIO: f64 = 1.25;

/// Whether two speeds (ns per KiB) come from different machine states.
pub fn states_differ(a: f64, b: f64) -> bool {
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    lo > 0.0 && hi / lo > STATE_RATIO
}

/// The mean over the first two CPUs of the median batch's copy-and-sum
/// time, ns per KiB (on one CPU, or where pinning is refused, the
/// calling thread's CPU alone).
pub fn measure() -> Option<f64> {
    let on = |cpu: Option<usize>| {
        std::thread::scope(|scope| {
            scope
                .spawn(move || {
                    if let Some(cpu) = cpu {
                        if !pin(cpu) {
                            return None;
                        }
                    }
                    Some(copy_and_sum())
                })
                .join()
                .ok()
                .flatten()
        })
    };
    match first_two_cpus() {
        Some([a, b]) => match (on(Some(a)), on(Some(b))) {
            (Some(x), Some(y)) => Some((x + y) / 2.0),
            (x, y) => x.or(y).or_else(|| on(None)),
        },
        None => on(None),
    }
}

/// The median batch's mean time to copy [`BLOCK`] bytes and checksum the
/// copy, ns per KiB.
fn copy_and_sum() -> f64 {
    let source: Vec<u8> = (0..BLOCK).map(|i| (i * 7 + 3) as u8).collect();
    let mut copy = vec![0u8; BLOCK];
    let mut round = || {
        copy.copy_from_slice(black_box(&source));
        black_box(wire::checksum::sum(black_box(&copy)));
    };
    // Caches and the allocation's pages warm before the batches.
    for _ in 0..ROUNDS / 4 {
        round();
    }
    let mut means = Vec::with_capacity(BATCHES);
    for _ in 0..BATCHES {
        let began = Instant::now();
        for _ in 0..ROUNDS {
            round();
        }
        means.push(began.elapsed().as_nanos() as f64 / ROUNDS as f64);
    }
    means.sort_by(f64::total_cmp);
    means[BATCHES / 2] / (BLOCK as f64 / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_speed_is_measured_and_positive() {
        let ns = measure().expect("a speed on any machine");
        assert!(ns.is_finite() && ns > 0.0, "{ns}");
    }

    #[test]
    fn speeds_a_state_apart_differ_and_near_ones_do_not() {
        // Within a state the medians stay within 1.08x; the states seen
        // lie 1.5x and 2.4x apart.
        assert!(!states_differ(19.3, 20.8));
        assert!(!states_differ(100.0, 120.0));
        assert!(states_differ(19.5, 29.0));
        assert!(states_differ(100.0, 300.0));
        assert!(states_differ(300.0, 100.0));
        assert!(!states_differ(0.0, 300.0), "no figure is no state");
    }
}
